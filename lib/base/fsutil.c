/*
 * fsutil.c - small file-system helpers shared by the recorder, clog, dumps
 * and the logger.
 *
 * Rings, dumps and logs often live in directories every local user can
 * write (/dev/shm, /tmp). The helpers here treat what is already there as
 * possibly planted by another user: directories must be this user's and
 * closed to others, files are opened without following links and are only
 * reused when they are this user's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/log.h"

cc_status_t cc__mkdirs(const char *dir, unsigned mode, uint32_t subsys)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(buf)) {
        cc_log_error(subsys, "directory name \"%.64s\" is empty or too long",
                     dir);
        return CC_ERR_INVALID_ARG;
    }
    memcpy(buf, dir, n + 1);
    /* Each prefix ending at a '/', then the whole path. */
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char keep = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, (mode_t)mode) != 0 && errno != EEXIST) {
            cc_log_error(subsys, "cannot create directory %s: %s", buf,
                         strerror(errno));
            return CC_ERR_SYSTEM;
        }
        buf[i] = keep;
    }
    /* EEXIST above may have been a file of that name. */
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cc_log_error(subsys, "%s is not a directory", dir);
        return CC_ERR_SYSTEM;
    }
    return CC_OK;
}

cc_status_t cc__mkdirs_for(const char *path, unsigned mode, uint32_t subsys)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path) return CC_OK;
    char dir[PATH_MAX];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof(dir)) return CC_ERR_INVALID_ARG;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return cc__mkdirs(dir, mode, subsys);
}

static int say(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Always -1: the callers return it. */
static int say(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why && len) vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return -1;
}

/* Only root and this user may own a link on the way: its owner can point it
 * elsewhere at any time. Each prefix of `dir` as written is looked at. */
static int links_untrusted(const char *dir, uid_t me, char *why, size_t len)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char keep = buf[i];
        buf[i] = '\0';
        struct stat st;
        if (lstat(buf, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid != me && st.st_uid != 0)
            return say(why, len, "%s is a symbolic link owned by uid %u, not by this user (uid %u)",
                       buf, (unsigned)st.st_uid, (unsigned)me);
        buf[i] = keep;
    }
    return 0;
}

/* Anyone may rename entries of a world-writable directory without the sticky
 * bit, so such a directory above ours could swap ours for theirs. */
static int parents_untrusted(char *real, const char *dir, char *why, size_t len)
{
    for (char *slash = strrchr(real, '/'); slash; slash = strrchr(real, '/')) {
        if (slash == real)
            slash[1] = '\0';
        else
            *slash = '\0';
        struct stat st;
        if (stat(real, &st) != 0)
            return say(why, len, "cannot inspect %s above %s: %s", real, dir, strerror(errno));
        if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
            return say(why, len,
                       "%s above %s is writable by every user and has no sticky bit (mode %04o)",
                       real, dir, (unsigned)(st.st_mode & 07777));
        if (slash == real) break;
    }
    return 0;
}

int cc__dir_untrusted(const char *dir, char *why, size_t len)
{
    uid_t me = geteuid();
    if (!dir || !*dir || strlen(dir) >= PATH_MAX)
        return say(why, len, "directory name is empty or too long");
    if (links_untrusted(dir, me, why, len)) return -1;
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(dir, real) || stat(real, &st) != 0)
        return say(why, len, "cannot inspect %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return say(why, len, "%s is not a directory", dir);
    if (st.st_uid != me)
        return say(why, len, "%s belongs to uid %u, not to this user (uid %u)", dir,
                   (unsigned)st.st_uid, (unsigned)me);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return say(why, len,
                   "%s is writable by other users (mode %04o; chmod go-w, or use a new directory)",
                   dir, (unsigned)(st.st_mode & 07777));
    return parents_untrusted(real, dir, why, len);
}

cc_status_t cc__mkdirs_private(const char *dir, uint32_t subsys, const char *what)
{
    CC_CHECK(cc__mkdirs(dir, 0700, subsys));
    char why[PATH_MAX + 160];
    if (cc__dir_untrusted(dir, why, sizeof(why)) != 0) {
        cc_log_error(subsys, "%s: refusing directory %s: %s", what, dir, why);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

int cc__fd_own_file(int fd, const char *path, char *why, size_t len)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return say(why, len, "cannot inspect %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return say(why, len, "%s is not a regular file", path);
    if (st.st_uid != geteuid())
        return say(why, len, "%s belongs to uid %u, not to this user (uid %u)", path,
                   (unsigned)st.st_uid, (unsigned)geteuid());
    /* A second name may be in a directory someone else controls. */
    if (st.st_nlink != 1)
        return say(why, len, "%s has %lu hard links (expected 1)", path,
                   (unsigned long)st.st_nlink);
    return 0;
}

/* An existing file: ours, or a device (only root makes those). */
static int open_existing(const char *path, int append, char *why, size_t len)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW | (append ? O_APPEND : 0));
    if (fd < 0) {
        int e = errno;
        /* Linux says ELOOP for a link under O_NOFOLLOW: say what it means. */
        say(why, len, e == ELOOP ? "%s is a symbolic link (not followed)" : "cannot open %s: %s",
            path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) return fd;
    if (cc__fd_own_file(fd, path, why, len) != 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    /* Emptied only now that it is known to be ours (O_TRUNC would have cut anyone's). */
    if (!append && ftruncate(fd, 0) != 0) {
        int e = errno;
        say(why, len, "cannot empty %s: %s", path, strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int cc__open_own(const char *path, int append, unsigned mode, char *why, size_t len)
{
    if (!path || !*path) {
        errno = EINVAL;
        return say(why, len, "file name is empty");
    }
    int fd = open(path,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW |
                      (append ? O_APPEND : 0),
                  (mode_t)mode);
    if (fd >= 0) return fd;
    if (errno != EEXIST) {
        int e = errno;
        say(why, len, "cannot create %s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    return open_existing(path, append, why, len);
}

uint64_t cc__space_free(const char *dir)
{
    struct statvfs v;
    if (statvfs(dir, &v) != 0 || v.f_frsize == 0) return UINT64_MAX;
    return (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
}

const char *cc__bytes_str(uint64_t n, char *buf, size_t len)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)n);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
    return buf;
}

const char *cc__space_str(const char *dir, char *buf, size_t len)
{
    struct statvfs v;
    char a[32], b[32];
    if (statvfs(dir, &v) != 0 || v.f_frsize == 0) {
        snprintf(buf, len, "%s: free space unknown", dir);
        return buf;
    }
    snprintf(buf, len, "%s: %s free of %s", dir,
             cc__bytes_str((uint64_t)v.f_bavail * v.f_frsize, a, sizeof(a)),
             cc__bytes_str((uint64_t)v.f_blocks * v.f_frsize, b, sizeof(b)));
    return buf;
}
