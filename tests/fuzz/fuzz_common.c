/* fuzz_common.c - what every fuzz target does with a job it loaded (fuzz.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "diag.h"
#include "fuzz.h"
#include "index.h"
#include "base/log.h"
#include "perfetto.h"

void fuzz_everything(ccd_job_t *job)
{
    static FILE *null;
    if (!null) null = fopen("/dev/null", "w");
    if (ccd_job_finish(job)) return;
    ccd_index_t *ix = ccd_index_build(job);
    ccd_diag_opts_t o = {1000000000ull};
    ccd_diag_t *d = ix ? ccd_diagnose(job, ix, &o) : NULL;
    if (d) {
        ccd_diag_print_text(d, null);
        json_dumpf(d->report, null, JSON_COMPACT);
    }
    ccd_pf_sel_t sel = {NULL, 0, 0};
    if (ix) ccd_perfetto_write(job, ix, &sel, null, null);
    ccd_diag_free(d);
    ccd_index_free(ix);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    cc__log_level = CC_LOG_LEVEL_NONE; /* rejected inputs are the point: no log line for each */
    const char *dir = getenv("CCDUMP_FUZZ_SEEDS"); /* a test program: no ccomm config */
    uint8_t *bufs[16];
    size_t lens[16];
    if (!dir || (mkdir(dir, 0755) && errno != EEXIST)) return 0;
    int n = fuzz_make_seeds(bufs, lens, 16);
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/seed-%d", dir, i);
        FILE *f = fopen(path, "wb");
        if (f) fwrite(bufs[i], 1, lens[i], f), fclose(f);
        free(bufs[i]);
    }
    return 0;
}
