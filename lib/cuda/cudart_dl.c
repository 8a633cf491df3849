/*
 * cudart_dl.c - the runtime table from the program's own libcudart (the
 * interposer): a runtime already loaded by the program is found by its
 * soname, so ccomm's events live in the program's runtime and contexts.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

#include "base/config.h"
#include "cuda/cudart.h"
#include "base/log.h"

static cc__cudart_t g_dl;

struct entry {
    const char *name;
    size_t off;
};
#define E(field, sym)                                                                              \
    {                                                                                              \
        sym, offsetof(cc__cudart_t, field)                                                         \
    }
static const struct entry entries[] = {
    E(GetDeviceCount, "cudaGetDeviceCount"),
    E(SetDevice, "cudaSetDevice"),
    E(GetDevice, "cudaGetDevice"),
    E(EventCreateWithFlags, "cudaEventCreateWithFlags"),
    E(EventRecord, "cudaEventRecord"),
    E(EventQuery, "cudaEventQuery"),
    E(EventSynchronize, "cudaEventSynchronize"),
    E(EventElapsedTime, "cudaEventElapsedTime"),
    E(EventDestroy, "cudaEventDestroy"),
    E(GetErrorString, "cudaGetErrorString"),
    E(StreamCreateWithFlags, "cudaStreamCreateWithFlags"),
    E(StreamDestroy, "cudaStreamDestroy"),
    E(StreamSynchronize, "cudaStreamSynchronize"),
    E(Malloc, "cudaMalloc"),
    E(Free, "cudaFree"),
};
#undef E

static int fill(void *h)
{
    for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
        void *p = dlsym(h, entries[i].name);
        if (!p) return -1;
        memcpy((char *)&g_dl + entries[i].off, &p, sizeof(p));
    }
    return 0;
}

const cc__cudart_t *cc__cudart_dl(void)
{
    /* Newest first; an explicit CCOMM_CUDART_LIB wins. */
    const char *names[] = {cc__cfg()->cudart_lib, "libcudart.so.13", "libcudart.so.12",
                           "libcudart.so.11.0", "libcudart.so"};
    /* First a runtime the program already loaded (whatever its version), then any. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            if (!names[i] || !names[i][0]) continue;
            void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | (pass == 0 ? RTLD_NOLOAD : 0));
            if (!h) continue;
            if (fill(h) == 0) {
                g_dl.origin = names[i];
                return &g_dl;
            }
            dlclose(h);
        }
    }
    cc_log_info(CC_SUBSYS_CUDA, "no CUDA runtime library found (set CCOMM_CUDART_LIB)");
    return NULL;
}
