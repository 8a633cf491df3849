/*
 * test_cclog_parse.c - cclog's parser beyond the data suite: what the
 * writer produces parses back exactly (round trip), lines too long to keep,
 * time and list arguments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cclog.h"
#include "clog/clog_internal.h"
#include "engine/op.h"

/* A file with every kind of line the logger writes. */
static void write_all_kinds(const char *path)
{
    cc_clog_config_t conf = CC_CLOG_CONFIG_INIT;
    conf.rank = 7;
    cc_clog_t *c;
    assert_int_equal(cc_clog_open(path, &conf, &c), CC_OK);
    cc__op_t op;
    memset(&op, 0, sizeof(op));
    op.info = (cc_op_info_t){.op_id = 99,
                             .comm_id = 0xfeed,
                             .comm_name = "we|ird%name",
                             .rank = 1,
                             .size = 3,
                             .type = CC_OP_REDUCE_SCATTERV,
                             .coll_seq = 5,
                             .root = -1,
                             .peer = -1,
                             .dtype = CC_BFLOAT16,
                             .redop = CC_AVG,
                             .in_count = 300,
                             .out_count = 100,
                             .status = CC_OK};
    op.info.parent_comm_id = 0xabc;
    cc__clog_on_post(&(cc__op_t){.info = {.type = CC_OP_COMM_INIT,
                                          .comm_id = 0xabc,
                                          .comm_name = "world",
                                          .size = 3,
                                          .status = CC_OK}}
                          .info,
                     c);
    cc__op_t init = op;
    init.info.type = CC_OP_COMM_INIT;
    cc__clog_on_post(&init.info, c);
    op.info.t_enqueue_ns = c->base_mono_ns + 1000;
    cc__clog_on_pre(&op.info, c);
    cc__clog_on_start(&op.info, c);
    cc__clog_on_wait(&op.info, c);
    cc__clog_on_post(&op.info, c);
    cc_abort_info_t ai = {
        NULL, 0xfeed, "we|ird%name", 1, 3, CC_ERR_TIMEOUT, "it\ttook|too%long", &op.info, 0};
    cc__clog_on_abort(&ai, c);
    cc__op_t d = init;
    d.info.type = CC_OP_COMM_DESTROY;
    cc__clog_on_post(&d.info, c);
    assert_int_equal(cc_clog_close(c), CC_OK);
}

/* Every kind of line the logger writes parses with no error, values intact. */
static void test_round_trip(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ccomm-cclog-rt.%d.log", (int)getpid());
    write_all_kinds(path);
    char *err = NULL;
    size_t elen = 0;
    FILE *e = open_memstream(&err, &elen);
    cl_log_t *log = cl_log_load(path, e);
    fclose(e);
    assert_non_null(log);
    if (elen) fprintf(stderr, "%s", err);
    assert_int_equal(elen, 0);
    assert_int_equal(log->nerrors, 0);
    assert_int_equal(log->rank, 7);
    assert_true(log->end_seen);
    assert_int_equal(log->nsig, 1);
    assert_string_equal(log->sigs[0].comm, "we|ird%name");
    assert_string_equal(log->sigs[0].op, "reduce_scatter_v");
    assert_string_equal(log->sigs[0].dtype, "bf16");
    assert_string_equal(log->sigs[0].red_op, "avg");
    assert_int_equal(log->sigs[0].elem_size, 2);
    /* V, new_comm x2, split, sig, Q, S, W, E, A, end_comm, END */
    assert_int_equal(log->nentries, 12);
    const char kinds[] = {CL_HEADER, CL_NEW_COMM, CL_NEW_COMM, CL_SPLIT, CL_SIG,      CL_EVENT,
                          CL_EVENT,  CL_EVENT,    CL_EVENT,    CL_EVENT, CL_END_COMM, CL_END};
    for (int i = 0; i < 12; i++)
        assert_int_equal(log->entries[i].kind, kinds[i]);
    assert_int_equal(log->entries[5].t_us, log->base_us + 1);
    assert_string_equal(log->entries[9].msg, "it\ttook|too%long");
    assert_string_equal(log->entries[9].status, "ERR_TIMEOUT");
    cl_log_free(log);
    free(err);
    unlink(path);
}

/* A line over 1 MiB is reported and skipped; reading goes on after it. */
static void test_long_line(void **state)
{
    (void)state;
    char path[64];
    snprintf(path, sizeof(path), "/tmp/ccomm-cclog-long.%d.log", (int)getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "V|1|base_timestamp=1.000000|rank=0|pid=1|host=h|events=QSEWA\n");
    fputs("C1|sig|barrier|in_count=0|out_count=0|dtype=-|red_op=-|root=-1|peer=-1|comm=", f);
    for (int i = 0; i < (1 << 20); i++)
        fputc('x', f);
    fputs("\nEND|dropped=0|+0.000001\n", f);
    for (int i = 0; i < (1 << 20) + 10; i++)
        fputc('y', f); /* and a cut one */
    fclose(f);
    char *err = NULL;
    size_t elen = 0;
    FILE *e = open_memstream(&err, &elen);
    cl_log_t *log = cl_log_load(path, e);
    fclose(e);
    assert_non_null(log);
    assert_false(log->unusable);
    assert_true(log->end_seen);
    assert_int_equal(log->nerrors, 2);
    assert_non_null(strstr(err, ":2: line longer than 1 MiB, skipped"));
    assert_non_null(strstr(err, ":4: line longer than 1 MiB, skipped"));
    cl_log_free(log);
    free(err);
    unlink(path);
}

static void test_args(void **state)
{
    (void)state;
    int rel;
    int64_t us;
    assert_int_equal(cclog_parse_when("+12.5", &rel, &us), 0);
    assert_true(rel);
    assert_int_equal(us, 12500000);
    assert_int_equal(cclog_parse_when("1714234567.000001", &rel, &us), 0);
    assert_false(rel);
    assert_int_equal(us, 1714234567000001ll);
    assert_int_equal(cclog_parse_when("7", &rel, &us), 0);
    assert_int_equal(us, 7000000);
    const char *bad[] = {"", "+", ".5", "1.", "1.1234567", "1e3", "-1", "1.5x", "9999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cclog_parse_when(bad[i], &rel, &us), -1);
    long long *v;
    int n;
    assert_int_equal(cclog_parse_int_list("3,1,20", &v, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[2], 20);
    free(v);
    const char *badl[] = {"", ",", "1,", ",1", "1,,2", "a", "-1", "1 2"};
    for (size_t i = 0; i < sizeof(badl) / sizeof(badl[0]); i++) {
        assert_int_equal(cclog_parse_int_list(badl[i], &v, &n), -1);
        assert_null(v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
