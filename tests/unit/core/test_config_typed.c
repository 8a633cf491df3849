/*
 * test_config_typed.c - ENUM and LIST rows of the CCOMM_* table: every
 * documented choice parses, a bad value is refused with the variable, the
 * value and the choices, a bad value of any type fails the first
 * communicator's init, and CCOMM_ALGO_*'s choices are lib/native/select.c's rows.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/config.h"
#include "base/log.h"
#include "native/native.h"

/* What fd 2 received while `fn` ran, in text (cleared first). */
static char captured[16384];

static void capture_begin(int *saved, int *fd)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/cc_config_typed_%d.log", (int)getpid());
    *fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    *saved = dup(2);
    assert_true(*fd >= 0 && *saved >= 0);
    unlink(path);
    fflush(stderr);
    dup2(*fd, 2);
}

static void capture_end(int saved, int fd)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, captured, sizeof(captured) - 1, 0);
    close(fd);
    assert_true(n >= 0);
    captured[n] = '\0';
}

static cc_status_t check_captured(void)
{
    int saved, fd;
    capture_begin(&saved, &fd);
    cc_status_t st = cc__config_check();
    capture_end(saved, fd);
    return st;
}

/* Lines of `captured` that contain `what`. */
static int lines_with(const char *what)
{
    int n = 0;
    for (const char *p = captured; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

/* The next "a, b, c" item into out; NULL after the last. */
static const char *next_choice(const char *p, char *out, size_t len)
{
    if (!p || !*p) return NULL;
    size_t n = strcspn(p, ",");
    snprintf(out, len, "%.*s", (int)n, p);
    return p[n] ? p + n + 2 : p + n;
}

static void test_every_choice_parses(void **state)
{
    (void)state;
    int rows = 0;
    for (int i = 0; i < cc_env_count(); i++) {
        const cc_env_var_t *v = cc_env_at(i);
        if (strcmp(v->type, "enum") && strcmp(v->type, "list")) {
            assert_null(v->choices);
            continue;
        }
        assert_non_null(v->choices);
        rows++;
        char c[64], low[64];
        int n = 0;
        for (const char *p = v->choices; (p = next_choice(p, c, sizeof(c)));) {
            for (size_t k = 0; k < sizeof(low); k++)
                if (!(low[k] = (char)(c[k] >= 'A' && c[k] <= 'Z' ? c[k] + 32 : c[k]))) break;
            const char *spellings[] = {c, low};
            for (int s = 0; s < 2; s++) {
                setenv(v->name, spellings[s], 1);
                cc__config_reload();
                assert_int_equal(check_captured(), CC_OK);
                assert_string_equal(cc_env_effective(v->name), c); /* the table's spelling */
            }
            n++;
        }
        assert_true(n >= 2);
        setenv(v->name, "no_such_choice", 1);
        cc__config_reload();
        assert_int_equal(check_captured(), CC_ERR_INVALID_ARG);
        char want[256];
        snprintf(want, sizeof(want), "%s=\"no_such_choice\"", v->name);
        assert_non_null(strstr(captured, want));
        assert_non_null(strstr(captured, v->choices));
        assert_int_equal(lines_with(v->name), 1);
        assert_string_equal(cc_env_effective(v->name), v->default_value); /* the default, meanwhile */
        unsetenv(v->name);
    }
    cc__config_reload();
    assert_true(rows >= 20); /* 14 CCOMM_ALGO_* and at least 6 others */
}

/* Every subsystem's bit (CC_SUBSYS_ALL has bits beyond them). */
#define CC__SUBSYS_OR(name) | CC_SUBSYS_##name
#define KNOWN (0u CC__SUBSYS_MAP(CC__SUBSYS_OR))

static void test_list_syntax(void **state)
{
    (void)state;
    setenv("CCOMM_LOG_SUBSYS", "^SHM, ^tcp", 1);
    cc__config_reload();
    assert_int_equal(check_captured(), CC_OK);
    assert_int_equal(cc__log_mask & KNOWN, KNOWN & ~(uint32_t)(CC_SUBSYS_SHM | CC_SUBSYS_TCP));
    setenv("CCOMM_LOG_SUBSYS", "CORE,shm", 1);
    cc__config_reload();
    assert_int_equal(cc__log_mask, CC_SUBSYS_CORE | CC_SUBSYS_SHM);
    assert_string_equal(cc_env_effective("CCOMM_LOG_SUBSYS"), "CORE,SHM");
    setenv("CCOMM_LOG_SUBSYS", "ALL,^NET", 1);
    cc__config_reload();
    assert_int_equal(cc__log_mask & KNOWN, KNOWN & ~(uint32_t)CC_SUBSYS_NET);
    const char *bad[] = {"CORE,,SHM", "^", "CORE,", "CORE;SHM"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        setenv("CCOMM_LOG_SUBSYS", bad[i], 1);
        cc__config_reload();
        assert_int_equal(check_captured(), CC_ERR_INVALID_ARG);
        assert_int_equal(lines_with("CCOMM_LOG_SUBSYS="), 1);
        assert_int_equal(cc__log_mask, CC_SUBSYS_ALL); /* the default meanwhile */
    }
    unsetenv("CCOMM_LOG_SUBSYS");
    /* The other spellings: LIFECYCLE is A; WARNING is WARN. */
    setenv("CCOMM_CLOG_EVENTS", "lifecycle,Q", 1);
    setenv("CCOMM_LOG_LEVEL", "warning", 1);
    cc__config_reload();
    assert_int_equal(check_captured(), CC_OK);
    assert_int_equal(cc__cfg()->clog_events >> 1, CC_CLOG_A | CC_CLOG_Q);
    assert_string_equal(cc__cfg()->log_level, "WARN");
    unsetenv("CCOMM_CLOG_EVENTS");
    unsetenv("CCOMM_LOG_LEVEL");
    cc__config_reload();
}

/* The choices of a table row, or NULL. */
static const char *choices_of(const char *name)
{
    for (int i = 0; i < cc_env_count(); i++)
        if (!strcmp(cc_env_at(i)->name, name)) return cc_env_at(i)->choices;
    return NULL;
}

/* CCOMM_ALGO_<COLL>'s choices are "auto" and select.c's rows of COLL, in order, both ways. */
static void test_algo_choices_are_select_rows(void **state)
{
    (void)state;
    int vars = 0;
    for (int t = 0; t < CC_OP_TYPE_COUNT; t++) {
        const char *var = cc__native_algo_var((cc_op_type_t)t);
        if (!var) continue;
        vars++;
        const char *names[32];
        int n = cc__native_row_names((cc_op_type_t)t, names, 32);
        char want[512] = "auto";
        for (int k = 0; k < n; k++)
            snprintf(want + strlen(want), sizeof(want) - strlen(want), ", %s", names[k]);
        const char *have = choices_of(var);
        assert_non_null(have);
        if (strcmp(have, want))
            fail_msg("%s: the table's choices \"%s\" are not select.c's rows \"%s\"", var, have,
                     want);
    }
    int table = 0;
    for (int i = 0; i < cc_env_count(); i++)
        table += !strncmp(cc_env_at(i)->name, "CCOMM_ALGO_", 11);
    assert_int_equal(vars, table); /* no CCOMM_ALGO_* row without a collective */
}

/* cc_comm_init of a job of one under `var=value`: its status, what it logged. */
static cc_status_t init_with(const char *var, const char *value)
{
    setenv(var, value, 1);
    cc__config_reload();
    int saved, fd;
    capture_begin(&saved, &fd);
    cc_comm_t *c = NULL;
    cc_status_t st = cc_comm_init(&c, 0, 1, "127.0.0.1:0", NULL);
    capture_end(saved, fd);
    if (c) cc_comm_destroy(c);
    assert_true(st == CC_OK || !c);
    unsetenv(var);
    cc__config_reload();
    return st;
}

/* A bad value of every type stops the first init with one line, not a warning and a default. */
static void test_bad_value_fails_init(void **state)
{
    (void)state;
    static const struct {
        const char *var, *value, *says;
    } cases[] = {
        {"CCOMM_GPU_TIMING", "sundial", "is not one of events, cupti, nccl-profiler"},
        {"CCOMM_ALGO_ALLREDUCE", "warp",
         "is not one of auto, shm_flat, shm_stream, shm_cma, recursive_doubling, halving_doubling, ring"},
        {"CCOMM_CLOG_EVENTS", "Q,X", "\"X\" is not one of ALL, Q, S, E, W, A"},
        {"CCOMM_TIMEOUT", "thirty", "is not an integer"},
        {"CCOMM_SHM_RING_SIZE", "1Q", "is not a size"},
        {"CCOMM_RECORDER_KEEP", "maybe", "is not a bool"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cc_status_t st = init_with(cases[i].var, cases[i].value);
        char want[256];
        snprintf(want, sizeof(want), "%s=\"%s\"", cases[i].var, cases[i].value);
        if (st != CC_ERR_INVALID_ARG || !strstr(captured, want) ||
            !strstr(captured, cases[i].says) || lines_with(cases[i].var) != 1)
            fail_msg("%s: init gave %s and logged:\n%s", want, cc_status_name(st), captured);
    }
    assert_int_equal(init_with("CCOMM_GPU_TIMING", "CUPTI"), CC_OK); /* case aside */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_choice_parses),
        cmocka_unit_test(test_list_syntax),
        cmocka_unit_test(test_algo_choices_are_select_rows),
        cmocka_unit_test(test_bad_value_fails_init),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
