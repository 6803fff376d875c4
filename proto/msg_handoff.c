/*
 * msg_handoff.c - the bodies and answers of the ownership-handoff
 * operations (msg_handoff.h).
 *
 * Each is a msgpack array whose first elements are the fields below, in
 * PROTOCOL.md section 7.17's order; a decoder requires at least those,
 * allows at most MSG_HANDOFF_FIELDS_MAX elements and skips those after the
 * known ones (a later version's additions), as msg_kv.c does:
 *
 *   HANDOFF_PULL          [target, start, end, after bin/nil, max_bytes]
 *     answer              [status, [[key bin, record bin], ...], done bool, next bin/nil]
 *   HANDOFF_DIGEST        [target, start, end, parts]
 *     answer              [status, keys, [digest bin 32, ...]]
 *   HANDOFF_DONE          [target, start, end, keys, bytes]
 *     answer              [status]
 *
 * An item of a HANDOFF_PULL answer follows the same rule (at least its
 * two fields, later ones skipped).  No count is used to size anything:
 * items go into the caller's array, whose capacity bounds the count
 * before a single item is read, and digests into the answer's struct.
 */
#include "msg_handoff.h"

#include <msgpack.h>
#include <string.h>

#include "error.h"
#include "mp.h"
#include "msg_kv.h"

#define MSG_HANDOFF_FIELDS_MAX 64
#define MSG_HANDOFF_SKIP_DEPTH 8
#define MSG_HANDOFF_PULL_FIELDS 5
#define MSG_HANDOFF_PULL_ANSWER_FIELDS 4
#define MSG_HANDOFF_ITEM_FIELDS 2
#define MSG_HANDOFF_DIGEST_FIELDS 4
#define MSG_HANDOFF_DIGEST_ANSWER_FIELDS 3
#define MSG_HANDOFF_DONE_FIELDS 5
#define MSG_HANDOFF_DONE_ANSWER_FIELDS 1

/* --- encoding ------------------------------------------------------------------ */

struct msg_handoff_sink {
    struct buf *out;
    int err;
};

static int msg_handoff_write(void *data, const char *p, size_t len)
{
    struct msg_handoff_sink *s = data;
    int rc = buf_append(s->out, p, len);

    if (rc != 0 && s->err == 0) {
        s->err = rc;
    }
    return rc;
}

/* Finish an encoding begun when out held start bytes: undo it on error. */
static int msg_handoff_finish(struct msg_handoff_sink *s, size_t start, int packed)
{
    if (packed == 0 && s->err == 0) {
        return 0;
    }
    s->out->len = start;
    return s->err != 0 ? s->err : RK_ENOMEM;
}

/* Bytes as a bin, or nil when there are none (present false). */
static int msg_handoff_pack_bin(msgpack_packer *pk, bool present, const uint8_t *p, size_t len)
{
    if (!present) {
        return msgpack_pack_nil(pk);
    }
    return msgpack_pack_bin(pk, len) != 0 ? -1 : msgpack_pack_bin_body(pk, p, len);
}

static int msg_handoff_pack_bool(msgpack_packer *pk, bool v)
{
    return v ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

/* The arc fields every body starts with. */
static int msg_handoff_pack_arc(msgpack_packer *pk, uint64_t target, uint64_t start, uint64_t end)
{
    return msgpack_pack_uint64(pk, target) || msgpack_pack_uint64(pk, start) ||
           msgpack_pack_uint64(pk, end);
}

/* A storage key when present: MSG_HANDOFF_SKEY_MIN .. MSG_HANDOFF_SKEY_MAX bytes. */
static bool msg_handoff_skey_ok(bool present, const uint8_t *p, size_t len)
{
    return !present || (p != NULL && len >= MSG_HANDOFF_SKEY_MIN && len <= MSG_HANDOFF_SKEY_MAX);
}

static bool msg_handoff_item_ok(const struct msg_handoff_item *it)
{
    return it->key != NULL && it->key_len <= MSG_HANDOFF_KEY_MAX && it->record != NULL &&
           it->record_len > 0 && it->record_len <= MSG_HANDOFF_BYTES_MAX;
}

/* A pull answer's fields agree: the rules of struct msg_handoff_pull_answer. */
static bool msg_handoff_pull_answer_ok(const struct msg_handoff_pull_answer *m)
{
    if (m->status != MSG_KV_OK) {
        return m->n_items == 0 && !m->done && !m->has_next;
    }
    return m->n_items == 0 || m->has_next;
}

int msg_handoff_pull_encode(const struct msg_handoff_pull *m, struct buf *out)
{
    struct msg_handoff_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (!msg_handoff_skey_ok(m->has_after, m->after, m->after_len) || m->max_bytes == 0 ||
        m->max_bytes > MSG_HANDOFF_BYTES_MAX || m->max_items > MSG_HANDOFF_ITEMS_MAX) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_handoff_write);
    return msg_handoff_finish(
        &s, start,
        msgpack_pack_array(&pk, MSG_HANDOFF_PULL_FIELDS + (m->max_items != 0)) ||
            msg_handoff_pack_arc(&pk, m->target, m->start, m->end) ||
            msg_handoff_pack_bin(&pk, m->has_after, m->after, m->after_len) ||
            msgpack_pack_uint64(&pk, m->max_bytes) ||
            (m->max_items != 0 && msgpack_pack_uint32(&pk, m->max_items)));
}

/* The items of a pull answer, each [key, record], validated first. */
static int msg_handoff_pack_items(msgpack_packer *pk, const struct msg_handoff_item *items,
                                  size_t n)
{
    int rc = msgpack_pack_array(pk, n);

    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = msgpack_pack_array(pk, MSG_HANDOFF_ITEM_FIELDS) ||
             msg_handoff_pack_bin(pk, true, items[i].key, items[i].key_len) ||
             msg_handoff_pack_bin(pk, true, items[i].record, items[i].record_len);
    }
    return rc;
}

int msg_handoff_pull_answer_encode(const struct msg_handoff_pull_answer *m, struct buf *out)
{
    struct msg_handoff_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (m->status > MSG_KV_STATUS_MAX || m->n_items > MSG_HANDOFF_ITEMS_MAX ||
        (m->n_items > 0 && m->items == NULL) ||
        !msg_handoff_skey_ok(m->has_next, m->next, m->next_len) || !msg_handoff_pull_answer_ok(m)) {
        return RK_EINVAL;
    }
    for (size_t i = 0; i < m->n_items; i++) {
        if (!msg_handoff_item_ok(&m->items[i])) {
            return RK_EINVAL;
        }
    }
    msgpack_packer_init(&pk, &s, msg_handoff_write);
    return msg_handoff_finish(&s, start,
                              msgpack_pack_array(&pk, MSG_HANDOFF_PULL_ANSWER_FIELDS) ||
                                  msgpack_pack_uint32(&pk, m->status) ||
                                  msg_handoff_pack_items(&pk, m->items, m->n_items) ||
                                  msg_handoff_pack_bool(&pk, m->done) ||
                                  msg_handoff_pack_bin(&pk, m->has_next, m->next, m->next_len));
}

int msg_handoff_digest_encode(const struct msg_handoff_digest *m, struct buf *out)
{
    struct msg_handoff_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (m->parts == 0 || m->parts > MSG_HANDOFF_PARTS_MAX) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_handoff_write);
    return msg_handoff_finish(&s, start,
                              msgpack_pack_array(&pk, MSG_HANDOFF_DIGEST_FIELDS + m->count_only) ||
                                  msg_handoff_pack_arc(&pk, m->target, m->start, m->end) ||
                                  msgpack_pack_uint32(&pk, m->parts) ||
                                  (m->count_only && msgpack_pack_true(&pk)));
}

/* A digest answer's fields agree: 1 .. 64 digests with status ok, else nothing. */
static bool msg_handoff_digest_answer_ok(const struct msg_handoff_digest_answer *m)
{
    if (m->status != MSG_KV_OK) {
        return m->keys == 0 && m->parts == 0;
    }
    return m->parts > 0 && m->parts <= MSG_HANDOFF_PARTS_MAX;
}

int msg_handoff_digest_answer_encode(const struct msg_handoff_digest_answer *m, struct buf *out)
{
    struct msg_handoff_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;
    int rc;

    if (m->status > MSG_KV_STATUS_MAX || !msg_handoff_digest_answer_ok(m)) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_handoff_write);
    rc = msgpack_pack_array(&pk, MSG_HANDOFF_DIGEST_ANSWER_FIELDS) ||
         msgpack_pack_uint32(&pk, m->status) || msgpack_pack_uint64(&pk, m->keys) ||
         msgpack_pack_array(&pk, m->parts);
    for (uint32_t i = 0; i < m->parts && rc == 0; i++) {
        rc = msg_handoff_pack_bin(&pk, true, m->digests[i], MSG_HANDOFF_DIGEST_LEN);
    }
    return msg_handoff_finish(&s, start, rc);
}

int msg_handoff_done_encode(const struct msg_handoff_done *m, struct buf *out)
{
    struct msg_handoff_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    msgpack_packer_init(&pk, &s, msg_handoff_write);
    return msg_handoff_finish(&s, start,
                              msgpack_pack_array(&pk, MSG_HANDOFF_DONE_FIELDS) ||
                                  msg_handoff_pack_arc(&pk, m->target, m->start, m->end) ||
                                  msgpack_pack_uint64(&pk, m->keys) ||
                                  msgpack_pack_uint64(&pk, m->bytes));
}

int msg_handoff_done_answer_encode(const struct msg_handoff_done_answer *m, struct buf *out)
{
    struct msg_handoff_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (m->status > MSG_KV_STATUS_MAX) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_handoff_write);
    return msg_handoff_finish(&s, start,
                              msgpack_pack_array(&pk, MSG_HANDOFF_DONE_ANSWER_FIELDS) ||
                                  msgpack_pack_uint32(&pk, m->status));
}

/* --- decoding ------------------------------------------------------------------ */

static int msg_handoff_fail(struct mp_reader *r, int err)
{
    if (r->err == 0) {
        r->err = err;
    }
    return r->err;
}

/* An array head of at least fields elements, at most MSG_HANDOFF_FIELDS_MAX; *n is how many. */
static int msg_handoff_record(struct mp_reader *r, size_t fields, size_t *n)
{
    if (mp_read_array(r, MSG_HANDOFF_FIELDS_MAX, n) != 0) {
        return r->err;
    }
    return *n < fields ? msg_handoff_fail(r, RK_ESYNTAX) : 0;
}

/* Skip the n - fields elements after the known ones. */
static int msg_handoff_skip(struct mp_reader *r, size_t n, size_t fields)
{
    for (size_t i = fields; i < n && r->err == 0; i++) {
        mp_skip(r, MSG_HANDOFF_SKIP_DEPTH);
    }
    return r->err;
}

/* The head of a body or answer: the reader over in[0..len), the array of at least fields. */
static int msg_handoff_head(struct mp_reader *r, const uint8_t *in, size_t len, size_t fields,
                            size_t *n)
{
    mp_reader_init(r, in, len);
    return msg_handoff_record(r, fields, n);
}

/* Skip the fields after the known ones and require the end of the input. */
static int msg_handoff_end(struct mp_reader *r, size_t n, size_t fields)
{
    msg_handoff_skip(r, n, fields);
    if (r->err == 0 && !mp_done(r)) {
        r->err = RK_ESYNTAX;
    }
    return r->err;
}

/* A uint of at least min and at most max: under, RK_ESYNTAX; over, RK_ETOOBIG. */
static int msg_handoff_read_num(struct mp_reader *r, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;

    *out = 0;
    if (mp_read_uint(r, &v) != 0) {
        return r->err;
    }
    if (v > max || v < min) {
        return msg_handoff_fail(r, v > max ? RK_ETOOBIG : RK_ESYNTAX);
    }
    *out = v;
    return 0;
}

static int msg_handoff_read_u32(struct mp_reader *r, uint64_t min, uint64_t max, uint32_t *out)
{
    uint64_t v = 0;
    int rc = msg_handoff_read_num(r, min, max, &v);

    *out = (uint32_t)v;
    return rc;
}

/* A bin of min .. max bytes (under: RK_ESYNTAX; over: RK_ETOOBIG). */
static int msg_handoff_read_bin(struct mp_reader *r, size_t min, size_t max, const uint8_t **p,
                                size_t *len)
{
    if (mp_read_bin(r, max, p, len) != 0) {
        return r->err;
    }
    return *len < min ? msg_handoff_fail(r, RK_ESYNTAX) : 0;
}

/* A storage key, or nil (*present false). */
static int msg_handoff_read_skey(struct mp_reader *r, bool *present, const uint8_t **p, size_t *len)
{
    *present = false;
    if (mp_peek_nil(r)) {
        return mp_read_nil(r);
    }
    *present = true;
    return msg_handoff_read_bin(r, MSG_HANDOFF_SKEY_MIN, MSG_HANDOFF_SKEY_MAX, p, len);
}

/* The arc fields every body starts with. */
static int msg_handoff_read_arc(struct mp_reader *r, uint64_t *target, uint64_t *start,
                                uint64_t *end)
{
    mp_read_uint(r, target);
    mp_read_uint(r, start);
    return mp_read_uint(r, end);
}

int msg_handoff_pull_decode(const uint8_t *in, size_t len, struct msg_handoff_pull *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_handoff_head(&r, in, len, MSG_HANDOFF_PULL_FIELDS, &n) == 0) {
        msg_handoff_read_arc(&r, &m->target, &m->start, &m->end);
        msg_handoff_read_skey(&r, &m->has_after, &m->after, &m->after_len);
        msg_handoff_read_num(&r, 1, MSG_HANDOFF_BYTES_MAX, &m->max_bytes);
        if (n > MSG_HANDOFF_PULL_FIELDS) { /* max_items, optional */
            msg_handoff_read_u32(&r, 1, MSG_HANDOFF_ITEMS_MAX, &m->max_items);
        }
        msg_handoff_end(&r, n, MSG_HANDOFF_PULL_FIELDS + (n > MSG_HANDOFF_PULL_FIELDS));
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

/* One item, [key, record, ...]. */
static int msg_handoff_read_item(struct mp_reader *r, struct msg_handoff_item *it)
{
    size_t n = 0;

    if (msg_handoff_record(r, MSG_HANDOFF_ITEM_FIELDS, &n) != 0) {
        return r->err;
    }
    msg_handoff_read_bin(r, 0, MSG_HANDOFF_KEY_MAX, &it->key, &it->key_len);
    msg_handoff_read_bin(r, 1, MSG_HANDOFF_BYTES_MAX, &it->record, &it->record_len);
    return msg_handoff_skip(r, n, MSG_HANDOFF_ITEM_FIELDS);
}

/* A pull answer's items into items[0 .. cap): the count is checked against cap first. */
static int msg_handoff_read_items(struct mp_reader *r, struct msg_handoff_item *items, size_t cap,
                                  size_t *n)
{
    size_t count = 0;

    if (mp_read_array(r, MSG_HANDOFF_ITEMS_MAX, &count) != 0) {
        return r->err;
    }
    if (count > cap) {
        return msg_handoff_fail(r, RK_ETOOBIG);
    }
    for (size_t i = 0; i < count && r->err == 0; i++) {
        msg_handoff_read_item(r, &items[i]);
    }
    *n = r->err == 0 ? count : 0;
    return r->err;
}

int msg_handoff_pull_answer_decode(const uint8_t *in, size_t len, struct msg_handoff_pull_answer *m,
                                   struct msg_handoff_item *items, size_t cap)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_handoff_head(&r, in, len, MSG_HANDOFF_PULL_ANSWER_FIELDS, &n) == 0) {
        msg_handoff_read_u32(&r, 0, MSG_KV_STATUS_MAX, &m->status);
        msg_handoff_read_items(&r, items, cap, &m->n_items);
        mp_read_bool(&r, &m->done);
        msg_handoff_read_skey(&r, &m->has_next, &m->next, &m->next_len);
        if (r.err == 0 && !msg_handoff_pull_answer_ok(m)) {
            r.err = RK_ESYNTAX;
        }
        msg_handoff_end(&r, n, MSG_HANDOFF_PULL_ANSWER_FIELDS);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    m->items = r.err == 0 ? items : NULL;
    return r.err;
}

int msg_handoff_digest_decode(const uint8_t *in, size_t len, struct msg_handoff_digest *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_handoff_head(&r, in, len, MSG_HANDOFF_DIGEST_FIELDS, &n) == 0) {
        msg_handoff_read_arc(&r, &m->target, &m->start, &m->end);
        msg_handoff_read_u32(&r, 1, MSG_HANDOFF_PARTS_MAX, &m->parts);
        if (n > MSG_HANDOFF_DIGEST_FIELDS && r.err == 0) { /* count_only, optional */
            mp_read_bool(&r, &m->count_only);
        }
        msg_handoff_end(&r, n, MSG_HANDOFF_DIGEST_FIELDS + (n > MSG_HANDOFF_DIGEST_FIELDS));
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

/* The digests of an answer, each a bin of exactly MSG_HANDOFF_DIGEST_LEN bytes, copied. */
static int msg_handoff_read_digests(struct mp_reader *r, struct msg_handoff_digest_answer *m)
{
    size_t count = 0;
    const uint8_t *p;
    size_t got;

    if (mp_read_array(r, MSG_HANDOFF_PARTS_MAX, &count) != 0) {
        return r->err;
    }
    for (size_t i = 0; i < count && r->err == 0; i++) {
        if (msg_handoff_read_bin(r, MSG_HANDOFF_DIGEST_LEN, MSG_HANDOFF_DIGEST_LEN, &p, &got) ==
            0) {
            memcpy(m->digests[i], p, MSG_HANDOFF_DIGEST_LEN);
        }
    }
    m->parts = r->err == 0 ? (uint32_t)count : 0;
    return r->err;
}

int msg_handoff_digest_answer_decode(const uint8_t *in, size_t len,
                                     struct msg_handoff_digest_answer *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_handoff_head(&r, in, len, MSG_HANDOFF_DIGEST_ANSWER_FIELDS, &n) == 0) {
        msg_handoff_read_u32(&r, 0, MSG_KV_STATUS_MAX, &m->status);
        mp_read_uint(&r, &m->keys);
        msg_handoff_read_digests(&r, m);
        if (r.err == 0 && !msg_handoff_digest_answer_ok(m)) {
            r.err = RK_ESYNTAX;
        }
        msg_handoff_end(&r, n, MSG_HANDOFF_DIGEST_ANSWER_FIELDS);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

int msg_handoff_done_decode(const uint8_t *in, size_t len, struct msg_handoff_done *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_handoff_head(&r, in, len, MSG_HANDOFF_DONE_FIELDS, &n) == 0) {
        msg_handoff_read_arc(&r, &m->target, &m->start, &m->end);
        mp_read_uint(&r, &m->keys);
        mp_read_uint(&r, &m->bytes);
        msg_handoff_end(&r, n, MSG_HANDOFF_DONE_FIELDS);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

int msg_handoff_done_answer_decode(const uint8_t *in, size_t len, struct msg_handoff_done_answer *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_handoff_head(&r, in, len, MSG_HANDOFF_DONE_ANSWER_FIELDS, &n) == 0) {
        msg_handoff_read_u32(&r, 0, MSG_KV_STATUS_MAX, &m->status);
        msg_handoff_end(&r, n, MSG_HANDOFF_DONE_ANSWER_FIELDS);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}
