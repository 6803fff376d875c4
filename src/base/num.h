/*
 * num.h - decimal numbers read from outside text (settings, client
 * arguments, addresses): digits and nothing else.
 *
 * strtoull() alone reads " 5", "+5", "-1" (as 2^64-1) and "5<NUL>junk" as
 * numbers and wraps past its range without a word; every reader of
 * outside numbers goes through num_parse_u64() instead.
 */
#ifndef RINGKV_NUM_H
#define RINGKV_NUM_H

#include <stddef.h>
#include <stdint.h>

/*
 * The decimal number s[0..len) (borrowed; no NUL needed) into *out:
 * ASCII digits only, no sign, blank or NUL; leading zeros are allowed
 * (a caller that refuses them checks s[0]).  RK_ESYNTAX when len is 0 or
 * any byte is not a digit; otherwise RK_ERANGE when the value is over max
 * (a non-digit anywhere is RK_ESYNTAX, however large the digits before
 * it).  *out is written only on success.
 */
int num_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out);

#endif
