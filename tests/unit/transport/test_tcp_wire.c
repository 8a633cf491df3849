/*
 * test_tcp_wire.c - the TCP transport seen from the wire: a hand-made rank 1
 * takes part in rank 0's creation. Strangers that reach rank 0's listener
 * first (another communicator, a wrong token, garbage) are turned away; the
 * real handshake is accepted; frames are a 16-byte header and the payload.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "base/clock.h"
#include "net_mp.h"
#include "transport/tcp.h"
#include "tutil.h"

static int dial(const cc__peer_info_t *to)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(to->port)};
    inet_pton(AF_INET, to->addr, &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) return -1;
    return fd;
}

/* Bytes until EOF or n, with a 5 s limit: what the listener sent back. */
static ssize_t read_back(int fd, void *buf, size_t n)
{
    size_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (got < n && poll(&p, 1, 5000) > 0) {
        ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
        if (r <= 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* A stranger's hello: the listener closes without an ack. */
static int knock(const cc__peer_info_t *to, const struct cc__tcp_hello *h)
{
    int fd = dial(to);
    MP_CHECK(fd >= 0);
    MP_CHECK(send(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h));
    struct cc__tcp_ack ack;
    MP_CHECK(read_back(fd, &ack, sizeof(ack)) == 0);
    close(fd);
    return 0;
}

/* Strangers that connect and say nothing fill every accept slot of rank 0 (1 expected + 8
 * spare); the real hello, retried, must still get in once their deadline passes. */
static int squat_then_hello(const cc__peer_info_t *to, const struct cc__tcp_hello *h)
{
    int idle[12];
    for (int i = 0; i < 12; i++)
        MP_CHECK((idle[i] = dial(to)) >= 0);
    uint64_t give_up = cc__now_ns() + 20000000000ull;
    int fd = -1;
    struct cc__tcp_ack ack;
    while (fd < 0 && cc__now_ns() < give_up) {
        fd = dial(to);
        MP_CHECK(fd >= 0 && send(fd, h, sizeof(*h), 0) == (ssize_t)sizeof(*h));
        if (read_back(fd, &ack, sizeof(ack)) != sizeof(ack)) {
            close(fd); /* no slot: closed at once; try again */
            fd = -1;
            usleep(100000);
        }
    }
    for (int i = 0; i < 12; i++)
        close(idle[i]);
    MP_CHECK(fd >= 0 && ack.magic == CC__TCP_ACK_MAGIC);
    return fd;
}

static int fake_rank1(int squat)
{
    cc__net_config_t cfg;
    mp_config(&cfg, 1, 2, "tcp");
    cc__peer_info_t me, all[2];
    memset(&me, 0, sizeof(me));
    me.magic = CC__PEER_INFO_MAGIC;
    me.version = CC__PEER_INFO_VERSION;
    me.rank = 1;
    me.size = 2;
    me.comm_id = cfg.comm_id;
    me.flags = CC__INFO_FORCE_TCP;
    MP_CHECK_ST(cc__peer_identity(&me), CC_OK);
    MP_CHECK_ST(cfg.allgather(cfg.allgather_ctx, &me, all, sizeof(me)), CC_OK);
    struct cc__tcp_hello h = {
        CC__TCP_HELLO_MAGIC, cfg.comm_id, all[0].nonce, CC__TCP_VERSION, 1, 0, 2};
    struct cc__tcp_hello bad = h;
    bad.comm_id++;
    MP_CHECK(knock(&all[0], &bad) == 0);
    bad = h;
    bad.token++;
    MP_CHECK(knock(&all[0], &bad) == 0);
    memset(&bad, 'x', sizeof(bad));
    MP_CHECK(knock(&all[0], &bad) == 0);
    int fd = squat ? squat_then_hello(&all[0], &h) : dial(&all[0]);
    struct cc__tcp_ack ack;
    if (!squat) {
        MP_CHECK(fd >= 0 && send(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
        MP_CHECK(read_back(fd, &ack, sizeof(ack)) == sizeof(ack) && ack.magic == CC__TCP_ACK_MAGIC);
    }
    for (int phase = 0; phase < 3; phase++) {
        int32_t ok = CC_OK, sts[2];
        MP_CHECK_ST(cfg.allgather(cfg.allgather_ctx, &ok, sts, sizeof(ok)), CC_OK);
        MP_CHECK(sts[0] == CC_OK);
    }
    struct {
        struct cc__tcp_frame f;
        char text[6];
    } __attribute__((packed)) in, out = {{CC__TCP_FRAME_MAGIC, CC__TCP_MSG, 4, 5, 0}, "pong"};
    MP_CHECK(read_back(fd, &in, sizeof(in)) == sizeof(in));
    MP_CHECK(in.f.magic == CC__TCP_FRAME_MAGIC && in.f.type == CC__TCP_MSG && in.f.tag == 9 &&
             in.f.len == 6);
    MP_CHECK(memcmp(in.text, "hello", 6) == 0);
    MP_CHECK(send(fd, &out, sizeof(out.f) + 5, 0) == (ssize_t)(sizeof(out.f) + 5));
    MP_CHECK_ST(mp_barrier(1), CC_OK);
    close(fd);
    return 0;
}

static int rank_wire(int rank, int n, void *arg)
{
    if (rank == 1) return fake_rank1(arg != NULL);
    uint64_t errors = cc__log_error_count();
    cc__net_config_t cfg;
    cc__net_t *net;
    char b[8];
    mp_config(&cfg, rank, n, "tcp");
    MP_CHECK_ST(cc__net_create(&cfg, &net), CC_OK);
    uint64_t dl = cc__now_ns() + 30000000000ull;
    MP_CHECK_ST(cc__net_send(net, 1, 9, "hello", 6, dl), CC_OK);
    MP_CHECK_ST(cc__net_recv(net, 1, 4, b, 5, dl), CC_OK);
    MP_CHECK(strcmp(b, "pong") == 0);
    MP_CHECK(cc__log_error_count() == errors); /* strangers are warnings, not errors */
    MP_CHECK_ST(mp_barrier(0), CC_OK);
    cc__net_destroy(net);
    return 0;
}

static void test_strangers_and_frames(void **s)
{
    (void)s;
    int codes[2];
    assert_int_equal(mp_fork(2, rank_wire, NULL, 60, codes), 0);
}

static void test_idle_strangers_give_their_slots_back(void **s)
{
    (void)s;
    int codes[2];
    assert_int_equal(mp_fork(2, rank_wire, "squat", 60, codes), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strangers_and_frames),
        cmocka_unit_test(test_idle_strangers_give_their_slots_back),
    };
    return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
