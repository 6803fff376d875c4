/*
 * check_channel.c - unit tests of the sealed channel and its key files
 * (proto/channel.c, proto/frame.c).
 *
 * Two channels, an initiator and a responder, are driven through the
 * handshake in memory: what one appends to its output buffer is fed to the
 * other.  Attacks are made on those bytes (replayed, reordered, cut,
 * flipped frames; a recorded handshake played to a new responder).  A
 * second initiator, written here from proto/PROTOCOL.md with libsodium
 * alone, checks that the document is enough to interoperate, and is the
 * tool for the one attack a well-behaved channel cannot mount: a proof
 * made with the wrong key.  Random inputs come from a xorshift generator
 * whose seed is printed (replay with RINGKV_TEST_SEED=<seed>); the
 * handshake's own randomness is libsodium's, so no test depends on exact
 * handshake bytes.  The tags of client contexts (channel_key_context_tag())
 * are checked against golden bytes computed apart, and for what they bind.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "bytes.h"
#include "channel.h"
#include "error.h"
#include "frame.h"
#include "msg.h"
#include "test_rng.h"

/* A frame maximum small enough that every header bit flip can be filled in. */
#define TEST_FRAME_MAX (64 * 1024)

static void rng_setup(void)
{
    rng_seed("check_channel");
}

static struct channel_key *key_new(void)
{
    struct channel_key *k;

    ck_assert_int_eq(channel_key_generate(&k), 0);
    return k;
}

/* One end of a connection: its channel, what it sends, what it opened. */
struct end {
    struct channel ch;
    struct buf out;
    struct buf msg;
};

struct pair {
    struct end i, r;
};

static void end_init(struct end *e, const struct channel_key *k, enum channel_role role,
                     size_t frame_max)
{
    ck_assert_int_eq(channel_init(&e->ch, k, role, frame_max), 0);
    buf_init(&e->out, 0);
    buf_init(&e->msg, 0);
}

static void end_deinit(struct end *e)
{
    channel_deinit(&e->ch);
    buf_free(&e->out);
    buf_free(&e->msg);
}

/*
 * Feed in[0..len) to e frame by frame until an error or a frame that is
 * not complete.  Returns the last result; *used (when not NULL) is how
 * many bytes were consumed.  Opened messages accumulate in e->msg.
 */
static int feed_bytes(struct end *e, const uint8_t *in, size_t len, size_t *used)
{
    size_t off = 0, step;
    int rc;

    do {
        rc = channel_feed(&e->ch, in + off, len - off, &step, &e->out, &e->msg);
        off += step;
    } while (rc > 0 && off < len);
    if (used != NULL) {
        *used = off;
    }
    return rc;
}

/* Move everything from's output holds into to, and clear it. */
static int deliver(struct end *from, struct end *to)
{
    int rc = feed_bytes(to, buf_data(&from->out), from->out.len, NULL);

    buf_clear(&from->out);
    return rc;
}

static void pair_open(struct pair *p, const struct channel_key *k, size_t frame_max)
{
    end_init(&p->i, k, CHANNEL_INITIATOR, frame_max);
    end_init(&p->r, k, CHANNEL_RESPONDER, frame_max);
    ck_assert_int_eq(channel_start(&p->i.ch, &p->i.out), 0);
    ck_assert_int_eq(deliver(&p->i, &p->r), CHANNEL_PROGRESS);
    ck_assert(!channel_is_open(&p->r.ch));
    ck_assert_int_eq(deliver(&p->r, &p->i), CHANNEL_PROGRESS);
    ck_assert(channel_is_open(&p->i.ch));
    ck_assert(!channel_is_open(&p->r.ch));
    ck_assert_int_eq(deliver(&p->i, &p->r), CHANNEL_PROGRESS);
    ck_assert(channel_is_open(&p->r.ch));
}

static void pair_close(struct pair *p)
{
    end_deinit(&p->i);
    end_deinit(&p->r);
}

/* Seal text from e into e->out. */
static void seal_str(struct end *e, const char *text)
{
    ck_assert_int_eq(channel_seal(&e->ch, text, strlen(text), &e->out), 0);
}

/* The frame at in[0..len): its total size. */
static size_t frame_size(const uint8_t *in, size_t len)
{
    const uint8_t *body;
    size_t body_len, used;

    ck_assert_int_eq(frame_parse(in, len, SIZE_MAX, &body, &body_len, &used), 1);
    return used;
}

/* --- handshake -------------------------------------------------------------- */

START_TEST(test_handshake_opens)
{
    struct channel_key *k = key_new();
    struct pair p;

    pair_open(&p, k, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(memcmp(p.i.ch.transcript, p.r.ch.transcript, 32), 0);
    ck_assert_int_eq(memcmp(p.i.ch.nonce_local, p.r.ch.nonce_remote, 32), 0);
    ck_assert_int_eq(memcmp(p.r.ch.eph_public, p.i.ch.eph_remote, 32), 0);
    ck_assert(p.i.ch.tx_seq == 0 && p.r.ch.rx_seq == 0);
    ck_assert_uint_eq(p.r.msg.len, 0);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_handshake_fresh_per_connection)
{
    struct channel_key *k = key_new();
    struct pair a, b;

    pair_open(&a, k, FRAME_MAX_DEFAULT);
    pair_open(&b, k, FRAME_MAX_DEFAULT);
    ck_assert_int_ne(memcmp(a.i.ch.transcript, b.i.ch.transcript, 32), 0);
    ck_assert_int_ne(memcmp(a.i.ch.nonce_local, b.i.ch.nonce_local, 32), 0);
    ck_assert_int_ne(memcmp(a.r.ch.eph_public, b.r.ch.eph_public, 32), 0);
    /* A frame sealed on one connection does not open on the other. */
    seal_str(&a.i, "hello");
    ck_assert_int_eq(deliver(&a.i, &b.r), RK_EAUTH);
    pair_close(&a);
    pair_close(&b);
    channel_key_free(k);
}
END_TEST

START_TEST(test_messages_both_ways)
{
    struct channel_key *k = key_new();
    size_t big_len = 300 * 1000;
    uint8_t *big = malloc(big_len);
    struct pair p;

    ck_assert_ptr_nonnull(big);
    for (size_t i = 0; i < big_len; i++) {
        big[i] = (uint8_t)rng_next();
    }
    pair_open(&p, k, FRAME_MAX_DEFAULT);
    for (int round = 0; round < 5; round++) {
        seal_str(&p.i, "ping from i");
        ck_assert_int_eq(deliver(&p.i, &p.r), CHANNEL_MESSAGE);
        ck_assert_uint_eq(p.r.msg.len, strlen("ping from i"));
        ck_assert_int_eq(memcmp(buf_data(&p.r.msg), "ping from i", p.r.msg.len), 0);
        buf_clear(&p.r.msg);
        seal_str(&p.r, "pong from r");
        ck_assert_int_eq(deliver(&p.r, &p.i), CHANNEL_MESSAGE);
        ck_assert_int_eq(memcmp(buf_data(&p.i.msg), "pong from r", p.i.msg.len), 0);
        buf_clear(&p.i.msg);
    }
    ck_assert_int_eq(channel_seal(&p.r.ch, big, big_len, &p.r.out), 0);
    ck_assert_int_eq(channel_seal(&p.r.ch, "", 0, &p.r.out), 0);
    ck_assert_int_eq(deliver(&p.r, &p.i), CHANNEL_MESSAGE);
    ck_assert_uint_eq(p.i.msg.len, big_len);
    ck_assert_int_eq(memcmp(buf_data(&p.i.msg), big, big_len), 0);
    ck_assert(p.i.ch.rx_seq == 7 && p.r.ch.tx_seq == 7 && p.i.ch.tx_seq == 5);
    pair_close(&p);
    channel_key_free(k);
    free(big);
}
END_TEST

START_TEST(test_message_round_trip_msg)
{
    struct channel_key *k = key_new();
    struct msg m = {.type = MSG_PING, .u.ping = {.seq = 42, .sent_ms = 123456789}}, got;
    struct buf plain;
    struct pair p;

    buf_init(&plain, 0);
    pair_open(&p, k, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(msg_encode(&m, &plain), 0);
    ck_assert_int_eq(channel_seal(&p.i.ch, buf_data(&plain), plain.len, &p.i.out), 0);
    ck_assert_int_eq(deliver(&p.i, &p.r), CHANNEL_MESSAGE);
    ck_assert_int_eq(msg_decode(buf_data(&p.r.msg), p.r.msg.len, &got), 0);
    ck_assert_int_eq(got.type, MSG_PING);
    ck_assert(got.u.ping.seq == 42 && got.u.ping.sent_ms == 123456789);
    buf_free(&plain);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_feed_byte_by_byte)
{
    struct channel_key *k = key_new();
    struct end i, r;
    struct buf stream;
    size_t pos = 0, have = 0, used;
    int rc, messages = 0;

    buf_init(&stream, 0);
    end_init(&i, k, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(channel_start(&i.ch, &i.out), 0);
    ck_assert_int_eq(deliver(&i, &r), CHANNEL_PROGRESS);
    ck_assert_int_eq(deliver(&r, &i), CHANNEL_PROGRESS);
    seal_str(&i, "one");
    seal_str(&i, "two");
    /* PROOF and two sealed frames arrive one byte at a time. */
    ck_assert_int_eq(buf_append(&stream, buf_data(&i.out), i.out.len), 0);
    while (have < stream.len) {
        have++;
        rc = channel_feed(&r.ch, buf_data(&stream) + pos, have - pos, &used, &r.out, &r.msg);
        ck_assert_int_ge(rc, 0);
        ck_assert(rc == CHANNEL_NEED_MORE ? used == 0 : used == have - pos);
        pos += used;
        messages += rc == CHANNEL_MESSAGE;
    }
    ck_assert_uint_eq(pos, stream.len);
    ck_assert_int_eq(messages, 2);
    ck_assert_uint_eq(r.msg.len, 6);
    ck_assert_int_eq(memcmp(buf_data(&r.msg), "onetwo", 6), 0);
    buf_free(&stream);
    end_deinit(&i);
    end_deinit(&r);
    channel_key_free(k);
}
END_TEST

START_TEST(test_wrong_key_initiator_detects)
{
    struct channel_key *ki = key_new(), *kr = key_new();
    struct end i, r;

    end_init(&i, ki, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    end_init(&r, kr, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(channel_start(&i.ch, &i.out), 0);
    ck_assert_int_eq(deliver(&i, &r), CHANNEL_PROGRESS);
    /* WELCOME's proof is made with kr: the initiator refuses it and sends nothing. */
    ck_assert_int_eq(deliver(&r, &i), RK_EAUTH);
    ck_assert_int_eq(i.ch.state, CHANNEL_FAILED);
    ck_assert_uint_eq(i.out.len, 0);
    ck_assert_int_eq(r.ch.state, CHANNEL_HANDSHAKE);
    ck_assert(!channel_is_open(&r.ch));
    end_deinit(&i);
    end_deinit(&r);
    channel_key_free(ki);
    channel_key_free(kr);
}
END_TEST

START_TEST(test_replayed_handshake_refused)
{
    struct channel_key *k = key_new();
    struct buf hello, proof;
    struct end i, r1, r2;

    buf_init(&hello, 0);
    buf_init(&proof, 0);
    end_init(&i, k, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    end_init(&r1, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    end_init(&r2, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(channel_start(&i.ch, &i.out), 0);
    ck_assert_int_eq(buf_append(&hello, buf_data(&i.out), i.out.len), 0);
    ck_assert_int_eq(deliver(&i, &r1), CHANNEL_PROGRESS);
    ck_assert_int_eq(deliver(&r1, &i), CHANNEL_PROGRESS);
    ck_assert_int_eq(buf_append(&proof, buf_data(&i.out), i.out.len), 0);
    ck_assert_int_eq(deliver(&i, &r1), CHANNEL_PROGRESS);
    ck_assert(channel_is_open(&r1.ch));
    /* The recorded HELLO and PROOF, played to a new responder. */
    ck_assert_int_eq(feed_bytes(&r2, buf_data(&hello), hello.len, NULL), CHANNEL_PROGRESS);
    ck_assert_int_eq(feed_bytes(&r2, buf_data(&proof), proof.len, NULL), RK_EAUTH);
    ck_assert(!channel_is_open(&r2.ch));
    buf_free(&hello);
    buf_free(&proof);
    end_deinit(&i);
    end_deinit(&r1);
    end_deinit(&r2);
    channel_key_free(k);
}
END_TEST

/* Take the first frame of e's output; copy HELLO/WELCOME-style bytes out of it. */
static void take_frame(struct end *e, uint8_t *dst, size_t cap, size_t *len)
{
    size_t n = frame_size(buf_data(&e->out), e->out.len);

    ck_assert_uint_le(n, cap);
    memcpy(dst, buf_data(&e->out), n);
    buf_consume(&e->out, n);
    *len = n;
}

START_TEST(test_version_mismatch)
{
    struct channel_key *k = key_new();
    uint8_t frame[512];
    size_t len;
    struct end i, r;

    /* HELLO: 4-byte header, 0x94, 0xa6 "ringkv", then the version byte. */
    end_init(&i, k, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(channel_start(&i.ch, &i.out), 0);
    take_frame(&i, frame, sizeof(frame), &len);
    ck_assert_uint_eq(frame[FRAME_HEADER_BYTES + 8], CHANNEL_VERSION);
    frame[FRAME_HEADER_BYTES + 8] = CHANNEL_VERSION + 1;
    ck_assert_int_eq(feed_bytes(&r, frame, len, NULL), RK_EMISMATCH);
    end_deinit(&r);
    /* WELCOME: 4-byte header, 0x94, then the version byte. */
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    frame[FRAME_HEADER_BYTES + 8] = CHANNEL_VERSION;
    ck_assert_int_eq(feed_bytes(&r, frame, len, NULL), CHANNEL_PROGRESS);
    take_frame(&r, frame, sizeof(frame), &len);
    ck_assert_uint_eq(frame[FRAME_HEADER_BYTES + 1], CHANNEL_VERSION);
    frame[FRAME_HEADER_BYTES + 1] = 0x7f;
    ck_assert_int_eq(feed_bytes(&i, frame, len, NULL), RK_EMISMATCH);
    ck_assert_int_eq(i.ch.state, CHANNEL_FAILED);
    end_deinit(&i);
    end_deinit(&r);
    channel_key_free(k);
}
END_TEST

/* Feed one hand-made handshake body, framed, to a fresh responder. */
static int hello_body_result(const struct channel_key *k, const uint8_t *body, size_t len)
{
    uint8_t frame[512];
    struct end r;
    int rc;

    ck_assert_uint_le(len + FRAME_HEADER_BYTES, sizeof(frame));
    frame_put_header(frame, (uint32_t)len);
    memcpy(frame + FRAME_HEADER_BYTES, body, len);
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    rc = feed_bytes(&r, frame, len + FRAME_HEADER_BYTES, NULL);
    ck_assert(!channel_is_open(&r.ch));
    end_deinit(&r);
    return rc;
}

/* A well-formed HELLO body with the given nonce and public key bytes. */
static size_t hello_body(uint8_t out[77], uint8_t fill_nonce, const uint8_t eph[32])
{
    static const uint8_t head[] = {0x94, 0xa6, 'r', 'i', 'n', 'g', 'k', 'v', 0x01};

    memcpy(out, head, sizeof(head));
    out[9] = 0xc4;
    out[10] = 32;
    memset(out + 11, fill_nonce, 32);
    out[43] = 0xc4;
    out[44] = 32;
    memcpy(out + 45, eph, 32);
    return 77;
}

START_TEST(test_handshake_malformed)
{
    struct channel_key *k = key_new();
    uint8_t body[128], eph[32], sk[32];
    size_t len;

    crypto_kx_keypair(eph, sk);
    len = hello_body(body, 7, eph);
    ck_assert_int_eq(hello_body_result(k, body, len), CHANNEL_PROGRESS);
    body[2] = 'R'; /* magic */
    ck_assert_int_eq(hello_body_result(k, body, len), RK_ESYNTAX);
    len = hello_body(body, 7, eph);
    body[0] = 0x95; /* a fifth element that is not there */
    ck_assert_int_eq(hello_body_result(k, body, len), RK_ESYNTAX);
    body[len] = 0xc0; /* a fifth element that is: v1 has exactly four */
    ck_assert_int_eq(hello_body_result(k, body, len + 1), RK_ESYNTAX);
    len = hello_body(body, 7, eph);
    ck_assert_int_eq(hello_body_result(k, body, len + 1), RK_ESYNTAX); /* trailing byte */
    body[10] = 31;                                                     /* short nonce */
    ck_assert_int_eq(hello_body_result(k, body, len - 1), RK_ESYNTAX);
    len = hello_body(body, 7, eph);
    body[9] = 0xa0 | 31; /* str instead of bin */
    ck_assert_int_eq(hello_body_result(k, body, len - 1), RK_ESYNTAX);
    ck_assert_int_eq(hello_body_result(k, body, 0), RK_ESYNTAX);
    memset(eph, 0, sizeof(eph)); /* a public key without a shared secret */
    len = hello_body(body, 7, eph);
    ck_assert_int_eq(hello_body_result(k, body, len), RK_EAUTH);
    channel_key_free(k);
}
END_TEST

START_TEST(test_handshake_frame_over_limit)
{
    struct channel_key *k = key_new();
    uint8_t header[FRAME_HEADER_BYTES];
    struct end r;
    size_t used;

    /* Before the handshake a frame of more than 256 bytes is refused on its header. */
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    frame_put_header(header, 257);
    ck_assert_int_eq(channel_feed(&r.ch, header, sizeof(header), &used, &r.out, &r.msg),
                     RK_ETOOBIG);
    end_deinit(&r);
    channel_key_free(k);
}
END_TEST

START_TEST(test_data_frame_before_handshake)
{
    struct channel_key *k = key_new();
    struct end fresh, i;
    struct pair p;
    int rc;

    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "too early");
    end_init(&fresh, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(deliver(&p.i, &fresh), RK_ESYNTAX);
    ck_assert(!channel_is_open(&fresh.ch));
    end_deinit(&fresh);
    /* To an initiator awaiting WELCOME, and to one that has not started. */
    end_init(&i, k, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    seal_str(&p.r, "too early");
    ck_assert_int_eq(feed_bytes(&i, buf_data(&p.r.out), p.r.out.len, NULL), RK_ESYNTAX);
    end_deinit(&i);
    end_init(&i, k, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(channel_start(&i.ch, &i.out), 0);
    /* ciphertext is random: now and then its first bytes read as a WELCOME of another version */
    rc = deliver(&p.r, &i);
    ck_assert_msg(rc == RK_ESYNTAX || rc == RK_EMISMATCH, "rc %d", rc);
    ck_assert(!channel_is_open(&i.ch));
    end_deinit(&i);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_second_hello_refused)
{
    struct channel_key *k = key_new();
    struct buf hello;
    struct end i, r;

    buf_init(&hello, 0);
    end_init(&i, k, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(channel_start(&i.ch, &i.out), 0);
    ck_assert_int_eq(buf_append(&hello, buf_data(&i.out), i.out.len), 0);
    ck_assert_int_eq(deliver(&i, &r), CHANNEL_PROGRESS);
    ck_assert_int_eq(feed_bytes(&r, buf_data(&hello), hello.len, NULL), RK_ESYNTAX);
    ck_assert(!channel_is_open(&r.ch));
    buf_free(&hello);
    end_deinit(&i);
    end_deinit(&r);
    channel_key_free(k);
}
END_TEST

/* --- an initiator written from PROTOCOL.md -------------------------------- */

struct spec_initiator {
    uint8_t k_auth[32], k_sess[32];
    uint8_t nonce[32], pk[32], sk[32];
    uint8_t t[32];
    uint8_t tx[32], rx[32];
};

static void spec_hash(uint8_t t[32], const uint8_t *data, size_t len)
{
    crypto_generichash_state st;

    crypto_generichash_init(&st, NULL, 0, 32);
    crypto_generichash_update(&st, t, 32);
    crypto_generichash_update(&st, data, len);
    crypto_generichash_final(&st, t, 32);
}

static void spec_mac(uint8_t out[32], const uint8_t key[32], const char *label, const uint8_t *a,
                     const uint8_t *b)
{
    crypto_generichash_state st;

    crypto_generichash_init(&st, key, 32, 32);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
    crypto_generichash_update(&st, a, 32);
    if (b != NULL) {
        crypto_generichash_update(&st, b, 32);
    }
    crypto_generichash_final(&st, out, 32);
}

/* HELLO as a frame, appended to out. */
static void spec_hello(struct spec_initiator *s, const struct channel_key *k, struct buf *out)
{
    uint8_t frame[FRAME_HEADER_BYTES + 77];
    char hex[65];
    uint8_t key[32];

    channel_key_hex(k, hex);
    for (int i = 0; i < 32; i++) {
        sscanf(hex + 2 * i, "%2hhx", &key[i]);
    }
    crypto_kdf_derive_from_key(s->k_auth, 32, 1, "ringkvch", key);
    crypto_kdf_derive_from_key(s->k_sess, 32, 2, "ringkvch", key);
    randombytes_buf(s->nonce, 32);
    crypto_kx_keypair(s->pk, s->sk);
    frame_put_header(frame, 77);
    hello_body(frame + FRAME_HEADER_BYTES, 0, s->pk);
    memcpy(frame + FRAME_HEADER_BYTES + 11, s->nonce, 32);
    crypto_generichash(s->t, 32, (const uint8_t *)"ringkv channel v1", 17, NULL, 0);
    spec_hash(s->t, frame + FRAME_HEADER_BYTES, 77);
    ck_assert_int_eq(buf_append(out, frame, sizeof(frame)), 0);
}

/*
 * WELCOME in (a 108-byte frame), PROOF out.  Returns false when proof_r is
 * wrong.  The session keys are derived either way.
 */
static bool spec_proof(struct spec_initiator *s, const uint8_t *welcome, struct buf *out)
{
    static const uint8_t head[] = {0, 0, 0, 35, 0x91, 0xc4, 32};
    const uint8_t *w = welcome + FRAME_HEADER_BYTES;
    uint8_t want[32], proof[32], kx_rx[32], kx_tx[32];
    bool ok;

    ck_assert_uint_eq(bytes_get_be32(welcome), 104);
    ck_assert(w[0] == 0x94 && w[1] == 0x01 && w[2] == 0xc4 && w[3] == 32);
    ck_assert(w[36] == 0xc4 && w[37] == 32 && w[70] == 0xc4 && w[71] == 32);
    spec_hash(s->t, w, 70);
    spec_mac(want, s->k_auth, "ringkv responder proof", s->t, NULL);
    ok = sodium_memcmp(want, w + 72, 32) == 0;
    spec_hash(s->t, w + 72, 32);
    spec_mac(proof, s->k_auth, "ringkv initiator proof", s->t, NULL);
    ck_assert_int_eq(buf_append(out, head, sizeof(head)), 0);
    ck_assert_int_eq(buf_append(out, proof, 32), 0);
    ck_assert_int_eq(crypto_kx_client_session_keys(kx_rx, kx_tx, s->pk, s->sk, w + 38), 0);
    spec_mac(s->tx, s->k_sess, "ringkv i2r", kx_tx, s->t);
    spec_mac(s->rx, s->k_sess, "ringkv r2i", kx_rx, s->t);
    return ok;
}

/* Seal text as data frame seq with key, appended to out. */
static void spec_seal(const uint8_t key[32], uint64_t seq, const char *text, struct buf *out)
{
    size_t len = strlen(text);
    uint8_t frame[FRAME_HEADER_BYTES + 256 + 16], nonce[12] = {0};
    unsigned long long clen;

    ck_assert_uint_le(len, 256);
    frame_put_header(frame, (uint32_t)(len + 16));
    bytes_put_be64(nonce + 4, seq);
    crypto_aead_chacha20poly1305_ietf_encrypt(
        frame + FRAME_HEADER_BYTES, &clen, (const uint8_t *)text, len, frame, 4, NULL, nonce, key);
    ck_assert_int_eq(buf_append(out, frame, FRAME_HEADER_BYTES + clen), 0);
}

START_TEST(test_spec_initiator_interoperates)
{
    struct channel_key *k = key_new();
    struct spec_initiator s;
    struct buf wire;
    uint8_t nonce[12] = {0};
    unsigned long long mlen;
    uint8_t plain[64];
    struct end r;

    buf_init(&wire, 0);
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    spec_hello(&s, k, &wire);
    ck_assert_int_eq(feed_bytes(&r, buf_data(&wire), wire.len, NULL), CHANNEL_PROGRESS);
    ck_assert_uint_eq(r.out.len, FRAME_HEADER_BYTES + 104);
    buf_clear(&wire);
    ck_assert(spec_proof(&s, buf_data(&r.out), &wire));
    buf_clear(&r.out);
    spec_seal(s.tx, 0, "first", &wire);
    spec_seal(s.tx, 1, "second", &wire);
    ck_assert_int_eq(feed_bytes(&r, buf_data(&wire), wire.len, NULL), CHANNEL_MESSAGE);
    ck_assert(channel_is_open(&r.ch));
    ck_assert_uint_eq(r.msg.len, strlen("firstsecond"));
    ck_assert_int_eq(memcmp(buf_data(&r.msg), "firstsecond", r.msg.len), 0);
    /* And the responder's first frame opens under key_r2i, sequence 0. */
    seal_str(&r, "reply");
    ck_assert_uint_eq(r.out.len, FRAME_HEADER_BYTES + 5 + 16);
    ck_assert_int_eq(crypto_aead_chacha20poly1305_ietf_decrypt(
                         plain, &mlen, NULL, buf_data(&r.out) + FRAME_HEADER_BYTES, 5 + 16,
                         buf_data(&r.out), FRAME_HEADER_BYTES, nonce, s.rx),
                     0);
    ck_assert_int_eq(memcmp(plain, "reply", 5), 0);
    buf_free(&wire);
    end_deinit(&r);
    channel_key_free(k);
}
END_TEST

START_TEST(test_wrong_key_responder_detects)
{
    struct channel_key *k = key_new(), *other = key_new();
    struct spec_initiator s;
    struct buf wire;
    struct end r;

    buf_init(&wire, 0);
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    /* An initiator with another key that ignores the bad proof_r and answers anyway. */
    spec_hello(&s, other, &wire);
    ck_assert_int_eq(feed_bytes(&r, buf_data(&wire), wire.len, NULL), CHANNEL_PROGRESS);
    buf_clear(&wire);
    ck_assert(!spec_proof(&s, buf_data(&r.out), &wire));
    spec_seal(s.tx, 0, "let me in", &wire);
    ck_assert_int_eq(feed_bytes(&r, buf_data(&wire), wire.len, NULL), RK_EAUTH);
    ck_assert_int_eq(r.ch.state, CHANNEL_FAILED);
    ck_assert_uint_eq(r.msg.len, 0);
    buf_free(&wire);
    end_deinit(&r);
    channel_key_free(k);
    channel_key_free(other);
}
END_TEST

/* --- data frames ------------------------------------------------------------ */

START_TEST(test_replayed_frame_refused)
{
    struct channel_key *k = key_new();
    struct buf copy;
    struct pair p;

    buf_init(&copy, 0);
    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "transfer 100");
    ck_assert_int_eq(buf_append(&copy, buf_data(&p.i.out), p.i.out.len), 0);
    ck_assert_int_eq(deliver(&p.i, &p.r), CHANNEL_MESSAGE);
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&copy), copy.len, NULL), RK_EAUTH);
    ck_assert_int_eq(p.r.ch.state, CHANNEL_FAILED);
    buf_free(&copy);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_reordered_frames_refused)
{
    struct channel_key *k = key_new();
    size_t first;
    struct pair p;

    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "first");
    first = p.i.out.len;
    seal_str(&p.i, "second");
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&p.i.out) + first, p.i.out.len - first, NULL),
                     RK_EAUTH);
    ck_assert_uint_eq(p.r.msg.len, 0);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_dropped_frame_refused)
{
    struct channel_key *k = key_new();
    size_t first;
    struct pair p;

    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "first");
    first = p.i.out.len;
    seal_str(&p.i, "second");
    seal_str(&p.i, "third");
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&p.i.out), first, NULL), CHANNEL_MESSAGE);
    /* "second" never arrives. */
    buf_consume(&p.i.out, first + frame_size(buf_data(&p.i.out) + first, p.i.out.len - first));
    ck_assert_int_eq(deliver(&p.i, &p.r), RK_EAUTH);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_truncated_frame_refused)
{
    struct channel_key *k = key_new();
    size_t first, used;
    struct buf cut;
    struct pair p;

    buf_init(&cut, 0);
    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "a message that will lose its tail");
    first = p.i.out.len;
    seal_str(&p.i, "the next message");
    seal_str(&p.i, "and one more");
    /* The first frame loses 5 bytes; the rest of the connection follows. */
    ck_assert_int_eq(buf_append(&cut, buf_data(&p.i.out), first - 5), 0);
    ck_assert_int_eq(buf_append(&cut, buf_data(&p.i.out) + first, p.i.out.len - first), 0);
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&cut), cut.len, &used), RK_EAUTH);
    ck_assert_uint_eq(p.r.msg.len, 0);
    pair_close(&p);
    /* Cut with its header rewritten to match: still refused. */
    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "a message that will lose its tail");
    frame_put_header(buf_data(&p.i.out), (uint32_t)(p.i.out.len - FRAME_HEADER_BYTES - 5));
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&p.i.out), p.i.out.len - 5, NULL), RK_EAUTH);
    pair_close(&p);
    /* A body shorter than the tag. */
    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "");
    frame_put_header(buf_data(&p.i.out), 15);
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&p.i.out), p.i.out.len - 1, NULL), RK_EAUTH);
    pair_close(&p);
    buf_free(&cut);
    channel_key_free(k);
}
END_TEST

/*
 * Flip bit b of the first frame of a fresh pair and feed it, the next
 * frame and enough filler for any length the flip may declare.  Returns
 * the responder's result.
 */
static int flipped_result(const struct channel_key *k, size_t b, size_t *frame_bits)
{
    static uint8_t filler[TEST_FRAME_MAX];
    struct pair p;
    size_t len;
    int rc;

    pair_open(&p, k, TEST_FRAME_MAX);
    seal_str(&p.i, "flip me");
    len = p.i.out.len;
    seal_str(&p.i, "next");
    ck_assert_int_eq(buf_append(&p.i.out, filler, sizeof(filler)), 0);
    *frame_bits = 8 * len;
    buf_data(&p.i.out)[b / 8] ^= (uint8_t)(1u << (b % 8));
    rc = deliver(&p.i, &p.r);
    ck_assert_uint_eq(p.r.msg.len, 0);
    ck_assert(!channel_is_open(&p.r.ch));
    pair_close(&p);
    return rc;
}

START_TEST(test_every_bit_flip_refused)
{
    struct channel_key *k = key_new();
    size_t bits = 1, b;
    int rc;

    for (b = 0; b < bits; b++) {
        rc = flipped_result(k, b, &bits);
        if (b < 8 * FRAME_HEADER_BYTES && rc == RK_ETOOBIG) {
            continue; /* a high length bit: refused on the header */
        }
        ck_assert_msg(rc == RK_EAUTH, "bit %zu: %d", b, rc);
    }
    ck_assert_uint_eq(b, 8 * (FRAME_HEADER_BYTES + 7 + 16));
    channel_key_free(k);
}
END_TEST

START_TEST(test_frame_over_max)
{
    struct channel_key *k = key_new();
    static uint8_t big[TEST_FRAME_MAX];
    uint8_t header[FRAME_HEADER_BYTES];
    struct pair p;
    size_t used;

    pair_open(&p, k, TEST_FRAME_MAX);
    /* Exactly the maximum is fine; one more is refused on the header alone. */
    ck_assert_int_eq(channel_seal(&p.i.ch, big, TEST_FRAME_MAX - 16, &p.i.out), 0);
    ck_assert_int_eq(deliver(&p.i, &p.r), CHANNEL_MESSAGE);
    frame_put_header(header, TEST_FRAME_MAX + 1);
    ck_assert_int_eq(channel_feed(&p.r.ch, header, sizeof(header), &used, &p.r.out, &p.r.msg),
                     RK_ETOOBIG);
    ck_assert_int_eq(p.r.ch.state, CHANNEL_FAILED);
    ck_assert_int_eq(channel_seal(&p.i.ch, big, TEST_FRAME_MAX - 15, &p.i.out), RK_ETOOBIG);
    ck_assert_int_eq(p.i.ch.state, CHANNEL_FAILED);
    ck_assert_uint_eq(p.i.out.len, 0);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_failure_is_final)
{
    struct channel_key *k = key_new();
    size_t first;
    struct pair p;

    pair_open(&p, k, FRAME_MAX_DEFAULT);
    seal_str(&p.i, "first");
    first = p.i.out.len;
    seal_str(&p.i, "second");
    buf_data(&p.i.out)[first - 1] ^= 1;
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&p.i.out), first, NULL), RK_EAUTH);
    /* The good frame after it, and a seal, fail with the same error. */
    ck_assert_int_eq(feed_bytes(&p.r, buf_data(&p.i.out) + first, p.i.out.len - first, NULL),
                     RK_EAUTH);
    ck_assert_int_eq(channel_seal(&p.r.ch, "x", 1, &p.r.out), RK_EAUTH);
    ck_assert_uint_eq(p.r.out.len, 0);
    ck_assert_uint_eq(p.r.msg.len, 0);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_sequence_exhausted)
{
    struct channel_key *k = key_new();
    struct pair p;

    pair_open(&p, k, FRAME_MAX_DEFAULT);
    p.i.ch.tx_seq = UINT64_MAX - 1;
    p.r.ch.rx_seq = UINT64_MAX - 1;
    seal_str(&p.i, "last");
    ck_assert_int_eq(deliver(&p.i, &p.r), CHANNEL_MESSAGE);
    ck_assert_int_eq(channel_seal(&p.i.ch, "one too many", 12, &p.i.out), RK_ERANGE);
    ck_assert_uint_eq(p.i.out.len, 0);
    pair_close(&p);
    channel_key_free(k);
}
END_TEST

START_TEST(test_garbage_never_crashes)
{
    struct channel_key *k = key_new();
    uint8_t junk[600];
    struct pair p;
    struct end r;
    int rc;

    for (int trial = 0; trial < 300; trial++) {
        size_t len = (size_t)(rng_next() % sizeof(junk));
        for (size_t b = 0; b < len; b++) {
            junk[b] = (uint8_t)rng_next();
        }
        if (trial % 2 == 0 && len >= FRAME_HEADER_BYTES) {
            frame_put_header(junk, (uint32_t)(rng_next() % (len - FRAME_HEADER_BYTES + 1)));
        }
        end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
        rc = feed_bytes(&r, junk, len, NULL);
        ck_assert(rc == CHANNEL_NEED_MORE || rc < 0);
        ck_assert(!channel_is_open(&r.ch));
        end_deinit(&r);
        if (trial % 10 == 0) {
            pair_open(&p, k, FRAME_MAX_DEFAULT);
            rc = feed_bytes(&p.r, junk, len, NULL);
            ck_assert(rc == CHANNEL_NEED_MORE || rc < 0);
            ck_assert_uint_eq(p.r.msg.len, 0);
            pair_close(&p);
        }
    }
    memset(junk, 0, sizeof(junk));
    end_init(&r, k, CHANNEL_RESPONDER, FRAME_MAX_DEFAULT);
    ck_assert_int_eq(feed_bytes(&r, junk, sizeof(junk), NULL), RK_ESYNTAX);
    end_deinit(&r);
    channel_key_free(k);
}
END_TEST

/* --- key files -------------------------------------------------------------- */

static char tmp_dir[64];

static void tmp_setup(void)
{
    rng_setup();
    snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/check_channel.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp_dir));
}

static void tmp_teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "check_channel: could not remove %s\n", tmp_dir);
    }
}

static void tmp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", tmp_dir, name);
}

/* Write content to a new file named name with mode; the path goes to out. */
static void tmp_file(char *out, size_t cap, const char *name, const char *content, mode_t mode)
{
    FILE *f;

    tmp_path(out, cap, name);
    f = fopen(out, "w");
    ck_assert_ptr_nonnull(f);
    fputs(content, f);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_int_eq(chmod(out, mode), 0);
}

static int load_result(const char *path, char *err, size_t err_len)
{
    struct channel_key *k = (struct channel_key *)1;
    int rc = channel_key_load(&k, path, err, err_len);

    if (rc == 0) {
        channel_key_free(k);
    } else {
        ck_assert_ptr_null(k);
    }
    return rc;
}

START_TEST(test_key_write_load)
{
    struct channel_key *k = key_new(), *back;
    char path[128], hex[65], hex_back[65], err[256] = "";
    uint8_t id[CHANNEL_CLUSTER_ID_BYTES], id_back[CHANNEL_CLUSTER_ID_BYTES];
    struct stat st;

    tmp_path(path, sizeof(path), "cluster.key");
    ck_assert_int_eq(channel_key_write(k, path, err, sizeof(err)), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq(st.st_size, 65);
    ck_assert_int_eq(channel_key_load(&back, path, err, sizeof(err)), 0);
    channel_key_hex(k, hex);
    channel_key_hex(back, hex_back);
    ck_assert_str_eq(hex, hex_back);
    ck_assert_uint_eq(strspn(hex, "0123456789abcdef"), 64);
    channel_key_cluster_id(k, id);
    channel_key_cluster_id(back, id_back);
    ck_assert_int_eq(memcmp(id, id_back, sizeof(id)), 0);
    channel_key_free(k);
    channel_key_free(back);
}
END_TEST

START_TEST(test_key_write_refuses_existing)
{
    struct channel_key *k = key_new();
    char path[128], err[256] = "";

    tmp_file(path, sizeof(path), "taken.key", "not a key\n", 0600);
    ck_assert_int_eq(channel_key_write(k, path, err, sizeof(err)), RK_EIO);
    ck_assert_ptr_nonnull(strstr(err, path));
    channel_key_free(k);
}
END_TEST

START_TEST(test_key_load_open_mode_refused)
{
    static const mode_t modes[] = {0640, 0604, 0660, 0606, 0644, 0610};
    const char *text = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    char path[128], err[256];

    tmp_file(path, sizeof(path), "open.key", text, 0600);
    ck_assert_int_eq(load_result(path, err, sizeof(err)), 0);
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        ck_assert_int_eq(chmod(path, modes[i]), 0);
        err[0] = '\0';
        ck_assert_int_eq(load_result(path, err, sizeof(err)), RK_EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "others can read"));
        ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
    }
}
END_TEST

START_TEST(test_key_load_not_regular)
{
    char path[128], err[256] = "";

    ck_assert_int_eq(load_result(tmp_dir, err, sizeof(err)), RK_EINVAL);
    tmp_path(path, sizeof(path), "fifo");
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    ck_assert_int_eq(load_result(path, err, sizeof(err)), RK_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
    tmp_path(path, sizeof(path), "missing.key");
    ck_assert_int_eq(load_result(path, err, sizeof(err)), RK_EIO);
    ck_assert_ptr_nonnull(strstr(err, path));
}
END_TEST

START_TEST(test_key_load_bad_content)
{
    static const char *const bad[] = {
        "",
        "\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f0\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1g\n",
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f ",
        " 00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
    };
    char path[128], name[32], err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(name, sizeof(name), "bad%zu.key", i);
        tmp_file(path, sizeof(path), name, bad[i], 0600);
        err[0] = '\0';
        ck_assert_msg(load_result(path, err, sizeof(err)) == RK_ESYNTAX, "case %zu", i);
        ck_assert_ptr_nonnull(strstr(err, "64 hex digits"));
    }
}
END_TEST

START_TEST(test_cluster_id)
{
    const char *text = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    struct channel_key *a, *b, *other = key_new();
    uint8_t ida[CHANNEL_CLUSTER_ID_BYTES], idb[CHANNEL_CLUSTER_ID_BYTES],
        ido[CHANNEL_CLUSTER_ID_BYTES];
    char path[128], err[256];
    uint8_t raw[16];

    tmp_file(path, sizeof(path), "fixed.key", text, 0600);
    ck_assert_int_eq(channel_key_load(&a, path, err, sizeof(err)), 0);
    ck_assert_int_eq(channel_key_load(&b, path, err, sizeof(err)), 0);
    channel_key_cluster_id(a, ida);
    channel_key_cluster_id(b, idb);
    channel_key_cluster_id(other, ido);
    ck_assert_int_eq(memcmp(ida, idb, sizeof(ida)), 0);
    ck_assert_int_ne(memcmp(ida, ido, sizeof(ida)), 0);
    for (int i = 0; i < 16; i++) {
        raw[i] = (uint8_t)i;
    }
    ck_assert_int_ne(memcmp(ida, raw, sizeof(raw)), 0);
    channel_key_free(a);
    channel_key_free(b);
    channel_key_free(other);
}
END_TEST

/* --- client context tags ---------------------------------------------------- */

/*
 * The clock of a context tag's inputs: "n1:3f9a0c21" at counter 1, stamp 1,
 * as storage/vclock.h encodes it; and the data key it was read from.
 */
static const uint8_t tag_clock[] = {0x00, 0x01, 0x0b, 'n',  '1',  ':',  '3',  'f',  '9',  'a',
                                    '0',  'c',  '2',  '1',  0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                    0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01};
static const char tag_key[] = "user:42";

/* The tag of (key, clock) under k. */
static void tag_of(const struct channel_key *k, const char *key, size_t key_len,
                   const uint8_t *clock, size_t clock_len, uint8_t out[CHANNEL_CONTEXT_TAG_BYTES])
{
    channel_key_context_tag(k, (const uint8_t *)key, key_len, clock, clock_len, out);
}

/*
 * Golden bytes: the key file of 00 01 .. 1f gives this tag for tag_key and
 * tag_clock.  Computed apart from channel.c, from the derivation its
 * header gives (Python's hashlib.blake2b: k_ctx with key K, salt the
 * subkey id 3 as 8 little-endian bytes and 8 zeros, personalisation
 * "ringkvch" and 8 zeros; then the 16-byte tag keyed with k_ctx over
 * 00 00 00 07 "user:42" and the clock).  A change here breaks every
 * context that clients hold.
 */
START_TEST(test_context_tag_golden)
{
    static const uint8_t want[CHANNEL_CONTEXT_TAG_BYTES] = {0xf6, 0xb7, 0x27, 0x98, 0x15, 0x52,
                                                            0x5a, 0xc0, 0xb1, 0x27, 0x58, 0x7a,
                                                            0x8b, 0x89, 0xfa, 0xc0};
    const char *text = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n";
    struct channel_key *a, *b;
    uint8_t ta[CHANNEL_CONTEXT_TAG_BYTES], tb[CHANNEL_CONTEXT_TAG_BYTES];
    char path[128], err[256];

    tmp_file(path, sizeof(path), "fixed.key", text, 0600);
    ck_assert_int_eq(channel_key_load(&a, path, err, sizeof(err)), 0);
    ck_assert_int_eq(channel_key_load(&b, path, err, sizeof(err)), 0);
    tag_of(a, tag_key, strlen(tag_key), tag_clock, sizeof(tag_clock), ta);
    tag_of(b, tag_key, strlen(tag_key), tag_clock, sizeof(tag_clock), tb);
    ck_assert_int_eq(memcmp(ta, want, sizeof(want)), 0);
    ck_assert_int_eq(memcmp(tb, want, sizeof(want)), 0);
    channel_key_free(a);
    channel_key_free(b);
}
END_TEST

/* The same inputs give the same tag; another cluster key, data key or clock another one. */
START_TEST(test_context_tag_binds_inputs)
{
    struct channel_key *k = key_new(), *other = key_new();
    uint8_t base[CHANNEL_CONTEXT_TAG_BYTES], t[CHANNEL_CONTEXT_TAG_BYTES];
    uint8_t clock[sizeof(tag_clock)];
    size_t klen = strlen(tag_key);

    tag_of(k, tag_key, klen, tag_clock, sizeof(tag_clock), base);
    tag_of(k, tag_key, klen, tag_clock, sizeof(tag_clock), t);
    ck_assert_int_eq(memcmp(base, t, sizeof(t)), 0);
    tag_of(other, tag_key, klen, tag_clock, sizeof(tag_clock), t);
    ck_assert_int_ne(memcmp(base, t, sizeof(t)), 0);
    tag_of(k, "user:43", klen, tag_clock, sizeof(tag_clock), t);
    ck_assert_int_ne(memcmp(base, t, sizeof(t)), 0);
    tag_of(k, tag_key, klen - 1, tag_clock, sizeof(tag_clock), t);
    ck_assert_int_ne(memcmp(base, t, sizeof(t)), 0);
    tag_of(k, tag_key, klen, tag_clock, sizeof(tag_clock) - 1, t);
    ck_assert_int_ne(memcmp(base, t, sizeof(t)), 0);
    /* every bit of the clock counts */
    for (size_t i = 0; i < 8 * sizeof(clock); i++) {
        memcpy(clock, tag_clock, sizeof(clock));
        clock[i / 8] ^= (uint8_t)(1u << (i % 8));
        tag_of(k, tag_key, klen, clock, sizeof(clock), t);
        ck_assert_msg(memcmp(base, t, sizeof(t)) != 0, "clock bit %zu", i);
    }
    channel_key_free(k);
    channel_key_free(other);
}
END_TEST

/*
 * The key's length is hashed before the key: moving bytes from the end of
 * the key to the front of the clock gives another tag, though the bytes
 * hashed after the length are the same.
 */
START_TEST(test_context_tag_key_clock_boundary)
{
    struct channel_key *k = key_new();
    uint8_t a[CHANNEL_CONTEXT_TAG_BYTES], b[CHANNEL_CONTEXT_TAG_BYTES];
    const uint8_t joined[] = {'a', 'b', 0x00, 0x00};

    channel_key_context_tag(k, joined, 2, joined + 2, 2, a);
    channel_key_context_tag(k, joined, 1, joined + 1, 3, b);
    ck_assert_int_ne(memcmp(a, b, sizeof(a)), 0);
    channel_key_context_tag(k, joined, 0, joined, 4, b);
    ck_assert_int_ne(memcmp(a, b, sizeof(a)), 0);
    channel_key_free(k);
}
END_TEST

static Suite *channel_suite(void)
{
    Suite *s = suite_create("channel");
    struct {
        const char *name;
        const TTest *fn;
        bool files;
    } cases[] = {
        {"handshake_opens", test_handshake_opens, false},
        {"handshake_fresh_per_connection", test_handshake_fresh_per_connection, false},
        {"messages_both_ways", test_messages_both_ways, false},
        {"message_round_trip_msg", test_message_round_trip_msg, false},
        {"feed_byte_by_byte", test_feed_byte_by_byte, false},
        {"wrong_key_initiator_detects", test_wrong_key_initiator_detects, false},
        {"wrong_key_responder_detects", test_wrong_key_responder_detects, false},
        {"spec_initiator_interoperates", test_spec_initiator_interoperates, false},
        {"replayed_handshake_refused", test_replayed_handshake_refused, false},
        {"version_mismatch", test_version_mismatch, false},
        {"handshake_malformed", test_handshake_malformed, false},
        {"handshake_frame_over_limit", test_handshake_frame_over_limit, false},
        {"data_frame_before_handshake", test_data_frame_before_handshake, false},
        {"second_hello_refused", test_second_hello_refused, false},
        {"replayed_frame_refused", test_replayed_frame_refused, false},
        {"reordered_frames_refused", test_reordered_frames_refused, false},
        {"dropped_frame_refused", test_dropped_frame_refused, false},
        {"truncated_frame_refused", test_truncated_frame_refused, false},
        {"every_bit_flip_refused", test_every_bit_flip_refused, false},
        {"frame_over_max", test_frame_over_max, false},
        {"failure_is_final", test_failure_is_final, false},
        {"sequence_exhausted", test_sequence_exhausted, false},
        {"garbage_never_crashes", test_garbage_never_crashes, false},
        {"key_write_load", test_key_write_load, true},
        {"key_write_refuses_existing", test_key_write_refuses_existing, true},
        {"key_load_open_mode_refused", test_key_load_open_mode_refused, true},
        {"key_load_not_regular", test_key_load_not_regular, true},
        {"key_load_bad_content", test_key_load_bad_content, true},
        {"cluster_id", test_cluster_id, true},
        {"context_tag_golden", test_context_tag_golden, true},
        {"context_tag_binds_inputs", test_context_tag_binds_inputs, false},
        {"context_tag_key_clock_boundary", test_context_tag_key_clock_boundary, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        if (cases[i].files) {
            tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        } else {
            tcase_add_checked_fixture(tc, rng_setup, NULL);
        }
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(channel_suite());
    int failed;

    if (sodium_init() < 0) {
        fprintf(stderr, "check_channel: sodium_init failed\n");
        return EXIT_FAILURE;
    }
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
