/*
 * check_metrics.c - unit tests of the pure parts of INFO (src/node/metrics.c):
 * byte counts written the way Redis's INFO writes them (bytesToHuman), at
 * every unit's edges, so redis-cli --stat and other readers of
 * used_memory_human see the figures they expect.  The expected texts are
 * what Redis 7.0 prints for the same numbers.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "metrics.h"

static const char *human(uint64_t n)
{
    static char buf[32];

    metrics_bytes_human(n, buf, sizeof(buf));
    return buf;
}

START_TEST(test_bytes_human)
{
    const uint64_t k = 1024;

    ck_assert_str_eq(human(0), "0B");
    ck_assert_str_eq(human(1023), "1023B");
    ck_assert_str_eq(human(k), "1.00K");
    ck_assert_str_eq(human(991000), "967.77K"); /* redis-server 7.0's used_memory at start */
    ck_assert_str_eq(human(k * k - 1), "1024.00K");
    ck_assert_str_eq(human(k * k), "1.00M");
    ck_assert_str_eq(human(3340720), "3.19M");
    ck_assert_str_eq(human(k * k * k), "1.00G");
    ck_assert_str_eq(human(64 * k * k * k), "64.00G");
    ck_assert_str_eq(human(k * k * k * k), "1.00T");
    ck_assert_str_eq(human(k * k * k * k * k), "1.00P");
    ck_assert_str_eq(human(1023 * k * k * k * k * k), "1023.00P");
    /* from 1024 P on, Redis writes bytes again */
    ck_assert_str_eq(human(k * k * k * k * k * k), "1152921504606846976B");
    ck_assert_str_eq(human(UINT64_MAX), "18446744073709551615B");
}
END_TEST

/* A buffer too small is cut, never overrun. */
START_TEST(test_bytes_human_small_buffer)
{
    char buf[5] = "xxxx";

    metrics_bytes_human(991000, buf, 4);
    ck_assert_str_eq(buf, "967");
    ck_assert_int_eq(buf[4], '\0');
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");

    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_bytes_human);
    tcase_add_test(tc, test_bytes_human_small_buffer);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(metrics_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
