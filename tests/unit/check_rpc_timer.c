/*
 * check_rpc_timer.c - a peer's request timer (src/node/rpc.c): two nodes in
 * this process, on one event loop, connected over loopback.
 *
 * - A request added while the peer's timer has fired but its callback has
 *   not run yet (another watcher of the same loop turn, due earlier, adds
 *   it) does not take the place of the requests already due: they still
 *   time out in that turn, not a whole request-timeout later.
 * - A request sent after earlier ones were answered still times out at its
 *   own deadline.
 *
 * Waits drive the loop until a condition holds, with an iteration bound.
 */
#include <check.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include "clock.h"
#include "error.h"
#include "gossip.h"
#include "membership.h"
#include "peer.h"
#include "rpc.h"
#include "server.h"
#include "settings.h"
#include "two_nodes.h"

/* Every peer request's timeout here (request-timeout), and in seconds. */
#define T_TIMEOUT "300ms"
#define T_TIMEOUT_S 0.3

static struct two_nodes tn;
static struct server *a, *b;
static struct peer *pa; /* a's connection to b */
static const char *const timeout_setting[] = {"request-timeout", T_TIMEOUT, NULL};

static void setup(void)
{
    two_nodes_start(&tn, "check_rpc_timer", timeout_setting);
    a = tn.a;
    b = tn.b;
    pa = tn.pa;
}

static void teardown(void)
{
    two_nodes_stop(&tn);
}

/* a knows b as a member at the address of its connection (what rpc_ask() looks for). */
static bool a_knows_b(void *arg)
{
    const struct member *e = membership_find(gossip_members(a->gossip), "b");

    (void)arg;
    gossip_round(a->gossip);
    gossip_round(b->gossip);
    return e != NULL && strcmp(membership_entry_peer_addr(&e->e), pa->remote.peer_addr) == 0;
}

struct outcome {
    bool done;
    int result;
    uint64_t at_us; /* when it ended (monotonic) */
};

static void ended(void *ctx, int result, const struct request_reply *reply, uint64_t rtt_us)
{
    struct outcome *o = ctx;

    (void)reply;
    (void)rtt_us;
    o->done = true;
    o->result = result;
    o->at_us = clock_mono_us();
}

static bool is_done(void *arg)
{
    return ((struct outcome *)arg)->done;
}

static struct outcome second;
static ev_timer early; /* due just before the first request's deadline */

static void on_early(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    ck_assert_int_eq(rpc_ask(a, "b", MSG_OP_STATUS, NULL, 0, ended, &second), 0);
}

START_TEST(test_request_added_while_timer_pending)
{
    struct peer *pb;
    struct outcome first = {0};
    uint64_t t0;

    ck_assert(two_nodes_spin(&tn, a_knows_b, NULL));
    pb = two_nodes_b_side(&tn);
    ck_assert_ptr_nonnull(pb);
    ev_io_stop(b->loop, &pb->rio); /* b reads nothing from now on: no answer comes */
    second = (struct outcome){0};
    ev_timer_init(&early, on_early, T_TIMEOUT_S - 0.1, 0.);
    ev_now_update(a->loop);
    ev_timer_start(a->loop, &early);
    t0 = clock_mono_us();
    ck_assert_int_eq(rpc_ask(a, "b", MSG_OP_STATUS, NULL, 0, ended, &first), 0);
    /*
     * The loop sleeps past both: the next turn finds the early timer and
     * the request timer due together, and runs the early one first.
     */
    usleep((useconds_t)(T_TIMEOUT_S * 1e6) + 100000);
    for (int i = 0; i < 5 && !first.done; i++) {
        ev_run(a->loop, EVRUN_NOWAIT);
    }
    ck_assert_msg(second.done == false, "the second request ended at once");
    ck_assert_msg(first.done, "the first request, due, did not time out in the turn it was due");
    ck_assert_int_eq(first.result, RK_ETIMEOUT);
    ck_assert_uint_ge(first.at_us - t0, (uint64_t)(T_TIMEOUT_S * 1e6));
    /* and the second times out at its own deadline */
    ck_assert(two_nodes_spin(&tn, is_done, &second));
    ck_assert_int_eq(second.result, RK_ETIMEOUT);
}
END_TEST

START_TEST(test_request_after_answers_times_out)
{
    struct peer *pb;
    struct outcome o;
    uint64_t t0;

    ck_assert(two_nodes_spin(&tn, a_knows_b, NULL));
    /* answered ones: the timer stays armed for their deadlines */
    for (int i = 0; i < 3; i++) {
        o = (struct outcome){0};
        ck_assert_int_eq(rpc_ask(a, "b", MSG_OP_STATUS, NULL, 0, ended, &o), 0);
        ck_assert(two_nodes_spin(&tn, is_done, &o));
        ck_assert_int_eq(o.result, 0);
    }
    pb = two_nodes_b_side(&tn);
    ck_assert_ptr_nonnull(pb);
    ev_io_stop(b->loop, &pb->rio);
    o = (struct outcome){0};
    t0 = clock_mono_us();
    ck_assert_int_eq(rpc_ask(a, "b", MSG_OP_STATUS, NULL, 0, ended, &o), 0);
    ck_assert(two_nodes_spin(&tn, is_done, &o));
    ck_assert_int_eq(o.result, RK_ETIMEOUT);
    ck_assert_uint_ge(o.at_us - t0, (uint64_t)(T_TIMEOUT_S * 1e6)); /* never before its deadline */
    ck_assert_uint_lt(o.at_us - t0,
                      (uint64_t)(T_TIMEOUT_S * 1e6) + 1000000); /* not a second later */
}
END_TEST

static Suite *rpc_timer_suite(void)
{
    Suite *s = suite_create("rpc_timer");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"request_added_while_timer_pending", test_request_added_while_timer_pending},
        {"request_after_answers_times_out", test_request_after_answers_times_out},
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
    SRunner *sr = srunner_create(rpc_timer_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
