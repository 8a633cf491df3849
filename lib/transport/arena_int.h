/*
 * arena_int.h - what arena.c lends arena_sync.c: the shm mailbox bell the
 * arena's waiters sleep on, and ringing a peer's (arena.c says why the
 * mailbox's). Transport-internal.
 */
#ifndef CC_TRANSPORT_ARENA_INT_H
#define CC_TRANSPORT_ARENA_INT_H

#include "transport/arena.h"
#include "transport/shm.h"

/* This rank's shm futex word (NULL only without shm peers, when no arena exists). */
_Atomic uint32_t *cc__arena_bell(const cc__arena_t *ar);
/* Bump `peer`'s bell and wake it. Any thread. */
void cc__arena_ring(const cc__arena_t *ar, int peer);

#endif /* CC_TRANSPORT_ARENA_INT_H */
