/*
 * window_tcp_ops.c - the window ops over TCP (window_tcp.h): at the origin,
 * put/get/signal/flush as requests written by the op's caller on its end of
 * R(me->peer) (and get's and flush's replies read back there); at the
 * target, the request parser the progress thread runs (cc__wtcp_rx_step),
 * and wait_signal on the counters that thread keeps. No lock and no
 * allocation per op: each socket end has a single writer and a single
 * reader by construction. The door (lib/core/window_api.c) checked peer,
 * bounds and the window before an op gets here; the target checks again,
 * against its own size, because the header comes off the wire.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "native/window.h"
#include "native/window_tcp.h"
#include "transport/transport.h"

#define SLICE_NS 50000000ull /* a blocked write or read rechecks abort this often */

cc_status_t cc__wtcp_await(int fd, short events, uint64_t deadline, _Atomic int *abort, int stop_fd)
{
    for (;;) {
        int ab = abort ? atomic_load_explicit(abort, memory_order_acquire) : 0;
        if (ab) return (cc_status_t)ab;
        uint64_t now = cc__now_ns();
        if (now >= deadline) return CC_ERR_TIMEOUT;
        uint64_t wait = deadline - now < SLICE_NS ? deadline - now : SLICE_NS;
        struct pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
        int r = poll(p, stop_fd >= 0 ? 2 : 1, (int)(wait / 1000000u) + 1);
        if (r > 0 && stop_fd >= 0 && p[1].revents) return CC_ERR_ABORTED;
        if (r > 0) return CC_OK; /* ready, or an error the next call reports */
    }
}

cc_status_t cc__wtcp_write(int fd, struct iovec *iov, int niov, int more, uint64_t deadline,
                           _Atomic int *abort, int stop_fd, int *err)
{
    *err = 0;
    while (niov > 0) {
        if (iov->iov_len == 0) {
            iov++, niov--;
            continue;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
        ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
        if (k > 0) {
            for (size_t left = (size_t)k; left;) {
                size_t d = left < iov->iov_len ? left : iov->iov_len;
                iov->iov_base = (char *)iov->iov_base + d;
                iov->iov_len -= d;
                left -= d;
                if (!iov->iov_len) iov++, niov--;
            }
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            *err = errno;
            return CC_ERR_PEER_LOST;
        }
        CC_CHECK(cc__wtcp_await(fd, POLLOUT, deadline, abort, stop_fd));
    }
    return CC_OK;
}

cc_status_t cc__wtcp_read(int fd, void *buf, size_t len, uint64_t deadline, _Atomic int *abort,
                          int *err)
{
    size_t got = 0;
    *err = 0;
    while (got < len) {
        ssize_t k = recv(fd, (char *)buf + got, len - got, 0);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            *err = k == 0 ? 0 : errno;
            return CC_ERR_PEER_LOST;
        }
        CC_CHECK(cc__wtcp_await(fd, POLLIN, deadline, abort, -1));
    }
    return CC_OK;
}

/* ---- target: the request parser ------------------------------------------------------- */

cc_status_t cc__wtcp_check(const struct cc__wtcp_hdr *h, unsigned win, uint64_t size, char *why,
                           size_t len)
{
    why[0] = '\0';
    if (h->magic != CC__WTCP_MAGIC)
        snprintf(why, len, "magic 0x%08" PRIx32 " is not a window request's", h->magic);
    else if (h->win != win)
        snprintf(why, len, "it names window %" PRIu32 " on the connection of window %u", h->win,
                 win);
    else if (h->type == CC__WTCP_PUT || h->type == CC__WTCP_GET) {
        /* off + bytes <= size, written so that it cannot overflow. */
        if (h->off > size || h->bytes > size - h->off)
            snprintf(why, len,
                     "offset %" PRIu64 " + bytes %" PRIu64 " is beyond the %" PRIu64
                     " bytes registered here",
                     h->off, h->bytes, size);
    } else if (h->type == CC__WTCP_SIGNAL || h->type == CC__WTCP_FLUSH || h->type == CC__WTCP_BYE) {
        if (h->bytes || h->off)
            snprintf(why, len, "request type %u carries offset %" PRIu64 " and bytes %" PRIu64,
                     h->type, h->off, h->bytes);
    } else {
        snprintf(why, len, "request type %u is unknown", h->type);
    }
    return why[0] ? CC_ERR_PROTOCOL : CC_OK;
}

static void ring(struct cc__wtcp_rx *rx)
{
    cc__fence(); /* the news, then read `sleeping`: the waiter sees one or we see the flag */
    if (atomic_load_explicit(rx->sleeping, memory_order_relaxed)) {
        atomic_fetch_add(rx->bell, 1);
        cc__futex_wake(rx->bell);
    }
}

/* The stream ends: st is BYE_SEEN or why it broke (logged naming the origin). Returns 1. */
static int end(struct cc__wtcp_rx *rx, int st, const char *cause)
{
    if (st != CC__WTCP_BYE_SEEN) {
        cc_log_error(CC_SUBSYS_TCP, "window %u: requests from rank %d end after %" PRIu32 ": %s",
                     rx->win, rx->origin, rx->nreq, cause);
        shutdown(rx->fd, SHUT_RDWR); /* the origin's next op fails instead of waiting */
    }
    atomic_store_explicit(&rx->ended, st, memory_order_release);
    ring(rx);
    return 1;
}

/* A GET's or FLUSH's answer, on the same connection (this thread is its only writer). */
static int reply(struct cc__wtcp_rx *rx, uint16_t type, const void *data, uint64_t bytes)
{
    struct cc__wtcp_hdr a = {CC__WTCP_MAGIC, type, 0, rx->win, rx->h.seq, rx->h.off, bytes};
    struct iovec iov[2] = {{&a, sizeof(a)}, {(void *)(uintptr_t)data, (size_t)bytes}};
    int err;
    cc_status_t st = cc__wtcp_write(rx->fd, iov, 2, 0, UINT64_MAX, NULL, rx->stop_fd, &err);
    if (st == CC_OK) return 0;
    return end(rx, st, st == CC_ERR_ABORTED ? "the window is being destroyed" : strerror(err));
}

/* A whole header arrived: check it, then apply it (a PUT's payload follows). 1: ended. */
static int apply(struct cc__wtcp_rx *rx)
{
    char why[160];
    if (cc__wtcp_check(&rx->h, rx->win, rx->size, why, sizeof(why)) != CC_OK)
        return end(rx, CC_ERR_PROTOCOL, why);
    rx->hgot = 0;
    switch (rx->h.type) {
    case CC__WTCP_PUT:
        rx->left = rx->h.bytes;
        if (rx->left) rx->hgot = sizeof(rx->h); /* the payload comes next */
        break;
    case CC__WTCP_SIGNAL:
        /* Every earlier PUT on this connection was received into place before this header. */
        atomic_fetch_add_explicit(rx->sig, 1, memory_order_release);
        ring(rx);
        break;
    case CC__WTCP_GET:
        if (reply(rx, CC__WTCP_GET_DATA, rx->base + rx->h.off, rx->h.bytes)) return 1;
        break;
    case CC__WTCP_FLUSH:
        if (reply(rx, CC__WTCP_FLUSH_ACK, NULL, 0)) return 1;
        break;
    default: /* BYE */
        return end(rx, CC__WTCP_BYE_SEEN, "bye");
    }
    if (!rx->left) rx->nreq++;
    return 0;
}

int cc__wtcp_rx_step(struct cc__wtcp_rx *rx)
{
    /* Bounded, so that one busy origin cannot starve the others of the thread. */
    for (int round = 0; round < 64; round++) {
        ssize_t k;
        int body = rx->hgot == sizeof(rx->h) && rx->left;
        if (body) /* straight into the region: the header was checked against its size */
            k = recv(rx->fd, rx->base + rx->h.off + (rx->h.bytes - rx->left), rx->left, 0);
        else
            k = recv(rx->fd, (char *)&rx->h + rx->hgot, sizeof(rx->h) - rx->hgot, 0);
        if (k > 0 && body) {
            rx->left -= (uint64_t)k;
            if (!rx->left) rx->hgot = 0, rx->nreq++;
        } else if (k > 0) {
            rx->hgot += (size_t)k;
            if (rx->hgot == sizeof(rx->h) && apply(rx)) return 1;
        } else if (k < 0 && errno == EINTR) {
            continue;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        } else {
            return end(rx, CC_ERR_PEER_LOST,
                       k == 0 ? "it closed the connection without a bye (died or aborted)"
                              : strerror(errno));
        }
    }
    return 0;
}

/* ---- origin: the ops (select.c rows) --------------------------------------------------- */

/* R(me->peer) broke: later ops to peer get st at once; the target sees the stream end. */
static cc_status_t broke(cc__op_t *op, struct cc__wtcp *t, cc_status_t st, int err,
                         const char *what)
{
    int peer = op->info.peer;
    op->waited_peer = peer;
    if (!t->tx_err[peer]) shutdown(t->tx[peer], SHUT_RDWR); /* a half-sent frame never parses */
    t->tx_err[peer] = st;
    cc_log_error(CC_SUBSYS_TCP,
                 "%s: %s rank %d (window connection of communicator %s) failed: "
                 "%s%s%s",
                 cc_op_type_name(op->info.type), what, peer, t->comm_name, cc_status_name(st),
                 err ? ": " : "", err ? strerror(err) : "");
    return st;
}

/* Write a request (and a PUT's payload) to the peer of op. */
static cc_status_t request(cc__native_t *nc, cc__op_t *op, uint16_t type, const void *payload)
{
    const struct cc_window *w = op->extra;
    struct cc__wtcp *t = w->tcp;
    int peer = op->info.peer, err;
    if (t->tx_err[peer]) return broke(op, t, t->tx_err[peer], 0, "an earlier request to");
    int data = type == CC__WTCP_PUT || type == CC__WTCP_GET;
    struct cc__wtcp_hdr h = {
        CC__WTCP_MAGIC,           type, 0, w->id, ++t->tx_seq[peer], data ? op->info.out_count : 0,
        data ? op->info.bytes : 0};
    struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)(uintptr_t)payload, payload ? h.bytes : 0}};
    /* A PUT's tail may wait in the kernel for the next request (MSG_MORE): it becomes visible
     * by the signal, flush, get or bye that follows it anyway, and then travels in the same
     * segment, so the target's thread wakes once for a put and its signal, not twice. */
    cc_status_t st = cc__wtcp_write(t->tx[peer], iov, 2, type == CC__WTCP_PUT, op->deadline_ns,
                                    &nc->abort_reason, -1, &err);
    return st == CC_OK ? st : broke(op, t, st, err, "sending to");
}

/* Read the answer to the request just sent: its header, then bytes into dst. */
static cc_status_t answer(cc__native_t *nc, cc__op_t *op, uint16_t type, void *dst)
{
    const struct cc_window *w = op->extra;
    struct cc__wtcp *t = w->tcp;
    int peer = op->info.peer, err;
    struct cc__wtcp_hdr a;
    uint64_t want = type == CC__WTCP_GET_DATA ? op->info.bytes : 0;
    cc_status_t st =
        cc__wtcp_read(t->tx[peer], &a, sizeof(a), op->deadline_ns, &nc->abort_reason, &err);
    if (st != CC_OK) return broke(op, t, st, err, "the answer of");
    if (a.magic != CC__WTCP_MAGIC || a.type != type || a.win != w->id || a.seq != t->tx_seq[peer] ||
        a.bytes != want) {
        cc_log_error(CC_SUBSYS_TCP,
                     "%s: rank %d answered with type %u, window %" PRIu32 ", request %" PRIu32
                     ", %" PRIu64 " bytes (want %u, %u, %" PRIu32 ", %" PRIu64 ")",
                     cc_op_type_name(op->info.type), peer, a.type, a.win, a.seq, a.bytes, type,
                     w->id, t->tx_seq[peer], want);
        return broke(op, t, CC_ERR_PROTOCOL, 0, "the answer of");
    }
    st = want ? cc__wtcp_read(t->tx[peer], dst, (size_t)want, op->deadline_ns, &nc->abort_reason,
                              &err)
              : CC_OK;
    return st == CC_OK ? st : broke(op, t, st, err, "the data of");
}

/* Done when the payload is in the kernel's hands: the source buffer is free again. */
cc_status_t cc__win_put_tcp(cc__native_t *nc, cc__op_t *op)
{
    return op->info.bytes ? request(nc, op, CC__WTCP_PUT, (const void *)op->info.sendbuf) : CC_OK;
}

cc_status_t cc__win_get_tcp(cc__native_t *nc, cc__op_t *op)
{
    if (!op->info.bytes) return CC_OK;
    CC_CHECK(request(nc, op, CC__WTCP_GET, NULL));
    return answer(nc, op, CC__WTCP_GET_DATA, op->info.recvbuf);
}

cc_status_t cc__win_signal_tcp(cc__native_t *nc, cc__op_t *op)
{
    return request(nc, op, CC__WTCP_SIGNAL, NULL);
}

cc_status_t cc__win_flush_tcp(cc__native_t *nc, cc__op_t *op)
{
    CC_CHECK(request(nc, op, CC__WTCP_FLUSH, NULL));
    return answer(nc, op, CC__WTCP_FLUSH_ACK, NULL);
}

struct tw_ctx {
    _Atomic uint64_t *ctr;
    _Atomic int *ended;
    uint64_t count;
};

static int tw_ready(void *p)
{
    const struct tw_ctx *c = p;
    return atomic_load_explicit(c->ctr, memory_order_acquire) >= c->count ||
           atomic_load_explicit(c->ended, memory_order_acquire) != CC__WTCP_OPEN;
}

/* Deadline, abort, or the peer's stream ended (it died, aborted or sent garbage). */
static cc_status_t tw_stop(cc__native_t *nc, cc__op_t *op, const struct tw_ctx *c, uint64_t now)
{
    int ab = atomic_load_explicit(&nc->abort_reason, memory_order_acquire);
    int e = atomic_load_explicit(c->ended, memory_order_acquire);
    cc_status_t st = ab                       ? (cc_status_t)ab
                     : e != CC__WTCP_OPEN     ? (e < 0 ? (cc_status_t)e : CC_ERR_PEER_LOST)
                     : now >= op->deadline_ns ? CC_ERR_TIMEOUT
                                              : CC_OK;
    if (st == CC_OK) return st;
    op->waited_peer = op->info.peer;
    cc_log_error(CC_SUBSYS_TCP,
                 "window_wait_signal: rank %d waits for a signal from rank %d: %s "
                 "(count %" PRIu64 " of %" PRIu64 ")",
                 nc->rank, op->info.peer, cc_status_name(st), atomic_load(c->ctr), c->count);
    return st;
}

cc_status_t cc__win_wait_signal_tcp(cc__native_t *nc, cc__op_t *op)
{
    const struct cc_window *w = op->extra;
    struct cc__wtcp *t = w->tcp;
    int peer = op->info.peer;
    struct tw_ctx c = {&t->sig[peer], &t->rx[peer].ended, op->info.in_count};
    /* The sleep is bounded by the liveness period only to see an abort from another thread;
     * a signal or the peer's loss rings the bell. */
    uint64_t check_ns = (uint64_t)cc__cfg()->peer_check_ms * 1000000ull;
    uint64_t t0 = cc__now_ns(), spin = nc->net->tcp_spin_ns;
    for (;;) {
        if (atomic_load_explicit(c.ctr, memory_order_acquire) >= c.count) return CC_OK;
        uint64_t now = cc__now_ns();
        CC_CHECK(tw_stop(nc, op, &c, now));
        switch (cc__wait_stage(now - t0, spin, CC__YIELD_NS)) {
        case CC__WAIT_SPIN:
            cc__cpu_relax();
            break;
        case CC__WAIT_YIELD:
            sched_yield();
            break;
        default: {
            uint64_t until = op->deadline_ns - now < check_ns ? op->deadline_ns - now : check_ns;
            cc__bell_sleep(&t->bell, &t->sleeping, tw_ready, &c, until ? until : 1, 0);
        }
        }
    }
}
