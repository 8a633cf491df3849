/*
 * clog_attach.c - attach a logger to communicators: register its five
 * subscribers (pre, start, post, wait, abort) on one comm's chains or on the
 * chains of every comm, and remove them again.
 *
 * A logger keeps a list of its attachments under att_lock. The lock is never
 * taken by a hook, so holding it while cc_hook_remove waits for a running
 * hook cannot deadlock.
 */
#include <stdlib.h>
#include <string.h>

#include "ccomm/comm.h"
#include "clog/clog_internal.h"
#include "base/log.h"

/* Remove an attachment's hooks. A comm's hooks went away with the comm
 * when it was destroyed: CC_ERR_NOT_FOUND then is expected. */
static void att_unhook(struct cc__clog_att *a)
{
    for (int i = 0; i < 5; i++)
        if (a->h[i]) cc_hook_remove(a->h[i]);
}

/*
 * The hooks the logger's events need, all or none: a half-attached logger would log half an
 * op. POST (comm lines, E) and ABORT (A, and the flush) always; PRE, START and WAIT only for
 * Q, S and W: a hook that would return at once still costs its chain's walk on every op (an
 * 8-byte allreduce at 2 ranks with CCOMM_CLOG_EVENTS=LIFECYCLE: 63 ns an op over the recorder
 * alone with all five attached, bench/obs_modes.sh, 2026-12-06).
 */
static cc_status_t att_hook(cc_clog_t *c, struct cc__clog_att *a)
{
    cc_comm_t *comm = a->comm;
    cc_status_t st;
    if (c->events & CC_CLOG_Q)
        CC_CHECK_GOTO(cc_hook_add_pre(comm, cc__clog_on_pre, c, 0, &a->h[0]), st, fail);
    if (c->events & CC_CLOG_S)
        CC_CHECK_GOTO(cc_hook_add_start(comm, cc__clog_on_start, c, 0, &a->h[1]), st, fail);
    CC_CHECK_GOTO(cc_hook_add_post(comm, cc__clog_on_post, c, 0, &a->h[2]), st, fail);
    if (c->events & CC_CLOG_W)
        CC_CHECK_GOTO(cc_hook_add_wait(comm, cc__clog_on_wait, c, 0, &a->h[3]), st, fail);
    CC_CHECK_GOTO(cc_hook_add_abort(comm, cc__clog_on_abort, c, 0, &a->h[4]), st, fail);
    return CC_OK;
fail:
    att_unhook(a);
    return st;
}

/*
 * Would attaching `comm` (id) double events? Drops a stale entry for a
 * destroyed comm whose address was reused. Called with att_lock held.
 */
static cc_status_t att_check(cc_clog_t *c, cc_comm_t *comm, uint64_t id)
{
    for (struct cc__clog_att **pp = &c->atts; *pp;) {
        struct cc__clog_att *a = *pp;
        if (comm && a->comm == comm && a->comm_id != id) {
            *pp = a->next;
            att_unhook(a);
            free(a);
            continue;
        }
        if (!comm || !a->comm || a->comm == comm) {
            cc_log_error(CC_SUBSYS_CLOG,
                         "clog %s: cannot attach %s: already attached to %s, events would be "
                         "written twice",
                         c->path, comm ? cc_comm_name(comm) : "all communicators",
                         a->comm ? cc_comm_name(a->comm) : "all communicators");
            return CC_ERR_INVALID_USAGE;
        }
        pp = &a->next;
    }
    return CC_OK;
}

/* The new_comm line of a comm attached by hand, from its getters. */
static void new_comm_line(cc_clog_t *c, cc_comm_t *comm, uint64_t id)
{
    cc_op_info_t info;
    memset(&info, 0, sizeof(info));
    info.comm = comm;
    info.comm_id = id;
    info.comm_name = cc_comm_name(comm);
    info.rank = cc_comm_rank(comm);
    info.size = cc_comm_size(comm);
    cc__clog_push_new_comm(c, &info);
}

cc_status_t cc_clog_attach(cc_clog_t *c, cc_comm_t *comm)
{
    if (!cc__clog_valid(c)) {
        cc_log_error(CC_SUBSYS_CLOG, "cc_clog_attach: clog %p is not an open logger", (void *)c);
        return CC_ERR_INVALID_ARG;
    }
    /* cc_comm_id checks the comm's magic: 0 means not a live communicator. */
    uint64_t id = comm ? cc_comm_id(comm) : 0;
    if (comm && !id) {
        cc_log_error(CC_SUBSYS_CLOG, "cc_clog_attach: comm %p is not a valid communicator",
                     (void *)comm);
        return CC_ERR_INVALID_ARG;
    }
    struct cc__clog_att *a = calloc(1, sizeof(*a));
    if (!a) return CC_ERR_NO_MEMORY;
    a->comm = comm;
    a->comm_id = id;
    pthread_mutex_lock(&c->att_lock);
    cc_status_t st = att_check(c, comm, id);
    if (st == CC_OK) st = att_hook(c, a);
    if (st == CC_OK) {
        a->next = c->atts;
        c->atts = a;
        /* Under the lock, so a racing detach cannot slip between. */
        if (comm) new_comm_line(c, comm, id);
    }
    pthread_mutex_unlock(&c->att_lock);
    if (st != CC_OK) free(a);
    return st;
}

cc_status_t cc_clog_detach(cc_clog_t *c, cc_comm_t *comm)
{
    if (!cc__clog_valid(c)) {
        cc_log_error(CC_SUBSYS_CLOG, "cc_clog_detach: clog %p is not an open logger", (void *)c);
        return CC_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&c->att_lock);
    /* By address only: the comm may be destroyed, so it must not be asked anything. */
    struct cc__clog_att **pp = &c->atts;
    while (*pp && (*pp)->comm != comm)
        pp = &(*pp)->next;
    struct cc__clog_att *a = *pp;
    if (a) {
        *pp = a->next;
        att_unhook(a);
    }
    pthread_mutex_unlock(&c->att_lock);
    if (!a) {
        /* Not an error worth a log line of its own level: the caller decides. */
        cc_log_debug(CC_SUBSYS_CLOG, "cc_clog_detach: clog %s is not attached to comm %p", c->path,
                     (void *)comm);
        return CC_ERR_NOT_FOUND;
    }
    free(a);
    return CC_OK;
}

/* Close: remove every attachment (each hook has stopped when this returns). */
void cc__clog_detach_all(cc_clog_t *c)
{
    /* Take the list, then unhook outside the lock: removal waits for running hooks. */
    pthread_mutex_lock(&c->att_lock);
    struct cc__clog_att *a = c->atts;
    c->atts = NULL;
    pthread_mutex_unlock(&c->att_lock);
    while (a) {
        struct cc__clog_att *next = a->next;
        att_unhook(a);
        free(a);
        a = next;
    }
}
