/*
 * shim.h - how the CUDA plugin and the NCCL interposer reach the core.
 *
 * Neither links the core's internals (the plugin links no part of libccomm;
 * the interposer links libccomm.so, whose internals are hidden), so the
 * names that lib/core's headers declare and that plugin code uses - the log
 * macros' cc__log_write and level words, cc__cfg, the op transitions - are
 * defined in shim.c on top of the cc_core_v1_t table handed over at load.
 */
#ifndef CC_CUDA_SHIM_H
#define CC_CUDA_SHIM_H

#include "core/plugin.h"

/* The core's table; NULL until cc__shim_init succeeded. */
extern const cc_core_v1_t *cc__core;

/*
 * Adopt the core's table. Refuses (logs on stderr, returns
 * CC_ERR_NOT_SUPPORTED) a core of another version or with other struct
 * sizes than this plugin was built with. Idempotent.
 */
cc_status_t cc__shim_init(const cc_core_v1_t *core);

/* Fail a communicator through the core (ABORT chain once, engine abort). */
void cc__core_comm_fail(cc_comm_t *comm, cc_status_t status, const char *why);

#endif /* CC_CUDA_SHIM_H */
