/*
 * colls.c - the collectives ccperf times: how a size maps to buffers (as
 * nccl-tests does: the size is the larger buffer of one rank), the
 * bus-bandwidth factor, the call, and the result each rank must hold.
 */
#include <string.h>

#include "ccperf.h"

static const cc_op_opts_t *opts_of(const perf_ctx_t *x, cc_op_opts_t *o)
{
    *o = (cc_op_opts_t)CC_OP_OPTS_INIT;
    o->premul_scalar = x->o->premul;
    return o;
}

static double one(int n)
{
    (void)n;
    return 1.0;
}
static double ring_factor(int n)
{
    return (double)(n - 1) / n;
}
static double allreduce_factor(int n)
{
    return 2.0 * (n - 1) / n;
}

/* Same count in and out: allreduce, broadcast, reduce, sendrecv. */
static void shape_same(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s)
{
    (void)o;
    (void)n;
    (void)rank;
    s->count = s->send = s->recv = elems;
    s->send_off = s->recv_off = 0;
}

/* ---- allreduce ---------------------------------------------------------------------------- */

static cc_status_t run_allreduce(perf_ctx_t *x)
{
    cc_op_opts_t o;
    return cc_allreduce(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, x->o->redop,
                        opts_of(x, &o), NULL);
}

static int expect_allreduce(const perf_ctx_t *x, size_t k, double *v)
{
    *v = perf_reduced(x->o, x->size, k);
    return 1;
}

/* ---- broadcast and reduce (rooted, same count in and out) --------------------------------- */

static cc_status_t run_broadcast(perf_ctx_t *x)
{
    return cc_broadcast(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, x->o->root,
                        NULL, NULL);
}

static int expect_broadcast(const perf_ctx_t *x, size_t k, double *v)
{
    *v = perf_value(x->o, x->o->root, k);
    return 1;
}

static cc_status_t run_reduce(perf_ctx_t *x)
{
    cc_op_opts_t o;
    return cc_reduce(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, x->o->redop,
                     x->o->root, opts_of(x, &o), NULL);
}

static int expect_reduce(const perf_ctx_t *x, size_t k, double *v)
{
    if (x->rank != x->o->root) return 0;
    *v = perf_reduced(x->o, x->size, k);
    return 1;
}

/* ---- allgather and gather: count per rank in, n x count out --------------------------------- */

/* In place, a rank's block of the output is its input (NCCL's rule). */
static void shape_gather(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s)
{
    (void)o;
    s->count = s->send = elems / (size_t)n;
    s->recv = s->count * (size_t)n;
    s->recv_off = 0;
    s->send_off = (size_t)rank * s->count;
}

static cc_status_t run_allgather(perf_ctx_t *x)
{
    return cc_allgather(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, NULL, NULL);
}

/* Block q of the output is what rank q sent: its value at element k - q x count. */
static int expect_allgather(const perf_ctx_t *x, size_t k, double *v)
{
    size_t c = x->shape.count;
    *v = perf_value(x->o, (int)(k / c), k % c);
    return 1;
}

static cc_status_t run_gather(perf_ctx_t *x)
{
    return cc_gather(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, x->o->root,
                     NULL, NULL);
}

static int expect_gather(const perf_ctx_t *x, size_t k, double *v)
{
    return x->rank == x->o->root ? expect_allgather(x, k, v) : 0;
}

/* ---- reduce_scatter and scatter: n x count in, count out ------------------------------------ */

static void shape_scatter(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s)
{
    (void)o;
    s->count = s->recv = elems / (size_t)n;
    s->send = s->count * (size_t)n;
    s->send_off = 0;
    s->recv_off = (size_t)rank * s->count;
}

static cc_status_t run_reduce_scatter(perf_ctx_t *x)
{
    cc_op_opts_t o;
    return cc_reduce_scatter(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype,
                             x->o->redop, opts_of(x, &o), NULL);
}

static int expect_reduce_scatter(const perf_ctx_t *x, size_t k, double *v)
{
    *v = perf_reduced(x->o, x->size, (size_t)x->rank * x->shape.count + k);
    return 1;
}

static cc_status_t run_scatter(perf_ctx_t *x)
{
    return cc_scatter(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, x->o->root,
                      NULL, NULL);
}

static int expect_scatter(const perf_ctx_t *x, size_t k, double *v)
{
    *v = perf_value(x->o, x->o->root, (size_t)x->rank * x->shape.count + k);
    return 1;
}

/* ---- alltoall: n blocks in, n blocks out ---------------------------------------------------- */

static void shape_alltoall(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s)
{
    (void)o;
    (void)rank;
    s->count = elems / (size_t)n;
    s->send = s->recv = s->count * (size_t)n;
    s->send_off = s->recv_off = 0;
}

static cc_status_t run_alltoall(perf_ctx_t *x)
{
    return cc_alltoall(x->comm, x->sendbuf, x->recvbuf, x->shape.count, x->o->dtype, NULL, NULL);
}

/* Block q came from rank q, which sent its block `rank`. */
static int expect_alltoall(const perf_ctx_t *x, size_t k, double *v)
{
    size_t c = x->shape.count;
    *v = perf_value(x->o, (int)(k / c), (size_t)x->rank * c + k % c);
    return 1;
}

/* ---- sendrecv: to rank + 1, from rank - 1 -------------------------------------------------- */

/* Both in one group: every rank receives and sends at once (no order to agree on). */
static cc_status_t run_sendrecv(perf_ctx_t *x)
{
    int n = x->size, r = x->rank;
    size_t c = x->shape.count;
    cc_status_t st = cc_group_start();
    if (st != CC_OK) return st;
    cc_status_t rs = cc_recv(x->comm, x->recvbuf, c, x->o->dtype, (r - 1 + n) % n, NULL, NULL);
    cc_status_t ss = cc_send(x->comm, x->sendbuf, c, x->o->dtype, (r + 1) % n, NULL, NULL);
    st = cc_group_end(NULL, NULL);
    return rs != CC_OK ? rs : ss != CC_OK ? ss : st;
}

static int expect_sendrecv(const perf_ctx_t *x, size_t k, double *v)
{
    *v = perf_value(x->o, (x->rank - 1 + x->size) % x->size, k);
    return 1;
}

/* ---- put: a window of puts into rank + 1, then a signal (wait for rank - 1's) or a flush ----- */

/* Slots of `bytes` in the target's window for a window of puts: one per put, within
 * PERF_PUT_SPAN bytes (at least one). */
static size_t put_slots(const perf_opts_t *o, size_t bytes)
{
    size_t w = o->put_window > 0 ? (size_t)o->put_window : 1;
    size_t fit = bytes ? PERF_PUT_SPAN / bytes : w;
    return fit < 1 ? 1 : fit < w ? fit : w;
}

/* count is one put's; the buffers hold every slot; algbw counts every put of the window. */
static void shape_put(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s)
{
    (void)n;
    (void)rank;
    size_t es = cc_dtype_size(o->dtype);
    size_t w = o->put_window > 0 ? (size_t)o->put_window : 1;
    s->count = elems;
    s->send = s->recv = elems * put_slots(o, elems * es);
    s->bytes = elems * es;
    s->moved = elems * es * w;
}

/* The window over the current receive buffer: made again when the buffer or the size changes
 * (every rank changes them at the same step, so the collective create stays in step). */
static struct {
    cc_window_t *win;
    void *buf;
    size_t len;
    uint64_t signals; /* received from the source so far on this window */
} g_put;

static cc_status_t put_window_for(perf_ctx_t *x, size_t span)
{
    if (g_put.win && g_put.buf == x->recvbuf && g_put.len == span) return CC_OK;
    if (g_put.win) cc_window_destroy(g_put.win);
    g_put.win = NULL;
    cc_status_t st = cc_window_create(x->comm, x->recvbuf, span, NULL, &g_put.win);
    if (st != CC_OK) return st;
    g_put.buf = x->recvbuf;
    g_put.len = span;
    g_put.signals = 0;
    return CC_OK;
}

void perf_put_release(void)
{
    if (g_put.win) cc_window_destroy(g_put.win);
    g_put.win = NULL;
}

/* Ring: every rank puts into rank + 1 and (signal mode) waits for rank - 1. One origin
 * (osu_put_latency's pattern): rank 0 puts into rank 1, which waits; the others only create
 * the window. Put j of the window goes to slot j mod slots, from the same slot of sendbuf. */
static cc_status_t run_put(perf_ctx_t *x)
{
    const perf_opts_t *o = x->o;
    int n = x->size, r = x->rank;
    size_t es = cc_dtype_size(o->dtype), len = x->shape.count * es;
    size_t slots = x->shape.count ? x->shape.recv / x->shape.count : 1;
    if (n < 2) return CC_ERR_NOT_SUPPORTED; /* a put goes to another rank */
    cc_status_t st = put_window_for(x, x->shape.recv * es);
    int to = o->put_one ? 1 : (r + 1) % n, from = o->put_one ? 0 : (r - 1 + n) % n;
    int w = o->put_window > 0 ? o->put_window : 1;
    if (st == CC_OK && (!o->put_one || r == 0)) {
        for (int j = 0; j < w && st == CC_OK; j++) {
            size_t off = (size_t)j % slots * len;
            st = cc_window_put(g_put.win, (const char *)x->sendbuf + off, len, to, off, NULL, NULL);
        }
        if (st == CC_OK)
            st = o->put_flush ? cc_window_flush(g_put.win, to, NULL)
                              : cc_window_signal(g_put.win, to, NULL, NULL);
    }
    if (st == CC_OK && !o->put_flush && (!o->put_one || r == 1))
        st = cc_window_wait_signal(g_put.win, from, ++g_put.signals, NULL, NULL);
    return st;
}

/* Every slot holds the source's send buffer at the same place; with one origin only rank 1
 * receives. */
static int expect_put(const perf_ctx_t *x, size_t k, double *v)
{
    if (!x->o->put_one) return expect_sendrecv(x, k, v);
    if (x->rank != 1) return 0;
    *v = perf_value(x->o, 0, k);
    return 1;
}

/* ---- barrier: no data ---------------------------------------------------------------------- */

static void shape_none(const perf_opts_t *o, size_t elems, int n, int rank, perf_shape_t *s)
{
    (void)o;
    (void)rank;
    (void)elems;
    (void)n;
    memset(s, 0, sizeof(*s));
}

static double zero(int n)
{
    (void)n;
    return 0.0;
}

static cc_status_t run_barrier(perf_ctx_t *x)
{
    return cc_barrier(x->comm, NULL, NULL);
}

static int expect_none(const perf_ctx_t *x, size_t k, double *v)
{
    (void)x;
    (void)k;
    (void)v;
    return 0;
}

static const perf_coll_t colls[] = {
    {"allreduce", 1, 0, shape_same, allreduce_factor, run_allreduce, expect_allreduce},
    {"broadcast", 0, 1, shape_same, one, run_broadcast, expect_broadcast},
    {"reduce", 1, 1, shape_same, one, run_reduce, expect_reduce},
    {"allgather", 0, 0, shape_gather, ring_factor, run_allgather, expect_allgather},
    {"reduce_scatter", 1, 0, shape_scatter, ring_factor, run_reduce_scatter, expect_reduce_scatter},
    {"alltoall", 0, 0, shape_alltoall, ring_factor, run_alltoall, expect_alltoall},
    {"gather", 0, 1, shape_gather, ring_factor, run_gather, expect_gather},
    {"scatter", 0, 1, shape_scatter, ring_factor, run_scatter, expect_scatter},
    {"sendrecv", 0, 0, shape_same, one, run_sendrecv, expect_sendrecv},
    {"put", 0, 0, shape_put, one, run_put, expect_put},
    {"barrier", 0, 0, shape_none, zero, run_barrier, expect_none},
};

const perf_coll_t *perf_coll_find(const char *name)
{
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
        if (!strcmp(colls[i].name, name)) return &colls[i];
    /* nccl-tests' binary names work too: all_reduce, all_gather, reduce_scatter, alltoall. */
    static const struct {
        const char *alias, *name;
    } alias[] = {{"all_reduce", "allreduce"}, {"all_gather", "allgather"},
                 {"reducescatter", "reduce_scatter"}, {"all_to_all", "alltoall"},
                 {"send_recv", "sendrecv"}, {"bcast", "broadcast"}};
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
        if (!strcmp(alias[i].alias, name)) return perf_coll_find(alias[i].name);
    return NULL;
}

const char *perf_coll_names(void)
{
    static char buf[256];
    size_t o = 0;
    for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]) && o < sizeof(buf); i++) {
        size_t len = strlen(colls[i].name);
        if (o + len + 2 > sizeof(buf)) break;
        if (o) buf[o++] = ' ';
        memcpy(buf + o, colls[i].name, len);
        o += len;
    }
    buf[o] = '\0';
    return buf;
}
