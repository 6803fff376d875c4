/*
 * check_peer_lanes.c - the lanes of real node-to-node connections
 * (src/node/peer.c with src/node/lanes.c): two nodes in this process, on
 * one event loop, connected over loopback through the sealed channel.
 *
 * - A peer that reads nothing: control messages queue up to
 *   peer-queue-max, never past it, and the one that would pass it closes
 *   the connection (queue_full, counted), telling a waiting bulk producer.
 * - A receiver refuses bulk over the credit it granted (bulk_over_credit).
 * - A sender refuses a grant past the window it was given (bad_credit).
 * - Bulk waits for credit: a peer that reads nothing stops the producer
 *   after one window, and the bulk sent never passes it.
 * - A second IDENT on an identified connection is refused (syntax), not
 *   taken as a new identity with a second first grant.
 * - A bulk stream (RINGKV BULKTEST) started on a connection the other end
 *   has reset fails, and never touches the connection after its write
 *   error closed it (run in the ASan build to see a use after free).
 *
 * Waits drive the loop until a condition holds, with an iteration bound;
 * nothing asserts on time.
 */
#include <check.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "bulktest.h"
#include "error.h"
#include "peer.h"
#include "server.h"
#include "settings.h"

/* Loop turns a wait may take: each blocks at most T_TICK seconds. */
#define T_TURNS 2000
#define T_TICK 0.01
/* Pings sent at most before the queue must have filled (1MB queue, kernel buffers). */
#define T_PINGS_MAX 10000000
#define T_QUEUE_MAX (1024 * 1024)

static char dir[64];
static struct server *a, *b;
static struct peer *pa; /* a's connection to b */
static ev_timer tick;

static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

static int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

static void set(struct settings *c, const char *name, const char *value)
{
    char err[256];

    ck_assert_msg(settings_set(c, name, value, err, sizeof(err)) == 0, "%s: %s", name, err);
}

static struct server *node(const char *id, int peer_port)
{
    struct settings c;
    struct server *n;
    char text[128], err[512];

    settings_init(&c);
    set(&c, "id", id);
    snprintf(text, sizeof(text), "%s/%s", dir, id);
    set(&c, "data", text);
    snprintf(text, sizeof(text), "%s/key", dir);
    set(&c, "cluster-key", text);
    snprintf(text, sizeof(text), "127.0.0.1:%d", peer_port);
    set(&c, "listen", text);
    snprintf(text, sizeof(text), "127.0.0.1:%d", free_port());
    set(&c, "client", text);
    set(&c, "sync", "none");
    set(&c, "value-max", "64KB");
    set(&c, "frame-max", "1MB");
    set(&c, "peer-queue-max", "1MB");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
    ck_assert_msg(server_create(&n, &c, err, sizeof(err)) == 0, "%s", err);
    ev_io_start(n->loop, &n->listeners[SERVER_PORT_PEER].w);
    return n;
}

/* Turn the loop until cond(arg) holds; false when it never did. */
static bool spin(bool (*cond)(void *), void *arg)
{
    for (int i = 0; i < T_TURNS; i++) {
        if (cond(arg)) {
            return true;
        }
        ev_run(a->loop, EVRUN_ONCE);
    }
    return cond(arg);
}

/* b's connection from a, once identified; NULL before. */
static struct peer *b_side(void)
{
    for (struct peer *p = b->peers; p != NULL; p = p->next) {
        if (!p->dead && p->identified) {
            return p;
        }
    }
    return NULL;
}

/* Both ends identified, and a holds b's first grant. */
static bool connected(void *arg)
{
    (void)arg;
    return pa->identified && pa->lanes.peer_window > 0 && b_side() != NULL;
}

static void setup(void)
{
    struct channel_key *k;
    char path[128], err[256];
    int pb = free_port();

    log_init("test", stderr);
    log_set_level(LOG_WARN);
    snprintf(dir, sizeof(dir), "/tmp/check_peer_lanes.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/key", dir);
    ck_assert_int_eq(channel_key_generate(&k), 0);
    ck_assert_int_eq(channel_key_write(k, path, err, sizeof(err)), 0);
    channel_key_free(k);
    a = node("a", free_port());
    b = node("b", pb);
    snprintf(path, sizeof(path), "127.0.0.1:%d", pb);
    pa = peer_connect(a, path, err, sizeof(err));
    ck_assert_msg(pa != NULL, "%s", err);
    ev_timer_init(&tick, on_tick, T_TICK, T_TICK);
    ev_timer_start(a->loop, &tick);
    ck_assert(spin(connected, NULL));
}

static void teardown(void)
{
    char cmd[128];

    ev_timer_stop(a->loop, &tick);
    server_destroy(a);
    server_destroy(b);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static int producer_status = 1;

static void producer(struct peer *p, void *arg, int status)
{
    (void)p;
    (void)arg;
    producer_status = status;
}

/* A bulk message of len payload bytes. */
static struct msg bulk(size_t len)
{
    static const uint8_t zeros[512 * 1024];
    struct msg m = {.type = MSG_BULK};

    ck_assert_uint_le(len, sizeof(zeros));
    m.u.bulk.data = zeros;
    m.u.bulk.len = len;
    return m;
}

/* Send bulk to a peer that reads nothing until told to wait; returns the bytes sent. */
static uint64_t bulk_until_wait(void)
{
    struct msg m = bulk(16 * 1024);
    uint64_t sent = 0;
    int rc;

    for (int i = 0; i < 1000; i++) {
        rc = peer_send_bulk(pa, &m);
        if (rc == PEER_BULK_WAIT) {
            return sent;
        }
        ck_assert_int_eq(rc, 0);
        sent += m.u.bulk.len;
        ev_run(a->loop, EVRUN_NOWAIT);
    }
    ck_abort_msg("bulk never had to wait");
    return sent;
}

START_TEST(test_queue_full_closes)
{
    struct peer *pb = b_side();
    struct msg ping = {.type = MSG_PING};
    uint64_t full_before = a->metrics.peer_queue_full;
    int rc = 0;
    long i;

    ev_io_stop(b->loop, &pb->rio); /* b reads nothing from now on */
    ck_assert_uint_le(bulk_until_wait(), pa->lanes.peer_window);
    peer_bulk_wait(pa, producer, NULL);
    ck_assert_uint_le(pa->lanes.inflight_peak, pa->lanes.peer_window);
    for (i = 0; i < T_PINGS_MAX && rc == 0; i++) {
        ck_assert_uint_le(pa->out.len + pa->queued.len, T_QUEUE_MAX);
        ping.u.ping.seq = (uint64_t)i;
        rc = peer_send(pa, &ping);
        if (i % 64 == 0) {
            ev_run(a->loop, EVRUN_NOWAIT);
        }
    }
    ck_assert_int_eq(rc, RK_ETOOBIG);
    ck_assert_uint_eq(a->metrics.peer_queue_full, full_before + 1);
    ck_assert_int_eq(producer_status, RK_ECLOSED);
    ck_assert_uint_eq(a->n_peers, 0);
}
END_TEST

static bool b_closed(void *arg)
{
    (void)arg;
    return b_side() == NULL;
}

static bool a_closed(void *arg)
{
    (void)arg;
    return a->n_peers == 0;
}

START_TEST(test_bulk_over_credit_refused)
{
    struct msg m = bulk(300 * 1024); /* over b's whole window of 256 KiB */

    /* a cheats: it pretends to a window and a credit b never granted */
    pa->lanes.peer_window = pa->lanes.credit = 4u * 1024 * 1024;
    ck_assert_int_eq(peer_send_bulk(pa, &m), 0);
    ck_assert(spin(b_closed, NULL));
    ck_assert_uint_eq(b->metrics.peer_credit_errors, 1);
    ck_assert_uint_eq(b->metrics.peer_bulk_bytes_in, 0);
}
END_TEST

START_TEST(test_grant_past_window_refused)
{
    struct msg credit = {.type = MSG_CREDIT};

    /* a holds the whole window: one more byte of grant breaks the rules */
    ck_assert_uint_eq(pa->lanes.credit, pa->lanes.peer_window);
    credit.u.credit.grant = 1;
    credit.u.credit.window = pa->lanes.peer_window;
    ck_assert_int_eq(peer_send(b_side(), &credit), 0);
    ck_assert(spin(a_closed, NULL));
    ck_assert_uint_eq(a->metrics.peer_credit_errors, 1);
}
END_TEST

START_TEST(test_bulk_refused_in_control_lane)
{
    struct msg m = bulk(10);
    struct msg ping = {.type = MSG_PING};

    ck_assert_int_eq(peer_send(pa, &m), RK_EINVAL);
    ck_assert_int_eq(peer_send_bulk(pa, &ping), RK_EINVAL);
    m = bulk(pa->lanes.peer_window / 2 + 1);
    ck_assert_int_eq(peer_send_bulk(pa, &m), RK_ETOOBIG);
    ck_assert_uint_eq(a->n_peers, 1); /* neither closed the connection */
}
END_TEST

START_TEST(test_second_ident_refused)
{
    struct msg ident = {.type = MSG_IDENT};
    uint64_t syntax_before = a->metrics.peer_rejected[METRICS_REJECT_SYNTAX];

    /* b speaks again as someone else: a must not re-identify it nor grant its window again */
    ident.u.ident = pa->remote;
    snprintf(ident.u.ident.id, sizeof(ident.u.ident.id), "c");
    ck_assert_int_eq(peer_send(b_side(), &ident), 0);
    ck_assert(spin(a_closed, NULL));
    ck_assert_uint_eq(a->metrics.peer_rejected[METRICS_REJECT_SYNTAX], syntax_before + 1);
    ck_assert_uint_eq(b->metrics.peer_credit_errors, 0);
}
END_TEST

/* b resets its end (RST, not FIN): a's next write fails. */
static void b_resets(void)
{
    struct peer *pb = b_side();
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    ck_assert_ptr_nonnull(pb);
    ck_assert_int_eq(setsockopt(pb->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    peer_close(pb, "test_reset");
}

START_TEST(test_bulktest_on_reset_connection)
{
    struct buf report;
    char err[256];

    b_resets();
    /* a has not looked at its socket since: the stream's first write meets the reset */
    ck_assert_int_eq(bulktest_start(a, "b", 4u * 1024 * 1024, err, sizeof(err)), 0);
    ck_assert_uint_eq(a->n_peers, 0);
    buf_init(&report, 0);
    bulktest_report(a, &report, 3);
    ck_assert_ptr_nonnull(memmem(buf_data(&report), report.len, "failed", 6));
    ck_assert_ptr_nonnull(memmem(buf_data(&report), report.len, "the connection closed", 21));
    /* the chunk whose write met the reset was not sent */
    ck_assert_ptr_nonnull(memmem(buf_data(&report), report.len, "$4\r\nsent\r\n:0\r\n", 14));
    buf_free(&report);
    /* a second stream finds no connection, not a stale one */
    ck_assert_int_eq(bulktest_start(a, "b", 1024, err, sizeof(err)), RK_ENOTFOUND);
}
END_TEST

static Suite *peer_lanes_suite(void)
{
    Suite *s = suite_create("peer_lanes");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"queue_full_closes", test_queue_full_closes},
        {"bulk_over_credit_refused", test_bulk_over_credit_refused},
        {"grant_past_window_refused", test_grant_past_window_refused},
        {"bulk_refused_in_control_lane", test_bulk_refused_in_control_lane},
        {"bulktest_on_reset_connection", test_bulktest_on_reset_connection},
        {"second_ident_refused", test_second_ident_refused},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(peer_lanes_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
