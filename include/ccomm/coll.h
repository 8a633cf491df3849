/*
 * ccomm/coll.h - point-to-point and collective operations.
 *
 * Every operation has the same shape:
 *   (comm, buffers..., count(s), dtype, [op], [root or peer], opts, work)
 * opts may be NULL (defaults: the comm's timeout, no stream, tag 0). With
 * work == NULL the call blocks until the op completes; otherwise it returns
 * at once (CC_OK: enqueued) and *work is a new handle (see ccomm/work.h).
 * Counts are in elements of dtype; displacements too (not bytes).
 *
 * Buffers are borrowed until the op completes (the call returns, or the work
 * handle says done). Count and displacement arrays of the v-collectives are
 * copied by the call: the caller may reuse them at once. Buffers of
 * different arguments must not overlap, except as each call's "in place"
 * rule allows; receive blocks of the v-collectives must not overlap one
 * another. Buffers need no alignment beyond that of their element type.
 * A buffer may be NULL where its count is 0, and on ranks where the call
 * says it is not used (e.g. the send buffer of a non-root scatter).
 *
 * Every rank gets bitwise the same result from the same inputs, run after
 * run: each algorithm reduces in a fixed order, stated in
 * docs/collectives.md. AVG divides the sum by the number of ranks once (at
 * the rank that finishes the sum; integers truncate toward zero);
 * PREMUL_SUM multiplies every rank's input by opts->premul_scalar before it
 * is summed.
 *
 * Errors: CC_ERR_INVALID_ARG (NULL buffer with count > 0, count x size
 * overflow, bad dtype, op, root, peer or tag, counts that overflow, buffers
 * that overlap; nothing is enqueued), CC_ERR_NOT_SUPPORTED (dtype/op pair that
 * makes no sense, e.g. a bitwise op on floats; nothing is enqueued),
 * CC_ERR_INVALID_USAGE (a collective between cc_group_start and
 * cc_group_end), CC_ERR_NO_MEMORY, then the op's own result: CC_ERR_TIMEOUT,
 * CC_ERR_PEER_LOST, CC_ERR_ABORTED, CC_ERR_MISMATCH (ranks passed counts
 * that do not fit together). An op that passed the door (count 0 included)
 * is seen by the hooks and the flight recorder.
 * Thread safety: per-communicator serial; every rank issues collectives in
 * the same order. Ops on one communicator run strictly in issue order, so
 * separate cc_send/cc_recv calls complete only when both ranks issue them in
 * matching orders: for any other pattern, group them (ccomm/group.h).
 */
#ifndef CCOMM_COLL_H
#define CCOMM_COLL_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * cc_send - send count elements of buf to `peer`. Matched in order with the
 * peer's cc_recv of the same tag (opts->tag). Inside a group (ccomm/group.h)
 * the call only records the send and returns CC_OK: it is issued by
 * cc_group_end, and buf is borrowed until then.
 */
CC_API cc_status_t cc_send(cc_comm_t *comm, const void *buf, size_t count, cc_dtype_t dtype,
                           int peer, const cc_op_opts_t *opts, cc_work_t **work);

/* cc_recv - receive count elements from `peer` into buf. The sender must send
 * exactly as many bytes (else CC_ERR_MISMATCH). Inside a group, as cc_send. */
CC_API cc_status_t cc_recv(cc_comm_t *comm, void *buf, size_t count, cc_dtype_t dtype, int peer,
                           const cc_op_opts_t *opts, cc_work_t **work);

/* cc_barrier - return once every rank has entered the barrier. */
CC_API cc_status_t cc_barrier(cc_comm_t *comm, const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_allreduce - recvbuf[i] = op over all ranks of sendbuf[i], count
 * elements, the same bits on every rank. In place: sendbuf == recvbuf.
 */
CC_API cc_status_t cc_allreduce(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                cc_dtype_t dtype, cc_redop_t op, const cc_op_opts_t *opts,
                                cc_work_t **work);

/*
 * cc_broadcast - copy count elements of the root's sendbuf into recvbuf on
 * every rank (the root's recvbuf too). sendbuf is read on the root only;
 * in place: sendbuf == recvbuf on the root. Other ranks may pass NULL.
 */
CC_API cc_status_t cc_broadcast(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                cc_work_t **work);

/*
 * cc_reduce - the root's recvbuf[i] = op over all ranks of sendbuf[i].
 * recvbuf is used on the root only (others may pass NULL); in place:
 * sendbuf == recvbuf on the root.
 */
CC_API cc_status_t cc_reduce(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                             cc_dtype_t dtype, cc_redop_t op, int root, const cc_op_opts_t *opts,
                             cc_work_t **work);

/*
 * cc_allgather - every rank's sendbuf (sendcount elements) lands in every
 * rank's recvbuf, rank r's at element r x sendcount (recvbuf holds size x
 * sendcount). In place (NCCL's rule): sendbuf == recvbuf + rank x sendcount
 * elements.
 */
CC_API cc_status_t cc_allgather(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                size_t sendcount, cc_dtype_t dtype, const cc_op_opts_t *opts,
                                cc_work_t **work);

/*
 * cc_allgatherv - as cc_allgather with a count per rank: rank r sends
 * sendcount == recvcounts[r] elements, which land at recvbuf + rdispls[r]
 * on every rank. recvcounts and rdispls (size entries each) must be the same
 * on every rank; rdispls NULL packs the blocks in rank order. In place:
 * sendbuf == recvbuf + rdispls[rank].
 */
CC_API cc_status_t cc_allgatherv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                 size_t sendcount, const size_t *recvcounts, const size_t *rdispls,
                                 cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_reduce_scatter - reduce size x recvcount elements of sendbuf over all
 * ranks; rank r receives block r (elements r x recvcount ...) in recvbuf.
 * In place (NCCL's rule): recvbuf == sendbuf + rank x recvcount elements.
 */
CC_API cc_status_t cc_reduce_scatter(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                     size_t recvcount, cc_dtype_t dtype, cc_redop_t op,
                                     const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_reduce_scatterv - as cc_reduce_scatter with a count per rank: sendbuf
 * holds sum(recvcounts) elements, block r packed after blocks 0..r-1; rank r
 * receives recvcounts[r] elements. recvcounts must be the same on every
 * rank. In place: recvbuf == sendbuf + (recvcounts[0] + .. + recvcounts[rank-1]).
 */
CC_API cc_status_t cc_reduce_scatterv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                      const size_t *recvcounts, cc_dtype_t dtype, cc_redop_t op,
                                      const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_alltoall - block p of sendbuf (count elements at p x count) goes to
 * rank p, which stores it as block `rank` of its recvbuf. Both buffers hold
 * size x count elements. In place: sendbuf == recvbuf.
 */
CC_API cc_status_t cc_alltoall(cc_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                               cc_dtype_t dtype, const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_alltoallv - as cc_alltoall with per-peer counts and displacements:
 * sendcounts[p] elements at sendbuf + sdispls[p] go to rank p; recvcounts[p]
 * elements from rank p land at recvbuf + rdispls[p]. What rank a sends to b
 * must equal what b expects from a (else CC_ERR_MISMATCH). A NULL
 * displacement array packs the blocks in rank order. In place: sendbuf ==
 * recvbuf; then each block p of recvbuf (recvcounts[p], rdispls[p]) is both
 * sent to and received from rank p, and sendcounts and sdispls are ignored
 * (may be NULL), as with MPI_IN_PLACE.
 */
CC_API cc_status_t cc_alltoallv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                                const size_t *sendcounts, const size_t *sdispls,
                                const size_t *recvcounts, const size_t *rdispls, cc_dtype_t dtype,
                                const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_gather - every rank's sendbuf (sendcount elements) lands in the root's
 * recvbuf, rank r's at element r x sendcount. recvbuf is used on the root
 * only. In place: sendbuf == recvbuf + root x sendcount on the root.
 */
CC_API cc_status_t cc_gather(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                             size_t sendcount, cc_dtype_t dtype, int root,
                             const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_gatherv - as cc_gather with a count per rank: rank r sends sendcount
 * elements, which the root stores at recvbuf + displs[r] and must equal its
 * recvcounts[r] (else CC_ERR_MISMATCH). recvcounts and displs are read on
 * the root only (others may pass NULL); displs NULL packs in rank order. In
 * place on the root: sendbuf == recvbuf + displs[root].
 */
CC_API cc_status_t cc_gatherv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                              size_t sendcount, const size_t *recvcounts, const size_t *displs,
                              cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                              cc_work_t **work);

/*
 * cc_scatter - block r of the root's sendbuf (recvcount elements at r x
 * recvcount) lands in rank r's recvbuf. sendbuf is read on the root only.
 * In place: recvbuf == sendbuf + root x recvcount on the root.
 */
CC_API cc_status_t cc_scatter(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                              size_t recvcount, cc_dtype_t dtype, int root,
                              const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_scatterv - as cc_scatter with a count per rank: sendcounts[r] elements
 * at the root's sendbuf + displs[r] go to rank r, which must pass recvcount
 * equal to it (else CC_ERR_MISMATCH). sendcounts and displs are read on the
 * root only; displs NULL packs in rank order. In place on the root: recvbuf
 * == sendbuf + displs[root].
 */
CC_API cc_status_t cc_scatterv(cc_comm_t *comm, const void *sendbuf, void *recvbuf,
                               const size_t *sendcounts, const size_t *displs, size_t recvcount,
                               cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                               cc_work_t **work);

/*
 * cc_monitored_barrier - a barrier that says who is missing (like
 * torch.distributed.monitored_barrier): rank 0 waits up to timeout_ms for
 * every other rank to check in, then releases them all with the verdict.
 *   timeout_ms   > 0: how long rank 0 waits once it entered. Other ranks
 *                wait up to twice as long for rank 0's verdict, and report
 *                rank 0 itself missing when it does not come.
 *   missing      out, may be NULL: on CC_ERR_TIMEOUT, the ranks that did
 *                not arrive in time, ascending, at most max_missing of them
 *   max_missing  entries missing[] holds (>= 0)
 *   nmissing     out, may be NULL: how many ranks were missing (0 on CC_OK;
 *                may exceed max_missing)
 * Every rank gets the same verdict. Returns CC_OK when all arrived in time;
 * CC_ERR_TIMEOUT naming the missing ranks in the log (error on rank 0, warn
 * elsewhere) and in missing[]: the ranks are then out of step, and the
 * communicator fails as after any timeout (its hang dump is written). With
 * work != NULL the outputs are written when the op completes; they are
 * borrowed until then. opts->timeout_ms, if longer, replaces the op's
 * deadline (by default 2 x timeout_ms plus a second).
 */
CC_API cc_status_t cc_monitored_barrier(cc_comm_t *comm, int64_t timeout_ms, int *missing,
                                        int max_missing, int *nmissing, const cc_op_opts_t *opts,
                                        cc_work_t **work);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_COLL_H */
