/*
 * coll_timing.c - time one collective of the native engine over a range of
 * sizes, float32 sum, out of place, as nccl-tests reports it (time per op
 * averaged over iterations, the slowest rank's; bus bandwidth factors of
 * nccl-tests). The algorithm the engine chose is printed per size.
 *
 *   build/bin/ccrun -n 2 build/bin/coll_timing allreduce 8 64M [iters]
 *   CCOMM_TRANSPORT=tcp build/bin/ccrun -n 2 build/bin/coll_timing allreduce 1M 64M
 *
 * A quick tool for the algorithms' authors; ccperf is the full benchmark.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ccomm/ccomm.h"

static char g_algo[32];

static void on_post(const cc_op_info_t *op, void *u)
{
    (void)u;
    if (op->algorithm) snprintf(g_algo, sizeof(g_algo), "%s", op->algorithm);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t parse(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    v *= *e == 'K' ? 1024 : *e == 'M' ? 1048576 : *e == 'G' ? 1073741824 : 1;
    return (size_t)v;
}

/* One op of `bytes` (per-rank payload as nccl-tests counts it); returns busbw factor. */
static cc_status_t run(cc_comm_t *c, const char *coll, float *s, float *r, size_t count,
                       double *factor)
{
    int n = cc_comm_size(c);
    double f = (double)(n - 1) / n;
    if (!strcmp(coll, "allreduce")) {
        *factor = 2 * f;
        return cc_allreduce(c, s, r, count, CC_FLOAT32, CC_SUM, NULL, NULL);
    }
    if (!strcmp(coll, "broadcast")) {
        *factor = 1;
        return cc_broadcast(c, s, r, count, CC_FLOAT32, 0, NULL, NULL);
    }
    if (!strcmp(coll, "reduce")) {
        *factor = 1;
        return cc_reduce(c, s, r, count, CC_FLOAT32, CC_SUM, 0, NULL, NULL);
    }
    *factor = f;
    if (!strcmp(coll, "allgather")) return cc_allgather(c, s, r, count / n, CC_FLOAT32, NULL, NULL);
    if (!strcmp(coll, "reduce_scatter"))
        return cc_reduce_scatter(c, s, r, count / n, CC_FLOAT32, CC_SUM, NULL, NULL);
    if (!strcmp(coll, "alltoall")) return cc_alltoall(c, s, r, count / n, CC_FLOAT32, NULL, NULL);
    if (!strcmp(coll, "gather")) return cc_gather(c, s, r, count / n, CC_FLOAT32, 0, NULL, NULL);
    if (!strcmp(coll, "scatter")) return cc_scatter(c, s, r, count / n, CC_FLOAT32, 0, NULL, NULL);
    return CC_ERR_INVALID_ARG;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s COLL MIN MAX [ITERS]\n", argv[0]);
        return 2;
    }
    size_t lo = parse(argv[2]), hi = parse(argv[3]);
    int iters = argc > 4 ? atoi(argv[4]) : 20;
    cc_comm_t *c;
    if (cc_comm_init_from_env(&c, NULL) != CC_OK) return 1;
    cc_hook_handle_t h;
    cc_hook_add_post(c, on_post, NULL, 0, &h);
    int rank = cc_comm_rank(c);
    float *s = calloc(hi / 4 + 16, 4), *r = calloc(hi / 4 + 16, 4);
    if (rank == 0)
        printf("# %-10s %12s %10s %8s  %s\n", argv[1], "bytes", "time_us", "busbw", "algorithm");
    for (size_t b = lo; b <= hi; b *= 4) {
        size_t count = b / 4 ? b / 4 : 1;
        double factor, t;
        int it = b >= (16u << 20) ? (iters + 3) / 4 : iters;
        for (int i = 0; i < 3; i++)
            run(c, argv[1], s, r, count, &factor);
        cc_barrier(c, NULL, NULL);
        double t0 = now();
        for (int i = 0; i < it; i++)
            if (run(c, argv[1], s, r, count, &factor) != CC_OK) return 1;
        t = (now() - t0) / it;
        char algo[32];
        snprintf(algo, sizeof(algo), "%s", g_algo); /* before the allreduce of the times */
        cc_allreduce(c, &t, &t, 1, CC_FLOAT64, CC_MAX, NULL, NULL);
        if (rank == 0)
            printf("  %-10s %12zu %10.1f %8.2f  %s\n", "", count * 4, t * 1e6,
                   (double)count * 4 * factor / t / 1e9, algo);
    }
    free(s), free(r);
    cc_comm_destroy(c);
    return 0;
}
