/*
 * glob.c - Redis's glob patterns (glob.h).
 *
 * A transcription of Redis 7's stringmatchlen_impl() with its bounds made
 * explicit: Redis reads its NUL-terminated pattern one byte past the
 * length in places ("**" at the end, an unclosed "["); here a byte past
 * the end reads as 0 (pat_at()), which is what Redis reads there.
 */
#include "glob.h"

#include <ctype.h>

struct glob_state {
    bool nocase;
    bool skip_longer; /* the rest after a '*' matched nowhere: no longer run can help */
};

static int pat_at(const uint8_t *p, size_t len, size_t i)
{
    return i < len ? p[i] : 0;
}

static int fold(const struct glob_state *g, int c)
{
    return g->nocase ? tolower(c) : c;
}

/*
 * A bracket set at *pp (just after the '['), against byte c: whether c is
 * in it; *pp and *plen move to the set's closing ']' (or the last byte).
 */
static bool glob_set(const struct glob_state *g, const uint8_t **pp, size_t *plen, int c)
{
    const uint8_t *p = *pp;
    size_t len = *plen;
    bool negate = pat_at(p, len, 0) == '^', match = false;

    if (negate) {
        p++;
        len--;
    }
    for (;;) {
        if (pat_at(p, len, 0) == '\\' && len >= 2) {
            p++;
            len--;
            match |= p[0] == c;
        } else if (pat_at(p, len, 0) == ']') {
            break;
        } else if (len == 0) {
            p--;
            len++;
            break;
        } else if (len >= 3 && p[1] == '-') {
            int lo = fold(g, p[0]), hi = fold(g, p[2]), x = fold(g, c);
            if (lo > hi) {
                int t = lo;
                lo = hi;
                hi = t;
            }
            p += 2;
            len -= 2;
            match |= x >= lo && x <= hi;
        } else {
            match |= fold(g, p[0]) == fold(g, c);
        }
        p++;
        len--;
    }
    *pp = p;
    *plen = len;
    return negate ? !match : match;
}

static bool glob_impl(struct glob_state *g, const uint8_t *p, size_t plen, const uint8_t *s,
                      size_t slen, int nesting)
{
    if (nesting > GLOB_NESTING_MAX) {
        return false;
    }
    while (plen > 0 && slen > 0) {
        switch (p[0]) {
        case '*':
            while (plen > 1 && p[1] == '*') {
                p++;
                plen--;
            }
            if (plen == 1) {
                return true;
            }
            while (slen > 0) {
                if (glob_impl(g, p + 1, plen - 1, s, slen, nesting + 1)) {
                    return true;
                }
                if (g->skip_longer) {
                    return false;
                }
                s++;
                slen--;
            }
            g->skip_longer = true;
            return false;
        case '?':
            s++;
            slen--;
            break;
        case '[':
            p++;
            plen--;
            if (!glob_set(g, &p, &plen, s[0])) {
                return false;
            }
            s++;
            slen--;
            break;
        case '\\':
            if (plen >= 2) {
                p++;
                plen--;
            }
            /* fall through */
        default:
            if (fold(g, p[0]) != fold(g, s[0])) {
                return false;
            }
            s++;
            slen--;
            break;
        }
        p++;
        plen--;
        if (slen == 0) {
            while (plen > 0 && p[0] == '*') {
                p++;
                plen--;
            }
            break;
        }
    }
    return plen == 0 && slen == 0;
}

bool glob_match(const uint8_t *pattern, size_t plen, const uint8_t *s, size_t slen, bool nocase)
{
    struct glob_state g = {nocase, false};

    return glob_impl(&g, pattern, plen, s, slen, 0);
}
