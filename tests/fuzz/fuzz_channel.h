/*
 * fuzz_channel.h - what the channel fuzz targets (fuzz_frame.c,
 * fuzz_welcome.c) share: libsodium's random source replaced by a
 * fixed-seed stream, so keys, nonces and ephemeral keys are the same on
 * every run and in every process (which is what lets a seed corpus reach
 * past the handshake's authentication), the one channel key, and the feed
 * of a byte stream to a channel in two reads with the feed contract
 * checked: NEED_MORE and errors consume nothing, a frame result consumes
 * at least a header and no more than it was given, and an error is final
 * (fed again, the same bytes give the same error).  Opened messages go on
 * to msg_decode().  A violation aborts.
 *
 * One stream and one key per target program: the state is static here.
 */
#ifndef RINGKV_FUZZ_CHANNEL_H
#define RINGKV_FUZZ_CHANNEL_H

#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>

#include "buf.h"
#include "bytes.h"
#include "channel.h"
#include "frame.h"
#include "msg.h"

/* Frames larger than this are refused, so mutated lengths stay cheap. */
#define FUZZ_FRAME_MAX (64 * 1024)
/* Where the random stream starts for each input. */
#define FUZZ_DRAWS_START 1000

/* Draws taken from the fixed-seed stream; a target resets it per input. */
static uint64_t fuzz_draws;

static inline void fuzz_random_buf(void *const out, const size_t size)
{
    uint8_t seed[randombytes_SEEDBYTES] = {0};

    bytes_put_be64(seed, ++fuzz_draws);
    randombytes_buf_deterministic(out, size, seed);
}

static inline uint32_t fuzz_random(void)
{
    uint32_t v;

    fuzz_random_buf(&v, sizeof(v));
    return v;
}

static inline const char *fuzz_random_name(void)
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
static inline const uint8_t *fuzz_data(const struct buf *b)
{
    return b->p == NULL ? NULL : buf_data(b);
}

/* Install the fixed-seed stream and make the key, once per process. */
static inline void fuzz_setup(void)
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

/*
 * A target's own check of one channel_feed() result, beyond the shared
 * contract: c after the feed, its result, whether c was open before it,
 * and what c has written so far.  NULL: none.
 */
typedef void (*fuzz_feed_check)(const struct channel *c, int rc, bool was_open,
                                const struct buf *out);

/* Feed everything in holds to c, consuming what it takes; returns the last result. */
static inline int fuzz_drain(struct channel *c, struct buf *in, struct buf *out, struct buf *msg,
                             fuzz_feed_check check)
{
    struct msg m;
    size_t used;
    int rc;

    do {
        bool was_open = channel_is_open(c);
        rc = channel_feed(c, fuzz_data(in), in->len, &used, out, msg);
        if ((rc == CHANNEL_NEED_MORE || rc < 0) != (used == 0) || used > in->len ||
            (used != 0 && used < FRAME_HEADER_BYTES)) {
            abort();
        }
        if (check != NULL) {
            check(c, rc, was_open, out);
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

/* Feed stream[0..len) to c in two reads split at split; returns the last result. */
static inline int fuzz_feed(struct channel *c, const uint8_t *stream, size_t len, size_t split,
                            fuzz_feed_check check)
{
    struct buf in, out, msg;
    int rc;

    buf_init(&in, 0);
    buf_init(&out, 0);
    buf_init(&msg, 0);
    if (buf_append(&in, stream, split) != 0) {
        abort();
    }
    rc = fuzz_drain(c, &in, &out, &msg, check);
    if (rc == 0 && buf_append(&in, stream + split, len - split) != 0) {
        abort();
    }
    if (rc == 0) {
        rc = fuzz_drain(c, &in, &out, &msg, check);
    }
    if (rc < 0 && channel_feed(c, stream, len, &(size_t){0}, &out, &msg) != rc) {
        abort();
    }
    buf_free(&in);
    buf_free(&out);
    buf_free(&msg);
    return rc;
}

#endif
