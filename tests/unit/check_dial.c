/*
 * check_dial.c - unit tests of the CLI's blocking connections (src/cli/dial.c).
 *
 * Timeout parsing is pure and tested case by case (addresses: check_addr.c).  The I/O
 * tests use a socket pair or a loopback listener on a port the kernel
 * picks, so nothing depends on a fixed port; the timeout tests use short
 * deadlines and check both the error and that the wait ended near its
 * deadline rather than hanging.
 */
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "dial.h"
#include "error.h"
#include "net.h"

START_TEST(test_timeout_parse)
{
    static const struct {
        const char *s;
        uint32_t ms;
    } good[] = {
        {"5", 5000},      {"0.25", 250},    {".5", 500},
        {"0.0001", 1},    {"1.0005", 1001}, {"86400", DIAL_TIMEOUT_MAX_MS},
        {"1e3", 1000000},
    };
    static const char *const bad[] = {"0",   "0.0", "-1", "abc",   "",     "5s",
                                      "nan", "inf", " 5", "86401", "1e10", "+5"};
    uint32_t ms;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_msg(dial_timeout_parse(good[i].s, &ms) == 0, "'%s' refused", good[i].s);
        ck_assert_uint_eq(ms, good[i].ms);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(dial_timeout_parse(bad[i], &ms) == RK_EINVAL, "'%s' accepted", bad[i]);
    }
}
END_TEST

/* A listener on a loopback port the kernel picks. */
static int listen_any(uint16_t *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    char err[256];
    int fd = net_listen("127.0.0.1", 0, 16, err, sizeof(err));

    ck_assert_msg(fd >= 0, "listen: %s", err);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    *port = ntohs(sa.sin_port);
    return fd;
}

START_TEST(test_connect_refused)
{
    struct dial d;
    char err[256], want[128];
    uint16_t port;
    int lfd = listen_any(&port);

    close(lfd); /* nothing listens there now */
    ck_assert_int_eq(dial_connect(&d, "127.0.0.1", port, 1000, err, sizeof(err)), RK_EIO);
    ck_assert_int_eq(d.fd, -1);
    snprintf(want, sizeof(want), "cannot connect to 127.0.0.1:%u: %s", port,
             strerror(ECONNREFUSED));
    ck_assert_str_eq(err, want);
}
END_TEST

/* The kernel completes a connection to a listener that never accepts: reads then time out. */
START_TEST(test_recv_timeout)
{
    struct dial d;
    struct buf in;
    char err[256];
    uint16_t port;
    int lfd = listen_any(&port);
    uint64_t t0, waited;

    buf_init(&in, 0);
    ck_assert_int_eq(dial_connect(&d, "127.0.0.1", port, 100, err, sizeof(err)), 0);
    t0 = clock_mono_us();
    ck_assert_int_eq(dial_recv(&d, &in, 4096, dial_deadline(100), err, sizeof(err)), RK_EIO);
    waited = clock_mono_us() - t0;
    ck_assert_msg(waited >= 90000 && waited < 2000000, "waited %llu us",
                  (unsigned long long)waited);
    ck_assert_msg(strstr(err, "timed out after 0.1 s waiting for 127.0.0.1:") == err, "err: %s",
                  err);
    ck_assert_uint_eq(in.len, 0);
    dial_close(&d);
    ck_assert_int_eq(d.fd, -1);
    dial_close(&d);
    buf_free(&in);
    close(lfd);
}
END_TEST

/* A dial over one end of a socket pair; the other end is *peer. */
static void pair_dial(struct dial *d, int *peer)
{
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    d->fd = sv[0];
    d->timeout_ms = 1000;
    snprintf(d->addr, sizeof(d->addr), "pair:1");
    *peer = sv[1];
}

START_TEST(test_recv_then_eof)
{
    struct dial d;
    struct buf in;
    char err[256];
    int peer;

    pair_dial(&d, &peer);
    buf_init(&in, 0);
    ck_assert_int_eq(write(peer, "hello", 5), 5);
    close(peer);
    /* the bytes come first; the end is reported by the next call */
    ck_assert_int_eq(dial_recv(&d, &in, 2, dial_deadline(1000), err, sizeof(err)), 0);
    ck_assert_uint_eq(in.len, 5);
    ck_assert_int_eq(memcmp(buf_data(&in), "hello", 5), 0);
    ck_assert_int_eq(dial_recv(&d, &in, 2, dial_deadline(1000), err, sizeof(err)), RK_ECLOSED);
    ck_assert_str_eq(err, "pair:1 closed the connection");
    dial_close(&d);
    buf_free(&in);
}
END_TEST

START_TEST(test_recv_bounded)
{
    struct dial d;
    struct buf in;
    char err[256];
    int peer;

    pair_dial(&d, &peer);
    buf_init(&in, 4);
    ck_assert_int_eq(write(peer, "0123456789", 10), 10);
    ck_assert_int_eq(dial_recv(&d, &in, 64, dial_deadline(1000), err, sizeof(err)), 0);
    ck_assert_uint_eq(in.len, 4);
    ck_assert_int_eq(dial_recv(&d, &in, 64, dial_deadline(1000), err, sizeof(err)), RK_ETOOBIG);
    ck_assert_uint_eq(in.len, 4);
    dial_close(&d);
    close(peer);
    buf_free(&in);
}
END_TEST

START_TEST(test_send_round_trip)
{
    struct dial d;
    char err[256], got[16];
    int peer;

    pair_dial(&d, &peer);
    ck_assert_int_eq(dial_send(&d, "ping\r\n", 6, dial_deadline(1000), err, sizeof(err)), 0);
    ck_assert_int_eq(read(peer, got, sizeof(got)), 6);
    ck_assert_int_eq(memcmp(got, "ping\r\n", 6), 0);
    close(peer);
    ck_assert_int_eq(dial_send(&d, "x", 1, dial_deadline(1000), err, sizeof(err)), RK_ECLOSED);
    ck_assert_ptr_nonnull(strstr(err, "connection to pair:1 lost while sending"));
    dial_close(&d);
}
END_TEST

/* A peer that reads nothing: the socket buffers fill and the send times out. */
START_TEST(test_send_timeout)
{
    size_t len = 16 * 1024 * 1024;
    char *big = calloc(1, len), err[256];
    struct dial d;
    int peer;

    ck_assert_ptr_nonnull(big);
    pair_dial(&d, &peer);
    d.timeout_ms = 100;
    ck_assert_int_eq(dial_send(&d, big, len, dial_deadline(100), err, sizeof(err)), RK_EIO);
    ck_assert_str_eq(err, "timed out after 0.1 s sending to pair:1");
    dial_close(&d);
    close(peer);
    free(big);
}
END_TEST

static Suite *dial_suite(void)
{
    Suite *s = suite_create("dial");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"timeout_parse", test_timeout_parse}, {"connect_refused", test_connect_refused},
        {"recv_timeout", test_recv_timeout},   {"recv_then_eof", test_recv_then_eof},
        {"recv_bounded", test_recv_bounded},   {"send_round_trip", test_send_round_trip},
        {"send_timeout", test_send_timeout},
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
    SRunner *sr = srunner_create(dial_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
