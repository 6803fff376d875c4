/*
 * check_gossip_restore.c - unit tests of gossip_create()'s restore of a
 * member table (src/membership/gossip.c), through the seams of gossip.h
 * (no store, no event loop: the table handed over in the settings).
 *
 * A whole table that does not fit in the memory the process may take is
 * reported as out of memory, never as a damaged table: that message tells
 * the operator to move the data directory aside, which loses nothing only
 * when the table really is damaged.  The memory is bounded with
 * RLIMIT_AS in the test's own process (check forks one per test); under a
 * sanitizer, whose allocator maps its own memory, the test has nothing to
 * bound and passes without its assertions (test_heap.h says which).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "buf.h"
#include "error.h"
#include "gossip.h"
#include "msg.h"
#include "test_heap.h"

#define MEMBERS 4000
#define TOKENS 256

static int hook_send(void *ctx, struct peer *p, const struct msg *m)
{
    (void)ctx;
    (void)p;
    (void)m;
    return RK_ECLOSED;
}

static struct peer *hook_find(void *ctx, const char *id, const char *addr)
{
    (void)ctx;
    (void)id;
    (void)addr;
    return NULL;
}

static struct peer *hook_dial(void *ctx, const char *addr, char *err, size_t err_len)
{
    (void)ctx;
    (void)addr;
    snprintf(err, err_len, "no network in this test");
    return NULL;
}

static void hook_removed(void *ctx)
{
    (void)ctx;
}

static void hook_id_in_use(void *ctx, const char *other_addr)
{
    (void)ctx;
    (void)other_addr;
}

static uint64_t hook_now(void *ctx)
{
    (void)ctx;
    return 1000;
}

static void hook_changed(void *ctx, const char *event, const char *id)
{
    (void)ctx;
    (void)event;
    (void)id;
}

static const struct gossip_hooks hooks = {
    .send = hook_send,
    .find = hook_find,
    .dial = hook_dial,
    .removed = hook_removed,
    .id_in_use = hook_id_in_use,
    .now = hook_now,
    .changed = hook_changed,
};

/* A formed cluster's table of MEMBERS members of TOKENS tokens each, in id order. */
static void make_table(struct buf *table)
{
    struct msg_member *all = calloc(MEMBERS, sizeof(*all));

    ck_assert_ptr_nonnull(all);
    for (uint32_t i = 0; i < MEMBERS; i++) {
        struct msg_member *e = &all[i];
        snprintf(e->id, sizeof(e->id), "m%05u", i);
        snprintf(e->rack, sizeof(e->rack), "r%u", i % 3);
        snprintf(e->peer_addr, sizeof(e->peer_addr), "10.0.%u.%u:7371", i >> 8, i & 255);
        snprintf(e->client_addr, sizeof(e->client_addr), "10.0.%u.%u:7370", i >> 8, i & 255);
        e->tokens = TOKENS;
        e->status = MSG_MEMBER_NORMAL;
        e->generation = 1;
        e->version = 1;
        e->ring_version = 1;
        e->instance[0] = i + 1;
    }
    buf_init(table, 0);
    ck_assert_int_eq(msg_members_encode(all, MEMBERS, table), 0);
    free(all);
}

/* Member m00000 of that table, starting from it. */
static int create(const struct buf *table, struct gossip **g, char *err, size_t err_len)
{
    struct gossip_settings gs;

    memset(&gs, 0, sizeof(gs));
    snprintf(gs.id, sizeof(gs.id), "m00000");
    snprintf(gs.rack, sizeof(gs.rack), "r0");
    snprintf(gs.peer_addr, sizeof(gs.peer_addr), "10.0.0.0:7371");
    snprintf(gs.client_addr, sizeof(gs.client_addr), "10.0.0.0:7370");
    gs.tokens = TOKENS;
    gs.interval_ms = 200;
    gs.seed = 7;
    gs.table = buf_data(table);
    gs.table_len = table->len;
    return gossip_create(g, &gs, &hooks, err, err_len);
}

/* The address space this process maps now, in bytes (VmSize of /proc/self/status). */
static rlim_t mapped_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;

    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL && sscanf(line, "VmSize: %llu kB", &kb) != 1) {
    }
    fclose(f);
    ck_assert_uint_gt(kb, 0);
    return (rlim_t)kb * 1024;
}

/* The table is whole: without a bound it restores; within 4 MiB more than is mapped it cannot. */
START_TEST(test_restore_out_of_memory_is_not_damage)
{
    struct buf table;
    struct gossip *g = NULL;
    struct rlimit rl;
    char err[512] = "";
    int rc;

    make_table(&table);
    rc = create(&table, &g, err, sizeof(err));
    ck_assert_msg(rc == 0, "the whole table does not restore: %s", err);
    gossip_destroy(g);
    g = NULL;
    if (!heap_measurable()) {
        buf_free(&table);
        return; /* a sanitizer's allocator: nothing to bound */
    }
    ck_assert_int_eq(getrlimit(RLIMIT_AS, &rl), 0);
    rl.rlim_cur = mapped_now() + (4u << 20);
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &rl), 0);
    rc = create(&table, &g, err, sizeof(err));
    ck_assert_ptr_null(g);
    ck_assert_int_eq(rc, RK_ENOMEM);
    ck_assert_msg(strstr(err, "damaged") == NULL && strstr(err, "aside") == NULL,
                  "out of memory reported as a damaged table: %s", err);
    ck_assert_msg(strstr(err, "out of memory") != NULL, "the error does not say why: %s", err);
    buf_free(&table);
}
END_TEST

static Suite *gossip_restore_suite(void)
{
    Suite *s = suite_create("gossip_restore");
    TCase *tc = tcase_create("restore");

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_restore_out_of_memory_is_not_damage);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(gossip_restore_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
