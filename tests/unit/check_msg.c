/*
 * check_msg.c - unit tests of the node-to-node messages, the gossip
 * messages and member lists among them, and the bounded msgpack reader
 * (proto/msg.c, proto/mp.c).
 *
 * Expected bytes are written out by hand from proto/PROTOCOL.md and the
 * msgpack specification, as spaced hex strings, never produced by the
 * encoder under test, so each decoder is checked against the format.
 * Random messages for the round trips come from a xorshift generator whose
 * seed is printed (replay with RINGKV_TEST_SEED=<seed>).
 *
 * Under AddressSanitizer (--enable-asan) the tests also count allocations
 * through the sanitizer's malloc hook, to show that a list whose declared
 * count is over its bound is refused before anything is allocated; every
 * decoded message is released with msg_free(), so the leak checker sees
 * any array a decoder forgets.
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
#include "test_hex.h"
#include "test_rng.h"

/* Round trips of random messages. */
#define TRIALS 2000
/* Fields of a member entry (PROTOCOL.md section 7.5), and of one before target. */
#define MEMBER_FIELDS 13
#define MEMBER_V1_FIELDS 11
/* The largest address of an entry: a 255-byte host, ':' and a 5-digit port. */
#define MEMBER_ADDR_LONGEST (255 + 1 + 5)
/* Encoded sizes of the largest gossip messages (PROTOCOL.md section 7.10). */
#define SYN_BYTES_MAX 21784
#define ACK_BYTES_MAX 63688
#define ACK2_BYTES_MAX 46789
/* The smallest frame-max a node accepts (64 KiB) less the 16-byte tag. */
#define SEALED_PLAINTEXT_MIN (64 * 1024 - 16)

#if defined(__SANITIZE_ADDRESS__)
#define COUNT_ALLOCATIONS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COUNT_ALLOCATIONS 1
#endif
#endif

#ifdef COUNT_ALLOCATIONS
/* The sanitizers' allocator interface (sanitizer/allocator_interface.h). */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
                                              void (*free_hook)(const volatile void *));

static volatile size_t allocations;

static void count_malloc(const volatile void *p, size_t size)
{
    (void)p;
    (void)size;
    allocations++;
}

static void count_free(const volatile void *p)
{
    (void)p;
}
#endif

/* Allocations made so far, when they can be counted; 0 otherwise. */
static size_t allocations_now(void)
{
#ifdef COUNT_ALLOCATIONS
    return allocations;
#else
    return 0;
#endif
}

static void rng_setup(void)
{
    rng_seed("check_msg");
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
    m.u.ident.proto = 2;
    m.u.ident.has_cluster = true;
    m.u.ident.cluster.rf = 3;
    strcpy(m.u.ident.cluster.conflicts, "siblings");
    for (int i = 0; i < RING_SEED_LEN; i++) {
        m.u.ident.cluster.ring_seed[i] = (uint8_t)i;
    }
    m.u.ident.instance = 0x0102030405060708ull;
    m.u.ident.frame_max = 17u * 1024 * 1024;
    return m;
}

/* The IDENT of message-set version 1: the five fields, as a version-1 node sends it. */
static void ident_v1_bytes(struct bytes *b)
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

/* The cluster settings of ident_example(), by hand: rf 3, "siblings", seed 00 .. 0f. */
static const char *const ident_example_cluster =
    "93 03 a8 73 69 62 6c 69 6e 67 73 c4 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f";

/* The IDENT of ident_example() as a node of message set 2 before `instance` sent it. */
static void ident_v2_bytes(struct bytes *b)
{
    ident_v1_bytes(b);
    b->p[0] = 0x98;
    add_hex(b, "02");
    add_hex(b, ident_example_cluster);
}

/* The IDENT of ident_example() as a node of message set 3 before `frame_max` sent it. */
static void ident_v3_bytes(struct bytes *b)
{
    ident_v2_bytes(b);
    b->p[0] = 0x99;
    add_hex(b, "cf 01 02 03 04 05 06 07 08");
}

/* The IDENT of ident_example(), by hand (PROTOCOL.md section 7.1's example). */
static void ident_example_bytes(struct bytes *b)
{
    ident_v3_bytes(b);
    b->p[0] = 0x9a;
    add_hex(b, "ce 01 10 00 00");
}

static void assert_member_eq(const struct msg_member *a, const struct msg_member *b)
{
    ck_assert_str_eq(a->id, b->id);
    ck_assert_str_eq(a->rack, b->rack);
    ck_assert_uint_eq(a->tokens, b->tokens);
    ck_assert_str_eq(a->peer_addr, b->peer_addr);
    ck_assert_str_eq(a->client_addr, b->client_addr);
    ck_assert_uint_eq(a->status, b->status);
    ck_assert(a->generation == b->generation && a->version == b->version);
    ck_assert_int_eq(memcmp(a->instance, b->instance, sizeof(a->instance)), 0);
    ck_assert(a->ring_version == b->ring_version && a->digest == b->digest);
    ck_assert(a->target == b->target);
    ck_assert_uint_eq(a->target_tokens, b->target_tokens);
}

static void assert_members_eq(const struct msg_member *a, const struct msg_member *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        assert_member_eq(&a[i], &b[i]);
    }
}

/* Digests, or with ids_only only their ids (an ACK's requests). */
static void assert_digests_eq(const struct msg_digest *a, const struct msg_digest *b, size_t n,
                              bool ids_only)
{
    for (size_t i = 0; i < n; i++) {
        ck_assert_str_eq(a[i].id, b[i].id);
        ck_assert(ids_only || (a[i].generation == b[i].generation && a[i].version == b[i].version));
    }
}

static void assert_gossip_eq(const struct msg *a, const struct msg *b)
{
    if (a->type == MSG_GOSSIP_SYN) {
        ck_assert(a->u.syn.epoch == b->u.syn.epoch && a->u.syn.digest == b->u.syn.digest);
        ck_assert(a->u.syn.complete == b->u.syn.complete);
        ck_assert_uint_eq(a->u.syn.n, b->u.syn.n);
        assert_digests_eq(a->u.syn.digests, b->u.syn.digests, a->u.syn.n, false);
        return;
    }
    ck_assert_uint_eq(a->u.entries.n, b->u.entries.n);
    assert_members_eq(a->u.entries.entries, b->u.entries.entries, a->u.entries.n);
    ck_assert_uint_eq(a->u.entries.n_requests, b->u.entries.n_requests);
    assert_digests_eq(a->u.entries.requests, b->u.entries.requests, a->u.entries.n_requests, true);
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
        ck_assert_uint_eq(a->u.ident.proto, b->u.ident.proto);
        ck_assert_int_eq(a->u.ident.has_cluster, b->u.ident.has_cluster);
        ck_assert(a->u.ident.instance == b->u.ident.instance);
        ck_assert_uint_eq(a->u.ident.frame_max, b->u.ident.frame_max);
        if (a->u.ident.has_cluster) {
            ck_assert_uint_eq(a->u.ident.cluster.rf, b->u.ident.cluster.rf);
            ck_assert_str_eq(a->u.ident.cluster.conflicts, b->u.ident.cluster.conflicts);
            ck_assert_int_eq(
                memcmp(a->u.ident.cluster.ring_seed, b->u.ident.cluster.ring_seed, RING_SEED_LEN),
                0);
        }
    } else if (a->type == MSG_PING || a->type == MSG_PONG) {
        ck_assert(a->u.ping.seq == b->u.ping.seq);
        ck_assert(a->u.ping.sent_ms == b->u.ping.sent_ms);
        ck_assert(a->type == MSG_PONG || (a->u.ping.generation == b->u.ping.generation &&
                                          a->u.ping.version == b->u.ping.version));
    } else if (a->type == MSG_CREDIT) {
        ck_assert(a->u.credit.grant == b->u.credit.grant);
        ck_assert(a->u.credit.window == b->u.credit.window);
    } else if (a->type == MSG_BULK) {
        ck_assert(a->u.bulk.seq == b->u.bulk.seq);
        ck_assert_uint_eq(a->u.bulk.len, b->u.bulk.len);
        ck_assert(a->u.bulk.len == 0 || memcmp(a->u.bulk.data, b->u.bulk.data, a->u.bulk.len) == 0);
    } else {
        assert_gossip_eq(a, b);
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
    msg_free(&back);
    buf_free(&out);
}

/* --- golden bytes --------------------------------------------------------- */

START_TEST(test_ident_golden)
{
    struct msg m = ident_example();
    struct bytes want;

    ident_example_bytes(&want);
    assert_golden(&m, &want);
    /* A 40-byte id takes str8, a version over 65535 a uint32; no cluster settings: nil. */
    memset(m.u.ident.id, 'a', 40);
    m.u.ident.id[40] = '\0';
    m.u.ident.version = 70000;
    strcpy(m.u.ident.peer_addr, "[::1]:1");
    m.u.ident.proto = 300;
    m.u.ident.has_cluster = false;
    m.u.ident.instance = 7;
    m.u.ident.frame_max = 64 * 1024;
    unhex(&want, "9a 01 d9 28");
    for (int i = 0; i < 40; i++) {
        add_text(&want, "a");
    }
    add_hex(&want, "a2");
    add_text(&want, "r1");
    add_hex(&want, "ce 00 01 11 70 a7");
    add_text(&want, "[::1]:1");
    add_hex(&want, "ae");
    add_text(&want, "127.0.0.1:7370");
    add_hex(&want, "cd 01 2c c0 07 ce 00 01 00 00");
    assert_golden(&m, &want);
    /* rf 200 takes uint8, "lww" a fixstr. */
    m.u.ident.has_cluster = true;
    m.u.ident.cluster.rf = 200;
    strcpy(m.u.ident.cluster.conflicts, "lww");
    want.len -= 7;
    add_hex(&want, "93 cc c8 a3 6c 77 77 c4 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 07 "
                   "ce 00 01 00 00");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_ping_golden)
{
    struct msg m = {.type = MSG_PING,
                    .u.ping = {.seq = 7, .sent_ms = 1000, .generation = 1, .version = 300}};
    struct bytes want;

    unhex(&want, "95 02 07 cd 03 e8 01 cd 01 2c");
    assert_golden(&m, &want);
    m.u.ping.seq = 0;
    m.u.ping.sent_ms = 200;
    m.u.ping.generation = m.u.ping.version = 0;
    unhex(&want, "95 02 00 cc c8 00 00");
    assert_golden(&m, &want);
}
END_TEST

/* An earlier node's PING (seq and sent_ms only) tells no heartbeat; a PONG never carries one. */
START_TEST(test_ping_without_heartbeat)
{
    struct msg m = {.type = MSG_PONG,
                    .u.ping = {.seq = 7, .sent_ms = 1000, .generation = 1, .version = 300}};
    struct bytes b;
    struct buf out;

    unhex(&b, "93 02 07 cd 03 e8");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_int_eq(m.type, MSG_PING);
    ck_assert(m.u.ping.seq == 7 && m.u.ping.sent_ms == 1000);
    ck_assert(m.u.ping.generation == 0 && m.u.ping.version == 0);
    unhex(&b, "94 02 07 cd 03 e8 05");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert(m.u.ping.generation == 5 && m.u.ping.version == 0);
    /* A PONG with them (a copy of the PING it answers) reads seq and sent_ms only. */
    unhex(&b, "95 03 07 cd 03 e8 01 cd 01 2c");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_int_eq(m.type, MSG_PONG);
    ck_assert(m.u.ping.generation == 0 && m.u.ping.version == 0);
    /* and writes them only. */
    m = (struct msg){.type = MSG_PONG, .u.ping = {.seq = 7, .sent_ms = 1000, .version = 300}};
    buf_init(&out, 0);
    ck_assert_int_eq(msg_encode(&m, &out), 0);
    unhex(&b, "93 03 07 cd 03 e8");
    ck_assert_uint_eq(out.len, b.len);
    ck_assert_int_eq(memcmp(buf_data(&out), b.p, b.len), 0);
    buf_free(&out);
    /* The heartbeat's fields are uints like the others. */
    unhex(&b, "95 02 07 cd 03 e8 01 a1 31");
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
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

/* A host name by addr.h's rule: a letter first, so it is never read as IPv4. */
static void random_addr(char *out)
{
    static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_";
    size_t len = 1 + rng_next() % 39;
    char host[40];

    host[0] = chars[rng_next() % 52];
    for (size_t i = 1; i < len; i++) {
        host[i] = chars[rng_next() % (sizeof(chars) - 1)];
    }
    host[len] = '\0';
    snprintf(out, 64, "%s:%u", host, (unsigned)(1 + rng_next() % 65535));
}

/* A number of any width: small ones are as likely as large ones. */
static uint64_t random_u64(void)
{
    return rng_next() >> (rng_next() % 64);
}

static void random_member(struct msg_member *e)
{
    memset(e, 0, sizeof(*e));
    random_name(e->id, RING_NAME_MAX);
    random_name(e->rack, RING_NAME_MAX);
    e->tokens = 1 + (uint32_t)(rng_next() % RING_TOKENS_MAX);
    random_addr(e->peer_addr);
    random_addr(e->client_addr);
    e->status = (uint32_t)(rng_next() % (MSG_MEMBER_STATUS_MAX + 1));
    e->generation = random_u64();
    e->version = random_u64();
    for (size_t i = 0; i < sizeof(e->instance); i++) {
        e->instance[i] = (uint8_t)rng_next();
    }
    e->ring_version = random_u64();
    e->digest = random_u64();
    e->target = random_u64();
    e->target_tokens = (uint32_t)(rng_next() % (RING_TOKENS_MAX + 1));
}

/* n random entries, n < max + 1, in an array the caller frees. */
static struct msg_member *random_members(size_t max, size_t *n)
{
    struct msg_member *e;

    *n = (size_t)(rng_next() % (max + 1));
    e = calloc(*n + 1, sizeof(*e));
    ck_assert_ptr_nonnull(e);
    for (size_t i = 0; i < *n; i++) {
        random_member(&e[i]);
    }
    return e;
}

static struct msg_digest *random_digests(size_t *n)
{
    struct msg_digest *d;

    *n = (size_t)(rng_next() % (MSG_GOSSIP_DIGESTS_MAX + 1));
    d = calloc(*n + 1, sizeof(*d));
    ck_assert_ptr_nonnull(d);
    for (size_t i = 0; i < *n; i++) {
        random_name(d[i].id, RING_NAME_MAX);
        d[i].generation = random_u64();
        d[i].version = random_u64();
    }
    return d;
}

static void random_gossip(struct msg *m)
{
    struct msg_gossip_entries *a = &m->u.entries;

    if (m->type == MSG_GOSSIP_SYN) {
        m->u.syn.epoch = random_u64();
        m->u.syn.digest = random_u64();
        m->u.syn.complete = rng_next() % 2 == 0;
        m->u.syn.digests = random_digests(&m->u.syn.n);
        return;
    }
    a->entries = random_members(MSG_GOSSIP_ENTRIES_MAX, &a->n);
    if (m->type == MSG_GOSSIP_ACK) {
        a->requests = random_digests(&a->n_requests);
    }
}

/* A message-set version >= 1 of any width, and cluster settings or none. */
static void random_cluster(struct msg_ident *id)
{
    size_t len = 1 + rng_next() % MSG_CONFLICTS_MAX;

    id->proto = (uint32_t)(rng_next() >> (rng_next() % 33));
    id->proto = id->proto == 0 ? 1 : id->proto;
    id->has_cluster = rng_next() % 2 == 0;
    if (!id->has_cluster) {
        return;
    }
    id->cluster.rf = 1 + (uint32_t)(rng_next() % UINT32_MAX);
    for (size_t i = 0; i < len; i++) {
        id->cluster.conflicts[i] = "abcdefghijklmnopqrstuvwxyz0123456789_-"[rng_next() % 38];
    }
    id->cluster.conflicts[len] = '\0';
    for (size_t i = 0; i < RING_SEED_LEN; i++) {
        id->cluster.ring_seed[i] = (uint8_t)rng_next();
    }
}

/* A random message of any type; its lists are freed with free_random_msg(). */
static struct msg random_msg(void)
{
    struct msg m;

    static uint8_t bulk_data[256];

    memset(&m, 0, sizeof(m));
    /* a type this version has; requests and responses have their own suite (check_msg_request.c) */
    do {
        m.type = (enum msg_type)(1 + rng_next() % MSG_TYPE_MAX);
    } while (strcmp(msg_type_name((int)m.type), "unknown") == 0 || m.type == MSG_REQUEST ||
             m.type == MSG_RESPONSE || m.type == MSG_BULK_RESPONSE);
    if (m.type == MSG_CREDIT) {
        m.u.credit.window = 1 + random_u64() % MSG_CREDIT_WINDOW_MAX;
        m.u.credit.grant = random_u64() % (m.u.credit.window + 1);
    } else if (m.type == MSG_BULK) {
        m.u.bulk.seq = random_u64();
        m.u.bulk.len = (size_t)(rng_next() % (sizeof(bulk_data) + 1));
        for (size_t i = 0; i < m.u.bulk.len; i++) {
            bulk_data[i] = (uint8_t)rng_next();
        }
        m.u.bulk.data = bulk_data;
    } else if (m.type == MSG_IDENT) {
        random_name(m.u.ident.id, RING_NAME_MAX);
        random_name(m.u.ident.rack, RING_NAME_MAX);
        m.u.ident.version = (uint32_t)(rng_next() >> (rng_next() % 33));
        random_addr(m.u.ident.peer_addr);
        random_addr(m.u.ident.client_addr);
        random_cluster(&m.u.ident);
    } else if (m.type == MSG_PING || m.type == MSG_PONG) {
        m.u.ping.seq = random_u64();
        m.u.ping.sent_ms = random_u64();
        m.u.ping.generation = m.type == MSG_PING ? random_u64() : 0;
        m.u.ping.version = m.type == MSG_PING ? random_u64() : 0;
    } else {
        random_gossip(&m);
    }
    return m;
}

static void free_random_msg(struct msg *m)
{
    if (m->type == MSG_GOSSIP_SYN) {
        free(m->u.syn.digests);
    } else if (m->type == MSG_GOSSIP_ACK || m->type == MSG_GOSSIP_ACK2) {
        free(m->u.entries.entries);
        free(m->u.entries.requests);
    }
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
        msg_free(&back);
        free_random_msg(&m);
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
    add_hex(&want, "95 02 01 02 00 00");
    ck_assert_uint_eq(out.len, want.len);
    ck_assert_int_eq(memcmp(buf_data(&out), want.p, want.len), 0);
    buf_free(&out);
}
END_TEST

/* An IDENT of message set 2 from before `instance` (7 fields) decodes, with instance 0. */
START_TEST(test_ident_without_instance)
{
    struct msg m;
    struct bytes b;

    ident_v2_bytes(&b);
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.ident.proto, 2);
    ck_assert(m.u.ident.has_cluster);
    ck_assert(m.u.ident.instance == 0);
    ident_v3_bytes(&b);
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert(m.u.ident.instance == 0x0102030405060708ull);
    /* instance must be an unsigned integer */
    b.len -= 9;
    add_hex(&b, "a1 37");
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
}
END_TEST

/*
 * An IDENT of message set 3 from before `frame_max` (8 fields) decodes with
 * frame_max 0 (not announced); one that carries it needs an unsigned
 * integer of at least FRAME_MAX_MIN (64 KiB) that fits 32 bits.
 */
START_TEST(test_ident_frame_max)
{
    static const struct {
        const char *hex;
        int rc;
        uint32_t frame_max;
    } cases[] = {
        {"ce 01 10 00 00", 0, 17u * 1024 * 1024},
        {"ce 00 01 00 00", 0, 64u * 1024},             /* FRAME_MAX_MIN */
        {"00", 0, 0},                                  /* announced as not known: as absent */
        {"cd ff ff", RK_ESYNTAX, 0},                   /* under FRAME_MAX_MIN */
        {"ce ff ff ff ff", 0, 0xffffffffu},            /* the largest */
        {"cf 00 00 00 01 00 00 00 00", RK_ETOOBIG, 0}, /* over 32 bits */
        {"a1 37", RK_ESYNTAX, 0},                      /* not an unsigned integer */
        {"ff", RK_ESYNTAX, 0},                         /* negative */
    };
    struct msg m;
    struct bytes b;

    ident_v3_bytes(&b);
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.ident.frame_max, 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ident_v3_bytes(&b);
        b.p[0] = 0x9a;
        add_hex(&b, cases[i].hex);
        ck_assert_msg(decode(&b, &m) == cases[i].rc, "case %zu", i);
        if (cases[i].rc == 0) {
            ck_assert_uint_eq(m.u.ident.frame_max, cases[i].frame_max);
        }
    }
    /* a node never announces a frame-max under FRAME_MAX_MIN */
    m = ident_example();
    m.u.ident.frame_max = 1000;
    {
        struct buf out;
        buf_init(&out, 0);
        ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
        buf_free(&out);
    }
}
END_TEST

START_TEST(test_trailing_fields_accepted)
{
    struct msg m;
    struct bytes b;

    /* PING with three more fields: a string, [1, {"a": 2}], nil. */
    unhex(&b, "98 02 07 cd 03 e8 01 cd 01 2c a6");
    add_text(&b, "future");
    add_hex(&b, "92 01 81 a1 61 02 c0");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_int_eq(m.type, MSG_PING);
    ck_assert(m.u.ping.seq == 7 && m.u.ping.sent_ms == 1000);
    ck_assert(m.u.ping.generation == 1 && m.u.ping.version == 300);
    ident_example_bytes(&b);
    b.p[0] = 0x9b;
    add_hex(&b, "cb 40 09 21 fb 54 44 2d 18"); /* a float64 */
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_str_eq(m.u.ident.client_addr, "127.0.0.1:7370");
}
END_TEST

START_TEST(test_fields_max)
{
    struct msg m;
    struct bytes b;

    /* 64 elements: type (PONG), two fields, 61 nils. */
    unhex(&b, "dc 00 40 03 01 02");
    for (int i = 0; i < 61; i++) {
        add_hex(&b, "c0");
    }
    ck_assert_int_eq(decode(&b, &m), 0);
    unhex(&b, "dc 00 41 03 01 02");
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
    static const char *const unknown[] = {"91 00", "93 63 01 02", "91 cc c8",
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
    ck_assert_str_eq(msg_type_name(MSG_GOSSIP_SYN), "gossip_syn");
    ck_assert_str_eq(msg_type_name(MSG_GOSSIP_ACK), "gossip_ack");
    ck_assert_str_eq(msg_type_name(MSG_GOSSIP_ACK2), "gossip_ack2");
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
    ident_v1_bytes(&b);
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
    struct bytes golden[5];
    struct msg m;

    ident_example_bytes(&golden[0]);
    unhex(&golden[1], "95 02 07 cd 03 e8 01 cd 01 2c");
    unhex(&golden[2], "93 03 cf 00 00 00 01 00 00 00 00 cf ff ff ff ff ff ff ff ff");
    unhex(&golden[3], "96 03 07 cd 03 e8 a6 66 75 74 75 72 65 92 01 81 a1 61 02 c0");
    ident_v1_bytes(&golden[4]);
    for (size_t g = 0; g < 5; g++) {
        ck_assert_int_eq(msg_decode(golden[g].p, golden[g].len, &m), 0);
        for (size_t len = 0; len < golden[g].len; len++) {
            ck_assert_msg(msg_decode(golden[g].p, len, &m) != 0, "message %zu cut at %zu", g, len);
        }
    }
}
END_TEST

/* A version-1 IDENT with one field replaced by raw msgpack bytes. */
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
    /* The longest address: a 255-byte name (addr.h); a longer host fits the field but not the rule.
     */
    memset(text, 'h', 255);
    strcpy(text + 255, ":7371");
    ck_assert_int_eq(ident_with(3, str_hex(text)), 0);
    memset(text, 'h', 256);
    strcpy(text + 256, ":7371");
    ck_assert_uint_lt(strlen(text), addr_cap);
    ck_assert_int_eq(ident_with(3, str_hex(text)), RK_ESYNTAX);
    /* A string that does not fit the field is refused as such. */
    memset(text, 'h', addr_cap - 5);
    strcpy(text + addr_cap - 5, ":7371");
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
    static const char *const bad_addrs[] = {
        "",        "host",  "host:",    ":7371",       "h:0",      "h:65536",
        "h:07371", "h:73a", "h st:1",   "h\x7f:1",     "h:123456", "h:-1",
        "h:\x01",  "\t:1",  "::1:7371", "[0::1]:7371", "h~:1",     "999.1.1.1:1"};
    static const char *const good_addrs[] = {"h:1", "h:65535", "[::1]:7371", "a.b-c_d:80",
                                             "10.0.0.1:7371"};

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

/*
 * A version-2 IDENT: the five fields of ident_example(), then proto (field
 * 5) and the cluster settings (field 6) as raw msgpack bytes.
 */
static int ident2_with(const char *proto, const char *cluster, struct msg *m)
{
    struct bytes b;

    ident_v1_bytes(&b);
    b.p[0] = 0x98;
    add_hex(&b, proto);
    add_hex(&b, cluster);
    return decode(&b, m);
}

/* ident2_with(), proto 2, the cluster settings array with one field replaced. */
static int cluster_with(int field, const char *hex)
{
    static const char *const fields[] = {"03", "a8 73 69 62 6c 69 6e 67 73",
                                         "c4 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"};
    char cluster[512] = "93";
    struct msg m;

    for (int i = 0; i < 3; i++) {
        strcat(cluster, " ");
        strcat(cluster, i == field ? hex : fields[i]);
    }
    return ident2_with("02", cluster, &m);
}

START_TEST(test_ident_versions)
{
    struct msg m;
    struct bytes b;

    /* A version-1 IDENT: proto 1, no cluster settings. */
    ident_v1_bytes(&b);
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.ident.proto, MSG_PROTO_V1);
    ck_assert(!m.u.ident.has_cluster);
    /* proto without the settings, and proto with nil settings. */
    b.p[0] = 0x97;
    add_hex(&b, "05");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.ident.proto, 5);
    ck_assert(!m.u.ident.has_cluster);
    ck_assert_int_eq(ident2_with("02", "c0", &m), 0);
    ck_assert_uint_eq(m.u.ident.proto, 2);
    ck_assert(!m.u.ident.has_cluster);
    ck_assert_int_eq(ident2_with("02", ident_example_cluster, &m), 0);
    ck_assert(m.u.ident.has_cluster && m.u.ident.cluster.rf == 3);
    ck_assert_str_eq(m.u.ident.cluster.conflicts, "siblings");
    ck_assert_uint_eq(m.u.ident.cluster.ring_seed[15], 15);
    /* proto: at least 1, a uint32. */
    ck_assert_int_eq(ident2_with("00", "c0", &m), RK_ESYNTAX);
    ck_assert_int_eq(ident2_with("ff", "c0", &m), RK_ESYNTAX);
    ck_assert_int_eq(ident2_with("a1 32", "c0", &m), RK_ESYNTAX);
    ck_assert_int_eq(ident2_with("cf 00 00 00 01 00 00 00 00", "c0", &m), RK_ETOOBIG);
    ck_assert_int_eq(ident2_with("ce ff ff ff ff", "c0", &m), 0);
}
END_TEST

START_TEST(test_ident_cluster_refused)
{
    struct msg m;

    ck_assert_int_eq(cluster_with(-1, ""), 0);
    ck_assert_int_eq(cluster_with(0, "00"), RK_ESYNTAX); /* rf 0 */
    ck_assert_int_eq(cluster_with(0, "ce ff ff ff ff"), 0);
    ck_assert_int_eq(cluster_with(0, "cf 00 00 00 01 00 00 00 00"), RK_ETOOBIG);
    ck_assert_int_eq(cluster_with(1, "a0"), RK_ESYNTAX);          /* empty */
    ck_assert_int_eq(cluster_with(1, "a3 4c 57 57"), RK_ESYNTAX); /* "LWW" */
    ck_assert_int_eq(cluster_with(1, "a3 6c 20 77"), RK_ESYNTAX); /* "l w" */
    ck_assert_int_eq(cluster_with(1, "c4 03 6c 77 77"), RK_ESYNTAX);
    ck_assert_int_eq(cluster_with(1, "b0 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61"), 0);
    ck_assert_int_eq(cluster_with(1, "b1 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61"),
                     RK_ETOOBIG);
    ck_assert_int_eq(cluster_with(2, "c4 0f 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e"),
                     RK_ESYNTAX);
    ck_assert_int_eq(cluster_with(2, "c4 11 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10"),
                     RK_ETOOBIG);
    ck_assert_int_eq(cluster_with(2, "a2 61 61"), RK_ESYNTAX);
    /* The settings' shape: an array of at least three, more are skipped. */
    ck_assert_int_eq(ident2_with("02", "92 03 a3 6c 77 77", &m), RK_ESYNTAX);
    ck_assert_int_eq(ident2_with("02", "a3 6c 77 77", &m), RK_ESYNTAX);
    ck_assert_int_eq(ident2_with("02", "80", &m), RK_ESYNTAX);
    ck_assert_int_eq(
        ident2_with("02",
                    "95 01 a3 6c 77 77 c4 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f "
                    "a6 66 75 74 75 72 65 92 01 c0",
                    &m),
        0);
    ck_assert_uint_eq(m.u.ident.cluster.rf, 1);
    ck_assert_str_eq(m.u.ident.cluster.conflicts, "lww");
}
END_TEST

START_TEST(test_type_known)
{
    static const char *const heads[] = {"91 00", "93 07 01 02", "91 cc c8", "92 7f c0", "91 05"};
    static const uint64_t types[] = {0, 7, 200, 127, 5};
    struct bytes b;
    uint64_t type;

    for (int t = MSG_IDENT; t <= MSG_GOSSIP_ACK2; t++) {
        ck_assert(msg_type_known(t, MSG_PROTO_V1));
        ck_assert(msg_type_known(t, MSG_PROTO_VERSION));
        ck_assert(!msg_type_known(t, 0));
    }
    ck_assert(!msg_type_known(0, MSG_PROTO_VERSION));
    ck_assert(!msg_type_known(-1, MSG_PROTO_VERSION));
    ck_assert(!msg_type_known(MSG_TYPE_MAX + 1, UINT32_MAX));
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        unhex(&b, heads[i]);
        ck_assert_int_eq(msg_peek_type(b.p, b.len, &type), 0);
        ck_assert_uint_eq(type, types[i]);
    }
    unhex(&b, "90");
    ck_assert_int_eq(msg_peek_type(b.p, b.len, &type), RK_ESYNTAX);
    unhex(&b, "91 a1 31");
    ck_assert_int_eq(msg_peek_type(b.p, b.len, &type), RK_ESYNTAX);
    unhex(&b, "c0");
    ck_assert_int_eq(msg_peek_type(b.p, b.len, &type), RK_ESYNTAX);
    ck_assert_int_eq(msg_peek_type(b.p, 0, &type), RK_ESYNTAX);
}
END_TEST

/* A shared frame (message set 3): PING, an unknown type 200, PONG, split whole. */
START_TEST(test_frame_next)
{
    struct bytes b;
    size_t used = 99, at = 0, lens[3], n = 0;
    struct msg m;

    unhex(&b, "93 02 01 02  92 cc c8 91 a1 78  93 03 01 02");
    while (at < b.len) {
        ck_assert_int_eq(msg_frame_next(b.p + at, b.len - at, &used), 0);
        lens[n++] = used;
        at += used;
    }
    ck_assert_uint_eq(n, 3);
    ck_assert_uint_eq(lens[0], 4);
    ck_assert_uint_eq(lens[1], 6);
    ck_assert_uint_eq(lens[2], 4);
    ck_assert_int_eq(msg_decode(b.p, lens[0], &m), 0);
    ck_assert_int_eq(m.type, MSG_PING);
    ck_assert_int_eq(msg_decode(b.p + 4, lens[1], &m), RK_ENOTFOUND);
    ck_assert_int_eq(msg_decode(b.p + 10, lens[2], &m), 0);
    ck_assert_int_eq(m.type, MSG_PONG);
    /* the whole frame is not one message */
    ck_assert_int_eq(msg_decode(b.p, b.len, &m), RK_ESYNTAX);
    /* cut short or empty: RK_ESYNTAX; nested past twice the skip depth: RK_ETOOBIG */
    ck_assert_int_eq(msg_frame_next(b.p, 3, &used), RK_ESYNTAX);
    ck_assert_uint_eq(used, 0);
    ck_assert_int_eq(msg_frame_next(b.p, 0, &used), RK_ESYNTAX);
    unhex(&b, "91 91 91 91 91 91 91 91 91 91 91 91 91 91 91 91 91 c0");
    ck_assert_int_eq(msg_frame_next(b.p, b.len, &used), RK_ETOOBIG);
    ck_assert_uint_eq(used, 0);
    unhex(&b, "91 91 91 91 91 91 91 91 91 91 91 91 91 91 91 91 c0");
    ck_assert_int_eq(msg_frame_next(b.p, b.len, &used), 0);
    ck_assert_uint_eq(used, b.len);
}
END_TEST

/*
 * The same frame read by msg_decode_next(): each message decoded where it
 * starts, with the length msg_frame_next() gives, the bytes after it not
 * looked at; an unknown type and a cut message fail with used 0, and the
 * message with a request's body borrowed from the frame.
 */
START_TEST(test_decode_next)
{
    struct bytes b;
    size_t used = 99;
    struct msg m;

    unhex(&b, "93 02 01 02  92 cc c8 91 a1 78  93 03 01 02  c1");
    ck_assert_int_eq(msg_decode_next(b.p, b.len, &m, &used), 0);
    ck_assert_int_eq(m.type, MSG_PING);
    ck_assert_uint_eq(used, 4);
    used = 99;
    ck_assert_int_eq(msg_decode_next(b.p + 4, b.len - 4, &m, &used), RK_ENOTFOUND);
    ck_assert_uint_eq(used, 0);
    ck_assert_int_eq(msg_decode_next(b.p + 10, b.len - 10, &m, &used), 0);
    ck_assert_int_eq(m.type, MSG_PONG);
    ck_assert_uint_eq(used, 4); /* the byte after it (0xc1, never valid) is not read */
    ck_assert_int_eq(msg_decode_next(b.p, 3, &m, &used), RK_ESYNTAX);
    ck_assert_uint_eq(used, 0);
    ck_assert_int_eq(msg_decode_next(b.p, 0, &m, &used), RK_ESYNTAX);
    /* a REQUEST whose body is [1, 2], then a PING */
    unhex(&b, "94 07 05 02 92 01 02  93 02 01 02");
    ck_assert_int_eq(msg_decode_next(b.p, b.len, &m, &used), 0);
    ck_assert_int_eq(m.type, MSG_REQUEST);
    ck_assert_uint_eq(used, 7);
    ck_assert_uint_eq(m.u.request.body_len, 3);
    ck_assert_ptr_eq(m.u.request.body, b.p + 4);
    msg_free(&m);
}
END_TEST

START_TEST(test_encode_invalid_refused)
{
    struct msg m = ident_example();
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(buf_append(&out, "keep", 4), 0);
    m.u.ident.proto = 0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = ident_example();
    m.u.ident.cluster.rf = 0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.u.ident.has_cluster = false; /* settings not announced are not checked */
    ck_assert_int_eq(msg_encode(&m, &out), 0);
    out.len = 4;
    m = ident_example();
    strcpy(m.u.ident.cluster.conflicts, "LWW");
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = ident_example();
    memset(m.u.ident.cluster.conflicts, 'a', sizeof(m.u.ident.cluster.conflicts)); /* no NUL */
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = ident_example();
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
    ck_assert_uint_eq(out.len, 8);
    buf_free(&out);
}
END_TEST

/* --- gossip: member entries, SYN, ACK, ACK2, member lists --------------------- */

/* The fields of the example entry, by hand (PROTOCOL.md section 7.5). */
static const char *const member_fields[MEMBER_FIELDS] = {
    "a2 6e 31",                                              /* id "n1" */
    "a2 72 31",                                              /* rack "r1" */
    "cd 01 00",                                              /* tokens 256 */
    "ae 31 32 37 2e 30 2e 30 2e 31 3a 37 33 37 31",          /* "127.0.0.1:7371" */
    "ae 31 32 37 2e 30 2e 30 2e 31 3a 37 33 37 30",          /* "127.0.0.1:7370" */
    "01",                                                    /* status 1, normal */
    "03",                                                    /* generation 3 */
    "2a",                                                    /* version 42 */
    "c4 10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f", /* instance */
    "02",                                                    /* ring_version 2 */
    "cf 01 23 45 67 89 ab cd ef",                            /* digest */
    "cf fe dc ba 98 76 54 32 10",                            /* target */
    "00",                                                    /* target_tokens 0 */
};

static struct msg_member member_example(void)
{
    struct msg_member e;

    memset(&e, 0, sizeof(e));
    strcpy(e.id, "n1");
    strcpy(e.rack, "r1");
    e.tokens = 256;
    strcpy(e.peer_addr, "127.0.0.1:7371");
    strcpy(e.client_addr, "127.0.0.1:7370");
    e.status = MSG_MEMBER_NORMAL;
    e.generation = 3;
    e.version = 42;
    for (int i = 0; i < 16; i++) {
        e.instance[i] = (uint8_t)i;
    }
    e.ring_version = 2;
    e.digest = 0x0123456789abcdefull;
    e.target = 0xfedcba9876543210ull;
    return e;
}

/*
 * Append the example entry to b: with field replaced by hex (field -1: none
 * replaced) and extra appended as further elements (head is their count).
 */
static void add_member(struct bytes *b, int field, const char *hex, int extra, const char *more)
{
    char head[8];

    snprintf(head, sizeof(head), "%02x", 0x90 | (MEMBER_FIELDS + extra));
    add_hex(b, head);
    for (int i = 0; i < MEMBER_FIELDS; i++) {
        add_hex(b, i == field ? hex : member_fields[i]);
    }
    add_hex(b, more);
}

static void add_member_example(struct bytes *b)
{
    add_member(b, -1, "", 0, "");
}

/* The SYN of syn_example(), 28 bytes. */
#define SYN_EXAMPLE_HEX                                                                            \
    "95 04 07 cf 01 23 45 67 89 ab cd ef c3 92 93 a2 6e 31 03 2a 93 a2 6e 32 01 cd 01 2c"

static struct msg syn_example(struct msg_digest d[2])
{
    struct msg m = {.type = MSG_GOSSIP_SYN};

    memset(d, 0, 2 * sizeof(*d));
    strcpy(d[0].id, "n1");
    d[0].generation = 3;
    d[0].version = 42;
    strcpy(d[1].id, "n2");
    d[1].generation = 1;
    d[1].version = 300;
    m.u.syn = (struct msg_gossip_syn){
        .epoch = 7, .digest = 0x0123456789abcdefull, .complete = true, .n = 2, .digests = d};
    return m;
}

/* An ACK of one entry, the example, and one request, "n3"; as ACK2 without it. */
static struct msg entries_example(enum msg_type type, struct msg_member *e, struct msg_digest *req)
{
    struct msg m = {.type = type};

    *e = member_example();
    memset(req, 0, sizeof(*req));
    strcpy(req->id, "n3");
    m.u.entries.n = 1;
    m.u.entries.entries = e;
    if (type == MSG_GOSSIP_ACK) {
        m.u.entries.n_requests = 1;
        m.u.entries.requests = req;
    }
    return m;
}

static void ack_example_bytes(struct bytes *b)
{
    unhex(b, "93 05 91");
    add_member_example(b);
    add_hex(b, "91 a2 6e 33");
}

static void ack2_example_bytes(struct bytes *b)
{
    unhex(b, "92 06 91");
    add_member_example(b);
}

/* Decode b; count the allocations it made when they can be counted. */
static int decode_counted(const struct bytes *b, struct msg *m, size_t *allocs)
{
    size_t before = allocations_now();
    int rc = decode(b, m);

    *allocs = allocations_now() - before;
    return rc;
}

/* Decode an ACK2 of one example entry with one field replaced; returns the error. */
static int member_with(int field, const char *hex)
{
    struct bytes b;
    struct msg m;
    int rc;

    unhex(&b, "92 06 91");
    add_member(&b, field, hex, 0, "");
    rc = decode(&b, &m);
    msg_free(&m);
    return rc;
}

START_TEST(test_member_golden)
{
    struct msg_member e[2] = {member_example(), member_example()};
    struct msg_member *back;
    struct bytes want;
    struct buf out;
    size_t n;

    /* A second entry in wider forms: str8 id, uint32 and uint64 numbers. */
    memset(e[1].id, 'a', 40);
    e[1].id[40] = '\0';
    strcpy(e[1].rack, "r-2");
    e[1].tokens = 1;
    strcpy(e[1].peer_addr, "[::1]:1");
    strcpy(e[1].client_addr, "h:65535");
    e[1].status = MSG_MEMBER_REMOVED;
    e[1].generation = 1ull << 32;
    e[1].version = 65536;
    memset(e[1].instance, 0xff, sizeof(e[1].instance));
    e[1].ring_version = 0;
    e[1].digest = UINT64_MAX;
    e[1].target = 7;
    e[1].target_tokens = RING_TOKENS_MAX;
    unhex(&want, "92");
    add_member_example(&want);
    add_hex(&want, "9d d9 28");
    for (int i = 0; i < 40; i++) {
        add_text(&want, "a");
    }
    add_hex(&want, "a3 72 2d 32 01 a7 5b 3a 3a 31 5d 3a 31 a7 68 3a 36 35 35 33 35 04");
    add_hex(&want, "cf 00 00 00 01 00 00 00 00 ce 00 01 00 00");
    add_hex(&want, "c4 10 ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff");
    add_hex(&want, "00 cf ff ff ff ff ff ff ff ff 07 cd 10 00");
    ck_assert_uint_eq(want.len, 1 + 81 + 111);
    buf_init(&out, 0);
    ck_assert_int_eq(msg_members_encode(e, 2, &out), 0);
    ck_assert_uint_eq(out.len, want.len);
    ck_assert_int_eq(memcmp(buf_data(&out), want.p, want.len), 0);
    ck_assert_int_eq(msg_members_decode(want.p, want.len, 2, &back, &n), 0);
    ck_assert_uint_eq(n, 2);
    assert_members_eq(e, back, 2);
    free(back);
    buf_free(&out);
}
END_TEST

/* The example entry as a node that predates target writes it: 11 fields, 71 bytes. */
static void add_member_v1_example(struct bytes *b)
{
    add_hex(b, "9b");
    for (int i = 0; i < MEMBER_V1_FIELDS; i++) {
        add_hex(b, member_fields[i]);
    }
}

/* An entry of 11 fields (before target) still decodes, with target 0, in gossip and lists. */
START_TEST(test_member_without_target)
{
    struct msg_member want = member_example();
    struct msg_member *back;
    struct bytes b;
    struct msg m;
    size_t n;

    want.target = 0;
    unhex(&b, "92 06 91");
    add_member_v1_example(&b);
    ck_assert_uint_eq(b.len, 3 + 71);
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.entries.n, 1);
    assert_member_eq(&want, &m.u.entries.entries[0]);
    msg_free(&m);
    /* A saved member list of two such entries, as an earlier release wrote it. */
    unhex(&b, "92");
    add_member_v1_example(&b);
    add_member_v1_example(&b);
    ck_assert_int_eq(msg_members_decode(b.p, b.len, 2, &back, &n), 0);
    ck_assert_uint_eq(n, 2);
    assert_member_eq(&want, &back[0]);
    assert_member_eq(&want, &back[1]);
    free(back);
    /* cut anywhere, refused */
    for (size_t len = 0; len < b.len; len++) {
        ck_assert(msg_members_decode(b.p, len, 2, &back, &n) != 0);
        ck_assert(back == NULL && n == 0);
    }
}
END_TEST

/* An entry of 12 fields (before target_tokens) decodes with target_tokens 0, in gossip and lists.
 */
START_TEST(test_member_without_target_tokens)
{
    struct msg_member want = member_example();
    struct msg_member *back;
    struct bytes b;
    struct msg m;
    size_t n;

    unhex(&b, "92 06 91 9c");
    for (int i = 0; i < MEMBER_FIELDS - 1; i++) {
        add_hex(&b, member_fields[i]);
    }
    ck_assert_uint_eq(b.len, 3 + 80);
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.entries.n, 1);
    assert_member_eq(&want, &m.u.entries.entries[0]);
    msg_free(&m);
    ck_assert_int_eq(msg_members_decode(b.p + 2, b.len - 2, 2, &back, &n), 0);
    ck_assert_uint_eq(n, 1);
    assert_member_eq(&want, &back[0]);
    free(back);
    /* and one of 14 (a later version's) skips the 14th */
    unhex(&b, "92 06 91");
    add_member(&b, -1, "", 1, "a3 6e 65 77");
    ck_assert_int_eq(decode(&b, &m), 0);
    assert_member_eq(&want, &m.u.entries.entries[0]);
    msg_free(&m);
}
END_TEST

START_TEST(test_syn_golden)
{
    struct msg_digest d[2];
    struct msg m = syn_example(d);
    struct bytes want;

    unhex(&want, SYN_EXAMPLE_HEX);
    assert_golden(&m, &want);
    m.u.syn = (struct msg_gossip_syn){.complete = false};
    unhex(&want, "95 04 00 00 c2 90");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_ack_golden)
{
    struct msg_member e;
    struct msg_digest req;
    struct msg m = entries_example(MSG_GOSSIP_ACK, &e, &req);
    struct bytes want;

    ack_example_bytes(&want);
    ck_assert_uint_eq(want.len, 88);
    assert_golden(&m, &want);
    /* A requested id goes out bare: its generation and version are not sent. */
    req.generation = 5;
    req.version = 6;
    assert_golden(&m, &want);
    m.u.entries = (struct msg_gossip_entries){0};
    unhex(&want, "93 05 90 90");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_ack2_golden)
{
    struct msg_member e;
    struct msg_digest req;
    struct msg m = entries_example(MSG_GOSSIP_ACK2, &e, &req);
    struct bytes want;

    ack2_example_bytes(&want);
    ck_assert_uint_eq(want.len, 84);
    assert_golden(&m, &want);
    m.u.entries = (struct msg_gossip_entries){0};
    unhex(&want, "92 06 90");
    assert_golden(&m, &want);
}
END_TEST

/* The largest entry: every string at its longest, every number at its widest. */
static void member_largest(struct msg_member *e, size_t i)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%064zu", i);
    memset(e->rack, 'r', RING_NAME_MAX);
    e->tokens = RING_TOKENS_MAX;
    memset(e->peer_addr, 'p', 255);
    strcpy(e->peer_addr + 255, ":65535");
    memset(e->client_addr, 'c', 255);
    strcpy(e->client_addr + 255, ":65534");
    ck_assert_uint_eq(strlen(e->client_addr), MEMBER_ADDR_LONGEST);
    e->status = MSG_MEMBER_STATUS_MAX;
    e->generation = e->version = e->ring_version = e->digest = e->target = UINT64_MAX - i;
    e->target_tokens = RING_TOKENS_MAX;
    memset(e->instance, (int)i, sizeof(e->instance));
}

static void digest_largest(struct msg_digest *d, size_t i)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->id, sizeof(d->id), "%064zu", i);
    d->generation = d->version = UINT64_MAX - i;
}

/* Encode m, check its size, decode it back and compare. */
static void assert_round_trip_size(const struct msg *m, size_t size)
{
    struct msg back;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_encode(m, &out), 0);
    ck_assert_uint_eq(out.len, size);
    ck_assert_uint_le(out.len, SEALED_PLAINTEXT_MIN);
    ck_assert_int_eq(msg_decode(buf_data(&out), out.len, &back), 0);
    assert_msg_eq(m, &back);
    msg_free(&back);
    buf_free(&out);
}

START_TEST(test_gossip_max_counts)
{
    struct msg_member *e = calloc(MSG_GOSSIP_ENTRIES_MAX, sizeof(*e));
    struct msg_digest *d = calloc(MSG_GOSSIP_DIGESTS_MAX, sizeof(*d));
    struct msg m = {.type = MSG_GOSSIP_SYN};

    ck_assert(e != NULL && d != NULL);
    for (size_t i = 0; i < MSG_GOSSIP_ENTRIES_MAX; i++) {
        member_largest(&e[i], i);
    }
    for (size_t i = 0; i < MSG_GOSSIP_DIGESTS_MAX; i++) {
        digest_largest(&d[i], i);
    }
    m.u.syn = (struct msg_gossip_syn){UINT64_MAX, UINT64_MAX, true, MSG_GOSSIP_DIGESTS_MAX, d};
    assert_round_trip_size(&m, SYN_BYTES_MAX);
    m.type = MSG_GOSSIP_ACK;
    m.u.entries = (struct msg_gossip_entries){MSG_GOSSIP_ENTRIES_MAX, e, MSG_GOSSIP_DIGESTS_MAX, d};
    assert_round_trip_size(&m, ACK_BYTES_MAX);
    m.type = MSG_GOSSIP_ACK2;
    m.u.entries.n_requests = 0;
    m.u.entries.requests = NULL;
    assert_round_trip_size(&m, ACK2_BYTES_MAX);
    free(e);
    free(d);
}
END_TEST

START_TEST(test_gossip_encode_over_limit)
{
    struct msg_member *e = calloc(MSG_GOSSIP_ENTRIES_MAX + 1, sizeof(*e));
    struct msg_digest *d = calloc(MSG_GOSSIP_DIGESTS_MAX + 1, sizeof(*d));
    struct msg m = {.type = MSG_GOSSIP_SYN};
    struct buf out;

    ck_assert(e != NULL && d != NULL);
    for (size_t i = 0; i <= MSG_GOSSIP_ENTRIES_MAX; i++) {
        e[i] = member_example();
    }
    for (size_t i = 0; i <= MSG_GOSSIP_DIGESTS_MAX; i++) {
        strcpy(d[i].id, "n1");
    }
    buf_init(&out, 0);
    ck_assert_int_eq(buf_append(&out, "keep", 4), 0);
    m.u.syn = (struct msg_gossip_syn){.n = MSG_GOSSIP_DIGESTS_MAX + 1, .digests = d};
    ck_assert_int_eq(msg_encode(&m, &out), RK_ETOOBIG);
    m.type = MSG_GOSSIP_ACK;
    m.u.entries = (struct msg_gossip_entries){MSG_GOSSIP_ENTRIES_MAX + 1, e, 0, NULL};
    ck_assert_int_eq(msg_encode(&m, &out), RK_ETOOBIG);
    m.u.entries = (struct msg_gossip_entries){1, e, MSG_GOSSIP_DIGESTS_MAX + 1, d};
    ck_assert_int_eq(msg_encode(&m, &out), RK_ETOOBIG);
    m.type = MSG_GOSSIP_ACK2;
    m.u.entries = (struct msg_gossip_entries){MSG_GOSSIP_ENTRIES_MAX + 1, e, 0, NULL};
    ck_assert_int_eq(msg_encode(&m, &out), RK_ETOOBIG);
    ck_assert_uint_eq(out.len, 4);
    ck_assert_int_eq(memcmp(buf_data(&out), "keep", 4), 0);
    buf_free(&out);
    free(e);
    free(d);
}
END_TEST

/* A message that must be refused with err, leaving m empty and, when counted, no allocation. */
static void assert_refused_unallocated(const char *what, const struct bytes *b, int err)
{
    struct msg m;
    size_t allocs;
    int rc = decode_counted(b, &m, &allocs);

    ck_assert_msg(rc == err, "%s: %d, not %d", what, rc, err);
    ck_assert_msg(allocs == 0, "%s: %zu allocations", what, allocs);
    ck_assert_int_eq(m.type, 0);
    ck_assert(m.u.entries.entries == NULL && m.u.entries.requests == NULL);
}

START_TEST(test_gossip_decode_over_limit)
{
    struct bytes b;

    unhex(&b, "95 04 00 00 c2 dd ff ff ff ff"); /* 2^32-1 digests in 10 bytes */
    ck_assert_uint_eq(b.len, 10);
    assert_refused_unallocated("syn 2^32-1", &b, RK_ETOOBIG);
    unhex(&b, "95 04 00 00 c2 dc 01 01"); /* 257 digests, all there */
    for (int i = 0; i < MSG_GOSSIP_DIGESTS_MAX + 1; i++) {
        add_hex(&b, "93 a1 61 00 00");
    }
    assert_refused_unallocated("syn 257", &b, RK_ETOOBIG);
    unhex(&b, "93 05 dd ff ff ff ff 90");
    assert_refused_unallocated("ack 2^32-1 entries", &b, RK_ETOOBIG);
    unhex(&b, "93 05 dc 00 41");
    assert_refused_unallocated("ack 65 entries", &b, RK_ETOOBIG);
    unhex(&b, "93 05 90 dd ff ff ff ff");
    assert_refused_unallocated("ack 2^32-1 requests", &b, RK_ETOOBIG);
    unhex(&b, "93 05 90 dc 01 01");
    for (int i = 0; i < MSG_GOSSIP_DIGESTS_MAX + 1; i++) {
        add_hex(&b, "a1 61");
    }
    assert_refused_unallocated("ack 257 requests", &b, RK_ETOOBIG);
    unhex(&b, "92 06 dc 00 41");
    assert_refused_unallocated("ack2 65 entries", &b, RK_ETOOBIG);
    /* Within the bound, but more items than the bytes left can hold. */
    unhex(&b, "95 04 00 00 c2 dc 01 00 93 a1 61 00 00");
    assert_refused_unallocated("syn 256 in 5 bytes", &b, RK_ESYNTAX);
    unhex(&b, "92 06 dc 00 40");
    for (int i = 0; i < 64 * 36; i++) {
        add_hex(&b, "00"); /* enough for mp's one byte an item, not for 64 entries */
    }
    assert_refused_unallocated("ack2 64 entries in 64 * 36 bytes", &b, RK_ESYNTAX);
    unhex(&b, "93 05 90 dc 00 64");
    for (int i = 0; i < 150; i++) {
        add_hex(&b, "a1");
    }
    assert_refused_unallocated("ack 100 requests in 150 bytes", &b, RK_ESYNTAX);
}
END_TEST

/* The smallest entry, 37 bytes: the size the decoder checks list counts against. */
#define MEMBER_SMALLEST_HEX                                                                        \
    "9b a1 61 a1 72 01 a3 68 3a 31 a3 68 3a 31 00 00 00 "                                          \
    "c4 10 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"

START_TEST(test_gossip_smallest_items_accepted)
{
    struct bytes b, one;
    struct msg m;

    unhex(&one, MEMBER_SMALLEST_HEX);
    ck_assert_uint_eq(one.len, 37);
    unhex(&b, "92 06 dc 00 40");
    for (int i = 0; i < MSG_GOSSIP_ENTRIES_MAX; i++) {
        add_hex(&b, MEMBER_SMALLEST_HEX);
    }
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.entries.n, MSG_GOSSIP_ENTRIES_MAX);
    ck_assert_str_eq(m.u.entries.entries[63].peer_addr, "h:1");
    msg_free(&m);
    unhex(&b, "95 04 00 00 c2 dc 01 00");
    for (int i = 0; i < MSG_GOSSIP_DIGESTS_MAX; i++) {
        add_hex(&b, "93 a1 61 00 00");
    }
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.syn.n, MSG_GOSSIP_DIGESTS_MAX);
    msg_free(&m);
    unhex(&b, "93 05 90 dc 01 00");
    for (int i = 0; i < MSG_GOSSIP_DIGESTS_MAX; i++) {
        add_hex(&b, "a1 61");
    }
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert_uint_eq(m.u.entries.n_requests, MSG_GOSSIP_DIGESTS_MAX);
    msg_free(&m);
}
END_TEST

START_TEST(test_member_valid)
{
    struct msg_member e = member_example();

    ck_assert(msg_member_valid(&e));
    strcpy(e.id, "bad id");
    ck_assert(!msg_member_valid(&e));
    e = member_example();
    memset(e.rack, 'a', sizeof(e.rack)); /* no NUL */
    ck_assert(!msg_member_valid(&e));
    e = member_example();
    e.tokens = 0;
    ck_assert(!msg_member_valid(&e));
    e.tokens = RING_TOKENS_MAX + 1;
    ck_assert(!msg_member_valid(&e));
    e.tokens = RING_TOKENS_MAX;
    ck_assert(msg_member_valid(&e));
    e.status = MSG_MEMBER_STATUS_MAX + 1;
    ck_assert(!msg_member_valid(&e));
    e = member_example();
    strcpy(e.peer_addr, "127.0.0.1");
    ck_assert(!msg_member_valid(&e));
    e = member_example();
    strcpy(e.client_addr, "h:0");
    ck_assert(!msg_member_valid(&e));
    member_largest(&e, 0);
    ck_assert(msg_member_valid(&e));
    memset(e.peer_addr, 'p', 256); /* a 256-byte host */
    strcpy(e.peer_addr + 256, ":1");
    ck_assert(!msg_member_valid(&e));
}
END_TEST

/* A str of len bytes of c followed by tail, as hex. */
static const char *long_str_hex(char c, size_t len, const char *tail)
{
    char text[512];

    ck_assert_uint_lt(len + strlen(tail), sizeof(text));
    memset(text, c, len);
    strcpy(text + len, tail);
    return str_hex(text);
}

START_TEST(test_member_invalid_refused)
{
    ck_assert_int_eq(member_with(-1, ""), 0);
    ck_assert_int_eq(member_with(0, "a3 6e 20 31"), RK_ESYNTAX); /* id "n 1" */
    ck_assert_int_eq(member_with(0, "a0"), RK_ESYNTAX);          /* empty id */
    ck_assert_int_eq(member_with(0, long_str_hex('a', 65, "")), RK_ETOOBIG);
    ck_assert_int_eq(member_with(1, "a2 72 2f"), RK_ESYNTAX); /* rack "r/" */
    ck_assert_int_eq(member_with(2, "00"), RK_ESYNTAX);       /* tokens 0 */
    ck_assert_int_eq(member_with(2, "cd 10 00"), 0);          /* tokens 4096 */
    ck_assert_int_eq(member_with(2, "cd 10 01"), RK_ETOOBIG); /* tokens 4097 */
    ck_assert_int_eq(member_with(2, "ff"), RK_ESYNTAX);       /* tokens -1 */
    ck_assert_int_eq(member_with(5, "04"), 0);                /* status 4 */
    ck_assert_int_eq(member_with(5, "05"), RK_ETOOBIG);       /* status 5 */
    ck_assert_int_eq(member_with(3, str_hex("127.0.0.1")), RK_ESYNTAX);
    ck_assert_int_eq(member_with(4, str_hex("127.0.0.1:")), RK_ESYNTAX);
    ck_assert_int_eq(member_with(4, str_hex("127.0.0.1:65536")), RK_ESYNTAX);
    ck_assert_int_eq(member_with(3, long_str_hex('h', 255, ":1")), 0);
    ck_assert_int_eq(member_with(3, long_str_hex('h', 256, ":1")), RK_ESYNTAX);
    ck_assert_int_eq(member_with(4, long_str_hex('h', 300, ":1")), RK_ETOOBIG);
    ck_assert_int_eq(member_with(8, "c4 0f 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e"),
                     RK_ESYNTAX); /* instance of 15 bytes */
    ck_assert_int_eq(member_with(8, "c4 11 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10"),
                     RK_ETOOBIG); /* of 17 */
    ck_assert_int_eq(member_with(8, "b0 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f"),
                     RK_ESYNTAX);                              /* a str, not a bin */
    ck_assert_int_eq(member_with(6, "a1 33"), RK_ESYNTAX);     /* generation as a str */
    ck_assert_int_eq(member_with(10, "c0"), RK_ESYNTAX);       /* digest nil */
    ck_assert_int_eq(member_with(11, "c0"), RK_ESYNTAX);       /* target nil */
    ck_assert_int_eq(member_with(11, "ff"), RK_ESYNTAX);       /* target -1 */
    ck_assert_int_eq(member_with(11, "00"), 0);                /* target 0: not told */
    ck_assert_int_eq(member_with(12, "cd 10 00"), 0);          /* target_tokens 4096 */
    ck_assert_int_eq(member_with(12, "cd 10 01"), RK_ETOOBIG); /* 4097 */
    ck_assert_int_eq(member_with(12, "c0"), RK_ESYNTAX);       /* nil */
    ck_assert_int_eq(member_with(12, "ff"), RK_ESYNTAX);       /* -1 */
}
END_TEST

START_TEST(test_gossip_fields_refused)
{
    static const struct {
        const char *hex;
        int err;
    } cases[] = {
        {"95 04 00 00 01 90", RK_ESYNTAX},                   /* complete as an integer */
        {"95 04 00 00 c0 90", RK_ESYNTAX},                   /* complete nil */
        {"95 04 ff 00 c2 90", RK_ESYNTAX},                   /* a negative epoch */
        {"95 04 00 00 c2 80", RK_ESYNTAX},                   /* digests as a map */
        {"94 04 00 00 c2", RK_ESYNTAX},                      /* no digests */
        {"95 04 00 00 c2 91 92 a2 6e 31 00", RK_ESYNTAX},    /* a digest of 2 fields */
        {"95 04 00 00 c2 91 93 a1 20 00 00", RK_ESYNTAX},    /* a digest's id " " */
        {"95 04 00 00 c2 91 93 c4 01 61 00 00", RK_ESYNTAX}, /* a digest's id as bin */
        {"95 04 00 00 c2 91 93 a1 61 00 a1 31", RK_ESYNTAX}, /* a digest's version as str */
        {"93 05 90 91 a0", RK_ESYNTAX},                      /* an empty requested id */
        {"93 05 90 91 c4 01 61", RK_ESYNTAX},                /* a requested id as bin */
        {"93 05 90 91 93 a1 61 00 00", RK_ESYNTAX},          /* a request as a digest */
        {"92 05 90", RK_ESYNTAX},                            /* an ACK without requests */
        {"91 06", RK_ESYNTAX},                               /* an ACK2 without entries */
        {"92 06 91 9a", RK_ESYNTAX},                         /* an entry of 10 fields */
        {"92 06 91 c0", RK_ESYNTAX},                         /* an entry nil */
        {"92 06 c0", RK_ESYNTAX},                            /* entries nil */
    };
    struct bytes b;
    struct msg m;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unhex(&b, cases[i].hex);
        ck_assert_msg(decode(&b, &m) == cases[i].err, "%s", cases[i].hex);
        ck_assert_int_eq(m.type, 0);
    }
    /* An entry of 10 fields, all there. */
    unhex(&b, "92 06 91 9a");
    for (int i = 0; i < MEMBER_V1_FIELDS - 1; i++) {
        add_hex(&b, member_fields[i]);
    }
    ck_assert_int_eq(decode(&b, &m), RK_ESYNTAX);
}
END_TEST

START_TEST(test_gossip_encode_invalid_refused)
{
    struct msg_member e;
    struct msg_digest req, d[2];
    struct msg m = entries_example(MSG_GOSSIP_ACK, &e, &req);
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(buf_append(&out, "keep", 4), 0);
    e.tokens = 0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    ck_assert_int_eq(msg_members_encode(&e, 1, &out), RK_EINVAL);
    e = member_example();
    strcpy(e.peer_addr, "no-port");
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    e = member_example();
    strcpy(req.id, "bad id");
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.type = MSG_GOSSIP_ACK2; /* an ACK2 carries no requests */
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.u.entries.entries = NULL; /* n entries, no array */
    m.u.entries.n_requests = 0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m = syn_example(d);
    strcpy(d[1].id, "");
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    ck_assert_uint_eq(out.len, 4);
    ck_assert_int_eq(memcmp(buf_data(&out), "keep", 4), 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_gossip_trailing_fields_accepted)
{
    struct msg_member e;
    struct msg_digest req, d[2];
    struct msg want, m;
    struct bytes b;

    /* A SYN with a field more, and a digest with a map more. */
    unhex(&b, "96 04 07 cf 01 23 45 67 89 ab cd ef c3 92 94 a2 6e 31 03 2a 81 a1 6b 01");
    add_hex(&b, "93 a2 6e 32 01 cd 01 2c a6");
    add_text(&b, "future");
    want = syn_example(d);
    ck_assert_int_eq(decode(&b, &m), 0);
    assert_msg_eq(&want, &m);
    msg_free(&m);
    /* An ACK whose entry has two more fields, a string and [1, nil], and a field more. */
    want = entries_example(MSG_GOSSIP_ACK, &e, &req);
    unhex(&b, "94 05 91");
    add_member(&b, -1, "", 2, "a3 6e 65 77 92 01 c0");
    add_hex(&b, "91 a2 6e 33 cb 40 09 21 fb 54 44 2d 18");
    ck_assert_int_eq(decode(&b, &m), 0);
    assert_msg_eq(&want, &m);
    msg_free(&m);
    /* An ACK2 whose entry has 64 elements, the most an entry may have. */
    want.type = MSG_GOSSIP_ACK2;
    want.u.entries.n_requests = 0;
    unhex(&b, "92 06 91 dc 00 40");
    for (int i = 0; i < MEMBER_FIELDS; i++) {
        add_hex(&b, member_fields[i]);
    }
    for (int i = MEMBER_FIELDS; i < 64; i++) {
        add_hex(&b, "c0");
    }
    ck_assert_int_eq(decode(&b, &m), 0);
    assert_msg_eq(&want, &m);
    msg_free(&m);
    b.p[5] = 0x41; /* 65 elements */
    add_hex(&b, "c0");
    ck_assert_int_eq(decode(&b, &m), RK_ETOOBIG);
}
END_TEST

/* The gossip goldens, and one with trailing fields, for the tests that walk them all. */
static size_t gossip_goldens(struct bytes *g)
{
    unhex(&g[0], SYN_EXAMPLE_HEX);
    ack_example_bytes(&g[1]);
    ack2_example_bytes(&g[2]);
    unhex(&g[3], "94 05 91");
    add_member(&g[3], -1, "", 1, "c0");
    add_hex(&g[3], "92 a2 6e 33 a2 6e 34 c0");
    unhex(&g[4], "95 04 00 00 c2 90");
    return 5;
}

START_TEST(test_gossip_every_truncation_refused)
{
    struct bytes g[5];
    size_t n = gossip_goldens(g);
    struct msg_member *list;
    struct msg m;
    size_t count;

    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(msg_decode(g[i].p, g[i].len, &m), 0);
        msg_free(&m);
        for (size_t len = 0; len < g[i].len; len++) {
            ck_assert_msg(msg_decode(g[i].p, len, &m) != 0, "message %zu cut at %zu", i, len);
            ck_assert(m.type == 0 && m.u.entries.entries == NULL && m.u.entries.requests == NULL);
        }
    }
    /* The ACK2's entries as a member list. */
    for (size_t len = 0; len < g[2].len - 2; len++) {
        ck_assert(msg_members_decode(g[2].p + 2, len, 1, &list, &count) != 0);
        ck_assert(list == NULL && count == 0);
    }
    ck_assert_int_eq(msg_members_decode(g[2].p + 2, g[2].len - 2, 1, &list, &count), 0);
    ck_assert_uint_eq(count, 1);
    free(list);
}
END_TEST

START_TEST(test_gossip_msg_free)
{
    struct bytes g[5];
    size_t n = gossip_goldens(g);
    struct msg m = ident_example(), copy = ident_example();

    msg_free(&m); /* harmless on a message without lists */
    assert_msg_eq(&m, &copy);
    m = (struct msg){.type = MSG_PING, .u.ping = {1, 2}};
    msg_free(&m);
    ck_assert(m.type == MSG_PING && m.u.ping.seq == 1 && m.u.ping.sent_ms == 2);
    memset(&m, 0, sizeof(m));
    msg_free(&m);
    for (size_t i = 0; i < n; i++) {
        ck_assert_int_eq(msg_decode(g[i].p, g[i].len, &m), 0);
        msg_free(&m);
        if (m.type == MSG_GOSSIP_SYN) {
            ck_assert(m.u.syn.digests == NULL && m.u.syn.n == 0);
        } else {
            ck_assert(m.u.entries.entries == NULL && m.u.entries.n == 0);
            ck_assert(m.u.entries.requests == NULL && m.u.entries.n_requests == 0);
        }
        /* Twice is harmless, and m may be decoded into again. */
        msg_free(&m);
        ck_assert_int_eq(msg_decode(g[i].p, g[i].len, &m), 0);
        msg_free(&m);
    }
}
END_TEST

START_TEST(test_members_round_trip)
{
    struct msg_member *e, *back;
    struct buf out;
    size_t n, n_back;

    buf_init(&out, 0);
    for (int t = 0; t < TRIALS / 10; t++) {
        e = random_members(MSG_GOSSIP_ENTRIES_MAX, &n);
        buf_clear(&out);
        ck_assert_int_eq(msg_members_encode(e, n, &out), 0);
        ck_assert_int_eq(msg_members_decode(buf_data(&out), out.len, n, &back, &n_back), 0);
        ck_assert_uint_eq(n_back, n);
        ck_assert(n > 0 || back == NULL);
        assert_members_eq(e, back, n);
        free(back);
        free(e);
    }
    buf_free(&out);
}
END_TEST

START_TEST(test_members_max)
{
    struct msg_member *e = calloc(RING_MEMBERS_MAX, sizeof(*e)), *back;
    struct bytes b;
    struct buf out;
    size_t n, allocs;
    int rc;

    ck_assert_ptr_nonnull(e);
    for (size_t i = 0; i < RING_MEMBERS_MAX; i++) {
        member_largest(&e[i], i);
    }
    buf_init(&out, 0);
    ck_assert_int_eq(msg_members_encode(e, RING_MEMBERS_MAX, &out), 0);
    ck_assert_uint_eq(out.len, 3 + (size_t)RING_MEMBERS_MAX * 731);
    ck_assert_int_eq(msg_members_decode(buf_data(&out), out.len, RING_MEMBERS_MAX, &back, &n), 0);
    ck_assert_uint_eq(n, RING_MEMBERS_MAX);
    assert_members_eq(e, back, n);
    free(back);
    /* One over max: refused before anything is allocated. */
    allocs = allocations_now();
    rc = msg_members_decode(buf_data(&out), out.len, RING_MEMBERS_MAX - 1, &back, &n);
    allocs = allocations_now() - allocs;
    ck_assert_int_eq(rc, RK_ETOOBIG);
    ck_assert(allocs == 0 && back == NULL && n == 0);
    unhex(&b, "dd ff ff ff ff 00");
    ck_assert_int_eq(msg_members_decode(b.p, b.len, SIZE_MAX, &back, &n), RK_ESYNTAX);
    ck_assert(back == NULL && n == 0);
    unhex(&b, "90");
    ck_assert_int_eq(msg_members_decode(b.p, b.len, 0, &back, &n), 0);
    ck_assert(back == NULL && n == 0);
    unhex(&b, "90 c0"); /* a byte after the list */
    ck_assert_int_eq(msg_members_decode(b.p, b.len, 0, &back, &n), RK_ESYNTAX);
    ack2_example_bytes(&b); /* a message is not a member list */
    ck_assert_int_eq(msg_members_decode(b.p, b.len, 8, &back, &n), RK_ESYNTAX);
    buf_free(&out);
    free(e);
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

/* --- the bulk lane's messages (version 2) ------------------------------------ */

START_TEST(test_credit_golden)
{
    struct msg m = {.type = MSG_CREDIT, .u.credit = {.grant = 65536, .window = 262144}};
    struct bytes want;

    unhex(&want, "93 09 ce 00 01 00 00 ce 00 04 00 00");
    assert_golden(&m, &want);
    m.u.credit.grant = 0;
    m.u.credit.window = MSG_CREDIT_WINDOW_MAX;
    unhex(&want, "93 09 00 ce 40 00 00 00");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_bulk_golden)
{
    static const uint8_t data[] = {0xde, 0xad, 0xbe};
    struct msg m = {.type = MSG_BULK, .u.bulk = {.seq = 5, .data = data, .len = sizeof(data)}};
    struct msg back;
    struct bytes want;

    unhex(&want, "93 0a 05 c4 03 de ad be");
    assert_golden(&m, &want);
    /* the data is borrowed from the input, not copied */
    ck_assert_int_eq(decode(&want, &back), 0);
    ck_assert_ptr_eq(back.u.bulk.data, want.p + 5);
    m.u.bulk.len = 0;
    m.u.bulk.data = NULL;
    unhex(&want, "93 0a 05 c4 00");
    assert_golden(&m, &want);
}
END_TEST

START_TEST(test_lane_fields_refused)
{
    static const struct {
        const char *hex;
        int err;
    } cases[] = {
        {"93 09 00 00", RK_ESYNTAX},             /* a window of 0 */
        {"93 09 05 04", RK_ESYNTAX},             /* a grant over the window */
        {"93 09 00 ce 40 00 00 01", RK_ETOOBIG}, /* a window over the bound */
        {"92 09 00", RK_ESYNTAX},                /* no window */
        {"93 09 ff 01", RK_ESYNTAX},             /* a negative grant */
        {"93 09 00 a1 31", RK_ESYNTAX},          /* a window as a string */
        {"93 0a 00 a1 31", RK_ESYNTAX},          /* data as a string */
        {"93 0a 00 c0", RK_ESYNTAX},             /* data nil */
        {"92 0a 00", RK_ESYNTAX},                /* no data */
        {"93 0a 00 c6 01 00 00 01", RK_ETOOBIG}, /* data over MSG_BULK_DATA_MAX */
        {"93 0a 00 c4 05 01", RK_ESYNTAX},       /* data cut short */
    };
    struct msg m;
    struct bytes b;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        unhex(&b, cases[i].hex);
        ck_assert_msg(decode(&b, &m) == cases[i].err, "%s", cases[i].hex);
    }
    /* later fields are skipped, as for every type */
    unhex(&b, "94 09 01 02 c0");
    ck_assert_int_eq(decode(&b, &m), 0);
    ck_assert(m.u.credit.grant == 1 && m.u.credit.window == 2);
}
END_TEST

START_TEST(test_lane_encode_refused)
{
    struct msg m = {.type = MSG_CREDIT, .u.credit = {.grant = 2, .window = 1}};
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.u.credit.grant = 0;
    m.u.credit.window = 0;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.u.credit.window = MSG_CREDIT_WINDOW_MAX + 1;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.type = MSG_BULK;
    m.u.bulk.data = NULL;
    m.u.bulk.len = 1;
    ck_assert_int_eq(msg_encode(&m, &out), RK_EINVAL);
    m.u.bulk.len = MSG_BULK_DATA_MAX + 1;
    ck_assert_int_eq(msg_encode(&m, &out), RK_ETOOBIG);
    ck_assert_uint_eq(out.len, 0);
    buf_free(&out);
}
END_TEST

START_TEST(test_lane_types_since_2)
{
    ck_assert(!msg_type_known(MSG_CREDIT, MSG_PROTO_V1));
    ck_assert(!msg_type_known(MSG_BULK, MSG_PROTO_V1));
    ck_assert(msg_type_known(MSG_CREDIT, 2));
    ck_assert(msg_type_known(MSG_BULK, 2));
    ck_assert_str_eq(msg_type_name(MSG_CREDIT), "credit");
    ck_assert_str_eq(msg_type_name(MSG_BULK), "bulk");
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
        {"ping_without_heartbeat", test_ping_without_heartbeat},
        {"pong_golden", test_pong_golden},
        {"round_trip", test_round_trip},
        {"encode_appends", test_encode_appends},
        {"trailing_fields_accepted", test_trailing_fields_accepted},
        {"ident_without_instance", test_ident_without_instance},
        {"ident_frame_max", test_ident_frame_max},
        {"fields_max", test_fields_max},
        {"unknown_type", test_unknown_type},
        {"frame_next", test_frame_next},
        {"decode_next", test_decode_next},
        {"missing_fields", test_missing_fields},
        {"trailing_bytes_refused", test_trailing_bytes_refused},
        {"every_truncation_refused", test_every_truncation_refused},
        {"ident_oversized_refused", test_ident_oversized_refused},
        {"ident_invalid_refused", test_ident_invalid_refused},
        {"encode_invalid_refused", test_encode_invalid_refused},
        {"encode_bounded_buffer", test_encode_bounded_buffer},
        {"member_golden", test_member_golden},
        {"member_without_target", test_member_without_target},
        {"member_without_target_tokens", test_member_without_target_tokens},
        {"ident_versions", test_ident_versions},
        {"ident_cluster_refused", test_ident_cluster_refused},
        {"type_known", test_type_known},
        {"syn_golden", test_syn_golden},
        {"ack_golden", test_ack_golden},
        {"ack2_golden", test_ack2_golden},
        {"gossip_max_counts", test_gossip_max_counts},
        {"gossip_encode_over_limit", test_gossip_encode_over_limit},
        {"gossip_decode_over_limit", test_gossip_decode_over_limit},
        {"gossip_smallest_items_accepted", test_gossip_smallest_items_accepted},
        {"member_valid", test_member_valid},
        {"member_invalid_refused", test_member_invalid_refused},
        {"gossip_fields_refused", test_gossip_fields_refused},
        {"gossip_encode_invalid_refused", test_gossip_encode_invalid_refused},
        {"gossip_trailing_fields_accepted", test_gossip_trailing_fields_accepted},
        {"gossip_every_truncation_refused", test_gossip_every_truncation_refused},
        {"gossip_msg_free", test_gossip_msg_free},
        {"members_round_trip", test_members_round_trip},
        {"members_max", test_members_max},
        {"mp_uint_widths", test_mp_uint_widths},
        {"mp_int_widths", test_mp_int_widths},
        {"mp_str_forms", test_mp_str_forms},
        {"mp_bin_forms", test_mp_bin_forms},
        {"mp_counts", test_mp_counts},
        {"mp_bool_nil", test_mp_bool_nil},
        {"mp_sticky_error", test_mp_sticky_error},
        {"mp_skip_every_type", test_mp_skip_every_type},
        {"mp_skip_limits", test_mp_skip_limits},
        {"credit_golden", test_credit_golden},
        {"bulk_golden", test_bulk_golden},
        {"lane_fields_refused", test_lane_fields_refused},
        {"lane_encode_refused", test_lane_encode_refused},
        {"lane_types_since_2", test_lane_types_since_2},
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
    SRunner *sr;
    int failed;

#ifdef COUNT_ALLOCATIONS
    __sanitizer_install_malloc_and_free_hooks(count_malloc, count_free);
#endif
    sr = srunner_create(msg_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
