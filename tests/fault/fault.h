/*
 * fault.h - the fault scenarios' rank functions (fault_ranks.c) for the
 * harness of tests/common/mp.h. `arg` is the scenario's private directory
 * (rings in <dir>/rings, dumps in <dir>/dumps) or, for fault_mismatch,
 * which mismatch ("type", "count", "dtype").
 */
#ifndef CC_TEST_FAULT_H
#define CC_TEST_FAULT_H

#include "mp.h"

int fault_healthy(int rank, int size, const char *addr, void *arg);
int fault_compute(int rank, int size, const char *addr, void *arg);
int fault_sigkill(int rank, int size, const char *addr, void *arg);
int fault_segv(int rank, int size, const char *addr, void *arg);
int fault_mismatch(int rank, int size, const char *addr, void *arg);
int fault_send_norecv(int rank, int size, const char *addr, void *arg);
int fault_p2p_order(int rank, int size, const char *addr, void *arg);
int fault_straggler(int rank, int size, const char *addr, void *arg);
int fault_subcomm(int rank, int size, const char *addr, void *arg);
int fault_sigstop(int rank, int size, const char *addr, void *arg);
int fault_cross_comm(int rank, int size, const char *addr, void *arg);

#endif /* CC_TEST_FAULT_H */
