/*
 * store_client_ops.c - the store operations a client sends: set, will, get,
 * multi_get, wait, check, add, compare-and-set, delete, and barrier and
 * allgather built on them.
 *
 * Each operation builds one request, exchanges it under the connection's
 * lock (cc__store_call) and checks the reply's shape before trusting it.
 * Timeouts are logged here, by the operation that knows what was awaited;
 * barrier and allgather use quiet internals so that a timeout is logged once,
 * in their own words.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/store_client_int.h"
#include "base/clock.h"
#include "base/log.h"

static int timeout_ok(int64_t timeout_ms, const char *op)
{
    if (timeout_ms >= 0) return 1;
    cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: timeout %lld ms is negative", op,
                 (long long)timeout_ms);
    return 0;
}

cc_status_t cc__store_mget_quiet(cc__store_t *s, uint8_t op, const char *const *keys, size_t n,
                                 int64_t timeout_ms, cc__store_sink_fn sink, void *ctx,
                                 struct cc__store_missing *miss)
{
    struct cc__store_wr w;
    struct cc__store_reply r;
    char ob[16];
    const char *opname = cc__store_op_name(op, ob, sizeof(ob));
    cc__store_wr_begin(&w, op, 0);
    cc__store_wr_u64(&w, (uint64_t)timeout_ms);
    for (size_t i = 0; i < n; i++) {
        cc_status_t st = cc__store_key_field(s, &w, keys[i], opname);
        if (st != CC_OK) {
            cc__store_wr_free(&w);
            return st;
        }
    }
    cc_status_t st = cc__store_call(s, &w, timeout_ms, keys[0], &r);
    if (st == CC_OK && (r.status == CC_ERR_TIMEOUT || r.status == CC_ERR_NOT_FOUND)) {
        if (r.nfields != 2 || r.f[0].len != 4 || r.f[1].len != 4 || cc__get_u32(r.f[0].p) >= n)
            st = cc__store_bad_reply(s, opname, keys[0], "missing-key report of the wrong shape");
        else {
            miss->first = cc__get_u32(r.f[0].p);
            miss->count = cc__get_u32(r.f[1].p);
            st = (cc_status_t)r.status;
        }
    } else if (st == CC_OK && r.status == CC_ERR_INVALID_ARG && r.nfields == 1 && r.f[0].len == 8) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: %zu values of %" PRIu64 " bytes in all do not"
                     " fit one reply (limit %u bytes)",
                     opname, n, cc__get_u64(r.f[0].p), CC__STORE_MAX_REPLY);
        st = CC_ERR_INVALID_ARG;
    } else if (st == CC_OK &&
               (r.status != CC_OK || r.nfields != (op == CC__STORE_OP_WAIT ? 0 : n))) {
        st = cc__store_bad_reply(s, opname, keys[0], "unexpected status or number of values");
    }
    for (size_t i = 0; st == CC_OK && sink && i < r.nfields; i++)
        if (sink(ctx, i, r.f[i].p, r.f[i].len) != 0) st = CC_ERR_MISMATCH;
    cc__store_call_end(s, &r);
    return st;
}

/* Log a get/multi_get/wait that did not find its keys; NOT_FOUND is an answer, not an error. */
static void log_missing(cc__store_t *s, const char *op, const char *const *keys, size_t n,
                        cc_status_t st, const struct cc__store_missing *m, int64_t timeout_ms)
{
    if (st == CC_ERR_TIMEOUT)
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: %u of %zu keys missing after %lld ms, the "
                     "first \"%s%s\"",
                     op, m->count, n, (long long)timeout_ms, s->prefix, keys[m->first]);
    else if (st == CC_ERR_NOT_FOUND)
        cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: key \"%s%s\" not found", op, s->prefix,
                     keys[m->first]);
}

static cc_status_t set_op(cc__store_t *store, uint8_t op, const char *opname, const char *key,
                          const void *value, size_t len);

cc_status_t cc__store_set(cc__store_t *store, const char *key, const void *value, size_t len)
{
    return set_op(store, CC__STORE_OP_SET, "set", key, value, len);
}

cc_status_t cc__store_will(cc__store_t *store, const char *key, const void *value, size_t len)
{
    return set_op(store, CC__STORE_OP_WILL, "will", key, value, len);
}

/* set and will: [key, value] -> [] */
static cc_status_t set_op(cc__store_t *store, uint8_t op, const char *opname, const char *key,
                          const void *value, size_t len)
{
    struct cc__store_wr w;
    struct cc__store_reply r;
    if (!store || (!value && len) || len > CC__STORE_MAX_VALUE) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: key \"%s\": %s", opname, key ? key : "(null)",
                     !store                      ? "store is NULL"
                     : len > CC__STORE_MAX_VALUE ? "value over the limit of 16 MiB"
                                                 : "value is NULL");
        return CC_ERR_INVALID_ARG;
    }
    cc__store_wr_begin(&w, op, 0);
    cc_status_t st = cc__store_key_field(store, &w, key, opname);
    if (st != CC_OK) return cc__store_wr_free(&w), st;
    cc__store_wr_field(&w, value, len);
    st = cc__store_call(store, &w, 0, key, &r);
    if (st == CC_OK && r.status == CC_ERR_NO_MEMORY)
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: %s \"%s%s\": the server is out of memory",
                     store->conn->addr, opname, store->prefix, key);
    if (st == CC_OK && r.status != CC_ERR_NO_MEMORY && (r.status != CC_OK || r.nfields != 0))
        st = cc__store_bad_reply(store, opname, key, "unexpected status or fields");
    if (st == CC_OK) st = (cc_status_t)r.status;
    cc__store_call_end(store, &r);
    return st;
}

struct copy_out {
    void **values;
    size_t *lens;
};

/* Copy each value into a new NUL-terminated buffer. */
static int sink_copy(void *ctx, size_t i, const uint8_t *p, uint32_t len)
{
    struct copy_out *o = ctx;
    uint8_t *v = malloc((size_t)len + 1);
    if (!v) return -1;
    if (len) memcpy(v, p, len);
    v[len] = '\0';
    o->values[i] = v;
    o->lens[i] = len;
    return 0;
}

static cc_status_t multi_get_op(cc__store_t *s, uint8_t op, const char *opname,
                                const char *const *keys, size_t n, void **values, size_t *lens,
                                int64_t timeout_ms)
{
    struct cc__store_missing m = {0, 0};
    struct copy_out o = {values, lens};
    if (!s || !keys || n == 0 || n > CC__STORE_MAX_KEYS ||
        (op != CC__STORE_OP_WAIT && (!values || !lens))) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: %zu keys (allowed 1 to %u) or a NULL "
                     "argument",
                     opname, n, CC__STORE_MAX_KEYS);
        return CC_ERR_INVALID_ARG;
    }
    if (!timeout_ok(timeout_ms, opname)) return CC_ERR_INVALID_ARG;
    if (values) memset(values, 0, n * sizeof(*values));
    cc_status_t st =
        cc__store_mget_quiet(s, op, keys, n, timeout_ms, values ? sink_copy : NULL, &o, &m);
    if (st == CC_ERR_MISMATCH) { /* only the copy can fail here */
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: no memory for the values", opname);
        st = CC_ERR_NO_MEMORY;
    }
    if (st != CC_OK && values)
        for (size_t i = 0; i < n; i++)
            free(values[i]), values[i] = NULL;
    log_missing(s, opname, keys, n, st, &m, timeout_ms);
    return st;
}

cc_status_t cc__store_get(cc__store_t *store, const char *key, void **value, size_t *len,
                          int64_t timeout_ms)
{
    const char *keys[1] = {key};
    return multi_get_op(store, CC__STORE_OP_GET, "get", keys, 1, value, len, timeout_ms);
}

cc_status_t cc__store_multi_get(cc__store_t *store, const char *const *keys, size_t nkeys,
                                void **values, size_t *lens, int64_t timeout_ms)
{
    return multi_get_op(store, CC__STORE_OP_MULTI_GET, "multi_get", keys, nkeys, values, lens,
                        timeout_ms);
}

cc_status_t cc__store_wait(cc__store_t *store, const char *const *keys, size_t nkeys,
                           int64_t timeout_ms)
{
    return multi_get_op(store, CC__STORE_OP_WAIT, "wait", keys, nkeys, NULL, NULL, timeout_ms);
}

/* check and delete: [key...] -> [u8] */
static cc_status_t key_flag_op(cc__store_t *s, uint8_t op, const char *opname,
                               const char *const *keys, size_t n, int *out)
{
    struct cc__store_wr w;
    struct cc__store_reply r;
    if (!s || !keys || n < 1 || n > CC__STORE_MAX_KEYS) return CC_ERR_INVALID_ARG;
    cc__store_wr_begin(&w, op, 0);
    cc_status_t st = CC_OK;
    for (size_t i = 0; i < n && st == CC_OK; i++)
        st = cc__store_key_field(s, &w, keys[i], opname);
    if (st != CC_OK) return cc__store_wr_free(&w), st;
    const char *key = keys[0];
    st = cc__store_call(s, &w, 0, key, &r);
    if (st == CC_OK && (r.status != CC_OK || r.nfields != 1 || r.f[0].len != 1))
        st = cc__store_bad_reply(s, opname, key, "expected one flag byte");
    if (st == CC_OK && out) *out = r.f[0].p[0] != 0;
    cc__store_call_end(s, &r);
    return st;
}

cc_status_t cc__store_check(cc__store_t *store, const char *key, int *exists)
{
    if (!exists) return CC_ERR_INVALID_ARG;
    return key_flag_op(store, CC__STORE_OP_CHECK, "check", &key, 1, exists);
}

cc_status_t cc__store_delete(cc__store_t *store, const char *key, int *deleted)
{
    return key_flag_op(store, CC__STORE_OP_DELETE, "delete", &key, 1, deleted);
}

cc_status_t cc__store_delete_keys(cc__store_t *store, const char *const *keys, size_t nkeys,
                                  int *deleted)
{
    return key_flag_op(store, CC__STORE_OP_DELETE, "delete", keys, nkeys, deleted);
}

cc_status_t cc__store_add(cc__store_t *store, const char *key, int64_t delta, int64_t *result)
{
    struct cc__store_wr w;
    struct cc__store_reply r;
    if (!store) return CC_ERR_INVALID_ARG;
    cc__store_wr_begin(&w, CC__STORE_OP_ADD, 0);
    cc_status_t st = cc__store_key_field(store, &w, key, "add");
    if (st != CC_OK) return cc__store_wr_free(&w), st;
    cc__store_wr_u64(&w, (uint64_t)delta);
    st = cc__store_call(store, &w, 0, key, &r);
    if (st == CC_OK && r.status != CC_OK) {
        /* The server refuses values that are not decimal integers, and overflow. */
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store add %lld to \"%s%s\": %s", (long long)delta,
                     store->prefix, key,
                     r.status == CC_ERR_INVALID_USAGE
                         ? "the key holds a value that is not a decimal integer"
                     : r.status == CC_ERR_INVALID_ARG ? "the sum overflows 64 bits"
                                                      : cc_status_str((cc_status_t)r.status));
        st = (cc_status_t)r.status;
    } else if (st == CC_OK && (r.nfields != 1 || r.f[0].len != 8)) {
        st = cc__store_bad_reply(store, "add", key, "expected one 8-byte integer");
    } else if (st == CC_OK && result) {
        *result = (int64_t)cc__get_u64(r.f[0].p);
    }
    cc__store_call_end(store, &r);
    return st;
}

cc_status_t cc__store_cas(cc__store_t *store, const char *key, const void *expected, size_t elen,
                          const void *desired, size_t dlen, void **current, size_t *clen,
                          int *swapped)
{
    struct cc__store_wr w;
    struct cc__store_reply r;
    struct copy_out o = {current, clen};
    if (!store || (!desired && dlen) || elen > CC__STORE_MAX_VALUE || dlen > CC__STORE_MAX_VALUE ||
        (current && !clen)) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store cas: key \"%s\": invalid argument (sizes %zu and"
                     " %zu, limit %u)",
                     key ? key : "(null)", elen, dlen, CC__STORE_MAX_VALUE);
        return CC_ERR_INVALID_ARG;
    }
    cc__store_wr_begin(&w, CC__STORE_OP_CAS, 0);
    cc_status_t st = cc__store_key_field(store, &w, key, "cas");
    if (st != CC_OK) return cc__store_wr_free(&w), st;
    cc__store_wr_u8(&w, expected ? CC__STORE_CAS_HAS_EXPECTED : 0);
    cc__store_wr_field(&w, expected, expected ? elen : 0);
    cc__store_wr_field(&w, desired, dlen);
    st = cc__store_call(store, &w, 0, key, &r);
    if (st == CC_OK && (r.status != CC_OK || r.nfields < 1 || r.nfields > 2 || r.f[0].len != 1))
        st = cc__store_bad_reply(store, "cas", key, "expected a flag and at most one value");
    if (st == CC_OK && current) {
        *current = NULL, *clen = 0;
        if (r.nfields == 2 && sink_copy(&o, 0, r.f[1].p, r.f[1].len) != 0) st = CC_ERR_NO_MEMORY;
    }
    if (st == CC_OK && swapped) *swapped = r.f[0].p[0] != 0;
    cc__store_call_end(store, &r);
    return st;
}
