/*
 * chain.c - hook chains: lock-free readers, serialized writers, and safe
 * reclamation of retired snapshots (see chain.h).
 *
 * Reclamation uses two reader counters and a phase bit. A reader picks the
 * counter of the current phase, increments it, and re-checks the phase; if
 * the phase moved meanwhile it backs out and retries, so a reader that got
 * in always loads a snapshot at least as new as the one published before
 * the phase it counted in. A writer publishes the new snapshot, flips the
 * phase, and waits for the old phase's counter to drain; then no reader can
 * hold the retired snapshot and it is freed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks/chain.h"
#include "base/log.h"

cc__chain_set_t cc__global_hooks;

static _Atomic unsigned g_phase;
static _Atomic long g_readers[2];

/* The chains this thread is running, innermost first: one frame on the runner's stack per
 * run, naming the set the op belongs to (the global hooks run for it too). */
struct run_frame {
    const cc__chain_set_t *set;
    struct run_frame *up;
};
static __thread struct run_frame *t_runs;

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

int cc__hooks_read_lock(void)
{
    for (;;) {
        unsigned p = atomic_load(&g_phase) & 1u;
        atomic_fetch_add(&g_readers[p], 1);
        if ((atomic_load(&g_phase) & 1u) == p) return (int)p;
        atomic_fetch_sub(&g_readers[p], 1);
    }
}

void cc__hooks_read_unlock(int token)
{
    atomic_fetch_sub(&g_readers[token & 1], 1);
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

/* Wait until no reader can hold a snapshot retired before this call. */
static void synchronize(void)
{
    unsigned p = atomic_fetch_add(&g_phase, 1u) & 1u;
    for (unsigned spins = 0; atomic_load(&g_readers[p]) != 0; spins++) {
        if (spins < 64) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
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

/* Run one snapshot of PRE hooks; returns the first veto. A subscriber's slot
 * records it ran (its handle) before it runs: a vetoing subscriber gets its POST. */
static cc_status_t run_pre_snap(const struct cc__hook_snap *s, const cc_op_info_t *op,
                                cc__hook_tokens_t *tok)
{
    for (uint32_t i = 0; s && i < s->n; i++) {
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

cc_status_t cc__hooks_run_pre(const cc__chain_set_t *local, const cc_op_info_t *op,
                              cc__hook_tokens_t *tok)
{
    if (!cc__hooks_any(local, CC__HOOK_PRE)) return CC_OK;
    int rd = cc__hooks_read_lock();
    struct run_frame f = {local, t_runs};
    t_runs = &f;
    cc_status_t st = run_pre_snap(atomic_load(&cc__global_hooks.chain[CC__HOOK_PRE].snap), op, tok);
    if (st == CC_OK && local)
        st = run_pre_snap(atomic_load(&local->chain[CC__HOOK_PRE].snap), op, tok);
    t_runs = f.up;
    cc__hooks_read_unlock(rd);
    return st;
}

/* A subscriber runs only for an op whose PRE it ran, with the token it set there. */
static void run_op_snap(const struct cc__hook_snap *s, const cc_op_info_t *op,
                        const cc__hook_tokens_t *tok)
{
    for (uint32_t i = 0; s && i < s->n; i++) {
        const struct cc__hook *h = &s->hooks[i];
        void (*fn)(void) = __atomic_load_n(&h->fn, __ATOMIC_RELAXED);
        if (!fn) continue;
        if (h->slot < 0)
            ((cc_op_hook_fn)fn)(op, h->user);
        else if (tok->owner[h->slot] == h->handle)
            ((cc_sub_op_fn)fn)(op, h->user, tok->token[h->slot]);
    }
}

void cc__hooks_run_op(int kind, const cc__chain_set_t *local, const cc_op_info_t *op,
                      const cc__hook_tokens_t *tok)
{
    if (!cc__hooks_any(local, kind)) return;
    int rd = cc__hooks_read_lock();
    struct run_frame f = {local, t_runs};
    t_runs = &f;
    run_op_snap(atomic_load(&cc__global_hooks.chain[kind].snap), op, tok);
    if (local) run_op_snap(atomic_load(&local->chain[kind].snap), op, tok);
    t_runs = f.up;
    cc__hooks_read_unlock(rd);
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
    int tok = cc__hooks_read_lock();
    struct run_frame f = {local, t_runs};
    t_runs = &f;
    run_abort_snap(atomic_load(&cc__global_hooks.chain[CC__HOOK_ABORT].snap), info, signal_ctx);
    if (local) run_abort_snap(atomic_load(&local->chain[CC__HOOK_ABORT].snap), info, signal_ctx);
    t_runs = f.up;
    cc__hooks_read_unlock(tok);
}
