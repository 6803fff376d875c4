/*
 * fuzz_resp.c - fuzz target for the RESP request parser (proto/resp.c),
 * which reads whatever a client sends to the client port.
 *
 * The input is parsed in one piece and again split in two at a point
 * derived from its first byte, under small limits (so that short inputs
 * reach every limit: argument count, skipped oversized argument, hard bulk
 * length, inline length) and under Redis's.  Beyond "no crash, no leak" it
 * aborts when the split changes anything (the commands, their flags, the
 * final status and error message), when an argument is not NUL-terminated,
 * when NEED_MORE leaves input behind, or when a command consumes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "resp.h"

/* Small enough that a few bytes of input cross each of them. */
static const struct resp_limits fuzz_small = {
    .multibulk_max = 8,
    .bulk_max = 8,
    .bulk_hard_max = 64,
    .inline_max = 32,
};

static void fuzz_append(struct buf *t, const void *p, size_t n)
{
    if (buf_append(t, p, n) != 0) {
        abort();
    }
}

/* Write c to the transcript t, checking what resp.h promises of it. */
static void fuzz_record(struct buf *t, const struct resp_cmd *c)
{
    char head[96];
    int n = snprintf(head, sizeof(head), "C%zu %d %d %zu\n", c->argc, c->is_inline, c->too_big,
                     c->too_big_len);

    if (c->argc == 0 || (c->too_big && c->is_inline)) {
        abort();
    }
    fuzz_append(t, head, (size_t)n);
    for (size_t i = 0; i < c->argc; i++) {
        if (c->argv[i].p[c->argv[i].len] != '\0') {
            abort();
        }
        n = snprintf(head, sizeof(head), "%zu:", c->argv[i].len);
        fuzz_append(t, head, (size_t)n);
        fuzz_append(t, c->argv[i].p, c->argv[i].len);
    }
}

/* Parse one chunk to its end or to an error; false after an error. */
static bool fuzz_feed(struct resp_parser *p, const uint8_t *in, size_t len, struct buf *t)
{
    struct resp_cmd *c;
    size_t used;

    for (;;) {
        enum resp_status st = resp_parse(p, in, len, &used, &c);
        if (used > len) {
            abort();
        }
        if (st == RESP_PROTOCOL_ERROR) {
            fuzz_append(t, "E", 1);
            fuzz_append(t, p->error, strlen(p->error));
            return false;
        }
        if (st == RESP_NEED_MORE) {
            if (used != len || c != NULL) {
                abort();
            }
            return true;
        }
        if (used == 0) {
            abort();
        }
        fuzz_record(t, c);
        resp_cmd_free(c);
        in += used;
        len -= used;
    }
}

static void fuzz_run(const struct resp_limits *lim, const uint8_t *data, size_t size, size_t cut,
                     struct buf *t)
{
    struct resp_parser p;

    resp_parser_init(&p, lim);
    if (fuzz_feed(&p, data, cut, t) && fuzz_feed(&p, data + cut, size - cut, t)) {
        fuzz_append(t, "N", 1);
    }
    resp_parser_deinit(&p);
}

static void fuzz_compare(const struct resp_limits *lim, const uint8_t *data, size_t size,
                         size_t cut)
{
    struct buf whole, split;

    buf_init(&whole, 0);
    buf_init(&split, 0);
    fuzz_run(lim, data, size, size, &whole);
    fuzz_run(lim, data, size, cut, &split);
    if (whole.len != split.len || memcmp(buf_data(&whole), buf_data(&split), whole.len) != 0) {
        abort();
    }
    buf_free(&whole);
    buf_free(&split);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Knuth's multiplicative hash spreads the first byte over the whole input. */
    size_t cut = size == 0 ? 0 : (size_t)(data[0] * 2654435761u) % (size + 1);

    fuzz_compare(&fuzz_small, data, size, cut);
    fuzz_compare(NULL, data, size, cut);
    return 0;
}
