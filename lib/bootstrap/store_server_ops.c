/*
 * store_server_ops.c - the store server's request handlers: the handshake,
 * set/get/multi_get/wait/check/add/cas/delete/will, and parked requests.
 *
 * A get, multi_get or wait whose keys are not all present is parked on its
 * connection with a deadline. Every mutation wakes the parked requests that
 * wait for the key it touched; the loop's timer answers the expired ones.
 * Fields are checked against the limits before use; a request that breaks
 * the protocol closes its connection (the caller does it on -1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bootstrap/store_server_int.h"
#include "base/clock.h"
#include "base/log.h"

#define SMALL_FIELDS 8 /* requests with up to this many fields need no allocation */

/* Log why a request is malformed and ask for the connection to be closed. */
static int malformed(struct cc__store_server *s, struct srv_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int malformed(struct cc__store_server *s, struct srv_conn *c, const char *fmt, ...)
{
    char why[200], ob[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    if (cc__srv_warn_ok(s, c))
        cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                    "store %s: client %s sent a malformed %s request: %s; closing"
                    " its connection",
                    s->name, c->addr, cc__store_op_name(c->hdr.op, ob, sizeof(ob)), why);
    return -1;
}

static int check_key(struct cc__store_server *s, struct srv_conn *c,
                     const struct cc__store_field *f)
{
    if (f->len == 0 || f->len > CC__STORE_MAX_KEY)
        return malformed(s, c, "key of %u bytes (allowed 1 to %u)", f->len, CC__STORE_MAX_KEY);
    return 0;
}

static int check_value(struct cc__store_server *s, struct srv_conn *c,
                       const struct cc__store_field *f)
{
    if (f->len > CC__STORE_MAX_VALUE)
        return malformed(s, c, "value of %u bytes over the limit of %u", f->len,
                         CC__STORE_MAX_VALUE);
    return 0;
}

/* Send a reply with a status and no fields, and finish the request. */
static int reply_status(struct cc__store_server *s, struct srv_conn *c, cc_status_t st)
{
    struct cc__store_wr w;
    cc__store_wr_begin(&w, c->hdr.op, (int16_t)st);
    if (cc__srv_send(s, c, &w) != 0) return 0; /* already closed */
    cc__srv_frame_done(s, c);
    return 0;
}

/* Send a reply with one small field, and finish the request. */
static int reply_one(struct cc__store_server *s, struct srv_conn *c, cc_status_t st, const void *p,
                     size_t len)
{
    struct cc__store_wr w;
    cc__store_wr_begin(&w, c->hdr.op, (int16_t)st);
    cc__store_wr_field(&w, p, len);
    if (cc__srv_send(s, c, &w) != 0) return 0;
    cc__srv_frame_done(s, c);
    return 0;
}

/* --- parked requests --- */

static int key_present(struct cc__store_server *s, const struct srv_keyref *k)
{
    return cc__kv_find(&s->kv, k->p, k->len, k->hash) != NULL;
}

/* Index of the first missing key at or after `from`; nkeys if none is missing. */
static uint32_t first_missing(struct cc__store_server *s, const struct srv_park *p, uint32_t from)
{
    while (from < p->nkeys && key_present(s, &p->keys[from]))
        from++;
    return from;
}

void cc__srv_unpark(struct cc__store_server *s, struct srv_conn *c)
{
    if (c->park.op && (c->pprev || c->pnext || s->parked == c)) {
        if (c->pprev)
            c->pprev->pnext = c->pnext;
        else
            s->parked = c->pnext;
        if (c->pnext) c->pnext->pprev = c->pprev;
    }
    c->pprev = c->pnext = NULL;
    free(c->park.keys);
    memset(&c->park, 0, sizeof(c->park));
}

/* All keys are present: answer with their values (get, multi_get) or nothing (wait). */
static void park_complete(struct cc__store_server *s, struct srv_conn *c)
{
    struct srv_park *p = &c->park;
    uint64_t total = 0;
    for (uint32_t i = 0; p->op != CC__STORE_OP_WAIT && i < p->nkeys; i++)
        total += 4u + cc__kv_find(&s->kv, p->keys[i].p, p->keys[i].len, p->keys[i].hash)->vlen;
    struct cc__store_wr w;
    if (total > CC__STORE_MAX_REPLY) {
        /* The values exist but cannot travel in one reply; the client logs the sizes. */
        cc__store_wr_begin(&w, c->hdr.op, CC_ERR_INVALID_ARG);
        cc__store_wr_u64(&w, total);
    } else {
        cc__store_wr_begin(&w, c->hdr.op, CC_OK);
        cc__store_wr_reserve(&w, (size_t)total);
        for (uint32_t i = 0; p->op != CC__STORE_OP_WAIT && i < p->nkeys; i++) {
            const struct cc__kv_entry *e =
                cc__kv_find(&s->kv, p->keys[i].p, p->keys[i].len, p->keys[i].hash);
            cc__store_wr_field(&w, e->val, e->vlen);
        }
    }
    cc__srv_unpark(s, c);
    if (cc__srv_send(s, c, &w) == 0) cc__srv_frame_done(s, c);
}

/* Answer a request whose keys are still missing: NOT_FOUND (no wait) or TIMEOUT. */
static void park_fail(struct cc__store_server *s, struct srv_conn *c, cc_status_t st)
{
    const struct srv_park *p = &c->park;
    uint32_t first = first_missing(s, p, 0), nmissing = 0;
    for (uint32_t i = first; i < p->nkeys; i++)
        nmissing += !key_present(s, &p->keys[i]);
    struct cc__store_wr w;
    cc__store_wr_begin(&w, c->hdr.op, (int16_t)st);
    cc__store_wr_u32(&w, first);
    cc__store_wr_u32(&w, nmissing);
    cc__srv_unpark(s, c);
    if (cc__srv_send(s, c, &w) == 0) cc__srv_frame_done(s, c);
}

/* A key was written: move the requests that waited for it along. */
static void wake(struct cc__store_server *s, const struct cc__kv_entry *e)
{
    for (struct srv_conn *c = s->parked, *next; c; c = next) {
        next = c->pnext;
        struct srv_park *p = &c->park;
        const struct srv_keyref *k = &p->keys[p->next];
        if (k->hash != e->hash || k->len != e->klen || memcmp(k->p, e->key, k->len) != 0) continue;
        p->next = first_missing(s, p, p->next);
        /* Keys seen earlier may have been deleted since: look at all of them again. */
        if (p->next == p->nkeys) p->next = first_missing(s, p, 0);
        if (p->next == p->nkeys) park_complete(s, c);
    }
}

void cc__srv_expire(struct cc__store_server *s, uint64_t now_ns)
{
    for (struct srv_conn *c = s->parked, *next; c; c = next) {
        next = c->pnext;
        if (c->park.deadline_ns <= now_ns) park_fail(s, c, CC_ERR_TIMEOUT);
    }
}

/* get, multi_get, wait: [timeout i64, key...] */
static int op_get(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                  uint32_t n)
{
    uint8_t op = c->hdr.op;
    if (n < 2 || (op == CC__STORE_OP_GET && n != 2) || n - 1 > CC__STORE_MAX_KEYS)
        return malformed(s, c, "%u fields (expected a timeout and %s keys)", n,
                         op == CC__STORE_OP_GET ? "1" : "1 to 65536");
    if (f[0].len != 8) return malformed(s, c, "timeout field of %u bytes (expected 8)", f[0].len);
    int64_t timeout_ms = (int64_t)cc__get_u64(f[0].p);
    if (timeout_ms < 0) return malformed(s, c, "negative timeout %" PRId64 " ms", timeout_ms);
    struct srv_park *p = &c->park;
    p->keys = malloc((n - 1) * sizeof(*p->keys));
    if (!p->keys) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: no memory for a %u-key request from %s",
                     s->name, n - 1, c->addr);
        return -1;
    }
    p->op = op;
    p->nkeys = n - 1;
    for (uint32_t i = 0; i < p->nkeys; i++) {
        if (check_key(s, c, &f[i + 1]) != 0) return -1; /* the kill frees keys */
        p->keys[i] =
            (struct srv_keyref){f[i + 1].p, f[i + 1].len, cc__kv_hash(f[i + 1].p, f[i + 1].len)};
    }
    p->next = first_missing(s, p, 0);
    if (p->next == p->nkeys)
        park_complete(s, c);
    else if (timeout_ms == 0)
        park_fail(s, c, CC_ERR_NOT_FOUND);
    else { /* park: the keys point into c->in, which stays put until the answer */
        p->deadline_ns = cc__deadline_after_ms(timeout_ms);
        c->pnext = s->parked;
        if (s->parked) s->parked->pprev = c;
        s->parked = c;
    }
    return 0;
}

/* set: [key, value] */
static int op_set(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                  uint32_t n)
{
    if (n != 2) return malformed(s, c, "%u fields (expected key and value)", n);
    if (check_key(s, c, &f[0]) != 0 || check_value(s, c, &f[1]) != 0) return -1;
    const struct cc__kv_entry *e =
        cc__kv_set(&s->kv, f[0].p, f[0].len, cc__kv_hash(f[0].p, f[0].len), f[1].p, f[1].len);
    if (!e) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: no memory to set a %u-byte value", s->name,
                     f[1].len);
        return reply_status(s, c, CC_ERR_NO_MEMORY);
    }
    reply_status(s, c, CC_OK);
    wake(s, e);
    return 0;
}

void cc__srv_wake_all(struct cc__store_server *s)
{
    for (struct srv_conn *c = s->parked, *next; c; c = next) {
        next = c->pnext;
        c->park.next = first_missing(s, &c->park, 0);
        if (c->park.next == c->park.nkeys) park_complete(s, c);
    }
}

void cc__srv_will_fire(struct cc__store_server *s, struct srv_conn *c)
{
    if (!c->will) return;
    const uint8_t *k = c->will, *v = c->will + c->will_klen;
    if (!cc__kv_set(&s->kv, k, c->will_klen, cc__kv_hash(k, c->will_klen), v, c->will_vlen))
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: no memory to write the will \"%.*s\" of "
                     "closed client %s", s->name, (int)c->will_klen, (const char *)k, c->addr);
    else
        cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: client %s closed: its will \"%.*s\" is set",
                     s->name, c->addr, (int)c->will_klen, (const char *)k);
    free(c->will);
    c->will = NULL;
    s->wills_fired = 1;
}

/* will: [key, value]. Kept on the connection, written when it closes: how the survivors of a
 * job learn at once that a rank's process is gone (its socket closes with it). */
static int op_will(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                   uint32_t n)
{
    if (n != 2) return malformed(s, c, "%u fields (expected key and value)", n);
    if (check_key(s, c, &f[0]) != 0 || check_value(s, c, &f[1]) != 0) return -1;
    uint8_t *w = malloc((size_t)f[0].len + f[1].len + 1);
    if (!w) return reply_status(s, c, CC_ERR_NO_MEMORY);
    memcpy(w, f[0].p, f[0].len);
    if (f[1].len) memcpy(w + f[0].len, f[1].p, f[1].len);
    free(c->will);
    c->will = w;
    c->will_klen = f[0].len;
    c->will_vlen = f[1].len;
    return reply_status(s, c, CC_OK);
}

/* check: [key] -> [exists] */
static int op_check(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                    uint32_t n)
{
    if (n != 1) return malformed(s, c, "%u fields (expected a key)", n);
    if (check_key(s, c, &f[0]) != 0) return -1;
    uint8_t yes = cc__kv_find(&s->kv, f[0].p, f[0].len, cc__kv_hash(f[0].p, f[0].len)) != NULL;
    return reply_one(s, c, CC_OK, &yes, 1);
}

/* delete: [key...] -> [deleted: any of them existed]. Many keys in one request let the
 * last reader of an allgather drop all its blobs in one round trip. */
static int op_delete(struct cc__store_server *s, struct srv_conn *c,
                     const struct cc__store_field *f, uint32_t n)
{
    if (n < 1 || n > CC__STORE_MAX_KEYS)
        return malformed(s, c, "%u fields (expected 1 to 65536 keys)", n);
    uint8_t yes = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (check_key(s, c, &f[i]) != 0) return -1;
        yes |= (uint8_t)cc__kv_delete(&s->kv, f[i].p, f[i].len, cc__kv_hash(f[i].p, f[i].len));
    }
    return reply_one(s, c, CC_OK, &yes, 1);
}

/* Parse a counter's text value; 0 on success. Counters are decimal so `get` reads them too. */
static int parse_counter(const struct cc__kv_entry *e, int64_t *out)
{
    char buf[24];
    if (!e) return *out = 0, 0;
    if (e->vlen == 0 || e->vlen >= sizeof(buf)) return -1;
    memcpy(buf, e->val, e->vlen);
    buf[e->vlen] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* add: [key, delta] -> [result] */
static int op_add(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                  uint32_t n)
{
    if (n != 2) return malformed(s, c, "%u fields (expected key and delta)", n);
    if (check_key(s, c, &f[0]) != 0) return -1;
    if (f[1].len != 8) return malformed(s, c, "delta field of %u bytes (expected 8)", f[1].len);
    uint64_t h = cc__kv_hash(f[0].p, f[0].len);
    int64_t cur, delta = (int64_t)cc__get_u64(f[1].p), result;
    if (parse_counter(cc__kv_find(&s->kv, f[0].p, f[0].len, h), &cur) != 0)
        return reply_status(s, c, CC_ERR_INVALID_USAGE); /* not a counter; the client logs it */
    if (__builtin_add_overflow(cur, delta, &result)) return reply_status(s, c, CC_ERR_INVALID_ARG);
    char text[24];
    int len = snprintf(text, sizeof(text), "%" PRId64, result);
    const struct cc__kv_entry *e = cc__kv_set(&s->kv, f[0].p, f[0].len, h, text, (uint32_t)len);
    if (!e) return reply_status(s, c, CC_ERR_NO_MEMORY);
    uint8_t b[8];
    cc__put_u64(b, (uint64_t)result);
    reply_one(s, c, CC_OK, b, 8);
    wake(s, e);
    return 0;
}

/* cas: [key, flags, expected, desired] -> [swapped, (current)] */
static int op_cas(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                  uint32_t n)
{
    if (n != 4) return malformed(s, c, "%u fields (expected key, flags, expected, desired)", n);
    if (check_key(s, c, &f[0]) != 0 || check_value(s, c, &f[2]) != 0 ||
        check_value(s, c, &f[3]) != 0)
        return -1;
    if (f[1].len != 1) return malformed(s, c, "flags field of %u bytes (expected 1)", f[1].len);
    uint64_t h = cc__kv_hash(f[0].p, f[0].len);
    const struct cc__kv_entry *e = cc__kv_find(&s->kv, f[0].p, f[0].len, h);
    int match = (f[1].p[0] & CC__STORE_CAS_HAS_EXPECTED)
                    ? e && e->vlen == f[2].len && memcmp(e->val, f[2].p, f[2].len) == 0
                    : e == NULL;
    if (match && !(e = cc__kv_set(&s->kv, f[0].p, f[0].len, h, f[3].p, f[3].len)))
        return reply_status(s, c, CC_ERR_NO_MEMORY);
    struct cc__store_wr w;
    cc__store_wr_begin(&w, c->hdr.op, CC_OK);
    cc__store_wr_u8(&w, (uint8_t)match);
    if (e) cc__store_wr_field(&w, e->val, e->vlen);
    if (cc__srv_send(s, c, &w) == 0) cc__srv_frame_done(s, c);
    if (match) wake(s, e);
    return 0;
}

/* auth: [client nonce, mac] -> [server mac]. A refusal is answered, then the connection closes. */
static int op_auth(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                   uint32_t n)
{
    uint8_t mac[CC__STORE_MAC], smac[CC__STORE_MAC] = {0};
    if (n != 2 || f[0].len != CC__STORE_NONCE || (f[1].len != 0 && f[1].len != CC__STORE_MAC))
        return malformed(s, c, "handshake with %u fields (expected a %u-byte nonce and a proof)", n,
                         CC__STORE_NONCE);
    if (s->key[0]) {
        const char *why = NULL;
        if (f[1].len == 0)
            why = "it sent no proof of the job key (is CCOMM_JOB_KEY set?)";
        else if (cc__store_mac(s->key, c->nonce, f[0].p, mac) != 0)
            why = "libcrypto failed";
        else if (CRYPTO_memcmp(mac, f[1].p, CC__STORE_MAC) != 0)
            why = "wrong job key";
        if (why || cc__store_mac(s->key, f[0].p, c->nonce, smac) != 0) {
            if (cc__srv_warn_ok(s, c))
                cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                            "store %s: client %s failed authentication: %s; "
                            "closing its connection",
                            s->name, c->addr, why ? why : "libcrypto failed");
            reply_status(s, c, CC_ERR_AUTH);
            return -1;
        }
    }
    cc__srv_authed(s, c);
    c->own = cc__store_nonce_is_aux(f[0].p);
    if (c->own) cc__srv_count(s, +1);
    cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: client %s authenticated", s->name, c->addr);
    return reply_one(s, c, CC_OK, smac, s->key[0] ? CC__STORE_MAC : 0);
}

static int dispatch(struct cc__store_server *s, struct srv_conn *c, const struct cc__store_field *f,
                    uint32_t n)
{
    uint8_t op = c->hdr.op;
    if (!c->authed && op != CC__STORE_OP_AUTH)
        return malformed(s, c, "it came before the handshake");
    switch (op) {
    case CC__STORE_OP_AUTH:
        if (c->authed) return malformed(s, c, "second handshake on one connection");
        return op_auth(s, c, f, n);
    case CC__STORE_OP_SET:
        return op_set(s, c, f, n);
    case CC__STORE_OP_GET:
    case CC__STORE_OP_MULTI_GET:
    case CC__STORE_OP_WAIT:
        return op_get(s, c, f, n);
    case CC__STORE_OP_CHECK:
        return op_check(s, c, f, n);
    case CC__STORE_OP_DELETE:
        return op_delete(s, c, f, n);
    case CC__STORE_OP_ADD:
        return op_add(s, c, f, n);
    case CC__STORE_OP_CAS:
        return op_cas(s, c, f, n);
    case CC__STORE_OP_WILL:
        return op_will(s, c, f, n);
    default:
        return malformed(s, c, "opcode %u is not a request", op);
    }
}

int cc__srv_request(struct cc__store_server *s, struct srv_conn *c)
{
    struct cc__store_field small[SMALL_FIELDS], *f = small;
    uint32_t n = c->hdr.nfields;
    char why[160];
    if (n > SMALL_FIELDS && !(f = malloc(n * sizeof(*f)))) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: no memory for a %u-field request from %s",
                     s->name, n, c->addr);
        return -1;
    }
    int rc;
    if (cc__store_fields(c->in + CC__STORE_HDR_SIZE, c->hdr.plen, n, f, why, sizeof(why)) != 0)
        rc = malformed(s, c, "%s", why);
    else
        rc = dispatch(s, c, f, n);
    if (f != small) free(f);
    return rc;
}
