/*
 * fuzz_msg.c - fuzz target for msg_decode(), which reads every message a
 * peer sends once its frame has opened, and for the msgpack reader under it.
 *
 * Beyond "no crash", it checks that decoding and encoding agree: whatever
 * decodes must encode (the encoder validates what the decoder validates),
 * the encoding must decode to the same fields, and encoding those fields
 * again must give the same bytes.  A disagreement aborts, which both
 * libFuzzer and the replay driver report as a failure.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "mp.h"
#include "msg.h"

/* Nesting allowed when skipping the raw input as one msgpack value. */
#define FUZZ_SKIP_DEPTH 16

static bool fuzz_ident_equal(const struct msg_ident *a, const struct msg_ident *b)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->rack, b->rack) == 0 && a->version == b->version &&
           strcmp(a->peer_addr, b->peer_addr) == 0 && strcmp(a->client_addr, b->client_addr) == 0;
}

static bool fuzz_msg_equal(const struct msg *a, const struct msg *b)
{
    if (a->type != b->type) {
        return false;
    }
    if (a->type == MSG_IDENT) {
        return fuzz_ident_equal(&a->u.ident, &b->u.ident);
    }
    return a->u.ping.seq == b->u.ping.seq && a->u.ping.sent_ms == b->u.ping.sent_ms;
}

/* Encode m into out, which must be empty; abort if that fails. */
static void fuzz_encode(const struct msg *m, struct buf *out)
{
    if (msg_encode(m, out) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf once, twice;
    struct mp_reader r;
    struct msg m, back;

    mp_reader_init(&r, data, size);
    (void)mp_skip(&r, FUZZ_SKIP_DEPTH);
    if (r.pos > size) {
        abort();
    }
    if (msg_decode(data, size, &m) != 0) {
        return 0;
    }
    buf_init(&once, 0);
    buf_init(&twice, 0);
    fuzz_encode(&m, &once);
    if (msg_decode(buf_data(&once), once.len, &back) != 0 || !fuzz_msg_equal(&m, &back)) {
        abort();
    }
    fuzz_encode(&back, &twice);
    if (once.len != twice.len || memcmp(buf_data(&once), buf_data(&twice), once.len) != 0) {
        abort();
    }
    buf_free(&once);
    buf_free(&twice);
    return 0;
}
