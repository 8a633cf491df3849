/*
 * finish.c - one record per rank. Several files may describe one rank: its
 * ring and its JSON dumps (the watchdog writes one per abort), copies from
 * several hosts' directories, rings of a restarted rank. ccdump keeps the
 * richest one (the latest snapshot of the newest process: its state is a
 * superset of the earlier ones), takes what only a ring knows (is the
 * process alive, did it exit normally) from the ring when a dump wins, and
 * counts the rest as duplicates.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

/* The job most files belong to; files of other jobs are set aside. */
static void pick_job(ccd_job_t *job)
{
    uint32_t best = 0;
    for (uint32_t i = 0; i < job->nloaded; i++) {
        const char *id = job->loaded[i]->job;
        uint32_t n = 0;
        if (!id[0]) continue;
        for (uint32_t j = 0; j < job->nloaded; j++)
            n += !strcmp(job->loaded[j]->job, id);
        if (n > best) {
            best = n;
            snprintf(job->job_id, sizeof(job->job_id), "%s", id);
        }
    }
}

static int belongs(const ccd_job_t *job, const ccd_rank_t *r)
{
    return !r->job[0] || !job->job_id[0] || !strcmp(r->job, job->job_id);
}

static uint32_t finished(const ccd_rank_t *r)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n; i++)
        n += ccd_entry_done(&r->e[i]);
    return n;
}

/* > 0 when a is richer than b. */
static int richer(const ccd_rank_t *a, const ccd_rank_t *b)
{
    int same_proc = a->pid == b->pid && !strcmp(a->host, b->host);
    if (!same_proc && a->t_opened && b->t_opened && a->t_opened != b->t_opened)
        return a->t_opened > b->t_opened ? 1 : -1; /* the restarted process */
    if (a->records_issued != b->records_issued) return a->records_issued > b->records_issued ? 1 : -1;
    uint32_t fa = finished(a), fb = finished(b);
    if (fa != fb) return fa > fb ? 1 : -1;
    if ((a->src == CCD_SRC_RING) != (b->src == CCD_SRC_RING)) return a->src == CCD_SRC_RING ? 1 : -1;
    return a->t_taken > b->t_taken ? 1 : a->t_taken < b->t_taken ? -1 : 0;
}

/* A dump won: the process's fate is known only to its ring. */
static void merge_ring_facts(ccd_rank_t *win, const ccd_rank_t *ring)
{
    if (ring->src != CCD_SRC_RING || ring->pid != win->pid || strcmp(ring->host, win->host)) return;
    win->alive = ring->alive;
    win->stopped = ring->stopped;
    win->closed = ring->closed;
    win->t_closed = ring->t_closed;
    if (ring->fatal_signal) {
        win->fatal_signal = ring->fatal_signal;
        win->t_fatal = ring->t_fatal;
    }
    win->t_opened = ring->t_opened;
}

static int32_t world_size_of(ccd_job_t *job)
{
    int32_t w = 0;
    for (uint32_t i = 0; i < job->nloaded; i++) {
        const ccd_rank_t *r = job->loaded[i];
        if (!belongs(job, r) || r->rank < 0) continue;
        if (r->world_size > CCD_MAX_WORLD)
            ccd_note(job, "%s: world size %d is beyond what ccdump handles (%d): ignored (a "
                          "damaged header?)", r->path, r->world_size, CCD_MAX_WORLD);
        else if (r->world_size > w)
            w = r->world_size;
        if (r->rank + 1 > w) w = r->rank + 1;
    }
    for (uint32_t g = 0; g < job->ncomms; g++)
        for (int32_t k = 0; k < job->comms[g].nlisted; k++)
            if (job->comms[g].members[k] + 1 > w) w = job->comms[g].members[k] + 1;
    return w;
}

static void choose(ccd_job_t *job)
{
    for (uint32_t i = 0; i < job->nloaded; i++) {
        ccd_rank_t *r = job->loaded[i];
        if (!belongs(job, r)) {
            ccd_note(job, "%s: job \"%.60s\", not \"%.60s\": set aside", r->path, r->job,
                     job->job_id);
            continue;
        }
        if (r->rank < 0 || r->rank >= job->world_size) {
            ccd_note(job, "%s: no usable rank (%d)", r->path, r->rank);
            continue;
        }
        ccd_rank_t **slot = &job->rank[r->rank];
        if (*slot) job->ndup++;
        if (!*slot || richer(r, *slot) > 0) *slot = r;
    }
    for (uint32_t i = 0; i < job->nloaded; i++) {
        ccd_rank_t *r = job->loaded[i];
        ccd_rank_t *w = r->rank >= 0 && r->rank < job->world_size ? job->rank[r->rank] : NULL;
        if (!w || w == r) continue;
        w->nsources++;
        if (w->src != CCD_SRC_RING) merge_ring_facts(w, r);
    }
}

static void times(ccd_job_t *job)
{
    for (int32_t k = 0; k < job->world_size; k++) {
        const ccd_rank_t *r = job->rank[k];
        if (!r) continue;
        for (uint32_t i = 0; i < r->n; i++) {
            /* Lifecycle events (a destroy at exit, long after a hang) do not move the end. */
            uint64_t t = (r->e[i].flags & CCD_EF_LIFE) ? 0 : ccd_entry_last_time(&r->e[i]);
            if (t > job->t_ref) job->t_ref = t;
            if (r->e[i].t_enq && (!job->t_min || r->e[i].t_enq < job->t_min))
                job->t_min = r->e[i].t_enq;
        }
        /* A live process is described as of now: its pending ops are still waiting. */
        uint64_t extra[3] = {r->t_fatal, r->t_dump, r->alive == 1 ? r->t_taken : 0};
        for (int j = 0; j < 3; j++)
            if (extra[j] > job->t_ref) job->t_ref = extra[j];
    }
    if (!job->t_min) job->t_min = job->t_ref;
}

int ccd_job_finish(ccd_job_t *job)
{
    pick_job(job);
    job->world_size = world_size_of(job);
    if (job->world_size > CCD_MAX_WORLD) job->world_size = CCD_MAX_WORLD;
    job->rank = calloc((size_t)job->world_size + 1, sizeof(*job->rank));
    if (!job->rank) return -1;
    for (uint32_t i = 0; i < job->nloaded; i++)
        job->loaded[i]->nsources = 1;
    choose(job);
    times(job);
    return 0;
}
