/*
 * check_membership.c - unit tests of the member table (src/membership/membership.c).
 *
 * Pure: no sockets, no event loop, no real clock.  Time is a fake
 * monotonic clock (plain millisecond numbers); gossip rounds are
 * simulated by passing digests and entries between two tables the way the
 * gossip engine passes SYN, ACK and ACK2.  Random entry sets come from a
 * xorshift generator whose seed is printed, so a failure can be replayed
 * with RINGKV_TEST_SEED=<seed>.
 */
#include <check.h>
#include <endian.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "buf.h"
#include "error.h"
#include "membership.h"
#include "test_heap.h"
#include "test_rng.h"

/* The heartbeat interval of the examples in detector.h. */
#define T_HB 200
/* Where the fake clock starts. */
#define T_START 1000000
/* Members of a random history, and entries each member may have in it. */
#define T_RAND_MEMBERS 12
#define T_RAND_VERSIONS 4
#define T_RAND_ENTRIES (T_RAND_MEMBERS * T_RAND_VERSIONS)
/* Orders the merge-order test tries. */
#define T_PERMUTATIONS 60
/* Members on each side of the large exchange: together above MSG_GOSSIP_DIGESTS_MAX. */
#define T_LARGE_SIDE 150
/* Rounds within which an exchange must have converged. */
#define T_ROUNDS_SMALL 10
#define T_ROUNDS_LARGE 60

static void rng_setup(void)
{
    rng_seed("check_membership");
}

static void entry_make(struct msg_member *e, const char *id, const char *rack, uint32_t tokens,
                       uint32_t status, uint64_t generation, uint64_t version)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%s", id);
    snprintf(e->rack, sizeof(e->rack), "%s", rack);
    e->tokens = tokens;
    snprintf(e->peer_addr, sizeof(e->peer_addr), "127.0.0.1:7371");
    snprintf(e->client_addr, sizeof(e->client_addr), "127.0.0.1:7370");
    e->status = status;
    e->generation = generation;
    e->version = version;
    e->ring_version = 1;
}

static struct membership *table_new(const char *id, uint32_t status)
{
    struct membership *m;
    struct msg_member self;

    entry_make(&self, id, "r0", 4, status, 1, 1);
    ck_assert_int_eq(membership_create(&m, ring_default_seed, &self, T_HB, T_START), 0);
    return m;
}

static enum membership_merged merge(struct membership *m, const struct msg_member *e, uint64_t now,
                                    bool *ring_changed)
{
    enum membership_merged merged;
    bool changed;

    ck_assert_int_eq(membership_merge(m, e, now, &merged, &changed), 0);
    if (ring_changed != NULL) {
        *ring_changed = changed;
    }
    return merged;
}

/* What the table holds of a member, as the msg_member it was merged as. */
static struct msg_member entry_held(const struct member *mb)
{
    struct msg_member e;

    membership_entry_get(&e, &mb->e);
    return e;
}

static bool entry_eq(const struct msg_member *a, const struct msg_member *b, bool with_version)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->rack, b->rack) == 0 && a->tokens == b->tokens &&
           strcmp(a->peer_addr, b->peer_addr) == 0 && strcmp(a->client_addr, b->client_addr) == 0 &&
           a->status == b->status && a->generation == b->generation &&
           (!with_version || a->version == b->version) &&
           memcmp(a->instance, b->instance, sizeof(a->instance)) == 0 &&
           a->ring_version == b->ring_version && a->digest == b->digest;
}

/* Whether two tables hold the same entry, version included. */
static bool held_eq(const struct member *a, const struct member *b)
{
    struct msg_member ea = entry_held(a), eb = entry_held(b);

    return entry_eq(&ea, &eb, true);
}

/* Same entries, epoch and digest; our own version may differ when ignore_self_version. */
static bool tables_eq(const struct membership *a, const struct membership *b,
                      bool ignore_self_version)
{
    if (membership_count(a) != membership_count(b) || membership_epoch(a) != membership_epoch(b) ||
        membership_digest(a) != membership_digest(b)) {
        return false;
    }
    for (size_t i = 0; i < membership_count(a); i++) {
        const struct member *x = membership_at(a, i);
        bool self = x == membership_self(a);

        struct msg_member ex = entry_held(x), ey = entry_held(membership_at(b, i));

        if (!entry_eq(&ex, &ey, !(self && ignore_self_version))) {
            return false;
        }
    }
    return true;
}

/*
 * A random history: per member, T_RAND_VERSIONS entries of growing
 * (generation, version) and non-decreasing ring_version, as a member
 * writes them, with random status, rack and tokens.
 */
static void history_make(struct msg_member *out)
{
    for (size_t i = 0; i < T_RAND_MEMBERS; i++) {
        uint64_t gen = 1 + rng_below(3), ver = rng_below(10), rv = 1 + rng_below(3);
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "m%zu", i);
        for (size_t j = 0; j < T_RAND_VERSIONS; j++) {
            char rack[8];
            struct msg_member *e = &out[i * T_RAND_VERSIONS + j];

            snprintf(rack, sizeof(rack), "r%u", rng_below(3));
            entry_make(e, id, rack, 1 + rng_below(8), rng_below(MSG_MEMBER_STATUS_MAX + 1), gen,
                       ver);
            e->ring_version = rv;
            e->digest = rng_next();
            gen += rng_below(2);
            ver += 1 + rng_below(5);
            rv += rng_below(2);
        }
    }
}

static void shuffle(struct msg_member *e, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = rng_below((uint32_t)i);
        struct msg_member t = e[i - 1];
        e[i - 1] = e[j];
        e[j] = t;
    }
}

START_TEST(test_create_self_only)
{
    struct membership *m = table_new("n1", MSG_MEMBER_NORMAL), *j, *bad_table = NULL;
    const struct member *self = membership_self(m);
    struct msg_member bad;

    ck_assert_uint_eq(membership_count(m), 1);
    ck_assert_ptr_eq(membership_at(m, 0), self);
    ck_assert_ptr_eq(membership_find(m, "n1"), self);
    ck_assert_ptr_null(membership_find(m, "n2"));
    ck_assert_uint_eq(ring_member_count(membership_ring(m)), 1);
    ck_assert_uint_eq(self->e.digest, membership_digest(m));
    ck_assert_uint_eq(self->e.version, 1);
    ck_assert_uint_eq(membership_epoch(m), 1);

    j = table_new("n1", MSG_MEMBER_JOINING);
    ck_assert_uint_eq(ring_member_count(membership_ring(j)), 0);
    ck_assert_uint_ne(membership_digest(j), membership_digest(m));

    entry_make(&bad, "bad id", "r0", 4, MSG_MEMBER_NORMAL, 1, 1);
    ck_assert_int_eq(membership_create(&bad_table, ring_default_seed, &bad, T_HB, T_START),
                     RK_EINVAL);
    entry_make(&bad, "n1", "r0", 0, MSG_MEMBER_NORMAL, 1, 1);
    ck_assert_int_eq(membership_create(&bad_table, ring_default_seed, &bad, T_HB, T_START),
                     RK_ERANGE);
    entry_make(&bad, "n1", "r0", 4, MSG_MEMBER_STATUS_MAX + 1, 1, 1);
    ck_assert_int_eq(membership_create(&bad_table, ring_default_seed, &bad, T_HB, T_START),
                     RK_EINVAL);
    ck_assert_ptr_null(bad_table);
    membership_destroy(m);
    membership_destroy(j);
}
END_TEST

START_TEST(test_merge_order_independent)
{
    struct msg_member hist[T_RAND_ENTRIES];
    struct membership *first = NULL;

    history_make(hist);
    for (int p = 0; p < T_PERMUTATIONS; p++) {
        struct membership *m = table_new("self", MSG_MEMBER_NORMAL);

        shuffle(hist, T_RAND_ENTRIES);
        for (size_t i = 0; i < T_RAND_ENTRIES; i++) {
            merge(m, &hist[i], T_START, NULL);
        }
        if (first == NULL) {
            first = m;
            continue;
        }
        /* Our version counts the ring changes seen on the way, which depends on the order. */
        ck_assert(tables_eq(first, m, true));
        membership_destroy(m);
    }
    /* Each member's entry is the greatest (generation, version) of its history. */
    for (size_t i = 0; i < T_RAND_ENTRIES; i++) {
        const struct member *mb = membership_find(first, hist[i].id);
        ck_assert_ptr_nonnull(mb);
        ck_assert(mb->e.generation > hist[i].generation ||
                  (mb->e.generation == hist[i].generation && mb->e.version >= hist[i].version));
    }
    ck_assert_uint_eq(membership_count(first), T_RAND_MEMBERS + 1);
    membership_destroy(first);
}
END_TEST

START_TEST(test_older_and_equal_ignored)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member e;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 3, 5);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_ADDED);
    entry_make(&e, "n2", "r9", 4, MSG_MEMBER_NORMAL, 3, 5);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    entry_make(&e, "n2", "r9", 4, MSG_MEMBER_NORMAL, 3, 4);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    entry_make(&e, "n2", "r9", 4, MSG_MEMBER_NORMAL, 2, 1000);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    ck_assert_str_eq(membership_entry_rack(&membership_find(m, "n2")->e), "r1");

    entry_make(&e, "n2", "r2", 4, MSG_MEMBER_NORMAL, 3, 6);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_UPDATED);
    entry_make(&e, "n2", "r3", 4, MSG_MEMBER_NORMAL, 4, 0);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_UPDATED);
    ck_assert_str_eq(membership_entry_rack(&membership_find(m, "n2")->e), "r3");

    entry_make(&e, "bad id", "r3", 4, MSG_MEMBER_NORMAL, 9, 9);
    {
        enum membership_merged merged;
        bool changed;
        ck_assert_int_eq(membership_merge(m, &e, T_START, &merged, &changed), RK_EINVAL);
    }
    ck_assert_uint_eq(membership_count(m), 2);
    membership_destroy(m);
}
END_TEST

START_TEST(test_self_never_taken)
{
    struct membership *m;
    struct msg_member self, e;

    entry_make(&self, "a", "r0", 4, MSG_MEMBER_NORMAL, 5, 10);
    self.ring_version = 3; /* above the earlier life's below (see earlier_life) */
    ck_assert_int_eq(membership_create(&m, ring_default_seed, &self, T_HB, T_START), 0);
    entry_make(&e, "a", "r9", 4, MSG_MEMBER_NORMAL, 5, 10);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    entry_make(&e, "a", "r9", 4, MSG_MEMBER_NORMAL, 5, 9);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    entry_make(&e, "a", "r9", 4, MSG_MEMBER_NORMAL, 4, 1000);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    entry_make(&e, "a", "r9", 4, MSG_MEMBER_REMOVED, 5, 11);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_CONFLICT);
    entry_make(&e, "a", "r9", 4, MSG_MEMBER_NORMAL, 6, 0);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_CONFLICT);

    ck_assert_uint_eq(membership_count(m), 1);
    ck_assert_str_eq(membership_entry_rack(&membership_self(m)->e), "r0");
    ck_assert_uint_eq(membership_self(m)->e.status, MSG_MEMBER_NORMAL);
    ck_assert_uint_eq(membership_self(m)->e.version, 10);

    /* Same generation: asserting ourselves makes our entry win again. */
    membership_assert_self(m, 11);
    ck_assert_uint_eq(membership_self(m)->e.version, 12);
    entry_make(&e, "a", "r9", 4, MSG_MEMBER_REMOVED, 5, 11);
    ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    membership_assert_self(m, 3);
    ck_assert_uint_eq(membership_self(m)->e.version, 12);
    membership_destroy(m);
}
END_TEST

START_TEST(test_ring_rebuilt_only_on_ring_changes)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    const struct ring *r;
    struct msg_member e;
    bool changed;
    uint64_t v = 1;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, v);
    ck_assert_int_eq(merge(m, &e, T_START, &changed), MEMBERSHIP_ADDED);
    ck_assert(changed);
    r = membership_ring(m);

    /* Heartbeats, a new digest field, new addresses: same ring. */
    e.version = ++v;
    ck_assert_int_eq(merge(m, &e, T_START, &changed), MEMBERSHIP_UPDATED);
    ck_assert(!changed);
    e.version = ++v;
    e.digest = 1234;
    snprintf(e.peer_addr, sizeof(e.peer_addr), "10.0.0.2:7371");
    ck_assert_int_eq(merge(m, &e, T_START, &changed), MEMBERSHIP_UPDATED);
    ck_assert(!changed);
    membership_heartbeat(m);
    ck_assert_ptr_eq(membership_ring(m), r);

    /*
     * A joining member is not in the ring: adding it keeps the ring in
     * force, and rebuilds the target ring, which holds it.
     */
    entry_make(&e, "n3", "r1", 4, MSG_MEMBER_JOINING, 1, 1);
    ck_assert_int_eq(merge(m, &e, T_START, &changed), MEMBERSHIP_ADDED);
    ck_assert(changed);
    ck_assert_ptr_eq(membership_ring(m), r);
    ck_assert_int_lt(ring_member_find(membership_ring(m), "n3"), 0);
    ck_assert_int_ge(ring_member_find(membership_target(m), "n3"), 0);
    ck_assert_uint_ne(membership_target_digest(m), membership_digest(m));
    ck_assert_uint_eq(membership_self(m)->e.target, membership_target_digest(m));

    /* Tokens, rack and status each rebuild it. */
    entry_make(&e, "n2", "r1", 8, MSG_MEMBER_NORMAL, 1, ++v);
    ck_assert_int_eq(merge(m, &e, T_START, &changed), MEMBERSHIP_UPDATED);
    ck_assert(changed);
    ck_assert_uint_eq(ring_member_tokens(membership_ring(m), 1), 8);
    entry_make(&e, "n2", "r2", 8, MSG_MEMBER_NORMAL, 1, ++v);
    merge(m, &e, T_START, &changed);
    ck_assert(changed);
    ck_assert_str_eq(ring_member_rack(membership_ring(m), 1), "r2");
    entry_make(&e, "n2", "r2", 8, MSG_MEMBER_LEAVING, 1, ++v);
    merge(m, &e, T_START, &changed);
    ck_assert(changed);
    membership_destroy(m);
}
END_TEST

START_TEST(test_ring_statuses)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    const struct ring *r;

    for (uint32_t s = 0; s <= MSG_MEMBER_STATUS_MAX; s++) {
        struct msg_member e;
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "m-%s", membership_status_names[s]);
        entry_make(&e, id, "r1", 4, s, 1, 1);
        merge(m, &e, T_START, NULL);
    }
    r = membership_ring(m);
    ck_assert_uint_eq(ring_member_count(r), 3);
    ck_assert_int_ge(ring_member_find(r, "a"), 0);
    ck_assert_int_ge(ring_member_find(r, "m-normal"), 0);
    ck_assert_int_ge(ring_member_find(r, "m-leaving"), 0);
    ck_assert_int_eq(ring_member_find(r, "m-joining"), RK_ENOTFOUND);
    ck_assert_int_eq(ring_member_find(r, "m-left"), RK_ENOTFOUND);
    ck_assert_int_eq(ring_member_find(r, "m-removed"), RK_ENOTFOUND);
    ck_assert(!membership_in_ring(MSG_MEMBER_JOINING));
    ck_assert(membership_in_ring(MSG_MEMBER_NORMAL));
    ck_assert(membership_in_ring(MSG_MEMBER_LEAVING));
    ck_assert(!membership_in_ring(MSG_MEMBER_LEFT));
    ck_assert(!membership_in_ring(MSG_MEMBER_REMOVED));
    membership_destroy(m);
}
END_TEST

START_TEST(test_epoch_monotonic)
{
    struct msg_member hist[T_RAND_ENTRIES];
    struct membership *m = table_new("self", MSG_MEMBER_NORMAL);
    uint64_t last = membership_epoch(m);

    history_make(hist);
    shuffle(hist, T_RAND_ENTRIES);
    for (size_t i = 0; i < T_RAND_ENTRIES; i++) {
        uint64_t sum = 0;

        merge(m, &hist[i], T_START, NULL);
        ck_assert_uint_ge(membership_epoch(m), last);
        last = membership_epoch(m);
        for (size_t k = 0; k < membership_count(m); k++) {
            sum += membership_at(m, k)->e.ring_version;
        }
        ck_assert_uint_eq(last, sum);
    }
    ck_assert_int_eq(membership_remove(m, "m0"), 0);
    ck_assert_uint_eq(membership_epoch(m), last + 1);
    ck_assert_int_eq(membership_set_status(m, MSG_MEMBER_LEAVING), 0);
    ck_assert_uint_eq(membership_epoch(m), last + 2);
    membership_destroy(m);
}
END_TEST

/*
 * A token count changing: our own (membership_set_tokens()) and another
 * member's (its entry's target_tokens) give the target ring that count
 * while the ring in force keeps the old one; done, both rings take it.
 */
START_TEST(test_target_tokens)
{
    struct membership *m = table_new("self", MSG_MEMBER_NORMAL);
    struct msg_member e;
    const struct ring *r, *t;
    uint64_t epoch, version;
    uint32_t self_tokens_before;

    entry_make(&e, "m1", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e, T_START, NULL);
    r = membership_ring(m);
    ck_assert(membership_target(m) == r);
    epoch = membership_epoch(m);
    version = membership_self(m)->e.version;
    self_tokens_before = ring_member_tokens(r, (uint32_t)ring_member_find(r, "self"));
    ck_assert_int_eq(membership_set_tokens(m, self_tokens_before, 2 * self_tokens_before), 0);
    r = membership_ring(m);
    t = membership_target(m);
    ck_assert_uint_ne(ring_digest(r), ring_digest(t));
    ck_assert_uint_eq(ring_member_tokens(r, (uint32_t)ring_member_find(r, "self")),
                      self_tokens_before);
    ck_assert_uint_eq(ring_member_tokens(t, (uint32_t)ring_member_find(t, "self")),
                      2 * self_tokens_before);
    ck_assert_uint_eq(membership_self(m)->e.target, ring_digest(t));
    ck_assert_uint_eq(membership_epoch(m), epoch + 1);
    ck_assert_uint_gt(membership_self(m)->e.version, version);
    /* the same again: nothing */
    version = membership_self(m)->e.version;
    ck_assert_int_eq(membership_set_tokens(m, self_tokens_before, 2 * self_tokens_before), 0);
    ck_assert_uint_eq(membership_self(m)->e.version, version);
    /* done: the ring in force takes the count, and no change is under way */
    ck_assert_int_eq(membership_set_tokens(m, 2 * self_tokens_before, 0), 0);
    r = membership_ring(m);
    ck_assert(membership_target(m) == r);
    ck_assert_uint_eq(ring_member_tokens(r, (uint32_t)ring_member_find(r, "self")),
                      2 * self_tokens_before);
    /* a count equal to the one in force is no change */
    ck_assert_int_eq(membership_set_tokens(m, 2 * self_tokens_before, 2 * self_tokens_before), 0);
    ck_assert_uint_eq(membership_self(m)->e.target_tokens, 0);
    ck_assert_int_eq(membership_set_tokens(m, 0, 0), RK_EINVAL);
    ck_assert_int_eq(membership_set_tokens(m, 1, RING_TOKENS_MAX + 1), RK_EINVAL);
    /* another member's change, from its entry */
    entry_make(&e, "m1", "r1", 4, MSG_MEMBER_NORMAL, 1, 2);
    e.target_tokens = 8;
    merge(m, &e, T_START, NULL);
    r = membership_ring(m);
    t = membership_target(m);
    ck_assert_uint_ne(ring_digest(r), ring_digest(t));
    ck_assert_uint_eq(ring_member_tokens(r, (uint32_t)ring_member_find(r, "m1")), 4);
    ck_assert_uint_eq(ring_member_tokens(t, (uint32_t)ring_member_find(t, "m1")), 8);
    entry_make(&e, "m1", "r1", 8, MSG_MEMBER_NORMAL, 1, 3);
    merge(m, &e, T_START, NULL);
    ck_assert(membership_target(m) == membership_ring(m));
    ck_assert_uint_eq(ring_member_tokens(membership_ring(m),
                                         (uint32_t)ring_member_find(membership_ring(m), "m1")),
                      8);
    membership_destroy(m);
}
END_TEST

/* The rack of the digest tests' members: r<second character of the id>, r0 for "a". */
static void rack_for(const char *id, char *rack, size_t size)
{
    snprintf(rack, size, "r%c", id[1] != '\0' ? id[1] : '0');
}

/* A table of self plus the members named in ids, all normal with 4 tokens. */
static struct membership *table_of(const char *self, const char *const *ids, size_t n,
                                   const uint8_t *seed)
{
    struct membership *m;
    struct msg_member e;
    char rack[8];

    rack_for(self, rack, sizeof(rack));
    entry_make(&e, self, rack, 4, MSG_MEMBER_NORMAL, 1, 1);
    ck_assert_int_eq(membership_create(&m, seed, &e, T_HB, T_START), 0);
    for (size_t i = 0; i < n; i++) {
        rack_for(ids[i], rack, sizeof(rack));
        entry_make(&e, ids[i], rack, 4, MSG_MEMBER_NORMAL, 1, 1);
        merge(m, &e, T_START, NULL);
    }
    return m;
}

START_TEST(test_digest_equal_for_equal_rings)
{
    static const char *const order1[] = {"b1", "c2", "d3"};
    static const char *const order2[] = {"d3", "a", "c2"};
    static const char *const other_tokens[] = {"b1", "c2"};
    uint8_t seed2[RING_SEED_LEN] = {1};
    struct membership *x = table_of("a", order1, 3, ring_default_seed);
    struct membership *y = table_of("b1", order2, 3, ring_default_seed);
    struct membership *z = table_of("a", order1, 3, seed2);
    struct membership *w = table_of("a", other_tokens, 2, ring_default_seed);
    struct msg_member e;
    uint64_t before;

    ck_assert_uint_eq(membership_digest(x), membership_digest(y));
    ck_assert_uint_ne(membership_digest(x), membership_digest(z));
    ck_assert_uint_ne(membership_digest(x), membership_digest(w));

    /* d3 with other tokens, then with another rack: a different ring each time. */
    entry_make(&e, "d3", "r3", 5, MSG_MEMBER_NORMAL, 1, 2);
    merge(w, &e, T_START, NULL);
    ck_assert_uint_ne(membership_digest(x), membership_digest(w));
    before = membership_digest(w);
    entry_make(&e, "d3", "r4", 4, MSG_MEMBER_NORMAL, 1, 3);
    merge(w, &e, T_START, NULL);
    ck_assert_uint_ne(membership_digest(w), before);
    ck_assert_uint_ne(membership_digest(x), membership_digest(w));
    /* And back to the content of x. */
    entry_make(&e, "d3", "r3", 4, MSG_MEMBER_NORMAL, 1, 4);
    merge(w, &e, T_START, NULL);
    ck_assert_uint_eq(membership_digest(x), membership_digest(w));

    /* A member outside the ring does not change it. */
    entry_make(&e, "e9", "r9", 4, MSG_MEMBER_JOINING, 1, 1);
    merge(x, &e, T_START, NULL);
    ck_assert_uint_eq(membership_digest(x), membership_digest(y));
    membership_destroy(x);
    membership_destroy(y);
    membership_destroy(z);
    membership_destroy(w);
}
END_TEST

/* Append one name of the documented digest encoding: length byte, bytes. */
static size_t put_name(uint8_t *p, const char *s)
{
    size_t n = strlen(s);
    p[0] = (uint8_t)n;
    memcpy(p + 1, s, n);
    return 1 + n;
}

static size_t put_member(uint8_t *p, const char *id, const char *rack, uint32_t tokens)
{
    size_t n = put_name(p, id);
    uint32_t be = htobe32(tokens);

    n += put_name(p + n, rack);
    memcpy(p + n, &be, sizeof(be));
    return n + sizeof(be);
}

START_TEST(test_digest_documented_encoding)
{
    struct membership *m = table_new("n1", MSG_MEMBER_NORMAL);
    uint8_t data[512], hash[8];
    struct msg_member e;
    size_t n = 0;
    uint64_t le;

    entry_make(&e, "n2", "rack-b", 1, MSG_MEMBER_LEAVING, 1, 1);
    merge(m, &e, T_START, NULL);
    entry_make(&e, "n10", "r2", 300, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e, T_START, NULL);
    entry_make(&e, "n0", "r2", 300, MSG_MEMBER_LEFT, 1, 1);
    merge(m, &e, T_START, NULL);

    /* Seed, then the ring's members in id order: n1 < n10 < n2. */
    memcpy(data, ring_default_seed, RING_SEED_LEN);
    n = RING_SEED_LEN;
    n += put_member(data + n, "n1", "r0", 4);
    n += put_member(data + n, "n10", "r2", 300);
    n += put_member(data + n, "n2", "rack-b", 1);
    ck_assert_int_eq(crypto_generichash(hash, sizeof(hash), data, n, NULL, 0), 0);
    memcpy(&le, hash, sizeof(le));
    ck_assert_uint_eq(membership_digest(m), le64toh(le));
    ck_assert_uint_eq(membership_self(m)->e.digest, le64toh(le));
    membership_destroy(m);
}
END_TEST

START_TEST(test_removal_vs_generation)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL);
    struct membership *b = table_new("b", MSG_MEMBER_NORMAL);
    struct msg_member e, removal;
    bool changed;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 7, 10);
    merge(a, &e, T_START, NULL);
    ck_assert_int_eq(membership_remove(a, "a"), RK_EINVAL);
    ck_assert_int_eq(membership_remove(a, "zz"), RK_ENOTFOUND);
    ck_assert_int_eq(membership_remove(a, "n2"), 0);
    removal = entry_held(membership_find(a, "n2"));
    ck_assert_uint_eq(removal.status, MSG_MEMBER_REMOVED);
    ck_assert_uint_eq(removal.version, 10 + MEMBERSHIP_REMOVE_BUMP);
    ck_assert_uint_eq(removal.ring_version, 2);
    ck_assert_int_eq(ring_member_find(membership_ring(a), "n2"), RK_ENOTFOUND);

    /* The paused member wakes up and keeps counting in its old generation. */
    for (uint64_t v = 11; v < 5000; v += 7) {
        entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 7, v);
        ck_assert_int_eq(merge(a, &e, T_START, NULL), MEMBERSHIP_IGNORED);
    }
    ck_assert_uint_eq(membership_find(a, "n2")->e.status, MSG_MEMBER_REMOVED);

    /* A node that heard those heartbeats first takes the removal anyway. */
    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 7, 4999);
    merge(b, &e, T_START, NULL);
    ck_assert_int_eq(merge(b, &removal, T_START, &changed), MEMBERSHIP_UPDATED);
    ck_assert(changed);
    ck_assert_int_eq(ring_member_find(membership_ring(b), "n2"), RK_ENOTFOUND);

    /* A restart is a new generation: a new life beats the removal. */
    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_JOINING, 8, 0);
    ck_assert_int_eq(merge(a, &e, T_START, NULL), MEMBERSHIP_UPDATED);
    ck_assert_uint_eq(membership_find(a, "n2")->e.status, MSG_MEMBER_JOINING);
    membership_destroy(a);
    membership_destroy(b);
}
END_TEST

START_TEST(test_reincarnate)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL);
    struct membership *b = table_new("b", MSG_MEMBER_NORMAL);
    struct msg_member old, mine;
    uint64_t epoch_b;

    /* b holds a's entry from an earlier life: generation 7, far ahead of ours. */
    entry_make(&old, "a", "r0", 4, MSG_MEMBER_REMOVED, 7, 10 + MEMBERSHIP_REMOVE_BUMP);
    old.ring_version = 40;
    merge(b, &old, T_START, NULL);
    epoch_b = membership_epoch(b);
    ck_assert_int_eq(merge(a, &old, T_START, NULL), MEMBERSHIP_CONFLICT);

    ck_assert_int_eq(membership_reincarnate(a, &old), 0);
    mine = entry_held(membership_self(a));
    ck_assert_uint_eq(mine.generation, 8);
    ck_assert_uint_eq(mine.version, 1);
    ck_assert_uint_eq(mine.ring_version, 41);
    /* The new life wins everywhere, and the epoch it brings is larger. */
    ck_assert_int_eq(merge(a, &old, T_START, NULL), MEMBERSHIP_IGNORED);
    ck_assert_int_eq(merge(b, &mine, T_START, NULL), MEMBERSHIP_UPDATED);
    ck_assert_uint_eq(membership_find(b, "a")->e.status, MSG_MEMBER_NORMAL);
    ck_assert_uint_gt(membership_epoch(b), epoch_b);

    /* No life after the last generation. */
    old.generation = UINT64_MAX;
    ck_assert_int_eq(membership_reincarnate(a, &old), RK_ERANGE);
    ck_assert_uint_eq(membership_self(a)->e.generation, 8);
    membership_destroy(a);
    membership_destroy(b);
}
END_TEST

START_TEST(test_own_entry_versions)
{
    struct membership *m = table_new("a", MSG_MEMBER_JOINING);
    const struct ring *r = membership_ring(m);
    struct msg_member e;

    membership_heartbeat(m);
    ck_assert_uint_eq(membership_self(m)->e.version, 2);
    ck_assert_uint_eq(membership_self(m)->e.ring_version, 1);
    ck_assert_ptr_eq(membership_ring(m), r);

    ck_assert_int_eq(membership_set_status(m, MSG_MEMBER_NORMAL), 0);
    ck_assert_uint_eq(membership_self(m)->e.version, 3);
    ck_assert_uint_eq(membership_self(m)->e.ring_version, 2);
    ck_assert_int_ge(ring_member_find(membership_ring(m), "a"), 0);
    ck_assert_uint_eq(membership_self(m)->e.digest, membership_digest(m));
    ck_assert_int_eq(membership_set_status(m, MSG_MEMBER_NORMAL), 0);
    ck_assert_uint_eq(membership_self(m)->e.version, 3);
    ck_assert_int_eq(membership_set_status(m, (enum msg_member_status)99), RK_EINVAL);

    /* A ring change from a merge is a change of our digest field: one bump. */
    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e, T_START, NULL);
    ck_assert_uint_eq(membership_self(m)->e.version, 4);
    ck_assert_uint_eq(membership_self(m)->e.digest, membership_digest(m));
    /* A member outside both rings changes no digest: no bump. */
    entry_make(&e, "n4", "r1", 4, MSG_MEMBER_LEFT, 1, 1);
    merge(m, &e, T_START, NULL);
    ck_assert_uint_eq(membership_self(m)->e.version, 4);
    /* A joining member changes the target field alone: one bump. */
    entry_make(&e, "n3", "r1", 4, MSG_MEMBER_JOINING, 1, 1);
    merge(m, &e, T_START, NULL);
    ck_assert_uint_eq(membership_self(m)->e.version, 5);
    ck_assert_uint_eq(membership_self(m)->e.digest, membership_digest(m));
    ck_assert_uint_eq(membership_self(m)->e.target, membership_target_digest(m));
    ck_assert_int_eq(membership_remove(m, "n2"), 0);
    ck_assert_uint_eq(membership_self(m)->e.version, 6);
    ck_assert_uint_eq(membership_self(m)->e.digest, membership_digest(m));
    membership_destroy(m);
}
END_TEST

/*
 * A table of self and `others` members o0, o1, ... (left: no ring work),
 * restored as a saved table is: none of them is news (membership_digests()).
 */
static struct membership *table_of_with_others(const char *self, size_t others)
{
    struct membership *m = table_new(self, MSG_MEMBER_NORMAL);
    struct msg_member *list = calloc(others + 1, sizeof(*list));
    struct buf out;

    ck_assert_ptr_nonnull(list);
    for (size_t i = 0; i < others; i++) {
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "o%zu", i);
        /* left: outside both rings, so our own entry stays at (1, 1) */
        entry_make(&list[i], id, "r1", 4, MSG_MEMBER_LEFT, 1, 1);
    }
    buf_init(&out, 0);
    ck_assert_int_eq(msg_members_encode(list, others, &out), 0);
    ck_assert_int_eq(membership_restore(m, buf_data(&out), out.len, T_START), 0);
    buf_free(&out);
    free(list);
    for (size_t i = 0; i < membership_count(m); i++) {
        ck_assert_uint_eq(membership_at(m, i)->news, 0);
    }
    return m;
}

static struct membership *table_with_others(size_t others)
{
    return table_of_with_others("a", others);
}

START_TEST(test_digests_rotate)
{
    struct membership *m = table_with_others(9);
    struct msg_digest d[16];
    int seen[9] = {0};
    bool complete;

    for (int call = 0; call < 3; call++) {
        ck_assert_uint_eq(membership_digests(m, d, 4, &complete), 4);
        ck_assert(!complete);
        ck_assert_str_eq(d[0].id, "a");
        for (size_t i = 1; i < 4; i++) {
            seen[atoi(d[i].id + 1)]++;
        }
    }
    for (size_t i = 0; i < 9; i++) {
        ck_assert_int_eq(seen[i], 1);
    }
    ck_assert_uint_eq(membership_digests(m, d, 10, &complete), 10);
    ck_assert(complete);
    ck_assert_uint_eq(membership_digests(m, d, 16, &complete), 10);
    ck_assert(complete);
    ck_assert_uint_eq(d[0].version, membership_self(m)->e.version);
    ck_assert_uint_eq(membership_digests(m, d, 1, &complete), 1);
    ck_assert(!complete);
    ck_assert_uint_eq(membership_digests(m, d, 0, &complete), 0);
    membership_destroy(m);

    m = table_with_others(0);
    ck_assert_uint_eq(membership_digests(m, d, 1, &complete), 1);
    ck_assert(complete);
    membership_destroy(m);
}
END_TEST

/*
 * Two members holding the same others, rotating in step (one SYN each a
 * round): their windows start at their own places, so a round's SYNs
 * offer different entries, and each still walks the whole table.  "o4x"
 * sorts between o4 and o5.
 */
START_TEST(test_digests_offset_by_self)
{
    struct membership *a = table_of_with_others("a", 9), *b = table_of_with_others("o4x", 9);
    struct msg_digest da[4], db[4];
    int seen[9] = {0};
    bool complete;

    for (int call = 0; call < 3; call++) {
        ck_assert_uint_eq(membership_digests(a, da, 4, &complete), 4);
        ck_assert_uint_eq(membership_digests(b, db, 4, &complete), 4);
        ck_assert_str_eq(db[0].id, "o4x");
        for (size_t i = 1; i < 4; i++) {
            for (size_t j = 1; j < 4; j++) {
                ck_assert_str_ne(da[i].id, db[j].id);
            }
            seen[atoi(db[i].id + 1)]++;
        }
    }
    for (size_t i = 0; i < 9; i++) {
        ck_assert_int_eq(seen[i], 1);
    }
    membership_destroy(a);
    membership_destroy(b);
}
END_TEST

/* Whether id is among the n digests of d, and no id is there twice. */
static bool digests_hold(const struct msg_digest *d, size_t n, const char *id)
{
    bool held = false;

    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            ck_assert_str_ne(d[i].id, d[j].id);
        }
        held |= strcmp(d[i].id, id) == 0;
    }
    return held;
}

/*
 * News goes first.  A member new to us, or one whose status changed, is
 * offered in the first places of our next membership_news_syns() SYNs
 * (so it spreads as a rumour does, not only when the rotating window
 * comes to it); a heartbeat (a new version alone) is not news.  News
 * takes at most half the window, no entry is offered twice in one SYN,
 * and the rotation still walks the whole table.
 */
START_TEST(test_digests_news_first)
{
    struct membership *m = table_with_others(600);
    struct msg_digest d[MSG_GOSSIP_DIGESTS_MAX];
    struct msg_member e;
    unsigned k;
    bool complete;
    size_t n;

    ck_assert_uint_eq(membership_news_syns(0), 0);
    ck_assert_uint_eq(membership_news_syns(1), 3);
    ck_assert_uint_eq(membership_news_syns(10), 12);
    ck_assert_uint_eq(membership_news_syns(1000), 30);
    ck_assert_uint_eq(membership_news_syns(5000), 39);

    entry_make(&e, "o5", "r1", 4, MSG_MEMBER_LEFT, 1, 2); /* a heartbeat */
    merge(m, &e, T_START, NULL);
    ck_assert_uint_eq(membership_find(m, "o5")->news, 0);
    entry_make(&e, "p", "r1", 4, MSG_MEMBER_LEFT, 1, 1); /* a newcomer */
    merge(m, &e, T_START, NULL);
    k = membership_news_syns(membership_count(m));
    ck_assert_uint_eq(k, 30);
    ck_assert_uint_eq(membership_find(m, "p")->news, k);
    for (unsigned call = 0; call < k; call++) {
        n = membership_digests(m, d, MSG_GOSSIP_DIGESTS_MAX, &complete);
        ck_assert_uint_eq(n, MSG_GOSSIP_DIGESTS_MAX);
        ck_assert(!complete);
        ck_assert_str_eq(d[0].id, "a");
        ck_assert_str_eq(d[1].id, "p");
        ck_assert(digests_hold(d, n, "p"));
    }
    ck_assert_uint_eq(membership_find(m, "p")->news, 0);
    /* Old news now: offered again only when the rotation comes to it. */
    n = membership_digests(m, d, MSG_GOSSIP_DIGESTS_MAX, &complete);
    ck_assert_str_ne(d[1].id, "p");

    /* A new status is news; more news than half the window waits for the next SYN. */
    entry_make(&e, "o7", "r1", 4, MSG_MEMBER_REMOVED, 1, 5);
    merge(m, &e, T_START, NULL);
    ck_assert_uint_eq(membership_find(m, "o7")->news, k);
    for (size_t i = 0; i < 200; i++) {
        char id[RING_NAME_MAX + 1];
        snprintf(id, sizeof(id), "q%03zu", i);
        entry_make(&e, id, "r1", 4, MSG_MEMBER_LEFT, 1, 1);
        merge(m, &e, T_START, NULL);
    }
    {
        int news_seen[201] = {0}; /* q000 .. q199, then o7 */
        size_t others = membership_count(m) - 1, walked = 0;
        for (int call = 0; call < 2; call++) {
            size_t news = 0;
            n = membership_digests(m, d, MSG_GOSSIP_DIGESTS_MAX, &complete);
            ck_assert(digests_hold(d, n, "a"));
            for (size_t i = 1; i < n; i++) {
                if (d[i].id[0] == 'q') {
                    news_seen[atoi(d[i].id + 1)]++;
                } else if (strcmp(d[i].id, "o7") == 0) {
                    news_seen[200]++;
                }
                news += i <= (MSG_GOSSIP_DIGESTS_MAX - 1) / 2 &&
                        (d[i].id[0] == 'q' || strcmp(d[i].id, "o7") == 0);
            }
            ck_assert_uint_eq(news, (MSG_GOSSIP_DIGESTS_MAX - 1) / 2);
        }
        for (size_t i = 0; i <= 200; i++) {
            ck_assert_int_ge(news_seen[i], 1);
        }
        /* The rotation covers the whole table within its bound of SYNs. */
        {
            int *seen = calloc(others + 1, sizeof(*seen));
            size_t calls = 0;
            ck_assert_ptr_nonnull(seen);
            while (walked < others && calls < 2 * others) {
                n = membership_digests(m, d, MSG_GOSSIP_DIGESTS_MAX, &complete);
                calls++;
                for (size_t i = 1; i < n; i++) {
                    size_t pos;
                    for (pos = 0; strcmp(membership_at(m, pos)->e.id, d[i].id) != 0; pos++) {
                    }
                    walked += seen[pos]++ == 0;
                }
            }
            ck_assert_uint_eq(walked, others);
            /* every entry but the news ones walked by at least 128 a SYN */
            ck_assert_uint_le(calls, (others + 127) / 128 + 1);
            free(seen);
        }
    }
    membership_destroy(m);
}
END_TEST

/* Members of the random news test, at most; and the SYNs of each of its runs. */
#define T_NEWS_IDS 1200
#define T_NEWS_SYNS 150

/* The number in a random-news id "o<k>" (or our own, "o<k>x"). */
static size_t news_id_num(const char *id)
{
    return (size_t)strtoul(id + 1, NULL, 10);
}

/*
 * Whatever the news and however the table grows between SYNs (new
 * members, new statuses and addresses, removals, heartbeats, from one
 * peer or many), a SYN holds our own entry first and then min(max - 1,
 * others) different others; news takes the first places, at most half of
 * the others' (none when every entry fits: all are listed); every entry offered has
 * one SYN of news less, and the others none less; and however much news
 * there is (a peer flooding new ids, statuses flapping), every entry is
 * offered again within ceil(others / ceil(take / 2)) + 1 SYNs, one more
 * for every ceil(take / 2) members added meanwhile: news leaves the
 * rotation at least half the places.
 */
START_TEST(test_digests_news_random)
{
    static struct msg_digest d[MSG_GOSSIP_DIGESTS_MAX];
    static uint8_t news_before[T_NEWS_IDS + 1];
    static long last_offered[T_NEWS_IDS + 1];
    static size_t added_then[T_NEWS_IDS + 1];
    static bool offered[T_NEWS_IDS + 1];

    for (int run = 0; run < 12; run++) {
        size_t start_others = rng_below(run < 6 ? 600 : 80);
        char self_id[RING_NAME_MAX + 1];
        struct membership *m;
        size_t next_id = start_others, added = 0;
        long syn = 0;
        int churn = run % 4; /* 0: none, 1: some, 2: a flood of new ids, 3: status flaps */

        snprintf(self_id, sizeof(self_id), "o%zux",
                 (size_t)(start_others > 0 ? rng_below((uint32_t)start_others) : 0));
        m = table_of_with_others(self_id, start_others);
        for (size_t i = 0; i <= T_NEWS_IDS; i++) {
            last_offered[i] = 0;
            added_then[i] = 0;
        }
        for (; syn < T_NEWS_SYNS; syn++) {
            size_t n, others, take, max, cap, want, lead = 0, news_total = 0, news_offered = 0;
            bool complete;

            /* the changes of a round */
            for (int c = 0; churn > 0 && c < (churn == 2 ? 20 : 4); c++) {
                struct msg_member e;
                char id[RING_NAME_MAX + 1];
                uint32_t what = rng_below(4);

                if ((churn == 2 || what == 0) && next_id < T_NEWS_IDS) {
                    snprintf(id, sizeof(id), "o%zu", next_id);
                    entry_make(&e, id, "r1", 4, MSG_MEMBER_LEFT, 1, 1);
                    merge(m, &e, T_START, NULL);
                    last_offered[next_id] = syn;
                    added_then[next_id] = ++added;
                    next_id++;
                } else if (next_id > 0 && what < 3) {
                    size_t k = rng_below((uint32_t)next_id);
                    const struct member *mb;
                    snprintf(id, sizeof(id), "o%zu", k);
                    mb = membership_find(m, id);
                    e = entry_held(mb);
                    e.version++;
                    if (what == 1) {
                        e.status =
                            e.status == MSG_MEMBER_LEFT ? MSG_MEMBER_REMOVED : MSG_MEMBER_LEFT;
                    } else if (churn == 3) {
                        snprintf(e.peer_addr, sizeof(e.peer_addr), "127.0.0.%u:7371",
                                 1 + rng_below(9));
                    }
                    merge(m, &e, T_START, NULL);
                } else if (next_id > 0) {
                    snprintf(id, sizeof(id), "o%u", rng_below((uint32_t)next_id));
                    (void)membership_remove(m, id);
                }
            }
            others = membership_count(m) - 1;
            max = run >= 8 ? 1 + rng_below(MSG_GOSSIP_DIGESTS_MAX) : MSG_GOSSIP_DIGESTS_MAX;
            take = max - 1 < others ? max - 1 : others;
            for (size_t i = 0; i < membership_count(m); i++) {
                const struct member *mb = membership_at(m, i);
                if (mb == membership_self(m)) {
                    continue; /* o<k>x: its number is o<k>'s */
                }
                news_before[news_id_num(mb->e.id)] = mb->news;
                news_total += mb->news > 0;
                offered[news_id_num(mb->e.id)] = false;
            }
            n = membership_digests(m, d, max, &complete);
            ck_assert_uint_eq(n, 1 + take);
            ck_assert(complete == (take == others));
            ck_assert_str_eq(d[0].id, self_id);
            for (size_t i = 1; i < n; i++) {
                size_t k = news_id_num(d[i].id);
                const struct member *mb = membership_find(m, d[i].id);
                ck_assert_ptr_nonnull(mb);
                ck_assert_str_ne(d[i].id, self_id);
                ck_assert_msg(!offered[k], "%s twice in SYN %ld", d[i].id, syn);
                offered[k] = true;
                news_offered += news_before[k] > 0;
                ck_assert_uint_eq(mb->news, (news_before[k] > 0 ? news_before[k] - 1 : 0));
                if (news_before[k] > 0 && lead + 1 == i) {
                    lead++;
                }
                last_offered[k] = syn + 1;
                added_then[k] = added;
            }
            /* news first: all of it, or as much as half the others' places hold */
            cap = complete ? 0 : take / 2;
            want = news_total < cap ? news_total : cap;
            ck_assert_uint_ge(lead, want);
            if (!complete && news_total <= cap) {
                ck_assert_uint_eq(news_offered, news_total);
            }
            for (size_t i = 0; i < membership_count(m); i++) {
                const struct member *mb = membership_at(m, i);
                size_t k = news_id_num(mb->e.id);
                size_t half = (take + 1) / 2;
                if (strcmp(mb->e.id, self_id) == 0) {
                    continue;
                }
                if (!offered[k]) {
                    ck_assert_uint_eq(mb->news, news_before[k]);
                }
                if (half > 0 && run < 8) {
                    size_t bound = (others + half - 1) / half + 1 + (added - added_then[k]) / half;
                    ck_assert_msg((size_t)(syn + 1 - last_offered[k]) <= bound,
                                  "%s not offered for %ld SYNs (others %zu, bound %zu)", mb->e.id,
                                  syn + 1 - last_offered[k], others, bound);
                }
            }
        }
        membership_destroy(m);
    }
}
END_TEST

static struct msg_digest digest_make(const char *id, uint64_t generation, uint64_t version)
{
    struct msg_digest d;

    memset(&d, 0, sizeof(d));
    snprintf(d.id, sizeof(d.id), "%s", id);
    d.generation = generation;
    d.version = version;
    return d;
}

/*
 * A list cut at its bound that leaves out our own entry (a member that
 * has just heard of us, or not at all): our entry goes back, in the last
 * place when the answer is full; a list that names us gets it by version.
 */
START_TEST(test_answer_own_entry)
{
    struct membership *m = table_with_others(4); /* a, o0..o3 at (1, 1) */
    struct msg_digest theirs[3], req[4];
    struct msg_member ent[4];
    size_t ne, nr;

    theirs[0] = digest_make("zz", 1, 1); /* the sender, unknown to us */
    theirs[1] = digest_make("o0", 1, 0); /* ours newer */
    theirs[2] = digest_make("o1", 1, 0); /* ours newer */
    membership_answer(m, theirs, 3, false, ent, 4, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, 3);
    ck_assert_str_eq(ent[0].id, "o0");
    ck_assert_str_eq(ent[1].id, "o1");
    ck_assert_str_eq(ent[2].id, "a");
    /* Full at 2: ours displaces o1, which a later exchange carries. */
    membership_answer(m, theirs, 3, false, ent, 2, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, 2);
    ck_assert_str_eq(ent[0].id, "o0");
    ck_assert_str_eq(ent[1].id, "a");
    /* Named at our version: nothing of ours goes back. */
    theirs[2] = digest_make("a", 1, 1);
    membership_answer(m, theirs, 3, false, ent, 4, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, 1);
    ck_assert_str_eq(ent[0].id, "o0");
    membership_destroy(m);
}
END_TEST

START_TEST(test_answer_rules)
{
    struct membership *m = table_with_others(4); /* a, o0..o3 at (1, 1) */
    struct msg_digest theirs[5], req[8];
    struct msg_member ent[8];
    size_t ne, nr;

    theirs[0] = digest_make("zz", 1, 1); /* the sender, unknown: ask */
    theirs[1] = digest_make("o0", 1, 0); /* ours newer: send it */
    theirs[2] = digest_make("o1", 1, 2); /* theirs newer: ask */
    theirs[3] = digest_make("o2", 1, 1); /* equal: nothing */
    theirs[4] = digest_make("o0", 1, 0); /* a repeat: answered once */
    membership_answer(m, theirs, 5, false, ent, 8, &ne, req, 8, &nr);
    ck_assert_uint_eq(ne, 2);
    ck_assert_str_eq(ent[0].id, "o0");
    ck_assert_str_eq(ent[1].id, "a"); /* our own, which the cut list left out */
    ck_assert_uint_eq(nr, 2);
    ck_assert_str_eq(req[0].id, "zz");
    ck_assert_str_eq(req[1].id, "o1");

    /*
     * A complete list: also what it did not mention (a and o3), in id
     * order, and first: the peer lacks them entirely, where it holds o0.
     */
    membership_answer(m, theirs, 5, true, ent, 8, &ne, req, 8, &nr);
    ck_assert_uint_eq(ne, 3);
    ck_assert_str_eq(ent[0].id, "a");
    ck_assert_str_eq(ent[1].id, "o3");
    ck_assert_str_eq(ent[2].id, "o0");

    /* Bounds: the entry it lacks takes the one place. */
    membership_answer(m, theirs, 5, true, ent, 1, &ne, req, 1, &nr);
    ck_assert_uint_eq(ne, 1);
    ck_assert_str_eq(ent[0].id, "a");
    ck_assert_uint_eq(nr, 1);
    membership_answer(m, theirs, 5, true, ent, 0, &ne, req, 0, &nr);
    ck_assert_uint_eq(ne, 0);
    ck_assert_uint_eq(nr, 0);
    membership_destroy(m);
}
END_TEST

/*
 * The answer to the sender's own digest (the first) goes before the
 * entries a complete list did not mention: the sender's earlier life (it
 * raises its ring_version above it; we merge its new life from the ACK2,
 * so no later answer of ours carries the earlier one), or our newer entry
 * of it (a removal).  A node back with an empty table sends a complete
 * list of itself alone, and the entries it lacks would fill the answer.
 */
START_TEST(test_answer_senders_own_first)
{
    struct membership *m = table_with_others(MSG_GOSSIP_ENTRIES_MAX); /* a, o0..o63 */
    struct msg_digest theirs[2], req[4];
    struct msg_member ent[MSG_GOSSIP_ENTRIES_MAX], c;
    size_t ne, nr;

    entry_make(&c, "c", "r1", 4, MSG_MEMBER_NORMAL, 1, 9);
    c.ring_version = 7;
    merge(m, &c, T_START, NULL);

    /* c back in generation 2, holding only itself. */
    theirs[0] = digest_make("c", 2, 1);
    membership_answer(m, theirs, 1, true, ent, MSG_GOSSIP_ENTRIES_MAX, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, MSG_GOSSIP_ENTRIES_MAX);
    ck_assert_str_eq(ent[0].id, "c");
    ck_assert_uint_eq(ent[0].generation, 1);
    ck_assert_uint_eq(ent[0].ring_version, 7);
    ck_assert_str_eq(ent[1].id, "a"); /* then what it lacks, in id order */
    ck_assert_uint_eq(nr, 1);
    ck_assert_str_eq(req[0].id, "c");
    /* The one place: the earlier life. */
    membership_answer(m, theirs, 1, true, ent, 1, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, 1);
    ck_assert_str_eq(ent[0].id, "c");
    ck_assert_uint_eq(ent[0].generation, 1);

    /* Ours of c newer than c's own digest (its removal, say): first too. */
    theirs[0] = digest_make("c", 1, 5);
    membership_answer(m, theirs, 1, true, ent, MSG_GOSSIP_ENTRIES_MAX, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, MSG_GOSSIP_ENTRIES_MAX);
    ck_assert_str_eq(ent[0].id, "c");
    ck_assert_uint_eq(ent[0].version, 9);
    ck_assert_uint_eq(nr, 0);

    /* Another node's view of c (not the first digest) gets no such place. */
    theirs[0] = digest_make("zz", 1, 1);
    theirs[1] = digest_make("c", 1, 5);
    membership_answer(m, theirs, 2, true, ent, 1, &ne, req, 4, &nr);
    ck_assert_uint_eq(ne, 1);
    ck_assert_str_eq(ent[0].id, "a");
    membership_destroy(m);
}
END_TEST

/* Bounded counts one round moved, for the assertions of the exchanges. */
struct round_counts {
    size_t digests, ack_entries, requests, ack2_entries;
};

/*
 * One gossip round from x to y, as the gossip engine runs it: x sends a
 * SYN of digests, y answers with an ACK (entries it holds newer, requests),
 * x merges the ACK and answers the requests with an ACK2, y merges it.
 */
static void gossip_round(struct membership *x, struct membership *y, uint64_t now,
                         struct round_counts *c)
{
    static struct msg_digest syn[MSG_GOSSIP_DIGESTS_MAX], req[MSG_GOSSIP_DIGESTS_MAX];
    static struct msg_member ack[MSG_GOSSIP_ENTRIES_MAX], ack2[MSG_GOSSIP_ENTRIES_MAX];
    size_t ne, nr, n2 = 0;
    bool complete;

    c->digests = membership_digests(x, syn, MSG_GOSSIP_DIGESTS_MAX, &complete);
    membership_answer(y, syn, c->digests, complete, ack, MSG_GOSSIP_ENTRIES_MAX, &ne, req,
                      MSG_GOSSIP_DIGESTS_MAX, &nr);
    for (size_t i = 0; i < ne; i++) {
        ck_assert_int_ne(merge(x, &ack[i], now, NULL), MEMBERSHIP_CONFLICT);
    }
    for (size_t i = 0; i < nr && n2 < MSG_GOSSIP_ENTRIES_MAX; i++) {
        const struct member *mb = membership_find(x, req[i].id);
        if (mb != NULL) {
            ack2[n2++] = entry_held(mb);
        }
    }
    for (size_t i = 0; i < n2; i++) {
        ck_assert_int_ne(merge(y, &ack2[i], now, NULL), MEMBERSHIP_CONFLICT);
    }
    c->ack_entries = ne;
    c->requests = nr;
    c->ack2_entries = n2;
}

/* Rounds alternating in both directions until the tables are identical; how many. */
static int gossip_until_equal(struct membership *x, struct membership *y, int max_rounds)
{
    uint64_t now = T_START;

    for (int round = 0; round < max_rounds; round++) {
        struct round_counts c;

        if (tables_eq(x, y, false)) {
            return round;
        }
        now += T_HB;
        if (round % 2 == 0) {
            gossip_round(x, y, now, &c);
        } else {
            gossip_round(y, x, now, &c);
        }
        ck_assert_uint_le(c.digests, MSG_GOSSIP_DIGESTS_MAX);
        ck_assert_uint_le(c.ack_entries, MSG_GOSSIP_ENTRIES_MAX);
        ck_assert_uint_le(c.requests, MSG_GOSSIP_DIGESTS_MAX);
        ck_assert_uint_le(c.ack2_entries, MSG_GOSSIP_ENTRIES_MAX);
    }
    return tables_eq(x, y, false) ? max_rounds : -1;
}

START_TEST(test_gossip_converges)
{
    struct membership *x = table_new("a", MSG_MEMBER_NORMAL);
    struct membership *y = table_new("b", MSG_MEMBER_NORMAL);
    struct msg_member e;
    int rounds;

    /* Shared members, newer on either side; members only one side knows. */
    entry_make(&e, "s1", "r1", 4, MSG_MEMBER_NORMAL, 1, 5);
    merge(x, &e, T_START, NULL);
    entry_make(&e, "s1", "r1", 6, MSG_MEMBER_NORMAL, 1, 9);
    merge(y, &e, T_START, NULL);
    entry_make(&e, "s2", "r2", 4, MSG_MEMBER_LEAVING, 2, 1);
    merge(x, &e, T_START, NULL);
    entry_make(&e, "s2", "r2", 4, MSG_MEMBER_NORMAL, 1, 50);
    merge(y, &e, T_START, NULL);
    entry_make(&e, "x1", "r1", 4, MSG_MEMBER_JOINING, 1, 1);
    merge(x, &e, T_START, NULL);
    entry_make(&e, "y1", "r3", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(y, &e, T_START, NULL);
    ck_assert_int_eq(membership_remove(y, "y1"), 0);

    rounds = gossip_until_equal(x, y, T_ROUNDS_SMALL);
    ck_assert_int_ge(rounds, 1);
    ck_assert_uint_eq(membership_count(x), 6);
    ck_assert_uint_eq(membership_find(x, "s1")->e.tokens, 6);
    ck_assert_uint_eq(membership_find(y, "s2")->e.status, MSG_MEMBER_LEAVING);
    ck_assert_uint_eq(membership_find(x, "y1")->e.status, MSG_MEMBER_REMOVED);
    /* Each holds the other's own entry as its owner last wrote it. */
    ck_assert(held_eq(membership_find(y, "a"), membership_self(x)));
    ck_assert(held_eq(membership_find(x, "b"), membership_self(y)));
    ck_assert_uint_eq(membership_find(x, "b")->e.digest, membership_digest(x));
    membership_destroy(x);
    membership_destroy(y);
}
END_TEST

/* Add `n` members named <prefix>000.. to m, a quarter of them joining. */
static void add_many(struct membership *m, const char *prefix, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct msg_member e;
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "%s%03zu", prefix, i);
        entry_make(&e, id, i % 2 ? "r1" : "r2", 2,
                   i % 4 == 0 ? MSG_MEMBER_JOINING : MSG_MEMBER_NORMAL, 1, 1 + i);
        merge(m, &e, T_START, NULL);
    }
}

START_TEST(test_gossip_converges_large)
{
    struct membership *x = table_new("a", MSG_MEMBER_NORMAL);
    struct membership *y = table_new("b", MSG_MEMBER_NORMAL);
    int rounds;

    add_many(x, "x", T_LARGE_SIDE);
    add_many(y, "y", T_LARGE_SIDE);
    ck_assert_uint_gt(2 * T_LARGE_SIDE + 2, MSG_GOSSIP_DIGESTS_MAX);
    rounds = gossip_until_equal(x, y, T_ROUNDS_LARGE);
    ck_assert_int_ge(rounds, 1);
    ck_assert_uint_eq(membership_count(x), 2 * T_LARGE_SIDE + 2);
    /* 150 entries each way at 64 entries a message take several rounds. */
    ck_assert_int_gt(rounds, 2);
    membership_destroy(x);
    membership_destroy(y);
}
END_TEST

START_TEST(test_encode_restore)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL), *b;
    struct msg_member self, e;
    struct buf out;
    const struct ring *r;

    add_many(a, "n", 6);
    ck_assert_int_eq(membership_remove(a, "n001"), 0);
    entry_make(&e, "n009", "r4", 4, MSG_MEMBER_LEFT, 3, 9);
    merge(a, &e, T_START, NULL);
    buf_init(&out, 0);
    ck_assert_int_eq(membership_encode(a, &out), 0);

    /* A restart: our own saved entry is not taken back, the rest is. */
    entry_make(&self, "a", "r0", 4, MSG_MEMBER_NORMAL, 2, 1);
    snprintf(self.peer_addr, sizeof(self.peer_addr), "10.0.0.1:7371");
    ck_assert_int_eq(membership_create(&b, ring_default_seed, &self, T_HB, T_START), 0);
    ck_assert_int_eq(membership_restore(b, buf_data(&out), out.len, T_START + 5), 0);
    ck_assert_uint_eq(membership_count(b), membership_count(a));
    for (size_t i = 0; i < membership_count(a); i++) {
        const struct member *x = membership_at(a, i), *y = membership_at(b, i);

        if (x == membership_self(a)) {
            continue;
        }
        struct msg_member ex = entry_held(x), ey = entry_held(y);

        ck_assert(entry_eq(&ex, &ey, true));
        ck_assert_uint_eq(y->heard_ms, T_START + 5);
    }
    ck_assert_str_eq(membership_entry_peer_addr(&membership_self(b)->e), "10.0.0.1:7371");
    ck_assert_uint_eq(membership_self(b)->e.generation, 2);
    ck_assert_uint_eq(membership_digest(a), membership_digest(b));
    ck_assert_uint_eq(membership_self(b)->e.digest, membership_digest(b));

    /* Damaged input changes nothing. */
    r = membership_ring(b);
    ck_assert_int_lt(membership_restore(b, buf_data(&out), out.len - 1, T_START), 0);
    ck_assert_int_lt(membership_restore(b, buf_data(&out), 0, T_START), 0);
    ck_assert_ptr_eq(membership_ring(b), r);
    ck_assert_uint_eq(membership_count(b), membership_count(a));
    buf_free(&out);
    membership_destroy(a);
    membership_destroy(b);
}
END_TEST

/*
 * The table keeps an entry's strings at their own lengths (struct
 * member_entry): entries with the shortest fields and with the longest
 * (a 64-byte id and rack, addresses with a 255-byte host name) come back
 * byte for byte from the table, from an answer and from a restore of its
 * encoding.  A newer entry with the same strings (a heartbeat) keeps them
 * where they are; one with other strings replaces them.
 */
/* An address into a field of MSG_ADDR_MAX bytes, zero after it: entries compare whole. */
static void addr_put(char *field, const char *addr)
{
    memset(field, 0, MSG_ADDR_MAX);
    snprintf(field, MSG_ADDR_MAX, "%s", addr);
}

START_TEST(test_entry_strings)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL),
                      *c = table_new("c", MSG_MEMBER_NORMAL);
    struct msg_member shortest, longest, got, answer[4];
    struct msg_digest requests[4];
    size_t n_answer, n_requests;
    char id[RING_NAME_MAX + 1], rack[RING_NAME_MAX + 1], host[ADDR_HOST_MAX + 1];
    const char *kept;
    struct buf out;

    memset(id, 'x', RING_NAME_MAX);
    id[RING_NAME_MAX] = '\0';
    memset(rack, 'y', RING_NAME_MAX);
    rack[RING_NAME_MAX] = '\0';
    for (size_t i = 0; i < ADDR_HOST_MAX; i++) { /* four 63-byte labels */
        host[i] = i % 64 == 63 ? '.' : (char)('a' + i / 64);
    }
    host[ADDR_HOST_MAX] = '\0';
    entry_make(&shortest, "s", "r", 1, MSG_MEMBER_NORMAL, 1, 1);
    addr_put(shortest.peer_addr, "h:1");
    addr_put(shortest.client_addr, "h:2");
    entry_make(&longest, id, rack, RING_TOKENS_MAX, MSG_MEMBER_LEAVING, 7, 9);
    snprintf(longest.peer_addr, sizeof(longest.peer_addr), "%s:65535", host);
    snprintf(longest.client_addr, sizeof(longest.client_addr), "%s:1", host);
    ck_assert_uint_eq(strlen(longest.client_addr), 257);
    memset(longest.instance, 0xa5, sizeof(longest.instance));
    longest.ring_version = 3;
    longest.digest = 0x0123456789abcdefull;
    longest.target = 0xfedcba9876543210ull;
    longest.target_tokens = 2;
    ck_assert(msg_member_valid(&longest));
    ck_assert_uint_eq(strlen(longest.peer_addr), 261);

    ck_assert_int_eq(merge(a, &shortest, T_START, NULL), MEMBERSHIP_ADDED);
    ck_assert_int_eq(merge(a, &longest, T_START, NULL), MEMBERSHIP_ADDED);
    got = entry_held(membership_find(a, "s"));
    ck_assert_mem_eq(&got, &shortest, sizeof(got));
    got = entry_held(membership_find(a, id));
    ck_assert_mem_eq(&got, &longest, sizeof(got));
    ck_assert_str_eq(membership_entry_rack(&membership_find(a, id)->e), rack);
    ck_assert_str_eq(membership_entry_peer_addr(&membership_find(a, id)->e), longest.peer_addr);
    ck_assert_str_eq(membership_entry_client_addr(&membership_find(a, id)->e), longest.client_addr);

    /* An answer to an empty complete list: every entry, in id order (a, s, x...). */
    membership_answer(a, NULL, 0, true, answer, 4, &n_answer, requests, 4, &n_requests);
    ck_assert_uint_eq(n_answer, 3);
    ck_assert_mem_eq(&answer[1], &shortest, sizeof(answer[1]));
    ck_assert_mem_eq(&answer[2], &longest, sizeof(answer[2]));

    buf_init(&out, 0);
    ck_assert_int_eq(membership_encode(a, &out), 0);
    ck_assert_int_eq(membership_restore(c, buf_data(&out), out.len, T_START), 0);
    got = entry_held(membership_find(c, id));
    ck_assert_mem_eq(&got, &longest, sizeof(got));
    got = entry_held(membership_find(c, "s"));
    ck_assert_mem_eq(&got, &shortest, sizeof(got));
    /* A list naming s twice, each time at another address: the newer stands. */
    answer[0] = shortest;
    answer[0].version = 5;
    addr_put(answer[0].peer_addr, "h:5");
    answer[1] = answer[0];
    answer[1].version = 6;
    addr_put(answer[1].peer_addr, "h:6");
    buf_clear(&out);
    ck_assert_int_eq(msg_members_encode(answer, 2, &out), 0);
    ck_assert_int_eq(membership_restore(c, buf_data(&out), out.len, T_START), 0);
    got = entry_held(membership_find(c, "s"));
    ck_assert_mem_eq(&got, &answer[1], sizeof(got));
    buf_free(&out);

    /* A heartbeat keeps the strings; a new address replaces them, shorter. */
    kept = membership_find(a, id)->e.id;
    longest.version++;
    ck_assert_int_eq(merge(a, &longest, T_START + T_HB, NULL), MEMBERSHIP_UPDATED);
    ck_assert_ptr_eq(membership_find(a, id)->e.id, kept);
    longest.version++;
    addr_put(longest.peer_addr, "h:3");
    ck_assert_int_eq(merge(a, &longest, T_START + 2 * T_HB, NULL), MEMBERSHIP_UPDATED);
    got = entry_held(membership_find(a, id));
    ck_assert_mem_eq(&got, &longest, sizeof(got));
    ck_assert_str_eq(membership_entry_client_addr(&membership_find(a, id)->e), longest.client_addr);
    membership_destroy(c);
    membership_destroy(a);
}
END_TEST

/*
 * A restore makes room for its whole list at once and no more, where
 * doubling would leave up to half the array unused: a saved table of 4098
 * entries (ours among them) takes 4099 entries' room, strings and keys,
 * not 8192, and a member joining then fits without growing it.  Measured
 * as the heap the table keeps, less what the same ring takes on its own.
 */
START_TEST(test_restore_room)
{
    enum { N = 4097 };
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member *list = calloc(N + 1, sizeof(*list));
    struct ring_member *rm = calloc(N + 1, sizeof(*rm));
    size_t before, kept, ring_bytes, room;
    struct ring *r;
    struct buf out;

    ck_assert_ptr_nonnull(list);
    ck_assert_ptr_nonnull(rm);
    list[0] = entry_held(membership_self(m));
    for (size_t i = 0; i <= N; i++) {
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "m%05zu", i);
        if (i > 0) {
            entry_make(&list[i], id, "r1", 1, MSG_MEMBER_NORMAL, 1, 1);
        }
        rm[i] =
            (struct ring_member){.id = list[i].id, .rack = list[i].rack, .tokens = list[i].tokens};
    }
    buf_init(&out, 0);
    ck_assert_int_eq(msg_members_encode(list, N + 1, &out), 0);
    if (!heap_measurable()) { /* a sanitizer's allocator */
        goto out;
    }
    before = heap_in_use();
    ck_assert_int_eq(ring_create(&r, ring_default_seed, rm, N + 1), 0);
    ring_bytes = heap_in_use() - before;
    ring_unref(r);

    before = heap_in_use();
    ck_assert_int_eq(membership_restore(m, buf_data(&out), out.len, T_START), 0);
    kept = heap_in_use() - before;
    /* entries and keys, and strings ("m00000\0r1\0" and two addresses: 40 bytes, a 48-byte chunk)
     */
    room = (N + 2) * (sizeof(struct member) + sizeof(uint64_t)) + N * 48;
    ck_assert_uint_eq(membership_count(m), N + 1);
    ck_assert_uint_ge(kept, ring_bytes + N * sizeof(struct member));
    ck_assert_uint_le(kept, ring_bytes + room + room / 20);
    /* A joining member: its strings and the target ring, no larger array. */
    entry_make(&list[1], "z", "r1", 1, MSG_MEMBER_JOINING, 1, 1);
    before = heap_in_use();
    ck_assert_int_eq(merge(m, &list[1], T_START, NULL), MEMBERSHIP_ADDED);
    ck_assert_uint_le(heap_in_use() - before, ring_bytes + ring_bytes / 10);
out:
    buf_free(&out);
    free(rm);
    free(list);
    membership_destroy(m);
}
END_TEST

/* Ids of the lookup test: sim-style names and prefixes of one another, short and long. */
#define T_LOOKUP_MEMBERS 3000
/* Members a restore adds in the lookup test, between the ids already held. */
#define T_LOOKUP_RESTORED 500

/*
 * The i-th id of the lookup test, k = i / 3: n<k>; or a run of k % 56 + 1
 * 'p's followed by k / 56 unless 0 (runs share their first 8 bytes from 9
 * on); or k in 60 digits (ids that differ only near their end).
 */
static void lookup_id(size_t i, char *id, size_t len)
{
    size_t k = i / 3, run = k % 56 + 1;

    switch (i % 3) {
    case 0:
        snprintf(id, len, "n%zu", k);
        break;
    case 1:
        memset(id, 'p', run);
        id[run] = '\0';
        if (k / 56 > 0) {
            snprintf(id + run, len - run, "%zu", k / 56);
        }
        break;
    default:
        snprintf(id, len, "%060zu", k);
        break;
    }
}

/* Every entry is found at its own position, in strictly ascending id order. */
static void lookup_check_positions(const struct membership *m)
{
    for (size_t i = 0; i < membership_count(m); i++) {
        const struct member *mb = membership_at(m, i);

        ck_assert_ptr_eq(membership_find(m, mb->e.id), mb);
        if (i > 0) {
            ck_assert_int_lt(strcmp(membership_at(m, i - 1)->e.id, mb->e.id), 0);
        }
    }
}

/* ids[0..held) are found, ids[held..n) are not. */
static void lookup_check_ids(const struct membership *m, char (*ids)[RING_NAME_MAX + 1],
                             size_t held, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct member *mb = membership_find(m, ids[i]);

        if (i < held) {
            ck_assert_ptr_nonnull(mb);
            ck_assert_str_eq(mb->e.id, ids[i]);
        } else {
            ck_assert_msg(mb == NULL, "%s found before it was added", ids[i]);
        }
    }
}

/*
 * Lookups by id (the keys' binary search, and the full compare among ids
 * that share their first 8 bytes) find every member at its position and
 * no other id: members added in a random order (most of them between
 * others, moving those behind), ids that share their first 8 bytes or all
 * but the last, the array growing; then a restore that adds its members
 * between the others.
 */
START_TEST(test_lookups)
{
    enum { N = T_LOOKUP_MEMBERS + T_LOOKUP_RESTORED };
    char(*ids)[RING_NAME_MAX + 1] = calloc(N, sizeof(*ids));
    struct msg_member *list = calloc(N + 1, sizeof(*list));
    struct membership *m = table_new("o", MSG_MEMBER_NORMAL);
    size_t n_list = 0;
    struct buf out;
    bool changed;

    ck_assert_ptr_nonnull(ids);
    ck_assert_ptr_nonnull(list);
    for (size_t i = 0; i < N; i++) {
        lookup_id(i, ids[i], sizeof(ids[i]));
    }
    for (size_t i = N - 1; i > 0; i--) { /* a random order (Fisher-Yates) */
        char t[RING_NAME_MAX + 1];
        size_t j = rng_below_size(i + 1);
        memcpy(t, ids[i], sizeof(t));
        memcpy(ids[i], ids[j], sizeof(t));
        memcpy(ids[j], t, sizeof(t));
    }
    membership_defer(m);
    for (size_t i = 0; i < T_LOOKUP_MEMBERS; i++) {
        struct msg_member e;

        entry_make(&e, ids[i], "r1", 1, MSG_MEMBER_NORMAL, 1, 1);
        ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_ADDED);
        ck_assert_str_eq(membership_find(m, ids[i])->e.id, ids[i]);
        ck_assert_ptr_null(membership_find(m, ids[i + 1]));
        if (i % 500 == 0) {
            lookup_check_positions(m);
            lookup_check_ids(m, ids, i + 1, N);
        }
    }
    ck_assert_int_eq(membership_commit(m, &changed), 0);
    lookup_check_positions(m);
    lookup_check_ids(m, ids, T_LOOKUP_MEMBERS, N);

    /* A restore adding the rest, between the members held. */
    list[n_list++] = entry_held(membership_self(m));
    for (size_t i = T_LOOKUP_MEMBERS; i < N; i++) {
        entry_make(&list[n_list++], ids[i], "r1", 1, MSG_MEMBER_NORMAL, 1, 1);
    }
    buf_init(&out, 0);
    ck_assert_int_eq(msg_members_encode(list, n_list, &out), 0);
    ck_assert_int_eq(membership_restore(m, buf_data(&out), out.len, T_START), 0);
    ck_assert_uint_eq(membership_count(m), N + 1);
    lookup_check_positions(m);
    lookup_check_ids(m, ids, N, N);
    ck_assert_ptr_eq(membership_find(m, "o"), membership_self(m));
    ck_assert_ptr_null(membership_find(m, "zz"));
    ck_assert_ptr_null(membership_find(m, "n"));
    ck_assert_ptr_null(membership_find(m, ""));
    buf_free(&out);
    free(list);
    free(ids);
    membership_destroy(m);
}
END_TEST

START_TEST(test_detect_states)
{
    const double suspect_at = DETECTOR_SUSPECT_PHI_DEFAULT / M_LOG10E * T_HB;
    const double down_at = DETECTOR_DOWN_PHI_DEFAULT / M_LOG10E * T_HB;
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member e, gone;
    uint64_t now = T_START, last;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e, now, NULL);
    entry_make(&gone, "n3", "r1", 4, MSG_MEMBER_LEFT, 1, 1);
    merge(m, &gone, now, NULL);
    for (int i = 0; i < 20; i++) {
        now += T_HB;
        e.version++;
        merge(m, &e, now, NULL);
    }
    last = now;
    ck_assert_uint_eq(membership_detect(m, last + (uint64_t)suspect_at,
                                        DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
                      0);
    ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_ALIVE);
    ck_assert_uint_eq(membership_detect(m, last + (uint64_t)suspect_at + 1,
                                        DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
                      1);
    ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_SUSPECT);
    ck_assert_uint_eq(membership_detect(m, last + (uint64_t)down_at, DETECTOR_SUSPECT_PHI_DEFAULT,
                                        DETECTOR_DOWN_PHI_DEFAULT),
                      0);
    ck_assert_uint_eq(membership_detect(m, last + (uint64_t)down_at + 1,
                                        DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
                      1);
    ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_DOWN);
    /* Down stays in the ring (PLACEMENT.md section 6). */
    ck_assert_int_ge(ring_member_find(membership_ring(m), "n2"), 0);

    now = last + 10000;
    e.version++;
    merge(m, &e, now, NULL);
    ck_assert_uint_eq(
        membership_detect(m, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT), 1);
    ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_ALIVE);
    /* The left member and ourselves were never judged. */
    ck_assert_int_eq(membership_find(m, "n3")->state, DETECTOR_ALIVE);
    ck_assert_int_eq(membership_self(m)->state, DETECTOR_ALIVE);
    membership_destroy(m);
}
END_TEST

START_TEST(test_arrivals)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    const struct member *mb;
    struct msg_member e;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e, T_START, NULL);
    mb = membership_find(m, "n2");
    ck_assert_uint_eq(mb->heard_ms, T_START);
    ck_assert_uint_eq(mb->det.last_ms, T_START);
    ck_assert_double_eq_tol(detector_mean(&mb->det), T_HB, 1e-9);

    /* The same entry again is not an arrival. */
    merge(m, &e, T_START + 100, NULL);
    ck_assert_uint_eq(membership_find(m, "n2")->heard_ms, T_START);
    /* A grown version is. */
    e.version = 2;
    merge(m, &e, T_START + 300, NULL);
    mb = membership_find(m, "n2");
    ck_assert_uint_eq(mb->heard_ms, T_START + 300);
    ck_assert_uint_eq(mb->det.n, 1);
    /* A direct message is. */
    membership_heard(m, "n2", T_START + 500);
    ck_assert_uint_eq(membership_find(m, "n2")->heard_ms, T_START + 500);
    ck_assert_uint_eq(membership_find(m, "n2")->det.n, 2);
    membership_heard(m, "unknown", T_START + 600);
    membership_heard(m, "a", T_START + 600);
    ck_assert_uint_eq(membership_self(m)->heard_ms, 0);
    /* A new generation starts the detector afresh. */
    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 2, 0);
    merge(m, &e, T_START + 90000, NULL);
    mb = membership_find(m, "n2");
    ck_assert_uint_eq(mb->det.n, 0);
    ck_assert_uint_eq(mb->det.last_ms, T_START + 90000);
    membership_destroy(m);
}
END_TEST

/*
 * An observer late at every round (here 5 intervals apart: stopped, or
 * starved): each late round forgives its pause only to members heard just
 * before the round ahead of it (gossip.c, gossip_pause_check()).  The live
 * n2, heard right after each round, is never suspected; the dead n3 is
 * forgiven at most its first three late rounds (heard within two intervals
 * of the round before), so it is down within the usual silence plus four
 * late rounds, not after as many late rounds as it takes intervals to go
 * down (some 18: 18 s here).
 */
START_TEST(test_forgive_pauses_flapping)
{
    const uint64_t gap = 5 * T_HB,
                   down_at = (uint64_t)(DETECTOR_DOWN_PHI_DEFAULT / M_LOG10E * T_HB);
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member e2, e3;
    uint64_t now = T_START, died, prev;
    int rounds = 0;

    entry_make(&e2, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    entry_make(&e3, "n3", "r2", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e2, now, NULL);
    merge(m, &e3, now, NULL);
    for (int i = 0; i < 20; i++) {
        now += T_HB;
        membership_heard(m, "n2", now);
        membership_heard(m, "n3", now);
    }
    died = now;
    prev = now;
    while (membership_find(m, "n3")->state != DETECTOR_DOWN && rounds < 100) {
        now += gap;
        membership_forgive(m, gap - T_HB, prev - 2 * T_HB, now);
        membership_detect(m, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT);
        ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_ALIVE);
        membership_heard(m, "n2", now + 1); /* its messages, read after the round */
        prev = now;
        rounds++;
    }
    ck_assert_int_eq(membership_find(m, "n3")->state, DETECTOR_DOWN);
    ck_assert_uint_le(now - died, down_at + 4 * gap);
    membership_destroy(m);
}
END_TEST

/*
 * A member that told us its heartbeat directly (its PING) and then went
 * silent: its earlier versions, relayed late by gossip, are taken into the
 * table but are no arrivals, so it goes down on time and stays down; a
 * version above the one it told is news and an arrival; a member that told
 * us nothing has every newer version counted.
 */
START_TEST(test_told_versions_not_arrivals)
{
    const double down_at = DETECTOR_DOWN_PHI_DEFAULT / M_LOG10E * T_HB;
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member e, quiet;
    uint64_t now = T_START, last;
    const struct member *mb;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &e, now, NULL);
    entry_make(&quiet, "n3", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    merge(m, &quiet, now, NULL);
    /* n2 pings us each round with its heartbeat; gossip relays it 5 beats late. */
    for (uint64_t v = 2; v <= 20; v++) {
        now += T_HB;
        membership_heard(m, "n2", now);
        membership_told(m, "n2", 1, v, now);
        if (v > 5) {
            e.version = v - 5;
            merge(m, &e, now + 1, NULL);
        }
    }
    last = now;
    mb = membership_find(m, "n2");
    ck_assert_uint_eq(mb->told_generation, 1);
    ck_assert_uint_eq(mb->told_version, 20);
    ck_assert_uint_eq(mb->det.last_ms, last);
    /* Told nothing (version 0), or something older: kept as it was. */
    membership_told(m, "n2", 1, 0, now);
    membership_told(m, "n2", 1, 7, now);
    ck_assert_uint_eq(membership_find(m, "n2")->told_version, 20);
    /* n2 crashed after its ping of version 20; its versions 16..20 keep arriving. */
    for (uint64_t v = 16; v <= 20; v++) {
        now += 700;
        e.version = v;
        ck_assert_int_eq(merge(m, &e, now, NULL), MEMBERSHIP_UPDATED);
        mb = membership_find(m, "n2");
        ck_assert_uint_eq(mb->e.version, v);
        ck_assert_uint_eq(mb->det.last_ms, last);
        ck_assert_uint_eq(mb->heard_ms, last);
    }
    membership_detect(m, last + (uint64_t)down_at + 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                      DETECTOR_DOWN_PHI_DEFAULT);
    ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_DOWN);
    /*
     * A version above the told one is dated from the PING that told it:
     * 21 (a ring-digest bump written after its last PING, say, carried by
     * gossip for seconds) was written one interval after it at the latest,
     * which does not make n2 alive now.
     */
    now = last + (uint64_t)down_at + 100;
    e.version = 21;
    merge(m, &e, now, NULL);
    mb = membership_find(m, "n2");
    ck_assert_uint_eq(mb->det.last_ms, last + T_HB);
    ck_assert_uint_eq(mb->heard_ms, last + T_HB);
    membership_detect(m, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT);
    ck_assert_int_ne(membership_find(m, "n2")->state, DETECTOR_ALIVE);
    /* 21 beats above it take 4.2 s of life to write, more than has passed: a sign of life now. */
    e.version = 41;
    merge(m, &e, now, NULL);
    ck_assert_uint_eq(membership_find(m, "n2")->det.last_ms, now);
    membership_detect(m, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT);
    ck_assert_int_eq(membership_find(m, "n2")->state, DETECTOR_ALIVE);
    /* n3 never pinged us: every newer relayed version is an arrival. */
    quiet.version = 2;
    merge(m, &quiet, now, NULL);
    ck_assert_uint_eq(membership_find(m, "n3")->det.last_ms, now);
    ck_assert_uint_eq(membership_find(m, "n3")->det.n, 1);
    /* A told heartbeat of a later life outranks every version of the earlier one. */
    membership_told(m, "n3", 2, 1, now);
    quiet.version = 3;
    merge(m, &quiet, now + 500, NULL);
    ck_assert_uint_eq(membership_find(m, "n3")->det.last_ms, now);
    membership_destroy(m);
}
END_TEST

/*
 * A member cut off from us (a partial partition) that told us version 10
 * directly, then paused for 20 intervals and resumed: it lost the 20
 * heartbeats it did not write, so each later version is written 20
 * intervals after the time dating from the old PING gives it.  Dated so
 * for as long as the partition lasts, it would be held down while alive;
 * once it has written more versions than MEMBERSHIP_DATED_VERSIONS_MAX
 * above the told one, the PING is too old to date anything and its
 * versions count as they arrive: alive again within that many intervals.
 */
START_TEST(test_told_long_ago_paused)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    const uint64_t told = T_START + 1000, lag = 20 * T_HB;
    struct msg_member e;
    uint64_t now = told;
    bool alive = false;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 1, 10);
    merge(m, &e, now, NULL);
    membership_heard(m, "n2", now);
    membership_told(m, "n2", 1, 10, now);
    for (uint64_t k = 1; k <= MEMBERSHIP_DATED_VERSIONS_MAX + 1; k++) {
        now = told + k * T_HB + lag + T_HB; /* written lag late, relayed one round late */
        e.version = 10 + k;
        merge(m, &e, now, NULL);
        membership_detect(m, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT);
        alive = membership_find(m, "n2")->state == DETECTOR_ALIVE;
    }
    ck_assert_msg(alive, "n2 still held %d after %d versions past its last ping",
                  (int)membership_find(m, "n2")->state, MEMBERSHIP_DATED_VERSIONS_MAX + 1);
    ck_assert_uint_eq(membership_find(m, "n2")->det.last_ms, now);
    membership_destroy(m);
}
END_TEST

START_TEST(test_table_full)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    enum membership_merged merged;
    struct msg_member e;
    bool changed;

    /*
     * Ascending ids after "a": every entry is appended, no shifting.  As
     * one list (gossip merges a message's entries so): a joining member is
     * in the target ring, which would otherwise be rebuilt at every entry.
     */
    membership_defer(m);
    for (size_t i = 1; i < MEMBERSHIP_MAX; i++) {
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "j%04zu", i);
        entry_make(&e, id, "r1", 1, MSG_MEMBER_JOINING, 1, 1);
        ck_assert_int_eq(merge(m, &e, T_START, NULL), MEMBERSHIP_ADDED);
    }
    ck_assert_int_eq(membership_commit(m, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(membership_count(m), MEMBERSHIP_MAX);
    entry_make(&e, "k", "r1", 1, MSG_MEMBER_JOINING, 1, 1);
    ck_assert_int_eq(membership_merge(m, &e, T_START, &merged, &changed), RK_ETOOBIG);
    ck_assert_uint_eq(membership_count(m), MEMBERSHIP_MAX);
    /* Known members still update. */
    entry_make(&e, "j0001", "r1", 1, MSG_MEMBER_NORMAL, 1, 2);
    ck_assert_int_eq(merge(m, &e, T_START, &changed), MEMBERSHIP_UPDATED);
    ck_assert(changed);
    membership_destroy(m);
}
END_TEST

/*
 * A saved or forged member list at the bound: MEMBERSHIP_MAX - 1 members
 * besides us fill the table (8192 with us, one ring of them all); one more
 * (8193 entries) is refused whole and leaves the table as it was.
 */
START_TEST(test_restore_at_bound)
{
    struct membership *m = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member *list = calloc(MEMBERSHIP_MAX + 1, sizeof(*list));
    uint64_t digest = membership_digest(m);
    struct buf out;

    ck_assert_ptr_nonnull(list);
    for (size_t i = 0; i <= MEMBERSHIP_MAX; i++) {
        char id[RING_NAME_MAX + 1];

        snprintf(id, sizeof(id), "m%05zu", i);
        entry_make(&list[i], id, "r1", 1, MSG_MEMBER_NORMAL, 1, 1);
    }
    buf_init(&out, 0);
    ck_assert_int_eq(msg_members_encode(list, MEMBERSHIP_MAX + 1, &out), 0);
    ck_assert_int_eq(membership_restore(m, buf_data(&out), out.len, T_START), RK_ETOOBIG);
    ck_assert_uint_eq(membership_count(m), 1);
    ck_assert_uint_eq(membership_digest(m), digest);
    buf_clear(&out);
    ck_assert_int_eq(msg_members_encode(list, MEMBERSHIP_MAX - 1, &out), 0);
    ck_assert_int_eq(membership_restore(m, buf_data(&out), out.len, T_START), 0);
    ck_assert_uint_eq(membership_count(m), MEMBERSHIP_MAX);
    ck_assert_uint_eq(ring_member_count(membership_ring(m)), MEMBERSHIP_MAX);
    ck_assert_int_eq(ring_member_find(membership_ring(m), "m08190"), MEMBERSHIP_MAX - 1);
    buf_free(&out);
    free(list);
    membership_destroy(m);
}
END_TEST

/*
 * A member removed while it was down comes back in a new generation: its
 * entry replaces the removed one everywhere, and the epoch must not come
 * back to the value the cluster had while it was out.  Its restart takes
 * the saved ring_version + MEMBERSHIP_REMOVE_RING_BUMP + 1; when its saved
 * ring_version lagged, the earlier life's entry it is sent back (answer)
 * raises it (merge).
 */
START_TEST(test_earlier_life_epoch)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL);
    struct membership *c;
    struct msg_member ce, back, removed;
    struct msg_digest d, requests[4];
    struct msg_member entries[4];
    size_t ne, nr;
    uint64_t with_c, without_c, again, raised_epoch;

    entry_make(&ce, "c", "r1", 4, MSG_MEMBER_NORMAL, 1, 7);
    ce.ring_version = 2;
    merge(a, &ce, T_START, NULL);
    with_c = membership_epoch(a);
    ck_assert_int_eq(membership_remove(a, "c"), 0);
    without_c = membership_epoch(a);
    ck_assert_uint_gt(without_c, with_c);
    removed = entry_held(membership_find(a, "c"));
    ck_assert_uint_eq(removed.ring_version, 2 + MEMBERSHIP_REMOVE_RING_BUMP);

    /* c restarts from a saved table that had its own entry at ring_version 2. */
    back = ce;
    back.generation = 2;
    back.version = 1;
    back.ring_version = 2 + MEMBERSHIP_REMOVE_RING_BUMP + 1;
    ck_assert_int_eq(merge(a, &back, T_START, NULL), MEMBERSHIP_UPDATED);
    again = membership_epoch(a);
    ck_assert_uint_gt(again, without_c);

    /* c's saved ring_version lagged (1): its first restart entry ties the removal. */
    back.ring_version = 1 + MEMBERSHIP_REMOVE_RING_BUMP + 1;
    ck_assert_int_eq(membership_create(&c, ring_default_seed, &back, T_HB, T_START), 0);
    memset(&d, 0, sizeof(d));
    memcpy(d.id, back.id, sizeof(d.id));
    d.generation = back.generation;
    d.version = back.version;
    /* a, still holding the removal, answers c's digest of itself with a
     * request for c's entry and the earlier life's entry. */
    membership_destroy(a);
    a = table_new("a", MSG_MEMBER_NORMAL);
    merge(a, &removed, T_START, NULL);
    membership_answer(a, &d, 1, false, entries, 4, &ne, requests, 4, &nr);
    ck_assert_uint_eq(nr, 1);
    ck_assert_uint_eq(ne, 2); /* and a's own, which c's list left out */
    ck_assert_str_eq(entries[1].id, "a");
    ck_assert_uint_eq(entries[0].generation, 1);
    ck_assert_uint_eq(entries[0].status, MSG_MEMBER_REMOVED);
    /* Not when the digest is another node's view of c (not the first). */
    {
        struct msg_digest two[2];
        memset(two, 0, sizeof(two));
        memcpy(two[0].id, "zz", 3);
        two[0].generation = 1;
        two[0].version = 1;
        two[1] = d;
        membership_answer(a, two, 2, false, entries + 1, 3, &ne, requests, 4, &nr);
        ck_assert_uint_eq(ne, 1);
        ck_assert_str_eq(entries[1].id, "a");
        ck_assert_uint_eq(nr, 2);
    }
    /* c takes it as a reason to count above it, nothing else. */
    raised_epoch = membership_epoch(c);
    ck_assert_int_eq(merge(c, &entries[0], T_START, NULL), MEMBERSHIP_RAISED);
    ck_assert_uint_eq(membership_self(c)->e.ring_version, removed.ring_version + 1);
    ck_assert_uint_eq(membership_self(c)->e.version, 2);
    ck_assert_uint_eq(membership_self(c)->e.status, MSG_MEMBER_NORMAL);
    ck_assert_uint_eq(membership_self(c)->e.generation, 2);
    ck_assert_uint_gt(membership_epoch(c), raised_epoch);
    /* Once is enough: the same entry again changes nothing. */
    ck_assert_int_eq(merge(c, &entries[0], T_START, NULL), MEMBERSHIP_IGNORED);
    /* Its new entry, merged by a, moves a's epoch past the removal's. */
    without_c = membership_epoch(a);
    back = entry_held(membership_self(c));
    ck_assert_int_eq(merge(a, &back, T_START, NULL), MEMBERSHIP_UPDATED);
    ck_assert_uint_gt(membership_epoch(a), without_c);
    membership_destroy(c);
    membership_destroy(a);
}
END_TEST

/* A removal that could not be saved is taken back: entry, ring and digest as they were. */
START_TEST(test_put_back)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member e, before;
    uint64_t digest, epoch;

    entry_make(&e, "n2", "r1", 4, MSG_MEMBER_NORMAL, 7, 10);
    merge(a, &e, T_START, NULL);
    before = entry_held(membership_find(a, "n2"));
    digest = membership_digest(a);
    epoch = membership_epoch(a);
    ck_assert_int_eq(membership_remove(a, "n2"), 0);
    ck_assert_uint_ne(membership_digest(a), digest);
    ck_assert_int_eq(membership_put_back(a, &before), 0);
    e = entry_held(membership_find(a, "n2"));
    ck_assert(entry_eq(&e, &before, true));
    ck_assert_uint_eq(membership_digest(a), digest);
    ck_assert_uint_eq(membership_epoch(a), epoch);
    ck_assert_int_ge(ring_member_find(membership_ring(a), "n2"), 0);
    e = entry_held(membership_self(a));
    ck_assert_int_eq(membership_put_back(a, &e), RK_EINVAL);
    entry_make(&e, "zz", "r1", 4, MSG_MEMBER_NORMAL, 1, 1);
    ck_assert_int_eq(membership_put_back(a, &e), RK_ENOTFOUND);
    membership_destroy(a);
}
END_TEST

/* A list merged between defer and commit: one rebuild, the same ring as one by one. */
START_TEST(test_deferred_list)
{
    struct membership *a = table_new("a", MSG_MEMBER_NORMAL);
    struct membership *b = table_new("a", MSG_MEMBER_NORMAL);
    struct msg_member list[40];
    enum membership_merged merged;
    uint64_t before;
    bool changed;

    for (size_t i = 0; i < 40; i++) {
        char id[8];
        snprintf(id, sizeof(id), "m%02zu", i);
        entry_make(&list[i], id, i % 2 ? "r1" : "r2", 4, MSG_MEMBER_NORMAL, 1, 1);
        merge(a, &list[i], T_START, NULL);
    }
    before = membership_digest(b);
    membership_defer(b);
    for (size_t i = 0; i < 40; i++) {
        ck_assert_int_eq(membership_merge(b, &list[i], T_START, &merged, &changed), 0);
        ck_assert_int_eq(merged, MEMBERSHIP_ADDED);
        ck_assert(!changed);
    }
    ck_assert_uint_eq(membership_digest(b), before);
    ck_assert_uint_eq(ring_member_count(membership_ring(b)), 1);
    ck_assert_int_eq(membership_commit(b, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(membership_digest(b), membership_digest(a));
    ck_assert_uint_eq(membership_epoch(b), membership_epoch(a));
    ck_assert_uint_eq(ring_member_count(membership_ring(b)), 41);

    /* Nothing to rebuild: heartbeats only, or nothing at all. */
    ck_assert_int_eq(membership_commit(b, &changed), 0);
    ck_assert(!changed);
    membership_defer(b);
    for (size_t i = 0; i < 40; i++) {
        list[i].version = 2;
        ck_assert_int_eq(membership_merge(b, &list[i], T_START, &merged, &changed), 0);
        ck_assert_int_eq(merged, MEMBERSHIP_UPDATED);
    }
    ck_assert_int_eq(membership_commit(b, &changed), 0);
    ck_assert(!changed);
    /* A ring change then a heartbeat in one list: still one rebuild, at the commit. */
    {
        const struct ring *held = membership_ring(b);
        before = membership_digest(b);
        membership_defer(b);
        list[5].status = MSG_MEMBER_REMOVED;
        list[5].version = 3;
        ck_assert_int_eq(membership_merge(b, &list[5], T_START, &merged, &changed), 0);
        list[6].version = 3;
        ck_assert_int_eq(membership_merge(b, &list[6], T_START, &merged, &changed), 0);
        ck_assert(!changed);
        ck_assert_ptr_eq(membership_ring(b), held);
        ck_assert_uint_eq(membership_digest(b), before);
        ck_assert_int_eq(membership_commit(b, &changed), 0);
        ck_assert(changed);
        ck_assert_ptr_ne(membership_ring(b), held);
        ck_assert_uint_eq(ring_member_count(membership_ring(b)), 40);
        list[5].status = MSG_MEMBER_NORMAL;
        list[5].version = 4;
        merge(b, &list[5], T_START, NULL);
    }
    /* Outside a list, a merge rebuilds at once again. */
    list[0].status = MSG_MEMBER_REMOVED;
    list[0].version = 3;
    ck_assert_int_eq(membership_merge(b, &list[0], T_START, &merged, &changed), 0);
    ck_assert(changed);
    ck_assert_uint_eq(ring_member_count(membership_ring(b)), 40);
    membership_destroy(a);
    membership_destroy(b);
}
END_TEST

/* --- the ring in force and its change event ------------------------------------ */

/* Changes a listener records; more than any test makes. */
#define T_EVENTS 8

/* What one ring listener heard. */
struct heard {
    const struct membership *m;
    int *clock; /* shared by the listeners of one table: the order of calls */
    size_t calls;
    int at[T_EVENTS];
    uint64_t old_digest[T_EVENTS], new_digest[T_EVENTS];
    size_t old_members[T_EVENTS], new_members[T_EVENTS];
    bool new_in_force[T_EVENTS];
    const struct ring *kept; /* keep_first: a reference to the first old ring heard */
    bool keep_first;
};

static void heard_ring(void *ctx, const struct ring *old_ring, const struct ring *new_ring)
{
    struct heard *h = ctx;

    ck_assert_uint_lt(h->calls, T_EVENTS);
    h->at[h->calls] = (*h->clock)++;
    h->old_digest[h->calls] = ring_digest(old_ring);
    h->new_digest[h->calls] = ring_digest(new_ring);
    h->old_members[h->calls] = ring_member_count(old_ring);
    h->new_members[h->calls] = ring_member_count(new_ring);
    h->new_in_force[h->calls] = membership_ring(h->m) == new_ring;
    if (h->keep_first && h->kept == NULL) {
        h->kept = ring_ref(old_ring);
    }
    h->calls++;
}

static void count_ring(void *ctx, const struct ring *old_ring, const struct ring *new_ring)
{
    (void)old_ring;
    (void)new_ring;
    (*(size_t *)ctx)++;
}

/* Merge a normal member with 4 tokens in rack r1, generation 1 at version v. */
static void merge_normal(struct membership *m, const char *id, uint64_t v)
{
    struct msg_member e;

    entry_make(&e, id, "r1", 4, MSG_MEMBER_NORMAL, 1, v);
    merge(m, &e, T_START, NULL);
}

/*
 * Listeners hear (old, new) in the order they registered, with new already
 * in force; a heartbeat, a member outside the ring, or a rebuild that comes
 * back with the digest in force are no change.  The epoch moves where the
 * digest does not.
 */
START_TEST(test_ring_listeners)
{
    struct membership *m = table_new("n1", MSG_MEMBER_NORMAL);
    int clock = 0;
    struct heard a = {.m = m, .clock = &clock}, b = {.m = m, .clock = &clock};
    uint64_t d0 = membership_digest(m), epoch0 = membership_epoch(m), d1;
    const struct ring *r1;
    struct msg_member e;
    size_t extra = 0;

    ck_assert_int_eq(membership_ring_listen(m, heard_ring, &a), 0);
    ck_assert_int_eq(membership_ring_listen(m, heard_ring, &b), 0);
    merge_normal(m, "n2", 1);
    d1 = membership_digest(m);
    r1 = membership_ring(m);
    ck_assert_uint_eq(a.calls, 1);
    ck_assert_uint_eq(b.calls, 1);
    ck_assert_int_lt(a.at[0], b.at[0]);
    ck_assert_uint_eq(a.old_digest[0], d0);
    ck_assert_uint_eq(a.new_digest[0], d1);
    ck_assert_uint_eq(a.old_members[0], 1);
    ck_assert_uint_eq(a.new_members[0], 2);
    ck_assert(a.new_in_force[0] && b.new_in_force[0]);

    merge_normal(m, "n2", 2); /* a heartbeat */
    entry_make(&e, "n3", "r1", 4, MSG_MEMBER_JOINING, 1, 1);
    merge(m, &e, T_START, NULL);                     /* outside the ring */
    ck_assert_int_eq(membership_remove(m, "n3"), 0); /* rebuilt: the same ring */
    ck_assert_uint_eq(a.calls, 1);
    ck_assert_ptr_eq(membership_ring(m), r1);

    ck_assert_int_eq(membership_remove(m, "n2"), 0);
    ck_assert_uint_eq(a.calls, 2);
    ck_assert_uint_eq(a.old_digest[1], d1);
    ck_assert_uint_eq(a.new_members[1], 1);
    /* The ring of the start again, by its digest; the epoch has only grown. */
    ck_assert_uint_eq(a.new_digest[1], d0);
    ck_assert_uint_gt(membership_epoch(m), epoch0);

    for (size_t i = 2; i < MEMBERSHIP_LISTENERS_MAX; i++) {
        ck_assert_int_eq(membership_ring_listen(m, count_ring, &extra), 0);
    }
    ck_assert_int_eq(membership_ring_listen(m, count_ring, &extra), RK_ETOOBIG);
    merge_normal(m, "n4", 1);
    ck_assert_uint_eq(extra, MEMBERSHIP_LISTENERS_MAX - 2);
    ck_assert_uint_eq(b.calls, 3);
    membership_destroy(m);
}
END_TEST

/*
 * A request that started under a ring holds a reference and finishes under
 * that ring after three ring changes: same digest, same preference list,
 * its borrowed ids still readable (ASan checks the reads), a diff against
 * the ring now in force.  A listener's reference to an old ring keeps it
 * the same way.  The table keeps one reference, to the ring in force only.
 */
START_TEST(test_ring_holder_outlives_changes)
{
    struct membership *m = table_new("n1", MSG_MEMBER_NORMAL);
    int clock = 0;
    struct heard h = {.m = m, .clock = &clock, .keep_first = true};
    const struct ring *req;
    uint64_t req_digest, pos;
    uint32_t list[2], again[2];
    const char *ids[2];
    char copies[2][RING_NAME_MAX + 1];
    size_t n, n_again;
    struct ring_diff d;

    merge_normal(m, "n2", 1);
    merge_normal(m, "n3", 1);
    ck_assert_int_eq(membership_ring_listen(m, heard_ring, &h), 0);
    req = ring_ref(membership_ring(m));
    req_digest = ring_digest(req);
    pos = ring_key_position(req, "key", 3);
    ck_assert_int_eq(ring_preflist(req, pos, 2, list, &n), 0);
    for (size_t i = 0; i < n; i++) {
        ids[i] = ring_member_id(req, list[i]);
        snprintf(copies[i], sizeof(copies[i]), "%s", ids[i]);
    }

    merge_normal(m, "n4", 1);
    ck_assert_int_eq(membership_remove(m, "n2"), 0);
    merge_normal(m, "n5", 1);
    ck_assert_uint_eq(h.calls, 3);
    ck_assert_uint_eq(h.old_digest[0], req_digest);
    ck_assert_uint_ne(membership_digest(m), req_digest);

    ck_assert_uint_eq(ring_refs(req), 2); /* the request's and the listener's */
    /* the table's two: in force, and as the target while no change is under way */
    ck_assert_uint_eq(ring_refs(membership_ring(m)), 2);
    ck_assert_ptr_eq(membership_target(m), membership_ring(m));
    ck_assert_uint_eq(ring_digest(req), req_digest);
    ck_assert_uint_eq(ring_member_count(req), 3);
    ck_assert_int_eq(ring_preflist(req, pos, 2, again, &n_again), 0);
    ck_assert_uint_eq(n_again, n);
    for (size_t i = 0; i < n; i++) {
        ck_assert_uint_eq(again[i], list[i]);
        ck_assert_str_eq(ids[i], copies[i]);
    }
    ck_assert_int_eq(ring_diff(req, membership_ring(m), 2, &d), 0);
    ck_assert_uint_gt(d.n_moves, 0);
    ring_diff_free(&d);
    ring_unref(req);
    ck_assert_ptr_eq(h.kept, req);
    ck_assert_uint_eq(ring_refs(h.kept), 1);
    ring_unref(h.kept);
    membership_destroy(m);
}
END_TEST

/* A reference outlives the table itself; a change undone is a change back. */
START_TEST(test_ring_refs_edges)
{
    struct membership *m = table_new("n1", MSG_MEMBER_NORMAL);
    int clock = 0;
    struct heard h = {.m = m, .clock = &clock};
    const struct ring *held;
    struct msg_member before;
    uint64_t d;

    merge_normal(m, "n2", 1);
    ck_assert_int_eq(membership_ring_listen(m, heard_ring, &h), 0);
    d = membership_digest(m);
    before = entry_held(membership_find(m, "n2"));
    ck_assert_int_eq(membership_remove(m, "n2"), 0);
    ck_assert_int_eq(membership_put_back(m, &before), 0);
    ck_assert_uint_eq(h.calls, 2);
    ck_assert_uint_eq(h.new_digest[0], h.old_digest[1]);
    ck_assert_uint_eq(h.new_digest[1], d);

    held = ring_ref(membership_ring(m));
    membership_destroy(m);
    ck_assert_uint_eq(ring_refs(held), 1);
    ck_assert_uint_eq(ring_digest(held), d);
    ck_assert_uint_eq(ring_member_count(held), 2);
    ring_unref(held);
}
END_TEST

/* A listener that changes the table (here: our status) is a programming error. */
static void changing_listener(void *ctx, const struct ring *old_ring, const struct ring *new_ring)
{
    (void)old_ring;
    (void)new_ring;
    membership_set_status(ctx, MSG_MEMBER_LEAVING);
}

START_TEST(test_ring_listener_may_not_change)
{
    struct membership *m = table_new("n1", MSG_MEMBER_NORMAL);

    ck_assert_int_eq(membership_ring_listen(m, changing_listener, m), 0);
    merge_normal(m, "n2", 1); /* aborts */
}
END_TEST

static Suite *membership_suite(void)
{
    Suite *s = suite_create("membership");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"create", test_create_self_only},
        {"merge_order", test_merge_order_independent},
        {"older_ignored", test_older_and_equal_ignored},
        {"self_never_taken", test_self_never_taken},
        {"ring_rebuilds", test_ring_rebuilt_only_on_ring_changes},
        {"ring_statuses", test_ring_statuses},
        {"epoch_monotonic", test_epoch_monotonic},
        {"target_tokens", test_target_tokens},
        {"digest_equal", test_digest_equal_for_equal_rings},
        {"digest_encoding", test_digest_documented_encoding},
        {"removal", test_removal_vs_generation},
        {"reincarnate", test_reincarnate},
        {"earlier_life", test_earlier_life_epoch},
        {"put_back", test_put_back},
        {"deferred_list", test_deferred_list},
        {"own_versions", test_own_entry_versions},
        {"digests_rotate", test_digests_rotate},
        {"digests_offset_by_self", test_digests_offset_by_self},
        {"digests_news_first", test_digests_news_first},
        {"digests_news_random", test_digests_news_random},
        {"answer_rules", test_answer_rules},
        {"answer_senders_own_first", test_answer_senders_own_first},
        {"answer_own_entry", test_answer_own_entry},
        {"gossip_small", test_gossip_converges},
        {"gossip_large", test_gossip_converges_large},
        {"encode_restore", test_encode_restore},
        {"entry_strings", test_entry_strings},
        {"restore_room", test_restore_room},
        {"lookups", test_lookups},
        {"detect", test_detect_states},
        {"arrivals", test_arrivals},
        {"forgive_flapping", test_forgive_pauses_flapping},
        {"told_versions", test_told_versions_not_arrivals},
        {"told_long_ago_paused", test_told_long_ago_paused},
        {"restore_at_bound", test_restore_at_bound},
        {"table_full", test_table_full},
        {"ring_listeners", test_ring_listeners},
        {"ring_holder", test_ring_holder_outlives_changes},
        {"ring_refs", test_ring_refs_edges},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, rng_setup, NULL);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    {
        TCase *tc = tcase_create("ring_listener_may_not_change");
        tcase_set_timeout(tc, 30);
        tcase_add_test_raise_signal(tc, test_ring_listener_may_not_change, SIGABRT);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(membership_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
