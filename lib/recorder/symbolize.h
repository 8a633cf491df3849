/*
 * symbolize.h - return addresses to function names, offline (internal).
 *
 * Uses only the snapshot's module table and the modules' files on disk (ELF
 * .symtab, else .dynsym), so it works for a dead process on the same host.
 * A module whose file changed (build id differs) is not trusted. No DWARF:
 * lines are not known (0).
 */
#ifndef CC_RECORDER_SYMBOLIZE_H
#define CC_RECORDER_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/reader.h"

typedef struct cc__fr_symbolizer cc__fr_symbolizer_t;

/* A symboliser for the modules of `s` (borrowed while it lives); NULL when out of memory. */
cc__fr_symbolizer_t *cc__fr_symbolizer_new(const cc__fr_snapshot_t *s);

/*
 * Resolve `addr`: *name gets "function+0xoff" (or "0xaddr" when unknown),
 * *file the module's path (or "??"; borrowed from the symboliser).
 * Module files are read on first use and cached.
 */
void cc__fr_symbolize(cc__fr_symbolizer_t *z, uint64_t addr, char *name, size_t cap,
                      const char **file);

void cc__fr_symbolizer_free(cc__fr_symbolizer_t *z);

#endif /* CC_RECORDER_SYMBOLIZE_H */
