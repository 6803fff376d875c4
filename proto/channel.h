/*
 * channel.h - the sealed node-to-node channel, keyed from the cluster key.
 *
 * What it guarantees: a process without the cluster key can neither
 * complete a handshake (so it never joins), nor read, nor inject.  Both
 * ends prove they know the key over fresh random nonces from both sides,
 * so a recorded handshake cannot be replayed; every connection derives its
 * own pair of keys, one per direction, from an ephemeral key exchange
 * authenticated by the cluster key (so recorded traffic stays secret even
 * if the cluster key leaks later); every frame is encrypted and
 * authenticated with a nonce that is the frame's sequence number in its
 * direction, so a reordered, replayed, truncated or altered frame fails to
 * open.  A failure is final: the connection is dropped.  All cryptography
 * is libsodium's; proto/PROTOCOL.md gives the handshake byte by byte.
 *
 * The channel is a state machine without I/O: the caller feeds it the bytes
 * it read and sends the bytes it produces.  One channel per connection;
 * embed it, channel_init() it, channel_deinit() it.
 */
#ifndef RINGKV_CHANNEL_H
#define RINGKV_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define CHANNEL_KEY_BYTES 32
#define CHANNEL_VERSION 1
/* The cluster identity recorded in data directories: a hash of the key. */
#define CHANNEL_CLUSTER_ID_BYTES 16
/* The tag that authenticates a client context (channel_key_context_tag()). */
#define CHANNEL_CONTEXT_TAG_BYTES 16

/* The cluster key, held in libsodium's guarded memory. */
struct channel_key;

/*
 * Load a key file: 64 hex digits and a newline, as `ringkv keygen` writes
 * it.  Refused, with one line in err: a missing or unreadable file, a file
 * that group or others can read or write ("chmod 600 FILE"), malformed
 * content.  Errors: RK_EIO, RK_EINVAL, RK_ESYNTAX, RK_ENOMEM.
 */
int channel_key_load(struct channel_key **out, const char *path, char *err, size_t err_len);
/* A new random key. */
int channel_key_generate(struct channel_key **out);
/* Write k to a new file (O_EXCL, mode 0600).  RK_EIO with err set. */
int channel_key_write(const struct channel_key *k, const char *path, char *err, size_t err_len);
/* The key as 64 lowercase hex digits and a NUL. */
void channel_key_hex(const struct channel_key *k, char out[2 * CHANNEL_KEY_BYTES + 1]);
/* The cluster identity derived from the key (a keyed hash, not the key). */
void channel_key_cluster_id(const struct channel_key *k, uint8_t out[CHANNEL_CLUSTER_ID_BYTES]);
/*
 * The tag of a client context: a keyed hash (BLAKE2b, 16 bytes) under a
 * subkey of k, over key[0..key_len), the data key the context was read
 * from, and clock[0..clock_len), the encoding of its vector clock
 * (storage/vclock.h); channel.c gives the derivation.  KGET hands clients
 * the clock followed by this tag, and KSET and KDEL take a context only
 * when its tag is the one this function makes for their own key (compare
 * with crypto_verify_16(), in constant time), so a client can neither
 * forge a clock nor move one to another key or another cluster.  Both
 * inputs are borrowed for the call; key_len is at most UINT32_MAX
 * (asserted).
 */
void channel_key_context_tag(const struct channel_key *k, const uint8_t *key, size_t key_len,
                             const uint8_t *clock, size_t clock_len,
                             uint8_t out[CHANNEL_CONTEXT_TAG_BYTES]);
void channel_key_free(struct channel_key *k);

enum channel_role {
    CHANNEL_INITIATOR, /* the side that connected */
    CHANNEL_RESPONDER, /* the side that accepted */
};

enum channel_state {
    CHANNEL_HANDSHAKE,
    CHANNEL_OPEN,
    CHANNEL_FAILED,
};

struct channel_secrets; /* session keys, in guarded memory */

struct channel {
    enum channel_role role;
    enum channel_state state;
    const struct channel_key *key; /* borrowed; must outlive the channel */
    size_t frame_max;
    int step; /* handshake step, private */
    uint8_t nonce_local[32], nonce_remote[32];
    bool has_nonce_local, has_nonce_remote; /* each set once the handshake made or read it */
    uint8_t eph_public[32], eph_remote[32];
    uint8_t transcript[32]; /* hash of the handshake so far */
    struct channel_secrets *secrets;
    uint64_t tx_seq, rx_seq;
};

/* Results of channel_feed() besides errors. */
enum channel_result {
    CHANNEL_NEED_MORE = 0, /* no complete frame in the input */
    CHANNEL_PROGRESS = 1,  /* a handshake frame was taken in (a reply may be in out) */
    CHANNEL_MESSAGE = 2,   /* msg holds one opened message */
};

/* Set up a channel; frame_max bounds incoming frame bodies. */
int channel_init(struct channel *c, const struct channel_key *key, enum channel_role role,
                 size_t frame_max);
/* Wipe and release the session keys. */
void channel_deinit(struct channel *c);

/* Initiator: append the first handshake frame to out. */
int channel_start(struct channel *c, struct buf *out);

/*
 * Take in at most one frame from in[0..len); *used says how many bytes were
 * consumed (0 when the frame is not complete).  Handshake replies are
 * appended to out; an opened message is appended to msg (which the caller
 * clears between messages).  Errors, after which the channel is FAILED and
 * the connection must be dropped: RK_ETOOBIG (frame over frame_max; during
 * the handshake, over 256 bytes), RK_ESYNTAX (malformed handshake frame,
 * or a data frame before the handshake ended), RK_EMISMATCH (unsupported
 * protocol version), RK_EAUTH (wrong cluster key, or a frame that did not
 * open: altered, replayed, reordered or cut short), RK_ENOMEM.  Once the
 * channel is FAILED, this and channel_start() and channel_seal() return
 * the error that failed it.
 */
int channel_feed(struct channel *c, const uint8_t *in, size_t len, size_t *used, struct buf *out,
                 struct buf *msg) __attribute__((warn_unused_result));

/*
 * Seal msg[0..len) as the next frame and append it to out; only on an open
 * channel.  RK_ETOOBIG past frame_max, RK_ERANGE when the 2^64-1 sequence
 * numbers of the direction are spent, RK_ENOMEM; each fails the channel.
 */
int channel_seal(struct channel *c, const void *msg, size_t len, struct buf *out);

/*
 * Whether c's peer sent, as its nonce, the nonce that ours made: the
 * handshake of one of our own connections came back to us (a relay that
 * reflects it).  Both channels must have reached that point; a channel
 * compared with itself never matches.
 */
bool channel_nonce_reflected(const struct channel *c, const struct channel *ours);

static inline bool channel_is_open(const struct channel *c)
{
    return c->state == CHANNEL_OPEN;
}

#endif
