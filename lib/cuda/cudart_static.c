/*
 * cudart_static.c - the runtime table filled with the plugin's statically
 * linked libcudart (the one its kernels are registered with).
 */
#include <cuda_runtime_api.h>

#include "cuda/cudart.h"

static int ev_create(void **e, unsigned f)
{
    return (int)cudaEventCreateWithFlags((cudaEvent_t *)e, f);
}
static int ev_record(void *e, void *s)
{
    return (int)cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s);
}
static int ev_query(void *e)
{
    return (int)cudaEventQuery((cudaEvent_t)e);
}
static int ev_sync(void *e)
{
    return (int)cudaEventSynchronize((cudaEvent_t)e);
}
static int ev_elapsed(float *ms, void *a, void *b)
{
    return (int)cudaEventElapsedTime(ms, (cudaEvent_t)a, (cudaEvent_t)b);
}
static int ev_destroy(void *e)
{
    return (int)cudaEventDestroy((cudaEvent_t)e);
}
static const char *err_str(int e)
{
    return cudaGetErrorString((cudaError_t)e);
}
static int st_create(void **s, unsigned f)
{
    return (int)cudaStreamCreateWithFlags((cudaStream_t *)s, f);
}
static int st_destroy(void *s)
{
    return (int)cudaStreamDestroy((cudaStream_t)s);
}
static int st_sync(void *s)
{
    return (int)cudaStreamSynchronize((cudaStream_t)s);
}
static int dev_count(int *n)
{
    return (int)cudaGetDeviceCount(n);
}
static int dev_set(int d)
{
    return (int)cudaSetDevice(d);
}
static int dev_get(int *d)
{
    return (int)cudaGetDevice(d);
}
static int mem_alloc(void **p, size_t n)
{
    return (int)cudaMalloc(p, n);
}
static int mem_free(void *p)
{
    return (int)cudaFree(p);
}

static const cc__cudart_t g_static = {
    .origin = "static",
    .GetDeviceCount = dev_count,
    .SetDevice = dev_set,
    .GetDevice = dev_get,
    .EventCreateWithFlags = ev_create,
    .EventRecord = ev_record,
    .EventQuery = ev_query,
    .EventSynchronize = ev_sync,
    .EventElapsedTime = ev_elapsed,
    .EventDestroy = ev_destroy,
    .GetErrorString = err_str,
    .StreamCreateWithFlags = st_create,
    .StreamDestroy = st_destroy,
    .StreamSynchronize = st_sync,
    .Malloc = mem_alloc,
    .Free = mem_free,
};

const cc__cudart_t *cc__cudart_static(void)
{
    return &g_static;
}
