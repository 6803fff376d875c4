/*
 * man.h - text written into a man page (troff), for the hidden --help-man
 * options through which ringkvd and ringkv print the parts of their man
 * pages that come from their own tables (settings, verbs, options), so the
 * installed pages cannot drift from the code (man/gen.sh puts them in).
 */
#ifndef RINGKV_MAN_H
#define RINGKV_MAN_H

#include <stdio.h>

/*
 * Write s so troff shows it as is: a backslash as \e, a '-' as \- (a
 * minus, so options can be searched for and copied), a '"' as \(dq (safe
 * inside a request's quoted argument), and a line starting
 * with '.' or '\'' guarded by \& so it is not read as a request.  Nothing
 * else is added: the caller writes the requests and newlines around it.
 */
void man_text(FILE *out, const char *s);

/* Write s[0..len) as man_text() does. */
void man_text_n(FILE *out, const char *s, size_t len);

#endif
