/*
 * fuzz.h - ccdump's fuzz targets (libFuzzer's entry point, or the standalone
 * mutation driver of driver.c when libFuzzer is not used):
 *   fuzz_ring.c  bytes as a ring file: the recorder's reader, then ccdump
 *   fuzz_json.c  bytes as a JSON dump: ccdump's JSON loader, then ccdump
 *   fuzz_pickle.c bytes as a pickle dump: the pickle reader and writer, then ccdump
 * Whatever loads goes through everything ccdump does with a record: the
 * index, the diagnosis, the text and JSON reports, the Perfetto trace, and
 * (rings) the recorder's own JSON dump builder. Nothing may crash, hang,
 * leak or trip a sanitizer.
 */
#ifndef CC_TEST_FUZZ_H
#define CC_TEST_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/*
 * Before fuzzing: with CCDUMP_FUZZ_SEEDS=DIR in the environment, writes the
 * target's seeds (fuzz_make_seeds) into DIR, so that `fuzz_ring DIR` under
 * libFuzzer starts from valid inputs.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Index, diagnose and write every output of a loaded job (to /dev/null). */
void fuzz_everything(ccd_job_t *job);

/*
 * Seed inputs for the target (fuzz_ring: small valid rings made with the
 * recorder's writer; fuzz_json: dumps of those rings). Each is a malloc'd
 * buffer; returns how many (at most max).
 */
int fuzz_make_seeds(uint8_t **bufs, size_t *lens, int max);

/* Tokens worth splicing into this target's inputs (NULL-terminated). */
extern const char *const fuzz_dictionary[];

#endif /* CC_TEST_FUZZ_H */
