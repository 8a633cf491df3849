/* clog_test_util.h - helpers shared by the clog tests: ops, files, lines. */
#ifndef CLOG_TEST_UTIL_H
#define CLOG_TEST_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clog/clog_internal.h"
#include "engine/op.h"

static char clog_test_dir[64];

/* A temporary directory for the test's files, made on first use. */
static inline const char *tmpdir_make(void)
{
    if (!clog_test_dir[0]) {
        snprintf(clog_test_dir, sizeof(clog_test_dir), "/tmp/ccomm-clog-test.XXXXXX");
        if (!mkdtemp(clog_test_dir)) abort();
    }
    return clog_test_dir;
}

static inline int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* Remove the directory and its files. */
static inline void tmpdir_remove(void)
{
    if (clog_test_dir[0]) nftw(clog_test_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* An op as the door would hand it to hooks. */
static inline cc__op_t make_op(cc_op_type_t type, uint64_t op_id, uint64_t seq, size_t count)
{
    cc__op_t op;
    memset(&op, 0, sizeof(op));
    op.info.op_id = op_id;
    op.info.comm_id = 0xabcdef0123ull;
    op.info.comm_name = "world";
    op.info.rank = 0;
    op.info.size = 4;
    op.info.type = type;
    op.info.coll_seq = seq;
    op.info.root = -1;
    op.info.peer = -1;
    op.info.dtype = CC_FLOAT32;
    op.info.redop = CC_SUM;
    op.info.in_count = count;
    op.info.out_count = count;
    op.info.bytes = count * 4;
    op.info.status = CC_INPROGRESS;
    return op;
}

/* The comm's new_comm line, as the door's POST of COMM_INIT writes it: op
 * lines name their comm through it (op records carry no name). */
static inline void announce(cc_clog_t *c, uint64_t comm_id, const char *name)
{
    cc__op_t op = make_op(CC_OP_COMM_INIT, 0, 0, 0);
    op.info.comm_id = comm_id;
    op.info.comm_name = name;
    op.info.status = CC_OK;
    cc__clog_on_post(&op.info, c);
}

/* The whole file as lines (NULL-terminated array; free with lines_free). */
static inline char **read_lines(const char *path, int *n)
{
    FILE *f = fopen(path, "r");
    char **v = calloc(1, sizeof(char *));
    int k = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (f && (len = getline(&line, &cap, f)) >= 0) {
        if (len && line[len - 1] == '\n') line[len - 1] = '\0';
        v = realloc(v, (size_t)(k + 2) * sizeof(char *));
        v[k++] = strdup(line);
        v[k] = NULL;
    }
    free(line);
    if (f) fclose(f);
    *n = k;
    return v;
}

static inline void lines_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/*
 * Cut the trailing "|+S.UUUUUU" offset off a line in place; returns 1 when
 * the line ended in a well-formed offset.
 */
static inline int strip_offset(char *line)
{
    char *bar = strrchr(line, '|');
    if (!bar || (bar[1] != '+' && bar[1] != '-')) return 0;
    char *dot = strchr(bar + 2, '.');
    if (!dot || dot == bar + 2 || strlen(dot + 1) != 6) return 0;
    for (char *p = bar + 2; *p; p++)
        if (p != dot && (*p < '0' || *p > '9')) return 0;
    *bar = '\0';
    return 1;
}

#endif /* CLOG_TEST_UTIL_H */
