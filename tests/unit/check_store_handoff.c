/*
 * check_store_handoff.c - the store's operations for ownership handoff
 * (storage/store.c) on real LMDB files in temporary directories:
 * STORE_OP_APPLY_RECORD merging a whole record another store held (new
 * siblings, the same record again, an older one, a damaged one, one past
 * max_siblings), in atomic groups with a handoff checkpoint (all or
 * nothing), through store_submit_list() and store_queue(), and across a
 * crash and a checkpoint; a group of records and its handoff checkpoint
 * as one LMDB commit (nothing logged; it absorbs the write-ahead log
 * first), alone and in one batch with other writes, found after a child
 * that committed it is killed; the handoff table's puts and deletes alone
 * in the write-ahead log, read back before any checkpoint, a delete
 * replayed, and a log written before table items existed still opening;
 * and
 * store_arc_digest(): stores holding the same siblings in another order
 * agree, one differing key changes only its sub-arc's digest, sub-arcs cut
 * as the header says (each equal to the digest of its own arc), wrapping
 * arcs, the whole circle, and writes still only in the log.
 *
 * No new decoder of outside bytes: APPLY_RECORD's input goes through
 * record_decode(), which tests/fuzz/ covers already.
 */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bytes.h"
#include "error.h"
#include "record.h"
#include "store.h"
#include "wal.h"

#define TEST_STORE_DIR_NAME "check_store_handoff"
#include "test_store_dir.h"

/* Keys of the digest tests: enough that 16 sub-arcs each hold some. */
#define DIGEST_KEYS 300

static struct store *open_with(const char *sub, const char *node, size_t max_siblings,
                               bool keep_log)
{
    static char path[512];
    struct store_config c;
    struct store *s;
    char err[512];

    store_config_in(&c, path, sizeof(path), sub);
    c.node_id = node;
    if (max_siblings > 0) {
        c.max_siblings = max_siblings;
    }
    if (keep_log) {
        c.test_idle_checkpoint_ms = UINT64_MAX; /* only close checkpoints */
    }
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open %s: %s", sub, err);
    return s;
}

static struct store *open_store(const char *sub, const char *node)
{
    return open_with(sub, node, 0, false);
}

/* A version of key written on a store of node's own (value NULL: a delete). */
static void version_from(const char *node, const char *key, const char *value, struct sibling *out)
{
    char sub[32];
    struct store *o;

    snprintf(sub, sizeof(sub), "other-%s", node);
    o = open_store(sub, node);
    ck_assert_int_eq(store_write(o, key, strlen(key), value, value ? strlen(value) : 0,
                                 value == NULL, NULL, out),
                     0);
    store_close(o);
}

/* The encoded record of the siblings v[0..n), malloc'd; its length in *len. */
static uint8_t *encode_of(const struct sibling *const *v, size_t n, size_t *len)
{
    struct record r;
    uint8_t *p;

    record_init(&r);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(record_push(&r, v[i]), 0);
    }
    *len = record_encoded_size(&r);
    p = malloc(*len);
    ck_assert_ptr_nonnull(p);
    record_encode(&r, p);
    record_deinit(&r);
    return p;
}

struct raw {
    uint8_t *p;
    size_t len;
};

static int raw_copy(void *ctx, const uint8_t *rec, size_t len)
{
    struct raw *r = ctx;

    r->p = malloc(len);
    ck_assert_ptr_nonnull(r->p);
    memcpy(r->p, rec, len);
    r->len = len;
    return 0;
}

/* The stored bytes of key (p NULL when absent); the caller frees p. */
static struct raw stored(struct store *s, const char *key)
{
    struct raw r = {NULL, 0};
    int rc = store_read(s, key, strlen(key), raw_copy, &r);

    ck_assert(rc == 0 || rc == RK_ENOTFOUND);
    return r;
}

static void assert_stored(struct store *s, const char *key, const struct raw *want)
{
    struct raw got = stored(s, key);

    ck_assert_uint_eq(got.len, want->len);
    if (want->len > 0) {
        ck_assert_mem_eq(got.p, want->p, want->len);
    }
    free(got.p);
}

static size_t siblings_of(struct store *s, const char *key)
{
    struct record r;
    size_t n;

    record_init(&r);
    if (store_get(s, key, strlen(key), &r) == RK_ENOTFOUND) {
        return 0;
    }
    n = r.n;
    record_deinit(&r);
    return n;
}

/* Does key's record hold a sibling with v's clock? */
static bool holds(struct store *s, const char *key, const struct sibling *v)
{
    struct record r;
    bool found = false;

    record_init(&r);
    ck_assert_int_eq(store_get(s, key, strlen(key), &r), 0);
    for (size_t i = 0; i < r.n; i++) {
        found = found || vclock_compare(&r.s[i].clock, &v->clock) == VCLOCK_EQUAL;
    }
    record_deinit(&r);
    return found;
}

/* Three concurrent versions of "k", from nodes na, nb and nc. */
struct three {
    struct sibling a, b, c;
};

static void three_make(struct three *t)
{
    sibling_init(&t->a);
    sibling_init(&t->b);
    sibling_init(&t->c);
    version_from("na", "k", "from-a", &t->a);
    version_from("nb", "k", "from-b", &t->b);
    version_from("nc", "k", "from-c", &t->c);
}

static void three_free(struct three *t)
{
    sibling_deinit(&t->a);
    sibling_deinit(&t->b);
    sibling_deinit(&t->c);
}

/*
 * A record of two siblings (a, b) merged into a key holding a and a third
 * concurrent one (c): three siblings, changed; the same record again
 * changes nothing, nor does a record of a version older than the stored.
 */
START_TEST(test_apply_record_merges)
{
    struct store *s = open_store("d", "n1");
    const struct sibling *ab[2];
    struct sibling old, newer;
    struct three t;
    struct raw before;
    uint8_t *rec;
    size_t len;
    bool changed = true;

    three_make(&t);
    ab[0] = &t.a;
    ab[1] = &t.b;
    ck_assert_int_eq(store_apply(s, "k", 1, &t.a, NULL), 0);
    ck_assert_int_eq(store_apply(s, "k", 1, &t.c, NULL), 0);
    rec = encode_of(ab, 2, &len);
    ck_assert_int_eq(store_apply_record(s, "k", 1, rec, len, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(siblings_of(s, "k"), 3);
    ck_assert(holds(s, "k", &t.a) && holds(s, "k", &t.b) && holds(s, "k", &t.c));
    before = stored(s, "k");
    ck_assert_int_eq(store_apply_record(s, "k", 1, rec, len, &changed), 0);
    ck_assert(!changed);
    assert_stored(s, "k", &before);
    free(before.p);
    free(rec);

    /* an older version of a key holding a newer one: nothing changes */
    sibling_init(&old);
    sibling_init(&newer);
    version_from("nd", "old", "first", &old);
    version_from("nd", "old", "second", &newer); /* the same store: descends from old */
    ck_assert_int_eq(store_apply(s, "old", 3, &newer, NULL), 0);
    before = stored(s, "old");
    rec = encode_of((const struct sibling *[]){&old}, 1, &len);
    ck_assert_int_eq(store_apply_record(s, "old", 3, rec, len, &changed), 0);
    ck_assert(!changed);
    assert_stored(s, "old", &before);
    free(before.p);
    free(rec);
    /* and the newer over the older replaces it, on a key that had none too */
    rec = encode_of((const struct sibling *[]){&old}, 1, &len);
    ck_assert_int_eq(store_apply_record(s, "fresh", 5, rec, len, &changed), 0);
    ck_assert(changed);
    free(rec);
    rec = encode_of((const struct sibling *[]){&newer}, 1, &len);
    ck_assert_int_eq(store_apply_record(s, "fresh", 5, rec, len, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(siblings_of(s, "fresh"), 1);
    ck_assert(holds(s, "fresh", &newer));
    free(rec);
    sibling_deinit(&old);
    sibling_deinit(&newer);
    three_free(&t);
    store_close(s);
}
END_TEST

/* A record that does not decode: RK_ESYNTAX, the key as it was; a NULL record: refused. */
START_TEST(test_apply_record_damaged)
{
    struct store *s = open_store("d", "n1");
    struct store_op op;
    struct three t;
    struct raw before;
    uint8_t *rec, *longer;
    size_t len;
    bool changed = true;

    three_make(&t);
    ck_assert_int_eq(store_apply(s, "k", 1, &t.c, NULL), 0);
    before = stored(s, "k");
    rec = encode_of((const struct sibling *[]){&t.a, &t.b}, 2, &len);
    /* cut short, one byte too many, a reserved flag, an unknown format, nothing */
    ck_assert_int_eq(store_apply_record(s, "k", 1, rec, len - 1, &changed), RK_ESYNTAX);
    ck_assert(!changed);
    longer = malloc(len + 1);
    ck_assert_ptr_nonnull(longer);
    memcpy(longer, rec, len);
    longer[len] = 0;
    ck_assert_int_eq(store_apply_record(s, "k", 1, longer, len + 1, NULL), RK_ESYNTAX);
    longer[1] = 1;
    ck_assert_int_eq(store_apply_record(s, "k", 1, longer, len, NULL), RK_ESYNTAX);
    longer[1] = 0;
    longer[0] = 9;
    ck_assert_int_eq(store_apply_record(s, "k", 1, longer, len, NULL), RK_ESYNTAX);
    ck_assert_int_eq(store_apply_record(s, "k", 1, longer, 0, NULL), RK_ESYNTAX);
    assert_stored(s, "k", &before);
    ck_assert_int_eq(store_apply_record(s, "none", 4, rec, len - 1, NULL), RK_ESYNTAX);
    ck_assert_uint_eq(siblings_of(s, "none"), 0);
    store_op_init(&op, STORE_OP_APPLY_RECORD);
    op.key = (const uint8_t *)"k";
    op.key_len = 1;
    ck_assert_int_eq(store_submit(s, &op), RK_EINVAL); /* value NULL */
    free(longer);
    free(rec);
    free(before.p);
    three_free(&t);
    store_close(s);
}
END_TEST

/*
 * Past max_siblings: the first sibling of the record would fit, the second
 * not; the operation fails with RK_ETOOBIG and the key keeps its one
 * sibling (one read-modify-write, not one write per sibling).
 */
START_TEST(test_apply_record_sibling_cap)
{
    struct store *s = open_with("d", "n1", 2, false);
    struct three t;
    struct raw before;
    uint8_t *rec;
    size_t len;
    bool changed = true;

    three_make(&t);
    ck_assert_int_eq(store_apply(s, "k", 1, &t.c, NULL), 0);
    before = stored(s, "k");
    rec = encode_of((const struct sibling *[]){&t.a, &t.b}, 2, &len);
    ck_assert_int_eq(store_apply_record(s, "k", 1, rec, len, &changed), RK_ETOOBIG);
    ck_assert(!changed);
    assert_stored(s, "k", &before);
    ck_assert_uint_eq(siblings_of(s, "k"), 1);
    free(rec);
    free(before.p);
    three_free(&t);
    store_close(s);
}
END_TEST

/* op: an APPLY_RECORD of rec to key, completing by store_wait(). */
static void apply_record_op(struct store_op *op, const char *key, const uint8_t *rec, size_t len)
{
    store_op_init(op, STORE_OP_APPLY_RECORD);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->value = rec;
    op->value_len = len;
}

static void table_put_op(struct store_op *op, const char *key, const char *value)
{
    store_op_init(op, STORE_OP_TABLE_PUT);
    op->table = STORE_TABLE_HANDOFF;
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->value = (const uint8_t *)value;
    op->value_len = strlen(value);
}

static bool handoff_has(struct store *s, const char *key, const char *want)
{
    char buf[64];
    size_t len;
    int rc = store_table_get(s, STORE_TABLE_HANDOFF, key, strlen(key), buf, sizeof(buf), &len);

    ck_assert(rc == 0 || rc == RK_ENOTFOUND);
    return rc == 0 && len == strlen(want) && memcmp(buf, want, len) == 0;
}

/* Submit ops[0..n) as one atomic group and wait for each; every result must be want. */
static void run_atomic(struct store *s, struct store_op **ops, size_t n, int want)
{
    ck_assert_int_eq(store_submit_atomic(s, ops, n), 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(store_wait(s, ops[i]), want);
    }
}

/*
 * A handoff batch: APPLY_RECORDs and the TABLE_PUT of its checkpoint in
 * one atomic group are visible together; with one damaged record in the
 * group, neither the records nor the checkpoint are.  The same with
 * APPLY_RECORDs alone (a group the write-ahead log takes).
 */
START_TEST(test_apply_record_atomic)
{
    struct store *s = open_store("d", "n1");
    struct store_op ops[4], *group[4] = {&ops[0], &ops[1], &ops[2], &ops[3]};
    struct three t;
    uint8_t *rec;
    size_t len;

    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a, &t.b}, 2, &len);
    apply_record_op(&ops[0], "g1", rec, len);
    apply_record_op(&ops[1], "g2", rec, len);
    apply_record_op(&ops[2], "g3", rec, len - 1); /* damaged */
    table_put_op(&ops[3], "ckpt", "at-3");
    run_atomic(s, group, 4, RK_ESYNTAX);
    ck_assert_uint_eq(siblings_of(s, "g1"), 0);
    ck_assert_uint_eq(siblings_of(s, "g2"), 0);
    ck_assert(!handoff_has(s, "ckpt", "at-3"));

    apply_record_op(&ops[0], "g1", rec, len); /* logged: APPLY_RECORDs alone */
    apply_record_op(&ops[1], "g2", rec, len);
    apply_record_op(&ops[2], "g3", rec, len - 1);
    run_atomic(s, group, 3, RK_ESYNTAX);
    ck_assert_uint_eq(siblings_of(s, "g1"), 0);
    ck_assert_uint_eq(siblings_of(s, "g2"), 0);

    apply_record_op(&ops[0], "g1", rec, len);
    apply_record_op(&ops[1], "g2", rec, len);
    apply_record_op(&ops[2], "g3", rec, len);
    table_put_op(&ops[3], "ckpt", "at-3");
    run_atomic(s, group, 4, 0);
    for (int i = 0; i < 3; i++) {
        ck_assert(ops[i].changed);
    }
    ck_assert_uint_eq(siblings_of(s, "g1"), 2);
    ck_assert_uint_eq(siblings_of(s, "g3"), 2);
    ck_assert(handoff_has(s, "ckpt", "at-3"));

    apply_record_op(&ops[0], "h1", rec, len);
    apply_record_op(&ops[1], "h2", rec, len);
    run_atomic(s, group, 2, 0);
    ck_assert_uint_eq(siblings_of(s, "h2"), 2);
    free(rec);
    three_free(&t);
    store_close(s);
}
END_TEST

/*
 * One record of one sibling (a handoff's common record) applied as one
 * operation, through the write-ahead log (lone) and through LMDB (in a
 * group with a meta put, which runs there), and in lww mode: on a key the
 * receiver lacks it is stored exactly as it came, the same bytes a decode
 * and encode give; on a key a newer write reached meanwhile (a version
 * descending from the streamed one) the newer stays, bytes unchanged; a
 * concurrent write stays beside it (siblings) or wins by its stamp (lww);
 * a tombstone is stored as it came too.
 */
/* Apply rec to key as one operation, lone (logged) or beside a meta put (through LMDB). */
static bool apply_one(struct store *s, const char *key, const uint8_t *rec, size_t len,
                      bool through_lmdb)
{
    struct store_op ops[2], *group[2] = {&ops[0], &ops[1]};

    apply_record_op(&ops[0], key, rec, len);
    if (through_lmdb) {
        store_op_init(&ops[1], STORE_OP_TABLE_PUT);
        ops[1].table = STORE_TABLE_META;
        ops[1].key = (const uint8_t *)"test-one-sibling";
        ops[1].key_len = strlen("test-one-sibling");
        ops[1].value = (const uint8_t *)"x";
        ops[1].value_len = 1;
    }
    run_atomic(s, group, through_lmdb ? 2 : 1, 0);
    return ops[0].changed;
}

static void one_sibling_case(enum record_conflicts mode, bool through_lmdb)
{
    static char path[512];
    struct store_config c;
    struct store *s;
    struct sibling old, newer, other, gone;
    struct record d;
    struct raw before, got;
    uint8_t *rec, *back;
    size_t len;
    char err[512], sub[32];

    snprintf(sub, sizeof(sub), "%s-%s", mode == RECORD_LWW ? "lww" : "siblings",
             through_lmdb ? "lmdb" : "logged");
    store_config_in(&c, path, sizeof(path), sub);
    c.node_id = "n1";
    c.conflicts = mode;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    sibling_init(&old);
    sibling_init(&newer);
    sibling_init(&other);
    sibling_init(&gone);
    version_from("nd", "k", "first", &old);
    version_from("nd", "k", "second", &newer);    /* the same store: descends from old */
    version_from("ne", "k", "elsewhere", &other); /* concurrent with both, and later */
    version_from("nf", "t", NULL, &gone);

    /* absent: stored as it came, which is what decoding and encoding it gives */
    rec = encode_of((const struct sibling *[]){&old}, 1, &len);
    ck_assert(apply_one(s, "k", rec, len, through_lmdb) == true);
    got = stored(s, "k");
    ck_assert_uint_eq(got.len, len);
    ck_assert_mem_eq(got.p, rec, len);
    record_init(&d);
    ck_assert_int_eq(record_decode(got.p, got.len, &d), 0);
    back = malloc(record_encoded_size(&d));
    ck_assert_uint_eq(record_encode(&d, back), len);
    ck_assert_mem_eq(back, rec, len);
    free(back);
    record_deinit(&d);
    free(got.p);

    /* a newer write arrived meanwhile: the older streamed record leaves it as it is */
    ck_assert_int_eq(store_apply(s, "k", 1, &newer, NULL), 0);
    before = stored(s, "k");
    ck_assert(apply_one(s, "k", rec, len, through_lmdb) == false);
    assert_stored(s, "k", &before);
    ck_assert(holds(s, "k", &newer));
    free(before.p);
    free(rec);

    /* the newer record over the older: replaced, stored as it came */
    ck_assert_int_eq(store_apply(s, "n", 1, &old, NULL), 0);
    rec = encode_of((const struct sibling *[]){&newer}, 1, &len);
    ck_assert(apply_one(s, "n", rec, len, through_lmdb) == true);
    assert_stored(s, "n", &(struct raw){rec, len});
    free(rec);

    /* a concurrent version: both kept (siblings), or the later stamp alone (lww) */
    rec = encode_of((const struct sibling *[]){&other}, 1, &len);
    ck_assert(apply_one(s, "k", rec, len, through_lmdb) == true);
    ck_assert(holds(s, "k", &other) || mode == RECORD_LWW);
    ck_assert_uint_eq(siblings_of(s, "k"), mode == RECORD_LWW ? 1 : 2);
    if (mode == RECORD_SIBLINGS) {
        ck_assert(holds(s, "k", &newer));
    }
    free(rec);

    /* a tombstone on a key held nowhere: stored as it came */
    rec = encode_of((const struct sibling *[]){&gone}, 1, &len);
    ck_assert(apply_one(s, "t", rec, len, through_lmdb) == true);
    assert_stored(s, "t", &(struct raw){rec, len});
    free(rec);
    sibling_deinit(&old);
    sibling_deinit(&newer);
    sibling_deinit(&other);
    sibling_deinit(&gone);
    store_close(s);
}

START_TEST(test_apply_record_one_sibling)
{
    one_sibling_case(RECORD_SIBLINGS, false);
    one_sibling_case(RECORD_SIBLINGS, true);
    one_sibling_case(RECORD_LWW, false);
    one_sibling_case(RECORD_LWW, true);
}
END_TEST

static void count_done(struct store_op *op, void *ctx)
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

/* store_submit_list() and store_queue() (atomic too) carry APPLY_RECORD. */
START_TEST(test_apply_record_list_and_queue)
{
    struct store *s = open_store("d", "n1");
    struct store_op ops[3], *list[3] = {&ops[0], &ops[1], &ops[2]};
    struct three t;
    uint8_t *rec;
    size_t len;
    int done = 0;

    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a, &t.c}, 2, &len);
    for (int i = 0; i < 3; i++) {
        apply_record_op(&ops[i], i == 0 ? "l0" : i == 1 ? "l1" : "l2", rec, len);
    }
    ck_assert_int_eq(store_submit_list(s, list, 3), 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(store_wait(s, &ops[i]), 0);
        ck_assert(ops[i].changed);
    }
    for (int i = 0; i < 3; i++) {
        apply_record_op(&ops[i], i == 0 ? "q0" : i == 1 ? "q1" : "l2", rec, len);
        ops[i].done = count_done;
        ops[i].ctx = &done;
    }
    ck_assert_int_eq(store_queue(s, list, 3, true), 0);
    store_run_ready(s);
    wait_done(s, &done, 3);
    ck_assert_int_eq(ops[0].result, 0);
    ck_assert(ops[0].changed && ops[1].changed && !ops[2].changed); /* l2 had it already */
    ck_assert_uint_eq(siblings_of(s, "q1"), 2);
    free(rec);
    three_free(&t);
    store_close(s);
}
END_TEST

/* The child: merge the records, check LMDB took them (not the log), and crash. */
static void child_apply(const char *sub, const uint8_t *rec, size_t len)
{
    struct store *s = open_with(sub, "n1", 0, true);
    struct store_stats st;
    bool changed = false;

    if (store_apply_record(s, "k", 1, rec, len, &changed) != 0 || !changed ||
        store_apply_record(s, "k2", 2, rec, len, &changed) != 0 || !changed) {
        _exit(3);
    }
    store_get_stats(s, &st);
    if (st.logged != 0 || st.overlay_keys != 0 || st.commits != 2) {
        _exit(4); /* the records did not go to LMDB, one commit each */
    }
    _exit(0); /* no store_close(): no checkpoint; LMDB holds them */
}

/*
 * Merged records survive a crash (committed to LMDB, nothing in the log to
 * replay) and the close after it (open again).
 */
START_TEST(test_apply_record_reopen)
{
    char wal[600];
    struct three t;
    struct store *s;
    struct stat sb;
    uint8_t *rec;
    size_t len;
    int status;
    pid_t pid;

    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a, &t.b}, 2, &len);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        child_apply("d", rec, len);
        _exit(2);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    snprintf(wal, sizeof(wal), "%s/d/wal", tmp_dir);
    ck_assert_int_eq(stat(wal, &sb), 0);
    ck_assert_int_eq(sb.st_size, WAL_HEADER_LEN);
    s = open_store("d", "n1");
    ck_assert_uint_eq(siblings_of(s, "k"), 2);
    ck_assert(holds(s, "k", &t.a) && holds(s, "k", &t.b));
    ck_assert_uint_eq(siblings_of(s, "k2"), 2);
    store_close(s); /* checkpoints */
    ck_assert_int_eq(stat(wal, &sb), 0);
    ck_assert_int_eq(sb.st_size, WAL_HEADER_LEN);
    s = open_store("d", "n1");
    ck_assert_uint_eq(siblings_of(s, "k"), 2);
    ck_assert(holds(s, "k2", &t.a) && holds(s, "k2", &t.b));
    store_close(s);
    free(rec);
    three_free(&t);
}
END_TEST

/* --- the handoff table in the write-ahead log ------------------------------------ */

/* A store in sub under sync whose log only close checkpoints (no idle checkpoint). */
static struct store *open_logged(const char *sub, enum store_sync sync)
{
    static char path[512];
    struct store_config c;
    struct store *s;
    char err[512];

    store_config_in(&c, path, sizeof(path), sub);
    c.sync = sync;
    c.test_idle_checkpoint_ms = UINT64_MAX;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open %s: %s", sub, err);
    return s;
}

static off_t wal_size(const char *sub)
{
    char wal[600];
    struct stat sb;

    snprintf(wal, sizeof(wal), "%s/%s/wal", tmp_dir, sub);
    ck_assert_int_eq(stat(wal, &sb), 0);
    return sb.st_size;
}

/*
 * What one batch cost, from st0 to st1: exactly one commit, logged (0 or
 * 1) log appends, want_ckpts checkpoints (an LMDB batch absorbing what the
 * log held), and want_syncs fsyncs.  A log append is (st0, st1, 1, syncs,
 * 0); a handoff batch, one LMDB commit, (st0, st1, 0, syncs, 0 or 1).
 */
static void assert_one_commit(const struct store_stats *st0, const struct store_stats *st1,
                              uint64_t logged, uint64_t want_syncs, uint64_t want_ckpts)
{
    ck_assert_uint_eq(st1->commits - st0->commits, 1);
    ck_assert_uint_eq(st1->logged - st0->logged, logged);
    ck_assert_uint_eq(st1->checkpoints - st0->checkpoints, want_ckpts);
    ck_assert_uint_eq(st1->syncs - st0->syncs, want_syncs);
}

/* A delete of a handoff-table key (TABLE_PUT with value NULL). */
static void table_del_op(struct store_op *op, const char *key)
{
    table_put_op(op, key, "");
    op->value = NULL;
    op->value_len = 0;
}

/*
 * A handoff batch (APPLY_RECORDs and the TABLE_PUT of its checkpoint, one
 * atomic group) is one LMDB commit, nothing logged: under `sync always`
 * one fsync, under `none` none.  Its checkpoint reads back at once; a
 * failed group leaves neither.  The handoff table's puts and deletes
 * alone (the node's path, store_queue() with store_run_ready()) are one
 * log append, and a delete hides the value LMDB holds; the next handoff
 * batch absorbs that log first (a checkpoint) and merges with what it
 * held; close's checkpoint moves the rest into LMDB.
 */
START_TEST(test_handoff_group_lmdb)
{
    static const enum store_sync modes[] = {STORE_SYNC_ALWAYS, STORE_SYNC_NONE};
    struct store_op ops[4], *group[4] = {&ops[0], &ops[1], &ops[2], &ops[3]};
    struct store_stats st0, st1;
    struct three t;
    uint8_t *rec;
    size_t len;

    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a, &t.b}, 2, &len);
    for (size_t m = 0; m < 2; m++) {
        const char *sub = m == 0 ? "always" : "none";
        uint64_t syncs = modes[m] == STORE_SYNC_ALWAYS ? 1 : 0;
        struct store *s = open_logged(sub, modes[m]);
        int done = 0;

        apply_record_op(&ops[0], "g1", rec, len);
        apply_record_op(&ops[1], "g2", rec, len);
        apply_record_op(&ops[2], "g3", rec, len);
        table_put_op(&ops[3], "ckpt", "at-3");
        store_get_stats(s, &st0);
        run_atomic(s, group, 4, 0);
        store_get_stats(s, &st1);
        assert_one_commit(&st0, &st1, 0, syncs, 0);
        ck_assert_uint_eq(st1.overlay_keys, 0);
        ck_assert(handoff_has(s, "ckpt", "at-3"));
        ck_assert_uint_eq(siblings_of(s, "g2"), 2);

        apply_record_op(&ops[0], "g4", rec, len);
        apply_record_op(&ops[1], "g5", rec, len - 1); /* damaged: the group fails whole */
        table_put_op(&ops[2], "ckpt", "at-5");
        run_atomic(s, group, 3, RK_ESYNTAX);
        ck_assert(handoff_has(s, "ckpt", "at-3"));
        ck_assert_uint_eq(siblings_of(s, "g4"), 0);

        table_put_op(&ops[0], "ckpt", "at-6");
        table_del_op(&ops[1], "gone");
        store_get_stats(s, &st0);
        for (int i = 0; i < 2; i++) {
            ops[i].done = count_done;
            ops[i].ctx = &done;
        }
        ck_assert_int_eq(store_queue(s, group, 2, true), 0);
        store_run_ready(s);
        wait_done(s, &done, 2);
        ck_assert_int_eq(ops[0].result, 0);
        ck_assert_int_eq(ops[1].result, 0); /* deleting an absent key is no error */
        store_get_stats(s, &st1);
        assert_one_commit(&st0, &st1, 1, syncs, 0);
        ck_assert(handoff_has(s, "ckpt", "at-6")); /* from the log */

        /* a handoff batch now: the log's table items are absorbed first */
        apply_record_op(&ops[0], "g6", rec, len);
        table_put_op(&ops[1], "ckpt", "at-7");
        store_get_stats(s, &st0);
        run_atomic(s, group, 2, 0);
        store_get_stats(s, &st1);
        assert_one_commit(&st0, &st1, 0, modes[m] == STORE_SYNC_NONE ? 0 : 1, 1);
        ck_assert(handoff_has(s, "ckpt", "at-7"));
        ck_assert(!handoff_has(s, "gone", ""));
        table_put_op(&ops[0], "ckpt", "at-8");
        store_get_stats(s, &st0);
        run_atomic(s, group, 1, 0);
        store_get_stats(s, &st1);
        assert_one_commit(&st0, &st1, 1, syncs, 0);
        store_close(s); /* the checkpoint puts "at-8" into LMDB */
        ck_assert_int_eq(wal_size(sub), WAL_HEADER_LEN);

        s = open_logged(sub, modes[m]);
        store_get_stats(s, &st1);
        ck_assert_uint_eq(st1.overlay_keys, 0);
        ck_assert(handoff_has(s, "ckpt", "at-8")); /* from LMDB now */
        ck_assert(!handoff_has(s, "gone", ""));
        ck_assert_uint_eq(siblings_of(s, "g3"), 2);
        store_close(s);
    }
    free(rec);
    three_free(&t);
}
END_TEST

/*
 * Handoff groups queued together commit together: while the writer is held
 * in the fsync of a meta put (the test hook), three handoff batches of a
 * full store group each (1,023 APPLY_RECORDs and a checkpoint) queue up;
 * once released they run as one LMDB transaction, one commit for the
 * three, and each stays atomic on its own: the middle one, holding one
 * damaged record, fails whole (RK_ESYNTAX, neither records nor checkpoint)
 * while the other two are stored.  Client writes queued between the first
 * two groups (`between` of them) and one after the last ride the same
 * transaction, batch_max of them at most; the next one ends the batch.
 */
#define GROUPS 3
static sem_t gate_entered, gate_release;
static atomic_bool gate_armed;

static int gate_sync(void *ctx)
{
    (void)ctx;
    if (atomic_exchange(&gate_armed, false)) {
        sem_post(&gate_entered);
        sem_wait(&gate_release);
    }
    return 0;
}

static void *meta_put_thread(void *arg)
{
    struct store *s = arg;
    struct store_op op;
    int rc;

    store_op_init(&op, STORE_OP_TABLE_PUT);
    op.table = STORE_TABLE_META;
    op.key = (const uint8_t *)"gate";
    op.key_len = 4;
    op.value = (const uint8_t *)"x";
    op.value_len = 1;
    rc = store_submit(s, &op);
    rc = rc ? rc : store_wait(s, &op);
    return (void *)(intptr_t)rc;
}

/* Hold s's writer in the fsync of a meta put (gate_sync), from a thread of its own. */
static void gate_hold(struct store *s, pthread_t *gate)
{
    ck_assert_int_eq(sem_init(&gate_entered, 0, 0), 0);
    ck_assert_int_eq(sem_init(&gate_release, 0, 0), 0);
    atomic_store(&gate_armed, true);
    ck_assert_int_eq(pthread_create(gate, NULL, meta_put_thread, s), 0);
    ck_assert_int_eq(sem_wait(&gate_entered), 0); /* the writer is in the meta put's fsync */
}

/* Let the writer go on; the meta put must have succeeded. */
static void gate_open(pthread_t gate)
{
    void *rc;

    sem_post(&gate_release);
    ck_assert_int_eq(pthread_join(gate, &rc), 0);
    ck_assert_int_eq((int)(intptr_t)rc, 0);
    sem_destroy(&gate_entered);
    sem_destroy(&gate_release);
}

/* A client write of key k, reporting to done. */
static void client_write_op(struct store_op *op, const char *k, int *done)
{
    store_op_init(op, STORE_OP_WRITE);
    op->key = (const uint8_t *)k;
    op->key_len = strlen(k);
    op->value = (const uint8_t *)"v";
    op->value_len = 1;
    op->skip_written = true;
    op->done = count_done;
    op->ctx = done;
}

/* The groups of test_handoff_groups_one_commit, `between` client writes after the first. */
static void groups_run(size_t between, uint64_t commits, uint64_t logged)
{
    static char path[512];
    struct store_config c;
    struct store *s;
    struct store_stats st0, st1;
    struct three t;
    size_t per = 1023, n_groups = GROUPS * (per + 1), n_ops = n_groups + between + 1;
    struct store_op *ops = calloc(n_ops, sizeof(*ops));
    struct store_op **list = calloc(n_ops, sizeof(*list));
    char(*keys)[16] = calloc(GROUPS * per + between + 1, sizeof(*keys));
    uint8_t *rec;
    size_t len;
    char err[512];
    pthread_t gate;
    int done = 0;

    ck_assert(ops != NULL && list != NULL && keys != NULL);
    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a}, 1, &len);
    store_config_in(&c, path, sizeof(path), "groups");
    c.sync = STORE_SYNC_ALWAYS;
    c.test_sync = gate_sync;
    c.test_idle_checkpoint_ms = UINT64_MAX;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    ck_assert_uint_ge(store_batch_max(s), per + 1);
    gate_hold(s, &gate);

    for (size_t g = 0; g < GROUPS; g++) {
        struct store_op **grp = list + g * (per + 1);
        char *ckpt = g == 0 ? "ckpt-0" : g == 1 ? "ckpt-1" : "ckpt-2";
        for (size_t i = 0; i < per; i++) {
            char *k = keys[g * per + i];
            snprintf(k, sizeof(keys[0]), "h%zu-%zu", g, i);
            grp[i] = &ops[g * (per + 1) + i];
            apply_record_op(grp[i], k, rec, g == 1 && i == per / 2 ? len - 1 : len);
        }
        grp[per] = &ops[g * (per + 1) + per];
        table_put_op(grp[per], ckpt, "done");
        for (size_t i = 0; i <= per; i++) {
            grp[i]->done = count_done;
            grp[i]->ctx = &done;
        }
        ck_assert_int_eq(store_queue(s, grp, per + 1, true), 0);
        for (size_t i = 0; g == 0 && i < between; i++) { /* client writes between the groups */
            char *k = keys[GROUPS * per + i];
            snprintf(k, sizeof(keys[0]), "between-%zu", i);
            list[n_groups + i] = &ops[n_groups + i];
            client_write_op(list[n_groups + i], k, &done);
            ck_assert_int_eq(store_queue(s, list + n_groups + i, 1, false), 0);
        }
    }
    /* a client write behind them */
    list[n_ops - 1] = &ops[n_ops - 1];
    client_write_op(list[n_ops - 1], "client", &done);
    ck_assert_int_eq(store_queue(s, list + n_ops - 1, 1, false), 0);
    store_get_stats(s, &st0);
    gate_open(gate);
    store_run_ready(s);
    wait_done(s, &done, (int)n_ops);
    store_get_stats(s, &st1);
    /* the meta put's commit (counted once its fsync returns), then the batches' */
    ck_assert_uint_eq(st1.commits - st0.commits, commits);
    ck_assert_uint_eq(st1.logged - st0.logged, logged);
    for (size_t g = 0; g < GROUPS; g++) {
        for (size_t i = 0; i <= per; i++) {
            ck_assert_int_eq(ops[g * (per + 1) + i].result, g == 1 ? RK_ESYNTAX : 0);
        }
    }
    for (size_t i = n_groups; i < n_ops; i++) {
        ck_assert_int_eq(ops[i].result, 0);
    }
    ck_assert(handoff_has(s, "ckpt-0", "done"));
    ck_assert(!handoff_has(s, "ckpt-1", "done"));
    ck_assert(handoff_has(s, "ckpt-2", "done"));
    ck_assert_uint_eq(siblings_of(s, "h0-0"), 1);
    ck_assert_uint_eq(siblings_of(s, "h1-0"), 0);
    ck_assert_uint_eq(siblings_of(s, "h2-1022"), 1);
    ck_assert_uint_eq(siblings_of(s, "client"), 1);
    if (between > 0) {
        ck_assert_uint_eq(siblings_of(s, "between-0"), 1);
    }
    store_close(s);
    free(rec);
    three_free(&t);
    free(keys);
    free(list);
    free(ops);
}

START_TEST(test_handoff_groups_one_commit)
{
    /* the three groups and the write behind them: one transaction */
    groups_run(0, 2, 0);
    /* a write between the first two groups rides along too */
    groups_run(1, 2, 0);
    /*
     * batch_max (1,024) writes between them: all ride along, and the one
     * behind, the 1,025th other operation, goes to the log on its own
     */
    groups_run(1024, 3, 1);
    /*
     * 1,025 between: group 0 and 1,024 writes; then the last of them
     * alone, in the log (a batch that opens with a client write takes no
     * group of 1,024 after it); then groups 1 and 2 and the write behind
     */
    groups_run(1025, 4, 1);
}
END_TEST

/*
 * Handoff groups with other operations queued between them, at random
 * (client SETs and DELs over few keys, handoff-table sets and deletes,
 * lone APPLY_RECORDs), while the writer is held: every operation succeeds,
 * each client write says it found the key exactly when an applied write
 * before it left a value, and each key ends with the last write in
 * submission order; so does each handoff-table key; after a reopen too.
 */
#define RND_OPS 600
#define RND_KEYS 6
START_TEST(test_handoff_groups_random_against_model)
{
    static const size_t batch_maxes[] = {3, 4, 8, 16};
    static struct store_op ops[RND_OPS + 64], *list[RND_OPS + 64];
    static char keys[RND_OPS + 64][24];
    static char ck[RND_KEYS][8], tk[RND_KEYS][8];
    struct three t;
    uint8_t *rec;
    size_t len;

    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a}, 1, &len);
    for (int k = 0; k < RND_KEYS; k++) {
        snprintf(ck[k], sizeof(ck[k]), "c%d", k);
        snprintf(tk[k], sizeof(tk[k]), "t%d", k);
    }
    for (unsigned round = 0; round < 8; round++) {
        static char path[512];
        char err[512], sub[16];
        struct store_config c;
        struct store *s;
        pthread_t gate;
        int done = 0, n = 0, last_c[RND_KEYS], last_t[RND_KEYS];
        bool existed[RND_OPS + 64];
        uint64_t rs = 0x9E3779B97F4A7C15ull * (round + 1);

        snprintf(sub, sizeof(sub), "rnd%u", round);
        store_config_in(&c, path, sizeof(path), sub);
        c.sync = STORE_SYNC_ALWAYS;
        c.test_sync = gate_sync;
        c.test_idle_checkpoint_ms = UINT64_MAX;
        c.batch_max = batch_maxes[round % 4];
        ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
        for (int k = 0; k < RND_KEYS; k++) {
            last_c[k] = last_t[k] = -1;
        }
        gate_hold(s, &gate);
        while (n < RND_OPS) {
            int first = n;
            size_t g = 1;
            rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
            int kind = first == 0 ? 0 : (int)(rs % 5);
            int k = (int)((rs >> 8) % RND_KEYS);
            if (kind == 0) { /* a handoff group: records and a checkpoint */
                g = 2 + (rs >> 16) % (c.batch_max - 1);
                for (size_t i = 0; i + 1 < g; i++, n++) {
                    snprintf(keys[n], sizeof(keys[n]), "h%d", n);
                    apply_record_op(&ops[n], keys[n], rec, len);
                }
                snprintf(keys[n], sizeof(keys[n]), "ck%d", first);
                table_put_op(&ops[n], keys[n], "done");
                n++;
            } else if (kind == 1 || kind == 2) { /* a client SET or DEL */
                bool del = kind == 2;
                snprintf(keys[n], sizeof(keys[n]), "v%d", n);
                store_op_init(&ops[n], STORE_OP_WRITE);
                ops[n].key = (const uint8_t *)ck[k];
                ops[n].key_len = strlen(ck[k]);
                ops[n].value = del ? NULL : (const uint8_t *)keys[n];
                ops[n].value_len = del ? 0 : strlen(keys[n]);
                ops[n].tombstone = del;
                ops[n].skip_written = true;
                existed[n] = last_c[k] >= 0 && !ops[last_c[k]].tombstone;
                last_c[k] = n;
                n++;
            } else if (kind == 3) { /* a handoff-table set or delete */
                snprintf(keys[n], sizeof(keys[n]), "w%d", n);
                table_put_op(&ops[n], tk[k], keys[n]);
                if ((rs >> 20) % 3 == 0) {
                    ops[n].value = NULL;
                    ops[n].value_len = 0;
                }
                last_t[k] = n;
                n++;
            } else { /* a lone record */
                snprintf(keys[n], sizeof(keys[n]), "l%d", n);
                apply_record_op(&ops[n], keys[n], rec, len);
                n++;
            }
            for (int i = first; i < n; i++) {
                list[i] = &ops[i];
                ops[i].done = count_done;
                ops[i].ctx = &done;
            }
            ck_assert_int_eq(store_queue(s, list + first, (size_t)(n - first), g > 1), 0);
        }
        gate_open(gate);
        store_run_ready(s);
        wait_done(s, &done, n);
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; pass == 0 && i < n; i++) {
                ck_assert_msg(ops[i].result == 0, "round %u op %d: %d", round, i, ops[i].result);
                if (ops[i].type == STORE_OP_WRITE) {
                    ck_assert_msg(ops[i].existed == existed[i], "round %u op %d existed %d", round,
                                  i, ops[i].existed);
                }
            }
            for (int i = 0; i < n; i++) {
                if (ops[i].type == STORE_OP_APPLY_RECORD) {
                    ck_assert_uint_eq(siblings_of(s, (const char *)ops[i].key), 1);
                }
            }
            for (int k = 0; k < RND_KEYS; k++) {
                struct record r;
                int l = last_c[k], rc;
                record_init(&r);
                rc = store_get(s, ck[k], strlen(ck[k]), &r);
                if (l < 0 || (ops[l].tombstone && rc == RK_ENOTFOUND)) {
                    ck_assert(l >= 0 || rc == RK_ENOTFOUND);
                } else {
                    ck_assert_int_eq(rc, 0);
                    ck_assert_uint_eq(r.n, 1);
                    ck_assert_int_eq(r.s[0].tombstone, ops[l].tombstone);
                    ck_assert_uint_eq(r.s[0].value_len, ops[l].value_len);
                    ck_assert(ops[l].value_len == 0 ||
                              memcmp(r.s[0].value, ops[l].value, ops[l].value_len) == 0);
                }
                record_deinit(&r);
                l = last_t[k];
                if (l >= 0 && ops[l].value != NULL) {
                    ck_assert(handoff_has(s, tk[k], (const char *)ops[l].value));
                } else {
                    char buf[64];
                    size_t got;
                    ck_assert_int_eq(store_table_get(s, STORE_TABLE_HANDOFF, tk[k], strlen(tk[k]),
                                                     buf, sizeof(buf), &got),
                                     RK_ENOTFOUND);
                }
            }
            store_close(s);
            c.test_sync = NULL;
            ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
        }
        store_close(s);
    }
    free(rec);
    three_free(&t);
}
END_TEST

/*
 * Handoff groups queued together at map_max, where the map has room for
 * some of them and not all: each group of batch_max operations commits
 * when it fits on its own, as it did in a transaction of its own, and only
 * those that do not fit fail with RK_ENOSPC (whole: records and
 * checkpoint).  Eight groups of eight 16 KiB records and a checkpoint
 * (batch_max 9) behind a meta put held in its fsync, in a 1 MiB map: the
 * first group alone takes about a fifth of it.
 */
#define FULL_GROUPS 8
#define FULL_PER 8
START_TEST(test_handoff_groups_map_full)
{
    static char path[512], big[16384], keys[FULL_GROUPS * FULL_PER][16], ckpts[FULL_GROUPS][16];
    struct store_op ops[FULL_GROUPS * (FULL_PER + 1)], *list[FULL_GROUPS * (FULL_PER + 1)];
    struct store_config c;
    struct sibling v;
    struct store *s;
    uint8_t *rec;
    size_t len;
    char err[512];
    pthread_t gate;
    int done = 0, stored_groups = 0;

    memset(big, 'b', sizeof(big) - 1);
    sibling_init(&v);
    version_from("nb", "big", big, &v);
    rec = encode_of((const struct sibling *[]){&v}, 1, &len);
    store_config_in(&c, path, sizeof(path), "full");
    c.sync = STORE_SYNC_ALWAYS;
    c.test_sync = gate_sync;
    c.test_idle_checkpoint_ms = UINT64_MAX;
    c.batch_max = FULL_PER + 1;
    c.map_initial = c.map_max = 1024 * 1024;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    gate_hold(s, &gate);
    for (size_t g = 0; g < FULL_GROUPS; g++) {
        struct store_op **grp = list + g * (FULL_PER + 1);
        for (size_t i = 0; i < FULL_PER; i++) {
            snprintf(keys[g * FULL_PER + i], sizeof(keys[0]), "f%zu-%zu", g, i);
            grp[i] = &ops[g * (FULL_PER + 1) + i];
            apply_record_op(grp[i], keys[g * FULL_PER + i], rec, len);
        }
        snprintf(ckpts[g], sizeof(ckpts[0]), "full-%zu", g);
        grp[FULL_PER] = &ops[g * (FULL_PER + 1) + FULL_PER];
        table_put_op(grp[FULL_PER], ckpts[g], "done");
        for (size_t i = 0; i <= FULL_PER; i++) {
            grp[i]->done = count_done;
            grp[i]->ctx = &done;
        }
        ck_assert_int_eq(store_queue(s, grp, FULL_PER + 1, true), 0);
    }
    gate_open(gate);
    store_run_ready(s);
    wait_done(s, &done, FULL_GROUPS * (FULL_PER + 1));
    for (size_t g = 0; g < FULL_GROUPS; g++) {
        int want = ops[g * (FULL_PER + 1)].result;
        ck_assert_msg(want == 0 || want == RK_ENOSPC, "group %zu: %d", g, want);
        for (size_t i = 0; i <= FULL_PER; i++) {
            ck_assert_int_eq(ops[g * (FULL_PER + 1) + i].result, want);
        }
        for (size_t i = 0; i < FULL_PER; i++) {
            ck_assert_uint_eq(siblings_of(s, keys[g * FULL_PER + i]), want == 0 ? 1 : 0);
        }
        ck_assert(handoff_has(s, ckpts[g], "done") == (want == 0));
        stored_groups += want == 0;
    }
    ck_assert_msg(stored_groups >= 2 && stored_groups < FULL_GROUPS,
                  "%d of %d groups stored in a map with room for some", stored_groups, FULL_GROUPS);
    store_close(s);
    free(rec);
    sibling_deinit(&v);
}
END_TEST

/* A lone STORE_OP_APPLY of v to key. */
static void apply_op(struct store_op *op, const char *key, const struct sibling *v)
{
    store_op_init(op, STORE_OP_APPLY);
    op->key = (const uint8_t *)key;
    op->key_len = strlen(key);
    op->version = v;
}

/* A record's one sibling: is it v, and a tombstone when tomb? */
static bool only(struct store *s, const char *key, const struct sibling *v, bool tomb)
{
    struct record r;
    bool ok;

    record_init(&r);
    ck_assert_int_eq(store_get(s, key, strlen(key), &r), 0);
    ok = r.n == 1 && vclock_compare(&r.s[0].clock, &v->clock) == VCLOCK_EQUAL &&
         r.s[0].tombstone == tomb;
    record_deinit(&r);
    return ok;
}

/*
 * A handoff group in one batch with other writes (the writer takes
 * everything queued): a replicated version newer than the streamed one,
 * of the same key, in the same batch before or after the group, and a
 * delete the log held before the batch.  The batch is one LMDB commit
 * that absorbs the log; the older streamed records change nothing (the
 * newer version stays alone, the deleted key stays a tombstone), the
 * group's checkpoint and the client's write are there, and all of it
 * again after a close and an open.  The writer thread may wake between two
 * store_queue() calls and take what is queued so far (a loaded machine):
 * such a round, split over two commits, is run again on a fresh store, up
 * to MIXED_ATTEMPTS times.
 */
#define MIXED_ATTEMPTS 5
START_TEST(test_handoff_group_mixed_batch)
{
    static const enum store_sync modes[] = {STORE_SYNC_ALWAYS, STORE_SYNC_NONE};
    struct sibling old, newer, live, gone;
    uint8_t *rec_k, *rec_d;
    size_t len_k, len_d;

    sibling_init(&old);
    sibling_init(&newer);
    sibling_init(&live);
    sibling_init(&gone);
    version_from("nd", "k", "first", &old);
    version_from("nd", "k", "second", &newer); /* descends from old */
    version_from("nd", "d", "live", &live);
    version_from("nd", "d", NULL, &gone); /* the delete of live */
    rec_k = encode_of((const struct sibling *[]){&old}, 1, &len_k);
    rec_d = encode_of((const struct sibling *[]){&live}, 1, &len_d);
    for (size_t m = 0; m < 2; m++) {
        for (int round = 0; round < 2 * MIXED_ATTEMPTS; round++) {
            int group_first = round / MIXED_ATTEMPTS, attempt = round % MIXED_ATTEMPTS;
            struct store_op ops[5], *lone_a[1] = {&ops[0]}, *grp[3] = {&ops[1], &ops[2], &ops[3]},
                                    *lone_w[1] = {&ops[4]};
            struct store_stats st0, st1;
            struct store *s;
            char sub[32];
            int done = 0;

            snprintf(sub, sizeof(sub), "mixed-%zu-%d-%d", m, group_first, attempt);
            s = open_logged(sub, modes[m]);
            ck_assert_int_eq(store_apply(s, "d", 1, &gone, NULL), 0); /* in the log */
            store_get_stats(s, &st0);
            ck_assert_uint_eq(st0.overlay_keys, 1);

            apply_op(&ops[0], "k", &newer);
            apply_record_op(&ops[1], "k", rec_k, len_k);
            apply_record_op(&ops[2], "d", rec_d, len_d);
            table_put_op(&ops[3], "ckpt", "at-1");
            store_op_init(&ops[4], STORE_OP_WRITE);
            ops[4].key = (const uint8_t *)"w";
            ops[4].key_len = 1;
            ops[4].value = (const uint8_t *)"client";
            ops[4].value_len = 6;
            ops[4].skip_written = true;
            for (int i = 0; i < 5; i++) {
                ops[i].done = count_done;
                ops[i].ctx = &done;
            }
            if (group_first) {
                ck_assert_int_eq(store_queue(s, grp, 3, true), 0);
                ck_assert_int_eq(store_queue(s, lone_a, 1, false), 0);
            } else {
                ck_assert_int_eq(store_queue(s, lone_a, 1, false), 0);
                ck_assert_int_eq(store_queue(s, grp, 3, true), 0);
            }
            ck_assert_int_eq(store_queue(s, lone_w, 1, false), 0);
            store_run_ready(s);
            wait_done(s, &done, 5);
            for (int i = 0; i < 5; i++) {
                ck_assert_int_eq(ops[i].result, 0);
            }
            store_get_stats(s, &st1);
            if (st1.commits - st0.commits > 1 && attempt + 1 < MIXED_ATTEMPTS) {
                store_close(s); /* the writer took part of the queue: again */
                continue;
            }
            assert_one_commit(&st0, &st1, 0, modes[m] == STORE_SYNC_NONE ? 0 : 1, 1);
            ck_assert_uint_eq(st1.overlay_keys, 0);
            ck_assert(!ops[2].changed); /* the delete stands */
            for (int pass = 0; pass < 2; pass++) {
                ck_assert(only(s, "k", &newer, false));
                ck_assert(only(s, "d", &gone, true));
                ck_assert(handoff_has(s, "ckpt", "at-1"));
                ck_assert_uint_eq(siblings_of(s, "w"), 1);
                if (pass == 0) {
                    store_close(s);
                    s = open_logged(sub, modes[m]);
                }
            }
            store_close(s);
            round = (group_first + 1) * MIXED_ATTEMPTS - 1; /* done: the other order next */
        }
    }
    free(rec_k);
    free(rec_d);
    sibling_deinit(&old);
    sibling_deinit(&newer);
    sibling_deinit(&live);
    sibling_deinit(&gone);
}
END_TEST

/* Bounds for a child that waits to be killed. */
#define KILL_CHILD_MAX_S 60
#define KILL_WAIT_MS 30000

/*
 * Run fn(sub, arg) in a child that says when it is done (a byte on a
 * pipe) and then waits; kill it with SIGKILL once it said so: no close,
 * no checkpoint, only what the log holds survives.  fn returns 0 or the
 * exit status to fail with.
 */
static void killed_after(int (*fn)(const char *sub, void *arg), const char *sub, void *arg)
{
    int fd[2], status;
    struct pollfd p;
    char c = 0;
    pid_t pid;

    ck_assert_int_eq(pipe(fd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int rc;
        close(fd[0]);
        alarm(KILL_CHILD_MAX_S);
        rc = fn(sub, arg);
        if (rc != 0) {
            _exit(rc);
        }
        if (write(fd[1], "!", 1) != 1) {
            _exit(9);
        }
        for (;;) {
            pause(); /* the parent kills; the alarm bounds the wait */
        }
    }
    close(fd[1]);
    p = (struct pollfd){fd[0], POLLIN, 0};
    ck_assert_int_eq(poll(&p, 1, KILL_WAIT_MS), 1);
    if (read(fd[0], &c, 1) != 1) {
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_abort_msg("child failed before the kill: status %d", status);
    }
    close(fd[0]);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
}

struct rec_arg {
    const uint8_t *rec;
    size_t len;
};

/* The child: a handoff batch and its checkpoint, one LMDB commit under `sync always`. */
static int child_group(const char *sub, void *arg)
{
    const struct rec_arg *r = arg;
    struct store *s = open_logged(sub, STORE_SYNC_ALWAYS);
    struct store_op ops[3], *group[3] = {&ops[0], &ops[1], &ops[2]};
    struct store_stats st0, st1;

    apply_record_op(&ops[0], "c1", r->rec, r->len);
    apply_record_op(&ops[1], "c2", r->rec, r->len);
    table_put_op(&ops[2], "ckpt", "at-2");
    store_get_stats(s, &st0);
    if (store_submit_atomic(s, group, 3) != 0) {
        return 3;
    }
    for (int i = 0; i < 3; i++) {
        if (store_wait(s, &ops[i]) != 0) {
            return 4;
        }
    }
    store_get_stats(s, &st1);
    if (st1.logged != st0.logged || st1.commits != st0.commits + 1 || st1.syncs != st0.syncs + 1 ||
        !handoff_has(s, "ckpt", "at-2")) {
        return 5; /* not one synced LMDB commit */
    }
    return 0; /* no store_close(): the parent kills this process */
}

/*
 * A child killed after its handoff batch was committed (and fsynced): the
 * next open finds the records and the checkpoint together in LMDB, the log
 * empty.
 */
START_TEST(test_handoff_group_killed)
{
    struct three t;
    struct rec_arg r;
    struct store *s;
    struct store_stats st;
    uint8_t *rec;

    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.a, &t.c}, 2, &r.len);
    r.rec = rec;
    killed_after(child_group, "k", &r);
    ck_assert_int_eq(wal_size("k"), WAL_HEADER_LEN);
    s = open_logged("k", STORE_SYNC_ALWAYS);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.overlay_keys, 0); /* nothing to replay: LMDB holds them */
    ck_assert(handoff_has(s, "ckpt", "at-2"));
    ck_assert(holds(s, "c1", &t.a) && holds(s, "c2", &t.c));
    store_close(s);
    ck_assert_int_eq(wal_size("k"), WAL_HEADER_LEN);
    s = open_logged("k", STORE_SYNC_ALWAYS);
    ck_assert(handoff_has(s, "ckpt", "at-2"));
    ck_assert_uint_eq(siblings_of(s, "c1"), 2);
    store_close(s);
    free(rec);
    three_free(&t);
}
END_TEST

/* The child of meta_put_killed: writes in the log, a meta put through LMDB, a write after it. */
static int child_meta(const char *sub, void *arg)
{
    struct store *s = open_logged(sub, *(const enum store_sync *)arg);
    struct store_stats st0, st1;
    struct store_op op;

    if (store_write(s, "before", 6, "b", 1, false, NULL, NULL) != 0) {
        return 3;
    }
    table_put_op(&op, "ckpt", "logged");
    if (store_submit(s, &op) != 0 || store_wait(s, &op) != 0) {
        return 4;
    }
    store_get_stats(s, &st0);
    store_op_init(&op, STORE_OP_TABLE_PUT);
    op.table = STORE_TABLE_META;
    op.key = (const uint8_t *)"gate";
    op.key_len = 4;
    op.value = (const uint8_t *)"m";
    op.value_len = 1;
    if (store_submit(s, &op) != 0 || store_wait(s, &op) != 0) {
        return 5;
    }
    store_get_stats(s, &st1);
    if (st1.checkpoints != st0.checkpoints || st1.overlay_keys != 1) {
        return 6; /* the meta put left the log alone */
    }
    return store_write(s, "after", 5, "a", 1, false, NULL, NULL) != 0 ? 7 : 0;
}

/*
 * Killed between a meta put (through LMDB, the log left alone) and the next
 * checkpoint, in each sync mode: the next open finds the meta value, and
 * the log, replayed, still has the writes and the handoff-table put before
 * the meta put and the write after it; a write after the open is stamped
 * above the one before the kill.
 */
START_TEST(test_meta_put_killed)
{
    static const enum store_sync modes[] = {STORE_SYNC_ALWAYS, STORE_SYNC_BATCH, STORE_SYNC_NONE};

    for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
        char sub[16], got[8];
        struct record r = {0};
        struct sibling v;
        uint64_t before;
        struct store *s;
        size_t len;

        snprintf(sub, sizeof(sub), "meta%zu", m);
        killed_after(child_meta, sub, (void *)&modes[m]);
        ck_assert_int_gt(wal_size(sub), WAL_HEADER_LEN);
        s = open_logged(sub, modes[m]);
        ck_assert_int_eq(store_table_get(s, STORE_TABLE_META, "gate", 4, got, sizeof(got), &len),
                         0);
        ck_assert(len == 1 && got[0] == 'm');
        ck_assert(handoff_has(s, "ckpt", "logged"));
        ck_assert_uint_eq(siblings_of(s, "before"), 1);
        ck_assert_int_eq(store_get(s, "after", 5, &r), 0);
        ck_assert_uint_eq(r.n, 1);
        before = r.s[0].hlc;
        record_deinit(&r);
        sibling_init(&v);
        ck_assert_int_eq(store_write(s, "later", 5, "l", 1, false, NULL, &v), 0);
        ck_assert_uint_gt(v.hlc, before);
        sibling_deinit(&v);
        store_close(s);
        ck_assert_int_eq(wal_size(sub), WAL_HEADER_LEN);
    }
}
END_TEST

/* The child: delete "ckpt" (LMDB has it) in the log, and see it gone. */
static int child_delete(const char *sub, void *arg)
{
    struct store *s = open_logged(sub, STORE_SYNC_ALWAYS);
    struct store_stats st0, st1;
    struct store_op op;

    (void)arg;
    table_del_op(&op, "ckpt");
    store_get_stats(s, &st0);
    if (store_submit(s, &op) != 0 || store_wait(s, &op) != 0) {
        return 3;
    }
    store_get_stats(s, &st1);
    if (st1.logged != st0.logged + 1 || st1.checkpoints != st0.checkpoints) {
        return 4;
    }
    return handoff_has(s, "ckpt", "at-1") || !handoff_has(s, "keep", "x") ? 5 : 0;
}

/*
 * A TABLE_PUT delete of a key LMDB holds, logged and then replayed after
 * a kill, removes the key (and the checkpoint after it removes it from
 * LMDB); the other key stays.
 */
START_TEST(test_handoff_delete_replayed)
{
    struct store *s = open_logged("del", STORE_SYNC_NONE);
    struct store_op ops[2], *list[2] = {&ops[0], &ops[1]};

    table_put_op(&ops[0], "ckpt", "at-1");
    table_put_op(&ops[1], "keep", "x");
    run_atomic(s, list, 2, 0);
    store_close(s); /* both in LMDB */
    ck_assert_int_eq(wal_size("del"), WAL_HEADER_LEN);

    killed_after(child_delete, "del", NULL);
    ck_assert_int_gt(wal_size("del"), WAL_HEADER_LEN);
    s = open_logged("del", STORE_SYNC_NONE);
    ck_assert(!handoff_has(s, "ckpt", "at-1"));
    ck_assert(handoff_has(s, "keep", "x"));
    store_close(s);
    s = open_logged("del", STORE_SYNC_NONE);
    ck_assert(!handoff_has(s, "ckpt", "at-1"));
    ck_assert(handoff_has(s, "keep", "x"));
    store_close(s);
}
END_TEST

/*
 * A log as the build before table items wrote it: the header, then one
 * record of a put and a mark, laid out byte by byte here (not through
 * wal.c's writer) and checksummed as wal.c specifies.  It opens, and the
 * put is replayed.
 */
START_TEST(test_old_log_opens)
{
    uint8_t key[crypto_shorthash_KEYBYTES] = {'R', 'K', 'W', 'A', 'L', 's', 'u', 'm'};
    uint8_t head[WAL_HEADER_LEN], rec_head[WAL_RECORD_HEAD], body[256], sum[crypto_shorthash_BYTES];
    uint8_t lenbody[4 + sizeof(body)];
    struct store *s = open_logged("old", STORE_SYNC_NONE);
    struct store_stats st;
    struct three t;
    uint64_t gen, pos = store_position(s, "legacy", 6);
    uint8_t *rec;
    size_t len, n = 0;
    char wal[600];
    FILE *f;

    store_close(s); /* the log: its header alone, naming the generation */
    three_make(&t);
    rec = encode_of((const struct sibling *[]){&t.b}, 1, &len);
    ck_assert_uint_lt(len, 200);
    body[n++] = 1; /* put */
    body[n++] = 0;
    body[n++] = 8 + 6;
    bytes_put_be64(body + n, pos);
    memcpy(body + n + 8, "legacy", 6);
    n += 14;
    bytes_put_be32(body + n, (uint32_t)len);
    memcpy(body + n + 4, rec, len);
    n += 4 + len;
    body[n++] = 2; /* mark */
    bytes_put_be64(body + n, t.b.hlc);
    n += 8;

    snprintf(wal, sizeof(wal), "%s/old/wal", tmp_dir);
    f = fopen(wal, "r+b");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fread(head, 1, sizeof(head), f), sizeof(head));
    ck_assert_int_eq(wal_header_parse(head, sizeof(head), &gen), 0);
    ck_assert_int_ge(sodium_init(), 0);
    bytes_put_be64(key + 8, gen);
    bytes_put_be32(lenbody, (uint32_t)n);
    memcpy(lenbody + 4, body, n);
    crypto_shorthash(sum, lenbody, 4 + n, key);
    memcpy(rec_head, sum, 8);
    memcpy(rec_head + 8, lenbody, 4);
    ck_assert_int_eq(fseek(f, WAL_HEADER_LEN, SEEK_SET), 0);
    ck_assert_uint_eq(fwrite(rec_head, 1, sizeof(rec_head), f), sizeof(rec_head));
    ck_assert_uint_eq(fwrite(body, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);

    s = open_logged("old", STORE_SYNC_NONE);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.overlay_keys, 1); /* replayed */
    ck_assert_uint_eq(siblings_of(s, "legacy"), 1);
    ck_assert(holds(s, "legacy", &t.b));
    store_close(s);
    s = open_logged("old", STORE_SYNC_NONE);
    ck_assert(holds(s, "legacy", &t.b));
    store_close(s);
    free(rec);
    three_free(&t);
}
END_TEST

/* --- store_arc_digest() ----------------------------------------------------- */

/* Two concurrent versions per key of the digest tests, from nodes "x" and "y". */
struct versions {
    struct sibling x[DIGEST_KEYS], y[DIGEST_KEYS];
};

static void digest_key(int i, char *out, size_t cap)
{
    snprintf(out, cap, "dkey-%d", i);
}

static struct versions *versions_make(void)
{
    struct versions *v = calloc(1, sizeof(*v));
    struct store *x, *y;
    char key[32], value[32];

    ck_assert_ptr_nonnull(v);
    x = open_store("vx", "x");
    y = open_store("vy", "y");
    for (int i = 0; i < DIGEST_KEYS; i++) {
        digest_key(i, key, sizeof(key));
        snprintf(value, sizeof(value), "v%d", i);
        sibling_init(&v->x[i]);
        sibling_init(&v->y[i]);
        ck_assert_int_eq(
            store_write(x, key, strlen(key), value, strlen(value), false, NULL, &v->x[i]), 0);
        ck_assert_int_eq(store_write(y, key, strlen(key), "w", 1, false, NULL, &v->y[i]), 0);
    }
    store_close(x);
    store_close(y);
    return v;
}

static void versions_free(struct versions *v)
{
    for (int i = 0; i < DIGEST_KEYS; i++) {
        sibling_deinit(&v->x[i]);
        sibling_deinit(&v->y[i]);
    }
    free(v);
}

/* Every key with both versions, x first or y first; every third key x alone. */
static void fill(struct store *s, const struct versions *v, bool y_first)
{
    char key[32];

    for (int i = 0; i < DIGEST_KEYS; i++) {
        const struct sibling *one = y_first && i % 3 != 0 ? &v->y[i] : &v->x[i];
        const struct sibling *two = y_first ? &v->x[i] : &v->y[i];
        digest_key(i, key, sizeof(key));
        ck_assert_int_eq(store_apply(s, key, strlen(key), one, NULL), 0);
        if (i % 3 != 0) {
            ck_assert_int_eq(store_apply(s, key, strlen(key), two, NULL), 0);
        }
    }
}

static void digest(struct store *s, uint64_t start, uint64_t end, unsigned parts,
                   uint8_t (*out)[STORE_DIGEST_LEN], uint64_t *keys)
{
    ck_assert_int_eq(store_arc_digest(s, start, end, parts, out, keys), 0);
}

/* The boundary b(i) of store.h's rule, computed here on its own. */
static uint64_t boundary(uint64_t start, uint64_t end, unsigned parts, unsigned i)
{
    unsigned __int128 len = (uint64_t)(end - start);

    if (len == 0) {
        len = (unsigned __int128)1 << 64;
    }
    return start + (uint64_t)(len * i / parts);
}

/* Each sub-arc's digest is the digest of its own arc, cut by boundary(). */
static void check_cuts(struct store *s, uint64_t start, uint64_t end, unsigned parts)
{
    uint8_t all[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN], one[1][STORE_DIGEST_LEN];
    uint64_t keys, sum = 0, n;

    digest(s, start, end, parts, all, &keys);
    for (unsigned i = 0; i < parts; i++) {
        uint64_t lo = boundary(start, end, parts, i), hi = boundary(start, end, parts, i + 1);
        ck_assert_uint_ne(lo, hi); /* no empty sub-arc in these tests */
        digest(s, lo, hi, 1, one, &n);
        ck_assert_mem_eq(one[0], all[i], STORE_DIGEST_LEN);
        sum += n;
    }
    ck_assert_uint_eq(sum, keys);
}

/*
 * Two stores given the same versions in opposite orders hold different
 * bytes but equal digests, for every arc shape; the sub-arcs follow the
 * header's cut; parts out of range are refused; an empty arc part digests
 * zero bytes.
 */
START_TEST(test_digest_order_free)
{
    struct versions *v = versions_make();
    struct store *a = open_store("a", "na"), *b = open_store("b", "nb");
    uint8_t da[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN],
        db[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN];
    uint8_t empty[STORE_DIGEST_LEN];
    const uint64_t arcs[][2] = {
        {0, 0},
        {123456789, 123456789},
        {1ull << 62, 3ull << 62},
        {3ull << 62, 1ull << 62},
        {UINT64_MAX, 1ull << 63},
        {5, 4},
    };
    uint64_t ka, kb, stat_keys, bytes;
    struct raw ra, rb;

    fill(a, v, false);
    fill(b, v, true);
    ra = stored(a, "dkey-1");
    rb = stored(b, "dkey-1");
    ck_assert_uint_eq(ra.len, rb.len);
    ck_assert_int_ne(memcmp(ra.p, rb.p, ra.len), 0); /* the siblings lie in another order */
    free(ra.p);
    free(rb.p);
    for (size_t i = 0; i < sizeof(arcs) / sizeof(arcs[0]); i++) {
        for (unsigned parts = 1; parts <= STORE_DIGEST_PARTS_MAX; parts *= 4) {
            digest(a, arcs[i][0], arcs[i][1], parts, da, &ka);
            digest(b, arcs[i][0], arcs[i][1], parts, db, &kb);
            ck_assert_uint_eq(ka, kb);
            ck_assert_mem_eq(da, db, parts * STORE_DIGEST_LEN);
            ck_assert_int_eq(store_arc_stats(a, arcs[i][0], arcs[i][1], &stat_keys, &bytes), 0);
            ck_assert_uint_eq(ka, stat_keys);
        }
        check_cuts(a, arcs[i][0], arcs[i][1], 16);
    }
    digest(a, 7, 7, 1, da, &ka);
    ck_assert_uint_eq(ka, DIGEST_KEYS); /* the whole circle */
    ck_assert_int_eq(store_arc_digest(a, 0, 0, 0, da, NULL), RK_EINVAL);
    ck_assert_int_eq(store_arc_digest(a, 0, 0, STORE_DIGEST_PARTS_MAX + 1, da, NULL), RK_EINVAL);
    /* an arc of 3 positions in 8 parts: most are empty, the digest of zero bytes */
    crypto_generichash(empty, sizeof(empty), NULL, 0, NULL, 0);
    digest(a, 10, 13, 8, da, &ka);
    ck_assert_uint_eq(ka, 0);
    for (int i = 0; i < 8; i++) {
        ck_assert_mem_eq(da[i], empty, STORE_DIGEST_LEN);
    }
    versions_free(v);
    store_close(a);
    store_close(b);
}
END_TEST

/* The sub-arc of pos in the arc (start, end] cut in parts (store.h's rule). */
static unsigned part_of(uint64_t start, uint64_t end, unsigned parts, uint64_t pos)
{
    for (unsigned i = 0; i < parts; i++) {
        uint64_t lo = boundary(start, end, parts, i), hi = boundary(start, end, parts, i + 1);
        if ((uint64_t)(pos - lo - 1) < (uint64_t)(hi - lo)) {
            return i;
        }
    }
    ck_abort_msg("position %llu not on the arc", (unsigned long long)pos);
    return 0;
}

/*
 * One key that differs (a third sibling on b) changes exactly the digest of
 * its sub-arc, on a plain arc, a wrapping one, the whole circle and a
 * short arc around the key.
 */
START_TEST(test_digest_one_key_differs)
{
    struct versions *v = versions_make();
    struct store *a = open_store("a", "na"), *b = open_store("b", "nb");
    uint8_t da[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN],
        db[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN];
    struct sibling extra;
    uint64_t pos = store_position(a, "dkey-7", 6), ka, kb;
    bool upper = pos >= 1ull << 63;
    uint64_t arcs[][2] = {{pos - (1ull << 60), pos + (1ull << 60)},
                          /* wraps (start > end), the key before the wrap or after it */
                          {upper ? pos - (1ull << 50) : UINT64_MAX - (1ull << 50),
                           upper ? 1ull << 50 : pos + (1ull << 50)},
                          {pos ^ (1ull << 63), pos ^ (1ull << 63)},
                          {pos - (1ull << 20), pos + (1ull << 20)}};

    sibling_init(&extra);
    version_from("nz", "dkey-7", "extra", &extra);
    fill(a, v, false);
    fill(b, v, false);
    ck_assert_int_eq(store_apply(b, "dkey-7", 6, &extra, NULL), 0);
    for (size_t i = 0; i < sizeof(arcs) / sizeof(arcs[0]); i++) {
        unsigned parts = 16, want = part_of(arcs[i][0], arcs[i][1], parts, pos);
        digest(a, arcs[i][0], arcs[i][1], parts, da, &ka);
        digest(b, arcs[i][0], arcs[i][1], parts, db, &kb);
        ck_assert_uint_eq(ka, kb);
        for (unsigned j = 0; j < parts; j++) {
            bool same = memcmp(da[j], db[j], STORE_DIGEST_LEN) == 0;
            ck_assert_msg(same == (j != want), "arc %zu part %u (want %u) same %d", i, j, want,
                          same);
        }
        digest(a, arcs[i][0], arcs[i][1], 1, da, &ka);
        digest(b, arcs[i][0], arcs[i][1], 1, db, &kb);
        ck_assert_int_ne(memcmp(da[0], db[0], STORE_DIGEST_LEN), 0);
    }
    /* off the key's arc, nothing differs */
    digest(a, pos, pos - 1, 4, da, &ka);
    digest(b, pos, pos - 1, 4, db, &kb);
    ck_assert_uint_eq(ka, DIGEST_KEYS - 1);
    ck_assert_mem_eq(da, db, 4 * STORE_DIGEST_LEN);
    sibling_deinit(&extra);
    versions_free(v);
    store_close(a);
    store_close(b);
}
END_TEST

/* parts 1 and 16 count the same keys, which store_arc_stats() counts too. */
START_TEST(test_digest_key_counts)
{
    struct versions *v = versions_make();
    struct store *a = open_store("a", "na");
    uint8_t d[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN];
    uint64_t k1, k16, keys, bytes, start = 1ull << 63, end = 1ull << 62;

    fill(a, v, false);
    digest(a, start, end, 1, d, &k1);
    digest(a, start, end, 16, d, &k16);
    ck_assert_int_eq(store_arc_stats(a, start, end, &keys, &bytes), 0);
    ck_assert_uint_eq(k1, k16);
    ck_assert_uint_eq(k1, keys);
    ck_assert_uint_gt(k1, 0);
    ck_assert_uint_lt(k1, DIGEST_KEYS);
    digest(a, 0, 0, 1, d, &k1);
    digest(a, 0, 0, 16, d, &k16);
    ck_assert_uint_eq(k1, DIGEST_KEYS);
    ck_assert_uint_eq(k16, DIGEST_KEYS);
    ck_assert_int_eq(store_arc_digest(a, 0, 0, 16, d, NULL), 0);
    versions_free(v);
    store_close(a);
}
END_TEST

/*
 * A store whose writes are still only in the write-ahead log digests as
 * one that has them in LMDB: the digest reads through the log.
 */
START_TEST(test_digest_sees_log)
{
    struct versions *v = versions_make();
    struct store *a = open_store("a", "na"), *b;
    uint8_t da[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN],
        db[STORE_DIGEST_PARTS_MAX][STORE_DIGEST_LEN];
    struct store_stats st;
    uint64_t ka, kb;

    fill(a, v, false);
    store_close(a); /* checkpointed: all in LMDB */
    a = open_store("a", "na");
    b = open_with("b", "nb", 0, true);
    fill(b, v, true);
    store_get_stats(b, &st);
    ck_assert_uint_eq(st.overlay_keys, DIGEST_KEYS);
    digest(a, 0, 0, 8, da, &ka);
    digest(b, 0, 0, 8, db, &kb);
    ck_assert_uint_eq(ka, DIGEST_KEYS);
    ck_assert_uint_eq(kb, DIGEST_KEYS);
    ck_assert_mem_eq(da, db, 8 * STORE_DIGEST_LEN);
    versions_free(v);
    store_close(a);
    store_close(b);
}
END_TEST

/*
 * A key of one sibling is hashed from its stored bytes without decoding
 * them: the digest is still the one of the canonical form that
 * record_canonical() gives, for a value, a tombstone and an expiring value.
 */
START_TEST(test_digest_one_sibling_form)
{
    struct store *a = open_store("a", "na");
    const char *keys[] = {"one-value", "one-gone", "one-expiring"};

    ck_assert_int_eq(store_write(a, keys[0], 9, "v", 1, false, NULL, NULL), 0);
    ck_assert_int_eq(store_write(a, keys[1], 8, NULL, 0, true, NULL, NULL), 0);
    {
        struct store_op op;
        store_op_init(&op, STORE_OP_WRITE);
        op.key = (const uint8_t *)keys[2];
        op.key_len = 12;
        op.value = (const uint8_t *)"x";
        op.value_len = 1;
        op.expiry = STORE_EXPIRY_SET;
        op.expire_ms = 4102444800000ull; /* 2100 */
        ck_assert_int_eq(store_submit(a, &op), 0);
        ck_assert_int_eq(store_wait(a, &op), 0);
        sibling_deinit(&op.written);
    }
    for (size_t i = 0; i < 3; i++) {
        size_t len = strlen(keys[i]), canon_len;
        uint64_t pos = store_position(a, keys[i], len), k;
        uint8_t got[1][STORE_DIGEST_LEN], want[STORE_DIGEST_LEN], head[12], *canon;
        crypto_generichash_state st;
        struct record r;

        record_init(&r);
        ck_assert_int_eq(store_get(a, keys[i], len, &r), 0);
        ck_assert_uint_eq(r.n, 1);
        ck_assert_int_eq(record_canonical(&r, &canon, &canon_len), 0);
        crypto_generichash_init(&st, NULL, 0, STORE_DIGEST_LEN);
        bytes_put_be64(head, pos);
        bytes_put_be32(head + 8, (uint32_t)len);
        crypto_generichash_update(&st, head, sizeof(head));
        crypto_generichash_update(&st, (const uint8_t *)keys[i], len);
        crypto_generichash_update(&st, canon, canon_len);
        crypto_generichash_final(&st, want, STORE_DIGEST_LEN);
        /* the arc holding this key alone */
        ck_assert_int_eq(store_arc_digest(a, pos - 1, pos, 1, got, &k), 0);
        ck_assert_uint_eq(k, 1);
        ck_assert_mem_eq(got[0], want, STORE_DIGEST_LEN);
        free(canon);
        record_deinit(&r);
    }
    store_close(a);
}
END_TEST

static Suite *store_handoff_suite(void)
{
    Suite *s = suite_create("store_handoff");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"apply_record_merges", test_apply_record_merges},
        {"apply_record_damaged", test_apply_record_damaged},
        {"apply_record_sibling_cap", test_apply_record_sibling_cap},
        {"apply_record_atomic", test_apply_record_atomic},
        {"apply_record_one_sibling", test_apply_record_one_sibling},
        {"apply_record_list_and_queue", test_apply_record_list_and_queue},
        {"apply_record_reopen", test_apply_record_reopen},
        {"handoff_group_lmdb", test_handoff_group_lmdb},
        {"handoff_group_killed", test_handoff_group_killed},
        {"meta_put_killed", test_meta_put_killed},
        {"handoff_group_mixed_batch", test_handoff_group_mixed_batch},
        {"handoff_groups_one_commit", test_handoff_groups_one_commit},
        {"handoff_groups_map_full", test_handoff_groups_map_full},
        {"handoff_groups_random_against_model", test_handoff_groups_random_against_model},
        {"handoff_delete_replayed", test_handoff_delete_replayed},
        {"old_log_opens", test_old_log_opens},
        {"digest_order_free", test_digest_order_free},
        {"digest_one_key_differs", test_digest_one_key_differs},
        {"digest_key_counts", test_digest_key_counts},
        {"digest_sees_log", test_digest_sees_log},
        {"digest_one_sibling_form", test_digest_one_sibling_form},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(store_handoff_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
