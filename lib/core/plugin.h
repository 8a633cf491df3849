/*
 * plugin.h - the core's side of its plugins: the table of core services a
 * plugin receives, and the table a plugin hands back.
 *
 * A plugin is a shared object built from this tree that never links
 * libccomm: libccomm-cuda.so is dlopen'ed by the core (CCOMM_CUDA_PLUGIN)
 * when a communicator's device is a CUDA device, and reaches the core only
 * through the cc_core_t it is given. (Linking libccomm would load a
 * second copy of the core into programs that link the static library.)
 * libccomm-nccl.so, the NCCL interposer, does link libccomm.so (it must
 * share the core with the program's own ccomm calls) and fetches the same
 * table with cc_plugin_core_get().
 *
 * This is not a stable ABI, and does not pretend to be one: plugins are
 * built with the core, from the same tree. They read the core's internal
 * structs (cc__op_t, struct cc__config, the comm) directly, so each side
 * carries the build id of its headers and compiler (CC_BUILD_ID, written
 * by cmake/build_id.cmake) and refuses the other's if it differs, naming
 * both ids. A plugin for another build is rebuilt, never adapted.
 */
#ifndef CC_CORE_PLUGIN_H
#define CC_CORE_PLUGIN_H

#include <stdarg.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "engine/engine.h"
#include "engine/op.h"

/* The one export of libccomm not declared in include/ccomm: the NCCL
 * interposer links libccomm.so and fetches the core's table through it
 * (tests/unit/abi/test_exports.py knows it by this mark). */
#define CC_PLUGIN_API CC_API

struct cc__config;
struct cc__world;

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

typedef struct cc_core {
    /* First, in every build to come: it is read before anything else is trusted. */
    const char *build_id; /* CC_BUILD_ID of the core's build */

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
    void (*log_verror)(uint32_t subsys, const char *fmt, va_list ap); /* cc_log_error */
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
     * op's PRE; no lock, any thread. */
    uint64_t (*recorder_id)(const cc__op_t *op);
    /* Register the function that delivers GPU times still in a profiler's buffers; the
     * recorder calls it before a dump asked for with cc_recorder_dump (recorder.h). */
    void (*recorder_gpu_flush)(void (*fn)(void));
} cc_core_t;

/* What a dlopen'ed plugin hands back, from its entry point CC_PLUGIN_INIT. */
#define CC_PLUGIN_INIT "cc_plugin_init"

typedef struct cc_plugin {
    const char *build_id; /* CC_BUILD_ID of the plugin's build; first, as in cc_core_t */
    const char *name;     /* "cuda" */
    /*
     * The engine for a communicator asking for `want` ("auto", "nccl",
     * "native") on CUDA device `device`. CC_ERR_NOT_SUPPORTED (logged with
     * the cause) when this machine cannot give it.
     */
    cc_status_t (*engine)(const char *want, int device, const cc_engine_v1_t **out);
} cc_plugin_t;

/* NULL when the plugin refuses the core (it said why on stderr). */
typedef const cc_plugin_t *(*cc_plugin_init_fn)(const cc_core_t *core);

/* The core's services, for plugins that link libccomm (the NCCL interposer),
 * which check its build_id as the dlopen'ed plugin does. Any thread. */
CC_PLUGIN_API const cc_core_t *cc_plugin_core_get(void);

/* Core internal: the engine of a device communicator, from the CUDA plugin
 * (loaded on first use). CC_ERR_NOT_SUPPORTED, logged, when it cannot load. */
cc_status_t cc__plugin_engine(const char *want, int device, const cc_engine_v1_t **out);

#endif /* CC_CORE_PLUGIN_H */
