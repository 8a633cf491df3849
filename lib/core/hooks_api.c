/* hooks_api.c - the public hook calls: argument checks, then lib/hooks. */
#include "core/comm.h"
#include "base/log.h"

/* The checks every add shares, after its own; `allowed` are the flags it takes. */
static cc_status_t check_add(cc_comm_t *comm, unsigned flags, unsigned allowed, const char *name)
{
    if (comm && !cc__comm_valid(comm)) {
        cc_log_error(CC_SUBSYS_HOOKS, "%s: comm %p is not a valid communicator", name, (void *)comm);
        return CC_ERR_INVALID_ARG;
    }
    if (flags & ~allowed) {
        cc_log_error(CC_SUBSYS_HOOKS, "%s: flags 0x%x are not valid here (allowed: 0x%x)", name,
                     flags, allowed);
        return CC_ERR_INVALID_ARG;
    }
    if (cc__hooks_in_hook()) {
        cc_log_error(CC_SUBSYS_HOOKS, "%s: called from inside a hook", name);
        return CC_ERR_INVALID_USAGE;
    }
    return CC_OK;
}

static cc_status_t add(cc_comm_t *comm, int kind, void (*fn)(void), void *user, unsigned flags,
                       cc_hook_handle_t *handle, const char *name)
{
    if (!fn || !handle) {
        cc_log_error(CC_SUBSYS_HOOKS, "%s: %s is NULL", name, !fn ? "fn" : "handle");
        return CC_ERR_INVALID_ARG;
    }
    CC_CHECK(check_add(comm, flags, kind == CC__HOOK_ABORT ? CC_HOOK_SIGNAL_SAFE : 0u, name));
    cc__chain_set_t *set = comm ? &comm->hooks : &cc__global_hooks;
    return cc__hook_add(set, kind, fn, user, flags, comm, handle);
}

cc_status_t cc_hook_add_subscriber(cc_comm_t *comm, const cc_subscriber_t *sub, void *user,
                                   unsigned flags, cc_hook_handle_t *handle)
{
    static const char name[] = "cc_hook_add_subscriber";
    if (!sub || !handle) {
        cc_log_error(CC_SUBSYS_HOOKS, "%s: %s is NULL", name, !sub ? "sub" : "handle");
        return CC_ERR_INVALID_ARG;
    }
    if (!sub->pre && !sub->start && !sub->post && !sub->wait && !sub->abort) {
        cc_log_error(CC_SUBSYS_HOOKS,
                     "%s: sub %p has no callback (pre, start, post, wait and abort are NULL)", name,
                     (const void *)sub);
        return CC_ERR_INVALID_ARG;
    }
    /* CC_HOOK_SIGNAL_SAFE speaks of the abort callback: without one it means nothing. */
    CC_CHECK(check_add(comm, flags, sub->abort ? CC_HOOK_SIGNAL_SAFE : 0u, name));
    cc__chain_set_t *set = comm ? &comm->hooks : &cc__global_hooks;
    cc_status_t st = cc__hook_add_subscriber(set, sub, user, flags, comm, handle);
    if (st == CC_ERR_BUSY)
        cc_log_error(CC_SUBSYS_HOOKS,
                     "%s: %s%s already runs %d subscribers (CC_HOOK_SUBSCRIBERS, those for all "
                     "communicators included)",
                     name, comm ? "communicator " : "(comm NULL) a communicator",
                     comm ? comm->name : "", CC_HOOK_SUBSCRIBERS);
    return st;
}

cc_status_t cc_hook_add_pre(cc_comm_t *comm, cc_pre_hook_fn fn, void *user, unsigned flags,
                            cc_hook_handle_t *handle)
{
    return add(comm, CC__HOOK_PRE, (void (*)(void))fn, user, flags, handle, "cc_hook_add_pre");
}

cc_status_t cc_hook_add_start(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                              cc_hook_handle_t *handle)
{
    return add(comm, CC__HOOK_START, (void (*)(void))fn, user, flags, handle, "cc_hook_add_start");
}

cc_status_t cc_hook_add_post(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                             cc_hook_handle_t *handle)
{
    return add(comm, CC__HOOK_POST, (void (*)(void))fn, user, flags, handle, "cc_hook_add_post");
}

cc_status_t cc_hook_add_wait(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                             cc_hook_handle_t *handle)
{
    return add(comm, CC__HOOK_WAIT, (void (*)(void))fn, user, flags, handle, "cc_hook_add_wait");
}

cc_status_t cc_hook_add_abort(cc_comm_t *comm, cc_abort_hook_fn fn, void *user, unsigned flags,
                              cc_hook_handle_t *handle)
{
    return add(comm, CC__HOOK_ABORT, (void (*)(void))fn, user, flags, handle, "cc_hook_add_abort");
}

cc_status_t cc_hook_remove(cc_hook_handle_t handle)
{
    if (cc__hooks_in_hook()) {
        cc_log_error(CC_SUBSYS_HOOKS, "cc_hook_remove: called from inside a hook (handle %llu)",
                     (unsigned long long)handle);
        return CC_ERR_INVALID_USAGE;
    }
    return cc__hook_remove(handle);
}
