/*
 * cuda_ipc.c - regions shared between a node's ranks through CUDA IPC
 * handles (see cuda_ipc.h).
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cudart.h"
#include "transport/cuda_ipc.h"
#include "base/log.h"

/* What a rank publishes about its region. */
struct blob {
    cudaIpcMemHandle_t handle;
    int32_t device;
    int32_t pid;
    uint64_t bytes;
};

static cc_status_t ck(cudaError_t e, const char *what)
{
    return cc__cuda_check((int)e, what);
}

static cc_status_t map_peers(cc__cuda_ipc_t *ipc, const struct blob *all)
{
    for (int r = 0; r < ipc->size; r++) {
        if (r == ipc->rank) continue;
        if (all[r].pid == (int32_t)getpid()) {
            cc_log_error(CC_SUBSYS_CUDA,
                         "cuda ipc: ranks %d and %d share process %d: the native "
                         "cuda engine needs one process per rank",
                         ipc->rank, r, (int)getpid());
            return CC_ERR_NOT_SUPPORTED;
        }
        if (all[r].bytes != ipc->bytes) {
            cc_log_error(CC_SUBSYS_CUDA,
                         "cuda ipc: rank %d shares %llu bytes, this rank %zu: "
                         "CCOMM_CUDA_IPC_BYTES differs between ranks",
                         r, (unsigned long long)all[r].bytes, ipc->bytes);
            return CC_ERR_MISMATCH;
        }
        cudaError_t e =
            cudaIpcOpenMemHandle(&ipc->peer[r], all[r].handle, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            cc_log_error(CC_SUBSYS_CUDA,
                         "cuda ipc: rank %d cannot map rank %d's memory (device "
                         "%d -> %d): %s",
                         ipc->rank, r, ipc->device, all[r].device, cudaGetErrorString(e));
            return CC_ERR_NOT_SUPPORTED;
        }
    }
    return CC_OK;
}

cc_status_t cc__cuda_ipc_open(cc__cuda_ipc_t *ipc, int rank, int size, int device,
                              size_t slot_bytes, cc__ipc_allgather_fn allgather, void *ctx)
{
    memset(ipc, 0, sizeof(*ipc));
    ipc->rank = rank, ipc->size = size, ipc->device = device;
    if (size > CC__IPC_MAX_RANKS) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "cuda ipc: %d ranks; the native cuda engine connects at most "
                     "%d ranks of one node (use engine nccl)",
                     size, CC__IPC_MAX_RANKS);
        return CC_ERR_NOT_SUPPORTED;
    }
    ipc->slot_bytes = (slot_bytes + 255) & ~(size_t)255; /* every area 256-byte aligned */
    ipc->bytes = CC__IPC_FLAGS_BYTES + 4 * ipc->slot_bytes;
    CC_CHECK(ck(cudaMalloc(&ipc->base, ipc->bytes), "cudaMalloc (cuda ipc region)"));
    ipc->peer[rank] = ipc->base;
    struct blob mine, *all = calloc((size_t)size, sizeof(*all));
    memset(&mine, 0, sizeof(mine));
    cc_status_t st = all ? CC_OK : CC_ERR_NO_MEMORY;
    /* Flags start at 0 and must be zero on the device before any peer can write them. */
    if (st == CC_OK) st = ck(cudaMemset(ipc->base, 0, CC__IPC_FLAGS_BYTES), "cudaMemset (flags)");
    if (st == CC_OK) st = ck(cudaDeviceSynchronize(), "cudaDeviceSynchronize (flags)");
    if (st == CC_OK) st = ck(cudaIpcGetMemHandle(&mine.handle, ipc->base), "cudaIpcGetMemHandle");
    mine.device = device, mine.pid = (int32_t)getpid(), mine.bytes = ipc->bytes;
    if (st == CC_OK) st = allgather(ctx, &mine, all, sizeof(mine));
    if (st == CC_OK) st = map_peers(ipc, all);
    free(all);
    if (st != CC_OK) cc__cuda_ipc_close(ipc);
    return st;
}

void cc__cuda_ipc_close(cc__cuda_ipc_t *ipc)
{
    for (int r = 0; r < ipc->size && r < CC__IPC_MAX_RANKS; r++)
        if (r != ipc->rank && ipc->peer[r]) cudaIpcCloseMemHandle(ipc->peer[r]);
    if (ipc->base) cudaFree(ipc->base);
    memset(ipc, 0, sizeof(*ipc));
}
