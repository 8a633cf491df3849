/*
 * fuzz_ring.c - bytes as a ring file (fuzz.h). The input is written to a
 * memfd and read through its /proc path, as ccdump reads a file. The pid
 * word is cleared so the reader never waits for a "live" writer (a random
 * pid may exist; waiting on a slot it pretends to hold is legitimate but
 * slow, and not what is being tested). A file shorter than its header's
 * file_size (up to 1 GiB) is extended with a hole, as a sparse ring is on
 * disk: a seed of a few KiB can claim millions of empty slots.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "load.h"
#include "recorder/dump.h"
#include "recorder/ring.h"

const char *const fuzz_dictionary[] = {NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t *buf;
    static size_t cap;
    if (size >= cap) {
        free(buf);
        buf = malloc(size + 1);
        cap = buf ? size + 1 : 0;
        if (!buf) return 0;
    }
    memcpy(buf, data, size);
    if (size >= offsetof(cc__fr_header_t, pid) + 4) memset(buf + offsetof(cc__fr_header_t, pid), 0, 4);
    int fd = memfd_create("fuzz-ring", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (write(fd, buf, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    uint64_t fsize = 0;
    if (size >= offsetof(cc__fr_header_t, file_size) + 8)
        memcpy(&fsize, buf + offsetof(cc__fr_header_t, file_size), 8);
    if (fsize > size && fsize <= (1u << 30) && ftruncate(fd, (off_t)fsize)) {
        close(fd);
        return 0;
    }
    char path[64], err[512];
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    /* As ccd_load_ring reads a ring, keeping the snapshot for the recorder's dump builder. */
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    ccd_job_t *job = ccd_job_new();
    ccd_rank_t *r = ccd_rank_new();
    if (job && r && cc__fr_reader_open(path, &rd, err, sizeof(err)) == CC_OK &&
        cc__fr_reader_snapshot(rd, &s, err, sizeof(err)) == CC_OK) {
        json_decref(cc__fr_json(s, 0));
        if (!ccd_rank_from_snapshot(job, r, s) && !ccd_job_add(job, r)) {
            r = NULL;
            fuzz_everything(job);
        }
    }
    ccd_rank_free(r);
    cc__fr_snapshot_free(s);
    cc__fr_reader_close(rd);
    ccd_job_free(job);
    close(fd);
    return 0;
}

/* Small valid rings: 8 slots, a few comms, ops of every class, some wrapped. */
static size_t make_ring(const char *path, int rank, int nops, uint8_t **out)
{
    cc__fr_ring_params_t p = {.capacity = 8, .stack_depth = rank ? 2 : 0, .comm_capacity = 4,
                              .rank_capacity = 16, .rank = rank, .world_size = 4, .host = "fz",
                              .job_id = "fuzz"};
    cc__fr_ring_t *r = NULL;
    if (cc__fr_ring_create(path, &p, &r) != CC_OK) return 0;
    cc__fr_comm_t *c = r->comms;
    c->comm_id = 5, c->size = 4, c->rank = rank, c->ranks_count = 4;
    snprintf(c->name, sizeof(c->name), "world");
    for (int i = 0; i < 4; i++)
        r->ranks[i] = i;
    r->hdr->rank_used = 4, r->hdr->comm_count = 1;
    for (int i = 1; i <= nops; i++) {
        cc__fr_entry_t e = {0};
        int p2p = i % 3 == 0;
        e.comm_id = 5, e.op_id = (uint64_t)i, e.type = p2p ? (rank & 1 ? CC_OP_RECV : CC_OP_SEND) : CC_OP_ALLREDUCE;
        e.coll_seq = p2p ? 0 : (uint64_t)i, e.p2p_seq = p2p ? (uint64_t)i / 3 : 0, e.rank = rank, e.size = 4;
        e.peer = p2p ? rank ^ 1 : -1, e.root = -1, e.dtype = CC_FLOAT32, e.redop = p2p ? CC_REDOP_COUNT : CC_SUM;
        e.in_count = e.out_count = 16, e.bytes = 64, e.t_enqueue_ns = 1000000ull * (uint64_t)i;
        uint64_t rid = cc__fr_ring_pre(r, &e, NULL);
        cc__fr_update_t u = {i == nops ? CC__FR_TIMED_OUT : CC__FR_COMPLETED, i == nops ? CC_ERR_TIMEOUT : CC_OK,
                             e.t_enqueue_ns + 5, e.t_enqueue_ns + 50, 1, 0, "ring", "shm"};
        cc__fr_ring_update(r, rid, &u);
    }
    size_t n = r->size;
    *out = malloc(n);
    if (*out) memcpy(*out, r->hdr, n);
    cc__fr_ring_destroy(r);
    unlink(path);
    return *out ? n : 0;
}

/* Issue 14, finding 4: 64 entries, each on a comm of its own that says 2^20 ranks. */
static size_t big_comms(const char *path, uint8_t **out)
{
    cc__fr_ring_params_t p = {.capacity = 64, .rank = 0, .world_size = 4, .host = "fz",
                              .job_id = "fuzz"};
    cc__fr_ring_t *r = NULL;
    if (cc__fr_ring_create(path, &p, &r) != CC_OK) return 0;
    for (int i = 0; i < 64; i++) {
        cc__fr_entry_t e = {.comm_id = 100 + (uint64_t)i, .type = CC_OP_ALLREDUCE,
                            .dtype = CC_FLOAT32, .redop = CC_SUM, .rank = 0, .size = 1 << 20,
                            .root = -1, .peer = -1, .coll_seq = 1, .op_id = (uint64_t)i + 1,
                            .in_count = 4, .out_count = 4, .bytes = 16, .t_enqueue_ns = 1000};
        cc__fr_ring_pre(r, &e, NULL);
    }
    size_t n = r->size;
    *out = malloc(n);
    if (*out) memcpy(*out, r->hdr, n);
    cc__fr_ring_destroy(r);
    unlink(path);
    return *out ? n : 0;
}

/* Issue 14, finding 7: a valid ring whose header says 2^21 slots (the rest a hole). */
static size_t sparse(const char *path, uint8_t **out)
{
    size_t n = make_ring(path, 0, 3, out);
    if (!n) return 0;
    cc__fr_header_t h;
    memcpy(&h, *out, sizeof(h));
    uint32_t cap = 1u << 21;
    uint64_t fsize = h.header_size + (uint64_t)cap * h.entry_size;
    memcpy(*out + offsetof(cc__fr_header_t, capacity), &cap, 4);
    memcpy(*out + offsetof(cc__fr_header_t, file_size), &fsize, 8);
    return n; /* the target extends it to file_size with a hole */
}

int fuzz_make_seeds(uint8_t **bufs, size_t *lens, int max)
{
    char path[64];
    int n = 0;
    for (int k = 0; k < 5 && n < max; k++) {
        snprintf(path, sizeof(path), "/tmp/ccdump-fuzz-seed-%d-%d", (int)getpid(), k);
        lens[n] = k < 3   ? make_ring(path, k, 3 + 5 * k, &bufs[n])
                  : k == 3 ? big_comms(path, &bufs[n])
                           : sparse(path, &bufs[n]);
        n += lens[n] != 0;
    }
    return n;
}
