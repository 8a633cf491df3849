/*
 * straggler.h - who arrives last at a communicator's collectives, and what
 * it costs the others: the one computation behind `ccdump top`, `ccdump
 * stats --stragglers` and diagnose's straggler finding.
 *
 * A rank's arrival at a collective is when it called it (its enqueue time;
 * each host's realtime clock, so across hosts differences below the clock
 * skew mean nothing). Over a window of collectives that every member with a
 * record arrived at and none failed:
 *   lateness  its arrival - the earliest arrival at that collective;
 *   last      how often it arrived last;
 *   margin    when last: its arrival - the next-to-last arrival;
 *   cost      the wait it cost the others: over the collectives it was last
 *             at, the sum of (its arrival - each other member's arrival);
 *   waited    what it waited for the last one: sum of (last - its arrival).
 * The rule: a rank is the straggler when it was last in at least 60 % of at
 * least 5 collectives with a median margin of 5 ms or more (below that,
 * lateness is scheduling noise); "likely" when last in 80 % or more.
 */
#ifndef CCDUMP_STRAGGLER_H
#define CCDUMP_STRAGGLER_H

#include <jansson.h>

#include "index.h"

#define CCD_STRAG_MIN_COLLS 5
#define CCD_STRAG_MIN_NS    5000000ull /* 5 ms */
#define CCD_STRAG_PCT       60
#define CCD_STRAG_LIKELY    80

typedef struct ccd_strag_member {
    int32_t crank, world;
    uint32_t last;                          /* times it arrived last */
    uint64_t late_mean, late_p50, late_max; /* ns */
    uint64_t margin_p50, margin_max;        /* ns, over the times it was last */
    uint64_t cost, waited;                  /* ns */
} ccd_strag_member_t;

typedef struct ccd_strag {
    uint32_t nseq;           /* collectives in the window */
    uint64_t seq_lo, seq_hi; /* their coll_seq range (0 when none) */
    int32_t n;               /* members with a record: entries of m, by comm rank */
    ccd_strag_member_t *m;
    int32_t straggler; /* index in m named by the rule, -1 none */
    int likely;        /* the straggler was last in CCD_STRAG_LIKELY % or more */
} ccd_strag_t;

/*
 * The analysis of comm ci over its collectives with seq <= upto (UINT64_MAX: all),
 * the last `last_n` of them (0: all). Returns 0, or -1 when out of memory.
 */
int ccd_strag_compute(const ccd_cindex_t *ci, uint64_t upto, uint32_t last_n, ccd_strag_t *s);
void ccd_strag_free(ccd_strag_t *s);

/* One line: who the straggler is and why, or why none is named (no newline). */
void ccd_strag_verdict(const ccd_strag_t *s, const char *comm, char *buf, size_t len);
/* {"collectives", "seq_first", "seq_last", "straggler", "verdict", "ranks": [...]} */
json_t *ccd_strag_json(const ccd_strag_t *s, const char *comm);
/* The per-rank table, each line starting with `indent`. */
void ccd_strag_print(const ccd_strag_t *s, const char *comm, const char *indent, FILE *out);

#endif /* CCDUMP_STRAGGLER_H */
