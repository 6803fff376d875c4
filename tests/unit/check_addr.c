/*
 * check_addr.c - unit tests of the one "host:port" parser and formatter
 * (src/base/addr.c).
 *
 * One test case per rule of addr.h: the three kinds of host, the port,
 * the default port, the empty host, the length bounds (255 and 256 bytes
 * of name), the phrase each refusal gives, that bytes past len are never
 * read, and that the text form parses back to the same address.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "error.h"

static int parse(const char *s, uint16_t def, struct addr *a, const char **why)
{
    return addr_parse(s, strlen(s), def, a, why);
}

/* s parses to host, port and kind, and formats back to want (s when NULL). */
static void assert_ok(const char *s, const char *host, uint16_t port, enum addr_kind kind,
                      const char *want)
{
    struct addr a;
    const char *why = "unset";
    char text[ADDR_TEXT_MAX];

    ck_assert_msg(parse(s, 0, &a, &why) == 0, "'%s' refused: %s", s, why);
    ck_assert_str_eq(a.host, host);
    ck_assert_uint_eq(a.port, port);
    ck_assert_int_eq(a.kind, kind);
    ck_assert_int_eq(addr_format(text, sizeof(text), a.host, a.port), 0);
    ck_assert_str_eq(text, want != NULL ? want : s);
}

/* s is refused with code rc and phrase want, and *out is left alone. */
static void assert_bad(const char *s, uint16_t def, int rc, const char *want)
{
    struct addr a;
    const char *why = NULL;

    memset(&a, 0x5a, sizeof(a));
    ck_assert_msg(parse(s, def, &a, &why) == rc, "'%s' not refused with %d", s, rc);
    ck_assert_msg(why != NULL && strcmp(why, want) == 0, "'%s': phrase '%s', want '%s'", s,
                  why != NULL ? why : "(null)", want);
    ck_assert_uint_eq((unsigned char)a.host[0], 0x5a);
    ck_assert_uint_eq(a.port, 0x5a5a);
}

START_TEST(test_ipv4)
{
    assert_ok("127.0.0.1:7371", "127.0.0.1", 7371, ADDR_IPV4, NULL);
    assert_ok("0.0.0.0:1", "0.0.0.0", 1, ADDR_IPV4, NULL);
    assert_ok("255.255.255.255:65535", "255.255.255.255", 65535, ADDR_IPV4, NULL);
    assert_bad("999.0.0.1:1", 0, RK_ESYNTAX, "the host is not an IPv4 address");
    assert_bad("1.2.3:1", 0, RK_ESYNTAX, "the host is not an IPv4 address");
    assert_bad("1.2.3.4.5:1", 0, RK_ESYNTAX, "the host is not an IPv4 address");
    assert_bad("127.000.0.1:1", 0, RK_ESYNTAX, "the host is not an IPv4 address");
    assert_bad("1234:1", 0, RK_ESYNTAX, "the host is not an IPv4 address");
}
END_TEST

START_TEST(test_ipv6)
{
    assert_ok("[::1]:7371", "::1", 7371, ADDR_IPV6, NULL);
    assert_ok("[::]:80", "::", 80, ADDR_IPV6, NULL);
    /* one address, one spelling: the canonical form is kept */
    assert_ok("[0:0:0:0:0:0:0:1]:80", "::1", 80, ADDR_IPV6, "[::1]:80");
    assert_ok("[FE80::1]:80", "fe80::1", 80, ADDR_IPV6, "[fe80::1]:80");
    assert_ok("[::ffff:10.0.0.1]:9", "::ffff:10.0.0.1", 9, ADDR_IPV6, NULL);
    assert_bad("::1:80", 0, RK_ESYNTAX, "an IPv6 host goes in brackets, as [::1]:7371");
    assert_bad("a:b:9", 7370, RK_ESYNTAX, "an IPv6 host goes in brackets, as [::1]:7371");
    assert_bad("[::1:80", 0, RK_ESYNTAX, "an IPv6 host has no closing ']'");
    assert_bad("[::1]80", 0, RK_ESYNTAX, "']' is not followed by ':port'");
    assert_bad("[1.2.3.4]:80", 0, RK_ESYNTAX, "the host is not an IPv6 address");
    assert_bad("[fe80::1%eth0]:80", 0, RK_ESYNTAX, "the host is not an IPv6 address");
    assert_bad("[host]:80", 0, RK_ESYNTAX, "the host is not an IPv6 address");
    assert_bad("[]:80", 0, RK_ESYNTAX, "the host is empty");
}
END_TEST

START_TEST(test_name)
{
    assert_ok("localhost:1", "localhost", 1, ADDR_NAME, NULL);
    assert_ok("db-1.example.com:7370", "db-1.example.com", 7370, ADDR_NAME, NULL);
    assert_ok("node_2:7370", "node_2", 7370, ADDR_NAME, NULL);
    assert_ok("1.2.3.x:7", "1.2.3.x", 7, ADDR_NAME, NULL);
    assert_bad("a b:1", 0, RK_ESYNTAX, "the host has a character other than A-Z a-z 0-9 . - _");
    assert_bad("h\t:1", 0, RK_ESYNTAX, "the host has a character other than A-Z a-z 0-9 . - _");
    assert_bad("h/x:1", 0, RK_ESYNTAX, "the host has a character other than A-Z a-z 0-9 . - _");
    assert_bad(" h:1", 0, RK_ESYNTAX, "the host has a character other than A-Z a-z 0-9 . - _");
}
END_TEST

START_TEST(test_host_length)
{
    char s[ADDR_HOST_MAX + 16];
    struct addr a;

    memset(s, 'h', ADDR_HOST_MAX);
    strcpy(s + ADDR_HOST_MAX, ":65535");
    ck_assert_int_eq(parse(s, 0, &a, NULL), 0);
    ck_assert_uint_eq(strlen(a.host), ADDR_HOST_MAX);
    ck_assert_uint_eq(strlen(s), ADDR_TEXT_MAX - 1);
    memset(s, 'h', ADDR_HOST_MAX + 1);
    strcpy(s + ADDR_HOST_MAX + 1, ":1");
    assert_bad(s, 0, RK_ETOOBIG, "the host is longer than 255 bytes");
}
END_TEST

START_TEST(test_empty_host)
{
    assert_bad("", 0, RK_ESYNTAX, "the host is empty");
    assert_bad("", 7370, RK_ESYNTAX, "the host is empty");
    assert_bad(":7370", 0, RK_ESYNTAX, "the host is empty");
    assert_bad(":", 7370, RK_ESYNTAX, "the host is empty");
}
END_TEST

START_TEST(test_port)
{
    static const char *const bad[] = {"h:",      "h:0",      "h:00",   "h:080",  "h:65536",
                                      "h:99999", "h:123456", "h:+1",   "h:-1",   "h:1a",
                                      "h: 1",    "h:1 ",     "h:http", "[::1]:", "[::1]:0"};

    assert_ok("h:1", "h", 1, ADDR_NAME, NULL);
    assert_ok("h:65535", "h", 65535, ADDR_NAME, NULL);
    assert_ok("h:10", "h", 10, ADDR_NAME, NULL);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_bad(bad[i], 7370, RK_ERANGE, "the port is not 1 to 65535");
    }
}
END_TEST

START_TEST(test_default_port)
{
    struct addr a;

    ck_assert_int_eq(parse("10.0.0.5", 7371, &a, NULL), 0);
    ck_assert_str_eq(a.host, "10.0.0.5");
    ck_assert_uint_eq(a.port, 7371);
    ck_assert_int_eq(parse("[::1]", 7371, &a, NULL), 0);
    ck_assert_str_eq(a.host, "::1");
    ck_assert_uint_eq(a.port, 7371);
    ck_assert_int_eq(parse("node1:9", 7371, &a, NULL), 0);
    ck_assert_uint_eq(a.port, 9);
    assert_bad("10.0.0.5", 0, RK_ESYNTAX, "the port is missing");
    assert_bad("[::1]", 0, RK_ESYNTAX, "the port is missing");
    /* a missing port is named before anything the host may have wrong */
    assert_bad("9100", 0, RK_ESYNTAX, "the port is missing");
    assert_bad("a b", 0, RK_ESYNTAX, "the port is missing");
}
END_TEST

/* Only s[0..len) is read: a prefix parses on its own, a NUL inside is a bad character. */
START_TEST(test_length_bounded)
{
    static const char text[] = "node1:7370,node2:7371";
    const char nul[] = {'a', '\0', 'b', ':', '1'};
    struct addr a;
    const char *why;

    ck_assert_int_eq(addr_parse(text, 10, 0, &a, NULL), 0);
    ck_assert_str_eq(a.host, "node1");
    ck_assert_uint_eq(a.port, 7370);
    ck_assert_int_eq(addr_parse(text, 8, 0, &a, NULL), 0);
    ck_assert_uint_eq(a.port, 73);
    ck_assert_int_eq(addr_parse(nul, sizeof(nul), 0, &a, &why), RK_ESYNTAX);
    ck_assert_str_eq(why, "the host has a character other than A-Z a-z 0-9 . - _");
    ck_assert_int_eq(addr_parse("[::1]", 5, 0, &a, &why), RK_ESYNTAX);
    ck_assert_str_eq(why, "the port is missing");
    ck_assert_int_eq(addr_parse("[::1]:80", 4, 0, &a, &why), RK_ESYNTAX);
    ck_assert_str_eq(why, "an IPv6 host has no closing ']'");
}
END_TEST

START_TEST(test_format)
{
    char text[ADDR_TEXT_MAX], small[8];

    ck_assert_int_eq(addr_format(text, sizeof(text), "10.0.0.1", 7370), 0);
    ck_assert_str_eq(text, "10.0.0.1:7370");
    ck_assert_int_eq(addr_format(text, sizeof(text), "::1", 7371), 0);
    ck_assert_str_eq(text, "[::1]:7371");
    ck_assert_int_eq(addr_format(small, sizeof(small), "10.0.0.1", 7370), RK_ETOOBIG);
    ck_assert_str_eq(small, "10.0.0.");
    ck_assert_int_eq(addr_format(small, sizeof(small), "h", 7370), 0);
    ck_assert_str_eq(small, "h:7370");
    ck_assert_int_eq(addr_format(small, 6, "h", 7370), RK_ETOOBIG);
}
END_TEST

static Suite *addr_suite(void)
{
    Suite *s = suite_create("addr");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"ipv4", test_ipv4},
        {"ipv6", test_ipv6},
        {"name", test_name},
        {"host_length", test_host_length},
        {"empty_host", test_empty_host},
        {"port", test_port},
        {"default_port", test_default_port},
        {"length_bounded", test_length_bounded},
        {"format", test_format},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 10);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(addr_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
