/*
 * check_respc.c - unit tests of the CLI's RESP client (src/cli/respc.c).
 *
 * The display tests parse fixed RESP bytes and compare the human format
 * with what redis-cli 7.0 prints for the same bytes (checked by hand
 * against redis-cli --no-raw), and the JSON form with fixed documents.
 *
 * The client tests run a scripted server in a thread on a loopback port
 * the kernel picks: for each step it reads one command, records its words,
 * and answers with the step's bytes, a few at a time when the step says
 * so, or closes the connection.  That covers replies split anywhere,
 * AUTH before the first command, refusals, a server that closes or never
 * answers, and replies over the size bound.
 */
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "net.h"
#include "resp.h"
#include "respc.h"

/* --- display --------------------------------------------------------------------- */

#define S(lit) lit, sizeof(lit) - 1

static struct resp_reply *parse_reply(const char *in, size_t len)
{
    struct resp_reply *r = NULL;
    size_t used = 0;

    ck_assert_int_eq(resp_reply_parse((const uint8_t *)in, len, 1 << 20, &used, &r), 1);
    ck_assert_uint_eq(used, len);
    return r;
}

static void assert_format(const char *in, size_t len, const char *want)
{
    struct resp_reply *r = parse_reply(in, len);
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(respc_reply_format(&out, r), 0);
    ck_assert_int_eq(buf_append(&out, "", 1), 0);
    ck_assert_str_eq((const char *)buf_data(&out), want);
    buf_free(&out);
    resp_reply_free(r);
}

START_TEST(test_format_scalars)
{
    assert_format(S("+OK\r\n"), "OK\n");
    assert_format(S("-ERR bad\r\n"), "(error) ERR bad\n");
    assert_format(S(":-5\r\n"), "(integer) -5\n");
    assert_format(S("$-1\r\n"), "(nil)\n");
    assert_format(S("_\r\n"), "(nil)\n");
    assert_format(S("#t\r\n"), "(true)\n");
    assert_format(S("#f\r\n"), "(false)\n");
    assert_format(S(",3.25\r\n"), "(double) 3.25\n");
    assert_format(S(",0.1\r\n"), "(double) 0.1\n");
    assert_format(S(",1e+100\r\n"), "(double) 1e+100\n");
    assert_format(S(",-inf\r\n"), "(double) -inf\n");
    assert_format(S("(12345678901234567890\r\n"), "(big number) 12345678901234567890\n");
    assert_format(S("=15\r\ntxt:Some string\r\n"), "Some string\n");
}
END_TEST

/* Bulk strings are quoted and escaped as sdscatrepr() does. */
START_TEST(test_format_bulk_quoting)
{
    assert_format(S("$0\r\n\r\n"), "\"\"\n");
    assert_format(S("$5\r\nhello\r\n"), "\"hello\"\n");
    assert_format(S("$7\r\na\"b\\\n\x01\xff\r\n"), "\"a\\\"b\\\\\\n\\x01\\xff\"\n");
    assert_format(S("$5\r\n\t\r\a\b\x7f\r\n"), "\"\\t\\r\\a\\b\\x7f\"\n");
}
END_TEST

START_TEST(test_format_empty_aggregates)
{
    assert_format(S("*0\r\n"), "(empty array)\n");
    assert_format(S("%0\r\n"), "(empty hash)\n");
    assert_format(S("~0\r\n"), "(empty set)\n");
    assert_format(S(">0\r\n"), "(empty push)\n");
    assert_format(S("*3\r\n%0\r\n~0\r\n*0\r\n"),
                  "1) (empty hash)\n2) (empty set)\n3) (empty array)\n");
}
END_TEST

START_TEST(test_format_nested)
{
    assert_format(S("*2\r\n:1\r\n*2\r\n$1\r\na\r\n*1\r\n:2\r\n"), "1) (integer) 1\n"
                                                                  "2) 1) \"a\"\n"
                                                                  "   2) 1) (integer) 2\n");
    assert_format(S("~2\r\n:1\r\n+x\r\n"), "1~ (integer) 1\n2~ x\n");
}
END_TEST

/* Ten or more elements: numbers right-aligned, nested lines indented past them. */
START_TEST(test_format_wide_index)
{
    assert_format(S("*12\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n:8\r\n:9\r\n:10\r\n"
                    "*2\r\n:1\r\n*1\r\n:2\r\n:12\r\n"),
                  " 1) (integer) 1\n"
                  " 2) (integer) 2\n"
                  " 3) (integer) 3\n"
                  " 4) (integer) 4\n"
                  " 5) (integer) 5\n"
                  " 6) (integer) 6\n"
                  " 7) (integer) 7\n"
                  " 8) (integer) 8\n"
                  " 9) (integer) 9\n"
                  "10) (integer) 10\n"
                  "11) 1) (integer) 1\n"
                  "    2) 1) (integer) 2\n"
                  "12) (integer) 12\n");
}
END_TEST

/* A map puts a value of several lines below its key, and a one-line value after "=>". */
START_TEST(test_format_map)
{
    assert_format(S("%2\r\n+a\r\n*2\r\n:1\r\n:2\r\n$1\r\nb\r\n%1\r\n+c\r\n#t\r\n"),
                  "1# a => \n"
                  "   1) (integer) 1\n"
                  "   2) (integer) 2\n"
                  "2# \"b\" => 1# c => (true)\n");
    assert_format(S("%1\r\n+k\r\n*1\r\n*1\r\n:7\r\n"), "1# k => 1) 1) (integer) 7\n");
}
END_TEST

static void assert_json(const char *in, size_t len, const char *want)
{
    struct resp_reply *r = parse_reply(in, len);
    json_t *j = respc_reply_json(r);
    char *text;

    ck_assert_ptr_nonnull(j);
    text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    ck_assert_str_eq(text, want);
    free(text);
    json_decref(j);
    resp_reply_free(r);
}

START_TEST(test_json)
{
    assert_json(S("*3\r\n$1\r\na\r\n:1\r\n$-1\r\n"), "[\"a\",1,null]");
    assert_json(S("%2\r\n$1\r\nk\r\n#t\r\n+s\r\n,1.5\r\n"), "{\"k\":true,\"s\":1.5}");
    assert_json(S("~1\r\n:7\r\n"), "[7]");
    assert_json(S("*1\r\n-ERR x\r\n"), "[{\"error\":\"ERR x\"}]");
    assert_json(S(",inf\r\n"), "\"inf\"");
    assert_json(S("$3\r\na\x00"
                  "b\r\n"),
                "\"a\\u0000b\"");
    assert_json(S("=7\r\ntxt:abc\r\n"), "\"abc\"");
}
END_TEST

/* JSON strings hold text only: other bytes are given as hex, odd keys as pairs. */
START_TEST(test_json_not_text)
{
    assert_json(S("$2\r\n\xff\x00\r\n"), "{\"hex\":\"ff00\"}");
    assert_json(S("%1\r\n:1\r\n$1\r\nv\r\n"), "[[1,\"v\"]]");
    assert_json(S("%1\r\n$1\r\n\xff\r\n:2\r\n"), "[[{\"hex\":\"ff\"},2]]");
}
END_TEST

START_TEST(test_type_names)
{
    ck_assert_str_eq(respc_type_name(RESP_T_BULK), "bulk string");
    ck_assert_str_eq(respc_type_name(RESP_T_MAP), "map");
    ck_assert_str_eq(respc_type_name(RESP_T_PUSH), "push");
    ck_assert_str_eq(respc_type_name((enum resp_type)99), "unknown");
}
END_TEST

/* --- options --------------------------------------------------------------------- */

START_TEST(test_opts)
{
    struct respc_opts o;
    char err[512];

    respc_opts_init(&o);
    ck_assert_str_eq(o.host, "127.0.0.1");
    ck_assert_uint_eq(o.port, 7370);
    ck_assert_uint_eq(o.timeout_ms, 5000);
    ck_assert_ptr_null(o.password);
    ck_assert_uint_eq(o.reply_max, RESPC_REPLY_MAX);
    ck_assert_int_eq(respc_opts_set_addr(&o, "node1", "-H", err, sizeof(err)), 0);
    ck_assert_str_eq(o.host, "node1");
    ck_assert_uint_eq(o.port, 7370);
    ck_assert_int_eq(respc_opts_set_addr(&o, "10.0.0.1:17370", "-H", err, sizeof(err)), 0);
    ck_assert_str_eq(o.host, "10.0.0.1");
    ck_assert_uint_eq(o.port, 17370);
    ck_assert_int_eq(respc_opts_set_addr(&o, "x:0", "RINGKV_ADDR", err, sizeof(err)), RK_EINVAL);
    ck_assert_str_eq(err, "RINGKV_ADDR: 'x:0' is not HOST[:PORT] (the port is not 1 to 65535)");
    ck_assert_int_eq(respc_opts_set_addr(&o, "[::1]", "-H", err, sizeof(err)), 0);
    ck_assert_str_eq(o.host, "::1");
    ck_assert_uint_eq(o.port, 7370);
    ck_assert_int_eq(respc_opts_set_addr(&o, "::1", "-H", err, sizeof(err)), RK_EINVAL);
    ck_assert_str_eq(err, "-H: '::1' is not HOST[:PORT] (an IPv6 host goes in brackets, as "
                          "[::1]:7371)");
    ck_assert_int_eq(respc_opts_set_addr(&o, "10.0.0.1:17370", "-H", err, sizeof(err)), 0);
    ck_assert_str_eq(o.host, "10.0.0.1");
    ck_assert_int_eq(respc_opts_set_timeout(&o, "0.5", "-t", err, sizeof(err)), 0);
    ck_assert_uint_eq(o.timeout_ms, 500);
    ck_assert_int_eq(respc_opts_set_timeout(&o, "soon", "-t", err, sizeof(err)), RK_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "-t: expected a number of seconds"));
    ck_assert_uint_eq(o.timeout_ms, 500);
}
END_TEST

/* --- the client against a scripted server ---------------------------------------- */

struct step {
    const char *reply; /* sent after one command; NULL: close the connection instead */
    size_t len;
    size_t chunk; /* bytes per write, with a pause between writes; 0: all at once */
};

#define STEP(lit)                                                                                  \
    {                                                                                              \
        lit, sizeof(lit) - 1, 0                                                                    \
    }
#define STEP_SLOW(lit, n)                                                                          \
    {                                                                                              \
        lit, sizeof(lit) - 1, n                                                                    \
    }
#define STEP_CLOSE                                                                                 \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }
#define FAKE_CMDS_MAX 8

struct fake {
    int lfd;
    uint16_t port;
    pthread_t th;
    const struct step *steps;
    size_t n_steps;
    bool hold; /* after the steps, wait for the client to close */
    char cmds[FAKE_CMDS_MAX][256];
    size_t n_cmds;
};

/* Record a command's words, joined by spaces, other bytes as \xHH. */
static void fake_record(struct fake *f, const struct resp_cmd *c)
{
    char *out = f->cmds[f->n_cmds++];
    size_t n = 0, cap = sizeof(f->cmds[0]);

    for (size_t i = 0; i < c->argc; i++) {
        for (size_t k = 0; k < c->argv[i].len && n + 5 < cap; k++) {
            uint8_t ch = c->argv[i].p[k];
            n += (size_t)snprintf(out + n, cap - n, ch > ' ' && ch < 0x7f ? "%c" : "\\x%02x", ch);
        }
        if (i + 1 < c->argc && n + 1 < cap) {
            out[n++] = ' ';
        }
    }
    out[n] = '\0';
}

/* Read one command from fd; false at the end of the connection. */
static bool fake_read_command(struct fake *f, int fd, struct resp_parser *p)
{
    uint8_t in[4096];
    struct resp_cmd *cmd = NULL;

    for (;;) {
        ssize_t got = read(fd, in, sizeof(in));
        size_t used;
        if (got <= 0) {
            return false;
        }
        /* the client sends one command and waits, so a read never holds two */
        if (resp_parse(p, in, (size_t)got, &used, &cmd) == RESP_COMMAND) {
            fake_record(f, cmd);
            resp_cmd_free(cmd);
            return true;
        }
    }
}

static void fake_send(int fd, const struct step *st)
{
    size_t chunk = st->chunk != 0 ? st->chunk : st->len;

    for (size_t off = 0; off < st->len; off += chunk) {
        size_t n = st->len - off < chunk ? st->len - off : chunk;
        if (send(fd, st->reply + off, n, MSG_NOSIGNAL) != (ssize_t)n) {
            return;
        }
        if (st->chunk != 0) {
            usleep(500);
        }
    }
}

static void *fake_run(void *arg)
{
    struct fake *f = arg;
    struct pollfd pfd = {.fd = f->lfd, .events = POLLIN};
    struct resp_parser p;
    char drain[256];
    int fd;

    if (poll(&pfd, 1, 10000) != 1 || (fd = accept(f->lfd, NULL, NULL)) < 0) {
        return NULL;
    }
    resp_parser_init(&p, NULL);
    for (size_t i = 0; i < f->n_steps && fake_read_command(f, fd, &p); i++) {
        if (f->steps[i].reply == NULL) {
            break;
        }
        fake_send(fd, &f->steps[i]);
    }
    while (f->hold && read(fd, drain, sizeof(drain)) > 0) {
    }
    resp_parser_deinit(&p);
    close(fd);
    return NULL;
}

static void fake_start(struct fake *f, const struct step *steps, size_t n, bool hold)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    char err[256];

    memset(f, 0, sizeof(*f));
    f->steps = steps;
    f->n_steps = n;
    f->hold = hold;
    f->lfd = net_listen("127.0.0.1", 0, 4, err, sizeof(err));
    ck_assert_msg(f->lfd >= 0, "listen: %s", err);
    ck_assert_int_eq(getsockname(f->lfd, (struct sockaddr *)&sa, &len), 0);
    f->port = ntohs(sa.sin_port);
    ck_assert_int_eq(pthread_create(&f->th, NULL, fake_run, f), 0);
}

static void fake_stop(struct fake *f)
{
    pthread_join(f->th, NULL);
    close(f->lfd);
}

static void fake_opts(const struct fake *f, struct respc_opts *o)
{
    respc_opts_init(o);
    o->port = f->port;
    o->timeout_ms = 2000;
}

/* Connect and make one call; returns respc_call()'s code (or respc_connect()'s). */
static int one_call(struct fake *f, const struct respc_opts *o, size_t argc,
                    const char *const *argv, const size_t *lens, struct resp_reply **r, char *err,
                    size_t err_len)
{
    struct respc *c;
    int rc = respc_connect(&c, o, err, err_len);

    *r = NULL;
    if (rc == 0) {
        rc = respc_call(c, argc, argv, lens, r, err, err_len);
        respc_close(c);
    }
    fake_stop(f);
    return rc;
}

START_TEST(test_call_simple)
{
    static const struct step steps[] = {STEP("+OK\r\n")};
    static const char *const argv[] = {"SET", "a", "b"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(one_call(&f, &o, 3, argv, NULL, &r, err, sizeof(err)), 0);
    ck_assert_int_eq(r->type, RESP_T_SIMPLE);
    ck_assert_str_eq((const char *)r->str, "OK");
    ck_assert_uint_eq(f.n_cmds, 1);
    ck_assert_str_eq(f.cmds[0], "SET a b");
    resp_reply_free(r);
}
END_TEST

/* A reply arriving a byte at a time is read whole. */
START_TEST(test_call_split_reply)
{
    static const struct step steps[] = {STEP_SLOW("*3\r\n$5\r\nhello\r\n:42\r\n$-1\r\n", 1)};
    static const char *const argv[] = {"MGET", "a\0b", ""};
    static const size_t lens[] = {4, 3, 0};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(one_call(&f, &o, 3, argv, lens, &r, err, sizeof(err)), 0);
    ck_assert_int_eq(r->type, RESP_T_ARRAY);
    ck_assert_uint_eq(r->n, 3);
    ck_assert_str_eq((const char *)r->elem[0]->str, "hello");
    ck_assert_int_eq(r->elem[1]->integer, 42);
    ck_assert_int_eq(r->elem[2]->type, RESP_T_NULL);
    ck_assert_str_eq(f.cmds[0], "MGET a\\x00b ");
    resp_reply_free(r);
}
END_TEST

START_TEST(test_call_twice)
{
    static const struct step steps[] = {STEP(":1\r\n"), STEP(":2\r\n")};
    static const char *const argv[] = {"INCR", "n"};
    struct respc_opts o;
    struct resp_reply *r1, *r2;
    struct respc *c;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 2, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(respc_connect(&c, &o, err, sizeof(err)), 0);
    ck_assert_int_eq(respc_call(c, 2, argv, NULL, &r1, err, sizeof(err)), 0);
    ck_assert_int_eq(respc_call(c, 2, argv, NULL, &r2, err, sizeof(err)), 0);
    ck_assert_int_eq(r1->integer, 1);
    ck_assert_int_eq(r2->integer, 2);
    respc_close(c);
    fake_stop(&f);
    resp_reply_free(r1);
    resp_reply_free(r2);
}
END_TEST

START_TEST(test_auth_first)
{
    static const struct step steps[] = {STEP("+OK\r\n"), STEP("$1\r\nv\r\n")};
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 2, false);
    fake_opts(&f, &o);
    o.password = "pw";
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), 0);
    ck_assert_str_eq((const char *)r->str, "v");
    ck_assert_uint_eq(f.n_cmds, 2);
    ck_assert_str_eq(f.cmds[0], "AUTH pw");
    ck_assert_str_eq(f.cmds[1], "GET k");
    resp_reply_free(r);
}
END_TEST

START_TEST(test_auth_refused)
{
    static const struct step steps[] = {STEP("-WRONGPASS invalid username-password pair\r\n")};
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512], want[256];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    o.password = "nope";
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), RK_EAUTH);
    ck_assert_ptr_null(r);
    snprintf(want, sizeof(want),
             "AUTH failed at 127.0.0.1:%u: WRONGPASS invalid username-password pair", f.port);
    ck_assert_str_eq(err, want);
}
END_TEST

/* An error reply is a reply: the caller decides what it means. */
START_TEST(test_error_reply)
{
    static const struct step steps[] = {STEP("-CONFLICT the key has 2 siblings\r\n")};
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), 0);
    ck_assert_int_eq(r->type, RESP_T_ERROR);
    ck_assert_str_eq((const char *)r->str, "CONFLICT the key has 2 siblings");
    resp_reply_free(r);
}
END_TEST

START_TEST(test_closed_before_reply)
{
    static const struct step steps[] = {STEP_CLOSE};
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512], want[128];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), RK_ECLOSED);
    snprintf(want, sizeof(want), "127.0.0.1:%u closed the connection before replying", f.port);
    ck_assert_str_eq(err, want);
}
END_TEST

/* A reply cut off mid-way is an end of connection, not a reply. */
START_TEST(test_closed_mid_reply)
{
    static const struct step steps[] = {STEP("*2\r\n:1\r\n")};
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), RK_ECLOSED);
    ck_assert_ptr_null(r);
}
END_TEST

START_TEST(test_not_resp)
{
    static const struct step steps[] = {STEP("HTTP/1.1 400 Bad Request\r\n\r\n")};
    static const char *const argv[] = {"PING"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];

    fake_start(&f, steps, 1, false);
    fake_opts(&f, &o);
    ck_assert_int_eq(one_call(&f, &o, 1, argv, NULL, &r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_ptr_nonnull(strstr(err, "sent a reply that is not RESP"));
}
END_TEST

/* A bulk over the bound is refused from its header, before its bytes come. */
START_TEST(test_reply_too_big_bulk)
{
    static const struct step steps[] = {STEP("$4096\r\nabc")};
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512], want[128];

    fake_start(&f, steps, 1, true);
    fake_opts(&f, &o);
    o.reply_max = 1024;
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), RK_ETOOBIG);
    snprintf(want, sizeof(want),
             "the reply from 127.0.0.1:%u is larger than 1024 bytes: refusing to read it", f.port);
    ck_assert_str_eq(err, want);
}
END_TEST

/* Many small elements: the bound on the buffered bytes stops them. */
START_TEST(test_reply_too_big_total)
{
    static char reply[8 + 2000 * 4];
    struct step steps[] = {{reply, 0, 512}};
    static const char *const argv[] = {"LRANGE", "l", "0", "-1"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512];
    size_t n = (size_t)snprintf(reply, sizeof(reply), "*2000\r\n");

    for (int i = 0; i < 2000; i++) {
        memcpy(reply + n, ":1\r\n", 4);
        n += 4;
    }
    steps[0].len = n;
    fake_start(&f, steps, 1, true);
    fake_opts(&f, &o);
    o.reply_max = 1024;
    ck_assert_int_eq(one_call(&f, &o, 4, argv, NULL, &r, err, sizeof(err)), RK_ETOOBIG);
    ck_assert_ptr_nonnull(strstr(err, "is larger than 1024 bytes"));
}
END_TEST

START_TEST(test_reply_timeout)
{
    static const char *const argv[] = {"GET", "k"};
    struct respc_opts o;
    struct resp_reply *r;
    struct fake f;
    char err[512], want[128];

    fake_start(&f, NULL, 0, true);
    fake_opts(&f, &o);
    o.timeout_ms = 100;
    ck_assert_int_eq(one_call(&f, &o, 2, argv, NULL, &r, err, sizeof(err)), RK_EIO);
    snprintf(want, sizeof(want), "timed out after 0.1 s waiting for 127.0.0.1:%u", f.port);
    ck_assert_str_eq(err, want);
}
END_TEST

static Suite *respc_suite(void)
{
    Suite *s = suite_create("respc");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"format_scalars", test_format_scalars},
        {"format_bulk_quoting", test_format_bulk_quoting},
        {"format_empty_aggregates", test_format_empty_aggregates},
        {"format_nested", test_format_nested},
        {"format_wide_index", test_format_wide_index},
        {"format_map", test_format_map},
        {"json", test_json},
        {"json_not_text", test_json_not_text},
        {"type_names", test_type_names},
        {"opts", test_opts},
        {"call_simple", test_call_simple},
        {"call_split_reply", test_call_split_reply},
        {"call_twice", test_call_twice},
        {"auth_first", test_auth_first},
        {"auth_refused", test_auth_refused},
        {"error_reply", test_error_reply},
        {"closed_before_reply", test_closed_before_reply},
        {"closed_mid_reply", test_closed_mid_reply},
        {"not_resp", test_not_resp},
        {"reply_too_big_bulk", test_reply_too_big_bulk},
        {"reply_too_big_total", test_reply_too_big_total},
        {"reply_timeout", test_reply_timeout},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 20);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(respc_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
