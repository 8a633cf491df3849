/*
 * ccdump.h - the ccdump commands (docs/ccdump.md). Each takes its own argv
 * (argv[0] is the command's name) and writes to out and err, so tests run
 * them in-process. Exit statuses: 0 fine (diagnose: no problem found),
 * 1 diagnose found a problem, 2 bad usage or unusable input.
 */
#ifndef CCDUMP_CCDUMP_H
#define CCDUMP_CCDUMP_H

#include <stdint.h>
#include <stdio.h>

int ccdump_main(int argc, char **argv, FILE *out, FILE *err);

int ccdump_show(int argc, char **argv, FILE *out, FILE *err);
int ccdump_json(int argc, char **argv, FILE *out, FILE *err);
int ccdump_perfetto(int argc, char **argv, FILE *out, FILE *err);
int ccdump_diagnose(int argc, char **argv, FILE *out, FILE *err);
int ccdump_stats(int argc, char **argv, FILE *out, FILE *err);
int ccdump_export(int argc, char **argv, FILE *out, FILE *err);

int ccdump_top(int argc, char **argv, FILE *out, FILE *err);

/* nccl-tests' bus bandwidth factor of an op on n ranks (stats, top). */
double ccd_bus_factor(unsigned op, int32_t n);

/* ---- argument parsing shared by the commands ---- */

enum ccd_opt_kind { CCD_OPT_FLAG = 1, CCD_OPT_STR, CCD_OPT_DOUBLE, CCD_OPT_UINT };

typedef struct ccd_opt {
    const char *name;  /* "--json" */
    const char *alias; /* "-o", or NULL */
    int kind;          /* enum ccd_opt_kind */
    void *ptr;         /* int *, const char **, double *, unsigned long * */
} ccd_opt_t;

/*
 * Parse argv[1..] into the options (a NULL-named entry ends the table) and
 * the input files (*files points into argv). Returns 0, 1 when --help was
 * asked (the caller prints its help), 2 on a bad option (reported on err).
 */
int ccd_parse_args(int argc, char **argv, const ccd_opt_t *opts, char ***files, int *nfiles,
                   FILE *err);

/* The same, no input being fine (*nfiles may be 0). */
int ccd_parse_args_any(int argc, char **argv, const ccd_opt_t *opts, char ***files, int *nfiles,
                       FILE *err);

/* "1,3,5-7" into a sorted list; -1 when malformed. */
int ccd_parse_rank_list(const char *text, int32_t **out, uint32_t *n);

#endif /* CCDUMP_CCDUMP_H */
