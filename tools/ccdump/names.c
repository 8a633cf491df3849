/*
 * names.c - PyTorch's dump file names, <prefix><global rank>
 * (nccl_trace_rank_3, comm_lib_trace_rank_3): the rank in a name, and
 * whether a name has that shape at all (for inferring the prefix, as
 * PyTorch's analyzer does when it is not given one).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

/* The digits in s[0..n) as a rank, or -1. */
static int32_t digits_rank(const char *s, size_t n)
{
    if (!n || n > 8) return -1;
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i])) return -1;
    long v = strtol(s, NULL, 10);
    return v < CCD_MAX_WORLD ? (int32_t)v : -1;
}

/* The name's length without a ".json" or ".pkl" extension. */
static size_t stem_len(const char *name)
{
    size_t n = strlen(name);
    if (n > 5 && !strcmp(name + n - 5, ".json")) return n - 5;
    if (n > 4 && !strcmp(name + n - 4, ".pkl")) return n - 4;
    return n;
}

int32_t ccd_name_rank(const char *name, const char *prefix)
{
    size_t n = stem_len(name);
    const char *at = prefix && *prefix ? strstr(name, prefix) : NULL;
    if (at && (size_t)(at - name) + strlen(prefix) <= n) {
        const char *r = at + strlen(prefix);
        return digits_rank(r, n - (size_t)(r - name));
    }
    size_t d = 0;
    while (d < n && d < 8 && isdigit((unsigned char)name[n - 1 - d]))
        d++;
    return digits_rank(name + n - d, d);
}

size_t ccd_bare_prefix(const char *name)
{
    size_t n = strlen(name), d = 0;
    while (d < n && isdigit((unsigned char)name[n - 1 - d]))
        d++;
    if (!d || d == n || d > 8) return 0;
    for (size_t i = 0; i < n - d; i++)
        if (!isalnum((unsigned char)name[i]) && name[i] != '_' && name[i] != '-') return 0;
    return n - d;
}
