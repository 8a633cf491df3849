/*
 * diag_int.h - what the diagnosis passes share beyond diag.h.
 */
#ifndef CCDUMP_DIAG_INT_H
#define CCDUMP_DIAG_INT_H

#include "diag.h"

/* Where a member stands with one collective. */
enum ccd_at { CCD_AT_COMPLETED = 1, CCD_AT_IN, CCD_AT_NOT_ENTERED, CCD_AT_NO_RECORD };

typedef struct ccd_places {
    int count[5];           /* members per enum ccd_at */
    int unfinished;         /* members in it whose op never ended */
    int late;               /* members that entered after another gave up */
    int waiting;            /* members in it for long enough, or that gave up: real waits */
    const ccd_entry_t *ref; /* an entry of a member in it: what the collective is */
    const ccd_rank_t *ref_rank;
} ccd_places_t;

int ccd_coll_place(const ccd_member_t *m, uint64_t s, const ccd_entry_t **e);

/* Mismatches at one coll_seq among seqs <= upto (JSON array; findings added). */
json_t *ccd_coll_mismatches(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t upto);
/* Ranks that enter late, over the collectives every member completed (<= upto). */
json_t *ccd_coll_stragglers(ccd_diag_t *d, const ccd_cindex_t *ci, uint64_t upto);

/* The wait graph over world ranks (edges are d->w). */
typedef struct ccd_graph {
    int32_t n;
    uint32_t *off;   /* CSR offsets by from-rank (n + 1) */
    uint32_t *edge;  /* indices into d->w, grouped by from */
    int32_t *comp;   /* strongly connected component per rank (-1 not in the graph) */
    int32_t *csize;  /* size per component */
    uint32_t *indeg; /* edges into each rank */
} ccd_graph_t;

/* Reversed wait edges, for counting who waits (transitively) on a rank. */
typedef struct ccd_rev {
    uint32_t *off;
    int32_t *from;
} ccd_rev_t;

int ccd_rev_build(const ccd_diag_t *d, int32_t n, ccd_rev_t *rv);
/* Ranks that reach any of `targets` through waits. */
uint32_t ccd_count_waiters(const ccd_rev_t *rv, int32_t n, const int32_t *targets, uint32_t nt);
/* The op a wait is about (in the waiting rank's record). */
static inline const ccd_entry_t *ccd_wait_entry(const ccd_diag_t *d, const ccd_wait_t *w)
{
    return &d->job->rank[w->from]->e[w->op];
}

/* Deadlocks and the ends of the waits as findings, and the "waits" report (diag_blame.c). */
void ccd_wait_findings(ccd_diag_t *d, const ccd_graph_t *g);
/* Ranks waited for that wait for no one, grouped into findings (diag_sink.c). */
void ccd_sink_findings(ccd_diag_t *d, const ccd_graph_t *g, const ccd_rev_t *rv, json_t *ends);
/* Crashed, killed, stopped and missing ranks that end no wait. */
void ccd_fate_findings(ccd_diag_t *d, const ccd_graph_t *g, const ccd_rev_t *rv);

#endif /* CCDUMP_DIAG_INT_H */
