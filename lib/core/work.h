/*
 * work.h - work handles (internal). A handle owns the op of an async call.
 * Two references: the caller's (dropped by cc_work_free) and the engine's
 * (dropped by cc__op_finished); the last one frees it.
 */
#ifndef CC_CORE_WORK_H
#define CC_CORE_WORK_H

#include "ccomm/ccomm.h"
#include "engine/op.h"

/* A new handle whose op is not initialized: the caller writes it whole (cc__op_copy). */
struct cc_work *cc__work_new(cc_comm_t *comm);
cc__op_t *cc__work_op(struct cc_work *work);
void cc__work_unref(struct cc_work *work);
/* Free a handle whose op never reached the engine. */
void cc__work_discard(struct cc_work *work);

#endif /* CC_CORE_WORK_H */
