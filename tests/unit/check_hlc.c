/*
 * check_hlc.c - unit tests of the hybrid logical clock (storage/hlc.c).
 *
 * The clock takes wall time as an argument, so these tests play the wall
 * clock by hand: stalls, backward and forward jumps of the kind faketime or
 * an NTP step produces, and remote timestamps from peers ahead and behind.
 * Nothing reads the real time.  The random walks use a xorshift generator
 * whose seed is printed (replay with RINGKV_TEST_SEED=<seed>).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "hlc.h"
#include "test_rng.h"

/* Steps per random walk. */
#define STEPS 20000
/* A wall time in 2023, in milliseconds since the epoch. */
#define WALL_MS 1700000000000ull

static void rng_setup(void)
{
    rng_seed("check_hlc");
}

/* A clock whose last timestamp is t. */
static struct hlc clock_at(uint64_t t)
{
    struct hlc c;

    hlc_init(&c);
    c.last = t;
    return c;
}

START_TEST(test_first_timestamp_is_wall)
{
    struct hlc c;

    hlc_init(&c);
    ck_assert_uint_eq(hlc_now(&c, WALL_MS), hlc_make(WALL_MS, 0));
    ck_assert_uint_eq(hlc_physical(c.last), WALL_MS);
    ck_assert_uint_eq(hlc_logical(c.last), 0);
}
END_TEST

/* A wall clock that stops: the physical part stays, the counter counts. */
START_TEST(test_wall_stalls)
{
    struct hlc c;
    uint64_t prev = 0;

    hlc_init(&c);
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t t = hlc_now(&c, WALL_MS);
        ck_assert_uint_gt(t, prev);
        ck_assert_uint_eq(t, hlc_make(WALL_MS, i));
        prev = t;
    }
}
END_TEST

/* A step back of the wall (NTP, faketime) never makes time go backwards. */
START_TEST(test_wall_goes_backwards)
{
    struct hlc c;
    uint64_t t1, t2, t3;

    hlc_init(&c);
    t1 = hlc_now(&c, WALL_MS);
    t2 = hlc_now(&c, WALL_MS - 3600 * 1000);
    ck_assert_uint_gt(t2, t1);
    ck_assert_uint_eq(t2, hlc_make(WALL_MS, 1));
    t3 = hlc_now(&c, WALL_MS - 1);
    ck_assert_uint_eq(t3, hlc_make(WALL_MS, 2));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 1), hlc_make(WALL_MS + 1, 0));
}
END_TEST

/* A jump forward moves the physical part with it and restarts the counter. */
START_TEST(test_wall_jumps_forward)
{
    struct hlc c;

    hlc_init(&c);
    hlc_now(&c, WALL_MS);
    hlc_now(&c, WALL_MS);
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 86400000), hlc_make(WALL_MS + 86400000, 0));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 86400000), hlc_make(WALL_MS + 86400000, 1));
}
END_TEST

/*
 * A wall that stalls, steps back by up to an hour and forward by up to a
 * day, at random: timestamps strictly increase and are never behind the
 * wall.
 */
START_TEST(test_wall_random_walk)
{
    struct hlc c;
    uint64_t wall = WALL_MS, prev = 0;

    hlc_init(&c);
    for (int i = 0; i < STEPS; i++) {
        uint32_t move = rng_below(4);
        uint64_t t;
        if (move == 1) {
            wall -= rng_below(3600 * 1000);
        } else if (move == 2) {
            wall += rng_below(86400 * 1000);
        }
        t = hlc_now(&c, wall);
        ck_assert_uint_gt(t, prev);
        ck_assert_uint_ge(hlc_physical(t), wall);
        prev = t;
    }
}
END_TEST

/* 65536 timestamps fill one millisecond; the next one is in the next millisecond. */
START_TEST(test_logical_overflow)
{
    struct hlc c;
    uint64_t t = 0;

    hlc_init(&c);
    for (uint64_t i = 0; i <= HLC_LOGICAL_MAX; i++) {
        t = hlc_now(&c, WALL_MS);
    }
    ck_assert_uint_eq(t, hlc_make(WALL_MS, HLC_LOGICAL_MAX));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS), hlc_make(WALL_MS + 1, 0));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 1), hlc_make(WALL_MS + 1, 1));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 2), hlc_make(WALL_MS + 2, 0));
}
END_TEST

/* The local clock is the largest of the three: its counter moves on. */
START_TEST(test_update_local_largest)
{
    struct hlc c = clock_at(hlc_make(WALL_MS, 10));

    ck_assert_int_eq(
        hlc_update(&c, hlc_make(WALL_MS - 5, 30), WALL_MS - 9, HLC_MAX_AHEAD_MS_DEFAULT), 0);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS, 11));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS - 9), hlc_make(WALL_MS, 12));
}
END_TEST

/* The remote timestamp is the largest: the clock moves just past it. */
START_TEST(test_update_remote_largest)
{
    struct hlc c = clock_at(hlc_make(WALL_MS, 10));

    ck_assert_int_eq(hlc_update(&c, hlc_make(WALL_MS + 500, 3), WALL_MS + 100, 1000), 0);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS + 500, 4));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 100), hlc_make(WALL_MS + 500, 5));
}
END_TEST

/* The wall is the largest: the clock moves to it with a fresh counter. */
START_TEST(test_update_wall_largest)
{
    struct hlc c = clock_at(hlc_make(WALL_MS, 10));

    ck_assert_int_eq(
        hlc_update(&c, hlc_make(WALL_MS + 5, 99), WALL_MS + 9, HLC_MAX_AHEAD_MS_DEFAULT), 0);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS + 9, 0));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS + 9), hlc_make(WALL_MS + 9, 1));
}
END_TEST

/* Local and remote share the physical part: the larger counter plus one. */
START_TEST(test_update_same_physical)
{
    struct hlc c = clock_at(hlc_make(WALL_MS, 10));
    struct hlc d = clock_at(hlc_make(WALL_MS, 40));

    ck_assert_int_eq(hlc_update(&c, hlc_make(WALL_MS, 20), WALL_MS - 1, HLC_MAX_AHEAD_MS_DEFAULT),
                     0);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS, 21));
    ck_assert_int_eq(hlc_update(&d, hlc_make(WALL_MS, 20), WALL_MS - 1, HLC_MAX_AHEAD_MS_DEFAULT),
                     0);
    ck_assert_uint_eq(d.last, hlc_make(WALL_MS, 41));
}
END_TEST

/* A remote counter at its maximum carries into the physical part. */
START_TEST(test_update_remote_logical_overflow)
{
    struct hlc c = clock_at(hlc_make(WALL_MS, 0));

    ck_assert_int_eq(
        hlc_update(&c, hlc_make(WALL_MS, HLC_LOGICAL_MAX), WALL_MS, HLC_MAX_AHEAD_MS_DEFAULT), 0);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS + 1, 0));
}
END_TEST

/* Too far ahead is refused and changes nothing; exactly max_ahead is accepted. */
START_TEST(test_update_refuses_far_ahead)
{
    const uint64_t ahead = HLC_MAX_AHEAD_MS_DEFAULT;
    struct hlc c = clock_at(hlc_make(WALL_MS, 7));
    uint64_t far = hlc_make(WALL_MS + ahead + 1, 0);

    ck_assert_int_eq(hlc_update(&c, far, WALL_MS, ahead), RK_ERANGE);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS, 7));
    ck_assert_int_eq(hlc_update(&c, UINT64_MAX, WALL_MS, ahead), RK_ERANGE);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS, 7));
    ck_assert_uint_eq(hlc_now(&c, WALL_MS), hlc_make(WALL_MS, 8));
    ck_assert_int_eq(hlc_update(&c, hlc_make(WALL_MS + ahead, HLC_LOGICAL_MAX - 1), WALL_MS, ahead),
                     0);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS + ahead, HLC_LOGICAL_MAX));
}
END_TEST

/* With no bound on skew, the last timestamp is still refused: nothing lies past it. */
START_TEST(test_update_refuses_last_timestamp)
{
    struct hlc c = clock_at(hlc_make(WALL_MS, 7));
    struct hlc full = clock_at(UINT64_MAX);

    ck_assert_int_eq(hlc_update(&c, UINT64_MAX, WALL_MS, UINT64_MAX), RK_ERANGE);
    ck_assert_uint_eq(c.last, hlc_make(WALL_MS, 7));
    ck_assert_int_eq(hlc_update(&full, hlc_make(WALL_MS, 0), WALL_MS, UINT64_MAX), RK_ERANGE);
    ck_assert_uint_eq(full.last, UINT64_MAX);
}
END_TEST

/*
 * Random clocks, remotes within the bound and walls before, at and after
 * both: after a successful update every timestamp handed out is past the
 * remote one, whatever the wall says next.
 */
START_TEST(test_update_then_now_is_after_remote)
{
    const uint64_t ahead = HLC_MAX_AHEAD_MS_DEFAULT;

    for (int i = 0; i < STEPS; i++) {
        uint64_t wall = WALL_MS + rng_below(200000);
        struct hlc c =
            clock_at(hlc_make(WALL_MS + rng_below(200000), rng_below(HLC_LOGICAL_MAX + 1)));
        uint64_t remote =
            hlc_make(wall - 100000 + rng_below(100000 + ahead + 1), rng_below(HLC_LOGICAL_MAX + 1));
        uint64_t before = c.last;
        ck_assert_int_eq(hlc_update(&c, remote, wall, ahead), 0);
        ck_assert_uint_gt(c.last, remote);
        ck_assert_uint_gt(c.last, before);
        ck_assert_uint_ge(hlc_physical(c.last), wall);
        ck_assert_uint_gt(hlc_now(&c, wall - rng_below(200000)), remote);
    }
}
END_TEST

static Suite *hlc_suite(void)
{
    Suite *s = suite_create("hlc");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"first_timestamp_is_wall", test_first_timestamp_is_wall},
        {"wall_stalls", test_wall_stalls},
        {"wall_goes_backwards", test_wall_goes_backwards},
        {"wall_jumps_forward", test_wall_jumps_forward},
        {"wall_random_walk", test_wall_random_walk},
        {"logical_overflow", test_logical_overflow},
        {"update_local_largest", test_update_local_largest},
        {"update_remote_largest", test_update_remote_largest},
        {"update_wall_largest", test_update_wall_largest},
        {"update_same_physical", test_update_same_physical},
        {"update_remote_logical_overflow", test_update_remote_logical_overflow},
        {"update_refuses_far_ahead", test_update_refuses_far_ahead},
        {"update_refuses_last_timestamp", test_update_refuses_last_timestamp},
        {"update_then_now_is_after_remote", test_update_then_now_is_after_remote},
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
    SRunner *sr = srunner_create(hlc_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
