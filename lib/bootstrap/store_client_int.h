/*
 * store_client_int.h - the store client's internals, shared by the
 * connection code (store_client.c) and the operations (store_client_ops.c).
 */
#ifndef CC_BOOTSTRAP_STORE_CLIENT_INT_H
#define CC_BOOTSTRAP_STORE_CLIENT_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "bootstrap/store_proto.h"

/*
 * One authenticated connection, shared by a handle and its views. The mutex
 * serializes whole request/reply exchanges; rbuf holds the last reply and
 * is valid while the mutex is held.
 */
struct cc__store_conn {
    pthread_mutex_t lock;
    int fd;          /* -1 once the connection broke; later calls fail fast */
    atomic_int refs; /* handles (the base and its views) using it */
    char addr[300];  /* "host:port" as given, for logs */
    int64_t io_ms;   /* how long the server may take beyond a request's own wait */
    uint8_t *rbuf;   /* payload of the last reply */
    size_t rcap;
    int aux; /* opened by cc__store_connect_aux: the server's process leaves it out */
};

struct cc__store {
    struct cc__store_conn *conn;
    size_t plen;                        /* bytes of prefix */
    char prefix[CC__STORE_MAX_KEY + 1]; /* prepended to every key of this handle */
};

/* A received reply. Fields point into conn->rbuf: valid until cc__store_call_end. */
struct cc__store_reply {
    int16_t status; /* the server's answer */
    uint32_t nfields;
    struct cc__store_field *f;
    struct cc__store_field small[4];
};

/*
 * Send the request built in `req` (freed here) and receive its reply, allowing
 * `wait_ms` more than the usual I/O time. Takes the connection's lock, which
 * stays held until cc__store_call_end(), also on error. `key` (may be NULL)
 * names the request in logs. Transport failures are logged here and break
 * the connection: CC_ERR_PEER_LOST, CC_ERR_TIMEOUT, CC_ERR_PROTOCOL,
 * CC_ERR_NO_MEMORY.
 */
cc_status_t cc__store_call(cc__store_t *s, struct cc__store_wr *req, int64_t wait_ms,
                           const char *key, struct cc__store_reply *rep);
void cc__store_call_end(cc__store_t *s, struct cc__store_reply *rep);

/* Receives each value of a multi-key reply, in key order. Nonzero stops (CC_ERR_MISMATCH). */
typedef int (*cc__store_sink_fn)(void *ctx, size_t i, const uint8_t *p, uint32_t len);

struct cc__store_missing {
    uint32_t first; /* index of the first missing key */
    uint32_t count; /* keys still missing */
};

/*
 * get/multi_get/wait of keys[0..n) (prefixed) without logging timeouts:
 * CC_OK (values go to `sink` if not NULL), CC_ERR_NOT_FOUND or
 * CC_ERR_TIMEOUT (with *miss), CC_ERR_MISMATCH (the sink refused), or an
 * error already logged.
 */
cc_status_t cc__store_mget_quiet(cc__store_t *s, uint8_t op, const char *const *keys, size_t n,
                                 int64_t timeout_ms, cc__store_sink_fn sink, void *ctx,
                                 struct cc__store_missing *miss);

/* A reply of the wrong shape: log it (naming op and key), break the connection. */
cc_status_t cc__store_bad_reply(cc__store_t *s, const char *op, const char *key, const char *why);

/* Append "<prefix><key>" as one field, after checking the key. */
cc_status_t cc__store_key_field(const cc__store_t *s, struct cc__store_wr *w, const char *key,
                                const char *op);

#endif /* CC_BOOTSTRAP_STORE_CLIENT_INT_H */
