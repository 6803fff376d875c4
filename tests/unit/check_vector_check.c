/*
 * check_vector_check.c - unit tests of the vector file checker (src/placement/vector_check.c):
 * the golden file passes whole, and every kind of bad input is reported with
 * its line number and counted as a failure, never a crash.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "vector_check.h"

/* Run the checker on text; return the report, which the caller frees. */
static char *run(const char *text, struct vector_check_result *res)
{
    char *report = NULL;
    size_t report_len = 0;
    FILE *f = open_memstream(&report, &report_len);

    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(vector_check_file(text, strlen(text), "t", f, res), 0);
    fclose(f);
    return report;
}

START_TEST(test_golden_file)
{
    const char *top = getenv("top_srcdir");
    char path[4096];
    char *buf;
    long len;
    struct vector_check_result res;
    FILE *f;

    snprintf(path, sizeof(path), "%s/tests/vectors/placement-v1.txt", top ? top : ".");
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    buf = malloc((size_t)len);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    ck_assert_int_eq(vector_check_file(buf, (size_t)len, path, stderr, &res), 0);
    ck_assert_uint_eq(res.failed, 0);
    /* 98 hash lines and 1385 key lines in placement-v1.txt */
    ck_assert_uint_eq(res.passed, 98 + 1385);
    ck_assert_uint_eq(res.cases, 16);
    free(buf);
}
END_TEST

#define CASE_HEAD "case c\nseed 000102030405060708090a0b0c0d0e0f\n"

/* A small valid case: its key line's position and list are computed. */
static const char *const good_case = CASE_HEAD "node a r1 4\nnode b r2 4\nrf 2\n"
                                               "key - 726fdb47dd0e0e31 b,a\nend\n";

START_TEST(test_small_case)
{
    struct vector_check_result res;
    char *rep = run(good_case, &res);
    ck_assert_uint_eq(res.passed, 1);
    ck_assert_uint_eq(res.failed, 0);
    ck_assert_str_eq(rep, "");
    free(rep);
}
END_TEST

/* The same case with the list in the wrong order fails, naming both lists. */
START_TEST(test_small_case_wrong_order)
{
    struct vector_check_result res;
    char *rep =
        run(CASE_HEAD "node a r1 4\nnode b r2 4\nrf 2\nkey - 726fdb47dd0e0e31 a,b\nend\n", &res);
    ck_assert_uint_eq(res.failed, 1);
    ck_assert_ptr_nonnull(strstr(rep, "t:6: key -: preference list expected a,b, computed b,a"));
    free(rep);
}
END_TEST

struct bad_input {
    const char *text;
    const char *message; /* expected in the report */
    size_t failed;
};

static const struct bad_input bad_inputs[] = {
    {"hash 00 - 726fdb47dd0e0e31\n", "t:1: hash: seed must be 32 hex digits", 1},
    {"hash 000102030405060708090a0b0c0d0e0f - 726fdb47dd0e0e30\n", "t:1: hash mismatch", 1},
    {"hash 000102030405060708090a0b0c0d0e0f 0 726fdb47dd0e0e31\n", "message must be hex", 1},
    {"hash 000102030405060708090a0b0c0d0e0f  - 726fdb47dd0e0e31\n", "single spaces", 1},
    {"frob x\n", "t:1: unknown record 'frob'", 1},
    {"node a r1 4\n", "t:1: node line outside a case", 1},
    {CASE_HEAD "node a r1 4\n", "case 'c' (line 1) has no end line", 1},
    {CASE_HEAD "node bad/id r1 4\nrf 1\nkey - 726fdb47dd0e0e31 a\nend\n",
     "t:3: invalid node id 'bad/id'", 2},
    {CASE_HEAD "node a r\xc3\xa9 4\nrf 1\nend\n", "t:3: invalid rack", 1},
    {CASE_HEAD "node a r1 0\nrf 1\nend\n", "t:3: token count '0' of node a out of range 1..4096",
     1},
    {CASE_HEAD "node a r1 4097\nrf 1\nend\n", "out of range 1..4096", 1},
    {CASE_HEAD "node a r1 99999999999\nrf 1\nend\n", "out of range", 1},
    {CASE_HEAD "node a r1 4\nrf 0\nkey - 726fdb47dd0e0e31 a\nend\n", "t:4: rf '0' out of range", 2},
    {CASE_HEAD "rf 3\nkey - 726fdb47dd0e0e31 a\nend\n",
     "t:3: case 'c' has no node lines: the "
     "ring is empty",
     2},
    {CASE_HEAD "node a r1 4\nnode a r2 4\nrf 1\nend\n", "lists a node id twice", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nnode b r1 4\nend\n", "nodes must precede rf", 1},
    {CASE_HEAD "node a r1 4\nkey - 726fdb47dd0e0e31 a\nrf 1\nend\n", "key line before the rf", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nkey - 726fdb47dd0e0e3 a\nend\n", "position must be 16 hex", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nkey - 726fdb47dd0e0e30 a\nend\n", "position expected", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nkey - 726fdb47dd0e0e31 b\nend\n", "expected b, computed a", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nkey - 726fdb47dd0e0e31 a,\nend\n", "expected a,", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nend\nend\n", "t:6: end line outside a case", 1},
    {"case c\nseed 0001\nnode a r1 4\nrf 1\nend\n", "t:2: seed must be 32 hex", 1},
    {CASE_HEAD "node a r1 4\nrf 1\nrf 1\nend\n", "second rf", 1},
    {CASE_HEAD "end\n", "ends without an rf line", 1},
};

START_TEST(test_bad_input)
{
    const struct bad_input *b = &bad_inputs[_i];
    struct vector_check_result res;
    char *rep = run(b->text, &res);

    ck_assert_msg(strstr(rep, b->message) != NULL, "input %d: expected '%s' in report:\n%s", _i,
                  b->message, rep);
    ck_assert_msg(res.failed == b->failed, "input %d: %zu failures, expected %zu:\n%s", _i,
                  res.failed, b->failed, rep);
    ck_assert_uint_eq(res.passed, 0);
    free(rep);
}
END_TEST

START_TEST(test_crlf_and_comments)
{
    struct vector_check_result res;
    char *rep =
        run("# comment\r\n\r\nhash 000102030405060708090a0b0c0d0e0f - 726fdb47dd0e0e31\r\n", &res);
    ck_assert_uint_eq(res.passed, 1);
    ck_assert_uint_eq(res.failed, 0);
    free(rep);
}
END_TEST

START_TEST(test_binary_garbage)
{
    static const char junk[] = "key \x00\xff\n\n\xfe case end\nnode";
    struct vector_check_result res;
    ck_assert_int_eq(vector_check_file(junk, sizeof(junk) - 1, "junk", NULL, &res), 0);
    ck_assert_uint_gt(res.failed, 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vectors");
    TCase *tc = tcase_create("golden");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_golden_file);
    tcase_add_test(tc, test_small_case);
    tcase_add_test(tc, test_small_case_wrong_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("bad_input");
    tcase_add_loop_test(tc, test_bad_input, 0, (int)(sizeof(bad_inputs) / sizeof(bad_inputs[0])));
    tcase_add_test(tc, test_crlf_and_comments);
    tcase_add_test(tc, test_binary_garbage);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
