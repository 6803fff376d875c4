/*
 * msg.c - encoding and decoding of the node-to-node messages (msg.h).
 *
 * Every message is the msgpack array [type, field 1, field 2, ...] that
 * proto/PROTOCOL.md lays out byte by byte.  Each type has one row in
 * msg_kinds[]: its name, how many fields it has, its encoder and its
 * decoder; msg_encode() and msg_decode() only frame the array around the
 * row's functions, so adding a message is adding a row and two functions.
 *
 * Encoding uses msgpack-c's packer, whose output is the smallest form of
 * every value.  Decoding uses the bounded reader of mp.h and allocates
 * nothing: the element count is checked against MSG_FIELDS_MAX, every
 * string against the size of the field it is copied into, and every value
 * is validated (node ids and racks as PLACEMENT.md names, addresses as
 * "host:port") before msg_decode() returns.  Elements after the fields a
 * type defines are skipped, so a newer node may append fields; bytes after
 * the array are an error, since a sealed frame carries exactly one message.
 */
#include "msg.h"

#include <msgpack.h>
#include <string.h>

#include "error.h"
#include "mp.h"

/* Nesting a skipped trailing field may have: room for a list of maps of lists. */
#define MSG_SKIP_DEPTH 8
/* Elements before the fields: the type number. */
#define MSG_HEAD_ELEMENTS 1
/* The largest TCP port number. */
#define MSG_PORT_MAX 65535

/* Where the packer writes: a buffer, and the first error appending to it. */
struct msg_sink {
    struct buf *out;
    int err;
};

struct msg_kind {
    const char *name;
    size_t fields; /* elements after the type that this version reads and writes */
    int (*encode)(msgpack_packer *pk, const struct msg *m);
    int (*decode)(struct mp_reader *r, struct msg *m);
};

static int msg_ident_encode(msgpack_packer *pk, const struct msg *m);
static int msg_ident_decode(struct mp_reader *r, struct msg *m);
static int msg_ping_encode(msgpack_packer *pk, const struct msg *m);
static int msg_ping_decode(struct mp_reader *r, struct msg *m);

static const struct msg_kind msg_kinds[MSG_TYPE_MAX + 1] = {
    [MSG_IDENT] = {"ident", 5, msg_ident_encode, msg_ident_decode},
    [MSG_PING] = {"ping", 2, msg_ping_encode, msg_ping_decode},
    [MSG_PONG] = {"pong", 2, msg_ping_encode, msg_ping_decode},
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

/* --- field validation, shared by encoder and decoder ----------------------- */

static bool msg_port_valid(const char *s, size_t len)
{
    uint32_t port = 0;

    if (len == 0 || len > 5 || s[0] == '0') {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        port = port * 10 + (uint32_t)(s[i] - '0');
    }
    return port <= MSG_PORT_MAX;
}

/*
 * A NUL-terminated "host:port" in a field of cap bytes: printable ASCII
 * without spaces, a non-empty host before the last colon (a name, an IPv4
 * address or a bracketed IPv6 address) and a decimal port 1 .. 65535
 * after it.
 */
static bool msg_addr_valid(const char *s, size_t cap)
{
    size_t len = strnlen(s, cap);
    const char *colon;

    if (len == 0 || len == cap) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] <= ' ' || s[i] > '~') {
            return false;
        }
    }
    colon = memrchr(s, ':', len);
    if (colon == NULL || colon == s) {
        return false;
    }
    return msg_port_valid(colon + 1, len - (size_t)(colon - s) - 1);
}

/* A NUL-terminated node id or rack name in a field of cap bytes. */
static bool msg_name_valid(const char *s, size_t cap)
{
    size_t len = strnlen(s, cap);

    return len < cap && ring_name_valid(s, len);
}

static bool msg_ident_valid(const struct msg_ident *id)
{
    return msg_name_valid(id->id, sizeof(id->id)) && msg_name_valid(id->rack, sizeof(id->rack)) &&
           msg_addr_valid(id->peer_addr, sizeof(id->peer_addr)) &&
           msg_addr_valid(id->client_addr, sizeof(id->client_addr));
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

static int msg_pack_cstr(msgpack_packer *pk, const char *s)
{
    size_t len = strlen(s);
    int rc = msgpack_pack_str(pk, len);

    return rc != 0 ? rc : msgpack_pack_str_body(pk, s, len);
}

static int msg_ident_encode(msgpack_packer *pk, const struct msg *m)
{
    const struct msg_ident *id = &m->u.ident;

    if (!msg_ident_valid(id)) {
        return RK_EINVAL;
    }
    if (msg_pack_cstr(pk, id->id) != 0 || msg_pack_cstr(pk, id->rack) != 0 ||
        msgpack_pack_uint32(pk, id->version) != 0 || msg_pack_cstr(pk, id->peer_addr) != 0 ||
        msg_pack_cstr(pk, id->client_addr) != 0) {
        return RK_ENOMEM;
    }
    return 0;
}

static int msg_ping_encode(msgpack_packer *pk, const struct msg *m)
{
    if (msgpack_pack_uint64(pk, m->u.ping.seq) != 0 ||
        msgpack_pack_uint64(pk, m->u.ping.sent_ms) != 0) {
        return RK_ENOMEM;
    }
    return 0;
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
    if (rc != 0) {
        out->len = start;
        return sink.err != 0 ? sink.err : rc;
    }
    return 0;
}

/* --- decoding -------------------------------------------------------------- */

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
        r->err = RK_ESYNTAX;
        return r->err;
    }
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

static int msg_ident_decode(struct mp_reader *r, struct msg *m)
{
    struct msg_ident *id = &m->u.ident;
    uint64_t version = 0;

    msg_read_cstr(r, id->id, sizeof(id->id));
    msg_read_cstr(r, id->rack, sizeof(id->rack));
    mp_read_uint(r, &version);
    msg_read_cstr(r, id->peer_addr, sizeof(id->peer_addr));
    msg_read_cstr(r, id->client_addr, sizeof(id->client_addr));
    if (r->err != 0) {
        return r->err;
    }
    if (version > UINT32_MAX) {
        return RK_ETOOBIG;
    }
    id->version = (uint32_t)version;
    return msg_ident_valid(id) ? 0 : RK_ESYNTAX;
}

static int msg_ping_decode(struct mp_reader *r, struct msg *m)
{
    mp_read_uint(r, &m->u.ping.seq);
    return mp_read_uint(r, &m->u.ping.sent_ms);
}

/* Skip the elements after the known fields: a newer sender's additions. */
static int msg_skip_rest(struct mp_reader *r, size_t n)
{
    for (size_t i = 0; i < n && r->err == 0; i++) {
        mp_skip(r, MSG_SKIP_DEPTH);
    }
    return r->err;
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
    if (*n - MSG_HEAD_ELEMENTS < (*k)->fields) {
        return RK_ESYNTAX;
    }
    out->type = (enum msg_type)type;
    return 0;
}

int msg_decode(const uint8_t *in, size_t len, struct msg *out)
{
    const struct msg_kind *k;
    struct mp_reader r;
    size_t n = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    mp_reader_init(&r, in, len);
    rc = msg_decode_head(&r, &n, &k, out);
    if (rc == 0) {
        rc = k->decode(&r, out);
    }
    if (rc == 0) {
        rc = msg_skip_rest(&r, n - MSG_HEAD_ELEMENTS - k->fields);
    }
    if (rc == 0 && !mp_done(&r)) {
        rc = RK_ESYNTAX;
    }
    if (rc != 0) {
        memset(out, 0, sizeof(*out));
    }
    return rc;
}
