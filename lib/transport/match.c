/*
 * match.c - tag matching, held messages, request completion and failure.
 *
 * Per peer, two FIFO queues meet: receives posted before their message
 * arrived (rq), and messages that arrived before their receive (held). A
 * message that arrives takes the oldest posted receive with its tag; a
 * receive that is posted takes the oldest held message with its tag. Both
 * queues keep arrival order, so "oldest with the same tag" holds whichever
 * side comes first. Holding a message allocates; that is the rare path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/lttng.h"
#include "transport/transport.h"

/* Linear in the posted receives of one peer: collectives keep a handful posted at once. */
cc__req_t *cc__net_match(struct cc__net *net, struct cc__peer *p, uint32_t tag)
{
    cc__req_t *prev = NULL;
    for (cc__req_t *r = p->rq_head; r; prev = r, r = r->next) {
        if (r->tag != tag) continue;
        if (prev)
            prev->next = r->next;
        else
            p->rq_head = r->next;
        if (p->rq_tail == r) p->rq_tail = prev;
        r->next = NULL;
        return r;
    }
    (void)net;
    return NULL;
}

/*
 * Held messages come and go in bursts of one size (a sender ahead of its
 * receiver, a pipelined step's pieces): freed ones are kept, so a burst does
 * not pay malloc, free and fresh page faults for every message (glibc hands
 * the top of its heap back to the kernel once 128 KiB of it are free, and a
 * first touch of fresh memory is dear on this kind of VM).
 *
 * Buffers of up to 1 MiB (every eager size up to the default rendezvous
 * threshold) are allocated in sizes of 64 B times a power of two, and kept
 * by that size class: a message takes a spare of its own class (at most
 * twice its length, so small messages do not take large buffers) in one
 * step, however many are kept.
 *
 * Measured 2026-12-03, 2-rank TCP broadcast of 16 KiB, a root ahead of its
 * reader by hundreds of messages (perf record -g on the reader): with 64
 * buffers kept, 13 % of the reader's samples were page faults under the copy
 * into a freshly allocated buffer.
 */
#define CC__SPARE_MIN   64u        /* class 0: 64-byte buffers */
#define CC__SPARE_BYTES (8u << 20) /* kept per net, at most */
#define CC__SPARE_MAX   (1u << 20) /* larger buffers are freed */
#define CC__SPARE_COUNT 4096u      /* and at most this many kept */
_Static_assert(((size_t)CC__SPARE_MIN << (CC__SPARE_CLASSES - 1)) == CC__SPARE_MAX,
               "the last spare class holds CC__SPARE_MAX bytes");

/* The class of a buffer that holds len bytes (len <= CC__SPARE_MAX). */
static int spare_class(size_t len)
{
    int k = 0;
    while ((size_t)CC__SPARE_MIN << k < len) k++;
    return k;
}

static cc__msg_t *take_spare(struct cc__net *net, int k)
{
    net->spare_used[k] = ++net->spare_tick;
    cc__msg_t *m = net->spare[k];
    if (!m) return NULL;
    net->spare[k] = m->next;
    net->spare_bytes -= m->cap;
    net->spare_count--;
    char *data = m->data;
    size_t cap = m->cap;
    memset(m, 0, sizeof(*m));
    m->data = data;
    m->cap = cap;
    return m;
}

static cc__msg_t *new_msg(struct cc__net *net, size_t len, int kind)
{
    int buffered = kind == CC__MSG_BUFFERED && len > 0;
    int k = buffered && len <= CC__SPARE_MAX ? spare_class(len) : -1;
    cc__msg_t *m = k >= 0 ? take_spare(net, k) : NULL;
    if (m) return m;
    size_t cap = k >= 0 ? (size_t)CC__SPARE_MIN << k : buffered ? len : 0;
    m = calloc(1, sizeof(*m));
    if (m && cap && !(m->data = malloc(cap))) {
        free(m);
        return NULL;
    }
    if (m) m->cap = cap;
    return m;
}

cc__msg_t *cc__net_hold(struct cc__net *net, struct cc__peer *p, uint32_t tag, size_t len, int kind)
{
    cc__msg_t *m = new_msg(net, len, kind);
    if (!m) {
        cc_log_error(CC_SUBSYS_NET,
                     "net: no memory to hold a %zu-byte message from rank %d (tag %u) that "
                     "arrived before its receive",
                     len, p->rank, tag);
        return NULL;
    }
    m->tag = tag;
    m->len = len;
    m->kind = kind;
    if (kind == CC__MSG_BUFFERED) p->held_bytes += len;
    if (p->held_tail)
        p->held_tail->next = m;
    else
        p->held_head = m;
    p->held_tail = m;
    (void)net;
    return m;
}

/* Free one kept buffer of the class other than k whose buffers were wanted least recently;
 * 0 when other classes keep none. */
static int evict_other(struct cc__net *net, int k)
{
    int j = -1;
    for (int i = 0; i < CC__SPARE_CLASSES; i++)
        if (i != k && net->spare[i] && (j < 0 || net->spare_used[i] < net->spare_used[j])) j = i;
    if (j >= 0) {
        cc__msg_t *m = net->spare[j];
        net->spare[j] = m->next;
        net->spare_bytes -= m->cap;
        net->spare_count--;
        free(m->data);
        free(m);
        return 1;
    }
    return 0;
}

void cc__msg_free(struct cc__net *net, cc__msg_t *m)
{
    if (!m) return;
    /* A buffer of at most CC__SPARE_MAX bytes was allocated in its class's size. The pool
     * follows the sizes in use: a full pool gives up the buffers of the class wanted least
     * recently for this one (a burst of 16 KiB messages after one of 4 KiB would otherwise
     * find the pool full of the wrong size and malloc every buffer, fresh pages and all:
     * seen 2026-12-03 with 1024 kept). */
    int k = m->cap && m->cap <= CC__SPARE_MAX ? spare_class(m->cap) : -1;
    while (k >= 0 &&
           (net->spare_bytes + m->cap > CC__SPARE_BYTES || net->spare_count >= CC__SPARE_COUNT))
        if (!evict_other(net, k)) k = -1;
    if (k >= 0) {
        m->next = net->spare[k];
        net->spare[k] = m;
        net->spare_bytes += m->cap;
        net->spare_count++;
        return;
    }
    free(m->data);
    free(m);
}

void cc__msg_drop_spares(struct cc__net *net)
{
    for (int k = 0; k < CC__SPARE_CLASSES; k++) {
        while (net->spare[k]) {
            cc__msg_t *m = net->spare[k];
            net->spare[k] = m->next;
            free(m->data);
            free(m);
        }
    }
    net->spare_bytes = 0;
    net->spare_count = 0;
}

/*
 * The only place a request ends: the pending counts drive which transports
 * the wait loop sleeps in and which peers it checks, and the first failure
 * is remembered so a peer loss can say what this rank was waiting for.
 */
void cc__req_finish(struct cc__net *net, cc__req_t *req, cc_status_t st)
{
    struct cc__peer *p = &net->peers[req->peer];
    req->status = st;
    req->next = NULL;
    if (st == CC_OK) req->done = req->len;
    cc__lttng_xfer_end(net->comm_id, req->kind == CC__REQ_SEND ? CC__LTTNG_SEND : CC__LTTNG_RECV,
                       req->peer, req->tag, req->done, net->tps[p->tp]->name, st);
    p->pending--;
    net->tp_pending[p->tp]--;
    net->events++;
    if (st < 0 && !net->first_fail_kind) {
        net->first_fail_kind = req->kind;
        net->first_fail_tag = req->tag;
    }
}

void cc__net_mismatch(struct cc__net *net, cc__req_t *req, size_t msg_len)
{
    cc_log_error(CC_SUBSYS_NET,
                 "net: message from rank %d (tag %u) has %zu bytes but the receive posted for it "
                 "on rank %d expects %zu",
                 req->peer, req->tag, msg_len, net->rank, req->len);
    cc__req_finish(net, req, CC_ERR_MISMATCH);
}

void cc__net_msg_done(struct cc__net *net, struct cc__peer *p, cc__msg_t *m)
{
    m->complete = 1;
    if (m->bound) {
        /* Bound receives were length-checked when they took the message. */
        if (m->len) memcpy(m->bound->buf, m->data, m->len);
        cc__req_finish(net, m->bound, CC_OK);
        cc__msg_free(net, m);
    } else if (m->discard) {
        cc__msg_free(net, m);
    }
    (void)p;
}

/* Take the oldest held message with this tag off p's queue. */
cc__msg_t *cc__net_take_held(struct cc__peer *p, uint32_t tag)
{
    cc__msg_t *prev = NULL;
    for (cc__msg_t *m = p->held_head; m; prev = m, m = m->next) {
        if (m->tag != tag) continue;
        if (prev)
            prev->next = m->next;
        else
            p->held_head = m->next;
        if (p->held_tail == m) p->held_tail = prev;
        m->next = NULL;
        if (m->kind == CC__MSG_BUFFERED) p->held_bytes -= m->len;
        return m;
    }
    return NULL;
}

/*
 * Drop held messages that can never be received any more: all of them on
 * abort; on loss, those not complete (a complete copy can still be received
 * after its sender died).
 */
static void drop_held(struct cc__net *net, struct cc__peer *p, cc_status_t st, int keep_complete)
{
    cc__msg_t **link = &p->held_head;
    p->held_tail = NULL;
    while (*link) {
        cc__msg_t *m = *link;
        int keep = keep_complete && m->kind == CC__MSG_BUFFERED && m->complete;
        if (keep) {
            p->held_tail = m;
            link = &m->next;
            continue;
        }
        *link = m->next;
        if (m->kind == CC__MSG_BUFFERED) p->held_bytes -= m->len;
        if (m->kind == CC__MSG_SELF_REF) cc__req_finish(net, m->sreq, st);
        cc__msg_free(net, m);
    }
}

/* Finish every request with p; returns the first one's kind (0: none) and tag. */
static int fail_peer(struct cc__net *net, struct cc__peer *p, cc_status_t st, int keep_complete,
                     uint32_t *tag)
{
    while (p->rq_head) {
        cc__req_t *r = p->rq_head;
        p->rq_head = r->next;
        cc__req_finish(net, r, st);
    }
    p->rq_tail = NULL;
    /* The transport before the held queue: it drops its references to held messages. */
    if (p->priv && net->tps[p->tp]->fail) net->tps[p->tp]->fail(net, p, st);
    drop_held(net, p, st, keep_complete);
    *tag = net->first_fail_tag;
    return net->first_fail_kind;
}

/* Log a loss with what this rank was doing with the peer. */
static void log_lost(struct cc__net *net, struct cc__peer *p, int kind, uint32_t tag)
{
    char who[80] = "?";
    net->tps[p->tp]->describe(net, p, who, sizeof(who));
    if (kind == CC__REQ_SEND || kind == CC__REQ_RECV)
        cc_log_error(CC_SUBSYS_NET, "%s: peer rank %d (%s) %s while rank %d waited %s (tag %u)",
                     net->tps[p->tp]->name, p->rank, who, p->lost_cause, net->rank,
                     kind == CC__REQ_SEND ? "to send a message" : "for a message", tag);
    else
        cc_log_error(CC_SUBSYS_NET, "%s: peer rank %d (%s) %s while rank %d waited for it",
                     net->tps[p->tp]->name, p->rank, who, p->lost_cause, net->rank);
    p->lost_logged = 1;
}

void cc__net_peer_lost(struct cc__net *net, struct cc__peer *p, const char *cause, cc__req_t *req)
{
    int reason = atomic_load(&net->abort_reason);
    if (reason) {
        /* This rank is aborting (its own shutdown may be what broke the link): the reason wins. */
        if (req) cc__req_finish(net, req, (cc_status_t)reason);
        cc__net_aborted(net);
        return;
    }
    net->first_fail_kind = 0;
    if (req) cc__req_finish(net, req, CC_ERR_PEER_LOST);
    if (p->lost) {
        if (req && !p->lost_logged) log_lost(net, p, req->kind, req->tag);
        return;
    }
    p->lost = CC_ERR_PEER_LOST;
    snprintf(p->lost_cause, sizeof(p->lost_cause), "%s", cause);
    uint32_t tag = 0;
    int kind = fail_peer(net, p, CC_ERR_PEER_LOST, 1, &tag);
    /* Nobody waited: the loss is logged when a request first runs into it. */
    if (kind) log_lost(net, p, kind, tag);
}

/* A request posted to a peer already lost: fail it, logging the loss once. */
cc_status_t cc__net_post_lost(struct cc__net *net, struct cc__peer *p, cc__req_t *req)
{
    if (!p->lost_logged) log_lost(net, p, req->kind, req->tag);
    cc__req_finish(net, req, p->lost);
    return p->lost;
}

/* Requests belong to the owner thread, so the abort thread only flags; the owner fails them here.
 */
int cc__net_aborted(struct cc__net *net)
{
    int reason = atomic_load_explicit(&net->abort_reason, memory_order_acquire);
    if (!reason || net->abort_done) return reason;
    net->abort_done = 1;
    for (int i = 0; i < net->size; i++) {
        net->first_fail_kind = 0;
        uint32_t tag;
        fail_peer(net, &net->peers[i], (cc_status_t)reason, 0, &tag);
    }
    cc_log_info(CC_SUBSYS_NET, "net: rank %d failed its pending requests: aborted (%s)", net->rank,
                cc_status_name((cc_status_t)reason));
    return reason;
}

cc_status_t cc__net_cancel(cc__net_t *net, cc__req_t *req, cc_status_t status)
{
    if (!net || !req || req->peer < 0 || req->peer >= net->size) {
        cc_log_error(CC_SUBSYS_NET, "net: cancel: %s is invalid", !net ? "net" : "request");
        return CC_ERR_INVALID_ARG;
    }
    if (req->status != CC_INPROGRESS) return CC_OK;
    /* Not matched yet: only net.c knows it. Otherwise the transport decides. */
    struct cc__peer *p = &net->peers[req->peer];
    cc__req_t *prev = NULL;
    for (cc__req_t *r = p->rq_head; r; prev = r, r = r->next) {
        if (r != req) continue;
        if (prev)
            prev->next = r->next;
        else
            p->rq_head = r->next;
        if (p->rq_tail == r) p->rq_tail = prev;
        cc__req_finish(net, req, status);
        return CC_OK;
    }
    if (net->tps[p->tp]->cancel && net->tps[p->tp]->cancel(net, p, req, status)) return CC_OK;
    return CC_ERR_BUSY;
}

int cc__verdicts_push(struct cc__verdicts *q, uint64_t cookie, uint32_t verdict)
{
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 16;
        struct cc__verdict *v = realloc(q->v, (size_t)cap * sizeof(*v));
        if (!v) return -1;
        q->v = v;
        q->cap = cap;
    }
    q->v[q->n].cookie = cookie;
    q->v[q->n++].verdict = verdict;
    return 0;
}

void cc__verdicts_pop(struct cc__verdicts *q, int k)
{
    memmove(q->v, q->v + k, (size_t)(q->n - k) * sizeof(*q->v));
    q->n -= k;
}

/* Rendezvous lists are short (the messages in flight with one peer): a linear search. */
cc__req_t *cc__req_take_cookie(cc__req_t **list, uint64_t cookie)
{
    for (cc__req_t **link = list; *link; link = &(*link)->next) {
        cc__req_t *r = *link;
        if (r->priv[0] != cookie) continue;
        *link = r->next;
        r->next = NULL;
        return r;
    }
    return NULL;
}
