/*
 * load_ring.c - a ring file (.ccfr) into the job model, through the
 * recorder's validating reader (lib/recorder/reader.h): everything the
 * reader accepts has been checked against the file's size and the format's
 * bounds, so this file only translates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load.h"
#include "recorder/opclass.h"

static uint64_t realtime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void header_facts(ccd_rank_t *r, const cc__fr_snapshot_t *s)
{
    const cc__fr_header_t *h = &s->hdr;
    r->rank = h->rank;
    r->world_size = h->world_size;
    snprintf(r->host, sizeof(r->host), "%s", h->host);
    snprintf(r->job, sizeof(r->job), "%s", h->job_id);
    snprintf(r->lib, sizeof(r->lib), "%s", h->lib_version);
    r->pid = h->pid;
    r->closed = h->closed_ns != 0;
    r->t_closed = cc__fr_snap_realtime(s, h->closed_ns);
    r->fatal_signal = (int32_t)(h->fatal_signal < 256 ? h->fatal_signal : 255);
    r->t_fatal = cc__fr_snap_realtime(s, h->fatal_signal_ns);
    r->t_dump = cc__fr_snap_realtime(s, h->last_dump_ns);
    r->t_opened = h->realtime_base_ns;
    r->t_taken = realtime_now();
    r->dumps = h->dump_count;
    r->records_issued = h->next_record_id;
    r->skipped = h->skipped;
    r->dropped = h->dropped;
    r->capacity = h->capacity;
    r->ntorn = s->ntorn;
    r->ncorrupt = s->ncorrupt;
}

/* The ring's comm table: job comms, and this rank's view of each. */
static int ring_comms(ccd_job_t *job, ccd_rank_t *r, const cc__fr_snapshot_t *s, int *map)
{
    for (uint32_t i = 0; i < s->ncomms; i++) {
        const cc__fr_comm_t *c = &s->comms[i];
        char key[24];
        snprintf(key, sizeof(key), "%llu", (unsigned long long)c->comm_id);
        const int32_t *m = cc__fr_snap_comm_ranks(s, c);
        int32_t size = c->size <= CCD_MAX_WORLD ? c->size : -1;
        int g = ccd_comm_intern(job, key, c->name, size, m && size >= 0 ? m : NULL);
        int k = g < 0 ? -1 : ccd_rank_comm(r, (uint32_t)g);
        if (k < 0) return -1;
        if (c->parent_id) job->comms[g].parent_id = c->parent_id;
        ccd_rcomm_t *rc = &r->comms[k];
        rc->rank = c->rank;
        rc->last_enq = c->last_enqueued;
        rc->last_start = c->last_started;
        rc->last_done = c->last_completed;
        rc->aborted = (c->flags & CC__FR_CF_ABORTED) != 0;
        rc->destroyed = (c->flags & CC__FR_CF_DESTROYED) != 0;
        rc->abort_reason = rc->aborted ? (int32_t)c->abort_reason : 0;
        rc->t_aborted = cc__fr_snap_realtime(s, c->aborted_ns);
        ccd_comm_set_member(job, (uint32_t)g, c->rank, r->rank);
        map[i] = k;
    }
    return 0;
}

/* The rank's comm index of an entry; comms without a record are made from the entry. */
static int entry_comm(ccd_job_t *job, ccd_rank_t *r, const cc__fr_snapshot_t *s,
                      const cc__fr_entry_t *e, const int *map)
{
    const cc__fr_comm_t *c = cc__fr_snap_comm(s, e);
    if (c) return map[c - s->comms];
    char key[24];
    snprintf(key, sizeof(key), "%llu", (unsigned long long)e->comm_id);
    int32_t size = e->size >= 0 && e->size <= CCD_MAX_WORLD ? e->size : -1;
    int g = ccd_comm_intern(job, key, NULL, size, NULL);
    int k = g < 0 ? -1 : ccd_rank_comm(r, (uint32_t)g);
    if (k >= 0 && r->comms[k].rank < 0) r->comms[k].rank = e->rank;
    return k;
}

static void entry_copy(ccd_entry_t *d, const cc__fr_snapshot_t *s, const cc__fr_entry_t *e)
{
    int cls = cc__fr_op_class(e->type);
    d->record_id = e->record_id;
    d->op_id = e->op_id;
    d->seq = cls == CC__FR_CLASS_P2P ? e->p2p_seq : e->coll_seq;
    d->in_count = e->in_count;
    d->out_count = e->out_count;
    d->bytes = e->bytes;
    d->t_enq = cc__fr_snap_realtime(s, e->t_enqueue_ns);
    d->t_start = cc__fr_snap_realtime(s, e->t_start_ns);
    d->t_end = cc__fr_snap_realtime(s, e->t_end_ns);
    d->timeout_ms = e->timeout_ms;
    d->peer = e->peer;
    d->root = e->root;
    d->status = e->status;
    d->tag = e->tag;
    d->op = e->type;
    unsigned dt = cc__fr_dtype_of(e->dtype); /* checked below CC__FR_DTYPE_CODES */
    d->dtype = dt < CC_DTYPE_COUNT ? (uint8_t)dt : CCD_NONE8;
    d->redop = e->redop < CC_REDOP_COUNT ? e->redop : CCD_NONE8;
    d->state = (uint8_t)e->state;
    d->flags = cls == CC__FR_CLASS_COLL ? CCD_EF_COLL : cls == CC__FR_CLASS_P2P ? CCD_EF_P2P
                                                                                : CCD_EF_LIFE;
    if (e->type == CC_OP_SEND || e->type == CC_OP_SEND_BYTES) d->flags |= CCD_EF_SEND;
    if (e->type == CC_OP_RECV || e->type == CC_OP_RECV_BYTES) d->flags |= CCD_EF_RECV;
    if (e->flags & CC__FR_EF_ABORT_SEEN) d->flags |= CCD_EF_ABORT_SEEN;
}

int ccd_rank_from_snapshot(ccd_job_t *job, ccd_rank_t *r, const cc__fr_snapshot_t *s)
{
    header_facts(r, s);
    int *map = calloc(s->ncomms + 1, sizeof(int));
    if (!map || ring_comms(job, r, s, map)) goto oom;
    r->e = malloc(((size_t)s->nentries + 1) * sizeof(ccd_entry_t)); /* once, not by doubling */
    if (!r->e) goto oom;
    r->cap = s->nentries + 1;
    for (uint32_t i = 0; i < s->nentries; i++) {
        const cc__fr_entry_t *e = cc__fr_snap_entry(s, i);
        int k = entry_comm(job, r, s, e, map);
        ccd_entry_t *d = k < 0 ? NULL : ccd_rank_push(r);
        if (!d) goto oom;
        entry_copy(d, s, e);
        d->comm = (uint16_t)k;
        /* Members the comm record did not know: each entry names its rank. */
        if (e->rank >= 0) ccd_comm_set_member(job, r->comms[k].g, e->rank, r->rank);
    }
    free(map);
    return 0;
oom:
    free(map);
    return -1;
}

int ccd_load_ring(ccd_job_t *job, const char *path, ccd_rank_t **out, char *err, size_t errlen)
{
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    ccd_rank_t *r = NULL;
    int rc = CCD_LOAD_BAD;
    if (cc__fr_reader_open(path, &rd, err, errlen) != CC_OK) goto out;
    if (cc__fr_reader_snapshot(rd, &s, err, errlen) != CC_OK) goto out;
    r = ccd_rank_new();
    if (!r || !(r->path = strdup(path)) || ccd_rank_from_snapshot(job, r, s)) {
        snprintf(err, errlen, "%s", ccd_load_failure(job));
        rc = job->comms_full ? CCD_LOAD_BAD : CCD_LOAD_OOM;
        goto out;
    }
    r->src = CCD_SRC_RING;
    if (s->ntorn || s->ncorrupt)
        ccd_note(job, "%s: %u torn and %u corrupt slots left out", path, s->ntorn, s->ncorrupt);
    *out = r;
    r = NULL;
    rc = CCD_LOAD_OK;
out:
    ccd_rank_free(r);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(rd);
    return rc;
}
