/* door.h - the op door's entry points for the API functions (internal). */
#ifndef CC_CORE_DOOR_H
#define CC_CORE_DOOR_H

#include "ccomm/ccomm.h"
#include "engine/op.h"

/* Fill an op with the comm's defaults (no identity yet). */
void cc__op_prepare(cc__op_t *op, cc_comm_t *comm, cc_op_type_t type);

/*
 * Issue a validated op built from `tmpl`: identity, PRE chain, engine. A
 * blocking call (work == NULL) runs the op in *tmpl itself, which must live
 * until the call returns; an async one copies it into the work.
 * tmpl->release (if any) runs exactly once on every path, refusals included.
 * work == NULL blocks until the op finished and returns its status;
 * otherwise *work is set on CC_OK. Ops of a broken comm are refused with
 * its error before they get an identity.
 */
cc_status_t cc__door_issue(cc__op_t *tmpl, const cc_op_opts_t *opts, cc_work_t **work);

/*
 * The first half of the door, for ops that are held before they reach an
 * engine (the members of a group): opts, identity, deadline, PRE chain.
 * `op` is at its final address (the hooks keep it). A veto ends the op
 * (POST with the veto status, release) and is returned.
 */
cc_status_t cc__door_admit(cc__op_t *op, const cc_op_opts_t *opts);

/*
 * CC_ERR_INVALID_USAGE (logged) when the calling thread is inside a hook run for an op of
 * `comm`: an op of comm issued there would run the same hook again. Else CC_OK; costs one
 * thread-local load when no hook runs.
 */
cc_status_t cc__door_reentry(cc_comm_t *comm, cc_op_type_t type);


/* 1 for the receiving op types (their p2p_seq counts receives). */
int cc__op_is_recv(cc_op_type_t type);

/* Door entry for lifecycle events (init, split, destroy, abort). */
cc_status_t cc__door_lifecycle(cc_comm_t *comm, cc_op_type_t type, uint64_t parent_id,
                               cc_status_t (*action)(cc_comm_t *comm, void *arg), void *arg);

#endif /* CC_CORE_DOOR_H */
