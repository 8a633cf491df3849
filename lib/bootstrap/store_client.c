/*
 * store_client.c - the store client's connection: connect with retries,
 * the job-key handshake, one request/reply exchange at a time with
 * deadlines, views, and closing.
 *
 * The socket is blocking, but every read and write first polls with the
 * time left, so no call waits longer than its deadline. After any transport
 * failure the stream may be out of step with the server, so the connection
 * is closed and every later call fails fast with CC_ERR_PEER_LOST.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "bootstrap/store_client_int.h"
#include "base/clock.h"
#include "base/log.h"

#define IO_MIN_MS        10000      /* the least time the server gets to answer beyond a wait */
#define RETRY_FIRST_MS   10         /* connect retries back off from here ... */
#define RETRY_MAX_MS     250        /* ... to here */
#define RBUF_KEEP        (1u << 20) /* reply buffers above this are freed after use */
#define ATTEMPT_MIN_MS   100        /* a connect attempt gets at least this ... */
#define HANDSHAKE_MIN_MS 1000       /* ... and a handshake this, even at the connect deadline */

/* Wait until fd is ready for `events` or the deadline passes. 0 ready, else -errno. */
static int io_wait(int fd, short events, uint64_t deadline)
{
    for (;;) {
        uint64_t now = cc__now_ns();
        if (now >= deadline) return -ETIMEDOUT;
        uint64_t left_ms = (deadline - now + 999999u) / 1000000u;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left_ms > 60000 ? 60000 : (int)left_ms);
        if (n > 0) return 0;
        if (n < 0 && errno != EINTR) return -errno;
    }
}

static int io_send(int fd, const uint8_t *p, size_t len, uint64_t deadline)
{
    while (len) {
        int rc = io_wait(fd, POLLOUT, deadline);
        if (rc) return rc;
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0)
            p += n, len -= (size_t)n;
        else if (n < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
    }
    return 0;
}

/* Read exactly len bytes. The server closing the connection reads as -ECONNRESET. */
static int io_recv(int fd, uint8_t *p, size_t len, uint64_t deadline)
{
    while (len) {
        int rc = io_wait(fd, POLLIN, deadline);
        if (rc) return rc;
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0)
            p += n, len -= (size_t)n;
        else if (n == 0)
            return -ECONNRESET;
        else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)
            return -errno;
    }
    return 0;
}

/*
 * Receive one frame answering `op` into conn->rbuf and split its fields.
 * During the handshake the peer is not trusted yet, so its frames must be
 * tiny; `max` is the payload limit. 0, -errno, or -EPROTO with the reason in `why`.
 */
static int recv_frame(struct cc__store_conn *c, uint8_t op, uint32_t max, uint64_t deadline,
                      struct cc__store_reply *rep, char *why, size_t whylen)
{
    uint8_t raw[CC__STORE_HDR_SIZE];
    struct cc__store_hdr h;
    int rc = io_recv(c->fd, raw, sizeof(raw), deadline);
    if (rc) return rc;
    cc__store_hdr_decode(raw, &h);
    if (cc__store_hdr_check(&h, max, why, whylen) != 0) return -EPROTO;
    if (h.op != op) {
        snprintf(why, whylen, "reply with opcode %u to a request with opcode %u", h.op, op);
        return -EPROTO;
    }
    if (h.plen > c->rcap) {
        uint8_t *b = realloc(c->rbuf, h.plen);
        if (!b) return -ENOMEM;
        c->rbuf = b, c->rcap = h.plen;
    }
    if ((rc = io_recv(c->fd, c->rbuf, h.plen, deadline))) return rc;
    rep->status = h.status;
    rep->nfields = h.nfields;
    rep->f = rep->small;
    if (h.nfields > 4 && !(rep->f = malloc(h.nfields * sizeof(*rep->f)))) return -ENOMEM;
    if (cc__store_fields(c->rbuf, h.plen, h.nfields, rep->f, why, whylen) != 0) return -EPROTO;
    return 0;
}

static void reply_free(struct cc__store_reply *rep)
{
    if (rep->f != rep->small) free(rep->f);
    rep->f = rep->small;
    rep->nfields = 0;
}

static void conn_break(struct cc__store_conn *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

/* --- handshake --- */

/* Send AUTH with our nonce and proof; check the server's proof. */
static cc_status_t auth_exchange(struct cc__store_conn *c, const char *key, const uint8_t *snonce,
                                 uint64_t deadline, char *err, size_t errlen)
{
    uint8_t cnonce[CC__STORE_NONCE], mac[CC__STORE_MAC], smac[CC__STORE_MAC];
    struct cc__store_reply rep = {0};
    struct cc__store_wr w;
    if ((c->aux ? cc__store_aux_nonce(cnonce) : cc__store_random(cnonce, sizeof(cnonce))) != 0 ||
        (*key && cc__store_mac(key, snonce, cnonce, mac) != 0)) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: libcrypto failed to make the handshake",
                     c->addr);
        return CC_ERR_SYSTEM;
    }
    cc__store_wr_begin(&w, CC__STORE_OP_AUTH, 0);
    cc__store_wr_field(&w, cnonce, sizeof(cnonce));
    cc__store_wr_field(&w, mac, *key ? sizeof(mac) : 0);
    int rc = cc__store_wr_end(&w) ? -ENOMEM : io_send(c->fd, w.buf, w.len, deadline);
    cc__store_wr_free(&w);
    if (!rc)
        rc = recv_frame(c, CC__STORE_OP_AUTH, CC__STORE_MAX_PREAUTH, deadline, &rep, err, errlen);
    cc_status_t st = CC_OK;
    if (rc) {
        if (rc != -EPROTO) cc__store_errstr(-rc, err, errlen);
        st = CC_ERR_CONNECT; /* the caller retries */
    } else if (rep.status == CC_ERR_AUTH) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s refused this process: %s", c->addr,
                     *key ? "wrong job key (CCOMM_JOB_KEY differs from the store's)"
                          : "it requires a job key and CCOMM_JOB_KEY is empty");
        st = CC_ERR_AUTH;
    } else if (rep.status != CC_OK || rep.nfields != 1 ||
               rep.f[0].len != (*key ? CC__STORE_MAC : 0u)) {
        snprintf(err, errlen, "malformed handshake reply (status %d, %u fields)", rep.status,
                 rep.nfields);
        st = CC_ERR_CONNECT;
    } else if (*key && (cc__store_mac(key, cnonce, snonce, smac) != 0 ||
                        CRYPTO_memcmp(smac, rep.f[0].p, CC__STORE_MAC) != 0)) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s failed to prove the job key: it is not this "
                     "job's store",
                     c->addr);
        st = CC_ERR_AUTH;
    }
    reply_free(&rep);
    return st;
}

/* Read HELLO and authenticate. CC_OK, CC_ERR_AUTH (final) or CC_ERR_CONNECT (retry; err says why).
 */
static cc_status_t handshake(struct cc__store_conn *c, const char *key, uint64_t deadline,
                             char *err, size_t errlen)
{
    struct cc__store_reply rep = {0};
    int rc = recv_frame(c, CC__STORE_OP_HELLO, CC__STORE_MAX_PREAUTH, deadline, &rep, err, errlen);
    if (rc) {
        if (rc != -EPROTO) cc__store_errstr(-rc, err, errlen);
        reply_free(&rep);
        return CC_ERR_CONNECT;
    }
    if (rep.nfields != 2 || rep.f[0].len != CC__STORE_NONCE || rep.f[1].len != 1) {
        snprintf(err, errlen, "malformed greeting (%u fields): not a ccomm store?", rep.nfields);
        reply_free(&rep);
        return CC_ERR_CONNECT;
    }
    uint8_t snonce[CC__STORE_NONCE];
    memcpy(snonce, rep.f[0].p, sizeof(snonce));
    int keyed = rep.f[1].p[0] == CC__STORE_MODE_KEYED;
    reply_free(&rep);
    if (!keyed && *key) {
        /* A store without the key cannot prove it belongs to this job. */
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s does not authenticate (it has no job key) but"
                     " this process has CCOMM_JOB_KEY set; refusing to use it",
                     c->addr);
        return CC_ERR_AUTH;
    }
    return auth_exchange(c, key, snonce, deadline, err, errlen);
}

/* --- connect --- */

/* One connect attempt to every address of host:port. Returns fd, or -1 with err set. */
static int connect_once(const char *host, int port, uint64_t deadline, int *bad_name, char *err,
                        size_t errlen)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char portstr[16];
    snprintf(portstr, sizeof(portstr), "%d", port);
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) {
        *bad_name = gai != EAI_AGAIN && gai != EAI_SYSTEM;
        snprintf(err, errlen, "cannot resolve \"%.64s\": %s", host, gai_strerror(gai));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int rc = fd < 0 ? -errno : 0;
        if (!rc && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)
            rc = errno == EINPROGRESS ? io_wait(fd, POLLOUT, deadline) : -errno;
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (!rc && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr) rc = -soerr;
        if (rc) {
            cc__store_errstr(-rc, err, errlen);
            if (fd >= 0) close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        int one = 1;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

static void sleep_ms(uint64_t ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Connect and authenticate, retrying until the deadline. */
static cc_status_t conn_open(struct cc__store_conn *c, const char *host, int port, const char *key,
                             int64_t timeout_ms)
{
    uint64_t deadline = cc__deadline_after_ms(timeout_ms), backoff = RETRY_FIRST_MS;
    char err[200] = "no attempt made";
    for (;;) {
        int bad_name = 0;
        /* Each attempt gets a moment even at the deadline, so a refusal is seen as one. */
        uint64_t floor = cc__deadline_after_ms(ATTEMPT_MIN_MS);
        c->fd = connect_once(host, port, deadline > floor ? deadline : floor, &bad_name, err,
                             sizeof(err));
        if (bad_name) {
            cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: %s", c->addr, err);
            return CC_ERR_INVALID_ARG;
        }
        if (c->fd >= 0) {
            uint64_t hs = cc__deadline_after_ms(HANDSHAKE_MIN_MS);
            cc_status_t st = handshake(c, key, deadline > hs ? deadline : hs, err, sizeof(err));
            if (st == CC_OK) return CC_OK;
            conn_break(c);
            if (st != CC_ERR_CONNECT) return st;
        }
        uint64_t now = cc__now_ns();
        if (now >= deadline) break;
        uint64_t left = (deadline - now) / 1000000u;
        sleep_ms(backoff < left ? backoff : left);
        backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : backoff * 2;
    }
    cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s unreachable after %lld ms: %s", c->addr,
                 (long long)timeout_ms, err);
    return CC_ERR_TIMEOUT;
}

static void conn_unref(struct cc__store_conn *c)
{
    if (atomic_fetch_sub(&c->refs, 1) != 1) return;
    conn_break(c);
    pthread_mutex_destroy(&c->lock);
    free(c->rbuf);
    free(c);
}

static cc_status_t connect_as(const char *addr, const char *job_key, int64_t timeout_ms, int aux,
                              cc__store_t **out)
{
    char host[256];
    int port;
    if (!out || !addr || timeout_ms < 0 ||
        cc__store_split_addr(addr, host, sizeof(host), &port) != 0) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store: cannot connect to \"%s\" (timeout %lld ms): "
                     "expected host:port with a port in 1..65535 and a timeout >= 0",
                     addr ? addr : "(null)", (long long)timeout_ms);
        return CC_ERR_INVALID_ARG;
    }
    struct cc__store *s = calloc(1, sizeof(*s));
    struct cc__store_conn *c = calloc(1, sizeof(*c));
    if (!s || !c) {
        free(s), free(c);
        return CC_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&c->lock, NULL);
    atomic_init(&c->refs, 1);
    snprintf(c->addr, sizeof(c->addr), "%s", addr);
    c->io_ms = timeout_ms > IO_MIN_MS ? timeout_ms : IO_MIN_MS;
    c->aux = aux;
    s->conn = c;
    cc_status_t st = conn_open(c, host, port, job_key ? job_key : "", timeout_ms);
    if (st != CC_OK) {
        conn_unref(c);
        free(s);
        return st;
    }
    cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store %s: connected and authenticated", addr);
    *out = s;
    return CC_OK;
}

cc_status_t cc__store_connect(const char *addr, const char *job_key, int64_t timeout_ms,
                              cc__store_t **out)
{
    return connect_as(addr, job_key, timeout_ms, 0, out);
}

cc_status_t cc__store_connect_aux(const char *addr, const char *job_key, int64_t timeout_ms,
                                  cc__store_t **out)
{
    return connect_as(addr, job_key, timeout_ms, 1, out);
}

void cc__store_close(cc__store_t *store)
{
    if (!store) return;
    conn_unref(store->conn);
    free(store);
}

cc_status_t cc__store_view(cc__store_t *base, const char *prefix, cc__store_t **out)
{
    size_t n = prefix ? strlen(prefix) : 0;
    if (!base || !prefix || !out || base->plen + n >= CC__STORE_MAX_KEY) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store: cannot make a view with prefix \"%.64s\" (%zu "
                     "bytes with its base's): invalid argument (prefixes stay under %u bytes)",
                     prefix ? prefix : "(null)", base && prefix ? base->plen + n : 0,
                     CC__STORE_MAX_KEY);
        return CC_ERR_INVALID_ARG;
    }
    struct cc__store *v = calloc(1, sizeof(*v));
    if (!v) return CC_ERR_NO_MEMORY;
    memcpy(v->prefix, base->prefix, base->plen);
    memcpy(v->prefix + base->plen, prefix, n + 1);
    v->plen = base->plen + n;
    v->conn = base->conn;
    atomic_fetch_add(&v->conn->refs, 1);
    *out = v;
    return CC_OK;
}

cc_status_t cc__store_local_addr(const cc__store_t *store, char *buf, size_t buflen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char text[80], eb[128];
    if (!store || !buf || buflen == 0) return CC_ERR_INVALID_ARG;
    pthread_mutex_lock(&store->conn->lock);
    int fd = store->conn->fd;
    int rc = fd < 0 ? -ENOTCONN : getsockname(fd, (struct sockaddr *)&ss, &sl) ? -errno : 0;
    pthread_mutex_unlock(&store->conn->lock);
    if (rc) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: cannot read the local address: %s",
                     store->conn->addr, cc__store_errstr(-rc, eb, sizeof(eb)));
        return CC_ERR_PEER_LOST;
    }
    cc__store_sockaddr_str((struct sockaddr *)&ss, text, sizeof(text));
    /* Keep the IP only: drop ":port" and the brackets of an IPv6 address. */
    char *colon = strrchr(text, ':');
    if (colon) *colon = '\0';
    const char *ip = text;
    if (text[0] == '[') ip = text + 1, text[strlen(text) - 1] = '\0';
    if (strlen(ip) >= buflen) return CC_ERR_INVALID_ARG;
    memcpy(buf, ip, strlen(ip) + 1);
    return CC_OK;
}

/* --- one request/reply exchange --- */

cc_status_t cc__store_key_field(const cc__store_t *s, struct cc__store_wr *w, const char *key,
                                const char *op)
{
    size_t n = key ? strlen(key) : 0;
    if (!key || n == 0 || s->plen + n > CC__STORE_MAX_KEY) {
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: key \"%s%.64s\" is %zu bytes with its prefix"
                     " (allowed 1 to %u)",
                     op, s->prefix, key ? key : "(null)", s->plen + n, CC__STORE_MAX_KEY);
        return CC_ERR_INVALID_ARG;
    }
    cc__store_wr_field2(w, s->prefix, s->plen, key, n);
    return CC_OK;
}

cc_status_t cc__store_bad_reply(cc__store_t *s, const char *op, const char *key, const char *why)
{
    cc_log_error(CC_SUBSYS_BOOTSTRAP,
                 "store %s: malformed reply to %s \"%s%s\": %s; closing the "
                 "connection",
                 s->conn->addr, op, s->prefix, key ? key : "", why);
    conn_break(s->conn);
    return CC_ERR_PROTOCOL;
}

cc_status_t cc__store_call(cc__store_t *s, struct cc__store_wr *req, int64_t wait_ms,
                           const char *key, struct cc__store_reply *rep)
{
    struct cc__store_conn *c = s->conn;
    char why[200], ob[16];
    uint8_t op = req->buf ? req->buf[5] : 0;
    const char *opname = cc__store_op_name(op, ob, sizeof(ob));
    memset(rep, 0, sizeof(*rep));
    rep->f = rep->small;
    pthread_mutex_lock(&c->lock);
    if (cc__store_wr_end(req) != 0) {
        cc__store_wr_free(req);
        cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: no memory to build a %s request", c->addr,
                     opname);
        return CC_ERR_NO_MEMORY;
    }
    if (c->fd < 0) {
        cc__store_wr_free(req);
        cc_log_error(CC_SUBSYS_BOOTSTRAP,
                     "store %s: cannot %s \"%s%s\": the connection was lost "
                     "earlier",
                     c->addr, opname, s->prefix, key ? key : "");
        return CC_ERR_PEER_LOST;
    }
    int rc = io_send(c->fd, req->buf, req->len, cc__deadline_after_ms(c->io_ms));
    cc__store_wr_free(req);
    if (!rc) {
        int64_t total = wait_ms > INT64_MAX - c->io_ms ? INT64_MAX : wait_ms + c->io_ms;
        rc = recv_frame(c, op, CC__STORE_MAX_REPLY, cc__deadline_after_ms(total), rep, why,
                        sizeof(why));
    }
    if (!rc) return CC_OK;
    if (rc != -EPROTO) cc__store_errstr(-rc, why, sizeof(why));
    cc_log_error(CC_SUBSYS_BOOTSTRAP, "store %s: %s \"%s%s\" failed: %s%s; closing the connection",
                 c->addr, opname, s->prefix, key ? key : "",
                 rc == -ECONNRESET ? "the server closed the connection" : why,
                 rc == -ETIMEDOUT ? " (no reply in time)" : "");
    conn_break(c);
    if (rc == -ETIMEDOUT) return CC_ERR_TIMEOUT;
    if (rc == -ENOMEM) return CC_ERR_NO_MEMORY;
    return rc == -EPROTO ? CC_ERR_PROTOCOL : CC_ERR_PEER_LOST;
}

void cc__store_call_end(cc__store_t *s, struct cc__store_reply *rep)
{
    reply_free(rep);
    if (s->conn->rcap > RBUF_KEEP) { /* a big reply passed: give its memory back */
        free(s->conn->rbuf);
        s->conn->rbuf = NULL;
        s->conn->rcap = 0;
    }
    pthread_mutex_unlock(&s->conn->lock);
}
