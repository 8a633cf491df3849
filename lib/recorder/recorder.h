/*
 * recorder.h - the flight recorder (internal entry points for the core).
 *
 * One ring per process in a file-backed shared mapping
 * ($CCOMM_RECORDER_DIR/<job id>/rank<r>.<pid>.ccfr), so the record survives
 * the process. The recorder is a subscriber on the hook chains (registered
 * for all communicators by cc__recorder_open); the core calls only these.
 * Format: docs/recorder-format.md.
 */
#ifndef CC_RECORDER_RECORDER_H
#define CC_RECORDER_RECORDER_H

#include <stdint.h>

#include "ccomm/status.h"

/*
 * Create the ring file and subscribe to every comm's chains. Called once
 * per process by the core when the first (world) communicator exists.
 * capacity 0 (CCOMM_RECORDER_ENTRIES=0) turns the recorder off: CC_OK, nothing made.
 * A failure to create the file is logged and returns an error; the core
 * goes on without a recorder.
 */
cc_status_t cc__recorder_open(int world_rank, int world_size, const char *job_id);

/* Unsubscribe and unmap; the file stays on disk. At process exit and in tests. */
void cc__recorder_close(void);

/* Write the PyTorch-compatible JSON dump to `path` (atomic rename). Off the op path. */
cc_status_t cc__recorder_dump_json(const char *path);

/* Async-signal-safe: note a fatal signal in the ring header. */
void cc__recorder_mark_signal(int signo);

/* The path of this process's ring file, or NULL when off. */
const char *cc__recorder_path(void);

#endif /* CC_RECORDER_RECORDER_H */
