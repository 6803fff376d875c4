/*
 * check_lanes.c - unit tests of a connection's flow control (src/node/lanes.c):
 * the output queue bound, the bulk lane's credit window at both ends, and a
 * sender and a receiver run against each other through a simulated pipe,
 * checking that the bulk in flight never passes the window, that the
 * receiver never sees more than it granted, and that every message gets
 * through (the lane does not deadlock).
 *
 * No clock and no sockets: the module is pure, times are numbers.
 */
#include <check.h>
#include <stdlib.h>

#include "error.h"
#include "lanes.h"

/* The window of the examples (PROTOCOL.md 7.12's). */
#define T_WINDOW (256u * 1024)
#define T_QUEUE_MAX (1024u * 1024)

/* A sender's lanes that holds the peer's whole first grant. */
static void sender_with_credit(struct lanes *l)
{
    lanes_init(l, T_QUEUE_MAX, T_WINDOW);
    ck_assert_int_eq(lanes_credit_in(l, T_WINDOW, T_WINDOW), 0);
}

START_TEST(test_control_bound)
{
    struct lanes l;

    lanes_init(&l, T_QUEUE_MAX, T_WINDOW);
    ck_assert(lanes_control_fits(&l, 0, T_QUEUE_MAX));
    ck_assert(lanes_control_fits(&l, T_QUEUE_MAX - 10, 10));
    ck_assert(!lanes_control_fits(&l, T_QUEUE_MAX - 10, 11));
    ck_assert(!lanes_control_fits(&l, 0, T_QUEUE_MAX + 1));
    ck_assert(!lanes_control_fits(&l, SIZE_MAX, 1));
    lanes_queued(&l, 500);
    lanes_queued(&l, 20);
    ck_assert_uint_eq(l.queue_peak, 500);
}
END_TEST

START_TEST(test_no_lane_before_grant)
{
    struct lanes l;

    lanes_init(&l, T_QUEUE_MAX, T_WINDOW);
    ck_assert_int_eq(lanes_bulk_check(&l, 0, 1), LANES_BULK_NOLANE);
    ck_assert(!lanes_bulk_ready(&l, 0));
}
END_TEST

START_TEST(test_bulk_over_half_window_refused)
{
    struct lanes l;

    sender_with_credit(&l);
    ck_assert_int_eq(lanes_bulk_check(&l, 0, T_WINDOW / 2), LANES_BULK_SEND);
    ck_assert_int_eq(lanes_bulk_check(&l, 0, T_WINDOW / 2 + 1), LANES_BULK_TOOBIG);
}
END_TEST

START_TEST(test_bulk_waits_for_empty_queue)
{
    struct lanes l;

    sender_with_credit(&l);
    ck_assert_int_eq(lanes_bulk_check(&l, 1, 100), LANES_BULK_WAIT);
    ck_assert(!lanes_bulk_ready(&l, 1));
    ck_assert(lanes_bulk_ready(&l, 0));
    ck_assert_int_eq(lanes_bulk_check(&l, 0, 100), LANES_BULK_SEND);
}
END_TEST

START_TEST(test_bulk_waits_for_credit)
{
    struct lanes l;
    size_t chunk = T_WINDOW / 4;

    sender_with_credit(&l);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(lanes_bulk_check(&l, 0, chunk), LANES_BULK_SEND);
        lanes_bulk_sent(&l, chunk);
    }
    ck_assert_uint_eq(l.credit, 0);
    ck_assert_uint_eq(l.inflight_peak, T_WINDOW);
    ck_assert_int_eq(lanes_bulk_check(&l, 0, chunk), LANES_BULK_WAIT);
    ck_assert(!lanes_bulk_ready(&l, 0));
    /* a grant smaller than the waiting message does not wake it */
    ck_assert_int_eq(lanes_credit_in(&l, chunk - 1, T_WINDOW), 0);
    ck_assert(!lanes_bulk_ready(&l, 0));
    ck_assert_int_eq(lanes_credit_in(&l, 1, T_WINDOW), 0);
    ck_assert(lanes_bulk_ready(&l, 0));
    ck_assert_uint_eq(l.bulk_out, 4 * chunk);
}
END_TEST

START_TEST(test_credit_protocol_errors)
{
    struct lanes l;

    lanes_init(&l, T_QUEUE_MAX, T_WINDOW);
    ck_assert_int_eq(lanes_credit_in(&l, 0, 0), RK_EINVAL);
    ck_assert_int_eq(lanes_credit_in(&l, 1, LANES_WINDOW_MAX + 1), RK_EINVAL);
    ck_assert_int_eq(lanes_credit_in(&l, T_WINDOW + 1, T_WINDOW), RK_ERANGE);
    ck_assert_uint_eq(l.peer_window, 0);
    ck_assert_int_eq(lanes_credit_in(&l, T_WINDOW, T_WINDOW), 0);
    /* more than was spent, or another window, breaks the protocol */
    ck_assert_int_eq(lanes_credit_in(&l, 1, T_WINDOW), RK_ERANGE);
    ck_assert_int_eq(lanes_credit_in(&l, 0, T_WINDOW * 2), RK_EINVAL);
    lanes_bulk_sent(&l, 1000);
    ck_assert_int_eq(lanes_credit_in(&l, 1001, T_WINDOW), RK_ERANGE);
    ck_assert_int_eq(lanes_credit_in(&l, 1000, T_WINDOW), 0);
    ck_assert_uint_eq(l.credit, T_WINDOW);
}
END_TEST

START_TEST(test_receiver_grants_by_quarters)
{
    struct lanes l;
    uint64_t quarter = T_WINDOW / LANES_GRANT_DIVISOR;

    lanes_init(&l, T_QUEUE_MAX, T_WINDOW);
    ck_assert_int_eq(lanes_bulk_in(&l, 1), RK_ERANGE); /* nothing granted yet */
    ck_assert_uint_eq(lanes_grant_initial(&l), T_WINDOW);
    ck_assert_int_eq(lanes_bulk_in(&l, quarter - 1), 0);
    ck_assert_uint_eq(lanes_bulk_consumed(&l, quarter - 1), 0);
    ck_assert_int_eq(lanes_bulk_in(&l, 1), 0);
    ck_assert_uint_eq(lanes_bulk_consumed(&l, 1), quarter);
    ck_assert_uint_eq(l.allowed, T_WINDOW);
    ck_assert_uint_eq(l.bulk_in, quarter);
}
END_TEST

START_TEST(test_receiver_refuses_overrun)
{
    struct lanes l;

    lanes_init(&l, T_QUEUE_MAX, T_WINDOW);
    lanes_grant_initial(&l);
    ck_assert_int_eq(lanes_bulk_in(&l, T_WINDOW), 0);
    ck_assert_int_eq(lanes_bulk_in(&l, 1), RK_ERANGE);
    ck_assert_uint_eq(l.bulk_in, T_WINDOW);
}
END_TEST

START_TEST(test_control_gap_after_bulk)
{
    struct lanes l;

    lanes_init(&l, T_QUEUE_MAX, T_WINDOW);
    lanes_grant_initial(&l);
    lanes_control_in(&l, 1000);
    lanes_control_in(&l, 5000); /* before any bulk: not a gap of the lane's */
    ck_assert_uint_eq(l.control_gap_max_ms, 0);
    ck_assert_int_eq(lanes_bulk_in(&l, 10), 0);
    lanes_control_in(&l, 5200);
    lanes_control_in(&l, 5700);
    lanes_control_in(&l, 5800);
    ck_assert_uint_eq(l.control_gap_max_ms, 500);
}
END_TEST

/* --- a sender and a receiver through a simulated pipe ------------------------------ */

/* Messages in flight at most: the window over the smallest message, and then some. */
#define T_PIPE_MAX 4096
#define T_SIM_STEPS 200000

struct pipe {
    size_t len[T_PIPE_MAX];
    size_t head, n;
};

static void pipe_push(struct pipe *p, size_t len)
{
    ck_assert_uint_lt(p->n, T_PIPE_MAX);
    p->len[(p->head + p->n) % T_PIPE_MAX] = len;
    p->n++;
}

static size_t pipe_pop(struct pipe *p)
{
    size_t len = p->len[p->head];

    p->head = (p->head + 1) % T_PIPE_MAX;
    p->n--;
    return len;
}

START_TEST(test_sender_and_receiver_never_pass_the_window)
{
    static struct pipe data, grants;
    struct lanes tx, rx;
    uint64_t total = 0, delivered = 0, inflight = 0;
    size_t next = 0;

    srandom(7);
    lanes_init(&tx, T_QUEUE_MAX, T_WINDOW);
    lanes_init(&rx, T_QUEUE_MAX, T_WINDOW);
    ck_assert_int_eq(lanes_credit_in(&tx, lanes_grant_initial(&rx), T_WINDOW), 0);
    for (int step = 0; step < T_SIM_STEPS; step++) {
        long what = random() % 3;
        if (next == 0) {
            next = 1 + (size_t)random() % (T_WINDOW / 2);
        }
        if (what == 0 && lanes_bulk_check(&tx, 0, next) == LANES_BULK_SEND) {
            lanes_bulk_sent(&tx, next);
            pipe_push(&data, next);
            total += next;
            inflight += next;
            next = 0;
        } else if (what == 1 && data.n > 0) {
            size_t len = pipe_pop(&data);
            uint64_t grant;
            ck_assert_int_eq(lanes_bulk_in(&rx, len), 0);
            delivered += len;
            grant = lanes_bulk_consumed(&rx, len);
            if (grant > 0) {
                pipe_push(&grants, (size_t)grant);
            }
        } else if (what == 2 && grants.n > 0) {
            size_t grant = pipe_pop(&grants);
            ck_assert_int_eq(lanes_credit_in(&tx, grant, T_WINDOW), 0);
            inflight -= grant;
        }
        ck_assert_uint_le(T_WINDOW - tx.credit, T_WINDOW);
        ck_assert_uint_eq(T_WINDOW - tx.credit, inflight);
    }
    ck_assert_uint_le(tx.inflight_peak, T_WINDOW);
    /* far more than a window went through: the lane never stalled */
    ck_assert_uint_gt(delivered, 100 * (uint64_t)T_WINDOW);
    ck_assert_uint_eq(rx.bulk_in, delivered);
    ck_assert_uint_le(total - delivered, T_WINDOW);
}
END_TEST

START_TEST(test_lane_drains_without_deadlock)
{
    struct lanes tx, rx;
    size_t chunk = T_WINDOW / 2; /* the largest allowed */
    uint64_t sent = 0;

    lanes_init(&tx, T_QUEUE_MAX, T_WINDOW);
    lanes_init(&rx, T_QUEUE_MAX, T_WINDOW);
    ck_assert_int_eq(lanes_credit_in(&tx, lanes_grant_initial(&rx), T_WINDOW), 0);
    /* send one largest message at a time, each consumed at once: credit must come back */
    for (int i = 0; i < 100; i++) {
        uint64_t grant;
        ck_assert_int_eq(lanes_bulk_check(&tx, 0, chunk), LANES_BULK_SEND);
        lanes_bulk_sent(&tx, chunk);
        sent += chunk;
        ck_assert_int_eq(lanes_bulk_in(&rx, chunk), 0);
        grant = lanes_bulk_consumed(&rx, chunk);
        if (grant > 0) {
            ck_assert_int_eq(lanes_credit_in(&tx, grant, T_WINDOW), 0);
        }
    }
    ck_assert_uint_eq(tx.bulk_out, sent);
}
END_TEST

static Suite *lanes_suite(void)
{
    Suite *s = suite_create("lanes");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"control_bound", test_control_bound},
        {"no_lane", test_no_lane_before_grant},
        {"too_big", test_bulk_over_half_window_refused},
        {"empty_queue", test_bulk_waits_for_empty_queue},
        {"credit_wait", test_bulk_waits_for_credit},
        {"credit_errors", test_credit_protocol_errors},
        {"grants", test_receiver_grants_by_quarters},
        {"overrun", test_receiver_refuses_overrun},
        {"control_gap", test_control_gap_after_bulk},
        {"simulated", test_sender_and_receiver_never_pass_the_window},
        {"no_deadlock", test_lane_drains_without_deadlock},
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
    SRunner *sr = srunner_create(lanes_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
