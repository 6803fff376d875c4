/*
 * bench_handoff_floor.c - the least processor time a key moved by handoff
 * costs on this machine: the work the handoff contract asks for each key,
 * done by one thread with nothing else (no network, no event loop, no
 * merge, no checkpoint, no gossip), so the most any implementation of the
 * contract could move per core.  tests/bench/bench_handoff.sh runs it in the
 * same run as the join it measures and compares both with raw LMDB.
 *
 *   bench_handoff_floor KEYS RECORD_BYTES DIR
 *
 * The records are bench_lmdb's load- records (tests/bench/bench_lmdb.c):
 * KEYS keys laid out as the data table keys them (a u64 position,
 * big-endian, then "key:" and the decimal index, positions a fixed hash of
 * the index), each with a stored record of RECORD_BYTES bytes whose head is
 * a one-sibling record's (storage/record.h: format 1, flags 0, one
 * sibling).  They are loaded, untimed, into a source environment in DIR/src;
 * (DIR is created if missing) then, timed stage by stage:
 *   scan     a read transaction's cursor over the source, 1,023 items or
 *            256 KiB of records a batch (what a receiver asks a HANDOFF_PULL
 *            for), encoded as a HANDOFF_PULL answer (proto/msg_handoff.c);
 *   seal     the answer sealed by the source's end of a channel
 *            (proto/channel.c, after an in-memory handshake);
 *   tcp      the sealed frame written to a loopback TCP connection and
 *            read from its other end (the same thread does both);
 *   open     opened by the receiver's end and decoded;
 *   apply    each item put into the receiver's empty environment in DIR/dst
 *            with MDB_NOOVERWRITE (the one lookup a merge needs), 10,000 a
 *            transaction, MDB_NOSYNC, one mdb_env_sync() at the end (the
 *            raw load's own transactions: no commit per batch);
 *   digest   each side's copy hashed as store_arc_digest() hashes an arc
 *            (storage/store.c: BLAKE2b over position, key length, key and
 *            the record's canonical form), read by a cursor: both sides.
 * and, for comparison, the digest a keyed SipHash-2-4 of each key's same
 * bytes (crypto_shorthash) folded into one BLAKE2b would cost.
 * It prints one line:
 *   bench_handoff_floor keys=N scan_us=.. seal_us=.. tcp_us=.. open_us=.. apply_us=..
 *     digest_us=.. total_us=.. one_core_per_s=.. siphash_digest_us=..
 *     siphash_total_us=.. siphash_one_core_per_s=..
 * (microseconds a key, both digests counted in digest_us), removes the
 * files it made (and DIR, when that leaves it empty), and exits 0; 1 when a step failed, 2 on bad
 * arguments.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <lmdb.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "bytes.h"
#include "channel.h"
#include "msg_handoff.h"

#define FLOOR_ITEMS 1023
#define FLOOR_BATCH_BYTES (256 * 1024)
#define FLOOR_TXN 10000
#define FLOOR_FRAME_MAX (4 * 1024 * 1024)
#define FLOOR_KEY_MAX 32

struct stage {
    double scan, seal, send, open, apply, digest, sip;
};

static double now_s(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "bench_handoff_floor: %s: %s\n", what, rc > 0 ? mdb_strerror(rc) : "failed");
    return -1;
}

/* splitmix64's finaliser: bench_lmdb's stand-in for the ring's keyed hash. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct load_key {
    uint64_t pos, index;
};

static int load_key_cmp(const void *a, const void *b)
{
    const struct load_key *x = a, *y = b;

    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int env_open(MDB_env **env, MDB_dbi *dbi, const char *path)
{
    MDB_txn *txn;
    int rc;

    if (mkdir(path, 0755) != 0) {
        return fail(path, 0);
    }
    if ((rc = mdb_env_create(env)) != 0 ||
        (rc = mdb_env_set_mapsize(*env, (size_t)16 << 30)) != 0 ||
        (rc = mdb_env_open(*env, path, MDB_NOSYNC | MDB_NOTLS, 0644)) != 0 ||
        (rc = mdb_txn_begin(*env, NULL, 0, &txn)) != 0) {
        return fail("mdb_env_open", rc);
    }
    if ((rc = mdb_dbi_open(txn, NULL, 0, dbi)) != 0 || (rc = mdb_txn_commit(txn)) != 0) {
        return fail("mdb_dbi_open", rc);
    }
    return 0;
}

/* The source's records, in position order, synced; untimed. */
static int load_source(MDB_env *env, MDB_dbi dbi, uint64_t n, size_t rec_len)
{
    struct load_key *keys = malloc(n * sizeof(*keys));
    uint8_t *rec = malloc(rec_len), key[FLOOR_KEY_MAX];
    MDB_txn *txn;
    int rc;

    if (keys == NULL || rec == NULL) {
        free(keys);
        free(rec);
        return fail("out of memory", 0);
    }
    for (uint64_t i = 0; i < n; i++) {
        keys[i] = (struct load_key){.pos = mix64(i), .index = i};
    }
    qsort(keys, n, sizeof(*keys), load_key_cmp);
    memset(rec, 'v', rec_len);
    rec[0] = 1; /* format 1, flags 0, one sibling */
    rec[1] = 0;
    bytes_put_be16(rec + 2, 1);
    rc = mdb_txn_begin(env, NULL, 0, &txn);
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        bytes_put_be64(key, keys[i].pos);
        int len = snprintf((char *)key + 8, sizeof(key) - 8, "key:%" PRIu64, keys[i].index);
        memcpy(rec + 4, &keys[i].pos, rec_len - 4 < 8 ? rec_len - 4 : 8);
        MDB_val k = {8 + (size_t)len, key}, v = {rec_len, rec};
        rc = mdb_put(txn, dbi, &k, &v, MDB_APPEND);
    }
    rc = rc == 0 ? mdb_txn_commit(txn) : (mdb_txn_abort(txn), rc);
    rc = rc == 0 ? mdb_env_sync(env, 1) : rc;
    free(keys);
    free(rec);
    return rc == 0 ? 0 : fail("loading the source", rc);
}

/* Both ends of a channel, opened by a handshake in memory. */
static int channel_pair(struct channel *src, struct channel *dst, const struct channel_key *key)
{
    struct buf a2b, b2a, msg;
    size_t used;
    int rc = 0;

    buf_init(&a2b, 0);
    buf_init(&b2a, 0);
    buf_init(&msg, 0);
    if (channel_init(dst, key, CHANNEL_INITIATOR, FLOOR_FRAME_MAX) != 0 ||
        channel_init(src, key, CHANNEL_RESPONDER, FLOOR_FRAME_MAX) != 0 ||
        channel_start(dst, &a2b) != 0) {
        rc = -1;
    }
    for (int round = 0; rc == 0 && round < 8 && !(channel_is_open(src) && channel_is_open(dst));
         round++) {
        while (rc == 0 && a2b.len > 0) {
            rc = channel_feed(src, buf_data(&a2b), a2b.len, &used, &b2a, &msg) < 0 ? -1 : 0;
            buf_consume(&a2b, used);
        }
        while (rc == 0 && b2a.len > 0) {
            rc = channel_feed(dst, buf_data(&b2a), b2a.len, &used, &a2b, &msg) < 0 ? -1 : 0;
            buf_consume(&b2a, used);
        }
    }
    buf_free(&a2b);
    buf_free(&b2a);
    buf_free(&msg);
    return rc == 0 && channel_is_open(src) && channel_is_open(dst) ? 0 : fail("the handshake", 0);
}

/*
 * A loopback TCP connection (127.0.0.1, an ephemeral port), both ends
 * non-blocking, TCP_NODELAY as the node sets it: fds[0] the source's,
 * fds[1] the receiver's.
 */
static int tcp_pair(int fds[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

    fds[0] = fds[1] = -1;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) != 0 ||
        (fds[1] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(fds[1], (struct sockaddr *)&a, sizeof(a)) != 0 ||
        (fds[0] = accept(l, NULL, NULL)) < 0) {
        if (l >= 0) {
            close(l);
        }
        return fail("a loopback connection", 0);
    }
    close(l);
    for (int i = 0; i < 2; i++) {
        if (setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0 ||
            fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0) {
            return fail("a socket option", 0);
        }
    }
    return 0;
}

/* frame[0..len) written to fds[0] and read from fds[1] into got, one thread doing both. */
static int tcp_move(const int fds[2], const uint8_t *frame, size_t len, struct buf *got)
{
    size_t sent = 0;

    buf_clear(got);
    while (got->len < len) {
        if (sent < len) {
            ssize_t w = send(fds[0], frame + sent, len - sent, MSG_NOSIGNAL);
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                return fail("send", 0);
            }
            sent += w > 0 ? (size_t)w : 0;
        }
        uint8_t *p = buf_reserve(got, 64 * 1024);
        if (p == NULL) {
            return fail("out of memory", 0);
        }
        ssize_t r = recv(fds[1], p, 64 * 1024, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            return fail("recv", 0);
        }
        buf_commit(got, r > 0 ? (size_t)r : 0);
    }
    return 0;
}

/* One batch from the source's cursor: scan, encode, seal, open, decode, apply. */
struct stream {
    MDB_cursor *cur;
    MDB_val k, v;
    int get; /* the cursor's last result */
    struct channel src, dst;
    struct msg_handoff_item items[FLOOR_ITEMS];
    struct buf body, frame, wire, msg, reply;
    int fds[2];
    MDB_env *dst_env;
    MDB_dbi dst_dbi;
    MDB_txn *txn;
    uint64_t in_txn, applied;
};

static int stream_batch(struct stream *s, struct stage *t)
{
    struct msg_handoff_pull_answer a = {.status = 0, .items = s->items};
    size_t bytes = 0, used;
    double t0 = now_s(), t1;
    int rc;

    while (s->get == 0 && a.n_items < FLOOR_ITEMS && bytes < FLOOR_BATCH_BYTES) {
        s->items[a.n_items++] =
            (struct msg_handoff_item){s->k.mv_data, s->k.mv_size, s->v.mv_data, s->v.mv_size};
        bytes += s->v.mv_size;
        a.next = s->k.mv_data;
        a.next_len = s->k.mv_size;
        a.has_next = true;
        s->get = mdb_cursor_get(s->cur, &s->k, &s->v, MDB_NEXT);
    }
    a.done = s->get != 0;
    buf_clear(&s->body);
    /* the items point into the read transaction's pages: encoded before the cursor moves on */
    if (msg_handoff_pull_answer_encode(&a, &s->body) != 0) {
        return fail("encoding a batch", 0);
    }
    t1 = now_s();
    t->scan += t1 - t0;
    t0 = t1;
    buf_clear(&s->frame);
    if (channel_seal(&s->src, buf_data(&s->body), s->body.len, &s->frame) != 0) {
        return fail("sealing", 0);
    }
    t1 = now_s();
    t->seal += t1 - t0;
    t0 = t1;
    if (tcp_move(s->fds, buf_data(&s->frame), s->frame.len, &s->wire) != 0) {
        return -1;
    }
    t1 = now_s();
    t->send += t1 - t0;
    t0 = t1;
    buf_clear(&s->msg);
    if (channel_feed(&s->dst, buf_data(&s->wire), s->wire.len, &used, &s->reply, &s->msg) !=
        CHANNEL_MESSAGE) {
        return fail("opening", 0);
    }
    struct msg_handoff_pull_answer got;
    if (msg_handoff_pull_answer_decode(buf_data(&s->msg), s->msg.len, &got, s->items,
                                       FLOOR_ITEMS) != 0) {
        return fail("decoding a batch", 0);
    }
    t1 = now_s();
    t->open += t1 - t0;
    t0 = t1;
    for (size_t i = 0; i < got.n_items; i++) {
        if (s->txn == NULL && (rc = mdb_txn_begin(s->dst_env, NULL, 0, &s->txn)) != 0) {
            return fail("mdb_txn_begin", rc);
        }
        MDB_val k = {got.items[i].key_len, (void *)got.items[i].key};
        MDB_val v = {got.items[i].record_len, (void *)got.items[i].record};
        if ((rc = mdb_put(s->txn, s->dst_dbi, &k, &v, MDB_NOOVERWRITE)) != 0) {
            return fail("mdb_put", rc);
        }
        s->applied++;
        if (++s->in_txn == FLOOR_TXN) {
            rc = mdb_txn_commit(s->txn);
            s->txn = NULL;
            s->in_txn = 0;
            if (rc != 0) {
                return fail("mdb_txn_commit", rc);
            }
        }
    }
    t->apply += now_s() - t0;
    return 0;
}

static int stream_all(struct stream *s, MDB_env *src_env, MDB_dbi src_dbi, struct stage *t)
{
    MDB_txn *rtxn;
    int rc = mdb_txn_begin(src_env, NULL, MDB_RDONLY, &rtxn);

    if (rc != 0 || (rc = mdb_cursor_open(rtxn, src_dbi, &s->cur)) != 0) {
        return fail("the source's cursor", rc);
    }
    s->get = mdb_cursor_get(s->cur, &s->k, &s->v, MDB_FIRST);
    while (rc == 0 && s->get == 0) {
        rc = stream_batch(s, t);
    }
    mdb_cursor_close(s->cur);
    mdb_txn_abort(rtxn);
    if (rc == 0) {
        double t0 = now_s();
        if (s->txn != NULL && (rc = mdb_txn_commit(s->txn)) != 0) {
            return fail("mdb_txn_commit", rc);
        }
        s->txn = NULL;
        if ((rc = mdb_env_sync(s->dst_env, 1)) != 0) {
            return fail("mdb_env_sync", rc);
        }
        t->apply += now_s() - t0;
    }
    return rc;
}

/*
 * One side's copy hashed: with sip false as store_arc_digest() hashes it,
 * with sip true each key's same bytes through a keyed SipHash-2-4, the
 * 8-byte results through BLAKE2b.  Returns the key count, or -1.
 */
static int64_t digest(MDB_env *env, MDB_dbi dbi, bool sip, uint8_t out[32])
{
    static const uint8_t sip_key[crypto_shorthash_KEYBYTES] = {'f', 'l', 'o', 'o', 'r'};
    crypto_generichash_state st;
    uint8_t head[12], one[8], buf[12 + FLOOR_KEY_MAX + 8 + 4096], h[crypto_shorthash_BYTES];
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    int64_t n = 0;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);

    if (rc != 0 || (rc = mdb_cursor_open(txn, dbi, &cur)) != 0) {
        fail("a digest's cursor", rc);
        return -1;
    }
    crypto_generichash_init(&st, NULL, 0, 32);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const uint8_t *key = k.mv_data, *rec = v.mv_data;
        memcpy(head, key, 8);
        bytes_put_be32(head + 8, (uint32_t)(k.mv_size - 8));
        bytes_put_be32(one, 1);
        bytes_put_be32(one + 4, (uint32_t)(v.mv_size - 4));
        if (!sip) {
            crypto_generichash_update(&st, head, sizeof(head));
            crypto_generichash_update(&st, key + 8, k.mv_size - 8);
            crypto_generichash_update(&st, one, sizeof(one));
            crypto_generichash_update(&st, rec + 4, v.mv_size - 4);
        } else if (k.mv_size + v.mv_size + 12 <= sizeof(buf)) {
            size_t len = 0;
            memcpy(buf, head, sizeof(head));
            len += sizeof(head);
            memcpy(buf + len, key + 8, k.mv_size - 8);
            len += k.mv_size - 8;
            memcpy(buf + len, one, sizeof(one));
            len += sizeof(one);
            memcpy(buf + len, rec + 4, v.mv_size - 4);
            len += v.mv_size - 4;
            crypto_shorthash(h, buf, len, sip_key);
            crypto_generichash_update(&st, h, sizeof(h));
        }
        n++;
    }
    crypto_generichash_final(&st, out, 32);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return n;
}

static void env_remove(MDB_env *env, const char *path)
{
    char file[PATH_MAX];

    if (env != NULL) {
        mdb_env_close(env);
    }
    snprintf(file, sizeof(file), "%s/data.mdb", path);
    unlink(file);
    snprintf(file, sizeof(file), "%s/lock.mdb", path);
    unlink(file);
    rmdir(path);
}

int main(int argc, char **argv)
{
    static struct stream s;
    struct stage t = {0};
    struct channel_key *key = NULL;
    char src_path[PATH_MAX], dst_path[PATH_MAX];
    MDB_env *src_env = NULL;
    MDB_dbi src_dbi;
    uint8_t d1[32], d2[32];
    int status = 1;
    char *end1, *end2;
    unsigned long long n = argc == 4 ? strtoull(argv[1], &end1, 10) : 0;
    unsigned long rec_len = argc == 4 ? strtoul(argv[2], &end2, 10) : 0;

    if (argc != 4 || *end1 != '\0' || *end2 != '\0' || n < 1 || n > 100000000 || rec_len < 12 ||
        rec_len > 4096) {
        fprintf(stderr, "usage: bench_handoff_floor KEYS RECORD_BYTES(12..4096) DIR\n");
        return 2;
    }
    if (sodium_init() < 0) {
        return fail("sodium_init", 0) == 0 ? 0 : 1;
    }
    snprintf(src_path, sizeof(src_path), "%s/src", argv[3]);
    snprintf(dst_path, sizeof(dst_path), "%s/dst", argv[3]);
    buf_init(&s.body, 0);
    buf_init(&s.frame, 0);
    buf_init(&s.msg, 0);
    buf_init(&s.reply, 0);
    buf_init(&s.wire, 0);
    if (mkdir(argv[3], 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_handoff_floor: %s: %s\n", argv[3], strerror(errno));
        return 1;
    }
    if (tcp_pair(s.fds) != 0 || env_open(&src_env, &src_dbi, src_path) != 0 ||
        env_open(&s.dst_env, &s.dst_dbi, dst_path) != 0 ||
        load_source(src_env, src_dbi, n, rec_len) != 0 || channel_key_generate(&key) != 0 ||
        channel_pair(&s.src, &s.dst, key) != 0 || stream_all(&s, src_env, src_dbi, &t) != 0) {
        goto out;
    }
    double t0 = now_s();
    int64_t n1 = digest(src_env, src_dbi, false, d1), n2 = digest(s.dst_env, s.dst_dbi, false, d2);
    t.digest = now_s() - t0;
    if (n1 != (int64_t)n || n2 != (int64_t)n || s.applied != n || memcmp(d1, d2, 32) != 0) {
        fprintf(stderr,
                "bench_handoff_floor: the copies differ (%" PRId64 " and %" PRId64 " keys)\n", n1,
                n2);
        goto out;
    }
    t0 = now_s();
    n1 = digest(src_env, src_dbi, true, d1);
    n2 = digest(s.dst_env, s.dst_dbi, true, d2);
    t.sip = now_s() - t0;
    if (n1 != (int64_t)n || n2 != (int64_t)n || memcmp(d1, d2, 32) != 0) {
        fprintf(stderr, "bench_handoff_floor: the keyed digests differ\n");
        goto out;
    }
    double us = 1e6 / (double)n, stream = t.scan + t.seal + t.send + t.open + t.apply;
    double total = stream + t.digest, sip_total = stream + t.sip;
    printf("bench_handoff_floor keys=%llu scan_us=%.3f seal_us=%.3f tcp_us=%.3f open_us=%.3f "
           "apply_us=%.3f "
           "digest_us=%.3f total_us=%.3f one_core_per_s=%.0f siphash_digest_us=%.3f "
           "siphash_total_us=%.3f siphash_one_core_per_s=%.0f\n",
           n, t.scan * us, t.seal * us, t.send * us, t.open * us, t.apply * us, t.digest * us,
           total * us, (double)n / total, t.sip * us, sip_total * us, (double)n / sip_total);
    status = 0;
out:
    channel_deinit(&s.src);
    channel_deinit(&s.dst);
    channel_key_free(key);
    buf_free(&s.body);
    buf_free(&s.frame);
    buf_free(&s.msg);
    buf_free(&s.reply);
    buf_free(&s.wire);
    for (int i = 0; i < 2; i++) {
        if (s.fds[i] >= 0) {
            close(s.fds[i]);
        }
    }
    env_remove(src_env, src_path);
    env_remove(s.dst_env, dst_path);
    rmdir(argv[3]);
    return status;
}
