/*
 * nccl_double.h - a test double of NCCL on host memory (internal to the
 * double; programs use nccl's own API and, in place of
 * cudaStreamSynchronize, ncclDoubleSync).
 *
 * Each communicator is a ccomm communicator (the native engine over shared
 * memory) plus a worker thread that plays the GPU stream: NCCL calls
 * enqueue tasks and return at once, the worker runs them in order. The
 * unique id names a ccomm store on 127.0.0.1 that rank 0 hosts. The double
 * exports ccommHostNccl_v1 (lib/nccl/nccl_abi.h): events in a comm's task
 * order, so ccomm's NCCL engine and interposer track its ops as they track
 * CUDA events.
 *
 * Environment: NCCL_DOUBLE_TIMEOUT_MS (default 120000), the deadline of the
 * double's own ccomm ops: long, so that the layer under test (which sees
 * the hang) times out first.
 */
#ifndef CC_TEST_NCCL_DOUBLE_H
#define CC_TEST_NCCL_DOUBLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "nccl/nccl_abi.h"

#define DBL_MAGIC 0x4e43434c44424c31ull /* "NCCLDBL1" */
#define DBL_TIMES 4096                  /* completion times kept per comm */

enum dbl_kind {
    DBL_ALLREDUCE,
    DBL_BROADCAST,
    DBL_REDUCE,
    DBL_ALLGATHER,
    DBL_REDUCE_SCATTER,
    DBL_SEND,
    DBL_RECV,
    DBL_GROUP, /* a ncclGroupEnd's batch */
};

typedef struct dbl_call {
    enum dbl_kind kind;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    cc_dtype_t dtype;
    cc_redop_t op;
    double premul;
    int root;              /* or peer */
    struct dbl_call *next; /* group members, in call order */
} dbl_call_t;

typedef struct dbl_task {
    dbl_call_t call; /* DBL_GROUP: call.next lists the members */
    struct dbl_task *next;
} dbl_task_t;

struct ncclComm {
    uint64_t magic;
    cc_comm_t *cc;
    int rank, nranks;
    _Atomic int refs; /* the user + events recorded on it */
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    dbl_task_t *head, *tail;
    int stopping;
    pthread_t worker;
    _Atomic uint64_t enqueued;         /* tasks handed to the worker */
    _Atomic uint64_t completed;        /* tasks done */
    _Atomic uint64_t times[DBL_TIMES]; /* completion time of task k at k % DBL_TIMES */
    _Atomic int async_error;           /* ncclResult_t */
    _Atomic uint64_t failed_at;        /* number of the first task that failed (0 = none) */
    char last_error[256];
    double premul[64];    /* scalars of operators made by ncclRedOpCreatePreMulSum */
    char premul_used[64]; /* issuing thread only (NCCL calls on a comm are serial) */
};

/* Enqueue a task on the comm's stream (takes ownership). */
ncclResult_t dbl_enqueue(struct ncclComm *c, dbl_task_t *t);
/* Run one call on the worker (ccomm ops); CC_OK or the error. */
cc_status_t dbl_run(struct ncclComm *c, const dbl_call_t *call);
/* Inside a group (ncclGroupStart depth > 0 on this thread), add the call to it. */
int dbl_in_group(void);
ncclResult_t dbl_group_add(struct ncclComm *c, const dbl_call_t *call);
/* Is c a live double comm? */
int dbl_valid(const struct ncclComm *c);
void dbl_unref(struct ncclComm *c);

/* The program's stand-in for cudaStreamSynchronize: wait until the comm's tasks are done. */
__attribute__((visibility("default"))) ncclResult_t ncclDoubleSync(ncclComm_t comm);

#endif /* CC_TEST_NCCL_DOUBLE_H */
