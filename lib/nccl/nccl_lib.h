/*
 * nccl_lib.h - the NCCL library, opened with dlopen (CCOMM_NCCL_LIB), and
 * the translation between ccomm's and NCCL's vocabularies.
 *
 * The table is filled once per process (the first caller wins; later calls
 * return the same table or the same error). Required entry points missing
 * from the library make the load fail with a message naming them; the
 * optional ones are NULL and the ops that need them say so when asked.
 */
#ifndef CC_NCCL_LIB_H
#define CC_NCCL_LIB_H

#include "ccomm/types.h"
#include "nccl/nccl_abi.h"

typedef ncclResult_t (*cc__nccl_coll_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                         ncclComm_t, void *);

typedef struct cc__nccl_lib {
    void *handle;
    char path[512];
    int version;                      /* ncclGetVersion's code, e.g. 22809 */
    const ccomm_host_nccl_v1_t *host; /* the host NCCL extension, or NULL (real NCCL on GPUs) */

    /* Required. */
    ncclResult_t (*GetVersion)(int *version);
    const char *(*GetErrorString)(ncclResult_t result);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*CommAbort)(ncclComm_t comm);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *err);
    ncclResult_t (*AllReduce)(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                              ncclComm_t comm, void *stream);
    ncclResult_t (*Broadcast)(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                              ncclComm_t comm, void *stream);
    ncclResult_t (*Send)(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                         void *stream);
    ncclResult_t (*Recv)(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                         void *stream);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);

    /* Optional (NULL when the library lacks them). */
    const char *(*GetLastError)(ncclComm_t comm);
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                       ncclConfig_t *config);
    ncclResult_t (*CommInitAll)(ncclComm_t *comms, int ndev, const int *devlist);
    ncclResult_t (*CommSplit)(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                              ncclConfig_t *config);
    ncclResult_t (*CommFinalize)(ncclComm_t comm);
    ncclResult_t (*CommCount)(const ncclComm_t comm, int *count);
    ncclResult_t (*CommCuDevice)(const ncclComm_t comm, int *device);
    ncclResult_t (*CommUserRank)(const ncclComm_t comm, int *rank);
    ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t *op, void *scalar, ncclDataType_t t,
                                         ncclScalarResidence_t residence, ncclComm_t comm);
    ncclResult_t (*RedOpDestroy)(ncclRedOp_t op, ncclComm_t comm);
    ncclResult_t (*Reduce)(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                           int root, ncclComm_t comm, void *stream);
    ncclResult_t (*Bcast)(void *buf, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                          void *stream);
    ncclResult_t (*AllGather)(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t comm,
                              void *stream);
    ncclResult_t (*ReduceScatter)(const void *s, void *r, size_t n, ncclDataType_t t,
                                  ncclRedOp_t op, ncclComm_t comm, void *stream);
    ncclResult_t (*AlltoAll)(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t comm,
                             void *stream);
    ncclResult_t (*Gather)(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                           ncclComm_t comm, void *stream);
    ncclResult_t (*Scatter)(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                            ncclComm_t comm, void *stream);
} cc__nccl_lib_t;

/*
 * Open `path` (CCOMM_NCCL_LIB) once per process and fill the table.
 * `self` is an address inside the caller's own object: a library that
 * resolves to that object (the interposer pointed at itself) is refused.
 * Returns CC_OK and *out; CC_ERR_NOT_SUPPORTED (logged: missing library or
 * entry points, NCCL older than 2.10).
 */
cc_status_t cc__nccl_lib_open(const char *path, const void *self, const cc__nccl_lib_t **out);

/* The table if already open, else NULL. */
const cc__nccl_lib_t *cc__nccl_lib_get(void);

/* NCCL's result as a ccomm status (ncclInProgress counts as CC_OK). */
cc_status_t cc__nccl_status(ncclResult_t r);
/* NCCL's error text, with the communicator's last error when the library has it. */
const char *cc__nccl_errstr(const cc__nccl_lib_t *lib, ncclResult_t r);

/* ccomm dtype -> NCCL: every ccomm dtype moves (int16/uint16 as the 2-byte float16, never
 * reduced); CC_DTYPE_COUNT (bytes) -> ncclUint8. */
ncclDataType_t cc__nccl_dtype(cc_dtype_t dtype);
/* NCCL dtype -> ccomm; CC_DTYPE_COUNT for the float8 types ccomm lacks. */
cc_dtype_t cc__nccl_dtype_back(ncclDataType_t t);
/*
 * ccomm reduction -> NCCL. PREMUL_SUM needs a per-op operator
 * (cc__nccl_premul). CC_ERR_NOT_SUPPORTED for the bitwise ops (NCCL has
 * none), with a log line naming the pair.
 */
cc_status_t cc__nccl_redop(cc_redop_t op, cc_dtype_t dtype, ncclRedOp_t *out);
/* NCCL built-in reduction -> ccomm; CC_PREMUL_SUM for a created operator. */
cc_redop_t cc__nccl_redop_back(ncclRedOp_t op);

/* A PREMUL_SUM operator with `factor` converted to `dtype` (host immediate). */
cc_status_t cc__nccl_premul(const cc__nccl_lib_t *lib, ncclComm_t comm, cc_dtype_t dtype,
                            double factor, ncclRedOp_t *out);

#endif /* CC_NCCL_LIB_H */
