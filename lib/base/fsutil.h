/* fsutil.h - small file-system helpers (internal). */
#ifndef CC_BASE_FSUTIL_H
#define CC_BASE_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/status.h"

/* mkdir -p with `mode` for the directories it creates; logs under `subsys`.
 * CC_OK, CC_ERR_INVALID_ARG (empty or too long), CC_ERR_SYSTEM (cannot create,
 * or a non-directory is in the way). */
cc_status_t cc__mkdirs(const char *dir, unsigned mode, uint32_t subsys);

/* mkdir -p of the directory part of `path` (nothing when it has none). */
cc_status_t cc__mkdirs_for(const char *path, unsigned mode, uint32_t subsys);

/*
 * Whether another local user could put files into `dir`, or swap it for a
 * directory of theirs. 0: `dir` is a directory owned by this user and not
 * writable by group or others; every directory above it (after links) is
 * writable by others only with the sticky bit (/tmp, /dev/shm); no link on
 * the way belongs to another user (root's are trusted). Otherwise -1 and
 * the reason, naming the path and the values, in `why`.
 */
int cc__dir_untrusted(const char *dir, char *why, size_t whylen);

/* mkdir -p with mode 0700, then cc__dir_untrusted: CC_OK, or
 * CC_ERR_INVALID_ARG (bad name, or a directory others control: the error,
 * logged under `subsys`, says which and why) or CC_ERR_SYSTEM. `what` names
 * the setting in messages ("CCOMM_RECORDER_DIR"). */
cc_status_t cc__mkdirs_private(const char *dir, uint32_t subsys, const char *what);

/*
 * Open `path` for writing without trusting what is already there: never
 * through a symbolic link (O_NOFOLLOW); a new file is made with O_EXCL and
 * `mode`; an existing one is used only if it is this user's regular file
 * with a single link (or a character device such as /dev/null, which only
 * root can make), and is then emptied unless `append`. Returns the
 * descriptor (close-on-exec), or -1 with errno set and the reason, naming
 * the path and the values, in `why`. Logs nothing (the logger uses it).
 */
int cc__open_own(const char *path, int append, unsigned mode, char *why, size_t whylen);

/* 0 if the open `fd` is this user's regular file with one link; otherwise -1
 * and the reason in `why` (a mapping of a file another user may truncate
 * would die of SIGBUS). */
int cc__fd_own_file(int fd, const char *path, char *why, size_t whylen);

/* Bytes a user may still allocate in the file system of `dir` (statvfs:
 * f_bavail blocks), or UINT64_MAX when that cannot be known. */
uint64_t cc__space_free(const char *dir);

/* "<dir>: 2.0 MiB free of 64.0 MiB" (or "<dir>: free space unknown") into
 * buf, for messages that say what ran out. Returns buf. */
const char *cc__space_str(const char *dir, char *buf, size_t len);

/* 1536 -> "1.5 KiB" into buf. Returns buf. */
const char *cc__bytes_str(uint64_t n, char *buf, size_t len);

#endif /* CC_BASE_FSUTIL_H */
