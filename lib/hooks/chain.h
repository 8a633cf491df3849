/*
 * chain.h - hook chains read without locks.
 *
 * A chain is an atomic pointer to an immutable snapshot (an array of
 * hooks). Readers load the pointer inside a read-side section; writers
 * (add/remove, serialized by a mutex, never on the op path) publish a new
 * snapshot and retire the old one only after every reader that might still
 * hold it has left: a two-phase reader count in the manner of sleepable RCU.
 * An empty chain is a NULL pointer, so a chain without hooks costs one load.
 *
 * The layer knows nothing of communicators: a chain is owned by whoever
 * embeds it (the process-wide set, or one communicator), and an owner
 * pointer lets the core remove all hooks of a communicator at destroy.
 *
 * Subscribers (cc_hook_add_subscriber) put one entry on each chain, all
 * under one handle and one token slot. The op carries a cc__hook_tokens_t:
 * the PRE runner writes, in the subscriber's slot, its handle and the token
 * its pre callback set; the later runners call a subscriber only where the
 * op's slot holds that same handle, with that token. Handles are never
 * reused, so a slot taken over by a newer subscriber, or one added after
 * the op's PRE, never sees an older op's token.
 */
#ifndef CC_HOOKS_CHAIN_H
#define CC_HOOKS_CHAIN_H

#include <stdatomic.h>
#include <stdint.h>

#include "ccomm/hooks.h"

enum cc__hook_kind {
    CC__HOOK_PRE = 0,
    CC__HOOK_START,
    CC__HOOK_POST,
    CC__HOOK_WAIT,
    CC__HOOK_ABORT,
    CC__HOOK_KINDS
};

struct cc__hook {
    cc_hook_handle_t handle;
    void (*fn)(void); /* cast back according to the chain's kind (and slot) */
    void *user;
    unsigned flags;
    int slot; /* a subscriber's token slot (cc_sub_* callbacks); -1: a plain hook */
};

/*
 * The tokens of one op, one slot per subscriber that may see it (global and
 * its comm's together: CC_HOOK_SUBSCRIBERS). Zeroed memory is "no PRE ran".
 * Written by the PRE runner only; read by the others.
 */
typedef struct cc__hook_tokens {
    cc_hook_handle_t owner[CC_HOOK_SUBSCRIBERS]; /* whose PRE ran in slot i; 0 = none */
    void *token[CC_HOOK_SUBSCRIBERS];            /* what that PRE set */
} cc__hook_tokens_t;

struct cc__hook_snap {
    uint32_t n;
    struct cc__hook hooks[]; /* n entries, in the order they were added */
};

typedef struct cc__chain {
    _Atomic(struct cc__hook_snap *) snap; /* NULL when empty */
} cc__chain_t;

/* A chain set: one chain per kind. Zero-initialised memory is a valid empty set. */
typedef struct cc__chain_set {
    cc__chain_t chain[CC__HOOK_KINDS];
} cc__chain_set_t;

/* The process-wide set (hooks added with comm == NULL). */
extern cc__chain_set_t cc__global_hooks;

/*
 * Add a hook to set->chain[kind]. `owner` tags it (NULL for the global set)
 * so cc__hooks_drop_owner can remove a communicator's hooks at once.
 * Returns CC_OK, CC_ERR_NO_MEMORY.
 */
cc_status_t cc__hook_add(cc__chain_set_t *set, int kind, void (*fn)(void), void *user,
                         unsigned flags, const void *owner, cc_hook_handle_t *out);

/*
 * Add a subscriber to `set`: an entry on every chain it has a callback for
 * (PRE always, so the op records it saw PRE), one handle, one token slot
 * free in `set` and in every set an op of `set` also runs (the global set
 * runs for every op). Published PRE last, so an op whose PRE ran it finds
 * its START, POST and WAIT entries already there. Returns CC_OK,
 * CC_ERR_BUSY (no slot free; not logged), CC_ERR_NO_MEMORY (logged).
 */
cc_status_t cc__hook_add_subscriber(cc__chain_set_t *set, const cc_subscriber_t *sub, void *user,
                                    unsigned flags, const void *owner, cc_hook_handle_t *out);

/* Remove by handle (every entry of a subscriber, PRE first); waits until no
 * reader can still run it. */
cc_status_t cc__hook_remove(cc_hook_handle_t handle);

/* Remove every hook tagged with `owner` and free the set's snapshots.
 * The caller guarantees no op of that owner is in flight. */
void cc__hooks_drop_owner(cc__chain_set_t *set, const void *owner);

/* Read side. A section is short and never blocks. Nested sections are fine. */
int cc__hooks_read_lock(void);
void cc__hooks_read_unlock(int token);

/* 1 while the calling thread runs a hook (cc_hook_remove refuses then). */
int cc__hooks_in_hook(void);

/*
 * 1 while the calling thread runs hooks for an op of `set`'s owner (its own chains or the
 * global ones), at any depth. The core refuses ops of that owner then: they would run the
 * same hooks again, without end. One thread-local load when no hook runs.
 */
int cc__hooks_running(const cc__chain_set_t *set);

/*
 * Run the chains of a kind: the global set first, then `local` (may be
 * NULL). The PRE runner stops at the first veto and returns it; others
 * return nothing. `tok` is the op's token record (never NULL): PRE fills
 * it, the others read it. The abort runner with signal_ctx != 0 runs only
 * hooks flagged CC_HOOK_SIGNAL_SAFE. cc__hooks_run_pre and cc__hooks_run_op
 * (below, inline) test for an empty chain and call these otherwise.
 */
cc_status_t cc__hooks_run_pre_any(const cc__chain_set_t *local, const cc_op_info_t *op,
                                  cc__hook_tokens_t *tok);
void cc__hooks_run_op_any(int kind, const cc__chain_set_t *local, const cc_op_info_t *op,
                          const cc__hook_tokens_t *tok);

/* The token subscriber `handle` set in the op's PRE, or NULL when it did not
 * see that PRE: a token read back off the subscriber's callbacks (the tests
 * check the slots with it). */
static inline void *cc__hook_token(const cc__hook_tokens_t *tok, cc_hook_handle_t handle, int slot)
{
    return slot >= 0 && slot < CC_HOOK_SUBSCRIBERS && handle && tok->owner[slot] == handle
               ? tok->token[slot]
               : NULL;
}

/* The token slot of subscriber `handle`, or -1. Takes the write lock: not on the op path. */
int cc__hook_slot(cc_hook_handle_t handle);
void cc__hooks_run_abort(const cc__chain_set_t *local, const cc_abort_info_t *info,
                         int signal_ctx);

/* Cheap test used by the door to skip building what no hook will read. */
static inline int cc__hooks_any(const cc__chain_set_t *local, int kind)
{
    return atomic_load_explicit(&cc__global_hooks.chain[kind].snap, memory_order_relaxed) ||
           (local && atomic_load_explicit(&local->chain[kind].snap, memory_order_relaxed));
}

/* The runners: an empty chain costs its two loads here, in the caller, with no call (the
 * out-of-line runner saves six registers before it could look). */
static inline cc_status_t cc__hooks_run_pre(const cc__chain_set_t *local, const cc_op_info_t *op,
                                            cc__hook_tokens_t *tok)
{
    return cc__hooks_any(local, CC__HOOK_PRE) ? cc__hooks_run_pre_any(local, op, tok) : CC_OK;
}

static inline void cc__hooks_run_op(int kind, const cc__chain_set_t *local, const cc_op_info_t *op,
                                    const cc__hook_tokens_t *tok)
{
    if (cc__hooks_any(local, kind)) cc__hooks_run_op_any(kind, local, op, tok);
}

#endif /* CC_HOOKS_CHAIN_H */
