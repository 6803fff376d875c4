/*
 * fuzz_config.c - fuzz target for config_parse_text() and config_check(),
 * which read an operator's config file: text that is untrusted in the
 * sense that any byte string must give settings or one error, never a
 * crash or an unbounded allocation.
 *
 * Beyond "no crash", whatever parses must survive config_print(): the
 * printed file parses again to the same struct, byte for byte (the secret
 * aside, which is printed as a comment), and every error message is one
 * line.  A mismatch aborts, which libFuzzer and the replay driver both
 * report as a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * By path: a build tree may hold autoconf's own config.h, which the
 * compiler's -I. would find before src/config.h.
 */
#include "../../src/config.h"
#include "fuzz.h"

static void one_line(const char *err)
{
    if (strchr(err, '\n') != NULL) {
        abort();
    }
}

/* config_print(c), parsed into a fresh config, gives c back (requirepass aside). */
static void round_trip(struct config *c)
{
    struct config back;
    char err[1024];
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    if (f == NULL) {
        abort();
    }
    config_print(c, f);
    if (fclose(f) != 0) {
        abort();
    }
    config_init(&back);
    if (config_parse_text(&back, out, len, "printed", err, sizeof(err)) != 0) {
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
    struct config c;
    char err[1024];

    config_init(&c);
    err[0] = '\0';
    if (config_parse_text(&c, (const char *)data, size, "fuzz", err, sizeof(err)) != 0) {
        one_line(err);
        return 0;
    }
    err[0] = '\0';
    if (config_check(&c, err, sizeof(err)) != 0) {
        one_line(err);
    }
    round_trip(&c);
    return 0;
}
