/*
 * clog_internal.h - the clog logger's insides, shared by its files, and the
 * entry points the core and the tests call.
 *
 * Files: clog.c (open, close, flush, the process's logger), clog_attach.c
 * (hook registration), clog_hooks.c (the subscribers: op path), clog_ring.c
 * (the ring), clog_writer.c (the writer thread), clog_format.c (lines and
 * signature numbering, writer side).
 */
#ifndef CC_CLOG_INTERNAL_H
#define CC_CLOG_INTERNAL_H

#include <pthread.h>
#include <sys/types.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ccomm/clog.h"
#include "ccomm/hooks.h"
#include "clog/clog_ring.h"

#define CC__CLOG_MAGIC            0x636c6f67u /* "clog" */
/* 16 MiB (128-byte slots): 20 ms of slack at the 6.5 M records/s of two ranks' 8-byte
 * allreduces on one host, more than the writer waits for a CPU when the ranks keep both
 * busy (32768 dropped 13 % of them there, 65536 0.5 %: bench/obs_modes.sh, 2026-12-02).
 * Three records an op then; two since an op that starts as it is issued puts its Q and S
 * in one (CC__CLOG_REC_QS), so the same ring now holds half as many ops again. */
#define CC__CLOG_DEFAULT_RING     131072u
#define CC__CLOG_DEFAULT_FLUSH_MS 1000

/* One attachment: the hooks registered for one comm (or for all: comm NULL). */
struct cc__clog_att {
    cc_comm_t *comm;       /* borrowed; NULL = all comms */
    uint64_t comm_id;      /* to tell a reused comm address from the old comm */
    cc_hook_handle_t h[5]; /* pre, start, post, wait, abort */
    struct cc__clog_att *next;
};

struct cc__clog_fmt; /* the writer's formatting state (clog_format.c) */

/* Comms whose new_comm record is in the ring (op records carry no name). */
#define CC__CLOG_NAMED 256 /* a power of two; more comms than this log as "comm=?" */

struct cc_clog {
    _Atomic uint32_t magic;    /* CC__CLOG_MAGIC while open */
    unsigned events;           /* CC_CLOG_* mask; read on the op path, immutable */
    struct cc__clog_ring ring; /* op path -> writer */

    /* The comm ids the writer will know by name: set when a comm's NEW record
     * is queued (init, attach, or the first op of a comm the logger never saw
     * created), before its first op record. last_named caches the last hit. */
    _Atomic uint64_t last_named;
    _Atomic int named_full; /* the table filled up: op paths stop probing it */
    _Atomic uint64_t named_id[CC__CLOG_NAMED];  /* 0 = free */
    _Atomic uint8_t named_ready[CC__CLOG_NAMED]; /* 1 once that comm's NEW is queued */

    /* Immutable after open. */
    int fd;
    char *path;
    int rank;
    pid_t pid;             /* the opener: a forked child has the ring but no writer */
    uint64_t base_mono_ns; /* the base time on CLOCK_MONOTONIC ... */
    uint64_t base_real_ns; /* ... and the same instant on CLOCK_REALTIME */
    int64_t flush_timeout_ms;

    /* Writer thread; the fields below `lock` are guarded by it. */
    pthread_t thread;
    int thread_started;
    pthread_mutex_t lock;
    pthread_cond_t wake;      /* the writer sleeps on it between polls */
    pthread_cond_t progress;  /* flushers sleep on it */
    int stop;                 /* close or exit: drain, write END, quit */
    int paused;               /* tests: the writer takes nothing */
    int finished;             /* the writer wrote END and quit */
    int io_error;             /* a write failed (logged once) */
    uint64_t flush_target;    /* a flusher waits for `written` to reach it: poll now */
    _Atomic uint64_t written; /* ring positions taken and written to the file */
    uint64_t drops_reported;  /* drops already in a DROP line (writer only) */
    struct cc__clog_fmt *fmt; /* writer only */
    char *buf;                /* writer only: lines not yet written */
    size_t buflen;

    /* Attachments, guarded by att_lock (never held while a hook may wait on it). */
    pthread_mutex_t att_lock;
    struct cc__clog_att *atts;
    struct cc_clog *next_open; /* the list of open loggers, for exit */
};

/* ---- the process's logger (CCOMM_CLOG), called by the core -------------- */

/*
 * Open the logger that CCOMM_CLOG asks for and attach it to every comm.
 * Called once by the core at world init, when the world rank is known and
 * before the world comm's init completes (so its new_comm line is written).
 * CCOMM_CLOG empty: CC_OK, nothing done. A bad path or CCOMM_CLOG_EVENTS is
 * logged and returned; the core goes on without a logger.
 */
cc_status_t cc__clog_auto_open(int world_rank);
/* Close the process's logger (tests; exit closes it anyway). */
void cc__clog_auto_close(void);
/* The process's logger, or NULL. */
cc_clog_t *cc__clog_auto(void);

/* ---- the subscribers (user = the cc_clog_t); tests call them directly ---- */

cc_status_t cc__clog_on_pre(const cc_op_info_t *op, void *user);
void cc__clog_on_start(const cc_op_info_t *op, void *user);
void cc__clog_on_post(const cc_op_info_t *op, void *user);
void cc__clog_on_wait(const cc_op_info_t *op, void *user);
void cc__clog_on_abort(const cc_abort_info_t *info, void *user);

/* ---- between the files --------------------------------------------------- */

/* Validate a handle from the API (magic). */
int cc__clog_valid(const cc_clog_t *c);
/* Queue a NEW record for a comm (attach, POST of COMM_INIT, first op of an unseen comm). */
void cc__clog_push_new_comm(cc_clog_t *c, const cc_op_info_t *op);
/* Remove every attachment; when it returns no hook of this logger runs. */
void cc__clog_detach_all(cc_clog_t *c);
/* Expand %r %p %h %% into out; CC_ERR_INVALID_ARG (logged) on a bad pattern. */
cc_status_t cc__clog_expand_path(const char *pat, int rank, char *out, size_t outlen);

/* Writer thread (clog_writer.c). */
cc_status_t cc__clog_writer_start(cc_clog_t *c);
/* Drain (bounded by flush_timeout_ms), write DROP and END, join. Idempotent. */
void cc__clog_writer_stop(cc_clog_t *c);
/* Wait until `written` reaches the positions claimed now, or timeout. */
cc_status_t cc__clog_writer_flush(cc_clog_t *c, int64_t timeout_ms);
/* Tests: stop or resume taking records, to fill the ring on purpose. */
void cc__clog_pause(cc_clog_t *c, int paused);

/* Formatting (clog_format.c), writer thread only. */
struct cc__clog_fmt *cc__clog_fmt_new(void);
void cc__clog_fmt_free(struct cc__clog_fmt *f);
/* Append the line(s) of one record to buf; returns bytes written, at most
 * cap (lines are cut at CC__CLOG_LINE_MAX). Takes ownership of rec->text.
 * A record that cannot be written (no memory for its signature) is counted
 * in c->ring.dropped. */
size_t cc__clog_fmt_rec(struct cc__clog_fmt *f, cc_clog_t *c, struct cc__clog_rec *rec, char *buf,
                        size_t cap);
/* "DROP|count=..|total=..|+t\n" / "END|dropped=..|+t\n" at monotonic time t. */
size_t cc__clog_fmt_drop(const cc_clog_t *c, uint64_t count, uint64_t total, uint64_t t, char *buf,
                         size_t cap);
size_t cc__clog_fmt_end(const cc_clog_t *c, uint64_t total, uint64_t t, char *buf, size_t cap);
/* The header line "V|1|base_timestamp=..|rank=..|pid=..|host=..\n". */
size_t cc__clog_fmt_header(const cc_clog_t *c, char *buf, size_t cap);

/* Longest line the writer produces; a longer ranks list or message is cut and ends in "...". */
#define CC__CLOG_LINE_MAX 65536
/* The writer's buffer: room for a few longest lines, written when nearly full. */
#define CC__CLOG_BUF_SIZE (4 * CC__CLOG_LINE_MAX)

#endif /* CC_CLOG_INTERNAL_H */
