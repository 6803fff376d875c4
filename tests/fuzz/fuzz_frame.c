/*
 * fuzz_frame.c - fuzz target for channel_feed(), which takes in every byte
 * a peer sends: frames, the handshake, sealed data frames.
 *
 * Input: byte 0, then the byte stream a peer sends.  The stream reaches
 * the channel in two reads, split where byte 0 says, so frames cut across
 * reads are exercised.  Each input is fed to two receivers:
 *
 *   - a fresh responder, the handshake parser that anyone who can connect
 *     reaches;
 *   - the responder of a channel pair that has completed its handshake
 *     with the fixed key below, the data frame path.
 *
 * Opened messages go on to msg_decode().  libsodium's random source is
 * replaced by a fixed-seed stream that is reset for every input, so the
 * pair, its session keys and the fresh responder's nonce and ephemeral key
 * are the same on every run and in every process.  That is what lets the
 * seed corpus reach past the authentication: it holds the pair's
 * initiator stream (HELLO, PROOF and sealed messages, which the fresh
 * responder, drawing the same randomness as the pair's responder, accepts)
 * and frames sealed by the pair's initiator (which its responder opens),
 * and the fuzzer mutates from there.
 *
 * Beyond "no crash" it checks the feed contract: NEED_MORE and errors
 * consume nothing, a frame result consumes at least a header and no more
 * than it was given, and an error is final (fed again, the same bytes give
 * the same error).  A violation aborts.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "bytes.h"
#include "channel.h"
#include "error.h"
#include "frame.h"
#include "fuzz.h"
#include "msg.h"

/* Frames larger than this are refused, so mutated lengths stay cheap. */
#define FUZZ_FRAME_MAX (64 * 1024)

static uint64_t fuzz_draws;

static void fuzz_random_buf(void *const out, const size_t size)
{
    uint8_t seed[randombytes_SEEDBYTES] = {0};

    bytes_put_be64(seed, ++fuzz_draws);
    randombytes_buf_deterministic(out, size, seed);
}

static uint32_t fuzz_random(void)
{
    uint32_t v;

    fuzz_random_buf(&v, sizeof(v));
    return v;
}

static const char *fuzz_random_name(void)
{
    return "fuzz-fixed-seed";
}

static randombytes_implementation fuzz_random_impl = {
    .implementation_name = fuzz_random_name,
    .random = fuzz_random,
    .buf = fuzz_random_buf,
};

static struct channel_key *fuzz_key;

/* A buffer's bytes, NULL while it has never held any (no arithmetic on a NULL pointer). */
static const uint8_t *fuzz_data(const struct buf *b)
{
    return b->p == NULL ? NULL : buf_data(b);
}

static void fuzz_setup(void)
{
    if (fuzz_key != NULL) {
        return;
    }
    if (randombytes_set_implementation(&fuzz_random_impl) != 0 || sodium_init() < 0) {
        abort();
    }
    fuzz_draws = 0;
    if (channel_key_generate(&fuzz_key) != 0) {
        abort();
    }
}

/* Feed everything in holds to c, consuming what it takes; returns the last result. */
static int fuzz_drain(struct channel *c, struct buf *in, struct buf *out, struct buf *msg)
{
    struct msg m;
    size_t used;
    int rc;

    do {
        rc = channel_feed(c, fuzz_data(in), in->len, &used, out, msg);
        if ((rc == CHANNEL_NEED_MORE || rc < 0) != (used == 0) || used > in->len ||
            (used != 0 && used < FRAME_HEADER_BYTES)) {
            abort();
        }
        buf_consume(in, used);
        if (rc == CHANNEL_MESSAGE) {
            if (msg_decode(fuzz_data(msg), msg->len, &m) == 0) {
                msg_free(&m);
            }
            buf_clear(msg);
        }
    } while (rc > 0);
    return rc;
}

/* Feed stream[0..len) to c in two reads split at split. */
static int fuzz_feed(struct channel *c, const uint8_t *stream, size_t len, size_t split)
{
    struct buf in, out, msg;
    int rc;

    buf_init(&in, 0);
    buf_init(&out, 0);
    buf_init(&msg, 0);
    if (buf_append(&in, stream, split) != 0) {
        abort();
    }
    rc = fuzz_drain(c, &in, &out, &msg);
    if (rc == 0 && buf_append(&in, stream + split, len - split) != 0) {
        abort();
    }
    if (rc == 0) {
        rc = fuzz_drain(c, &in, &out, &msg);
    }
    if (rc < 0 && channel_feed(c, stream, len, &(size_t){0}, &out, &msg) != rc) {
        abort();
    }
    buf_free(&in);
    buf_free(&out);
    buf_free(&msg);
    return rc;
}

/* Move a's output into b and feed it; abort unless the handshake step succeeds. */
static void fuzz_step(struct channel *b, struct buf *wire)
{
    struct buf out, msg;
    size_t used;

    buf_init(&out, 0);
    buf_init(&msg, 0);
    if (channel_feed(b, fuzz_data(wire), wire->len, &used, &out, &msg) != CHANNEL_PROGRESS ||
        used != wire->len) {
        abort();
    }
    buf_clear(wire);
    if (buf_append(wire, fuzz_data(&out), out.len) != 0) {
        abort();
    }
    buf_free(&out);
    buf_free(&msg);
}

/*
 * Open the pair i -> r from the reset random stream.  *responder_draws is
 * where the stream stood when r took in HELLO, so a fresh responder can be
 * given the same randomness.
 */
static void fuzz_pair_open(struct channel *i, struct channel *r, uint64_t *responder_draws)
{
    struct buf wire;

    buf_init(&wire, 0);
    fuzz_draws = 1000;
    if (channel_init(i, fuzz_key, CHANNEL_INITIATOR, FUZZ_FRAME_MAX) != 0 ||
        channel_init(r, fuzz_key, CHANNEL_RESPONDER, FUZZ_FRAME_MAX) != 0 ||
        channel_start(i, &wire) != 0) {
        abort();
    }
    *responder_draws = fuzz_draws;
    fuzz_step(r, &wire);
    fuzz_step(i, &wire);
    fuzz_step(r, &wire);
    if (!channel_is_open(i) || !channel_is_open(r)) {
        abort();
    }
    buf_free(&wire);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct channel fresh, i, r;
    uint64_t responder_draws;
    size_t len, split;

    if (size == 0) {
        return 0;
    }
    fuzz_setup();
    len = size - 1;
    split = data[0] % (len + 1);
    fuzz_pair_open(&i, &r, &responder_draws);
    (void)fuzz_feed(&r, data + 1, len, split);
    fuzz_draws = responder_draws;
    if (channel_init(&fresh, fuzz_key, CHANNEL_RESPONDER, FUZZ_FRAME_MAX) != 0) {
        abort();
    }
    (void)fuzz_feed(&fresh, data + 1, len, split);
    channel_deinit(&fresh);
    channel_deinit(&i);
    channel_deinit(&r);
    return 0;
}
