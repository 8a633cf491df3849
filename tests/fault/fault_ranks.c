/*
 * fault_ranks.c - the ranks of the fault scenarios: each runs a real
 * 4-rank job (forked processes over shm), does a few healthy collectives,
 * then one rank (or two) injects the fault. The ranks report by exit status
 * only that they got as far as expected; what the scenario proves is
 * checked on ccdump's diagnosis of what they left on disk (test_fault.c).
 *
 * Hangs end by short op timeouts (HANG_MS) or by the heartbeat check
 * (CCOMM_HEARTBEAT_MS=100); the rank "stuck in compute" leaves once the
 * job-wide dump it must take part in is on disk.
 */
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"

#define HANG_MS 1500 /* the deadline of the op that hangs */

static cc_op_opts_t hang_opts(void)
{
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = HANG_MS;
    return o;
}

/* World, and three healthy allreduces: history before the fault. */
static cc_comm_t *start(int rank, int size, const char *addr)
{
    cc_comm_t *comm = NULL;
    if (cc_comm_init(&comm, rank, size, addr, NULL) != CC_OK) return NULL;
    float x[4] = {1, 2, 3, 4}, y[4];
    for (int i = 0; i < 3; i++)
        if (cc_allreduce(comm, x, y, 4, CC_FLOAT32, CC_SUM, NULL, NULL) != CC_OK) return NULL;
    return comm;
}

static cc_status_t allreduce(cc_comm_t *comm, size_t count, cc_dtype_t dt)
{
    double x[8] = {0}, y[8];
    cc_op_opts_t o = hang_opts();
    return cc_allreduce(comm, x, y, count, dt, CC_SUM, &o, NULL);
}

/* "Compute" until this rank's part of the job-wide dump is on disk (or 10 s). */
static void compute_until_dumped(const char *dir, const char *job, int rank)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/dumps/%s/rank%d.json", dir, job, rank);
    struct stat st;
    for (int i = 0; i < 200 && stat(path, &st) != 0; i++)
        usleep(50000);
    usleep(200000);
}

int fault_healthy(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    int32_t v = rank;
    for (int i = 0; i < 3; i++) {
        int peer = rank ^ 1;
        cc_status_t st = rank & 1 ? cc_recv(comm, &v, 1, CC_INT32, peer, NULL, NULL)
                                  : cc_send(comm, &v, 1, CC_INT32, peer, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_OK, "p2p: %s", cc_status_name(st));
        st = rank & 1 ? cc_send(comm, &v, 1, CC_INT32, peer, NULL, NULL)
                      : cc_recv(comm, &v, 1, CC_INT32, peer, NULL, NULL);
        CC_TEST_REQUIRE(st == CC_OK, "p2p back: %s", cc_status_name(st));
    }
    CC_TEST_REQUIRE(cc_barrier(comm, NULL, NULL) == CC_OK, "barrier");
    cc_comm_destroy(comm);
    return 0;
}

/* 1: rank 2 stops calling collectives ("compute"); the others time out. */
int fault_compute(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    if (rank == 2) {
        compute_until_dumped(arg, "fault-compute", rank);
    } else {
        cc_status_t st = allreduce(comm, 4, CC_FLOAT32);
        CC_TEST_REQUIRE(st == CC_ERR_TIMEOUT || st == CC_ERR_PEER_LOST, "%s", cc_status_name(st));
    }
    cc_comm_destroy(comm);
    return 0;
}

static void *kill_me_later(void *p)
{
    (void)p;
    usleep(150000);
    raise(SIGKILL);
    return NULL;
}

/* 2: rank 2 is killed (SIGKILL) inside an allreduce the others join late. */
int fault_sigkill(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    if (rank == 2) {
        pthread_t t;
        pthread_create(&t, NULL, kill_me_later, NULL);
        allreduce(comm, 4, CC_FLOAT32);
        pthread_join(t, NULL);
        return 3; /* not reached */
    }
    usleep(400000);
    /* Rank 2 may have published its share before it died: the shared-memory
     * algorithms then complete this op correctly, and the next one fails. */
    cc_status_t st = allreduce(comm, 4, CC_FLOAT32);
    if (st == CC_OK) st = allreduce(comm, 4, CC_FLOAT32);
    CC_TEST_REQUIRE(st != CC_OK, "two allreduces with a dead rank: OK");
    cc_comm_destroy(comm);
    return 0;
}

/* 3: rank 2 segfaults in its own code between collectives. */
int fault_segv(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    if (rank == 2) {
        usleep(200000);
        /* A wild pointer, not NULL: UBSan (sanitizer builds) stops a NULL store itself. */
        volatile uintptr_t wild = 16;
        *(volatile int *)wild = 1;
        return 3; /* not reached */
    }
    cc_status_t st = allreduce(comm, 4, CC_FLOAT32);
    CC_TEST_REQUIRE(st != CC_OK, "allreduce with a crashed rank: OK");
    cc_comm_destroy(comm);
    return 0;
}

/* 4-6: rank 2 calls a barrier / 8 elements / doubles where the others allreduce 4 floats. */
int fault_mismatch(int rank, int size, const char *addr, void *arg)
{
    const char *what = arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    cc_op_opts_t o = hang_opts();
    if (rank != 2) allreduce(comm, 4, CC_FLOAT32);
    else if (!strcmp(what, "type")) cc_barrier(comm, &o, NULL);
    else if (!strcmp(what, "count")) allreduce(comm, 8, CC_FLOAT32);
    else allreduce(comm, 4, CC_FLOAT64);
    cc_comm_destroy(comm);
    return 0;
}

/* 7: rank 0 sends 1 MiB to rank 1, which never receives it (it goes to a barrier). */
int fault_send_norecv(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    cc_op_opts_t o = hang_opts();
    if (rank == 0) {
        size_t n = 1 << 20;
        char *buf = calloc(1, n);
        cc_status_t st = cc_send(comm, buf, n, CC_UINT8, 1, &o, NULL);
        free(buf);
        CC_TEST_REQUIRE(st != CC_OK, "a send nobody receives completed");
    } else {
        cc_barrier(comm, &o, NULL);
    }
    cc_comm_destroy(comm);
    return 0;
}

/* 8: ranks 0 and 1 both receive from each other before sending; 2 and 3 wait in a barrier. */
int fault_p2p_order(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    cc_op_opts_t o = hang_opts();
    int32_t v = rank;
    if (rank < 2) {
        cc_status_t st = cc_recv(comm, &v, 1, CC_INT32, 1 - rank, &o, NULL);
        CC_TEST_REQUIRE(st != CC_OK, "recv before any send completed");
        cc_send(comm, &v, 1, CC_INT32, 1 - rank, &o, NULL);
    } else {
        cc_barrier(comm, &o, NULL);
    }
    cc_comm_destroy(comm);
    return 0;
}

/* 9: rank 3 computes 30 ms longer before each of 20 allreduces; nothing hangs. */
int fault_straggler(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    for (int i = 0; i < 20; i++) {
        if (rank == 3) usleep(30000);
        float x = 1, y;
        CC_TEST_REQUIRE(cc_allreduce(comm, &x, &y, 1, CC_FLOAT32, CC_SUM, NULL, NULL) == CC_OK, "ar");
    }
    cc_comm_destroy(comm);
    return 0;
}

/* 10: world splits into {0,1} and {2,3}; rank 1 never joins its half's allreduce. */
int fault_subcomm(int rank, int size, const char *addr, void *arg)
{
    cc_comm_t *comm = start(rank, size, addr), *half = NULL;
    CC_TEST_REQUIRE(comm, "start");
    CC_TEST_REQUIRE(cc_comm_split(comm, rank / 2, rank, NULL, &half) == CC_OK, "split");
    if (rank == 1) {
        compute_until_dumped(arg, "fault-subcomm", rank);
    } else if (rank == 0) {
        cc_status_t st = allreduce(half, 4, CC_FLOAT32);
        CC_TEST_REQUIRE(st != CC_OK, "allreduce without rank 1 completed");
    } else {
        for (int i = 0; i < 5; i++)
            CC_TEST_REQUIRE(allreduce(half, 4, CC_FLOAT32) == CC_OK, "the healthy half");
        compute_until_dumped(arg, "fault-subcomm", rank);
    }
    cc_comm_destroy(half);
    cc_comm_destroy(comm);
    return 0;
}

/*
 * 11: rank 2 stops itself (SIGSTOP) before the allreduce; the test kills it. The others must
 * learn it from the heartbeat check (CCOMM_HEARTBEAT_MS=100: silent for 3 beats + 2 s), as
 * CC_ERR_PEER_LOST well before the op's own deadline: a timeout would mean the check did
 * not work (a heartbeat limit read in the wrong unit, say) and only the deadline ended it.
 */
#define STOP_DEADLINE_MS 12000

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int fault_sigstop(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr);
    CC_TEST_REQUIRE(comm, "start");
    if (rank == 2) {
        raise(SIGSTOP);
        return 3; /* killed while stopped */
    }
    double x[4] = {0}, y[4];
    cc_op_opts_t o = CC_OP_OPTS_INIT;
    o.timeout_ms = STOP_DEADLINE_MS;
    double t0 = seconds_now();
    cc_status_t st = cc_allreduce(comm, x, y, 4, CC_FLOAT64, CC_SUM, &o, NULL);
    double took = seconds_now() - t0;
    CC_TEST_REQUIRE(st == CC_ERR_PEER_LOST,
                    "rank %d: allreduce with a stopped rank: %s after %.1f s", rank,
                    cc_status_name(st), took);
    CC_TEST_REQUIRE(took < STOP_DEADLINE_MS / 1000.0 - 2,
                    "rank %d: the stopped rank was noticed only after %.1f s (deadline %d ms)",
                    rank, took, STOP_DEADLINE_MS);
    cc_comm_destroy(comm);
    return 0;
}

/* 12: world and a copy of it; rank 1 uses them in the opposite order. */
int fault_cross_comm(int rank, int size, const char *addr, void *arg)
{
    (void)arg;
    cc_comm_t *comm = start(rank, size, addr), *dup = NULL;
    CC_TEST_REQUIRE(comm, "start");
    CC_TEST_REQUIRE(cc_comm_split(comm, 0, rank, NULL, &dup) == CC_OK, "split");
    cc_comm_t *first = rank == 1 ? dup : comm, *second = rank == 1 ? comm : dup;
    cc_status_t st = allreduce(first, 4, CC_FLOAT32);
    CC_TEST_REQUIRE(st != CC_OK, "allreduce in the wrong order completed");
    allreduce(second, 4, CC_FLOAT32);
    cc_comm_destroy(dup);
    cc_comm_destroy(comm);
    return 0;
}
