/*
 * driver.c - a standalone mutation fuzzer for the targets of fuzz.h, used
 * when the build has no libFuzzer (gcc). No coverage feedback: it mutates
 * the seeds (the target's own, and files or directories given) with bit
 * flips, boundary values in 1/4/8-byte words, dictionary tokens, deleted,
 * duplicated and spliced ranges and truncations, and runs each mutant.
 * A crash or a sanitizer report ends the run with the mutant written to
 * -last FILE (if given) for replay: `fuzz_ring FILE`.
 *
 *   fuzz_ring [-seconds S] [-runs N] [-seed N] [-last FILE] [FILE|DIR...]
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fuzz.h"

#define MAX_CORPUS 512
#define MAX_FILE   (4u << 20)

typedef struct corpus {
    uint8_t *buf[MAX_CORPUS];
    size_t len[MAX_CORPUS];
    int n;
} corpus_t;

static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void add_file(corpus_t *c, const char *path)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE ||
        c->n == MAX_CORPUS) {
        if (f) fclose(f);
        return;
    }
    uint8_t *b = malloc((size_t)st.st_size + 1);
    size_t n = b ? fread(b, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!b) return;
    c->buf[c->n] = b;
    c->len[c->n++] = n;
}

static void add_path(corpus_t *c, const char *path, int depth)
{
    struct stat st;
    if (stat(path, &st)) return;
    if (!S_ISDIR(st.st_mode)) {
        add_file(c, path);
        return;
    }
    DIR *d = depth < 4 ? opendir(path) : NULL;
    for (struct dirent *de; d && (de = readdir(d));) {
        char sub[4096];
        if (de->d_name[0] == '.') continue;
        int n = snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(sub)) continue; /* a path too long: not a seed */
        add_path(c, sub, depth + 1);
    }
    if (d) closedir(d);
}

/* An offset to change: a third of the time in the first KiB (headers, the
 * start of a document), a third in the last 4 KiB (a small ring's slots),
 * a third anywhere. */
static size_t where(size_t len)
{
    if (!len) return 0;
    switch (rnd() % 3) {
    case 0: return rnd() % (len < 1024 ? len : 1024);
    case 1: return len - 1 - rnd() % (len < 4096 ? len : 4096);
    default: return rnd() % len;
    }
}

static void put_word(uint8_t *b, size_t len, int width)
{
    static const uint64_t vals[] = {0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 4096, 0x7fffffff,
                                    0x80000000u, 0xffffffffu, 1ull << 24, 1ull << 32, ~0ull,
                                    0x7fffffffffffffffull};
    if (len < (size_t)width) return;
    size_t at = where(len - (size_t)width + 1);
    uint64_t v = vals[rnd() % (sizeof(vals) / sizeof(vals[0]))];
    if (rnd() % 4 == 0) v += rnd() % 16 - 8;
    memcpy(b + at, &v, (size_t)width); /* little-endian: the low bytes */
}

/* One mutation of b[0..*len) (capacity cap). */
static void mutate(uint8_t *b, size_t *len, size_t cap, const corpus_t *c)
{
    size_t n = *len, at = where(n), k;
    const char *tok;
    switch (rnd() % 9) {
    case 0: if (n) b[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
    case 1: if (n) b[at] = (uint8_t)"\x00\x01\x7f\x80\xff\"[{09,:-"[rnd() % 14]; break;
    case 2: put_word(b, n, 4); break;
    case 3: put_word(b, n, 8); break;
    case 4: /* delete a range */
        k = n > at ? rnd() % (n - at) % 64 + 1 : 0;
        if (at + k <= n) memmove(b + at, b + at + k, n - at - k), *len = n - k;
        break;
    case 5: /* duplicate a range */
        k = rnd() % 64 + 1;
        if (n && at + k <= n && n + k <= cap) memmove(b + at + k, b + at, n - at), *len = n + k;
        break;
    case 6: /* a dictionary token */
        k = 0;
        while (fuzz_dictionary[k]) k++;
        tok = k ? fuzz_dictionary[rnd() % k] : NULL;
        if (tok && n + strlen(tok) <= cap && at <= n) {
            memmove(b + at + strlen(tok), b + at, n - at);
            memcpy(b + at, tok, strlen(tok));
            *len = n + strlen(tok);
        }
        break;
    case 7: if (n) *len = rnd() % n; break;
    default: { /* splice another input's bytes in */
        int o = (int)(rnd() % (uint64_t)c->n);
        size_t from = c->len[o] ? rnd() % c->len[o] : 0;
        k = c->len[o] - from < 256 ? c->len[o] - from : 256;
        if (at + k <= n) memcpy(b + at, c->buf[o] + from, k);
    }
    }
}

int main(int argc, char **argv)
{
    static corpus_t c;
    double seconds = 3;
    long runs = -1;
    const char *last = NULL;
    rng = (uint64_t)time(NULL) * 2654435761u | 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "-runs") && i + 1 < argc) runs = atol(argv[++i]);
        else if (!strcmp(argv[i], "-seed") && i + 1 < argc) rng = strtoull(argv[++i], NULL, 0) | 1;
        else if (!strcmp(argv[i], "-last") && i + 1 < argc) last = argv[++i];
        else add_path(&c, argv[i], 0);
    }
    uint64_t seed = rng;
    LLVMFuzzerInitialize(&argc, &argv);
    c.n += fuzz_make_seeds(c.buf + c.n, c.len + c.n, MAX_CORPUS - c.n);
    for (int i = 0; i < c.n; i++) /* the inputs as they are, first */
        LLVMFuzzerTestOneInput(c.buf[i], c.len[i]);
    size_t cap = 0;
    for (int i = 0; i < c.n; i++)
        cap = c.len[i] > cap ? c.len[i] : cap;
    cap = cap * 2 + 4096;
    uint8_t *b = malloc(cap);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long done = 0;
    for (; b && c.n && (runs < 0 || done < runs); done++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (runs < 0 && (double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > seconds) break;
        int o = (int)(rnd() % (uint64_t)c.n);
        size_t len = c.len[o];
        memcpy(b, c.buf[o], len);
        for (int m = (int)(rnd() % 8) + 1; m > 0; m--)
            mutate(b, &len, cap, &c);
        if (last) {
            FILE *f = fopen(last, "wb");
            if (f) fwrite(b, 1, len, f), fclose(f);
        }
        struct timespec a, z;
        clock_gettime(CLOCK_MONOTONIC, &a);
        LLVMFuzzerTestOneInput(b, len);
        clock_gettime(CLOCK_MONOTONIC, &z);
        double took = (double)(z.tv_sec - a.tv_sec) + (z.tv_nsec - a.tv_nsec) / 1e9;
        if (took > 1.0) /* huge claims in a small file should cost little: say so */
            printf("%s: mutant %ld took %.1f s (replay: -seed 0x%llx -runs %ld -last FILE)\n",
                   argv[0], done, took, (unsigned long long)seed, done + 1);
    }
    printf("%s: %ld mutants of %d inputs, seed 0x%llx: no crash\n", argv[0], done, c.n,
           (unsigned long long)seed);
    for (int i = 0; i < c.n; i++)
        free(c.buf[i]);
    free(b);
    return 0;
}
