/*
 * check_grow.c - unit tests of array growth (src/base/grow.c).
 *
 * The capacity arithmetic is pure and tested at its edges (doubling, the
 * first growth, the limit, the multiplication's overflow at SIZE_MAX)
 * without allocating; grow_array() is tested on real arrays, including
 * that a refused growth leaves the array and its capacity as they were.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

START_TEST(test_capacity_doubles)
{
    ck_assert_uint_eq(grow_capacity(16, 17, SIZE_MAX, 8), 32);
    ck_assert_uint_eq(grow_capacity(16, 100, SIZE_MAX, 8), 128);
    ck_assert_uint_eq(grow_capacity(16, 16, SIZE_MAX, 8), 16);
    ck_assert_uint_eq(grow_capacity(16, 3, SIZE_MAX, 8), 16);
    /* from empty: exactly what is asked */
    ck_assert_uint_eq(grow_capacity(0, 1, SIZE_MAX, 8), 1);
    ck_assert_uint_eq(grow_capacity(0, 100, SIZE_MAX, 8), 100);
    ck_assert_uint_eq(grow_capacity(1, 2, SIZE_MAX, 8), 2);
}
END_TEST

START_TEST(test_capacity_limit)
{
    /* doubling stops at the limit... */
    ck_assert_uint_eq(grow_capacity(3000, 3001, 4096, 8), 4096);
    ck_assert_uint_eq(grow_capacity(2048, 2049, 4096, 8), 4096);
    /* ...unless n itself needs more */
    ck_assert_uint_eq(grow_capacity(16, 5000, 4096, 8), 5000);
    ck_assert_uint_eq(grow_capacity(100, 101, 150, 1), 150);
}
END_TEST

START_TEST(test_capacity_overflow)
{
    size_t most = SIZE_MAX / 24;

    /* n elements whose bytes do not fit in size_t: refused */
    ck_assert_uint_eq(grow_capacity(0, most + 1, SIZE_MAX, 24), 0);
    ck_assert_uint_eq(grow_capacity(16, SIZE_MAX, SIZE_MAX, 2), 0);
    /* the largest n that fits is granted */
    ck_assert_uint_eq(grow_capacity(0, most, SIZE_MAX, 24), most);
    /* doubling past the top stops at the most that fits, never wraps */
    ck_assert_uint_eq(grow_capacity(most / 2 + 1, most / 2 + 2, SIZE_MAX, 24), most);
    ck_assert_uint_eq(grow_capacity(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, SIZE_MAX, 1), SIZE_MAX);
    /* a first growth of one huge element */
    ck_assert_uint_eq(grow_capacity(0, 1, SIZE_MAX, SIZE_MAX), 1);
    ck_assert_uint_eq(grow_capacity(1, 2, SIZE_MAX, SIZE_MAX), 0);
}
END_TEST

START_TEST(test_array_grows)
{
    uint32_t *v = NULL;
    size_t cap = 0;

    for (uint32_t i = 0; i < 1000; i++) {
        ck_assert_int_eq(grow_array(&v, &cap, i + 1, sizeof(*v)), 0);
        ck_assert_uint_ge(cap, i + 1);
        v[i] = i * 7;
    }
    ck_assert_uint_eq(cap, 1024);
    for (uint32_t i = 0; i < 1000; i++) {
        ck_assert_uint_eq(v[i], i * 7);
    }
    free(v);
}
END_TEST

START_TEST(test_array_refused_unchanged)
{
    uint64_t *v = NULL;
    uint64_t *before;
    size_t cap = 0;

    ck_assert_int_eq(grow_array(&v, &cap, 4, sizeof(*v)), 0);
    before = v;
    v[3] = 42;
    ck_assert_int_eq(grow_array(&v, &cap, SIZE_MAX / sizeof(*v) + 1, sizeof(*v)), RK_ENOMEM);
    ck_assert_ptr_eq(v, before);
    ck_assert_uint_eq(cap, 4);
    ck_assert_uint_eq(v[3], 42);
    /* asking for no more than there is costs nothing */
    ck_assert_int_eq(grow_array(&v, &cap, 2, sizeof(*v)), 0);
    ck_assert_ptr_eq(v, before);
    free(v);
}
END_TEST

START_TEST(test_array_max)
{
    char *v = NULL;
    size_t cap = 0;

    ck_assert_int_eq(grow_array_max(&v, &cap, 64, 100, 1), 0);
    ck_assert_uint_eq(cap, 64);
    ck_assert_int_eq(grow_array_max(&v, &cap, 65, 100, 1), 0);
    ck_assert_uint_eq(cap, 100);
    ck_assert_int_eq(grow_array_max(&v, &cap, 101, 100, 1), 0);
    ck_assert_uint_eq(cap, 101);
    free(v);
}
END_TEST

static Suite *grow_suite(void)
{
    Suite *s = suite_create("grow");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"capacity_doubles", test_capacity_doubles},
        {"capacity_limit", test_capacity_limit},
        {"capacity_overflow", test_capacity_overflow},
        {"array_grows", test_array_grows},
        {"array_refused_unchanged", test_array_refused_unchanged},
        {"array_max", test_array_max},
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
    SRunner *sr = srunner_create(grow_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
