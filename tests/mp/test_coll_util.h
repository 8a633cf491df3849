/*
 * test_coll_util.h - what the collective tests share: inputs every rank can
 * compute for every other rank (so each checks against a reference of its
 * own), dtype access through memcpy (any alignment), buffers at chosen
 * offsets from a 64-byte boundary, the sampling of the large matrix, and
 * the loop over algorithms.
 *
 * Sampling: CI runs a deterministic sample of the matrix (label mp); with
 * CCTEST_NIGHTLY=1 every combination runs (label nightly, see
 * docs/collectives.md "Tests").
 */
#ifndef CC_TEST_COLL_UTIL_H
#define CC_TEST_COLL_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ccomm/ccomm.h"
#include "kernels/elem.h"
#include "mp.h"

/* The counts of the matrix; TC_BIG is 1M + 3 elements. */
#define TC_BIG ((size_t)(1u << 20) + 3)

/*
 * Sanitizer builds run the sample thinner (every TC_THIN-th case of it): the
 * code paths are the same as in the release run, which takes the whole
 * sample, and ASan's cost on the data checks would double CI's time (every
 * 3rd until 2026-12-02, when the ASan run of test_shm_reduce, test_shm_move
 * and test_coll_reduce alone took 95, 65 and 61 s of a 1405 s CI run). A
 * build may set it (-DCCOMM_TEST_THIN=N): CI's second release build runs
 * every 4th.
 */
#ifndef TC_THIN
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TC_THIN 5
#else
#define TC_THIN 1
#endif
#endif
extern const size_t tc_counts[5]; /* 0, 1, 7, 1000, TC_BIG */

/*
 * CCOMM_TIMEOUT of the ranks tc_run starts, in seconds: a deadlock fails in
 * that time with ccomm's own message naming the op and the rank waited for,
 * not by ctest's kill minutes later. The slowest healthy op of the matrix
 * (1M+3 elements on 8 ranks, more ranks than cores) takes well under a
 * second in a release build; sanitizer builds run several times slower.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TC_TIMEOUT_S 60
#else
#define TC_TIMEOUT_S 15
#endif
#define TC_STR_(x)     #x
#define TC_STR(x)      TC_STR_(x)
#define TC_TIMEOUT_ENV "CCOMM_TIMEOUT=" TC_STR(TC_TIMEOUT_S)

/* 1 when the whole matrix runs (CCTEST_NIGHTLY=1 or the "full" argument). */
int tc_full(void);
void tc_set_full(int full);

/* Whether the combination `key` runs: always in full mode, else about 1 in `every`. */
int tc_pick(uint64_t key, unsigned every);
/* The key of a combination on a job of n ranks: n is part of it, so each job of the sample
 * draws its own cases (with the same cases on every job, the sample's rarest ones, such as
 * the 1M+3 counts, would run for the same few algorithms everywhere or nowhere). */
uint64_t tc_key(int n, int a, int b, int c, int d, int e);

/* Rank r's input at element i for op: small integers, exact in every dtype and op. */
double tc_input(int r, size_t i, cc_redop_t op);
/* The reduction over ranks 0..n-1 of tc_input, as the dtype holds it (AVG and
 * PREMUL_SUM with factor TC_PREMUL follow the kernels' rules). */
double tc_expect(int n, size_t i, cc_redop_t op, cc_dtype_t dt);
/* Integer dtypes (AVG and PREMUL_SUM truncate); the others are floats. */
int tc_is_int(cc_dtype_t dt);
#define TC_PREMUL 0.5

/* Element i of a dtype buffer: cc__elem_put / cc__elem_get (kernels/elem.h). */

/* Byte j of the data rank r contributes to block `blk` (movement tests). */
static inline unsigned char tc_byte(int r, int blk, size_t j)
{
    return (unsigned char)(r * 131 + blk * 37 + (int)(j % 251) * 7 + (int)(j / 251) + 3);
}

/* `bytes` bytes at `off` (< 64) bytes past a 64-byte boundary; free with tc_free. */
void *tc_alloc(size_t bytes, size_t off);
void tc_free(void *p);

/* Algorithms of a type on this comm, then "" (the automatic choice); returns how many. */
int tc_algos(cc_comm_t *comm, cc_op_type_t type, const char **names, int max);
/* Force an algorithm ("" for the automatic choice). */
void tc_force(cc_comm_t *comm, cc_op_type_t type, const char *name);

/* Fail a rank with a message (returns 1 from the enclosing function). */
#define TC_REQUIRE(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: rank check failed: %s: ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* The status of a call, after waiting for its work handle (if any; freed). */
cc_status_t tc_finish(cc_status_t st, cc_work_t *w);

/* Init a comm from the harness's arguments. */
cc_comm_t *tc_init(int rank, int size, const char *addr);

/* Run fn on n forked ranks over `transport`; returns the failed ranks. */
int tc_run(int n, const char *transport, int (*fn)(int, int, const char *, void *), int timeout_s);

/* A job of the matrix: how many ranks, over which transport ("auto": shm, or "tcp"). */
typedef struct tc_job {
    int n;
    const char *transport;
} tc_job_t;

/*
 * The main of a matrix test: one cmocka test per job, each forking its ranks
 * to run fn. Without arguments the `sample` jobs run a sample of the matrix
 * (CI); with "nightly" every rank count 1-8 over shm and TCP runs the whole
 * matrix, or the test is skipped (77) unless CCTEST_NIGHTLY=1.
 */
int tc_main(int argc, char **argv, int (*fn)(int, int, const char *, void *),
            const tc_job_t *sample, int nsample, int timeout_s);

#endif /* CC_TEST_COLL_UTIL_H */
