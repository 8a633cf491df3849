/*
 * ccomm/status.h - status codes returned by every ccomm call.
 *
 * CC_OK is 0 and CC_INPROGRESS is 1. Errors are negative and grouped by how
 * much is broken, so a caller can decide what to do from the range alone:
 *
 *   -1  .. -19   the call:          fix the arguments and call again
 *   -20 .. -39   a peer:            a remote rank died, left or was refused
 *   -40 .. -59   the communicator:  it timed out, was aborted or desynced;
 *                                   destroy it (or shrink around the failure)
 *   -60 .. -79   the process:       out of memory, a system call failed, a bug
 *
 * The list is an X-macro so that cc_status_str() and the docs cannot drift.
 */
#ifndef CCOMM_STATUS_H
#define CCOMM_STATUS_H

#include "ccomm/visibility.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, description) */
#define CC_STATUS_MAP(X)                                                                           \
    X(OK, 0, "success")                                                                            \
    X(INPROGRESS, 1, "operation in progress")                                                      \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                                     \
    X(ERR_NOT_SUPPORTED, -2, "not supported")                                                      \
    X(ERR_INVALID_USAGE, -3, "invalid usage (wrong state or order of calls)")                      \
    X(ERR_BUSY, -4, "resource busy (address or port in use)")                                      \
    X(ERR_NOT_FOUND, -5, "not found")                                                              \
    X(ERR_PEER_LOST, -20, "peer lost (a remote rank died or closed its connection)")               \
    X(ERR_CONNECT, -21, "connection failed (store or peer unreachable)")                           \
    X(ERR_AUTH, -22, "authentication failed (wrong or missing job key)")                           \
    X(ERR_PROTOCOL, -23, "protocol error (malformed or oversized message from a peer)")            \
    X(ERR_TIMEOUT, -40, "timed out")                                                               \
    X(ERR_ABORTED, -41, "communicator aborted")                                                    \
    X(ERR_MISMATCH, -42, "ranks disagree (different operation, size, type or world size)")         \
    X(ERR_NO_MEMORY, -60, "out of memory")                                                         \
    X(ERR_SYSTEM, -61, "system call failed")                                                       \
    X(ERR_INTERNAL, -62, "internal error (a bug in ccomm)")

typedef enum cc_status {
#define CC__STATUS_ENUM(name, value, desc) CC_##name = (value),
    CC_STATUS_MAP(CC__STATUS_ENUM)
#undef CC__STATUS_ENUM
} cc_status_t;

/* Range tests, see the table at the top of this file. */
#define CC_STATUS_IS_CALL_ERROR(s) ((s) <= -1 && (s) >= -19)
#define CC_STATUS_IS_PEER_ERROR(s) ((s) <= -20 && (s) >= -39)
#define CC_STATUS_IS_COMM_ERROR(s) ((s) <= -40 && (s) >= -59)
#define CC_STATUS_IS_PROCESS_ERROR(s) ((s) <= -60)

/*
 * cc_status_str - a short English description of a status.
 * Returns a static string, never NULL ("unknown status" for values outside
 * the list). Thread safety: any thread; async-signal-safe.
 */
CC_API const char *cc_status_str(cc_status_t status);

/*
 * cc_status_name - the enumerator's name without the prefix, e.g.
 * "ERR_TIMEOUT". Returns a static string, never NULL. Any thread.
 */
CC_API const char *cc_status_name(cc_status_t status);

/*
 * cc_last_error - what ccomm's last error said on the calling thread: the
 * message of its error log line without the prefix (kept also when
 * CCOMM_LOG_LEVEL hides error lines), e.g. "cc_comm_split: child (the
 * output) is NULL"; "" when this thread saw none. A failing call may have
 * logged its cause on another thread (an engine's worker): then this says
 * an older error or nothing. Returns a thread-local string, overwritten by
 * the thread's next error: copy it to keep it. Any thread.
 */
CC_API const char *cc_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_STATUS_H */
