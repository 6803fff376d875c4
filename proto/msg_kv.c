/*
 * msg_kv.c - the bodies of the data operations of peer requests (msg_kv.h).
 *
 * Each body is a msgpack array whose first elements are the fields below,
 * in PROTOCOL.md section 7.15's order; a decoder requires at least those
 * and skips any that follow (a later version's additions).
 */
#include "msg_kv.h"

#include <msgpack.h>
#include <string.h>

#include "error.h"
#include "mp.h"

#define MSG_KV_FIELDS_MAX 64
#define MSG_KV_SKIP_DEPTH 8
#define MSG_REPLICA_WRITE_FIELDS 3
#define MSG_REPLICA_READ_FIELDS 1
#define MSG_FORWARD_FIELDS 6
/* FORWARD's optional expiry fields, after from and digest (PROTOCOL.md 7.15) */
#define MSG_FORWARD_EXPIRY_FIELDS 2
/* FORWARD's optional hop count, after the expiry fields */
#define MSG_FORWARD_HOPS_FIELDS 1
#define MSG_KV_ANSWER_FIELDS 5
/* Fields a part adds: `from` and `digest` to a read, `first`, `next`, `digest` to an answer. */
#define MSG_KV_ASK_PART_FIELDS 2
#define MSG_KV_ANSWER_PART_FIELDS 3

/* --- statuses ---------------------------------------------------------------- */

uint32_t msg_kv_status_from_rk(int rc)
{
    switch (rc) {
    case 0:
        return MSG_KV_OK;
    case RK_ENOTFOUND:
        return MSG_KV_NOTFOUND;
    case RK_ENOREPLICAS:
        return MSG_KV_NOREPLICAS;
    case RK_ETRYAGAIN:
        return MSG_KV_TRYAGAIN;
    case RK_ENOSPC:
        return MSG_KV_FULL;
    case RK_EDISK:
        return MSG_KV_DISK;
    case RK_EMISMATCH:
        return MSG_KV_CONFLICT;
    case RK_ECONTEXT:
        return MSG_KV_CONTEXT;
    case RK_ETOOBIG:
        return MSG_KV_TOOBIG;
    case RK_ECLOSED:
        return MSG_KV_CLOSED;
    case RK_ESYNTAX:
        return MSG_KV_BADINPUT;
    case RK_ECLOCKFULL:
        return MSG_KV_CLOCKFULL;
    default:
        return MSG_KV_FAILED;
    }
}

int msg_kv_status_to_rk(uint32_t status)
{
    static const int rk[MSG_KV_ANSWER_STATUS_MAX + 1] = {
        [MSG_KV_OK] = 0,
        [MSG_KV_NOTFOUND] = RK_ENOTFOUND,
        [MSG_KV_NOREPLICAS] = RK_ENOREPLICAS,
        [MSG_KV_TRYAGAIN] = RK_ETRYAGAIN,
        [MSG_KV_FULL] = RK_ENOSPC,
        [MSG_KV_DISK] = RK_EDISK,
        [MSG_KV_CONFLICT] = RK_EMISMATCH,
        [MSG_KV_CONTEXT] = RK_ECONTEXT,
        [MSG_KV_TOOBIG] = RK_ETOOBIG,
        [MSG_KV_CLOSED] = RK_ECLOSED,
        [MSG_KV_FAILED] = RK_EIO,
        [MSG_KV_BADINPUT] = RK_ESYNTAX,
        [MSG_KV_CLOCKFULL] = RK_ECLOCKFULL,
        [MSG_KV_NOTMINE] = RK_ETRYAGAIN,
    };

    return status <= MSG_KV_ANSWER_STATUS_MAX ? rk[status] : RK_EIO;
}

/* --- encoding ------------------------------------------------------------------ */

struct msg_kv_sink {
    struct buf *out;
    int err;
};

static int msg_kv_write(void *data, const char *p, size_t len)
{
    struct msg_kv_sink *s = data;
    int rc = buf_append(s->out, p, len);

    if (rc != 0 && s->err == 0) {
        s->err = rc;
    }
    return rc;
}

/* Bytes as a bin, or nil when p is NULL. */
static int msg_kv_pack_bin(msgpack_packer *pk, const uint8_t *p, size_t len)
{
    if (p == NULL) {
        return msgpack_pack_nil(pk);
    }
    return msgpack_pack_bin(pk, len) != 0 ? -1 : msgpack_pack_bin_body(pk, p, len);
}

/* A node id, or nil when s is empty. */
static int msg_kv_pack_id(msgpack_packer *pk, const char *s)
{
    size_t len = strlen(s);

    if (len == 0) {
        return msgpack_pack_nil(pk);
    }
    return msgpack_pack_str(pk, len) != 0 ? -1 : msgpack_pack_str_body(pk, s, len);
}

/* Finish an encoding begun when out held start bytes: undo it on error. */
static int msg_kv_finish(struct msg_kv_sink *s, size_t start, int packed)
{
    if (packed == 0 && s->err == 0) {
        return 0;
    }
    s->out->len = start;
    return s->err != 0 ? s->err : RK_ENOMEM;
}

static bool msg_kv_key_ok(const uint8_t *key, size_t len)
{
    return key != NULL && len <= MSG_KV_KEY_MAX;
}

/* A read's part fields: none without part; from within the siblings a record holds. */
static bool msg_kv_ask_part_ok(bool part, uint32_t from, uint64_t digest)
{
    return part ? from < MSG_KV_SIBLINGS_MAX : from == 0 && digest == 0;
}

/* A read's `from` and `digest`, when it takes parts. */
static int msg_kv_pack_ask_part(msgpack_packer *pk, bool part, uint32_t from, uint64_t digest)
{
    if (!part) {
        return 0;
    }
    return msgpack_pack_uint32(pk, from) || msgpack_pack_uint64(pk, digest);
}

int msg_replica_write_encode(const struct msg_replica_write *m, struct buf *out)
{
    struct msg_kv_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;
    size_t hint_len = strnlen(m->hint, sizeof(m->hint));

    if (!msg_kv_key_ok(m->key, m->key_len) || m->record == NULL || m->record_len == 0 ||
        m->record_len > MSG_KV_BYTES_MAX || hint_len == sizeof(m->hint) ||
        (hint_len > 0 && !ring_name_valid(m->hint, hint_len))) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_kv_write);
    return msg_kv_finish(&s, start,
                         msgpack_pack_array(&pk, MSG_REPLICA_WRITE_FIELDS) ||
                             msg_kv_pack_bin(&pk, m->key, m->key_len) ||
                             msg_kv_pack_bin(&pk, m->record, m->record_len) ||
                             msg_kv_pack_id(&pk, m->hint));
}

int msg_replica_read_encode(const struct msg_replica_read *m, struct buf *out)
{
    struct msg_kv_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (!msg_kv_key_ok(m->key, m->key_len) || !msg_kv_ask_part_ok(m->part, m->from, m->digest)) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_kv_write);
    return msg_kv_finish(
        &s, start,
        msgpack_pack_array(&pk, MSG_REPLICA_READ_FIELDS + (m->part ? MSG_KV_ASK_PART_FIELDS : 0)) ||
            msg_kv_pack_bin(&pk, m->key, m->key_len) ||
            msg_kv_pack_ask_part(&pk, m->part, m->from, m->digest));
}

/* The expiry fields of a forward: only on a write of a value, the rule known. */
static bool msg_forward_expiry_ok(const struct msg_forward *m)
{
    if (m->expiry == 0 && m->expire_ms == 0) {
        return true;
    }
    return m->kind == MSG_FORWARD_WRITE && !m->tombstone && m->expiry <= MSG_FORWARD_EXPIRY_MAX;
}

/*
 * A write's expiry fields, after from and digest (0: a write is never in
 * parts), and the hop count after them; each only when it or a later one
 * is sent.
 */
static int msg_forward_pack_expiry(msgpack_packer *pk, const struct msg_forward *m)
{
    if (m->expiry == 0 && m->expire_ms == 0 && m->hops == 0) {
        return 0;
    }
    if (m->kind == MSG_FORWARD_WRITE &&
        (msgpack_pack_uint32(pk, 0) || msgpack_pack_uint64(pk, 0))) {
        return -1;
    }
    return msgpack_pack_uint32(pk, m->expiry) || msgpack_pack_uint64(pk, m->expire_ms) ||
           (m->hops != 0 && msgpack_pack_uint32(pk, m->hops));
}

int msg_forward_encode(const struct msg_forward *m, struct buf *out)
{
    struct msg_kv_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;
    bool write = m->kind == MSG_FORWARD_WRITE;
    bool expiry = m->expiry != 0 || m->expire_ms != 0 || m->hops != 0; /* fields 8, 9 sent */

    if (m->kind > MSG_FORWARD_KIND_MAX || !msg_kv_key_ok(m->key, m->key_len) ||
        m->value_len > MSG_KV_BYTES_MAX || m->context_len > MSG_KV_BYTES_MAX ||
        (write && !m->tombstone && m->value == NULL && m->value_len > 0) ||
        (m->tombstone && m->value_len > 0) || m->quorum > RING_RF_MAX ||
        !msg_kv_ask_part_ok(m->part, m->from, m->digest) || (write && m->part) ||
        !msg_forward_expiry_ok(m) || m->hops > MSG_FORWARD_HOPS_MAX ||
        (m->hops != 0 && !write && !m->part)) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_kv_write);
    return msg_kv_finish(
        &s, start,
        msgpack_pack_array(&pk, MSG_FORWARD_FIELDS +
                                    (m->part || expiry ? MSG_KV_ASK_PART_FIELDS : 0) +
                                    (expiry ? MSG_FORWARD_EXPIRY_FIELDS : 0) +
                                    (m->hops != 0 ? MSG_FORWARD_HOPS_FIELDS : 0)) ||
            msgpack_pack_uint32(&pk, m->kind) || msg_kv_pack_bin(&pk, m->key, m->key_len) ||
            msg_kv_pack_bin(
                &pk, write && !m->tombstone ? (m->value ? m->value : (const uint8_t *)"") : NULL,
                m->value_len) ||
            (m->tombstone ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk)) ||
            msg_kv_pack_bin(&pk, write ? m->context : NULL, m->context_len) ||
            msgpack_pack_uint32(&pk, m->quorum) ||
            msg_kv_pack_ask_part(&pk, m->part, m->from, m->digest) ||
            msg_forward_pack_expiry(&pk, m));
}

/*
 * An answer's part fields: none without part; with it, a record of status
 * ok, siblings first .. next - 1 (next 0: to the end), and a digest.
 */
static bool msg_kv_answer_part_ok(const struct msg_kv_answer *m)
{
    if (!m->part) {
        return m->first == 0 && m->next == 0 && m->digest == 0;
    }
    return m->status == MSG_KV_OK && m->record != NULL && m->digest != 0 &&
           m->first < MSG_KV_SIBLINGS_MAX && m->next < MSG_KV_SIBLINGS_MAX &&
           (m->next == 0 || m->next > m->first);
}

int msg_kv_answer_encode(const struct msg_kv_answer *m, struct buf *out)
{
    struct msg_kv_sink s = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (m->status > MSG_KV_ANSWER_STATUS_MAX || m->answered > RING_RF_MAX ||
        m->needed > RING_RF_MAX || m->record_len > MSG_KV_BYTES_MAX ||
        (m->record != NULL && m->status != MSG_KV_OK) || !msg_kv_answer_part_ok(m)) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &s, msg_kv_write);
    return msg_kv_finish(
        &s, start,
        msgpack_pack_array(&pk, MSG_KV_ANSWER_FIELDS + (m->part ? MSG_KV_ANSWER_PART_FIELDS : 0)) ||
            msgpack_pack_uint32(&pk, m->status) || msgpack_pack_uint32(&pk, m->answered) ||
            msgpack_pack_uint32(&pk, m->needed) || msg_kv_pack_bin(&pk, m->record, m->record_len) ||
            (m->flag ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk)) ||
            (m->part && (msgpack_pack_uint32(&pk, m->first) || msgpack_pack_uint32(&pk, m->next) ||
                         msgpack_pack_uint64(&pk, m->digest))));
}

/* --- decoding ------------------------------------------------------------------ */

static int msg_kv_fail(struct mp_reader *r, int err)
{
    if (r->err == 0) {
        r->err = err;
    }
    return r->err;
}

/* The array head of a body with at least fields elements; *n is how many. */
static int msg_kv_head(struct mp_reader *r, const uint8_t *in, size_t len, size_t fields, size_t *n)
{
    mp_reader_init(r, in, len);
    if (mp_read_array(r, MSG_KV_FIELDS_MAX, n) != 0) {
        return r->err;
    }
    return *n < fields ? msg_kv_fail(r, RK_ESYNTAX) : 0;
}

/* Skip the fields after the known ones and require the end of the input. */
static int msg_kv_end(struct mp_reader *r, size_t extra)
{
    for (size_t i = 0; i < extra && r->err == 0; i++) {
        mp_skip(r, MSG_KV_SKIP_DEPTH);
    }
    if (r->err == 0 && !mp_done(r)) {
        r->err = RK_ESYNTAX;
    }
    return r->err;
}

/* A bin, or nil (*p NULL). */
static int msg_kv_read_opt_bin(struct mp_reader *r, size_t max, const uint8_t **p, size_t *len)
{
    *p = NULL;
    *len = 0;
    if (mp_peek_nil(r)) {
        return mp_read_nil(r);
    }
    return mp_read_bin(r, max, p, len);
}

static int msg_kv_read_key(struct mp_reader *r, const uint8_t **p, size_t *len)
{
    return mp_read_bin(r, MSG_KV_KEY_MAX, p, len);
}

static int msg_kv_read_u32(struct mp_reader *r, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;

    *out = 0;
    if (mp_read_uint(r, &v) != 0) {
        return r->err;
    }
    if (v > max) {
        return msg_kv_fail(r, RK_ETOOBIG);
    }
    *out = (uint32_t)v;
    return 0;
}

/* A uint64. */
static int msg_kv_read_u64(struct mp_reader *r, uint64_t *out)
{
    *out = 0;
    return mp_read_uint(r, out);
}

/*
 * A read's part fields, those of the avail fields left that are there:
 * `from` makes it a read in parts; `digest` defaults to 0.  Returns the
 * fields read.
 */
static size_t msg_kv_read_ask_part(struct mp_reader *r, size_t avail, bool *part, uint32_t *from,
                                   uint64_t *digest)
{
    if (avail == 0) {
        return 0;
    }
    *part = true;
    msg_kv_read_u32(r, MSG_KV_SIBLINGS_MAX - 1, from);
    if (avail == 1) {
        return 1;
    }
    msg_kv_read_u64(r, digest);
    return MSG_KV_ASK_PART_FIELDS;
}

/* A node id, or nil (out ""). */
static int msg_kv_read_id(struct mp_reader *r, char *out, size_t cap)
{
    const uint8_t *p;
    size_t len;

    out[0] = '\0';
    if (mp_peek_nil(r)) {
        return mp_read_nil(r);
    }
    if (mp_read_str(r, cap - 1, &p, &len) != 0) {
        return r->err;
    }
    if (!ring_name_valid((const char *)p, len) || memchr(p, '\0', len) != NULL) {
        return msg_kv_fail(r, RK_ESYNTAX);
    }
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

int msg_replica_write_decode(const uint8_t *in, size_t len, struct msg_replica_write *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_kv_head(&r, in, len, MSG_REPLICA_WRITE_FIELDS, &n) == 0) {
        msg_kv_read_key(&r, &m->key, &m->key_len);
        mp_read_bin(&r, MSG_KV_BYTES_MAX, &m->record, &m->record_len);
        msg_kv_read_id(&r, m->hint, sizeof(m->hint));
        if (r.err == 0 && m->record_len == 0) {
            r.err = RK_ESYNTAX;
        }
        msg_kv_end(&r, n - MSG_REPLICA_WRITE_FIELDS);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

int msg_replica_read_decode(const uint8_t *in, size_t len, struct msg_replica_read *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_kv_head(&r, in, len, MSG_REPLICA_READ_FIELDS, &n) == 0) {
        msg_kv_read_key(&r, &m->key, &m->key_len);
        n -= MSG_REPLICA_READ_FIELDS;
        n -= msg_kv_read_ask_part(&r, n, &m->part, &m->from, &m->digest);
        msg_kv_end(&r, n);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

/* A forward's fields must agree: a read carries no value; a write a value or a tombstone. */
static bool msg_forward_coherent(const struct msg_forward *m)
{
    if (m->kind == MSG_FORWARD_READ) {
        return m->value == NULL && !m->tombstone && m->context == NULL && msg_forward_expiry_ok(m);
    }
    return (m->value == NULL) == m->tombstone && m->from == 0 && m->digest == 0 &&
           msg_forward_expiry_ok(m);
}

int msg_forward_decode(const uint8_t *in, size_t len, struct msg_forward *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_kv_head(&r, in, len, MSG_FORWARD_FIELDS, &n) == 0) {
        msg_kv_read_u32(&r, MSG_FORWARD_KIND_MAX, &m->kind);
        msg_kv_read_key(&r, &m->key, &m->key_len);
        msg_kv_read_opt_bin(&r, MSG_KV_BYTES_MAX, &m->value, &m->value_len);
        mp_read_bool(&r, &m->tombstone);
        msg_kv_read_opt_bin(&r, MSG_KV_BYTES_MAX, &m->context, &m->context_len);
        msg_kv_read_u32(&r, RING_RF_MAX, &m->quorum);
        n -= MSG_FORWARD_FIELDS;
        n -= msg_kv_read_ask_part(&r, n, &m->part, &m->from, &m->digest);
        if (n >= MSG_FORWARD_EXPIRY_FIELDS) {
            msg_kv_read_u32(&r, MSG_FORWARD_EXPIRY_MAX, &m->expiry);
            msg_kv_read_u64(&r, &m->expire_ms);
            n -= MSG_FORWARD_EXPIRY_FIELDS;
            if (n >= MSG_FORWARD_HOPS_FIELDS) {
                msg_kv_read_u32(&r, MSG_FORWARD_HOPS_MAX, &m->hops);
                n -= MSG_FORWARD_HOPS_FIELDS;
            }
        }
        if (r.err == 0 && !msg_forward_coherent(m)) {
            r.err = RK_ESYNTAX;
        }
        m->part = m->part && m->kind == MSG_FORWARD_READ; /* a write's are 0 and mean nothing */
        msg_kv_end(&r, n);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}

int msg_kv_answer_decode(const uint8_t *in, size_t len, struct msg_kv_answer *m)
{
    struct mp_reader r;
    size_t n = 0;

    memset(m, 0, sizeof(*m));
    if (msg_kv_head(&r, in, len, MSG_KV_ANSWER_FIELDS, &n) == 0) {
        msg_kv_read_u32(&r, MSG_KV_ANSWER_STATUS_MAX, &m->status);
        msg_kv_read_u32(&r, RING_RF_MAX, &m->answered);
        msg_kv_read_u32(&r, RING_RF_MAX, &m->needed);
        msg_kv_read_opt_bin(&r, MSG_KV_BYTES_MAX, &m->record, &m->record_len);
        mp_read_bool(&r, &m->flag);
        n -= MSG_KV_ANSWER_FIELDS;
        if (n > 0 && n < MSG_KV_ANSWER_PART_FIELDS) {
            msg_kv_fail(&r, RK_ESYNTAX); /* a part's fields come together */
        } else if (n > 0) {
            m->part = true;
            msg_kv_read_u32(&r, MSG_KV_SIBLINGS_MAX - 1, &m->first);
            msg_kv_read_u32(&r, MSG_KV_SIBLINGS_MAX - 1, &m->next);
            msg_kv_read_u64(&r, &m->digest);
            n -= MSG_KV_ANSWER_PART_FIELDS;
        }
        if (r.err == 0 &&
            ((m->record != NULL && m->status != MSG_KV_OK) || !msg_kv_answer_part_ok(m))) {
            r.err = RK_ESYNTAX;
        }
        msg_kv_end(&r, n);
    }
    if (r.err != 0) {
        memset(m, 0, sizeof(*m));
    }
    return r.err;
}
