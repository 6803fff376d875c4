/*
 * check_msg_request.c - unit tests of the peer request messages
 * (REQUEST, RESPONSE) and of the STATUS answer (proto/msg.c).
 *
 * Expected bytes are written out by hand from proto/PROTOCOL.md section
 * 7.14 and the msgpack specification, never produced by the encoder under
 * test.  Random bodies for the round trips come from a fixed-seed
 * xorshift generator (RINGKV_TEST_SEED replays another seed).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "msg.h"
#include "test_hex.h"
#include "test_rng.h"

/* Round trips of random requests and responses. */
#define TRIALS 2000

static void rng_setup(void)
{
    rng_seed("check_msg_request");
}

static void assert_encodes_to(const struct msg *m, const char *hex)
{
    struct bytes want;
    struct buf out;

    unhex(&want, hex);
    buf_init(&out, 0);
    ck_assert_int_eq(msg_encode(m, &out), 0);
    ck_assert_uint_eq(out.len, want.len);
    ck_assert_int_eq(memcmp(buf_data(&out), want.p, want.len), 0);
    buf_free(&out);
}

static int decode_hex(const char *hex, struct msg *m)
{
    static struct bytes b; /* a decoded body points into it */

    unhex(&b, hex);
    return msg_decode(b.p, b.len, m);
}

/* PROTOCOL.md 7.14's examples: a STATUS request, and its answer. */
#define STATUS_VIEW_HEX "99 a2 6e 32 01 0c cf 01 23 45 67 89 ab cd ef c3 03 03 2a cd 03 e8"

static struct msg_status_view status_example(void)
{
    struct msg_status_view v = {0};

    strcpy(v.id, "n2");
    v.status = MSG_MEMBER_NORMAL;
    v.epoch = 12;
    v.digest = 0x0123456789abcdefull;
    v.converged = true;
    v.up_count = 3;
    v.members = 3;
    v.uptime_s = 42;
    v.keys = 1000;
    return v;
}

START_TEST(test_request_golden)
{
    struct msg m = {.type = MSG_REQUEST, .u.request = {.id = 1, .code = MSG_OP_STATUS}};
    struct msg back;

    assert_encodes_to(&m, "94 07 01 01 c0");
    ck_assert_int_eq(decode_hex("94 07 01 01 c0", &back), 0);
    ck_assert_int_eq(back.type, MSG_REQUEST);
    ck_assert_uint_eq(back.u.request.id, 1);
    ck_assert_uint_eq(back.u.request.code, MSG_OP_STATUS);
    ck_assert_uint_eq(back.u.request.body_len, 1);
    ck_assert_uint_eq(back.u.request.body[0], 0xc0);
    msg_free(&back);
    ck_assert_ptr_null(back.u.request.body);
    ck_assert_str_eq(msg_type_name(MSG_REQUEST), "request");
    ck_assert_str_eq(msg_type_name(MSG_RESPONSE), "response");
    ck_assert_str_eq(msg_op_name(MSG_OP_STATUS), "status");
    ck_assert_int_eq(MSG_OP_HINTS_HELD, 5); /* PROTOCOL.md 7.14's table */
    ck_assert_int_eq(MSG_OP_REPLICA_REAP, 6);
    ck_assert_str_eq(msg_op_name(MSG_OP_HINTS_HELD), "hints_held");
    ck_assert_str_eq(msg_op_name(MSG_OP_REPLICA_REAP), "replica_reap");
    ck_assert_str_eq(msg_op_name(0), "unknown");
    ck_assert_str_eq(msg_op_name(MSG_OP_MAX + 1), "unknown");
}
END_TEST

/* Requests came with message-set version 2: a version-1 peer is never sent one. */
START_TEST(test_since_version_2)
{
    ck_assert(!msg_type_known(MSG_REQUEST, MSG_PROTO_V1));
    ck_assert(!msg_type_known(MSG_RESPONSE, MSG_PROTO_V1));
    ck_assert(msg_type_known(MSG_REQUEST, 2));
    ck_assert(msg_type_known(MSG_RESPONSE, 2));
    ck_assert(msg_type_known(MSG_REQUEST, MSG_PROTO_VERSION));
}
END_TEST

/*
 * BULK_RESPONSE (PROTOCOL.md 7.18): RESPONSE's fields under type 11, known
 * from message set 4 only, so a node of set 3 is never sent one.
 */
START_TEST(test_bulk_response)
{
    static const uint8_t items[] = {0x94, 0x00, 0x90, 0xc3,
                                    0xc0}; /* the last HANDOFF_PULL answer */
    struct msg m = {.type = MSG_BULK_RESPONSE}, back;

    ck_assert_int_eq(MSG_BULK_RESPONSE, 11);
    ck_assert_str_eq(msg_type_name(MSG_BULK_RESPONSE), "bulk_response");
    ck_assert(!msg_type_known(MSG_BULK_RESPONSE, MSG_PROTO_V3));
    ck_assert(msg_type_known(MSG_BULK_RESPONSE, MSG_PROTO_V4));
    ck_assert(msg_type_known(MSG_BULK_RESPONSE, MSG_PROTO_VERSION));
    m.u.request.id = 3;
    m.u.request.code = MSG_RESULT_OK;
    m.u.request.body = (uint8_t *)items;
    m.u.request.body_len = sizeof(items);
    assert_encodes_to(&m, "94 0b 03 00 94 00 90 c3 c0");
    ck_assert_int_eq(decode_hex("94 0b 03 00 94 00 90 c3 c0", &back), 0);
    ck_assert_int_eq(back.type, MSG_BULK_RESPONSE);
    ck_assert_uint_eq(back.u.request.id, 3);
    ck_assert_uint_eq(back.u.request.code, MSG_RESULT_OK);
    ck_assert_uint_eq(back.u.request.body_len, sizeof(items));
    ck_assert_int_eq(memcmp(back.u.request.body, items, sizeof(items)), 0);
    msg_free(&back);
    /* RESPONSE's rules: id 0, too few fields, bytes after the array */
    ck_assert_int_eq(decode_hex("94 0b 00 00 c0", &back), RK_ESYNTAX);
    ck_assert_int_eq(decode_hex("93 0b 01 00", &back), RK_ESYNTAX);
    ck_assert_int_eq(decode_hex("94 0b 01 00 c0 c0", &back), RK_ESYNTAX);
}
END_TEST

START_TEST(test_response_golden)
{
    struct msg_status_view v = status_example(), back_v;
    struct msg m = {.type = MSG_RESPONSE}, back;
    struct bytes body;
    struct buf out;

    unhex(&body, STATUS_VIEW_HEX);
    buf_init(&out, 0);
    ck_assert_int_eq(msg_status_view_encode(&v, &out), 0);
    ck_assert_uint_eq(out.len, body.len);
    ck_assert_int_eq(memcmp(buf_data(&out), body.p, body.len), 0);
    m.u.request.id = 0x100000000ull;
    m.u.request.code = MSG_RESULT_OK;
    m.u.request.body = buf_data(&out);
    m.u.request.body_len = out.len;
    assert_encodes_to(&m, "94 08 cf 00 00 00 01 00 00 00 00 00 " STATUS_VIEW_HEX);
    ck_assert_int_eq(decode_hex("94 08 cf 00 00 00 01 00 00 00 00 00 " STATUS_VIEW_HEX, &back), 0);
    ck_assert_uint_eq(back.u.request.id, 0x100000000ull);
    ck_assert_int_eq(msg_status_view_decode(back.u.request.body, back.u.request.body_len, &back_v),
                     0);
    ck_assert_str_eq(back_v.id, "n2");
    ck_assert(back_v.digest == v.digest && back_v.epoch == 12 && back_v.converged);
    ck_assert(back_v.up_count == 3 && back_v.members == 3 && back_v.uptime_s == 42);
    ck_assert(back_v.keys == 1000 && back_v.status == MSG_MEMBER_NORMAL);
    msg_free(&back);
    buf_free(&out);
}
END_TEST

/* A random body: one msgpack value (a uint, a str, or an array of both), as bytes. */
static void random_body(struct bytes *b)
{
    switch (rng_next() % 3) {
    case 0:
        unhex(b, "cd 01 02");
        b->p[1] = (uint8_t)rng_next();
        break;
    case 1:
        unhex(b, "a3 61 62 63");
        break;
    default:
        unhex(b, "92 2a a1 7a");
        break;
    }
}

START_TEST(test_round_trip)
{
    struct msg m, back;
    struct bytes body;
    struct buf out;
    int shift;

    buf_init(&out, 0);
    for (int t = 0; t < TRIALS; t++) {
        memset(&m, 0, sizeof(m));
        m.type = (enum msg_type[]){MSG_REQUEST, MSG_RESPONSE, MSG_BULK_RESPONSE}[rng_next() % 3];
        m.u.request.id = rng_next() >> (rng_next() % 64);
        m.u.request.id += m.u.request.id == 0; /* ids start at 1 */
        shift = 32 + (int)(rng_next() % 33);   /* 32 .. 64: a code of 32 .. 0 bits */
        m.u.request.code = shift == 64 ? 0 : (uint32_t)(rng_next() >> shift);
        random_body(&body);
        m.u.request.body = body.p;
        m.u.request.body_len = body.len;
        buf_clear(&out);
        ck_assert_int_eq(msg_encode(&m, &out), 0);
        ck_assert_int_eq(msg_decode(buf_data(&out), out.len, &back), 0);
        ck_assert_int_eq(back.type, m.type);
        ck_assert(back.u.request.id == m.u.request.id);
        ck_assert_uint_eq(back.u.request.code, m.u.request.code);
        ck_assert_uint_eq(back.u.request.body_len, body.len);
        ck_assert_int_eq(memcmp(back.u.request.body, body.p, body.len), 0);
        msg_free(&back);
    }
    buf_free(&out);
}
END_TEST

START_TEST(test_bad_requests_refused)
{
    struct msg m;

    /* fewer than three fields */
    ck_assert_int_eq(decode_hex("93 07 01 01", &m), RK_ESYNTAX);
    /* an id that is no uint, an id 0 (ids start at 1); an operation over 2^32-1 */
    ck_assert_int_eq(decode_hex("94 07 ff 01 c0", &m), RK_ESYNTAX);
    ck_assert_int_eq(decode_hex("94 07 00 01 c0", &m), RK_ESYNTAX);
    ck_assert_int_eq(decode_hex("94 08 00 00 c0", &m), RK_ESYNTAX);
    ck_assert_int_eq(decode_hex("94 07 01 cf 00 00 00 01 00 00 00 00 c0", &m), RK_ETOOBIG);
    /* a body cut short, a body followed by bytes after the message */
    ck_assert_int_eq(decode_hex("94 07 01 01 a3 61 62", &m), RK_ESYNTAX);
    ck_assert_int_eq(decode_hex("94 07 01 01 c0 c0", &m), RK_ESYNTAX);
    /* a body nested deeper than 8 levels */
    ck_assert_int_ne(decode_hex("94 08 01 00 91 91 91 91 91 91 91 91 91 c0", &m), 0);
    /* a field after the body is a newer sender's: skipped */
    ck_assert_int_eq(decode_hex("95 08 01 00 c0 a1 78", &m), 0);
    msg_free(&m);
}
END_TEST

START_TEST(test_every_truncation_refused)
{
    struct bytes b;
    struct msg m;

    unhex(&b, "94 08 cf 00 00 00 01 00 00 00 00 00 " STATUS_VIEW_HEX);
    for (size_t len = 0; len < b.len; len++) {
        ck_assert_msg(msg_decode(b.p, len, &m) != 0, "cut at %zu", len);
    }
    unhex(&b, STATUS_VIEW_HEX);
    for (size_t len = 0; len < b.len; len++) {
        struct msg_status_view v;
        ck_assert_msg(msg_status_view_decode(b.p, len, &v) != 0, "answer cut at %zu", len);
    }
}
END_TEST

START_TEST(test_encode_refuses_bad_body)
{
    struct msg m = {.type = MSG_REQUEST, .u.request = {.id = 1, .code = 1}};
    struct bytes body;
    struct buf out;

    buf_init(&out, 0);
    unhex(&body, "a3 61 62"); /* a str cut short */
    m.u.request.body = body.p;
    m.u.request.body_len = body.len;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    unhex(&body, "c0 c0"); /* two values */
    m.u.request.body_len = body.len;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.u.request.body_len = 0; /* id 0: ids start at 1 */
    m.u.request.id = 0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    /* a body its caller made (body_made) is taken as it is, not walked: [1, 2] */
    unhex(&body, "92 01 02");
    m.u.request.id = 5;
    m.u.request.code = 2;
    m.u.request.body_len = body.len;
    m.u.request.body_made = true;
    ck_assert_int_eq(msg_encode(&m, &out), 0);
    assert_encodes_to(&m, "94 07 05 02 92 01 02");
    buf_free(&out);
}
END_TEST

START_TEST(test_status_view_refusals)
{
    struct msg_status_view v = status_example(), back;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    strcpy(v.id, "bad id");
    ck_assert_int_eq(msg_status_view_encode(&v, &out), RK_EINVAL);
    v = status_example();
    v.status = MSG_MEMBER_STATUS_MAX + 1;
    ck_assert_int_eq(msg_status_view_encode(&v, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    /* status 5 (over the last status) */
    unhex(&b, "99 a2 6e 32 05 0c 00 c3 03 03 2a 00");
    ck_assert_int_eq(msg_status_view_decode(b.p, b.len, &back), RK_ETOOBIG);
    /* eight fields: one missing */
    unhex(&b, "98 a2 6e 32 01 0c 00 c3 03 03 2a");
    ck_assert_int_eq(msg_status_view_decode(b.p, b.len, &back), RK_ESYNTAX);
    /* ten fields: the tenth, a newer node's, skipped */
    unhex(&b, "9a a2 6e 32 01 0c 00 c3 03 03 2a 00 a1 78");
    ck_assert_int_eq(msg_status_view_decode(b.p, b.len, &back), 0);
    ck_assert_str_eq(back.id, "n2");
    buf_free(&out);
}
END_TEST

/*
 * up_count and members go up to RING_MEMBERS_MAX (8192, PROTOCOL.md 7.14):
 * a cluster of 5000 and a joiner fits, one more than the bound is refused
 * both ways.
 */
START_TEST(test_status_view_member_bound)
{
    struct msg_status_view v = status_example(), back;
    struct bytes b;
    struct buf out;

    ck_assert_int_eq(RING_MEMBERS_MAX, 8192);
    buf_init(&out, 0);
    v.up_count = v.members = 5001;
    ck_assert_int_eq(msg_status_view_encode(&v, &out), 0);
    ck_assert_int_eq(msg_status_view_decode(buf_data(&out), out.len, &back), 0);
    ck_assert(back.up_count == 5001 && back.members == 5001);
    buf_clear(&out);
    v.up_count = v.members = RING_MEMBERS_MAX;
    ck_assert_int_eq(msg_status_view_encode(&v, &out), 0);
    ck_assert_int_eq(msg_status_view_decode(buf_data(&out), out.len, &back), 0);
    ck_assert(back.up_count == RING_MEMBERS_MAX && back.members == RING_MEMBERS_MAX);
    buf_clear(&out);
    v.members = RING_MEMBERS_MAX + 1;
    ck_assert_int_eq(msg_status_view_encode(&v, &out), RK_EINVAL);
    v.members = 3;
    v.up_count = RING_MEMBERS_MAX + 1;
    ck_assert_int_eq(msg_status_view_encode(&v, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    /* up_count 8192, members 8193; then up_count 8193, members 3 */
    unhex(&b, "99 a2 6e 32 01 0c 00 c3 cd 20 00 cd 20 01 2a 00");
    ck_assert_int_eq(msg_status_view_decode(b.p, b.len, &back), RK_ETOOBIG);
    unhex(&b, "99 a2 6e 32 01 0c 00 c3 cd 20 01 03 2a 00");
    ck_assert_int_eq(msg_status_view_decode(b.p, b.len, &back), RK_ETOOBIG);
    unhex(&b, "99 a2 6e 32 01 0c 00 c3 cd 20 00 cd 20 00 2a 00");
    ck_assert_int_eq(msg_status_view_decode(b.p, b.len, &back), 0);
    ck_assert(back.up_count == 8192 && back.members == 8192);
    buf_free(&out);
}
END_TEST

static Suite *msg_request_suite(void)
{
    Suite *s = suite_create("msg_request");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"request_golden", test_request_golden},
        {"since_version_2", test_since_version_2},
        {"response_golden", test_response_golden},
        {"bulk_response", test_bulk_response},
        {"round_trip", test_round_trip},
        {"bad_requests_refused", test_bad_requests_refused},
        {"every_truncation_refused", test_every_truncation_refused},
        {"encode_refuses_bad_body", test_encode_refuses_bad_body},
        {"status_view_refusals", test_status_view_refusals},
        {"status_view_member_bound", test_status_view_member_bound},
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
    SRunner *sr;
    int failed;

    rng_setup();
    sr = srunner_create(msg_request_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
