/*
 * test_perf_check.c - ccperf counts wrong values: for each collective and a
 * few dtype/op pairs, a receive buffer filled with what the collective must
 * produce has no wrong value, one changed element makes exactly one, and a
 * buffer never written (poisoned) is wrong everywhere it is checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ccperf.h"

/* Fill buf with the expected results of c on this rank, in x's dtype. */
static size_t fill_expected(const perf_coll_t *c, perf_ctx_t *x, void *buf)
{
    size_t defined = 0;
    for (size_t k = 0; k < x->shape.recv; k++) {
        double v;
        if (!c->expect(x, k, &v)) continue;
        defined++;
        switch (x->o->dtype) {
        case CC_INT32: ((int32_t *)buf)[k] = (int32_t)v; break;
        case CC_UINT8: ((uint8_t *)buf)[k] = (uint8_t)v; break;
        case CC_FLOAT64: ((double *)buf)[k] = v; break;
        default: ((float *)buf)[k] = (float)v; break;
        }
    }
    return defined;
}

static void one(const char *coll, cc_dtype_t dt, cc_redop_t op, int rank, int n)
{
    perf_opts_t o = {.dtype = dt, .redop = op, .root = 1, .premul = 2.0};
    const perf_coll_t *c = perf_coll_find(coll);
    assert_non_null(c);
    perf_ctx_t x = {.rank = rank, .size = n, .o = &o};
    c->shape(&o, n * 40, n, rank, &x.shape);
    size_t es = cc_dtype_size(dt);
    char *buf = calloc(x.shape.recv + 1, es);
    x.recvbuf = buf;
    size_t defined = fill_expected(c, &x, buf);
    assert_int_equal(perf_check(c, &x), 0);
    if (defined) {
        /* Change the last defined element by one unit. */
        size_t k = x.shape.recv;
        double v;
        while (k-- > 0 && !c->expect(&x, k, &v)) {
        }
        if (dt == CC_INT32) ((int32_t *)buf)[k] += 1;
        else if (dt == CC_UINT8) ((uint8_t *)buf)[k] ^= 1;
        else if (dt == CC_FLOAT64) ((double *)buf)[k] += 1;
        else ((float *)buf)[k] += 1;
        assert_int_equal(perf_check(c, &x), 1);
        perf_poison(buf, x.shape.recv * es);
        assert_int_equal(perf_check(c, &x), defined);
    }
    free(buf);
}

static void test_collectives(void **s)
{
    (void)s;
    static const char *const colls[] = {"allreduce", "broadcast", "reduce",   "allgather",
                                        "reduce_scatter", "alltoall", "gather", "scatter",
                                        "sendrecv", "put"};
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        for (int rank = 0; rank < 3; rank++) {
            one(colls[i], CC_FLOAT32, CC_SUM, rank, 3);
            one(colls[i], CC_INT32, CC_PROD, rank, 3);
        }
}

static void test_ops(void **s)
{
    (void)s;
    one("allreduce", CC_FLOAT64, CC_AVG, 0, 4);
    one("allreduce", CC_FLOAT32, CC_PREMUL_SUM, 2, 4);
    one("allreduce", CC_UINT8, CC_BXOR, 1, 4);
    one("reduce_scatter", CC_INT32, CC_MAX, 3, 4);
    one("reduce", CC_INT32, CC_MIN, 1, 4); /* the root checks, the others have nothing */
    one("reduce", CC_INT32, CC_MIN, 0, 4);
}

/* put from one origin (rank 0 into rank 1, osu_put_latency's pattern): only rank 1 holds a
 * result, rank 0's values; ranks 0 and 2 have nothing to check. */
static void test_put_one_origin(void **s)
{
    (void)s;
    perf_opts_t o = {.dtype = CC_INT32, .redop = CC_SUM, .put_one = 1, .put_window = 3};
    const perf_coll_t *c = perf_coll_find("put");
    assert_non_null(c);
    for (int rank = 0; rank < 3; rank++) {
        perf_ctx_t x = {.rank = rank, .size = 3, .o = &o};
        c->shape(&o, 40, 3, rank, &x.shape);
        size_t defined = 0;
        for (size_t k = 0; k < x.shape.recv; k++) {
            double v;
            if (!c->expect(&x, k, &v)) continue;
            defined++;
            assert_true(v == perf_value(&o, 0, k));
        }
        assert_int_equal(defined, rank == 1 ? 3 * 40 : 0);
    }
}

/* A window of 8 puts: a slot per put in the buffers, algbw over the 8; when fewer slots than
 * puts fit in PERF_PUT_SPAN the puts share them, and one put larger than the span gets one. */
static void test_put_window(void **s)
{
    (void)s;
    perf_opts_t o = {.dtype = CC_FLOAT32, .redop = CC_SUM, .put_window = 8};
    const perf_coll_t *c = perf_coll_find("put");
    perf_shape_t sh = {0};
    c->shape(&o, 40, 2, 0, &sh);
    assert_int_equal(sh.count, 40);
    assert_int_equal(sh.recv, 8 * 40);
    assert_int_equal(sh.send, 8 * 40);
    assert_int_equal(sh.bytes, 160);
    assert_int_equal(sh.moved, 8 * 160);
    size_t half = PERF_PUT_SPAN / 2 / 4; /* elements of a put of half the span */
    sh = (perf_shape_t){0};
    c->shape(&o, half, 2, 0, &sh);
    assert_int_equal(sh.recv, 2 * half);
    assert_int_equal(sh.moved, 8 * half * 4);
    sh = (perf_shape_t){0};
    c->shape(&o, 4 * half, 2, 0, &sh);
    assert_int_equal(sh.recv, 4 * half);
    o.put_window = 0; /* as a zeroed perf_opts_t: one put */
    sh = (perf_shape_t){0};
    c->shape(&o, 40, 2, 0, &sh);
    assert_int_equal(sh.recv, 40);
    assert_int_equal(sh.moved, 160);
}

static void test_names(void **s)
{
    (void)s;
    assert_non_null(perf_coll_find("all_reduce"));
    assert_non_null(perf_coll_find("bcast"));
    assert_null(perf_coll_find("nope"));
    assert_non_null(strstr(perf_coll_names(), "reduce_scatter"));
    assert_string_equal(perf_dtype_label(CC_FLOAT16), "half");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_put_one_origin),
        cmocka_unit_test(test_put_window),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
