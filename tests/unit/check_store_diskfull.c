/*
 * check_store_diskfull.c - unit tests of the store (storage/store.c) on a
 * file system that fills up under a commit.
 *
 * Each test mounts a small tmpfs of its own, stores acknowledged writes,
 * then fills the file system with a filler file until exactly one page is
 * left, writes until the write-ahead log's allocation is used up too, and
 * writes a value spanning several pages.  Checkpoints meanwhile write
 * LMDB pages with pwritev() calls the file system cuts short, which LMDB
 * reports as EIO.  The
 * store must answer that write with RK_ENOSPC (not RK_EDISK), keep
 * serving reads, take writes again once the filler is gone, without a
 * restart, and reopen with every acknowledged write and without the
 * refused one; and a DEL in the same batch as the refused write runs
 * alone.  Run once per sync mode.
 *
 * Mounting needs root: the program runs in a mount namespace of its own
 * (unshare) and exits 77, which the test driver counts as skipped, when it
 * is not root or may not make one.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "error.h"
#include "record.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_diskfull"
#include "test_store_dir.h"

#define PAGE 4096
#define KEYS 20
#define SMALL_LEN 6000       /* two overflow pages */
#define BIG_LEN (10 * PAGE)  /* eleven contiguous overflow pages */
#define TMPFS_OPTS "size=2m" /* a few hundred pages: fills in a moment */

static const enum store_sync modes[] = {STORE_SYNC_ALWAYS, STORE_SYNC_BATCH, STORE_SYNC_NONE};

static char mnt[300];

static void mount_setup(void)
{
    tmp_setup();
    snprintf(mnt, sizeof(mnt), "%s/fs", tmp_dir);
    ck_assert_int_eq(mkdir(mnt, 0700), 0);
    ck_assert_msg(mount("tmpfs", mnt, "tmpfs", 0, TMPFS_OPTS) == 0, "mount: %s", strerror(errno));
}

static void mount_teardown(void)
{
    umount2(mnt, MNT_DETACH);
    tmp_teardown();
}

static struct store *open_on_fs(enum store_sync mode, char *path, size_t cap)
{
    struct store_config c;
    struct store *s = NULL;
    char err[256];

    store_config_in(&c, path, cap, "fs/data");
    c.sync = mode;
    c.map_initial = 64 * 1024 * 1024; /* never grows here: the disk fills, not the map */
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    return s;
}

/* The value of key i: its length and a byte that tells keys apart. */
static void fill_value(uint8_t *v, size_t len, int i)
{
    memset(v, 'a' + i % 26, len);
    v[0] = (uint8_t)i;
}

static int put(struct store *s, const char *key, const uint8_t *v, size_t len)
{
    struct sibling w = {0};
    int rc = store_write(s, key, strlen(key), v, len, false, NULL, &w);

    sibling_deinit(&w);
    return rc;
}

/* Assert key holds exactly len bytes made by fill_value(i). */
static void expect_value(struct store *s, const char *key, size_t len, int i)
{
    struct record r = {0};
    uint8_t *want = malloc(len);

    ck_assert_ptr_nonnull(want);
    fill_value(want, len, i);
    ck_assert_msg(store_get(s, key, strlen(key), &r) == 0, "%s unreadable", key);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.s[0].value_len, len);
    ck_assert_msg(memcmp(r.s[0].value, want, len) == 0, "%s damaged", key);
    record_deinit(&r);
    free(want);
}

static size_t pages_free(void)
{
    struct statvfs v;

    ck_assert_int_eq(statvfs(mnt, &v), 0);
    return (size_t)(v.f_bavail * v.f_frsize / PAGE);
}

/* Fill the file system with a filler file, then give exactly one page back. */
static void leave_one_page(const char *filler)
{
    static uint8_t page[PAGE];
    int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    off_t size = 0;
    ssize_t w;

    ck_assert_int_ge(fd, 0);
    memset(page, 'f', sizeof(page));
    while ((w = write(fd, page, sizeof(page))) == (ssize_t)sizeof(page)) {
        size += w;
    }
    ck_assert_msg(w < 0 && errno == ENOSPC, "filler stopped without ENOSPC (%zd)", w);
    ck_assert_uint_eq(pages_free(), 0);
    ck_assert_int_eq(ftruncate(fd, size - PAGE), 0);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_uint_eq(pages_free(), 1);
}

/* Write KEYS acknowledged keys k00.. of SMALL_LEN bytes, then fill the disk
 * (filler: the filler file's path) to exactly one free page. */
static void fill_keys_then_disk(struct store *s, char *filler, size_t cap)
{
    uint8_t small[SMALL_LEN];
    char key[8];

    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof(key), "k%02d", i);
        fill_value(small, sizeof(small), i);
        ck_assert_int_eq(put(s, key, small, sizeof(small)), 0);
    }
    snprintf(filler, cap, "%s/filler", mnt);
    leave_one_page(filler);
    /* the write-ahead log's own allocation still has room: use it up */
    for (int i = 0; i < 10000; i++) {
        snprintf(key, sizeof(key), "p%04d", i);
        fill_value(small, sizeof(small), i);
        int rc = put(s, key, small, sizeof(small));
        if (rc == RK_ENOSPC) {
            return;
        }
        ck_assert_int_eq(rc, 0);
    }
    ck_abort_msg("the log never ran out of room");
}

START_TEST(test_short_write_is_full_disk)
{
    enum store_sync mode = modes[_i];
    char path[512], key[32], filler[320];
    uint8_t small[SMALL_LEN], *big = malloc(BIG_LEN);
    struct store_stats st;
    struct store *s = open_on_fs(mode, path, sizeof(path));

    ck_assert_ptr_nonnull(big);
    fill_keys_then_disk(s, filler, sizeof(filler));

    /* the commit's pwritev of the big value's pages is cut short after one page */
    fill_value(big, BIG_LEN, 99);
    ck_assert_int_eq(put(s, "big", big, BIG_LEN), RK_ENOSPC);
    store_get_stats(s, &st);
    ck_assert_msg(!st.disk_failed, "a full disk was taken for a failed flush");
    ck_assert_uint_ge(st.enospc, 1);
    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof(key), "k%02d", i);
        expect_value(s, key, SMALL_LEN, i);
    }

    /* room again: writes come back without a restart */
    ck_assert_int_eq(unlink(filler), 0);
    ck_assert_int_eq(put(s, "big", big, BIG_LEN), 0);
    fill_value(small, sizeof(small), KEYS);
    ck_assert_int_eq(put(s, "after", small, sizeof(small)), 0);
    store_close(s);

    /* reopened: every acknowledged write is there, undamaged */
    s = open_on_fs(mode, path, sizeof(path));
    for (int i = 0; i < KEYS; i++) {
        snprintf(key, sizeof(key), "k%02d", i);
        expect_value(s, key, SMALL_LEN, i);
    }
    expect_value(s, "big", BIG_LEN, 99);
    expect_value(s, "after", SMALL_LEN, KEYS);
    store_get_stats(s, &st);
    ck_assert(!st.disk_failed);
    store_close(s);
    free(big);
}
END_TEST

/*
 * The refused write is not in the store after a restart: the failed
 * commit never wrote its meta page, so the previous state stands.
 */
START_TEST(test_refused_write_absent_after_restart)
{
    enum store_sync mode = modes[_i];
    char path[512], filler[320];
    uint8_t *big = malloc(BIG_LEN);
    struct record r = {0};
    struct store *s = open_on_fs(mode, path, sizeof(path));

    ck_assert_ptr_nonnull(big);
    fill_keys_then_disk(s, filler, sizeof(filler));
    fill_value(big, BIG_LEN, 99);
    ck_assert_int_eq(put(s, "big", big, BIG_LEN), RK_ENOSPC);
    store_close(s);
    ck_assert_int_eq(unlink(filler), 0);

    s = open_on_fs(mode, path, sizeof(path));
    expect_value(s, "k01", SMALL_LEN, 1);
    ck_assert_int_eq(store_get(s, "big", 3, &r), RK_ENOTFOUND);
    record_deinit(&r);
    store_close(s);
    free(big);
}
END_TEST

/*
 * A batch mixing a SET and a DEL at a full disk: the SET fails with
 * RK_ENOSPC and the DEL runs again alone, in pages the file already has,
 * as at a full map, so deleting frees a full disk.
 */
START_TEST(test_full_disk_runs_deletions_alone)
{
    enum store_sync mode = modes[_i];
    char path[512], filler[320];
    uint8_t *big = malloc(BIG_LEN);
    struct store_op set, del, *list[] = {&set, &del};
    struct record r = {0};
    struct store *s = open_on_fs(mode, path, sizeof(path));

    ck_assert_ptr_nonnull(big);
    fill_keys_then_disk(s, filler, sizeof(filler));
    fill_value(big, BIG_LEN, 99);
    store_op_init(&set, STORE_OP_WRITE);
    set.key = (const uint8_t *)"big";
    set.key_len = 3;
    set.value = big;
    set.value_len = BIG_LEN;
    store_op_init(&del, STORE_OP_WRITE);
    del.key = (const uint8_t *)"k00";
    del.key_len = 3;
    del.tombstone = true;
    ck_assert_int_eq(store_submit_list(s, list, 2), 0);
    ck_assert_int_eq(store_wait(s, &set), RK_ENOSPC);
    ck_assert_int_eq(store_wait(s, &del), 0);
    sibling_deinit(&set.written);
    sibling_deinit(&del.written);
    ck_assert_int_eq(store_get(s, "k00", 3, &r), 0);
    ck_assert(r.n == 1 && r.s[0].tombstone);
    record_deinit(&r);
    store_close(s);
    free(big);
}
END_TEST

static Suite *diskfull_suite(void)
{
    Suite *su = suite_create("store_diskfull");
    TCase *tc = tcase_create("short_write");
    size_t n = sizeof(modes) / sizeof(modes[0]);

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, mount_setup, mount_teardown);
    tcase_add_loop_test(tc, test_short_write_is_full_disk, 0, (int)n);
    tcase_add_loop_test(tc, test_refused_write_absent_after_restart, 0, (int)n);
    tcase_add_loop_test(tc, test_full_disk_runs_deletions_alone, 0, (int)n);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (geteuid() != 0) {
        printf("SKIP: check_store_diskfull mounts a tmpfs and needs root\n");
        return 77;
    }
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP: check_store_diskfull cannot make a mount namespace: %s\n", strerror(errno));
        return 77;
    }
    sr = srunner_create(diskfull_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
