/*
 * arena.c - making and tearing down a communicator's arena (arena.h),
 * the bells and liveness its waits use, and reading a peer's memory.
 *
 * Creation is collective and runs over the net's own messages, in rounds
 * that rank 0 leads, so every rank ends with the same verdict:
 *
 *   1. rank 0 creates <CCOMM_SHM_DIR>/ccomm-arena-<comm id>-<pid> (O_EXCL,
 *      0600), reserves its pages, maps it and tells everyone how it went;
 *   2. every other rank maps it, checks its header, writes its mapping's
 *      address into its slot and answers; rank 0 unlinks the file (from now
 *      on a crash leaves nothing behind) and tells everyone the result;
 *   3. every rank reads a word of every peer's mapping with
 *      process_vm_readv and answers whether it could; rank 0 tells everyone
 *      whether all could (then the single-copy algorithms are allowed).
 *
 * A rank that cannot create or map the arena still takes part, so all of
 * them fall back to the net's algorithms together.
 *
 * The arena sleeps on this rank's shm mailbox bell (shm.c): it is the one
 * futex word that every event a waiter must not miss already bumps (a
 * peer's abort or destroy, this rank's own net abort from any thread), so
 * an arena waiter wakes for them without a second wake-up path. Liveness
 * is the mailbox transport's own check (pidfds, the mailboxes' `closed`).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "base/clock.h"
#include "base/config.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "transport/arena.h"
#include "transport/arena_int.h"

_Static_assert(sizeof(struct cc__arena_ctl) <= CC__ARENA_CTL_BYTES, "slot control fits");
_Static_assert(sizeof(struct cc__arena_par) == 5 * CC__ARENA_LINE, "arrival slots of five lines");
_Static_assert(CC__ARENA_INLINE <= CC__ARENA_DATA, "inline payload fits the data area too");

/* Tags of the creation rounds: collective number 0 is never an op's. */
#define ARENA_TAG(step) (CC__TAG_INTERNAL | 0xe0u | (uint32_t)(step))

/* The file's name; empty (so that creating or opening it fails) when it does not fit. */
static int arena_path(uint64_t comm_id, int pid0, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/ccomm-arena-%016llx-%d", cc__cfg()->shm_dir,
                     (unsigned long long)comm_id, pid0);
    if (n > 0 && (size_t)n < len) return 0;
    buf[0] = '\0';
    return -1;
}

static size_t arena_bytes(int n)
{
    return CC__ARENA_HDR_BYTES + (size_t)n * CC__ARENA_STRIDE;
}

/* Step 1 on rank 0: create, reserve and map the file; fill the header. */
static cc_status_t create_file(cc__arena_t *ar)
{
    size_t len = arena_bytes(ar->n);
    void *map;
    int e, opened;
    if (cc__shm_file_create(ar->path, len, "arena", &map, &e, &opened) != CC_OK) {
        char need[32], sp[600];
        if (!opened)
            cc_log_warn(CC_SUBSYS_SHM, "shm: cannot create arena %s: %s", ar->path, strerror(e));
        else
            cc_log_warn(CC_SUBSYS_SHM, "shm: cannot size or map %s of arena %s: %s (%s)%s",
                        cc__bytes_str(len, need, sizeof(need)), ar->path, strerror(e),
                        cc__space_str(cc__cfg()->shm_dir, sp, sizeof(sp)),
                        e == ENOSPC ? "; give CCOMM_SHM_DIR more room (docker run --shm-size=1g) "
                                      "for the shared-memory algorithms"
                                    : "");
        if (opened) ar->path[0] = '\0'; /* removed already */
        return CC_ERR_SYSTEM;
    }
    ar->base = map;
    ar->len = len;
    struct cc__arena_hdr *h = map;
    h->magic = CC__ARENA_MAGIC;
    h->version = CC__ARENA_VERSION;
    h->nranks = (uint32_t)ar->n;
    h->comm_id = ar->comm_id;
    h->stride = CC__ARENA_STRIDE;
    h->creator_pid = (int32_t)getpid();
    return CC_OK;
}

/* Step 2 on the others: map rank 0's file and check that it is this communicator's. */
static cc_status_t map_file(cc__arena_t *ar)
{
    void *map;
    size_t len = arena_bytes(ar->n), got = 0;
    int e = 0;
    char why[600];
    /* Only this user's file backs the mapping (another user's could be truncated: SIGBUS). */
    cc_status_t st = cc__shm_file_map(ar->path, len, len, &map, &got, &e, why, sizeof(why));
    if (st == CC_ERR_PROTOCOL) {
        cc_log_warn(CC_SUBSYS_SHM, "shm: refusing arena: %s", why);
        return st;
    }
    if (st != CC_OK) {
        cc_log_warn(CC_SUBSYS_SHM, "shm: cannot map arena %s (%zu bytes): %s", ar->path, len,
                    strerror(e));
        return st;
    }
    ar->base = map;
    ar->len = len;
    const struct cc__arena_hdr *h = map;
    if (h->magic != CC__ARENA_MAGIC || h->version != CC__ARENA_VERSION ||
        h->nranks != (uint32_t)ar->n || h->comm_id != ar->comm_id ||
        h->stride != CC__ARENA_STRIDE || h->creator_pid != cc__net_peer_pid(ar->net, 0)) {
        cc_log_warn(CC_SUBSYS_SHM, "shm: arena %s has a foreign header", ar->path);
        return CC_ERR_PROTOCOL;
    }
    return CC_OK;
}

/* Step 3: can this rank read every peer's memory? Reads the magic through each peer's mapping. */
static int probe_cma(cc__arena_t *ar)
{
    if (!cc__cfg()->shm_cma_threshold) {
        cc_log_info(CC_SUBSYS_SHM, "shm: CCOMM_SHM_CMA_THRESHOLD=0: shared-memory collectives "
                                   "copy through the arena, not from the peers' memory");
        return 0;
    }
    for (int q = 0; q < ar->n; q++) {
        if (q == ar->rank) continue;
        uint64_t word = 0, addr = cc__arena_ctl(ar, q)->base;
        struct iovec l = {&word, sizeof(word)}, r = {(void *)(uintptr_t)addr, sizeof(word)};
        /* The kernel checks both calls alike, but a seccomp filter may tell them apart: the
         * write puts the same magic back (broadcast_shm.c's root writes into its reader). */
        const char *call = "process_vm_readv";
        int ok = process_vm_readv(ar->pids[q], &l, 1, &r, 1, 0) == (ssize_t)sizeof(word) &&
                 word == CC__ARENA_MAGIC;
        if (ok) {
            call = "process_vm_writev";
            ok = process_vm_writev(ar->pids[q], &l, 1, &r, 1, 0) == (ssize_t)sizeof(word);
        }
        if (!ok) {
            cc_log_info(CC_SUBSYS_SHM,
                        "shm: %s of rank %d (pid %d) refused (%s): large shared-memory "
                        "collectives use the transport's algorithms",
                        call, q, ar->pids[q], strerror(errno));
            return 0;
        }
    }
    return 1;
}

/* Rank 0 gathers one int32 from every rank, ANDs them and tells everyone the verdict. */
static cc_status_t agree(cc__arena_t *ar, int32_t mine, int step, uint64_t deadline, int32_t *all)
{
    cc__net_t *net = ar->net;
    int32_t v = mine;
    if (ar->rank != 0) {
        CC_CHECK(cc__net_send(net, 0, ARENA_TAG(step), &v, sizeof(v), deadline));
        return cc__net_recv(net, 0, ARENA_TAG(step + 1), all, sizeof(*all), deadline);
    }
    for (int q = 1; q < ar->n; q++) {
        int32_t got = 0;
        CC_CHECK(cc__net_recv(net, q, ARENA_TAG(step), &got, sizeof(got), deadline));
        if (!got) v = 0;
    }
    if (step == 1 && ar->path[0]) { /* every rank mapped it or gave up */
        unlink(ar->path);
        ar->path[0] = '\0';
    }
    for (int q = 1; q < ar->n; q++)
        CC_CHECK(cc__net_send(net, q, ARENA_TAG(step + 1), &v, sizeof(v), deadline));
    *all = v;
    return CC_OK;
}

static cc_status_t arena_setup(cc__arena_t *ar, uint64_t deadline, int32_t *ok)
{
    cc__net_t *net = ar->net;
    /* Round 1: rank 0 creates; the others learn whether it could. */
    int32_t created = 0;
    if (ar->rank == 0) {
        created = create_file(ar) == CC_OK;
        for (int q = 1; q < ar->n; q++)
            CC_CHECK(cc__net_send(net, q, ARENA_TAG(0), &created, sizeof(created), deadline));
    } else {
        CC_CHECK(cc__net_recv(net, 0, ARENA_TAG(0), &created, sizeof(created), deadline));
    }
    int32_t mapped = created && (ar->rank == 0 || map_file(ar) == CC_OK);
    if (mapped) {
        cc__arena_ctl(ar, ar->rank)->base = (uint64_t)(uintptr_t)ar->base;
        atomic_store(&cc__arena_ctl(ar, ar->rank)->cpu, -1);
    }
    /* Round 2: everyone mapped it (rank 0 unlinks the file in between). */
    CC_CHECK(agree(ar, mapped, 1, deadline, ok));
    if (!*ok) return CC_OK;
    /* Round 3: single copy between every pair. */
    int32_t cma = 0;
    CC_CHECK(agree(ar, probe_cma(ar), 3, deadline, &cma));
    ar->cma_ok = cma;
    /* Round 4: light publishes (arena_sync.c) need every rank registered for the sleepers'
     * barrier; one rank without it keeps everyone on locked publishes. */
    int32_t light = 0;
    CC_CHECK(agree(ar, cc__cfg()->shm_membarrier && cc__membarrier_register(), 5, deadline,
                   &light));
    ar->light = light;
    return CC_OK;
}

/* PREFETCHW is there (CPUID 0x80000001, ECX bit 8: AMD since K6, Intel since Broadwell);
 * arena_sync.c's claim_line. Elsewhere the compiler's write prefetch serves. */
static int cpu_claims(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
#else
    return 1;
#endif
}

static void arena_init(cc__arena_t *ar, cc__net_t *net, uint64_t comm_id, const char *name,
                       const _Atomic int *abort)
{
    ar->net = net;
    ar->abort = abort;
    snprintf(ar->name, sizeof(ar->name), "%s", name ? name : "?");
    ar->comm_id = comm_id;
    ar->n = net->size;
    ar->rank = net->rank;
    ar->cpu = -1;
}

static cc__arena_t *arena_alloc(cc__net_t *net, uint64_t comm_id, const char *name,
                                const _Atomic int *abort)
{
    cc__arena_t *ar = calloc(1, sizeof(*ar));
    if (!ar) return NULL;
    arena_init(ar, net, comm_id, name, abort);
    ar->pids = calloc((size_t)net->size, sizeof(int));
    if (!ar->pids) {
        free(ar);
        return NULL;
    }
    for (int q = 0; q < net->size; q++)
        ar->pids[q] = cc__net_peer_pid(net, q);
    ar->spin_ns = net->spin_ns;
    ar->claim = cpu_claims();
    ar->check_ns = (uint64_t)cc__cfg()->peer_check_ms * 1000000ull;
    return ar;
}

cc_status_t cc__arena_create(cc__net_t *net, uint64_t comm_id, const char *name,
                             const _Atomic int *abort, cc__arena_t **out)
{
    *out = NULL;
    if (!net || net->size < 2 || net->size > CC__ARENA_MAX_RANKS || !cc__net_all_shm(net))
        return CC_OK;
    /* A rank without memory or a usable path still takes part, so the others learn it. */
    cc__arena_t stub = {.n = 0};
    arena_init(&stub, net, comm_id, name, abort);
    cc__arena_t *ar = arena_alloc(net, comm_id, name, abort);
    if (!ar)
        cc_log_warn(CC_SUBSYS_SHM, "shm: no memory for the arena of communicator %s", stub.name);
    else if (arena_path(comm_id, cc__net_peer_pid(net, 0), ar->path, sizeof(ar->path)) != 0)
        cc_log_warn(CC_SUBSYS_SHM, "shm: arena path under \"%s\" is too long (CCOMM_SHM_DIR)",
                    cc__cfg()->shm_dir);
    int32_t ok = 0;
    uint64_t deadline = cc__deadline_after_ms(cc__cfg()->connect_timeout * 1000);
    cc_status_t st = arena_setup(ar ? ar : &stub, deadline, &ok);
    if (st != CC_OK || !ok) {
        if (st == CC_OK)
            cc_log_warn(CC_SUBSYS_SHM,
                        "shm: communicator %s has no arena: collectives use the transport's "
                        "algorithms",
                        stub.name);
        cc__arena_destroy(ar);
        return st;
    }
    cc_log_info(CC_SUBSYS_SHM,
                "shm: arena of communicator %s: %d ranks, %zu bytes, cma %s, publishes %s",
                ar->name, ar->n, ar->len, ar->cma_ok ? "on" : "off",
                ar->light ? "light (membarrier)" : "locked");
    *out = ar;
    return CC_OK;
}

void cc__arena_destroy(cc__arena_t *ar)
{
    if (!ar) return;
    if (ar->base) munmap(ar->base, ar->len);
    if (ar->rank == 0 && ar->path[0]) unlink(ar->path); /* gone already unless setup failed */
    free(ar->scratch[0]);
    free(ar->scratch[1]);
    free(ar->pids);
    free(ar);
}

int cc__arena_cma_ok(const cc__arena_t *ar)
{
    return ar && ar->cma_ok;
}

/* A failed read or write: the peer died or closed (PEER_LOST), or the address is bad (a bug or
 * misuse). */
static cc_status_t cma_failed(cc__arena_op_t *ao, int peer, int write, uint64_t addr, size_t len,
                              int e)
{
    const char *cause = NULL;
    cc_status_t st = cc__shm_peer_check(ao->ar->net, peer, &cause);
    if (st == CC_OK && e == ESRCH) st = CC_ERR_PEER_LOST, cause = "died";
    if (st != CC_OK) {
        cc_log_error(CC_SUBSYS_SHM, "shm: peer rank %d (pid %d) %s while rank %d %s its data in %s",
                     peer, ao->ar->pids[peer], cause, ao->ar->rank, write ? "wrote" : "read",
                     cc_op_type_name(ao->info->type));
        return st;
    }
    cc_log_error(CC_SUBSYS_SHM,
                 "shm: %s: cannot %s %zu bytes at 0x%llx of rank %d (pid %d): %s (was its buffer "
                 "freed or resized during the op?)",
                 cc_op_type_name(ao->info->type), write ? "write" : "read", len,
                 (unsigned long long)addr, peer, ao->ar->pids[peer], strerror(e));
    return CC_ERR_SYSTEM;
}

cc_status_t cc__arena_read(cc__arena_op_t *ao, int peer, void *dst, uint64_t src, size_t len)
{
    int e = cc__shm_cma(ao->ar->pids[peer], 0, dst, src, len, NULL);
    return e ? cma_failed(ao, peer, 0, src, len, e) : CC_OK;
}

cc_status_t cc__arena_write(cc__arena_op_t *ao, int peer, uint64_t dst, const void *src, size_t len)
{
    int e = cc__shm_cma(ao->ar->pids[peer], 1, (void *)(uintptr_t)src, dst, len, NULL);
    return e ? cma_failed(ao, peer, 1, dst, len, e) : CC_OK;
}

void *cc__arena_scratch(cc__arena_t *ar, int which, size_t len)
{
    if (len <= ar->scratch_len[which]) return ar->scratch[which];
    void *p = realloc(ar->scratch[which], len);
    if (!p) {
        cc_log_error(CC_SUBSYS_SHM, "shm: out of memory for %zu bytes of scratch on communicator %s",
                     len, ar->name);
        return NULL;
    }
    ar->scratch[which] = p;
    ar->scratch_len[which] = len;
    return p;
}

/* ---- bells: the waits' sleep and wake (arena_sync.c) ---------------------------------------- */

_Atomic uint32_t *cc__arena_bell(const cc__arena_t *ar)
{
    struct cc__shm_state *st = cc__shm(ar->net);
    return st && st->mine ? &st->mine->bell : NULL;
}

void cc__arena_ring(const cc__arena_t *ar, int peer)
{
    struct cc__shm_peer *sp = cc__shm_peer_of(ar->net, peer);
    if (sp) cc__shm_ring_bell(sp->their, 1);
}
