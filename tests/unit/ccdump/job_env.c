/* job_env.c - see job_env.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
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

int ccd_test_run(char **out, char **err, int argc, ...)
{
    char *owned[16], *argv[17], *e = NULL;
    va_list ap;
    va_start(ap, argc);
    owned[0] = strdup("ccdump");
    for (int i = 1; i < argc && i < 16; i++)
        owned[i] = strdup(va_arg(ap, const char *));
    va_end(ap);
    memcpy(argv, owned, (size_t)argc * sizeof(char *)); /* the command may reorder argv */
    argv[argc] = NULL;
    size_t lo = 0, le = 0;
    FILE *fo = open_memstream(out, &lo), *fe = open_memstream(&e, &le);
    int rc = ccdump_main(argc, argv, fo, fe);
    fclose(fo);
    fclose(fe);
    if (getenv("CCD_TEST_PRINT")) {
        printf("$ ccdump");
        for (int i = 1; i < argc; i++)
            printf(" %s", owned[i]);
        printf("\n%s", *out);
    }
    if (err)
        *err = e;
    else
        free(e);
    for (int i = 0; i < argc; i++)
        free(owned[i]);
    return rc;
}
