/*
 * load.h - from files to the job model: finding inputs (files and
 * directories), telling ring files from JSON dumps by their content,
 * loading each, probing whether a ring's process still runs, and keeping one
 * record per rank.
 */
#ifndef CCDUMP_LOAD_H
#define CCDUMP_LOAD_H

#include <jansson.h>
#include <stdio.h>

#include "model.h"
#include "recorder/reader.h"

#define CCD_JSON_MAX_BYTES (1ull << 30) /* larger "dumps" are refused */

enum ccd_load_rc { CCD_LOAD_OK = 0, CCD_LOAD_BAD, CCD_LOAD_OOM };

/* A ring file. *out is new on CCD_LOAD_OK; err says why otherwise. */
int ccd_load_ring(ccd_job_t *job, const char *path, ccd_rank_t **out, char *err, size_t errlen);
/* A validated snapshot into `r` (header facts, comms, entries). -1 when out of memory. */
int ccd_rank_from_snapshot(ccd_job_t *job, ccd_rank_t *r, const cc__fr_snapshot_t *s);

/*
 * A JSON dump file (ccomm's, PyTorch's / torchcomms' version 2.x, or the
 * merged document of `ccdump json --merged`): its rank(s) are added to the
 * job. CCD_LOAD_OK, or CCD_LOAD_BAD / CCD_LOAD_OOM with err set.
 */
int ccd_load_json(ccd_job_t *job, const char *path, char *err, size_t errlen);
/* A pickle dump (PyTorch's and torchcomms' own format, pickle.h): as ccd_load_json. */
int ccd_load_pickle(ccd_job_t *job, const char *path, char *err, size_t errlen);
/* The document in a JSON or pickle file (kind: CCD_KIND_JSON or CCD_KIND_PICKLE; new), or NULL. */
json_t *ccd_read_doc(const char *path, int kind, char *err, size_t errlen);
/* A parsed document; `path` names it in messages and gives PyTorch dumps their rank. */
int ccd_load_json_doc(ccd_job_t *job, json_t *doc, const char *path, ccd_rank_t **out, char *err,
                      size_t errlen);
/*
 * The dump document of a loaded record (new reference): a ring converted by
 * the recorder's dump builder, a JSON or pickle dump as read. NULL with err set.
 */
json_t *ccd_rank_doc(const ccd_rank_t *r, char *err, size_t errlen);
/* Parse JSON text (any bytes) into a document, or NULL with err set. */
json_t *ccd_json_parse(const char *buf, size_t len, const char *path, char *err, size_t errlen);

/* What the file at `path` holds, from its first bytes. */
enum ccd_kind { CCD_KIND_UNKNOWN = 0, CCD_KIND_RING, CCD_KIND_JSON, CCD_KIND_PICKLE };
int ccd_sniff(const char *path, char *err, size_t errlen);

/*
 * Fill r->alive and r->stopped for a ring written on this host, from
 * /proc/<pid>/stat (a pid reused by a younger process counts as gone).
 */
void ccd_probe_process(ccd_rank_t *r);

/*
 * Load every input (files, and directories searched a few levels deep for
 * *.ccfr, *.json and PyTorch's *_rank_<n> files), report unreadable ones on
 * `err`, and finish the job (one record per rank). Returns the job, or NULL
 * when nothing usable was found (the reason is on `err`).
 */
ccd_job_t *ccd_load_inputs(char **paths, int n, FILE *err);
/*
 * The same with PyTorch's file name prefix (`-p`, borrowed for the job's
 * life; NULL: inferred as PyTorch's analyzer does): in directories, the files
 * named <prefix><rank> are dumps; a dump's rank is the number after it.
 */
ccd_job_t *ccd_load_inputs_p(char **paths, int n, const char *prefix, FILE *err);

/* The file names that ccd_load_inputs would load, in order (new array of new strings). */
char **ccd_find_inputs(char **paths, int n, FILE *err, int *count);
char **ccd_find_inputs_p(char **paths, int n, const char *prefix, FILE *err, int *count);
void ccd_free_inputs(char **files, int count);

/*
 * PyTorch's file names (names.c). ccd_name_rank: the rank in `name` (a base
 * name) after `prefix` (PyTorch's rule: the first occurrence, then digits
 * only; ".json" or ".pkl" may follow), or, with prefix NULL or absent from
 * the name, the digits that end it; -1 when none. ccd_bare_prefix: the
 * length of the prefix of a "<prefix><rank>" name (prefix of letters,
 * digits, '_' and '-', ending in a non-digit), 0 when it is not one.
 */
int32_t ccd_name_rank(const char *name, const char *prefix);
size_t ccd_bare_prefix(const char *name);

#endif /* CCDUMP_LOAD_H */
