/*
 * config.h - the parsed CCOMM_* configuration (see config_table.h).
 *
 * The environment is read once, at the first cc__cfg() call; nothing else in
 * ccomm calls getenv. Values are immutable afterwards, so any thread may
 * read them without locks.
 */
#ifndef CC_BASE_CONFIG_H
#define CC_BASE_CONFIG_H

#include <stdint.h>

#include "ccomm/env.h"
#include "ccomm/status.h"
#include "base/config_table.h"

#define CC__CFG_CTYPE_INT int64_t
#define CC__CFG_CTYPE_BOOL int
#define CC__CFG_CTYPE_SIZE uint64_t
#define CC__CFG_CTYPE_STR const char *
#define CC__CFG_CTYPE_ENUM const char * /* the choice as the table spells it */
#define CC__CFG_CTYPE_LIST uint64_t     /* bit i: the i-th choice is listed */

struct cc__config {
#define CC__CFG_FIELD(NAME, field, TYPE, def, help, flags) CC__CFG_CTYPE_##TYPE field;
    CC__CONFIG_TABLE(CC__CFG_FIELD)
#undef CC__CFG_FIELD
#define CC__LAUNCHER_FIELD(NAME, field) const char *field; /* NULL when unset */
        CC__LAUNCHER_TABLE(CC__LAUNCHER_FIELD)
#undef CC__LAUNCHER_FIELD
};

/* The configuration; parsed on first use (thread-safe, once). Never NULL. */
const struct cc__config *cc__cfg(void);

/*
 * CC_OK when every CCOMM_* value parsed; else CC_ERR_INVALID_ARG after one
 * error line per bad value (the variable, the value, the choices). The first
 * communicator's init calls it, so a bad value stops the job before it runs
 * rather than being replaced by its default; code that reads the config
 * earlier or without a communicator (tools) gets the defaults of bad values.
 * Any thread.
 */
cc_status_t cc__config_check(void);

/* Tests only: parse the environment again. Not thread-safe. */
void cc__config_reload(void);

/* Parse helpers shared with tools: "64M" -> 67108864. Return 0 on success. */
int cc__parse_size(const char *text, uint64_t *out);
int cc__parse_int(const char *text, int64_t *out);
int cc__parse_bool(const char *text, int *out);

#endif /* CC_BASE_CONFIG_H */
