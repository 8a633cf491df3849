/*
 * ccomm_tp.h - the `ccomm` LTTng-UST tracepoint provider: every event and
 * field. docs/tracing.md is the reference for readers of a trace; keep the
 * two in step.
 *
 * Events take the structs the hooks see (cc_op_info_t, cc_abort_info_t) so
 * that a call site passes one pointer and the fields are read only while a
 * session records the event. Enumerations (op type, dtype, reduction,
 * status) are generated from the X-macros of the public headers, so the
 * names in a trace are exactly those of cc_op_type_name() and friends.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ccomm

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "ccomm_tp.h"

#if !defined(CCOMM_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define CCOMM_TP_H

#include <lttng/tracepoint.h>
#include <stddef.h>
#include <stdint.h>

#include "ccomm/hooks.h"

/* Field lists are laid out by hand, one field per line. */
/* clang-format off */
/* ---- enumerations ------------------------------------------------------------ */

#define CCOMM_TP_OPTYPE(name, s, cls) lttng_ust_field_enum_value(s, CC_OP_##name)
LTTNG_UST_TRACEPOINT_ENUM(ccomm, op_type,
                          LTTNG_UST_TP_ENUM_VALUES(CC_OP_TYPE_MAP(CCOMM_TP_OPTYPE)))

#define CCOMM_TP_DTYPE(name, s, size, torch) lttng_ust_field_enum_value(s, CC_##name)
LTTNG_UST_TRACEPOINT_ENUM(ccomm, dtype,
                          LTTNG_UST_TP_ENUM_VALUES(CC_DTYPE_MAP(CCOMM_TP_DTYPE)
                                                       lttng_ust_field_enum_value("none",
                                                                                  CC_DTYPE_COUNT)))

#define CCOMM_TP_REDOP(name, s) lttng_ust_field_enum_value(s, CC_##name)
LTTNG_UST_TRACEPOINT_ENUM(ccomm, redop,
                          LTTNG_UST_TP_ENUM_VALUES(CC_REDOP_MAP(CCOMM_TP_REDOP)
                                                       lttng_ust_field_enum_value("none",
                                                                                  CC_REDOP_COUNT)))

#define CCOMM_TP_STATUS(name, value, desc) lttng_ust_field_enum_value(#name, value)
LTTNG_UST_TRACEPOINT_ENUM(ccomm, status,
                          LTTNG_UST_TP_ENUM_VALUES(CC_STATUS_MAP(CCOMM_TP_STATUS)))

LTTNG_UST_TRACEPOINT_ENUM(ccomm, xfer_dir,
                          LTTNG_UST_TP_ENUM_VALUES(lttng_ust_field_enum_value("send", 0)
                                                       lttng_ust_field_enum_value("recv", 1)))

#ifndef CCOMM_TP_SPAN_DEFINED /* the header is read several times */
#define CCOMM_TP_SPAN_DEFINED
/* Nanoseconds between two CLOCK_MONOTONIC stamps; 0 when either is missing. */
static inline uint64_t ccomm_tp_span(uint64_t from, uint64_t to)
{
    return from && to >= from ? to - from : 0;
}
#endif

/* Fields that name an op, and a communicator step, in every event about them. */
#define CCOMM_TP_OP_KEY(op)                                             \
        lttng_ust_field_integer(uint64_t, op_id, (op)->op_id)           \
        lttng_ust_field_integer_hex(uint64_t, comm_id, (op)->comm_id)   \
        lttng_ust_field_integer(uint64_t, coll_seq, (op)->coll_seq)     \
        lttng_ust_field_integer(uint64_t, p2p_seq, (op)->p2p_seq)       \
        lttng_ust_field_enum(ccomm, op_type, int32_t, type, (op)->type)
#define CCOMM_TP_COMM_KEY(op)                                           \
        lttng_ust_field_integer(uint64_t, op_id, (op)->op_id)           \
        lttng_ust_field_integer_hex(uint64_t, comm_id, (op)->comm_id)   \
        lttng_ust_field_string(comm_name, (op)->comm_name)              \
        lttng_ust_field_integer(int32_t, rank, (op)->rank)              \
        lttng_ust_field_integer(int32_t, size, (op)->size)

/* ---- communicator lifecycle (emitted at POST, with the result) ---------------- */

LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, comm_init, LTTNG_UST_TP_ARGS(const cc_op_info_t *, op),
    LTTNG_UST_TP_FIELDS(
        CCOMM_TP_COMM_KEY(op)
        lttng_ust_field_integer_hex(uint64_t, parent_comm_id, op->parent_comm_id)
        lttng_ust_field_integer(int32_t, device, op->device)
        lttng_ust_field_string(engine, op->engine ? op->engine : "")
        lttng_ust_field_string(transport, op->transport ? op->transport : "")
        lttng_ust_field_enum(ccomm, status, int32_t, status, op->status)
        lttng_ust_field_integer(uint64_t, duration_ns,
                                ccomm_tp_span(op->t_enqueue_ns, op->t_end_ns))))

/* split, destroy and abort of a communicator share their fields. */
LTTNG_UST_TRACEPOINT_EVENT_CLASS(
    ccomm, comm_event, LTTNG_UST_TP_ARGS(const cc_op_info_t *, op),
    LTTNG_UST_TP_FIELDS(
        CCOMM_TP_COMM_KEY(op)
        lttng_ust_field_enum(ccomm, status, int32_t, status, op->status)
        lttng_ust_field_integer(uint64_t, duration_ns,
                                ccomm_tp_span(op->t_enqueue_ns, op->t_end_ns))))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ccomm, comm_event, ccomm, comm_split,
                                    LTTNG_UST_TP_ARGS(const cc_op_info_t *, op))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ccomm, comm_event, ccomm, comm_destroy,
                                    LTTNG_UST_TP_ARGS(const cc_op_info_t *, op))
LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(ccomm, comm_event, ccomm, comm_abort,
                                    LTTNG_UST_TP_ARGS(const cc_op_info_t *, op))

/* ---- operations --------------------------------------------------------------- */

/* PRE chain: the op is numbered and about to reach the engine. */
LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, op_enqueue, LTTNG_UST_TP_ARGS(const cc_op_info_t *, op),
    LTTNG_UST_TP_FIELDS(
        CCOMM_TP_OP_KEY(op)
        lttng_ust_field_integer(int32_t, rank, op->rank)
        lttng_ust_field_integer(uint64_t, count, op->in_count)
        lttng_ust_field_integer(uint64_t, out_count, op->out_count)
        lttng_ust_field_enum(ccomm, dtype, int32_t, dtype, op->dtype)
        lttng_ust_field_enum(ccomm, redop, int32_t, redop, op->redop)
        lttng_ust_field_integer(int32_t, root, op->root)
        lttng_ust_field_integer(int32_t, peer, op->peer)
        lttng_ust_field_integer(int32_t, tag, op->tag)
        lttng_ust_field_integer(uint64_t, bytes, op->bytes)
        lttng_ust_field_integer(int64_t, timeout_ms, op->timeout_ms)))

/* START chain: the engine began moving data. */
LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, op_start, LTTNG_UST_TP_ARGS(const cc_op_info_t *, op),
    LTTNG_UST_TP_FIELDS(
        CCOMM_TP_OP_KEY(op)
        lttng_ust_field_integer(uint64_t, queued_ns,
                                ccomm_tp_span(op->t_enqueue_ns, op->t_start_ns))))

/* POST chain: the op completed, well or badly (also after a veto). */
LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, op_end, LTTNG_UST_TP_ARGS(const cc_op_info_t *, op),
    LTTNG_UST_TP_FIELDS(
        CCOMM_TP_OP_KEY(op)
        lttng_ust_field_enum(ccomm, status, int32_t, status, op->status)
        lttng_ust_field_integer(uint64_t, duration_ns,
                                ccomm_tp_span(op->t_start_ns, op->t_end_ns))
        lttng_ust_field_integer(uint64_t, total_ns,
                                ccomm_tp_span(op->t_enqueue_ns, op->t_end_ns))
        lttng_ust_field_string(algorithm, op->algorithm ? op->algorithm : "")
        lttng_ust_field_string(transport, op->transport ? op->transport : "")))

/* ---- the hang path ------------------------------------------------------------ */

/* An op passed its deadline; its communicator is being aborted (emitted
 * from the ABORT chain when the reason is CC_ERR_TIMEOUT, before `abort`). */
LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, watchdog_timeout, LTTNG_UST_TP_ARGS(const cc_op_info_t *, op, uint64_t, waited_ns),
    LTTNG_UST_TP_FIELDS(
        CCOMM_TP_OP_KEY(op)
        lttng_ust_field_string(comm_name, op->comm_name)
        lttng_ust_field_integer(int32_t, rank, op->rank)
        lttng_ust_field_integer(int64_t, timeout_ms, op->timeout_ms)
        lttng_ust_field_integer(uint64_t, waited_ns, waited_ns)))

/* ABORT chain: a communicator can no longer make progress. */
LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, abort, LTTNG_UST_TP_ARGS(const cc_abort_info_t *, a),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, a->comm_id)
        lttng_ust_field_string(comm_name, a->comm_name)
        lttng_ust_field_integer(int32_t, rank, a->rank)
        lttng_ust_field_integer(int32_t, size, a->size)
        lttng_ust_field_enum(ccomm, status, int32_t, reason, a->reason)
        lttng_ust_field_integer(uint64_t, op_id, a->op ? a->op->op_id : 0)
        lttng_ust_field_integer(int32_t, signal, a->signal)
        lttng_ust_field_string(message, a->message)))

/* A flight recorder dump was written, or failed (emitted by the dumper). */
LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, recorder_dump, LTTNG_UST_TP_ARGS(const char *, reason, const char *, path, int32_t, status),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_string(reason, reason ? reason : "")
        lttng_ust_field_string(path, path ? path : "")
        lttng_ust_field_enum(ccomm, status, int32_t, status, status)))

/* ---- transports (emitted per chunk by the transport) ------------------------- */

LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, xfer_begin,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, dir, int32_t, peer, uint32_t, tag, uint64_t,
                      bytes, const char *, transport),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_enum(ccomm, xfer_dir, int32_t, dir, dir)
        lttng_ust_field_integer(int32_t, peer, peer)
        lttng_ust_field_integer_hex(uint32_t, tag, tag)
        lttng_ust_field_integer(uint64_t, bytes, bytes)
        lttng_ust_field_string(transport, transport ? transport : "")))

LTTNG_UST_TRACEPOINT_EVENT(
    ccomm, xfer_end,
    LTTNG_UST_TP_ARGS(uint64_t, comm_id, int32_t, dir, int32_t, peer, uint32_t, tag, uint64_t,
                      bytes, const char *, transport, int32_t, status),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(uint64_t, comm_id, comm_id)
        lttng_ust_field_enum(ccomm, xfer_dir, int32_t, dir, dir)
        lttng_ust_field_integer(int32_t, peer, peer)
        lttng_ust_field_integer_hex(uint32_t, tag, tag)
        lttng_ust_field_integer(uint64_t, bytes, bytes)
        lttng_ust_field_string(transport, transport ? transport : "")
        lttng_ust_field_enum(ccomm, status, int32_t, status, status)))

/* clang-format on */

#endif /* CCOMM_TP_H */

#include <lttng/tracepoint-event.h>
