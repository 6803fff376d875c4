/*
 * test_store_dir.h - the temporary data directory and the fake wall clock
 * of the store's unit suites (check_store.c, check_store_safety.c,
 * check_store_edges.c).
 *
 * tmp_setup() makes a fresh directory under $TMPDIR (or /tmp) named after
 * the suite, TEST_STORE_DIR_NAME, which the suite defines before including
 * this header; tmp_teardown() removes it with all it holds.  A suite uses
 * them as a checked fixture, so every test starts from an empty directory.
 * fake_wall() is the store's wall clock: it returns fake_now_ms, a fixed
 * time (2027) that a test may move by hand, so no test depends on the
 * machine's clock.  cluster_a is the cluster id the suites open stores
 * with.  store_config_in() fills a store's settings for a directory in
 * it (node n1, cluster_a, the fake clock, sync none); assert_store_refused()
 * opens one and expects a refusal naming the problem.  One directory per
 * test program: the state is static here.
 */
#ifndef RINGKV_TEST_STORE_DIR_H
#define RINGKV_TEST_STORE_DIR_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

#ifndef TEST_STORE_DIR_NAME
#error "define TEST_STORE_DIR_NAME (the suite's name) before including test_store_dir.h"
#endif

static char tmp_dir[256];
static const uint8_t cluster_a[] = "cluster-a";

static inline void tmp_setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, sizeof(tmp_dir), "%s/" TEST_STORE_DIR_NAME ".XXXXXX", base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

static inline void tmp_teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* A wall clock the tests move by hand; it starts in 2027. */
static uint64_t fake_now_ms = 1800000000000ull;

static inline uint64_t fake_wall(void *ctx)
{
    (void)ctx;
    return fake_now_ms;
}

/* Settings of a store in tmp_dir/sub; path (cap bytes) holds its path. */
static inline void store_config_in(struct store_config *c, char *path, size_t cap, const char *sub)
{
    store_config_defaults(c);
    snprintf(path, cap, "%s/%s", tmp_dir, sub);
    c->path = path;
    c->node_id = "n1";
    c->cluster_id = cluster_a;
    c->cluster_id_len = sizeof(cluster_a) - 1;
    c->wall_ms = fake_wall;
    c->sync = STORE_SYNC_NONE;
}

/* Open sub and expect a refusal whose line contains want. */
static inline void assert_store_refused(const char *sub, const char *want)
{
    struct store_config c;
    struct store *s = NULL;
    char path[512], err[512];

    store_config_in(&c, path, sizeof(path), sub);
    ck_assert_int_ne(store_open(&s, &c, err, sizeof(err)), 0);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(err, want) != NULL, "refusal '%s' does not say '%s'", err, want);
}

#endif
