/*
 * bench.c - ccperf's measurement loop: per size and placement, warm up,
 * time the calls between two barriers, check one call, and agree across
 * ranks on the time (-a) and the number of wrong values.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ccperf.h"

/* What the post hook saw of the last op: the algorithm and transport names are static strings. */
static const char *g_algo, *g_transport;

static void on_post(const cc_op_info_t *op, void *user)
{
    (void)user;
    g_algo = op->algorithm;
    if (op->transport) g_transport = op->transport;
}

/* Add on_post to the comm (g_algo cleared): 0, or -1 with the reason printed. */
static int algo_hook_add(const perf_ctx_t *x, cc_hook_handle_t *h)
{
    g_algo = NULL;
    cc_status_t st = cc_hook_add_post(x->comm, on_post, NULL, 0, h);
    if (st == CC_OK) return 0;
    fprintf(stderr, "ccperf: rank %d: cannot add a post hook: %s\n", x->rank, cc_status_name(st));
    return -1;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

typedef struct bufs {
    char *send, *recv, *inplace;
    size_t bytes;
} bufs_t;

static int bufs_alloc(bufs_t *b, size_t bytes)
{
    b->bytes = (bytes + 4095) / 4096 * 4096;
    if (!b->bytes) b->bytes = 4096;
    b->send = aligned_alloc(4096, b->bytes);
    b->recv = aligned_alloc(4096, b->bytes);
    b->inplace = aligned_alloc(4096, b->bytes);
    if (!b->send || !b->recv || !b->inplace) return -1;
    /* First touch now, not inside the timed loop. */
    memset(b->send, 0, b->bytes);
    memset(b->recv, 0, b->bytes);
    memset(b->inplace, 0, b->bytes);
    return 0;
}

static void bufs_free(bufs_t *b)
{
    free(b->send);
    free(b->recv);
    free(b->inplace);
}

/* Point the context at the buffers of one placement and (for a check) fill them. */
static void place(perf_ctx_t *x, bufs_t *b, int inplace, int fill)
{
    size_t es = cc_dtype_size(x->o->dtype);
    const perf_shape_t *s = &x->shape;
    if (inplace) {
        x->sendbuf = b->inplace + s->send_off * es;
        x->recvbuf = b->inplace + s->recv_off * es;
        if (fill) perf_poison(b->inplace, (s->send > s->recv ? s->send : s->recv) * es);
    } else {
        x->sendbuf = b->send;
        x->recvbuf = b->recv;
        if (fill) perf_poison(b->recv, s->recv * es);
    }
    if (fill) perf_fill(x->o, x->sendbuf, s->send, x->rank, 0);
}

static int run_n(const perf_coll_t *c, perf_ctx_t *x, int n, size_t bytes)
{
    for (int i = 0; i < n; i++) {
        cc_status_t st = c->run(x);
        if (st != CC_OK) {
            fprintf(stderr, "ccperf: rank %d: %s of %zu bytes failed: %s\n", x->rank, c->name,
                    bytes, cc_status_name(st));
            return -1;
        }
    }
    return 0;
}

/* The time every rank reports, combined as -a says (0: rank 0's own). Puts from one origin
 * take the larger of the origin's and the target's time (the others idle at ~0): the last put
 * counts once the target saw it. */
static int agree_time(perf_ctx_t *x, double local, double *out)
{
    static const cc_redop_t ops[] = {CC_SUM, CC_SUM, CC_MIN, CC_MAX};
    int average = x->o->put_one ? 3 : x->o->average;
    double v = local;
    if (average == 0) {
        *out = local;
        return 0;
    }
    if (cc_allreduce(x->comm, &local, &v, 1, CC_FLOAT64, ops[average], NULL, NULL) != CC_OK)
        return -1;
    *out = average == 1 ? v / x->size : v;
    return 0;
}

static int measure(const perf_coll_t *c, perf_ctx_t *x, bufs_t *b, int inplace,
                   perf_result_t *res)
{
    const perf_opts_t *o = x->o;
    size_t bytes = x->shape.bytes, moved = x->shape.moved;
    int iters = o->iters, warmup = o->warmup;
    /* Every rank computes the same counts from the same size: they stay in step. */
    if (o->budget && moved && o->budget / moved < (size_t)iters) {
        iters = (int)(o->budget / moved) + 1;
        if (warmup > iters) warmup = iters;
    }
    place(x, b, inplace, o->check);
    /* The algorithm that ran is read off a post hook during the warm-up only: a hook in the
     * timed loop would add its chain walk to every op, which a program without hooks does
     * not pay (and Open MPI's benchmark does not either). With no warm-up it stays on. */
    cc_hook_handle_t h;
    if (algo_hook_add(x, &h)) return -1;
    int failed = run_n(c, x, warmup, bytes);
    if (h && warmup > 0) {
        cc_hook_remove(h);
        h = 0;
    }
    double t = 0;
    if (!failed) failed = cc_barrier(x->comm, NULL, NULL) != CC_OK;
    if (!failed) {
        double t0 = now_us();
        failed = run_n(c, x, iters, bytes);
        t = (now_us() - t0) / iters;
    }
    if (h) cc_hook_remove(h);
    res->algo = g_algo; /* the last op the hook saw: a warm-up call, or a timed one */
    if (failed) return -1;
    uint64_t wrong = 0, total = 0;
    if (o->check) {
        place(x, b, inplace, 1);
        /* One-sided puts land in a peer's buffer whenever the origin runs: not before the
         * target poisoned it (the first barrier), and (puts then a flush, which the target
         * does not wait for) before the target reads it (the second). */
        if (cc_barrier(x->comm, NULL, NULL) != CC_OK || run_n(c, x, 1, bytes) ||
            cc_barrier(x->comm, NULL, NULL) != CC_OK)
            return -1;
        wrong = perf_check(c, x);
    }
    if (agree_time(x, t, &res->time_us) != CC_OK ||
        cc_allreduce(x->comm, &wrong, &total, 1, CC_UINT64, CC_SUM, NULL, NULL) != CC_OK)
        return -1;
    res->wrong = total;
    res->algbw = res->time_us > 0 ? (double)moved / res->time_us / 1e3 : 0;
    res->busbw = res->algbw * c->factor(x->size);
    return 0;
}

/* Collectives with an in-place form (sendrecv, put and barrier have none). */
static int has_inplace(const perf_coll_t *c)
{
    return strcmp(c->name, "sendrecv") != 0 && strcmp(c->name, "barrier") != 0 &&
           strcmp(c->name, "put") != 0;
}

static size_t next_size(const perf_opts_t *o, size_t size)
{
    if (o->step_factor > 1) {
        size_t n = (size_t)((double)size * o->step_factor);
        return n > size ? n : size + 1;
    }
    return size + o->step_bytes;
}

/* The shape of one size; the size column defaults to the larger buffer, what a call moves to
 * the size column. */
static void shape_of(const perf_coll_t *c, const perf_ctx_t *x, size_t size, perf_shape_t *s)
{
    size_t es = cc_dtype_size(x->o->dtype);
    *s = (perf_shape_t){0};
    c->shape(x->o, size / es, x->size, x->rank, s);
    if (!s->bytes) s->bytes = (s->send > s->recv ? s->send : s->recv) * es;
    if (!s->moved) s->moved = s->bytes;
}

static int sweep(const perf_coll_t *c, perf_ctx_t *x, bufs_t *b, perf_report_t *rep,
                 uint64_t *wrong)
{
    int barrier = !strcmp(c->name, "barrier");
    for (size_t size = x->o->min_bytes; size <= x->o->max_bytes; size = next_size(x->o, size)) {
        shape_of(c, x, size, &x->shape);
        perf_result_t oop = {0}, ip = {0};
        if (measure(c, x, b, 0, &oop)) return -1;
        if (has_inplace(c) && measure(c, x, b, 1, &ip)) return -1;
        *wrong += oop.wrong + ip.wrong;
        if (rep) perf_report_row(rep, &x->shape, &oop, has_inplace(c) ? &ip : NULL);
        if (barrier) break; /* one row: a barrier has no size */
    }
    return 0;
}

int perf_run(const perf_opts_t *o, const perf_coll_t *c, cc_comm_t *comm)
{
    perf_ctx_t x = {.comm = comm, .rank = cc_comm_rank(comm), .size = cc_comm_size(comm), .o = o};
    cc_hook_handle_t h;
    bufs_t b = {0};
    /* The largest buffer of the sweep (a window of puts needs fewer slots at larger sizes). */
    size_t most = 0, es = cc_dtype_size(o->dtype);
    for (size_t size = o->min_bytes; size <= o->max_bytes; size = next_size(o, size)) {
        perf_shape_t s;
        shape_of(c, &x, size, &s);
        size_t need = (s.send > s.recv ? s.send : s.recv) * es;
        if (need > most) most = need;
    }
    if (bufs_alloc(&b, most) != 0) {
        fprintf(stderr, "ccperf: rank %d: cannot allocate %zu bytes x 3\n", x.rank, most);
        bufs_free(&b);
        return 1;
    }
    /* What a running job sees, not its first milliseconds: op stamps come from clock_gettime
     * until the TSC line is drawn, 20 ms after init (lib/base/clock.c), three stamps an op. The
     * barrier below is the first stamp after the wait, and draws it. */
    if (o->settle_ms) {
        struct timespec ts = {o->settle_ms / 1000, (long)(o->settle_ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    /* One op first, so the header knows the transport. */
    if (algo_hook_add(&x, &h)) {
        bufs_free(&b);
        return 1;
    }
    cc_status_t st = cc_barrier(comm, NULL, NULL);
    cc_hook_remove(h);
    if (st != CC_OK) {
        bufs_free(&b);
        return 1;
    }
    perf_report_t *rep = NULL;
    if (x.rank == 0) {
        rep = perf_report_new(o, c, x.size, g_transport ? g_transport : "?");
        if (rep) perf_report_header(rep, comm);
    }
    uint64_t wrong = 0;
    int rc = sweep(c, &x, &b, rep, &wrong) ? 1 : 0;
    if (rep && !rc && perf_report_end(rep, wrong) != 0) rc = 1;
    if (wrong) rc = 1;
    perf_report_free(rep);
    bufs_free(&b);
    return rc;
}
