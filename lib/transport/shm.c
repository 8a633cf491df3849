/*
 * shm.c - the shared-memory transport: mailboxes, sleeping, liveness.
 *
 * Creation (phases of cc__net_create, each followed by a status exchange):
 *   0. create this rank's mailbox file (O_EXCL, mode 0600) sized for its
 *      local peers, reserve its pages, map it;
 *   1. map every local peer's mailbox, check its header, open a pidfd on
 *      the peer;
 *   2. unlink this rank's mailbox file. Every peer has it mapped by now, so
 *      nothing is left in CCOMM_SHM_DIR once creation returns, whatever
 *      happens to the processes afterwards.
 * The window between 0 and 2 is the only time a crash leaves a file; the
 * file name carries the pid, so a stale one is recognised and replaced.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "transport/shm.h"

_Static_assert(sizeof(struct cc__shm_mbox) == 3 * CC__SHM_LINE, "mailbox header layout");
_Static_assert(sizeof(struct cc__shm_ctl) == 2 * CC__SHM_LINE, "ring control layout");
_Static_assert(sizeof(struct cc__shm_rec) == CC__SHM_REC_HDR, "record header layout");

/* The pid in the name tells a stale file (a crashed run with the same job id) from ours. */
static int mbox_path(struct cc__net *net, int rank, int pid, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/ccomm-%s-%016llx-r%d-%d", cc__cfg()->shm_dir, net->job,
                     (unsigned long long)net->comm_id, rank, pid);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* A peer's slot in a mailbox of `owner`: local index, skipping the owner's own. */
static int slot_of(int local_src, int local_owner)
{
    return local_src < local_owner ? local_src : local_src - 1;
}

/* shm publishes nothing of its own: pid and host identity are in every blob. */
static cc_status_t shm_setup(struct cc__net *net, cc__peer_info_t *mine)
{
    (void)net;
    (void)mine;
    return CC_OK;
}

/* The local ranks (shm peers and this one), in rank order. */
/* Every local rank computes the same list (same blobs, same rule), so slot numbers agree. */
static cc_status_t find_local(struct cc__net *net, struct cc__shm_state *st)
{
    st->local = calloc((size_t)net->tp_peers[CC__TP_SHM] + 1, sizeof(int));
    st->sp = calloc((size_t)net->tp_peers[CC__TP_SHM] + 1, sizeof(*st->sp));
    if (!st->local || !st->sp) return CC_ERR_NO_MEMORY;
    for (int i = 0; i < net->size; i++) {
        if (i == net->rank) st->my_local = st->nlocal;
        if (i == net->rank || net->peers[i].tp == CC__TP_SHM) st->local[st->nlocal++] = i;
    }
    st->ring_size = cc__cfg()->shm_ring_size;
    return CC_OK;
}

#define MIN_FIT_RING (64u << 10) /* rings are not shrunk below this to fit */

/*
 * Size the rings by what fits: each local rank may take an equal share of
 * what CCOMM_SHM_DIR has free when it looks (a container's /dev/shm is 64 MB
 * by default; 8 ranks with 1 MiB rings need 7.4 MB each). Rings are halved,
 * down to 64 KiB, until the mailbox fits its share; a peer reads the size
 * from the mailbox header, so ranks may differ.
 */
static void fit_ring(struct cc__shm_state *st, size_t nslots)
{
    const char *dir = cc__cfg()->shm_dir;
    uint64_t avail = cc__space_free(dir), share = avail / (uint64_t)st->nlocal;
    uint64_t ring = st->ring_size;
    while (ring > MIN_FIT_RING && CC__SHM_PAGE + nslots * (CC__SHM_PAGE + ring) > share)
        ring /= 2;
    if (ring == st->ring_size) return;
    static atomic_int said;
    char a[32], b[32], sp[600];
    /* Once per job and host (the first local rank, its first communicator). */
    int first = !atomic_exchange(&said, 1) && st->my_local == 0;
    int lvl = first ? CC_LOG_LEVEL_WARN : CC_LOG_LEVEL_INFO;
    CC__LOG(lvl, CC_SUBSYS_SHM,
            "shm: %s for %d local ranks: rings of %s instead of CCOMM_SHM_RING_SIZE=%s; for "
            "full-size rings give it more room (docker run --shm-size=1g)",
            cc__space_str(dir, sp, sizeof(sp)), st->nlocal, cc__bytes_str(ring, a, sizeof(a)),
            cc__bytes_str(st->ring_size, b, sizeof(b)));
    st->ring_size = ring;
}

/* What ran out, how much was needed and what to set. */
static void say_no_room(const struct cc__shm_state *st, size_t len, int e)
{
    char need[32], ring[32], sp[600];
    cc_log_error(CC_SUBSYS_SHM,
                 "shm: cannot reserve %s for segment %s: %s (%s); each rank needs 4 KiB + %d "
                 "peers x (4 KiB + a ring of %s): give CCOMM_SHM_DIR more room (docker run "
                 "--shm-size=1g), lower CCOMM_SHM_RING_SIZE, set CCOMM_SHM_DIR to a larger "
                 "tmpfs, or move the flight recorder's rings (CCOMM_RECORDER_DIR) elsewhere",
                 cc__bytes_str(len, need, sizeof(need)), st->path, strerror(e),
                 cc__space_str(cc__cfg()->shm_dir, sp, sizeof(sp)), st->nlocal - 1,
                 cc__bytes_str(st->ring_size, ring, sizeof(ring)));
}

/* Phase 0: this rank's mailbox. */
static cc_status_t create_mailbox(struct cc__net *net, struct cc__shm_state *st)
{
    size_t nslots = (size_t)st->nlocal - 1;
    fit_ring(st, nslots);
    size_t stride = CC__SHM_PAGE + st->ring_size;
    size_t len = CC__SHM_PAGE + nslots * stride;
    if (mbox_path(net, net->rank, (int)getpid(), st->path, sizeof(st->path)) != 0) {
        cc_log_error(CC_SUBSYS_SHM, "shm: segment path under \"%s\" is too long",
                     cc__cfg()->shm_dir);
        st->path[0] = '\0';
        return CC_ERR_INVALID_ARG;
    }
    void *map;
    int e, opened;
    if (cc__shm_file_create(st->path, len, "segment", &map, &e, &opened) != CC_OK) {
        if (!opened)
            cc_log_error(CC_SUBSYS_SHM, "shm: cannot create segment %s: %s (CCOMM_SHM_DIR)",
                         st->path, strerror(e));
        else if (e == ENOSPC)
            say_no_room(st, len, e);
        else
            cc_log_error(CC_SUBSYS_SHM, "shm: cannot size or map %zu bytes of %s: %s", len,
                         st->path, strerror(e));
        st->path[0] = '\0'; /* removed already */
        return CC_ERR_SYSTEM;
    }
    struct cc__shm_mbox *mb = map;
    /* Peers map the file only after the status exchange that follows this phase, so the
     * header needs no ordering of its own. */
    mb->magic = CC__SHM_MAGIC;
    mb->version = CC__SHM_VERSION;
    mb->nslots = (uint32_t)nslots;
    mb->ring_size = st->ring_size;
    mb->slot_stride = stride;
    mb->comm_id = net->comm_id;
    mb->owner_rank = net->rank;
    mb->owner_pid = (int32_t)getpid();
    st->mine = mb;
    st->mine_len = len;
    return CC_OK;
}

/* A mailbox is ours only if every static field agrees with the blob of its owner. */
static int header_ok(struct cc__net *net, struct cc__shm_state *st, const struct cc__shm_mbox *mb,
                     size_t len, int rank)
{
    uint64_t ring = mb->ring_size;
    return mb->magic == CC__SHM_MAGIC && mb->version == CC__SHM_VERSION &&
           mb->comm_id == net->comm_id && mb->owner_rank == rank &&
           mb->owner_pid == net->info[rank].pid && (int)mb->nslots == st->nlocal - 1 &&
           ring >= 4096 && (ring & (ring - 1)) == 0 && mb->slot_stride == CC__SHM_PAGE + ring &&
           len == CC__SHM_PAGE + (size_t)mb->nslots * mb->slot_stride;
}

/* Phase 1: map one local peer's mailbox and wire both rings. */
static cc_status_t map_peer(struct cc__net *net, struct cc__shm_state *st, int local_idx)
{
    int rank = st->local[local_idx], pid = net->info[rank].pid;
    struct cc__shm_peer *sp = &st->sp[st->nsp];
    char path[512];
    if (mbox_path(net, rank, pid, path, sizeof(path)) != 0) return CC_ERR_INVALID_ARG;
    void *map;
    size_t len = 0;
    int e = 0;
    char why[600];
    /* Only a file of this user backs the mapping: one that another user put
     * in its place (CCOMM_SHM_DIR writable by others) could be truncated
     * under us (SIGBUS). Its size is checked against the header below. */
    cc_status_t got =
        cc__shm_file_map(path, CC__SHM_PAGE, SIZE_MAX, &map, &len, &e, why, sizeof(why));
    if (got == CC_ERR_PROTOCOL) {
        cc_log_error(CC_SUBSYS_SHM, "shm: refusing rank %d's segment: %s", rank, why);
        return CC_ERR_PROTOCOL;
    }
    if (got != CC_OK) {
        cc_log_error(CC_SUBSYS_SHM, "shm: cannot map rank %d's segment %s: %s", rank, path,
                     strerror(e));
        return CC_ERR_SYSTEM;
    }
    sp->their = map;
    sp->their_len = len;
    sp->pidfd = -1;
    st->nsp++; /* from here on close() unmaps it */
    if (!header_ok(net, st, sp->their, sp->their_len, rank)) {
        cc_log_error(CC_SUBSYS_SHM, "shm: segment %s of rank %d (pid %d) has a foreign header",
                     path, rank, pid);
        return CC_ERR_PROTOCOL;
    }
    char *tx = (char *)sp->their + CC__SHM_PAGE +
               (size_t)slot_of(st->my_local, local_idx) * sp->their->slot_stride;
    char *rx = (char *)st->mine + CC__SHM_PAGE +
               (size_t)slot_of(local_idx, st->my_local) * st->mine->slot_stride;
    sp->p = &net->peers[rank];
    sp->pid = pid;
    sp->tx_ctl = (struct cc__shm_ctl *)tx;
    sp->tx_ring = tx + CC__SHM_PAGE;
    sp->tx_mask = sp->their->ring_size - 1;
    sp->rx_ctl = (struct cc__shm_ctl *)rx;
    sp->rx_ring = rx + CC__SHM_PAGE;
    sp->rx_mask = st->ring_size - 1;
    /* Opened while the peer is known alive (it just took part in the exchange): no pid reuse. */
    sp->pidfd = cc__peer_pidfd(pid);
    sp->p->priv = sp;
    return CC_OK;
}

static cc_status_t shm_connect(struct cc__net *net, int phase)
{
    struct cc__shm_state *st = cc__shm(net);
    if (phase == 0) {
        st = calloc(1, sizeof(*st));
        if (!st) return CC_ERR_NO_MEMORY;
        net->tp_state[CC__TP_SHM] = st;
        CC_CHECK(find_local(net, st));
        return st->nlocal > 1 ? create_mailbox(net, st) : CC_OK;
    }
    if (phase == 1) {
        for (int i = 0; i < st->nlocal; i++)
            if (i != st->my_local) CC_CHECK(map_peer(net, st, i));
        return CC_OK;
    }
    if (st->path[0] && unlink(st->path) != 0)
        cc_log_warn(CC_SUBSYS_SHM, "shm: cannot unlink %s: %s", st->path, strerror(errno));
    st->path[0] = '\0';
    return CC_OK;
}

/* The caller made its change visible and fenced; a sleeper then sees the new bell value. */
void cc__shm_ring_bell(struct cc__shm_mbox *mb, int always)
{
    if (!always && !atomic_load_explicit(&mb->sleeping, memory_order_relaxed)) return;
    atomic_fetch_add(&mb->bell, 1);
    cc__futex_wake(&mb->bell);
}

/* Anything the sleeper would wake for, checked after it announced itself asleep. */
int cc__shm_ready(struct cc__net *net)
{
    struct cc__shm_state *st = cc__shm(net);
    if (atomic_load(&net->abort_reason)) return 1;
    for (int i = 0; i < st->nsp; i++) {
        struct cc__shm_peer *sp = &st->sp[i];
        if (sp->p->lost) continue;
        struct cc__shm_rec *rec = (struct cc__shm_rec *)(sp->rx_ring + (sp->tail & sp->rx_mask));
        if (atomic_load_explicit(&rec->seq, memory_order_acquire) == sp->tail + 1) return 1;
        if (sp->tx_waiting && atomic_load(&sp->tx_ctl->tail) != sp->tail_seen) return 1;
        if (sp->p->pending && atomic_load(&sp->their->closed)) return 1;
    }
    return 0;
}

static int shm_ready_cb(void *net)
{
    return cc__shm_ready(net);
}

static void shm_sleep(struct cc__net *net, uint64_t timeout_ns)
{
    struct cc__shm_mbox *mb = cc__shm(net)->mine;
    cc__bell_sleep(&mb->bell, &mb->sleeping, shm_ready_cb, net, timeout_ns, 0);
}

struct cc__shm_peer *cc__shm_peer_of(struct cc__net *net, int peer)
{
    if (peer < 0 || peer >= net->size || net->peers[peer].tp != CC__TP_SHM) return NULL;
    return net->peers[peer].priv;
}

/*
 * A peer is lost when it died (its pidfd is readable) or closed its side
 * (aborted or destroyed its net): take what it left, then record the loss,
 * which fails the rest. The arena's waits (arena_sync.c) ask here too.
 */
cc_status_t cc__shm_peer_check(struct cc__net *net, int peer, const char **cause)
{
    struct cc__shm_peer *sp = cc__shm_peer_of(net, peer);
    if (!sp) return CC_OK;
    if (sp->p->lost) {
        if (cause) *cause = sp->p->lost_cause;
        return sp->p->lost;
    }
    const char *why = NULL;
    if (atomic_load(&sp->their->closed))
        why = "closed its side (aborted or destroyed its communicator)";
    else if (cc__peer_dead(sp->pidfd, sp->pid))
        why = "died";
    if (!why) return CC_OK;
    cc__shm_drain(net, sp);
    cc__net_peer_lost(net, sp->p, why, NULL);
    if (cause) *cause = why;
    return CC_ERR_PEER_LOST;
}

/* The peers that pending requests involve. */
static void shm_check(struct cc__net *net)
{
    struct cc__shm_state *st = cc__shm(net);
    for (int i = 0; i < st->nsp; i++) {
        struct cc__shm_peer *sp = &st->sp[i];
        if (sp->p && !sp->p->lost && sp->p->pending) cc__shm_peer_check(net, sp->p->rank, NULL);
    }
}

/* Any thread: mark this side closed and wake everyone who might wait on it. */
static void shm_abort(struct cc__net *net)
{
    struct cc__shm_state *st = cc__shm(net);
    if (!st->mine) return;
    atomic_store(&st->mine->closed, 1);
    cc__fence();
    for (int i = 0; i < st->nsp; i++)
        cc__shm_ring_bell(st->sp[i].their, 1);
    cc__shm_ring_bell(st->mine, 1);
}

/* Mappings stay valid in peers after unlink and unmap: tmpfs pages live while mapped. */
static void shm_close(struct cc__net *net)
{
    struct cc__shm_state *st = cc__shm(net);
    /* Peers still waiting on this rank learn it is gone (PEER_LOST, not a timeout). */
    shm_abort(net);
    for (int i = 0; i < st->nsp; i++) {
        struct cc__shm_peer *sp = &st->sp[i];
        munmap(sp->their, sp->their_len);
        if (sp->pidfd >= 0) close(sp->pidfd);
        free(sp->fins.v);
        if (sp->p) sp->p->priv = NULL;
    }
    if (st->path[0]) unlink(st->path);
    if (st->mine) munmap(st->mine, st->mine_len);
    free(st->sp);
    free(st->local);
    free(st);
    net->tp_state[CC__TP_SHM] = NULL;
}

static void shm_describe(struct cc__net *net, struct cc__peer *p, char *buf, size_t len)
{
    snprintf(buf, len, "pid %d", net->info[p->rank].pid);
}

const cc__transport_t cc__transport_shm = {
    .name = "shm",
    .setup = shm_setup,
    .connect = shm_connect,
    .isend = cc__shm_isend,
    .irecv = cc__shm_irecv,
    .progress = cc__shm_progress,
    .sleep = shm_sleep,
    .check = shm_check,
    .cancel = cc__shm_cancel,
    .fail = cc__shm_fail,
    .abort = shm_abort,
    .close = shm_close,
    .describe = shm_describe,
};
