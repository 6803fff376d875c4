/*
 * check_resp.c - unit tests of the RESP codec (proto/resp.c).
 *
 * Request parsing is checked through transcripts: every command a run
 * returns is written as text (argument count, flags, each argument with
 * its length and bytes escaped), then the final status and error message.
 * Each input is run in one piece, split in two at every byte boundary, and
 * byte by byte, and every run must give the expected transcript.  Each
 * chunk is handed to the parser in its own allocation, so a read past a
 * chunk's end is caught by AddressSanitizer builds.
 *
 * Encoders are checked against golden bytes written by hand from the RESP
 * specification and Redis's replies, the reply parser against literal
 * replies, round trips through the encoders, and malformed and oversized
 * input.  Random pipelines come from a xorshift generator whose seed is
 * printed (replay with RINGKV_TEST_SEED=<seed>).
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "resp.h"
#include "test_rng.h"

/* Random pipelines per test run, and commands in each. */
#define PIPELINE_TRIALS 200
#define PIPELINE_COMMANDS 40

static void rng_setup(void)
{
    rng_seed("check_resp");
}

/* --- transcripts ------------------------------------------------------------ */

struct exp_arg {
    const char *p;
    size_t len;
};

struct exp_cmd {
    size_t argc;
    struct exp_arg argv[8];
    bool is_inline;
    bool too_big;
    size_t too_big_len;
};

/* A string literal as (pointer, length), NULs inside included. */
#define IN(lit) (lit), sizeof(lit) - 1
#define A(lit)                                                                                     \
    {                                                                                              \
        (lit), sizeof(lit) - 1                                                                     \
    }
#define CMDS(...)                                                                                  \
    (const struct exp_cmd[]){__VA_ARGS__},                                                         \
        sizeof((const struct exp_cmd[]){__VA_ARGS__}) / sizeof(struct exp_cmd)
#define NO_CMDS NULL, 0
#define ARGS(...)                                                                                  \
    sizeof((const struct exp_arg[]){__VA_ARGS__}) / sizeof(struct exp_arg),                        \
    {                                                                                              \
        __VA_ARGS__                                                                                \
    }
/* A multibulk command, an inline one, and one whose argument of length len was skipped. */
#define MB(...)                                                                                    \
    {                                                                                              \
        ARGS(__VA_ARGS__), false, false, 0                                                         \
    }
#define IL(...)                                                                                    \
    {                                                                                              \
        ARGS(__VA_ARGS__), true, false, 0                                                          \
    }
#define BIG(len, ...)                                                                              \
    {                                                                                              \
        ARGS(__VA_ARGS__), false, true, (len)                                                      \
    }

/*
 * An assertion for the helpers every split runs through: Check records
 * each passing ck_assert with a write to its log, which costs more than
 * the parsing under test, so these only call into Check on failure.
 */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #cond);                                  \
        }                                                                                          \
    } while (0)

static const struct resp_limits small_limits = {
    .multibulk_max = 4,
    .bulk_max = 4,
    .bulk_hard_max = 64,
    .inline_max = 8,
};

static void tr_bytes(struct buf *t, const void *p, size_t n)
{
    const uint8_t *s = p;

    for (size_t i = 0; i < n; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\') {
            CHECK(buf_append(t, &s[i], 1) == 0);
        } else {
            CHECK(buf_printf(t, "\\x%02x", s[i]) == 0);
        }
    }
}

static void tr_head(struct buf *t, size_t argc, bool is_inline, bool too_big, size_t too_big_len)
{
    CHECK(buf_printf(t, "command argc=%zu inline=%d too_big=%d", argc, is_inline, too_big) == 0);
    if (too_big) {
        CHECK(buf_printf(t, " declared=%zu", too_big_len) == 0);
    }
    CHECK(buf_append_str(t, "\n") == 0);
}

static void tr_arg(struct buf *t, const void *p, size_t n)
{
    CHECK(buf_printf(t, "  [%zu] ", n) == 0);
    tr_bytes(t, p, n);
    CHECK(buf_append_str(t, "\n") == 0);
}

static void tr_end(struct buf *t, const char *error)
{
    if (error == NULL) {
        CHECK(buf_append_str(t, "end need_more\n") == 0);
    } else {
        CHECK(buf_printf(t, "end error %s\n", error) == 0);
    }
}

static void tr_command(struct buf *t, const struct resp_cmd *c)
{
    tr_head(t, c->argc, c->is_inline, c->too_big, c->too_big_len);
    for (size_t i = 0; i < c->argc; i++) {
        CHECK(c->argv[i].p[c->argv[i].len] == '\0');
        tr_arg(t, c->argv[i].p, c->argv[i].len);
    }
}

static void tr_expected(struct buf *t, const struct exp_cmd *exp, size_t n, const char *error)
{
    for (size_t i = 0; i < n; i++) {
        tr_head(t, exp[i].argc, exp[i].is_inline, exp[i].too_big, exp[i].too_big_len);
        for (size_t k = 0; k < exp[i].argc; k++) {
            tr_arg(t, exp[i].argv[k].p, exp[i].argv[k].len);
        }
    }
    tr_end(t, error);
}

/* Feed one chunk, in its own allocation; false once the parser has failed. */
static bool feed(struct resp_parser *p, const uint8_t *chunk, size_t len, struct buf *t)
{
    uint8_t *copy = malloc(len > 0 ? len : 1);
    size_t at = 0, used;
    struct resp_cmd *c;
    enum resp_status st;

    CHECK(copy != NULL);
    memcpy(copy, chunk, len);
    for (;;) {
        st = resp_parse(p, copy + at, len - at, &used, &c);
        CHECK(used <= len - at);
        if (st != RESP_COMMAND) {
            break;
        }
        CHECK(used > 0);
        tr_command(t, c);
        resp_cmd_free(c);
        at += used;
    }
    free(copy);
    if (st == RESP_PROTOCOL_ERROR) {
        tr_end(t, p->error);
        return false;
    }
    CHECK(used == len - at);
    CHECK(c == NULL);
    return true;
}

/* Run in over chunks ending at ends[0..n) (the last one is len). */
static void run_chunks(const struct resp_limits *lim, const uint8_t *in, const size_t *ends,
                       size_t n, struct buf *t)
{
    struct resp_parser p;
    size_t at = 0;
    bool ok = true;

    resp_parser_init(&p, lim);
    for (size_t i = 0; i < n && ok; i++) {
        ok = feed(&p, in + at, ends[i] - at, t);
        at = ends[i];
    }
    if (ok) {
        tr_end(t, NULL);
    }
    resp_parser_deinit(&p);
}

static void assert_same(const struct buf *got, const struct buf *want, const char *how, size_t k)
{
    if (got->len != want->len || memcmp(buf_data(got), buf_data(want), got->len) != 0) {
        ck_abort_msg("%s %zu gave\n%.*s\nexpected\n%.*s", how, k, (int)got->len,
                     (const char *)buf_data(got), (int)want->len, (const char *)buf_data(want));
    }
}

/* in[0..len) in one piece, split at every boundary, and byte by byte, must all give want. */
static void check_splits(const struct resp_limits *lim, const void *in, size_t len,
                         const struct buf *want)
{
    size_t *ends = malloc((len + 1) * sizeof(*ends));
    struct buf got;

    CHECK(ends != NULL);
    buf_init(&got, 0);
    for (size_t k = 0; k <= len; k++) {
        ends[0] = k;
        ends[1] = len;
        buf_clear(&got);
        run_chunks(lim, in, ends, 2, &got);
        assert_same(&got, want, "split at", k);
    }
    for (size_t k = 0; k < len; k++) {
        ends[k] = k + 1;
    }
    buf_clear(&got);
    run_chunks(lim, in, ends, len, &got);
    assert_same(&got, want, "byte by byte, length", len);
    buf_free(&got);
    free(ends);
}

static void expect_parse(const struct resp_limits *lim, const char *in, size_t len,
                         const struct exp_cmd *exp, size_t n, const char *error)
{
    struct buf want;

    buf_init(&want, 0);
    tr_expected(&want, exp, n, error);
    check_splits(lim, in, len, &want);
    buf_free(&want);
}

/* --- requests --------------------------------------------------------------- */

START_TEST(test_multibulk)
{
    expect_parse(NULL, IN("*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n"),
                 CMDS(MB(A("SET"), A("key"), A("value"))), NULL);
    expect_parse(NULL, IN("*1\r\n$4\r\nPING\r\n"), CMDS(MB(A("PING"))), NULL);
}
END_TEST

START_TEST(test_multibulk_empty_arg)
{
    expect_parse(NULL, IN("*3\r\n$3\r\nSET\r\n$0\r\n\r\n$0\r\n\r\n"),
                 CMDS(MB(A("SET"), A(""), A(""))), NULL);
}
END_TEST

START_TEST(test_multibulk_binary_arg)
{
    expect_parse(NULL, IN("*2\r\n$4\r\nECHO\r\n$7\r\na\r\n\0b\r\n\r\n"),
                 CMDS(MB(A("ECHO"), A("a\r\n\0b\r\n"))), NULL);
    expect_parse(NULL, IN("*1\r\n$3\r\n\0\0\0\r\n"), CMDS(MB(A("\0\0\0"))), NULL);
}
END_TEST

START_TEST(test_multibulk_partial)
{
    expect_parse(NULL, IN("*2\r\n$3\r\nGET\r\n$3\r\nke"), NO_CMDS, NULL);
    expect_parse(NULL, IN("*2\r\n$3\r\nGET\r\n$3\r\nkey\r"), NO_CMDS, NULL);
}
END_TEST

START_TEST(test_inline)
{
    expect_parse(NULL, IN("PING\r\n"), CMDS(IL(A("PING"))), NULL);
    expect_parse(NULL, IN("SET a b\n"), CMDS(IL(A("SET"), A("a"), A("b"))), NULL);
    expect_parse(NULL, IN("  GET\t key  \r\n"), CMDS(IL(A("GET"), A("key"))), NULL);
    expect_parse(NULL, IN("$2000000000\r\n"), CMDS(IL(A("$2000000000"))), NULL);
}
END_TEST

START_TEST(test_inline_quoted)
{
    expect_parse(NULL, IN("SET \"a b\" 'c d'\r\n"), CMDS(IL(A("SET"), A("a b"), A("c d"))), NULL);
    expect_parse(NULL, IN("ECHO \"\\x41\\x7a\\n\\r\\t\\b\\a\\\"\\\\\\q\" \"\\x4\" \"\\xzz\"\r\n"),
                 CMDS(IL(A("ECHO"), A("Az\n\r\t\b\a\"\\q"), A("x4"), A("xzz"))), NULL);
    expect_parse(NULL, IN("ECHO 'it\\'s' 'a\\nb' '\"'\r\n"),
                 CMDS(IL(A("ECHO"), A("it's"), A("a\\nb"), A("\""))), NULL);
    expect_parse(NULL, IN("ECHO \"\" ''\r\n"), CMDS(IL(A("ECHO"), A(""), A(""))), NULL);
    expect_parse(NULL, IN("ECHO ab\"c d\"\r\n"), CMDS(IL(A("ECHO"), A("abc d"))), NULL);
    expect_parse(NULL, IN("ECHO \"a\"\t'b'\r\n"), CMDS(IL(A("ECHO"), A("a"), A("b"))), NULL);
}
END_TEST

START_TEST(test_inline_unbalanced_quotes)
{
    static const char err[] = "Protocol error: unbalanced quotes in request";

    expect_parse(NULL, IN("SET \"abc\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("SET 'abc\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("GET \"a\"b\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("GET 'a'b\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("GET \"a\\\"\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("PING\r\nGET \"\r\nPING\r\n"), CMDS(IL(A("PING"))), err);
}
END_TEST

START_TEST(test_inline_empty_lines_skipped)
{
    expect_parse(NULL, IN("\r\n\n   \r\n\t\nPING\r\n\r\n"), CMDS(IL(A("PING"))), NULL);
    expect_parse(NULL, IN("\r\n"), NO_CMDS, NULL);
}
END_TEST

START_TEST(test_inline_nul)
{
    expect_parse(NULL, IN("\0"), NO_CMDS, NULL);
    expect_parse(NULL, IN("\0\r\n"), CMDS(IL(A("\0"))), NULL);
    expect_parse(NULL, IN("A\0B C\r\n"), CMDS(IL(A("A\0B"), A("C"))), NULL);
}
END_TEST

START_TEST(test_pipeline)
{
    expect_parse(NULL,
                 IN("*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
                    "PING\r\n"
                    "*0\r\n"
                    "*-1\r\n"
                    "*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$2\r\n\r\n\r\n"
                    "\r\n"
                    "ECHO \"x y\"\n"
                    "*1\r\n$4\r\nQUIT\r\n"),
                 CMDS(MB(A("GET"), A("a")), IL(A("PING")), MB(A("SET"), A("b"), A("\r\n")),
                      IL(A("ECHO"), A("x y")), MB(A("QUIT"))),
                 NULL);
}
END_TEST

START_TEST(test_pipeline_many)
{
    struct buf in, want;
    char key[32];
    const char *argv[3] = {"SET", key, "v"};

    buf_init(&in, 0);
    buf_init(&want, 0);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "key:%d", i);
        if (i % 3 == 0) {
            ck_assert_int_eq(buf_printf(&in, "SET %s v\r\n", key), 0);
        } else {
            ck_assert_int_eq(resp_put_command(&in, 3, argv, NULL), 0);
        }
        tr_head(&want, 3, i % 3 == 0, false, 0);
        for (int k = 0; k < 3; k++) {
            tr_arg(&want, argv[k], strlen(argv[k]));
        }
    }
    tr_end(&want, NULL);
    check_splits(NULL, buf_data(&in), in.len, &want);
    buf_free(&in);
    buf_free(&want);
}
END_TEST

START_TEST(test_used_per_command)
{
    static const char in[] = "PING\r\n*1\r\n$4\r\nPING\r\nPI";
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)in, sizeof(in) - 1, &used, &c), RESP_COMMAND);
    ck_assert_uint_eq(used, 6);
    resp_cmd_free(c);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)in + 6, sizeof(in) - 7, &used, &c),
                     RESP_COMMAND);
    ck_assert_uint_eq(used, 14);
    resp_cmd_free(c);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)in + 20, 2, &used, &c), RESP_NEED_MORE);
    ck_assert_uint_eq(used, 2);
    ck_assert_ptr_null(c);
    resp_parser_deinit(&p);
}
END_TEST

START_TEST(test_empty_multibulk_skipped)
{
    expect_parse(NULL, IN("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n"), CMDS(MB(A("PING"))), NULL);
    expect_parse(NULL, IN("*-1\r\n"), NO_CMDS, NULL);
}
END_TEST

/* A negative count other than -1 means nothing: a protocol error. */
START_TEST(test_negative_multibulk_refused)
{
    expect_parse(NULL, IN("*-10\r\n"), NO_CMDS, "Protocol error: invalid multibulk length");
    expect_parse(NULL, IN("*1\r\n$4\r\nPING\r\n*-2\r\n"), CMDS(MB(A("PING"))),
                 "Protocol error: invalid multibulk length");
}
END_TEST

START_TEST(test_multibulk_max)
{
    static const char err[] = "Protocol error: invalid multibulk length";

    expect_parse(NULL, IN("*20000000\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1048577\r\n"), NO_CMDS, err);
    expect_parse(&small_limits, IN("*5\r\n"), NO_CMDS, err);
    expect_parse(&small_limits, IN("*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
                 CMDS(MB(A("a"), A("b"), A("c"), A("d"))), NULL);
}
END_TEST

START_TEST(test_bad_multibulk_length)
{
    static const char err[] = "Protocol error: invalid multibulk length";

    expect_parse(NULL, IN("*abc\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1x\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*01\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*+1\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*-0\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\rX"), NO_CMDS, err);
    expect_parse(NULL, IN("*99999999999999999999\r\n"), NO_CMDS, err);
    /* Longer than any number: refused before its CR arrives. */
    expect_parse(NULL, IN("*11111111111111111111111111111111111"), NO_CMDS, err);
}
END_TEST

START_TEST(test_bad_bulk_length)
{
    static const char err[] = "Protocol error: invalid bulk length";

    expect_parse(NULL, IN("*1\r\n$blabla\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$-1\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$-5\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$03\r\nabc\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$3\nabc\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$3\rabc"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$2000000000\r\n"), NO_CMDS, err);
    expect_parse(NULL, IN("*2\r\n$3\r\nGET\r\n$x\r\n"), NO_CMDS, err);
}
END_TEST

START_TEST(test_expected_dollar)
{
    expect_parse(NULL, IN("*1\r\nxyz\r\n"), NO_CMDS, "Protocol error: expected '$', got 'x'");
    expect_parse(NULL, IN("*2\r\n$1\r\na\r\n:1\r\n"), NO_CMDS,
                 "Protocol error: expected '$', got ':'");
    expect_parse(NULL, IN("*1\r\n\r\n"), NO_CMDS, "Protocol error: expected '$', got '\\x0d'");
    expect_parse(NULL, IN("*1\r\n\0"), NO_CMDS, "Protocol error: expected '$', got '\\x00'");
}
END_TEST

START_TEST(test_bulk_crlf)
{
    static const char err[] = "Protocol error: bulk not followed by CRLF";

    expect_parse(NULL, IN("*1\r\n$3\r\nabcXY"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$3\r\nabc\rX"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$3\r\nabc\n\r"), NO_CMDS, err);
    expect_parse(NULL, IN("*1\r\n$2\r\nabc\r\n"), NO_CMDS, err);
}
END_TEST

START_TEST(test_bulk_too_big_discarded)
{
    expect_parse(&small_limits,
                 IN("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n"
                    "*1\r\n$4\r\nPING\r\n"),
                 CMDS(BIG(10, A("SET"), A("k"), A("")), MB(A("PING"))), NULL);
    /* The first oversized length is reported; later arguments are still read. */
    expect_parse(&small_limits,
                 IN("*4\r\n$5\r\nHELLO\r\n$64\r\n"
                    "0123456789012345678901234567890123456789012345678901234567890123\r\n"
                    "$2\r\nok\r\n$0\r\n\r\n"),
                 CMDS(BIG(5, A(""), A(""), A("ok"), A(""))), NULL);
    /* A skipped argument still needs its CRLF. */
    expect_parse(&small_limits, IN("*1\r\n$6\r\nabcdefXY"), NO_CMDS,
                 "Protocol error: bulk not followed by CRLF");
}
END_TEST

START_TEST(test_bulk_hard_max)
{
    expect_parse(&small_limits, IN("*1\r\n$65\r\n"), NO_CMDS,
                 "Protocol error: invalid bulk length");
    expect_parse(&small_limits, IN("*1\r\n$5\r\nabcde\r\n"), CMDS(BIG(5, A(""))), NULL);
    expect_parse(&small_limits, IN("*1\r\n$4\r\nabcd\r\n"), CMDS(MB(A("abcd"))), NULL);
}
END_TEST

/* Skipping a large argument keeps nothing of it, however it arrives. */
START_TEST(test_discard_does_not_buffer)
{
    static const struct resp_limits lim = {16, 1024, 1u << 30, 64};
    static const char head[] = "*2\r\n$3\r\nSET\r\n$100000000\r\n";
    uint8_t *chunk = malloc(1 << 20);
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    ck_assert_ptr_nonnull(chunk);
    memset(chunk, 'x', 1 << 20);
    resp_parser_init(&p, &lim);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)head, sizeof(head) - 1, &used, &c),
                     RESP_NEED_MORE);
    for (int i = 0; i < 95; i++) {
        ck_assert_int_eq(resp_parse(&p, chunk, 1 << 20, &used, &c), RESP_NEED_MORE);
        ck_assert_uint_le(p.cur->arena_cap, 256);
    }
    ck_assert_int_eq(resp_parse(&p, chunk, 100000000 - 95 * (1 << 20), &used, &c), RESP_NEED_MORE);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)"\r\n", 2, &used, &c), RESP_COMMAND);
    ck_assert(c->too_big);
    ck_assert_uint_eq(c->too_big_len, 100000000);
    ck_assert(resp_arg_is(c, 0, "set"));
    ck_assert_uint_eq(c->argv[1].len, 0);
    resp_cmd_free(c);
    resp_parser_deinit(&p);
    free(chunk);
}
END_TEST

/* A declared length within bulk_max reserves a bounded amount until its bytes arrive. */
START_TEST(test_declared_length_not_trusted)
{
    static const char head[] = "*1\r\n$500000000\r\nab";
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)head, sizeof(head) - 1, &used, &c),
                     RESP_NEED_MORE);
    ck_assert_uint_le(p.cur->arena_cap, 128 * 1024);
    ck_assert_uint_le(p.cur->argv_cap, 16);
    resp_parser_deinit(&p);
    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)"*1000000\r\n$1\r\n", 14, &used, &c),
                     RESP_NEED_MORE);
    ck_assert_uint_le(p.cur->argv_cap, 16);
    resp_parser_deinit(&p);
}
END_TEST

START_TEST(test_inline_max)
{
    static const char err[] = "Protocol error: too big inline request";

    expect_parse(&small_limits, IN("12345678\n"), CMDS(IL(A("12345678"))), NULL);
    expect_parse(&small_limits, IN("1234567\r\n"), CMDS(IL(A("1234567"))), NULL);
    expect_parse(&small_limits, IN("12345678\r\n"), NO_CMDS, err);
    expect_parse(&small_limits, IN("123456789"), NO_CMDS, err);
    expect_parse(&small_limits, IN("A B\r\nC D E F G H\r\n"), CMDS(IL(A("A"), A("B"))), err);
    expect_parse(NULL, IN("PING\r\n"), CMDS(IL(A("PING"))), NULL);
}
END_TEST

/* 64 KiB of inline without a newline is refused, with Redis's default limit. */
START_TEST(test_inline_max_default)
{
    size_t n = RESP_INLINE_MAX_DEFAULT + 1;
    uint8_t *in = malloc(n);
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    ck_assert_ptr_nonnull(in);
    memset(in, 'a', n);
    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, in, n - 1, &used, &c), RESP_NEED_MORE);
    ck_assert_int_eq(resp_parse(&p, in, 1, &used, &c), RESP_PROTOCOL_ERROR);
    ck_assert_str_eq(p.error, "Protocol error: too big inline request");
    resp_parser_deinit(&p);
    free(in);
}
END_TEST

START_TEST(test_error_is_final)
{
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)"*x\r\n", 4, &used, &c), RESP_PROTOCOL_ERROR);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(p.error, "Protocol error: invalid multibulk length");
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)"PING\r\n", 6, &used, &c),
                     RESP_PROTOCOL_ERROR);
    ck_assert_uint_eq(used, 0);
    ck_assert_int_eq(resp_parse(&p, NULL, 0, &used, &c), RESP_PROTOCOL_ERROR);
    resp_parser_deinit(&p);
}
END_TEST

START_TEST(test_deinit_mid_command)
{
    static const char half[] = "*2\r\n$3\r\nGET\r\n$5\r\nab";
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)half, sizeof(half) - 1, &used, &c),
                     RESP_NEED_MORE);
    resp_parser_deinit(&p);
    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)"SET a", 5, &used, &c), RESP_NEED_MORE);
    resp_parser_deinit(&p);
    resp_cmd_free(NULL);
}
END_TEST

START_TEST(test_arg_is)
{
    struct resp_parser p;
    struct resp_cmd *c;
    size_t used;

    resp_parser_init(&p, NULL);
    ck_assert_int_eq(resp_parse(&p, (const uint8_t *)"gEt Key\r\n", 9, &used, &c), RESP_COMMAND);
    ck_assert(resp_arg_is(c, 0, "GET"));
    ck_assert(resp_arg_is(c, 0, "get"));
    ck_assert(resp_arg_is(c, 1, "KEY"));
    ck_assert(!resp_arg_is(c, 0, "GETS"));
    ck_assert(!resp_arg_is(c, 0, "GE"));
    ck_assert(!resp_arg_is(c, 2, "GET"));
    resp_cmd_free(c);
    resp_parser_deinit(&p);
}
END_TEST

/* A random argument: bytes that matter to the parser (CR, LF, NUL, quotes, '$', '*') are common. */
static size_t rand_arg(uint8_t *out, size_t max)
{
    static const uint8_t alphabet[] = "\r\n\0 \"'$*:abcXYZ019";
    size_t n = rng_below_size(max + 1);

    for (size_t i = 0; i < n; i++) {
        out[i] = alphabet[rng_below_size(sizeof(alphabet) - 1)];
    }
    return n;
}

static void rand_pipeline(struct buf *in, struct buf *want)
{
    uint8_t args[5][40];
    const char *argv[5];
    size_t lens[5];

    for (int i = 0; i < PIPELINE_COMMANDS; i++) {
        size_t argc = 1 + rng_below_size(5);
        for (size_t k = 0; k < argc; k++) {
            lens[k] = rand_arg(args[k], sizeof(args[k]));
            argv[k] = (const char *)args[k];
        }
        ck_assert_int_eq(resp_put_command(in, argc, argv, lens), 0);
        tr_head(want, argc, false, false, 0);
        for (size_t k = 0; k < argc; k++) {
            tr_arg(want, argv[k], lens[k]);
        }
    }
    tr_end(want, NULL);
}

START_TEST(test_random_pipelines)
{
    struct buf in, want, got;
    size_t *ends = NULL;

    buf_init(&in, 0);
    buf_init(&want, 0);
    buf_init(&got, 0);
    for (int trial = 0; trial < PIPELINE_TRIALS; trial++) {
        size_t n = 0;
        buf_clear(&in);
        buf_clear(&want);
        buf_clear(&got);
        rand_pipeline(&in, &want);
        free(ends);
        ends = malloc(in.len * sizeof(*ends));
        ck_assert_ptr_nonnull(ends);
        for (size_t at = 0; at < in.len; n++) {
            at += 1 + rng_below_size(trial % 2 ? 3 : 200);
            ends[n] = at < in.len ? at : in.len;
            at = ends[n];
        }
        run_chunks(NULL, buf_data(&in), ends, n, &got);
        assert_same(&got, &want, "random pipeline, trial", (size_t)trial);
    }
    free(ends);
    buf_free(&in);
    buf_free(&want);
    buf_free(&got);
}
END_TEST

/* --- reply encoders ---------------------------------------------------------- */

/* b holds exactly want; then b is emptied for the next golden check. */
static void golden(struct buf *b, const char *want, size_t n)
{
    ck_assert_msg(b->len == n && memcmp(buf_data(b), want, n) == 0, "wrote '%.*s', expected '%.*s'",
                  (int)b->len, (const char *)buf_data(b), (int)n, want);
    buf_clear(b);
}

START_TEST(test_put_simple_and_error)
{
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_simple(&b, "OK"), 0);
    golden(&b, IN("+OK\r\n"));
    ck_assert_int_eq(resp_put_simple(&b, "a\r\nb"), 0);
    golden(&b, IN("+a  b\r\n"));
    ck_assert_int_eq(resp_put_error(&b, "ERR unknown command"), 0);
    golden(&b, IN("-ERR unknown command\r\n"));
    ck_assert_int_eq(resp_put_error(&b, "ERR x\ny"), 0);
    golden(&b, IN("-ERR x y\r\n"));
    buf_free(&b);
}
END_TEST

START_TEST(test_put_errorf)
{
    struct buf b;
    char big[600];

    buf_init(&b, 0);
    ck_assert_int_eq(
        resp_put_errorf(&b, "ERR unknown command '%s', with args beginning with: %d", "x\r\ny", 3),
        0);
    golden(&b, IN("-ERR unknown command 'x  y', with args beginning with: 3\r\n"));
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    big[300] = '\n';
    ck_assert_int_eq(resp_put_errorf(&b, "ERR %s", big), 0);
    ck_assert_uint_eq(b.len, 1 + 4 + sizeof(big) - 1 + 2);
    ck_assert(memchr(buf_data(&b), '\n', b.len - 1) == NULL);
    ck_assert_int_eq(buf_data(&b)[b.len - 1], '\n');
    buf_free(&b);
}
END_TEST

START_TEST(test_put_int)
{
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_int(&b, 0), 0);
    golden(&b, IN(":0\r\n"));
    ck_assert_int_eq(resp_put_int(&b, -1), 0);
    golden(&b, IN(":-1\r\n"));
    ck_assert_int_eq(resp_put_int(&b, INT64_MAX), 0);
    golden(&b, IN(":9223372036854775807\r\n"));
    ck_assert_int_eq(resp_put_int(&b, INT64_MIN), 0);
    golden(&b, IN(":-9223372036854775808\r\n"));
    buf_free(&b);
}
END_TEST

START_TEST(test_put_bulk)
{
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_bulk(&b, "foo", 3), 0);
    golden(&b, IN("$3\r\nfoo\r\n"));
    ck_assert_int_eq(resp_put_bulk(&b, "", 0), 0);
    golden(&b, IN("$0\r\n\r\n"));
    ck_assert_int_eq(resp_put_bulk(&b, "a\r\n\0b", 5), 0);
    golden(&b, IN("$5\r\na\r\n\0b\r\n"));
    ck_assert_int_eq(resp_put_bulk_str(&b, "hello"), 0);
    golden(&b, IN("$5\r\nhello\r\n"));
    buf_free(&b);
}
END_TEST

START_TEST(test_put_null_and_bool)
{
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_null(&b, 2), 0);
    golden(&b, IN("$-1\r\n"));
    ck_assert_int_eq(resp_put_null(&b, 3), 0);
    golden(&b, IN("_\r\n"));
    ck_assert_int_eq(resp_put_bool(&b, true, 2), 0);
    golden(&b, IN(":1\r\n"));
    ck_assert_int_eq(resp_put_bool(&b, false, 2), 0);
    golden(&b, IN(":0\r\n"));
    ck_assert_int_eq(resp_put_bool(&b, true, 3), 0);
    golden(&b, IN("#t\r\n"));
    ck_assert_int_eq(resp_put_bool(&b, false, 3), 0);
    golden(&b, IN("#f\r\n"));
    buf_free(&b);
}
END_TEST

START_TEST(test_put_aggregates)
{
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_array(&b, 2), 0);
    golden(&b, IN("*2\r\n"));
    ck_assert_int_eq(resp_put_array(&b, 0), 0);
    golden(&b, IN("*0\r\n"));
    ck_assert_int_eq(resp_put_map(&b, 2, 3), 0);
    golden(&b, IN("%2\r\n"));
    ck_assert_int_eq(resp_put_map(&b, 2, 2), 0);
    golden(&b, IN("*4\r\n"));
    ck_assert_int_eq(resp_put_set(&b, 3, 3), 0);
    golden(&b, IN("~3\r\n"));
    ck_assert_int_eq(resp_put_set(&b, 3, 2), 0);
    golden(&b, IN("*3\r\n"));
    buf_free(&b);
}
END_TEST

START_TEST(test_put_double)
{
    static const struct {
        double v;
        const char *resp3, *resp2;
    } cases[] = {
        {1.5, ",1.5\r\n", "$3\r\n1.5\r\n"},
        {0.1, ",0.1\r\n", "$3\r\n0.1\r\n"},
        {3.0, ",3\r\n", "$1\r\n3\r\n"},
        {-0.0, ",-0\r\n", "$2\r\n-0\r\n"},
        {1e300, ",1e+300\r\n", "$6\r\n1e+300\r\n"},
        {1.0 / 3.0, ",0.3333333333333333\r\n", "$18\r\n0.3333333333333333\r\n"},
        {INFINITY, ",inf\r\n", "$3\r\ninf\r\n"},
        {-INFINITY, ",-inf\r\n", "$4\r\n-inf\r\n"},
        {NAN, ",nan\r\n", "$3\r\nnan\r\n"},
    };
    struct buf b;

    buf_init(&b, 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(resp_put_double(&b, cases[i].v, 3), 0);
        golden(&b, cases[i].resp3, strlen(cases[i].resp3));
        ck_assert_int_eq(resp_put_double(&b, cases[i].v, 2), 0);
        golden(&b, cases[i].resp2, strlen(cases[i].resp2));
    }
    buf_free(&b);
}
END_TEST

START_TEST(test_put_verbatim)
{
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_verbatim(&b, "Some string", 11, 3), 0);
    golden(&b, IN("=15\r\ntxt:Some string\r\n"));
    ck_assert_int_eq(resp_put_verbatim(&b, "Some string", 11, 2), 0);
    golden(&b, IN("$11\r\nSome string\r\n"));
    buf_free(&b);
}
END_TEST

START_TEST(test_put_command)
{
    static const char *const argv[] = {"SET", "k", "a\0b"};
    static const size_t lens[] = {3, 1, 3};
    struct buf b;

    buf_init(&b, 0);
    ck_assert_int_eq(resp_put_command(&b, 3, argv, lens), 0);
    golden(&b, IN("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\na\0b\r\n"));
    ck_assert_int_eq(resp_put_command(&b, 2, argv, NULL), 0);
    golden(&b, IN("*2\r\n$3\r\nSET\r\n$1\r\nk\r\n"));
    ck_assert_int_eq(resp_put_command(&b, 0, argv, NULL), 0);
    golden(&b, IN("*0\r\n"));
    buf_free(&b);
}
END_TEST

/* At the buffer's cap an encoder fails with RK_ETOOBIG and writes nothing of its item. */
START_TEST(test_put_all_or_nothing)
{
    static const char *const argv[] = {"SET", "key", "value"};
    struct buf b;

    buf_init(&b, 16);
    ck_assert_int_eq(resp_put_simple(&b, "OK"), 0);
    ck_assert_int_eq(resp_put_bulk(&b, "0123456789", 10), RK_ETOOBIG);
    ck_assert_int_eq(resp_put_command(&b, 3, argv, NULL), RK_ETOOBIG);
    ck_assert_int_eq(resp_put_verbatim(&b, "abcdef", 6, 3), RK_ETOOBIG);
    ck_assert_int_eq(resp_put_double(&b, 0.1, 3), 0);
    ck_assert_int_eq(resp_put_double(&b, 1.0 / 3.0, 3), RK_ETOOBIG);
    ck_assert_int_eq(resp_put_errorf(&b, "ERR %s", "too long for the rest"), RK_ETOOBIG);
    golden(&b, IN("+OK\r\n,0.1\r\n"));
    buf_free(&b);
}
END_TEST

/* --- reply parser ----------------------------------------------------------- */

/* in parses as one reply using all of it, and every strict prefix as incomplete. */
static struct resp_reply *reply_ok(const char *in, size_t len)
{
    struct resp_reply *r;
    size_t used;

    for (size_t k = 0; k < len; k++) {
        ck_assert_msg(resp_reply_parse((const uint8_t *)in, k, 1 << 20, &used, &r) == 0,
                      "prefix %zu of '%.*s' is not incomplete", k, (int)len, in);
        ck_assert_uint_eq(used, 0);
        ck_assert_ptr_null(r);
    }
    ck_assert_int_eq(resp_reply_parse((const uint8_t *)in, len, 1 << 20, &used, &r), 1);
    ck_assert_uint_eq(used, len);
    ck_assert_ptr_nonnull(r);
    return r;
}

static void reply_fails(const char *in, size_t len, size_t max_bulk, int err)
{
    struct resp_reply *r;
    size_t used = 99;

    ck_assert_msg(resp_reply_parse((const uint8_t *)in, len, max_bulk, &used, &r) == err,
                  "'%.*s' did not fail with %d", (int)len, in, err);
    ck_assert_uint_eq(used, 0);
    ck_assert_ptr_null(r);
}

static void assert_str(const struct resp_reply *r, enum resp_type type, const char *s, size_t n)
{
    ck_assert_int_eq(r->type, type);
    ck_assert_uint_eq(r->len, n);
    ck_assert_mem_eq(r->str, s, n);
    ck_assert_int_eq(r->str[n], '\0');
}

START_TEST(test_reply_strings)
{
    struct resp_reply *r;

    r = reply_ok(IN("+OK\r\n"));
    assert_str(r, RESP_T_SIMPLE, IN("OK"));
    resp_reply_free(r);
    r = reply_ok(IN("-ERR wrong\r\n"));
    assert_str(r, RESP_T_ERROR, IN("ERR wrong"));
    resp_reply_free(r);
    r = reply_ok(IN("!9\r\nERR a\r\nbc\r\n"));
    assert_str(r, RESP_T_ERROR, IN("ERR a\r\nbc"));
    resp_reply_free(r);
    r = reply_ok(IN("$5\r\na\0b\r\n\r\n"));
    assert_str(r, RESP_T_BULK, IN("a\0b\r\n"));
    resp_reply_free(r);
    r = reply_ok(IN("$0\r\n\r\n"));
    assert_str(r, RESP_T_BULK, IN(""));
    resp_reply_free(r);
    r = reply_ok(IN("=15\r\ntxt:Some string\r\n"));
    assert_str(r, RESP_T_VERBATIM, IN("Some string"));
    resp_reply_free(r);
    r = reply_ok(IN("(-3492890328409238509324850943850943825024385\r\n"));
    assert_str(r, RESP_T_BIGNUM, IN("-3492890328409238509324850943850943825024385"));
    resp_reply_free(r);
}
END_TEST

START_TEST(test_reply_numbers)
{
    struct resp_reply *r;

    r = reply_ok(IN(":-9223372036854775808\r\n"));
    ck_assert_int_eq(r->type, RESP_T_INT);
    ck_assert_int_eq(r->integer, INT64_MIN);
    resp_reply_free(r);
    r = reply_ok(IN("#t\r\n"));
    ck_assert_int_eq(r->type, RESP_T_BOOL);
    ck_assert_int_eq(r->integer, 1);
    resp_reply_free(r);
    r = reply_ok(IN("#f\r\n"));
    ck_assert_int_eq(r->integer, 0);
    resp_reply_free(r);
    r = reply_ok(IN(",1.5e3\r\n"));
    ck_assert_int_eq(r->type, RESP_T_DOUBLE);
    ck_assert(r->dbl == 1500.0);
    resp_reply_free(r);
    r = reply_ok(IN(",-inf\r\n"));
    ck_assert(isinf(r->dbl) && r->dbl < 0);
    resp_reply_free(r);
    r = reply_ok(IN(",nan\r\n"));
    ck_assert(isnan(r->dbl));
    resp_reply_free(r);
}
END_TEST

START_TEST(test_reply_nulls)
{
    static const char *const nulls[] = {"_\r\n", "$-1\r\n", "*-1\r\n"};
    struct resp_reply *r;

    for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++) {
        r = reply_ok(nulls[i], strlen(nulls[i]));
        ck_assert_int_eq(r->type, RESP_T_NULL);
        ck_assert_ptr_null(r->elem);
        resp_reply_free(r);
    }
}
END_TEST

START_TEST(test_reply_aggregates)
{
    struct resp_reply *r;

    r = reply_ok(IN("*3\r\n*2\r\n:1\r\n:2\r\n%1\r\n+k\r\n$1\r\nv\r\n~0\r\n"));
    ck_assert_int_eq(r->type, RESP_T_ARRAY);
    ck_assert_uint_eq(r->n, 3);
    ck_assert_int_eq(r->elem[0]->type, RESP_T_ARRAY);
    ck_assert_int_eq(r->elem[0]->elem[1]->integer, 2);
    ck_assert_int_eq(r->elem[1]->type, RESP_T_MAP);
    ck_assert_uint_eq(r->elem[1]->n, 1);
    assert_str(r->elem[1]->elem[0], RESP_T_SIMPLE, IN("k"));
    assert_str(r->elem[1]->elem[1], RESP_T_BULK, IN("v"));
    ck_assert_int_eq(r->elem[2]->type, RESP_T_SET);
    ck_assert_uint_eq(r->elem[2]->n, 0);
    resp_reply_free(r);
    r = reply_ok(IN(">2\r\n+message\r\n_\r\n"));
    ck_assert_int_eq(r->type, RESP_T_PUSH);
    ck_assert_int_eq(r->elem[1]->type, RESP_T_NULL);
    resp_reply_free(r);
}
END_TEST

START_TEST(test_reply_attributes_skipped)
{
    struct resp_reply *r;

    r = reply_ok(IN("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n:5\r\n"));
    ck_assert_int_eq(r->type, RESP_T_INT);
    ck_assert_int_eq(r->integer, 5);
    resp_reply_free(r);
    r = reply_ok(IN("*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n"));
    ck_assert_uint_eq(r->n, 2);
    ck_assert_int_eq(r->elem[0]->integer, 1);
    resp_reply_free(r);
}
END_TEST

START_TEST(test_reply_pipeline)
{
    static const char in[] = "+OK\r\n:1\r\n";
    struct resp_reply *r;
    size_t used;

    ck_assert_int_eq(resp_reply_parse((const uint8_t *)in, sizeof(in) - 1, 64, &used, &r), 1);
    ck_assert_uint_eq(used, 5);
    resp_reply_free(r);
}
END_TEST

/* Encoder output, RESP3 and RESP2, read back by the reply parser. */
START_TEST(test_reply_round_trip)
{
    static const double doubles[] = {0.1, -2.5e-300, 1.0 / 3.0, 123456789.125, 0.0};
    struct resp_reply *r;
    struct buf b;

    buf_init(&b, 0);
    for (int proto = 2; proto <= 3; proto++) {
        ck_assert_int_eq(resp_put_map(&b, 2, proto), 0);
        ck_assert_int_eq(resp_put_bulk_str(&b, "n"), 0);
        ck_assert_int_eq(resp_put_null(&b, proto), 0);
        ck_assert_int_eq(resp_put_simple(&b, "s"), 0);
        ck_assert_int_eq(resp_put_set(&b, 2, proto), 0);
        ck_assert_int_eq(resp_put_bool(&b, true, proto), 0);
        ck_assert_int_eq(resp_put_verbatim(&b, "v", 1, proto), 0);
        r = reply_ok((const char *)buf_data(&b), b.len);
        ck_assert_int_eq(r->type, proto == 3 ? RESP_T_MAP : RESP_T_ARRAY);
        ck_assert_uint_eq(r->n, proto == 3 ? 2 : 4);
        ck_assert_int_eq(r->elem[1]->type, RESP_T_NULL);
        ck_assert_int_eq(r->elem[3]->elem[0]->type, proto == 3 ? RESP_T_BOOL : RESP_T_INT);
        ck_assert_int_eq(r->elem[3]->elem[0]->integer, 1);
        assert_str(r->elem[3]->elem[1], proto == 3 ? RESP_T_VERBATIM : RESP_T_BULK, IN("v"));
        resp_reply_free(r);
        buf_clear(&b);
    }
    for (size_t i = 0; i < sizeof(doubles) / sizeof(doubles[0]); i++) {
        ck_assert_int_eq(resp_put_double(&b, doubles[i], 3), 0);
        r = reply_ok((const char *)buf_data(&b), b.len);
        ck_assert(r->dbl == doubles[i]);
        resp_reply_free(r);
        buf_clear(&b);
    }
    buf_free(&b);
}
END_TEST

START_TEST(test_reply_malformed)
{
    static const char *const bad[] = {
        "?x\r\n",          ":abc\r\n", ":\r\n",    ":01\r\n",    ":1\rX",       "$3\r\nabcd\r\n",
        "$-2\r\n",         "$x\r\n",   "*-2\r\n",  "%-1\r\n",    "~-1\r\n",     ">-1\r\n",
        "#x\r\n",          "#tt\r\n",  "_x\r\n",   ",1.2.3\r\n", ",0x10\r\n",   ",infinity\r\n",
        ",\r\n",           ", 1\r\n",  "(12a\r\n", "(\r\n",      "(-\r\n",      "=3\r\ntxt\r\n",
        "=5\r\ntxtab\r\n", "$?\r\n",   "*?\r\n",   "+ok\rX",     "*1\r\n?\r\n", "|1\r\n+a\r\n?\r\n",
        "!-1\r\n",         "=-1\r\n",
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        reply_fails(bad[i], strlen(bad[i]), 1024, RK_ESYNTAX);
    }
    reply_fails(IN(":111111111111111111111111111111111111"), 64, RK_ESYNTAX);
    reply_fails(IN(":99999999999999999999\r\n"), 64, RK_ESYNTAX);
}
END_TEST

START_TEST(test_reply_oversized)
{
    struct buf b;
    struct resp_reply *r;
    size_t used;

    reply_fails(IN("$11\r\n"), 10, RK_ETOOBIG);
    reply_fails(IN("!11\r\n"), 10, RK_ETOOBIG);
    reply_fails(IN("+0123456789a"), 10, RK_ETOOBIG);
    reply_fails(IN("*1048577\r\n"), 10, RK_ETOOBIG);
    reply_fails(IN("%524289\r\n"), 10, RK_ETOOBIG);
    reply_fails(IN("*20000000000\r\n"), 10, RK_ETOOBIG);
    buf_init(&b, 0);
    for (int i = 0; i < RESP_REPLY_DEPTH_MAX; i++) {
        ck_assert_int_eq(resp_put_array(&b, 1), 0);
    }
    ck_assert_int_eq(resp_put_int(&b, 7), 0);
    ck_assert_int_eq(resp_reply_parse(buf_data(&b), b.len, 10, &used, &r), 1);
    resp_reply_free(r);
    buf_clear(&b);
    for (int i = 0; i <= RESP_REPLY_DEPTH_MAX; i++) {
        ck_assert_int_eq(resp_put_array(&b, 1), 0);
    }
    ck_assert_int_eq(resp_put_int(&b, 7), 0);
    reply_fails((const char *)buf_data(&b), b.len, 10, RK_ETOOBIG);
    buf_free(&b);
}
END_TEST

/* A count larger than the bytes could hold is "incomplete", decided before any allocation. */
START_TEST(test_reply_count_needs_bytes)
{
    struct resp_reply *r;
    size_t used;

    ck_assert_int_eq(
        resp_reply_parse((const uint8_t *)"*1000000\r\n:1\r\n:2\r\n", 18, 64, &used, &r), 0);
    ck_assert_uint_eq(used, 0);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(resp_reply_parse((const uint8_t *)"*3\r\n_\r\n_\r\n", 10, 64, &used, &r), 0);
    ck_assert_int_eq(resp_reply_parse((const uint8_t *)"*3\r\n_\r\n_\r\n_\r\n", 13, 64, &used, &r),
                     1);
    ck_assert_uint_eq(r->n, 3);
    resp_reply_free(r);
}
END_TEST

static Suite *resp_suite(void)
{
    Suite *s = suite_create("resp");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"multibulk", test_multibulk},
        {"multibulk_empty_arg", test_multibulk_empty_arg},
        {"multibulk_binary_arg", test_multibulk_binary_arg},
        {"multibulk_partial", test_multibulk_partial},
        {"inline", test_inline},
        {"inline_quoted", test_inline_quoted},
        {"inline_unbalanced_quotes", test_inline_unbalanced_quotes},
        {"inline_empty_lines_skipped", test_inline_empty_lines_skipped},
        {"inline_nul", test_inline_nul},
        {"pipeline", test_pipeline},
        {"pipeline_many", test_pipeline_many},
        {"used_per_command", test_used_per_command},
        {"empty_multibulk_skipped", test_empty_multibulk_skipped},
        {"negative_multibulk_refused", test_negative_multibulk_refused},
        {"multibulk_max", test_multibulk_max},
        {"bad_multibulk_length", test_bad_multibulk_length},
        {"bad_bulk_length", test_bad_bulk_length},
        {"expected_dollar", test_expected_dollar},
        {"bulk_crlf", test_bulk_crlf},
        {"bulk_too_big_discarded", test_bulk_too_big_discarded},
        {"bulk_hard_max", test_bulk_hard_max},
        {"discard_does_not_buffer", test_discard_does_not_buffer},
        {"declared_length_not_trusted", test_declared_length_not_trusted},
        {"inline_max", test_inline_max},
        {"inline_max_default", test_inline_max_default},
        {"error_is_final", test_error_is_final},
        {"deinit_mid_command", test_deinit_mid_command},
        {"arg_is", test_arg_is},
        {"random_pipelines", test_random_pipelines},
        {"put_simple_and_error", test_put_simple_and_error},
        {"put_errorf", test_put_errorf},
        {"put_int", test_put_int},
        {"put_bulk", test_put_bulk},
        {"put_null_and_bool", test_put_null_and_bool},
        {"put_aggregates", test_put_aggregates},
        {"put_double", test_put_double},
        {"put_verbatim", test_put_verbatim},
        {"put_command", test_put_command},
        {"put_all_or_nothing", test_put_all_or_nothing},
        {"reply_strings", test_reply_strings},
        {"reply_numbers", test_reply_numbers},
        {"reply_nulls", test_reply_nulls},
        {"reply_aggregates", test_reply_aggregates},
        {"reply_attributes_skipped", test_reply_attributes_skipped},
        {"reply_pipeline", test_reply_pipeline},
        {"reply_round_trip", test_reply_round_trip},
        {"reply_malformed", test_reply_malformed},
        {"reply_oversized", test_reply_oversized},
        {"reply_count_needs_bytes", test_reply_count_needs_bytes},
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
    SRunner *sr = srunner_create(resp_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
