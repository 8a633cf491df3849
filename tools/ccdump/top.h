/*
 * top.h - `ccdump top`'s view of a job (top_view.c): per communicator, each
 * member's collective counters and the op it is in now, the straggler
 * analysis (straggler.h) and bus bandwidth per op type over a window of the
 * last N collectives; drawn as text or JSON. top.c is the command: options,
 * the refresh loop and the terminal.
 */
#ifndef CCDUMP_TOP_H
#define CCDUMP_TOP_H

#include <jansson.h>
#include <stdio.h>

#include "index.h"
#include "straggler.h"

typedef struct ccd_top_rank {
    int32_t world, crank;
    const ccd_rank_t *r;
    uint64_t enq, start, done; /* last coll_seq enqueued / started / completed here */
    uint64_t behind;           /* the leader's enq - enq */
    const ccd_entry_t *cur;    /* the oldest op here not finished, NULL none */
    uint64_t in_for;           /* ns since it was started (enqueued when not started) */
} ccd_top_rank_t;

typedef struct ccd_top_bw {
    unsigned op;
    uint32_t count;       /* collectives completed by every member */
    uint64_t bytes, time; /* sums over them: bytes, the shortest member's start to end (ns) */
    double busbw;         /* GB/s: bytes / time x the op's bus factor */
} ccd_top_bw_t;

typedef struct ccd_top_comm {
    const ccd_cindex_t *ci;
    ccd_top_rank_t *rk; /* members with a record, by comm rank */
    int32_t n;
    uint64_t leader; /* the largest enq */
    ccd_strag_t st;
    ccd_top_bw_t *bw;
    uint32_t nbw;
    uint64_t bw_lo; /* the bandwidth window: seqs bw_lo..leader */
} ccd_top_comm_t;

/* What one refresh shows. */
typedef struct ccd_top_view {
    const ccd_job_t *job;
    ccd_index_t *ix;
    ccd_top_comm_t *c; /* the comms shown (--comm, else all with a record) */
    uint32_t nc;
    uint64_t now;    /* unix ns of the refresh */
    uint32_t last_n; /* the window (--last) */
} ccd_top_view_t;

/* The view of `job` (borrowed; keep it while the view lives); -1 when out of memory. */
int ccd_top_build(ccd_top_view_t *v, const ccd_job_t *job, const char *comm, uint32_t last_n,
                  uint64_t now);
void ccd_top_free(ccd_top_view_t *v);

/* Comm i of the view (all when i < 0) as text; `color`: ANSI highlights. */
void ccd_top_text(const ccd_top_view_t *v, int i, int color, FILE *out);
/* The whole view as JSON (new reference; NULL when out of memory). */
json_t *ccd_top_json(const ccd_top_view_t *v);
/* "running", "stopped", "exited", "crashed", "gone" or "unknown". */
const char *ccd_top_process(const ccd_rank_t *r);

#endif /* CCDUMP_TOP_H */
