/*
 * solo.c - the owner's claim and the one-way switch to the locked path (see
 * solo.h).
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/solo.h"

struct cc__solo cc__solo_g;
__thread unsigned char cc__solo_role CC__TLS_HOT;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic int g_ready; /* 1: cc__solo_init ran; 2: and a thread may become the owner */

static int register_membarrier(void)
{
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* The child's one thread is the only writer: no barrier is needed to settle who the owner is. */
static void after_fork_child(void)
{
    atomic_store(&cc__solo_g.busy, 0);
    int can = atomic_load(&g_ready) == 2 && register_membarrier();
    if (!can) {
        atomic_store(&cc__solo_g.multi, 1);
        if (cc__solo_role == CC__SOLO_OWNER) cc__solo_role = CC__SOLO_SHARED;
        atomic_store(&g_ready, 1);
        return;
    }
    /* The parent's owner, if it was another thread, is gone: this one may claim. */
    if (cc__solo_role != CC__SOLO_OWNER && !atomic_load(&cc__solo_g.multi))
        atomic_store(&cc__solo_g.claimed, 0);
}

static void solo_init_once(void)
{
    int can = cc__cfg()->solo_writer && register_membarrier();
    pthread_atfork(NULL, NULL, after_fork_child);
    atomic_store(&g_ready, can ? 2 : 1);
}

void cc__solo_init(void)
{
    pthread_once(&g_once, solo_init_once);
}

/* 1: a joiner saw the owner out of its sections after the barrier; every later section of
 * the owner sees `multi`, so later joiners need neither the barrier nor the wait. */
static _Atomic int g_switched;
static _Atomic unsigned g_barriers; /* joins that ran the barrier (cc__solo_barriers) */

/* Make the process's writers take the locked path, and wait for the owner's section, if
 * one is open, to end. */
static void join(void)
{
    if (atomic_load_explicit(&g_switched, memory_order_acquire)) return;
    atomic_store(&cc__solo_g.multi, 1);
    atomic_fetch_add_explicit(&g_barriers, 1, memory_order_relaxed);
    /* Registered at init (g_ready 2 is the only way to an owner), so this cannot fail;
     * should it, the full fence below is what this thread can do. */
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        atomic_thread_fence(memory_order_seq_cst);
    for (unsigned spins = 0; atomic_load_explicit(&cc__solo_g.busy, memory_order_acquire); spins++) {
        if (spins < 1000) cc__cpu_relax();
        else sched_yield(); /* the owner was preempted inside its section */
    }
    atomic_store_explicit(&g_switched, 1, memory_order_release);
}

int cc__solo_enter_slow(uint64_t tag, uint64_t *inside)
{
    *inside = 0;
    switch (cc__solo_role) {
    case CC__SOLO_OWNER: /* only through cc__solo_enter's own checks */
        return cc__solo_enter(tag, inside);
    case CC__SOLO_SHARED:
        return 0;
    default:
        break;
    }
    /* This thread's first section. Before cc__solo_init no thread can be the owner: nothing
     * to switch, and nothing to remember (the next section asks again). */
    int ready = atomic_load_explicit(&g_ready, memory_order_acquire);
    if (ready == 0) return 0;
    int zero = 0;
    if (ready == 2 && !atomic_load(&cc__solo_g.multi) &&
        atomic_compare_exchange_strong(&cc__solo_g.claimed, &zero, 1)) {
        cc__solo_role = CC__SOLO_OWNER;
        return cc__solo_enter(tag, inside);
    }
    /* A second writer (or no owner possible): the locked path, for every thread. Where no
     * thread ever claimed, there is no section to wait for, and the barrier is still cheap
     * next to a thread's first op. */
    if (ready == 2) join();
    else atomic_store(&cc__solo_g.multi, 1);
    cc__solo_role = CC__SOLO_SHARED;
    return 0;
}

unsigned cc__solo_barriers(void)
{
    return atomic_load_explicit(&g_barriers, memory_order_relaxed);
}

int cc__solo_active(void)
{
    return atomic_load(&cc__solo_g.claimed) && !atomic_load(&cc__solo_g.multi);
}
