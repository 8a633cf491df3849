/*
 * lttng_bench.c - what ccomm's LTTng tracing costs.
 *
 * Two kinds of call sites are measured:
 *   site  an emit site below the door: cc__lttng_xfer_begin(...), as the
 *         transport calls it per chunk (lib/base/lttng.h);
 *   op    the hook chains one op passes: PRE, START and POST, i.e. what the
 *         provider's subscriber adds to every op (op_enqueue, op_start,
 *         op_end when recorded).
 * in the states a process can be in:
 *   absent     no provider attached (measured first, always);
 *   idle       provider attached, no session records ccomm events;
 *   recording  a session records ccomm:* (run it under bench/lttng_bench.sh
 *              or your own `lttng create; lttng enable-event -u 'ccomm:*';
 *              lttng start`).
 * Each figure is the best of 7 runs (this machine is noisy); "net" subtracts
 * an empty loop. An extra row runs the op with three empty hooks in place of
 * the provider's, to tell the chains' own cost from the subscriber's. Usage: lttng_bench [provider
 * path] (default: the provider of this build tree, else CCOMM_LTTNG_PROVIDER).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hooks/chain.h"
#include "base/config.h"
#include "base/log.h"
#include "base/lttng.h"

#ifndef CC_BENCH_PROVIDER
#define CC_BENCH_PROVIDER ""
#endif

#define RUNS 7

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The loop the site figures are net of: the same counter, no site. */
static double empty_loop(long n)
{
    double t = now_s();
    for (long i = 0; i < n; i++)
        __asm__ volatile("" : : "r"(i));
    return (now_s() - t) / (double)n * 1e9;
}

static double site_loop(long n)
{
    double t = now_s();
    for (long i = 0; i < n; i++) {
        cc__lttng_xfer_begin(0x1234u, CC__LTTNG_SEND, (int)(i & 3), 7u, (size_t)i, "shm");
        __asm__ volatile("" : : "r"(i));
    }
    return (now_s() - t) / (double)n * 1e9;
}

static double op_loop(long n)
{
    cc_op_info_t op;
    memset(&op, 0, sizeof(op));
    op.comm_id = 0x1234;
    op.comm_name = "world";
    op.size = 4;
    op.type = CC_OP_ALLREDUCE;
    op.dtype = CC_FLOAT32;
    op.redop = CC_SUM;
    op.root = op.peer = -1;
    op.in_count = op.out_count = 1024;
    op.bytes = 4096;
    op.algorithm = "ring";
    op.transport = "shm";
    cc__hook_tokens_t tok = {0};
    double t = now_s();
    for (long i = 0; i < n; i++) {
        op.op_id = (uint64_t)i + 1;
        op.coll_seq = (uint64_t)i + 1;
        op.status = CC_INPROGRESS;
        op.t_enqueue_ns = (uint64_t)i * 100 + 1;
        (void)cc__hooks_run_pre(NULL, &op, &tok);
        op.t_start_ns = op.t_enqueue_ns + 10;
        cc__hooks_run_op(CC__HOOK_START, NULL, &op, &tok);
        op.t_end_ns = op.t_start_ns + 50;
        op.status = CC_OK;
        cc__hooks_run_op(CC__HOOK_POST, NULL, &op, &tok);
    }
    return (now_s() - t) / (double)n * 1e9;
}

static double best(double (*fn)(long), long n)
{
    double b = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double v = fn(n);
        if (v < b) b = v;
    }
    return b;
}

typedef struct figures {
    double base, site, op;
} figures_t;

static figures_t measure(long n_site, long n_op)
{
    figures_t f = {best(empty_loop, n_site), best(site_loop, n_site), best(op_loop, n_op)};
    return f;
}

static void row(const char *state, figures_t f, figures_t absent)
{
    printf("%-10s  site %8.2f ns (net %7.2f)   op %8.2f ns (net of absent %7.2f)\n", state, f.site,
           f.site - f.base, f.op, f.op - absent.op);
}

static cc_status_t empty_pre(const cc_op_info_t *op, void *user)
{
    (void)op, (void)user;
    return CC_OK;
}

static void empty_op(const cc_op_info_t *op, void *user)
{
    (void)op, (void)user;
}

/* The op loop with three hooks that do nothing: the chains' own cost. */
static double empty_hooks(long n)
{
    cc_hook_handle_t h[3] = {0, 0, 0};
    if (cc_hook_add_pre(NULL, empty_pre, NULL, 0, &h[0]) != CC_OK ||
        cc_hook_add_start(NULL, empty_op, NULL, 0, &h[1]) != CC_OK ||
        cc_hook_add_post(NULL, empty_op, NULL, 0, &h[2]) != CC_OK)
        return -1;
    double v = best(op_loop, n);
    for (int i = 0; i < 3; i++)
        cc_hook_remove(h[i]);
    return v;
}

int main(int argc, char **argv)
{
    const char *provider = argc > 1 ? argv[1] : CC_BENCH_PROVIDER;
    figures_t absent = measure(50000000, 5000000);
    row("absent", absent, absent);
    double empty = empty_hooks(5000000);
    printf("%-10s  %29s op %8.2f ns (net of absent %7.2f)\n", "3 no-op hooks", "", empty,
           empty - absent.op);

    if (provider[0]) setenv("CCOMM_LTTNG_PROVIDER", provider, 1);
    setenv("CCOMM_LTTNG", "1", 1);
    cc__config_reload();
    cc__log_init();
    if (!cc__lttng_load()) {
        fprintf(stderr, "lttng_bench: the provider did not attach (CCOMM_LOG_LEVEL=DEBUG says "
                        "why); only the absent figures are valid\n");
        return 1;
    }
    const cc__lttng_sites_v1_t *s = atomic_load(&cc__lttng_sites);
    int recording = __atomic_load_n(s->xfer_begin_on, __ATOMIC_RELAXED) != 0;
    if (!recording) {
        row("idle", measure(50000000, 5000000), absent);
        return 0;
    }
    /* Every iteration writes events: fewer of them, so the session's buffers
     * hold them all (run under lttng_bench.sh: overwrite mode, 8 MiB subbuffers). */
    figures_t on = measure(100000, 100000);
    row("recording", on, absent);
    printf("per event: site %.0f ns; op (3 events) %.0f ns per event\n", on.site - on.base,
           (on.op - absent.op) / 3.0);
    return 0;
}
