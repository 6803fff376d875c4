/*
 * fuzz_msg_kv.c - fuzz target for the bodies of the data operations of
 * peer requests (proto/msg_kv.c): what a replica reads from a coordinator
 * (REPLICA_WRITE, REPLICA_READ, FORWARD; REPLICA_REAP and HINTS_HELD carry the
 * bodies of the first two) and what a coordinator reads back
 * (the answer).  The first byte picks the decoder; the rest is the body.
 *
 * Beyond "no crash": whatever decodes must encode, and the encoding must
 * decode to the same fields (the decoder's bounds are the encoder's); a
 * disagreement aborts.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "msg_kv.h"

static bool fuzz_bytes_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return (a == NULL) == (b == NULL) && alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static void fuzz_write(const uint8_t *in, size_t len)
{
    struct msg_replica_write m, again;
    struct buf out;

    if (msg_replica_write_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_replica_write_encode(&m, &out) != 0 ||
        msg_replica_write_decode(buf_data(&out), out.len, &again) != 0 ||
        !fuzz_bytes_equal(m.key, m.key_len, again.key, again.key_len) ||
        !fuzz_bytes_equal(m.record, m.record_len, again.record, again.record_len) ||
        strcmp(m.hint, again.hint) != 0) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_read(const uint8_t *in, size_t len)
{
    struct msg_replica_read m, again;
    struct buf out;

    if (msg_replica_read_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_replica_read_encode(&m, &out) != 0 ||
        msg_replica_read_decode(buf_data(&out), out.len, &again) != 0 ||
        !fuzz_bytes_equal(m.key, m.key_len, again.key, again.key_len) || m.part != again.part ||
        m.from != again.from || m.digest != again.digest) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_forward(const uint8_t *in, size_t len)
{
    struct msg_forward m, again;
    struct buf out;

    if (msg_forward_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_forward_encode(&m, &out) != 0 ||
        msg_forward_decode(buf_data(&out), out.len, &again) != 0 || m.kind != again.kind ||
        m.tombstone != again.tombstone || m.quorum != again.quorum || m.part != again.part ||
        m.from != again.from || m.digest != again.digest || m.expiry != again.expiry ||
        m.expire_ms != again.expire_ms || m.hops != again.hops ||
        !fuzz_bytes_equal(m.key, m.key_len, again.key, again.key_len) ||
        !fuzz_bytes_equal(m.value, m.value_len, again.value, again.value_len) ||
        !fuzz_bytes_equal(m.context, m.context_len, again.context, again.context_len)) {
        abort();
    }
    buf_free(&out);
}

static void fuzz_answer(const uint8_t *in, size_t len)
{
    struct msg_kv_answer m, again;
    struct buf out;

    if (msg_kv_answer_decode(in, len, &m) != 0) {
        return;
    }
    buf_init(&out, 0);
    if (msg_kv_answer_encode(&m, &out) != 0 ||
        msg_kv_answer_decode(buf_data(&out), out.len, &again) != 0 || m.status != again.status ||
        m.answered != again.answered || m.needed != again.needed || m.flag != again.flag ||
        m.part != again.part || m.first != again.first || m.next != again.next ||
        m.digest != again.digest ||
        !fuzz_bytes_equal(m.record, m.record_len, again.record, again.record_len) ||
        (m.status != MSG_KV_NOTMINE &&
         msg_kv_status_from_rk(msg_kv_status_to_rk(m.status)) != m.status)) {
        abort();
    }
    buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const targets[])(const uint8_t *, size_t) = {fuzz_write, fuzz_read, fuzz_forward,
                                                               fuzz_answer};

    if (size == 0) {
        return 0;
    }
    targets[data[0] % 4](data + 1, size - 1);
    return 0;
}
