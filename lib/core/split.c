/*
 * split.c - communicators made from others: split by color and key, and
 * groups from explicit rank lists. Members meet through the parent's store
 * view; the child's id is a hash of the parent's id and what the members
 * agreed on, so it is the same on every member without another exchange.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/door.h"
#include "base/config.h"
#include "base/log.h"

/* A child inherits its parent's settings unless the caller gives a config. */
static cc_comm_config_t inherit(const cc_comm_t *parent, const cc_comm_config_t *config)
{
    if (config) return *config;
    cc_comm_config_t c = CC_COMM_CONFIG_INIT;
    c.timeout_ms = parent->timeout_ms;
    c.device = parent->device;
    c.transport = parent->transport_req;
    return c;
}

static cc_status_t check_parent(const cc_comm_t *parent, const void *child, const char *fn)
{
    if (!cc__comm_valid(parent)) {
        cc_log_error(CC_SUBSYS_CORE, "%s: parent %p is not a valid communicator", fn,
                     (const void *)parent);
        return CC_ERR_INVALID_ARG;
    }
    if (!child) {
        cc_log_error(CC_SUBSYS_CORE, "%s: child (the output) is NULL", fn);
        return CC_ERR_INVALID_ARG;
    }
    cc_status_t err = (cc_status_t)atomic_load(&parent->error);
    if (err != CC_OK)
        cc_log_warn(CC_SUBSYS_CORE, "%s: parent %s is broken (%s)", fn, parent->name,
                    cc_status_name(err));
    return err;
}

struct split_args {
    int color, key;
    const cc_comm_config_t *config;
    cc_comm_t **child;
};

struct ck {
    int32_t color, key;
};

/*
 * An engine that splits by itself (engine v2: NCCL's ncclCommSplit) is asked
 * on every rank, NOCOLOR ones too, when the child gets the parent's engine:
 * the same device and no other engine asked for. *engine is then the
 * child's engine, *arg what the hook made for it.
 */
static cc_status_t engine_split(cc_comm_t *parent, const struct split_args *a,
                                const cc_engine_v1_t **engine, void **arg)
{
    *engine = NULL;
    *arg = NULL;
    if (parent->engine->version < CC_ENGINE_VERSION_2) return CC_OK;
    /* A v3 table (windows) may have no split of its own. */
    const cc_engine_v2_t *e2 = (const cc_engine_v2_t *)(const void *)parent->engine;
    if (!e2->split) return CC_OK;
    cc_comm_config_t cfg = inherit(parent, a->config);
    if (cfg.device != parent->device ||
        (cfg.engine && strcmp(cfg.engine, "auto") && strcmp(cfg.engine, parent->engine->name)))
        return CC_OK;
    CC_CHECK(e2->split(parent->engine_state, a->color, a->key, arg));
    *engine = parent->engine;
    return CC_OK;
}

static cc_status_t do_split(cc_comm_t *parent, void *arg)
{
    struct split_args *a = arg;
    uint64_t n = ++parent->children;
    struct ck mine = {a->color, a->key}, *all = calloc((size_t)parent->size, sizeof(*all));
    if (!all) return CC_ERR_NO_MEMORY;
    char name[48];
    snprintf(name, sizeof(name), "split/%llu", (unsigned long long)n);
    cc_status_t st = cc__store_allgather(parent->store, name, parent->rank, parent->size, &mine,
                                         all, sizeof(mine), parent->timeout_ms);
    int *wr = NULL, count = 0, myrank = -1;
    const cc_engine_v1_t *engine = NULL;
    void *engine_arg = NULL;
    if (st == CC_OK) st = engine_split(parent, a, &engine, &engine_arg);
    if (st != CC_OK || a->color == CC_SPLIT_NOCOLOR) goto out;
    wr = malloc((size_t)parent->size * sizeof(int));
    if (!wr) {
        st = CC_ERR_NO_MEMORY;
        goto out;
    }
    /* Members in (key, parent rank) order: a stable insertion keeps rank order among equal keys. */
    int *order = malloc((size_t)parent->size * sizeof(int));
    if (!order) {
        st = CC_ERR_NO_MEMORY;
        goto out;
    }
    for (int r = 0; r < parent->size; r++) {
        if (all[r].color != a->color) continue;
        int i = count++;
        while (i > 0 && all[order[i - 1]].key > all[r].key) order[i] = order[i - 1], i--;
        order[i] = r;
    }
    for (int i = 0; i < count; i++) {
        wr[i] = parent->world_ranks[order[i]];
        if (order[i] == parent->rank) myrank = i;
    }
    free(order);
    char src[64], cname[64];
    int len = snprintf(src, sizeof(src), "%llu/%d", (unsigned long long)n, a->color);
    uint64_t id = cc__hash64(src, (size_t)len, parent->id);
    snprintf(cname, sizeof(cname), "%.40s.%d", parent->name, a->color);
    cc_comm_config_t cfg = inherit(parent, a->config);
    st = cc__comm_create_ex(parent->world, id, parent->id, cfg.name ? cfg.name : cname, myrank,
                            count, wr, &cfg, engine, engine_arg, a->child);
    wr = NULL; /* owned by the child (or freed on failure) */
out:
    free(wr);
    free(all);
    return st;
}

cc_status_t cc_comm_split(cc_comm_t *parent, int color, int key, const cc_comm_config_t *config,
                          cc_comm_t **child)
{
    CC_CHECK(check_parent(parent, child, "cc_comm_split"));
    CC_CHECK(cc__comm_config_check(config, "cc_comm_split"));
    if (color < CC_SPLIT_NOCOLOR) {
        cc_log_error(CC_SUBSYS_CORE, "cc_comm_split: color %d is negative (use CC_SPLIT_NOCOLOR, "
                     "-1, to opt out)", color);
        return CC_ERR_INVALID_ARG;
    }
    *child = NULL;
    struct split_args a = {color, key, config, child};
    return cc__door_lifecycle(parent, CC_OP_COMM_SPLIT, 0, do_split, &a);
}

struct group_args {
    const int *ranks;
    int nranks, myrank;
    const cc_comm_config_t *config;
    cc_comm_t **child;
};

static cc_status_t do_group(cc_comm_t *parent, void *arg)
{
    struct group_args *a = arg;
    uint64_t h = cc__hash64(a->ranks, (size_t)a->nranks * sizeof(int), 0);
    char key[64];
    snprintf(key, sizeof(key), "group/%016llx", (unsigned long long)h);
    int64_t arrivals = 0;
    CC_CHECK(cc__store_add(parent->store, key, 1, &arrivals));
    /* Groups of the same members are made in the same order everywhere: the
     * k-th creation gathers arrivals k*n+1 .. (k+1)*n. */
    uint64_t gen = (uint64_t)(arrivals - 1) / (uint64_t)a->nranks;
    int *wr = malloc((size_t)a->nranks * sizeof(int));
    if (!wr) return CC_ERR_NO_MEMORY;
    for (int i = 0; i < a->nranks; i++) wr[i] = parent->world_ranks[a->ranks[i]];
    char src[64], cname[64];
    int len = snprintf(src, sizeof(src), "g/%016llx/%llu", (unsigned long long)h,
                       (unsigned long long)gen);
    uint64_t id = cc__hash64(src, (size_t)len, parent->id);
    snprintf(cname, sizeof(cname), "%.40s.g%04llx", parent->name, (unsigned long long)(h & 0xffff));
    cc_comm_config_t cfg = inherit(parent, a->config);
    return cc__comm_create(parent->world, id, parent->id, cfg.name ? cfg.name : cname, a->myrank,
                           a->nranks, wr, &cfg, parent, a->child);
}

cc_status_t cc_comm_create_group(cc_comm_t *parent, const int *ranks, int nranks,
                                 const cc_comm_config_t *config, cc_comm_t **child)
{
    CC_CHECK(check_parent(parent, child, "cc_comm_create_group"));
    CC_CHECK(cc__comm_config_check(config, "cc_comm_create_group"));
    if (!ranks || nranks < 1 || nranks > parent->size) {
        cc_log_error(CC_SUBSYS_CORE, "cc_comm_create_group: ranks %p, nranks %d: need a list of 1 "
                     "to %d ranks", (const void *)ranks, nranks, parent->size);
        return CC_ERR_INVALID_ARG;
    }
    int myrank = -1;
    for (int i = 0; i < nranks; i++) {
        if (ranks[i] < 0 || ranks[i] >= parent->size) {
            cc_log_error(CC_SUBSYS_CORE, "cc_comm_create_group: ranks[%d] = %d is out of range "
                         "0..%d", i, ranks[i], parent->size - 1);
            return CC_ERR_INVALID_ARG;
        }
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i]) {
                cc_log_error(CC_SUBSYS_CORE, "cc_comm_create_group: rank %d is listed twice "
                             "(ranks[%d] and ranks[%d])", ranks[i], j, i);
                return CC_ERR_INVALID_ARG;
            }
        if (ranks[i] == parent->rank) myrank = i;
    }
    if (myrank < 0) {
        cc_log_error(CC_SUBSYS_CORE, "cc_comm_create_group: the caller (rank %d of %s) is not in "
                     "the list; only listed ranks call it", parent->rank, parent->name);
        return CC_ERR_INVALID_ARG;
    }
    *child = NULL;
    struct group_args a = {ranks, nranks, myrank, config, child};
    return cc__door_lifecycle(parent, CC_OP_COMM_SPLIT, 0, do_group, &a);
}
