/*
 * test_build_id_shim.c - the plugins' side of "built with the core"
 * (lib/cuda/shim.c): cc__shim_init adopts a core table only when its
 * build_id is this build's CC_BUILD_ID, and a refusal names both ids.
 * Linked with shim.c alone (no libccomm): as a plugin is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/build_id.h"
#include "base/log.h"
#include "cuda/shim.h"
#include "stderr_capture.h"

static int level(void)
{
    return CC_LOG_LEVEL_WARN;
}

static uint32_t mask(void)
{
    return CC_SUBSYS_ALL;
}

static cc_status_t init_with(const char *build_id, char **said)
{
    static cc_core_t core; /* static: an adopted table must outlive the call */
    core = (cc_core_t){.build_id = build_id, .log_level = level, .log_mask = mask};
    FILE *tmp;
    int saved = capture_begin(&tmp);
    cc_status_t st = cc__shim_init(&core);
    *said = capture_end(tmp, saved);
    return st;
}

static void test_other_build_refused(void **state)
{
    (void)state;
    char *said;
    assert_int_equal(init_with("0.0.0-0123456789abcdef", &said), CC_ERR_NOT_SUPPORTED);
    assert_null(cc__core);
    assert_non_null(strstr(said, "0.0.0-0123456789abcdef")); /* the core's id */
    assert_non_null(strstr(said, CC_BUILD_ID));              /* and ours */
    free(said);
}

static void test_missing_id_refused(void **state)
{
    (void)state;
    char *said;
    assert_int_equal(init_with(NULL, &said), CC_ERR_NOT_SUPPORTED);
    assert_non_null(strstr(said, "(none)"));
    free(said);
    FILE *tmp;
    int saved = capture_begin(&tmp);
    assert_int_equal(cc__shim_init(NULL), CC_ERR_NOT_SUPPORTED);
    said = capture_end(tmp, saved);
    assert_non_null(strstr(said, "(no core)"));
    assert_null(cc__core);
    free(said);
}

/* A prefix of our id, or ours with more after it, is another build. */
static void test_near_ids_refused(void **state)
{
    (void)state;
    char shorter[] = CC_BUILD_ID, longer[sizeof(CC_BUILD_ID) + 1] = CC_BUILD_ID "0";
    shorter[sizeof(shorter) - 2] = '\0';
    char *said;
    assert_int_equal(init_with(shorter, &said), CC_ERR_NOT_SUPPORTED);
    free(said);
    assert_int_equal(init_with(longer, &said), CC_ERR_NOT_SUPPORTED);
    free(said);
    assert_null(cc__core);
}

static void test_same_build_adopted(void **state)
{
    (void)state;
    char id[] = CC_BUILD_ID; /* equal text, another pointer: compared by value */
    char *said;
    assert_int_equal(init_with(id, &said), CC_OK);
    assert_non_null(cc__core);
    assert_string_equal(cc__core->build_id, CC_BUILD_ID);
    assert_string_equal(said, "");
    free(said);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_build_refused),
        cmocka_unit_test(test_missing_id_refused),
        cmocka_unit_test(test_near_ids_refused),
        cmocka_unit_test(test_same_build_adopted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
