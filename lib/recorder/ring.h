/*
 * ring.h - the writer side of a ring file: create and map it, and the
 * lock-free transitions of its entries (internal to lib/recorder).
 *
 * Every shared word is written with __atomic stores so that readers (this
 * process's dumper, ccdump in another process) may copy it at any time; the
 * seqlock of each slot tells them whether their copy is consistent.
 */
#ifndef CC_RECORDER_RING_H
#define CC_RECORDER_RING_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ccomm/hooks.h"
#include "recorder/format.h"

#define CC__FR_MAX_CAPACITY    (1u << 24) /* slots; readers refuse more */
#define CC__FR_COMM_CAPACITY   512u       /* comm records per ring */
#define CC__FR_MODULE_CAPACITY 256u       /* module records per ring */

/* What a ring is created with. */
typedef struct cc__fr_ring_params {
    uint32_t capacity;      /* slots, 1 .. CC__FR_MAX_CAPACITY */
    uint32_t stack_depth;   /* frames per entry, 0 .. CC__FR_MAX_FRAMES */
    uint32_t comm_capacity; /* 0 = CC__FR_COMM_CAPACITY */
    uint32_t rank_capacity; /* 0 = from world_size */
    int rank;
    int world_size;
    const char *host; /* borrowed for the call */
    const char *job_id;
} cc__fr_ring_params_t;

/*
 * What a slot's name fields (algorithm, transport, engine) hold, so that a
 * write can skip what is there already. p[k] is the pointer whose string
 * field k holds, NUL-padded; NULL: the field is all zeros; UNKNOWN_NAME (ring.c):
 * anything (a whole entry was copied in). Bit k of `cut`: a PRE since set
 * only the field's first byte to NUL, so it reads "" and the rest is still
 * p[k]'s (readers stop at the first NUL); storing p[k][0] there again makes
 * it whole. A new ring file is all zeros, and calloc makes every p[k] NULL:
 * the cache starts true.
 */
struct cc__fr_slot_names {
    const char *p[3];
    uint32_t cut;
};

/* Copy a C string into a fixed field, truncated, always terminated. */
static inline void cc__fr_put_str(char *dst, size_t cap, const char *src)
{
    /* strnlen and memcpy, not a byte loop: this runs for two or three names
     * per op (a byte loop was 250 instructions a name, bench/obs_instr.sh). */
    size_t n = src ? strnlen(src, cap - 1) : 0;
    if (n) memcpy(dst, src, n);
    dst[n] = '\0';
}

/* A mapped ring (process memory; the pointers point into the mapping). */
typedef struct cc__fr_ring {
    cc__fr_header_t *hdr;
    unsigned char *slots; /* slot 0 */
    cc__fr_comm_t *comms;
    int32_t *ranks;
    cc__fr_module_t *modules;
    uint32_t capacity;
    uint32_t mask; /* capacity - 1 when a power of two, else 0 */
    uint32_t entry_size;
    uint32_t stack_depth;
    uint32_t comm_capacity; /* hdr->comm_capacity, kept here: the op path's bound check reads
                             * process memory, not the header's line */
    /* Process-private, allocated with the struct: per slot, what its name
     * fields hold (struct cc__fr_slot_names, above). The names come from the
     * engines' static tables, so an equal pointer means an equal string and a
     * write may skip the store. Written under the slot's seqlock only; a
     * forked child drops the ring, and this with it. */
    struct cc__fr_slot_names *names;
    size_t size; /* bytes mapped */
    int fd;      /* open only while the file is created */
    char path[PATH_MAX];
} cc__fr_ring_t;

/*
 * Create (or truncate) the ring file at `path`, reserve its pages (so a full
 * /dev/shm fails here, not with SIGBUS on the op path), map it shared and
 * populated (no page faults on the op path during the first lap), and
 * write the header; the magic goes last. *out is new (cc__fr_ring_destroy).
 * Returns CC_OK, CC_ERR_INVALID_ARG (bad params), CC_ERR_SYSTEM (file, space
 * or mmap; logged with the path and errno), CC_ERR_NO_MEMORY.
 */
cc_status_t cc__fr_ring_create(const char *path, const cc__fr_ring_params_t *p,
                               cc__fr_ring_t **out);

/*
 * Whether a ring records a failure: a fatal signal, a dump (the watchdog's
 * after a timeout, or one asked for), or an aborted communicator among the
 * first `ncomms` records of `comms`. 1 with the first reason found in `why`,
 * else 0. Live words are read atomically: `h` may be a ring still in use.
 */
int cc__fr_failure_recorded(const cc__fr_header_t *h, const cc__fr_comm_t *comms, uint64_t ncomms,
                            char *why, size_t whylen);

/* Note a clean close in the header, unmap, free. The file stays. NULL ok. */
void cc__fr_ring_destroy(cc__fr_ring_t *r);

/* Unmap and free without touching the file (a forked child drops its
 * parent's ring). NULL ok. */
void cc__fr_ring_detach(cc__fr_ring_t *r);

/*
 * Fill a new entry from an op as it passes PRE (no shared memory touched).
 * tid is the calling thread's kernel id, t_enqueue_ns the op's enqueue time.
 */
void cc__fr_entry_fill(cc__fr_entry_t *e, const cc_op_info_t *info, int comm_slot, uint32_t tid,
                       uint64_t t_enqueue_ns);

/*
 * PRE: claim a record id (one atomic add), take its slot's seqlock and copy
 * `e` and e->nframes words of `frames` in (e->record_id is set here;
 * e->nframes is clamped to the ring's stack depth). Returns the record id,
 * or 0 when no slot could be taken (counted in hdr->skipped).
 */
uint64_t cc__fr_ring_pre(cc__fr_ring_t *r, cc__fr_entry_t *e, const uint64_t *frames);

/*
 * PRE of an op, as cc__fr_entry_fill + cc__fr_ring_pre give it, written in
 * place: the recorder's path. Name fields the slot already holds (the same
 * engine as the op that used the slot before) are not stored again, and a
 * field the op has no name for yet gets one zero word, not a whole field.
 * `nframes` words of `frames` (clamped to the stack depth).
 */
uint64_t cc__fr_ring_pre_op(cc__fr_ring_t *r, const cc_op_info_t *info, int comm_slot,
                            uint32_t tid, uint64_t t_enqueue_ns, const uint64_t *frames,
                            unsigned nframes);

/*
 * PRE and START of an op in one write, for an op that starts as it is
 * issued (the native engine's blocking op on the caller's thread): the
 * entry PRE writes, STARTED at `t_start_ns`, with the op's algorithm and
 * transport, as cc__fr_ring_pre_op and then cc__fr_ring_start leave it. One
 * slot lock instead of two (docs/performance.md, "Night of 2026-12-03").
 */
uint64_t cc__fr_ring_pre_start_op(cc__fr_ring_t *r, const cc_op_info_t *info, int comm_slot,
                                  uint32_t tid, uint64_t t_enqueue_ns, uint64_t t_start_ns,
                                  const uint64_t *frames, unsigned nframes);

/* What START and POST change. Strings are borrowed; NULL leaves the field. */
typedef struct cc__fr_update {
    uint32_t state;      /* CC__FR_STARTED, or an end state for POST */
    int32_t status;      /* POST only */
    uint64_t t_start_ns; /* 0 leaves the field */
    uint64_t t_end_ns;   /* POST only */
    uint32_t tid;
    uint32_t add_flags; /* CC__FR_EF_* to set */
    const char *algorithm;
    const char *transport;
} cc__fr_update_t;

/*
 * START / POST of record `rid`. The update lands only if the slot still holds
 * `rid` (a reused slot is left alone) and, for START, only while the entry is
 * still SCHEDULED. Returns the entry's comm slot (>= 0, or CC__FR_NO_COMM),
 * or -1 when the update was dropped (counted in hdr->dropped).
 */
int cc__fr_ring_update(cc__fr_ring_t *r, uint64_t rid, const cc__fr_update_t *u);

/* The recorder's START and POST: cc__fr_ring_update with the update START and an end make
 * (state STARTED; the end state of `status`), specialised by the compiler. */
int cc__fr_ring_start(cc__fr_ring_t *r, uint64_t rid, uint64_t t_start_ns, uint32_t tid,
                      const char *algorithm, const char *transport);
int cc__fr_ring_end(cc__fr_ring_t *r, uint64_t rid, int32_t status, uint64_t t_start_ns,
                    uint64_t t_end_ns, uint32_t tid, const char *algorithm, const char *transport);

/*
 * GPU times of record `rid` (0 leaves a time; NULL leaves the detail), under
 * the slot's seqlock, only if the slot still holds `rid`. Returns 0, or -1
 * when dropped (counted in hdr->dropped).
 */
int cc__fr_ring_gpu(cc__fr_ring_t *r, uint64_t rid, uint64_t t_start_ns, uint64_t t_end_ns,
                    const char *detail);

/*
 * ABORT: set CC__FR_EF_ABORT_SEEN on every unfinished entry of `comm_id`.
 * Async-signal-safe (atomics only, bounded spins). Returns entries marked.
 */
unsigned cc__fr_ring_mark_abort(cc__fr_ring_t *r, uint64_t comm_id);

/* The end state of an op that finished with `status`. */
uint32_t cc__fr_state_of_status(int status);

/*
 * The process's open ring (recorder.c), held against cc__recorder_close
 * until cc__recorder_ring_release; NULL (nothing held) when the recorder is
 * off. Off the op path.
 */
cc__fr_ring_t *cc__recorder_ring_hold(void);
void cc__recorder_ring_release(void);

/* Relaxed atomic word copies between process memory and the mapping. */
void cc__fr_store_words(void *dst, const void *src, size_t bytes);
void cc__fr_load_words(void *dst, const void *src, size_t bytes);

#endif /* CC_RECORDER_RING_H */
