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
 * Integers are big-endian.  A record is one batch of writes, appended with
 * one write() before any of them is acknowledged.  The first record that
 * is cut short or fails its checksum ends the log: a crash tore it, or it
 * was left from an older generation behind a rewritten header, and
 * nothing after it is read.  Replay (store.c) puts every item of every
 * whole record into LMDB in order, so a key ends with the record of its
 * last put.  Items are the records a batch left, not its operations, so
 * every kind of write the log takes (STORE_OP_WRITE, STORE_OP_APPLY,
 * STORE_OP_APPLY_RECORD) is a put, and a new kind of write needs no new
 * kind of item.
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
 * Read the item at p (n bytes left in the body) into it; its length, or 0
 * when it does not follow the layout.
 */
static size_t wal_item_read(const uint8_t *p, size_t n, struct wal_item *it)
{
    size_t klen, vlen;

    memset(it, 0, sizeof(*it));
    if (n >= 9 && p[0] == WAL_MARK) {
        it->kind = WAL_MARK;
        it->mark = bytes_get_be64(p + 1);
        return 9;
    }
    if (n < 3 || p[0] != WAL_PUT) {
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
    it->kind = WAL_PUT;
    it->key = p + 3;
    it->key_len = klen;
    it->value = p + 7 + klen;
    it->value_len = vlen;
    return 7 + klen + vlen;
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
