/*
 * dump.h - the PyTorch-compatible JSON of a ring snapshot (internal; used by
 * the in-process dumper and by ccdump). The mapping of every key is in
 * docs/recorder-format.md.
 */
#ifndef CC_RECORDER_DUMP_H
#define CC_RECORDER_DUMP_H

#include <jansson.h>

#include "recorder/reader.h"

#define CC__FR_DUMP_VERSION "2.10" /* PyTorch flight recorder dump version we write */
#define CC__FR_JSON_FRAMES  0x1u   /* symbolise frames (reads the modules' files) */

/* The dump of `s` (new reference), or NULL when out of memory. */
json_t *cc__fr_json(const cc__fr_snapshot_t *s, unsigned flags);

/*
 * Write `j` to `path` atomically: a temporary file next to it, then rename.
 * Returns CC_OK or CC_ERR_SYSTEM (logged with the path and errno).
 */
cc_status_t cc__fr_json_write(const json_t *j, const char *path);

#endif /* CC_RECORDER_DUMP_H */
