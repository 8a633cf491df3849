/*
 * diag_proc.c - each rank's process and what it was blocked in.
 *
 * The process's fate comes from its ring: a fatal signal is marked by the
 * signal handler; a normal exit (or close) is marked by an atexit handler;
 * a ring with neither whose process is gone (checked in /proc on the ring's
 * host) was killed by a signal ccomm does not catch (SIGKILL, the OOM killer,
 * a launcher's SIGTERM). A dump alone cannot tell.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

static int proc_of(const ccd_rank_t *r)
{
    if (!r) return CCD_PROC_MISSING;
    if (r->fatal_signal) return CCD_PROC_CRASHED;
    if (r->closed == 1) return CCD_PROC_EXITED;
    if (r->alive == 1) return r->stopped ? CCD_PROC_STOPPED : CCD_PROC_ALIVE;
    if (r->alive == 0) return CCD_PROC_KILLED;
    return CCD_PROC_UNKNOWN;
}

/* An end that means "gave up waiting" (not a bad argument, not success). */
static int waiting_error(int32_t status)
{
    return status < 0 && !CC_STATUS_IS_CALL_ERROR(status);
}

int ccd_is_wait(const ccd_diag_t *d, const ccd_entry_t *e)
{
    if (e->flags & CCD_EF_LIFE) return 0;
    if (ccd_entry_done(e)) return !ccd_entry_ok(e) && waiting_error(e->status);
    /* Unfinished: a wait once it is old enough not to be an op simply in flight. */
    uint64_t t = e->t_start > e->t_enq ? e->t_start : e->t_enq;
    return !t || d->job->t_ref < t || d->job->t_ref - t >= d->opts.min_wait_ns;
}

/*
 * The ops the rank waits in: not completed, and nothing on their comm
 * completed after them (later failures are consequences: a broken comm
 * refuses the ops that follow). Walks backwards; returns the oldest first.
 */
uint32_t ccd_pending_ops(const ccd_diag_t *d, const ccd_rank_t *r, uint32_t *out, uint32_t cap)
{
    uint8_t *ok = calloc(r->ncomms + 1, 1);
    uint32_t n = 0;
    if (!ok) return 0;
    for (uint32_t i = r->n; i-- > 0;) {
        const ccd_entry_t *e = &r->e[i];
        if (e->comm >= r->ncomms || (e->flags & CCD_EF_LIFE)) continue;
        if (ccd_entry_ok(e)) {
            ok[e->comm] = 1;
        } else if (!ok[e->comm] && ccd_is_wait(d, e)) {
            /* Keep the oldest `cap`: shift out the newest when full. */
            if (n == cap) n--;
            memmove(out + 1, out, n * sizeof(*out));
            out[0] = i;
            n++;
        }
    }
    free(ok);
    return n;
}

/* The op the rank is stuck in: the oldest of its waits. */
static int64_t blocked_op(const ccd_diag_t *d, const ccd_rank_t *r)
{
    uint32_t first;
    return ccd_pending_ops(d, r, &first, 1) ? (int64_t)first : -1;
}

static void first_error(ccd_diag_t *d, const ccd_rank_t *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        const ccd_entry_t *e = &r->e[i];
        if (!ccd_entry_done(e) || ccd_entry_ok(e) || !waiting_error(e->status) || !e->t_end) continue;
        if (!d->t_first_error || e->t_end < d->t_first_error) {
            d->t_first_error = e->t_end;
            d->first_error_rank = r->rank;
        }
        return; /* entries are in order: the rank's first is enough */
    }
}

static const char *source_name(int src)
{
    return src == CCD_SRC_RING ? "ring" : src == CCD_SRC_CCOMM_JSON ? "ccomm_json" : "torch_json";
}

static json_t *rank_json(ccd_diag_t *d, int32_t w)
{
    const ccd_rank_t *r = d->job->rank[w];
    json_t *j = json_pack("{s:i, s:s}", "rank", w, "process", ccd_proc_name(d->proc[w]));
    if (!r || !j) return j;
    const ccd_entry_t *last = ccd_last_op(r);
    json_object_set_new(j, "host", json_string(r->host));
    json_object_set_new(j, "pid", json_integer(r->pid));
    json_object_set_new(j, "source", json_string(source_name(r->src)));
    json_object_set_new(j, "file", json_string(r->path));
    json_object_set_new(j, "files", json_integer(r->nsources));
    json_object_set_new(j, "fatal_signal", json_integer(r->fatal_signal));
    json_object_set_new(j, "fatal_signal_name",
                        r->fatal_signal ? json_string(sigabbrev_np(r->fatal_signal)
                                                          ? sigabbrev_np(r->fatal_signal)
                                                          : "?")
                                        : json_null());
    json_object_set_new(j, "time_fatal_ns", json_integer((json_int_t)r->t_fatal));
    json_object_set_new(j, "time_exited_ns", json_integer((json_int_t)r->t_closed));
    json_object_set_new(j, "entries", json_integer(r->n));
    json_object_set_new(j, "records_issued", json_integer((json_int_t)r->records_issued));
    json_object_set_new(j, "wrapped", json_boolean(r->n && r->e[0].record_id > 1));
    json_object_set_new(j, "torn", json_integer(r->ntorn));
    json_object_set_new(j, "corrupt", json_integer(r->ncorrupt));
    json_object_set_new(j, "last_op", last ? ccd_entry_json(d, r, last) : json_null());
    json_object_set_new(j, "blocked_in", d->blocked[w] >= 0
                                             ? ccd_entry_json(d, r, &r->e[d->blocked[w]])
                                             : json_null());
    return j;
}

void ccd_diag_procs(ccd_diag_t *d)
{
    const ccd_job_t *job = d->job;
    json_t *ranks = json_array();
    for (int32_t w = 0; w < job->world_size; w++) {
        const ccd_rank_t *r = job->rank[w];
        d->proc[w] = (uint8_t)proc_of(r);
        if (!r) continue;
        d->blocked[w] = blocked_op(d, r);
        first_error(d, r);
    }
    /* Ranks without a record are only listed: a world size read from a damaged
     * header must not turn into a million objects. */
    json_t *missing = json_array();
    for (int32_t w = 0; ranks && missing && w < job->world_size; w++)
        json_array_append_new(job->rank[w] ? ranks : missing,
                              job->rank[w] ? rank_json(d, w) : json_integer(w));
    json_object_set_new(d->report, "ranks", ranks);
    json_object_set_new(d->report, "missing_ranks", missing);
    if (d->first_error_rank >= 0) {
        const ccd_rank_t *r = job->rank[d->first_error_rank];
        for (uint32_t i = 0; i < r->n; i++)
            if (r->e[i].t_end == d->t_first_error && !ccd_entry_ok(&r->e[i])) {
                json_object_set_new(d->report, "first_error", ccd_entry_json(d, r, &r->e[i]));
                break;
            }
    }
}
