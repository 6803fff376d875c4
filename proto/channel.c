/*
 * channel.c - the sealed node-to-node channel (channel.h): cluster key
 * files, the handshake, and sealing and opening data frames.
 *
 * This file owns the handshake format; proto/PROTOCOL.md gives the same
 * layout with example bytes.  Every handshake body is a msgpack array in a
 * frame (frame.h) of at most CHANNEL_HANDSHAKE_FRAME_MAX bytes:
 *
 *   HELLO    initiator -> responder
 *     str    magic          "ringkv"
 *     uint   version        CHANNEL_VERSION
 *     bin    nonce_i        32 random bytes
 *     bin    eph_i          X25519 ephemeral public key (crypto_kx)
 *   WELCOME  responder -> initiator
 *     uint   version        CHANNEL_VERSION
 *     bin    nonce_r        32 random bytes
 *     bin    eph_r          X25519 ephemeral public key (crypto_kx)
 *     bin    proof_r        32 bytes, below
 *   PROOF    initiator -> responder
 *     bin    proof_i        32 bytes, below
 *
 * Keys and hashes, H being BLAKE2b-256 (crypto_generichash) and K the
 * cluster key:
 *
 *   k_auth  = crypto_kdf_derive_from_key(id 1, context "ringkvch", K)
 *   k_sess  = crypto_kdf_derive_from_key(id 2, context "ringkvch", K)
 *   k_ctx   = crypto_kdf_derive_from_key(id 3, context "ringkvch", K)
 *   t0      = H("ringkv channel v1")
 *   t1      = H(t0 || HELLO body)
 *   t2      = H(t1 || WELCOME body up to, not including, proof_r's element)
 *   proof_r = H_keyed(k_auth, "ringkv responder proof" || t2)
 *   t3      = H(t2 || proof_r)
 *   proof_i = H_keyed(k_auth, "ringkv initiator proof" || t3)
 *   kx_i2r, kx_r2i = crypto_kx session keys (initiator = client)
 *   key_i2r = H_keyed(k_sess, "ringkv i2r" || kx_i2r || t3)
 *   key_r2i = H_keyed(k_sess, "ringkv r2i" || kx_r2i || t3)
 *
 * The transcript covers both nonces and both ephemeral keys, so each proof
 * is fresh for its connection and a recorded one is worthless elsewhere;
 * the two proofs carry different labels, so one side's proof is never
 * accepted as the other's.  The initiator checks proof_r before it sends
 * anything that depends on the key; the responder reveals only random
 * values and a MAC until proof_i has been checked, and only then opens.
 * Ephemeral secret keys are wiped as soon as the session keys exist, which
 * is what keeps recorded traffic secret if the cluster key leaks later.
 *
 * Data frames, once the channel is open: the body is
 * crypto_aead_chacha20poly1305_ietf(message) with the sender's key for its
 * direction, associated data the 4-byte frame header, and as nonce four
 * zero bytes followed by the frame's sequence number in that direction
 * (big-endian u64, from 0).  The receiver opens frame n with nonce n only,
 * so any reordering, replay, loss, cut or change fails to open.
 *
 * Reflection.  A relay without the key can connect a node's outgoing
 * handshake to that same node's peer port: the node then completes a
 * handshake with itself, since both ends know the key.  Each channel
 * keeps the nonces it made and read (has_nonce_local, has_nonce_remote),
 * and channel_nonce_reflected() lets the owner of all of a node's channels
 * refuse a HELLO or WELCOME that carries one of its own nonces, before it
 * answers (PROTOCOL.md section 5).
 *
 * Any error is final: the channel turns FAILED, its session keys are wiped
 * and the error is kept in step, which every later call returns.
 *
 * Client contexts.  k_ctx never touches the channel: it authenticates the
 * contexts KGET hands to clients (src/node/commands.c), so that a KSET or
 * KDEL takes only a clock some node of this cluster made for that key.
 * Their tag, channel_key_context_tag():
 *
 *   tag = H_keyed(k_ctx, len(key) || key || clock), 16 bytes of output
 *
 * with len(key) the data key's length as a 4-byte big-endian integer (so
 * no key and clock pair reads as another) and clock the vector clock's
 * encoding (storage/vclock.h).  A new cluster key makes every earlier
 * context fail.
 */
#include "channel.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <msgpack.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bytes.h"
#include "error.h"
#include "frame.h"
#include "hex.h"
#include "mp.h"

#define CHANNEL_HASH_BYTES 32
#define CHANNEL_NONCE_BYTES 32
#define CHANNEL_MAGIC "ringkv"
#define CHANNEL_KDF_CONTEXT "ringkvch"
#define CHANNEL_SUBKEY_AUTH 1
#define CHANNEL_SUBKEY_SESSION 2
#define CHANNEL_SUBKEY_CONTEXT 3
#define CHANNEL_LABEL_TRANSCRIPT "ringkv channel v1"
#define CHANNEL_LABEL_PROOF_R "ringkv responder proof"
#define CHANNEL_LABEL_PROOF_I "ringkv initiator proof"
#define CHANNEL_LABEL_I2R "ringkv i2r"
#define CHANNEL_LABEL_R2I "ringkv r2i"
#define CHANNEL_LABEL_CLUSTER_ID "ringkv cluster id v1"
/*
 * Largest handshake frame body.  The bodies are 77, 104 and 35 bytes; the
 * bound stops a peer that has proved nothing from making us buffer a
 * frame_max-sized frame.
 */
#define CHANNEL_HANDSHAKE_FRAME_MAX 256
/* Elements of the handshake arrays, and their bodies' sizes in bytes. */
#define CHANNEL_HELLO_FIELDS 4
#define CHANNEL_WELCOME_FIELDS 4
#define CHANNEL_PROOF_FIELDS 1
#define CHANNEL_HELLO_BYTES 77
#define CHANNEL_WELCOME_BYTES 104
#define CHANNEL_PROOF_BYTES 35
/* Most elements we look at in a handshake array before refusing it. */
#define CHANNEL_HANDSHAKE_FIELDS_MAX 16
#define CHANNEL_TAG_BYTES crypto_aead_chacha20poly1305_ietf_ABYTES
#define CHANNEL_AEAD_NONCE_BYTES crypto_aead_chacha20poly1305_ietf_NPUBBYTES
/* A key file: 64 hex digits and a newline. */
#define CHANNEL_KEY_HEX_BYTES (2 * CHANNEL_KEY_BYTES)
#define CHANNEL_KEY_FILE_BYTES (CHANNEL_KEY_HEX_BYTES + 1)

struct channel_key {
    uint8_t key[CHANNEL_KEY_BYTES];
    uint8_t auth[CHANNEL_HASH_BYTES];    /* k_auth: proofs */
    uint8_t session[CHANNEL_HASH_BYTES]; /* k_sess: mixed into the session keys */
    uint8_t context[CHANNEL_HASH_BYTES]; /* k_ctx: client context tags */
};

struct channel_secrets {
    uint8_t eph_secret[crypto_kx_SECRETKEYBYTES]; /* wiped once the session keys exist */
    uint8_t kx_rx[crypto_kx_SESSIONKEYBYTES];     /* crypto_kx output, wiped after mixing */
    uint8_t kx_tx[crypto_kx_SESSIONKEYBYTES];
    uint8_t tx[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
    uint8_t rx[crypto_aead_chacha20poly1305_ietf_KEYBYTES];
};

/* Handshake steps (channel.step while the channel is not FAILED). */
enum channel_step {
    CHANNEL_STEP_IDLE,          /* initiator before channel_start(); responder awaiting HELLO */
    CHANNEL_STEP_AWAIT_WELCOME, /* initiator */
    CHANNEL_STEP_AWAIT_PROOF,   /* responder */
    CHANNEL_STEP_DONE,
    CHANNEL_STEP_COUNT,
};

/*
 * A handshake body under construction: msgpack-c's packer writes here.
 * The bodies have fixed sizes well below the buffer (asserted where each
 * is built), so the packer's writes cannot fail.
 */
struct channel_body {
    uint8_t p[CHANNEL_HANDSHAKE_FRAME_MAX];
    size_t len;
};

static int channel_fail(struct channel *c, int err);

/* --- cluster keys ---------------------------------------------------------- */

static void channel_err(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void channel_err(char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || err_len == 0) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, err_len, fmt, ap);
    va_end(ap);
}

static int channel_sodium_ready(void)
{
    return sodium_init() < 0 ? RK_EIO : 0;
}

/* A key in guarded memory, its subkeys derived from k->key, then made read-only. */
static void channel_key_finish(struct channel_key *k)
{
    crypto_kdf_derive_from_key(k->auth, sizeof(k->auth), CHANNEL_SUBKEY_AUTH, CHANNEL_KDF_CONTEXT,
                               k->key);
    crypto_kdf_derive_from_key(k->session, sizeof(k->session), CHANNEL_SUBKEY_SESSION,
                               CHANNEL_KDF_CONTEXT, k->key);
    crypto_kdf_derive_from_key(k->context, sizeof(k->context), CHANNEL_SUBKEY_CONTEXT,
                               CHANNEL_KDF_CONTEXT, k->key);
    sodium_mprotect_readonly(k);
}

static int channel_key_alloc(struct channel_key **out)
{
    int rc = channel_sodium_ready();

    *out = NULL;
    if (rc != 0) {
        return rc;
    }
    *out = sodium_malloc(sizeof(**out));
    return *out == NULL ? RK_ENOMEM : 0;
}

int channel_key_generate(struct channel_key **out)
{
    int rc = channel_key_alloc(out);

    if (rc != 0) {
        return rc;
    }
    randombytes_buf((*out)->key, sizeof((*out)->key));
    channel_key_finish(*out);
    return 0;
}

void channel_key_free(struct channel_key *k)
{
    if (k != NULL) {
        sodium_free(k);
    }
}

void channel_key_hex(const struct channel_key *k, char out[2 * CHANNEL_KEY_BYTES + 1])
{
    hex_encode(out, k->key, sizeof(k->key));
}

void channel_key_cluster_id(const struct channel_key *k, uint8_t out[CHANNEL_CLUSTER_ID_BYTES])
{
    crypto_generichash(out, CHANNEL_CLUSTER_ID_BYTES, (const uint8_t *)CHANNEL_LABEL_CLUSTER_ID,
                       strlen(CHANNEL_LABEL_CLUSTER_ID), k->key, sizeof(k->key));
}

void channel_key_context_tag(const struct channel_key *k, const uint8_t *key, size_t key_len,
                             const uint8_t *clock, size_t clock_len,
                             uint8_t out[CHANNEL_CONTEXT_TAG_BYTES])
{
    crypto_generichash_state st;
    uint8_t len_be[4];

    assert(key_len <= UINT32_MAX && "channel_key_context_tag: key length over 32 bits");
    bytes_put_be32(len_be, (uint32_t)key_len);
    crypto_generichash_init(&st, k->context, sizeof(k->context), CHANNEL_CONTEXT_TAG_BYTES);
    crypto_generichash_update(&st, len_be, sizeof(len_be));
    crypto_generichash_update(&st, key, key_len);
    crypto_generichash_update(&st, clock, clock_len);
    crypto_generichash_final(&st, out, CHANNEL_CONTEXT_TAG_BYTES);
    sodium_memzero(&st, sizeof(st));
}

/* The open file must be a regular file that only its owner can read or write. */
static int channel_key_file_check(int fd, const char *path, char *err, size_t err_len)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        channel_err(err, err_len, "cannot stat cluster key file %s: %s", path, strerror(errno));
        return RK_EIO;
    }
    if (!S_ISREG(st.st_mode)) {
        channel_err(err, err_len, "cluster key file %s is not a regular file", path);
        return RK_EINVAL;
    }
    if ((st.st_mode & 077) != 0) {
        channel_err(
            err, err_len,
            "cluster key file %s: others can read or write it (mode %03o); run chmod 600 %s", path,
            (unsigned)(st.st_mode & 0777), path);
        return RK_EINVAL;
    }
    return 0;
}

/* Read up to cap bytes (fewer only at end of file) into p. */
static int channel_read_full(int fd, uint8_t *p, size_t cap, size_t *n)
{
    ssize_t got;

    *n = 0;
    while (*n < cap) {
        got = read(fd, p + *n, cap - *n);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            return RK_EIO;
        }
        if (got == 0) {
            break;
        }
        *n += (size_t)got;
    }
    return 0;
}

/* Parse a key file's content, exactly 64 hex digits and a newline, into k->key. */
static int channel_key_parse(struct channel_key *k, const uint8_t *text, size_t n)
{
    if (n != CHANNEL_KEY_FILE_BYTES || text[CHANNEL_KEY_HEX_BYTES] != '\n') {
        return RK_ESYNTAX;
    }
    if (!hex_decode(k->key, (const char *)text, CHANNEL_KEY_HEX_BYTES)) {
        return RK_ESYNTAX;
    }
    return 0;
}

/* Read and parse the key from an open, checked key file. */
static int channel_key_read(struct channel_key *k, int fd, const char *path, char *err,
                            size_t err_len)
{
    uint8_t text[CHANNEL_KEY_FILE_BYTES + 1];
    size_t n;
    int rc = channel_read_full(fd, text, sizeof(text), &n);

    if (rc != 0) {
        channel_err(err, err_len, "cannot read cluster key file %s: %s", path, strerror(errno));
        goto out_wipe;
    }
    rc = channel_key_parse(k, text, n);
    if (rc != 0) {
        channel_err(err, err_len,
                    "cluster key file %s must hold 64 hex digits and a newline "
                    "(write one with: ringkv keygen FILE)",
                    path);
    }
out_wipe:
    sodium_memzero(text, sizeof(text));
    return rc;
}

int channel_key_load(struct channel_key **out, const char *path, char *err, size_t err_len)
{
    struct channel_key *k;
    int fd, rc;

    *out = NULL;
    rc = channel_key_alloc(&k);
    if (rc != 0) {
        channel_err(err, err_len, "cannot set up libsodium's guarded memory for the cluster key");
        return rc;
    }
    /* O_NONBLOCK: opening a FIFO must not hang before fstat() refuses it. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        channel_err(err, err_len, "cannot open cluster key file %s: %s", path, strerror(errno));
        rc = RK_EIO;
        goto out_free;
    }
    rc = channel_key_file_check(fd, path, err, err_len);
    if (rc == 0) {
        rc = channel_key_read(k, fd, path, err, err_len);
    }
    close(fd);
    if (rc != 0) {
        goto out_free;
    }
    channel_key_finish(k);
    *out = k;
    return 0;
out_free:
    sodium_free(k);
    return rc;
}

static int channel_write_full(int fd, const char *p, size_t len)
{
    ssize_t put;

    while (len > 0) {
        put = write(fd, p, len);
        if (put < 0 && errno == EINTR) {
            continue;
        }
        if (put < 0) {
            return RK_EIO;
        }
        p += put;
        len -= (size_t)put;
    }
    return 0;
}

/* fsync the directory holding path, so the new file's name is durable. */
static int channel_sync_dir(const char *path)
{
    char *copy = strdup(path);
    int fd, rc = RK_EIO;

    if (copy == NULL) {
        return RK_ENOMEM;
    }
    fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        rc = fsync(fd) == 0 ? 0 : RK_EIO;
        close(fd);
    }
    free(copy);
    return rc;
}

/* Write the key's file content to fd and make it durable. */
static int channel_key_put(const struct channel_key *k, int fd)
{
    char text[CHANNEL_KEY_FILE_BYTES + 1];
    int rc;

    channel_key_hex(k, text);
    text[CHANNEL_KEY_HEX_BYTES] = '\n';
    rc = fchmod(fd, 0600) == 0 ? channel_write_full(fd, text, CHANNEL_KEY_FILE_BYTES) : RK_EIO;
    sodium_memzero(text, sizeof(text));
    if (rc == 0 && fsync(fd) != 0) {
        rc = RK_EIO;
    }
    return rc;
}

int channel_key_write(const struct channel_key *k, const char *path, char *err, size_t err_len)
{
    int fd, rc;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        channel_err(err, err_len, "cannot create cluster key file %s: %s", path, strerror(errno));
        return RK_EIO;
    }
    rc = channel_key_put(k, fd);
    if (close(fd) != 0 && rc == 0) {
        rc = RK_EIO;
    }
    if (rc != 0) {
        channel_err(err, err_len, "cannot write cluster key file %s: %s", path, strerror(errno));
        goto out_unlink;
    }
    rc = channel_sync_dir(path);
    if (rc != 0) {
        channel_err(err, err_len, "cannot sync the directory of %s: %s", path, strerror(errno));
    }
    return rc;
out_unlink:
    unlink(path);
    return rc;
}

/* --- hashes ---------------------------------------------------------------- */

/* t = H(t || data). */
static void channel_absorb(uint8_t t[CHANNEL_HASH_BYTES], const uint8_t *data, size_t len)
{
    crypto_generichash_state st;

    crypto_generichash_init(&st, NULL, 0, CHANNEL_HASH_BYTES);
    crypto_generichash_update(&st, t, CHANNEL_HASH_BYTES);
    crypto_generichash_update(&st, data, len);
    crypto_generichash_final(&st, t, CHANNEL_HASH_BYTES);
}

/* out = H_keyed(key, label || a || b), a and b 32 bytes each (b may be NULL). */
static void channel_mac(uint8_t out[CHANNEL_HASH_BYTES], const uint8_t key[CHANNEL_HASH_BYTES],
                        const char *label, const uint8_t *a, const uint8_t *b)
{
    crypto_generichash_state st;

    crypto_generichash_init(&st, key, CHANNEL_HASH_BYTES, CHANNEL_HASH_BYTES);
    crypto_generichash_update(&st, (const uint8_t *)label, strlen(label));
    crypto_generichash_update(&st, a, CHANNEL_HASH_BYTES);
    if (b != NULL) {
        crypto_generichash_update(&st, b, CHANNEL_HASH_BYTES);
    }
    crypto_generichash_final(&st, out, CHANNEL_HASH_BYTES);
    sodium_memzero(&st, sizeof(st));
}

/* Compare a received proof with the one computed over our transcript, in constant time. */
static __attribute__((warn_unused_result)) int
channel_proof_check(const struct channel *c, const char *label, const uint8_t *proof)
{
    uint8_t want[CHANNEL_HASH_BYTES];
    int ok;

    channel_mac(want, c->key->auth, label, c->transcript, NULL);
    ok = crypto_verify_32(want, proof) == 0;
    sodium_memzero(want, sizeof(want));
    return ok ? 0 : RK_EAUTH;
}

/*
 * Derive both session keys from the ephemeral exchange, the cluster key and
 * the transcript, then wipe the ephemeral secret.  RK_EAUTH when the peer's
 * ephemeral key is a point that gives no shared secret.
 */
static int channel_derive(struct channel *c)
{
    struct channel_secrets *s = c->secrets;
    const uint8_t *i2r, *r2i;
    int rc;

    if (c->role == CHANNEL_INITIATOR) {
        rc = crypto_kx_client_session_keys(s->kx_rx, s->kx_tx, c->eph_public, s->eph_secret,
                                           c->eph_remote);
    } else {
        rc = crypto_kx_server_session_keys(s->kx_rx, s->kx_tx, c->eph_public, s->eph_secret,
                                           c->eph_remote);
    }
    sodium_memzero(s->eph_secret, sizeof(s->eph_secret));
    if (rc != 0) {
        return RK_EAUTH;
    }
    i2r = c->role == CHANNEL_INITIATOR ? s->kx_tx : s->kx_rx;
    r2i = c->role == CHANNEL_INITIATOR ? s->kx_rx : s->kx_tx;
    channel_mac(c->role == CHANNEL_INITIATOR ? s->tx : s->rx, c->key->session, CHANNEL_LABEL_I2R,
                i2r, c->transcript);
    channel_mac(c->role == CHANNEL_INITIATOR ? s->rx : s->tx, c->key->session, CHANNEL_LABEL_R2I,
                r2i, c->transcript);
    sodium_memzero(s->kx_rx, sizeof(s->kx_rx));
    sodium_memzero(s->kx_tx, sizeof(s->kx_tx));
    return 0;
}

/* --- handshake frames ------------------------------------------------------ */

static int channel_body_write(void *data, const char *p, size_t len)
{
    struct channel_body *b = data;

    if (len > sizeof(b->p) - b->len) {
        return -1;
    }
    memcpy(b->p + b->len, p, len);
    b->len += len;
    return 0;
}

/* Why buf_reserve(b, n) returned NULL: b's bound, or memory. */
static int channel_reserve_error(const struct buf *b, size_t n)
{
    return b->max != 0 && (n > b->max || b->len > b->max - n) ? RK_ETOOBIG : RK_ENOMEM;
}

/* Append a frame holding p[0..len) to out. */
static int channel_put_frame(struct buf *out, const uint8_t *p, size_t len)
{
    uint8_t *dst = buf_reserve(out, FRAME_HEADER_BYTES + len);

    if (dst == NULL) {
        return channel_reserve_error(out, FRAME_HEADER_BYTES + len);
    }
    frame_put_header(dst, (uint32_t)len);
    memcpy(dst + FRAME_HEADER_BYTES, p, len);
    buf_commit(out, FRAME_HEADER_BYTES + len);
    return 0;
}

/* Fresh nonce and ephemeral key pair for this side. */
static void channel_make_ephemeral(struct channel *c)
{
    randombytes_buf(c->nonce_local, sizeof(c->nonce_local));
    c->has_nonce_local = true;
    crypto_kx_keypair(c->eph_public, c->secrets->eph_secret);
}

int channel_start(struct channel *c, struct buf *out)
{
    struct channel_body b = {.len = 0};
    msgpack_packer pk;
    int rc;

    assert(c->role == CHANNEL_INITIATOR && "channel_start: only the initiator starts");
    if (c->state == CHANNEL_FAILED) {
        return c->step;
    }
    assert(c->step == CHANNEL_STEP_IDLE && "channel_start: the handshake has already started");
    channel_make_ephemeral(c);
    msgpack_packer_init(&pk, &b, channel_body_write);
    msgpack_pack_array(&pk, CHANNEL_HELLO_FIELDS);
    msgpack_pack_str_with_body(&pk, CHANNEL_MAGIC, strlen(CHANNEL_MAGIC));
    msgpack_pack_uint32(&pk, CHANNEL_VERSION);
    msgpack_pack_bin_with_body(&pk, c->nonce_local, sizeof(c->nonce_local));
    msgpack_pack_bin_with_body(&pk, c->eph_public, sizeof(c->eph_public));
    crypto_generichash(c->transcript, CHANNEL_HASH_BYTES, (const uint8_t *)CHANNEL_LABEL_TRANSCRIPT,
                       strlen(CHANNEL_LABEL_TRANSCRIPT), NULL, 0);
    assert(b.len == CHANNEL_HELLO_BYTES);
    channel_absorb(c->transcript, b.p, b.len);
    rc = channel_put_frame(out, b.p, b.len);
    if (rc != 0) {
        return channel_fail(c, rc);
    }
    c->step = CHANNEL_STEP_AWAIT_WELCOME;
    return 0;
}

/* Read a bin element of exactly CHANNEL_HASH_BYTES (32) bytes into out. */
static void channel_read_32(struct mp_reader *r, uint8_t out[32])
{
    const uint8_t *p;
    size_t len;

    if (mp_read_bin(r, 32, &p, &len) == 0 && len != 32) {
        r->err = RK_ESYNTAX;
    }
    if (r->err == 0) {
        memcpy(out, p, 32);
    }
}

/* Read HELLO's magic and version; the rest of its layout depends on the version. */
static int channel_hello_head(struct mp_reader *r, size_t *n)
{
    const uint8_t *magic;
    size_t magic_len;
    uint64_t version;

    mp_read_array(r, CHANNEL_HANDSHAKE_FIELDS_MAX, n);
    mp_read_str(r, sizeof(CHANNEL_MAGIC) - 1, &magic, &magic_len);
    mp_read_uint(r, &version);
    if (r->err != 0 || *n < 2 || magic_len != strlen(CHANNEL_MAGIC) ||
        memcmp(magic, CHANNEL_MAGIC, magic_len) != 0) {
        return RK_ESYNTAX;
    }
    return version == CHANNEL_VERSION ? 0 : RK_EMISMATCH;
}

/* Build WELCOME into b; returns the length of the part before proof_r. */
static size_t channel_welcome_head(const struct channel *c, struct channel_body *b)
{
    msgpack_packer pk;

    msgpack_packer_init(&pk, b, channel_body_write);
    msgpack_pack_array(&pk, CHANNEL_WELCOME_FIELDS);
    msgpack_pack_uint32(&pk, CHANNEL_VERSION);
    msgpack_pack_bin_with_body(&pk, c->nonce_local, sizeof(c->nonce_local));
    msgpack_pack_bin_with_body(&pk, c->eph_public, sizeof(c->eph_public));
    return b->len;
}

/* Responder: HELLO in, WELCOME out. */
static int channel_on_hello(struct channel *c, const uint8_t *body, size_t len, struct buf *out)
{
    struct channel_body b = {.len = 0};
    uint8_t proof[CHANNEL_HASH_BYTES];
    struct mp_reader r;
    msgpack_packer pk;
    size_t n;
    int rc;

    mp_reader_init(&r, body, len);
    rc = channel_hello_head(&r, &n);
    if (rc != 0) {
        return rc;
    }
    channel_read_32(&r, c->nonce_remote);
    channel_read_32(&r, c->eph_remote);
    if (n != CHANNEL_HELLO_FIELDS || !mp_done(&r)) {
        return RK_ESYNTAX;
    }
    c->has_nonce_remote = true;
    crypto_generichash(c->transcript, CHANNEL_HASH_BYTES, (const uint8_t *)CHANNEL_LABEL_TRANSCRIPT,
                       strlen(CHANNEL_LABEL_TRANSCRIPT), NULL, 0);
    channel_absorb(c->transcript, body, len);
    channel_make_ephemeral(c);
    channel_absorb(c->transcript, b.p, channel_welcome_head(c, &b));
    channel_mac(proof, c->key->auth, CHANNEL_LABEL_PROOF_R, c->transcript, NULL);
    channel_absorb(c->transcript, proof, sizeof(proof));
    msgpack_packer_init(&pk, &b, channel_body_write);
    msgpack_pack_bin_with_body(&pk, proof, sizeof(proof));
    assert(b.len == CHANNEL_WELCOME_BYTES);
    rc = channel_derive(c);
    if (rc == 0) {
        rc = channel_put_frame(out, b.p, b.len);
    }
    if (rc != 0) {
        return rc;
    }
    c->step = CHANNEL_STEP_AWAIT_PROOF;
    return CHANNEL_PROGRESS;
}

/* Initiator: read WELCOME up to proof_r; *head_len is where proof_r starts. */
static int channel_welcome_parse(struct channel *c, struct mp_reader *r, size_t *head_len)
{
    uint64_t version;
    size_t n;

    mp_read_array(r, CHANNEL_HANDSHAKE_FIELDS_MAX, &n);
    mp_read_uint(r, &version);
    if (r->err != 0 || n < 1) {
        return RK_ESYNTAX;
    }
    if (version != CHANNEL_VERSION) {
        return RK_EMISMATCH;
    }
    channel_read_32(r, c->nonce_remote);
    channel_read_32(r, c->eph_remote);
    *head_len = r->pos;
    if (r->err != 0 || n != CHANNEL_WELCOME_FIELDS) {
        return RK_ESYNTAX;
    }
    c->has_nonce_remote = true;
    return 0;
}

/* Initiator: WELCOME in, PROOF out; the channel opens. */
static int channel_on_welcome(struct channel *c, const uint8_t *body, size_t len, struct buf *out)
{
    struct channel_body b = {.len = 0};
    uint8_t proof[CHANNEL_HASH_BYTES];
    struct mp_reader r;
    msgpack_packer pk;
    size_t head_len = 0;
    int rc;

    mp_reader_init(&r, body, len);
    rc = channel_welcome_parse(c, &r, &head_len);
    if (rc != 0) {
        return rc;
    }
    channel_read_32(&r, proof);
    if (!mp_done(&r)) {
        return RK_ESYNTAX;
    }
    channel_absorb(c->transcript, body, head_len);
    rc = channel_proof_check(c, CHANNEL_LABEL_PROOF_R, proof);
    if (rc != 0) {
        return rc;
    }
    channel_absorb(c->transcript, proof, sizeof(proof));
    channel_mac(proof, c->key->auth, CHANNEL_LABEL_PROOF_I, c->transcript, NULL);
    msgpack_packer_init(&pk, &b, channel_body_write);
    msgpack_pack_array(&pk, CHANNEL_PROOF_FIELDS);
    msgpack_pack_bin_with_body(&pk, proof, sizeof(proof));
    assert(b.len == CHANNEL_PROOF_BYTES);
    rc = channel_derive(c);
    if (rc == 0) {
        rc = channel_put_frame(out, b.p, b.len);
    }
    if (rc != 0) {
        return rc;
    }
    c->step = CHANNEL_STEP_DONE;
    c->state = CHANNEL_OPEN;
    return CHANNEL_PROGRESS;
}

/* Responder: PROOF in; the channel opens when proof_i is right. */
static int channel_on_proof(struct channel *c, const uint8_t *body, size_t len, struct buf *out)
{
    uint8_t proof[CHANNEL_HASH_BYTES];
    struct mp_reader r;
    size_t n;
    int rc;

    mp_reader_init(&r, body, len);
    mp_read_array(&r, CHANNEL_HANDSHAKE_FIELDS_MAX, &n);
    channel_read_32(&r, proof);
    if (!mp_done(&r) || n != CHANNEL_PROOF_FIELDS) {
        return RK_ESYNTAX;
    }
    rc = channel_proof_check(c, CHANNEL_LABEL_PROOF_I, proof);
    if (rc != 0) {
        return rc;
    }
    c->step = CHANNEL_STEP_DONE;
    c->state = CHANNEL_OPEN;
    return CHANNEL_PROGRESS;
}

typedef int channel_step_fn(struct channel *c, const uint8_t *body, size_t len, struct buf *out);

/* The handshake frame each role expects at each step; NULL: none is (RK_ESYNTAX). */
static channel_step_fn *const channel_steps[2][CHANNEL_STEP_COUNT] = {
    [CHANNEL_INITIATOR] = {[CHANNEL_STEP_AWAIT_WELCOME] = channel_on_welcome},
    [CHANNEL_RESPONDER] =
        {[CHANNEL_STEP_IDLE] = channel_on_hello, [CHANNEL_STEP_AWAIT_PROOF] = channel_on_proof},
};

/* --- channel lifecycle ----------------------------------------------------- */

/* Make the channel FAILED with err, wipe its keys; returns the error that failed it. */
static int channel_fail(struct channel *c, int err)
{
    if (c->state != CHANNEL_FAILED) {
        c->state = CHANNEL_FAILED;
        c->step = err;
        if (c->secrets != NULL) {
            sodium_memzero(c->secrets, sizeof(*c->secrets));
        }
    }
    return c->step;
}

int channel_init(struct channel *c, const struct channel_key *key, enum channel_role role,
                 size_t frame_max)
{
    assert(key != NULL && "channel_init: no cluster key");
    assert(role == CHANNEL_INITIATOR || role == CHANNEL_RESPONDER);
    assert(frame_max >= CHANNEL_HANDSHAKE_FRAME_MAX && frame_max <= UINT32_MAX &&
           "channel_init: frame_max must be 256 .. 2^32-1");
    memset(c, 0, sizeof(*c));
    c->role = role;
    c->state = CHANNEL_HANDSHAKE;
    c->key = key;
    c->frame_max = frame_max;
    c->step = CHANNEL_STEP_IDLE;
    if (channel_sodium_ready() != 0) {
        return channel_fail(c, RK_EIO);
    }
    c->secrets = sodium_malloc(sizeof(*c->secrets));
    if (c->secrets == NULL) {
        return channel_fail(c, RK_ENOMEM);
    }
    sodium_memzero(c->secrets, sizeof(*c->secrets));
    return 0;
}

void channel_deinit(struct channel *c)
{
    if (c->secrets != NULL) {
        sodium_free(c->secrets);
    }
    sodium_memzero(c, sizeof(*c));
    c->state = CHANNEL_FAILED;
    c->step = RK_ECLOSED;
}

bool channel_nonce_reflected(const struct channel *c, const struct channel *ours)
{
    return c != ours && c->state != CHANNEL_FAILED && ours->state != CHANNEL_FAILED &&
           c->has_nonce_remote && ours->has_nonce_local &&
           sodium_memcmp(c->nonce_remote, ours->nonce_local, CHANNEL_NONCE_BYTES) == 0;
}

/* --- data frames ----------------------------------------------------------- */

static void channel_aead_nonce(uint8_t n[CHANNEL_AEAD_NONCE_BYTES], uint64_t seq)
{
    memset(n, 0, CHANNEL_AEAD_NONCE_BYTES - sizeof(seq));
    bytes_put_be64(n + CHANNEL_AEAD_NONCE_BYTES - sizeof(seq), seq);
}

int channel_seal(struct channel *c, const void *msg, size_t len, struct buf *out)
{
    static const uint8_t empty[1];
    uint8_t nonce[CHANNEL_AEAD_NONCE_BYTES];
    unsigned long long clen;
    uint8_t *dst;

    if (c->state == CHANNEL_FAILED) {
        return c->step;
    }
    assert(c->state == CHANNEL_OPEN && "channel_seal: the handshake has not finished");
    if (len > c->frame_max - CHANNEL_TAG_BYTES) {
        return channel_fail(c, RK_ETOOBIG);
    }
    if (c->tx_seq == UINT64_MAX) {
        return channel_fail(c, RK_ERANGE);
    }
    dst = buf_reserve(out, FRAME_HEADER_BYTES + len + CHANNEL_TAG_BYTES);
    if (dst == NULL) {
        return channel_fail(
            c, channel_reserve_error(out, FRAME_HEADER_BYTES + len + CHANNEL_TAG_BYTES));
    }
    frame_put_header(dst, (uint32_t)(len + CHANNEL_TAG_BYTES));
    channel_aead_nonce(nonce, c->tx_seq);
    crypto_aead_chacha20poly1305_ietf_encrypt(dst + FRAME_HEADER_BYTES, &clen,
                                              len > 0 ? msg : empty, len, dst, FRAME_HEADER_BYTES,
                                              NULL, nonce, c->secrets->tx);
    buf_commit(out, FRAME_HEADER_BYTES + (size_t)clen);
    c->tx_seq++;
    return 0;
}

/*
 * Open the data frame whose header is at frame and whose body is body[0..len)
 * into msg.  The sender never seals with sequence number 2^64-1, so a frame
 * expected under it is not one the peer sealed.
 */
static __attribute__((warn_unused_result)) int channel_open_frame(struct channel *c,
                                                                  const uint8_t *frame,
                                                                  const uint8_t *body, size_t len,
                                                                  struct buf *msg)
{
    uint8_t nonce[CHANNEL_AEAD_NONCE_BYTES], scratch[1];
    unsigned long long mlen;
    uint8_t *dst;

    if (len < CHANNEL_TAG_BYTES || c->rx_seq == UINT64_MAX) {
        return RK_EAUTH;
    }
    dst = len == CHANNEL_TAG_BYTES ? scratch : buf_reserve(msg, len - CHANNEL_TAG_BYTES);
    if (dst == NULL) {
        return channel_reserve_error(msg, len - CHANNEL_TAG_BYTES);
    }
    channel_aead_nonce(nonce, c->rx_seq);
    if (crypto_aead_chacha20poly1305_ietf_decrypt(dst, &mlen, NULL, body, len, frame,
                                                  FRAME_HEADER_BYTES, nonce, c->secrets->rx) != 0) {
        return RK_EAUTH;
    }
    if (dst != scratch) {
        buf_commit(msg, (size_t)mlen);
    }
    c->rx_seq++;
    return CHANNEL_MESSAGE;
}

int channel_feed(struct channel *c, const uint8_t *in, size_t len, size_t *used, struct buf *out,
                 struct buf *msg)
{
    size_t max = c->state == CHANNEL_OPEN ? c->frame_max : CHANNEL_HANDSHAKE_FRAME_MAX;
    const uint8_t *body;
    size_t body_len, frame_len;
    channel_step_fn *step;
    int rc;

    *used = 0;
    if (c->state == CHANNEL_FAILED) {
        return c->step;
    }
    rc = frame_parse(in, len, max, &body, &body_len, &frame_len);
    if (rc <= 0) {
        return rc == 0 ? CHANNEL_NEED_MORE : channel_fail(c, rc);
    }
    if (c->state == CHANNEL_OPEN) {
        rc = channel_open_frame(c, in, body, body_len, msg);
    } else {
        step = channel_steps[c->role][c->step];
        rc = step == NULL ? RK_ESYNTAX : step(c, body, body_len, out);
    }
    if (rc < 0) {
        return channel_fail(c, rc);
    }
    *used = frame_len;
    return rc;
}
