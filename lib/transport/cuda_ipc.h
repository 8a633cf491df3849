/*
 * cuda_ipc.h - the CUDA IPC transport of the native CUDA engine: each rank
 * of a node shares one device region with the others through CUDA IPC
 * memory handles (exchanged through ccomm's store), and ranks signal each
 * other with flag words in those regions (kernels_cuda.h: signal / wait).
 * Ranks are processes (a handle cannot be opened in the process that made
 * it); several may share one GPU.
 *
 * A rank's region:
 *   flags   CC__IPC_KINDS arrays of CC__IPC_MAX_RANKS u64: flag[kind][from],
 *           written by rank `from` (through its mapping), read by the owner
 *   slot[2] data slots, used by rounds of alternating parity
 *   res[2]  result areas (two-shot's reduced parts, ring's sums)
 * The flags only grow (round numbers), so a late reader never mistakes an
 * old round for a new one.
 */
#ifndef CC_TRANSPORT_CUDA_IPC_H
#define CC_TRANSPORT_CUDA_IPC_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/status.h"

#define CC__IPC_MAX_RANKS   8 /* ranks of one node the engine connects (kernels take 8 sources) */
#define CC__IPC_FLAGS_BYTES 4096

enum cc__ipc_flag { CC__IPC_READY, CC__IPC_STAGE, CC__IPC_DONE, CC__IPC_RING, CC__IPC_KINDS };

typedef struct cc__cuda_ipc {
    int rank, size, device;
    void *base;                    /* this rank's region (cudaMalloc) */
    size_t slot_bytes;             /* one data slot */
    size_t bytes;                  /* the region */
    void *peer[CC__IPC_MAX_RANKS]; /* every rank's region as mapped here (peer[rank] = base) */
} cc__cuda_ipc_t;

/* Exchange len bytes with every rank (all[r * len] is rank r's). */
typedef cc_status_t (*cc__ipc_allgather_fn)(void *ctx, const void *mine, void *all, size_t len);

/*
 * Allocate this rank's region on `device` (current on the calling thread),
 * zero it, exchange handles and map every peer's. Collective.
 * CC_ERR_NOT_SUPPORTED (logged) for more than CC__IPC_MAX_RANKS ranks, ranks
 * sharing a process, or peers that cannot map each other.
 */
cc_status_t cc__cuda_ipc_open(cc__cuda_ipc_t *ipc, int rank, int size, int device,
                              size_t slot_bytes, cc__ipc_allgather_fn allgather, void *ctx);
void cc__cuda_ipc_close(cc__cuda_ipc_t *ipc);

/* Rank `owner`'s flag of `kind` that rank `from` writes. */
static inline uint64_t *cc__ipc_flag(const cc__cuda_ipc_t *ipc, int owner, int kind, int from)
{
    return (uint64_t *)ipc->peer[owner] + (size_t)kind * CC__IPC_MAX_RANKS + (size_t)from;
}

/* Rank `owner`'s data slot (res = 0) or result area (res = 1) of parity `p`. */
static inline void *cc__ipc_area(const cc__cuda_ipc_t *ipc, int owner, int res, int p)
{
    return (char *)ipc->peer[owner] + CC__IPC_FLAGS_BYTES +
           (size_t)(2 * res + (p & 1)) * ipc->slot_bytes;
}

#endif /* CC_TRANSPORT_CUDA_IPC_H */
