/*
 * check_request.c - unit tests of the outstanding-request table
 * (src/node/request.c).
 *
 * Time is a fake monotonic clock: microsecond numbers passed in.  Every
 * callback records what ended its request in a probe, so each test checks
 * that a request ended exactly once, and how.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "request.h"

/* Where the fake clock starts: not 0, so no time is special. */
#define T_START 5000000
/* A request timeout of the tests: 1 s. */
#define T_TIMEOUT 1000000
/* Requests a table of the tests holds at most. */
#define T_MAX 32

/* What a callback saw: how many times it ran, with which result and status. */
struct probe {
    int calls;
    int result;
    uint32_t status;
    uint64_t elapsed_us;
    struct request_table *t; /* for the callbacks that act on the table */
};

static void probe_done(void *ctx, int result, const struct request_reply *reply,
                       uint64_t elapsed_us)
{
    struct probe *p = ctx;

    p->calls++;
    p->result = result;
    p->status = reply != NULL ? reply->status : UINT32_MAX;
    p->elapsed_us = elapsed_us;
}

static uint64_t add(struct request_table *t, struct probe *p, uint64_t now)
{
    uint64_t id = 0;

    ck_assert_int_eq(request_add(t, 1, now, T_TIMEOUT, probe_done, p, &id), 0);
    return id;
}

START_TEST(test_ids_unique)
{
    struct request_table t;
    struct probe p[T_MAX] = {{0}};
    struct probe q = {0}; /* called back by request_fail_all() below: it must outlive the table */
    uint64_t ids[T_MAX];

    request_table_init(&t, T_MAX);
    for (size_t i = 0; i < T_MAX; i++) {
        ids[i] = add(&t, &p[i], T_START);
        ck_assert_uint_ne(ids[i], 0);
        for (size_t j = 0; j < i; j++) {
            ck_assert_uint_ne(ids[i], ids[j]);
        }
    }
    /* an id is never given again, even after its request ended */
    ck_assert_int_eq(request_complete(&t, ids[3], T_START, &(struct request_reply){0}),
                     REQUEST_DELIVERED);
    {
        uint64_t again = add(&t, &q, T_START);
        for (size_t j = 0; j < T_MAX; j++) {
            ck_assert_uint_ne(again, ids[j]);
        }
    }
    request_fail_all(&t, RK_ECLOSED, T_START);
    ck_assert_int_eq(q.calls, 1);
    ck_assert_int_eq(q.result, RK_ECLOSED);
    request_table_deinit(&t);
}
END_TEST

START_TEST(test_full_table_refused)
{
    struct request_table t;
    struct probe p[4] = {{0}};
    uint64_t id = 0;

    request_table_init(&t, 3);
    for (size_t i = 0; i < 3; i++) {
        add(&t, &p[i], T_START);
    }
    ck_assert_int_eq(request_add(&t, 1, T_START, T_TIMEOUT, probe_done, &p[3], &id), RK_ETOOBIG);
    ck_assert_uint_eq(request_count(&t), 3);
    ck_assert_int_eq(p[3].calls, 0);
    request_fail_all(&t, RK_ECLOSED, T_START);
    request_table_deinit(&t);
}
END_TEST

START_TEST(test_response_routed_by_id)
{
    struct request_table t;
    struct probe a = {0}, b = {0};
    struct request_reply r = {.status = 7};
    uint64_t ia, ib;

    request_table_init(&t, T_MAX);
    ia = add(&t, &a, T_START);
    ib = add(&t, &b, T_START + 10);
    ck_assert_int_eq(request_complete(&t, ib, T_START + 250, &r), REQUEST_DELIVERED);
    ck_assert_int_eq(b.calls, 1);
    ck_assert_int_eq(b.result, 0);
    ck_assert_uint_eq(b.status, 7);
    ck_assert_uint_eq(b.elapsed_us, 240);
    ck_assert_int_eq(a.calls, 0);
    ck_assert_ptr_nonnull(request_find(&t, ia));
    ck_assert_ptr_null(request_find(&t, ib));
    request_fail_all(&t, RK_ECLOSED, T_START);
    request_table_deinit(&t);
}
END_TEST

START_TEST(test_timeouts_on_fake_clock)
{
    struct request_table t;
    struct probe early = {0}, later = {0};
    uint64_t deadline = 0;

    request_table_init(&t, T_MAX);
    add(&t, &early, T_START);
    add(&t, &later, T_START + 500000);
    ck_assert(request_next_deadline(&t, &deadline));
    ck_assert_uint_eq(deadline, T_START + T_TIMEOUT);
    /* one microsecond before the deadline: nothing */
    ck_assert_uint_eq(request_expire(&t, T_START + T_TIMEOUT - 1), 0);
    ck_assert_int_eq(early.calls, 0);
    /* at the deadline: the first only */
    ck_assert_uint_eq(request_expire(&t, T_START + T_TIMEOUT), 1);
    ck_assert_int_eq(early.calls, 1);
    ck_assert_int_eq(early.result, RK_ETIMEOUT);
    ck_assert_uint_eq(early.elapsed_us, T_TIMEOUT);
    ck_assert_int_eq(later.calls, 0);
    ck_assert(request_next_deadline(&t, &deadline));
    ck_assert_uint_eq(deadline, T_START + 500000 + T_TIMEOUT);
    /* expiring again at the same time ends nothing twice */
    ck_assert_uint_eq(request_expire(&t, T_START + T_TIMEOUT), 0);
    ck_assert_uint_eq(request_expire(&t, T_START + 2 * T_TIMEOUT), 1);
    ck_assert_int_eq(early.calls, 1);
    ck_assert_int_eq(later.calls, 1);
    ck_assert(!request_next_deadline(&t, &deadline));
    request_table_deinit(&t);
}
END_TEST

START_TEST(test_close_fails_every_request_once)
{
    struct request_table t;
    struct probe p[10] = {{0}};

    request_table_init(&t, T_MAX);
    for (size_t i = 0; i < 10; i++) {
        add(&t, &p[i], T_START + i);
    }
    /* one already answered, one already timed out: neither is failed again */
    ck_assert_int_eq(request_complete(&t, 1, T_START + 5, &(struct request_reply){0}),
                     REQUEST_DELIVERED);
    ck_assert_uint_eq(request_expire(&t, T_START + 1 + T_TIMEOUT), 1);
    ck_assert_uint_eq(request_fail_all(&t, RK_ECLOSED, T_START + 2 * T_TIMEOUT), 8);
    for (size_t i = 0; i < 10; i++) {
        ck_assert_int_eq(p[i].calls, 1);
    }
    ck_assert_int_eq(p[0].result, 0);
    ck_assert_int_eq(p[1].result, RK_ETIMEOUT);
    for (size_t i = 2; i < 10; i++) {
        ck_assert_int_eq(p[i].result, RK_ECLOSED);
    }
    ck_assert_uint_eq(request_count(&t), 0);
    /* a second close finds nothing */
    ck_assert_uint_eq(request_fail_all(&t, RK_ECLOSED, T_START + 3 * T_TIMEOUT), 0);
    for (size_t i = 0; i < 10; i++) {
        ck_assert_int_eq(p[i].calls, 1);
    }
    request_table_deinit(&t);
}
END_TEST

START_TEST(test_late_response_ignored_and_counted)
{
    struct request_table t;
    struct probe p = {0};
    uint64_t id;

    request_table_init(&t, T_MAX);
    id = add(&t, &p, T_START);
    ck_assert_uint_eq(request_expire(&t, T_START + T_TIMEOUT), 1);
    ck_assert_int_eq(request_complete(&t, id, T_START + T_TIMEOUT + 1, &(struct request_reply){0}),
                     REQUEST_LATE);
    ck_assert_int_eq(p.calls, 1);
    ck_assert_int_eq(p.result, RK_ETIMEOUT);
    ck_assert_uint_eq(t.late, 1);
    ck_assert_uint_eq(t.unknown, 0);
    /* a second copy of that late response is no longer known */
    ck_assert_int_eq(request_complete(&t, id, T_START + T_TIMEOUT + 2, &(struct request_reply){0}),
                     REQUEST_UNKNOWN);
    ck_assert_uint_eq(t.late, 1);
    ck_assert_uint_eq(t.unknown, 1);
    ck_assert_int_eq(p.calls, 1);
    request_table_deinit(&t);
}
END_TEST

/*
 * A stalled peer: 3000 requests time out in three waves (more than the
 * table holds at once), then every answer arrives late: each is counted
 * late once, a second copy and an id never issued unknown; an id that timed
 * out further back than REQUEST_EXPIRED_WINDOW ids is unknown too.
 */
START_TEST(test_stall_answers_all_late)
{
    static struct probe p[3001];
    struct request_table t;
    struct probe q = {0};
    uint64_t now = T_START, first;

    request_table_init(&t, 1024);
    for (uint64_t id = 1; id <= 3000;) {
        for (size_t k = 0; k < 1024 && id <= 3000; k++, id++) {
            ck_assert_uint_eq(add(&t, &p[id], now), id);
        }
        now += T_TIMEOUT;
        request_expire(&t, now);
    }
    ck_assert_uint_eq(request_count(&t), 0);
    for (uint64_t id = 1; id <= 3000; id++) {
        ck_assert_int_eq(p[id].result, RK_ETIMEOUT);
        ck_assert_int_eq(request_complete(&t, id, now, &(struct request_reply){0}), REQUEST_LATE);
    }
    ck_assert_int_eq(request_complete(&t, 2999, now, &(struct request_reply){0}), REQUEST_UNKNOWN);
    ck_assert_int_eq(request_complete(&t, 3001, now, &(struct request_reply){0}), REQUEST_UNKNOWN);
    ck_assert_uint_eq(t.late, 3000);
    ck_assert_uint_eq(t.unknown, 2);
    /* one more times out, then a window's worth of ids is issued and answered in time */
    first = add(&t, &q, now);
    request_expire(&t, now + T_TIMEOUT);
    for (uint64_t k = 0; k < REQUEST_EXPIRED_WINDOW; k++) {
        struct probe r = {0};
        uint64_t id = add(&t, &r, now);
        ck_assert_int_eq(request_complete(&t, id, now, &(struct request_reply){0}),
                         REQUEST_DELIVERED);
    }
    ck_assert_int_eq(request_complete(&t, first, now, &(struct request_reply){0}), REQUEST_UNKNOWN);
    request_table_deinit(&t);
}
END_TEST

START_TEST(test_unknown_id_counted)
{
    struct request_table t;
    struct probe p = {0};
    uint64_t id;

    request_table_init(&t, T_MAX);
    id = add(&t, &p, T_START);
    ck_assert_int_eq(request_complete(&t, id + 100, T_START, &(struct request_reply){0}),
                     REQUEST_UNKNOWN);
    ck_assert_int_eq(request_complete(&t, 0, T_START, &(struct request_reply){0}), REQUEST_UNKNOWN);
    ck_assert_uint_eq(t.unknown, 2);
    ck_assert_int_eq(p.calls, 0);
    /* an answered id answered again: unknown too, the callback is not run again */
    ck_assert_int_eq(request_complete(&t, id, T_START, &(struct request_reply){0}),
                     REQUEST_DELIVERED);
    ck_assert_int_eq(request_complete(&t, id, T_START, &(struct request_reply){0}),
                     REQUEST_UNKNOWN);
    ck_assert_uint_eq(t.unknown, 3);
    ck_assert_uint_eq(t.late, 0);
    ck_assert_int_eq(p.calls, 1);
    request_table_deinit(&t);
}
END_TEST

/* A callback that, when its request fails, ends the rest of the table (a close from a timeout). */
static void fail_rest(void *ctx, int result, const struct request_reply *reply, uint64_t elapsed_us)
{
    struct probe *p = ctx;

    probe_done(ctx, result, reply, elapsed_us);
    request_fail_all(p->t, RK_ECLOSED, T_START);
}

START_TEST(test_callback_may_change_the_table)
{
    struct request_table t;
    struct probe first = {0}, rest[5] = {{0}};

    request_table_init(&t, T_MAX);
    first.t = &t;
    {
        uint64_t id;
        ck_assert_int_eq(request_add(&t, 2, T_START, 10, fail_rest, &first, &id), 0);
    }
    for (size_t i = 0; i < 5; i++) {
        add(&t, &rest[i], T_START);
    }
    ck_assert_uint_eq(request_expire(&t, T_START + 10), 1);
    ck_assert_int_eq(first.calls, 1);
    ck_assert_int_eq(first.result, RK_ETIMEOUT);
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(rest[i].calls, 1);
        ck_assert_int_eq(rest[i].result, RK_ECLOSED);
    }
    ck_assert_uint_eq(request_count(&t), 0);
    request_table_deinit(&t);
}
END_TEST

/*
 * A table of 1024 against a model: ids added in bursts up to the bound and
 * ended in random order, by response, failure or timeout, with some ids
 * held outstanding for long (so the outstanding ids span far more than the
 * table's slots): every response reaches exactly its request, every id
 * ended or never issued is not found, and each probe ran once.
 */
START_TEST(test_random_order_against_model)
{
    enum { MAX = 1024, IDS = 20000 };
    static struct probe probes[IDS + 1];
    static bool open_[IDS + 1];
    struct request_table t;
    uint64_t next = 1, now = T_START, seed = 88172645463325252ull;
    size_t outstanding = 0;

    request_table_init(&t, MAX);
    while (next <= IDS || outstanding > 0) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if (next <= IDS && outstanding < MAX && seed % 3 != 0) {
            uint64_t id = 0;
            ck_assert_int_eq(request_add(&t, 1, now, next % 97 == 0 ? 100 * T_TIMEOUT : T_TIMEOUT,
                                         probe_done, &probes[next], &id),
                             0);
            ck_assert_uint_eq(id, next);
            open_[next++] = true;
            outstanding++;
        } else {
            /* end a random outstanding id, mostly a recent one, as answers come */
            uint64_t top = next - 1, window = top < 3000 || next > IDS ? top : 3000;
            uint64_t id = top - (seed >> 8) % window;
            struct request_reply reply = {7, NULL, 0};
            if (id == 0 || !open_[id]) {
                ck_assert_ptr_null(request_find(&t, id));
                ck_assert_int_ne(request_complete(&t, id, now, &reply), REQUEST_DELIVERED);
                continue;
            }
            ck_assert_ptr_nonnull(request_find(&t, id));
            ck_assert_uint_eq(request_find(&t, id)->id, id);
            if (seed % 5 == 0) {
                ck_assert_int_eq(request_fail(&t, id, RK_ECLOSED, now), 0);
            } else {
                ck_assert_int_eq(request_complete(&t, id, now, &reply), REQUEST_DELIVERED);
            }
            ck_assert_int_eq(probes[id].calls, 1);
            open_[id] = false;
            outstanding--;
        }
        if (seed % 1000 == 0) { /* time passes: the short requests still open time out */
            now += 2 * T_TIMEOUT;
            size_t n = request_expire(&t, now);
            for (uint64_t id = 1; id < next; id++) {
                if (open_[id] && probes[id].calls == 1) {
                    ck_assert_int_eq(probes[id].result, RK_ETIMEOUT);
                    open_[id] = false;
                    outstanding--;
                    n--;
                }
            }
            ck_assert_uint_eq(n, 0);
        }
        ck_assert_uint_eq(request_count(&t), outstanding);
    }
    for (uint64_t id = 1; id <= IDS; id++) {
        ck_assert_int_eq(probes[id].calls, 1);
    }
    request_table_deinit(&t);
}
END_TEST

/* Every index slot in use points at an entry whose probe reaches it; every entry is found. */
static void assert_index_sound(const struct request_table *t)
{
    size_t used = 0;

    for (size_t s = 0; t->n > 0 && s <= t->at_mask; s++) {
        if (t->at[s] == 0) {
            continue;
        }
        used++;
        ck_assert_uint_lt(t->at[s] - 1, t->n);
        /* no empty slot between the entry's home and its slot: its probe gets there */
        size_t home =
            (size_t)((t->v[t->at[s] - 1].id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & t->at_mask;
        for (size_t k = home; k != s; k = (k + 1) & t->at_mask) {
            ck_assert_uint_ne(t->at[k], 0);
        }
    }
    ck_assert_uint_eq(used, t->n);
    for (size_t i = 0; i < t->n; i++) {
        ck_assert_ptr_eq(request_find(t, t->v[i].id), &t->v[i]);
    }
}

/*
 * Ids from where the multiplied hash's bits turn over (2^32) and from just
 * below 2^64, tables of several bounds grown from empty while full of
 * outstanding requests, then drained from the middle, with timeouts: each
 * id ends exactly once, ids never issued are never found, and the index
 * stays sound (every entry reachable from its home).
 */
START_TEST(test_index_wrap_and_grow)
{
    enum { ROUNDS = 15000, IDS = 1 << 16 };
    static const uint64_t starts[] = {1, (UINT64_C(1) << 32) - 300, UINT64_MAX - 20000};
    static const size_t maxes[] = {1024, 7, 100};
    static struct probe probes[IDS];
    static uint64_t open_ids[IDS];
    uint64_t seed = 0x2545F4914F6CDD1Dull;

    for (size_t si = 0; si < sizeof(starts) / sizeof(starts[0]); si++) {
        for (size_t mi = 0; mi < sizeof(maxes) / sizeof(maxes[0]); mi++) {
            struct request_table t;
            size_t nopen = 0, issued = 0;
            uint64_t now = T_START;

            memset(probes, 0, sizeof(probes));
            request_table_init(&t, maxes[mi]);
            t.next_id = starts[si];
            for (int r = 0; r < ROUNDS; r++) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                /* phases of 3000: mostly adding (up to the bound), mostly ending, even */
                int phase = (r / 3000) % 3;
                bool adding = phase == 0 ? seed % 10 < 8 : phase == 1 ? seed % 10 < 2 : seed % 2;
                if (adding && issued < IDS) {
                    uint64_t id = 0;
                    int rc = request_add(&t, 1, now, (seed >> 20) % 3 == 0 ? 5000 : 100 * T_TIMEOUT,
                                         probe_done, &probes[issued], &id);
                    if (nopen == maxes[mi]) {
                        ck_assert_int_eq(rc, RK_ETOOBIG);
                        continue;
                    }
                    ck_assert_int_eq(rc, 0);
                    ck_assert_uint_eq(id - starts[si], issued);
                    open_ids[nopen++] = id;
                    issued++;
                } else if (nopen > 0) {
                    size_t k = (size_t)((seed >> 8) % nopen);
                    uint64_t id = open_ids[k];
                    struct probe *p = &probes[id - starts[si]];
                    struct request_reply reply = {7, NULL, 0};
                    open_ids[k] = open_ids[--nopen];
                    if (p->calls == 1) {
                        continue; /* timed out before */
                    }
                    if (seed % 7 == 0) {
                        ck_assert_int_eq(request_fail(&t, id, RK_ECLOSED, now), 0);
                    } else {
                        ck_assert_int_eq(request_complete(&t, id, now, &reply), REQUEST_DELIVERED);
                    }
                    ck_assert_int_eq(p->calls, 1);
                    ck_assert_ptr_null(request_find(&t, id));
                }
                if (seed % 997 == 0) {
                    size_t ended, w = 0;
                    now += 10000;
                    ended = request_expire(&t, now);
                    for (size_t k = 0; k < nopen; k++) {
                        if (probes[open_ids[k] - starts[si]].calls == 0) {
                            open_ids[w++] = open_ids[k];
                        } else {
                            ck_assert_int_eq(probes[open_ids[k] - starts[si]].result, RK_ETIMEOUT);
                            ended--;
                        }
                    }
                    ck_assert_uint_eq(ended, 0);
                    nopen = w;
                }
                ck_assert_ptr_null(request_find(&t, t.next_id + seed % 1000));
                ck_assert_uint_eq(request_count(&t), nopen);
                if (r % 211 == 0) {
                    assert_index_sound(&t);
                }
            }
            assert_index_sound(&t);
            request_fail_all(&t, RK_ECLOSED, now);
            for (size_t c = 0; c < issued; c++) {
                ck_assert_int_eq(probes[c].calls, 1);
            }
            request_table_deinit(&t);
        }
    }
}
END_TEST

static Suite *request_suite(void)
{
    Suite *s = suite_create("request");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"ids_unique", test_ids_unique},
        {"full_table", test_full_table_refused},
        {"routed_by_id", test_response_routed_by_id},
        {"timeouts", test_timeouts_on_fake_clock},
        {"close_fails_once", test_close_fails_every_request_once},
        {"late_response", test_late_response_ignored_and_counted},
        {"unknown_id", test_unknown_id_counted},
        {"stall_all_late", test_stall_answers_all_late},
        {"reentrant", test_callback_may_change_the_table},
        {"random_order", test_random_order_against_model},
        {"index_wrap_and_grow", test_index_wrap_and_grow},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60); /* index_wrap_and_grow: seconds under ASan on a busy machine */
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(request_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
