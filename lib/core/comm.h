/*
 * comm.h - the communicator object (internal).
 *
 * Invariants: magic == CC__COMM_MAGIC while the handle is valid; rank, size,
 * id and world_ranks never change after init; coll_seq and the per-peer
 * p2p counters are touched only by the thread issuing ops (ops on a comm
 * are per-communicator serial); error goes from CC_OK to one error, once.
 */
#ifndef CC_CORE_COMM_H
#define CC_CORE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bootstrap/store.h"
#include "ccomm/ccomm.h"
#include "chain.h"
#include "engine.h"

#define CC__COMM_MAGIC 0x63636f6d6d5f4f4bull /* "ccomm_OK" */
#define CC__COMM_DEAD 0x63636f6d6d5f5858ull  /* "ccomm_XX": destroyed */

/* What ranks of one job share: the store and the job's identity. */
typedef struct cc__world {
    _Atomic int refs;              /* communicators using it */
    char job_id[128];
    int world_size;
    int world_rank;
    cc__store_t *store;            /* root connection */
    cc__store_server_t *server;    /* set when this process hosts the store */
    char store_addr[256];
    char job_key[80];              /* the key every store connection proves (secret) */
} cc__world_t;

struct cc_comm {
    uint64_t magic;
    uint64_t id;                   /* equal on every member */
    uint64_t parent_id;            /* 0 for a world communicator */
    char name[64];
    int rank;
    int size;
    int *world_ranks;              /* size entries: comm rank -> world rank */
    int device;
    int64_t timeout_ms;
    char transport_req[8];         /* "auto" or "tcp" */
    cc__world_t *world;
    cc__store_t *store;            /* a view "c/<id>/" of world->store */
    uint64_t children;             /* splits and groups made from this comm */

    uint64_t coll_seq;             /* last collective number handed out */
    uint64_t *send_seq;            /* per peer: last send number */
    uint64_t *recv_seq;            /* per peer: last receive number */

    _Atomic int error;             /* cc_status_t that broke the comm; CC_OK while healthy */
    _Atomic int abort_ran;         /* the abort chain ran (once) */
    char fail_why[224];            /* the abort message when it names the rank waited for */
    cc__chain_set_t hooks;         /* this comm's own hooks */

    const cc_engine_v1_t *engine;
    void *engine_state;
    void *engine_arg;              /* for the engine's comm_create: split hook result, external arg */

    struct cc_comm *reg_next;      /* registry of live comms (watchdog, dumps, signals) */
    _Atomic int pins;              /* the watchdog holds the comm; destroy waits for 0 */

    /* Progress, for the watchdog's stall check (relaxed counters, no lock). */
    _Atomic uint64_t ops_issued;   /* ops handed to the engine */
    _Atomic uint64_t ops_done;     /* ops finished */
    _Atomic uint64_t last_progress_ns; /* last issue or finish */
};

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

/* Door entry for lifecycle events (init, split, destroy, abort). */
cc_status_t cc__door_lifecycle(cc_comm_t *comm, cc_op_type_t type, uint64_t parent_id,
                               cc_status_t (*action)(cc_comm_t *comm, void *arg), void *arg);

#endif /* CC_CORE_COMM_H */
