/*
 * clog_hooks.c - the clog subscribers on the hook chains.
 *
 * On the op path (Q, S, E, W) a hook claims a slot of the logger's ring and
 * fills its fixed-size record there from the op's info: no lock, no
 * allocation, no system call (the clock is read through the vDSO), no
 * formatting. Communicator lifecycle events and aborts are rare and off the
 * op path; they may allocate (a split's ranks list, an abort's message), and
 * the abort hook waits, bounded, for the writer to put everything on disk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "ccomm/comm.h"
#include "clog/clog_internal.h"

/* The class of each op type, from the table in ccomm/types.h. */
/* Window ops (RMA) log as point-to-point ops: one peer, no collective seq. */
enum { CLS_COLL, CLS_P2P, CLS_LIFE, CLS_RMA = CLS_P2P };
static const unsigned char op_class[] = {
#define CC__CLOG_CLASS(name, s, cls) CLS_##cls,
    CC_OP_TYPE_MAP(CC__CLOG_CLASS)
#undef CC__CLOG_CLASS
};

/* Out-of-range types count as lifecycle: they are skipped, never used as an index. */
static int is_lifecycle(cc_op_type_t t)
{
    return (unsigned)t >= CC_OP_TYPE_COUNT || op_class[t] == CLS_LIFE;
}

/*
 * A heap block "<name>\0<rest>" (rest may be NULL: then "<name>\0\0"), the
 * name cut at CC__CLOG_NAME_MAX - 1 bytes; NULL when out of memory. Off the
 * op path: NEW and A records only.
 */
static char *name_and(const char *name, const char *rest)
{
    size_t n = name ? strnlen(name, CC__CLOG_NAME_MAX - 1) : 0;
    size_t m = rest ? strlen(rest) : 0;
    char *s = malloc(n + m + 2);
    if (!s) return NULL;
    if (n) memcpy(s, name, n);
    s[n] = '\0';
    if (m) memcpy(s + n + 1, rest, m);
    s[n + 1 + m] = '\0';
    return s;
}

static size_t named_hash(uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 56) & (CC__CLOG_NAMED - 1);
}

/*
 * Find comm id's place in the named table, claiming a free one when absent.
 * Returns the index, or -1 when the table is full; *claimed says this call
 * took the place (its caller must queue the NEW record and mark it ready).
 */
static int named_slot(cc_clog_t *c, uint64_t id, int *claimed)
{
    *claimed = 0;
    size_t j = named_hash(id);
    for (size_t k = 0; k < CC__CLOG_NAMED; k++, j = (j + 1) & (CC__CLOG_NAMED - 1)) {
        uint64_t v = atomic_load_explicit(&c->named_id[j], memory_order_acquire);
        if (v == id) return (int)j;
        if (v) continue;
        uint64_t zero = 0;
        if (atomic_compare_exchange_strong(&c->named_id[j], &zero, id)) {
            *claimed = 1;
            return (int)j;
        }
        if (zero == id) return (int)j; /* another thread claimed it for the same comm */
    }
    return -1;
}

/*
 * Slow path of named(): a comm other than the last op's. Its first op on a
 * logger that never saw it created (attached to all comms after they were
 * made) queues its NEW record here, once; a thread that races it waits,
 * bounded, until that record is queued, so no op record precedes it.
 */
static void name_comm(cc_clog_t *c, const cc_op_info_t *op)
{
    int claimed, j = -1;
    if (op->comm_id && !atomic_load_explicit(&c->named_full, memory_order_relaxed))
        j = named_slot(c, op->comm_id, &claimed);
    if (j < 0) {
        /* Full: comms announced at init are still named (the writer keeps every NEW it
         * sees); only those first seen at an op, beyond the table, read "comm=?". */
        atomic_store_explicit(&c->named_full, 1, memory_order_relaxed);
        atomic_store_explicit(&c->last_named, op->comm_id, memory_order_relaxed);
        return;
    }
    if (claimed) {
        cc__clog_push_new_comm(c, op);
    } else {
        for (long i = 0; i < (1L << 20) && !atomic_load_explicit(&c->named_ready[j],
                                                                 memory_order_acquire); i++)
            cc__cpu_relax();
    }
    atomic_store_explicit(&c->last_named, op->comm_id, memory_order_relaxed);
}

/* Make sure the writer will know op's comm by name: one load when it is the last op's. */
static inline void named(cc_clog_t *c, const cc_op_info_t *op)
{
    if (__builtin_expect(atomic_load_explicit(&c->last_named, memory_order_relaxed) ==
                             op->comm_id, 1))
        return;
    name_comm(c, op);
}

/* The signature and identity of an op, common to every op event. */
static void fill_op(struct cc__clog_rec *r, const cc_op_info_t *op, int kind, uint64_t t)
{
    /* Every field is written (no memset): the slot still holds an older record. */
    r->kind = (uint8_t)kind;
    r->type = (uint8_t)op->type;
    /* Clamped so the writer can index its name tables without checks of its own. */
    r->dtype = (uint8_t)((unsigned)op->dtype < CC_DTYPE_COUNT ? op->dtype : CC_DTYPE_COUNT);
    r->redop = (uint8_t)((unsigned)op->redop < CC_REDOP_COUNT ? op->redop : CC_REDOP_COUNT);
    r->status = 0;
    r->root = op->root;
    r->peer = op->peer;
    r->rank = op->rank;
    r->size = op->size;
    r->op_id = op->op_id;
    /* One seq column: the number that orders this op among its peers' ops. */
    r->seq = op_class[op->type] == CLS_P2P ? op->p2p_seq : op->coll_seq;
    r->comm_id = op->comm_id;
    /* The door's own timestamp when it has one, so lines agree with the recorder. */
    r->t_ns = t ? t : cc__now_ns();
    r->t_ref_ns = 0;
    r->in_count = op->in_count;
    r->out_count = op->out_count;
    r->text = NULL; /* no name: the writer knows it by comm_id (the comm's NEW record) */
}

/*
 * An op event's record, written in its ring slot (claimed here, published by
 * the caller): no copy through the stack. NULL: the ring is full, and the
 * record is counted as dropped.
 */
static struct cc__clog_rec *op_rec(cc_clog_t *c, const cc_op_info_t *op, int kind, uint64_t t,
                                   uint64_t *pos)
{
    /* The record names no comm: its new_comm line must come first, so before the claim. */
    named(c, op);
    struct cc__clog_rec *r = cc__clog_ring_claim(&c->ring, pos);
    if (r) fill_op(r, op, kind, t);
    return r;
}

/*
 * Whether the op's Q waits for its START, to go into the ring with its S as one record: an
 * op that starts on this thread right after PRE (CC_OP_INFO_STARTS_AT_ONCE), on a logger
 * that writes both. One record an op less: it is the writer's reading of the records, on
 * another CPU, that costs the most (docs/clog-format.md, "What it costs").
 */
static inline int q_with_s(const cc_clog_t *c, const cc_op_info_t *op)
{
    return (op->flags & CC_OP_INFO_STARTS_AT_ONCE) &&
           (c->events & (CC_CLOG_Q | CC_CLOG_S)) == (CC_CLOG_Q | CC_CLOG_S);
}

cc_status_t cc__clog_on_pre(const cc_op_info_t *op, void *user)
{
    cc_clog_t *c = user;
    /* Lifecycle ops get their own lines, at POST (see cc__clog_on_post). */
    if (!(c->events & CC_CLOG_Q) || is_lifecycle(op->type) || q_with_s(c, op)) return CC_OK;
    uint64_t pos;
    if (op_rec(c, op, CC__CLOG_REC_Q, op->t_enqueue_ns, &pos)) cc__clog_ring_publish(&c->ring, pos);
    return CC_OK; /* clog never vetoes */
}

void cc__clog_on_start(const cc_op_info_t *op, void *user)
{
    cc_clog_t *c = user;
    if (!(c->events & CC_CLOG_S) || is_lifecycle(op->type)) return;
    uint64_t pos;
    int qs = q_with_s(c, op);
    struct cc__clog_rec *r =
        op_rec(c, op, qs ? CC__CLOG_REC_QS : CC__CLOG_REC_S, op->t_start_ns, &pos);
    if (!r) return;
    if (qs) r->t_ref_ns = op->t_enqueue_ns;
    cc__clog_ring_publish(&c->ring, pos);
}

/* The wait has no timestamp of its own in the info: read the clock (vDSO). */
void cc__clog_on_wait(const cc_op_info_t *op, void *user)
{
    cc_clog_t *c = user;
    if (!(c->events & CC_CLOG_W) || is_lifecycle(op->type)) return;
    uint64_t pos;
    if (op_rec(c, op, CC__CLOG_REC_W, 0, &pos)) cc__clog_ring_publish(&c->ring, pos);
}

/*
 * A comm's world ranks as compact ranges, "0-3,8,10-11" (heap, or NULL when
 * they cannot be known). Runs once per comm creation, off the op path.
 */
static char *ranks_text(cc_comm_t *comm, int size)
{
    if (!comm || size <= 0) return NULL;
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = '\0';
    /* Runs of consecutive world ranks become "a-b": splits by color are often runs. */
    for (int i = 0; i < size;) {
        int first = cc_comm_world_rank(comm, i), j = i + 1;
        if (first < 0) goto fail;
        while (j < size && cc_comm_world_rank(comm, j) == first + (j - i))
            j++;
        if (cap - len < 40) {
            char *n = realloc(s, cap *= 2);
            if (!n) goto fail;
            s = n;
        }
        int w = j - i == 1 ? snprintf(s + len, cap - len, "%s%d", len ? "," : "", first)
                           : snprintf(s + len, cap - len, "%s%d-%d", len ? "," : "", first,
                                      first + (j - i - 1));
        len += (size_t)w;
        i = j;
    }
    return s;
fail:
    free(s);
    return NULL;
}

void cc__clog_push_new_comm(cc_clog_t *c, const cc_op_info_t *op)
{
    struct cc__clog_rec r;
    memset(&r, 0, sizeof(r));
    r.kind = CC__CLOG_REC_NEW;
    r.rank = op->rank;
    r.size = op->size;
    r.comm_id = op->comm_id;
    r.t_ns = cc__now_ns();
    r.t_ref_ns = op->parent_comm_id; /* the writer's split line */
    /* Only children get a ranks list: the world's is 0..size-1 by definition. */
    char *ranks = op->parent_comm_id ? ranks_text(op->comm, op->size) : NULL;
    r.text = name_and(op->comm_name, ranks);
    free(ranks);
    /* Claimed before the push, ready after: a racing op record waits for it (name_comm). */
    int claimed, j = op->comm_id ? named_slot(c, op->comm_id, &claimed) : -1;
    /* A refused record still owns its text. */
    if (!cc__clog_ring_push(&c->ring, &r)) free(r.text);
    if (j >= 0) atomic_store_explicit(&c->named_ready[j], 1, memory_order_release);
}

void cc__clog_on_post(const cc_op_info_t *op, void *user)
{
    cc_clog_t *c = user;
    /* Comm lines are written whatever the event selection: every other line needs them. */
    if (op->type == CC_OP_COMM_INIT) {
        if (op->status == CC_OK) cc__clog_push_new_comm(c, op);
        return;
    }
    if (op->type == CC_OP_COMM_DESTROY) {
        struct cc__clog_rec r;
        memset(&r, 0, sizeof(r));
        r.kind = CC__CLOG_REC_END;
        r.comm_id = op->comm_id;
        r.t_ns = cc__now_ns();
        cc__clog_ring_push(&c->ring, &r);
        return;
    }
    if (is_lifecycle(op->type)) return;
    uint64_t pos;
    /* An op whose Q waited for a START that never came (a PRE hook vetoed it, or its comm
     * was aborted first): the Q now, before its E. */
    if (!op->t_start_ns && q_with_s(c, op) && op_rec(c, op, CC__CLOG_REC_Q, op->t_enqueue_ns, &pos))
        cc__clog_ring_publish(&c->ring, pos);
    if (!(c->events & CC_CLOG_E)) return;
    struct cc__clog_rec *r = op_rec(c, op, CC__CLOG_REC_E, op->t_end_ns, &pos);
    if (!r) return;
    r->status = op->status;
    /* The duration is the time on the wire; a vetoed op never started. */
    r->t_ref_ns = op->t_start_ns ? op->t_start_ns : op->t_enqueue_ns;
    cc__clog_ring_publish(&c->ring, pos);
}

void cc__clog_on_abort(const cc_abort_info_t *info, void *user)
{
    cc_clog_t *c = user;
    if (c->events & CC_CLOG_A) {
        struct cc__clog_rec r;
        if (info->op && !is_lifecycle(info->op->type)) {
            named(c, info->op);
            fill_op(&r, info->op, CC__CLOG_REC_A, cc__now_ns());
        } else {
            memset(&r, 0, sizeof(r));
            r.kind = CC__CLOG_REC_A;
            r.t_ns = cc__now_ns();
        }
        /* The abort is the comm's, even when the culprit op's fields fill the rest. */
        r.comm_id = info->comm_id;
        r.status = info->reason;
        r.text = name_and(info->comm_name, info->message);
        if (!cc__clog_ring_push(&c->ring, &r)) free(r.text);
    }
    /* Whatever happens next (destroy, exit, SIGABRT), the story is on disk. */
    cc__clog_writer_flush(c, -1);
}
