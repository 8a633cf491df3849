/* gpu_ops.h - ops through the core's door for the GPU tests (see gpu_ops.c). */
#ifndef CC_TEST_GPU_OPS_H
#define CC_TEST_GPU_OPS_H

#include "ccomm/ccomm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpu_op {
    cc_op_type_t type;
    const void *sendbuf;
    void *recvbuf;
    size_t in_count, out_count; /* elements this rank gives and gets (the door's convention) */
    cc_dtype_t dtype;
    cc_redop_t redop;           /* CC_REDOP_COUNT where none */
    int root;                   /* -1 where none */
    double premul;
    void *stream;
    int64_t timeout_ms;         /* 0: the comm's */
} gpu_op_t;

/* Issue asynchronously (*work on CC_OK). */
cc_status_t gpu_issue(cc_comm_t *comm, const gpu_op_t *op, cc_work_t **work);

#ifdef __cplusplus
}
#endif
#endif /* CC_TEST_GPU_OPS_H */
