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
/* Where the random stream starts for each input. */
#define FUZZ_DRAWS_START 1000
/* A PROOF frame: header and its 35-byte body (channel.c). */
#define FUZZ_PROOF_FRAME (FRAME_HEADER_BYTES + 35)

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

/* An initiator that has sent its HELLO (into hello), from the reset random stream. */
static void fuzz_initiator(struct channel *i, struct buf *hello)
{
    fuzz_draws = FUZZ_DRAWS_START;
    if (channel_init(i, fuzz_key, CHANNEL_INITIATOR, FUZZ_FRAME_MAX) != 0 ||
        channel_start(i, hello) != 0) {
        abort();
    }
}

/* The contract of one channel_feed() result (see the file comment). */
static void fuzz_check(const struct channel *c, int rc, size_t used, size_t len, bool was_open,
                       const struct buf *out)
{
    if ((rc == CHANNEL_NEED_MORE || rc < 0) != (used == 0) || used > len ||
        (used != 0 && used < FRAME_HEADER_BYTES)) {
        abort();
    }
    if (!was_open && rc == CHANNEL_PROGRESS &&
        (!channel_is_open(c) || out->len != FUZZ_PROOF_FRAME)) {
        abort();
    }
    if (rc == CHANNEL_MESSAGE && !was_open) {
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
        bool was_open = channel_is_open(c);
        rc = channel_feed(c, fuzz_data(in), in->len, &used, out, msg);
        fuzz_check(c, rc, used, in->len, was_open, out);
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
static void fuzz_feed(struct channel *c, const uint8_t *stream, size_t len, size_t split)
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
    fuzz_feed(&i, data + 1, len, split);
    channel_deinit(&i);
    buf_free(&hello);
    return 0;
}
