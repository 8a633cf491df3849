/*
 * store_sync.c - barrier and allgather over the store, for ranks that meet
 * before any communicator exists.
 *
 * barrier: every caller adds 1 to "<name>/arrived"; the one that brings it
 * to nranks sets "<name>/done"; everyone waits for "done". Two requests per
 * rank, whatever nranks is.
 * allgather: rank r sets "<name>/<r>", then fetches all nranks keys in ONE
 * multi_get that the server answers when the last one appears, then adds 1
 * to "<name>/read"; the rank that brings it to nranks deletes the blobs and
 * the counter in one request. Three requests per rank (four for the last),
 * not nranks, and nothing is left in the store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store_client_int.h"
#include "base/clock.h"
#include "base/log.h"

/* Milliseconds left before `deadline` (0 when passed). */
static int64_t ms_left(uint64_t deadline)
{
    uint64_t now = cc__now_ns();
    if (deadline == UINT64_MAX) return INT64_MAX / 2;
    return now >= deadline ? 0 : (int64_t)((deadline - now) / 1000000u);
}

static int name_ok(const char *name, const char *op)
{
    if (name && *name && strlen(name) + 24 <= CC__STORE_MAX_KEY) return 1;
    cc_log_error(CC_SUBSYS_BOOTSTRAP,
                 "store %s: name \"%.64s\" is empty or too long (its keys must"
                 " stay under %u bytes)",
                 op, name ? name : "(null)", CC__STORE_MAX_KEY);
    return 0;
}

cc_status_t cc__store_barrier(cc__store_t *store, const char *name, int nranks, int64_t timeout_ms)
{
    char arrived[CC__STORE_MAX_KEY + 1], done[CC__STORE_MAX_KEY + 1];
    int64_t n = 0;
    if (!store || !name_ok(name, "barrier") || nranks < 1 || timeout_ms < 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store barrier \"%s\": invalid argument (nranks %d, "
                     "timeout %lld ms)",
                     name ? name : "(null)", nranks, (long long)timeout_ms);
        return CC_ERR_INVALID_ARG;
    }
    uint64_t deadline = cc__deadline_after_ms(timeout_ms);
    snprintf(arrived, sizeof(arrived), "%s/arrived", name);
    snprintf(done, sizeof(done), "%s/done", name);
    CC_CHECK(cc__store_add(store, arrived, 1, &n));
    if (n > nranks) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store barrier \"%s%s\": arrival %lld of %d ranks: the "
                     "name was used before, or callers disagree on nranks",
                     store->prefix, name, (long long)n, nranks);
        return CC_ERR_INVALID_USAGE;
    }
    if (n == nranks) return cc__store_set(store, done, "1", 1);
    void *v = NULL;
    size_t len;
    cc_status_t st = cc__store_get(store, done, &v, &len, ms_left(deadline));
    free(v);
    if (st == CC_ERR_TIMEOUT || st == CC_ERR_NOT_FOUND) {
        /* Say how many made it: that names the problem (who is late) better than a key. */
        int64_t now_n = -1;
        cc__store_add(store, arrived, 0, &now_n);
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store barrier \"%s%s\": %lld of %d ranks arrived within"
                     " %lld ms",
                     store->prefix, name, (long long)now_n, nranks, (long long)timeout_ms);
        st = CC_ERR_TIMEOUT;
    }
    return st;
}

struct gather_ctx {
    uint8_t *all;
    size_t len;      /* bytes each rank must contribute */
    size_t bad_rank; /* first rank whose blob differs in size */
    uint32_t bad_len;
};

static int sink_gather(void *ctx, size_t i, const uint8_t *p, uint32_t len)
{
    struct gather_ctx *g = ctx;
    if (len != g->len) {
        g->bad_rank = i;
        g->bad_len = len;
        return -1;
    }
    if (len) memcpy(g->all + i * g->len, p, len);
    return 0;
}

/* Keys "<name>/0" .. "<name>/<n-1>" in one allocation; *keys points into *buf. */
static cc_status_t gather_keys(const char *name, int nranks, char **buf, const char ***keys)
{
    size_t stride = strlen(name) + 13;
    *buf = malloc((size_t)nranks * stride);
    *keys = malloc(((size_t)nranks + 1) * sizeof(**keys)); /* + the cleanup's counter */
    if (!*buf || !*keys) {
        free(*buf), free(*keys);
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store allgather \"%s\": no memory for %d keys", name,
                     nranks);
        return CC_ERR_NO_MEMORY;
    }
    for (int i = 0; i < nranks; i++) {
        char *k = *buf + (size_t)i * stride;
        snprintf(k, stride, "%s/%d", name, i);
        (*keys)[i] = k;
    }
    return CC_OK;
}

/* Once every rank has read the blobs (each counts itself), the last one drops them all. */
static cc_status_t gather_cleanup(cc__store_t *store, const char *name, const char **keys,
                                  int nranks)
{
    char read[CC__STORE_MAX_KEY + 1];
    int64_t n = 0;
    snprintf(read, sizeof(read), "%s/read", name);
    CC_CHECK(cc__store_add(store, read, 1, &n));
    if (n < nranks) return CC_OK;
    /* The counter goes with the blobs (keys[] has room for it, see gather_keys), unless that
     * makes one key more than a request may hold. */
    size_t n_del = (size_t)nranks < CC__STORE_MAX_KEYS ? (size_t)nranks + 1 : (size_t)nranks;
    keys[nranks] = read;
    CC_CHECK(cc__store_delete_keys(store, keys, n_del, NULL));
    return n_del > (size_t)nranks ? CC_OK : cc__store_delete(store, read, NULL);
}

cc_status_t cc__store_allgather(cc__store_t *store, const char *name, int rank, int nranks,
                                const void *mine, void *all, size_t len, int64_t timeout_ms)
{
    if (!store || !name_ok(name, "allgather") || nranks < 1 ||
        (unsigned)nranks > CC__STORE_MAX_KEYS || rank < 0 || rank >= nranks ||
        len > CC__STORE_MAX_VALUE || (len && (!mine || !all)) || timeout_ms < 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store allgather \"%s\": invalid argument (rank %d of %d,"
                     " %zu bytes, timeout %lld ms)",
                     name ? name : "(null)", rank, nranks, len, (long long)timeout_ms);
        return CC_ERR_INVALID_ARG;
    }
    char *buf;
    const char **keys;
    CC_CHECK(gather_keys(name, nranks, &buf, &keys));
    cc_status_t st = cc__store_set(store, keys[rank], mine, len);
    struct gather_ctx g = {all, len, 0, 0};
    struct cc__store_missing miss = {0, 0};
    if (st == CC_OK) {
        /* One multi_get: the server answers when the last rank's key appears. */
        st = cc__store_mget_quiet(store, CC__STORE_OP_MULTI_GET, keys, (size_t)nranks, timeout_ms,
                                  sink_gather, &g, &miss);
    }
    if (st == CC_OK) st = gather_cleanup(store, name, keys, nranks);
    if (st == CC_ERR_MISMATCH)
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store allgather \"%s%s\": rank %zu contributed %u bytes"
                     ", rank %d %zu: every rank must contribute the same size",
                     store->prefix, name, g.bad_rank, g.bad_len, rank, len);
    else if (st == CC_ERR_TIMEOUT)
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store allgather \"%s%s\": %u of %d ranks missing after "
                     "%lld ms, the first rank %u",
                     store->prefix, name, miss.count, nranks, (long long)timeout_ms, miss.first);
    free(keys);
    free(buf);
    return st;
}
