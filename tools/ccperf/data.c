/*
 * data.c - what ccperf puts in the buffers and how it checks the results.
 *
 * Every input is a small integer (1..11; 1 or 2 for PROD), exact in every
 * dtype, so the expected result of a collective is known whatever the
 * reduction order: sums stay exact in float16 and bfloat16 up to ~20 ranks
 * and fit int8 up to 11. Integer results wrap as the library's kernels do
 * (two's complement); floating results are compared with a tolerance of
 * about one unit in the last place of the dtype (AVG divides).
 */
#include <math.h>
#include <string.h>

#include "ccperf.h"
#include "kernels/elem.h"
#include "kernels/kernels.h"

const char *perf_dtype_label(cc_dtype_t d)
{
    static const char *const names[] = {"int8", "uint8",    "int32", "uint32", "int64", "uint64",
                                        "half", "bfloat16", "float", "double", "int16", "uint16"};
    _Static_assert(sizeof names / sizeof names[0] == CC_DTYPE_COUNT, "a label per dtype");
    return (unsigned)d < CC_DTYPE_COUNT ? names[d] : "?";
}

double perf_value(const perf_opts_t *o, int r, size_t j)
{
    if (o->redop == CC_PROD) return (double)(1 + ((size_t)r + j) % 2);
    return (double)(1 + ((size_t)r * 5 + j * 3) % 11);
}

int perf_dtype_is_int(cc_dtype_t d)
{
    return d != CC_FLOAT16 && d != CC_BFLOAT16 && d != CC_FLOAT32 && d != CC_FLOAT64;
}

/* Wrap an integer result to the dtype's width, as the library's kernels do. */
static double wrap(cc_dtype_t d, uint64_t v)
{
    switch (d) {
    case CC_INT8: return (int8_t)v;
    case CC_UINT8: return (uint8_t)v;
    case CC_INT16: return (int16_t)v;
    case CC_UINT16: return (uint16_t)v;
    case CC_INT32: return (int32_t)v;
    case CC_UINT32: return (uint32_t)v;
    case CC_INT64: return (double)(int64_t)v;
    default: return (double)v;
    }
}

static uint64_t int_op(cc_redop_t op, uint64_t a, uint64_t b)
{
    switch (op) {
    case CC_PROD: return a * b;
    case CC_MIN: return a < b ? a : b; /* inputs are positive: signed and unsigned agree */
    case CC_MAX: return a > b ? a : b;
    case CC_BAND: return a & b;
    case CC_BOR: return a | b;
    case CC_BXOR: return a ^ b;
    default: return a + b;
    }
}

static double int_reduced(const perf_opts_t *o, int n, size_t j)
{
    double f = o->redop == CC_PREMUL_SUM ? o->premul : 1.0;
    uint64_t acc = (uint64_t)(perf_value(o, 0, j) * f);
    for (int r = 1; r < n; r++)
        acc = int_op(o->redop, acc, (uint64_t)(perf_value(o, r, j) * f));
    if (o->redop == CC_AVG) acc /= (uint64_t)n;
    return wrap(o->dtype, acc);
}

double perf_reduced(const perf_opts_t *o, int n, size_t j)
{
    if (perf_dtype_is_int(o->dtype)) return int_reduced(o, n, j);
    double f = o->redop == CC_PREMUL_SUM ? o->premul : 1.0, acc = perf_value(o, 0, j) * f;
    for (int r = 1; r < n; r++) {
        double v = perf_value(o, r, j) * f;
        switch (o->redop) {
        case CC_PROD: acc *= v; break;
        case CC_MIN: acc = fmin(acc, v); break;
        case CC_MAX: acc = fmax(acc, v); break;
        default: acc += v; break;
        }
    }
    return o->redop == CC_AVG ? acc / n : acc;
}

void perf_fill(const perf_opts_t *o, void *buf, size_t count, int rank, size_t first)
{
    for (size_t k = 0; k < count; k++)
        cc__elem_put(buf, o->dtype, k, perf_value(o, rank, first + k));
}

void perf_poison(void *buf, size_t bytes)
{
    memset(buf, 0xa5, bytes); /* -23131 in int16-ish lanes, a NaN-free odd pattern elsewhere */
}

/* A relative tolerance of about one unit in the last place. */
static double tolerance(cc_dtype_t d)
{
    switch (d) {
    case CC_FLOAT16: return 1.0 / 1024;
    case CC_BFLOAT16: return 1.0 / 128;
    case CC_FLOAT32: return 1.2e-7;
    case CC_FLOAT64: return 2.3e-16;
    default: return 0;
    }
}

uint64_t perf_check(const perf_coll_t *c, const perf_ctx_t *x)
{
    cc_dtype_t d = x->o->dtype;
    double tol = tolerance(d);
    uint64_t wrong = 0;
    for (size_t k = 0; k < x->shape.recv; k++) {
        double want;
        if (!c->expect(x, k, &want)) continue;
        double got = cc__elem_get(x->recvbuf, d, k);
        if (perf_dtype_is_int(d) ? got != want : !(fabs(got - want) <= tol * fmax(1.0, fabs(want))))
            wrong++;
    }
    return wrong;
}
