/*
 * check_store_walscan.c - unit tests of what readers of the store
 * (storage/store.c) see while a checkpoint moves the write-ahead log's
 * overlay into LMDB.
 *
 * A checkpoint commits the overlay's entries to LMDB, syncs, and only then
 * empties the overlay.  In between, a reader's new LMDB snapshot already
 * holds the keys the overlay still calls fresh (not in LMDB).  The tests
 * stop the checkpoint in that window through the store's sync hook
 * (test_sync, called by the sync of a checkpoint that a conditional
 * delete starts: it runs through LMDB) and, from another thread,
 * count the keys as a client's DBSIZE (store_get_stats) and SCAN/KEYS
 * (store_scan) would: every key must be counted and visited exactly once.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "record.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_walscan"
#include "test_store_dir.h"

#define KEYS 50

/* The sync hook: once armed, it signals `called` and waits for `done` (5 s at most). */
static atomic_bool armed;
static sem_t called, done;

static int hook_sync(void *ctx)
{
    struct timespec ts;

    (void)ctx;
    if (!atomic_exchange(&armed, false)) {
        return 0;
    }
    sem_post(&called);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    (void)sem_timedwait(&done, &ts);
    return 0;
}

/* Scan callback: how many times each key k00..k49 is visited, and other keys. */
struct visits {
    int n[KEYS];
    int total;
};

static int count_visit(void *ctx, const struct store_item *it)
{
    struct visits *v = ctx;
    char key[8];
    int i;

    v->total++;
    if (it->key_len < 8 && it->key_len > 1) {
        memcpy(key, it->key, it->key_len);
        key[it->key_len] = '\0';
        i = atoi(key + 1);
        if (i >= 0 && i < KEYS) {
            v->n[i]++;
        }
    }
    return 0;
}

/*
 * A conditional delete of a key nobody wrote: it runs through LMDB and
 * reads keys, so it checkpoints first (as every operation but data writes,
 * handoff-table puts and meta puts alone does).
 */
static void *absorbing_thread(void *arg)
{
    struct store *s = arg;
    struct store_op op;
    int rc;

    store_op_init(&op, STORE_OP_DELETE_IF);
    op.key = (const uint8_t *)"never-written";
    op.key_len = strlen("never-written");
    op.value = (const uint8_t *)"y";
    op.value_len = 1;
    rc = store_submit(s, &op);
    rc = rc ? rc : store_wait(s, &op);
    return (void *)(intptr_t)rc;
}

START_TEST(test_checkpoint_window_counts_each_key_once)
{
    struct store_config c;
    struct store *s = NULL;
    struct store_stats st;
    struct store_cursor cur;
    struct visits v = {{0}, 0};
    struct timespec ts;
    char path[512], err[256], key[8];
    pthread_t helper;
    void *hrc;
    int rc;

    ck_assert_int_eq(sem_init(&called, 0, 0), 0);
    ck_assert_int_eq(sem_init(&done, 0, 0), 0);
    store_config_in(&c, path, sizeof(path), "data");
    c.sync = STORE_SYNC_ALWAYS; /* the writer alone syncs: the log per write, LMDB per checkpoint */
    c.test_sync = hook_sync;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    atomic_store(&armed, false);
    for (int i = 0; i < KEYS; i++) {
        struct sibling w = {0};
        snprintf(key, sizeof(key), "k%02d", i);
        ck_assert_int_eq(store_write(s, key, strlen(key), "v", 1, false, NULL, &w), 0);
        sibling_deinit(&w);
    }
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, KEYS);
    ck_assert_uint_eq(st.overlay_keys, KEYS); /* all in the log, none checkpointed yet */

    /* the next sync is the checkpoint's, in the conditional delete's batch */
    atomic_store(&armed, true);
    ck_assert_int_eq(pthread_create(&helper, NULL, absorbing_thread, s), 0);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    ck_assert_msg(sem_timedwait(&called, &ts) == 0, "no checkpoint within 10 s");
    store_get_stats(s, &st);
    store_cursor_init(&cur);
    rc = 0;
    while (!cur.done && rc == 0) {
        rc = store_scan(s, 0, 0, &cur, 7, 0, count_visit, &v);
    }
    sem_post(&done);
    ck_assert_int_eq(pthread_join(helper, &hrc), 0);
    ck_assert_int_eq((int)(intptr_t)hrc, 0);
    ck_assert_int_eq(rc, 0);
    for (int i = 0; i < KEYS; i++) {
        ck_assert_msg(v.n[i] == 1,
                      "k%02d visited %d times by a scan during a checkpoint (%d visits, "
                      "%llu keys counted, %d stored)",
                      i, v.n[i], v.total, (unsigned long long)st.keys, KEYS);
    }
    ck_assert_int_eq(v.total, KEYS);
    ck_assert_msg(st.keys == KEYS, "%llu keys counted during a checkpoint, %d stored",
                  (unsigned long long)st.keys, KEYS);
    store_close(s);
    sem_destroy(&called);
    sem_destroy(&done);
}
END_TEST

static Suite *walscan_suite(void)
{
    Suite *su = suite_create("store_walscan");
    TCase *tc = tcase_create("checkpoint_window");

    tcase_set_timeout(tc, 30);
    tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
    tcase_add_test(tc, test_checkpoint_window_counts_each_key_once);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(walscan_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
