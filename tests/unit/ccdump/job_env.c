/* job_env.c - see job_env.h. */
#include <stdio.h>

#include "job_env.h"

int ccd_test_job(cc_test_rank_fn fn, const char *dir, const char *name)
{
    return ccd_test_job_env(fn, dir, name, NULL);
}

int ccd_test_job_env(cc_test_rank_fn fn, const char *dir, const char *name, const char *extra)
{
    char env_rec[200], env_dump[200], env_job[80];
    snprintf(env_rec, sizeof(env_rec), "CCOMM_RECORDER_DIR=%s/rings", dir);
    snprintf(env_dump, sizeof(env_dump), "CCOMM_DUMP_DIR=%s/dumps", dir);
    snprintf(env_job, sizeof(env_job), "CCOMM_JOB_ID=%s", name);
    /* ASan: a destroyed split communicator is never freed by the core (its handle stays
     * recognisable as destroyed); LeakSanitizer may report it in the ranks. */
    const char *env[] = {env_rec,
                         env_dump,
                         env_job,
                         "CCOMM_RECORDER_KEEP=1", /* ranks that end well keep their rings too */
                         "CCOMM_HEARTBEAT_MS=100",
                         "CCOMM_LOG_LEVEL=NONE",
                         "ASAN_OPTIONS=detect_leaks=0",
                         extra,
                         NULL};
    return cc_test_fork_ranks(4, fn, (void *)dir, 60, env, NULL);
}
