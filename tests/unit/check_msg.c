/*
 * check_msg.c - unit tests of the node-to-node messages and the bounded
 * msgpack reader (proto/msg.c, proto/mp.c).
 *
 * Expected bytes are written out by hand from proto/PROTOCOL.md and the
 * msgpack specification, as spaced hex strings, never produced by the
 * encoder under test, so each decoder is checked against the format.
 * Random messages for the round trips come from a xorshift generator whose
 * seed is printed (replay with RINGKV_TEST_SEED=<seed>).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "mp.h"
#include "msg.h"

/* Round trips of random messages. */
#define TRIALS 2000

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void rng_setup(void)
{
    const char *s = getenv("RINGKV_TEST_SEED");
    rng_state = s ? strtoull(s, NULL, 0) : 0x9e3779b97f4a7c15ull;
    if (rng_state == 0) {
        rng_state = 1;
    }
    fprintf(stderr, "check_msg: RINGKV_TEST_SEED=%" PRIu64 "\n", rng_state);
}

/* Bytes written as hex pairs, spaces ignored. */
struct bytes {
    uint8_t p[4096];
    size_t len;
};

static void unhex(struct bytes *b, const char *hex)
{
    unsigned v;

    b->len = 0;
    while (*hex != '\0') {
        if (*hex == ' ') {
            hex++;
            continue;
        }
        ck_assert_int_eq(sscanf(hex, "%2x", &v), 1);
        ck_assert_uint_lt(b->len, sizeof(b->p));
        b->p[b->len++] = (uint8_t)v;
        hex += 2;
    }
}

/* Append raw text (a string body) to b. */
static void add_text(struct bytes *b, const char *text)
{
    size_t len = strlen(text);

    ck_assert_uint_le(b->len + len, sizeof(b->p));
    memcpy(b->p + b->len, text, len);
    b->len += len;
}

static void add_hex(struct bytes *b, const char *hex)
{
    struct bytes more;

    unhex(&more, hex);
    ck_assert_uint_le(b->len + more.len, sizeof(b->p));
    memcpy(b->p + b->len, more.p, more.len);
    b->len += more.len;
}

static int decode(const struct bytes *b, struct msg *m)
{
    return msg_decode(b->p, b->len, m);
}

static struct msg ident_example(void)
{
    struct msg m = {.type = MSG_IDENT};

    strcpy(m.u.ident.id, "n1");
    strcpy(m.u.ident.rack, "r1");
    m.u.ident.version = 1;
    strcpy(m.u.ident.peer_addr, "127.0.0.1:7371");
    strcpy(m.u.ident.client_addr, "127.0.0.1:7370");
    return m;
}

/* The IDENT of ident_example(), by hand. */
static void ident_example_bytes(struct bytes *b)
{
    unhex(b, "96 01 a2");
    add_text(b, "n1");
    add_hex(b, "a2");
    add_text(b, "r1");
    add_hex(b, "01 ae");
    add_text(b, "127.0.0.1:7371");
    add_hex(b, "ae");
    add_text(b, "127.0.0.1:7370");
}

static void assert_msg_eq(const struct msg *a, const struct msg *b)
{
    ck_assert_int_eq(a->type, b->type);
    if (a->type == MSG_IDENT) {
        ck_assert_str_eq(a->u.ident.id, b->u.ident.id);
        ck_assert_str_eq(a->u.ident.rack, b->u.ident.rack);
        ck_assert_uint_eq(a->u.ident.version, b->u.ident.version);
        ck_assert_str_eq(a->u.ident.peer_addr, b->u.ident.peer_addr);
        ck_assert_str_eq(a->u.ident.client_addr, b->u.ident.client_addr);
    } else {
        ck_assert(a->u.ping.seq == b->u.ping.seq);
        ck_assert(a->u.ping.sent_ms == b->u.ping.sent_ms);
    }
}

/* Encode m and compare with want; decode want and compare with m. */
static void assert_golden(const struct msg *m, const struct bytes *want)
{
    struct msg back;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_encode(m, &out), 0);
    ck_assert_uint_eq(out.len, want->len);
    ck_assert_int_eq(memcmp(buf_data(&out), want->p, want->len), 0);
    ck_assert_int_eq(decode(want, &back), 0);
    assert_msg_eq(m, &back);
    buf_free(&out);
}

/* --- golden bytes --------------------------------------------------------- */

START_TEST(test_ident_golden)
{
    struct msg m = ident_example();
    struct bytes want;

    ident_example_bytes(&want);
    assert_golden(&m, &want);
    /* A 40-byte id takes str8, a version over 65535 a uint32. */
    memset(m.u.ident.id, 'a', 40);
    m.u.ident.id[40] = '\0';
    m.u.ident.version = 70000;
    strcpy(m.u.ident.peer_addr, "[::1]:1");
    unhex(&want, "96 01 d9 28");
    for (int i = 0; i < 40; i++) {
        add_text(&want, "a");
    }
    add_hex(&want, "a2");
    add_text(&want, "r1");
    add_hex(&want, "ce 00 01 11 70 a7");
    add_text(&want, "[::1]:1");
    add_hex(&want, "ae");
    add_text(&want, "127.0.0.1:7370");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_ping_golden)
{
    struct msg m = {.type = MSG_PING, .u.ping = {.seq = 7, .sent_ms = 1000}};
    struct bytes want;

    unhex(&want, "93 02 07 cd 03 e8");
    assert_golden(&m, &want);
    m.u.ping.seq = 0;
    m.u.ping.sent_ms = 200;
    unhex(&want, "93 02 00 cc c8");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_pong_golden)
{
    struct msg m = {.type = MSG_PONG, .u.ping = {.seq = 1ull << 32, .sent_ms = UINT64_MAX}};
    struct bytes want;

    unhex(&want, "93 03 cf 00 00 00 01 00 00 00 00 cf ff ff ff ff ff ff ff ff");
    assert_golden(&m, &want);
    m.u.ping.seq = 65536;
    m.u.ping.sent_ms = 65535;
    unhex(&want, "93 03 ce 00 01 00 00 cd ff ff");
    assert_golden(&m, &want);
}
END_TEST

/* --- round trips and decoder rules ------------------------------------------ */

static void random_name(char *out, size_t max)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-";
    size_t len = 1 + (size_t)(rng_next() % max);

    for (size_t i = 0; i < len; i++) {
        out[i] = alphabet[rng_next() % (sizeof(alphabet) - 1)];
    }
    out[len] = '\0';
}

static void random_addr(char *out)
{
    char host[40];

    random_name(host, 1 + rng_next() % 39);
    snprintf(out, 64, "%s:%u", host, (unsigned)(1 + rng_next() % 65535));
}

static struct msg random_msg(void)
{
    struct msg m;

    memset(&m, 0, sizeof(m));
    m.type = (enum msg_type)(1 + rng_next() % MSG_TYPE_MAX);
    if (m.type == MSG_IDENT) {
        random_name(m.u.ident.id, RING_NAME_MAX);
        random_name(m.u.ident.rack, RING_NAME_MAX);
        m.u.ident.version = (uint32_t)(rng_next() >> (rng_next() % 33));
        random_addr(m.u.ident.peer_addr);
        random_addr(m.u.ident.client_addr);
    } else {
        m.u.ping.seq = rng_next() >> (rng_next() % 64);
        m.u.ping.sent_ms = rng_next() >> (rng_next() % 64);
    }
    return m;
}

START_TEST(test_round_trip)
{
    struct msg m, back;
    struct buf out;

    buf_init(&out, 0);
    for (int t = 0; t < TRIALS; t++) {
        m = random_msg();
        buf_clear(&out);
        ck_assert_int_eq(msg_encode(&m, &out), 0);
        ck_assert_int_eq(msg_decode(buf_data(&out), out.len, &back), 0);
        assert_msg_eq(&m, &back);
    }
    buf_free(&out);
}
END_TEST

START_TEST(test_encode_appends)
{
    struct msg a = ident_example(), b = {.type = MSG_PING, .u.ping = {1, 2}};
    struct bytes want;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_encode(&a, &out), 0);
    ck_assert_int_eq(msg_encode(&b, &out), 0);
    ident_example_bytes(&want);
    add_hex(&want, "93 02 01 02");
    ck_assert_uint_eq(out.len, want.len);
    ck_assert_int_eq(memcmp(buf_data(&out), want.p, want.len), 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_trailing_fields_accepted)
{
    struct msg m;
    struct bytes b;

    /* PING with three more fields: a string, [1, {"a": 2}], nil. */
    unhex(&b, "96 02 07 cd 03 e8 a6");
    add_text(&b, "future");
    add_hex(&b, "92 01 81 a1 61 02 c0");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_int_eq(m.type, MSG_PING);
    ck_assert(m.u.ping.seq == 7 && m.u.ping.sent_ms == 1000);
    ident_example_bytes(&b);
    b.p[0] = 0x97;
    add_hex(&b, "cb 40 09 21 fb 54 44 2d 18"); /* a float64 */
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_str_eq(m.u.ident.client_addr, "127.0.0.1:7370");
}
END_TEST

START_TEST(test_fields_max)
{
    struct msg m;
    struct bytes b;

    /* 64 elements: type, two fields, 61 nils. */
    unhex(&b, "dc 00 40 02 01 02");
    for (int i = 0; i < 61; i++) {
        add_hex(&b, "c0");
    }
    ck_assert_int_eq(decode(&b, &m), 0);
    unhex(&b, "dc 00 41 02 01 02");
    for (int i = 0; i < 62; i++) {
        add_hex(&b, "c0");
    }
    ck_assert_int_eq(decode(&b, &m), RK_ETOOBIG);
    unhex(&b, "dd ff ff ff ff 02 01 02");
    ck_assert_int_eq(decode(&b, &m), RK_ETOOBIG);
}
END_TEST

START_TEST(test_unknown_type)
{
    static const char *const unknown[] = {"91 00", "93 04 01 02", "91 cc c8",
                                          "91 cf ff ff ff ff ff ff ff ff", "92 7f c0"};
    static const char *const malformed[] = {"91 ff",    "91 c0", "90",
                                            "81 02 01", "02",    "91 a1 31",
                                            "",         "93 c1", "91 cb 3f f0 00 00 00 00 00 00"};
    struct msg m;
    struct bytes b;

    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
        unhex(&b, unknown[i]);
        ck_assert_msg(decode(&b, &m) == RK_ENOTFOUND, "%s", unknown[i]);
    }
    for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        unhex(&b, malformed[i]);
        ck_assert_msg(decode(&b, &m) == RK_ESYNTAX, "%s", malformed[i]);
    }
    ck_assert_str_eq(msg_type_name(MSG_IDENT), "ident");
    ck_assert_str_eq(msg_type_name(MSG_PING), "ping");
    ck_assert_str_eq(msg_type_name(MSG_PONG), "pong");
    ck_assert_str_eq(msg_type_name(0), "unknown");
    ck_assert_str_eq(msg_type_name(MSG_TYPE_MAX + 1), "unknown");
    ck_assert_str_eq(msg_type_name(-1), "unknown");
}
END_TEST

START_TEST(test_missing_fields)
{
    struct msg m;
    struct bytes b;

    unhex(&b, "92 02 07");
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
    ident_example_bytes(&b);
    b.p[0] = 0x95;
    b.len -= 15; /* drop client_addr */
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
    unhex(&b, "93 02 a1 37 01"); /* seq as a string */
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
    unhex(&b, "93 02 ff 01"); /* negative seq */
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
}
END_TEST

START_TEST(test_trailing_bytes_refused)
{
    struct msg m;
    struct bytes b;

    unhex(&b, "93 02 07 cd 03 e8 00");
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
    ck_assert_int_eq(m.type, 0);
    ident_example_bytes(&b);
    add_hex(&b, "93 02 01 02");
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
}
END_TEST

START_TEST(test_every_truncation_refused)
{
    struct bytes golden[4];
    struct msg m;

    ident_example_bytes(&golden[0]);
    unhex(&golden[1], "93 02 07 cd 03 e8");
    unhex(&golden[2], "93 03 cf 00 00 00 01 00 00 00 00 cf ff ff ff ff ff ff ff ff");
    unhex(&golden[3], "96 02 07 cd 03 e8 a6 66 75 74 75 72 65 92 01 81 a1 61 02 c0");
    for (size_t g = 0; g < 4; g++) {
        ck_assert_int_eq(msg_decode(golden[g].p, golden[g].len, &m), 0);
        for (size_t len = 0; len < golden[g].len; len++) {
            ck_assert_msg(msg_decode(golden[g].p, len, &m) != 0, "message %zu cut at %zu", g, len);
        }
    }
}
END_TEST

/* IDENT with one field replaced by raw msgpack bytes. */
static int ident_with(int field, const char *hex)
{
    static const char *const fields[] = {"a2 6e 31", "a2 72 31", "01",
                                         "ae 31 32 37 2e 30 2e 30 2e 31 3a 37 33 37 31",
                                         "ae 31 32 37 2e 30 2e 30 2e 31 3a 37 33 37 30"};
    struct bytes b;
    struct msg m;

    unhex(&b, "96 01");
    for (int i = 0; i < 5; i++) {
        add_hex(&b, i == field ? hex : fields[i]);
    }
    return decode(&b, &m);
}

/* A str head and body for text, as hex. */
static const char *str_hex(const char *text)
{
    static char out[4 * sizeof(((struct bytes *)0)->p)];
    size_t len = strlen(text), n;

    if (len < 32) {
        n = (size_t)snprintf(out, sizeof(out), "%02x", 0xa0 | (unsigned)len);
    } else if (len < 256) {
        n = (size_t)snprintf(out, sizeof(out), "d9 %02x", (unsigned)len);
    } else {
        n = (size_t)snprintf(out, sizeof(out), "da %04x", (unsigned)len);
    }
    for (size_t i = 0; i < len; i++) {
        n += (size_t)snprintf(out + n, sizeof(out) - n, " %02x", (uint8_t)text[i]);
    }
    return out;
}

START_TEST(test_ident_oversized_refused)
{
    size_t addr_cap = sizeof(((struct msg_ident *)0)->peer_addr);
    char text[1024];

    ck_assert_int_eq(ident_with(-1, ""), 0);
    memset(text, 'a', 64);
    text[64] = '\0';
    ck_assert_int_eq(ident_with(0, str_hex(text)), 0);
    text[64] = 'a';
    text[65] = '\0';
    ck_assert_int_eq(ident_with(0, str_hex(text)), RK_ETOOBIG);
    ck_assert_int_eq(ident_with(1, str_hex(text)), RK_ETOOBIG);
    /* An address fills its field but for the NUL. */
    snprintf(text, sizeof(text), "%0*d:7371", (int)(addr_cap - 1 - 5), 1);
    ck_assert_uint_eq(strlen(text), addr_cap - 1);
    ck_assert_int_eq(ident_with(3, str_hex(text)), 0);
    snprintf(text, sizeof(text), "%0*d:7371", (int)(addr_cap - 5), 1);
    ck_assert_int_eq(ident_with(3, str_hex(text)), RK_ETOOBIG);
    ck_assert_int_eq(ident_with(4, str_hex(text)), RK_ETOOBIG);
    ck_assert_int_eq(ident_with(0, "db ff ff ff ff 61"), RK_ETOOBIG);
    ck_assert_int_eq(ident_with(2, "cf 00 00 00 01 00 00 00 00"), RK_ETOOBIG);
    ck_assert_int_eq(ident_with(2, "ce ff ff ff ff"), 0);
}
END_TEST

START_TEST(test_ident_invalid_refused)
{
    static const char *const bad_names[] = {"", "n 1", "n/1", "n\x01", "caf\xc3\xa9"};
    static const char *const bad_addrs[] = {"",         "host",    "host:",  ":7371",  "h:0",
                                            "h:65536",  "h:07371", "h:73a",  "h st:1", "h\x7f:1",
                                            "h:123456", "h:-1",    "h:\x01", "\t:1"};
    static const char *const good_addrs[] = {"h:1", "h:65535", "[::1]:7371", "a.b-c_d:80"};

    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        ck_assert_msg(ident_with(0, str_hex(bad_names[i])) == RK_ESYNTAX, "id %zu", i);
        ck_assert_msg(ident_with(1, str_hex(bad_names[i])) == RK_ESYNTAX, "rack %zu", i);
    }
    for (size_t i = 0; i < sizeof(bad_addrs) / sizeof(bad_addrs[0]); i++) {
        ck_assert_msg(ident_with(3, str_hex(bad_addrs[i])) == RK_ESYNTAX, "peer %s", bad_addrs[i]);
        ck_assert_msg(ident_with(4, str_hex(bad_addrs[i])) == RK_ESYNTAX, "client %s",
                      bad_addrs[i]);
    }
    for (size_t i = 0; i < sizeof(good_addrs) / sizeof(good_addrs[0]); i++) {
        ck_assert_msg(ident_with(3, str_hex(good_addrs[i])) == 0, "peer %s", good_addrs[i]);
    }
    ck_assert_int_eq(ident_with(0, "c4 02 6e 31"), RK_ESYNTAX); /* bin, not str */
    ck_assert_int_eq(ident_with(2, "ff"), RK_ESYNTAX);          /* negative version */
    ck_assert_int_eq(ident_with(0, "a2 6e 00"), RK_ESYNTAX);    /* NUL inside */
}
END_TEST

START_TEST(test_encode_invalid_refused)
{
    struct msg m = ident_example();
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(buf_append(&out, "keep", 4), 0);
    strcpy(m.u.ident.id, "bad id");
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = ident_example();
    strcpy(m.u.ident.peer_addr, "no-port");
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = ident_example();
    memset(m.u.ident.client_addr, 'a', sizeof(m.u.ident.client_addr)); /* no NUL */
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = ident_example();
    memset(m.u.ident.rack, 'a', sizeof(m.u.ident.rack)); /* no NUL */
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.type = (enum msg_type)0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.type = (enum msg_type)(MSG_TYPE_MAX + 1);
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 4);
    ck_assert_int_eq(memcmp(buf_data(&out), "keep", 4), 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_encode_bounded_buffer)
{
    struct msg m = ident_example();
    struct buf out;

    buf_init(&out, 20);
    ck_assert_int_eq(buf_append(&out, "ab", 2), 0);
    ck_assert_int_eq(msg_encode(&m, &out), RK_ETOOBIG);
    ck_assert_uint_eq(out.len, 2);
    m.type = MSG_PING;
    m.u.ping.seq = 1;
    m.u.ping.sent_ms = 2;
    ck_assert_int_eq(msg_encode(&m, &out), 0);
    ck_assert_uint_eq(out.len, 6);
    buf_free(&out);
}
END_TEST

/* --- the msgpack reader ----------------------------------------------------- */

static void reader(struct mp_reader *r, struct bytes *b, const char *hex)
{
    unhex(b, hex);
    mp_reader_init(r, b->p, b->len);
}

static uint64_t uint_of(const char *hex)
{
    struct mp_reader r;
    struct bytes b;
    uint64_t v;

    reader(&r, &b, hex);
    ck_assert_msg(mp_read_uint(&r, &v) == 0, "%s", hex);
    ck_assert(mp_done(&r));
    return v;
}

static int64_t int_of(const char *hex)
{
    struct mp_reader r;
    struct bytes b;
    int64_t v;

    reader(&r, &b, hex);
    ck_assert_msg(mp_read_int(&r, &v) == 0, "%s", hex);
    ck_assert(mp_done(&r));
    return v;
}

static int uint_err(const char *hex)
{
    struct mp_reader r;
    struct bytes b;
    uint64_t v = 99;
    int rc;

    reader(&r, &b, hex);
    rc = mp_read_uint(&r, &v);
    ck_assert(rc == 0 || v == 0);
    return rc;
}

static int int_err(const char *hex)
{
    struct mp_reader r;
    struct bytes b;
    int64_t v = 99;
    int rc;

    reader(&r, &b, hex);
    rc = mp_read_int(&r, &v);
    ck_assert(rc == 0 || v == 0);
    return rc;
}

START_TEST(test_mp_uint_widths)
{
    ck_assert(uint_of("00") == 0);
    ck_assert(uint_of("7f") == 127);
    ck_assert(uint_of("cc ff") == 255);
    ck_assert(uint_of("cd 01 00") == 256);
    ck_assert(uint_of("ce 12 34 56 78") == 0x12345678);
    ck_assert(uint_of("cf 01 02 03 04 05 06 07 08") == 0x0102030405060708ull);
    ck_assert(uint_of("cf ff ff ff ff ff ff ff ff") == UINT64_MAX);
    ck_assert(uint_of("d0 05") == 5);
    ck_assert(uint_of("d3 7f ff ff ff ff ff ff ff") == INT64_MAX);
    ck_assert_int_eq(uint_err("ff"), RK_ESYNTAX);
    ck_assert_int_eq(uint_err("d0 80"), RK_ESYNTAX);
    ck_assert_int_eq(uint_err("c0"), RK_ESYNTAX);
    ck_assert_int_eq(uint_err("ca 3f 80 00 00"), RK_ESYNTAX);
    ck_assert_int_eq(uint_err("cd 01"), RK_ESYNTAX);
    ck_assert_int_eq(uint_err("cf 01 02 03 04 05 06 07"), RK_ESYNTAX);
    ck_assert_int_eq(uint_err(""), RK_ESYNTAX);
}
END_TEST

START_TEST(test_mp_int_widths)
{
    ck_assert(int_of("ff") == -1);
    ck_assert(int_of("e0") == -32);
    ck_assert(int_of("05") == 5);
    ck_assert(int_of("d0 80") == -128);
    ck_assert(int_of("d0 7f") == 127);
    ck_assert(int_of("d1 80 00") == -32768);
    ck_assert(int_of("d1 ff fe") == -2);
    ck_assert(int_of("d2 80 00 00 00") == INT32_MIN);
    ck_assert(int_of("d3 80 00 00 00 00 00 00 00") == INT64_MIN);
    ck_assert(int_of("d3 ff ff ff ff ff ff ff ff") == -1);
    ck_assert(int_of("cc ff") == 255);
    ck_assert(int_of("cf 7f ff ff ff ff ff ff ff") == INT64_MAX);
    ck_assert_int_eq(int_err("cf 80 00 00 00 00 00 00 00"), RK_ETOOBIG);
    ck_assert_int_eq(int_err("c2"), RK_ESYNTAX);
    ck_assert_int_eq(int_err("d2 80 00 00"), RK_ESYNTAX);
}
END_TEST

/* Read a str (or bin, when bin) of at most max from hex; returns the error. */
static int bytes_err(const char *hex, bool bin, size_t max, size_t *len)
{
    struct mp_reader r;
    struct bytes b;
    const uint8_t *p;
    int rc;

    reader(&r, &b, hex);
    rc = bin ? mp_read_bin(&r, max, &p, len) : mp_read_str(&r, max, &p, len);
    if (rc == 0) {
        ck_assert(p == b.p + b.len - *len);
        ck_assert(mp_done(&r));
    } else {
        ck_assert(p == NULL && *len == 0);
    }
    return rc;
}

START_TEST(test_mp_str_forms)
{
    size_t len;

    ck_assert_int_eq(bytes_err("a0", false, 10, &len), 0);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(bytes_err("a3 61 62 63", false, 10, &len), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(bytes_err("d9 02 61 62", false, 10, &len), 0);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(bytes_err("da 00 02 61 62", false, 10, &len), 0);
    ck_assert_int_eq(bytes_err("db 00 00 00 02 61 62", false, 10, &len), 0);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(bytes_err("a3 61 62 63", false, 2, &len), RK_ETOOBIG);
    ck_assert_int_eq(bytes_err("a3 61 62", false, 10, &len), RK_ESYNTAX);
    ck_assert_int_eq(bytes_err("db ff ff ff ff 61", false, SIZE_MAX, &len), RK_ESYNTAX);
    ck_assert_int_eq(bytes_err("db ff ff ff ff 61", false, 1024, &len), RK_ETOOBIG);
    ck_assert_int_eq(bytes_err("da 00", false, 10, &len), RK_ESYNTAX);
    ck_assert_int_eq(bytes_err("c4 01 61", false, 10, &len), RK_ESYNTAX);
}
END_TEST

START_TEST(test_mp_bin_forms)
{
    size_t len;

    ck_assert_int_eq(bytes_err("c4 00", true, 10, &len), 0);
    ck_assert_int_eq(bytes_err("c4 02 00 ff", true, 10, &len), 0);
    ck_assert_uint_eq(len, 2);
    ck_assert_int_eq(bytes_err("c5 00 03 01 02 03", true, 10, &len), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(bytes_err("c6 00 00 00 01 09", true, 10, &len), 0);
    ck_assert_uint_eq(len, 1);
    ck_assert_int_eq(bytes_err("c6 7f ff ff ff 00", true, 10, &len), RK_ETOOBIG);
    ck_assert_int_eq(bytes_err("c6 7f ff ff ff 00", true, SIZE_MAX, &len), RK_ESYNTAX);
    ck_assert_int_eq(bytes_err("a1 61", true, 10, &len), RK_ESYNTAX);
}
END_TEST

/* Read an array (or map) count of at most max from hex; returns the error. */
static int count_err(const char *hex, bool map, size_t max, size_t *n)
{
    struct mp_reader r;
    struct bytes b;
    int rc;

    reader(&r, &b, hex);
    rc = map ? mp_read_map(&r, max, n) : mp_read_array(&r, max, n);
    ck_assert(rc == 0 || *n == 0);
    return rc;
}

START_TEST(test_mp_counts)
{
    size_t n;

    ck_assert_int_eq(count_err("90", false, 8, &n), 0);
    ck_assert_int_eq(count_err("92 01 02", false, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(count_err("dc 00 02 01 02", false, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(count_err("dd 00 00 00 03 01 02 03", false, 8, &n), 0);
    ck_assert_uint_eq(n, 3);
    ck_assert_int_eq(count_err("81 01 02", true, 8, &n), 0);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(count_err("de 00 01 01 02", true, 8, &n), 0);
    ck_assert_int_eq(count_err("df 00 00 00 02 01 02 03 04", true, 8, &n), 0);
    ck_assert_uint_eq(n, 2);
    /* Huge declared counts: over the limit, or more elements than bytes. */
    ck_assert_int_eq(count_err("dd ff ff ff ff", false, 8, &n), RK_ETOOBIG);
    ck_assert_int_eq(count_err("dd ff ff ff ff 00", false, SIZE_MAX, &n), RK_ESYNTAX);
    ck_assert_int_eq(count_err("df ff ff ff ff 00 00", true, SIZE_MAX, &n), RK_ESYNTAX);
    ck_assert_int_eq(count_err("dc ff ff", false, SIZE_MAX, &n), RK_ESYNTAX);
    ck_assert_int_eq(count_err("de ff ff", true, 8, &n), RK_ETOOBIG);
    ck_assert_int_eq(count_err("93 01 02", false, 8, &n), RK_ESYNTAX);
    ck_assert_int_eq(count_err("82 01 02 03", true, 8, &n), RK_ESYNTAX);
    ck_assert_int_eq(count_err("93 01 02 03", false, 2, &n), RK_ETOOBIG);
    ck_assert_int_eq(count_err("81 01 02", false, 8, &n), RK_ESYNTAX);
    ck_assert_int_eq(count_err("dd 00 00", false, 8, &n), RK_ESYNTAX);
}
END_TEST

START_TEST(test_mp_bool_nil)
{
    struct mp_reader r;
    struct bytes b;
    bool v;

    reader(&r, &b, "c2 c3 c0");
    ck_assert_int_eq(mp_read_bool(&r, &v), 0);
    ck_assert(!v);
    ck_assert(!mp_peek_nil(&r));
    ck_assert_int_eq(mp_read_bool(&r, &v), 0);
    ck_assert(v);
    ck_assert(mp_peek_nil(&r));
    ck_assert_int_eq(mp_read_nil(&r), 0);
    ck_assert(mp_done(&r));
    ck_assert(!mp_peek_nil(&r));
    reader(&r, &b, "01");
    ck_assert_int_eq(mp_read_bool(&r, &v), RK_ESYNTAX);
    ck_assert(!v);
    reader(&r, &b, "c2");
    ck_assert_int_eq(mp_read_nil(&r), RK_ESYNTAX);
}
END_TEST

START_TEST(test_mp_sticky_error)
{
    struct mp_reader r;
    struct bytes b;
    const uint8_t *p;
    uint64_t u = 1;
    size_t n = 1;

    reader(&r, &b, "c1 01 a1 61 c0");
    ck_assert_int_eq(mp_read_uint(&r, &u), RK_ESYNTAX);
    r.pos = 1; /* even with the position moved past the bad byte */
    ck_assert_int_eq(mp_read_uint(&r, &u), RK_ESYNTAX);
    ck_assert(u == 0);
    ck_assert_int_eq(mp_read_str(&r, 8, &p, &n), RK_ESYNTAX);
    ck_assert(p == NULL && n == 0);
    ck_assert(!mp_peek_nil(&r));
    ck_assert_int_eq(mp_skip(&r, 4), RK_ESYNTAX);
    ck_assert(!mp_done(&r));
    reader(&r, &b, "93 01");
    ck_assert_int_eq(mp_read_array(&r, 2, &n), RK_ETOOBIG);
    ck_assert_int_eq(mp_read_uint(&r, &u), RK_ETOOBIG);
}
END_TEST

START_TEST(test_mp_skip_every_type)
{
    struct mp_reader r;
    struct bytes b;

    reader(&r, &b,
           "00 7f e0 ff c0 c2 c3 cc 01 cd 00 01 ce 00 00 00 01 cf 00 00 00 00 00 00 00 01 "
           "d0 ff d1 ff ff d2 ff ff ff ff d3 ff ff ff ff ff ff ff ff "
           "ca 3f 80 00 00 cb 3f f0 00 00 00 00 00 00 "
           "a1 61 d9 01 61 da 00 01 61 db 00 00 00 01 61 "
           "c4 01 00 c5 00 01 00 c6 00 00 00 01 00 "
           "d4 01 aa d5 01 aa bb d6 01 00 00 00 00 d7 01 00 00 00 00 00 00 00 00 "
           "d8 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 "
           "c7 02 05 aa bb c8 00 01 05 aa c9 00 00 00 00 05 "
           "90 80 92 01 92 02 81 a1 6b 03 dc 00 01 c0 dd 00 00 00 01 c0 "
           "de 00 01 c0 c0 df 00 00 00 01 c0 c0");
    while (r.pos < r.len && r.err == 0) {
        mp_skip(&r, 3);
    }
    ck_assert(mp_done(&r));
}
END_TEST

START_TEST(test_mp_skip_limits)
{
    static const char *const truncated[] = {"c1",       "cd 00",    "a2 61",          "c4 02 00",
                                            "c7 01 05", "d4 01",    "d8 01 00",       "92 01",
                                            "81 01",    "ca 00 00", "dd ff ff ff ff", "c9 00"};
    struct mp_reader r;
    struct bytes b;

    reader(&r, &b, "91 91 91 01");
    ck_assert_int_eq(mp_skip(&r, 3), 0);
    ck_assert(mp_done(&r));
    reader(&r, &b, "91 91 91 01");
    ck_assert_int_eq(mp_skip(&r, 2), RK_ETOOBIG);
    reader(&r, &b, "01");
    ck_assert_int_eq(mp_skip(&r, 0), 0);
    reader(&r, &b, "90");
    ck_assert_int_eq(mp_skip(&r, 0), RK_ETOOBIG);
    for (size_t i = 0; i < sizeof(truncated) / sizeof(truncated[0]); i++) {
        reader(&r, &b, truncated[i]);
        ck_assert_msg(mp_skip(&r, 8) == RK_ESYNTAX, "%s", truncated[i]);
    }
}
END_TEST

static Suite *msg_suite(void)
{
    Suite *s = suite_create("msg");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"ident_golden", test_ident_golden},
        {"ping_golden", test_ping_golden},
        {"pong_golden", test_pong_golden},
        {"round_trip", test_round_trip},
        {"encode_appends", test_encode_appends},
        {"trailing_fields_accepted", test_trailing_fields_accepted},
        {"fields_max", test_fields_max},
        {"unknown_type", test_unknown_type},
        {"missing_fields", test_missing_fields},
        {"trailing_bytes_refused", test_trailing_bytes_refused},
        {"every_truncation_refused", test_every_truncation_refused},
        {"ident_oversized_refused", test_ident_oversized_refused},
        {"ident_invalid_refused", test_ident_invalid_refused},
        {"encode_invalid_refused", test_encode_invalid_refused},
        {"encode_bounded_buffer", test_encode_bounded_buffer},
        {"mp_uint_widths", test_mp_uint_widths},
        {"mp_int_widths", test_mp_int_widths},
        {"mp_str_forms", test_mp_str_forms},
        {"mp_bin_forms", test_mp_bin_forms},
        {"mp_counts", test_mp_counts},
        {"mp_bool_nil", test_mp_bool_nil},
        {"mp_sticky_error", test_mp_sticky_error},
        {"mp_skip_every_type", test_mp_skip_every_type},
        {"mp_skip_limits", test_mp_skip_limits},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, rng_setup, NULL);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(msg_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
