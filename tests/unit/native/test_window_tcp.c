/*
 * test_window_tcp.c - the TCP window target's request parser
 * (native/window_tcp.h) fed by hand over a socketpair, as a malicious or
 * garbled peer would: headers whose range runs past the registered region
 * (and whose offset + bytes overflow 64 bits), a wrong magic, window or
 * type, a signal that carries bytes. Each is refused, ends the stream with
 * CC_ERR_PROTOCOL and leaves the region untouched, the payload that
 * followed included. Good requests are applied in order (a put, then its
 * signal counted; a get answered with the bytes), and EOF without a bye is
 * a lost peer.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "native/window_tcp.h"

#define SIZE 64
#define WIN  3u

struct fixture {
    int origin_fd; /* what the test writes as the peer */
    struct cc__wtcp_rx rx;
    unsigned char region[SIZE + 16]; /* SIZE registered, then a guard that must stay 0xee */
    _Atomic uint64_t sig;
    _Atomic uint32_t bell, sleeping;
};

static int setup(void **state)
{
    static struct fixture f;
    int sv[2];
    memset(&f, 0, sizeof(f));
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return -1;
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    memset(f.region, 0xee, sizeof(f.region));
    f.origin_fd = sv[0];
    f.rx.fd = sv[1];
    f.rx.origin = 1;
    f.rx.win = WIN;
    f.rx.base = (char *)f.region;
    f.rx.size = SIZE;
    f.rx.sig = &f.sig;
    f.rx.bell = &f.bell;
    f.rx.sleeping = &f.sleeping;
    f.rx.stop_fd = -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    close(f->origin_fd);
    close(f->rx.fd);
    return 0;
}

static void send_req(struct fixture *f, uint16_t type, uint64_t off, uint64_t bytes,
                     const void *payload, size_t plen)
{
    struct cc__wtcp_hdr h = {CC__WTCP_MAGIC, type, 0, WIN, 1, off, bytes};
    assert_int_equal(write(f->origin_fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    if (plen) assert_int_equal(write(f->origin_fd, payload, plen), (ssize_t)plen);
}

static void assert_untouched(const struct fixture *f)
{
    for (size_t j = 0; j < sizeof(f->region); j++)
        if (f->region[j] != 0xee) fail_msg("region byte %zu was written: 0x%02x", j, f->region[j]);
}

/* A refused header ends the stream with PROTOCOL, writes nothing, counts nothing. */
static void assert_refused(struct fixture *f)
{
    assert_int_equal(cc__wtcp_rx_step(&f->rx), 1);
    assert_int_equal(atomic_load(&f->rx.ended), CC_ERR_PROTOCOL);
    assert_int_equal(atomic_load(&f->sig), 0);
    assert_untouched(f);
}

static void test_put_past_end(void **state)
{
    struct fixture *f = *state;
    unsigned char junk[16];
    memset(junk, 0x11, sizeof(junk));
    send_req(f, CC__WTCP_PUT, SIZE - 4, 8, junk, 8); /* 60 + 8 > 64 */
    assert_refused(f);
}

static void test_put_offset_past_end(void **state)
{
    struct fixture *f = *state;
    unsigned char junk[1] = {0x22};
    send_req(f, CC__WTCP_PUT, SIZE + 1, 1, junk, 1);
    assert_refused(f);
}

/* off + bytes wraps to a small number: a check written as off + bytes <= size would pass. */
static void test_put_overflow(void **state)
{
    struct fixture *f = *state;
    unsigned char junk[16];
    memset(junk, 0x33, sizeof(junk));
    send_req(f, CC__WTCP_PUT, UINT64_MAX - 3, 8, junk, sizeof(junk));
    assert_refused(f);
}

static void test_put_huge_bytes(void **state)
{
    struct fixture *f = *state;
    unsigned char junk[16];
    memset(junk, 0x44, sizeof(junk));
    send_req(f, CC__WTCP_PUT, 8, UINT64_MAX - 7, junk, sizeof(junk)); /* 8 + that wraps to 0 */
    assert_refused(f);
}

/* A GET past the end is refused and nothing of this rank's memory goes out. */
static void test_get_past_end(void **state)
{
    struct fixture *f = *state;
    char c;
    send_req(f, CC__WTCP_GET, 32, 64, NULL, 0);
    assert_refused(f);
    assert_int_equal(read(f->origin_fd, &c, 1), 0); /* shut down, no reply */
}

static void test_bad_magic_window_type(void **state)
{
    struct fixture *f = *state;
    char why[160];
    struct cc__wtcp_hdr h = {CC__WTCP_MAGIC ^ 1u, CC__WTCP_PUT, 0, WIN, 1, 0, 8};
    assert_int_equal(cc__wtcp_check(&h, WIN, SIZE, why, sizeof(why)), CC_ERR_PROTOCOL);
    assert_non_null(strstr(why, "magic"));
    h.magic = CC__WTCP_MAGIC;
    h.win = WIN + 1;
    assert_int_equal(cc__wtcp_check(&h, WIN, SIZE, why, sizeof(why)), CC_ERR_PROTOCOL);
    h.win = WIN;
    h.type = 99;
    assert_int_equal(cc__wtcp_check(&h, WIN, SIZE, why, sizeof(why)), CC_ERR_PROTOCOL);
    assert_non_null(strstr(why, "unknown"));
    h.type = CC__WTCP_SIGNAL; /* a signal with a payload length is garbled */
    assert_int_equal(cc__wtcp_check(&h, WIN, SIZE, why, sizeof(why)), CC_ERR_PROTOCOL);
    h.bytes = 0;
    assert_int_equal(cc__wtcp_check(&h, WIN, SIZE, why, sizeof(why)), CC_OK);
    h.type = CC__WTCP_PUT; /* exactly the region: accepted */
    h.bytes = SIZE;
    assert_int_equal(cc__wtcp_check(&h, WIN, SIZE, why, sizeof(why)), CC_OK);
    h.type = 99; /* and through the parser: refused, untouched */
    h.bytes = 0;
    assert_int_equal(write(f->origin_fd, &h, sizeof(h)), (ssize_t)sizeof(h));
    assert_refused(f);
}

/* Good requests, in order: a put lands in place, its signal counts after it, a get answers. */
static void test_good_requests(void **state)
{
    struct fixture *f = *state;
    unsigned char data[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8];
    send_req(f, CC__WTCP_PUT, 56, 8, data, 8);
    send_req(f, CC__WTCP_SIGNAL, 0, 0, NULL, 0);
    send_req(f, CC__WTCP_GET, 56, 8, NULL, 0);
    assert_int_equal(cc__wtcp_rx_step(&f->rx), 0);
    assert_int_equal(atomic_load(&f->rx.ended), CC__WTCP_OPEN);
    assert_memory_equal(f->region + 56, data, 8);
    for (size_t j = 0; j < 56; j++)
        assert_int_equal(f->region[j], 0xee);
    for (size_t j = SIZE; j < sizeof(f->region); j++)
        assert_int_equal(f->region[j], 0xee);
    assert_int_equal(atomic_load(&f->sig), 1);
    struct cc__wtcp_hdr a;
    assert_int_equal(read(f->origin_fd, &a, sizeof(a)), (ssize_t)sizeof(a));
    assert_int_equal(a.type, CC__WTCP_GET_DATA);
    assert_int_equal(a.bytes, 8);
    assert_int_equal(read(f->origin_fd, got, 8), 8);
    assert_memory_equal(got, data, 8);
    /* The peer goes away without a bye: a lost peer, not a clean end. */
    shutdown(f->origin_fd, SHUT_WR);
    assert_int_equal(cc__wtcp_rx_step(&f->rx), 1);
    assert_int_equal(atomic_load(&f->rx.ended), CC_ERR_PEER_LOST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_offset_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_overflow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_huge_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_past_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_magic_window_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_good_requests, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
