/*
 * gpu_check.h - the GPU test programs' checks (gpu_app.cu, gpu_window.cu):
 * REQUIRE(cond, fmt, ...) ends the rank with exit 1 and a line naming the
 * program (GPU_TEST_NAME), the rank (g_rank, which the includer defines),
 * the place and ccomm's last error; CK(call) requires a CUDA call to succeed.
 */
#ifndef CC_TEST_GPU_CHECK_H
#define CC_TEST_GPU_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "ccomm/ccomm.h"

#define REQUIRE(cond, ...)                                                                         \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s rank %d: %s:%d: %s: ", GPU_TEST_NAME, g_rank, __FILE__, __LINE__,  \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", cc_last_error());                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        REQUIRE(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                      \
    } while (0)

#endif /* CC_TEST_GPU_CHECK_H */
