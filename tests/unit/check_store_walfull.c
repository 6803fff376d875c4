/*
 * check_store_walfull.c - unit tests of the store (storage/store.c) when
 * its write-ahead log is what fills the file system.
 *
 * Each test mounts a small tmpfs of its own and writes distinct keys back
 * to back, without a pause long enough for an idle checkpoint, until a
 * write is refused with RK_ENOSPC: the log's appends take the last free
 * pages while LMDB still lacks every key.  A full store must still be
 * emptied by a client (a DEL is a tombstone write, store.c: "a full store
 * can always be emptied"), and a restart on the same full disk must open
 * with every acknowledged write.  Run once per sync mode.
 *
 * Mounting needs root: the program runs in a mount namespace of its own
 * (unshare) and exits 77, which the test driver counts as skipped, when it
 * is not root or may not make one.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "record.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_walfull"
#include "test_store_dir.h"

#define VALUE_LEN 3000
#define MAX_KEYS 4000        /* far more than fit: the loop ends at the first refusal */
static int n0;               /* the keys of VALUE_LEN bytes; those after them hold one byte */
#define TMPFS_OPTS "size=2m" /* fills in a moment */

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

static int open_on_fs(enum store_sync mode, char *path, size_t cap, struct store **s, char *err,
                      size_t err_len)
{
    struct store_config c;

    store_config_in(&c, path, cap, "fs/data");
    c.sync = mode;
    c.map_initial = 64 * 1024 * 1024; /* never grows here: the disk fills, not the map */
    *s = NULL;
    return store_open(s, &c, err, err_len);
}

static int put(struct store *s, const char *key, const uint8_t *v, size_t len, bool tombstone)
{
    struct sibling w = {0};
    int rc = store_write(s, key, strlen(key), v, len, tombstone, NULL, &w);

    sibling_deinit(&w);
    return rc;
}

/* Write k0000.. until the disk refuses one; the number acknowledged. */
static int fill_with_keys(struct store *s)
{
    uint8_t v[VALUE_LEN];
    char key[16];
    int i, rc = 0;

    for (i = 0; i < MAX_KEYS; i++) {
        snprintf(key, sizeof(key), "k%05d", i);
        memset(v, 'a' + i % 26, sizeof(v));
        rc = put(s, key, v, sizeof(v), false);
        if (rc != 0) {
            break;
        }
    }
    ck_assert_msg(rc == RK_ENOSPC, "write %d: %d, not RK_ENOSPC", i, rc);
    ck_assert_int_gt(i, 10);
    n0 = i;
    /* then one-byte values into whatever is left, so that a DEL's record does not fit either */
    for (; i < 2 * MAX_KEYS; i++) {
        snprintf(key, sizeof(key), "k%05d", i);
        rc = put(s, key, v, 1, false);
        if (rc != 0) {
            break;
        }
    }
    ck_assert_msg(rc == RK_ENOSPC, "small write %d: %d, not RK_ENOSPC", i, rc);
    return i;
}

/* A DEL of an acknowledged key on a disk the log filled succeeds. */
START_TEST(test_del_when_log_filled_disk)
{
    enum store_sync mode = modes[_i];
    char path[512], err[256];
    struct store *s;
    struct record r = {0};
    int n;

    ck_assert_msg(open_on_fs(mode, path, sizeof(path), &s, err, sizeof(err)) == 0, "open: %s", err);
    n = fill_with_keys(s);
    ck_assert_msg(put(s, "k00000", NULL, 0, true) == 0, "DEL refused on a full disk (%d keys)", n);
    ck_assert_int_eq(store_get(s, "k00000", 6, &r), 0);
    ck_assert(r.n == 1 && r.s[0].tombstone);
    record_deinit(&r);
    store_close(s);
}
END_TEST

/* A restart on the disk the log filled opens, with every acknowledged key. */
START_TEST(test_reopen_when_log_filled_disk)
{
    enum store_sync mode = modes[_i];
    char path[512], err[256], key[16];
    struct store *s;
    int n;

    ck_assert_msg(open_on_fs(mode, path, sizeof(path), &s, err, sizeof(err)) == 0, "open: %s", err);
    n = fill_with_keys(s);
    store_close(s);
    ck_assert_msg(open_on_fs(mode, path, sizeof(path), &s, err, sizeof(err)) == 0,
                  "reopen after %d acknowledged keys filled the disk: %s", n, err);
    for (int i = 0; i < n; i++) {
        struct record r = {0};
        snprintf(key, sizeof(key), "k%05d", i);
        ck_assert_msg(store_get(s, key, strlen(key), &r) == 0, "%s lost", key);
        ck_assert_uint_eq(r.s[0].value_len, i < n0 ? VALUE_LEN : 1);
        record_deinit(&r);
    }
    store_close(s);
}
END_TEST

/*
 * A meta write on the disk the log filled, after a restart: what a node
 * writes at start (its generation).  It touches no key, so it runs without
 * moving the log into LMDB first (that needs the room the disk lacks), and
 * the acknowledged keys stay readable from the log.
 */
START_TEST(test_meta_put_when_log_filled_disk)
{
    enum store_sync mode = modes[_i];
    char path[512], err[256], key[16];
    const uint8_t gen[8] = {0, 0, 0, 0, 0, 0, 0, 7};
    uint8_t got[8];
    size_t len = 0;
    struct store_op op;
    struct store *s;
    int n;

    ck_assert_msg(open_on_fs(mode, path, sizeof(path), &s, err, sizeof(err)) == 0, "open: %s", err);
    n = fill_with_keys(s);
    store_close(s);
    ck_assert_msg(open_on_fs(mode, path, sizeof(path), &s, err, sizeof(err)) == 0, "reopen: %s",
                  err);
    store_op_init(&op, STORE_OP_TABLE_PUT);
    op.table = STORE_TABLE_META;
    op.key = (const uint8_t *)"generation";
    op.key_len = strlen("generation");
    op.value = gen;
    op.value_len = sizeof(gen);
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_msg(store_wait(s, &op) == 0, "meta write on a full disk with %d keys logged: %d", n,
                  op.result);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_META, "generation", 10, got, sizeof(got), &len),
                     0);
    ck_assert(len == sizeof(gen) && memcmp(got, gen, sizeof(gen)) == 0);
    for (int i = 0; i < n; i++) {
        struct record r = {0};
        snprintf(key, sizeof(key), "k%05d", i);
        ck_assert_msg(store_get(s, key, strlen(key), &r) == 0, "%s lost", key);
        record_deinit(&r);
    }
    store_close(s);
    ck_assert_msg(open_on_fs(mode, path, sizeof(path), &s, err, sizeof(err)) == 0, "third open: %s",
                  err);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_META, "generation", 10, got, sizeof(got), &len),
                     0);
    ck_assert(len == sizeof(gen) && memcmp(got, gen, sizeof(gen)) == 0);
    store_close(s);
}
END_TEST

static Suite *walfull_suite(void)
{
    Suite *su = suite_create("store_walfull");
    TCase *tc = tcase_create("log_fills_disk");
    size_t n = sizeof(modes) / sizeof(modes[0]);

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, mount_setup, mount_teardown);
    tcase_add_loop_test(tc, test_del_when_log_filled_disk, 0, (int)n);
    tcase_add_loop_test(tc, test_reopen_when_log_filled_disk, 0, (int)n);
    tcase_add_loop_test(tc, test_meta_put_when_log_filled_disk, 0, (int)n);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (geteuid() != 0) {
        printf("SKIP: check_store_walfull mounts a tmpfs and needs root\n");
        return 77;
    }
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("SKIP: check_store_walfull cannot make a mount namespace: %s\n", strerror(errno));
        return 77;
    }
    sr = srunner_create(walfull_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
