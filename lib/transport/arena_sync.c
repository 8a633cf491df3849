/*
 * arena_sync.c - the arena's counters: publish, wake, wait (arena.h).
 *
 * A publisher stores its counter, then looks at each peer's `sleeping` flag
 * and rings the bell of those that sleep. A waiter that gives up polling
 * reads its bell, sets `sleeping` (seq_cst), fences, re-reads the counter
 * and only then sleeps on the bell value it read. Each side's store is
 * ordered before its load, so either the publisher sees the flag or the
 * waiter sees the counter, and no wake-up is lost; sleeps are bounded by
 * the liveness period anyway. Where every rank registered for membarrier's
 * global barrier (ar->light, agreed at creation), the ordering costs the
 * publisher nothing: its store is a plain release store, and the sleeper's
 * fence is the membarrier, which runs a full barrier on every publisher's
 * CPU (publish() below). Otherwise both stores are seq_cst.
 *
 * Waits follow the transport's one policy (transport.h, cc__wait_stage):
 * spin for the net's spin budget (zero when the host has more ranks than
 * CPUs, or while the awaited peer last waited on this CPU), sched_yield
 * for CC__YIELD_NS, then sleep (cc__bell_sleep). Every clock reading checks
 * the owner's abort, the op's deadline and, every CCOMM_PEER_CHECK_MS,
 * that the awaited peer lives.
 */
#include <sched.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "transport/arena.h"
#include "transport/arena_int.h"

/* Polls between clock readings while spinning: a poll is one load, far cheaper than the clock. */
#define SPIN_BURST 64

static struct cc__arena_ctl *mine(const cc__arena_op_t *ao)
{
    return cc__arena_ctl(ao->ar, ao->ar->rank);
}

/* After a publish: ring the peers that announced they sleep. */
static void wake_sleepers(cc__arena_op_t *ao)
{
    cc__arena_t *ar = ao->ar;
    for (int q = 0; q < ar->n; q++)
        if (q != ar->rank && atomic_load(&cc__arena_ctl(ar, q)->sleeping))
            cc__arena_ring(ar, q);
}

/*
 * Store one of this rank's counters and wake its sleepers. The store must be seen before
 * the reads of the peers' `sleeping` flags, or a peer that announced its sleep just then
 * sleeps through it (a lost wake-up). A seq_cst store orders them with a locked exchange
 * on a line the peers poll: 10 % of a 64-byte broadcast's time at 2 ranks (perf record,
 * 2026-12-03). Where every rank registered for membarrier's global barrier (ar->light), the
 * sleepers run it before they sleep instead (cc__bell_sleep's global_fence): it makes each
 * waker's CPU pass a full barrier, so a plain release store does here, with the compiler kept from
 * moving the reads above it.
 */
static inline void publish(cc__arena_op_t *ao, _Atomic uint64_t *w, uint64_t v)
{
    if (ao->ar->light) {
        atomic_store_explicit(w, v, memory_order_release);
        atomic_signal_fence(memory_order_seq_cst);
    } else {
        atomic_store(w, v);
    }
    wake_sleepers(ao);
}

/* The owner's abort, then the net's: either ends every wait. */
static int aborted(const cc__arena_t *ar)
{
    int reason = ar->abort ? atomic_load(ar->abort) : 0;
    return reason ? reason : atomic_load_explicit(&ar->net->abort_reason, memory_order_acquire);
}

/* What a waiter must stop for, other than its word: abort, deadline, a lost peer. */
static cc_status_t interrupted(cc__arena_op_t *ao, uint64_t now, uint64_t *next_check, int peer,
                               const char *what)
{
    cc__arena_t *ar = ao->ar;
    int reason = aborted(ar);
    if (reason) return (cc_status_t)reason;
    if (now >= ao->deadline_ns) {
        cc_log_error(CC_SUBSYS_SHM, "shm: %s (seq %llu) timed out on rank %d waiting for rank %d %s",
                     cc_op_type_name(ao->info->type), (unsigned long long)ao->info->coll_seq,
                     ar->rank, peer, what);
        cc__net_note_stuck(ar->net, peer);
        return CC_ERR_TIMEOUT;
    }
    if (atomic_load(&cc__arena_ctl(ar, peer)->quit) >= ao->seq) {
        cc_log_error(CC_SUBSYS_SHM, "shm: rank %d gave up on %s (seq %llu) while rank %d waited "
                     "for it %s",
                     peer, cc_op_type_name(ao->info->type),
                     (unsigned long long)ao->info->coll_seq, ar->rank, what);
        cc__net_note_stuck(ar->net, peer);
        return CC_ERR_PEER_LOST;
    }
    if (now < *next_check) return CC_INPROGRESS;
    *next_check = now + ar->check_ns;
    const char *cause = NULL;
    if (cc__shm_peer_check(ar->net, peer, &cause) == CC_OK) return CC_INPROGRESS;
    cc_log_error(CC_SUBSYS_SHM, "shm: peer rank %d (pid %d) %s while rank %d waited for it %s in %s "
                 "(seq %llu)",
                 peer, ar->pids[peer], cause, ar->rank, what, cc_op_type_name(ao->info->type),
                 (unsigned long long)ao->info->coll_seq);
        cc__net_note_stuck(ar->net, peer);
    return CC_ERR_PEER_LOST;
}

/* What a sleeper wakes for: its word got there, or an abort. */
struct nap_ctx {
    const cc__arena_t *ar;
    _Atomic uint64_t *w;
    uint64_t target;
};

static int nap_ready(void *arg)
{
    const struct nap_ctx *c = arg;
    return atomic_load(c->w) >= c->target || aborted(c->ar);
}

/* Sleep on this rank's bell unless the word got there (see the top of the file). */
static void nap(cc__arena_op_t *ao, _Atomic uint64_t *w, uint64_t target, uint64_t until,
                uint64_t now)
{
    struct nap_ctx c = {ao->ar, w, target};
    cc__arena_t *ar = ao->ar;
    uint64_t t = until > now ? until - now : 1;
    int unrung = cc__bell_sleep(cc__arena_bell(ar), &mine(ao)->sleeping, nap_ready, &c, t,
                                ar->light);
    ar->naps++;
    /* Slept to the end with the news there and no ring: a wake-up was lost (tests look). */
    if (unrung && nap_ready(&c)) ar->naps_unrung++;
}

/* Where this rank runs, for peers deciding whether to spin; written only when it changed. */
static int publish_cpu(cc__arena_op_t *ao)
{
    int cpu = sched_getcpu();
    if (cpu != ao->ar->cpu) {
        ao->ar->cpu = cpu;
        atomic_store_explicit(&mine(ao)->cpu, cpu, memory_order_relaxed);
    }
    return cpu;
}

/*
 * Two ranks that share a CPU while the host has a CPU for each (they ended
 * up there through the scheduler's wake-ups) hand over through sched_yield,
 * 5-10 us a time on a busy host, and a scheduler that sees no imbalance
 * leaves them so. The higher rank asks to leave this CPU: it takes the CPU
 * out of its thread's affinity and puts the mask back at once (the thread
 * has moved by then). At most every 50 ms, so a scheduler that insists wins.
 */
static void move_off(cc__arena_t *ar, int cpu, uint64_t now)
{
    if (now < ar->next_move_ns || cpu < 0 || cpu >= CPU_SETSIZE) return;
    ar->next_move_ns = now + 50000000ull;
    cpu_set_t all, others;
    if (sched_getaffinity(0, sizeof(all), &all) != 0) return;
    others = all;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof(others), &others) != 0) return;
    sched_setaffinity(0, sizeof(all), &all);
    cc_log_debug(CC_SUBSYS_SHM, "shm: rank %d left cpu %d, which it shared with a peer it waits for",
                 ar->rank, cpu);
}

/*
 * Spin only while the awaited peer last waited on another CPU. On one CPU a
 * spinner holds the CPU the peer needs to arrive; on a busy host the
 * scheduler's wake-ups often pull two ranks onto one CPU, and a 50 us spin
 * per handoff then made 8-byte allreduces 100x slower (measured).
 */
static uint64_t spin_budget(cc__arena_op_t *ao, int peer, uint64_t now)
{
    cc__arena_t *ar = ao->ar;
    if (!ar->spin_ns) return 0;
    int cpu = publish_cpu(ao);
    if (atomic_load_explicit(&cc__arena_ctl(ar, peer)->cpu, memory_order_relaxed) != cpu)
        return ar->spin_ns;
    if (ar->rank > peer) move_off(ar, cpu, now);
    return 0;
}

/* Ask for the `n` payload lines that follow an arrival line: a prefetch, no access, so the
 * peer may still be writing them. */
static inline void fetch_ahead(const char *lines, int n)
{
    for (int l = 0; l < n; l++) __builtin_prefetch(lines + (size_t)l * CC__ARENA_LINE, 0, 3);
}

/* The op's on_post, once (arena.h). */
static inline void posted(cc__arena_op_t *ao)
{
    void (*fn)(void *) = ao->on_post;
    if (__builtin_expect(fn != NULL, 0)) {
        ao->on_post = NULL;
        fn(ao->on_post_arg);
    }
}

/* lines/nlines: payload lines asked for with each look at the word (cc__arena_expect). */
static cc_status_t wait_slow(cc__arena_op_t *ao, _Atomic uint64_t *w, uint64_t target, int peer,
                             const char *what, const char *lines, int nlines)
{
    cc__arena_t *ar = ao->ar;
    posted(ao); /* no rank waits with its op unrecorded, here in cc__arena_begin too */
    uint64_t start = cc__now_ns(), now = start, next_check = start + ar->check_ns;
    uint64_t spin = spin_budget(ao, peer, now);
    for (;;) {
        uint64_t idle = now - start;
        /* The budget is looked at again while spinning: the peer may have moved here. */
        if (idle < spin) spin = spin_budget(ao, peer, now);
        int stage = cc__wait_stage(idle, spin, CC__YIELD_NS);
        if (stage == CC__WAIT_SPIN) {
            for (int i = 0; i < SPIN_BURST; i++) {
                uint64_t v = atomic_load_explicit(w, memory_order_acquire);
                fetch_ahead(lines, nlines);
                if (v >= target) return CC_OK;
                cc__cpu_relax();
            }
        } else if (stage == CC__WAIT_YIELD) {
            sched_yield();
        } else {
            uint64_t until = next_check < ao->deadline_ns ? next_check : ao->deadline_ns;
            nap(ao, w, target, until, now);
        }
        if (atomic_load_explicit(w, memory_order_acquire) >= target) return CC_OK;
        now = cc__now_ns();
        cc_status_t st = interrupted(ao, now, &next_check, peer, what);
        if (st == CC_INPROGRESS) continue;
        /* A peer that finished, then exited or closed, did publish first: look once more. */
        return atomic_load_explicit(w, memory_order_acquire) >= target ? CC_OK : st;
    }
}

static inline cc_status_t wait_word(cc__arena_op_t *ao, _Atomic uint64_t *w, uint64_t target,
                                    int peer, const char *what)
{
    if (atomic_load_explicit(w, memory_order_acquire) >= target) return CC_OK;
    return wait_slow(ao, w, target, peer, what, NULL, 0);
}

static inline uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* The op's description and its hash, which peers compare with theirs. Three rounds, no loop:
 * it runs on every op. The shape word packs the enums into their ranges (type < 2^16, dtype
 * and redop < 2^8: validated at the door long before; desc keeps the full values). */
static uint64_t describe(const cc_op_info_t *in, uint64_t count, struct cc__arena_desc *d)
{
    d->coll_seq = in->coll_seq;
    d->count = count;
    d->type = (int32_t)in->type;
    d->dtype = (int32_t)in->dtype;
    d->redop = (int32_t)in->redop;
    d->root = in->root;
    uint64_t shape = (uint64_t)(uint16_t)in->type | (uint64_t)(uint8_t)in->dtype << 16 |
                     (uint64_t)(uint8_t)in->redop << 24 | (uint64_t)(uint32_t)in->root << 32;
    return mix(mix(mix(0x9e3779b97f4a7c15ull, count), shape), in->coll_seq);
}

/*
 * Wait until every peer arrived at op `upto` (or later): what it read of this rank's lines
 * and data in the ops before is over. One line per peer is probed first, CC__ARENA_PROBE ops
 * back: a peer found there at op v >= upto (v may be later: lines are reused every
 * CC__ARENA_DEPTH ops) arrived at every op up to v, so all_arrived moves to the least such v
 * and the next ops skip this check until they pass it (an op that waits for the op just before,
 * not deep, probes that op's line: it is line `upto`). Only when a peer is further behind is
 * line `upto` waited on. Every line looked at is one its owner rewrote since, a cache miss:
 * a rank that runs a few ops ahead (a small broadcast's root, its readers one or two ops
 * behind while the news travels) pays two misses per K - PROBE - 1 ops. Probing the previous
 * op's line missed whenever a reader was one op behind, then line `upto` missed too: two
 * misses every op (perf record, 2026-12-03: 39 % of cc__arena_begin's samples on the second).
 */
static cc_status_t wait_arrived(cc__arena_op_t *ao, uint64_t upto)
{
    cc__arena_t *ar = ao->ar;
    uint64_t back = ao->seq - upto < CC__ARENA_PROBE ? ao->seq - upto : CC__ARENA_PROBE;
    int probe = (int)((ao->seq - back) % CC__ARENA_DEPTH);
    uint64_t least = UINT64_MAX;
    for (int q = 0; q < ar->n && least >= upto; q++) {
        if (q == ar->rank) continue;
        uint64_t v =
            atomic_load_explicit(&cc__arena_ctl(ar, q)->par[probe].seq, memory_order_acquire);
        if (v < least) least = v;
    }
    if (least >= upto) {
        ar->all_arrived = least;
        return CC_OK;
    }
    int line = (int)(upto % CC__ARENA_DEPTH);
    for (int q = 0; q < ar->n; q++)
        if (q != ar->rank)
            CC_CHECK(wait_word(ao, &cc__arena_ctl(ar, q)->par[line].seq, upto, q,
                               "to begin an earlier op"));
    ar->all_arrived = upto;
    return CC_OK;
}

cc_status_t cc__arena_begin(cc__arena_t *ar, const cc_op_info_t *info, uint64_t count, int deep,
                            uint64_t deadline_ns, cc__arena_op_t *ao)
{
    ao->ar = ar;
    ao->info = info;
    ao->deadline_ns = deadline_ns;
    ao->seq = ++ar->seq;
    ao->par = (int)(ao->seq & 1);
    ao->slot = (int)(ao->seq % CC__ARENA_DEPTH);
    ao->deep = deep;
    /* Line seq % K was last used by op seq - K, data parity seq & 1 by op seq - 2: each is
     * free once every peer arrived at the op after (the top of arena.h). */
    uint64_t lag = deep ? CC__ARENA_DEPTH - 1 : 1;
    if (ao->seq > lag && ar->all_arrived < ao->seq - lag)
        CC_CHECK(wait_arrived(ao, ao->seq - lag));
    struct cc__arena_ctl *me = mine(ao);
    struct cc__arena_par *p = &me->par[ao->slot];
    p->sig = describe(info, count, &me->desc[ao->slot]);
    p->sendbuf = (uint64_t)(uintptr_t)info->sendbuf;
    p->recvbuf = (uint64_t)(uintptr_t)info->recvbuf;
    p->aux = 0;
    return CC_OK;
}

/* Ask for a line of this rank's own to write it (a prefetch for ownership): the peers' copies
 * are dropped now, not when the store comes. No access: nothing waits for it. */
static inline void claim_line(const cc__arena_t *ar, const char *p)
{
#if defined(__x86_64__) || defined(__i386__)
    if (ar->claim) __asm__ volatile("prefetchw %0" ::"m"(*p));
#else
    (void)ar;
    __builtin_prefetch(p, 1, 3);
#endif
}

/*
 * After this op's post, ask for the lines this rank writes at the next op: its next arrival
 * line and as many payload lines as this op stages (cc__arena_expect). Every peer read that
 * slot at op seq + 1 - K and keeps a copy; without the claim this rank's stores there wait
 * for those copies to be dropped, and a peer sees the arrival only after that round trip and
 * its own fetch. The claim runs while this rank waits for its peers. Only once every peer
 * arrived past op seq + 1 - K, so a reader still at that op keeps its lines (a small
 * broadcast's root runs ahead). 2 ranks, far placement, one build alternating: 8 B
 * allreduce 0.63-0.65 -> 0.51-0.57 us (docs/performance.md, afternoon of 2026-12-05).
 */
static inline void claim_next(cc__arena_op_t *ao)
{
    cc__arena_t *ar = ao->ar;
    if (ar->all_arrived + CC__ARENA_DEPTH < ao->seq + 2) return;
    const char *p = (const char *)&mine(ao)->par[(ao->seq + 1) % CC__ARENA_DEPTH];
    for (int l = 0; l <= ao->ahead; l++)
        claim_line(ar, p + (size_t)l * CC__ARENA_LINE);
}

void cc__arena_post(cc__arena_op_t *ao)
{
    if (ao->ar->spin_ns) publish_cpu(ao);
    publish(ao, &mine(ao)->par[ao->slot].seq, ao->seq);
    claim_next(ao);
    posted(ao); /* while the arrival travels to the peers */
}

/* Ranks that run different ops at the same arena number: say who runs what. */
static cc_status_t mismatch(cc__arena_op_t *ao, int peer)
{
    const struct cc__arena_desc *a = &mine(ao)->desc[ao->slot];
    const struct cc__arena_desc *b = &cc__arena_ctl(ao->ar, peer)->desc[ao->slot];
    cc_log_error(CC_SUBSYS_SHM,
                 "shm: ranks disagree at collective %llu: rank %d runs %s(count %llu, dtype %d, "
                 "op %d, root %d) but rank %d runs %s(count %llu, dtype %d, op %d, root %d) as "
                 "collective %llu",
                 (unsigned long long)a->coll_seq, ao->ar->rank, cc_op_type_name(a->type),
                 (unsigned long long)a->count, a->dtype, a->redop, a->root, peer,
                 cc_op_type_name(b->type), (unsigned long long)b->count, b->dtype, b->redop,
                 b->root, (unsigned long long)b->coll_seq);
    return CC_ERR_MISMATCH;
}

cc_status_t cc__arena_wait_arrive(cc__arena_op_t *ao, int peer)
{
    struct cc__arena_par *p = cc__arena_par(ao, peer);
    /* The payload lines are asked for in the same look as the arrival: their hand-overs
     * overlap the arrival line's instead of following it. */
    const char *lines = (const char *)p + CC__ARENA_LINE;
    uint64_t v = atomic_load_explicit(&p->seq, memory_order_acquire);
    fetch_ahead(lines, ao->ahead);
    if (v < ao->seq)
        CC_CHECK(wait_slow(ao, &p->seq, ao->seq, peer, "to arrive", lines, ao->ahead));
    return p->sig == mine(ao)->par[ao->slot].sig ? CC_OK : mismatch(ao, peer);
}

cc_status_t cc__arena_wait_all(cc__arena_op_t *ao)
{
    cc__arena_t *ar = ao->ar;
    /* Start after this rank: ranks that arrive together do not all wait on rank 0 first. */
    for (int k = 1; k < ar->n; k++)
        CC_CHECK(cc__arena_wait_arrive(ao, (ar->rank + k) % ar->n));
    ar->all_arrived = ao->seq;
    return CC_OK;
}

void cc__arena_progress(cc__arena_op_t *ao, uint64_t pieces)
{
    publish(ao, &mine(ao)->prog, ao->seq << CC__ARENA_PROG_BITS | pieces);
}

cc_status_t cc__arena_wait_progress(cc__arena_op_t *ao, int peer, uint64_t pieces, uint64_t *have)
{
    _Atomic uint64_t *w = &cc__arena_ctl(ao->ar, peer)->prog;
    CC_CHECK(wait_word(ao, w, ao->seq << CC__ARENA_PROG_BITS | pieces, peer,
                       "to publish its share"));
    /* The peer cannot be at a later op: it waits for this rank's done first. */
    *have = atomic_load_explicit(w, memory_order_acquire) & ((1ull << CC__ARENA_PROG_BITS) - 1);
    return CC_OK;
}

void cc__arena_done(cc__arena_op_t *ao)
{
    publish(ao, &mine(ao)->done, ao->seq);
}

cc_status_t cc__arena_wait_done(cc__arena_op_t *ao, int peer)
{
    return wait_word(ao, &cc__arena_ctl(ao->ar, peer)->done, ao->seq, peer,
                     "to finish with this rank's buffers");
}

cc_status_t cc__arena_finish(cc__arena_op_t *ao)
{
    cc__arena_t *ar = ao->ar;
    cc__arena_done(ao);
    for (int k = 1; k < ar->n; k++)
        CC_CHECK(cc__arena_wait_done(ao, (ar->rank + k) % ar->n));
    ar->all_arrived = ao->seq; /* done implies arrived */
    return CC_OK;
}

cc_status_t cc__arena_end(cc__arena_op_t *ao, cc_status_t st)
{
    if (st >= 0 || !ao->seq) return st;
    publish(ao, &mine(ao)->quit, ao->seq);
    return st;
}

cc_status_t cc__arena_check_quit(cc__arena_op_t *ao)
{
    cc__arena_t *ar = ao->ar;
    for (int q = 0; q < ar->n; q++) {
        /* A peer that quit a later op had finished this one: only this op's quit counts. */
        if (q == ar->rank || atomic_load_explicit(&cc__arena_ctl(ar, q)->quit,
                                                  memory_order_relaxed) != ao->seq)
            continue;
        cc_log_error(CC_SUBSYS_SHM, "shm: rank %d gave up on %s (seq %llu) before rank %d finished it",
                     q, cc_op_type_name(ao->info->type), (unsigned long long)ao->info->coll_seq,
                     ar->rank);
        return CC_ERR_PEER_LOST;
    }
    return CC_OK;
}
