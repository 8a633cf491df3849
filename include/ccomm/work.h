/*
 * ccomm/work.h - work handles of asynchronous operations.
 *
 * An op called with a non-NULL `work` argument returns at once and hands out
 * a work handle (new; the caller frees it with cc_work_free). The op runs in
 * the background in issue order; test or wait for it, then free the handle.
 * Thread safety: one thread at a time per handle.
 */
#ifndef CCOMM_WORK_H
#define CCOMM_WORK_H

#include "ccomm/hooks.h"
#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * cc_work_test - *done = 1 if the op finished (well or badly), else 0.
 * Returns CC_OK while pending or after success, else the op's error.
 */
CC_API cc_status_t cc_work_test(cc_work_t *work, int *done);

/*
 * cc_work_wait - block until the op finishes or `timeout_ms` passes
 * (-1 = the op's own deadline, which always exists). Waiting yields the CPU.
 * Returns the op's status; CC_ERR_TIMEOUT if this wait timed out while the op
 * still runs (the op itself times out at its deadline and fails the comm).
 */
CC_API cc_status_t cc_work_wait(cc_work_t *work, int64_t timeout_ms);

/* cc_work_op_id - the op_id the hooks and the flight recorder saw; 0 if NULL. */
CC_API uint64_t cc_work_op_id(const cc_work_t *work);

/*
 * cc_work_info - copy what the hooks see of the op (ccomm/hooks.h) into *info:
 * its type, coll_seq / p2p_seq, communicator, counts, dtype, times and, once
 * it finished, its status (CC_INPROGRESS before). Pointers inside (comm_name,
 * buffers, engine, algorithm) are borrowed until cc_work_free. For adapters
 * (the PyTorch backend) that name an op in an error or hand its record to a
 * callback after it ended, without a hook on the hot path.
 * Returns CC_OK; CC_ERR_INVALID_ARG (work invalid or freed, info NULL).
 * Thread safety: any thread; while the op runs, times may be read mid-update
 * (read them after cc_work_test/cc_work_wait says done).
 */
CC_API cc_status_t cc_work_info(const cc_work_t *work, cc_op_info_t *info);

/*
 * cc_work_free - release the handle. Freeing a pending op's handle does not
 * cancel it: the op completes in the background. NULL is ignored.
 */
CC_API void cc_work_free(cc_work_t *work);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_WORK_H */
