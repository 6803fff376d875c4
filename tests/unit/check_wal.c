/*
 * check_wal.c - unit tests of the write-ahead log's format (storage/wal.c):
 * records of puts, marks and handoff-table sets and deletes read back as
 * written, a record torn at any
 * byte or with any bit flipped ends the log at the record before it, a
 * record of another generation is not read, a checksummed record whose
 * items break the layout is refused (RK_ESYNTAX) without any of its items
 * handed over, and headers are told from other bytes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "bytes.h"
#include "error.h"
#include "wal.h"

#define GEN 0x0123456789abcdefull
#define MAX_SEEN 64

/* What wal_parse() handed over, copied. */
struct seen_item {
    enum wal_kind kind;
    enum wal_table table;
    uint8_t key[600], value[600];
    size_t key_len, value_len;
    uint64_t mark;
};
struct seen {
    struct seen_item it[MAX_SEEN];
    size_t n;
    int stop_at; /* return 99 at this item (1-based), 0: never */
};

static int collect(void *ctx, const struct wal_item *it)
{
    struct seen *s = ctx;
    struct seen_item *c;

    ck_assert_uint_lt(s->n, MAX_SEEN);
    c = &s->it[s->n++];
    memset(c, 0, sizeof(*c));
    c->kind = it->kind;
    c->table = it->table;
    c->mark = it->mark;
    if (it->kind != WAL_MARK) {
        ck_assert_uint_le(it->key_len, sizeof(c->key));
        ck_assert_uint_le(it->value_len, sizeof(c->value));
        memcpy(c->key, it->key, it->key_len);
        if (it->value_len > 0) {
            memcpy(c->value, it->value, it->value_len);
        }
        c->key_len = it->key_len;
        c->value_len = it->value_len;
    }
    return s->stop_at != 0 && (size_t)s->stop_at == s->n ? 99 : 0;
}

/* A data-table key: position, then name. */
static size_t make_key(uint8_t *out, uint64_t pos, const char *name)
{
    bytes_put_be64(out, pos);
    memcpy(out + 8, name, strlen(name));
    return 8 + strlen(name);
}

/* Append a record of gen with puts of key-<tag>-<i> (values of tag bytes) and a mark when mark !=
 * 0. */
static size_t add_record(struct buf *b, uint64_t gen, int tag, int puts, uint64_t mark)
{
    uint8_t key[64], value[64];
    size_t at;

    ck_assert_int_eq(wal_begin(b, &at), 0);
    for (int i = 0; i < puts; i++) {
        char name[32];
        snprintf(name, sizeof(name), "key-%d-%d", tag, i);
        memset(value, 'a' + tag, (size_t)(1 + tag + i));
        ck_assert_int_eq(
            wal_put(b, key, make_key(key, 1000u * tag + i, name), value, (size_t)(1 + tag + i)), 0);
    }
    if (mark != 0) {
        ck_assert_int_eq(wal_mark(b, mark), 0);
    }
    ck_assert_int_eq(wal_end(b, at, gen), 0);
    return b->len;
}

/* Check that seen->it[from..] are the items add_record(tag, puts, mark) wrote. */
static size_t expect_record(const struct seen *s, size_t from, int tag, int puts, uint64_t mark)
{
    for (int i = 0; i < puts; i++) {
        const struct seen_item *c = &s->it[from++];
        char name[32];
        uint8_t key[64];
        size_t kl;
        ck_assert_uint_lt(from - 1, s->n);
        snprintf(name, sizeof(name), "key-%d-%d", tag, i);
        kl = make_key(key, 1000u * tag + i, name);
        ck_assert_int_eq(c->kind, WAL_PUT);
        ck_assert_uint_eq(c->key_len, kl);
        ck_assert_mem_eq(c->key, key, kl);
        ck_assert_uint_eq(c->value_len, (size_t)(1 + tag + i));
        for (size_t j = 0; j < c->value_len; j++) {
            ck_assert_int_eq(c->value[j], 'a' + tag);
        }
    }
    if (mark != 0) {
        ck_assert_uint_lt(from, s->n);
        ck_assert_int_eq(s->it[from].kind, WAL_MARK);
        ck_assert_uint_eq(s->it[from].mark, mark);
        from++;
    }
    return from;
}

static int parse(const struct buf *b, size_t len, uint64_t gen, struct seen *s, size_t *valid)
{
    memset(s, 0, sizeof(*s));
    return wal_parse(buf_data(b), len, gen, collect, s, valid);
}

START_TEST(test_round_trip)
{
    struct buf b;
    struct seen s;
    size_t valid, at;

    buf_init(&b, 0);
    add_record(&b, GEN, 1, 2, 0x1111);
    add_record(&b, GEN, 2, 0, 0x2222);
    add_record(&b, GEN, 3, 0, 0); /* an empty record: legal, replays as nothing */
    add_record(&b, GEN, 4, 3, 0);
    ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, b.len);
    at = expect_record(&s, 0, 1, 2, 0x1111);
    at = expect_record(&s, at, 2, 0, 0x2222);
    at = expect_record(&s, at, 4, 3, 0);
    ck_assert_uint_eq(at, s.n);
    buf_free(&b);
}
END_TEST

START_TEST(test_empty_log)
{
    struct buf b;
    struct seen s;
    size_t valid = 7;

    buf_init(&b, 0);
    ck_assert_int_eq(parse(&b, 0, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, 0);
    ck_assert_uint_eq(s.n, 0);
    buf_free(&b);
}
END_TEST

START_TEST(test_callback_stops)
{
    struct buf b;
    struct seen s;
    size_t valid;

    buf_init(&b, 0);
    add_record(&b, GEN, 1, 3, 0);
    memset(&s, 0, sizeof(s));
    s.stop_at = 2;
    ck_assert_int_eq(wal_parse(buf_data(&b), b.len, GEN, collect, &s, &valid), 99);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_uint_eq(valid, 0); /* the record was not read whole */
    buf_free(&b);
}
END_TEST

START_TEST(test_torn_tail_every_offset)
{
    struct buf b;
    struct seen s;
    size_t end1, end2, valid;

    buf_init(&b, 0);
    end1 = add_record(&b, GEN, 1, 2, 0x10);
    end2 = add_record(&b, GEN, 2, 1, 0);
    add_record(&b, GEN, 3, 4, 0x30);
    for (size_t len = end2; len < b.len; len++) {
        ck_assert_int_eq(parse(&b, len, GEN, &s, &valid), 0);
        ck_assert_msg(valid == end2, "cut at %zu: valid %zu, want %zu", len, valid, end2);
        ck_assert_uint_eq(expect_record(&s, expect_record(&s, 0, 1, 2, 0x10), 2, 1, 0), s.n);
    }
    /* a cut inside the first record leaves nothing */
    for (size_t len = 0; len < end1; len++) {
        ck_assert_int_eq(parse(&b, len, GEN, &s, &valid), 0);
        ck_assert_uint_eq(valid, 0);
        ck_assert_uint_eq(s.n, 0);
    }
    buf_free(&b);
}
END_TEST

START_TEST(test_flipped_bit_ends_log)
{
    struct buf b;
    struct seen s;
    size_t end1, end2, valid;

    buf_init(&b, 0);
    end1 = add_record(&b, GEN, 1, 1, 0x10);
    end2 = add_record(&b, GEN, 2, 2, 0x20);
    add_record(&b, GEN, 3, 1, 0);
    for (size_t at = end1; at < end2; at++) {
        for (int bit = 0; bit < 8; bit++) {
            buf_data(&b)[at] ^= (uint8_t)(1u << bit);
            ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
            ck_assert_msg(valid == end1, "bit %d of byte %zu: valid %zu", bit, at, valid);
            ck_assert_uint_eq(expect_record(&s, 0, 1, 1, 0x10), s.n);
            buf_data(&b)[at] ^= (uint8_t)(1u << bit);
        }
    }
    ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, b.len);
    buf_free(&b);
}
END_TEST

START_TEST(test_other_generation)
{
    struct buf b;
    struct seen s;
    size_t end1, valid;

    buf_init(&b, 0);
    end1 = add_record(&b, GEN, 1, 1, 0);
    add_record(&b, GEN - 1, 2, 2, 0x20); /* left from the log before a checkpoint */
    add_record(&b, GEN, 3, 1, 0);
    ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, end1);
    ck_assert_uint_eq(expect_record(&s, 0, 1, 1, 0), s.n);
    /* read for the next generation, not even the first record is one */
    ck_assert_int_eq(parse(&b, b.len, GEN + 1, &s, &valid), 0);
    ck_assert_uint_eq(valid, 0);
    ck_assert_uint_eq(s.n, 0);
    buf_free(&b);
}
END_TEST

/* Append a record of GEN whose body is a valid put followed by bad (n bytes). */
static void add_bad_record(struct buf *b, const uint8_t *bad, size_t n)
{
    uint8_t key[64], value[3] = {1, 2, 3};
    size_t at;

    ck_assert_int_eq(wal_begin(b, &at), 0);
    ck_assert_int_eq(wal_put(b, key, make_key(key, 77, "good"), value, sizeof(value)), 0);
    ck_assert_int_eq(buf_append(b, bad, n), 0);
    ck_assert_int_eq(wal_end(b, at, GEN), 0);
}

/* A put item with key length klen and record length vlen, its bytes present. */
static size_t bad_put(uint8_t *out, size_t klen, uint32_t vlen, size_t present)
{
    out[0] = WAL_PUT;
    out[1] = (uint8_t)(klen >> 8);
    out[2] = (uint8_t)klen;
    memset(out + 3, 'k', klen);
    bytes_put_be32(out + 3 + klen, vlen);
    memset(out + 7 + klen, 'v', present);
    return 7 + klen + present;
}

/* A table item: kind, table, key length klen with present key bytes, then tail (n bytes). */
static size_t table_item(uint8_t *out, uint8_t kind, uint8_t table, size_t klen, size_t present,
                         const uint8_t *tail, size_t n)
{
    out[0] = kind;
    out[1] = table;
    out[2] = (uint8_t)(klen >> 8);
    out[3] = (uint8_t)klen;
    memset(out + 4, 'k', present);
    if (n > 0) {
        memcpy(out + 4 + present, tail, n);
    }
    return 4 + present + n;
}

/* The bad table items (BAD_TABLE_ITEMS of them): case c's bytes, what it breaks in *what. */
#define BAD_TABLE_ITEMS 7
static size_t bad_table_item(int c, uint8_t *item, const char **what)
{
    static const uint8_t len3[4] = {0, 0, 0, 3}, len9[4] = {0, 0, 0, 9},
                         vals[7] = {0, 0, 0, 3, 'a', 'b', 'c'};

    switch (c) {
    case 0:
        *what = "table 0";
        return table_item(item, WAL_TABLE_SET, 0, 4, 4, vals, sizeof(vals));
    case 1:
        *what = "table 2";
        return table_item(item, WAL_TABLE_DEL, 2, 4, 4, NULL, 0);
    case 2:
        *what = "table key length 0";
        return table_item(item, WAL_TABLE_DEL, WAL_TABLE_HANDOFF, 0, 0, NULL, 0);
    case 3:
        *what = "table key length 512";
        return table_item(item, WAL_TABLE_DEL, WAL_TABLE_HANDOFF, 512, 512, NULL, 0);
    case 4:
        *what = "a table key longer than the body";
        return table_item(item, WAL_TABLE_DEL, WAL_TABLE_HANDOFF, 20, 6, NULL, 0);
    case 5:
        *what = "a table value longer than the body";
        return table_item(item, WAL_TABLE_SET, WAL_TABLE_HANDOFF, 4, 4, len9, sizeof(len9));
    default:
        *what = "a table value length cut short";
        return table_item(item, WAL_TABLE_SET, WAL_TABLE_HANDOFF, 4, 4, len3, 2);
    }
}

/* The bad item of case c (after a good put in its record): its length, what it breaks in *what. */
static size_t bad_item(int c, uint8_t *item, const char **what)
{
    switch (c) {
    case 0:
        *what = "kind 5";
        item[0] = 5;
        memset(item + 1, 0, 8);
        return 9;
    case 1:
        *what = "kind 0";
        memset(item, 0, 9);
        return 9;
    case 2:
        *what = "key length 8";
        return bad_put(item, 8, 1, 1);
    case 3:
        *what = "key length 512";
        return bad_put(item, 512, 1, 1);
    case 4:
        *what = "record length 0";
        return bad_put(item, 12, 0, 0);
    case 5:
        *what = "a trailing byte";
        item[0] = WAL_MARK;
        memset(item + 1, 0, 9);
        return 10;
    case 6:
        *what = "a mark cut short";
        item[0] = WAL_MARK;
        memset(item + 1, 0, 4);
        return 5;
    case 7:
        *what = "a record longer than the body";
        return bad_put(item, 12, 10, 4);
    case 8:
        *what = "a key longer than the body";
        item[0] = WAL_PUT;
        item[1] = 0;
        item[2] = 12;
        memset(item + 3, 'k', 5);
        return 8;
    default:
        return bad_table_item(c - 9, item, what);
    }
}

START_TEST(test_bad_item_is_damage)
{
    static uint8_t item[2048];

    for (int c = 0; c < 9 + BAD_TABLE_ITEMS; c++) {
        struct buf b;
        struct seen s;
        const char *what;
        size_t n = bad_item(c, item, &what), end1, valid = 12345;

        buf_init(&b, 0);
        end1 = add_record(&b, GEN, 1, 2, 0x10);
        add_bad_record(&b, item, n);
        add_record(&b, GEN, 3, 1, 0);
        ck_assert_msg(parse(&b, b.len, GEN, &s, &valid) == RK_ESYNTAX, "%s: not refused", what);
        ck_assert_msg(valid == end1, "%s: valid %zu, want %zu", what, valid, end1);
        ck_assert_msg(expect_record(&s, 0, 1, 2, 0x10) == s.n, "%s: an item of the bad record",
                      what);
        buf_free(&b);
    }
}
END_TEST

START_TEST(test_key_length_bounds)
{
    uint8_t key[511], value[1] = {9};
    struct buf b;
    struct seen s;
    size_t at, valid;

    memset(key, 'k', sizeof(key));
    buf_init(&b, 0);
    ck_assert_int_eq(wal_begin(&b, &at), 0);
    ck_assert_int_eq(wal_put(&b, key, 9, value, 1), 0);   /* a position and a 1-byte key */
    ck_assert_int_eq(wal_put(&b, key, 511, value, 1), 0); /* the longest key */
    ck_assert_int_eq(wal_end(&b, at, GEN), 0);
    ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, b.len);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_uint_eq(s.it[0].key_len, 9);
    ck_assert_uint_eq(s.it[1].key_len, 511);
    buf_free(&b);
}
END_TEST

/*
 * Handoff-table items beside puts and marks: a set, a set of an empty
 * value, a delete, each read back with its table, key and value, in the
 * order written; keys outside 1 .. 511 bytes are refused when written.
 */
START_TEST(test_table_items)
{
    uint8_t key[16], big[WAL_TABLE_KEY_MAX + 1];
    struct buf b;
    struct seen s;
    size_t at, valid;

    memset(big, 'b', sizeof(big));
    buf_init(&b, 0);
    ck_assert_int_eq(wal_begin(&b, &at), 0);
    ck_assert_int_eq(wal_put(&b, key, make_key(key, 3, "data"), (const uint8_t *)"rec", 3), 0);
    ck_assert_int_eq(wal_table_put(&b, WAL_TABLE_HANDOFF, (const uint8_t *)"ckpt", 4,
                                   (const uint8_t *)"at-3", 4),
                     0);
    ck_assert_int_eq(
        wal_table_put(&b, WAL_TABLE_HANDOFF, (const uint8_t *)"empty", 5, (const uint8_t *)"", 0),
        0);
    ck_assert_int_eq(wal_table_put(&b, WAL_TABLE_HANDOFF, (const uint8_t *)"old", 3, NULL, 0), 0);
    ck_assert_int_eq(wal_table_put(&b, WAL_TABLE_HANDOFF, big, WAL_TABLE_KEY_MAX, NULL, 0), 0);
    ck_assert_int_eq(wal_mark(&b, 0x77), 0);
    ck_assert_int_eq(wal_table_put(&b, WAL_TABLE_HANDOFF, big, 0, NULL, 0), RK_EINVAL);
    ck_assert_int_eq(wal_table_put(&b, WAL_TABLE_HANDOFF, big, sizeof(big), big, 1), RK_EINVAL);
    ck_assert_int_eq(wal_end(&b, at, GEN), 0);
    ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, b.len);
    ck_assert_uint_eq(s.n, 6);
    ck_assert_int_eq(s.it[0].kind, WAL_PUT);
    ck_assert_int_eq(s.it[1].kind, WAL_TABLE_SET);
    ck_assert_int_eq(s.it[1].table, WAL_TABLE_HANDOFF);
    ck_assert_uint_eq(s.it[1].key_len, 4);
    ck_assert_mem_eq(s.it[1].key, "ckpt", 4);
    ck_assert_uint_eq(s.it[1].value_len, 4);
    ck_assert_mem_eq(s.it[1].value, "at-3", 4);
    ck_assert_int_eq(s.it[2].kind, WAL_TABLE_SET);
    ck_assert_uint_eq(s.it[2].value_len, 0);
    ck_assert_int_eq(s.it[3].kind, WAL_TABLE_DEL);
    ck_assert_int_eq(s.it[3].table, WAL_TABLE_HANDOFF);
    ck_assert_mem_eq(s.it[3].key, "old", 3);
    ck_assert_int_eq(s.it[4].kind, WAL_TABLE_DEL);
    ck_assert_uint_eq(s.it[4].key_len, WAL_TABLE_KEY_MAX);
    ck_assert_int_eq(s.it[5].kind, WAL_MARK);
    ck_assert_uint_eq(s.it[5].mark, 0x77);
    buf_free(&b);
}
END_TEST

START_TEST(test_drop_takes_items_back)
{
    uint8_t key[16];
    struct buf b;
    struct seen s;
    size_t at, keep, valid;

    buf_init(&b, 0);
    ck_assert_int_eq(wal_begin(&b, &at), 0);
    ck_assert_int_eq(wal_mark(&b, 5), 0);
    keep = b.len;
    ck_assert_int_eq(wal_put(&b, key, make_key(key, 1, "gone"), key, 3), 0);
    wal_drop(&b, keep);
    ck_assert_int_eq(wal_end(&b, at, GEN), 0);
    ck_assert_int_eq(parse(&b, b.len, GEN, &s, &valid), 0);
    ck_assert_uint_eq(valid, b.len);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_int_eq(s.it[0].kind, WAL_MARK);
    buf_free(&b);
}
END_TEST

START_TEST(test_header)
{
    uint8_t h[WAL_HEADER_LEN + 4];
    uint64_t gen = 0;

    wal_header(h, GEN);
    ck_assert_mem_eq(h, "RKWAL\0\0\1", 8);
    ck_assert_uint_eq(bytes_get_be64(h + 8), GEN);
    ck_assert_int_eq(wal_header_parse(h, WAL_HEADER_LEN, &gen), 0);
    ck_assert_uint_eq(gen, GEN);
    ck_assert_int_eq(wal_header_parse(h, sizeof(h), &gen), 0); /* records may follow */
    for (size_t len = 0; len < WAL_HEADER_LEN; len++) {
        ck_assert_int_eq(wal_header_parse(h, len, &gen), RK_ESYNTAX);
    }
    for (size_t i = 0; i < 8; i++) {
        h[i] ^= 0x20;
        ck_assert_msg(wal_header_parse(h, WAL_HEADER_LEN, &gen) == RK_ESYNTAX,
                      "magic byte %zu changed, still a header", i);
        h[i] ^= 0x20;
    }
    h[7] = 2; /* another format */
    ck_assert_int_eq(wal_header_parse(h, WAL_HEADER_LEN, &gen), RK_ESYNTAX);
}
END_TEST

static Suite *wal_suite(void)
{
    Suite *s = suite_create("wal");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"round_trip", test_round_trip},
        {"empty_log", test_empty_log},
        {"callback_stops", test_callback_stops},
        {"torn_tail_every_offset", test_torn_tail_every_offset},
        {"flipped_bit_ends_log", test_flipped_bit_ends_log},
        {"other_generation", test_other_generation},
        {"bad_item_is_damage", test_bad_item_is_damage},
        {"key_length_bounds", test_key_length_bounds},
        {"table_items", test_table_items},
        {"drop_takes_items_back", test_drop_takes_items_back},
        {"header", test_header},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(wal_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
