/*
 * window.c - creating and destroying RMA windows (window.h). On an all-shm
 * communicator: the checks that every peer can be reached by
 * process_vm_writev, the exchange of every rank's pid, address and size
 * (gathered to rank 0 over the net, then sent to all), and the signal
 * segment (rank 0 creates it O_EXCL|O_NOFOLLOW 0600 in the per-user shm
 * dir, the others map it after checking its owner and size, rank 0
 * unlinks it once everyone reported). On a communicator with a TCP peer
 * (class NET: CCOMM_TRANSPORT=tcp, or ranks on several hosts, mixed
 * included) every peer is served over TCP, the same-host ones too: the
 * exchange carries each rank's window listener port and token instead of
 * the segment, then window_tcp.c connects the ranks and starts the target's
 * progress thread, and a last round agrees on the outcome.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "engine/comm.h"
#include "native/window.h"
#include "native/window_tcp.h"
#include "transport/arena.h"
#include "transport/shm.h"

/* Creation tags: collective number 0 is never an op's; 0xe0.. are the arena's. */
#define WIN_TAG(step) (CC__TAG_INTERNAL | 0xd0u | (uint32_t)(step))

/* What each rank tells rank 0, and rank 0 everyone (one per rank). */
struct win_entry {
    int32_t pid;
    int32_t mapped; /* 1: this rank mapped the signal segment (TCP: is listening) */
    uint64_t base;
    uint64_t bytes;
    uint32_t port;  /* TCP: this rank's window listener */
    uint32_t pad;
    uint64_t token; /* TCP: what a connecting peer must show */
};

static size_t block_bytes(int n)
{
    return 64u + (((size_t)n * sizeof(uint64_t) + 63u) & ~(size_t)63u);
}

/* Ranks of one host that may not write into each other: the same answer on every rank.
 * A comm with a TCP peer needs nothing of the kind (window_tcp.c). */
static cc_status_t check_reach(cc__native_t *nc)
{
    if (nc->size == 1 || nc->tpm == CC__TPM_NET) return CC_OK;
    if (!cc__arena_cma_ok(nc->arena)) {
        cc_log_error(CC_SUBSYS_CORE,
                     "cc_window_create: the ranks of communicator %s cannot read each other's "
                     "memory (process_vm_readv refused or no shared-memory arena; see "
                     "/proc/sys/kernel/yama/ptrace_scope): windows need it",
                     nc->comm->name);
        return CC_ERR_NOT_SUPPORTED;
    }
    return CC_OK;
}

static void seg_path(const cc__native_t *nc, unsigned id, char *buf, size_t len)
{
    int k = snprintf(buf, len, "%s/ccomm-win-%016llx-%d-%u", cc__cfg()->shm_dir,
                     (unsigned long long)nc->comm->id, cc__net_peer_pid(nc->net, 0), id);
    if (k <= 0 || (size_t)k >= len) buf[0] = '\0';
}

/* Rank 0 creates the segment, the others map it; 1 on success (logged otherwise). */
static int open_seg(struct cc_window *w, const char *path)
{
    void *map = NULL;
    int e = 0, opened = 0;
    size_t got = 0;
    char why[600] = "";
    cc_status_t st = !path[0] ? CC_ERR_SYSTEM
                     : w->rank == 0
                         ? cc__shm_file_create(path, w->seg_len, "window", &map, &e, &opened)
                         : cc__shm_file_map(path, w->seg_len, w->seg_len, &map, &got, &e, why,
                                            sizeof(why));
    if (st != CC_OK) {
        cc_log_error(CC_SUBSYS_SHM, "cc_window_create: cannot %s the signal segment %s: %s",
                     w->rank == 0 ? "create" : "map", path[0] ? path : "(path too long)",
                     why[0] ? why : strerror(e));
        return 0;
    }
    w->seg = map;
    return 1;
}

/* Gather every rank's entry to rank 0 and send the table back (rank 0 unlinks in between). */
static cc_status_t exchange(struct cc_window *w, struct win_entry *all, const char *path,
                            uint64_t deadline)
{
    cc__net_t *net = w->nc->net;
    if (w->rank != 0) {
        CC_CHECK(cc__net_send(net, 0, WIN_TAG(1), &all[w->rank], sizeof(all[0]), deadline));
        return cc__net_recv(net, 0, WIN_TAG(2), all, sizeof(all[0]) * (size_t)w->n, deadline);
    }
    for (int q = 1; q < w->n; q++)
        CC_CHECK(cc__net_recv(net, q, WIN_TAG(1), &all[q], sizeof(all[0]), deadline));
    if (path[0]) unlink(path);
    for (int q = 1; q < w->n; q++)
        CC_CHECK(cc__net_send(net, q, WIN_TAG(2), all, sizeof(all[0]) * (size_t)w->n, deadline));
    return CC_OK;
}

static void free_parts(struct cc_window *w)
{
    cc__wtcp_abandon(w);
    if (w->seg) munmap(w->seg, w->seg_len);
    w->seg = NULL;
    free(w->pids);
    free(w->bases);
    free(w->sizes);
    w->pids = NULL;
    w->bases = w->sizes = NULL;
}

/* Every rank's status to rank 0, the first error (or CC_OK) back to all. */
static cc_status_t agree(struct cc_window *w, cc_status_t mine, uint64_t deadline)
{
    cc__net_t *net = w->nc->net;
    int32_t v = mine, q_st;
    if (w->rank != 0) {
        CC_CHECK(cc__net_send(net, 0, WIN_TAG(5), &v, sizeof(v), deadline));
        CC_CHECK(cc__net_recv(net, 0, WIN_TAG(6), &v, sizeof(v), deadline));
        return (cc_status_t)v;
    }
    for (int q = 1; q < w->n; q++) {
        CC_CHECK(cc__net_recv(net, q, WIN_TAG(5), &q_st, sizeof(q_st), deadline));
        if (v == CC_OK) v = q_st; /* rank q logged why */
    }
    for (int q = 1; q < w->n; q++)
        CC_CHECK(cc__net_send(net, q, WIN_TAG(6), &v, sizeof(v), deadline));
    return (cc_status_t)v;
}

/* TCP rounds: listen, the table (with ports and tokens), connect and accept, agree. */
static cc_status_t setup_tcp(struct cc_window *w, struct win_entry *all, uint64_t deadline)
{
    int lfd = -1;
    uint16_t port = 0;
    uint64_t token = 0;
    struct win_entry *me = &all[w->rank];
    me->mapped = cc__wtcp_listen(w, &lfd, &port, &token) == CC_OK;
    me->port = port;
    me->token = token;
    cc_status_t st = exchange(w, all, "", deadline);
    uint16_t *ports = calloc((size_t)w->n, sizeof(*ports));
    uint64_t *tokens = calloc((size_t)w->n, sizeof(*tokens));
    if (st == CC_OK && (!ports || !tokens)) st = CC_ERR_NO_MEMORY;
    for (int q = 0; q < w->n && st == CC_OK; q++) {
        if (!all[q].mapped || all[q].port > 65535u) st = CC_ERR_SYSTEM; /* rank q logged why */
        w->pids[q] = all[q].pid;
        w->bases[q] = all[q].base;
        w->sizes[q] = all[q].bytes;
        ports[q] = (uint16_t)all[q].port;
        tokens[q] = all[q].token;
    }
    if (st == CC_OK) {
        st = cc__wtcp_start(w, lfd, token, ports, tokens, deadline);
        lfd = -1;
        cc_status_t all_st = agree(w, st, deadline);
        if (st == CC_OK) st = all_st;
    }
    if (lfd >= 0) close(lfd);
    free(ports);
    free(tokens);
    return st;
}

/* Rounds: rank 0 creates the segment and says so; everyone maps it and reports; the table. */
static cc_status_t setup(struct cc_window *w, void *base, size_t bytes, uint64_t deadline)
{
    char path[512];
    seg_path(w->nc, w->id, path, sizeof(path));
    struct win_entry *all = calloc((size_t)w->n, sizeof(*all));
    if (!all) return CC_ERR_NO_MEMORY;
    int32_t created = 0;
    cc_status_t st = CC_OK;
    if (w->nc->tpm == CC__TPM_NET) {
        all[w->rank] = (struct win_entry){(int32_t)getpid(), 0, (uint64_t)(uintptr_t)base,
                                          (uint64_t)bytes, 0, 0, 0};
        st = setup_tcp(w, all, deadline);
        free(all);
        return st;
    }
    if (w->rank == 0) {
        created = open_seg(w, path);
        for (int q = 1; q < w->n && st == CC_OK; q++)
            st = cc__net_send(w->nc->net, q, WIN_TAG(0), &created, sizeof(created), deadline);
    } else {
        st = cc__net_recv(w->nc->net, 0, WIN_TAG(0), &created, sizeof(created), deadline);
        if (st == CC_OK && created) created = open_seg(w, path);
    }
    all[w->rank] = (struct win_entry){(int32_t)getpid(), created, (uint64_t)(uintptr_t)base,
                                      (uint64_t)bytes, 0, 0, 0};
    if (st == CC_OK) st = exchange(w, all, path, deadline);
    for (int q = 0; q < w->n && st == CC_OK; q++) {
        if (!all[q].mapped) st = CC_ERR_SYSTEM; /* rank q logged why; every rank sees it */
        w->pids[q] = all[q].pid;
        w->bases[q] = all[q].base;
        w->sizes[q] = all[q].bytes;
    }
    free(all);
    return st;
}

cc_status_t cc__native_window_create(void *state, struct cc_window *w, void *base, size_t bytes,
                                     uint64_t deadline_ns)
{
    cc__native_t *nc = state;
    CC_CHECK(check_reach(nc));
    w->nc = nc;
    w->id = nc->windows++;
    w->block = block_bytes(nc->size);
    w->seg_len = w->block * (size_t)w->n;
    w->pids = calloc((size_t)w->n, sizeof(int));
    w->bases = calloc((size_t)w->n, sizeof(uint64_t));
    w->sizes = calloc((size_t)w->n, sizeof(uint64_t));
    cc_status_t st = w->pids && w->bases && w->sizes ? CC_OK : CC_ERR_NO_MEMORY;
    if (st == CC_OK && w->n == 1) {
        w->pids[0] = (int)getpid();
        w->bases[0] = (uint64_t)(uintptr_t)base;
        w->sizes[0] = bytes;
    } else if (st == CC_OK) {
        st = setup(w, base, bytes, deadline_ns);
    }
    if (st != CC_OK) free_parts(w);
    return st;
}

/* Every rank arrived: nobody writes into this rank's region or signals it any more. */
static cc_status_t barrier(struct cc_window *w, uint64_t deadline)
{
    cc__net_t *net = w->nc->net;
    int32_t v = 1;
    if (w->rank != 0) {
        CC_CHECK(cc__net_send(net, 0, WIN_TAG(3), &v, sizeof(v), deadline));
        return cc__net_recv(net, 0, WIN_TAG(4), &v, sizeof(v), deadline);
    }
    for (int q = 1; q < w->n; q++)
        CC_CHECK(cc__net_recv(net, q, WIN_TAG(3), &v, sizeof(v), deadline));
    for (int q = 1; q < w->n; q++)
        CC_CHECK(cc__net_send(net, q, WIN_TAG(4), &v, sizeof(v), deadline));
    return CC_OK;
}

cc_status_t cc__native_window_destroy(void *state, struct cc_window *w, uint64_t deadline_ns)
{
    (void)state;
    cc_status_t st = w->n > 1 ? barrier(w, deadline_ns) : CC_OK;
    /* TCP: puts already sent may still be on the wire to us; the peers' byes end them. */
    cc_status_t st2 = cc__wtcp_stop(w, deadline_ns);
    if (st == CC_OK) st = st2;
    free_parts(w);
    w->nc = NULL;
    return st;
}
