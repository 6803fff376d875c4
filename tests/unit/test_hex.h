/*
 * test_hex.h - byte strings written as hex in the unit tests: golden
 * encodings read as "94 07 01 01 c0" (pairs of hex digits, spaces
 * ignored), checked against the buffer they fill.
 */
#ifndef RINGKV_TEST_HEX_H
#define RINGKV_TEST_HEX_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bytes written as hex pairs, spaces ignored. */
struct bytes {
    uint8_t p[4096];
    size_t len;
};

/* Fill b from hex; a test fails on a character that is not a hex pair or past 4096 bytes. */
static inline void unhex(struct bytes *b, const char *hex)
{
    unsigned v;

    b->len = 0;
    while (*hex != '\0') {
        if (*hex == ' ') {
            hex++;
            continue;
        }
        ck_assert_int_eq(sscanf(hex, "%2x", &v), 1);
        ck_assert_uint_lt(b->len, sizeof(b->p));
        b->p[b->len++] = (uint8_t)v;
        hex += 2;
    }
}

#endif
