/*
 * cuda_kernels_bench.cu - bandwidth of the CUDA reduction and copy kernels
 * (lib/kernels/kernels_cuda.cu) against the device's own copy
 * (cudaMemcpy device to device), on one GPU. Bytes are counted as moved
 * (every byte read plus every byte written), so a 2-input reduction of n
 * bytes moves 3n and a copy 2n. Target: the reduction at >= 80 % of the
 * device copy's bandwidth.
 *
 *   cuda_kernels_bench [MiB per buffer, default 1024]
 * Prints one JSON object. Exit 77 without a CUDA device.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "kernels/kernels_cuda.h"
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                            \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

typedef cc_status_t (*run_fn)(void *ctx);

/* Median-free simple timing: one warm-up, then `reps` runs between two events. */
static double time_ms(run_fn fn, void *ctx, int reps)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    if (fn(ctx) != CC_OK) exit(1);
    CK(cudaEventRecord(a, 0));
    for (int i = 0; i < reps; i++)
        if (fn(ctx) != CC_OK) exit(1);
    CK(cudaEventRecord(b, 0));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return ms / reps;
}

struct ctx {
    void *buf[9];
    size_t bytes;
    cc_dtype_t dtype;
    int nsrc;
};

static cc_status_t memcpy_run(void *p)
{
    ctx *c = (ctx *)p;
    return cudaMemcpyAsync(c->buf[0], c->buf[1], c->bytes, cudaMemcpyDeviceToDevice, 0) ==
                   cudaSuccess
               ? CC_OK
               : CC_ERR_INTERNAL;
}

static cc_status_t copy_run(void *p)
{
    ctx *c = (ctx *)p;
    return cc__cuda_copy(c->buf[0], c->buf[1], c->bytes, 0);
}

static cc_status_t reduce_run(void *p)
{
    ctx *c = (ctx *)p;
    cc__cuda_reduce_t r = {};
    r.dst = c->buf[0];
    for (int k = 0; k < c->nsrc; k++) r.src[k] = c->buf[1 + k];
    r.nsrc = c->nsrc;
    r.n = c->bytes / cc_dtype_size(c->dtype);
    r.dtype = c->dtype;
    r.op = CC_SUM;
    return cc__cuda_reduce(&r, 0);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("skipped: no CUDA device\n");
        return 77;
    }
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 1024;
    ctx c = {};
    c.bytes = mib << 20;
    for (int k = 0; k < 9; k++) {
        CK(cudaMalloc(&c.buf[k], c.bytes));
        CK(cudaMemset(c.buf[k], k, c.bytes));
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int reps = 10;
    double gb = (double)c.bytes / 1e9;
    double t_memcpy = time_ms(memcpy_run, &c, reps), t_copy = time_ms(copy_run, &c, reps);
    double bw_memcpy = 2 * gb / (t_memcpy / 1e3), bw_copy = 2 * gb / (t_copy / 1e3);
    printf("{\"device\": \"%s\", \"buffer_mib\": %zu, \"memcpy_d2d_gbs\": %.1f, "
           "\"copy_kernel_gbs\": %.1f",
           prop.name, mib, bw_memcpy, bw_copy);
    const cc_dtype_t types[] = {CC_FLOAT32, CC_BFLOAT16, CC_FLOAT16, CC_INT32};
    const int nsrcs[] = {2, 8};
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 2; k++) {
            c.dtype = types[t];
            c.nsrc = nsrcs[k];
            double ms = time_ms(reduce_run, &c, reps);
            double bw = (c.nsrc + 1) * gb / (ms / 1e3);
            printf(", \"reduce_%s_%d_gbs\": %.1f, \"reduce_%s_%d_of_memcpy\": %.2f",
                   cc_dtype_name(types[t]), c.nsrc, bw, cc_dtype_name(types[t]), c.nsrc,
                   bw / bw_memcpy);
        }
    printf("}\n");
    for (int k = 0; k < 9; k++) cudaFree(c.buf[k]);
    return 0;
}
