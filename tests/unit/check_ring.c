/*
 * check_ring.c - unit tests of the placement module (src/placement/ring.c).
 *
 * Random rings come from a xorshift generator whose seed is printed, so a
 * failure can be replayed with RINGKV_TEST_SEED=<seed>.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ring.h"
#include "test_heap.h"
#include "test_rng.h"

static void rng_setup(void)
{
    rng_seed("check_ring");
}

/* A random member set: n members over `racks` racks with up to max_t tokens. */
struct rand_members {
    struct ring_member m[64];
    char ids[64][16];
    char racks[64][16];
    size_t n;
};

static void rand_members_make(struct rand_members *rm, size_t n, size_t racks, uint32_t max_t)
{
    rm->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(rm->ids[i], sizeof(rm->ids[i]), "n%zu", i);
        snprintf(rm->racks[i], sizeof(rm->racks[i]), "r%u", rng_below((uint32_t)racks));
        rm->m[i].id = rm->ids[i];
        rm->m[i].rack = rm->racks[i];
        rm->m[i].tokens = 1 + rng_below(max_t);
    }
}

static struct ring *ring_of(const struct rand_members *rm, const uint8_t *seed)
{
    struct ring *r;
    ck_assert_int_eq(ring_create(&r, seed ? seed : ring_default_seed, rm->m, rm->n), 0);
    return r;
}

START_TEST(test_hash_paper_vectors)
{
    uint8_t msg[64];
    for (int i = 0; i < 64; i++) {
        msg[i] = (uint8_t)i;
    }
    ck_assert_uint_eq(ring_hash(ring_default_seed, msg, 0), 0x726fdb47dd0e0e31ull);
    ck_assert_uint_eq(ring_hash(ring_default_seed, msg, 1), 0x74f839c593dc67fdull);
    ck_assert_uint_eq(ring_hash(ring_default_seed, msg, 15), 0xa129ca6149be45e5ull);
    ck_assert_uint_eq(ring_hash(ring_default_seed, msg, 63), 0x958a324ceb064572ull);
}
END_TEST

START_TEST(test_name_rules)
{
    char long_name[RING_NAME_MAX + 2];
    memset(long_name, 'a', sizeof(long_name));
    ck_assert(ring_name_valid("node-1", 6));
    ck_assert(ring_name_valid("A.z_0:9-", 8));
    ck_assert(ring_name_valid(long_name, RING_NAME_MAX));
    ck_assert(!ring_name_valid(long_name, RING_NAME_MAX + 1));
    ck_assert(!ring_name_valid("", 0));
    ck_assert(!ring_name_valid("a b", 3));
    ck_assert(!ring_name_valid("a,b", 3));
    ck_assert(!ring_name_valid("a#1", 3));
    ck_assert(!ring_name_valid("caf\xc3\xa9", 5));
    ck_assert(!ring_name_valid("a\0b", 3));
}
END_TEST

START_TEST(test_member_check)
{
    const char *what;
    struct ring_member m = {"a", "r1", 1};
    ck_assert_int_eq(ring_member_check(&m, &what), 0);
    m.tokens = RING_TOKENS_MAX;
    ck_assert_int_eq(ring_member_check(&m, &what), 0);
    m.tokens = 0;
    ck_assert_int_eq(ring_member_check(&m, &what), RK_ERANGE);
    ck_assert_str_eq(what, "tokens");
    m.tokens = RING_TOKENS_MAX + 1;
    ck_assert_int_eq(ring_member_check(&m, &what), RK_ERANGE);
    m = (struct ring_member){"bad id", "r1", 4};
    ck_assert_int_eq(ring_member_check(&m, &what), RK_EINVAL);
    ck_assert_str_eq(what, "id");
    m = (struct ring_member){"a", "", 4};
    ck_assert_int_eq(ring_member_check(&m, &what), RK_EINVAL);
    ck_assert_str_eq(what, "rack");
}
END_TEST

START_TEST(test_create_errors)
{
    struct ring *r = (struct ring *)1;
    struct ring_member dup[] = {{"a", "r1", 2}, {"b", "r1", 2}, {"a", "r2", 2}};
    struct ring_member bad[] = {{"a", "r1", 2}, {"b", "r/1", 2}};
    struct ring_member zero[] = {{"a", "r1", 0}};
    /* an invalid member after valid ones, its id NULL: refused before any comparison */
    struct ring_member no_id[] = {{"a", "r1", 2}, {NULL, "r1", 2}};

    ck_assert_int_eq(ring_create(&r, ring_default_seed, dup, 3), RK_EDUP);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(ring_create(&r, ring_default_seed, bad, 2), RK_EINVAL);
    ck_assert_int_eq(ring_create(&r, ring_default_seed, zero, 1), RK_ERANGE);
    ck_assert_int_eq(ring_create(&r, ring_default_seed, no_id, 2), RK_EINVAL);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(ring_create(&r, ring_default_seed, dup, RING_MEMBERS_MAX + 1), RK_ETOOBIG);
}
END_TEST

/*
 * The ring copies each id and rack name at its own length (ring.c keeps
 * them in one block): the shortest and the longest names, given out of id
 * order from memory freed once the ring is built, come back sorted and
 * whole, each member with its rack.
 */
START_TEST(test_names_copied)
{
    char *longest = malloc(RING_NAME_MAX + 1), *name[4], *rack[4];
    static const char *const want[] = {"a", NULL, "ab", "b"};
    struct ring_member m[4];
    struct ring *r;

    ck_assert_ptr_nonnull(longest);
    memset(longest, 'a', RING_NAME_MAX);
    longest[RING_NAME_MAX] = '\0';
    name[0] = strdup("b");
    name[1] = strdup(longest);
    name[2] = strdup("ab");
    name[3] = strdup("a");
    longest[0] = 'x';
    for (size_t i = 0; i < 4; i++) {
        rack[i] = strdup(i % 2 ? "r" : longest);
        m[i] = (struct ring_member){name[i], rack[i], (uint32_t)(1 + i)};
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, 4), 0);
    for (size_t i = 0; i < 4; i++) {
        free(name[i]);
        free(rack[i]);
    }
    ck_assert_uint_eq(ring_member_count(r), 4);
    ck_assert_uint_eq(ring_rack_count(r), 2);
    ck_assert_str_eq(ring_member_id(r, 0), "a");
    ck_assert_uint_eq(strlen(ring_member_id(r, 1)), RING_NAME_MAX);
    ck_assert_int_eq(ring_member_id(r, 1)[RING_NAME_MAX - 1], 'a');
    for (size_t i = 0; i < 4; i++) {
        /* given as b, a..a, ab, a: tokens 1, 2, 3, 4 and racks x..x, r, x..x, r */
        static const uint32_t tokens[] = {4, 2, 3, 1};
        const char *id = want[i] != NULL ? want[i] : ring_member_id(r, 1);
        ck_assert_str_eq(ring_member_id(r, (uint32_t)i), id);
        ck_assert_int_eq(ring_member_find(r, id), (int)i);
        ck_assert_uint_eq(ring_member_tokens(r, (uint32_t)i), tokens[i]);
        ck_assert_str_eq(ring_member_rack(r, (uint32_t)i), tokens[i] % 2 ? longest : "r");
    }
    ring_unref(r);
    free(longest);
}
END_TEST

/*
 * ring_heap_bytes() is what ring_create() allocates: a built ring keeps
 * that many bytes, plus the allocator's headers (at most a page for each
 * of its nine allocations), for rings small and large, of one token a
 * member and of many.
 */
START_TEST(test_heap_bytes)
{
    static const struct {
        size_t members, racks;
        uint32_t tokens;
    } shapes[] = {{1, 1, 1}, {3, 2, 4}, {100, 3, 1}, {300, 3, 16}, {5001, 3, 1}, {64, 64, 256}};
    char(*ids)[8] = calloc(5001, sizeof(*ids));
    char(*racks)[8] = calloc(64, sizeof(*racks));
    struct ring_member *m = calloc(5001, sizeof(*m));

    ck_assert(ids != NULL && racks != NULL && m != NULL);
    for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]) && heap_measurable(); s++) {
        size_t names = 0, before, kept, want;
        struct ring *r;

        for (size_t i = 0; i < shapes[s].racks; i++) {
            snprintf(racks[i], sizeof(racks[i]), "r%u", (unsigned)(i % 1000));
            names += strlen(racks[i]) + 1;
        }
        for (size_t i = 0; i < shapes[s].members; i++) {
            snprintf(ids[i], sizeof(ids[i]), "n%u", (unsigned)(i % 100000));
            m[i] = (struct ring_member){ids[i], racks[i % shapes[s].racks], shapes[s].tokens};
            names += strlen(ids[i]) + 1;
        }
        want = ring_heap_bytes(shapes[s].members, shapes[s].racks, shapes[s].tokens, names);
        before = heap_in_use();
        ck_assert_int_eq(ring_create(&r, ring_default_seed, m, shapes[s].members), 0);
        kept = heap_in_use() - before;
        ck_assert_uint_ge(kept, want);
        ck_assert_uint_le(kept, want + 9 * 4096);
        ring_unref(r);
    }
    free(ids);
    free(racks);
    free(m);
}
END_TEST

/*
 * A ring at RING_MEMBERS_MAX (8192: 5000 simulated members and a joiner fit)
 * builds, and the fast path's uint16_t member indices reach the last member:
 * for every token, ring_preflist() names the token's member first and agrees
 * with the walk.
 */
START_TEST(test_members_at_bound)
{
    struct ring_member *m = calloc(RING_MEMBERS_MAX, sizeof(*m));
    char(*ids)[8] = calloc(RING_MEMBERS_MAX, sizeof(*ids));
    static const char *const racks[] = {"r0", "r1", "r2"};
    struct ring *r;

    ck_assert(m != NULL && ids != NULL);
    for (size_t i = 0; i < RING_MEMBERS_MAX; i++) {
        snprintf(ids[i], sizeof(ids[i]), "m%04zu", i);
        m[i] = (struct ring_member){ids[i], racks[i % 3], 1};
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, RING_MEMBERS_MAX), 0);
    ck_assert_uint_eq(ring_member_count(r), RING_MEMBERS_MAX);
    ck_assert_int_eq(ring_member_find(r, "m8191"), RING_MEMBERS_MAX - 1);
    for (size_t t = 0; t < ring_token_count(r); t++) {
        struct ring_token tok = ring_token_at(r, t);
        uint32_t fast[3], walk[3];
        size_t n_fast, n_walk;
        ck_assert_int_eq(ring_preflist(r, tok.pos, 3, fast, &n_fast), 0);
        ck_assert_int_eq(ring_preflist_walk(r, tok.pos, 3, walk, &n_walk, NULL, NULL), 0);
        ck_assert(n_fast == 3 && n_walk == 3 && fast[0] == tok.member);
        ck_assert(memcmp(fast, walk, sizeof(fast)) == 0);
    }
    ring_unref(r);
    free(ids);
    free(m);
}
END_TEST

START_TEST(test_empty_ring)
{
    struct ring *r;
    uint32_t out[RING_RF_MAX];
    size_t n, t;
    ring_len own[1];

    ck_assert_int_eq(ring_create(&r, ring_default_seed, NULL, 0), 0);
    ck_assert_uint_eq(ring_member_count(r), 0);
    ck_assert_int_eq(ring_owner_token(r, 5, &t, NULL), RK_EEMPTY);
    ck_assert_int_eq(ring_preflist(r, 5, 3, out, &n), RK_EEMPTY);
    ck_assert_int_eq(ring_preflist_walk(r, 5, 3, out, &n, NULL, NULL), RK_EEMPTY);
    ck_assert_int_eq(ring_ownership(r, 1, own), RK_EEMPTY);
    ring_unref(r);
}
END_TEST

START_TEST(test_rf_bounds)
{
    struct ring_member m[] = {{"a", "r1", 4}, {"b", "r2", 4}};
    struct ring *r;
    uint32_t out[RING_RF_MAX];
    size_t n;

    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, 2), 0);
    ck_assert_int_eq(ring_preflist(r, 1, 0, out, &n), RK_ERANGE);
    ck_assert_int_eq(ring_preflist(r, 1, RING_RF_MAX + 1, out, &n), RK_ERANGE);
    ck_assert_int_eq(ring_preflist(r, 1, RING_RF_MAX, out, &n), 0);
    ck_assert_uint_eq(n, 2);
    ring_unref(r);
}
END_TEST

/* The two tie-break rules no 64-bit collision search can reach. */
START_TEST(test_token_order_rules)
{
    /* Position decides first, unsigned. */
    ck_assert_int_lt(ring_token_order(1, "z", 9, 2, "a", 0), 0);
    ck_assert_int_gt(ring_token_order(UINT64_MAX, "a", 0, 0, "z", 9), 0);
    /* Same position: id by bytes, a prefix first. */
    ck_assert_int_lt(ring_token_order(7, "node", 5, 7, "node-1", 0), 0);
    ck_assert_int_gt(ring_token_order(7, "node-1", 0, 7, "node", 5), 0);
    ck_assert_int_lt(ring_token_order(7, "A", 0, 7, "a", 0), 0);
    ck_assert_int_lt(ring_token_order(7, "n-2", 0, 7, "n.1", 0), 0);
    /* Same position, same node: token index as an integer, not as text. */
    ck_assert_int_lt(ring_token_order(7, "n", 2, 7, "n", 10), 0);
    ck_assert_int_gt(ring_token_order(7, "n", 10, 7, "n", 2), 0);
    ck_assert_int_eq(ring_token_order(7, "n", 3, 7, "n", 3), 0);
}
END_TEST

/* Every token of r follows the one before it in ring_token_order() order. */
static void check_tokens_sorted(const struct ring *r)
{
    for (size_t i = 1; i < ring_token_count(r); i++) {
        struct ring_token a = ring_token_at(r, i - 1), b = ring_token_at(r, i);
        ck_assert_int_lt(ring_token_order(a.pos, ring_member_id(r, a.member), a.index, b.pos,
                                          ring_member_id(r, b.member), b.index),
                         0);
    }
}

/* Tokens come out of ring_create() in ring_token_order() order. */
START_TEST(test_tokens_sorted)
{
    struct rand_members rm;
    struct ring *r;

    rand_members_make(&rm, 20, 4, 300);
    r = ring_of(&rm, NULL);
    check_tokens_sorted(r);
    ring_unref(r);
}
END_TEST

/* The same for a ring of 8 * RING_TOKENS_MAX tokens, which ring.c sorts by another algorithm. */
START_TEST(test_tokens_sorted_large)
{
    struct rand_members rm;
    struct ring *r;

    rand_members_make(&rm, 8, 4, 1);
    for (size_t m = 0; m < rm.n; m++) {
        rm.m[m].tokens = RING_TOKENS_MAX;
    }
    r = ring_of(&rm, NULL);
    ck_assert_uint_eq(ring_token_count(r), 8u * RING_TOKENS_MAX);
    check_tokens_sorted(r);
    ring_unref(r);
}
END_TEST

START_TEST(test_token_positions)
{
    struct ring_member m[] = {{"node-3", "r1", 8}};
    struct ring *r;
    bool found = false;

    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, 1), 0);
    for (size_t i = 0; i < ring_token_count(r); i++) {
        struct ring_token t = ring_token_at(r, i);
        if (t.index == 7) {
            ck_assert_uint_eq(t.pos, ring_hash(ring_default_seed, "node-3#7", 8));
            found = true;
        }
    }
    ck_assert(found);
    ring_unref(r);
}
END_TEST

START_TEST(test_owner_and_wrap)
{
    struct ring_member m[] = {{"a", "r1", 3}, {"b", "r2", 3}};
    struct ring *r;
    size_t t;
    bool wrapped;

    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, 2), 0);
    struct ring_token first = ring_token_at(r, 0);
    struct ring_token last = ring_token_at(r, ring_token_count(r) - 1);
    ck_assert_int_eq(ring_owner_token(r, first.pos, &t, &wrapped), 0);
    ck_assert_uint_eq(t, 0);
    ck_assert(!wrapped);
    ck_assert_int_eq(ring_owner_token(r, first.pos + 1, &t, &wrapped), 0);
    ck_assert_uint_eq(t, 1);
    ck_assert_int_eq(ring_owner_token(r, last.pos, &t, &wrapped), 0);
    ck_assert_uint_eq(t, ring_token_count(r) - 1);
    ck_assert(!wrapped);
    if (last.pos != UINT64_MAX) {
        ck_assert_int_eq(ring_owner_token(r, last.pos + 1, &t, &wrapped), 0);
        ck_assert_uint_eq(t, 0);
        ck_assert(wrapped);
    }
    ck_assert_int_eq(ring_owner_token(r, 0, &t, &wrapped), 0);
    ck_assert_uint_eq(t, 0);
    ring_unref(r);
}
END_TEST

/* Compare the table with the literal walk at position pos for every rf. */
static void check_fast_equals_walk(const struct ring *r, uint64_t pos)
{
    for (unsigned rf = 1; rf <= RING_RF_MAX; rf++) {
        uint32_t a[RING_RF_MAX], b[RING_RF_MAX];
        size_t na, nb;
        ck_assert_int_eq(ring_preflist(r, pos, rf, a, &na), 0);
        ck_assert_int_eq(ring_preflist_walk(r, pos, rf, b, &nb, NULL, NULL), 0);
        ck_assert_uint_eq(na, nb);
        ck_assert_uint_eq(na, rf < ring_member_count(r) ? rf : ring_member_count(r));
        ck_assert_mem_eq(a, b, na * sizeof(*a));
    }
}

START_TEST(test_fast_path_equals_walk)
{
    for (int round = 0; round < 300; round++) {
        struct rand_members rm;
        uint8_t seed[RING_SEED_LEN];
        size_t n = 1 + rng_below(40);
        size_t racks = 1 + rng_below((uint32_t)n + 1);
        uint32_t max_t = round % 3 == 0 ? 1 + rng_below(4) : 1 + rng_below(64);
        for (int i = 0; i < RING_SEED_LEN; i++) {
            seed[i] = (uint8_t)rng_next();
        }
        rand_members_make(&rm, n, racks, max_t);
        struct ring *r = ring_of(&rm, seed);
        for (int k = 0; k < 40; k++) {
            check_fast_equals_walk(r, rng_next());
        }
        for (size_t k = 0; k < ring_token_count(r); k += 1 + ring_token_count(r) / 16) {
            uint64_t p = ring_token_at(r, k).pos;
            check_fast_equals_walk(r, p);
            check_fast_equals_walk(r, p + 1);
        }
        check_fast_equals_walk(r, 0);
        check_fast_equals_walk(r, UINT64_MAX);
        ring_unref(r);
    }
}
END_TEST

static void count_step(void *ctx, enum ring_step step, size_t token, uint32_t member)
{
    (void)token;
    (void)member;
    ((int *)ctx)[step]++;
}

START_TEST(test_walk_steps)
{
    /* rf 3 over two racks: the walk must set aside and then append. */
    struct ring_member m[] = {{"a", "r1", 8}, {"b", "r1", 8}, {"c", "r2", 8}};
    struct ring *r;
    uint32_t out[3];
    size_t n;
    int counts[4] = {0};

    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, 3), 0);
    ck_assert_int_eq(ring_preflist_walk(r, 42, 3, out, &n, count_step, counts), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(counts[RING_STEP_CHOSEN], 2);
    ck_assert_int_eq(counts[RING_STEP_SET_ASIDE], 1);
    ck_assert_int_eq(counts[RING_STEP_APPENDED], 1);
    ck_assert_str_ne(ring_member_rack(r, out[0]), ring_member_rack(r, out[1]));
    ring_unref(r);
}
END_TEST

START_TEST(test_ownership_sums)
{
    struct rand_members rm;
    ring_len own[64], sum;

    rand_members_make(&rm, 12, 3, 256);
    struct ring *r = ring_of(&rm, NULL);
    for (unsigned rf = 1; rf <= 5; rf++) {
        ck_assert_int_eq(ring_ownership(r, rf, own), 0);
        sum = 0;
        for (size_t m = 0; m < ring_member_count(r); m++) {
            sum += own[m];
        }
        ck_assert(sum == RING_CIRCLE * rf);
    }
    ring_unref(r);
}
END_TEST

START_TEST(test_single_token_owns_circle)
{
    struct ring_member m[] = {{"solo", "r1", 1}};
    struct ring *r;
    ring_len own[1];

    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, 1), 0);
    ck_assert_int_eq(ring_ownership(r, 1, own), 0);
    ck_assert(own[0] == RING_CIRCLE);
    ck_assert_double_eq(ring_len_fraction(own[0]), 1.0);
    ring_unref(r);
}
END_TEST

/* Is p on the arc (start, end] of a move (wrapping when start >= end)? */
static bool on_arc(const struct ring_move *mv, uint64_t p)
{
    if (mv->start < mv->end) {
        return p > mv->start && p <= mv->end;
    }
    return p > mv->start || p <= mv->end;
}

static bool id_in(const char *const *l, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(l[i], id) == 0) {
            return true;
        }
    }
    return false;
}

/* Sampled positions agree with the diff: changed iff on a move, with its lists. */
static void check_diff_by_sampling(const struct ring *a, const struct ring *b, unsigned rf,
                                   const struct ring_diff *d)
{
    ring_len total = 0;
    for (size_t i = 0; i < d->n_moves; i++) {
        total += d->moves[i].len;
    }
    ck_assert(total == d->changed);
    for (int k = 0; k < 2000; k++) {
        uint64_t p = rng_next();
        uint32_t la[RING_RF_MAX], lb[RING_RF_MAX];
        size_t na, nb;
        const struct ring_move *hit = NULL;
        ck_assert_int_eq(ring_preflist(a, p, rf, la, &na), 0);
        ck_assert_int_eq(ring_preflist(b, p, rf, lb, &nb), 0);
        bool same = na == nb;
        for (size_t i = 0; same && i < na; i++) {
            same = strcmp(ring_member_id(a, la[i]), ring_member_id(b, lb[i])) == 0;
        }
        for (size_t i = 0; i < d->n_moves && hit == NULL; i++) {
            hit = on_arc(&d->moves[i], p) ? &d->moves[i] : NULL;
        }
        ck_assert_msg(same == (hit == NULL), "position %016" PRIx64 " misclassified", p);
        if (hit != NULL) {
            ck_assert_uint_eq(hit->n_old, na);
            for (size_t i = 0; i < na; i++) {
                ck_assert_str_eq(hit->old_list[i], ring_member_id(a, la[i]));
            }
            for (size_t i = 0; i < nb; i++) {
                ck_assert_str_eq(hit->new_list[i], ring_member_id(b, lb[i]));
            }
        }
    }
}

/* Join X to a random ring: only X gains, and what moves is exactly X's share. */
START_TEST(test_diff_join_moves_only_to_new_node)
{
    for (int round = 0; round < 40; round++) {
        struct rand_members rm;
        struct ring_diff d;
        ring_len own[64];
        size_t n = 1 + rng_below(20);
        unsigned rf = 1 + rng_below(5);
        rand_members_make(&rm, n + 1, 1 + rng_below(5), round % 2 ? 256 : 16);
        struct ring *after = ring_of(&rm, NULL);
        rm.n = n; /* the last member, n<n>, is the joiner */
        struct ring *before = ring_of(&rm, NULL);
        const char *x = rm.ids[n];

        ck_assert_int_eq(ring_diff(before, after, rf, &d), 0);
        for (size_t i = 0; i < d.n_moves; i++) {
            const struct ring_move *mv = &d.moves[i];
            for (size_t g = 0; g < mv->n_gain; g++) {
                ck_assert_str_eq(mv->gain[g], x);
            }
            ck_assert(!id_in(mv->lose, mv->n_lose, x));
        }
        ck_assert_int_eq(ring_ownership(after, rf, own), 0);
        ck_assert(d.moved == own[ring_member_find(after, x)]);
        ck_assert(d.copies == own[ring_member_find(after, x)]);
        check_diff_by_sampling(before, after, rf, &d);
        ring_diff_free(&d);
        ring_unref(before);
        ring_unref(after);
    }
}
END_TEST

/* Remove X: only X loses, and what moves is exactly what X held. */
START_TEST(test_diff_removal_moves_only_from_removed_node)
{
    for (int round = 0; round < 40; round++) {
        struct rand_members rm;
        struct ring_diff d;
        ring_len own[64];
        size_t n = 2 + rng_below(20);
        unsigned rf = 1 + rng_below(5);
        rand_members_make(&rm, n, 1 + rng_below(5), round % 2 ? 256 : 16);
        struct ring *before = ring_of(&rm, NULL);
        size_t victim = rng_below((uint32_t)n);
        char x[16];
        snprintf(x, sizeof(x), "%s", rm.ids[victim]);
        rm.m[victim] = rm.m[n - 1];
        rm.n = n - 1;
        struct ring *after = ring_of(&rm, NULL);

        ck_assert_int_eq(ring_diff(before, after, rf, &d), 0);
        for (size_t i = 0; i < d.n_moves; i++) {
            const struct ring_move *mv = &d.moves[i];
            for (size_t l = 0; l < mv->n_lose; l++) {
                ck_assert_str_eq(mv->lose[l], x);
            }
            ck_assert(!id_in(mv->gain, mv->n_gain, x));
        }
        ck_assert_int_eq(ring_ownership(before, rf, own), 0);
        ck_assert(d.moved == own[ring_member_find(before, x)]);
        if (n - 1 >= rf) {
            ck_assert(d.copies == own[ring_member_find(before, x)]);
        }
        check_diff_by_sampling(before, after, rf, &d);
        ring_diff_free(&d);
        ring_unref(before);
        ring_unref(after);
    }
}
END_TEST

START_TEST(test_diff_identical_and_errors)
{
    struct rand_members rm;
    struct ring_diff d;
    uint8_t other_seed[RING_SEED_LEN] = {1};
    struct ring *empty;

    rand_members_make(&rm, 5, 3, 32);
    struct ring *a = ring_of(&rm, NULL);
    struct ring *b = ring_of(&rm, NULL);
    struct ring *c = ring_of(&rm, other_seed);
    ck_assert_int_eq(ring_diff(a, b, 3, &d), 0);
    ck_assert_uint_eq(d.n_moves, 0);
    ck_assert(d.changed == 0 && d.moved == 0 && d.copies == 0);
    ring_diff_free(&d);
    ck_assert_int_eq(ring_diff(a, c, 3, &d), RK_EMISMATCH);
    ck_assert_int_eq(ring_diff(a, b, 0, &d), RK_ERANGE);
    ck_assert_int_eq(ring_create(&empty, ring_default_seed, NULL, 0), 0);
    ck_assert_int_eq(ring_diff(a, empty, 3, &d), RK_EEMPTY);
    ring_unref(empty);
    ring_unref(a);
    ring_unref(b);
    ring_unref(c);
}
END_TEST

/* Replacing a one-node ring moves the whole circle as one wrapped arc. */
START_TEST(test_diff_whole_circle)
{
    struct ring_member a[] = {{"a", "r1", 4}};
    struct ring_member b[] = {{"b", "r1", 4}};
    struct ring *ra, *rb;
    struct ring_diff d;

    ck_assert_int_eq(ring_create(&ra, ring_default_seed, a, 1), 0);
    ck_assert_int_eq(ring_create(&rb, ring_default_seed, b, 1), 0);
    ck_assert_int_eq(ring_diff(ra, rb, 1, &d), 0);
    ck_assert_uint_eq(d.n_moves, 1);
    ck_assert(d.moves[0].len == RING_CIRCLE);
    ck_assert(d.moved == RING_CIRCLE);
    ck_assert_uint_eq(d.moves[0].start, d.moves[0].end);
    ck_assert_str_eq(d.moves[0].lose[0], "a");
    ck_assert_str_eq(d.moves[0].gain[0], "b");
    ring_diff_free(&d);
    ring_unref(ra);
    ring_unref(rb);
}
END_TEST

/*
 * References: a new ring has one; ring_ref() returns the same ring with one
 * more; the ring outlives every release but the last, with its content and
 * digest intact (under ASan a read after the last release is an error);
 * NULL is accepted by both.
 */
START_TEST(test_refcount)
{
    struct ring_member a[] = {{"a", "r1", 8}, {"b", "r2", 8}};
    struct ring *r, *empty;
    const struct ring *held;
    uint64_t digest;

    ck_assert_int_eq(ring_create(&r, ring_default_seed, a, 2), 0);
    ck_assert_uint_eq(ring_refs(r), 1);
    digest = ring_digest(r);
    held = ring_ref(r);
    ck_assert_ptr_eq(held, r);
    ck_assert_uint_eq(ring_refs(r), 2);
    ck_assert_ptr_eq(ring_ref(r), r);
    ck_assert_uint_eq(ring_refs(r), 3);
    ring_unref(r); /* the creator's reference */
    ring_unref(r);
    ck_assert_uint_eq(ring_refs(held), 1);
    ck_assert_uint_eq(ring_member_count(held), 2);
    ck_assert_str_eq(ring_member_id(held, 1), "b");
    ck_assert_uint_eq(ring_digest(held), digest);
    ring_unref(held);

    ck_assert_ptr_null(ring_ref(NULL));
    ring_unref(NULL);

    /* An empty ring is counted the same way. */
    ck_assert_int_eq(ring_create(&empty, ring_default_seed, NULL, 0), 0);
    ck_assert_ptr_eq(ring_ref(empty), empty);
    ring_unref(empty);
    ck_assert_uint_eq(ring_refs(empty), 1);
    ring_unref(empty);

    /* A failed build hands out nothing to release. */
    a[1].tokens = 0;
    ck_assert_int_eq(ring_create(&r, ring_default_seed, a, 2), RK_ERANGE);
    ck_assert_ptr_null(r);
}
END_TEST

/* The digest is a function of the content: seed and members, whatever their order. */
START_TEST(test_digest_names_content)
{
    struct ring_member ab[] = {{"a", "r1", 8}, {"b", "r2", 8}};
    struct ring_member ba[] = {{"b", "r2", 8}, {"a", "r1", 8}};
    struct ring_member more[] = {{"a", "r1", 9}, {"b", "r2", 8}};
    uint8_t seed[RING_SEED_LEN] = {1};
    struct ring *x, *y, *z, *s;

    ck_assert_int_eq(ring_create(&x, ring_default_seed, ab, 2), 0);
    ck_assert_int_eq(ring_create(&y, ring_default_seed, ba, 2), 0);
    ck_assert_int_eq(ring_create(&z, ring_default_seed, more, 2), 0);
    ck_assert_int_eq(ring_create(&s, seed, ab, 2), 0);
    ck_assert_uint_eq(ring_digest(x), ring_digest(y));
    ck_assert_uint_ne(ring_digest(x), ring_digest(z));
    ck_assert_uint_ne(ring_digest(x), ring_digest(s));
    ring_unref(x);
    ring_unref(y);
    ring_unref(z);
    ring_unref(s);
}
END_TEST

static Suite *ring_suite(void)
{
    Suite *s = suite_create("ring");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"hash", test_hash_paper_vectors},
        {"names", test_name_rules},
        {"member_check", test_member_check},
        {"create_errors", test_create_errors},
        {"names_copied", test_names_copied},
        {"heap_bytes", test_heap_bytes},
        {"members_at_bound", test_members_at_bound},
        {"empty_ring", test_empty_ring},
        {"rf_bounds", test_rf_bounds},
        {"token_order", test_token_order_rules},
        {"tokens_sorted", test_tokens_sorted},
        {"tokens_sorted_large", test_tokens_sorted_large},
        {"token_positions", test_token_positions},
        {"owner_wrap", test_owner_and_wrap},
        {"fast_equals_walk", test_fast_path_equals_walk},
        {"walk_steps", test_walk_steps},
        {"ownership_sums", test_ownership_sums},
        {"single_token", test_single_token_owns_circle},
        {"diff_join", test_diff_join_moves_only_to_new_node},
        {"diff_removal", test_diff_removal_moves_only_from_removed_node},
        {"diff_identical", test_diff_identical_and_errors},
        {"diff_whole_circle", test_diff_whole_circle},
        {"refcount", test_refcount},
        {"digest", test_digest_names_content},
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
    SRunner *sr = srunner_create(ring_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
