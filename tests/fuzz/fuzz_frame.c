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
#include <stdlib.h>

#include "buf.h"
#include "channel.h"
#include "fuzz.h"
#include "fuzz_channel.h"

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
    fuzz_draws = FUZZ_DRAWS_START;
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
    (void)fuzz_feed(&r, data + 1, len, split, NULL);
    fuzz_draws = responder_draws;
    if (channel_init(&fresh, fuzz_key, CHANNEL_RESPONDER, FUZZ_FRAME_MAX) != 0) {
        abort();
    }
    (void)fuzz_feed(&fresh, data + 1, len, split, NULL);
    channel_deinit(&fresh);
    channel_deinit(&i);
    channel_deinit(&r);
    return 0;
}
