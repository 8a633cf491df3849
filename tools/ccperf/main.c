/*
 * ccperf - time ccomm's collectives the way nccl-tests times NCCL's.
 *
 *   ccrun -n 4 ccperf allreduce -b 8 -e 64M -f 4 -d float32 -o sum -c 1
 *
 * For each size from -b to -e: warm up, time -n calls out-of-place, then
 * in-place, check one call's result with -c 1, and print one row per size on
 * rank 0. Exits 1 if any value was wrong or an op failed, 2 on bad usage.
 * docs/ccperf.md is the manual.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ccperf.h"

static const char usage[] =
    "usage: ccrun -n N ccperf COLLECTIVE [options]\n"
    "  COLLECTIVE: %s\n"
    "  -b,--minbytes <min size in bytes>            default 32M\n"
    "  -e,--maxbytes <max size in bytes>            default 32M\n"
    "  -i,--stepbytes <increment size>              default 1M\n"
    "  -f,--stepfactor <increment factor>           default 1 (use -i)\n"
    "  -n,--iters <iteration count>                 default 20\n"
    "  -w,--warmup_iters <warmup iteration count>   default 5 (per size and placement)\n"
    "  -c,--check <0/1>                             check the results, default 1\n"
    "  -d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/bfloat16/float/double>\n"
    "                                               default float\n"
    "  -o,--op <sum/prod/min/max/avg/premulsum/band/bor/bxor>  default sum\n"
    "  -r,--root <root>                             default 0\n"
    "  -a,--average <0/1/2/3>                       time of rank 0 / mean / min / max, default 1\n"
    "  -A,--show_algo <0/1>                         print the algorithm that ran, default 0\n"
    "  -J,--json <file>                             also write the results as JSON\n"
    "  --budget <bytes>                             fewer iterations for large sizes: each size\n"
    "                                               runs min(-n, budget / size) (at least 1)\n"
    "  --settle <ms>                                wait this long after init before the first\n"
    "                                               call, default 30: op time stamps read the\n"
    "                                               TSC from 20 ms after init, clock_gettime\n"
    "                                               before (docs/ccperf.md)\n"
    "  put only:\n"
    "  --mode <signal/flush>                        puts then a signal and the wait for the\n"
    "                                               source's, or puts then a flush; default signal\n"
    "  --window <W>                                 puts per call before it, default 1\n"
    "  --origins <ring/one>                         every rank into rank + 1, or rank 0 into\n"
    "                                               rank 1 only; default ring\n"
    "  -h,--help\n"
    "Sizes take K, M, G suffixes (powers of 2). Run under ccrun (or any launcher ccomm knows).\n";

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0) return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1024.0; end++; break;
    case 'm': case 'M': v *= 1048576.0; end++; break;
    case 'g': case 'G': v *= 1073741824.0; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end || v > 1e15) return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* One option; returns 0, or -1 after printing what is wrong. */
static int set_option(perf_opts_t *o, int c, const char *arg)
{
    int bad = 0;
    switch (c) {
    case 'b': bad = parse_size(arg, &o->min_bytes); break;
    case 'e': bad = parse_size(arg, &o->max_bytes); break;
    case 'i': bad = parse_size(arg, &o->step_bytes); break;
    case 'f': o->step_factor = strtod(arg, NULL); bad = o->step_factor <= 0; break;
    case 'n': bad = parse_int(arg, 1, 1 << 30, &o->iters); break;
    case 'w': bad = parse_int(arg, 0, 1 << 30, &o->warmup); break;
    case 'c': bad = parse_int(arg, 0, 1, &o->check); break;
    case 'a': bad = parse_int(arg, 0, 3, &o->average); break;
    case 'r': bad = parse_int(arg, 0, 1 << 20, &o->root); break;
    case 'A': bad = parse_int(arg, 0, 1, &o->show_algo); break;
    case 'd': bad = cc_dtype_parse(arg, &o->dtype) != CC_OK; break;
    case 'o': bad = cc_redop_parse(arg, &o->redop) != CC_OK; break;
    case 'J': o->json = arg; break;
    case 'B': bad = parse_size(arg, &o->budget); break;
    case 'S': bad = parse_int(arg, 0, 60000, &o->settle_ms); break;
    case 'M':
        o->put_flush = !strcmp(arg, "flush");
        bad = !o->put_flush && strcmp(arg, "signal") != 0;
        break;
    case 'W': bad = parse_int(arg, 1, 1 << 20, &o->put_window); break;
    case 'P':
        o->put_one = !strcmp(arg, "one");
        bad = !o->put_one && strcmp(arg, "ring") != 0;
        break;
    default: return -1;
    }
    const char *name = c == 'M' ? "mode" : c == 'W' ? "window" : c == 'P' ? "origins" : NULL;
    if (bad && (name || c == 'S'))
        fprintf(stderr, "ccperf: bad value \"%s\" for --%s\n", arg, name ? name : "settle");
    else if (bad)
        fprintf(stderr, "ccperf: bad value \"%s\" for -%c\n", arg, c);
    if (name) o->put_set = 1;
    return bad ? -1 : 0;
}

/* 0 to run, 1 after --help, -1 on bad usage. */
static int parse_args(int argc, char **argv, perf_opts_t *o)
{
    static const struct option longs[] = {
        {"minbytes", 1, 0, 'b'},  {"maxbytes", 1, 0, 'e'},     {"stepbytes", 1, 0, 'i'},
        {"stepfactor", 1, 0, 'f'}, {"iters", 1, 0, 'n'},       {"warmup_iters", 1, 0, 'w'},
        {"check", 1, 0, 'c'},     {"datatype", 1, 0, 'd'},     {"op", 1, 0, 'o'},
        {"root", 1, 0, 'r'},      {"average", 1, 0, 'a'},      {"show_algo", 1, 0, 'A'},
        {"json", 1, 0, 'J'},      {"help", 0, 0, 'h'},         {"budget", 1, 0, 'B'},
        {"mode", 1, 0, 'M'},      {"window", 1, 0, 'W'},       {"origins", 1, 0, 'P'},
        {"settle", 1, 0, 'S'},    {0, 0, 0, 0}};
    *o = (perf_opts_t){.min_bytes = 32u << 20, .max_bytes = 32u << 20, .step_bytes = 1u << 20,
                       .step_factor = 1.0, .iters = 20, .warmup = 5, .check = 1, .average = 1,
                       .dtype = CC_FLOAT32, .redop = CC_SUM, .premul = 2.0, .put_window = 1,
                       .settle_ms = 30};
    int c;
    while ((c = getopt_long(argc, argv, "+b:e:i:f:n:w:c:d:o:r:a:A:J:h", longs, NULL)) != -1) {
        if (c == 'h') {
            printf(usage, perf_coll_names());
            return 1;
        }
        if (c == '?' || set_option(o, c, optarg) != 0) return -1;
    }
    /* The collective may come before or after the options. */
    if (optind < argc) o->coll = argv[optind++];
    while (optind < argc && (c = getopt_long(argc, argv, "+b:e:i:f:n:w:c:d:o:r:a:A:J:h", longs,
                                             NULL)) != -1)
        if (c == '?' || c == 'h' || set_option(o, c, optarg) != 0) return -1;
    if (!o->coll || optind < argc) {
        fprintf(stderr, "ccperf: %s\n", !o->coll ? "which collective?" : "too many arguments");
        return -1;
    }
    if (o->max_bytes < o->min_bytes) {
        fprintf(stderr, "ccperf: -e %zu is below -b %zu\n", o->max_bytes, o->min_bytes);
        return -1;
    }
    if (o->step_factor <= 1 && o->step_bytes == 0) {
        fprintf(stderr, "ccperf: -i 0 with -f %g would never end\n", o->step_factor);
        return -1;
    }
    return 0;
}

int perf_run(const perf_opts_t *o, const perf_coll_t *c, cc_comm_t *comm);

int main(int argc, char **argv)
{
    perf_opts_t o;
    int st = parse_args(argc, argv, &o);
    if (st != 0) {
        if (st < 0) fprintf(stderr, usage, perf_coll_names());
        return st > 0 ? 0 : 2;
    }
    const perf_coll_t *c = perf_coll_find(o.coll);
    if (!c) {
        fprintf(stderr, "ccperf: unknown collective \"%s\" (one of: %s)\n", o.coll,
                perf_coll_names());
        return 2;
    }
    if (o.put_set && strcmp(c->name, "put") != 0) {
        fprintf(stderr, "ccperf: --mode, --window and --origins apply to put only, not %s\n",
                c->name);
        return 2;
    }
    if (cc_dtype_size(o.dtype) && o.redop >= CC_BAND && !perf_dtype_is_int(o.dtype) &&
        c->has_redop) {
        fprintf(stderr, "ccperf: -o %s needs an integer -d\n", cc_redop_name(o.redop));
        return 2;
    }
    cc_comm_t *comm = NULL;
    cc_status_t cs = cc_comm_init_from_env(&comm, NULL);
    if (cs != CC_OK) {
        fprintf(stderr, "ccperf: cannot join the job: %s (run under ccrun)\n", cc_status_name(cs));
        return 1;
    }
    if (c->has_root && o.root >= cc_comm_size(comm)) {
        fprintf(stderr, "ccperf: root %d is not a rank of %d\n", o.root, cc_comm_size(comm));
        cc_comm_destroy(comm);
        return 2;
    }
    int rc = perf_run(&o, c, comm);
    if (rc == 0) perf_put_release();
    cs = cc_comm_destroy(comm);
    return rc ? rc : (cs != CC_OK);
}
