/*
 * engine.h - the versioned table an engine implements.
 *
 * The op door hands every validated, numbered op to its communicator's
 * engine and does not know which engine runs it. The native engine
 * (lib/native) is built in; the CUDA/NCCL engine is a plugin
 * (libccomm-cuda.so) that returns a cc_engine_v1_t. The version says
 * which optional entries a table has (v2 adds split, v3 windows), not an ABI: engines
 * in plugins are built with the core and read its structs (core/plugin.h:
 * the build id check).
 *
 * Contract of submit(state, op):
 *  - op->work == NULL (blocking): run the op to completion on the calling
 *    thread (or wait for it), calling cc__op_started() once it moves data
 *    and cc__op_finished() exactly once; return the op's final status.
 *  - op->work != NULL (async): queue the op and return CC_OK at once (or an
 *    error, then without calling cc__op_finished: the door finishes it).
 *    Later, from any thread, call cc__op_started() and cc__op_finished().
 *  Ops of one communicator run in submission order. Every wait honours
 *  op->deadline_ns and the abort: a stuck peer ends in CC_ERR_TIMEOUT, an
 *  abort in its reason, never in a hang.
 */
#ifndef CC_ENGINE_ENGINE_H
#define CC_ENGINE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/types.h"
#include "engine/op.h"

struct cc_comm;

#define CC_ENGINE_VERSION_1 1u

typedef struct cc_engine_v1 {
    uint32_t version; /* CC_ENGINE_VERSION_1 */
    const char *name; /* "native", "nccl" */
    /* Create the engine's state for a new communicator whose rank, size, id,
     * world ranks and store are set. Collective over the comm's ranks. */
    cc_status_t (*comm_create)(struct cc_comm *comm, void **state);
    /* Run or queue an op (see above). */
    cc_status_t (*submit)(void *state, cc__op_t *op);
    /* Wait until every queued op finished (destroy); honours the deadline. */
    cc_status_t (*drain)(void *state, uint64_t deadline_ns);
    /* Stop now: fail queued and running ops with `reason`, tell the peers,
     * wake waiters. Any thread; async; idempotent. */
    void (*comm_abort)(void *state, cc_status_t reason);
    /* Free the state (after drain or abort). */
    void (*comm_destroy)(void *state);
    /* The transport in use ("shm", "tcp", "mixed", "nvlink", ...), static. */
    const char *(*transport)(void *state);
} cc_engine_v1_t;

/*
 * Version 2: version 1 (the same first members, so the core reads either
 * through a cc_engine_v1_t pointer) plus a split hook, for engines whose
 * backend splits communicators itself (NCCL's ncclCommSplit).
 *
 * split(parent_state, color, key, &child_arg) runs on every rank of the
 * parent during cc_comm_split, CC_SPLIT_NOCOLOR ranks included (ncclCommSplit
 * is collective over the parent), after the ranks agreed on colors and
 * keys. *child_arg (NULL for a NOCOLOR rank) reaches the child's
 * comm_create as the comm's engine_arg. The core calls it only when the
 * child gets the same engine as the parent.
 */
#define CC_ENGINE_VERSION_2 2u

typedef struct cc_engine_v2 {
    cc_engine_v1_t v1; /* .version = CC_ENGINE_VERSION_2 */
    cc_status_t (*split)(void *parent_state, int color, int key, void **child_arg);
} cc_engine_v2_t;

/*
 * Version 3: version 2 plus windows (ccomm/window.h), for engines that
 * have them. The core reads them only from a table whose version is 3 or
 * more and whose win_create is set; any other engine's communicators get
 * CC_ERR_NOT_SUPPORTED from cc_window_create, naming the engine.
 *
 * win_create(state, win, base, bytes, deadline) is collective over the
 * comm's ranks, after the core drained the comm's queued ops. The core
 * allocated *win zeroed with comm, rank and n set; the engine sets id and
 * sizes (every rank's registered bytes, by rank: the door checks each op's
 * range against it) and its own members, and on error frees what it set
 * (the core frees the handle). The ops (CC_OP_WIN_PUT, _GET, _SIGNAL,
 * _WAIT_SIGNAL, _FLUSH) then reach submit like any op, with op->extra the
 * window, info.peer the peer, info.bytes the length, info.out_count the
 * target offset and info.in_count wait's count; the door has checked the
 * peer and the range. win_destroy(state, win, deadline) is collective
 * too (a barrier: nobody writes into this rank's region afterwards); it
 * frees what win_create set, whatever it returns, and the core then makes
 * the handle a tombstone.
 */
#define CC_ENGINE_VERSION_3 3u

struct cc_window;

typedef struct cc_engine_v3 {
    cc_engine_v2_t v2; /* .v1.version = CC_ENGINE_VERSION_3; v2.split may be NULL */
    cc_status_t (*win_create)(void *state, struct cc_window *win, void *base, size_t bytes,
                              uint64_t deadline_ns);
    cc_status_t (*win_destroy)(void *state, struct cc_window *win, uint64_t deadline_ns);
} cc_engine_v3_t;

/* The v3 table of an engine with windows, or NULL (an older table, or no win_create). */
static inline const cc_engine_v3_t *cc__engine_windows(const cc_engine_v1_t *e)
{
    if (!e || e->version < CC_ENGINE_VERSION_3) return NULL;
    const cc_engine_v3_t *e3 = (const cc_engine_v3_t *)(const void *)e;
    return e3->win_create && e3->win_destroy ? e3 : NULL;
}

/* The built-in engine (a v3 table; cc__native_engine is its first member). */
extern const cc_engine_v3_t cc__native_engine3;
#define cc__native_engine (cc__native_engine3.v2.v1)

/* Whether the native engine would run a blocking op submitted now on the calling thread
 * (nothing queued on the comm): the door asks before PRE (CC_OP_INFO_STARTS_AT_ONCE). Calls
 * on a comm are serial, so the answer holds until the op's submit. */
int cc__native_runs_now(void *state);

#endif /* CC_ENGINE_ENGINE_H */
