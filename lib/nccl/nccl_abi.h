/*
 * nccl_abi.h - the parts of NCCL's C ABI that ccomm uses, written out so
 * that the NCCL engine and the interposer build without nccl.h (NCCL is
 * always dlopen'ed, never linked). Values are NCCL 2.x's, unchanged since
 * 2.10 for everything here; the NCCL version is checked at load time.
 *
 * Also the "host NCCL" extension: an NCCL implementation that runs on host
 * memory without CUDA (ccomm's test double, tests/nccl_double) exports
 * `ccommHostNccl_v1`, a table of host "events" ordered like CUDA events on
 * a stream: ccomm then tracks ops through it instead of CUDA events, so
 * that everything above CUDA (mapping, tracking, timeouts, abort, the
 * interposer) runs on a machine without a GPU.
 */
#ifndef CC_NCCL_ABI_H
#define CC_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm *ncclComm_t;
typedef void *cudaStream_t_abi; /* cudaStream_t without the CUDA headers */

#define NCCL_UNIQUE_ID_BYTES_ABI 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES_ABI];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclFloat32 = 7,
    ncclFloat64 = 8,
    ncclBfloat16 = 9,
    ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

#define NCCL_SPLIT_NOCOLOR_ABI (-1)

/* ncclConfig_t is only passed through (the interposer) or given as NULL. */
typedef struct ncclConfig_abi ncclConfig_t;

/* The host NCCL extension (see above). Functions return 0 or a negative error. */
#define CCOMM_HOST_NCCL_SYMBOL "ccommHostNccl_v1"
typedef struct ccomm_host_nccl_v1 {
    int version; /* 1 */
    /* A new event (not yet recorded: query says done). */
    int (*event_create)(void **ev);
    void (*event_destroy)(void *ev);
    /* Mark the point in `comm`'s op order where the event completes. */
    int (*event_record)(void *ev, ncclComm_t comm);
    /* 1 completed, 0 not yet, negative: error. */
    int (*event_query)(void *ev);
    /* CLOCK_MONOTONIC ns at which it completed (0 = not yet). */
    uint64_t (*event_time_ns)(void *ev);
} ccomm_host_nccl_v1_t;

#ifdef __cplusplus
}
#endif
#endif /* CC_NCCL_ABI_H */
