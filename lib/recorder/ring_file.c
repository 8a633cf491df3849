/*
 * ring_file.c - a ring's file: its layout, creation (owner-only, O_EXCL |
 * O_NOFOLLOW, space reserved before the mapping), header, and close. The
 * entries' transitions are ring.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ccomm/types.h"
#include "ccomm/version.h"
#include "base/clock.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/solo.h" /* cc__solo_init: before the ring's first entry */
#include "recorder/ring.h"

/* Where the tables and the slots go in the file. */
struct layout {
    uint64_t comm_off, rank_off, module_off, header_size, file_size;
    uint32_t comm_cap, rank_cap, entry_size;
};

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

/*
 * Tables are sized once: growing a shared mapping under running writers is
 * not worth its complexity. Their pages are reserved with the slots (about
 * 280 KiB next to 1 MiB of slots by default), so they are sized for real
 * jobs, not for the worst case: 512 comms, and members for 64 comms of the
 * world's size (at least 16384 ranks), enough for world plus the splits
 * training jobs make.
 */
static void plan(const cc__fr_ring_params_t *p, struct layout *l)
{
    l->comm_cap = p->comm_capacity ? p->comm_capacity : CC__FR_COMM_CAPACITY;
    /* Entries name their comm with a u16; 0xffff means none. */
    if (l->comm_cap >= CC__FR_NO_COMM) l->comm_cap = CC__FR_NO_COMM - 1;
    uint64_t ranks = p->rank_capacity;
    if (!ranks) ranks = p->world_size > 256 ? (uint64_t)p->world_size * 64 : 16384;
    l->rank_cap = ranks > (1u << 24) ? (1u << 24) : (uint32_t)ranks;
    /* Whole cache lines per slot: two writers never share a line. */
    l->entry_size = (uint32_t)round_up(CC__FR_ENTRY_BYTES + 8 * p->stack_depth, 64);
    l->comm_off = 4096;
    l->rank_off = l->comm_off + (uint64_t)l->comm_cap * CC__FR_COMM_BYTES;
    l->module_off = round_up(l->rank_off + (uint64_t)l->rank_cap * 4, 64);
    l->header_size = round_up(l->module_off + CC__FR_MODULE_CAPACITY * CC__FR_MODULE_BYTES, 4096);
    l->file_size = l->header_size + (uint64_t)p->capacity * l->entry_size;
}

/* Identity and geometry; the magic is stored last, with release order, so a
 * reader that sees it sees the rest. */
static void write_header(cc__fr_ring_t *r, const cc__fr_ring_params_t *p, const struct layout *l)
{
    cc__fr_header_t *h = r->hdr;
    h->version_major = CC__FR_VERSION_MAJOR;
    h->version_minor = CC__FR_VERSION_MINOR;
    h->header_size = (uint32_t)l->header_size;
    h->entry_size = l->entry_size;
    h->capacity = p->capacity;
    h->stack_depth = p->stack_depth;
    h->file_size = l->file_size;
    h->rank = p->rank;
    h->world_size = p->world_size;
    h->pid = (int32_t)getpid();
    h->header_struct = CC__FR_HEADER_BYTES;
    /* Read back to back: entries keep monotonic times (cheap, never jump);
     * readers turn them into wall-clock times with this pair. */
    h->realtime_base_ns = cc__realtime_ns();
    h->monotonic_base_ns = cc__now_ns();
    h->comm_off = l->comm_off;
    h->comm_capacity = l->comm_cap;
    h->comm_size = CC__FR_COMM_BYTES;
    h->rank_off = l->rank_off;
    h->rank_capacity = l->rank_cap;
    h->module_off = l->module_off;
    h->module_capacity = CC__FR_MODULE_CAPACITY;
    h->module_size = CC__FR_MODULE_BYTES;
    cc__fr_put_str(h->host, sizeof(h->host), p->host);
    cc__fr_put_str(h->job_id, sizeof(h->job_id), p->job_id);
    cc__fr_put_str(h->lib_version, sizeof(h->lib_version), CC_VERSION_STRING);
    uint64_t magic;
    memcpy(&magic, CC__FR_MAGIC, 8);
    __atomic_store_n((uint64_t *)(void *)h->magic, magic, __ATOMIC_RELEASE);
}

/* A new file of our own. The name carries the pid, so one already there is
 * an earlier process's with the same pid: replaced, never reused (it may
 * not be ours, and its mode and size are not what we would choose). */
static cc_status_t create_file(cc__fr_ring_t *r, const char *path)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        r->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (r->fd >= 0 || errno != EEXIST || attempt) break;
        cc_log_warn(CC_SUBSYS_RECORDER, "recorder: removing stale ring file %s", path);
        unlink(path);
    }
    if (r->fd < 0) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot create ring file %s: %s", path,
                     strerror(errno));
        return CC_ERR_SYSTEM;
    }
    /* Only a file no one else can truncate may back the mapping (SIGBUS). */
    char why[PATH_MAX + 100];
    if (cc__fd_own_file(r->fd, path, why, sizeof(why)) != 0) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: refusing ring file: %s", why);
        return CC_ERR_SYSTEM;
    }
    return CC_OK;
}

/* Open, size and map the file. */
static cc_status_t map_file(cc__fr_ring_t *r, const char *path, uint64_t size)
{
    CC_CHECK(create_file(r, path));
    /* Reserve the pages now: a full tmpfs must fail here, not SIGBUS later. */
    int err = posix_fallocate(r->fd, 0, (off_t)size);
    if (err == EOPNOTSUPP || err == EINVAL) err = ftruncate(r->fd, (off_t)size) ? errno : 0;
    if (err) {
        char need[32], sp[PATH_MAX + 64], dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) *slash = '\0';
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot reserve %s for %s: %s (%s)%s",
                     cc__bytes_str(size, need, sizeof(need)), path, strerror(err),
                     cc__space_str(dir, sp, sizeof(sp)),
                     err == ENOSPC ? "; set CCOMM_RECORDER_DIR to a directory with room, lower "
                                     "CCOMM_RECORDER_ENTRIES, or give /dev/shm more room (docker "
                                     "run --shm-size=1g)"
                                   : "");
        return CC_ERR_SYSTEM;
    }
    /* Populated: the pages fallocate reserved enter our page tables now, not
     * one fault every 16 slots of the first lap on the op path. */
    void *base =
        mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, 0);
    if (base == MAP_FAILED) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot map %s (%llu bytes): %s", path,
                     (unsigned long long)size, strerror(errno));
        return CC_ERR_SYSTEM;
    }
    /* The mapping keeps the file; the descriptor is not needed any more. */
    close(r->fd);
    r->fd = -1;
    r->hdr = base;
    r->size = (size_t)size;
    return CC_OK;
}

cc_status_t cc__fr_ring_create(const char *path, const cc__fr_ring_params_t *p, cc__fr_ring_t **out)
{
    cc__solo_init(); /* before the ring's first entry (base/solo.h) */
    if (!path || strlen(path) >= PATH_MAX || !p || !out || p->capacity < 1 ||
        p->capacity > CC__FR_MAX_CAPACITY || p->stack_depth > CC__FR_MAX_FRAMES) {
        cc_log_error(CC_SUBSYS_RECORDER,
                     "recorder: bad ring parameters (path %s, capacity %u, "
                     "stack depth %u)",
                     path ? path : "NULL", p ? p->capacity : 0, p ? p->stack_depth : 0);
        return CC_ERR_INVALID_ARG;
    }
    struct layout l;
    plan(p, &l);
    /* The names cache lives and dies with the struct (see ring.h). */
    cc__fr_ring_t *r = calloc(1, sizeof(*r) + (size_t)p->capacity * sizeof(*r->names));
    if (!r) return CC_ERR_NO_MEMORY;
    r->names = (struct cc__fr_slot_names *)(void *)(r + 1);
    r->fd = -1;
    cc_status_t st = map_file(r, path, l.file_size);
    if (st != CC_OK) {
        /* A half-made file without its magic would only confuse ccdump. */
        if (r->fd >= 0) close(r->fd);
        unlink(path);
        free(r);
        return st;
    }
    unsigned char *base = (unsigned char *)r->hdr;
    r->slots = base + l.header_size;
    r->comms = (cc__fr_comm_t *)(void *)(base + l.comm_off);
    r->ranks = (int32_t *)(void *)(base + l.rank_off);
    r->modules = (cc__fr_module_t *)(void *)(base + l.module_off);
    r->capacity = p->capacity;
    /* A power-of-two capacity turns the per-op modulo into a mask. */
    r->mask = (p->capacity & (p->capacity - 1)) ? 0 : p->capacity - 1;
    r->entry_size = l.entry_size;
    r->stack_depth = p->stack_depth;
    r->comm_capacity = l.comm_cap;
    memcpy(r->path, path, strlen(path) + 1);
    write_header(r, p, &l);
    *out = r;
    return CC_OK;
}

int cc__fr_failure_recorded(const cc__fr_header_t *h, const cc__fr_comm_t *comms, uint64_t ncomms,
                            char *why, size_t whylen)
{
    uint64_t sig = __atomic_load_n(&h->fatal_signal, __ATOMIC_ACQUIRE);
    uint64_t dumps = __atomic_load_n(&h->dump_count, __ATOMIC_ACQUIRE);
    if (sig) return snprintf(why, whylen, "fatal signal %llu", (unsigned long long)sig), 1;
    if (dumps) return snprintf(why, whylen, "%llu dump(s) written", (unsigned long long)dumps), 1;
    for (uint64_t i = 0; i < ncomms; i++) {
        if (!(__atomic_load_n(&comms[i].flags, __ATOMIC_ACQUIRE) & CC__FR_CF_ABORTED)) continue;
        snprintf(why, whylen, "communicator %.64s (%016llx) aborted", comms[i].name,
                 (unsigned long long)comms[i].comm_id);
        return 1;
    }
    return 0;
}

void cc__fr_ring_destroy(cc__fr_ring_t *r)
{
    if (!r) return;
    if (r->hdr) {
        /* Tells readers the process did not die with this ring open. */
        __atomic_store_n(&r->hdr->closed_ns, cc__now_ns(), __ATOMIC_RELEASE);
        munmap(r->hdr, r->size);
    }
    free(r);
}

void cc__fr_ring_detach(cc__fr_ring_t *r)
{
    if (!r) return;
    if (r->hdr) munmap(r->hdr, r->size);
    free(r);
}
