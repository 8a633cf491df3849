/*
 * index.h - the job seen per communicator: for each member, its record and
 * its collectives (by coll_seq) and point-to-point ops (by peer, direction
 * and p2p_seq) on that communicator. Built once in O(input log input);
 * diagnose, perfetto (flows) and stats read it.
 */
#ifndef CCDUMP_INDEX_H
#define CCDUMP_INDEX_H

#include "model.h"

typedef struct ccd_member {
    int32_t crank;         /* its comm rank */
    int32_t world;         /* world rank, -1 unknown */
    const ccd_rank_t *r;   /* its record, NULL when there is none */
    const uint32_t *coll;  /* indices into r->e of its collectives here, by seq */
    uint32_t ncoll;
    const uint32_t *p2p;   /* its p2p ops here, by (peer, recv before send, seq) */
    uint32_t np2p;
    uint64_t last_enq;     /* largest coll_seq it entered (entries and pg_status) */
    uint64_t last_done;    /* largest coll_seq it completed */
    uint64_t t_window;     /* its oldest recorded time: older ops may be gone (ring wrap) */
    int wrapped;           /* its ring dropped older records */
} ccd_member_t;

/*
 * The members the input knows of: those in a member list it holds and those
 * with a record, by comm rank (ascending). A comm recorded as a million
 * ranks costs what its records and lists hold, not a million members; the
 * others count in `size` only.
 */
typedef struct ccd_cindex {
    uint32_t g;            /* job comm */
    const ccd_comm_t *c;
    int32_t n;             /* members known (entries of m) */
    int32_t size;          /* the comm's size as best known (>= the largest comm rank + 1) */
    ccd_member_t *m;       /* by comm rank, ascending */
    uint32_t nrecords;     /* members with a record */
} ccd_cindex_t;

typedef struct ccd_index {
    const ccd_job_t *job;
    ccd_cindex_t *c; /* one per job comm with at least one member record */
    uint32_t nc;
    int32_t *by_g;   /* job comm -> index in c, -1 */
    uint32_t *pool;  /* storage of the coll / p2p lists */
} ccd_index_t;

/* Returns the index, or NULL when out of memory. */
ccd_index_t *ccd_index_build(const ccd_job_t *job);
void ccd_index_free(ccd_index_t *ix);

/* Member m's collective with this seq, or NULL. */
const ccd_entry_t *ccd_member_coll(const ccd_member_t *m, uint64_t seq);
/* Member m's p2p op towards / from comm rank `peer` with this seq, or NULL. */
const ccd_entry_t *ccd_member_p2p(const ccd_member_t *m, int32_t peer, int send, uint64_t seq);
/* The largest p2p seq m recorded towards / from `peer` (0 none). */
uint64_t ccd_member_p2p_max(const ccd_member_t *m, int32_t peer, int send);
/*
 * Walking all members' collectives seq by seq: cur[] holds one cursor per
 * member (zeroed to start). next_seq gives the smallest seq <= upto that
 * any member has at or after its cursor (0 when none is left); take gives
 * member m's entry with that seq (or NULL) and moves its cursor past it.
 */
uint64_t ccd_cindex_next_seq(const ccd_cindex_t *ci, uint32_t *cur, uint64_t upto);
const ccd_entry_t *ccd_member_take(const ccd_member_t *m, uint32_t *cur, uint64_t s);
/* The comm rank of world rank w in ci, or -1. */
int32_t ccd_cindex_crank(const ccd_cindex_t *ci, int32_t w);
/* The member with comm rank k, or NULL when the input knows nothing of it. */
const ccd_member_t *ccd_cindex_member(const ccd_cindex_t *ci, int32_t k);

#endif /* CCDUMP_INDEX_H */
