/*
 * modules.h - the module table of the ring (what an offline reader needs to
 * symbolise return addresses) and the capture of those addresses
 * (internal to lib/recorder).
 */
#ifndef CC_RECORDER_MODULES_H
#define CC_RECORDER_MODULES_H

#include <stdint.h>

#include "recorder/ring.h"

/*
 * Append every loaded module not yet in the table: path, load address,
 * address range, GNU build id. Called at open and when a comm is created
 * (plugins are loaded late). Off the op path (mutex, dl_iterate_phdr).
 * Returns the number of modules added.
 */
unsigned cc__fr_modules_scan(cc__fr_ring_t *r);

/* In a forked child: re-initialise the mutex a parent thread may have held. */
void cc__fr_modules_after_fork(void);

/* Load the unwinder now, so the first captured stack does not allocate. */
void cc__fr_stack_prepare(void);

/*
 * Up to `depth` return addresses of the caller's callers (the recorder's own
 * frames skipped) into `frames`. Returns how many.
 */
unsigned cc__fr_stack_capture(uint64_t *frames, unsigned depth);

#endif /* CC_RECORDER_MODULES_H */
