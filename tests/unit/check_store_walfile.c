/*
 * check_store_walfile.c - unit tests of opening a store (storage/store.c)
 * whose write-ahead log file `wal` is not what a crash leaves: every
 * refusal names the problem, so an operator knows which file to look at.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "record.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_walfile"
#include "test_store_dir.h"

static void make_store(char *path, size_t cap)
{
    struct store_config c;
    struct store *s = NULL;
    struct sibling w = {0};
    char err[256];

    store_config_in(&c, path, cap, "data");
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    ck_assert_int_eq(store_write(s, "k", 1, "v", 1, false, NULL, &w), 0);
    sibling_deinit(&w);
    store_close(s);
}

/*
 * A log far larger than a checkpoint ever lets it grow (a sparse file of
 * 8 TiB here, cheap on any file system that has sparse files): opening
 * either works or is refused with a message naming the log, never with an
 * empty one.
 */
START_TEST(test_huge_log_refusal_names_it)
{
    struct store_config c;
    struct store *s = NULL;
    char path[512], wal[600], err[256];
    int fd, rc;

    make_store(path, sizeof(path));
    snprintf(wal, sizeof(wal), "%s/wal", path);
    fd = open(wal, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    if (ftruncate(fd, (off_t)8 << 40) != 0) {
        close(fd);
        return; /* no sparse files this large here: nothing to show */
    }
    close(fd);
    store_config_in(&c, path, sizeof(path), "data");
    strcpy(err, "");
    rc = store_open(&s, &c, err, sizeof(err));
    ck_assert_int_eq(rc, RK_ETOOBIG); /* never read into memory: larger than a log grows */
    ck_assert_msg(strstr(err, "wal") != NULL || strstr(err, "log") != NULL,
                  "refused (%d) with the message '%s', which names no log", rc, err);
}
END_TEST

/*
 * A byte damaged inside the log's first record, with whole records after
 * it.  The log cannot tell damage from a hole a power loss left in its
 * unsynced tail, and refusing to start would keep a node down after an
 * ordinary power loss under `sync batch`, so the log ends there.
 */
START_TEST(test_damaged_record_ends_the_log)
{
    struct store_config c;
    struct store *s = NULL;
    char path[512], wal[600], err[256];
    uint8_t b;
    struct stat st;
    pid_t pid;
    int fd, status;

    store_config_in(&c, path, sizeof(path), "data");
    c.sync = STORE_SYNC_ALWAYS;
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) { /* three acknowledged writes, then a crash: no close, no checkpoint */
        if (store_open(&s, &c, err, sizeof(err)) != 0) {
            _exit(2);
        }
        for (int i = 0; i < 3; i++) {
            struct sibling w = {0};
            char key[4] = {'k', (char)('0' + i), 0, 0};
            if (store_write(s, key, 2, "v", 1, false, NULL, &w) != 0) {
                _exit(3);
            }
            sibling_deinit(&w);
        }
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer: %d", status);
    snprintf(wal, sizeof(wal), "%s/wal", path);
    fd = open(wal, O_RDWR);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pread(fd, &b, 1, 16 + 12 + 3), 1); /* a byte of the first record's key */
    b ^= 0x01;
    ck_assert_int_eq(pwrite(fd, &b, 1, 16 + 12 + 3), 1);
    close(fd);

    /*
     * The first record that fails its checksum ends the log, as a torn one
     * does (under `sync batch` a power loss can leave such a hole in the
     * unsynced tail): the store opens with the records before it, logs
     * store_wal_torn with the bytes dropped, and cuts the log there, so
     * the records after it can never come back behind newer writes.
     */
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    for (int i = 0; i < 3; i++) {
        struct record r = {0};
        char key[4] = {'k', (char)('0' + i), 0, 0};
        ck_assert_int_eq(store_get(s, key, 2, &r), RK_ENOTFOUND);
    }
    ck_assert_int_eq(stat(wal, &st), 0);
    ck_assert_int_eq(st.st_size, 16);
    ck_assert_int_eq(store_write(s, "k9", 2, "w", 1, false, NULL, NULL), 0);
    store_close(s);
    ck_assert_int_eq(store_open(&s, &c, err, sizeof(err)), 0);
    for (int i = 1; i < 3; i++) {
        struct record r = {0};
        char key[4] = {'k', (char)('0' + i), 0, 0};
        ck_assert_int_eq(store_get(s, key, 2, &r), RK_ENOTFOUND);
    }
    {
        struct record r = {0};
        ck_assert_int_eq(store_get(s, "k9", 2, &r), 0);
        record_deinit(&r);
    }
    store_close(s);
}
END_TEST

static Suite *walfile_suite(void)
{
    Suite *su = suite_create("store_walfile");
    TCase *tc = tcase_create("files");

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, test_huge_log_refusal_names_it);
    tcase_add_test(tc, test_damaged_record_ends_the_log);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(walfile_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
