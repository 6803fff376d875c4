/*
 * check_store_safety.c - unit tests of the store's (storage/store.c)
 * safety properties, each a regression test of a failure seen on a
 * running node: a completion's wake-up lost between clearing the event
 * descriptor and taking the completed operations; the commit-delay
 * estimate stuck above 0 after a burst; LMDB reader slots leaked by a
 * thread alternating between two stores.
 */
#include <check.h>
#include <errno.h>
#include <lmdb.h>
#include <poll.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hlc.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_safety"
#include "test_store_dir.h"

static struct store *open_cfg(const struct store_config *c)
{
    struct store *s;
    char err[256];

    ck_assert_msg(store_open(&s, c, err, sizeof(err)) == 0, "open: %s", err);
    return s;
}

static struct store *open_store(const char *sub)
{
    struct store_config c;
    char path[512];

    store_config_in(&c, path, sizeof(path), sub);
    return open_cfg(&c);
}

static void count_done(struct store_op *op, void *ctx)
{
    sibling_deinit(&op->written); /* the caller owns the version a write created */
    ++*(int *)ctx;
}

static void write_op(struct store_op *op, const char *key, int *done)
{
    store_op_init(op, STORE_OP_WRITE);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->value = (const uint8_t *)"v";
    op->value_len = 1;
    op->done = count_done;
    op->ctx = done;
}

static bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1;
}

/* --- the event descriptor and the completion list --------------------------- */

struct gap_ctx {
    struct store *s;
    struct store_op op;
    int done;
    bool armed;
};

/*
 * Runs inside store_dispatch(), between its two steps: completes one
 * operation there, returning once its completion has been signalled.
 */
static void complete_in_gap(void *ctx)
{
    struct gap_ctx *g = ctx;

    if (!g->armed) {
        return;
    }
    g->armed = false;
    write_op(&g->op, "gap", &g->done);
    ck_assert_int_eq(store_submit(g->s, &g->op), 0);
    ck_assert_msg(fd_readable(store_event_fd(g->s), 10000), "the writer never signalled");
}

START_TEST(test_dispatch_keeps_wakeup)
{
    struct gap_ctx g = {0};
    struct store_config c;
    char path[512];

    store_config_in(&c, path, sizeof(path), "d");
    c.test_dispatch_gap = complete_in_gap;
    c.test_ctx = &g;
    g.s = open_cfg(&c);
    g.armed = true;
    store_dispatch(g.s);
    /* the operation completed during that dispatch: taken by it, or still signalled */
    ck_assert_msg(g.done == 1 || fd_readable(store_event_fd(g.s), 0),
                  "a completion waits undispatched while the event descriptor is not readable");
    if (g.done == 0) {
        store_dispatch(g.s);
    }
    ck_assert_int_eq(g.done, 1);
    store_close(g.s);
}
END_TEST

/* --- the commit-delay estimate ---------------------------------------------- */

static sem_t gate_entered, gate_release;
static bool gate(void *ctx, uint64_t pos, const uint8_t *key, size_t len, const struct record *r)
{
    (void)ctx;
    (void)pos;
    (void)key;
    (void)len;
    (void)r;
    sem_post(&gate_entered);
    sem_wait(&gate_release);
    return false;
}

/* A burst: 50 writes queued while the writer is held, committed as one batch. */
static void burst(struct store *s)
{
    static struct store_op hold, ops[50];
    static char keys[50][8];
    struct store_cursor cur;
    int done = 0;

    sem_init(&gate_entered, 0, 0);
    sem_init(&gate_release, 0, 0);
    ck_assert_int_eq(store_write(s, "t", 1, NULL, 0, true, NULL, NULL), 0);
    fake_now_ms += 10; /* the tombstone is past its grace: the predicate runs */
    store_cursor_init(&cur);
    store_op_init(&hold, STORE_OP_COLLECT);
    hold.cursor = &cur;
    hold.limit = 10;
    hold.collect = gate;
    hold.done = count_done;
    hold.ctx = &done;
    ck_assert_int_eq(store_submit(s, &hold), 0);
    sem_wait(&gate_entered);
    for (int i = 0; i < 50; i++) {
        snprintf(keys[i], sizeof(keys[i]), "b%d", i);
        write_op(&ops[i], keys[i], &done);
        ck_assert_int_eq(store_submit(s, &ops[i]), 0);
    }
    sem_post(&gate_release);
    while (done < 51) {
        ck_assert(fd_readable(store_event_fd(s), 10000));
        store_dispatch(s);
    }
}

START_TEST(test_commit_delay_decays_to_one)
{
    struct store *s = open_store("d");
    struct store_stats st;

    burst(s);
    store_get_stats(s, &st);
    ck_assert_uint_ge(st.recent_batch, 40);
    /* lone writes: the estimate falls by at least one per batch down to their size */
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(store_write(s, "k", 1, "v", 1, false, NULL, NULL), 0);
    }
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.recent_batch, 1);
    store_close(s);
}
END_TEST

/* --- reader slots ----------------------------------------------------------- */

START_TEST(test_alternating_stores_keep_reader_slots)
{
    struct store *a = open_store("a"), *b = open_store("b");
    struct record r;

    record_init(&r);
    ck_assert_int_eq(store_write(a, "ka", 2, "1", 1, false, NULL, NULL), 0);
    ck_assert_int_eq(store_write(b, "kb", 2, "2", 1, false, NULL, NULL), 0);
    for (int i = 0; i < 1000; i++) {
        ck_assert_msg(store_get(a, "ka", 2, &r) == 0, "read %d of store a failed", i);
        ck_assert_msg(store_get(b, "kb", 2, &r) == 0, "read %d of store b failed", i);
    }
    ck_assert_int_eq(store_get(b, "ka", 2, &r), RK_ENOTFOUND);
    record_deinit(&r);
    store_close(a);
    store_close(b);
}
END_TEST

/* --- the clock across restarts (conflicts lww) ----------------------------- */

static struct store *open_lww(const char *sub)
{
    struct store_config c;
    char path[512];

    store_config_in(&c, path, sizeof(path), sub);
    c.conflicts = RECORD_LWW;
    return open_cfg(&c);
}

/* Write key = value and return the stamp of the version written. */
static uint64_t write_stamp(struct store *s, const char *key, const char *value)
{
    struct sibling w;
    uint64_t t;

    sibling_init(&w);
    ck_assert_int_eq(store_write(s, key, strlen(key), value, strlen(value), false, NULL, &w), 0);
    t = w.hlc;
    sibling_deinit(&w);
    return t;
}

static void assert_value(struct store *s, const char *key, const char *want)
{
    struct record r;

    record_init(&r);
    ck_assert_int_eq(store_get(s, key, strlen(key), &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.s[0].value_len, strlen(want));
    ck_assert(memcmp(r.s[0].value, want, strlen(want)) == 0);
    record_deinit(&r);
}

/* Ten minutes: far more than any lease or skew bound the clock has. */
#define BACK_MS (10 * 60 * 1000ull)

START_TEST(test_lww_restart_wall_behind)
{
    uint64_t t0 = fake_now_ms, first;
    struct store *s = open_lww("d");

    first = write_stamp(s, "k", "old");
    store_close(s);
    fake_now_ms = t0 - BACK_MS;
    s = open_lww("d");
    /* an acknowledged write after the restart wins over the older value */
    write_stamp(s, "k", "new");
    assert_value(s, "k", "new");
    /* and any key's stamp orders after every stamp stored before the restart */
    ck_assert_uint_gt(write_stamp(s, "other", "x"), first);
    store_close(s);
    fake_now_ms = t0;
}
END_TEST

/* Directories from before the clock's mark: the mark comes from a scan of the records. */
START_TEST(test_lww_restart_without_mark)
{
    uint64_t t0 = fake_now_ms, first;
    struct store *s = open_lww("d");
    char path[512];
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    MDB_val k = {3, "hlc"};
    int rc;

    first = write_stamp(s, "k", "old");
    store_close(s);
    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    ck_assert_int_eq(mdb_env_create(&env), 0);
    ck_assert_int_eq(mdb_env_set_maxdbs(env, 4), 0);
    ck_assert_int_eq(mdb_env_open(env, path, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    rc = mdb_del(txn, meta, &k, NULL);
    ck_assert(rc == 0 || rc == MDB_NOTFOUND);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    fake_now_ms = t0 - BACK_MS;
    s = open_lww("d");
    ck_assert_uint_gt(write_stamp(s, "other", "x"), first);
    store_close(s);
    fake_now_ms = t0;
}
END_TEST

/* A stored stamp the clock refuses to take in (too far ahead) still loses to a later write. */
START_TEST(test_lww_write_beats_far_ahead)
{
    struct store *s = open_lww("d");
    struct sibling v;
    struct vclock vc;
    bool changed = false;

    sibling_init(&v);
    vclock_init(&vc);
    ck_assert_int_eq(vclock_increment(&vc, "n2", 1), 0);
    ck_assert_int_eq(
        sibling_set(&v, &vc, hlc_make(fake_now_ms + BACK_MS, 0), "n2", false, "far", 3), 0);
    ck_assert_int_eq(store_apply(s, "k", 1, &v, &changed), 0);
    ck_assert(changed);
    write_stamp(s, "k", "later");
    assert_value(s, "k", "later");
    sibling_deinit(&v);
    vclock_deinit(&vc);
    store_close(s);
}
END_TEST

/* --- contexts ---------------------------------------------------------------- */

START_TEST(test_context_beyond_issued_refused)
{
    struct store *s = open_store("d");
    struct vclock ctx;
    struct record r;

    vclock_init(&ctx);
    record_init(&r);
    ck_assert_int_eq(store_write(s, "k", 1, "v1", 2, false, NULL, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    /* one past what this directory's actor issued */
    ck_assert_int_eq(vclock_increment(&ctx, store_actor(s), 1), 0);
    ck_assert_int_eq(store_write(s, "k", 1, "v2", 2, false, &ctx, NULL), RK_ECONTEXT);
    vclock_deinit(&ctx);
    vclock_init(&ctx);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    {
        /* the actor's counter at 2^64-2: accepted, it would leave the key unwritable for good */
        struct vclock_entry e = {.counter = UINT64_MAX - 1, .stamp = 1};
        struct vclock top = {.e = &e, .n = 1, .cap = 1};
        e.id_len = (uint8_t)strlen(store_actor(s));
        memcpy(e.id, store_actor(s), e.id_len + 1u);
        ck_assert_int_eq(vclock_merge(&ctx, &top), 0);
    }
    ck_assert_int_eq(store_write(s, "k", 1, "v2", 2, false, &ctx, NULL), RK_ECONTEXT);
    /* the key stays writable, blind and with its real context */
    ck_assert_int_eq(store_write(s, "k", 1, "v3", 2, false, NULL, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_int_eq(store_write(s, "k", 1, "v4", 2, false, &ctx, NULL), 0);
    assert_value(s, "k", "v4");
    vclock_deinit(&ctx);
    record_deinit(&r);
    store_close(s);
}
END_TEST

/* --- failed flushes ----------------------------------------------------------- */

static atomic_int sync_error; /* what the next fsync reports; 0 = success */
static atomic_int sync_calls;

static int failing_sync(void *ctx)
{
    (void)ctx;
    atomic_fetch_add(&sync_calls, 1);
    return atomic_load(&sync_error);
}

static struct store *open_failing(const char *sub, enum store_sync mode)
{
    struct store_config c;
    char path[512];

    store_config_in(&c, path, sizeof(path), sub);
    c.sync = mode;
    c.batch_ms = 1;
    c.test_sync = failing_sync;
    atomic_store(&sync_error, 0);
    atomic_store(&sync_calls, 0);
    return open_cfg(&c);
}

/* After a failed flush: writes refused, reads served, and a good fsync later changes nothing. */
static void assert_stopped(struct store *s)
{
    struct store_stats st;
    struct record r;

    record_init(&r);
    ck_assert_int_eq(store_write(s, "k3", 2, "v", 1, false, NULL, NULL), RK_EDISK);
    ck_assert_int_eq(store_get(s, "k1", 2, &r), 0);
    atomic_store(&sync_error, 0);
    ck_assert_int_eq(store_write(s, "k4", 2, "v", 1, false, NULL, NULL), RK_EDISK);
    ck_assert_int_eq(store_get(s, "k4", 2, &r), RK_ENOTFOUND);
    store_get_stats(s, &st);
    ck_assert(st.disk_failed);
    ck_assert_uint_eq(st.disk_failures, 1);
    record_deinit(&r);
}

START_TEST(test_failed_fsync_batch_stops_writes)
{
    struct store *s = open_failing("d", STORE_SYNC_BATCH);
    struct store_stats st;

    ck_assert_int_eq(store_write(s, "k1", 2, "v", 1, false, NULL, NULL), 0);
    atomic_store(&sync_error, EIO);
    /* acknowledged before its fsync, which is the one that fails */
    ck_assert_int_eq(store_write(s, "k2", 2, "v", 1, false, NULL, NULL), 0);
    for (int i = 0; i < 10000; i++) {
        store_get_stats(s, &st);
        if (st.disk_failed) {
            break;
        }
        usleep(1000);
    }
    ck_assert_msg(st.disk_failed, "the failed fsync was never noticed");
    assert_stopped(s);
    store_close(s);
}
END_TEST

START_TEST(test_failed_commit_always_stops_writes)
{
    struct store *s = open_failing("d", STORE_SYNC_ALWAYS);

    ck_assert_int_eq(store_write(s, "k1", 2, "v", 1, false, NULL, NULL), 0);
    atomic_store(&sync_error, EIO);
    ck_assert_int_eq(store_write(s, "k2", 2, "v", 1, false, NULL, NULL), RK_EDISK);
    assert_stopped(s);
    store_close(s);
}
END_TEST

/* --- the data directory --------------------------------------------------------- */

START_TEST(test_dir_writable_by_others_refused)
{
    char path[512];

    store_close(open_store("d"));
    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    ck_assert_int_eq(chmod(path, 0702), 0);
    assert_store_refused("d", "is writable by others (mode 0702)");
    ck_assert_int_eq(chmod(path, 0770), 0);
    assert_store_refused("d", "is writable by its group (mode 0770)");
    ck_assert_int_eq(chmod(path, 0755), 0);
    store_close(open_store("d"));
}
END_TEST

START_TEST(test_dir_owned_by_another_refused)
{
    char path[512];

    if (geteuid() != 0) {
        fprintf(stderr, "check_store_safety: not root, the owner case is not run\n");
        return;
    }
    store_close(open_store("d"));
    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    ck_assert_int_eq(chown(path, 65534, 65534), 0);
    assert_store_refused("d", "is owned by uid 65534, not by this user");
    ck_assert_int_eq(chown(path, 0, 0), 0);
    store_close(open_store("d"));
}
END_TEST

START_TEST(test_lock_symlink_refused)
{
    char path[512], lock[600], target[600];
    struct stat st;

    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    snprintf(lock, sizeof(lock), "%s/LOCK", path);
    snprintf(target, sizeof(target), "%s/elsewhere", tmp_dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(symlink(target, lock), 0);
    assert_store_refused("d", "LOCK is a symbolic link: refusing to follow it");
    /* nothing was created or written through the link */
    ck_assert_int_ne(stat(target, &st), 0);
}
END_TEST

static Suite *store_safety_suite(void)
{
    Suite *su = suite_create("store_safety");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"dispatch_keeps_wakeup", test_dispatch_keeps_wakeup},
        {"commit_delay_decays", test_commit_delay_decays_to_one},
        {"alternating_stores", test_alternating_stores_keep_reader_slots},
        {"lww_restart_wall_behind", test_lww_restart_wall_behind},
        {"lww_restart_without_mark", test_lww_restart_without_mark},
        {"lww_write_beats_far_ahead", test_lww_write_beats_far_ahead},
        {"context_beyond_issued", test_context_beyond_issued_refused},
        {"failed_fsync_batch", test_failed_fsync_batch_stops_writes},
        {"failed_commit_always", test_failed_commit_always_stops_writes},
        {"dir_writable_by_others", test_dir_writable_by_others_refused},
        {"dir_owned_by_another", test_dir_owned_by_another_refused},
        {"lock_symlink", test_lock_symlink_refused},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(su, tc);
    }
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(store_safety_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
