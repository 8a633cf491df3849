/*
 * test_comm_memory.c - a job that makes and drops communicators stays flat.
 *
 * Two ranks split (and create groups from) their world and destroy the
 * child, 700 times after 300 cycles of warm-up. Over the measured cycles:
 *  - the store holds no more keys than before (each split and each child's
 *    setup left ~10 keys behind: the allgathers' blobs were never deleted);
 *  - the shells kept to detect stale handles stay within their bound (every
 *    destroyed comm kept its 288-byte shell forever);
 *  - the heap in use (mallinfo2) grows by less than 32 KiB (it grew by
 *    ~300 B per cycle on every rank, ~1.8 KB on the one hosting the store).
 * Rank 0 hosts the store itself so that it can count the keys. Underneath:
 * a delete of many keys in one request, and an allgather that leaves none.
 */
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "bootstrap/store.h"
#include "ccomm/ccomm.h"
#include "core/comm.h"
#include "mp.h"

#define WARMUP     300
#define CYCLES     700
#define HEAP_SLACK (32u << 10)

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_MEASURED 0 /* the sanitizers' allocators do not report through mallinfo2 */
#else
#define HEAP_MEASURED 1
#endif

static int cycles(cc_comm_t *world, int n)
{
    int rank = cc_comm_rank(world), all[2] = {0, 1};
    for (int i = 0; i < n; i++) {
        cc_comm_t *child = NULL;
        cc_status_t st = i % 2 ? cc_comm_create_group(world, all, 2, NULL, &child)
                               : cc_comm_split(world, 0, rank, NULL, &child);
        CC_TEST_REQUIRE(st == CC_OK, "cycle %d: %s", i, cc_status_name(st));
        CC_TEST_REQUIRE(cc_comm_destroy(child) == CC_OK, "cycle %d: destroy", i);
    }
    /* Each rank's last store request is answered before it gets here. */
    return cc_barrier(world, NULL, NULL) == CC_OK ? 0 : 1;
}

static int flat_rank(int rank, int size, const char *addr, void *arg)
{
    (void)addr;
    cc_comm_t *w = NULL;
    CC_TEST_REQUIRE(cc_comm_init(&w, rank, size, arg, NULL) == CC_OK, "init at %s", (char *)arg);
    CC_TEST_REQUIRE(rank != 0 || w->world->server, "rank 0 did not host the store at %s",
                    (char *)arg);
    if (cycles(w, WARMUP)) return 1;
    size_t keys0 = cc__store_server_keys(w->world->server), heap0 = mallinfo2().uordblks;
    if (cycles(w, CYCLES)) return 1;
    size_t keys1 = cc__store_server_keys(w->world->server), heap1 = mallinfo2().uordblks;
    /* Nobody leaves before the store is counted: a rank that destroys its world and exits
     * closes its store connection, and the store then writes the rank's will
     * ("world0/lost/<rank>", for shrink) — a key of a departure, not of the cycles. */
    CC_TEST_REQUIRE(cc_barrier(w, NULL, NULL) == CC_OK, "barrier after the count");
    size_t shells = cc__comm_shells();
    fprintf(stderr,
            "rank %d: over %d cycles: store keys %zu -> %zu, heap in use %zu -> %zu B, "
            "%zu shells kept\n",
            rank, CYCLES, keys0, keys1, heap0, heap1, shells);
    CC_TEST_REQUIRE(keys1 <= keys0, "the store grew by %zu keys over %d cycles", keys1 - keys0,
                    CYCLES);
    CC_TEST_REQUIRE(shells <= CC__COMM_SHELLS_MAX, "%zu shells of destroyed comms kept (bound %d)",
                    shells, CC__COMM_SHELLS_MAX);
    CC_TEST_REQUIRE(!HEAP_MEASURED || heap1 < heap0 + HEAP_SLACK,
                    "the heap grew by %zu B over %d cycles (%zu B per cycle)", heap1 - heap0,
                    CYCLES, (heap1 - heap0) / CYCLES);
    CC_TEST_REQUIRE(cc_comm_destroy(w) == CC_OK, "destroy");
    return 0;
}

/* A loopback port nothing listens on now (the kernel's pick). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    close(fd);
    return ntohs(sa.sin_port);
}

static void test_split_destroy_cycles(void **s)
{
    (void)s;
    char addr[64];
    int port = free_port();
    assert_true(port > 0);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    /* (a short linger: the host waits for a store connection of its own otherwise) */
    const char *env[] = {"CCOMM_JOB_KEY=test-comm-memory", "CCOMM_STORE_LINGER=1", NULL};
    assert_int_equal(cc_test_fork_ranks(2, flat_rank, addr, 150, env, NULL), 0);
}

/* The store calls underneath: one delete of many keys, and an allgather that leaves nothing. */
static void test_store_cleanup(void **s)
{
    (void)s;
    cc__store_server_t *srv = NULL;
    assert_int_equal(cc__store_server_start("127.0.0.1", 0, "k", &srv), CC_OK);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", cc__store_server_port(srv));
    cc__store_t *c = NULL;
    assert_int_equal(cc__store_connect(addr, "k", 5000, &c), CC_OK);
    for (int i = 0; i < 3; i++) {
        char k[16];
        snprintf(k, sizeof(k), "k%d", i);
        assert_int_equal(cc__store_set(c, k, "v", 1), CC_OK);
    }
    assert_int_equal(cc__store_server_keys(srv), 3);
    const char *some[] = {"k0", "nope", "k2"}, *none[] = {"nope", "k0"};
    int deleted = -1, exists = -1;
    assert_int_equal(cc__store_delete_keys(c, some, 3, &deleted), CC_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(cc__store_delete_keys(c, none, 2, &deleted), CC_OK);
    assert_int_equal(deleted, 0);
    assert_int_equal(cc__store_check(c, "k1", &exists), CC_OK);
    assert_int_equal(exists, 1);
    assert_int_equal(cc__store_delete_keys(c, some, 0, &deleted), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_delete(c, "k1", &deleted), CC_OK);
    assert_int_equal(deleted, 1);
    int32_t mine = 7, all = 0;
    assert_int_equal(cc__store_allgather(c, "g", 0, 1, &mine, &all, sizeof(mine), 1000), CC_OK);
    assert_int_equal(all, 7);
    assert_int_equal(cc__store_server_keys(srv), 0); /* blob and read counter gone */
    cc__store_close(c);
    cc__store_server_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_cleanup),
        cmocka_unit_test(test_split_destroy_cycles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
