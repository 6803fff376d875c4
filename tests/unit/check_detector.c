/*
 * check_detector.c - unit tests of the phi accrual failure detector
 * (src/membership/detector.c).
 *
 * Time is a fake monotonic clock: plain millisecond numbers passed in, so
 * every expectation is exact arithmetic on the formula of detector.h, and
 * no test reads or waits on a real clock.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "detector.h"

/* The heartbeat interval of the examples in detector.h. */
#define T_INTERVAL 200
/* Where the fake clock starts: any value, not 0, so "0 before the first" is not special. */
#define T_START 1000000
/* Tolerance for comparing doubles that come from a handful of operations. */
#define T_EPS 1e-9

/* Beats heartbeats every `interval` ms after *now, moving *now along. */
static void beat(struct detector *d, uint64_t *now, uint64_t interval, size_t beats)
{
    for (size_t i = 0; i < beats; i++) {
        *now += interval;
        detector_heartbeat(d, *now);
    }
}

/* Silence after which phi reaches `phi` with a mean interval of `mean` ms. */
static double silence_for(double phi, double mean)
{
    return phi / M_LOG10E * mean;
}

START_TEST(test_phi_linear_in_silence)
{
    struct detector d;

    detector_init(&d, T_INTERVAL, T_START);
    ck_assert_double_eq_tol(detector_mean(&d), T_INTERVAL, T_EPS);
    ck_assert_double_eq_tol(detector_phi(&d, T_START), 0.0, T_EPS);
    for (uint64_t t = 1; t <= 10000; t += 137) {
        double want = (double)t / T_INTERVAL * M_LOG10E;
        ck_assert_double_eq_tol(detector_phi(&d, T_START + t), want, T_EPS);
    }
    /* The rate: one mean interval of silence adds log10(e). */
    ck_assert_double_eq_tol(detector_phi(&d, T_START + 2 * T_INTERVAL) -
                                detector_phi(&d, T_START + T_INTERVAL),
                            M_LOG10E, T_EPS);
}
END_TEST

START_TEST(test_steady_heartbeats_keep_phi_low)
{
    struct detector d;
    uint64_t now = T_START;

    detector_init(&d, T_INTERVAL, now);
    for (size_t i = 0; i < 1000; i++) {
        /* Just before the next heartbeat is due, phi is below log10(e) < 1. */
        ck_assert_double_lt(detector_phi(&d, now + T_INTERVAL - 1), M_LOG10E);
        ck_assert_int_eq(detector_state(&d, now + T_INTERVAL - 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                                        DETECTOR_DOWN_PHI_DEFAULT),
                         DETECTOR_ALIVE);
        beat(&d, &now, T_INTERVAL, 1);
    }
    ck_assert_double_eq_tol(detector_mean(&d), T_INTERVAL, T_EPS);
}
END_TEST

START_TEST(test_thresholds_at_derived_times)
{
    struct detector d;
    uint64_t now = T_START;
    double suspect_at, down_at;

    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, T_INTERVAL, 50);
    /* detector.h: 2.3 s and 3.7 s for I = 200 ms. */
    suspect_at = silence_for(DETECTOR_SUSPECT_PHI_DEFAULT, T_INTERVAL);
    down_at = silence_for(DETECTOR_DOWN_PHI_DEFAULT, T_INTERVAL);
    ck_assert_double_eq_tol(suspect_at, 2302.585, 0.001);
    ck_assert_double_eq_tol(down_at, 3684.136, 0.001);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)suspect_at - 1,
                                    DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_ALIVE);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)suspect_at + 1,
                                    DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_SUSPECT);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)down_at - 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                                    DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_SUSPECT);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)down_at + 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                                    DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_DOWN);
}
END_TEST

START_TEST(test_bursts_do_not_shorten_detection)
{
    struct detector d;
    uint64_t now = T_START;
    double down_at = silence_for(DETECTOR_DOWN_PHI_DEFAULT, T_INTERVAL);

    /* Each beat arrives three times, 5 ms apart (PING, PONG, gossip): mean ~70 ms. */
    detector_init(&d, T_INTERVAL, now);
    for (int i = 0; i < 50; i++) {
        beat(&d, &now, T_INTERVAL - 10, 1);
        beat(&d, &now, 5, 2);
    }
    ck_assert_double_lt(detector_mean(&d), T_INTERVAL / 2.0);
    /* Detection still follows the interval the member beats at, not the bursts. */
    ck_assert_int_eq(
        detector_state(&d, now + 1500, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
        DETECTOR_ALIVE);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)down_at - 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                                    DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_SUSPECT);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)down_at + 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                                    DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_DOWN);
    /* A member slower than expected raises the scale above the floor. */
    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, 2 * T_INTERVAL, 50);
    ck_assert_int_eq(detector_state(&d, now + (uint64_t)down_at + 1, DETECTOR_SUSPECT_PHI_DEFAULT,
                                    DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_ALIVE);
}
END_TEST

START_TEST(test_comeback_alive_at_next_heartbeat)
{
    struct detector d;
    uint64_t now = T_START;

    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, T_INTERVAL, 20);
    now += 30000;
    ck_assert_int_eq(
        detector_state(&d, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
        DETECTOR_DOWN);
    detector_heartbeat(&d, now);
    ck_assert_int_eq(
        detector_state(&d, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT),
        DETECTOR_ALIVE);
    ck_assert_int_eq(detector_state(&d, now + T_INTERVAL, DETECTOR_SUSPECT_PHI_DEFAULT,
                                    DETECTOR_DOWN_PHI_DEFAULT),
                     DETECTOR_ALIVE);
}
END_TEST

START_TEST(test_pause_clamped)
{
    const uint64_t clamp = (uint64_t)DETECTOR_INTERVAL_MAX_FACTOR * T_INTERVAL;
    struct detector d;
    uint64_t now = T_START;

    /* A pause as the very first interval: the mean is the clamp, not 60 s. */
    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, 60000, 1);
    ck_assert_double_eq_tol(detector_mean(&d), (double)clamp, T_EPS);

    /* After steady beats, one pause counts as the clamp. */
    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, T_INTERVAL, 50);
    beat(&d, &now, 60000, 1);
    ck_assert_double_eq_tol(detector_mean(&d), (50.0 * T_INTERVAL + (double)clamp) / 51.0, T_EPS);
    ck_assert_double_le(detector_mean(&d), (double)clamp);
}
END_TEST

/*
 * A slot holds 16 bits: above a gossip-interval of 6553 ms the factor's
 * clamp passes 65535 ms, and an interval above that counts as 65535 ms.
 * Intervals up to it count exactly, so phi is what the formula gives.
 */
START_TEST(test_slot_clamp)
{
    const uint64_t slow = 60000; /* the largest gossip-interval the settings allow */
    struct detector d;
    uint64_t now = T_START;

    detector_init(&d, slow, now);
    beat(&d, &now, DETECTOR_INTERVAL_SLOT_MAX, 1); /* the largest a slot holds: exact */
    beat(&d, &now, 61000, 1);
    ck_assert_double_eq_tol(detector_mean(&d), (DETECTOR_INTERVAL_SLOT_MAX + 61000.0) / 2.0, T_EPS);
    beat(&d, &now, 600000, 1); /* ten intervals: the factor allows it, the slot does not */
    ck_assert_uint_eq(d.intervals[2], DETECTOR_INTERVAL_SLOT_MAX);
    ck_assert_uint_eq(d.sum, 2u * DETECTOR_INTERVAL_SLOT_MAX + 61000u);
    ck_assert_double_eq_tol(
        detector_phi(&d, now + 100000),
        100000.0 / ((2.0 * DETECTOR_INTERVAL_SLOT_MAX + 61000.0) / 3.0) * M_LOG10E, T_EPS);

    /* A full window of the largest slots: the 32-bit sum holds it. */
    detector_init(&d, slow, now);
    beat(&d, &now, 100000, DETECTOR_WINDOW + 7);
    ck_assert_uint_eq(d.n, DETECTOR_WINDOW);
    ck_assert_uint_eq(d.sum, (uint32_t)DETECTOR_WINDOW * DETECTOR_INTERVAL_SLOT_MAX);
    ck_assert_double_eq_tol(detector_mean(&d), DETECTOR_INTERVAL_SLOT_MAX, T_EPS);

    /* At an interval of 6553 ms the factor binds first (65530 ms), as before. */
    detector_init(&d, 6553, now);
    beat(&d, &now, 70000, 1);
    ck_assert_uint_eq(d.sum, 65530u);
}
END_TEST

/* The observer's own pause is forgiven: no suspicion for it, and no interval counts it. */
START_TEST(test_local_pause_forgiven)
{
    struct detector d;
    uint64_t now = T_START;

    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, T_INTERVAL, 50);
    now += 8000; /* the observer was stopped for 8 s */
    ck_assert_int_eq(detector_state(&d, now, 5.0, 8.0), DETECTOR_DOWN);
    detector_forgive(&d, 8000 - T_INTERVAL, now);
    ck_assert_double_le(detector_phi(&d, now), 1.0);
    ck_assert_int_eq(detector_state(&d, now, 5.0, 8.0), DETECTOR_ALIVE);
    beat(&d, &now, T_INTERVAL, 1); /* the next beat's interval leaves the pause out */
    ck_assert_double_eq_tol(detector_mean(&d),
                            (double)T_INTERVAL * 50.0 / 51.0 + 2.0 * T_INTERVAL / 51.0, T_EPS);
    /* never past now: a forgiven member silent from then on is down as if heard now */
    detector_forgive(&d, 1000000, now);
    ck_assert_uint_eq(d.last_ms, now);
    ck_assert_int_eq(
        detector_state(&d, now + (uint64_t)silence_for(8.0, detector_mean(&d)) + 1, 5.0, 8.0),
        DETECTOR_DOWN);
}
END_TEST

START_TEST(test_window_rolls_over)
{
    struct detector d;
    uint64_t now = T_START;

    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, 100, DETECTOR_WINDOW);
    ck_assert_uint_eq(d.n, DETECTOR_WINDOW);
    ck_assert_double_eq_tol(detector_mean(&d), 100.0, T_EPS);
    /* Half the window replaced: half 100 ms, half 300 ms. */
    beat(&d, &now, 300, DETECTOR_WINDOW / 2);
    ck_assert_uint_eq(d.n, DETECTOR_WINDOW);
    ck_assert_double_eq_tol(detector_mean(&d), 200.0, T_EPS);
    /* The whole window replaced: the old intervals are forgotten. */
    beat(&d, &now, 300, DETECTOR_WINDOW / 2);
    ck_assert_double_eq_tol(detector_mean(&d), 300.0, T_EPS);
    ck_assert_uint_eq(d.sum, 300u * DETECTOR_WINDOW);
}
END_TEST

START_TEST(test_out_of_order_arrivals_ignored)
{
    struct detector d;
    uint64_t now = T_START;
    struct detector before;

    detector_init(&d, T_INTERVAL, now);
    beat(&d, &now, T_INTERVAL, 5);
    before = d;
    detector_heartbeat(&d, now - 50);
    ck_assert_uint_eq(d.last_ms, before.last_ms);
    ck_assert_uint_eq(d.n, before.n);
    ck_assert_uint_eq(d.sum, before.sum);
    /* The same arrival reported twice adds no 0 ms interval. */
    detector_heartbeat(&d, now);
    ck_assert_uint_eq(d.n, before.n);
    ck_assert_double_eq_tol(detector_mean(&d), T_INTERVAL, T_EPS);
}
END_TEST

START_TEST(test_state_names)
{
    ck_assert_str_eq(detector_state_name(DETECTOR_ALIVE), "alive");
    ck_assert_str_eq(detector_state_name(DETECTOR_SUSPECT), "suspect");
    ck_assert_str_eq(detector_state_name(DETECTOR_DOWN), "down");
    ck_assert_str_eq(detector_state_name((enum detector_state)42), "unknown");
}
END_TEST

static Suite *detector_suite(void)
{
    Suite *s = suite_create("detector");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"phi_linear", test_phi_linear_in_silence},
        {"steady_low", test_steady_heartbeats_keep_phi_low},
        {"thresholds", test_thresholds_at_derived_times},
        {"bursts", test_bursts_do_not_shorten_detection},
        {"comeback", test_comeback_alive_at_next_heartbeat},
        {"pause_clamped", test_pause_clamped},
        {"slot_clamp", test_slot_clamp},
        {"local_pause", test_local_pause_forgiven},
        {"window_rolls", test_window_rolls_over},
        {"out_of_order", test_out_of_order_arrivals_ignored},
        {"state_names", test_state_names},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(detector_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
