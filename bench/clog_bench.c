/*
 * clog_bench.c - what clog costs: the op path's push into the ring, and the
 * writer's throughput (format + write). Measures, never asserts.
 *
 *   build/bin/clog_bench [DIR]     (files go to DIR, default /tmp)
 *
 * 1. push: hooks called with the writer paused (a ring big enough for all
 *    records), so only the op path is timed;
 * 2. writer: the same records drained and written, per record;
 * 3. both at once: one producer thread (Q and E per op) as fast as it can,
 *    then paced at one op per 2 µs (1 M records/s, a busy small-message
 *    job), while the writer runs; how many records were dropped.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "clog/clog_internal.h"
#include "engine/op.h"

static cc__op_t bench_op(void)
{
    cc__op_t op;
    memset(&op, 0, sizeof(op));
    op.info.comm_name = "world";
    op.info.comm_id = 1;
    op.info.type = CC_OP_ALLREDUCE;
    op.info.dtype = CC_FLOAT32;
    op.info.redop = CC_SUM;
    op.info.root = op.info.peer = -1;
    return op;
}

static cc_clog_t *open_bench(const char *dir, uint32_t ring)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/clog_bench.log", dir);
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    conf.rank = 0;
    conf.ring_records = ring;
    conf.flush_timeout_ms = 60000;
    cc_clog_t *c = NULL;
    if (cc_clog_open(path, &conf, &c) != CC_OK) exit(1);
    return c;
}

/* 1 and 2: push n records with the writer paused, then time the drain. */
static void push_then_drain(const char *dir, int n)
{
    cc_clog_t *c = open_bench(dir, 1u << 21);
    cc__op_t op = bench_op();
    cc__clog_pause(c, 1);
    /* Touch the ring once so page faults are not counted as push cost. */
    for (int i = 0; i < n; i++)
        cc__clog_on_pre(&op.info, c);
    cc__clog_pause(c, 0);
    cc_clog_flush(c, 60000);
    cc__clog_pause(c, 1);
    uint64_t t0 = cc__now_ns();
    for (int i = 0; i < n; i++) {
        op.info.op_id = (uint64_t)i + 1;
        op.info.coll_seq = (uint64_t)i + 1;
        op.info.in_count = op.info.out_count = (size_t)1024 << (i % 4); /* 4 signatures */
        op.info.t_enqueue_ns = t0 + (uint64_t)i * 1000;
        cc__clog_on_pre(&op.info, c);
    }
    uint64_t t1 = cc__now_ns();
    cc__clog_pause(c, 0);
    cc_status_t st = cc_clog_flush(c, 60000);
    uint64_t t2 = cc__now_ns();
    printf("push (op path):  %6.1f ns per record, %d records\n", (double)(t1 - t0) / n, n);
    printf("writer:          %6.1f ns per record (format + write), flush %s\n",
           (double)(t2 - t1) / n, cc_status_name(st));
    cc_clog_close(c);
}

/* 3: producer and writer together, default ring; gap_ns between ops (0: none). */
static void sustained(const char *dir, int ops, uint64_t gap_ns)
{
    cc_clog_t *c = open_bench(dir, 0);
    cc__op_t op = bench_op();
    op.info.in_count = op.info.out_count = 1024;
    uint64_t t0 = cc__now_ns();
    for (int i = 0; i < ops; i++) {
        while (gap_ns && cc__now_ns() < t0 + (uint64_t)i * gap_ns) {
        }
        op.info.op_id = (uint64_t)i + 1;
        op.info.t_enqueue_ns = cc__now_ns();
        cc__clog_on_pre(&op.info, c);
        op.info.t_end_ns = cc__now_ns();
        op.info.status = CC_OK;
        cc__clog_on_post(&op.info, c);
    }
    uint64_t t1 = cc__now_ns();
    cc_clog_flush(c, 60000);
    double rate = 2.0 * ops / ((double)(t1 - t0) / 1e9);
    printf("sustained:       %5.2f M records/s offered, %llu of %d dropped (%.1f %%)\n", rate / 1e6,
           (unsigned long long)cc_clog_dropped(c), 2 * ops,
           100.0 * (double)cc_clog_dropped(c) / (2.0 * ops));
    cc_clog_close(c);
}

int main(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        int help = argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
        fprintf(help ? stdout : stderr,
                "usage: clog_bench [DIR]\n"
                "  clog's writer: a burst pushed then drained, and the sustained rate with and\n"
                "  without pacing; it writes DIR/clog_bench.log (default /tmp) and removes it.\n");
        return help ? 0 : 2;
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    push_then_drain(dir, 1 << 20);
    sustained(dir, 1000000, 0);
    sustained(dir, 1000000, 2000);
    char path[512];
    snprintf(path, sizeof(path), "%s/clog_bench.log", dir);
    remove(path);
    return 0;
}
