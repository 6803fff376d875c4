/*
 * check_glob.c - unit tests of Redis's glob patterns (src/base/glob.c) and
 * of the SCAN cursor (src/node/scan.c): the cases of each pattern rule,
 * bytes past the pattern's end read as Redis reads them, a pathological
 * pattern answered quickly; cursors read as Redis's strtoul() reads them
 * and the arc a cursor resumes on.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "glob.h"
#include "scan.h"

static bool m(const char *pattern, const char *s)
{
    return glob_match((const uint8_t *)pattern, strlen(pattern), (const uint8_t *)s, strlen(s),
                      false);
}

START_TEST(test_literal_and_wildcards)
{
    ck_assert(m("abc", "abc"));
    ck_assert(!m("abc", "abcd"));
    ck_assert(!m("abcd", "abc"));
    ck_assert(m("a*", "a"));
    ck_assert(m("a*", "abcdef"));
    ck_assert(m("*c", "abc"));
    ck_assert(m("a*c*e", "abcde"));
    ck_assert(!m("a*c*e", "abcdf"));
    ck_assert(m("a**b", "axxb"));
    ck_assert(m("a?c", "abc"));
    ck_assert(!m("a?c", "ac"));
    ck_assert(m("user:*:name", "user:42:name"));
    /* as Redis's stringmatchlen(): "*" alone does not match the empty string (KEYS and
     * SCAN skip matching for a lone "*") */
    ck_assert(!m("*", ""));
    ck_assert(m("", ""));
    ck_assert(!m("", "a"));
}
END_TEST

START_TEST(test_sets)
{
    ck_assert(m("h[ae]llo", "hello"));
    ck_assert(m("h[ae]llo", "hallo"));
    ck_assert(!m("h[ae]llo", "hillo"));
    ck_assert(m("h[^e]llo", "hallo"));
    ck_assert(!m("h[^e]llo", "hello"));
    ck_assert(m("h[a-b]llo", "hbllo"));
    ck_assert(m("h[b-a]llo", "hallo")); /* a reversed range is the same range */
    ck_assert(!m("h[a-b]llo", "hcllo"));
    ck_assert(m("[\\]]", "]"));
    ck_assert(m("[\\-]", "-"));
    /* "[a-]": the range runs from 'a' to ']' (so the set is unclosed), as in Redis */
    ck_assert(!m("[a-]", "-"));
    ck_assert(m("[a-]", "a"));
    /* an unclosed set ends at the pattern's end */
    ck_assert(m("a[bc", "ab"));
    ck_assert(!m("a[", "a["));
    ck_assert(!m("[", "a"));
}
END_TEST

START_TEST(test_escapes_and_case)
{
    ck_assert(m("a\\*b", "a*b"));
    ck_assert(!m("a\\*b", "axb"));
    ck_assert(m("a\\?", "a?"));
    ck_assert(m("a\\", "a\\")); /* a trailing backslash is itself */
    ck_assert(!m("ABC", "abc"));
    ck_assert(glob_match((const uint8_t *)"A[B-C]?", 7, (const uint8_t *)"abz", 3, true));
}
END_TEST

START_TEST(test_bytes)
{
    const uint8_t pat[] = {'a', 0, '*'};
    const uint8_t yes[] = {'a', 0, 0xff, 'z'};
    const uint8_t no[] = {'a', 1, 'z'};
    const uint8_t range[] = {'[', 0x80, '-', 0xff, ']'};
    const uint8_t high[] = {0x90};

    ck_assert(glob_match(pat, sizeof(pat), yes, sizeof(yes), false));
    ck_assert(!glob_match(pat, sizeof(pat), no, sizeof(no), false));
    ck_assert(glob_match(range, sizeof(range), high, sizeof(high), false));
}
END_TEST

/* "a*a*a*...*b" against a long run of a: exponential without skipLongerMatches. */
START_TEST(test_pathological)
{
    char pat[128], s[4096];
    size_t n = 0;

    for (int i = 0; i < 30; i++) {
        pat[n++] = 'a';
        pat[n++] = '*';
    }
    pat[n++] = 'b';
    pat[n] = '\0';
    memset(s, 'a', sizeof(s) - 1);
    s[sizeof(s) - 1] = '\0';
    ck_assert(!m(pat, s));
}
END_TEST

START_TEST(test_cursor_parse)
{
    uint64_t v = 7;

    ck_assert_int_eq(scan_cursor_parse("0", 1, &v), 0);
    ck_assert(v == 0);
    ck_assert_int_eq(scan_cursor_parse("18446744073709551615", 20, &v), 0);
    ck_assert(v == UINT64_MAX);
    ck_assert_int_eq(scan_cursor_parse("-1", 2, &v), 0);
    ck_assert(v == UINT64_MAX);
    ck_assert_int_eq(scan_cursor_parse("+5", 2, &v), 0);
    ck_assert(v == 5);
    ck_assert_int_eq(scan_cursor_parse("18446744073709551616", 20, &v), RK_ESYNTAX);
    ck_assert_int_eq(scan_cursor_parse("abc", 3, &v), RK_ESYNTAX);
    ck_assert_int_eq(scan_cursor_parse(" 1", 2, &v), RK_ESYNTAX);
    ck_assert_int_eq(scan_cursor_parse("-", 1, &v), RK_ESYNTAX);
    ck_assert_int_eq(scan_cursor_parse("", 0, &v), RK_ESYNTAX);
}
END_TEST

START_TEST(test_cursor_format_and_arc)
{
    char text[SCAN_CURSOR_TEXT];
    uint64_t start, end;

    scan_cursor_format(12345, false, text);
    ck_assert_str_eq(text, "12345");
    scan_cursor_format(12345, true, text);
    ck_assert_str_eq(text, "0");
    scan_cursor_format(UINT64_MAX, false, text);
    ck_assert_str_eq(text, "18446744073709551615");
    /* from 0: the whole ring, (2^64-1, 2^64-1] in store_scan()'s terms */
    scan_cursor_arc(0, &start, &end);
    ck_assert(start == UINT64_MAX && end == UINT64_MAX);
    /* from p: positions p .. 2^64-1, p itself included */
    scan_cursor_arc(1000, &start, &end);
    ck_assert(start == 999 && end == UINT64_MAX);
    scan_cursor_arc(UINT64_MAX, &start, &end);
    ck_assert(start == UINT64_MAX - 1 && end == UINT64_MAX);
}
END_TEST

static Suite *glob_suite(void)
{
    Suite *s = suite_create("glob");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_literal_and_wildcards);
    tcase_add_test(tc, test_sets);
    tcase_add_test(tc, test_escapes_and_case);
    tcase_add_test(tc, test_bytes);
    tcase_add_test(tc, test_pathological);
    tcase_add_test(tc, test_cursor_parse);
    tcase_add_test(tc, test_cursor_format_and_arc);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(glob_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
