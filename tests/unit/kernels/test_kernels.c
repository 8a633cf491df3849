/*
 * test_kernels.c - the pairwise kernels of lib/kernels against the scalar
 * reference of kref.c: every instruction-set variant this CPU runs, every
 * dtype x op, special values, lengths 0..1M+3, unaligned pointers, dst
 * aliasing either input; and the lookup's statuses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernels.h"
#include "kref.h"
#include "base/log.h"

static const size_t LENGTHS[] = {0, 1, 7, 1000};
#define LONG_LEN (((size_t)1 << 20) + 3)

static int is_bitwise(cc_redop_t op)
{
    return op == CC_BAND || op == CC_BOR || op == CC_BXOR;
}

/* First element where d != a op b, or n. Prints the case on a mismatch. */
static size_t first_mismatch(cc__kernel_isa_t isa, cc_dtype_t dt, cc_redop_t op, const void *a,
                             const void *b, const void *d, size_t n, const char *how)
{
    for (size_t i = 0; i < n; i = kref_next_index(i, n)) {
        uint64_t x = kref_get(dt, a, i), y = kref_get(dt, b, i), got = kref_get(dt, d, i);
        kref_val_t want = kref_pair(dt, op, x, y);
        if (!kref_match(dt, want, got)) {
            print_error("%s %s %s (%s) n=%zu i=%zu: 0x%llx op 0x%llx = 0x%llx, want 0x%llx%s\n",
                        cc__kernel_isa_name(isa), cc_dtype_name(dt), cc_redop_name(op), how, n, i,
                        (unsigned long long)x, (unsigned long long)y, (unsigned long long)got,
                        (unsigned long long)want.bits, want.any_nan ? " (any quiet NaN)" : "");
            return i;
        }
    }
    return n;
}

/* Inputs of one dtype and length, filled once and shared by every op. */
typedef struct pair_bufs {
    kref_buf_t a, b, d; /* what the kernels read and write */
    kref_buf_t a0, b0;  /* the inputs, untouched: what the reference reads */
} pair_bufs_t;

static void bufs_init(pair_bufs_t *p, cc_dtype_t dt, size_t n, uint64_t *seed)
{
    kref_buf_init(&p->a, dt, n);
    kref_buf_init(&p->b, dt, n);
    kref_buf_init(&p->d, dt, n);
    kref_buf_init(&p->a0, dt, n);
    kref_buf_init(&p->b0, dt, n);
    kref_fill(dt, p->a0.p, n, seed);
    kref_fill(dt, p->b0.p, n, seed);
}

static void bufs_free(pair_bufs_t *p)
{
    kref_buf_free(&p->b0);
    kref_buf_free(&p->a0);
    kref_buf_free(&p->d);
    kref_buf_free(&p->b);
    kref_buf_free(&p->a);
}

/* Out of place, then dst == a, then dst == b; guards checked each time. */
static void check_pair(cc__kernel_isa_t isa, cc_dtype_t dt, cc_redop_t op, pair_bufs_t *p)
{
    size_t n = p->a.n, bytes = n * p->a.esize;
    cc__reduce_fn fn = NULL;
    assert_int_equal(cc__kernel_reduce_get_isa(isa, dt, op, &fn), CC_OK);
    memcpy(p->a.p, p->a0.p, bytes);
    memcpy(p->b.p, p->b0.p, bytes);

    fn(p->d.p, p->a.p, p->b.p, n);
    assert_int_equal(first_mismatch(isa, dt, op, p->a0.p, p->b0.p, p->d.p, n, "out of place"), n);
    assert_true(kref_buf_guards_ok(&p->d));
    assert_memory_equal(p->a.p, p->a0.p, bytes); /* inputs are read only */
    assert_memory_equal(p->b.p, p->b0.p, bytes);

    fn(p->a.p, p->a.p, p->b.p, n);
    assert_int_equal(first_mismatch(isa, dt, op, p->a0.p, p->b0.p, p->a.p, n, "dst == a"), n);
    assert_true(kref_buf_guards_ok(&p->a));

    if (n < KREF_SAMPLE_FROM) { /* dst == b at 1M only repeats dst == a */
        memcpy(p->a.p, p->a0.p, bytes);
        fn(p->b.p, p->a.p, p->b.p, n);
        assert_int_equal(first_mismatch(isa, dt, op, p->a0.p, p->b0.p, p->b.p, n, "dst == b"), n);
        assert_true(kref_buf_guards_ok(&p->b));
    }
}

/* Every supported op of every dtype at length n, on one variant or all. */
static void check_all_ops(size_t n, int all_isas, uint64_t *seed)
{
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        if (!cc__kernel_isa_available((cc__kernel_isa_t)isa)) continue;
        if (!all_isas && isa != (int)cc__kernel_isa_best()) continue;
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++) {
            pair_bufs_t p;
            bufs_init(&p, (cc_dtype_t)dt, n, seed);
            for (int op = 0; op < CC_REDOP_COUNT; op++)
                if (!(kref_is_float((cc_dtype_t)dt) && is_bitwise((cc_redop_t)op)))
                    check_pair((cc__kernel_isa_t)isa, (cc_dtype_t)dt, (cc_redop_t)op, &p);
            bufs_free(&p);
        }
    }
}

static void test_pair_all_variants(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < sizeof LENGTHS / sizeof LENGTHS[0]; k++)
        check_all_ops(LENGTHS[k], 1, &seed);
}

/* 1M+3: the main vector loop, its epilogues and the alias versioning at
 * scale; on the variant the library uses (the others ran above). */
static void test_pair_long(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    check_all_ops(LONG_LEN, 0, &seed);
}

/* Hand-picked cases, stated without the reference. */
static void expect_pair(cc_dtype_t dt, cc_redop_t op, uint64_t a, uint64_t b, uint64_t want)
{
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        cc__reduce_fn fn;
        if (!cc__kernel_isa_available((cc__kernel_isa_t)isa)) continue;
        assert_int_equal(cc__kernel_reduce_get_isa((cc__kernel_isa_t)isa, dt, op, &fn), CC_OK);
        uint64_t x[9] = {0}, y[9] = {0}, d[9] = {0};
        /* 9 elements: the vector body and the scalar tail both see the case. */
        for (int i = 0; i < 9; i++) {
            kref_put(dt, x, (size_t)i, a);
            kref_put(dt, y, (size_t)i, b);
        }
        fn(d, x, y, 9);
        for (int i = 0; i < 9; i++) {
            if (kref_get(dt, d, (size_t)i) != want)
                fail_msg("%s %s %s: 0x%llx op 0x%llx = 0x%llx, want 0x%llx",
                         cc__kernel_isa_name((cc__kernel_isa_t)isa), cc_dtype_name(dt),
                         cc_redop_name(op), (unsigned long long)a, (unsigned long long)b,
                         (unsigned long long)kref_get(dt, d, (size_t)i), (unsigned long long)want);
        }
    }
}

static void test_pair_integer_wrap(void **state)
{
    (void)state;
    expect_pair(CC_INT32, CC_SUM, 0x7fffffff, 1, 0x80000000);     /* INT32_MAX + 1 */
    expect_pair(CC_INT8, CC_SUM, 0x80, 0xff, 0x7f);               /* -128 + -1 */
    expect_pair(CC_UINT8, CC_PROD, 200, 200, (200 * 200) & 0xff); /* 40000 mod 256 */
    expect_pair(CC_INT64, CC_PROD, 0x8000000000000000ull, ~0ull,  /* INT64_MIN * -1 */
                0x8000000000000000ull);
    expect_pair(CC_UINT64, CC_SUM, ~0ull, 2, 1);
    expect_pair(CC_INT8, CC_MIN, 0x80, 0x7f, 0x80);  /* signed compare */
    expect_pair(CC_UINT8, CC_MIN, 0x80, 0x7f, 0x7f); /* unsigned compare */
    expect_pair(CC_INT64, CC_MAX, 0x8000000000000000ull, 0, 0);
    expect_pair(CC_UINT32, CC_BXOR, 0xf0f0f0f0, 0xffff0000, 0x0f0ff0f0);
    expect_pair(CC_INT16, CC_SUM, 0x7fff, 1, 0x8000);              /* INT16_MAX + 1 */
    expect_pair(CC_INT16, CC_PROD, 0x8000, 0xffff, 0x8000);        /* INT16_MIN * -1 */
    expect_pair(CC_UINT16, CC_SUM, 0xffff, 3, 2);                  /* 65538 mod 65536 */
    expect_pair(CC_UINT16, CC_PROD, 300, 300, (300 * 300) & 0xffff); /* 90000 mod 65536 */
    expect_pair(CC_INT16, CC_MIN, 0x8000, 0x7fff, 0x8000);         /* signed compare */
    expect_pair(CC_UINT16, CC_MIN, 0x8000, 0x7fff, 0x7fff);        /* unsigned compare */
    expect_pair(CC_INT16, CC_MAX, 0xffff, 0x0001, 0x0001);         /* -1 < 1 */
    expect_pair(CC_INT16, CC_BAND, 0xf0f0, 0xff00, 0xf000);
    expect_pair(CC_UINT16, CC_BOR, 0xf0f0, 0x0f00, 0xfff0);
    expect_pair(CC_INT16, CC_BXOR, 0xf0f0, 0xffff, 0x0f0f);
}

static void test_pair_float_specials(void **state)
{
    (void)state;
    /* MIN/MAX: the first NaN, quieted; ties keep the first operand. */
    expect_pair(CC_FLOAT32, CC_MIN, 0x7fc00001, 0x3f800000, 0x7fc00001);
    expect_pair(CC_FLOAT32, CC_MIN, 0x3f800000, 0x7f800001, 0x7fc00001); /* sNaN quieted */
    expect_pair(CC_FLOAT32, CC_MAX, 0xffc00002, 0x7fc00003, 0xffc00002); /* first of two */
    expect_pair(CC_FLOAT32, CC_MIN, 0x80000000, 0x00000000, 0x80000000); /* -0, +0 */
    expect_pair(CC_FLOAT32, CC_MIN, 0x00000000, 0x80000000, 0x00000000); /* +0, -0 */
    expect_pair(CC_FLOAT64, CC_MAX, 0x3ff0000000000000ull, 0x7ff0000000000001ull,
                0x7ff8000000000001ull);
    expect_pair(CC_FLOAT16, CC_MIN, 0x3c00, 0x7c01, 0x7e01);
    expect_pair(CC_FLOAT16, CC_MAX, 0xfc00, 0x7c00, 0x7c00);
    expect_pair(CC_BFLOAT16, CC_MIN, 0x7f81, 0x3f80, 0x7fc1);
    /* float16: overflow to Inf, denormal sums, correctly rounded ties */
    expect_pair(CC_FLOAT16, CC_SUM, 0x7bff, 0x7bff, 0x7c00);
    expect_pair(CC_FLOAT16, CC_SUM, 0x0001, 0x0001, 0x0002);
    expect_pair(CC_FLOAT16, CC_SUM, 0x3c00, 0x1000, 0x3c00);  /* 1 + 2^-11: tie to even */
    expect_pair(CC_FLOAT16, CC_SUM, 0x3c01, 0x1000, 0x3c02);  /* tie rounds up to even */
    expect_pair(CC_BFLOAT16, CC_SUM, 0x3f80, 0x3b80, 0x3f80); /* 1 + 2^-8: tie to even */
    expect_pair(CC_FLOAT32, CC_SUM, 0x00000001, 0x00000001, 0x00000002); /* no FTZ */
}

static void test_lookup_statuses(void **state)
{
    (void)state;
    uint64_t errors = cc__log_error_count();
    cc__reduce_fn fn = (cc__reduce_fn)(uintptr_t)1;
    cc__reduce_multi_fn mfn = (cc__reduce_multi_fn)(uintptr_t)1;
    const cc_redop_t bitwise[] = {CC_BAND, CC_BOR, CC_BXOR};
    const cc_dtype_t floats[] = {CC_FLOAT16, CC_BFLOAT16, CC_FLOAT32, CC_FLOAT64};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++) {
            assert_int_equal(cc__kernel_reduce_get(floats[i], bitwise[j], &fn),
                             CC_ERR_NOT_SUPPORTED);
            assert_int_equal(cc__kernel_reduce_multi_get(floats[i], bitwise[j], &mfn),
                             CC_ERR_NOT_SUPPORTED);
            assert_int_equal(cc__kernel_check(floats[i], bitwise[j]), CC_ERR_NOT_SUPPORTED);
        }
    assert_int_equal(cc__kernel_reduce_get(CC_DTYPE_COUNT, CC_SUM, &fn), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_reduce_get((cc_dtype_t)-1, CC_SUM, &fn), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_reduce_get(CC_FLOAT32, CC_REDOP_COUNT, &fn), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_reduce_get(CC_FLOAT32, (cc_redop_t)-7, &fn), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_reduce_multi_get(CC_DTYPE_COUNT, CC_SUM, &mfn), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_check((cc_dtype_t)99, CC_SUM), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_reduce_get(CC_FLOAT32, CC_SUM, NULL), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_reduce_get_isa(CC__KISA_COUNT, CC_FLOAT32, CC_SUM, &fn),
                     CC_ERR_INVALID_ARG);
    /* *fn untouched on every error */
    assert_true(fn == (cc__reduce_fn)(uintptr_t)1);
    assert_true(mfn == (cc__reduce_multi_fn)(uintptr_t)1);
    /* every supported pair, every variant that runs; AVG/PREMUL_SUM reduce as SUM */
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        int avail = cc__kernel_isa_available((cc__kernel_isa_t)isa);
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++) {
            cc__reduce_fn sum = NULL, avg = NULL;
            cc_status_t st =
                cc__kernel_reduce_get_isa((cc__kernel_isa_t)isa, (cc_dtype_t)dt, CC_SUM, &sum);
            assert_int_equal(st, avail ? CC_OK : CC_ERR_NOT_SUPPORTED);
            if (!avail) continue;
            assert_int_equal(
                cc__kernel_reduce_get_isa((cc__kernel_isa_t)isa, (cc_dtype_t)dt, CC_AVG, &avg),
                CC_OK);
            assert_true(sum != NULL && sum == avg);
        }
    }
    assert_true(cc__kernel_isa_available(cc__kernel_isa_best()));
    assert_string_equal(cc__kernel_isa_name(CC__KISA_GENERIC), "generic");
    /* lookups log nothing: the caller logs with context */
    assert_int_equal(cc__log_error_count(), errors);
}

/* The multi-input lookup takes a shortcut to the best variant's table (every small op looks a
 * kernel up): it must give what the variant's own lookup gives, pair by pair, errors included. */
static void test_multi_get_is_best(void **state)
{
    (void)state;
    cc__kernel_isa_t best = cc__kernel_isa_best();
    for (int dt = -1; dt <= CC_DTYPE_COUNT; dt++)
        for (int op = -1; op <= CC_REDOP_COUNT; op++) {
            cc__reduce_multi_fn a = NULL, b = NULL;
            cc_status_t sa = cc__kernel_reduce_multi_get((cc_dtype_t)dt, (cc_redop_t)op, &a);
            cc_status_t sb =
                cc__kernel_reduce_multi_get_isa(best, (cc_dtype_t)dt, (cc_redop_t)op, &b);
            assert_int_equal(sa, sb);
            assert_true(a == b);
        }
    assert_int_equal(cc__kernel_reduce_multi_get(CC_FLOAT32, CC_SUM, NULL), CC_ERR_INVALID_ARG);
}

int main(void)
{
    printf("kernel variant in use: %s\n", cc__kernel_isa_name(cc__kernel_isa_best()));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_statuses),     cmocka_unit_test(test_pair_integer_wrap),
        cmocka_unit_test(test_pair_float_specials), cmocka_unit_test(test_pair_all_variants),
        cmocka_unit_test(test_pair_long),           cmocka_unit_test(test_multi_get_is_best),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    /* A test that logs an unexpected error fails. */
    if (cc__log_error_count() != 0) {
        print_error("unexpected error log lines: %llu\n",
                    (unsigned long long)cc__log_error_count());
        failed++;
    }
    return failed;
}
