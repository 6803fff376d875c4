/*
 * hex.c - lowercase hexadecimal encoding and strict decoding.
 */
#include "hex.h"

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

bool hex_decode(uint8_t *out, const char *hex, size_t hex_len)
{
    if (hex_len % 2 != 0) {
        return false;
    }
    for (size_t i = 0; i < hex_len; i += 2) {
        int hi = hex_digit(hex[i]);
        int lo = hex_digit(hex[i + 1]);
        if (hi < 0 || lo < 0) {
            return false;
        }
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

void hex_encode(char *out, const void *data, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    const uint8_t *p = data;

    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * len] = '\0';
}

bool hex_u64(uint64_t *out, const char *hex, size_t hex_len)
{
    uint64_t v = 0;

    if (hex_len != 16) {
        return false;
    }
    for (size_t i = 0; i < hex_len; i++) {
        int d = hex_digit(hex[i]);
        if (d < 0) {
            return false;
        }
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}
