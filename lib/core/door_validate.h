/*
 * door_validate.h - the door's validation step, one function per public
 * call (internal). Every public call (coll_api*.c) runs its
 * cc__validate_<call> on its own arguments before it builds the op: the
 * comm and the per-rank arrays must be known good before anything reads
 * them to describe the op. Each returns CC_OK, or a status after logging
 * the function, the argument and the value (validate.h's checks); nothing
 * is enqueued when one fails. Outputs (sizes the op needs) are meaningful
 * on CC_OK only.
 */
#ifndef CC_CORE_DOOR_VALIDATE_H
#define CC_CORE_DOOR_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"

/* One count: *bytes = count x dtype size. fn names cc_send or cc_recv. */
cc_status_t cc__validate_send_recv(cc_comm_t *comm, const void *buf, size_t count, cc_dtype_t dtype,
                                   int peer, const cc_op_opts_t *opts, const char *fn,
                                   size_t *bytes);
cc_status_t cc__validate_barrier(cc_comm_t *comm, const cc_op_opts_t *opts);
cc_status_t cc__validate_allreduce(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   size_t count, cc_dtype_t dtype, cc_redop_t redop,
                                   const cc_op_opts_t *opts, size_t *bytes);
/* sendbuf is looked at on the root only. */
cc_status_t cc__validate_broadcast(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   size_t count, cc_dtype_t dtype, int root,
                                   const cc_op_opts_t *opts, size_t *bytes);
/* recvbuf is looked at on the root only. */
cc_status_t cc__validate_reduce(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                size_t count, cc_dtype_t dtype, cc_redop_t redop, int root,
                                const cc_op_opts_t *opts, size_t *bytes);
/* *bytes = one rank's block (recvcount x dtype size). */
cc_status_t cc__validate_reduce_scatter(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                        size_t recvcount, cc_dtype_t dtype, cc_redop_t redop,
                                        const cc_op_opts_t *opts, size_t *bytes);
cc_status_t cc__validate_monitored_barrier(cc_comm_t *comm, int64_t timeout_ms, const int *missing,
                                           int max_missing, const cc_op_opts_t *opts);

/* The collectives laid out by rank (coll_api_v.c); *total = the v-array's sum (elements). */
cc_status_t cc__validate_allgather(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   size_t sendcount, cc_dtype_t dtype, const cc_op_opts_t *opts);
cc_status_t cc__validate_allgatherv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                    size_t sendcount, const size_t *recvcounts,
                                    const size_t *rdispls, cc_dtype_t dtype,
                                    const cc_op_opts_t *opts, size_t *total);
cc_status_t cc__validate_reduce_scatterv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                         const size_t *recvcounts, cc_dtype_t dtype,
                                         cc_redop_t redop, const cc_op_opts_t *opts, size_t *total);
cc_status_t cc__validate_gather(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                size_t sendcount, cc_dtype_t dtype, int root,
                                const cc_op_opts_t *opts);
/* recvcounts and displs are looked at on the root only (*total = 0 elsewhere). */
cc_status_t cc__validate_gatherv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                 size_t sendcount, const size_t *recvcounts, const size_t *displs,
                                 cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                 size_t *total);
cc_status_t cc__validate_scatter(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                 size_t recvcount, cc_dtype_t dtype, int root,
                                 const cc_op_opts_t *opts);
/* sendcounts and displs are looked at on the root only (*total = 0 elsewhere). */
cc_status_t cc__validate_scatterv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                  const size_t *sendcounts, const size_t *displs, size_t recvcount,
                                  cc_dtype_t dtype, int root, const cc_op_opts_t *opts,
                                  size_t *total);
cc_status_t cc__validate_alltoall(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                  size_t count, cc_dtype_t dtype, const cc_op_opts_t *opts);
/* In place (sendbuf == recvbuf): the send arrays are the receive arrays (MPI_IN_PLACE). */
cc_status_t cc__validate_alltoallv(cc_comm_t *comm, const void *sendbuf, const void *recvbuf,
                                   const size_t *sendcounts, const size_t *sdispls,
                                   const size_t *recvcounts, const size_t *rdispls,
                                   cc_dtype_t dtype, const cc_op_opts_t *opts, size_t *stotal,
                                   size_t *rtotal);

/* A coalesced call (coll_api_coalesced.c): `kind` is the plain collective it runs per buffer. */
typedef struct cc__coalesced_call {
    cc_comm_t *comm;
    cc_op_type_t kind;
    const void *const *sendbufs;
    void *const *recvbufs;
    const size_t *counts;
    int nbufs;
    cc_dtype_t dtype;
    cc_redop_t redop; /* CC_REDOP_COUNT: none */
    int root;         /* broadcast's, else -1 */
    const char *fn;
} cc__coalesced_call_t;

/* Each buffer by the plain collective's rules; *in, *out = the elements in and out. */
cc_status_t cc__validate_coalesced(const cc__coalesced_call_t *c, const cc_op_opts_t *opts,
                                   size_t *in, size_t *out);

/* Byte collectives (coll_api_bytes.c). out receives the result; *total: scatter's lens' sum. */
cc_status_t cc__validate_allgather_bytes(cc_comm_t *comm, const void *buf, size_t len,
                                         const cc_op_opts_t *opts, cc_bytes_t **out);
cc_status_t cc__validate_broadcast_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                                         const cc_op_opts_t *opts, cc_bytes_t **out);
cc_status_t cc__validate_gather_bytes(cc_comm_t *comm, const void *buf, size_t len, int root,
                                      const cc_op_opts_t *opts, cc_bytes_t **out);
cc_status_t cc__validate_scatter_bytes(cc_comm_t *comm, const void *const *bufs, const size_t *lens,
                                       int root, const cc_op_opts_t *opts, cc_bytes_t **out,
                                       size_t *total);
cc_status_t cc__validate_send_bytes(cc_comm_t *comm, const void *buf, size_t len, int peer,
                                    const cc_op_opts_t *opts);
cc_status_t cc__validate_recv_bytes(cc_comm_t *comm, int peer, const cc_op_opts_t *opts,
                                    cc_bytes_t **out);

/* Windows: create's arguments; an op's window (live), peer (another rank), buffer and
 * target range (offset + bytes within what peer registered); destroy's window. */
struct cc_window;
cc_status_t cc__validate_window_create(cc_comm_t *comm, const void *base, size_t bytes,
                                       const cc_window_config_t *cfg, cc_window_t **win);
cc_status_t cc__validate_window_op(const struct cc_window *win, const void *buf, size_t bytes,
                                   int peer, size_t offset, const cc_op_opts_t *opts,
                                   const char *fn);
cc_status_t cc__validate_window_destroy(const struct cc_window *win);

#endif /* CC_CORE_DOOR_VALIDATE_H */
