/*
 * shm_ring.c - the record protocol over a pair's rings (layout: shm.h).
 *
 * Small messages (below CCOMM_SHM_CMA_THRESHOLD and a quarter of the ring)
 * travel whole in one EAGER record. Larger ones use a rendezvous: the sender
 * posts an RTS with its buffer's address; once a receive matches, the
 * receiver reads the payload with one process_vm_readv (CMA, single copy)
 * and answers FIN(DONE). When CMA is refused or turned off it answers
 * FIN(CTS) instead and the sender streams DATA records through the ring, a
 * quarter ring at a time, straight into the posted buffer. A large message
 * never needs a held copy on shm: an unmatched RTS is held as a promise.
 *
 * Memory ordering: the producer writes a record's body and header, then
 * stores seq with release; the consumer loads seq with acquire before it
 * reads the record, and releases tail when done with it. Sleep and wake use
 * seq_cst fences on both sides (store, fence, load) so that either the
 * sleeper sees the new record or the producer sees the sleeping flag.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "base/log.h"
#include "transport/shm.h"

enum { MODE_EAGER = 1, MODE_RTS, MODE_DATA }; /* a send's priv[1] */

static inline uint64_t rec_size(uint64_t body)
{
    return (CC__SHM_REC_HDR + body + CC__SHM_LINE - 1) & ~(uint64_t)(CC__SHM_LINE - 1);
}

/* Copy n bytes into / out of a ring at a position, wrapping at the end. */
static void ring_put(char *ring, uint64_t mask, uint64_t pos, const void *src, size_t n)
{
    uint64_t off = pos & mask, first = mask + 1 - off;
    if (n <= first) {
        memcpy(ring + off, src, n);
    } else {
        memcpy(ring + off, src, first);
        memcpy(ring, (const char *)src + first, n - first);
    }
}

static void ring_get(const char *ring, uint64_t mask, uint64_t pos, void *dst, size_t n)
{
    uint64_t off = pos & mask, first = mask + 1 - off;
    if (n <= first) {
        memcpy(dst, ring + off, n);
    } else {
        memcpy(dst, ring + off, first);
        memcpy((char *)dst + first, ring, n - first);
    }
}

/* ---- producer side ------------------------------------------------------------------- */

/* Free bytes in the outbound ring (re-reading the consumer's tail when short of need). */
static uint64_t tx_free(struct cc__shm_peer *sp, uint64_t need)
{
    /* The consumer's tail line is only read when the cached copy says "short": a
     * streaming producer then pulls that line once per batch, not once per record. */
    uint64_t size = sp->tx_mask + 1;
    if (size - (sp->head - sp->tail_seen) < need)
        sp->tail_seen = atomic_load_explicit(&sp->tx_ctl->tail, memory_order_acquire);
    return size - (sp->head - sp->tail_seen);
}

/* Room for a record of rs bytes plus the next record's seq word. */
static int tx_room(struct cc__shm_peer *sp, uint64_t rs)
{
    return tx_free(sp, rs + CC__SHM_LINE) >= rs + CC__SHM_LINE;
}

/* Fill the header of the record at head; seq stays invalid until tx_publish. */
static struct cc__shm_rec *tx_rec(struct cc__shm_peer *sp, uint32_t type, uint32_t tag,
                                  uint64_t len, uint64_t cookie)
{
    struct cc__shm_rec *rec = (struct cc__shm_rec *)(sp->tx_ring + (sp->head & sp->tx_mask));
    rec->type = type;
    rec->tag = tag;
    rec->len = len;
    rec->cookie = cookie;
    return rec;
}

static void tx_publish(struct cc__shm_peer *sp, struct cc__shm_rec *rec, uint64_t rs)
{
    /* Invalidate the next position first: stale bytes there must never look like a record. */
    struct cc__shm_rec *next =
        (struct cc__shm_rec *)(sp->tx_ring + ((sp->head + rs) & sp->tx_mask));
    atomic_store_explicit(&next->seq, 0, memory_order_relaxed);
    atomic_store_explicit(&rec->seq, sp->head + 1, memory_order_release);
    sp->head += rs;
    sp->rang = 1;
}

/* After a batch of records: wake the consumer if it sleeps. */
static void tx_doorbell(struct cc__shm_peer *sp)
{
    if (!sp->rang) return;
    sp->rang = 0;
    cc__fence();
    cc__shm_ring_bell(sp->their, 0);
}

/* Tell the consumer this producer waits for space, so it rings our bell when it frees some. */
static void tx_wait_flag(struct cc__shm_peer *sp, int on)
{
    /* Stored only on change: the flag shares no line with the tail, but every store to a
     * shared line costs the consumer a miss. */
    if (sp->tx_waiting == on) return;
    sp->tx_waiting = on;
    atomic_store(&sp->tx_ctl->tx_wait, (uint32_t)on);
}

/* A whole message in one record; the send is complete once it is in the ring. */
static int tx_eager(struct cc__net *net, struct cc__shm_peer *sp, cc__req_t *req)
{
    uint64_t rs = rec_size(req->len);
    if (!tx_room(sp, rs)) return 0;
    struct cc__shm_rec *rec = tx_rec(sp, CC__REC_EAGER, req->tag, req->len, 0);
    if (req->len)
        ring_put(sp->tx_ring, sp->tx_mask, sp->head + CC__SHM_REC_HDR, req->buf, req->len);
    tx_publish(sp, rec, rs);
    cc__req_finish(net, req, CC_OK);
    return 1;
}

/*
 * Announce a rendezvous. The send stays pending on rndv_tx until its FIN:
 * the receiver may read the buffer at any time before that.
 */
static int tx_rts(struct cc__shm_peer *sp, cc__req_t *req)
{
    uint64_t rs = rec_size(sizeof(uint64_t)), addr = (uint64_t)(uintptr_t)req->buf;
    if (!tx_room(sp, rs)) return 0;
    req->priv[0] = ++sp->next_cookie;
    struct cc__shm_rec *rec = tx_rec(sp, CC__REC_RTS, req->tag, req->len, req->priv[0]);
    ring_put(sp->tx_ring, sp->tx_mask, sp->head + CC__SHM_REC_HDR, &addr, sizeof(addr));
    tx_publish(sp, rec, rs);
    req->next = sp->rndv_tx;
    sp->rndv_tx = req;
    return 1;
}

/* Stream a rendezvous after CTS; 1 when all of it is written. */
static int tx_data(struct cc__net *net, struct cc__shm_peer *sp, cc__req_t *req)
{
    uint64_t quarter = (sp->tx_mask + 1) / 4 - CC__SHM_LINE;
    while (req->done < req->len) {
        uint64_t n = req->len - req->done < quarter ? req->len - req->done : quarter;
        if (!tx_room(sp, rec_size(n))) {
            /* Take what fits if it is worth a record: keeps the pipe full. */
            uint64_t free = tx_free(sp, 0), fits = 0;
            if (free >= 2 * CC__SHM_LINE)
                fits = ((free - CC__SHM_LINE) & ~(uint64_t)(CC__SHM_LINE - 1)) - CC__SHM_REC_HDR;
            if (fits < 4096 && fits < n) return 0;
            n = n < fits ? n : fits;
        }
        struct cc__shm_rec *rec = tx_rec(sp, CC__REC_DATA, req->tag, n, req->priv[0]);
        ring_put(sp->tx_ring, sp->tx_mask, sp->head + CC__SHM_REC_HDR,
                 (const char *)req->buf + req->done, n);
        tx_publish(sp, rec, rec_size(n));
        req->done += n;
    }
    cc__req_finish(net, req, CC_OK);
    return 1;
}

/* A verdict is a bare header: cookie and verdict are all the sender needs. */
static int tx_fin(struct cc__shm_peer *sp, uint64_t cookie, uint32_t verdict)
{
    uint64_t rs = rec_size(0);
    if (!tx_room(sp, rs)) return 0;
    tx_publish(sp, tx_rec(sp, CC__REC_FIN, verdict, 0, cookie), rs);
    return 1;
}

/* Answer a rendezvous; queued (allocation: rare) when the ring is full. */
static void send_fin(struct cc__net *net, struct cc__shm_peer *sp, uint64_t cookie,
                     uint32_t verdict)
{
    if (sp->fins.n == 0 && tx_fin(sp, cookie, verdict)) return;
    if (cc__verdicts_push(&sp->fins, cookie, verdict) != 0)
        cc__net_peer_lost(net, sp->p, "could not be answered (no memory for a verdict)", NULL);
}

/* Write what the queue allows: verdicts first, then sends in order. */
static int tx_queue(struct cc__net *net, struct cc__shm_peer *sp)
{
    int n = 0, k = 0;
    while (k < sp->fins.n && tx_fin(sp, sp->fins.v[k].cookie, sp->fins.v[k].verdict))
        k++;
    if (k) {
        cc__verdicts_pop(&sp->fins, k);
        n += k;
    }
    /* Sends wait while verdicts do: a peer blocked on our FIN must not starve behind them. */
    while (sp->fins.n == 0 && sp->sq_head) {
        cc__req_t *req = sp->sq_head, *next = req->next;
        size_t before = req->done;
        int mode = (int)req->priv[1];
        int ok = mode == MODE_EAGER ? tx_eager(net, sp, req)
                 : mode == MODE_RTS ? tx_rts(sp, req)
                                    : tx_data(net, sp, req);
        if (!ok) {
            n += req->done != before; /* a partly streamed DATA still counts as progress */
            break;
        }
        sp->sq_head = next;
        if (!next) sp->sq_tail = NULL;
        n++;
    }
    tx_wait_flag(sp, sp->fins.n > 0 || sp->sq_head != NULL);
    return n;
}

cc_status_t cc__shm_isend(struct cc__net *net, struct cc__peer *p, cc__req_t *req)
{
    struct cc__shm_peer *sp = p->priv;
    /* A peer that closed its side gets nothing more, even what would fit in its ring: the send
     * fails now (PEER_LOST) instead of completing unseen. What it sent first is still taken. */
    if (atomic_load_explicit(&sp->their->closed, memory_order_acquire)) {
        cc__shm_drain(net, sp);
        cc__net_peer_lost(net, p, "closed its side (aborted or destroyed its communicator)", req);
        return CC_OK;
    }
    uint64_t eager_max = (sp->tx_mask + 1) / 4 - CC__SHM_LINE;
    int eager = req->len <= eager_max && (!net->cma_threshold || req->len < net->cma_threshold);
    req->priv[1] = eager ? MODE_EAGER : MODE_RTS;
    /* Fast path: nothing queued ahead of it, room in the ring. */
    if (!sp->sq_head && !sp->fins.n && (eager ? tx_eager(net, sp, req) : tx_rts(sp, req))) {
        tx_doorbell(sp);
        return CC_OK;
    }
    req->next = NULL;
    if (sp->sq_tail)
        sp->sq_tail->next = req;
    else
        sp->sq_head = req;
    sp->sq_tail = req;
    return CC_OK;
}

/* ---- consumer side ------------------------------------------------------------------- */

int cc__shm_cma(int pid, int write, void *local, uint64_t remote, size_t len, size_t *done)
{
    size_t off = 0;
    int e = 0;
    while (off < len) {
        struct iovec l = {(char *)local + off, len - off};
        struct iovec r = {(void *)(uintptr_t)(remote + off), len - off};
        ssize_t n = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                          : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            e = n < 0 ? errno : EFAULT;
            break;
        }
        off += (size_t)n;
    }
    if (done) *done = off;
    return e;
}

/* Try the single-copy read; 1 when the rendezvous is settled, 0 to stream instead. */
static int accept_cma(struct cc__net *net, struct cc__shm_peer *sp, cc__req_t *req, uint64_t cookie,
                      uint64_t addr)
{
    int e = cc__shm_cma(sp->pid, 0, req->buf, addr, req->len, NULL);
    if (e == 0) {
        /* A sender that closed may have reused its buffer while it was read. */
        cc__fence();
        if (atomic_load(&sp->their->closed)) {
            cc__net_peer_lost(net, sp->p, "closed its side during a transfer", req);
            return 1;
        }
        cc__req_finish(net, req, CC_OK);
        send_fin(net, sp, cookie, CC__FIN_DONE);
        return 1;
    }
    if (e == EPERM || e == EACCES || e == ENOSYS) {
        static atomic_int logged; /* once per process: every peer would say the same */
        sp->cma_refused = 1;
        if (!atomic_exchange(&logged, 1))
            cc_log_info(
                CC_SUBSYS_SHM,
                "shm: process_vm_readv from rank %d (pid %d) refused: %s; large messages from "
                "it (and from any other peer that refuses) are copied through the ring",
                sp->p->rank, sp->pid, strerror(e));
        return 0;
    }
    if (e == ESRCH) {
        cc__net_peer_lost(net, sp->p, "died", req);
        return 1;
    }
    cc_log_error(CC_SUBSYS_SHM,
                 "shm: process_vm_readv of %zu bytes at 0x%llx from rank %d (pid %d) failed: %s",
                 req->len, (unsigned long long)addr, sp->p->rank, sp->pid, strerror(e));
    cc__req_finish(net, req, CC_ERR_SYSTEM);
    send_fin(net, sp, cookie, CC__FIN_DROP);
    return 1;
}

/* A receive meets an RTS (at once or later, from the held queue). */
static void accept_rts(struct cc__net *net, struct cc__shm_peer *sp, cc__req_t *req, size_t len,
                       uint64_t cookie, uint64_t addr)
{
    /* Every path answers the sender, which otherwise waits for its FIN forever. */
    if (req->len != len) {
        cc__net_mismatch(net, req, len);
        send_fin(net, sp, cookie, CC__FIN_DROP);
        return;
    }
    if (net->cma_threshold && !sp->cma_refused && accept_cma(net, sp, req, cookie, addr)) return;
    /* Streaming fallback: the DATA records name the cookie, so the receive waits on rndv_rx. */
    req->priv[0] = cookie;
    req->next = sp->rndv_rx;
    sp->rndv_rx = req;
    send_fin(net, sp, cookie, CC__FIN_CTS);
}

void cc__shm_irecv(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m)
{
    struct cc__shm_peer *sp = p->priv;
    accept_rts(net, sp, req, m->len, m->arg[0], m->arg[1]);
    cc__msg_free(net, m);
    tx_doorbell(sp);
}

static int rx_eager(struct cc__net *net, struct cc__shm_peer *sp, struct cc__shm_rec *rec,
                    uint64_t pos)
{
    uint64_t body = pos + CC__SHM_REC_HDR;
    cc__req_t *req = cc__net_match(net, sp->p, rec->tag);
    if (req && req->len != rec->len) {
        cc__net_mismatch(net, req, rec->len);
    } else if (req) {
        if (rec->len) ring_get(sp->rx_ring, sp->rx_mask, body, req->buf, rec->len);
        cc__req_finish(net, req, CC_OK);
    } else {
        cc__msg_t *m = cc__net_hold(net, sp->p, rec->tag, rec->len, CC__MSG_BUFFERED);
        if (!m) {
            cc__net_peer_lost(net, sp->p, "sent a message this rank had no memory to hold", NULL);
            return 0;
        }
        if (rec->len) ring_get(sp->rx_ring, sp->rx_mask, body, m->data, rec->len);
        m->complete = 1;
    }
    return 1;
}

static int rx_rts(struct cc__net *net, struct cc__shm_peer *sp, struct cc__shm_rec *rec,
                  uint64_t pos)
{
    uint64_t addr;
    ring_get(sp->rx_ring, sp->rx_mask, pos + CC__SHM_REC_HDR, &addr, sizeof(addr));
    cc__req_t *req = cc__net_match(net, sp->p, rec->tag);
    if (req) {
        accept_rts(net, sp, req, rec->len, rec->cookie, addr);
        return 1;
    }
    cc__msg_t *m = cc__net_hold(net, sp->p, rec->tag, rec->len, CC__MSG_RNDV);
    if (!m) {
        cc__net_peer_lost(net, sp->p, "sent a message this rank had no memory to hold", NULL);
        return 0;
    }
    m->arg[0] = rec->cookie;
    m->arg[1] = addr;
    return 1;
}

static int rx_fin(struct cc__net *net, struct cc__shm_peer *sp, struct cc__shm_rec *rec)
{
    cc__req_t *req = cc__req_take_cookie(&sp->rndv_tx, rec->cookie);
    if (!req) {
        cc_log_warn(CC_SUBSYS_SHM, "shm: verdict %u from rank %d for unknown rendezvous %llu",
                    rec->tag, sp->p->rank, (unsigned long long)rec->cookie);
        return 1;
    }
    /* DONE and DROP both end the send: a dropped message was still delivered, and refused. */
    if (rec->tag != CC__FIN_CTS) {
        cc__req_finish(net, req, CC_OK);
        return 1;
    }
    /* CTS: stream it, behind whatever was queued meanwhile (the receive waits by cookie). */
    req->priv[1] = MODE_DATA;
    req->done = 0;
    if (sp->sq_tail)
        sp->sq_tail->next = req;
    else
        sp->sq_head = req;
    sp->sq_tail = req;
    return 1;
}

static int rx_data(struct cc__net *net, struct cc__shm_peer *sp, struct cc__shm_rec *rec,
                   uint64_t pos)
{
    /* Usually the newest rendezvous is the one streaming: look at the head first. */
    cc__req_t *req = sp->rndv_rx;
    if (req && req->priv[0] != rec->cookie) req = NULL;
    for (cc__req_t *r = sp->rndv_rx; !req && r; r = r->next)
        if (r->priv[0] == rec->cookie) req = r;
    if (!req || req->done + rec->len > req->len) {
        cc__net_peer_lost(net, sp->p, "sent data for no open rendezvous (protocol error)", NULL);
        return 0;
    }
    ring_get(sp->rx_ring, sp->rx_mask, pos + CC__SHM_REC_HDR, (char *)req->buf + req->done,
             rec->len);
    req->done += rec->len;
    if (req->done == req->len) {
        cc__req_take_cookie(&sp->rndv_rx, rec->cookie);
        cc__req_finish(net, req, CC_OK);
    }
    return 1;
}

/* Handle one record; its size, or 0 to stop reading (the peer was failed). */
static uint64_t rx_one(struct cc__net *net, struct cc__shm_peer *sp, struct cc__shm_rec *rec,
                       uint64_t pos)
{
    /* A length no record of this ring can have means corruption: fail the peer, do not copy. */
    uint64_t ring = sp->rx_mask + 1;
    switch (rec->type) {
    case CC__REC_EAGER:
        if (rec->len > ring / 2) break;
        return rx_eager(net, sp, rec, pos) ? rec_size(rec->len) : 0;
    case CC__REC_RTS:
        return rx_rts(net, sp, rec, pos) ? rec_size(sizeof(uint64_t)) : 0;
    case CC__REC_FIN:
        return rx_fin(net, sp, rec) ? rec_size(0) : 0;
    case CC__REC_DATA:
        if (rec->len > ring / 2) break;
        return rx_data(net, sp, rec, pos) ? rec_size(rec->len) : 0;
    default:
        break;
    }
    cc_log_error(CC_SUBSYS_SHM, "shm: malformed record from rank %d: type %u, %llu bytes",
                 sp->p->rank, rec->type, (unsigned long long)rec->len);
    cc__net_peer_lost(net, sp->p, "sent a malformed record", NULL);
    return 0;
}

/* Consume what the inbound ring holds (bounded); returns records handled. */
static int rx_ring(struct cc__net *net, struct cc__shm_peer *sp)
{
    int n = 0;
    uint64_t pos = sp->tail;
    /* Bounded, so one busy peer cannot starve the others or the sends. */
    while (n < 256) {
        struct cc__shm_rec *rec = (struct cc__shm_rec *)(sp->rx_ring + (pos & sp->rx_mask));
        if (atomic_load_explicit(&rec->seq, memory_order_acquire) != pos + 1) break;
        uint64_t rs = rx_one(net, sp, rec, pos);
        if (!rs) break;
        pos += rs;
        n++;
    }
    if (!n) return 0;
    sp->tail = pos;
    atomic_store_explicit(&sp->rx_ctl->tail, pos, memory_order_release);
    /* The producer may sleep waiting for this space. */
    cc__fence();
    if (atomic_load_explicit(&sp->rx_ctl->tx_wait, memory_order_relaxed))
        cc__shm_ring_bell(sp->their, 0);
    return n;
}

/* Everything a peer left in its ring (it died or closed): what it sent still arrives. */
int cc__shm_drain(struct cc__net *net, struct cc__shm_peer *sp)
{
    int n = 0, k;
    while (!sp->p->lost && (k = rx_ring(net, sp)) > 0)
        n += k;
    return n;
}

/* Receive before sending: consuming frees the peer's space and may queue verdicts. */
int cc__shm_progress(struct cc__net *net)
{
    struct cc__shm_state *st = cc__shm(net);
    int n = 0;
    for (int i = 0; i < st->nsp; i++) {
        struct cc__shm_peer *sp = &st->sp[i];
        if (sp->p->lost) continue;
        n += rx_ring(net, sp);
        if (sp->sq_head || sp->fins.n) n += tx_queue(net, sp);
        tx_doorbell(sp);
    }
    return n;
}

int cc__shm_cancel(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc_status_t st)
{
    struct cc__shm_peer *sp = p->priv;
    cc__req_t *prev = NULL;
    for (cc__req_t *r = sp->sq_head; r; prev = r, r = r->next) {
        /* A DATA stream was promised to the receiver: too late. */
        if (r != req || r->priv[1] == MODE_DATA) continue;
        if (prev)
            prev->next = r->next;
        else
            sp->sq_head = r->next;
        if (sp->sq_tail == r) sp->sq_tail = prev;
        cc__req_finish(net, req, st);
        return 1;
    }
    return 0;
}

static void fail_list(struct cc__net *net, cc__req_t **list, cc_status_t st)
{
    while (*list) {
        cc__req_t *r = *list;
        *list = r->next;
        cc__req_finish(net, r, st);
    }
}

/* Nothing more goes to or comes from p: every request the transport holds ends, verdicts too. */
void cc__shm_fail(struct cc__net *net, struct cc__peer *p, cc_status_t st)
{
    struct cc__shm_peer *sp = p->priv;
    fail_list(net, &sp->sq_head, st);
    sp->sq_tail = NULL;
    fail_list(net, &sp->rndv_tx, st);
    fail_list(net, &sp->rndv_rx, st);
    sp->fins.n = 0;
}
