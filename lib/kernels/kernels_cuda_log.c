/*
 * kernels_cuda_log.c - the CUDA kernels' error lines, written from C:
 * log.h is C11 (atomics), and kernels_cuda.cu is C++.
 */
#include <stdarg.h>

#include "kernels/kernels_cuda.h"
#include "base/log.h"

void cc__kcuda_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cc__log_verror(CC_SUBSYS_CUDA, fmt, ap);
    va_end(ap);
}
