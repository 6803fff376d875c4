/*
 * bulktest.c - the synthetic bulk stream of RINGKV BULKTEST (bulktest.h).
 *
 * The sender is a producer of the bulk lane as a handoff stream will be
 * one: it sends chunks with peer_send_bulk() until told to wait, then
 * waits for peer_bulk_wait()'s call, so it never holds more than one
 * chunk and the lane's credit sets its pace.  Chunks are zeros (the
 * channel encrypts them anyway) of BULKTEST_CHUNK bytes, or less when the
 * peer's window or frame-max is smaller.
 *
 * The receiver's figures come from the arrivals: the bytes, the first and
 * the last arrival time, so the rate is the path's, not the sender's; and
 * the longest gap between control messages on the connection the bulk
 * came by (lanes.h's control_gap_max_ms), which is how long a heartbeat
 * waited behind the bulk at most, plus the gossip interval.
 */
#include "bulktest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "msg.h"
#include "peer.h"
#include "resp.h"
#include "server.h"

/* Bytes of one chunk: a quarter of the default window, so credit comes back in chunk steps. */
#define BULKTEST_CHUNK (64 * 1024)
/* Room for a chunk's msgpack framing (array, type, seq, bin head) and the AEAD tag. */
#define BULKTEST_FRAMING 64

enum bulktest_state { BULKTEST_IDLE, BULKTEST_RUNNING, BULKTEST_DONE, BULKTEST_FAILED };
static const char *const bulktest_state_names[] = {"idle", "running", "done", "failed"};

struct bulktest {
    struct server *node;
    /* sending */
    enum bulktest_state state;
    struct peer *peer; /* while running */
    char peer_id[RING_NAME_MAX + 1];
    uint64_t bytes, sent, seq;
    uint64_t start_ms, end_ms;
    char error[128];
    size_t queue_peak, queue_max; /* of the connection, kept when the stream ends */
    uint64_t inflight_peak, window;
    /* receiving */
    uint64_t received;
    uint64_t first_ms, last_ms;
    char from[RING_NAME_MAX + 1];
    uint64_t control_gap_max_ms;
};

static const uint8_t bulktest_zeros[BULKTEST_CHUNK];

static struct bulktest *bulktest_get(struct server *n)
{
    if (n->bulktest == NULL) {
        n->bulktest = calloc(1, sizeof(*n->bulktest));
        if (n->bulktest != NULL) {
            n->bulktest->node = n;
        }
    }
    return n->bulktest;
}

/* Keep the connection's figures while it is known to be alive. */
static void bulktest_snapshot(struct bulktest *bt)
{
    const struct lanes *l = &bt->peer->lanes;

    bt->queue_peak = l->queue_peak;
    bt->queue_max = l->queue_max;
    bt->inflight_peak = l->inflight_peak;
    bt->window = l->peer_window;
}

/* The stream ended: done (err 0), or failed with err. */
static void bulktest_end(struct bulktest *bt, int err)
{
    bt->end_ms = clock_mono_ms();
    bt->state = err == 0 ? BULKTEST_DONE : BULKTEST_FAILED;
    if (err == 0) {
        bulktest_snapshot(bt);
    } else {
        snprintf(bt->error, sizeof(bt->error), "%s",
                 err == RK_ECLOSED ? "the connection closed" : rk_strerror(err));
    }
    bt->peer = NULL;
    LOG(err == 0 ? LOG_INFO : LOG_WARN, "bulktest_end",
        "peer=%s bytes=%llu sent=%llu ms=%llu queue_peak=%zu inflight_peak=%llu error=\"%s\"",
        bt->peer_id, (unsigned long long)bt->bytes, (unsigned long long)bt->sent,
        (unsigned long long)(bt->end_ms - bt->start_ms), bt->queue_peak,
        (unsigned long long)bt->inflight_peak, bt->error);
}

/* The chunk to send next: at most the bytes left, half the peer's window less framing, a frame. */
static size_t bulktest_chunk(const struct bulktest *bt)
{
    const struct peer *p = bt->peer;
    uint64_t len = BULKTEST_CHUNK;

    uint64_t half = p->lanes.peer_window / 2;

    if (p->lanes.peer_window > 0 && half < len + BULKTEST_FRAMING) {
        len = half > BULKTEST_FRAMING ? half - BULKTEST_FRAMING : 1;
    }
    if (p->node->cfg.frame_max - BULKTEST_FRAMING < len) {
        len = p->node->cfg.frame_max - BULKTEST_FRAMING;
    }
    return (size_t)(bt->bytes - bt->sent < len ? bt->bytes - bt->sent : len);
}

static void bulktest_ready(struct peer *p, void *arg, int status);

/* Send until the lane says wait, the stream is done, or it fails. */
static void bulktest_pump(struct bulktest *bt)
{
    while (bt->sent < bt->bytes) {
        struct msg m = {.type = MSG_BULK};
        int rc;
        m.u.bulk.seq = bt->seq;
        m.u.bulk.len = bulktest_chunk(bt);
        m.u.bulk.data = bulktest_zeros;
        rc = peer_send_bulk(bt->peer, &m);
        if (rc == PEER_BULK_WAIT) {
            peer_bulk_wait(bt->peer, bulktest_ready, bt);
            return;
        }
        if (rc != 0) {
            bulktest_end(bt, rc);
            return;
        }
        bt->seq++;
        bt->sent += m.u.bulk.len;
    }
    bulktest_end(bt, 0);
}

static void bulktest_ready(struct peer *p, void *arg, int status)
{
    struct bulktest *bt = arg;

    (void)p;
    if (status != 0) {
        bulktest_end(bt, status);
        return;
    }
    bulktest_pump(bt);
}

int bulktest_start(struct server *n, const char *id, uint64_t bytes, char *err, size_t err_len)
{
    struct bulktest *bt = bulktest_get(n);
    struct peer *p;

    if (bt == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    if (bytes == 0 || bytes > BULKTEST_BYTES_MAX) {
        snprintf(err, err_len, "bytes must be 1 to %llu", (unsigned long long)BULKTEST_BYTES_MAX);
        return RK_ERANGE;
    }
    if (bt->state == BULKTEST_RUNNING) {
        snprintf(err, err_len, "a stream to %s is running", bt->peer_id);
        return RK_EDUP;
    }
    p = peer_find(n, id, NULL);
    if (p == NULL || !p->identified) {
        snprintf(err, err_len, "no connection to member '%s'", id);
        return RK_ENOTFOUND;
    }
    if (!msg_type_known(MSG_BULK, p->remote.proto)) {
        snprintf(err, err_len, "member '%s' speaks message set %u, which has no bulk lane", id,
                 p->remote.proto);
        return RK_EMISMATCH;
    }
    bt->state = BULKTEST_RUNNING;
    bt->peer = p;
    snprintf(bt->peer_id, sizeof(bt->peer_id), "%s", id);
    bt->bytes = bytes;
    bt->sent = bt->seq = 0;
    bt->start_ms = clock_mono_ms();
    bt->end_ms = 0;
    bt->error[0] = '\0';
    LOG(LOG_INFO, "bulktest_start", "peer=%s bytes=%llu", id, (unsigned long long)bytes);
    bulktest_pump(bt);
    return 0;
}

void bulktest_received(struct server *n, struct peer *p, size_t len)
{
    struct bulktest *bt = bulktest_get(n);
    uint64_t now = clock_mono_ms();

    if (bt == NULL) {
        return;
    }
    if (bt->received == 0) {
        bt->first_ms = now;
    }
    bt->received += len;
    bt->last_ms = now;
    snprintf(bt->from, sizeof(bt->from), "%s", p->remote.id);
    bt->control_gap_max_ms = p->lanes.control_gap_max_ms;
}

/* Bytes per second of bytes over ms, 0 for no time. */
static int64_t bulktest_rate(uint64_t bytes, uint64_t ms)
{
    return ms == 0 ? 0 : (int64_t)(bytes * 1000 / ms);
}

static void put_pair_int(struct buf *out, const char *name, uint64_t v)
{
    resp_put_bulk_str(out, name);
    resp_put_int(out, (int64_t)v);
}

void bulktest_report(struct server *n, struct buf *out, int proto)
{
    static const struct bulktest idle;
    const struct bulktest *bt = n->bulktest != NULL ? n->bulktest : &idle;
    uint64_t now = clock_mono_ms();
    uint64_t elapsed = bt->state == BULKTEST_IDLE      ? 0
                       : bt->state == BULKTEST_RUNNING ? now - bt->start_ms
                                                       : bt->end_ms - bt->start_ms;

    if (bt->state == BULKTEST_RUNNING) {
        bulktest_snapshot(n->bulktest);
    }
    resp_put_map(out, 16, proto);
    resp_put_bulk_str(out, "state");
    resp_put_bulk_str(out, bulktest_state_names[bt->state]);
    resp_put_bulk_str(out, "peer");
    resp_put_bulk_str(out, bt->peer_id);
    put_pair_int(out, "bytes", bt->bytes);
    put_pair_int(out, "sent", bt->sent);
    put_pair_int(out, "elapsed_ms", elapsed);
    put_pair_int(out, "rate_bps", (uint64_t)bulktest_rate(bt->sent, elapsed));
    resp_put_bulk_str(out, "error");
    resp_put_bulk_str(out, bt->error);
    put_pair_int(out, "queue_peak", bt->queue_peak);
    put_pair_int(out, "queue_max", bt->queue_max);
    put_pair_int(out, "inflight_peak", bt->inflight_peak);
    put_pair_int(out, "window", bt->window);
    put_pair_int(out, "received", bt->received);
    resp_put_bulk_str(out, "received_from");
    resp_put_bulk_str(out, bt->from);
    put_pair_int(out, "received_ms", bt->last_ms - bt->first_ms);
    put_pair_int(out, "received_rate_bps",
                 (uint64_t)bulktest_rate(bt->received, bt->last_ms - bt->first_ms));
    put_pair_int(out, "control_gap_max_ms", bt->control_gap_max_ms);
}

void bulktest_destroy(struct server *n)
{
    struct bulktest *bt = n->bulktest;

    if (bt == NULL) {
        return;
    }
    if (bt->state == BULKTEST_RUNNING && bt->peer != NULL) {
        bt->peer->bulk_ready = NULL;
    }
    free(bt);
    n->bulktest = NULL;
}
