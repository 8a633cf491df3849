/*
 * store_test_util.h - helpers shared by the store tests: a server per test,
 * stderr capture to check what was logged, and a time base.
 */
#ifndef CC_TEST_STORE_UTIL_H
#define CC_TEST_STORE_UTIL_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "base/clock.h"
#include "base/log.h"

#define TEST_KEY "0123456789abcdef-test-job-key"

struct test_srv {
    cc__store_server_t *srv;
    char addr[64];
};

static inline void test_srv_start(struct test_srv *t, const char *key)
{
    assert_int_equal(cc__store_server_start("127.0.0.1", 0, key, &t->srv), CC_OK);
    snprintf(t->addr, sizeof(t->addr), "127.0.0.1:%d", cc__store_server_port(t->srv));
}

static inline cc__store_t *test_connect(const struct test_srv *t, const char *key)
{
    cc__store_t *c = NULL;
    assert_int_equal(cc__store_connect(t->addr, key, 5000, &c), CC_OK);
    assert_non_null(c);
    return c;
}

static inline double test_ms_since(uint64_t t0)
{
    return (double)(cc__now_ns() - t0) / 1e6;
}

/* Capture what is written to stderr (the log) between begin and end. */
struct test_capture {
    int saved;
    char path[64];
};

static inline void capture_begin(struct test_capture *c)
{
    snprintf(c->path, sizeof(c->path), "/tmp/cc_store_test_%d.log", (int)getpid());
    int fd = open(c->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    c->saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Stop capturing; returns the text (free it), also echoed to the real stderr. */
static inline char *capture_end(struct test_capture *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    FILE *f = fopen(c->path, "r");
    assert_non_null(f);
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(c->path);
    fputs(text, stderr);
    return text;
}

#endif /* CC_TEST_STORE_UTIL_H */
