/*
 * report.c - ccperf's output: the nccl-tests table on stdout (rank 0) and
 * the same results as JSON (-J).
 *
 *   #       size         count      type   redop    root     time   algbw   busbw #wrong ...
 *       1048576        262144     float     sum      -1   312.50    3.36    5.03      0 ...
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccperf.h"

struct perf_report {
    const perf_opts_t *o;
    const perf_coll_t *c;
    int size;
    const char *transport;
    double busbw_sum;
    int busbw_n;
    json_t *rows;
};

static const char *redop_label(cc_redop_t op)
{
    return op == CC_PREMUL_SUM ? "premulsum" : cc_redop_name(op);
}

perf_report_t *perf_report_new(const perf_opts_t *o, const perf_coll_t *c, int size,
                               const char *transport)
{
    perf_report_t *r = calloc(1, sizeof(*r));
    if (!r) return NULL;
    r->o = o;
    r->c = c;
    r->size = size;
    r->transport = transport;
    r->rows = json_array();
    return r;
}

void perf_report_header(perf_report_t *r, cc_comm_t *comm)
{
    const perf_opts_t *o = r->o;
    char host[64] = "?";
    gethostname(host, sizeof(host) - 1);
    printf("# ccperf %s: %d ranks, transport %s, minBytes %zu maxBytes %zu step: ", r->c->name,
           r->size, r->transport, o->min_bytes, o->max_bytes);
    if (o->step_factor > 1)
        printf("%g(factor)", o->step_factor);
    else
        printf("%zu(bytes)", o->step_bytes);
    printf(" warmup iters: %d iters: %d validation: %d average: %d settle: %d ms", o->warmup,
           o->iters, o->check, o->average, o->settle_ms);
    if (!strcmp(r->c->name, "put"))
        printf(" mode: %s window: %d origins: %s", o->put_flush ? "flush" : "signal",
               o->put_window, o->put_one ? "one" : "ring");
    printf("\n#\n");
    printf("# Using devices\n#  Rank %2d Pid %6d on %10s device cpu (communicator %s, %d ranks)\n#\n",
           cc_comm_rank(comm), (int)getpid(), host, cc_comm_name(comm), r->size);
    const char *algo = o->show_algo ? "  algorithm" : "";
    printf("# %60s%s%s\n", "", "out-of-place                       in-place", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s%s  %7s  %6s  %6s  %6s%s\n", "size",
           "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", algo, "time",
           "algbw", "busbw", "#wrong", algo);
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s%s  %7s  %6s  %6s  %6s\n", "(B)",
           "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", o->show_algo ? "           " : "",
           "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
}

static void print_result(const perf_opts_t *o, const perf_result_t *res)
{
    if (!res) {
        printf("  %7s  %6s  %6s  %6s%s", "N/A", "N/A", "N/A", "N/A", o->show_algo ? "  N/A        " : "");
        return;
    }
    if (res->time_us >= 10000)
        printf("  %7.0f", res->time_us);
    else
        printf("  %7.2f", res->time_us);
    printf("  %6.2f  %6.2f  %6llu", res->algbw, res->busbw, (unsigned long long)res->wrong);
    if (o->show_algo) printf("  %-11s", res->algo ? res->algo : "-");
}

static json_t *result_json(const perf_result_t *res)
{
    if (!res) return json_null();
    return json_pack("{s:f, s:f, s:f, s:I, s:s?}", "time_us", res->time_us, "algbw",
                     res->algbw, "busbw", res->busbw, "wrong", (json_int_t)res->wrong,
                     "algorithm", res->algo);
}

void perf_report_row(perf_report_t *r, const perf_shape_t *s, const perf_result_t *oop,
                     const perf_result_t *ip)
{
    const perf_opts_t *o = r->o;
    int root = r->c->has_root ? o->root : -1;
    const char *redop = r->c->has_redop ? redop_label(o->redop) : "none";
    printf("  %10zu  %12zu  %8s  %6s  %6d", s->bytes, s->count, perf_dtype_label(o->dtype),
           redop, root);
    print_result(o, oop);
    print_result(o, ip);
    printf("\n");
    fflush(stdout);
    for (int k = 0; k < 2; k++) {
        const perf_result_t *res = k ? ip : oop;
        if (!res) continue;
        r->busbw_sum += res->busbw;
        r->busbw_n++;
    }
    json_array_append_new(r->rows, json_pack("{s:I, s:I, s:s, s:s, s:i, s:o, s:o}", "size",
                                             (json_int_t)s->bytes, "count", (json_int_t)s->count,
                                             "type", perf_dtype_label(o->dtype), "redop", redop,
                                             "root", root, "out_of_place", result_json(oop),
                                             "in_place", result_json(ip)));
}

static int write_json(perf_report_t *r, uint64_t wrong, double avg)
{
    const perf_opts_t *o = r->o;
    json_t *doc = json_pack(
        "{s:s, s:i, s:s, s:s, s:s, s:i, s:{s:I, s:I, s:f, s:I, s:i, s:i, s:i, s:i, s:i}, s:O, s:I, "
        "s:b, s:f}",
        "collective", r->c->name, "ranks", r->size, "transport", r->transport, "type",
        perf_dtype_label(o->dtype), "redop", redop_label(o->redop), "root", o->root, "options",
        "min_bytes", (json_int_t)o->min_bytes, "max_bytes", (json_int_t)o->max_bytes,
        "step_factor", o->step_factor, "step_bytes", (json_int_t)o->step_bytes, "iters", o->iters,
        "warmup", o->warmup, "check", o->check, "average", o->average, "settle_ms", o->settle_ms,
        "results", r->rows,
        "out_of_bounds", (json_int_t)wrong, "ok", wrong == 0, "avg_busbw", avg);
    if (doc && !strcmp(r->c->name, "put"))
        json_object_set_new(json_object_get(doc, "options"), "put",
                            json_pack("{s:s, s:i, s:s}", "mode", o->put_flush ? "flush" : "signal",
                                      "window", o->put_window, "origins",
                                      o->put_one ? "one" : "ring"));
    if (!doc || json_dump_file(doc, o->json, JSON_INDENT(2)) != 0) {
        fprintf(stderr, "ccperf: cannot write %s\n", o->json);
        json_decref(doc);
        return -1;
    }
    json_decref(doc);
    return 0;
}

int perf_report_end(perf_report_t *r, uint64_t wrong_total)
{
    double avg = r->busbw_n ? r->busbw_sum / r->busbw_n : 0.0;
    printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong_total,
           wrong_total ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n#\n", avg);
    fflush(stdout);
    return r->o->json ? write_json(r, wrong_total, avg) : 0;
}

void perf_report_free(perf_report_t *r)
{
    if (!r) return;
    json_decref(r->rows);
    free(r);
}
