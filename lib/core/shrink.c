/*
 * shrink.c - cc_comm_shrink: a communicator of the parent's survivors.
 *
 * With an explicit list the survivors are known; they check through the
 * store that they were given the same list. With none ("the ranks that are
 * lost") they agree on who is lost, in shrink round k of the parent (the
 * k-th shrink each survivor makes of it), in the parent's store view:
 *
 *  1. each survivor posts "shrink<k>/in/<parent rank>";
 *  2. it looks at every rank it has not placed yet: posted ("in" key), or
 *     gone (the will "<world prefix>lost/<world rank>" that the store wrote
 *     when that rank's connection closed, world.c), and again every 10 ms;
 *  3. once every rank is placed, or the deadline passed (the config's
 *     timeout, else the parent's: a rank alive but not coming, such as one
 *     stopped with SIGSTOP, is counted lost then), it proposes "every rank
 *     that has not posted is lost" with a compare-and-set on
 *     "shrink<k>/result": the first proposal wins, and every survivor takes
 *     the value it finds there, so all get the same child even if they
 *     learned of the failures at different times or saw different posts;
 *  4. a rank that finds itself in the result came too late and gets
 *     CC_ERR_PEER_LOST; nobody waits for it, as it is not in the child.
 *
 * A posted rank is alive when it posts (its connection is open): a rank
 * dies between its post and the child's setup is a new failure, which the
 * setup reports (a timeout) and a next shrink handles. Dead ranks are never
 * waited for: their wills are set when their sockets close. Results are
 * read from the store, so their size is checked before use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "core/comm.h"
#include "core/door.h"
#include "base/log.h"

#define POLL_US 10000

struct shrink_args {
    const int *exclude;
    int nexclude;
    const cc_comm_config_t *config;
    cc_comm_t **child;
};

/* Placement of a rank in the agreement. */
enum { UNKNOWN = 0, POSTED, GONE };

static cc_status_t check_args(const cc_comm_t *c, const int *ex, int n, const void *child)
{
    static const char *fn = "cc_comm_shrink";
    if (!cc__comm_valid(c)) {
        cc_log_error(CC_SUBSYS_CORE, "%s: comm %p is not a valid communicator", fn,
                     (const void *)c);
        return CC_ERR_INVALID_ARG;
    }
    if (!child) {
        cc_log_error(CC_SUBSYS_CORE, "%s: child (the output) is NULL", fn);
        return CC_ERR_INVALID_ARG;
    }
    if (n < 0 || (!ex && n > 0) || n >= c->size) {
        if (n < 0)
            cc_log_error(CC_SUBSYS_CORE,
                         "%s: nexclude %d is negative (0: the lost ranks, "
                         "agreed)",
                         fn, n);
        else if (!ex)
            cc_log_error(CC_SUBSYS_CORE, "%s: exclude is NULL but nexclude is %d", fn, n);
        else
            cc_log_error(CC_SUBSYS_CORE,
                         "%s: nexclude %d would leave no rank of %s (%d ranks): "
                         "at most %d may be excluded",
                         fn, n, c->name, c->size, c->size - 1);
        return CC_ERR_INVALID_ARG;
    }
    for (int i = 0; i < n; i++) {
        if (ex[i] < 0 || ex[i] >= c->size) {
            cc_log_error(CC_SUBSYS_CORE, "%s: exclude[%d] = %d is out of range 0..%d of %s", fn, i,
                         ex[i], c->size - 1, c->name);
            return CC_ERR_INVALID_ARG;
        }
        if (ex[i] == c->rank) {
            cc_log_error(CC_SUBSYS_CORE,
                         "%s: exclude[%d] = %d is the caller itself (rank %d of "
                         "%s); excluded ranks do not call",
                         fn, i, ex[i], c->rank, c->name);
            return CC_ERR_INVALID_ARG;
        }
        for (int j = 0; j < i; j++)
            if (ex[j] == ex[i]) {
                cc_log_error(CC_SUBSYS_CORE,
                             "%s: rank %d is listed twice (exclude[%d] and "
                             "exclude[%d])",
                             fn, ex[i], j, i);
                return CC_ERR_INVALID_ARG;
            }
    }
    return CC_OK;
}

/* Is rank r gone? Its will is on the world's store (a world rank < 0: not known, never). */
static cc_status_t gone(const cc_comm_t *c, int r, int *yes)
{
    *yes = 0;
    if (c->world_ranks[r] < 0) return CC_OK;
    char key[64];
    cc__world_lost_key(c->world, c->world_ranks[r], key, sizeof(key));
    return cc__store_check(c->world->store, key, yes);
}

/* Place the ranks not placed yet; *left = how many are still unknown. */
static cc_status_t look(const cc_comm_t *c, uint64_t k, unsigned char *state, int *left)
{
    *left = 0;
    for (int r = 0; r < c->size; r++) {
        if (state[r] != UNKNOWN) continue;
        char key[64];
        int yes = 0;
        snprintf(key, sizeof(key), "shrink%llu/in/%d", (unsigned long long)k, r);
        CC_CHECK(cc__store_check(c->store, key, &yes));
        if (yes) {
            state[r] = POSTED;
            continue;
        }
        CC_CHECK(gone(c, r, &yes));
        state[r] = yes ? GONE : UNKNOWN;
        *left += state[r] == UNKNOWN;
    }
    return CC_OK;
}

/* The round's result as 'L' (lost) or '.' per parent rank; NOT_FOUND while undecided. */
static cc_status_t read_result(const cc_comm_t *c, const char *key, unsigned char *lost)
{
    void *v = NULL;
    size_t len = 0;
    cc_status_t st = cc__store_get(c->store, key, &v, &len, 0);
    if (st != CC_OK) return st;
    if (len != (size_t)c->size) {
        cc_log_error(CC_SUBSYS_CORE,
                     "cc_comm_shrink: %s: result \"%s\" has %zu bytes, expected "
                     "%d (one per rank)",
                     c->name, key, len, c->size);
        free(v);
        return CC_ERR_MISMATCH;
    }
    for (int r = 0; r < c->size; r++)
        lost[r] = ((char *)v)[r] == 'L';
    free(v);
    return CC_OK;
}

/* Propose "who has not posted is lost"; the first proposal of the round is the result. The
 * winner says whom it counted lost, and why. */
static cc_status_t propose(const cc_comm_t *c, const char *key, const unsigned char *state,
                           int64_t timeout_ms, unsigned char *lost)
{
    char *mine = malloc((size_t)(unsigned)c->size), why[256];
    if (!mine) return CC_ERR_NO_MEMORY;
    size_t n = 0;
    why[0] = '\0';
    for (int r = 0; r < c->size; r++) {
        mine[r] = state[r] == POSTED ? '.' : 'L';
        if (state[r] != POSTED && n < sizeof(why) - 40)
            n += (size_t)snprintf(why + n, sizeof(why) - n, "%s%d (%s)", n ? ", " : "", r,
                                  state[r] == GONE ? "gone" : "did not come in time");
    }
    int swapped = 0;
    cc_status_t st =
        cc__store_cas(c->store, key, NULL, 0, mine, (size_t)c->size, NULL, NULL, &swapped);
    if (st == CC_OK && swapped)
        cc_log_warn(CC_SUBSYS_CORE, "cc_comm_shrink: %s: ranks counted lost: %s (deadline %lld ms)",
                    c->name, n ? why : "none", (long long)timeout_ms);
    free(mine);
    return st == CC_OK ? read_result(c, key, lost) : st;
}

/* Agree with the other survivors on the lost ranks of round k (the protocol above). */
static cc_status_t agree(cc_comm_t *c, uint64_t k, int64_t timeout_ms, unsigned char *lost)
{
    char in[64], result[64];
    snprintf(in, sizeof(in), "shrink%llu/in/%d", (unsigned long long)k, c->rank);
    snprintf(result, sizeof(result), "shrink%llu/result", (unsigned long long)k);
    CC_CHECK(cc__store_set(c->store, in, "1", 1));
    unsigned char *state = calloc((size_t)(unsigned)c->size, 1);
    if (!state) return CC_ERR_NO_MEMORY;
    uint64_t deadline = cc__deadline_after_ms(timeout_ms);
    cc_status_t st;
    for (;;) {
        st = read_result(c, result, lost);
        if (st != CC_ERR_NOT_FOUND) break;
        int left = 0;
        if ((st = look(c, k, state, &left)) != CC_OK) break;
        if (left == 0 || cc__now_ns() >= deadline) {
            st = propose(c, result, state, timeout_ms, lost);
            break;
        }
        usleep(POLL_US);
    }
    free(state);
    return st;
}

/* Explicit list: every survivor posts its list and checks the others' against it. */
static cc_status_t check_lists(cc_comm_t *c, uint64_t k, int64_t timeout_ms,
                               const unsigned char *lost)
{
    char key[64];
    snprintf(key, sizeof(key), "shrink%llu/x/%d", (unsigned long long)k, c->rank);
    CC_CHECK(cc__store_set(c->store, key, lost, (size_t)c->size));
    uint64_t deadline = cc__deadline_after_ms(timeout_ms);
    cc_status_t st = CC_OK;
    for (int r = 0; st == CC_OK && r < c->size; r++) {
        if (lost[r] || r == c->rank) continue;
        void *v = NULL;
        size_t len = 0;
        uint64_t now = cc__now_ns();
        snprintf(key, sizeof(key), "shrink%llu/x/%d", (unsigned long long)k, r);
        st = cc__store_get(c->store, key, &v, &len,
                           now < deadline ? (int64_t)((deadline - now) / 1000000) : 0);
        if (st == CC_ERR_NOT_FOUND) st = CC_ERR_TIMEOUT;
        if (st == CC_OK && (len != (size_t)c->size || memcmp(v, lost, len))) {
            cc_log_error(CC_SUBSYS_CORE,
                         "cc_comm_shrink: %s: rank %d excludes other ranks than "
                         "rank %d (this one) does; every survivor passes the same list",
                         c->name, r, c->rank);
            st = CC_ERR_MISMATCH;
        }
        free(v);
    }
    return st;
}

/* The child of round k: the ranks not lost, in parent order. */
static cc_status_t make_child(cc_comm_t *p, uint64_t k, const unsigned char *lost,
                              const struct shrink_args *a)
{
    int *wr = malloc((size_t)p->size * sizeof(int)), n = 0, me = -1;
    if (!wr) return CC_ERR_NO_MEMORY;
    char src[32];
    int len = snprintf(src, sizeof(src), "shrink/%llu/", (unsigned long long)k);
    uint64_t id = cc__hash64(lost, (size_t)p->size, cc__hash64(src, (size_t)len, p->id));
    for (int r = 0; r < p->size; r++) {
        if (lost[r]) continue;
        if (r == p->rank) me = n;
        wr[n++] = p->world_ranks[r];
    }
    char name[64];
    snprintf(name, sizeof(name), "%.40s.shrink%llu", p->name, (unsigned long long)k);
    cc_comm_config_t cfg = CC_COMM_CONFIG_INIT;
    if (a->config)
        cfg = *a->config;
    else {
        cfg.timeout_ms = p->timeout_ms;
        cfg.device = p->device;
        cfg.transport = p->transport_req;
    }
    cc_log_info(CC_SUBSYS_CORE, "cc_comm_shrink: %s round %llu: %d of %d ranks go on as %s",
                p->name, (unsigned long long)k, n, p->size, cfg.name ? cfg.name : name);
    return cc__comm_create(p->world, id, p->id, cfg.name ? cfg.name : name, me, n, wr, &cfg, p,
                           a->child);
}

static cc_status_t do_shrink(cc_comm_t *p, void *arg)
{
    struct shrink_args *a = arg;
    uint64_t k = ++p->shrinks;
    int64_t timeout_ms =
        a->config && a->config->timeout_ms > 0 ? a->config->timeout_ms : p->timeout_ms;
    unsigned char *lost = calloc((size_t)(unsigned)p->size, 1);
    if (!lost) return CC_ERR_NO_MEMORY;
    for (int i = 0; i < a->nexclude; i++)
        lost[a->exclude[i]] = 1;
    cc_status_t st =
        a->nexclude ? check_lists(p, k, timeout_ms, lost) : agree(p, k, timeout_ms, lost);
    if (st == CC_OK && lost[p->rank]) {
        cc_log_error(CC_SUBSYS_CORE,
                     "cc_comm_shrink: %s: rank %d came to shrink round %llu after "
                     "the survivors had agreed, and was counted lost",
                     p->name, p->rank, (unsigned long long)k);
        st = CC_ERR_PEER_LOST;
    }
    if (st == CC_OK) st = make_child(p, k, lost, a);
    free(lost);
    return st;
}

cc_status_t cc_comm_shrink(cc_comm_t *comm, const int *exclude, int nexclude,
                           const cc_comm_config_t *config, cc_comm_t **child)
{
    CC_CHECK(check_args(comm, exclude, nexclude, child));
    CC_CHECK(cc__comm_config_check(config, "cc_comm_shrink"));
    *child = NULL;
    struct shrink_args a = {exclude, nexclude, config, child};
    /* No check of the parent's error: a broken parent is what shrink is for. */
    return cc__door_lifecycle(comm, CC_OP_COMM_SPLIT, 0, do_shrink, &a);
}
