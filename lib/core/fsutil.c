/* fsutil.c - small file-system helpers shared by the recorder, clog and dumps. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "log.h"

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
