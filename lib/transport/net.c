/*
 * net.c - a communicator's mesh: creation, destruction and queries.
 *
 * Creation is collective and runs in lock step over the config's allgather:
 *
 *   1. every rank publishes a cc__peer_info_t (host identity, pid, TCP
 *      listener, setup status) and gets everyone's;
 *   2. each pair picks its transport: shm on one host (same hostname, boot,
 *      network and pid namespace) unless either side forces tcp, else tcp;
 *   3. connect phases 0, 1, 2, each followed by an allgather of statuses so
 *      that a failure anywhere fails the creation everywhere, with a log
 *      line naming the rank that failed (shm: create mailbox / map peers'
 *      mailboxes / unlink; tcp: connect and handshake / close the listener).
 *
 * Arguments that make the creation impossible (NULL, rank out of range, no
 * allgather) return at once without calling the allgather.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/config.h"
#include "base/log.h"
#include "transport/transport.h"

/* Arguments checks that every rank can make alone. */
static cc_status_t check_config(const cc__net_config_t *c, cc__net_t **out)
{
    if (!c || !out) {
        cc_log_error(CC_SUBSYS_NET, "net: create: %s is NULL", !c ? "config" : "out");
        return CC_ERR_INVALID_ARG;
    }
    if (c->size < 1 || c->size > (1 << 20)) {
        cc_log_error(CC_SUBSYS_NET, "net: create: size %d is out of range [1, 1048576]", c->size);
        return CC_ERR_INVALID_ARG;
    }
    if (c->rank < 0 || c->rank >= c->size) {
        cc_log_error(CC_SUBSYS_NET, "net: create: rank %d is out of range [0, %d)", c->rank,
                     c->size);
        return CC_ERR_INVALID_ARG;
    }
    if (!c->allgather) {
        cc_log_error(CC_SUBSYS_NET, "net: create: the allgather callback is NULL");
        return CC_ERR_INVALID_ARG;
    }
    const char *t = c->transport;
    if (t && *t && strcmp(t, "auto") != 0 && strcmp(t, "tcp") != 0) {
        cc_log_error(CC_SUBSYS_NET, "net: create: transport \"%s\" is not \"auto\" or \"tcp\"", t);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

/*
 * CCOMM_* values this layer depends on. A bad one fails this rank's setup
 * (reported to the others through the status exchange).
 */
static cc_status_t check_env(void)
{
    const struct cc__config *cfg = cc__cfg();
    uint64_t ring = cfg->shm_ring_size;
    if (ring < 4096 || ring > (1ull << 30) || (ring & (ring - 1)) != 0) {
        cc_log_error(CC_SUBSYS_NET,
                     "net: CCOMM_SHM_RING_SIZE=%llu is not a power of two in [4K, 1G]",
                     (unsigned long long)ring);
        return CC_ERR_INVALID_ARG;
    }
    if (cfg->tcp_chunk_size < 1024 || cfg->tcp_chunk_size > (1ull << 30)) {
        cc_log_error(CC_SUBSYS_NET, "net: CCOMM_TCP_CHUNK_SIZE=%llu is not in [1K, 1G]",
                     (unsigned long long)cfg->tcp_chunk_size);
        return CC_ERR_INVALID_ARG;
    }
    uint64_t rndv;
    if (cc__net_rndv_setting(&rndv) < 0) {
        cc_log_error(CC_SUBSYS_NET,
                     "net: CCOMM_TCP_RNDV_THRESHOLD=%s is neither auto nor a size (64K, 1M, 0)",
                     cfg->tcp_rndv_threshold);
        return CC_ERR_INVALID_ARG;
    }
    if (cfg->wait_spin_us < 0 || cfg->wait_spin_us > 10000000) {
        cc_log_error(CC_SUBSYS_NET, "net: CCOMM_WAIT_SPIN_US=%lld is not in [0, 10000000]",
                     (long long)cfg->wait_spin_us);
        return CC_ERR_INVALID_ARG;
    }
    if (cfg->tcp_spin_us < 0 || cfg->tcp_spin_us > 10000000) {
        cc_log_error(CC_SUBSYS_NET, "net: CCOMM_TCP_SPIN_US=%lld is not in [0, 10000000]",
                     (long long)cfg->tcp_spin_us);
        return CC_ERR_INVALID_ARG;
    }
    if (cfg->tcp_yield_us < 0 || cfg->tcp_yield_us > 10000000) {
        cc_log_error(CC_SUBSYS_NET, "net: CCOMM_TCP_YIELD_US=%lld is not in [0, 10000000]",
                     (long long)cfg->tcp_yield_us);
        return CC_ERR_INVALID_ARG;
    }
    if (cfg->peer_check_ms < 1 || cfg->peer_check_ms > 3600000) {
        cc_log_error(CC_SUBSYS_NET, "net: CCOMM_PEER_CHECK_MS=%lld is not in [1, 3600000]",
                     (long long)cfg->peer_check_ms);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

/* The job id as a file-name component: [A-Za-z0-9._-], others become '_'. */
static void safe_name(char *dst, size_t len, const char *src)
{
    size_t o = 0;
    for (const char *s = (src && *src) ? src : "nojob"; *s && o + 1 < len; s++) {
        char ch = *s;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '.' || ch == '-' || ch == '_';
        dst[o++] = ok ? ch : '_';
    }
    dst[o] = '\0';
}

/* The net before any collective step; destroy() copes with it at every stage of creation. */
static cc__net_t *net_alloc(const cc__net_config_t *c)
{
    cc__net_t *net = calloc(1, sizeof(*net));
    if (!net) return NULL;
    net->rank = c->rank;
    net->size = c->size;
    net->comm_id = c->comm_id;
    net->wake_fd = -1;
    net->stuck_peer = -1;
    safe_name(net->job, sizeof(net->job), c->job_id);
    const char *addr = c->socket_addr && *c->socket_addr ? c->socket_addr : cc__cfg()->socket_addr;
    snprintf(net->listen_addr, sizeof(net->listen_addr), "%s", *addr ? addr : "127.0.0.1");
    net->connect_timeout_ms =
        c->connect_timeout_ms > 0 ? c->connect_timeout_ms : cc__cfg()->connect_timeout * 1000;
    net->cma_threshold = cc__cfg()->shm_cma_threshold;
    net->tps[CC__TP_SELF] = &cc__transport_self;
    net->tps[CC__TP_SHM] = &cc__transport_shm;
    net->tps[CC__TP_TCP] = &cc__transport_tcp;
    net->peers = calloc((size_t)c->size, sizeof(*net->peers));
    net->info = calloc((size_t)c->size, sizeof(*net->info));
    net->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!net->peers || !net->info || net->wake_fd < 0) {
        cc__net_destroy(net);
        return NULL;
    }
    for (int i = 0; i < c->size; i++)
        net->peers[i].rank = i;
    return net;
}

/* Check every blob; report ranks whose setup failed. */
static cc_status_t check_infos(cc__net_t *net)
{
    cc_status_t st = CC_OK;
    for (int i = 0; i < net->size; i++) {
        const cc__peer_info_t *in = &net->info[i];
        if (in->magic != CC__PEER_INFO_MAGIC || in->version != CC__PEER_INFO_VERSION ||
            in->rank != i || in->size != net->size || in->comm_id != net->comm_id) {
            cc_log_error(CC_SUBSYS_NET,
                         "net: connection info of rank %d is not ours (magic 0x%x version %u rank "
                         "%d size %d comm 0x%llx; expected size %d comm 0x%llx)",
                         i, in->magic, in->version, in->rank, in->size,
                         (unsigned long long)in->comm_id, net->size,
                         (unsigned long long)net->comm_id);
            return CC_ERR_PROTOCOL;
        }
        if (in->status != CC_OK && i != net->rank) {
            cc_log_error(CC_SUBSYS_NET, "net: rank %d could not prepare its connections (%s)", i,
                         cc_status_name((cc_status_t)in->status));
            st = CC_ERR_CONNECT;
        }
    }
    return net->info[net->rank].status != CC_OK ? (cc_status_t)net->info[net->rank].status : st;
}

/* A peer on this host that cannot share memory with us: said once per
 * process at WARN (it is slower, and the fix is the container's), then INFO. */
static void say_no_shm(int peer)
{
    static atomic_int said;
    int lvl = atomic_exchange(&said, 1) ? CC_LOG_LEVEL_INFO : CC_LOG_LEVEL_WARN;
    CC__LOG(lvl, CC_SUBSYS_NET,
            "net: rank %d is on this host but its CCOMM_SHM_DIR is another file system or "
            "directory than this rank's %s (a private /dev/shm per container?): using tcp to it; "
            "share one /dev/shm (docker run --ipc=host or --ipc=container:NAME) for shared memory",
            peer, cc__cfg()->shm_dir);
}

/* Pick each pair's transport; both sides compute the same answer. */
static void pick_transports(cc__net_t *net)
{
    const cc__peer_info_t *me = &net->info[net->rank];
    for (int i = 0; i < net->size; i++) {
        const cc__peer_info_t *q = &net->info[i];
        int tp = CC__TP_TCP;
        if (i == net->rank) {
            tp = CC__TP_SELF;
        } else if (!((me->flags | q->flags) & CC__INFO_FORCE_TCP) && cc__peer_same_host(me, q)) {
            if (cc__peer_same_shm(me, q))
                tp = CC__TP_SHM;
            else
                say_no_shm(i);
        }
        net->peers[i].tp = tp;
        net->tp_peers[tp]++;
    }
}

int cc__net_rndv_setting(uint64_t *bytes)
{
    const char *v = cc__cfg()->tcp_rndv_threshold;
    *bytes = 0;
    if (!v || !*v || strcmp(v, "auto") == 0) return 1;
    return cc__parse_size(v, bytes) == 0 ? 0 : -1;
}

/*
 * Spin only when every local rank can have a CPU of its own. With more ranks
 * than CPUs (8 ranks on 2 cores) a spinning rank holds the core the sender
 * it waits for needs: measured here, 2-4x slower rings than not spinning.
 */
static void pick_spin(cc__net_t *net)
{
    int local = 0;
    for (int i = 0; i < net->size; i++)
        local += cc__peer_same_host(&net->info[net->rank], &net->info[i]);
    int extra = cc__cfg()->local_size > local ? (int)cc__cfg()->local_size - local : 0;
    int ncpu = 1, shares = cc__peer_shares_cpus(net->info, net->size, net->rank, extra, &ncpu);
    if (shares < 0) { /* a mask unknown: this rank's own CPU count decides, as before masks */
        cpu_set_t cpus;
        ncpu = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
        shares = local + extra > ncpu;
    }
    net->shares_cpus = shares;
    net->spin_ns = (uint64_t)cc__cfg()->wait_spin_us * 1000ull;
    /* With CPUs shared, a TCP wait does not spin: it polls and yields before it sleeps
     * (wait.c, wait_stage). */
    net->tcp_spin_ns = net->shares_cpus ? 0 : (uint64_t)cc__cfg()->tcp_spin_us * 1000ull;
    net->tcp_yield_ns = net->shares_cpus ? (uint64_t)cc__cfg()->tcp_yield_us * 1000ull : 0;
    if (net->shares_cpus && net->spin_ns) {
        cc_log_info(CC_SUBSYS_NET,
                    "net: %d ranks on this host share its cpus (%d among them, %d for this "
                    "rank): waiting ranks yield and sleep instead of spinning %lld us",
                    local + extra, ncpu, cc__peer_cpu_count(&net->info[net->rank]),
                    (long long)cc__cfg()->wait_spin_us);
        net->spin_ns = 0;
    }
}

/* Every rank's status after a phase; the first failure wins. */
static cc_status_t exchange_status(cc__net_t *net, const cc__net_config_t *c, cc_status_t mine,
                                   int phase)
{
    int32_t *all = calloc((size_t)net->size, sizeof(int32_t));
    if (!all) return CC_ERR_NO_MEMORY;
    int32_t me = mine;
    cc_status_t st = c->allgather(c->allgather_ctx, &me, all, sizeof(me));
    if (st != CC_OK) {
        cc_log_error(CC_SUBSYS_NET, "net: status exchange after phase %d failed: %s", phase,
                     cc_status_name(st));
    } else {
        for (int i = 0; i < net->size && st == CC_OK; i++) {
            if (all[i] == CC_OK || i == net->rank) continue;
            cc_log_error(CC_SUBSYS_NET, "net: rank %d failed to connect (phase %d: %s)", i, phase,
                         cc_status_name((cc_status_t)all[i]));
            st = CC_ERR_CONNECT;
        }
        if (mine != CC_OK) st = mine;
    }
    free(all);
    return st;
}

/* The phases of every transport, in lock step with the other ranks. */
static cc_status_t connect_all(cc__net_t *net, const cc__net_config_t *c)
{
    for (int phase = 0; phase < 3; phase++) {
        cc_status_t st = CC_OK;
        for (int tp = CC__TP_SHM; tp < CC__TP_COUNT && st == CC_OK; tp++)
            st = net->tps[tp]->connect(net, phase);
        st = exchange_status(net, c, st, phase);
        if (st != CC_OK) return st;
    }
    return CC_OK;
}

cc_status_t cc__net_create(const cc__net_config_t *config, cc__net_t **out)
{
    cc_status_t st = check_config(config, out);
    if (st != CC_OK) return st;
    cc__net_t *net = net_alloc(config);
    if (!net) {
        cc_log_error(CC_SUBSYS_NET, "net: create: no memory for %d peers", config->size);
        return CC_ERR_NO_MEMORY;
    }
    cc__peer_info_t mine;
    memset(&mine, 0, sizeof(mine));
    mine.magic = CC__PEER_INFO_MAGIC;
    mine.version = CC__PEER_INFO_VERSION;
    mine.rank = config->rank;
    mine.size = config->size;
    mine.comm_id = config->comm_id;
    if (config->transport && strcmp(config->transport, "tcp") == 0)
        mine.flags |= CC__INFO_FORCE_TCP;
    st = check_env();
    if (st == CC_OK) st = cc__peer_identity(&mine);
    if (st == CC_OK && config->size > 1) st = net->tps[CC__TP_TCP]->setup(net, &mine);
    mine.status = st;
    /* Even a failed rank takes part, so the others learn why instead of timing out. */
    CC_CHECK_GOTO(config->allgather(config->allgather_ctx, &mine, net->info, sizeof(mine)), st,
                  fail);
    CC_CHECK_GOTO(check_infos(net), st, fail);
    pick_transports(net);
    pick_spin(net);
    CC_CHECK_GOTO(connect_all(net, config), st, fail);
    cc_log_info(CC_SUBSYS_NET, "net: rank %d of %d connected: %d peers over shm, %d over tcp",
                net->rank, net->size, net->tp_peers[CC__TP_SHM], net->tp_peers[CC__TP_TCP]);
    *out = net;
    return CC_OK;
fail:
    cc__net_destroy(net);
    return st;
}

void cc__net_destroy(cc__net_t *net)
{
    if (!net) return;
    /* Transports first: they free the held messages they still fill, then the queues go. */
    for (int tp = CC__TP_COUNT - 1; tp >= 0; tp--)
        if (net->tps[tp] && net->tp_state[tp]) net->tps[tp]->close(net);
    for (int i = 0; net->peers && i < net->size; i++) {
        cc__msg_t *m = net->peers[i].held_head;
        while (m) {
            cc__msg_t *next = m->next;
            cc__msg_free(net, m);
            m = next;
        }
    }
    cc__msg_drop_spares(net);
    if (net->wake_fd >= 0) close(net->wake_fd);
    free(net->peers);
    free(net->info);
    free(net);
}

const char *cc__net_transport(const cc__net_t *net, int peer)
{
    if (!net || peer < 0 || peer >= net->size) return "none";
    return net->tps[net->peers[peer].tp]->name;
}

int cc__net_all_shm(const cc__net_t *net)
{
    /* A net of one rank counts as all-shm: it has no peer elsewhere. */
    return net && net->tp_peers[CC__TP_SHM] == net->size - 1;
}

int cc__net_peer_pid(const cc__net_t *net, int peer)
{
    if (!net || peer < 0 || peer >= net->size) return 0;
    int tp = net->peers[peer].tp;
    return tp == CC__TP_SHM || tp == CC__TP_SELF ? net->info[peer].pid : 0;
}

void cc__net_abort(cc__net_t *net, cc_status_t reason)
{
    if (!net) return;
    if (reason >= 0) reason = CC_ERR_ABORTED; /* "aborted with success" means aborted */
    int expected = 0;
    if (!atomic_compare_exchange_strong(&net->abort_reason, &expected, (int)reason)) return;
    cc_log_info(CC_SUBSYS_NET, "net: rank %d aborts its connections (%s)", net->rank,
                cc_status_name(reason));
    /* Peers first, so their waits end; then this process's own waiter. */
    for (int tp = CC__TP_SHM; tp < CC__TP_COUNT; tp++)
        if (net->tp_state[tp] && net->tps[tp]->abort) net->tps[tp]->abort(net);
    uint64_t one = 1;
    ssize_t w = write(net->wake_fd, &one, sizeof(one));
    (void)w;
}
