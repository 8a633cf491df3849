/*
 * export.h - `ccdump export --torch`: the translation of one rank's dump
 * into what PyTorch's flight recorder would have written (export_torch.c);
 * export.c writes it as PyTorch's pickle.
 */
#ifndef CCDUMP_EXPORT_H
#define CCDUMP_EXPORT_H

#include <jansson.h>

#include "model.h"

/*
 * PyTorch's analyzer's name for an op name (ccomm's when from_ccomm, else
 * PyTorch's or torchcomms'): a static string, or NULL when it has none.
 */
const char *ccd_torch_op(const char *op, int from_ccomm);

/*
 * A process group's "ranks" (PyTorch's string "[0, 1]", or a list) as the
 * string the analyzer parses (new, free it), or NULL when malformed (its
 * literal_eval would fail).
 */
char *ccd_torch_ranks(const json_t *ranks);

/*
 * The entries of rank r's dump document `doc` (borrowed) as PyTorch would
 * have recorded them: *entries (new) lists those exported; *left (new) one
 * {index, record_id, why[, entry]} per entry left out (the entry itself
 * when only its op name was unknown). Returns 0, or -1 when out of memory.
 */
int ccd_torch_entries(const ccd_rank_t *r, json_t *doc, json_t **entries, json_t **left);

#endif /* CCDUMP_EXPORT_H */
