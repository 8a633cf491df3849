/*
 * clog_format.c - the text of clog lines (docs/clog-format.md), on the
 * writer thread: records in, lines out.
 *
 * Signature numbering lives here, not on the op path: every op record
 * carries its whole signature, and the writer looks it up in a hash table
 * that maps a signature to its number C<n>, writing the `sig` line the first
 * time a signature appears. The writer also remembers comm names by id, so a
 * split line can name the parent.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clog/clog_internal.h"

/* What makes two ops "the same kind of op" (one C<n>). */
struct sigkey {
    uint64_t comm_id;
    uint64_t in_count;
    uint64_t out_count;
    int32_t root;
    int32_t peer;
    uint8_t type;
    uint8_t dtype;
    uint8_t redop;
};

/* A table slot; numbers start at 1 so that 0 can mark a free slot. */
struct sigent {
    struct sigkey key;
    uint32_t n; /* 0 = empty slot */
};

/* A comm seen in a NEW record. Id 0 is never a comm's (the core hashes ids). */
struct comm_ent {
    uint64_t id; /* 0 = empty slot */
    char *name;  /* owned, full length */
};

/* Both tables grow by doubling at half load, so probes stay short. */
struct cc__clog_fmt {
    struct sigent *sigs; /* open addressing, linear probing; cap a power of two */
    size_t nsig, sigcap;
    struct comm_ent *comms; /* the same scheme, by comm id */
    size_t ncomm, commcap;
    /* The last signature found: an op's Q, S and E lines, and a training
     * loop's repeats, share it, so most lines skip the hash and the probe. */
    struct sigkey last;
    uint32_t last_n;     /* 0: none yet */
    uint64_t last_op_id; /* the op of the last line: its next events have the same n */
    /* The digits of the event lines' numbers as last written (struct dec). */
    struct dec {
        uint64_t v;
        uint32_t len; /* 0: nothing kept yet */
        char s[24];
    } d_n, d_op, d_seq, d_sec;
};

/* An append-only view of the output buffer; never writes past cap. */
struct out {
    char *p;
    size_t len, cap;
};

/* Cut rather than overflow: the caller sized the buffer for the longest line. */
static inline void put(struct out *o, const char *s, size_t n)
{
    if (n > o->cap - o->len) n = o->cap - o->len;
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* A string literal: its length is known at compile time, so the copy is a few
 * moves, not a strlen and a memcpy call (3 lines an op go through here). */
#define PUTL(o, lit) put((o), "" lit, sizeof(lit) - 1)

/* Decimal digits by hand: snprintf costs more than all the rest of a line. */
/* "00" to "99": two digits per division, half the divisions of one at a time
 * (the writer formats three lines an op; digits were its largest cost,
 * bench/obs_instr.sh). */
static const char digits2[201] = "00010203040506070809101112131415161718192021222324252627282930"
                                 "31323334353637383940414243444546474849505152535455565758596061"
                                 "62636465666768697071727374757677787980818283848586878889909192"
                                 "93949596979899";

/* Decimal digits of v, at p; returns the end. Pairs from a table, from the end. */
static inline char *raw_u64(char *p, uint64_t v)
{
    unsigned n = 1;
    uint64_t t = v; /* digits: four at a time, then the top group's by compares */
    while (t >= 10000) {
        t /= 10000;
        n += 4;
    }
    n += (t >= 10) + (t >= 100) + (t >= 1000);
    char *end = p + n, *q = end;
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        q -= 2;
        memcpy(q, digits2 + 2 * r, 2);
    }
    if (v >= 10)
        memcpy(q - 2, digits2 + 2 * v, 2);
    else
        q[-1] = (char)('0' + v);
    return end;
}

/*
 * The digits of v at p, through the cache d: an op's Q, S and E lines repeat
 * its op_id and seq, the next op's are one more, and the seconds of offsets
 * change once a second, so most numbers are a copy or a one-digit step
 * instead of a division per two digits (bench/obs_instr.sh: they were half
 * of the writer's instructions). Writes 24 bytes at p whatever v's length:
 * callers have CC__CLOG_EVENT_MAX bytes of room.
 */
static inline char *dec_put(struct dec *d, char *p, uint64_t v)
{
    if (__builtin_expect(v != d->v || !d->len, 0)) {
        uint32_t i = 0;                /* 0: write all digits (no cache, a jump, or 9..9 + 1) */
        if (d->len && v == d->v + 1) { /* add one in place: carry through the trailing 9s */
            i = d->len;
            while (i > 0 && d->s[i - 1] == '9')
                d->s[--i] = '0';
            if (i > 0) d->s[i - 1]++;
        }
        if (!i) d->len = (uint32_t)(raw_u64(d->s, v) - d->s);
        d->v = v;
    }
    memcpy(p, d->s, sizeof(d->s));
    return p + d->len;
}

/* "S.UUUUUU" from microseconds; the seconds through the cache `sec` when given. */
static inline char *raw_us(char *p, struct dec *sec, uint64_t us)
{
    p = sec ? dec_put(sec, p, us / 1000000) : raw_u64(p, us / 1000000);
    unsigned f = (unsigned)(us % 1000000);
    *p = '.';
    memcpy(p + 1, digits2 + 2 * (f / 10000), 2);
    memcpy(p + 3, digits2 + 2 * (f / 100 % 100), 2);
    memcpy(p + 5, digits2 + 2 * (f % 100), 2);
    return p + 7;
}

static void putf_u64(struct out *o, uint64_t v)
{
    char tmp[24];
    put(o, tmp, (size_t)(raw_u64(tmp, v) - tmp));
}

/* Negated as unsigned so INT64_MIN prints right too. */
static void putf_i64(struct out *o, int64_t v)
{
    if (v < 0) put(o, "-", 1);
    putf_u64(o, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

static void put_us(struct out *o, uint64_t us)
{
    char tmp[32];
    put(o, tmp, (size_t)(raw_us(tmp, NULL, us) - tmp));
}

/* Ids as 16 hex digits, fixed width so lines of one comm line up. */
static void put_hex(struct out *o, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char tmp[16];
    for (int i = 15; i >= 0; i--, v >>= 4)
        tmp[i] = hex[v & 15];
    put(o, tmp, 16);
}

/*
 * Names and messages are free text: '|', '%', control bytes and bytes
 * outside ASCII become %XX so that a line always splits cleanly on '|'
 * and stays one line. Output stops at `limit` bytes of line, ending in "...".
 */
static void put_esc(struct out *o, const char *s, size_t limit)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        int esc = ch < 0x20 || ch >= 0x7f || ch == '|' || ch == '%';
        /* Room for one escape and the "..." is kept, so the cut is always marked. */
        if (o->len + 3 + 3 > limit) {
            PUTL(o, "...");
            return;
        }
        if (esc) {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            put(o, e, 3);
        } else {
            put(o, (const char *)&ch, 1);
        }
    }
}

/*
 * "|+S.UUUUUU\n": the offset of monotonic time t from the base, in µs, at p;
 * returns the end. The seconds go through the writer's cache `sec` when
 * given (event lines), else are written out. Unsigned arithmetic both ways:
 * an event before the base gets a '-'.
 */
static inline char *raw_off_nl(char *p, struct dec *sec, const cc_clog_t *c, uint64_t t)
{
    int after = t >= c->base_mono_ns;
    p[0] = '|';
    p[1] = after ? '+' : '-';
    p = raw_us(p + 2, sec, (after ? t - c->base_mono_ns : c->base_mono_ns - t) / 1000);
    *p = '\n';
    return p + 1;
}

static void put_off_nl(struct out *o, const cc_clog_t *c, uint64_t t)
{
    char tmp[40];
    put(o, tmp, (size_t)(raw_off_nl(tmp, NULL, c, t) - tmp));
}

struct cc__clog_fmt *cc__clog_fmt_new(void)
{
    return calloc(1, sizeof(struct cc__clog_fmt));
}

void cc__clog_fmt_free(struct cc__clog_fmt *f)
{
    if (!f) return;
    for (size_t i = 0; i < f->commcap; i++)
        free(f->comms[i].name);
    free(f->comms);
    free(f->sigs);
    free(f);
}

/* A cheap 64-bit mix (boost's hash_combine, then a murmur finaliser step):
 * counts and ids are far from random, and linear probing needs spread. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t sig_hash(const struct sigkey *k)
{
    uint64_t h = mix(k->comm_id, k->in_count);
    h = mix(h, k->out_count);
    h = mix(h, (uint64_t)(uint32_t)k->root << 32 | (uint32_t)k->peer);
    return mix(h, (uint64_t)k->type << 16 | (uint64_t)k->dtype << 8 | k->redop);
}

/* Field by field: comparing the structs with memcmp would compare padding. */
static int sig_eq(const struct sigkey *a, const struct sigkey *b)
{
    return a->comm_id == b->comm_id && a->in_count == b->in_count && a->out_count == b->out_count &&
           a->root == b->root && a->peer == b->peer && a->type == b->type && a->dtype == b->dtype &&
           a->redop == b->redop;
}

/* Double the signature table; 0 or -1 (out of memory: the table stays). */
static int sig_grow(struct cc__clog_fmt *f)
{
    size_t ncap = f->sigcap ? f->sigcap * 2 : 64;
    struct sigent *n = calloc(ncap, sizeof(*n));
    if (!n) return -1;
    for (size_t i = 0; i < f->sigcap; i++) {
        if (!f->sigs[i].n) continue;
        size_t j = sig_hash(&f->sigs[i].key) & (ncap - 1);
        while (n[j].n)
            j = (j + 1) & (ncap - 1);
        n[j] = f->sigs[i];
    }
    free(f->sigs);
    f->sigs = n;
    f->sigcap = ncap;
    return 0;
}

/*
 * The number of the record's signature; *fresh = 1 when it is new (its sig
 * line must be written). 0 when the table cannot grow (out of memory).
 */
static uint32_t sig_number(struct cc__clog_fmt *f, const struct cc__clog_rec *r, int *fresh)
{
    *fresh = 0;
    /* The same op as the last line (its S after its Q, its E after its S): the same
     * signature. op_ids are never reused within a process. */
    if (f->last_n && r->op_id == f->last_op_id) return f->last_n;
    struct sigkey k;
    memset(&k, 0, sizeof(k)); /* padding takes part in nothing, but keep it defined */
    k.comm_id = r->comm_id;
    k.in_count = r->in_count;
    k.out_count = r->out_count;
    k.root = r->root;
    k.peer = r->peer;
    k.type = r->type;
    k.dtype = r->dtype;
    k.redop = r->redop;
    if (f->last_n && sig_eq(&f->last, &k)) {
        f->last_op_id = r->op_id;
        return f->last_n;
    }
    /* Out of memory: no number, and last_op_id stays, so this op's later events try again. */
    if ((f->nsig + 1) * 2 > f->sigcap && sig_grow(f) != 0) return 0;
    size_t j = sig_hash(&k) & (f->sigcap - 1);
    while (f->sigs[j].n && !sig_eq(&f->sigs[j].key, &k))
        j = (j + 1) & (f->sigcap - 1);
    if (!f->sigs[j].n) {
        f->sigs[j].key = k;
        f->sigs[j].n = (uint32_t)++f->nsig;
        *fresh = 1;
    }
    f->last = k;
    f->last_n = f->sigs[j].n;
    f->last_op_id = r->op_id;
    return f->last_n;
}

/* As sig_grow, for the comm table. */
static int comm_grow(struct cc__clog_fmt *f)
{
    size_t ncap = f->commcap ? f->commcap * 2 : 16;
    struct comm_ent *n = calloc(ncap, sizeof(*n));
    if (!n) return -1;
    for (size_t i = 0; i < f->commcap; i++) {
        if (!f->comms[i].id) continue;
        size_t j = mix(0, f->comms[i].id) & (ncap - 1);
        while (n[j].id)
            j = (j + 1) & (ncap - 1);
        n[j] = f->comms[i];
    }
    free(f->comms);
    f->comms = n;
    f->commcap = ncap;
    return 0;
}

/* The name a NEW record gave comm `id`, or NULL: a split's parent may predate the logger. */
static const char *comm_name(const struct cc__clog_fmt *f, uint64_t id)
{
    if (!id || !f->commcap) return NULL;
    for (size_t j = mix(0, id) & (f->commcap - 1); f->comms[j].id; j = (j + 1) & (f->commcap - 1))
        if (f->comms[j].id == id) return f->comms[j].name;
    return NULL;
}

/* What a NEW or A record's text holds: the name, then (after its NUL) the rest. */
static const char *text_name(const struct cc__clog_rec *r)
{
    return r->text ? r->text : "?";
}

static const char *text_rest(const struct cc__clog_rec *r)
{
    return r->text ? r->text + strlen(r->text) + 1 : "";
}

/* The name of an op record's comm (op records carry none), "?" if never seen. */
static const char *name_of(const struct cc__clog_fmt *f, uint64_t id)
{
    const char *n = comm_name(f, id);
    return n ? n : "?";
}

/* Remember (or rename) comm id's name; failures only cost a "?" later. */
static void comm_remember(struct cc__clog_fmt *f, uint64_t id, const char *name)
{
    if (!id) return;
    if ((f->ncomm + 1) * 2 > f->commcap && comm_grow(f) != 0) return;
    size_t j = mix(0, id) & (f->commcap - 1);
    while (f->comms[j].id && f->comms[j].id != id)
        j = (j + 1) & (f->commcap - 1);
    char *dup = strdup(name);
    if (!dup) return;
    if (!f->comms[j].id) f->ncomm++;
    free(f->comms[j].name);
    f->comms[j].id = id;
    f->comms[j].name = dup;
}

/* Records keep CC_DTYPE_COUNT / CC_REDOP_COUNT for "none"; the file says "-". */
static const char *dtype_or_dash(unsigned d)
{
    return d < CC_DTYPE_COUNT ? cc_dtype_name((cc_dtype_t)d) : "-";
}

static const char *redop_or_dash(unsigned r)
{
    return r < CC_REDOP_COUNT ? cc_redop_name((cc_redop_t)r) : "-";
}

/* "C<n>|sig|all_reduce|in_count=..|...|comm=<name>\n" */
static void put_sig(struct out *o, const struct cc__clog_fmt *f, uint32_t n,
                    const struct cc__clog_rec *r)
{
    PUTL(o, "C");
    putf_u64(o, n);
    PUTL(o, "|sig|");
    puts_(o, cc_op_type_name((cc_op_type_t)r->type));
    PUTL(o, "|in_count=");
    putf_u64(o, r->in_count);
    PUTL(o, "|out_count=");
    putf_u64(o, r->out_count);
    PUTL(o, "|dtype=");
    puts_(o, dtype_or_dash(r->dtype));
    PUTL(o, "|red_op=");
    puts_(o, redop_or_dash(r->redop));
    PUTL(o, "|root=");
    putf_i64(o, r->root);
    PUTL(o, "|peer=");
    putf_i64(o, r->peer);
    PUTL(o, "|comm=");
    put_esc(o, name_of(f, r->comm_id), o->len + 1024);
    PUTL(o, "\n");
}

/*
 * The op event lines (Q, S, E, W) are the writer's whole load (three an op),
 * so they are written raw: straight into the buffer, no bound check per field
 * (bench/obs_instr.sh: 805 instructions a line through `put`). Their length
 * is bounded by CC__CLOG_EVENT_MAX; where less room is left, they are written
 * into a local buffer and cut like any line.
 */
#define CC__CLOG_EVENT_MAX 256

/* Copy a string literal and step past it (a few moves: the size is a constant). */
#define RAWL(p, lit) (memcpy((p), "" lit, sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/* C<n>|Q, S, E or W (at most CC__CLOG_EVENT_MAX bytes), the line of event `kind` (a QS
 * record makes a Q line and an S line) at time t; returns the end. */
static char *raw_event(char *p, struct cc__clog_fmt *f, const cc_clog_t *c, uint32_t n,
                       const struct cc__clog_rec *r, int kind, uint64_t t)
{
    static const char letters[] = "?QSEWA"; /* indexed by enum cc__clog_kind */
    *p++ = 'C';
    p = dec_put(&f->d_n, p, n);
    p[0] = '|';
    p[1] = letters[kind];
    p = RAWL(p + 2, "|op_id=");
    p = dec_put(&f->d_op, p, r->op_id);
    p = RAWL(p, "|seq=");
    p = dec_put(&f->d_seq, p, r->seq);
    if (kind == CC__CLOG_REC_E) {
        if (r->status == CC_OK) {
            p = RAWL(p, "|status=OK|dur=");
        } else {
            p = RAWL(p, "|status=");
            const char *st = cc_status_name((cc_status_t)r->status);
            size_t len = strnlen(st, 64);
            memcpy(p, st, len);
            p = RAWL(p + len, "|dur=");
        }
        /* A clock that went backwards between threads reads as 0, never as huge. */
        p = raw_us(p, NULL,
                   (r->t_ns > r->t_ref_ns && r->t_ref_ns ? r->t_ns - r->t_ref_ns : 0) / 1000);
    }
    return raw_off_nl(p, &f->d_sec, c, t);
}

/* An abort's line: free text, cut like any line. */
static void put_abort(struct out *o, const cc_clog_t *c, uint32_t n, const struct cc__clog_rec *r)
{
    size_t start = o->len; /* a message is cut relative to the line */
    PUTL(o, "C");
    putf_u64(o, n);
    PUTL(o, "|A|op_id=");
    putf_u64(o, r->op_id);
    PUTL(o, "|seq=");
    putf_u64(o, r->seq);
    PUTL(o, "|comm=");
    put_esc(o, text_name(r), o->len + 1024);
    PUTL(o, "|reason=");
    puts_(o, cc_status_name((cc_status_t)r->status));
    PUTL(o, "|msg=");
    put_esc(o, text_rest(r), start + CC__CLOG_LINE_MAX - 32);
    put_off_nl(o, c, r->t_ns);
}

/* One event line of record r (see raw_event). */
static void put_line(struct out *o, struct cc__clog_fmt *f, const cc_clog_t *c, uint32_t n,
                     const struct cc__clog_rec *r, int kind, uint64_t t)
{
    char tmp[CC__CLOG_EVENT_MAX];
    int direct = o->cap - o->len >= sizeof(tmp);
    char *start = direct ? o->p + o->len : tmp;
    size_t len = (size_t)(raw_event(start, f, c, n, r, kind, t) - start);
    if (direct)
        o->len += len;
    else
        put(o, tmp, len);
}

static void put_event(struct out *o, struct cc__clog_fmt *f, const cc_clog_t *c, uint32_t n,
                      const struct cc__clog_rec *r)
{
    if (r->kind == CC__CLOG_REC_A) {
        put_abort(o, c, n, r);
    } else if (r->kind == CC__CLOG_REC_QS) {
        put_line(o, f, c, n, r, CC__CLOG_REC_Q, r->t_ref_ns);
        put_line(o, f, c, n, r, CC__CLOG_REC_S, r->t_ns);
    } else {
        put_line(o, f, c, n, r, r->kind, r->t_ns);
    }
}

/* new_comm, then split for the child of a split or group. */
static void put_new_comm(struct out *o, struct cc__clog_fmt *f, const cc_clog_t *c,
                         const struct cc__clog_rec *r)
{
    size_t start = o->len;
    PUTL(o, "new_comm|comm=");
    put_esc(o, text_name(r), start + 1024);
    PUTL(o, "|id=");
    put_hex(o, r->comm_id);
    PUTL(o, "|rank=");
    putf_i64(o, r->rank);
    PUTL(o, "|size=");
    putf_i64(o, r->size);
    put_off_nl(o, c, r->t_ns);
    /* t_ref_ns carries the parent's id: nonzero for children of split and create_group. */
    if (r->t_ref_ns) {
        const char *parent = comm_name(f, r->t_ref_ns);
        start = o->len;
        PUTL(o, "split|parent=");
        put_esc(o, parent ? parent : "?", start + 1024);
        PUTL(o, "|child=");
        put_esc(o, text_name(r), start + 2048);
        PUTL(o, "|parent_id=");
        put_hex(o, r->t_ref_ns);
        PUTL(o, "|child_id=");
        put_hex(o, r->comm_id);
        PUTL(o, "|ranks=");
        /* A child has at least one rank: an empty list means it could not be known. */
        put_esc(o, *text_rest(r) ? text_rest(r) : "?", start + CC__CLOG_LINE_MAX - 32);
        put_off_nl(o, c, r->t_ns);
    }
    /* After the split line: a comm is never its own parent. */
    if (r->text) comm_remember(f, r->comm_id, r->text);
}

size_t cc__clog_fmt_rec(struct cc__clog_fmt *f, cc_clog_t *c, struct cc__clog_rec *rec, char *buf,
                        size_t cap)
{
    struct out o = {buf, 0, cap};
    switch (rec->kind) {
    case CC__CLOG_REC_NEW:
        put_new_comm(&o, f, c, rec);
        break;
    case CC__CLOG_REC_END:
        PUTL(&o, "end_comm|comm=");
        put_esc(&o, name_of(f, rec->comm_id), 1024);
        PUTL(&o, "|id=");
        put_hex(&o, rec->comm_id);
        put_off_nl(&o, c, rec->t_ns);
        break;
    case CC__CLOG_REC_Q:
    case CC__CLOG_REC_QS:
    case CC__CLOG_REC_S:
    case CC__CLOG_REC_E:
    case CC__CLOG_REC_W:
    case CC__CLOG_REC_A: {
        /* An abort with no culprit op has no signature: C0. */
        int fresh = 0;
        uint32_t n = rec->op_id ? sig_number(f, rec, &fresh) : 0;
        if (!n && rec->kind != CC__CLOG_REC_A) {
            /* No memory for a new signature: the line cannot be written; say so. */
            atomic_fetch_add_explicit(&c->ring.dropped, 1, memory_order_relaxed);
            break;
        }
        if (fresh) put_sig(&o, f, n, rec);
        put_event(&o, f, c, n, rec);
        break;
    }
    default:
        break; /* cannot happen: only the hooks make records */
    }
    /* The record owned its text; the line (if any) has a copy. Op records have none: no
     * call for them. */
    if (rec->text) {
        free(rec->text);
        rec->text = NULL;
    }
    return o.len;
}

size_t cc__clog_fmt_drop(const cc_clog_t *c, uint64_t count, uint64_t total, uint64_t t, char *buf,
                         size_t cap)
{
    struct out o = {buf, 0, cap};
    PUTL(&o, "DROP|count=");
    putf_u64(&o, count);
    PUTL(&o, "|total=");
    putf_u64(&o, total);
    put_off_nl(&o, c, t);
    return o.len;
}

size_t cc__clog_fmt_end(const cc_clog_t *c, uint64_t total, uint64_t t, char *buf, size_t cap)
{
    struct out o = {buf, 0, cap};
    PUTL(&o, "END|dropped=");
    putf_u64(&o, total);
    put_off_nl(&o, c, t);
    return o.len;
}

size_t cc__clog_fmt_header(const cc_clog_t *c, char *buf, size_t cap)
{
    /* Read here, not cached: a header is written once per file. */
    char host[256] = "?";
    if (gethostname(host, sizeof(host) - 1) != 0) strcpy(host, "?");
    host[sizeof(host) - 1] = '\0';
    struct out o = {buf, 0, cap};
    PUTL(&o, "V|1|base_timestamp=");
    put_us(&o, c->base_real_ns / 1000);
    PUTL(&o, "|rank=");
    putf_i64(&o, c->rank);
    PUTL(&o, "|pid=");
    putf_i64(&o, (int64_t)getpid());
    PUTL(&o, "|host=");
    put_esc(&o, host, 1024);
    /* Which events the file can hold: a reader must not call an op "never
     * ended" when E lines were not asked for. */
    static const char letters[] = "QSEWA";
    char ev[8];
    size_t ne = 0;
    for (int i = 0; i < 5; i++)
        if (c->events & (1u << i)) ev[ne++] = letters[i];
    if (!ne) ev[ne++] = '-';
    ev[ne] = '\0';
    PUTL(&o, "|events=");
    puts_(&o, ev);
    PUTL(&o, "\n");
    return o.len;
}
