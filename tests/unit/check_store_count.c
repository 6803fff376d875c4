/*
 * check_store_count.c - the store's count of records of tombstones
 * (store_stats.tombstones, storage/store.c) on real LMDB files in
 * temporary directories.  After every step the count is compared with a
 * walk of the whole ring that decodes each record (record_all_tombstones()),
 * and the stored records with the walk's keys: writes, deletes, a tombstone
 * overwritten, replicated versions (a value beside a tombstone is a key,
 * concurrent tombstones are one tombstone record), several operations on
 * one key in one batch, an atomic group that fails (its tombstone does not
 * count), collection (tombstones and expired values), range deletes and
 * conditional deletes, a clean close and open (the count from the walk at
 * open), and a crash whose log is replayed at the next open.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "record.h"
#include "store.h"
#include "vclock.h"
#include "wal.h"

#define TEST_STORE_DIR_NAME "check_store_count"
#include "test_store_dir.h"

/* Attempts at a crash whose log an idle checkpoint emptied before the crash. */
#define CRASH_ATTEMPTS 5
/* Keys the crashing child writes. */
#define CRASH_KEYS 60

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

static void put(struct store *s, const char *key, const char *value)
{
    ck_assert_int_eq(store_write(s, key, strlen(key), value, strlen(value), false, NULL, NULL), 0);
}

static void del(struct store *s, const char *key)
{
    ck_assert_int_eq(store_write(s, key, strlen(key), NULL, 0, true, NULL, NULL), 0);
}

struct truth {
    uint64_t keys, tombstones;
};

static int truth_visit(void *ctx, const struct store_item *it)
{
    struct truth *t = ctx;
    struct record r;

    record_init(&r);
    ck_assert_int_eq(record_decode(it->record, it->record_len, &r), 0);
    t->keys++;
    t->tombstones += record_all_tombstones(&r);
    record_deinit(&r);
    return 0;
}

/* The store's counts agree with a walk of every record, and are those wanted. */
static void expect_counts(struct store *s, uint64_t keys, uint64_t tombstones)
{
    struct store_cursor cur;
    struct store_stats st;
    struct truth t = {0, 0};

    store_cursor_init(&cur);
    while (!cur.done) {
        ck_assert_int_eq(store_scan(s, 0, 0, &cur, 1000, 0, truth_visit, &t), 0);
    }
    store_get_stats(s, &st);
    ck_assert_uint_eq(t.keys, keys);
    ck_assert_uint_eq(t.tombstones, tombstones);
    ck_assert_uint_eq(st.keys, keys);
    ck_assert_uint_eq(st.tombstones, tombstones);
}

/* A version of key written on another node (a store of its own). */
static void version_from(const char *node, const char *key, const char *value, bool tombstone,
                         struct sibling *out)
{
    static char path[512];
    struct store_config c;
    struct store *o;
    char sub[32], err[256];

    snprintf(sub, sizeof(sub), "other-%s", node);
    store_config_in(&c, path, sizeof(path), sub);
    c.node_id = node;
    ck_assert_msg(store_open(&o, &c, err, sizeof(err)) == 0, "open: %s", err);
    ck_assert_int_eq(
        store_write(o, key, strlen(key), value, value ? strlen(value) : 0, tombstone, NULL, out),
        0);
    store_close(o);
}

static void apply_from(struct store *s, const char *node, const char *key, const char *value,
                       bool tombstone)
{
    struct sibling v;

    sibling_init(&v);
    version_from(node, key, value, tombstone, &v);
    ck_assert_int_eq(store_apply(s, key, strlen(key), &v, NULL), 0);
    sibling_deinit(&v);
}

static size_t siblings(struct store *s, const char *key)
{
    struct record r;
    size_t n;

    record_init(&r);
    ck_assert_int_eq(store_get(s, key, strlen(key), &r), 0);
    n = r.n;
    record_deinit(&r);
    return n;
}

static void write_init(struct store_op *op, const char *key, const char *value)
{
    store_op_init(op, STORE_OP_WRITE);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->tombstone = value == NULL;
    op->value = (const uint8_t *)value;
    op->value_len = value != NULL ? strlen(value) : 0;
    op->skip_written = true;
}

static size_t range_op(struct store *s, enum store_op_type type, uint64_t grace_ms)
{
    struct store_cursor cur;
    struct store_op op;
    size_t n = 0;

    store_cursor_init(&cur);
    while (!cur.done) {
        store_op_init(&op, type);
        op.start = op.end = 0;
        op.cursor = &cur;
        op.limit = 3;
        op.grace_ms = grace_ms;
        ck_assert_int_eq(store_submit(s, &op), 0);
        ck_assert_int_eq(store_wait(s, &op), 0);
        n += op.count;
    }
    return n;
}

START_TEST(test_writes_and_deletes)
{
    struct store *s = open_in("d", STORE_SYNC_NONE);

    expect_counts(s, 0, 0);
    put(s, "a", "1");
    put(s, "b", "1");
    put(s, "c", "1");
    expect_counts(s, 3, 0);
    del(s, "a");
    expect_counts(s, 3, 1);
    del(s, "a"); /* a tombstone over a tombstone */
    expect_counts(s, 3, 1);
    del(s, "never"); /* a delete of an absent key stores a tombstone */
    expect_counts(s, 4, 2);
    put(s, "a", "2"); /* a tombstone overwritten */
    expect_counts(s, 4, 1);
    apply_from(s, "n2", "b", NULL, true); /* a concurrent tombstone beside b's value: a key */
    expect_counts(s, 4, 1);
    del(s, "c");
    apply_from(s, "n3", "c", NULL, true); /* two concurrent tombstones: one tombstone record */
    apply_from(s, "n5", "t2", NULL, true);
    apply_from(s, "n6", "t2", NULL, true);
    ck_assert_uint_eq(siblings(s, "t2"), 2);
    expect_counts(s, 5, 3);
    store_close(s);
    s = open_in("d", STORE_SYNC_NONE); /* counted at open: t2 decoded, two siblings */
    expect_counts(s, 5, 3);
    apply_from(s, "n4", "c", "back", false); /* a concurrent value: c is a key again */
    expect_counts(s, 5, 2);
    store_close(s);
    s = open_in("d", STORE_SYNC_NONE); /* counted again at open */
    expect_counts(s, 5, 2);
    store_close(s);
}
END_TEST

START_TEST(test_one_batch_one_key)
{
    struct store *s = open_in("d", STORE_SYNC_NONE);
    struct store_op ops[5], *list[5];
    const char *values[5] = {"1", NULL, "2", NULL, NULL};

    put(s, "other", "v");
    for (int i = 0; i < 5; i++) {
        write_init(&ops[i], "k", values[i]);
        list[i] = &ops[i];
    }
    ck_assert_int_eq(store_submit_list(s, list, 5), 0);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(store_wait(s, &ops[i]), 0);
    }
    expect_counts(s, 2, 1);
    write_init(&ops[0], "k", "3"); /* and back within one batch */
    write_init(&ops[1], "k", NULL);
    write_init(&ops[2], "k", "4");
    ck_assert_int_eq(store_submit_list(s, list, 3), 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(store_wait(s, &ops[i]), 0);
    }
    expect_counts(s, 2, 0);
    store_close(s);
}
END_TEST

START_TEST(test_failed_group_not_counted)
{
    struct store *s = open_in("d", STORE_SYNC_NONE);
    struct store_op ops[2], *group[2] = {&ops[0], &ops[1]};
    struct vclock empty;

    put(s, "full", "only");
    put(s, "g", "1");
    vclock_init(&empty);
    write_init(&ops[0], "g", NULL);        /* a tombstone ... */
    write_init(&ops[1], "full", "second"); /* ... in a group whose other member fails: */
    ops[1].context = &empty;               /* stale, "only" was written since */
    ck_assert_int_eq(store_submit_atomic(s, group, 2), 0);
    ck_assert_int_eq(store_wait(s, &ops[0]), RK_EMISMATCH);
    ck_assert_int_eq(store_wait(s, &ops[1]), RK_EMISMATCH);
    expect_counts(s, 2, 0);
    write_init(&ops[0], "g", NULL);
    ck_assert_int_eq(store_submit_atomic(s, group, 1), 0);
    ck_assert_int_eq(store_wait(s, &ops[0]), 0);
    expect_counts(s, 2, 1);
    vclock_deinit(&empty);
    store_close(s);
}
END_TEST

START_TEST(test_collect_and_range_delete)
{
    struct store *s = open_in("d", STORE_SYNC_NONE);
    struct store_op op;
    char key[16];

    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put(s, key, "v");
        if (i < 6) {
            del(s, key);
        }
    }
    write_init(&op, "exp", "gone"); /* an expired value not yet collected: a key */
    op.expire_ms = fake_now_ms + 100;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    expect_counts(s, 11, 6);
    fake_now_ms += 200;
    expect_counts(s, 11, 6);
    ck_assert_uint_eq(range_op(s, STORE_OP_COLLECT, 1000), 0); /* within the grace */
    expect_counts(s, 11, 6);
    fake_now_ms += 2000;
    ck_assert_uint_eq(range_op(s, STORE_OP_COLLECT, 1000), 7); /* six tombstones, exp */
    expect_counts(s, 4, 0);
    del(s, "k6");
    del(s, "k7");
    expect_counts(s, 4, 2);
    ck_assert_uint_eq(range_op(s, STORE_OP_DELETE_RANGE, 0), 4);
    expect_counts(s, 0, 0);
    store_close(s);
}
END_TEST

static int copy_record(void *ctx, const uint8_t *rec, size_t len)
{
    struct {
        uint8_t b[256];
        size_t n;
    } *out = ctx;
    ck_assert_uint_le(len, sizeof(out->b));
    memcpy(out->b, rec, len);
    out->n = len;
    return 0;
}

START_TEST(test_delete_if)
{
    struct store *s = open_in("d", STORE_SYNC_NONE);
    struct {
        uint8_t b[256];
        size_t n;
    } rec;
    struct store_op op;

    put(s, "t", "v");
    del(s, "t");
    put(s, "live", "v");
    expect_counts(s, 2, 1);
    ck_assert_int_eq(store_read(s, "t", 1, copy_record, &rec), 0);
    store_op_init(&op, STORE_OP_DELETE_IF);
    op.key = (const uint8_t *)"t";
    op.key_len = 1;
    op.value = rec.b;
    op.value_len = rec.n;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    ck_assert(op.changed);
    expect_counts(s, 1, 0);
    ck_assert_int_eq(store_read(s, "live", 4, copy_record, &rec), 0);
    store_op_init(&op, STORE_OP_DELETE_IF);
    op.key = (const uint8_t *)"live";
    op.key_len = 4;
    op.value = rec.b;
    op.value_len = rec.n;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    expect_counts(s, 0, 0);
    store_close(s);
}
END_TEST

static off_t wal_size(const char *sub)
{
    char path[600];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%s/wal", tmp_dir, sub);
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/*
 * The child's writes over a directory holding keys k0..k29, k0..k9 deleted:
 * k0..k4 written back, k10..k19 deleted, then new keys k30..k59 with
 * k30..k39 deleted; exits without closing, so the log holds them.
 */
static void child_writes(const char *sub)
{
    struct store *s = open_in(sub, STORE_SYNC_ALWAYS);
    char key[16];

    for (int i = 0; i < CRASH_KEYS; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        bool tomb = (i >= 10 && i < 20) || (i >= 30 && i < 40);
        if ((i < 5 || i >= 10) && store_write(s, key, strlen(key), tomb ? NULL : "w", tomb ? 0 : 1,
                                              tomb, NULL, NULL) != 0) {
            _exit(3);
        }
    }
    _exit(0);
}

START_TEST(test_crash_replay)
{
    char sub[32], key[16];
    struct store *s;
    int status, attempt;

    for (attempt = 0; attempt < CRASH_ATTEMPTS; attempt++) {
        snprintf(sub, sizeof(sub), "crash-%d", attempt);
        s = open_in(sub, STORE_SYNC_ALWAYS);
        for (int i = 0; i < CRASH_KEYS / 2; i++) {
            snprintf(key, sizeof(key), "k%d", i);
            put(s, key, "v");
            if (i < 10) {
                del(s, key);
            }
        }
        expect_counts(s, 30, 10);
        store_close(s); /* into LMDB: the walk at open counts them */
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
            child_writes(sub);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
        if (wal_size(sub) > WAL_HEADER_LEN) {
            break;
        }
    }
    ck_assert_msg(attempt < CRASH_ATTEMPTS, "every crash came after a checkpoint emptied the log");
    s = open_in(sub, STORE_SYNC_ALWAYS);
    /* k5..k9 and k10..k19 and k30..k39: LMDB's count moved by the replayed log */
    expect_counts(s, 60, 25);
    store_close(s);
    s = open_in(sub, STORE_SYNC_ALWAYS); /* the log moved into LMDB at close */
    expect_counts(s, 60, 25);
    store_close(s);
}
END_TEST

static Suite *count_suite(void)
{
    Suite *su = suite_create("store_count");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"writes_and_deletes", test_writes_and_deletes},
        {"one_batch_one_key", test_one_batch_one_key},
        {"failed_group", test_failed_group_not_counted},
        {"collect_and_range_delete", test_collect_and_range_delete},
        {"delete_if", test_delete_if},
        {"crash_replay", test_crash_replay},
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
    SRunner *sr = srunner_create(count_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
