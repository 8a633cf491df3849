/*
 * comm.h - the communicator as engines see it (internal).
 *
 * The door (lib/core) owns communicators; engines (lib/native, the plugins)
 * read the identity fields below and keep their own state in engine_state.
 * Invariants: magic == CC__COMM_MAGIC while the handle is valid; rank, size,
 * id and world_ranks never change after init; coll_seq and the per-peer
 * p2p counters are touched only by the thread issuing ops (ops on a comm
 * are per-communicator serial); error goes from CC_OK to one error, once.
 */
#ifndef CC_ENGINE_COMM_H
#define CC_ENGINE_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bootstrap/store.h"
#include "ccomm/ccomm.h"
#include "engine/engine.h"
#include "hooks/chain.h"

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
    char prefix[32];               /* this world's store keys ("world<g>/", "attach/") */
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
    uint64_t shrinks;              /* shrink rounds this rank took part in (shrink.c) */

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

#endif /* CC_ENGINE_COMM_H */
