/*
 * glob.h - Redis's glob patterns (KEYS, SCAN MATCH): the rules of Redis's
 * stringmatchlen(), over byte strings.  Pure.
 *
 *   *       any run of bytes, also none
 *   ?       any one byte
 *   [abc]   one of the bytes listed; [^abc] one byte not listed; [a-z] a
 *           range (either order); \x inside brackets is x itself; an
 *           unclosed [ ends the set at the pattern's end
 *   \x      x itself (a \ at the pattern's end matches a \)
 *   other   itself
 *
 * Bytes compare as unsigned values.  A pattern nesting more than
 * GLOB_NESTING_MAX groups of '*' that still have to be tried does not
 * match (a bound on the recursion, as later Redis versions have), and a
 * failed match of the rest of a pattern after a '*' is not retried for
 * longer runs of earlier '*'s (Redis's skipLongerMatches), so no pattern
 * takes more than polynomial time.
 */
#ifndef RINGKV_GLOB_H
#define RINGKV_GLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GLOB_NESTING_MAX 1000

/* Whether s matches pattern; nocase folds ASCII letters. */
bool glob_match(const uint8_t *pattern, size_t plen, const uint8_t *s, size_t slen, bool nocase);

#endif
