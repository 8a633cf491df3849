/*
 * tcp_msg.c - frames over the TCP connections: sending, receiving, sleeping.
 *
 * Sends to a peer go out in order; the head's header and payload are written
 * with one sendmsg() per piece of at most CCOMM_TCP_CHUNK_SIZE, straight
 * from the caller's buffer. A would-block arms EPOLLOUT until the queue
 * drains.
 *
 * Receiving reads into a 64 KiB staging buffer (many small frames per
 * recv()), except that a large payload arriving for a matched receive is
 * read straight into the receive's buffer. A frame nobody waits for is held
 * aside in a buffer of its size (the rare path); a frame whose receive has
 * another length is read and dropped, so the stream stays in step.
 *
 * Held copies are bounded per peer: once CC__TCP_HELD_MAX bytes of a peer's
 * messages wait unmatched, its socket is left unread (and out of the sleep's
 * EPOLLIN) until a receive is posted for it or the copies are taken, unless
 * a rendezvous with it is under way or it hung up. A sender that runs ahead
 * (a broadcast's root in a loop) then waits on its own socket, as a blocking
 * send may (MPI_Send's rule), instead of its receiver copying every message
 * it has not asked for yet into fresh memory: measured 2026-12-03, a 2-rank
 * TCP broadcast of 4-64 KiB, 20000 calls a size, let the reader hold up to
 * 340 MiB (perf stat: 87688 page faults in one launch).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "base/log.h"
#include "transport/tcp.h"

static const char *loss_cause(int err)
{
    return err == ECONNRESET || err == EPIPE ? "reset the connection" : "broke the connection";
}

/* ---- sending ----------------------------------------------------------------------------- */

/* The header of a verdict's frame, and of a queued request's. */
static struct cc__tcp_frame verdict_frame(const struct cc__verdict *v)
{
    return (struct cc__tcp_frame){CC__TCP_FRAME_MAGIC, CC__TCP_CTS, v->verdict, 0, v->cookie};
}

static struct cc__tcp_frame req_frame(const cc__req_t *req)
{
    static const uint16_t type[] = {CC__TCP_MSG, CC__TCP_RTS, CC__TCP_DATA};
    return (struct cc__tcp_frame){CC__TCP_FRAME_MAGIC, type[req->priv[1]], req->tag, req->len,
                                  req->priv[0]};
}

/* The next frame to put on the wire: a verdict first (a sender waits on it), else sq_head. */
static int next_frame(struct cc__tcp_peer *tp)
{
    if (tp->cts.n) {
        tp->tx_hdr = verdict_frame(&tp->cts.v[0]);
        tp->tx_ctrl = 1;
        return 1;
    }
    if (!tp->sq_head) return 0;
    tp->tx_hdr = req_frame(tp->sq_head);
    tp->tx_ctrl = 0;
    return 1;
}

/* The frame on the wire is out: retire what it carried. */
static void frame_sent(struct cc__net *net, struct cc__tcp_peer *tp)
{
    tp->tx_off = 0;
    if (tp->tx_ctrl) {
        cc__verdicts_pop(&tp->cts, 1);
        return;
    }
    cc__req_t *req = tp->sq_head;
    tp->sq_head = req->next;
    if (!tp->sq_head) tp->sq_tail = NULL;
    if (tp->tx_hdr.type == CC__TCP_RTS) {
        req->next = tp->rndv_tx; /* pending until its receiver says GO or DROP */
        tp->rndv_tx = req;
    } else {
        cc__req_finish(net, req, CC_OK);
    }
}

static int has_body(const struct cc__tcp_frame *h)
{
    return h->type == CC__TCP_MSG || h->type == CC__TCP_DATA;
}

/*
 * One sendmsg() carries the frame on the wire and as many of the frames behind it (in
 * next_frame's order: the verdicts, then the queue) as fit in CC__TCP_TX_FRAMES and one
 * chunk of payload: a burst of rendezvous requests or answers, or of small messages, leaves
 * in one system call instead of one each (strace of a 2-rank TCP allgather of 4 MiB: 8
 * RTS and 8 CTS of 24 bytes a rank and op, each its own sendmsg before).
 */
#define CC__TCP_TX_FRAMES 16

struct tx_batch {
    struct iovec iov[2 * CC__TCP_TX_FRAMES];
    struct cc__tcp_frame hdr[CC__TCP_TX_FRAMES];
    int ctrl[CC__TCP_TX_FRAMES];
    int nf, niov;
    size_t bytes; /* of payload: a chunk bounds those, as a lone frame's */
};

/* Add a frame whose first `off` bytes are out already; 0 when the batch is full. */
static int batch_add(struct tx_batch *b, const struct cc__tcp_frame *h, int ctrl, const void *buf,
                     size_t off, uint64_t chunk)
{
    const size_t hl = sizeof(*h);
    if (b->nf == CC__TCP_TX_FRAMES || (b->nf && b->bytes >= chunk)) return 0;
    int f = b->nf++;
    b->hdr[f] = *h;
    b->ctrl[f] = ctrl;
    if (off < hl) b->iov[b->niov++] = (struct iovec){(char *)&b->hdr[f] + off, hl - off};
    size_t plen = has_body(h) ? h->len : 0, poff = off > hl ? off - hl : 0;
    size_t left = plen - poff, room = chunk > b->bytes ? chunk - b->bytes : 0;
    if (left && room) {
        size_t k = left < room ? left : room;
        b->iov[b->niov++] = (struct iovec){(char *)buf + poff, k};
        b->bytes += k;
    }
    return 1;
}

/* Gather the frame on the wire (tx_hdr, tx_off) and those behind it. */
static void batch_build(struct tx_batch *b, struct cc__tcp_peer *tp, uint64_t chunk)
{
    b->nf = b->niov = 0;
    b->bytes = 0;
    batch_add(b, &tp->tx_hdr, tp->tx_ctrl, tp->tx_ctrl ? NULL : tp->sq_head->buf, tp->tx_off,
              chunk);
    for (int i = tp->tx_ctrl; i < tp->cts.n; i++) {
        struct cc__tcp_frame h = verdict_frame(&tp->cts.v[i]);
        if (!batch_add(b, &h, 1, NULL, 0, chunk)) return;
    }
    for (cc__req_t *r = tp->tx_ctrl ? tp->sq_head : tp->sq_head->next; r; r = r->next) {
        struct cc__tcp_frame h = req_frame(r);
        if (!batch_add(b, &h, 0, r->buf, 0, chunk)) return;
    }
}

/* w bytes of the batch went out: retire the frames they completed, note the partial one. */
static void batch_sent(struct cc__net *net, struct cc__tcp_peer *tp, const struct tx_batch *b,
                       size_t w)
{
    const size_t hl = sizeof(struct cc__tcp_frame);
    for (int f = 0; f < b->nf; f++) {
        tp->tx_hdr = b->hdr[f];
        tp->tx_ctrl = b->ctrl[f];
        int body = has_body(&tp->tx_hdr);
        size_t total = hl + (body ? tp->tx_hdr.len : 0);
        size_t take = total - tp->tx_off < w ? total - tp->tx_off : w;
        tp->tx_off += take;
        w -= take;
        if (body) tp->sq_head->done = tp->tx_off > hl ? tp->tx_off - hl : 0;
        if (tp->tx_off < total) return; /* partly out: the wire's frame from here on */
        frame_sent(net, tp);            /* tx_off = 0 for the next */
        if (!w) return;
    }
}

/* Write frames until the socket would block. */
int cc__tcp_tx(struct cc__net *net, struct cc__tcp_peer *tp)
{
    int moved = 0;
    uint64_t chunk = cc__tcp(net)->chunk;
    struct tx_batch b;
    while (tp->tx_off > 0 || next_frame(tp)) {
        batch_build(&b, tp, chunk);
        struct msghdr mh = {.msg_iov = b.iov, .msg_iovlen = (size_t)b.niov};
        ssize_t w = sendmsg(tp->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            cc__tcp_want_out(net, tp, 1);
            return moved;
        }
        if (w < 0) {
            cc__tcp_drop(net, tp, loss_cause(errno), NULL);
            return moved + 1;
        }
        moved = 1;
        batch_sent(net, tp, &b, (size_t)w);
    }
    cc__tcp_want_out(net, tp, 0);
    return moved;
}

cc_status_t cc__tcp_isend(struct cc__net *net, struct cc__peer *p, cc__req_t *req)
{
    struct cc__tcp_peer *tp = p->priv;
    uint64_t rndv = cc__tcp(net)->rndv;
    if (rndv && req->len >= rndv) {
        req->priv[0] = ++tp->next_cookie;
        req->priv[1] = CC__TCP_MODE_RTS;
    }
    int idle = tp->sq_head == NULL && tp->tx_off == 0;
    req->next = NULL;
    if (tp->sq_tail)
        tp->sq_tail->next = req;
    else
        tp->sq_head = req;
    tp->sq_tail = req;
    /* Nothing ahead of it: try now (small messages usually leave in this call). */
    if (idle) cc__tcp_tx(net, tp);
    return CC_OK;
}

/* ---- receiving --------------------------------------------------------------------------- */

/* recv() into buf: bytes read, 0 when it would block, -1 when the peer is gone. */
static ssize_t rd(struct cc__net *net, struct cc__tcp_peer *tp, void *buf, size_t len)
{
    if (tp->drained) return 0; /* saves the recv() that would say EAGAIN */
    for (;;) {
        ssize_t n = recv(tp->fd, buf, len, MSG_DONTWAIT);
        tp->drained = n > 0 && (size_t)n < len;
        if (n > 0) return n;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        cc__tcp_drop(net, tp,
                     n == 0 ? "closed the connection (it exited, was killed or aborted)"
                            : loss_cause(errno),
                     NULL);
        return -1;
    }
}

/* Top up the staging buffer; as rd(). */
static ssize_t fill(struct cc__net *net, struct cc__tcp_peer *tp)
{
    /* Compact only when the tail is nearly used up: a header never straddles the end. */
    if (tp->st_beg == tp->st_end) tp->st_beg = tp->st_end = 0;
    if (tp->st_end == CC__TCP_STAGE || (tp->st_beg && CC__TCP_STAGE - tp->st_end < 64)) {
        memmove(tp->stage, tp->stage + tp->st_beg, tp->st_end - tp->st_beg);
        tp->st_end -= tp->st_beg;
        tp->st_beg = 0;
    }
    /* A receive that said GO awaits its DATA: its header is in the next bytes or soon, and
     * what a full-sized read brings behind that header would be copied out of the stage
     * again; a short read leaves the payload to the direct read. */
    size_t want = CC__TCP_STAGE - tp->st_end;
    if (tp->rndv_rx && want > CC__TCP_DATA_PEEK) want = CC__TCP_DATA_PEEK;
    ssize_t n = rd(net, tp, tp->stage + tp->st_end, want);
    if (n > 0) tp->st_end += (size_t)n;
    return n;
}

/* Where the payload goes: the matched receive, the held copy, or nowhere. */
static char *rx_target(struct cc__tcp_peer *tp)
{
    size_t off = tp->rx_len - tp->rx_left;
    if (tp->rx_req) return (char *)tp->rx_req->buf + off;
    if (tp->rx_msg) return tp->rx_msg->data + off;
    return NULL;
}

static void rx_account(struct cc__tcp_peer *tp, size_t n)
{
    tp->rx_left -= n;
    if (tp->rx_req) tp->rx_req->done = tp->rx_len - tp->rx_left;
    if (tp->rx_msg) tp->rx_msg->got = tp->rx_len - tp->rx_left;
}

/* A frame is complete: its receive ends, or its held copy is whole (and delivered if bound). */
static void end_frame(struct cc__net *net, struct cc__tcp_peer *tp)
{
    tp->in_body = 0;
    if (tp->rx_req)
        cc__req_finish(net, tp->rx_req, CC_OK);
    else if (tp->rx_msg)
        cc__net_msg_done(net, tp->p, tp->rx_msg);
    tp->rx_req = NULL;
    tp->rx_msg = NULL;
}

void cc__tcp_start_body(struct cc__net *net, struct cc__tcp_peer *tp, uint64_t len)
{
    tp->rx_len = tp->rx_left = len;
    tp->in_body = 1;
    if (len == 0) end_frame(net, tp);
}

/* A MSG header: its payload goes to the oldest matching receive, or is held aside. */
static int start_msg(struct cc__net *net, struct cc__tcp_peer *tp, const struct cc__tcp_frame *h)
{
    cc__req_t *req = cc__net_match(net, tp->p, h->tag);
    if (req && req->len == h->len) {
        tp->rx_req = req;
    } else if (req) {
        cc__net_mismatch(net, req, h->len); /* the payload is read and dropped */
    } else if (!(tp->rx_msg = cc__net_hold(net, tp->p, h->tag, h->len, CC__MSG_BUFFERED))) {
        cc__tcp_drop(net, tp, "sent a message this rank had no memory to hold", NULL);
        return -1;
    }
    cc__tcp_start_body(net, tp, h->len);
    return 0;
}

/* A header arrived; 0, or -1 when the peer was dropped. */
static int start_frame(struct cc__net *net, struct cc__tcp_peer *tp)
{
    struct cc__tcp_frame h;
    memcpy(&h, tp->stage + tp->st_beg, sizeof(h));
    tp->st_beg += sizeof(h);
    if (h.magic != CC__TCP_FRAME_MAGIC || h.type < CC__TCP_MSG || h.type > CC__TCP_DATA ||
        h.len > (1ull << 48)) {
        cc_log_error(CC_SUBSYS_TCP,
                     "tcp: malformed frame from rank %d (%s): magic 0x%x type %u, %llu bytes",
                     tp->p->rank, tp->where, h.magic, h.type, (unsigned long long)h.len);
        cc__tcp_drop(net, tp, "sent a malformed frame", NULL);
        return -1;
    }
    return h.type == CC__TCP_MSG ? start_msg(net, tp, &h) : cc__tcp_rndv_frame(net, tp, &h);
}

/* Payload bytes: staged ones first, large remainders straight into place. */
static int rx_body(struct cc__net *net, struct cc__tcp_peer *tp)
{
    char *dst = rx_target(tp);
    size_t staged = tp->st_end - tp->st_beg;
    if (staged) {
        size_t k = staged < tp->rx_left ? staged : tp->rx_left;
        if (dst) memcpy(dst, tp->stage + tp->st_beg, k);
        tp->st_beg += k;
        rx_account(tp, k);
    } else if (dst && tp->rx_left >= CC__TCP_STAGE / 2) {
        uint64_t chunk = cc__tcp(net)->chunk;
        ssize_t n = rd(net, tp, dst, tp->rx_left < chunk ? tp->rx_left : chunk);
        if (n <= 0) return (int)n;
        rx_account(tp, (size_t)n);
    } else {
        ssize_t n = fill(net, tp);
        if (n <= 0) return (int)n;
    }
    if (tp->rx_left == 0) end_frame(net, tp);
    return 1;
}

/* Whether tp's socket is read now (the top of this file). */
static int may_read(const struct cc__tcp_peer *tp)
{
    const struct cc__peer *p = tp->p;
    return p->held_bytes < CC__TCP_HELD_MAX || p->rq_head || tp->in_body || tp->rndv_tx ||
           tp->rndv_rx || tp->rx_hup;
}

/* Read what the socket has (bounded, so one busy peer does not starve others). */
static int rx(struct cc__net *net, struct cc__tcp_peer *tp)
{
    int moved = 0;
    tp->drained = 0;
    for (int round = 0; round < 64 && !tp->p->lost; round++) {
        int r;
        /* Checked before every frame: staged frames not yet taken stay staged. */
        if (!tp->in_body && !may_read(tp)) {
            cc__tcp_pause_rx(net, tp, 1);
            return moved;
        }
        if (tp->in_body) {
            r = rx_body(net, tp);
        } else if (tp->st_end - tp->st_beg >= sizeof(struct cc__tcp_frame)) {
            r = start_frame(net, tp) == 0 ? 1 : -1;
        } else {
            r = (int)fill(net, tp);
        }
        if (r <= 0) return moved + (r < 0);
        moved = 1;
    }
    return moved;
}

/*
 * With few peers, the sockets that requests wait on are read directly: when the bytes are
 * there (a lockstep exchange's usual case) that is one recv() per message instead of an
 * epoll_wait() and a recv() (strace -c of a 2-rank 8-byte allreduce: 3.1 syscalls per op
 * before, docs/transports.md). Peers nothing waits on (a message not yet received, an EOF)
 * are left to epoll: every CC__TCP_POLL_EVERY-th pass that moved nothing, and every sleep.
 */
#define CC__TCP_DIRECT_PEERS 4
#define CC__TCP_POLL_EVERY   16u

static int rx_direct(struct cc__net *net, struct cc__tcp_state *ts)
{
    int moved = 0;
    for (int i = 0; i < ts->ntp; i++) {
        struct cc__tcp_peer *tp = &ts->tp[i];
        if (!tp->p->lost && tp->p->pending) moved += rx(net, tp);
    }
    return moved;
}

/* Readable sockets from a sleep's events, direct reads, or a non-blocking epoll_wait;
 * writes are tried directly. */
int cc__tcp_progress(struct cc__net *net)
{
    struct cc__tcp_state *ts = cc__tcp(net);
    int moved = 0;
    /* A sleep that just returned already said which sockets are ready. */
    int n = ts->nev;
    ts->nev = 0;
    if (!n && ts->ntp <= CC__TCP_DIRECT_PEERS) {
        moved = rx_direct(net, ts);
        if (moved || ++ts->idle_polls % CC__TCP_POLL_EVERY) n = -1;
    }
    if (!n) n = epoll_wait(ts->epfd, ts->ev, 64, 0);
    for (int i = 0; i < n; i++) {
        struct cc__tcp_peer *tp = ts->ev[i].data.ptr;
        uint32_t e = ts->ev[i].events;
        if (tp && (e & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) tp->rx_hup = 1;
        if (tp && !tp->p->lost && (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
            moved += rx(net, tp);
    }
    for (int i = 0; i < ts->ntp; i++) {
        struct cc__tcp_peer *tp = &ts->tp[i];
        if (tp->p->lost) continue;
        /* A paused socket whose receive was posted, or whose copies were taken. */
        if (tp->rx_paused && may_read(tp)) {
            cc__tcp_pause_rx(net, tp, 0);
            moved += rx(net, tp);
        }
        /* Staged bytes left by rx()'s bound: the socket may no longer be readable. */
        if (tp->st_end - tp->st_beg >= (tp->in_body ? 1 : sizeof(struct cc__tcp_frame)))
            moved += rx(net, tp);
        if (tp->sq_head || tp->cts.n) moved += cc__tcp_tx(net, tp);
    }
    return moved;
}

void cc__tcp_sleep(struct cc__net *net, uint64_t timeout_ns)
{
    struct cc__tcp_state *st = cc__tcp(net);
    struct timespec ts = {.tv_sec = (time_t)(timeout_ns / 1000000000ull),
                          .tv_nsec = (long)(timeout_ns % 1000000000ull)};
    int n = epoll_pwait2(st->epfd, st->ev, 64, &ts, NULL);
    st->nev = n > 0 ? n : 0; /* progress takes them from here, without a second epoll_wait */
}

int cc__tcp_cancel(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc_status_t st)
{
    struct cc__tcp_peer *tp = p->priv;
    if (tp->rx_req == req) {
        tp->rx_req = NULL; /* the rest of the frame is read and dropped */
    } else if (tp->rx_msg && tp->rx_msg->bound == req) {
        tp->rx_msg->bound = NULL;
        tp->rx_msg->discard = 1;
    } else {
        cc__req_t *prev = NULL, *r = tp->sq_head;
        for (; r && r != req; prev = r, r = r->next) {
        }
        /* Bytes of the head may be on the wire already, and a DATA was promised: too late.
         * (Announced rendezvous, on rndv_tx and rndv_rx, cannot be withdrawn either.) */
        int on_wire = r == tp->sq_head && tp->tx_off > 0 && !tp->tx_ctrl;
        if (!r || on_wire || r->priv[1] == CC__TCP_MODE_DATA) return 0;
        if (prev)
            prev->next = r->next;
        else
            tp->sq_head = r->next;
        if (tp->sq_tail == r) tp->sq_tail = prev;
    }
    cc__req_finish(net, req, st);
    return 1;
}

/* The stream is unusable from here: drop every request and the frame in progress. */
void cc__tcp_fail(struct cc__net *net, struct cc__peer *p, cc_status_t st)
{
    struct cc__tcp_peer *tp = p->priv;
    cc__req_t **lists[] = {&tp->sq_head, &tp->rndv_tx, &tp->rndv_rx};
    for (int i = 0; i < 3; i++) {
        while (*lists[i]) {
            cc__req_t *r = *lists[i];
            *lists[i] = r->next;
            cc__req_finish(net, r, st);
        }
    }
    tp->sq_tail = NULL;
    tp->tx_off = 0;
    tp->cts.n = 0;
    if (tp->rx_req) cc__req_finish(net, tp->rx_req, st);
    cc__msg_t *m = tp->rx_msg;
    if (m && m->bound) cc__req_finish(net, m->bound, st);
    /* Unbound and not discarded, it is still on the held queue, which net.c empties. */
    if (m && (m->bound || m->discard)) cc__msg_free(net, m);
    tp->rx_req = NULL;
    tp->rx_msg = NULL;
    tp->in_body = 0;
}
