/*
 * gpu_ops.c - collectives that ccomm's public API does not have yet
 * (broadcast, reduce, allgather, reduce-scatter, all-to-all, gather,
 * scatter) issued through the core's door, as the interposer does, so the
 * GPU tests can run every engine row. When the public calls land, the
 * tests can switch to them; the door sees the same ops.
 */
#include "gpu_ops.h"
#include "core/plugin.h"

cc_status_t gpu_issue(cc_comm_t *comm, const gpu_op_t *g, cc_work_t **work)
{
    const cc_core_t *core = cc_plugin_core_get();
    if (!core) return CC_ERR_NOT_SUPPORTED;
    cc__op_t op;
    core->op_prepare(&op, comm, g->type);
    op.info.sendbuf = g->sendbuf;
    op.info.recvbuf = g->recvbuf;
    op.info.in_count = g->in_count;
    op.info.out_count = g->out_count;
    op.info.dtype = g->dtype;
    op.info.redop = g->redop;
    op.info.root = g->root;
    size_t es = g->dtype < CC_DTYPE_COUNT ? cc_dtype_size(g->dtype) : 1;
    op.info.bytes = (g->in_count > g->out_count ? g->in_count : g->out_count) * es;
    op.premul_scalar = g->premul;
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.stream = g->stream;
    o.timeout_ms = g->timeout_ms;
    return core->door_issue(&op, &o, work);
}
