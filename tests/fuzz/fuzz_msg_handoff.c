/*
 * fuzz_msg_handoff.c - fuzz target for the bodies and answers of the
 * ownership-handoff operations of peer requests (proto/msg_handoff.c):
 * what a source reads from the node that pulls an arc (HANDOFF_PULL,
 * HANDOFF_DIGEST, HANDOFF_DONE) and what that node reads back (their
 * answers).  The first byte picks the decoder; the rest is the input.
 *
 * Beyond "no crash": whatever decodes must encode, and the encoding must
 * decode to the same fields (the decoder's bounds are the encoder's); a
 * disagreement aborts.  A pull answer's items go into a caller's array
 * whose capacity comes from the selector byte too, so a count over it is
 * exercised as well.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "msg_handoff.h"

static struct msg_handoff_item fuzz_items[MSG_HANDOFF_ITEMS_MAX];
static struct msg_handoff_item fuzz_items_again[MSG_HANDOFF_ITEMS_MAX];

static bool fuzz_bytes_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return (a == NULL) == (b == NULL) && alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static void fuzz_pull(const uint8_t *in, size_t len, size_t cap)
{
    struct msg_handoff_pull m, again;
    struct buf out;

    (void)cap;
    if (msg_handoff_pull_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_handoff_pull_encode(&m, &out) != 0 ||
        msg_handoff_pull_decode(buf_data(&out), out.len, &again) != 0 || m.target != again.target ||
        m.start != again.start || m.end != again.end || m.has_after != again.has_after ||
        m.max_bytes != again.max_bytes || m.max_items != again.max_items ||
        !fuzz_bytes_equal(m.after, m.after_len, again.after, again.after_len)) {
        abort();
    }
    buf_free(&out);
}

static bool fuzz_items_equal(const struct msg_handoff_item *a, const struct msg_handoff_item *b,
                             size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!fuzz_bytes_equal(a[i].key, a[i].key_len, b[i].key, b[i].key_len) ||
            !fuzz_bytes_equal(a[i].record, a[i].record_len, b[i].record, b[i].record_len)) {
            return false;
        }
    }
    return true;
}

static void fuzz_pull_answer(const uint8_t *in, size_t len, size_t cap)
{
    struct msg_handoff_pull_answer m, again;
    struct buf out;

    if (msg_handoff_pull_answer_decode(in, len, &m, fuzz_items, cap) != 0) {
        return;
    }
    if (m.n_items > cap || (m.n_items > 0 && m.items != fuzz_items)) {
        abort();
    }
    buf_init(&out, 0);
    if (msg_handoff_pull_answer_encode(&m, &out) != 0 ||
        msg_handoff_pull_answer_decode(buf_data(&out), out.len, &again, fuzz_items_again,
                                       MSG_HANDOFF_ITEMS_MAX) != 0 ||
        m.status != again.status || m.n_items != again.n_items || m.done != again.done ||
        m.has_next != again.has_next ||
        !fuzz_bytes_equal(m.next, m.next_len, again.next, again.next_len) ||
        !fuzz_items_equal(m.items, again.items, m.n_items)) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_digest(const uint8_t *in, size_t len, size_t cap)
{
    struct msg_handoff_digest m, again;
    struct buf out;

    (void)cap;
    if (msg_handoff_digest_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_handoff_digest_encode(&m, &out) != 0 ||
        msg_handoff_digest_decode(buf_data(&out), out.len, &again) != 0 ||
        m.target != again.target || m.start != again.start || m.end != again.end ||
        m.parts != again.parts || m.count_only != again.count_only) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_digest_answer(const uint8_t *in, size_t len, size_t cap)
{
    static struct msg_handoff_digest_answer m, again;
    struct buf out;

    (void)cap;
    if (msg_handoff_digest_answer_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_handoff_digest_answer_encode(&m, &out) != 0 ||
        msg_handoff_digest_answer_decode(buf_data(&out), out.len, &again) != 0 ||
        m.status != again.status || m.keys != again.keys || m.parts != again.parts ||
        memcmp(m.digests, again.digests, sizeof(m.digests)) != 0) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_done(const uint8_t *in, size_t len, size_t cap)
{
    struct msg_handoff_done m, again;
    struct buf out;

    (void)cap;
    if (msg_handoff_done_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_handoff_done_encode(&m, &out) != 0 ||
        msg_handoff_done_decode(buf_data(&out), out.len, &again) != 0 ||
        memcmp(&m, &again, sizeof(m)) != 0) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_done_answer(const uint8_t *in, size_t len, size_t cap)
{
    struct msg_handoff_done_answer m, again;
    struct buf out;

    (void)cap;
    if (msg_handoff_done_answer_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_handoff_done_answer_encode(&m, &out) != 0 ||
        msg_handoff_done_answer_decode(buf_data(&out), out.len, &again) != 0 ||
        m.status != again.status) {
        abort();
    }
    buf_free(&out);
}

/*
 * The selector byte: its value modulo 6 picks the decoder; a pull answer
 * takes MSG_HANDOFF_ITEMS_MAX items unless bit 7 is set, then at most
 * (byte / 6) % 4 (0 .. 3), so answers over the caller's array are tried.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const targets[])(const uint8_t *, size_t, size_t) = {
        fuzz_pull, fuzz_pull_answer, fuzz_digest, fuzz_digest_answer, fuzz_done, fuzz_done_answer};
    size_t cap;

    if (size == 0) {
        return 0;
    }
    cap = (data[0] & 0x80) != 0 ? (size_t)(data[0] / 6) % 4 : MSG_HANDOFF_ITEMS_MAX;
    targets[data[0] % 6](data + 1, size - 1, cap);
    return 0;
}
