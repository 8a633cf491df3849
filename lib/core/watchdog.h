/*
 * watchdog.h - the watchdog thread: coordinated dumps, heartbeats, stalls
 * (see watchdog.c). One per process, started with the first communicator.
 */
#ifndef CC_CORE_WATCHDOG_H
#define CC_CORE_WATCHDOG_H

#include <stddef.h>

#include "core/comm.h"

cc_status_t cc__watchdog_start(cc__world_t *world, int world_rank, int world_size);
/* Ask the watchdog to write a dump now (any thread, not a signal handler). */
void cc__watchdog_request_dump(const char *reason);
/* The same from a signal handler: async-signal-safe. */
void cc__watchdog_signal_dump(void);
/* 1 if the watchdog's own store connection goes to `store_addr` (the store of the first
 * world): a store host that waits for its clients to leave must not wait for that one. */
int cc__watchdog_uses_store(const char *store_addr);
/* That store is about to stop (its host releases the world): the watchdog stops its store
 * traffic (heartbeats, job-wide dumps) and returns once it no longer touches the store
 * (bounded); local dumps go on. Without this a process that outlives its world logs a
 * failed store call every tick. */
void cc__watchdog_store_closing(void);
/* Wake the watchdog (async-signal-safe). */
void cc__watchdog_poke(void);

#endif /* CC_CORE_WATCHDOG_H */
