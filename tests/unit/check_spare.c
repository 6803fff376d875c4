/*
 * check_spare.c - unit tests of the spare-object cache (src/base/spare.c):
 * an object put back is the next one got, zeroed; no more than max are
 * kept; a list freed is empty and still usable.  Run under the sanitizers,
 * a leak or a use after free here fails the build's check.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spare.h"

struct obj {
    uint64_t a[5];
};

static bool all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < n; i++) {
        if (b[i] != 0) {
            return false;
        }
    }
    return true;
}

START_TEST(test_get_is_zeroed_and_reused)
{
    struct spare s;
    struct obj *x, *y;

    spare_init(&s, sizeof(struct obj), 4);
    x = spare_get(&s);
    ck_assert_ptr_nonnull(x);
    ck_assert(all_zero(x, sizeof(*x)));
    memset(x, 0xab, sizeof(*x));
    spare_put(&s, x);
    ck_assert_uint_eq(s.n, 1);
    y = spare_get(&s);
    ck_assert_ptr_eq(y, x); /* the kept one, first */
    ck_assert(all_zero(y, sizeof(*y)));
    ck_assert_uint_eq(s.n, 0);
    spare_put(&s, y);
    spare_put(&s, NULL); /* nothing to keep */
    ck_assert_uint_eq(s.n, 1);
    spare_free(&s);
}
END_TEST

START_TEST(test_keeps_at_most_max)
{
    struct spare s;
    void *p[10];

    spare_init(&s, sizeof(struct obj), 3);
    for (size_t i = 0; i < 10; i++) {
        p[i] = spare_get(&s);
        ck_assert_ptr_nonnull(p[i]);
    }
    for (size_t i = 0; i < 10; i++) {
        spare_put(&s, p[i]); /* past 3 kept, freed (a leak here fails under ASan) */
        ck_assert_uint_eq(s.n, i < 3 ? i + 1 : 3);
    }
    /* the kept ones come back last in, first out, then new ones */
    ck_assert_ptr_eq(spare_get(&s), p[2]);
    ck_assert_ptr_eq(spare_get(&s), p[1]);
    ck_assert_ptr_eq(spare_get(&s), p[0]);
    ck_assert_uint_eq(s.n, 0);
    void *fresh = spare_get(&s);
    ck_assert_ptr_nonnull(fresh);
    free(p[0]);
    free(p[1]);
    free(p[2]);
    free(fresh);
    spare_free(&s);
}
END_TEST

START_TEST(test_free_then_reuse)
{
    struct spare s;

    spare_init(&s, 1, 8); /* smaller than a pointer: raised to one */
    ck_assert_uint_eq(s.size, sizeof(void *));
    for (int i = 0; i < 5; i++) {
        spare_put(&s, spare_get(&s));
        spare_put(&s, malloc(sizeof(void *)));
    }
    ck_assert_uint_le(s.n, 8);
    spare_free(&s);
    ck_assert_uint_eq(s.n, 0);
    ck_assert_ptr_null(s.head);
    spare_put(&s, spare_get(&s));
    ck_assert_uint_eq(s.n, 1);
    spare_free(&s);
}
END_TEST

static Suite *spare_suite(void)
{
    Suite *s = suite_create("spare");
    TCase *tc = tcase_create("spare");

    tcase_add_test(tc, test_get_is_zeroed_and_reused);
    tcase_add_test(tc, test_keeps_at_most_max);
    tcase_add_test(tc, test_free_then_reuse);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(spare_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
