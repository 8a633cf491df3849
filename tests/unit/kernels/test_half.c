/*
 * test_half.c - float16 and bfloat16 conversions: exhaustive round trips,
 * exact values, ties to even at every midpoint, overflow, denormals, NaN
 * payloads, and a strided scan of all float32 inputs against kref.c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernels/kernels.h"
#include "kref.h"

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float ffrom(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A 16-bit format under test: its converters, reference, and layout. */
typedef struct fmt16 {
    const char *name;
    float (*to_float)(uint16_t);
    uint16_t (*from_float)(float);
    double (*value)(uint16_t);
    uint16_t (*round)(double);
    uint16_t inf;  /* +Inf bits; the largest finite is inf - 1 */
    uint16_t qbit; /* quiet bit of a NaN */
    int shift;     /* float32 mantissa bits dropped: 13 or 16 */
    double past;   /* the value after the largest finite, for the last midpoint */
} fmt16_t;

static const fmt16_t HALF = {"float16",
                             cc__half_to_float,
                             cc__float_to_half,
                             kref_half_value,
                             kref_round_half,
                             0x7c00,
                             0x200,
                             13,
                             65536.0};
static const fmt16_t BF16 = {"bfloat16",
                             cc__bfloat16_to_float,
                             cc__float_to_bfloat16,
                             kref_bf16_value,
                             kref_round_bf16,
                             0x7f80,
                             0x40,
                             16,
                             0x1p128};

/* Every bit pattern: exact value (or NaN with its payload) and identity round trip. */
static void roundtrip(const fmt16_t *f)
{
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float x = f->to_float((uint16_t)h);
        double want = f->value((uint16_t)h);
        if (isnan(want)) {
            assert_true(isnan(x));
            /* payload and sign shifted into place, nothing added */
            assert_int_equal(fbits(x), ((h & 0x8000u) << 16) | 0x7f800000u |
                                           ((h & (f->inf ^ 0x7fffu)) << f->shift));
        } else {
            if ((double)x != want || !!signbit(x) != !!(h & 0x8000))
                fail_msg("%s 0x%04x -> %a, want %a", f->name, h, (double)x, want);
        }
        if (f->from_float(x) != h)
            fail_msg("%s round trip 0x%04x -> 0x%08x -> 0x%04x", f->name, h, fbits(x),
                     f->from_float(x));
    }
}

static void test_half_roundtrip(void **state)
{
    (void)state;
    roundtrip(&HALF);
}

static void test_bf16_roundtrip(void **state)
{
    (void)state;
    roundtrip(&BF16);
}

/* Midpoint between every pair of neighbours rounds to the even one; one
 * float ulp either side rounds to the nearer. Both signs. */
static void ties(const fmt16_t *f)
{
    for (uint32_t h = 0; h < f->inf; h++) {
        double lo = f->value((uint16_t)h);
        double hi = h + 1 == f->inf ? f->past : f->value((uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2); /* exact: needs 1 bit more than the format */
        assert_true((double)mid == (lo + hi) / 2);
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        for (int s = 0; s < 2; s++) {
            float sg = s ? -1.0f : 1.0f;
            uint16_t sb = s ? 0x8000 : 0;
            assert_int_equal(f->from_float(sg * (float)lo), h | sb); /* exact values */
            assert_int_equal(f->from_float(sg * mid), even | sb);
            assert_int_equal(f->from_float(sg * nextafterf(mid, 0.0f)), h | sb);
            assert_int_equal(f->from_float(sg * nextafterf(mid, INFINITY)), (h + 1) | sb);
        }
    }
}

static void test_half_ties(void **state)
{
    (void)state;
    ties(&HALF);
    /* named cases: overflow, the largest finite, denormals, underflow */
    assert_int_equal(cc__float_to_half(65520.0f), 0x7c00);                /* tie -> Inf */
    assert_int_equal(cc__float_to_half(nextafterf(65520.0f, 0)), 0x7bff); /* 65504 */
    assert_int_equal(cc__float_to_half(1e10f), 0x7c00);
    assert_int_equal(cc__float_to_half(-INFINITY), 0xfc00);
    assert_int_equal(cc__float_to_half(0x1p-24f), 0x0001); /* smallest */
    assert_int_equal(cc__float_to_half(0x1p-25f), 0x0000); /* tie -> 0 */
    assert_int_equal(cc__float_to_half(0x1.8p-25f), 0x0001);
    assert_int_equal(cc__float_to_half(-0x1p-26f), 0x8000);
    assert_int_equal(cc__float_to_half(0x1p-149f), 0x0000);    /* float denormal */
    assert_int_equal(cc__float_to_half(0x1.ffcp-15f), 0x0400); /* tie: up to normal */
    assert_int_equal(cc__float_to_half(0x1.ff8p-15f), 0x03ff); /* largest denormal */
}

static void test_bf16_ties(void **state)
{
    (void)state;
    ties(&BF16);
    assert_int_equal(cc__float_to_bfloat16(ffrom(0x7f7f8000)), 0x7f80); /* tie -> Inf */
    assert_int_equal(cc__float_to_bfloat16(ffrom(0x00018000)), 0x0002); /* denormal tie */
    assert_int_equal(cc__float_to_bfloat16(ffrom(0x00008000)), 0x0000);
}

/* NaN: sign and top payload bits kept; the quiet NaN when they are all 0. */
static uint16_t nan_rule(const fmt16_t *f, uint32_t u)
{
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint16_t pay = (uint16_t)((u & 0x7fffff) >> f->shift);
    return (uint16_t)(sign | f->inf | (pay ? pay : f->qbit));
}

/* Every 509th float32 (8.4M inputs, all exponents, both signs) against the
 * reference; the stride is odd so the low mantissa bits vary too. */
static void scan(const fmt16_t *f)
{
    uint64_t checked = 0;
    for (uint64_t v = 0; v <= 0xffffffffu; v += 509) {
        uint32_t u = (uint32_t)v;
        float x = ffrom(u);
        uint16_t want = isnan(x) ? nan_rule(f, u) : f->round((double)x);
        uint16_t got = f->from_float(x);
        if (got != want) fail_msg("%s(0x%08x) = 0x%04x, want 0x%04x", f->name, u, got, want);
        checked++;
    }
    assert_true(checked > 8000000);
    /* NaNs whose payload lies below the kept bits */
    assert_int_equal(f->from_float(ffrom(0x7f800001)), f->inf | f->qbit);
    assert_int_equal(f->from_float(ffrom(0xff800001)), 0x8000 | f->inf | f->qbit);
}

static void test_half_scan(void **state)
{
    (void)state;
    scan(&HALF);
}

static void test_bf16_scan(void **state)
{
    (void)state;
    scan(&BF16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_roundtrip), cmocka_unit_test(test_bf16_roundtrip),
        cmocka_unit_test(test_half_ties),      cmocka_unit_test(test_bf16_ties),
        cmocka_unit_test(test_half_scan),      cmocka_unit_test(test_bf16_scan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
