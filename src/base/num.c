/*
 * num.c - decimal numbers read from outside text (num.h).
 */
#include "num.h"

#include <stdbool.h>

#include "error.h"

int num_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    bool over = false;

    if (len == 0) {
        return RK_ESYNTAX;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return RK_ESYNTAX;
        }
        uint64_t digit = (uint64_t)(s[i] - '0');
        if (over || digit > max || v > (max - digit) / 10) {
            over = true;
            continue;
        }
        v = v * 10 + digit;
    }
    if (over) {
        return RK_ERANGE;
    }
    *out = v;
    return 0;
}
