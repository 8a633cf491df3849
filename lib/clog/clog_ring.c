/*
 * clog_ring.c - the bounded multi-producer ring of clog records (see
 * clog_ring.h for the protocol).
 */
#include <stdlib.h>
#include <string.h>

#include "base/solo.h"
#include "clog/clog_ring.h"

int cc__clog_ring_init(struct cc__clog_ring *r, uint64_t cap)
{
    if (cap < 2 || (cap & (cap - 1))) return -1;
    struct cc__clog_slot *s = aligned_alloc(64, cap * sizeof(*s));
    if (!s) return -1;
    memset(s, 0, cap * sizeof(*s));
    /* Slot i starts free for position i (lap 0). */
    for (uint64_t i = 0; i < cap; i++)
        atomic_init(&s[i].seq, i);
    r->slots = s;
    r->cap = cap;
    atomic_init(&r->tail, 0);
    atomic_init(&r->dropped, 0);
    r->head = 0;
    return 0;
}

void cc__clog_ring_fini(struct cc__clog_ring *r)
{
    if (!r->slots) return;
    /* Texts of published records the writer never took belong to the ring. */
    struct cc__clog_rec rec;
    while (cc__clog_ring_pop(r, &rec))
        free(rec.text);
    free(r->slots);
    r->slots = NULL;
}

/* Claim the next position: its slot, or NULL when the ring is full. `alone`: no other
 * producer can run meanwhile, so a store takes the position; else a compare-and-swap. */
static struct cc__clog_rec *take(struct cc__clog_ring *r, uint64_t *pos_out, int alone)
{
    uint64_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
    for (;;) {
        struct cc__clog_slot *s = &r->slots[pos & (r->cap - 1)];
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff == 0) {
            /* Free for this lap: claim it; a failed CAS reloads pos. */
            if (alone) {
                atomic_store_explicit(&r->tail, pos + 1, memory_order_relaxed);
                *pos_out = pos;
                return &s->rec;
            }
            if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                *pos_out = pos;
                return &s->rec;
            }
        } else if (diff < 0) {
            return NULL; /* the writer has not freed the slot of the previous lap */
        } else {
            /* Another producer took pos meanwhile. */
            pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
        }
    }
}

/*
 * Many threads may log, so a claim is a compare-and-swap of the tail. While the process has
 * one writing thread (base/solo.h) that thread is the only producer and claims with a store
 * (two records an op, Q+S and E, each a locked instruction less). A signal handler over that
 * thread's claim (an abort record in the fatal-signal path) drops its record, counted: the
 * interrupted claim may be between its load and its store.
 */
struct cc__clog_rec *cc__clog_ring_claim(struct cc__clog_ring *r, uint64_t *pos_out)
{
    uint64_t inside;
    int alone = cc__solo_enter(CC__SOLO_TAG_CLOG, &inside);
    struct cc__clog_rec *rec = inside == CC__SOLO_TAG_CLOG ? NULL : take(r, pos_out, alone);
    if (alone) cc__solo_leave();
    if (!rec) atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
    return rec;
}

int cc__clog_ring_push(struct cc__clog_ring *r, const struct cc__clog_rec *rec)
{
    uint64_t pos;
    struct cc__clog_rec *slot = cc__clog_ring_claim(r, &pos);
    if (!slot) return 0;
    *slot = *rec;
    cc__clog_ring_publish(r, pos);
    return 1;
}

struct cc__clog_rec *cc__clog_ring_peek(struct cc__clog_ring *r)
{
    struct cc__clog_slot *s = &r->slots[r->head & (r->cap - 1)];
    /* Not yet published (empty, or a producer is still filling it): try again later. */
    if (atomic_load_explicit(&s->seq, memory_order_acquire) != r->head + 1) return NULL;
    return &s->rec;
}

void cc__clog_ring_release(struct cc__clog_ring *r)
{
    /* Hand the slot to the producer of the next lap. */
    atomic_store_explicit(&r->slots[r->head & (r->cap - 1)].seq, r->head + r->cap,
                          memory_order_release);
    r->head++;
}

int cc__clog_ring_pop(struct cc__clog_ring *r, struct cc__clog_rec *out)
{
    struct cc__clog_rec *rec = cc__clog_ring_peek(r);
    if (!rec) return 0;
    *out = *rec;
    cc__clog_ring_release(r);
    return 1;
}
