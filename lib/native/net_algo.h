/*
 * net_algo.h - algorithms of the native engine written for message
 * transports (TCP) whose cost is set by the number of messages and rounds,
 * not by the bytes: their prototypes and the pieces they share with the
 * algorithms they build on. select.c's NET rows say where each one runs.
 */
#ifndef CC_NATIVE_NET_ALGO_H
#define CC_NATIVE_NET_ALGO_H

#include "native/native.h"

/* Recursive-doubling allreduce of op's in_count elements in acc, tmp as large
 * (allreduce_recursive_doubling.c). */
cc_status_t cc__rd_allreduce(cc__native_t *nc, cc__op_t *op, cc__reduce_fn fn, char *acc,
                             char *tmp);

/* reduce_scatter_rd.c: the whole vector allreduced by recursive doubling, own block kept. */
cc_status_t cc__reduce_scatter_rd(cc__native_t *nc, cc__op_t *op);

/* alltoall_bruck.c: Bruck's all-to-all, ceil(log2 n) rounds of one message each. */
cc_status_t cc__alltoall_bruck(cc__native_t *nc, cc__op_t *op);

#endif /* CC_NATIVE_NET_ALGO_H */
