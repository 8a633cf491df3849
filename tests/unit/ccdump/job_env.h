/*
 * job_env.h - the real 4-rank jobs of the ccdump tests (forked ranks, the
 * harness of tests/common/mp.h): rings in <dir>/rings, dumps in <dir>/dumps,
 * a short heartbeat, no log.
 */
#ifndef CCDUMP_TEST_JOB_ENV_H
#define CCDUMP_TEST_JOB_ENV_H

#include "mp.h"

/* Runs fn on 4 ranks as job `name` (dir is also each rank's arg); the ranks that failed. */
int ccd_test_job(cc_test_rank_fn fn, const char *dir, const char *name);
/* The same with one more "NAME=value" in the ranks' environment (NULL: none). */
int ccd_test_job_env(cc_test_rank_fn fn, const char *dir, const char *name, const char *extra);

/*
 * ccdump in-process: argc counts argv[0] ("ccdump", added here) too; *out and
 * *err (err may be NULL) are new strings. With CCD_TEST_PRINT set in the
 * environment, each command and what it printed go to stdout (the real
 * output docs/ccdump.md shows).
 */
int ccd_test_run(char **out, char **err, int argc, ...);

#endif /* CCDUMP_TEST_JOB_ENV_H */
