/*
 * net_shm.c - services of the shared-memory transport for the native
 * engine's shared-memory algorithms (lib/native/shm_arena.c).
 *
 * Those algorithms synchronise through their own shared segment but sleep
 * on this rank's mailbox bell: it is the one futex word that every event a
 * waiter must not miss already bumps (a peer's abort or destroy, this
 * rank's own abort from any thread), so an arena waiter wakes for them
 * without a second wake-up path. Liveness reuses the pidfds and the
 * mailboxes' `closed` flags that the transport keeps for its own waits.
 */
#include <string.h>

#include "base/log.h"
#include "transport/shm.h"

/* The shm view of `peer`, or NULL when it is not reached over shared memory. */
static struct cc__shm_peer *shm_peer(cc__net_t *net, int peer)
{
    if (!net || peer < 0 || peer >= net->size || net->peers[peer].tp != CC__TP_SHM) return NULL;
    return net->peers[peer].priv;
}

_Atomic uint32_t *cc__net_bell(cc__net_t *net)
{
    struct cc__shm_state *st = net ? cc__shm(net) : NULL;
    return st && st->mine ? &st->mine->bell : NULL;
}

void cc__net_ring(cc__net_t *net, int peer)
{
    struct cc__shm_peer *sp = shm_peer(net, peer);
    if (sp) cc__shm_ring_bell(sp->their, 1);
}

void cc__net_bell_wait(cc__net_t *net, uint32_t seen, uint64_t timeout_ns)
{
    _Atomic uint32_t *bell = cc__net_bell(net);
    if (bell && timeout_ns) cc__futex_wait(bell, seen, timeout_ns);
}

uint64_t cc__net_spin_ns(const cc__net_t *net)
{
    return net ? net->spin_ns : 0;
}

int cc__net_aborting(const cc__net_t *net)
{
    return net ? atomic_load_explicit(&net->abort_reason, memory_order_acquire) : 0;
}

/*
 * A peer is lost when it died (its pidfd is readable) or closed its side
 * (aborted or destroyed its net). The loss is recorded in the net like the
 * transport's own, so later messages to it fail at once too.
 */
cc_status_t cc__net_peer_check(cc__net_t *net, int peer, const char **cause)
{
    struct cc__shm_peer *sp = shm_peer(net, peer);
    if (!sp) return CC_OK;
    if (sp->p->lost) {
        if (cause) *cause = sp->p->lost_cause;
        return sp->p->lost;
    }
    const char *why = NULL;
    if (atomic_load(&sp->their->closed))
        why = "closed its side (aborted or destroyed its communicator)";
    else if (cc__peer_dead(sp->pidfd, sp->pid))
        why = "died";
    if (!why) return CC_OK;
    /* Whatever it sent before going stays deliverable, as in the transport's own check. */
    cc__shm_drain(net, sp);
    cc__net_peer_lost(net, sp->p, why, NULL);
    if (cause) *cause = why;
    return CC_ERR_PEER_LOST;
}
