/*
 * peer.h - node-to-node connections over the sealed channel.
 *
 * Either side may connect.  The connecting side binds to its own listen
 * address first (net.h), then both run the channel's handshake; a
 * connection that does not complete it within handshake-timeout, presents
 * the wrong cluster key, or sends anything malformed is refused, counted by
 * reason (metrics.h) and logged with the peer's address, and the node goes
 * on unaffected.  Once the channel is open each side sends MSG_IDENT
 * first; every later message is dispatched through a table by type.
 *
 * What a connection learns goes up through a struct peer_hooks table that
 * the server registers (peer_set_hooks()): the remote identified itself,
 * a message for gossip arrived, the connection closed, the remote claims
 * our id, we dialled ourselves.  peer.c calls no higher module by name.
 */
#ifndef RINGKV_PEER_H
#define RINGKV_PEER_H

#include <ev.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "buf.h"
#include "channel.h"
#include "lanes.h"
#include "msg.h"
#include "net.h"
#include "request.h"

struct server;
struct peer;

/*
 * The server's callbacks, each given ctx first.  The peer is borrowed for
 * the call.  identified, message, same_id and self_dialled are required;
 * closed may be NULL.
 */
struct peer_hooks {
    /* p's MSG_IDENT arrived: p->remote holds it. */
    void (*identified)(void *ctx, struct peer *p);
    /* A liveness or gossip message (PING, PONG, SYN, ACK, ACK2) from identified p. */
    void (*message)(void *ctx, struct peer *p, const struct msg *m);
    /* p is closing: after this call it is never handed out again. */
    void (*closed)(void *ctx, struct peer *p);
    /* A remote at addr introduced itself with our own id (p is already closed). */
    void (*same_id)(void *ctx, const char *addr);
    /* Our outbound connection to addr reached this very node (both ends are closed). */
    void (*self_dialled)(void *ctx, const char *addr);
    void *ctx;
};

/* Register the hooks of every connection of n (copied); before the first connection. */
void peer_set_hooks(struct server *n, const struct peer_hooks *hooks);

/*
 * Told that a bulk message that had to wait may now be sent (status 0), or
 * that the connection closed (RK_ECLOSED: p is going away; do not use it
 * after returning).  One-shot: call peer_bulk_wait() again to wait again.
 */
typedef void (*peer_bulk_fn)(struct peer *p, void *arg, int status);

/* peer_send_bulk()'s answer when the message must wait: not an error. */
#define PEER_BULK_WAIT 1

struct rpc_answer;
struct rpc_bulk_answer;

struct peer {
    struct server *node;
    struct peer *prev, *next;
    int fd;
    ev_io rio, wio;
    ev_timer timer; /* the handshake deadline */
    struct channel ch;
    struct buf in, out, msg;
    bool outbound;
    bool connecting;
    bool identified; /* the remote's MSG_IDENT has arrived */
    bool dead;
    int depth; /* handlers of this peer on the stack */
    struct msg_ident remote;
    char addr[NET_ADDR_TEXT];
    char target[MSG_ADDR_MAX]; /* outbound: the address we connected to */
    struct buf queued;         /* messages sent before the channel opened, length-prefixed */
    struct buf pending;        /* messages for one shared frame, not sealed yet (peer.c) */
    size_t pending_n;          /* how many messages pending holds */
    struct lanes lanes;        /* the queue bound and the bulk credit (lanes.h) */
    size_t msg_len;            /* plaintext bytes of the message being handled */
    peer_bulk_fn bulk_ready;   /* the bulk producer waiting for room; NULL when none */
    void *bulk_arg;
    struct request_table requests; /* peer requests sent on it, awaiting answers (rpc.h) */
    ev_timer request_w;            /* fires at or before the earliest of their deadlines */
    uint64_t request_w_at;         /* when request_w fires while active (monotonic us) */
    struct rpc_answer *answers;    /* requests from it being served, answered later (rpc.c) */
    /* answers for its bulk lane waiting for room and credit, oldest first (rpc.c) */
    struct rpc_bulk_answer *bulk_answers, *bulk_answers_tail;
    size_t n_bulk_answers;
    bool over_frame_logged;  /* a message over the remote's frame-max was refused (rpc.c) */
    struct peer *flush_next; /* in server.peers_to_flush while flush_queued */
    bool flush_queued;
};

/*
 * Write what this loop pass sent to each peer: one send() a peer, without
 * arming its write watcher unless the socket does not take it all.  Runs
 * before the loop sleeps, from the peer layer's prepare watcher and at the
 * end of the client layer's (whose store submission sends replica writes).
 */
void peer_flush_queued(struct server *n);

/* Take over an accepted connection on the peer port. */
void peer_accept(struct server *n, int fd, const struct sockaddr_storage *addr);

/*
 * Connect to another node's peer port (addr "host:port") from this node's
 * own address; the connection is returned at once and messages sent on it
 * wait until its channel opens.  NULL with err set when it cannot start.
 */
struct peer *peer_connect(struct server *n, const char *addr, char *err, size_t err_len);

/*
 * Send one control message: sealed at once on an open channel, queued
 * until the channel opens otherwise.  RK_ETOOBIG (over frame-max, or the
 * output queue would pass peer-queue-max: lanes.h says why it closes) or
 * RK_ENOMEM close the connection; a bulk type is RK_EINVAL (peer_send_bulk()).
 * A type the peer's message-set version does not know (msg_type_known();
 * before its IDENT, version 1) is not sent: RK_EMISMATCH, the connection
 * stays.
 */
int peer_send(struct peer *p, const struct msg *m);

/*
 * Send one bulk message (a type of the bulk lane: MSG_BULK, MSG_BULK_RESPONSE) within the
 * credit the peer granted (lanes.h, PROTOCOL.md section 7.11).  Returns 0
 * when it was sealed; PEER_BULK_WAIT when it must wait (output queue not
 * empty, credit short, or the peer's first grant not here yet): nothing
 * was queued, call peer_bulk_wait() and send it again when told.  Errors,
 * after which the connection stays: RK_EMISMATCH (not identified yet, or
 * a peer whose message set has no bulk lane), RK_ETOOBIG (over half the
 * peer's window or over frame-max: never sendable), RK_EINVAL (not a bulk
 * type), RK_ENOMEM (encoding).  RK_ECLOSED when the connection was
 * closed, or closed as the message was written (a write error); a sealing
 * failure closes it too.  After RK_ECLOSED or a sealing failure p may be
 * freed already: do not use it again.
 */
int peer_send_bulk(struct peer *p, const struct msg *m);

/*
 * Call fn(p, arg, 0) once, from the event loop, when the message that got
 * PEER_BULK_WAIT may be sent; or fn(p, arg, RK_ECLOSED) when the
 * connection closes first.  One producer per connection: a later call
 * replaces the earlier one.  The answers rpc.c queues for the bulk lane
 * (p->bulk_answers) are a producer of their own, beside it: when the lane
 * has room they go first (rpc_bulk_send_waiting()), then fn.
 */
void peer_bulk_wait(struct peer *p, peer_bulk_fn fn, void *arg);

/* An identified connection to member id, or an outbound one to addr; NULL when none. */
struct peer *peer_find(struct server *n, const char *id, const char *addr);

/* Close now; why is logged.  Requests outstanding on it fail at once (rpc.h). */
void peer_close(struct peer *p, const char *why);

/*
 * Keep p's memory valid across a call that may close it (a send): a
 * closed connection is freed at the last peer_release(), not before.
 */
void peer_hold(struct peer *p);
void peer_release(struct peer *p);

#endif
