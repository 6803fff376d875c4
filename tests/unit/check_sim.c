/*
 * check_sim.c - unit tests of the placement simulator (src/placement/sim.c).
 *
 * The tests assert properties the figures must have, derived independently
 * of the code that computes them: exact identities of the ring (a join moves
 * exactly what the joiner ends up owning), textbook expectations of the
 * sampled schemes (hash % N moves N/(N+1) of the keys on a join), with a
 * tolerance of five binomial standard deviations of the sample, and the
 * rack bound, which no real placement can beat.  Every run uses fixed
 * seeds, so a test that passes once passes always; the tolerance only says
 * how far from the expectation a correct implementation may land.
 */
#include <check.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "ring.h"
#include "sim.h"

/* Keys for the sampled tests: enough for 5-sigma bounds of about +-0.01. */
#define TEST_KEYS 20000
/* Binomial standard deviations allowed between a sampled figure and its expectation. */
#define TEST_SIGMAS 5.0

static struct sim_config test_config(uint32_t nodes, uint32_t racks, unsigned rf)
{
    struct sim_config cfg;

    sim_config_default(&cfg);
    cfg.nodes = nodes;
    cfg.racks = racks;
    cfg.rf = rf;
    cfg.keys = TEST_KEYS;
    return cfg;
}

/* Allowed distance of a sampled fraction from its expectation p over m keys. */
static double test_tolerance(double p, uint32_t m)
{
    return TEST_SIGMAS * sqrt(p * (1 - p) / m);
}

static void figures_of(const struct sim_config *cfg, enum sim_scheme s, uint32_t tokens,
                       struct sim_figures *f)
{
    ck_assert_int_eq(sim_figures_compute(cfg, cfg->seed, s, tokens, f), 0);
}

/* Guava's golden values, which every jump hash port reproduces. */
START_TEST(test_jump_golden)
{
    static const uint32_t golden100[] = {0,  55, 62, 8,  45, 59, 86, 97, 82, 59,
                                         73, 37, 17, 56, 86, 21, 90, 37, 38, 83};

    for (uint64_t i = 0; i < 20; i++) {
        ck_assert_uint_eq(sim_jump_hash(i, 100), golden100[i]);
    }
    ck_assert_uint_eq(sim_jump_hash(10863919174838991ull, 11), 6);
    ck_assert_uint_eq(sim_jump_hash(2016238256797177309ull, 11), 3);
    ck_assert_uint_eq(sim_jump_hash(1673758223894951030ull, 11), 5);
    ck_assert_uint_eq(sim_jump_hash(2, 100001), 80343);
    ck_assert_uint_eq(sim_jump_hash(2201, 100001), 22152);
    ck_assert_uint_eq(sim_jump_hash(2202, 100001), 15018);
}
END_TEST

/* Growing from n to n+1 buckets, a key stays or moves to the new bucket. */
START_TEST(test_jump_monotone)
{
    uint64_t key = 0x9e3779b97f4a7c15ull;

    for (int i = 0; i < 2000; i++) {
        key = ring_hash(ring_default_seed, &key, sizeof(key));
        for (uint32_t n = 1; n < 40; n++) {
            uint32_t a = sim_jump_hash(key, n), b = sim_jump_hash(key, n + 1);
            ck_assert_uint_lt(a, n);
            ck_assert(b == a || b == n);
        }
    }
}
END_TEST

START_TEST(test_config_check)
{
    struct sim_config cfg;
    const char *what = "unset";

    sim_config_default(&cfg);
    ck_assert_int_eq(sim_config_check(&cfg, &what), 0);
    ck_assert_ptr_null(what);
    cfg.nodes = 0;
    ck_assert_int_eq(sim_config_check(&cfg, &what), RK_ERANGE);
    ck_assert_str_eq(what, "nodes");
    cfg.nodes = SIM_NODES_MAX + 1;
    ck_assert_int_eq(sim_config_check(&cfg, &what), RK_ERANGE);
    sim_config_default(&cfg);
    cfg.racks = cfg.nodes + 1;
    ck_assert_int_eq(sim_config_check(&cfg, &what), RK_ERANGE);
    ck_assert_str_eq(what, "racks");
    sim_config_default(&cfg);
    cfg.rf = RING_RF_MAX + 1;
    ck_assert_int_eq(sim_config_check(&cfg, &what), RK_ERANGE);
    ck_assert_str_eq(what, "rf");
    sim_config_default(&cfg);
    cfg.seeds = 0;
    ck_assert_int_eq(sim_config_check(&cfg, &what), RK_ERANGE);
    ck_assert_str_eq(what, "seeds");
    sim_config_default(&cfg);
    cfg.keys = SIM_KEYS_MIN - 1;
    ck_assert_int_eq(sim_config_check(&cfg, &what), RK_ERANGE);
    ck_assert_str_eq(what, "keys");
}
END_TEST

START_TEST(test_compute_errors)
{
    struct sim_config cfg = test_config(10, 3, 3);
    struct sim_figures f;

    ck_assert_int_eq(sim_figures_compute(&cfg, cfg.seed, SIM_RING, 0, &f), RK_ERANGE);
    ck_assert_int_eq(sim_figures_compute(&cfg, cfg.seed, SIM_BOUNDED, RING_TOKENS_MAX + 1, &f),
                     RK_ERANGE);
    ck_assert_int_eq(sim_figures_compute(&cfg, cfg.seed, SIM_SCHEME_COUNT, 1, &f), RK_EINVAL);
    cfg.rf = 0;
    ck_assert_int_eq(sim_figures_compute(&cfg, cfg.seed, SIM_MOD, 0, &f), RK_ERANGE);
}
END_TEST

START_TEST(test_seed_derive)
{
    uint8_t s0[RING_SEED_LEN], s1[RING_SEED_LEN], s2[RING_SEED_LEN], again[RING_SEED_LEN];

    sim_seed_derive(ring_default_seed, 0, s0);
    sim_seed_derive(ring_default_seed, 1, s1);
    sim_seed_derive(ring_default_seed, 2, s2);
    sim_seed_derive(ring_default_seed, 1, again);
    ck_assert_mem_eq(s0, ring_default_seed, RING_SEED_LEN);
    ck_assert_mem_eq(s1, again, RING_SEED_LEN);
    ck_assert(memcmp(s1, s0, RING_SEED_LEN) != 0);
    ck_assert(memcmp(s1, s2, RING_SEED_LEN) != 0);
}
END_TEST

START_TEST(test_members_round_robin)
{
    struct sim_members ms;

    ck_assert_int_eq(sim_members_init(&ms, 10, 3, 7), 0);
    ck_assert_uint_eq(ms.n, 11);
    ck_assert_str_eq(ms.m[0].id, "node-1");
    ck_assert_str_eq(ms.m[0].rack, "rack-1");
    ck_assert_str_eq(ms.m[4].rack, "rack-2");
    ck_assert_str_eq(ms.m[9].id, "node-10");
    ck_assert_str_eq(ms.m[9].rack, "rack-1");
    ck_assert_str_eq(ms.m[10].id, "node-11");
    ck_assert_str_eq(ms.m[10].rack, "rack-2");
    ck_assert_uint_eq(ms.m[10].tokens, 7);
    sim_members_deinit(&ms);
    ck_assert_int_eq(sim_members_init(&ms, 3, 4, 1), RK_ERANGE);
}
END_TEST

/*
 * One node owns everything, so every balance figure is exactly 1 (0 for the
 * stddev), and with rf >= 2 the joiner must receive a copy of every key:
 * one circle of copies against two circles of replicas afterwards, exactly
 * 1/2, whatever the scheme.  There is nothing to remove.
 */
START_TEST(test_one_node)
{
    struct sim_config cfg = test_config(1, 1, 3);
    struct sim_row rows[] = {{.scheme = SIM_RING, .tokens = 4},
                             {.scheme = SIM_BOUNDED, .tokens = 4},
                             {.scheme = SIM_MOD},
                             {.scheme = SIM_RENDEZVOUS},
                             {.scheme = SIM_JUMP}};

    cfg.keys = SIM_KEYS_MIN;
    cfg.seeds = 2;
    ck_assert_int_eq(sim_rows_compute(&cfg, rows, 5), 0);
    for (size_t i = 0; i < 5; i++) {
        const struct sim_figures *f = &rows[i].mean;
        ck_assert_msg(f->max_mean == 1.0 && f->min_mean == 1.0 && f->sd_mean == 0.0,
                      "%s: balance of one node is not exactly 1", sim_scheme_name(rows[i].scheme));
        ck_assert(f->replica_max_mean == 1.0);
        ck_assert_msg(f->join_copies == 0.5, "%s: join copies %.17g, not 1/2",
                      sim_scheme_name(rows[i].scheme), f->join_copies);
        ck_assert(f->join_moved > 0 && f->join_moved < 1);
        ck_assert(!rows[i].removal);
        ck_assert(f->remove_moved == 0 && f->remove_copies == 0);
    }
    ck_assert(sim_replica_bound(1, 1, 3) == 1.0);
}
END_TEST

/*
 * With N <= rf every node holds every key, so a removal leaves each
 * remaining node with replicas it already had: nothing is streamed, in
 * every scheme.  A join to N + 1 <= rf streams a full copy to the joiner:
 * one circle against N + 1 circles of replicas afterwards.
 */
START_TEST(test_within_rf_removal_streams_nothing)
{
    struct sim_config cfg = test_config(3, 3, 4);

    for (int s = 0; s < SIM_SCHEME_COUNT; s++) {
        struct sim_figures f;
        figures_of(&cfg, (enum sim_scheme)s, 8, &f);
        ck_assert_msg(f.remove_copies == 0.0, "%s: removal copies %.4f",
                      sim_scheme_name((enum sim_scheme)s), f.remove_copies);
        ck_assert(fabs(f.join_copies - 0.25) < 1e-12);
        ck_assert(f.replica_max_mean == 1.0);
    }
}
END_TEST

/* Owner index of id in r; fails the test when absent. */
static uint32_t member_of(const struct ring *r, const char *id)
{
    int m = ring_member_find(r, id);
    ck_assert_int_ge(m, 0);
    return (uint32_t)m;
}

/*
 * With rf 1 an arc changes owner on a join exactly when the joiner takes it,
 * so ring_diff's `moved` equals the joiner's ownership to the last position,
 * and on a removal the removed node's.  The simulator's figures are those
 * lengths as fractions, bit for bit.
 */
START_TEST(test_ring_moved_is_ownership)
{
    struct sim_config cfg = test_config(10, 3, 3);
    static const uint32_t tokens[] = {1, 16, 256};

    for (size_t t = 0; t < 3; t++) {
        struct sim_members ms;
        struct ring *base, *join, *removal;
        struct ring_diff dj, dr;
        ring_len own_join[11], own_base[10];
        struct sim_figures f;

        ck_assert_int_eq(sim_members_init(&ms, 10, 3, tokens[t]), 0);
        ck_assert_int_eq(ring_create(&base, cfg.seed, ms.m, 10), 0);
        ck_assert_int_eq(ring_create(&join, cfg.seed, ms.m, 11), 0);
        ck_assert_int_eq(ring_create(&removal, cfg.seed, ms.m, 9), 0);
        ck_assert_int_eq(ring_ownership(join, 1, own_join), 0);
        ck_assert_int_eq(ring_ownership(base, 1, own_base), 0);
        ck_assert_int_eq(ring_diff(base, join, 1, &dj), 0);
        ck_assert_int_eq(ring_diff(base, removal, 1, &dr), 0);
        ck_assert(dj.moved == own_join[member_of(join, "node-11")]);
        ck_assert(dr.moved == own_base[member_of(base, "node-10")]);
        figures_of(&cfg, SIM_RING, tokens[t], &f);
        ck_assert(f.join_moved == ring_len_fraction(dj.moved));
        ck_assert(f.remove_moved == ring_len_fraction(dr.moved));
        ring_diff_free(&dj);
        ring_diff_free(&dr);
        ring_unref(base);
        ring_unref(join);
        ring_unref(removal);
        sim_members_deinit(&ms);
    }
}
END_TEST

/*
 * The ownership the figures come from is exact: shares sum to the whole
 * circle (rf 1) and to rf circles (replicas), so the mean share is 1/N and
 * max/mean >= 1 >= min/mean.
 */
START_TEST(test_ring_ownership_sums)
{
    static const uint32_t nodes[] = {1, 2, 7, 40};

    for (size_t i = 0; i < 4; i++) {
        struct sim_config cfg = test_config(nodes[i], nodes[i] < 3 ? nodes[i] : 3, 3);
        struct sim_members ms;
        struct ring *r;
        ring_len own[40], sum = 0, sum_rf = 0;
        struct sim_figures f;

        ck_assert_int_eq(sim_members_init(&ms, cfg.nodes, cfg.racks, 16), 0);
        ck_assert_int_eq(ring_create(&r, cfg.seed, ms.m, cfg.nodes), 0);
        ck_assert_int_eq(ring_ownership(r, 1, own), 0);
        for (size_t m = 0; m < cfg.nodes; m++) {
            sum += own[m];
        }
        ck_assert_int_eq(ring_ownership(r, cfg.rf, own), 0);
        for (size_t m = 0; m < cfg.nodes; m++) {
            sum_rf += own[m];
        }
        ck_assert(sum == RING_CIRCLE);
        ck_assert(sum_rf == RING_CIRCLE * (cfg.nodes < 3 ? cfg.nodes : 3));
        figures_of(&cfg, SIM_RING, 16, &f);
        ck_assert(f.max_mean >= 1.0 && f.min_mean <= 1.0 && f.replica_max_mean >= 1.0);
        ring_unref(r);
        sim_members_deinit(&ms);
    }
}
END_TEST

/* More tokens, better balance: on the fixed seeds, from 1 to 256 tokens at N = 10. */
START_TEST(test_ring_tokens_improve_balance)
{
    struct sim_config cfg = test_config(10, 3, 3);
    struct sim_row rows[5];
    static const uint32_t tokens[] = {1, 4, 16, 64, 256};

    for (size_t i = 0; i < 5; i++) {
        rows[i] = (struct sim_row){.scheme = SIM_RING, .tokens = tokens[i]};
    }
    ck_assert_int_eq(sim_rows_compute(&cfg, rows, 5), 0);
    for (size_t i = 1; i < 5; i++) {
        ck_assert_msg(rows[i].mean.max_mean < rows[i - 1].mean.max_mean,
                      "max/mean %u tokens %.4f >= %u tokens %.4f", tokens[i], rows[i].mean.max_mean,
                      tokens[i - 1], rows[i - 1].mean.max_mean);
        ck_assert(rows[i].mean.sd_mean < rows[i - 1].mean.sd_mean);
        ck_assert(rows[i].max_mean_worst >= rows[i].mean.max_mean);
    }
}
END_TEST

/* The row is the mean of the per-seed figures, and worst their maximum. */
START_TEST(test_rows_mean_and_worst)
{
    struct sim_config cfg = test_config(12, 4, 2);
    struct sim_row row = {.scheme = SIM_RING, .tokens = 8};
    uint8_t seed[RING_SEED_LEN];
    double sum = 0, worst = 0, moved = 0;

    cfg.seeds = 4;
    ck_assert_int_eq(sim_rows_compute(&cfg, &row, 1), 0);
    for (uint32_t j = 0; j < cfg.seeds; j++) {
        struct sim_figures f;
        sim_seed_derive(cfg.seed, j, seed);
        ck_assert_int_eq(sim_figures_compute(&cfg, seed, SIM_RING, 8, &f), 0);
        sum += f.max_mean;
        moved += f.join_moved;
        worst = f.max_mean > worst ? f.max_mean : worst;
    }
    ck_assert(fabs(row.mean.max_mean - sum / cfg.seeds) < 1e-12);
    ck_assert(fabs(row.mean.join_moved - moved / cfg.seeds) < 1e-12);
    ck_assert(row.max_mean_worst == worst);
    ck_assert(row.removal);
}
END_TEST

/* Same configuration, same figures; another base seed, other figures. */
START_TEST(test_deterministic)
{
    struct sim_config cfg = test_config(10, 3, 3);
    struct sim_figures a, b, c;

    figures_of(&cfg, SIM_RENDEZVOUS, 0, &a);
    figures_of(&cfg, SIM_RENDEZVOUS, 0, &b);
    ck_assert_mem_eq(&a, &b, sizeof(a));
    figures_of(&cfg, SIM_RING, 64, &a);
    figures_of(&cfg, SIM_RING, 64, &b);
    ck_assert_mem_eq(&a, &b, sizeof(a));
    cfg.seed[0] ^= 1;
    figures_of(&cfg, SIM_RING, 64, &c);
    ck_assert(c.max_mean != a.max_mean);
}
END_TEST

/*
 * hash % N: h % N == h % (N+1) exactly when h mod N(N+1) < N, so a join
 * moves N/(N+1) of the keys; a removal, likewise, (N-1)/N.
 */
START_TEST(test_mod_moves_almost_everything)
{
    struct sim_config cfg = test_config(10, 3, 3);
    struct sim_figures f;
    double pj = 10.0 / 11, pr = 9.0 / 10;

    figures_of(&cfg, SIM_MOD, 0, &f);
    ck_assert_msg(fabs(f.join_moved - pj) <= test_tolerance(pj, cfg.keys), "join moved %.4f",
                  f.join_moved);
    ck_assert_msg(fabs(f.remove_moved - pr) <= test_tolerance(pr, cfg.keys), "removal moved %.4f",
                  f.remove_moved);
}
END_TEST

/*
 * Rendezvous and jump move only what they must: on a join a key moves iff
 * the joiner wins it, probability 1/(N+1); on a removal iff the removed node
 * owned it, 1/N.  For rendezvous a join adds exactly one copy to a key iff
 * the joiner enters its top k, probability k/(N+1): copies/(k M) ~ 1/(N+1).
 */
START_TEST(test_consistent_schemes_move_fair_share)
{
    static const enum sim_scheme schemes[] = {SIM_RENDEZVOUS, SIM_JUMP};
    static const uint32_t nodes[] = {5, 20};

    for (size_t s = 0; s < 2; s++) {
        for (size_t i = 0; i < 2; i++) {
            struct sim_config cfg = test_config(nodes[i], 3, 3);
            double pj = 1.0 / (nodes[i] + 1), pr = 1.0 / nodes[i];
            struct sim_figures f;
            figures_of(&cfg, schemes[s], 0, &f);
            ck_assert_msg(fabs(f.join_moved - pj) <= test_tolerance(pj, cfg.keys),
                          "%s N=%u join moved %.4f", sim_scheme_name(schemes[s]), nodes[i],
                          f.join_moved);
            ck_assert(fabs(f.remove_moved - pr) <= test_tolerance(pr, cfg.keys));
            ck_assert(schemes[s] != SIM_RENDEZVOUS ||
                      fabs(f.join_copies - pj) <= test_tolerance(3 * pj, cfg.keys));
        }
    }
}
END_TEST

/*
 * Bounded loads: no node takes more than ceil(c M / N) keys, so max/mean is
 * at most c + N/M; replicas likewise with k M.  With N >= 5 (k - 1) a key
 * always finds k nodes with room (with fewer than k the full nodes would
 * hold more than k M replicas), so the replica bound holds too.
 */
START_TEST(test_bounded_respects_c)
{
    static const uint32_t tokens[] = {1, 16};

    for (size_t t = 0; t < 2; t++) {
        struct sim_config cfg = test_config(10, 3, 3);
        struct sim_figures f;
        figures_of(&cfg, SIM_BOUNDED, tokens[t], &f);
        ck_assert_msg(f.max_mean <= SIM_BOUNDED_C + 10.0 / cfg.keys, "max/mean %.4f", f.max_mean);
        ck_assert(f.replica_max_mean <= SIM_BOUNDED_C + 10.0 / (3.0 * cfg.keys));
    }
}
END_TEST

/*
 * The rack bound by hand: 10 nodes in racks of 4, 3, 3 with rf 3 give every
 * key one replica per rack, 1/3 of the circle per node of a 3-node rack
 * against a mean of 3/10: 10/9.  Even racks: 1.  Racks 2, 1, 1 at rf 3: the
 * lone nodes hold everything, against a mean of 3/4: 4/3.  Fewer racks
 * than replicas (5 nodes in racks 2, 2, 1, rf 4): every rack is used, so the
 * lone node again holds everything, mean 4/5: 5/4.
 */
START_TEST(test_replica_bound_by_hand)
{
    ck_assert(fabs(sim_replica_bound(10, 3, 3) - 10.0 / 9) < 1e-9);
    ck_assert(fabs(sim_replica_bound(9, 3, 3) - 1.0) < 1e-9);
    ck_assert(fabs(sim_replica_bound(10, 4, 3) - 1.0) < 1e-9);
    ck_assert(fabs(sim_replica_bound(4, 3, 3) - 4.0 / 3) < 1e-9);
    ck_assert(fabs(sim_replica_bound(5, 3, 4) - 5.0 / 4) < 1e-9);
    ck_assert(fabs(sim_replica_bound(10, 1, 3) - 1.0) < 1e-9);
    ck_assert(fabs(sim_replica_share(11, 3, 3, 10) - 0.25) < 1e-9);
    ck_assert(fabs(sim_replica_share(11, 3, 3, 2) - 1.0 / 3) < 1e-9);
}
END_TEST

/* No placement beats the bound, and with many tokens the ring comes near it. */
START_TEST(test_ring_respects_replica_bound)
{
    static const uint32_t shapes[][3] = {{10, 3, 3}, {7, 3, 3}, {5, 3, 4}, {12, 5, 3}};

    for (size_t i = 0; i < 4; i++) {
        struct sim_config cfg = test_config(shapes[i][0], shapes[i][1], shapes[i][2]);
        double bound = sim_replica_bound(cfg.nodes, cfg.racks, cfg.rf);
        struct sim_figures f;
        figures_of(&cfg, SIM_RING, 1024, &f);
        ck_assert_msg(f.replica_max_mean >= bound - 1e-9, "%u/%u/%u: %.4f below bound %.4f",
                      shapes[i][0], shapes[i][1], shapes[i][2], f.replica_max_mean, bound);
        ck_assert(f.replica_max_mean <= bound + 0.15);
    }
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"jump_golden", test_jump_golden},
        {"jump_monotone", test_jump_monotone},
        {"settings_check", test_config_check},
        {"compute_errors", test_compute_errors},
        {"seed_derive", test_seed_derive},
        {"members_round_robin", test_members_round_robin},
        {"one_node", test_one_node},
        {"within_rf_removal_streams_nothing", test_within_rf_removal_streams_nothing},
        {"ring_moved_is_ownership", test_ring_moved_is_ownership},
        {"ring_ownership_sums", test_ring_ownership_sums},
        {"ring_tokens_improve_balance", test_ring_tokens_improve_balance},
        {"rows_mean_and_worst", test_rows_mean_and_worst},
        {"deterministic", test_deterministic},
        {"mod_moves_almost_everything", test_mod_moves_almost_everything},
        {"consistent_move_fair_share", test_consistent_schemes_move_fair_share},
        {"bounded_respects_c", test_bounded_respects_c},
        {"replica_bound_by_hand", test_replica_bound_by_hand},
        {"ring_respects_replica_bound", test_ring_respects_replica_bound},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (sodium_init() < 0) {
        fprintf(stderr, "check_sim: libsodium failed to initialise\n");
        return EXIT_FAILURE;
    }
    sr = srunner_create(sim_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
