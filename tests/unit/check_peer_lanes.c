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
 * - What one loop pass sends leaves before the loop sleeps, in one frame,
 *   without arming the write watcher; a connection closed in the pass it
 *   was queued to be written in is let go (ASan sees a leak or a use after
 *   free otherwise); a node destroyed then leaves nothing on the shared loop.
 * - A write that fails in that flush (the other end reset the connection)
 *   closes the connection from the loop's I/O phase, so the requests it
 *   ends are seen by the client layer's prepare watcher before the loop
 *   sleeps.
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
#include "two_nodes.h"

/* Pings sent at most before the queue must have filled (1MB queue, kernel buffers). */
#define T_PINGS_MAX 10000000
#define T_QUEUE_MAX (1024 * 1024)

static struct two_nodes tn;
static struct server *a, *b;
static struct peer *pa; /* a's connection to b */

/* The window the cases below count in (not the default's 1 MiB: the messages stay small). */
static const char *const window_setting[] = {"peer-bulk-window", "256KB", NULL};

static void setup(void)
{
    two_nodes_start(&tn, "check_peer_lanes", window_setting);
    a = tn.a;
    b = tn.b;
    pa = tn.pa;
}

static void teardown(void)
{
    two_nodes_stop(&tn);
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
    struct peer *pb = two_nodes_b_side(&tn);
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
    return two_nodes_b_side(&tn) == NULL;
}

static bool a_closed(void *arg)
{
    (void)arg;
    return a->n_peers == 0;
}

static uint64_t b_in_want;

static bool b_got_all(void *arg)
{
    (void)arg;
    return b->metrics.peer_messages_in >= b_in_want;
}

START_TEST(test_pass_leaves_before_sleep)
{
    struct msg ping = {.type = MSG_PING};

    ev_run(a->loop, EVRUN_NOWAIT); /* what the handshake left to send */
    b_in_want = b->metrics.peer_messages_in + 100;
    for (int i = 0; i < 100; i++) {
        ping.u.ping.seq = (uint64_t)i;
        ck_assert_int_eq(peer_send(pa, &ping), 0);
    }
    ck_assert(pa->flush_queued);
    ck_assert(!ev_is_active(&pa->wio));
    ck_assert_uint_eq(pa->out.len, 0);
    ck_assert_uint_ge(pa->pending_n, 100);
    ev_run(a->loop, EVRUN_NOWAIT);         /* its prepare watcher writes them */
    ck_assert_uint_lt(pa->pending_n, 100); /* (the pass may have queued a gossip answer) */
    ck_assert_uint_eq(pa->out.len, 0);
    ck_assert(!ev_is_active(&pa->wio));
    ck_assert(two_nodes_spin(&tn, b_got_all, NULL));
}
END_TEST

START_TEST(test_closed_while_queued)
{
    struct msg ping = {.type = MSG_PING};

    ck_assert_int_eq(peer_send(pa, &ping), 0);
    ck_assert(pa->flush_queued);
    peer_close(pa, "test");
    ck_assert_uint_eq(a->n_peers, 0);
    ck_assert_ptr_nonnull(a->peers_to_flush); /* still held: freed when let go */
    ev_run(a->loop, EVRUN_NOWAIT);
    ck_assert_ptr_null(a->peers_to_flush);
    ck_assert(two_nodes_spin(&tn, b_closed, NULL));
}
END_TEST

START_TEST(test_destroyed_while_queued)
{
    struct msg ping = {.type = MSG_PING};

    ck_assert_int_eq(peer_send(pa, &ping), 0);
    ck_assert(ev_is_active(&a->peer_prepare_w));
    server_destroy(a); /* before a pass wrote it: its watchers leave the shared loop */
    tn.a = NULL;
    ev_run(b->loop, EVRUN_NOWAIT); /* a's prepare watcher would run on freed memory (ASan) */
    ck_assert(two_nodes_spin(&tn, b_closed, NULL));
}
END_TEST

START_TEST(test_bulk_over_credit_refused)
{
    struct msg m = bulk(300 * 1024); /* over b's whole window of 256 KiB */

    /* a cheats: it pretends to a window and a credit b never granted */
    pa->lanes.peer_window = pa->lanes.credit = 4u * 1024 * 1024;
    ck_assert_int_eq(peer_send_bulk(pa, &m), 0);
    ck_assert(two_nodes_spin(&tn, b_closed, NULL));
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
    ck_assert_int_eq(peer_send(two_nodes_b_side(&tn), &credit), 0);
    ck_assert(two_nodes_spin(&tn, a_closed, NULL));
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
    ck_assert_int_eq(peer_send(two_nodes_b_side(&tn), &ident), 0);
    ck_assert(two_nodes_spin(&tn, a_closed, NULL));
    ck_assert_uint_eq(a->metrics.peer_rejected[METRICS_REJECT_SYNTAX], syntax_before + 1);
    ck_assert_uint_eq(b->metrics.peer_credit_errors, 0);
}
END_TEST

/* b resets its end (RST, not FIN): a's next write fails. */
static void b_resets(void)
{
    struct peer *pb = two_nodes_b_side(&tn);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    ck_assert_ptr_nonnull(pb);
    ck_assert_int_eq(setsockopt(pb->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
    peer_close(pb, "test_reset");
}

/*
 * Stand-ins for the client layer, which finishes the commands a peer's
 * closing ends in its own prepare watcher (priority 0, before the peer
 * layer's), and for the loop's sleeps: a check watcher counts the polls.
 */
static unsigned polls, done_at_poll, seen_at_poll;
static bool req_done, req_seen;

static void count_poll(struct ev_loop *loop, ev_check *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    polls++;
}

static void client_layer_stand_in(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    if (req_done && !req_seen) {
        req_seen = true;
        seen_at_poll = polls;
    }
}

static void req_ended(void *ctx, int result, const struct request_reply *reply, uint64_t elapsed_us)
{
    (void)ctx;
    (void)reply;
    (void)elapsed_us;
    ck_assert_int_eq(result, RK_ECLOSED);
    req_done = true;
    done_at_poll = polls;
}

static bool req_was_seen(void *arg)
{
    (void)arg;
    return req_seen;
}

/*
 * A write that fails in the pass's flush (b reset the connection) closes
 * the peer and ends its outstanding requests.  What their callbacks finish
 * (a coordinator's client commands) is taken by the client layer's prepare
 * watcher: it must see them before the loop sleeps, not at whatever wakes
 * the loop next (a gossip round, 200 ms later).
 */
START_TEST(test_write_error_seen_before_sleep)
{
    struct msg ping = {.type = MSG_PING};
    ev_prepare stand_in;
    ev_check poll_w;
    uint64_t id;

    ev_run(a->loop, EVRUN_NOWAIT); /* what the handshake left to send */
    ev_prepare_init(&stand_in, client_layer_stand_in);
    ev_prepare_start(a->loop, &stand_in);
    ev_check_init(&poll_w, count_poll);
    ev_check_start(a->loop, &poll_w);
    ck_assert_int_eq(request_add(&pa->requests, 1, 0, UINT64_MAX, req_ended, NULL, &id), 0);
    b_resets();
    ck_assert_int_eq(peer_send(pa, &ping), 0); /* its write meets the reset */
    ck_assert(two_nodes_spin(&tn, req_was_seen, NULL));
    ck_assert_uint_eq(a->n_peers, 0);
    ev_prepare_stop(a->loop, &stand_in);
    ev_check_stop(a->loop, &poll_w);
    ck_assert_msg(seen_at_poll == done_at_poll,
                  "request ended after poll %u, the client layer saw it after poll %u",
                  done_at_poll, seen_at_poll);
}
END_TEST

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
        {"pass_leaves_before_sleep", test_pass_leaves_before_sleep},
        {"closed_while_queued", test_closed_while_queued},
        {"destroyed_while_queued", test_destroyed_while_queued},
        {"write_error_seen_before_sleep", test_write_error_seen_before_sleep},
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
