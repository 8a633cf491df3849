/*
 * cclog.c - the cclog command line: dispatch to a command, the help text,
 * and helpers shared by the commands.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cclog.h"
#include "subcmd.h"

static const char usage[] =
    "usage: cclog COMMAND [OPTIONS] FILE...\n"
    "Read clog files (CCOMM_CLOG=path, one per rank): see docs/cclog.md and\n"
    "docs/clog-format.md.\n"
    "\n"
    "commands:\n"
    "  merge FILE...          all lines of all ranks in one timeline, each prefixed\n"
    "                         with its rank and absolute time\n"
    "  filter FILE... [--comm NAME] [--op NAME] [--event Q,S,E,W,A] [--rank R,..]\n"
    "                 [--sig N] [--since T] [--until T]\n"
    "                         the event lines that match, in merge order\n"
    "  stats FILE...          per communicator and signature: count, errors,\n"
    "                         latency p50/p99/max from enqueue to end, bytes\n"
    "  follow FILE [--duration S] [--no-wait] [--interval MS]\n"
    "                         print a file's lines readably as they are written,\n"
    "                         until Ctrl-C (or S seconds, or the end with --no-wait)\n"
    "  check FILE...          find ops enqueued but never ended, failed ops,\n"
    "                         aborts, dropped lines and ranks that fell behind\n"
    "\n"
    "Malformed lines are reported as FILE:LINE: cause and skipped.\n"
    "Exit status: 0 fine; 1 check found problems; 2 bad usage or unusable input.\n"
    "`cclog COMMAND --help` describes one command.\n";

int cclog_main(int argc, char **argv, FILE *out, FILE *err)
{
    static const cc_subcmd_t cmds[] = {{"merge", cclog_merge},
                                       {"filter", cclog_filter},
                                       {"stats", cclog_stats},
                                       {"follow", cclog_follow},
                                       {"check", cclog_check}};
    return cc_subcmd_run("cclog", usage, cmds, sizeof(cmds) / sizeof(cmds[0]), argc, argv, out,
                         err);
}

int cclog_files_only(int argc, char **argv, const char *help, FILE *out, FILE *err)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    optind = 0; /* each command parses its own argv, in-process in the tests */
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (o == 'h') {
            fputs(help, out);
            return 0;
        }
        fprintf(err, "cclog %s: unknown option \"%s\"\n", argv[0], argv[optind - 1]);
        return 2;
    }
    return cclog_need_files(argc, argv, err) ? 2 : -1;
}

int cclog_need_files(int argc, char **argv, FILE *err)
{
    if (optind < argc) return 0;
    fprintf(err, "cclog %s: no files given (see cclog %s --help)\n", argv[0], argv[0]);
    return -1;
}

cl_log_t **cclog_load_all(char **paths, int n, FILE *err, int *bad)
{
    cl_log_t **logs = calloc((size_t)n + 1, sizeof(*logs));
    *bad = 0;
    for (int i = 0; logs && i < n; i++) {
        logs[i] = cl_log_load(paths[i], err);
        *bad += !logs[i] || logs[i]->unusable;
    }
    if (!logs) fprintf(err, "cclog: out of memory\n");
    return logs;
}

void cclog_free_all(cl_log_t **logs, int n)
{
    for (int i = 0; logs && i < n; i++)
        cl_log_free(logs[i]);
    free(logs);
}

int cclog_parse_when(const char *text, int *relative, int64_t *us)
{
    *relative = text[0] == '+';
    const char *s = text + *relative;
    /* Digits, then an optional fraction of up to 6 digits: exact, no floating point. */
    size_t ni = strspn(s, "0123456789");
    if (!ni || ni > 12) return -1;
    int64_t v = strtoll(s, NULL, 10) * 1000000;
    s += ni;
    if (*s == '.') {
        size_t nf = strspn(++s, "0123456789");
        if (!nf || nf > 6) return -1;
        int64_t frac = strtoll(s, NULL, 10);
        for (size_t k = nf; k < 6; k++)
            frac *= 10;
        v += frac;
        s += nf;
    }
    if (*s) return -1;
    *us = v;
    return 0;
}

int cclog_parse_int_list(const char *text, long long **vals, int *n)
{
    *vals = NULL;
    *n = 0;
    size_t cap = strlen(text) / 2 + 1;
    long long *v = malloc(cap * sizeof(*v));
    if (!v) return -1;
    const char *p = text;
    for (;;) {
        char *end;
        errno = 0;
        if (*p < '0' || *p > '9') break;
        v[*n] = strtoll(p, &end, 10);
        if (errno) break;
        (*n)++;
        if (!*end) {
            *vals = v;
            return 0;
        }
        if (*end != ',') break;
        p = end + 1;
    }
    free(v);
    *n = 0;
    return -1;
}

void cclog_put_safe(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch >= 0x7f || ch == '\\')
            fprintf(out, "\\x%02x", ch);
        else
            fputc(ch, out);
    }
}
