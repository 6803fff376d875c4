/*
 * fuzz_welcome.c - fuzz target for the initiator's side of the channel
 * handshake: what channel_feed() does with the bytes a node receives on a
 * connection it dialled, the WELCOME parser first (a node dials members
 * and seeds, and whoever answers at those addresses writes these bytes).
 *
 * Input: byte 0, then the byte stream the responder sends.  The stream
 * reaches the initiator in two reads, split where byte 0 says, so frames
 * cut across reads are exercised.  Before each input the initiator is
 * set up and has sent its HELLO from a fixed-seed random stream (libsodium's
 * random source is replaced and reset for every input), so its nonce and
 * ephemeral key are the same on every run.  That lets the seed corpus hold
 * a WELCOME whose proof verifies, made by a responder that read that very
 * HELLO, followed by frames that responder sealed; the fuzzer mutates from
 * there, past the proof check into the data frames and msg_decode().
 *
 * Beyond "no crash" it checks the feed contract: NEED_MORE and errors
 * consume nothing, a frame result consumes at least a header and no more
 * than it was given, an error is final (fed again, the same bytes give the
 * same error), the channel is open exactly when a WELCOME was taken in,
 * and then a PROOF frame (4 + 35 bytes) is all it wrote.  A violation
 * aborts.
 */
#include <stdlib.h>

#include "buf.h"
#include "channel.h"
#include "frame.h"
#include "fuzz.h"
#include "fuzz_channel.h"

/* A PROOF frame: header and its 35-byte body (channel.c). */
#define FUZZ_PROOF_FRAME (FRAME_HEADER_BYTES + 35)

/* An initiator that has sent its HELLO (into hello), from the reset random stream. */
static void fuzz_initiator(struct channel *i, struct buf *hello)
{
    fuzz_draws = FUZZ_DRAWS_START;
    if (channel_init(i, fuzz_key, CHANNEL_INITIATOR, FUZZ_FRAME_MAX) != 0 ||
        channel_start(i, hello) != 0) {
        abort();
    }
}

/*
 * The initiator's part of the contract of one channel_feed() result (see
 * the file comment): open exactly when a WELCOME was taken in, and then a
 * PROOF frame is all it wrote.
 */
static void fuzz_check_initiator(const struct channel *c, int rc, bool was_open,
                                 const struct buf *out)
{
    if (!was_open && rc == CHANNEL_PROGRESS &&
        (!channel_is_open(c) || out->len != FUZZ_PROOF_FRAME)) {
        abort();
    }
    if (rc == CHANNEL_MESSAGE && !was_open) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct channel i;
    struct buf hello;
    size_t len, split;

    if (size == 0) {
        return 0;
    }
    fuzz_setup();
    len = size - 1;
    split = data[0] % (len + 1);
    buf_init(&hello, 0);
    fuzz_initiator(&i, &hello);
    (void)fuzz_feed(&i, data + 1, len, split, fuzz_check_initiator);
    channel_deinit(&i);
    buf_free(&hello);
    return 0;
}
