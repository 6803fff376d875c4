/*
 * check_log.c - unit tests of the logger (src/base/log.c): the line format,
 * level filtering before the arguments are evaluated, whole lines from
 * concurrent threads, and log_quote()'s quoting rules.
 *
 * Lines go to a tmpfile() that each test reads back.
 */
#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "log.h"

/* ts=... level=... node=... event=...: the fixed head of every line. */
#define HEAD_RE                                                                                    \
    "^ts=([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\\.[0-9]{3}Z level=(debug|info|"   \
    "warn|error) node=[^ ]+ event=[a-z_]+"

#define THREADS 4
#define LINES_PER_THREAD 2000

static FILE *out;

static void setup(void)
{
    out = tmpfile();
    ck_assert_ptr_nonnull(out);
    log_init("n1", out);
    log_set_level(LOG_INFO);
}

static void teardown(void)
{
    fclose(out);
}

/* Everything logged so far, as a malloc'd string. */
static char *captured(void)
{
    long len;
    char *buf;

    ck_assert_int_eq(fflush(out), 0);
    len = ftell(out);
    ck_assert_int_ge(len, 0);
    buf = malloc((size_t)len + 1);
    ck_assert_ptr_nonnull(buf);
    rewind(out);
    ck_assert_uint_eq(fread(buf, 1, (size_t)len, out), (size_t)len);
    buf[len] = '\0';
    return buf;
}

static bool matches(const char *re, const char *s, regmatch_t *m, size_t n_m)
{
    regex_t rx;
    int rc;

    ck_assert_int_eq(regcomp(&rx, re, REG_EXTENDED), 0);
    rc = regexec(&rx, s, n_m, m, 0);
    regfree(&rx);
    return rc == 0;
}

START_TEST(test_line_format)
{
    char *s;
    regmatch_t m[3];
    struct tm tm;
    char ts[32];
    time_t when;

    LOG(LOG_INFO, "listen", "proto=%s addr=%s", "resp", "127.0.0.1:7370");
    s = captured();
    ck_assert_msg(matches(HEAD_RE " proto=resp addr=127\\.0\\.0\\.1:7370\n$", s, m, 3), "%s", s);
    ck_assert(strstr(s, " level=info node=n1 event=listen ") != NULL);
    memset(&tm, 0, sizeof(tm));
    snprintf(ts, sizeof(ts), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), s + m[1].rm_so);
    ck_assert_ptr_nonnull(strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm));
    when = timegm(&tm);
    ck_assert_int_le(labs((long)(time(NULL) - when)), 5);
    free(s);
}
END_TEST

START_TEST(test_line_without_fields)
{
    char *s;
    regmatch_t m[1];

    LOG(LOG_WARN, "ready", "%s", "");
    s = captured();
    ck_assert_msg(matches(HEAD_RE "\n$", s, m, 1), "%s", s);
    ck_assert(strstr(s, "level=warn node=n1 event=ready\n") != NULL);
    free(s);
}
END_TEST

START_TEST(test_node_before_init_and_quoted)
{
    char *s;

    log_init(NULL, out);
    LOG(LOG_ERROR, "boot", "step=%d", 1);
    log_init("odd id", out);
    LOG(LOG_ERROR, "boot", "step=%d", 2);
    s = captured();
    ck_assert(strstr(s, "level=error node=- event=boot step=1\n") != NULL);
    ck_assert(strstr(s, "level=error node=\"odd id\" event=boot step=2\n") != NULL);
    free(s);
}
END_TEST

START_TEST(test_control_bytes_stay_on_one_line)
{
    char *s;

    LOG(LOG_INFO, "raw", "error=%s tab=%s", "two\nlines", "a\tb");
    s = captured();
    ck_assert(strstr(s, "event=raw error=two?lines tab=a?b\n") != NULL);
    ck_assert_ptr_eq(strchr(s, '\n'), s + strlen(s) - 1);
    free(s);
}
END_TEST

static int evaluated;

static int count_call(void)
{
    return ++evaluated;
}

START_TEST(test_level_filtering)
{
    char *s;

    evaluated = 0;
    log_set_level(LOG_WARN);
    LOG(LOG_DEBUG, "hidden", "n=%d", count_call());
    LOG(LOG_INFO, "hidden", "n=%d", count_call());
    ck_assert_int_eq(evaluated, 0);
    LOG(LOG_WARN, "shown", "n=%d", count_call());
    LOG(LOG_ERROR, "shown", "n=%d", count_call());
    ck_assert_int_eq(evaluated, 2);
    log_set_level(LOG_DEBUG);
    LOG(LOG_DEBUG, "shown", "n=%d", count_call());
    ck_assert_int_eq(evaluated, 3);
    s = captured();
    ck_assert(strstr(s, "hidden") == NULL);
    ck_assert(strstr(s, "level=warn node=n1 event=shown n=1\n") != NULL);
    ck_assert(strstr(s, "level=error node=n1 event=shown n=2\n") != NULL);
    ck_assert(strstr(s, "level=debug node=n1 event=shown n=3\n") != NULL);
    free(s);
}
END_TEST

START_TEST(test_level_names)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    enum log_level l;

    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(log_level_parse(names[i], &l), 0);
        ck_assert_int_eq(l, i);
        ck_assert_str_eq(log_level_name(l), names[i]);
    }
    ck_assert_int_eq(log_level_parse("WARN", &l), 0);
    ck_assert_int_eq(l, LOG_WARN);
    ck_assert_int_eq(log_level_parse("warning", &l), RK_EINVAL);
    ck_assert_int_eq(log_level_parse("", &l), RK_EINVAL);
    ck_assert_str_eq(log_level_name((enum log_level)9), "unknown");
}
END_TEST

START_TEST(test_long_line_cut)
{
    char *big = malloc(3 * PIPE_BUF);
    char *s;

    ck_assert_ptr_nonnull(big);
    memset(big, 'v', 3 * PIPE_BUF - 1);
    big[3 * PIPE_BUF - 1] = '\0';
    LOG(LOG_INFO, "big", "value=%s", big);
    LOG(LOG_INFO, "after", "n=%d", 1);
    s = captured();
    ck_assert_ptr_nonnull(strchr(s, '\n'));
    ck_assert_uint_eq((size_t)(strchr(s, '\n') - s) + 1, PIPE_BUF - 1);
    ck_assert(strncmp(strchr(s, '\n') - 4, "v...\n", 5) == 0);
    ck_assert(strstr(s, "event=after n=1\n") != NULL);
    free(big);
    free(s);
}
END_TEST

static void *log_many(void *arg)
{
    long t = (long)arg;

    for (int i = 0; i < LINES_PER_THREAD; i++) {
        LOG(LOG_INFO, "tick", "thread=%ld i=%d pad=%s", t, i,
            "................................................................");
    }
    return NULL;
}

START_TEST(test_threads_whole_lines)
{
    pthread_t th[THREADS];
    regex_t rx;
    char *s;
    char *save = NULL;
    size_t lines = 0;

    for (long t = 0; t < THREADS; t++) {
        ck_assert_int_eq(pthread_create(&th[t], NULL, log_many, (void *)t), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    }
    s = captured();
    ck_assert_int_eq(regcomp(&rx, HEAD_RE " thread=[0-9] i=[0-9]+ pad=\\.{64}$", REG_EXTENDED), 0);
    for (char *l = strtok_r(s, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
        ck_assert_msg(regexec(&rx, l, 0, NULL, 0) == 0, "mixed line: %s", l);
        lines++;
    }
    regfree(&rx);
    ck_assert_uint_eq(lines, THREADS * LINES_PER_THREAD);
    free(s);
}
END_TEST

/* ---- log_quote ----------------------------------------------------------- */

static const char *quote(char *buf, size_t cap, const char *s)
{
    return log_quote(buf, cap, s, strlen(s));
}

START_TEST(test_quote_plain)
{
    char buf[64];

    ck_assert_str_eq(quote(buf, sizeof(buf), "abc"), "abc");
    ck_assert_str_eq(quote(buf, sizeof(buf), "127.0.0.1:7370"), "127.0.0.1:7370");
    ck_assert_str_eq(quote(buf, sizeof(buf), "a\\b"), "a\\b");
    ck_assert_str_eq(quote(buf, sizeof(buf), "/x/y-z_1"), "/x/y-z_1");
}
END_TEST

START_TEST(test_quote_needs_quotes)
{
    char buf[64];

    ck_assert_str_eq(quote(buf, sizeof(buf), ""), "\"\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "a b"), "\"a b\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "k=v"), "\"k=v\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "say \"hi\""), "\"say \\\"hi\\\"\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "a\\b c"), "\"a\\\\b c\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "l1\nl2\r\t"), "\"l1\\nl2\\r\\t\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "\x01\x7f"), "\"\\x01\\x7f\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "caf\xc3\xa9"), "\"caf\\xc3\\xa9\"");
}
END_TEST

START_TEST(test_quote_binary_and_unterminated)
{
    char buf[64];
    static const char bytes[] = {'k', 0, 'y', 'Z', 'Z'};

    ck_assert_str_eq(log_quote(buf, sizeof(buf), bytes, 3), "\"k\\x00y\"");
    ck_assert_str_eq(log_quote(buf, sizeof(buf), bytes + 2, 2), "yZ");
    ck_assert_ptr_eq(log_quote(buf, sizeof(buf), bytes + 2, 2), buf);
}
END_TEST

START_TEST(test_quote_truncation)
{
    char buf[12];
    char many[64];

    memset(many, 'a', sizeof(many) - 1);
    many[sizeof(many) - 1] = '\0';
    ck_assert_str_eq(quote(buf, sizeof(buf), many), "aaaaaaaa...");
    many[0] = ' ';
    ck_assert_str_eq(quote(buf, sizeof(buf), many), "\" aaaaa...\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "\x01\x02\x03"), "\"\\x01...\"");
    ck_assert_str_eq(quote(buf, sizeof(buf), "\x01\x02"), "\"\\x01\\x02\"");
    ck_assert_str_eq(quote(buf, 6, "a b c"), "\"...\"");
    ck_assert_str_eq(quote(buf, 6, "a b"), "\"a b\"");
    ck_assert_str_eq(quote(buf, 6, "abcdef"), "ab...");
    ck_assert_str_eq(quote(buf, 6, "abcde"), "abcde");
}
END_TEST

/* One line per interval; the line after a quiet spell says how many were held back. */
START_TEST(test_limit_counts_suppressed)
{
    struct log_limit l = {0};
    uint64_t held = 99;

    ck_assert(log_limit_take(&l, 5000, &held));
    ck_assert_uint_eq(held, 0);
    for (uint64_t i = 0; i < 300; i++) {
        ck_assert(!log_limit_take(&l, 5000 + i, &held));
    }
    ck_assert(!log_limit_take(&l, 5000 + LOG_LIMIT_INTERVAL_MS - 1, &held));
    ck_assert(log_limit_take(&l, 5000 + LOG_LIMIT_INTERVAL_MS, &held));
    ck_assert_uint_eq(held, 301);
    ck_assert(!log_limit_take(&l, 5000 + LOG_LIMIT_INTERVAL_MS + 1, &held));
    ck_assert(log_limit_take(&l, 5000 + 10 * LOG_LIMIT_INTERVAL_MS, &held));
    ck_assert_uint_eq(held, 1);
}
END_TEST

/* LOG_LIMITED writes the first of a burst, with its suppressed= field, and holds back the rest. */
START_TEST(test_limited_macro_one_line)
{
    struct log_limit l = {0};
    char *s;
    size_t lines = 0;

    for (int i = 0; i < 1000; i++) {
        LOG_LIMITED(&l, LOG_WARN, "accept_failed", "error=%s", "EMFILE");
    }
    s = captured();
    for (const char *p = s; *p != '\0'; p++) {
        lines += *p == '\n';
    }
    ck_assert_uint_eq(lines, 1);
    ck_assert_ptr_nonnull(strstr(s, "event=accept_failed error=EMFILE suppressed=0\n"));
    ck_assert_uint_eq(l.suppressed, 999);
    free(s);
}
END_TEST

static Suite *log_suite(void)
{
    Suite *s = suite_create("log");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"line_format", test_line_format},
        {"line_without_fields", test_line_without_fields},
        {"node_id", test_node_before_init_and_quoted},
        {"control_bytes", test_control_bytes_stay_on_one_line},
        {"level_filtering", test_level_filtering},
        {"level_names", test_level_names},
        {"long_line_cut", test_long_line_cut},
        {"threads_whole_lines", test_threads_whole_lines},
        {"quote_plain", test_quote_plain},
        {"quote_needs_quotes", test_quote_needs_quotes},
        {"quote_binary", test_quote_binary_and_unterminated},
        {"quote_truncation", test_quote_truncation},
        {"limit_counts_suppressed", test_limit_counts_suppressed},
        {"limited_macro_one_line", test_limited_macro_one_line},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(log_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
