/*
 * wait.c - posting requests, progress, and the wait loop.
 *
 * Waiting is three-staged so that ranks which outnumber the cores do not
 * starve each other, yet a message that arrives soon is seen at once:
 *
 *   spin   progress in a tight loop for CCOMM_WAIT_SPIN_US (not at all when
 *          this host has more ranks than CPUs: a spinner would only hold
 *          a core that the rank it waits for needs);
 *   yield  progress, then sched_yield(), for up to CC__YIELD_NS more;
 *   sleep  block in the transport (futex on this rank's shm mailbox bell,
 *          epoll on the TCP sockets) for at most CCOMM_PEER_CHECK_MS, the
 *          time left to the deadline, and 1 ms when both shm and tcp
 *          requests are pending (one of them is then polled, not slept on).
 *
 * When only TCP requests are pending the loop spins only for
 * CCOMM_TCP_SPIN_US, yields only where the host's ranks share its CPUs
 * (CCOMM_TCP_YIELD_US), and sleeps in epoll (see wait_stage). Any
 * progress sends the loop back to spinning. Liveness of the peers that
 * pending requests involve is checked every CCOMM_PEER_CHECK_MS whatever the
 * stage, so a dead peer fails its requests within about that time.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lttng.h"
#include "transport/transport.h"

#define CC__MIXED_NAP_NS 1000000ull /* longest sleep with both shm and tcp pending */

/* Bad arguments never reach a transport: they are logged and the request is untouched. */
static cc_status_t check_post(cc__net_t *net, int peer, const void *buf, size_t len, cc__req_t *req,
                              const char *what)
{
    if (!net || !req) {
        cc_log_error(CC_SUBSYS_NET, "net: %s: %s is NULL", what, !net ? "net" : "request");
        return CC_ERR_INVALID_ARG;
    }
    if (peer < 0 || peer >= net->size) {
        cc_log_error(CC_SUBSYS_NET, "net: %s: peer %d is out of range [0, %d)", what, peer,
                     net->size);
        return CC_ERR_INVALID_ARG;
    }
    if (!buf && len > 0) {
        cc_log_error(CC_SUBSYS_NET, "net: %s to/from rank %d: buffer is NULL but length is %zu",
                     what, peer, len);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

/* Initialise a request and count it as pending with its peer. */
static struct cc__peer *start_req(cc__net_t *net, cc__req_t *req, int kind, int peer, uint32_t tag,
                                  const void *buf, size_t len)
{
    memset(req, 0, sizeof(*req));
    req->kind = kind;
    req->peer = peer;
    req->tag = tag;
    req->status = CC_INPROGRESS;
    req->buf = (void *)buf;
    req->len = len;
    struct cc__peer *p = &net->peers[peer];
    p->pending++;
    net->tp_pending[p->tp]++;
    /* Tracing: the message starts; its xfer_end is in cc__req_finish. */
    cc__lttng_xfer_begin(net->comm_id, kind == CC__REQ_SEND ? CC__LTTNG_SEND : CC__LTTNG_RECV, peer,
                         tag, len, net->tps[p->tp]->name);
    return p;
}

/*
 * The start every posted request shares: arguments, then an abort that came
 * first. CC_OK to go on; otherwise the request is finished (or was never
 * started, on bad arguments) and this is the status to return.
 */
static cc_status_t post(cc__net_t *net, cc__req_t *req, int kind, int peer, uint32_t tag,
                        const void *buf, size_t len, struct cc__peer **pp)
{
    CC_CHECK(check_post(net, peer, buf, len, req, kind == CC__REQ_SEND ? "isend" : "irecv"));
    *pp = start_req(net, req, kind, peer, tag, buf, len);
    int reason = cc__net_aborted(net);
    if (reason) cc__req_finish(net, req, (cc_status_t)reason);
    return (cc_status_t)reason;
}

cc_status_t cc__net_isend(cc__net_t *net, int peer, uint32_t tag, const void *buf, size_t len,
                          cc__req_t *req)
{
    struct cc__peer *p;
    CC_CHECK(post(net, req, CC__REQ_SEND, peer, tag, buf, len, &p));
    if (p->lost) return cc__net_post_lost(net, p, req);
    cc_status_t st = net->tps[p->tp]->isend(net, p, req);
    /* A transport may finish a send at once, even with an error (no memory). */
    return st != CC_OK ? st : (req->status < 0 ? req->status : CC_OK);
}

/* A receive found its message already held aside. */
static void recv_held(cc__net_t *net, struct cc__peer *p, cc__req_t *req, cc__msg_t *m)
{
    if (m->kind != CC__MSG_BUFFERED) {
        net->tps[p->tp]->irecv(net, p, req, m); /* length-checks and frees m */
        return;
    }
    if (m->len != req->len) {
        cc__net_mismatch(net, req, m->len);
        if (m->complete)
            cc__msg_free(net, m);
        else
            m->discard = 1; /* the transport still fills it, then frees it */
        return;
    }
    if (!m->complete) {
        m->bound = req;
        return;
    }
    if (m->len) memcpy(req->buf, m->data, m->len);
    cc__msg_free(net, m);
    cc__req_finish(net, req, CC_OK);
}

cc_status_t cc__net_irecv(cc__net_t *net, int peer, uint32_t tag, void *buf, size_t len,
                          cc__req_t *req)
{
    struct cc__peer *p;
    CC_CHECK(post(net, req, CC__REQ_RECV, peer, tag, buf, len, &p));
    /* Held messages first: a peer lost after sending still delivers what it sent. */
    cc__msg_t *m = cc__net_take_held(p, tag);
    if (m) {
        recv_held(net, p, req, m);
        return req->status < 0 ? req->status : CC_OK;
    }
    if (p->lost) return cc__net_post_lost(net, p, req);
    if (p->rq_tail)
        p->rq_tail->next = req;
    else
        p->rq_head = req;
    p->rq_tail = req;
    return CC_OK;
}

/* One pass over every transport; returns how many things happened. */
/* Self needs no progress; shm before tcp because its polls cost nothing. */
static int progress(cc__net_t *net)
{
    if (cc__net_aborted(net)) return 0;
    int n = 0;
    for (int tp = CC__TP_SHM; tp < CC__TP_COUNT; tp++)
        if (net->tp_peers[tp]) n += net->tps[tp]->progress(net);
    return n;
}

int cc__net_poll(cc__net_t *net)
{
    int pending = 0;
    for (int tp = CC__TP_SHM; tp < CC__TP_COUNT; tp++) pending += net->tp_pending[tp];
    return pending ? progress(net) : 0;
}

cc_status_t cc__net_test(cc__net_t *net, cc__req_t *req, int *done)
{
    if (!net || !req || !done) {
        cc_log_error(CC_SUBSYS_NET, "net: test: %s is NULL",
                     !net ? "net" : (!req ? "request" : "done"));
        return CC_ERR_INVALID_ARG;
    }
    progress(net);
    *done = req->status != CC_INPROGRESS;
    return CC_OK;
}

/*
 * CC_INPROGRESS while some request is unfinished (or, with stop_on_error,
 * until one fails), else the first failed status or CC_OK.
 */
static cc_status_t reqs_state(cc__req_t *const *reqs, int n, int stop_on_error)
{
    cc_status_t first = CC_OK;
    int busy = 0;
    for (int i = 0; i < n; i++) {
        cc_status_t s = reqs[i]->status;
        if (s == CC_INPROGRESS)
            busy = 1;
        else if (s < 0 && first == CC_OK)
            first = s;
    }
    return busy && !(stop_on_error && first != CC_OK) ? CC_INPROGRESS : first;
}

/* Check liveness of the peers pending requests involve (each transport its own). */
static void check_peers(cc__net_t *net, uint64_t now)
{
    net->next_check_ns = now + (uint64_t)cc__cfg()->peer_check_ms * 1000000ull;
    for (int tp = CC__TP_SHM; tp < CC__TP_COUNT; tp++)
        if (net->tp_pending[tp] && net->tps[tp]->check) net->tps[tp]->check(net);
}

/*
 * Block in the right place for what is pending. One futex and one epoll set
 * cannot be waited on together: with both kinds pending, sleep on the futex
 * in short naps and let progress poll the sockets.
 */
static void nap(cc__net_t *net, uint64_t timeout_ns)
{
    int shm = net->tp_pending[CC__TP_SHM] > 0, tcp = net->tp_pending[CC__TP_TCP] > 0;
    if (shm && tcp && timeout_ns > CC__MIXED_NAP_NS) timeout_ns = CC__MIXED_NAP_NS;
    if (shm) {
        net->tps[CC__TP_SHM]->sleep(net, timeout_ns);
    } else if (tcp) {
        net->tps[CC__TP_TCP]->sleep(net, timeout_ns);
    } else {
        /* Only sends to self wait (for a receive this thread has not posted). */
        struct pollfd pfd = {.fd = net->wake_fd, .events = POLLIN};
        poll(&pfd, 1, (int)((timeout_ns + 999999) / 1000000));
    }
}

static cc_status_t check_wait(cc__net_t *net, cc__req_t *const *reqs, int n)
{
    if (!net || n < 0 || (n > 0 && !reqs)) {
        cc_log_error(CC_SUBSYS_NET, "net: wait: %s", !net ? "net is NULL" : "bad request array");
        return CC_ERR_INVALID_ARG;
    }
    for (int i = 0; i < n; i++) {
        if (!reqs[i] || reqs[i]->kind == CC__REQ_NONE) {
            cc_log_error(CC_SUBSYS_NET, "net: wait: request %d is %s", i,
                         !reqs[i] ? "NULL" : "not posted");
            return CC_ERR_INVALID_ARG;
        }
    }
    return CC_OK;
}

/*
 * One idle pass of the wait loop, by how long nothing moved. Only TCP
 * pending: a spin of CCOMM_TCP_SPIN_US (50 us; none when the host has more
 * ranks than CPUs), and a yield stage of CCOMM_TCP_YIELD_US (1 ms) only when
 * it has: there a sleeping rank waits for the scheduler to wake it after
 * its data came, while a yielding one runs again as soon as the ranks
 * holding the CPUs yield or block. 4 ranks on 2 CPUs, allreduce 8 B / 1 KiB
 * / 16 KiB / 256 KiB 2.0 / 1.9 / 1.8 / 1.5x faster with it (bench/ab.sh
 * --b-env, 5 launches, 2026-12-02 00:20 UTC), which is what Open MPI does
 * there (it polls, yielding when idle). Where the CPUs are free a spinner
 * sees the data without a wake-up: 2-rank 8-byte allreduce 47 us sleeping at once,
 * 14 us with the spin; on a host busy with other work the spinner takes the
 * CPU its peer needs (76-141 us with a 30 us spin at load 9-11): set 0 there
 * (docs/transports.md).
 */
static void wait_stage(cc__net_t *net, uint64_t idle, uint64_t deadline_ns, uint64_t now,
                       int *spinning)
{
    int poll_stages = net->tp_pending[CC__TP_SHM] > 0 || net->tp_pending[CC__TP_TCP] == 0;
    int stage = cc__wait_stage(idle, poll_stages ? net->spin_ns : net->tcp_spin_ns,
                               poll_stages ? CC__YIELD_NS : net->tcp_yield_ns);
    *spinning = stage == CC__WAIT_SPIN;
    if (stage == CC__WAIT_SPIN) {
        cc__cpu_relax();
    } else if (stage == CC__WAIT_YIELD) {
        sched_yield();
    } else {
        uint64_t t = net->next_check_ns > now ? net->next_check_ns - now : 0;
        if (deadline_ns - now < t) t = deadline_ns - now;
        nap(net, t);
        /* A wake-up may be a peer that closed its side: look now, not at the next period. */
        check_peers(net, cc__now_ns());
    }
}

int cc__net_stuck_peer(const cc__net_t *net)
{
    return net->stuck_peer;
}

void cc__net_note_stuck(cc__net_t *net, int peer)
{
    if (peer >= 0 && peer < net->size) net->stuck_peer = peer;
}

/* A wait failed with st: a lost peer is the one its first request so failed was with. */
static cc_status_t failed(cc__net_t *net, cc__req_t *const *reqs, int n, cc_status_t st)
{
    for (int i = 0; st == CC_ERR_PEER_LOST && i < n; i++)
        if (reqs[i]->status == CC_ERR_PEER_LOST) {
            net->stuck_peer = reqs[i]->peer;
            break;
        }
    return st;
}

int cc__membarrier_register(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) ||
        !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
        return 0;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

int cc__bell_sleep(_Atomic uint32_t *bell, _Atomic uint32_t *sleeping, int (*ready)(void *),
                   void *ctx, uint64_t timeout_ns, int global_fence)
{
    uint32_t seen = atomic_load(bell);
    atomic_store(sleeping, 1);
    /* With plain stores on the wakers' side, only membarrier's barrier, run on their CPUs,
     * orders those stores before their reads of `sleeping`; should it fail, no sleep (the
     * caller polls again). */
    int fenced = 1;
    if (global_fence)
        fenced = syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0;
    else
        cc__fence();
    /* A ring after this check changes the bell, and FUTEX_WAIT on `seen` returns at once. */
    int slept = fenced && !ready(ctx) && timeout_ns;
    if (slept) cc__futex_wait(bell, seen, timeout_ns);
    atomic_store(sleeping, 0);
    return slept && atomic_load(bell) == seen;
}

/* The deadline passed: say which rank the wait was stuck on (the first request still
 * pending), so a deadlock's log, and the op's error, name the peer, not only the op. */
static cc_status_t timed_out(cc__net_t *net, cc__req_t *const *reqs, int n)
{
    int pending = 0;
    const cc__req_t *first = NULL;
    for (int i = 0; i < n; i++)
        if (reqs[i]->status == CC_INPROGRESS && pending++ == 0) first = reqs[i];
    if (first) net->stuck_peer = first->peer;
    if (first)
        cc_log_warn(CC_SUBSYS_NET,
                    "net: rank %d timed out waiting for rank %d (%s, tag %u, %zu of %zu bytes "
                    "moved; %d request(s) pending)",
                    net->rank, first->peer, first->kind == CC__REQ_SEND ? "send" : "receive",
                    first->tag, first->done, first->len, pending);
    return CC_ERR_TIMEOUT;
}

static cc_status_t wait_loop(cc__net_t *net, cc__req_t *const *reqs, int n, uint64_t deadline_ns,
                             int stop_on_error)
{
    uint64_t check_ns = (uint64_t)cc__cfg()->peer_check_ms * 1000000ull;
    uint64_t now = cc__now_ns(), stage_start = now, seen = net->events;
    unsigned spins = 0;
    int spinning = 1;
    if (net->next_check_ns == 0 || net->next_check_ns > now + check_ns)
        net->next_check_ns = now + check_ns;
    for (;;) {
        int moved = progress(net);
        cc_status_t st = reqs_state(reqs, n, stop_on_error);
        if (st != CC_INPROGRESS) return st < 0 ? failed(net, reqs, n, st) : st;
        if (moved || net->events != seen) {
            seen = net->events;
            stage_start = 0; /* back to spinning, from the next clock reading */
            spins = 0;
            spinning = 1;
        }
        /* While spinning the clock is read every 16th pass: on this VM it costs more than a
         * pass (a third of an 8-byte ping-pong's time went to clock_gettime). */
        if (spinning && spins++ % 16 != 0) {
            cc__cpu_relax();
            continue;
        }
        now = cc__now_ns();
        if (!stage_start) stage_start = now;
        if (now >= deadline_ns) return timed_out(net, reqs, n);
        if (now >= net->next_check_ns) check_peers(net, now);
        wait_stage(net, now - stage_start, deadline_ns, now, &spinning);
    }
}

cc_status_t cc__net_wait(cc__net_t *net, cc__req_t *const *reqs, int n, uint64_t deadline_ns)
{
    CC_CHECK(check_wait(net, reqs, n));
    return wait_loop(net, reqs, n, deadline_ns, 0);
}

/*
 * A blocking call is about to return: none of its requests may stay queued,
 * since they live on its stack. Withdraw them; one already in flight is
 * waited for until the deadline, after which the net is aborted.
 */
static void settle(cc__net_t *net, cc__req_t *req, uint64_t deadline_ns, cc_status_t why)
{
    if (req->status != CC_INPROGRESS || cc__net_cancel(net, req, why) == CC_OK) return;
    if (why != CC_ERR_TIMEOUT && wait_loop(net, &req, 1, deadline_ns, 0) != CC_ERR_TIMEOUT) return;
    cc_log_warn(CC_SUBSYS_NET,
                "net: %s rank %d (tag %u) timed out with %zu of %zu bytes moved; aborting rank "
                "%d's connections so the buffer is not used after the call returns",
                req->kind == CC__REQ_SEND ? "send to" : "receive from", req->peer, req->tag,
                req->done, req->len, net->rank);
    cc__net_abort(net, CC_ERR_TIMEOUT);
    cc__net_aborted(net);
}

static cc_status_t blocking(cc__net_t *net, cc__req_t *reqs, int n, uint64_t deadline_ns)
{
    cc__req_t *rp[2] = {&reqs[0], n > 1 ? &reqs[1] : NULL};
    cc_status_t st = wait_loop(net, rp, n, deadline_ns, 1);
    for (int i = 0; i < n && st != CC_OK; i++)
        settle(net, rp[i], deadline_ns, st);
    return st;
}

cc_status_t cc__net_send(cc__net_t *net, int peer, uint32_t tag, const void *buf, size_t len,
                         uint64_t deadline_ns)
{
    cc__req_t req;
    CC_CHECK(cc__net_isend(net, peer, tag, buf, len, &req));
    return blocking(net, &req, 1, deadline_ns);
}

cc_status_t cc__net_recv(cc__net_t *net, int peer, uint32_t tag, void *buf, size_t len,
                         uint64_t deadline_ns)
{
    cc__req_t req;
    CC_CHECK(cc__net_irecv(net, peer, tag, buf, len, &req));
    return blocking(net, &req, 1, deadline_ns);
}

cc_status_t cc__net_sendrecv(cc__net_t *net, int to, const void *sbuf, size_t slen, int from,
                             void *rbuf, size_t rlen, uint32_t tag, uint64_t deadline_ns)
{
    cc__req_t reqs[2];
    memset(reqs, 0, sizeof(reqs));
    /* Receive first: a message from `from` then lands in place, not in a held copy. */
    CC_CHECK(cc__net_irecv(net, from, tag, rbuf, rlen, &reqs[0]));
    cc_status_t st = cc__net_isend(net, to, tag, sbuf, slen, &reqs[1]);
    if (st != CC_OK && reqs[1].kind == CC__REQ_NONE) {
        settle(net, &reqs[0], deadline_ns, st); /* bad send arguments */
        return st;
    }
    return blocking(net, reqs, 2, deadline_ns);
}
