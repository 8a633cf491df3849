/*
 * test_ccdump_suite.c - ccdump on prepared inputs (tests/data/ccdump):
 *  - valid/<case>/: flight recorder dumps (PyTorch's format here) and an
 *    `expect` file: the exit status, the verdict's kind, culprits and op,
 *    and notes the report must carry;
 *  - invalid/: hostile or broken files, each with its exit status and the
 *    message that must explain it (invalid/EXPECT);
 *  - ring files made here with the recorder's writer, then damaged
 *    (truncated, another version, absurd sizes, a corrupt slot, table counts
 *    beyond their capacity): a clear error or a note, never a crash;
 *  - the command line: --help of every command, bad options, helpers.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccdump.h"
#include "model.h"
#include "recorder/ring.h"

static const char *data_dir;
static char tmp[128];

/* Run ccdump with these arguments; its stdout and stderr into *out / *err (new). */
static int run(char **out, char **err, int argc, ...)
{
    char *owned[16], *argv[17];
    va_list ap;
    va_start(ap, argc);
    owned[0] = strdup("ccdump");
    for (int i = 1; i < argc && i < 16; i++)
        owned[i] = strdup(va_arg(ap, const char *));
    va_end(ap);
    memcpy(argv, owned, (size_t)argc * sizeof(char *));
    argv[argc] = NULL;
    size_t lo = 0, le = 0;
    FILE *fo = open_memstream(out, &lo), *fe = open_memstream(err, &le);
    int rc = ccdump_main(argc, argv, fo, fe);
    fclose(fo);
    fclose(fe);
    for (int i = 0; i < argc; i++)
        free(owned[i]);
    return rc;
}

/* ---- valid cases ---------------------------------------------------------- */

static void check_expect(const char *dir, json_t *report, int status)
{
    char path[1024], line[300];
    snprintf(path, sizeof(path), "%s/expect", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    json_t *v = json_object_get(report, "verdict");
    char *notes = json_dumps(json_object_get(json_object_get(report, "job"), "notes"), 0);
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *val = strchr(line, ' ');
        val = val ? val + 1 : line + strlen(line);
        if (!strncmp(line, "exit ", 5)) assert_int_equal(status, atoi(val));
        if (!strncmp(line, "kind ", 5))
            assert_string_equal(json_string_value(json_object_get(v, "kind")), val);
        if (!strncmp(line, "op ", 3)) assert_string_equal(json_string_value(json_object_get(v, "op")), val);
        if (!strncmp(line, "note ", 5) && !strstr(notes, val)) fail_msg("%s: no note \"%s\" in %s", dir, val, notes);
        if (!strncmp(line, "culprits", 8)) {
            char got[200] = "";
            size_t i;
            json_t *c;
            json_array_foreach(json_object_get(v, "culprits"), i, c)
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%lld", i ? "," : "",
                         (long long)json_integer_value(c));
            if (strcmp(got, val)) fail_msg("%s: culprits %s, expected %s", dir, got, val);
        }
    }
    free(notes);
    fclose(f);
}

static void test_valid_cases(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof(path), "%s/valid", data_dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int cases = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.') continue;
        char dir[600], *out = NULL, *err = NULL;
        snprintf(dir, sizeof(dir), "%s/%s", path, de->d_name);
        int rc = run(&out, &err, 4, "diagnose", "--json", dir);
        json_error_t je;
        json_t *report = json_loads(out, 0, &je);
        if (!report) fail_msg("%s: not JSON (%s): %s", dir, je.text, err);
        check_expect(dir, report, rc);
        json_decref(report);
        free(out);
        free(err);
        cases++;
    }
    closedir(d);
    assert_true(cases >= 6);
}

/* ---- invalid files ------------------------------------------------------------ */

static void test_invalid_files(void **state)
{
    (void)state;
    char path[512], line[400];
    snprintf(path, sizeof(path), "%s/invalid/EXPECT", data_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        char name[128], text[256];
        int want;
        if (line[0] == '#' || sscanf(line, "%127s %d %255[^\n]", name, &want, text) != 3) continue;
        char file[700], *out = NULL, *err = NULL;
        snprintf(file, sizeof(file), "%s/invalid/%s", data_dir, name);
        int rc = run(&out, &err, 3, "diagnose", file);
        if (rc != want) fail_msg("%s: exit %d, expected %d (%s)", name, rc, want, err);
        if (!strstr(err, text) && !strstr(out, text)) fail_msg("%s: no \"%s\" in: %s%s", name, text, err, out);
        free(out);
        free(err);
        n++;
    }
    fclose(f);
    assert_true(n >= 12);
}

/* ---- rings, made and damaged ---------------------------------------------- */

/* A closed ring of rank `rank` of `world`: 6 allreduces on world, all completed. */
static void make_ring(const char *path, int rank, int world)
{
    cc__fr_ring_params_t p = {.capacity = 8, .rank = rank, .world_size = world, .host = "h", .job_id = "j"};
    cc__fr_ring_t *r = NULL;
    assert_int_equal(cc__fr_ring_create(path, &p, &r), CC_OK);
    cc__fr_comm_t *c = &r->comms[0];
    c->comm_id = 77;
    snprintf(c->name, sizeof(c->name), "world");
    c->size = world, c->rank = rank, c->ranks_count = (uint32_t)world;
    r->ranks[0] = 0, r->ranks[1] = 1;
    r->hdr->rank_used = (uint64_t)world, r->hdr->comm_count = 1;
    for (int i = 1; i <= 6; i++) {
        cc__fr_entry_t e = {0};
        e.comm_id = 77, e.coll_seq = (uint64_t)i, e.op_id = (uint64_t)i, e.type = CC_OP_ALLREDUCE;
        e.dtype = CC_FLOAT32, e.redop = CC_SUM, e.in_count = e.out_count = 4, e.bytes = 16;
        e.rank = rank, e.size = world, e.root = e.peer = -1, e.state = CC__FR_SCHEDULED;
        e.t_enqueue_ns = 1000000000ull + (uint64_t)i * 1000000;
        uint64_t rid = cc__fr_ring_pre(r, &e, NULL);
        cc__fr_update_t u = {CC__FR_COMPLETED, CC_OK, e.t_enqueue_ns + 10, e.t_enqueue_ns + 100, 1, 0, "ring", "shm"};
        cc__fr_ring_update(r, rid, &u);
    }
    cc__fr_ring_destroy(r);
}

/* Overwrite `len` bytes at `off` of a copy of `src` written to `dst`, cut at `size` (0 keeps all). */
static void damaged_copy(const char *src, const char *dst, size_t off, const void *bytes, size_t len,
                         size_t size)
{
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    unsigned char *buf = malloc(1 << 22);
    size_t n = fread(buf, 1, 1 << 22, f);
    fclose(f);
    if (bytes) memcpy(buf + off, bytes, len);
    f = fopen(dst, "wb");
    fwrite(buf, 1, size ? size : n, f);
    fclose(f);
    free(buf);
}

static void expect_file(const char *path, int status, const char *text)
{
    char *out = NULL, *err = NULL;
    int rc = run(&out, &err, 3, "diagnose", path);
    if (rc != status) fail_msg("%s: exit %d, expected %d: %s", path, rc, status, err);
    if (!strstr(err, text) && !strstr(out, text)) fail_msg("%s: no \"%s\" in: %s %s", path, text, err, out);
    free(out);
    free(err);
}

static void test_damaged_rings(void **state)
{
    (void)state;
    char good[200], bad[200];
    snprintf(good, sizeof(good), "%s/rank0.1.ccfr", tmp);
    make_ring(good, 0, 1);
    expect_file(good, 0, "no problem found");
    uint16_t v2 = 2;
    uint32_t huge = 1u << 30, odd = 100;
    uint64_t many = 1u << 20;
    snprintf(bad, sizeof(bad), "%s/cut.ccfr", tmp);
    damaged_copy(good, bad, 0, NULL, 0, 3000);
    expect_file(bad, 2, "truncated: header size");
    cc__fr_header_t h;
    FILE *f = fopen(good, "rb");
    assert_int_equal(fread(&h, sizeof(h), 1, f), 1);
    fclose(f);
    damaged_copy(good, bad, 0, NULL, 0, h.header_size + 3 * h.entry_size);
    expect_file(bad, 2, "truncated: 8 entries need");
    damaged_copy(good, bad, offsetof(cc__fr_header_t, version_major), &v2, 2, 0);
    expect_file(bad, 2, "format version 2.");
    damaged_copy(good, bad, offsetof(cc__fr_header_t, capacity), &huge, 4, 0);
    expect_file(bad, 2, "capacity");
    damaged_copy(good, bad, offsetof(cc__fr_header_t, entry_size), &odd, 4, 0);
    expect_file(bad, 2, "entry size 100");
    damaged_copy(good, bad, offsetof(cc__fr_header_t, comm_count), &many, 8, 0);
    expect_file(bad, 2, "table counts beyond capacity");
    damaged_copy(good, bad, 0, "CCFRINX", 8, 0);
    expect_file(bad, 2, "neither a ccomm ring file nor a JSON dump");
    /* A slot with an impossible state: left out, and said so. */
    uint32_t state99 = 99;
    damaged_copy(good, bad, h.header_size + 2 * h.entry_size + offsetof(cc__fr_entry_t, state), &state99, 4, 0);
    expect_file(bad, 0, "1 corrupt slots left out");
}

/* One unusable file among good ones: reported, the rest still diagnosed. */
static void test_bad_among_good(void **state)
{
    (void)state;
    char path[200], *out = NULL, *err = NULL;
    snprintf(path, sizeof(path), "%s/rank0.1.ccfr", tmp);
    make_ring(path, 0, 2);
    snprintf(path, sizeof(path), "%s/rank1.2.ccfr", tmp);
    make_ring(path, 1, 2);
    snprintf(path, sizeof(path), "%s/rank5.json", tmp);
    FILE *f = fopen(path, "w");
    fputs("{\"version\": \"9.0\"}", f);
    fclose(f);
    int rc = run(&out, &err, 3, "diagnose", tmp);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(err, "rank5.json: flight recorder dump version \"9.0\""));
    assert_non_null(strstr(out, "records of 2 rank(s) from 3 file(s), 1 unusable"));
    assert_non_null(strstr(out, "verdict (uncertain): no problem found"));
    free(out);
    free(err);
}

/* ---- the command line -------------------------------------------------------- */

static void test_help_and_usage(void **state)
{
    (void)state;
    static const char *const cmds[] = {"diagnose", "show", "stats", "json", "perfetto"};
    char *out = NULL, *err = NULL, want[64];
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        assert_int_equal(run(&out, &err, 3, cmds[i], "--help"), 0);
        snprintf(want, sizeof(want), "usage: ccdump %s", cmds[i]);
        assert_non_null(strstr(out, want));
        free(out), free(err);
    }
    assert_int_equal(run(&out, &err, 2, "--help"), 0);
    assert_non_null(strstr(out, "commands:"));
    free(out), free(err);
    assert_int_equal(run(&out, &err, 2, "frobnicate"), 2);
    assert_non_null(strstr(err, "unknown command"));
    free(out), free(err);
    assert_int_equal(run(&out, &err, 2, "diagnose"), 2);
    assert_non_null(strstr(err, "no input files"));
    free(out), free(err);
    assert_int_equal(run(&out, &err, 4, "show", "--bogus", "x"), 2);
    assert_non_null(strstr(err, "unknown option"));
    free(out), free(err);
    assert_int_equal(run(&out, &err, 5, "show", "--last", "-3", "x"), 2);
    free(out), free(err);
    assert_int_equal(run(&out, &err, 3, "json", tmp), 2);
    assert_non_null(strstr(err, "-o DIR"));
    free(out), free(err);
    assert_int_equal(run(&out, &err, 3, "diagnose", "/nonexistent/ccdump"), 2);
    assert_non_null(strstr(err, "no ring file or dump found"));
    free(out), free(err);
}

static void test_helpers(void **state)
{
    (void)state;
    int32_t *v = NULL, r[] = {0, 1, 2, 3, 5, 7, 8};
    uint32_t n = 0;
    char buf[64];
    assert_int_equal(ccd_parse_rank_list("7,0-3,5", &v, &n), 0);
    assert_int_equal(n, 6);
    assert_int_equal(v[0], 0);
    assert_int_equal(v[5], 7);
    free(v);
    assert_int_equal(ccd_parse_rank_list("3-1", &v, &n), -1);
    assert_int_equal(ccd_parse_rank_list("a", &v, &n), -1);
    assert_int_equal(ccd_parse_rank_list("1,", &v, &n), -1);
    ccd_fmt_ranks(buf, sizeof(buf), r, 7);
    assert_string_equal(buf, "0-3, 5, 7-8");
    ccd_fmt_ranks(buf, 12, r, 7);
    assert_non_null(strstr(buf, "..."));
    ccd_fmt_dur(buf, sizeof(buf), 1500000000ull);
    assert_string_equal(buf, "1.50 s");
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmp, sizeof(tmp), "/tmp/ccdump-suite-%d-XXXXXX", (int)getpid());
    return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(int argc, char **argv)
{
    data_dir = argc > 1 ? argv[1] : "tests/data/ccdump";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_cases),
        cmocka_unit_test(test_invalid_files),
        cmocka_unit_test_setup_teardown(test_damaged_rings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_among_good, setup, teardown),
        cmocka_unit_test_setup_teardown(test_help_and_usage, setup, teardown),
        cmocka_unit_test(test_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
