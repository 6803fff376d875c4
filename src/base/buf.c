/*
 * buf.c - growable byte buffers (buf.h).
 */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

/* First allocation: a small reply or frame fits without growing. */
#define BUF_FIRST_CAP 256
/* Compact once the consumed prefix is at least this much and half the allocation. */
#define BUF_COMPACT_MIN 4096

void buf_init(struct buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void buf_free(struct buf *b)
{
    free(b->p);
    buf_init(b, b->max);
}

void buf_clear(struct buf *b)
{
    b->start = 0;
    b->len = 0;
}

uint8_t *buf_reserve(struct buf *b, size_t n)
{
    size_t need;

    if ((b->max != 0 && (n > b->max || b->len > b->max - n)) || n > SIZE_MAX - b->start - b->len) {
        return NULL;
    }
    if (b->p != NULL && b->cap - b->start - b->len >= n) {
        return b->p + b->start + b->len; /* room already: the common case of every append */
    }
    if (b->start > 0 && (b->len == 0 || b->start >= BUF_COMPACT_MIN) &&
        b->start + b->len + n > b->cap) {
        memmove(b->p, b->p + b->start, b->len);
        b->start = 0;
    }
    need = b->start + b->len + n;
    if (grow_array(&b->p, &b->cap, need < BUF_FIRST_CAP ? BUF_FIRST_CAP : need, 1) != 0) {
        return NULL;
    }
    return b->p + b->start + b->len;
}

void buf_commit(struct buf *b, size_t n)
{
    b->len += n;
}

int buf_append(struct buf *b, const void *data, size_t n)
{
    uint8_t *p;

    if (n == 0) {
        return 0;
    }
    p = buf_reserve(b, n);
    if (p == NULL) {
        return b->max != 0 && b->len + n > b->max ? RK_ETOOBIG : RK_ENOMEM;
    }
    memcpy(p, data, n);
    b->len += n;
    return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    uint8_t *p;

    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        return RK_EINVAL;
    }
    p = buf_reserve(b, (size_t)n + 1);
    if (p == NULL) {
        return RK_ENOMEM;
    }
    vsnprintf((char *)p, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        b->start = 0;
        b->len = 0;
        return;
    }
    b->start += n;
    b->len -= n;
}
