/*
 * reader.h - reading a flight recorder ring file (internal; used by the
 * in-process dumper and by ccdump).
 *
 * A reader maps a ring of a live or dead process read-only (or attaches to
 * this process's own mapping), validates everything before trusting it, and
 * takes snapshots: consistent copies of the header, the tables and every
 * entry, taken with the slots' seqlocks while writers may run. Hostile files
 * (truncated, corrupt, another version, absurd sizes) are refused with a
 * status, a log line and a message in `err`; nothing in the file can make
 * the reader crash, loop or allocate more than the file's own size.
 *
 * Thread safety: a reader is used by one thread at a time; snapshots are
 * immutable and may be shared.
 */
#ifndef CC_RECORDER_READER_H
#define CC_RECORDER_READER_H

#include <stddef.h>
#include <stdint.h>

#include "ccomm/status.h"
#include "recorder/format.h"

typedef struct cc__fr_reader cc__fr_reader_t;

/* Why a slot is not among a snapshot's entries. */
enum cc__fr_problem_kind {
    CC__FR_TORN = 1, /* a writer held the slot (died mid-write, or busy through every retry) */
    CC__FR_CORRUPT,  /* consistent, but a field is impossible (see `why`) */
};

typedef struct cc__fr_problem {
    uint32_t slot;
    uint32_t kind;      /* enum cc__fr_problem_kind */
    uint64_t record_id; /* as found in the slot (untrusted) */
    const char *why;    /* static string */
} cc__fr_problem_t;

/* A consistent copy of a ring. Everything is owned by the snapshot. */
typedef struct cc__fr_snapshot {
    cc__fr_header_t hdr;  /* validated; live words as read after the entries */
    int live;             /* the writer seemed alive (pid exists, ring not closed) */
    cc__fr_comm_t *comms; /* hdr.comm_count records, validated */
    uint32_t ncomms;
    int32_t *ranks; /* the used part of the rank pool */
    uint32_t nranks;
    cc__fr_module_t *modules; /* hdr.module_count records, validated */
    uint32_t nmodules;
    unsigned char *entries; /* nentries copies of entry_size bytes, by record_id */
    uint32_t nentries;
    uint32_t entry_size;
    cc__fr_problem_t *problems; /* torn and corrupt slots */
    uint32_t nproblems;
    uint32_t ntorn;
    uint32_t ncorrupt;
} cc__fr_snapshot_t;

/*
 * Open the ring file at `path` read-only and validate its header.
 *   out  the reader (new; cc__fr_reader_close)
 *   err  message for the user on failure (may be NULL)
 * Returns CC_OK; CC_ERR_NOT_FOUND (no such file); CC_ERR_SYSTEM (cannot
 * read or map it); CC_ERR_NOT_SUPPORTED (another major format version);
 * CC_ERR_INVALID_ARG (not a ring file, truncated or corrupt header).
 */
cc_status_t cc__fr_reader_open(const char *path, cc__fr_reader_t **out, char *err, size_t errlen);

/*
 * The same over memory that stays mapped while the reader lives (the
 * recorder's own ring). `base` is borrowed.
 */
cc_status_t cc__fr_reader_attach(const void *base, size_t size, cc__fr_reader_t **out, char *err,
                                 size_t errlen);

/* Close a reader (unmaps what it mapped). NULL is ignored. */
void cc__fr_reader_close(cc__fr_reader_t *r);

/*
 * Take a snapshot. Never blocks writers; a slot being written is retried a
 * bounded number of times (live writer) or reported torn at once (dead one).
 *   out  the snapshot (new; cc__fr_snapshot_free)
 * Returns CC_OK (torn and corrupt slots are listed in the snapshot, not
 * errors); CC_ERR_INVALID_ARG (the tables are corrupt: counts beyond
 * capacity, members beyond the rank pool, unterminated names);
 * CC_ERR_NO_MEMORY.
 */
cc_status_t cc__fr_reader_snapshot(cc__fr_reader_t *r, cc__fr_snapshot_t **out, char *err,
                                   size_t errlen);

void cc__fr_snapshot_free(cc__fr_snapshot_t *s);

/* The i-th entry (record_id order) of a snapshot. */
static inline const cc__fr_entry_t *cc__fr_snap_entry(const cc__fr_snapshot_t *s, uint32_t i)
{
    return (const cc__fr_entry_t *)(const void *)(s->entries + (size_t)i * s->entry_size);
}

/* An entry's frames (e->nframes of them). */
static inline const uint64_t *cc__fr_entry_frames(const cc__fr_entry_t *e)
{
    return (const uint64_t *)(const void *)((const unsigned char *)e + CC__FR_FRAME_OFF(0));
}

/* The comm record of an entry (by its slot, else by id), or NULL. */
const cc__fr_comm_t *cc__fr_snap_comm(const cc__fr_snapshot_t *s, const cc__fr_entry_t *e);

/* A comm's members' world ranks (c->ranks_count of them), or NULL. */
const int32_t *cc__fr_snap_comm_ranks(const cc__fr_snapshot_t *s, const cc__fr_comm_t *c);

/* realtime ns of a monotonic time of the ring (0 stays 0). */
uint64_t cc__fr_snap_realtime(const cc__fr_snapshot_t *s, uint64_t mono_ns);

/* Names of entry states ("scheduled", "timed_out", ...); "?" out of range. */
const char *cc__fr_state_name(uint32_t state);

#endif /* CC_RECORDER_READER_H */
