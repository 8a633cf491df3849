/*
 * test_ccdump_limits.c - what ccdump's input costs it (issue 14, findings 4,
 * 6 and 7). Each hostile input is small; ccdump reads it in a child under
 * resource limits generous for the input (address space, CPU seconds) and
 * the child's peak memory is checked:
 *  - communicators recorded as 2^20 ranks, in 64 ring entries and in a
 *    JSON dump's comm list: memory follows what the file holds (before: 5+ GB);
 *  - 4 ranks in 60,000 process groups: linear, not groups x ranks x groups
 *    (before: tens of CPU seconds); past the 65,520 communicators ccdump
 *    numbers, a clear error naming the file (before: "out of memory");
 *  - a sparse ring whose header claims 2^21 slots of 512 bytes (1 GiB, a
 *    few KiB on disk): only written slots are read (before: every page of
 *    the holes faulted in).
 * Sanitizer builds reserve terabytes of address space: the address-space
 * limit is left out there, the peak-memory check stays.
 */
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccdump.h"
#include "recorder/ring.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static char dir[128];

typedef struct outcome {
    int status;  /* ccdump's exit status; -signal when killed (SIGXCPU: the CPU limit) */
    long rss_mb; /* the child's peak resident memory */
    char err[2048];
} outcome_t;

/* `ccdump diagnose --json path` in a child limited to as_mb of address space and cpu_s. */
static outcome_t limited(const char *path, long as_mb, int cpu_s)
{
    outcome_t o = {0};
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct rlimit as = {(rlim_t)as_mb << 20, (rlim_t)as_mb << 20};
        struct rlimit cpu = {(rlim_t)cpu_s, (rlim_t)cpu_s + 1};
        if (!SANITIZED && as_mb) setrlimit(RLIMIT_AS, &as);
        setrlimit(RLIMIT_CPU, &cpu);
        FILE *out = fopen("/dev/null", "w"), *err = fdopen(pipefd[1], "w");
        close(pipefd[0]);
        char *argv[] = {"ccdump", "diagnose", "--json", (char *)path, NULL};
        int rc = ccdump_main(4, argv, out, err);
        fflush(err);
        _exit(rc);
    }
    close(pipefd[1]);
    size_t n = 0;
    ssize_t k;
    while ((k = read(pipefd[0], o.err + n, sizeof(o.err) - 1 - n)) > 0)
        n += (size_t)k;
    close(pipefd[0]);
    int st;
    struct rusage ru;
    assert_int_equal(wait4(pid, &st, 0, &ru), pid);
    o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
    o.rss_mb = ru.ru_maxrss / 1024;
    return o;
}

static void expect_cheap(const char *what, outcome_t o, long rss_mb)
{
    if (o.status < 0 || o.status > 1)
        fail_msg("%s: ccdump ended with %d (memory %ld MB)\n%s", what, o.status, o.rss_mb, o.err);
    if (o.rss_mb > rss_mb)
        fail_msg("%s: ccdump used %ld MB (bound %ld MB)", what, o.rss_mb, rss_mb);
}

/* ---- finding 4: communicator sizes ---------------------------------------------------------- */

/* A ccomm JSON dump whose 64 communicators say 2^20 ranks, one entry on each. */
static void big_comms_json(const char *path)
{
    json_t *comms = json_array(), *entries = json_array();
    for (int i = 0; i < 64; i++) {
        char id[16];
        snprintf(id, sizeof(id), "%d", 1000 + i);
        json_array_append_new(comms, json_pack("{s:i, s:s, s:s, s:i, s:i}", "pg_id", i, "comm_id",
                                               id, "name", "big", "size", 1 << 20, "rank", 0));
        json_array_append_new(
            entries,
            json_pack("{s:i, s:i, s:[s,s], s:i, s:i, s:i, s:s, s:I, s:[[i]], s:[s], "
                      "s:[[i]], s:[s], s:s, s:b}",
                      "record_id", i + 1, "pg_id", i, "process_group", id, "big",
                      "collective_seq_id", 1, "p2p_seq_id", 0, "op_id", i + 1, "profiling_name",
                      "ccomm:all_reduce", "time_created_ns", (json_int_t)1764500000000000000,
                      "input_sizes", 4, "input_dtypes", "Float", "output_sizes", 4, "output_dtypes",
                      "Float", "state", "completed", "is_p2p", 0));
    }
    json_t *doc =
        json_pack("{s:s, s:i, s:{}, s:{}, s:o, s:{s:s, s:s, s:i, s:i, s:o}}", "version", "2.10",
                  "rank", 0, "pg_config", "pg_status", "entries", entries, "ccomm",
                  "format_version", "1.1", "host", "h", "pid", 1, "world_size", 4, "comms", comms);
    assert_int_equal(json_dump_file(doc, path, JSON_COMPACT), 0);
    json_decref(doc);
}

/* A ring with 64 entries, each on a communicator of its own that says 2^20 ranks. */
static void big_comms_ring(const char *path)
{
    cc__fr_ring_params_t p = {
        .capacity = 128, .rank = 0, .world_size = 4, .host = "h", .job_id = "j"};
    cc__fr_ring_t *r = NULL;
    assert_int_equal(cc__fr_ring_create(path, &p, &r), CC_OK);
    for (int i = 0; i < 64; i++) {
        cc__fr_entry_t e = {.comm_id = 5000 + (uint64_t)i,
                            .type = CC_OP_ALLREDUCE,
                            .dtype = CC_FLOAT32,
                            .redop = CC_SUM,
                            .rank = 0,
                            .size = 1 << 20,
                            .root = -1,
                            .peer = -1,
                            .coll_seq = 1,
                            .op_id = (uint64_t)i + 1,
                            .in_count = 4,
                            .out_count = 4,
                            .bytes = 16,
                            .t_enqueue_ns = 1000 + (uint64_t)i,
                            .state = CC__FR_SCHEDULED};
        uint64_t rid = cc__fr_ring_pre(r, &e, NULL);
        cc__fr_update_t u = {CC__FR_COMPLETED, CC_OK, 1100, 1200, 1, 0, "ring", "shm"};
        cc__fr_ring_update(r, rid, &u);
    }
    cc__fr_ring_destroy(r);
}

static void test_comm_sizes(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "%s/big_comms_rank_0.json", dir);
    big_comms_json(path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size < 40000);
    expect_cheap("64 comms of 2^20 ranks (JSON)", limited(path, 1024, 60), 200);
    snprintf(path, sizeof(path), "%s/big_comms.ccfr", dir);
    big_comms_ring(path);
    expect_cheap("64 comms of 2^20 ranks (ring)", limited(path, 1024, 60), 200);
}

/* ---- finding 6: many communicators ---------------------------------------------------------- */

/* PyTorch's dump of `rank` in n process groups of the ranks `members` ("[0, 1]"). */
static void many_groups(const char *path, int n, const char *members)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"version\": \"2.10\", \"pg_status\": {}, \"entries\": [], \"pg_config\": {");
    for (int i = 0; i < n; i++)
        fprintf(f, "%s\"%d\": {\"name\": \"%d\", \"desc\": \"g%d\", \"ranks\": \"%s\"}",
                i ? ", " : "", i, i, i, members);
    fprintf(f, "}}\n");
    fclose(f);
}

static void test_many_groups(void **state)
{
    (void)state;
    char path[400], sub[200];
    snprintf(sub, sizeof(sub), "%s/groups", dir);
    mkdir(sub, 0700);
    for (int r = 0; r < 4; r++) {
        snprintf(path, sizeof(path), "%s/nccl_trace_rank_%d.json", sub, r);
        many_groups(path, 60000, "[0, 1, 2, 3]");
    }
    /* 4 ranks in 60,000 groups: a second or so; groups x ranks x groups was 1.4e10 steps. */
    expect_cheap("4 ranks in 60,000 process groups", limited(sub, 2048, SANITIZED ? 60 : 8),
                 SANITIZED ? 1500 : 600);
    snprintf(path, sizeof(path), "%s/nccl_trace_rank_0.json", dir);
    many_groups(path, 70000, "[0]");
    outcome_t o = limited(path, 2048, 60);
    if (o.status != 2 || !strstr(o.err, "nccl_trace_rank_0.json: more than 65520 communicators"))
        fail_msg("70,000 process groups: exit %d\n%s", o.status, o.err);
}

/* ---- finding 7: sparse rings ---------------------------------------------------------------- */

/* A ring of 3 records whose header says 2^21 slots: 1 GiB apparent, a few KiB real. */
static void sparse_ring(const char *path)
{
    char small[320];
    snprintf(small, sizeof(small), "%.300s.small", path);
    cc__fr_ring_params_t p = {
        .capacity = 16, .stack_depth = 32, .rank = 0, .world_size = 1, .host = "h", .job_id = "j"};
    cc__fr_ring_t *r = NULL;
    assert_int_equal(cc__fr_ring_create(small, &p, &r), CC_OK);
    for (int i = 0; i < 3; i++) {
        cc__fr_entry_t e = {.comm_id = 7,
                            .type = CC_OP_BARRIER,
                            .rank = 0,
                            .size = 1,
                            .root = -1,
                            .peer = -1,
                            .coll_seq = (uint64_t)i + 1,
                            .op_id = (uint64_t)i + 1,
                            .t_enqueue_ns = 1000,
                            .state = CC__FR_SCHEDULED};
        uint64_t rid = cc__fr_ring_pre(r, &e, NULL);
        cc__fr_update_t u = {CC__FR_COMPLETED, CC_OK, 1100, 1200, 1, 0, "ring", "shm"};
        cc__fr_ring_update(r, rid, &u);
    }
    cc__fr_ring_destroy(r);
    /* The same header and slots in a file of 2^21 slots: the rest is a hole. */
    FILE *f = fopen(small, "rb");
    struct stat st;
    assert_true(f && !fstat(fileno(f), &st));
    unsigned char *buf = malloc((size_t)st.st_size);
    size_t len = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    unlink(small);
    cc__fr_header_t h;
    memcpy(&h, buf, sizeof(h));
    assert_true(len == h.header_size + 16 * (size_t)h.entry_size);
    uint32_t cap = 1u << 21;
    memcpy(buf + offsetof(cc__fr_header_t, capacity), &cap, sizeof(cap));
    uint64_t size = h.header_size + (uint64_t)cap * h.entry_size;
    memcpy(buf + offsetof(cc__fr_header_t, file_size), &size, sizeof(size));
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, len, f), len);
    assert_int_equal(ftruncate(fileno(f), (off_t)size), 0);
    fclose(f);
    free(buf);
}

static void test_sparse_ring(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "%s/sparse.ccfr", dir);
    sparse_ring(path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size >= (1 << 30) && st.st_blocks * 512 < (1 << 20));
    outcome_t o = limited(path, 0, SANITIZED ? 60 : 10);
    expect_cheap("a sparse ring of 2^21 slots", o, SANITIZED ? 300 : 100);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/ccdump-limits-%d-XXXXXX", (int)getpid());
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_comm_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_groups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sparse_ring, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
