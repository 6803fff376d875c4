/*
 * check_vclock.c - unit tests of the version vectors (storage/vclock.c).
 *
 * Fixed clocks pin each comparison case and each decoder rejection; random
 * clocks, from a xorshift generator whose seed is printed (replay with
 * RINGKV_TEST_SEED=<seed>), prove the merge laws, the increment and prune
 * guarantees and the encode/decode round trip.  Encoded bytes in the
 * decoder tests are written by a small builder here, straight from the
 * layout in vclock.h, never by vclock_encode(), so the decoder is checked
 * against the format and not against the encoder.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hlc.h"
#include "vclock.h"
#include "test_rng.h"

/* Random trials per property; enough to hit every pool-id overlap pattern many times. */
#define TRIALS 2000

static void rng_setup(void)
{
    rng_seed("check_vclock");
}

/*
 * A small pool, so random clocks share ids often; it holds prefix pairs
 * ("n", "n1", "n10") and ids whose bytes sort differently from their
 * lengths ("Z" < "_" < "a" in ASCII).
 */
static const char *const id_pool[] = {"a",      "b",   "n", "n1",  "n10", "n2",
                                      "node-3", "x.y", "Z", "z:9", "_",   "-"};
#define ID_POOL_N (sizeof(id_pool) / sizeof(id_pool[0]))

static const char id_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-";

/* Add `times` increments of id, the last with stamp. */
static void clock_add(struct vclock *vc, const char *id, unsigned times, uint64_t stamp)
{
    for (unsigned i = 0; i < times; i++) {
        ck_assert_int_eq(vclock_increment(vc, id, stamp), 0);
    }
}

/* A random valid id of 1..64 characters. */
static void rand_id(char out[RING_NAME_MAX + 1])
{
    size_t len = 1 + rng_below(RING_NAME_MAX);
    for (size_t i = 0; i < len; i++) {
        out[i] = id_alphabet[rng_below(sizeof(id_alphabet) - 1)];
    }
    out[len] = '\0';
}

/* A random clock of up to max_entries pool ids (long_ids: also random long ids). */
static void rand_clock(struct vclock *vc, unsigned max_entries, bool long_ids)
{
    unsigned k = rng_below(max_entries + 1);
    char id[RING_NAME_MAX + 1];

    for (unsigned i = 0; i < k; i++) {
        if (long_ids && rng_below(2) == 0) {
            rand_id(id);
        } else {
            strcpy(id, id_pool[rng_below(ID_POOL_N)]);
        }
        clock_add(vc, id, 1 + rng_below(3), rng_next());
    }
}

/* The ring order, written out independently of vclock.c. */
static int id_order(const struct vclock_entry *a, const struct vclock_entry *b)
{
    size_t n = a->id_len < b->id_len ? a->id_len : b->id_len;
    int c = memcmp(a->id, b->id, n);
    return c != 0 ? c : (int)a->id_len - (int)b->id_len;
}

/* Every invariant vclock.h lists. */
static void assert_valid(const struct vclock *vc)
{
    ck_assert_uint_le(vc->n, VCLOCK_ENTRIES_MAX);
    for (uint32_t i = 0; i < vc->n; i++) {
        ck_assert_uint_eq(strlen(vc->e[i].id), vc->e[i].id_len);
        ck_assert(ring_name_valid(vc->e[i].id, vc->e[i].id_len));
        ck_assert_uint_ge(vc->e[i].counter, 1);
        ck_assert(i == 0 || id_order(&vc->e[i - 1], &vc->e[i]) < 0);
    }
}

/* a and b hold the same entries, stamps included (their encodings match). */
static void assert_identical(const struct vclock *a, const struct vclock *b)
{
    size_t na = vclock_encoded_size(a);
    uint8_t *ba = malloc(na), *bb = malloc(na);

    ck_assert_uint_eq(vclock_encoded_size(b), na);
    ck_assert_ptr_nonnull(ba);
    ck_assert_ptr_nonnull(bb);
    ck_assert_uint_eq(vclock_encode(a, ba), na);
    ck_assert_uint_eq(vclock_encode(b, bb), na);
    ck_assert_mem_eq(ba, bb, na);
    free(ba);
    free(bb);
}

/* The merge of a and b into a fresh clock. */
static void merged(struct vclock *out, const struct vclock *a, const struct vclock *b)
{
    vclock_init(out);
    ck_assert_int_eq(vclock_copy(out, a), 0);
    ck_assert_int_eq(vclock_merge(out, b), 0);
    assert_valid(out);
}

static void assert_order(const struct vclock *a, const struct vclock *b, enum vclock_order ab)
{
    static const enum vclock_order mirror[] = {
        [VCLOCK_EQUAL] = VCLOCK_EQUAL,
        [VCLOCK_BEFORE] = VCLOCK_AFTER,
        [VCLOCK_AFTER] = VCLOCK_BEFORE,
        [VCLOCK_CONCURRENT] = VCLOCK_CONCURRENT,
    };
    ck_assert_int_eq(vclock_compare(a, b), ab);
    ck_assert_int_eq(vclock_compare(b, a), mirror[ab]);
    ck_assert(vclock_descends(a, b) == (ab == VCLOCK_EQUAL || ab == VCLOCK_AFTER));
    ck_assert(vclock_descends(b, a) == (ab == VCLOCK_EQUAL || ab == VCLOCK_BEFORE));
}

/* Encoded bytes written by hand from vclock.h's layout. */
struct bytes {
    uint8_t b[8192];
    size_t n;
};

static void bytes_u8(struct bytes *w, uint8_t v)
{
    w->b[w->n++] = v;
}

static void bytes_u16(struct bytes *w, uint16_t v)
{
    bytes_u8(w, (uint8_t)(v >> 8));
    bytes_u8(w, (uint8_t)v);
}

static void bytes_u64(struct bytes *w, uint64_t v)
{
    for (int shift = 56; shift >= 0; shift -= 8) {
        bytes_u8(w, (uint8_t)(v >> shift));
    }
}

/* An entry whose id is the raw bytes id[0..id_len), valid or not. */
static void bytes_entry_raw(struct bytes *w, const char *id, size_t id_len, uint64_t counter,
                            uint64_t stamp)
{
    bytes_u8(w, (uint8_t)id_len);
    memcpy(&w->b[w->n], id, id_len);
    w->n += id_len;
    bytes_u64(w, counter);
    bytes_u64(w, stamp);
}

static void bytes_entry(struct bytes *w, const char *id, uint64_t counter, uint64_t stamp)
{
    bytes_entry_raw(w, id, strlen(id), counter, stamp);
}

/* Decode w, expecting err; the clock must come out empty. */
static void assert_decode_fails(const struct bytes *w, int err)
{
    struct vclock vc;
    size_t used = 12345;

    vclock_init(&vc);
    clock_add(&vc, "stale", 1, 1);
    ck_assert_int_eq(vclock_decode(w->b, w->n, &used, &vc), err);
    ck_assert_uint_eq(vc.n, 0);
    ck_assert_uint_eq(used, 12345);
    vclock_deinit(&vc);
}

START_TEST(test_compare_equal)
{
    struct vclock a, b;

    vclock_init(&a);
    vclock_init(&b);
    assert_order(&a, &b, VCLOCK_EQUAL);
    clock_add(&a, "a", 1, 10);
    clock_add(&a, "b", 2, 11);
    clock_add(&b, "b", 2, 11);
    clock_add(&b, "a", 1, 10);
    assert_order(&a, &b, VCLOCK_EQUAL);
    assert_order(&a, &a, VCLOCK_EQUAL);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

START_TEST(test_compare_before_after)
{
    struct vclock a, b;

    vclock_init(&a);
    vclock_init(&b);
    clock_add(&a, "a", 1, 10);
    clock_add(&b, "a", 2, 20);
    assert_order(&a, &b, VCLOCK_BEFORE);
    clock_add(&a, "b", 1, 30);
    clock_add(&b, "b", 1, 30);
    assert_order(&a, &b, VCLOCK_BEFORE);
    clock_add(&b, "c", 4, 40);
    assert_order(&b, &a, VCLOCK_AFTER);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

START_TEST(test_compare_concurrent)
{
    struct vclock a, b;

    vclock_init(&a);
    vclock_init(&b);
    clock_add(&a, "a", 2, 10);
    clock_add(&a, "b", 1, 10);
    clock_add(&b, "a", 1, 10);
    clock_add(&b, "b", 2, 10);
    assert_order(&a, &b, VCLOCK_CONCURRENT);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

START_TEST(test_compare_empty)
{
    struct vclock empty, a;

    vclock_init(&empty);
    vclock_init(&a);
    clock_add(&a, "a", 1, 10);
    assert_order(&empty, &a, VCLOCK_BEFORE);
    assert_order(&a, &empty, VCLOCK_AFTER);
    vclock_deinit(&a);
}
END_TEST

START_TEST(test_compare_disjoint)
{
    struct vclock a, b;

    vclock_init(&a);
    vclock_init(&b);
    clock_add(&a, "a", 3, 10);
    clock_add(&b, "b", 1, 10);
    assert_order(&a, &b, VCLOCK_CONCURRENT);
    clock_add(&a, "c", 1, 10);
    clock_add(&b, "d", 1, 10);
    assert_order(&a, &b, VCLOCK_CONCURRENT);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

/* "n" and "n1" are different nodes; "n" sorts first, "n1" before "n2". */
START_TEST(test_compare_prefix_ids)
{
    struct vclock a, b;

    vclock_init(&a);
    vclock_init(&b);
    clock_add(&a, "n", 1, 10);
    clock_add(&b, "n1", 1, 10);
    assert_order(&a, &b, VCLOCK_CONCURRENT);
    clock_add(&a, "n1", 1, 10);
    assert_order(&a, &b, VCLOCK_AFTER);
    clock_add(&b, "n2", 1, 10);
    clock_add(&b, "n", 1, 10);
    assert_order(&a, &b, VCLOCK_BEFORE);
    ck_assert_str_eq(b.e[0].id, "n");
    ck_assert_str_eq(b.e[1].id, "n1");
    ck_assert_str_eq(b.e[2].id, "n2");
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

START_TEST(test_compare_ignores_stamps)
{
    struct vclock a, b;

    vclock_init(&a);
    vclock_init(&b);
    clock_add(&a, "a", 2, 10);
    clock_add(&b, "a", 2, 99);
    assert_order(&a, &b, VCLOCK_EQUAL);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

/* Over random pairs, compare() is antisymmetric and agrees with descends(). */
START_TEST(test_compare_random_consistent)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&a, 6, false);
        rand_clock(&b, 6, false);
        assert_order(&a, &b, vclock_compare(&a, &b));
        vclock_deinit(&a);
        vclock_deinit(&b);
    }
}
END_TEST

START_TEST(test_merge_commutative)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b, ab, ba;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&a, 8, false);
        rand_clock(&b, 8, false);
        merged(&ab, &a, &b);
        merged(&ba, &b, &a);
        assert_identical(&ab, &ba);
        vclock_deinit(&a);
        vclock_deinit(&b);
        vclock_deinit(&ab);
        vclock_deinit(&ba);
    }
}
END_TEST

START_TEST(test_merge_associative)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b, c, ab, ab_c, bc, a_bc;
        vclock_init(&a);
        vclock_init(&b);
        vclock_init(&c);
        rand_clock(&a, 8, false);
        rand_clock(&b, 8, false);
        rand_clock(&c, 8, false);
        merged(&ab, &a, &b);
        merged(&ab_c, &ab, &c);
        merged(&bc, &b, &c);
        merged(&a_bc, &a, &bc);
        assert_identical(&ab_c, &a_bc);
        vclock_deinit(&a);
        vclock_deinit(&b);
        vclock_deinit(&c);
        vclock_deinit(&ab);
        vclock_deinit(&ab_c);
        vclock_deinit(&bc);
        vclock_deinit(&a_bc);
    }
}
END_TEST

/* a and b hold the same entries, stamps included (compared field by field). */
static bool entries_same(const struct vclock *a, const struct vclock *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (uint32_t i = 0; i < a->n; i++) {
        if (id_order(&a->e[i], &b->e[i]) != 0 || a->e[i].counter != b->e[i].counter ||
            a->e[i].stamp != b->e[i].stamp) {
            return false;
        }
    }
    return true;
}

/* Entry i of vc, or NULL: its id's counter and stamp, looked up by hand. */
static const struct vclock_entry *entry_of(const struct vclock *vc, const struct vclock_entry *x)
{
    for (uint32_t i = 0; i < vc->n; i++) {
        if (id_order(&vc->e[i], x) == 0) {
            return &vc->e[i];
        }
    }
    return NULL;
}

/*
 * The merge is the same whether it is written into dst's own array (room
 * enough: a clock grown by increments, or copied over a larger one) or into
 * a new one (a copy of exactly its size, when src brings new ids): every id
 * of either side, each with the larger (counter, stamp) pair.
 */
START_TEST(test_merge_in_place_or_not)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b, big, roomy, tight;
        vclock_init(&a);
        vclock_init(&b);
        vclock_init(&big);
        vclock_init(&roomy);
        vclock_init(&tight);
        rand_clock(&a, 8, t % 2 == 0);
        rand_clock(&b, 8, t % 2 == 0);
        for (unsigned i = 0; i < 17; i++) {
            char id[8];
            snprintf(id, sizeof(id), "r%u", i);
            clock_add(&big, id, 1, 1);
        }
        ck_assert_int_eq(vclock_copy(&roomy, &big), 0);
        ck_assert_int_eq(vclock_copy(&roomy, &a), 0); /* a's entries in big's array */
        ck_assert_uint_ge(roomy.cap, 17);
        ck_assert_int_eq(vclock_copy(&tight, &a), 0);
        ck_assert_int_eq(vclock_merge(&roomy, &b), 0);
        ck_assert_int_eq(vclock_merge(&tight, &b), 0);
        assert_valid(&roomy);
        assert_identical(&roomy, &tight);
        for (int side = 0; side < 2; side++) {
            const struct vclock *in = side == 0 ? &a : &b, *other = side == 0 ? &b : &a;
            for (uint32_t i = 0; i < in->n; i++) {
                const struct vclock_entry *m = entry_of(&roomy, &in->e[i]);
                const struct vclock_entry *o = entry_of(other, &in->e[i]);
                const struct vclock_entry *want = &in->e[i];
                if (o != NULL && (o->counter > want->counter ||
                                  (o->counter == want->counter && o->stamp > want->stamp))) {
                    want = o;
                }
                ck_assert_ptr_nonnull(m);
                ck_assert_uint_eq(m->counter, want->counter);
                ck_assert_uint_eq(m->stamp, want->stamp);
            }
        }
        for (uint32_t i = 0; i < roomy.n; i++) {
            ck_assert(entry_of(&a, &roomy.e[i]) != NULL || entry_of(&b, &roomy.e[i]) != NULL);
        }
        vclock_deinit(&a);
        vclock_deinit(&b);
        vclock_deinit(&big);
        vclock_deinit(&roomy);
        vclock_deinit(&tight);
    }
}
END_TEST

/* covers(a, b) says exactly whether merging b into a leaves a as it was, stamps included. */
START_TEST(test_covers_is_merge_noop)
{
    size_t yes = 0;

    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b, m;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&a, 8, false);
        rand_clock(&b, 4, false);
        if (t % 3 == 0) {
            merged(&m, &a, &b); /* a clock that covers b */
            vclock_deinit(&a);
            a = m;
        }
        merged(&m, &a, &b);
        ck_assert(vclock_covers(&a, &b) == entries_same(&m, &a));
        yes += vclock_covers(&a, &b);
        ck_assert(vclock_covers(&m, &a) && vclock_covers(&m, &b));
        vclock_deinit(&a);
        vclock_deinit(&b);
        vclock_deinit(&m);
    }
    ck_assert_uint_gt(yes, TRIALS / 4);
}
END_TEST

/* merge(a, a) is a, both through a copy and with dst and src the same clock. */
START_TEST(test_merge_idempotent)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, aa, self;
        vclock_init(&a);
        vclock_init(&self);
        rand_clock(&a, 8, true);
        merged(&aa, &a, &a);
        assert_identical(&aa, &a);
        ck_assert_int_eq(vclock_copy(&self, &a), 0);
        ck_assert_int_eq(vclock_merge(&self, &self), 0);
        assert_identical(&self, &a);
        vclock_deinit(&a);
        vclock_deinit(&aa);
        vclock_deinit(&self);
    }
}
END_TEST

START_TEST(test_merge_descends_inputs)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b, m;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&a, 8, false);
        rand_clock(&b, 8, false);
        merged(&m, &a, &b);
        ck_assert(vclock_descends(&m, &a));
        ck_assert(vclock_descends(&m, &b));
        for (size_t i = 0; i < ID_POOL_N; i++) {
            uint64_t ca = vclock_get(&a, id_pool[i]), cb = vclock_get(&b, id_pool[i]);
            ck_assert_uint_eq(vclock_get(&m, id_pool[i]), ca > cb ? ca : cb);
        }
        vclock_deinit(&a);
        vclock_deinit(&b);
        vclock_deinit(&m);
    }
}
END_TEST

/*
 * b is an ancestor of a: a is b plus later writes, stamped later as an HLC
 * would stamp them.  Merging b into a, or a into b, gives a.
 */
START_TEST(test_merge_ancestor_is_identity)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b, ab, ba;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&b, 8, false);
        ck_assert_int_eq(vclock_copy(&a, &b), 0);
        for (unsigned k = rng_below(4); k > 0; k--) {
            clock_add(&a, id_pool[rng_below(ID_POOL_N)], 1, UINT64_MAX - rng_below(1000));
        }
        ck_assert(vclock_descends(&a, &b));
        merged(&ab, &a, &b);
        merged(&ba, &b, &a);
        assert_identical(&ab, &a);
        assert_identical(&ba, &a);
        vclock_deinit(&a);
        vclock_deinit(&b);
        vclock_deinit(&ab);
        vclock_deinit(&ba);
    }
}
END_TEST

/* The stamp follows the larger counter; equal counters keep the larger stamp. */
START_TEST(test_merge_stamp_rule)
{
    struct vclock a, b, m;

    vclock_init(&a);
    vclock_init(&b);
    clock_add(&a, "x", 2, 5);
    clock_add(&b, "x", 1, 9);
    clock_add(&a, "y", 1, 5);
    clock_add(&b, "y", 1, 9);
    merged(&m, &a, &b);
    ck_assert_uint_eq(m.n, 2);
    ck_assert_uint_eq(m.e[0].counter, 2);
    ck_assert_uint_eq(m.e[0].stamp, 5);
    ck_assert_uint_eq(m.e[1].counter, 1);
    ck_assert_uint_eq(m.e[1].stamp, 9);
    vclock_deinit(&m);
    merged(&m, &b, &a);
    ck_assert_uint_eq(m.e[0].stamp, 5);
    ck_assert_uint_eq(m.e[1].stamp, 9);
    vclock_deinit(&m);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

/* A clock of n entries with ids "<prefix>0" .. "<prefix>n-1". */
static void clock_many(struct vclock *vc, const char *prefix, unsigned n)
{
    char id[RING_NAME_MAX + 1];

    for (unsigned i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "%s%u", prefix, i);
        clock_add(vc, id, 1, i);
    }
}

START_TEST(test_merge_too_big)
{
    struct vclock a, b, before;

    vclock_init(&a);
    vclock_init(&b);
    vclock_init(&before);
    clock_many(&a, "a", VCLOCK_ENTRIES_MAX);
    clock_many(&b, "a", VCLOCK_ENTRIES_MAX);
    ck_assert_int_eq(vclock_merge(&a, &b), 0);
    ck_assert_uint_eq(a.n, VCLOCK_ENTRIES_MAX);
    vclock_deinit(&b);
    clock_add(&b, "b", 1, 1);
    ck_assert_int_eq(vclock_copy(&before, &a), 0);
    ck_assert_int_eq(vclock_merge(&a, &b), RK_ECLOCKFULL);
    assert_identical(&a, &before);
    vclock_deinit(&a);
    vclock_deinit(&b);
    vclock_deinit(&before);
}
END_TEST

START_TEST(test_increment_after)
{
    char id[RING_NAME_MAX + 1];

    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&a, 8, true);
        ck_assert_int_eq(vclock_copy(&b, &a), 0);
        if (rng_below(2) == 0) {
            rand_id(id);
        } else {
            strcpy(id, id_pool[rng_below(ID_POOL_N)]);
        }
        ck_assert_int_eq(vclock_increment(&b, id, 77), 0);
        assert_valid(&b);
        ck_assert_int_eq(vclock_compare(&b, &a), VCLOCK_AFTER);
        ck_assert_uint_eq(vclock_get(&b, id), vclock_get(&a, id) + 1);
        vclock_deinit(&a);
        vclock_deinit(&b);
    }
}
END_TEST

START_TEST(test_increment_sets_stamp)
{
    struct vclock vc;

    vclock_init(&vc);
    clock_add(&vc, "a", 1, 100);
    ck_assert_uint_eq(vc.e[0].counter, 1);
    ck_assert_uint_eq(vc.e[0].stamp, 100);
    clock_add(&vc, "a", 1, 250);
    ck_assert_uint_eq(vc.e[0].counter, 2);
    ck_assert_uint_eq(vc.e[0].stamp, 250);
    vclock_deinit(&vc);
}
END_TEST

START_TEST(test_increment_errors)
{
    static const char *const bad[] = {
        "",  "a b", "a/b",
        "é", "n\n", "x1234567890123456789012345678901234567890123456789012345678901234",
    };
    struct vclock vc, before;
    struct bytes w = {.n = 0};
    size_t used;

    vclock_init(&vc);
    vclock_init(&before);
    clock_add(&vc, "a", 1, 1);
    ck_assert_int_eq(vclock_copy(&before, &vc), 0);
    ck_assert_int_eq(vclock_increment(&vc, NULL, 1), RK_EINVAL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_eq(vclock_increment(&vc, bad[i], 1), RK_EINVAL);
    }
    assert_identical(&vc, &before);

    bytes_u16(&w, 1);
    bytes_entry(&w, "a", UINT64_MAX, 5);
    ck_assert_int_eq(vclock_decode(w.b, w.n, &used, &vc), 0);
    ck_assert_int_eq(vclock_increment(&vc, "a", 6), RK_ERANGE);
    ck_assert_uint_eq(vc.e[0].counter, UINT64_MAX);
    ck_assert_uint_eq(vc.e[0].stamp, 5);

    vclock_deinit(&vc);
    clock_many(&vc, "n", VCLOCK_ENTRIES_MAX);
    ck_assert_int_eq(vclock_increment(&vc, "other", 1), RK_ECLOCKFULL);
    ck_assert_uint_eq(vc.n, VCLOCK_ENTRIES_MAX);
    ck_assert_int_eq(vclock_increment(&vc, "n7", 1), 0);
    vclock_deinit(&vc);
    vclock_deinit(&before);
}
END_TEST

START_TEST(test_get)
{
    struct vclock vc;

    vclock_init(&vc);
    ck_assert_uint_eq(vclock_get(&vc, "a"), 0);
    clock_add(&vc, "n1", 3, 1);
    clock_add(&vc, "n", 1, 1);
    clock_add(&vc, "n10", 2, 1);
    ck_assert_uint_eq(vclock_get(&vc, "n"), 1);
    ck_assert_uint_eq(vclock_get(&vc, "n1"), 3);
    ck_assert_uint_eq(vclock_get(&vc, "n10"), 2);
    ck_assert_uint_eq(vclock_get(&vc, "n2"), 0);
    ck_assert_uint_eq(vclock_get(&vc, ""), 0);
    ck_assert_uint_eq(vclock_get(&vc, NULL), 0);
    vclock_deinit(&vc);
}
END_TEST

/* A copy is independent of its source, and copying over a clock replaces it. */
START_TEST(test_copy)
{
    struct vclock a, b, empty;

    vclock_init(&a);
    vclock_init(&b);
    vclock_init(&empty);
    clock_add(&a, "a", 2, 1);
    clock_add(&b, "z", 5, 1);
    ck_assert_int_eq(vclock_copy(&b, &a), 0);
    assert_identical(&a, &b);
    clock_add(&a, "a", 1, 2);
    ck_assert_uint_eq(vclock_get(&b, "a"), 2);
    ck_assert_uint_eq(vclock_get(&b, "z"), 0);
    ck_assert_int_eq(vclock_copy(&b, &empty), 0);
    ck_assert_uint_eq(b.n, 0);
    vclock_deinit(&a);
    vclock_deinit(&b);
}
END_TEST

/* Prune arguments shared by the prune tests: now is 10^6 ms, min_age 1000 ms. */
#define NOW_MS 1000000u
#define MIN_AGE_MS 1000u
#define OLD_MS (NOW_MS - MIN_AGE_MS - 1)

/* Ten entries "e0".."e9"; entry i last moved at old_ms - 10 * order[i]. */
static void clock_aged(struct vclock *vc, const unsigned order[10])
{
    char id[8];

    vclock_init(vc);
    for (unsigned i = 0; i < 10; i++) {
        snprintf(id, sizeof(id), "e%u", i);
        clock_add(vc, id, 1 + i, hlc_make(OLD_MS - 10 * order[i], i));
    }
}

START_TEST(test_prune_keeps_keep)
{
    static const unsigned order[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct vclock vc;

    clock_aged(&vc, order);
    ck_assert_uint_eq(vclock_prune(&vc, 4, NOW_MS, MIN_AGE_MS), 6);
    ck_assert_uint_eq(vc.n, 4);
    assert_valid(&vc);
    ck_assert_uint_eq(vclock_prune(&vc, 4, NOW_MS, MIN_AGE_MS), 0);
    ck_assert_uint_eq(vclock_prune(&vc, 0, NOW_MS, MIN_AGE_MS), 4);
    ck_assert_uint_eq(vc.n, 0);
    vclock_deinit(&vc);
}
END_TEST

/* The survivors are the newest, whatever the id order: e6, e1, e8 here. */
START_TEST(test_prune_oldest_first)
{
    static const unsigned order[10] = {5, 1, 4, 9, 7, 3, 0, 6, 2, 8};
    struct vclock vc;

    clock_aged(&vc, order);
    ck_assert_uint_eq(vclock_prune(&vc, 3, NOW_MS, MIN_AGE_MS), 7);
    ck_assert_uint_eq(vc.n, 3);
    ck_assert_str_eq(vc.e[0].id, "e1");
    ck_assert_str_eq(vc.e[1].id, "e6");
    ck_assert_str_eq(vc.e[2].id, "e8");
    ck_assert_uint_eq(vc.e[0].counter, 2);
    ck_assert_uint_eq(vc.e[1].counter, 7);
    ck_assert_uint_eq(vc.e[2].counter, 9);
    vclock_deinit(&vc);
}
END_TEST

/* Only entries older than now - min_age go, however far over keep the clock is. */
START_TEST(test_prune_min_age)
{
    struct vclock vc;

    vclock_init(&vc);
    clock_add(&vc, "old1", 1, hlc_make(OLD_MS - 500, 0));
    clock_add(&vc, "old2", 1, hlc_make(OLD_MS, HLC_LOGICAL_MAX));
    clock_add(&vc, "edge", 1, hlc_make(NOW_MS - MIN_AGE_MS, 0));
    clock_add(&vc, "young", 1, hlc_make(NOW_MS - 1, 0));
    clock_add(&vc, "future", 1, hlc_make(NOW_MS + 5000, 0));
    ck_assert_uint_eq(vclock_prune(&vc, 0, NOW_MS, MIN_AGE_MS), 2);
    ck_assert_uint_eq(vc.n, 3);
    ck_assert_str_eq(vc.e[0].id, "edge");
    ck_assert_str_eq(vc.e[1].id, "future");
    ck_assert_str_eq(vc.e[2].id, "young");
    ck_assert_uint_eq(vclock_prune(&vc, 0, NOW_MS, MIN_AGE_MS), 0);
    ck_assert_uint_eq(vclock_prune(&vc, 0, MIN_AGE_MS - 1, MIN_AGE_MS), 0);
    ck_assert_uint_eq(vc.n, 3);
    vclock_deinit(&vc);
}
END_TEST

START_TEST(test_prune_under_keep)
{
    static const unsigned order[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    struct vclock vc, before;

    clock_aged(&vc, order);
    vclock_init(&before);
    ck_assert_int_eq(vclock_copy(&before, &vc), 0);
    ck_assert_uint_eq(vclock_prune(&vc, 10, NOW_MS, MIN_AGE_MS), 0);
    ck_assert_uint_eq(vclock_prune(&vc, VCLOCK_PRUNE_KEEP_DEFAULT, NOW_MS, 0), 0);
    assert_identical(&vc, &before);
    vclock_deinit(&vc);
    vclock_deinit(&before);
}
END_TEST

/* Equal stamps are dropped in id order, so every replica keeps the same entries. */
START_TEST(test_prune_ties_by_id)
{
    struct vclock vc;

    vclock_init(&vc);
    clock_add(&vc, "c", 1, hlc_make(OLD_MS, 0));
    clock_add(&vc, "a", 1, hlc_make(OLD_MS, 0));
    clock_add(&vc, "b", 1, hlc_make(OLD_MS, 0));
    ck_assert_uint_eq(vclock_prune(&vc, 1, NOW_MS, MIN_AGE_MS), 2);
    ck_assert_str_eq(vc.e[0].id, "c");
    vclock_deinit(&vc);
}
END_TEST

/* Random clocks, keeps and ages: pruning only forgets, so never AFTER. */
START_TEST(test_prune_never_after)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock orig, p;
        uint64_t now = rng_next() >> 18, min_age = rng_next() >> (18 + rng_below(46));
        size_t keep = rng_below(8), dropped;
        vclock_init(&orig);
        vclock_init(&p);
        rand_clock(&orig, 12, true);
        ck_assert_int_eq(vclock_copy(&p, &orig), 0);
        dropped = vclock_prune(&p, keep, now, min_age);
        assert_valid(&p);
        ck_assert_uint_eq(p.n + dropped, orig.n);
        ck_assert(dropped == 0 || p.n >= keep);
        ck_assert_int_ne(vclock_compare(&p, &orig), VCLOCK_AFTER);
        ck_assert(vclock_descends(&orig, &p));
        vclock_deinit(&orig);
        vclock_deinit(&p);
    }
}
END_TEST

START_TEST(test_codec_round_trip)
{
    for (int t = 0; t < TRIALS; t++) {
        struct vclock a, b;
        size_t size, used = 0;
        uint8_t *buf;
        vclock_init(&a);
        vclock_init(&b);
        rand_clock(&a, 20, true);
        size = vclock_encoded_size(&a);
        buf = malloc(size + 3);
        ck_assert_ptr_nonnull(buf);
        ck_assert_uint_eq(vclock_encode(&a, buf), size);
        memcpy(buf + size, "\x00\xff\x07", 3);
        ck_assert_int_eq(vclock_decode(buf, size + 3, &used, &b), 0);
        ck_assert_uint_eq(used, size);
        assert_valid(&b);
        assert_identical(&a, &b);
        free(buf);
        vclock_deinit(&a);
        vclock_deinit(&b);
    }
}
END_TEST

/*
 * { "a": counter 1, stamp 0x0102030405060708; "n1": counter 0x1234,
 * stamp 0x1122334455667788 }, byte by byte.
 */
static const uint8_t golden[] = {
    0x00, 0x02,                                     /* n = 2 */
    0x01, 'a',                                      /* id_len 1, "a" */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, /* counter 1 */
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, /* stamp */
    0x02, 'n',  '1',                                /* id_len 2, "n1" */
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34, /* counter 0x1234 */
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, /* stamp */
};

START_TEST(test_codec_golden)
{
    struct vclock vc;
    uint8_t out[sizeof(golden)];
    size_t used = 0;

    vclock_init(&vc);
    ck_assert_int_eq(vclock_decode(golden, sizeof(golden), &used, &vc), 0);
    ck_assert_uint_eq(used, sizeof(golden));
    ck_assert_uint_eq(vc.n, 2);
    ck_assert_str_eq(vc.e[0].id, "a");
    ck_assert_uint_eq(vc.e[0].counter, 1);
    ck_assert_uint_eq(vc.e[0].stamp, 0x0102030405060708ull);
    ck_assert_str_eq(vc.e[1].id, "n1");
    ck_assert_uint_eq(vc.e[1].counter, 0x1234);
    ck_assert_uint_eq(vc.e[1].stamp, 0x1122334455667788ull);
    ck_assert_uint_eq(vclock_encoded_size(&vc), sizeof(golden));
    ck_assert_uint_eq(vclock_encode(&vc, out), sizeof(golden));
    ck_assert_mem_eq(out, golden, sizeof(golden));
    vclock_deinit(&vc);
}
END_TEST

START_TEST(test_codec_empty)
{
    static const uint8_t empty[] = {0x00, 0x00};
    struct vclock vc;
    uint8_t out[2];
    size_t used = 0;

    vclock_init(&vc);
    ck_assert_uint_eq(vclock_encoded_size(&vc), 2);
    ck_assert_uint_eq(vclock_encode(&vc, out), 2);
    ck_assert_mem_eq(out, empty, 2);
    clock_add(&vc, "stale", 1, 1);
    ck_assert_int_eq(vclock_decode(empty, 2, &used, &vc), 0);
    ck_assert_uint_eq(used, 2);
    ck_assert_uint_eq(vc.n, 0);
    vclock_deinit(&vc);
}
END_TEST

/* Every proper prefix of a valid encoding is truncated input. */
START_TEST(test_decode_truncation)
{
    struct bytes w = {.n = 0};
    char long_id[RING_NAME_MAX + 1];

    memset(long_id, 'q', RING_NAME_MAX);
    long_id[RING_NAME_MAX] = '\0';
    bytes_u16(&w, 3);
    bytes_entry(&w, "a", 1, 2);
    bytes_entry(&w, "n1", 0x0100000000000000ull, 3);
    bytes_entry(&w, long_id, 7, 4);
    for (size_t len = 0; len < w.n; len++) {
        struct bytes cut = w;
        cut.n = len;
        assert_decode_fails(&cut, RK_ESYNTAX);
    }
}
END_TEST

START_TEST(test_decode_count_too_big)
{
    struct bytes w = {.n = 0};

    bytes_u16(&w, VCLOCK_ENTRIES_MAX + 1);
    assert_decode_fails(&w, RK_ETOOBIG);
    w.n = 0;
    bytes_u16(&w, 0xffff);
    for (int i = 0; i < 300; i++) {
        bytes_entry(&w, "a", 1, 1);
    }
    assert_decode_fails(&w, RK_ETOOBIG);
}
END_TEST

/* A count the bytes cannot hold is refused before any entry is read. */
START_TEST(test_decode_count_exceeds_bytes)
{
    struct bytes w = {.n = 0};

    bytes_u16(&w, VCLOCK_ENTRIES_MAX);
    bytes_entry(&w, "a", 1, 1);
    assert_decode_fails(&w, RK_ESYNTAX);
    w.n = 0;
    bytes_u16(&w, 3);
    bytes_entry(&w, "a", 1, 1);
    bytes_entry(&w, "b", 1, 1);
    memset(&w.b[w.n], 0, VCLOCK_ENTRY_MIN_BYTES - 1);
    w.n += VCLOCK_ENTRY_MIN_BYTES - 1;
    assert_decode_fails(&w, RK_ESYNTAX);
}
END_TEST

START_TEST(test_decode_bad_id_len)
{
    char id[256];
    struct bytes w = {.n = 0};
    struct vclock vc;
    size_t used;

    memset(id, 'a', sizeof(id));
    bytes_u16(&w, 1);
    bytes_entry_raw(&w, id, 0, 1, 1);
    bytes_u64(&w, 0);
    assert_decode_fails(&w, RK_ESYNTAX);
    for (size_t len = RING_NAME_MAX + 1; len < sizeof(id); len += 63) {
        w.n = 0;
        bytes_u16(&w, 1);
        bytes_entry_raw(&w, id, len, 1, 1);
        assert_decode_fails(&w, RK_ESYNTAX);
    }
    w.n = 0;
    bytes_u16(&w, 1);
    bytes_entry_raw(&w, id, RING_NAME_MAX, 1, 1);
    vclock_init(&vc);
    ck_assert_int_eq(vclock_decode(w.b, w.n, &used, &vc), 0);
    ck_assert_uint_eq(vc.e[0].id_len, RING_NAME_MAX);
    vclock_deinit(&vc);
}
END_TEST

START_TEST(test_decode_bad_id_char)
{
    static const char *const bad[] = {"a b", "a/b", "a\0b", "\xff", "\x80", "a\n", "#", "a+b"};
    static const size_t bad_len[] = {3, 3, 3, 1, 1, 2, 1, 3};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct bytes w = {.n = 0};
        bytes_u16(&w, 2);
        bytes_entry(&w, "-", 1, 1);
        bytes_entry_raw(&w, bad[i], bad_len[i], 1, 1);
        assert_decode_fails(&w, RK_ESYNTAX);
    }
}
END_TEST

START_TEST(test_decode_unsorted_ids)
{
    static const char *const pairs[][2] = {{"b", "a"}, {"n1", "n"}, {"n2", "n10"}, {"a", "Z"}};

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        struct bytes w = {.n = 0};
        bytes_u16(&w, 2);
        bytes_entry(&w, pairs[i][0], 1, 1);
        bytes_entry(&w, pairs[i][1], 1, 1);
        assert_decode_fails(&w, RK_ESYNTAX);
    }
}
END_TEST

START_TEST(test_decode_duplicate_ids)
{
    struct bytes w = {.n = 0};

    bytes_u16(&w, 3);
    bytes_entry(&w, "a", 1, 1);
    bytes_entry(&w, "n", 2, 1);
    bytes_entry(&w, "n", 3, 1);
    assert_decode_fails(&w, RK_ESYNTAX);
}
END_TEST

START_TEST(test_decode_zero_counter)
{
    struct bytes w = {.n = 0};

    bytes_u16(&w, 2);
    bytes_entry(&w, "a", 1, 1);
    bytes_entry(&w, "b", 0, 1);
    assert_decode_fails(&w, RK_ESYNTAX);
}
END_TEST

static Suite *vclock_suite(void)
{
    Suite *s = suite_create("vclock");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"compare_equal", test_compare_equal},
        {"compare_before_after", test_compare_before_after},
        {"compare_concurrent", test_compare_concurrent},
        {"compare_empty", test_compare_empty},
        {"compare_disjoint", test_compare_disjoint},
        {"compare_prefix_ids", test_compare_prefix_ids},
        {"compare_ignores_stamps", test_compare_ignores_stamps},
        {"compare_random_consistent", test_compare_random_consistent},
        {"merge_commutative", test_merge_commutative},
        {"merge_associative", test_merge_associative},
        {"merge_idempotent", test_merge_idempotent},
        {"merge_in_place_or_not", test_merge_in_place_or_not},
        {"covers_is_merge_noop", test_covers_is_merge_noop},
        {"merge_descends_inputs", test_merge_descends_inputs},
        {"merge_ancestor_is_identity", test_merge_ancestor_is_identity},
        {"merge_stamp_rule", test_merge_stamp_rule},
        {"merge_too_big", test_merge_too_big},
        {"increment_after", test_increment_after},
        {"increment_sets_stamp", test_increment_sets_stamp},
        {"increment_errors", test_increment_errors},
        {"get", test_get},
        {"copy", test_copy},
        {"prune_keeps_keep", test_prune_keeps_keep},
        {"prune_oldest_first", test_prune_oldest_first},
        {"prune_min_age", test_prune_min_age},
        {"prune_under_keep", test_prune_under_keep},
        {"prune_ties_by_id", test_prune_ties_by_id},
        {"prune_never_after", test_prune_never_after},
        {"codec_round_trip", test_codec_round_trip},
        {"codec_golden", test_codec_golden},
        {"codec_empty", test_codec_empty},
        {"decode_truncation", test_decode_truncation},
        {"decode_count_too_big", test_decode_count_too_big},
        {"decode_count_exceeds_bytes", test_decode_count_exceeds_bytes},
        {"decode_bad_id_len", test_decode_bad_id_len},
        {"decode_bad_id_char", test_decode_bad_id_char},
        {"decode_unsorted_ids", test_decode_unsorted_ids},
        {"decode_duplicate_ids", test_decode_duplicate_ids},
        {"decode_zero_counter", test_decode_zero_counter},
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
    SRunner *sr = srunner_create(vclock_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
