/*
 * chain.c - hook chains: lock-free readers, serialized writers, and safe
 * reclamation of retired snapshots (see chain.h).
 *
 * Reclamation. Each thread that runs hooks has a reader record of its own
 * (made at its first section, freed at its exit): entering the outermost
 * section stores the grace-period number g_gp in it, leaving stores 0.
 * Those are plain stores to the thread's own cache line, with no atomic
 * read-modify-write on the op path: a writer that publishes a snapshot
 * bumps g_gp and then, with membarrier(2), makes every running thread pass
 * a full barrier, so each reader either has its number visible to the
 * writer or loads the new snapshot; the writer then waits for every reader
 * whose number is older than the bump to leave. Where membarrier is not
 * available the readers fence themselves (one mfence per section).
 *
 * A context that has no record and must not make one (an abort hook in a
 * fatal-signal handler, a record that could not be allocated) uses the
 * older scheme, two shared counters and a phase bit, which the writer also
 * drains: a reader picks the counter of the current phase, increments it,
 * and re-checks the phase (retrying if it moved); the writer flips the
 * phase and waits for the old phase's counter to drain.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooks/chain.h"
#include "base/log.h"
#include "base/tls.h"

cc__chain_set_t cc__global_hooks;

static _Atomic unsigned g_phase;
static _Atomic long g_readers[2];

/* One per thread that ran hooks; ctr and nest are written by that thread only
 * (and its signal handlers, which restore them before returning). */
struct reader {
    alignas(64) _Atomic uint64_t ctr; /* 0 outside any section, else g_gp when it began */
    unsigned nest;                    /* section depth */
    struct reader *next;              /* g_reader_list, under g_reader_lock */
};
#define READER_TOKEN 2 /* a section on the thread's own record; 0 and 1 are phases */

static _Atomic uint64_t g_gp = 1;
static pthread_mutex_t g_reader_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reader *g_reader_list;
static __thread struct reader *t_reader CC__TLS_HOT;
static pthread_once_t g_reader_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_reader_key;
static int g_reader_key_ok;
static int g_memb; /* 1: membarrier(PRIVATE_EXPEDITED) is registered for this process */

/* The chains this thread is running, innermost first: one frame on the runner's stack per
 * run, naming the set the op belongs to (the global hooks run for it too). */
struct run_frame {
    const cc__chain_set_t *set;
    struct run_frame *up;
};
static __thread struct run_frame *t_runs CC__TLS_HOT;

/* Writers: one at a time. The registry maps a handle to where its hook lives. */
static pthread_mutex_t g_write_lock = PTHREAD_MUTEX_INITIALIZER;
struct reg {
    cc_hook_handle_t handle;
    cc__chain_set_t *set;
    int kind;
    int slot; /* a subscriber's token slot, -1 for a plain hook */
    const void *owner;
};
static struct reg *g_reg;
static size_t g_nreg, g_capreg;
static cc_hook_handle_t g_next_handle = 1;

/* Thread exit: the record leaves the list (its thread is outside any section). */
static void reader_gone(void *p)
{
    struct reader *r = p;
    t_reader = NULL; /* a later destructor that runs hooks makes a new one */
    pthread_mutex_lock(&g_reader_lock);
    for (struct reader **pp = &g_reader_list; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    pthread_mutex_unlock(&g_reader_lock);
    free(r);
}

/* The forked child's only thread is the one that forked: the others' records would hold
 * their sections forever. They are dropped (not freed: a parent's heap, left alone). */
static void reader_after_fork(void)
{
    pthread_mutex_init(&g_reader_lock, NULL);
    g_reader_list = t_reader;
    if (t_reader) t_reader->next = NULL;
}

static void reader_init(void)
{
    g_reader_key_ok = pthread_key_create(&g_reader_key, reader_gone) == 0;
    g_memb = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    pthread_atfork(NULL, NULL, reader_after_fork);
}

/* This thread's first section: make and list its record (once per thread, off the op
 * path's steady state). NULL when it cannot (no memory, no key): the shared counters. */
static struct reader *reader_register(void)
{
    pthread_once(&g_reader_once, reader_init);
    if (!g_reader_key_ok) return NULL;
    /* Its own cache line: the op path writes ctr, and no other thread's record shares it. */
    struct reader *r = aligned_alloc(alignof(struct reader), sizeof(*r));
    if (!r) return NULL;
    memset(r, 0, sizeof(*r));
    if (pthread_setspecific(g_reader_key, r) != 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_lock(&g_reader_lock);
    r->next = g_reader_list;
    g_reader_list = r;
    pthread_mutex_unlock(&g_reader_lock);
    t_reader = r;
    return r;
}

static int shared_lock(void)
{
    for (;;) {
        unsigned p = atomic_load(&g_phase) & 1u;
        atomic_fetch_add(&g_readers[p], 1);
        if ((atomic_load(&g_phase) & 1u) == p) return (int)p;
        atomic_fetch_sub(&g_readers[p], 1);
    }
}

/* may_register 0: a signal handler, which must not allocate. */
static inline int read_lock(int may_register)
{
    struct reader *r = t_reader;
    if (__builtin_expect(!r, 0) && (!may_register || !(r = reader_register())))
        return shared_lock();
    if (r->nest++ == 0) {
        atomic_store_explicit(&r->ctr, atomic_load_explicit(&g_gp, memory_order_acquire),
                              memory_order_relaxed);
        /* The store must be seen before the snapshot is loaded: the writer's membarrier
         * orders it, or this thread's own fence. */
        if (g_memb) atomic_signal_fence(memory_order_seq_cst);
        else atomic_thread_fence(memory_order_seq_cst);
    }
    return READER_TOKEN;
}

int cc__hooks_read_lock(void)
{
    return read_lock(1);
}

static inline void read_unlock(int token)
{
    if (__builtin_expect(token != READER_TOKEN, 0)) {
        atomic_fetch_sub(&g_readers[token & 1], 1);
        return;
    }
    struct reader *r = t_reader;
    /* Release: the section's loads of the snapshot are done before the writer sees 0. */
    if (--r->nest == 0) atomic_store_explicit(&r->ctr, 0, memory_order_release);
}

void cc__hooks_read_unlock(int token)
{
    read_unlock(token);
}

int cc__hooks_in_hook(void)
{
    return t_runs != NULL;
}

int cc__hooks_running(const cc__chain_set_t *set)
{
    for (const struct run_frame *f = t_runs; f; f = f->up)
        if (f->set == set) return 1;
    return 0;
}

static void backoff(unsigned spins)
{
    if (spins < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

/* Wait until no reader can hold a snapshot retired before this call. Writers only, one
 * at a time (g_write_lock). */
static void synchronize(void)
{
    pthread_once(&g_reader_once, reader_init); /* g_memb is settled before it is read */
    uint64_t gp = atomic_fetch_add(&g_gp, 1) + 1;
    if (!g_memb || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        atomic_thread_fence(memory_order_seq_cst); /* with g_memb it cannot fail: registered */
    pthread_mutex_lock(&g_reader_lock);
    for (struct reader *r = g_reader_list; r; r = r->next) {
        uint64_t c;
        for (unsigned spins = 0;
             (c = atomic_load_explicit(&r->ctr, memory_order_acquire)) != 0 && c < gp; spins++)
            backoff(spins);
    }
    pthread_mutex_unlock(&g_reader_lock);
    unsigned p = atomic_fetch_add(&g_phase, 1u) & 1u;
    for (unsigned spins = 0; atomic_load(&g_readers[p]) > 0; spins++)
        backoff(spins);
}

/* Publish `next` on the chain and free the snapshot it replaces. */
static void publish(cc__chain_t *chain, struct cc__hook_snap *next)
{
    struct cc__hook_snap *old = atomic_exchange(&chain->snap, next);
    if (old) {
        synchronize();
        free(old);
    }
}

static struct cc__hook_snap *snap_copy(const struct cc__hook_snap *old, uint32_t extra)
{
    uint32_t n = old ? old->n : 0;
    struct cc__hook_snap *s = malloc(sizeof(*s) + (size_t)(n + extra) * sizeof(struct cc__hook));
    if (!s) return NULL;
    s->n = n;
    if (n) memcpy(s->hooks, old->hooks, (size_t)n * sizeof(struct cc__hook));
    return s;
}

/* Room for `n` more registry entries. */
static int reg_reserve(size_t n)
{
    if (g_capreg - g_nreg >= n) return 0;
    size_t cap = g_capreg ? g_capreg : 16;
    while (cap - g_nreg < n)
        cap *= 2;
    struct reg *nr = realloc(g_reg, cap * sizeof(*nr));
    if (!nr) return -1;
    g_reg = nr;
    g_capreg = cap;
    return 0;
}

cc_status_t cc__hook_add(cc__chain_set_t *set, int kind, void (*fn)(void), void *user,
                         unsigned flags, const void *owner, cc_hook_handle_t *out)
{
    cc__chain_t *chain = &set->chain[kind];
    pthread_mutex_lock(&g_write_lock);
    struct cc__hook_snap *s = snap_copy(atomic_load(&chain->snap), 1);
    cc_hook_handle_t h = g_next_handle;
    if (!s || reg_reserve(1) != 0) {
        pthread_mutex_unlock(&g_write_lock);
        free(s);
        cc_log_error(CC_SUBSYS_HOOKS, "hooks: out of memory adding a hook");
        return CC_ERR_NO_MEMORY;
    }
    g_next_handle++;
    g_reg[g_nreg++] = (struct reg){h, set, kind, -1, owner};
    s->hooks[s->n++] = (struct cc__hook){h, fn, user, flags, -1};
    publish(chain, s);
    pthread_mutex_unlock(&g_write_lock);
    *out = h;
    return CC_OK;
}

/* A slot no subscriber that can share an op with `set` holds: one of the
 * same set, one of the global set (it runs for every op) or, for the global
 * set, one of any set. Called with the write lock. */
static int free_slot(const cc__chain_set_t *set)
{
    unsigned used = 0;
    for (size_t i = 0; i < g_nreg; i++) {
        const struct reg *r = &g_reg[i];
        if (r->slot >= 0 &&
            (r->set == set || r->set == &cc__global_hooks || set == &cc__global_hooks))
            used |= 1u << r->slot;
    }
    for (int k = 0; k < CC_HOOK_SUBSCRIBERS; k++)
        if (!(used & (1u << k))) return k;
    return -1;
}

/* A pre that sets no token: a subscriber without one still needs its PRE entry, the
 * op's record that it saw the op. */
static cc_status_t pre_none(const cc_op_info_t *op, void *user, void **token)
{
    (void)op, (void)user, (void)token;
    return CC_OK;
}

/* The callback a subscriber has for chain `kind`, or NULL. */
static void (*sub_fn(const cc_subscriber_t *sub, int kind))(void)
{
    switch (kind) {
    case CC__HOOK_PRE:
        return (void (*)(void))(sub->pre ? sub->pre : pre_none);
    case CC__HOOK_START:
        return (void (*)(void))sub->start;
    case CC__HOOK_POST:
        return (void (*)(void))sub->post;
    case CC__HOOK_WAIT:
        return (void (*)(void))sub->wait;
    default:
        return (void (*)(void))sub->abort;
    }
}

cc_status_t cc__hook_add_subscriber(cc__chain_set_t *set, const cc_subscriber_t *sub, void *user,
                                    unsigned flags, const void *owner, cc_hook_handle_t *out)
{
    struct cc__hook_snap *snap[CC__HOOK_KINDS] = {0};
    cc_status_t st = CC_ERR_NO_MEMORY;
    pthread_mutex_lock(&g_write_lock);
    int slot = free_slot(set);
    if (slot < 0) {
        st = CC_ERR_BUSY;
        goto fail;
    }
    /* Everything that can fail first: all entries go on, or none. */
    if (reg_reserve(CC__HOOK_KINDS) != 0) goto fail;
    for (int k = 0; k < CC__HOOK_KINDS; k++)
        if (sub_fn(sub, k) && !(snap[k] = snap_copy(atomic_load(&set->chain[k].snap), 1)))
            goto fail;
    cc_hook_handle_t h = g_next_handle++;
    /* PRE last: an op that ran this PRE finds the rest published (see chain.h). */
    for (int k = CC__HOOK_KINDS - 1; k >= 0; k--) {
        if (!snap[k]) continue;
        unsigned f = k == CC__HOOK_ABORT ? flags : 0u;
        snap[k]->hooks[snap[k]->n++] =
            (struct cc__hook){h, sub_fn(sub, k), user, f, k == CC__HOOK_ABORT ? -1 : slot};
        g_reg[g_nreg++] = (struct reg){h, set, k, slot, owner};
        publish(&set->chain[k], snap[k]);
    }
    pthread_mutex_unlock(&g_write_lock);
    *out = h;
    return CC_OK;
fail:
    pthread_mutex_unlock(&g_write_lock);
    for (int k = 0; k < CC__HOOK_KINDS; k++)
        free(snap[k]);
    /* A full set is the caller's to say: it knows the communicator's name. */
    if (st == CC_ERR_NO_MEMORY)
        cc_log_error(CC_SUBSYS_HOOKS, "hooks: out of memory adding a subscriber");
    return st;
}

int cc__hook_slot(cc_hook_handle_t handle)
{
    int slot = -1;
    pthread_mutex_lock(&g_write_lock);
    for (size_t i = 0; i < g_nreg && slot < 0; i++)
        if (g_reg[i].handle == handle) slot = g_reg[i].slot;
    pthread_mutex_unlock(&g_write_lock);
    return slot;
}

/* Publish a copy of the chain without `handle`. Called with the write lock. */
static void chain_without(cc__chain_t *chain, cc_hook_handle_t handle)
{
    struct cc__hook_snap *old = atomic_load(&chain->snap);
    struct cc__hook_snap *s = old && old->n > 1 ? snap_copy(NULL, old->n - 1) : NULL;
    if (old && old->n > 1 && !s) {
        /* Out of memory: keep the entry but make it inert, in place. Readers
         * may see either the old fn or NULL; both are safe. */
        for (uint32_t i = 0; i < old->n; i++)
            if (old->hooks[i].handle == handle)
                __atomic_store_n(&old->hooks[i].fn, NULL, __ATOMIC_SEQ_CST);
        synchronize();
        return;
    }
    if (s) {
        s->n = 0;
        for (uint32_t i = 0; i < old->n; i++)
            if (old->hooks[i].handle != handle) s->hooks[s->n++] = old->hooks[i];
    }
    publish(chain, s);
}

cc_status_t cc__hook_remove(cc_hook_handle_t handle)
{
    int found = 0;
    pthread_mutex_lock(&g_write_lock);
    /* Kind by kind from PRE: a subscriber's PRE goes first, so no op starts a token it
     * would not see the end of while the rest go. */
    for (int k = 0; k < CC__HOOK_KINDS; k++) {
        for (size_t i = 0; i < g_nreg; i++) {
            if (g_reg[i].handle != handle || g_reg[i].kind != k) continue;
            struct reg r = g_reg[i];
            g_reg[i] = g_reg[--g_nreg];
            chain_without(&r.set->chain[r.kind], handle);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&g_write_lock);
    return found ? CC_OK : CC_ERR_NOT_FOUND;
}

void cc__hooks_drop_owner(cc__chain_set_t *set, const void *owner)
{
    pthread_mutex_lock(&g_write_lock);
    for (size_t i = 0; i < g_nreg;) {
        if (g_reg[i].owner == owner && g_reg[i].set == set) g_reg[i] = g_reg[--g_nreg];
        else i++;
    }
    for (int k = 0; k < CC__HOOK_KINDS; k++) publish(&set->chain[k], NULL);
    pthread_mutex_unlock(&g_write_lock);
}

/* Run one snapshot (not NULL) of PRE hooks; returns the first veto. A subscriber's slot
 * records it ran (its handle) before it runs: a vetoing subscriber gets its POST. */
static inline cc_status_t run_pre_snap(const struct cc__hook_snap *s, const cc_op_info_t *op,
                                       cc__hook_tokens_t *tok)
{
    for (uint32_t i = 0; i < s->n; i++) {
        const struct cc__hook *h = &s->hooks[i];
        void (*fn)(void) = __atomic_load_n(&h->fn, __ATOMIC_RELAXED);
        if (!fn) continue;
        cc_status_t st;
        if (h->slot < 0) {
            st = ((cc_pre_hook_fn)fn)(op, h->user);
        } else {
            tok->owner[h->slot] = h->handle;
            tok->token[h->slot] = NULL;
            st = ((cc_sub_pre_fn)fn)(op, h->user, &tok->token[h->slot]);
        }
        if (st != CC_OK) return st;
    }
    return CC_OK;
}

cc_status_t cc__hooks_run_pre_any(const cc__chain_set_t *local, const cc_op_info_t *op,
                                  cc__hook_tokens_t *tok)
{
    int rd = read_lock(1);
    struct run_frame f = {local, t_runs};
    t_runs = &f;
    /* Loaded inside the section: a snapshot loaded before it could be freed under us. */
    const struct cc__hook_snap *g = atomic_load(&cc__global_hooks.chain[CC__HOOK_PRE].snap);
    const struct cc__hook_snap *l = local ? atomic_load(&local->chain[CC__HOOK_PRE].snap) : NULL;
    cc_status_t st = g ? run_pre_snap(g, op, tok) : CC_OK;
    if (st == CC_OK && l) st = run_pre_snap(l, op, tok);
    t_runs = f.up;
    read_unlock(rd);
    return st;
}

/* One snapshot (not NULL) of START, POST or WAIT hooks. A subscriber runs only for an op
 * whose PRE it ran, with the token it set there. */
static inline void run_op_snap(const struct cc__hook_snap *s, const cc_op_info_t *op,
                               const cc__hook_tokens_t *tok)
{
    for (uint32_t i = 0; i < s->n; i++) {
        const struct cc__hook *h = &s->hooks[i];
        void (*fn)(void) = __atomic_load_n(&h->fn, __ATOMIC_RELAXED);
        if (!fn) continue;
        if (h->slot < 0)
            ((cc_op_hook_fn)fn)(op, h->user);
        else if (tok->owner[h->slot] == h->handle)
            ((cc_sub_op_fn)fn)(op, h->user, tok->token[h->slot]);
    }
}

void cc__hooks_run_op_any(int kind, const cc__chain_set_t *local, const cc_op_info_t *op,
                          const cc__hook_tokens_t *tok)
{
    int rd = read_lock(1);
    struct run_frame f = {local, t_runs};
    t_runs = &f;
    const struct cc__hook_snap *g = atomic_load(&cc__global_hooks.chain[kind].snap);
    const struct cc__hook_snap *l = local ? atomic_load(&local->chain[kind].snap) : NULL;
    if (g) run_op_snap(g, op, tok);
    if (l) run_op_snap(l, op, tok);
    t_runs = f.up;
    read_unlock(rd);
}

static void run_abort_snap(const struct cc__hook_snap *s, const cc_abort_info_t *info,
                           int signal_ctx)
{
    for (uint32_t i = 0; s && i < s->n; i++) {
        cc_abort_hook_fn fn =
            (cc_abort_hook_fn)__atomic_load_n(&s->hooks[i].fn, __ATOMIC_RELAXED);
        if (!fn || (signal_ctx && !(s->hooks[i].flags & CC_HOOK_SIGNAL_SAFE))) continue;
        fn(info, s->hooks[i].user);
    }
}

void cc__hooks_run_abort(const cc__chain_set_t *local, const cc_abort_info_t *info,
                         int signal_ctx)
{
    if (!cc__hooks_any(local, CC__HOOK_ABORT)) return;
    int tok = read_lock(!signal_ctx);
    struct run_frame f = {local, t_runs};
    t_runs = &f;
    run_abort_snap(atomic_load(&cc__global_hooks.chain[CC__HOOK_ABORT].snap), info, signal_ctx);
    if (local) run_abort_snap(atomic_load(&local->chain[CC__HOOK_ABORT].snap), info, signal_ctx);
    t_runs = f.up;
    cc__hooks_read_unlock(tok);
}
