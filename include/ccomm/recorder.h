/*
 * ccomm/recorder.h - the flight recorder.
 *
 * Every process keeps the last CCOMM_RECORDER_ENTRIES operations (4096 by
 * default; 0 turns the recorder off) in a ring file,
 * $CCOMM_RECORDER_DIR/<job id>/rank<r>.<pid>.ccfr, which survives the
 * process: `ccdump` reads it even after a SIGKILL. Each entry follows its
 * operation through scheduled, started and completed (or failed, timed out,
 * aborted). The dump below is a JSON file in PyTorch's flight recorder
 * format (version 2.10) with ccomm's own keys under "ccomm"; the format and
 * the mapping are in docs/recorder-format.md.
 */
#ifndef CCOMM_RECORDER_H
#define CCOMM_RECORDER_H

#include "ccomm/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * cc_recorder_dump - write this process's flight recorder as JSON.
 *   path  the file to write (borrowed for the call; replaced if it exists),
 *         or NULL for the default $CCOMM_DUMP_DIR/<job id>/rank<r>.json;
 *         when that exists, rank<r>.1.json, rank<r>.2.json, ...: a default
 *         dump never overwrites an earlier one (directories are created)
 * The dump is a consistent snapshot taken while operations keep running (they
 * are never blocked), written to a temporary file in the same directory and
 * renamed over `path`, so readers see the old dump or the new one, whole.
 * Frames (CCOMM_RECORDER_STACK=1) are symbolised from the modules' files.
 * Returns CC_OK; CC_ERR_INVALID_USAGE (the recorder is off or not open yet:
 * no communicator was created, or CCOMM_RECORDER_ENTRIES=0);
 * CC_ERR_INVALID_ARG (path too long); CC_ERR_SYSTEM (cannot create or write
 * the file; the log names it and the cause); CC_ERR_NO_MEMORY.
 * Thread safety: any thread, any time (not from a signal handler); dumps
 * from several threads are serialised.
 */
CC_API cc_status_t cc_recorder_dump(const char *path);

/*
 * cc_recorder_ring_path - the path of this process's ring file, or NULL when
 * the recorder is off or not open. Borrowed: valid until the recorder closes
 * (process exit). Thread safety: any thread.
 */
CC_API const char *cc_recorder_ring_path(void);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_RECORDER_H */
