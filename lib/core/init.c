/*
 * init.c - the first communicator: from explicit arguments, or from the
 * environment of whichever launcher started the process (launcher.c), and
 * the process-wide services that start with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "base/config.h"
#include "base/log.h"
#include "core/services.h"

/* `hosts`: this rank starts the store (unless one listens at store_addr already). */
static cc_status_t init_world(cc_comm_t **comm, int rank, int size, const char *store_addr,
                              int hosts, const cc_comm_config_t *config)
{
    cc__cfg();
    cc__log_init();
    CC_CHECK(cc__config_check()); /* a bad CCOMM_* value stops the job here, on every rank */
    if (!comm) {
        cc_log_error(CC_SUBSYS_INIT, "cc_comm_init: comm (the output) is NULL");
        return CC_ERR_INVALID_ARG;
    }
    if (size < 1 || rank < 0 || rank >= size) {
        cc_log_error(CC_SUBSYS_INIT, "cc_comm_init: rank %d and size %d: need 0 <= rank < size",
                     rank, size);
        return CC_ERR_INVALID_ARG;
    }
    if (!store_addr || !*store_addr) {
        cc_log_error(CC_SUBSYS_INIT, "cc_comm_init: store_addr is %s", store_addr ? "empty" : "NULL");
        return CC_ERR_INVALID_ARG;
    }
    CC_CHECK(cc__comm_config_check(config, "cc_comm_init"));
    cc__log_set_rank(rank);
    cc__world_t *world = NULL;
    CC_CHECK(cc__world_join(rank, size, store_addr, hosts, &world));
    int *wr = malloc((size_t)size * sizeof(int));
    if (!wr) {
        cc__world_release(world);
        return CC_ERR_NO_MEMORY;
    }
    for (int r = 0; r < size; r++) wr[r] = r;
    /* The name is part of the id: two worlds of one job in one process (a library that runs
     * its own, as the NCCL test double does) stay two communicators. "world" keeps the id. */
    const char *name = config && config->name ? config->name : "world";
    char idsrc[200];
    int n = snprintf(idsrc, sizeof(idsrc), "%s/%.63s", world->job_id, name);
    uint64_t id = cc__hash64(idsrc, (size_t)n, 0);
    cc__services_start(world, rank, size);
    cc_status_t st = cc__comm_create(world, id, 0, name, rank, size, wr, config, NULL, comm);
    cc__world_release(world); /* the comm holds its own reference */
    return st;
}

cc_status_t cc_comm_init(cc_comm_t **comm, int rank, int size, const char *store_addr,
                         const cc_comm_config_t *config)
{
    return init_world(comm, rank, size, store_addr, rank == 0, config);
}

cc_status_t cc_comm_init_from_env(cc_comm_t **comm, const cc_comm_config_t *config)
{
    cc__cfg();
    cc__log_init();
    CC_CHECK(cc__config_check()); /* before the launcher's variables are looked at */
    char addr[300];
    int rank = -1, size = -1, hosts = 0;
    const char *who = NULL;
    cc_status_t st = cc__launcher_find(&rank, &size, addr, sizeof(addr), &hosts, &who);
    if (st == CC_ERR_NOT_FOUND) {
        /* No launcher: a job of one, like MPI's singleton init. */
        cc_log_info(CC_SUBSYS_INIT, "no launcher found in the environment: running as rank 0 of 1");
        return init_world(comm, 0, 1, "127.0.0.1:0", 1, config);
    }
    CC_CHECK(st);
    cc_log_info(CC_SUBSYS_INIT, "launched by %s: rank %d of %d, store %s%s", who, rank, size, addr,
                hosts ? " (hosted by this rank)" : "");
    return init_world(comm, rank, size, addr, hosts, config);
}
