/*
 * window.h - an RMA window as the core and every engine see it (the public
 * API is ccomm/window.h, its door lib/core/window_api.c).
 *
 * The core allocates the handle, the engine's win_create (engine.h, table
 * v3) fills it, the door reads magic, comm, rank and sizes to check every
 * op before it reaches the engine, and after the engine's win_destroy the
 * core keeps the handle as a tombstone (magic CC__WIN_DEAD), so that a
 * later call on it reads a tombstone, never freed memory.
 *
 * The members the core does not set are the engines': the native engine's
 * (pids, bases, the signal segment, the TCP side; lib/native/window.h) and
 * `eng`, the private window of an engine in a plugin (the CUDA plugin's
 * IPC mappings, lib/cuda/cuda_window.c).
 */
#ifndef CC_ENGINE_WINDOW_H
#define CC_ENGINE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"

#define CC__WIN_LIVE 0x6c6977636363ull /* "cccwil" */
#define CC__WIN_DEAD 0x646577636363ull /* "cccwed": destroyed, a tombstone */

struct cc__native;
struct cc__wtcp;

struct cc_window {
    uint64_t magic;        /* CC__WIN_LIVE, or CC__WIN_DEAD after destroy (core) */
    struct cc_comm *comm;  /* (core) */
    struct cc__native *nc; /* native engine: its state */
    int rank, n;           /* this rank and the comm's size (core) */
    unsigned id;           /* per-communicator window number, same on every rank (engine) */
    int *pids;             /* native: by rank */
    uint64_t *bases;       /* native: registered addresses in each rank's address space */
    uint64_t *sizes;       /* registered bytes by rank (engine; the door's bound) */
    void *seg;             /* native: the signal segment, or NULL for a one-rank comm */
    size_t seg_len;
    size_t block;           /* native: bytes from one target's counters to the next */
    struct cc_window *next; /* the tombstone list (core) */
    struct cc__wtcp *tcp;   /* native: a TCP-class comm's connections and progress thread
                               (native/window_tcp.h), or NULL on shared memory */
    void *eng;              /* a plugin engine's own window, or NULL */
};

#endif /* CC_ENGINE_WINDOW_H */
