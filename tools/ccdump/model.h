/*
 * model.h - what ccdump knows about a job: one normalised record per rank,
 * whatever file it came from (a ring file of a live or dead process, a
 * ccomm JSON dump, a PyTorch / torchcomms flight recorder JSON dump), and
 * the communicators seen across the ranks.
 *
 * Every time is unix (realtime) nanoseconds, 0 when unknown; every rank
 * number is a world rank unless the name says "comm rank". Entries are kept
 * compact (~100 bytes) because a 1,024-rank job with 4,096 entries each is
 * four million of them.
 */
#ifndef CCDUMP_MODEL_H
#define CCDUMP_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ccomm/types.h"

#define CCD_MAX_WORLD (1 << 20) /* larger world sizes or ranks are refused as corrupt */
#define CCD_MAX_COMMS 0xfff0    /* communicators of a job (entries number them in 16 bits) */
#define CCD_NONE8     0xffu     /* no dtype / no redop */
#define CCD_NO_RANK   (-1)

/* Entry states: the ring's values (scheduled .. aborted). */
enum ccd_state {
    CCD_SCHEDULED = 1,
    CCD_STARTED,
    CCD_COMPLETED,
    CCD_FAILED,
    CCD_TIMED_OUT,
    CCD_ABORTED,
    CCD_STATE_COUNT
};

/* Where a rank's record came from. */
enum ccd_source { CCD_SRC_RING = 1, CCD_SRC_CCOMM_JSON, CCD_SRC_TORCH_JSON };

/* ccd_entry_t.flags */
#define CCD_EF_COLL       0x01u /* numbered by coll_seq */
#define CCD_EF_P2P        0x02u /* numbered by p2p_seq per (comm, peer, direction) */
#define CCD_EF_SEND       0x04u
#define CCD_EF_RECV       0x08u
#define CCD_EF_LIFE       0x10u /* init, split, destroy, abort */
#define CCD_EF_ABORT_SEEN 0x20u /* its comm's abort ran while it was unfinished */

/* One operation as one rank recorded it. */
typedef struct ccd_entry {
    uint64_t record_id;
    uint64_t op_id;
    uint64_t seq; /* coll_seq for collectives, p2p_seq for point-to-point, 0 otherwise */
    uint64_t in_count;
    uint64_t out_count;
    uint64_t bytes;   /* the larger of input and output, 0 when unknown */
    uint64_t t_enq;   /* enqueued (unix ns) */
    uint64_t t_start; /* started, 0 = not (or unknown) */
    uint64_t t_end;   /* finished (any end state), 0 = not */
    int64_t timeout_ms;
    int32_t peer;   /* comm rank, -1 none */
    int32_t root;   /* comm rank, -1 none */
    int32_t status; /* cc_status_t; CC_INPROGRESS while unfinished */
    int32_t tag;
    uint16_t comm; /* index in the rank's comms */
    uint16_t op;   /* op name id (ccd_op_name) */
    uint8_t dtype; /* dtype id (ccd_dtype_name), CCD_NONE8 none */
    uint8_t redop; /* cc_redop_t, CCD_NONE8 none */
    uint8_t state; /* enum ccd_state */
    uint8_t flags; /* CCD_EF_* */
} ccd_entry_t;

/* One rank's view of a communicator. */
typedef struct ccd_rcomm {
    uint32_t g;      /* index in ccd_job_t.comms */
    int32_t rank;    /* this process's comm rank (-1 unknown) */
    uint64_t last_enq, last_start, last_done; /* pg_status: coll_seq counters (0 unknown) */
    uint64_t t_aborted;                       /* 0 unknown or not aborted */
    int32_t abort_reason;                     /* cc_status_t, 0 = not aborted */
    uint8_t aborted, destroyed;
} ccd_rcomm_t;

/* A communicator across the job. */
typedef struct ccd_comm {
    char key[48];     /* equal on every member: ccomm's comm id in decimal, PyTorch's pg name */
    char name[64];    /* "world", "world.1", PyTorch's desc */
    uint64_t id;      /* ccomm comm id (0 for foreign dumps) */
    uint64_t parent_id; /* the comm it was split, grouped or shrunk from (0 none or unknown) */
    int32_t size;     /* members (-1 unknown): as recorded, not an allocation size */
    int32_t *members; /* world rank of comm rank k < nlisted, -1 unknown; NULL none */
    int32_t nlisted;  /* entries of members: only an input's own member list makes them */
} ccd_comm_t;

/* What is known about one rank's process and its record. */
typedef struct ccd_rank {
    int32_t rank;       /* world rank */
    int32_t world_size; /* as recorded (0 unknown) */
    int src;            /* enum ccd_source */
    char *path;         /* the file used */
    uint32_t nsources;  /* files that described this rank (duplicates dropped) */
    char host[64];
    char job[128];
    char lib[48];
    int32_t pid;
    int8_t alive;   /* 1 running, 0 gone, -1 unknown (another host, or a JSON dump) */
    int8_t stopped; /* 1: seen in the stopped state (SIGSTOP, a debugger) */
    int8_t closed;  /* 1 ring closed / normal exit recorded, 0 not, -1 unknown */
    int32_t fatal_signal;
    uint64_t t_fatal, t_closed, t_dump; /* unix ns, 0 none */
    uint64_t t_taken;                   /* when this record was read or dumped */
    uint64_t t_opened;                  /* ring opened (process start, roughly) */
    uint64_t dumps, records_issued, skipped, dropped;
    uint32_t capacity, ntorn, ncorrupt;
    ccd_rcomm_t *comms;
    uint32_t ncomms, comms_cap;
    uint32_t *comm_ix; /* open addressing: job comm g -> index in comms + 1, 0 empty */
    uint32_t comm_ix_cap;
    ccd_entry_t *e; /* by record id */
    uint32_t n;
    uint32_t cap;
} ccd_rank_t;

/* A growable table of interned strings. */
typedef struct ccd_names {
    char **v;
    uint32_t n, cap;
} ccd_names_t;

typedef struct ccd_job {
    ccd_rank_t **rank;   /* by world rank, NULL where no record; world_size of them */
    int32_t world_size;  /* the largest recorded, or max rank + 1 */
    ccd_rank_t **loaded; /* every record loaded, before dedupe */
    uint32_t nloaded, loaded_cap;
    ccd_comm_t *comms;
    uint32_t ncomms, comms_cap;
    uint32_t *comm_hash; /* open addressing: comm index + 1, 0 empty */
    uint32_t comm_hash_cap;
    ccd_names_t ops;    /* op names beyond CC_OP_TYPE_COUNT (foreign dumps) */
    ccd_names_t dtypes; /* dtype names beyond CC_DTYPE_COUNT */
    ccd_names_t notes;  /* warnings about the input, for the report */
    uint32_t nfiles, nbad, ndup;
    int comms_full;     /* a file named more than CCD_MAX_COMMS communicators */
    char job_id[128];
    const char *prefix; /* PyTorch file name prefix (-p; borrowed), NULL: inferred */
    uint64_t t_ref;     /* the moment the record describes: latest time seen */
    uint64_t t_min;     /* earliest time seen */
} ccd_job_t;

ccd_job_t *ccd_job_new(void);
void ccd_job_free(ccd_job_t *job);
ccd_rank_t *ccd_rank_new(void);
void ccd_rank_free(ccd_rank_t *r);
/* A new zeroed entry at the end of r->e, or NULL when out of memory. */
ccd_entry_t *ccd_rank_push(ccd_rank_t *r);
/* Adds a loaded record to the job (takes ownership). -1 when out of memory. */
int ccd_job_add(ccd_job_t *job, ccd_rank_t *r);

/*
 * The job-wide comm with `key`, made if new; size and members fill in what
 * is unknown (members may be NULL). Returns its index, or -1 (out of
 * memory, or more comms than a uint16 can number).
 */
int ccd_comm_intern(ccd_job_t *job, const char *key, const char *name, int32_t size,
                    const int32_t *members);
/* The job comm with ccomm id `id`, or -1 (for naming a parent). */
int ccd_comm_by_id(const ccd_job_t *job, uint64_t id);
/* Records that world rank `world` is comm rank `crank` of comm g (within its member list). */
void ccd_comm_set_member(ccd_job_t *job, uint32_t g, int32_t crank, int32_t world);
/* A rank's comm index for job comm g (adding it), or -1 when out of memory. */
int ccd_rank_comm(ccd_rank_t *r, uint32_t g);

/* Op names: ids below CC_OP_TYPE_COUNT are ccomm's types. */
int ccd_op_id(ccd_job_t *job, const char *name); /* interned; -1 when out of memory */
const char *ccd_op_name(const ccd_job_t *job, unsigned op);
int ccd_dtype_id(ccd_job_t *job, const char *name); /* torch or ccomm names; -1 oom */
const char *ccd_dtype_name(const ccd_job_t *job, unsigned dtype);
const char *ccd_state_name(unsigned state);
int ccd_state_parse(const char *name); /* 0 when unknown */
/* cc_status_t of a name ("ERR_TIMEOUT"); CC_INPROGRESS when unknown. */
int ccd_status_parse(const char *name);

/* Why loading a file failed: "out of memory", or the communicator limit it went past. */
const char *ccd_load_failure(const ccd_job_t *job);

/* A note about the input, kept for the report (printf-like). */
void ccd_note(ccd_job_t *job, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * After loading: keep one record per world rank (the richest), set
 * world_size, rank[], t_ref and t_min. Duplicates are counted in ndup.
 * Returns 0, or -1 when out of memory.
 */
int ccd_job_finish(ccd_job_t *job);

/* Entry helpers. */
static inline int ccd_entry_done(const ccd_entry_t *e)
{
    return e->state >= CCD_COMPLETED;
}
static inline int ccd_entry_ok(const ccd_entry_t *e)
{
    return e->state == CCD_COMPLETED;
}
/* The job comm of an entry. */
static inline const ccd_comm_t *ccd_entry_comm(const ccd_job_t *job, const ccd_rank_t *r,
                                               const ccd_entry_t *e)
{
    return e->comm < r->ncomms ? &job->comms[r->comms[e->comm].g] : NULL;
}
/* Whether comm c is the one a --comm option names (by name or key; NULL: every comm). */
static inline int ccd_comm_is(const ccd_comm_t *c, const char *want)
{
    return !want || !strcmp(c->name, want) || !strcmp(c->key, want);
}
/* The latest time an entry carries. */
static inline uint64_t ccd_entry_last_time(const ccd_entry_t *e)
{
    uint64_t t = e->t_enq;
    if (e->t_start > t) t = e->t_start;
    if (e->t_end > t) t = e->t_end;
    return t;
}

/* ---- formatting helpers shared by the commands ---- */

/* "0-3, 5, 7-9" for a sorted list of ranks; truncated with ", ..." to fit. */
void ccd_fmt_ranks(char *buf, size_t len, const int32_t *ranks, uint32_t n);
/* "1.50 s", "12.3 ms", "45 us" for a duration in ns. */
void ccd_fmt_dur(char *buf, size_t len, uint64_t ns);
/* Writes `s` with bytes outside printable ASCII escaped (names come from files). */
void ccd_put_safe(FILE *out, const char *s);
/* "sum", "f32" style short names for the table. */
const char *ccd_redop_name(unsigned redop);

#endif /* CCDUMP_MODEL_H */
