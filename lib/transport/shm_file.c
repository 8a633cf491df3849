/*
 * shm_file.c - the files in CCOMM_SHM_DIR behind the shared-memory
 * transport's mailboxes (shm.c) and arenas (arena.c), made and mapped in
 * one place so that both keep every check (docs/security.md):
 *
 *   create  O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600: never another user's file
 *           or a link planted in a shared directory; the pages are reserved
 *           at once (ftruncate, posix_fallocate) so that a full tmpfs fails
 *           here, not as SIGBUS in the middle of a message or an op;
 *   map     O_NOFOLLOW, and only this user's regular file (cc__fd_own_file:
 *           another user's could be truncated under us), of a size in the
 *           range the caller expects (fstat's size is untrusted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "transport/shm.h"

static int create_excl(const char *path, const char *what)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 || errno != EEXIST) return fd;
    /* The name carries this pid: a crashed earlier run's leftover with the same ids. */
    cc_log_warn(CC_SUBSYS_SHM, "shm: removing stale %s %s", what, path);
    unlink(path);
    return open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
}

cc_status_t cc__shm_file_create(const char *path, size_t len, const char *what, void **map,
                                int *err, int *opened)
{
    *map = MAP_FAILED;
    int fd = create_excl(path, what);
    *opened = fd >= 0;
    if (fd < 0) {
        *err = errno;
        return CC_ERR_SYSTEM;
    }
    int e = ftruncate(fd, (off_t)len) != 0 ? errno : posix_fallocate(fd, 0, (off_t)len);
    /* Filesystems without fallocate still got their size from ftruncate. */
    if (e == 0 || e == EOPNOTSUPP || e == EINVAL)
        *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (*map == MAP_FAILED && e == 0) e = errno;
    close(fd);
    if (*map != MAP_FAILED) return CC_OK;
    unlink(path);
    *err = e;
    return CC_ERR_SYSTEM;
}

cc_status_t cc__shm_file_map(const char *path, size_t min, size_t max, void **map, size_t *len,
                             int *err, char *why, size_t whylen)
{
    *map = MAP_FAILED;
    why[0] = '\0';
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        *err = errno;
        return CC_ERR_SYSTEM;
    }
    if (cc__fd_own_file(fd, path, why, whylen) != 0) {
        close(fd);
        return CC_ERR_PROTOCOL;
    }
    struct stat sb;
    cc_status_t st = CC_ERR_SYSTEM;
    if (fstat(fd, &sb) != 0) {
        *err = errno;
    } else if (sb.st_size < 0 || (uint64_t)sb.st_size < min || (uint64_t)sb.st_size > max) {
        snprintf(why, whylen, "%s has %lld bytes, not %zu..%zu", path, (long long)sb.st_size, min,
                 max);
        st = CC_ERR_PROTOCOL;
    } else {
        *map = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        *err = errno;
        if (*map != MAP_FAILED) {
            *len = (size_t)sb.st_size;
            st = CC_OK;
        }
    }
    close(fd);
    return st;
}
