/*
 * kref.h - a scalar reference for the kernels of lib/kernels, written
 * independently of them: float16/bfloat16 values are decoded with ldexp and
 * rounded with frexp/rint, floats are combined in double, integers wrap in
 * uint64_t. Elements travel as raw bits in a uint64_t.
 */
#ifndef CC_TEST_KREF_H
#define CC_TEST_KREF_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/types.h"

/* The expected result of one element: exact bits, or "any quiet NaN" (SUM
 * and PROD do not promise which NaN payload survives). */
typedef struct kref_val {
    uint64_t bits;
    int any_nan;
} kref_val_t;

/* Exact value of a float16 / bfloat16 (NaN for NaN). */
double kref_half_value(uint16_t h);
double kref_bf16_value(uint16_t b);
/* Round a double (not NaN) to nearest even float16 / bfloat16, overflow to Inf. */
uint16_t kref_round_half(double v);
uint16_t kref_round_bf16(double v);

/* Element i of an array of dtype, as bits; and the reverse. */
uint64_t kref_get(cc_dtype_t dt, const void *p, size_t i);
void kref_put(cc_dtype_t dt, void *p, size_t i, uint64_t bits);

/* a op b; x[0] op x[1] op ... (floats 16 accumulated in float32); scale; div. */
kref_val_t kref_pair(cc_dtype_t dt, cc_redop_t op, uint64_t a, uint64_t b);
kref_val_t kref_multi(cc_dtype_t dt, cc_redop_t op, const uint64_t *x, int n);
kref_val_t kref_scale(cc_dtype_t dt, uint64_t x, double factor);
kref_val_t kref_div(cc_dtype_t dt, uint64_t x, unsigned divisor);

/* Does `got` satisfy `want` for dtype dt? */
int kref_match(cc_dtype_t dt, kref_val_t want, uint64_t got);

/* Fill n elements with a deterministic mix of special values (zeros,
 * extremes, denormals, Inf, quiet and signalling NaN), random bits and small
 * ordinary numbers. */
void kref_fill(cc_dtype_t dt, void *p, size_t n, uint64_t *seed);
uint64_t kref_rand(uint64_t *seed);

/*
 * A test array: n elements of dt that start one element past a 64-byte
 * boundary (never vector-aligned), between guard zones of a known pattern
 * that no kernel may touch.
 */
typedef struct kref_buf {
    char *mem;    /* what malloc returned */
    void *p;      /* the n elements */
    size_t n;     /* elements */
    size_t esize; /* bytes per element */
} kref_buf_t;

void kref_buf_init(kref_buf_t *b, cc_dtype_t dt, size_t n);
int kref_buf_guards_ok(const kref_buf_t *b);
void kref_buf_free(kref_buf_t *b);

/*
 * The next element to check after i. Arrays of KREF_SAMPLE_FROM elements
 * or more are checked at the first and last 4096 elements and at every 13th
 * between (odd, so every vector lane and block position is hit): the
 * reference costs ~100 ns an element, a kernel ~1 ns.
 */
#define KREF_SAMPLE_FROM 100000
size_t kref_next_index(size_t i, size_t n);

/* Is dt a floating-point dtype? */
int kref_is_float(cc_dtype_t dt);

#endif /* CC_TEST_KREF_H */
