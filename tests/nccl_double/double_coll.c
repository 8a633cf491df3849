/*
 * double_coll.c - the NCCL test double's operations: NCCL's entry points
 * enqueue tasks; the worker runs them with ccomm's public calls (allreduce,
 * send, recv), building the collectives ccomm's API does not have yet from
 * those. Internal point-to-point traffic uses tag 1, the program's tag 0.
 */
#include <stdlib.h>
#include <string.h>

#include "nccl_double.h"

#define API         __attribute__((visibility("default")))
#define TAG_COLL    1
#define MAX_PENDING 256

static cc_dtype_t dtype_of(ncclDataType_t t, int *ok)
{
    static const cc_dtype_t map[] = {CC_INT8,   CC_UINT8,   CC_INT32,   CC_UINT32,  CC_INT64,
                                     CC_UINT64, CC_FLOAT16, CC_FLOAT32, CC_FLOAT64, CC_BFLOAT16};
    *ok = (unsigned)t < 10;
    return *ok ? map[t] : CC_UINT8;
}

static size_t esize(const dbl_call_t *c)
{
    return cc_dtype_size(c->dtype);
}

/* Fill a call from NCCL's arguments; 0 or an NCCL error. */
static ncclResult_t make(struct ncclComm *comm, enum dbl_kind k, const void *s, void *r, size_t n,
                         ncclDataType_t t, ncclRedOp_t op, int root, dbl_call_t *c)
{
    int ok;
    memset(c, 0, sizeof(*c));
    if (!dbl_valid(comm)) return ncclInvalidArgument;
    c->kind = k;
    c->sendbuf = s;
    c->recvbuf = r;
    c->count = n;
    c->dtype = dtype_of(t, &ok);
    c->root = root;
    c->op = CC_SUM;
    c->premul = 1.0;
    if (!ok) return ncclInvalidArgument;
    if (op < ncclNumOps) {
        static const cc_redop_t ops[] = {CC_SUM, CC_PROD, CC_MAX, CC_MIN, CC_AVG};
        c->op = ops[op];
    } else if ((int)op - ncclNumOps < 64 && comm->premul_used[op - ncclNumOps]) {
        c->op = CC_PREMUL_SUM;
        c->premul = comm->premul[op - ncclNumOps];
    } else {
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

static ncclResult_t submit(struct ncclComm *comm, const dbl_call_t *c)
{
    if (dbl_in_group()) return dbl_group_add(comm, c);
    dbl_task_t *t = calloc(1, sizeof(*t));
    if (!t) return ncclSystemError;
    t->call = *c;
    return dbl_enqueue(comm, t);
}

/* ---- the worker's side ---------------------------------------------------- */

typedef struct {
    cc_work_t *w[MAX_PENDING];
    int n;
} pending_t;

static cc_status_t post(cc_status_t st, cc_work_t *w, pending_t *p)
{
    if (st == CC_OK) p->w[p->n++] = w;
    return st;
}

static cc_status_t wait_all(pending_t *p, cc_status_t st)
{
    for (int i = 0; i < p->n; i++) {
        cc_status_t s = cc_work_wait(p->w[i], -1);
        if (st == CC_OK) st = s;
        cc_work_free(p->w[i]);
    }
    p->n = 0;
    return st;
}

static cc_status_t p2p(struct ncclComm *c, int send, const void *buf, size_t bytes, int peer,
                       int tag, pending_t *p)
{
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.tag = tag;
    cc_work_t *w = NULL;
    if (p->n >= MAX_PENDING) return CC_ERR_NOT_SUPPORTED;
    cc_status_t st = send ? cc_send(c->cc, buf, bytes, CC_UINT8, peer, &o, &w)
                          : cc_recv(c->cc, (void *)buf, bytes, CC_UINT8, peer, &o, &w);
    return post(st, w, p);
}

static cc_status_t run_allreduce(struct ncclComm *c, const dbl_call_t *k, void *dst)
{
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.premul_scalar = k->premul;
    return cc_allreduce(c->cc, k->sendbuf, dst, k->count, k->dtype, k->op, &o, NULL);
}

static cc_status_t run_bcast(struct ncclComm *c, const dbl_call_t *k)
{
    size_t bytes = k->count * esize(k);
    pending_t p = {.n = 0};
    if (c->rank != k->root) {
        cc_status_t st = p2p(c, 0, k->recvbuf, bytes, k->root, TAG_COLL, &p);
        return wait_all(&p, st);
    }
    if (k->recvbuf != k->sendbuf) memcpy(k->recvbuf, k->sendbuf, bytes);
    cc_status_t st = CC_OK;
    for (int r = 0; r < c->nranks && st == CC_OK; r++)
        if (r != c->rank) st = p2p(c, 1, k->recvbuf, bytes, r, TAG_COLL, &p);
    return wait_all(&p, st);
}

static cc_status_t run_allgather(struct ncclComm *c, const dbl_call_t *k)
{
    size_t bytes = k->count * esize(k);
    char *out = k->recvbuf;
    if (out + (size_t)c->rank * bytes != k->sendbuf)
        memmove(out + (size_t)c->rank * bytes, k->sendbuf, bytes);
    pending_t p = {.n = 0};
    cc_status_t st = CC_OK;
    for (int r = 0; r < c->nranks && st == CC_OK; r++) {
        if (r == c->rank) continue;
        st = p2p(c, 1, out + (size_t)c->rank * bytes, bytes, r, TAG_COLL, &p);
        if (st == CC_OK) st = p2p(c, 0, out + (size_t)r * bytes, bytes, r, TAG_COLL, &p);
    }
    return wait_all(&p, st);
}

/* reduce and reduce-scatter: allreduce into a scratch buffer, keep this rank's part. */
static cc_status_t run_reduce_like(struct ncclComm *c, const dbl_call_t *k)
{
    int rs = k->kind == DBL_REDUCE_SCATTER;
    dbl_call_t full = *k;
    full.count = rs ? k->count * (size_t)c->nranks : k->count;
    size_t bytes = full.count * esize(k);
    void *tmp = malloc(bytes ? bytes : 1);
    if (!tmp) return CC_ERR_NO_MEMORY;
    cc_status_t st = run_allreduce(c, &full, tmp);
    size_t mine = k->count * esize(k);
    if (st == CC_OK && rs) memcpy(k->recvbuf, (char *)tmp + (size_t)c->rank * mine, mine);
    if (st == CC_OK && !rs && c->rank == k->root) memcpy(k->recvbuf, tmp, mine);
    free(tmp);
    return st;
}

static cc_status_t run_one(struct ncclComm *c, const dbl_call_t *k, pending_t *p)
{
    size_t bytes = k->count * esize(k);
    switch (k->kind) {
    case DBL_ALLREDUCE:
        return run_allreduce(c, k, k->recvbuf);
    case DBL_BROADCAST:
        return run_bcast(c, k);
    case DBL_REDUCE:
    case DBL_REDUCE_SCATTER:
        return run_reduce_like(c, k);
    case DBL_ALLGATHER:
        return run_allgather(c, k);
    case DBL_SEND:
        return p2p(c, 1, k->sendbuf, bytes, k->root, 0, p);
    case DBL_RECV:
        return p2p(c, 0, k->recvbuf, bytes, k->root, 0, p);
    default:
        return CC_ERR_INTERNAL;
    }
}

/* A group: point-to-point calls posted together (so pairs cannot deadlock), collectives in order.
 */
cc_status_t dbl_run(struct ncclComm *c, const dbl_call_t *call)
{
    pending_t p = {.n = 0};
    cc_status_t st = CC_OK;
    if (call->kind != DBL_GROUP) {
        st = run_one(c, call, &p);
        return wait_all(&p, st);
    }
    /* The sends and receives go out as one ccomm group: posted one by one, a
     * receive listed first would hold the host engine (it runs a comm's ops in
     * order) while the peer's receive holds its own. */
    int np2p = 0;
    for (const dbl_call_t *m = call->next; m; m = m->next)
        np2p += m->kind == DBL_SEND || m->kind == DBL_RECV;
    if (np2p) st = cc_group_start();
    for (const dbl_call_t *m = call->next; m && st == CC_OK; m = m->next)
        if (m->kind == DBL_SEND || m->kind == DBL_RECV) st = run_one(c, m, &p);
    if (np2p) {
        cc_work_t *gw = NULL;
        cc_status_t ge = cc_group_end(NULL, &gw);
        if (ge == CC_OK) {
            ge = cc_work_wait(gw, -1); /* the members' handles are waited for below */
            cc_work_free(gw);
        }
        if (st == CC_OK) st = ge;
    }
    for (const dbl_call_t *m = call->next; m && st == CC_OK; m = m->next)
        if (m->kind != DBL_SEND && m->kind != DBL_RECV) st = run_one(c, m, &p);
    return wait_all(&p, st);
}

/* ---- groups ---------------------------------------------------------------- */

static __thread int t_depth;
static __thread dbl_task_t *t_groups; /* one task per comm, in first-use order */

int dbl_in_group(void)
{
    return t_depth > 0;
}

ncclResult_t dbl_group_add(struct ncclComm *c, const dbl_call_t *call)
{
    dbl_task_t **link = &t_groups, *g = NULL;
    for (; *link && !g; link = &(*link)->next)
        if ((struct ncclComm *)(*link)->call.recvbuf == c) g = *link;
    if (!g) {
        g = calloc(1, sizeof(*g));
        if (!g) return ncclSystemError;
        g->call.kind = DBL_GROUP;
        g->call.recvbuf = c; /* the group's comm, until it is enqueued */
        *link = g;
    }
    dbl_call_t *m = malloc(sizeof(*m));
    if (!m) return ncclSystemError;
    *m = *call;
    m->next = NULL;
    dbl_call_t **tail = &g->call.next;
    while (*tail)
        tail = &(*tail)->next;
    *tail = m;
    return ncclSuccess;
}

API ncclResult_t ncclGroupStart(void)
{
    t_depth++;
    return ncclSuccess;
}

API ncclResult_t ncclGroupEnd(void)
{
    if (t_depth <= 0) return ncclInvalidUsage;
    if (--t_depth > 0) return ncclSuccess;
    ncclResult_t r = ncclSuccess;
    for (dbl_task_t *g = t_groups; g;) {
        dbl_task_t *next = g->next;
        struct ncclComm *c = g->call.recvbuf;
        g->call.recvbuf = NULL;
        ncclResult_t e = dbl_enqueue(c, g);
        if (r == ncclSuccess) r = e;
        g = next;
    }
    t_groups = NULL;
    return r;
}

/* ---- NCCL's entry points ----------------------------------------------------- */

#define SUBMIT(comm, ...)                                                                          \
    do {                                                                                           \
        dbl_call_t c_;                                                                             \
        ncclResult_t r_ = make((comm), __VA_ARGS__, &c_);                                          \
        return r_ != ncclSuccess ? r_ : submit((comm), &c_);                                       \
    } while (0)

API ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_ALLREDUCE, s, r, n, t, op, 0);
}

API ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, ncclDataType_t t, int root,
                               ncclComm_t comm, void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_BROADCAST, s, r, n, t, ncclSum, root);
}

API ncclResult_t ncclBcast(void *buf, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
                           void *stream)
{
    return ncclBroadcast(buf, buf, n, t, root, comm, stream);
}

API ncclResult_t ncclReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                            int root, ncclComm_t comm, void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_REDUCE, s, r, n, t, op, root);
}

API ncclResult_t ncclAllGather(const void *s, void *r, size_t n, ncclDataType_t t, ncclComm_t comm,
                               void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_ALLGATHER, s, r, n, t, ncclSum, 0);
}

API ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, ncclDataType_t t,
                                   ncclRedOp_t op, ncclComm_t comm, void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_REDUCE_SCATTER, s, r, n, t, op, 0);
}

API ncclResult_t ncclSend(const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                          void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_SEND, s, NULL, n, t, ncclSum, peer);
}

API ncclResult_t ncclRecv(void *r, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                          void *stream)
{
    (void)stream;
    SUBMIT(comm, DBL_RECV, NULL, r, n, t, ncclSum, peer);
}

API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t t,
                                          ncclScalarResidence_t residence, ncclComm_t comm)
{
    int ok;
    cc_dtype_t d = dtype_of(t, &ok);
    if (!dbl_valid(comm) || !op || !scalar || !ok || residence != ncclScalarHostImmediate)
        return ncclInvalidArgument;
    int slot = 0;
    while (slot < 64 && comm->premul_used[slot])
        slot++;
    if (slot == 64) return ncclInvalidUsage;
    double v;
    switch (d) {
    case CC_INT8:
        v = *(int8_t *)scalar;
        break;
    case CC_UINT8:
        v = *(uint8_t *)scalar;
        break;
    case CC_INT32:
        v = *(int32_t *)scalar;
        break;
    case CC_UINT32:
        v = *(uint32_t *)scalar;
        break;
    case CC_INT64:
        v = (double)*(int64_t *)scalar;
        break;
    case CC_UINT64:
        v = (double)*(uint64_t *)scalar;
        break;
    case CC_FLOAT32:
        v = *(float *)scalar;
        break;
    case CC_FLOAT64:
        v = *(double *)scalar;
        break;
    default:
        v = 0;
        break; /* float16 / bfloat16 scalars: decoded below */
    }
    if (d == CC_FLOAT16 || d == CC_BFLOAT16) {
        uint16_t h = *(uint16_t *)scalar;
        uint32_t bits = (uint32_t)h << 16; /* bfloat16; float16 is decoded by the exponent */
        if (d == CC_FLOAT16) {
            int e = (h >> 10) & 0x1f, m = h & 0x3ff;
            double f = e ? (1.0 + m / 1024.0) * (double)(1u << e) / 32768.0 : m / 16777216.0;
            v = (h & 0x8000) ? -f : f;
        } else {
            float f;
            memcpy(&f, &bits, 4);
            v = f;
        }
    }
    comm->premul[slot] = v;
    comm->premul_used[slot] = 1;
    *op = (ncclRedOp_t)(ncclNumOps + slot);
    return ncclSuccess;
}

API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    int slot = (int)op - ncclNumOps;
    if (!dbl_valid(comm) || slot < 0 || slot >= 64 || !comm->premul_used[slot])
        return ncclInvalidArgument;
    /* Tasks already enqueued copied the scalar: the slot is free at once. */
    comm->premul_used[slot] = 0;
    return ncclSuccess;
}
