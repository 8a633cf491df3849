/* cudart.c - checks on top of the runtime table (see cudart.h). */
#include <pthread.h>

#include "cuda/cudart.h"
#include "base/log.h"

const cc__cudart_t *cc__cudart;

cc_status_t cc__cuda_check(int err, const char *what)
{
    if (err == CC__CUDA_SUCCESS) return CC_OK;
    const char *text =
        cc__cudart && cc__cudart->GetErrorString ? cc__cudart->GetErrorString(err) : NULL;
    /* 35 insufficient driver, 34 stub library, 100 no device: the machine has no GPU. */
    int machine = err == 35 || err == 34 || err == 100;
    if (machine)
        cc_log_warn(CC_SUBSYS_CUDA, "%s: cuda error %d (%s): no usable CUDA device here", what, err,
                    text ? text : "?");
    else
        cc_log_error(CC_SUBSYS_CUDA, "%s: cuda error %d (%s)", what, err, text ? text : "?");
    return machine ? CC_ERR_NOT_SUPPORTED : CC_ERR_INTERNAL;
}

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_usable;

static void probe(void)
{
    int n = 0;
    if (!cc__cudart) return;
    int err = cc__cudart->GetDeviceCount(&n);
    g_usable = err == CC__CUDA_SUCCESS && n > 0;
    if (!g_usable)
        cc_log_info(CC_SUBSYS_CUDA, "cuda runtime (%s) sees no device: error %d, %d devices",
                    cc__cudart->origin, err, n);
}

int cc__cuda_usable(void)
{
    pthread_once(&g_once, probe);
    return g_usable;
}

cc_status_t cc__cuda_use_device(int device, int *prev)
{
    int cur = -1;
    *prev = -1;
    CC_CHECK(cc__cuda_check(cc__cudart->GetDevice(&cur), "cudaGetDevice"));
    if (cur == device) return CC_OK;
    CC_CHECK(cc__cuda_check(cc__cudart->SetDevice(device), "cudaSetDevice"));
    *prev = cur;
    return CC_OK;
}

void cc__cuda_restore_device(int prev)
{
    if (prev >= 0) cc__cudart->SetDevice(prev);
}
