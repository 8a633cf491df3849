/*
 * ccdump_scale.c - ccdump at scale. Writes the ring files of a hung job of
 * RANKS ranks with ENTRIES entries each (default 1,024 x 4,096) with the
 * recorder's own writer, then runs `ccdump diagnose` on them as a child
 * process and reports its wall time and peak RSS (wait4's ru_maxrss, the
 * figure /usr/bin/time -v prints), and the verdict it printed.
 *
 *   ccdump_scale [RANKS [ENTRIES]] [--dir DIR] [--keep] [--ccdump PATH] [--json]
 *
 * The job: every rank runs allreduces on world, and every 8th op a
 * send/recv with its neighbour (rank ^ 1) on a 2-rank comm of its own, with
 * a little jitter; the ranks' rings wrap (more ops than entries). Rank
 * RANKS/2 + 5 stops before the last allreduce; the others enter it and time
 * out. The diagnosis must name that rank.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "recorder/ring.h"

#define WORLD_ID 0x5ca1ab1e00000001ull
#define OP_NS    100000ull /* 100 us between ops */

typedef struct gen {
    int ranks, entries, culprit;
    uint64_t t0; /* monotonic time of the first op */
    const char *dir;
} gen_t;

static uint64_t pair_id(int rank)
{
    return 0x9a1700000000ull + (uint64_t)(rank / 2);
}

/* The comm table: world (all ranks) and this rank's pair. */
static void add_comms(cc__fr_ring_t *r, const gen_t *g, int rank)
{
    cc__fr_comm_t *c = r->comms;
    memset(c, 0, 2 * sizeof(*c));
    c[0].comm_id = WORLD_ID;
    snprintf(c[0].name, sizeof(c[0].name), "world");
    c[0].size = g->ranks;
    c[0].rank = rank;
    c[0].ranks_off = 0;
    c[0].ranks_count = (uint32_t)g->ranks;
    for (int i = 0; i < g->ranks; i++)
        r->ranks[i] = i;
    c[1].comm_id = pair_id(rank);
    c[1].parent_id = WORLD_ID;
    snprintf(c[1].name, sizeof(c[1].name), "world.%d", rank / 2);
    c[1].size = 2;
    c[1].rank = rank & 1;
    c[1].ranks_off = (uint32_t)g->ranks;
    c[1].ranks_count = 2;
    r->ranks[g->ranks] = rank & ~1;
    r->ranks[g->ranks + 1] = rank | 1;
    r->hdr->rank_used = (uint64_t)g->ranks + 2;
    r->hdr->comm_count = 2;
}

/* One op: PRE, then START and POST as the recorder's subscribers would. */
static void put_op(cc__fr_ring_t *r, cc__fr_entry_t *e, uint64_t t, int state, uint64_t dur)
{
    e->t_enqueue_ns = t;
    uint64_t rid = cc__fr_ring_pre(r, e, NULL);
    cc__fr_update_t u = {CC__FR_STARTED, 0, t + 1000, 0, e->tid, 0, "ring", "shm"};
    cc__fr_ring_update(r, rid, &u);
    if (state == CC__FR_STARTED) return;
    u.state = (uint32_t)state;
    u.status = state == CC__FR_COMPLETED ? CC_OK : CC_ERR_TIMEOUT;
    u.t_end_ns = t + dur;
    cc__fr_ring_update(r, rid, &u);
}

static void fill(cc__fr_entry_t *e, int rank, const gen_t *g, int p2p, uint64_t seq)
{
    memset(e, 0, sizeof(*e));
    e->comm_id = p2p ? pair_id(rank) : WORLD_ID;
    e->comm_slot = p2p ? 1 : 0;
    e->type = p2p ? (rank & 1 ? CC_OP_RECV : CC_OP_SEND) : CC_OP_ALLREDUCE;
    e->coll_seq = p2p ? 0 : seq;
    e->p2p_seq = p2p ? seq : 0;
    e->rank = p2p ? rank & 1 : rank;
    e->size = p2p ? 2 : g->ranks;
    e->peer = p2p ? (rank & 1) ^ 1 : -1;
    e->root = -1;
    e->dtype = CC_FLOAT32;
    e->redop = p2p ? CC_REDOP_COUNT : CC_SUM;
    e->in_count = e->out_count = p2p ? 1024 : 262144;
    e->bytes = e->in_count * 4;
    e->timeout_ms = 30000;
    e->tid = (uint32_t)(1000 + rank);
    e->state = CC__FR_SCHEDULED;
    e->status = CC_INPROGRESS;
}

/* Rank `rank`'s ring: 2 x entries ops (the ring keeps the last `entries`). */
static int write_rank(const gen_t *g, int rank)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/rank%d.%d.ccfr", g->dir, rank, 100000 + rank);
    cc__fr_ring_params_t p = {.capacity = (uint32_t)g->entries, .rank = rank,
                              .world_size = g->ranks, .host = "scale-host", .job_id = "scale"};
    cc__fr_ring_t *r = NULL;
    if (cc__fr_ring_create(path, &p, &r) != CC_OK) return -1;
    add_comms(r, g, rank);
    uint64_t nops = 2 * (uint64_t)g->entries, coll = 0, p2p = 0;
    unsigned jitter = (unsigned)rank * 2654435761u;
    for (uint64_t i = 0; i < nops; i++) {
        int last = i + 1 == nops, is_p2p = i % 8 == 7 && !last;
        if (last && rank == g->culprit) break; /* "stuck in compute" before the last one */
        cc__fr_entry_t e;
        fill(&e, rank, g, is_p2p, is_p2p ? ++p2p : ++coll);
        e.op_id = i + 1;
        jitter = jitter * 1103515245u + 12345u;
        uint64_t t = g->t0 + i * OP_NS + (jitter >> 16) % 20000;
        put_op(r, &e, t, last ? CC__FR_TIMED_OUT : CC__FR_COMPLETED, last ? 30000000000ull : 50000);
    }
    __atomic_store_n(&r->comms[0].last_enqueued, coll, __ATOMIC_RELAXED);
    __atomic_store_n(&r->comms[0].last_completed, rank == g->culprit ? coll : coll - 1,
                     __ATOMIC_RELAXED);
    cc__fr_ring_destroy(r);
    return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p);
}

static double now_s(void)
{
    return (double)cc__now_ns() / 1e9;
}

/* Run ccdump diagnose on dir; wall time, peak RSS and the last line of its output. */
static int measure(const char *ccdump, const char *dir, int as_json)
{
    char out[PATH_MAX], line[2048] = "";
    if (snprintf(out, sizeof(out), "%s.out", dir) >= (int)sizeof(out)) {
        fprintf(stderr, "ccdump_scale: directory name too long: %s\n", dir);
        return 2;
    }
    double t = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1);
        execl(ccdump, "ccdump", "diagnose", dir, as_json ? "--json" : NULL, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    wait4(pid, &status, 0, &ru);
    t = now_s() - t;
    FILE *f = fopen(out, "r");
    char buf[2048];
    while (f && fgets(buf, sizeof(buf), f))
        if (strncmp(buf, "verdict", 7) == 0 || strstr(buf, "\"text\"")) snprintf(line, sizeof(line), "%s", buf);
    if (f) fclose(f);
    unlink(out);
    printf("ccdump diagnose%s: %.2f s wall, %.2f s user, %.2f s sys, peak RSS %.1f MiB, exit %d\n",
           as_json ? " --json" : "", t, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
           ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, ru.ru_maxrss / 1024.0,
           WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    printf("  %s", line[0] ? line : "(no verdict line)\n");
    return WIFEXITED(status) && WEXITSTATUS(status) == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
    gen_t g = {1024, 4096, 0, 0, NULL};
    int keep = 0, as_json = 0, npos = 0;
    char self[PATH_MAX], ccdump[PATH_MAX + 16] = "", dir[PATH_MAX] = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--keep")) keep = 1;
        else if (!strcmp(argv[i], "--json")) as_json = 1;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) snprintf(dir, sizeof(dir), "%s", argv[++i]);
        else if (!strcmp(argv[i], "--ccdump") && i + 1 < argc) snprintf(ccdump, sizeof(ccdump), "%s", argv[++i]);
        else if (npos++ == 0) g.ranks = atoi(argv[i]);
        else g.entries = atoi(argv[i]);
    }
    if (g.ranks < 4 || g.ranks > 65536 || g.entries < 16 || g.entries > (1 << 20)) {
        fprintf(stderr, "usage: ccdump_scale [RANKS (4..65536) [ENTRIES (16..1048576)]] [--dir DIR] "
                        "[--keep] [--ccdump PATH] [--json]\n");
        return 2;
    }
    if (!ccdump[0]) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        snprintf(ccdump, sizeof(ccdump), "%s/ccdump", self);
    }
    if (!dir[0]) snprintf(dir, sizeof(dir), "/tmp/ccdump-scale-%d", (int)getpid());
    if (mkdir(dir, 0700) && errno != EEXIST) {
        perror(dir);
        return 2;
    }
    g.dir = dir;
    g.culprit = g.ranks / 2 + 5;
    g.t0 = cc__now_ns() - 2 * (uint64_t)g.entries * OP_NS - 60000000000ull;
    double t = now_s();
    for (int r = 0; r < g.ranks; r++)
        if (write_rank(&g, r)) {
            fprintf(stderr, "ccdump_scale: cannot write rank %d's ring in %s\n", r, dir);
            return 2;
        }
    printf("generated %d rings x %d entries in %s (%.1f s); expected culprit: rank %d\n", g.ranks,
           g.entries, dir, now_s() - t, g.culprit);
    fflush(stdout);
    int rc = measure(ccdump, dir, as_json);
    if (!keep) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return rc;
}
