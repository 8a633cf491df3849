/*
 * monitored_barrier_all_to_one.c - the monitored barrier (Gloo's
 * barrier_all_to_one, with a verdict): every rank checks in with rank 0,
 * which waits up to wait_ms for all of them, then sends every rank the
 * verdict: CC_OK, or CC_ERR_TIMEOUT with the list of ranks that did not
 * check in. The verdict goes to the late ranks too, so a rank that arrives
 * after rank 0 gave up learns it was missing. A rank that hears no verdict
 * within 2 x wait_ms reports rank 0 as missing.
 *
 * Messages: check-in (empty, step 0), verdict header {status, nmissing}
 * (step 1), then the list of nmissing ranks (step 2) when there is one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "engine/args.h"
#include "base/log.h"
#include "native/native.h"

struct verdict {
    int32_t status;
    int32_t nmissing;
};

/* "3,5,9" (cut short with "..." if long). */
static void list_ranks(const int32_t *r, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o + 16 < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%d", i ? "," : "", r[i]);
    if (n && o + 16 >= len) snprintf(buf + o, len - o, "...");
}

static void report(const cc__mbarrier_args_t *a, const int32_t *miss, int nmiss)
{
    for (int i = 0; a->missing && i < nmiss && i < a->max_missing; i++)
        a->missing[i] = miss[i];
    if (a->nmissing) *a->nmissing = nmiss;
}

/* Rank 0: collect the check-ins until the deadline; the ranks still pending are missing. */
static cc_status_t root(cc__native_t *nc, cc__op_t *op, const cc__mbarrier_args_t *a)
{
    int n = nc->size;
    cc_status_t st = CC_OK;
    uint64_t until = cc__now_ns() + (uint64_t)a->wait_ms * 1000000ull;
    if (until > op->deadline_ns) until = op->deadline_ns;
    cc__req_t *rq = cc__native_reqs(nc, 2 * n);
    int32_t *miss = calloc((size_t)n, sizeof(*miss));
    if (!rq || !miss) return free(miss), CC_ERR_NO_MEMORY;
    for (int p = 1; p < n; p++)
        CC_CHECK_GOTO(cc__net_irecv(nc->net, p, cc__coll_tag(op, 0), NULL, 0, &rq[p]), st, out);
    st = cc__native_wait(nc, rq + 1, n - 1, until);
    if (st != CC_OK && st != CC_ERR_TIMEOUT) goto out;
    struct verdict v = {CC_OK, 0};
    for (int p = 1; p < n; p++)
        if (rq[p].status != CC_OK) miss[v.nmissing++] = p;
    cc__native_settle(nc, CC_ERR_TIMEOUT); /* the late ones' receives are withdrawn */
    if (v.nmissing) {
        char who[256];
        list_ranks(miss, v.nmissing, who, sizeof(who));
        cc_log_error(CC_SUBSYS_COLL,
                     "monitored barrier on communicator %s: %s %s (%d of %d) did "
                     "not arrive within %lld ms",
                     cc_comm_name(nc->comm), v.nmissing > 1 ? "ranks" : "rank", who, v.nmissing, n,
                     (long long)a->wait_ms);
        v.status = CC_ERR_TIMEOUT;
    }
    /* The verdict goes to every rank: the late ones read it when they come. */
    if (!(rq = cc__native_reqs(nc, 2 * n))) {
        st = CC_ERR_NO_MEMORY;
        goto out;
    }
    for (int p = 1; p < n; p++) {
        CC_CHECK_GOTO(cc__net_isend(nc->net, p, cc__coll_tag(op, 1), &v, sizeof(v), &rq[p]), st,
                      out);
        if (v.nmissing)
            CC_CHECK_GOTO(cc__net_isend(nc->net, p, cc__coll_tag(op, 2), miss,
                                        (size_t)v.nmissing * sizeof(*miss), &rq[n + p]),
                          st, out);
    }
    /* Small sends finish at once unless the peer is gone: with ranks missing, do not wait
     * long for them (what is left is withdrawn, and the comm fails on the timeout anyway). */
    cc__native_wait(nc, rq, 2 * n, v.nmissing ? cc__now_ns() + 100000000ull : op->deadline_ns);
    cc__native_settle(nc, CC_ERR_TIMEOUT);
    report(a, miss, v.nmissing);
    st = (cc_status_t)v.status;
out:
    free(miss);
    return st;
}

/* Other ranks: check in, then wait for the verdict. */
static cc_status_t member(cc__native_t *nc, cc__op_t *op, const cc__mbarrier_args_t *a)
{
    uint64_t until = cc__now_ns() + 2 * (uint64_t)a->wait_ms * 1000000ull;
    if (until > op->deadline_ns) until = op->deadline_ns;
    struct verdict v = {0, 0};
    cc__req_t *rq = cc__native_reqs(nc, 2);
    if (!rq) return CC_ERR_NO_MEMORY;
    CC_CHECK(cc__net_irecv(nc->net, 0, cc__coll_tag(op, 1), &v, sizeof(v), &rq[0]));
    cc__net_isend(nc->net, 0, cc__coll_tag(op, 0), NULL, 0, &rq[1]); /* its fate matters less */
    cc_status_t st = cc__native_wait(nc, rq, 1, until);
    if (st == CC_ERR_TIMEOUT) {
        cc_log_error(CC_SUBSYS_COLL,
                     "monitored barrier on communicator %s: rank 0 sent no "
                     "verdict within %lld ms: rank 0 is missing",
                     cc_comm_name(nc->comm), (long long)(2 * a->wait_ms));
        int32_t zero = 0;
        report(a, &zero, 1);
        return CC_ERR_TIMEOUT;
    }
    CC_CHECK(st);
    if (v.nmissing <= 0 || v.nmissing >= nc->size) return (cc_status_t)v.status;
    int32_t *miss = calloc((size_t)v.nmissing, sizeof(*miss));
    if (!miss) return CC_ERR_NO_MEMORY;
    st = cc__net_recv(nc->net, 0, cc__coll_tag(op, 2), miss, (size_t)v.nmissing * sizeof(*miss),
                      op->deadline_ns);
    if (st == CC_OK) {
        char who[256];
        list_ranks(miss, v.nmissing, who, sizeof(who));
        cc_log_warn(CC_SUBSYS_COLL,
                    "monitored barrier on communicator %s: rank 0 reports %s %s "
                    "missing",
                    cc_comm_name(nc->comm), v.nmissing > 1 ? "ranks" : "rank", who);
        report(a, miss, v.nmissing);
        st = (cc_status_t)v.status;
    }
    free(miss);
    return st;
}

cc_status_t cc__monitored_barrier_all_to_one(cc__native_t *nc, cc__op_t *op)
{
    const cc__mbarrier_args_t *a = op->extra;
    if (a->nmissing) *a->nmissing = 0;
    if (nc->size == 1) return CC_OK;
    cc_status_t st = nc->rank == 0 ? root(nc, op, a) : member(nc, op, a);
    /* The check-in of a rank that gave up may still be pending: withdraw it. */
    if (nc->rank != 0) cc__native_settle(nc, st == CC_OK ? CC_ERR_ABORTED : st);
    return st;
}
