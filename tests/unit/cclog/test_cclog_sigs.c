/*
 * test_cclog_sigs.c - the cost of many signatures (issue 14, finding 9): a
 * log defining 40,000 signatures is read with a handful of reallocations,
 * not one per signature (which is quadratic wherever realloc copies: 35 s
 * under ASan). realloc is interposed to count the calls; sanitizer builds
 * have their own realloc, and the test says it is skipped there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "parse.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNTING 0
#else
#define COUNTING 1
extern void *__libc_realloc(void *p, size_t n);
static long reallocs;

/* Every realloc of the process comes here while the test runs. */
void *realloc(void *p, size_t n)
{
    reallocs++;
    return __libc_realloc(p, n);
}
#endif

#define NSIGS 40000

static void test_many_signatures(void **state)
{
    (void)state;
#if COUNTING
    char path[] = "/tmp/cclog-sigs-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "V|1|base_timestamp=1.000000|rank=0|pid=1|host=h|events=QSEWA\n");
    for (int i = 1; i <= NSIGS; i++)
        fprintf(f,
                "C%d|sig|all_reduce|in_count=%d|out_count=%d|dtype=f32|red_op=sum|root=-1|"
                "peer=-1|comm=world\n",
                i, i, i);
    fclose(f);
    reallocs = 0;
    cl_log_t *log = cl_log_load(path, stderr);
    long n = reallocs;
    unlink(path);
    assert_non_null(log);
    assert_int_equal(log->nsig, NSIGS);
    assert_int_equal(cl_log_sig(log, NSIGS)->in_count, NSIGS);
    cl_log_free(log);
    /* Doubling needs ~10 for the signatures and ~10 for the entries. */
    if (n > 200) fail_msg("%ld reallocations to read %d signatures", n, NSIGS);
#endif
}

int main(void)
{
#if !COUNTING
    printf("skipped: sanitizer builds have their own realloc\n");
    return 77;
#endif
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_many_signatures)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
