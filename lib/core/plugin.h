/*
 * plugin.h - the core's side of its plugins: the versioned table of core
 * services a plugin receives, and the table a plugin hands back.
 *
 * A plugin is a shared object built from this tree that never links
 * libccomm: libccomm-cuda.so is dlopen'ed by the core (CCOMM_CUDA_PLUGIN)
 * when a communicator's device is a CUDA device, and reaches the core only
 * through the cc_core_v1_t it is given. (Linking libccomm would load a
 * second copy of the core into programs that link the static library.)
 * libccomm-nccl.so, the NCCL interposer, does link libccomm.so (it must
 * share the core with the program's own ccomm calls) and fetches the same
 * table with cc_plugin_core_get().
 *
 * The tables are versioned like the engine table: a published version never
 * changes; new needs get a v2. A plugin refuses a core whose op_size or
 * config_size differs from the ones it was built with: it reads cc__op_t
 * and struct cc__config directly.
 */
#ifndef CC_CORE_PLUGIN_H
#define CC_CORE_PLUGIN_H

#include <stdarg.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "engine/engine.h"
#include "engine/op.h"

struct cc__config;
struct cc__world;

#define CC_CORE_VERSION_1 1u

/* What a plugin may know of a communicator (filled by comm_info). */
typedef struct cc_plugin_comm {
    uint64_t id;        /* equal on all members */
    uint64_t parent_id; /* 0 for a world or external comm */
    const char *name;   /* borrowed until the comm is destroyed */
    int rank, size;
    int device;             /* CUDA ordinal, or CC_DEVICE_CPU */
    int64_t timeout_ms;     /* default deadline of its ops */
    const int *world_ranks; /* size entries (-1 = unknown); borrowed */
    int world_rank;         /* this process's rank in its world */
    const char *job_id;     /* borrowed */
    void *engine_arg;       /* from the split hook or comm_create_external; NULL otherwise */
} cc_plugin_comm_t;

typedef struct cc_core_v1 {
    uint32_t version;     /* CC_CORE_VERSION_1 */
    uint32_t op_size;     /* sizeof(cc__op_t) of the core */
    uint32_t config_size; /* sizeof(struct cc__config) of the core */
    uint32_t reserved;

    /* Op transitions (see op.h); t_ns 0 = now. */
    void (*op_started)(cc__op_t *op, uint64_t t_ns);
    void (*op_finished)(cc__op_t *op, cc_status_t status, uint64_t t_ns);
    /* The door (see door.h), for the interposer's ops. */
    void (*op_prepare)(cc__op_t *op, cc_comm_t *comm, cc_op_type_t type);
    cc_status_t (*door_issue)(cc__op_t *tmpl, const cc_op_opts_t *opts, cc_work_t **work);

    /* Communicators. */
    void (*comm_info)(const cc_comm_t *comm, cc_plugin_comm_t *out);
    /* Fail the comm (first error wins; runs the ABORT chain once, aborts its engine). */
    void (*comm_fail)(cc_comm_t *comm, cc_status_t status, const char *why);
    /*
     * Join the job of the launcher's environment without a collective step
     * (ranks may arrive in any order, or some never): connect to the store
     * (rank 0 hosts it under torchrun), agree on the job id by first
     * arrival, start the process services. No launcher: a private store, a
     * world of one. *out is a reference (world_release).
     */
    cc_status_t (*world_attach)(struct cc__world **out);
    void (*world_release)(struct cc__world *world);
    /* World rank and size of a world. */
    void (*world_info)(const struct cc__world *world, int *rank, int *size);
    /*
     * Create a communicator that runs on `engine` (a plugin's table) with
     * `engine_arg` for its comm_create. Not collective by itself: the engine
     * decides. Takes ownership of world_ranks (malloc'ed, size entries).
     */
    cc_status_t (*comm_create_external)(struct cc__world *world, uint64_t id, uint64_t parent_id,
                                        const char *name, int rank, int size, int *world_ranks,
                                        int device, int64_t timeout_ms,
                                        const cc_engine_v1_t *engine, void *engine_arg,
                                        cc_comm_t **out);

    /* Store: the comm's own key space (world store when comm is NULL and world is given). */
    cc_status_t (*store_set)(cc_comm_t *comm, struct cc__world *world, const char *key,
                             const void *val, size_t len);
    cc_status_t (*store_get)(cc_comm_t *comm, struct cc__world *world, const char *key, void **val,
                             size_t *len, int64_t timeout_ms);
    cc_status_t (*store_allgather)(cc_comm_t *comm, const char *name, const void *mine, void *all,
                                   size_t len, int64_t timeout_ms);

    /* Logging and configuration. */
    int (*log_level)(void);
    uint32_t (*log_mask)(void);
    void (*log_vwrite)(int level, uint32_t subsys, const char *fmt, va_list ap);
    void (*log_count_error)(void);
    void (*log_set_comm)(const char *name);
    const struct cc__config *(*cfg)(void);

    /*
     * Flight recorder: the true GPU times of an op's kernels and what ran
     * them ("RING/LL128", "cupti"), once known; lands in the op's entry if
     * it still holds record `rec_id` (from recorder_id). Any thread.
     */
    void (*recorder_gpu)(uint64_t rec_id, uint64_t t_start_ns, uint64_t t_end_ns,
                         const char *detail);
    /* The op's record id (the recorder's token for it), 0 when not recorded. After the
     * op's PRE; no lock, any thread. (Appended: plugins are built with the core, and
     * refuse another op_size.) */
    uint64_t (*recorder_id)(const cc__op_t *op);
} cc_core_v1_t;

/* What a dlopen'ed plugin hands back. */
#define CC_PLUGIN_VERSION_1 1u
#define CC_PLUGIN_INIT_V1   "cc_plugin_init_v1"

typedef struct cc_plugin_v1 {
    uint32_t version; /* CC_PLUGIN_VERSION_1 */
    const char *name; /* "cuda" */
    /*
     * The engine for a communicator asking for `want` ("auto", "nccl",
     * "native") on CUDA device `device`. CC_ERR_NOT_SUPPORTED (logged with
     * the cause) when this machine cannot give it.
     */
    cc_status_t (*engine)(const char *want, int device, const cc_engine_v1_t **out);
} cc_plugin_v1_t;

typedef const cc_plugin_v1_t *(*cc_plugin_init_v1_fn)(const cc_core_v1_t *core);

/* The core's services, for plugins that link libccomm (the NCCL interposer).
 * NULL for a version this core does not have. Any thread. */
CC_API const void *cc_plugin_core_get(unsigned version);

/* Core internal: the engine of a device communicator, from the CUDA plugin
 * (loaded on first use). CC_ERR_NOT_SUPPORTED, logged, when it cannot load. */
cc_status_t cc__plugin_engine(const char *want, int device, const cc_engine_v1_t **out);

#endif /* CC_CORE_PLUGIN_H */
