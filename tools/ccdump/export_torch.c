/*
 * export_torch.c - one rank's dump entries as PyTorch's flight recorder
 * would have written them for the same job (`ccdump export --torch`;
 * export.c writes the pickle). The rules come from PyTorch's
 * ProcessGroupNCCL, FlightRecorder and its analyzer (fr_trace):
 *  - op names: only those the analyzer knows (its COLLECTIVES, P2P and
 *    "coalesced"); an entry it would not know is left out;
 *  - sizes: as ProcessGroupNCCL records each op (reduce and broadcast in
 *    place on every rank, all_gather's output [n, count], a non-root
 *    gather's output one undefined tensor, [[0]] "Undefined", ...);
 *  - numbers: one collective, one p2p and one op counter per process group;
 *    a grouped send/recv (ccomm's batch_op_issue) is a coalesced batch whose
 *    members and "nccl:coalesced" end share one p2p number; send/recv name
 *    the ranks by their place in the sorted member list, as the analyzer
 *    reads them.
 * ccomm's own names and numbers stay under each entry's "ccomm" key, where
 * ccdump reads them back. Dumps that came from PyTorch keep their own
 * numbers and sizes; their names are normalised and their entries checked.
 */
#include <stdlib.h>
#include <string.h>

#include "export.h"

/* One process group of the rank: its members and PyTorch's counters. */
typedef struct xpg {
    const char *name;      /* pg_config key == process_group[0] */
    int32_t n;             /* members, 0 when not known */
    int32_t *ranks;        /* world rank of comm rank i, as written */
    int32_t *sorted;       /* the same, ascending: the analyzer's order */
    int64_t coll, p2p, op; /* the last numbers given */
    int in_batch;          /* the last entry was a batch member */
    int seen_coll;         /* a collective was seen (prepare_ccomm) */
} xpg_t;

typedef struct xctx {
    const ccd_rank_t *r;
    json_t *entries; /* the dump's */
    int ccomm;       /* ccomm's dump: numbered and sized here */
    xpg_t *pg;
    uint32_t npg;
    uint8_t *member;    /* entry i is in a grouped send/recv (ccomm) */
    json_t *out, *left; /* exported entries; what was left out */
} xctx_t;

/* The analyzer's names (torch/distributed/flight_recorder/components/types.py). */
static const char *const known_ops[] = {"broadcast",
                                        "_broadcast_oop",
                                        "reduce",
                                        "_reduce_oop",
                                        "all_gather",
                                        "all_gather_single",
                                        "all_gather_v",
                                        "all_reduce",
                                        "_all_gather_base",
                                        "all_gather_into_tensor_coalesced",
                                        "reduce_scatter",
                                        "reduce_scatter_single",
                                        "reduce_scatter_v",
                                        "reduce_scatter_tensor_coalesced",
                                        "_reduce_scatter_base",
                                        "gather",
                                        "scatter",
                                        "all_to_all",
                                        "all_to_all_single",
                                        "all_to_all_v_single",
                                        "all_reduce_barrier",
                                        "barrier",
                                        "split",
                                        "new_window",
                                        "allreduce_coalesced",
                                        "ALLGATHER_coalesced",
                                        "REDUCE_SCATTER_coalesced",
                                        "send",
                                        "recv",
                                        "coalesced"};

/* Names other writers use for the ops above: ccomm's, torchcomms', older spellings. */
static const char *const aliases[][2] = {
    {"barrier", "all_reduce_barrier"},
    {"monitored_barrier", "all_reduce_barrier"},
    {"all_to_all_v", "all_to_all"},
    {"gather_v", "gather"},
    {"scatter_v", "scatter"},
    {"gather_single", "gather"},
    {"all_gather_bytes", "all_gather"},
    {"broadcast_bytes", "broadcast"},
    {"gather_bytes", "gather"},
    {"scatter_bytes", "scatter"},
    {"send_bytes", "send"},
    {"recv_bytes", "recv"},
    {"batch_op_issue", "coalesced"},
    {"_allgather_base", "_all_gather_base"},
    {"allgather", "all_gather"},
    {"allreduce", "all_reduce"},
    {"alltoall", "all_to_all"},
    {"alltoall_base", "all_to_all"},
    {"reduce_scatter_base", "_reduce_scatter_base"},
    {"allgather_into_tensor_coalesced", "all_gather_into_tensor_coalesced"}};

const char *ccd_torch_op(const char *op, int from_ccomm)
{
    /* ccomm's "barrier" is an allreduce of one element, PyTorch's all_reduce_barrier;
     * PyTorch's own "barrier" (torchcomms) is a name its analyzer knows. */
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (!strcmp(op, aliases[i][0]) && (from_ccomm || strcmp(op, "barrier")))
            return aliases[i][1];
    for (size_t i = 0; i < sizeof(known_ops) / sizeof(known_ops[0]); i++)
        if (!strcmp(op, known_ops[i])) return known_ops[i];
    return NULL;
}

/* ---- small JSON helpers ------------------------------------------------------------------- */

static int64_t num(const json_t *v, int64_t dflt)
{
    if (json_is_integer(v)) return (int64_t)json_integer_value(v);
    const char *s = json_string_value(v);
    if (!s || !*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 18) return dflt;
    return strtoll(s, NULL, 10);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

/* [[d0, d1, ...]]: one tensor of the given shape. */
static json_t *shape(int nd, int64_t d0, int64_t d1)
{
    json_t *t = nd == 1 ? json_pack("[I]", (json_int_t)d0)
                        : json_pack("[I,I]", (json_int_t)d0, (json_int_t)d1);
    return json_pack("[o]", t);
}

/* `n` tensors of `c` elements, each of dtype dt: (sizes, dtypes). */
static void tensors(int64_t n, int64_t c, const char *dt, json_t **sizes, json_t **dtypes)
{
    *sizes = json_array();
    *dtypes = json_array();
    for (int64_t i = 0; i < n; i++) {
        json_array_append_new(*sizes, json_pack("[I]", (json_int_t)c));
        json_array_append_new(*dtypes, json_string(dt));
    }
}

/* A non-root's unused side of gather/scatter: one undefined tensor, as PyTorch records it. */
static void undefined(json_t **sizes, json_t **dtypes)
{
    *sizes = json_pack("[[i]]", 0);
    *dtypes = json_pack("[s]", "Undefined");
}

/* ---- process groups ----------------------------------------------------------------------- */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* "[0, 1, 2]" or [0, 1, 2]; 0 members when malformed or empty. */
static int32_t parse_members(const json_t *v, int32_t **out)
{
    size_t cap = json_is_array(v) ? json_array_size(v) : json_string_length(v);
    if (!cap || cap > CCD_MAX_WORLD || !(*out = malloc(cap * sizeof(int32_t)))) return 0;
    int32_t n = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < cap; i++) {
            int64_t x = num(json_array_get(v, i), -1);
            if (x < 0 || x >= CCD_MAX_WORLD) return 0;
            (*out)[n++] = (int32_t)x;
        }
        return n;
    }
    const char *s = json_string_value(v);
    s += strspn(s, " ");
    if (*s++ != '[') return 0;
    for (;;) {
        s += strspn(s, " ,");
        if (*s == ']') return s[1 + strspn(s + 1, " ")] ? 0 : n;
        char *end;
        long x = strtol(s, &end, 10);
        if (end == s || x < 0 || x >= CCD_MAX_WORLD || (size_t)n >= cap) return 0;
        (*out)[n++] = (int32_t)x;
        s = end;
    }
}

/* "[]", spaces allowed around and inside. */
static int empty_list(const char *t)
{
    t += strspn(t, " ");
    if (*t++ != '[') return 0;
    t += strspn(t, " ");
    if (*t++ != ']') return 0;
    return !t[strspn(t, " ")];
}

char *ccd_torch_ranks(const json_t *v)
{
    int32_t *m = NULL, n = parse_members(v, &m);
    const char *t = json_string_value(v);
    int empty = json_is_array(v) ? !json_array_size(v) : t && empty_list(t);
    char *out = NULL;
    size_t len = 0;
    FILE *f = n > 0 || empty ? open_memstream(&out, &len) : NULL;
    if (f) {
        fputc('[', f);
        for (int32_t i = 0; i < n; i++)
            fprintf(f, "%s%d", i ? ", " : "", m[i]);
        fputc(']', f);
        fclose(f);
    }
    free(m);
    return out;
}

static int load_pgs(xctx_t *x, const json_t *cfg)
{
    const char *k;
    json_t *pg;
    x->pg = calloc(json_object_size(cfg) + 1, sizeof(xpg_t));
    if (!x->pg) return -1;
    json_object_foreach((json_t *)cfg, k, pg)
    {
        xpg_t *p = &x->pg[x->npg++];
        p->name = k;
        p->n = parse_members(json_object_get(pg, "ranks"), &p->ranks);
        if (!p->n) continue;
        if (!(p->sorted = malloc((size_t)p->n * sizeof(int32_t)))) return -1;
        memcpy(p->sorted, p->ranks, (size_t)p->n * sizeof(int32_t));
        qsort(p->sorted, (size_t)p->n, sizeof(int32_t), cmp_i32);
        for (int32_t i = 1; i < p->n; i++)
            if (p->sorted[i] == p->sorted[i - 1]) p->n = 0; /* a rank twice: malformed */
    }
    return 0;
}

static xpg_t *find_pg(xctx_t *x, const json_t *e)
{
    const char *name = json_string_value(json_array_get(json_object_get(e, "process_group"), 0));
    for (uint32_t i = 0; name && i < x->npg; i++)
        if (!strcmp(x->pg[i].name, name)) return &x->pg[i];
    return NULL;
}

/* The place of world rank w in the sorted members (the analyzer's rank numbers), or -1. */
static int32_t place(const xpg_t *p, int32_t w)
{
    const int32_t *at = bsearch(&w, p->sorted, (size_t)p->n, sizeof(int32_t), cmp_i32);
    return at ? (int32_t)(at - p->sorted) : -1;
}

/* The comm rank of world rank w (its place in the members as written), or -1. */
static int32_t comm_rank(const xpg_t *p, int32_t w)
{
    for (int32_t i = 0; i < p->n; i++)
        if (p->ranks[i] == w) return i;
    return -1;
}

/* ---- leaving out ---------------------------------------------------------------------------- */

/* Records that entry i was left out; `keep` keeps the entry itself (an unknown op name). */
static void leave_out(xctx_t *x, size_t i, const json_t *e, int keep, const char *why)
{
    json_t *rid = json_is_object(e) ? json_object_get(e, "record_id") : NULL;
    json_t *o = json_pack("{s:I, s:O*, s:s}", "index", (json_int_t)i, "record_id",
                          json_is_integer(rid) ? rid : NULL, "why", why);
    if (o && keep) json_object_set(o, "entry", (json_t *)e);
    json_array_append_new(x->left, o);
}

/* ---- ccomm's entries ------------------------------------------------------------------------ */

/* ccomm's own op name of an entry ("all_reduce"), from ccomm.op or "ccomm:<op>". */
static void ccomm_op(const json_t *e, char *op, size_t len)
{
    const char *own = str(json_object_get(e, "ccomm"), "op"), *p = str(e, "profiling_name");
    if (own) {
        snprintf(op, len, "%s", own);
        return;
    }
    p = p && !strncmp(p, "ccomm:", 6) ? p + 6 : "";
    snprintf(op, len, "%.*s", (int)strcspn(p, " "), p);
}

static int is_send(const char *op)
{
    return !strcmp(op, "send") || !strcmp(op, "send_bytes");
}

static int is_p2p_op(const char *op)
{
    return is_send(op) || !strcmp(op, "recv") || !strcmp(op, "recv_bytes");
}

static uint64_t time_of(const json_t *e, const char *k)
{
    int64_t v = num(json_object_get(e, k), 0);
    return v > 0 ? (uint64_t)v : 0;
}

/* The model's entry of a record id (r->e is sorted by record id), or NULL. */
static const ccd_entry_t *model_entry(const ccd_rank_t *r, int64_t rid)
{
    uint32_t lo = 0, hi = r->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((int64_t)r->e[mid].record_id < rid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->n && (int64_t)r->e[lo].record_id == rid ? &r->e[lo] : NULL;
}

/*
 * The members of the grouped send/recv ending at entry g: the sends and
 * receives of the same group and thread just before it (only they may be
 * called inside a group). From a ring, the group's byte counts (sent,
 * received) say exactly how many; from a dump, members are those that
 * started after the group was issued. Returns the number claimed, -1 none.
 */
static int claim_members(xctx_t *x, size_t g)
{
    const json_t *ge = json_array_get(x->entries, g);
    const xpg_t *pg = find_pg(x, ge);
    const char *tid = str(ge, "thread_id");
    const ccd_entry_t *gm = x->r->src == CCD_SRC_RING
                                ? model_entry(x->r, num(json_object_get(ge, "record_id"), -1))
                                : NULL;
    uint64_t sent = 0, recvd = 0, t_issue = time_of(ge, "time_created_ns");
    int n = 0;
    for (size_t j = g; j-- > 0;) {
        const json_t *e = json_array_get(x->entries, j);
        char op[48];
        if (!json_is_object(e) || find_pg(x, e) != pg) continue;
        ccomm_op(e, op, sizeof(op));
        const char *t = str(e, "thread_id");
        if (!is_p2p_op(op) || x->member[j] || !t || !tid || strcmp(t, tid)) break;
        if (gm) {
            const ccd_entry_t *m = model_entry(x->r, num(json_object_get(e, "record_id"), -1));
            if (!m || (gm->in_count == sent && gm->out_count == recvd)) break;
            *(is_send(op) ? &sent : &recvd) += m->bytes;
        } else {
            uint64_t ts = time_of(e, "time_discovered_started_ns");
            if (ts && ts < t_issue) break;
        }
        x->member[j] = 1;
        n++;
    }
    if (gm && (gm->in_count != sent || gm->out_count != recvd)) return -1;
    return n ? n : -1;
}

/* What PyTorch records as the tensors of a ccomm op (see the file comment). */
static void ccomm_sizes(const char *op, const char *top, const json_t *e, const xpg_t *pg,
                        int32_t me, json_t *o)
{
    json_t *cc = json_object_get(e, "ccomm"), *is = NULL, *id = NULL, *os = NULL, *od = NULL;
    int64_t in = num(json_array_get(json_array_get(json_object_get(e, "input_sizes"), 0), 0), 0);
    int64_t out = num(json_array_get(json_array_get(json_object_get(e, "output_sizes"), 0), 0), 0);
    int64_t n = pg->n, c = in > out ? in : out;
    const char *dt = json_string_value(json_array_get(json_object_get(e, "input_dtypes"), 0));
    if (!dt) dt = json_string_value(json_array_get(json_object_get(e, "output_dtypes"), 0));
    if (!dt) dt = "Byte";
    int v = strstr(op, "_v") != NULL, root = num(json_object_get(cc, "root"), -1) == me;
    if (!strcmp(top, "coalesced")) { /* a batch's end, or a broadcast of several buffers */
        is = json_array(), os = json_array(), id = json_array(), od = json_array();
    } else if (!strcmp(top, "all_reduce_barrier")) { /* an allreduce of one byte */
        dt = "Byte", is = shape(1, 1, 0), os = shape(1, 1, 0);
    } else if (!strcmp(top, "all_gather") && !v) { /* the outputs flattened: [n, count] */
        is = shape(1, in, 0), os = shape(2, n, in);
    } else if (!strcmp(top, "reduce_scatter") && !v) {
        is = shape(2, n, out), os = shape(1, out, 0);
    } else if (!strcmp(top, "gather")) {
        is = shape(1, in, 0);
        if (!root)
            undefined(&os, &od);
        else if (v)
            os = shape(1, out, 0);
        else
            tensors(n, in, dt, &os, &od);
    } else if (!strcmp(top, "scatter")) {
        /* The analyzer checks a scatter's outputs across ranks and not its inputs: the
         * root's list is the input (ProcessGroupNCCL records the two sides swapped). */
        os = shape(1, out, 0);
        if (!root)
            undefined(&is, &id);
        else if (v)
            is = shape(1, in, 0);
        else
            tensors(n, out, dt, &is, &id);
    } else if (v || !strcmp(top, "all_to_all") || strstr(top, "_coalesced")) {
        is = shape(1, in, 0), os = shape(1, out, 0);
    } else { /* all_reduce, broadcast, reduce (in place on every rank), send, recv */
        is = shape(1, c, 0), os = shape(1, c, 0);
    }
    json_object_set_new(o, "input_sizes", is);
    json_object_set_new(o, "input_dtypes", id ? id : json_pack("[s]", dt));
    json_object_set_new(o, "output_sizes", os);
    json_object_set_new(o, "output_dtypes", od ? od : json_pack("[s]", dt));
}

/* A ccomm coalesced collective as PyTorch's one-entry coalesced op of the same kind. */
static const char *coalesced_kind(const json_t *e, const xpg_t *pg)
{
    json_t *cc = json_object_get(e, "ccomm");
    const char *redop = str(cc, "redop");
    int64_t in = num(json_array_get(json_array_get(json_object_get(e, "input_sizes"), 0), 0), 0);
    int64_t out = num(json_array_get(json_array_get(json_object_get(e, "output_sizes"), 0), 0), 0);
    if (num(json_object_get(cc, "root"), -1) >= 0) return "coalesced"; /* a broadcast */
    if (redop && *redop)
        return in == out ? "allreduce_coalesced" : "reduce_scatter_tensor_coalesced";
    return out == in * pg->n ? "all_gather_into_tensor_coalesced" : NULL;
}

/* "nccl:send 0->1" with the analyzer's rank numbers (places in the sorted members). */
static int p2p_name(const xctx_t *x, const xpg_t *pg, const json_t *e, const char *top, char *buf,
                    size_t len)
{
    int64_t peer = num(json_object_get(json_object_get(e, "ccomm"), "peer"), -1);
    int32_t me = place(pg, x->r->rank);
    int32_t other = peer >= 0 && peer < pg->n ? place(pg, pg->ranks[peer]) : -1;
    if (me < 0 || other < 0) return -1;
    snprintf(buf, len, "nccl:%s %d%s%d", top, me, strcmp(top, "send") ? "<-" : "->", other);
    return 0;
}

/* How ProcessGroupNCCL counts an entry: a collective, a plain send/recv, a member of a
 * batch (grouped send/recv), the batch's coalesced end. */
enum { COLL, P2P, MEMBER, END };

/* PyTorch's numbers for the next entry of pg (ProcessGroupNCCL's counters). */
static void number(xpg_t *pg, const json_t *e, int kind, json_t *o)
{
    if (kind == COLL) {
        pg->coll = num(json_object_get(e, "collective_seq_id"), pg->coll + 1);
        pg->op++;
    } else if (kind != END) {
        /* A batch takes one p2p number, at its first member; each op counts once. */
        if (kind == P2P || !pg->in_batch) pg->p2p++;
        pg->op++;
    }
    pg->in_batch = kind == MEMBER;
    json_object_set_new(o, "collective_seq_id", json_integer(pg->coll));
    json_object_set_new(o, "p2p_seq_id", json_integer(pg->p2p));
    json_object_set_new(o, "op_id", json_integer(pg->op));
}

/* ccomm's keys of the entry, with its own name and numbers (ccdump reads them back). */
static void keep_own(json_t *o, const json_t *e, const char *op)
{
    json_t *cc = json_is_object(json_object_get(e, "ccomm"))
                     ? json_copy(json_object_get(e, "ccomm"))
                     : json_object();
    json_object_set_new(cc, "op", json_string(op));
    json_object_set(cc, "coll_seq", json_object_get(e, "collective_seq_id"));
    json_object_set(cc, "p2p_seq", json_object_get(e, "p2p_seq_id"));
    json_object_set(cc, "op_id", json_object_get(e, "op_id"));
    /* ccomm's counts: PyTorch's shapes say other things (an all_gather's [n, count]). */
    json_object_set(cc, "input_sizes", json_object_get(e, "input_sizes"));
    json_object_set(cc, "input_dtypes", json_object_get(e, "input_dtypes"));
    json_object_set(cc, "output_sizes", json_object_get(e, "output_sizes"));
    json_object_set(cc, "output_dtypes", json_object_get(e, "output_dtypes"));
    json_object_set_new(o, "ccomm", cc);
}

static void from_ccomm(xctx_t *x, size_t i, const json_t *e)
{
    char op[48], pname[96], why[160];
    ccomm_op(e, op, sizeof(op));
    xpg_t *pg = find_pg(x, e);
    const char *top = ccd_torch_op(op, 1);
    int end = !strcmp(op, "batch_op_issue"), p2p = is_p2p_op(op);
    if (!pg || !pg->n || place(pg, x->r->rank) < 0) {
        leave_out(x, i, e, 0, "its process group's members (this rank among them) are not known");
        return;
    }
    if (!strcmp(op, "coalesced")) top = coalesced_kind(e, pg);
    if (!top) {
        snprintf(why, sizeof(why), "op \"%.40s\" has no name PyTorch's analyzer knows", op);
        leave_out(x, i, e, 1, why);
        return;
    }
    if (end && x->member[i] != 2) {
        leave_out(x, i, e, 0, "a grouped send/recv whose members are not all in the record");
        return;
    }
    snprintf(pname, sizeof(pname), "nccl:%s", top);
    if (p2p && p2p_name(x, pg, e, top, pname, sizeof(pname))) {
        leave_out(x, i, e, 0, "its peer is not a member of its process group");
        return;
    }
    json_t *o = json_copy((json_t *)e);
    if (!o) return;
    json_object_set_new(o, "profiling_name", json_string(pname));
    json_object_set_new(o, "is_p2p", json_boolean(p2p || end));
    ccomm_sizes(op, top, e, pg, comm_rank(pg, x->r->rank), o);
    number(pg, e, end ? END : !p2p ? COLL : x->member[i] ? MEMBER : P2P, o);
    keep_own(o, e, op);
    json_array_append_new(x->out, o);
}

/* ---- PyTorch's entries ---------------------------------------------------------------------- */

static int nonneg_int(const json_t *e, const char *k)
{
    return json_is_integer(json_object_get(e, k)) && json_integer_value(json_object_get(e, k)) >= 0;
}

/* [[int, ...], ...] with every size a non-negative int. */
static int sizes_ok(const json_t *v)
{
    size_t i, j;
    json_t *t, *d;
    if (!json_is_array(v)) return 0;
    json_array_foreach(v, i, t)
    {
        if (!json_is_array(t)) return 0;
        json_array_foreach(t, j, d) if (!json_is_integer(d) || json_integer_value(d) < 0) return 0;
    }
    return 1;
}

static int strings_ok(const json_t *v)
{
    size_t i;
    json_t *s;
    if (!json_is_array(v)) return 0;
    json_array_foreach(v, i, s) if (!json_is_string(s)) return 0;
    return 1;
}

/* Why PyTorch's analyzer could not take the entry as it is, or NULL. */
static const char *torch_problem(xctx_t *x, const json_t *e, const xpg_t **pgp)
{
    static const char *const ints[] = {"record_id", "collective_seq_id", "p2p_seq_id",
                                       "time_created_ns"};
    static const char *const lists[] = {"input_sizes", "output_sizes", "input_dtypes",
                                        "output_dtypes"};
    const json_t *pg = json_object_get(e, "process_group");
    const char *st = str(e, "state"), *p = str(e, "profiling_name");
    if (!json_is_object(e)) return "not an object";
    for (size_t k = 0; k < 4; k++)
        if (!nonneg_int(e, ints[k]))
            return "a number (record_id, *_seq_id, time_created_ns) missing or not a non-negative "
                   "integer";
    for (size_t k = 0; k < 4; k++)
        if (!(k < 2 ? sizes_ok(json_object_get(e, lists[k]))
                    : strings_ok(json_object_get(e, lists[k]))))
            return "its sizes or dtypes are missing or malformed";
    if (!json_is_array(pg) || json_array_size(pg) != 2 || !json_is_string(json_array_get(pg, 0)) ||
        !json_is_string(json_array_get(pg, 1)))
        return "process_group is not a [name, desc] pair";
    if (!(*pgp = find_pg(x, e)) || !(*pgp)->n)
        return "its process group is not in pg_config (or has no members)";
    if (!st || (strcmp(st, "scheduled") && strcmp(st, "started") && strcmp(st, "completed")))
        return "state is not scheduled, started or completed";
    if (!json_is_boolean(json_object_get(e, "is_p2p"))) return "is_p2p is not a boolean";
    if (!p || !strchr(p, ':') || strchr(strchr(p, ':') + 1, ':'))
        return "profiling_name is not \"<backend>:<op>\"";
    return NULL;
}

/* "send 0->1" / "recv 1<-0": both ranks members, the first this rank. 0 ok. */
static int torch_p2p_ok(const xctx_t *x, const xpg_t *pg, const char *top, const char *meta)
{
    long a, b;
    char arrow[3], tail;
    if (!meta || sscanf(meta, "%ld%2[<>-]%ld%c", &a, arrow, &b, &tail) != 3) return -1;
    if (strcmp(arrow, strcmp(top, "send") ? "<-" : "->")) return -1;
    return a >= 0 && b >= 0 && a < pg->n && b < pg->n && pg->sorted[a] == x->r->rank ? 0 : -1;
}

static void from_torch(xctx_t *x, size_t i, const json_t *e)
{
    const xpg_t *pg = NULL;
    const char *why = torch_problem(x, e, &pg);
    char op[64], pname[160], msg[160];
    if (why) {
        leave_out(x, i, e, 0, why);
        return;
    }
    const char *p = str(e, "profiling_name"), *name = strchr(p, ':') + 1, *sp = strchr(name, ' ');
    snprintf(op, sizeof(op), "%.*s", (int)(sp ? (size_t)(sp - name) : strlen(name)), name);
    const char *top = ccd_torch_op(op, 0);
    if (!top) {
        snprintf(msg, sizeof(msg), "op \"%.40s\" is not one PyTorch's analyzer knows", op);
        leave_out(x, i, e, 1, msg);
        return;
    }
    int p2p = !strcmp(top, "send") || !strcmp(top, "recv");
    if (p2p && torch_p2p_ok(x, pg, top, sp ? sp + 1 : NULL)) {
        leave_out(x, i, e, 0, "a send/recv whose ranks are not \"<me>-><peer>\" of its group");
        return;
    }
    if (p2p != json_is_true(json_object_get(e, "is_p2p")) && strcmp(top, "coalesced")) {
        leave_out(x, i, e, 0, "is_p2p disagrees with its op");
        return;
    }
    snprintf(pname, sizeof(pname), "%s:%s%s%s", strncmp(p, "xccl:", 5) ? "nccl" : "xccl", top,
             p2p ? " " : "", p2p ? sp + 1 : "");
    json_t *o = json_copy((json_t *)e);
    if (!o) return;
    if (strcmp(pname, p)) {
        json_t *cc = json_is_object(json_object_get(e, "ccomm"))
                         ? json_copy(json_object_get(e, "ccomm"))
                         : json_object();
        json_object_set_new(cc, "profiling_name", json_string(p));
        json_object_set_new(o, "ccomm", cc);
    }
    json_object_set_new(o, "profiling_name", json_string(pname));
    json_array_append_new(x->out, o);
}

/* ---- the whole record ----------------------------------------------------------------------- */

/* ccomm's first collective number per group: p2p ops before it carry the one before. */
static void prepare_ccomm(xctx_t *x)
{
    size_t i;
    json_t *e;
    json_array_foreach(x->entries, i, e)
    {
        char op[48];
        xpg_t *pg = json_is_object(e) ? find_pg(x, e) : NULL;
        if (!pg) continue;
        ccomm_op(e, op, sizeof(op));
        if (!strcmp(op, "batch_op_issue"))
            x->member[i] = claim_members(x, i) > 0 ? 2 : 0;
        else if (!is_p2p_op(op) && !pg->seen_coll) {
            int64_t c = num(json_object_get(e, "collective_seq_id"), 1);
            pg->coll = c > 0 ? c - 1 : 0;
            pg->seen_coll = 1;
        }
    }
}

int ccd_torch_entries(const ccd_rank_t *r, json_t *doc, json_t **entries, json_t **left)
{
    xctx_t x = {.r = r, .entries = json_object_get(doc, "entries")};
    x.ccomm = json_is_string(json_object_get(json_object_get(doc, "ccomm"), "format_version"));
    x.out = json_array();
    x.left = json_array();
    x.member = calloc(json_array_size(x.entries) + 1, 1);
    int rc = -1;
    if (!x.out || !x.left || !x.member || load_pgs(&x, json_object_get(doc, "pg_config")))
        goto done;
    if (x.entries && !json_is_array(x.entries)) {
        leave_out(&x, 0, NULL, 0, "\"entries\" is not a list: no entry exported");
        x.entries = NULL;
    }
    if (x.ccomm) prepare_ccomm(&x);
    size_t i;
    json_t *e;
    json_array_foreach(x.entries, i, e)
    {
        if (x.ccomm && json_is_object(e))
            from_ccomm(&x, i, e);
        else
            from_torch(&x, i, e);
    }
    rc = 0;
done:
    for (uint32_t k = 0; x.pg && k < x.npg; k++)
        free(x.pg[k].ranks), free(x.pg[k].sorted);
    free(x.pg);
    free(x.member);
    if (rc) {
        json_decref(x.out), json_decref(x.left);
        x.out = x.left = NULL;
    }
    *entries = x.out;
    *left = x.left;
    return rc;
}
