/*
 * fuzz_wal.c - fuzz target for the write-ahead log's reader
 * (wal_header_parse() and wal_parse() in storage/wal.c), which reads the
 * file `wal` of a data directory back at open.
 *
 * The input is a whole log file: a header, then records.  When the header
 * parses, the records are read for its generation (and, to reach the
 * checksum failure paths, for the next one), and once more with every
 * record's checksum made right, so that mutated bodies reach the item
 * layout checks.  Beyond "no crash, no leak"
 * it checks that the bytes of whole records never exceed the input, that
 * every item points inside the input where its record puts it, and that
 * the items handed over, encoded again with wal_begin()/wal_put()/
 * wal_mark()/wal_end() for the same generation, record by record, give
 * back exactly the input's first *valid bytes: the reader accepts only
 * what the writer writes, and never hands over an item of a record it
 * refuses.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "bytes.h"
#include "error.h"
#include "fuzz.h"
#include "store.h"
#include "wal.h"

/* The items wal_parse() handed over, in order. */
struct fuzz_items {
    const uint8_t *data; /* the records, after the header */
    size_t size;
    struct wal_item *v;
    size_t n, cap;
};

static void fuzz_inside(const struct fuzz_items *f, const uint8_t *p, size_t n)
{
    if (p < f->data || n > f->size || (size_t)(p - f->data) > f->size - n) {
        abort();
    }
}

static int fuzz_item(void *ctx, const struct wal_item *it)
{
    struct fuzz_items *f = ctx;

    if (it->kind == WAL_PUT) {
        fuzz_inside(f, it->key, it->key_len);
        fuzz_inside(f, it->value, it->value_len);
        if (it->value != it->key + it->key_len + 4 || it->key_len < 9 ||
            it->key_len > 8 + STORE_KEY_MAX || it->value_len < 1) {
            abort();
        }
    } else if (it->kind != WAL_MARK) {
        abort();
    }
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->v = realloc(f->v, f->cap * sizeof(*f->v));
        if (f->v == NULL) {
            abort();
        }
    }
    f->v[f->n++] = *it;
    return 0;
}

/* Encode the items of the record at data + at (its body length from the input) into out. */
static size_t fuzz_rebuild_record(const struct fuzz_items *f, size_t at, size_t *next, uint64_t gen,
                                  struct buf *out)
{
    size_t body = bytes_get_be32(f->data + at + 8), used = 0, begin;
    const uint8_t *p = f->data + at + WAL_RECORD_HEAD;

    if (wal_begin(out, &begin) != 0) {
        abort();
    }
    while (used < body) {
        const struct wal_item *it;
        if (*next >= f->n) {
            abort(); /* a record with items never handed over */
        }
        it = &f->v[(*next)++];
        if (it->kind == WAL_PUT) {
            if (it->key != p + used + 3 ||
                wal_put(out, it->key, it->key_len, it->value, it->value_len) != 0) {
                abort();
            }
            used += 7 + it->key_len + it->value_len;
        } else {
            if (wal_mark(out, it->mark) != 0) {
                abort();
            }
            used += 9;
        }
    }
    if (used != body || wal_end(out, begin, gen) != 0) {
        abort();
    }
    return WAL_RECORD_HEAD + body;
}

static void fuzz_records(const uint8_t *data, size_t size, uint64_t gen)
{
    struct fuzz_items f = {.data = data, .size = size};
    struct buf out;
    size_t valid = (size_t)-1, at = 0, next = 0;
    int rc = wal_parse(data, size, gen, fuzz_item, &f, &valid);

    if (valid > size || (rc != 0 && rc != RK_ESYNTAX)) {
        abort();
    }
    buf_init(&out, 0);
    while (at < valid) {
        if (valid - at < WAL_RECORD_HEAD) {
            abort();
        }
        at += fuzz_rebuild_record(&f, at, &next, gen, &out);
    }
    if (at != valid || next != f.n || out.len != valid ||
        (valid > 0 && memcmp(buf_data(&out), data, valid) != 0)) {
        abort();
    }
    if (rc == 0 && size - valid >= WAL_RECORD_HEAD) {
        /* what ends the log must be a record cut short or failing its checksum */
        size_t body = bytes_get_be32(data + valid + 8);
        if (body <= size - valid - WAL_RECORD_HEAD) {
            struct buf again;
            buf_init(&again, 0);
            if (buf_append(&again, data + valid, WAL_RECORD_HEAD + body) != 0 ||
                wal_end(&again, 0, gen) != 0 || memcmp(buf_data(&again), data + valid, 8) == 0) {
                abort();
            }
            buf_free(&again);
        }
    }
    buf_free(&out);
    free(f.v);
}

/*
 * A copy of the records with every checksum made right for gen, walking
 * them by their length fields: mutated bodies then pass the checksum, so
 * the item layout checks are reached too.  NULL when out of memory.
 */
static uint8_t *fuzz_resum(const uint8_t *data, size_t size, uint64_t gen)
{
    uint8_t *copy = malloc(size ? size : 1);
    size_t at = 0;

    if (copy == NULL) {
        return NULL;
    }
    memcpy(copy, data, size);
    while (size - at >= WAL_RECORD_HEAD) {
        size_t body = bytes_get_be32(copy + at + 8), begin;
        struct buf one;
        if (body > size - at - WAL_RECORD_HEAD) {
            break;
        }
        buf_init(&one, 0);
        if (wal_begin(&one, &begin) != 0 ||
            buf_append(&one, copy + at + WAL_RECORD_HEAD, body) != 0 ||
            wal_end(&one, begin, gen) != 0) {
            abort();
        }
        memcpy(copy + at, buf_data(&one), 8);
        buf_free(&one);
        at += WAL_RECORD_HEAD + body;
    }
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t gen;
    uint8_t *resummed;

    if (wal_header_parse(data, size, &gen) != 0) {
        if (size >= WAL_HEADER_LEN && memcmp(data, "RKWAL\0\0\1", 8) == 0) {
            abort(); /* a header with the magic is a header */
        }
        return 0;
    }
    if (size < WAL_HEADER_LEN || bytes_get_be64(data + 8) != gen) {
        abort();
    }
    fuzz_records(data + WAL_HEADER_LEN, size - WAL_HEADER_LEN, gen);
    fuzz_records(data + WAL_HEADER_LEN, size - WAL_HEADER_LEN, gen + 1);
    resummed = fuzz_resum(data + WAL_HEADER_LEN, size - WAL_HEADER_LEN, gen);
    if (resummed != NULL) {
        fuzz_records(resummed, size - WAL_HEADER_LEN, gen);
        free(resummed);
    }
    return 0;
}
