/*
 * ccomm/coll.h - point-to-point and collective operations.
 *
 * Every operation has the same shape:
 *   (comm, buffers..., count, dtype, [op], [root or peer], opts, work)
 * opts may be NULL (defaults: the comm's timeout, no stream, tag 0). With
 * work == NULL the call blocks until the op completes; otherwise it returns
 * at once (CC_OK: enqueued) and *work is a new handle (see ccomm/work.h).
 * In-place means sendbuf == recvbuf. Counts are in elements of dtype.
 *
 * Errors: CC_ERR_INVALID_ARG (NULL buffer with count > 0, count x size
 * overflow, bad dtype, op, root, peer or tag; nothing is enqueued),
 * CC_ERR_NOT_SUPPORTED (dtype/op pair that makes no sense, e.g. a bitwise op
 * on floats), then the op's own result: CC_ERR_TIMEOUT, CC_ERR_PEER_LOST,
 * CC_ERR_ABORTED, CC_ERR_MISMATCH.
 * Thread safety: per-communicator serial; every rank issues collectives in
 * the same order.
 */
#ifndef CCOMM_COLL_H
#define CCOMM_COLL_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Send count elements to `peer`. Matched in order with the peer's cc_recv of
 * the same tag (opts->tag). */
CC_API cc_status_t cc_send(cc_comm_t *comm, const void *buf, size_t count, cc_dtype_t dtype,
                           int peer, const cc_op_opts_t *opts, cc_work_t **work);

/* Receive count elements from `peer`. The sender must send exactly as many
 * bytes (else CC_ERR_MISMATCH). */
CC_API cc_status_t cc_recv(cc_comm_t *comm, void *buf, size_t count, cc_dtype_t dtype, int peer,
                           const cc_op_opts_t *opts, cc_work_t **work);

/* Return once every rank has entered the barrier. */
CC_API cc_status_t cc_barrier(cc_comm_t *comm, const cc_op_opts_t *opts, cc_work_t **work);

/* recvbuf[i] = op over ranks of sendbuf[i], the same bits on every rank. */
CC_API cc_status_t cc_allreduce(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts,
                                cc_work_t **work);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_COLL_H */
