/*
 * parse.h - cclog's reader of clog files (docs/clog-format.md).
 *
 * Two layers. cl_parse_line checks one line against the grammar and splits
 * it into fields, decoding %XX escapes in place. cl_log_t follows a whole
 * file: the header, the signature table, the order rules (a signature is
 * defined once, in order, before its first use) and the entries that the
 * commands (merge, filter, stats, follow, check) work on.
 *
 * Input files are untrusted: every error is a message naming file and line,
 * never a crash, and memory grows only with the input's size.
 */
#ifndef CCLOG_PARSE_H
#define CCLOG_PARSE_H

#include <stdint.h>
#include <stdio.h>

#define CL_LINE_MAX (1u << 20) /* longer lines are reported and skipped */
#define CL_NO_TIME  INT64_MIN

/* Event bits of a header's events= field. */
#define CL_EV_Q 1u
#define CL_EV_S 2u
#define CL_EV_E 4u
#define CL_EV_W 8u
#define CL_EV_A 16u

enum cl_kind {
    CL_HEADER = 1, /* V|1|base_timestamp=..|rank=..|pid=..|host=..|events=.. */
    CL_NEW_COMM,   /* new_comm|comm=..|id=..|rank=..|size=..|+t */
    CL_SPLIT,      /* split|parent=..|child=..|parent_id=..|child_id=..|ranks=..|+t */
    CL_END_COMM,   /* end_comm|comm=..|id=..|+t */
    CL_SIG,        /* C<n>|sig|<op>|in_count=..|...|comm=.. */
    CL_EVENT,      /* C<n>|Q|.. S, E, W, A */
    CL_DROP,       /* DROP|count=..|total=..|+t */
    CL_END,        /* END|dropped=..|+t */
};

/* One parsed line. Strings point into the caller's line buffer (decoded in place). */
typedef struct cl_line {
    enum cl_kind kind;
    int64_t off_us; /* the line's +offset in µs; CL_NO_TIME for V and sig */
    /* V */
    int version;
    int64_t base_us; /* unix time of the base, µs */
    int64_t rank;
    int64_t pid;
    const char *host;
    const char *events; /* letters of the events the file may hold, or "-" */
    /* new_comm, split, end_comm, A */
    const char *comm;   /* new_comm, end_comm, A: the comm; split: the child */
    const char *parent; /* split */
    uint64_t comm_id;   /* new_comm, end_comm; split: the child's */
    uint64_t parent_id; /* split */
    int64_t comm_rank;  /* new_comm */
    int64_t comm_size;  /* new_comm */
    const char *ranks;  /* split */
    /* sig and events */
    uint32_t sig;   /* C<n>; 0 only for A */
    char ev;        /* 'Q', 'S', 'E', 'W', 'A' */
    const char *op; /* sig */
    uint64_t in_count, out_count;
    const char *dtype;  /* sig: name or "-" */
    const char *red_op; /* sig: name or "-" */
    int64_t root, peer;
    uint64_t op_id, seq;
    const char *status; /* E: status; A: reason (e.g. "OK", "ERR_TIMEOUT") */
    int64_t dur_us;     /* E */
    const char *msg;    /* A */
    /* DROP, END */
    uint64_t count, total;
} cl_line_t;

/*
 * Parse one line (no newline) in place. Returns 0, or -1 with a message in
 * err ("expected seq=<number> as field 4, found \"sq=3\"").
 */
int cl_parse_line(char *line, cl_line_t *out, char *err, size_t errlen);

/* Print a parsed line in a canonical form, one line (the test suite's expected outputs). */
void cl_line_dump(const cl_line_t *l, FILE *out);

/* ---- whole files ---------------------------------------------------------- */

/* A signature, as defined by its sig line. */
typedef struct cl_sig {
    char *op, *dtype, *red_op, *comm;
    uint64_t in_count, out_count;
    int64_t root, peer;
    uint64_t elem_size; /* bytes per element from dtype; 0 when unknown or "-" */
} cl_sig_t;

/* One kept line: enough for every command, plus the text for merge and filter. */
typedef struct cl_entry {
    char *text; /* the line as read (owned) */
    int lineno;
    enum cl_kind kind;
    char ev;      /* events: the letter; else 0 */
    uint32_t sig; /* sig lines and events */
    uint64_t op_id, seq;
    int64_t t_us;    /* absolute unix time in µs; V: the base; sig: CL_NO_TIME */
    int64_t dur_us;  /* E */
    char status[24]; /* E: status, A: reason */
    char *comm;      /* A, new_comm, end_comm, split (child): decoded (owned) */
    char *msg;       /* A: decoded (owned) */
    uint64_t count;  /* DROP */
} cl_entry_t;

typedef struct cl_log {
    char *path; /* as given (owned) */
    FILE *errs; /* where problems go: "path:line: message" */
    int keep;   /* keep entries (all commands but follow) */
    /* Header. */
    int have_header;
    int64_t base_us;
    int64_t rank;
    int64_t pid;
    char *host;
    unsigned events; /* CL_EV_* bits from the header */
    /* State. */
    cl_sig_t *sigs; /* sigs[0 .. nsig-1] are C1 .. C<nsig> */
    uint32_t nsig, capsig;
    cl_entry_t *entries;
    size_t nentries, capentries;
    int lineno;
    uint64_t nerrors;   /* malformed lines */
    int truncated;      /* the last line had no newline */
    int unusable;       /* no header, unreadable: nothing else is trusted */
    int end_seen;       /* an END line */
    uint64_t dropped;   /* sum of DROP counts */
    int64_t last_us;    /* time of the latest timed line, or CL_NO_TIME */
    cl_entry_t scratch; /* the current entry when entries are not kept */
    void *user;         /* for the commands */
} cl_log_t;

/* Start an empty log for `path` (nothing read). NULL when out of memory. */
cl_log_t *cl_log_new(const char *path, FILE *errs, int keep);
void cl_log_free(cl_log_t *log);

/*
 * Take the next line (without its newline; `line` is modified; len is its
 * length, which may include NUL bytes). Sets *entry to the kept entry (the
 * header included), or to log->scratch (valid until the next call) when the
 * log keeps nothing; NULL
 * when the line was malformed (reported, counted in nerrors). `last` says
 * the line had no newline: a failure is then reported as a truncated last
 * line and not counted. Returns 0, or -1 when the file is unusable (no
 * header: reported once; later lines are ignored).
 */
int cl_log_feed(cl_log_t *log, char *line, size_t len, int last, const cl_entry_t **entry);

/*
 * Read the next line of f into *buf (grown as needed, at most CL_LINE_MAX
 * bytes kept). Returns its length, -1 at end of file, -2 out of memory. *nl says whether it
 * ended in a newline; *toolong that bytes past CL_LINE_MAX were skipped.
 */
long cl_read_line(FILE *f, char **buf, size_t *cap, int *nl, int *toolong);

/*
 * Read a whole file. Returns the log (check ->unusable), or NULL when the
 * file cannot be opened or memory runs out (reported). A last line without
 * a newline is parsed, flagged as truncated and reported.
 */
cl_log_t *cl_log_load(const char *path, FILE *errs);

/* The signature of an entry, or NULL (C0, or undefined). */
const cl_sig_t *cl_log_sig(const cl_log_t *log, uint32_t n);

/* "1714234567.890123" */
void cl_fmt_time(int64_t us, char *buf, size_t len);
/* "+12.345678" / "-0.000500" */
void cl_fmt_offset(int64_t us, char *buf, size_t len);

#endif /* CCLOG_PARSE_H */
