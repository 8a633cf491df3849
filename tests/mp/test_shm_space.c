/*
 * test_shm_space.c - shared memory in containers (issue 13, point 4):
 *  - "private": ranks of one host whose CCOMM_SHM_DIR differ (a private
 *    /dev/shm per container, simulated with a directory per group of
 *    ranks) talk over TCP to each other and shm within a group, instead of
 *    failing the init;
 *  - "tmpfs" (root: mounts small tmpfs): a 3 MiB CCOMM_SHM_DIR that cannot
 *    hold 1 MiB rings for 4 ranks gets smaller rings, with a warning; one
 *    of 128 KiB fails the init with a message that says what ran out, how
 *    much was needed and what to set, and the recorder likewise.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "ccomm/ccomm.h"
#include "base/config.h"
#include "mp.h"
#include "tmpdir.h"

static int setup(void **state)
{
    (void)state;
    return td_make("ccomm-shm-space", 0700);
}

static int teardown(void **state)
{
    (void)state;
    td_remove();
    return 0;
}

/* The ranks' argument: "<mode> <dir>". */
static char *arg_of(const char *mode)
{
    static char buf[128];
    snprintf(buf, sizeof(buf), "%s %s", mode, td_dir);
    return buf;
}

/* A rank (a fresh process: arg "<mode> <dir>" brings the directory): its
 * shm dir below <dir> is chosen by mode and rank, its log is <dir>/log.<rank>;
 * init, one allreduce, destroy. Exit 0 when the sum is right, 3 when init
 * fails. */
static int rank_fn(int rank, int size, const char *addr, void *arg)
{
    char mode[16];
    if (sscanf(arg, "%15s %63s", mode, td_dir) != 2 || td_dir[0] != '/') return 9;
    char shm[300], log[300];
    if (!strcmp(mode, "private")) /* ranks 0 and 1 share a /dev/shm, rank 2 has its own */
        snprintf(shm, sizeof(shm), "%s/%s", td_dir, rank < 2 ? "shmA" : "shmB");
    else
        snprintf(shm, sizeof(shm), "%s/tiny", td_dir);
    mkdir(shm, 01777);
    snprintf(log, sizeof(log), "%s/log.%d", td_dir, rank);
    setenv("CCOMM_SHM_DIR", shm, 1);
    setenv("CCOMM_LOG_FILE", log, 1);
    setenv("CCOMM_LOG_LEVEL", "INFO", 1);
    if (!strcmp(mode, "tiny")) setenv("CCOMM_RECORDER_DIR", td_at("tiny/rings"), 1);
    cc__config_reload();
    cc_comm_t *comm = NULL;
    if (cc_comm_init(&comm, rank, size, addr, NULL) != CC_OK) return 3;
    int32_t x = rank + 1, sum = 0;
    cc_status_t st = cc_allreduce(comm, &x, &sum, 1, CC_INT32, CC_SUM, NULL, NULL);
    cc_comm_destroy(comm);
    CC_TEST_REQUIRE(st == CC_OK && sum == size * (size + 1) / 2, "allreduce: %s, sum %d",
                    cc_status_str(st), sum);
    return 0;
}

static void test_private_shm_per_container(void **state)
{
    (void)state;
    char env_dir[300];
    snprintf(env_dir, sizeof(env_dir), "CCOMM_RECORDER_DIR=%s/rings", td_dir);
    const char *env[] = {env_dir, NULL};
    cc_test_child_t res[3];
    int bad = cc_test_fork_ranks(3, rank_fn, arg_of("private"), 60, env, res);
    for (int r = 0; r < 3; r++)
        printf("rank %d: %s %d\n", r, res[r].exited ? "exit" : "signal",
               res[r].exited ? res[r].code : res[r].signo);
    assert_int_equal(bad, 0);
    assert_true(td_file_has(td_at("log.0"), "rank 0 of 3 connected: 1 peers over shm, 1 over tcp"));
    assert_true(td_file_has(td_at("log.1"), "rank 1 of 3 connected: 1 peers over shm, 1 over tcp"));
    assert_true(td_file_has(td_at("log.2"), "rank 2 of 3 connected: 0 peers over shm, 2 over tcp"));
    assert_true(
        td_file_has(td_at("log.2"), "rank 0 is on this host but its CCOMM_SHM_DIR is another"));
}

/* 1 when a tmpfs of `size` is mounted at <dir>/tiny. */
static int mount_tiny(const char *size)
{
    mkdir(td_at("tiny"), 0755);
    char opt[64];
    snprintf(opt, sizeof(opt), "size=%s,mode=1777", size);
    return mount("tmpfs", td_at("tiny"), "tmpfs", 0, opt) == 0;
}

static void test_small_tmpfs_fits_smaller_rings(void **state)
{
    (void)state;
    assert_true(mount_tiny("3m"));
    char env_dir[300];
    snprintf(env_dir, sizeof(env_dir), "CCOMM_RECORDER_DIR=%s/rings", td_dir);
    const char *env[] = {env_dir, NULL};
    int bad = cc_test_fork_ranks(4, rank_fn, arg_of("fit"), 60, env, NULL);
    umount2(td_at("tiny"), MNT_DETACH);
    assert_int_equal(bad, 0);
    /* The first rank to look may see a little less free: any halving is fine. */
    int said = 0;
    for (int r = 0; r < 4; r++) {
        char p[300];
        snprintf(p, sizeof(p), "%s/log.%d", td_dir, r);
        said += td_file_has(p, "free of 3.0 MiB for 4 local ranks: rings of ") &&
                td_file_has(p, "KiB instead of CCOMM_SHM_RING_SIZE=1.0 MiB");
    }
    assert_true(said >= 1);
}

static void test_tmpfs_too_small_says_why(void **state)
{
    (void)state;
    assert_true(mount_tiny("128k"));
    cc_test_child_t res[4];
    cc_test_fork_ranks(4, rank_fn, arg_of("tiny"), 60, NULL, res);
    umount2(td_at("tiny"), MNT_DETACH);
    for (int r = 0; r < 4; r++)
        assert_true(res[r].exited && res[r].code == 3);
    char p[300];
    snprintf(p, sizeof(p), "%s/log.0", td_dir);
    assert_true(td_file_has(p, "shm: cannot reserve "));
    assert_true(td_file_has(p, ": No space left on device ("));
    assert_true(td_file_has(p, "free of 128.0 KiB); each rank needs 4 KiB + 3 peers x (4 KiB + a "
                               "ring of 64.0 KiB): give CCOMM_SHM_DIR more room (docker run "
                               "--shm-size=1g), lower CCOMM_SHM_RING_SIZE"));
    /* The recorder, in the same tmpfs, says what to set too (and the job went on to init). */
    assert_true(td_file_has(p, "set CCOMM_RECORDER_DIR to a directory with room, lower "
                               "CCOMM_RECORDER_ENTRIES"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest private_tests[] = {
        cmocka_unit_test_setup_teardown(test_private_shm_per_container, setup, teardown),
    };
    const struct CMUnitTest tmpfs_tests[] = {
        cmocka_unit_test_setup_teardown(test_small_tmpfs_fits_smaller_rings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tmpfs_too_small_says_why, setup, teardown),
    };
    if (argc > 1 && !strcmp(argv[1], "tmpfs")) {
        char probe[] = "/tmp/ccomm-shm-probe-XXXXXX";
        int can = mkdtemp(probe) && mount("tmpfs", probe, "tmpfs", 0, "size=64k") == 0;
        if (can) umount2(probe, MNT_DETACH);
        rmdir(probe);
        if (!can) {
            printf("skipped: cannot mount a tmpfs here (%s; needs root)\n", strerror(errno));
            return 77;
        }
        return cmocka_run_group_tests(tmpfs_tests, NULL, NULL);
    }
    return cmocka_run_group_tests(private_tests, NULL, NULL);
}
