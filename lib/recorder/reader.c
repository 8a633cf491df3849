/*
 * reader.c - validating reader and snapshots of ring files.
 *
 * Trust nothing: the header is copied first and every size, offset and
 * string in the copy is checked against the file's real size before any
 * other byte is read; the live counters are checked against the capacities
 * when a snapshot is taken; each entry is checked after its seqlock says
 * the copy is consistent. Words are read with relaxed atomic loads, so a
 * reader may run while the writing process does (and under TSan).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccomm/types.h"
#include "base/log.h"
#include "recorder/reader.h"
#include "recorder/ring.h"

#define MAX_ENTRY_SIZE  4096u /* later minor versions may grow entries up to this */
#define MAX_RECORD_SIZE 4096u /* comm and module records */
#define LIVE_TRIES      2000  /* seqlock retries per slot while the writer runs */

#define MAX_EXTENTS 4096 /* data extents of a sparse file remembered; more: all is data */

struct cc__fr_reader {
    const unsigned char *base;
    size_t size;
    int mapped;          /* base was mapped by the reader */
    int own;             /* attached to this process's own ring */
    cc__fr_header_t hdr; /* validated copy of the fixed part */
    uint64_t *data;      /* the file's data extents, [start, end) pairs; NULL: all data */
    uint32_t ndata;      /* pairs in data */
};

/* Log and copy the message for the caller. Returns `st`. */
static cc_status_t fail(cc_status_t st, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static cc_status_t fail(cc_status_t st, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    cc_log_error(CC_SUBSYS_RECORDER, "recorder reader: %s", msg);
    if (err && errlen) snprintf(err, errlen, "%s", msg);
    return st;
}

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

/* Is [off, off + n * size) inside [lo, hi), without overflow? */
static int region_ok(uint64_t off, uint64_t n, uint64_t size, uint64_t lo, uint64_t hi)
{
    /* Divide instead of multiplying: n * size may overflow for hostile n. */
    if (off < lo || off > hi || off % 8) return 0;
    if (size && n > (hi - off) / size) return 0;
    return 1;
}

/* Geometry: every offset and size against the file's real size. */
static cc_status_t check_geometry(const cc__fr_header_t *h, uint64_t fsize, char *err, size_t el)
{
    if (h->entry_size < CC__FR_ENTRY_BYTES || h->entry_size % 64 || h->entry_size > MAX_ENTRY_SIZE)
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "entry size %u is not a multiple of 64 in "
                    "[%u, %u]",
                    h->entry_size, CC__FR_ENTRY_BYTES, MAX_ENTRY_SIZE);
    if (h->stack_depth > CC__FR_MAX_FRAMES || CC__FR_FRAME_OFF(h->stack_depth) > h->entry_size)
        return fail(CC_ERR_INVALID_ARG, err, el, "stack depth %u does not fit entries of %u bytes",
                    h->stack_depth, h->entry_size);
    if (h->capacity < 1 || h->capacity > CC__FR_MAX_CAPACITY)
        return fail(CC_ERR_INVALID_ARG, err, el, "capacity %u is not in [1, %u]", h->capacity,
                    CC__FR_MAX_CAPACITY);
    if (h->header_size >= 4096 && h->header_size % 4096 == 0 && h->header_size > fsize)
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "truncated: header size %u is beyond the file's %llu bytes", h->header_size,
                    (unsigned long long)fsize);
    if (h->header_size < 4096 || h->header_size % 4096 || h->header_size > fsize)
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "header size %u is not a multiple of 4096 within "
                    "the file (%llu bytes)",
                    h->header_size, (unsigned long long)fsize);
    uint64_t want = (uint64_t)h->header_size + (uint64_t)h->capacity * h->entry_size;
    if (h->file_size != want)
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "file size field %llu does not match header "
                    "%u + %u entries x %u bytes",
                    (unsigned long long)h->file_size, h->header_size, h->capacity, h->entry_size);
    if (want > fsize)
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "truncated: %u entries need %llu bytes, the file "
                    "has %llu",
                    h->capacity, (unsigned long long)want, (unsigned long long)fsize);
    if (h->comm_size < CC__FR_COMM_BYTES || h->comm_size % 8 || h->comm_size > MAX_RECORD_SIZE ||
        h->comm_capacity >= CC__FR_NO_COMM ||
        !region_ok(h->comm_off, h->comm_capacity, h->comm_size, CC__FR_HEADER_BYTES,
                   h->header_size))
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "comm table (offset %llu, %u records of %u bytes) "
                    "is outside the header",
                    (unsigned long long)h->comm_off, h->comm_capacity, h->comm_size);
    if (!region_ok(h->rank_off, h->rank_capacity, 4, CC__FR_HEADER_BYTES, h->header_size))
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "rank pool (offset %llu, %u ranks) is outside "
                    "the header",
                    (unsigned long long)h->rank_off, h->rank_capacity);
    if (h->module_size < CC__FR_MODULE_BYTES || h->module_size % 8 ||
        h->module_size > MAX_RECORD_SIZE ||
        !region_ok(h->module_off, h->module_capacity, h->module_size, CC__FR_HEADER_BYTES,
                   h->header_size))
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "module table (offset %llu, %u records of %u "
                    "bytes) is outside the header",
                    (unsigned long long)h->module_off, h->module_capacity, h->module_size);
    return CC_OK;
}

static cc_status_t check_header(const cc__fr_header_t *h, uint64_t fsize, char *err, size_t el)
{
    if (memcmp(h->magic, CC__FR_MAGIC, 8) != 0)
        return fail(CC_ERR_INVALID_ARG, err, el, "not a ccomm ring file (bad magic)");
    if (h->version_major != CC__FR_VERSION_MAJOR)
        return fail(CC_ERR_NOT_SUPPORTED, err, el, "format version %u.%u; this reader reads %u.x",
                    h->version_major, h->version_minor, CC__FR_VERSION_MAJOR);
    if (h->header_struct < CC__FR_HEADER_BYTES)
        return fail(CC_ERR_INVALID_ARG, err, el, "header struct of %u bytes, expected %u",
                    h->header_struct, CC__FR_HEADER_BYTES);
    if (!terminated(h->host, sizeof(h->host)) || !terminated(h->job_id, sizeof(h->job_id)) ||
        !terminated(h->lib_version, sizeof(h->lib_version)))
        return fail(CC_ERR_INVALID_ARG, err, el, "unterminated host, job id or version string");
    if (h->world_size < 0 || h->rank < -1 || (h->world_size > 0 && h->rank >= h->world_size))
        return fail(CC_ERR_INVALID_ARG, err, el, "rank %d of world size %d", h->rank,
                    h->world_size);
    return check_geometry(h, fsize, err, el);
}

/*
 * Where a sparse file holds data (SEEK_DATA / SEEK_HOLE): a slot whose first
 * word lies in a hole was never written, and reading it would only fault in
 * zero pages (a ring claiming 2^24 slots of 4 KiB is 64 GiB of them). Without
 * support, or past MAX_EXTENTS extents, the whole file counts as data.
 */
static void data_extents(int fd, size_t size, cc__fr_reader_t *r)
{
    uint64_t *v = malloc(2 * MAX_EXTENTS * sizeof(uint64_t));
    uint32_t n = 0;
    for (off_t at = 0; v && (uint64_t)at < size;) {
        off_t d = lseek(fd, at, SEEK_DATA), h = d < 0 ? -1 : lseek(fd, d, SEEK_HOLE);
        if (d < 0 && errno == ENXIO) break; /* no data after `at` */
        if (h < 0 || n == MAX_EXTENTS) {   /* unknown, or too fragmented: all is data */
            free(v);
            return;
        }
        v[2 * n] = (uint64_t)d, v[2 * n + 1] = (uint64_t)h, n++;
        at = h;
    }
    r->data = v;
    r->ndata = n;
}

/* Whether byte `off` of the file lies in data (not in a hole). */
static int in_data(const cc__fr_reader_t *r, uint64_t off)
{
    if (!r->data) return 1;
    uint32_t lo = 0, hi = r->ndata;
    while (lo < hi) { /* the first extent ending after off */
        uint32_t mid = lo + (hi - lo) / 2;
        if (r->data[2 * mid + 1] <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->ndata && r->data[2 * lo] <= off;
}

/* Validate the header of [base, base + size) and make the reader. */
static cc_status_t make_reader(const void *base, size_t size, int mapped, cc__fr_reader_t **out,
                               char *err, size_t errlen)
{
    if (size < CC__FR_HEADER_BYTES)
        return fail(CC_ERR_INVALID_ARG, err, errlen, "truncated: %zu bytes, a header needs %d",
                    size, CC__FR_HEADER_BYTES);
    cc__fr_reader_t *r = calloc(1, sizeof(*r));
    if (!r) return CC_ERR_NO_MEMORY;
    /* Validate a private copy: the file may change under us (a live writer,
     * or someone hostile), and a checked value must stay the used value. */
    cc__fr_load_words(&r->hdr, base, sizeof(r->hdr));
    cc_status_t st = check_header(&r->hdr, size, err, errlen);
    if (st != CC_OK) {
        free(r);
        return st;
    }
    r->base = base;
    r->size = size;
    r->mapped = mapped;
    *out = r;
    return CC_OK;
}

cc_status_t cc__fr_reader_attach(const void *base, size_t size, cc__fr_reader_t **out, char *err,
                                 size_t errlen)
{
    if (!base || !out) return fail(CC_ERR_INVALID_ARG, err, errlen, "no memory to attach to");
    cc_status_t st = make_reader(base, size, 0, out, err, errlen);
    if (st == CC_OK) (*out)->own = 1;
    return st;
}

cc_status_t cc__fr_reader_open(const char *path, cc__fr_reader_t **out, char *err, size_t errlen)
{
    if (!path || !out) return fail(CC_ERR_INVALID_ARG, err, errlen, "no ring file named");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(errno == ENOENT ? CC_ERR_NOT_FOUND : CC_ERR_SYSTEM, err, errlen,
                    "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(CC_ERR_INVALID_ARG, err, errlen, "%s is not a regular file", path);
    }
    size_t size = (size_t)st.st_size;
    if (size < CC__FR_HEADER_BYTES) {
        close(fd);
        return fail(CC_ERR_INVALID_ARG, err, errlen, "%s: truncated: %zu bytes, a header needs %d",
                    path, size, CC__FR_HEADER_BYTES);
    }
    /* Shared, not private: a live writer's later words must be visible. */
    void *base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    int e = errno;
    if (base == MAP_FAILED) {
        close(fd);
        return fail(CC_ERR_SYSTEM, err, errlen, "cannot map %s: %s", path, strerror(e));
    }
    cc_status_t s = make_reader(base, size, 1, out, err, errlen);
    if (s != CC_OK)
        munmap(base, size);
    else
        data_extents(fd, size, *out);
    close(fd);
    return s;
}

void cc__fr_reader_close(cc__fr_reader_t *r)
{
    if (!r) return;
    if (r->mapped) munmap((void *)(uintptr_t)r->base, r->size);
    free(r->data);
    free(r);
}

/* ---- snapshots ---------------------------------------------------------- */

static const char *const state_names[CC__FR_STATE_COUNT] = {
    "free", "scheduled", "started", "completed", "failed", "timed_out", "aborted"};

const char *cc__fr_state_name(uint32_t state)
{
    return state < CC__FR_STATE_COUNT ? state_names[state] : "?";
}

/* Decides how long a held slot is waited for: a dead writer never lets go. */
static int writer_alive(const cc__fr_reader_t *r, const cc__fr_header_t *h)
{
    if (r->own) return 1;
    if (h->closed_ns || h->pid <= 0) return 0;
    /* A heuristic: the pid may have been reused by another process. */
    return kill(h->pid, 0) == 0 || errno == EPERM;
}

/* The counters that grow while the writer runs, against the capacities. */
static cc_status_t check_live(const cc__fr_header_t *h, char *err, size_t el)
{
    if (h->comm_count > h->comm_capacity || h->rank_used > h->rank_capacity ||
        h->module_count > h->module_capacity)
        return fail(CC_ERR_INVALID_ARG, err, el,
                    "table counts beyond capacity: %llu/%u comms, "
                    "%llu/%u ranks, %llu/%u modules",
                    (unsigned long long)h->comm_count, h->comm_capacity,
                    (unsigned long long)h->rank_used, h->rank_capacity,
                    (unsigned long long)h->module_count, h->module_capacity);
    return CC_OK;
}

static cc_status_t copy_comms(const cc__fr_reader_t *r, cc__fr_snapshot_t *s, char *err, size_t el)
{
    const cc__fr_header_t *h = &s->hdr;
    s->nranks = (uint32_t)h->rank_used;
    s->ncomms = (uint32_t)h->comm_count;
    s->ranks = calloc(s->nranks + 1, sizeof(int32_t));
    s->comms = calloc(s->ncomms + 1, sizeof(cc__fr_comm_t));
    if (!s->ranks || !s->comms) return CC_ERR_NO_MEMORY;
    /* rank_used was read after comm_count, and the writer publishes the
     * other way round: every counted comm's members lie within it. */
    const int32_t *pool = (const int32_t *)(const void *)(r->base + h->rank_off);
    for (uint32_t i = 0; i < s->nranks; i++)
        s->ranks[i] = __atomic_load_n(&pool[i], __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < s->ncomms; i++) {
        cc__fr_comm_t *c = &s->comms[i];
        cc__fr_load_words(c, r->base + h->comm_off + (uint64_t)i * h->comm_size, sizeof(*c));
        if (!terminated(c->name, sizeof(c->name)))
            return fail(CC_ERR_INVALID_ARG, err, el, "comm %u: unterminated name", i);
        if (c->size < 0 || (c->ranks_count && c->ranks_count != (uint32_t)c->size) ||
            (uint64_t)c->ranks_off + c->ranks_count > s->nranks)
            return fail(CC_ERR_INVALID_ARG, err, el,
                        "comm %u (%s): %u members at %u are beyond "
                        "the %u ranks in the pool",
                        i, c->name, c->ranks_count, c->ranks_off, s->nranks);
    }
    return CC_OK;
}

static cc_status_t copy_modules(const cc__fr_reader_t *r, cc__fr_snapshot_t *s, char *err,
                                size_t el)
{
    const cc__fr_header_t *h = &s->hdr;
    s->nmodules = (uint32_t)h->module_count;
    s->modules = calloc(s->nmodules + 1, sizeof(cc__fr_module_t));
    if (!s->modules) return CC_ERR_NO_MEMORY;
    for (uint32_t i = 0; i < s->nmodules; i++) {
        cc__fr_module_t *m = &s->modules[i];
        cc__fr_load_words(m, r->base + h->module_off + (uint64_t)i * h->module_size, sizeof(*m));
        if (!terminated(m->path, sizeof(m->path)) || m->build_id_len > sizeof(m->build_id) ||
            m->start > m->end)
            return fail(CC_ERR_INVALID_ARG, err, el,
                        "module %u: unterminated path, bad build id "
                        "length or range",
                        i);
    }
    return CC_OK;
}

/* TSan models no fences: its builds read every ring with atomic loads. */
#if defined(__SANITIZE_THREAD__)
#define CC__TSAN 1
#else
#define CC__TSAN 0
#endif

/* Copy one slot under its seqlock: 0 consistent, 1 never written, -1 torn. */
static int copy_slot(const unsigned char *src, unsigned char *dst, size_t size, int tries, int plain)
{
    const uint64_t *seq = (const uint64_t *)(const void *)src;
    for (int t = 0; t < tries; t++) {
        uint64_t s1 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
        if (s1 == 0) return 1; /* the first write makes it 2 */
        /* Odd: held. A live writer lets go within nanoseconds unless it was
         * preempted; a dead one never does, and the caller then asks for
         * only a second look. */
        if (s1 & 1) {
            sched_yield(); /* off the op path: let the writer finish */
            continue;
        }
        /* Another process's ring is shared memory, not this program's objects:
         * a plain copy and a fence are the seqlock's whole protocol (and 8x
         * faster). This process's own ring is read with atomic loads (its
         * writers are threads of this program). */
        if (plain && !CC__TSAN) {
            memcpy(dst + 8, src + 8, size - 8);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
        } else {
            cc__fr_load_words(dst + 8, src + 8, size - 8);
        }
        /* The copies were acquire loads (or fenced): this load cannot move before them. */
        if (__atomic_load_n(seq, __ATOMIC_ACQUIRE) == s1) {
            memcpy(dst, &s1, 8);
            return 0;
        }
    }
    return -1;
}

/* Why a consistent copy cannot be a real entry, or NULL. A consistent copy
 * of a file someone damaged is still damaged: the seqlock proves only that
 * no writer was halfway. */
static const char *check_entry(const cc__fr_header_t *h, uint32_t slot, const cc__fr_entry_t *e)
{
    if (!e->record_id || (e->record_id - 1) % h->capacity != slot)
        return "record id does not belong to this slot";
    if (e->record_id > h->next_record_id) return "record id beyond the ids issued";
    if (e->type >= CC_OP_TYPE_COUNT) return "unknown op type";
    if (e->dtype >= CC__FR_DTYPE_CODES || e->redop > CC_REDOP_COUNT)
        return "unknown dtype or redop";
    if (e->state == CC__FR_FREE || e->state >= CC__FR_STATE_COUNT) return "unknown state";
    if (e->nframes > h->stack_depth) return "more frames than the stack depth";
    if (e->comm_slot != CC__FR_NO_COMM && e->comm_slot >= h->comm_capacity)
        return "comm slot beyond the table";
    if (!terminated(e->algorithm, sizeof(e->algorithm)) ||
        !terminated(e->transport, sizeof(e->transport)) ||
        !terminated(e->engine, sizeof(e->engine)) ||
        !terminated(e->gpu_kernel, sizeof(e->gpu_kernel)))
        return "unterminated string";
    return NULL;
}

static int add_problem(cc__fr_snapshot_t *s, uint32_t slot, uint32_t kind, uint64_t rid,
                       const char *why)
{
    if ((s->nproblems & (s->nproblems - 1)) == 0) { /* full at 0, 1, 2, 4, 8, ... */
        size_t n = s->nproblems ? 2 * (size_t)s->nproblems : 1;
        cc__fr_problem_t *p = realloc(s->problems, n * sizeof(*p));
        if (!p) return -1;
        s->problems = p;
    }
    s->problems[s->nproblems++] = (cc__fr_problem_t){slot, kind, rid, why};
    if (kind == CC__FR_TORN)
        s->ntorn++;
    else
        s->ncorrupt++;
    return 0;
}

static int by_record_id(const void *a, const void *b)
{
    uint64_t x = ((const cc__fr_entry_t *)a)->record_id, y = ((const cc__fr_entry_t *)b)->record_id;
    return x < y ? -1 : x > y;
}

/*
 * Sort the copies by record id. They were copied from the oldest record's
 * slot on, so they are normally sorted already, or one rotation away (a
 * writer wrapped around during the copy): find the oldest, rotate, check; a
 * file whose ids are out of ring order (only a damaged one) falls back to
 * qsort. Saves a general sort of entry-sized records per snapshot.
 */
static int order_by_record_id(cc__fr_snapshot_t *s)
{
    uint32_t n = s->nentries, first = 0;
    size_t es = s->entry_size;
    for (uint32_t i = 1; i < n; i++)
        if (by_record_id(s->entries + i * es, s->entries + first * es) < 0) first = i;
    if (first) {
        unsigned char *tmp = malloc((size_t)first * es);
        if (!tmp) return -1;
        memcpy(tmp, s->entries, (size_t)first * es);
        memmove(s->entries, s->entries + (size_t)first * es, (size_t)(n - first) * es);
        memcpy(s->entries + (size_t)(n - first) * es, tmp, (size_t)first * es);
        free(tmp);
    }
    for (uint32_t i = 1; i < n; i++)
        if (by_record_id(s->entries + (i - 1) * es, s->entries + i * es) > 0) {
            qsort(s->entries, n, es, by_record_id);
            break;
        }
    return 0;
}

/* Drop the copies that cannot be real entries, keeping the order. */
static cc_status_t keep_valid(cc__fr_snapshot_t *s, const uint32_t *slots, uint32_t n)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *src = s->entries + (size_t)i * s->entry_size;
        const cc__fr_entry_t *e = (const cc__fr_entry_t *)(const void *)src;
        const char *why = check_entry(&s->hdr, slots[i], e);
        if (why) {
            if (add_problem(s, slots[i], CC__FR_CORRUPT, e->record_id, why))
                return CC_ERR_NO_MEMORY;
            continue;
        }
        if (kept != i) memcpy(s->entries + (size_t)kept * s->entry_size, src, s->entry_size);
        kept++;
    }
    s->nentries = kept;
    return CC_OK;
}

/* Room for one more copied slot (or for `want` of them); grows by doubling so
 * that a sparse file of empty slots costs no memory. */
static int reserve(cc__fr_snapshot_t *s, uint32_t **slots, uint32_t n, uint32_t *cap, uint32_t want)
{
    if (n < *cap && !want) return 0;
    uint32_t c = want ? want : *cap ? 2 * *cap : 64;
    unsigned char *e = realloc(s->entries, (size_t)c * s->entry_size);
    if (e) s->entries = e;
    uint32_t *sl = e ? realloc(*slots, (size_t)c * sizeof(uint32_t)) : NULL;
    if (!sl) return -1;
    *slots = sl;
    *cap = c;
    return 0;
}

/*
 * The slots the header's counter says were written: those of the last
 * min(next_record_id, capacity) record ids, oldest first; a slot whose first
 * word is in a hole of the file is left out too. Returns how many, with the
 * first slot in *start.
 */
static uint32_t window(const cc__fr_reader_t *r, uint64_t next, uint32_t *start)
{
    uint32_t cap = r->hdr.capacity;
    *start = next < cap ? 0 : (uint32_t)(next % cap);
    return next < cap ? (uint32_t)next : cap;
}

static const unsigned char *slot_at(const cc__fr_reader_t *r, uint32_t i)
{
    uint64_t off = r->hdr.header_size + (uint64_t)i * r->hdr.entry_size;
    return in_data(r, off) ? r->base + off : NULL;
}

/* Slots a writer has touched (seq != 0): the copies' buffer is sized once. */
static uint32_t used_slots(const cc__fr_reader_t *r, uint64_t next)
{
    uint32_t start, n = 0, w = window(r, next, &start);
    for (uint32_t k = 0; k < w; k++) {
        const unsigned char *src = slot_at(r, (uint32_t)(((uint64_t)start + k) % r->hdr.capacity));
        n += src && __atomic_load_n((const uint64_t *)(const void *)src, __ATOMIC_RELAXED) != 0;
    }
    return n;
}

static cc_status_t copy_entries(const cc__fr_reader_t *r, cc__fr_snapshot_t *s)
{
    const cc__fr_header_t *h = &r->hdr;
    s->entry_size = h->entry_size;
    uint32_t *slots = NULL, n = 0, cap = 0, start;
    int tries = s->live ? LIVE_TRIES : 2;
    cc_status_t st = CC_OK;
    /* Room for what is there now (and a little that live writers may add). */
    uint32_t want = used_slots(r, s->hdr.next_record_id);
    if (want && reserve(s, &slots, 0, &cap, want + 16)) return CC_ERR_NO_MEMORY;
    /* From the oldest record's slot on: the copies come out in record order. */
    uint32_t w = window(r, s->hdr.next_record_id, &start);
    for (uint32_t k = 0; k < w && st == CC_OK; k++) {
        uint32_t i = (uint32_t)(((uint64_t)start + k) % h->capacity);
        const unsigned char *src = slot_at(r, i);
        if (!src || !__atomic_load_n((const uint64_t *)(const void *)src, __ATOMIC_RELAXED))
            continue; /* never written */
        if (reserve(s, &slots, n, &cap, 0)) {
            st = CC_ERR_NO_MEMORY;
            break;
        }
        int rc = copy_slot(src, s->entries + (size_t)n * h->entry_size, h->entry_size, tries, !r->own);
        if (rc == 0) slots[n++] = i;
        if (rc >= 0) continue;
        uint64_t rid = __atomic_load_n((const uint64_t *)(const void *)(src + 8), __ATOMIC_RELAXED);
        if (add_problem(s, i, CC__FR_TORN, rid, "a writer held the slot")) st = CC_ERR_NO_MEMORY;
    }
    /* Every id copied was issued before this read. */
    s->hdr.next_record_id = __atomic_load_n(
        (const uint64_t *)(const void *)(r->base + offsetof(cc__fr_header_t, next_record_id)),
        __ATOMIC_ACQUIRE);
    if (st == CC_OK) st = keep_valid(s, slots, n);
    free(slots);
    if (st == CC_OK && s->nentries && order_by_record_id(s)) st = CC_ERR_NO_MEMORY;
    return st;
}

cc_status_t cc__fr_reader_snapshot(cc__fr_reader_t *r, cc__fr_snapshot_t **out, char *err,
                                   size_t errlen)
{
    if (!r || !out) return fail(CC_ERR_INVALID_ARG, err, errlen, "no reader or output");
    cc__fr_snapshot_t *s = calloc(1, sizeof(*s));
    if (!s) return CC_ERR_NO_MEMORY;
    /* Fixed part from the validated copy (never re-read: it could have been
     * changed to something unchecked), live words read now. */
    cc__fr_header_t now;
    cc__fr_load_words(&now, r->base, sizeof(now));
    s->hdr = r->hdr;
    memcpy((unsigned char *)&s->hdr + 512, (unsigned char *)&now + 512, sizeof(now) - 512);
    s->live = writer_alive(r, &s->hdr);
    cc_status_t st = check_live(&s->hdr, err, errlen);
    if (st == CC_OK) st = copy_comms(r, s, err, errlen);
    if (st == CC_OK) st = copy_modules(r, s, err, errlen);
    if (st == CC_OK) st = copy_entries(r, s);
    if (st != CC_OK) {
        if (st == CC_ERR_NO_MEMORY) fail(st, err, errlen, "out of memory for a snapshot");
        cc__fr_snapshot_free(s);
        return st;
    }
    *out = s;
    return CC_OK;
}

void cc__fr_snapshot_free(cc__fr_snapshot_t *s)
{
    if (!s) return;
    free(s->comms);
    free(s->ranks);
    free(s->modules);
    free(s->entries);
    free(s->problems);
    free(s);
}

/* The slot is a hint (it may name a newer comm than the copy knows); the id
 * decides. Newest first: a comm id used again belongs to the newest record. */
const cc__fr_comm_t *cc__fr_snap_comm(const cc__fr_snapshot_t *s, const cc__fr_entry_t *e)
{
    if (e->comm_slot < s->ncomms && s->comms[e->comm_slot].comm_id == e->comm_id)
        return &s->comms[e->comm_slot];
    for (uint32_t i = s->ncomms; i-- > 0;)
        if (s->comms[i].comm_id == e->comm_id) return &s->comms[i];
    return NULL;
}

const int32_t *cc__fr_snap_comm_ranks(const cc__fr_snapshot_t *s, const cc__fr_comm_t *c)
{
    if (!c || !c->ranks_count || (uint64_t)c->ranks_off + c->ranks_count > s->nranks) return NULL;
    return s->ranks + c->ranks_off;
}

uint64_t cc__fr_snap_realtime(const cc__fr_snapshot_t *s, uint64_t mono_ns)
{
    if (!mono_ns) return 0;
    /* Signed: a time from before the ring opened is still converted. */
    return s->hdr.realtime_base_ns + (uint64_t)((int64_t)(mono_ns - s->hdr.monotonic_base_ns));
}
