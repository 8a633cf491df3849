/*
 * pickle.h - the Python pickle subset of PyTorch's and torchcomms' flight
 * recorder dumps, both ways (docs/ccdump.md, "ccdump on PyTorch jobs").
 *
 * The reader turns a pickle of protocol 2 to 5 into a jansson document:
 * dicts become objects (str keys; int keys as their decimal text), lists and
 * tuples arrays, str strings, bytes strings of their bytes as code points
 * U+0000..U+00FF, ints integers (int64 range), floats reals (NaN and the
 * infinities null), bools and None themselves. Every opcode that imports or
 * builds a Python object (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ,
 * NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID, out-of-band buffers) is
 * refused, as is anything else outside the subset: the error names the
 * opcode and its byte offset. Nothing in the input is trusted: lengths are
 * checked against the bytes left, memo indices against the memo, nesting
 * and the stack are bounded, and the values built are bounded by a budget
 * proportional to the input (a memo reference copies its value, so a small
 * hostile file cannot expand into a huge or cyclic document).
 *
 * The writer emits protocol 2 (what Python's pickle.load and PyTorch's
 * analyzer read) into a growing buffer.
 */
#ifndef CCDUMP_PICKLE_H
#define CCDUMP_PICKLE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CCD_PICKLE_MAX_DEPTH 64        /* containers nested deeper are refused */
#define CCD_PICKLE_MAX_STACK (1 << 20) /* values waiting on the unpickler's stack */

/*
 * The document a pickle holds (new reference), or NULL with err set to
 * "pickle: <what> at byte <offset>" (the offset of the opcode at fault).
 */
json_t *ccd_pickle_parse(const unsigned char *buf, size_t len, char *err, size_t errlen);

/* ---- writer ---- */

typedef struct ccd_pkw {
    unsigned char *buf;
    size_t len, cap;
    int oom; /* an allocation failed: the buffer is incomplete */
} ccd_pkw_t;

/* PROTO 2; ccd_pkw_stop appends STOP. Both leave errors in w->oom. */
void ccd_pkw_start(ccd_pkw_t *w);
void ccd_pkw_stop(ccd_pkw_t *w);
void ccd_pkw_free(ccd_pkw_t *w);

void ccd_pkw_none(ccd_pkw_t *w);
void ccd_pkw_bool(ccd_pkw_t *w, int v);
void ccd_pkw_int(ccd_pkw_t *w, int64_t v);
void ccd_pkw_float(ccd_pkw_t *w, double v);
void ccd_pkw_str(ccd_pkw_t *w, const char *s, size_t len); /* UTF-8 */
/* Containers: open, then the items (dict: key, value, key, value...), then close. */
void ccd_pkw_mark(ccd_pkw_t *w);
void ccd_pkw_dict_end(ccd_pkw_t *w);  /* MARK k v ... -> dict */
void ccd_pkw_list_end(ccd_pkw_t *w);  /* MARK v ... -> list */
void ccd_pkw_tuple_end(ccd_pkw_t *w); /* MARK v ... -> tuple */
/* Any JSON value: objects as dicts, arrays as lists. -1 when too deep. */
int ccd_pkw_json(ccd_pkw_t *w, const json_t *v);

#endif /* CCDUMP_PICKLE_H */
