/* paths.c - file names of rings and dumps. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

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

