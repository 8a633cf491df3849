/* test_status.c - status strings, names, ranges; dtype and op names round-trip; the
 * calling thread's last error (cc_last_error). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/log.h"

static void test_status_strings(void **state)
{
    (void)state;
    assert_string_equal(cc_status_str(CC_OK), "success");
    assert_string_equal(cc_status_name(CC_ERR_TIMEOUT), "ERR_TIMEOUT");
    assert_string_equal(cc_status_str((cc_status_t)12345), "unknown status");
    assert_true(CC_STATUS_IS_CALL_ERROR(CC_ERR_INVALID_ARG));
    assert_true(CC_STATUS_IS_PEER_ERROR(CC_ERR_PEER_LOST));
    assert_true(CC_STATUS_IS_COMM_ERROR(CC_ERR_TIMEOUT));
    assert_true(CC_STATUS_IS_COMM_ERROR(CC_ERR_ABORTED));
    assert_true(CC_STATUS_IS_PROCESS_ERROR(CC_ERR_NO_MEMORY));
    assert_false(CC_STATUS_IS_CALL_ERROR(CC_OK));
    /* every status has a distinct name and a description */
#define CHECK(name, value, desc) assert_string_equal(cc_status_name(CC_##name), #name);
    CC_STATUS_MAP(CHECK)
#undef CHECK
}

static void test_names_roundtrip(void **state)
{
    (void)state;
    for (int d = 0; d < CC_DTYPE_COUNT; d++) {
        cc_dtype_t back = CC_DTYPE_COUNT;
        assert_int_equal(cc_dtype_parse(cc_dtype_name((cc_dtype_t)d), &back), CC_OK);
        assert_int_equal(back, d);
        assert_true(cc_dtype_size((cc_dtype_t)d) > 0);
    }
    for (int o = 0; o < CC_REDOP_COUNT; o++) {
        cc_redop_t back = CC_REDOP_COUNT;
        assert_int_equal(cc_redop_parse(cc_redop_name((cc_redop_t)o), &back), CC_OK);
        assert_int_equal(back, o);
    }
    cc_dtype_t d = CC_INT8;
    assert_int_equal(cc_dtype_parse("float32", &d), CC_OK);
    assert_int_equal(d, CC_FLOAT32);
    assert_int_equal(cc_dtype_parse("float33", &d), CC_ERR_INVALID_ARG);
    assert_int_equal(d, CC_FLOAT32); /* untouched on error */
    assert_string_equal(cc_dtype_name((cc_dtype_t)99), "?");
    assert_int_equal(cc_dtype_size((cc_dtype_t)-1), 0);
    assert_string_equal(cc_op_type_name(CC_OP_ALLREDUCE), "all_reduce");
    assert_string_equal(cc_op_type_name(CC_OP_TYPE_COUNT), "?");
}

static void *other_thread(void *arg)
{
    (void)arg;
    return (void *)cc_last_error(); /* this thread saw no error: "" */
}

/* The last error is the thread's own, kept even when the log level hides error lines. */
static void test_last_error(void **state)
{
    (void)state;
    cc_comm_t *child = NULL;
    assert_int_equal(cc_comm_split(NULL, 0, 0, NULL, &child), CC_ERR_INVALID_ARG);
    assert_non_null(strstr(cc_last_error(), "cc_comm_split: parent"));
    assert_non_null(strstr(cc_last_error(), "is not a valid communicator"));
    pthread_t t;
    void *other = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, &other);
    assert_string_equal((const char *)other, "");
    int level = atomic_load(&cc__log_level);
    atomic_store(&cc__log_level, CC_LOG_LEVEL_NONE); /* error lines hidden */
    assert_int_equal(cc_comm_create_group(NULL, NULL, 0, NULL, &child), CC_ERR_INVALID_ARG);
    atomic_store(&cc__log_level, level);
    assert_non_null(strstr(cc_last_error(), "cc_comm_create_group"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_names_roundtrip),
        cmocka_unit_test(test_last_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
