/* kref.c - the scalar reference of kref.h. Slow and plain on purpose. */
#include "kref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- 16-bit floats ------------------------------------------------------- */

/* Format: mantissa bits, exponent bias, exponent field width. */
typedef struct fmt {
    int mbits, bias, ebits;
} fmt_t;

static const fmt_t HALF = {10, 15, 5};
static const fmt_t BF16 = {7, 127, 8};

static double value16(fmt_t f, uint16_t h)
{
    int emax_field = (1 << f.ebits) - 1;
    int e = (h >> f.mbits) & emax_field;
    int m = h & ((1 << f.mbits) - 1);
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == emax_field) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, 1 - f.bias - f.mbits);
    return s * ldexp((1 << f.mbits) + m, e - f.bias - f.mbits);
}

static uint16_t round16(fmt_t f, double v)
{
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    double a = fabs(v);
    int emin = 1 - f.bias, emax = f.bias;
    uint16_t inf = (uint16_t)(sign | (((1 << f.ebits) - 1) << f.mbits));
    if (a == 0) return sign;
    if (isinf(a)) return inf;
    int e;
    frexp(a, &e);
    int E = e - 1; /* a in [2^E, 2^(E+1)) */
    if (E > emax) return inf;
    if (E < emin) E = emin;                 /* subnormal: the quantum stops shrinking */
    double k = rint(ldexp(a, f.mbits - E)); /* nearest even multiple of the quantum */
    if (k >= ldexp(1, f.mbits + 1)) {       /* rounded up into the next binade */
        k /= 2;
        E++;
    }
    if (E > emax) return inf;
    if (k < ldexp(1, f.mbits)) return (uint16_t)(sign | (uint16_t)k); /* subnormal or 0 */
    return (uint16_t)(sign | ((E + f.bias) << f.mbits) | ((uint16_t)k - (1 << f.mbits)));
}

double kref_half_value(uint16_t h)
{
    return value16(HALF, h);
}
double kref_bf16_value(uint16_t b)
{
    return value16(BF16, b);
}
uint16_t kref_round_half(double v)
{
    return round16(HALF, v);
}
uint16_t kref_round_bf16(double v)
{
    return round16(BF16, v);
}

/* ---- element access ------------------------------------------------------- */

int kref_is_float(cc_dtype_t dt)
{
    return dt == CC_FLOAT16 || dt == CC_BFLOAT16 || dt == CC_FLOAT32 || dt == CC_FLOAT64;
}

static int is_signed(cc_dtype_t dt)
{
    return dt == CC_INT8 || dt == CC_INT16 || dt == CC_INT32 || dt == CC_INT64;
}

/* Constant-size copies: these run for every element checked. */
uint64_t kref_get(cc_dtype_t dt, const void *p, size_t i)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (cc_dtype_size(dt)) {
    case 1:
        memcpy(&u8, (const char *)p + i, 1);
        return u8;
    case 2:
        memcpy(&u16, (const char *)p + 2 * i, 2);
        return u16;
    case 4:
        memcpy(&u32, (const char *)p + 4 * i, 4);
        return u32;
    default:
        memcpy(&u64, (const char *)p + 8 * i, 8);
        return u64;
    }
}

void kref_put(cc_dtype_t dt, void *p, size_t i, uint64_t bits)
{
    uint8_t u8 = (uint8_t)bits;
    uint16_t u16 = (uint16_t)bits;
    uint32_t u32 = (uint32_t)bits;
    switch (cc_dtype_size(dt)) {
    case 1:
        memcpy((char *)p + i, &u8, 1);
        break;
    case 2:
        memcpy((char *)p + 2 * i, &u16, 2);
        break;
    case 4:
        memcpy((char *)p + 4 * i, &u32, 4);
        break;
    default:
        memcpy((char *)p + 8 * i, &bits, 8);
        break;
    }
}

static uint64_t mask_of(cc_dtype_t dt)
{
    size_t sz = cc_dtype_size(dt);
    return sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1;
}

/* Signed value of integer bits. */
static int64_t sval(cc_dtype_t dt, uint64_t x)
{
    int bits = (int)cc_dtype_size(dt) * 8;
    if (bits == 64) return (int64_t)x;
    uint64_t top = 1ull << (bits - 1);
    return x & top ? (int64_t)(x | ~mask_of(dt)) : (int64_t)x;
}

/* ---- floats as doubles ---------------------------------------------------- */

static double fval(cc_dtype_t dt, uint64_t x)
{
    float f;
    double d;
    uint32_t u = (uint32_t)x;
    switch (dt) {
    case CC_FLOAT16:
        return kref_half_value((uint16_t)x);
    case CC_BFLOAT16:
        return kref_bf16_value((uint16_t)x);
    case CC_FLOAT32:
        memcpy(&f, &u, 4);
        return f;
    default:
        memcpy(&d, &x, 8);
        return d;
    }
}

/* Round a double result to dt (not NaN). */
static uint64_t fbits(cc_dtype_t dt, double v)
{
    float f;
    uint32_t u;
    uint64_t b;
    switch (dt) {
    case CC_FLOAT16:
        return kref_round_half(v);
    case CC_BFLOAT16:
        return kref_round_bf16(v);
    case CC_FLOAT32:
        f = (float)v; /* correctly rounded from a double */
        memcpy(&u, &f, 4);
        return u;
    default:
        memcpy(&b, &v, 8);
        return b;
    }
}

/* The NaN of bits x with the quiet bit set. */
static uint64_t quiet(cc_dtype_t dt, uint64_t x)
{
    switch (dt) {
    case CC_FLOAT16:
        return x | 0x200;
    case CC_BFLOAT16:
        return x | 0x40;
    case CC_FLOAT32:
        return x | 0x400000;
    default:
        return x | (1ull << 51);
    }
}

static kref_val_t exact(uint64_t bits)
{
    kref_val_t v = {bits, 0};
    return v;
}

static kref_val_t of_double(cc_dtype_t dt, double v)
{
    if (isnan(v)) {
        kref_val_t r = {0, 1};
        return r;
    }
    return exact(fbits(dt, v));
}

/* MIN/MAX: first NaN operand quieted; else the smaller/larger, ties to a. */
static kref_val_t fminmax(cc_dtype_t dt, cc_redop_t op, uint64_t a, uint64_t b)
{
    double x = fval(dt, a), y = fval(dt, b);
    if (isnan(x)) return exact(quiet(dt, a));
    if (isnan(y)) return exact(quiet(dt, b));
    if (op == CC_MIN) return exact(y < x ? b : a);
    return exact(y > x ? b : a);
}

/* SUM/PROD of two values of a type: the exact result is a double here
 * (halves, bf16 products) or rounds innocuously through double (53 >= 2p+2). */
static double farith(cc_redop_t op, double x, double y)
{
    return op == CC_PROD ? x * y : x + y;
}

static cc_redop_t base_op(cc_redop_t op)
{
    return (op == CC_AVG || op == CC_PREMUL_SUM) ? CC_SUM : op;
}

static uint64_t iarith(cc_dtype_t dt, cc_redop_t op, uint64_t a, uint64_t b)
{
    uint64_t m = mask_of(dt);
    switch (op) {
    case CC_SUM:
        return (a + b) & m;
    case CC_PROD:
        return (a * b) & m;
    case CC_BAND:
        return a & b;
    case CC_BOR:
        return a | b;
    case CC_BXOR:
        return a ^ b;
    case CC_MIN:
        if (is_signed(dt)) return sval(dt, b) < sval(dt, a) ? b : a;
        return b < a ? b : a;
    default:
        if (is_signed(dt)) return sval(dt, b) > sval(dt, a) ? b : a;
        return b > a ? b : a;
    }
}

kref_val_t kref_pair(cc_dtype_t dt, cc_redop_t op, uint64_t a, uint64_t b)
{
    op = base_op(op);
    if (!kref_is_float(dt)) return exact(iarith(dt, op, a, b));
    if (op == CC_MIN || op == CC_MAX) return fminmax(dt, op, a, b);
    if (dt == CC_FLOAT64) {
        double x = fval(dt, a), y = fval(dt, b);
        return of_double(dt, op == CC_PROD ? x * y : x + y);
    }
    return of_double(dt, farith(op, fval(dt, a), fval(dt, b)));
}

kref_val_t kref_multi(cc_dtype_t dt, cc_redop_t op, const uint64_t *x, int n)
{
    op = base_op(op);
    if (n == 1) return exact(x[0]); /* a copy */
    int half = dt == CC_FLOAT16 || dt == CC_BFLOAT16;
    if (!half || op == CC_MIN || op == CC_MAX) {
        /* No intermediate rounding question: fold pairwise. */
        kref_val_t acc = exact(x[0]);
        for (int k = 1; k < n; k++) {
            if (acc.any_nan) return acc;
            acc = kref_pair(dt, op, acc.bits, x[k]);
        }
        return acc;
    }
    /* float16/bfloat16 SUM/PROD: float32 accumulator, one rounding at the end. */
    float acc = (float)fval(dt, x[0]);
    for (int k = 1; k < n; k++)
        acc = (float)farith(op, (double)acc, fval(dt, x[k]));
    return of_double(dt, acc);
}

kref_val_t kref_scale(cc_dtype_t dt, uint64_t x, double factor)
{
    if (factor == 1.0) return exact(x);
    if (kref_is_float(dt)) {
        if (dt == CC_FLOAT64) return of_double(dt, fval(dt, x) * factor);
        /* float32 arithmetic with the factor rounded to float32 */
        float p = (float)(fval(dt, x) * (double)(float)factor);
        return of_double(dt, p);
    }
    double p = (is_signed(dt) ? (double)sval(dt, x) : (double)x) * factor;
    int bits = (int)cc_dtype_size(dt) * 8;
    double lo = is_signed(dt) ? -ldexp(1, bits - 1) : 0.0;
    double top = is_signed(dt) ? ldexp(1, bits - 1) : ldexp(1, bits); /* first too big */
    if (isnan(p)) return exact(0);
    if (p < lo) p = lo;
    if (p >= top) return exact(is_signed(dt) ? (mask_of(dt) >> 1) : mask_of(dt));
    if (is_signed(dt)) return exact((uint64_t)(int64_t)trunc(p) & mask_of(dt));
    return exact((uint64_t)trunc(p));
}

kref_val_t kref_div(cc_dtype_t dt, uint64_t x, unsigned divisor)
{
    if (kref_is_float(dt)) {
        if (dt == CC_FLOAT64) return of_double(dt, fval(dt, x) / divisor);
        float q = (float)(fval(dt, x) / (double)(float)divisor);
        return of_double(dt, q);
    }
    if (is_signed(dt)) return exact((uint64_t)(sval(dt, x) / (int64_t)divisor) & mask_of(dt));
    return exact(x / divisor);
}

int kref_match(cc_dtype_t dt, kref_val_t want, uint64_t got)
{
    if (!want.any_nan) return got == want.bits;
    /* a quiet NaN of dt */
    double v = fval(dt, got);
    return isnan(v) && quiet(dt, got) == got;
}

/* ---- inputs ---------------------------------------------------------------- */

uint64_t kref_rand(uint64_t *seed)
{
    /* xorshift64* */
    uint64_t x = *seed;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *seed = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static const uint64_t SPECIAL_INT[] = {
    0,          1,          ~0ull, 0x7f, 0x80, 0x7fff, 0x8000, 0x7fffffff, 0x80000000,
    0x7fffffffffffffffull, 0x8000000000000000ull, 2};
static const uint64_t SPECIAL_F16[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff,
                                       0x0400, 0x0001, 0x03ff, 0x8001, 0x7c00, 0xfc00,
                                       0x7e00, 0x7c01, 0xfe5a, 0x7d00};
static const uint64_t SPECIAL_BF16[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f7f, 0xff7f,
                                        0x0080, 0x0001, 0x007f, 0x8001, 0x7f80, 0xff80,
                                        0x7fc0, 0x7f81, 0xffc1, 0x7fa0};
static const uint64_t SPECIAL_F32[] = {
    0x0,        0x80000000, 0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff, 0x00800000, 0x1,
    0x007fffff, 0x80000001, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc12345, 0x7fa00000};
static const uint64_t SPECIAL_F64[] = {0x0,
                                       0x8000000000000000ull,
                                       0x3ff0000000000000ull,
                                       0xbff0000000000000ull,
                                       0x7fefffffffffffffull,
                                       0x0010000000000000ull,
                                       0x1,
                                       0x800fffffffffffffull,
                                       0x7ff0000000000000ull,
                                       0xfff0000000000000ull,
                                       0x7ff8000000000000ull,
                                       0x7ff0000000000001ull,
                                       0xfff8000000abcdefull,
                                       0x7ff4000000000000ull};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static uint64_t special(cc_dtype_t dt, uint64_t r)
{
    switch (dt) {
    case CC_FLOAT16:
        return SPECIAL_F16[r % NELEM(SPECIAL_F16)];
    case CC_BFLOAT16:
        return SPECIAL_BF16[r % NELEM(SPECIAL_BF16)];
    case CC_FLOAT32:
        return SPECIAL_F32[r % NELEM(SPECIAL_F32)];
    case CC_FLOAT64:
        return SPECIAL_F64[r % NELEM(SPECIAL_F64)];
    default:
        return SPECIAL_INT[r % NELEM(SPECIAL_INT)] & mask_of(dt);
    }
}

/* A small ordinary number: an integer in [-64, 64] scaled by 2^-3..2^3. */
static uint64_t small(cc_dtype_t dt, uint64_t r)
{
    int64_t k = (int64_t)(r % 129) - 64;
    if (!kref_is_float(dt)) return (uint64_t)k & mask_of(dt);
    double v = ldexp((double)k + (double)((r >> 8) % 8) / 8.0, (int)((r >> 16) % 7) - 3);
    return fbits(dt, v);
}

void kref_fill(cc_dtype_t dt, void *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t r = kref_rand(seed);
        uint64_t bits;
        switch (r & 7) {
        case 0:
            bits = special(dt, r >> 3);
            break;
        case 1:
        case 2:
        case 3:
            bits = kref_rand(seed) & mask_of(dt);
            break;
        default:
            bits = small(dt, r >> 3);
            break;
        }
        kref_put(dt, p, i, bits);
    }
}

size_t kref_next_index(size_t i, size_t n)
{
    const size_t edge = 4096, stride = 13;
    if (n < KREF_SAMPLE_FROM || i + 1 < edge || i + 1 >= n - edge) return i + 1;
    return i + stride < n - edge ? i + stride : n - edge;
}

/* ---- test arrays ------------------------------------------------------------- */

#define GUARD_BYTES 64
#define GUARD_BYTE  0xa5

void kref_buf_init(kref_buf_t *b, cc_dtype_t dt, size_t n)
{
    b->esize = cc_dtype_size(dt);
    b->n = n;
    b->mem = malloc(n * b->esize + 2 * GUARD_BYTES + 64 + b->esize);
    if (b->mem == NULL) abort();
    uintptr_t base = ((uintptr_t)b->mem + 63) & ~(uintptr_t)63;
    b->p = (char *)base + GUARD_BYTES + b->esize;
    memset((char *)b->p - GUARD_BYTES, GUARD_BYTE, GUARD_BYTES);
    memset((char *)b->p + n * b->esize, GUARD_BYTE, GUARD_BYTES);
}

int kref_buf_guards_ok(const kref_buf_t *b)
{
    const unsigned char *lo = (const unsigned char *)b->p - GUARD_BYTES;
    const unsigned char *hi = (const unsigned char *)b->p + b->n * b->esize;
    for (int i = 0; i < GUARD_BYTES; i++)
        if (lo[i] != GUARD_BYTE || hi[i] != GUARD_BYTE) return 0;
    return 1;
}

void kref_buf_free(kref_buf_t *b)
{
    free(b->mem);
    b->mem = NULL;
    b->p = NULL;
}
