/*
 * rpc.h - peer requests, the node's half: asking a member a question over
 * its sealed connection and routing the answer back to whoever asked, and
 * answering the questions other members ask (proto/PROTOCOL.md 7.14).
 *
 * Asking.  rpc_ask() sends MSG_REQUEST only on a connection identified as
 * a current member: the member is in the table with a status that is not
 * left or removed, and the connection's IDENT names that member at the
 * address its entry gives.  It sends only to a member whose message-set
 * version (IDENT `proto`) knows MSG_REQUEST; to an older one the request
 * fails at once (RK_EMISMATCH), so an older node never receives a type it
 * would take for a broken peer.  The connection's table (request.h) gives
 * the id and keeps the deadline: request-timeout after sending.  Then
 * exactly one of these ends it, with the callback run exactly once:
 *   - the MSG_RESPONSE with its id: result 0, the response's result code
 *     and body;
 *   - request-timeout passes: RK_ETIMEOUT (a response arriving later is
 *     ignored and counted as late);
 *   - the connection closes: RK_ECLOSED, for every request outstanding on
 *     it, all at once.
 * Every request is counted when it ends, by operation and outcome
 * (metrics.h: INFO's Requests section, ringkv_peer_requests_total).
 *
 * Answering.  Every MSG_REQUEST that decodes gets one MSG_RESPONSE with
 * its id, on the connection it came on: MSG_RESULT_OK and the operation's
 * answer, MSG_RESULT_UNKNOWN_OP for an operation this node does not know
 * (a newer node's), MSG_RESULT_BAD_BODY or MSG_RESULT_FAILED (body nil).
 * Operations are a table of {op, serve}; serving is synchronous today.
 *
 * The bulk lane.  The answer to a HANDOFF_PULL (a batch of records, up to
 * hundreds of KiB) goes to a peer of message set 4 as MSG_BULK_RESPONSE,
 * in the connection's bulk lane (lanes.h, PROTOCOL.md 7.18), so that
 * heartbeats and gossip never wait behind batches in the output queue:
 *   - the batch is bounded to fit the lane: the body at most half the
 *     peer's window less RPC_ENVELOPE_MAX, so every batch is sendable and
 *     the lane cannot deadlock; a batch still over it (a single record
 *     larger than that) goes as a RESPONSE in the control lane, as does
 *     every answer to a peer of message set 3 or older;
 *   - it is sealed only when the output queue is empty and the credit
 *     allows; until then it waits on the connection's list of bulk answers
 *     (p->bulk_answers, oldest first, at most RPC_BULK_ANSWERS_MAX: a pull
 *     past that is answered at once with MSG_RESULT_FAILED, which the
 *     puller retries), never in the output queue;
 *   - an answer that waited past request-timeout is dropped (the asker
 *     has given up on it), and the connection closing frees every one
 *     waiting (the asker's requests fail with it: RK_ECLOSED, retried);
 *   - small answers (HANDOFF_DIGEST, HANDOFF_DONE, failures) stay in the
 *     control lane.
 * Counted in INFO's Lanes section (ringkv_peer_bulk_answers_*).
 */
#ifndef RINGKV_RPC_H
#define RINGKV_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "request.h"

struct server;
struct peer;

/*
 * How a request ended.  result: 0 when its response arrived (reply->status
 * is the response's result code, enum msg_result; reply->body its body,
 * borrowed for the call), RK_ETIMEOUT, or RK_ECLOSED (reply NULL).
 * rtt_us: from sending to the outcome.
 */
typedef void (*rpc_done_fn)(void *ctx, int result, const struct request_reply *reply,
                            uint64_t rtt_us);

/*
 * Ask member id to run op with body (one msgpack value made by the msg_*
 * encoders, borrowed and not walked again; len 0 sends nil).  0: the
 * request is outstanding and done will be called exactly once with ctx -
 * perhaps before rpc_ask() returns, when the connection fails while
 * sending.  Otherwise nothing was sent, done is not called, and the error
 * (counted) says why:
 *   RK_ENOTFOUND  id is not a current member;
 *   RK_EIO        no identified connection to it is open;
 *   RK_EMISMATCH  its message-set version does not know requests;
 *   RK_ETOOBIG    RPC_OUTSTANDING_MAX requests are outstanding on it;
 *   RK_EINVAL     body is too large for one frame;
 *   RK_ECLOSED    this node is shutting down;
 *   RK_ENOMEM.
 */
int rpc_ask(struct server *n, const char *id, uint32_t op, const uint8_t *body, size_t len,
            rpc_done_fn done, void *ctx);

/* A phrase for an error of rpc_ask() or a result of its callback, for replies and logs. */
const char *rpc_strerror(int err);

/* A phrase for a response's result code other than MSG_RESULT_OK. */
const char *rpc_result_text(uint32_t result);

/*
 * This node's own view, as it answers MSG_OP_STATUS (PROTOCOL.md 7.14):
 * what RINGKV STATUS DEEP shows in its own row without a request.
 */
void rpc_status_view(struct server *n, struct msg_status_view *v);

/*
 * Whether member id takes part in requests: this node, or a current member
 * the failure detector does not see down.
 */
bool rpc_member_up(struct server *n, const char *id);

struct coord_hooks;
/* The coordinator's hooks (coord.h) over this node's peer requests, ring and detector. */
void rpc_coord_hooks(struct server *n, struct coord_hooks *h);

/*
 * Bytes a REQUEST's or RESPONSE's body may hold and still fit one frame
 * with its envelope: the coordinator's body_max (coord.h).
 */
size_t rpc_body_max(const struct server *n);

/*
 * Send the coordinator's requests that wait for room on a full connection
 * (rpc.c), failing those that waited past request-timeout; with fail_all,
 * fail every one (shutdown).  Before the loop sleeps, and at the end.
 */
void rpc_coord_send_waiting(struct server *n, bool fail_all);

/* Coordinator requests that may wait for room at most, all members together. */
#define RPC_COORD_WAITING_MAX 65536

/* Requests outstanding on one connection at most: see rpc.c. */
#define RPC_OUTSTANDING_MAX 1024

/*
 * Answers waiting for one connection's bulk lane at most: above what one
 * puller asks at once (one pull outstanding per arc, handoff-concurrency
 * arcs, default 4), and each at most half the peer's window.
 */
#define RPC_BULK_ANSWERS_MAX 16

/* Bytes a REQUEST or RESPONSE adds around its body, sealing included: a generous bound. */
#define RPC_ENVELOPE_MAX 1024

/*
 * The most body bytes an answer in p's bulk lane may carry (half the
 * window the peer announced, less RPC_ENVELOPE_MAX), or 0 when p takes no
 * bulk answers: a peer of message set 3 or older, or one that has
 * granted no window yet.  Pure: the lane's rule, for tests too.
 */
size_t rpc_bulk_body_max(uint32_t proto, uint64_t peer_window);

/*
 * The monotonic clock, in µs, as the event loop's current iteration began
 * (read once per iteration, before any callback of it): the time peer
 * messages are stamped with (answer times, the lanes' control gaps), where
 * a clock read per message was a measurable share of a replicated request.
 * Behind the real clock by at most the iteration's own run time, which is
 * unbounded: never a deadline's start (rpc_ask() reads the clock).
 * rpc_loop_clock_start() starts it (server_run()); until then it is the
 * clock itself.
 */
uint64_t rpc_loop_us(const struct server *n);
void rpc_loop_clock_start(struct server *n);

/* Set up n's spare lists of calls and answers (server_create()); rpc_spares_free() at the end. */
void rpc_spares_init(struct server *n);
void rpc_spares_free(struct server *n);

/* --- for peer.c ------------------------------------------------------------------ */

/* Set up p's request table; its timer watcher (p->request_w) is peer.c's, already ev_init()ed. */
void rpc_peer_init(struct peer *p);

/* p closed: fail every request outstanding on it with RK_ECLOSED, stop its timer. */
void rpc_peer_closed(struct peer *p);

/* Release p's table (nothing is outstanding after rpc_peer_closed()). */
void rpc_peer_deinit(struct peer *p);

/* p's request timer fired: time out what is due, re-arm for the rest. */
void rpc_peer_expire(struct peer *p);

/* MSG_REQUEST from an identified peer: serve it and answer. */
void rpc_on_request(struct peer *p, const struct msg *m);

/* MSG_RESPONSE (or MSG_BULK_RESPONSE) from an identified peer: route it to its request. */
void rpc_on_response(struct peer *p, const struct msg *m);

/* p's bulk lane has room: send the answers waiting for it, oldest first, while it lasts. */
void rpc_bulk_send_waiting(struct peer *p);

#endif
