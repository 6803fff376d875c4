/*
 * check_msg_kv.c - unit tests of the data operations' bodies
 * (proto/msg_kv.c, PROTOCOL.md sections 7.15 and 7.16).
 *
 * Expected bytes are written out by hand from PROTOCOL.md and the msgpack
 * specification, never produced by the encoder under test.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "msg_kv.h"
#include "test_hex.h"

static void assert_bytes(const struct buf *out, const char *hex)
{
    struct bytes want;

    unhex(&want, hex);
    ck_assert_uint_eq(out->len, want.len);
    ck_assert_int_eq(memcmp(buf_data(out), want.p, want.len), 0);
}

START_TEST(test_read_golden)
{
    struct msg_replica_read m = {.key = (const uint8_t *)"k", .key_len = 1}, back;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_replica_read_encode(&m, &out), 0);
    assert_bytes(&out, "91c4016b");
    unhex(&b, "91c4016b");
    ck_assert_int_eq(msg_replica_read_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.key_len, 1);
    ck_assert_int_eq(back.key[0], 'k');
    buf_free(&out);
}
END_TEST

/* A read in parts: `from` and `digest` after the key; the first part asks from 0, digest 0. */
START_TEST(test_read_part_golden)
{
    struct msg_replica_read m = {.key = (const uint8_t *)"k",
                                 .key_len = 1,
                                 .part = true,
                                 .from = 1,
                                 .digest = 0x0102030405060708ull},
                            back;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_replica_read_encode(&m, &out), 0);
    assert_bytes(&out, "93c4016b01cf0102030405060708");
    buf_clear(&out);
    m.from = 0;
    m.digest = 0;
    ck_assert_int_eq(msg_replica_read_encode(&m, &out), 0);
    assert_bytes(&out, "93c4016b0000");
    unhex(&b, "93c4016b01cf0102030405060708");
    ck_assert_int_eq(msg_replica_read_decode(b.p, b.len, &back), 0);
    ck_assert(back.part);
    ck_assert_uint_eq(back.from, 1);
    ck_assert_uint_eq(back.digest, 0x0102030405060708ull);
    /* the form without parts: the whole record */
    unhex(&b, "91c4016b");
    ck_assert_int_eq(msg_replica_read_decode(b.p, b.len, &back), 0);
    ck_assert(!back.part);
    ck_assert_uint_eq(back.from, 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_forward_golden)
{
    struct msg_forward m = {.kind = MSG_FORWARD_WRITE,
                            .key = (const uint8_t *)"k",
                            .key_len = 1,
                            .value = (const uint8_t *)"v",
                            .value_len = 1},
                       back;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_forward_encode(&m, &out), 0);
    assert_bytes(&out, "9601c4016bc40176c2c000");
    unhex(&b, "9601c4016bc40176c2c000");
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.kind, MSG_FORWARD_WRITE);
    ck_assert_uint_eq(back.value_len, 1);
    ck_assert_ptr_null(back.context);
    ck_assert(!back.tombstone);
    buf_free(&out);
}
END_TEST

/* A write with an expiry: fields 8 and 9, after from and digest 0 (PROTOCOL.md 7.15). */
START_TEST(test_forward_expiry_golden)
{
    static const char want[] = "9a01c4016bc40176c2c000000000cf0000018bcfe56800";
    struct msg_forward m = {.kind = MSG_FORWARD_WRITE,
                            .key = (const uint8_t *)"k",
                            .key_len = 1,
                            .value = (const uint8_t *)"v",
                            .value_len = 1,
                            .expire_ms = 1700000000000ull},
                       back;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_forward_encode(&m, &out), 0);
    assert_bytes(&out, want);
    unhex(&b, want);
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.expiry, 0);
    ck_assert_uint_eq(back.expire_ms, 1700000000000ull);
    ck_assert_uint_eq(back.value_len, 1);
    /* touch (2) with no expiry: PERSIST */
    unhex(&b, "9a01c4016bc400c2c00000000200");
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.expiry, 2);
    ck_assert_uint_eq(back.expire_ms, 0);
    /* a read, or a delete, with an expiry; a rule past 2 */
    ck_assert_int_eq(
        msg_forward_decode((unhex(&b, "9a00c4016bc0c2c00000000001"), b.p), b.len, &back),
        RK_ESYNTAX);
    ck_assert_int_eq(
        msg_forward_decode((unhex(&b, "9a01c4016bc0c3c00000000001"), b.p), b.len, &back),
        RK_ESYNTAX);
    ck_assert_int_ne(
        msg_forward_decode((unhex(&b, "9a01c4016bc400c2c00000000300"), b.p), b.len, &back), 0);
    m.tombstone = true;
    m.value = NULL;
    m.value_len = 0;
    buf_clear(&out);
    ck_assert_int_eq(msg_forward_encode(&m, &out), RK_EINVAL);
    buf_free(&out);
}
END_TEST

START_TEST(test_answer_golden)
{
    struct msg_kv_answer a = {.status = MSG_KV_TRYAGAIN, .answered = 1, .needed = 2}, back;
    struct msg_kv_answer nf = {.status = MSG_KV_NOTFOUND};
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_kv_answer_encode(&a, &out), 0);
    assert_bytes(&out, "95030102c0c2");
    buf_clear(&out);
    ck_assert_int_eq(msg_kv_answer_encode(&nf, &out), 0);
    assert_bytes(&out, "95010000c0c2");
    unhex(&b, "95030102c0c2");
    ck_assert_int_eq(msg_kv_answer_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.status, MSG_KV_TRYAGAIN);
    ck_assert_uint_eq(back.answered, 1);
    ck_assert_uint_eq(back.needed, 2);
    ck_assert_int_eq(msg_kv_status_to_rk(back.status), RK_ETRYAGAIN);
    buf_free(&out);
}
END_TEST

/*
 * Section 7.16: HINTS_HELD and REPLICA_REAP carry the bodies of REPLICA_READ
 * and REPLICA_WRITE, and answer in the data operations' form, flag set.
 */
START_TEST(test_reap_golden)
{
    struct msg_replica_write w = {.key = (const uint8_t *)"k",
                                  .key_len = 1,
                                  .record = (const uint8_t *)"\x01\x00",
                                  .record_len = 2},
                             wback;
    struct msg_kv_answer held = {.status = MSG_KV_OK, .flag = true}, aback;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_replica_write_encode(&w, &out), 0);
    assert_bytes(&out, "93c4016bc4020100c0");
    unhex(&b, "93c4016bc4020100c0");
    ck_assert_int_eq(msg_replica_write_decode(b.p, b.len, &wback), 0);
    ck_assert_uint_eq(wback.record_len, 2);
    ck_assert_int_eq(wback.hint[0], '\0');
    buf_clear(&out);
    ck_assert_int_eq(msg_kv_answer_encode(&held, &out), 0);
    assert_bytes(&out, "95000000c0c3");
    unhex(&b, "95000000c0c2");
    ck_assert_int_eq(msg_kv_answer_decode(b.p, b.len, &aback), 0);
    ck_assert_uint_eq(aback.status, MSG_KV_OK);
    ck_assert(!aback.flag);
    buf_free(&out);
}
END_TEST

/* An answer carrying a part: `first`, `next` and `digest` after the flag. */
START_TEST(test_answer_part_golden)
{
    struct msg_kv_answer a = {.status = MSG_KV_OK,
                              .record = (const uint8_t *)"\x01\x00",
                              .record_len = 2,
                              .part = true,
                              .first = 0,
                              .next = 1,
                              .digest = 0x0102030405060708ull},
                         back;
    struct msg_forward f;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_kv_answer_encode(&a, &out), 0);
    assert_bytes(&out, "98000000c4020100c20001cf0102030405060708");
    ck_assert_int_eq(msg_kv_answer_decode(buf_data(&out), out.len, &back), 0);
    ck_assert(back.part);
    ck_assert_uint_eq(back.first, 0);
    ck_assert_uint_eq(back.next, 1);
    ck_assert_uint_eq(back.digest, 0x0102030405060708ull);
    ck_assert_uint_eq(back.record_len, 2);
    /* the answer without parts decodes as a whole record */
    unhex(&b, "95000000c4020100c2");
    ck_assert_int_eq(msg_kv_answer_decode(b.p, b.len, &back), 0);
    ck_assert(!back.part);
    ck_assert_uint_eq(back.next, 0);
    /* a forwarded read asking for the part from sibling 1 of the record of digest 5 */
    unhex(&b, "9800c4016bc0c2c0000105");
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &f), 0);
    ck_assert(f.part);
    ck_assert_uint_eq(f.from, 1);
    ck_assert_uint_eq(f.digest, 5);
    buf_free(&out);
}
END_TEST

START_TEST(test_write_hint_round_trip)
{
    struct msg_replica_write m = {.key = (const uint8_t *)"key",
                                  .key_len = 3,
                                  .record = (const uint8_t *)"\x01\x00",
                                  .record_len = 2},
                             back;
    struct buf out;

    snprintf(m.hint, sizeof(m.hint), "n2");
    buf_init(&out, 0);
    ck_assert_int_eq(msg_replica_write_encode(&m, &out), 0);
    assert_bytes(&out, "93c4036b6579c4020100a26e32");
    ck_assert_int_eq(msg_replica_write_decode(buf_data(&out), out.len, &back), 0);
    ck_assert_str_eq(back.hint, "n2");
    ck_assert_uint_eq(back.record_len, 2);
    buf_free(&out);
}
END_TEST

/* Fields after the known ones are a later version's: skipped. */
START_TEST(test_future_fields_skipped)
{
    struct msg_forward f;
    struct msg_kv_answer a;
    struct bytes b;

    struct msg_replica_read r;

    unhex(&b, "9900c4016bc0c2c002000007");
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &f), 0);
    ck_assert_uint_eq(f.kind, MSG_FORWARD_READ);
    ck_assert_uint_eq(f.quorum, 2);
    unhex(&b, "99000302c4020100c3000105a178");
    ck_assert_int_eq(msg_kv_answer_decode(b.p, b.len, &a), 0);
    ck_assert_uint_eq(a.record_len, 2);
    ck_assert(a.flag);
    unhex(&b, "94c4016b0000a178");
    ck_assert_int_eq(msg_replica_read_decode(b.p, b.len, &r), 0);
    ck_assert(r.part);
}
END_TEST

static int decode_any(int which, const char *hex)
{
    struct msg_replica_write w;
    struct msg_replica_read r;
    struct msg_forward f;
    struct msg_kv_answer a;
    struct bytes b;

    unhex(&b, hex);
    switch (which) {
    case 0:
        return msg_replica_write_decode(b.p, b.len, &w);
    case 1:
        return msg_replica_read_decode(b.p, b.len, &r);
    case 2:
        return msg_forward_decode(b.p, b.len, &f);
    default:
        return msg_kv_answer_decode(b.p, b.len, &a);
    }
}

/*
 * The hop count, field 10 (PROTOCOL.md 7.15): sent with fields 6 .. 9
 * before it (0 but a read's parts); absent, it reads as 0; later fields
 * are skipped.
 */
START_TEST(test_forward_hops_golden)
{
    static const char write1[] = "9b01c4016bc40176c2c0000000000001";
    static const char read2[] = "9b00c4016bc0c2c0000000000002";
    struct msg_forward m = {.kind = MSG_FORWARD_WRITE,
                            .key = (const uint8_t *)"k",
                            .key_len = 1,
                            .value = (const uint8_t *)"v",
                            .value_len = 1,
                            .hops = 1},
                       back;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_forward_encode(&m, &out), 0);
    assert_bytes(&out, write1);
    unhex(&b, write1);
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.hops, 1);
    ck_assert_uint_eq(back.expiry, 0);
    ck_assert_uint_eq(back.expire_ms, 0);
    ck_assert(!back.part);
    /* a read takes parts: from 0, digest 0, then expiry 0 0, then hops */
    m = (struct msg_forward){.kind = MSG_FORWARD_READ,
                             .key = (const uint8_t *)"k",
                             .key_len = 1,
                             .part = true,
                             .hops = 2};
    buf_clear(&out);
    ck_assert_int_eq(msg_forward_encode(&m, &out), 0);
    assert_bytes(&out, read2);
    unhex(&b, read2);
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.hops, 2);
    ck_assert(back.part);
    /* a read with hops but no parts, and a count over the bound, are not encoded */
    m.part = false;
    buf_clear(&out);
    ck_assert_int_eq(msg_forward_encode(&m, &out), RK_EINVAL);
    m.part = true;
    m.hops = MSG_FORWARD_HOPS_MAX + 1;
    ck_assert_int_eq(msg_forward_encode(&m, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    /* without field 10 (as an older node sends): 0 */
    unhex(&b, "9a01c4016bc40176c2c00000000000");
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.hops, 0);
    /* over the bound: refused; a field after it: skipped */
    ck_assert_int_eq(decode_any(2, "9b01c4016bc40176c2c0000000000011"), RK_ETOOBIG);
    unhex(&b, "9c01c4016bc40176c2c0000000000002a178");
    ck_assert_int_eq(msg_forward_decode(b.p, b.len, &back), 0);
    ck_assert_uint_eq(back.hops, 2);
    buf_free(&out);
}
END_TEST

START_TEST(test_bad_bodies_refused)
{
    /* a write without its record, an empty record, a bad hint id, trailing bytes */
    ck_assert_int_eq(decode_any(0, "92c4016bc40101"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(0, "93c4016bc400c0"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(0, "93c4016bc40101a2212a"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(1, "91c4016b00"), RK_ESYNTAX);
    /* a key as a str, not a bin */
    ck_assert_int_eq(decode_any(1, "91a16b"), RK_ESYNTAX);
    /* a read with a value; a write with neither value nor tombstone; a tombstone with a value */
    ck_assert_int_eq(decode_any(2, "9600c4016bc40176c2c000"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(2, "9601c4016bc0c2c000"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(2, "9601c4016bc40176c3c000"), RK_ESYNTAX);
    /* kind 2, quorum 17: over their bounds */
    ck_assert_int_eq(decode_any(2, "9602c4016bc0c2c000"), RK_ETOOBIG);
    ck_assert_int_eq(decode_any(2, "9600c4016bc0c2c011"), RK_ETOOBIG);
    /* status 14; a record with an error status; answered 17 */
    ck_assert_int_eq(decode_any(3, "950e0000c0c2"), RK_ETOOBIG);
    ck_assert_int_eq(decode_any(3, "95030000c40101c2"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(3, "95001100c0c2"), RK_ETOOBIG);
    /* parts: a from over the sibling bound; a write with a from; next not after first;
       digest 0; a part of an error; part fields not all there */
    ck_assert_int_eq(decode_any(1, "93c4016bcd100000"), RK_ETOOBIG);
    ck_assert_int_eq(decode_any(2, "9801c4016bc40176c2c0000100"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(3, "98000000c40101c2020105"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(3, "98000000c40101c2000100"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(3, "98030000c0c2000005"), RK_ESYNTAX);
    ck_assert_int_eq(decode_any(3, "96000000c40101c200"), RK_ESYNTAX);
    /* not an array; an empty input */
    ck_assert_int_eq(decode_any(3, "c0"), RK_ESYNTAX);
    ck_assert_int_ne(decode_any(1, ""), 0);
}
END_TEST

START_TEST(test_every_truncation_refused)
{
    static const char *const bodies[] = {"9601c4016bc40176c2c000", "93c4036b6579c4020100a26e32",
                                         "95030102c0c2", "93c4016b01cf0102030405060708",
                                         "98000000c4020100c20001cf0102030405060708"};
    static const int kinds[] = {2, 0, 3, 1, 3};

    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        struct bytes b;
        unhex(&b, bodies[i]);
        for (size_t cut = 0; cut < b.len; cut++) {
            char hex[64];
            for (size_t k = 0; k < cut; k++) {
                snprintf(hex + 2 * k, 3, "%02x", b.p[k]);
            }
            hex[2 * cut] = '\0';
            ck_assert_int_ne(decode_any(kinds[i], hex), 0);
        }
    }
}
END_TEST

START_TEST(test_encode_refuses_bad_fields)
{
    struct msg_replica_write w = {.key = (const uint8_t *)"k", .key_len = 1};
    struct msg_forward f = {.kind = MSG_FORWARD_READ, .key = (const uint8_t *)"k", .key_len = 1};
    struct msg_kv_answer a = {.status = MSG_KV_ANSWER_STATUS_MAX + 1};
    struct msg_replica_read r = {.key = (const uint8_t *)"k", .key_len = 1};
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_replica_write_encode(&w, &out), RK_EINVAL); /* no record */
    f.quorum = RING_RF_MAX + 1;
    ck_assert_int_eq(msg_forward_encode(&f, &out), RK_EINVAL);
    ck_assert_int_eq(msg_kv_answer_encode(&a, &out), RK_EINVAL);
    a.status = MSG_KV_FAILED;
    a.record = (const uint8_t *)"x";
    a.record_len = 1;
    ck_assert_int_eq(msg_kv_answer_encode(&a, &out), RK_EINVAL);
    /* a part's fields: next not after first, no digest, on a read without part, on a write */
    a = (struct msg_kv_answer){.record = (const uint8_t *)"x", .record_len = 1, .part = true};
    a.first = 2;
    a.next = 1;
    a.digest = 5;
    ck_assert_int_eq(msg_kv_answer_encode(&a, &out), RK_EINVAL);
    a.next = 3;
    a.digest = 0;
    ck_assert_int_eq(msg_kv_answer_encode(&a, &out), RK_EINVAL);
    r.from = 1;
    ck_assert_int_eq(msg_replica_read_encode(&r, &out), RK_EINVAL);
    f.quorum = 0;
    f.kind = MSG_FORWARD_WRITE;
    f.part = true;
    ck_assert_int_eq(msg_forward_encode(&f, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    buf_free(&out);
}
END_TEST

/* Every status maps to an error code and back; unknown codes travel as a failure. */
START_TEST(test_status_mapping)
{
    for (uint32_t st = 0; st <= MSG_KV_ANSWER_STATUS_MAX; st++) {
        if (st != MSG_KV_NOTMINE) {
            ck_assert_uint_eq(msg_kv_status_from_rk(msg_kv_status_to_rk(st)), st);
        }
    }
    /* not a replica: no error code names it; a request that ends with it may be tried again */
    ck_assert_uint_eq(MSG_KV_NOTMINE, 13);
    ck_assert_int_eq(msg_kv_status_to_rk(MSG_KV_NOTMINE), RK_ETRYAGAIN);
    ck_assert_int_eq(decode_any(3, "950d0000c0c2"), 0);
    ck_assert_int_ne(decode_any(3, "950d0000c40100c2"), 0); /* a record only with status 0 */
    ck_assert_uint_eq(msg_kv_status_from_rk(RK_EAUTH), MSG_KV_FAILED);
    ck_assert_int_eq(msg_kv_status_to_rk(MSG_KV_ANSWER_STATUS_MAX + 1), RK_EIO);
    /* a full version vector and the sibling cap travel apart (PROTOCOL.md 7.15) */
    ck_assert_uint_eq(msg_kv_status_from_rk(RK_ETOOBIG), MSG_KV_TOOBIG);
    ck_assert_uint_eq(msg_kv_status_from_rk(RK_ECLOCKFULL), MSG_KV_CLOCKFULL);
    ck_assert_uint_eq(MSG_KV_CLOCKFULL, 12);
    ck_assert_int_eq(decode_any(3, "950c0000c0c2"), 0);
}
END_TEST

static Suite *msg_kv_suite(void)
{
    Suite *s = suite_create("msg_kv");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"read_golden", test_read_golden},
        {"read_part_golden", test_read_part_golden},
        {"forward_golden", test_forward_golden},
        {"forward_expiry_golden", test_forward_expiry_golden},
        {"forward_hops_golden", test_forward_hops_golden},
        {"answer_golden", test_answer_golden},
        {"answer_part_golden", test_answer_part_golden},
        {"reap_golden", test_reap_golden},
        {"write_hint_round_trip", test_write_hint_round_trip},
        {"future_fields_skipped", test_future_fields_skipped},
        {"bad_bodies_refused", test_bad_bodies_refused},
        {"every_truncation_refused", test_every_truncation_refused},
        {"encode_refuses_bad_fields", test_encode_refuses_bad_fields},
        {"status_mapping", test_status_mapping},
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
    SRunner *sr = srunner_create(msg_kv_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
