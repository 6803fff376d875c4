/*
 * wal.c - the write-ahead log's format.
 *
 * On-disk layout of the file `wal`, format 1
 * -------------------------------------------
 *   header   8 bytes  "RKWAL\0\0\1" (magic and format)
 *            u64      generation: the meta value "wal_gen" (store.c) of
 *                     the data directory this log continues
 *   records, back to back, to the end of the file:
 *            u64      checksum: SipHash-2-4 (libsodium crypto_shorthash)
 *                     of the next 4 + length bytes, keyed with "RKWALsum"
 *                     followed by the generation (big-endian)
 *            u32      length of the body
 *            body     items, back to back, exactly filling the length:
 *              u8 1 (put)   u16 key length (9 .. 511), the data-table key
 *                           (u64 position || key bytes), u32 record length
 *                           (1 .. 2^31 - 1), the encoded record (record.h)
 *              u8 2 (mark)  u64 the clock's high-water mark
 *              u8 3 (table set)     u8 table (1: handoff), u16 key length
 *                           (1 .. 511), the key, u32 value length
 *                           (0 .. 2^31 - 1), the value
 *              u8 4 (table delete)  u8 table (1: handoff), u16 key length
 *                           (1 .. 511), the key
 * Integers are big-endian.  A record is one batch of writes, appended with
 * one write() before any of them is acknowledged.  The first record that
 * is cut short or fails its checksum ends the log: a crash tore it, or it
 * was left from an older generation behind a rewritten header, and
 * nothing after it is read.  Replay (store.c) puts every item of every
 * whole record into LMDB in order, so a key ends with the record of its
 * last put, and a table key with its last set or delete.  Items are the
 * records a batch left, not its operations, so every kind of data write
 * the log takes (STORE_OP_WRITE, STORE_OP_APPLY) is a put, and a new kind
 * of write needs no new kind of item; a log of an earlier build may also
 * hold what STORE_OP_APPLY_RECORD left, which now commits to LMDB, and
 * replays the same way.  Table items are STORE_OP_TABLE_PUT to the handoff
 * table, whose values are opaque bytes, not records: handoff checkpoints
 * set or deleted on their own (a handoff batch, its records and its
 * checkpoint in one atomic group, is one LMDB commit: store.c).
 *
 * Compatibility: items 3 and 4 came after the first logs, within format 1
 * (the header is unchanged).  A log written before them holds only items 1
 * and 2 and reads as it always did.  A build from before them reads a log
 * holding one as damage and refuses to open the directory, rather than
 * dropping acknowledged writes; a clean close leaves the log empty, so
 * only a crashed node's log can hold them.  Any other kind, or a table
 * byte other than 1, is damage (RK_ESYNTAX).
 */
#include "wal.h"

#include <sodium.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "store.h"

static const uint8_t wal_magic[8] = {'R', 'K', 'W', 'A', 'L', 0, 0, 1};

void wal_header(uint8_t out[WAL_HEADER_LEN], uint64_t gen)
{
    memcpy(out, wal_magic, 8);
    bytes_put_be64(out + 8, gen);
}

int wal_header_parse(const uint8_t *p, size_t len, uint64_t *gen)
{
    if (len < WAL_HEADER_LEN || memcmp(p, wal_magic, 8) != 0) {
        return RK_ESYNTAX;
    }
    *gen = bytes_get_be64(p + 8);
    return 0;
}

/* The checksum of a record: over its length field and body. */
static uint64_t wal_sum(const uint8_t *len_and_body, size_t n, uint64_t gen)
{
    uint8_t key[crypto_shorthash_KEYBYTES] = {'R', 'K', 'W', 'A', 'L', 's', 'u', 'm'};
    uint8_t out[crypto_shorthash_BYTES];

    bytes_put_be64(key + 8, gen);
    crypto_shorthash(out, len_and_body, n, key);
    return bytes_get_be64(out);
}

int wal_begin(struct buf *b, size_t *at)
{
    uint8_t head[WAL_RECORD_HEAD] = {0};

    *at = b->len;
    return buf_append(b, head, sizeof(head));
}

int wal_put(struct buf *b, const uint8_t *key, size_t key_len, const uint8_t *value,
            size_t value_len)
{
    uint8_t *p = buf_reserve(b, 1 + 2 + key_len + 4 + value_len);

    if (p == NULL) {
        return RK_ENOMEM;
    }
    p[0] = WAL_PUT;
    p[1] = (uint8_t)(key_len >> 8);
    p[2] = (uint8_t)key_len;
    memcpy(p + 3, key, key_len);
    bytes_put_be32(p + 3 + key_len, (uint32_t)value_len);
    memcpy(p + 7 + key_len, value, value_len);
    buf_commit(b, 1 + 2 + key_len + 4 + value_len);
    return 0;
}

int wal_table_put(struct buf *b, enum wal_table table, const uint8_t *key, size_t key_len,
                  const uint8_t *value, size_t value_len)
{
    size_t n = 4 + key_len + (value != NULL ? 4 + value_len : 0);
    uint8_t *p;

    if (key_len < 1 || key_len > WAL_TABLE_KEY_MAX || value_len > WAL_BODY_MAX) {
        return RK_EINVAL;
    }
    p = buf_reserve(b, n);
    if (p == NULL) {
        return RK_ENOMEM;
    }
    p[0] = value != NULL ? WAL_TABLE_SET : WAL_TABLE_DEL;
    p[1] = (uint8_t)table;
    p[2] = (uint8_t)(key_len >> 8);
    p[3] = (uint8_t)key_len;
    memcpy(p + 4, key, key_len);
    if (value != NULL) {
        bytes_put_be32(p + 4 + key_len, (uint32_t)value_len);
        memcpy(p + 8 + key_len, value, value_len);
    }
    buf_commit(b, n);
    return 0;
}

int wal_mark(struct buf *b, uint64_t mark)
{
    uint8_t item[9];

    item[0] = WAL_MARK;
    bytes_put_be64(item + 1, mark);
    return buf_append(b, item, sizeof(item));
}

int wal_end(struct buf *b, size_t at, uint64_t gen)
{
    uint8_t *rec = buf_data(b) + at;
    size_t body = b->len - at - WAL_RECORD_HEAD;

    if (body > WAL_BODY_MAX) {
        return RK_ETOOBIG;
    }
    bytes_put_be32(rec + 8, (uint32_t)body);
    bytes_put_be64(rec, wal_sum(rec + 8, 4 + body, gen));
    return 0;
}

void wal_drop(struct buf *b, size_t len)
{
    if (len < b->len) {
        b->len = len;
    }
}

/*
 * Readers of one item kind: the item at p (n bytes left in the body, the
 * kind byte included) into it; its length, or 0 when it does not follow
 * the layout.
 */
typedef size_t (*wal_item_reader)(const uint8_t *p, size_t n, struct wal_item *it);

static size_t wal_read_put(const uint8_t *p, size_t n, struct wal_item *it)
{
    size_t klen, vlen;

    if (n < 3) {
        return 0;
    }
    klen = (size_t)p[1] << 8 | p[2];
    if (klen < 9 || klen > 8 + STORE_KEY_MAX || n - 3 < klen + 4) {
        return 0;
    }
    vlen = bytes_get_be32(p + 3 + klen);
    if (vlen < 1 || vlen > WAL_BODY_MAX || n - 7 - klen < vlen) {
        return 0;
    }
    it->key = p + 3;
    it->key_len = klen;
    it->value = p + 7 + klen;
    it->value_len = vlen;
    return 7 + klen + vlen;
}

static size_t wal_read_mark(const uint8_t *p, size_t n, struct wal_item *it)
{
    if (n < 9) {
        return 0;
    }
    it->mark = bytes_get_be64(p + 1);
    return 9;
}

/* A table delete, and the head of a table set: kind, table, key. */
static size_t wal_read_table_del(const uint8_t *p, size_t n, struct wal_item *it)
{
    size_t klen;

    if (n < 4 || p[1] != WAL_TABLE_HANDOFF) {
        return 0;
    }
    klen = (size_t)p[2] << 8 | p[3];
    if (klen < 1 || klen > WAL_TABLE_KEY_MAX || n - 4 < klen) {
        return 0;
    }
    it->table = (enum wal_table)p[1];
    it->key = p + 4;
    it->key_len = klen;
    return 4 + klen;
}

static size_t wal_read_table_set(const uint8_t *p, size_t n, struct wal_item *it)
{
    size_t head = wal_read_table_del(p, n, it), vlen;

    if (head == 0 || n - head < 4) {
        return 0;
    }
    vlen = bytes_get_be32(p + head);
    if (vlen > WAL_BODY_MAX || n - head - 4 < vlen) {
        return 0;
    }
    it->value = p + head + 4;
    it->value_len = vlen;
    return head + 4 + vlen;
}

static const wal_item_reader wal_readers[] = {
    [WAL_PUT] = wal_read_put,
    [WAL_MARK] = wal_read_mark,
    [WAL_TABLE_SET] = wal_read_table_set,
    [WAL_TABLE_DEL] = wal_read_table_del,
};

/*
 * Read the item at p (n bytes left in the body) into it; its length, or 0
 * when it does not follow the layout (an unknown kind included).
 */
static size_t wal_item_read(const uint8_t *p, size_t n, struct wal_item *it)
{
    memset(it, 0, sizeof(*it));
    if (n < 1 || p[0] >= sizeof(wal_readers) / sizeof(wal_readers[0]) ||
        wal_readers[p[0]] == NULL) {
        return 0;
    }
    it->kind = (enum wal_kind)p[0];
    return wal_readers[p[0]](p, n, it);
}

/* Do the items of a body fill it exactly?  Checked before any is visited. */
static bool wal_body_valid(const uint8_t *p, size_t n)
{
    struct wal_item it;

    while (n > 0) {
        size_t used = wal_item_read(p, n, &it);
        if (used == 0) {
            return false;
        }
        p += used;
        n -= used;
    }
    return true;
}

int wal_parse(const uint8_t *p, size_t len, uint64_t gen, wal_item_fn fn, void *ctx, size_t *valid)
{
    size_t at = 0;

    *valid = 0;
    while (len - at >= WAL_RECORD_HEAD) {
        const uint8_t *rec = p + at;
        size_t body = bytes_get_be32(rec + 8);
        struct wal_item it;

        if (body > len - at - WAL_RECORD_HEAD ||
            wal_sum(rec + 8, 4 + body, gen) != bytes_get_be64(rec)) {
            break;
        }
        if (!wal_body_valid(rec + WAL_RECORD_HEAD, body)) {
            return RK_ESYNTAX;
        }
        for (size_t off = 0; off < body;) {
            int rc;
            off += wal_item_read(rec + WAL_RECORD_HEAD + off, body - off, &it);
            rc = fn(ctx, &it);
            if (rc != 0) {
                return rc;
            }
        }
        at += WAL_RECORD_HEAD + body;
        *valid = at;
    }
    return 0;
}
