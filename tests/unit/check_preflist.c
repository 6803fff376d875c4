/*
 * check_preflist.c - unit tests of the coordinator's preference list
 * (src/replication/preflist.c): replicas equal ring_preflist(), fallbacks
 * follow preflist.h's rules (checked against a second, eager formulation of
 * them written here), and explain names the right reason for each skip on
 * rings whose token order the test lays out itself.
 *
 * Random rings and up sets come from a xorshift generator whose seed is
 * printed, so a failure can be replayed with RINGKV_TEST_SEED=<seed>.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "preflist.h"
#include "ring.h"
#include "test_rng.h"

#define MAX_MEMBERS 64

static void rng_setup(void)
{
    rng_seed("check_preflist");
}

struct members {
    struct ring_member m[MAX_MEMBERS];
    char ids[MAX_MEMBERS][16];
    char racks[MAX_MEMBERS][16];
    size_t n;
};

static void members_set(struct members *ms, size_t i, const char *rack, uint32_t tokens)
{
    snprintf(ms->ids[i], sizeof(ms->ids[i]), "n%zu", i);
    snprintf(ms->racks[i], sizeof(ms->racks[i]), "%s", rack);
    ms->m[i] = (struct ring_member){.id = ms->ids[i], .rack = ms->racks[i], .tokens = tokens};
}

static struct ring *ring_random(size_t n, size_t racks, uint32_t max_tokens)
{
    struct members ms = {.n = n};
    struct ring *r;
    char rack[16];

    for (size_t i = 0; i < n; i++) {
        snprintf(rack, sizeof(rack), "r%u", rng_below((uint32_t)racks));
        members_set(&ms, i, rack, 1 + rng_below(max_tokens));
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, ms.m, n), 0);
    return r;
}

/* An up set: bit m of the mask is member m's state. */
struct upset {
    uint64_t down;
    unsigned calls[MAX_MEMBERS];
};

static bool up_of(void *ctx, uint32_t m)
{
    struct upset *u = ctx;
    u->calls[m]++;
    return !(u->down >> m & 1);
}

static bool is_up(const struct upset *u, uint32_t m)
{
    return !(u->down >> m & 1);
}

static void last_step(void *ctx, enum ring_step step, size_t token, uint32_t member)
{
    (void)member;
    if (step != RING_STEP_APPENDED) {
        *(size_t *)ctx = token;
    }
}

/*
 * preflist.h's fallback rule, formulated eagerly: list every candidate of
 * the continued walk first, then give each down replica the first unused
 * candidate in a free rack, else the first unused one.  Writes the
 * fallbacks' members and the replica each stands for; returns their count.
 */
static size_t ref_fallbacks(const struct ring *r, uint64_t pos, unsigned rf, const struct upset *u,
                            uint32_t *fb, int *stands)
{
    uint32_t rep[RING_RF_MAX], cand[MAX_MEMBERS];
    bool taken[MAX_MEMBERS] = {false}, in[MAX_MEMBERS] = {false};
    const char *racks[2 * RING_RF_MAX];
    size_t n, last = 0, n_cand = 0, n_racks = 0, n_fb = 0, T = ring_token_count(r);

    ck_assert_int_eq(ring_preflist_walk(r, pos, rf, rep, &n, last_step, &last), 0);
    for (size_t i = 0; i < n; i++) {
        in[rep[i]] = true;
        if (is_up(u, rep[i])) {
            racks[n_racks++] = ring_member_rack(r, rep[i]);
        }
    }
    for (size_t s = 1; s <= T; s++) {
        uint32_t m = ring_token_at(r, (last + s) % T).member;
        if (!in[m] && is_up(u, m)) {
            in[m] = true;
            cand[n_cand++] = m;
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t pick = n_cand;
        if (is_up(u, rep[i])) {
            continue;
        }
        for (size_t c = 0; c < n_cand && pick == n_cand; c++) {
            bool free_rack = !taken[c];
            for (size_t k = 0; free_rack && k < n_racks; k++) {
                free_rack = strcmp(racks[k], ring_member_rack(r, cand[c])) != 0;
            }
            pick = free_rack ? c : pick;
        }
        for (size_t c = 0; c < n_cand && pick == n_cand; c++) {
            pick = taken[c] ? pick : c;
        }
        if (pick < n_cand) {
            taken[pick] = true;
            racks[n_racks++] = ring_member_rack(r, cand[pick]);
            fb[n_fb] = cand[pick];
            stands[n_fb++] = (int)i;
        }
    }
    return n_fb;
}

/* Check p against ring_preflist() and the reference fallbacks. */
static void check_against_ref(const struct ring *r, uint64_t pos, unsigned rf, bool sloppy,
                              const struct upset *u, const struct preflist *p)
{
    uint32_t rep[RING_RF_MAX], fb[RING_RF_MAX];
    int stands[RING_RF_MAX];
    size_t n, t, n_fb;

    ck_assert_int_eq(ring_preflist(r, pos, rf, rep, &n), 0);
    ck_assert_int_eq(ring_owner_token(r, pos, &t, NULL), 0);
    ck_assert_uint_eq(p->pos, pos);
    ck_assert_uint_eq(p->owner_token, t);
    ck_assert_uint_eq(p->n_replicas, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(p->nodes[i].member, rep[i]);
        ck_assert_int_eq(p->nodes[i].role, i == 0 ? PREFLIST_PRIMARY : PREFLIST_REPLICA);
        ck_assert_int_eq(p->nodes[i].up, is_up(u, rep[i]));
        ck_assert_int_eq(p->nodes[i].stands_for, -1);
    }
    n_fb = sloppy ? ref_fallbacks(r, pos, rf, u, fb, stands) : 0;
    ck_assert_uint_eq(p->n, n + n_fb);
    for (size_t f = 0; f < n_fb; f++) {
        ck_assert_uint_eq(p->nodes[n + f].member, fb[f]);
        ck_assert_int_eq(p->nodes[n + f].role, PREFLIST_FALLBACK);
        ck_assert(p->nodes[n + f].up);
        ck_assert_int_eq(p->nodes[n + f].stands_for, stands[f]);
    }
}

/* The properties preflist.h promises, stated without the reference. */
static void check_properties(const struct ring *r, const struct upset *u, const struct preflist *p)
{
    size_t n_down = 0, n_cand = 0, members = ring_member_count(r);

    for (size_t i = 0; i < p->n; i++) {
        for (size_t j = i + 1; j < p->n; j++) {
            ck_assert_uint_ne(p->nodes[i].member, p->nodes[j].member);
        }
    }
    for (size_t i = 0; i < p->n_replicas; i++) {
        n_down += !p->nodes[i].up;
    }
    for (uint32_t m = 0; m < members; m++) {
        bool listed = false;
        for (size_t i = 0; i < p->n_replicas; i++) {
            listed |= p->nodes[i].member == m;
        }
        n_cand += !listed && is_up(u, m);
    }
    /* Every down replica has a fallback while candidates last. */
    ck_assert_uint_eq(p->n - p->n_replicas, n_down < n_cand ? n_down : n_cand);
    for (size_t f = p->n_replicas; f < p->n; f++) {
        int s = p->nodes[f].stands_for;
        ck_assert(is_up(u, p->nodes[f].member));
        ck_assert(s >= 0 && (size_t)s < p->n_replicas && !p->nodes[s].up);
        for (size_t g = p->n_replicas; g < f; g++) {
            ck_assert_int_ne(p->nodes[g].stands_for, s);
        }
    }
}

START_TEST(test_errors)
{
    struct ring *r = ring_random(3, 2, 4), *empty;
    struct preflist p;

    ck_assert_int_eq(ring_create(&empty, ring_default_seed, NULL, 0), 0);
    ck_assert_int_eq(preflist_build(r, 1, 0, true, NULL, NULL, false, &p), RK_ERANGE);
    ck_assert_int_eq(preflist_build(r, 1, RING_RF_MAX + 1, true, NULL, NULL, true, &p), RK_ERANGE);
    ck_assert_int_eq(preflist_build(empty, 1, 3, true, NULL, NULL, true, &p), RK_EEMPTY);
    ck_assert_int_eq(preflist_build(r, 1, RING_RF_MAX, true, NULL, NULL, false, &p), 0);
    ck_assert_uint_eq(p.n_replicas, 3);
    ck_assert_uint_eq(p.n, 3);
    ck_assert_ptr_null(p.skips);
    preflist_free(&p);
    ring_unref(r);
    ring_unref(empty);
}
END_TEST

/* Random rings, keys, up sets and flags: replicas, fallbacks, determinism. */
START_TEST(test_random_against_reference)
{
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + rng_below(24);
        struct ring *r = ring_random(n, 1 + rng_below(6), 1 + rng_below(24));
        for (int k = 0; k < 40; k++) {
            struct upset u = {.down = rng_next() & rng_next()};
            unsigned rf = 1 + rng_below(6);
            bool sloppy = rng_below(4) != 0;
            uint64_t pos = rng_next();
            struct preflist a, b;

            ck_assert_int_eq(preflist_build(r, pos, rf, sloppy, up_of, &u, false, &a), 0);
            memset(u.calls, 0, sizeof(u.calls));
            ck_assert_int_eq(preflist_build(r, pos, rf, sloppy, up_of, &u, true, &b), 0);
            for (size_t m = 0; m < n; m++) {
                ck_assert_uint_le(u.calls[m], 1);
            }
            check_against_ref(r, pos, rf, sloppy, &u, &b); /* explained: the owner token too */
            if (sloppy) {
                check_properties(r, &u, &a);
            }
            ck_assert_uint_eq(a.n, b.n);
            for (size_t i = 0; i < a.n; i++) {
                ck_assert_uint_eq(a.nodes[i].member, b.nodes[i].member);
                ck_assert_int_eq(a.nodes[i].role, b.nodes[i].role);
                ck_assert_int_eq(a.nodes[i].up, b.nodes[i].up);
                ck_assert_int_eq(a.nodes[i].stands_for, b.nodes[i].stands_for);
            }
            ck_assert_ptr_null(a.skips);
            preflist_free(&a);
            preflist_free(&b);
        }
        ring_unref(r);
    }
}
END_TEST

/* Nothing down, or not sloppy: no fallbacks and, without explain, no skips. */
START_TEST(test_fast_path_has_no_fallbacks)
{
    struct ring *r = ring_random(10, 4, 16);
    struct upset u = {.down = 0x5};
    struct preflist p;

    for (int k = 0; k < 1000; k++) {
        uint64_t pos = rng_next();
        ck_assert_int_eq(preflist_build(r, pos, 3, true, NULL, NULL, false, &p), 0);
        ck_assert_uint_eq(p.n, p.n_replicas);
        ck_assert_ptr_null(p.skips);
        ck_assert_int_eq(preflist_build(r, pos, 3, false, up_of, &u, false, &p), 0);
        ck_assert_uint_eq(p.n, p.n_replicas);
        ck_assert_ptr_null(p.skips);
    }
    ring_unref(r);
}
END_TEST

/* Six nodes, racks r0 r1 r2 twice each, 64 tokens. */
static struct ring *ring_six(void)
{
    struct members ms = {.n = 6};
    static const char *const racks[] = {"r0", "r1", "r2", "r0", "r1", "r2"};
    struct ring *r;

    for (size_t i = 0; i < 6; i++) {
        members_set(&ms, i, racks[i], 64);
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, ms.m, 6), 0);
    return r;
}

/* The distinct racks among the up nodes of p (replicas and fallbacks). */
static size_t up_racks(const struct ring *r, const struct preflist *p)
{
    const char *seen[2 * RING_RF_MAX];
    size_t n = 0;

    for (size_t i = 0; i < p->n; i++) {
        bool dup = false;
        for (size_t j = 0; j < n && p->nodes[i].up; j++) {
            dup |= strcmp(seen[j], ring_member_rack(r, p->nodes[i].member)) == 0;
        }
        if (p->nodes[i].up && !dup) {
            seen[n++] = ring_member_rack(r, p->nodes[i].member);
        }
    }
    return n;
}

START_TEST(test_six_nodes_three_racks)
{
    struct ring *r = ring_six();
    struct preflist p;

    for (int k = 0; k < 5000; k++) {
        uint64_t pos = rng_next();
        struct upset one = {.down = 1u << rng_below(6)};
        struct upset rack = {.down = 0x9u << rng_below(3)}; /* members m and m + 3 */

        ck_assert_int_eq(preflist_build(r, pos, 3, true, NULL, NULL, false, &p), 0);
        ck_assert_uint_eq(p.n, 3);
        ck_assert_uint_eq(up_racks(r, &p), 3);
        /* One node down: its rack-mate stands in, three racks still hold the key. */
        ck_assert_int_eq(preflist_build(r, pos, 3, true, up_of, &one, false, &p), 0);
        ck_assert_uint_eq(up_racks(r, &p), 3);
        ck_assert_uint_eq(p.n, 3 + (one.down >> p.nodes[0].member & 1) +
                                   (one.down >> p.nodes[1].member & 1) +
                                   (one.down >> p.nodes[2].member & 1));
        /* A whole rack down: the fallback comes from another rack, never the down one. */
        ck_assert_int_eq(preflist_build(r, pos, 3, true, up_of, &rack, false, &p), 0);
        ck_assert_uint_eq(p.n, 4);
        ck_assert(is_up(&rack, p.nodes[3].member));
        ck_assert_uint_eq(up_racks(r, &p), 2);
        check_properties(r, &rack, &p);
    }
    ring_unref(r);
}
END_TEST

/*
 * Six members of one token each, racks given by their place on the ring:
 * the members at ring order 0..5 get racks A A B C B C.  Token positions
 * depend on ids alone, so a first ring tells the order.
 */
static struct ring *ring_laid_out(uint32_t *order)
{
    struct members ms = {.n = 6};
    static const char *const racks[] = {"A", "A", "B", "C", "B", "C"};
    struct ring *r;

    for (size_t i = 0; i < 6; i++) {
        members_set(&ms, i, "x", 1);
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, ms.m, 6), 0);
    for (size_t t = 0; t < 6; t++) {
        order[t] = ring_token_at(r, t).member;
    }
    ring_unref(r);
    for (size_t t = 0; t < 6; t++) {
        snprintf(ms.racks[order[t]], sizeof(ms.racks[0]), "%s", racks[t]);
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, ms.m, 6), 0);
    for (size_t t = 0; t < 6; t++) {
        ck_assert_uint_eq(ring_token_at(r, t).member, order[t]);
    }
    return r;
}

static void expect_skip(const struct preflist *p, size_t j, size_t token, uint32_t member,
                        enum preflist_skip_reason reason, int replaced_by)
{
    ck_assert_uint_lt(j, p->n_skips);
    ck_assert_uint_eq(p->skips[j].token, token);
    ck_assert_uint_eq(p->skips[j].member, member);
    ck_assert_str_eq(preflist_skip_name(p->skips[j].reason), preflist_skip_name(reason));
    ck_assert_int_eq(p->skips[j].replaced_by, replaced_by);
}

START_TEST(test_skips_hand_built)
{
    uint32_t o[6];
    struct ring *r = ring_laid_out(o);
    uint64_t pos = ring_token_at(r, 0).pos;
    struct upset u = {.down = 0};
    struct preflist p;

    /* All up: o0 (A), o1 set aside (A), o2 (B), o3 (C). */
    ck_assert_int_eq(preflist_build(r, pos, 3, true, up_of, &u, true, &p), 0);
    ck_assert_uint_eq(p.n, 3);
    ck_assert_uint_eq(p.nodes[1].member, o[2]);
    ck_assert_uint_eq(p.n_skips, 1);
    expect_skip(&p, 0, 1, o[1], PREFLIST_SKIP_RACK_USED, -1);
    preflist_free(&p);

    /* o2 down: the walk goes on at token 4, whose o4 is in B, free: its fallback. */
    u.down = 1ull << o[2];
    ck_assert_int_eq(preflist_build(r, pos, 3, true, up_of, &u, true, &p), 0);
    ck_assert_uint_eq(p.n, 4);
    ck_assert_uint_eq(p.nodes[3].member, o[4]);
    ck_assert_int_eq(p.nodes[3].stands_for, 1);
    ck_assert_uint_eq(p.n_skips, 2);
    expect_skip(&p, 0, 1, o[1], PREFLIST_SKIP_RACK_USED, -1);
    expect_skip(&p, 1, 2, o[2], PREFLIST_SKIP_DOWN, 3);
    preflist_free(&p);

    /* Not sloppy: o2 is down with no fallback. */
    ck_assert_int_eq(preflist_build(r, pos, 3, false, up_of, &u, true, &p), 0);
    ck_assert_uint_eq(p.n, 3);
    expect_skip(&p, 1, 2, o[2], PREFLIST_SKIP_DOWN, -1);
    preflist_free(&p);

    /*
     * o2 and o4 down: no rack-distinct node is up (A and C are used), so
     * the walk goes once around and o5, the first set aside, stands in.
     */
    u.down = 1ull << o[2] | 1ull << o[4];
    ck_assert_int_eq(preflist_build(r, pos, 3, true, up_of, &u, true, &p), 0);
    ck_assert_uint_eq(p.n, 4);
    ck_assert_uint_eq(p.nodes[3].member, o[5]);
    ck_assert_uint_eq(p.n_skips, 7);
    expect_skip(&p, 0, 1, o[1], PREFLIST_SKIP_RACK_USED, -1);
    expect_skip(&p, 1, 2, o[2], PREFLIST_SKIP_DOWN, 3);
    expect_skip(&p, 2, 4, o[4], PREFLIST_SKIP_DOWN, -1);
    expect_skip(&p, 3, 0, o[0], PREFLIST_SKIP_USED, -1);
    expect_skip(&p, 4, 1, o[1], PREFLIST_SKIP_RACK_USED, -1);
    expect_skip(&p, 5, 2, o[2], PREFLIST_SKIP_USED, -1);
    expect_skip(&p, 6, 3, o[3], PREFLIST_SKIP_USED, -1);
    preflist_free(&p);

    /*
     * rf 4 with o3 down: the walk goes once around (three racks), sets aside
     * o1, o4, o5 and appends o1, which is then no skip.  The fallback walk
     * starts over at token 0; o4's rack B is used, o5's C is free (o3 is down).
     */
    u.down = 1ull << o[3];
    ck_assert_int_eq(preflist_build(r, pos, 4, true, up_of, &u, true, &p), 0);
    ck_assert_uint_eq(p.n_replicas, 4);
    ck_assert_uint_eq(p.nodes[3].member, o[1]);
    ck_assert_uint_eq(p.nodes[4].member, o[5]);
    ck_assert_int_eq(p.nodes[4].stands_for, 2);
    ck_assert_uint_eq(p.n_skips, 8);
    expect_skip(&p, 0, 3, o[3], PREFLIST_SKIP_DOWN, 4);
    expect_skip(&p, 1, 4, o[4], PREFLIST_SKIP_RACK_USED, -1);
    expect_skip(&p, 2, 5, o[5], PREFLIST_SKIP_RACK_USED, -1);
    expect_skip(&p, 3, 0, o[0], PREFLIST_SKIP_USED, -1);
    expect_skip(&p, 4, 1, o[1], PREFLIST_SKIP_USED, -1);
    expect_skip(&p, 5, 2, o[2], PREFLIST_SKIP_USED, -1);
    expect_skip(&p, 6, 3, o[3], PREFLIST_SKIP_USED, -1);
    expect_skip(&p, 7, 4, o[4], PREFLIST_SKIP_RACK_USED, -1);
    preflist_free(&p);
    ring_unref(r);
}
END_TEST

/*
 * A token repeated: two members in two racks, several tokens each; from a
 * token followed by one of the same member, the walk skips that one as the
 * same node, once, and then takes the other member.
 */
START_TEST(test_skip_same_node)
{
    struct members ms = {.n = 2};
    struct ring *r;
    struct preflist p;
    size_t t = 0, T;

    members_set(&ms, 0, "A", 16);
    members_set(&ms, 1, "B", 16);
    ck_assert_int_eq(ring_create(&r, ring_default_seed, ms.m, 2), 0);
    T = ring_token_count(r);
    while (t + 2 < T && ring_token_at(r, t).member != ring_token_at(r, t + 1).member) {
        t++;
    }
    ck_assert_uint_lt(t + 2, T);
    ck_assert_int_eq(preflist_build(r, ring_token_at(r, t).pos, 2, true, NULL, NULL, true, &p), 0);
    ck_assert_uint_eq(p.nodes[0].member, ring_token_at(r, t).member);
    ck_assert_uint_eq(p.n_skips, 1);
    expect_skip(&p, 0, t + 1, p.nodes[0].member, PREFLIST_SKIP_SAME_NODE, -1);
    preflist_free(&p);
    ring_unref(r);
}
END_TEST

static Suite *preflist_suite(void)
{
    Suite *s = suite_create("preflist");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"errors", test_errors},
        {"random_against_reference", test_random_against_reference},
        {"fast_path", test_fast_path_has_no_fallbacks},
        {"six_nodes_three_racks", test_six_nodes_three_racks},
        {"skips_hand_built", test_skips_hand_built},
        {"skip_same_node", test_skip_same_node},
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
    SRunner *sr = srunner_create(preflist_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
