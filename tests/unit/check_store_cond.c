/*
 * check_store_cond.c - unit tests of conditional writes in the store
 * (store.h: store_op.cond, want_old): a write only when the key is absent
 * (SET NX) or present (SET XX, GETDEL), the value it replaces handed back
 * (SET GET, GETSET, GETDEL), keys with siblings, and the decision taken
 * inside the write's transaction: two conditional writes of one key in one
 * batch or one atomic group see each other, through the write-ahead log
 * and through LMDB alike.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "store.h"
#include "vclock.h"

#define TEST_STORE_DIR_NAME "check_store_cond"
#include "test_store_dir.h"

static struct store *open_store(void)
{
    struct store_config c;
    struct store *s;
    char path[512], err[256];

    store_config_in(&c, path, sizeof(path), "d");
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    return s;
}

/* Fill op as a write of key (value NULL: a delete) under cond. */
static void cond_op(struct store_op *op, const char *key, const char *value, enum store_cond cond,
                    bool want_old)
{
    store_op_init(op, STORE_OP_WRITE);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->value = (const uint8_t *)value;
    op->value_len = value ? strlen(value) : 0;
    op->tombstone = value == NULL;
    op->skip_written = true;
    op->cond = cond;
    op->want_old = want_old;
}

/* Run one conditional write; returns whether it wrote.  *old (when asked) receives the old value.
 */
static bool cond_write(struct store *s, const char *key, const char *value, enum store_cond cond,
                       char **old)
{
    struct store_op op;

    cond_op(&op, key, value, cond, old != NULL);
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    if (old != NULL) {
        *old = op.old != NULL ? strndup((const char *)op.old, op.old_len) : NULL;
    } else {
        ck_assert_ptr_null(op.old);
    }
    free(op.old);
    return !op.skipped;
}

/* The key's record: siblings (0 when absent) and, with one, its value (NULL: a tombstone). */
static size_t state(struct store *s, const char *key, char **value)
{
    struct record r;
    size_t n;

    record_init(&r);
    *value = NULL;
    if (store_get(s, key, strlen(key), &r) == RK_ENOTFOUND) {
        return 0;
    }
    n = r.n;
    if (n == 1 && !r.s[0].tombstone) {
        *value = strndup((const char *)r.s[0].value, r.s[0].value_len);
    }
    record_deinit(&r);
    return n;
}

static void assert_value(struct store *s, const char *key, const char *want)
{
    char *v;
    size_t n = state(s, key, &v);

    if (want == NULL) {
        ck_assert_msg(n == 0 || v == NULL, "%s holds '%s', expected none", key, v ? v : "");
    } else {
        ck_assert_uint_eq(n, 1);
        ck_assert_ptr_nonnull(v);
        ck_assert_str_eq(v, want);
    }
    free(v);
}

/*
 * A meta-table put that makes its batch run through LMDB instead of the
 * log (store.c: only batches of data writes and handoff-table puts are
 * logged); with through_lmdb false, a no-op stand-in is not queued at all.
 */
static size_t with_lmdb_op(struct store_op *t, struct store_op **list, bool through_lmdb)
{
    if (!through_lmdb) {
        return 0;
    }
    store_op_init(t, STORE_OP_TABLE_PUT);
    t->table = STORE_TABLE_META;
    t->key = (const uint8_t *)"t";
    t->key_len = 1;
    t->value = (const uint8_t *)"v";
    t->value_len = 1;
    list[0] = t;
    return 1;
}

/* NX writes an absent or deleted key only; XX a present one only. */
START_TEST(test_nx_xx)
{
    struct store *s = open_store();

    ck_assert(!cond_write(s, "k", "x", STORE_COND_PRESENT, NULL)); /* XX of an absent key */
    {
        char *v;
        ck_assert_uint_eq(state(s, "k", &v), 0); /* not even a tombstone was made */
    }
    ck_assert(cond_write(s, "k", "1", STORE_COND_ABSENT, NULL));
    ck_assert(!cond_write(s, "k", "2", STORE_COND_ABSENT, NULL));
    assert_value(s, "k", "1");
    ck_assert(cond_write(s, "k", "3", STORE_COND_PRESENT, NULL));
    assert_value(s, "k", "3");
    ck_assert(cond_write(s, "k", NULL, STORE_COND_NONE, NULL)); /* DEL: a tombstone */
    ck_assert(!cond_write(s, "k", "4", STORE_COND_PRESENT, NULL));
    ck_assert(cond_write(s, "k", "5", STORE_COND_ABSENT, NULL)); /* NX over a tombstone */
    assert_value(s, "k", "5");
    store_close(s);
}
END_TEST

/* want_old hands back the replaced value: SET GET, GETSET, GETDEL. */
START_TEST(test_old_value)
{
    struct store *s = open_store();
    char *old;

    ck_assert(cond_write(s, "k", "1", STORE_COND_NONE, &old)); /* GETSET of an absent key */
    ck_assert_ptr_null(old);
    ck_assert(cond_write(s, "k", "22", STORE_COND_NONE, &old));
    ck_assert_str_eq(old, "1");
    free(old);
    ck_assert(!cond_write(s, "k", "3", STORE_COND_ABSENT, &old)); /* SET NX GET: not set, old */
    ck_assert_str_eq(old, "22");
    free(old);
    ck_assert(cond_write(s, "k", "", STORE_COND_PRESENT, &old)); /* an empty value */
    ck_assert_str_eq(old, "22");
    free(old);
    ck_assert(cond_write(s, "k", NULL, STORE_COND_PRESENT, &old)); /* GETDEL */
    ck_assert_str_eq(old, "");
    free(old);
    assert_value(s, "k", NULL);
    ck_assert(!cond_write(s, "k", NULL, STORE_COND_PRESENT, &old)); /* GETDEL of a deleted key */
    ck_assert_ptr_null(old);
    store_close(s);
}
END_TEST

/* A key with siblings is present; want_old on it is refused (conflict) and writes nothing. */
START_TEST(test_siblings)
{
    struct store *s = open_store();
    struct vclock other;
    struct sibling b;
    struct store_op op;
    bool changed;
    char *v;

    vclock_init(&other);
    sibling_init(&b);
    ck_assert_int_eq(store_write(s, "k", 1, "a", 1, false, NULL, NULL), 0);
    /* another node's version that never saw "a": a sibling */
    ck_assert_int_eq(vclock_increment(&other, "n2:1", fake_now_ms), 0);
    ck_assert_int_eq(sibling_set(&b, &other, fake_now_ms << 16, "n2", false, "b", 1), 0);
    ck_assert_int_eq(store_apply(s, "k", 1, &b, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(state(s, "k", &v), 2);
    ck_assert(!cond_write(s, "k", "c", STORE_COND_ABSENT, NULL));
    cond_op(&op, "k", "c", STORE_COND_NONE, true);
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    ck_assert(op.skipped);
    ck_assert(op.conflict);
    ck_assert(op.existed);
    ck_assert_ptr_null(op.old);
    ck_assert_uint_eq(state(s, "k", &v), 2);                      /* untouched */
    ck_assert(cond_write(s, "k", "d", STORE_COND_PRESENT, NULL)); /* XX: a blind write over both */
    assert_value(s, "k", "d");
    sibling_deinit(&b);
    vclock_deinit(&other);
    store_close(s);
}
END_TEST

/*
 * Two NX writes of one key queued together share a transaction: the
 * second sees the first and is skipped.  A check read before the batch
 * would have let both write.
 */
START_TEST(test_one_batch)
{
    struct store *s = open_store();
    struct store_op t, a, b, c;
    struct store_op *list[4];
    size_t n = with_lmdb_op(&t, list, _i == 1);

    list[n++] = &a;
    list[n++] = &b;
    list[n++] = &c;
    cond_op(&a, "k", "first", STORE_COND_ABSENT, false);
    cond_op(&b, "k", "second", STORE_COND_ABSENT, true);
    cond_op(&c, "k", NULL, STORE_COND_PRESENT, true); /* GETDEL after them */
    ck_assert_int_eq(store_submit_list(s, list, n), 0);
    ck_assert_int_eq(store_wait(s, &a), 0);
    ck_assert_int_eq(store_wait(s, &b), 0);
    ck_assert_int_eq(store_wait(s, &c), 0);
    ck_assert(!a.skipped);
    ck_assert(b.skipped);
    ck_assert_uint_eq(b.old_len, 5);
    ck_assert_mem_eq(b.old, "first", 5);
    ck_assert(!c.skipped);
    ck_assert_mem_eq(c.old, "first", 5);
    free(b.old);
    free(c.old);
    assert_value(s, "k", NULL);
    store_close(s);
}
END_TEST

/* The same inside one atomic group (an EXEC): a SET then SET NX of its key. */
START_TEST(test_atomic_group)
{
    struct store *s = open_store();
    struct store_op t, a, b, c;
    struct store_op *list[4];
    size_t n = with_lmdb_op(&t, list, _i == 1);

    list[n++] = &a;
    list[n++] = &b;
    list[n++] = &c;
    cond_op(&a, "k", "1", STORE_COND_NONE, false);
    cond_op(&b, "k", "2", STORE_COND_ABSENT, false);
    cond_op(&c, "j", "3", STORE_COND_PRESENT, false);
    ck_assert_int_eq(store_submit_atomic(s, list, n), 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(store_wait(s, list[i]), 0);
    }
    ck_assert(!a.skipped);
    ck_assert(b.skipped);
    ck_assert(c.skipped);
    assert_value(s, "k", "1");
    assert_value(s, "j", NULL);
    store_close(s);
}
END_TEST

static Suite *store_cond_suite(void)
{
    Suite *su = suite_create("store_cond");
    struct {
        const char *name;
        const TTest *fn;
        int paths; /* 2: once through the log, once through LMDB (_i) */
    } cases[] = {
        {"nx_xx", test_nx_xx, 1},
        {"old_value", test_old_value, 1},
        {"siblings", test_siblings, 1},
        {"one_batch", test_one_batch, 2},
        {"atomic_group", test_atomic_group, 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_loop_test(tc, cases[i].fn, 0, cases[i].paths);
        suite_add_tcase(su, tc);
    }
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(store_cond_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
