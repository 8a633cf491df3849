/*
 * config.c - the one place that reads the environment.
 *
 * The table in config_table.h is parsed once into a struct cc__config: every
 * type (INT, BOOL, SIZE, STR, ENUM, LIST) here, so that consumers get a value
 * that is valid and never parse text. An empty value means the default. A bad
 * value keeps the default and is remembered; cc__config_check, at the first
 * communicator's init, logs it (the variable, the value, the choices) and
 * fails the init. Unknown CCOMM_* names get a warning at once (a typo would
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
enum cfg_type { T_INT, T_BOOL, T_SIZE, T_STR, T_ENUM, T_LIST };
static const char *const type_names[] = {"int", "bool", "size", "string", "enum", "list"};

/* One NULL-terminated array of choices per ENUM or LIST row: choices_LOG_LEVEL, ... */
#define CC__CFG_ARR_INT(N)
#define CC__CFG_ARR_BOOL(N)
#define CC__CFG_ARR_SIZE(N)
#define CC__CFG_ARR_STR(N)
#define CC__CFG_ARR_ENUM(N)                              static const char *const choices_##N[] = {CC__CHOICES_##N, NULL};
#define CC__CFG_ARR_LIST(N)                              CC__CFG_ARR_ENUM(N)
#define CC__CFG_ARR(NAME, field, TYPE, def, help, flags) CC__CFG_ARR_##TYPE(NAME)
CC__CONFIG_TABLE(CC__CFG_ARR)
#undef CC__CFG_ARR
#define CC__CFG_REF_INT(N)  NULL
#define CC__CFG_REF_BOOL(N) NULL
#define CC__CFG_REF_SIZE(N) NULL
#define CC__CFG_REF_STR(N)  NULL
#define CC__CFG_REF_ENUM(N) choices_##N
#define CC__CFG_REF_LIST(N) choices_##N

struct cfg_row {
    cc_env_var_t pub;
    enum cfg_type type;
    size_t offset;
    const char *const *choices; /* ENUM and LIST: NULL-terminated; else NULL */
};

static const struct cfg_row rows[] = {
#define CC__CFG_ROW(NAME, field, TYPE, def, help, flags)                                           \
    {{"CCOMM_" #NAME, NULL, def, help, flags, NULL},                                               \
     T_##TYPE,                                                                                     \
     offsetof(struct cc__config, field),                                                           \
     CC__CFG_REF_##TYPE(NAME)},
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

/* The choice that word[0..n) names (case aside), or -1; "OLD=NEW" spellings give NEW's. */
static int choice_of(const char *const *ch, const char *word, size_t n)
{
    for (int i = 0; ch[i]; i++) {
        const char *eq = strchr(ch[i], '=');
        size_t len = eq ? (size_t)(eq - ch[i]) : strlen(ch[i]);
        if (len == n && !strncasecmp(ch[i], word, n))
            return eq ? choice_of(ch, eq + 1, strlen(eq + 1)) : i;
    }
    return -1;
}

/* Bits of every choice but ALL and the other spellings: what ALL stands for. */
static uint64_t list_all(const char *const *ch)
{
    uint64_t all = 0;
    for (int i = !strcmp(ch[0], "ALL"); ch[i]; i++)
        if (!strchr(ch[i], '=')) all |= 1ull << i;
    return all;
}

/* "CORE, ^SHM" -> bits; on failure bad, badlen are the item at fault. */
static int parse_list(const char *const *ch, const char *text, uint64_t *out, const char **bad,
                      size_t *badlen)
{
    const uint64_t all = list_all(ch);
    const int has_all = !strcmp(ch[0], "ALL");
    uint64_t m = 0;
    for (const char *p = text, *next;; p = next + 1) {
        size_t n = strcspn(p, ",");
        next = p + n;
        while (n && *p == ' ')
            p++, n--;
        while (n && p[n - 1] == ' ')
            n--;
        *bad = p, *badlen = n;
        int neg = n && *p == '^';
        int i = n > (size_t)neg ? choice_of(ch, p + neg, n - (size_t)neg) : -1;
        if (i < 0) return -1;
        uint64_t bits = has_all && i == 0 ? all : 1ull << i;
        if (neg && p == text + strspn(text, " ")) m = all; /* "^SHM" starts from ALL */
        m = neg ? m & ~bits : m | bits;
        if (!*next) break;
    }
    *out = m;
    return 0;
}

/* "a, b, c": the choices as shown, without the other spellings. */
static void join_choices(const char *const *ch, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; ch[i] && o < len; i++)
        if (!strchr(ch[i], '='))
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", ch[i]);
}

/* What an INT, BOOL or SIZE value must look like, for the error. */
static const char *const type_want[] = {
    [T_INT] = "an integer",
    [T_BOOL] = "a bool (1, yes, true, on; 0, no, false, off)",
    [T_SIZE] = "a size (bytes, with K, M, G or T for KiB, MiB, GiB, TiB)",
};

/* Parse text into the field of one row; 0 on success, else -1 and why[] says so. */
static int parse_into(const struct cfg_row *r, const char *text, struct cc__config *cfg, char *why,
                      size_t len)
{
    char *p = (char *)cfg + r->offset, choices[1024];
    const char *bad = text;
    size_t badlen = strlen(text);
    int rc = -1, i;
    switch (r->type) {
    case T_INT:
        rc = cc__parse_int(text, (int64_t *)(void *)p);
        break;
    case T_BOOL:
        rc = cc__parse_bool(text, (int *)(void *)p);
        break;
    case T_SIZE:
        rc = cc__parse_size(text, (uint64_t *)(void *)p);
        break;
    case T_STR:
        *(const char **)(void *)p = text;
        return 0;
    case T_ENUM:
        if ((i = choice_of(r->choices, text, strlen(text))) < 0) break;
        *(const char **)(void *)p = r->choices[i];
        return 0;
    case T_LIST:
        rc = parse_list(r->choices, text, (uint64_t *)(void *)p, &bad, &badlen);
        break;
    }
    if (rc == 0 || !why) return rc;
    if (r->type == T_INT || r->type == T_BOOL || r->type == T_SIZE) {
        snprintf(why, len, "%s=\"%s\" is not %s", r->pub.name, text, type_want[r->type]);
        return rc;
    }
    join_choices(r->choices, choices, sizeof(choices));
    if (r->type == T_ENUM)
        snprintf(why, len, "%s=\"%s\" is not one of %s", r->pub.name, text, choices);
    else if (badlen == 0)
        snprintf(why, len, "%s=\"%s\" has an empty item (choices: %s)", r->pub.name, text, choices);
    else
        snprintf(why, len, "%s=\"%s\": \"%.*s\" is not one of %s", r->pub.name, text, (int)badlen,
                 bad, choices);
    return rc;
}

/* The bad values of the last parse, for cc__config_check. */
#define MAXBAD 8
static char g_bad[MAXBAD][1400];
static int g_nbad;

/* Each row's choices as shown ("a, b, c"), in one static pool. */
static char g_choice_text[4096];

static void fill_pub_rows(void)
{
    size_t o = 0;
    for (int i = 0; i < NROWS; i++) {
        pub_rows[i] = rows[i].pub;
        pub_rows[i].type = type_names[rows[i].type];
        if (!rows[i].choices) continue;
        for (int k = 0; rows[i].choices[k]; k++)
            if (k >= 64) abort(); /* a LIST's bits are one uint64_t: a bug in the table */
        join_choices(rows[i].choices, g_choice_text + o, sizeof(g_choice_text) - o);
        pub_rows[i].choices = g_choice_text + o;
        o += strlen(g_choice_text + o) + 1;
        if (o >= sizeof(g_choice_text)) abort(); /* the table outgrew the pool: a bug */
    }
}

/* Unknown CCOMM_* names: a warning each, as the log may not be up yet. */
static void warn_unknown(void)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "CCOMM_", 6) != 0) continue;
        const char *eq = strchr(*e, '=');
        size_t n = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0;
        for (int i = 0; i < NROWS && !known; i++)
            known = strlen(rows[i].pub.name) == n && !strncmp(rows[i].pub.name, *e, n);
        if (!known)
            fprintf(stderr,
                    "ccomm: warning: unknown variable %.*s is ignored (see `ccrun --env`)\n",
                    (int)n, *e);
    }
}

static void parse_all(void)
{
    memset(&g_cfg, 0, sizeof(g_cfg));
    g_nbad = 0;
    fill_pub_rows();
    for (int i = 0; i < NROWS; i++)
        if (parse_into(&rows[i], rows[i].pub.default_value, &g_cfg, NULL, 0) != 0)
            abort(); /* a bad default is a bug in the table */
    /* Defaults are in place; the log can start (it reads the config). */
    for (int i = 0; i < NROWS; i++) {
        const char *v = getenv(rows[i].pub.name);
        if (!v || !*v) continue; /* empty means the default, as in other tools (CCOMM_TRANSPORT=) */
        char why[sizeof(g_bad[0])];
        if (parse_into(&rows[i], v, &g_cfg, why, sizeof(why)) == 0) continue;
        parse_into(&rows[i], rows[i].pub.default_value, &g_cfg, NULL, 0);
        if (g_nbad < MAXBAD) memcpy(g_bad[g_nbad], why, sizeof(why));
        g_nbad++;
    }
#define CC__LAUNCHER_READ(NAME, field) g_cfg.field = getenv(#NAME);
    CC__LAUNCHER_TABLE(CC__LAUNCHER_READ)
#undef CC__LAUNCHER_READ
    warn_unknown();
}

cc_status_t cc__config_check(void)
{
    cc__cfg();
    for (int i = 0; i < g_nbad && i < MAXBAD; i++)
        cc_log_error(CC_SUBSYS_INIT, "%s; see `ccrun --env`", g_bad[i]);
    if (g_nbad > MAXBAD)
        cc_log_error(CC_SUBSYS_INIT, "and %d more bad CCOMM_* values", g_nbad - MAXBAD);
    return g_nbad ? CC_ERR_INVALID_ARG : CC_OK;
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

/* A LIST value as text: "ALL" when it holds every choice, else "CORE,SHM". */
static void list_text(const char *const *ch, uint64_t m, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    if (!strcmp(ch[0], "ALL") && m == list_all(ch)) {
        snprintf(buf, len, "ALL");
        return;
    }
    for (int i = 0; ch[i] && o < len; i++)
        if (m & (1ull << i)) o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", ch[i]);
}

const char *cc_env_effective(const char *name)
{
    static __thread char buf[512];
    const struct cc__config *cfg = cc__cfg();
    for (int i = 0; name && i < NROWS; i++) {
        const struct cfg_row *r = &rows[i];
        if (strcmp(r->pub.name, name) != 0) continue;
        const char *p = (const char *)cfg + r->offset;
        if (r->pub.flags & CC_ENV_SECRET)
            return **(const char *const *)(const void *)p ? "<set>" : "";
        switch (r->type) {
        case T_INT:
            snprintf(buf, sizeof(buf), "%lld", (long long)*(const int64_t *)(const void *)p);
            break;
        case T_BOOL:
            snprintf(buf, sizeof(buf), "%d", *(const int *)(const void *)p);
            break;
        case T_SIZE:
            snprintf(buf, sizeof(buf), "%llu",
                     (unsigned long long)*(const uint64_t *)(const void *)p);
            break;
        case T_STR:
        case T_ENUM:
            return *(const char *const *)(const void *)p;
        case T_LIST:
            list_text(r->choices, *(const uint64_t *)(const void *)p, buf, sizeof(buf));
            break;
        }
        return buf;
    }
    return NULL;
}
