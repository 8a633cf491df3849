/*
 * test_cclog_suite.c - cclog's data-driven suite (tests/data/cclog):
 *
 *   valid/NAME.log      parses without one error; the canonical dump of its
 *                       lines equals valid/NAME.parsed
 *   invalid/NAME.log    the errors reported equal invalid/NAME.errors
 *   cli/NAME.cmd        the arguments of one cclog run (from the data
 *                       directory); stdout, stderr and the exit status equal
 *                       cli/NAME.out, cli/NAME.err (empty when absent) and
 *                       cli/NAME.rc
 *
 * argv[1] is the data directory. With argv[2] = "--update" the expected
 * files are written instead (review them before committing).
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
static int g_update;

/* The whole of a file, or NULL (missing). */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    do {
        if (n + 4096 + 1 > cap) buf = realloc(buf, cap = (n + 4096 + 1) * 2);
        r = fread(buf + n, 1, 4096, f);
        n += r;
    } while (r > 0);
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

static void spew(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* Compare got with the file `want` (or write it with --update); print both on a difference. */
static int expect(const char *want_path, const char *got, size_t len, int optional)
{
    if (g_update) {
        if (len || !optional)
            spew(want_path, got, len);
        else
            unlink(want_path);
        return 0;
    }
    char *want = slurp(want_path, NULL);
    int same = want ? !strcmp(want, got) : (optional && len == 0);
    if (!same)
        fprintf(stderr, "--- %s differs ---\nwant:\n%s\ngot:\n%s\n", want_path,
                want ? want : "(no file)", got);
    free(want);
    return same ? 0 : -1;
}

static int cmpstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the files in dir ending in ext, sorted. */
static int list(const char *dir, const char *ext, char ***names)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *de;
    int n = 0;
    *names = NULL;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name), e = strlen(ext);
        if (l <= e || strcmp(de->d_name + l - e, ext)) continue;
        *names = realloc(*names, (size_t)(n + 1) * sizeof(char *));
        (*names)[n++] = strndup(de->d_name, l - e);
    }
    closedir(d);
    qsort(*names, (size_t)n, sizeof(char *), cmpstr);
    return n;
}

/* Parse one file through cl_log_feed; dump good lines to dump, errors to errs. */
static void run_parse(const char *path, FILE *dump, FILE *errs)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    cl_log_t *log = cl_log_new(path, errs, 1);
    char *buf = NULL, *copy;
    size_t cap = 0;
    long n;
    int nl, toolong;
    while ((n = cl_read_line(f, &buf, &cap, &nl, &toolong)) >= 0) {
        const cl_entry_t *e;
        copy = malloc((size_t)n + 1);
        memcpy(copy, buf, (size_t)n + 1);
        int had = log->have_header;
        if (cl_log_feed(log, buf, (size_t)n, !nl, &e) < 0) {
            free(copy);
            break;
        }
        cl_line_t l;
        char err[8];
        if ((e || (!had && log->have_header)) && !cl_parse_line(copy, &l, err, sizeof(err)))
            cl_line_dump(&l, dump);
        free(copy);
    }
    if (!log->have_header && !log->unusable) fprintf(errs, "%s: not a clog file: empty\n", path);
    free(buf);
    fclose(f);
    cl_log_free(log);
}

static void test_valid(void **state)
{
    (void)state;
    char **names;
    int n = list("valid", ".log", &names), bad = 0;
    assert_true(n >= 5);
    for (int i = 0; i < n; i++) {
        char path[512], want[512], *out = NULL, *err = NULL;
        size_t olen = 0, elen = 0;
        FILE *o = open_memstream(&out, &olen), *e = open_memstream(&err, &elen);
        snprintf(path, sizeof(path), "valid/%s.log", names[i]);
        run_parse(path, o, e);
        fclose(o);
        fclose(e);
        if (elen) fprintf(stderr, "%s: unexpected errors:\n%s", path, err);
        snprintf(want, sizeof(want), "valid/%s.parsed", names[i]);
        bad += elen != 0 || expect(want, out, olen, 0) != 0;
        free(out);
        free(err);
        free(names[i]);
    }
    free(names);
    assert_int_equal(bad, 0);
}

static void test_invalid(void **state)
{
    (void)state;
    char **names;
    int n = list("invalid", ".log", &names), bad = 0;
    assert_true(n >= 5);
    for (int i = 0; i < n; i++) {
        char path[512], want[512], *out = NULL, *err = NULL;
        size_t olen = 0, elen = 0;
        FILE *o = open_memstream(&out, &olen), *e = open_memstream(&err, &elen);
        snprintf(path, sizeof(path), "invalid/%s.log", names[i]);
        run_parse(path, o, e);
        fclose(o);
        fclose(e);
        if (!elen) fprintf(stderr, "%s: no error reported\n", path);
        snprintf(want, sizeof(want), "invalid/%s.errors", names[i]);
        bad += elen == 0 || expect(want, err, elen, 0) != 0;
        free(out);
        free(err);
        free(names[i]);
    }
    free(names);
    assert_int_equal(bad, 0);
}

/* Split a .cmd line into argv (spaces only; the data has no quoting). */
static int split_args(char *line, char **argv, int max)
{
    int argc = 0;
    argv[argc++] = "cclog";
    for (char *save = NULL, *t = strtok_r(line, " \n", &save); t && argc < max - 1;
         t = strtok_r(NULL, " \n", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    return argc;
}

static int run_cli(const char *name)
{
    char path[512], *cmd, *argv[64], *out = NULL, *err = NULL, rcs[16];
    size_t olen = 0, elen = 0;
    snprintf(path, sizeof(path), "cli/%s.cmd", name);
    cmd = slurp(path, NULL);
    assert_non_null(cmd);
    int argc = split_args(cmd, argv, 64);
    FILE *o = open_memstream(&out, &olen), *e = open_memstream(&err, &elen);
    int rc = cclog_main(argc, argv, o, e);
    fclose(o);
    fclose(e);
    int bad = 0;
    snprintf(path, sizeof(path), "cli/%s.out", name);
    bad |= expect(path, out, olen, 1);
    snprintf(path, sizeof(path), "cli/%s.err", name);
    bad |= expect(path, err, elen, 1);
    snprintf(path, sizeof(path), "cli/%s.rc", name);
    snprintf(rcs, sizeof(rcs), "%d\n", rc);
    bad |= expect(path, rcs, strlen(rcs), 0);
    free(out);
    free(err);
    free(cmd);
    return bad;
}

static void test_cli(void **state)
{
    (void)state;
    char **names;
    int n = list("cli", ".cmd", &names), bad = 0;
    assert_true(n >= 10);
    for (int i = 0; i < n; i++) {
        if (run_cli(names[i])) {
            fprintf(stderr, "cli case %s failed\n", names[i]);
            bad++;
        }
        free(names[i]);
    }
    free(names);
    assert_int_equal(bad, 0);
}

int main(int argc, char **argv)
{
    if (argc < 2 || chdir(argv[1]) != 0) {
        fprintf(stderr, "usage: %s DATA_DIR [--update] (the data directory is missing)\n", argv[0]);
        return 1;
    }
    g_dir = argv[1];
    g_update = argc > 2 && !strcmp(argv[2], "--update");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
