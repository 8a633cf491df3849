/*
 * window_tcp.h - RMA windows over TCP (internal; the public contract is
 * ccomm/window.h): a target-side progress path, so that the target calls
 * nothing while a put, get or signal lands.
 *
 * Sockets: one connection per ordered pair, R(a->b), made by a to b's
 * window listener at creation. Each end of it has one writer and one
 * reader, so no lock is needed:
 *   - a's end: a's op caller writes requests (PUT, GET, SIGNAL, FLUSH, BYE)
 *     and reads their replies (GET's data, FLUSH's ack) itself, in the op;
 *   - b's end: b's progress thread (one per window) reads the requests,
 *     applies them in order and writes the replies.
 * TCP keeps the order of one connection and the thread applies a
 * connection's requests in order, so a SIGNAL is counted after every
 * earlier PUT of the same origin is in the target's memory, and a FLUSH is
 * answered after everything before it was applied (remote completion).
 *
 * A request header is untrusted input at the target: cc__wtcp_check
 * refuses any header whose range does not fit the target's own registered
 * size (written so that it cannot overflow), and a refused header ends
 * that origin's connection (logged naming the origin); nothing is written.
 */
#ifndef CC_NATIVE_WINDOW_TCP_H
#define CC_NATIVE_WINDOW_TCP_H

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ccomm/status.h"

#define CC__WTCP_MAGIC       0x70637477u           /* "wtcp" */
#define CC__WTCP_HELLO_MAGIC 0x6f6c6c6548505457ull /* "WTPHello" */

/* Requests (origin -> target) and replies (target -> origin) on R(origin->target). */
enum {
    CC__WTCP_PUT = 1,       /* off, bytes; bytes of payload follow */
    CC__WTCP_GET,           /* off, bytes: answered by GET_DATA */
    CC__WTCP_SIGNAL,        /* add 1 to the target's counter for the origin */
    CC__WTCP_FLUSH,         /* answered by FLUSH_ACK once everything before it was applied */
    CC__WTCP_BYE,           /* destroy: the origin sends nothing more */
    CC__WTCP_GET_DATA = 16, /* bytes of the target's region follow */
    CC__WTCP_FLUSH_ACK,
};

struct cc__wtcp_hdr {
    uint32_t magic; /* CC__WTCP_MAGIC */
    uint16_t type;  /* CC__WTCP_* */
    uint16_t pad;
    uint32_t win;   /* the window's id (same on every rank) */
    uint32_t seq;   /* requests of this origin so far, for the log */
    uint64_t off;   /* PUT, GET: offset in the target's region */
    uint64_t bytes; /* PUT, GET, GET_DATA: payload bytes */
};

/* The first bytes on a new connection: who calls and the proof it saw the exchange. */
struct cc__wtcp_hello {
    uint64_t magic; /* CC__WTCP_HELLO_MAGIC */
    uint64_t comm_id;
    uint64_t token; /* the listener's random token, from the window's exchange */
    uint32_t win;
    int32_t from, to;
    int32_t pad;
};

/* How a request stream ended (cc__wtcp_rx.ended): 0 while open. */
enum { CC__WTCP_OPEN = 0, CC__WTCP_BYE_SEEN = 1 }; /* else a cc_status_t (< 0) */

/* One origin's request stream at the target; touched by the progress thread only,
 * except `ended`, which the target's waiters read. */
struct cc__wtcp_rx {
    int fd;                     /* this rank's end of R(origin->me); -1: none */
    int origin;                 /* its rank */
    unsigned win;               /* the window's id */
    char *base;                 /* this rank's region */
    uint64_t size;              /* its registered bytes: the bound of every request */
    _Atomic uint64_t *sig;      /* signals counted from origin */
    _Atomic uint32_t *bell;     /* the waiters' futex word, */
    _Atomic uint32_t *sleeping; /* ... and whether one sleeps on it */
    int stop_fd;                /* readable: stop writing a reply (destroy) */
    _Atomic int ended;          /* CC__WTCP_OPEN, BYE_SEEN, or the error that ended it */
    struct cc__wtcp_hdr h;      /* the request being read */
    size_t hgot;                /* its bytes read so far */
    uint64_t left;              /* PUT: payload bytes still to receive */
    uint32_t nreq;              /* requests applied */
};

/*
 * Is h a request this target may apply (for window win, region of size bytes)? CC_OK, or
 * CC_ERR_PROTOCOL with the reason in why. Never touches memory.
 */
cc_status_t cc__wtcp_check(const struct cc__wtcp_hdr *h, unsigned win, uint64_t size, char *why,
                           size_t len);

/*
 * Read and apply what rx->fd has (non-blocking), requests in order, payloads straight
 * into the region. Returns 1 once the stream ended (rx->ended says how; a bad header or a
 * lost origin is logged naming it), 0 to go on polling.
 */
int cc__wtcp_rx_step(struct cc__wtcp_rx *rx);

/* A window's TCP side: the sockets by rank, the received signals, the progress thread. */
struct cc__wtcp {
    int rank, n;
    uint64_t comm_id;
    const char *comm_name;
    int *tx;                   /* this rank's end of R(me->p), by rank; -1 for me */
    cc_status_t *tx_err;       /* a failure that broke R(me->p): later ops to p get it */
    uint32_t *tx_seq;          /* requests sent to p */
    struct cc__wtcp_rx *rx;    /* by origin rank */
    _Atomic uint64_t *sig;     /* by sender */
    _Atomic uint32_t bell;     /* bumped by the thread when it counts a signal or a loss */
    _Atomic uint32_t sleeping; /* a waiter sleeps on bell */
    int stop_fd;               /* eventfd: wakes the thread to stop */
    _Atomic int stopping;      /* destroy: the thread ends once every stream ended, */
    _Atomic uint64_t stop_at;  /* ... or at this time (UINT64_MAX: none) */
    struct pollfd *pf;         /* the thread's poll set */
    int *pf_rank;
    _Atomic uint64_t sleeps;   /* blocking polls the thread entered (tests: one per put+signal) */
    pthread_t thread;
    int started;
};

/*
 * Socket I/O with a deadline (CLOCK_MONOTONIC ns, UINT64_MAX: none) on a non-blocking fd:
 * abort (when not NULL) ends a wait with its value once set, stop_fd (when >= 0) with
 * CC_ERR_ABORTED once readable. A closed or reset connection is CC_ERR_PEER_LOST (*err: the
 * errno, 0 for EOF). write consumes iov; with more (MSG_MORE) the kernel may hold the last
 * partial segment until the next write without it.
 */
cc_status_t cc__wtcp_await(int fd, short events, uint64_t deadline, _Atomic int *abort,
                           int stop_fd);
cc_status_t cc__wtcp_write(int fd, struct iovec *iov, int niov, int more, uint64_t deadline,
                           _Atomic int *abort, int stop_fd, int *err);
cc_status_t cc__wtcp_read(int fd, void *buf, size_t len, uint64_t deadline, _Atomic int *abort,
                          int *err);

struct cc_window;

/* Creation (collective, window.c): open this rank's listener on the address the comm's TCP
 * transport uses; its port and a fresh token go into the window's exchange. */
cc_status_t cc__wtcp_listen(struct cc_window *w, int *lfd, uint16_t *port, uint64_t *token);
/* After the exchange: connect to every peer, accept every peer, start the thread. lfd is
 * closed whatever happens. On error everything is released (w->tcp stays NULL). */
cc_status_t cc__wtcp_start(struct cc_window *w, int lfd, uint64_t token, const uint16_t *ports,
                           const uint64_t *tokens, uint64_t deadline_ns);
/* Destroy, after the window's barrier: BYE to every peer, wait (to the deadline) for every
 * peer's BYE, so nothing lands in this rank's memory afterwards; then stop and close. */
cc_status_t cc__wtcp_stop(struct cc_window *w, uint64_t deadline_ns);
/* Error paths: stop the thread now and close everything (no bye). */
void cc__wtcp_abandon(struct cc_window *w);

#endif /* CC_NATIVE_WINDOW_TCP_H */
