/*
 * ccomm/comm.h - communicators: create, split, destroy, abort.
 *
 * A communicator is a group of ranks that run collectives together. The
 * first one comes from the launcher's environment (cc_comm_init_from_env) or
 * from explicit arguments (cc_comm_init); more come from cc_comm_split and
 * cc_comm_create_group, and, after a failure, from cc_comm_shrink.
 * Creation, split, create_group, shrink and destroy are collective: every
 * member calls them, in the same order.
 *
 * Thread safety: calls on one communicator are per-communicator serial (one
 * thread at a time, ops issued in the same order on every rank), except
 * cc_comm_abort and the getters, which any thread may call at any time.
 */
#ifndef CCOMM_COMM_H
#define CCOMM_COMM_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * cc_comm_init_from_env - join the job described by the launcher's
 * environment: ccrun (CCOMM_RANK, CCOMM_SIZE, CCOMM_STORE_ADDR), torchrun
 * (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; rank 0 hosts the store),
 * Slurm (SLURM_PROCID, SLURM_NTASKS) or Open MPI / PMI (OMPI_COMM_WORLD_RANK,
 * PMI_RANK, ...). See docs/env.md.
 *   comm   out: the new communicator (new; free with cc_comm_destroy)
 *   config options, may be NULL (borrowed for the call)
 * Returns CC_OK; CC_ERR_INVALID_ARG (comm NULL, no launcher found, bad
 * config); CC_ERR_CONNECT or CC_ERR_TIMEOUT (store unreachable; the log names
 * the address); CC_ERR_AUTH (job key refused); CC_ERR_MISMATCH (ranks
 * disagree on the world size); CC_ERR_BUSY (store port in use).
 */
CC_API cc_status_t cc_comm_init_from_env(cc_comm_t **comm, const cc_comm_config_t *config);

/*
 * cc_comm_init - join a job of `size` ranks as `rank`, meeting at the store
 * `store_addr` ("host:port"). If no store listens there and rank is 0, rank 0
 * starts one at that address (torchrun style).
 * Returns as cc_comm_init_from_env.
 */
CC_API cc_status_t cc_comm_init(cc_comm_t **comm, int rank, int size, const char *store_addr,
                                const cc_comm_config_t *config);

/* cc_comm_split color for ranks that want no child communicator. */
#define CC_SPLIT_NOCOLOR (-1)

/*
 * cc_comm_split - collective over `parent`: ranks that pass the same color
 * form a child, ordered by key then by parent rank. A rank that passes
 * CC_SPLIT_NOCOLOR takes part but gets *child = NULL.
 *   child  out: the new communicator (new), or NULL for CC_SPLIT_NOCOLOR
 * Returns CC_OK; CC_ERR_INVALID_ARG (color < -1, parent invalid);
 * communicator errors of the parent.
 */
CC_API cc_status_t cc_comm_split(cc_comm_t *parent, int color, int key,
                                 const cc_comm_config_t *config, cc_comm_t **child);

/*
 * cc_comm_create_group - collective over the members listed in `ranks`
 * (parent ranks, no duplicates, in the order that gives the child ranks).
 * Only the listed ranks call it. *child is the new communicator (new).
 * Returns CC_OK; CC_ERR_INVALID_ARG (a rank out of range or repeated, the
 * caller not listed); communicator errors of the parent.
 */
CC_API cc_status_t cc_comm_create_group(cc_comm_t *parent, const int *ranks, int nranks,
                                        const cc_comm_config_t *config, cc_comm_t **child);

/*
 * cc_comm_shrink - make a communicator of the parent's survivors, to go on
 * after a rank failed (NCCL's ncclCommShrink, MPI ULFM's MPI_Comm_shrink).
 * Works on a broken parent (after CC_ERR_PEER_LOST, CC_ERR_TIMEOUT or an
 * abort) as on a healthy one. The child's ranks keep the survivors' order;
 * its name is "<parent name>.shrink<k>" for the parent's k-th shrink unless
 * config->name says otherwise; the flight recorder lists the parent as its
 * parent_id.
 *   comm     the parent (borrowed; it stays to be destroyed by the caller)
 *   exclude  parent ranks to leave out, or NULL with nexclude 0: "the ranks
 *            that are lost", agreed among the survivors through the store so
 *            that every survivor gets the same child (docs/api.md, "Shrink").
 *            With a list, every rank not listed calls, with the same list
 *            (checked: CC_ERR_MISMATCH names a rank whose list differs);
 *            listed ranks do not call. Borrowed for the call.
 *   nexclude entries in exclude, 0 .. size-1
 *   config   options of the child (borrowed), or NULL: the parent's timeout,
 *            device and transport. Its timeout_ms, else the parent's, bounds
 *            the agreement: a rank that has not come by then is counted lost.
 *   child    out: the new communicator (new; free with cc_comm_destroy);
 *            set only on success
 * No rank that is gone is waited for: a rank's store connection closes with
 * its process, and the store tells the survivors at once.
 * Returns CC_OK; CC_ERR_INVALID_ARG (comm or child invalid, nexclude < 0 or
 * >= size, exclude NULL with nexclude > 0, a rank out of range, listed
 * twice, or the caller itself; nothing is created); CC_ERR_MISMATCH (the
 * survivors' lists differ); CC_ERR_PEER_LOST (this rank came after the
 * survivors had agreed, and was counted lost; or the store is gone);
 * CC_ERR_TIMEOUT (a survivor did not come in time to an explicit shrink, or
 * the child's setup timed out). Per-communicator serial, like split.
 */
CC_API cc_status_t cc_comm_shrink(cc_comm_t *comm, const int *exclude, int nexclude,
                                  const cc_comm_config_t *config, cc_comm_t **child);

/*
 * cc_comm_destroy - wait for the communicator's pending ops, then free it
 * and every work handle it still owns. After the call `comm` is invalid; a
 * later call with it returns CC_ERR_INVALID_ARG (the magic check).
 * Returns CC_OK, or the first error of the pending ops (the comm is freed
 * all the same).
 */
CC_API cc_status_t cc_comm_destroy(cc_comm_t *comm);

/*
 * cc_comm_abort - stop the communicator now: run its abort hooks, fail every
 * pending op with CC_ERR_ABORTED, close its connections. Any thread, any time;
 * the comm must still be destroyed with cc_comm_destroy. Idempotent.
 */
CC_API cc_status_t cc_comm_abort(cc_comm_t *comm);

/*
 * cc_comm_get_error - CC_OK while the communicator works, else the error that
 * broke it (CC_ERR_TIMEOUT, CC_ERR_PEER_LOST, CC_ERR_ABORTED, ...). Any thread.
 */
CC_API cc_status_t cc_comm_get_error(const cc_comm_t *comm);

/* Getters: -1 / 0 / NULL for an invalid comm. Any thread. */
CC_API int cc_comm_rank(const cc_comm_t *comm);
CC_API int cc_comm_size(const cc_comm_t *comm);
CC_API uint64_t cc_comm_id(const cc_comm_t *comm);
CC_API const char *cc_comm_name(const cc_comm_t *comm); /* borrowed until destroy */
CC_API int cc_comm_device(const cc_comm_t *comm);       /* CC_DEVICE_CPU or a CUDA ordinal */
/* The rank of this comm's `rank` in the world communicator it descends from; -1 if invalid. */
CC_API int cc_comm_world_rank(const cc_comm_t *comm, int rank);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_COMM_H */
