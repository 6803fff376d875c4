/*
 * buf.h - a growable byte buffer: connection input and output, encoders.
 *
 * Data lives in p[start .. start+len); consuming from the front moves
 * start, and the buffer compacts itself when the consumed prefix is large,
 * so reading and writing a stream costs amortised O(1) per byte.  An
 * optional cap bounds the buffer: appending past it fails with RK_ETOOBIG
 * and leaves the buffer unchanged, so a peer can never make it grow
 * without limit.
 */
#ifndef RINGKV_BUF_H
#define RINGKV_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct buf {
    uint8_t *p;
    size_t start; /* consumed prefix */
    size_t len;   /* bytes of data after start */
    size_t cap;   /* allocated bytes */
    size_t max;   /* bound on len, 0 for none */
};

/* Initialise an empty buffer bounded to max bytes (0: unbounded). */
void buf_init(struct buf *b, size_t max);
void buf_free(struct buf *b);
/* Drop the data, keep the memory. */
void buf_clear(struct buf *b);

/* The data; a valid pointer (to no bytes) even before anything was ever stored. */
static inline uint8_t *buf_data(const struct buf *b)
{
    static uint8_t buf_none[1];
    return b->p != NULL ? b->p + b->start : buf_none;
}

/* Make room for n more bytes; returns where they go.  RK_ENOMEM / RK_ETOOBIG as NULL. */
uint8_t *buf_reserve(struct buf *b, size_t n);
/* After writing n bytes at buf_reserve()'s pointer, count them. */
void buf_commit(struct buf *b, size_t n);
/* Append bytes.  Returns 0, RK_ENOMEM or RK_ETOOBIG (nothing appended). */
int buf_append(struct buf *b, const void *data, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Drop n bytes from the front. */
void buf_consume(struct buf *b, size_t n);

#endif
