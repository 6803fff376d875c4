/*
 * hex.h - lowercase hexadecimal, for vector files and tool output.
 */
#ifndef RINGKV_HEX_H
#define RINGKV_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decode hex[0..hex_len) into out, which holds at least hex_len / 2 bytes.
 * Returns false for an odd length or a non-hex character (either case is
 * accepted).
 */
bool hex_decode(uint8_t *out, const char *hex, size_t hex_len);

/* Encode data[0..len) as lowercase hex into out (2 * len + 1 bytes, NUL-terminated). */
void hex_encode(char *out, const void *data, size_t len);

/* Parse exactly 16 hex digits as a 64-bit integer, most significant first. */
bool hex_u64(uint64_t *out, const char *hex, size_t hex_len);

#endif
