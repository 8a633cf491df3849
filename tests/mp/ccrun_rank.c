/*
 * ccrun_rank.c - a rank program for ccrun's tests. It reads what ccrun set
 * through cc__cfg() (as the library will) and reports by exit status.
 *
 *   ccrun_rank env N          check the environment of a job of N ranks, connect to the
 *                             store and allgather ranks and job ids; prints "rank R ok"
 *   ccrun_rank netns IP0,IP1  also check that rank r reaches the store from IP[r % k]
 *   ccrun_rank wrongkey       a client with another job key must be refused
 *   ccrun_rank exit R CODE    rank R exits with CODE, the others with 0
 *   ccrun_rank trap DIR       write DIR/ready.R, then on SIGINT, SIGTERM or SIGUSR2 write
 *                             DIR/INT.R, TERM.R or USR2.R (and exit 0 on INT and TERM)
 *   ccrun_rank stubborn       ignore SIGTERM and wait forever
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap/store.h"
#include "ccomm/ccomm.h"
#include "base/config.h"

static int fail(const char *what)
{
    fprintf(stderr, "ccrun_rank %lld: FAILED: %s\n", (long long)cc__cfg()->rank, what);
    return 1;
}

/* The launcher variables, CCOMM_* and torchrun's, must agree. */
static int check_env(int expect_size)
{
    const struct cc__config *c = cc__cfg();
    char want[320];
    if (c->size != expect_size) return fail("CCOMM_SIZE differs from the -n given");
    if (c->rank < 0 || c->rank >= c->size) return fail("CCOMM_RANK out of range");
    if (c->local_rank != c->rank || c->local_size != c->size)
        return fail("CCOMM_LOCAL_RANK/LOCAL_SIZE differ from the global ones on one host");
    if (!c->t_rank || atoll(c->t_rank) != c->rank || !c->t_world_size ||
        atoll(c->t_world_size) != c->size || !c->t_local_rank ||
        atoll(c->t_local_rank) != c->rank || !c->t_local_world_size ||
        atoll(c->t_local_world_size) != c->size)
        return fail("torchrun variables differ from CCOMM_*");
    if (!c->t_master_addr || !c->t_master_port) return fail("MASTER_ADDR/MASTER_PORT unset");
    /* ccomm's store is at MASTER_PORT + 1 under every launcher (init.c, launcher.c). */
    snprintf(want, sizeof(want), "%s:%d", c->t_master_addr, atoi(c->t_master_port) + 1);
    if (strcmp(want, c->store_addr) != 0)
        return fail("MASTER_ADDR:MASTER_PORT+1 != CCOMM_STORE_ADDR");
    if (strlen(c->job_key) != 64 || strspn(c->job_key, "0123456789abcdef") != 64)
        return fail("CCOMM_JOB_KEY is not 64 hex digits");
    if (strncmp(c->job_id, "ccrun-", 6) != 0) return fail("CCOMM_JOB_ID does not start ccrun-");
    return 0;
}

/* Every rank sees the same store, key and job id: allgather ranks and job ids. */
static int check_store(const char *netns_ips)
{
    const struct cc__config *c = cc__cfg();
    int rank = (int)c->rank, n = (int)c->size;
    int64_t tmo = c->connect_timeout * 1000; /* CCOMM_CONNECT_TIMEOUT, as the library uses */
    cc__store_t *s = NULL;
    if (cc__store_connect(c->store_addr, c->job_key, tmo, &s) != CC_OK)
        return fail("cannot connect to the store");
    int *all = calloc((size_t)n, sizeof(int)), rc = 0;
    char(*ids)[128] = calloc((size_t)n, 128), mine[128] = {0};
    snprintf(mine, sizeof(mine), "%s", c->job_id);
    if (cc__store_allgather(s, "ranks", rank, n, &rank, all, sizeof(int), tmo) != CC_OK ||
        cc__store_allgather(s, "ids", rank, n, mine, ids, 128, tmo) != CC_OK)
        rc = fail("allgather failed");
    for (int i = 0; !rc && i < n; i++)
        if (all[i] != i || strcmp(ids[i], mine) != 0) rc = fail("allgather gave wrong values");
    if (!rc && netns_ips) { /* the namespace shows in the address we reach the store from */
        char ip[64], list[512], *save = NULL, *tok;
        int k = 0;
        snprintf(list, sizeof(list), "%s", netns_ips);
        for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            k++;
        snprintf(list, sizeof(list), "%s", netns_ips);
        tok = strtok_r(list, ",", &save);
        for (int i = 0; i < rank % k; i++)
            tok = strtok_r(NULL, ",", &save);
        if (cc__store_local_addr(s, ip, sizeof(ip)) != CC_OK || strcmp(ip, tok) != 0)
            rc = fail("the rank is not in the network namespace it was given");
    }
    if (!rc && cc__store_barrier(s, "end", n, tmo) != CC_OK) rc = fail("barrier failed");
    free(all);
    free(ids);
    cc__store_close(s);
    return rc;
}

static int wrong_key(void)
{
    const struct cc__config *c = cc__cfg();
    cc__store_t *s = NULL;
    if (cc__store_connect(c->store_addr, "not-the-job-key", 5000, &s) != CC_ERR_AUTH)
        return fail("a client with another key was not refused");
    if (cc__store_connect(c->store_addr, "", 5000, &s) != CC_ERR_AUTH)
        return fail("a client without a key was not refused");
    if (cc__store_connect(c->store_addr, c->job_key, 5000, &s) != CC_OK)
        return fail("the job key was refused");
    cc__store_close(s);
    printf("rank %lld: other keys refused\n", (long long)c->rank);
    return 0;
}

static char g_dir[4000];

/* Leave DIR/<SIG>.<rank> behind (async-signal-safe); INT and TERM then end the rank. */
static void on_signal(int sig)
{
    char path[4096];
    const char *name = sig == SIGINT ? "INT" : sig == SIGTERM ? "TERM" : "USR2";
    snprintf(path, sizeof(path), "%s/%s.%lld", g_dir, name, (long long)cc__cfg()->rank);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) close(fd);
    if (sig != SIGUSR2) _exit(0);
}

static int trap_signals(const char *dir)
{
    char ready[4096];
    long long r = cc__cfg()->rank;
    snprintf(g_dir, sizeof(g_dir), "%s", dir);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGUSR2, on_signal);
    snprintf(ready, sizeof(ready), "%s/ready.%lld", dir, r);
    FILE *f = fopen(ready, "w");
    if (!f) return fail("cannot write the ready file");
    fclose(f);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "env") && argc == 3) {
        if (check_env(atoi(argv[2])) || check_store(NULL)) return 1;
        printf("rank %lld ok\n", (long long)cc__cfg()->rank);
        return 0;
    }
    if (!strcmp(mode, "netns") && argc == 3) {
        if (check_env((int)cc__cfg()->size) || check_store(argv[2])) return 1;
        printf("rank %lld ok in its namespace\n", (long long)cc__cfg()->rank);
        return 0;
    }
    if (!strcmp(mode, "wrongkey")) return wrong_key();
    if (!strcmp(mode, "exit") && argc == 4)
        return cc__cfg()->rank == atoi(argv[2]) ? atoi(argv[3]) : 0;
    if (!strcmp(mode, "trap") && argc == 3) return trap_signals(argv[2]);
    if (!strcmp(mode, "comm") && argc == 3) { /* a communicator (so a ring), then exit CODE on rank 1 */
        cc_comm_t *comm = NULL;
        if (cc_comm_init_from_env(&comm, NULL) != CC_OK || cc_barrier(comm, NULL, NULL) != CC_OK)
            return fail("communicator");
        cc_comm_destroy(comm);
        return cc__cfg()->rank == 1 ? atoi(argv[2]) : 0;
    }
    if (!strcmp(mode, "timeout0")) { /* rank 0's barrier times out (rank 1 is late); both exit 0 */
        cc_comm_t *comm = NULL;
        if (cc_comm_init_from_env(&comm, NULL) != CC_OK) return fail("communicator");
        if (cc__cfg()->rank == 0) {
            cc_status_t st = cc_barrier(comm, NULL, NULL);
            printf("rank 0 barrier: %s\n", cc_status_str(st));
        } else {
            sleep(3);
        }
        cc_comm_destroy(comm);
        return 0;
    }
    if (!strcmp(mode, "stubborn")) {
        signal(SIGTERM, SIG_IGN);
        for (;;)
            pause();
    }
    fprintf(stderr, "usage: ccrun_rank env N | netns IPS | wrongkey | exit R CODE | trap DIR | "
                    "stubborn | comm CODE | timeout0\n");
    return 2;
}
