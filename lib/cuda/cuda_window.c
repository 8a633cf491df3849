/*
 * cuda_window.c - RMA windows (ccomm/window.h) on the native CUDA engine,
 * through CUDA IPC between the ranks (processes) of one node.
 *
 * Creation (collective): each rank publishes, through the communicator's
 * store, the CUDA IPC handle of the cudaMalloc allocation that holds its
 * region (found with cuMemGetAddressRange, fetched from the runtime's
 * driver entry points: libcuda is never linked) and the region's offset in
 * it, plus the handle of a small block of signal words of its own (one
 * 64-bit word per sender). Every rank opens every peer's handles; a second
 * round agrees on the outcome, so that the ranks fail or succeed together.
 *
 * Ops, all enqueued on the op's stream (stream-ordered, as every op of a
 * device communicator: the call returns once they are on the stream):
 *   put          a copy kernel from src into the peer's mapped region
 *   get          a copy kernel from the peer's mapped region into dst
 *   signal       the engine's signal kernel: a system-wide fence, then the
 *                number of signals issued to that peer so far stored into
 *                the peer's word for this rank; stream order puts it after
 *                every earlier put of the same stream, and the fence makes
 *                them visible first, so the target never sees the count
 *                before the data
 *   wait_signal  the engine's wait kernel: polls this rank's word for the
 *                peer (volatile loads, bounded spins with a sleep) until it
 *                reaches the count, giving up at the engine's abort or the
 *                op's deadline (plus the engine's grace) on the GPU clock;
 *                the tracker times the op out at its deadline and fails the
 *                communicator, naming the peer waited for
 *   flush        the host waits (polling, to the op's deadline) until the
 *                stream has done everything enqueued on it before
 * Destroy (collective): wait for this communicator's ops in flight, a
 * barrier through the store, then close the peers' mappings and free the
 * signal words. If ops are still in flight at the deadline the device
 * mappings are left open (logged) rather than freed under a running kernel.
 */
#include <cuda.h> /* CUresult, CUdeviceptr: types only */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "cuda/cuda_native.h"
#include "cuda/cudart.h"
#include "cuda/shim.h"
#include "kernels/kernels_cuda.h"

#define SIG_BYTES 256 /* CC__IPC_MAX_RANKS words, in one 256-byte aligned block */

/* The plugin's part of a window (win->eng). */
struct cwin {
    uint64_t *sig;                         /* this rank's words, sig[from] (cudaMalloc) */
    char *base[CC__IPC_MAX_RANKS];         /* each rank's region as mapped here (NULL: none) */
    void *map[CC__IPC_MAX_RANKS];          /* opened region allocations, to close */
    uint64_t *peer_sig[CC__IPC_MAX_RANKS]; /* each rank's words as mapped here */
    uint64_t sent[CC__IPC_MAX_RANKS];      /* signals issued to each rank (issuing thread) */
};

/* What each rank publishes at creation. */
struct wblob {
    cudaIpcMemHandle_t region; /* the allocation that holds the region (bytes > 0) */
    cudaIpcMemHandle_t sig;
    uint64_t offset; /* region - the allocation's start */
    uint64_t bytes;
    int32_t status; /* CC_OK, or why this rank cannot take part (it logged the cause) */
    int32_t device;
};

typedef CUresult (*range_fn)(CUdeviceptr *base, size_t *size, CUdeviceptr ptr);

int cc__cwin_is_op(cc_op_type_t type)
{
    return type == CC_OP_WIN_PUT || type == CC_OP_WIN_GET || type == CC_OP_WIN_SIGNAL ||
           type == CC_OP_WIN_WAIT_SIGNAL || type == CC_OP_WIN_FLUSH;
}

/* The store's timeout for a round that must end by deadline_ns. */
static int64_t ms_left(uint64_t deadline_ns)
{
    uint64_t now = cc__now_ns();
    if (deadline_ns == UINT64_MAX) return INT64_MAX;
    return deadline_ns > now ? (int64_t)((deadline_ns - now) / 1000000u) + 1 : 1;
}

static cc_status_t round_(cc__cnat_t *x, unsigned id, const char *step, const void *mine, void *all,
                          size_t len, uint64_t deadline_ns)
{
    char name[48];
    snprintf(name, sizeof(name), "cuda_win/%u/%s", id, step);
    return cc__core->store_allgather(x->comm, name, mine, all, len, ms_left(deadline_ns));
}

/* Device memory of this communicator's device, or CC_ERR_INVALID_ARG naming it. */
static cc_status_t device_mem(const cc__cnat_t *x, const void *p, const char *what, const char *fn)
{
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof(a));
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it for the next call */
        a.type = cudaMemoryTypeUnregistered;
    }
    if (a.type == cudaMemoryTypeDevice && a.device == x->device) return CC_OK;
    if (a.type == cudaMemoryTypeDevice)
        cc_log_error(CC_SUBSYS_CUDA,
                     "%s: %s %p is memory of device %d; communicator %s is on "
                     "device %d",
                     fn, what, p, a.device, x->name, x->device);
    else
        cc_log_error(CC_SUBSYS_CUDA,
                     "%s: %s %p is %s memory; a window of device communicator "
                     "%s needs device memory of device %d (cudaMalloc)",
                     fn, what, p,
                     a.type == cudaMemoryTypeManaged ? "managed"
                     : a.type == cudaMemoryTypeHost  ? "pinned host"
                                                     : "host",
                     x->name, x->device);
    return CC_ERR_INVALID_ARG;
}

/* The cudaMalloc allocation that holds [p, p + bytes): its start (IPC handles name it). */
static cc_status_t alloc_start(const cc__cnat_t *x, const char *p, size_t bytes, char **start)
{
    static const char fn[] = "cc_window_create";
    void *sym = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &sym, 12000,
                                                     cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !sym) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "%s: communicator %s: the driver gives no "
                     "cuMemGetAddressRange (%s)",
                     fn, x->name, cudaGetErrorString(e));
        return CC_ERR_NOT_SUPPORTED;
    }
    range_fn range;
    memcpy(&range, &sym, sizeof(range));
    CUdeviceptr b = 0;
    size_t len = 0;
    CUresult r = range(&b, &len, (CUdeviceptr)(uintptr_t)p);
    size_t off = (size_t)((uintptr_t)p - (uintptr_t)b);
    if (r != CUDA_SUCCESS || off > len || bytes > len - off) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "%s: base %p + bytes %zu is not inside one device "
                     "allocation (cuMemGetAddressRange: error %d, %zu bytes from 0x%llx)",
                     fn, (const void *)p, bytes, (int)r, len, (unsigned long long)b);
        return CC_ERR_INVALID_ARG;
    }
    *start = (char *)(uintptr_t)b;
    return CC_OK;
}

static cc_status_t ck(cudaError_t e, const char *what)
{
    return cc__cuda_check((int)e, what);
}

/* Zeroed signal words, done on the device before any peer can write them. */
static cc_status_t make_sig(struct cwin *cw)
{
    cudaStream_t s = NULL;
    CC_CHECK(ck(cudaMalloc((void **)&cw->sig, SIG_BYTES), "cudaMalloc (window signal words)"));
    CC_CHECK(ck(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate"));
    cc_status_t st = ck(cudaMemsetAsync(cw->sig, 0, SIG_BYTES, s), "cudaMemsetAsync (signals)");
    if (st == CC_OK) st = ck(cudaStreamSynchronize(s), "cudaStreamSynchronize (signals)");
    cudaStreamDestroy(s);
    return st;
}

/* This rank's blob: its region's allocation handle and offset, its signal words' handle. */
static cc_status_t publish(cc__cnat_t *x, struct cwin *cw, void *base, size_t bytes,
                           struct wblob *me)
{
    me->bytes = bytes;
    me->device = x->device;
    if (bytes) {
        char *start = NULL;
        CC_CHECK(device_mem(x, base, "base", "cc_window_create"));
        CC_CHECK(alloc_start(x, base, bytes, &start));
        cudaError_t e = cudaIpcGetMemHandle(&me->region, start);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            cc_log_error(CC_SUBSYS_CUDA,
                         "cc_window_create: base %p: cudaIpcGetMemHandle: %s (a "
                         "window needs memory from cudaMalloc, not a pool or cudaMallocManaged)",
                         base, cudaGetErrorString(e));
            return CC_ERR_INVALID_ARG;
        }
        me->offset = (uint64_t)((char *)base - start);
    }
    cw->base[x->rank] = base;
    CC_CHECK(make_sig(cw));
    cw->peer_sig[x->rank] = cw->sig;
    return ck(cudaIpcGetMemHandle(&me->sig, cw->sig), "cudaIpcGetMemHandle (signal words)");
}

/* Open every peer's handles. */
static cc_status_t map_peers(cc__cnat_t *x, struct cwin *cw, const struct wblob *all)
{
    for (int r = 0; r < x->size; r++) {
        if (r == x->rank) continue;
        /* Kept only once opened: release() closes what is set. */
        void *m = NULL, *sig = NULL;
        cudaError_t e = cudaSuccess;
        if (all[r].bytes)
            e = cudaIpcOpenMemHandle(&m, all[r].region, cudaIpcMemLazyEnablePeerAccess);
        if (e == cudaSuccess && m) {
            cw->map[r] = m;
            cw->base[r] = (char *)m + all[r].offset;
        }
        if (e == cudaSuccess)
            e = cudaIpcOpenMemHandle(&sig, all[r].sig, cudaIpcMemLazyEnablePeerAccess);
        if (e == cudaSuccess) cw->peer_sig[r] = sig;
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            cc_log_error(CC_SUBSYS_CUDA,
                         "cc_window_create: communicator %s: rank %d cannot map "
                         "rank %d's window (device %d -> %d): %s",
                         x->name, x->rank, r, x->device, all[r].device, cudaGetErrorString(e));
            return CC_ERR_NOT_SUPPORTED;
        }
    }
    return CC_OK;
}

static void release(const cc__cnat_t *x, struct cwin *cw)
{
    for (int r = 0; r < x->size; r++) {
        if (r == x->rank) continue;
        if (cw->map[r]) cudaIpcCloseMemHandle(cw->map[r]);
        if (cw->peer_sig[r]) cudaIpcCloseMemHandle(cw->peer_sig[r]);
    }
    if (cw->sig) cudaFree(cw->sig);
    free(cw);
}

/* Every rank's status to every rank: the lowest rank's error, or CC_OK. */
static cc_status_t agree(cc__cnat_t *x, unsigned id, const char *step, cc_status_t mine,
                         uint64_t deadline_ns)
{
    int32_t v = mine, all[CC__IPC_MAX_RANKS];
    CC_CHECK(round_(x, id, step, &v, all, sizeof(v), deadline_ns));
    for (int r = 0; r < x->size; r++)
        if (all[r] != CC_OK) return (cc_status_t)all[r]; /* rank r logged why */
    return CC_OK;
}

static cc_status_t create_on_device(cc__cnat_t *x, struct cc_window *win, struct cwin *cw,
                                    void *base, size_t bytes, uint64_t deadline_ns)
{
    struct wblob mine, all[CC__IPC_MAX_RANKS];
    memset(&mine, 0, sizeof(mine));
    mine.status = publish(x, cw, base, bytes, &mine);
    /* A rank that failed still takes part, so that none waits for it. */
    CC_CHECK(round_(x, win->id, "map", &mine, all, sizeof(mine), deadline_ns));
    cc_status_t st = mine.status;
    for (int r = 0; r < x->size; r++) {
        if (st == CC_OK && all[r].status != CC_OK) st = (cc_status_t)all[r].status;
        win->sizes[r] = all[r].bytes;
    }
    if (st == CC_OK) st = map_peers(x, cw, all);
    return agree(x, win->id, "ok", st, deadline_ns);
}

cc_status_t cc__cwin_create(void *state, struct cc_window *win, void *base, size_t bytes,
                            uint64_t deadline_ns)
{
    cc__cnat_t *x = state;
    int prev = -1;
    CC_CHECK(cc__cuda_use_device(x->device, &prev));
    win->id = x->windows++;
    struct cwin *cw = calloc(1, sizeof(*cw));
    win->sizes = calloc((size_t)x->size, sizeof(uint64_t));
    cc_status_t st = cw && win->sizes ? CC_OK : CC_ERR_NO_MEMORY;
    if (st == CC_OK) st = create_on_device(x, win, cw, base, bytes, deadline_ns);
    if (st == CC_OK) {
        win->eng = cw;
    } else {
        if (cw) release(x, cw);
        free(win->sizes);
        win->sizes = NULL;
    }
    cc__cuda_restore_device(prev);
    return st;
}

cc_status_t cc__cwin_destroy(void *state, struct cc_window *win, uint64_t deadline_ns)
{
    cc__cnat_t *x = state;
    struct cwin *cw = win->eng;
    int prev = -1;
    cc_status_t dev = cc__cuda_use_device(x->device, &prev);
    /* Every op of this comm ended: nothing of ours still writes into a peer's region. */
    cc_status_t st = cc__tracker_drain(&x->owner, deadline_ns);
    cc_status_t bye = agree(x, win->id, "bye", st, deadline_ns);
    if (st == CC_OK && dev == CC_OK) {
        release(x, cw);
    } else {
        cc_log_error(CC_SUBSYS_CUDA,
                     "cc_window_destroy: window %u of communicator %s: ops still "
                     "in flight (%s): its device mappings are left open",
                     win->id, x->name, cc_status_name(st != CC_OK ? st : dev));
        free(cw);
    }
    free(win->sizes);
    win->sizes = NULL;
    win->eng = NULL;
    if (dev == CC_OK) cc__cuda_restore_device(prev);
    return st != CC_OK ? st : bye;
}

cc_status_t cc__cwin_check(cc__cnat_t *x, const cc__op_t *op)
{
    const char *fn = cc_op_type_name(op->info.type);
    if (!op->info.bytes) return CC_OK;
    if (op->info.type == CC_OP_WIN_PUT) return device_mem(x, op->info.sendbuf, "src", fn);
    if (op->info.type == CC_OP_WIN_GET) return device_mem(x, op->info.recvbuf, "dst", fn);
    return CC_OK;
}

/* Flush: the host waits until the stream ran everything before, to the deadline or abort.
 * It runs as the submit's settle step, after the op's end event is on the stream, so that
 * the stream is idle when cc_window_flush returns (the end event included). */
cc_status_t cc__cwin_flush(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    struct timespec nap = {0, 20000};
    for (unsigned i = 0;; i++) {
        cudaError_t e = cudaStreamQuery((cudaStream_t)stream);
        if (e == cudaSuccess) return CC_OK;
        if (e != cudaErrorNotReady) return ck(e, "window_flush: cudaStreamQuery");
        cc_status_t ab = (cc_status_t)atomic_load(&x->aborted);
        if (ab != CC_OK) return ab;
        if (cc__now_ns() >= op->deadline_ns) {
            op->waited_peer = op->info.peer;
            cc_log_error(CC_SUBSYS_CUDA,
                         "window_flush to rank %d on communicator %s: the stream "
                         "is still busy at the deadline",
                         op->info.peer, x->name);
            return CC_ERR_TIMEOUT;
        }
        if (i > 64) nanosleep(&nap, NULL);
    }
}

cc_status_t cc__cwin_issue(cc__cnat_t *x, cc__op_t *op, void *stream)
{
    const struct cc_window *win = op->extra;
    struct cwin *cw = win->eng;
    int peer = op->info.peer;
    size_t off = op->info.out_count, len = op->info.bytes;
    switch (op->info.type) {
    case CC_OP_WIN_PUT:
        return len ? cc__cuda_copy(cw->base[peer] + off, op->info.sendbuf, len, stream) : CC_OK;
    case CC_OP_WIN_GET:
        return len ? cc__cuda_copy(op->info.recvbuf, cw->base[peer] + off, len, stream) : CC_OK;
    case CC_OP_WIN_SIGNAL: {
        uint64_t *word = cw->peer_sig[peer] + win->rank;
        uint64_t n = cw->sent[peer] + 1;
        CC_CHECK(cc__cuda_signal(&word, 1, n, stream));
        cw->sent[peer] = n; /* counted once it is on the stream */
        return CC_OK;
    }
    case CC_OP_WIN_WAIT_SIGNAL:
        op->waited_peer = peer; /* the only rank it can wait for: named if it times out */
        return cc__cnat_wait_word(x, cw->sig + peer, op->info.in_count, stream);
    case CC_OP_WIN_FLUSH:
        return CC_OK; /* nothing to enqueue: it waits in cc__cwin_flush, after the end event */
    default:
        return CC_ERR_INTERNAL;
    }
}
