/*
 * cclog.h - the cclog commands (docs/cclog.md). Each takes its own argv
 * (argv[0] is the command's name) and writes to out and err, so tests run
 * them in-process. Exit statuses: 0 fine, 1 problems found (check), 2 bad
 * usage or unusable input.
 */
#ifndef CCLOG_CCLOG_H
#define CCLOG_CCLOG_H

#include <stdio.h>

#include "parse.h"

int cclog_main(int argc, char **argv, FILE *out, FILE *err);

int cclog_merge(int argc, char **argv, FILE *out, FILE *err);
int cclog_filter(int argc, char **argv, FILE *out, FILE *err);
int cclog_stats(int argc, char **argv, FILE *out, FILE *err);
int cclog_follow(int argc, char **argv, FILE *out, FILE *err);
int cclog_check(int argc, char **argv, FILE *out, FILE *err);

/*
 * The start of a command that takes files and no option (merge, stats,
 * check): --help prints `help` on out (returns 0); an unknown option or no
 * file is said on err (returns 2). -1: go on, the files are argv[optind..].
 */
int cclog_files_only(int argc, char **argv, const char *help, FILE *out, FILE *err);

/* After a command's options: -1, said on err, when no file is left in argv. */
int cclog_need_files(int argc, char **argv, FILE *err);

/*
 * Load every file. Returns the array (n entries, NULL where a file could not
 * be opened) and sets *bad to the number of files that are unusable or could
 * not be opened. NULL only when out of memory.
 */
cl_log_t **cclog_load_all(char **paths, int n, FILE *err, int *bad);
void cclog_free_all(cl_log_t **logs, int n);

/* Decoded text for a terminal: '\\' and bytes outside printable ASCII as \\xNN. */
void cclog_put_safe(FILE *out, const char *s);

/* "r3" or "r?" for a log's rank. */
const char *cclog_rank_str(const cl_log_t *log, char *buf, size_t len);

/* Parse "+S[.s]" (relative to each file's base) or "S[.s]" (unix time) into µs. */
int cclog_parse_when(const char *text, int *relative, int64_t *us);

/* An integer list "1,2,5" into a malloc'd array. 0 or -1 (bad text). */
int cclog_parse_int_list(const char *text, long long **vals, int *n);

/* Write one line of a merged view: "r<rank> <unix time> <line>". */
void cclog_print_merged(FILE *out, const cl_log_t *log, int64_t t_us, const char *text);

/*
 * Visit the entries of all logs in time order (each file keeps its own
 * order; a line without a time goes with the next timed line of its file).
 * fn returns 0 to go on.
 */
typedef int (*cclog_visit_fn)(cl_log_t *log, const cl_entry_t *e, int64_t t_sort, void *arg);
int cclog_merge_visit(cl_log_t **logs, int n, cclog_visit_fn fn, void *arg);

#endif /* CCLOG_CCLOG_H */
