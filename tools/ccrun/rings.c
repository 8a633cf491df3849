/*
 * rings.c - a successful job's flight recorder rings are removed.
 *
 * Every process keeps its ring in CCOMM_RECORDER_DIR (/dev/shm by default)
 * so that it survives a crash; on a machine that runs job after job they
 * would pile up in memory. When every rank exited 0 there is nothing to
 * diagnose, so ccrun removes $CCOMM_RECORDER_DIR/<job id>; a failed job's
 * rings stay for ccdump. --keep-rings keeps them always.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ccrun.h"
#include "config.h"
#include "recorder/paths.h"

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    /* Only ring files and the job directory: anything else a user put there stays. */
    size_t n = strlen(path);
    if (flag == FTW_F && (n < 5 || strcmp(path + n - 5, ".ccfr") != 0)) return 0;
    remove(path);
    return 0;
}

void ccrun_remove_rings(const struct ccrun_job *job)
{
    char comp[256], base[PATH_MAX], dir[PATH_MAX + 260];
    cc__fr_job_component(job->job_id, comp, sizeof(comp));
    if (cc__fr_base_dir(base, sizeof(base)) != 0) return;
    snprintf(dir, sizeof(dir), "%s/%s", base, comp);
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
