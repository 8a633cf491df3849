/*
 * tcp_connect.c - building the TCP mesh at creation.
 *
 * The higher rank of each pair connects to the lower one's listener, so each
 * pair gets exactly one connection and nobody waits for a connection it is
 * expected to make itself. All connects and accepts are non-blocking and
 * driven by one poll() loop until every link is up or the connect timeout
 * passes; refused connects are retried (the peer may be slow to start).
 *
 * The listener checks each hello: the communicator id, both ranks, the size
 * and the token (its own nonce from the allgather). Anything else is a
 * stranger, logged and closed; it cannot hold up the mesh. A connection
 * that sends no hello within HELLO_TIMEOUT_MS is closed too: strangers that
 * only connect would otherwise keep the few accept slots until the connect
 * timeout, and the real peer would never get in.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "transport/tcp.h"

#define RETRY_NS  20000000ull /* 20 ms between connect attempts */
#define SPARE_INS 8           /* accepted sockets beyond the expected ones */
/* An honest peer sends its hello as soon as it is connected: the store's login deadline. */
#define HELLO_TIMEOUT_MS 5000

enum { L_FREE = 0, L_IDLE, L_CONNECTING, L_ACK, L_HELLO, L_DONE };

struct link {
    int fd;
    int state;
    struct cc__tcp_peer *tp; /* outgoing: the peer */
    uint64_t retry_at;       /* outgoing: when to connect again; accepted: the hello's deadline */
    int err; /* last errno, for the timeout message */
    size_t got;
    union {
        struct cc__tcp_hello hello;
        struct cc__tcp_ack ack;
    } buf;
};

struct mesh {
    struct cc__net *net;
    struct cc__tcp_state *ts;
    struct link *out; /* one per TCP peer (used for lower ranks) */
    struct link *in;  /* accepted, not yet identified */
    int nin;
    int remaining; /* links still to establish */
};

/* Close a link's socket; an outgoing one is tried again after RETRY_NS. */
static void link_reset(struct link *l, int state, int err)
{
    if (l->fd >= 0) close(l->fd);
    l->fd = -1;
    l->state = state;
    l->err = err;
    l->got = 0;
    l->retry_at = cc__now_ns() + RETRY_NS;
}

static void send_hello(struct mesh *m, struct link *l)
{
    struct cc__tcp_hello h;
    memset(&h, 0, sizeof(h));
    h.magic = CC__TCP_HELLO_MAGIC;
    h.comm_id = m->net->comm_id;
    h.token = m->net->info[l->tp->p->rank].nonce;
    h.version = CC__TCP_VERSION;
    h.from = m->net->rank;
    h.to = l->tp->p->rank;
    h.size = m->net->size;
    /* A fresh socket's send buffer takes these few bytes whole. */
    if (send(l->fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
        link_reset(l, L_IDLE, errno);
        return;
    }
    l->state = L_ACK;
}

/* Start (or restart) a non-blocking connect to a lower rank's listener. */
static void out_start(struct mesh *m, struct link *l)
{
    const cc__peer_info_t *in = &m->net->info[l->tp->p->rank];
    struct sockaddr_storage ss;
    socklen_t sl;
    if (cc__tcp_sockaddr(in->addr, in->port, &ss, &sl) != 0) {
        link_reset(l, L_IDLE, EINVAL);
        return;
    }
    l->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        link_reset(l, L_IDLE, errno);
        return;
    }
    cc__tcp_sockopts(l->fd);
    if (connect(l->fd, (struct sockaddr *)&ss, sl) == 0)
        send_hello(m, l);
    else if (errno == EINPROGRESS)
        l->state = L_CONNECTING;
    else
        link_reset(l, L_IDLE, errno);
}

/* An outgoing link is writable (connected) or readable (the ack, or a rejection). */
static cc_status_t out_event(struct mesh *m, struct link *l)
{
    if (l->state == L_CONNECTING) {
        /* A refused or unreachable connect is retried: the listener's host may be slow. */
        int err = 0;
        socklen_t el = sizeof(err);
        getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &el);
        if (err)
            link_reset(l, L_IDLE, err);
        else
            send_hello(m, l);
        return CC_OK;
    }
    ssize_t n = recv(l->fd, (char *)&l->buf.ack + l->got, sizeof(l->buf.ack) - l->got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return CC_OK;
    /* Closed without an ack: the listener judged our hello; retrying would not change that. */
    if (n <= 0) {
        cc_log_error(CC_SUBSYS_TCP,
                     "tcp: rank %d (%s) closed the connection from rank %d during the handshake "
                     "(it rejected us: %s)",
                     l->tp->p->rank, l->tp->where, m->net->rank, n < 0 ? strerror(errno) : "EOF");
        return CC_ERR_CONNECT;
    }
    l->got += (size_t)n;
    if (l->got < sizeof(l->buf.ack)) return CC_OK;
    if (l->buf.ack.magic != CC__TCP_ACK_MAGIC || l->buf.ack.status != CC_OK) {
        cc_log_error(CC_SUBSYS_TCP, "tcp: rank %d (%s) answered rank %d's hello with garbage",
                     l->tp->p->rank, l->tp->where, m->net->rank);
        return CC_ERR_PROTOCOL;
    }
    l->tp->fd = l->fd;
    l->fd = -1;
    l->state = L_DONE;
    m->remaining--;
    return CC_OK;
}

/* Why a hello is not from an expected peer, or NULL when it is. */
static const char *hello_problem(struct mesh *m, const struct cc__tcp_hello *h,
                                 struct cc__tcp_peer **tp)
{
    struct cc__net *net = m->net;
    if (h->magic != CC__TCP_HELLO_MAGIC || h->version != CC__TCP_VERSION)
        return "not a ccomm hello";
    if (h->comm_id != net->comm_id) return "another communicator";
    if (h->to != net->rank || h->size != net->size) return "wrong rank or size";
    /* The nonce travelled only through the (authenticated) allgather: a port scan cannot know it.
     */
    if (h->token != net->info[net->rank].nonce) return "wrong token";
    for (int i = 0; i < m->ts->ntp; i++) {
        struct cc__tcp_peer *t = &m->ts->tp[i];
        if (t->p->rank != h->from) continue;
        /* Lower ranks are ours to call; a second hello for a linked rank is a replay. */
        if (h->from < net->rank || t->fd >= 0) return "duplicate or unexpected rank";
        *tp = t;
        return NULL;
    }
    return "rank is not a tcp peer";
}

/* An accepted socket sent (part of) its hello: identify it, then keep or close it. */
static void in_event(struct mesh *m, struct link *l)
{
    ssize_t n = recv(l->fd, (char *)&l->buf.hello + l->got, sizeof(l->buf.hello) - l->got, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        link_reset(l, L_FREE, 0);
        return;
    }
    l->got += (size_t)n;
    if (l->got < sizeof(l->buf.hello)) return;
    struct cc__tcp_peer *tp = NULL;
    const char *why = hello_problem(m, &l->buf.hello, &tp);
    struct cc__tcp_ack ack = {CC__TCP_ACK_MAGIC, CC_OK};
    if (!why && send(l->fd, &ack, sizeof(ack), MSG_NOSIGNAL) != (ssize_t)sizeof(ack))
        why = "ack could not be sent";
    if (why) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char ip[64] = "?";
        if (getpeername(l->fd, (struct sockaddr *)&ss, &sl) == 0)
            inet_ntop(ss.ss_family,
                      ss.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr
                                              : (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr,
                      ip, sizeof(ip));
        cc_log_warn(CC_SUBSYS_TCP,
                    "tcp: rank %d rejected a connection from %s (claims rank %d): %s", m->net->rank,
                    ip, l->buf.hello.from, why);
        link_reset(l, L_FREE, 0);
        return;
    }
    cc__tcp_sockopts(l->fd);
    tp->fd = l->fd;
    l->fd = -1;
    l->state = L_FREE;
    m->remaining--;
}

/* Take every pending connection; each waits in a slot for its hello. */
static void accept_all(struct mesh *m)
{
    for (;;) {
        int fd = accept4(m->ts->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) return;
        struct link *l = NULL;
        for (int i = 0; i < m->nin && !l; i++)
            if (m->in[i].state == L_FREE) l = &m->in[i];
        if (!l) {
            close(fd); /* more strangers than slots: they wait their turn */
            continue;
        }
        l->fd = fd;
        l->state = L_HELLO;
        l->got = 0;
        l->retry_at = cc__deadline_after_ms(HELLO_TIMEOUT_MS);
    }
}

/* One poll round over the listener and every pending link; the arrays are rebuilt each round
 * because links come and go (accepted, identified, retried). */
static cc_status_t poll_round(struct mesh *m, struct pollfd *pf, struct link **pl, int timeout_ms)
{
    int n = 0;
    pf[n] = (struct pollfd){.fd = m->ts->lfd, .events = POLLIN};
    pl[n++] = NULL;
    for (int i = 0; i < m->ts->ntp; i++) {
        struct link *l = &m->out[i];
        if (l->state == L_CONNECTING || l->state == L_ACK) {
            pf[n] = (struct pollfd){.fd = l->fd, .events = l->state == L_ACK ? POLLIN : POLLOUT};
            pl[n++] = l;
        }
    }
    for (int i = 0; i < m->nin; i++) {
        if (m->in[i].state != L_HELLO) continue;
        pf[n] = (struct pollfd){.fd = m->in[i].fd, .events = POLLIN};
        pl[n++] = &m->in[i];
    }
    if (poll(pf, (nfds_t)n, timeout_ms) <= 0) return CC_OK;
    for (int i = 0; i < n; i++) {
        if (!pf[i].revents) continue;
        if (!pl[i])
            accept_all(m);
        else if (pl[i]->state == L_HELLO)
            in_event(m, pl[i]);
        else
            CC_CHECK(out_event(m, pl[i]));
    }
    return CC_OK;
}

/* At the deadline: name every link that is missing, from whichever side should have made it. */
static void report_missing(struct mesh *m)
{
    for (int i = 0; i < m->ts->ntp; i++) {
        struct cc__tcp_peer *tp = &m->ts->tp[i];
        if (tp->fd >= 0) continue;
        if (tp->p->rank < m->net->rank)
            cc_log_error(CC_SUBSYS_TCP,
                         "tcp: rank %d could not connect to rank %d (%s) within "
                         "%lld ms: %s",
                         m->net->rank, tp->p->rank, tp->where,
                         (long long)m->net->connect_timeout_ms,
                         m->out[i].err ? strerror(m->out[i].err) : "no answer to the handshake");
        else
            cc_log_error(CC_SUBSYS_TCP,
                         "tcp: rank %d (%s) did not connect to rank %d within "
                         "%lld ms",
                         tp->p->rank, tp->where, m->net->rank,
                         (long long)m->net->connect_timeout_ms);
    }
}

/* Accepted connections that sent no hello in time give their slot back. */
static void expire_hellos(struct mesh *m, uint64_t now)
{
    for (int i = 0; i < m->nin; i++) {
        struct link *l = &m->in[i];
        if (l->state != L_HELLO || l->retry_at > now) continue;
        cc_log_warn(CC_SUBSYS_TCP,
                    "tcp: rank %d closed a connection that sent %zu of the %zu bytes of a hello "
                    "within %d ms",
                    m->net->rank, l->got, sizeof(l->buf.hello), HELLO_TIMEOUT_MS);
        link_reset(l, L_FREE, 0);
    }
}

/* Poll until every link is up; short rounds so retries start on time. */
static cc_status_t run_mesh(struct mesh *m, struct pollfd *pf, struct link **pl)
{
    uint64_t deadline = cc__deadline_after_ms(m->net->connect_timeout_ms);
    while (m->remaining > 0) {
        uint64_t now = cc__now_ns();
        if (now >= deadline) {
            report_missing(m);
            return CC_ERR_CONNECT;
        }
        for (int i = 0; i < m->ts->ntp; i++)
            if (m->out[i].state == L_IDLE && m->out[i].retry_at <= now) out_start(m, &m->out[i]);
        expire_hellos(m, now);
        uint64_t wait = deadline - now < 20000000ull ? deadline - now : 20000000ull;
        CC_CHECK(poll_round(m, pf, pl, (int)(wait / 1000000ull) + 1));
    }
    return CC_OK;
}

cc_status_t cc__tcp_mesh(struct cc__net *net, struct cc__tcp_state *ts)
{
    /* Slots for the expected connectors plus a few strangers, who must not crowd them out. */
    struct mesh m = {.net = net, .ts = ts, .nin = SPARE_INS};
    for (int i = 0; i < ts->ntp; i++)
        m.nin += ts->tp[i].p->rank > net->rank;
    int npoll = 1 + ts->ntp + m.nin;
    m.out = calloc((size_t)ts->ntp, sizeof(*m.out));
    m.in = calloc((size_t)m.nin, sizeof(*m.in));
    struct pollfd *pf = calloc((size_t)npoll, sizeof(*pf));
    struct link **pl = calloc((size_t)npoll, sizeof(*pl));
    cc_status_t st = CC_ERR_NO_MEMORY;
    if (m.out && m.in && pf && pl) {
        for (int i = 0; i < m.nin; i++)
            m.in[i].fd = -1;
        for (int i = 0; i < ts->ntp; i++) {
            m.out[i].fd = -1;
            m.out[i].tp = &ts->tp[i];
            m.out[i].state = ts->tp[i].p->rank < net->rank ? L_IDLE : L_FREE;
        }
        m.remaining = ts->ntp;
        st = run_mesh(&m, pf, pl);
    }
    /* Links that made it moved their socket to the peer; the rest are closed here. */
    for (int i = 0; m.out && i < ts->ntp; i++)
        if (m.out[i].fd >= 0) close(m.out[i].fd);
    for (int i = 0; m.in && i < m.nin; i++)
        if (m.in[i].fd >= 0) close(m.in[i].fd);
    free(m.out);
    free(m.in);
    free(pf);
    free(pl);
    return st;
}
