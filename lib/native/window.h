/*
 * window.h - RMA windows of the native engine (internal;
 * the public API is ccomm/window.h, its door lib/core/window_api.c).
 *
 * A window (struct cc_window, engine/window.h: the core's handle, whose
 * native members this engine fills) is every rank's registered region
 * (pid, address, size, learnt at creation) plus, on an all-shm
 * communicator, one shared segment of
 * signal counters: for each target rank a line with its bell (futex word)
 * and sleeping flag, then one 64-bit counter per sender. Puts and gets are
 * process_vm_writev/readv into or out of the peer's region; a signal adds
 * to the target's counter for the sender and rings its bell if it sleeps.
 * On a communicator with a TCP peer (class NET) every peer is served over
 * TCP instead: requests on one connection per ordered pair, applied by the
 * target's progress thread (window_tcp.h).
 */
#ifndef CC_NATIVE_WINDOW_H
#define CC_NATIVE_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ccomm/ccomm.h"
#include "engine/window.h"
#include "native/native.h"

/* The engine table's window entries (engine.h, v3). Collective over the comm's ranks:
 * register [base, base + bytes) into the core's handle w. On an all-shm comm it needs ranks
 * that can read each other (else CC_ERR_NOT_SUPPORTED, logged); on a comm with a TCP peer
 * every peer is served over TCP (window_tcp.h). */
cc_status_t cc__native_window_create(void *state, struct cc_window *w, void *base, size_t bytes,
                                     uint64_t deadline_ns);
/* Collective: a barrier, then free everything create set (the core keeps the handle). */
cc_status_t cc__native_window_destroy(void *state, struct cc_window *w, uint64_t deadline_ns);

/* The op algorithms (select.c rows): op->extra is the window, info.peer the target,
 * info.bytes the length, info.out_count the target offset, info.in_count wait's count. */
cc_status_t cc__win_put_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_get_cma(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_signal_shm(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_wait_signal_shm(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_flush_shm(cc__native_t *nc, cc__op_t *op);
/* The same over TCP (window_tcp_ops.c). */
cc_status_t cc__win_put_tcp(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_get_tcp(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_signal_tcp(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_wait_signal_tcp(cc__native_t *nc, cc__op_t *op);
cc_status_t cc__win_flush_tcp(cc__native_t *nc, cc__op_t *op);

#endif /* CC_NATIVE_WINDOW_H */
