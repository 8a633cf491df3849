/* tutil.h - shared bits of the transport tests: payload patterns, a private shm dir. */
#ifndef CC_TEST_TUTIL_H
#define CC_TEST_TUTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"

/* A byte that depends on sender, receiver, message and position. */
static inline unsigned char tu_byte(int src, int dst, uint32_t msg, size_t i)
{
    uint64_t x = (uint64_t)src * 0x9e3779b97f4a7c15ull ^ (uint64_t)dst * 0xc2b2ae3d27d4eb4full ^
                 (uint64_t)msg * 0x165667b19e3779f9ull ^ (uint64_t)i * 0x27d4eb2f165667c5ull;
    return (unsigned char)(x >> 56);
}

static inline void tu_fill(unsigned char *p, size_t n, int src, int dst, uint32_t msg)
{
    for (size_t i = 0; i < n; i++)
        p[i] = tu_byte(src, dst, msg, i);
}

/* Index of the first wrong byte, or -1. */
static inline long tu_check(const unsigned char *p, size_t n, int src, int dst, uint32_t msg)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != tu_byte(src, dst, msg, i)) return (long)i;
    return -1;
}

static char tu_dir[64];

/* Segments of this binary go to a private directory, so leftovers can be counted. */
static inline int tu_setup(void **state)
{
    (void)state;
    snprintf(tu_dir, sizeof(tu_dir), "/dev/shm/cctest-XXXXXX");
    if (!mkdtemp(tu_dir)) return -1;
    setenv("CCOMM_SHM_DIR", tu_dir, 1);
    cc__config_reload();
    return 0;
}

/* Entries in the private shm dir (segments left behind). */
static inline int tu_leftovers(void)
{
    int n = 0;
    DIR *d = opendir(tu_dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') {
            fprintf(stderr, "leftover segment: %s/%s\n", tu_dir, e->d_name);
            n++;
        }
    if (d) closedir(d);
    return n;
}

static inline int tu_teardown(void **state)
{
    (void)state;
    int left = tu_leftovers();
    rmdir(tu_dir);
    return left ? -1 : 0;
}

#endif /* CC_TEST_TUTIL_H */
