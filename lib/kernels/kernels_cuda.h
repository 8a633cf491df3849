/*
 * kernels_cuda.h - CUDA reduction and copy kernels for every dtype x op
 * (the device side of lib/kernels; built into libccomm-cuda.so only).
 *
 * Results are the host kernels' to the bit (docs/kernels.md; the element
 * arithmetic is kernels_cuda.cuh, checked against lib/kernels on the CPU
 * by tests/gpu/test_cuda_math). Kernels are enqueued on `stream` and
 * return at once; a launch error is logged and returned.
 */
#ifndef CC_KERNELS_KERNELS_CUDA_H
#define CC_KERNELS_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CC__CUDA_MAX_SRC 8

/*
 * dst[i] = src[0][i] op src[1][i] op ... op src[nsrc-1][i], left to right;
 * each src[k] with bit k of scale_mask set is first multiplied by `premul`
 * (PREMUL_SUM); when avg > 0 the result is then divided by avg (AVG).
 * AVG and PREMUL_SUM combine as SUM. 1 <= nsrc <= CC__CUDA_MAX_SRC. dst may
 * equal a source exactly.
 */
typedef struct cc__cuda_reduce {
    void *dst;
    const void *src[CC__CUDA_MAX_SRC];
    int nsrc;
    size_t n; /* elements */
    cc_dtype_t dtype;
    cc_redop_t op;
    unsigned scale_mask;
    double premul;
    unsigned avg;
} cc__cuda_reduce_t;

cc_status_t cc__cuda_reduce(const cc__cuda_reduce_t *r, void *stream);

/* Copy `bytes` (device to device, peers' mapped memory included), by a kernel. */
cc_status_t cc__cuda_copy(void *dst, const void *src, size_t bytes, void *stream);

/*
 * Flags between ranks (lib/transport/cuda_ipc): store `value` into each
 * of the n words (peers' memory, mapped), after a system-wide fence that
 * publishes this stream's earlier writes.
 */
cc_status_t cc__cuda_signal(uint64_t *const *words, int n, uint64_t value, void *stream);

/*
 * Block the stream until every one of the n words (this rank's memory) is
 * >= value; gives up when *abort (host memory, mapped) becomes nonzero or
 * the GPU clock passes deadline_gt (globaltimer ns; 0 = never), setting
 * *fault (mapped host memory) to 1 (abort) or 2 (timeout). Later kernels
 * of the op then run on stale data; the engine fails the op from *fault.
 */
cc_status_t cc__cuda_wait(const uint64_t *words, int n, uint64_t value, const volatile int *abort,
                          int *fault, uint64_t deadline_gt, void *stream);

/* An error line of the CUDA subsystem (kernels_cuda_log.c: the .cu cannot include log.h). */
void cc__kcuda_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* GPU globaltimer minus CLOCK_MONOTONIC, measured on the current device (ns). */
cc_status_t cc__cuda_globaltimer_offset(int64_t *offset);

#ifdef __cplusplus
}
#endif
#endif /* CC_KERNELS_KERNELS_CUDA_H */
