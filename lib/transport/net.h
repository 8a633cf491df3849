/*
 * net.h - a communicator's connections to its peers, and point-to-point
 * messages over them.
 *
 * A cc__net_t joins the ranks of one communicator: between ranks on the same
 * host over shared memory ("shm"), otherwise over TCP ("tcp"); with
 * transport "tcp" every pair uses TCP. Each pair of ranks has one ordered
 * channel per direction. Messages carry a 32-bit tag; a receive matches the
 * oldest message from its peer with the same tag (messages of other tags
 * that arrive first are held aside). The transport knows nothing of
 * collectives.
 *
 * Requests are caller-owned memory (no allocation per message). Sends and
 * receives progress when any call on the net runs (isend, irecv, test,
 * wait). Waiting polls for CCOMM_WAIT_SPIN_US, then yields, then sleeps, so
 * ranks that outnumber the cores do not starve each other.
 *
 * Failures are never silent: a peer that dies (TCP EOF or reset, a dead pid
 * on shm) or that aborted its side fails every request to or from it with
 * CC_ERR_PEER_LOST, logged once with the peer's rank, host and the cause.
 *
 * Thread safety: one thread at a time per net, except cc__net_abort (any
 * thread, async).
 */
#ifndef CC_TRANSPORT_NET_H
#define CC_TRANSPORT_NET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ccomm/status.h"

typedef struct cc__net cc__net_t;

/* Tags at or above this are reserved for ccomm's own protocols (collectives). */
#define CC__TAG_INTERNAL 0x80000000u

/* A request. Fields are the transport's; callers only allocate it. */
typedef struct cc__req {
    int kind;            /* 0 none, 1 send, 2 recv */
    int peer;
    uint32_t tag;
    cc_status_t status;  /* CC_INPROGRESS until done */
    void *buf;           /* recv: destination; send: (const) source */
    size_t len;          /* bytes expected / to send */
    size_t done;         /* bytes moved so far */
    struct cc__req *next; /* transport's queues */
    uint64_t priv[4];    /* transport's scratch */
} cc__req_t;

typedef struct cc__net_config {
    int rank;
    int size;
    uint64_t comm_id;           /* names shared segments, e.g. /dev/shm/ccomm-<job>-<comm>-... */
    const char *job_id;         /* for segment names */
    const char *transport;      /* "auto" or "tcp" */
    const char *socket_addr;    /* IP that peers use to reach this rank over TCP */
    int64_t connect_timeout_ms;
    /* Allgather of fixed-size blobs over the communicator (the core
     * implements it over the store). all: size * len bytes, rank order. */
    cc_status_t (*allgather)(void *ctx, const void *mine, void *all, size_t len);
    void *allgather_ctx;
} cc__net_config_t;

/* Connect to every peer. Collective over the communicator's ranks. */
cc_status_t cc__net_create(const cc__net_config_t *config, cc__net_t **out);

/* Close connections and unmap segments. Not collective; NULL ignored.
 * Pending requests are not finished: abort first if anyone may wait on them. */
void cc__net_destroy(cc__net_t *net);

/*
 * Fail every pending and future request with `reason` (CC_ERR_ABORTED,
 * CC_ERR_TIMEOUT, ...), tell the peers (so their requests to this rank
 * end with CC_ERR_PEER_LOST instead of waiting), and wake any waiter.
 * Any thread; async. Idempotent.
 */
void cc__net_abort(cc__net_t *net, cc_status_t reason);

/* Post a send or a receive of `len` bytes. The buffer is borrowed until the
 * request completes. A receive whose matching message has another length
 * fails with CC_ERR_MISMATCH (both sizes logged). */
cc_status_t cc__net_isend(cc__net_t *net, int peer, uint32_t tag, const void *buf, size_t len,
                          cc__req_t *req);
cc_status_t cc__net_irecv(cc__net_t *net, int peer, uint32_t tag, void *buf, size_t len,
                          cc__req_t *req);

/* Progress everything once; *done = 1 when req finished (see req->status). */
cc_status_t cc__net_test(cc__net_t *net, cc__req_t *req, int *done);
/* Progress everything once if some request is pending (no waiting); how many things moved. */
int cc__net_poll(cc__net_t *net);

/*
 * Progress until all n requests finish, the deadline (CLOCK_MONOTONIC ns,
 * UINT64_MAX = none) passes, or the net is aborted. Returns CC_OK, or the
 * first failed request's status, CC_ERR_TIMEOUT, or the abort reason.
 * On CC_ERR_TIMEOUT the requests are still pending (see cc__net_cancel).
 */
cc_status_t cc__net_wait(cc__net_t *net, cc__req_t *const *reqs, int n, uint64_t deadline_ns);

/*
 * Withdraw a request the wire has not touched yet (a receive not matched, a
 * send not started): it finishes with `status` and its buffer is free again.
 * Returns CC_OK when withdrawn (or already finished), CC_ERR_BUSY when some
 * of its bytes are in flight (wait for it, or abort the net), or
 * CC_ERR_INVALID_ARG. (Added by the transport; the blocking calls below use
 * it when their deadline passes.)
 */
cc_status_t cc__net_cancel(cc__net_t *net, cc__req_t *req, cc_status_t status);

/* Blocking conveniences over isend/irecv/wait. At the deadline they withdraw
 * their requests; one already in flight makes them abort the net
 * (CC_ERR_TIMEOUT), so no buffer is used after they return. */
cc_status_t cc__net_send(cc__net_t *net, int peer, uint32_t tag, const void *buf, size_t len,
                         uint64_t deadline_ns);
cc_status_t cc__net_recv(cc__net_t *net, int peer, uint32_t tag, void *buf, size_t len,
                         uint64_t deadline_ns);
/* Send to one peer and receive from another at once (rings, exchanges). */
cc_status_t cc__net_sendrecv(cc__net_t *net, int to, const void *sbuf, size_t slen, int from,
                             void *rbuf, size_t rlen, uint32_t tag, uint64_t deadline_ns);

/* "shm" or "tcp": the transport used with `peer` ("self" for this rank). */
const char *cc__net_transport(const cc__net_t *net, int peer);
/* 1 if every peer is reached over shared memory (all ranks on one host). */
int cc__net_all_shm(const cc__net_t *net);
/* The pid of a peer on the same host, or 0 when it is not. */
int cc__net_peer_pid(const cc__net_t *net, int peer);

/*
 * The peer this rank was waiting for when a wait last ended in CC_ERR_TIMEOUT or
 * CC_ERR_PEER_LOST (net rank = comm rank), or -1. Set on those failures only, which break
 * the communicator, so it never describes an op after the one that failed. Owner thread.
 * cc__net_note_stuck lets the shm algorithms, which wait outside the net, record theirs.
 */
int cc__net_stuck_peer(const cc__net_t *net);
void cc__net_note_stuck(cc__net_t *net, int peer);

#endif /* CC_TRANSPORT_NET_H */
