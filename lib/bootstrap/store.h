/*
 * store.h - the bootstrap store: a TCP key/value server and its client.
 *
 * ccrun (or rank 0, torchrun style) hosts the server; every rank connects
 * as a client. Ranks use it to meet (exchange addresses), to agree on ids,
 * and to coordinate dumps. It is not on any op's data path.
 *
 * Every connection proves the job key with an HMAC-SHA256 challenge and
 * response (OpenSSL libcrypto) before any request, or is refused and the
 * refusal logged with the client's address. Frames have bounded sizes
 * (CC__STORE_MAX_KEY, CC__STORE_MAX_VALUE); malformed or oversized frames
 * close the connection. Every call that waits takes a timeout.
 *
 * Thread safety: a client handle may be used by several threads; calls are
 * serialized on its connection. The server runs on its own thread.
 *
 * Timeouts are in milliseconds; a negative one is CC_ERR_INVALID_ARG. After
 * a transport failure (the server is gone, no reply in time, a malformed
 * reply) the connection is closed and every later call on it fails at once
 * with CC_ERR_PEER_LOST. docs/bootstrap.md describes the wire protocol.
 */
#ifndef CC_BOOTSTRAP_STORE_H
#define CC_BOOTSTRAP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/status.h"

#define CC__STORE_MAX_KEY   512u        /* bytes in a key */
#define CC__STORE_MAX_VALUE (16u << 20) /* bytes in a value */
#define CC__STORE_MAX_KEYS  65536u      /* keys in one multi-key request */
/* Replies are bounded too: a multi_get answer is at most 256 MiB (store_proto.h). */

typedef struct cc__store cc__store_t;
typedef struct cc__store_server cc__store_server_t;

/* --- server --- */

/*
 * Start a store server listening on `host` ("0.0.0.0", "127.0.0.1", an IP or
 * a name) and `port` (0 = any free port). `job_key` may be "" (then any
 * client is accepted and a warning is logged once).
 * Returns CC_OK; CC_ERR_BUSY (port in use; the log names host:port);
 * CC_ERR_SYSTEM; CC_ERR_INVALID_ARG.
 */
cc_status_t cc__store_server_start(const char *host, int port, const char *job_key,
                                   cc__store_server_t **out);
/* The port it listens on (useful with port 0). */
int cc__store_server_port(const cc__store_server_t *server);
/* How many clients are connected now (any thread). */
size_t cc__store_server_clients(cc__store_server_t *server);
/*
 * How many of them are peers: all but the auxiliary connections that this
 * very process opened (cc__store_connect_aux: its watchdog's, which closes
 * only when the process exits). Ranks that are threads of this process use
 * ordinary connections and count. A connection still in its handshake counts.
 * Any thread.
 */
size_t cc__store_server_peers(cc__store_server_t *server);
/* How many keys it holds now (any thread). */
size_t cc__store_server_keys(cc__store_server_t *server);
/* Stop the thread, close every connection, free everything. NULL is ignored. */
void cc__store_server_stop(cc__store_server_t *server);

/* --- client --- */

/*
 * Connect to "host:port" (or "[v6]:port"), retrying until `timeout_ms` passes
 * (the server may start later than the client), then authenticate with
 * `job_key` (NULL = ""). A client with a key also refuses a store that has
 * none: such a store cannot prove it belongs to the job.
 * Returns CC_OK; CC_ERR_TIMEOUT (the log names the address and the last
 * error); CC_ERR_AUTH (key refused, or the store has no key); CC_ERR_INVALID_ARG
 * (bad address, or a host name that does not resolve).
 * Requests may then take up to max(timeout_ms, 10 s) beyond their own wait.
 */
cc_status_t cc__store_connect(const char *addr, const char *job_key, int64_t timeout_ms,
                              cc__store_t **out);
/*
 * The same, for a connection that must not keep a store of this process up
 * (the watchdog's): the server knows it from the handshake and leaves it out
 * of cc__store_server_peers. To every other process it is an ordinary client.
 */
cc_status_t cc__store_connect_aux(const char *addr, const char *job_key, int64_t timeout_ms,
                                  cc__store_t **out);
/*
 * Free the handle. The connection closes when the base handle and every view
 * made from it are closed, in any order. NULL is ignored.
 */
void cc__store_close(cc__store_t *store);

/*
 * A view of `base` whose keys are all prefixed with `prefix` (e.g.
 * "comm/2a9f/"). Shares base's connection (and keeps it open); free it with
 * cc__store_close. Views of views nest their prefixes. Keys, prefix
 * included, are at most CC__STORE_MAX_KEY bytes.
 */
cc_status_t cc__store_view(cc__store_t *base, const char *prefix, cc__store_t **out);

/* The local IP address (no port) of the connection to the server, as text (for peers). */
cc_status_t cc__store_local_addr(const cc__store_t *store, char *buf, size_t buflen);

cc_status_t cc__store_set(cc__store_t *store, const char *key, const void *value, size_t len);

/*
 * Leave a "last will" on the connection: the server sets key = value when
 * the connection closes (the process exited or died, even by SIGKILL, or
 * the last handle on it was closed). A later will on the same connection
 * replaces the earlier one; views prefix the key as usual. Survivors learn
 * from it, without waiting for a timeout, that a rank is gone.
 */
cc_status_t cc__store_will(cc__store_t *store, const char *key, const void *value, size_t len);

/*
 * Get a key, waiting up to `timeout_ms` for it to exist (0 = do not wait).
 * *value is new (free with free()), NUL-terminated beyond *len for convenience.
 * Returns CC_OK; CC_ERR_TIMEOUT (the log names the key); CC_ERR_NOT_FOUND
 * (timeout_ms == 0 and no such key).
 */
cc_status_t cc__store_get(cc__store_t *store, const char *key, void **value, size_t *len,
                          int64_t timeout_ms);

/*
 * Get many keys in one round trip, waiting up to `timeout_ms` for all of
 * them. values[i] and lens[i] are new (free each values[i]). On error none
 * is returned (values[i] are NULL). CC_ERR_NOT_FOUND when timeout_ms == 0 and
 * a key is missing; CC_ERR_TIMEOUT (the log names how many are missing and
 * the first).
 */
cc_status_t cc__store_multi_get(cc__store_t *store, const char *const *keys, size_t nkeys,
                                void **values, size_t *lens, int64_t timeout_ms);

/* Wait until every key exists. CC_ERR_TIMEOUT names the first missing key
 * (CC_ERR_NOT_FOUND when timeout_ms == 0). */
cc_status_t cc__store_wait(cc__store_t *store, const char *const *keys, size_t nkeys,
                           int64_t timeout_ms);

/* Does the key exist now? *exists = 0 or 1. */
cc_status_t cc__store_check(cc__store_t *store, const char *key, int *exists);

/*
 * Atomically add `delta` to the integer at `key` (missing = 0); *result = new
 * value (may be NULL). Counters are stored as decimal text, so get reads
 * them. CC_ERR_INVALID_USAGE if the key holds something else;
 * CC_ERR_INVALID_ARG if the sum overflows.
 */
cc_status_t cc__store_add(cc__store_t *store, const char *key, int64_t delta, int64_t *result);

/*
 * Compare-and-set: if the key's value equals `expected` (or the key is
 * missing and expected == NULL), set it to `desired`. *current (new, may be
 * NULL) receives the value after the operation; *swapped = 1 if it was set.
 */
cc_status_t cc__store_cas(cc__store_t *store, const char *key, const void *expected, size_t elen,
                          const void *desired, size_t dlen, void **current, size_t *clen,
                          int *swapped);

/* Delete a key; *deleted = 1 if it existed. `deleted` may be NULL. */
cc_status_t cc__store_delete(cc__store_t *store, const char *key, int *deleted);
/* Delete 1 to CC__STORE_MAX_KEYS keys in one request; *deleted = 1 if any existed. */
cc_status_t cc__store_delete_keys(cc__store_t *store, const char *const *keys, size_t nkeys,
                                  int *deleted);

/*
 * Barrier of `nranks` callers on `name`: each adds 1 to "<name>/arrived";
 * the last sets "<name>/done", which the others wait for. Reusable only with
 * distinct names (a reused one gives CC_ERR_INVALID_USAGE). CC_ERR_TIMEOUT
 * logs how many ranks arrived.
 */
cc_status_t cc__store_barrier(cc__store_t *store, const char *name, int nranks, int64_t timeout_ms);

/*
 * Allgather of fixed-size blobs: rank r sets "<name>/<r>" and gets all
 * nranks of them in one multi_get. `all` receives nranks * len bytes in rank
 * order. Each rank then counts itself in "<name>/read"; the last one deletes
 * the blobs and the counter, so the store does not grow with each use.
 * Blob sizes that differ give CC_ERR_MISMATCH naming the rank;
 * CC_ERR_TIMEOUT logs how many ranks are missing and the first.
 */
cc_status_t cc__store_allgather(cc__store_t *store, const char *name, int rank, int nranks,
                                const void *mine, void *all, size_t len, int64_t timeout_ms);

#endif /* CC_BOOTSTRAP_STORE_H */
