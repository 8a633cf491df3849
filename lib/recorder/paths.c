/* paths.c - file names of rings and dumps. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "paths.h"

/* The job id comes from the environment or the store: it must not be able
 * to climb out of the directory ("../..") or make one ("a/b"). */
void cc__fr_job_component(const char *job_id, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *p = job_id ? job_id : ""; *p && n + 1 < cap; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[n++] = ok ? c : '_';
    }
    out[n] = '\0';
    if (!strcmp(out, "") || !strcmp(out, ".") || !strcmp(out, ".."))
        snprintf(out, cap, "%s", "nojob");
}

cc_status_t cc__fr_mkdirs(const char *dir)
{
    char buf[PATH_MAX];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(buf)) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: directory name \"%.64s\" is empty or too long",
                     dir);
        return CC_ERR_INVALID_ARG;
    }
    memcpy(buf, dir, n + 1);
    /* Each prefix ending at a '/', then the whole path. */
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char keep = buf[i];
        buf[i] = '\0';
        /* 0700: rings and dumps show what a job ran, for its user only. */
        if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
            cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot create directory %s: %s", buf,
                         strerror(errno));
            return CC_ERR_SYSTEM;
        }
        buf[i] = keep;
    }
    /* EEXIST above may have been a file of that name. */
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: %s is not a directory", dir);
        return CC_ERR_SYSTEM;
    }
    return CC_OK;
}
