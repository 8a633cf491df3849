/*
 * coll_api.h - what the API calls build for the engines beyond cc_op_info_t
 * (internal): the argument blocks of grouped, coalesced, byte and monitored
 * ops (reached through op->extra), the byte-string result type, and the
 * helpers the coll_api*.c files share.
 *
 * Ownership: an argument block is allocated by the API call and owned by
 * the op (op->owned); the op's release callback frees it when the op is
 * over, on every path. Engines read it and write only the fields marked
 * "engine".
 */
#ifndef CC_CORE_COLL_API_H
#define CC_CORE_COLL_API_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "op.h"

/* A group's held sends and receives, issued as one op (CC_OP_GROUP). */
typedef struct cc__group_args {
    int n;                 /* members */
    cc__op_t **members;    /* each a SEND or RECV op that passed PRE; issue order */
    unsigned char *ended;  /* engine: member i was finished (cc__op_member_finished) */
    unsigned char *heap;   /* member i lives in the block (1) or in its work handle (0) */
} cc__group_args_t;

/* A coalesced collective (CC_OP_COALESCED): `kind` over nbufs buffers. */
typedef struct cc__coalesced_args {
    cc_op_type_t kind;        /* ALLREDUCE, BROADCAST, ALLGATHER or REDUCE_SCATTER */
    int nbufs;
    const void *const *sendbufs;
    void *const *recvbufs;
    const size_t *counts;     /* per buffer: the count argument of the plain collective */
} cc__coalesced_args_t;

/* A byte collective (ALLGATHER_BYTES ... RECV_BYTES). */
typedef struct cc__bytes_args {
    const void *const *bufs;  /* scatter: the root's blobs */
    const size_t *lens;       /* scatter: their lengths */
    cc_bytes_t **out;         /* where the result goes on success (NULL: nowhere) */
    cc_bytes_t *result;       /* engine: the result, handed over or freed by the release */
} cc__bytes_args_t;

/* A monitored barrier (CC_OP_MONITORED_BARRIER). */
typedef struct cc__mbarrier_args {
    int64_t wait_ms;          /* how long rank 0 waits for check-ins */
    int *missing;             /* the caller's outputs (may be NULL), written by the engine */
    int max_missing;
    int *nmissing;
} cc__mbarrier_args_t;

/* The byte-string list: one block, header, offsets and lengths, then the data. */
struct cc_bytes {
    uint32_t magic;           /* CC__BYTES_MAGIC while valid */
    size_t count;             /* blobs */
    size_t total;             /* bytes of all blobs (padding excluded) */
    size_t *off;              /* count offsets into data, each a multiple of 16 */
    size_t *len;              /* count lengths */
    char *data;               /* 16-byte aligned; blobs in order, each padded to 16 */
};

#define CC__BYTES_MAGIC 0x63636279u /* "ccby" */

/* A result of `count` blobs of lens[i] bytes (contents unset), or NULL (logged). */
cc_bytes_t *cc__bytes_new(size_t count, const size_t *lens);
/* Start of blob i (writable, for the engine that fills it). */
static inline char *cc__bytes_blob(cc_bytes_t *b, size_t i)
{
    return b->data + b->off[i];
}

/*
 * The last step of every API call: refuse non-p2p ops inside a group, hold
 * p2p ops of a group, else issue through the door. op->owned and
 * op->release must already be set if the op owns memory (they run on every
 * path, refusals included).
 */
cc_status_t cc__api_issue(cc__op_t *op, const cc_op_opts_t *opts, cc_work_t **work);

/* Release callback that frees op->owned. */
void cc__api_free_owned(cc__op_t *op, cc_status_t status);

/*
 * Checks of per-rank arrays (coll_api_check.c); each logs the function, the
 * argument and the value. cc__v_counts: counts non-NULL, each count and the
 * total addressable in bytes, each displs[r] + counts[r] too (displs may be
 * NULL: packed); *total = sum, *extent = end of the last block (elements).
 */
cc_status_t cc__v_counts(int n, const size_t *counts, const size_t *displs, cc_dtype_t dt,
                         const char *what, const char *fn, size_t *total, size_t *extent);
/* Non-empty blocks (displs NULL: packed) do not overlap one another. */
cc_status_t cc__v_disjoint(int n, const size_t *counts, const size_t *displs, const char *what,
                           const char *fn);
/* send is exactly `inplace` (pass NULL where in place has no meaning), or does not overlap recv. */
cc_status_t cc__v_inplace(const void *send, size_t sbytes, const void *recv, size_t rbytes,
                          const void *inplace, const char *fn);

/* Group (group.c): 1 while this thread has a group open; hold a p2p op in it. */
int cc__group_active(void);
cc_status_t cc__group_hold(cc__op_t *tmpl, const cc_op_opts_t *opts, cc_work_t **work);

#endif /* CC_CORE_COLL_API_H */
