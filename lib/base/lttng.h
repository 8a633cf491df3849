/*
 * lttng.h - the core's side of the LTTng-UST tracepoint provider.
 *
 * libccomm.so never links liblttng-ust. Tracing lives in a plugin,
 * libccomm-lttng.so (tracepoints/), that the core attaches once at world
 * init (cc__lttng_load) when CCOMM_LTTNG=1 or when the plugin was
 * LD_PRELOADed. Attaching hands the plugin the hook calls it subscribes
 * with (most events come from the PRE, START, POST and ABORT chains) and
 * takes back a table for the few places below the door that have no hook:
 * transport messages and the dump path. Those places call the emit macros at
 * the end of this file. (A timeout needs no site: every timed-out op ends
 * in cc__comm_fail, whose ABORT chain the plugin hears.)
 *
 * Cost of an emit site: with no plugin, one load of a pointer and a branch
 * predicted not taken; with the plugin but no session recording the event,
 * one more load (LTTng's own enable word for the event) and a branch.
 * The macros evaluate their arguments only when the event is recorded.
 */
#ifndef CC_BASE_LTTNG_H
#define CC_BASE_LTTNG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ccomm/hooks.h"

/* Direction of a transport message (the xfer_dir enum in the trace). */
enum cc__lttng_dir {
    CC__LTTNG_SEND = 0,
    CC__LTTNG_RECV = 1,
};

/* What the core lends the plugin: the public hook calls. Version 1 never
 * changes; a new need gets a v2 table and a v2 attach symbol. */
typedef struct cc__lttng_core_v1 {
    uint32_t struct_size; /* sizeof(cc__lttng_core_v1_t) */
    cc_status_t (*hook_add_pre)(cc_comm_t *comm, cc_pre_hook_fn fn, void *user, unsigned flags,
                                cc_hook_handle_t *handle);
    cc_status_t (*hook_add_start)(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                                  cc_hook_handle_t *handle);
    cc_status_t (*hook_add_post)(cc_comm_t *comm, cc_op_hook_fn fn, void *user, unsigned flags,
                                 cc_hook_handle_t *handle);
    cc_status_t (*hook_add_abort)(cc_comm_t *comm, cc_abort_hook_fn fn, void *user, unsigned flags,
                                  cc_hook_handle_t *handle);
    cc_status_t (*hook_remove)(cc_hook_handle_t handle);
} cc__lttng_core_v1_t;

/*
 * What the plugin hands back: for each event emitted below the door, a
 * pointer to LTTng's enable word of that event (nonzero while a session
 * records it) and the function that emits it. Static in the plugin, never
 * freed (the plugin is never unloaded).
 */
typedef struct cc__lttng_sites_v1 {
    uint32_t struct_size; /* sizeof(cc__lttng_sites_v1_t) */
    const int *xfer_begin_on;
    const int *xfer_end_on;
    const int *recorder_dump_on;
    void (*xfer_begin)(uint64_t comm_id, int dir, int peer, uint32_t tag, size_t bytes,
                       const char *transport);
    void (*xfer_end)(uint64_t comm_id, int dir, int peer, uint32_t tag, size_t bytes,
                     const char *transport, cc_status_t status);
    void (*recorder_dump)(const char *reason, const char *path, cc_status_t status);
} cc__lttng_sites_v1_t;

/* The plugin's entry points (dlsym names and types). attach subscribes to
 * every communicator's chains and sets *sites; detach removes the hooks. */
#define CC__LTTNG_ATTACH_SYM "cc_lttng_provider_attach_v1"
#define CC__LTTNG_DETACH_SYM "cc_lttng_provider_detach_v1"
typedef cc_status_t (*cc__lttng_attach_fn)(const cc__lttng_core_v1_t *core,
                                           const cc__lttng_sites_v1_t **sites);
typedef void (*cc__lttng_detach_fn)(void);

/* The attached plugin's sites, NULL while tracing is off. */
extern _Atomic(const cc__lttng_sites_v1_t *) cc__lttng_sites;

/*
 * Attach the plugin once per process: the one already in the process
 * (LD_PRELOAD) if any, else with CCOMM_LTTNG=1 load CCOMM_LTTNG_PROVIDER (a
 * bare name is looked for next to libccomm first, then by the dynamic
 * loader's search). When the plugin or liblttng-ust is missing, tracing
 * stays off and a debug line says why. Returns 1 when tracing is attached.
 * Called by the core at world init; later calls return the first answer.
 * Thread safety: any thread (serialised); not from inside a hook.
 */
int cc__lttng_load(void);

/* Tests only: remove the plugin's hooks and clear the sites so that the
 * next cc__lttng_load starts afresh. The plugin stays mapped (LTTng-UST
 * does not support unloading a provider). Not while ops run. */
void cc__lttng_unload(void);

/* One load of the sites pointer; with a plugin, one load of the event's
 * enable word; the call only while a session records the event. */
#define CC__LTTNG_EMIT(ev, ...)                                                                    \
    do {                                                                                           \
        const cc__lttng_sites_v1_t *cc__s =                                                        \
            atomic_load_explicit(&cc__lttng_sites, memory_order_acquire);                          \
        if (__builtin_expect(cc__s != NULL, 0) &&                                                  \
            __builtin_expect(__atomic_load_n(cc__s->ev##_on, __ATOMIC_RELAXED) != 0, 0))           \
            cc__s->ev(__VA_ARGS__);                                                                \
    } while (0)

/*
 * Emit sites below the door. Arguments are evaluated only when recorded.
 *   cc__lttng_xfer_begin(comm_id, dir, peer, tag, bytes, transport)
 *       a message of `bytes` is posted to (CC__LTTNG_SEND) or from
 *       (CC__LTTNG_RECV) `peer` over `transport` ("self", "shm", "tcp":
 *       a static string); lib/transport/wait.c, start_req
 *   cc__lttng_xfer_end(comm_id, dir, peer, tag, bytes, transport, status)
 *       it finished: status CC_OK, or the failure; `bytes` moved;
 *       lib/transport/match.c, cc__req_finish (every request ends there once)
 *   cc__lttng_recorder_dump(reason, path, status)
 *       a flight recorder dump to `path` was written (CC_OK) or failed;
 *       `reason` says why it was asked for, in words
 */
#define cc__lttng_xfer_begin(...)    CC__LTTNG_EMIT(xfer_begin, __VA_ARGS__)
#define cc__lttng_xfer_end(...)      CC__LTTNG_EMIT(xfer_end, __VA_ARGS__)
#define cc__lttng_recorder_dump(...) CC__LTTNG_EMIT(recorder_dump, __VA_ARGS__)

#endif /* CC_BASE_LTTNG_H */
