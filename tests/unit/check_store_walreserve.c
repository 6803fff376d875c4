/*
 * check_store_walreserve.c - unit tests of the write-ahead log's deletion
 * reserve and of a store reopened with a log loaded into its overlay
 * (storage/store.c).
 *
 * The reserve: the log keeps STORE_WAL_RESERVE (256 KiB) allocated past
 * its end (fallocate, FALLOC_FL_KEEP_SIZE) for batches of deletions; a
 * batch of any other kind first makes sure the disk holds its record and
 * the reserve.  An append the file system refuses (here RLIMIT_FSIZE, the
 * EFBIG a full disk looks like) must leave the reserve in place for the
 * next write.  A file system without fallocate() has no reserve, and the
 * test has nothing to show there.
 *
 * The reopen: a child writes and exits without closing (its log holds the
 * writes); the parent reopens, and counts, scans and the clock must be as
 * if the writes had just run, before and after a checkpoint.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "record.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_walreserve"
#include "test_store_dir.h"

#define RESERVE (256 * 1024)

static struct store *open_in(const char *sub, enum store_sync sync)
{
    static char path[512];
    struct store_config c;
    struct store *s;
    char err[512];

    store_config_in(&c, path, sizeof(path), sub);
    c.sync = sync;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open %s: %s", sub, err);
    return s;
}

static int put_len(struct store *s, const char *key, const char *value, size_t len, uint64_t *stamp)
{
    struct sibling w = {0};
    int rc = store_write(s, key, strlen(key), value, len, false, NULL, &w);

    if (stamp != NULL) {
        *stamp = w.hlc;
    }
    sibling_deinit(&w);
    return rc;
}

/* The log's size and the bytes the file system holds for it. */
static void wal_space(const char *sub, off_t *size, off_t *held)
{
    char p[600];
    struct stat st;

    snprintf(p, sizeof(p), "%s/%s/wal", tmp_dir, sub);
    ck_assert_int_eq(stat(p, &st), 0);
    *size = st.st_size;
    *held = (off_t)st.st_blocks * 512;
}

/*
 * A write the file system refuses (EFBIG past RLIMIT_FSIZE, cut short:
 * the log takes it back with ftruncate()) must not cost the reserve: once
 * the file may grow again, a write that succeeds leaves the log with its
 * record and the reserve allocated.
 */
START_TEST(test_reserve_kept_after_refused_append)
{
    struct store *s = open_in("r", STORE_SYNC_NONE);
    struct rlimit lim, saved;
    static char big[8192];
    off_t size, held;
    int rc;

    ck_assert_int_eq(put_len(s, "before", "v", 1, NULL), 0);
    wal_space("r", &size, &held);
    if (held < size + RESERVE) {
        store_close(s);
        return; /* no fallocate() here: no reserve to keep */
    }
    memset(big, 'x', sizeof(big));
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = (rlim_t)size + 64; /* the next record is cut short */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    rc = put_len(s, "refused", big, sizeof(big), NULL);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    ck_assert_int_eq(rc, RK_ENOSPC);

    ck_assert_int_eq(put_len(s, "after", "v", 1, NULL), 0);
    wal_space("r", &size, &held);
    ck_assert_msg(held >= size + RESERVE,
                  "log of %lld bytes holds %lld: the deletion reserve is gone after a refused "
                  "append, and the write after it did not take it back",
                  (long long)size, (long long)held);
    store_close(s);
}
END_TEST

/* --- a reopen with a loaded log ------------------------------------------ */

#define OLD_KEYS 50  /* in LMDB before the crash */
#define NEW_KEYS 100 /* written by the crashing child: keys 25..124 */

static void child_overwrite(void)
{
    struct store *s = open_in("c", STORE_SYNC_ALWAYS);
    char key[32];

    for (int i = OLD_KEYS / 2; i < OLD_KEYS / 2 + NEW_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        if (put_len(s, key, "new", 3, NULL) != 0) {
            _exit(3);
        }
    }
    _exit(0); /* no store_close(): the log holds the writes */
}

static int count_item(void *ctx, const struct store_item *it)
{
    (void)it;
    (*(uint64_t *)ctx)++;
    return 0;
}

static uint64_t scan_count(struct store *s)
{
    struct store_cursor cur;
    uint64_t n = 0;

    store_cursor_init(&cur);
    while (!cur.done) {
        ck_assert_int_eq(store_scan(s, 0, 0, &cur, 7, 0, count_item, &n), 0);
    }
    return n;
}

static uint64_t max_stamp(struct store *s, int lo, int hi)
{
    struct record r;
    char key[32];
    uint64_t max = 0;

    for (int i = lo; i < hi; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        record_init(&r);
        ck_assert_int_eq(store_get(s, key, strlen(key), &r), 0);
        for (size_t j = 0; j < r.n; j++) {
            max = r.s[j].hlc > max ? r.s[j].hlc : max;
        }
        record_deinit(&r);
    }
    return max;
}

START_TEST(test_reopen_counts_and_clock)
{
    const uint64_t want = OLD_KEYS / 2 + NEW_KEYS;
    struct store *s = open_in("c", STORE_SYNC_ALWAYS);
    struct store_stats st;
    char key[32];
    uint64_t top, stamp;
    int status;
    pid_t pid;

    for (int i = 0; i < OLD_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_int_eq(put_len(s, key, "old", 3, NULL), 0);
    }
    store_close(s); /* into LMDB */
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_overwrite();
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    s = open_in("c", STORE_SYNC_ALWAYS);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, want);
    ck_assert_uint_eq(scan_count(s), want);
    top = max_stamp(s, 0, (int)want);
    ck_assert_int_eq(put_len(s, "key-0", "later", 5, &stamp), 0);
    ck_assert_msg(stamp > top, "a write after the reopen stamped %llu, below %llu",
                  (unsigned long long)stamp, (unsigned long long)top);
    store_close(s); /* a checkpoint */
    s = open_in("c", STORE_SYNC_ALWAYS);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, want);
    ck_assert_uint_eq(scan_count(s), want);
    store_close(s);
}
END_TEST

/*
 * A checkpoint at close that LMDB cannot commit (every write past
 * RLIMIT_FSIZE refused) leaves the loaded log for the next open.
 */
START_TEST(test_close_keeps_loaded_log)
{
    const uint64_t want = OLD_KEYS / 2 + NEW_KEYS;
    struct store *s = open_in("c", STORE_SYNC_ALWAYS);
    struct store_stats st;
    struct rlimit lim, saved;
    char key[32];
    int status;
    pid_t pid;

    for (int i = 0; i < OLD_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        ck_assert_int_eq(put_len(s, key, "old", 3, NULL), 0);
    }
    store_close(s);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_overwrite();
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    s = open_in("c", STORE_SYNC_ALWAYS);
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = 1;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    store_close(s); /* its checkpoint fails */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    s = open_in("c", STORE_SYNC_ALWAYS);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, want);
    ck_assert_uint_eq(st.overlay_keys, NEW_KEYS);
    ck_assert_uint_eq(scan_count(s), want);
    store_close(s);
}
END_TEST

/*
 * A store far below the process's file size limit (RLIMIT_FSIZE, 2 MiB)
 * on tmpfs, whose fallocate() checks the limit and raises SIGXFSZ (the
 * default action ends the process, and ringkvd keeps it): opening it and
 * writing must work or be refused (RK_ENOSPC), never end the process.  The
 * child reports how it ended; no tmpfs at /dev/shm: nothing to show.
 */
START_TEST(test_reserve_under_file_size_limit)
{
    char dir[] = "/dev/shm/check_store_walreserve.XXXXXX", path[128], cmd[160];
    struct statfs fs;
    int status;
    pid_t pid;

    if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC || mkdtemp(dir) == NULL) {
        return;
    }
    snprintf(path, sizeof(path), "%s/data", dir);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct rlimit lim = {2 * 1024 * 1024, RLIM_INFINITY};
        struct store_config c;
        struct store *s = NULL;
        char err[256], ignored[512];

        signal(SIGXFSZ, SIG_DFL);
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0) {
            _exit(5);
        }
        store_config_in(&c, ignored, sizeof(ignored), "x");
        c.path = path;
        if (store_open(&s, &c, err, sizeof(err)) != 0) {
            _exit(3);
        }
        /* a log of 1.8 MiB (and LMDB as much after a checkpoint): the reserve reaches past 2 MiB */
        static char v[60000];
        memset(v, 'v', sizeof(v));
        for (int i = 0; i < 31; i++) {
            char key[16];
            snprintf(key, sizeof(key), "k%d", i);
            int rc = put_len(s, key, v, sizeof(v), NULL);
            if (rc == RK_ENOSPC) {
                break; /* refused, as for a full disk: fine */
            }
            if (rc != 0) {
                _exit(4);
            }
        }
        _exit(0);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    ck_assert_msg(WIFEXITED(status), "the store was ended by signal %d", WTERMSIG(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* --- crash, reopen with the log loaded (and a torn tail cut), write, crash again */

#define ROUND_KEYS 60

/* Round 1 writes r1-i for every key; round 2 deletes i % 3 == 0, rewrites i % 3 == 1. */
static void child_round(int round)
{
    struct store *s = open_in("t", STORE_SYNC_ALWAYS);
    struct sibling w = {0};
    char key[32], value[32];

    for (int i = 0; i < ROUND_KEYS; i++) {
        int rc = 0;
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(value, sizeof(value), "r%d-%d", round, i);
        if (round == 1 || i % 3 == 1) {
            rc = put_len(s, key, value, strlen(value), NULL);
        } else if (i % 3 == 0) {
            rc = store_write(s, key, strlen(key), NULL, 0, true, NULL, &w);
            sibling_deinit(&w);
            sibling_init(&w);
        }
        if (rc != 0) {
            _exit(3);
        }
    }
    _exit(0);
}

static void run_child(int round)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_round(round);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The live value of key, "" when deleted or absent. */
static void value_of(struct store *s, const char *key, char *out, size_t cap)
{
    struct record r;
    int rc;

    record_init(&r);
    rc = store_get(s, key, strlen(key), &r);
    out[0] = '\0';
    if (rc == 0) {
        for (size_t j = 0; j < r.n; j++) {
            if (!r.s[j].tombstone) {
                snprintf(out, cap, "%.*s", (int)r.s[j].value_len, (const char *)r.s[j].value);
            }
        }
    }
    record_deinit(&r);
}

START_TEST(test_crash_reopen_write_crash)
{
    char p[600], key[32], want[32], got[64];
    static const uint8_t junk[300] = {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4};
    struct store *s;
    struct store_stats st;
    uint64_t live = 0;
    FILE *f;

    run_child(1);
    snprintf(p, sizeof(p), "%s/t/wal", tmp_dir);
    f = fopen(p, "ab"); /* a torn tail: cut at the next open */
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
    fclose(f);
    run_child(2);
    s = open_in("t", STORE_SYNC_ALWAYS);
    for (int i = 0; i < ROUND_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(want, sizeof(want), "r%d-%d", i % 3 == 1 ? 2 : 1, i);
        value_of(s, key, got, sizeof(got));
        ck_assert_str_eq(got, i % 3 == 0 ? "" : want);
        live += i % 3 != 0;
    }
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, ROUND_KEYS); /* tombstones are keys until collected */
    ck_assert_uint_eq(scan_count(s), ROUND_KEYS);
    store_close(s);
    s = open_in("t", STORE_SYNC_ALWAYS);
    for (int i = 0; i < ROUND_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(want, sizeof(want), "r%d-%d", i % 3 == 1 ? 2 : 1, i);
        value_of(s, key, got, sizeof(got));
        ck_assert_str_eq(got, i % 3 == 0 ? "" : want);
    }
    ck_assert_uint_eq(live, ROUND_KEYS - ROUND_KEYS / 3);
    store_close(s);
}
END_TEST

static Suite *walreserve_suite(void)
{
    Suite *su = suite_create("store_walreserve");
    TCase *tc = tcase_create("reserve");

    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_reserve_kept_after_refused_append);
    tcase_add_test(tc, test_reopen_counts_and_clock);
    tcase_add_test(tc, test_close_keeps_loaded_log);
    tcase_add_test(tc, test_reserve_under_file_size_limit);
    tcase_add_test(tc, test_crash_reopen_write_crash);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(walreserve_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
