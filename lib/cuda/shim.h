/*
 * shim.h - how the CUDA plugin and the NCCL interposer reach the core.
 *
 * Neither links the core's internals (the plugin links no part of libccomm;
 * the interposer links libccomm.so, whose internals are hidden), so the
 * names that lib/core's headers declare and that plugin code uses - the log
 * macros' cc__log_write and level words, cc__cfg, the op transitions - are
 * defined in shim.c on top of the cc_core_t table handed over at load.
 */
#ifndef CC_CUDA_SHIM_H
#define CC_CUDA_SHIM_H

#include "core/plugin.h"

/* The core's table; NULL until cc__shim_init succeeded. */
extern const cc_core_t *cc__core;

/*
 * Adopt the core's table. Refuses (says so on stderr, naming both build
 * ids; returns CC_ERR_NOT_SUPPORTED) a NULL core or one whose build_id is
 * not this plugin's CC_BUILD_ID. Idempotent.
 */
cc_status_t cc__shim_init(const cc_core_t *core);

/* Fail a communicator through the core (ABORT chain once, engine abort). */
void cc__core_comm_fail(cc_comm_t *comm, cc_status_t status, const char *why);

#endif /* CC_CUDA_SHIM_H */
