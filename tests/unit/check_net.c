/*
 * check_net.c - unit tests of the socket helpers (src/base/net.c): the one
 * send loop, and listening, connecting and naming addresses over IPv4 and
 * IPv6 loopback.
 *
 * The send tests use a non-blocking socket pair, so "the socket is full"
 * is reached by writing until the kernel refuses, with no peer timing
 * involved.  Ports are picked by the kernel.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "net.h"

static void pair(int sv[2])
{
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
}

START_TEST(test_send_all)
{
    char got[16];
    size_t sent = 99;
    int sv[2];

    pair(sv);
    ck_assert_int_eq(net_send(sv[0], "hello", 5, &sent), 0);
    ck_assert_uint_eq(sent, 5);
    ck_assert_int_eq(read(sv[1], got, sizeof(got)), 5);
    ck_assert_int_eq(net_send(sv[0], "", 0, &sent), 0);
    ck_assert_uint_eq(sent, 0);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* A peer that reads nothing: the loop stops at a full socket with a count, not an error. */
START_TEST(test_send_full_then_resume)
{
    size_t len = 8 * 1024 * 1024, sent = 0, total = 0;
    char *big = calloc(1, len), sink[65536];
    int sv[2];

    ck_assert_ptr_nonnull(big);
    pair(sv);
    ck_assert_int_eq(net_send(sv[0], big, len, &sent), 0);
    ck_assert_uint_gt(sent, 0);
    ck_assert_uint_lt(sent, len);
    /* the reader drains some; the rest goes on from where it stopped */
    total = sent;
    while (total < len) {
        ssize_t r = read(sv[1], sink, sizeof(sink));
        ck_assert_int_gt(r, 0);
        ck_assert_int_eq(net_send(sv[0], big + total, len - total, &sent), 0);
        total += sent;
    }
    ck_assert_uint_eq(total, len);
    close(sv[0]);
    close(sv[1]);
    free(big);
}
END_TEST

START_TEST(test_send_closed)
{
    size_t sent = 99;
    int sv[2];

    pair(sv);
    close(sv[1]);
    /* no SIGPIPE: the test would die of it */
    ck_assert_int_eq(net_send(sv[0], "x", 1, &sent), RK_ECLOSED);
    ck_assert_uint_eq(sent, 0);
    ck_assert_int_eq(errno, EPIPE);
    close(sv[0]);
    ck_assert_int_eq(net_send(sv[0], "x", 1, &sent), RK_EIO);
    ck_assert_int_eq(errno, EBADF);
}
END_TEST

START_TEST(test_send_buf_consumes)
{
    struct buf out;
    char got[16];
    size_t sent = 0;
    int sv[2];

    pair(sv);
    buf_init(&out, 0);
    ck_assert_int_eq(buf_append_str(&out, "abcdef"), 0);
    ck_assert_int_eq(net_send_buf(sv[0], &out, &sent), 0);
    ck_assert_uint_eq(sent, 6);
    ck_assert_uint_eq(out.len, 0);
    ck_assert_int_eq(read(sv[1], got, sizeof(got)), 6);
    ck_assert_int_eq(memcmp(got, "abcdef", 6), 0);
    buf_free(&out);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* Listen on host port 0, connect to it, and check both ends' text. */
static void round_trip(const char *host, const char *prefix)
{
    struct sockaddr_storage a;
    socklen_t alen = sizeof(a);
    struct pollfd pfd;
    char err[256], text[NET_ADDR_TEXT];
    uint16_t port;
    int lfd, cfd, afd;

    lfd = net_listen(host, 0, 4, err, sizeof(err));
    ck_assert_msg(lfd >= 0, "listen %s: %s", host, err);
    ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    port = ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
                                         : ((struct sockaddr_in *)&a)->sin_port);
    cfd = net_connect(host, port, host, err, sizeof(err));
    ck_assert_msg(cfd >= 0, "connect %s: %s", host, err);
    pfd.fd = cfd;
    pfd.events = POLLOUT;
    ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
    ck_assert_int_eq(net_connect_result(cfd), 0);
    net_peer_text(cfd, text);
    ck_assert_msg(strncmp(text, prefix, strlen(prefix)) == 0, "peer text %s", text);
    ck_assert_int_eq(atoi(text + strlen(prefix)), port);
    pfd.fd = lfd;
    pfd.events = POLLIN;
    ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
    afd = net_accept(lfd, &a, &alen);
    ck_assert_int_ge(afd, 0);
    ck_assert(net_is_loopback(&a));
    net_addr_text(&a, text);
    ck_assert_msg(strncmp(text, prefix, strlen(prefix)) == 0, "accepted text %s", text);
    close(afd);
    close(cfd);
    close(lfd);
}

START_TEST(test_ipv4_loopback)
{
    round_trip("127.0.0.1", "127.0.0.1:");
}
END_TEST

START_TEST(test_ipv6_loopback)
{
    char err[256];
    int probe = socket(AF_INET6, SOCK_STREAM, 0);

    if (probe < 0) {
        return; /* a kernel without IPv6 */
    }
    close(probe);
    probe = net_listen("::1", 0, 1, err, sizeof(err));
    if (probe < 0) {
        return; /* IPv6 present but ::1 not configured */
    }
    close(probe);
    round_trip("::1", "[::1]:");
}
END_TEST

static Suite *net_suite(void)
{
    Suite *s = suite_create("net");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"send_all", test_send_all},
        {"send_full_then_resume", test_send_full_then_resume},
        {"send_closed", test_send_closed},
        {"send_buf_consumes", test_send_buf_consumes},
        {"ipv4_loopback", test_ipv4_loopback},
        {"ipv6_loopback", test_ipv6_loopback},
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
    SRunner *sr = srunner_create(net_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
