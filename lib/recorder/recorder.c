/*
 * recorder.c - the flight recorder: the door's direct calls and its abort hook.
 *
 * cc__recorder_open creates this process's ring file. The op door calls
 * cc__recorder_pre, _start and _post itself at each transition, before the
 * hook chains (the recorder is the one built-in the door knows: a chain walk
 * per transition cost more than the whole record, docs/performance.md), and
 * keeps the record id in the op. Aborts reach the recorder through the abort
 * chain, as a plain hook. The calls turn an op's passage into entry
 * transitions (ring.c) and keep the comm table's pg_status counters
 * (comms.c). The op path takes no lock, makes no syscall and allocates
 * nothing: the thread id is cached per thread, the comm's table slot comes
 * from a lock-free map, times come from the op.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ccomm/comm.h"
#include "base/clock.h"
#include "recorder/comms.h"
#include "base/config.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "hooks/chain.h"
#include "recorder/modules.h"
#include "recorder/opclass.h"
#include "recorder/paths.h"
#include "recorder/recorder.h"
#include "recorder/ring.h"
#include "base/tls.h"

#define DEFAULT_FRAMES 16 /* frames per entry with CCOMM_RECORDER_STACK=1 */

cc__fr_ring_t *cc__fr_open_ring; /* NULL = off; read with acquire on the op path */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* open, close */
/* The abort hook's handle (the ops come through the door's direct calls). */
static cc_hook_handle_t g_sub;
static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;
static __thread uint32_t t_tid CC__TLS_HOT; /* this thread's kernel id, 0 = not asked yet */
static __thread cc__fr_comm_memo_t t_comm CC__TLS_HOT; /* this thread's last op's comm slot */

static inline cc__fr_ring_t *ring(void)
{
    return __atomic_load_n(&cc__fr_open_ring, __ATOMIC_ACQUIRE);
}

static inline uint32_t my_tid(void)
{
    uint32_t t = t_tid;
    if (__builtin_expect(!t, 0)) t = t_tid = (uint32_t)syscall(SYS_gettid);
    return t;
}

/* Only collectives move pg_status: PyTorch counts collectives there. */
static inline int is_coll(cc_op_type_t t)
{
    return cc__fr_op_class((unsigned)t) == CC__FR_CLASS_COLL;
}

int cc__recorder_add_comm(uint64_t comm_id, uint64_t parent_id, const char *name, int rank,
                          int size, const int32_t *world_ranks)
{
    cc__fr_ring_t *r = ring();
    if (!r) return -1;
    cc__fr_comm_desc_t d = {comm_id, parent_id, name, size, rank, CC_DEVICE_CPU, world_ranks};
    return cc__fr_comm_add(r, &d);
}

/* Slow path: the first op of a comm, or its COMM_INIT. Asks the core for the
 * members' world ranks. */
static int add_comm_of(cc__fr_ring_t *r, const cc_op_info_t *info)
{
    /* A full table must not send every later op of an unrecorded comm
     * through the mutex and the getters: give up at once. */
    if (__atomic_load_n(&r->hdr->comm_count, __ATOMIC_RELAXED) >= r->hdr->comm_capacity &&
        cc__fr_comm_find(info->comm_id) < 0)
        return -1;
    int32_t small[256]; /* most comms: no allocation */
    int32_t *wr = small;
    int n = info->size > 0 ? info->size : 0;
    if (n > 256 && !(wr = malloc(sizeof(int32_t) * (size_t)n))) return -1;
    for (int i = 0; i < n; i++)
        wr[i] = info->comm ? cc_comm_world_rank(info->comm, i) : -1;
    cc__fr_comm_desc_t d = {info->comm_id, info->parent_comm_id, info->comm_name, info->size,
                            info->rank,    info->device,         n ? wr : NULL};
    int slot = cc__fr_comm_add(r, &d);
    if (wr != small) free(wr);
    /* A new comm may come with a new plugin: refresh the module table. */
    if (info->type == CC_OP_COMM_INIT) cc__fr_modules_scan(r);
    return slot;
}

/* PRE, or PRE and START at once (`fused`): one logic, folded per entry point. */
static inline __attribute__((always_inline)) void recorder_pre(const cc_op_info_t *info,
                                                               uint64_t *rec, int fused)
{
    cc__fr_ring_t *r = ring();
    if (!r) return;
    int slot = cc__fr_comm_find_memo(&t_comm, info->comm_id);
    /* COMM_INIT re-registers: a comm id may come back after its destroy. */
    if (__builtin_expect(slot < 0 || info->type == CC_OP_COMM_INIT, 0)) slot = add_comm_of(r, info);
    /* The door stamps its ops; the clock is read only for direct callers. */
    uint64_t t = info->t_enqueue_ns ? info->t_enqueue_ns : cc__now_ns();
    uint64_t frames[CC__FR_MAX_FRAMES];
    unsigned nframes = r->stack_depth ? cc__fr_stack_capture(frames, r->stack_depth) : 0;
    if (!fused) {
        *rec = cc__fr_ring_pre_op(r, info, slot, my_tid(), t, frames, nframes);
    } else {
        uint64_t t0 = info->t_start_ns ? info->t_start_ns : t;
        *rec = cc__fr_ring_pre_start_op(r, info, slot, my_tid(), t, t0, frames, nframes);
    }
    if (is_coll(info->type) && info->coll_seq) {
        cc__fr_comm_seq2_own(r, slot, fused && *rec, info->coll_seq);
    }
}

void cc__recorder_do_pre(const cc_op_info_t *info, uint64_t *rec)
{
    recorder_pre(info, rec, 0);
}

void cc__recorder_do_pre_start(const cc_op_info_t *info, uint64_t *rec)
{
    recorder_pre(info, rec, 1);
}

void cc__recorder_do_start(const cc_op_info_t *info, uint64_t rid)
{
    cc__fr_ring_t *r = ring();
    if (!rid || !r) return;
    int slot = cc__fr_ring_start(r, rid, info->t_start_ns ? info->t_start_ns : cc__now_ns(),
                                 my_tid(), info->algorithm, info->transport);
    if (slot >= 0 && is_coll(info->type) && info->coll_seq)
        cc__fr_comm_seq(r, slot, CC__FR_SEQ_STARTED, info->coll_seq);
}

/* POST; `own`: the op's comm has no op on another thread (cc__recorder_post_own). One
 * function for both, so that the ring's end update has one caller and is inlined in it. */
void cc__recorder_do_post(const cc_op_info_t *info, uint64_t rid, int own)
{
    cc__fr_ring_t *r = ring();
    if (!rid || !r) return;
    /* t_start again: an op that never reported START still gets its time. */
    int slot = cc__fr_ring_end(r, rid, info->status, info->t_start_ns,
                               info->t_end_ns ? info->t_end_ns : cc__now_ns(), my_tid(),
                               info->algorithm, info->transport);
    if (slot >= 0 && info->status == CC_OK && is_coll(info->type) && info->coll_seq) {
        if (own)
            cc__fr_comm_seq_own(r, slot, CC__FR_SEQ_COMPLETED, info->coll_seq);
        else
            cc__fr_comm_seq(r, slot, CC__FR_SEQ_COMPLETED, info->coll_seq);
    }
    /* Lifecycle ends (rare): the comm's members may be known only now. */
    if (info->type == CC_OP_COMM_INIT && info->status == CC_OK) add_comm_of(r, info);
    if (info->type == CC_OP_COMM_DESTROY)
        cc__fr_comm_mark(r, cc__fr_comm_find(info->comm_id), CC__FR_CF_DESTROYED, 0);
}

void cc__recorder_gpu(uint64_t rec_id, uint64_t t_start_ns, uint64_t t_end_ns,
                      const char *detail)
{
    cc__fr_ring_t *r = ring();
    if (rec_id && r) cc__fr_ring_gpu(r, rec_id, t_start_ns, t_end_ns, detail);
}

static void (*_Atomic g_gpu_flush)(void);

void cc__recorder_set_gpu_flush(void (*fn)(void))
{
    atomic_store(&g_gpu_flush, fn);
}

void cc__recorder_flush_gpu(void)
{
    void (*fn)(void) = atomic_load(&g_gpu_flush);
    if (fn) fn();
}

void cc__recorder_on_abort(const cc_abort_info_t *info, void *user)
{
    cc__fr_ring_t *r = ring();
    if (!r || !info) return;
    /* Only atomics and bounded spins below: this may run in the fatal-signal
     * handler, over a slot the interrupted thread holds. The comm first, so
     * a process that dies now still says which comm was aborted and why. */
    cc__fr_comm_mark(r, cc__fr_comm_find(info->comm_id), CC__FR_CF_ABORTED, info->reason);
    cc__fr_ring_mark_abort(r, info->comm_id);
    (void)user;
}

void cc__recorder_mark_signal(int signo)
{
    cc__fr_ring_t *r = ring();
    if (!r) return;
    /* Time first, signal last (release): a reader that sees the signal sees
     * its time. clock_gettime is async-signal-safe. */
    __atomic_store_n(&r->hdr->fatal_signal_ns, cc__now_ns(), __ATOMIC_RELAXED);
    __atomic_store_n(&r->hdr->fatal_signal, (uint64_t)(unsigned)signo, __ATOMIC_RELEASE);
}

const char *cc__recorder_path(void)
{
    cc__fr_ring_t *r = ring();
    return r ? r->path : NULL;
}

/* The ring of the parent is not the child's: drop it (the child may open its own). */
static void after_fork_child(void)
{
    /* The child's only thread has its own id; the mapping is shared with the
     * parent, so writing to it would put the child's ops in the parent's
     * record. Locks a parent thread held are re-made. */
    t_tid = 0;
    pthread_mutex_init(&g_lock, NULL);
    cc__fr_ring_t *r = __atomic_exchange_n(&cc__fr_open_ring, NULL, __ATOMIC_ACQ_REL);
    cc__fr_ring_detach(r);
    cc__fr_comm_after_fork();
    cc__fr_modules_after_fork();
}

/*
 * A normal exit with nothing recorded to diagnose: the ring is removed, or
 * RAM-backed /dev/shm fills up job after job (CCOMM_RECORDER_KEEP=1 keeps
 * it; ccrun sets that and decides for the whole job). A dump being written
 * right now holds the lock: then the ring stays, as it will record a dump.
 * The mapping stays (other threads may still write to it); the job's
 * directory goes too once the last ring in it is gone.
 */
static void remove_if_clean(cc__fr_ring_t *r)
{
    if (cc__cfg()->recorder_keep || pthread_mutex_trylock(&g_lock) != 0) return;
    uint64_t n = __atomic_load_n(&r->hdr->comm_count, __ATOMIC_ACQUIRE);
    if (n > r->hdr->comm_capacity) n = r->hdr->comm_capacity;
    char why[160];
    if (cc__fr_failure_recorded(r->hdr, r->comms, n, why, sizeof(why))) {
        cc_log_info(CC_SUBSYS_RECORDER, "recorder: keeping ring %s (%s)", r->path, why);
    } else if (unlink(r->path) == 0) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", r->path);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) *slash = '\0', rmdir(dir);
    }
    pthread_mutex_unlock(&g_lock);
}

/* A normal exit is not a crash: say so in the ring. */
static void at_exit(void)
{
    cc__fr_ring_t *r = ring();
    if (!r) return;
    __atomic_store_n(&r->hdr->closed_ns, cc__now_ns(), __ATOMIC_RELEASE);
    remove_if_clean(r);
}

static void register_process_handlers(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
    atexit(at_exit);
}

cc__fr_ring_t *cc__recorder_ring_hold(void)
{
    pthread_mutex_lock(&g_lock);
    cc__fr_ring_t *r = ring();
    if (!r) pthread_mutex_unlock(&g_lock);
    return r;
}

void cc__recorder_ring_release(void)
{
    pthread_mutex_unlock(&g_lock);
}

/* The handle is kept to remove exactly our hook (a user's hooks stay). */
static void unsubscribe(void)
{
    cc_hook_handle_t h = __atomic_exchange_n(&g_sub, 0, __ATOMIC_ACQ_REL);
    if (h) cc_hook_remove(h);
}

/* The abort hook for all comms, once per process (signal-safe: it runs in the fatal-signal
 * handler too). */
static cc_status_t subscribe(void)
{
    if (__atomic_load_n(&g_sub, __ATOMIC_RELAXED)) return CC_OK;
    cc_hook_handle_t h = 0;
    cc_status_t st = cc_hook_add_abort(NULL, cc__recorder_on_abort, NULL, CC_HOOK_SIGNAL_SAFE, &h);
    if (st != CC_OK) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot add its abort hook: %s",
                     cc_status_str(st));
        return st;
    }
    __atomic_store_n(&g_sub, h, __ATOMIC_RELEASE);
    return CC_OK;
}

/* <recorder_dir>/<job>/rank<r>.<pid>.ccfr, with the directories made. Both
 * directories must be this user's alone: whoever controls either can read
 * the ring, or swap in a file of theirs and truncate it under our mapping. */
static cc_status_t make_path(int rank, const char *job, char *path, size_t cap)
{
    char base[PATH_MAX], dir[PATH_MAX];
    int n = -1;
    if (cc__fr_base_dir(base, sizeof(base)) == 0)
        n = snprintf(dir, sizeof(dir), "%s/%s", base, job);
    if (n < 0 || (size_t)n >= sizeof(dir)) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: CCOMM_RECORDER_DIR \"%.64s...\" is too long",
                     cc__cfg()->recorder_dir);
        return CC_ERR_INVALID_ARG;
    }
    CC_CHECK(cc__mkdirs_private(base, CC_SUBSYS_RECORDER, "recorder: CCOMM_RECORDER_DIR"));
    CC_CHECK(cc__mkdirs_private(dir, CC_SUBSYS_RECORDER, "recorder: CCOMM_RECORDER_DIR"));
    n = snprintf(path, cap, "%s/rank%d.%d.ccfr", dir, rank, (int)getpid());
    if (n < 0 || (size_t)n >= cap) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: ring path under %s is too long", dir);
        return CC_ERR_INVALID_ARG;
    }
    return CC_OK;
}

static cc_status_t create_locked(int rank, int world_size, const char *job_id)
{
    const struct cc__config *cfg = cc__cfg();
    char job[128], host[64] = "?", path[PATH_MAX];
    cc__fr_job_component(job_id && *job_id ? job_id : cfg->job_id, job, sizeof(job));
    CC_CHECK(make_path(rank, job, path, sizeof(path)));
    if (gethostname(host, sizeof(host) - 1) != 0) strcpy(host, "?");
    cc__fr_ring_params_t p = {.capacity = (uint32_t)cfg->recorder_entries,
                              .stack_depth = cfg->recorder_stack ? DEFAULT_FRAMES : 0,
                              .rank = rank,
                              .world_size = world_size,
                              .host = host,
                              .job_id = job};
    cc__fr_ring_t *r;
    CC_CHECK(cc__fr_ring_create(path, &p, &r));
    cc__fr_modules_scan(r);
    if (p.stack_depth) cc__fr_stack_prepare();
    __atomic_store_n(&cc__fr_open_ring, r, __ATOMIC_RELEASE);
    cc_log_info(CC_SUBSYS_RECORDER, "recorder: ring %s, %u entries of %u bytes", path, r->capacity,
                r->entry_size);
    return CC_OK;
}

cc_status_t cc__recorder_open(int world_rank, int world_size, const char *job_id)
{
    int64_t n = cc__cfg()->recorder_entries;
    if (n == 0) {
        cc_log_info(CC_SUBSYS_RECORDER, "recorder: off (CCOMM_RECORDER_ENTRIES=0)");
        return CC_OK;
    }
    if (n < 0 || n > CC__FR_MAX_CAPACITY) {
        cc_log_error(CC_SUBSYS_RECORDER,
                     "recorder: CCOMM_RECORDER_ENTRIES=%lld is out of range "
                     "(0 .. %u)",
                     (long long)n, CC__FR_MAX_CAPACITY);
        return CC_ERR_INVALID_ARG;
    }
    if (world_rank < 0 || world_size < 1 || world_rank >= world_size) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: bad rank %d of world size %d", world_rank,
                     world_size);
        return CC_ERR_INVALID_ARG;
    }
    pthread_once(&g_fork_once, register_process_handlers);
    pthread_mutex_lock(&g_lock);
    cc_status_t st = CC_OK;
    if (ring()) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: already open (%s)", ring()->path);
        st = CC_ERR_INVALID_USAGE;
    } else {
        st = create_locked(world_rank, world_size, job_id);
        if (st == CC_OK) st = subscribe();
        if (st != CC_OK)
            cc__fr_ring_destroy(__atomic_exchange_n(&cc__fr_open_ring, NULL, __ATOMIC_ACQ_REL));
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

void cc__recorder_close(void)
{
    pthread_mutex_lock(&g_lock);
    /* When cc_hook_remove returns the abort hook is not running; the door's calls must not
     * run either (the caller's contract, recorder.h). */
    unsubscribe();
    cc__fr_ring_t *r = __atomic_exchange_n(&cc__fr_open_ring, NULL, __ATOMIC_ACQ_REL);
    cc__fr_comm_reset();
    cc__fr_ring_destroy(r);
    pthread_mutex_unlock(&g_lock);
}
