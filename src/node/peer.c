/*
 * peer.c - sealed node-to-node connections (peer.h).
 */
#include "peer.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "addr.h"
#include "bulktest.h"
#include "bytes.h"
#include "clock.h"
#include "cluster_settings.h"
#include "error.h"
#include "frame.h"
#include "kv.h"
#include "log.h"
#include "rpc.h"
#include "server.h"

/* Bytes read per read() call. */
#define PEER_READ_CHUNK (64 * 1024)
/* Bytes sealing adds to a message: the frame header and the AEAD tag (PROTOCOL.md 5). */
#define PEER_SEAL_OVERHEAD (FRAME_HEADER_BYTES + 16)
/*
 * The plaintext of a shared frame: within the smallest frame-max a node
 * accepts, since a peer's own frame-max (the bound it reads frames by) may
 * be smaller than ours, and nodes before IDENT's frame_max do not announce
 * it (PROTOCOL.md 5).
 */
#define PEER_SHARED_PLAIN_MAX (FRAME_MAX_MIN - (PEER_SEAL_OVERHEAD - FRAME_HEADER_BYTES))

static void peer_on_read(struct ev_loop *loop, ev_io *w, int revents);
static void peer_on_write(struct ev_loop *loop, ev_io *w, int revents);
static void peer_on_timer(struct ev_loop *loop, ev_timer *w, int revents);
static void peer_on_request_timer(struct ev_loop *loop, ev_timer *w, int revents);
static void peer_flush(struct peer *p);
static void peer_flush_at(struct peer *p, bool from_prepare);
static void peer_flush_later(struct peer *p);
static int peer_seal_pending(struct peer *p);
static void peer_bulk_closed(struct peer *p);
static void peer_bulk_kick(struct peer *p);
static void peer_grant_initial(struct peer *p);

void peer_set_hooks(struct server *n, const struct peer_hooks *hooks)
{
    assert(hooks->identified != NULL && hooks->message != NULL && hooks->same_id != NULL &&
           hooks->self_dialled != NULL && "peer_set_hooks: a required hook is NULL");
    n->peer_hooks = *hooks;
}

static void peer_free(struct peer *p)
{
    rpc_peer_deinit(p);
    channel_deinit(&p->ch);
    buf_free(&p->in);
    buf_free(&p->out);
    buf_free(&p->msg);
    buf_free(&p->queued);
    buf_free(&p->pending);
    free(p);
}

void peer_hold(struct peer *p)
{
    p->depth++;
}

void peer_release(struct peer *p)
{
    if (--p->depth == 0 && p->dead) {
        peer_free(p);
    }
}

/*
 * What p was sent and the loop has not written yet, written now as far as
 * the socket takes it: a handler that sends a message and then closes
 * (an IDENT, then a refusal of the peer's settings read in the same pass)
 * must not lose the message to the close.  Errors end here, unreported:
 * the connection is closing.
 */
static void peer_send_last(struct peer *p)
{
    size_t sent;

    if (!p->connecting && peer_seal_pending(p) == 0 && p->out.len > 0) {
        (void)net_send_buf(p->fd, &p->out, &sent);
    }
}

void peer_close(struct peer *p, const char *why)
{
    struct server *n = p->node;

    if (p->dead) {
        return;
    }
    /*
     * A refused dial repeats every round while a member is away (the
     * detector says the rest), and a connection that never identified was
     * refused with its own throttled line: both at debug.
     */
    LOG(strcmp(why, "connect_failed") == 0 || !p->identified ? LOG_DEBUG : LOG_INFO, "peer_close",
        "peer=%s remote_id=%s reason=%s", p->addr, p->identified ? p->remote.id : "-", why);
    ev_io_stop(n->loop, &p->rio);
    ev_io_stop(n->loop, &p->wio);
    ev_timer_stop(n->loop, &p->timer);
    peer_send_last(p);
    close(p->fd);
    p->dead = true;
    peer_hold(p); /* the requests' callbacks run with p still allocated */
    rpc_peer_closed(p);
    peer_bulk_closed(p);
    if (n->peer_hooks.closed != NULL) {
        n->peer_hooks.closed(n->peer_hooks.ctx, p);
    }
    if (p->prev != NULL) {
        p->prev->next = p->next;
    } else {
        n->peers = p->next;
    }
    if (p->next != NULL) {
        p->next->prev = p->prev;
    }
    n->n_peers--;
    peer_release(p);
}

/*
 * Lines about refused peers, one throttle per reason: anyone who can reach
 * the peer port can cause them at will (log.h).
 */
static struct log_limit peer_reject_log[METRICS_REJECT_REASONS];

/* Refuse: count the reason, log it with the peer's address (throttled), close. */
static void peer_reject(struct peer *p, enum metrics_reject reason, int err)
{
    p->node->metrics.peer_rejected[reason]++;
    LOG_LIMITED(&peer_reject_log[reason], LOG_WARN, "peer_rejected",
                "peer=%s reason=%s error=\"%s\"", p->addr, metrics_reject_names[reason],
                err != 0 ? rk_strerror(err) : "handshake not completed");
    peer_close(p, metrics_reject_names[reason]);
}

static enum metrics_reject reject_reason(int err)
{
    switch (err) {
    case RK_ETOOBIG:
        return METRICS_REJECT_TOO_BIG;
    case RK_EMISMATCH:
        return METRICS_REJECT_VERSION;
    case RK_EAUTH:
        return METRICS_REJECT_AUTH;
    default:
        return METRICS_REJECT_SYNTAX;
    }
}

static struct peer *peer_new(struct server *n, int fd, bool outbound)
{
    struct peer *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    if (channel_init(&p->ch, n->key, outbound ? CHANNEL_INITIATOR : CHANNEL_RESPONDER,
                     n->cfg.frame_max) != 0) {
        free(p);
        return NULL;
    }
    p->node = n;
    p->fd = fd;
    p->outbound = outbound;
    buf_init(&p->in, n->cfg.frame_max + FRAME_HEADER_BYTES + PEER_READ_CHUNK);
    buf_init(&p->out, 0);
    buf_init(&p->msg, 0);
    buf_init(&p->queued, n->cfg.frame_max);
    buf_init(&p->pending, PEER_SHARED_PLAIN_MAX);
    lanes_init(&p->lanes, n->cfg.peer_queue_max, n->cfg.peer_bulk_window);
    ev_io_init(&p->rio, peer_on_read, fd, EV_READ);
    ev_io_init(&p->wio, peer_on_write, fd, EV_WRITE);
    ev_timer_init(&p->timer, peer_on_timer, (double)n->cfg.handshake_timeout_ms / 1000.0, 0.);
    ev_init(&p->request_w, peer_on_request_timer);
    rpc_peer_init(p);
    p->rio.data = p->wio.data = p->timer.data = p->request_w.data = p;
    p->next = n->peers;
    if (n->peers != NULL) {
        n->peers->prev = p;
    }
    n->peers = p;
    n->n_peers++;
    n->metrics.peer_connections++;
    ev_timer_start(n->loop, &p->timer);
    return p;
}

/* The IP of a peer's address text ("ip:port" or "[ip6]:port"): the text before the port. */
static size_t peer_host_len(const char *addr)
{
    const char *colon = strrchr(addr, ':');

    return colon != NULL ? (size_t)(colon - addr) : strlen(addr);
}

/*
 * Whether an inbound connection from addr would exceed the handshake
 * budget: peer-handshake-max inbound connections that have not yet proved
 * the cluster key, at most peer-handshake-per-addr of them from one IP.
 * Peers through the handshake are not counted: a stranger's idle
 * connections can fill only these slots, never a member's.
 */
static const char *peer_handshake_full(const struct server *n, const char *addr)
{
    size_t host_len = peer_host_len(addr);
    uint64_t all = 0, same = 0;

    for (const struct peer *q = n->peers; q != NULL; q = q->next) {
        if (q->dead || q->outbound || channel_is_open(&q->ch)) {
            continue;
        }
        all++;
        same += peer_host_len(q->addr) == host_len && memcmp(q->addr, addr, host_len) == 0;
    }
    if (all >= n->cfg.peer_handshake_max) {
        return "handshakes";
    }
    return same >= n->cfg.peer_handshake_per_addr ? "handshakes_per_addr" : NULL;
}

void peer_accept(struct server *n, int fd, const struct sockaddr_storage *addr)
{
    static struct log_limit limit_log;
    char text[NET_ADDR_TEXT];
    const char *full = NULL;
    struct peer *p;

    net_addr_text(addr, text);
    if (n->n_peers >= n->cfg.peer_maxconn || n->stopping ||
        (full = peer_handshake_full(n, text)) != NULL) {
        n->metrics.peer_rejected[METRICS_REJECT_LIMIT]++;
        LOG_LIMITED(&limit_log, LOG_WARN, "peer_rejected", "peer=%s reason=limit limit=%s", text,
                    full != NULL  ? full
                    : n->stopping ? "stopping"
                                  : "peer_maxconn");
        close(fd);
        return;
    }
    p = peer_new(n, fd, false);
    if (p == NULL) {
        close(fd);
        return;
    }
    memcpy(p->addr, text, sizeof(p->addr));
    ev_io_start(n->loop, &p->rio);
}

/* Seal plain[0..len) as the next frame. */
static int peer_seal(struct peer *p, const uint8_t *plain, size_t len)
{
    int rc = channel_seal(&p->ch, plain, len, &p->out);

    if (rc == 0) {
        p->node->metrics.peer_messages_out++;
    }
    return rc;
}

/* Whether a type travels in the bulk lane. */
static bool peer_type_bulk(enum msg_type type)
{
    return type == MSG_BULK || type == MSG_BULK_RESPONSE;
}

/* Bytes waiting to be written: sealed frames, and messages waiting for the handshake or their
 * frame. */
static size_t peer_queued(const struct peer *p)
{
    return p->out.len + p->queued.len + p->pending.len;
}

/* The plaintext one frame may carry on p. */
static size_t peer_plain_max(const struct peer *p)
{
    return p->node->cfg.frame_max - (PEER_SEAL_OVERHEAD - FRAME_HEADER_BYTES);
}

/*
 * Seal the messages waiting for a shared frame as one frame.  The
 * messages of one loop pass to a peer of message set 3 share a frame
 * (PROTOCOL.md 4.1): one AEAD seal, one header, instead of one each.
 */
static int peer_seal_pending(struct peer *p)
{
    int rc;

    if (p->pending.len == 0) {
        return 0;
    }
    rc = channel_seal(&p->ch, buf_data(&p->pending), p->pending.len, &p->out);
    if (rc == 0) {
        p->node->metrics.peer_messages_out += p->pending_n;
        p->node->metrics.peer_frames_shared += p->pending_n > 1;
    }
    buf_clear(&p->pending);
    p->pending_n = 0;
    return rc;
}

/* Whether messages to p share frames: its IDENT announced message set 3 or later. */
static bool peer_shares_frames(const struct peer *p)
{
    return p->identified && p->remote.proto >= MSG_PROTO_V3 && channel_is_open(&p->ch);
}

/* Whether a waiting bulk producer (one, or the queued answers) may go on now. */
static bool peer_bulk_pending(const struct peer *p)
{
    return (p->bulk_ready != NULL || p->bulk_answers != NULL) &&
           lanes_bulk_ready(&p->lanes, peer_queued(p));
}

/*
 * Whether a control message of len plaintext bytes fits under
 * peer-queue-max; when it does not, say so once with the figures (the
 * caller closes the connection: lanes.h says why).
 */
static bool peer_queue_fits(struct peer *p, size_t queued, size_t len)
{
    if (lanes_control_fits(&p->lanes, queued, len + PEER_SEAL_OVERHEAD)) {
        return true;
    }
    p->node->metrics.peer_queue_full++;
    LOG(LOG_WARN, "peer_queue_full", "peer=%s remote_id=%s queued=%zu message=%zu max=%zu", p->addr,
        p->identified ? p->remote.id : "-", queued, len, p->lanes.queue_max);
    return false;
}

/* peer_send_shared(): the message is over a shared frame and goes in a frame of its own. */
#define PEER_SEND_ALONE 1

/*
 * Encode m straight into the frame being filled for p (a peer that reads
 * several messages a frame), sealing that frame first when m does not fit
 * in what is left of it.  PEER_SEND_ALONE for a message over a shared
 * frame (PEER_SHARED_PLAIN_MAX), nothing done; RK_ETOOBIG over
 * peer-queue-max (the caller closes p).
 */
static int peer_send_shared(struct peer *p, const struct msg *m)
{
    size_t at = p->pending.len;
    int rc = msg_encode(m, &p->pending);

    if (rc == RK_ETOOBIG && at > 0) {
        rc = peer_seal_pending(p);
        at = 0;
        rc = rc ? rc : msg_encode(m, &p->pending);
    }
    if (rc == RK_ETOOBIG) {
        return PEER_SEND_ALONE;
    }
    if (rc != 0) {
        return rc;
    }
    if (!peer_queue_fits(p, peer_queued(p) - (p->pending.len - at), p->pending.len - at)) {
        p->pending.len = at; /* msg_encode() appended it: take it back */
        return RK_ETOOBIG;
    }
    p->pending_n++;
    return 0;
}

/*
 * Send m in a frame of its own: sealed after the pending shared frame once
 * the channel is open, queued for the handshake before.  Closes p on
 * failure.
 */
static int peer_send_alone(struct peer *p, const struct msg *m)
{
    struct buf plain;
    uint8_t head[4];
    int rc;

    buf_init(&plain, 0);
    rc = msg_encode(m, &plain);
    if (rc == 0 && !peer_queue_fits(p, peer_queued(p), plain.len)) {
        buf_free(&plain);
        peer_close(p, "queue_full");
        return RK_ETOOBIG;
    }
    if (rc == 0 && channel_is_open(&p->ch)) {
        rc = peer_seal_pending(p);
        rc = rc ? rc : peer_seal(p, buf_data(&plain), plain.len);
    } else if (rc == 0) {
        bytes_put_be32(head, (uint32_t)plain.len);
        rc = buf_append(&p->queued, head, sizeof(head));
        rc = rc ? rc : buf_append(&p->queued, buf_data(&plain), plain.len);
    }
    buf_free(&plain);
    if (rc != 0) {
        peer_close(p, "send_failed");
    }
    return rc;
}

int peer_send(struct peer *p, const struct msg *m)
{
    int rc = PEER_SEND_ALONE;

    if (p->dead) {
        return RK_ECLOSED;
    }
    if (!msg_type_known((int)m->type, p->identified ? p->remote.proto : MSG_PROTO_V1)) {
        return RK_EMISMATCH;
    }
    if (peer_type_bulk(m->type)) {
        return RK_EINVAL;
    }
    if (peer_shares_frames(p)) {
        rc = peer_send_shared(p, m);
        if (rc < 0) {
            peer_close(p, rc == RK_ETOOBIG ? "queue_full" : "send_failed");
            return rc;
        }
    }
    if (rc == PEER_SEND_ALONE) {
        rc = peer_send_alone(p, m);
        if (rc != 0) {
            return rc;
        }
    }
    lanes_queued(&p->lanes, peer_queued(p));
    peer_flush_later(p);
    return 0;
}

/* The channel opened: seal what was sent before. */
static int peer_send_queued(struct peer *p)
{
    while (p->queued.len >= 4) {
        const uint8_t *q = buf_data(&p->queued);
        size_t len = bytes_get_be32(q);
        int rc = peer_seal(p, q + 4, len);
        if (rc != 0) {
            return rc;
        }
        buf_consume(&p->queued, 4 + len);
    }
    return 0;
}

struct peer *peer_find(struct server *n, const char *id, const char *addr)
{
    for (struct peer *p = n->peers; p != NULL; p = p->next) {
        if (p->dead) {
            continue;
        }
        if (id != NULL && p->identified && strcmp(p->remote.id, id) == 0) {
            return p;
        }
        if (addr != NULL && ((p->outbound && strcmp(p->target, addr) == 0) ||
                             (p->identified && strcmp(p->remote.peer_addr, addr) == 0))) {
            return p;
        }
    }
    return NULL;
}

/* The channel just opened: introduce ourselves. */
static void peer_opened(struct peer *p)
{
    struct server *n = p->node;
    struct msg m = {.type = MSG_IDENT};

    ev_timer_stop(n->loop, &p->timer);
    n->metrics.peer_handshakes++;
    snprintf(m.u.ident.id, sizeof(m.u.ident.id), "%s", n->cfg.id);
    snprintf(m.u.ident.rack, sizeof(m.u.ident.rack), "%s", n->cfg.rack);
    m.u.ident.version = CHANNEL_VERSION;
    m.u.ident.proto = MSG_PROTO_VERSION;
    m.u.ident.has_cluster = true;
    m.u.ident.instance = n->run_id;
    m.u.ident.frame_max = (uint32_t)n->cfg.frame_max; /* at most 1 GiB (settings.c) */
    cluster_settings_from(&n->cfg, &m.u.ident.cluster);
    settings_addr_text(&n->cfg.listen, m.u.ident.peer_addr, sizeof(m.u.ident.peer_addr));
    settings_addr_text(&n->cfg.client, m.u.ident.client_addr, sizeof(m.u.ident.client_addr));
    if (peer_send(p, &m) == 0 && peer_send_queued(p) != 0) {
        peer_close(p, "send_failed");
    }
}

/* --- messages -------------------------------------------------------------------- */

/* One end of p's connection: ours (getsockname) or the other's (getpeername). */
static bool peer_end(const struct peer *p, bool ours, struct sockaddr_storage *a, socklen_t *len)
{
    *len = sizeof(*a);
    memset(a, 0, sizeof(*a));
    return (ours ? getsockname(p->fd, (struct sockaddr *)a, len)
                 : getpeername(p->fd, (struct sockaddr *)a, len)) == 0;
}

/*
 * The other end of p's connection when it is one of our own connections
 * (we dialled ourselves), else NULL.  Judged by the sockets, not by
 * names, so a second process that claims our id is never taken for us.
 */
static struct peer *peer_loop_partner(const struct peer *p)
{
    struct sockaddr_storage a, b;
    socklen_t alen, blen;

    /* an outbound connection's own end is the far end of an inbound one, and the reverse */
    if (!peer_end(p, p->outbound, &a, &alen)) {
        return NULL;
    }
    for (struct peer *q = p->node->peers; q != NULL; q = q->next) {
        if (q != p && q->outbound != p->outbound && !q->dead &&
            peer_end(q, q->outbound, &b, &blen) && alen == blen && memcmp(&a, &b, alen) == 0) {
            return q;
        }
    }
    return NULL;
}

/*
 * We dialled ourselves, by another name for our address (a seed list): p
 * and partner are the two ends of one connection.  Both close now, and
 * that address is not dialled again.
 */
static void peer_self(struct peer *p, struct peer *partner)
{
    struct peer *out = p->outbound ? p : partner;

    LOG(LOG_DEBUG, "peer_self", "peer=%s", out->target);
    p->node->peer_hooks.self_dialled(p->node->peer_hooks.ctx, out->target);
    peer_close(partner, "self");
    peer_close(p, "self");
}

static void on_ident(struct peer *p, const struct msg *m)
{
    if (p->identified) {
        /* one IDENT per connection: a second would rename it and grant its window twice */
        peer_reject(p, METRICS_REJECT_SYNTAX, RK_ESYNTAX);
        return;
    }
    if (strcmp(m->u.ident.id, p->node->cfg.id) == 0) {
        struct peer *partner = peer_loop_partner(p);
        if (partner != NULL) {
            peer_self(p, partner);
            return;
        }
        if (m->u.ident.instance != 0 && m->u.ident.instance == p->node->run_id) {
            /* our own IDENT, carried back by a relay: not another process with our id */
            peer_reject(p, METRICS_REJECT_REFLECTED, 0);
            return;
        }
        LOG(LOG_WARN, "peer_same_id", "peer=%s remote_id=%s peer_addr=%s", p->addr, m->u.ident.id,
            m->u.ident.peer_addr);
        peer_close(p, "same_id");
        p->node->peer_hooks.same_id(p->node->peer_hooks.ctx, m->u.ident.peer_addr);
        return;
    }
    if (!cluster_settings_accept(p->node, p, &m->u.ident)) {
        return;
    }
    p->remote = m->u.ident;
    p->identified = true;
    LOG(LOG_DEBUG, "peer_ident", "peer=%s remote_id=%s rack=%s peer_addr=%s", p->addr, p->remote.id,
        p->remote.rack, p->remote.peer_addr);
    p->node->peer_hooks.identified(p->node->peer_hooks.ctx, p);
    peer_grant_initial(p);
}

static void on_ping(struct peer *p, const struct msg *m)
{
    struct msg pong = {.type = MSG_PONG, .u.ping = m->u.ping};

    if (peer_send(p, &pong) == 0) {
        p->node->peer_hooks.message(p->node->peer_hooks.ctx, p, m);
    }
}

/* Gossip and pongs: the membership engine's business, through the server's hook. */
static void on_gossip(struct peer *p, const struct msg *m)
{
    p->node->peer_hooks.message(p->node->peer_hooks.ctx, p, m);
}

/* --- the bulk lane (lanes.h, PROTOCOL.md section 7.11) ---------------------------- */

/* The peer is identified: grant it our whole window, if its message set has the lane. */
static void peer_grant_initial(struct peer *p)
{
    struct msg m = {.type = MSG_CREDIT};

    if (p->dead || !msg_type_known(MSG_CREDIT, p->remote.proto)) {
        return;
    }
    m.u.credit.window = p->lanes.window;
    m.u.credit.grant = lanes_grant_initial(&p->lanes);
    peer_send(p, &m);
}

static void on_credit(struct peer *p, const struct msg *m)
{
    int rc = lanes_credit_in(&p->lanes, m->u.credit.grant, m->u.credit.window);

    if (rc != 0) {
        p->node->metrics.peer_credit_errors++;
        LOG(LOG_WARN, "peer_bad_credit",
            "peer=%s remote_id=%s grant=%llu window=%llu credit=%llu announced=%llu", p->addr,
            p->remote.id, (unsigned long long)m->u.credit.grant,
            (unsigned long long)m->u.credit.window, (unsigned long long)p->lanes.credit,
            (unsigned long long)p->lanes.peer_window);
        peer_close(p, "bad_credit");
        return;
    }
    peer_bulk_kick(p);
}

/*
 * A bulk message of len bytes arrived: count it within our grant.  False
 * when it is over the grant: the peer broke the protocol, p is closed.
 */
static bool peer_bulk_arrived(struct peer *p, size_t len)
{
    if (lanes_bulk_in(&p->lanes, len) != 0) {
        p->node->metrics.peer_credit_errors++;
        LOG(LOG_WARN, "peer_bulk_over_credit", "peer=%s remote_id=%s message=%zu allowed=%llu",
            p->addr, p->remote.id, len, (unsigned long long)p->lanes.allowed);
        peer_close(p, "bulk_over_credit");
        return false;
    }
    p->node->metrics.peer_bulk_bytes_in += len;
    return true;
}

/* len bulk bytes were consumed: grant them back once a quarter of the window waits. */
static void peer_bulk_consumed(struct peer *p, size_t len)
{
    struct msg credit = {.type = MSG_CREDIT};

    credit.u.credit.grant = lanes_bulk_consumed(&p->lanes, len);
    credit.u.credit.window = p->lanes.window;
    if (credit.u.credit.grant > 0) {
        peer_send(p, &credit);
    }
}

/* Synthetic bulk: count it within our grant, hand it to the test stream's counter, grant back. */
static void on_bulk(struct peer *p, const struct msg *m)
{
    size_t len = p->msg_len;

    if (!peer_bulk_arrived(p, len)) {
        return;
    }
    bulktest_received(p->node, p, m->u.bulk.len);
    peer_bulk_consumed(p, len);
}

/*
 * An answer that came in the bulk lane (a handoff batch): counted within
 * our grant, routed as a RESPONSE, then granted back: its request's
 * callback has taken what it keeps of the body by then.
 */
static void on_bulk_response(struct peer *p, const struct msg *m)
{
    size_t len = p->msg_len;

    if (!peer_bulk_arrived(p, len)) {
        return;
    }
    p->node->metrics.peer_bulk_answers_in++;
    rpc_on_response(p, m);
    if (!p->dead) {
        peer_bulk_consumed(p, len);
    }
}

/*
 * Seal an encoded bulk message if the lane lets it go now: 0, or
 * PEER_BULK_WAIT, or RK_ETOOBIG (over the frame or half the peer's
 * window) with nothing sealed; a sealing failure closes the connection.
 */
static int peer_bulk_seal(struct peer *p, const struct buf *plain)
{
    int rc;

    if (plain->len > peer_plain_max(p)) {
        return RK_ETOOBIG;
    }
    switch (lanes_bulk_check(&p->lanes, peer_queued(p), plain->len)) {
    case LANES_BULK_TOOBIG:
        return RK_ETOOBIG;
    case LANES_BULK_WAIT:
    case LANES_BULK_NOLANE: /* a peer of message set 2 sends its first grant after its IDENT */
        return PEER_BULK_WAIT;
    case LANES_BULK_SEND:
        break;
    }
    rc = peer_seal_pending(p);
    rc = rc ? rc : peer_seal(p, buf_data(plain), plain->len);
    if (rc != 0) {
        peer_close(p, "send_failed");
        return rc;
    }
    lanes_bulk_sent(&p->lanes, plain->len);
    lanes_queued(&p->lanes, peer_queued(p));
    p->node->metrics.peer_bulk_bytes_out += plain->len;
    return 0;
}

int peer_send_bulk(struct peer *p, const struct msg *m)
{
    struct buf plain;
    int rc;

    if (p->dead) {
        return RK_ECLOSED;
    }
    if (!peer_type_bulk(m->type)) {
        return RK_EINVAL;
    }
    if (!p->identified || !msg_type_known((int)m->type, p->remote.proto)) {
        return RK_EMISMATCH;
    }
    buf_init(&plain, 0);
    rc = msg_encode(m, &plain);
    if (rc == 0) {
        rc = peer_bulk_seal(p, &plain);
    }
    buf_free(&plain);
    if (rc == 0) {
        /* a producer outside our handlers would not know the write closed (and freed) p */
        peer_hold(p);
        peer_flush(p);
        rc = p->dead ? RK_ECLOSED : 0;
        peer_release(p);
    }
    return rc;
}

void peer_bulk_wait(struct peer *p, peer_bulk_fn fn, void *arg)
{
    p->bulk_ready = fn;
    p->bulk_arg = arg;
    if (!p->dead && peer_bulk_pending(p)) {
        /* ready already: the writable socket calls it back from the loop, not from here */
        ev_io_start(p->node->loop, &p->wio);
    }
}

/* The waiting bulk producers may go on: the queued answers first, then the one called, once. */
static void peer_bulk_kick(struct peer *p)
{
    peer_bulk_fn fn;

    if (!p->dead && p->bulk_answers != NULL && lanes_bulk_ready(&p->lanes, peer_queued(p))) {
        rpc_bulk_send_waiting(p);
    }
    fn = p->bulk_ready;
    if (p->dead || fn == NULL || !lanes_bulk_ready(&p->lanes, peer_queued(p))) {
        return;
    }
    p->bulk_ready = NULL;
    fn(p, p->bulk_arg, 0);
}

/* The connection closed: the waiting producer learns it now. */
static void peer_bulk_closed(struct peer *p)
{
    peer_bulk_fn fn = p->bulk_ready;

    p->bulk_ready = NULL;
    if (fn != NULL) {
        fn(p, p->bulk_arg, RK_ECLOSED);
    }
}

struct peer_handler {
    enum msg_type type;
    void (*handle)(struct peer *p, const struct msg *m);
};

static const struct peer_handler peer_handlers[] = {
    {MSG_IDENT, on_ident},
    {MSG_PING, on_ping},
    {MSG_PONG, on_gossip},
    {MSG_GOSSIP_SYN, on_gossip},
    {MSG_GOSSIP_ACK, on_gossip},
    {MSG_GOSSIP_ACK2, on_gossip},
    {MSG_CREDIT, on_credit},
    {MSG_BULK, on_bulk},
    {MSG_REQUEST, rpc_on_request},
    {MSG_RESPONSE, rpc_on_response},
    {MSG_BULK_RESPONSE, on_bulk_response},
};

/*
 * A message of a type this node does not know, from an identified peer: a
 * newer node's type.  Counted and dropped; the connection stays, since
 * the sender is a member speaking a later message set.
 */
static void peer_unknown_type(struct peer *p, const uint8_t *in, size_t len)
{
    uint64_t type = 0;

    (void)msg_peek_type(in, len, &type);
    p->node->metrics.peer_messages_in++;
    p->node->metrics.peer_messages_unknown++;
    LOG(LOG_DEBUG, "peer_unknown_type", "peer=%s remote_id=%s type=%llu proto=%u", p->addr,
        p->remote.id, (unsigned long long)type, p->remote.proto);
}

/*
 * Decode and handle one message: all of in[0..len), or with several the
 * first of the messages there, whose length goes into *used (each read
 * once: msg_decode_next()).  False when p was rejected for it.
 */
static bool peer_message_one(struct peer *p, const uint8_t *in, size_t len, bool several,
                             size_t *used)
{
    struct msg m;
    int rc;

    *used = len;
    rc = several ? msg_decode_next(in, len, &m, used) : msg_decode(in, len, &m);
    if (rc != 0 && several) {
        /* the message's end, and the frame walk's error when it finds one first */
        int frc = msg_frame_next(in, len, used);
        rc = frc != 0 ? frc : rc;
    }
    if (rc == RK_ENOTFOUND && p->identified) {
        peer_unknown_type(p, in, *used);
        return true;
    }
    p->msg_len = *used;
    if (rc != 0) {
        peer_reject(p, METRICS_REJECT_SYNTAX, rc);
        return false;
    }
    p->node->metrics.peer_messages_in++;
    if (!p->identified && m.type != MSG_IDENT) {
        msg_free(&m);
        peer_reject(p, METRICS_REJECT_SYNTAX, RK_ESYNTAX);
        return false;
    }
    if (!peer_type_bulk(m.type)) {
        lanes_control_in(&p->lanes, rpc_loop_us(p->node) / 1000);
    }
    for (size_t i = 0; i < sizeof(peer_handlers) / sizeof(peer_handlers[0]); i++) {
        if (peer_handlers[i].type == m.type) {
            peer_handlers[i].handle(p, &m);
            break;
        }
    }
    msg_free(&m);
    return true;
}

/*
 * The plaintext of one frame: one message, or from a peer of message set 3
 * several back to back (PROTOCOL.md 5), each handled in order until p is
 * closed.  The plaintext stays in p->msg until the last is handled, since
 * decoded messages may point into it; it is cleared after.
 */
static void peer_message(struct peer *p)
{
    const uint8_t *in = buf_data(&p->msg);
    size_t len = p->msg.len, at = 0;

    if (len == 0) {
        peer_reject(p, METRICS_REJECT_SYNTAX, RK_ESYNTAX); /* a frame holds at least one message */
    }
    while (!p->dead && at < len) {
        size_t used;
        if (!peer_message_one(p, in + at, len - at,
                              p->identified && p->remote.proto >= MSG_PROTO_V3, &used)) {
            break;
        }
        at += used;
    }
    buf_clear(&p->msg);
}

/* --- I/O --------------------------------------------------------------------------- */

/*
 * Whether the handshake p just read carries a nonce one of this node's own
 * channels made: our own HELLO or WELCOME came back through a relay.  The
 * reply it earned is still in p->out, unsent; the caller closes p.
 */
static bool peer_reflected(const struct peer *p)
{
    for (const struct peer *q = p->node->peers; q != NULL; q = q->next) {
        if (!q->dead && channel_nonce_reflected(&p->ch, &q->ch)) {
            return true;
        }
    }
    return false;
}

/*
 * Our own handshake came back on p: straight from one of our connections
 * (we dialled our own address under another name: the sockets show it),
 * handled as a self-dial; otherwise through a relay, refused as reflected.
 */
static void peer_refuse_reflected(struct peer *p)
{
    struct peer *partner = peer_loop_partner(p);

    if (partner != NULL) {
        peer_self(p, partner);
        return;
    }
    peer_reject(p, METRICS_REJECT_REFLECTED, 0);
}

/* Feed the channel every complete frame that has arrived; false when p was refused. */
static bool peer_input_frames(struct peer *p)
{
    while (!p->dead && p->in.len > 0) {
        bool was_open = channel_is_open(&p->ch);
        size_t used = 0;
        int rc = channel_feed(&p->ch, buf_data(&p->in), p->in.len, &used, &p->out, &p->msg);
        buf_consume(&p->in, used);
        if (rc < 0) {
            peer_reject(p, reject_reason(rc), rc);
            return false;
        }
        if (rc == CHANNEL_NEED_MORE) {
            break;
        }
        if (rc == CHANNEL_PROGRESS && peer_reflected(p)) {
            peer_refuse_reflected(p);
            return false;
        }
        if (!was_open && channel_is_open(&p->ch)) {
            peer_opened(p);
        } else if (rc == CHANNEL_MESSAGE) {
            peer_message(p);
        }
    }
    return true;
}

/*
 * The frames that arrived, then what they earned, sent.  The replica reads
 * served from one read of the socket share one store snapshot
 * (kv_read_hold(): one read transaction, not one per read).
 */
static void peer_input(struct peer *p)
{
    struct kv *kv = p->node->kv;
    bool go_on;

    if (kv != NULL) {
        (void)kv_read_hold(kv);
    }
    go_on = peer_input_frames(p);
    if (kv != NULL) {
        kv_read_release(kv);
    }
    if (go_on && !p->dead) {
        peer_flush(p);
    }
}

static void peer_on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    struct peer *p = w->data;
    uint8_t *d;
    ssize_t r;

    (void)loop;
    (void)revents;
    peer_hold(p);
    d = buf_reserve(&p->in, PEER_READ_CHUNK);
    r = d != NULL ? read(p->fd, d, PEER_READ_CHUNK) : -1;
    if (r < 0 && d != NULL && (errno == EAGAIN || errno == EINTR)) {
        goto out_leave;
    }
    if (r <= 0 && !channel_is_open(&p->ch)) {
        /* a peer that cannot prove the key often just hangs up: count it */
        peer_reject(p, METRICS_REJECT_ABORTED, 0);
        goto out_leave;
    }
    if (r <= 0) {
        peer_close(p, r == 0 ? "eof" : "read_error");
        goto out_leave;
    }
    buf_commit(&p->in, (size_t)r);
    peer_input(p);
out_leave:
    peer_release(p);
}

static void peer_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)revents;
    peer_flush_queued(w->data);
    ev_prepare_stop(loop, w); /* started again by the next peer_flush_later() */
}

/*
 * The bytes leave before the loop sleeps (peer_flush_queued()): every
 * message this loop pass sends to p (a coordinator's replica writes for a
 * pipeline of client commands) shares one send(), and the caller never
 * sees p closed by a failed write under it.  The write watcher is armed
 * only when the socket does not take them all; arming it for every pass
 * cost two epoll_ctl() calls and a wakeup more per pass.
 */
static void peer_flush_later(struct peer *p)
{
    struct server *n = p->node;

    if (p->flush_queued || ev_is_active(&p->wio)) {
        return;
    }
    peer_hold(p);
    p->flush_queued = true;
    p->flush_next = n->peers_to_flush;
    n->peers_to_flush = p;
    if (!ev_is_active(&n->peer_prepare_w)) {
        ev_prepare_init(&n->peer_prepare_w, peer_on_prepare);
        n->peer_prepare_w.data = n;
        /* after the client layer's, which may send more in the same pass */
        ev_set_priority(&n->peer_prepare_w, EV_MINPRI);
        ev_prepare_start(n->loop, &n->peer_prepare_w);
    }
}

void peer_flush_queued(struct server *n)
{
    struct peer *p;

    while ((p = n->peers_to_flush) != NULL) {
        n->peers_to_flush = p->flush_next;
        p->flush_queued = false;
        if (!p->dead && !ev_is_active(&p->wio)) {
            peer_flush_at(p, true);
        }
        peer_release(p);
    }
}

static void peer_flush(struct peer *p)
{
    peer_flush_at(p, false);
}

/*
 * Write what p holds.  From a prepare watcher (from_prepare), a failed
 * write does not close p there: closing ends p's requests, and what their
 * callbacks finish (client commands, hints) is taken by the client layer's
 * prepare watcher, which has run already, so it would wait for whatever
 * wakes the loop next.  The write watcher is armed instead: the socket's
 * error wakes the loop at once, and its callback's write fails and closes p
 * in the loop's I/O phase, before the next pass of the prepare watchers.
 */
static void peer_flush_at(struct peer *p, bool from_prepare)
{
    size_t sent;

    if (peer_seal_pending(p) != 0) {
        peer_close(p, "send_failed");
        return;
    }
    if (!p->connecting && net_send_buf(p->fd, &p->out, &sent) != 0) {
        if (from_prepare) {
            ev_io_start(p->node->loop, &p->wio);
            return;
        }
        peer_close(p, "write_error");
        return;
    }
    /*
     * A bulk producer waiting for the queue to drain is called from
     * peer_on_write: keep the watcher while one could go on, whoever
     * drained the queue (a pong sent from a read handler does too).
     */
    if (p->out.len > 0 || p->connecting || peer_bulk_pending(p)) {
        ev_io_start(p->node->loop, &p->wio);
    } else {
        ev_io_stop(p->node->loop, &p->wio);
    }
}

static void peer_on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    struct peer *p = w->data;

    (void)loop;
    (void)revents;
    peer_hold(p);
    if (p->connecting) {
        int e = net_connect_result(p->fd);
        if (e != 0) {
            LOG(LOG_DEBUG, "peer_connect_failed", "peer=%s error=\"%s\"", p->addr, strerror(e));
            peer_close(p, "connect_failed");
            goto out_leave;
        }
        p->connecting = false;
        ev_io_start(p->node->loop, &p->rio);
    }
    peer_flush(p);
    peer_bulk_kick(p);
out_leave:
    peer_release(p);
}

static void peer_on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct peer *p = w->data;

    (void)loop;
    (void)revents;
    peer_hold(p);
    if (!channel_is_open(&p->ch)) {
        peer_reject(p, METRICS_REJECT_TIMEOUT, 0);
    }
    peer_release(p);
}

/* A peer request's deadline (rpc.h). */
static void peer_on_request_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct peer *p = w->data;

    (void)loop;
    (void)revents;
    peer_hold(p);
    rpc_peer_expire(p);
    peer_release(p);
}

struct peer *peer_connect(struct server *n, const char *addr, char *err, size_t err_len)
{
    struct addr a;
    const char *why;
    struct peer *p;
    int fd;

    if (addr_parse(addr, strlen(addr), 0, &a, &why) != 0) {
        snprintf(err, err_len, "'%s' is not host:port (%s)", addr, why);
        return NULL;
    }
    fd = net_connect(a.host, a.port, n->cfg.listen.host, err, err_len);
    if (fd < 0) {
        return NULL;
    }
    p = peer_new(n, fd, true);
    if (p == NULL) {
        close(fd);
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    snprintf(p->addr, sizeof(p->addr), "%s", addr);
    snprintf(p->target, sizeof(p->target), "%s", addr);
    p->connecting = true;
    if (channel_start(&p->ch, &p->out) != 0) {
        peer_close(p, "handshake_failed");
        snprintf(err, err_len, "cannot start the handshake");
        return NULL;
    }
    ev_io_start(n->loop, &p->wio);
    return p;
}
