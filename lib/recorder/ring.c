/*
 * ring.c - the transitions of a ring's entries (ring_file.c makes, maps and
 * closes the file).
 *
 * Writers claim a record id with one atomic add on hdr->next_record_id; the
 * slot is (record_id - 1) % capacity. Each slot's first word is a seqlock:
 * a writer CASes it from even to odd, stores its words, and stores the next
 * even value (release). The CAS also excludes other writers of the same slot
 * (a late START racing a reuse, ABORT marking racing POST) without a lock
 * that could sleep: the holder keeps it for a few dozen stores, others spin a
 * bounded number of times and then give up (counted, never blocked).
 *
 * While the process has one writing thread (base/solo.h), that thread bumps
 * the id and moves the seqlock with plain loads and stores instead: readers
 * see the same odd-then-even sequence, and no other writer exists until a
 * second thread has switched the process to the locked path.
 */
#include <stdint.h>
#include <string.h>

#include "ccomm/types.h"
#include "base/clock.h"
#include "base/solo.h"
#include "recorder/ring.h"

#define SPINS_WRITE 4096 /* a holder is never preempted for long; this is ~100 us */
#define SPINS_CLAIM 64   /* PRE: take the next record id instead of waiting */
#define SPINS_ABORT 64   /* ABORT may run in a signal handler over a held slot */
#define CLAIM_TRIES 4

/*
 * Shared words are loaded with acquire and stored with release order. On
 * x86 both are plain moves; they carry the seqlock's ordering without
 * standalone fences (which TSan does not model): a reader that sees any
 * word of a write also sees the odd seq that preceded it, and the reader's
 * second look at seq cannot move before its copies.
 */
static inline uint64_t ld(const void *p)
{
    return __atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE);
}

static inline void st(void *p, uint64_t v)
{
    __atomic_store_n((uint64_t *)p, v, __ATOMIC_RELEASE);
}

void cc__fr_store_words(void *dst, const void *src, size_t bytes)
{
    uint64_t *d = dst;
    const unsigned char *s = src;
    for (size_t i = 0; i < bytes / 8; i++) {
        uint64_t w;
        memcpy(&w, s + 8 * i, 8);
        st(d + i, w);
    }
}

void cc__fr_load_words(void *dst, const void *src, size_t bytes)
{
    const uint64_t *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < bytes / 8; i++) {
        uint64_t w = ld(s + i);
        memcpy(d + 8 * i, &w, 8);
    }
}

static inline uint64_t slot_index(const cc__fr_ring_t *r, uint64_t rid)
{
    return r->mask ? ((rid - 1) & r->mask) : ((rid - 1) % r->capacity);
}

/* Each transition computes its slot's index once and finds the slot and its names there. */
static inline cc__fr_entry_t *slot_at(const cc__fr_ring_t *r, uint64_t idx)
{
    return (cc__fr_entry_t *)(void *)(r->slots + idx * r->entry_size);
}

/* Take e's seqlock: returns the even value it held, or 1 (odd: never a
 * valid result) when another writer kept it for `spins` tries. */
static inline uint64_t slot_lock(cc__fr_entry_t *e, int spins)
{
    for (int i = 0; i < spins; i++) {
        uint64_t s = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
        if (!(s & 1) && __atomic_compare_exchange_n(&e->seq, &s, s + 1, 0, __ATOMIC_ACQUIRE,
                                                    __ATOMIC_RELAXED)) {
            return s;
        }
        cc__cpu_relax();
    }
    return 1;
}

/* Release: a new even value if we changed the slot, the old one if not
 * (readers that saw it before and after copied unchanged words). */
static inline void slot_unlock(cc__fr_entry_t *e, uint64_t s, int changed)
{
    __atomic_store_n(&e->seq, changed ? s + 2 : s, __ATOMIC_RELEASE);
}

/* Inside a section of the one writing thread (base/solo.h): take e's seqlock with a plain
 * store. Its even value, or 1 after closing the section when it is odd, which no other writer
 * can leave: never seen; the caller falls back on the locked path's bounded spin. */
static inline uint64_t solo_lock(cc__fr_entry_t *e)
{
    uint64_t s = __atomic_load_n(&e->seq, __ATOMIC_RELAXED);
    if (__builtin_expect(!(s & 1), 1)) {
        /* The words stored after this one are release stores: none passes it. */
        __atomic_store_n(&e->seq, s + 1, __ATOMIC_RELAXED);
        return s;
    }
    cc__solo_leave();
    return 1;
}

/*
 * Take the seqlock of e, the slot at idx: with a plain store while this
 * thread is the process's only writer (*solo 1: give it back with
 * slot_give, which ends the section), else with slot_lock. 1 (odd) when it
 * is held, or is the slot of the owner's section that this call (a signal
 * handler) interrupted.
 */
static inline uint64_t slot_take(cc__fr_entry_t *e, uint64_t idx, int spins, int *solo)
{
    uint64_t inside;
    *solo = 0;
    if (cc__solo_enter(idx + 1, &inside)) {
        uint64_t s = solo_lock(e);
        if (!(s & 1)) {
            *solo = 1;
            return s;
        }
    } else if (inside == idx + 1) {
        return 1;
    }
    return slot_lock(e, spins);
}

static inline void slot_give(cc__fr_entry_t *e, uint64_t s, int changed, int solo)
{
    slot_unlock(e, s, changed);
    if (solo) cc__solo_leave();
}

/* Health counters of the header: relaxed, only their totals matter. */
static inline void count(uint64_t *word)
{
    __atomic_fetch_add(word, 1, __ATOMIC_RELAXED);
}

/* The entry's fixed part: everything before the name fields (lines 0-1 and line 2 up to
 * `algorithm`). */
#define CC__FR_FIXED_BYTES offsetof(cc__fr_entry_t, algorithm)

/*
 * The fixed part as the file's words, packed in registers (the layout is the
 * file's, little-endian; the asserts pin each offset used here). PRE stores
 * them straight into its slot: building the entry field by field on the
 * stack and copying it out as words made each word of narrower fields (tid
 * and device, rank and size, ...) a load that the store buffer cannot
 * forward from the stores before it, a stall per word.
 */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the ring file is little-endian");
_Static_assert(offsetof(cc__fr_entry_t, op_id) == 16 && offsetof(cc__fr_entry_t, out_count) == 56 &&
                   offsetof(cc__fr_entry_t, timeout_ms) == 80 &&
                   offsetof(cc__fr_entry_t, tid) == 88 && offsetof(cc__fr_entry_t, device) == 92 &&
                   offsetof(cc__fr_entry_t, rank) == 96 && offsetof(cc__fr_entry_t, size) == 100 &&
                   offsetof(cc__fr_entry_t, root) == 104 && offsetof(cc__fr_entry_t, peer) == 108 &&
                   offsetof(cc__fr_entry_t, tag) == 112 &&
                   offsetof(cc__fr_entry_t, comm_slot) == 116 &&
                   offsetof(cc__fr_entry_t, type) == 118 && offsetof(cc__fr_entry_t, dtype) == 119 &&
                   offsetof(cc__fr_entry_t, redop) == 120 &&
                   offsetof(cc__fr_entry_t, nframes) == 121 &&
                   offsetof(cc__fr_entry_t, state) == 128 &&
                   offsetof(cc__fr_entry_t, status) == 132 &&
                   offsetof(cc__fr_entry_t, flags) == 152 && CC__FR_FIXED_BYTES == 160,
               "the packed words of pack_fixed");

static inline uint64_t pack32(uint32_t lo, uint32_t hi)
{
    return (uint64_t)lo | (uint64_t)hi << 32;
}

#define CC__FR_FIXED_WORDS (CC__FR_FIXED_BYTES / 8)

/* Words 0 (seq) and 1 (record id) are left 0; reserved bytes are 0. Out-of-range enums are
 * clamped to "none" so readers never reject the entry for a value the door let through.
 * `state` is SCHEDULED, or STARTED with its `t_start_ns` for a PRE that is its op's START
 * too (cc__fr_ring_pre_start_op). */
static inline void pack_fixed(uint64_t w[CC__FR_FIXED_WORDS], const cc_op_info_t *info,
                              int comm_slot, uint32_t tid, uint64_t t_enqueue_ns, unsigned nframes,
                              uint32_t state, uint64_t t_start_ns)
{
    w[0] = w[1] = 0;
    w[2] = info->op_id;
    w[3] = info->comm_id;
    w[4] = info->coll_seq;
    w[5] = info->p2p_seq;
    w[6] = info->in_count;
    w[7] = info->out_count;
    w[8] = info->bytes;
    w[9] = t_enqueue_ns;
    w[10] = (uint64_t)info->timeout_ms;
    w[11] = pack32(tid, (uint32_t)info->device);
    w[12] = pack32((uint32_t)info->rank, (uint32_t)info->size);
    w[13] = pack32((uint32_t)info->root, (uint32_t)info->peer);
    w[14] = (uint64_t)(uint32_t)info->tag |
            (uint64_t)(comm_slot >= 0 ? (uint16_t)comm_slot : CC__FR_NO_COMM) << 32 |
            (uint64_t)(uint8_t)info->type << 48 |
            (uint64_t)cc__fr_dtype_code((unsigned)info->dtype) << 56;
    w[15] = (uint64_t)((unsigned)info->redop <= CC_REDOP_COUNT ? (uint8_t)info->redop
                                                               : CC_REDOP_COUNT) |
            (uint64_t)(uint8_t)nframes << 8;
    w[16] = pack32(state, (uint32_t)CC_INPROGRESS);
    w[17] = t_start_ns;
    w[18] = w[19] = 0; /* t_end_ns, flags and end_tid */
}

void cc__fr_entry_fill(cc__fr_entry_t *e, const cc_op_info_t *info, int comm_slot, uint32_t tid,
                       uint64_t t_enqueue_ns)
{
    /* Built in the caller's memory, before any slot is held: the seqlock is
     * then held only for the stores. Zeroed so reserved bytes stay zero
     * (later minor versions read zero as "absent"). */
    memset(e, 0, sizeof(*e));
    uint64_t w[CC__FR_FIXED_WORDS];
    pack_fixed(w, info, comm_slot, tid, t_enqueue_ns, 0, CC__FR_SCHEDULED, 0);
    memcpy(e, w, sizeof(w));
    /* Known at PRE only for some ops; START and POST fill them in later. */
    cc__fr_put_str(e->algorithm, sizeof(e->algorithm), info->algorithm);
    cc__fr_put_str(e->transport, sizeof(e->transport), info->transport);
    cc__fr_put_str(e->engine, sizeof(e->engine), info->engine);
}

enum { NAME_ALGORITHM, NAME_TRANSPORT, NAME_ENGINE };
static const char UNKNOWN_NAME[] = "?";

static inline char *name_field(cc__fr_entry_t *e, int k, size_t *cap)
{
    switch (k) {
    case NAME_ALGORITHM: *cap = sizeof(e->algorithm); return e->algorithm;
    case NAME_TRANSPORT: *cap = sizeof(e->transport); return e->transport;
    default: *cap = sizeof(e->engine); return e->engine;
    }
}


/* A string field is rewritten whole (NUL padding included) so a shorter
 * name never leaves the tail of a longer one behind. */
static void store_str_field(void *dst, size_t cap, const char *src)
{
    char buf[32];
    memset(buf, 0, sizeof(buf));
    cc__fr_put_str(buf, cap, src);
    cc__fr_store_words(dst, buf, cap);
}

/* Make name field k of slot e hold q (not NULL), storing only what differs. Slot held. */
static inline void set_name(cc__fr_entry_t *e, struct cc__fr_slot_names *nm, int k, const char *q)
{
    size_t cap;
    char *dst = name_field(e, k, &cap);
    uint32_t bit = 1u << k;
    if (q == nm->p[k]) {
        /* The same string, whole, or cut by a PRE: then its first byte comes back. */
        if (nm->cut & bit) __atomic_store_n(dst, q[0], __ATOMIC_RELEASE);
        nm->cut &= ~bit;
        return;
    }
    store_str_field(dst, cap, q);
    nm->p[k] = q;
    nm->cut &= ~bit;
}

/* A PRE with no name for field k: the field must read "", one byte will do. Slot held. */
static inline void cut_name(cc__fr_entry_t *e, struct cc__fr_slot_names *nm, int k)
{
    size_t cap;
    char *dst = name_field(e, k, &cap);
    if (!nm->p[k] || (nm->cut & (1u << k))) return;
    if (nm->p[k] == UNKNOWN_NAME) { /* no string known to be the rest: zero it all */
        store_str_field(dst, cap, NULL);
        nm->p[k] = NULL;
        return;
    }
    __atomic_store_n(dst, (char)0, __ATOMIC_RELEASE);
    nm->cut |= 1u << k;
}

/* A PRE's name for field k: the op's, or "". */
static inline void pre_name(cc__fr_entry_t *e, struct cc__fr_slot_names *nm, int k, const char *q)
{
    if (q)
        set_name(e, nm, k, q);
    else
        cut_name(e, nm, k);
}

/*
 * Claim the next record id and its slot's seqlock: the slot, with *rid and
 * *seq (the even value the lock held) set, or NULL after CLAIM_TRIES slots
 * another writer sat on. The id counter is the one shared write every op
 * makes; relaxed, because the slot's seqlock, not the counter, orders the
 * entry's words.
 */
static inline cc__fr_entry_t *claim(cc__fr_ring_t *r, uint64_t *rid, uint64_t *idx, uint64_t *seq,
                                    int *solo)
{
    /* The one writer: the next id is the counter's value + 1, and its slot cannot be held.
     * Loaded before the section opens, which is sound: while a section can open, no
     * other thread has bumped the counter since this thread last did. */
    uint64_t id = __atomic_load_n(&r->hdr->next_record_id, __ATOMIC_RELAXED) + 1;
    uint64_t i = slot_index(r, id);
    cc__fr_entry_t *slot = slot_at(r, i);
    uint64_t inside, s;
    *solo = 0;
    if (cc__solo_enter(i + 1, &inside)) {
        s = solo_lock(slot);
        if (!(s & 1)) {
            __atomic_store_n(&r->hdr->next_record_id, id, __ATOMIC_RELAXED);
            *solo = 1;
            goto claimed;
        }
    } else if (inside) {
        /* A signal handler over the owner's section, which may be between its load and
         * store of the counter: an id taken now could be taken twice. */
        count(&r->hdr->skipped);
        return NULL;
    }
    for (int t = 0; t < CLAIM_TRIES; t++) {
        id = __atomic_add_fetch(&r->hdr->next_record_id, 1, __ATOMIC_RELAXED);
        i = slot_index(r, id);
        slot = slot_at(r, i);
        s = slot_lock(slot, SPINS_CLAIM);
        if (!(s & 1)) goto claimed;
        /* A writer sits on this slot (preempted, or a late update): leave
         * the id unused rather than wait on the op path. */
        count(&r->hdr->skipped);
    }
    return NULL;
claimed:
    *rid = id;
    *idx = i;
    *seq = s;
    return slot;
}

static inline void store_frames(cc__fr_entry_t *slot, const uint64_t *frames, unsigned n)
{
    uint64_t *f = (uint64_t *)(void *)((unsigned char *)slot + CC__FR_FRAME_OFF(0));
    for (unsigned i = 0; i < n; i++)
        st(f + i, frames[i]);
}

uint64_t cc__fr_ring_pre(cc__fr_ring_t *r, cc__fr_entry_t *e, const uint64_t *frames)
{
    if (e->nframes > r->stack_depth) e->nframes = (uint8_t)r->stack_depth;
    uint64_t rid, idx, s;
    int solo;
    cc__fr_entry_t *slot = claim(r, &rid, &idx, &s, &solo);
    if (!slot) return 0;
    e->record_id = rid;
    /* Everything after seq, in one pass of word stores: every word is
     * rewritten, so nothing of the slot's previous op survives. */
    cc__fr_store_words((unsigned char *)slot + 8, (const unsigned char *)e + 8, sizeof(*e) - 8);
    struct cc__fr_slot_names *nm = r->names + idx;
    /* The strings just stored came from no known pointer. */
    nm->p[0] = nm->p[1] = nm->p[2] = UNKNOWN_NAME;
    nm->cut = 0;
    store_frames(slot, frames, e->nframes);
    slot_give(slot, s, 1, solo);
    return rid;
}

/* PRE in place, of an op that has not started (SCHEDULED) or that starts with it (STARTED at
 * t_start_ns): one logic, which the compiler folds per entry point. */
static inline __attribute__((always_inline)) uint64_t
ring_pre(cc__fr_ring_t *r, const cc_op_info_t *info, int comm_slot, uint32_t tid,
         uint64_t t_enqueue_ns, const uint64_t *frames, unsigned nframes, uint32_t state,
         uint64_t t_start_ns)
{
    unsigned nf = nframes < r->stack_depth ? nframes : r->stack_depth;
    uint64_t rid, idx, s;
    int solo;
    cc__fr_entry_t *slot = claim(r, &rid, &idx, &s, &solo);
    if (!slot) return 0;
    /* Packed once the slot is held, so that each word goes from registers to the slot (packed
     * before the claim, the 20 words lived across it and went through the stack). With the one
     * test for the names below and no prefetch of the next slot: 34 instructions and 5-16 ns
     * less an op at 2 ranks (docs/performance.md, "Morning of 2026-12-07, second session"). */
    uint64_t w[CC__FR_FIXED_WORDS];
    pack_fixed(w, info, comm_slot, tid, t_enqueue_ns, nf, state, t_start_ns);
    w[1] = rid;
    uint64_t *d = (uint64_t *)(void *)slot;
#pragma GCC unroll 20
    for (size_t i = 1; i < CC__FR_FIXED_WORDS; i++)
        st(d + i, w[i]);
    /* Every word of the slot is rewritten or known to be right: nothing of
     * its previous op is visible. The usual op names what the slot's last op
     * named, whole: one test for the three fields. */
    struct cc__fr_slot_names *nm = r->names + idx;
    if (__builtin_expect(info->algorithm != nm->p[NAME_ALGORITHM] ||
                             info->transport != nm->p[NAME_TRANSPORT] ||
                             info->engine != nm->p[NAME_ENGINE] || nm->cut,
                         0)) {
        pre_name(slot, nm, NAME_ALGORITHM, info->algorithm);
        pre_name(slot, nm, NAME_TRANSPORT, info->transport);
        pre_name(slot, nm, NAME_ENGINE, info->engine);
    }
    st(&slot->gpu_start_ns, 0);
    st(&slot->gpu_end_ns, 0);
    /* Reads ""; the GPU path writes the field whole. */
    __atomic_store_n(slot->gpu_kernel, (char)0, __ATOMIC_RELEASE);
    store_frames(slot, frames, nf);
    slot_give(slot, s, 1, solo);
    return rid;
}

uint64_t cc__fr_ring_pre_op(cc__fr_ring_t *r, const cc_op_info_t *info, int comm_slot,
                            uint32_t tid, uint64_t t_enqueue_ns, const uint64_t *frames,
                            unsigned nframes)
{
    return ring_pre(r, info, comm_slot, tid, t_enqueue_ns, frames, nframes, CC__FR_SCHEDULED, 0);
}

uint64_t cc__fr_ring_pre_start_op(cc__fr_ring_t *r, const cc_op_info_t *info, int comm_slot,
                                  uint32_t tid, uint64_t t_enqueue_ns, uint64_t t_start_ns,
                                  const uint64_t *frames, unsigned nframes)
{
    return ring_pre(r, info, comm_slot, tid, t_enqueue_ns, frames, nframes, CC__FR_STARTED,
                    t_start_ns);
}

/* The (state, status) word and the (flags, end_tid) word of line 2. */
struct state_word {
    uint32_t state;
    int32_t status;
};
struct flags_word {
    uint32_t flags;
    uint32_t end_tid;
};

/* The update, inlined into each entry point below so that the compiler folds what a
 * START or an end leaves alone (one logic, three specialisations). */
static inline __attribute__((always_inline)) int ring_update(cc__fr_ring_t *r, uint64_t rid,
                                                             const cc__fr_update_t *u)
{
    uint64_t idx = slot_index(r, rid);
    cc__fr_entry_t *e = slot_at(r, idx);
    int solo;
    uint64_t s = slot_take(e, idx, SPINS_WRITE, &solo);
    if (s & 1) goto dropped;
    if (ld(&e->record_id) != rid) {
        /* The slot was reused after wrap-around: this update is stale. */
        slot_give(e, s, 0, solo);
        goto dropped;
    }
    /* state and status share a word: read, change, write back (we hold it). */
    struct state_word sw;
    uint64_t w = ld(&e->state);
    memcpy(&sw, &w, 8);
    int is_end = u->state >= CC__FR_COMPLETED;
    if (!is_end && sw.state != CC__FR_SCHEDULED) {
        int comm_slot = e->comm_slot;
        slot_give(e, s, 0, solo); /* START after the end: keep the end */
        return comm_slot;
    }
    sw.state = u->state;
    if (is_end) sw.status = u->status;
    memcpy(&w, &sw, 8);
    st(&e->state, w);
    /* The first start time wins: POST repeats it, it must not move it. */
    if (u->t_start_ns && !ld(&e->t_start_ns)) st(&e->t_start_ns, u->t_start_ns);
    if (is_end) st(&e->t_end_ns, u->t_end_ns);
    if (is_end || u->add_flags) {
        struct flags_word fw;
        w = ld(&e->flags);
        memcpy(&fw, &w, 8);
        fw.flags |= u->add_flags;
        if (is_end) fw.end_tid = u->tid;
        memcpy(&w, &fw, 8);
        st(&e->flags, w);
    }
    /* POST repeats START's names: the same pointer is the same string, already stored. The
     * usual case, both names the slot's (START after PRE cut them, POST after START), tests
     * the pair at once and puts back the first bytes PRE cut; a name NULL where the slot holds
     * none matches too, with no bit set (cut_name sets one only over a name). */
    struct cc__fr_slot_names *nm = r->names + idx;
    if (u->algorithm == nm->p[NAME_ALGORITHM] && u->transport == nm->p[NAME_TRANSPORT]) {
        if (nm->cut & 1u << NAME_ALGORITHM)
            __atomic_store_n(e->algorithm, u->algorithm[0], __ATOMIC_RELEASE);
        if (nm->cut & 1u << NAME_TRANSPORT)
            __atomic_store_n(e->transport, u->transport[0], __ATOMIC_RELEASE);
        nm->cut &= ~(1u << NAME_ALGORITHM | 1u << NAME_TRANSPORT);
    } else {
        if (u->algorithm) set_name(e, nm, NAME_ALGORITHM, u->algorithm);
        if (u->transport) set_name(e, nm, NAME_TRANSPORT, u->transport);
    }
    /* Read under the lock: the caller moves this comm's pg_status. */
    int comm_slot = e->comm_slot;
    slot_give(e, s, 1, solo);
    return comm_slot;
dropped:
    count(&r->hdr->dropped);
    return -1;
}

int cc__fr_ring_update(cc__fr_ring_t *r, uint64_t rid, const cc__fr_update_t *u)
{
    return ring_update(r, rid, u);
}

int cc__fr_ring_start(cc__fr_ring_t *r, uint64_t rid, uint64_t t_start_ns, uint32_t tid,
                      const char *algorithm, const char *transport)
{
    const cc__fr_update_t u = {.state = CC__FR_STARTED,
                               .t_start_ns = t_start_ns,
                               .tid = tid,
                               .algorithm = algorithm,
                               .transport = transport};
    return ring_update(r, rid, &u);
}

int cc__fr_ring_end(cc__fr_ring_t *r, uint64_t rid, int32_t status, uint64_t t_start_ns,
                    uint64_t t_end_ns, uint32_t tid, const char *algorithm, const char *transport)
{
    const cc__fr_update_t u = {.state = cc__fr_state_of_status(status),
                               .status = status,
                               .t_start_ns = t_start_ns,
                               .t_end_ns = t_end_ns,
                               .tid = tid,
                               .algorithm = algorithm,
                               .transport = transport};
    return ring_update(r, rid, &u);
}

int cc__fr_ring_gpu(cc__fr_ring_t *r, uint64_t rid, uint64_t t_start_ns, uint64_t t_end_ns,
                    const char *detail)
{
    uint64_t idx = slot_index(r, rid);
    cc__fr_entry_t *e = slot_at(r, idx);
    int solo;
    uint64_t s = slot_take(e, idx, SPINS_WRITE, &solo);
    if (s & 1) goto dropped;
    if (ld(&e->record_id) != rid) { /* reused after wrap-around: the times are stale */
        slot_give(e, s, 0, solo);
        goto dropped;
    }
    if (t_start_ns) st(&e->gpu_start_ns, t_start_ns);
    if (t_end_ns) st(&e->gpu_end_ns, t_end_ns);
    if (detail) store_str_field(e->gpu_kernel, sizeof(e->gpu_kernel), detail);
    slot_give(e, s, 1, solo);
    return 0;
dropped:
    count(&r->hdr->dropped);
    return -1;
}

unsigned cc__fr_ring_mark_abort(cc__fr_ring_t *r, uint64_t comm_id)
{
    unsigned marked = 0;
    for (uint32_t i = 0; i < r->capacity; i++) {
        cc__fr_entry_t *e = (cc__fr_entry_t *)(void *)(r->slots + (size_t)i * r->entry_size);
        /* Unlocked look first: most slots belong to other comms or are done. */
        if (ld(&e->comm_id) != comm_id) continue;
        struct state_word sw;
        uint64_t w = ld(&e->state);
        memcpy(&sw, &w, 8);
        if (sw.state != CC__FR_SCHEDULED && sw.state != CC__FR_STARTED) continue;
        int solo;
        uint64_t s = slot_take(e, i, SPINS_ABORT, &solo);
        if (s & 1) continue; /* held, maybe by the thread this signal interrupted */
        /* Look again under the lock: the op may have ended or the slot been
         * reused between the unlocked look and the CAS. */
        w = ld(&e->state);
        memcpy(&sw, &w, 8);
        int hit = ld(&e->comm_id) == comm_id &&
                  (sw.state == CC__FR_SCHEDULED || sw.state == CC__FR_STARTED);
        if (hit) {
            struct flags_word fw;
            w = ld(&e->flags);
            memcpy(&fw, &w, 8);
            fw.flags |= CC__FR_EF_ABORT_SEEN;
            memcpy(&w, &fw, 8);
            st(&e->flags, w);
            marked++;
        }
        slot_give(e, s, hit, solo);
    }
    return marked;
}

uint32_t cc__fr_state_of_status(int status)
{
    switch (status) {
    case CC_OK:
        return CC__FR_COMPLETED;
    case CC_ERR_TIMEOUT:
        return CC__FR_TIMED_OUT;
    case CC_ERR_ABORTED:
        return CC__FR_ABORTED;
    default:
        return CC__FR_FAILED;
    }
}
