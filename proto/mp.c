/*
 * mp.c - the bounded msgpack reader (mp.h).
 *
 * Every read starts with the value's head: its type byte and, for the
 * types that have one, the big-endian length, count or value that follows
 * it.  The fix forms carry their value in the type byte itself; the other
 * 32 type bytes, 0xc0 .. 0xdf, are described by mp_tags[] (how wide the
 * following field is and what it means), so there is one table to check
 * against the msgpack specification and no switch over type bytes.
 *
 * Invariants: pos never passes len, and nothing is read before the bytes
 * are known to be there.  A count or length is compared with the caller's
 * maximum (RK_ETOOBIG) and then with the bytes left (RK_ESYNTAX: a string
 * longer than the input, or more array elements than bytes, since every
 * element takes at least one byte) before it is returned, so a caller that
 * loops over a count or copies a string is bounded by the input it holds.
 * mp_skip() recurses at most depth_max levels and every step consumes a
 * byte, so it runs in time linear in the input.
 */
#include "mp.h"

#include <string.h>

#include "error.h"

enum mp_kind {
    MP_INVALID = 0,
    MP_NIL,
    MP_BOOL,
    MP_UINT,
    MP_INT,
    MP_FLOAT,
    MP_STR,
    MP_BIN,
    MP_EXT,
    MP_ARRAY,
    MP_MAP,
};

/* One type byte of 0xc0 .. 0xdf: the field after it and what it holds. */
struct mp_tag {
    uint8_t kind;  /* enum mp_kind */
    uint8_t width; /* bytes of the length, count or value after the type byte */
    uint8_t fixed; /* for fixext: bytes of data (after its ext type byte) */
};

#define MP_TAG_FIRST 0xc0
static const struct mp_tag mp_tags[32] = {
    [0xc0 - MP_TAG_FIRST] = {MP_NIL, 0, 0},   [0xc1 - MP_TAG_FIRST] = {MP_INVALID, 0, 0},
    [0xc2 - MP_TAG_FIRST] = {MP_BOOL, 0, 0},  [0xc3 - MP_TAG_FIRST] = {MP_BOOL, 0, 0},
    [0xc4 - MP_TAG_FIRST] = {MP_BIN, 1, 0},   [0xc5 - MP_TAG_FIRST] = {MP_BIN, 2, 0},
    [0xc6 - MP_TAG_FIRST] = {MP_BIN, 4, 0},   [0xc7 - MP_TAG_FIRST] = {MP_EXT, 1, 0},
    [0xc8 - MP_TAG_FIRST] = {MP_EXT, 2, 0},   [0xc9 - MP_TAG_FIRST] = {MP_EXT, 4, 0},
    [0xca - MP_TAG_FIRST] = {MP_FLOAT, 4, 0}, [0xcb - MP_TAG_FIRST] = {MP_FLOAT, 8, 0},
    [0xcc - MP_TAG_FIRST] = {MP_UINT, 1, 0},  [0xcd - MP_TAG_FIRST] = {MP_UINT, 2, 0},
    [0xce - MP_TAG_FIRST] = {MP_UINT, 4, 0},  [0xcf - MP_TAG_FIRST] = {MP_UINT, 8, 0},
    [0xd0 - MP_TAG_FIRST] = {MP_INT, 1, 0},   [0xd1 - MP_TAG_FIRST] = {MP_INT, 2, 0},
    [0xd2 - MP_TAG_FIRST] = {MP_INT, 4, 0},   [0xd3 - MP_TAG_FIRST] = {MP_INT, 8, 0},
    [0xd4 - MP_TAG_FIRST] = {MP_EXT, 0, 1},   [0xd5 - MP_TAG_FIRST] = {MP_EXT, 0, 2},
    [0xd6 - MP_TAG_FIRST] = {MP_EXT, 0, 4},   [0xd7 - MP_TAG_FIRST] = {MP_EXT, 0, 8},
    [0xd8 - MP_TAG_FIRST] = {MP_EXT, 0, 16},  [0xd9 - MP_TAG_FIRST] = {MP_STR, 1, 0},
    [0xda - MP_TAG_FIRST] = {MP_STR, 2, 0},   [0xdb - MP_TAG_FIRST] = {MP_STR, 4, 0},
    [0xdc - MP_TAG_FIRST] = {MP_ARRAY, 2, 0}, [0xdd - MP_TAG_FIRST] = {MP_ARRAY, 4, 0},
    [0xde - MP_TAG_FIRST] = {MP_MAP, 2, 0},   [0xdf - MP_TAG_FIRST] = {MP_MAP, 4, 0},
};

/*
 * A decoded head.  u is the value of a uint, the length of a str, bin or
 * ext, the count of an array or map, 0/1 for a bool; i is an int's value.
 */
struct mp_head {
    enum mp_kind kind;
    uint64_t u;
    int64_t i;
};

void mp_reader_init(struct mp_reader *r, const void *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->err = 0;
}

static int mp_fail(struct mp_reader *r, int err)
{
    if (r->err == 0) {
        r->err = err;
    }
    return r->err;
}

static size_t mp_left(const struct mp_reader *r)
{
    return r->len - r->pos;
}

/* Read width (0, 1, 2, 4 or 8) bytes as a big-endian unsigned integer. */
static uint64_t mp_take_be(struct mp_reader *r, unsigned width)
{
    uint64_t v = 0;

    for (unsigned k = 0; k < width; k++) {
        v = v << 8 | r->p[r->pos + k];
    }
    r->pos += width;
    return v;
}

/* The value of a width-byte two's-complement integer held in v. */
static int64_t mp_sign_extend(uint64_t v, unsigned width)
{
    if (width < 8 && (v >> (8 * width - 1)) != 0) {
        v |= ~(uint64_t)0 << (8 * width);
    }
    return (int64_t)v;
}

/* The head of a fix form (the value is in the type byte); false for 0xc0 .. 0xdf. */
static bool mp_fix_head(uint8_t tag, struct mp_head *h)
{
    if (tag <= 0x7f) {
        *h = (struct mp_head){MP_UINT, tag, 0};
    } else if (tag <= 0x8f) {
        *h = (struct mp_head){MP_MAP, tag & 0x0fu, 0};
    } else if (tag <= 0x9f) {
        *h = (struct mp_head){MP_ARRAY, tag & 0x0fu, 0};
    } else if (tag <= 0xbf) {
        *h = (struct mp_head){MP_STR, tag & 0x1fu, 0};
    } else if (tag >= 0xe0) {
        *h = (struct mp_head){MP_INT, 0, (int8_t)tag};
    } else {
        return false;
    }
    return true;
}

/*
 * Read the head of the next value.  For a fixext, u is its data length;
 * its ext type byte is left unread, like the ext type byte of ext 8/16/32.
 */
static int mp_read_head(struct mp_reader *r, struct mp_head *h)
{
    const struct mp_tag *t;
    uint8_t tag;

    memset(h, 0, sizeof(*h));
    if (r->err != 0) {
        return r->err;
    }
    if (mp_left(r) < 1) {
        return mp_fail(r, RK_ESYNTAX);
    }
    tag = r->p[r->pos];
    if (mp_fix_head(tag, h)) {
        r->pos++;
        return 0;
    }
    t = &mp_tags[tag - MP_TAG_FIRST];
    if (t->kind == MP_INVALID || mp_left(r) < 1u + t->width) {
        return mp_fail(r, RK_ESYNTAX);
    }
    r->pos++;
    h->kind = t->kind;
    h->u = t->fixed != 0 ? t->fixed : mp_take_be(r, t->width);
    if (t->kind == MP_INT) {
        h->i = mp_sign_extend(h->u, t->width);
        h->u = 0;
    } else if (t->kind == MP_BOOL) {
        h->u = tag == 0xc3;
    }
    return 0;
}

/* Read a head that must be of kind want. */
static int mp_expect(struct mp_reader *r, enum mp_kind want, struct mp_head *h)
{
    int rc = mp_read_head(r, h);

    if (rc != 0) {
        return rc;
    }
    if (h->kind != want) {
        return mp_fail(r, RK_ESYNTAX);
    }
    return 0;
}

/*
 * Check a count of items of min_bytes each against max and against the
 * bytes left, in that order.
 */
static int mp_check_count(struct mp_reader *r, uint64_t n, size_t max, unsigned min_bytes)
{
    if (n > max) {
        return mp_fail(r, RK_ETOOBIG);
    }
    if (n > mp_left(r) / min_bytes) {
        return mp_fail(r, RK_ESYNTAX);
    }
    return 0;
}

static int mp_read_count(struct mp_reader *r, enum mp_kind kind, size_t max, size_t *n)
{
    struct mp_head h;
    int rc;

    *n = 0;
    rc = mp_expect(r, kind, &h);
    if (rc == 0) {
        rc = mp_check_count(r, h.u, max, kind == MP_MAP ? 2 : 1);
    }
    if (rc == 0) {
        *n = (size_t)h.u;
    }
    return rc;
}

int mp_read_array(struct mp_reader *r, size_t max, size_t *n)
{
    return mp_read_count(r, MP_ARRAY, max, n);
}

int mp_read_map(struct mp_reader *r, size_t max, size_t *n)
{
    return mp_read_count(r, MP_MAP, max, n);
}

int mp_read_uint(struct mp_reader *r, uint64_t *v)
{
    struct mp_head h;
    int rc = mp_read_head(r, &h);

    *v = 0;
    if (rc != 0) {
        return rc;
    }
    if (h.kind == MP_UINT) {
        *v = h.u;
    } else if (h.kind == MP_INT && h.i >= 0) {
        *v = (uint64_t)h.i;
    } else {
        return mp_fail(r, RK_ESYNTAX);
    }
    return 0;
}

int mp_read_int(struct mp_reader *r, int64_t *v)
{
    struct mp_head h;
    int rc = mp_read_head(r, &h);

    *v = 0;
    if (rc != 0) {
        return rc;
    }
    if (h.kind == MP_INT) {
        *v = h.i;
    } else if (h.kind != MP_UINT) {
        return mp_fail(r, RK_ESYNTAX);
    } else if (h.u > INT64_MAX) {
        return mp_fail(r, RK_ETOOBIG);
    } else {
        *v = (int64_t)h.u;
    }
    return 0;
}

int mp_read_bool(struct mp_reader *r, bool *v)
{
    struct mp_head h;
    int rc = mp_expect(r, MP_BOOL, &h);

    *v = rc == 0 && h.u != 0;
    return rc;
}

int mp_read_nil(struct mp_reader *r)
{
    struct mp_head h;

    return mp_expect(r, MP_NIL, &h);
}

bool mp_peek_nil(const struct mp_reader *r)
{
    return r->err == 0 && r->pos < r->len && r->p[r->pos] == 0xc0;
}

static int mp_read_bytes(struct mp_reader *r, enum mp_kind kind, size_t max, const uint8_t **p,
                         size_t *len)
{
    struct mp_head h;
    int rc;

    *p = NULL;
    *len = 0;
    rc = mp_expect(r, kind, &h);
    if (rc == 0) {
        rc = mp_check_count(r, h.u, max, 1);
    }
    if (rc != 0) {
        return rc;
    }
    *p = r->p + r->pos;
    *len = (size_t)h.u;
    r->pos += *len;
    return 0;
}

int mp_read_str(struct mp_reader *r, size_t max, const uint8_t **p, size_t *len)
{
    return mp_read_bytes(r, MP_STR, max, p, len);
}

int mp_read_bin(struct mp_reader *r, size_t max, const uint8_t **p, size_t *len)
{
    return mp_read_bytes(r, MP_BIN, max, p, len);
}

/* Skip the payload of a str, bin or ext whose head was just read. */
static int mp_skip_payload(struct mp_reader *r, const struct mp_head *h)
{
    uint64_t n = h->u + (h->kind == MP_EXT ? 1 : 0);

    if (n > mp_left(r)) {
        return mp_fail(r, RK_ESYNTAX);
    }
    r->pos += (size_t)n;
    return 0;
}

/* Skip the elements of an array or map whose head was just read. */
static int mp_skip_items(struct mp_reader *r, const struct mp_head *h, int depth_max)
{
    unsigned per = h->kind == MP_MAP ? 2 : 1;
    uint64_t items;
    int rc;

    if (depth_max < 1) {
        return mp_fail(r, RK_ETOOBIG);
    }
    rc = mp_check_count(r, h->u, SIZE_MAX, per);
    items = h->u * per;
    for (uint64_t k = 0; rc == 0 && k < items; k++) {
        rc = mp_skip(r, depth_max - 1);
    }
    return rc;
}

int mp_skip(struct mp_reader *r, int depth_max)
{
    struct mp_head h;
    int rc = mp_read_head(r, &h);

    if (rc != 0) {
        return rc;
    }
    if (h.kind == MP_STR || h.kind == MP_BIN || h.kind == MP_EXT) {
        return mp_skip_payload(r, &h);
    }
    if (h.kind == MP_ARRAY || h.kind == MP_MAP) {
        return mp_skip_items(r, &h, depth_max);
    }
    return 0;
}

bool mp_done(const struct mp_reader *r)
{
    return r->err == 0 && r->pos == r->len;
}
