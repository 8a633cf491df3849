/*
 * dump.c - the JSON dump of a snapshot, in PyTorch's flight recorder format
 * (version 2.10) plus ccomm's own keys under "ccomm".
 *
 * Built from a snapshot, never from the live ring, so writers are never
 * blocked; written to a temporary file and renamed, so a reader of the dump
 * sees the old one or the new one, never half of one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ccomm/recorder.h"
#include "ccomm/types.h"
#include "base/clock.h"
#include "base/config.h"
#include "recorder/dump.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/lttng.h"
#include "recorder/opclass.h"
#include "recorder/paths.h"
#include "recorder/recorder.h"
#include "recorder/ring.h"
#include "recorder/symbolize.h"

static const char *const torch_dtype[CC_DTYPE_COUNT] = {
#define CC__DTYPE_TORCH(name, s, size, torch) torch,
    CC_DTYPE_MAP(CC__DTYPE_TORCH)
#undef CC__DTYPE_TORCH
};

/* A u64 as a decimal string: JSON readers lose integers beyond 2^53. */
static json_t *u64_str(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
    return json_string(buf);
}

/* PyTorch's ranks string: "[0, 1, 2]". */
static json_t *ranks_str(const int32_t *ranks, uint32_t n)
{
    /* ", " and at most 11 characters of an int32 per rank, plus "[]\0":
     * the snprintf calls below can never be truncated. */
    size_t cap = 3 + (size_t)n * 13;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < n; i++)
        o += (size_t)snprintf(buf + o, cap - o, i ? ", %d" : "%d", ranks[i]);
    snprintf(buf + o, cap - o, "]");
    json_t *j = json_string(buf);
    free(buf);
    return j;
}

/*
 * pg_config: {pg_name: {name, desc, ranks}}. PyTorch's analyzer matches
 * groups across ranks by name, so the name must be equal on every member:
 * the comm id is, by construction; the comm's own name goes in desc.
 */
static json_t *pg_config(const cc__fr_snapshot_t *s)
{
    json_t *cfg = json_object();
    for (uint32_t i = 0; cfg && i < s->ncomms; i++) {
        const cc__fr_comm_t *c = &s->comms[i];
        char id[24];
        snprintf(id, sizeof(id), "%llu", (unsigned long long)c->comm_id);
        const int32_t *r = cc__fr_snap_comm_ranks(s, c);
        json_object_set_new(cfg, id,
                            json_pack("{s:s, s:s, s:o*}", "name", id, "desc", c->name, "ranks",
                                      ranks_str(r, r ? c->ranks_count : 0)));
    }
    return cfg;
}

/*
 * pg_status: {pg_id: {...}} with the values as strings, as PyTorch's JSON
 * has them. pg_id is the comm's table index: a small per-process number,
 * 0 for the first comm (world), like PyTorch's default group.
 */
static json_t *pg_status(const cc__fr_snapshot_t *s)
{
    json_t *st = json_object();
    for (uint32_t i = 0; st && i < s->ncomms; i++) {
        const cc__fr_comm_t *c = &s->comms[i];
        char id[16];
        snprintf(id, sizeof(id), "%u", i);
        json_object_set_new(st, id,
                            json_pack("{s:o*, s:o*, s:o*}", "last_enqueued_collective",
                                      u64_str(c->last_enqueued), "last_started_collective",
                                      u64_str(c->last_started), "last_completed_collective",
                                      u64_str(c->last_completed)));
    }
    return st;
}

/* "ccomm:all_reduce", "ccomm:send 0->1", "ccomm:recv 1<-0" (comm ranks, as PyTorch). */
static json_t *profiling_name(const cc__fr_entry_t *e)
{
    char buf[96];
    const char *t = cc_op_type_name((cc_op_type_t)e->type);
    /* Window ops name their peer the same way: what moves towards whom (get, wait: to us). */
    int send = e->type == CC_OP_SEND || e->type == CC_OP_SEND_BYTES || e->type == CC_OP_WIN_PUT ||
               e->type == CC_OP_WIN_SIGNAL || e->type == CC_OP_WIN_FLUSH;
    int recv = e->type == CC_OP_RECV || e->type == CC_OP_RECV_BYTES || e->type == CC_OP_WIN_GET ||
               e->type == CC_OP_WIN_WAIT_SIGNAL;
    if ((send || recv) && e->peer >= 0)
        snprintf(buf, sizeof(buf), "ccomm:%s %d%s%d", t, e->rank, send ? "->" : "<-", e->peer);
    else
        snprintf(buf, sizeof(buf), "ccomm:%s", t);
    return json_string(buf);
}

/* Shapes [[count]] and dtype names ["Float"]; none for ops without data. */
static void sizes(json_t *j, const cc__fr_entry_t *e)
{
    uint64_t in = e->in_count, out = e->out_count;
    if (cc__fr_op_class(e->type) == CC__FR_CLASS_P2P) /* PyTorch passes one tensor as both */
        in = out = in > out ? in : out;
    /* Byte collectives carry no dtype: PyTorch would call their buffers Byte. */
    unsigned d = cc__fr_dtype_of(e->dtype);
    const char *dt = d < CC_DTYPE_COUNT ? torch_dtype[d] : "Byte";
    json_object_set_new(j, "input_sizes", in ? json_pack("[[I]]", (json_int_t)in) : json_array());
    json_object_set_new(j, "input_dtypes", in ? json_pack("[s]", dt) : json_array());
    json_object_set_new(j, "output_sizes",
                        out ? json_pack("[[I]]", (json_int_t)out) : json_array());
    json_object_set_new(j, "output_dtypes", out ? json_pack("[s]", dt) : json_array());
}

/* PyTorch's frames: {name, filename, line}; lines are unknown without DWARF. */
static json_t *frames(const cc__fr_entry_t *e, cc__fr_symbolizer_t *z)
{
    json_t *a = json_array();
    const uint64_t *f = cc__fr_entry_frames(e);
    for (unsigned i = 0; a && z && i < e->nframes; i++) {
        char name[320];
        const char *file;
        cc__fr_symbolize(z, f[i], name, sizeof(name), &file);
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:i}", "name", name, "filename", file, "line", 0));
    }
    return a;
}

static json_t *extras_base(const cc__fr_snapshot_t *s, const cc__fr_entry_t *e,
                           const cc__fr_comm_t *c);

/* ccomm's own view of an entry: the true state and what PyTorch has no key for. */
static json_t *extras(const cc__fr_snapshot_t *s, const cc__fr_entry_t *e, const cc__fr_comm_t *c)
{
    json_t *j = extras_base(s, e, c);
    /* GPU kernel times (format 1.1): realtime like the other times, 0 when unknown. */
    if (j && (e->gpu_start_ns || e->gpu_end_ns || e->gpu_kernel[0])) {
        json_object_set_new(j, "gpu_start_ns",
                            json_integer((json_int_t)cc__fr_snap_realtime(s, e->gpu_start_ns)));
        json_object_set_new(j, "gpu_end_ns",
                            json_integer((json_int_t)cc__fr_snap_realtime(s, e->gpu_end_ns)));
        json_object_set_new(j, "gpu_kernel", json_string(e->gpu_kernel));
    }
    return j;
}

static json_t *extras_base(const cc__fr_snapshot_t *s, const cc__fr_entry_t *e,
                           const cc__fr_comm_t *c)
{
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:I, s:i, s:i, s:i, s:s, s:i, s:I, s:I, s:o*, s:s, s:s, s:i, "
        "s:b, s:I}",
        "state", cc__fr_state_name(e->state), "status", cc_status_name((cc_status_t)e->status),
        "algorithm", e->algorithm, "transport", e->transport, "engine", e->engine, "bytes",
        (json_int_t)e->bytes, "peer", e->peer, "root", e->root, "tag", e->tag, "host", s->hdr.host,
        "pid", s->hdr.pid, "thread_id", (json_int_t)e->tid, "end_thread_id", (json_int_t)e->end_tid,
        "comm_id", u64_str(e->comm_id), "comm_name", c ? c->name : "", "redop",
        e->redop < CC_REDOP_COUNT ? cc_redop_name((cc_redop_t)e->redop) : "", "device", e->device,
        "abort_seen", (e->flags & CC__FR_EF_ABORT_SEEN) != 0, "time_ended_ns",
        (json_int_t)cc__fr_snap_realtime(s, e->t_end_ns));
}

/* PyTorch knows scheduled, started, completed: a failed end is where it got to. */
static const char *torch_state(const cc__fr_entry_t *e)
{
    if (e->state == CC__FR_COMPLETED) return "completed";
    return (e->state == CC__FR_STARTED || e->t_start_ns) ? "started" : "scheduled";
}

/* One entry with PyTorch's keys, in PyTorch's order, then ccomm's. */
static json_t *entry_json(const cc__fr_snapshot_t *s, const cc__fr_entry_t *e,
                          cc__fr_symbolizer_t *z)
{
    const cc__fr_comm_t *c = cc__fr_snap_comm(s, e);
    int ok = e->state == CC__FR_COMPLETED;
    /* PyTorch writes thread ids as strings; process_group pairs the
     * cross-rank name (comm id) with the description (comm name). */
    char tid[16], id[24];
    snprintf(tid, sizeof(tid), "%u", e->tid);
    snprintf(id, sizeof(id), "%llu", (unsigned long long)e->comm_id);
    json_t *j = json_pack("{s:I, s:I, s:[s,s], s:s, s:s, s:I, s:I, s:I, s:o*, s:I}", "record_id",
                          (json_int_t)e->record_id, "pg_id", (json_int_t)(c ? c - s->comms : -1),
                          "process_group", id, c ? c->name : "", "thread_id", tid, "thread_name",
                          "", "collective_seq_id", (json_int_t)e->coll_seq, "p2p_seq_id",
                          (json_int_t)e->p2p_seq, "op_id", (json_int_t)e->op_id, "profiling_name",
                          profiling_name(e), "time_created_ns",
                          (json_int_t)cc__fr_snap_realtime(s, e->t_enqueue_ns));
    if (!j) return NULL;
    /* PyTorch has a duration only for completed work (its CUDA events). */
    if (ok) {
        uint64_t from = e->t_start_ns ? e->t_start_ns : e->t_enqueue_ns;
        double ms = e->t_end_ns > from ? (double)(e->t_end_ns - from) / 1e6 : 0.0;
        json_object_set_new(j, "duration_ms", json_real(ms));
    }
    sizes(j, e);
    json_object_set_new(j, "state", json_string(torch_state(e)));
    json_object_set_new(j, "time_discovered_started_ns",
                        json_integer((json_int_t)cc__fr_snap_realtime(s, e->t_start_ns)));
    /* A failed op has an end time, but PyTorch's "completed" would call it
     * done: it stays 0 here and the end is in ccomm.time_ended_ns. */
    json_object_set_new(j, "time_discovered_completed_ns",
                        json_integer(ok ? (json_int_t)cc__fr_snap_realtime(s, e->t_end_ns) : 0));
    json_object_set_new(j, "retired", json_boolean(e->state >= CC__FR_COMPLETED));
    json_object_set_new(j, "timeout_ms", json_integer((json_int_t)e->timeout_ms));
    json_object_set_new(j, "is_p2p", json_boolean(cc__fr_op_class(e->type) == CC__FR_CLASS_P2P));
    json_object_set_new(j, "frames", frames(e, z));
    json_object_set_new(j, "ccomm", extras(s, e, c));
    return j;
}

static json_t *comms_json(const cc__fr_snapshot_t *s)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < s->ncomms; i++) {
        const cc__fr_comm_t *c = &s->comms[i];
        json_array_append_new(
            a,
            json_pack("{s:i, s:o*, s:s, s:o*, s:i, s:i, s:i, s:b, s:b, s:s?, s:b}", "pg_id", (int)i,
                      "comm_id", u64_str(c->comm_id), "name", c->name, "parent_id",
                      u64_str(c->parent_id), "size", c->size, "rank", c->rank, "device", c->device,
                      "destroyed", (c->flags & CC__FR_CF_DESTROYED) != 0, "aborted",
                      (c->flags & CC__FR_CF_ABORTED) != 0, "abort_reason",
                      (c->flags & CC__FR_CF_ABORTED) ? cc_status_name((cc_status_t)c->abort_reason)
                                                     : NULL,
                      "ranks_recorded", !(c->flags & CC__FR_CF_RANKS_FULL)));
    }
    return a;
}

static json_t *problems_json(const cc__fr_snapshot_t *s, uint32_t kind)
{
    json_t *a = json_array();
    for (uint32_t i = 0; a && i < s->nproblems; i++) {
        const cc__fr_problem_t *p = &s->problems[i];
        if (p->kind == kind)
            json_array_append_new(a, json_pack("{s:i, s:I, s:s}", "slot", (int)p->slot, "record_id",
                                               (json_int_t)p->record_id, "why", p->why));
    }
    return a;
}

/* The top-level "ccomm" object: the process, the ring's health, the comms. */
static json_t *process_json(const cc__fr_snapshot_t *s, json_t *lifecycle)
{
    const cc__fr_header_t *h = &s->hdr;
    /* When this snapshot was taken: readers measure "how long before the dump" from it. */
    json_int_t taken = (json_int_t)cc__realtime_ns();
    return json_pack("{s:s, s:s, s:i, s:s, s:i, s:b, s:b, s:i, s:I, s:I, s:I, s:i, s:I, s:I, "
                     "s:I, s:o, s:o, s:o, s:o}",
                     "format_version", "1.1", "host", h->host, "pid", h->pid, "job_id", h->job_id,
                     "world_size", h->world_size, "live", s->live, "closed", h->closed_ns != 0,
                     "capacity", (int)h->capacity, "records_issued", (json_int_t)h->next_record_id,
                     "skipped", (json_int_t)h->skipped, "dropped_updates", (json_int_t)h->dropped,
                     "fatal_signal", (int)h->fatal_signal, "fatal_signal_time_ns",
                     (json_int_t)cc__fr_snap_realtime(s, h->fatal_signal_ns), "dumps_written",
                     (json_int_t)h->dump_count, "dump_time_ns", taken, "comms", comms_json(s), "torn",
                     problems_json(s, CC__FR_TORN), "corrupt", problems_json(s, CC__FR_CORRUPT),
                     "lifecycle", lifecycle);
}

json_t *cc__fr_json(const cc__fr_snapshot_t *s, unsigned flags)
{
    cc__fr_symbolizer_t *z = (flags & CC__FR_JSON_FRAMES) ? cc__fr_symbolizer_new(s) : NULL;
    char libv[64];
    snprintf(libv, sizeof(libv), "ccomm-%s", s->hdr.lib_version);
    json_t *root =
        json_pack("{s:s, s:s, s:i, s:o, s:o}", "version", CC__FR_DUMP_VERSION, "comm_lib_version",
                  libv, "rank", s->hdr.rank, "pg_config", pg_config(s), "pg_status", pg_status(s));
    json_t *entries = json_array(), *life = json_array();
    if (!root || !entries || !life) goto oom;
    for (uint32_t i = 0; i < s->nentries; i++) {
        const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
        json_t *j = entry_json(s, e, z);
        /* Lifecycle events are not PyTorch entries: its analyzer would try to match them. */
        if (!j || json_array_append_new(
                      cc__fr_op_class(e->type) == CC__FR_CLASS_LIFE ? life : entries, j))
            goto oom;
    }
    /* PyTorch leaves "entries" out when there are none. */
    if (json_array_size(entries)) json_object_set(root, "entries", entries);
    json_decref(entries);
    json_object_set_new(root, "ccomm", process_json(s, life));
    cc__fr_symbolizer_free(z);
    return root;
oom:
    json_decref(root);
    json_decref(entries);
    json_decref(life);
    cc__fr_symbolizer_free(z);
    return NULL;
}

cc_status_t cc__fr_json_write(const json_t *j, const char *path)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: dump path %.64s... is too long", path);
        return CC_ERR_INVALID_ARG;
    }
    /* A new file of our own: never through a link planted in a shared
     * directory, never onto a stale temporary. */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot create %s: %s", tmp, strerror(errno));
        return CC_ERR_SYSTEM;
    }
    int bad = json_dumpf(j, f, JSON_COMPACT) != 0;
    bad |= fputc('\n', f) == EOF;
    /* On disk before the rename: a crash right after must not leave an
     * empty file under the final name. */
    bad |= fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        if (!bad) e = errno;
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: cannot write dump %s: %s", path, strerror(e));
        unlink(tmp);
        return CC_ERR_SYSTEM;
    }
    return CC_OK;
}

/* Snapshot the open ring and write its dump (the ring is held against close). */
static cc_status_t dump_ring(cc__fr_ring_t *r, const char *path)
{
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    json_t *j = NULL;
    cc_status_t st;
    CC_CHECK_GOTO(cc__fr_reader_attach(r->hdr, r->size, &rd, NULL, 0), st, out);
    CC_CHECK_GOTO(cc__fr_reader_snapshot(rd, &s, NULL, 0), st, out);
    j = cc__fr_json(s, CC__FR_JSON_FRAMES);
    if (!j) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: out of memory building the dump of %s",
                     r->path);
        st = CC_ERR_NO_MEMORY;
        goto out;
    }
    CC_CHECK_GOTO(cc__fr_json_write(j, path), st, out);
    /* In the ring too: ccdump of a dead process tells whether it dumped. */
    __atomic_store_n(&r->hdr->last_dump_ns, cc__now_ns(), __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->hdr->dump_count, 1, __ATOMIC_RELEASE);
    cc_log_info(CC_SUBSYS_RECORDER, "recorder: dump of %u entries written to %s", s->nentries,
                path);
out:
    json_decref(j);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(rd);
    return st;
}

cc_status_t cc__recorder_dump_json(const char *path)
{
    if (!path || !*path) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: dump path is %s", path ? "empty" : "NULL");
        return CC_ERR_INVALID_ARG;
    }
    cc__fr_ring_t *r = cc__recorder_ring_hold();
    if (!r) {
        cc_log_error(CC_SUBSYS_RECORDER,
                     "recorder: no dump of %s: the recorder is off or not "
                     "open",
                     path);
        return CC_ERR_INVALID_USAGE;
    }
    cc_status_t st = dump_ring(r, path);
    cc__recorder_ring_release();
    return st;
}

/*
 * $CCOMM_DUMP_DIR/<job>/rank<r>.json, or rank<r>.<k>.json with the first k
 * not taken: a later dump never overwrites an earlier one (the first dump of
 * a hang is the one that explains it). Directories are made.
 */
static cc_status_t default_path(const cc__fr_ring_t *r, char *path, size_t cap)
{
    char job[128], dir[PATH_MAX];
    cc__fr_job_component(r->hdr->job_id, job, sizeof(job));
    int n = snprintf(dir, sizeof(dir), "%s/%s", cc__cfg()->dump_dir, job);
    if (n < 0 || (size_t)n >= sizeof(dir) || (size_t)n + 40 >= cap) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: CCOMM_DUMP_DIR \"%.64s...\" is too long",
                     cc__cfg()->dump_dir);
        return CC_ERR_INVALID_ARG;
    }
    /* Private like the rings: a dump holds the same record. */
    CC_CHECK(
        cc__mkdirs_private(cc__cfg()->dump_dir, CC_SUBSYS_RECORDER, "recorder: CCOMM_DUMP_DIR"));
    CC_CHECK(cc__mkdirs_private(dir, CC_SUBSYS_RECORDER, "recorder: CCOMM_DUMP_DIR"));
    for (unsigned k = 0; k < 100000; k++) {
        int m = k ? snprintf(path, cap, "%s/rank%d.%u.json", dir, r->hdr->rank, k)
                  : snprintf(path, cap, "%s/rank%d.json", dir, r->hdr->rank);
        if (m < 0 || (size_t)m >= cap) return CC_ERR_INVALID_ARG;
        if (access(path, F_OK) != 0) return CC_OK;
    }
    cc_log_error(CC_SUBSYS_RECORDER, "recorder: %s holds 100000 dumps of rank %d already", dir,
                 r->hdr->rank);
    return CC_ERR_SYSTEM;
}

cc_status_t cc__recorder_dump_default(char *out, size_t outlen)
{
    cc__fr_ring_t *r = cc__recorder_ring_hold();
    if (!r) {
        cc_log_error(CC_SUBSYS_RECORDER, "recorder: no dump: the recorder is off or not open");
        return CC_ERR_INVALID_USAGE;
    }
    /* Held across choosing the name and writing it: two dumps never pick one name. */
    char def[PATH_MAX];
    cc_status_t st = default_path(r, def, sizeof(def));
    if (st == CC_OK) st = dump_ring(r, def);
    cc__recorder_ring_release();
    if (st == CC_OK && out) snprintf(out, outlen, "%s", def);
    return st;
}

cc_status_t cc_recorder_dump(const char *path)
{
    char def[PATH_MAX];
    def[0] = '\0';
    cc__recorder_flush_gpu(); /* kernel times still in CUPTI's buffers land first */
    cc_status_t st =
        path ? cc__recorder_dump_json(path) : cc__recorder_dump_default(def, sizeof(def));
    /* Tracing: the watchdog's dumps say why in their own event; this one was asked for. */
    cc__lttng_recorder_dump("cc_recorder_dump", path ? path : def, st);
    return st;
}

const char *cc_recorder_ring_path(void)
{
    return cc__recorder_path();
}
