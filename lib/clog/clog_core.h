/*
 * clog_core.h - the core functions clog calls (hook registration and comm
 * getters), in one place.
 *
 * While the core and the hook chains are being written in parallel with
 * clog, this branch may be built without them: the references are weak,
 * and clog reports CC_ERR_NOT_SUPPORTED (attach) or "?" (a split's ranks)
 * when they are missing. Once the core is merged, CC__CLOG_CORE_WEAK goes
 * away (a weak reference does not pull a member out of libccomm.a, so it must
 * not outlive the merge).
 */
#ifndef CC_CLOG_CORE_H
#define CC_CLOG_CORE_H

#include "ccomm/comm.h"
#include "ccomm/hooks.h"

#ifdef CC__CLOG_CORE_WEAK
#pragma weak cc_hook_add_pre
#pragma weak cc_hook_add_start
#pragma weak cc_hook_add_post
#pragma weak cc_hook_add_wait
#pragma weak cc_hook_add_abort
#pragma weak cc_hook_remove
#pragma weak cc_comm_id
#pragma weak cc_comm_name
#pragma weak cc_comm_rank
#pragma weak cc_comm_size
#pragma weak cc_comm_world_rank
#define CC__CLOG_HAVE_CORE() (cc_hook_add_pre && cc_hook_remove && cc_comm_id && cc_comm_name)
#define CC__CLOG_HAVE_WORLD_RANK() (cc_comm_world_rank != NULL)
#else
#define CC__CLOG_HAVE_CORE() 1
#define CC__CLOG_HAVE_WORLD_RANK() 1
#endif

#endif /* CC_CLOG_CORE_H */
