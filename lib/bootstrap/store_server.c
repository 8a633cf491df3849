/*
 * store_server.c - the store server's thread: listening, accepting, reading
 * frames from non-blocking sockets with epoll, writing replies, timers.
 *
 * Requests themselves are handled in store_server_ops.c. A misbehaving
 * client (bad frame, wrong key, too slow to authenticate) loses its own
 * connection; the server keeps serving everyone else.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/store_server_int.h"
#include "base/clock.h"
#include "base/log.h"

#define SRV_MAX_EVENTS     128
#define SRV_ACCEPT_BATCH   256
#define SRV_ACCEPT_PAUSE   100000000ull /* ns to stop accepting after hitting the fd limit */
#define SRV_TICK_MS        1000         /* longest sleep of the loop */
#define SRV_KEEP_BUF       65536u       /* buffers above this are freed after each frame */
#define SRV_INITIAL_IN_CAP 256u
#define SRV_WARN_WINDOW_NS 5000000000ull /* warnings about refused clients: per 5 s ... */
#define SRV_WARN_MAX       10            /* ... at most this many */

static int busy(const struct srv_conn *c)
{
    return c->park.op != 0 || c->out_off < c->out_len;
}

/* Register the epoll interest the connection's state calls for. */
static void update_events(struct cc__store_server *s, struct srv_conn *c)
{
    if (c->dead) return;
    uint32_t want = EPOLLRDHUP;
    if (!busy(c)) want |= EPOLLIN;
    if (c->out_off < c->out_len) want |= EPOLLOUT;
    if (want == c->events) return;
    struct epoll_event ev = {.events = want, .data.ptr = c};
    if (epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0) c->events = want;
}

void cc__srv_count(struct cc__store_server *s, int own_delta)
{
    s->nown = (size_t)((long)s->nown + own_delta);
    atomic_store_explicit(&s->clients, s->nconns, memory_order_relaxed);
    atomic_store_explicit(&s->peers, s->nconns - s->nown, memory_order_relaxed);
}

static void unauth_unlink(struct cc__store_server *s, struct srv_conn *c)
{
    if (c->uprev)
        c->uprev->unext = c->unext;
    else
        s->unauth_head = c->unext;
    if (c->unext)
        c->unext->uprev = c->uprev;
    else
        s->unauth_tail = c->uprev;
    c->uprev = c->unext = NULL;
    s->nunauth--;
}

void cc__srv_authed(struct cc__store_server *s, struct srv_conn *c)
{
    c->authed = 1;
    unauth_unlink(s, c);
}

/* Say how many warnings the last window held back, once it is over. */
static void warn_window_roll(struct cc__store_server *s, uint64_t now)
{
    if (now - s->warn_window_ns < SRV_WARN_WINDOW_NS) return;
    if (s->warn_suppressed)
        cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                    "store %s: %llu more refused or dropped clients in the last %llu s were not "
                    "logged one by one",
                    s->name, (unsigned long long)s->warn_suppressed,
                    (unsigned long long)((now - s->warn_window_ns) / 1000000000ull));
    s->warn_window_ns = now;
    s->warn_count = 0;
    s->warn_suppressed = 0;
}

int cc__srv_warn_ok(struct cc__store_server *s, const struct srv_conn *c)
{
    if (c->authed) return 1;
    warn_window_roll(s, cc__now_ns());
    if (s->warn_count < SRV_WARN_MAX) {
        s->warn_count++;
        return 1;
    }
    s->warn_suppressed++;
    return 0;
}

void cc__srv_kill(struct cc__store_server *s, struct srv_conn *c)
{
    if (c->dead) return;
    c->dead = 1;
    cc__srv_unpark(s, c);
    cc__srv_will_fire(s, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    s->nconns--;
    cc__srv_count(s, c->own ? -1 : 0);
    if (!c->authed) unauth_unlink(s, c);
    /* Leave the epoll set explicitly: close() alone does not when a forked child still holds
     * the descriptor, and a stale event would then carry a pointer to freed memory. */
    epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->next = s->graveyard;
    s->graveyard = c;
}

static void free_graveyard(struct cc__store_server *s)
{
    while (s->graveyard) {
        struct srv_conn *c = s->graveyard;
        s->graveyard = c->next;
        free(c->in);
        free(c->out);
        free(c->will);
        free(c);
    }
}

/* Write as much of the pending reply as the socket takes. -1 if the connection died. */
static int conn_flush(struct cc__store_server *s, struct srv_conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            update_events(s, c);
            return 0;
        } else {
            char eb[128];
            cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: write to client %s failed: %s", s->name,
                         c->addr, cc__store_errstr(errno, eb, sizeof(eb)));
            cc__srv_kill(s, c);
            return -1;
        }
    }
    free(c->out);
    c->out = NULL;
    c->out_len = c->out_off = 0;
    update_events(s, c);
    return 0;
}

int cc__srv_send(struct cc__store_server *s, struct srv_conn *c, struct cc__store_wr *w)
{
    if (cc__store_wr_end(w) != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: cannot build a reply for client %s: out of "
                     "memory; closing its connection",
                     s->name, c->addr);
        cc__store_wr_free(w);
        cc__srv_kill(s, c);
        return -1;
    }
    free(c->out);
    c->out = w->buf;
    c->out_len = w->len;
    c->out_off = 0;
    w->buf = NULL;
    return conn_flush(s, c);
}

void cc__srv_frame_done(struct cc__store_server *s, struct srv_conn *c)
{
    c->in_len = 0;
    c->have_hdr = 0;
    if (c->in_cap > SRV_KEEP_BUF) { /* a big frame passed: give its memory back */
        uint8_t *p = realloc(c->in, SRV_INITIAL_IN_CAP);
        if (p) c->in = p, c->in_cap = SRV_INITIAL_IN_CAP;
    }
    update_events(s, c);
}

static int ensure_in(struct srv_conn *c, uint32_t need)
{
    if (need <= c->in_cap) return 0;
    uint8_t *p = realloc(c->in, need);
    if (!p) return -1;
    c->in = p;
    c->in_cap = need;
    return 0;
}

/* Read at most up to the end of the current frame. 1 = more wanted, 0 = stop, -1 = killed. */
static int conn_recv(struct cc__store_server *s, struct srv_conn *c, uint32_t need)
{
    char eb[128];
    if (ensure_in(c, need) != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: no memory for a %u-byte frame from client %s;"
                     " closing its connection",
                     s->name, need, c->addr);
        cc__srv_kill(s, c);
        return -1;
    }
    ssize_t n = recv(c->fd, c->in + c->in_len, need - c->in_len, 0);
    if (n > 0) {
        c->in_len += (uint32_t)n;
        return 1;
    }
    if (n < 0 && errno == EINTR) return 1;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n == 0 && c->in_len > 0 && cc__srv_warn_ok(s, c))
        cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                    "store %s: client %s closed its connection in the middle "
                    "of a frame (%u of %u bytes): truncated frame",
                    s->name, c->addr, c->in_len, need);
    else if (n == 0)
        cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: client %s closed its connection", s->name,
                     c->addr);
    else
        cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: read from client %s failed: %s", s->name,
                     c->addr, cc__store_errstr(errno, eb, sizeof(eb)));
    cc__srv_kill(s, c);
    return -1;
}

/* Read and handle frames until the socket is drained or the connection is busy. */
static void conn_input(struct cc__store_server *s, struct srv_conn *c)
{
    while (!c->dead && !busy(c)) {
        uint32_t need = CC__STORE_HDR_SIZE + (c->have_hdr ? c->hdr.plen : 0);
        if (c->in_len < need) {
            if (conn_recv(s, c, need) <= 0) return;
            continue;
        }
        if (!c->have_hdr) {
            char why[160];
            cc__store_hdr_decode(c->in, &c->hdr);
            uint32_t limit = c->authed ? CC__STORE_MAX_REQUEST : CC__STORE_MAX_PREAUTH;
            if (cc__store_hdr_check(&c->hdr, limit, why, sizeof(why)) != 0) {
                if (cc__srv_warn_ok(s, c))
                    cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                                "store %s: client %s sent a malformed frame: %s;"
                                " closing its connection",
                                s->name, c->addr, why);
                cc__srv_kill(s, c);
                return;
            }
            c->have_hdr = 1;
            continue;
        }
        if (cc__srv_request(s, c) != 0) cc__srv_kill(s, c);
    }
}

static void conn_event(struct cc__store_server *s, struct srv_conn *c, uint32_t ev)
{
    if (c->dead) return;
    if ((ev & EPOLLOUT) && conn_flush(s, c) != 0) return;
    if ((ev & EPOLLIN) && !busy(c)) conn_input(s, c);
    if (c->dead) return;
    /* A peer that hangs up while its request waits has nobody to answer to. */
    if ((ev & (EPOLLERR | EPOLLHUP)) || ((ev & EPOLLRDHUP) && busy(c))) {
        cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: client %s hung up", s->name, c->addr);
        cc__srv_kill(s, c);
        return;
    }
    update_events(s, c);
}

/* Send the HELLO that opens the handshake: the nonce and whether a key is required. */
static void conn_hello(struct cc__store_server *s, struct srv_conn *c)
{
    struct cc__store_wr w;
    cc__store_wr_begin(&w, CC__STORE_OP_HELLO, 0);
    cc__store_wr_field(&w, c->nonce, CC__STORE_NONCE);
    cc__store_wr_u8(&w, s->key[0] ? CC__STORE_MODE_KEYED : CC__STORE_MODE_OPEN);
    cc__srv_send(s, c, &w);
}

static void conn_new(struct cc__store_server *s, int fd, const struct sockaddr *sa)
{
    struct srv_conn *c = calloc(1, sizeof(*c));
    if (!c || !(c->in = malloc(SRV_INITIAL_IN_CAP)) ||
        cc__store_random(c->nonce, CC__STORE_NONCE) != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: cannot set up a new connection: out of "
                     "memory or no randomness; closing it",
                     s->name);
        if (c) free(c->in);
        free(c);
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    c->in_cap = SRV_INITIAL_IN_CAP;
    cc__store_sockaddr_str(sa, c->addr, sizeof(c->addr));
    c->accept_ns = cc__now_ns();
    c->auth_deadline_ns = cc__deadline_after_ms(CC__STORE_AUTH_TIMEOUT_MS);
    c->events = EPOLLIN | EPOLLRDHUP;
    struct epoll_event ev = {.events = c->events, .data.ptr = c};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        free(c->in);
        free(c);
        close(fd);
        return;
    }
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    s->nconns++;
    cc__srv_count(s, 0);
    s->nunauth++;
    c->uprev = s->unauth_tail; /* newest last: the list is in deadline order */
    if (s->unauth_tail)
        s->unauth_tail->unext = c;
    else
        s->unauth_head = c;
    s->unauth_tail = c;
    cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: client %s connected (%zu connections)", s->name,
                 c->addr, s->nconns);
    conn_hello(s, c);
}

static void set_listen_events(struct cc__store_server *s, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = &s->lfd};
    epoll_ctl(s->epfd, EPOLL_CTL_MOD, s->lfd, &ev);
}

static void pause_accepts(struct cc__store_server *s, uint64_t until_ns)
{
    set_listen_events(s, 0);
    s->accept_resume_ns = until_ns;
}

/*
 * Room for one more unauthenticated connection? At the cap, the oldest one
 * goes if it has had its moment to answer; otherwise accepting waits until it
 * has (logins in progress come first). Returns 1 if a connection may be
 * accepted now.
 */
static int unauth_room(struct cc__store_server *s)
{
    if (s->nunauth < CC__STORE_MAX_UNAUTH) return 1;
    struct srv_conn *old = s->unauth_head;
    uint64_t ripe = old->accept_ns + (uint64_t)CC__STORE_LOGIN_MIN_MS * 1000000u;
    if (cc__now_ns() < ripe) {
        pause_accepts(s, ripe);
        return 0;
    }
    if (cc__srv_warn_ok(s, old))
        cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                    "store %s: %zu connections are not authenticated; dropping the oldest, client "
                    "%s, to accept new ones",
                    s->name, s->nunauth, old->addr);
    cc__srv_kill(s, old);
    return 1;
}

static void srv_accept(struct cc__store_server *s)
{
    for (int i = 0; i < SRV_ACCEPT_BATCH && unauth_room(s); i++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            conn_new(s, fd, (struct sockaddr *)&ss);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        char eb[128];
        /* Out of descriptors: stop accepting for a moment instead of spinning. */
        cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                    "store %s: cannot accept a connection: %s (%zu open); "
                    "pausing accepts for 100 ms (raise `ulimit -n` for large jobs)",
                    s->name, cc__store_errstr(errno, eb, sizeof(eb)), s->nconns);
        pause_accepts(s, cc__now_ns() + SRV_ACCEPT_PAUSE);
        return;
    }
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Milliseconds until the earliest timer (parked deadline, auth deadline, accept pause). */
static int next_timeout_ms(const struct cc__store_server *s, uint64_t now)
{
    uint64_t next = now + (uint64_t)SRV_TICK_MS * 1000000u;
    for (const struct srv_conn *c = s->parked; c; c = c->pnext)
        next = min_u64(next, c->park.deadline_ns);
    if (s->unauth_head) next = min_u64(next, s->unauth_head->auth_deadline_ns);
    if (s->accept_resume_ns) next = min_u64(next, s->accept_resume_ns);
    return next <= now ? 0 : (int)((next - now + 999999u) / 1000000u);
}

static void run_timers(struct cc__store_server *s, uint64_t now)
{
    cc__srv_expire(s, now);
    while (s->unauth_head && s->unauth_head->auth_deadline_ns <= now) {
        struct srv_conn *c = s->unauth_head;
        if (cc__srv_warn_ok(s, c))
            cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                        "store %s: client %s did not authenticate within %d ms; "
                        "closing its connection",
                        s->name, c->addr, CC__STORE_AUTH_TIMEOUT_MS);
        cc__srv_kill(s, c);
    }
    warn_window_roll(s, now);
    if (s->accept_resume_ns && now >= s->accept_resume_ns) {
        s->accept_resume_ns = 0;
        set_listen_events(s, EPOLLIN);
    }
}

static void *srv_main(void *arg)
{
    struct cc__store_server *s = arg;
    struct epoll_event ev[SRV_MAX_EVENTS];
    for (int stop = 0; !stop;) {
        int n = epoll_wait(s->epfd, ev, SRV_MAX_EVENTS, next_timeout_ms(s, cc__now_ns()));
        if (n < 0 && errno != EINTR) {
            char eb[128];
            cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: epoll_wait failed: %s; the server stops",
                         s->name, cc__store_errstr(errno, eb, sizeof(eb)));
            break;
        }
        int accept_now = 0;
        for (int i = 0; i < n; i++) {
            if (ev[i].data.ptr == &s->wakefd)
                stop = 1;
            else if (ev[i].data.ptr == &s->lfd)
                accept_now = 1;
            else
                conn_event(s, ev[i].data.ptr, ev[i].events);
        }
        /* After the connections' own events: finishing a login comes before a new one. */
        if (accept_now && !stop) srv_accept(s);
        run_timers(s, cc__now_ns());
        /* Waking may close more connections (a failed reply), whose wills wake again. */
        while (s->wills_fired) {
            s->wills_fired = 0;
            cc__srv_wake_all(s);
        }
        free_graveyard(s);
    }
    return NULL;
}

/* Bind and listen on host:port. Logs and returns BUSY, INVALID_ARG or SYSTEM on failure. */
static cc_status_t srv_listen(struct cc__store_server *s, const char *host, int port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[16], eb[128];
    snprintf(portstr, sizeof(portstr), "%d", port);
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store: cannot resolve listen address %s: %s", s->name,
                     gai_strerror(gai));
        return CC_ERR_INVALID_ARG;
    }
    int err = 0;
    for (struct addrinfo *ai = res; ai && s->lfd < 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0) {
            err = errno;
            continue;
        }
        /* Lets a restarted server reuse a port in TIME_WAIT; a live listener still blocks it. */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
            s->lfd = fd;
            break;
        }
        err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (s->lfd >= 0) return CC_OK;
    if (err == EADDRINUSE) {
        /* Not always an error: a rank that may host the store finds one already there. The
         * caller decides and says so (ccrun, cc_comm_init). */
        cc_log_info(CC_SUBSYS_BOOTSTRAP, "store: cannot listen on %s: %s", s->name,
                    cc__store_errstr(err, eb, sizeof(eb)));
        return CC_ERR_BUSY;
    }
    cc_log_error(CC_SUBSYS_BOOTSTRAP, "store: cannot listen on %s: %s", s->name,
                 cc__store_errstr(err, eb, sizeof(eb)));
    return err == EADDRNOTAVAIL ? CC_ERR_INVALID_ARG : CC_ERR_SYSTEM;
}

/* The port actually bound (port 0 asks the kernel for a free one). */
static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)(void *)&ss)->sin_port);
    return ntohs(((struct sockaddr_in6 *)(void *)&ss)->sin6_port);
}

static cc_status_t srv_setup_loop(struct cc__store_server *s)
{
    char eb[128];
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &s->lfd};
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &s->wakefd};
    if (s->epfd < 0 || s->wakefd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &lev) != 0 ||
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd, &wev) != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: cannot set up epoll: %s", s->name,
                     cc__store_errstr(errno, eb, sizeof(eb)));
        return CC_ERR_SYSTEM;
    }
    /* The thread blocks every signal so that they go to the application's threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, srv_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: cannot start the server thread: %s", s->name,
                     cc__store_errstr(rc, eb, sizeof(eb)));
        return CC_ERR_SYSTEM;
    }
    return CC_OK;
}

static void srv_free(struct cc__store_server *s)
{
    while (s->conns)
        cc__srv_kill(s, s->conns);
    free_graveyard(s);
    if (s->lfd >= 0) close(s->lfd);
    if (s->wakefd >= 0) close(s->wakefd);
    if (s->epfd >= 0) close(s->epfd);
    cc__kv_free(&s->kv);
    free(s->key);
    free(s);
}

cc_status_t cc__store_server_start(const char *host, int port, const char *job_key,
                                   cc__store_server_t **out)
{
    if (!out || !host || !*host || port < 0 || port > 65535) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store: cannot start a server on host \"%s\" port %d%s:"
                     " invalid argument",
                     host ? host : "(null)", port, out ? "" : " (out is NULL)");
        return CC_ERR_INVALID_ARG;
    }
    struct cc__store_server *s = calloc(1, sizeof(*s));
    if (!s || !(s->key = strdup(job_key ? job_key : "")) || cc__kv_init(&s->kv) != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store: cannot start a server: out of memory");
        if (s) free(s->key);
        free(s);
        return CC_ERR_NO_MEMORY;
    }
    s->lfd = s->wakefd = s->epfd = -1;
    snprintf(s->name, sizeof(s->name), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    cc_status_t st = srv_listen(s, host, port);
    if (st == CC_OK) {
        s->port = bound_port(s->lfd);
        snprintf(s->name, sizeof(s->name), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, s->port);
        st = srv_setup_loop(s);
    }
    if (st != CC_OK) {
        srv_free(s);
        return st;
    }
    if (!s->key[0])
        cc_log_warn(CC_SUBSYS_BOOTSTRAP,
                    "store %s: no job key; authentication is off and any "
                    "client that reaches this address is accepted",
                    s->name);
    cc_log_info(CC_SUBSYS_BOOTSTRAP, "store listening on %s (authentication %s)", s->name,
                s->key[0] ? "on" : "off");
    *out = s;
    return CC_OK;
}

int cc__store_server_port(const cc__store_server_t *server)
{
    return server ? server->port : -1;
}

size_t cc__store_server_clients(cc__store_server_t *server)
{
    return server ? atomic_load_explicit(&server->clients, memory_order_relaxed) : 0;
}

size_t cc__store_server_peers(cc__store_server_t *server)
{
    return server ? atomic_load_explicit(&server->peers, memory_order_relaxed) : 0;
}

size_t cc__store_server_keys(cc__store_server_t *server)
{
    return server ? atomic_load_explicit(&server->kv.count, memory_order_relaxed) : 0;
}

void cc__store_server_stop(cc__store_server_t *server)
{
    if (!server) return;
    uint64_t one = 1;
    ssize_t w = write(server->wakefd, &one, sizeof(one));
    (void)w;
    pthread_join(server->thread, NULL);
    cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: stopped with %zu connections and %zu keys",
                 server->name, server->nconns, server->kv.count);
    srv_free(server);
}
