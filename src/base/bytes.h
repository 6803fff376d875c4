/*
 * bytes.h - big-endian integers in byte buffers, for every format that
 * ringkv writes to disk or to the wire.  The put functions return the
 * position after what they wrote, so encoders can chain them.
 */
#ifndef RINGKV_BYTES_H
#define RINGKV_BYTES_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint8_t *bytes_put_be16(uint8_t *p, uint16_t v)
{
    uint16_t be = htobe16(v);
    memcpy(p, &be, sizeof(be));
    return p + sizeof(be);
}

static inline uint8_t *bytes_put_be32(uint8_t *p, uint32_t v)
{
    uint32_t be = htobe32(v);
    memcpy(p, &be, sizeof(be));
    return p + sizeof(be);
}

static inline uint8_t *bytes_put_be64(uint8_t *p, uint64_t v)
{
    uint64_t be = htobe64(v);
    memcpy(p, &be, sizeof(be));
    return p + sizeof(be);
}

static inline uint16_t bytes_get_be16(const uint8_t *p)
{
    uint16_t be;
    memcpy(&be, p, sizeof(be));
    return be16toh(be);
}

static inline uint32_t bytes_get_be32(const uint8_t *p)
{
    uint32_t be;
    memcpy(&be, p, sizeof(be));
    return be32toh(be);
}

static inline uint64_t bytes_get_be64(const uint8_t *p)
{
    uint64_t be;
    memcpy(&be, p, sizeof(be));
    return be64toh(be);
}

#endif
