/*
 * tcp.c - the TCP transport: listener, creation phases, teardown, abort.
 *
 * Creation: setup() opens a listener on an ephemeral port of the configured
 * address (published in the blob); phase 0 builds the mesh (tcp_connect.c);
 * phase 1 closes the listener, so nobody can connect later, and puts every
 * socket plus the net's wake eventfd into one epoll set, which progress
 * polls without blocking and sleep() blocks on.
 *
 * Sockets get TCP_NODELAY (small messages go out at once) and 4 MiB send
 * and receive buffers, set before connect/listen so the window scale
 * allows them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "transport/tcp.h"

#define CC__TCP_SOCKBUF (4 << 20)

/* Options every socket of ours gets (before connect or listen). */
void cc__tcp_sockopts(int fd)
{
    int one = 1, buf = CC__TCP_SOCKBUF;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
}

/* Parse a numeric IPv4/IPv6 address with a port into a sockaddr. */
int cc__tcp_sockaddr(const char *ip, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *len = sizeof(*v4);
        return 0;
    }
    if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*v6);
        return 0;
    }
    return -1;
}

int cc__tcp_listen(const char *ip, int backlog, uint16_t *port, int *family)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    if (cc__tcp_sockaddr(ip, 0, &ss, &sl) != 0) return -2;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    cc__tcp_sockopts(fd);
    if (bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, backlog) != 0 ||
        getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    *family = ss.ss_family;
    *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                          : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return fd;
}

/* The listener exists before the blob exchange, so the blob can carry its port. */
static cc_status_t listen_on(struct cc__net *net, struct cc__tcp_state *ts, cc__peer_info_t *mine)
{
    int family = 0;
    uint16_t port = 0;
    ts->lfd = cc__tcp_listen(net->listen_addr, SOMAXCONN, &port, &family);
    if (ts->lfd == -2) {
        ts->lfd = -1;
        cc_log_error(CC_SUBSYS_TCP,
                     "tcp: socket address \"%s\" is not a numeric IPv4 or IPv6 address "
                     "(CCOMM_SOCKET_ADDR)",
                     net->listen_addr);
        return CC_ERR_INVALID_ARG;
    }
    if (ts->lfd < 0) {
        cc_log_error(CC_SUBSYS_TCP, "tcp: cannot listen on %s: %s", net->listen_addr,
                     strerror(errno));
        return errno == EADDRINUSE ? CC_ERR_BUSY : CC_ERR_SYSTEM;
    }
    mine->family = family;
    mine->port = port;
    /* A numeric address that parsed is at most 45 characters long. */
    memcpy(mine->addr, net->listen_addr, sizeof(mine->addr) - 1);
    return CC_OK;
}

static cc_status_t tcp_setup(struct cc__net *net, cc__peer_info_t *mine)
{
    struct cc__tcp_state *ts = calloc(1, sizeof(*ts));
    if (!ts) return CC_ERR_NO_MEMORY;
    ts->lfd = -1;
    ts->epfd = -1;
    ts->chunk = cc__cfg()->tcp_chunk_size;
    net->tp_state[CC__TP_TCP] = ts;
    return listen_on(net, ts, mine);
}

/* The TCP peers, in rank order, each with its staging buffer. */
static cc_status_t make_peers(struct cc__net *net, struct cc__tcp_state *ts)
{
    ts->tp = calloc((size_t)net->tp_peers[CC__TP_TCP] + 1, sizeof(*ts->tp));
    if (!ts->tp) return CC_ERR_NO_MEMORY;
    for (int i = 0; i < net->size; i++) {
        if (net->peers[i].tp != CC__TP_TCP) continue;
        struct cc__tcp_peer *tp = &ts->tp[ts->ntp++];
        tp->p = &net->peers[i];
        tp->fd = -1;
        const cc__peer_info_t *in = &net->info[i];
        snprintf(tp->where, sizeof(tp->where), in->family == AF_INET6 ? "[%s]:%u" : "%s:%u",
                 in->addr, in->port);
        if (!(tp->stage = malloc(CC__TCP_STAGE))) return CC_ERR_NO_MEMORY;
    }
    return CC_OK;
}

/* Phase 1: no more strangers; one epoll set for progress and sleep. */
static cc_status_t arm_epoll(struct cc__net *net, struct cc__tcp_state *ts)
{
    if (ts->lfd >= 0) close(ts->lfd);
    ts->lfd = -1;
    if (ts->ntp == 0) return CC_OK;
    ts->epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    int bad = ts->epfd < 0 || epoll_ctl(ts->epfd, EPOLL_CTL_ADD, net->wake_fd, &ev) != 0;
    for (int i = 0; i < ts->ntp && !bad; i++) {
        struct cc__tcp_peer *tp = &ts->tp[i];
        ev.events = EPOLLIN | EPOLLRDHUP;
        ev.data.ptr = tp;
        bad = epoll_ctl(ts->epfd, EPOLL_CTL_ADD, tp->fd, &ev) != 0;
        tp->p->priv = tp;
    }
    if (bad) {
        cc_log_error(CC_SUBSYS_TCP, "tcp: epoll setup failed: %s", strerror(errno));
        return CC_ERR_SYSTEM;
    }
    return CC_OK;
}

/*
 * The rendezvous threshold, CCOMM_TCP_RNDV_THRESHOLD=auto: 256 KiB when every
 * rank of this host has a CPU of its own, 1 MiB when they share.
 *
 * 256 KiB (it was 64 KiB until 2026-12-05): messages of 64-255 KiB leave with
 * their payload instead of waiting a round trip for their receive. a/b = time
 * at 64 KiB / time at 256 KiB, medians of 11 launches, 2 ranks, 2026-12-05
 * 21:20 UTC (docs/transports.md):
 *   bench/ab.sh --a build --b build --b-env CCOMM_TCP_RNDV_THRESHOLD=256K
 *               --coll C --sizes "64K 256K 1M 16M" --transport tcp --launches 11
 *   allreduce 1.66 1.00 1.04 1.01, allgather 1.15 1.39 1.00 1.03, broadcast
 *   1.88 1.02 1.00 1.33, alltoall 1.07 1.66 1.02 1.05, reduce_scatter 0.96
 *   1.36 1.03 0.99.
 * Larger messages still wait: 2026-12-02 (threshold 64 KiB against 1 MiB,
 * same command, sizes 1M 4M 16M) the pieces of a pipelined step of 512 KiB
 * and more moved faster after a round trip than pushed ahead of a receive
 * (held aside, copied again): allgather 0.89/0.70/0.90, allreduce
 * 0.98/0.79/0.89 for 1 MiB against 64 KiB.
 * Shared CPUs, 4 ranks (3 launches), 64 KiB against 1 MiB: allreduce/
 * allgather/broadcast at 256 KiB 1.78/1.96/1.65, 1M 1.14/1.23/0.86: with
 * ranks waiting for a CPU each round trip waits for a context switch as well.
 */
static uint64_t pick_rndv(const struct cc__net *net)
{
    uint64_t t = 0;
    /* A bad value never gets here: check_env refused it before the net was made. */
    if (cc__net_rndv_setting(&t) == 0) return t;
    t = net->shares_cpus ? (1u << 20) : (256u << 10);
    cc_log_debug(CC_SUBSYS_TCP, "tcp: rendezvous from %llu bytes (%s)", (unsigned long long)t,
                 net->shares_cpus ? "ranks share this host's cpus" : "a cpu per rank");
    return t;
}

static cc_status_t tcp_connect(struct cc__net *net, int phase)
{
    struct cc__tcp_state *ts = cc__tcp(net);
    if (!ts) return net->tp_peers[CC__TP_TCP] ? CC_ERR_INTERNAL : CC_OK;
    if (phase == 0) {
        ts->rndv = pick_rndv(net);
        CC_CHECK(make_peers(net, ts));
        return ts->ntp ? cc__tcp_mesh(net, ts) : CC_OK;
    }
    return phase == 1 ? arm_epoll(net, ts) : CC_OK;
}

/* The events a sleep waits for on tp's socket: EPOLLIN unless reading is paused (tcp_msg.c),
 * EPOLLOUT only while a send waits (armed all the time it would wake every sleep at once),
 * a hang-up always. */
static void set_events(struct cc__net *net, struct cc__tcp_peer *tp)
{
    struct epoll_event ev = {.events = (tp->rx_paused ? 0u : EPOLLIN) | EPOLLRDHUP |
                                       (tp->want_out ? EPOLLOUT : 0u),
                             .data.ptr = tp};
    epoll_ctl(cc__tcp(net)->epfd, EPOLL_CTL_MOD, tp->fd, &ev);
}

void cc__tcp_want_out(struct cc__net *net, struct cc__tcp_peer *tp, int on)
{
    if (tp->want_out == on || tp->fd < 0) return;
    tp->want_out = on;
    set_events(net, tp);
}

void cc__tcp_pause_rx(struct cc__net *net, struct cc__tcp_peer *tp, int on)
{
    if (tp->rx_paused == on || tp->fd < 0) return;
    tp->rx_paused = on;
    set_events(net, tp);
}

/*
 * The connection is gone. The socket stays open (only leaves the epoll set)
 * until the net is destroyed, so an abort from another thread can never
 * shut down a reused descriptor.
 */
void cc__tcp_drop(struct cc__net *net, struct cc__tcp_peer *tp, const char *cause, cc__req_t *req)
{
    if (!tp->p->lost && tp->fd >= 0) epoll_ctl(cc__tcp(net)->epfd, EPOLL_CTL_DEL, tp->fd, NULL);
    cc__net_peer_lost(net, tp->p, cause, req);
}

/* Any thread: the peers see EOF at once and fail their requests with PEER_LOST. */
static void tcp_abort(struct cc__net *net)
{
    struct cc__tcp_state *ts = cc__tcp(net);
    for (int i = 0; i < ts->ntp; i++)
        if (ts->tp[i].fd >= 0) shutdown(ts->tp[i].fd, SHUT_RDWR);
}

/* Held messages still linked on the net's queues are net.c's to free. */
static void tcp_close(struct cc__net *net)
{
    struct cc__tcp_state *ts = cc__tcp(net);
    for (int i = 0; i < ts->ntp; i++) {
        struct cc__tcp_peer *tp = &ts->tp[i];
        if (tp->fd >= 0) close(tp->fd);
        free(tp->stage);
        free(tp->cts.v);
        if (tp->rx_msg && (tp->rx_msg->bound || tp->rx_msg->discard)) cc__msg_free(net, tp->rx_msg);
        tp->p->priv = NULL;
    }
    if (ts->lfd >= 0) close(ts->lfd);
    if (ts->epfd >= 0) close(ts->epfd);
    free(ts->tp);
    free(ts);
    net->tp_state[CC__TP_TCP] = NULL;
}

static void tcp_describe(struct cc__net *net, struct cc__peer *p, char *buf, size_t len)
{
    struct cc__tcp_peer *tp = p->priv;
    const cc__peer_info_t *in = &net->info[p->rank];
    if (tp)
        snprintf(buf, len, "%s", tp->where);
    else
        snprintf(buf, len, "%s:%u", in->addr, in->port);
}

static void tcp_check(struct cc__net *net)
{
    /* A dead TCP peer shows up as EOF or a reset in progress; nothing to poll here. */
    (void)net;
}

const cc__transport_t cc__transport_tcp = {
    .name = "tcp",
    .setup = tcp_setup,
    .connect = tcp_connect,
    .isend = cc__tcp_isend,
    .irecv = cc__tcp_irecv,
    .progress = cc__tcp_progress,
    .sleep = cc__tcp_sleep,
    .check = tcp_check,
    .cancel = cc__tcp_cancel,
    .fail = cc__tcp_fail,
    .abort = tcp_abort,
    .close = tcp_close,
    .describe = tcp_describe,
};
