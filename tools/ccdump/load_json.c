/*
 * load_json.c - a flight recorder JSON dump into the job model: ccomm's own
 * dumps (PyTorch's keys plus "ccomm") and PyTorch / torchcomms dumps of
 * version 2.x (docs/recorder-format.md has the mapping; REFERENCE.md
 * PyTorch's keys).
 *
 * Nothing in the file is trusted: every value is type-checked, numbers are
 * range-checked, rank lists are parsed strictly, and a malformed entry is
 * counted and skipped rather than guessed at. PyTorch dumps carry no rank:
 * it comes from the file name (<prefix><rank>, PyTorch's naming).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

/* A doc's process groups, by pg name and by pg_id, to this rank's comm index. */
typedef struct pgmap {
    int32_t pg_id[512];
    int32_t k[512]; /* rank comm index */
    uint32_t n;
} pgmap_t;

/* A JSON number or decimal string as a u64: 0 ok, -1 not one. */
static int get_u64(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0) return -1;
        *out = (uint64_t)i;
        return 0;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (!isfinite(d) || d < 0 || d >= 1.8e19) return -1;
        *out = (uint64_t)d;
        return 0;
    }
    const char *s = json_string_value(v);
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 19) return -1;
    *out = strtoull(s, NULL, 10);
    return 0;
}

static uint64_t u64_or(const json_t *obj, const char *key, uint64_t dflt)
{
    uint64_t v;
    return get_u64(json_object_get(obj, key), &v) ? dflt : v;
}

static int64_t i64_or(const json_t *obj, const char *key, int64_t dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static int32_t rank_or(const json_t *obj, const char *key)
{
    int64_t v = i64_or(obj, key, -1);
    return v >= 0 && v < CCD_MAX_WORLD ? (int32_t)v : -1;
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s ? s : dflt;
}

/* "[0, 1, 2]" (PyTorch writes a string) or a JSON array. -1 when malformed. */
static int parse_ranks(const json_t *v, int32_t **out, int32_t *n)
{
    size_t cap = json_is_array(v)    ? json_array_size(v)
                 : json_is_string(v) ? json_string_length(v)
                                     : 0;
    if (!json_is_array(v) && !json_is_string(v)) return -1;
    if (cap > CCD_MAX_WORLD) return -1;
    int32_t *m = malloc((cap + 1) * sizeof(int32_t)), k = 0;
    if (!m) return -1;
    if (json_is_array(v)) {
        for (size_t i = 0; i < cap; i++) {
            json_t *x = json_array_get(v, i);
            if (!json_is_integer(x) || json_integer_value(x) < -1 ||
                json_integer_value(x) >= CCD_MAX_WORLD)
                goto bad;
            m[k++] = (int32_t)json_integer_value(x);
        }
    } else {
        const char *s = json_string_value(v);
        while (isspace((unsigned char)*s))
            s++;
        if (*s++ != '[') goto bad;
        for (;;) {
            while (isspace((unsigned char)*s) || *s == ',')
                s++;
            if (*s == ']') break;
            char *end;
            long x = strtol(s, &end, 10);
            if (end == s || x < -1 || x >= CCD_MAX_WORLD || (size_t)k >= cap) goto bad;
            m[k++] = (int32_t)x;
            s = end;
        }
    }
    *out = m;
    *n = k;
    return 0;
bad:
    free(m);
    return -1;
}

static int pgmap_add(pgmap_t *pm, int32_t pg_id, int k)
{
    for (uint32_t i = 0; i < pm->n; i++)
        if (pm->pg_id[i] == pg_id) return 0;
    if (pm->n >= 512) return 0;
    pm->pg_id[pm->n] = pg_id;
    pm->k[pm->n++] = k;
    return 0;
}

static int pgmap_find(const pgmap_t *pm, int32_t pg_id)
{
    for (uint32_t i = 0; i < pm->n; i++)
        if (pm->pg_id[i] == pg_id) return pm->k[i];
    return -1;
}

/* A process group (pg_config item) as a job comm; -1 out of memory. */
static int one_pg(ccd_job_t *job, ccd_rank_t *r, const char *key, json_t *pg)
{
    int32_t *m = NULL, n = -1;
    if (parse_ranks(json_object_get(pg, "ranks"), &m, &n)) {
        ccd_note(job, "%s: process group \"%.40s\": malformed ranks", r->path, key);
        n = -1;
    }
    const char *desc = str_or(pg, "desc", "");
    /* "[]": PyTorch and ccomm write it when the members are not known. */
    int g = ccd_comm_intern(job, key, desc, n > 0 ? n : -1, n > 0 ? m : NULL);
    int k = g < 0 ? -1 : ccd_rank_comm(r, (uint32_t)g);
    for (int32_t i = 0; k >= 0 && i < n; i++)
        if (m[i] == r->rank) r->comms[k].rank = i;
    free(m);
    return k < 0 ? -1 : 0;
}

static int pg_config(ccd_job_t *job, ccd_rank_t *r, json_t *doc)
{
    const char *key;
    json_t *pg;
    json_object_foreach(json_object_get(doc, "pg_config"), key, pg)
    {
        if (!json_is_object(pg) || strlen(key) >= sizeof(job->comms[0].key)) {
            ccd_note(job, "%s: malformed process group in pg_config", r->path);
            continue;
        }
        if (one_pg(job, r, key, pg)) return -1;
    }
    return 0;
}

/* ccomm's comm list: pg_id, own rank, abort state (and comms without entries). */
static int ccomm_comms(ccd_job_t *job, ccd_rank_t *r, json_t *cc, pgmap_t *pm)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(cc, "comms"), i, c)
    {
        const char *id = str_or(c, "comm_id", NULL);
        if (!id || strlen(id) >= 40) continue;
        int64_t size = i64_or(c, "size", -1);
        int g = ccd_comm_intern(job, id, str_or(c, "name", ""),
                                size >= 0 && size <= CCD_MAX_WORLD ? (int32_t)size : -1, NULL);
        int k = g < 0 ? -1 : ccd_rank_comm(r, (uint32_t)g);
        if (k < 0) return -1;
        const char *parent = str_or(c, "parent_id", NULL);
        if (parent) job->comms[g].parent_id = strtoull(parent, NULL, 10);
        ccd_rcomm_t *rc = &r->comms[k];
        rc->rank = rank_or(c, "rank");
        rc->aborted = json_is_true(json_object_get(c, "aborted"));
        rc->destroyed = json_is_true(json_object_get(c, "destroyed"));
        const char *why = str_or(c, "abort_reason", NULL);
        rc->abort_reason = rc->aborted && why ? ccd_status_parse(why) : 0;
        ccd_comm_set_member(job, (uint32_t)g, rc->rank, r->rank);
        pgmap_add(pm, (int32_t)i64_or(c, "pg_id", -1), k);
    }
    return 0;
}

/* The process facts ccomm adds under the top-level "ccomm". */
static void ccomm_process(ccd_rank_t *r, json_t *cc)
{
    snprintf(r->host, sizeof(r->host), "%s", str_or(cc, "host", ""));
    snprintf(r->job, sizeof(r->job), "%s", str_or(cc, "job_id", ""));
    r->pid = (int32_t)i64_or(cc, "pid", 0);
    int64_t ws = i64_or(cc, "world_size", 0);
    r->world_size = ws > 0 && ws <= CCD_MAX_WORLD ? (int32_t)ws : 0;
    r->closed = json_is_true(json_object_get(cc, "closed"));
    int64_t sig = i64_or(cc, "fatal_signal", 0);
    r->fatal_signal = sig > 0 && sig < 256 ? (int32_t)sig : 0;
    r->t_fatal = u64_or(cc, "fatal_signal_time_ns", 0);
    r->records_issued = u64_or(cc, "records_issued", 0);
    r->capacity = (uint32_t)u64_or(cc, "capacity", 0);
    r->skipped = u64_or(cc, "skipped", 0);
    r->dropped = u64_or(cc, "dropped_updates", 0);
    r->dumps = u64_or(cc, "dumps_written", 0) + 1;
    r->t_dump = u64_or(cc, "dump_time_ns", 0);
    r->ntorn = (uint32_t)json_array_size(json_object_get(cc, "torn"));
    r->ncorrupt = (uint32_t)json_array_size(json_object_get(cc, "corrupt"));
    /* `ccdump export --torch` carries what the ring's host could see of the process. */
    json_t *alive = json_object_get(json_object_get(cc, "process"), "alive");
    if (json_is_boolean(alive)) {
        r->alive = json_is_true(alive) ? 1 : 0;
        r->stopped = json_is_true(json_object_get(json_object_get(cc, "process"), "stopped"));
    }
}

/* The world rank: "rank" (ccomm), else from the file name as PyTorch names it. */
static int32_t doc_rank(json_t *doc, const char *path, const char *prefix)
{
    int32_t r = rank_or(doc, "rank");
    if (r >= 0 || !path) return r;
    const char *base = strrchr(path, '/');
    return ccd_name_rank(base ? base + 1 : path, prefix);
}

/* "nccl:send 0->1": the op's name and, for p2p, own and peer comm ranks. */
static int parse_pname(const char *p, char *op, size_t oplen, int32_t *self, int32_t *peer)
{
    const char *colon = strchr(p, ':');
    if (colon) p = colon + 1;
    size_t n = strcspn(p, " ");
    if (!n || n >= oplen) return -1;
    memcpy(op, p, n);
    op[n] = '\0';
    long a, b;
    char arrow[3];
    *self = *peer = -1;
    if (p[n] && sscanf(p + n, " %ld%2[<>-]%ld", &a, arrow, &b) == 3 && a >= 0 && b >= 0 &&
        a < CCD_MAX_WORLD && b < CCD_MAX_WORLD) {
        *self = (int32_t)a;
        *peer = (int32_t)b;
    }
    return 0;
}

/* Elements in [[d0, d1, ...], ...]: the sum over tensors of their products (saturating). */
static int tensor_elems(const json_t *sizes, uint64_t *out)
{
    size_t i, j;
    json_t *t, *d;
    uint64_t total = 0;
    if (!sizes) return *out = 0, 0;
    if (!json_is_array(sizes)) return -1;
    json_array_foreach(sizes, i, t)
    {
        uint64_t prod = 1, v;
        if (!json_is_array(t)) return -1;
        json_array_foreach(t, j, d)
        {
            if (get_u64(d, &v)) return -1;
            prod = v && prod > UINT64_MAX / 4 / v ? UINT64_MAX / 4 : prod * v;
        }
        total = total + prod < total ? UINT64_MAX / 2 : total + prod;
    }
    *out = total;
    return 0;
}

/* The entry's comm from process_group [name, desc]; -1 malformed, -2 out of memory. */
static int entry_pg(ccd_job_t *job, ccd_rank_t *r, json_t *e, pgmap_t *pm)
{
    json_t *pg = json_object_get(e, "process_group");
    const char *name = json_string_value(json_array_get(pg, 0));
    if (!json_is_array(pg) || !name || strlen(name) >= sizeof(job->comms[0].key)) return -1;
    int g = ccd_comm_intern(job, name, json_string_value(json_array_get(pg, 1)), -1, NULL);
    int k = g < 0 ? -1 : ccd_rank_comm(r, (uint32_t)g);
    if (k < 0) return -2;
    int64_t pg_id = i64_or(e, "pg_id", -1);
    if (pg_id >= 0 && pg_id <= INT32_MAX) pgmap_add(pm, (int32_t)pg_id, k);
    return k;
}

/* The first dtype of the entry's tensors that is one (an unused side is "Undefined"). */
static const char *entry_dtype(const json_t *e)
{
    static const char *const keys[] = {"input_dtypes", "output_dtypes"};
    for (int k = 0; k < 2; k++) {
        size_t i;
        json_t *s;
        json_array_foreach(json_object_get(e, keys[k]), i, s)
        {
            const char *dt = json_string_value(s);
            if (dt && strcmp(dt, "Undefined")) return dt;
        }
    }
    return NULL;
}

static int entry_sizes(ccd_job_t *job, ccd_entry_t *d, json_t *e)
{
    /* `ccdump export --torch` keeps ccomm's own sizes beside PyTorch's shapes. */
    json_t *own = json_object_get(e, "ccomm");
    if (json_is_array(json_object_get(own, "input_sizes"))) e = own;
    if (tensor_elems(json_object_get(e, "input_sizes"), &d->in_count) ||
        tensor_elems(json_object_get(e, "output_sizes"), &d->out_count))
        return -1;
    const char *dt = entry_dtype(e);
    int id = dt ? ccd_dtype_id(job, dt) : (int)CCD_NONE8;
    if (id < 0) return -2;
    d->dtype = (uint8_t)id;
    return 0;
}

/* States, status and the end time: ccomm's true values when present. */
static void entry_state(ccd_entry_t *d, json_t *e, json_t *x)
{
    const char *st = str_or(x, "state", str_or(e, "state", ""));
    d->state = (uint8_t)ccd_state_parse(st);
    if (!d->state) d->state = CCD_SCHEDULED;
    d->t_start = u64_or(e, "time_discovered_started_ns", 0);
    d->t_end = u64_or(e, "time_discovered_completed_ns", 0);
    if (!d->t_end) d->t_end = u64_or(x, "time_ended_ns", 0);
    const char *status = str_or(x, "status", NULL);
    d->status = status ? ccd_status_parse(status) : d->state == CCD_COMPLETED ? 0 : CC_INPROGRESS;
    if (json_is_true(json_object_get(x, "abort_seen"))) d->flags |= CCD_EF_ABORT_SEEN;
}

/* ccomm's extra keys: peer, root, tag, bytes, reduction. */
static void entry_extras(ccd_entry_t *d, json_t *x)
{
    if (!json_is_object(x)) return;
    int64_t peer = i64_or(x, "peer", -1), root = i64_or(x, "root", -1);
    d->peer = peer >= 0 && peer < CCD_MAX_WORLD ? (int32_t)peer : d->peer;
    d->root = root >= 0 && root < CCD_MAX_WORLD ? (int32_t)root : -1;
    d->tag = (int32_t)i64_or(x, "tag", 0);
    d->bytes = u64_or(x, "bytes", 0);
    cc_redop_t op;
    if (cc_redop_parse(str_or(x, "redop", ""), &op) == CC_OK) d->redop = (uint8_t)op;
}

static void entry_class(ccd_entry_t *d, json_t *e)
{
    static const unsigned char life[] = {CC_OP_COMM_INIT,    CC_OP_COMM_SPLIT,
                                         CC_OP_COMM_DESTROY, CC_OP_COMM_ABORT,
                                         CC_OP_WIN_CREATE,   CC_OP_WIN_DESTROY};
    for (size_t i = 0; i < sizeof(life); i++)
        if (d->op == life[i]) d->flags |= CCD_EF_LIFE;
    if (d->flags & CCD_EF_LIFE) return;
    d->flags |= json_is_true(json_object_get(e, "is_p2p")) ? CCD_EF_P2P : CCD_EF_COLL;
    if (d->op == CC_OP_SEND || d->op == CC_OP_SEND_BYTES) d->flags |= CCD_EF_SEND;
    if (d->op == CC_OP_RECV || d->op == CC_OP_RECV_BYTES) d->flags |= CCD_EF_RECV;
}

/* One entry: 0 kept, 1 malformed (skipped), -1 out of memory. */
static int json_entry(ccd_job_t *job, ccd_rank_t *r, json_t *e, pgmap_t *pm)
{
    uint64_t rid, cseq, pseq;
    const char *pname = str_or(e, "profiling_name", NULL);
    char op[64];
    int32_t self, peer;
    if (!json_is_object(e) || get_u64(json_object_get(e, "record_id"), &rid) ||
        get_u64(json_object_get(e, "collective_seq_id"), &cseq) ||
        get_u64(json_object_get(e, "p2p_seq_id"), &pseq) || !pname ||
        parse_pname(pname, op, sizeof(op), &self, &peer))
        return 1;
    /* `ccdump export --torch` writes PyTorch's op names; ccomm's own is kept here. */
    const char *own = str_or(json_object_get(e, "ccomm"), "op", NULL);
    if (own && *own && strlen(own) < sizeof(op)) snprintf(op, sizeof(op), "%s", own);
    int k = entry_pg(job, r, e, pm), id = k < 0 ? 0 : ccd_op_id(job, op);
    if (k == -1) return 1;
    if (k < -1 || id < 0) return -1;
    ccd_entry_t *d = ccd_rank_push(r);
    if (!d) return -1;
    d->comm = (uint16_t)k;
    d->op = (uint16_t)id;
    int rc = entry_sizes(job, d, e);
    if (rc) {
        r->n--;
        return rc == -1 ? 1 : -1;
    }
    json_t *x = json_object_get(e, "ccomm");
    d->record_id = rid;
    d->op_id = u64_or(x, "op_id", u64_or(e, "op_id", 0));
    d->t_enq = u64_or(e, "time_created_ns", 0);
    d->timeout_ms = i64_or(e, "timeout_ms", 0);
    d->peer = peer;
    entry_class(d, e);
    /* An export numbers p2p ops as PyTorch does (per group); ccomm's per-peer number is kept. */
    d->seq = (d->flags & CCD_EF_P2P) ? u64_or(x, "p2p_seq", pseq) : cseq;
    entry_state(d, e, x);
    entry_extras(d, x);
    if (self >= 0 && r->comms[k].rank < 0) r->comms[k].rank = self;
    return 0;
}

/* Entries and lifecycle events; malformed ones are counted and skipped. */
static int doc_entries(ccd_job_t *job, ccd_rank_t *r, json_t *doc, pgmap_t *pm)
{
    json_t *lists[2] = {json_object_get(doc, "entries"),
                        json_object_get(json_object_get(doc, "ccomm"), "lifecycle")};
    uint32_t bad = 0;
    if (lists[0] && !json_is_array(lists[0]))
        ccd_note(job, "%s: \"entries\" is not an array: no entries read", r->path);
    for (int l = 0; l < 2; l++) {
        size_t i;
        json_t *e;
        json_array_foreach(lists[l], i, e)
        {
            int rc = json_entry(job, r, e, pm);
            if (rc < 0) return -1;
            bad += rc > 0;
        }
    }
    if (bad) ccd_note(job, "%s: %u malformed entries left out", r->path, bad);
    return 0;
}

static int by_record(const void *a, const void *b)
{
    uint64_t x = ((const ccd_entry_t *)a)->record_id, y = ((const ccd_entry_t *)b)->record_id;
    return x < y ? -1 : x > y;
}

static int by_p2p_key(const void *a, const void *b)
{
    const ccd_entry_t *x = *(ccd_entry_t *const *)a, *y = *(ccd_entry_t *const *)b;
    unsigned dx = x->flags & CCD_EF_SEND, dy = y->flags & CCD_EF_SEND;
    if (x->comm != y->comm) return x->comm < y->comm ? -1 : 1;
    if (x->peer != y->peer) return x->peer < y->peer ? -1 : 1;
    if (dx != dy) return dx < dy ? -1 : 1;
    return x->record_id < y->record_id ? -1 : x->record_id > y->record_id;
}

/* PyTorch numbers p2p ops per group, ccomm per (comm, peer, direction):
 * renumber in record order within each (comm, peer, direction). */
static int renumber_p2p(ccd_rank_t *r)
{
    ccd_entry_t **v = malloc(((size_t)r->n + 1) * sizeof(*v));
    uint32_t n = 0;
    if (!v) return -1;
    for (uint32_t i = 0; i < r->n; i++)
        if ((r->e[i].flags & CCD_EF_P2P) && r->e[i].peer >= 0) v[n++] = &r->e[i];
    qsort(v, n, sizeof(*v), by_p2p_key);
    uint64_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        int same = i && v[i - 1]->comm == v[i]->comm && v[i - 1]->peer == v[i]->peer &&
                   (v[i - 1]->flags & CCD_EF_SEND) == (v[i]->flags & CCD_EF_SEND);
        k = same ? k + 1 : 1;
        v[i]->seq = k;
    }
    free(v);
    return 0;
}

/* pg_status: {pg_id: {last_*_collective}} as strings or numbers. */
static void pg_status(ccd_rank_t *r, json_t *doc, const pgmap_t *pm)
{
    const char *key;
    json_t *st;
    json_object_foreach(json_object_get(doc, "pg_status"), key, st)
    {
        char *end;
        long id = strtol(key, &end, 10);
        int k = *end || id < 0 || id > INT32_MAX ? -1 : pgmap_find(pm, (int32_t)id);
        if (k < 0 || !json_is_object(st)) continue;
        r->comms[k].last_enq = u64_or(st, "last_enqueued_collective", 0);
        r->comms[k].last_start = u64_or(st, "last_started_collective", 0);
        r->comms[k].last_done = u64_or(st, "last_completed_collective", 0);
    }
}

static void finish_times(ccd_rank_t *r)
{
    uint64_t last = 0;
    for (uint32_t i = 0; i < r->n; i++)
        if (ccd_entry_last_time(&r->e[i]) > last) last = ccd_entry_last_time(&r->e[i]);
    if (!r->t_dump) r->t_dump = last;
    r->t_taken = r->t_dump;
    if (!r->records_issued && r->n) r->records_issued = r->e[r->n - 1].record_id;
}

static int check_version(json_t *doc, char *err, size_t errlen)
{
    const char *v = str_or(doc, "version", NULL);
    if (!v) {
        snprintf(err, errlen, "not a flight recorder dump (no \"version\" string)");
        return -1;
    }
    if (strncmp(v, "2.", 2) != 0) {
        snprintf(err, errlen, "flight recorder dump version \"%.20s\": ccdump reads 2.x", v);
        return -1;
    }
    if (!json_is_object(json_object_get(doc, "pg_config"))) {
        snprintf(err, errlen, "not a flight recorder dump (no \"pg_config\" object)");
        return -1;
    }
    return 0;
}

static int doc_to_rank(ccd_job_t *job, ccd_rank_t *r, json_t *doc, pgmap_t *pm, int ccomm)
{
    json_t *cc = json_object_get(doc, "ccomm");
    if (ccomm) ccomm_process(r, cc);
    if (pg_config(job, r, doc)) return -1;
    if (ccomm && ccomm_comms(job, r, cc, pm)) return -1;
    if (doc_entries(job, r, doc, pm)) return -1;
    if (r->n) qsort(r->e, r->n, sizeof(ccd_entry_t), by_record);
    if (!ccomm && renumber_p2p(r)) return -1;
    pg_status(r, doc, pm);
    finish_times(r);
    return 0;
}

int ccd_load_json_doc(ccd_job_t *job, json_t *doc, const char *path, ccd_rank_t **out, char *err,
                      size_t errlen)
{
    if (!json_is_object(doc)) {
        snprintf(err, errlen, "not a flight recorder dump (not a JSON object)");
        return CCD_LOAD_BAD;
    }
    if (check_version(doc, err, errlen)) return CCD_LOAD_BAD;
    /* ccomm's dumps say their format; an export of PyTorch's dump may add a "ccomm" without. */
    int ccomm = json_is_string(json_object_get(json_object_get(doc, "ccomm"), "format_version"));
    ccd_rank_t *r = ccd_rank_new();
    pgmap_t *pm = calloc(1, sizeof(*pm));
    if (!r || !pm || !(r->path = strdup(path ? path : "-"))) goto oom;
    r->src = ccomm ? CCD_SRC_CCOMM_JSON : CCD_SRC_TORCH_JSON;
    r->rank = doc_rank(doc, path, job->prefix);
    if (r->rank < 0) {
        snprintf(err, errlen, "no rank: the dump has no \"rank\" and its name does not end in one");
        free(pm);
        ccd_rank_free(r);
        return CCD_LOAD_BAD;
    }
    if (doc_to_rank(job, r, doc, pm, ccomm)) goto oom;
    free(pm);
    *out = r;
    return CCD_LOAD_OK;
oom:
    free(pm);
    ccd_rank_free(r);
    snprintf(err, errlen, "%s", ccd_load_failure(job));
    return job->comms_full ? CCD_LOAD_BAD : CCD_LOAD_OOM;
}
