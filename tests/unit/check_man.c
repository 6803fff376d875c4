/*
 * check_man.c - unit tests of text escaped for troff (src/base/man.c):
 * backslashes, minus signs and double quotes escaped, a line that would
 * start with a request guarded, everything else as given.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "man.h"

/* man_text(s) as a string; the caller frees it. */
static char *escaped(const char *s)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    ck_assert_ptr_nonnull(f);
    man_text(f, s);
    ck_assert_int_eq(fclose(f), 0);
    return out;
}

static void expect(const char *in, const char *want)
{
    char *got = escaped(in);

    ck_assert_str_eq(got, want);
    free(got);
}

START_TEST(test_plain)
{
    expect("", "");
    expect("host:port for clients (RESP)", "host:port for clients (RESP)");
}
END_TEST

START_TEST(test_escapes)
{
    expect("--hex", "\\-\\-hex");
    expect("a\\b", "a\\eb");
    expect("say \"hi\"", "say \\(dqhi\\(dq");
}
END_TEST

START_TEST(test_request_guarded)
{
    expect(".SH x", "\\&.SH x");
    expect("'x", "\\&'x");
    expect("a.b", "a.b");
    expect("one\n.two", "one\n\\&.two");
}
END_TEST

START_TEST(test_length)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    ck_assert_ptr_nonnull(f);
    man_text_n(f, "-a-b", 2);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_str_eq(out, "\\-a");
    free(out);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("man");
    TCase *tc = tcase_create("escape");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_plain);
    tcase_add_test(tc, test_escapes);
    tcase_add_test(tc, test_request_guarded);
    tcase_add_test(tc, test_length);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
