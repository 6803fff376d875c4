/*
 * check_num.c - unit tests of decimal numbers from outside text
 * (src/base/num.c): digits only, the bound checked without wrapping, a
 * non-digit anywhere refused as syntax, *out untouched on refusal.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "num.h"

static int parse(const char *s, uint64_t max, uint64_t *out)
{
    return num_parse_u64(s, strlen(s), max, out);
}

START_TEST(test_digits)
{
    uint64_t v = 7;

    ck_assert_int_eq(parse("0", 10, &v), 0);
    ck_assert_uint_eq(v, 0);
    ck_assert_int_eq(parse("0042", 100, &v), 0);
    ck_assert_uint_eq(v, 42);
    ck_assert_int_eq(parse("18446744073709551615", UINT64_MAX, &v), 0);
    ck_assert(v == UINT64_MAX);
}
END_TEST

START_TEST(test_bound)
{
    uint64_t v = 7;

    ck_assert_int_eq(parse("65535", UINT16_MAX, &v), 0);
    ck_assert_uint_eq(v, 65535);
    v = 7;
    ck_assert_int_eq(parse("65536", UINT16_MAX, &v), RK_ERANGE);
    ck_assert_int_eq(parse("18446744073709551616", UINT64_MAX, &v), RK_ERANGE);
    ck_assert_int_eq(parse("99999999999999999999999", UINT64_MAX, &v), RK_ERANGE);
    /* 2^32 + 3 does not wrap to 3 */
    ck_assert_int_eq(parse("4294967299", 16, &v), RK_ERANGE);
    /* a bound below one digit */
    ck_assert_int_eq(parse("5", 0, &v), RK_ERANGE);
    ck_assert_int_eq(parse("0", 0, &v), 0);
    ck_assert_uint_eq(v, 0);
    v = 7;
    ck_assert_int_eq(parse("9", 8, &v), RK_ERANGE);
    ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_syntax)
{
    const char *bad[] = {"", " 5", "5 ", "+5", "-1", "3x", "0x10", "1e6", "5.0"};
    uint64_t v = 7;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(parse(bad[i], UINT64_MAX, &v) == RK_ESYNTAX, "'%s' accepted", bad[i]);
    }
    /* an embedded NUL, and a non-digit after digits too large for the bound */
    ck_assert_int_eq(num_parse_u64("5\0x", 3, UINT64_MAX, &v), RK_ESYNTAX);
    ck_assert_int_eq(parse("99999999999999999999999x", UINT64_MAX, &v), RK_ESYNTAX);
    /* only len bytes are read */
    ck_assert_int_eq(num_parse_u64("12x", 2, 100, &v), 0);
    ck_assert_uint_eq(v, 12);
}
END_TEST

static Suite *num_suite(void)
{
    Suite *s = suite_create("num");
    TCase *tc = tcase_create("parse");

    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_digits);
    tcase_add_test(tc, test_bound);
    tcase_add_test(tc, test_syntax);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(num_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
