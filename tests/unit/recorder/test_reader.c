/*
 * test_reader.c - the reader refuses hostile ring files cleanly: truncated,
 * bad magic, another version, capacity beyond the file, absurd geometry,
 * unterminated strings, corrupt tables; corrupt and torn entries are
 * reported, not trusted; random damage never crashes it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "rec_util.h"

static unsigned char *good;
static size_t good_size;
static char bad_path[400];

static const int32_t world2[2] = {0, 1};

/* A real ring with a few entries, read back into memory. */
static int setup(void **state)
{
    (void)state;
    rec_make_dir();
    if (rec_open(8, 0) != CC_OK) return -1;
    cc__recorder_add_comm(7, 0, "world", 0, 2, world2);
    cc__op_t op;
    for (uint64_t i = 1; i <= 5; i++) {
        rec_op(&op, CC_OP_ALLREDUCE, 7, i, i);
        rec_run(&op, CC_OK);
    }
    char path[400];
    snprintf(path, sizeof(path), "%s", cc__recorder_path());
    cc__recorder_close();
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    good_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    good = malloc(good_size);
    if (!good || fread(good, 1, good_size, f) != good_size) return -1;
    fclose(f);
    snprintf(bad_path, sizeof(bad_path), "%s/bad.ccfr", rec_dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(good);
    rec_remove_dir();
    return 0;
}

static cc__fr_header_t *hdr_of(unsigned char *b)
{
    return (cc__fr_header_t *)(void *)b;
}

static cc__fr_entry_t *slot_of(unsigned char *b, uint32_t i)
{
    const cc__fr_header_t *h = hdr_of(good);
    return (cc__fr_entry_t *)(void *)(b + h->header_size + (size_t)i * h->entry_size);
}

static void write_file(const unsigned char *b, size_t n)
{
    FILE *f = fopen(bad_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* Open `b` (n bytes) as a file; expect `want` and `why` in the message. */
static void expect_open(const unsigned char *b, size_t n, cc_status_t want, const char *why)
{
    write_file(b, n);
    cc__fr_reader_t *r = NULL;
    char err[512] = "";
    cc_status_t st = cc__fr_reader_open(bad_path, &r, err, sizeof(err));
    if (st != want)
        fail_msg("status %s, wanted %s (%s)", cc_status_name(st), cc_status_name(want), err);
    if (st == CC_OK) {
        cc__fr_reader_close(r);
        return;
    }
    assert_null(r);
    if (!strstr(err, why)) fail_msg("message \"%s\" lacks \"%s\"", err, why);
}

/* Open and snapshot; expect the snapshot to fail with `why`. */
static void expect_snapshot_fails(unsigned char *b, const char *why)
{
    write_file(b, good_size);
    cc__fr_reader_t *r = NULL;
    cc__fr_snapshot_t *s = NULL;
    char err[512] = "";
    assert_int_equal(cc__fr_reader_open(bad_path, &r, err, sizeof(err)), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(r, &s, err, sizeof(err)), CC_ERR_INVALID_ARG);
    assert_null(s);
    if (!strstr(err, why)) fail_msg("message \"%s\" lacks \"%s\"", err, why);
    cc__fr_reader_close(r);
}

static unsigned char *copy(void)
{
    unsigned char *b = malloc(good_size);
    assert_non_null(b);
    memcpy(b, good, good_size);
    return b;
}

static void test_good_file(void **state)
{
    (void)state;
    write_file(good, good_size);
    cc__fr_reader_t *r = NULL;
    cc__fr_snapshot_t *s = NULL;
    assert_int_equal(cc__fr_reader_open(bad_path, &r, NULL, 0), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(r, &s, NULL, 0), CC_OK);
    assert_int_equal(s->nentries, 5);
    assert_int_equal(s->ntorn + s->ncorrupt, 0);
    assert_false(s->live); /* closed cleanly */
    assert_int_equal(s->ncomms, 1);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(r);
}

static void test_truncated(void **state)
{
    (void)state;
    expect_open(good, 0, CC_ERR_INVALID_ARG, "truncated");
    expect_open(good, 100, CC_ERR_INVALID_ARG, "truncated");
    expect_open(good, hdr_of(good)->header_size, CC_ERR_INVALID_ARG, "truncated");
    expect_open(good, good_size - 1, CC_ERR_INVALID_ARG, "truncated");
}

static void test_not_a_ring(void **state)
{
    (void)state;
    unsigned char *b = copy();
    memcpy(b, "GARBAGE!", 8);
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "bad magic");
    free(b);
    cc__fr_reader_t *r = NULL;
    char err[256];
    assert_int_equal(cc__fr_reader_open("/nonexistent/ring.ccfr", &r, err, sizeof(err)),
                     CC_ERR_NOT_FOUND);
    assert_int_equal(cc__fr_reader_open(rec_dir, &r, err, sizeof(err)), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__fr_reader_open(NULL, &r, err, sizeof(err)), CC_ERR_INVALID_ARG);
}

static void test_wrong_version(void **state)
{
    (void)state;
    unsigned char *b = copy();
    hdr_of(b)->version_major = 2;
    hdr_of(b)->version_minor = 0;
    expect_open(b, good_size, CC_ERR_NOT_SUPPORTED, "version 2.0");
    hdr_of(b)->version_major = 1;
    hdr_of(b)->version_minor = 7; /* a newer minor is read */
    expect_open(b, good_size, CC_OK, "");
    free(b);
}

static void test_bad_geometry(void **state)
{
    (void)state;
    unsigned char *b = copy();
    cc__fr_header_t *h = hdr_of(b), keep = *h;
    h->capacity = 1u << 20; /* more slots than the file holds */
    h->file_size = h->header_size + (uint64_t)h->capacity * h->entry_size;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "truncated");
    h->capacity = 0xffffffffu;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "capacity");
    *h = keep;
    h->capacity = 4; /* file_size no longer adds up */
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "file size");
    *h = keep;
    h->entry_size = 100;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "entry size");
    *h = keep;
    h->stack_depth = 1000;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "stack depth");
    *h = keep;
    h->header_size = 0x7ffff000;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "header size");
    *h = keep;
    h->comm_off = h->header_size - 8; /* the table would run into the slots */
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "comm table");
    *h = keep;
    h->rank_capacity = 0xffffffffu;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "rank pool");
    *h = keep;
    h->module_size = 7;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "module table");
    *h = keep;
    h->rank = 5;
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "rank 5");
    free(b);
}

static void test_unterminated_strings(void **state)
{
    (void)state;
    unsigned char *b = copy();
    cc__fr_header_t *h = hdr_of(b), keep = *h;
    memset(h->host, 'h', sizeof(h->host));
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "unterminated");
    *h = keep;
    memset(h->job_id, 'j', sizeof(h->job_id));
    expect_open(b, good_size, CC_ERR_INVALID_ARG, "unterminated");
    *h = keep;
    cc__fr_comm_t *c = (cc__fr_comm_t *)(void *)(b + h->comm_off);
    memset(c->name, 'n', sizeof(c->name));
    expect_snapshot_fails(b, "unterminated name");
    free(b);
}

static void test_corrupt_tables(void **state)
{
    (void)state;
    unsigned char *b = copy();
    cc__fr_header_t *h = hdr_of(b), keep = *h;
    h->comm_count = 5000;
    expect_snapshot_fails(b, "beyond capacity");
    *h = keep;
    h->module_count = h->module_capacity + 1;
    expect_snapshot_fails(b, "beyond capacity");
    *h = keep;
    cc__fr_comm_t *c = (cc__fr_comm_t *)(void *)(b + h->comm_off);
    c->ranks_off = 1u << 30;
    expect_snapshot_fails(b, "beyond");
    free(b);
}

static void test_corrupt_and_torn_entries(void **state)
{
    (void)state;
    unsigned char *b = copy();
    memset(slot_of(b, 0)->algorithm, 'a', sizeof(slot_of(b, 0)->algorithm));
    slot_of(b, 1)->record_id = 7; /* belongs to slot 6 */
    slot_of(b, 2)->type = 200;
    slot_of(b, 3)->seq |= 1; /* its writer died mid-write */
    write_file(b, good_size);
    cc__fr_reader_t *r = NULL;
    cc__fr_snapshot_t *s = NULL;
    assert_int_equal(cc__fr_reader_open(bad_path, &r, NULL, 0), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(r, &s, NULL, 0), CC_OK);
    assert_int_equal(s->nentries, 1); /* record 5 only */
    assert_int_equal(cc__fr_snap_entry(s, 0)->record_id, 5);
    assert_int_equal(s->ncorrupt, 3);
    assert_int_equal(s->ntorn, 1);
    int torn_seen = 0;
    for (uint32_t i = 0; i < s->nproblems; i++)
        if (s->problems[i].kind == CC__FR_TORN) {
            torn_seen = 1;
            assert_int_equal(s->problems[i].slot, 3);
            assert_int_equal(s->problems[i].record_id, 4);
        }
    assert_true(torn_seen);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(r);
    free(b);
}

/* A huge sparse file of empty slots costs time, not memory. */
static void test_huge_sparse(void **state)
{
    (void)state;
    unsigned char *b = copy();
    cc__fr_header_t *h = hdr_of(b);
    h->capacity = 1u << 16;
    h->file_size = h->header_size + (uint64_t)h->capacity * h->entry_size;
    write_file(b, h->header_size);
    assert_int_equal(truncate(bad_path, (off_t)h->file_size), 0);
    cc__fr_reader_t *r = NULL;
    cc__fr_snapshot_t *s = NULL;
    assert_int_equal(cc__fr_reader_open(bad_path, &r, NULL, 0), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(r, &s, NULL, 0), CC_OK);
    assert_int_equal(s->nentries, 0);
    assert_null(s->entries);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(r);
    unlink(bad_path);
    free(b);
}

#ifdef __SANITIZE_THREAD__
#define ROUNDS 100 /* single-threaded: TSan has nothing to add, only cost */
#else
#define ROUNDS 1000
#endif

/* xorshift: reproducible damage */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Random damage anywhere in the header, tables and slots: never a crash. */
static void test_random_damage(void **state)
{
    (void)state;
    const cc__fr_header_t *gh = hdr_of(good);
    size_t span = gh->header_size + 4 * (size_t)gh->entry_size;
    unsigned char *b = copy();
    unsigned ok = 0;
    for (int round = 0; round < ROUNDS; round++) {
        size_t at[8];
        unsigned char old[8];
        int flips = 1 + (int)(next_rand() % 8);
        for (int k = 0; k < flips; k++) {
            /* Mostly the first KiB, where the geometry lives. */
            at[k] = (next_rand() & 1) ? next_rand() % CC__FR_HEADER_BYTES : next_rand() % span;
            old[k] = b[at[k]];
            b[at[k]] = (unsigned char)next_rand();
        }
        cc__fr_reader_t *r = NULL;
        cc__fr_snapshot_t *s = NULL;
        if (cc__fr_reader_attach(b, good_size, &r, NULL, 0) == CC_OK) {
            if (cc__fr_reader_snapshot(r, &s, NULL, 0) == CC_OK) {
                ok++;
                assert_true(s->nentries <= s->hdr.capacity);
                cc__fr_snapshot_free(s);
            }
            cc__fr_reader_close(r);
        }
        for (int k = flips; k-- > 0;)
            b[at[k]] = old[k]; /* undo, newest first */
    }
    assert_memory_equal(b, good, good_size);
    free(b);
    print_message("random damage: %u of %d damaged rings still readable\n", ok, ROUNDS);
}

int main(void)
{
    setenv("CCOMM_LOG_LEVEL", "NONE", 1); /* thousands of expected refusals */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_file),      cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_not_a_ring),     cmocka_unit_test(test_wrong_version),
        cmocka_unit_test(test_bad_geometry),   cmocka_unit_test(test_unterminated_strings),
        cmocka_unit_test(test_corrupt_tables), cmocka_unit_test(test_corrupt_and_torn_entries),
        cmocka_unit_test(test_huge_sparse),    cmocka_unit_test(test_random_damage),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
