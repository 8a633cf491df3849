/*
 * test_build_id_core.c - the core's side of "built with the core"
 * (lib/core/plugin.c): a CUDA plugin of another build is refused even when
 * the plugin itself checks nothing, with an error naming both build ids;
 * one of this build loads. argv[1], argv[2]: fake plugins (fake_plugin.c)
 * of another build and of this one. The plugin is loaded once per process,
 * so each case runs in a child.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/build_id.h"
#include "base/config.h"
#include "core/plugin.h"
#include "stderr_capture.h"

static const char *g_other, *g_same;

/* In a child: load `path` as the CUDA plugin; 0 when the outcome is `want`
 * and the log says `must_say` (NULL: anything). */
static int load_case(const char *path, cc_status_t want, const char *must_say)
{
    setenv("CCOMM_CUDA_PLUGIN", path, 1);
    cc__config_reload();
    const cc_engine_v1_t *e = NULL;
    FILE *tmp;
    int saved = capture_begin(&tmp);
    cc_status_t st = cc__plugin_engine("auto", 0, &e);
    char *said = capture_end(tmp, saved);
    int ok = st == want && (!must_say || strstr(said, must_say));
    if (want == CC_OK) ok = ok && e && !strcmp(e->name, "fake");
    if (!ok)
        fprintf(stderr, "load of %s gave %s, want %s; log: %s\n", path, cc_status_name(st),
                cc_status_name(want), said);
    free(said);
    return ok ? 0 : 1;
}

static int in_child(const char *path, cc_status_t want, const char *must_say)
{
    pid_t pid = fork();
    if (pid == 0) _exit(load_case(path, want, must_say));
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

static void test_other_build_refused(void **state)
{
    (void)state;
    assert_int_equal(in_child(g_other, CC_ERR_NOT_SUPPORTED, "of build 0.0.0-fedcba9876543210"), 0);
    assert_int_equal(in_child(g_other, CC_ERR_NOT_SUPPORTED, "core of build " CC_BUILD_ID), 0);
}

static void test_same_build_loads(void **state)
{
    (void)state;
    assert_int_equal(in_child(g_same, CC_OK, NULL), 0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_build_id_core OTHER_PLUGIN SAME_PLUGIN\n");
        return 2;
    }
    g_other = argv[1];
    g_same = argv[2];
    setenv("CCOMM_LOG_LEVEL", "INFO", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_build_refused),
        cmocka_unit_test(test_same_build_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
