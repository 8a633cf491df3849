/*
 * window_tcp.c - the connections and the progress thread of a window over
 * TCP (window_tcp.h).
 *
 * Creation (collective, from window.c): every rank listens on an ephemeral
 * port of the address its communicator's TCP transport publishes (the
 * net's blob: CCOMM_SOCKET_ADDR or the CCOMM_SOCKET_IFNAME pick, never a
 * wildcard), draws a random token, and both travel in the window's
 * exchange over the communicator's (authenticated) net. Then each rank
 * connects to every peer's listener and sends a hello with that peer's
 * token: a connect completes in the listener's backlog, so all of them go
 * out before any rank accepts and nobody waits on anybody. Each rank then
 * accepts one connection per peer; a hello with a wrong token, window,
 * rank or communicator is a stranger, logged and closed. The listener is
 * closed once every peer is in. Then the progress thread starts.
 *
 * The thread polls its end of every R(origin->me) and the stop eventfd,
 * and runs the parser (window_tcp_ops.c) on what is readable. Destroy sends
 * a BYE on every R(me->peer) after the window's barrier and lets the thread
 * run until each peer's BYE arrived (so every put a peer made lands before
 * this rank's destroy returns), or to the deadline; then every fd closes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "engine/comm.h"
#include "native/window.h"
#include "native/window_tcp.h"
#include "transport/tcp.h"

/* An honest peer sends its hello as soon as it is connected (as tcp_connect.c). */
#define HELLO_NS 5000000000ull

static const cc__peer_info_t *info_of(const struct cc_window *w, int rank)
{
    return &w->nc->net->info[rank];
}

cc_status_t cc__wtcp_listen(struct cc_window *w, int *lfd, uint16_t *port, uint64_t *token)
{
    const char *addr = info_of(w, w->rank)->addr;
    int family;
    *lfd = -1;
    int fd = cc__tcp_listen(addr, w->n + 8, port, &family);
    if (fd == -2) {
        cc_log_error(CC_SUBSYS_TCP,
                     "cc_window_create: this rank's socket address \"%s\" is not "
                     "a numeric IP address",
                     addr);
        return CC_ERR_INVALID_ARG;
    }
    if (fd < 0 || getrandom(token, sizeof(*token), 0) != (ssize_t)sizeof(*token)) {
        cc_log_error(CC_SUBSYS_TCP, "cc_window_create: cannot listen on %s for window %u: %s", addr,
                     w->id, strerror(errno));
        if (fd >= 0) close(fd);
        return CC_ERR_SYSTEM;
    }
    *lfd = fd;
    return CC_OK;
}

static void free_tcp(struct cc__wtcp *t)
{
    for (int p = 0; p < t->n; p++) {
        if (t->tx && t->tx[p] >= 0) close(t->tx[p]);
        if (t->rx && t->rx[p].fd >= 0) close(t->rx[p].fd);
    }
    if (t->stop_fd >= 0) close(t->stop_fd);
    free(t->tx);
    free(t->tx_err);
    free(t->tx_seq);
    free(t->rx);
    free(t->sig);
    free(t->pf);
    free(t->pf_rank);
    free(t);
}

static struct cc__wtcp *alloc_tcp(const struct cc_window *w)
{
    struct cc__wtcp *t = calloc(1, sizeof(*t));
    if (!t) return NULL;
    size_t n = (size_t)w->n;
    t->rank = w->rank;
    t->n = w->n;
    t->comm_id = w->comm->id;
    t->comm_name = w->comm->name;
    t->tx = malloc(n * sizeof(*t->tx));
    t->tx_err = calloc(n, sizeof(*t->tx_err));
    t->tx_seq = calloc(n, sizeof(*t->tx_seq));
    t->rx = calloc(n, sizeof(*t->rx));
    t->sig = calloc(n, sizeof(*t->sig));
    t->pf = calloc(n + 1, sizeof(*t->pf));
    t->pf_rank = calloc(n + 1, sizeof(*t->pf_rank));
    t->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    for (int p = 0; t->tx && t->rx && p < w->n; p++)
        t->tx[p] = t->rx[p].fd = -1;
    if (!t->tx || !t->tx_err || !t->tx_seq || !t->rx || !t->sig || !t->pf || !t->pf_rank ||
        t->stop_fd < 0) {
        cc_log_error(CC_SUBSYS_TCP,
                     "cc_window_create: no memory or eventfd for window %u "
                     "over %d ranks",
                     w->id, w->n);
        free_tcp(t);
        return NULL;
    }
    atomic_store(&t->stop_at, UINT64_MAX);
    return t;
}

/* R(me->q): connect to q's window listener and say who we are. */
static cc_status_t connect_one(struct cc_window *w, struct cc__wtcp *t, int q, uint16_t port,
                               uint64_t token, uint64_t deadline)
{
    const char *addr = info_of(w, q)->addr;
    struct sockaddr_storage ss;
    socklen_t sl, el = sizeof(int);
    int fd = -1, err = EINVAL;
    cc_status_t st = CC_ERR_CONNECT;
    if (cc__tcp_sockaddr(addr, port, &ss, &sl) == 0) {
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        err = errno;
    }
    if (fd >= 0) {
        cc__tcp_sockopts(fd);
        err = 0;
        if (connect(fd, (struct sockaddr *)&ss, sl) == 0)
            st = CC_OK;
        else if ((err = errno) == EINPROGRESS &&
                 (st = cc__wtcp_await(fd, POLLOUT, deadline, NULL, -1)) == CC_OK) {
            err = 0;
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
            st = err ? CC_ERR_CONNECT : CC_OK;
        }
    }
    if (st == CC_OK) {
        struct cc__wtcp_hello h = {CC__WTCP_HELLO_MAGIC, t->comm_id, token, w->id, w->rank, q, 0};
        struct iovec iov = {&h, sizeof(h)};
        st = cc__wtcp_write(fd, &iov, 1, 0, deadline, NULL, -1, &err);
    }
    if (st != CC_OK) {
        cc_log_error(CC_SUBSYS_TCP,
                     "cc_window_create: rank %d cannot connect to rank %d's "
                     "window %u listener %s port %u: %s",
                     w->rank, q, w->id, addr, port, err ? strerror(err) : cc_status_name(st));
        if (fd >= 0) close(fd);
        return st == CC_ERR_TIMEOUT ? st : CC_ERR_CONNECT;
    }
    t->tx[q] = fd;
    return CC_OK;
}

/* Why an accepted connection's hello is not a peer's of this window (NULL: it is). */
static const char *hello_problem(const struct cc__wtcp *t, unsigned win, uint64_t token,
                                 const struct cc__wtcp_hello *h)
{
    if (h->magic != CC__WTCP_HELLO_MAGIC) return "not a ccomm window hello";
    if (h->comm_id != t->comm_id || h->win != win) return "another communicator or window";
    if (h->to != t->rank || h->from < 0 || h->from >= t->n || h->from == t->rank)
        return "wrong rank";
    if (h->token != token) return "wrong token"; /* it travelled only through the exchange */
    if (t->rx[h->from].fd >= 0) return "a second connection for that rank";
    return NULL;
}

/* One R(origin->me) per peer; strangers are turned away until the deadline. */
static cc_status_t accept_all(struct cc_window *w, struct cc__wtcp *t, int lfd, uint64_t token,
                              uint64_t deadline)
{
    for (int need = w->n - 1; need > 0;) {
        cc_status_t st = cc__wtcp_await(lfd, POLLIN, deadline, NULL, -1);
        if (st != CC_OK) {
            for (int p = 0; p < w->n; p++)
                if (p != w->rank && t->rx[p].fd < 0)
                    cc_log_error(CC_SUBSYS_TCP,
                                 "cc_window_create: rank %d did not connect to "
                                 "rank %d's window %u listener in time",
                                 p, w->rank, w->id);
            return st;
        }
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), err;
        if (fd < 0) continue;
        struct cc__wtcp_hello h;
        uint64_t now = cc__now_ns();
        uint64_t until = now + HELLO_NS < deadline ? now + HELLO_NS : deadline;
        const char *why = cc__wtcp_read(fd, &h, sizeof(h), until, NULL, &err) != CC_OK
                              ? "no hello"
                              : hello_problem(t, w->id, token, &h);
        if (why) {
            cc_log_warn(CC_SUBSYS_TCP,
                        "cc_window_create: rank %d turned away a connection to "
                        "its window %u listener: %s",
                        w->rank, w->id, why);
            close(fd);
            continue;
        }
        t->rx[h.from].fd = fd;
        need--;
    }
    return CC_OK;
}

/* The thread's sleep, counted (a put and its signal should cost one, test_window.c). */
static int poll_counted(struct cc__wtcp *t, int n, int ms)
{
    atomic_fetch_add_explicit(&t->sleeps, 1, memory_order_relaxed);
    return poll(t->pf, (nfds_t)n, ms);
}

static void *progress(void *arg)
{
    struct cc__wtcp *t = arg;
    for (;;) {
        int n = 1;
        t->pf[0] = (struct pollfd){t->stop_fd, POLLIN, 0};
        for (int p = 0; p < t->n; p++) {
            if (p == t->rank || atomic_load(&t->rx[p].ended) != CC__WTCP_OPEN) continue;
            t->pf[n] = (struct pollfd){t->rx[p].fd, POLLIN, 0};
            t->pf_rank[n++] = p;
        }
        uint64_t stop = atomic_load(&t->stop_at), now = cc__now_ns();
        if ((n == 1 && atomic_load(&t->stopping)) || now >= stop) break;
        /* Sleep until a request, the stop, or the stop's deadline (in slices: no int overflow). */
        uint64_t left = stop - now;
        int ms = stop == UINT64_MAX ? -1 : left > 1000000000u ? 1000 : (int)(left / 1000000u) + 1;
        if (poll_counted(t, n, ms) <= 0) continue;
        if (t->pf[0].revents) {
            uint64_t v;
            if (read(t->stop_fd, &v, sizeof(v)) < 0) { /* drained: stop_at says what to do */
            }
        }
        for (int i = 1; i < n; i++)
            if (t->pf[i].revents) cc__wtcp_rx_step(&t->rx[t->pf_rank[i]]);
    }
    return NULL;
}

/* The parser's view of each origin: this rank's region, its counter, the bell. */
static void arm_rx(struct cc_window *w, struct cc__wtcp *t, void *base)
{
    for (int p = 0; p < w->n; p++) {
        struct cc__wtcp_rx *rx = &t->rx[p];
        rx->origin = p;
        rx->win = w->id;
        rx->base = base;
        rx->size = w->sizes[w->rank];
        rx->sig = &t->sig[p];
        rx->bell = &t->bell;
        rx->sleeping = &t->sleeping;
        rx->stop_fd = t->stop_fd;
        atomic_store(&rx->ended, CC__WTCP_OPEN);
    }
}

cc_status_t cc__wtcp_start(struct cc_window *w, int lfd, uint64_t token, const uint16_t *ports,
                           const uint64_t *tokens, uint64_t deadline_ns)
{
    struct cc__wtcp *t = alloc_tcp(w);
    cc_status_t st = t ? CC_OK : CC_ERR_NO_MEMORY;
    for (int q = 0; q < w->n && st == CC_OK; q++)
        if (q != w->rank) st = connect_one(w, t, q, ports[q], tokens[q], deadline_ns);
    if (st == CC_OK) st = accept_all(w, t, lfd, token, deadline_ns);
    close(lfd); /* nobody can connect later */
    if (st == CC_OK) {
        arm_rx(w, t, (void *)(uintptr_t)w->bases[w->rank]);
        int e = pthread_create(&t->thread, NULL, progress, t);
        if (e) {
            cc_log_error(CC_SUBSYS_TCP,
                         "cc_window_create: cannot start window %u's progress "
                         "thread: %s",
                         w->id, strerror(e));
            st = CC_ERR_SYSTEM;
        }
        t->started = !e;
    }
    if (st != CC_OK) {
        if (t) free_tcp(t);
        return st;
    }
    w->tcp = t;
    return CC_OK;
}

/* Tell the thread to stop at `at` (0: now) and wait for it. */
static void join(struct cc__wtcp *t, uint64_t at)
{
    uint64_t one = 1;
    atomic_store(&t->stop_at, at);
    atomic_store(&t->stopping, 1);
    if (write(t->stop_fd, &one, sizeof(one)) < 0) { /* full counter: it is awake anyway */
    }
    pthread_join(t->thread, NULL);
    t->started = 0;
}

cc_status_t cc__wtcp_stop(struct cc_window *w, uint64_t deadline_ns)
{
    struct cc__wtcp *t = w->tcp;
    if (!t) return CC_OK;
    cc_status_t st = CC_OK;
    for (int p = 0; p < t->n; p++) {
        if (p == t->rank || t->tx[p] < 0 || t->tx_err[p]) continue;
        struct cc__wtcp_hdr h = {CC__WTCP_MAGIC, CC__WTCP_BYE, 0, w->id, ++t->tx_seq[p], 0, 0};
        struct iovec iov = {&h, sizeof(h)};
        int err;
        if (cc__wtcp_write(t->tx[p], &iov, 1, 0, deadline_ns, NULL, -1, &err) != CC_OK)
            cc_log_debug(CC_SUBSYS_TCP, "window %u: no bye to rank %d: %s", w->id, p,
                         strerror(err));
    }
    if (t->started) join(t, deadline_ns);
    for (int p = 0; p < t->n; p++) {
        if (p == t->rank || atomic_load(&t->rx[p].ended) != CC__WTCP_OPEN) continue;
        cc_log_error(CC_SUBSYS_TCP,
                     "cc_window_destroy: rank %d did not end its requests to "
                     "rank %d in window %u by the deadline",
                     p, t->rank, w->id);
        st = CC_ERR_TIMEOUT;
    }
    free_tcp(t);
    w->tcp = NULL;
    return st;
}

void cc__wtcp_abandon(struct cc_window *w)
{
    if (!w->tcp) return;
    if (w->tcp->started) join(w->tcp, 0);
    free_tcp(w->tcp);
    w->tcp = NULL;
}
