/*
 * launcher.c - who started this process, and where its job's store is.
 *
 * Several launchers' variables can be present at once: mpirun inside a Slurm
 * batch script inherits the script's SLURM_PROCID=0 SLURM_NTASKS=1, srun can
 * start torchrun. The variables that describe this very process are the
 * innermost launcher's, so the search goes from the inside out: ccrun,
 * torchrun, Open MPI, PMI, then Slurm (only for a task of srun: a batch
 * script has no step id). The table in docs/ccrun.md follows this file.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bootstrap/store_proto.h"
#include "core/comm.h"
#include "base/config.h"
#include "core/launcher.h"
#include "base/log.h"

/* Ports derived from a job id stay below Linux's ephemeral range (32768..60999). */
#define DERIVED_PORT_BASE 20000
#define DERIVED_PORTS     12768

struct launch {
    const char *who;
    int rank, size;
    int local_rank, local_size; /* -1: not given */
};

static int parse_count(const char *text, int *out)
{
    int64_t v;
    if (!text || cc__parse_int(text, &v) != 0 || v < 0 || v > 1 << 24) return -1;
    *out = (int)v;
    return 0;
}

/* One launcher's pair of variables; 1 if both parse. */
static int pair(const char *who, const char *r, const char *s, const char *lr, const char *ls,
                struct launch *out)
{
    struct launch l = {who, -1, -1, -1, -1};
    if (parse_count(r, &l.rank) || parse_count(s, &l.size)) return 0;
    if (parse_count(lr, &l.local_rank)) l.local_rank = -1;
    if (parse_count(ls, &l.local_size)) l.local_size = -1;
    *out = l;
    return 1;
}

/* Every launcher whose variables are present, innermost first. Returns how many. */
static int candidates(const struct cc__config *c, struct launch out[5])
{
    int n = 0;
    if (c->rank >= 0 && c->size > 0)
        out[n++] = (struct launch){"ccrun", (int)c->rank, (int)c->size, (int)c->local_rank,
                                   (int)c->local_size};
    n += pair("torchrun", c->t_rank, c->t_world_size, c->t_local_rank, c->t_local_world_size,
              &out[n]);
    n += pair("open mpi", c->ompi_rank, c->ompi_size, c->ompi_local_rank, c->ompi_local_size,
              &out[n]);
    n += pair("pmi", c->pmi_rank, c->pmi_size, c->mpi_local_rank, c->mpi_local_size, &out[n]);
    /* A batch script (sbatch, salloc) has Slurm's variables but no step: it is no task of srun. */
    if (c->slurm_step_id || c->slurm_stepid)
        n += pair("slurm", c->slurm_procid,
                  c->slurm_step_num_tasks ? c->slurm_step_num_tasks : c->slurm_ntasks,
                  c->slurm_localid, NULL, &out[n]);
    return n;
}

/* Pick the innermost launcher; say which one and what was passed over. */
static cc_status_t choose(const struct cc__config *cfg, struct launch *out)
{
    struct launch all[5];
    int n = candidates(cfg, all);
    if (n == 0) {
        if (cfg->slurm_job_id && cfg->slurm_procid)
            cc_log_info(CC_SUBSYS_INIT,
                        "slurm job %s without a step id: a batch script, not a "
                        "task of srun; its SLURM_* variables are not this process's rank",
                        cfg->slurm_job_id);
        return CC_ERR_NOT_FOUND;
    }
    *out = all[0];
    for (int i = 1; i < n; i++) {
        int same = all[i].rank == all[0].rank && all[i].size == all[0].size;
        /* Two MPI runtimes that disagree about this process cannot both be right. */
        if (!same && !strcmp(all[0].who, "open mpi") && !strcmp(all[i].who, "pmi")) {
            cc_log_error(CC_SUBSYS_INIT,
                         "launchers disagree: open mpi says rank %d of %d, pmi "
                         "says rank %d of %d; refusing to guess which job this process is in",
                         all[0].rank, all[0].size, all[i].rank, all[i].size);
            return CC_ERR_MISMATCH;
        }
        cc_log_info(CC_SUBSYS_INIT,
                    "launcher %s (rank %d of %d) is inside %s (rank %d of %d): "
                    "using %s, the innermost",
                    all[0].who, all[0].rank, all[0].size, all[i].who, all[i].rank, all[i].size,
                    all[0].who);
    }
    return CC_OK;
}

int cc__slurm_first_host(const char *list, char *out, size_t outlen)
{
    size_t o = 0;
    if (!list || !*list || outlen == 0) return -1;
    for (const char *p = list; *p && *p != ','; p++) {
        if (*p == '[') { /* the first item of the range list: "01" of "[01-04,07]" */
            for (p++; *p && *p != ',' && *p != '-' && *p != ']'; p++) {
                if (o + 1 >= outlen) return -1;
                out[o++] = *p;
            }
            while (*p && *p != ']')
                p++;
            if (!*p) return -1; /* "[" never closed */
            continue;
        }
        if (*p == ']' || o + 1 >= outlen) return -1;
        out[o++] = *p;
    }
    out[o] = '\0';
    return o ? 0 : -1;
}

/* A port the ranks of one job agree on without talking: a hash of the job's id. */
static int derived_port(const char *a, const char *b)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *s = a; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ '.') * 1099511628211ull;
    for (const char *s = b; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return DERIVED_PORT_BASE + (int)(h % DERIVED_PORTS);
}

int cc__host_is_local(const char *host)
{
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM}, *res = NULL;
    if (!host || getaddrinfo(host, NULL, &hints, &res) != 0) return 0;
    int local = 0;
    /* Binding succeeds only to an address of this host's own interfaces (or loopback). */
    for (struct addrinfo *ai = res; ai && !local; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        local = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(res);
    return local;
}

/* Open MPI 4's mpirun (the HNP): "jobid.vpid;tcp://IP:port;..." -> IP. */
static int hnp_host(const char *uri, char *out, size_t outlen)
{
    const char *p = uri ? strstr(uri, "tcp://") : NULL;
    if (!p) return -1;
    p += 6;
    size_t n = strcspn(p, ":;");
    if (!n || n >= outlen) return -1;
    memcpy(out, p, n);
    out[n] = '\0';
    return 0;
}

static cc_status_t no_store(const struct launch *l, const char *why)
{
    cc_log_error(CC_SUBSYS_INIT,
                 "launched by %s (rank %d of %d) but %s: set MASTER_ADDR and "
                 "MASTER_PORT, or CCOMM_STORE_ADDR",
                 l->who, l->rank, l->size, why);
    return CC_ERR_INVALID_ARG;
}

/* MASTER_ADDR:MASTER_PORT+1: MASTER_PORT belongs to torchrun's own store. 1 if used. */
static int master_addr(const struct cc__config *cfg, char *addr, size_t len, cc_status_t *st)
{
    int port = 0;
    if (!cfg->t_master_addr && !cfg->t_master_port) return 0;
    *st = CC_OK;
    if (!cfg->t_master_addr || !*cfg->t_master_addr || parse_count(cfg->t_master_port, &port) ||
        port >= 65535) {
        cc_log_error(CC_SUBSYS_INIT,
                     "MASTER_ADDR=\"%s\" MASTER_PORT=\"%s\": need an address and "
                     "a port below 65535 (or set CCOMM_STORE_ADDR)",
                     cfg->t_master_addr ? cfg->t_master_addr : "(unset)",
                     cfg->t_master_port ? cfg->t_master_port : "(unset)");
        *st = CC_ERR_INVALID_ARG;
        return 1;
    }
    snprintf(addr, len, "%s:%d", cfg->t_master_addr, port + 1);
    return 1;
}

/* The runtime's own information: the first node of the Slurm step, mpirun's node. */
static cc_status_t runtime_addr(const struct cc__config *cfg, const struct launch *l, char *addr,
                                size_t len, int *hosts)
{
    char host[256];
    if (!strcmp(l->who, "slurm")) {
        const char *list = cfg->slurm_step_nodelist  ? cfg->slurm_step_nodelist
                           : cfg->slurm_job_nodelist ? cfg->slurm_job_nodelist
                                                     : cfg->slurm_nodelist;
        if (cc__slurm_first_host(list, host, sizeof(host)) != 0)
            return no_store(l, "SLURM_STEP_NODELIST has no first node");
        /* Task 0 of a step runs on the step's first node. */
        snprintf(addr, len, "%s:%d", host,
                 derived_port(cfg->slurm_job_id,
                              cfg->slurm_step_id ? cfg->slurm_step_id : cfg->slurm_stepid));
        *hosts = l->rank == 0;
        return CC_OK;
    }
    const char *job = cfg->ompi_jobid ? cfg->ompi_jobid : cfg->pmix_namespace;
    if (!strcmp(l->who, "open mpi") && hnp_host(cfg->ompi_hnp_uri, host, sizeof(host)) == 0) {
        /* mpirun's node: the first rank there hosts (rank 0 when mpirun runs on a node of
         * the job, as inside an allocation). */
        snprintf(addr, len, "%s:%d", host, derived_port("ompi", job));
        *hosts = l->local_rank == 0 && cc__host_is_local(host);
        return CC_OK;
    }
    if (l->local_size == l->size && strcmp(l->who, "slurm") != 0) { /* one host: loopback */
        snprintf(addr, len, "127.0.0.1:%d", derived_port(l->who, job ? job : "1"));
        *hosts = l->rank == 0;
        return CC_OK;
    }
    return no_store(l, "its variables do not say where rank 0 runs");
}

/* Where the store is and whether this rank hosts it. */
static cc_status_t find_store(const struct cc__config *cfg, const struct launch *l, char *addr,
                              size_t len, int *hosts)
{
    cc_status_t st = CC_OK;
    *hosts = 0;
    if (!strcmp(l->who, "ccrun")) { /* ccrun hosts the store itself */
        if (!cfg->store_addr[0]) return no_store(l, "CCOMM_STORE_ADDR is not set");
        snprintf(addr, len, "%s", cfg->store_addr);
        return CC_OK;
    }
    if (cfg->store_addr[0]) {
        char host[256];
        int port;
        snprintf(addr, len, "%s", cfg->store_addr);
        /* Rank 0 starts it when the address is one of this host's. */
        *hosts = l->rank == 0 && cc__store_split_addr(addr, host, sizeof(host), &port) == 0 &&
                 cc__host_is_local(host);
        return CC_OK;
    }
    if (master_addr(cfg, addr, len, &st)) {
        *hosts = l->rank == 0;
        return st;
    }
    if (!strcmp(l->who, "torchrun")) return no_store(l, "MASTER_ADDR and MASTER_PORT are not set");
    return runtime_addr(cfg, l, addr, len, hosts);
}

cc_status_t cc__launcher_find(int *rank, int *size, char *addr, size_t addrlen, int *hosts,
                              const char **who)
{
    const struct cc__config *cfg = cc__cfg();
    struct launch l;
    CC_CHECK(choose(cfg, &l));
    CC_CHECK(find_store(cfg, &l, addr, addrlen, hosts));
    *rank = l.rank;
    *size = l.size;
    *who = l.who;
    return CC_OK;
}
