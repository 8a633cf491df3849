/*
 * rec_util.h - shared helpers of the recorder tests: a private directory for
 * rings and dumps, the recorder opened with chosen settings, and ops built
 * by hand and pushed through the subscribers as the core would.
 */
#ifndef REC_UTIL_H
#define REC_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccomm/ccomm.h"
#include "base/config.h"
#include "engine/op.h"
#include "recorder/reader.h"
#include "recorder/recorder.h"
#include "recorder/ring.h"

static char rec_dir[256];

static int rec_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

/* A fresh directory for rings (<dir>/rings) and dumps (<dir>/dumps). */
static inline void rec_make_dir(void)
{
    snprintf(rec_dir, sizeof(rec_dir), "/tmp/ccomm-rec-test-XXXXXX");
    if (!mkdtemp(rec_dir)) abort();
    char sub[300];
    snprintf(sub, sizeof(sub), "%s/rings", rec_dir);
    setenv("CCOMM_RECORDER_DIR", sub, 1);
    snprintf(sub, sizeof(sub), "%s/dumps", rec_dir);
    setenv("CCOMM_DUMP_DIR", sub, 1);
}

static inline void rec_remove_dir(void)
{
    if (rec_dir[0]) nftw(rec_dir, rec_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    rec_dir[0] = '\0';
}

/* cmocka fixtures: a fresh directory; afterwards the recorder closed and the
 * directory gone. */
static inline int rec_setup(void **state)
{
    (void)state;
    rec_make_dir();
    return 0;
}

static inline int rec_teardown(void **state)
{
    (void)state;
    cc__recorder_close();
    rec_remove_dir();
    return 0;
}

/* Open the recorder with `entries` slots and stacks on or off. */
static inline cc_status_t rec_open(int entries, int stack)
{
    char v[32];
    snprintf(v, sizeof(v), "%d", entries);
    setenv("CCOMM_RECORDER_ENTRIES", v, 1);
    setenv("CCOMM_RECORDER_STACK", stack ? "1" : "0", 1);
    cc__config_reload();
    return cc__recorder_open(0, 2, "test-job");
}

/* An op as the door would hand it to the PRE chain. */
static inline void rec_op(cc__op_t *op, cc_op_type_t type, uint64_t comm_id, uint64_t op_id,
                          uint64_t seq)
{
    memset(op, 0, sizeof(*op));
    cc_op_info_t *i = &op->info;
    i->op_id = op_id;
    i->comm_id = comm_id;
    i->comm_name = "world";
    i->rank = 0;
    i->size = 2;
    i->type = type;
    int p2p = type == CC_OP_SEND || type == CC_OP_RECV;
    i->coll_seq = p2p ? 0 : seq;
    i->p2p_seq = p2p ? seq : 0;
    i->root = -1;
    i->peer = p2p ? 1 : -1;
    i->dtype = CC_FLOAT32;
    i->redop = p2p ? CC_REDOP_COUNT : CC_SUM;
    i->in_count = type == CC_OP_RECV ? 0 : 1024;
    i->out_count = type == CC_OP_SEND ? 0 : 1024;
    i->bytes = 4096;
    i->timeout_ms = 600000;
    i->device = CC_DEVICE_CPU;
    i->status = CC_INPROGRESS;
    i->engine = "native";
}

/* Where a test keeps the record id of an op it runs through the recorder's
 * calls directly: the op's rec_id, as the door does. */
#define REC_ID(op) ((op)->rec_id)

/* PRE, START and POST with `status`. */
static inline void rec_run(cc__op_t *op, cc_status_t status)
{
    cc__recorder_pre(&op->info, &REC_ID(op));
    op->info.algorithm = "ring";
    op->info.transport = "shm";
    cc__recorder_start(&op->info, REC_ID(op));
    op->info.status = status;
    cc__recorder_post(&op->info, REC_ID(op));
}

/* A snapshot of the open ring (asserting success). */
static inline cc__fr_snapshot_t *rec_snapshot(void)
{
    cc__fr_reader_t *rd = NULL;
    cc__fr_snapshot_t *s = NULL;
    char err[256] = "";
    if (cc__fr_reader_open(cc__recorder_path(), &rd, err, sizeof(err)) != CC_OK ||
        cc__fr_reader_snapshot(rd, &s, err, sizeof(err)) != CC_OK) {
        fprintf(stderr, "snapshot failed: %s\n", err);
        abort();
    }
    cc__fr_reader_close(rd);
    return s;
}

#endif /* REC_UTIL_H */
