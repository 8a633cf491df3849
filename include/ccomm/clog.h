/*
 * ccomm/clog.h - the clog event logger: one text line per op event.
 *
 * A clog file is a per-process text log of what every op did and when:
 * enqueued (Q), started (S), ended (E, with status and duration), waited on
 * (W), aborted (A), plus one signature line per distinct kind of op and one
 * line per communicator. The format is in docs/clog-format.md; the reader is
 * `cclog` (merge, filter, stats, follow, check), docs/cclog.md.
 *
 * The logger is a subscriber on the hook chains (ccomm/hooks.h). On the op
 * path a hook copies a fixed-size binary record into a bounded lock-free ring
 * and returns: no lock, no allocation, no system call, no formatting. A
 * background writer thread formats the records and writes them. When the
 * ring is full the record is dropped and counted, and the writer reports the
 * count in the file (a DROP line), so no line is ever silently lost.
 *
 * Set CCOMM_CLOG=<path> (and CCOMM_CLOG_EVENTS) to have ccomm open one
 * logger for the process at world init, attached to every communicator; or
 * use the functions below to log chosen communicators to a file of your own.
 * One logger may serve many communicators.
 *
 * The file is flushed when a communicator it serves aborts (the abort hook
 * waits, bounded in time, until the writer has written everything before
 * it), by cc_clog_flush, by cc_clog_close and at process exit.
 */
#ifndef CCOMM_CLOG_H
#define CCOMM_CLOG_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cc_clog cc_clog_t;

/* Events to log (cc_clog_config_t.events). Communicator lines (new_comm,
 * split, end_comm) and the file's own lines (V, DROP, END) are always
 * written; signature lines are written as the events that use them. */
#define CC_CLOG_Q         0x01u     /* enqueued (PRE chain) */
#define CC_CLOG_S         0x02u     /* started moving data (START chain) */
#define CC_CLOG_E         0x04u     /* ended, with status and duration (POST chain) */
#define CC_CLOG_W         0x08u     /* the caller waits on the op's work handle */
#define CC_CLOG_A         0x10u     /* the communicator aborts (ABORT chain) */
#define CC_CLOG_LIFECYCLE CC_CLOG_A /* communicator lines and aborts only */
#define CC_CLOG_ALL       0x1fu     /* everything */

/*
 * Logger options. Pass NULL for the defaults or start from
 * CC_CLOG_CONFIG_INIT: struct_size lets later versions add fields.
 */
typedef struct cc_clog_config {
    size_t struct_size;       /* sizeof(cc_clog_config_t); set by CC_CLOG_CONFIG_INIT */
    unsigned events;          /* CC_CLOG_* mask */
    int rank;                 /* written in the header and replaces %r; -1 = unknown */
    uint32_t ring_records;    /* ring capacity in records of 128 bytes, a power of two
                                 >= 2; 0 = 131072 (16 MiB) */
    int64_t flush_timeout_ms; /* bound of the drain on abort and close; 0 = 1000 */
} cc_clog_config_t;

#define CC_CLOG_CONFIG_INIT                                                                        \
    {                                                                                              \
        sizeof(cc_clog_config_t), CC_CLOG_ALL, -1, 0u, 0                                           \
    }

/*
 * cc_clog_open - create (or truncate) the file and start the writer thread.
 *   path    the file; "%r" is replaced by config->rank, "%p" by the pid,
 *           "%h" by the host name, "%%" by "%" (borrowed for the call)
 *   config  options, may be NULL (borrowed for the call)
 *   clog    out: the logger (new; release with cc_clog_close); set only on
 *           success
 * The file starts with the header line (version, base time, rank, pid, host).
 * Returns CC_OK; CC_ERR_INVALID_ARG (path or clog NULL, empty path, an
 * unknown %-sequence, %r with rank -1, bad config, a file that cannot be
 * created: missing directory, no permission); CC_ERR_NO_MEMORY;
 * CC_ERR_SYSTEM (the writer thread could not start, other I/O errors).
 * Every error is logged with the path and the cause.
 * Thread safety: any thread.
 */
CC_API cc_status_t cc_clog_open(const char *path, const cc_clog_config_t *config, cc_clog_t **clog);

/*
 * cc_clog_attach - log the ops of `comm`, or of every communicator when comm
 * is NULL (those that exist now and those created later; a communicator
 * created later gets its new_comm line when its init completes). Attaching
 * one comm writes its new_comm line at once.
 *   clog  the logger (borrowed; must stay open until detached or closed)
 *   comm  the communicator (borrowed), or NULL for all
 * Returns CC_OK; CC_ERR_INVALID_ARG (clog not an open logger, comm invalid);
 * CC_ERR_INVALID_USAGE (already attached to that comm, or comm is NULL and
 * the logger serves single comms, or the reverse: events would be doubled);
 * CC_ERR_NO_MEMORY.
 * Thread safety: any thread; not from inside a hook.
 */
CC_API cc_status_t cc_clog_attach(cc_clog_t *clog, cc_comm_t *comm);

/*
 * cc_clog_detach - stop logging `comm` (NULL: undo an attach of NULL). When
 * it returns, no hook of this logger runs for that comm. Detaching a comm
 * that was destroyed meanwhile is fine.
 * Returns CC_OK; CC_ERR_INVALID_ARG (clog not an open logger);
 * CC_ERR_NOT_FOUND (not attached to that comm).
 * Thread safety: any thread; not from inside a hook.
 */
CC_API cc_status_t cc_clog_detach(cc_clog_t *clog, cc_comm_t *comm);

/*
 * cc_clog_flush - wait until every event recorded before the call is written
 * to the file (write(2) done; no fsync), or until timeout_ms passes
 * (-1: the config's flush_timeout_ms).
 * Returns CC_OK; CC_ERR_TIMEOUT (a producer held a slot or the disk was slow;
 * the rest is written later); CC_ERR_INVALID_ARG (clog not an open logger).
 * Thread safety: any thread, including from inside a hook.
 */
CC_API cc_status_t cc_clog_flush(cc_clog_t *clog, int64_t timeout_ms);

/*
 * cc_clog_dropped - how many records were dropped because the ring was full
 * (each also reported in the file). 0 for NULL. Any thread.
 */
CC_API uint64_t cc_clog_dropped(const cc_clog_t *clog);

/* cc_clog_path - the file's path after expansion (borrowed until close);
 * NULL for NULL. Any thread. */
CC_API const char *cc_clog_path(const cc_clog_t *clog);

/*
 * cc_clog_close - detach from every communicator, write what is left, the
 * DROP count and the END line, close the file and free the logger. The drain
 * is bounded by flush_timeout_ms; records still held by a stalled producer
 * after that are counted as dropped. NULL is ignored.
 * Returns CC_OK; CC_ERR_INVALID_ARG (not an open logger); CC_ERR_SYSTEM (a
 * write failed; the log says which). The logger is freed in every case
 * except CC_ERR_INVALID_ARG.
 * Thread safety: any thread, once per logger; not from inside a hook.
 */
CC_API cc_status_t cc_clog_close(cc_clog_t *clog);

/*
 * cc_clog_parse_events - parse an event selection as CCOMM_CLOG_EVENTS takes
 * it: "ALL", "LIFECYCLE", or a comma-separated list of Q, S, E, W, A (case
 * insensitive, spaces allowed).
 * Returns CC_OK and sets *mask; CC_ERR_INVALID_ARG (NULL, empty, unknown
 * name; *mask untouched). Any thread.
 */
CC_API cc_status_t cc_clog_parse_events(const char *text, unsigned *mask);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_CLOG_H */
