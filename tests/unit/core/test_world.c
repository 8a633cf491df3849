/*
 * test_world.c - joining (cc__world_join) and attaching (cc__world_attach)
 * refuse the same bad stores the same way: they share their setup
 * (world.c, world_open). A port held by something that is not a ccomm
 * store is CC_ERR_BUSY for both, naming the port's address; port 0 is for
 * a job of one rank only.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/config.h"
#include "core/comm.h"

typedef cc_status_t (*world_fn)(int rank, int size, const char *addr, int may_host,
                                cc__world_t **out);

/* A loopback listener that never speaks the store's protocol; its address in addr. */
static int squatter(char *addr, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    assert_int_equal(listen(fd, 4), 0);
    snprintf(addr, len, "127.0.0.1:%d", ntohs(sa.sin_port));
    return fd;
}

static void port_in_use(world_fn fn)
{
    char addr[64];
    int fd = squatter(addr, sizeof(addr));
    setenv("CCOMM_CONNECT_TIMEOUT", "2", 1);
    cc__config_reload();
    cc__world_t *w = NULL;
    assert_int_equal(fn(0, 2, addr, 1, &w), CC_ERR_BUSY);
    assert_null(w);
    close(fd);
    unsetenv("CCOMM_CONNECT_TIMEOUT");
    cc__config_reload();
}

static void test_join_port_in_use(void **s)
{
    (void)s;
    port_in_use(cc__world_join);
}

static void test_attach_port_in_use(void **s)
{
    (void)s;
    port_in_use(cc__world_attach);
}

static void test_port0_only_alone(void **s)
{
    (void)s;
    cc__world_t *w = NULL;
    assert_int_equal(cc__world_join(0, 2, "127.0.0.1:0", 1, &w), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__world_attach(0, 2, "127.0.0.1:0", 1, &w), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__world_join(0, 1, "127.0.0.1:0", 0, &w), CC_ERR_INVALID_ARG);
    assert_null(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_port_in_use),
        cmocka_unit_test(test_attach_port_in_use),
        cmocka_unit_test(test_port0_only_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
