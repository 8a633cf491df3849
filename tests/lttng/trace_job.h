/*
 * trace_job.h - the jobs that test_lttng_trace traces, and what each rank
 * saw of them through its own POST hook and its flight recorder.
 */
#ifndef CC_TEST_TRACE_JOB_H
#define CC_TEST_TRACE_JOB_H

#include <stdint.h>

#define TJ_JOB_RANKS       4
#define TJ_HANG_RANKS      2
#define TJ_MAX_OPS         64
#define TJ_HANG_TIMEOUT_MS 300 /* rank 0's allreduce deadline in the hang job */

typedef struct tj_op {
    uint64_t op_id;
    int type; /* cc_op_type_t */
    uint64_t comm_id;
    int status; /* cc_status_t */
} tj_op_t;

typedef struct tj_rank {
    long pid;              /* the rank's process: its vpid in the trace */
    uint64_t world_id;     /* id of its world communicator */
    uint64_t half_id;      /* id of its split child (job only) */
    uint64_t timed_out_op; /* hang job, rank 0: op_id of the allreduce that timed out */
    int nops;
    tj_op_t ops[TJ_MAX_OPS]; /* every op's POST, in order, lifecycle included */
    int nrec;                /* op_ids in the recorder's dump; -1 without a recorder */
    tj_op_t rec[TJ_MAX_OPS]; /* entries then lifecycle events (type, op_id; status unset) */
} tj_rank_t;

/* 1 when this build has the flight recorder (the trace is checked against it). */
int tj_have_recorder(void);

/*
 * Run the 4-rank job (allreduce x2, barrier, send/recv ring, split, an
 * allreduce on each half, destroy) with CCOMM_LTTNG=1 and `provider`, files
 * in `dir`; fill out[] from what the ranks wrote. Returns the number of
 * ranks that failed (0 = all well).
 */
int tj_run_job(const char *dir, const char *provider, tj_rank_t out[TJ_JOB_RANKS]);

/* Run the 2-rank job in which rank 0's allreduce times out while rank 1
 * stays silent. Returns the number of ranks that failed. */
int tj_run_hang(const char *dir, const char *provider, tj_rank_t out[TJ_HANG_RANKS]);

#endif /* CC_TEST_TRACE_JOB_H */
