/*
 * args.h - the argument blocks of the ops that carry more than buffers
 * (internal): a group's members, coalesced buffer lists, byte collectives,
 * a monitored barrier. The door builds them (lib/core/coll_api*.c) and hangs
 * them on op->extra / op->owned; engines read them.
 */
#ifndef CC_ENGINE_ARGS_H
#define CC_ENGINE_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "engine/op.h"

/* A group's held sends and receives, issued as one op (CC_OP_GROUP). */
typedef struct cc__group_args {
    int n;                /* members */
    cc__op_t **members;   /* each a SEND or RECV op that passed PRE; issue order */
    unsigned char *ended; /* engine: member i was finished (cc__op_member_finished) */
    unsigned char *heap;  /* member i lives in the block (1) or in its work handle (0) */
} cc__group_args_t;

/* A coalesced collective (CC_OP_COALESCED): `kind` over nbufs buffers. */
typedef struct cc__coalesced_args {
    cc_op_type_t kind; /* ALLREDUCE, BROADCAST, ALLGATHER or REDUCE_SCATTER */
    int nbufs;
    const void *const *sendbufs;
    void *const *recvbufs;
    const size_t *counts; /* per buffer: the count argument of the plain collective */
} cc__coalesced_args_t;

/* A byte collective (ALLGATHER_BYTES ... RECV_BYTES). */
typedef struct cc__bytes_args {
    const void *const *bufs; /* scatter: the root's blobs */
    const size_t *lens;      /* scatter: their lengths */
    cc_bytes_t **out;        /* where the result goes on success (NULL: nowhere) */
    cc_bytes_t *result;      /* engine: the result, handed over or freed by the release */
} cc__bytes_args_t;

/* A monitored barrier (CC_OP_MONITORED_BARRIER). */
typedef struct cc__mbarrier_args {
    int64_t wait_ms; /* how long rank 0 waits for check-ins */
    int *missing;    /* the caller's outputs (may be NULL), written by the engine */
    int max_missing;
    int *nmissing;
} cc__mbarrier_args_t;

/* The byte-string list: one block, header, offsets and lengths, then the data. */
struct cc_bytes {
    uint32_t magic; /* CC__BYTES_MAGIC while valid */
    size_t count;   /* blobs */
    size_t total;   /* bytes of all blobs (padding excluded) */
    size_t *off;    /* count offsets into data, each a multiple of 16 */
    size_t *len;    /* count lengths */
    char *data;     /* 16-byte aligned; blobs in order, each padded to 16 */
};

#define CC__BYTES_MAGIC 0x63636279u /* "ccby" */

/* A result of `count` blobs of lens[i] bytes (contents unset), or NULL (logged). */
cc_bytes_t *cc__bytes_new(size_t count, const size_t *lens);
/* Start of blob i (writable, for the engine that fills it). */
static inline char *cc__bytes_blob(cc_bytes_t *b, size_t i)
{
    return b->data + b->off[i];
}

#endif /* CC_ENGINE_ARGS_H */
