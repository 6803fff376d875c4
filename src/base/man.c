/*
 * man.c - escaping text for troff (man.h).
 */
#include "man.h"

#include <string.h>

void man_text_n(FILE *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (i == 0 && (s[i] == '.' || s[i] == '\'')) {
            fputs("\\&", out);
        }
        if (s[i] == '\\') {
            fputs("\\e", out);
        } else if (s[i] == '"') {
            fputs("\\(dq", out);
        } else if (s[i] == '-') {
            fputs("\\-", out);
        } else if (s[i] == '\n') {
            fputc('\n', out);
            if (i + 1 < len && (s[i + 1] == '.' || s[i + 1] == '\'')) {
                fputs("\\&", out);
            }
        } else {
            fputc(s[i], out);
        }
    }
}

void man_text(FILE *out, const char *s)
{
    man_text_n(out, s, strlen(s));
}
