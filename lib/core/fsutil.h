/* fsutil.h - small file-system helpers (internal). */
#ifndef CC_CORE_FSUTIL_H
#define CC_CORE_FSUTIL_H

#include <stdint.h>

#include "ccomm/status.h"

/* mkdir -p with `mode` for the directories it creates; logs under `subsys`.
 * CC_OK, CC_ERR_INVALID_ARG (empty or too long), CC_ERR_SYSTEM (cannot create,
 * or a non-directory is in the way). */
cc_status_t cc__mkdirs(const char *dir, unsigned mode, uint32_t subsys);

/* mkdir -p of the directory part of `path` (nothing when it has none). */
cc_status_t cc__mkdirs_for(const char *path, unsigned mode, uint32_t subsys);

#endif /* CC_CORE_FSUTIL_H */
