/*
 * check_store_edges.c - unit tests of the store (storage/store.c) at the
 * edges of its inputs and of its users, each a regression test of a
 * failure shown on the store: a data directory whose clock mark is
 * damaged to a value near the clock's end; contexts whose invented ids,
 * spread over concurrent siblings, outgrow the key's clock so no write
 * can cover it; a LOCK that is not a plain file (a FIFO, or a second name
 * of another file, which opening it truncated).
 */
#include <check.h>
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "error.h"
#include "hlc.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_edges"
#include "test_store_dir.h"

static struct store *open_store(const char *sub)
{
    struct store_config c;
    struct store *s;
    char path[512], err[256];

    store_config_in(&c, path, sizeof(path), sub);
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    return s;
}

/* --- a damaged clock mark ---------------------------------------------------- */

/* Overwrite the meta value name of the closed store in sub, straight in LMDB. */
static void meta_poke(const char *sub, const char *name, const void *v, size_t len)
{
    char path[512];
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    MDB_val k = {strlen(name), (void *)name}, d = {len, (void *)v};

    snprintf(path, sizeof(path), "%s/%s", tmp_dir, sub);
    ck_assert_int_eq(mdb_env_create(&env), 0);
    ck_assert_int_eq(mdb_env_set_maxdbs(env, 4), 0);
    ck_assert_int_eq(mdb_env_open(env, path, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    ck_assert_int_eq(mdb_put(txn, meta, &k, &d, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

static uint64_t write_stamp(struct store *s, const char *key)
{
    struct sibling w;
    uint64_t t;

    sibling_init(&w);
    ck_assert_int_eq(store_write(s, key, strlen(key), "v", 1, false, NULL, &w), 0);
    t = w.hlc;
    sibling_deinit(&w);
    return t;
}

/*
 * A mark at (or a few stamps short of) the clock's end is no stamp the
 * clock handed out: it used to become the clock, whose next timestamps ran
 * out (an assertion took the node down at its first writes).  It is
 * damaged, like a mark of the wrong size: the records are scanned instead.
 */
static void check_damaged_mark(uint64_t mark)
{
    struct store *s = open_store("d");
    uint8_t buf[8];
    uint64_t first, t;

    first = write_stamp(s, "k");
    store_close(s);
    bytes_put_be64(buf, mark);
    meta_poke("d", "hlc", buf, 8);
    s = open_store("d");
    for (int i = 0; i < 70000; i++) {
        t = write_stamp(s, "k");
        ck_assert_uint_gt(t, first);
        first = t;
    }
    ck_assert_uint_lt(hlc_physical(t), fake_now_ms + 1000);
    store_close(s);
}

START_TEST(test_mark_at_clock_end)
{
    check_damaged_mark(UINT64_MAX);
}
END_TEST

START_TEST(test_mark_near_clock_end)
{
    check_damaged_mark(hlc_make((UINT64_C(1) << 48) - 1, 0));
}
END_TEST

/* A mark ahead of the wall, as after the wall clock was set back, is kept. */
START_TEST(test_mark_ahead_kept)
{
    uint64_t mark = hlc_make(fake_now_ms + 20ull * 365 * 86400 * 1000, 0);
    struct store *s = open_store("d");
    uint8_t buf[8];

    write_stamp(s, "k");
    store_close(s);
    bytes_put_be64(buf, mark);
    meta_poke("d", "hlc", buf, 8);
    s = open_store("d");
    ck_assert_uint_gt(write_stamp(s, "k"), mark);
    store_close(s);
}
END_TEST

/* --- contexts that outgrow the key's clock ----------------------------------- */

/*
 * The key's first version (the store's actor at that write's counter) and n
 * invented ids "x<round>-<i>", each at counter 1, fresh.
 */
static void invented_context(struct vclock *ctx, const struct vclock *first, int round, int n)
{
    char id[32];

    vclock_deinit(ctx);
    vclock_init(ctx);
    ck_assert_int_eq(vclock_copy(ctx, first), 0);
    for (int i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "x%d-%d", round, i);
        ck_assert_int_eq(vclock_increment(ctx, id, hlc_make(fake_now_ms, 0)), 0);
    }
}

/*
 * Each context adds max_siblings ids, within the per-write bound, and makes
 * a sibling concurrent with the others; together their clocks name more
 * ids than a clock holds, so a blind SET or DEL (whose clock covers every
 * sibling) could no longer be built and the key was unwritable for good.
 * A context that would take the key's clock past what a write can cover
 * is refused instead, and the key stays writable.
 */
START_TEST(test_contexts_cannot_outgrow_clock)
{
    struct store *s = open_store("d");
    struct vclock ctx;
    struct sibling first;
    struct record r;
    int refused = 0, rc;

    vclock_init(&ctx);
    record_init(&r);
    sibling_init(&first);
    ck_assert_int_eq(store_write(s, "k", 1, "v", 1, false, NULL, &first), 0);
    for (int round = 0; round < 45; round++) {
        invented_context(&ctx, &first.clock, round, 100);
        rc = store_write(s, "k", 1, "w", 1, false, &ctx, NULL);
        ck_assert_msg(rc == 0 || rc == RK_ECONTEXT, "round %d: %d", round, rc);
        refused += rc == RK_ECONTEXT;
    }
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_int_eq(store_write(s, "k", 1, "blind", 5, false, NULL, NULL), 0);
    ck_assert_int_eq(store_write(s, "k", 1, NULL, 0, true, NULL, NULL), 0);
    ck_assert_int_gt(refused, 0);
    vclock_deinit(&ctx);
    sibling_deinit(&first);
    record_deinit(&r);
    store_close(s);
}
END_TEST

/* --- LOCK ---------------------------------------------------------------------- */

START_TEST(test_lock_fifo_refused)
{
    char path[512], lock[600];

    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    snprintf(lock, sizeof(lock), "%s/LOCK", path);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(mkfifo(lock, 0600), 0);
    assert_store_refused("d", "LOCK is not a regular file");
}
END_TEST

/* A second name of another file: opening it would truncate that file. */
START_TEST(test_lock_hard_link_refused)
{
    char path[512], lock[600], other[600];
    struct stat st;
    FILE *f;

    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    snprintf(lock, sizeof(lock), "%s/LOCK", path);
    snprintf(other, sizeof(other), "%s/precious", tmp_dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    f = fopen(other, "w");
    ck_assert_ptr_nonnull(f);
    fputs("keep me\n", f);
    fclose(f);
    ck_assert_int_eq(link(other, lock), 0);
    assert_store_refused("d", "LOCK has other names");
    ck_assert_int_eq(stat(other, &st), 0);
    ck_assert_int_eq(st.st_size, 8);
}
END_TEST

/* A second process is named by the pid LOCK holds, on one line. */
START_TEST(test_lock_names_holder_on_one_line)
{
    struct store *s = open_store("d");
    struct store_config c;
    struct store *again = NULL;
    char path[512], err[512], want[64];

    store_config_in(&c, path, sizeof(path), "d");
    ck_assert_int_eq(store_open(&again, &c, err, sizeof(err)), RK_EMISMATCH);
    snprintf(want, sizeof(want), "in use by another process (pid %ld)", (long)getpid());
    ck_assert_msg(strstr(err, want) != NULL, "refusal '%s' does not say '%s'", err, want);
    store_close(s);
}
END_TEST

static Suite *store_edges_suite(void)
{
    Suite *su = suite_create("store_edges");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"mark_at_clock_end", test_mark_at_clock_end},
        {"mark_near_clock_end", test_mark_near_clock_end},
        {"mark_ahead_kept", test_mark_ahead_kept},
        {"contexts_outgrow_clock", test_contexts_cannot_outgrow_clock},
        {"lock_fifo", test_lock_fifo_refused},
        {"lock_hard_link", test_lock_hard_link_refused},
        {"lock_names_holder", test_lock_names_holder_on_one_line},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(su, tc);
    }
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(store_edges_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
