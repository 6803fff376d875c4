/*
 * wal.h - the store's write-ahead log: the byte format of the file `wal`
 * in a data directory, and reading one back.  The layout is specified in
 * the header comment of wal.c; store.c owns the file and decides when it
 * is written, synced, replayed and emptied.
 *
 * A log is a header naming its generation, then records, each the
 * durable form of one batch of writes: the encoded records the batch left
 * behind (whole records, not deltas, so replaying is putting), the values
 * it set or deleted in the handoff table (its checkpoints) and, when the
 * batch raised it, the clock's high-water mark.  Every record is
 * checksummed with a key derived from the generation, so a record of an
 * older generation left behind a shorter header reads as garbage, never as
 * data.
 *
 * Pure: no I/O.  Building a record goes through a struct buf.
 */
#ifndef RINGKV_WAL_H
#define RINGKV_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define WAL_HEADER_LEN 16
#define WAL_RECORD_HEAD 12 /* u64 checksum, u32 body length */
/* The largest record body: a batch of at most batch_max whole records. */
#define WAL_BODY_MAX 0x7fffffffu
/* The longest key of a table item: LMDB's default maximum key. */
#define WAL_TABLE_KEY_MAX 511

enum wal_kind {
    WAL_PUT = 1,       /* a data-table key and the record stored under it */
    WAL_MARK = 2,      /* the clock's high-water mark (meta "hlc") */
    WAL_TABLE_SET = 3, /* a key of a named table and the value stored under it */
    WAL_TABLE_DEL = 4, /* a key of a named table, deleted */
};

/* The tables a WAL_TABLE_SET or WAL_TABLE_DEL names: the byte on disk. */
enum wal_table {
    WAL_TABLE_HANDOFF = 1, /* store.c's handoff table */
};

/* One item of a record, as wal_parse() hands it over (pointers into the input). */
struct wal_item {
    enum wal_kind kind;
    enum wal_table table; /* WAL_TABLE_SET, WAL_TABLE_DEL */
    const uint8_t *key;   /* WAL_PUT: the data-table key, position first; table items: the key */
    size_t key_len;
    const uint8_t *value; /* WAL_PUT: an encoded record; WAL_TABLE_SET: the value (may be empty) */
    size_t value_len;
    uint64_t mark; /* WAL_MARK */
};

/* The header of a log of generation gen. */
void wal_header(uint8_t out[WAL_HEADER_LEN], uint64_t gen);

/* The generation of a log header; RK_ESYNTAX when p is not one. */
int wal_header_parse(const uint8_t *p, size_t len, uint64_t *gen);

/*
 * Building a record in b: wal_begin() reserves its head and returns the
 * offset it starts at, wal_put(), wal_table_put() and wal_mark() add
 * items, wal_end() writes the head (length and checksum for generation
 * gen).  wal_table_put() adds a WAL_TABLE_SET of value[0..value_len), or
 * with value NULL a WAL_TABLE_DEL; RK_EINVAL for a key length outside
 * 1 .. WAL_TABLE_KEY_MAX.  A record without items is legal and replays as
 * nothing.  wal_drop() takes the items added since a position back out
 * (an atomic group that failed).  Each returns 0 or RK_ENOMEM (RK_ETOOBIG
 * past WAL_BODY_MAX).
 */
int wal_begin(struct buf *b, size_t *at);
int wal_put(struct buf *b, const uint8_t *key, size_t key_len, const uint8_t *value,
            size_t value_len);
int wal_table_put(struct buf *b, enum wal_table table, const uint8_t *key, size_t key_len,
                  const uint8_t *value, size_t value_len);
int wal_mark(struct buf *b, uint64_t mark);
int wal_end(struct buf *b, size_t at, uint64_t gen);
void wal_drop(struct buf *b, size_t len);

/* Called per item of each whole record; a non-zero return stops the parse. */
typedef int (*wal_item_fn)(void *ctx, const struct wal_item *item);

/*
 * Read the records of a log of generation gen from p (the bytes after the
 * header), calling fn per item, record by record, and set *valid to the
 * bytes of whole records read.  A record cut short or whose checksum does
 * not match ends the log there (a write torn by a crash, or a record of an
 * older generation): not an error, *valid says where.  A record whose
 * checksum matches but whose items do not follow the layout (an item
 * kind or a table this reader does not know included), or a key or
 * record over the store's limits, is damage: RK_ESYNTAX, *valid at the
 * record's start and fn not called for any of its items.  Returns 0, fn's
 * non-zero value, or RK_ESYNTAX.
 */
int wal_parse(const uint8_t *p, size_t len, uint64_t gen, wal_item_fn fn, void *ctx, size_t *valid);

#endif
