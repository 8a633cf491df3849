/*
 * ccomm/env.h - the table of CCOMM_* environment variables.
 *
 * ccomm reads its environment once, at the first call that needs it, from
 * one table; `ccrun --env` and docs/env.md are printed from the same table.
 */
#ifndef CCOMM_ENV_H
#define CCOMM_ENV_H

#include "ccomm/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CC_ENV_SECRET 0x1u   /* value is never printed (CCOMM_JOB_KEY) */
#define CC_ENV_LAUNCHER 0x2u /* set by the launcher (ccrun), not by users */

typedef struct cc_env_var {
    const char *name;          /* "CCOMM_TIMEOUT" */
    const char *type;          /* "int", "size", "bool", "string", "enum", "list" */
    const char *default_value; /* as text; "" for none */
    const char *help;          /* one or two sentences */
    unsigned flags;            /* CC_ENV_* */
    const char *choices;       /* enum and list: "a, b, c"; NULL for other types */
} cc_env_var_t;

/* Number of variables in the table. Any thread. */
CC_API int cc_env_count(void);
/* The i-th variable (0 <= i < cc_env_count()), static; NULL if out of range. */
CC_API const cc_env_var_t *cc_env_at(int i);
/* The value in effect (from the environment, else the default) as text, or
 * NULL if `name` is not in the table; "<set>" for secret ones. Static until
 * the next call from any thread; for tools, not for the hot path. */
CC_API const char *cc_env_effective(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* CCOMM_ENV_H */
