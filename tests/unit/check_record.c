/*
 * check_record.c - unit tests of siblings, merge rules and the record codec
 * (storage/record.c).
 *
 * Versions are built from a small clock notation, "a:2 b:1" (node id, then
 * counter; each entry's stamp is 1000 times its counter), so every test
 * states the causal history it is about.  Random records come from a
 * xorshift generator whose seed is printed, so a failure can be replayed
 * with RINGKV_TEST_SEED=<seed>.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hlc.h"
#include "record.h"
#include "vclock.h"
#include "test_rng.h"

/* A cap no test reaches unless it means to. */
#define CAP_WIDE 100

static void rng_setup(void)
{
    rng_seed("check_record");
}

/* Raise id's entry in vc to (counter, stamp). */
static void clock_put(struct vclock *vc, const char *id, uint64_t counter, uint64_t stamp)
{
    struct vclock_entry e = {.counter = counter, .stamp = stamp};
    struct vclock one = {.e = &e, .n = 1, .cap = 1};

    e.id_len = (uint8_t)strlen(id);
    memcpy(e.id, id, e.id_len + 1u);
    ck_assert_int_eq(vclock_merge(vc, &one), 0);
}

/* vc = the clock written as "a:2 b:1" ("" is the empty clock). */
static void clock_parse(struct vclock *vc, const char *spec)
{
    char buf[256], *save = NULL;

    vclock_deinit(vc);
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *colon = strrchr(tok, ':');
        uint64_t c;
        ck_assert_ptr_nonnull(colon);
        *colon = '\0';
        c = strtoull(colon + 1, NULL, 10);
        clock_put(vc, tok, c, c * 1000);
    }
}

/* s = a version with clock spec; value NULL makes a tombstone. */
static void sib_make(struct sibling *s, const char *spec, uint64_t hlc, const char *node,
                     const char *value)
{
    struct vclock vc;

    vclock_init(&vc);
    clock_parse(&vc, spec);
    ck_assert_int_eq(
        sibling_set(s, &vc, hlc, node, value == NULL, value, value ? strlen(value) : 0), 0);
    vclock_deinit(&vc);
}

/* Apply a version given in clock notation; returns record_apply()'s result. */
static int apply(struct record *r, const char *spec, uint64_t hlc, const char *node,
                 const char *value, enum record_conflicts mode, size_t cap, bool *changed)
{
    struct sibling s;
    int err;

    sibling_init(&s);
    sib_make(&s, spec, hlc, node, value);
    err = record_apply(r, &s, mode, cap, changed);
    sibling_deinit(&s);
    return err;
}

/* Index of the sibling holding value (NULL: the tombstone), or -1. */
static int find_value(const struct record *r, const char *value)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct sibling *s = &r->s[i];
        if (value == NULL ? s->tombstone
                          : (!s->tombstone && s->value_len == strlen(value) &&
                             memcmp(s->value, value, s->value_len) == 0)) {
            return (int)i;
        }
    }
    return -1;
}

/* Whether the sibling holding value has exactly the clock spec. */
static bool has_clock(const struct record *r, const char *value, const char *spec)
{
    struct vclock vc;
    int i = find_value(r, value);
    bool same;

    ck_assert_int_ge(i, 0);
    vclock_init(&vc);
    clock_parse(&vc, spec);
    same = vclock_compare(&r->s[i].clock, &vc) == VCLOCK_EQUAL;
    vclock_deinit(&vc);
    return same;
}

/* A malloc'd encoding of r; *len its size. */
static uint8_t *encode(const struct record *r, size_t *len)
{
    uint8_t *buf;

    *len = record_encoded_size(r);
    buf = malloc(*len);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(record_encode(r, buf), *len);
    return buf;
}

static bool same_bytes(const struct record *a, const struct record *b)
{
    size_t la, lb;
    uint8_t *ea = encode(a, &la), *eb = encode(b, &lb);
    bool same = la == lb && memcmp(ea, eb, la) == 0;

    free(ea);
    free(eb);
    return same;
}

static void assert_empty(const struct record *r)
{
    ck_assert_uint_eq(r->n, 0);
    ck_assert_ptr_null(r->s);
}

START_TEST(test_concurrent_kept)
{
    struct record r;
    bool changed;

    record_init(&r);
    ck_assert_int_eq(apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, &changed), 0);
    ck_assert(changed);
    ck_assert_int_eq(apply(&r, "b:1", 11, "b", "y", RECORD_SIBLINGS, CAP_WIDE, &changed), 0);
    ck_assert(changed);
    ck_assert_int_eq(apply(&r, "a:1 c:1", 12, "c", "z", RECORD_SIBLINGS, CAP_WIDE, &changed), 0);
    ck_assert(changed);
    /* "a:1 c:1" supersedes "a:1" but not "b:1". */
    ck_assert_uint_eq(r.n, 2);
    ck_assert_int_ge(find_value(&r, "y"), 0);
    ck_assert_int_ge(find_value(&r, "z"), 0);
    record_deinit(&r);
}
END_TEST

START_TEST(test_dominated_dropped)
{
    struct record r;
    bool changed;

    record_init(&r);
    apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&r, "b:1", 11, "b", "y", RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&r, "c:1", 12, "c", "z", RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert_uint_eq(r.n, 3);
    ck_assert_int_eq(apply(&r, "a:2 b:1 c:1", 13, "a", "w", RECORD_SIBLINGS, CAP_WIDE, &changed),
                     0);
    ck_assert(changed);
    ck_assert_uint_eq(r.n, 1);
    ck_assert(has_clock(&r, "w", "a:2 b:1 c:1"));
    record_deinit(&r);
}
END_TEST

START_TEST(test_older_or_equal_ignored)
{
    struct record r, before;
    bool changed = true;

    record_init(&r);
    record_init(&before);
    apply(&r, "a:2 b:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert_int_eq(record_push(&before, &r.s[0]), 0);
    ck_assert_int_eq(apply(&r, "a:1", 5, "a", "old", RECORD_SIBLINGS, CAP_WIDE, &changed), 0);
    ck_assert(!changed);
    ck_assert(same_bytes(&r, &before));
    /* The same clock with other contents is the same version: ignored. */
    changed = true;
    ck_assert_int_eq(apply(&r, "a:2 b:1", 99, "b", "other", RECORD_SIBLINGS, CAP_WIDE, &changed),
                     0);
    ck_assert(!changed);
    ck_assert(same_bytes(&r, &before));
    record_deinit(&r);
    record_deinit(&before);
}
END_TEST

START_TEST(test_full_context_replaces)
{
    struct record r;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    vclock_init(&ctx);
    sibling_init(&out);
    apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&r, "b:1", 11, "b", "y", RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_int_eq(
        record_write_local(&r, "c", "c", 20, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert(has_clock(&r, "z", "a:1 b:1 c:20")); /* c's first counter: the hlc */
    ck_assert_uint_eq(out.hlc, 20);
    ck_assert_str_eq(out.node, "c");
    ck_assert_int_eq(vclock_compare(&out.clock, &r.s[0].clock), VCLOCK_EQUAL);
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/*
 * Another node's counter far past any write's timestamp is refused too:
 * sent to this replica, a context naming b at 2^64-1 would be taken and
 * replicated, and b could never write the key again (its increment would
 * overflow).  A counter of another node up to a day ahead of this write
 * (clock skew) is taken.
 */
START_TEST(test_context_foreign_counter_bounded)
{
    uint64_t hlc = hlc_make(1700000000000ull, 5);
    struct record r, before;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    record_init(&before);
    vclock_init(&ctx);
    sibling_init(&out);
    apply(&r, "a:2 b:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&before, "a:2 b:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    const struct {
        uint64_t b; /* b's counter in the context */
        int want;
    } cases[] = {
        {UINT64_MAX, RK_ECONTEXT},
        {hlc_make(1700000000000ull + 25ull * 3600 * 1000, 0), RK_ECONTEXT},
        {hlc_make(1700000000000ull + 3600 * 1000, 0), 0}, /* an hour ahead */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        clock_parse(&ctx, "a:2");
        clock_put(&ctx, "b", cases[i].b, 1);
        ck_assert_int_eq(record_write_local(&r, "a", "a", hlc, &ctx, false, "z", 1, RECORD_SIBLINGS,
                                            CAP_WIDE, &out),
                         cases[i].want);
        if (cases[i].want != 0) {
            ck_assert(same_bytes(&r, &before));
        }
    }
    ck_assert_uint_eq(vclock_get(&r.s[0].clock, "b"), hlc_make(1700000000000ull + 3600 * 1000, 0));
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
    record_deinit(&before);
}
END_TEST

/*
 * A context that names nothing the key does not hold is not forged, however
 * far ahead its counters are: b wrote the key while its clock ran two days
 * ahead (a replica keeps such a version: store.c op_apply()), so the key's
 * own clock, which KGET hands out as the context and which DEL, EXPIRE,
 * PERSIST and the conditional writes write with (coord.c cond_*), holds
 * b's counter two days past this write.  Writing with that context is
 * refused (RK_ECONTEXT) until a day before b's timestamp, on every node,
 * b included: the day bound of record_context_check() is applied to
 * counters the key's clock already has.
 */
START_TEST(test_context_key_own_clock_far_ahead_taken)
{
    uint64_t now = hlc_make(1700000000000ull, 5);
    uint64_t ahead = hlc_make(1700000000000ull + 48ull * 3600 * 1000, 0); /* b's clock: 2 days */
    struct record r;
    struct sibling v, out;
    struct vclock ctx;

    record_init(&r);
    sibling_init(&v);
    sibling_init(&out);
    vclock_init(&ctx);
    clock_put(&ctx, "b", ahead, ahead);
    ck_assert_int_eq(sibling_set(&v, &ctx, ahead, "b", false, "x", 1), 0);
    ck_assert_int_eq(record_apply(&r, &v, RECORD_SIBLINGS, CAP_WIDE, NULL), 0);
    vclock_deinit(&ctx);
    vclock_init(&ctx);
    ck_assert_int_eq(record_context(&r, &ctx), 0); /* what KGET returns, what DEL writes with */
    /* a blind write is taken */
    {
        struct record copy;
        record_init(&copy);
        ck_assert_int_eq(record_apply(&copy, &v, RECORD_SIBLINGS, CAP_WIDE, NULL), 0);
        ck_assert_int_eq(record_write_local(&copy, "a", "a", now, NULL, false, "y", 1,
                                            RECORD_SIBLINGS, CAP_WIDE, NULL),
                         0);
        record_deinit(&copy);
    }
    /* the key's own context: nothing in it is new to the key */
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", now, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_int_eq(find_value(&r, "x"), -1); /* the context saw x: z replaces it */
    sibling_deinit(&out);
    sibling_deinit(&v);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/*
 * The same from the other side: a coordinator whose wall clock is two days
 * behind its peers' (a node booted without a real-time clock, before NTP;
 * store.c takes in no stamp more than a minute ahead) refuses, as forged,
 * the key's own clock as the context: KSET with the context KGET gave,
 * and DEL, EXPIRE and PERSIST, which write with the merged record's
 * context, fail with RK_ECONTEXT on every key its peers wrote.
 */
START_TEST(test_context_key_own_clock_lagging_coordinator_taken)
{
    uint64_t peer = hlc_make(1700000000000ull, 0);
    uint64_t here = hlc_make(1700000000000ull - 48ull * 3600 * 1000, 1); /* two days behind */
    struct record r;
    struct sibling v;
    struct vclock ctx;

    record_init(&r);
    sibling_init(&v);
    vclock_init(&ctx);
    clock_put(&ctx, "b", peer, peer); /* b's first write of the key: its counter is its hlc */
    ck_assert_int_eq(sibling_set(&v, &ctx, peer, "b", false, "x", 1), 0);
    ck_assert_int_eq(record_apply(&r, &v, RECORD_SIBLINGS, CAP_WIDE, NULL), 0);
    vclock_deinit(&ctx);
    vclock_init(&ctx);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_int_eq(record_write_local(&r, "a", "a", here, &ctx, true, NULL, 0, RECORD_SIBLINGS,
                                        CAP_WIDE, NULL),
                     0); /* a DEL with the key's own context */
    sibling_deinit(&v);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/* A context counter of this node beyond the key's clock is refused: it would end the key. */
START_TEST(test_context_own_counter_bounded)
{
    struct record r, before;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    record_init(&before);
    vclock_init(&ctx);
    sibling_init(&out);
    apply(&r, "a:2 b:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&before, "a:2 b:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    clock_put(&ctx, "a", UINT64_MAX - 1, 1);
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        RK_ECONTEXT);
    ck_assert(same_bytes(&r, &before));
    /* another node's counter may run ahead of this replica; this node's up to its own is fine */
    clock_parse(&ctx, "a:2 b:7");
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 21, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert(has_clock(&r, "z", "a:3 b:7"));
    /* a key this node never wrote: any counter of its own is invented */
    record_deinit(&r);
    clock_parse(&ctx, "a:1");
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 22, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        RK_ECONTEXT);
    ck_assert_uint_eq(r.n, 0);
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
    record_deinit(&before);
}
END_TEST

/* At most max_siblings ids a context brings that the key's clock does not hold. */
START_TEST(test_context_new_ids_bounded)
{
    struct record r;
    struct vclock ctx;
    struct sibling out;
    char id[16];

    record_init(&r);
    vclock_init(&ctx);
    sibling_init(&out);
    apply(&r, "a:1 b:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    clock_parse(&ctx, "a:1 b:1");
    for (int i = 0; i < 4; i++) {
        snprintf(id, sizeof(id), "x%d", i);
        clock_put(&ctx, id, 1, 1);
    }
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, &ctx, false, "z", 1, RECORD_SIBLINGS, 3, &out),
        RK_ECONTEXT);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, &ctx, false, "z", 1, RECORD_SIBLINGS, 4, &out), 0);
    ck_assert_uint_eq(r.s[0].clock.n, 6);
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/*
 * Riak's kv679 on records.  A replica holds n1's first write of the key,
 * x.  n1's data directory is then wiped and n1 writes y on its empty
 * record.  Counted under the node id both writes are n1:1, equal clocks,
 * one version: the replica drops y, an acknowledged write, without a trace.
 * Counted under the actor of each directory life ("n1.a", then "n1.b")
 * they are concurrent: y becomes a sibling, or under LWW (y is newer) wins
 * with a clock that descends from both.
 * The versions' node field stays n1 either way.
 */
START_TEST(test_wiped_node_write_kept)
{
    enum record_conflicts modes[] = {RECORD_SIBLINGS, RECORD_LWW};

    for (size_t m = 0; m < 2; m++) {
        struct record replica, wiped;
        struct sibling x, y;
        bool changed = false;

        record_init(&replica);
        record_init(&wiped);
        sibling_init(&x);
        sibling_init(&y);
        ck_assert_int_eq(record_write_local(&wiped, "n1", "n1.a", 10, NULL, false, "x", 1, modes[m],
                                            CAP_WIDE, &x),
                         0);
        ck_assert_int_eq(record_apply(&replica, &x, modes[m], CAP_WIDE, &changed), 0);
        record_deinit(&wiped); /* the wipe */
        ck_assert_int_eq(record_write_local(&wiped, "n1", "n1.b", 20, NULL, false, "y", 1, modes[m],
                                            CAP_WIDE, &y),
                         0);
        ck_assert_int_eq(record_apply(&replica, &y, modes[m], CAP_WIDE, &changed), 0);
        ck_assert_msg(changed, "mode %zu: the wiped node's write was dropped", m);
        ck_assert_str_eq(y.node, "n1");
        ck_assert_uint_eq(vclock_get(&y.clock, "n1.b"), 20);
        ck_assert_uint_eq(vclock_get(&y.clock, "n1"), 0);
        ck_assert_int_ge(find_value(&replica, "y"), 0);
        ck_assert_uint_eq(replica.n, modes[m] == RECORD_SIBLINGS ? 2 : 1);
        ck_assert_int_eq(find_value(&replica, "x") >= 0, modes[m] == RECORD_SIBLINGS);
        /*
         * Under the node id alone both lives count under n1; each starts the
         * key's counter at its write's hlc, so the later life's y (n1:20)
         * supersedes x (n1:10) instead of repeating n1:1, in both modes.
         */
        record_deinit(&replica);
        record_deinit(&wiped);
        ck_assert_int_eq(
            record_write_local(&wiped, "n1", "n1", 10, NULL, false, "x", 1, modes[m], CAP_WIDE, &x),
            0);
        ck_assert_int_eq(record_apply(&replica, &x, modes[m], CAP_WIDE, &changed), 0);
        record_deinit(&wiped);
        ck_assert_int_eq(
            record_write_local(&wiped, "n1", "n1", 20, NULL, false, "y", 1, modes[m], CAP_WIDE, &y),
            0);
        ck_assert_int_eq(record_apply(&replica, &y, modes[m], CAP_WIDE, &changed), 0);
        ck_assert(changed);
        ck_assert_uint_eq(replica.n, 1);
        ck_assert_int_ge(find_value(&replica, "y"), 0);
        record_deinit(&replica);
        record_deinit(&wiped);
        sibling_deinit(&x);
        sibling_deinit(&y);
    }
}
END_TEST

/*
 * The context's own-counter bound is on the actor's entry: a context
 * claiming more of the actor than the key holds is invented and refused,
 * while the node id is just another clock id (an earlier life's writes).
 */
START_TEST(test_context_bound_on_actor)
{
    struct record r;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    vclock_init(&ctx);
    sibling_init(&out);
    apply(&r, "n1:3", 10, "n1", "old", RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert_int_eq(record_write_local(&r, "n1", "n1.b", 20, NULL, false, "v", 1, RECORD_SIBLINGS,
                                        CAP_WIDE, &out),
                     0);
    ck_assert(has_clock(&r, "v", "n1:3 n1.b:20"));
    clock_parse(&ctx, "n1:3 n1.b:21");
    ck_assert_int_eq(record_write_local(&r, "n1", "n1.b", 21, &ctx, false, "w", 1, RECORD_SIBLINGS,
                                        CAP_WIDE, &out),
                     RK_ECONTEXT);
    clock_parse(&ctx, "n1:3 n1.b:20");
    ck_assert_int_eq(record_write_local(&r, "n1", "n1.b", 22, &ctx, false, "w", 1, RECORD_SIBLINGS,
                                        CAP_WIDE, &out),
                     0);
    ck_assert(has_clock(&r, "w", "n1:3 n1.b:21"));
    ck_assert_uint_eq(r.n, 1);
    /* a bad actor id is refused like a bad node id */
    ck_assert_int_eq(record_write_local(&r, "n1", "n1 b", 23, NULL, false, "w", 1, RECORD_SIBLINGS,
                                        CAP_WIDE, &out),
                     RK_EINVAL);
    ck_assert_int_eq(record_write_local(&r, "n1", NULL, 23, NULL, false, "w", 1, RECORD_SIBLINGS,
                                        CAP_WIDE, &out),
                     RK_EINVAL);
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/* Under LWW a write never loses to the version it replaced, whatever its stamp. */
START_TEST(test_lww_write_beats_replaced)
{
    struct record r;
    struct sibling out;

    record_init(&r);
    sibling_init(&out);
    apply(&r, "b:1", 5000, "b", "old", RECORD_LWW, CAP_WIDE, NULL);
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, NULL, false, "new", 3, RECORD_LWW, CAP_WIDE, &out), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert(has_clock(&r, "new", "a:20 b:1"));
    ck_assert_uint_eq(out.hlc, 5001);
    ck_assert_uint_eq(r.s[0].hlc, 5001);
    ck_assert_uint_eq(r.s[0].clock.e[0].stamp, 5001); /* a's entry carries the write's stamp */
    sibling_deinit(&out);
    record_deinit(&r);
}
END_TEST

START_TEST(test_stale_context_keeps_concurrent)
{
    struct record r;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    vclock_init(&ctx);
    sibling_init(&out);
    /* The client read "a:1"; then b's write "b:1" arrived concurrently. */
    apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    clock_parse(&ctx, "a:1");
    apply(&r, "b:1", 11, "b", "y", RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_uint_eq(r.n, 2);
    ck_assert_int_lt(find_value(&r, "x"), 0);
    ck_assert(has_clock(&r, "y", "b:1"));
    ck_assert(has_clock(&r, "z", "a:2"));
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

START_TEST(test_stale_context_same_node_refused)
{
    struct record r, before;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    record_init(&before);
    vclock_init(&ctx);
    sibling_init(&out);
    /* A client that read nothing writes through a, which already wrote "a:1". */
    apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    record_push(&before, &r.s[0]);
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        RK_EMISMATCH);
    ck_assert(same_bytes(&r, &before));
    ck_assert_uint_eq(out.value_len, 0);
    /* Through another coordinator the two writes are representable: siblings. */
    ck_assert_int_eq(
        record_write_local(&r, "b", "b", 21, &ctx, false, "z", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_uint_eq(r.n, 2);
    ck_assert(has_clock(&r, "z", "b:21"));
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
    record_deinit(&before);
}
END_TEST

START_TEST(test_blind_write_supersedes)
{
    struct record r;
    struct sibling out;
    const char *nodes[] = {"a", "b", "c"};

    record_init(&r);
    sibling_init(&out);
    for (size_t i = 0; i < 3; i++) {
        char spec[8];
        snprintf(spec, sizeof(spec), "%s:1", nodes[i]);
        apply(&r, spec, 10 + i, nodes[i], nodes[i], RECORD_SIBLINGS, CAP_WIDE, NULL);
    }
    ck_assert_uint_eq(r.n, 3);
    ck_assert_int_eq(
        record_write_local(&r, "d", "d", 20, NULL, false, "w", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert(has_clock(&r, "w", "a:1 b:1 c:1 d:20"));
    sibling_deinit(&out);
    record_deinit(&r);
}
END_TEST

/*
 * A write whose caller wants no copy of the version (out NULL) leaves the
 * record exactly as one with out: blind, with a context, with concurrent
 * siblings kept, a tombstone, and under LWW; a refused write changes nothing.
 */
START_TEST(test_write_without_out_same_record)
{
    enum record_conflicts modes[] = {RECORD_SIBLINGS, RECORD_LWW};

    for (size_t m = 0; m < 2; m++) {
        struct record a, b;
        struct vclock ctx;
        struct sibling out;

        record_init(&a);
        record_init(&b);
        vclock_init(&ctx);
        sibling_init(&out);
        apply(&a, "b:1", 10, "b", "x", modes[m], CAP_WIDE, NULL);
        apply(&b, "b:1", 10, "b", "x", modes[m], CAP_WIDE, NULL);
        ck_assert_int_eq(
            record_write_local(&a, "a", "a", 20, NULL, false, "v1", 2, modes[m], CAP_WIDE, &out),
            0);
        ck_assert_int_eq(
            record_write_local(&b, "a", "a", 20, NULL, false, "v1", 2, modes[m], CAP_WIDE, NULL),
            0);
        ck_assert(same_bytes(&a, &b));
        apply(&a, "c:1", 30, "c", "y", modes[m], CAP_WIDE, NULL);
        apply(&b, "c:1", 30, "c", "y", modes[m], CAP_WIDE, NULL);
        clock_parse(&ctx, "a:20 b:1"); /* a's first write counted from its hlc, 20 */
        ck_assert_int_eq(
            record_write_local(&a, "a", "a", 40, &ctx, false, "v2", 2, modes[m], CAP_WIDE, &out),
            0);
        ck_assert_int_eq(
            record_write_local(&b, "a", "a", 40, &ctx, false, "v2", 2, modes[m], CAP_WIDE, NULL),
            0);
        ck_assert(same_bytes(&a, &b));
        ck_assert_uint_eq(a.n, modes[m] == RECORD_SIBLINGS ? 2 : 1);
        ck_assert_int_eq(
            record_write_local(&a, "a", "a", 50, NULL, true, NULL, 0, modes[m], CAP_WIDE, &out), 0);
        ck_assert_int_eq(
            record_write_local(&b, "a", "a", 50, NULL, true, NULL, 0, modes[m], CAP_WIDE, NULL), 0);
        ck_assert(same_bytes(&a, &b));
        ck_assert(record_all_tombstones(&b));
        ck_assert_int_eq(
            record_write_local(&b, "a", "a", 60, NULL, true, "z", 1, modes[m], CAP_WIDE, NULL),
            RK_EINVAL);
        ck_assert(same_bytes(&a, &b));
        sibling_deinit(&out);
        vclock_deinit(&ctx);
        record_deinit(&a);
        record_deinit(&b);
    }
}
END_TEST

START_TEST(test_local_writes_raise_counter)
{
    struct record r;
    struct vclock ctx;
    struct sibling out;

    record_init(&r);
    vclock_init(&ctx);
    sibling_init(&out);
    for (uint64_t i = 1; i <= 5; i++) {
        ck_assert_int_eq(record_write_local(&r, "a", "a", 100 + i, NULL, false, "v", 1,
                                            RECORD_SIBLINGS, CAP_WIDE, &out),
                         0);
        ck_assert_uint_eq(vclock_get(&out.clock, "a"), 100 + i); /* from the first write's hlc */
        ck_assert_uint_eq(out.clock.e[0].stamp, 100 + i);
        ck_assert_uint_eq(r.n, 1);
    }
    /*
     * A sibling a:107 c:1 that the context b:1 did not see stays (its c:1
     * keeps it concurrent), and the new write counts past a's 107, not from
     * the context's 0: a's counter never repeats.
     */
    apply(&r, "a:107 c:1", 200, "c", "other", RECORD_SIBLINGS, CAP_WIDE, NULL);
    clock_parse(&ctx, "b:1");
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 300, &ctx, false, "w", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_uint_eq(vclock_get(&out.clock, "a"), 108);
    ck_assert_uint_eq(r.n, 2);
    ck_assert(has_clock(&r, "other", "a:107 c:1"));
    sibling_deinit(&out);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

START_TEST(test_tombstone_siblings)
{
    struct record r, back;
    struct sibling out;
    size_t len;
    uint8_t *buf;

    record_init(&r);
    record_init(&back);
    sibling_init(&out);
    apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&r, "b:1", 11, "b", NULL, RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert_uint_eq(r.n, 2);
    ck_assert(!record_all_tombstones(&r));
    ck_assert_ptr_null(r.s[find_value(&r, NULL)].value);
    buf = encode(&r, &len);
    ck_assert_int_eq(record_decode(buf, len, &back), 0);
    ck_assert(back.s[find_value(&back, NULL)].tombstone);
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 20, NULL, true, NULL, 0, RECORD_SIBLINGS, CAP_WIDE, &out),
        0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert(record_all_tombstones(&r));
    ck_assert(has_clock(&r, NULL, "a:2 b:1"));
    ck_assert_int_eq(
        record_write_local(&r, "a", "a", 21, NULL, true, "v", 1, RECORD_SIBLINGS, CAP_WIDE, &out),
        RK_EINVAL);
    ck_assert_int_eq(sibling_set(&out, &out.clock, 1, "a", true, "v", 1), RK_EINVAL);
    free(buf);
    sibling_deinit(&out);
    record_deinit(&r);
    record_deinit(&back);
}
END_TEST

START_TEST(test_sibling_cap)
{
    struct record r, before;
    struct sibling out;
    struct vclock none;
    bool changed = true;

    record_init(&r);
    record_init(&before);
    sibling_init(&out);
    vclock_init(&none);
    apply(&r, "a:1", 10, "a", "x", RECORD_SIBLINGS, 2, NULL);
    apply(&r, "b:1", 11, "b", "y", RECORD_SIBLINGS, 2, NULL);
    record_push(&before, &r.s[0]);
    record_push(&before, &r.s[1]);
    ck_assert_int_eq(apply(&r, "c:1", 12, "c", "z", RECORD_SIBLINGS, 2, &changed), RK_ETOOBIG);
    ck_assert(!changed);
    ck_assert(same_bytes(&r, &before));
    ck_assert_int_eq(
        record_write_local(&r, "c", "c", 13, &none, false, "z", 1, RECORD_SIBLINGS, 2, &out),
        RK_ETOOBIG);
    ck_assert(same_bytes(&r, &before));
    /* The cap counts the result: superseding one of two leaves two. */
    ck_assert_int_eq(apply(&r, "a:2 c:1", 14, "c", "z", RECORD_SIBLINGS, 2, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(r.n, 2);
    sibling_deinit(&out);
    vclock_deinit(&none);
    record_deinit(&r);
    record_deinit(&before);
}
END_TEST

/*
 * A version vector at VCLOCK_ENTRIES_MAX: ids "w0000" .. (fixed width, so
 * vclock_increment() appends each in order), each at counter 1.
 */
static void clock_full(struct vclock *vc)
{
    char id[16];

    vclock_deinit(vc);
    for (unsigned i = 0; i < VCLOCK_ENTRIES_MAX; i++) {
        snprintf(id, sizeof(id), "w%04u", i);
        ck_assert_int_eq(vclock_increment(vc, id, 1000), 0);
    }
    ck_assert_uint_eq(vc->n, VCLOCK_ENTRIES_MAX);
    ck_assert_int_eq(vclock_increment(vc, "n1:a", 1000), RK_ECLOCKFULL);
}

/*
 * A key whose version vector is full and a key at max-siblings are two
 * refusals a client acts on differently, so they are two codes: RK_ECLOCKFULL
 * for the clock, whatever the context (none, KGET's, an empty one), and for
 * LWW's merge of clocks past the bound; RK_ETOOBIG for the sibling cap
 * alone.  r stays as it was.  A writer whose actor the clock already names
 * still writes it.
 */
START_TEST(test_clock_full_not_sibling_cap)
{
    struct record r, before;
    struct sibling v;
    struct vclock full, ctx, none;
    bool changed = true;

    record_init(&r);
    record_init(&before);
    sibling_init(&v);
    vclock_init(&full);
    vclock_init(&ctx);
    vclock_init(&none);
    clock_full(&full);
    ck_assert_int_eq(sibling_set(&v, &full, 1000, "w0000", false, "x", 1), 0);
    ck_assert_int_eq(record_push(&r, &v), 0);
    ck_assert_int_eq(record_push(&before, &v), 0);

    /* a write by an actor the clock does not name: SET (blind), DEL, KSET with a context */
    ck_assert_int_eq(record_write_local(&r, "n1", "n1:a", 2000, NULL, false, "y", 1,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert_int_eq(record_write_local(&r, "n1", "n1:a", 2000, NULL, true, NULL, 0,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_int_eq(record_write_local(&r, "n1", "n1:a", 2000, &ctx, false, "y", 1,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert_int_eq(record_write_local(&r, "n1", "n1:a", 2000, &none, false, "y", 1,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert_int_eq(record_write_expiring(&r, "n1", "n1:a", 2000, NULL, "y", 1, 5000, RECORD_LWW,
                                           CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert(same_bytes(&r, &before));

    /* a replica applying a concurrent version: siblings keep both (up to the cap), lww merges */
    ck_assert_int_eq(apply(&r, "zz:1", 3000, "zz", "z", RECORD_LWW, CAP_WIDE, &changed),
                     RK_ECLOCKFULL);
    ck_assert(!changed);
    ck_assert(same_bytes(&r, &before));
    ck_assert_int_eq(apply(&r, "zz:1", 3000, "zz", "z", RECORD_SIBLINGS, 1, &changed), RK_ETOOBIG);
    ck_assert(same_bytes(&r, &before));
    ck_assert_int_eq(apply(&r, "zz:1", 3000, "zz", "z", RECORD_SIBLINGS, CAP_WIDE, &changed), 0);
    ck_assert_uint_eq(r.n, 2);

    /* two siblings whose clocks together name 4097 ids: no context covers them */
    ck_assert_int_eq(record_context(&r, &ctx), RK_ECLOCKFULL);
    ck_assert_int_eq(record_write_local(&r, "n1", "w0001", 4000, NULL, false, "y", 1,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert_int_eq(record_write_local(&r, "n1", "w0001", 4000, &none, false, "y", 1,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     RK_ECLOCKFULL);
    ck_assert_uint_eq(r.n, 2);

    /* an actor the full clock names writes it: its counter moves, no entry is added */
    record_deinit(&r);
    ck_assert_int_eq(record_push(&r, &v), 0);
    ck_assert_int_eq(record_write_local(&r, "w0007", "w0007", 5000, NULL, false, "y", 1,
                                        RECORD_SIBLINGS, CAP_WIDE, NULL),
                     0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.s[0].clock.n, VCLOCK_ENTRIES_MAX);
    ck_assert_uint_gt(vclock_get(&r.s[0].clock, "w0007"), 1);

    vclock_deinit(&full);
    vclock_deinit(&ctx);
    vclock_deinit(&none);
    sibling_deinit(&v);
    record_deinit(&r);
    record_deinit(&before);
}
END_TEST

START_TEST(test_lww_highest_hlc)
{
    struct record r;
    bool changed;

    record_init(&r);
    apply(&r, "b:1", 20, "b", "late", RECORD_LWW, 1, NULL);
    ck_assert_int_eq(apply(&r, "a:1", 10, "a", "early", RECORD_LWW, 1, &changed), 0);
    /* The loser changes the clock only: the result descends from it too. */
    ck_assert(changed);
    ck_assert_uint_eq(r.n, 1);
    ck_assert(has_clock(&r, "late", "a:1 b:1"));
    ck_assert_uint_eq(r.s[0].hlc, 20);
    ck_assert_int_eq(apply(&r, "a:1", 10, "a", "early", RECORD_LWW, 1, &changed), 0);
    ck_assert(!changed);
    record_deinit(&r);
}
END_TEST

START_TEST(test_lww_node_tiebreak)
{
    struct record r;

    /* One hlc: ids in ring order a < ab < b, a shorter prefix first. */
    record_init(&r);
    apply(&r, "ab:1", 50, "ab", "ab", RECORD_LWW, 1, NULL);
    apply(&r, "b:1", 50, "b", "b", RECORD_LWW, 1, NULL);
    apply(&r, "a:1", 50, "a", "a", RECORD_LWW, 1, NULL);
    ck_assert_str_eq(r.s[0].node, "b");
    ck_assert(has_clock(&r, "b", "a:1 ab:1 b:1"));
    record_deinit(&r);
    record_init(&r);
    apply(&r, "node10:1", 50, "node10", "long", RECORD_LWW, 1, NULL);
    apply(&r, "node1:1", 50, "node1", "short", RECORD_LWW, 1, NULL);
    ck_assert_str_eq(r.s[0].node, "node10");
    record_deinit(&r);
    /* One hlc and one node (no correct node does this): the delete wins. */
    record_init(&r);
    apply(&r, "a:1", 50, "a", NULL, RECORD_LWW, 1, NULL);
    apply(&r, "a:2", 50, "a", "value", RECORD_LWW, 1, NULL);
    ck_assert(r.s[0].tombstone);
    ck_assert(has_clock(&r, NULL, "a:2"));
    record_deinit(&r);
}
END_TEST

/* Heap's algorithm: call visit for every permutation of idx[0..k). */
static void permute(size_t *idx, size_t k, void (*visit)(const size_t *, void *), void *ctx)
{
    if (k <= 1) {
        visit(idx, ctx);
        return;
    }
    permute(idx, k - 1, visit, ctx);
    for (size_t i = 0; i + 1 < k; i++) {
        size_t j = k % 2 == 0 ? i : 0, t = idx[j];
        idx[j] = idx[k - 1];
        idx[k - 1] = t;
        permute(idx, k - 1, visit, ctx);
    }
}

struct lww_run {
    struct sibling v[4];
    struct record first;
    size_t visits;
    bool seen[4 * 4 * 4 * 4];
};

static void lww_visit(const size_t *idx, void *ctx)
{
    struct lww_run *run = ctx;
    struct record r;
    size_t order = idx[0] * 64 + idx[1] * 16 + idx[2] * 4 + idx[3];

    ck_assert(!run->seen[order]);
    run->seen[order] = true;
    record_init(&r);
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(record_apply(&r, &run->v[idx[i]], RECORD_LWW, 1, NULL), 0);
    }
    if (run->visits++ == 0) {
        run->first = r;
        return;
    }
    ck_assert(same_bytes(&r, &run->first));
    record_deinit(&r);
}

START_TEST(test_lww_converges)
{
    struct lww_run run = {.visits = 0};
    size_t idx[4] = {0, 1, 2, 3};

    /* Two concurrent pairs, equal hlcs across them, a tombstone among them. */
    for (size_t i = 0; i < 4; i++) {
        sibling_init(&run.v[i]);
    }
    sib_make(&run.v[0], "a:1", 30, "a", "a1");
    sib_make(&run.v[1], "a:1 b:2", 40, "b", "b2");
    sib_make(&run.v[2], "c:3", 40, "c", NULL);
    sib_make(&run.v[3], "a:2 c:1", 35, "a", "a2");
    record_init(&run.first);
    permute(idx, 4, lww_visit, &run);
    ck_assert_uint_eq(run.visits, 24);
    ck_assert_uint_eq(run.first.n, 1);
    ck_assert(run.first.s[0].tombstone);
    ck_assert_str_eq(run.first.s[0].node, "c");
    ck_assert(has_clock(&run.first, NULL, "a:2 b:2 c:3"));
    record_deinit(&run.first);
    for (size_t i = 0; i < 4; i++) {
        sibling_deinit(&run.v[i]);
    }
}
END_TEST

/*
 * A random valid sibling: up to 4 clock entries, maybe a tombstone, up to
 * 40 value bytes, a value maybe with an expiry.
 */
static void rand_sibling(struct sibling *s)
{
    static const char *ids[] = {"a", "n1", "n10", "n2", "node-7.rack:3", "Z_z"};
    uint8_t value[40];
    size_t len = rng_below(sizeof(value) + 1);
    bool tomb = rng_below(4) == 0;
    struct vclock vc;

    vclock_init(&vc);
    for (uint32_t k = rng_below(5); k > 0; k--) {
        clock_put(&vc, ids[rng_below(6)], 1 + rng_next() % UINT64_MAX, rng_next());
    }
    for (size_t i = 0; i < len; i++) {
        value[i] = (uint8_t)rng_next();
    }
    ck_assert_int_eq(
        sibling_set(s, &vc, rng_next(), ids[rng_below(6)], tomb, value, tomb ? 0 : len), 0);
    s->expire_ms = !tomb && rng_below(3) == 0 ? 1 + rng_next() % UINT64_MAX : 0;
    vclock_deinit(&vc);
}

/* A record of 1 to 3 random siblings (rand_sibling()). */
static void rand_record(struct record *r)
{
    struct sibling s;

    record_init(r);
    sibling_init(&s);
    for (uint32_t k = 1 + rng_below(3); k > 0; k--) {
        rand_sibling(&s);
        ck_assert_int_eq(record_push(r, &s), 0);
    }
    sibling_deinit(&s);
}

/* record_peek agrees with the full decoder on random records, without allocating. */
START_TEST(test_peek_agrees_with_decode)
{
    for (int round = 0; round < 500; round++) {
        struct record r;
        const uint8_t *value;
        size_t len, n, vlen;
        bool tomb;
        uint8_t *buf;

        rand_record(&r);
        buf = encode(&r, &len);
        ck_assert_int_eq(record_peek(buf, len, &n, &tomb, &value, &vlen), 0);
        ck_assert_uint_eq(n, r.n);
        if (n == 1) {
            ck_assert_int_eq(tomb, r.s[0].tombstone);
            ck_assert_uint_eq(vlen, r.s[0].value_len);
            ck_assert(vlen == 0 || memcmp(value, r.s[0].value, vlen) == 0);
            ck_assert(value >= buf && value + vlen == buf + len);
        } else {
            ck_assert_ptr_null(value);
        }
        /* every truncation of a single-version record is refused, never over-read */
        for (size_t cut = 0; n == 1 && cut < len; cut++) {
            ck_assert_int_ne(record_peek(buf, cut, &n, &tomb, &value, &vlen), 0);
        }
        free(buf);
        record_deinit(&r);
    }
}
END_TEST

/*
 * record_apply_is_v agrees with record_apply in both modes: whenever it
 * says the result is v alone, record_apply gives exactly the record {v}
 * and the same changed.  Half of the versions descend from the record
 * (its siblings' clocks merged, then one increment), so the fast case is
 * hit often; with lww, some of those carry a stamp that loses, which must
 * not take it.
 */
START_TEST(test_apply_is_v_agrees)
{
    static const char *ids[] = {"a", "n1", "n10", "n2"};
    size_t taken[2] = {0, 0};

    for (int round = 0; round < 4000; round++) {
        enum record_conflicts mode = round % 2 == 0 ? RECORD_SIBLINGS : RECORD_LWW;
        struct record r, after, alone;
        struct sibling v;
        bool changed_fast = false, changed = false;

        rand_record(&r);
        if (round % 7 == 0) {
            record_deinit(&r); /* an absent key */
            record_init(&r);
        }
        sibling_init(&v);
        rand_sibling(&v);
        if (round % 4 < 2) {
            uint64_t top = 0;
            for (size_t i = 0; i < r.n; i++) {
                ck_assert_int_eq(vclock_merge(&v.clock, &r.s[i].clock), 0);
                top = r.s[i].hlc > top ? r.s[i].hlc : top;
            }
            ck_assert_int_eq(vclock_increment(&v.clock, ids[rng_below(4)], rng_next()), 0);
            v.hlc = round % 8 < 6 ? top + 1 + rng_below(100) : rng_next();
        } else if (round % 4 == 2 && r.n == 1) {
            ck_assert_int_eq(sibling_copy(&v, &r.s[0]), 0); /* the version it holds, again */
        }
        record_init(&alone);
        ck_assert_int_eq(record_push(&alone, &v), 0);
        record_init(&after);
        for (size_t i = 0; i < r.n; i++) {
            ck_assert_int_eq(record_push(&after, &r.s[i]), 0);
        }
        if (record_apply_is_v(&r, &v, mode, &changed_fast)) {
            taken[mode == RECORD_LWW]++;
            ck_assert_int_eq(record_apply(&after, &v, mode, RECORD_SIBLINGS_MAX, &changed), 0);
            ck_assert(record_same(&after, &alone));
            ck_assert(changed == changed_fast);
        }
        record_deinit(&after);
        record_deinit(&alone);
        sibling_deinit(&v);
        record_deinit(&r);
    }
    /* both modes took the fast case many times: the test covers it */
    ck_assert_uint_gt(taken[0], 500);
    ck_assert_uint_gt(taken[1], 500);
}
END_TEST

/*
 * One key rewritten through the coordinator's path in LWW mode, the value
 * growing, shrinking, emptied and deleted in turn, over records that held
 * one sibling or several: each write leaves exactly the version it made
 * (the stored sibling's buffers are reused when they fit; ASan sees the rest).
 */
START_TEST(test_lww_rewrite_sizes)
{
    static const size_t lens[] = {100, 100, 40, 0, 300, 1, 0, 100, 99, 4096, 2};
    uint8_t value[4096 + 16]; /* write k's value starts at value + k */
    uint64_t hlc = 1000;

    for (size_t i = 0; i < sizeof(value); i++) {
        value[i] = (uint8_t)(i * 7 + 3);
    }
    for (int start = 0; start < 2; start++) {
        struct record r;

        if (start == 0) {
            record_init(&r);
        } else {
            rand_record(&r); /* siblings from before the key's cluster used lww */
            for (size_t i = 0; i < r.n; i++) {
                hlc = r.s[i].hlc >= hlc && r.s[i].hlc < UINT64_MAX / 2 ? r.s[i].hlc + 1 : hlc;
            }
        }
        for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
            bool tomb = k == 6;
            struct sibling out;
            struct record alone;

            sibling_init(&out);
            ck_assert_int_eq(record_write_local(&r, "n1", "n1", ++hlc, NULL, tomb, value + k,
                                                tomb ? 0 : lens[k], RECORD_LWW, 1, &out),
                             0);
            record_init(&alone);
            ck_assert_int_eq(record_push(&alone, &out), 0);
            ck_assert(record_same(&r, &alone));
            ck_assert_uint_eq(r.s[0].value_len, tomb ? 0 : lens[k]);
            ck_assert(r.s[0].tombstone == tomb);
            ck_assert(r.s[0].value_len > 0 ? r.s[0].value != NULL : r.s[0].value == NULL);
            ck_assert(r.s[0].value_len == 0 || memcmp(r.s[0].value, value + k, lens[k]) == 0);
            record_deinit(&alone);
            sibling_deinit(&out);
        }
        record_deinit(&r);
    }
}
END_TEST

/*
 * record_check, record_view and record_decode on buf[0..len): the same
 * verdict, the same error; a view that decodes holds what the decoder
 * gives, and a refused one is left empty.  The view's room is small (three
 * entries), so clocks both fit it and spill past it.
 */
static void assert_check_agrees(const uint8_t *buf, size_t len)
{
    struct vclock_entry room[3];
    struct record r, v;
    int want;

    record_init(&r);
    record_init(&v);
    want = record_decode(buf, len, &r);
    ck_assert_int_ne(want, RK_ENOMEM);
    ck_assert_int_eq(record_check(buf, len), want);
    ck_assert_int_eq(record_view(buf, len, &v, room, 3), want);
    if (want == 0) {
        ck_assert(record_same(&v, &r));
    } else {
        ck_assert_uint_eq(v.n, 0);
        ck_assert_ptr_null(v.s);
    }
    record_view_release(&v);
    record_deinit(&v);
    record_deinit(&r);
}

/*
 * A view copies nothing: values point into the bytes, clocks into the
 * room while it lasts and into arrays of their own past it; released, it
 * keeps its sibling array for the next view, and views in turn into one
 * record leak nothing (the sanitizer build checks).
 */
START_TEST(test_view_borrows)
{
    struct vclock_entry room[4];
    struct record v;

    record_init(&v);
    for (int round = 0; round < 500; round++) {
        struct record r;
        size_t len, left = 4;
        uint8_t *buf;

        rand_record(&r);
        buf = encode(&r, &len);
        ck_assert_int_eq(record_view(buf, len, &v, room, 4), 0);
        ck_assert(record_same(&v, &r));
        for (size_t i = 0; i < v.n; i++) {
            const struct sibling *s = &v.s[i];
            ck_assert(s->value_len == 0 ||
                      (s->value > buf && s->value + s->value_len <= buf + len));
            if (s->clock.n > 0 && s->clock.n <= left) {
                ck_assert(s->clock.e == &room[4 - left] && s->clock.cap == 0);
                left -= s->clock.n;
            } else if (s->clock.n > 0) {
                ck_assert(s->clock.cap >= s->clock.n); /* past the room: its own array */
            }
        }
        if (round % 2 == 0) {
            struct sibling *kept = v.s;
            record_view_release(&v);
            ck_assert_uint_eq(v.n, 0);
            ck_assert_ptr_eq(v.s, kept);
        }
        free(buf);
        record_deinit(&r);
    }
    record_view_release(&v);
    record_deinit(&v);
}
END_TEST

/*
 * record_check gives record_decode's verdict on random records, on every
 * truncation of them and on every single byte of them replaced by a few
 * values that break a field (a length, a count, a flag, a name, a zero
 * counter): a copy it passes is one the decoder takes.
 */
START_TEST(test_check_agrees_with_decode)
{
    static const uint8_t swaps[] = {0x00, 0x01, 0x02, 0x03, 0x20, 0x7f, 0x80, 0xff};

    for (int round = 0; round < 200; round++) {
        struct record r;
        size_t len;
        uint8_t *buf;

        rand_record(&r);
        buf = encode(&r, &len);
        ck_assert_int_eq(record_check(buf, len), 0);
        for (size_t cut = 0; cut < len; cut++) {
            assert_check_agrees(buf, cut);
        }
        for (size_t at = 0; at < len; at++) {
            uint8_t was = buf[at];
            for (size_t v = 0; v < sizeof(swaps); v++) {
                buf[at] = swaps[v];
                assert_check_agrees(buf, len);
            }
            buf[at] = was;
        }
        free(buf);
        record_deinit(&r);
    }
}
END_TEST

START_TEST(test_peek_refuses_bad_heads)
{
    static const uint8_t zero[] = {1, 0, 0, 0};
    static const uint8_t fmt[] = {2, 0, 0, 1};
    static const uint8_t flags[] = {1, 1, 0, 1};
    const uint8_t *value;
    size_t n, vlen;
    bool tomb;

    ck_assert_int_eq(record_peek(zero, sizeof(zero), &n, &tomb, &value, &vlen), RK_ESYNTAX);
    ck_assert_int_eq(record_peek(fmt, sizeof(fmt), &n, &tomb, &value, &vlen), RK_EMISMATCH);
    ck_assert_int_eq(record_peek(flags, sizeof(flags), &n, &tomb, &value, &vlen), RK_ESYNTAX);
    ck_assert_int_eq(record_peek(zero, 0, &n, &tomb, &value, &vlen), RK_ESYNTAX);
}
END_TEST

START_TEST(test_codec_round_trip)
{
    for (int round = 0; round < 500; round++) {
        struct record r, back;
        struct sibling s;
        size_t len;
        uint8_t *buf;

        record_init(&r);
        record_init(&back);
        sibling_init(&s);
        for (uint32_t n = 1 + rng_below(5); n > 0; n--) {
            rand_sibling(&s);
            ck_assert_int_eq(record_push(&r, &s), 0);
        }
        buf = encode(&r, &len);
        ck_assert_int_eq(record_decode(buf, len, &back), 0);
        ck_assert_uint_eq(back.n, r.n);
        for (size_t i = 0; i < r.n; i++) {
            ck_assert_int_eq(vclock_compare(&back.s[i].clock, &r.s[i].clock), VCLOCK_EQUAL);
            ck_assert_uint_eq(back.s[i].hlc, r.s[i].hlc);
            ck_assert_str_eq(back.s[i].node, r.s[i].node);
            ck_assert_int_eq(back.s[i].tombstone, r.s[i].tombstone);
            ck_assert_uint_eq(back.s[i].value_len, r.s[i].value_len);
            ck_assert_uint_eq(back.s[i].expire_ms, r.s[i].expire_ms);
        }
        ck_assert(same_bytes(&r, &back));
        free(buf);
        sibling_deinit(&s);
        record_deinit(&r);
        record_deinit(&back);
    }
}
END_TEST

/*
 * Two siblings: {a:1 stamp 2} hlc 0x0102030405060708 "n1" value "hi", and
 * a tombstone {b:3 stamp 0x0a} hlc 9 "n2", per record.h and vclock.h.
 */
static const uint8_t golden[] = {
    0x01, 0x00, 0x00, 0x02,                         /* format 1, flags 0, n 2 */
    0x00, 0x01,                                     /* clock: 1 entry */
    0x01, 'a',                                      /* id "a" */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* counter 1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, /* stamp 2 */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* hlc */
    0x02, 'n',  '1',                                /* node "n1" */
    0x00,                                           /* sflags */
    0x00, 0x00, 0x00, 0x02, 'h',  'i',              /* value "hi" */
    0x00, 0x01,                                     /* clock: 1 entry */
    0x01, 'b',                                      /* id "b" */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, /* counter 3 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, /* stamp 10 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x09, /* hlc 9 */
    0x02, 'n',  '2',                                /* node "n2" */
    0x01,                                           /* sflags: tombstone */
    0x00, 0x00, 0x00, 0x00,                         /* value_len 0 */
};

START_TEST(test_golden_bytes)
{
    struct record r, back;
    struct sibling s;
    struct vclock vc;
    uint8_t *buf;
    size_t len;

    record_init(&r);
    record_init(&back);
    sibling_init(&s);
    vclock_init(&vc);
    clock_put(&vc, "a", 1, 2);
    ck_assert_int_eq(sibling_set(&s, &vc, 0x0102030405060708ull, "n1", false, "hi", 2), 0);
    record_push(&r, &s);
    clock_parse(&vc, "");
    clock_put(&vc, "b", 3, 10);
    ck_assert_int_eq(sibling_set(&s, &vc, 9, "n2", true, NULL, 0), 0);
    record_push(&r, &s);
    buf = encode(&r, &len);
    ck_assert_uint_eq(len, sizeof(golden));
    ck_assert_mem_eq(buf, golden, sizeof(golden));
    ck_assert_int_eq(record_decode(golden, sizeof(golden), &back), 0);
    ck_assert(same_bytes(&r, &back));
    ck_assert(back.s[1].tombstone);
    ck_assert_uint_eq(back.s[0].clock.e[0].stamp, 2);
    /* the form without an expiry, as written before expiry existed: none */
    ck_assert_uint_eq(back.s[0].expire_ms, 0);
    ck_assert_uint_eq(back.s[1].expire_ms, 0);
    free(buf);
    vclock_deinit(&vc);
    sibling_deinit(&s);
    record_deinit(&r);
    record_deinit(&back);
}
END_TEST

/* Decode buf[0..len) into a record that held something; expect err and an empty record. */
static void expect_reject(const uint8_t *buf, size_t len, int err)
{
    struct record r;

    record_init(&r);
    ck_assert_int_eq(record_decode(golden, sizeof(golden), &r), 0);
    ck_assert_int_eq(record_decode(buf, len, &r), err);
    assert_empty(&r);
}

/* A copy of golden with byte at set to v. */
static void golden_with(uint8_t *buf, size_t at, uint8_t v)
{
    memcpy(buf, golden, sizeof(golden));
    buf[at] = v;
}

/* A record of n concurrent siblings, node "n<i>" with clock {n<i>:1} and value "v<i>". */
static void concurrent_record(struct record *r, size_t n)
{
    record_init(r);
    for (size_t i = 0; i < n; i++) {
        struct sibling s;
        struct vclock vc;
        char node[16], value[16];
        snprintf(node, sizeof(node), "n%zu", i);
        snprintf(value, sizeof(value), "v%zu", i);
        sibling_init(&s);
        vclock_init(&vc);
        clock_put(&vc, node, 1, 100 + i);
        ck_assert_int_eq(
            sibling_set(&s, &vc, 100 + i, node, false, (const uint8_t *)value, strlen(value)), 0);
        ck_assert_int_eq(record_push(r, &s), 0);
        vclock_deinit(&vc);
        sibling_deinit(&s);
    }
}

/*
 * Decoding into a record that holds siblings gives what a fresh decode
 * gives, whether its array is used again (large enough) or replaced.
 */
START_TEST(test_decode_into_used_record)
{
    struct record five, six, fresh, r;
    uint8_t *b5, *b6;
    size_t l5, l6;

    concurrent_record(&five, 5);
    concurrent_record(&six, 6);
    b5 = encode(&five, &l5);
    b6 = encode(&six, &l6);
    record_init(&r);
    record_init(&fresh);
    ck_assert_int_eq(record_decode(b5, l5, &r), 0);
    ck_assert(same_bytes(&r, &five));
    /* fewer siblings: the array is kept, the entries past them are empty */
    ck_assert_int_eq(record_decode(golden, sizeof(golden), &r), 0);
    ck_assert_int_eq(record_decode(golden, sizeof(golden), &fresh), 0);
    ck_assert(same_bytes(&r, &fresh));
    ck_assert_uint_eq(r.n, 2);
    ck_assert_uint_ge(r.cap, 5);
    for (size_t i = r.n; i < r.cap; i++) {
        ck_assert_ptr_null(r.s[i].value);
        ck_assert_uint_eq(r.s[i].clock.n, 0);
    }
    /* as many again, then more than the array holds */
    ck_assert_int_eq(record_decode(b5, l5, &r), 0);
    ck_assert(same_bytes(&r, &five));
    ck_assert_int_eq(record_decode(b6, l6, &r), 0);
    ck_assert(same_bytes(&r, &six));
    /* a bad record after a good one: refused, the record left empty */
    ck_assert_int_eq(record_decode(b6, l6 - 1, &r), RK_ESYNTAX);
    assert_empty(&r);
    free(b5);
    free(b6);
    record_deinit(&five);
    record_deinit(&six);
    record_deinit(&fresh);
    record_deinit(&r);
}
END_TEST

/* record_same: equal siblings in the same order, and nothing else. */
START_TEST(test_record_same)
{
    struct record a, b, c;

    concurrent_record(&a, 3);
    concurrent_record(&b, 3);
    concurrent_record(&c, 2);
    ck_assert(record_same(&a, &b));
    ck_assert(!record_same(&a, &c));
    b.s[1].hlc++;
    ck_assert(!record_same(&a, &b));
    b.s[1].hlc--;
    ck_assert(record_same(&a, &b));
    b.s[2].value[0] ^= 1;
    ck_assert(!record_same(&a, &b));
    b.s[2].value[0] ^= 1;
    b.s[0].expire_ms = 5;
    ck_assert(!record_same(&a, &b));
    b.s[0].expire_ms = 0;
    b.s[0].clock.e[0].counter++;
    ck_assert(!record_same(&a, &b));
    record_deinit(&c);
    record_init(&c);
    ck_assert(!record_same(&a, &c));
    record_deinit(&a);
    record_deinit(&b);
    ck_assert(record_same(&a, &c)); /* both empty */
}
END_TEST

/*
 * What coord.c's read_resolve() takes for granted when every replica
 * answered the same record R (record_same()): R is the merge of those
 * answers, and no replica holding R is stale.  So merging R's siblings into
 * nothing, once per replica, gives R again, sibling for sibling and in its
 * order, and merging that into R changes nothing, for any R the store can
 * hold (made by record_apply(), in either mode).  Small clocks over three
 * ids, so versions often cover or equal one another.
 */
START_TEST(test_merge_of_same_answers)
{
    static const char *ids[] = {"a", "b", "c"};

    for (int round = 0; round < 2000; round++) {
        enum record_conflicts mode = round % 2 ? RECORD_LWW : RECORD_SIBLINGS;
        struct record r, merged;
        struct sibling s;
        bool changed;

        record_init(&r);
        record_init(&merged);
        sibling_init(&s);
        for (uint32_t k = 1 + rng_below(8); k > 0; k--) {
            struct vclock vc;
            uint8_t value = (uint8_t)rng_below(3);
            bool tomb = rng_below(4) == 0;
            vclock_init(&vc);
            for (uint32_t e = 1 + rng_below(3); e > 0; e--) {
                clock_put(&vc, ids[rng_below(3)], 1 + rng_below(3), rng_below(3));
            }
            ck_assert_int_eq(
                sibling_set(&s, &vc, rng_below(4), ids[rng_below(3)], tomb, &value, tomb ? 0 : 1),
                0);
            s.expire_ms = !tomb && rng_below(3) == 0 ? 1 + rng_below(2) : 0;
            vclock_deinit(&vc);
            int rc = record_apply(&r, &s, mode, 4, NULL);
            ck_assert(rc == 0 || rc == RK_ETOOBIG);
        }
        for (int replica = 0; replica < 3; replica++) {
            for (size_t j = 0; j < r.n; j++) {
                ck_assert_int_eq(
                    record_apply(&merged, &r.s[j], mode, RECORD_SIBLINGS_MAX, &changed), 0);
                ck_assert(replica == 0 || !changed);
            }
            ck_assert_msg(record_same(&merged, &r), "round %d, replica %d: the merge differs",
                          round, replica);
        }
        for (size_t j = 0; j < merged.n; j++) {
            ck_assert_int_eq(record_apply(&r, &merged.s[j], mode, RECORD_SIBLINGS_MAX, &changed),
                             0);
            ck_assert_msg(!changed, "round %d: a replica holding the merge is stale", round);
        }
        sibling_deinit(&s);
        record_deinit(&r);
        record_deinit(&merged);
    }
}
END_TEST

START_TEST(test_decode_truncated)
{
    for (size_t len = 0; len < sizeof(golden); len++) {
        expect_reject(golden, len, RK_ESYNTAX);
    }
}
END_TEST

START_TEST(test_decode_trailing)
{
    uint8_t buf[sizeof(golden) + 1];

    memcpy(buf, golden, sizeof(golden));
    buf[sizeof(golden)] = 0;
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
}
END_TEST

START_TEST(test_decode_bad_format)
{
    uint8_t buf[sizeof(golden)];

    golden_with(buf, 0, 0);
    expect_reject(buf, sizeof(buf), RK_EMISMATCH);
    golden_with(buf, 0, 2);
    expect_reject(buf, sizeof(buf), RK_EMISMATCH);
    expect_reject(buf, 1, RK_EMISMATCH);
}
END_TEST

START_TEST(test_decode_bad_flags)
{
    uint8_t buf[sizeof(golden)];

    golden_with(buf, 1, 0x01);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
    golden_with(buf, 1, 0x80);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
    /* The first sibling's sflags (offset 35): unknown bits. */
    golden_with(buf, 35, 0x04);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
    golden_with(buf, 35, 0x81);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
}
END_TEST

/*
 * One sibling {a:1 stamp 2} hlc 0x0102030405060708 "n1" value "hi" that
 * expires at 1700000000000 ms: sflags bit 1, then the u64 expiry.
 */
static const uint8_t golden_expiring[] = {
    0x01, 0x00, 0x00, 0x01,                         /* format 1, flags 0, n 1 */
    0x00, 0x01,                                     /* clock: 1 entry */
    0x01, 'a',                                      /* id "a" */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* counter 1 */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, /* stamp 2 */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* hlc */
    0x02, 'n',  '1',                                /* node "n1" */
    0x02,                                           /* sflags: expires */
    0x00, 0x00, 0x01, 0x8b, 0xcf, 0xe5, 0x68, 0x00, /* expire_ms 1700000000000 */
    0x00, 0x00, 0x00, 0x02, 'h',  'i',              /* value "hi" */
};

START_TEST(test_golden_expiring)
{
    struct record r, back;
    struct sibling s;
    struct vclock vc;
    const uint8_t *value;
    size_t len, n, vlen;
    bool tomb;
    uint8_t *buf, bad[sizeof(golden_expiring)];

    record_init(&r);
    record_init(&back);
    sibling_init(&s);
    vclock_init(&vc);
    clock_put(&vc, "a", 1, 2);
    ck_assert_int_eq(sibling_set(&s, &vc, 0x0102030405060708ull, "n1", false, "hi", 2), 0);
    s.expire_ms = 1700000000000ull;
    record_push(&r, &s);
    buf = encode(&r, &len);
    ck_assert_uint_eq(len, sizeof(golden_expiring));
    ck_assert_mem_eq(buf, golden_expiring, sizeof(golden_expiring));
    ck_assert_int_eq(record_decode(golden_expiring, sizeof(golden_expiring), &back), 0);
    ck_assert_uint_eq(back.s[0].expire_ms, 1700000000000ull);
    ck_assert(same_bytes(&r, &back));
    /* peek: live just before the expiry, absent from it on */
    ck_assert_int_eq(record_peek_at(golden_expiring, sizeof(golden_expiring), 1700000000000ull - 1,
                                    &n, &tomb, &value, &vlen),
                     0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(vlen, 2);
    ck_assert_mem_eq(value, "hi", 2);
    ck_assert_int_eq(record_peek_at(golden_expiring, sizeof(golden_expiring), 1700000000000ull, &n,
                                    &tomb, &value, &vlen),
                     0);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(value);
    /* refused: a tombstone that expires, an expiry of 0, every truncation */
    memcpy(bad, golden_expiring, sizeof(bad));
    bad[35] = 0x03;
    expect_reject(bad, sizeof(bad), RK_ESYNTAX);
    memcpy(bad, golden_expiring, sizeof(bad));
    memset(bad + 36, 0, 8);
    expect_reject(bad, sizeof(bad), RK_ESYNTAX);
    for (size_t cut = 0; cut < sizeof(golden_expiring); cut++) {
        expect_reject(golden_expiring, cut, RK_ESYNTAX);
        ck_assert_int_ne(record_peek_at(golden_expiring, cut, 0, &n, &tomb, &value, &vlen), 0);
    }
    free(buf);
    vclock_deinit(&vc);
    sibling_deinit(&s);
    record_deinit(&r);
    record_deinit(&back);
}
END_TEST

/*
 * Expiry decisions: a sibling is dead when a tombstone or expired at now;
 * peek_at leaves expired siblings out; an expiring local write supersedes
 * what it saw and carries its expiry; under LWW the winner's expiry holds,
 * in either order of arrival.
 */
START_TEST(test_expiry_logic)
{
    struct record r, a, b;
    struct sibling v, w;
    const uint8_t *value;
    size_t n, vlen, len;
    bool tomb, changed;
    uint8_t *buf;

    record_init(&r);
    record_init(&a);
    record_init(&b);
    sibling_init(&v);
    sibling_init(&w);
    /* two siblings: "x" expires at 5000, "y" never */
    ck_assert_int_eq(apply(&r, "p:1", 10, "p", "x", RECORD_SIBLINGS, CAP_WIDE, NULL), 0);
    ck_assert_int_eq(apply(&r, "q:1", 11, "q", "y", RECORD_SIBLINGS, CAP_WIDE, NULL), 0);
    r.s[find_value(&r, "x")].expire_ms = 5000;
    ck_assert(!sibling_expired(&r.s[find_value(&r, "x")], 4999));
    ck_assert(sibling_dead(&r.s[find_value(&r, "x")], 5000));
    ck_assert(!record_all_dead(&r, 6000));
    ck_assert_uint_eq(record_max_expiry(&r), 5000);
    buf = encode(&r, &len);
    ck_assert_int_eq(record_peek_at(buf, len, 4999, &n, &tomb, &value, &vlen), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(record_peek_at(buf, len, 5000, &n, &tomb, &value, &vlen), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert(!tomb && vlen == 1 && value[0] == 'y');
    free(buf);
    /* an expiring blind write supersedes both and carries its expiry */
    ck_assert_int_eq(record_write_expiring(&r, "n1", "n1", 20, NULL, "z", 1, 9000, RECORD_SIBLINGS,
                                           CAP_WIDE, &v),
                     0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.s[0].expire_ms, 9000);
    ck_assert_uint_eq(v.expire_ms, 9000);
    ck_assert(record_all_dead(&r, 9000) && !record_all_dead(&r, 8999));
    /* LWW: the newer version wins with its expiry (none), whatever the order */
    ck_assert_int_eq(sibling_copy(&w, &v), 0);
    w.hlc = 30;
    w.expire_ms = 0;
    vclock_deinit(&w.clock);
    vclock_init(&w.clock);
    clock_put(&w.clock, "m", 1, 30);
    ck_assert_int_eq(record_apply(&a, &v, RECORD_LWW, CAP_WIDE, NULL), 0);
    ck_assert_int_eq(record_apply(&a, &w, RECORD_LWW, CAP_WIDE, NULL), 0);
    ck_assert_int_eq(record_apply(&b, &w, RECORD_LWW, CAP_WIDE, NULL), 0);
    ck_assert_int_eq(record_apply(&b, &v, RECORD_LWW, CAP_WIDE, &changed), 0);
    ck_assert_uint_eq(a.s[0].expire_ms, 0);
    ck_assert(same_bytes(&a, &b));
    /* and the older one's expiry is gone with it: the winner expiring keeps its own */
    w.expire_ms = 7000;
    record_deinit(&a);
    ck_assert_int_eq(record_apply(&a, &v, RECORD_LWW, CAP_WIDE, NULL), 0);
    ck_assert_int_eq(record_apply(&a, &w, RECORD_LWW, CAP_WIDE, NULL), 0);
    ck_assert_uint_eq(a.s[0].expire_ms, 7000);
    sibling_deinit(&v);
    sibling_deinit(&w);
    record_deinit(&r);
    record_deinit(&a);
    record_deinit(&b);
}
END_TEST

START_TEST(test_decode_zero_siblings)
{
    static const uint8_t zero[] = {0x01, 0x00, 0x00, 0x00};
    uint8_t buf[sizeof(golden)];

    expect_reject(zero, sizeof(zero), RK_ESYNTAX);
    golden_with(buf, 3, 0);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
}
END_TEST

START_TEST(test_decode_tombstone_with_value)
{
    uint8_t buf[sizeof(golden)];

    /* The first sibling, which holds "hi", marked a tombstone (sflags, offset 35). */
    golden_with(buf, 35, 0x01);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
}
END_TEST

START_TEST(test_decode_bad_node)
{
    uint8_t buf[sizeof(golden)];

    /* The first node id "n1": node_len at offset 32, its bytes at 33 and 34. */
    golden_with(buf, 34, ' ');
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
    golden_with(buf, 32, 0);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
    golden_with(buf, 32, RING_NAME_MAX + 1);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
}
END_TEST

START_TEST(test_decode_oversized_counts)
{
    static const uint8_t too_many[] = {0x01, 0x00, 0x10, 0x01};
    static const uint8_t many_short[] = {0x01, 0x00, 0x10, 0x00, 0x00, 0x00};
    uint8_t buf[sizeof(golden)];

    /* 4097 siblings is over the bound; 4096 is within it but the bytes are not there. */
    expect_reject(too_many, sizeof(too_many), RK_ETOOBIG);
    expect_reject(many_short, sizeof(many_short), RK_ESYNTAX);
    /* The first value_len (offsets 36..39): over RECORD_VALUE_MAX, then past the input. */
    golden_with(buf, 36, 0xff);
    expect_reject(buf, sizeof(buf), RK_ETOOBIG);
    golden_with(buf, 39, 0x40);
    expect_reject(buf, sizeof(buf), RK_ESYNTAX);
    /* The first clock's entry count (offset 4): over VCLOCK_ENTRIES_MAX. */
    golden_with(buf, 4, 0xff);
    expect_reject(buf, sizeof(buf), RK_ETOOBIG);
}
END_TEST

START_TEST(test_context_and_summaries)
{
    struct record r;
    struct vclock ctx;

    record_init(&r);
    vclock_init(&ctx);
    ck_assert(!record_all_tombstones(&r));
    ck_assert_uint_eq(record_max_hlc(&r), 0);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_uint_eq(ctx.n, 0);
    apply(&r, "a:2 b:1", 10, "a", NULL, RECORD_SIBLINGS, CAP_WIDE, NULL);
    apply(&r, "a:1 c:4", 30, "c", NULL, RECORD_SIBLINGS, CAP_WIDE, NULL);
    ck_assert(record_all_tombstones(&r));
    ck_assert_uint_eq(record_max_hlc(&r), 30);
    ck_assert_int_eq(record_context(&r, &ctx), 0);
    ck_assert_uint_eq(vclock_get(&ctx, "a"), 2);
    ck_assert_uint_eq(vclock_get(&ctx, "b"), 1);
    ck_assert_uint_eq(vclock_get(&ctx, "c"), 4);
    vclock_deinit(&ctx);
    record_deinit(&r);
}
END_TEST

/* Pruning runs at day 10 with a one-day minimum age. */
#define PRUNE_DAY_MS (24ull * 3600 * 1000)
#define PRUNE_NOW_MS (10 * PRUNE_DAY_MS)

/* Push a version with clock {id1:c1, id2:c2}; an old entry was last raised on day 0. */
static void push_aged(struct record *r, const char *value, const char *id1, uint64_t c1, bool old1,
                      const char *id2, uint64_t c2, bool old2)
{
    struct vclock vc;
    struct sibling s;

    vclock_init(&vc);
    sibling_init(&s);
    clock_put(&vc, id1, c1, hlc_make(old1 ? 1 : PRUNE_NOW_MS, 0));
    clock_put(&vc, id2, c2, hlc_make(old2 ? 1 : PRUNE_NOW_MS, 0));
    ck_assert_int_eq(sibling_set(&s, &vc, 1, id1, false, value, strlen(value)), 0);
    ck_assert_int_eq(record_push(r, &s), 0);
    sibling_deinit(&s);
    vclock_deinit(&vc);
}

START_TEST(test_prune_drops_old_entries)
{
    struct record r;

    /* x = {a:1 old, b:5}, y = {a:2, c:1 old}: pruned to {b:5} and {a:2}, still concurrent. */
    record_init(&r);
    push_aged(&r, "x", "a", 1, true, "b", 5, false);
    push_aged(&r, "y", "a", 2, false, "c", 1, true);
    ck_assert_uint_eq(record_prune(&r, 2, PRUNE_NOW_MS, PRUNE_DAY_MS), 0);
    ck_assert_uint_eq(record_prune(&r, 1, PRUNE_NOW_MS, 20 * PRUNE_DAY_MS), 0);
    ck_assert_uint_eq(record_prune(&r, 1, PRUNE_NOW_MS, PRUNE_DAY_MS), 2);
    ck_assert(has_clock(&r, "x", "b:5"));
    ck_assert(has_clock(&r, "y", "a:2"));
    record_deinit(&r);
}
END_TEST

START_TEST(test_prune_keeps_concurrency)
{
    struct record r;

    /*
     * p = {a:3, b:1 old}, q = {a:3, c:1}: pruned, p would be {a:3}, which q
     * covers, and the next merge of this record elsewhere would drop p.
     */
    record_init(&r);
    push_aged(&r, "p", "a", 3, false, "b", 1, true);
    push_aged(&r, "q", "a", 3, false, "c", 1, false);
    ck_assert_uint_eq(record_prune(&r, 1, PRUNE_NOW_MS, PRUNE_DAY_MS), 0);
    ck_assert(has_clock(&r, "p", "a:3 b:1"));
    ck_assert(has_clock(&r, "q", "a:3 c:1"));
    record_deinit(&r);
}
END_TEST

static Suite *record_suite(void)
{
    Suite *s = suite_create("record");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"concurrent_kept", test_concurrent_kept},
        {"dominated_dropped", test_dominated_dropped},
        {"older_or_equal_ignored", test_older_or_equal_ignored},
        {"full_context_replaces", test_full_context_replaces},
        {"stale_context_keeps_concurrent", test_stale_context_keeps_concurrent},
        {"context_own_counter_bounded", test_context_own_counter_bounded},
        {"context_foreign_counter_bounded", test_context_foreign_counter_bounded},
        {"context_key_own_clock_far_ahead_taken", test_context_key_own_clock_far_ahead_taken},
        {"context_key_own_clock_lagging_coordinator_taken",
         test_context_key_own_clock_lagging_coordinator_taken},
        {"context_new_ids_bounded", test_context_new_ids_bounded},
        {"wiped_node_write_kept", test_wiped_node_write_kept},
        {"context_bound_on_actor", test_context_bound_on_actor},
        {"lww_write_beats_replaced", test_lww_write_beats_replaced},
        {"stale_context_same_node_refused", test_stale_context_same_node_refused},
        {"blind_write_supersedes", test_blind_write_supersedes},
        {"local_writes_raise_counter", test_local_writes_raise_counter},
        {"write_without_out_same_record", test_write_without_out_same_record},
        {"tombstone_siblings", test_tombstone_siblings},
        {"sibling_cap", test_sibling_cap},
        {"clock_full_not_sibling_cap", test_clock_full_not_sibling_cap},
        {"lww_highest_hlc", test_lww_highest_hlc},
        {"lww_node_tiebreak", test_lww_node_tiebreak},
        {"lww_converges", test_lww_converges},
        {"codec_round_trip", test_codec_round_trip},
        {"golden_bytes", test_golden_bytes},
        {"golden_expiring", test_golden_expiring},
        {"expiry_logic", test_expiry_logic},
        {"decode_into_used_record", test_decode_into_used_record},
        {"record_same", test_record_same},
        {"merge_of_same_answers", test_merge_of_same_answers},
        {"decode_truncated", test_decode_truncated},
        {"decode_trailing", test_decode_trailing},
        {"decode_bad_format", test_decode_bad_format},
        {"decode_bad_flags", test_decode_bad_flags},
        {"decode_zero_siblings", test_decode_zero_siblings},
        {"decode_tombstone_with_value", test_decode_tombstone_with_value},
        {"decode_bad_node", test_decode_bad_node},
        {"decode_oversized_counts", test_decode_oversized_counts},
        {"context_and_summaries", test_context_and_summaries},
        {"prune_drops_old_entries", test_prune_drops_old_entries},
        {"prune_keeps_concurrency", test_prune_keeps_concurrency},
        {"peek_agrees_with_decode", test_peek_agrees_with_decode},
        {"peek_refuses_bad_heads", test_peek_refuses_bad_heads},
        {"check_agrees_with_decode", test_check_agrees_with_decode},
        {"view_borrows", test_view_borrows},
        {"apply_is_v_agrees", test_apply_is_v_agrees},
        {"lww_rewrite_sizes", test_lww_rewrite_sizes},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, rng_setup, NULL);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(record_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
