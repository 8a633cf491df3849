/*
 * comm.h - communicator lifecycle, the registry and the world (internal).
 *
 * The struct itself is in engine/comm.h, where engines read it.
 */
#ifndef CC_CORE_COMM_H
#define CC_CORE_COMM_H

#include <stddef.h>

#include "engine/comm.h"

/* The store key (on world->store) that the store sets when world rank `r`'s connection closes:
 * "<prefix>lost/<r>" (the will each rank leaves at join; shrink reads it). */
void cc__world_lost_key(const cc__world_t *world, int r, char *buf, size_t buflen);

/* 1 if comm is a live handle (checks the magic; NULL is not). */
int cc__comm_valid(const cc_comm_t *comm);

/*
 * The comm can no longer make progress: record `status` as its error (the
 * first one wins), run the ABORT chain once, and abort the engine. `op` may
 * be NULL. Any thread.
 */
void cc__comm_fail(cc_comm_t *comm, cc_status_t status, const cc__op_t *op, const char *why);

/*
 * Check a config passed to init, split or create_group (NULL is fine): struct_size,
 * timeout_ms >= 0, device, engine and transport names. Logs `fn` and the value. Runs before
 * anything is exchanged or loaded.
 */
cc_status_t cc__comm_config_check(const cc_comm_config_t *config, const char *fn);

/* Create a communicator once its identity is known (init, split, group):
 * engine, COMM_INIT through the door. Takes ownership of world_ranks. */
cc_status_t cc__comm_create(cc__world_t *world, uint64_t id, uint64_t parent_id, const char *name,
                            int rank, int size, int *world_ranks,
                            const cc_comm_config_t *config, const cc_comm_t *parent,
                            cc_comm_t **out);

/* The same with a preset engine and its argument (NULL, NULL: chosen from the config, as
 * above). The plugin services use it for communicators that bring their own engine. */
cc_status_t cc__comm_create_ex(cc__world_t *world, uint64_t id, uint64_t parent_id,
                               const char *name, int rank, int size, int *world_ranks,
                               const cc_comm_config_t *config, const cc_engine_v1_t *engine,
                               void *engine_arg, cc_comm_t **out);

/* CCOMM_TIMEOUT in milliseconds, INT64_MAX (no deadline) when that does not fit; -1 when
 * negative. */
int64_t cc__env_timeout_ms(void);

/* Hash used for communicator ids (FNV-1a 64, never 0). */
uint64_t cc__hash64(const void *data, size_t len, uint64_t seed);

/* Shells of destroyed comms kept for the magic check (see comm.c): how many now, and the
 * most that are kept (the oldest is freed then). */
size_t cc__comm_shells(void);
#define CC__COMM_SHELLS_MAX 256

/* Registry of live comms, for the watchdog and the dump path. */
void cc__registry_add(cc_comm_t *comm);
void cc__registry_remove(cc_comm_t *comm);
/* Pin up to max live comms (they stay valid until unpinned); returns how many. */
int cc__registry_pin(cc_comm_t **out, int max);
void cc__registry_unpin(cc_comm_t *comm);
/* Async-signal-safe walk for the fatal-signal path (no lock; best effort). */
cc_comm_t *cc__registry_first_unlocked(void);

/* The world: connect to (or host) the store, agree on the job id. */
cc_status_t cc__world_join(int rank, int size, const char *store_addr, int may_host,
                           cc__world_t **out);
void cc__world_release(cc__world_t *world);
/*
 * Join without a collective step (the NCCL interposer: only some ranks may
 * ever create a communicator): connect to (or host) the store and take the
 * job id CCOMM_JOB_ID, or the one the first arrival wrote. No size or rank
 * checks (those need every rank).
 */
cc_status_t cc__world_attach(int rank, int size, const char *store_addr, int may_host,
                             cc__world_t **out);
/*
 * The launcher's description of this process (ccrun, torchrun, Open MPI,
 * PMI, Slurm; the innermost when several are present): rank, size, store
 * address, whether this very rank hosts the store, and the launcher's name.
 * CC_ERR_NOT_FOUND when none is found; CC_ERR_MISMATCH when two MPI runtimes
 * disagree; CC_ERR_INVALID_ARG when the store cannot be found (logged).
 * launcher.c.
 */
cc_status_t cc__launcher_find(int *rank, int *size, char *addr, size_t addrlen, int *hosts,
                              const char **who);


#endif /* CC_CORE_COMM_H */
