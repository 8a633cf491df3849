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

#include <stddef.h>
#include <stdint.h>

#include "ccomm/hooks.h"
#include "ccomm/status.h"
#include "hooks/chain.h"

/*
 * Create the ring file and subscribe to every comm's chains. Called once
 * per process by the core when the first (world) communicator exists,
 * before its COMM_INIT passes the door (a comm first seen later is still
 * registered, by its first op). It subscribes through the public hook API
 * (cc_hook_add_subscriber) like any user; its per-op state is its token.
 * capacity 0 (CCOMM_RECORDER_ENTRIES=0) turns the recorder off: CC_OK, nothing made.
 * A failure to create the file is logged and returns an error; the core
 * goes on without a recorder. A second open while open: CC_ERR_INVALID_USAGE.
 * A forked child drops its parent's ring (it may open its own).
 */
cc_status_t cc__recorder_open(int world_rank, int world_size, const char *job_id);

/* Unsubscribe and unmap; the file stays on disk. In tests; not needed at
 * exit (an atexit handler marks the ring "exited normally"). Not while ops
 * of this process run outside the hook chains (direct subscriber calls). */
void cc__recorder_close(void);

/* Write the PyTorch-compatible JSON dump to `path` (replaced atomically:
 * temporary file and rename). Any thread, off the op path, never from a
 * signal handler; never blocks writers. CC_ERR_INVALID_USAGE when off. */
cc_status_t cc__recorder_dump_json(const char *path);

/* Dump to the default path (never overwriting an earlier dump); the path chosen goes to
 * out (may be NULL). */
cc_status_t cc__recorder_dump_default(char *out, size_t outlen);

/* Async-signal-safe: note a fatal signal in the ring header. */
void cc__recorder_mark_signal(int signo);

/* The path of this process's ring file, or NULL when off. */
const char *cc__recorder_path(void);

/*
 * The callbacks of the subscriber cc__recorder_open adds for every comm
 * (exposed for tests and the benchmark, which call them directly). Each
 * returns at once when the recorder is off. on_pre sets *token to the op's
 * record id (NULL = not recorded); on_start and on_post take it back. No lock, allocation, syscall or formatting, except the first op
 * of a comm the recorder has not seen (registers it) and the first op of a
 * thread (caches its id). on_abort is async-signal-safe.
 */
cc_status_t cc__recorder_on_pre(const cc_op_info_t *op, void *user, void **token);
void cc__recorder_on_start(const cc_op_info_t *op, void *user, void *token);
void cc__recorder_on_post(const cc_op_info_t *op, void *user, void *token);
void cc__recorder_on_abort(const cc_abort_info_t *info, void *user);

/*
 * The record id of an op from its token record (the op's `tokens`): what the
 * recorder's subscription set in that op's PRE, 0 when it did not record it
 * (off, or subscribed after the op's PRE). For cc__recorder_gpu's callers.
 * Two loads and a compare; any thread.
 */
uint64_t cc__recorder_id(const cc__hook_tokens_t *tokens);

/*
 * The true GPU times (monotonic ns) of the kernels of the op recorded as
 * `rec_id` (cc__recorder_id), and what ran them (NCCL's algorithm/protocol, or "cupti"), from
 * the CUDA plugin once CUPTI or NCCL's profiler reported them, possibly
 * after the op's POST. Dropped if the slot was reused. No lock, allocation
 * or syscall. Any thread.
 */
void cc__recorder_gpu(uint64_t rec_id, uint64_t t_start_ns, uint64_t t_end_ns,
                      const char *detail);

/*
 * Register a communicator in the ring's table (the PRE subscriber does it
 * for COMM_INIT and for the first op of a comm it has not seen; the core may
 * call it earlier). world_ranks: `size` world ranks, or NULL when unknown.
 * Returns the table slot, or -1 (recorder off, table full).
 */
int cc__recorder_add_comm(uint64_t comm_id, uint64_t parent_id, const char *name, int rank,
                          int size, const int32_t *world_ranks);

#endif /* CC_RECORDER_RECORDER_H */
