/*
 * recorder_bench.c - cost of the flight recorder on the op path: ns per
 * PRE, START and POST transition, with 1 and 4 threads writing one ring.
 *
 *   recorder_bench [ops per thread] [entries]
 *
 * Each thread pushes batches of ops through the subscribers exactly as the
 * op door would (PRE for the batch, then START, then POST), timing each
 * phase. Figures are per transition: wall time, and the thread's CPU time
 * (meaningful when threads outnumber cores). The ring lives under
 * CCOMM_RECORDER_DIR (default /dev/shm/ccomm) and is removed at the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccomm/ccomm.h"
#include "base/config.h"
#include "engine/op.h"
#include "recorder/recorder.h"

/* The record id of an op, where the door keeps it. */
#define REC_ID(op) ((op)->rec_id)

#define BATCH 256

struct result {
    double wall[3]; /* ns per PRE, START, POST */
    double cpu[3];
};

struct job {
    int t;
    long ops;
    struct result res;
};

static pthread_barrier_t g_barrier;

static double now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void fill(cc__op_t *op, int t, uint64_t id)
{
    memset(op, 0, sizeof(*op));
    cc_op_info_t *i = &op->info;
    i->op_id = id;
    i->comm_id = 1000 + (uint64_t)t;
    i->comm_name = "world";
    i->size = 4;
    i->type = CC_OP_ALLREDUCE;
    i->coll_seq = id;
    i->root = i->peer = -1;
    i->dtype = CC_FLOAT32;
    i->redop = CC_SUM;
    i->in_count = i->out_count = 1 << 20;
    i->bytes = 4 << 20;
    i->timeout_ms = 600000;
    i->t_enqueue_ns = id;
    i->status = CC_INPROGRESS;
    i->engine = "native";
}

/* Run one phase over a batch and add its wall and CPU time to slot k. */
#define PHASE(k, stmt)                                                                             \
    do {                                                                                           \
        double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);                       \
        for (int b = 0; b < BATCH; b++)                                                            \
            stmt;                                                                                  \
        wall[k] += now(CLOCK_MONOTONIC) - w0;                                                      \
        cpu[k] += now(CLOCK_THREAD_CPUTIME_ID) - c0;                                               \
    } while (0)

static void *run(void *arg)
{
    struct job *j = arg;
    cc__op_t *ops = calloc(BATCH, sizeof(*ops));
    double wall[3] = {0}, cpu[3] = {0};
    long n = 0;
    pthread_barrier_wait(&g_barrier);
    for (; n + BATCH <= j->ops; n += BATCH) {
        for (int b = 0; b < BATCH; b++)
            fill(&ops[b], j->t, (uint64_t)(n + b + 1));
        PHASE(0, cc__recorder_pre(&ops[b].info, &REC_ID(&ops[b])));
        for (int b = 0; b < BATCH; b++) {
            ops[b].info.t_start_ns = 1;
            ops[b].info.algorithm = "ring";
            ops[b].info.transport = "shm";
        }
        PHASE(1, cc__recorder_start(&ops[b].info, REC_ID(&ops[b])));
        for (int b = 0; b < BATCH; b++)
            ops[b].info.status = CC_OK, ops[b].info.t_end_ns = 2;
        PHASE(2, cc__recorder_post(&ops[b].info, REC_ID(&ops[b])));
    }
    for (int k = 0; k < 3; k++) {
        j->res.wall[k] = wall[k] / (double)n;
        j->res.cpu[k] = cpu[k] / (double)n;
    }
    free(ops);
    return NULL;
}

static void bench(int threads, long ops, const char *label)
{
    pthread_t th[16];
    struct job jobs[16];
    pthread_barrier_init(&g_barrier, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        jobs[t] = (struct job){t, ops, {{0}, {0}}};
        pthread_create(&th[t], NULL, run, &jobs[t]);
    }
    struct result avg = {{0}, {0}};
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], NULL);
        for (int k = 0; k < 3; k++) {
            avg.wall[k] += jobs[t].res.wall[k] / threads;
            avg.cpu[k] += jobs[t].res.cpu[k] / threads;
        }
    }
    pthread_barrier_destroy(&g_barrier);
    printf("%-12s %d thread%s  ns/transition wall: pre %6.1f start %6.1f post %6.1f   "
           "cpu: pre %6.1f start %6.1f post %6.1f\n",
           label, threads, threads > 1 ? "s" : " ", avg.wall[0], avg.wall[1], avg.wall[2],
           avg.cpu[0], avg.cpu[1], avg.cpu[2]);
}

int main(int argc, char **argv)
{
    long ops = argc > 1 ? atol(argv[1]) : 2000000;
    const char *entries = argc > 2 ? argv[2] : "4096";
    if (ops < BATCH) ops = BATCH;
    setenv("CCOMM_RECORDER_ENTRIES", "0", 1);
    cc__config_reload();
    cc__recorder_open(0, 1, "bench");
    bench(1, ops, "recorder off");
    setenv("CCOMM_RECORDER_ENTRIES", entries, 1);
    cc__config_reload();
    if (cc__recorder_open(0, 1, "bench") != CC_OK) return 1;
    printf("ring %s, %s entries, %ld ops per thread, %ld online cpus\n", cc__recorder_path(),
           entries, ops, sysconf(_SC_NPROCESSORS_ONLN));
    bench(1, ops, "recorder on");
    bench(4, ops / 4, "recorder on");
    char path[4096];
    snprintf(path, sizeof(path), "%s", cc__recorder_path());
    cc__recorder_close();
    unlink(path);
    return 0;
}
