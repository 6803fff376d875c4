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
 * with.  One directory per test program: the state is static here.
 */
#ifndef RINGKV_TEST_STORE_DIR_H
#define RINGKV_TEST_STORE_DIR_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#endif
