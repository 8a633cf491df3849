/*
 * ccomm/types.h - data types, reduction operators, operation kinds, and the
 * option structs that every call takes.
 */
#ifndef CCOMM_TYPES_H
#define CCOMM_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles. */
typedef struct cc_comm cc_comm_t;
typedef struct cc_work cc_work_t;

/* X(name, short name used in logs and clog, size in bytes, PyTorch dtype name).
 * Append only: the numbers are stored (recorder ring, ccdump's model). */
#define CC_DTYPE_MAP(X)                                                                            \
    X(INT8, "i8", 1, "Char")                                                                       \
    X(UINT8, "u8", 1, "Byte")                                                                      \
    X(INT32, "i32", 4, "Int")                                                                      \
    X(UINT32, "u32", 4, "UInt32")                                                                  \
    X(INT64, "i64", 8, "Long")                                                                     \
    X(UINT64, "u64", 8, "UInt64")                                                                  \
    X(FLOAT16, "f16", 2, "Half")                                                                   \
    X(BFLOAT16, "bf16", 2, "BFloat16")                                                             \
    X(FLOAT32, "f32", 4, "Float")                                                                  \
    X(FLOAT64, "f64", 8, "Double")                                                                 \
    X(INT16, "i16", 2, "Short")                                                                    \
    X(UINT16, "u16", 2, "UInt16")

typedef enum cc_dtype {
#define CC__DTYPE_ENUM(name, s, size, torch) CC_##name,
    CC_DTYPE_MAP(CC__DTYPE_ENUM)
#undef CC__DTYPE_ENUM
        CC_DTYPE_COUNT
} cc_dtype_t;

/* X(name, short name) */
#define CC_REDOP_MAP(X)                                                                            \
    X(SUM, "sum")                                                                                  \
    X(PROD, "prod")                                                                                \
    X(MIN, "min")                                                                                  \
    X(MAX, "max")                                                                                  \
    X(AVG, "avg")                                                                                  \
    X(PREMUL_SUM, "premul_sum")                                                                    \
    X(BAND, "band")                                                                                \
    X(BOR, "bor")                                                                                  \
    X(BXOR, "bxor")

typedef enum cc_redop {
#define CC__REDOP_ENUM(name, s) CC_##name,
    CC_REDOP_MAP(CC__REDOP_ENUM)
#undef CC__REDOP_ENUM
        CC_REDOP_COUNT
} cc_redop_t;

/*
 * Every kind of operation that passes the op door, including communicator
 * lifecycle events. X(name, profiling name as PyTorch and torchcomms spell
 * it, class) where class is COLL (numbered by coll_seq), P2P (numbered by
 * p2p_seq per peer), LIFE (lifecycle, numbered by neither) or RMA (one-sided
 * window ops, ccomm/window.h: numbered by neither, since the target issues
 * no matching op).
 */
#define CC_OP_TYPE_MAP(X)                                                                          \
    X(SEND, "send", P2P)                                                                           \
    X(RECV, "recv", P2P)                                                                           \
    X(BARRIER, "barrier", COLL)                                                                    \
    X(ALLREDUCE, "all_reduce", COLL)                                                               \
    X(BROADCAST, "broadcast", COLL)                                                                \
    X(REDUCE, "reduce", COLL)                                                                      \
    X(ALLGATHER, "all_gather", COLL)                                                               \
    X(ALLGATHERV, "all_gather_v", COLL)                                                            \
    X(REDUCE_SCATTER, "reduce_scatter", COLL)                                                      \
    X(REDUCE_SCATTERV, "reduce_scatter_v", COLL)                                                   \
    X(ALLTOALL, "all_to_all", COLL)                                                                \
    X(ALLTOALLV, "all_to_all_v", COLL)                                                             \
    X(GATHER, "gather", COLL)                                                                      \
    X(GATHERV, "gather_v", COLL)                                                                   \
    X(SCATTER, "scatter", COLL)                                                                    \
    X(SCATTERV, "scatter_v", COLL)                                                                 \
    X(ALLGATHER_BYTES, "all_gather_bytes", COLL)                                                   \
    X(BROADCAST_BYTES, "broadcast_bytes", COLL)                                                    \
    X(GATHER_BYTES, "gather_bytes", COLL)                                                          \
    X(SCATTER_BYTES, "scatter_bytes", COLL)                                                        \
    X(SEND_BYTES, "send_bytes", P2P)                                                               \
    X(RECV_BYTES, "recv_bytes", P2P)                                                               \
    X(MONITORED_BARRIER, "monitored_barrier", COLL)                                                \
    X(COALESCED, "coalesced", COLL)                                                                \
    X(GROUP, "batch_op_issue", P2P)                                                                \
    X(COMM_INIT, "init", LIFE)                                                                     \
    X(COMM_SPLIT, "split", LIFE)                                                                   \
    X(COMM_DESTROY, "finalize", LIFE)                                                              \
    X(COMM_ABORT, "abort", LIFE)                                                                   \
    X(WIN_CREATE, "window_create", LIFE)                                                           \
    X(WIN_DESTROY, "window_destroy", LIFE)                                                         \
    X(WIN_PUT, "window_put", RMA)                                                                  \
    X(WIN_GET, "window_get", RMA)                                                                  \
    X(WIN_SIGNAL, "window_signal", RMA)                                                            \
    X(WIN_WAIT_SIGNAL, "window_wait_signal", RMA)                                                  \
    X(WIN_FLUSH, "window_flush", RMA)

typedef enum cc_op_type {
#define CC__OPTYPE_ENUM(name, s, cls) CC_OP_##name,
    CC_OP_TYPE_MAP(CC__OPTYPE_ENUM)
#undef CC__OPTYPE_ENUM
        CC_OP_TYPE_COUNT
} cc_op_type_t;

/* Names and sizes. All return a static string ("?" / 0 for values out of range). */
CC_API const char *cc_dtype_name(cc_dtype_t dtype);  /* "f32" */
CC_API size_t cc_dtype_size(cc_dtype_t dtype);       /* 4 */
CC_API const char *cc_redop_name(cc_redop_t op);     /* "sum" */
CC_API const char *cc_op_type_name(cc_op_type_t op); /* "all_reduce" */

/* Parse the names above back ("f32", "float32", "float", "sum", ...). Return
 * CC_OK and set *out, or CC_ERR_INVALID_ARG and leave *out untouched. */
CC_API cc_status_t cc_dtype_parse(const char *name, cc_dtype_t *out);
CC_API cc_status_t cc_redop_parse(const char *name, cc_redop_t *out);

/*
 * Per-operation options. Pass NULL for the defaults, or start from
 * CC_OP_OPTS_INIT and change what you need: struct_size lets later versions
 * add fields without breaking programs built against this one.
 */
typedef struct cc_op_opts {
    size_t struct_size;   /* sizeof(cc_op_opts_t); set by CC_OP_OPTS_INIT */
    int64_t timeout_ms;   /* deadline for this op; 0 = the comm's timeout; INT64_MAX = none */
    void *stream;         /* cudaStream_t for device communicators; NULL = default stream */
    int tag;              /* point-to-point tag, 0 .. CC_TAG_MAX; collectives ignore it */
    double premul_scalar; /* factor applied to every input by CC_PREMUL_SUM */
    unsigned flags;       /* reserved, must be 0 */
} cc_op_opts_t;

#define CC_OP_OPTS_INIT {sizeof(cc_op_opts_t), 0, NULL, 0, 1.0, 0u}
#define CC_TAG_MAX 0x7fffffff

/* Device of a communicator. */
#define CC_DEVICE_CPU (-1)

/*
 * Communicator options, for init, split and create_group. Pass NULL for the
 * defaults or start from CC_COMM_CONFIG_INIT. Strings are borrowed for the
 * duration of the call only.
 */
typedef struct cc_comm_config {
    size_t struct_size;    /* sizeof(cc_comm_config_t); set by CC_COMM_CONFIG_INIT */
    const char *name;      /* NULL: "world" for init, "<parent>.<color>" for split */
    int64_t timeout_ms;    /* default deadline of every op; 0 = CCOMM_TIMEOUT; INT64_MAX = none */
    int device;            /* CC_DEVICE_CPU, or a CUDA device ordinal */
    const char *engine;    /* NULL or "auto", "native", "nccl" */
    const char *transport; /* NULL = CCOMM_TRANSPORT; "auto" (shm on one host, else tcp), "tcp" */
} cc_comm_config_t;

#define CC_COMM_CONFIG_INIT {sizeof(cc_comm_config_t), NULL, 0, CC_DEVICE_CPU, NULL, NULL}

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_TYPES_H */
