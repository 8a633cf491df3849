/*
 * ccomm/group.h - grouped point-to-point operations and coalesced
 * collectives: several transfers issued as one operation.
 *
 * Groups (NCCL's ncclGroupStart/ncclGroupEnd): cc_send and cc_recv called
 * between cc_group_start and cc_group_end on this thread are not run one by
 * one; cc_group_end issues them together, as one operation per
 * communicator that posts every receive and every send at once and waits
 * for all of them. So any mix of sends and receives completes without
 * deadlock, whatever order each rank lists them in (a ring exchange, a
 * halo swap, a rank sending to itself). Without a group, ops on a
 * communicator run strictly in issue order, and separate cc_send/cc_recv
 * calls complete only when the ranks issue them in matching orders.
 *
 * Inside a group each cc_send/cc_recv still passes the door at its call:
 * it is checked, numbered (op_id, p2p_seq) and seen by the PRE hooks and
 * the flight recorder, then held; it returns CC_OK (a veto by a PRE hook is
 * returned at once and the op is dropped). Its buffer is borrowed until the
 * group's operation completes. Given a work handle, a member completes it
 * with its own status when the group's operation has run; without one, its
 * status joins the group's (the first error). Messages between two ranks
 * with the same tag still match in the order they are listed.
 *
 * Only cc_send and cc_recv may be called inside a group; any other
 * operation returns CC_ERR_INVALID_USAGE and is not enqueued. Groups nest
 * (only the outermost cc_group_end issues). A communicator must not be
 * destroyed while a group of this thread holds ops of it.
 *
 * Coalesced collectives run one collective over several buffers as one
 * operation (one sequence number, one flight-recorder entry of type
 * "coalesced"): small buffers are packed together and sent as one message
 * stream, large ones run in place. Per buffer the rules and results are
 * those of the plain collective (ccomm/coll.h), in-place rule included.
 * Arrays of pointers and counts are copied by the call.
 *
 * Thread safety: the group state is per thread. Coalesced calls are
 * per-communicator serial like every collective.
 */
#ifndef CCOMM_GROUP_H
#define CCOMM_GROUP_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * cc_group_start - open a group on this thread (or nest one level deeper).
 * Returns CC_OK; CC_ERR_INVALID_USAGE past 64 levels of nesting.
 */
CC_API cc_status_t cc_group_start(void);

/*
 * cc_group_end - close a group level; the outermost one issues the held
 * sends and receives as one operation per communicator (type
 * "batch_op_issue" for the hooks and the recorder).
 *   opts  options of that operation (timeout), may be NULL
 *   work  NULL: block until every member finished and return the first
 *         error among them; else *work is a new handle of the group's
 *         operation (the members' statuses come through it, or through
 *         their own handles). With members on several communicators, work
 *         must be NULL.
 * An inner cc_group_end returns CC_OK and sets *work (if given) to NULL.
 * A group with no members returns CC_OK at once (*work NULL).
 * Returns CC_OK; CC_ERR_INVALID_USAGE (no group open, or work with several
 * communicators: every member then ends with that status); the members'
 * errors (CC_ERR_MISMATCH, CC_ERR_TIMEOUT, CC_ERR_PEER_LOST, ...); a
 * broken communicator's error.
 */
CC_API cc_status_t cc_group_end(const cc_op_opts_t *opts, cc_work_t **work);

/*
 * cc_allreduce_coalesced - cc_allreduce of nbufs buffers in one operation:
 * recvbufs[i] (counts[i] elements) = op over ranks of sendbufs[i]. counts
 * and nbufs must be the same on every rank. In place per buffer.
 */
CC_API cc_status_t cc_allreduce_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                          void *const *recvbufs, const size_t *counts, int nbufs,
                                          cc_dtype_t dtype, cc_redop_t op,
                                          const cc_op_opts_t *opts, cc_work_t **work);

/* cc_broadcast_coalesced - cc_broadcast of nbufs buffers from `root` in one operation. */
CC_API cc_status_t cc_broadcast_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                          void *const *recvbufs, const size_t *counts, int nbufs,
                                          cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                          cc_work_t **work);

/* cc_allgather_coalesced - cc_allgather of nbufs buffers (sendcounts[i] elements each,
 * recvbufs[i] holding size x sendcounts[i]) in one operation. */
CC_API cc_status_t cc_allgather_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                          void *const *recvbufs, const size_t *sendcounts,
                                          int nbufs, cc_dtype_t dtype, const cc_op_opts_t *opts,
                                          cc_work_t **work);

/* cc_reduce_scatter_coalesced - cc_reduce_scatter of nbufs buffers (sendbufs[i] holding
 * size x recvcounts[i] elements) in one operation. */
CC_API cc_status_t cc_reduce_scatter_coalesced(cc_comm_t *comm, const void *const *sendbufs,
                                               void *const *recvbufs, const size_t *recvcounts,
                                               int nbufs, cc_dtype_t dtype, cc_redop_t op,
                                               const cc_op_opts_t *opts, cc_work_t **work);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_GROUP_H */
