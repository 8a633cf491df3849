/*
 * select_shm.c - which shared-memory algorithm runs an op, by collective,
 * size and rank count (measured on a 2-core host; docs/performance.md).
 * Only communicators whose ranks all share a host have an arena; the
 * single-copy (cma) algorithms need process_vm_readv between every pair,
 * agreed at creation, and otherwise the transport's algorithms run.
 */
#include "shm_arena.h"

/* Largest allreduce (bytes) that stages every input in the arena rather than reading peers. */
#define ALLREDUCE_FLAT_MAX (16u * 1024u)

cc__algo_fn cc__shm_pick(cc__native_t *nc, const cc__op_t *op, const char **name)
{
    if (!nc->arena) return NULL;
    const cc_op_info_t *in = &op->info;
    int cma = cc__arena_cma_ok(nc->arena);
    switch (in->type) {
    case CC_OP_ALLREDUCE:
        if (in->bytes <= ALLREDUCE_FLAT_MAX && in->bytes <= CC__ARENA_DATA) {
            *name = "shm_flat";
            return cc__allreduce_shm_flat;
        }
        if (!cma) return NULL;
        *name = "shm_cma";
        return cc__allreduce_shm_cma;
    default: return NULL;
    }
}
