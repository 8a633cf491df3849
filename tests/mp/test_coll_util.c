/* test_coll_util.c - helpers of the collective tests (see test_coll_util.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernels.h"
#include "mp.h"
#include "native/native.h"
#include "test_coll_util.h"

const size_t tc_counts[5] = {0, 1, 7, 1000, TC_BIG};

static int g_full = -1;

int tc_full(void)
{
    if (g_full < 0) {
        const char *e = getenv("CCTEST_NIGHTLY");
        g_full = e && e[0] == '1';
    }
    return g_full;
}

void tc_set_full(int full)
{
    g_full = full;
}

uint64_t tc_key(int n, int a, int b, int c, int d, int e)
{
    uint64_t h = 1469598103934665603ull;
    int v[6] = {n, a, b, c, d, e};
    for (int i = 0; i < 6; i++)
        h = (h ^ (uint64_t)(unsigned)v[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

int tc_pick(uint64_t key, unsigned every)
{
    return tc_full() || every <= 1 || key % every == 0;
}

double tc_input(int r, size_t i, cc_redop_t op)
{
    if (op == CC_PROD) return (double)(1 + ((r + (int)(i % 7)) % 2)); /* 8 ranks: <= 2^4 */
    return (double)((r * 7 + (int)(i % 13)) % 15);                    /* 8 ranks: sums <= 112 */
}

/* v as the dtype holds it. */
static double as_dtype(double v, cc_dtype_t dt)
{
    unsigned char tmp[8];
    cc__elem_put(tmp, dt, 0, v);
    return cc__elem_get(tmp, dt, 0);
}

int tc_is_int(cc_dtype_t dt)
{
    return dt != CC_FLOAT16 && dt != CC_BFLOAT16 && dt != CC_FLOAT32 && dt != CC_FLOAT64;
}

static double premul(double x, cc_dtype_t dt)
{
    if (tc_is_int(dt)) return trunc(x * TC_PREMUL);
    return dt == CC_FLOAT64 ? x * TC_PREMUL : (double)((float)x * (float)TC_PREMUL);
}

double tc_expect(int n, size_t i, cc_redop_t op, cc_dtype_t dt)
{
    double acc = 0;
    for (int r = 0; r < n; r++) {
        double x = tc_input(r, i, op);
        if (op == CC_PREMUL_SUM) x = premul(x, dt);
        if (r == 0) {
            acc = x;
            continue;
        }
        switch (op) {
        case CC_PROD:
            acc *= x;
            break;
        case CC_MIN:
            acc = x < acc ? x : acc;
            break;
        case CC_MAX:
            acc = x > acc ? x : acc;
            break;
        case CC_BAND:
            acc = (double)((uint64_t)acc & (uint64_t)x);
            break;
        case CC_BOR:
            acc = (double)((uint64_t)acc | (uint64_t)x);
            break;
        case CC_BXOR:
            acc = (double)((uint64_t)acc ^ (uint64_t)x);
            break;
        default:
            acc += x;
        }
    }
    if (op == CC_AVG && tc_is_int(dt))
        acc = trunc(acc / n);
    else if (op == CC_AVG)
        acc = dt == CC_FLOAT64 ? acc / n : (double)((float)acc / (float)n);
    return as_dtype(acc, dt);
}

void *tc_alloc(size_t bytes, size_t off)
{
    /* One line of header, then the data line-aligned; off < 64 keeps p in the first data line. */
    char *base = aligned_alloc(64, 64 + ((bytes + off + 63) / 64) * 64 + 64);
    return base ? base + 64 + off % 64 : NULL;
}

void tc_free(void *p)
{
    if (p) free((char *)((uintptr_t)p & ~(uintptr_t)63) - 64);
}

int tc_algos(cc_comm_t *comm, cc_op_type_t type, const char **names, int max)
{
    int k = cc__native_algorithms(comm, type, names, max - 1);
    names[k++] = "";
    return k;
}

void tc_force(cc_comm_t *comm, cc_op_type_t type, const char *name)
{
    cc__native_force(comm, type, name && name[0] ? name : NULL);
}

cc_status_t tc_finish(cc_status_t st, cc_work_t *w)
{
    if (st == CC_OK && w) st = cc_work_wait(w, -1);
    cc_work_free(w);
    return st;
}

cc_comm_t *tc_init(int rank, int size, const char *addr)
{
    cc_comm_t *comm = NULL;
    cc_status_t st = cc_comm_init(&comm, rank, size, addr, NULL);
    if (st != CC_OK) fprintf(stderr, "rank %d: init: %s\n", rank, cc_status_name(st));
    return comm;
}

int tc_run(int n, const char *transport, int (*fn)(int, int, const char *, void *), int timeout_s)
{
    char env[64], full[32];
    snprintf(env, sizeof(env), "CCOMM_TRANSPORT=%s", transport);
    snprintf(full, sizeof(full), "CCTEST_NIGHTLY=%d", tc_full());
    const char *envs[] = {env, full, TC_TIMEOUT_ENV, NULL};
    fprintf(stderr, "-- %d ranks, transport %s%s\n", n, transport,
            tc_full() ? " (full matrix)" : "");
    return cc_test_fork_ranks(n, fn, NULL, timeout_s, envs, NULL);
}

static int (*g_rank_fn)(int, int, const char *, void *);
static int g_timeout;

static void job(void **state)
{
    const tc_job_t *j = *state;
    assert_int_equal(tc_run(j->n, j->transport, g_rank_fn, g_timeout), 0);
}

int tc_main(int argc, char **argv, int (*fn)(int, int, const char *, void *),
            const tc_job_t *sample, int nsample, int timeout_s)
{
    static tc_job_t all[16];
    static char names[16][16];
    struct CMUnitTest tests[16];
    int nightly = argc > 1 && !strcmp(argv[1], "nightly"), k = 0;
    if (nightly && !tc_full()) {
        printf("skipped: the full matrix runs with CCTEST_NIGHTLY=1 (ctest -L nightly)\n");
        return 77;
    }
    if (!nightly) tc_set_full(0);
    for (int n = 1; nightly && n <= 8; n++)
        for (int t = 0; t < 2 && !(n == 1 && t); t++)
            all[k++] = (tc_job_t){n, t ? "tcp" : "auto"};
    const tc_job_t *jobs = nightly ? all : sample;
    int njobs = nightly ? k : nsample < 16 ? nsample : 16;
    g_rank_fn = fn;
    g_timeout = timeout_s;
    for (int i = 0; i < njobs; i++) {
        snprintf(names[i], sizeof(names[i]), "%d_%s", jobs[i].n,
                 strcmp(jobs[i].transport, "tcp") ? "shm" : "tcp");
        tests[i] = (struct CMUnitTest){names[i], job, NULL, NULL, (void *)&jobs[i]};
    }
    return _cmocka_run_group_tests("matrix", tests, (size_t)njobs, NULL, NULL);
}
