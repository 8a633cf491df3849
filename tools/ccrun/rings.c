/*
 * rings.c - a successful job's flight recorder rings are removed.
 *
 * Every process keeps its ring in CCOMM_RECORDER_DIR (/dev/shm/ccomm-<uid>
 * by default) so that it survives a crash; on a machine that runs job after
 * job they would pile up in memory. A process alone removes its ring at a
 * normal exit when the ring records no failure, but it cannot know whether
 * another rank failed after it. ccrun can: its ranks keep their rings
 * (CCOMM_RECORDER_KEEP=1), and when every rank exited 0 and no ring records
 * a failure (an abort, a dump, a fatal signal, a process that never closed
 * it), ccrun removes $CCOMM_RECORDER_DIR/<job id>. Otherwise every rank's
 * ring stays for ccdump. --keep-rings (or CCOMM_RECORDER_KEEP=1 given to
 * ccrun) keeps them always.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccrun.h"
#include "base/config.h"
#include "recorder/paths.h"
#include "recorder/reader.h"
#include "recorder/ring.h"

static int g_failed; /* a ring of the job being looked at records a failure */

static int is_ring(const char *path, int flag)
{
    size_t n = strlen(path);
    return flag == FTW_F && n >= 5 && strcmp(path + n - 5, ".ccfr") == 0;
}

/* A ring that cannot be read is kept too: it may be what explains the job. */
static int check_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (!is_ring(path, flag)) return 0;
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    char why[256] = "";
    if (cc__fr_reader_open(path, &rd, why, sizeof(why)) != CC_OK ||
        cc__fr_reader_snapshot(rd, &s, why, sizeof(why)) != CC_OK)
        g_failed = 1;
    else if (cc__fr_failure_recorded(&s->hdr, s->comms, s->ncomms, why, sizeof(why)))
        g_failed = 1;
    else if (!s->hdr.closed_ns)
        g_failed = 1, snprintf(why, sizeof(why), "the process did not exit normally");
    if (g_failed) ccrun_say("keeping the job's rings: %s: %s", path, why);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(rd);
    return g_failed; /* stop at the first */
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    /* Only ring files and the job directory: anything else a user put there stays. */
    if (flag == FTW_F && !is_ring(path, flag)) return 0;
    remove(path);
    return 0;
}

void ccrun_rings_prepare(void)
{
    setenv("CCOMM_RECORDER_KEEP", "1", 1);
}

void ccrun_remove_rings(const struct ccrun_job *job)
{
    char comp[256], base[PATH_MAX], dir[PATH_MAX + 260];
    if (cc__cfg()->recorder_keep) return;
    cc__fr_job_component(job->job_id, comp, sizeof(comp));
    if (cc__fr_base_dir(base, sizeof(base)) != 0) return;
    snprintf(dir, sizeof(dir), "%s/%s", base, comp);
    g_failed = 0;
    nftw(dir, check_entry, 8, FTW_PHYS);
    if (!g_failed) nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}
