/*
 * msg.c - encoding and decoding of the node-to-node messages (msg.h).
 *
 * Every message is the msgpack array [type, field 1, field 2, ...];
 * proto/PROTOCOL.md section 7 lays each one out byte by byte, with its
 * bounds and an example.  In short:
 *
 *   IDENT   [1, id str, rack str, version uint, peer_addr str, client_addr str,
 *            proto uint, cluster, instance uint, frame_max uint]
 *   PING    [2, seq uint, sent_ms uint, generation uint, version uint]
 *   PONG    [3, seq uint, sent_ms uint]
 *   SYN     [4, epoch uint, digest uint, complete bool, [digest, ...]]
 *   ACK     [5, [entry, ...], [id str, ...]]
 *   ACK2    [6, [entry, ...]]
 *   REQUEST [7, id uint, op uint, body]
 *   RESPONSE [8, id uint, result uint, body]
 *   digest  [id str, generation uint, version uint]
 *   entry   [id str, rack str, tokens uint, peer_addr str, client_addr str,
 *            status uint, generation uint, version uint, instance bin,
 *            ring_version uint, digest uint, target uint,
 *            target_tokens uint]
 *   cluster [rf uint, conflicts str, ring_seed bin 16], or nil
 *   CREDIT  [9, grant uint, window uint]                       (version 2)
 *   BULK    [10, seq uint, data bin]                           (version 2)
 *
 * IDENT's proto and cluster came with message-set version 2: a version-1
 * IDENT ends at client_addr, and decodes as proto 1 without cluster
 * settings.  Its instance was appended later within message set 2 (it
 * needs no new version: earlier nodes skip it); absent, it decodes as 0.
 * Its frame_max (the largest frame the sender reads) was appended the same
 * way within message set 3; absent, it decodes as 0, not announced.
 * An entry's target (the target ring's digest) was appended the same way;
 * an entry of 11 fields decodes with target 0, not told.  Its
 * target_tokens (a token count the member moves to) after it: absent, 0.
 * PING's generation and version (the sender's heartbeat) were appended the
 * same way; absent, they decode as 0, and a PONG never carries them.
 *
 *   STATUS answer (a RESPONSE's body)
 *           [id str, status uint, epoch uint, digest uint, converged bool,
 *            up_count uint, members uint, uptime_s uint, keys uint]
 *
 * A request's or response's body is one msgpack value of any type, nested
 * at most MSG_SKIP_DEPTH deep; the decoder walks it once (bounded, mp.h)
 * and copies its bytes, so what it allocates is never more than the
 * message itself.
 *
 * A SYN carries at most MSG_GOSSIP_DIGESTS_MAX digests and an ACK as many
 * requested ids; an ACK or ACK2 at most MSG_GOSSIP_ENTRIES_MAX entries.  A
 * member list on its own (msg_members_encode(), the data directory's copy
 * of the member table) is a bare array of entries.
 *
 * Each type has one row in msg_kinds[]: its name, the message-set version
 * that introduced it, how many fields its first form had (a receiver
 * requires those) and how many this version writes, its encoder, its
 * decoder and what releases its decoded lists; msg_encode(), msg_decode()
 * and msg_free() only frame the array around the row's functions, so
 * adding a message is adding a row and its functions.
 *
 * Encoding uses msgpack-c's packer, whose output is the smallest form of
 * every value, and refuses what a decoder would refuse: invalid fields
 * (RK_EINVAL) and lists over their bounds (RK_ETOOBIG).  Decoding uses the
 * bounded reader of mp.h.  Element counts are checked against
 * MSG_FIELDS_MAX, strings against the field they are copied into, and
 * every value is validated (node ids and racks as PLACEMENT.md names,
 * addresses as "host:port", entries by msg_member_valid()) before
 * msg_decode() returns.  The gossip lists are the only allocations: a
 * list's count is checked against its bound and then against the bytes
 * left, at the smallest encoding of one item (MSG_*_MIN_BYTES below),
 * before the array is allocated.  What a message makes the decoder
 * allocate is then bounded twice: by the list bounds (about 70 KB for an
 * ACK at both) and by its own size (a requested id of 2 bytes becomes an
 * 88-byte struct msg_digest, the worst ratio), so a small message never
 * gets a large array.  On any error what was allocated is freed and the
 * message is left zeroed.
 *
 * Elements after the fields a message, an entry or a digest defines are
 * skipped, so a newer node may append fields; bytes after the message are
 * an error, since a sealed frame carries exactly one message.
 */
#include "msg.h"

#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "error.h"
#include "frame.h"
#include "mp.h"

/* Nesting a skipped trailing field may have: room for a list of maps of lists. */
#define MSG_SKIP_DEPTH 8
/* Elements before the fields: the type number. */
#define MSG_HEAD_ELEMENTS 1
/* Bytes of a member's instance: a random 128-bit value. */
#define MSG_INSTANCE_LEN sizeof(((struct msg_member *)0)->instance)
/*
 * Fields of a member entry: those every entry has (target and
 * target_tokens came later: an entry of 11 fields decodes with both 0, one
 * of 12 with target_tokens 0), and those this version writes.  Fields of a
 * digest.
 */
#define MSG_MEMBER_V1_FIELDS 11
#define MSG_MEMBER_FIELDS 13
#define MSG_DIGEST_FIELDS 3
#define MSG_CLUSTER_FIELDS 3
/* IDENT's fields in message-set version 1, and with those appended since: proto, cluster,
 * instance, frame_max. */
#define MSG_IDENT_V1_FIELDS 5
#define MSG_IDENT_FIELDS 9
/*
 * The smallest encoding of a list item, for checking a list's count
 * against the bytes left.  An entry: fixarray head 1, id and rack 2 each
 * (one character), tokens 1, two addresses 4 each ("h:1"), status,
 * generation and version 1 each, instance 18 (bin 8 of 16 bytes),
 * ring_version and digest 1 each, no target (an entry of 11 fields, which
 * is still read).  A digest: head 1, id 2, two uints 1
 * each.  A requested id: 2.
 */
#define MSG_MEMBER_MIN_BYTES 37
#define MSG_DIGEST_MIN_BYTES 5
#define MSG_ID_MIN_BYTES 2

/* Where the packer writes: a buffer, and the first error appending to it. */
struct msg_sink {
    struct buf *out;
    int err;
};

struct msg_kind {
    const char *name;
    uint32_t since;  /* the message-set version that introduced the type */
    size_t required; /* fields of the type's first form: fewer is malformed */
    size_t fields;   /* fields after the type that this version writes, and reads when present */
    int (*encode)(msgpack_packer *pk, const struct msg *m);
    /* present: the fields the array holds, at least required; read at most fields of them */
    int (*decode)(struct mp_reader *r, size_t present, struct msg *m);
    void (*release)(struct msg *m); /* frees what decode allocated; NULL: nothing */
};

static int msg_ident_encode(msgpack_packer *pk, const struct msg *m);
static int msg_ident_decode(struct mp_reader *r, size_t present, struct msg *m);
static int msg_ping_encode(msgpack_packer *pk, const struct msg *m);
static int msg_ping_decode(struct mp_reader *r, size_t present, struct msg *m);
static int msg_syn_encode(msgpack_packer *pk, const struct msg *m);
static int msg_syn_decode(struct mp_reader *r, size_t present, struct msg *m);
static void msg_syn_release(struct msg *m);
static int msg_ack_encode(msgpack_packer *pk, const struct msg *m);
static int msg_ack_decode(struct mp_reader *r, size_t present, struct msg *m);
static int msg_ack2_encode(msgpack_packer *pk, const struct msg *m);
static int msg_ack2_decode(struct mp_reader *r, size_t present, struct msg *m);
static void msg_entries_release(struct msg *m);
static int msg_credit_encode(msgpack_packer *pk, const struct msg *m);
static int msg_credit_decode(struct mp_reader *r, size_t present, struct msg *m);
static int msg_bulk_encode(msgpack_packer *pk, const struct msg *m);
static int msg_bulk_decode(struct mp_reader *r, size_t present, struct msg *m);
static int msg_request_encode(msgpack_packer *pk, const struct msg *m);
static int msg_request_decode(struct mp_reader *r, size_t present, struct msg *m);
static void msg_request_release(struct msg *m);

static const struct msg_kind msg_kinds[MSG_TYPE_MAX + 1] = {
    [MSG_IDENT] = {"ident", 1, MSG_IDENT_V1_FIELDS, MSG_IDENT_FIELDS, msg_ident_encode,
                   msg_ident_decode, NULL},
    [MSG_PING] = {"ping", 1, 2, 4, msg_ping_encode, msg_ping_decode, NULL},
    [MSG_PONG] = {"pong", 1, 2, 2, msg_ping_encode, msg_ping_decode, NULL},
    [MSG_GOSSIP_SYN] = {"gossip_syn", 1, 4, 4, msg_syn_encode, msg_syn_decode, msg_syn_release},
    [MSG_GOSSIP_ACK] = {"gossip_ack", 1, 2, 2, msg_ack_encode, msg_ack_decode, msg_entries_release},
    [MSG_GOSSIP_ACK2] = {"gossip_ack2", 1, 1, 1, msg_ack2_encode, msg_ack2_decode,
                         msg_entries_release},
    [MSG_REQUEST] = {"request", 2, 3, 3, msg_request_encode, msg_request_decode,
                     msg_request_release},
    [MSG_RESPONSE] = {"response", 2, 3, 3, msg_request_encode, msg_request_decode,
                      msg_request_release},
    [MSG_CREDIT] = {"credit", 2, 2, 2, msg_credit_encode, msg_credit_decode, NULL},
    [MSG_BULK] = {"bulk", 2, 2, 2, msg_bulk_encode, msg_bulk_decode, NULL},
    [MSG_BULK_RESPONSE] = {"bulk_response", 4, 3, 3, msg_request_encode, msg_request_decode,
                           msg_request_release},
};

static const char *const msg_op_names[MSG_OP_MAX + 1] = {
    [MSG_OP_STATUS] = "status",
    [MSG_OP_REPLICA_WRITE] = "replica_write",
    [MSG_OP_REPLICA_READ] = "replica_read",
    [MSG_OP_FORWARD] = "forward",
    [MSG_OP_HINTS_HELD] = "hints_held",
    [MSG_OP_REPLICA_REAP] = "replica_reap",
    [MSG_OP_HANDOFF_PULL] = "handoff_pull",
    [MSG_OP_HANDOFF_DIGEST] = "handoff_digest",
    [MSG_OP_HANDOFF_DONE] = "handoff_done",
};

static const struct msg_kind *msg_kind_find(uint64_t type)
{
    if (type > MSG_TYPE_MAX || msg_kinds[type].name == NULL) {
        return NULL;
    }
    return &msg_kinds[type];
}

const char *msg_type_name(int type)
{
    const struct msg_kind *k = type < 0 ? NULL : msg_kind_find((uint64_t)type);

    return k == NULL ? "unknown" : k->name;
}

bool msg_type_known(int type, uint32_t proto)
{
    const struct msg_kind *k = type < 0 ? NULL : msg_kind_find((uint64_t)type);

    return k != NULL && k->since <= proto;
}

const char *msg_op_name(uint32_t op)
{
    return op <= MSG_OP_MAX && msg_op_names[op] != NULL ? msg_op_names[op] : "unknown";
}

/* --- field validation, shared by encoder and decoder ----------------------- */

/*
 * A NUL-terminated "host:port" in a field of cap bytes, by addr.h's rules,
 * and in the one spelling addr_format() writes, so that two members'
 * addresses compare as text (a bracketed IPv6 address in its canonical
 * form, a port without leading zeros).
 */
static bool msg_addr_valid(const char *s, size_t cap)
{
    size_t len = strnlen(s, cap);
    char text[ADDR_TEXT_MAX];
    struct addr a;

    return len < cap && addr_parse(s, len, 0, &a, NULL) == 0 &&
           addr_format(text, sizeof(text), a.host, a.port) == 0 && strcmp(text, s) == 0;
}

/* A NUL-terminated node id or rack name in a field of cap bytes. */
static bool msg_name_valid(const char *s, size_t cap)
{
    size_t len = strnlen(s, cap);

    return len < cap && ring_name_valid(s, len);
}

bool msg_cluster_valid(const struct msg_cluster *c)
{
    size_t len = strnlen(c->conflicts, sizeof(c->conflicts));

    if (c->rf == 0 || len == 0 || len == sizeof(c->conflicts)) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = c->conflicts[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) {
            return false;
        }
    }
    return true;
}

/* The message-set version is at least 1. */
static bool msg_ident_valid(const struct msg_ident *id)
{
    return msg_name_valid(id->id, sizeof(id->id)) && msg_name_valid(id->rack, sizeof(id->rack)) &&
           msg_addr_valid(id->peer_addr, sizeof(id->peer_addr)) &&
           msg_addr_valid(id->client_addr, sizeof(id->client_addr)) && id->proto >= MSG_PROTO_V1 &&
           (!id->has_cluster || msg_cluster_valid(&id->cluster)) &&
           (id->frame_max == 0 || id->frame_max >= FRAME_MAX_MIN);
}

bool msg_member_valid(const struct msg_member *e)
{
    return msg_name_valid(e->id, sizeof(e->id)) && msg_name_valid(e->rack, sizeof(e->rack)) &&
           e->tokens >= RING_TOKENS_MIN && e->tokens <= RING_TOKENS_MAX &&
           e->target_tokens <= RING_TOKENS_MAX && e->status <= MSG_MEMBER_STATUS_MAX &&
           msg_addr_valid(e->peer_addr, sizeof(e->peer_addr)) &&
           msg_addr_valid(e->client_addr, sizeof(e->client_addr));
}

/* --- encoding -------------------------------------------------------------- */

static int msg_sink_write(void *data, const char *p, size_t len)
{
    struct msg_sink *s = data;
    int rc = buf_append(s->out, p, len);

    if (rc != 0 && s->err == 0) {
        s->err = rc;
    }
    return rc;
}

/*
 * End an encoding that started when the buffer held start bytes: on error,
 * drop what was appended and report the buffer's error (RK_ETOOBIG from a
 * bounded buffer, RK_ENOMEM) before the encoder's own.
 */
static int msg_sink_finish(struct msg_sink *sink, size_t start, int rc)
{
    if (rc == 0) {
        return 0;
    }
    sink->out->len = start;
    return sink->err != 0 ? sink->err : rc;
}

static int msg_pack_cstr(msgpack_packer *pk, const char *s)
{
    size_t len = strlen(s);
    int rc = msgpack_pack_str(pk, len);

    return rc != 0 ? rc : msgpack_pack_str_body(pk, s, len);
}

/* IDENT's cluster settings: [rf, conflicts, ring_seed], or nil when it has none. */
static int msg_cluster_encode(msgpack_packer *pk, const struct msg_ident *id)
{
    const struct msg_cluster *c = &id->cluster;

    if (!id->has_cluster) {
        return msgpack_pack_nil(pk);
    }
    if (msgpack_pack_array(pk, MSG_CLUSTER_FIELDS) != 0 || msgpack_pack_uint32(pk, c->rf) != 0 ||
        msg_pack_cstr(pk, c->conflicts) != 0 || msgpack_pack_bin(pk, sizeof(c->ring_seed)) != 0 ||
        msgpack_pack_bin_body(pk, c->ring_seed, sizeof(c->ring_seed)) != 0) {
        return RK_ENOMEM;
    }
    return 0;
}

static int msg_ident_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_ident *id = &m->u.ident;

    if (!msg_ident_valid(id)) {
        return RK_EINVAL;
    }
    if (msg_pack_cstr(pk, id->id) != 0 || msg_pack_cstr(pk, id->rack) != 0 ||
        msgpack_pack_uint32(pk, id->version) != 0 || msg_pack_cstr(pk, id->peer_addr) != 0 ||
        msg_pack_cstr(pk, id->client_addr) != 0 || msgpack_pack_uint32(pk, id->proto) != 0 ||
        msg_cluster_encode(pk, id) != 0 || msgpack_pack_uint64(pk, id->instance) != 0 ||
        msgpack_pack_uint32(pk, id->frame_max) != 0) {
        return RK_ENOMEM;
    }
    return 0;
}

/* PING and PONG: seq and sent_ms; a PING then its sender's heartbeat (msg.h). */
static int msg_ping_encode(msgpack_packer *pk, const struct msg *m)
{
    if (msgpack_pack_uint64(pk, m->u.ping.seq) != 0 ||
        msgpack_pack_uint64(pk, m->u.ping.sent_ms) != 0) {
        return RK_ENOMEM;
    }
    if (m->type == MSG_PING && (msgpack_pack_uint64(pk, m->u.ping.generation) != 0 ||
                                msgpack_pack_uint64(pk, m->u.ping.version) != 0)) {
        return RK_ENOMEM;
    }
    return 0;
}

/* A list the caller gave: at most max items (RK_ETOOBIG), and an array if any. */
static int msg_list_check(const void *items, size_t n, size_t max)
{
    if (n > max) {
        return RK_ETOOBIG;
    }
    return n > 0 && items == NULL ? RK_EINVAL : 0;
}

/* One entry, validated first: the fields a decoder would refuse are RK_EINVAL. */
static int msg_member_encode(msgpack_packer *pk, const struct msg_member *e)
{
    if (!msg_member_valid(e)) {
        return RK_EINVAL;
    }
    if (msgpack_pack_array(pk, MSG_MEMBER_FIELDS) != 0 || msg_pack_cstr(pk, e->id) != 0 ||
        msg_pack_cstr(pk, e->rack) != 0 || msgpack_pack_uint32(pk, e->tokens) != 0 ||
        msg_pack_cstr(pk, e->peer_addr) != 0 || msg_pack_cstr(pk, e->client_addr) != 0 ||
        msgpack_pack_uint32(pk, e->status) != 0 || msgpack_pack_uint64(pk, e->generation) != 0 ||
        msgpack_pack_uint64(pk, e->version) != 0 || msgpack_pack_bin(pk, MSG_INSTANCE_LEN) != 0 ||
        msgpack_pack_bin_body(pk, e->instance, MSG_INSTANCE_LEN) != 0 ||
        msgpack_pack_uint64(pk, e->ring_version) != 0 || msgpack_pack_uint64(pk, e->digest) != 0 ||
        msgpack_pack_uint64(pk, e->target) != 0 || msgpack_pack_uint32(pk, e->target_tokens) != 0) {
        return RK_ENOMEM;
    }
    return 0;
}

static int msg_entries_encode(msgpack_packer *pk, const struct msg_member *e, size_t n, size_t max)
{
    int rc = msg_list_check(e, n, max);

    if (rc != 0) {
        return rc;
    }
    if (msgpack_pack_array(pk, n) != 0) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = msg_member_encode(pk, &e[i]);
    }
    return rc;
}

/* One digest, [id, generation, version], or with id_only its bare id. */
static int msg_digest_encode(msgpack_packer *pk, const struct msg_digest *d, bool id_only)
{
    if (!msg_name_valid(d->id, sizeof(d->id))) {
        return RK_EINVAL;
    }
    if (id_only) {
        return msg_pack_cstr(pk, d->id) != 0 ? RK_ENOMEM : 0;
    }
    if (msgpack_pack_array(pk, MSG_DIGEST_FIELDS) != 0 || msg_pack_cstr(pk, d->id) != 0 ||
        msgpack_pack_uint64(pk, d->generation) != 0 || msgpack_pack_uint64(pk, d->version) != 0) {
        return RK_ENOMEM;
    }
    return 0;
}

/* A list of digests, or with ids_only of their bare ids (an ACK's requests). */
static int msg_digests_encode(msgpack_packer *pk, const struct msg_digest *d, size_t n,
                              bool ids_only)
{
    int rc = msg_list_check(d, n, MSG_GOSSIP_DIGESTS_MAX);

    if (rc != 0) {
        return rc;
    }
    if (msgpack_pack_array(pk, n) != 0) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = msg_digest_encode(pk, &d[i], ids_only);
    }
    return rc;
}

static int msg_syn_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_gossip_syn *s = &m->u.syn;

    if (msgpack_pack_uint64(pk, s->epoch) != 0 || msgpack_pack_uint64(pk, s->digest) != 0 ||
        (s->complete ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) != 0) {
        return RK_ENOMEM;
    }
    return msg_digests_encode(pk, s->digests, s->n, false);
}

static int msg_ack_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_gossip_entries *a = &m->u.entries;
    int rc = msg_entries_encode(pk, a->entries, a->n, MSG_GOSSIP_ENTRIES_MAX);

    return rc != 0 ? rc : msg_digests_encode(pk, a->requests, a->n_requests, true);
}

/* An ACK2 answers requests and makes none: requests given for one are RK_EINVAL. */
static int msg_ack2_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_gossip_entries *a = &m->u.entries;

    if (a->n_requests != 0) {
        return RK_EINVAL;
    }
    return msg_entries_encode(pk, a->entries, a->n, MSG_GOSSIP_ENTRIES_MAX);
}

/* A credit's window is 1 .. MSG_CREDIT_WINDOW_MAX and holds its grant. */
static bool msg_credit_valid(const struct msg_credit *c)
{
    return c->window >= 1 && c->window <= MSG_CREDIT_WINDOW_MAX && c->grant <= c->window;
}

static int msg_credit_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_credit *c = &m->u.credit;

    if (!msg_credit_valid(c)) {
        return RK_EINVAL;
    }
    if (msgpack_pack_uint64(pk, c->grant) != 0 || msgpack_pack_uint64(pk, c->window) != 0) {
        return RK_ENOMEM;
    }
    return 0;
}

static int msg_bulk_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_bulk *b = &m->u.bulk;

    if (b->len > MSG_BULK_DATA_MAX) {
        return RK_ETOOBIG;
    }
    if (b->len > 0 && b->data == NULL) {
        return RK_EINVAL;
    }
    if (msgpack_pack_uint64(pk, b->seq) != 0 || msgpack_pack_bin(pk, b->len) != 0 ||
        (b->len > 0 && msgpack_pack_bin_body(pk, b->data, b->len) != 0)) {
        return RK_ENOMEM;
    }
    return 0;
}

/* Whether body[0..len) is exactly one msgpack value a decoder takes (nested at most
 * MSG_SKIP_DEPTH). */
static bool msg_body_valid(const uint8_t *body, size_t len)
{
    struct mp_reader r;

    mp_reader_init(&r, body, len);
    mp_skip(&r, MSG_SKIP_DEPTH);
    return mp_done(&r);
}

/* REQUEST and RESPONSE: id, code, then the body as it is (nil when empty). */
static int msg_request_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_request *q = &m->u.request;

    if (q->id == 0 ||
        (q->body_len > 0 &&
         (q->body == NULL || (!q->body_made && !msg_body_valid(q->body, q->body_len))))) {
        return RK_EINVAL;
    }
    if (msgpack_pack_uint64(pk, q->id) != 0 || msgpack_pack_uint32(pk, q->code) != 0) {
        return RK_ENOMEM;
    }
    if (q->body_len == 0) {
        return msgpack_pack_nil(pk) != 0 ? RK_ENOMEM : 0;
    }
    return pk->callback(pk->data, (const char *)q->body, q->body_len) != 0 ? RK_ENOMEM : 0;
}

int msg_encode(const struct msg *m, struct buf *out)
{
    const struct msg_kind *k = msg_kind_find((uint64_t)m->type);
    struct msg_sink sink = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;
    int rc;

    if (k == NULL) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &sink, msg_sink_write);
    rc = RK_ENOMEM;
    if (msgpack_pack_array(&pk, MSG_HEAD_ELEMENTS + k->fields) == 0 &&
        msgpack_pack_uint32(&pk, (uint32_t)m->type) == 0) {
        rc = k->encode(&pk, m);
    }
    return msg_sink_finish(&sink, start, rc);
}

int msg_members_encode(const struct msg_member *e, size_t n, struct buf *out)
{
    struct msg_sink sink = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;

    if (n > UINT32_MAX) {
        return RK_ETOOBIG;
    }
    msgpack_packer_init(&pk, &sink, msg_sink_write);
    return msg_sink_finish(&sink, start, msg_entries_encode(&pk, e, n, n));
}

/* --- decoding -------------------------------------------------------------- */

/* Make err the reader's error unless it has one; returns the reader's error. */
static int msg_fail(struct mp_reader *r, int err)
{
    if (r->err == 0) {
        r->err = err;
    }
    return r->err;
}

/*
 * Copy a str of at most cap-1 bytes into out, NUL-terminated.  A NUL byte
 * inside it is an error: the copy would silently be a shorter string.
 */
static int msg_read_cstr(struct mp_reader *r, char *out, size_t cap)
{
    const uint8_t *p;
    size_t len;
    int rc = mp_read_str(r, cap - 1, &p, &len);

    if (rc != 0) {
        return rc;
    }
    if (memchr(p, '\0', len) != NULL) {
        return msg_fail(r, RK_ESYNTAX);
    }
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

/* A node id or rack name into a field of cap bytes. */
static int msg_read_name(struct mp_reader *r, char *out, size_t cap)
{
    if (msg_read_cstr(r, out, cap) != 0) {
        return r->err;
    }
    return msg_name_valid(out, cap) ? 0 : msg_fail(r, RK_ESYNTAX);
}

/* A uint of at most max into *out; RK_ETOOBIG over it. */
static int msg_read_uint32(struct mp_reader *r, uint32_t max, uint32_t *out)
{
    uint64_t v;

    if (mp_read_uint(r, &v) != 0) {
        return r->err;
    }
    if (v > max) {
        return msg_fail(r, RK_ETOOBIG);
    }
    *out = (uint32_t)v;
    return 0;
}

/*
 * seq and sent_ms; then, for a PING that has them, generation and version
 * (a PONG's kind reads two fields: anything after them is skipped).
 */
static int msg_ping_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    mp_read_uint(r, &m->u.ping.seq);
    mp_read_uint(r, &m->u.ping.sent_ms);
    if (m->type == MSG_PING && present > 2) {
        mp_read_uint(r, &m->u.ping.generation);
    }
    if (m->type == MSG_PING && present > 3) {
        mp_read_uint(r, &m->u.ping.version);
    }
    return r->err;
}

/* Skip the elements after the known fields: a newer sender's additions. */
static int msg_skip_rest(struct mp_reader *r, size_t n)
{
    for (size_t i = 0; i < n && r->err == 0; i++) {
        mp_skip(r, MSG_SKIP_DEPTH);
    }
    return r->err;
}

/* The head of an entry or a digest: at least fields elements; *n is how many. */
static int msg_read_record(struct mp_reader *r, size_t fields, size_t *n)
{
    if (mp_read_array(r, MSG_FIELDS_MAX, n) != 0) {
        return r->err;
    }
    return *n < fields ? msg_fail(r, RK_ESYNTAX) : 0;
}

/* A bin of exactly len bytes into out (a member's instance, a ring seed). */
static int msg_read_fixed_bin(struct mp_reader *r, uint8_t *out, size_t len)
{
    const uint8_t *p;
    size_t got;

    if (mp_read_bin(r, len, &p, &got) != 0) {
        return r->err;
    }
    if (got != len) {
        return msg_fail(r, RK_ESYNTAX);
    }
    memcpy(out, p, len);
    return 0;
}

/* The instance: a bin of exactly 16 bytes. */
static int msg_read_instance(struct mp_reader *r, uint8_t *out)
{
    return msg_read_fixed_bin(r, out, MSG_INSTANCE_LEN);
}

/* IDENT's cluster settings: nil (none announced) or [rf, conflicts, ring_seed, ...]. */
static int msg_cluster_decode(struct mp_reader *r, struct msg_ident *id)
{
    struct msg_cluster *c = &id->cluster;
    size_t n;

    if (mp_peek_nil(r)) {
        return mp_read_nil(r);
    }
    if (msg_read_record(r, MSG_CLUSTER_FIELDS, &n) != 0) {
        return r->err;
    }
    msg_read_uint32(r, UINT32_MAX, &c->rf);
    msg_read_cstr(r, c->conflicts, sizeof(c->conflicts));
    msg_read_fixed_bin(r, c->ring_seed, sizeof(c->ring_seed));
    if (r->err == 0 && !msg_cluster_valid(c)) {
        return msg_fail(r, RK_ESYNTAX);
    }
    id->has_cluster = true;
    return msg_skip_rest(r, n - MSG_CLUSTER_FIELDS);
}

/* The five fields of version 1, then proto, cluster, instance and frame_max when the sender
 * wrote them. */
static int msg_ident_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_ident *id = &m->u.ident;

    msg_read_cstr(r, id->id, sizeof(id->id));
    msg_read_cstr(r, id->rack, sizeof(id->rack));
    msg_read_uint32(r, UINT32_MAX, &id->version);
    msg_read_cstr(r, id->peer_addr, sizeof(id->peer_addr));
    msg_read_cstr(r, id->client_addr, sizeof(id->client_addr));
    id->proto = MSG_PROTO_V1;
    if (present > MSG_IDENT_V1_FIELDS) {
        msg_read_uint32(r, UINT32_MAX, &id->proto);
    }
    if (present > MSG_IDENT_V1_FIELDS + 1) {
        msg_cluster_decode(r, id);
    }
    if (present > MSG_IDENT_V1_FIELDS + 2) {
        mp_read_uint(r, &id->instance);
    }
    if (present > MSG_IDENT_V1_FIELDS + 3) {
        msg_read_uint32(r, UINT32_MAX, &id->frame_max);
    }
    if (r->err != 0) {
        return r->err;
    }
    return msg_ident_valid(id) ? 0 : RK_ESYNTAX;
}

/*
 * One entry.  Numbers over their bound (tokens, status) are RK_ETOOBIG as
 * they are read; the other rules of msg_member_valid() are RK_ESYNTAX.  An
 * entry of 11 fields (before target) has target 0, one of 11 or 12 (before
 * target_tokens) target_tokens 0.
 */
static int msg_member_decode(struct mp_reader *r, struct msg_member *e)
{
    size_t n;

    if (msg_read_record(r, MSG_MEMBER_V1_FIELDS, &n) != 0) {
        return r->err;
    }
    msg_read_cstr(r, e->id, sizeof(e->id));
    msg_read_cstr(r, e->rack, sizeof(e->rack));
    msg_read_uint32(r, RING_TOKENS_MAX, &e->tokens);
    msg_read_cstr(r, e->peer_addr, sizeof(e->peer_addr));
    msg_read_cstr(r, e->client_addr, sizeof(e->client_addr));
    msg_read_uint32(r, MSG_MEMBER_STATUS_MAX, &e->status);
    mp_read_uint(r, &e->generation);
    mp_read_uint(r, &e->version);
    msg_read_instance(r, e->instance);
    mp_read_uint(r, &e->ring_version);
    mp_read_uint(r, &e->digest);
    e->target = 0;
    e->target_tokens = 0;
    if (n > MSG_MEMBER_V1_FIELDS) {
        mp_read_uint(r, &e->target);
    }
    if (n > MSG_MEMBER_V1_FIELDS + 1) {
        msg_read_uint32(r, RING_TOKENS_MAX, &e->target_tokens);
    }
    if (r->err == 0 && !msg_member_valid(e)) {
        return msg_fail(r, RK_ESYNTAX);
    }
    return msg_skip_rest(r, n > MSG_MEMBER_FIELDS ? n - MSG_MEMBER_FIELDS : 0);
}

static int msg_digest_decode(struct mp_reader *r, struct msg_digest *d)
{
    size_t n;

    if (msg_read_record(r, MSG_DIGEST_FIELDS, &n) != 0) {
        return r->err;
    }
    msg_read_name(r, d->id, sizeof(d->id));
    mp_read_uint(r, &d->generation);
    mp_read_uint(r, &d->version);
    return msg_skip_rest(r, n - MSG_DIGEST_FIELDS);
}

/*
 * A list head: at most max items (RK_ETOOBIG), and no more than the bytes
 * left hold at min_bytes an item (RK_ESYNTAX).  Both are checked before
 * the caller allocates anything for the list.
 */
static int msg_read_list(struct mp_reader *r, size_t max, size_t min_bytes, size_t *n)
{
    if (mp_read_array(r, max, n) != 0) {
        return r->err;
    }
    if (*n > (r->len - r->pos) / min_bytes) {
        *n = 0;
        return msg_fail(r, RK_ESYNTAX);
    }
    return 0;
}

/* At most max entries into *out, allocated here and the caller's even on error. */
static int msg_entries_decode(struct mp_reader *r, size_t max, struct msg_member **out, size_t *n)
{
    size_t count;
    int rc = msg_read_list(r, max, MSG_MEMBER_MIN_BYTES, &count);

    if (rc != 0 || count == 0) {
        return rc;
    }
    *out = calloc(count, sizeof(**out));
    if (*out == NULL) {
        return RK_ENOMEM;
    }
    *n = count;
    for (size_t i = 0; i < count && rc == 0; i++) {
        rc = msg_member_decode(r, &(*out)[i]);
    }
    return rc;
}

/*
 * At most MSG_GOSSIP_DIGESTS_MAX digests, or with ids_only bare ids, into
 * *out, allocated here and the caller's even on error.
 */
static int msg_digests_decode(struct mp_reader *r, bool ids_only, struct msg_digest **out,
                              size_t *n)
{
    size_t min_bytes = ids_only ? MSG_ID_MIN_BYTES : MSG_DIGEST_MIN_BYTES;
    size_t count;
    int rc = msg_read_list(r, MSG_GOSSIP_DIGESTS_MAX, min_bytes, &count);

    if (rc != 0 || count == 0) {
        return rc;
    }
    *out = calloc(count, sizeof(**out));
    if (*out == NULL) {
        return RK_ENOMEM;
    }
    *n = count;
    for (size_t i = 0; i < count && rc == 0; i++) {
        struct msg_digest *d = &(*out)[i];

        rc = ids_only ? msg_read_name(r, d->id, sizeof(d->id)) : msg_digest_decode(r, d);
    }
    return rc;
}

static int msg_syn_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_gossip_syn *s = &m->u.syn;

    (void)present;
    mp_read_uint(r, &s->epoch);
    mp_read_uint(r, &s->digest);
    if (mp_read_bool(r, &s->complete) != 0) {
        return r->err;
    }
    return msg_digests_decode(r, false, &s->digests, &s->n);
}

static int msg_ack_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_gossip_entries *a = &m->u.entries;
    int rc = msg_entries_decode(r, MSG_GOSSIP_ENTRIES_MAX, &a->entries, &a->n);

    (void)present;
    return rc != 0 ? rc : msg_digests_decode(r, true, &a->requests, &a->n_requests);
}

static int msg_ack2_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_gossip_entries *a = &m->u.entries;

    (void)present;
    return msg_entries_decode(r, MSG_GOSSIP_ENTRIES_MAX, &a->entries, &a->n);
}

/* A window over MSG_CREDIT_WINDOW_MAX is RK_ETOOBIG; a window of 0 or below the grant RK_ESYNTAX.
 */
static int msg_credit_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_credit *c = &m->u.credit;

    (void)present;
    mp_read_uint(r, &c->grant);
    if (mp_read_uint(r, &c->window) != 0) {
        return r->err;
    }
    if (c->window > MSG_CREDIT_WINDOW_MAX) {
        return msg_fail(r, RK_ETOOBIG);
    }
    return msg_credit_valid(c) ? 0 : msg_fail(r, RK_ESYNTAX);
}

/* The data is not copied: it points into the input. */
static int msg_bulk_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_bulk *b = &m->u.bulk;

    (void)present;
    mp_read_uint(r, &b->seq);
    return mp_read_bin(r, MSG_BULK_DATA_MAX, &b->data, &b->len);
}

/* REQUEST and RESPONSE: the body is walked once, then copied. */
static int msg_request_decode(struct mp_reader *r, size_t present, struct msg *m)
{
    struct msg_request *q = &m->u.request;
    uint64_t code;
    size_t start;

    (void)present;
    mp_read_uint(r, &q->id);
    mp_read_uint(r, &code);
    if (r->err != 0) {
        return r->err;
    }
    if (q->id == 0) {
        return msg_fail(r, RK_ESYNTAX); /* ids start at 1 */
    }
    if (code > UINT32_MAX) {
        return msg_fail(r, RK_ETOOBIG);
    }
    q->code = (uint32_t)code;
    start = r->pos;
    if (mp_skip(r, MSG_SKIP_DEPTH) != 0) {
        return r->err;
    }
    q->body = (uint8_t *)(r->p + start); /* borrowed from the decoded bytes: no copy */
    q->body_len = r->pos - start;
    return 0;
}

/* Read the array head and the type; *k is the type's row. */
static int msg_decode_head(struct mp_reader *r, size_t *n, const struct msg_kind **k,
                           struct msg *out)
{
    uint64_t type = 0;

    *k = NULL;
    mp_read_array(r, MSG_FIELDS_MAX, n);
    if (r->err == 0 && *n < MSG_HEAD_ELEMENTS) {
        return RK_ESYNTAX;
    }
    if (mp_read_uint(r, &type) != 0) {
        return r->err;
    }
    *k = msg_kind_find(type);
    if (*k == NULL) {
        return RK_ENOTFOUND;
    }
    if (*n - MSG_HEAD_ELEMENTS < (*k)->required) {
        return RK_ESYNTAX;
    }
    out->type = (enum msg_type)type;
    return 0;
}

int msg_peek_type(const uint8_t *in, size_t len, uint64_t *type)
{
    struct mp_reader r;
    size_t n = 0;

    *type = 0;
    mp_reader_init(&r, in, len);
    if (mp_read_array(&r, MSG_FIELDS_MAX, &n) != 0 || n < MSG_HEAD_ELEMENTS) {
        return RK_ESYNTAX;
    }
    return mp_read_uint(&r, type) != 0 ? RK_ESYNTAX : 0;
}

int msg_frame_next(const uint8_t *in, size_t len, size_t *used)
{
    struct mp_reader r;

    *used = 0;
    mp_reader_init(&r, in, len);
    if (mp_skip(&r, 2 * MSG_SKIP_DEPTH) != 0) {
        return r.err == RK_ETOOBIG ? RK_ETOOBIG : RK_ESYNTAX;
    }
    *used = r.pos;
    return 0;
}

/* msg_decode(), or with used msg_decode_next(): the message at the start of in[0..len). */
static int msg_decode_in(const uint8_t *in, size_t len, struct msg *out, size_t *used)
{
    const struct msg_kind *k;
    struct mp_reader r;
    size_t n = 0, present = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    mp_reader_init(&r, in, len);
    rc = msg_decode_head(&r, &n, &k, out);
    if (rc == 0) {
        present = n - MSG_HEAD_ELEMENTS;
        rc = k->decode(&r, present, out);
    }
    if (rc == 0 && present > k->fields) {
        rc = msg_skip_rest(&r, present - k->fields);
    }
    if (rc == 0 && used == NULL && !mp_done(&r)) {
        rc = RK_ESYNTAX;
    }
    if (rc != 0) {
        msg_free(out);
        memset(out, 0, sizeof(*out));
    }
    if (used != NULL) {
        *used = rc == 0 ? r.pos : 0;
    }
    return rc;
}

int msg_decode(const uint8_t *in, size_t len, struct msg *out)
{
    return msg_decode_in(in, len, out, NULL);
}

int msg_decode_next(const uint8_t *in, size_t len, struct msg *out, size_t *used)
{
    return msg_decode_in(in, len, out, used);
}

int msg_members_decode(const uint8_t *in, size_t len, size_t max, struct msg_member **out,
                       size_t *n)
{
    struct mp_reader r;
    int rc;

    *out = NULL;
    *n = 0;
    mp_reader_init(&r, in, len);
    rc = msg_entries_decode(&r, max, out, n);
    if (rc == 0 && !mp_done(&r)) {
        rc = RK_ESYNTAX;
    }
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* --- the STATUS answer ------------------------------------------------------ */

/* Fields of a STATUS answer that this version reads and writes. */
#define MSG_STATUS_VIEW_FIELDS 9

int msg_status_view_encode(const struct msg_status_view *v, struct buf *out)
{
    struct msg_sink sink = {out, 0};
    size_t start = out->len;
    msgpack_packer pk;
    int rc = RK_ENOMEM;

    if (!msg_name_valid(v->id, sizeof(v->id)) || v->status > MSG_MEMBER_STATUS_MAX ||
        v->up_count > RING_MEMBERS_MAX || v->members > RING_MEMBERS_MAX) {
        return RK_EINVAL;
    }
    msgpack_packer_init(&pk, &sink, msg_sink_write);
    if (msgpack_pack_array(&pk, MSG_STATUS_VIEW_FIELDS) == 0 && msg_pack_cstr(&pk, v->id) == 0 &&
        msgpack_pack_uint32(&pk, v->status) == 0 && msgpack_pack_uint64(&pk, v->epoch) == 0 &&
        msgpack_pack_uint64(&pk, v->digest) == 0 &&
        (v->converged ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk)) == 0 &&
        msgpack_pack_uint32(&pk, v->up_count) == 0 && msgpack_pack_uint32(&pk, v->members) == 0 &&
        msgpack_pack_uint64(&pk, v->uptime_s) == 0 && msgpack_pack_uint64(&pk, v->keys) == 0) {
        rc = 0;
    }
    return msg_sink_finish(&sink, start, rc);
}

int msg_status_view_decode(const uint8_t *in, size_t len, struct msg_status_view *out)
{
    struct mp_reader r;
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    mp_reader_init(&r, in, len);
    if (msg_read_record(&r, MSG_STATUS_VIEW_FIELDS, &n) == 0) {
        msg_read_name(&r, out->id, sizeof(out->id));
        msg_read_uint32(&r, MSG_MEMBER_STATUS_MAX, &out->status);
        mp_read_uint(&r, &out->epoch);
        mp_read_uint(&r, &out->digest);
        mp_read_bool(&r, &out->converged);
        msg_read_uint32(&r, RING_MEMBERS_MAX, &out->up_count);
        msg_read_uint32(&r, RING_MEMBERS_MAX, &out->members);
        mp_read_uint(&r, &out->uptime_s);
        mp_read_uint(&r, &out->keys);
        msg_skip_rest(&r, n - MSG_STATUS_VIEW_FIELDS);
    }
    if (r.err == 0 && !mp_done(&r)) {
        r.err = RK_ESYNTAX;
    }
    if (r.err != 0) {
        memset(out, 0, sizeof(*out));
    }
    return r.err;
}

/* --- releasing ------------------------------------------------------------- */

static void msg_syn_release(struct msg *m)
{
    free(m->u.syn.digests);
    m->u.syn.digests = NULL;
    m->u.syn.n = 0;
}

static void msg_entries_release(struct msg *m)
{
    free(m->u.entries.entries);
    free(m->u.entries.requests);
    m->u.entries.entries = NULL;
    m->u.entries.n = 0;
    m->u.entries.requests = NULL;
    m->u.entries.n_requests = 0;
}

static void msg_request_release(struct msg *m)
{
    m->u.request.body = NULL; /* borrowed (msg_request_decode()) */
    m->u.request.body_len = 0;
}

void msg_free(struct msg *m)
{
    const struct msg_kind *k = msg_kind_find((uint64_t)m->type);

    if (k != NULL && k->release != NULL) {
        k->release(m);
    }
}
