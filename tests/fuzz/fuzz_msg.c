/*
 * fuzz_msg.c - fuzz target for msg_decode(), which reads every message a
 * peer sends once its frame has opened, for msg_members_decode(), which
 * reads the member list a data directory keeps, for
 * msg_status_view_decode(), which reads a STATUS answer's body, for
 * msg_frame_next() and msg_decode_next(), which split a shared frame of
 * message set 3 into its messages, and for the msgpack reader under them.
 *
 * Beyond "no crash", it checks that decoding and encoding agree: whatever
 * decodes must encode (the encoder validates what the decoder validates,
 * and the decoder's bounds are the encoder's), the encoding must decode to
 * the same fields, gossip lists included, and encoding those fields again
 * must give the same bytes.  Every decoded message is released with
 * msg_free(), so under ASan a list a decoder forgets to free is reported.
 * A disagreement aborts, which both libFuzzer and the replay driver report
 * as a failure.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "fuzz.h"
#include "mp.h"
#include "msg.h"

/* Nesting allowed when skipping the raw input as one msgpack value. */
#define FUZZ_SKIP_DEPTH 16
/* Entries a member list may hold here: enough to reach the bound with small inputs. */
#define FUZZ_MEMBERS_MAX 8

static bool fuzz_cluster_equal(const struct msg_ident *a, const struct msg_ident *b)
{
    if (a->has_cluster != b->has_cluster) {
        return false;
    }
    return !a->has_cluster ||
           (a->cluster.rf == b->cluster.rf &&
            strcmp(a->cluster.conflicts, b->cluster.conflicts) == 0 &&
            memcmp(a->cluster.ring_seed, b->cluster.ring_seed, sizeof(a->cluster.ring_seed)) == 0);
}

static bool fuzz_ident_equal(const struct msg_ident *a, const struct msg_ident *b)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->rack, b->rack) == 0 && a->version == b->version &&
           strcmp(a->peer_addr, b->peer_addr) == 0 && strcmp(a->client_addr, b->client_addr) == 0 &&
           a->proto == b->proto && a->instance == b->instance && a->frame_max == b->frame_max &&
           fuzz_cluster_equal(a, b);
}

static bool fuzz_member_equal(const struct msg_member *a, const struct msg_member *b)
{
    return strcmp(a->id, b->id) == 0 && strcmp(a->rack, b->rack) == 0 && a->tokens == b->tokens &&
           strcmp(a->peer_addr, b->peer_addr) == 0 && strcmp(a->client_addr, b->client_addr) == 0 &&
           a->status == b->status && a->generation == b->generation && a->version == b->version &&
           memcmp(a->instance, b->instance, sizeof(a->instance)) == 0 &&
           a->ring_version == b->ring_version && a->digest == b->digest && a->target == b->target;
}

static bool fuzz_members_equal(const struct msg_member *a, const struct msg_member *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!fuzz_member_equal(&a[i], &b[i])) {
            return false;
        }
    }
    return true;
}

/* Digests, or with ids_only only their ids (an ACK's requests carry no more). */
static bool fuzz_digests_equal(const struct msg_digest *a, const struct msg_digest *b, size_t n,
                               bool ids_only)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(a[i].id, b[i].id) != 0) {
            return false;
        }
        if (!ids_only && (a[i].generation != b[i].generation || a[i].version != b[i].version)) {
            return false;
        }
    }
    return true;
}

static bool fuzz_syn_equal(const struct msg_gossip_syn *a, const struct msg_gossip_syn *b)
{
    return a->epoch == b->epoch && a->digest == b->digest && a->complete == b->complete &&
           a->n == b->n && fuzz_digests_equal(a->digests, b->digests, a->n, false);
}

static bool fuzz_entries_equal(const struct msg_gossip_entries *a,
                               const struct msg_gossip_entries *b)
{
    return a->n == b->n && fuzz_members_equal(a->entries, b->entries, a->n) &&
           a->n_requests == b->n_requests &&
           fuzz_digests_equal(a->requests, b->requests, a->n_requests, true);
}

static bool fuzz_request_equal(const struct msg_request *a, const struct msg_request *b)
{
    return a->id == b->id && a->code == b->code && a->body_len == b->body_len &&
           memcmp(a->body, b->body, a->body_len) == 0;
}

static bool fuzz_msg_equal(const struct msg *a, const struct msg *b)
{
    if (a->type != b->type) {
        return false;
    }
    if (a->type == MSG_REQUEST || a->type == MSG_RESPONSE || a->type == MSG_BULK_RESPONSE) {
        return fuzz_request_equal(&a->u.request, &b->u.request);
    }
    if (a->type == MSG_IDENT) {
        return fuzz_ident_equal(&a->u.ident, &b->u.ident);
    }
    if (a->type == MSG_GOSSIP_SYN) {
        return fuzz_syn_equal(&a->u.syn, &b->u.syn);
    }
    if (a->type == MSG_GOSSIP_ACK || a->type == MSG_GOSSIP_ACK2) {
        return fuzz_entries_equal(&a->u.entries, &b->u.entries);
    }
    if (a->type == MSG_CREDIT) {
        return a->u.credit.grant == b->u.credit.grant && a->u.credit.window == b->u.credit.window;
    }
    if (a->type == MSG_BULK) {
        return a->u.bulk.seq == b->u.bulk.seq && a->u.bulk.len == b->u.bulk.len &&
               (a->u.bulk.len == 0 || memcmp(a->u.bulk.data, b->u.bulk.data, a->u.bulk.len) == 0);
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

/* The message round trip: decode, encode, decode again, encode again. */
static void fuzz_message(const uint8_t *data, size_t size)
{
    struct buf once, twice;
    struct msg m, back;

    if (msg_decode(data, size, &m) != 0) {
        return;
    }
    if (!msg_type_known((int)m.type, MSG_PROTO_VERSION)) {
        abort(); /* a type decoded that this version does not claim to know */
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
    msg_free(&m);
    msg_free(&back);
    buf_free(&once);
    buf_free(&twice);
}

/* The member list round trip, the same way. */
static void fuzz_members(const uint8_t *data, size_t size)
{
    struct msg_member *e, *back;
    struct buf once, twice;
    size_t n, n_back;

    if (msg_members_decode(data, size, FUZZ_MEMBERS_MAX, &e, &n) != 0) {
        return;
    }
    buf_init(&once, 0);
    buf_init(&twice, 0);
    if (msg_members_encode(e, n, &once) != 0 ||
        msg_members_decode(buf_data(&once), once.len, n, &back, &n_back) != 0 || n_back != n ||
        !fuzz_members_equal(e, back, n) || msg_members_encode(back, n_back, &twice) != 0) {
        abort();
    }
    if (once.len != twice.len || memcmp(buf_data(&once), buf_data(&twice), once.len) != 0) {
        abort();
    }
    free(e);
    free(back);
    buf_free(&once);
    buf_free(&twice);
}

/* The STATUS answer round trip: decode, encode, decode, the same fields and bytes. */
static void fuzz_status_view(const uint8_t *data, size_t size)
{
    struct msg_status_view v, back;
    struct buf once, twice;

    if (msg_status_view_decode(data, size, &v) != 0) {
        return;
    }
    buf_init(&once, 0);
    buf_init(&twice, 0);
    if (msg_status_view_encode(&v, &once) != 0 ||
        msg_status_view_decode(buf_data(&once), once.len, &back) != 0 ||
        memcmp(&v, &back, sizeof(v)) != 0 || msg_status_view_encode(&back, &twice) != 0 ||
        once.len != twice.len || memcmp(buf_data(&once), buf_data(&twice), once.len) != 0) {
        abort();
    }
    buf_free(&once);
    buf_free(&twice);
}

/*
 * msg_decode_next() at data[0..size) agrees with msg_frame_next() and
 * msg_decode() of the bytes that gives: the same length, the same verdict
 * (RK_ENOTFOUND where msg_decode() says so), the same message.
 */
static void fuzz_decode_next(const uint8_t *data, size_t size)
{
    size_t used = 1, span = 0;
    struct msg m, whole;
    int rc = msg_decode_next(data, size, &m, &used);
    int frc = msg_frame_next(data, size, &span);
    int drc = frc == 0 ? msg_decode(data, span, &whole) : frc;

    if (rc == 0) {
        if (frc != 0 || used != span || drc != 0 || !fuzz_msg_equal(&m, &whole)) {
            abort();
        }
        msg_free(&whole);
        msg_free(&m);
        return;
    }
    /*
     * Refused here, taken whole, or an unknown type only one of them saw
     * (the head of an unknown type is all either reads of it, so a cut one
     * is RK_ENOTFOUND here: the receiver asks msg_frame_next() first then).
     */
    if (used != 0 || drc == 0 || (frc == 0 && (rc == RK_ENOTFOUND) != (drc == RK_ENOTFOUND))) {
        abort();
    }
}

/*
 * The input as a shared frame: split it as a node of message set 3 does,
 * each piece within what is left and never empty, each decoded on its own,
 * and read by msg_decode_next() from where it starts.
 */
static void fuzz_frame(const uint8_t *data, size_t size)
{
    size_t at = 0, used = 0;

    while (at < size && msg_frame_next(data + at, size - at, &used) == 0) {
        if (used == 0 || used > size - at) {
            abort();
        }
        fuzz_message(data + at, used);
        fuzz_decode_next(data + at, size - at);
        at += used;
    }
    if (at < size) {
        fuzz_decode_next(data + at, size - at);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mp_reader r;

    mp_reader_init(&r, data, size);
    (void)mp_skip(&r, FUZZ_SKIP_DEPTH);
    if (r.pos > size) {
        abort();
    }
    fuzz_message(data, size);
    fuzz_frame(data, size);
    fuzz_members(data, size);
    fuzz_status_view(data, size);
    return 0;
}
