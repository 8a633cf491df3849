/*
 * ccperf.h - ccperf's pieces: the options, the collectives it times (with
 * their buffer shapes, bus-bandwidth factors and expected results), the
 * data it fills and checks, and the report (table and JSON).
 */
#ifndef CCPERF_H
#define CCPERF_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"

/* Command-line options (nccl-tests' names and defaults where they exist). */
typedef struct perf_opts {
    const char *coll;        /* collective name (first argument) */
    size_t min_bytes;        /* -b */
    size_t max_bytes;        /* -e */
    size_t step_bytes;       /* -i (used when step_factor <= 1) */
    double step_factor;      /* -f */
    int iters;               /* -n */
    int warmup;              /* -w */
    int check;               /* -c */
    int average;             /* -a: 0 rank 0, 1 mean, 2 min, 3 max */
    int root;                /* -r */
    int show_algo;           /* -A: print the algorithm each measurement ran */
    int inplace;             /* -I: 0 out-of-place only, 1 both, 2 in-place only */
    cc_dtype_t dtype;        /* -d */
    cc_redop_t redop;        /* -o */
    double premul;           /* factor for premul_sum */
    const char *json;        /* -J */
    size_t budget;           /* --budget: iterations shrink so a size moves at most this */
    int settle_ms;           /* --settle: sleep this long after init, before the first call */
    /* put only (docs/ccperf.md, "put"): */
    int put_flush;           /* --mode: 0 signal (put, signal, wait), 1 flush (put, flush) */
    int put_window;          /* --window: puts per timed call, before the one signal or flush */
    int put_one;             /* --origins: 0 ring (every rank to rank + 1), 1 rank 0 to rank 1 */
    int put_set;             /* one of the three was given (refused for other collectives) */
} perf_opts_t;

/* A window of puts writes slots of the target's window in turn; there are at most this many
 * bytes of slots (more puts than fit reuse them), so -e 64M --window 64 needs 64 MiB, not 4 GiB. */
#define PERF_PUT_SPAN ((size_t)64 << 20)

/* Buffers of one size, in elements of the dtype. */
typedef struct perf_shape {
    size_t count;     /* the call's count argument (the "count" column) */
    size_t send;      /* elements of the send buffer */
    size_t recv;      /* elements of the receive buffer */
    size_t send_off;  /* in-place: the send buffer starts this far into the one buffer */
    size_t recv_off;  /* in-place: the receive buffer starts this far into it */
    size_t bytes;     /* the "size" column (0: the larger buffer's bytes) */
    size_t moved;     /* bytes one timed call moves, that algbw divides by time (0: bytes) */
} perf_shape_t;

/* What a call needs; buffers are set per run. */
typedef struct perf_ctx {
    cc_comm_t *comm;
    int rank, size;
    const perf_opts_t *o;
    void *sendbuf, *recvbuf;
    perf_shape_t shape;
} perf_ctx_t;

typedef struct perf_coll {
    const char *name;
    int has_redop; /* the redop column means something */
    int has_root;  /* the root column means something */
    /* Shape for a total of `elems` elements on n ranks, seen from `rank` (s starts zeroed). */
    void (*shape)(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s);
    /* busbw = algbw * factor(n) (nccl-tests' factors). */
    double (*factor)(int n);
    /* One call, blocking. */
    cc_status_t (*run)(perf_ctx_t *x);
    /* Expected value of receive element k on this rank; 0 when it is not defined (no output). */
    int (*expect)(const perf_ctx_t *x, size_t k, double *v);
} perf_coll_t;

/* colls.c */
const perf_coll_t *perf_coll_find(const char *name);
/* put: destroy the last size's window (collective; before the comm goes: its peers would
 * otherwise see the connection end without the destroy's goodbye and log it). */
void perf_put_release(void);
const char *perf_coll_names(void); /* "allreduce broadcast ..." */

/* data.c: the value rank r contributes at logical element j, exact in every dtype. */
double perf_value(const perf_opts_t *o, int r, size_t j);
/* op over ranks 0..n-1 of perf_value(r, j), as the library defines it. */
double perf_reduced(const perf_opts_t *o, int n, size_t j);
/* Fill elements [0, count) of buf with perf_value(rank, first + k). */
void perf_fill(const perf_opts_t *o, void *buf, size_t count, int rank, size_t first);
/* "float", "half", ... as nccl-tests prints them. */
const char *perf_dtype_label(cc_dtype_t d);
/* Integer dtypes (wrap, exact compare, bitwise ops allowed); the rest are floats. */
int perf_dtype_is_int(cc_dtype_t d);
/* Fill bytes with a pattern no result has (so a missing write shows). */
void perf_poison(void *buf, size_t bytes);
/* Count the receive elements that differ from what the collective must produce. */
uint64_t perf_check(const perf_coll_t *c, const perf_ctx_t *x);

/* report.c */
typedef struct perf_result {
    double time_us, algbw, busbw;
    uint64_t wrong;
    const char *algo;
} perf_result_t;

typedef struct perf_report perf_report_t;
perf_report_t *perf_report_new(const perf_opts_t *o, const perf_coll_t *c, int size,
                               const char *transport);
void perf_report_header(perf_report_t *r, cc_comm_t *comm);
void perf_report_row(perf_report_t *r, const perf_shape_t *s, const perf_result_t *oop,
                     const perf_result_t *ip);
/* Footer lines and the JSON file; returns 0, or -1 if the JSON could not be written. */
int perf_report_end(perf_report_t *r, uint64_t wrong_total);
void perf_report_free(perf_report_t *r);

#endif /* CCPERF_H */
