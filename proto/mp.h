/*
 * mp.h - a bounded msgpack reader.
 *
 * Messages are encoded with msgpack-c's packer; they are decoded with this
 * reader instead of msgpack-c's unpacker, because that unpacker reserves
 * memory for an array as soon as it reads the array's declared count,
 * before a single element has arrived: five bytes from a peer can ask for
 * gigabytes.  This reader allocates nothing.  It walks the input in place;
 * every count is checked against the caller's limit and against the bytes
 * left (each element needs at least one) before it is returned; strings
 * and binaries are returned as pointers into the input.  The first error
 * sticks: later calls fail at once, so a decoder can check once at the end.
 */
#ifndef RINGKV_MP_H
#define RINGKV_MP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mp_reader {
    const uint8_t *p;
    size_t len;
    size_t pos;
    int err; /* 0, or the first error: RK_ESYNTAX, RK_ETOOBIG */
};

void mp_reader_init(struct mp_reader *r, const void *p, size_t len);

/* Each returns 0 or the reader's sticky error; on error outputs are zeroed. */
int mp_read_array(struct mp_reader *r, size_t max, size_t *n);
int mp_read_map(struct mp_reader *r, size_t max, size_t *n);
int mp_read_uint(struct mp_reader *r, uint64_t *v); /* any non-negative integer */
int mp_read_int(struct mp_reader *r, int64_t *v);   /* any integer that fits */
int mp_read_bool(struct mp_reader *r, bool *v);
int mp_read_nil(struct mp_reader *r);
bool mp_peek_nil(const struct mp_reader *r);
/* str or bin of at most max bytes, borrowed from the input. */
int mp_read_str(struct mp_reader *r, size_t max, const uint8_t **p, size_t *len);
int mp_read_bin(struct mp_reader *r, size_t max, const uint8_t **p, size_t *len);
/* Skip one value of any type, nested at most depth_max levels. */
int mp_skip(struct mp_reader *r, int depth_max);
/* True when everything was read without error. */
bool mp_done(const struct mp_reader *r);

#endif
