/*
 * check_store_actor.c - unit tests of the store's actor (storage/store.c,
 * meta actor and actor_life): the id a node's writes count under in vector
 * clocks, one per life of its data directory.  The actor has the form the
 * layout gives and is a valid clock id for any node id; it survives a
 * clean reopen; a wiped directory, a directory from before actors, a crash
 * (a life never closed) and a copy put back as new files each get a new
 * one; the names are reserved.  And the case it exists for (Riak's kv679):
 * a node whose directory was wiped writes a key again, and a replica that
 * holds the key's first version keeps the new write instead of taking it
 * for the version it already has.
 */
#include <check.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_store_actor"
#include "test_store_dir.h"

static struct store *open_node(const char *sub, const char *node, enum record_conflicts mode)
{
    struct store_config c;
    struct store *s;
    char path[512], err[256];

    store_config_in(&c, path, sizeof(path), sub);
    c.node_id = node;
    c.conflicts = mode;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open %s: %s", sub, err);
    return s;
}

static struct store *open_sub(const char *sub)
{
    return open_node(sub, "n1", RECORD_SIBLINGS);
}

/* The actor of sub after one clean open and close; out holds RING_NAME_MAX + 1 bytes. */
static void actor_of(const char *sub, char *out)
{
    struct store *s = open_sub(sub);
    snprintf(out, RING_NAME_MAX + 1, "%s", store_actor(s));
    store_close(s);
}

static void wipe(const char *sub)
{
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", tmp_dir, sub);
    ck_assert_int_eq(system(cmd), 0);
}

/* True when a is prefix, ':', then 8 lowercase hex digits. */
static bool actor_form(const char *a, const char *prefix)
{
    size_t n = strlen(prefix);

    if (strncmp(a, prefix, n) != 0 || a[n] != ':' || strlen(a) != n + 9) {
        return false;
    }
    for (size_t i = n + 1; i < n + 9; i++) {
        if (!((a[i] >= '0' && a[i] <= '9') || (a[i] >= 'a' && a[i] <= 'f'))) {
            return false;
        }
    }
    return true;
}

/* The node id, then 8 random hex digits; a 64-byte node id is cut to 55 bytes. */
START_TEST(test_actor_form)
{
    char node[RING_NAME_MAX + 1], prefix[RING_NAME_MAX + 1];
    struct store *s = open_sub("d");
    struct sibling w;

    ck_assert_msg(actor_form(store_actor(s), "n1"), "actor %s", store_actor(s));
    store_close(s);
    memset(node, 'x', RING_NAME_MAX);
    node[RING_NAME_MAX] = '\0';
    s = open_node("long", node, RECORD_SIBLINGS);
    snprintf(prefix, sizeof(prefix), "%.55s", node);
    ck_assert_msg(actor_form(store_actor(s), prefix), "actor %s", store_actor(s));
    ck_assert_uint_eq(strlen(store_actor(s)), RING_NAME_MAX);
    ck_assert(ring_name_valid(store_actor(s), strlen(store_actor(s))));
    /* a write counts under it, and the version's node stays the node id */
    sibling_init(&w);
    ck_assert_int_eq(store_write(s, "k", 1, "v", 1, false, NULL, &w), 0);
    ck_assert_uint_eq(w.clock.n, 1);
    ck_assert_str_eq(w.clock.e[0].id, store_actor(s));
    ck_assert_uint_eq(w.clock.e[0].counter, w.hlc); /* a key's first counter is its write's hlc */
    ck_assert_str_eq(w.node, node);
    sibling_deinit(&w);
    store_close(s);
}
END_TEST

START_TEST(test_actor_survives_reopen)
{
    char a[RING_NAME_MAX + 1], b[RING_NAME_MAX + 1];
    struct store *s = open_sub("d");

    snprintf(a, sizeof(a), "%s", store_actor(s));
    ck_assert_int_eq(store_write(s, "k", 1, "v", 1, false, NULL, NULL), 0);
    store_close(s);
    actor_of("d", b);
    ck_assert_str_eq(a, b);
    actor_of("d", b);
    ck_assert_str_eq(a, b);
}
END_TEST

START_TEST(test_wiped_directory_new_actor)
{
    char a[RING_NAME_MAX + 1], b[RING_NAME_MAX + 1];

    actor_of("d", a);
    wipe("d");
    actor_of("d", b);
    ck_assert_str_ne(a, b);
}
END_TEST

/* Delete meta names[0..n) of sub, as in a directory from before they existed. */
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

/* A directory from before actors gets one at its first open, keeps it, and keeps its data. */
START_TEST(test_directory_without_actor)
{
    static const char *const names[] = {"actor", "actor_life"};
    char a[RING_NAME_MAX + 1], b[RING_NAME_MAX + 1];
    struct store *s = open_sub("d");
    struct record r;
    size_t len;

    ck_assert_int_eq(store_write(s, "k", 1, "v", 1, false, NULL, NULL), 0);
    store_close(s);
    meta_drop("d", names, 2);
    s = open_sub("d");
    snprintf(a, sizeof(a), "%s", store_actor(s));
    ck_assert_msg(actor_form(a, "n1"), "actor %s", a);
    ck_assert_int_eq(store_table_get(s, STORE_TABLE_META, "actor", 5, b, sizeof(b), &len), 0);
    ck_assert_uint_eq(len, strlen(a));
    ck_assert_mem_eq(b, a, len);
    record_init(&r);
    ck_assert_int_eq(store_get(s, "k", 1, &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_mem_eq(r.s[0].value, "v", 1);
    record_deinit(&r);
    store_close(s);
    actor_of("d", b);
    ck_assert_str_eq(a, b);
}
END_TEST

/*
 * A life that ended without a clean close (here a process that exits with
 * the store open; under `sync none` its last counters might be lost) is
 * followed by a new actor.
 */
START_TEST(test_crash_new_actor)
{
    char a[RING_NAME_MAX + 1] = {0}, b[RING_NAME_MAX + 1];
    int fds[2], status;
    pid_t pid;

    ck_assert_int_eq(pipe(fds), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct store *s = open_sub("d");
        int ok = store_write(s, "k", 1, "v", 1, false, NULL, NULL) == 0 &&
                 write(fds[1], store_actor(s), strlen(store_actor(s))) > 0;
        _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    ck_assert_int_gt(read(fds[0], a, RING_NAME_MAX), 0);
    close(fds[0]);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    actor_of("d", b);
    ck_assert_str_ne(a, b);
    /* that life closed cleanly: the next keeps it */
    actor_of("d", a);
    ck_assert_str_eq(a, b);
}
END_TEST

/* A copy put back as new files gets a new actor; the original keeps its own. */
START_TEST(test_copy_new_actor)
{
    char a[RING_NAME_MAX + 1], b[RING_NAME_MAX + 1], cmd[1200];

    actor_of("d", a);
    snprintf(cmd, sizeof(cmd), "mkdir -m 700 '%s/copy' && cp '%s/d/data.mdb' '%s/copy/'", tmp_dir,
             tmp_dir, tmp_dir);
    ck_assert_int_eq(system(cmd), 0);
    actor_of("copy", b);
    ck_assert_str_ne(a, b);
    actor_of("d", b);
    ck_assert_str_eq(a, b);
}
END_TEST

static int table_put(struct store *s, const char *k, const char *v)
{
    struct store_op op;
    store_op_init(&op, STORE_OP_TABLE_PUT);
    op.table = STORE_TABLE_META;
    op.key = (const uint8_t *)k;
    op.key_len = strlen(k);
    op.value = (const uint8_t *)v;
    op.value_len = strlen(v);
    ck_assert_int_eq(store_submit(s, &op), 0);
    return store_wait(s, &op);
}

START_TEST(test_actor_names_reserved)
{
    struct store *s = open_sub("d");

    ck_assert_int_eq(table_put(s, "actor", "n1:00000000"), RK_EINVAL);
    ck_assert_int_eq(table_put(s, "actor_life", "x"), RK_EINVAL);
    store_close(s);
}
END_TEST

/*
 * Riak's kv679 through the store: node n1 writes k = x, which replica n2
 * takes; n1's directory is wiped, and n1 writes k = y on its empty
 * record.  Counted under the node id, both writes were (n1, 1): n2 took
 * y's version for the one it had and dropped an acknowledged write.  Under
 * the actor of each life they differ: y becomes a sibling of x, or under
 * lww the newer write wins.
 */
static void wiped_writer(enum record_conflicts mode)
{
    struct store *n1 = open_node("n1", "n1", mode), *n2 = open_node("n2", "n2", mode);
    struct sibling x, y;
    struct record r;
    bool changed = false;

    sibling_init(&x);
    sibling_init(&y);
    record_init(&r);
    ck_assert_int_eq(store_write(n1, "k", 1, "x", 1, false, NULL, &x), 0);
    ck_assert_int_eq(store_apply(n2, "k", 1, &x, &changed), 0);
    ck_assert(changed);
    store_close(n1);
    wipe("n1");
    fake_now_ms += 1000;
    n1 = open_node("n1", "n1", mode);
    ck_assert_int_eq(store_write(n1, "k", 1, "y", 1, false, NULL, &y), 0);
    ck_assert_int_eq(store_apply(n2, "k", 1, &y, &changed), 0);
    ck_assert_msg(changed, "the replica dropped the wiped node's new write");
    ck_assert_uint_eq(vclock_get(&y.clock, "n1"), 0);
    ck_assert_int_eq(store_get(n2, "k", 1, &r), 0);
    if (mode == RECORD_SIBLINGS) {
        ck_assert_uint_eq(r.n, 2);
    } else {
        ck_assert_uint_eq(r.n, 1);
        ck_assert_mem_eq(r.s[0].value, "y", 1);
    }
    record_deinit(&r);
    sibling_deinit(&x);
    sibling_deinit(&y);
    store_close(n1);
    store_close(n2);
}

START_TEST(test_wiped_writer_siblings)
{
    wiped_writer(RECORD_SIBLINGS);
}
END_TEST

START_TEST(test_wiped_writer_lww)
{
    wiped_writer(RECORD_LWW);
}
END_TEST

static Suite *actor_suite(void)
{
    Suite *su = suite_create("store_actor");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"form", test_actor_form},
        {"survives_reopen", test_actor_survives_reopen},
        {"wiped", test_wiped_directory_new_actor},
        {"without_actor", test_directory_without_actor},
        {"crash", test_crash_new_actor},
        {"copy", test_copy_new_actor},
        {"reserved", test_actor_names_reserved},
        {"wiped_writer_siblings", test_wiped_writer_siblings},
        {"wiped_writer_lww", test_wiped_writer_lww},
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
    SRunner *sr = srunner_create(actor_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
