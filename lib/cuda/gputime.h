/*
 * gputime.h - the true GPU times of ops' kernels (CCOMM_GPU_TIMING).
 *
 *   events         (default) CUDA events around each op give its start and
 *                  end (tracker.h); nothing more is collected.
 *   cupti          CUPTI activity records of the kernels, tied to ops by
 *                  external correlation (the op_id is pushed around the
 *                  op's NCCL calls): exact kernel start and end.
 *   nccl-profiler  ccomm's own NCCL profiler plugin (ncclProfiler_v5,
 *                  exported by this object; NCCL_PROFILER_PLUGIN is set to
 *                  it unless already set): kernel start and end from
 *                  NCCL's per-channel GPU timers, and the algorithm and
 *                  protocol NCCL chose ("RING/LL128").
 * Either goes into the op's flight recorder entry (gpu_start_ns,
 * gpu_end_ns, gpu_kernel) when it arrives, which may be after the op's
 * POST; the op's own transitions never wait for it.
 */
#ifndef CC_CUDA_GPUTIME_H
#define CC_CUDA_GPUTIME_H

#include <stdint.h>

#include "engine/op.h"

enum cc__gputime_mode { CC__GPUTIME_EVENTS, CC__GPUTIME_CUPTI, CC__GPUTIME_PROFILER };

/*
 * Read CCOMM_GPU_TIMING once and start the source (before any NCCL
 * communicator exists: NCCL reads NCCL_PROFILER_PLUGIN at comm init).
 * `self` is an address inside this object (its path names the profiler
 * plugin). A source that cannot start logs a warning and leaves events.
 */
void cc__gputime_init(const void *self);
enum cc__gputime_mode cc__gputime_mode(void);

/* Around an op's NCCL calls on the issuing thread: ties the kernels they launch to the op. */
void cc__gputime_enter(const cc__op_t *op);
void cc__gputime_leave(void);

/* The op (op_id, rec_id) between enter and leave on this thread, or 0s. */
void cc__gputime_current(uint64_t *op_id, uint64_t *rec_id);

/*
 * GPU globaltimer (ns) -> CLOCK_MONOTONIC ns. The offset is measured by the
 * plugin's calibration kernel when it has one (cc__gputime_set_offset),
 * else taken as CLOCK_REALTIME - CLOCK_MONOTONIC (the driver starts the
 * globaltimer from the wall clock; a few microseconds of error).
 */
uint64_t cc__gputime_from_globaltimer(uint64_t t);
void cc__gputime_set_offset(int64_t globaltimer_minus_monotonic);

/* Report times for a recorder entry (through the core). */
void cc__gputime_report(uint64_t rec_id, uint64_t t_start_ns, uint64_t t_end_ns,
                        const char *detail);

/* CUPTI (gputime_cupti.c): start, push/pop the op id, flush. 0 on success. */
int cc__cupti_start(void);
void cc__cupti_push(uint64_t op_id, uint64_t rec_id);
void cc__cupti_pop(void);
void cc__cupti_flush(void);

#endif /* CC_CUDA_GPUTIME_H */
