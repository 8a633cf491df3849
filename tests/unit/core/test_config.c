/* test_config.c - the CCOMM_* table: defaults, parsing, bad values, the env API. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/config.h"

static void test_defaults(void **state)
{
    (void)state;
    unsetenv("CCOMM_TIMEOUT");
    unsetenv("CCOMM_SHM_RING_SIZE");
    cc__config_reload();
    assert_int_equal(cc__cfg()->timeout, 600);
    assert_int_equal(cc__cfg()->shm_ring_size, 1u << 20);
    assert_string_equal(cc__cfg()->transport, "auto");
    assert_int_equal(cc__cfg()->recorder_entries, 4096);
}

static void test_values_and_bad_values(void **state)
{
    (void)state;
    setenv("CCOMM_TIMEOUT", "30", 1);
    setenv("CCOMM_SHM_RING_SIZE", "4M", 1);
    setenv("CCOMM_DESYNC_CHECK", "yes", 1);
    cc__config_reload();
    assert_int_equal(cc__cfg()->timeout, 30);
    assert_int_equal(cc__cfg()->shm_ring_size, 4u << 20);
    assert_int_equal(cc__cfg()->desync_check, 1);
    assert_int_equal(cc__config_check(), CC_OK);
    setenv("CCOMM_TIMEOUT", "thirty", 1); /* bad: default kept, and the first init fails */
    setenv("CCOMM_SHM_RING_SIZE", "-5", 1);
    cc__config_reload();
    assert_int_equal(cc__cfg()->timeout, 600);
    assert_int_equal(cc__cfg()->shm_ring_size, 1u << 20);
    assert_int_equal(cc__config_check(), CC_ERR_INVALID_ARG);
    unsetenv("CCOMM_TIMEOUT");
    unsetenv("CCOMM_SHM_RING_SIZE");
    unsetenv("CCOMM_DESYNC_CHECK");
}

static const char *default_of(const char *name)
{
    for (int i = 0; i < cc_env_count(); i++)
        if (!strcmp(cc_env_at(i)->name, name)) return cc_env_at(i)->default_value;
    return NULL;
}

/* An empty variable means its default, as in other tools: no error, no warning. */
static void test_empty_means_default(void **state)
{
    (void)state;
    setenv("CCOMM_TRANSPORT", "", 1);
    setenv("CCOMM_TIMEOUT", "", 1);
    setenv("CCOMM_SHM_RING_SIZE", "", 1);
    setenv("CCOMM_DESYNC_CHECK", "", 1);
    setenv("CCOMM_RECORDER_DIR", "", 1);
    char path[64], text[4096] = "";
    snprintf(path, sizeof(path), "/tmp/cc_config_test_%d.log", (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    dup2(fd, 2);
    cc__config_reload();
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n >= 0);
    assert_null(strstr(text, "warning")); /* "" is not a bad value */
    assert_string_equal(cc__cfg()->transport, "auto");
    assert_int_equal(cc__cfg()->timeout, 600);
    assert_int_equal(cc__cfg()->shm_ring_size, 1u << 20);
    assert_int_equal(cc__cfg()->desync_check, 0);
    assert_string_equal(cc__cfg()->recorder_dir, default_of("CCOMM_RECORDER_DIR"));
    assert_string_equal(cc_env_effective("CCOMM_TRANSPORT"), "auto");
    unsetenv("CCOMM_TRANSPORT");
    unsetenv("CCOMM_TIMEOUT");
    unsetenv("CCOMM_SHM_RING_SIZE");
    unsetenv("CCOMM_DESYNC_CHECK");
    unsetenv("CCOMM_RECORDER_DIR");
    cc__config_reload();
}

static void test_parse_size(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(cc__parse_size("64M", &v), 0);
    assert_int_equal(v, 64ull << 20);
    assert_int_equal(cc__parse_size("1KiB", &v), 0);
    assert_int_equal(v, 1024);
    assert_int_equal(cc__parse_size("12", &v), 0);
    assert_int_equal(v, 12);
    assert_int_not_equal(cc__parse_size("", &v), 0);
    assert_int_not_equal(cc__parse_size("5Q", &v), 0);
    assert_int_not_equal(cc__parse_size("99999999999999999999T", &v), 0);
    assert_int_not_equal(cc__parse_size("-1", &v), 0);
}

static void test_env_api(void **state)
{
    (void)state;
    setenv("CCOMM_JOB_KEY", "s3cret", 1);
    cc__config_reload();
    int n = cc_env_count();
    assert_true(n > 20);
    int found = 0;
    for (int i = 0; i < n; i++) {
        const cc_env_var_t *v = cc_env_at(i);
        assert_non_null(v);
        assert_true(strncmp(v->name, "CCOMM_", 6) == 0);
        assert_non_null(v->help);
        assert_true(strlen(v->help) > 10);
        assert_non_null(v->type);
        if (!strcmp(v->name, "CCOMM_JOB_KEY")) found = (v->flags & CC_ENV_SECRET) != 0;
    }
    assert_true(found);
    assert_null(cc_env_at(n));
    assert_null(cc_env_at(-1));
    assert_string_equal(cc_env_effective("CCOMM_JOB_KEY"), "<set>");
    assert_string_equal(cc_env_effective("CCOMM_TIMEOUT"), "600");
    assert_null(cc_env_effective("CCOMM_NO_SUCH"));
    unsetenv("CCOMM_JOB_KEY");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values_and_bad_values),
        cmocka_unit_test(test_empty_means_default),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_env_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
