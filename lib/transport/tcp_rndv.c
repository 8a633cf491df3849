/*
 * tcp_rndv.c - the TCP rendezvous: large messages wait for their receive.
 *
 *   sender                          receiver
 *   RTS(tag, len, cookie)  ----->   held (a promise, no payload) until a receive matches
 *                          <-----   CTS(cookie, GO)     or CTS(cookie, DROP) on a length mismatch
 *   DATA(cookie, len) + payload ->  read straight into the posted buffer
 *
 * Without it a sender that runs ahead of its receiver (a window of large
 * sends) has every message held aside: an allocation and an extra copy of
 * each, at the size of the message. With it the payload moves once, into
 * place, for one round trip per message, which a window of messages hides.
 */
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "transport/tcp.h"

/* Queue a verdict; it goes out before the next queued send (allocation: rare, small). */
void cc__tcp_verdict(struct cc__net *net, struct cc__tcp_peer *tp, uint64_t cookie,
                     uint32_t verdict)
{
    if (cc__verdicts_push(&tp->cts, cookie, verdict) != 0)
        cc__tcp_drop(net, tp, "could not be answered (no memory for a verdict)", NULL);
}

/* A receive meets an RTS: say GO (and wait for DATA by cookie), or DROP on a mismatch. */
static void accept_rts(struct cc__net *net, struct cc__tcp_peer *tp, cc__req_t *req, size_t len,
                       uint64_t cookie)
{
    if (req->len != len) {
        cc__net_mismatch(net, req, len);
        cc__tcp_verdict(net, tp, cookie, CC__TCP_DROP);
        return;
    }
    req->priv[0] = cookie;
    req->next = tp->rndv_rx;
    tp->rndv_rx = req;
    cc__tcp_verdict(net, tp, cookie, CC__TCP_GO);
}

void cc__tcp_irecv(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m)
{
    struct cc__tcp_peer *tp = p->priv;
    accept_rts(net, tp, req, m->len, m->arg[0]);
    cc__msg_free(net, m);
    cc__tcp_tx(net, tp); /* the sender waits for this verdict: send it now */
}

/* A verdict names a rendezvous this rank never announced: the stream is not ours. */
static int protocol_error(struct cc__net *net, struct cc__tcp_peer *tp, const char *what,
                          uint64_t cookie)
{
    cc_log_error(CC_SUBSYS_TCP, "tcp: %s for unknown rendezvous %llu from rank %d (%s)", what,
                 (unsigned long long)cookie, tp->p->rank, tp->where);
    cc__tcp_drop(net, tp, "broke the rendezvous protocol", NULL);
    return -1;
}

/* RTS, CTS and DATA headers; 0, or -1 when the peer was dropped. */
int cc__tcp_rndv_frame(struct cc__net *net, struct cc__tcp_peer *tp, const struct cc__tcp_frame *h)
{
    cc__req_t *req;
    switch (h->type) {
    case CC__TCP_RTS:
        if ((req = cc__net_match(net, tp->p, h->tag)) != NULL) {
            accept_rts(net, tp, req, h->len, h->cookie);
            return 0;
        }
        cc__msg_t *m = cc__net_hold(net, tp->p, h->tag, h->len, CC__MSG_RNDV);
        if (!m) {
            cc__tcp_drop(net, tp, "sent a message this rank had no memory to hold", NULL);
            return -1;
        }
        m->arg[0] = h->cookie;
        return 0;
    case CC__TCP_CTS:
        if (!(req = cc__req_take_cookie(&tp->rndv_tx, h->cookie)))
            return protocol_error(net, tp, "verdict", h->cookie);
        if (h->tag != CC__TCP_GO) {
            cc__req_finish(net, req, CC_OK); /* delivered, and refused by its receive */
            return 0;
        }
        /* GO: the payload follows the sends queued before it, in order. */
        req->priv[1] = CC__TCP_MODE_DATA;
        if (tp->sq_tail)
            tp->sq_tail->next = req;
        else
            tp->sq_head = req;
        tp->sq_tail = req;
        return 0;
    default: /* DATA */
        req = cc__req_take_cookie(&tp->rndv_rx, h->cookie);
        if (!req || req->len != h->len) return protocol_error(net, tp, "data", h->cookie);
        tp->rx_req = req;
        cc__tcp_start_body(net, tp, h->len);
        return 0;
    }
}
