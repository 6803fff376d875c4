/*
 * check_rpc_bulk.c - handoff batches in the bulk lane (src/node/rpc.c, rpc.h):
 * two nodes in this process, on one event loop, connected over loopback.
 *
 * - A HANDOFF_PULL's answer travels as BULK_RESPONSE in the bulk lane,
 *   counted in the lane's bytes at both ends; a HANDOFF_DIGEST's answer
 *   stays in the control lane.
 * - A batch that finds no credit waits on the connection's list, not in
 *   the output queue, and goes once a CREDIT comes.
 * - The connection closing with a batch waiting frees it (ASan sees a
 *   leak otherwise), counts it dropped, and the asker's pull fails as
 *   closed (the handoff retries it).
 * - Past RPC_BULK_ANSWERS_MAX waiting batches, a pull is refused at once.
 * - An asker of message set 3 gets its batch as a RESPONSE in the control
 *   lane.
 * - The body bound of the lane: half the peer's window less the envelope,
 *   none for a peer of message set 3 or one that granted no window; the
 *   batches of an arc are cut to it, and a record over it goes alone in
 *   the control lane.
 *
 * Waits drive the loop until a condition holds, with an iteration bound;
 * nothing asserts on time.
 */
#include <check.h>
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "gossip.h"
#include "membership.h"
#include "msg_handoff.h"
#include "msg_kv.h"
#include "peer.h"
#include "rpc.h"
#include "server.h"
#include "store.h"
#include "two_nodes.h"

static struct two_nodes tn;
static struct server *a, *b;
/* a's window for b's bulk: 256 KiB, so a batch of 256 KiB of records is cut to the lane */
static const char *const window_setting[] = {"peer-bulk-window", "256KB", NULL};
static struct peer *pa; /* a's connection to b */

/* a knows b as a member at the address of its connection (what rpc_ask() looks for). */
static bool a_knows_b(void *arg)
{
    const struct member *e = membership_find(gossip_members(a->gossip), "b");

    (void)arg;
    gossip_round(a->gossip);
    gossip_round(b->gossip);
    return e != NULL && strcmp(membership_entry_peer_addr(&e->e), pa->remote.peer_addr) == 0;
}

static void setup(void)
{
    two_nodes_start(&tn, "check_rpc_bulk", window_setting);
    a = tn.a;
    b = tn.b;
    pa = tn.pa;
    ck_assert(two_nodes_spin(&tn, a_knows_b, NULL));
    ck_assert_ptr_nonnull(b->handoff);
}

static void teardown(void)
{
    two_nodes_stop(&tn);
}

struct outcome {
    int done; /* answers seen */
    int result;
    uint32_t status;
    size_t body_len;
    struct buf *body; /* the body copied here when not NULL */
};

static void ended(void *ctx, int result, const struct request_reply *reply, uint64_t rtt_us)
{
    struct outcome *o = ctx;

    (void)rtt_us;
    o->done++;
    o->result = result;
    o->status = reply != NULL ? reply->status : 0;
    o->body_len = reply != NULL ? reply->body_len : 0;
    if (o->body != NULL && reply != NULL) {
        buf_clear(o->body);
        ck_assert_int_eq(buf_append(o->body, reply->body, reply->body_len), 0);
    }
}

static bool is_done(void *arg)
{
    return ((struct outcome *)arg)->done > 0;
}

static bool a_answers_in(void *arg)
{
    return a->metrics.peer_bulk_answers_in >= *(uint64_t *)arg;
}

static bool b_waiting(void *arg)
{
    struct peer *bs = two_nodes_b_side(&tn);

    return bs != NULL && bs->n_bulk_answers >= *(size_t *)arg;
}

/* Ask b for a batch of the whole ring after the storage key after[0..after_len) (none: 0). */
static void ask_pull_after(struct outcome *o, const uint8_t *after, size_t after_len)
{
    struct msg_handoff_pull m = {.max_bytes = 256 * 1024};
    struct buf body;

    m.after = after;
    m.after_len = after_len;
    m.has_after = after_len > 0;

    buf_init(&body, 0);
    ck_assert_int_eq(msg_handoff_pull_encode(&m, &body), 0);
    ck_assert_int_eq(rpc_ask(a, "b", MSG_OP_HANDOFF_PULL, buf_data(&body), body.len, ended, o), 0);
    buf_free(&body);
}

/* Ask b for the first batch of the whole ring (an empty store: the last answer, done). */
static void ask_pull(struct outcome *o)
{
    ask_pull_after(o, NULL, 0);
}

/* The answer o got is a HANDOFF_PULL answer: done, nothing on the arc. */
static void assert_last_batch(const struct outcome *o)
{
    ck_assert_int_eq(o->result, 0);
    ck_assert_uint_eq(o->status, MSG_RESULT_OK);
    ck_assert_uint_eq(o->body_len, 5); /* 94 00 90 c3 c0 */
}

START_TEST(test_pull_answer_in_bulk_lane)
{
    struct msg_handoff_digest d = {.parts = 1};
    struct outcome pull = {0}, digest = {0};
    uint64_t one = 1, bulk_in = a->metrics.peer_bulk_bytes_in,
             bulk_out = b->metrics.peer_bulk_bytes_out;
    struct buf body;

    ask_pull(&pull);
    ck_assert(two_nodes_spin(&tn, is_done, &pull));
    assert_last_batch(&pull);
    ck_assert(two_nodes_spin(&tn, a_answers_in, &one));
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, 1);
    ck_assert_uint_eq(a->metrics.peer_bulk_answers_in, 1);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_control, 0);
    /* [11, id, 0, body]: the body and a 4-byte envelope for a small id, counted at both ends */
    ck_assert_uint_eq(a->metrics.peer_bulk_bytes_in - bulk_in, 5 + 4);
    ck_assert_uint_eq(b->metrics.peer_bulk_bytes_out - bulk_out, 5 + 4);

    buf_init(&body, 0);
    ck_assert_int_eq(msg_handoff_digest_encode(&d, &body), 0);
    ck_assert_int_eq(
        rpc_ask(a, "b", MSG_OP_HANDOFF_DIGEST, buf_data(&body), body.len, ended, &digest), 0);
    buf_free(&body);
    ck_assert(two_nodes_spin(&tn, is_done, &digest));
    ck_assert_int_eq(digest.result, 0);
    ck_assert_uint_eq(digest.status, MSG_RESULT_OK);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out,
                      1); /* the digest came in the control lane */
}
END_TEST

START_TEST(test_pull_answer_waits_for_credit)
{
    struct peer *bs = two_nodes_b_side(&tn);
    struct msg credit = {.type = MSG_CREDIT};
    struct outcome pull = {0};
    size_t one = 1;

    /* b's credit spent, as if a whole window were in flight to a */
    ck_assert_ptr_nonnull(bs);
    ck_assert_uint_eq(bs->lanes.credit, bs->lanes.peer_window);
    bs->lanes.credit = 0;
    ask_pull(&pull);
    ck_assert(two_nodes_spin(&tn, b_waiting, &one));
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_waited, 1);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, 0);
    ck_assert_int_eq(pull.done, 0);
    /* a grants the window back: the batch goes */
    credit.u.credit.grant = credit.u.credit.window = pa->lanes.window;
    ck_assert_int_eq(peer_send(pa, &credit), 0);
    ck_assert(two_nodes_spin(&tn, is_done, &pull));
    assert_last_batch(&pull);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, 1);
    ck_assert_uint_eq(bs->n_bulk_answers, 0);
    ck_assert_ptr_null(bs->bulk_answers);
}
END_TEST

START_TEST(test_close_frees_waiting_answers)
{
    struct peer *bs = two_nodes_b_side(&tn);
    struct outcome pull[3] = {{0}};
    size_t three = 3;

    ck_assert_ptr_nonnull(bs);
    bs->lanes.credit = 0;
    for (int i = 0; i < 3; i++) {
        ask_pull(&pull[i]);
    }
    ck_assert(two_nodes_spin(&tn, b_waiting, &three));
    peer_close(bs, "test");
    for (int i = 0; i < 3; i++) {
        ck_assert(two_nodes_spin(&tn, is_done, &pull[i]));
        ck_assert_int_eq(pull[i].result, RK_ECLOSED);
    }
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_dropped, 3);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, 0);
}
END_TEST

START_TEST(test_waiting_answers_bounded)
{
    struct peer *bs = two_nodes_b_side(&tn);
    /* static: the waiting ones end at teardown, when the connection closes */
    static struct outcome pull[RPC_BULK_ANSWERS_MAX + 1];
    size_t max = RPC_BULK_ANSWERS_MAX;

    memset(pull, 0, sizeof(pull));
    ck_assert_ptr_nonnull(bs);
    bs->lanes.credit = 0;
    for (int i = 0; i < RPC_BULK_ANSWERS_MAX; i++) {
        ask_pull(&pull[i]);
    }
    ck_assert(two_nodes_spin(&tn, b_waiting, &max));
    ask_pull(&pull[RPC_BULK_ANSWERS_MAX]);
    ck_assert(two_nodes_spin(&tn, is_done, &pull[RPC_BULK_ANSWERS_MAX]));
    ck_assert_int_eq(pull[RPC_BULK_ANSWERS_MAX].result, 0);
    ck_assert_uint_eq(pull[RPC_BULK_ANSWERS_MAX].status, MSG_RESULT_FAILED);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_busy, 1);
    ck_assert_uint_eq(bs->n_bulk_answers, RPC_BULK_ANSWERS_MAX);
}
END_TEST

/* b's store holds n keys of value_len bytes each. */
static void b_holds(int n, size_t value_len)
{
    char *value = malloc(value_len);
    char key[32];

    ck_assert_ptr_nonnull(value);
    memset(value, 'v', value_len);
    for (int i = 0; i < n; i++) {
        int len = snprintf(key, sizeof(key), "key:%d", i);
        ck_assert_int_eq(
            store_write(b->store, key, (size_t)len, value, value_len, false, NULL, NULL), 0);
    }
    free(value);
}

/*
 * The batches are cut to the lane: asked for 256 KiB at a time, b answers
 * within half a's window (256 KiB), every batch in the bulk lane, until the
 * arc is done, and every key comes.
 */
START_TEST(test_batch_cut_to_window)
{
    static struct msg_handoff_item items[MSG_HANDOFF_ITEMS_MAX];
    size_t body_max = rpc_bulk_body_max(MSG_PROTO_VERSION, pa->lanes.window);
    uint8_t after[MSG_HANDOFF_SKEY_MAX];
    struct msg_handoff_pull_answer ans;
    size_t after_len = 0, keys = 0;
    struct buf got;
    int pulls = 0;

    ck_assert_uint_eq(pa->lanes.window, 256 * 1024);
    b_holds(400, 1000);
    buf_init(&got, 0);
    do {
        struct outcome o = {.body = &got};
        ask_pull_after(&o, after, after_len);
        ck_assert(two_nodes_spin(&tn, is_done, &o));
        ck_assert_int_eq(o.result, 0);
        ck_assert_uint_eq(o.status, MSG_RESULT_OK);
        ck_assert_uint_le(o.body_len, body_max);
        ck_assert_int_eq(msg_handoff_pull_answer_decode(buf_data(&got), got.len, &ans, items,
                                                        MSG_HANDOFF_ITEMS_MAX),
                         0);
        ck_assert_uint_eq(ans.status, MSG_KV_OK);
        keys += ans.n_items;
        if (ans.has_next) {
            ck_assert_uint_le(ans.next_len, sizeof(after));
            memcpy(after, ans.next, ans.next_len);
            after_len = ans.next_len;
        }
        ck_assert_int_lt(++pulls, 100);
    } while (!ans.done);
    buf_free(&got);
    ck_assert_uint_eq(keys, 400);
    ck_assert_int_ge(pulls, 4); /* 400 KB in batches of at most 127 KiB */
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, (uint64_t)pulls);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_control, 0);
}
END_TEST

/*
 * A record over half the window cannot travel in the bulk lane (the first
 * item of a batch always travels): its batch goes in the control lane.
 */
START_TEST(test_record_over_lane_in_control)
{
    struct outcome o = {0};

    b_holds(1, 200 * 1024);
    ask_pull(&o);
    ck_assert(two_nodes_spin(&tn, is_done, &o));
    ck_assert_int_eq(o.result, 0);
    ck_assert_uint_eq(o.status, MSG_RESULT_OK);
    ck_assert_uint_gt(o.body_len, 200 * 1024);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_control, 1);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, 0);
    ck_assert_uint_eq(a->metrics.peer_bulk_answers_in, 0);
}
END_TEST

/* An asker of message set 3 knows no BULK_RESPONSE: its batch comes as a RESPONSE, in control. */
START_TEST(test_older_asker_in_control)
{
    struct peer *bs = two_nodes_b_side(&tn);
    struct outcome o = {0};

    ck_assert_ptr_nonnull(bs);
    bs->remote.proto = MSG_PROTO_V3; /* as a's IDENT would say from a node of set 3 */
    ask_pull(&o);
    ck_assert(two_nodes_spin(&tn, is_done, &o));
    assert_last_batch(&o);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_out, 0);
    ck_assert_uint_eq(b->metrics.peer_bulk_answers_control, 0); /* not a fallback: never bulk */
    ck_assert_uint_eq(a->metrics.peer_bulk_answers_in, 0);
}
END_TEST

START_TEST(test_body_max)
{
    ck_assert_uint_eq(rpc_bulk_body_max(MSG_PROTO_VERSION, 256 * 1024),
                      128 * 1024 - RPC_ENVELOPE_MAX);
    ck_assert_uint_eq(rpc_bulk_body_max(MSG_PROTO_V4, 1024 * 1024), 512 * 1024 - RPC_ENVELOPE_MAX);
    ck_assert_uint_eq(rpc_bulk_body_max(MSG_PROTO_V3, 256 * 1024), 0); /* no BULK_RESPONSE */
    ck_assert_uint_eq(rpc_bulk_body_max(MSG_PROTO_V4, 0), 0);          /* no window yet */
    ck_assert_uint_eq(rpc_bulk_body_max(MSG_PROTO_V4, 2 * RPC_ENVELOPE_MAX), 0);
    ck_assert_uint_eq(rpc_bulk_body_max(MSG_PROTO_V4, 2 * RPC_ENVELOPE_MAX + 2), 1);
    /* a peer of message set 4 is answered within the window it granted */
    ck_assert_uint_eq(pa->remote.proto, MSG_PROTO_VERSION);
}
END_TEST

static Suite *rpc_bulk_suite(void)
{
    Suite *s = suite_create("rpc_bulk");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"pull_answer_in_bulk_lane", test_pull_answer_in_bulk_lane},
        {"pull_answer_waits_for_credit", test_pull_answer_waits_for_credit},
        {"close_frees_waiting_answers", test_close_frees_waiting_answers},
        {"waiting_answers_bounded", test_waiting_answers_bounded},
        {"body_max", test_body_max},
        {"batch_cut_to_window", test_batch_cut_to_window},
        {"record_over_lane_in_control", test_record_over_lane_in_control},
        {"older_asker_in_control", test_older_asker_in_control},
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
    SRunner *sr = srunner_create(rpc_bulk_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
