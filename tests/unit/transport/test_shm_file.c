/*
 * test_shm_file.c - the one helper that makes and maps the files behind
 * shm mailboxes and arenas (lib/transport/shm_file.c): every check both
 * kept before they shared it. create: a new 0600 file of the asked size,
 * a planted link replaced (its target untouched); map: no link followed,
 * a size outside the caller's range refused (fstat's size is untrusted),
 * another user's file refused (root only: the file is given away).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "tmpdir.h"
#include "transport/shm.h"

#define LEN 8192u

static int setup(void **s)
{
    (void)s;
    return td_make("ccomm-shm-file", 0700);
}

static int teardown(void **s)
{
    (void)s;
    td_remove();
    return 0;
}

static void test_create_private(void **s)
{
    (void)s;
    void *map;
    int e = 0, opened = 0;
    assert_int_equal(cc__shm_file_create(td_at("seg"), LEN, "segment", &map, &e, &opened), CC_OK);
    assert_true(opened);
    struct stat sb;
    assert_int_equal(lstat(td_at("seg"), &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal((size_t)sb.st_size, LEN);
    memset(map, 0x5a, LEN); /* every page is there */
    /* A peer maps exactly that file and sees the same bytes. */
    void *peer;
    size_t len = 0;
    char why[300];
    assert_int_equal(cc__shm_file_map(td_at("seg"), LEN, LEN, &peer, &len, &e, why, sizeof(why)),
                     CC_OK);
    assert_int_equal(len, LEN);
    assert_int_equal(((unsigned char *)peer)[LEN - 1], 0x5a);
    munmap(peer, len);
    munmap(map, LEN);
}

/* A link left at the name (a stale run's file, or a trap) is replaced, never written through. */
static void test_create_replaces_link(void **s)
{
    (void)s;
    int fd = open(td_at("target"), O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "keep", 4), 4);
    close(fd);
    assert_int_equal(symlink(td_at("target"), td_at("seg")), 0);
    void *map;
    int e = 0, opened = 0;
    assert_int_equal(cc__shm_file_create(td_at("seg"), LEN, "arena", &map, &e, &opened), CC_OK);
    struct stat sb;
    assert_int_equal(lstat(td_at("seg"), &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(stat(td_at("target"), &sb), 0);
    assert_int_equal(sb.st_size, 4);
    munmap(map, LEN);
}

static void test_create_fails_cleanly(void **s)
{
    (void)s;
    void *map;
    int e = 0, opened = 1;
    assert_int_equal(
        cc__shm_file_create(td_at("no/such/dir/seg"), LEN, "segment", &map, &e, &opened),
        CC_ERR_SYSTEM);
    assert_false(opened);
    assert_int_equal(e, ENOENT);
    assert_true(map == MAP_FAILED);
}

static void test_map_refuses_link(void **s)
{
    (void)s;
    void *map;
    int e = 0, opened = 0;
    assert_int_equal(cc__shm_file_create(td_at("seg"), LEN, "segment", &map, &e, &opened), CC_OK);
    munmap(map, LEN);
    assert_int_equal(symlink(td_at("seg"), td_at("link")), 0);
    size_t len = 0;
    char why[300];
    assert_int_equal(cc__shm_file_map(td_at("link"), LEN, LEN, &map, &len, &e, why, sizeof(why)),
                     CC_ERR_SYSTEM);
    assert_int_equal(e, ELOOP);
    assert_true(map == MAP_FAILED);
}

/* The size comes from the file: a peer's (or an attacker's) could be anything. */
static void test_map_refuses_wrong_size(void **s)
{
    (void)s;
    void *map;
    int e = 0, opened = 0;
    assert_int_equal(cc__shm_file_create(td_at("seg"), LEN, "segment", &map, &e, &opened), CC_OK);
    munmap(map, LEN);
    size_t len = 0;
    char why[300];
    assert_int_equal(
        cc__shm_file_map(td_at("seg"), 2 * LEN, 2 * LEN, &map, &len, &e, why, sizeof(why)),
        CC_ERR_PROTOCOL);
    assert_non_null(strstr(why, "has 8192 bytes, not 16384..16384"));
    assert_true(map == MAP_FAILED);
    assert_int_equal(truncate(td_at("seg"), 100), 0); /* shorter than a header page */
    assert_int_equal(
        cc__shm_file_map(td_at("seg"), 4096, SIZE_MAX, &map, &len, &e, why, sizeof(why)),
        CC_ERR_PROTOCOL);
    assert_non_null(strstr(why, "has 100 bytes"));
}

static void test_map_refuses_other_user(void **s)
{
    (void)s;
    if (geteuid() != 0) skip(); /* only root can give a file away */
    void *map;
    int e = 0, opened = 0;
    assert_int_equal(cc__shm_file_create(td_at("seg"), LEN, "segment", &map, &e, &opened), CC_OK);
    munmap(map, LEN);
    assert_int_equal(chown(td_at("seg"), 65534, 65534), 0);
    size_t len = 0;
    char why[300];
    assert_int_equal(cc__shm_file_map(td_at("seg"), LEN, LEN, &map, &len, &e, why, sizeof(why)),
                     CC_ERR_PROTOCOL);
    assert_non_null(strstr(why, "belongs to uid 65534"));
    assert_true(map == MAP_FAILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_private, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_replaces_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_fails_cleanly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_refuses_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_refuses_wrong_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_refuses_other_user, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
