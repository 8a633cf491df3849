/*
 * test_files.c - rings, dumps, clog and log files where other users can
 * reach (issue 14, findings 1, 5 and 14).
 *
 * "private" cases run as any user: the per-user default directory, a
 * directory open to others' writes, a link planted on the way, a log file
 * on a full disk (/dev/full). "attack" cases need root: a forked child
 * becomes the attacker (nobody) and prepares the trap, another child with a
 * third uid runs ccomm as the victim, so that root's permission override
 * hides nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ccomm/ccomm.h"
#include "base/config.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "recorder/recorder.h"
#include "tmpdir.h"

#define ATTACKER 65534 /* nobody */
#define VICTIM   4242  /* a uid of no one: only its number matters */

/* Each test's files, in a directory 01777 like /tmp (tmpdir.h). */
static int setup(void **state)
{
    (void)state;
    /* Like /tmp: the other uids make files here too (mkdtemp makes it 0700). */
    return td_make("ccomm-files-test", 01777);
}

static int teardown(void **state)
{
    (void)state;
    td_remove();
    return 0;
}

/* Run fn as `uid` in a forked child (uid -1: as we are); its return value. */
static int as_user(int uid, int (*fn)(void *), void *arg)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (uid >= 0 &&
            (setgroups(0, NULL) != 0 || setgid((gid_t)uid) != 0 || setuid((uid_t)uid) != 0))
            _exit(99);
        _exit(fn(arg));
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* In a child: stderr to <root>/<name>.<uid> (to read ccomm's messages
 * back; one file per uid, as the kernel's protected_regular keeps one uid
 * from reopening another's file in a sticky directory), then the
 * configuration read again from the environment. */
static void child_config(const char *name)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/%s.%u", td_dir, name, (unsigned)geteuid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd >= 0) dup2(fd, 2), close(fd);
    cc__config_reload();
}

/* The stderr file of a child of `uid` (-1: ours). */
static const char *err(const char *name, int uid)
{
    static char buf[4][300];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, 300, "%s/%s.%u", td_dir, name, uid < 0 ? (unsigned)geteuid() : (unsigned)uid);
    return b;
}

static void write_file(const char *path, const char *text, unsigned mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    fchmod(fd, mode);
    close(fd);
}

/* --- private: any user --- */

/* The default ring directory is the user's own: /dev/shm/ccomm-<uid>. */
static int open_default(void *arg)
{
    (void)arg;
    unsetenv("CCOMM_RECORDER_DIR");
    setenv("CCOMM_JOB_ID", "files-test-default", 1);
    child_config("default.err");
    if (cc__recorder_open(0, 1, NULL) != CC_OK) return 1;
    char want[64];
    snprintf(want, sizeof(want), "/dev/shm/ccomm-%u/files-test-default/", (unsigned)geteuid());
    const char *p = cc_recorder_ring_path();
    int ok = p && !strncmp(p, want, strlen(want));
    fprintf(stderr, "ring path %s, want under %s\n", p ? p : "(none)", want);
    if (p) unlink(p);
    want[strlen(want) - 1] = '\0';
    rmdir(want);
    return ok ? 0 : 2;
}

static void test_default_dir_is_per_user(void **state)
{
    (void)state;
    assert_int_equal(as_user(-1, open_default, NULL), 0);
}

static const char *g_rec_dir; /* for open_in */

/* Open the recorder under g_rec_dir: 0 opened, 1 refused, 2 refused
 * without naming the reason `arg`. */
static int open_in(void *arg)
{
    setenv("CCOMM_RECORDER_DIR", g_rec_dir, 1);
    setenv("CCOMM_JOB_ID", "trap", 1);
    child_config("open.err");
    cc_status_t st = cc__recorder_open(0, 1, NULL);
    if (st == CC_OK) {
        fprintf(stderr, "opened %s\n", cc_recorder_ring_path());
        return 0;
    }
    if (cc_recorder_ring_path() != NULL) return 3;
    char path[300];
    snprintf(path, sizeof(path), "%s/open.err.%u", td_dir, (unsigned)geteuid());
    return arg && !td_file_has(path, arg) ? 2 : 1;
}

/* A ring directory others may write to is refused; the recorder stays off. */
static void test_dir_writable_by_others(void **state)
{
    (void)state;
    g_rec_dir = td_at("open-dir");
    assert_int_equal(mkdir(g_rec_dir, 0700), 0);
    assert_int_equal(chmod(g_rec_dir, 0777), 0);
    assert_int_equal(as_user(-1, open_in, "is writable by other users (mode 0777"), 1);
    /* The job directory below it too. */
    assert_int_equal(chmod(g_rec_dir, 0700), 0);
    assert_int_equal(mkdir(td_at("open-dir/trap"), 0700), 0);
    assert_int_equal(chmod(td_at("open-dir/trap"), 0770), 0);
    assert_int_equal(as_user(-1, open_in, "open-dir/trap is writable by other users (mode 0770"),
                     1);
    /* Closed again: accepted. */
    assert_int_equal(chmod(td_at("open-dir/trap"), 0700), 0);
    assert_int_equal(as_user(-1, open_in, NULL), 0);
}

/* Anyone may swap entries of a world-writable directory without the sticky bit. */
static void test_parent_without_sticky_bit(void **state)
{
    (void)state;
    assert_int_equal(mkdir(td_at("open-parent"), 0700), 0);
    assert_int_equal(chmod(td_at("open-parent"), 0777), 0);
    g_rec_dir = td_at("open-parent/rings");
    assert_int_equal(as_user(-1, open_in, "has no sticky bit (mode 0777)"), 1);
    assert_int_equal(chmod(td_at("open-parent"), 01777), 0);
    assert_int_equal(as_user(-1, open_in, NULL), 0);
}

/* A clog path through a link: refused, the link's target untouched. */
static int clog_open_at(void *arg)
{
    child_config("clog.err");
    cc_clog_t *c = NULL;
    cc_status_t st = cc_clog_open((const char *)arg, NULL, &c);
    if (st == CC_OK) {
        cc_clog_close(c);
        return 0;
    }
    return st == CC_ERR_INVALID_ARG ? 1 : 2;
}

static void test_clog_link_not_followed(void **state)
{
    (void)state;
    write_file(td_at("precious"), "keep me\n", 0600);
    assert_int_equal(symlink(td_at("precious"), td_at("clog.0.log")), 0);
    assert_int_equal(as_user(-1, clog_open_at, (void *)td_at("clog.0.log")), 1);
    assert_true(td_file_has(err("clog.err", -1), "is a symbolic link (not followed)"));
    assert_true(td_file_has(td_at("precious"), "keep me"));
    /* A file of our own is reused and truncated; a new one is ours, 0600. */
    assert_int_equal(as_user(-1, clog_open_at, (void *)td_at("precious")), 0);
    assert_false(td_file_has(td_at("precious"), "keep me"));
    assert_int_equal(as_user(-1, clog_open_at, (void *)td_at("clog.new.log")), 0);
    struct stat st;
    assert_int_equal(stat(td_at("clog.new.log"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

/* Log a few errors with CCOMM_LOG_FILE set; stderr goes to <name>.err. */
static int log_to(void *arg)
{
    setenv("CCOMM_LOG_FILE", (const char *)arg, 1);
    child_config("log.err");
    cc_log_error(CC_SUBSYS_CORE, "first error of the test");
    cc_log_error(CC_SUBSYS_CORE, "second error of the test");
    return 0;
}

static void test_log_link_not_followed(void **state)
{
    (void)state;
    write_file(td_at("precious-log"), "keep me\n", 0600);
    assert_int_equal(symlink(td_at("precious-log"), td_at("ccomm.log")), 0);
    assert_int_equal(as_user(-1, log_to, (void *)td_at("ccomm.log")), 0);
    assert_false(td_file_has(td_at("precious-log"), "error of the test"));
    assert_true(
        td_file_has(err("log.err", -1), "is a symbolic link (not followed); logging to stderr"));
    assert_true(td_file_has(err("log.err", -1), "second error of the test"));
}

/* Finding 14: a full disk must not swallow the errors. */
static void test_log_full_disk(void **state)
{
    (void)state;
    assert_int_equal(as_user(-1, log_to, (void *)"/dev/full"), 0);
    assert_true(td_file_has(err("log.err", -1),
                            "CCOMM_LOG_FILE \"/dev/full\": cannot write: No space left on "
                            "device; logging to stderr from now on"));
    assert_true(td_file_has(err("log.err", -1), "first error of the test"));
    assert_true(td_file_has(err("log.err", -1), "second error of the test"));
    /* Said once, not once per line. */
    char buf[8192] = "";
    FILE *f = fopen(err("log.err", -1), "r");
    assert_non_null(f);
    buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
    fclose(f);
    const char *first = strstr(buf, "logging to stderr from now on");
    assert_null(strstr(first + 1, "logging to stderr from now on"));
}

/* Issue 13.6: a normal exit with no failure recorded removes the ring. */
static int exit_after(void *arg)
{
    const char *how = arg;
    setenv("CCOMM_RECORDER_DIR", td_at("exit-rings"), 1);
    setenv("CCOMM_JOB_ID", "exitjob", 1);
    setenv("CCOMM_DUMP_DIR", td_at("exit-dumps"), 1);
    if (!strcmp(how, "keep")) setenv("CCOMM_RECORDER_KEEP", "1", 1);
    child_config("exit.err");
    if (cc__recorder_open(0, 1, NULL) != CC_OK) return 1;
    if (!strcmp(how, "dump") && cc_recorder_dump(NULL) != CC_OK) return 2;
    if (!strcmp(how, "abort")) {
        const int32_t world[1] = {0};
        cc__recorder_add_comm(0x5eed, 0, "world", 0, 1, world);
        cc_abort_info_t info = {.comm_id = 0x5eed, .reason = CC_ERR_TIMEOUT};
        cc__recorder_on_abort(&info, NULL);
    }
    if (!strcmp(how, "kill")) raise(SIGKILL);
    exit(0); /* atexit handlers run, as at the end of main */
}

static int rings_left(void)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/exitjob", td_at("exit-rings"));
    int n = 0;
    DIR *d = opendir(path);
    if (!d) return 0; /* the job's directory went with its last ring */
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".ccfr") != NULL;
    closedir(d);
    return n;
}

static void test_ring_removed_at_clean_exit(void **state)
{
    (void)state;
    assert_int_equal(as_user(-1, exit_after, "clean"), 0);
    assert_int_equal(rings_left(), 0);
    assert_int_equal(as_user(-1, exit_after, "keep"), 0);
    assert_int_equal(rings_left(), 1);
    assert_int_equal(as_user(-1, exit_after, "dump"), 0);
    assert_int_equal(rings_left(), 2);
    assert_int_equal(as_user(-1, exit_after, "abort"), 0);
    assert_int_equal(rings_left(), 3);
    assert_int_equal(as_user(-1, exit_after, "kill"), 128 + SIGKILL);
    assert_int_equal(rings_left(), 4);
}

/* --- attack: root plays two other users --- */

static int attacker_squats(void *arg)
{
    (void)arg;
    /* The victim's predictable names, open to all, with a ring file ready. */
    if (mkdir(td_at("shm/victim-rings"), 0777) || chmod(td_at("shm/victim-rings"), 0777)) return 1;
    if (mkdir(td_at("shm/victim-rings/trap"), 0777) || chmod(td_at("shm/victim-rings/trap"), 0777))
        return 2;
    return 0;
}

static int attacker_plants(void *arg)
{
    const char *path = arg;
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0) return 1;
    fchmod(fd, 0666);
    close(fd);
    return 0;
}

/* The ring dir of another user: the victim's recorder stays off; nothing of
 * the victim's lands in the attacker's files. */
static void test_recorder_dir_of_another_user(void **state)
{
    (void)state;
    assert_int_equal(mkdir(td_at("shm"), 0700), 0);
    assert_int_equal(chmod(td_at("shm"), 01777), 0); /* like /dev/shm */
    assert_int_equal(as_user(ATTACKER, attacker_squats, NULL), 0);
    g_rec_dir = td_at("shm/victim-rings");
    char want[64];
    snprintf(want, sizeof(want), "belongs to uid %d, not to this user (uid %d)", ATTACKER, VICTIM);
    assert_int_equal(as_user(VICTIM, open_in, want), 1);
    /* Nothing of the victim's in the attacker's directory. */
    assert_int_equal(rmdir(td_at("shm/victim-rings/trap")), 0);
    /* Root is a victim too (it may write anywhere). */
    assert_int_equal(as_user(-1, open_in, "belongs to uid 65534, not to this user (uid 0)"), 1);
    assert_int_equal(rmdir(td_at("shm/victim-rings/trap")), -1);
    assert_int_equal(errno, ENOENT);
}

/* A stale ring file of another user in our own directory (as if left by an
 * earlier job with this pid) is replaced, not reused: the mapping is backed
 * by a new 0600 file of ours that no one else can truncate. */
static int open_over_stale(void *arg)
{
    (void)arg;
    setenv("CCOMM_RECORDER_DIR", g_rec_dir, 1);
    setenv("CCOMM_JOB_ID", "trap", 1);
    child_config("stale.err");
    char mine[256];
    snprintf(mine, sizeof(mine), "%s/trap/rank0.%d.ccfr", g_rec_dir, (int)getpid());
    int fd = open(mine, O_RDWR | O_CREAT | O_EXCL, 0666);
    if (fd < 0 || fchmod(fd, 0666) != 0 || fchown(fd, ATTACKER, ATTACKER) != 0) return 4;
    close(fd);
    if (cc__recorder_open(0, 1, NULL) != CC_OK) return 1;
    struct stat st;
    if (stat(mine, &st) != 0) return 2;
    fprintf(stderr, "ring uid %u mode %o size %lld\n", (unsigned)st.st_uid, st.st_mode & 0777,
            (long long)st.st_size);
    return st.st_uid == geteuid() && (st.st_mode & 0777) == 0600 ? 0 : 3;
}

static void test_stale_ring_of_another_user(void **state)
{
    (void)state;
    assert_int_equal(mkdir(td_at("own"), 0700), 0);
    assert_int_equal(mkdir(td_at("own/trap"), 0700), 0);
    g_rec_dir = td_at("own");
    assert_int_equal(as_user(-1, open_over_stale, NULL), 0);
    assert_true(td_file_has(err("stale.err", -1), "removing stale ring file"));
}

/* A dump directory another user made: no dump is written into it. */
static int dump_into(void *arg)
{
    (void)arg;
    setenv("CCOMM_RECORDER_DIR", td_at("dumprings"), 1);
    setenv("CCOMM_DUMP_DIR", td_at("shm/dumps"), 1);
    child_config("dump.err");
    if (cc__recorder_open(0, 1, NULL) != CC_OK) return 3;
    cc_status_t st = cc_recorder_dump(NULL);
    if (st == CC_OK) return 0;
    char path[300];
    snprintf(path, sizeof(path), "%s/dump.err.%u", td_dir, (unsigned)geteuid());
    return td_file_has(path, "shm/dumps belongs to uid 65534") ? 1 : 2;
}

static int attacker_dump_dir(void *arg)
{
    (void)arg;
    return mkdir(td_at("shm/dumps"), 0777) || chmod(td_at("shm/dumps"), 0777);
}

static void test_dump_dir_of_another_user(void **state)
{
    (void)state;
    assert_int_equal(mkdir(td_at("shm"), 0700), 0);
    assert_int_equal(chmod(td_at("shm"), 01777), 0);
    assert_int_equal(mkdir(td_at("dumprings"), 0700), 0);
    assert_int_equal(chown(td_at("dumprings"), VICTIM, VICTIM), 0);
    assert_int_equal(as_user(ATTACKER, attacker_dump_dir, NULL), 0);
    assert_int_equal(as_user(VICTIM, dump_into, NULL), 1);
}

/* A clog file planted by another user in a shared directory: refused, and
 * nothing of the victim's is written into it. */
static void test_clog_file_of_another_user(void **state)
{
    (void)state;
    assert_int_equal(mkdir(td_at("team"), 0700), 0);
    assert_int_equal(chmod(td_at("team"), 0777), 0); /* shared, no sticky bit */
    assert_int_equal(as_user(ATTACKER, attacker_plants, (void *)td_at("team/clog.0.log")), 0);
    assert_int_equal(as_user(VICTIM, clog_open_at, (void *)td_at("team/clog.0.log")), 1);
    assert_true(
        td_file_has(err("clog.err", VICTIM), "belongs to uid 65534, not to this user (uid 4242)"));
    struct stat st;
    assert_int_equal(stat(td_at("team/clog.0.log"), &st), 0);
    assert_int_equal(st.st_size, 0);
    /* The log file likewise. */
    assert_int_equal(as_user(ATTACKER, attacker_plants, (void *)td_at("team/ccomm.log")), 0);
    assert_int_equal(as_user(VICTIM, log_to, (void *)td_at("team/ccomm.log")), 0);
    assert_int_equal(stat(td_at("team/ccomm.log"), &st), 0);
    assert_int_equal(st.st_size, 0);
    assert_true(td_file_has(err("log.err", VICTIM), "belongs to uid 65534"));
    assert_true(td_file_has(err("log.err", VICTIM), "second error of the test"));
}

/* The job goes on without a recorder: a 1-rank communicator is made and
 * runs an op, with the ring refused. */
static int init_without_ring(void *arg)
{
    (void)arg;
    setenv("CCOMM_RECORDER_DIR", td_at("shm/victim-rings"), 1);
    setenv("CCOMM_STORE_LINGER", "0", 1); /* a solo job: no one to wait for */
    child_config("init.err");
    cc_comm_t *c = NULL;
    if (cc_comm_init(&c, 0, 1, "127.0.0.1:0", NULL) != CC_OK) return 2;
    int32_t x = 5, y = 0;
    cc_status_t st = cc_allreduce(c, &x, &y, 1, CC_INT32, CC_SUM, NULL, NULL);
    int ring = cc_recorder_ring_path() != NULL;
    cc_comm_destroy(c);
    return st == CC_OK && y == 5 && !ring ? 0 : 3;
}

static void test_job_goes_on_without_ring(void **state)
{
    (void)state;
    assert_int_equal(mkdir(td_at("shm"), 0700), 0);
    assert_int_equal(chmod(td_at("shm"), 01777), 0);
    assert_int_equal(as_user(ATTACKER, attacker_squats, NULL), 0);
    assert_int_equal(as_user(VICTIM, init_without_ring, NULL), 0);
    assert_true(td_file_has(err("init.err", VICTIM), "flight recorder is off for this process"));
}

/* The check that guards every mapping (rings, shm segments, arenas): only
 * this user's regular file with one link may back one. */
static void test_only_own_files_back_a_mapping(void **state)
{
    (void)state;
    char why[512];
    write_file(td_at("mine"), "x", 0600);
    int fd = open(td_at("mine"), O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(cc__fd_own_file(fd, td_at("mine"), why, sizeof(why)), 0);
    assert_int_equal(link(td_at("mine"), td_at("second-name")), 0);
    assert_int_equal(cc__fd_own_file(fd, td_at("mine"), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "has 2 hard links"));
    unlink(td_at("second-name"));
    assert_int_equal(fchown(fd, ATTACKER, ATTACKER), 0);
    assert_int_equal(cc__fd_own_file(fd, td_at("mine"), why, sizeof(why)), -1);
    assert_non_null(strstr(why, "belongs to uid 65534, not to this user (uid 0)"));
    close(fd);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest private_tests[] = {
        cmocka_unit_test_setup_teardown(test_default_dir_is_per_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dir_writable_by_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parent_without_sticky_bit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clog_link_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_link_not_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_full_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ring_removed_at_clean_exit, setup, teardown),
    };
    const struct CMUnitTest attack_tests[] = {
        cmocka_unit_test_setup_teardown(test_recorder_dir_of_another_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_ring_of_another_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dump_dir_of_another_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_clog_file_of_another_user, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_goes_on_without_ring, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_own_files_back_a_mapping, setup, teardown),
    };
    if (argc > 1 && !strcmp(argv[1], "attack")) {
        if (geteuid() != 0) {
            printf("skipped: playing another user needs root (setuid to uids %d and %d)\n",
                   ATTACKER, VICTIM);
            return 77;
        }
        return cmocka_run_group_tests(attack_tests, NULL, NULL);
    }
    return cmocka_run_group_tests(private_tests, NULL, NULL);
}
