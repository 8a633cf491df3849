/*
 * services.h - process-wide services that start with the first communicator:
 * the flight recorder, the clog logger, the tracepoint provider, the
 * watchdog and the signal handlers. Each is a subscriber on the hook chains
 * or a thread of its own; none is on an op's path.
 */
#ifndef CC_CORE_SERVICES_H
#define CC_CORE_SERVICES_H

#include "core/comm.h"

/* Start the services once per process (later calls do nothing). */
void cc__services_start(cc__world_t *world, int world_rank, int world_size);

#endif /* CC_CORE_SERVICES_H */
