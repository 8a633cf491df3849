/*
 * test_ring.c - the ring's transitions: states, wrap-around, late updates
 * after reuse, abort marking, pg_status, the fatal-signal mark, and the
 * recorder turned off.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rec_util.h"
#include "recorder/comms.h"

static const int32_t world2[2] = {0, 1};

static const cc__fr_entry_t *find_op(const cc__fr_snapshot_t *s, uint64_t op_id)
{
    for (uint32_t i = 0; i < s->nentries; i++)
        if (cc__fr_snap_entry(s, i)->op_id == op_id) return cc__fr_snap_entry(s, i);
    return NULL;
}

static void test_states(void **state)
{
    (void)state;
    assert_int_equal(rec_open(64, 0), CC_OK);
    assert_non_null(cc__recorder_path());
    assert_int_equal(cc__recorder_add_comm(7, 0, "world", 0, 2, world2), 0);
    cc__op_t a, b, c, d, e, f;
    rec_op(&a, CC_OP_ALLREDUCE, 7, 1, 1);
    rec_run(&a, CC_OK);
    rec_op(&b, CC_OP_ALLREDUCE, 7, 2, 2);
    rec_run(&b, CC_ERR_TIMEOUT);
    rec_op(&c, CC_OP_ALLREDUCE, 7, 3, 3);
    rec_run(&c, CC_ERR_ABORTED);
    rec_op(&d, CC_OP_SEND, 7, 4, 1);
    rec_run(&d, CC_ERR_PEER_LOST);
    rec_op(&e, CC_OP_BROADCAST, 7, 5, 4);
    cc__recorder_pre(&e.info, &REC_ID(&e));
    assert_int_not_equal(REC_ID(&e), 0);
    rec_op(&f, CC_OP_BARRIER, 7, 6, 5);
    cc__recorder_pre(&f.info, &REC_ID(&f));
    cc__recorder_start(&f.info, REC_ID(&f));

    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->nentries, 6);
    assert_int_equal(s->ntorn + s->ncorrupt, 0);
    assert_int_equal(find_op(s, 1)->state, CC__FR_COMPLETED);
    assert_int_equal(find_op(s, 2)->state, CC__FR_TIMED_OUT);
    assert_int_equal(find_op(s, 3)->state, CC__FR_ABORTED);
    assert_int_equal(find_op(s, 4)->state, CC__FR_FAILED);
    assert_int_equal(find_op(s, 4)->status, CC_ERR_PEER_LOST);
    assert_int_equal(find_op(s, 5)->state, CC__FR_SCHEDULED);
    assert_int_equal(find_op(s, 6)->state, CC__FR_STARTED);
    const cc__fr_entry_t *x = find_op(s, 1);
    assert_string_equal(x->algorithm, "ring");
    assert_string_equal(x->transport, "shm");
    assert_string_equal(x->engine, "native");
    assert_int_equal(x->in_count, 1024);
    assert_int_equal(x->tid, (uint32_t)gettid());
    assert_true(x->t_enqueue_ns > 0 && x->t_start_ns >= x->t_enqueue_ns);
    assert_true(x->t_end_ns >= x->t_start_ns);
    assert_int_equal(x->comm_slot, 0);
    /* pg_status: enqueued up to 5, started up to 5 (barrier), completed only 1. */
    assert_int_equal(s->ncomms, 1);
    assert_int_equal(s->comms[0].last_enqueued, 5);
    assert_int_equal(s->comms[0].last_started, 5);
    assert_int_equal(s->comms[0].last_completed, 1);
    const int32_t *wr = cc__fr_snap_comm_ranks(s, &s->comms[0]);
    assert_non_null(wr);
    assert_int_equal(wr[1], 1);
    cc__fr_snapshot_free(s);
}

static void test_wrap_around(void **state)
{
    (void)state;
    assert_int_equal(rec_open(8, 0), CC_OK);
    cc__op_t op;
    for (uint64_t i = 1; i <= 20; i++) {
        rec_op(&op, CC_OP_ALLREDUCE, 7, i, i);
        rec_run(&op, CC_OK);
        assert_int_equal(REC_ID(&op), i);
    }
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->nentries, 8);
    assert_int_equal(s->hdr.next_record_id, 20);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(cc__fr_snap_entry(s, i)->record_id, 13 + i);
        assert_int_equal(cc__fr_snap_entry(s, i)->op_id, 13 + i);
    }
    cc__fr_snapshot_free(s);
}

/* A capacity that is not a power of two takes the modulo path. */
static void test_odd_capacity(void **state)
{
    (void)state;
    assert_int_equal(rec_open(5, 0), CC_OK);
    cc__op_t op;
    for (uint64_t i = 1; i <= 12; i++) {
        rec_op(&op, CC_OP_ALLREDUCE, 7, i, i);
        rec_run(&op, CC_OK);
    }
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->nentries, 5);
    assert_int_equal(s->ncorrupt, 0);
    assert_int_equal(cc__fr_snap_entry(s, 0)->record_id, 8);
    assert_int_equal(cc__fr_snap_entry(s, 4)->record_id, 12);
    cc__fr_snapshot_free(s);
}

static void test_late_update_dropped(void **state)
{
    (void)state;
    assert_int_equal(rec_open(4, 0), CC_OK);
    cc__op_t late, op;
    rec_op(&late, CC_OP_ALLREDUCE, 7, 100, 1);
    cc__recorder_pre(&late.info, &REC_ID(&late));
    assert_int_equal(REC_ID(&late), 1);
    /* Four more PREs: record 5 takes slot 0, the late op's slot. */
    for (uint64_t i = 2; i <= 5; i++) {
        rec_op(&op, CC_OP_ALLREDUCE, 7, 100 + i, i);
        cc__recorder_pre(&op.info, &REC_ID(&op));
    }
    late.info.algorithm = "late";
    cc__recorder_start(&late.info, REC_ID(&late));
    late.info.status = CC_ERR_TIMEOUT;
    cc__recorder_post(&late.info, REC_ID(&late));
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->hdr.dropped, 2);
    assert_null(find_op(s, 100));
    const cc__fr_entry_t *e = find_op(s, 105);
    assert_non_null(e);
    assert_int_equal(e->record_id, 5);
    assert_int_equal(e->state, CC__FR_SCHEDULED);
    assert_int_equal(e->status, CC_INPROGRESS);
    assert_int_equal(e->t_start_ns, 0);
    assert_string_equal(e->algorithm, "");
    cc__fr_snapshot_free(s);
}

static void test_abort_marks_unfinished(void **state)
{
    (void)state;
    assert_int_equal(rec_open(64, 0), CC_OK);
    cc__recorder_add_comm(7, 0, "world", 0, 2, world2);
    cc__recorder_add_comm(8, 7, "world.1", 0, 2, world2);
    cc__op_t done, sched, started, other;
    rec_op(&done, CC_OP_ALLREDUCE, 7, 1, 1);
    rec_run(&done, CC_OK);
    rec_op(&sched, CC_OP_ALLREDUCE, 7, 2, 2);
    cc__recorder_pre(&sched.info, &REC_ID(&sched));
    rec_op(&started, CC_OP_SEND, 7, 3, 1);
    cc__recorder_pre(&started.info, &REC_ID(&started));
    cc__recorder_start(&started.info, REC_ID(&started));
    rec_op(&other, CC_OP_ALLREDUCE, 8, 4, 1);
    cc__recorder_pre(&other.info, &REC_ID(&other));
    cc_abort_info_t ab = {NULL, 7, "world", 0, 2, CC_ERR_TIMEOUT, "op 2 timed out", NULL, 0};
    cc__recorder_on_abort(&ab, NULL);
    /* The core then fails the pending ops. */
    started.info.status = CC_ERR_ABORTED;
    cc__recorder_post(&started.info, REC_ID(&started));

    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(find_op(s, 1)->flags & CC__FR_EF_ABORT_SEEN, 0);
    assert_int_not_equal(find_op(s, 2)->flags & CC__FR_EF_ABORT_SEEN, 0);
    assert_int_equal(find_op(s, 2)->state, CC__FR_SCHEDULED);
    assert_int_not_equal(find_op(s, 3)->flags & CC__FR_EF_ABORT_SEEN, 0);
    assert_int_equal(find_op(s, 3)->state, CC__FR_ABORTED);
    assert_int_equal(find_op(s, 4)->flags & CC__FR_EF_ABORT_SEEN, 0);
    assert_int_equal(s->ncomms, 2);
    assert_true(s->comms[0].flags & CC__FR_CF_ABORTED);
    assert_int_equal(s->comms[0].abort_reason, CC_ERR_TIMEOUT);
    assert_false(s->comms[1].flags & CC__FR_CF_ABORTED);
    cc__fr_snapshot_free(s);
}

static void on_signal(int signo)
{
    cc__recorder_mark_signal(signo); /* from a real handler: async-signal-safe */
}

static void test_fatal_signal_mark(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->hdr.fatal_signal, 0);
    cc__fr_snapshot_free(s);
    struct sigaction sa, old;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, &old);
    raise(SIGUSR1);
    sigaction(SIGUSR1, &old, NULL);
    s = rec_snapshot();
    assert_int_equal(s->hdr.fatal_signal, SIGUSR1);
    assert_true(s->hdr.fatal_signal_ns >= s->hdr.monotonic_base_ns);
    cc__fr_snapshot_free(s);
}

static void test_lifecycle(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    cc__op_t init, op, destroy;
    rec_op(&init, CC_OP_COMM_INIT, 9, 1, 0);
    init.info.comm_name = "world.2";
    init.info.parent_comm_id = 7;
    rec_run(&init, CC_OK);
    rec_op(&op, CC_OP_ALLREDUCE, 9, 2, 1);
    rec_run(&op, CC_OK);
    rec_op(&destroy, CC_OP_COMM_DESTROY, 9, 3, 0);
    rec_run(&destroy, CC_OK);
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->ncomms, 1);
    assert_string_equal(s->comms[0].name, "world.2");
    assert_int_equal(s->comms[0].parent_id, 7);
    assert_true(s->comms[0].flags & CC__FR_CF_DESTROYED);
    assert_true(s->nmodules > 0); /* the module table is filled at open */
    assert_int_equal(find_op(s, 2)->comm_slot, 0);
    cc__fr_snapshot_free(s);
}

/*
 * PRE finds an op's comm table slot through a per-thread memo of the last comm. A comm id
 * that comes back after its destroy gets a new record: its ops must carry the new slot, not
 * the one the memo held. Ops of two comms alternate too, and a reopened recorder starts
 * from an empty table.
 */
static void test_comm_memo(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    cc__op_t op;
    rec_op(&op, CC_OP_COMM_INIT, 9, 1, 0);
    rec_run(&op, CC_OK);
    rec_op(&op, CC_OP_ALLREDUCE, 9, 2, 1);
    rec_run(&op, CC_OK);
    assert_int_equal(cc__recorder_add_comm(5, 0, "other", 0, 2, world2), 1);
    rec_op(&op, CC_OP_ALLREDUCE, 5, 3, 1);
    rec_run(&op, CC_OK);
    rec_op(&op, CC_OP_ALLREDUCE, 9, 4, 2);
    rec_run(&op, CC_OK);
    rec_op(&op, CC_OP_COMM_DESTROY, 9, 5, 0);
    rec_run(&op, CC_OK);
    rec_op(&op, CC_OP_COMM_INIT, 9, 6, 0);
    rec_run(&op, CC_OK);
    rec_op(&op, CC_OP_ALLREDUCE, 9, 7, 1);
    rec_run(&op, CC_OK);
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->ncomms, 3);
    assert_int_equal(find_op(s, 2)->comm_slot, 0);
    assert_int_equal(find_op(s, 3)->comm_slot, 1);
    assert_int_equal(find_op(s, 4)->comm_slot, 0);
    assert_int_equal(find_op(s, 7)->comm_slot, 2); /* the new record, not the memo's 0 */
    assert_int_equal(s->comms[2].last_completed, 1);
    cc__fr_snapshot_free(s);
    cc__recorder_close();
    /* A new ring: comm 5 is unknown there until its first op registers it (slot 0). */
    assert_int_equal(rec_open(16, 0), CC_OK);
    rec_op(&op, CC_OP_ALLREDUCE, 5, 8, 2);
    rec_run(&op, CC_OK);
    s = rec_snapshot();
    assert_int_equal(s->ncomms, 1);
    assert_int_equal(find_op(s, 8)->comm_slot, 0);
    cc__fr_snapshot_free(s);
}

/* The kB of resident memory of the mapping that starts at `addr`, from
 * /proc/self/smaps, or -1 when it is not found. */
static long smaps_rss_kb(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return -1;
    char line[512];
    int in = 0;
    long rss = -1;
    while (fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2) {
            in = lo == (unsigned long)(uintptr_t)addr;
        } else if (in && sscanf(line, "Rss: %ld kB", &rss) == 1) {
            break;
        }
    }
    fclose(f);
    return rss;
}

/* The ring is mapped pre-faulted: the first lap of ops must not take a page
 * fault every 16 slots (about 15 us each on the reference VM). */
static void test_ring_prefaulted(void **state)
{
    (void)state;
    char path[400];
    snprintf(path, sizeof(path), "%s/prefault.ccfr", rec_dir);
    cc__fr_ring_params_t p = {
        .capacity = 4096, .rank = 0, .world_size = 2, .host = "h", .job_id = "j"};
    cc__fr_ring_t *r = NULL;
    assert_int_equal(cc__fr_ring_create(path, &p, &r), CC_OK);
    long rss = smaps_rss_kb(r->hdr);
    /* Every page of the file is in this process's page tables before any op. */
    assert_true(rss >= 0);
    assert_true((unsigned long)rss * 1024 >= r->size);
    cc__fr_ring_destroy(r);
}

/* A ring of `capacity` slots with tables of 2 comms and 4 ranks, at rec_dir/name. */
static cc__fr_ring_t *small_ring(const char *name, uint32_t capacity, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", rec_dir, name);
    cc__fr_ring_params_t p = {.capacity = capacity,
                              .comm_capacity = 2,
                              .rank_capacity = 4,
                              .rank = 0,
                              .world_size = 2,
                              .host = "h",
                              .job_id = "j"};
    cc__fr_ring_t *r = NULL;
    assert_int_equal(cc__fr_ring_create(path, &p, &r), CC_OK);
    return r;
}

/* Tables full: the op path goes on, entries just lack a comm record. */
static void test_tables_full(void **state)
{
    (void)state;
    char path[400];
    cc__fr_ring_t *r = small_ring("small.ccfr", 8, path, sizeof(path));
    const int32_t eight[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    cc__fr_comm_desc_t a = {1, 0, "a", 2, 0, -1, world2}, b = {2, 0, "b", 8, 0, -1, eight},
                       c = {3, 0, "c", 2, 0, -1, world2};
    assert_int_equal(cc__fr_comm_add(r, &a), 0);
    assert_int_equal(cc__fr_comm_add(r, &b), 1); /* 8 members do not fit 4 - 2 */
    assert_int_equal(cc__fr_comm_add(r, &c), -1);
    assert_int_equal(cc__fr_comm_add(r, &a), 0); /* known: same slot */
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 3, 1, 1);
    cc__fr_entry_t e;
    cc__fr_entry_fill(&e, &op.info, cc__fr_comm_find(3), 1, 5);
    assert_int_equal(cc__fr_ring_pre(r, &e, NULL), 1);
    cc__fr_ring_destroy(r);
    cc__fr_comm_reset();

    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    assert_int_equal(cc__fr_reader_open(path, &rd, NULL, 0), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(rd, &s, NULL, 0), CC_OK);
    assert_int_equal(s->ncomms, 2);
    assert_true(s->comms[1].flags & CC__FR_CF_RANKS_FULL);
    assert_null(cc__fr_snap_comm_ranks(s, &s->comms[1]));
    assert_int_equal(cc__fr_snap_comm_ranks(s, &s->comms[0])[1], 1);
    assert_int_equal(s->nentries, 1);
    assert_int_equal(cc__fr_snap_entry(s, 0)->comm_slot, CC__FR_NO_COMM);
    assert_null(cc__fr_snap_comm(s, cc__fr_snap_entry(s, 0)));
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(rd);
}

/* An update skips storing a name whose pointer the slot already holds; a
 * new pointer is stored, and a reused slot forgets what its last op had. */
static void test_names_cache(void **state)
{
    (void)state;
    char path[400];
    cc__fr_ring_t *r = small_ring("names.ccfr", 2, path, sizeof(path));
    static const char ring_alg[] = "ring", flat_alg[] = "flat", shm[] = "shm";
    cc__op_t op;
    cc__fr_entry_t e;
    rec_op(&op, CC_OP_ALLREDUCE, 3, 1, 1);
    cc__fr_entry_fill(&e, &op.info, -1, 1, 5);
    uint64_t r1 = cc__fr_ring_pre(r, &e, NULL);
    cc__fr_update_t u = {.state = CC__FR_STARTED, .t_start_ns = 6, .algorithm = ring_alg,
                         .transport = shm};
    cc__fr_ring_update(r, r1, &u);
    u.state = CC__FR_COMPLETED;
    u.t_end_ns = 7;
    cc__fr_ring_update(r, r1, &u); /* the same pointers: skipped, still there */
    const cc__fr_entry_t *slot0 = (const cc__fr_entry_t *)(const void *)r->slots;
    assert_string_equal(slot0->algorithm, "ring");
    assert_string_equal(slot0->transport, "shm");
    u.algorithm = flat_alg; /* an engine that changed its mind at the end */
    cc__fr_ring_update(r, r1, &u);
    assert_string_equal(slot0->algorithm, "flat");
    /* Two more ops: the third takes slot 0 again, its PRE writes empty names. */
    cc__fr_ring_pre(r, &e, NULL);
    uint64_t r3 = cc__fr_ring_pre(r, &e, NULL);
    assert_int_equal(r3, r1 + 2);
    assert_string_equal(slot0->algorithm, "");
    cc__fr_update_t u3 = {.state = CC__FR_STARTED, .t_start_ns = 8, .algorithm = flat_alg,
                          .transport = shm};
    cc__fr_ring_update(r, r3, &u3); /* the pointers slot 0 had: stored all the same */
    assert_string_equal(slot0->algorithm, "flat");
    assert_string_equal(slot0->transport, "shm");
    cc__fr_ring_destroy(r);
}

/* Field `f` of slot 0 is exactly `want`, NUL-padded to `cap` bytes (no tail of an older name). */
static void assert_field(const char *f, size_t cap, const char *want)
{
    char pad[32] = {0};
    memcpy(pad, want, strlen(want));
    assert_memory_equal(f, pad, cap);
}

/*
 * cc__fr_ring_pre_op stores the fixed part's packed words straight into the
 * slot; cc__fr_entry_fill copies the same words into an entry for
 * cc__fr_ring_pre. Both must leave, byte for byte, the same fixed part (record
 * id aside), clamps and reserved zeros included, over a slot whose previous
 * bytes were all nonzero, for values that fill every byte of the words.
 * (What each field holds is test_states' to check, through the struct.)
 */
static void check_pre_matches_fill(cc__fr_ring_t *r, const cc_op_info_t *info, int comm_slot)
{
    /* The slot's previous op wrote every byte of the words we compare. */
    memset(r->slots + 8, 0xa5, offsetof(cc__fr_entry_t, algorithm) - 8); /* seq stays even */
    cc__fr_entry_t want;
    cc__fr_entry_fill(&want, info, comm_slot, 0x89abcdefu, 0x1122334455667788ull);
    uint64_t rid = cc__fr_ring_pre_op(r, info, comm_slot, 0x89abcdefu, 0x1122334455667788ull,
                                      NULL, 0);
    assert_true(rid > 0);
    const cc__fr_entry_t *e = (const cc__fr_entry_t *)(const void *)r->slots;
    assert_int_equal(e->record_id, rid);
    size_t from = offsetof(cc__fr_entry_t, op_id), to = offsetof(cc__fr_entry_t, algorithm);
    assert_memory_equal((const char *)e + from, (const char *)&want + from, to - from);
    assert_int_equal(e->seq & 1, 0);
}

static void test_pre_op_packed(void **state)
{
    (void)state;
    char path[400];
    cc__fr_ring_t *r = small_ring("packed.ccfr", 1, path, sizeof(path));
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 0x0102030405060708ull, 0x1112131415161718ull, 0x2122232425262728ull);
    cc_op_info_t *i = &op.info;
    i->p2p_seq = 0x3132333435363738ull;
    i->in_count = 0x4142434445464748ull;
    i->out_count = 0x5152535455565758ull;
    i->bytes = 0x6162636465666768ull;
    i->timeout_ms = -2;
    i->device = -7;
    i->rank = 0x7a7b7c7d;
    i->size = -0x12345678;
    i->root = -1;
    i->peer = 0x23456789;
    i->tag = -0x3456789a;
    i->dtype = CC_BFLOAT16;
    i->redop = CC_MAX;
    check_pre_matches_fill(r, i, 0x1234);
    check_pre_matches_fill(r, i, -1);
    /* Out-of-range enums are clamped to "none" by both. */
    i->type = CC_OP_SEND;
    i->dtype = (cc_dtype_t)200;
    i->redop = (cc_redop_t)77;
    check_pre_matches_fill(r, i, 3);
    cc__fr_ring_destroy(r);
    unlink(path);
}

/*
 * PRE and START in one write (cc__fr_ring_pre_start_op, the door's path for an op that
 * starts as it is issued) leave the entry byte for byte as PRE then START do: the same
 * slot, written both ways, after a previous op that left other names and every fixed
 * byte set.
 */
static void test_pre_start_fused(void **state)
{
    (void)state;
    char path[400];
    cc__fr_ring_t *r = small_ring("fused.ccfr", 1, path, sizeof(path));
    static const char other[] = "recursive_doubling", ring_[] = "ring", shm[] = "shm",
                      native[] = "native";
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 0x0102030405060708ull, 0x1112131415161718ull, 9);
    op.info.engine = native;
    const cc__fr_entry_t *e = (const cc__fr_entry_t *)(const void *)r->slots;
    unsigned char two_step[sizeof(cc__fr_entry_t)];
    size_t from = offsetof(cc__fr_entry_t, op_id);
    for (int pass = 0; pass < 2; pass++) {
        /* The slot's previous op: other names, every fixed byte nonzero. */
        op.info.algorithm = other;
        op.info.transport = "tcp";
        uint64_t old = cc__fr_ring_pre_op(r, &op.info, 1, 3, 4, NULL, 0);
        assert_true(old > 0);
        memset(r->slots + 8 + 8, 0xa5, offsetof(cc__fr_entry_t, algorithm) - 16);
        uint64_t rid;
        if (pass == 0) {
            /* The door's two steps: PRE knows no names yet, START brings them. */
            op.info.algorithm = op.info.transport = NULL;
            rid = cc__fr_ring_pre_op(r, &op.info, 1, 0x89abcdefu, 1000, NULL, 0);
            assert_int_equal(e->state, CC__FR_SCHEDULED);
            assert_int_equal(cc__fr_ring_start(r, rid, 1000, 0x89abcdefu, ring_, shm), 1);
            memcpy(two_step, e, sizeof(two_step));
        } else {
            op.info.algorithm = ring_;
            op.info.transport = shm;
            rid = cc__fr_ring_pre_start_op(r, &op.info, 1, 0x89abcdefu, 1000, 1000, NULL, 0);
        }
        assert_true(rid > old);
        assert_int_equal(e->record_id, rid);
        assert_int_equal(e->seq & 1, 0);
        assert_int_equal(e->state, CC__FR_STARTED);
        assert_int_equal(e->t_start_ns, 1000);
        assert_string_equal(e->algorithm, "ring");
        assert_string_equal(e->transport, "shm");
    }
    assert_memory_equal((const char *)e + from, two_step + from, sizeof(two_step) - from);
    /* POST after the fused write ends it like any other. */
    assert_int_equal(cc__fr_ring_end(r, e->record_id, CC_OK, 1000, 2000, 5, ring_, shm), 1);
    assert_int_equal(e->state, CC__FR_COMPLETED);
    assert_int_equal(e->t_start_ns, 1000);
    assert_int_equal(e->t_end_ns, 2000);
    cc__fr_ring_destroy(r);
    unlink(path);
}

/* The recorder's fused entry point moves the comm's pg_status as PRE and START do. */
static void test_recorder_pre_start(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    assert_int_equal(cc__recorder_add_comm(7, 0, "world", 0, 2, world2), 0);
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 7, 1, 3);
    op.info.algorithm = "ring";
    op.info.t_enqueue_ns = op.info.t_start_ns = 12345;
    cc__recorder_pre_start(&op.info, &op.rec_id);
    assert_int_not_equal(op.rec_id, 0);
    cc__fr_snapshot_t *s = rec_snapshot();
    const cc__fr_entry_t *x = find_op(s, 1);
    assert_non_null(x);
    assert_int_equal(x->state, CC__FR_STARTED);
    assert_int_equal(x->t_start_ns, 12345);
    assert_string_equal(x->algorithm, "ring");
    assert_int_equal(s->comms[0].last_enqueued, 3);
    assert_int_equal(s->comms[0].last_started, 3);
    assert_int_equal(s->comms[0].last_completed, 0);
    cc__fr_snapshot_free(s);
    op.info.status = CC_OK;
    op.info.t_end_ns = 23456;
    cc__recorder_post(&op.info, op.rec_id);
    s = rec_snapshot();
    assert_int_equal(find_op(s, 1)->state, CC__FR_COMPLETED);
    assert_int_equal(s->comms[0].last_completed, 3);
    cc__fr_snapshot_free(s);
    cc__recorder_close();
}

/*
 * The recorder's PRE (cc__fr_ring_pre_op) writes names in place: it stores a
 * name only when the slot holds another, and a field the op has no name for
 * yet gets its first byte zeroed (reads ""), which START undoes when its name
 * is the one the slot held. Every op must still read exactly its own names.
 */
static void test_names_in_place(void **state)
{
    (void)state;
    char path[400];
    cc__fr_ring_t *r = small_ring("inplace.ccfr", 1, path, sizeof(path));
    static const char longer[] = "recursive_doubling", rd[] = "rd", shm[] = "shm",
                      native[] = "native", nccl[] = "nccl", abc[] = "abc";
    const cc__fr_entry_t *e = (const cc__fr_entry_t *)(const void *)r->slots;
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 3, 1, 1);
    op.info.algorithm = op.info.transport = NULL;
    op.info.engine = native;
    cc__fr_update_t start = {.state = CC__FR_STARTED, .t_start_ns = 6, .algorithm = longer,
                             .transport = shm};

    uint64_t rid = cc__fr_ring_pre_op(r, &op.info, -1, 1, 5, NULL, 0);
    assert_field(e->engine, sizeof(e->engine), "native");
    assert_field(e->algorithm, sizeof(e->algorithm), "");
    cc__fr_ring_update(r, rid, &start);
    assert_field(e->algorithm, sizeof(e->algorithm), "recursive_doubling");
    assert_field(e->transport, sizeof(e->transport), "shm");
    assert_int_equal(cc__fr_ring_gpu(r, rid, 10, 20, "cupti"), 0);

    /* The slot again: no name yet reads "", the GPU fields are the new op's (none). */
    rid = cc__fr_ring_pre_op(r, &op.info, -1, 1, 7, NULL, 0);
    assert_int_equal(e->state, CC__FR_SCHEDULED);
    assert_string_equal(e->algorithm, "");
    assert_string_equal(e->transport, "");
    assert_string_equal(e->gpu_kernel, "");
    assert_int_equal(e->gpu_start_ns, 0);
    assert_field(e->engine, sizeof(e->engine), "native");
    cc__fr_ring_update(r, rid, &start); /* the names the slot held: whole again */
    assert_field(e->algorithm, sizeof(e->algorithm), "recursive_doubling");
    assert_field(e->transport, sizeof(e->transport), "shm");

    /* A shorter name leaves nothing of the longer one. */
    rid = cc__fr_ring_pre_op(r, &op.info, -1, 1, 8, NULL, 0);
    start.algorithm = rd;
    cc__fr_ring_update(r, rid, &start);
    assert_field(e->algorithm, sizeof(e->algorithm), "rd");

    /* Names known at PRE, and a new engine. */
    op.info.algorithm = rd;
    op.info.engine = nccl;
    rid = cc__fr_ring_pre_op(r, &op.info, -1, 1, 9, NULL, 0);
    assert_field(e->algorithm, sizeof(e->algorithm), "rd");
    assert_string_equal(e->transport, ""); /* cut: the rest is the old name's */
    assert_field(e->engine, sizeof(e->engine), "nccl");

    /* After a whole entry was copied in (cc__fr_ring_pre), nothing is assumed. */
    cc__fr_entry_t whole;
    op.info.algorithm = abc;
    cc__fr_entry_fill(&whole, &op.info, -1, 1, 10);
    cc__fr_ring_pre(r, &whole, NULL);
    assert_field(e->algorithm, sizeof(e->algorithm), "abc");
    op.info.algorithm = NULL;
    op.info.engine = nccl;
    rid = cc__fr_ring_pre_op(r, &op.info, -1, 1, 11, NULL, 0);
    assert_field(e->algorithm, sizeof(e->algorithm), ""); /* zeroed whole: no known rest */
    assert_field(e->engine, sizeof(e->engine), "nccl");
    start.algorithm = longer;
    cc__fr_ring_update(r, rid, &start);
    assert_field(e->algorithm, sizeof(e->algorithm), "recursive_doubling");

    /* A reader takes every entry written this way (names terminated, no torn words). */
    cc__fr_ring_destroy(r);
    cc__fr_reader_t *rdr = NULL;
    cc__fr_snapshot_t *snap = NULL;
    assert_int_equal(cc__fr_reader_open(path, &rdr, NULL, 0), CC_OK);
    assert_int_equal(cc__fr_reader_snapshot(rdr, &snap, NULL, 0), CC_OK);
    assert_int_equal(snap->nentries, 1);
    assert_int_equal(snap->ntorn + snap->ncorrupt, 0);
    assert_string_equal(cc__fr_snap_entry(snap, 0)->algorithm, "recursive_doubling");
    cc__fr_snapshot_free(snap);
    cc__fr_reader_close(rdr);
}

static void test_recorder_off(void **state)
{
    (void)state;
    assert_int_equal(rec_open(0, 0), CC_OK);
    assert_null(cc__recorder_path());
    assert_null(cc_recorder_ring_path());
    cc__op_t op;
    rec_op(&op, CC_OP_ALLREDUCE, 7, 1, 1);
    REC_ID(&op) = 42; /* a stale id must be cleared */
    rec_run(&op, CC_OK);
    assert_int_equal(REC_ID(&op), 0);
    assert_int_equal(cc_recorder_dump(NULL), CC_ERR_INVALID_USAGE);
    cc__recorder_mark_signal(SIGSEGV); /* harmless when off */
    char sub[320];
    snprintf(sub, sizeof(sub), "%s/rings", rec_dir);
    assert_int_not_equal(access(sub, F_OK), 0); /* nothing was created */
}

/*
 * The recorder as the door meets it: the door calls it at each transition,
 * before the chains, so it is on none of the op chains (an op with no other
 * hook runs no chain) and only on the abort chain. Its record id stays in
 * the op (what the CUDA plugin hands to cc__recorder_gpu), and START and
 * POST find the entry by it. A plain PRE hook that vetoes after it still
 * leaves the op recorded as failed, not pending: the door ends a vetoed op
 * through POST.
 */
static cc_status_t veto_all(const cc_op_info_t *op, void *user)
{
    (void)op, (void)user;
    return CC_ERR_INVALID_USAGE;
}

static void test_door_calls(void **state)
{
    (void)state;
    assert_int_equal(rec_open(16, 0), CC_OK);
    assert_false(cc__hooks_any(NULL, CC__HOOK_PRE));
    assert_false(cc__hooks_any(NULL, CC__HOOK_START));
    assert_false(cc__hooks_any(NULL, CC__HOOK_POST));
    assert_true(cc__hooks_any(NULL, CC__HOOK_ABORT));
    assert_int_equal(cc__recorder_add_comm(7, 0, "world", 0, 2, world2), 0);
    cc__op_t op, vetoed;
    rec_op(&op, CC_OP_ALLREDUCE, 7, 1, 1);
    cc__recorder_pre(&op.info, &op.rec_id);
    assert_int_equal(op.rec_id, 1);
    op.info.algorithm = "ring";
    cc__recorder_start(&op.info, op.rec_id);
    op.info.status = CC_OK;
    cc__recorder_post(&op.info, op.rec_id);
    cc__recorder_gpu(op.rec_id, 100, 200, "cupti");
    cc_hook_handle_t hv;
    assert_int_equal(cc_hook_add_pre(NULL, veto_all, NULL, 0, &hv), CC_OK);
    rec_op(&vetoed, CC_OP_ALLREDUCE, 7, 2, 2);
    cc__recorder_pre(&vetoed.info, &vetoed.rec_id);
    assert_int_equal(cc__hooks_run_pre(NULL, &vetoed.info, &vetoed.tokens), CC_ERR_INVALID_USAGE);
    vetoed.info.status = CC_ERR_INVALID_USAGE;
    cc__recorder_post(&vetoed.info, vetoed.rec_id);
    assert_int_equal(cc_hook_remove(hv), CC_OK);
    /* An op the recorder never saw (no PRE) has id 0, and its POST records nothing. */
    cc__op_t unseen;
    rec_op(&unseen, CC_OP_ALLREDUCE, 7, 3, 3);
    cc__recorder_post(&unseen.info, unseen.rec_id);
    cc__fr_snapshot_t *s = rec_snapshot();
    assert_int_equal(s->nentries, 2);
    const cc__fr_entry_t *x = find_op(s, 1);
    assert_int_equal(x->state, CC__FR_COMPLETED);
    assert_string_equal(x->algorithm, "ring");
    assert_int_equal(x->gpu_start_ns, 100);
    assert_string_equal(x->gpu_kernel, "cupti");
    assert_int_equal(find_op(s, 2)->state, CC__FR_FAILED);
    assert_null(find_op(s, 3));
    cc__fr_snapshot_free(s);
    cc__recorder_close();
    assert_false(cc__hooks_any(NULL, CC__HOOK_ABORT)); /* closed: its abort hook is gone */
}

static void test_bad_open(void **state)
{
    (void)state;
    assert_int_equal(rec_open(-5, 0), CC_ERR_INVALID_ARG);
    assert_null(cc__recorder_path());
    setenv("CCOMM_RECORDER_ENTRIES", "16", 1);
    cc__config_reload();
    assert_int_equal(cc__recorder_open(3, 2, "x"), CC_ERR_INVALID_ARG);
    assert_int_equal(cc__recorder_open(0, 2, "../../evil/job"), CC_OK);
    assert_non_null(strstr(cc__recorder_path(), "/.._.._evil_job/rank0."));
    assert_int_equal(cc__recorder_open(0, 2, "again"), CC_ERR_INVALID_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_states, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_wrap_around, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_odd_capacity, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_late_update_dropped, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_abort_marks_unfinished, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_fatal_signal_mark, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_lifecycle, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_comm_memo, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_tables_full, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_ring_prefaulted, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_names_cache, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_names_in_place, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_pre_op_packed, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_pre_start_fused, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_recorder_pre_start, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_recorder_off, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_door_calls, rec_setup, rec_teardown),
        cmocka_unit_test_setup_teardown(test_bad_open, rec_setup, rec_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
