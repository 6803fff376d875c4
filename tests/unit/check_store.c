/*
 * check_store.c - unit tests of the LMDB store (storage/store.c) on real
 * LMDB files in temporary directories: identity, versions and siblings
 * through the write path, arc scans across the wrap-around with resumable
 * cursors, range deletes, tombstone collection, hints, tables, completion
 * by callback, group commit, and full maps and file systems.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <lmdb.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "hlc.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store"
#include "test_store_dir.h"
#include "test_rng.h"

static void settings_for(struct store_config *c, const char *sub, const char *node)
{
    static char path[512];
    store_config_defaults(c);
    snprintf(path, sizeof(path), "%s/%s", tmp_dir, sub);
    c->path = path;
    c->node_id = node;
    c->cluster_id = cluster_a;
    c->cluster_id_len = sizeof(cluster_a) - 1;
    c->wall_ms = fake_wall;
    c->sync = STORE_SYNC_NONE; /* durability is the crash test's subject */
}

static struct store *open_store(const char *sub, const char *node)
{
    struct store_config c;
    struct store *s;
    char err[256];
    settings_for(&c, sub, node);
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    return s;
}

static void put(struct store *s, const char *key, const char *value)
{
    ck_assert_int_eq(store_write(s, key, strlen(key), value, strlen(value), false, NULL, NULL), 0);
}

/* The value of a single-sibling record, or NULL when absent. */
static char *get_value(struct store *s, const char *key)
{
    struct record r;
    char *v;
    record_init(&r);
    if (store_get(s, key, strlen(key), &r) == RK_ENOTFOUND) {
        return NULL;
    }
    ck_assert_uint_eq(r.n, 1);
    v = strndup((const char *)r.s[0].value, r.s[0].value_len);
    record_deinit(&r);
    return v;
}

START_TEST(test_open_write_reopen)
{
    struct store *s = open_store("d", "n1");
    char *v;
    put(s, "alpha", "1");
    put(s, "beta", "2");
    store_close(s);
    s = open_store("d", "n1");
    v = get_value(s, "alpha");
    ck_assert_str_eq(v, "1");
    free(v);
    ck_assert_ptr_null(get_value(s, "missing"));
    store_close(s);
}
END_TEST

/* op: a WRITE of key (value NULL: a delete), as SET and DEL submit it. */
static void write_plain(struct store_op *op, const char *key, const char *value)
{
    store_op_init(op, STORE_OP_WRITE);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->value = (const uint8_t *)value;
    op->value_len = value ? strlen(value) : 0;
    op->tombstone = value == NULL;
}

/* A write says whether it replaced a live value: what DEL counts. */
static bool write_existed(struct store *s, const char *key, const char *value)
{
    struct store_op op;

    write_plain(&op, key, value);
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    sibling_deinit(&op.written);
    return op.existed;
}

static int read_value(void *ctx, const uint8_t *rec, size_t len)
{
    const uint8_t *value;
    size_t n, vlen;
    bool tomb;

    ck_assert_int_eq(record_peek(rec, len, &n, &tomb, &value, &vlen), 0);
    ck_assert_uint_eq(n, 1);
    snprintf(ctx, 16, "%.*s", (int)vlen, (const char *)value);
    return 7;
}

/* store_read lends the stored bytes to a callback and returns what it returns. */
START_TEST(test_read_raw)
{
    struct store *s = open_store("d", "n1");
    char got[16] = "";

    put(s, "k", "value");
    ck_assert_int_eq(store_read(s, "k", 1, read_value, got), 7);
    ck_assert_str_eq(got, "value");
    ck_assert_int_eq(store_read(s, "nope", 4, read_value, got), RK_ENOTFOUND);
    store_close(s);
}
END_TEST

/*
 * A held snapshot serves every read until released: a write submitted
 * during the hold is neither seen by it nor completed before it ends (the
 * store publishes a batch only while no read holds), and shows after.
 */
static void write_op(struct store_op *op, const char *key, const char *value, int *done);
static void wait_done(struct store *s, const int *done, int want);

START_TEST(test_read_hold)
{
    struct store *s = open_store("d", "n1");
    struct store_op op;
    int done = 0;
    char *v;

    put(s, "k", "1");
    ck_assert_int_eq(store_read_hold(s), 0);
    ck_assert_int_eq(store_read_hold(s), 0); /* nested */
    write_op(&op, "k", "2", &done);
    ck_assert_int_eq(store_submit(s, &op), 0);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "1");
    free(v);
    store_read_release(s);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "1"); /* still held once */
    free(v);
    store_dispatch(s);
    ck_assert_int_eq(done, 0); /* not acknowledged while a read holds */
    store_read_release(s);
    wait_done(s, &done, 1);
    ck_assert_int_eq(op.result, 0);
    sibling_deinit(&op.written);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "2");
    free(v);
    store_close(s);
}

END_TEST

/*
 * store_run_ready() from a thread holding a read returns without running
 * the batch (publishing it would wait for that very hold): the writes
 * complete once the hold ends, through the writer thread.
 */
START_TEST(test_run_ready)
{
    struct store *s = open_store("d", "n1");
    struct store_op op;
    int done = 0;

    ck_assert_int_eq(store_read_hold(s), 0);
    write_op(&op, "k", "1", &done);
    ck_assert_int_eq(store_submit(s, &op), 0);
    store_run_ready(s); /* returns: a hang here fails the test by its timeout */
    store_dispatch(s);
    ck_assert_int_eq(done, 0);
    store_read_release(s);
    wait_done(s, &done, 1);
    ck_assert_int_eq(op.result, 0);
    sibling_deinit(&op.written);
    store_close(s);
}
END_TEST

/*
 * store_queue() wakes nobody: the batch runs in store_run_ready()'s thread
 * when it can (sync none: completed by the time it returns, its callback
 * waiting for store_dispatch()), and otherwise store_run_ready() wakes the
 * writer thread: from a thread holding a read, and under `sync always`,
 * the writes complete through it (a writer never woken fails by the
 * poll's timeout in wait_done()).  An atomic group over batch_max is
 * refused as store_submit_atomic() refuses it.
 */
/* A store whose writer thread wakes only when signalled (no idle checkpoint timer). */
static struct store *open_store_untimed(enum store_sync sync)
{
    struct store_config c;
    struct store *s;
    char err[256];

    settings_for(&c, "d", "n1");
    c.sync = sync;
    c.batch_max = 4;
    c.test_idle_checkpoint_ms = UINT64_MAX;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    usleep(50 * 1000); /* the writer thread reaches its wait (sooner only makes the test weaker) */
    return s;
}

START_TEST(test_queue)
{
    struct store *s = open_store_untimed(STORE_SYNC_NONE);
    struct store_op op, op2, *list[2] = {&op, &op2};
    int done = 0;
    char *v;

    write_op(&op, "k", "1", &done);
    write_op(&op2, "k2", "1", &done);
    ck_assert_int_eq(store_queue(s, list, 2, true), 0);
    store_run_ready(s); /* runs here: nothing left for the writer */
    store_dispatch(s);
    ck_assert_int_eq(done, 2);
    sibling_deinit(&op.written);
    sibling_deinit(&op2.written);

    ck_assert_int_eq(store_read_hold(s), 0);
    usleep(50 * 1000); /* the writer thread, woken by the batch above, waits again */
    write_op(&op, "k", "2", &done);
    ck_assert_int_eq(store_queue(s, list, 1, false), 0);
    store_run_ready(s); /* holding a read: wakes the writer instead */
    store_read_release(s);
    wait_done(s, &done, 3);
    ck_assert_int_eq(op.result, 0);
    sibling_deinit(&op.written);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "2");
    free(v);
    store_close(s);
}
END_TEST

START_TEST(test_queue_always)
{
    struct store *s = open_store_untimed(STORE_SYNC_ALWAYS);
    struct store_op op, *list[1] = {&op};
    int done = 0;
    char *v;
    write_op(&op, "k", "1", &done);
    ck_assert_int_eq(store_queue(s, list, 1, false), 0);
    store_run_ready(s); /* fsyncs are the writer's: woken here */
    wait_done(s, &done, 1);
    ck_assert_int_eq(op.result, 0);
    sibling_deinit(&op.written);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "1");
    free(v);
    {
        struct store_op many[5], *ml[5];
        for (int i = 0; i < 5; i++) {
            write_op(&many[i], "m", "1", &done);
            ml[i] = &many[i];
        }
        ck_assert_int_eq(store_queue(s, ml, 5, true), RK_ETOOBIG);
    }
    store_close(s);
}
END_TEST

START_TEST(test_write_reports_existed)
{
    struct store *s = open_store("d", "n1");
    ck_assert(!write_existed(s, "k", "1"));  /* new key */
    ck_assert(write_existed(s, "k", "2"));   /* overwrite */
    ck_assert(write_existed(s, "k", NULL));  /* delete of a live value */
    ck_assert(!write_existed(s, "k", NULL)); /* delete of a tombstone */
    ck_assert(!write_existed(s, "k", "3"));  /* write over a tombstone */
    store_close(s);
}
END_TEST

static int open_err(const char *sub, const char *node, const uint8_t *cluster, size_t clen,
                    const uint8_t *seed, char *err, size_t err_len)
{
    struct store_config c;
    struct store *s;
    int rc;
    settings_for(&c, sub, node);
    c.cluster_id = cluster;
    c.cluster_id_len = clen;
    if (seed != NULL) {
        memcpy(c.seed, seed, RING_SEED_LEN);
    }
    rc = store_open(&s, &c, err, err_len);
    if (rc == 0) {
        store_close(s);
    }
    return rc;
}

START_TEST(test_identity_refused)
{
    char err[256];
    uint8_t seed2[RING_SEED_LEN] = {9};
    store_close(open_store("d", "n1"));

    ck_assert_int_eq(open_err("d", "n2", cluster_a, 9, NULL, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "belongs to node 'n1', not 'n2'") != NULL, "%s", err);
    ck_assert_int_eq(open_err("d", "n1", (const uint8_t *)"other", 5, NULL, err, sizeof(err)),
                     RK_EMISMATCH);
    ck_assert_msg(strstr(err, "another cluster") != NULL, "%s", err);
    ck_assert_int_eq(open_err("d", "n1", cluster_a, 9, seed2, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "was formed with ring-seed ") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "; ring-seed is 09000000000000000000000000000000") != NULL, "%s",
                  err);
    /* the original identity still opens */
    ck_assert_int_eq(open_err("d", "n1", cluster_a, 9, NULL, err, sizeof(err)), 0);
}
END_TEST

/* Open sub as n1 of cluster_a with rf and conflicts; err gets the refusal. */
static int open_cluster(const char *sub, uint32_t rf, enum record_conflicts mode, char *err,
                        size_t err_len)
{
    struct store_config c;
    struct store *s;
    int rc;

    settings_for(&c, sub, "n1");
    c.rf = rf;
    c.conflicts = mode;
    rc = store_open(&s, &c, err, err_len);
    if (rc == 0) {
        store_close(s);
    }
    return rc;
}

/* Drop the meta records names[0..n) of sub, as a directory from before they existed. */
static void meta_drop(const char *sub, const char *const *names, size_t n)
{
    char path[512];
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;

    snprintf(path, sizeof(path), "%s/%s", tmp_dir, sub);
    ck_assert_int_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    ck_assert_int_eq(mdb_env_open(env, path, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    for (size_t i = 0; i < n; i++) {
        MDB_val k = {strlen(names[i]), (void *)names[i]};
        ck_assert_int_eq(mdb_del(txn, dbi, &k, NULL), 0);
    }
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* rf and conflicts are recorded at creation; another value is refused, naming both. */
START_TEST(test_cluster_settings_refused)
{
    static const char *const both[] = {"rf", "conflicts"};
    char err[256];

    ck_assert_int_eq(open_cluster("d", 3, RECORD_SIBLINGS, err, sizeof(err)), 0);
    ck_assert_int_eq(open_cluster("d", 2, RECORD_SIBLINGS, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "was formed with rf 3; rf is 2") != NULL, "%s", err);
    ck_assert_int_eq(open_cluster("d", 3, RECORD_LWW, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "was formed with conflicts siblings; conflicts is lww") != NULL, "%s",
                  err);
    /* the refusals changed nothing */
    ck_assert_int_eq(open_cluster("d", 3, RECORD_SIBLINGS, err, sizeof(err)), 0);
    ck_assert_int_eq(open_cluster("d", 2, RECORD_LWW, err, sizeof(err)), RK_EMISMATCH);
    /* a directory from before rf and conflicts were recorded takes the configured ones */
    meta_drop("d", both, 2);
    ck_assert_int_eq(open_cluster("d", 5, RECORD_LWW, err, sizeof(err)), 0);
    ck_assert_int_eq(open_cluster("d", 3, RECORD_LWW, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "was formed with rf 5; rf is 3") != NULL, "%s", err);
    ck_assert_int_eq(open_cluster("d", 5, RECORD_LWW, err, sizeof(err)), 0);
    /* rf 0 is no setting at all */
    ck_assert_int_eq(open_cluster("e", 0, RECORD_LWW, err, sizeof(err)), RK_EINVAL);
}
END_TEST

START_TEST(test_unknown_format_refused)
{
    char path[512], err[256];
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint8_t fmt[4] = {0, 0, 0, 7};
    MDB_val k = {6, "format"}, v = {4, fmt};

    store_close(open_store("d", "n1"));
    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    ck_assert_int_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    ck_assert_int_eq(mdb_env_open(env, path, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    ck_assert_int_eq(mdb_put(txn, dbi, &k, &v, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    ck_assert_int_eq(open_err("d", "n1", cluster_a, 9, NULL, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "has format 7; this build reads formats 1 and 2") != NULL, "%s", err);
}
END_TEST

/*
 * A directory of format 1 (before the write-ahead log) opens, keeps its
 * data, and is recorded as format 2, so a build that would not read the
 * log refuses it from then on.
 */
START_TEST(test_format_1_upgraded)
{
    char path[512], *v;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    uint8_t fmt[4] = {0, 0, 0, 1};
    MDB_val k = {6, "format"}, val = {4, fmt};
    struct store *s = open_store("d", "n1");

    put(s, "k", "v");
    store_close(s);
    snprintf(path, sizeof(path), "%s/d", tmp_dir);
    ck_assert_int_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    ck_assert_int_eq(mdb_env_open(env, path, 0, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    ck_assert_int_eq(mdb_put(txn, dbi, &k, &val, 0), 0);
    ck_assert_int_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    s = open_store("d", "n1");
    v = get_value(s, "k");
    ck_assert_str_eq(v, "v");
    free(v);
    store_close(s);
    ck_assert_int_eq(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 4);
    ck_assert_int_eq(mdb_env_open(env, path, MDB_RDONLY, 0600), 0);
    ck_assert_int_eq(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    ck_assert_int_eq(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    ck_assert_int_eq(mdb_get(txn, dbi, &k, &val), 0);
    ck_assert_uint_eq(val.mv_size, 4);
    ck_assert_uint_eq(((const uint8_t *)val.mv_data)[3], 2);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}
END_TEST

START_TEST(test_second_opener_refused)
{
    struct store *s = open_store("d", "n1");
    char err[256];
    ck_assert_int_eq(open_err("d", "n1", cluster_a, 9, NULL, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_msg(strstr(err, "in use by another process") != NULL, "%s", err);
    store_close(s);
}
END_TEST

START_TEST(test_bad_config)
{
    struct store_config c;
    struct store *s;
    char err[256];
    settings_for(&c, "d", "bad id");
    ck_assert_int_eq(store_open(&s, &c, err, sizeof(err)), RK_EINVAL);
    settings_for(&c, "d", "n1");
    c.cluster_id_len = 0;
    ck_assert_int_eq(store_open(&s, &c, err, sizeof(err)), RK_EINVAL);
    settings_for(&c, "d", "n1");
    c.map_max = c.map_initial - 1;
    ck_assert_int_eq(store_open(&s, &c, err, sizeof(err)), RK_EINVAL);
}
END_TEST

/* A version of key written by another node, to apply as a concurrent write. */
static void version_from(const char *node, const char *key, const char *value, bool tombstone,
                         struct sibling *out)
{
    char sub[32];
    snprintf(sub, sizeof(sub), "other-%s", node);
    struct store *o = open_store(sub, node);
    ck_assert_int_eq(
        store_write(o, key, strlen(key), value, value ? strlen(value) : 0, tombstone, NULL, out),
        0);
    store_close(o);
}

START_TEST(test_siblings_through_writes)
{
    struct store *s = open_store("d", "n1");
    struct sibling w1, w2;
    struct vclock ctx;
    struct record r;

    sibling_init(&w1);
    sibling_init(&w2);
    vclock_init(&ctx);
    record_init(&r);
    ck_assert_int_eq(store_write(s, "k", 1, "a", 1, false, &ctx, &w1), 0);
    /*
     * A second write through the same node with the same stale context
     * would have to supersede the first without having seen it: refused
     * as a conflict, the record unchanged.
     */
    ck_assert_int_eq(store_write(s, "k", 1, "b", 1, false, &ctx, NULL), RK_EMISMATCH);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    /* A concurrent write coordinated elsewhere becomes a sibling. */
    version_from("n2", "k", "b", false, &w2);
    ck_assert_int_eq(store_apply(s, "k", 1, &w2, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    /* A write with the record's context supersedes both. */
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_int_eq(store_write(s, "k", 1, "c", 1, false, &ctx, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_mem_eq(r.s[0].value, "c", 1);
    /* A blind write (no context) supersedes what the node has. */
    put(s, "k", "d");
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_mem_eq(r.s[0].value, "d", 1);
    ck_assert_int_eq(vclock_compare(&r.s[0].clock, &w1.clock), VCLOCK_AFTER);
    ck_assert_int_eq(vclock_compare(&r.s[0].clock, &w2.clock), VCLOCK_AFTER);
    /* A delete is a tombstone. */
    ck_assert_int_eq(store_write(s, "k", 1, NULL, 0, true, NULL, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert(record_all_tombstones(&r));
    sibling_deinit(&w1);
    sibling_deinit(&w2);
    vclock_deinit(&ctx);
    record_deinit(&r);
    store_close(s);
}
END_TEST

START_TEST(test_apply_replicated_versions)
{
    struct store *a = open_store("a", "na");
    struct store *b = open_store("b", "nb");
    struct sibling v1, v2, v3;
    struct record r;
    bool changed;

    sibling_init(&v1);
    sibling_init(&v2);
    sibling_init(&v3);
    record_init(&r);
    ck_assert_int_eq(store_write(a, "k", 1, "one", 3, false, NULL, &v1), 0);
    ck_assert_int_eq(store_write(a, "k", 1, "two", 3, false, NULL, &v2), 0);
    ck_assert_int_eq(store_write(b, "k", 1, "bee", 3, false, NULL, &v3), 0);
    /* On a third replica: v1, then v2 (descends: replaces), then v1 again (old: ignored). */
    struct store *c = open_store("c", "nc");
    ck_assert_int_eq(store_apply(c, "k", 1, &v1, &changed), 0);
    ck_assert(changed);
    ck_assert_int_eq(store_apply(c, "k", 1, &v2, &changed), 0);
    ck_assert(changed);
    ck_assert_int_eq(store_apply(c, "k", 1, &v1, &changed), 0);
    ck_assert(!changed);
    ck_assert_int_eq(store_get(c, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    /* v3, written on b independently, is concurrent: a sibling. */
    ck_assert_int_eq(store_apply(c, "k", 1, &v3, &changed), 0);
    ck_assert(changed);
    ck_assert_int_eq(store_get(c, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    sibling_deinit(&v1);
    sibling_deinit(&v2);
    sibling_deinit(&v3);
    record_deinit(&r);
    store_close(a);
    store_close(b);
    store_close(c);
}
END_TEST

START_TEST(test_lww_mode)
{
    struct store_config cfg;
    struct store *s, *other = open_store("o", "zz");
    struct sibling late, early;
    struct record r;
    char err[256];

    settings_for(&cfg, "d", "n1");
    cfg.conflicts = RECORD_LWW;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    sibling_init(&late);
    sibling_init(&early);
    record_init(&r);
    ck_assert_int_eq(store_write(other, "k", 1, "early", 5, false, NULL, &early), 0);
    fake_now_ms += 1000;
    ck_assert_int_eq(store_write(other, "k", 1, "late", 4, false, NULL, &late), 0);
    /* Apply a concurrent local write and both remote ones, in the wrong order. */
    put(s, "k", "local");
    ck_assert_int_eq(store_apply(s, "k", 1, &late, NULL), 0);
    ck_assert_int_eq(store_apply(s, "k", 1, &early, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_mem_eq(r.s[0].value, "late", 4);
    sibling_deinit(&late);
    sibling_deinit(&early);
    record_deinit(&r);
    store_close(s);
    store_close(other);
}
END_TEST

START_TEST(test_sibling_cap)
{
    struct store_config cfg;
    struct store *s;
    struct sibling v;
    struct record r;
    char err[256], node[8];

    settings_for(&cfg, "d", "n1");
    cfg.max_siblings = 3;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    sibling_init(&v);
    record_init(&r);
    for (int i = 2; i <= 5; i++) {
        snprintf(node, sizeof(node), "n%d", i);
        version_from(node, "k", "v", false, &v);
        ck_assert_int_eq(store_apply(s, "k", 1, &v, NULL), i <= 4 ? 0 : RK_ETOOBIG);
    }
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 3);
    for (size_t i = 0; i < r.n; i++) {
        ck_assert_str_ne(r.s[i].node, "n5");
    }
    sibling_deinit(&v);
    record_deinit(&r);
    store_close(s);
}
END_TEST

/*
 * A version whose clock names VCLOCK_ENTRIES_MAX writers ("w0000" .., and
 * actor in place of the last when not NULL), stamped now: pruning, which
 * leaves entries younger than a day, keeps them all.
 */
static void version_full(struct sibling *v, const char *actor)
{
    struct vclock vc;
    uint64_t now = hlc_make(fake_now_ms, 0);
    char id[16];

    vclock_init(&vc);
    for (unsigned i = 0; vc.n < VCLOCK_ENTRIES_MAX - (actor != NULL); i++) {
        snprintf(id, sizeof(id), "w%04u", i);
        ck_assert_int_eq(vclock_increment(&vc, id, now), 0);
    }
    if (actor != NULL) {
        ck_assert_int_eq(vclock_increment(&vc, actor, now), 0);
    }
    ck_assert_int_eq(sibling_set(v, &vc, now, "w0000", false, "full", 4), 0);
    vclock_deinit(&vc);
}

/* A WRITE operation of key (value NULL: a delete), as SET and DEL submit it; its result. */
static int write_result(struct store *s, const char *key, const char *value,
                        const struct vclock *context)
{
    struct store_op op;

    write_plain(&op, key, value);
    op.context = context;
    op.skip_written = true;
    ck_assert_int_eq(store_submit(s, &op), 0);
    return store_wait(s, &op);
}

/*
 * A key whose stored version vector is full: every WRITE of this store's
 * actor (not in it) fails with RK_ECLOCKFULL, SET, DEL, KSET with KGET's
 * context alike, and two days later too (pruning runs only when the key is
 * stored); the sibling cap stays RK_ETOOBIG.  A replica's APPLY in lww mode
 * whose merge would pass the bound is RK_ECLOCKFULL.  A store whose actor
 * the clock names writes the key, and that write prunes the clock.
 */
START_TEST(test_clock_full)
{
    struct store_config cfg;
    struct store *s, *lww, *named;
    struct sibling full, other;
    struct vclock ctx;
    struct record r;
    char err[256];

    settings_for(&cfg, "d", "n1");
    cfg.max_siblings = 1;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    sibling_init(&full);
    sibling_init(&other);
    vclock_init(&ctx);
    record_init(&r);
    version_full(&full, NULL);
    ck_assert_int_eq(store_apply(s, "k", 1, &full, NULL), 0);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.s[0].clock.n, VCLOCK_ENTRIES_MAX);
    ck_assert_int_eq(record_context(&r, &ctx), 0);

    ck_assert_int_eq(write_result(s, "k", "v", NULL), RK_ECLOCKFULL);
    ck_assert_int_eq(write_result(s, "k", NULL, NULL), RK_ECLOCKFULL);
    ck_assert_int_eq(write_result(s, "k", "v", &ctx), RK_ECLOCKFULL);
    ck_assert_int_eq(write_result(s, "k", NULL, &ctx), RK_ECLOCKFULL);
    /* a concurrent version past max-siblings 1 */
    version_from("n2", "k", "other", false, &other);
    ck_assert_int_eq(store_apply(s, "k", 1, &other, NULL), RK_ETOOBIG);
    ck_assert_int_eq(write_result(s, "j", "v", NULL), 0);

    settings_for(&cfg, "l", "n1");
    cfg.conflicts = RECORD_LWW;
    ck_assert_int_eq(store_open(&lww, &cfg, err, sizeof(err)), 0);
    ck_assert_int_eq(store_apply(lww, "k", 1, &full, NULL), 0);
    ck_assert_int_eq(store_apply(lww, "k", 1, &other, NULL), RK_ECLOCKFULL);
    ck_assert_int_eq(write_result(lww, "k", "v", NULL), RK_ECLOCKFULL);
    store_close(lww);

    /* the remedy the client's error names: a writer the clock names, a day later */
    named = open_store("named", "n3");
    version_full(&full, store_actor(named));
    ck_assert_int_eq(store_apply(named, "k", 1, &full, NULL), 0);
    fake_now_ms += 2 * 24 * 3600 * 1000ull;
    ck_assert_int_eq(write_result(s, "k", "v", NULL), RK_ECLOCKFULL); /* not this one, still */
    store_close(s);
    ck_assert_int_eq(write_result(named, "k", "v", NULL), 0);
    ck_assert_int_eq(store_get(named, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.s[0].clock.n, VCLOCK_PRUNE_KEEP_DEFAULT);
    store_close(named);

    sibling_deinit(&full);
    sibling_deinit(&other);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/* --- replica writes as they arrive: views through both paths --------------- */

/* A random version of key k: ids from a small set, a third of the stamps two days old (prunable).
 */
static void pv_random(struct sibling *v, const struct record *model, unsigned step)
{
    static const char *ids[] = {"a", "n1", "n10", "n2", "n3", "zz"};
    static const char *nodes[] = {"n1", "n2", "n3"};
    uint64_t now = hlc_make(fake_now_ms, 0);
    uint8_t value[8];
    size_t len = rng_below(sizeof(value) + 1);
    bool tomb = rng_below(4) == 0;
    struct vclock vc;

    vclock_init(&vc);
    if (step % 2 == 0) { /* descends from everything the key holds: the fast path's case */
        for (size_t i = 0; i < model->n; i++) {
            ck_assert_int_eq(vclock_merge(&vc, &model->s[i].clock), 0);
        }
    }
    for (uint32_t k = 1 + rng_below(3); k > 0; k--) {
        uint64_t old = rng_below(3) == 0 ? hlc_make(fake_now_ms - 2 * 24 * 3600 * 1000ull, 0) : 0;
        ck_assert_int_eq(
            vclock_increment(&vc, ids[rng_below(6)], old ? old : now + rng_below(1000)), 0);
    }
    for (size_t i = 0; i < len; i++) {
        value[i] = (uint8_t)('a' + rng_below(3));
    }
    ck_assert_int_eq(
        sibling_set(v, &vc, now + rng_below(50), nodes[rng_below(3)], tomb, value, tomb ? 0 : len),
        0);
    v->expire_ms = !tomb && rng_below(4) == 0 ? fake_now_ms + rng_below(3) * 1000 : 0;
    vclock_deinit(&vc);
}

/*
 * A replica write (STORE_OP_APPLY) of versions a peer sent, decoded as the
 * served request decodes them (record_view(): values in the body, clocks
 * in a small room or past it), gives what record_apply() gives the stored
 * record, op by op: the record, changed, the result and the tombstone
 * count.  Through the log (a batch of APPLYs) and through LMDB (a batch with
 * a TABLE_PUT), in both conflict modes, with prune_keep 4 and old stamps
 * so that long clocks are pruned when stored.  Under the sanitizers, nothing the store does
 * may write to or free the view.
 */
START_TEST(test_apply_views_agree)
{
    rng_seed("check_store");
    for (int mode = 0; mode < 2; mode++) {
        struct store_config cfg;
        struct store *s;
        struct record model;
        char err[256];

        settings_for(&cfg, mode == 0 ? "pv-s" : "pv-l", "n1");
        cfg.conflicts = mode == 0 ? RECORD_SIBLINGS : RECORD_LWW;
        cfg.max_siblings = 3;
        cfg.prune_keep = 4;
        ck_assert_msg(store_open(&s, &cfg, err, sizeof(err)) == 0, "open: %s", err);
        record_init(&model);
        for (unsigned step = 0; step < 1500; step++) {
            struct record sent, view, got;
            struct vclock_entry room[6]; /* more than prune_keep: a clock in it may be pruned */
            struct store_op ops[3], *list[3];
            struct store_stats st;
            size_t nv = 1 + rng_below(2), len, n = 0;
            bool lmdb = rng_below(2) == 0;
            uint8_t *buf;

            record_init(&sent);
            record_init(&view);
            record_init(&got);
            for (size_t i = 0; i < nv; i++) {
                struct sibling v;
                sibling_init(&v);
                pv_random(&v, &model, step + (unsigned)i);
                ck_assert_int_eq(record_push(&sent, &v), 0);
                sibling_deinit(&v);
            }
            len = record_encoded_size(&sent);
            buf = malloc(len);
            ck_assert_ptr_nonnull(buf);
            record_encode(&sent, buf);
            ck_assert_int_eq(record_view(buf, len, &view, room, 6), 0);
            for (size_t i = 0; i < view.n; i++) {
                store_op_init(&ops[n], STORE_OP_APPLY);
                ops[n].key = (const uint8_t *)"k";
                ops[n].key_len = 1;
                ops[n].version = &view.s[i];
                list[n] = &ops[n];
                n++;
            }
            if (lmdb) { /* a batch the log does not take */
                store_op_init(&ops[n], STORE_OP_TABLE_PUT);
                ops[n].table = STORE_TABLE_META;
                ops[n].key = (const uint8_t *)"pv-marker";
                ops[n].key_len = 9;
                ops[n].value = (const uint8_t *)"x";
                ops[n].value_len = 1;
                list[n] = &ops[n];
                n++;
            }
            ck_assert_int_eq(store_submit_list(s, list, n), 0);
            for (size_t i = 0; i < n; i++) {
                ck_assert_int_eq(store_wait(s, list[i]), list[i]->result);
            }
            for (size_t i = 0; i < view.n; i++) {
                bool changed = false;
                int want =
                    record_apply(&model, &sent.s[i], cfg.conflicts, cfg.max_siblings, &changed);
                if (want == 0 && changed) {
                    record_prune(&model, cfg.prune_keep, fake_now_ms, cfg.prune_min_age_ms);
                }
                ck_assert_msg(ops[i].result == want, "step %u op %zu: result %d, want %d", step, i,
                              ops[i].result, want);
                ck_assert_msg(ops[i].changed == (want == 0 && changed),
                              "step %u op %zu (%s): changed %d, want %d", step, i,
                              lmdb ? "lmdb" : "log", ops[i].changed, changed);
            }
            if (model.n == 0) {
                ck_assert_int_eq(store_get(s, "k", 1, &got), RK_ENOTFOUND);
            } else {
                ck_assert_int_eq(store_get(s, "k", 1, &got), 0);
                ck_assert_msg(record_same(&got, &model), "step %u (%s, %s): stored record differs",
                              step, mode == 0 ? "siblings" : "lww", lmdb ? "lmdb" : "log");
            }
            store_get_stats(s, &st);
            ck_assert_uint_eq(st.tombstones, record_all_tombstones(&model) ? 1 : 0);
            record_view_release(&view);
            record_deinit(&view);
            record_deinit(&got);
            record_deinit(&sent);
            free(buf);
        }
        record_deinit(&model);
        store_close(s);
    }
}
END_TEST

/* --- arcs ------------------------------------------------------------------ */

#define ARC_KEYS 500

struct collected {
    uint64_t pos[ARC_KEYS * 2];
    size_t n;
};

static int collect_pos(void *ctx, const struct store_item *it)
{
    struct collected *c = ctx;
    ck_assert_uint_lt(c->n, ARC_KEYS * 2);
    c->pos[c->n++] = it->pos;
    return 0;
}

static bool on_arc(uint64_t start, uint64_t end, uint64_t p)
{
    if (start < end) {
        return p > start && p <= end;
    }
    return p > start || p <= end;
}

static void fill_keys(struct store *s, uint64_t *pos)
{
    char key[32];
    for (int i = 0; i < ARC_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        put(s, key, "v");
        pos[i] = store_position(s, key, strlen(key));
    }
}

/* Scan (start, end] in chunks of `chunk` keys and compare with the expected set. */
static void check_arc(struct store *s, const uint64_t *pos, uint64_t start, uint64_t end,
                      size_t chunk)
{
    struct collected got = {.n = 0};
    struct store_cursor cur;
    size_t want = 0, calls = 0;

    store_cursor_init(&cur);
    while (!cur.done) {
        ck_assert_int_eq(store_scan(s, start, end, &cur, chunk, 0, collect_pos, &got), 0);
        ck_assert_uint_lt(++calls, ARC_KEYS + 3);
    }
    for (int i = 0; i < ARC_KEYS; i++) {
        want += on_arc(start, end, pos[i]);
    }
    ck_assert_uint_eq(got.n, want);
    for (size_t i = 0; i < got.n; i++) {
        ck_assert(on_arc(start, end, got.pos[i]));
        for (size_t j = 0; j < i; j++) {
            ck_assert_uint_ne(got.pos[i], got.pos[j]);
        }
    }
    /* In ring order from start: ascending, with at most one wrap. */
    size_t wraps = 0;
    for (size_t i = 1; i < got.n; i++) {
        wraps += got.pos[i] < got.pos[i - 1];
    }
    ck_assert_uint_le(wraps, 1);
}

START_TEST(test_arc_scans)
{
    struct store *s = open_store("d", "n1");
    uint64_t pos[ARC_KEYS];
    fill_keys(s, pos);
    const uint64_t q = UINT64_MAX / 4;
    check_arc(s, pos, q, 3 * q, 0);           /* plain */
    check_arc(s, pos, 3 * q, q, 7);           /* wraps, resumed in chunks */
    check_arc(s, pos, q, q, 50);              /* the whole circle */
    check_arc(s, pos, UINT64_MAX, q, 1);      /* starts at the very end */
    check_arc(s, pos, pos[0], pos[0], 13);    /* whole circle from a key */
    check_arc(s, pos, pos[3] - 1, pos[3], 1); /* exactly one key */
    check_arc(s, pos, pos[3], pos[3] + 1, 0); /* a key on the open end: excluded */
    uint64_t keys, bytes;
    ck_assert_int_eq(store_arc_stats(s, q, q, &keys, &bytes), 0);
    ck_assert_uint_eq(keys, ARC_KEYS);
    ck_assert_uint_gt(bytes, ARC_KEYS * 8);
    store_close(s);
}
END_TEST

static int stop_after_three(void *ctx, const struct store_item *it)
{
    (void)it;
    return ++*(int *)ctx == 3 ? 42 : 0;
}

START_TEST(test_scan_callback_stops)
{
    struct store *s = open_store("d", "n1");
    uint64_t pos[ARC_KEYS];
    struct store_cursor cur;
    int seen = 0;

    fill_keys(s, pos);
    store_cursor_init(&cur);
    ck_assert_int_eq(store_scan(s, 0, 0, &cur, 0, 0, stop_after_three, &seen), 42);
    ck_assert_int_eq(seen, 3);
    ck_assert(!cur.done);
    store_close(s);
}
END_TEST

static void run_range_op(struct store *s, enum store_op_type type, uint64_t start, uint64_t end,
                         size_t limit, uint64_t grace, store_collect_fn fn, size_t *deleted)
{
    struct store_cursor cur;
    struct store_op op;

    store_cursor_init(&cur);
    *deleted = 0;
    while (!cur.done) {
        store_op_init(&op, type);
        op.start = start;
        op.end = end;
        op.cursor = &cur;
        op.limit = limit;
        op.grace_ms = grace;
        op.collect = fn;
        ck_assert_int_eq(store_submit(s, &op), 0);
        ck_assert_int_eq(store_wait(s, &op), 0);
        *deleted += op.count;
    }
}

START_TEST(test_range_delete)
{
    struct store *s = open_store("d", "n1");
    uint64_t pos[ARC_KEYS], start = UINT64_MAX / 3 * 2, end = UINT64_MAX / 5;
    size_t deleted, want = 0;
    char key[32];

    fill_keys(s, pos);
    for (int i = 0; i < ARC_KEYS; i++) {
        want += on_arc(start, end, pos[i]);
    }
    run_range_op(s, STORE_OP_DELETE_RANGE, start, end, 17, 0, NULL, &deleted);
    ck_assert_uint_eq(deleted, want);
    for (int i = 0; i < ARC_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        char *v = get_value(s, key);
        ck_assert_msg((v == NULL) == on_arc(start, end, pos[i]), "key %d", i);
        free(v);
    }
    store_close(s);
}
END_TEST

static bool refuse_key_7(void *ctx, uint64_t pos, const uint8_t *key, size_t len,
                         const struct record *r)
{
    (void)ctx;
    (void)pos;
    (void)r;
    return !(len == 5 && memcmp(key, "key-7", 5) == 0);
}

START_TEST(test_tombstone_collection)
{
    struct store *s = open_store("d", "n1");
    size_t deleted;
    char key[32];

    for (int i = 0; i < 10; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        put(s, key, "v");
        if (i < 8) {
            ck_assert_int_eq(store_write(s, key, strlen(key), NULL, 0, true, NULL, NULL), 0);
        }
    }
    /* key-8: a live value and a concurrent tombstone: never collected. */
    struct sibling t;
    sibling_init(&t);
    version_from("n9", "key-8", NULL, true, &t);
    ck_assert_int_eq(store_apply(s, "key-8", 5, &t, NULL), 0);
    sibling_deinit(&t);
    fake_now_ms += 500;
    run_range_op(s, STORE_OP_COLLECT, 0, 0, 3, 1000, NULL, &deleted);
    ck_assert_uint_eq(deleted, 0); /* within the grace period */
    fake_now_ms += 1000;
    run_range_op(s, STORE_OP_COLLECT, 0, 0, 3, 1000, refuse_key_7, &deleted);
    ck_assert_uint_eq(deleted, 7); /* key-0..6; key-7 refused by the predicate */
    struct record r;
    record_init(&r);
    ck_assert_int_eq(store_get(s, "key-7", 5, &r), 0);
    ck_assert_int_eq(store_get(s, "key-8", 5, &r), 0);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_int_eq(store_get(s, "key-9", 5, &r), 0);
    ck_assert_int_eq(store_get(s, "key-3", 5, &r), RK_ENOTFOUND);
    record_deinit(&r);
    store_close(s);
}
END_TEST

/* store_read()'s callback: a copy of the stored bytes. */
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

static bool delete_if(struct store *s, const char *key, const uint8_t *rec, size_t len)
{
    struct store_op op;
    store_op_init(&op, STORE_OP_DELETE_IF);
    op.key = (const uint8_t *)key;
    op.key_len = strlen(key);
    op.value = rec;
    op.value_len = len;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    return op.changed;
}

START_TEST(test_delete_if)
{
    struct store *s = open_store("d", "n1");
    struct {
        uint8_t b[256];
        size_t n;
    } seen;
    struct record r;

    put(s, "k", "v");
    ck_assert_int_eq(store_write(s, "k", 1, NULL, 0, true, NULL, NULL), 0);
    ck_assert_int_eq(store_read(s, "k", 1, copy_record, &seen), 0);
    /* A version that arrived after the read: the key stays, with it. */
    put(s, "k", "w");
    ck_assert(!delete_if(s, "k", seen.b, seen.n));
    char *v = get_value(s, "k");
    ck_assert_str_eq(v, "w");
    free(v);
    /* The record read is the record stored: it goes. */
    ck_assert_int_eq(store_write(s, "k", 1, NULL, 0, true, NULL, NULL), 0);
    ck_assert_int_eq(store_read(s, "k", 1, copy_record, &seen), 0);
    ck_assert(delete_if(s, "k", seen.b, seen.n));
    record_init(&r);
    ck_assert_int_eq(store_get(s, "k", 1, &r), RK_ENOTFOUND);
    record_deinit(&r);
    /* Absent: nothing to do. */
    ck_assert(!delete_if(s, "k", seen.b, seen.n));
    /* COLLECT counts the tombstones it left. */
    ck_assert_int_eq(store_write(s, "t1", 2, NULL, 0, true, NULL, NULL), 0);
    ck_assert_int_eq(store_write(s, "t2", 2, NULL, 0, true, NULL, NULL), 0);
    put(s, "live", "x");
    struct store_cursor cur;
    struct store_op op;
    store_cursor_init(&cur);
    store_op_init(&op, STORE_OP_COLLECT);
    op.cursor = &cur;
    op.limit = 100;
    op.grace_ms = 1000;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    ck_assert_uint_eq(op.count, 0);
    ck_assert_uint_eq(op.kept, 2);
    store_close(s);
}
END_TEST

/* A WRITE of key with an expiry rule; returns its result, *existed what it reported. */
static int write_expiry(struct store *s, const char *key, const char *value,
                        enum store_expiry expiry, uint64_t expire_ms, bool *existed)
{
    struct store_op op;
    int rc;

    store_op_init(&op, STORE_OP_WRITE);
    op.key = (const uint8_t *)key;
    op.key_len = strlen(key);
    op.value = (const uint8_t *)value;
    op.value_len = value != NULL ? strlen(value) : 0;
    op.expiry = expiry;
    op.expire_ms = expire_ms;
    op.skip_written = true;
    ck_assert_int_eq(store_submit(s, &op), 0);
    rc = store_wait(s, &op);
    *existed = op.existed;
    return rc;
}

/* key's single sibling's expiry; the key must hold one sibling. */
static uint64_t expiry_of(struct store *s, const char *key, bool *tombstone)
{
    struct record r;
    uint64_t e;

    record_init(&r);
    ck_assert_int_eq(store_get(s, key, strlen(key), &r), 0);
    ck_assert_uint_eq(r.n, 1);
    e = r.s[0].expire_ms;
    *tombstone = r.s[0].tombstone;
    record_deinit(&r);
    return e;
}

/*
 * The store's expiry rules by its wall clock: SET with an expiry, KEEPTTL
 * keeping the live value's, TOUCH (EXPIRE, PERSIST) rewriting the live
 * value or doing nothing, an expired value counting as absent, a past
 * expiry deleting, and collection of expired values after the grace.
 */
START_TEST(test_expiry_rules)
{
    struct store *s = open_store("d", "n1");
    uint64_t t0 = fake_now_ms;
    bool existed, tomb;
    size_t deleted;
    char *v;

    ck_assert_int_eq(write_expiry(s, "k", "v1", STORE_EXPIRY_SET, t0 + 1000, &existed), 0);
    ck_assert(!existed);
    ck_assert_uint_eq(expiry_of(s, "k", &tomb), t0 + 1000);
    /* KEEPTTL: a new value, the same expiry */
    ck_assert_int_eq(write_expiry(s, "k", "v2", STORE_EXPIRY_KEEP, 0, &existed), 0);
    ck_assert(existed);
    ck_assert_uint_eq(expiry_of(s, "k", &tomb), t0 + 1000);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "v2");
    free(v);
    /* PERSIST, then PERSIST again (nothing to do), then EXPIRE */
    ck_assert_int_eq(write_expiry(s, "k", NULL, STORE_EXPIRY_TOUCH, 0, &existed), 0);
    ck_assert(existed);
    ck_assert_uint_eq(expiry_of(s, "k", &tomb), 0);
    ck_assert_int_eq(write_expiry(s, "k", NULL, STORE_EXPIRY_TOUCH, 0, &existed), 0);
    ck_assert(!existed);
    ck_assert_int_eq(write_expiry(s, "k", NULL, STORE_EXPIRY_TOUCH, t0 + 2000, &existed), 0);
    ck_assert(existed);
    ck_assert_uint_eq(expiry_of(s, "k", &tomb), t0 + 2000);
    v = get_value(s, "k");
    ck_assert_str_eq(v, "v2");
    free(v);
    /* expired: a later write finds no live value; EXPIRE of it does nothing */
    fake_now_ms = t0 + 2000;
    ck_assert_int_eq(write_expiry(s, "k", NULL, STORE_EXPIRY_TOUCH, t0 + 9000, &existed), 0);
    ck_assert(!existed);
    ck_assert_uint_eq(expiry_of(s, "k", &tomb), t0 + 2000);
    /* an EXPIRE to a time already past deletes a live value */
    put(s, "j", "x");
    ck_assert_int_eq(write_expiry(s, "j", NULL, STORE_EXPIRY_TOUCH, 1, &existed), 0);
    ck_assert(existed);
    expiry_of(s, "j", &tomb);
    ck_assert(tomb);
    /* collection: "k" expired at t0 + 2000 goes grace later, not before */
    put(s, "live", "y");
    fake_now_ms = t0 + 2000 + 999;
    run_range_op(s, STORE_OP_COLLECT, 0, 0, 10, 1000, NULL, &deleted);
    ck_assert_uint_eq(deleted, 0);
    fake_now_ms = t0 + 2000 + 1001;
    run_range_op(s, STORE_OP_COLLECT, 0, 0, 10, 1000, NULL, &deleted);
    ck_assert_uint_eq(deleted, 2); /* "k" (expired) and "j" (deleted) */
    ck_assert_ptr_null(get_value(s, "k"));
    v = get_value(s, "live");
    ck_assert_str_eq(v, "y");
    free(v);
    fake_now_ms = t0;
    store_close(s);
}
END_TEST

/* --- hints and tables ---------------------------------------------------------- */

struct hint_seen {
    uint64_t seq[8];
    char key[8][16];
    size_t n;
};

static int hint_collect(void *ctx, const struct store_hint *h)
{
    struct hint_seen *hs = ctx;
    ck_assert_uint_lt(hs->n, 8);
    hs->seq[hs->n] = h->seq;
    snprintf(hs->key[hs->n], 16, "%.*s", (int)h->key_len, (const char *)h->key);
    ck_assert_uint_eq(h->version.value_len, 3);
    hs->n++;
    return 0;
}

static void hint_put(struct store *s, const char *target, const char *key, const struct sibling *v)
{
    struct store_op op;
    store_op_init(&op, STORE_OP_HINT_PUT);
    op.target = target;
    op.key = (const uint8_t *)key;
    op.key_len = strlen(key);
    op.version = v;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
}

static void hint_scan_all(struct store *s, const char *target, struct hint_seen *hs)
{
    struct store_cursor cur;
    store_cursor_init(&cur);
    hs->n = 0;
    while (!cur.done) {
        ck_assert_int_eq(store_hint_scan(s, target, &cur, 2, hint_collect, hs), 0);
    }
}

START_TEST(test_hints)
{
    struct store *s = open_store("d", "n1");
    struct sibling v;
    struct hint_seen hs;
    struct store_op op;

    sibling_init(&v);
    ck_assert_int_eq(store_write(s, "x", 1, "val", 3, false, NULL, &v), 0);
    hint_put(s, "node-a", "k1", &v);
    hint_put(s, "node-b", "k2", &v);
    hint_put(s, "node-a", "k3", &v);
    hint_put(s, "node-a", "k4", &v);
    hint_scan_all(s, "node-a", &hs);
    ck_assert_uint_eq(hs.n, 3);
    ck_assert_str_eq(hs.key[0], "k1");
    ck_assert_str_eq(hs.key[2], "k4");
    ck_assert_uint_lt(hs.seq[0], hs.seq[1]);
    store_op_init(&op, STORE_OP_HINT_DELETE);
    op.target = "node-a";
    op.seq = hs.seq[1];
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    store_close(s);
    /* Sequence numbers survive a restart. */
    s = open_store("d", "n1");
    hint_put(s, "node-a", "k5", &v);
    hint_scan_all(s, "node-a", &hs);
    ck_assert_uint_eq(hs.n, 3);
    ck_assert_str_eq(hs.key[1], "k4");
    ck_assert_str_eq(hs.key[2], "k5");
    ck_assert_uint_gt(hs.seq[2], hs.seq[1]);
    hint_scan_all(s, "node-b", &hs);
    ck_assert_uint_eq(hs.n, 1);
    sibling_deinit(&v);
    store_close(s);
}
END_TEST

static int table_put(struct store *s, enum store_table t, const char *k, const char *v)
{
    struct store_op op;
    store_op_init(&op, STORE_OP_TABLE_PUT);
    op.table = t;
    op.key = (const uint8_t *)k;
    op.key_len = strlen(k);
    op.value = (const uint8_t *)v;
    op.value_len = v ? strlen(v) : 0;
    ck_assert_int_eq(store_submit(s, &op), 0);
    return store_wait(s, &op);
}

START_TEST(test_tables)
{
    struct store *s = open_store("d", "n1");
    char buf[64];
    size_t len;

    ck_assert_int_eq(table_put(s, STORE_TABLE_META, "generation", "7"), 0);
    ck_assert_int_eq(table_put(s, STORE_TABLE_META, "node_id", "evil"), RK_EINVAL);
    ck_assert_int_eq(table_put(s, STORE_TABLE_HANDOFF, "arc-1", "cursor"), 0);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_META, "generation", 10, buf, 64, &len), 0);
    ck_assert_uint_eq(len, 1);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_META, "node_id", 7, buf, 64, &len), 0);
    ck_assert_mem_eq(buf, "n1", 2);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_HANDOFF, "arc-1", 5, buf, 2, &len), RK_ETOOBIG);
    ck_assert_int_eq(table_put(s, STORE_TABLE_HANDOFF, "arc-1", NULL), 0);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_HANDOFF, "arc-1", 5, buf, 64, &len),
                     RK_ENOTFOUND);
    store_close(s);
}
END_TEST

START_TEST(test_bad_operations)
{
    struct store *s = open_store("d", "n1");
    char big[STORE_KEY_MAX + 1];
    struct store_op op;
    struct record r;

    memset(big, 'k', sizeof(big));
    record_init(&r);
    ck_assert_int_eq(store_write(s, big, sizeof(big), "v", 1, false, NULL, NULL), RK_ETOOBIG);
    ck_assert_int_eq(store_get(s, big, sizeof(big), &r), RK_ETOOBIG);
    ck_assert_int_eq(store_write(s, big, STORE_KEY_MAX, "v", 1, false, NULL, NULL), 0);
    ck_assert_int_eq(store_write(s, "", 0, "empty key", 9, false, NULL, NULL), 0);
    ck_assert_int_eq(store_get(s, "", 0, &r), 0);
    store_op_init(&op, STORE_OP_APPLY); /* no version */
    op.key = (const uint8_t *)"k";
    op.key_len = 1;
    ck_assert_int_eq(store_submit(s, &op), RK_EINVAL);
    store_op_init(&op, STORE_OP_HINT_DELETE);
    op.target = "bad target";
    ck_assert_int_eq(store_submit(s, &op), RK_EINVAL);
    store_op_init(&op, STORE_OP_DELETE_RANGE); /* no cursor */
    ck_assert_int_eq(store_submit(s, &op), RK_EINVAL);
    record_deinit(&r);
    store_close(s);
}
END_TEST

/* --- completion and group commit --------------------------------------------- */

static void count_done(struct store_op *op, void *ctx)
{
    ck_assert_int_eq(op->result, 0);
    sibling_deinit(&op->written);
    ++*(int *)ctx;
}

START_TEST(test_callback_completion)
{
    struct store *s = open_store("d", "n1");
    struct store_op ops[20];
    char keys[20][8];
    int done = 0;

    for (int i = 0; i < 20; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        store_op_init(&ops[i], STORE_OP_WRITE);
        ops[i].key = (const uint8_t *)keys[i];
        ops[i].key_len = strlen(keys[i]);
        ops[i].value = (const uint8_t *)"v";
        ops[i].value_len = 1;
        ops[i].done = count_done;
        ops[i].ctx = &done;
        ck_assert_int_eq(store_submit(s, &ops[i]), 0);
    }
    while (done < 20) {
        struct pollfd p = {store_event_fd(s), POLLIN, 0};
        ck_assert_int_ge(poll(&p, 1, 10000), 1);
        store_dispatch(s);
    }
    store_close(s);
    s = open_store("d", "n1");
    char *v = get_value(s, "k19");
    ck_assert_str_eq(v, "v");
    free(v);
    store_close(s);
}
END_TEST

/* Holds the writer inside a collection predicate until released. */
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

START_TEST(test_group_commit_one_transaction)
{
    struct store *s = open_store("d", "n1");
    struct store_cursor cur;
    struct store_op hold, ops[50];
    struct store_stats st;
    char keys[50][8];
    uint64_t commits;
    int done = 0;

    sem_init(&gate_entered, 0, 0);
    sem_init(&gate_release, 0, 0);
    ck_assert_int_eq(store_write(s, "t", 1, NULL, 0, true, NULL, NULL), 0);
    fake_now_ms += 10;
    store_get_stats(s, &st);
    commits = st.commits;
    store_cursor_init(&cur);
    /* a callback operation, so that the writer thread runs it while this thread waits */
    store_op_init(&hold, STORE_OP_COLLECT);
    hold.start = hold.end = 0;
    hold.cursor = &cur;
    hold.limit = 10;
    hold.collect = gate;
    hold.done = count_done;
    hold.ctx = &done;
    ck_assert_int_eq(store_submit(s, &hold), 0);
    sem_wait(&gate_entered); /* the writer is inside its transaction now */
    for (int i = 0; i < 50; i++) {
        snprintf(keys[i], sizeof(keys[i]), "g%d", i);
        store_op_init(&ops[i], STORE_OP_WRITE);
        ops[i].key = (const uint8_t *)keys[i];
        ops[i].key_len = strlen(keys[i]);
        ops[i].value = (const uint8_t *)"v";
        ops[i].value_len = 1;
        ops[i].done = count_done;
        ops[i].ctx = &done;
        ck_assert_int_eq(store_submit(s, &ops[i]), 0);
    }
    sem_post(&gate_release);
    while (done < 51) {
        struct pollfd p = {store_event_fd(s), POLLIN, 0};
        ck_assert_int_ge(poll(&p, 1, 10000), 1);
        store_dispatch(s);
    }
    store_get_stats(s, &st);
    /* one commit for the held batch, one for all fifty writes queued behind it */
    ck_assert_uint_eq(st.commits - commits, 2);
    store_close(s);
}
END_TEST

/* Counts completions whatever their result; the results are the test's to check. */
static void note_done(struct store_op *op, void *ctx)
{
    ++*(int *)ctx;
    (void)op;
}

static void wait_done(struct store *s, const int *done, int want)
{
    while (*done < want) {
        struct pollfd p = {store_event_fd(s), POLLIN, 0};
        ck_assert_int_ge(poll(&p, 1, 10000), 1);
        store_dispatch(s);
    }
}

/*
 * Hold s's writer inside a collection (of a tombstone written first, for it
 * to look at) until gate_release is posted: what is submitted meanwhile
 * queues, then runs as one batch.  The collection's end counts in *done.
 */
static void hold_writer(struct store *s, struct store_op *hold, struct store_cursor *cur, int *done)
{
    ck_assert_int_eq(store_write(s, "t", 1, NULL, 0, true, NULL, NULL), 0);
    fake_now_ms += 10;
    sem_init(&gate_entered, 0, 0);
    sem_init(&gate_release, 0, 0);
    store_cursor_init(cur);
    store_op_init(hold, STORE_OP_COLLECT);
    hold->start = hold->end = 0;
    hold->cursor = cur;
    hold->limit = 10;
    hold->collect = gate;
    hold->done = note_done;
    hold->ctx = done;
    ck_assert_int_eq(store_submit(s, hold), 0);
    sem_wait(&gate_entered);
}

static void write_op(struct store_op *op, const char *key, const char *value, int *done)
{
    write_plain(op, key, value);
    op->done = note_done;
    op->ctx = done;
}

START_TEST(test_submit_list)
{
    struct store *s = open_store("d", "n1");
    char keys[40][8], big[STORE_KEY_MAX + 1];
    struct store_op ops[40], *list[40];
    struct store_stats st;
    uint64_t commits;
    int done = 0;

    memset(big, 'k', sizeof(big));
    for (int i = 0; i < 40; i++) {
        snprintf(keys[i], sizeof(keys[i]), "l%d", i);
        write_op(&ops[i], keys[i], "v", &done);
        list[i] = &ops[i];
    }
    /* one bad operation: refused up front, and none of the list is queued */
    ops[20].key = (const uint8_t *)big;
    ops[20].key_len = sizeof(big);
    ck_assert_int_eq(store_submit_list(s, list, 40), RK_ETOOBIG);
    ops[20].key = (const uint8_t *)keys[20];
    ops[20].key_len = strlen(keys[20]);
    ck_assert_ptr_null(get_value(s, "l0"));
    store_get_stats(s, &st);
    commits = st.commits;
    /* queued under one lock with one wake-up: the writer takes all forty at once */
    ck_assert_int_eq(store_submit_list(s, list, 40), 0);
    wait_done(s, &done, 40);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.commits - commits, 1);
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(ops[i].result, 0);
        sibling_deinit(&ops[i].written);
    }
    char *v = get_value(s, "l39");
    ck_assert_str_eq(v, "v");
    free(v);
    store_close(s);
}
END_TEST

START_TEST(test_atomic_refused_up_front)
{
    struct store *s = open_store("d", "n1");
    char big[STORE_KEY_MAX + 1];
    struct store_op ops[3], *list[3] = {&ops[0], &ops[1], &ops[2]};
    int done = 0;

    memset(big, 'k', sizeof(big));
    write_op(&ops[0], "a", "1", &done);
    write_op(&ops[1], "b", "2", &done);
    write_op(&ops[2], "c", "3", &done);
    ops[1].key = (const uint8_t *)big;
    ops[1].key_len = sizeof(big);
    ck_assert_int_eq(store_submit_atomic(s, list, 3), RK_ETOOBIG);
    store_close(s); /* drains anything queued: nothing may have been */
    s = open_store("d", "n1");
    ck_assert_int_eq(done, 0);
    ck_assert_ptr_null(get_value(s, "a"));
    ck_assert_ptr_null(get_value(s, "c"));
    store_close(s);
}
END_TEST

/*
 * A member that fails inside the transaction (here a write whose context,
 * empty, is older than the version stored: RK_EMISMATCH) leaves none
 * of its group applied, and every member reports its error, while a group
 * queued behind a batch boundary is never split by it: batch_max 4 with
 * two lone writes ahead of a group of three.
 */
START_TEST(test_atomic_all_or_nothing)
{
    struct store_config cfg;
    struct store_cursor cur;
    struct store_op hold, lone[2], ops[3], *group[3] = {&ops[0], &ops[1], &ops[2]};
    struct vclock empty;
    struct store *s;
    char err[256];
    int done = 0;

    settings_for(&cfg, "d", "n1");
    cfg.batch_max = 4;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    put(s, "full", "only");
    vclock_init(&empty);
    hold_writer(s, &hold, &cur, &done);
    write_op(&lone[0], "x", "1", &done);
    write_op(&lone[1], "y", "1", &done);
    ck_assert_int_eq(store_submit(s, &lone[0]), 0);
    ck_assert_int_eq(store_submit(s, &lone[1]), 0);
    write_op(&ops[0], "g1", "1", &done);
    write_op(&ops[1], "g2", "1", &done);
    write_op(&ops[2], "full", "second", &done);
    ops[2].context = &empty; /* stale: "only" was written since */
    ck_assert_int_eq(store_submit_atomic(s, group, 3), 0);
    sem_post(&gate_release);
    wait_done(s, &done, 6);
    ck_assert_int_eq(lone[0].result, 0);
    ck_assert_int_eq(lone[1].result, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(ops[i].result, RK_EMISMATCH);
        sibling_deinit(&ops[i].written);
    }
    sibling_deinit(&lone[0].written);
    sibling_deinit(&lone[1].written);
    ck_assert_ptr_null(get_value(s, "g1"));
    ck_assert_ptr_null(get_value(s, "g2"));
    char *v = get_value(s, "full");
    ck_assert_str_eq(v, "only");
    free(v);
    /* the same group without the failing member applies whole */
    ck_assert_int_eq(store_submit_atomic(s, group, 2), 0);
    wait_done(s, &done, 8);
    ck_assert_int_eq(ops[0].result, 0);
    ck_assert_int_eq(ops[1].result, 0);
    sibling_deinit(&ops[0].written);
    sibling_deinit(&ops[1].written);
    v = get_value(s, "g2");
    ck_assert_str_eq(v, "1");
    free(v);
    /* larger than a batch, or a range operation: refused */
    ck_assert_int_eq(
        store_submit_atomic(s, (struct store_op *[]){&ops[0], &ops[1], &ops[2], &lone[0], &lone[1]},
                            5),
        RK_ETOOBIG);
    ck_assert_int_eq(store_submit_atomic(s, (struct store_op *[]){&ops[0], &hold}, 2), RK_EINVAL);
    vclock_deinit(&empty);
    store_close(s);
}
END_TEST

/*
 * One logged batch that writes the same keys again and again, with an
 * atomic group failing in the middle (its staged entries taken back): each
 * write finds the batch's own latest write of its key (it existed), every
 * key ends with one version, the last, and the failed group's keys hold
 * neither its values nor anything it staged.
 */
START_TEST(test_batch_rewrites_own_keys)
{
    enum { KEYS = 150, ROUNDS = 3 };
    struct store *s = open_store("d", "n1");
    struct store_cursor cur;
    struct store_op hold, ops[ROUNDS * KEYS + KEYS], failed[3], *group[3];
    char keys[KEYS][8], values[ROUNDS * KEYS + KEYS][12];
    struct vclock empty;
    size_t n = 0;
    int done = 0;

    put(s, "k7", "before");
    vclock_init(&empty);
    hold_writer(s, &hold, &cur, &done);
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < KEYS; k++, n++) {
            snprintf(keys[k], sizeof(keys[k]), "k%d", k);
            snprintf(values[n], sizeof(values[n]), "r%d-%d", round, k);
            write_op(&ops[n], keys[k], values[n], &done);
            ck_assert_int_eq(store_submit(s, &ops[n]), 0);
        }
        if (round == 1) { /* k3 and k5 written, then k7 with a stale context: all three fail */
            write_op(&failed[0], "k3", "lost", &done);
            write_op(&failed[1], "k5", "lost", &done);
            write_op(&failed[2], "k7", "lost", &done);
            failed[2].context = &empty;
            for (int i = 0; i < 3; i++) {
                group[i] = &failed[i];
            }
            ck_assert_int_eq(store_submit_atomic(s, group, 3), 0);
        }
    }
    for (int k = 0; k < KEYS; k++, n++) { /* and once more, after the failed group */
        snprintf(values[n], sizeof(values[n]), "last-%d", k);
        write_op(&ops[n], keys[k], values[n], &done);
        ck_assert_int_eq(store_submit(s, &ops[n]), 0);
    }
    sem_post(&gate_release);
    wait_done(s, &done, (int)n + 4);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(failed[i].result, RK_EMISMATCH);
        sibling_deinit(&failed[i].written);
    }
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(ops[i].result, 0);
        /* the key existed for every write but the first of a new key: the batch saw its own */
        ck_assert(ops[i].existed == (i >= KEYS || i == 7));
        sibling_deinit(&ops[i].written);
    }
    for (int k = 0; k < KEYS; k++) {
        struct record r;
        char want[12];
        record_init(&r);
        ck_assert_int_eq(store_get(s, keys[k], strlen(keys[k]), &r), 0);
        ck_assert_uint_eq(r.n, 1);
        snprintf(want, sizeof(want), "last-%d", k);
        ck_assert_uint_eq(r.s[0].value_len, strlen(want));
        ck_assert_int_eq(memcmp(r.s[0].value, want, strlen(want)), 0);
        /* every write of the batch built on the one before it (k7: on "before" too) */
        record_deinit(&r);
    }
    vclock_deinit(&empty);
    store_close(s);
}
END_TEST

/*
 * Logged batches of random writes over few keys, with atomic groups of
 * which some fail (a member with a stale, empty context on a key that
 * exists), queued while the writer is held so that batches fill to
 * batch_max: each key ends with the last write applied in submission order,
 * and a write says it existed exactly when an applied write came before it.
 */
START_TEST(test_batch_random_groups_against_model)
{
    enum { OPS = 700, KEYS = 9 };
    static const size_t batch_maxes[] = {3, 5, 16, 64, 1024};
    for (unsigned round = 0; round < 10; round++) {
        struct store_config cfg;
        struct store *s;
        struct store_cursor cur;
        struct store_op hold;
        static struct store_op ops[OPS];
        static struct store_op *group[8];
        static char values[OPS][64];
        static char keys[KEYS][8];
        static int model_last[KEYS]; /* index of the last applied write, -1 none */
        static bool expect_fail[OPS];
        static bool expect_existed[OPS];
        struct vclock empty;
        char err[256], sub[16];
        int done = 0, n = 0;
        uint64_t rs = 0x9E3779B97F4A7C15ull * (round + 1 + (uint64_t)_i * 1000);

        snprintf(sub, sizeof(sub), "r%u", round);
        settings_for(&cfg, sub, "n1");
        cfg.batch_max = batch_maxes[round % 5];
        ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
        for (int k = 0; k < KEYS; k++) {
            snprintf(keys[k], sizeof(keys[k]), "k%d", k);
            model_last[k] = -1;
        }
        put(s, "k0", "base"); /* k0 always exists: a stale write to it fails */
        model_last[0] = -2;
        vclock_init(&empty);
        hold_writer(s, &hold, &cur, &done);
        while (n < OPS - 8) {
            rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
            size_t g = rs % 3 == 0 ? 2 + (rs >> 8) % 4 : 1;
            bool fail = g > 1 && (rs >> 16) % 3 == 0;
            if (g > cfg.batch_max) {
                g = 1, fail = false;
            }
            size_t stale_at = (rs >> 24) % g;
            int first = n;
            for (size_t j = 0; j < g; j++, n++) {
                rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
                int k = fail && j == stale_at ? 0 : (int)(rs % KEYS);
                size_t len = (rs >> 20) % 4 == 0 ? 0 : (rs >> 24) % 60;
                int pre = snprintf(values[n], sizeof(values[n]), "%d.", n);
                len = len < (size_t)pre ? (size_t)pre : len;
                memset(values[n] + pre, 'a' + n % 26, len - (size_t)pre);
                values[n][len] = '\0';
                write_op(&ops[n], keys[k], k != 0 && (rs >> 40) % 7 == 0 ? NULL : values[n], &done);
                if (fail && j == stale_at) {
                    ops[n].context = &empty;
                }
                group[j] = &ops[n];
            }
            for (int i = first; i < n; i++) {
                expect_fail[i] = fail;
            }
            if (!fail) {
                for (int i = first; i < n; i++) {
                    int k = (int)(ops[i].key[1] - '0');
                    expect_existed[i] = model_last[k] != -1 &&
                                        (model_last[k] == -2 || !ops[model_last[k]].tombstone);
                    model_last[k] = i;
                }
            }
            if (g == 1) {
                ck_assert_int_eq(store_submit(s, &ops[first]), 0);
            } else {
                ck_assert_int_eq(store_submit_atomic(s, group, g), 0);
            }
        }
        sem_post(&gate_release);
        wait_done(s, &done, n + 1);
        for (int i = 0; i < n; i++) {
            if (expect_fail[i]) {
                ck_assert_int_eq(ops[i].result, RK_EMISMATCH);
            } else {
                ck_assert_msg(ops[i].result == 0, "round %u op %d: %d", round, i, ops[i].result);
                ck_assert_msg(ops[i].existed == expect_existed[i],
                              "round %u op %d key %.*s existed %d", round, i, (int)ops[i].key_len,
                              ops[i].key, ops[i].existed);
            }
            sibling_deinit(&ops[i].written);
        }
        for (int k = 0; k < KEYS; k++) {
            struct record r;
            int last = model_last[k];
            record_init(&r);
            int rc = store_get(s, keys[k], strlen(keys[k]), &r);
            if (last == -1) {
                ck_assert_int_eq(rc, RK_ENOTFOUND);
            } else if (last == -2) {
                ck_assert_int_eq(rc, 0);
                ck_assert_int_eq(memcmp(r.s[0].value, "base", 4), 0);
            } else if (ops[last].tombstone && rc == RK_ENOTFOUND) {
                /* a tombstone may read as absent */
            } else {
                ck_assert_int_eq(rc, 0);
                ck_assert_uint_eq(r.n, 1);
                ck_assert_int_eq(r.s[0].tombstone, ops[last].tombstone);
                ck_assert_uint_eq(r.s[0].value_len, ops[last].value_len);
                ck_assert(ops[last].value_len == 0 ||
                          memcmp(r.s[0].value, ops[last].value, ops[last].value_len) == 0);
            }
            record_deinit(&r);
        }
        vclock_deinit(&empty);
        store_close(s);
    }
}
END_TEST

/* At map_max, a group that does not fit fails whole with RK_ENOSPC. */
START_TEST(test_atomic_enospc)
{
    struct store_config cfg;
    struct store_op ops[64], *group[64];
    static char keys[64][16], value[32768];
    struct store *s;
    char err[256];
    int done = 0, applied = 0;

    settings_for(&cfg, "d", "n1");
    cfg.map_initial = cfg.map_max = 1 * 1024 * 1024;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    memset(value, 'v', sizeof(value) - 1);
    for (int i = 0; i < 64; i++) {
        snprintf(keys[i], sizeof(keys[i]), "big%d", i);
        write_op(&ops[i], keys[i], value, &done);
        group[i] = &ops[i];
    }
    /* 64 x 32 KiB of values cannot fit a 1 MiB map */
    ck_assert_int_eq(store_submit_atomic(s, group, 64), 0);
    wait_done(s, &done, 64);
    for (int i = 0; i < 64; i++) {
        ck_assert_int_eq(ops[i].result, RK_ENOSPC);
        sibling_deinit(&ops[i].written);
        char *v = get_value(s, keys[i]);
        applied += v != NULL;
        free(v);
    }
    ck_assert_int_eq(applied, 0);
    store_close(s);
}
END_TEST

START_TEST(test_close_refuses_and_drains)
{
    struct store *s = open_store("d", "n1");
    put(s, "k", "v");
    store_close(s);
    s = open_store("d", "n1");
    char *v = get_value(s, "k");
    ck_assert_str_eq(v, "v");
    free(v);
    store_close(s);
}
END_TEST

/* --- full maps and file systems ------------------------------------------------ */

/* Write distinct 1 KiB values until the store refuses; returns how many were written. */
static int fill_until_full(struct store *s, int max)
{
    char key[32], value[1024];
    int i;
    memset(value, 'x', sizeof(value));
    for (i = 0; i < max; i++) {
        snprintf(key, sizeof(key), "fill-%d", i);
        int rc = store_write(s, key, strlen(key), value, sizeof(value), false, NULL, NULL);
        if (rc == RK_ENOSPC) {
            return i;
        }
        ck_assert_int_eq(rc, 0);
    }
    return i;
}

START_TEST(test_map_full)
{
    struct store_config cfg;
    struct store_stats st;
    struct store *s;
    size_t deleted;
    char err[256];

    settings_for(&cfg, "d", "n1");
    cfg.map_initial = 1024 * 1024;
    cfg.map_max = 4 * 1024 * 1024;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    int n = fill_until_full(s, 100000);
    ck_assert_int_gt(n, 1000);   /* the map grew past its first 1 MiB */
    ck_assert_int_lt(n, 100000); /* and stopped at its maximum */
    store_get_stats(s, &st);
    ck_assert_uint_ge(st.map_grows, 2);
    ck_assert_uint_ge(st.enospc, 1);
    /* Reads still work. */
    char *v = get_value(s, "fill-0");
    ck_assert_uint_eq(strlen(v), 1024);
    free(v);
    /* Deleting makes room, and writes work again without a restart. */
    run_range_op(s, STORE_OP_DELETE_RANGE, 0, 0, 1000, 0, NULL, &deleted);
    ck_assert_uint_eq(deleted, (size_t)n);
    ck_assert_int_gt(fill_until_full(s, 100), 99);
    store_close(s);
}
END_TEST

/*
 * A log holding several times the first map: the transaction that moves
 * it into LMDB grows the map first, so it runs once, never into a full
 * map and again (each run puts every logged key).
 */
START_TEST(test_checkpoint_grows_first)
{
    struct store_config cfg;
    struct store_stats st;
    struct store *s;
    char key[32], value[300], err[256];
    size_t deleted;

    settings_for(&cfg, "d", "n1");
    cfg.map_initial = 1024 * 1024;
    cfg.map_max = 512 * 1024 * 1024;
    cfg.test_idle_checkpoint_ms = UINT64_MAX;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    memset(value, 'v', sizeof(value));
    for (int i = 0; i < 20000; i++) {
        snprintf(key, sizeof(key), "grow-%d", i);
        ck_assert_int_eq(store_write(s, key, strlen(key), value, sizeof(value), false, NULL, NULL),
                         0);
    }
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.checkpoints, 0);
    ck_assert_uint_eq(st.overlay_keys, 20000);
    ck_assert_uint_eq(st.map_grows, 0);
    /* a range operation runs through LMDB: it absorbs the log first */
    run_range_op(s, STORE_OP_DELETE_RANGE, 1, 2, 100, 0, NULL, &deleted);
    ck_assert_uint_eq(deleted, 0);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.overlay_keys, 0);
    ck_assert_uint_ge(st.map_grows, 3); /* 1 MiB could not hold 6 MB of records */
    ck_assert_uint_eq(st.map_full_runs, 0);
    ck_assert_uint_eq(st.keys, 20000);
    char *v = get_value(s, "grow-19999");
    ck_assert_uint_eq(strlen(v), sizeof(value));
    free(v);
    store_close(s);
}
END_TEST

/*
 * A store of map_max 16 MiB (allocated whole at open, as the node does)
 * filled the way a client fills it: values of 1 MiB, then 64 KiB, 4 KiB,
 * 256, 16 and 1 byte, each size until the store refuses it.  Returns how
 * many keys ("fillN") were written.
 */
static struct store *open_filled(int *written)
{
    static const size_t sizes[] = {1048576, 65536, 4096, 256, 16, 1};
    struct store_config cfg;
    struct store *s;
    char err[256], key[32];
    uint8_t *value = malloc(sizes[0]);
    int i = 0;

    ck_assert_ptr_nonnull(value);
    memset(value, 'v', sizes[0]);
    settings_for(&cfg, "d", "n1");
    cfg.map_initial = 16 * 1024 * 1024;
    cfg.map_max = cfg.map_initial;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        int rc = 0;
        for (int k = 0; k < 20000 && rc == 0; k++) {
            snprintf(key, sizeof(key), "fill%d", i);
            rc = store_write(s, key, strlen(key), value, sizes[z], false, NULL, NULL);
            i += rc == 0;
        }
        ck_assert_int_eq(rc, RK_ENOSPC);
    }
    free(value);
    *written = i;
    return s;
}

/* Is key's record there and all tombstones? */
static bool is_deleted(struct store *s, const char *key)
{
    struct record r;
    bool deleted;

    record_init(&r);
    if (store_get(s, key, strlen(key), &r) != 0) {
        return false;
    }
    deleted = record_all_tombstones(&r);
    record_deinit(&r);
    return deleted;
}

/*
 * A client empties a full store with DEL, one key at a time: each is a
 * tombstone write, which needs new pages (copy-on-write) while the pages
 * it frees are reusable only two commits later, so it may use the deletion
 * reserve like a range delete.  gossip-table.sh's sequence, at store level.
 */
START_TEST(test_map_full_client_del)
{
    char key[32];
    int n;
    struct store *s = open_filled(&n);

    ck_assert_int_gt(n, 16);
    for (int i = 0; i < n; i++) {
        snprintf(key, sizeof(key), "fill%d", i);
        ck_assert_msg(store_write(s, key, strlen(key), NULL, 0, true, NULL, NULL) == 0,
                      "DEL %s of %d refused on a full store", key, n);
    }
    ck_assert(is_deleted(s, "fill0"));
    put(s, "after", "ok");
    store_close(s);
}
END_TEST

static void del_op(struct store_op *op, const char *key)
{
    store_op_init(op, STORE_OP_WRITE);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->tombstone = true;
}

/*
 * A batch that mixes DELs and SETs on a full store (a pipeline's writes
 * of one loop pass): the SETs fail with RK_ENOSPC, the DELs apply, and an
 * atomic group is applied only when it holds nothing but deletions.
 */
START_TEST(test_map_full_mixed_batch)
{
    static const char *const dels[] = {"fill0", "fill1", "fill2", "fill3", "fill4"};
    static uint8_t big[65536];
    struct store_op lone[4], mixed[2], pure[2];
    struct store_op *list[] = {&lone[0], &lone[1], &lone[2], &lone[3]};
    struct store_op *all[] = {&lone[0],  &lone[1],  &lone[2], &lone[3],
                              &mixed[0], &mixed[1], &pure[0], &pure[1]};
    int n;
    struct store *s = open_filled(&n);

    write_op(&lone[0], "new-big", "", NULL);
    lone[0].value = big;
    lone[0].value_len = sizeof(big);
    del_op(&lone[1], dels[0]);
    write_op(&lone[2], "new-small", "1", NULL);
    del_op(&lone[3], dels[1]);
    del_op(&mixed[0], dels[2]);
    write_op(&mixed[1], "new-group", "1", NULL);
    del_op(&pure[0], dels[3]);
    del_op(&pure[1], dels[4]);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        all[i]->done = NULL; /* waited for: the first wait runs them all in one batch */
    }
    ck_assert_int_eq(store_submit_list(s, list, 4), 0);
    ck_assert_int_eq(store_submit_atomic(s, all + 4, 2), 0);
    ck_assert_int_eq(store_submit_atomic(s, all + 6, 2), 0);
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        store_wait(s, all[i]);
        sibling_deinit(&all[i]->written);
    }
    ck_assert_int_eq(lone[0].result, RK_ENOSPC);
    ck_assert_int_eq(lone[1].result, 0);
    ck_assert_int_eq(lone[2].result, RK_ENOSPC);
    ck_assert_int_eq(lone[3].result, 0);
    ck_assert_int_eq(mixed[0].result, RK_ENOSPC);
    ck_assert_int_eq(mixed[1].result, RK_ENOSPC);
    ck_assert_int_eq(pure[0].result, 0);
    ck_assert_int_eq(pure[1].result, 0);
    ck_assert(is_deleted(s, "fill0") && is_deleted(s, "fill1"));
    ck_assert(is_deleted(s, "fill3") && is_deleted(s, "fill4"));
    ck_assert(!is_deleted(s, "fill2"));
    ck_assert_ptr_null(get_value(s, "new-small"));
    ck_assert_ptr_null(get_value(s, "new-group"));
    store_close(s);
}
END_TEST

/*
 * The file system refuses to grow the file (RLIMIT_FSIZE, EFBIG: what a
 * full disk looks like to LMDB's pwrite), then allows it again.
 */
START_TEST(test_file_system_full)
{
    struct store *s = open_store("d", "n1");
    struct rlimit lim, saved;
    char *v;

    put(s, "before", "ok");
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    lim = saved;
    lim.rlim_cur = 256 * 1024;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    int n = fill_until_full(s, 100000);
    ck_assert_int_lt(n, 100000);
    v = get_value(s, "before");
    ck_assert_str_eq(v, "ok");
    free(v);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    put(s, "after", "ok");
    store_close(s);
    s = open_store("d", "n1");
    v = get_value(s, "after");
    ck_assert_str_eq(v, "ok");
    free(v);
    store_close(s);
}
END_TEST

/*
 * A real full file system: a 2 MiB tmpfs in a private mount namespace of
 * this (forked) test process.  Needs root; registered only then.
 */
START_TEST(test_tmpfs_full)
{
    char mnt[512], cmd[600];
    struct store_config cfg;
    struct store *s;
    char err[256];

    snprintf(mnt, sizeof(mnt), "%s/tmpfs", tmp_dir);
    ck_assert_int_eq(mkdir(mnt, 0700), 0);
    ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
    ck_assert_int_eq(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    ck_assert_int_eq(mount("tmpfs", mnt, "tmpfs", 0, "size=2m"), 0);
    settings_for(&cfg, "tmpfs/d", "n1");
    cfg.map_initial = 1024 * 1024;
    ck_assert_int_eq(store_open(&s, &cfg, err, sizeof(err)), 0);
    /* Fill the file system beside the store, then fill the store. */
    snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of=%s/ballast bs=64k count=8 2>/dev/null", mnt);
    ck_assert_int_eq(system(cmd), 0);
    int n = fill_until_full(s, 100000);
    ck_assert_int_lt(n, 2000);
    char *v = get_value(s, "fill-0");
    ck_assert_ptr_nonnull(v);
    free(v);
    /* Space returns: writes work again. */
    snprintf(cmd, sizeof(cmd), "%s/ballast", mnt);
    ck_assert_int_eq(unlink(cmd), 0);
    put(s, "after", "ok");
    store_close(s);
    ck_assert_int_eq(umount(mnt), 0);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *su = suite_create("store");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"open_write_reopen", test_open_write_reopen},
        {"write_existed", test_write_reports_existed},
        {"read_raw", test_read_raw},
        {"read_hold", test_read_hold},
        {"run_ready", test_run_ready},
        {"queue", test_queue},
        {"queue_always", test_queue_always},
        {"identity_refused", test_identity_refused},
        {"unknown_format", test_unknown_format_refused},
        {"format_1_upgraded", test_format_1_upgraded},
        {"cluster_settings_refused", test_cluster_settings_refused},
        {"second_opener", test_second_opener_refused},
        {"bad_config", test_bad_config},
        {"siblings", test_siblings_through_writes},
        {"apply", test_apply_replicated_versions},
        {"lww", test_lww_mode},
        {"sibling_cap", test_sibling_cap},
        {"clock_full", test_clock_full},
        {"apply_views_agree", test_apply_views_agree},
        {"arc_scans", test_arc_scans},
        {"scan_stop", test_scan_callback_stops},
        {"range_delete", test_range_delete},
        {"tombstones", test_tombstone_collection},
        {"delete_if", test_delete_if},
        {"expiry_rules", test_expiry_rules},
        {"hints", test_hints},
        {"tables", test_tables},
        {"bad_operations", test_bad_operations},
        {"callbacks", test_callback_completion},
        {"group_commit", test_group_commit_one_transaction},
        {"submit_list", test_submit_list},
        {"batch_rewrites_own_keys", test_batch_rewrites_own_keys},
        {"batch_random_groups", test_batch_random_groups_against_model},
        {"atomic_refused", test_atomic_refused_up_front},
        {"atomic_all_or_nothing", test_atomic_all_or_nothing},
        {"atomic_enospc", test_atomic_enospc},
        {"close", test_close_refuses_and_drains},
        {"map_full", test_map_full},
        {"checkpoint_grows_first", test_checkpoint_grows_first},
        {"map_full_client_del", test_map_full_client_del},
        {"map_full_mixed_batch", test_map_full_mixed_batch},
        {"file_system_full", test_file_system_full},
        {"tmpfs_full", test_tmpfs_full},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (cases[i].fn == test_tmpfs_full && geteuid() != 0) {
            fprintf(stderr, "check_store: not root, the tmpfs full-disk case is not run\n");
            continue;
        }
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
    SRunner *sr = srunner_create(store_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
