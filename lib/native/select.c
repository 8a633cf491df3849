/*
 * select.c - which algorithm runs an op. One row per collective; the
 * Native engine issue widens this into a table by size, rank count and
 * transport with CCOMM_ALGO_<COLL> overrides.
 */
#include "comm.h"
#include "config.h"
#include "door.h"
#include "log.h"
#include "native.h"
#include "shm_arena.h"

struct algo {
    cc__algo_fn fn;
    const char *name;
};

static struct algo pick(const cc__op_t *op)
{
    switch (op->info.type) {
    case CC_OP_SEND: return (struct algo){cc__send_direct, "direct"};
    case CC_OP_RECV: return (struct algo){cc__recv_direct, "direct"};
    case CC_OP_BARRIER: return (struct algo){cc__barrier_dissemination, "dissemination"};
    case CC_OP_ALLREDUCE: return (struct algo){cc__allreduce_ring, "ring"};
    default: return (struct algo){NULL, NULL};
    }
}

cc_status_t cc__native_run(cc__native_t *nc, cc__op_t *op)
{
    struct algo a = {NULL, NULL};
    a.fn = cc__shm_pick(nc, op, &a.name); /* ranks of one host: shared-memory algorithms first */
    if (!a.fn) a = pick(op);
    if (!a.fn) {
        cc_log_error(CC_SUBSYS_COLL, "native engine has no algorithm for %s",
                     cc_op_type_name(op->info.type));
        return CC_ERR_NOT_SUPPORTED;
    }
    op->info.algorithm = a.name;
    op->info.transport = op->info.peer >= 0 ? cc__net_transport(nc->net, op->info.peer)
                                            : nc->transport;
    cc__op_started(op);
    if (cc__cfg()->desync_check && op->info.coll_seq) CC_CHECK(cc__desync_check(nc, op));
    return a.fn(nc, op);
}
