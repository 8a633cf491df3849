/*
 * test_cuda_window_mock.c - the CUDA plugin's window logic
 * (lib/cuda/cuda_window.c) on the CPU, against a mock CUDA runtime: no
 * GPU is needed, so it runs in every build with the CUDA toolkit.
 *
 * What is mocked, and how: "device memory" is host memory from the mock
 * cudaMalloc, kept in a table (so cudaPointerGetAttributes and
 * cuMemGetAddressRange answer for it, and anything else is host memory); an
 * IPC handle carries the allocation's address, and ranks are threads of
 * this process, so opening a handle gives the same address back (the mock
 * counts opens and closes); the copy, signal and wait kernels run at once
 * on the host (copy = memcpy, signal = a release store, wait = an acquire
 * spin with a limit); the store's allgather is a rendezvous of the threads.
 *
 * What it checks (3 ranks; rank 2 registers nothing):
 *  - create maps every peer's region at its interior offset and signal
 *    words, and every rank sees every rank's registered size;
 *  - put lands at the peer's base + offset, signal counts 1, 2, 3 (a wait
 *    for 3 passes only after three signals), get reads the peer's bytes;
 *  - a host source for a put, or a host destination for a get, is refused
 *    with CC_ERR_INVALID_ARG; flush waits for the stream (the mock stream
 *    says "not ready" a few times);
 *  - destroy closes every handle it opened and frees the signal words;
 *  - one rank passing host memory at create: every rank fails with
 *    CC_ERR_INVALID_ARG, none waits, nothing stays open or allocated.
 * The real kernels, IPC and ordering on a GPU are tests/gpu/gpu_window.cu's.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_native.h"
#include "cuda/cudart.h"
#include "cuda/shim.h"
#include "kernels/kernels_cuda.h"

#define N 3

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static _Atomic int g_opens, g_closes, g_mallocs, g_frees, g_not_ready;

/* ---- mock device memory --------------------------------------------------------------- */

static struct {
    char *p;
    size_t n;
} g_dev[64];

cudaError_t cudaMalloc(void **p, size_t n)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < 64; i++)
        if (!g_dev[i].p) {
            g_dev[i].p = *p = calloc(1, n);
            g_dev[i].n = n;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    g_mallocs++;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < 64; i++)
        if (g_dev[i].p == p) g_dev[i].p = NULL;
    pthread_mutex_unlock(&g_mu);
    free(p);
    g_frees++;
    return cudaSuccess;
}

static int find(const void *q, char **start, size_t *len)
{
    int found = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < 64; i++)
        if (g_dev[i].p && (const char *)q >= g_dev[i].p && (const char *)q < g_dev[i].p + g_dev[i].n) {
            *start = g_dev[i].p;
            *len = g_dev[i].n;
            found = 1;
        }
    pthread_mutex_unlock(&g_mu);
    return found;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    char *s = NULL;
    size_t n = 0;
    memset(a, 0, sizeof(*a));
    a->type = find(p, &s, &n) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    return cudaSuccess;
}

static CUresult range(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    char *s = NULL;
    if (!find((const void *)(uintptr_t)p, &s, size)) return CUDA_ERROR_NOT_FOUND;
    *base = (CUdeviceptr)(uintptr_t)s;
    return CUDA_SUCCESS;
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fn, unsigned int v,
                                             unsigned long long flags,
                                             enum cudaDriverEntryPointQueryResult *q)
{
    (void)v, (void)flags;
    CUresult (*f)(CUdeviceptr *, size_t *, CUdeviceptr) = range;
    memcpy(fn, &f, sizeof(f));
    *q = strcmp(sym, "cuMemGetAddressRange") ? cudaDriverEntryPointSymbolNotFound
                                             : cudaDriverEntryPointSuccess;
    return cudaSuccess;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    char *s = NULL;
    size_t n = 0;
    if (!find(p, &s, &n) || s != p) return cudaErrorInvalidValue; /* only allocation starts */
    memset(h, 0, sizeof(*h));
    memcpy(h->reserved, &p, sizeof(p));
    return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
    (void)flags;
    memcpy(p, h.reserved, sizeof(*p));
    g_opens++;
    return cudaSuccess;
}

cudaError_t cudaIpcCloseMemHandle(void *p)
{
    (void)p;
    g_closes++;
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int f)
{
    (void)f;
    *s = (cudaStream_t)(uintptr_t)1;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    (void)s;
    memset(p, v, n);
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s)
{
    (void)s;
    return atomic_fetch_sub(&g_not_ready, 1) > 0 ? cudaErrorNotReady : cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "mock error";
}

/* ---- mock plugin services ----------------------------------------------------------- */

cc_status_t cc__cuda_check(int err, const char *what)
{
    if (err) fprintf(stderr, "mock: %s: cuda error %d\n", what, err);
    return err ? CC_ERR_INTERNAL : CC_OK;
}

cc_status_t cc__cuda_use_device(int device, int *prev)
{
    (void)device;
    *prev = -1;
    return CC_OK;
}

void cc__cuda_restore_device(int prev)
{
    (void)prev;
}

cc_status_t cc__tracker_drain(cc__track_owner_t *owner, uint64_t deadline_ns)
{
    (void)owner, (void)deadline_ns;
    return CC_OK;
}

cc_status_t cc__cuda_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)stream;
    memcpy(dst, src, bytes);
    return CC_OK;
}

cc_status_t cc__cuda_signal(uint64_t *const *w, int n, uint64_t value, void *stream)
{
    (void)stream;
    for (int k = 0; k < n; k++) __atomic_store_n(w[k], value, __ATOMIC_RELEASE);
    return CC_OK;
}

cc_status_t cc__cnat_wait_word(cc__cnat_t *x, const uint64_t *word, uint64_t value, void *stream)
{
    (void)x, (void)stream;
    for (long i = 0; i < 2000000000L; i++)
        if (__atomic_load_n(word, __ATOMIC_ACQUIRE) >= value) return CC_OK;
    return CC_ERR_TIMEOUT;
}

/* The store's allgather: the N threads meet per name. */
static struct {
    char name[48];
    int arrived, left;
    char data[N][512];
} g_round[32];

static cc_status_t allgather(cc_comm_t *comm, const char *name, const void *mine, void *all,
                             size_t len, int64_t timeout_ms)
{
    (void)timeout_ms;
    int rank = (int)(uintptr_t)comm - 1, i;
    pthread_mutex_lock(&g_mu);
    for (i = 0; i < 32 && g_round[i].name[0] && strcmp(g_round[i].name, name); i++) {
    }
    if (!g_round[i].name[0]) snprintf(g_round[i].name, sizeof(g_round[i].name), "%s", name);
    memcpy(g_round[i].data[rank], mine, len);
    g_round[i].arrived++;
    pthread_cond_broadcast(&g_cv);
    while (g_round[i].arrived < N) pthread_cond_wait(&g_cv, &g_mu);
    for (int r = 0; r < N; r++) memcpy((char *)all + (size_t)r * len, g_round[i].data[r], len);
    pthread_mutex_unlock(&g_mu);
    return CC_OK;
}

static cc_core_t g_core_mock;
const cc_core_t *cc__core = &g_core_mock;

/* ---- the ranks ----------------------------------------------------------------------- */

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "rank %d: ", x->rank);                                                     \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        return (void *)1;                                                                          \
    } while (0)

static cc__op_t op_of(struct cc_window *w, cc_op_type_t t, int peer, const void *src, void *dst,
                      size_t bytes, size_t off, uint64_t count)
{
    cc__op_t op;
    memset(&op, 0, sizeof(op));
    op.extra = w;
    op.info.type = t;
    op.info.peer = peer;
    op.info.sendbuf = src;
    op.info.recvbuf = dst;
    op.info.bytes = bytes;
    op.info.out_count = off;
    op.info.in_count = count;
    op.deadline_ns = UINT64_MAX;
    return op;
}

/* As cc__gpu_submit does: check, issue, then (a flush) the settle step's host wait. */
static cc_status_t run(cc__cnat_t *x, cc__op_t op)
{
    cc_status_t st = cc__cwin_check(x, &op);
    if (st == CC_OK) st = cc__cwin_issue(x, &op, NULL);
    if (st == CC_OK && op.info.type == CC_OP_WIN_FLUSH) st = cc__cwin_flush(x, &op, NULL);
    return st;
}

static void *good_rank(void *arg)
{
    cc__cnat_t *x = arg;
    int next = (x->rank + 1) % N, prev = (x->rank + N - 1) % N;
    char *alloc = NULL, host[8] = {0};
    cudaMalloc((void **)&alloc, 4096);
    size_t bytes = x->rank == 2 ? 0 : 1000u + (size_t)x->rank;
    struct cc_window w;
    memset(&w, 0, sizeof(w));
    w.rank = x->rank, w.n = N;
    cc_status_t st = cc__cwin_create(x, &w, bytes ? alloc + 48 : NULL, bytes, UINT64_MAX);
    if (st != CC_OK) FAIL("create: %s", cc_status_name(st));
    for (int r = 0; r < N; r++)
        if (w.sizes[r] != (r == 2 ? 0 : 1000u + (size_t)r))
            FAIL("sees rank %d's size %llu", r, (unsigned long long)w.sizes[r]);
    char *src = alloc + 2048;
    memset(src, 'a' + x->rank, 100);
    if (next != 2) { /* rank 2 registered nothing: nothing to put into */
        if (run(x, op_of(&w, CC_OP_WIN_PUT, next, src, NULL, 100, 7, 0)) != CC_OK) FAIL("put");
        if (run(x, op_of(&w, CC_OP_WIN_PUT, next, host, NULL, 8, 0, 0)) != CC_ERR_INVALID_ARG)
            FAIL("a put from host memory was not refused");
    }
    for (int i = 0; i < 3; i++)
        if (run(x, op_of(&w, CC_OP_WIN_SIGNAL, next, NULL, NULL, 0, 0, 0)) != CC_OK) FAIL("signal");
    if (run(x, op_of(&w, CC_OP_WIN_WAIT_SIGNAL, prev, NULL, NULL, 0, 0, 3)) != CC_OK)
        FAIL("wait for 3 signals of rank %d", prev);
    if (bytes) {
        for (int i = 0; i < 100; i++)
            if (alloc[48 + 7 + i] != 'a' + prev) FAIL("byte %d of rank %d's put is wrong", i, prev);
        if (alloc[48 + 6] || alloc[48 + 107]) FAIL("a put wrote outside its range");
    }
    /* Every put landed before anyone reads: prev's region holds what its own prev put. */
    int32_t one = 1, all[N];
    allgather(x->comm, "test/puts-done", &one, all, sizeof(one), 0);
    if (prev != 2) {
        char *dst = alloc + 3072;
        if (run(x, op_of(&w, CC_OP_WIN_GET, prev, NULL, dst, 100, 7, 0)) != CC_OK) FAIL("get");
        int pp = (prev + N - 1) % N;
        for (int i = 0; i < 100; i++)
            if (dst[i] != 'a' + pp) FAIL("get: byte %d is %d, want %c", i, dst[i], 'a' + pp);
        if (run(x, op_of(&w, CC_OP_WIN_GET, prev, NULL, host, 8, 0, 0)) != CC_ERR_INVALID_ARG)
            FAIL("a get into host memory was not refused");
    }
    if (x->rank == 0) g_not_ready = 5;
    if (run(x, op_of(&w, CC_OP_WIN_FLUSH, next, NULL, NULL, 0, 0, 0)) != CC_OK) FAIL("flush");
    if (x->rank == 0 && g_not_ready > 0) FAIL("flush returned while the stream was busy");
    st = cc__cwin_destroy(x, &w, UINT64_MAX);
    if (st != CC_OK || w.sizes || w.eng) FAIL("destroy: %s", cc_status_name(st));
    cudaFree(alloc);
    return NULL;
}

/* Rank 0 registers host memory: every rank's create fails, and nothing stays behind. */
static void *bad_rank(void *arg)
{
    cc__cnat_t *x = arg;
    static char host[256];
    char *alloc = NULL;
    cudaMalloc((void **)&alloc, 256);
    struct cc_window w;
    memset(&w, 0, sizeof(w));
    w.rank = x->rank, w.n = N;
    cc_status_t st = cc__cwin_create(x, &w, x->rank == 0 ? host : alloc, 256, UINT64_MAX);
    if (st != CC_ERR_INVALID_ARG) FAIL("create with rank 0's host base: %s", cc_status_name(st));
    if (w.sizes || w.eng) FAIL("a failed create left its parts");
    cudaFree(alloc);
    return NULL;
}

static int ranks(void *(*fn)(void *), unsigned first_window)
{
    static cc__cnat_t xs[N];
    pthread_t t[N];
    int bad = 0;
    for (int r = 0; r < N; r++) {
        memset(&xs[r], 0, sizeof(xs[r]));
        xs[r].comm = (cc_comm_t *)(uintptr_t)(r + 1);
        xs[r].rank = r, xs[r].size = N;
        xs[r].windows = first_window;
        snprintf(xs[r].name, sizeof(xs[r].name), "mock");
        pthread_create(&t[r], NULL, fn, &xs[r]);
    }
    for (int r = 0; r < N; r++) {
        void *ret = NULL;
        pthread_join(t[r], &ret);
        bad += ret != NULL;
    }
    return bad;
}

int main(void)
{
    g_core_mock.store_allgather = allgather;
    int fails = 0;
    if (ranks(good_rank, 0) || g_opens != g_closes || g_mallocs != g_frees) {
        fprintf(stderr, "FAIL good windows: opens %d closes %d, mallocs %d frees %d\n",
                (int)g_opens, (int)g_closes, (int)g_mallocs, (int)g_frees);
        fails++;
    } else {
        printf("PASS create/put/signal/wait/get/flush/destroy on 3 ranks (%d handles opened, all "
               "closed)\n", (int)g_opens);
    }
    if (ranks(bad_rank, 1) || g_opens != g_closes || g_mallocs != g_frees) {
        fprintf(stderr, "FAIL a host base on rank 0: opens %d closes %d, mallocs %d frees %d\n",
                (int)g_opens, (int)g_closes, (int)g_mallocs, (int)g_frees);
        fails++;
    } else {
        printf("PASS a host base on rank 0 fails every rank, nothing left open\n");
    }
    return fails ? 1 : 0;
}
