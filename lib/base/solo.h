/*
 * solo.h - plain stores for a process's one writing thread.
 *
 * Most training processes issue every op from one thread. The counters every
 * op bumps (the door's op id, the recorder's record id, clog's ring position)
 * and the recorder's slot seqlocks then have one writer, and the locked instruction of each
 * update (some 20 cycles; 17 of a 2-rank 8-byte broadcast's 26 ns of
 * recorder cost, docs/performance.md, 2026-12-07 seventh session) buys
 * nothing. So the first thread to write becomes the process's owner and
 * writes them with plain loads and stores, inside a section:
 *
 *     if (cc__solo_enter(tag)) { ...plain stores...; cc__solo_leave(); }
 *     else                     { ...the locked path... }
 *
 * Any other thread that writes calls into cc__solo_enter's slow path once:
 * it sets `multi`, runs membarrier(PRIVATE_EXPEDITED) so that every CPU
 * running one of the process's threads passes a full barrier, and waits until
 * the owner is outside any section. From then on every thread, the owner
 * too, takes the locked path: the switch is one-way, at most once a process.
 *
 * This is Dekker's exclusion with the fence moved to the rare side: the owner
 * stores `busy` and loads `multi` with only a compiler barrier between; the
 * joiner stores `multi`, fences every CPU, then loads `busy`. Either the
 * joiner sees the section and waits for its end, or the owner sees `multi`.
 * Where membarrier is not available (an old kernel, seccomp), or
 * CCOMM_SOLO_WRITER=0, no thread is ever owner.
 *
 * A signal handler that interrupts the owner inside a section runs on the
 * owner's thread: it cannot wait for the section, and nothing else writes
 * while it runs. cc__solo_enter returns 0 to it (the locked path) with
 * *inside set to the interrupted section's tag, which the handler must not
 * touch (the recorder's tag is the slot's index + 1).
 */
#ifndef CC_BASE_SOLO_H
#define CC_BASE_SOLO_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "base/tls.h"

enum { CC__SOLO_UNKNOWN = 0, CC__SOLO_OWNER = 1, CC__SOLO_SHARED = 2 };

/* Tags of sections that hold no recorder slot: the door's op id, clog's ring position. */
#define CC__SOLO_TAG_COUNTER UINT64_MAX
#define CC__SOLO_TAG_CLOG    (UINT64_MAX - 1)

struct cc__solo {
    alignas(64) _Atomic uint64_t busy; /* the owner's section's tag, 0 outside; owner writes */
    _Atomic int multi;                 /* 1: every writer takes the locked path, for good */
    _Atomic int claimed;               /* 1: a thread became the owner */
};

extern struct cc__solo cc__solo_g;
extern __thread unsigned char cc__solo_role CC__TLS_HOT;

/* The slow path of cc__solo_enter: a thread's first section (become the owner, or switch the
 * process to the locked path) or any section of a thread that is not the owner. */
int cc__solo_enter_slow(uint64_t tag, uint64_t *inside);

/*
 * Enter a section tagged `tag` (not 0). 1: write with plain stores, then
 * cc__solo_leave(). 0: take the locked path (no leave); *inside is 0, or the
 * tag of the section this call interrupted (a signal handler on the owner's
 * thread), which must be left alone.
 */
static inline int cc__solo_enter(uint64_t tag, uint64_t *inside)
{
    *inside = 0;
    unsigned char role = cc__solo_role;
    if (__builtin_expect(role != CC__SOLO_OWNER, 0))
        return role == CC__SOLO_SHARED ? 0 : cc__solo_enter_slow(tag, inside);
    uint64_t b = atomic_load_explicit(&cc__solo_g.busy, memory_order_relaxed);
    if (__builtin_expect(b != 0, 0)) {
        *inside = b;
        return 0;
    }
    atomic_store_explicit(&cc__solo_g.busy, tag, memory_order_relaxed);
    /* The busy store before the multi load: a joiner's membarrier orders them on this CPU. */
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(!atomic_load_explicit(&cc__solo_g.multi, memory_order_relaxed), 1))
        return 1;
    atomic_store_explicit(&cc__solo_g.busy, 0, memory_order_release);
    cc__solo_role = CC__SOLO_SHARED;
    return 0;
}

/* Leave a section that cc__solo_enter opened with 1. Release: a joiner that sees busy 0 sees
 * what the section wrote. */
static inline void cc__solo_leave(void)
{
    atomic_store_explicit(&cc__solo_g.busy, 0, memory_order_release);
}

/* Read the setting and register for membarrier, once; call before the first section from a
 * normal (not signal-handler) context: the library's comm creation and the recorder's open do. */
void cc__solo_init(void);

/* Whether the process still has one writer (for tests and the log). */
int cc__solo_active(void);

/* How many threads ran the switch's barrier (for tests: after the first switch, none). */
unsigned cc__solo_barriers(void);

#endif /* CC_BASE_SOLO_H */
