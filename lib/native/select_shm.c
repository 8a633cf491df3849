/*
 * select_shm.c - what runs when a shared-memory row of the selection table
 * (select.c) is chosen but cannot run as asked. Every rank decides alike,
 * from what they all agreed on (the arena exists, process_vm_readv works
 * between every pair) and the op's size:
 *
 *   shm_flat asked, data too large for the arena's staging areas: shm_cma;
 *   shm_cma asked, no single copy between ranks: shm_flat if it fits, else
 *     shm_stream where the collective has one (broadcast, allgather, alltoall
 *     on 2 ranks: cc__shm_run_cma);
 *   otherwise (no arena): the transport's algorithm for the collective.
 *
 * A body that needs the arena only (shm_stream) runs through
 * cc__shm_run_body: the transport's algorithm stands in without an arena.
 *
 * The op's `algorithm` then names what really ran (the POST hooks and the
 * flight recorder's end state see it).
 */
#include "engine/comm.h"
#include "native/shm_algo.h"

/* Bytes a rank stages in the arena for this op in the flat algorithm. */
static size_t staged_bytes(const cc__native_t *nc, const cc__op_t *op)
{
    const cc_op_info_t *in = &op->info;
    size_t es = in->dtype < CC_DTYPE_COUNT ? cc_dtype_size(in->dtype) : 1;
    size_t count = in->type == CC_OP_SCATTER ? (size_t)nc->size * in->out_count : in->in_count;
    return count * es;
}

/* The transport's algorithm for a collective whose arena is missing. */
static cc_status_t net_stand_in(cc__native_t *nc, cc__op_t *op)
{
    static const struct {
        cc_op_type_t type;
        cc__algo_fn fn;
        const char *name;
    } net[] = {
        {CC_OP_BARRIER, cc__barrier_dissemination, "dissemination"},
        {CC_OP_ALLREDUCE, cc__allreduce_ring, "ring"},
        {CC_OP_BROADCAST, cc__broadcast_ring, "ring"},
        {CC_OP_REDUCE, cc__reduce_ring, "ring"},
        {CC_OP_ALLGATHER, cc__allgather_ring, "ring"},
        {CC_OP_REDUCE_SCATTER, cc__reduce_scatter_ring, "ring"},
        {CC_OP_ALLTOALL, cc__alltoall_pairwise, "pairwise"},
        {CC_OP_GATHER, cc__gather_linear, "linear"},
        {CC_OP_SCATTER, cc__scatter_linear, "linear"},
    };
    cc__native_start_pending(op); /* the transport's algorithm may wait at once */
    for (size_t i = 0; i < sizeof(net) / sizeof(net[0]); i++) {
        if (net[i].type != op->info.type) continue;
        op->info.algorithm = net[i].name;
        return net[i].fn(nc, op);
    }
    cc_log_error(CC_SUBSYS_COLL, "shm: no algorithm stands in for %s on communicator %s",
                 cc_op_type_name(op->info.type), nc->comm->name);
    return CC_ERR_INTERNAL;
}

cc_status_t cc__shm_run(cc__native_t *nc, cc__op_t *op, int want_cma, cc__shm_body flat,
                        cc__shm_body cma)
{
    /* The asked-for body first, so the common case tests one condition. */
    size_t staged = staged_bytes(nc, op);
    int fits = nc->arena && staged <= CC__ARENA_DATA;
    cc__shm_body body = !want_cma && fits ? flat : NULL;
    if (!body) {
        int single = cma && cc__arena_cma_ok(nc->arena);
        body = want_cma ? (single ? cma : fits ? flat : NULL) : (single ? cma : NULL);
    }
    if (!body) return net_stand_in(nc, op);
    if (body != (want_cma ? cma : flat)) op->info.algorithm = body == cma ? "shm_cma" : "shm_flat";
    /* Every body stages this much or nothing (cc__shm_begin: deep when it fits the lines). */
    cc__arena_op_t ao = {.seq = 0, .deep = staged <= CC__ARENA_INLINE};
    return cc__arena_end(&ao, body(nc, op, &ao));
}

/* Whether a stream of `steps` phases fits prog's low CC__ARENA_PROG_BITS bits. */
static int stream_fits(uint64_t steps)
{
    return steps < (1ull << CC__ARENA_PROG_BITS) - 2;
}

/* The stream stands in only when it fits: a stream row that does not fit calls the cma row,
 * which then runs as cc__shm_run, so the two never call each other in a loop. */
cc_status_t cc__shm_run_cma(cc__native_t *nc, cc__op_t *op, cc__shm_body flat, cc__shm_body cma,
                            uint64_t steps, cc__shm_body stream)
{
    if (nc->arena && !cc__arena_cma_ok(nc->arena) && staged_bytes(nc, op) > CC__ARENA_DATA &&
        stream_fits(steps)) {
        op->info.algorithm = "shm_stream";
        return cc__shm_run_body(nc, op, stream);
    }
    return cc__shm_run(nc, op, 1, flat, cma);
}

cc_status_t cc__shm_run_body(cc__native_t *nc, cc__op_t *op, cc__shm_body body)
{
    if (!nc->arena) return net_stand_in(nc, op);
    cc__arena_op_t ao = {.seq = 0};
    return cc__arena_end(&ao, body(nc, op, &ao));
}

cc_status_t cc__shm_run_stream(cc__native_t *nc, cc__op_t *op, uint64_t steps, cc__shm_body body,
                               cc_status_t (*cma)(cc__native_t *nc, cc__op_t *op))
{
    if (!stream_fits(steps)) {
        op->info.algorithm = "shm_cma";
        return cma(nc, op);
    }
    return cc__shm_run_body(nc, op, body);
}
