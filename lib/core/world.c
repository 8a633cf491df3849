/*
 * world.c - joining a job: the store connection (hosting it when rank 0 is
 * asked to), the job id every rank agrees on, and the world-size check.
 */
#include <errno.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "core/watchdog.h"

/* Split "host:port"; IPv6 as "[addr]:port". */
static cc_status_t split_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon || colon == addr || !colon[1]) goto bad;
    size_t hl = (size_t)(colon - addr);
    const char *h = addr;
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') h++, hl -= 2;
    if (hl >= hostlen) goto bad;
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535) goto bad;
    memcpy(host, h, hl);
    host[hl] = '\0';
    *port = (int)p;
    return CC_OK;
bad:
    cc_log_error(CC_SUBSYS_INIT, "store address \"%s\" is not host:port", addr);
    return CC_ERR_INVALID_ARG;
}

/* The rank that may host (rank 0, or the launcher's choice) starts the store unless one
 * listens already. */
static cc_status_t maybe_host(cc__world_t *w, const char *addr, const char *key)
{
    char host[256];
    int port;
    CC_CHECK(split_addr(addr, host, sizeof(host), &port));
    if (port == 0) { /* a job of one: any free port on loopback, nobody else needs to know it */
        CC_CHECK(cc__store_server_start("127.0.0.1", 0, key, &w->server));
        snprintf(w->store_addr, sizeof(w->store_addr), "127.0.0.1:%d",
                 cc__store_server_port(w->server));
        return CC_OK;
    }
    cc_status_t st = cc__store_server_start("0.0.0.0", port, key, &w->server);
    if (st == CC_ERR_BUSY) {
        cc_log_info(CC_SUBSYS_INIT, "port %d is in use; assuming a store already listens at %s",
                    port, addr);
        return CC_OK;
    }
    if (st == CC_OK) cc_log_info(CC_SUBSYS_INIT, "rank 0 hosts the store at %s", addr);
    return st;
}

/* Rank 0 names the job unless CCOMM_JOB_ID did; the others read the name. */
static cc_status_t agree_job_id(cc__world_t *w, int rank, const char *prefix)
{
    const struct cc__config *cfg = cc__cfg();
    if (cfg->job_id[0]) {
        snprintf(w->job_id, sizeof(w->job_id), "%s", cfg->job_id);
        return CC_OK;
    }
    char key[64];
    snprintf(key, sizeof(key), "%sjob_id", prefix);
    if (rank == 0) {
        char host[64] = "host";
        gethostname(host, sizeof(host) - 1);
        snprintf(w->job_id, sizeof(w->job_id), "%s-%d-%llu", host, (int)getpid(),
                 (unsigned long long)(cc__realtime_ns() / 1000000000ull));
        return cc__store_set(w->store, key, w->job_id, strlen(w->job_id));
    }
    void *val = NULL;
    size_t len = 0;
    CC_CHECK(cc__store_get(w->store, key, &val, &len, cfg->connect_timeout * 1000));
    snprintf(w->job_id, sizeof(w->job_id), "%.*s", (int)(len < 127 ? len : 127), (char *)val);
    free(val);
    return CC_OK;
}

/* The first rank to arrive records its world size; a later rank with another size fails at
 * once instead of waiting for ranks that will never come. */
static cc_status_t claim_size(cc__world_t *w, int rank, int size, const char *prefix)
{
    char key[64], mine[48];
    snprintf(key, sizeof(key), "%ssize_claim", prefix);
    int n = snprintf(mine, sizeof(mine), "%d by rank %d", size, rank);
    void *cur = NULL;
    size_t clen = 0;
    int swapped = 0;
    CC_CHECK(cc__store_cas(w->store, key, NULL, 0, mine, (size_t)n, &cur, &clen, &swapped));
    int other = cur ? atoi(cur) : size;
    cc_status_t st = CC_OK;
    if (!swapped && other != size) {
        cc_log_error(CC_SUBSYS_INIT, "world size mismatch: this rank (%d) was started with size %d, "
                     "but rank %.*s", rank, size, (int)clen, (char *)cur);
        st = CC_ERR_MISMATCH;
    }
    free(cur);
    return st;
}

/* Every rank states the world size it was given; disagreement names the ranks. */
static cc_status_t check_sizes(cc__world_t *w, int rank, int size, const char *prefix)
{
    int32_t *all = calloc((size_t)size, sizeof(int32_t));
    if (!all) return CC_ERR_NO_MEMORY;
    int32_t mine = size;
    char name[64];
    snprintf(name, sizeof(name), "%ssize", prefix);
    cc_status_t st = cc__store_allgather(w->store, name, rank, size, &mine, all, sizeof(mine),
                                         cc__cfg()->connect_timeout * 1000);
    for (int r = 0; st == CC_OK && r < size; r++) {
        if (all[r] != size) {
            cc_log_error(CC_SUBSYS_INIT, "world size mismatch: rank %d was started with size %d, "
                         "rank %d with size %d", rank, size, r, (int)all[r]);
            st = CC_ERR_MISMATCH;
        }
    }
    free(all);
    return st;
}

/* A rank number may be claimed once: two processes with the same rank would corrupt the job. */
static cc_status_t claim_rank(cc__world_t *w, int rank, const char *prefix)
{
    char key[64], me[128], host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    snprintf(key, sizeof(key), "%srank/%d", prefix, rank);
    snprintf(me, sizeof(me), "%s:%d", host, (int)getpid());
    void *cur = NULL;
    size_t clen = 0;
    int swapped = 0;
    CC_CHECK(cc__store_cas(w->store, key, NULL, 0, me, strlen(me), &cur, &clen, &swapped));
    if (!swapped) {
        cc_log_error(CC_SUBSYS_INIT, "rank %d is already taken by process %.*s; two processes "
                     "were given the same rank", rank, (int)clen, cur ? (char *)cur : "?");
        free(cur);
        return CC_ERR_MISMATCH;
    }
    free(cur);
    return CC_OK;
}

void cc__world_lost_key(const cc__world_t *w, int r, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%slost/%d", w->prefix, r);
}

/* Leave the will that tells the job this rank is gone when its store connection closes: its
 * process died (even by SIGKILL) or let go of the world. Shrink counts such ranks lost. */
static cc_status_t leave_will(cc__world_t *w, int rank)
{
    char key[64], val[160], host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    cc__world_lost_key(w, rank, key, sizeof(key));
    int n = snprintf(val, sizeof(val), "rank %d (%s:%d): its store connection closed", rank, host,
                     (int)getpid());
    return cc__store_will(w->store, key, val, (size_t)n);
}

/* CCOMM_JOB_KEY; a job of one hosts a private store on loopback: a key nobody else knows. */
static void pick_key(cc__world_t *w, int port, int size)
{
    snprintf(w->job_key, sizeof(w->job_key), "%s", cc__cfg()->job_key);
    if (!w->job_key[0] && port == 0 && size == 1) {
        unsigned char raw[32];
        if (RAND_bytes(raw, sizeof(raw)) == 1)
            for (int i = 0; i < 32; i++) snprintf(w->job_key + 2 * i, 3, "%02x", raw[i]);
    }
}

static void world_free(cc__world_t *w)
{
    cc__store_close(w->store);
    cc__store_server_stop(w->server);
    free(w);
}

/*
 * What joining and attaching share: a world of (rank, size) at store_addr
 * with its job key, the store hosted here when may_host and it is ours to
 * host, and connected. port0_ok: the caller allows port 0 (a job of one
 * rank with a private store).
 */
static cc_status_t world_open(int rank, int size, const char *store_addr, int may_host,
                              int port0_ok, cc__world_t **out)
{
    cc__world_t *w = calloc(1, sizeof(*w));
    if (!w) return CC_ERR_NO_MEMORY;
    atomic_init(&w->refs, 1);
    w->world_rank = rank;
    w->world_size = size;
    snprintf(w->store_addr, sizeof(w->store_addr), "%s", store_addr);
    cc_status_t st = CC_OK;
    char host[256];
    int port = 0;
    CC_CHECK_GOTO(split_addr(store_addr, host, sizeof(host), &port), st, fail);
    pick_key(w, port, size);
    if (port == 0 && !port0_ok) {
        cc_log_error(CC_SUBSYS_INIT, "store address %s has port 0, which only a job of one rank "
                     "may use", store_addr);
        st = CC_ERR_INVALID_ARG;
        goto fail;
    }
    if (may_host) CC_CHECK_GOTO(maybe_host(w, store_addr, w->job_key), st, fail);
    st = cc__store_connect(w->store_addr, w->job_key, cc__cfg()->connect_timeout * 1000,
                           &w->store);
    if (st != CC_OK && may_host && !w->server) {
        cc_log_error(CC_SUBSYS_INIT, "port of %s is in use by something that is not a ccomm store "
                     "(%s); choose another port", store_addr, cc_status_name(st));
        st = CC_ERR_BUSY;
    }
    if (st != CC_OK) goto fail;
    *out = w;
    return CC_OK;
fail:
    world_free(w);
    return st;
}

cc_status_t cc__world_join(int rank, int size, const char *store_addr, int may_host,
                           cc__world_t **out)
{
    cc__world_t *w = NULL;
    CC_CHECK(world_open(rank, size, store_addr, may_host, may_host && size == 1, &w));
    char prefix[32];
    cc_status_t st = CC_OK;
    /* Once per job: rank 0 says it, unless its own store just did. */
    if (!w->job_key[0] && rank == 0 && !w->server)
        cc_log_warn(CC_SUBSYS_INIT,
                    "CCOMM_JOB_KEY is not set: the store at %s accepts any "
                    "client (ccrun sets a key; set one yourself under other launchers)",
                    store_addr);
    /* Init, destroy, init in one job needs fresh keys. The store numbers the arrivals: a
     * world's ranks all arrive before any of them can start the next world, so arrival k
     * belongs to generation (k - 1) / size. This holds for ranks that are threads too. */
    int64_t arrival = 0;
    CC_CHECK_GOTO(cc__store_add(w->store, "world/arrivals", 1, &arrival), st, fail);
    snprintf(prefix, sizeof(prefix), "world%lld/", (long long)((arrival - 1) / size));
    snprintf(w->prefix, sizeof(w->prefix), "%s", prefix);
    CC_CHECK_GOTO(claim_size(w, rank, size, prefix), st, fail);
    CC_CHECK_GOTO(claim_rank(w, rank, prefix), st, fail);
    CC_CHECK_GOTO(leave_will(w, rank), st, fail);
    CC_CHECK_GOTO(check_sizes(w, rank, size, prefix), st, fail);
    CC_CHECK_GOTO(agree_job_id(w, rank, prefix), st, fail);
    *out = w;
    return CC_OK;
fail:
    world_free(w);
    return st;
}

/*
 * The rank that hosts the store keeps it up until the other ranks have let go
 * of it (bounded by CCOMM_STORE_LINGER): a rank that finishes first must not
 * pull the store from under peers that still split, create or destroy
 * communicators through it.
 */
static void linger(cc__world_t *w)
{
    uint64_t start = cc__now_ns(), limit = (uint64_t)cc__cfg()->store_linger * 1000000000ull;
    /* Not the watchdog's connection of this process: it closes only when the process exits. */
    size_t n = cc__store_server_peers(w->server);
    if (!n) return;
    cc_log_debug(CC_SUBSYS_BOOTSTRAP, "store: waiting up to %lld s for %zu rank(s) to disconnect",
                 (long long)cc__cfg()->store_linger, n);
    while ((n = cc__store_server_peers(w->server)) > 0 && cc__now_ns() - start < limit)
        usleep(10000);
    if (n)
        cc_log_warn(CC_SUBSYS_BOOTSTRAP, "store: stopping with %zu rank(s) still connected after "
                    "%lld s (CCOMM_STORE_LINGER): their next store call fails",
                    n, (long long)cc__cfg()->store_linger);
}

void cc__world_release(cc__world_t *w)
{
    if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
    cc__store_close(w->store);
    if (w->server) linger(w);
    if (w->server && cc__watchdog_uses_store(w->store_addr)) cc__watchdog_store_closing();
    cc__store_server_stop(w->server);
    free(w);
}

/* The first rank to attach names the job (compare-and-set); later ones read its name. */
static cc_status_t attach_job_id(cc__world_t *w)
{
    const struct cc__config *cfg = cc__cfg();
    if (cfg->job_id[0]) {
        snprintf(w->job_id, sizeof(w->job_id), "%s", cfg->job_id);
        return CC_OK;
    }
    char host[64] = "host", mine[128];
    gethostname(host, sizeof(host) - 1);
    int n = snprintf(mine, sizeof(mine), "%s-%d-%llu", host, (int)getpid(),
                     (unsigned long long)(cc__realtime_ns() / 1000000000ull));
    void *cur = NULL;
    size_t clen = 0;
    int swapped = 0;
    CC_CHECK(cc__store_cas(w->store, "attach/job_id", NULL, 0, mine, (size_t)n, &cur, &clen,
                           &swapped));
    snprintf(w->job_id, sizeof(w->job_id), "%.*s", (int)(clen < 127 ? clen : 127),
             cur ? (char *)cur : mine);
    free(cur);
    return CC_OK;
}

cc_status_t cc__world_attach(int rank, int size, const char *store_addr, int may_host,
                             cc__world_t **out)
{
    cc__world_t *w = NULL;
    CC_CHECK(world_open(rank, size, store_addr, may_host, size == 1, &w));
    cc_status_t st = attach_job_id(w);
    if (st != CC_OK) {
        world_free(w);
        return st;
    }
    /* No will: a process may attach several times (one per NCCL communicator), and one
     * attachment that ends would read as the rank gone. Shrink falls back on its deadline. */
    snprintf(w->prefix, sizeof(w->prefix), "attach/");
    *out = w;
    return CC_OK;
}
