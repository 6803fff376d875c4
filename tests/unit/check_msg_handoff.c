/*
 * check_msg_handoff.c - unit tests of the ownership-handoff operations'
 * bodies and answers (proto/msg_handoff.c, PROTOCOL.md section 7.17).
 *
 * Expected bytes are written out by hand from PROTOCOL.md and the msgpack
 * specification, never produced by the encoder under test.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "msg.h"
#include "msg_handoff.h"
#include "msg_kv.h"
#include "test_hex.h"

/* The arc of the examples: target ring 0x0123456789abcdef, (2^62, 2^63]. */
#define ARC_HEX "cf 01 23 45 67 89 ab cd ef cf 40 00 00 00 00 00 00 00 cf 80 00 00 00 00 00 00 00"
#define TARGET 0x0123456789abcdefull
#define START 0x4000000000000000ull
#define END 0x8000000000000000ull

/* The storage keys of the examples: "k" at 0x5000000000000001, "b" at 0x5000000000000002. */
static const uint8_t skey_k[9] = {0x50, 0, 0, 0, 0, 0, 0, 1, 'k'};
static const uint8_t skey_b[9] = {0x50, 0, 0, 0, 0, 0, 0, 2, 'b'};

/* HANDOFF_PULL after "k", 1 MiB at most (44 bytes), and the first pull (34 bytes). */
#define PULL_HEX "95 " ARC_HEX " c4 09 50 00 00 00 00 00 00 01 6b ce 00 10 00 00"
#define PULL_FIRST_HEX "95 " ARC_HEX " c0 ce 00 10 00 00"
/* The first pull, at most 1023 items (37 bytes). */
#define PULL_ITEMS_HEX "96 " ARC_HEX " c0 ce 00 10 00 00 cd 03 ff"
/* Its answer: "a" and "b", not done, next after "b" (31 bytes). */
#define BATCH_HEX                                                                                  \
    "94 00 92 92 c4 01 61 c4 02 01 00 92 c4 01 62 c4 02 01 01 c2 c4 09 50 00 00 00 00 00 00 02 62"
/* HANDOFF_DIGEST in 2 parts (29 bytes). */
#define DIGEST_HEX "94 " ARC_HEX " 02"
/* HANDOFF_DIGEST of the key count alone, in 1 part (30 bytes). */
#define COUNT_HEX "95 " ARC_HEX " 01 c3"
/* HANDOFF_DONE of 1000 keys, 65536 bytes (36 bytes). */
#define DONE_HEX "95 " ARC_HEX " cd 03 e8 ce 00 01 00 00"

enum kind { PULL, BATCH, DIGEST, DIGESTS, DONE, DONE_ANSWER };

/* The HANDOFF_DIGEST answer of 1000 keys and 2 digests, 00..1f and 20..3f (74 bytes). */
static void digests_bytes(struct bytes *b)
{
    unhex(b, "93 00 cd 03 e8 92");
    for (int d = 0; d < 2; d++) {
        b->p[b->len++] = 0xc4;
        b->p[b->len++] = 0x20;
        for (int i = 0; i < 32; i++) {
            b->p[b->len++] = (uint8_t)(32 * d + i);
        }
    }
}

static void assert_bytes(const struct buf *out, const struct bytes *want)
{
    ck_assert_uint_eq(out->len, want->len);
    ck_assert_int_eq(memcmp(buf_data(out), want->p, want->len), 0);
}

static void assert_hex(const struct buf *out, const char *hex)
{
    struct bytes want;

    unhex(&want, hex);
    assert_bytes(out, &want);
}

/* Decode p[0..len) as a kind; returns the decoder's code. */
static int decode_kind(enum kind kind, const uint8_t *p, size_t len)
{
    static struct msg_handoff_item items[MSG_HANDOFF_ITEMS_MAX];
    struct msg_handoff_pull pull;
    struct msg_handoff_pull_answer batch;
    struct msg_handoff_digest digest;
    struct msg_handoff_digest_answer digests;
    struct msg_handoff_done done;
    struct msg_handoff_done_answer done_answer;

    switch (kind) {
    case PULL:
        return msg_handoff_pull_decode(p, len, &pull);
    case BATCH:
        return msg_handoff_pull_answer_decode(p, len, &batch, items, MSG_HANDOFF_ITEMS_MAX);
    case DIGEST:
        return msg_handoff_digest_decode(p, len, &digest);
    case DIGESTS:
        return msg_handoff_digest_answer_decode(p, len, &digests);
    case DONE:
        return msg_handoff_done_decode(p, len, &done);
    default:
        return msg_handoff_done_answer_decode(p, len, &done_answer);
    }
}

static int decode_hex(enum kind kind, const char *hex)
{
    struct bytes b;

    unhex(&b, hex);
    return decode_kind(kind, b.p, b.len);
}

START_TEST(test_op_numbers)
{
    ck_assert_int_eq(MSG_OP_HANDOFF_PULL, 7);
    ck_assert_int_eq(MSG_OP_HANDOFF_DIGEST, 8);
    ck_assert_int_eq(MSG_OP_HANDOFF_DONE, 9);
    ck_assert_int_eq(MSG_OP_MAX, 9);
    ck_assert_str_eq(msg_op_name(MSG_OP_HANDOFF_PULL), "handoff_pull");
    ck_assert_str_eq(msg_op_name(MSG_OP_HANDOFF_DIGEST), "handoff_digest");
    ck_assert_str_eq(msg_op_name(MSG_OP_HANDOFF_DONE), "handoff_done");
    ck_assert_str_eq(msg_op_name(10), "unknown");
}
END_TEST

/* m encodes to hex (len bytes), which decodes into *back; b holds the bytes decoded. */
static void pull_round_trip(const struct msg_handoff_pull *m, const char *hex, size_t len,
                            struct bytes *b, struct msg_handoff_pull *back)
{
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_handoff_pull_encode(m, &out), 0);
    assert_hex(&out, hex);
    ck_assert_uint_eq(out.len, len);
    buf_free(&out);
    unhex(b, hex);
    ck_assert_int_eq(msg_handoff_pull_decode(b->p, b->len, back), 0);
    ck_assert(back->target == TARGET && back->start == START && back->end == END);
    ck_assert_uint_eq(back->max_bytes, 1 << 20);
}

START_TEST(test_pull_golden)
{
    struct msg_handoff_pull m = {.target = TARGET,
                                 .start = START,
                                 .end = END,
                                 .after = skey_k,
                                 .after_len = sizeof(skey_k),
                                 .has_after = true,
                                 .max_bytes = 1 << 20},
                            back;
    struct bytes b;
    struct buf out;

    pull_round_trip(&m, PULL_HEX, 44, &b, &back);
    ck_assert(back.has_after && back.after_len == 9);
    ck_assert_int_eq(memcmp(back.after, skey_k, 9), 0);
    ck_assert(back.after >= b.p && back.after < b.p + b.len); /* borrowed */
    /* the first pull: after nil */
    m.has_after = false;
    m.after = NULL;
    m.after_len = 0;
    pull_round_trip(&m, PULL_FIRST_HEX, 34, &b, &back);
    ck_assert(!back.has_after && back.after == NULL && back.after_len == 0);
    ck_assert_uint_eq(back.max_items, 0); /* not given */
    /* at most 1023 items: a sixth field */
    m.max_items = 1023;
    pull_round_trip(&m, PULL_ITEMS_HEX, 37, &b, &back);
    ck_assert_uint_eq(back.max_items, 1023);
    /* over MSG_HANDOFF_ITEMS_MAX is not encoded */
    buf_init(&out, 0);
    m.max_items = MSG_HANDOFF_ITEMS_MAX + 1;
    ck_assert_int_eq(msg_handoff_pull_encode(&m, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_pull_answer_golden)
{
    struct msg_handoff_item want[2] = {{(const uint8_t *)"a", 1, (const uint8_t *)"\x01\x00", 2},
                                       {(const uint8_t *)"b", 1, (const uint8_t *)"\x01\x01", 2}};
    struct msg_handoff_pull_answer m = {.status = MSG_KV_OK,
                                        .items = want,
                                        .n_items = 2,
                                        .next = skey_b,
                                        .next_len = sizeof(skey_b),
                                        .has_next = true},
                                   back;
    struct msg_handoff_item items[2];
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&m, &out), 0);
    assert_hex(&out, BATCH_HEX);
    ck_assert_uint_eq(out.len, 31);
    unhex(&b, BATCH_HEX);
    ck_assert_int_eq(msg_handoff_pull_answer_decode(b.p, b.len, &back, items, 2), 0);
    ck_assert(back.status == MSG_KV_OK && back.items == items && back.n_items == 2);
    for (int i = 0; i < 2; i++) {
        ck_assert(items[i].key_len == 1 && items[i].key[0] == want[i].key[0]);
        ck_assert(items[i].record_len == 2 && memcmp(items[i].record, want[i].record, 2) == 0);
    }
    ck_assert(!back.done && back.has_next && back.next_len == 9);
    ck_assert_int_eq(memcmp(back.next, skey_b, 9), 0);
    /* the last answer: nothing visited, done; and a refusal */
    buf_clear(&out);
    m = (struct msg_handoff_pull_answer){.status = MSG_KV_OK, .done = true};
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&m, &out), 0);
    assert_hex(&out, "94 00 90 c3 c0");
    buf_clear(&out);
    m = (struct msg_handoff_pull_answer){.status = MSG_KV_CLOSED};
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&m, &out), 0);
    assert_hex(&out, "94 09 90 c2 c0");
    unhex(&b, "94 00 90 c3 c0");
    ck_assert_int_eq(msg_handoff_pull_answer_decode(b.p, b.len, &back, NULL, 0), 0);
    ck_assert(back.done && !back.has_next && back.n_items == 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_digest_golden)
{
    struct msg_handoff_digest m = {.target = TARGET, .start = START, .end = END, .parts = 2}, back;
    struct msg_handoff_digest_answer a, aback;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_handoff_digest_encode(&m, &out), 0);
    assert_hex(&out, DIGEST_HEX);
    ck_assert_uint_eq(out.len, 29);
    unhex(&b, DIGEST_HEX);
    ck_assert_int_eq(msg_handoff_digest_decode(b.p, b.len, &back), 0);
    ck_assert(back.target == TARGET && back.start == START && back.end == END && back.parts == 2);
    ck_assert(!back.count_only);
    /* the key count alone: count_only, a fifth element, sent only when true */
    m.parts = 1;
    m.count_only = true;
    buf_clear(&out);
    ck_assert_int_eq(msg_handoff_digest_encode(&m, &out), 0);
    assert_hex(&out, COUNT_HEX);
    ck_assert_uint_eq(out.len, 30);
    unhex(&b, COUNT_HEX);
    ck_assert_int_eq(msg_handoff_digest_decode(b.p, b.len, &back), 0);
    ck_assert(back.parts == 1 && back.count_only);
    memset(&a, 0, sizeof(a));
    a.keys = 1000;
    a.parts = 2;
    for (int i = 0; i < 64; i++) {
        a.digests[i / 32][i % 32] = (uint8_t)i;
    }
    buf_clear(&out);
    ck_assert_int_eq(msg_handoff_digest_answer_encode(&a, &out), 0);
    digests_bytes(&b);
    ck_assert_uint_eq(b.len, 74);
    assert_bytes(&out, &b);
    ck_assert_int_eq(msg_handoff_digest_answer_decode(b.p, b.len, &aback), 0);
    ck_assert(aback.status == 0 && aback.keys == 1000 && aback.parts == 2);
    ck_assert_int_eq(memcmp(aback.digests, a.digests, sizeof(a.digests)), 0);
    /* a refusal carries no digests */
    buf_clear(&out);
    memset(&a, 0, sizeof(a));
    a.status = MSG_KV_FAILED;
    ck_assert_int_eq(msg_handoff_digest_answer_encode(&a, &out), 0);
    assert_hex(&out, "93 0a 00 90");
    buf_free(&out);
}
END_TEST

START_TEST(test_done_golden)
{
    struct msg_handoff_done m = {TARGET, START, END, 1000, 65536}, back;
    struct msg_handoff_done_answer a = {MSG_KV_OK}, aback;
    struct bytes b;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_handoff_done_encode(&m, &out), 0);
    assert_hex(&out, DONE_HEX);
    ck_assert_uint_eq(out.len, 36);
    unhex(&b, DONE_HEX);
    ck_assert_int_eq(msg_handoff_done_decode(b.p, b.len, &back), 0);
    ck_assert(back.target == TARGET && back.start == START && back.end == END);
    ck_assert(back.keys == 1000 && back.bytes == 65536);
    buf_clear(&out);
    ck_assert_int_eq(msg_handoff_done_answer_encode(&a, &out), 0);
    assert_hex(&out, "91 00");
    unhex(&b, "91 0c");
    ck_assert_int_eq(msg_handoff_done_answer_decode(b.p, b.len, &aback), 0);
    ck_assert_uint_eq(aback.status, MSG_KV_CLOCKFULL);
    buf_free(&out);
}
END_TEST

/* Elements after the known ones are skipped, in every body, answer and item. */
START_TEST(test_future_fields_skipped)
{
    struct msg_handoff_item items[1];
    struct msg_handoff_pull_answer a;
    struct bytes b;

    ck_assert_int_eq(decode_hex(PULL, "97 " ARC_HEX " c0 01 01 a3 6e 65 77"), 0);
    ck_assert_int_eq(decode_hex(DIGEST, "96 " ARC_HEX " 01 c2 92 01 c0"), 0); /* after count_only */
    ck_assert_int_eq(decode_hex(DONE, "97 " ARC_HEX " 00 00 c0 81 a1 61 02"), 0);
    ck_assert_int_eq(decode_hex(DONE_ANSWER, "92 00 c3"), 0);
    ck_assert_int_eq(decode_hex(DIGESTS, "94 0a 00 90 c0"), 0);
    /* an item of three elements, and an answer of five */
    unhex(&b, "95 00 91 93 c4 01 61 c4 01 01 c0 c3 c4 08 00 00 00 00 00 00 00 00 cb 40 09 21 fb 54 "
              "44 2d 18");
    ck_assert_int_eq(msg_handoff_pull_answer_decode(b.p, b.len, &a, items, 1), 0);
    ck_assert(a.n_items == 1 && items[0].key_len == 1 && items[0].record_len == 1 && a.done);
    ck_assert(a.has_next && a.next_len == 8);
}
END_TEST

START_TEST(test_bad_bodies_refused)
{
    static const struct {
        enum kind kind;
        const char *hex;
        int err;
    } cases[] = {
        {PULL, "94 " ARC_HEX " c0", RK_ESYNTAX},                               /* no max_bytes */
        {PULL, "95 " ARC_HEX " c0 00", RK_ESYNTAX},                            /* max_bytes 0 */
        {PULL, "95 " ARC_HEX " c0 ce 40 00 00 00", 0},                         /* max_bytes 2^30 */
        {PULL, "95 " ARC_HEX " c0 ce 40 00 00 01", RK_ETOOBIG},                /* 2^30 + 1 */
        {PULL, "95 " ARC_HEX " c4 07 00 00 00 00 00 00 00 01", RK_ESYNTAX},    /* after of 7 */
        {PULL, "95 " ARC_HEX " a8 00 00 00 00 00 00 00 00 01", RK_ESYNTAX},    /* after as a str */
        {PULL, "95 " ARC_HEX " c5 02 00", RK_ETOOBIG},                         /* after of 512 */
        {PULL, "95 ff 00 00 c0 01", RK_ESYNTAX},                               /* target -1 */
        {PULL, "95 " ARC_HEX " c0 01 c0", RK_ESYNTAX},                         /* a byte after it */
        {PULL, "96 " ARC_HEX " c0 01 00", RK_ESYNTAX},                         /* max_items 0 */
        {PULL, "96 " ARC_HEX " c0 01 01", 0},                                  /* max_items 1 */
        {PULL, "96 " ARC_HEX " c0 01 cd 10 00", 0},                            /* max_items 4096 */
        {PULL, "96 " ARC_HEX " c0 01 cd 10 01", RK_ETOOBIG},                   /* 4097 */
        {PULL, "96 " ARC_HEX " c0 01 c0", RK_ESYNTAX},                         /* max_items nil */
        {PULL, "96 " ARC_HEX " c0 01 ff", RK_ESYNTAX},                         /* max_items -1 */
        {PULL, "96 " ARC_HEX " c0 01 cf ff ff ff ff ff ff ff ff", RK_ETOOBIG}, /* 2^64-1 */
        {PULL, "96 " ARC_HEX " c0 01 a1 31", RK_ESYNTAX},                      /* max_items "1" */
        {PULL, "96 " ARC_HEX " c0 01 ca 3f 80 00 00", RK_ESYNTAX},             /* max_items 1.0 */
        {PULL, "96 " ARC_HEX " c0 01", RK_ESYNTAX},                            /* six told, five */
        {PULL, "97 " ARC_HEX " c0 01 01 c0", 0},                               /* a later field */
        {PULL, "dc 00 41 " ARC_HEX " c0 01", RK_ETOOBIG},                      /* 65 elements */
        {PULL, "c0", RK_ESYNTAX},                                              /* nil */
        {BATCH, "93 00 90 c3", RK_ESYNTAX},                                    /* no next */
        {BATCH, "94 0d 90 c2 c0", RK_ETOOBIG},                                 /* status 13 */
        {BATCH, "94 09 90 c3 c0", RK_ESYNTAX},                                 /* a refusal, done */
        {BATCH, "94 09 91 92 c4 00 c4 01 00 c2 c4 08 00 00 00 00 00 00 00 00",
         RK_ESYNTAX},                                               /* a refusal with items */
        {BATCH, "94 00 91 92 c4 00 c4 01 00 c2 c0", RK_ESYNTAX},    /* items, no next */
        {BATCH, "94 00 91 92 c4 00 c4 00 c3 c0", RK_ESYNTAX},       /* an empty record */
        {BATCH, "94 00 91 91 c4 00 c3 c0", RK_ESYNTAX},             /* an item of 1 element */
        {BATCH, "94 00 91 92 c4 00 c0 c3 c0", RK_ESYNTAX},          /* a nil record */
        {BATCH, "94 00 91 92 c5 01 f8 c4 01 00 c3 c0", RK_ETOOBIG}, /* a key of 504 bytes */
        {BATCH, "94 00 dd ff ff ff ff c3 c0", RK_ETOOBIG},          /* 2^32-1 items */
        {BATCH, "94 00 dc 10 01 c3 c0", RK_ETOOBIG},                /* 4097 items */
        {BATCH, "94 00 90 01 c0", RK_ESYNTAX},                      /* done as a uint */
        {BATCH, "94 00 90 c3 c4 01 00", RK_ESYNTAX},                /* next of 1 byte */
        {DIGEST, "94 " ARC_HEX " 00", RK_ESYNTAX},                  /* 0 parts */
        {DIGEST, "94 " ARC_HEX " 40", 0},                           /* 64 parts */
        {DIGEST, "94 " ARC_HEX " 41", RK_ETOOBIG},                  /* 65 parts */
        {DIGEST, "93 " ARC_HEX, RK_ESYNTAX},                        /* no parts */
        {DIGEST, "95 " ARC_HEX " 01 c2", 0},                        /* count_only false */
        {DIGEST, "95 " ARC_HEX " 01 01", RK_ESYNTAX},               /* count_only as a uint */
        {DIGEST, "95 " ARC_HEX " 01 c0", RK_ESYNTAX},               /* count_only nil */
        {DIGEST, "96 " ARC_HEX " 01 c3 00", 0},                     /* a later field */
        {DIGEST, "95 " ARC_HEX " 01", RK_ESYNTAX},                  /* five told, four */
        {DIGESTS, "93 00 00 90", RK_ESYNTAX},                       /* ok without digests */
        {DIGESTS, "93 00 00 91 c4 1f", RK_ESYNTAX},                 /* cut in a digest */
        {DIGESTS, "93 0a 01 90", RK_ESYNTAX},                       /* a refusal with keys */
        {DIGESTS, "93 00 00 dc 00 41", RK_ETOOBIG},                 /* 65 digests */
        {DIGESTS, "92 00 00", RK_ESYNTAX},                          /* no digests */
        {DONE, "94 " ARC_HEX " 00", RK_ESYNTAX},                    /* no bytes */
        {DONE, "95 " ARC_HEX " 00 a1 31", RK_ESYNTAX},              /* bytes as a str */
        {DONE_ANSWER, "90", RK_ESYNTAX},                            /* no status */
        {DONE_ANSWER, "91 0d", RK_ETOOBIG},                         /* status 13 */
        {DONE_ANSWER, "91 00 00", RK_ESYNTAX},                      /* a byte after it */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = decode_hex(cases[i].kind, cases[i].hex);
        ck_assert_msg(rc == cases[i].err, "case %zu (%s): %d, not %d", i, cases[i].hex, rc,
                      cases[i].err);
    }
}
END_TEST

/* Digests of 31 and 33 bytes; and the caller's array bounds the items. */
START_TEST(test_bounds_refused)
{
    struct msg_handoff_item items[1];
    struct msg_handoff_pull_answer a;
    struct bytes b;

    digests_bytes(&b);
    b.p[b.len - 33] = 0x1f; /* the second digest says 31 bytes: one byte left over */
    ck_assert_int_eq(decode_kind(DIGESTS, b.p, b.len), RK_ESYNTAX);
    b.p[b.len - 33] = 0x21; /* 33: over */
    ck_assert_int_eq(decode_kind(DIGESTS, b.p, b.len), RK_ETOOBIG);
    unhex(&b, BATCH_HEX);
    ck_assert_int_eq(msg_handoff_pull_answer_decode(b.p, b.len, &a, items, 1), RK_ETOOBIG);
    ck_assert(a.items == NULL && a.n_items == 0 && !a.has_next);
    ck_assert_int_eq(msg_handoff_pull_answer_decode(b.p, b.len, &a, NULL, 0), RK_ETOOBIG);
}
END_TEST

/* Every golden, cut anywhere, is refused; with a byte after it, too. */
START_TEST(test_every_truncation_refused)
{
    static const struct {
        enum kind kind;
        const char *hex;
    } goldens[] = {{PULL, PULL_HEX},          {PULL, PULL_FIRST_HEX}, {BATCH, BATCH_HEX},
                   {BATCH, "94 00 90 c3 c0"}, {DIGEST, DIGEST_HEX},   {DONE, DONE_HEX},
                   {DONE_ANSWER, "91 00"}};
    struct bytes b;

    for (size_t i = 0; i <= sizeof(goldens) / sizeof(goldens[0]); i++) {
        enum kind kind = i < sizeof(goldens) / sizeof(goldens[0]) ? goldens[i].kind : DIGESTS;
        if (kind == DIGESTS) {
            digests_bytes(&b);
        } else {
            unhex(&b, goldens[i].hex);
        }
        ck_assert_int_eq(decode_kind(kind, b.p, b.len), 0);
        for (size_t cut = 0; cut < b.len; cut++) {
            ck_assert_msg(decode_kind(kind, b.p, cut) != 0, "golden %zu cut at %zu", i, cut);
        }
        b.p[b.len++] = 0xc0;
        ck_assert_int_eq(decode_kind(kind, b.p, b.len), RK_ESYNTAX);
    }
}
END_TEST

START_TEST(test_encode_refuses_bad_fields)
{
    static const uint8_t rec[1] = {0};
    struct msg_handoff_item it = {(const uint8_t *)"", 0, rec, 1};
    struct msg_handoff_pull p = {.max_bytes = 1};
    struct msg_handoff_pull_answer a = {.status = MSG_KV_OK};
    struct msg_handoff_digest d = {.parts = 0};
    struct msg_handoff_digest_answer da;
    struct msg_handoff_done_answer done = {MSG_KV_STATUS_MAX + 1};
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(buf_append(&out, "keep", 4), 0);
    p.max_bytes = 0;
    ck_assert_int_eq(msg_handoff_pull_encode(&p, &out), RK_EINVAL);
    p.max_bytes = MSG_HANDOFF_BYTES_MAX + 1;
    ck_assert_int_eq(msg_handoff_pull_encode(&p, &out), RK_EINVAL);
    p = (struct msg_handoff_pull){
        .max_bytes = 1, .has_after = true, .after = skey_k, .after_len = 7};
    ck_assert_int_eq(msg_handoff_pull_encode(&p, &out), RK_EINVAL);
    a.items = &it;
    a.n_items = 1; /* items without next */
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, &out), RK_EINVAL);
    a.has_next = true;
    a.next = skey_b;
    a.next_len = sizeof(skey_b);
    it.record_len = 0;
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, &out), RK_EINVAL);
    it.record_len = 1;
    it.key_len = MSG_HANDOFF_KEY_MAX + 1;
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, &out), RK_EINVAL);
    it.key_len = 0;
    a.n_items = MSG_HANDOFF_ITEMS_MAX + 1;
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, &out), RK_EINVAL);
    a.n_items = 1;
    a.status = MSG_KV_FULL; /* a refusal with items */
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, &out), RK_EINVAL);
    ck_assert_int_eq(msg_handoff_digest_encode(&d, &out), RK_EINVAL);
    d.parts = MSG_HANDOFF_PARTS_MAX + 1;
    ck_assert_int_eq(msg_handoff_digest_encode(&d, &out), RK_EINVAL);
    memset(&da, 0, sizeof(da)); /* ok with no digests */
    ck_assert_int_eq(msg_handoff_digest_answer_encode(&da, &out), RK_EINVAL);
    da.parts = MSG_HANDOFF_PARTS_MAX + 1;
    ck_assert_int_eq(msg_handoff_digest_answer_encode(&da, &out), RK_EINVAL);
    da.status = MSG_KV_FAILED;
    da.parts = 1;
    ck_assert_int_eq(msg_handoff_digest_answer_encode(&da, &out), RK_EINVAL);
    ck_assert_int_eq(msg_handoff_done_answer_encode(&done, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 4);
    ck_assert_int_eq(memcmp(buf_data(&out), "keep", 4), 0);
    buf_free(&out);
}
END_TEST

/* The most an answer holds: 4096 items, 64 digests, every length at its bound. */
START_TEST(test_max_round_trip)
{
    static struct msg_handoff_item items[MSG_HANDOFF_ITEMS_MAX], back_items[MSG_HANDOFF_ITEMS_MAX];
    static uint8_t key[MSG_HANDOFF_KEY_MAX], skey[MSG_HANDOFF_SKEY_MAX];
    static struct msg_handoff_digest_answer da, dback;
    struct msg_handoff_pull_answer a = {.status = MSG_KV_OK, .items = items}, back;
    struct buf out;

    memset(key, 'k', sizeof(key));
    memset(skey, 's', sizeof(skey));
    for (size_t i = 0; i < MSG_HANDOFF_ITEMS_MAX; i++) {
        items[i] = (struct msg_handoff_item){key, i % (MSG_HANDOFF_KEY_MAX + 1), skey, 1 + i % 16};
    }
    a.n_items = MSG_HANDOFF_ITEMS_MAX;
    a.has_next = true;
    a.next = skey;
    a.next_len = sizeof(skey);
    buf_init(&out, 0);
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, &out), 0);
    ck_assert_int_eq(msg_handoff_pull_answer_decode(buf_data(&out), out.len, &back, back_items,
                                                    MSG_HANDOFF_ITEMS_MAX),
                     0);
    ck_assert_uint_eq(back.n_items, MSG_HANDOFF_ITEMS_MAX);
    for (size_t i = 0; i < MSG_HANDOFF_ITEMS_MAX; i++) {
        ck_assert_uint_eq(back_items[i].key_len, items[i].key_len);
        ck_assert_uint_eq(back_items[i].record_len, items[i].record_len);
    }
    ck_assert_uint_eq(back.next_len, MSG_HANDOFF_SKEY_MAX);
    da.keys = UINT64_MAX;
    da.parts = MSG_HANDOFF_PARTS_MAX;
    memset(da.digests, 0xab, sizeof(da.digests));
    buf_clear(&out);
    ck_assert_int_eq(msg_handoff_digest_answer_encode(&da, &out), 0);
    ck_assert_uint_eq(out.len, 1 + 1 + 9 + 3 + 64 * 34);
    ck_assert_int_eq(msg_handoff_digest_answer_decode(buf_data(&out), out.len, &dback), 0);
    ck_assert(dback.keys == UINT64_MAX && dback.parts == MSG_HANDOFF_PARTS_MAX);
    ck_assert_int_eq(memcmp(da.digests, dback.digests, sizeof(da.digests)), 0);
    buf_free(&out);
}
END_TEST

static Suite *msg_handoff_suite(void)
{
    Suite *s = suite_create("msg_handoff");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"op_numbers", test_op_numbers},
        {"pull_golden", test_pull_golden},
        {"pull_answer_golden", test_pull_answer_golden},
        {"digest_golden", test_digest_golden},
        {"done_golden", test_done_golden},
        {"future_fields_skipped", test_future_fields_skipped},
        {"bad_bodies_refused", test_bad_bodies_refused},
        {"bounds_refused", test_bounds_refused},
        {"every_truncation_refused", test_every_truncation_refused},
        {"encode_refuses_bad_fields", test_encode_refuses_bad_fields},
        {"max_round_trip", test_max_round_trip},
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
    SRunner *s = srunner_create(msg_handoff_suite());
    int failed;

    srunner_run_all(s, CK_NORMAL);
    failed = srunner_ntests_failed(s);
    srunner_free(s);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
