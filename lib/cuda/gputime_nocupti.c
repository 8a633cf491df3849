/*
 * gputime_nocupti.c - CUPTI's half of gputime.h in an object built without
 * the CUDA headers (the interposer on a machine without the toolkit):
 * CCOMM_GPU_TIMING=cupti says it is unavailable and events stay.
 */
#include "cuda/gputime.h"
#include "base/log.h"

int cc__cupti_start(void)
{
    cc_log_warn(CC_SUBSYS_CUDA, "this build has no CUPTI support (built without the CUDA "
                                "toolkit)");
    return -1;
}

void cc__cupti_push(uint64_t op_id, uint64_t rec_id)
{
    (void)op_id, (void)rec_id;
}

void cc__cupti_pop(void) {}

void cc__cupti_flush(void) {}
