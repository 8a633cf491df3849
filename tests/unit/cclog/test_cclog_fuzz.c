/*
 * test_cclog_fuzz.c - random mutations of the valid clog files fed to every
 * cclog command in-process. Nothing is asserted about the output: the test
 * is that nothing crashes, leaks or reads out of bounds (run it under the
 * ASan build), and that exit statuses stay 0, 1 or 2.
 *
 * argv[1] is tests/data/cclog; argv[2], if given, the number of cases.
 * The generator is seeded, so a failure reproduces; the case being run is
 * in /tmp/ccomm-cclog-fuzz.<pid>.log until the test ends.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cclog.h"

static const char *g_dir;
static int g_cases = 1500;
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static size_t below(size_t n)
{
    return n ? (size_t)(rnd() % n) : 0;
}

struct buf {
    char *p;
    size_t n;
};

static struct buf seeds[64];
static int nseeds;

static void load_seeds(void)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/valid", g_dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)) && nseeds < 64) {
        size_t l = strlen(de->d_name);
        if (l < 5 || strcmp(de->d_name + l - 4, ".log")) continue;
        snprintf(path, sizeof(path), "%s/valid/%s", g_dir, de->d_name);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        struct buf *b = &seeds[nseeds++];
        b->p = malloc(1 << 16);
        b->n = fread(b->p, 1, 1 << 16, f);
        fclose(f);
    }
    closedir(d);
    assert_true(nseeds >= 5);
}

/* Splice `n` bytes at `at` out of b and put `ins` (m bytes) there. */
static void splice(struct buf *b, size_t at, size_t n, const char *ins, size_t m)
{
    char *p = malloc(b->n - n + m + 1);
    memcpy(p, b->p, at);
    memcpy(p + at, ins, m);
    memcpy(p + at + m, b->p + at + n, b->n - at - n);
    free(b->p);
    b->p = p;
    b->n = b->n - n + m;
}

/* Bits of clog syntax and hostile values that mutations insert. */
static const char *const tokens[] = {
    "|",
    "%",
    "%0",
    "%00",
    "%7C",
    "\n",
    "",
    "C0",
    "C4294967296",
    "C99999",
    "|+",
    "-",
    "99999999999999999999",
    "+999999999999.999999",
    "=",
    "|sig|",
    "|E|",
    "|A|",
    "V|1|base_timestamp=1.000000|rank=0|pid=1|host=h|events=QSEWA\n",
    "\xff",
    "...",
    "0-",
    "DROP|count=1|total=1|+0.000001\n",
    "split|parent=?|child=x|parent_id=1|child_id=2|"};

static void mutate(struct buf *b)
{
    size_t at = below(b->n + 1);
    switch (below(7)) {
    case 0: /* one byte, any value */
        if (b->n) b->p[below(b->n)] = (char)rnd();
        break;
    case 1: { /* a token */
        const char *t = tokens[below(sizeof(tokens) / sizeof(tokens[0]))];
        splice(b, at, 0, t, strlen(t));
        break;
    }
    case 2: /* delete a span */
        splice(b, at, below(b->n - at + 1) % 40, "", 0);
        break;
    case 3: { /* duplicate a span */
        size_t n = below(b->n - at + 1) % 200;
        char *copy = malloc(n + 1);
        memcpy(copy, b->p + at, n);
        splice(b, below(b->n + 1), 0, copy, n);
        free(copy);
        break;
    }
    case 4: /* cut the file short */
        b->n = at;
        break;
    case 5: { /* a piece of another seed */
        const struct buf *s = &seeds[below((size_t)nseeds)];
        size_t from = below(s->n + 1), n = below(s->n - from + 1) % 300;
        splice(b, at, 0, s->p + from, n);
        break;
    }
    default: /* a digit changed */
        for (size_t k = 0; k < b->n; k++) {
            size_t j = (at + k) % (b->n ? b->n : 1);
            if (b->p[j] >= '0' && b->p[j] <= '9') {
                b->p[j] = (char)('0' + below(10));
                break;
            }
        }
    }
}

static int run(FILE *null, int argc, char **argv)
{
    int rc = cclog_main(argc, argv, null, null);
    assert_true(rc >= 0 && rc <= 2);
    return rc;
}

static void test_fuzz(void **state)
{
    (void)state;
    load_seeds();
    char path[256], path2[256];
    snprintf(path, sizeof(path), "/tmp/ccomm-cclog-fuzz.%d.log", (int)getpid());
    snprintf(path2, sizeof(path2), "/tmp/ccomm-cclog-fuzz.%d.2.log", (int)getpid());
    FILE *null = fopen("/dev/null", "w");
    assert_non_null(null);
    int rcs[3] = {0};
    for (int i = 0; i < g_cases; i++) {
        const struct buf *s = &seeds[below((size_t)nseeds)];
        struct buf b = {malloc(s->n + 1), s->n};
        memcpy(b.p, s->p, s->n);
        for (int m = 1 + (int)below(4); m-- > 0;)
            mutate(&b);
        FILE *f = fopen(path, "wb");
        fwrite(b.p, 1, b.n, f);
        fclose(f);
        f = fopen(path2, "wb"); /* a second rank: the unmutated seed */
        fwrite(s->p, 1, s->n, f);
        fclose(f);
        free(b.p);
        char *merge[] = {"cclog", "merge", path, path2, NULL};
        char *filter[] = {"cclog",   "filter",       path,    path2,     "--comm",
                          "world",   "--event",      "Q,E,A", "--since", "+0.001",
                          "--until", "1714234567.5", "--sig", "1",       NULL};
        char *stats[] = {"cclog", "stats", path, path2, NULL};
        char *check[] = {"cclog", "check", path, path2, NULL};
        char *follow[] = {"cclog", "follow", "--no-wait", path, NULL};
        run(null, 4, merge);
        run(null, 14, filter);
        run(null, 4, stats);
        rcs[run(null, 4, check)]++;
        run(null, 4, follow);
    }
    fclose(null);
    unlink(path);
    unlink(path2);
    /* The mutations must reach every outcome, or they test too little. */
    print_message("check exit statuses over %d cases: 0: %d, 1: %d, 2: %d\n", g_cases, rcs[0],
                  rcs[1], rcs[2]);
    assert_true(rcs[1] > 0 && rcs[2] > 0);
    for (int i = 0; i < nseeds; i++)
        free(seeds[i].p);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s DATA_DIR [CASES]\n", argv[0]);
        return 1;
    }
    g_dir = argv[1];
    if (argc > 2) g_cases = atoi(argv[2]);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fuzz)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
