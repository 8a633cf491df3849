/*
 * diag.h - the hang diagnosis (ccdump diagnose). The analysis runs in
 * passes over the per-communicator index, each adding machine-readable
 * detail to the report (JSON) and findings to a list:
 *   diag_proc.c   each rank's process: missing, crashed, killed, stopped...
 *   diag_coll.c   per comm: the first collective not every member completed,
 *                 who waits in it and who never entered; mismatches at one
 *                 coll_seq; stragglers
 *   diag_p2p.c    sends without a matching receive and the reverse
 *   diag_wait.c   who waits for whom (across comms and p2p): deadlock
 *                 cycles and the ranks at the end of the waits
 *   diag_verdict.c the one verdict: the finding that best explains the rest
 *   diag_text.c   the readable report
 */
#ifndef CCDUMP_DIAG_H
#define CCDUMP_DIAG_H

#include <jansson.h>
#include <stdio.h>

#include "index.h"
#include "model.h"

enum ccd_conf { CCD_UNCERTAIN = 1, CCD_LIKELY, CCD_CERTAIN };

/* A rank's process, from its record (enum order = how bad). */
enum ccd_proc {
    CCD_PROC_EXITED = 1, /* the ring records a normal exit */
    CCD_PROC_ALIVE,      /* running at read time */
    CCD_PROC_UNKNOWN,    /* a dump, or a ring of another host */
    CCD_PROC_STOPPED,    /* running but stopped (SIGSTOP, a debugger) */
    CCD_PROC_MISSING,    /* no ring and no dump */
    CCD_PROC_KILLED,     /* gone without a normal exit or a fatal signal: SIGKILL, OOM, SIGTERM */
    CCD_PROC_CRASHED,    /* a fatal signal is recorded */
};

/* Finding kinds, in the order the verdict prefers them as explanations. */
enum ccd_fkind {
    CCD_F_CRASHED = 1,
    CCD_F_KILLED,
    CCD_F_MISMATCH,
    CCD_F_STOPPED,
    CCD_F_DEADLOCK,
    CCD_F_MISSING_WAITED,
    CCD_F_EXITED_WAITED,
    CCD_F_NOT_ENTERED,
    CCD_F_P2P_UNMATCHED,
    CCD_F_NO_PROGRESS,
    CCD_F_MISSING,
    CCD_F_STRAGGLER,
    CCD_F_P2P_UNMATCHED_DONE,
    CCD_F_INCONSISTENT,
    CCD_F_COUNT
};

typedef struct ccd_finding {
    int kind;       /* enum ccd_fkind */
    int conf;       /* enum ccd_conf */
    int32_t *ranks; /* the ranks it blames (world ranks, sorted) */
    uint32_t nranks;
    uint32_t waiters; /* ranks held up by it (for ranking) */
    int secondary;    /* likely a consequence of another failure (ranked after the rest) */
    int32_t g;        /* job comm, -1 */
    uint64_t seq;     /* coll_seq / p2p_seq, 0 none */
    const char *op;   /* op name, NULL none */
    char text[1024];  /* one line, for the report and the verdict */
} ccd_finding_t;

/* One wait: `from` cannot finish entry `op` of its record until `to` acts. */
typedef struct ccd_wait {
    int32_t from, to; /* world ranks */
    int32_t c;        /* index in the index's comms */
    uint32_t op;      /* index in from's entries */
    int why;          /* enum ccd_why */
} ccd_wait_t;

enum ccd_why {
    CCD_W_NOT_ENTERED = 1, /* `to` has not entered the collective */
    CCD_W_LATE,            /* `to` entered after `from` gave up */
    CCD_W_NOT_SENT,        /* `from` receives; `to` has not sent it */
    CCD_W_NOT_RECEIVED,    /* `from` sends; `to` has not posted the receive */
    CCD_W_NO_RECORD,       /* `to` has no record */
    CCD_W_NOT_SIGNALLED,   /* `from` waits in window_wait_signal for a signal from `to` */
};

/* Settings of a diagnosis. */
typedef struct ccd_diag_opts {
    uint64_t min_wait_ns; /* an unfinished op younger than this is in flight, not waiting */
} ccd_diag_opts_t;

typedef struct ccd_diag {
    const ccd_job_t *job;
    ccd_diag_opts_t opts;
    const ccd_index_t *ix;
    json_t *report;     /* the machine-readable report (owned) */
    uint8_t *proc;      /* enum ccd_proc per world rank */
    int64_t *blocked;   /* per world rank: entry it is stuck in, -1 none */
    uint64_t t_first_error; /* earliest failed end across the job (0 none) */
    int32_t first_error_rank;
    ccd_finding_t *f;
    uint32_t nf, fcap;
    ccd_wait_t *w;
    uint32_t nw, wcap;
    int oom;
    ccd_finding_t verdict; /* copy of the chosen finding (ranks borrowed), or kind 0 */
} ccd_diag_t;

/* Run every pass. Returns the diagnosis (ccd_diag_free), NULL out of memory. */
ccd_diag_t *ccd_diagnose(const ccd_job_t *job, const ccd_index_t *ix, const ccd_diag_opts_t *o);
void ccd_diag_free(ccd_diag_t *d);
/* 0 no problem, 1 problem found. */
int ccd_diag_status(const ccd_diag_t *d);

/* Passes (called in this order by ccd_diagnose). */
void ccd_diag_procs(ccd_diag_t *d);
void ccd_diag_colls(ccd_diag_t *d);
void ccd_diag_p2p(ccd_diag_t *d);
void ccd_diag_waits(ccd_diag_t *d);
void ccd_diag_verdict(ccd_diag_t *d);

/* Output. */
void ccd_diag_print_text(const ccd_diag_t *d, FILE *out);

/* ---- helpers shared by the passes ---- */

/* A new finding (ranks copied and sorted); NULL when out of memory (d->oom set). */
ccd_finding_t *ccd_add_finding(ccd_diag_t *d, int kind, int conf, const int32_t *ranks,
                               uint32_t nranks, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
void ccd_add_wait(ccd_diag_t *d, const ccd_wait_t *w);
const char *ccd_conf_name(int conf);
const char *ccd_proc_name(int proc);
const char *ccd_fkind_name(int kind);
/* "all_reduce #4 on world" into buf. */
void ccd_describe_op(const ccd_diag_t *d, const ccd_rank_t *r, const ccd_entry_t *e, char *buf,
                     size_t len);
/* "3.20 s before the dump" / "at the dump" for time t. */
void ccd_describe_age(const ccd_diag_t *d, uint64_t t, char *buf, size_t len);
/* The rank's last op (any comm, not lifecycle), or NULL. */
const ccd_entry_t *ccd_last_op(const ccd_rank_t *r);
/* Is entry e a wait (not a success, not an op still young at the end of the record)? */
int ccd_is_wait(const ccd_diag_t *d, const ccd_entry_t *e);
/* Marks (mark[i] = 1) r's ops that are waits: unfinished or failed, with no later success on
 * their comm. At most `cap` of them, oldest first; returns how many. */
uint32_t ccd_pending_ops(const ccd_diag_t *d, const ccd_rank_t *r, uint32_t *out, uint32_t cap);
/* JSON of an entry, for the report. */
json_t *ccd_entry_json(const ccd_diag_t *d, const ccd_rank_t *r, const ccd_entry_t *e);
/* JSON array of ranks. */
json_t *ccd_ranks_json(const int32_t *ranks, uint32_t n);

#endif /* CCDUMP_DIAG_H */
