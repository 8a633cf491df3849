/*
 * model.c - the job model: records per rank, job-wide communicators, name
 * tables, and the formatting helpers the commands share.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static const char *const state_names[CCD_STATE_COUNT] = {
    "?", "scheduled", "started", "completed", "failed", "timed_out", "aborted"};

/* The torch dtype names, in cc_dtype_t order (4th column of CC_DTYPE_MAP). */
static const char *const torch_dtypes[CC_DTYPE_COUNT] = {
#define CCD_TORCH_DT(name, s, size, torch) torch,
    CC_DTYPE_MAP(CCD_TORCH_DT)
#undef CCD_TORCH_DT
};

static const char *const redop_names[CC_REDOP_COUNT] = {
#define CCD_REDOP(name, s) s,
    CC_REDOP_MAP(CCD_REDOP)
#undef CCD_REDOP
};

ccd_job_t *ccd_job_new(void)
{
    return calloc(1, sizeof(ccd_job_t));
}

static void names_free(ccd_names_t *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
}

void ccd_job_free(ccd_job_t *job)
{
    if (!job) return;
    for (uint32_t i = 0; i < job->nloaded; i++)
        ccd_rank_free(job->loaded[i]);
    free(job->loaded);
    free(job->rank);
    for (uint32_t i = 0; i < job->ncomms; i++)
        free(job->comms[i].members);
    free(job->comms);
    free(job->comm_hash);
    names_free(&job->ops);
    names_free(&job->dtypes);
    names_free(&job->notes);
    free(job);
}

ccd_rank_t *ccd_rank_new(void)
{
    ccd_rank_t *r = calloc(1, sizeof(*r));
    if (!r) return NULL;
    r->rank = -1;
    r->alive = -1;
    r->closed = -1;
    return r;
}

void ccd_rank_free(ccd_rank_t *r)
{
    if (!r) return;
    free(r->path);
    free(r->comms);
    free(r->comm_ix);
    free(r->e);
    free(r);
}

ccd_entry_t *ccd_rank_push(ccd_rank_t *r)
{
    if (r->n == r->cap) {
        uint32_t c = r->cap ? 2 * r->cap : 64;
        if (c < r->cap) return NULL;
        ccd_entry_t *e = realloc(r->e, (size_t)c * sizeof(*e));
        if (!e) return NULL;
        r->e = e;
        r->cap = c;
    }
    ccd_entry_t *e = &r->e[r->n++];
    memset(e, 0, sizeof(*e));
    e->peer = e->root = -1;
    e->dtype = e->redop = CCD_NONE8;
    e->status = CC_INPROGRESS;
    return e;
}

int ccd_job_add(ccd_job_t *job, ccd_rank_t *r)
{
    if (job->nloaded == job->loaded_cap) {
        uint32_t c = job->loaded_cap ? 2 * job->loaded_cap : 16;
        ccd_rank_t **v = realloc(job->loaded, (size_t)c * sizeof(*v));
        if (!v) return -1;
        job->loaded = v;
        job->loaded_cap = c;
    }
    job->loaded[job->nloaded++] = r;
    return 0;
}

/* ---- names ---------------------------------------------------------------- */

static int names_find_or_add(ccd_names_t *t, const char *name, uint32_t limit)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i], name)) return (int)i;
    if (t->n >= limit) return (int)limit - 1; /* the table is full: share the last name */
    if (t->n == t->cap) {
        uint32_t c = t->cap ? 2 * t->cap : 8;
        char **v = realloc(t->v, (size_t)c * sizeof(*v));
        if (!v) return -1;
        t->v = v;
        t->cap = c;
    }
    char *copy = strdup(name);
    if (!copy) return -1;
    t->v[t->n] = copy;
    return (int)t->n++;
}

int ccd_op_id(ccd_job_t *job, const char *name)
{
    for (unsigned i = 0; i < CC_OP_TYPE_COUNT; i++)
        if (!strcmp(cc_op_type_name((cc_op_type_t)i), name)) return (int)i;
    int k = names_find_or_add(&job->ops, name, 4096);
    return k < 0 ? -1 : CC_OP_TYPE_COUNT + k;
}

const char *ccd_op_name(const ccd_job_t *job, unsigned op)
{
    if (op < CC_OP_TYPE_COUNT) return cc_op_type_name((cc_op_type_t)op);
    op -= CC_OP_TYPE_COUNT;
    return op < job->ops.n ? job->ops.v[op] : "?";
}

int ccd_dtype_id(ccd_job_t *job, const char *name)
{
    for (unsigned i = 0; i < CC_DTYPE_COUNT; i++)
        if (!strcmp(torch_dtypes[i], name) || !strcmp(cc_dtype_name((cc_dtype_t)i), name))
            return (int)i;
    /* Ids stop below CCD_NONE8, which means "none". */
    int k = names_find_or_add(&job->dtypes, name, CCD_NONE8 - CC_DTYPE_COUNT);
    return k < 0 ? -1 : CC_DTYPE_COUNT + k;
}

const char *ccd_dtype_name(const ccd_job_t *job, unsigned dtype)
{
    if (dtype < CC_DTYPE_COUNT) return cc_dtype_name((cc_dtype_t)dtype);
    if (dtype == CCD_NONE8) return "-";
    dtype -= CC_DTYPE_COUNT;
    return dtype < job->dtypes.n ? job->dtypes.v[dtype] : "?";
}

const char *ccd_redop_name(unsigned redop)
{
    return redop < CC_REDOP_COUNT ? redop_names[redop] : "-";
}

const char *ccd_state_name(unsigned state)
{
    return state < CCD_STATE_COUNT ? state_names[state] : "?";
}

int ccd_state_parse(const char *name)
{
    for (int i = 1; i < CCD_STATE_COUNT; i++)
        if (!strcmp(state_names[i], name)) return i;
    return 0;
}

int ccd_status_parse(const char *name)
{
    static const int codes[] = {
#define CCD_STATUS_CODE(n, v, d) v,
        CC_STATUS_MAP(CCD_STATUS_CODE)
#undef CCD_STATUS_CODE
    };
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (!strcmp(cc_status_name((cc_status_t)codes[i]), name)) return codes[i];
    return CC_INPROGRESS;
}

const char *ccd_load_failure(const ccd_job_t *job)
{
    return job->comms_full ? "more than 65520 communicators in the job: beyond what ccdump "
                             "handles (a damaged or hostile file?)"
                           : "out of memory";
}

void ccd_note(ccd_job_t *job, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    /* Notes are few; past 10,000 they are counted in the last one. */
    if (job->notes.n < 10000) names_find_or_add(&job->notes, buf, 10000);
}

/* ---- communicators ---------------------------------------------------------- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Rebuild the index at twice the size when half full. */
static int comm_hash_grow(ccd_job_t *job)
{
    uint32_t cap = job->comm_hash_cap ? 2 * job->comm_hash_cap : 64;
    uint32_t *h = calloc(cap, sizeof(*h));
    if (!h) return -1;
    for (uint32_t i = 0; i < job->ncomms; i++) {
        uint32_t k = hash_str(job->comms[i].key) & (cap - 1);
        while (h[k])
            k = (k + 1) & (cap - 1);
        h[k] = i + 1;
    }
    free(job->comm_hash);
    job->comm_hash = h;
    job->comm_hash_cap = cap;
    return 0;
}

static int comm_find(const ccd_job_t *job, const char *key)
{
    if (!job->comm_hash_cap) return -1;
    uint32_t k = hash_str(key) & (job->comm_hash_cap - 1);
    for (; job->comm_hash[k]; k = (k + 1) & (job->comm_hash_cap - 1))
        if (!strcmp(job->comms[job->comm_hash[k] - 1].key, key)) return (int)job->comm_hash[k] - 1;
    return -1;
}

/*
 * Fill what is unknown: the size once, members one by one. A recorded size
 * is only a number: the member list is made from a list the input holds
 * (as long as that list), so memory follows the input, not its claims.
 */
static void comm_merge(ccd_comm_t *c, const char *name, int32_t size, const int32_t *members)
{
    if (!c->name[0] && name) snprintf(c->name, sizeof(c->name), "%s", name);
    if (c->size < 0 && size >= 0 && size <= CCD_MAX_WORLD) c->size = size;
    if (!members || size != c->size || size <= 0) return;
    if (!c->members) {
        c->members = malloc((size_t)size * sizeof(int32_t));
        if (!c->members) return;
        c->nlisted = size;
        for (int32_t i = 0; i < size; i++)
            c->members[i] = -1;
    }
    /* Files are not trusted: a member outside the ranks ccdump handles is unknown. */
    for (int32_t i = 0; i < c->nlisted; i++)
        if (c->members[i] < 0 && members[i] >= 0 && members[i] < CCD_MAX_WORLD)
            c->members[i] = members[i];
}

int ccd_comm_intern(ccd_job_t *job, const char *key, const char *name, int32_t size,
                    const int32_t *members)
{
    int i = comm_find(job, key);
    if (i < 0) {
        if (job->ncomms >= CCD_MAX_COMMS) {
            job->comms_full = 1;
            return -1;
        }
        if (2 * (job->ncomms + 1) > job->comm_hash_cap && comm_hash_grow(job)) return -1;
        if (job->ncomms == job->comms_cap) {
            uint32_t c = job->comms_cap ? 2 * job->comms_cap : 16;
            ccd_comm_t *v = realloc(job->comms, (size_t)c * sizeof(*v));
            if (!v) return -1;
            job->comms = v;
            job->comms_cap = c;
        }
        ccd_comm_t *c = &job->comms[job->ncomms];
        memset(c, 0, sizeof(*c));
        snprintf(c->key, sizeof(c->key), "%s", key);
        c->size = -1;
        c->id = strtoull(key, NULL, 10);
        i = (int)job->ncomms++;
        uint32_t k = hash_str(c->key) & (job->comm_hash_cap - 1);
        while (job->comm_hash[k])
            k = (k + 1) & (job->comm_hash_cap - 1);
        job->comm_hash[k] = (uint32_t)i + 1;
    }
    comm_merge(&job->comms[i], name, size, members);
    return i;
}

int ccd_comm_by_id(const ccd_job_t *job, uint64_t id)
{
    char key[24];
    snprintf(key, sizeof(key), "%llu", (unsigned long long)id);
    return id ? comm_find(job, key) : -1;
}

void ccd_comm_set_member(ccd_job_t *job, uint32_t g, int32_t crank, int32_t world)
{
    ccd_comm_t *c = &job->comms[g];
    if (crank >= 0 && crank < c->nlisted && c->members[crank] < 0 && world >= 0 &&
        world < CCD_MAX_WORLD)
        c->members[crank] = world;
}

/* Slot of g in r->comm_ix (its entry, or the empty one where it goes). */
static uint32_t rank_comm_slot(const ccd_rank_t *r, uint32_t g)
{
    uint32_t k = (g * 2654435761u) & (r->comm_ix_cap - 1);
    while (r->comm_ix[k] && r->comms[r->comm_ix[k] - 1].g != g)
        k = (k + 1) & (r->comm_ix_cap - 1);
    return k;
}

/* The index at twice the size when half full: a rank of 60k comms looks each up in O(1). */
static int rank_comm_grow(ccd_rank_t *r)
{
    uint32_t cap = r->comm_ix_cap ? 2 * r->comm_ix_cap : 16;
    uint32_t *old = r->comm_ix, ocap = r->comm_ix_cap;
    if (!(r->comm_ix = calloc(cap, sizeof(uint32_t)))) {
        r->comm_ix = old;
        return -1;
    }
    r->comm_ix_cap = cap;
    for (uint32_t i = 0; i < ocap; i++)
        if (old[i]) r->comm_ix[rank_comm_slot(r, r->comms[old[i] - 1].g)] = old[i];
    free(old);
    return 0;
}

int ccd_rank_comm(ccd_rank_t *r, uint32_t g)
{
    if (r->comm_ix_cap) {
        uint32_t k = rank_comm_slot(r, g);
        if (r->comm_ix[k]) return (int)r->comm_ix[k] - 1;
    }
    if (r->ncomms >= CCD_MAX_COMMS) return -1;
    if (2 * (r->ncomms + 1) > r->comm_ix_cap && rank_comm_grow(r)) return -1;
    if (r->ncomms == r->comms_cap) {
        uint32_t c = r->comms_cap ? 2 * r->comms_cap : 8;
        ccd_rcomm_t *v = realloc(r->comms, (size_t)c * sizeof(*v));
        if (!v) return -1;
        r->comms = v;
        r->comms_cap = c;
    }
    ccd_rcomm_t *v = &r->comms[r->ncomms];
    memset(v, 0, sizeof(*v));
    v->g = g;
    v->rank = -1;
    r->comm_ix[rank_comm_slot(r, g)] = r->ncomms + 1;
    return (int)r->ncomms++;
}

/* ---- formatting -------------------------------------------------------------- */

void ccd_fmt_ranks(char *buf, size_t len, const int32_t *ranks, uint32_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && ranks[j + 1] == ranks[j] + 1)
            j++;
        char item[40];
        if (j > i)
            snprintf(item, sizeof(item), "%s%d-%d", i ? ", " : "", ranks[i], ranks[j]);
        else
            snprintf(item, sizeof(item), "%s%d", i ? ", " : "", ranks[i]);
        if (o + strlen(item) + 6 >= len) {
            snprintf(buf + o, len - o, ", ...");
            return;
        }
        o += (size_t)snprintf(buf + o, len - o, "%s", item);
        i = j + 1;
    }
}

void ccd_fmt_dur(char *buf, size_t len, uint64_t ns)
{
    if (ns >= 172800000000000ull)
        snprintf(buf, len, "%.1f days", (double)ns / 86400e9);
    else if (ns >= 7200000000000ull)
        snprintf(buf, len, "%.1f h", (double)ns / 3600e9);
    else if (ns >= 120000000000ull)
        snprintf(buf, len, "%.1f min", (double)ns / 60e9);
    else if (ns >= 100000000000ull)
        snprintf(buf, len, "%.0f s", (double)ns / 1e9);
    else if (ns >= 1000000000ull)
        snprintf(buf, len, "%.2f s", (double)ns / 1e9);
    else if (ns >= 1000000ull)
        snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(buf, len, "%.0f us", (double)ns / 1e3);
}

void ccd_put_safe(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch >= 0x7f || ch == '\\')
            fprintf(out, "\\x%02x", ch);
        else
            fputc(ch, out);
    }
}
