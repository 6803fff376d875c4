/*
 * check_cli_view.c - unit tests of the cluster views (src/cli/cli_view.c):
 * reply trees built here, as a node would send them in RESP3 (maps,
 * booleans, doubles) and in RESP2 (flat arrays of pairs, integers 0 and 1,
 * decimal text), read into the view structs and printed as tables, JSON
 * and Graphviz, compared with fixed text.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_view.h"
#include "error.h"
#include "resp.h"

/* --- building reply trees -------------------------------------------------------- */

/* Maps are built as RESP2 flat arrays when set, RESP3 maps when not. */
static bool as_resp2;

static struct resp_reply *t_new(enum resp_type type)
{
    struct resp_reply *r = calloc(1, sizeof(*r));

    ck_assert_ptr_nonnull(r);
    r->type = type;
    return r;
}

static struct resp_reply *t_str(enum resp_type type, const char *s)
{
    struct resp_reply *r = t_new(type);

    r->len = strlen(s);
    r->str = (uint8_t *)strdup(s);
    ck_assert_ptr_nonnull(r->str);
    return r;
}

static struct resp_reply *t_bulk(const char *s)
{
    return t_str(RESP_T_BULK, s);
}

static struct resp_reply *t_int(int64_t v)
{
    struct resp_reply *r = t_new(RESP_T_INT);

    r->integer = v;
    return r;
}

static struct resp_reply *t_elems(enum resp_type type, size_t n, va_list ap)
{
    struct resp_reply *r = t_new(type);

    r->n = n;
    r->elem = calloc(n + 1, sizeof(*r->elem));
    ck_assert_ptr_nonnull(r->elem);
    for (size_t i = 0; i < n; i++) {
        r->elem[i] = va_arg(ap, struct resp_reply *);
    }
    return r;
}

/* An array of n replies. */
static struct resp_reply *t_array(size_t n, ...)
{
    struct resp_reply *r;
    va_list ap;

    va_start(ap, n);
    r = t_elems(RESP_T_ARRAY, n, ap);
    va_end(ap);
    return r;
}

/* A map of pairs given as (const char *key, struct resp_reply *value) arguments. */
static struct resp_reply *t_map(size_t pairs, ...)
{
    struct resp_reply *r = t_new(as_resp2 ? RESP_T_ARRAY : RESP_T_MAP);
    va_list ap;

    r->n = as_resp2 ? 2 * pairs : pairs;
    r->elem = calloc(2 * pairs + 1, sizeof(*r->elem));
    ck_assert_ptr_nonnull(r->elem);
    va_start(ap, pairs);
    for (size_t i = 0; i < pairs; i++) {
        r->elem[2 * i] = t_bulk(va_arg(ap, const char *));
        r->elem[2 * i + 1] = va_arg(ap, struct resp_reply *);
    }
    va_end(ap);
    return r;
}

/* A boolean: 0 or 1 in RESP2, a RESP3 boolean otherwise. */
static struct resp_reply *t_bool(bool v)
{
    struct resp_reply *r = t_new(as_resp2 ? RESP_T_INT : RESP_T_BOOL);

    r->integer = v;
    return r;
}

/* What a view printed, as a new string. */
struct capture {
    char *text;
    size_t len;
    FILE *f;
};

static void capture_start(struct capture *c)
{
    c->text = NULL;
    c->f = open_memstream(&c->text, &c->len);
    ck_assert_ptr_nonnull(c->f);
}

static char *capture_end(struct capture *c)
{
    fclose(c->f);
    return c->text;
}

static void assert_json(json_t *j, const char *want)
{
    char *got;

    ck_assert_ptr_nonnull(j);
    got = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got, want);
    free(got);
    json_decref(j);
}

/* --- RINGKV STATUS --------------------------------------------------------------- */

static struct resp_reply *status_member(const char *id, const char *rack, const char *status,
                                        bool up, const char *state, const char *owns,
                                        const char *digest)
{
    char peer[64], client[64];

    snprintf(peer, sizeof(peer), "127.0.0.%d:7371", 10 + atoi(id + 1));
    snprintf(client, sizeof(client), "127.0.0.%d:7370", 10 + atoi(id + 1));
    return t_map(10, "id", t_bulk(id), "rack", t_bulk(rack), "tokens", t_int(256), "status",
                 t_bulk(status), "up", t_bool(up), "state", t_bulk(state), "owns", t_bulk(owns),
                 "peer_addr", t_bulk(peer), "client_addr", t_bulk(client), "digest",
                 t_bulk(digest));
}

#define DIGEST_A "4c1e2a9f0b3d5e71"
#define DIGEST_B "0b3d5e714c1e2a9f"

/*
 * n1 (self) and n2 up and agreeing, n3 down on an older ring, n4
 * removed; converged (every member that is up agrees), but not healthy
 * (n3 is down).  "status" is a field this CLI does not know.
 */
static struct resp_reply *status_reply(bool converged)
{
    return t_map(
        15, "id", t_bulk("n1"), "rack", t_bulk("rack-a"), "tokens", t_int(256), "cluster_id",
        t_bulk("9f2c6e1d0a4b8c7e3f5a6b7c8d9e0f1a"), "epoch", t_int(7), "digest", t_bulk(DIGEST_A),
        "converged", t_bool(converged), "agree", t_int(2), "up_count", t_int(2), "keys",
        t_int(1204), "map_used_bytes", t_int(73728), "uptime_s", t_int(192), "clients", t_int(1),
        "status", t_bulk("normal"), "members",
        t_array(4, status_member("n1", "rack-a", "normal", true, "self", "0.334100", DIGEST_A),
                status_member("n2", "rack-b", "normal", true, "alive", "0.331200", DIGEST_A),
                status_member("n3", "rack-c", "normal", false, "down", "0.334700", DIGEST_B),
                status_member("n4", "rack-a", "removed", false, "down", "0.000000", DIGEST_B)));
}

static const char status_table_want[] =
    "node n1 (rack rack-a, 256 tokens) of cluster 9f2c6e1d0a4b8c7e3f5a6b7c8d9e0f1a\n"
    "1204 keys, 72.0 KiB of storage, up 3 m 12 s, 1 client\n"
    "\n"
    "Status=Up/Down\n"
    "|/ State=Normal/Joining/Leaving\n"
    "--  id  address          rack    tokens   owns  state  digest\n"
    "UN  n1  127.0.0.11:7371  rack-a     256  33.4%  self   4c1e2a9f0b3d5e71\n"
    "UN  n2  127.0.0.12:7371  rack-b     256  33.1%  alive  4c1e2a9f0b3d5e71\n"
    "DN  n3  127.0.0.13:7371  rack-c     256  33.5%  down   0b3d5e714c1e2a9f\n"
    "\n"
    "epoch      7\n"
    "digest     4c1e2a9f0b3d5e71\n"
    "agreement  2 of 2 up members agree\n"
    "converged  yes\n"
    "members    3: UN 2, DN 1\n"
    "departed   n4 (removed): no longer in the ring\n";

static char *status_table_of(struct resp_reply *r)
{
    struct view_status s;
    struct capture c;
    char err[256];

    ck_assert_int_eq(view_status_parse(&s, r, err, sizeof(err)), 0);
    capture_start(&c);
    ck_assert_int_eq(view_status_table(c.f, &s), 0);
    view_status_free(&s);
    resp_reply_free(r);
    return capture_end(&c);
}

START_TEST(test_status_table)
{
    char *got;

    as_resp2 = false;
    got = status_table_of(status_reply(true));
    ck_assert_str_eq(got, status_table_want);
    free(got);
}
END_TEST

/* The same status as a RESP2 connection gets it reads and prints the same. */
START_TEST(test_status_table_resp2)
{
    char *got;

    as_resp2 = true;
    got = status_table_of(status_reply(true));
    ck_assert_str_eq(got, status_table_want);
    free(got);
}
END_TEST

static bool healthy_with(bool converged, bool n3_up)
{
    struct resp_reply *r = status_reply(converged);
    struct view_status s;
    char err[256];
    bool healthy;

    ck_assert_int_eq(view_status_parse(&s, r, err, sizeof(err)), 0);
    s.members[2].up = n3_up;
    healthy = view_status_healthy(&s);
    view_status_free(&s);
    resp_reply_free(r);
    return healthy;
}

/* Healthy: converged and every member up, except those that left or were removed. */
START_TEST(test_status_healthy)
{
    as_resp2 = false;
    ck_assert(!healthy_with(true, false));
    ck_assert(!healthy_with(false, true));
    ck_assert(healthy_with(true, true));
}
END_TEST

START_TEST(test_member_code)
{
    static const struct {
        const char *status;
        bool up;
        const char *code;
    } cases[] = {
        {"normal", true, "UN"},   {"normal", false, "DN"}, {"joining", true, "UJ"},
        {"leaving", false, "DL"}, {"left", false, "D?"},   {"removed", true, "U?"},
        {"moving", true, "U?"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct view_status_member m = {.status = cases[i].status, .up = cases[i].up};
        char code[3];
        view_member_code(&m, code);
        ck_assert_str_eq(code, cases[i].code);
        ck_assert(view_member_current(&m) ==
                  (strcmp(m.status, "left") != 0 && strcmp(m.status, "removed") != 0));
    }
}
END_TEST

/*
 * JSON: every field in the reply's order; booleans as true/false and
 * fractions as numbers, in RESP2 as in RESP3; an unknown field as is.
 */
START_TEST(test_status_json)
{
    static const char want[] =
        "{\"id\":\"n1\",\"rack\":\"rack-a\",\"tokens\":256,"
        "\"cluster_id\":\"9f2c6e1d0a4b8c7e3f5a6b7c8d9e0f1a\",\"epoch\":7,"
        "\"digest\":\"4c1e2a9f0b3d5e71\",\"converged\":false,\"agree\":2,\"up_count\":2,"
        "\"keys\":1204,\"map_used_bytes\":73728,\"uptime_s\":192,\"clients\":1,"
        "\"status\":\"normal\",\"members\":["
        "{\"id\":\"n1\",\"rack\":\"rack-a\",\"tokens\":256,\"status\":\"normal\",\"up\":true,"
        "\"state\":\"self\",\"owns\":0.3341,\"peer_addr\":\"127.0.0.11:7371\","
        "\"client_addr\":\"127.0.0.11:7370\",\"digest\":\"4c1e2a9f0b3d5e71\"},"
        "{\"id\":\"n2\",\"rack\":\"rack-b\",\"tokens\":256,\"status\":\"normal\",\"up\":true,"
        "\"state\":\"alive\",\"owns\":0.3312,\"peer_addr\":\"127.0.0.12:7371\","
        "\"client_addr\":\"127.0.0.12:7370\",\"digest\":\"4c1e2a9f0b3d5e71\"},"
        "{\"id\":\"n3\",\"rack\":\"rack-c\",\"tokens\":256,\"status\":\"normal\",\"up\":false,"
        "\"state\":\"down\",\"owns\":0.3347,\"peer_addr\":\"127.0.0.13:7371\","
        "\"client_addr\":\"127.0.0.13:7370\",\"digest\":\"0b3d5e714c1e2a9f\"},"
        "{\"id\":\"n4\",\"rack\":\"rack-a\",\"tokens\":256,\"status\":\"removed\",\"up\":false,"
        "\"state\":\"down\",\"owns\":0.0,\"peer_addr\":\"127.0.0.14:7371\","
        "\"client_addr\":\"127.0.0.14:7370\",\"digest\":\"0b3d5e714c1e2a9f\"}]}";

    for (int resp2 = 0; resp2 <= 1; resp2++) {
        struct resp_reply *r;
        struct view_status s;
        char err[256];
        as_resp2 = resp2;
        r = status_reply(false);
        ck_assert_int_eq(view_status_parse(&s, r, err, sizeof(err)), 0);
        assert_json(view_status_json(&s), want);
        view_status_free(&s);
        resp_reply_free(r);
    }
}
END_TEST

/*
 * Text that is not UTF-8 still gives JSON: a value as {"hex": ...}, as the
 * data verbs show it, and a key of a field this CLI does not know as
 * "hex:" and its bytes.  (A JSON object cannot hold either as it is; the
 * whole output used to fail with "cannot build the JSON output".)
 */
START_TEST(test_status_json_not_utf8)
{
    struct resp_reply *r;
    struct view_status s;
    char err[256], *got;
    json_t *j;

    as_resp2 = false;
    r = status_reply(false);
    resp_reply_free(r->elem[7]);
    r->elem[7] = t_bulk("\xff\xfe");
    resp_reply_free(r->elem[26]);
    r->elem[26] = t_bulk("st\xffus");
    ck_assert_int_eq(view_status_parse(&s, r, err, sizeof(err)), 0);
    j = view_status_json(&s);
    ck_assert_ptr_nonnull(j);
    got = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    ck_assert_ptr_nonnull(strstr(got, "\"cluster_id\":{\"hex\":\"fffe\"},"));
    ck_assert_ptr_nonnull(strstr(got, "\"hex:7374ff7573\":\"normal\","));
    free(got);
    json_decref(j);
    view_status_free(&s);
    resp_reply_free(r);
}
END_TEST

static void assert_status_refused(struct resp_reply *r, const char *want)
{
    struct view_status s;
    char err[256];

    ck_assert_int_eq(view_status_parse(&s, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(s.members);
    resp_reply_free(r);
}

/* A reply without a field, or with one of another type, is refused, naming it. */
START_TEST(test_status_refused)
{
    struct resp_reply *r;

    as_resp2 = false;
    assert_status_refused(t_int(3), "expected a map, got an integer");
    r = status_reply(true);
    resp_reply_free(r->elem[9]);
    r->elem[9] = t_bulk("7");
    assert_status_refused(r, "'epoch' is a bulk string, expected an integer");
    r = status_reply(true);
    resp_reply_free(r->elem[13]);
    r->elem[13] = t_int(2);
    assert_status_refused(r, "'converged' is an integer, expected 0 or 1");
    r = status_reply(true);
    struct resp_reply *n2 = r->elem[29]->elem[1];
    resp_reply_free(n2->elem[8]);
    n2->elem[8] = t_bulk("upness");
    assert_status_refused(r, "member 2: 'up' is missing");
    r = status_reply(true);
    resp_reply_free(r->elem[29]->elem[0]->elem[13]);
    r->elem[29]->elem[0]->elem[13] = t_bulk("a third");
    assert_status_refused(
        r, "member 1: 'owns' is a bulk string, expected a decimal number from 0 to 1");
    r = status_reply(true);
    resp_reply_free(r->elem[29]->elem[0]->elem[13]);
    r->elem[29]->elem[0]->elem[13] = t_bulk("nan");
    assert_status_refused(
        r, "member 1: 'owns' is a bulk string, expected a decimal number from 0 to 1");
}
END_TEST

/* Text a node sends is printed with its control bytes replaced, so it cannot drive a terminal. */
START_TEST(test_status_control_bytes)
{
    struct resp_reply *r;
    char *got;

    as_resp2 = false;
    r = status_reply(true);
    struct resp_reply *rack = r->elem[29]->elem[1]->elem[3];
    free(rack->str);
    rack->str = (uint8_t *)strdup("rack\x1b[2J");
    rack->len = strlen((const char *)rack->str);
    got = status_table_of(r);
    ck_assert_ptr_nonnull(strstr(got, "  rack?[2J  "));
    ck_assert_ptr_null(strchr(got, '\x1b'));
    free(got);
}
END_TEST

/* --- RINGKV MEMBERS -------------------------------------------------------------- */

static struct resp_reply *detector_entry(const char *id, const char *state, struct resp_reply *phi,
                                         int64_t generation, int64_t version, int64_t heard,
                                         const char *mean, const char *status)
{
    return t_map(8, "id", t_bulk(id), "state", t_bulk(state), "phi", phi, "generation",
                 t_int(generation), "version", t_int(version), "last_heard_ms", t_int(heard),
                 "mean_interval_ms", t_bulk(mean), "status", t_bulk(status));
}

static struct resp_reply *members_reply(void)
{
    return t_array(
        5, detector_entry("n1", "self", t_bulk("0.00"), 1736458123, 5702, -1, "0.0", "normal"),
        detector_entry("n2", "alive", t_bulk("0.41"), 1736458124, 5510, 212, "201.4", "normal"),
        detector_entry("n3", "down", t_bulk("9.87"), 1736458124, 391, 12410, "199.8", "normal"),
        detector_entry("n4", "suspect", t_bulk("inf"), 1736458130, 12, -1, "nan", "joining"),
        detector_entry("n5", "alive", t_bulk("1.20"), 1736458131, 80, 1000, "200.0", "leaving"));
}

START_TEST(test_members_table)
{
    static const char want[] =
        "state    id  generation  version  last heard   phi  mean interval  status\n"
        "self     n1  1736458123     5702           -     -              -  normal\n"
        "alive    n2  1736458124     5510  212 ms ago  0.41       201.4 ms  normal\n"
        "down     n3  1736458124      391  12.4 s ago  9.87       199.8 ms  normal\n"
        "suspect  n4  1736458130       12       never   inf              -  joining\n"
        "alive    n5  1736458131       80   1.0 s ago  1.20       200.0 ms  leaving\n"
        "\n"
        "5 members: 1 self, 2 alive, 1 suspect, 1 down\n";
    struct resp_reply *r;
    struct view_members v;
    struct capture c;
    char err[256];

    as_resp2 = true;
    r = members_reply();
    ck_assert_int_eq(view_members_parse(&v, r, err, sizeof(err)), 0);
    ck_assert_uint_eq(v.n, 5);
    capture_start(&c);
    ck_assert_int_eq(view_members_table(c.f, &v), 0);
    ck_assert_str_eq(capture_end(&c), want);
    free(c.text);
    view_members_free(&v);
    resp_reply_free(r);
}
END_TEST

/* JSON: phi and the mean interval as numbers, null where they are not finite. */
START_TEST(test_members_json)
{
    static const char want[] =
        "{\"members\":["
        "{\"id\":\"n1\",\"state\":\"self\",\"phi\":0.0,\"generation\":1736458123,"
        "\"version\":5702,\"last_heard_ms\":-1,\"mean_interval_ms\":0.0,\"status\":\"normal\"},"
        "{\"id\":\"n4\",\"state\":\"suspect\",\"phi\":null,\"generation\":1736458130,"
        "\"version\":12,\"last_heard_ms\":-1,\"mean_interval_ms\":null,\"status\":\"joining\"},"
        "{\"id\":\"n5\",\"state\":\"alive\",\"phi\":1.5,\"generation\":1736458131,"
        "\"version\":80,\"last_heard_ms\":1000,\"mean_interval_ms\":200.0,"
        "\"status\":\"leaving\"}]}";
    struct resp_reply *r, *phi = t_new(RESP_T_DOUBLE);
    struct view_members v;
    char err[256];

    as_resp2 = false;
    phi->dbl = 1.5;
    r = t_array(
        3, detector_entry("n1", "self", t_bulk("0.00"), 1736458123, 5702, -1, "0", "normal"),
        detector_entry("n4", "suspect", t_bulk("inf"), 1736458130, 12, -1, "nan", "joining"),
        detector_entry("n5", "alive", phi, 1736458131, 80, 1000, "200", "leaving"));
    ck_assert_int_eq(view_members_parse(&v, r, err, sizeof(err)), 0);
    assert_json(view_members_json(&v), want);
    view_members_free(&v);
    resp_reply_free(r);
}
END_TEST

START_TEST(test_members_refused)
{
    struct resp_reply *r;
    struct view_members v;
    char err[256];

    as_resp2 = false;
    r = t_bulk("OK");
    ck_assert_int_eq(view_members_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "expected an array of maps, got a bulk string");
    resp_reply_free(r);
    r = members_reply();
    resp_reply_free(r->elem[3]->elem[4]);
    r->elem[3]->elem[4] = t_bulk("psi");
    ck_assert_int_eq(view_members_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "member 4: 'phi' is missing");
    resp_reply_free(r);
}
END_TEST

/* --- RINGKV RING ----------------------------------------------------------------- */

static struct resp_reply *arc(const char *start, const char *end, const char *fraction,
                              struct resp_reply *preflist)
{
    return t_map(5, "start", t_bulk(start), "end", t_bulk(end), "fraction", t_bulk(fraction),
                 "owner", t_bulk((const char *)preflist->elem[0]->str), "preflist", preflist);
}

/* Four arcs of three members at rf 2: n1 owns half, n2 and n3 a quarter each. */
static struct resp_reply *ring_reply(void)
{
    return t_map(4, "epoch", t_int(9), "digest", t_bulk(DIGEST_A), "rf", t_int(2), "arcs",
                 t_array(4,
                         arc("c000000000000000", "3fffffffffffffff", "0.25",
                             t_array(2, t_bulk("n1"), t_bulk("n2"))),
                         arc("3fffffffffffffff", "7fffffffffffffff", "0.25",
                             t_array(2, t_bulk("n2"), t_bulk("n3"))),
                         arc("7fffffffffffffff", "9fffffffffffffff", "0.125",
                             t_array(2, t_bulk("n3"), t_bulk("n1"))),
                         arc("9fffffffffffffff", "c000000000000000", "0.375",
                             t_array(2, t_bulk("n1"), t_bulk("n3")))));
}

static void ring_parse_ok(struct view_ring *v, struct resp_reply *r)
{
    char err[256];

    ck_assert_int_eq(view_ring_parse(v, r, err, sizeof(err)), 0);
    ck_assert_uint_eq(v->n, 4);
}

START_TEST(test_ring_table)
{
    static const char want[] = "start (exclusive)  end (inclusive)     share  preference list\n"
                               "c000000000000000   3fffffffffffffff  25.000%  n1,n2\n"
                               "3fffffffffffffff   7fffffffffffffff  25.000%  n2,n3\n"
                               "7fffffffffffffff   9fffffffffffffff  12.500%  n3,n1\n"
                               "9fffffffffffffff   c000000000000000  37.500%  n1,n3\n"
                               "\n"
                               "member  arcs  primary  replica\n"
                               "n1         2   62.50%   75.00%\n"
                               "n2         1   25.00%   50.00%\n"
                               "n3         1   12.50%   75.00%\n"
                               "\n"
                               "epoch 9, digest 4c1e2a9f0b3d5e71, rf 2, 4 arcs\n";
    struct resp_reply *r;
    struct view_ring v;
    struct capture c;

    as_resp2 = true;
    r = ring_reply();
    ring_parse_ok(&v, r);
    capture_start(&c);
    ck_assert_int_eq(view_ring_table(c.f, &v), 0);
    ck_assert_str_eq(capture_end(&c), want);
    free(c.text);
    view_ring_free(&v);
    resp_reply_free(r);
}
END_TEST

START_TEST(test_ring_json)
{
    static const char want[] =
        "{\"epoch\":9,\"digest\":\"4c1e2a9f0b3d5e71\",\"rf\":2,\"arcs\":["
        "{\"start\":\"c000000000000000\",\"end\":\"3fffffffffffffff\",\"fraction\":0.25,"
        "\"owner\":\"n1\",\"preflist\":[\"n1\",\"n2\"]},"
        "{\"start\":\"3fffffffffffffff\",\"end\":\"7fffffffffffffff\",\"fraction\":0.25,"
        "\"owner\":\"n2\",\"preflist\":[\"n2\",\"n3\"]},"
        "{\"start\":\"7fffffffffffffff\",\"end\":\"9fffffffffffffff\",\"fraction\":0.125,"
        "\"owner\":\"n3\",\"preflist\":[\"n3\",\"n1\"]},"
        "{\"start\":\"9fffffffffffffff\",\"end\":\"c000000000000000\",\"fraction\":0.375,"
        "\"owner\":\"n1\",\"preflist\":[\"n1\",\"n3\"]}],"
        "\"members\":[{\"id\":\"n1\",\"arcs\":2,\"primary\":0.625,\"replica\":0.75},"
        "{\"id\":\"n2\",\"arcs\":1,\"primary\":0.25,\"replica\":0.5},"
        "{\"id\":\"n3\",\"arcs\":1,\"primary\":0.125,\"replica\":0.75}]}";
    struct resp_reply *r;
    struct view_ring v;

    as_resp2 = false;
    r = ring_reply();
    ring_parse_ok(&v, r);
    assert_json(view_ring_json(&v), want);
    view_ring_free(&v);
    resp_reply_free(r);
}
END_TEST

/* Graphviz: one node per member, one edge per (owner, replica) pair, its arcs summed. */
START_TEST(test_ring_dot)
{
    static const char want[] =
        "digraph ring {\n"
        "    graph [layout=circo mindist=2 splines=curved fontname=\"Helvetica\" labelloc=t "
        "label=\"ringkv ring: epoch 9, digest 4c1e2a9f0b3d5e71, rf 2, 4 arcs\\n"
        "edge A -> B: the keyspace A is primary for that B holds a copy of\"];\n"
        "    node [shape=box style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=12];\n"
        "    edge [fontname=\"Helvetica\" fontsize=10 color=\"#555555\" arrowsize=0.7 "
        "labeldistance=4 labelangle=20];\n"
        "    \"n1\" [label=\"n1\\nprimary 62.5%\\nreplica 75.0%\" fillcolor=\"#fbb4ae\"];\n"
        "    \"n2\" [label=\"n2\\nprimary 25.0%\\nreplica 50.0%\" fillcolor=\"#b3cde3\"];\n"
        "    \"n3\" [label=\"n3\\nprimary 12.5%\\nreplica 75.0%\" fillcolor=\"#ccebc5\"];\n"
        "    \"n1\" -> \"n2\" [taillabel=\"25.0%\" penwidth=4.33 weight=26];\n"
        "    \"n1\" -> \"n3\" [taillabel=\"37.5%\" penwidth=6.00 weight=38];\n"
        "    \"n2\" -> \"n3\" [taillabel=\"25.0%\" penwidth=4.33 weight=26];\n"
        "    \"n3\" -> \"n1\" [taillabel=\"12.5%\" penwidth=2.67 weight=13];\n"
        "}\n";
    struct resp_reply *r;
    struct view_ring v;
    struct capture c;

    as_resp2 = false;
    r = ring_reply();
    ring_parse_ok(&v, r);
    capture_start(&c);
    ck_assert_int_eq(view_ring_dot(c.f, &v), 0);
    ck_assert_str_eq(capture_end(&c), want);
    free(c.text);
    view_ring_free(&v);
    resp_reply_free(r);
}
END_TEST

/* A quote in an id cannot end a Graphviz string early. */
START_TEST(test_ring_dot_quoting)
{
    struct resp_reply *r;
    struct view_ring v;
    struct capture c;

    as_resp2 = false;
    r = t_map(4, "epoch", t_int(1), "digest", t_bulk(DIGEST_A), "rf", t_int(1), "arcs",
              t_array(1, arc("0", "0", "1", t_array(1, t_bulk("a\"b\\")))));
    ck_assert_int_eq(view_ring_parse(&v, r, (char[64]){0}, 64), 0);
    capture_start(&c);
    ck_assert_int_eq(view_ring_dot(c.f, &v), 0);
    capture_end(&c);
    ck_assert_ptr_nonnull(
        strstr(c.text, "    \"a\\\"b\\\\\" [label=\"a\\\"b\\\\\\nprimary 100.0%"));
    free(c.text);
    view_ring_free(&v);
    resp_reply_free(r);
}
END_TEST

START_TEST(test_ring_refused)
{
    struct resp_reply *r;
    struct view_ring v;
    char err[256];

    as_resp2 = false;
    r = ring_reply();
    struct resp_reply *arcs = r->elem[7];
    resp_reply_free(arcs->elem[1]->elem[9]);
    arcs->elem[1]->elem[9] = t_array(0);
    ck_assert_int_eq(view_ring_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "arc 2: 'preflist' is empty");
    ck_assert_ptr_null(v.arcs);
    resp_reply_free(r);
    r = ring_reply();
    arcs = r->elem[7];
    resp_reply_free(arcs->elem[3]->elem[9]);
    arcs->elem[3]->elem[9] = t_array(2, t_bulk("n1"), t_int(3));
    ck_assert_int_eq(view_ring_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "arc 4: 'preflist' is an array, expected an array of strings");
    resp_reply_free(r);
}
END_TEST

/*
 * A fraction is a share of the keyspace: NaN, infinities, negatives and
 * anything over 1 are refused, one arc at a time and in total, before a
 * view computes a percentage or the dot graph an integer weight from it
 * (converting NaN or 1e8 * 100 to int is undefined behaviour).
 */
START_TEST(test_ring_shares_refused)
{
    static const char *const bad[] = {"nan", "-nan", "inf", "-inf", "1e8", "-0.5", "1.0000001"};
    static const char *const types[] = {"bulk string", "double"};
    struct resp_reply *r;
    struct view_ring v;
    char err[256], want[160];

    as_resp2 = false;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (size_t t = 0; t < 2; t++) {
            r = ring_reply();
            struct resp_reply *a = r->elem[7]->elem[2];
            resp_reply_free(a->elem[5]);
            a->elem[5] = t_bulk(bad[i]);
            if (t == 1) {
                a->elem[5]->type = RESP_T_DOUBLE;
                a->elem[5]->dbl = strtod(bad[i], NULL);
            }
            ck_assert_int_eq(view_ring_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
            snprintf(want, sizeof(want),
                     "arc 3: 'fraction' is a %s, expected a decimal number from 0 to 1", types[t]);
            ck_assert_str_eq(err, want);
            ck_assert_ptr_null(v.arcs);
            resp_reply_free(r);
        }
    }
    /* every arc within 0..1 but the four add up to 1.5 */
    r = ring_reply();
    resp_reply_free(r->elem[7]->elem[0]->elem[5]);
    r->elem[7]->elem[0]->elem[5] = t_bulk("0.75");
    ck_assert_int_eq(view_ring_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "the arcs' fractions add up to 1.500000, more than the whole keyspace");
    ck_assert_ptr_null(v.arcs);
    resp_reply_free(r);
    /* rounding of the printed fractions is within the slack */
    r = ring_reply();
    resp_reply_free(r->elem[7]->elem[0]->elem[5]);
    r->elem[7]->elem[0]->elem[5] = t_bulk("0.250003");
    ck_assert_int_eq(view_ring_parse(&v, r, err, sizeof(err)), 0);
    view_ring_free(&v);
    resp_reply_free(r);
}
END_TEST

/* --- RINGKV REPLICAS ------------------------------------------------------------- */

static struct resp_reply *replica(const char *node, const char *rack, const char *role, bool up,
                                  bool answered, bool present, bool tombstone, int64_t siblings,
                                  const char *vclock, int64_t size, const char *digest)
{
    return t_map(11, "node", t_bulk(node), "rack", t_bulk(rack), "role", t_bulk(role), "up",
                 t_int(up), "answered", t_int(answered), "present", t_int(present), "tombstone",
                 t_int(tombstone), "siblings", t_int(siblings), "vclock", t_bulk(vclock),
                 "value_size", t_int(size), "digest", t_bulk(digest));
}

static char *replicas_table_of(struct resp_reply *r, const char *key)
{
    struct view_replicas v;
    struct capture c;
    char err[256];

    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), 0);
    capture_start(&c);
    ck_assert_int_eq(view_replicas_table(c.f, (const uint8_t *)key, strlen(key), &v), 0);
    view_replicas_free(&v);
    resp_reply_free(r);
    return capture_end(&c);
}

START_TEST(test_replicas_agree)
{
    static const char want[] =
        "key k1: 3 replicas\n"
        "\n"
        "node  rack  role     up  present  tombstone  siblings  vclock  size  digest\n"
        "n2    r2    primary  up  yes      no                1  n1:4    11 B  0badc0ffee15900d\n"
        "n3    r3    replica  up  yes      no                1  n1:4    11 B  0badc0ffee15900d\n"
        "n1    r1    replica  up  yes      no                1  n1:4    11 B  0badc0ffee15900d\n"
        "\n"
        "all 3 replicas agree: vclock n1:4, digest 0badc0ffee15900d, 11 B\n";
    struct resp_reply *r;
    struct view_replicas v;
    char err[256], *got;

    as_resp2 = true;
    r = t_array(3, replica("n2", "r2", "primary", 1, 1, 1, 0, 1, "n1:4", 11, "0badc0ffee15900d"),
                replica("n3", "r3", "replica", 1, 1, 1, 0, 1, "n1:4", 11, "0badc0ffee15900d"),
                replica("n1", "r1", "replica", 1, 1, 1, 0, 1, "n1:4", 11, "0badc0ffee15900d"));
    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), 0);
    ck_assert(view_replicas_answered(&v));
    ck_assert(view_replicas_agree(&v));
    view_replicas_free(&v);
    got = replicas_table_of(r, "k1");
    ck_assert_str_eq(got, want);
    free(got);
}
END_TEST

/* Groups of replicas holding the same thing, a tombstone, no copy, siblings, a silent replica. */
START_TEST(test_replicas_differ)
{
    static const char want[] =
        "key k??: 5 replicas\n"
        "\n"
        "node  rack  role      up    present    tombstone  siblings  vclock     size  digest\n"
        "n1    r1    primary   up    yes        no                2  n1:5,n2:1   3 B  "
        "00000000000000aa\n"
        "n2    r2    replica   down  no answer  -                 -  -             -  -\n"
        "n3    r3    replica   up    no         yes               1  n1:6        0 B  -\n"
        "n4    r1    fallback  up    no         no                0  -             -  -\n"
        "n5    r2    fallback  up    yes        no                2  n1:5,n2:1   3 B  "
        "00000000000000aa\n"
        "\n"
        "replicas differ:\n"
        "  n1, n5: vclock n1:5,n2:1, digest 00000000000000aa, 3 B, 2 siblings (digest and size "
        "of the first live one)\n"
        "  n3: a tombstone, vclock n1:6\n"
        "  n4: no copy\n"
        "  n2: did not answer\n";
    struct resp_reply *r;
    struct view_replicas v;
    char err[256], *got;

    as_resp2 = false;
    r = t_array(5,
                replica("n1", "r1", "primary", 1, 1, 1, 0, 2, "n1:5,n2:1", 3, "00000000000000aa"),
                replica("n2", "r2", "replica", 0, 0, 0, 0, 0, "", 0, ""),
                replica("n3", "r3", "replica", 1, 1, 0, 1, 1, "n1:6", 0, ""),
                replica("n4", "r1", "fallback", 1, 1, 0, 0, 0, "", 0, ""),
                replica("n5", "r2", "fallback", 1, 1, 1, 0, 2, "n1:5,n2:1", 3, "00000000000000aa"));
    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), 0);
    ck_assert(!view_replicas_answered(&v));
    ck_assert(!view_replicas_agree(&v));
    view_replicas_free(&v);
    got = replicas_table_of(r, "k\x01\x1b");
    ck_assert_str_eq(got, want);
    free(got);
}
END_TEST

/* Hints held elsewhere: a column and a JSON field once nodes were asked, and who did not answer. */
START_TEST(test_replicas_hints)
{
    static const char want[] =
        "key k: 2 replicas\n"
        "\n"
        "node  rack  role     up    present    tombstone  siblings  vclock  size  digest  hints\n"
        "n1    r1    primary  up    no         no                0  -          -  -           0\n"
        "n2    r2    replica  down  no answer  -                 -  -          -  -          12\n"
        "\n"
        "replicas differ:\n"
        "  n1: no copy\n"
        "  n2: did not answer\n"
        "hints: 1 of 2 nodes answered; the counts are of those\n";
    struct resp_reply *r;
    struct view_replicas v;
    struct capture c;
    char err[256], *got, *text;
    json_t *j;

    as_resp2 = false;
    r = t_array(2, replica("n1", "r1", "primary", 1, 1, 0, 0, 0, "", 0, ""),
                replica("n2", "r2", "replica", 0, 0, 0, 0, 0, "", 0, ""));
    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), 0);
    v.hints_nodes = 2;
    v.hints_answered = 1;
    v.r[1].hints = 12;
    capture_start(&c);
    ck_assert_int_eq(view_replicas_table(c.f, (const uint8_t *)"k", 1, &v), 0);
    got = capture_end(&c);
    ck_assert_str_eq(got, want);
    free(got);
    j = view_replicas_json((const uint8_t *)"k", 1, &v);
    ck_assert_ptr_nonnull(j);
    text = json_dumps(j, JSON_COMPACT);
    ck_assert_ptr_nonnull(strstr(text, "\"hints\":12"));
    ck_assert_ptr_nonnull(strstr(text, "\"hints_nodes\":2"));
    ck_assert_ptr_nonnull(strstr(text, "\"hints_answered\":1"));
    free(text);
    json_decref(j);
    view_replicas_free(&v);
    resp_reply_free(r);
}
END_TEST

/* All answered and all hold nothing: they agree; no replicas at all: said so. */
START_TEST(test_replicas_none)
{
    char *got;

    as_resp2 = false;
    got = replicas_table_of(t_array(2, replica("n1", "r1", "primary", 1, 1, 0, 0, 0, "", 0, ""),
                                    replica("n2", "r2", "replica", 1, 1, 0, 0, 0, "", 0, "")),
                            "k");
    ck_assert_ptr_nonnull(strstr(got, "\nall 2 replicas agree: no copy\n"));
    free(got);
    got = replicas_table_of(t_array(0), "k");
    ck_assert_str_eq(got,
                     "key k: 0 replicas\n\nnode  rack  role  up  present  tombstone  siblings  "
                     "vclock  size  digest\n\nthe key has no replicas: the node has no ring "
                     "yet\n");
    free(got);
}
END_TEST

START_TEST(test_replicas_json)
{
    static const char want[] =
        "{\"key\":{\"hex\":\"ff6b\"},\"agree\":false,\"replicas\":["
        "{\"node\":\"n1\",\"rack\":\"r1\",\"role\":\"primary\",\"up\":true,\"answered\":true,"
        "\"present\":true,\"tombstone\":false,\"siblings\":1,\"vclock\":\"n1:1\","
        "\"value_size\":2,\"digest\":\"0123456789abcdef\"},"
        "{\"node\":\"n2\",\"rack\":\"r2\",\"role\":\"replica\",\"up\":false,\"answered\":false,"
        "\"present\":false,\"tombstone\":false,\"siblings\":0,\"vclock\":\"\","
        "\"value_size\":0,\"digest\":\"\"}]}";
    static const uint8_t key[] = {0xff, 'k'};
    struct resp_reply *r;
    struct view_replicas v;
    char err[256];

    as_resp2 = false;
    r = t_array(2, replica("n1", "r1", "primary", 1, 1, 1, 0, 1, "n1:1", 2, "0123456789abcdef"),
                replica("n2", "r2", "replica", 0, 0, 0, 0, 0, "", 0, ""));
    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), 0);
    assert_json(view_replicas_json(key, sizeof(key), &v), want);
    view_replicas_free(&v);
    resp_reply_free(r);
}
END_TEST

START_TEST(test_replicas_refused)
{
    struct resp_reply *r;
    struct view_replicas v;
    char err[256];

    as_resp2 = false;
    r = t_map(1, "node", t_bulk("n1"));
    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "expected an array of maps, got a map");
    resp_reply_free(r);
    r = t_array(1, replica("n1", "r1", "primary", 1, 1, 1, 0, 1, "n1:1", 2, "00"));
    resp_reply_free(r->elem[0]->elem[9]);
    r->elem[0]->elem[9] = t_int(2); /* answered */
    ck_assert_int_eq(view_replicas_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "replica 1: 'answered' is an integer, expected 0 or 1");
    ck_assert_ptr_null(v.r);
    resp_reply_free(r);
}
END_TEST

/* --- RINGKV HINTS ---------------------------------------------------------------- */

static struct resp_reply *hint_target(const char *target, int64_t hints, bool up)
{
    return t_map(3, "target", t_bulk(target), "hints", t_int(hints), "up", t_bool(up));
}

/* Three nodes asked: one with two targets, one with none, one silent. */
static void hints_nodes(struct view_hints_node *n, struct resp_reply **r)
{
    char err[256];

    r[0] = t_map(2, "node", t_bulk("n1"), "targets",
                 t_array(2, hint_target("n3", 12, false), hint_target("n4", 1, true)));
    r[1] = t_map(2, "node", t_bulk("n2"), "targets", t_array(0));
    memset(n, 0, 3 * sizeof(*n));
    n[0].addr = "127.0.0.1:7001";
    n[1].addr = "127.0.0.1:7002";
    n[2] = (struct view_hints_node){.node = "n3", .addr = "127.0.0.1:7003", .error = "timed out"};
    ck_assert_int_eq(view_hints_parse(&n[0].h, r[0], err, sizeof(err)), 0);
    ck_assert_int_eq(view_hints_parse(&n[1].h, r[1], err, sizeof(err)), 0);
}

START_TEST(test_hints_table)
{
    static const char want[] = "node  target  hints  target up\n"
                               "n1    n3         12  down\n"
                               "n1    n4          1  up\n"
                               "n2    -           0  -\n"
                               "\n"
                               "n3 (127.0.0.1:7003): timed out\n"
                               "\n"
                               "2 of 3 nodes answered: 13 hints for 2 targets\n";
    struct view_hints_node n[3];
    struct resp_reply *r[2];
    struct capture c;

    as_resp2 = true;
    hints_nodes(n, r);
    capture_start(&c);
    ck_assert_int_eq(view_hints_table(c.f, n, 3), 0);
    ck_assert_str_eq(capture_end(&c), want);
    free(c.text);
    for (size_t i = 0; i < 2; i++) {
        view_hints_free(&n[i].h);
        resp_reply_free(r[i]);
    }
}
END_TEST

START_TEST(test_hints_json)
{
    static const char want[] =
        "{\"hints\":13,\"nodes\":["
        "{\"node\":\"n1\",\"targets\":[{\"target\":\"n3\",\"hints\":12,\"up\":false},"
        "{\"target\":\"n4\",\"hints\":1,\"up\":true}],\"addr\":\"127.0.0.1:7001\","
        "\"answered\":true},"
        "{\"node\":\"n2\",\"targets\":[],\"addr\":\"127.0.0.1:7002\",\"answered\":true},"
        "{\"node\":\"n3\",\"addr\":\"127.0.0.1:7003\",\"answered\":false,\"error\":\"timed out\"},"
        "{\"node\":null,\"addr\":\"h:1\",\"answered\":false,\"error\":{\"hex\":\"ff\"}}]}";
    struct view_hints_node n[4];
    struct resp_reply *r[2];

    as_resp2 = false;
    hints_nodes(n, r);
    n[3] = (struct view_hints_node){.addr = "h:1", .error = "\xff"};
    assert_json(view_hints_json(n, 4), want);
    for (size_t i = 0; i < 2; i++) {
        view_hints_free(&n[i].h);
        resp_reply_free(r[i]);
    }
}
END_TEST

START_TEST(test_hints_refused)
{
    struct resp_reply *r;
    struct view_hints h;
    char err[256];

    as_resp2 = false;
    r = t_array(1, hint_target("n3", 1, true)); /* an older shape: no node */
    ck_assert_int_eq(view_hints_parse(&h, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "expected a map, got an array");
    resp_reply_free(r);
    r = t_map(2, "node", t_bulk("n1"), "targets", t_array(1, hint_target("n3", -1, true)));
    ck_assert_int_eq(view_hints_parse(&h, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "target 1: 'hints' is negative");
    ck_assert_ptr_null(h.t);
    resp_reply_free(r);
    r = t_map(2, "node", t_bulk("n1"), "targets", t_array(1, t_map(1, "target", t_bulk("n3"))));
    ck_assert_int_eq(view_hints_parse(&h, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, "target 1: 'hints' is missing");
    resp_reply_free(r);
}
END_TEST

/* --- RINGKV STATUS during a change ---------------------------------------------- */

/* n1 normal, n4 joining: the node names a target other than its ring and is not converged. */
static struct resp_reply *status_changing_reply(void)
{
    struct resp_reply *n4 =
        status_member("n4", "rack-a", "joining", true, "alive", "0.000000", DIGEST_A);
    struct resp_reply *r;

    r = t_map(17, "id", t_bulk("n1"), "rack", t_bulk("rack-a"), "tokens", t_int(256), "cluster_id",
              t_bulk("9f2c6e1d0a4b8c7e3f5a6b7c8d9e0f1a"), "epoch", t_int(8), "digest",
              t_bulk(DIGEST_A), "target", t_bulk(DIGEST_B), "converged", t_bool(false), "agree",
              t_int(2), "up_count", t_int(2), "keys", t_int(0), "map_used_bytes", t_int(0),
              "uptime_s", t_int(5), "clients", t_int(0), "status", t_bulk("leaving"), "members",
              t_array(2,
                      status_member("n1", "rack-a", "leaving", true, "self", "1.000000", DIGEST_A),
                      n4),
              "newer", t_int(1));
    return r;
}

START_TEST(test_status_changing)
{
    struct resp_reply *r;
    struct view_status s;
    char err[256], *got;

    as_resp2 = false;
    r = status_changing_reply();
    ck_assert_int_eq(view_status_parse(&s, r, err, sizeof(err)), 0);
    ck_assert_str_eq(s.target, DIGEST_B);
    ck_assert_str_eq(s.status, "leaving");
    ck_assert(view_status_changing(&s));
    ck_assert_ptr_null(s.members[1].target);
    view_status_free(&s);
    got = status_table_of(r);
    ck_assert_ptr_nonnull(strstr(got, "node n1 (rack rack-a, 256 tokens, leaving) of cluster "));
    ck_assert_ptr_nonnull(strstr(got, "\nUL  n1  "));
    ck_assert_ptr_nonnull(strstr(got, "\nUJ  n4  "));
    ck_assert_ptr_nonnull(
        strstr(got, "\ntarget     " DIGEST_B " (members are joining or leaving)\n"));
    ck_assert_ptr_nonnull(strstr(got, "\nconverged  no (a change is under way)\n"));
    ck_assert_ptr_nonnull(strstr(got, "\nmembers    2: UJ 1, UL 1\n"));
    free(got);
}
END_TEST

/* --- RINGKV TRANSFERS ------------------------------------------------------------ */

static struct resp_reply *transfer(const char *kind, const char *state, const char *dir,
                                   const char *start, const char *end, const char *from,
                                   const char *to, int64_t keys, int64_t total, int64_t bytes,
                                   int64_t rate, int64_t eta)
{
    return t_map(12, "kind", t_bulk(kind), "state", t_bulk(state), "direction", t_bulk(dir),
                 "start", t_bulk(start), "end", t_bulk(end), "from", t_bulk(from), "to", t_bulk(to),
                 "keys", t_int(keys), "keys_total", t_int(total), "bytes", t_int(bytes), "rate_bps",
                 t_int(rate), "eta_s", t_int(eta));
}

/* n4 joining: one arc streaming, one being checked, one done (which no view shows); or none. */
static struct resp_reply *transfers_reply(bool changing)
{
    struct resp_reply *list = t_array(0);

    if (changing) {
        resp_reply_free(list);
        list = t_array(3,
                       transfer("join", "streaming", "in", "3fa2c1d04b5e6f70", "8c01aa92e3f4a5b6",
                                "n2", "n4", 420, 1000, 430080, 65536, 9),
                       transfer("join", "checking", "in", "8c01aa92e3f4a5b6", "a0b1c2d3e4f50617",
                                "n3", "n4", 0, 0, 0, 0, -1),
                       transfer("join", "done", "in", "a0b1c2d3e4f50617", "f0e1d2c3b4a59687", "n1",
                                "n4", 10, 10, 10240, 4096, 0));
    }
    return t_map(7, "node", t_bulk("n4"), "status", t_bulk(changing ? "joining" : "normal"), "ring",
                 t_bulk(DIGEST_A), "target", t_bulk(changing ? DIGEST_B : DIGEST_A), "changing",
                 t_bool(changing), "agreed", t_bool(true), "transfers", list);
}

static char *transfers_table_of(struct resp_reply *r)
{
    struct view_transfers v;
    struct capture c;
    char err[256];

    ck_assert_int_eq(view_transfers_parse(&v, r, err, sizeof(err)), 0);
    capture_start(&c);
    ck_assert_int_eq(view_transfers_table(c.f, &v), 0);
    view_transfers_free(&v);
    resp_reply_free(r);
    return capture_end(&c);
}

START_TEST(test_transfers_table)
{
    static const char want[] =
        "node n4 (joining): ring 4c1e2a9f0b3d5e71, target 0b3d5e714c1e2a9f\n"
        "a change is under way: every live member holds the target, so arcs are copied\n"
        "\n"
        "kind  dir  arc                 from  to         keys      bytes        rate  eta  "
        "state      progress\n"
        "join  in   3fa2c1d0..8c01aa92  n2    n4  420 of 1000  420.0 KiB  64.0 KiB/s  9 s  "
        "streaming  [########............]  42%\n"
        "join  in   8c01aa92..a0b1c2d3  n3    n4            0        0 B       0 B/s    -  "
        "checking\n";
    char *got;

    for (int resp2 = 0; resp2 <= 1; resp2++) {
        as_resp2 = resp2;
        got = transfers_table_of(transfers_reply(true));
        ck_assert_str_eq(got, want);
        free(got);
    }
}
END_TEST

START_TEST(test_transfers_none)
{
    static const char want[] = "node n4 (normal): ring 4c1e2a9f0b3d5e71, target 4c1e2a9f0b3d5e71\n"
                               "no change under way\n"
                               "\n"
                               "no transfers under way\n";
    char *got;

    as_resp2 = false;
    got = transfers_table_of(transfers_reply(false));
    ck_assert_str_eq(got, want);
    free(got);
}
END_TEST

/* JSON: booleans as true/false, every transfer not finished with its fields in order. */
START_TEST(test_transfers_json)
{
    static const char want[] =
        "{\"node\":\"n4\",\"status\":\"joining\",\"ring\":\"4c1e2a9f0b3d5e71\","
        "\"target\":\"0b3d5e714c1e2a9f\",\"changing\":true,\"agreed\":true,\"transfers\":["
        "{\"kind\":\"join\",\"state\":\"streaming\",\"direction\":\"in\","
        "\"start\":\"3fa2c1d04b5e6f70\",\"end\":\"8c01aa92e3f4a5b6\",\"from\":\"n2\",\"to\":\"n4\","
        "\"keys\":420,\"keys_total\":1000,\"bytes\":430080,\"rate_bps\":65536,\"eta_s\":9},"
        "{\"kind\":\"join\",\"state\":\"checking\",\"direction\":\"in\","
        "\"start\":\"8c01aa92e3f4a5b6\",\"end\":\"a0b1c2d3e4f50617\",\"from\":\"n3\",\"to\":\"n4\","
        "\"keys\":0,\"keys_total\":0,\"bytes\":0,\"rate_bps\":0,\"eta_s\":-1}]}";

    for (int resp2 = 0; resp2 <= 1; resp2++) {
        struct resp_reply *r;
        struct view_transfers v;
        char err[256];
        as_resp2 = resp2;
        r = transfers_reply(true);
        ck_assert_int_eq(view_transfers_parse(&v, r, err, sizeof(err)), 0);
        ck_assert_uint_eq(v.n, 3);
        assert_json(view_transfers_json(&v), want);
        view_transfers_free(&v);
        resp_reply_free(r);
    }
}
END_TEST

static void assert_transfers_refused(struct resp_reply *r, const char *want)
{
    struct view_transfers v;
    char err[256];

    ck_assert_int_eq(view_transfers_parse(&v, r, err, sizeof(err)), RK_ESYNTAX);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(v.t);
    resp_reply_free(r);
}

/* A missing field, a field of another type, a negative count: refused, naming it. */
START_TEST(test_transfers_refused)
{
    struct resp_reply *r;

    as_resp2 = false;
    assert_transfers_refused(t_int(3), "expected a map, got an integer");
    r = transfers_reply(true);
    resp_reply_free(r->elem[9]);
    r->elem[9] = t_int(2);
    assert_transfers_refused(r, "'changing' is an integer, expected 0 or 1");
    r = transfers_reply(true);
    resp_reply_free(r->elem[4]);
    r->elem[4] = t_bulk("rung");
    assert_transfers_refused(r, "'ring' is missing");
    r = transfers_reply(true);
    resp_reply_free(r->elem[13]->elem[1]->elem[15]);
    r->elem[13]->elem[1]->elem[15] = t_int(-5);
    assert_transfers_refused(r, "transfer 2: 'keys' is negative");
    r = transfers_reply(true);
    resp_reply_free(r->elem[13]->elem[0]->elem[23]);
    r->elem[13]->elem[0]->elem[23] = t_int(-2);
    assert_transfers_refused(r, "transfer 1: 'eta_s' is negative");
    r = transfers_reply(true);
    resp_reply_free(r->elem[13]->elem[0]->elem[13]);
    r->elem[13]->elem[0]->elem[13] = t_int(7);
    assert_transfers_refused(r, "transfer 1: 'to' is an integer, expected a string");
}
END_TEST

static Suite *cli_view_suite(void)
{
    Suite *s = suite_create("cli_view");
    const struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"status_table", test_status_table},
        {"status_table_resp2", test_status_table_resp2},
        {"status_healthy", test_status_healthy},
        {"member_code", test_member_code},
        {"status_json", test_status_json},
        {"status_json_not_utf8", test_status_json_not_utf8},
        {"status_refused", test_status_refused},
        {"status_control_bytes", test_status_control_bytes},
        {"status_changing", test_status_changing},
        {"members_table", test_members_table},
        {"members_json", test_members_json},
        {"members_refused", test_members_refused},
        {"ring_table", test_ring_table},
        {"ring_json", test_ring_json},
        {"ring_dot", test_ring_dot},
        {"ring_dot_quoting", test_ring_dot_quoting},
        {"ring_refused", test_ring_refused},
        {"ring_shares_refused", test_ring_shares_refused},
        {"replicas_agree", test_replicas_agree},
        {"replicas_differ", test_replicas_differ},
        {"replicas_none", test_replicas_none},
        {"replicas_hints", test_replicas_hints},
        {"replicas_json", test_replicas_json},
        {"replicas_refused", test_replicas_refused},
        {"hints_table", test_hints_table},
        {"hints_json", test_hints_json},
        {"hints_refused", test_hints_refused},
        {"transfers_table", test_transfers_table},
        {"transfers_none", test_transfers_none},
        {"transfers_json", test_transfers_json},
        {"transfers_refused", test_transfers_refused},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cli_view_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
