/*
 * barrier_shm.c - a barrier between ranks of one host: every rank publishes
 * its arrival line and waits for every other's, one cache line per peer.
 */
#include "native/shm_algo.h"

static cc_status_t arrive(cc__native_t *nc, cc__op_t *op, cc__arena_op_t *ao)
{
    CC_CHECK(cc__shm_begin(nc, op, 0, ao));
    cc__arena_post(ao);
    CC_CHECK(cc__arena_wait_all(ao));
    return cc__arena_check_quit(ao);
}

cc_status_t cc__barrier_shm(cc__native_t *nc, cc__op_t *op)
{
    return cc__shm_run(nc, op, 0, arrive, NULL);
}
