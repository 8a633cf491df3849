/*
 * config.c - the one place that reads the environment.
 *
 * The table in config_table.h is parsed once into a struct cc__config. An
 * empty value means the default. Bad values keep the default and log a
 * warning naming the variable and the value; unknown CCOMM_* names get a warning (a typo would
 * otherwise be silently ignored).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/config.h"
#include "base/log.h"

extern char **environ;

static struct cc__config g_cfg;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The table as data, for the env API and the parser. */
enum cfg_type { T_INT, T_BOOL, T_SIZE, T_STR };
static const char *const type_names[] = {"int", "bool", "size", "string"};

struct cfg_row {
    cc_env_var_t pub;
    enum cfg_type type;
    size_t offset;
};

static const struct cfg_row rows[] = {
#define CC__CFG_ROW(NAME, field, TYPE, def, help, flags)                                           \
    {{"CCOMM_" #NAME, NULL, def, help, flags}, T_##TYPE, offsetof(struct cc__config, field)},
    CC__CONFIG_TABLE(CC__CFG_ROW)
#undef CC__CFG_ROW
};
#define NROWS ((int)(sizeof(rows) / sizeof(rows[0])))

static cc_env_var_t pub_rows[NROWS];

int cc__parse_int(const char *text, int64_t *out)
{
    char *end;
    if (!text || !*text) return -1;
    errno = 0;
    long long v = strtoll(text, &end, 0);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cc__parse_bool(const char *text, int *out)
{
    static const char *const yes[] = {"1", "y", "yes", "true", "on"};
    static const char *const no[] = {"0", "n", "no", "false", "off"};
    if (!text) return -1;
    for (int i = 0; i < 5; i++) {
        if (!strcasecmp(text, yes[i])) return *out = 1, 0;
        if (!strcasecmp(text, no[i])) return *out = 0, 0;
    }
    return -1;
}

int cc__parse_size(const char *text, uint64_t *out)
{
    char *end;
    if (!text || !*text || *text == '-') return -1;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || end == text) return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    default: break;
    }
    if ((*end == 'B' || *end == 'b') && end[1] == '\0') end++;
    else if (*end == 'i' && end[1] == 'B' && end[2] == '\0') end += 2;
    if (*end) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* Parse text into the field of one row; 0 on success. */
static int parse_into(const struct cfg_row *r, const char *text, struct cc__config *cfg)
{
    char *p = (char *)cfg + r->offset;
    switch (r->type) {
    case T_INT: return cc__parse_int(text, (int64_t *)(void *)p);
    case T_BOOL: return cc__parse_bool(text, (int *)(void *)p);
    case T_SIZE: return cc__parse_size(text, (uint64_t *)(void *)p);
    case T_STR: *(const char **)(void *)p = text; return 0;
    }
    return -1;
}

static void parse_all(void)
{
    memset(&g_cfg, 0, sizeof(g_cfg));
    for (int i = 0; i < NROWS; i++) {
        pub_rows[i] = rows[i].pub;
        pub_rows[i].type = type_names[rows[i].type];
        if (parse_into(&rows[i], rows[i].pub.default_value, &g_cfg) != 0)
            abort(); /* a bad default is a bug in the table */
    }
    /* Defaults are in place; the log can start (it reads the config). */
    for (int i = 0; i < NROWS; i++) {
        const char *v = getenv(rows[i].pub.name);
        if (v && !*v) continue; /* empty means the default, as in other tools (CCOMM_TRANSPORT=) */
        if (v && parse_into(&rows[i], v, &g_cfg) != 0) {
            parse_into(&rows[i], rows[i].pub.default_value, &g_cfg);
            fprintf(stderr, "ccomm: warning: %s=\"%s\" is not a valid %s; using the default \"%s\"\n",
                    rows[i].pub.name, v, type_names[rows[i].type], rows[i].pub.default_value);
        }
    }
#define CC__LAUNCHER_READ(NAME, field) g_cfg.field = getenv(#NAME);
    CC__LAUNCHER_TABLE(CC__LAUNCHER_READ)
#undef CC__LAUNCHER_READ
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "CCOMM_", 6) != 0) continue;
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0;
        for (int i = 0; i < NROWS && !known; i++)
            known = strlen(rows[i].pub.name) == n && !strncmp(rows[i].pub.name, *e, n);
        if (!known)
            fprintf(stderr, "ccomm: warning: unknown variable %.*s is ignored (see `ccrun --env`)\n",
                    (int)n, *e);
    }
}

const struct cc__config *cc__cfg(void)
{
    pthread_once(&g_once, parse_all);
    return &g_cfg;
}

void cc__config_reload(void)
{
    cc__cfg();
    parse_all();
    cc__log_init();
}

int cc_env_count(void)
{
    return NROWS;
}

const cc_env_var_t *cc_env_at(int i)
{
    cc__cfg();
    return (i >= 0 && i < NROWS) ? &pub_rows[i] : NULL;
}

const char *cc_env_effective(const char *name)
{
    static __thread char buf[64];
    const struct cc__config *cfg = cc__cfg();
    for (int i = 0; name && i < NROWS; i++) {
        const struct cfg_row *r = &rows[i];
        if (strcmp(r->pub.name, name) != 0) continue;
        const char *p = (const char *)cfg + r->offset;
        if (r->pub.flags & CC_ENV_SECRET)
            return **(const char *const *)(const void *)p ? "<set>" : "";
        switch (r->type) {
        case T_INT: snprintf(buf, sizeof(buf), "%lld", (long long)*(const int64_t *)(const void *)p); break;
        case T_BOOL: snprintf(buf, sizeof(buf), "%d", *(const int *)(const void *)p); break;
        case T_SIZE: snprintf(buf, sizeof(buf), "%llu", (unsigned long long)*(const uint64_t *)(const void *)p); break;
        case T_STR: return *(const char *const *)(const void *)p;
        }
        return buf;
    }
    return NULL;
}
