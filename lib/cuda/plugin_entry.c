/*
 * plugin_entry.c - libccomm-cuda.so's entry point: adopt the core's table,
 * pick the CUDA runtime, start the GPU timing source, and hand out the
 * engines for device communicators.
 */
#include <string.h>

#include "base/build_id.h"
#include "base/config.h"
#include "cuda/cuda_native.h"
#include "cuda/cudart.h"
#include "cuda/gputime.h"
#include "base/log.h"
#include "nccl/nccl_engine.h"
#include "cuda/shim.h"

static cc_status_t nccl_engine(const cc_engine_v1_t **out)
{
    const cc__nccl_lib_t *lib = NULL;
    CC_CHECK(cc__nccl_lib_open(cc__cfg()->nccl_lib, (const void *)&cc__nccl_engine, &lib));
    *out = &cc__nccl_engine.v1;
    return CC_OK;
}

static cc_status_t native_engine(int device, const cc_engine_v1_t **out)
{
    if (!cc__cuda_usable()) {
        cc_log_error(CC_SUBSYS_CUDA,
                     "the native cuda engine needs a CUDA device (device %d "
                     "asked): none is usable here",
                     device);
        return CC_ERR_NOT_SUPPORTED;
    }
    *out = &cc__cuda_native_engine.v2.v1;
    return CC_OK;
}

/* auto: NCCL when it loads (DESIGN: auto means NCCL for CUDA), else ccomm's own kernels. */
static cc_status_t engine_for(const char *want, int device, const cc_engine_v1_t **out)
{
    if (!strcmp(want, "nccl")) return nccl_engine(out);
    if (!strcmp(want, "native")) return native_engine(device, out);
    if (nccl_engine(out) == CC_OK) return CC_OK;
    cc_log_warn(CC_SUBSYS_CUDA,
                "engine auto: nccl (%s) did not load; using the native cuda "
                "engine",
                cc__cfg()->nccl_lib);
    return native_engine(device, out);
}

static const cc_plugin_t g_plugin = {
    .build_id = CC_BUILD_ID,
    .name = "cuda: nccl + native cuda engines",
    .engine = engine_for,
};

__attribute__((visibility("default"))) const cc_plugin_t *cc_plugin_init(const cc_core_t *core)
{
    if (cc__shim_init(core) != CC_OK) return NULL;
    cc__cudart = cc__cudart_static();
    cc__gputime_init((const void *)&g_plugin);
    return &g_plugin;
}
