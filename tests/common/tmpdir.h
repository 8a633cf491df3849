/*
 * tmpdir.h - a test's own directory under /tmp: made, named into, read
 * back, removed (also across the mount points a test made in it).
 */
#ifndef CC_TEST_TMPDIR_H
#define CC_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char td_dir[64]; /* "" until td_make */

static inline int td_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* /tmp/<prefix>-XXXXXX with `mode`; 0 or -1. */
static inline int td_make(const char *prefix, unsigned mode)
{
    snprintf(td_dir, sizeof(td_dir), "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(td_dir)) return -1;
    return chmod(td_dir, (mode_t)mode);
}

static inline void td_remove(void)
{
    if (td_dir[0]) nftw(td_dir, td_rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* "<dir>/<name>", in one of 8 rotating buffers. */
static inline const char *td_at(const char *name)
{
    static char buf[8][256];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 256, "%s/%s", td_dir, name);
    return b;
}

/* Whether the file's first 64 KiB hold `needle`. */
static inline int td_file_has(const char *path, const char *needle)
{
    static char buf[1 << 16];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

#endif /* CC_TEST_TMPDIR_H */
