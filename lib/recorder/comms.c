/*
 * comms.c - the communicator table of the ring file.
 *
 * Records are appended under a mutex (comm creation is rare and already
 * collective) and published by raising hdr->comm_count with release order,
 * so a reader never sees a half-written record. The op path finds a comm's
 * slot through an open-addressing map in process memory: slots are filled
 * once, key before value, and read without locks.
 */
#include <pthread.h>
#include <string.h>

#include "base/clock.h"
#include "recorder/comms.h"
#include "base/log.h"

#define MAP_SIZE 4096u /* power of two, > 2 x the largest comm table */

/* One map cell. slot1 = table slot + 1; 0 = empty (stored last). */
struct cell {
    uint64_t id;
    uint32_t slot1;
};

static struct cell g_map[MAP_SIZE];
uint64_t cc__fr_comm_gen = 1; /* a zeroed memo is never current */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_full_warned;

/* Comm ids are hashes already, but tests and users may pick small ones:
 * mix the bits so that linear probing stays short either way. */
static uint32_t hash_id(uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (uint32_t)id & (MAP_SIZE - 1);
}

int cc__fr_comm_find(uint64_t comm_id)
{
    for (uint32_t i = hash_id(comm_id), n = 0; n < MAP_SIZE; i = (i + 1) & (MAP_SIZE - 1), n++) {
        /* slot1 is stored after id (release): seeing it means id is there. */
        uint32_t s1 = __atomic_load_n(&g_map[i].slot1, __ATOMIC_ACQUIRE);
        if (!s1) return -1; /* cells are never emptied while the ring is open */
        if (__atomic_load_n(&g_map[i].id, __ATOMIC_RELAXED) == comm_id) return (int)s1 - 1;
    }
    return -1;
}

/* Point comm_id at `slot` (a new id, or a destroyed comm's id used again). */
static void map_put(uint64_t comm_id, int slot)
{
    for (uint32_t i = hash_id(comm_id), n = 0; n < MAP_SIZE; i = (i + 1) & (MAP_SIZE - 1), n++) {
        uint32_t s1 = __atomic_load_n(&g_map[i].slot1, __ATOMIC_RELAXED);
        if (s1 && __atomic_load_n(&g_map[i].id, __ATOMIC_RELAXED) != comm_id) continue;
        __atomic_store_n(&g_map[i].id, comm_id, __ATOMIC_RELAXED);
        __atomic_store_n(&g_map[i].slot1, (uint32_t)slot + 1, __ATOMIC_RELEASE);
        __atomic_add_fetch(&cc__fr_comm_gen, 1, __ATOMIC_RELEASE);
        return;
    }
}

/* Copy world ranks into the pool; unknown ones stay -1 and may come later. */
static void put_ranks(cc__fr_ring_t *r, const cc__fr_comm_t *c, const int32_t *wr)
{
    for (uint32_t i = 0; wr && i < c->ranks_count; i++)
        if (wr[i] >= 0) __atomic_store_n(&r->ranks[c->ranks_off + i], wr[i], __ATOMIC_RELAXED);
}

/* Fill a new record at `slot`; the caller publishes it. */
static void fill(cc__fr_ring_t *r, cc__fr_comm_t *c, const cc__fr_comm_desc_t *d)
{
    c->comm_id = d->comm_id;
    c->parent_id = d->parent_id;
    size_t n = d->name ? strnlen(d->name, sizeof(c->name) - 1) : 0;
    memcpy(c->name, d->name ? d->name : "", n);
    c->name[n] = '\0';
    c->size = d->size;
    c->rank = d->rank;
    c->device = d->device;
    c->created_ns = cc__now_ns();
    /* Plain stores above are fine: nobody reads the record before
     * comm_count counts it. The pool is another matter (below). */
    uint64_t used = __atomic_load_n(&r->hdr->rank_used, __ATOMIC_RELAXED);
    uint64_t want = d->size > 0 ? (uint64_t)d->size : 0;
    if (used + want > r->hdr->rank_capacity) {
        cc_log_warn(CC_SUBSYS_RECORDER,
                    "recorder: rank pool full (%llu of %u used): members of "
                    "comm %s (%d ranks) not recorded",
                    (unsigned long long)used, r->hdr->rank_capacity, c->name, d->size);
        c->flags = CC__FR_CF_RANKS_FULL;
        return;
    }
    c->ranks_off = (uint32_t)used;
    c->ranks_count = (uint32_t)want;
    /* -1 until known: members may be filled in after publication (at the
     * end of COMM_INIT), with atomic stores, while readers copy the pool. */
    for (uint64_t i = 0; i < want; i++)
        __atomic_store_n(&r->ranks[used + i], -1, __ATOMIC_RELAXED);
    put_ranks(r, c, d->world_ranks);
    __atomic_store_n(&r->hdr->rank_used, used + want, __ATOMIC_RELEASE);
}

int cc__fr_comm_add(cc__fr_ring_t *r, const cc__fr_comm_desc_t *d)
{
    pthread_mutex_lock(&g_lock);
    int slot = cc__fr_comm_find(d->comm_id);
    if (slot >= 0) {
        /* Known and alive: only the members may be news. A destroyed comm
         * whose id comes back gets a new record, so the old one's ops keep
         * the name and members they ran with. */
        cc__fr_comm_t *c = &r->comms[slot];
        uint64_t flags = __atomic_load_n(&c->flags, __ATOMIC_RELAXED);
        if (!(flags & CC__FR_CF_DESTROYED)) {
            put_ranks(r, c, d->world_ranks);
            pthread_mutex_unlock(&g_lock);
            return slot;
        }
    }
    uint64_t n = __atomic_load_n(&r->hdr->comm_count, __ATOMIC_RELAXED);
    if (n >= r->hdr->comm_capacity) {
        if (!g_full_warned++)
            cc_log_warn(CC_SUBSYS_RECORDER,
                        "recorder: comm table full (%u comms): comm %s "
                        "(id %llu) and later ones are recorded without a table entry",
                        r->hdr->comm_capacity, d->name ? d->name : "?",
                        (unsigned long long)d->comm_id);
        pthread_mutex_unlock(&g_lock);
        return -1;
    }
    fill(r, &r->comms[n], d);
    __atomic_store_n(&r->hdr->comm_count, n + 1, __ATOMIC_RELEASE);
    map_put(d->comm_id, (int)n);
    pthread_mutex_unlock(&g_lock);
    return (int)n;
}

void cc__fr_comm_seq(cc__fr_ring_t *r, int slot, enum cc__fr_seq_kind kind, uint64_t seq)
{
    if (slot < 0 || (uint32_t)slot >= r->comm_capacity) return;
    uint64_t *w = &r->comms[slot].last_enqueued + kind;
    /* A max, not a store: START and POST of consecutive ops may come from
     * different threads in either order. Usually one load and one CAS. */
    uint64_t cur = __atomic_load_n(w, __ATOMIC_RELAXED);
    while (cur < seq &&
           !__atomic_compare_exchange_n(w, &cur, seq, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void cc__fr_comm_mark(cc__fr_ring_t *r, int slot, uint64_t flag, int64_t reason)
{
    if (slot < 0 || (uint32_t)slot >= r->comm_capacity) return;
    cc__fr_comm_t *c = &r->comms[slot];
    uint64_t now = cc__now_ns();
    if (flag & CC__FR_CF_ABORTED) {
        uint64_t zero = 0;
        /* The first abort's reason and time are the ones that explain. */
        if (__atomic_compare_exchange_n(&c->aborted_ns, &zero, now, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            __atomic_store_n((uint64_t *)&c->abort_reason, (uint64_t)reason, __ATOMIC_RELAXED);
    }
    if (flag & CC__FR_CF_DESTROYED) __atomic_store_n(&c->destroyed_ns, now, __ATOMIC_RELAXED);
    __atomic_fetch_or(&c->flags, flag, __ATOMIC_RELEASE);
}

void cc__fr_comm_reset(void)
{
    pthread_mutex_lock(&g_lock);
    for (uint32_t i = 0; i < MAP_SIZE; i++) {
        __atomic_store_n(&g_map[i].slot1, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&g_map[i].id, 0, __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(&cc__fr_comm_gen, 1, __ATOMIC_RELEASE);
    g_full_warned = 0;
    pthread_mutex_unlock(&g_lock);
}

void cc__fr_comm_after_fork(void)
{
    pthread_mutex_init(&g_lock, NULL);
    cc__fr_comm_reset();
}
