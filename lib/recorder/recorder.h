/*
 * recorder.h - the flight recorder (internal entry points for the core).
 *
 * One ring per process in a file-backed shared mapping
 * ($CCOMM_RECORDER_DIR/<job id>/rank<r>.<pid>.ccfr), so the record survives
 * the process. The op door calls cc__recorder_pre, _start and _post itself,
 * before the hook chains; aborts come through the abort chain, where
 * cc__recorder_open adds the recorder's hook. The core calls only these.
 * Format: docs/recorder-format.md.
 */
#ifndef CC_RECORDER_RECORDER_H
#define CC_RECORDER_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/hooks.h"
#include "ccomm/status.h"

/*
 * Create the ring file and add the abort hook for every comm. Called once
 * per process by the core when the first (world) communicator exists,
 * before its COMM_INIT passes the door (a comm first seen later is still
 * registered, by its first op). The abort hook goes through the public
 * hook API (cc_hook_add_abort) like any user's.
 * capacity 0 (CCOMM_RECORDER_ENTRIES=0) turns the recorder off: CC_OK, nothing made.
 * A failure to create the file is logged and returns an error; the core
 * goes on without a recorder. A second open while open: CC_ERR_INVALID_USAGE.
 * A forked child drops its parent's ring (it may open its own).
 */
cc_status_t cc__recorder_open(int world_rank, int world_size, const char *job_id);

/* Remove the abort hook and unmap; the file stays on disk. In tests; not
 * needed at exit (an atexit handler marks the ring "exited normally"). Not
 * while ops of this process run: the door's calls take no read-side
 * section (the core never closes the recorder). */
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
 * The op door's calls, at each transition of an op, before the hook chains
 * (and the tests' and the benchmark's). Each returns at once when the
 * recorder is off. pre sets *rec to the op's record id (0 = not recorded);
 * start and post take it back, and ignore 0. The door keeps the id in the
 * op (cc__op_t.rec_id); the CUDA plugin hands it to cc__recorder_gpu. No
 * lock, allocation, syscall or formatting, except the first op of a comm
 * the recorder has not seen (registers it) and the first op of a thread
 * (caches its id).
 */
/* Never inlined (LTO would): the door's functions would save six registers for them on
 * every op, the recorder on or off. */
__attribute__((noinline)) void cc__recorder_do_pre(const cc_op_info_t *op, uint64_t *rec);
__attribute__((noinline)) void cc__recorder_do_pre_start(const cc_op_info_t *op, uint64_t *rec);
__attribute__((noinline)) void cc__recorder_do_start(const cc_op_info_t *op, uint64_t rec);
__attribute__((noinline)) void cc__recorder_do_post(const cc_op_info_t *op, uint64_t rec, int own);

/* The open ring (NULL = off), for the tests below; recorder.c owns it. */
extern struct cc__fr_ring *cc__fr_open_ring;

/* The tests are inline, in a -O0 build too (the stack capture skips a fixed number of frames:
 * cc__fr_stack_capture and cc__recorder_do_pre). Out-of-line calls would save six registers
 * before they could look (18 instructions a call with the recorder off, bench/obs_instr.sh). */
#define CC__FR_INLINE static inline __attribute__((always_inline))
CC__FR_INLINE void cc__recorder_pre(const cc_op_info_t *op, uint64_t *rec)
{
    /* Cleared first: START and POST must not act on a stale id. */
    *rec = 0;
    if (__atomic_load_n(&cc__fr_open_ring, __ATOMIC_RELAXED)) cc__recorder_do_pre(op, rec);
}

/* PRE and START in one write, for an op whose PRE the door held back until it started
 * (door.c: the native engine's blocking op run on the caller's thread, with no op of its comm
 * on another thread): the entry that cc__recorder_pre then cc__recorder_start leave, STARTED
 * at op->t_start_ns, and the comm's enqueued and started counts raised with plain stores. */
CC__FR_INLINE void cc__recorder_pre_start(const cc_op_info_t *op, uint64_t *rec)
{
    *rec = 0;
    if (__atomic_load_n(&cc__fr_open_ring, __ATOMIC_RELAXED)) cc__recorder_do_pre_start(op, rec);
}

CC__FR_INLINE void cc__recorder_start(const cc_op_info_t *op, uint64_t rec)
{
    if (rec) cc__recorder_do_start(op, rec);
}

CC__FR_INLINE void cc__recorder_post(const cc_op_info_t *op, uint64_t rec)
{
    if (rec) cc__recorder_do_post(op, rec, 0);
}

/* POST of an op whose comm has no op on another thread (door.c: an op the native engine ran
 * on the caller's thread with nothing queued): the comm's completed count is raised with a
 * plain store, not a CAS. */
CC__FR_INLINE void cc__recorder_post_own(const cc_op_info_t *op, uint64_t rec)
{
    if (rec) cc__recorder_do_post(op, rec, 1);
}
/* The abort hook cc__recorder_open adds for every comm; async-signal-safe. */
void cc__recorder_on_abort(const cc_abort_info_t *info, void *user);

/*
 * The true GPU times (monotonic ns) of the kernels of the op recorded as
 * `rec_id` (cc__recorder_pre's id), and what ran them (NCCL's algorithm/protocol, or "cupti"), from
 * the CUDA plugin once CUPTI or NCCL's profiler reported them, possibly
 * after the op's POST. Dropped if the slot was reused. No lock, allocation
 * or syscall. Any thread.
 */
void cc__recorder_gpu(uint64_t rec_id, uint64_t t_start_ns, uint64_t t_end_ns,
                      const char *detail);

/*
 * A function that delivers the GPU times still held in a profiler's
 * buffers (CUPTI's), called by cc_recorder_dump before it writes: a dump
 * asked for right after an op then holds that op's kernel times. Not
 * called by the watchdog's or a signal's dumps. One at a time; NULL clears.
 */
void cc__recorder_set_gpu_flush(void (*fn)(void));
/* Call it (cc_recorder_dump does). */
void cc__recorder_flush_gpu(void);

/*
 * Register a communicator in the ring's table (the recorder's PRE does it
 * for COMM_INIT and for the first op of a comm it has not seen; the core may
 * call it earlier). world_ranks: `size` world ranks, or NULL when unknown.
 * Returns the table slot, or -1 (recorder off, table full).
 */
int cc__recorder_add_comm(uint64_t comm_id, uint64_t parent_id, const char *name, int rank,
                          int size, const int32_t *world_ranks);

#endif /* CC_RECORDER_RECORDER_H */
