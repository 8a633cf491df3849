/*
 * ccomm/comm.h - communicators: create, split, destroy, abort.
 *
 * A communicator is a group of ranks that run collectives together. The
 * first one comes from the launcher's environment (cc_comm_init_from_env) or
 * from explicit arguments (cc_comm_init); more come from cc_comm_split and
 * cc_comm_create_group. Creation, split, create_group and destroy are
 * collective: every member calls them, in the same order.
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
