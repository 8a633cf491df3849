/*
 * coll_api.h - what the API calls build for the engines beyond cc_op_info_t
 * (internal): the argument blocks of grouped, coalesced, byte and monitored
 * ops (reached through op->extra), the byte-string result type, and the
 * helpers the coll_api*.c files share.
 *
 * Ownership: an argument block is allocated by the API call and owned by
 * the op (op->owned); the op's release callback frees it when the op is
 * over, on every path. Engines read it and write only the fields marked
 * "engine".
 */
#ifndef CC_CORE_COLL_API_H
#define CC_CORE_COLL_API_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "engine/args.h"
#include "engine/op.h"

/*
 * The last step of every API call: refuse non-p2p ops inside a group, hold
 * p2p ops of a group, else issue through the door. op->owned and
 * op->release must already be set if the op owns memory (they run on every
 * path, refusals included).
 */
cc_status_t cc__api_issue(cc__op_t *op, const cc_op_opts_t *opts, cc_work_t **work);

/* Release callback that frees op->owned. */
void cc__api_free_owned(cc__op_t *op, cc_status_t status);

/* Group (group.c): 1 while this thread has a group open; hold a p2p op in it. */
int cc__group_active(void);
cc_status_t cc__group_hold(cc__op_t *tmpl, const cc_op_opts_t *opts, cc_work_t **work);

#endif /* CC_CORE_COLL_API_H */
