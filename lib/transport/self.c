/*
 * self.c - messages a rank sends to itself.
 *
 * A send to self meets its receive in memory. When the receive is not posted
 * yet, a small message is copied aside (the send finishes at once, so a
 * blocking send to self followed by its receive works); a large one waits,
 * by reference, for its receive (one copy, no allocation of its size).
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "transport/transport.h"

/* Largest send to self that is copied aside instead of waiting for its receive. */
#define SELF_COPY_MAX (64u * 1024u)

static cc_status_t self_setup(struct cc__net *net, cc__peer_info_t *mine)
{
    (void)net;
    (void)mine;
    return CC_OK;
}

static cc_status_t self_connect(struct cc__net *net, int phase)
{
    (void)net;
    (void)phase;
    return CC_OK;
}

/* Copy a send into a receive that has the same length. */
static void deliver(struct cc__net *net, cc__req_t *send, cc__req_t *recv)
{
    if (recv->len != send->len) {
        cc__net_mismatch(net, recv, send->len);
    } else {
        if (send->len) memcpy(recv->buf, send->buf, send->len);
        cc__req_finish(net, recv, CC_OK);
    }
    cc__req_finish(net, send, CC_OK);
}

/* Match at once if the receive is posted; else hold a copy (small) or the send itself (large). */
static cc_status_t self_isend(struct cc__net *net, struct cc__peer *p, cc__req_t *req)
{
    cc__req_t *r = cc__net_match(net, p, req->tag);
    if (r) {
        deliver(net, req, r);
        return CC_OK;
    }
    int copy = req->len <= SELF_COPY_MAX;
    cc__msg_t *m =
        cc__net_hold(net, p, req->tag, req->len, copy ? CC__MSG_BUFFERED : CC__MSG_SELF_REF);
    if (!m) {
        cc__req_finish(net, req, CC_ERR_NO_MEMORY);
        return CC_ERR_NO_MEMORY;
    }
    if (copy) {
        if (req->len) memcpy(m->data, req->buf, req->len);
        m->complete = 1;
        cc__req_finish(net, req, CC_OK);
    } else {
        m->sreq = req;
    }
    return CC_OK;
}

/* A receive took a send held by reference: one copy, and both finish. */
static void self_irecv(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m)
{
    (void)p;
    deliver(net, m->sreq, req);
    cc__msg_free(net, m);
}

/* Everything happens when posting: there is nothing to progress or to sleep on. */
static int self_progress(struct cc__net *net)
{
    (void)net;
    return 0;
}

static void self_sleep(struct cc__net *net, uint64_t timeout_ns)
{
    struct pollfd pfd = {.fd = net->wake_fd, .events = POLLIN};
    poll(&pfd, 1, (int)((timeout_ns + 999999) / 1000000));
}

/* A send waiting by reference for its receive can be taken back. */
static int self_cancel(struct cc__net *net, struct cc__peer *p, cc__req_t *req, cc_status_t st)
{
    cc__msg_t *prev = NULL;
    for (cc__msg_t *m = p->held_head; m; prev = m, m = m->next) {
        if (m->kind != CC__MSG_SELF_REF || m->sreq != req) continue;
        if (prev)
            prev->next = m->next;
        else
            p->held_head = m->next;
        if (p->held_tail == m) p->held_tail = prev;
        cc__msg_free(net, m);
        cc__req_finish(net, req, st);
        return 1;
    }
    return 0;
}

static void self_describe(struct cc__net *net, struct cc__peer *p, char *buf, size_t len)
{
    (void)p;
    snprintf(buf, len, "self, rank %d", net->rank);
}

static void self_close(struct cc__net *net)
{
    (void)net;
}

const cc__transport_t cc__transport_self = {
    .name = "self",
    .setup = self_setup,
    .connect = self_connect,
    .isend = self_isend,
    .irecv = self_irecv,
    .progress = self_progress,
    .sleep = self_sleep,
    .check = NULL,
    .cancel = self_cancel,
    .fail = NULL,
    .abort = NULL,
    .close = self_close,
    .describe = self_describe,
};
