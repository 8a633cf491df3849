/*
 * desync.c - CCOMM_DESYNC_CHECK: before a collective, every rank learns what
 * every other rank is about to run at this coll_seq (a ring allgather of a
 * small signature) and all of them fail together, with one message that
 * names the ranks and their ops, if the signatures differ.
 *
 * Ranks at different seqs never meet here (the tags carry the seq), so a
 * rank that skipped a collective shows up as a timeout, not as a mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "native/native.h"

struct sig {
    uint64_t seq;
    int32_t type, dtype, redop, root;
    uint64_t in_count, out_count;
};

/*
 * The part of an op every rank passes alike. Counts that differ by rank by
 * design (the root's side of a gather, the v-collectives' own blocks, byte
 * lengths) are left out, so only a real disagreement is a mismatch.
 */
static struct sig sig_of(const cc__op_t *op)
{
    struct sig s;
    memset(&s, 0, sizeof(s));
    s.seq = op->info.coll_seq;
    s.type = (int32_t)op->info.type;
    s.dtype = (int32_t)op->info.dtype;
    s.redop = (int32_t)op->info.redop;
    s.root = op->info.root;
    switch (op->info.type) {
    case CC_OP_REDUCE:
    case CC_OP_GATHER:
    case CC_OP_ALLGATHER:
    case CC_OP_REDUCE_SCATTERV: s.in_count = op->info.in_count; break;
    case CC_OP_SCATTER:
    case CC_OP_ALLGATHERV: s.out_count = op->info.out_count; break;
    case CC_OP_ALLTOALLV:
    case CC_OP_GATHERV:
    case CC_OP_SCATTERV:
    case CC_OP_ALLGATHER_BYTES:
    case CC_OP_BROADCAST_BYTES:
    case CC_OP_GATHER_BYTES:
    case CC_OP_SCATTER_BYTES: break;
    default:
        s.in_count = op->info.in_count;
        s.out_count = op->info.out_count;
    }
    return s;
}

/* "broadcast(root=0, 1024 x f32)" or "all_reduce(1024 x f32, sum)". */
static int describe(const struct sig *s, char *buf, size_t len)
{
    const char *dt = cc_dtype_name((cc_dtype_t)s->dtype);
    if (s->dtype == CC_DTYPE_COUNT) /* no data: barrier */
        return snprintf(buf, len, "%s()", cc_op_type_name((cc_op_type_t)s->type));
    if (s->root >= 0)
        return snprintf(buf, len, "%s(root=%d, %llu x %s)", cc_op_type_name((cc_op_type_t)s->type),
                        s->root, (unsigned long long)s->in_count, dt);
    if (s->redop != CC_REDOP_COUNT)
        return snprintf(buf, len, "%s(%llu x %s, %s)", cc_op_type_name((cc_op_type_t)s->type),
                        (unsigned long long)s->in_count, dt, cc_redop_name((cc_redop_t)s->redop));
    return snprintf(buf, len, "%s(%llu x %s)", cc_op_type_name((cc_op_type_t)s->type),
                    (unsigned long long)s->in_count, dt);
}

/* One clause per distinct signature: "ranks 0,1,3 called all_reduce(...)". */
static void report(const struct sig *all, int n, uint64_t seq, char *msg, size_t len)
{
    size_t o = (size_t)snprintf(msg, len, "desync at seq %llu: ", (unsigned long long)seq);
    char *done = calloc((size_t)n, 1), ranks[256], what[160];
    for (int r = 0; done && r < n && o < len; r++) {
        if (done[r]) continue;
        int count = 0;
        size_t k = 0;
        for (int q = r; q < n; q++) {
            if (memcmp(&all[q], &all[r], sizeof(all[r])) != 0) continue;
            done[q] = 1;
            if (k < sizeof(ranks) - 16) k += (size_t)snprintf(ranks + k, sizeof(ranks) - k, "%s%d", count ? "," : "", q);
            count++;
        }
        describe(&all[r], what, sizeof(what));
        o += (size_t)snprintf(msg + o, len - o, "%s%s %s called %s", r ? "; " : "",
                              count > 1 ? "ranks" : "rank", ranks, what);
    }
    free(done);
}

cc_status_t cc__desync_check(cc__native_t *nc, cc__op_t *op)
{
    int n = nc->size, r = nc->rank;
    if (n == 1) return CC_OK;
    struct sig *all = calloc((size_t)n, sizeof(*all));
    if (!all) return CC_ERR_NO_MEMORY;
    all[r] = sig_of(op);
    cc_status_t st = CC_OK;
    /* Ring allgather: at step s pass on the signature received at step s-1. */
    for (int s = 0; s < n - 1 && st == CC_OK; s++) {
        int sendi = (r - s + n) % n, recvi = (r - s - 1 + n) % n;
        st = cc__net_sendrecv(nc->net, (r + 1) % n, &all[sendi], sizeof(all[0]), (r - 1 + n) % n,
                              &all[recvi], sizeof(all[0]), cc__coll_tag(op, 0xf0u),
                              op->deadline_ns);
    }
    for (int q = 0; st == CC_OK && q < n; q++) {
        if (memcmp(&all[q], &all[r], sizeof(all[r])) == 0) continue;
        char msg[1024];
        report(all, n, op->info.coll_seq, msg, sizeof(msg));
        cc_log_error(CC_SUBSYS_COLL, "%s", msg);
        st = CC_ERR_MISMATCH;
    }
    free(all);
    return st;
}
