/*
 * fuzz_settings.c - fuzz target for settings_parse_text() and settings_check(),
 * which read an operator's config file: text that is untrusted in the
 * sense that any byte string must give settings or one error, never a
 * crash or an unbounded allocation.
 *
 * Beyond "no crash", whatever parses must survive settings_print(): the
 * printed file parses again to the same struct, byte for byte (the secret
 * aside, which is printed as a comment), and every error message is one
 * line.  A mismatch aborts, which libFuzzer and the replay driver both
 * report as a failure.
 *
 * Inputs reach lines at the config file's 32 KiB limit and over it: the
 * corpus holds lines of exactly 32768 bytes (the longest seeds list
 * settings_print() writes, padded; a comment; long values of each kind)
 * and one byte over, and both the driver and `make fuzz` let inputs grow
 * to 64 KiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "settings.h"
#include "fuzz.h"

static void one_line(const char *err)
{
    if (strchr(err, '\n') != NULL) {
        abort();
    }
}

/* settings_print(c), parsed into a fresh config, gives c back (requirepass aside). */
static void round_trip(struct settings *c)
{
    struct settings back;
    char err[1024];
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    if (f == NULL) {
        abort();
    }
    settings_print(c, f);
    if (fclose(f) != 0) {
        abort();
    }
    settings_init(&back);
    if (settings_parse_text(&back, out, len, "printed", err, sizeof(err)) != 0) {
        abort();
    }
    memset(c->requirepass, 0, sizeof(c->requirepass));
    if (memcmp(c, &back, sizeof(back)) != 0) {
        abort();
    }
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct settings c;
    char err[1024];

    settings_init(&c);
    err[0] = '\0';
    if (settings_parse_text(&c, (const char *)data, size, "fuzz", err, sizeof(err)) != 0) {
        one_line(err);
        return 0;
    }
    err[0] = '\0';
    if (settings_check(&c, err, sizeof(err)) != 0) {
        one_line(err);
    }
    round_trip(&c);
    return 0;
}
