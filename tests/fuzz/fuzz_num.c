/*
 * fuzz_num.c - fuzz target for num_parse_u64(), the one reader of the
 * integers that come from outside text: every integer argument of a
 * client command (RINGKV RING's rf, BULKTEST's byte count, SELECT,
 * HELLO), settings and addresses' ports.
 *
 * Input: 8 bytes of the bound (little-endian; fewer bytes are padded with
 * 0xff), then the text.  The result is checked against a second, plain
 * reading of the same text: decimal digits only and at least one, or
 * RK_ESYNTAX; the value compared as a digit string against 2^64-1 and
 * then against the bound, or RK_ERANGE; on success the value itself; and
 * *out untouched whenever the call fails.  A disagreement aborts, which
 * libFuzzer and the replay driver both report as a failure.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz.h"
#include "num.h"

#define FUZZ_U64_MAX_TEXT "18446744073709551615"

/* The value of digits s[0..len) when it fits 64 bits (a string comparison, not arithmetic). */
static bool fuzz_fits(const char *s, size_t len, uint64_t *v)
{
    const size_t top = sizeof(FUZZ_U64_MAX_TEXT) - 1;

    while (len > 1 && s[0] == '0') {
        s++;
        len--;
    }
    if (len > top || (len == top && memcmp(s, FUZZ_U64_MAX_TEXT, top) > 0)) {
        return false;
    }
    *v = 0;
    for (size_t i = 0; i < len; i++) {
        *v = *v * 10 + (uint64_t)(s[i] - '0');
    }
    return true;
}

static int fuzz_expect(const char *s, size_t len, uint64_t max, uint64_t *v)
{
    if (len == 0) {
        return RK_ESYNTAX;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return RK_ESYNTAX;
        }
    }
    return fuzz_fits(s, len, v) && *v <= max ? 0 : RK_ERANGE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t bound[8];
    uint64_t max = 0, want = 0, got = 0x5a5a5a5a5a5a5a5aull;
    size_t head = size < sizeof(bound) ? size : sizeof(bound);
    const char *text = (const char *)data + head;
    size_t len = size - head;
    int rc, expect;

    memset(bound, 0xff, sizeof(bound));
    memcpy(bound, data, head);
    for (size_t i = sizeof(bound); i > 0; i--) {
        max = max << 8 | bound[i - 1];
    }
    rc = num_parse_u64(text, len, max, &got);
    expect = fuzz_expect(text, len, max, &want);
    if (rc != expect) {
        abort();
    }
    if (rc == 0 ? got != want : got != 0x5a5a5a5a5a5a5a5aull) {
        abort();
    }
    return 0;
}
