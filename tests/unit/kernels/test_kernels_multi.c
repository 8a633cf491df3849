/*
 * test_kernels_multi.c - the multi-input kernels (fused for 2..8 inputs,
 * blocked beyond), scale (PREMUL_SUM) and div (AVG), against kref.c, on
 * every instruction-set variant this CPU runs.
 */
#include <math.h>
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

#define MAXSRC 13
static uint64_t g_expected_errors; /* error lines the tests provoke on purpose */

static int supported(cc_dtype_t dt, cc_redop_t op)
{
    return !(kref_is_float(dt) && (op == CC_BAND || op == CC_BOR || op == CC_BXOR));
}

/*
 * One multi-input case. alias < 0: dst is its own array; else dst is
 * src[alias] (the expected values come from a saved copy of it).
 */
static void check_multi(cc__kernel_isa_t isa, cc_dtype_t dt, cc_redop_t op, int nsrc, size_t n,
                        int alias, uint64_t *seed)
{
    cc__reduce_multi_fn fn;
    assert_int_equal(cc__kernel_reduce_multi_get_isa(isa, dt, op, &fn), CC_OK);
    kref_buf_t src[MAXSRC], d, keep;
    const void *ptr[MAXSRC];
    for (int k = 0; k < nsrc; k++) {
        kref_buf_init(&src[k], dt, n);
        kref_fill(dt, src[k].p, n, seed);
        ptr[k] = src[k].p;
    }
    kref_buf_init(&d, dt, n);
    kref_buf_init(&keep, dt, n);
    void *dst = d.p;
    if (alias >= 0) {
        dst = src[alias].p;
        memcpy(keep.p, dst, n * d.esize);
    }
    fn(dst, ptr, nsrc, n);
    for (size_t i = 0; i < n; i = kref_next_index(i, n)) {
        uint64_t x[MAXSRC];
        for (int k = 0; k < nsrc; k++)
            x[k] = kref_get(dt, k == alias ? keep.p : ptr[k], i);
        kref_val_t want = kref_multi(dt, op, x, nsrc);
        uint64_t got = kref_get(dt, dst, i);
        if (!kref_match(dt, want, got))
            fail_msg("%s %s %s nsrc=%d n=%zu alias=%d i=%zu: got 0x%llx want 0x%llx%s",
                     cc__kernel_isa_name(isa), cc_dtype_name(dt), cc_redop_name(op), nsrc, n, alias,
                     i, (unsigned long long)got, (unsigned long long)want.bits,
                     want.any_nan ? " (any quiet NaN)" : "");
    }
    assert_true(kref_buf_guards_ok(alias >= 0 ? &src[alias] : &d));
    kref_buf_free(&keep);
    kref_buf_free(&d);
    for (int k = 0; k < nsrc; k++)
        kref_buf_free(&src[k]);
}

/* Every variant, dtype, op; 1..8 inputs (fused for SUM) and 9, 13 (blocked);
 * short lengths; dst separate, equal to the first input, equal to the last. */
static void test_multi_all(void **state)
{
    (void)state;
    static const size_t lens[] = {0, 1, 7, 100};
    static const int nsrcs[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13};
    uint64_t seed = 777;
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        if (!cc__kernel_isa_available((cc__kernel_isa_t)isa)) continue;
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++)
            for (int op = 0; op < CC_REDOP_COUNT; op++) {
                if (!supported((cc_dtype_t)dt, (cc_redop_t)op)) continue;
                for (size_t s = 0; s < sizeof nsrcs / sizeof nsrcs[0]; s++)
                    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
                        for (int alias = -1; alias <= 1; alias++)
                            check_multi((cc__kernel_isa_t)isa, (cc_dtype_t)dt, (cc_redop_t)op,
                                        nsrcs[s], lens[l],
                                        alias < 0 ? -1 : (alias == 0 ? 0 : nsrcs[s] - 1), &seed);
            }
    }
}

/* Lengths across the 1024-element blocks and long enough for every vector
 * path; the long one with 4 inputs, SUM, on the variant in use. */
static void test_multi_long(void **state)
{
    (void)state;
    uint64_t seed = 4242;
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        if (!cc__kernel_isa_available((cc__kernel_isa_t)isa)) continue;
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++) {
            check_multi((cc__kernel_isa_t)isa, (cc_dtype_t)dt, CC_SUM, 3, 2051, 2, &seed);
            check_multi((cc__kernel_isa_t)isa, (cc_dtype_t)dt, CC_SUM, 9, 2051, 0, &seed);
            check_multi((cc__kernel_isa_t)isa, (cc_dtype_t)dt, CC_MAX, 8, 2051, -1, &seed);
        }
    }
    for (int dt = 0; dt < CC_DTYPE_COUNT; dt++)
        check_multi(cc__kernel_isa_best(), (cc_dtype_t)dt, CC_SUM, 4, ((size_t)1 << 20) + 3, 0,
                    &seed);
}

/* float16/bfloat16 round once: 1 + u/2 + u/2 (u = ulp of 1) is 1 + u, where
 * the pairwise kernel rounds 1 + u/2 back to 1 twice (ties to even). */
static void test_multi_rounds_once(void **state)
{
    (void)state;
    const uint16_t f16[3] = {0x3c00, 0x1000, 0x1000}, bf16[3] = {0x3f80, 0x3b80, 0x3b80};
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        if (!cc__kernel_isa_available((cc__kernel_isa_t)isa)) continue;
        cc__reduce_multi_fn fn;
        cc__reduce_fn pair;
        const void *src[3] = {&f16[0], &f16[1], &f16[2]};
        uint16_t out = 0, tmp = 0;
        assert_int_equal(cc__kernel_reduce_multi_get_isa(isa, CC_FLOAT16, CC_SUM, &fn), CC_OK);
        fn(&out, src, 3, 1);
        assert_int_equal(out, 0x3c01);
        assert_int_equal(cc__kernel_reduce_get_isa(isa, CC_FLOAT16, CC_SUM, &pair), CC_OK);
        pair(&tmp, &f16[0], &f16[1], 1);
        pair(&tmp, &tmp, &f16[2], 1);
        assert_int_equal(tmp, 0x3c00);
        const void *bsrc[3] = {&bf16[0], &bf16[1], &bf16[2]};
        assert_int_equal(cc__kernel_reduce_multi_get_isa(isa, CC_BFLOAT16, CC_SUM, &fn), CC_OK);
        fn(&out, bsrc, 3, 1);
        assert_int_equal(out, 0x3f81);
    }
}

/* scale and div of every dtype against the reference, out of place and in place. */
static void check_unary(cc__kernel_isa_t isa, cc_dtype_t dt, int is_div, double factor,
                        unsigned divisor, uint64_t *seed)
{
    const size_t n = 1000;
    kref_buf_t s, d;
    kref_buf_init(&s, dt, n);
    kref_buf_init(&d, dt, n);
    kref_fill(dt, s.p, n, seed);
    for (int inplace = 0; inplace < 2; inplace++) {
        void *dst = inplace ? s.p : d.p;
        if (inplace) memcpy(d.p, s.p, n * s.esize); /* d keeps the inputs */
        const void *in = inplace ? d.p : s.p;
        cc_status_t st = is_div ? cc__kernel_div_isa(isa, dt, dst, s.p, n, divisor)
                                : cc__kernel_scale_isa(isa, dt, dst, s.p, n, factor);
        assert_int_equal(st, CC_OK);
        for (size_t i = 0; i < n; i++) {
            uint64_t x = kref_get(dt, in, i), got = kref_get(dt, dst, i);
            kref_val_t want = is_div ? kref_div(dt, x, divisor) : kref_scale(dt, x, factor);
            if (!kref_match(dt, want, got))
                fail_msg("%s %s %s(%g, %u) inplace=%d i=%zu: 0x%llx -> 0x%llx, want 0x%llx%s",
                         cc__kernel_isa_name(isa), cc_dtype_name(dt), is_div ? "div" : "scale",
                         factor, divisor, inplace, i, (unsigned long long)x,
                         (unsigned long long)got, (unsigned long long)want.bits,
                         want.any_nan ? " (any quiet NaN)" : "");
        }
        assert_true(kref_buf_guards_ok(inplace ? &s : &d));
    }
    kref_buf_free(&d);
    kref_buf_free(&s);
}

static void test_scale_div(void **state)
{
    (void)state;
    static const double factors[] = {1.0, 0.5, -2.0, 3.0, 1e-3, 1e30, -1e30, NAN, 0.0, 0x1p70};
    static const unsigned divisors[] = {1, 2, 3, 7, 1000, 0xffffffffu};
    uint64_t seed = 99;
    for (int isa = 0; isa < CC__KISA_COUNT; isa++) {
        if (!cc__kernel_isa_available((cc__kernel_isa_t)isa)) continue;
        for (int dt = 0; dt < CC_DTYPE_COUNT; dt++) {
            for (size_t f = 0; f < sizeof factors / sizeof factors[0]; f++)
                check_unary((cc__kernel_isa_t)isa, (cc_dtype_t)dt, 0, factors[f], 0, &seed);
            for (size_t v = 0; v < sizeof divisors / sizeof divisors[0]; v++)
                check_unary((cc__kernel_isa_t)isa, (cc_dtype_t)dt, 1, 0, divisors[v], &seed);
        }
    }
}

/* Named cases: AVG truncates toward zero; the void entry points work. */
static void test_div_named(void **state)
{
    (void)state;
    int32_t i32[4] = {-7, 7, INT32_MIN, INT32_MAX};
    cc__kernel_div(CC_INT32, i32, i32, 4, 2);
    assert_int_equal(i32[0], -3);
    assert_int_equal(i32[1], 3);
    assert_int_equal(i32[2], INT32_MIN / 2);
    assert_int_equal(i32[3], INT32_MAX / 2);
    int64_t i64[2] = {-9, INT64_MIN};
    cc__kernel_div(CC_INT64, i64, i64, 2, 4);
    assert_true(i64[0] == -2 && i64[1] == INT64_MIN / 4);
    float f[2] = {1.0f, -3.0f};
    cc__kernel_div(CC_FLOAT32, f, f, 2, 3);
    assert_true(f[0] == 1.0f / 3.0f && f[1] == -1.0f);
    int8_t i8[3] = {100, -100, 3};
    cc__kernel_scale(CC_INT8, i8, i8, 3, 2.0); /* saturates */
    assert_true(i8[0] == 127 && i8[1] == -128 && i8[2] == 6);
}

/* Bad arguments: a status and one error line each, nothing written. */
static void test_unary_errors(void **state)
{
    (void)state;
    uint64_t before = cc__log_error_count();
    float x[2] = {1.0f, 2.0f};
    assert_int_equal(cc__kernel_div_isa(CC__KISA_GENERIC, CC_FLOAT32, x, x, 2, 0),
                     CC_ERR_INVALID_ARG);
    assert_int_equal(cc__kernel_scale_isa(CC__KISA_GENERIC, CC_DTYPE_COUNT, x, x, 2, 2.0),
                     CC_ERR_INVALID_ARG);
    cc__kernel_div(CC_FLOAT32, x, x, 2, 0);
    assert_true(x[0] == 1.0f && x[1] == 2.0f);
    assert_int_equal(cc__log_error_count() - before, 3);
    g_expected_errors += 3;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multi_rounds_once), cmocka_unit_test(test_multi_all),
        cmocka_unit_test(test_multi_long),        cmocka_unit_test(test_div_named),
        cmocka_unit_test(test_scale_div),         cmocka_unit_test(test_unary_errors),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (cc__log_error_count() != g_expected_errors) {
        print_error("unexpected error log lines: %llu (expected %llu)\n",
                    (unsigned long long)cc__log_error_count(),
                    (unsigned long long)g_expected_errors);
        failed++;
    }
    return failed;
}
