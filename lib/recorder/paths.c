/* paths.c - file names of rings and dumps. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "recorder/paths.h"

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

int cc__fr_base_dir(char *out, size_t cap)
{
    const char *pat = cc__cfg()->recorder_dir;
    size_t o = 0;
    for (const char *p = pat; *p; p++) {
        char num[24];
        const char *piece = num;
        if (p[0] == '%' && p[1] == 'u') {
            snprintf(num, sizeof(num), "%u", (unsigned)geteuid());
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            piece = "%";
            p++;
        } else {
            num[0] = *p;
            num[1] = '\0';
        }
        size_t n = strlen(piece);
        if (o + n >= cap) return -1;
        memcpy(out + o, piece, n);
        o += n;
    }
    if (cap == 0) return -1;
    out[o] = '\0';
    return 0;
}
