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
static void shape_same(size_t elems, int n, perf_shape_t *s)
{
    (void)n;
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

/* ---- sendrecv: to rank + 1, from rank - 1 -------------------------------------------------- */

static cc_status_t run_sendrecv(perf_ctx_t *x)
{
    int n = x->size, r = x->rank;
    cc_work_t *w = NULL;
    size_t c = x->shape.count;
    cc_status_t st = cc_recv(x->comm, x->recvbuf, c, x->o->dtype, (r - 1 + n) % n, NULL, &w);
    if (st != CC_OK) return st;
    cc_status_t ss = cc_send(x->comm, x->sendbuf, c, x->o->dtype, (r + 1) % n, NULL, NULL);
    st = cc_work_wait(w, -1);
    cc_work_free(w);
    return ss != CC_OK ? ss : st;
}

static int expect_sendrecv(const perf_ctx_t *x, size_t k, double *v)
{
    *v = perf_value(x->o, (x->rank - 1 + x->size) % x->size, k);
    return 1;
}

/* ---- barrier: no data ---------------------------------------------------------------------- */

static void shape_none(size_t elems, int n, perf_shape_t *s)
{
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
    {"sendrecv", 0, 0, shape_same, one, run_sendrecv, expect_sendrecv},
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
    (void)ring_factor;
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
