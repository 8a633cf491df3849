/* paths.h - file names of rings and dumps (internal to lib/recorder). */
#ifndef CC_RECORDER_PATHS_H
#define CC_RECORDER_PATHS_H

#include <stddef.h>

#include "ccomm/status.h"

/*
 * Copy a job id into `out` as a safe file name component: characters other
 * than [A-Za-z0-9._-] become '_', "", "." and ".." become "nojob".
 */
void cc__fr_job_component(const char *job_id, char *out, size_t cap);

/*
 * CCOMM_RECORDER_DIR with "%u" replaced by this user's uid (the default,
 * /dev/shm/ccomm-%u, gives each user a directory of their own) and "%%" by
 * '%'. 0, or -1 when the result does not fit in `cap`.
 */
int cc__fr_base_dir(char *out, size_t cap);

#endif /* CC_RECORDER_PATHS_H */
