/*
 * cli.c - the ccdump command line: dispatch to a command, the overview
 * help, and the option parser the commands share.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ccdump.h"
#include "base/log.h"
#include "subcmd.h"

static const char usage[] =
    "usage: ccdump COMMAND [OPTIONS] FILE|DIR...\n"
    "Read ccomm flight recorder rings (*.ccfr, of live or dead processes), ccomm JSON\n"
    "dumps and PyTorch / torchcomms flight recorder dumps (version 2.x; pickle, their\n"
    "default, through a reader that refuses any opcode that could run code; or JSON).\n"
    "Inputs are files or directories (searched a few levels deep), from one or several\n"
    "hosts; each rank is counted once (its richest record). A PyTorch dump's rank is\n"
    "the number that ends its name, <prefix><rank> (nccl_trace_rank_3); in directories\n"
    "the prefix is inferred as PyTorch's analyzer does, or given with -p PREFIX.\n"
    "\n"
    "commands:\n"
    "  diagnose FILE... [--json]    why the job hangs or fails: the first incomplete\n"
    "                               collective per communicator, who never entered it,\n"
    "                               mismatches, unmatched sends/receives, dead, stopped\n"
    "                               and missing ranks, deadlocks, stragglers; one verdict\n"
    "  show FILE... [--rank R] [--comm NAME] [--last N | --all]\n"
    "                               a readable table per rank and communicator\n"
    "  stats FILE... [--json]       per op, communicator and size: count, latency\n"
    "                               p50/p99/max, bytes, bus bandwidth\n"
    "  stats FILE... --stragglers [--json]\n"
    "                               per communicator and rank: how late it arrives at\n"
    "                               collectives, how often last, the wait it costs the\n"
    "                               others; names the straggler (rule: stats --help)\n"
    "  top [DIR|FILE...] [--interval S] [--once] [--json] [--comm NAME] [--last N]\n"
    "                               a live view of a running job, refreshed every S\n"
    "                               seconds: per rank the last seqs, the op it is in,\n"
    "                               stragglers, bus bandwidth (default: the newest job\n"
    "                               in /dev/shm/ccomm-<uid>)\n"
    "  json FILE... -o DIR [--merged FILE]\n"
    "                               PyTorch-compatible JSON per rank (or one document)\n"
    "  perfetto FILE... -o TRACE.json [--rank R] [--last N]\n"
    "                               a timeline for ui.perfetto.dev / chrome://tracing\n"
    "  export FILE... --torch DIR [-p PREFIX]\n"
    "                               pickles PyTorch's analyzer (fr_trace) reads:\n"
    "                               DIR/<PREFIX><rank>, default prefix nccl_trace_rank_\n"
    "\n"
    "Exit status: 0 fine (diagnose: no problem found); 1 diagnose found a problem;\n"
    "2 bad usage or no usable input; top: 128 + the signal that ended it.\n"
    "`ccdump COMMAND --help` describes one command; docs/ccdump.md has examples.\n";

int ccdump_main(int argc, char **argv, FILE *out, FILE *err)
{
    static const cc_subcmd_t cmds[] = {
        {"diagnose", ccdump_diagnose}, {"show", ccdump_show},         {"stats", ccdump_stats},
        {"json", ccdump_json},         {"perfetto", ccdump_perfetto}, {"export", ccdump_export},       {"top", ccdump_top},
    };
    /* The reader logs what it refuses; ccdump reports it itself, once. */
    cc__log_level = CC_LOG_LEVEL_NONE;
    return cc_subcmd_run("ccdump", usage, cmds, sizeof(cmds) / sizeof(cmds[0]), argc, argv, out,
                         err);
}

static int set_value(const ccd_opt_t *o, const char *v, FILE *err)
{
    char *end;
    errno = 0;
    switch (o->kind) {
    case CCD_OPT_STR:
        *(const char **)o->ptr = v;
        return 0;
    case CCD_OPT_DOUBLE: {
        double x = strtod(v, &end);
        if (end == v || *end || errno || x < 0 || x > 1e9) break;
        *(double *)o->ptr = x;
        return 0;
    }
    case CCD_OPT_UINT: {
        unsigned long x = strtoul(v, &end, 10);
        if (end == v || *end || errno || v[0] == '-' || x > UINT32_MAX) break;
        *(unsigned long *)o->ptr = x;
        return 0;
    }
    default:
        break;
    }
    fprintf(err, "ccdump: %s: bad value \"%s\"\n", o->name, v);
    return 2;
}

/* One option at argv[*i] (and its value); 0 ok, 1 help, 2 error. */
static int one_option(int argc, char **argv, int *i, const ccd_opt_t *opts, FILE *err)
{
    const char *a = argv[*i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    for (const ccd_opt_t *o = opts; o && o->name; o++) {
        int match = (strlen(o->name) == len && !strncmp(a, o->name, len)) ||
                    (o->alias && strlen(o->alias) == len && !strncmp(a, o->alias, len));
        if (!match) continue;
        if (o->kind == CCD_OPT_FLAG) {
            if (eq) break;
            *(int *)o->ptr = 1;
            return 0;
        }
        if (eq) return set_value(o, eq + 1, err);
        if (*i + 1 >= argc) {
            fprintf(err, "ccdump: %s needs a value\n", o->name);
            return 2;
        }
        return set_value(o, argv[++*i], err);
    }
    fprintf(err, "ccdump: unknown option \"%s\" (see --help)\n", a);
    return 2;
}

int ccd_parse_args_any(int argc, char **argv, const ccd_opt_t *opts, char ***files, int *nfiles,
                       FILE *err)
{
    /* Files are moved to the front of argv[1..], in order. */
    int nf = 0, only_files = 0;
    for (int i = 1; i < argc; i++) {
        if (!only_files && !strcmp(argv[i], "--")) {
            only_files = 1;
            continue;
        }
        if (only_files || argv[i][0] != '-' || !argv[i][1]) {
            argv[1 + nf++] = argv[i];
            continue;
        }
        int rc = one_option(argc, argv, &i, opts, err);
        if (rc) return rc;
    }
    *files = argv + 1;
    *nfiles = nf;
    return 0;
}

int ccd_parse_args(int argc, char **argv, const ccd_opt_t *opts, char ***files, int *nfiles,
                   FILE *err)
{
    int rc = ccd_parse_args_any(argc, argv, opts, files, nfiles, err);
    if (!rc && !*nfiles) {
        fprintf(err, "ccdump: no input files or directories (see --help)\n");
        return 2;
    }
    return rc;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

int ccd_parse_rank_list(const char *text, int32_t **out, uint32_t *n)
{
    size_t cap = 16;
    int32_t *v = malloc(cap * sizeof(int32_t));
    uint32_t k = 0;
    const char *p = text;
    while (v && *p) {
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p || a < 0 || a >= (1 << 20)) goto bad;
        if (*end == '-') {
            p = end + 1;
            b = strtol(p, &end, 10);
            if (end == p || b < a || b >= (1 << 20) || b - a > (1 << 20)) goto bad;
        }
        for (long x = a; x <= b; x++) {
            if (k == cap) {
                int32_t *nv = realloc(v, (cap *= 2) * sizeof(int32_t));
                if (!nv) goto bad;
                v = nv;
            }
            v[k++] = (int32_t)x;
        }
        if (*end && (*end != ',' || !end[1])) goto bad;
        p = end + (*end == ',');
    }
    if (!v || !k) goto bad;
    qsort(v, k, sizeof(int32_t), cmp_i32);
    *out = v;
    *n = k;
    return 0;
bad:
    free(v);
    return -1;
}
