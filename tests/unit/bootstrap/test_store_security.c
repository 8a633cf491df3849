/*
 * test_store_security.c - what the store refuses: wrong or missing job keys
 * (refused and logged), malformed frames sent by a raw socket (that
 * connection closed, the server keeps serving), unreachable addresses,
 * a port already in use, and bad arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "bootstrap/store_proto.h"
#include "store_test_util.h"

/* --- a raw client that speaks the protocol by hand --- */

static int raw_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* Read exactly n bytes within 5 s; returns 0, or -1 on EOF/error/timeout. */
static int raw_read(int fd, uint8_t *p, size_t n)
{
    while (n) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 5000) != 1) return -1;
        ssize_t r = recv(fd, p, n, 0);
        if (r <= 0) return -1;
        p += r, n -= (size_t)r;
    }
    return 0;
}

static void raw_write(int fd, const void *p, size_t n)
{
    assert_int_equal(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Read the HELLO frame; returns the server nonce in `nonce`. */
static void raw_hello(int fd, uint8_t nonce[CC__STORE_NONCE])
{
    uint8_t buf[CC__STORE_HDR_SIZE + 4 + CC__STORE_NONCE + 4 + 1];
    assert_int_equal(raw_read(fd, buf, sizeof(buf)), 0);
    struct cc__store_hdr h;
    cc__store_hdr_decode(buf, &h);
    assert_int_equal(h.magic, CC__STORE_MAGIC);
    assert_int_equal(h.op, CC__STORE_OP_HELLO);
    memcpy(nonce, buf + CC__STORE_HDR_SIZE + 4, CC__STORE_NONCE);
}

/* Authenticate by hand with `key`; returns the reply status. */
static int raw_auth(int fd, const char *key)
{
    uint8_t snonce[CC__STORE_NONCE], cnonce[CC__STORE_NONCE] = {7}, mac[CC__STORE_MAC];
    raw_hello(fd, snonce);
    assert_int_equal(cc__store_mac(key, snonce, cnonce, mac), 0);
    struct cc__store_wr w;
    cc__store_wr_begin(&w, CC__STORE_OP_AUTH, 0);
    cc__store_wr_field(&w, cnonce, sizeof(cnonce));
    cc__store_wr_field(&w, mac, sizeof(mac));
    assert_int_equal(cc__store_wr_end(&w), 0);
    raw_write(fd, w.buf, w.len);
    cc__store_wr_free(&w);
    uint8_t hdr[CC__STORE_HDR_SIZE], payload[64];
    if (raw_read(fd, hdr, sizeof(hdr)) != 0) return -1000;
    struct cc__store_hdr h;
    cc__store_hdr_decode(hdr, &h);
    assert_true(h.plen <= sizeof(payload));
    assert_int_equal(raw_read(fd, payload, h.plen), 0);
    return h.status;
}

/* The server closed this connection: reading gives EOF (or a reset) within 5 s. */
static void assert_closed(int fd)
{
    uint8_t b[256];
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        assert_int_equal(poll(&pfd, 1, 5000), 1);
        ssize_t r = recv(fd, b, sizeof(b), 0);
        if (r == 0 || (r < 0 && errno == ECONNRESET)) break;
        assert_true(r > 0); /* leftover reply bytes are fine; keep reading */
    }
    close(fd);
}

static void assert_server_works(const struct test_srv *t)
{
    cc__store_t *c = test_connect(t, TEST_KEY);
    void *v = NULL;
    size_t len;
    assert_int_equal(cc__store_set(c, "alive", "yes", 3), CC_OK);
    assert_int_equal(cc__store_get(c, "alive", &v, &len, 0), CC_OK);
    free(v);
    cc__store_close(c);
}

static void hdr_bytes(uint8_t out[CC__STORE_HDR_SIZE], uint32_t magic, uint8_t op, uint32_t nf,
                      uint32_t plen)
{
    struct cc__store_hdr h = {magic, CC__STORE_VERSION, op, 0, nf, plen};
    cc__store_hdr_encode(&h, out);
}

/* --- authentication --- */

static void test_wrong_key_refused_and_logged(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_t *c = NULL;
    struct test_capture cap;
    capture_begin(&cap);
    cc_status_t wrong = cc__store_connect(t.addr, "another-key", 2000, &c);
    cc_status_t missing = cc__store_connect(t.addr, "", 2000, &c);
    char *log = capture_end(&cap);
    assert_int_equal(wrong, CC_ERR_AUTH);
    assert_int_equal(missing, CC_ERR_AUTH);
    assert_null(c);
    /* The server names the client's address and the cause; the client says why. */
    assert_non_null(strstr(log, "client 127.0.0.1:"));
    assert_non_null(strstr(log, "failed authentication: wrong job key"));
    assert_non_null(strstr(log, "failed authentication: it sent no proof of the job key"));
    assert_non_null(strstr(log, "refused this process: wrong job key"));
    free(log);
    assert_int_equal(raw_auth(raw_connect(cc__store_server_port(t.srv)), "bad"), CC_ERR_AUTH);
    assert_server_works(&t);
    cc__store_server_stop(t.srv);
}

static void test_open_server(void **state)
{
    (void)state;
    struct test_srv t;
    struct test_capture cap;
    capture_begin(&cap);
    test_srv_start(&t, "");
    char *log = capture_end(&cap);
    assert_non_null(strstr(log, "authentication is off"));
    free(log);
    cc__store_t *c = test_connect(&t, ""); /* keyless client: accepted */
    assert_int_equal(cc__store_set(c, "k", "v", 1), CC_OK);
    cc__store_close(c);
    c = NULL;
    /* A client with a key will not trust a store that cannot prove it. */
    assert_int_equal(cc__store_connect(t.addr, TEST_KEY, 2000, &c), CC_ERR_AUTH);
    assert_null(c);
    cc__store_server_stop(t.srv);
}

static void test_request_before_auth(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int fd = raw_connect(cc__store_server_port(t.srv));
    uint8_t nonce[CC__STORE_NONCE];
    raw_hello(fd, nonce);
    struct cc__store_wr w;
    cc__store_wr_begin(&w, CC__STORE_OP_SET, 0);
    cc__store_wr_field(&w, "k", 1);
    cc__store_wr_field(&w, "v", 1);
    cc__store_wr_end(&w);
    raw_write(fd, w.buf, w.len);
    cc__store_wr_free(&w);
    assert_closed(fd);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    int exists = 1;
    assert_int_equal(cc__store_check(c, "k", &exists), CC_OK);
    assert_int_equal(exists, 0); /* the unauthenticated set did not happen */
    cc__store_close(c);
    cc__store_server_stop(t.srv);
}

/* --- malformed frames --- */

static void test_malformed_frames(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int port = cc__store_server_port(t.srv);
    uint8_t h[CC__STORE_HDR_SIZE], nonce[CC__STORE_NONCE];
    struct test_capture cap;
    capture_begin(&cap);

    int fd = raw_connect(port); /* bad magic */
    raw_hello(fd, nonce);
    hdr_bytes(h, 0xdeadbeef, CC__STORE_OP_AUTH, 0, 0);
    raw_write(fd, h, sizeof(h));
    assert_closed(fd);

    fd = raw_connect(port); /* huge length before authentication */
    raw_hello(fd, nonce);
    hdr_bytes(h, CC__STORE_MAGIC, CC__STORE_OP_AUTH, 2, 0xfffffff0u);
    raw_write(fd, h, sizeof(h));
    assert_closed(fd);

    fd = raw_connect(port); /* huge length after authentication */
    assert_int_equal(raw_auth(fd, TEST_KEY), CC_OK);
    hdr_bytes(h, CC__STORE_MAGIC, CC__STORE_OP_SET, 2, CC__STORE_MAX_REQUEST + 1u);
    raw_write(fd, h, sizeof(h));
    assert_closed(fd);

    fd = raw_connect(port); /* truncated frame, then the client hangs up */
    assert_int_equal(raw_auth(fd, TEST_KEY), CC_OK);
    hdr_bytes(h, CC__STORE_MAGIC, CC__STORE_OP_SET, 2, 100);
    raw_write(fd, h, sizeof(h));
    raw_write(fd, "0123456789", 10);
    shutdown(fd, SHUT_WR);
    assert_closed(fd);

    fd = raw_connect(port); /* garbage */
    assert_int_equal(raw_auth(fd, TEST_KEY), CC_OK);
    raw_write(fd, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    assert_closed(fd);

    char *log = capture_end(&cap);
    assert_non_null(strstr(log, "bad magic 0xdeadbeef"));
    assert_non_null(strstr(log, "payload of 4294967280 bytes over the limit of 256"));
    assert_non_null(strstr(log, "over the limit of 37748736"));
    assert_non_null(strstr(log, "truncated frame"));
    assert_non_null(strstr(log, "client 127.0.0.1:"));
    free(log);
    assert_server_works(&t);
    cc__store_server_stop(t.srv);
}

/* Send one authenticated frame with the given fields' raw bytes; expect the close. */
static void send_bad_payload(int port, uint8_t op, uint32_t nfields, const void *p, uint32_t len)
{
    int fd = raw_connect(port);
    assert_int_equal(raw_auth(fd, TEST_KEY), CC_OK);
    uint8_t h[CC__STORE_HDR_SIZE];
    hdr_bytes(h, CC__STORE_MAGIC, op, nfields, len);
    raw_write(fd, h, sizeof(h));
    if (len) raw_write(fd, p, len);
    assert_closed(fd);
}

static void test_malformed_fields(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int port = cc__store_server_port(t.srv);
    /* A field length that runs past the payload. */
    uint8_t past[8] = {0, 0, 0, 200, 'a', 'b', 'c', 'd'};
    send_bad_payload(port, CC__STORE_OP_CHECK, 1, past, sizeof(past));
    /* Bytes left over after the declared fields. */
    uint8_t extra[8] = {0, 0, 0, 1, 'k', 'x', 'y', 'z'};
    send_bad_payload(port, CC__STORE_OP_CHECK, 1, extra, sizeof(extra));
    /* Wrong number of fields for the opcode; an empty key; a short timeout field. */
    uint8_t onekey[5] = {0, 0, 0, 1, 'k'};
    send_bad_payload(port, CC__STORE_OP_SET, 1, onekey, sizeof(onekey));
    uint8_t nokey[4] = {0, 0, 0, 0};
    send_bad_payload(port, CC__STORE_OP_CHECK, 1, nokey, sizeof(nokey));
    uint8_t shortto[10] = {0, 0, 0, 1, 5, 0, 0, 0, 1, 'k'};
    send_bad_payload(port, CC__STORE_OP_GET, 2, shortto, sizeof(shortto));
    /* An opcode that is not a request, and an unknown one. */
    send_bad_payload(port, CC__STORE_OP_HELLO, 0, NULL, 0);
    send_bad_payload(port, 77, 0, NULL, 0);
    assert_server_works(&t);
    cc__store_server_stop(t.srv);
}

static void test_client_leaves_while_parked(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int fd = raw_connect(cc__store_server_port(t.srv));
    assert_int_equal(raw_auth(fd, TEST_KEY), CC_OK);
    struct cc__store_wr w;
    cc__store_wr_begin(&w, CC__STORE_OP_GET, 0);
    cc__store_wr_u64(&w, 60000);
    cc__store_wr_field(&w, "never", 5);
    cc__store_wr_end(&w);
    raw_write(fd, w.buf, w.len);
    cc__store_wr_free(&w);
    usleep(50000);
    close(fd); /* its parked get must be dropped, not answered into a closed socket */
    usleep(50000);
    cc__store_t *c = test_connect(&t, TEST_KEY);
    assert_int_equal(cc__store_set(c, "never", "now", 3), CC_OK);
    cc__store_close(c);
    assert_server_works(&t);
    cc__store_server_stop(t.srv);
}

/* --- a client facing something that is not a store --- */

struct fake_server {
    int lfd;
    const uint8_t *greeting; /* sent to every connection, which is then closed */
    size_t len;
};

static void *fake_server_main(void *arg)
{
    struct fake_server *f = arg;
    for (;;) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0) return NULL; /* the listening socket was shut down */
        ssize_t w = send(fd, f->greeting, f->len, MSG_NOSIGNAL);
        (void)w;
        close(fd);
    }
}

static void expect_refused_greeting(const uint8_t *greeting, size_t len, const char *why)
{
    struct fake_server f = {socket(AF_INET, SOCK_STREAM, 0), greeting, len};
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof(sa);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(f.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(f.lfd, 16), 0);
    getsockname(f.lfd, (struct sockaddr *)&sa, &sl);
    pthread_t th;
    pthread_create(&th, NULL, fake_server_main, &f);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    cc__store_t *c = NULL;
    struct test_capture cap;
    capture_begin(&cap);
    cc_status_t st = cc__store_connect(addr, TEST_KEY, 300, &c);
    char *log = capture_end(&cap);
    shutdown(f.lfd, SHUT_RDWR);
    pthread_join(th, NULL);
    close(f.lfd);
    assert_int_equal(st, CC_ERR_TIMEOUT);
    assert_null(c);
    assert_non_null(strstr(log, why));
    free(log);
}

static void test_client_refuses_a_non_store(void **state)
{
    (void)state;
    const char *http = "HTTP/1.1 200 OK\r\n\r\n";
    expect_refused_greeting((const uint8_t *)http, strlen(http), "bad magic 0x48545450");
    /* A valid-looking header announcing a huge payload: refused before any allocation. */
    uint8_t h[CC__STORE_HDR_SIZE];
    hdr_bytes(h, CC__STORE_MAGIC, CC__STORE_OP_HELLO, 2, 0x7fffffffu);
    expect_refused_greeting(h, sizeof(h), "payload of 2147483647 bytes over the limit of 256");
}

/* --- connecting and listening --- */

static void test_unreachable_times_out(void **state)
{
    (void)state;
    /* Find a port nobody listens on: bind one, read it, close it. */
    cc__store_server_t *tmp = NULL;
    assert_int_equal(cc__store_server_start("127.0.0.1", 0, TEST_KEY, &tmp), CC_OK);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", cc__store_server_port(tmp));
    cc__store_server_stop(tmp);
    cc__store_t *c = NULL;
    struct test_capture cap;
    capture_begin(&cap);
    uint64_t t0 = cc__now_ns();
    cc_status_t st = cc__store_connect(addr, TEST_KEY, 300, &c);
    double ms = test_ms_since(t0);
    char *log = capture_end(&cap);
    assert_int_equal(st, CC_ERR_TIMEOUT);
    assert_null(c);
    assert_true(ms >= 290 && ms < 5000); /* it retried until the timeout, and no longer */
    char expect[128];
    snprintf(expect, sizeof(expect), "store %s unreachable after 300 ms: connection refused", addr);
    assert_non_null(strstr(log, expect));
    free(log);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    cc__store_t *c = NULL;
    cc__store_server_t *s = NULL;
    assert_int_equal(cc__store_connect("no-port", "", 100, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_connect("127.0.0.1:0", "", 100, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_connect("127.0.0.1:99999", "", 100, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_connect("127.0.0.1:5", "", -1, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_connect(NULL, "", 100, &c), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_connect("no.such.host.invalid:5", "", 100, &c), CC_ERR_INVALID_ARG);
    assert_null(c);
    assert_int_equal(cc__store_server_start("127.0.0.1", -1, "", &s), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_server_start(NULL, 0, "", &s), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__store_server_start("192.0.2.1", 0, "", &s), CC_ERR_INVALID_ARG);
    assert_null(s);
    cc__store_server_stop(NULL);
    cc__store_close(NULL);
}

static void test_port_in_use(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    cc__store_server_t *second = NULL;
    struct test_capture cap;
    /* A port in use is logged at info: the caller decides whether it is an error. */
    int level = cc__log_level;
    cc__log_level = CC_LOG_LEVEL_INFO;
    capture_begin(&cap);
    cc_status_t st =
        cc__store_server_start("127.0.0.1", cc__store_server_port(t.srv), TEST_KEY, &second);
    char *log = capture_end(&cap);
    cc__log_level = level;
    assert_int_equal(st, CC_ERR_BUSY);
    assert_null(second);
    char expect[160];
    snprintf(expect, sizeof(expect), "cannot listen on %s: address already in use", t.addr);
    assert_non_null(strstr(log, expect));
    free(log);
    assert_server_works(&t);
    cc__store_server_stop(t.srv);
}

static void test_connect_before_server_starts(void **state)
{
    (void)state;
    /* The client retries until the server appears. Pick a free port first. */
    cc__store_server_t *s = NULL;
    assert_int_equal(cc__store_server_start("127.0.0.1", 0, TEST_KEY, &s), CC_OK);
    int port = cc__store_server_port(s);
    cc__store_server_stop(s);
    pid_t pid = fork();
    if (pid == 0) { /* the child starts the server late */
        usleep(300000);
        cc__store_server_t *late = NULL;
        if (cc__store_server_start("127.0.0.1", port, TEST_KEY, &late) != CC_OK) _exit(1);
        usleep(2000000);
        _exit(0);
    }
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    cc__store_t *c = NULL;
    assert_int_equal(cc__store_connect(addr, TEST_KEY, 10000, &c), CC_OK);
    assert_int_equal(cc__store_set(c, "k", "v", 1), CC_OK);
    cc__store_close(c);
    int status = -1;
    waitpid(pid, &status, 0);
    assert_int_equal(status, 0);
}

/* --- strangers before login (issue 14.3) --- */

/* Open n connections that never authenticate and hold them until killed. */
static void hold_idle_connections(int port, int n, int ready_fd)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
    setrlimit(RLIMIT_NOFILE, &rl);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (fd < 0) break;
        connect(fd, (struct sockaddr *)&sa, sizeof(sa)); /* completes in the kernel's backlog */
    }
    if (write(ready_fd, "r", 1) != 1) _exit(3);
    for (;;)
        pause();
}

/* 1,500 idle strangers, a server with 512 descriptors: a rank arriving later still gets in
 * within seconds (it waited 60 s behind them: each had 60 s to log in, with no cap). */
static void test_idle_strangers_cannot_starve_logins(void **state)
{
    (void)state;
    struct rlimit saved, low;
    getrlimit(RLIMIT_NOFILE, &saved);
    low = saved;
    low.rlim_cur = 512;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int port = cc__store_server_port(t.srv), pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t attacker = fork();
    if (attacker == 0) hold_idle_connections(port, 1500, pfd[1]);
    char b;
    assert_int_equal(read(pfd[0], &b, 1), 1);
    uint64_t t0 = cc__now_ns();
    pid_t rank = fork();
    if (rank == 0) {
        cc__store_t *c = NULL;
        int ok = cc__store_connect(t.addr, TEST_KEY, 8000, &c) == CC_OK &&
                 cc__store_set(c, "late", "in", 2) == CC_OK;
        _exit(ok ? 0 : 1);
    }
    int status = -1;
    assert_int_equal(waitpid(rank, &status, 0), rank);
    double ms = test_ms_since(t0);
    kill(attacker, SIGKILL);
    waitpid(attacker, NULL, 0);
    close(pfd[0]), close(pfd[1]);
    assert_int_equal(status, 0);
    assert_true(ms < 8000);
    cc__store_server_stop(t.srv);
    setrlimit(RLIMIT_NOFILE, &saved);
}

/* A connection that never logs in is closed after a few seconds, not after 60. */
static void test_login_deadline(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int fd = raw_connect(cc__store_server_port(t.srv));
    uint8_t nonce[CC__STORE_NONCE], buf[64];
    raw_hello(fd, nonce);
    uint64_t t0 = cc__now_ns();
    struct pollfd p = {.fd = fd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 15000), 1);
    assert_true(recv(fd, buf, sizeof(buf), 0) <= 0);
    double ms = test_ms_since(t0);
    assert_true(ms >= CC__STORE_AUTH_TIMEOUT_MS - 500 && ms < CC__STORE_AUTH_TIMEOUT_MS + 3000);
    close(fd);
    cc__store_server_stop(t.srv);
}

static int count_lines(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* One client retrying with a wrong key 300 times: a few warnings and a sum, not 300 lines. */
static void test_refusals_are_rate_limited(void **state)
{
    (void)state;
    struct test_srv t;
    test_srv_start(&t, TEST_KEY);
    int port = cc__store_server_port(t.srv);
    struct test_capture cap;
    capture_begin(&cap);
    for (int i = 0; i < 300; i++) {
        int fd = raw_connect(port);
        raw_auth(fd, "not-the-key");
        close(fd);
    }
    sleep(7); /* the 5 s window ends; the server's loop wakes at least every second */
    char *log = capture_end(&cap);
    int lines = count_lines(log, "failed authentication");
    assert_true(lines >= 1 && lines <= 10);
    assert_non_null(strstr(log, "more refused or dropped clients in the last"));
    free(log);
    assert_server_works(&t);
    cc__store_server_stop(t.srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrong_key_refused_and_logged),
        cmocka_unit_test(test_idle_strangers_cannot_starve_logins),
        cmocka_unit_test(test_login_deadline),
        cmocka_unit_test(test_refusals_are_rate_limited),
        cmocka_unit_test(test_open_server),
        cmocka_unit_test(test_request_before_auth),
        cmocka_unit_test(test_malformed_frames),
        cmocka_unit_test(test_malformed_fields),
        cmocka_unit_test(test_client_leaves_while_parked),
        cmocka_unit_test(test_client_refuses_a_non_store),
        cmocka_unit_test(test_unreachable_times_out),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_port_in_use),
        cmocka_unit_test(test_connect_before_server_starts),
    };
    cc__log_init();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
