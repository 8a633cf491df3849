/*
 * train_demo.c - a few training-like steps on every rank, and a hang.
 *
 * Each step allreduces a "gradient" (1 Mi floats), then all ranks meet at a
 * barrier. At step CCDEMO_HANG_STEP (default 4) the rank CCDEMO_HANG_RANK
 * (default 2) gets stuck in its own "compute" and never joins the allreduce:
 * the others time out, ccomm dumps every rank's flight recorder (the stuck
 * one too: its watchdog thread still runs), and `ccdump diagnose` names the
 * culprit. Run it with scripts/demo.sh, or:
 *   CCOMM_TIMEOUT=5 build/bin/ccrun -n 4 --grace 3 build/examples/train_demo
 */
#include <ccomm/ccomm.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NGRAD (1u << 20)

static int env_int(const char *name, int dflt)
{
    const char *v = getenv(name); /* the demo's own knobs, not ccomm's */
    return v && *v ? atoi(v) : dflt;
}

int main(void)
{
    cc_comm_t *comm;
    cc_status_t st = cc_comm_init_from_env(&comm, NULL);
    if (st != CC_OK) {
        fprintf(stderr, "init: %s\n", cc_status_str(st));
        return 1;
    }
    int rank = cc_comm_rank(comm), size = cc_comm_size(comm);
    int hang_rank = env_int("CCDEMO_HANG_RANK", 2) % size;
    int hang_step = env_int("CCDEMO_HANG_STEP", 4);
    float *grad = malloc(NGRAD * sizeof(float));
    for (unsigned i = 0; i < NGRAD; i++) grad[i] = (float)rank;
    for (int step = 1; step <= 6; step++) {
        if (rank == hang_rank && step == hang_step) {
            printf("rank %d: step %d: stuck in compute (this is the injected hang)\n", rank, step);
            fflush(stdout);
            for (;;) pause();
        }
        usleep(100000 * (unsigned)(1 + rank % 2)); /* forward and backward pass */
        st = cc_allreduce(comm, grad, grad, NGRAD, CC_FLOAT32, CC_AVG, NULL, NULL);
        if (st == CC_OK) st = cc_barrier(comm, NULL, NULL);
        if (st != CC_OK) {
            printf("rank %d: step %d: %s (%s)\n", rank, step, cc_status_name(st), cc_status_str(st));
            break;
        }
        printf("rank %d: step %d done, grad[0] = %g\n", rank, step, grad[0]);
        fflush(stdout);
    }
    const char *ring = cc_recorder_ring_path();
    printf("rank %d: flight recorder ring: %s\n", rank, ring ? ring : "(off)");
    cc_comm_destroy(comm);
    free(grad);
    return st == CC_OK ? 0 : 3;
}
