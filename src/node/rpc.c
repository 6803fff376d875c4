/*
 * rpc.c - peer requests: asking, routing answers, serving (rpc.h).
 *
 * Each request carries a small record of its own (struct rpc_call: the
 * operation, the caller's callback) as its table entry's context; the
 * table calls rpc_call_end() exactly once, which counts the outcome, runs
 * the caller's callback and frees the record.
 *
 * RPC_OUTSTANDING_MAX (1024) bounds one connection's table: far above
 * what a verb asks of one member at once (one request per member per
 * command), low enough that a member that never answers cannot make a
 * node hold more than a few tens of kilobytes for it between timeouts.
 */
#include "rpc.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord.h"
#include "error.h"
#include "gossip.h"
#include "log.h"
#include "membership.h"
#include "msg_kv.h"
#include "peer.h"
#include "handoff.h"
#include "reaper.h"
#include "server.h"

/*
 * An answer owed to a peer for an operation that completes later (a store
 * commit, other replicas): on its connection's list until given, and cut
 * loose (peer NULL) when the connection closes first, so that the answer
 * is dropped, never sent on a connection it did not come from.
 */
struct rpc_answer {
    struct server *node;
    struct peer *peer; /* NULL once its connection closed */
    uint64_t id;
    uint32_t op;
    struct rpc_answer *prev, *next;
};

struct rpc_call {
    struct server *node;
    struct peer *peer; /* for the log line; valid while the call is outstanding */
    uint32_t op;
    rpc_done_fn done;
    void *ctx;
};

struct rpc_coord_call {
    struct server *node;
    coord_answer_fn done;
    void *dctx;
    /* while waiting for room */
    struct rpc_coord_call *next;
    char id[RING_NAME_MAX + 1];
    uint32_t op;
    uint8_t *body;
    size_t len;
    uint64_t queued_us;
    int refused; /* not 0: refused before sending (rpc_ask()'s RK_EINVAL), ended with it */
};

/*
 * Calls, coordinator calls and answers kept for reuse: one of each is made
 * and ended per replica message, in bursts of a pipeline's size.
 */
#define RPC_SPARE_MAX 1024

static void rpc_on_loop_check(struct ev_loop *loop, ev_check *w, int revents)
{
    struct server *n = w->data;

    (void)loop;
    (void)revents;
    n->loop_us = clock_mono_us();
}

void rpc_loop_clock_start(struct server *n)
{
    n->loop_us = clock_mono_us();
    ev_check_init(&n->loop_clock_w, rpc_on_loop_check);
    n->loop_clock_w.data = n;
    ev_set_priority(&n->loop_clock_w, EV_MAXPRI); /* first of the iteration's callbacks */
    ev_check_start(n->loop, &n->loop_clock_w);
}

uint64_t rpc_loop_us(const struct server *n)
{
    /* not run by server_run() (a test driving the loop itself): the clock as it is */
    return ev_is_active(&n->loop_clock_w) ? n->loop_us : clock_mono_us();
}

void rpc_spares_init(struct server *n)
{
    spare_init(&n->call_spare, sizeof(struct rpc_call), RPC_SPARE_MAX);
    spare_init(&n->coord_call_spare, sizeof(struct rpc_coord_call), RPC_SPARE_MAX);
    spare_init(&n->answer_spare, sizeof(struct rpc_answer), RPC_SPARE_MAX);
}

void rpc_spares_free(struct server *n)
{
    spare_free(&n->call_spare);
    spare_free(&n->coord_call_spare);
    spare_free(&n->answer_spare);
}

const char *rpc_strerror(int err)
{
    switch (err) {
    case RK_ETIMEOUT:
        return "timed out (no answer within request-timeout)";
    case RK_ECLOSED:
        return "the connection closed before the answer";
    case RK_ENOTFOUND:
        return "not a current member";
    case RK_EIO:
        return "no open connection to the member";
    case RK_EMISMATCH:
        return "the member's version does not support peer requests";
    case RK_ETOOBIG:
        return "too many requests outstanding to the member";
    case RK_EINVAL:
        return "the request is larger than a frame (this node's or the member's frame-max)";
    default:
        return rk_strerror(err);
    }
}

const char *rpc_result_text(uint32_t result)
{
    switch (result) {
    case MSG_RESULT_OK:
        return "ok";
    case MSG_RESULT_UNKNOWN_OP:
        return "the member does not know the operation";
    case MSG_RESULT_BAD_BODY:
        return "the member could not read the request";
    case MSG_RESULT_FAILED:
        return "the operation failed on the member";
    default:
        return "the member answered with an unknown result";
    }
}

/* --- the timer ------------------------------------------------------------------ */

/*
 * The timer: it fires at or before the earliest deadline of p's table.  A
 * request added with an earlier deadline than the armed one brings it
 * forward; an answer never moves it (a timer that finds nothing due re-arms
 * itself for what is left), so the table is scanned once per firing, not
 * once per answer.
 */
static void rpc_timer_at(struct peer *p, uint64_t deadline)
{
    struct ev_loop *loop = p->node->loop;
    uint64_t now = clock_mono_us();

    ev_timer_stop(loop, &p->request_w);
    p->request_w_at = deadline;
    ev_timer_set(&p->request_w, deadline > now ? (double)(deadline - now) / 1e6 : 0., 0.);
    ev_timer_start(loop, &p->request_w);
}

/* Arm p's timer for the earliest deadline of its table, or stop it when none is left. */
static void rpc_arm(struct peer *p)
{
    uint64_t deadline;

    if (p->dead || !request_next_deadline(&p->requests, &deadline)) {
        ev_timer_stop(p->node->loop, &p->request_w);
        return;
    }
    rpc_timer_at(p, deadline);
}

/*
 * A request with this deadline was added: bring the timer forward when it is earlier.  A timer
 * that has fired and whose callback has not run yet (another watcher of the same loop turn
 * asked first) is not active but pending: left alone, its callback expires what is due and
 * re-arms for what is left, this request included; stopped and re-armed here for this
 * request's deadline, it would drop the expiry of the requests already due until then.
 */
static void rpc_arm_for(struct peer *p, uint64_t deadline)
{
    if (p->dead || ev_is_pending(&p->request_w)) {
        return;
    }
    if (!ev_is_active(&p->request_w) || deadline < p->request_w_at) {
        rpc_timer_at(p, deadline);
    }
}

void rpc_peer_init(struct peer *p)
{
    request_table_init(&p->requests, RPC_OUTSTANDING_MAX);
}

static void rpc_bulk_answers_free(struct peer *p);

void rpc_peer_closed(struct peer *p)
{
    ev_timer_stop(p->node->loop, &p->request_w);
    request_fail_all(&p->requests, RK_ECLOSED, clock_mono_us());
    /* answers still being worked on go nowhere now */
    for (struct rpc_answer *a = p->answers; a != NULL; a = a->next) {
        a->peer = NULL;
    }
    p->answers = NULL;
    rpc_bulk_answers_free(p);
}

void rpc_peer_deinit(struct peer *p)
{
    request_table_deinit(&p->requests);
}

void rpc_peer_expire(struct peer *p)
{
    request_expire(&p->requests, clock_mono_us());
    rpc_arm(p);
}

/* --- asking ---------------------------------------------------------------------- */

static enum metrics_request_outcome rpc_err_outcome(int err)
{
    switch (err) {
    case RK_ETIMEOUT:
        return METRICS_REQUEST_TIMEOUT;
    case RK_EMISMATCH:
        return METRICS_REQUEST_UNSUPPORTED;
    case RK_ENOTFOUND:
    case RK_EIO:
        return METRICS_REQUEST_UNREACHABLE;
    case RK_ETOOBIG:
    case RK_ENOMEM:
        return METRICS_REQUEST_OVERLOADED;
    case RK_EINVAL:
        return METRICS_REQUEST_REFUSED; /* over a frame: never sent */
    default:
        return METRICS_REQUEST_CLOSED;
    }
}

static enum metrics_request_outcome rpc_outcome(int result, const struct request_reply *reply)
{
    if (result == 0) {
        return reply->status == MSG_RESULT_OK ? METRICS_REQUEST_OK : METRICS_REQUEST_REFUSED;
    }
    return rpc_err_outcome(result);
}

/* The table ended a request: count it, tell the caller, free the record. */
static void rpc_call_end(void *ctx, int result, const struct request_reply *reply,
                         uint64_t elapsed_us)
{
    struct rpc_call *call = ctx;
    enum metrics_request_outcome outcome = rpc_outcome(result, reply);

    metrics_count_request(&call->node->metrics, call->op, outcome);
    if (outcome != METRICS_REQUEST_OK) {
        LOG(outcome == METRICS_REQUEST_TIMEOUT ? LOG_INFO : LOG_DEBUG, "peer_request_failed",
            "peer=%s remote_id=%s op=%s outcome=%s elapsed_us=%llu", call->peer->addr,
            call->peer->remote.id, msg_op_name(call->op), metrics_request_outcome_names[outcome],
            (unsigned long long)elapsed_us);
    }
    call->done(call->ctx, result, reply, elapsed_us);
    spare_put(&call->node->call_spare, call);
}

/*
 * Whether a REQUEST or RESPONSE with a body of len bytes fits in one frame,
 * with room for its envelope and the sealing: a message over the frame
 * closes the connection (peer.h), failing everything outstanding on it.
 */
static bool rpc_fits(const struct server *n, size_t len)
{
    return len + RPC_ENVELOPE_MAX <= n->cfg.frame_max;
}

/*
 * Whether a REQUEST or RESPONSE (op) with a body of len bytes fits in a
 * frame p's remote reads: its frame-max, which its IDENT announces (a node
 * that does not: this node's bound alone).  A frame over it would make the
 * remote close the connection, failing everything on it, and the same
 * message sent again (a hint, a retry) would close the next one: it is
 * refused here instead, alone, and the first on each connection is logged
 * at warn with both sizes (PROTOCOL.md 5).
 */
static bool rpc_fits_peer(struct peer *p, uint32_t op, size_t len, const char *what)
{
    uint32_t max = p->remote.frame_max;

    if (max == 0 || len + RPC_ENVELOPE_MAX <= max) {
        return true;
    }
    if (!p->over_frame_logged) {
        p->over_frame_logged = true;
        LOG(LOG_WARN, "peer_message_over_frame",
            "peer=%s remote_id=%s op=%s kind=%s message=%zu peer_frame_max=%u frame_max=%llu "
            "hint=\"give every node a frame-max of at least the largest value-max + key-max + "
            "64KB\"",
            p->addr, p->remote.id, msg_op_name(op), what, len, max,
            (unsigned long long)p->node->cfg.frame_max);
    }
    return false;
}

/* A member still in the cluster's story: not left, not removed. */
static bool rpc_member_current(uint32_t status)
{
    return status != MSG_MEMBER_LEFT && status != MSG_MEMBER_REMOVED;
}

/*
 * The connection that may carry requests to member id, whose entry is e
 * (NULL: not a member): identified as it, at its address.
 */
static int rpc_link_member(struct server *n, const struct member *e, const char *id,
                           struct peer **out)
{
    *out = NULL;
    if (e == NULL || !rpc_member_current(e->e.status)) {
        return RK_ENOTFOUND;
    }
    for (struct peer *p = n->peers; p != NULL; p = p->next) {
        if (!p->dead && p->identified && strcmp(p->remote.id, id) == 0 &&
            strcmp(p->remote.peer_addr, membership_entry_peer_addr(&e->e)) == 0) {
            *out = p;
            return msg_type_known(MSG_REQUEST, p->remote.proto) ? 0 : RK_EMISMATCH;
        }
    }
    return RK_EIO;
}

/* rpc_link_member() of id, looked up. */
static int rpc_link(struct server *n, const char *id, struct peer **out)
{
    return rpc_link_member(n, membership_find(gossip_members(n->gossip), id), id, out);
}

/* A request that was never sent: counted by why. */
static int rpc_refuse(struct server *n, uint32_t op, const char *id, int err)
{
    metrics_count_request(&n->metrics, op, rpc_err_outcome(err));
    LOG(LOG_DEBUG, "peer_request_refused", "remote_id=%s op=%s error=\"%s\"", id, msg_op_name(op),
        rpc_strerror(err));
    return err;
}

int rpc_ask(struct server *n, const char *id, uint32_t op, const uint8_t *body, size_t len,
            rpc_done_fn done, void *ctx)
{
    struct msg m = {.type = MSG_REQUEST};
    struct rpc_call *call;
    struct peer *p;
    /*
     * The deadline counts from now, not from the iteration's start
     * (rpc_loop_us()): a request sent after slow work in the same iteration
     * (a pipeline of DBSIZEs, a large batch) would otherwise get less than
     * request-timeout, or a deadline already past.
     */
    uint64_t now = clock_mono_us();
    int rc = n->stopping ? RK_ECLOSED : rpc_link(n, id, &p);

    if (rc == 0 && (!rpc_fits(n, len) || !rpc_fits_peer(p, op, len, "request"))) {
        rc = RK_EINVAL; /* sent, it would close the connection and fail every request on it */
    }
    if (rc != 0) {
        return rpc_refuse(n, op, id, rc);
    }
    call = spare_get(&n->call_spare);
    if (call == NULL) {
        return rpc_refuse(n, op, id, RK_ENOMEM);
    }
    *call = (struct rpc_call){n, p, op, done, ctx};
    rc = request_add(&p->requests, op, now, n->cfg.request_timeout_ms * 1000, rpc_call_end, call,
                     &m.u.request.id);
    if (rc != 0) {
        spare_put(&n->call_spare, call);
        return rpc_refuse(n, op, id, rc);
    }
    m.u.request.code = op;
    m.u.request.body = (uint8_t *)body;
    m.u.request.body_len = len;
    m.u.request.body_made = true; /* rpc_ask()'s callers encode their bodies */
    /* held: a send that fails may close the connection, which must outlive this function */
    peer_hold(p);
    rc = peer_send(p, &m);
    if (rc != 0) {
        /* if the close failed it already, this finds nothing */
        request_fail(&p->requests, m.u.request.id, rc == RK_EMISMATCH ? rc : RK_ECLOSED,
                     clock_mono_us());
    } else {
        rpc_arm_for(p, now + n->cfg.request_timeout_ms * 1000); /* request_add's deadline */
    }
    peer_release(p);
    return 0;
}

void rpc_on_response(struct peer *p, const struct msg *m)
{
    const struct msg_request *r = &m->u.request;
    struct request_reply reply = {r->code, r->body, r->body_len};
    struct metrics_requests *counts = &p->node->metrics.requests;

    switch (request_complete(&p->requests, r->id, rpc_loop_us(p->node), &reply)) {
    case REQUEST_DELIVERED:
        break; /* the timer stays: when it fires early it re-arms for what is left */
    case REQUEST_LATE:
        counts->late++;
        LOG(LOG_DEBUG, "peer_response_late", "peer=%s remote_id=%s id=%llu", p->addr, p->remote.id,
            (unsigned long long)r->id);
        break;
    case REQUEST_UNKNOWN:
        counts->unknown++;
        LOG(LOG_DEBUG, "peer_response_unknown", "peer=%s remote_id=%s id=%llu", p->addr,
            p->remote.id, (unsigned long long)r->id);
        break;
    }
}

/* --- serving --------------------------------------------------------------------- */

/* MSG_OP_STATUS: this node's own view (the request's body is not read). */
void rpc_status_view(struct server *n, struct msg_status_view *v)
{
    const struct membership *m = gossip_members(n->gossip);
    struct store_stats st;
    size_t agree = 0, up = 0;

    memset(v, 0, sizeof(*v));
    store_get_stats(n->store, &st);
    snprintf(v->id, sizeof(v->id), "%s", n->cfg.id);
    v->status = membership_self(m)->e.status;
    v->epoch = membership_epoch(m);
    v->digest = membership_digest(m);
    v->converged = gossip_converged(n->gossip, &agree, &up);
    v->up_count = (uint32_t)up;
    v->members = (uint32_t)membership_count(m);
    v->uptime_s = server_uptime_s(n);
    v->keys = st.keys;
}

static int rpc_serve_status(struct server *n, const uint8_t *body, size_t len, struct buf *out)
{
    struct msg_status_view v;

    (void)body;
    (void)len;
    rpc_status_view(n, &v);
    return msg_status_view_encode(&v, out);
}

static int rpc_serve_hints_held(struct server *n, const uint8_t *body, size_t len, struct buf *out)
{
    return reaper_serve_hints(n->reaper, body, len, out);
}

struct rpc_op {
    uint32_t op;
    int (*serve)(struct server *n, const uint8_t *body, size_t len, struct buf *out);
};

static const struct rpc_op rpc_ops[] = {
    {MSG_OP_STATUS, rpc_serve_status},
    {MSG_OP_HINTS_HELD, rpc_serve_hints_held},
};

static const struct rpc_op *rpc_op_find(uint32_t op)
{
    for (size_t i = 0; i < sizeof(rpc_ops) / sizeof(rpc_ops[0]); i++) {
        if (rpc_ops[i].op == op) {
            return &rpc_ops[i];
        }
    }
    return NULL;
}

/* --- answering later ------------------------------------------------------------ */

static void rpc_answer_unlink(struct rpc_answer *a)
{
    if (a->peer == NULL) {
        return;
    }
    if (a->prev != NULL) {
        a->prev->next = a->next;
    } else {
        a->peer->answers = a->next;
    }
    if (a->next != NULL) {
        a->next->prev = a->prev;
    }
}

/* Send one RESPONSE: result and body (NULL: nil). */
static void rpc_respond(struct peer *p, uint64_t id, uint32_t result, const struct buf *body)
{
    struct msg answer = {.type = MSG_RESPONSE};

    answer.u.request.id = id;
    answer.u.request.code = result;
    answer.u.request.body = body != NULL ? (uint8_t *)buf_data(body) : NULL;
    answer.u.request.body_len = body != NULL ? body->len : 0;
    answer.u.request.body_made = true; /* an answer's encoder made it (rpc_ops, coord_serve()) */
    peer_send(p, &answer);
}

/* --- answers in the bulk lane (rpc.h) -------------------------------------------- */

/* A HANDOFF_PULL's answer waiting for p's bulk lane (p->bulk_answers). */
struct rpc_bulk_answer {
    struct rpc_bulk_answer *next;
    uint64_t id;
    uint64_t queued_us; /* rpc_loop_us() when it was queued */
    struct buf body;
};

size_t rpc_bulk_body_max(uint32_t proto, uint64_t peer_window)
{
    if (proto < MSG_PROTO_V4 || peer_window / 2 <= RPC_ENVELOPE_MAX) {
        return 0;
    }
    return (size_t)(peer_window / 2 - RPC_ENVELOPE_MAX);
}

/*
 * Seal one answer in p's bulk lane: 0, PEER_BULK_WAIT, RK_ETOOBIG (over
 * half the window or the frame: never sendable there), RK_ECLOSED (p
 * closed, perhaps freed the queue: stop).
 */
static int rpc_bulk_seal(struct peer *p, uint64_t id, const struct buf *body)
{
    struct msg answer = {.type = MSG_BULK_RESPONSE};
    int rc;

    answer.u.request.id = id;
    answer.u.request.code = MSG_RESULT_OK;
    answer.u.request.body = (uint8_t *)buf_data(body);
    answer.u.request.body_len = body->len;
    answer.u.request.body_made = true;
    rc = peer_send_bulk(p, &answer);
    if (rc == 0) {
        p->node->metrics.peer_bulk_answers_out++;
    } else if (p->dead) {
        rc = RK_ECLOSED;
    }
    return rc;
}

/* An answer the bulk lane cannot carry: a RESPONSE in the control lane, counted. */
static void rpc_bulk_to_control(struct peer *p, uint64_t id, const struct buf *body)
{
    p->node->metrics.peer_bulk_answers_control++;
    rpc_respond(p, id, MSG_RESULT_OK, body);
}

/*
 * Answer request id of p with body in its bulk lane: sealed now when the
 * lane has room and nothing waits before it, else put at the end of the
 * waiting list (body taken, left empty).  An answer the lane cannot carry
 * goes in the control lane.
 */
static void rpc_bulk_answer(struct peer *p, uint64_t id, struct buf *body)
{
    struct rpc_bulk_answer *a;
    int rc = PEER_BULK_WAIT;

    if (p->bulk_answers == NULL) {
        rc = rpc_bulk_seal(p, id, body);
    }
    if (rc == 0 || rc == RK_ECLOSED) {
        return;
    }
    if (rc != PEER_BULK_WAIT || (a = malloc(sizeof(*a))) == NULL) {
        rpc_bulk_to_control(p, id, body);
        return;
    }
    *a = (struct rpc_bulk_answer){.id = id, .queued_us = rpc_loop_us(p->node), .body = *body};
    buf_init(body, 0);
    if (p->bulk_answers_tail != NULL) {
        p->bulk_answers_tail->next = a;
    } else {
        p->bulk_answers = a;
    }
    p->bulk_answers_tail = a;
    p->n_bulk_answers++;
    p->node->metrics.peer_bulk_answers_waited++;
    /* woken by peer.c: the flush after this handler, a CREDIT, a drained socket (peer_bulk_kick) */
}

/* Take the first waiting answer off p's list. */
static struct rpc_bulk_answer *rpc_bulk_pop(struct peer *p)
{
    struct rpc_bulk_answer *a = p->bulk_answers;

    p->bulk_answers = a->next;
    if (p->bulk_answers == NULL) {
        p->bulk_answers_tail = NULL;
    }
    p->n_bulk_answers--;
    return a;
}

static void rpc_bulk_free(struct rpc_bulk_answer *a)
{
    buf_free(&a->body);
    free(a);
}

void rpc_bulk_send_waiting(struct peer *p)
{
    uint64_t now = rpc_loop_us(p->node), timeout = p->node->cfg.request_timeout_ms * 1000;

    while (!p->dead && p->bulk_answers != NULL) {
        struct rpc_bulk_answer *a = p->bulk_answers;
        int rc;
        if (now - a->queued_us >= timeout) {
            p->node->metrics.peer_bulk_answers_dropped++; /* its asker has given up on it */
            rpc_bulk_free(rpc_bulk_pop(p));
            continue;
        }
        rc = rpc_bulk_seal(p, a->id, &a->body);
        if (rc == PEER_BULK_WAIT || rc == RK_ECLOSED) {
            return; /* waits on; or the close freed the list, a with it */
        }
        a = rpc_bulk_pop(p);
        if (rc != 0) {
            rpc_bulk_to_control(p, a->id, &a->body);
        }
        rpc_bulk_free(a);
    }
}

/* p closed: the answers waiting for its bulk lane go nowhere. */
static void rpc_bulk_answers_free(struct peer *p)
{
    while (p->bulk_answers != NULL) {
        p->node->metrics.peer_bulk_answers_dropped++;
        rpc_bulk_free(rpc_bulk_pop(p));
    }
}

/* The coordinator's answer to a data operation (coord_serve()). */
static void rpc_served(void *ctx, const struct msg_kv_answer *ans)
{
    struct rpc_answer *a = ctx;
    struct buf *body = &a->node->answer_buf; /* rpc_respond() copies it into the peer's frame */

    if (a->peer != NULL) {
        int rc;
        buf_clear(body);
        rc = msg_kv_answer_encode(ans, body);
        if (rc == 0 && (!rpc_fits(a->node, body->len) ||
                        !rpc_fits_peer(a->peer, a->op, body->len, "answer"))) {
            rc = RK_ETOOBIG; /* a record over a frame: refused, the connection kept */
        }
        rpc_respond(a->peer, a->id, rc == 0 ? MSG_RESULT_OK : MSG_RESULT_FAILED,
                    rc == 0 ? body : NULL);
        if (body->cap > 1024 * 1024) {
            buf_free(body); /* a large record's answer does not stay allocated */
            buf_init(body, 0);
        }
    }
    rpc_answer_unlink(a);
    spare_put(&a->node->answer_spare, a);
}

/*
 * Bytes a body to p may carry: what the frame-max its IDENT announced
 * leaves past the envelope; 0 when it announced none.
 */
static size_t rpc_peer_body_max(const struct peer *p)
{
    uint32_t max = p->remote.frame_max;

    return max > RPC_ENVELOPE_MAX ? max - RPC_ENVELOPE_MAX : 0;
}

/* A data operation: answered when the coordinator is done with it. */
static bool rpc_serve_kv(struct peer *p, const struct msg_request *q, uint32_t *result)
{
    struct rpc_answer *a;
    int rc;

    if (q->code != MSG_OP_REPLICA_WRITE && q->code != MSG_OP_REPLICA_READ &&
        q->code != MSG_OP_FORWARD && q->code != MSG_OP_REPLICA_REAP) {
        return false;
    }
    a = spare_get(&p->node->answer_spare);
    *result = MSG_RESULT_FAILED;
    if (a == NULL) {
        return true;
    }
    *a = (struct rpc_answer){.node = p->node, .peer = p, .id = q->id, .op = q->code};
    a->next = p->answers;
    if (p->answers != NULL) {
        p->answers->prev = a;
    }
    p->answers = a;
    rc = q->code == MSG_OP_REPLICA_REAP
             ? reaper_serve_reap(p->node->reaper, q->body, q->body_len, rpc_served, a)
             : coord_serve(p->node->coord, q->code, q->body, q->body_len, rpc_peer_body_max(p),
                           rpc_served, a);
    if (rc != 0) {
        rpc_answer_unlink(a);
        spare_put(&p->node->answer_spare, a);
        *result = rc == RK_ESYNTAX ? MSG_RESULT_BAD_BODY : MSG_RESULT_FAILED;
        return true;
    }
    *result = MSG_RESULT_OK; /* answered by rpc_served() */
    return true;
}

void rpc_on_request(struct peer *p, const struct msg *m)
{
    const struct msg_request *q = &m->u.request;
    const struct rpc_op *op = rpc_op_find(q->code);
    struct buf body;
    uint32_t result = MSG_RESULT_UNKNOWN_OP;
    int rc = 0;
    bool later = false;

    buf_init(&body, 0);
    if (op != NULL) {
        rc = op->serve(p->node, q->body, q->body_len, &body);
        result = rc == 0            ? MSG_RESULT_OK
                 : rc == RK_ESYNTAX ? MSG_RESULT_BAD_BODY
                                    : MSG_RESULT_FAILED;
    } else if (q->code == MSG_OP_HANDOFF_PULL || q->code == MSG_OP_HANDOFF_DIGEST ||
               q->code == MSG_OP_HANDOFF_DONE) {
        size_t max = rpc_peer_body_max(p), mine = rpc_body_max(p->node);
        size_t bulk = q->code == MSG_OP_HANDOFF_PULL
                          ? rpc_bulk_body_max(p->remote.proto, p->lanes.peer_window)
                          : 0;
        max = max == 0 || (mine != 0 && mine < max) ? mine : max;
        if (bulk > 0 && (max == 0 || bulk < max)) {
            max = bulk; /* the batch fits the bulk lane (rpc.h) */
        }
        if (bulk > 0 && p->n_bulk_answers >= RPC_BULK_ANSWERS_MAX) {
            p->node->metrics.peer_bulk_answers_busy++; /* the puller retries the pull */
            rc = RK_ETOOBIG;
        } else {
            rc = handoff_serve(p->node->handoff, p->remote.id, q->code, q->body, q->body_len, max,
                               &body);
        }
        result = rc == 0            ? MSG_RESULT_OK
                 : rc == RK_ESYNTAX ? MSG_RESULT_BAD_BODY
                                    : MSG_RESULT_FAILED;
        if (bulk > 0 && result == MSG_RESULT_OK) {
            rpc_bulk_answer(p, q->id, &body);
            later = true; /* answered in the bulk lane, or waits for it */
        }
    } else if (rpc_serve_kv(p, q, &result)) {
        later = result == MSG_RESULT_OK;
    }
    p->node->metrics.requests.served[result != MSG_RESULT_UNKNOWN_OP ? q->code : 0]++;
    if (result != MSG_RESULT_OK) {
        buf_clear(&body);
        LOG(LOG_DEBUG, "peer_request_not_served", "peer=%s remote_id=%s op=%llu result=%u", p->addr,
            p->remote.id, (unsigned long long)q->code, result);
    }
    if (!later) {
        rpc_respond(p, q->id, result, result == MSG_RESULT_OK ? &body : NULL);
    }
    buf_free(&body);
}

/* --- the coordinator's way to its peers ------------------------------------------ */

/*
 * One request of the coordinator.  When the member's connection already
 * has RPC_OUTSTANDING_MAX requests outstanding (a command over thousands of
 * keys starts them all at once), it waits on the node's list instead of
 * failing as if the replica had not answered, and is sent, oldest first,
 * before the loop next sleeps once answers have made room; one that waits
 * past request-timeout fails as timed out.
 */

static void rpc_coord_done(void *ctx, int result, const struct request_reply *reply,
                           uint64_t rtt_us)
{
    struct rpc_coord_call *c = ctx;

    (void)rtt_us;
    if (result == 0 && reply->status == MSG_RESULT_UNKNOWN_OP) {
        result = RK_EMISMATCH; /* a node that predates the operation: as one without requests */
    } else if (result == 0 && reply->status != MSG_RESULT_OK) {
        result = RK_EIO; /* refused: the member could not serve it */
    }
    c->done(c->dctx, result, result == 0 ? reply->body : NULL, result == 0 ? reply->body_len : 0);
    free(c->body);
    spare_put(&c->node->coord_call_spare, c);
}

/* Put c (its body copied) at the end of the waiting list; RK_ETOOBIG when the list is full. */
static int rpc_coord_wait(struct server *n, struct rpc_coord_call *c, const char *id, uint32_t op,
                          const uint8_t *body, size_t len)
{
    if (n->coord_waiting_n >= RPC_COORD_WAITING_MAX || (c->body = malloc(len ? len : 1)) == NULL) {
        return RK_ETOOBIG;
    }
    if (len > 0) {
        memcpy(c->body, body, len);
    }
    c->len = len;
    c->op = op;
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->queued_us = clock_mono_us();
    c->next = NULL;
    if (n->coord_waiting_tail != NULL) {
        n->coord_waiting_tail->next = c;
    } else {
        n->coord_waiting = c;
    }
    n->coord_waiting_tail = c;
    n->coord_waiting_n++;
    return 0;
}

/* Whether id is among the n members in full[]. */
static bool rpc_listed(const char *const *full, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(full[i], id) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * Members whose request table one pass over the waiting list found full: the
 * calls behind the first one for such a member wait without being tried (a
 * paused replica's full table would otherwise refuse, and count, every call
 * to it on every event-loop pass).
 */
#define RPC_FULL_PEERS_MAX 16

void rpc_coord_send_waiting(struct server *n, bool fail_all)
{
    struct rpc_coord_call *c = n->coord_waiting, *keep = NULL, *keep_tail = NULL;
    uint64_t now = clock_mono_us();
    const char *full[RPC_FULL_PEERS_MAX];
    size_t n_full = 0;

    n->coord_waiting = n->coord_waiting_tail = NULL;
    n->coord_waiting_n = 0;
    while (c != NULL) {
        struct rpc_coord_call *next = c->next;
        bool late = now - c->queued_us >= n->cfg.request_timeout_ms * 1000;
        bool skip = !fail_all && !c->refused && !late && rpc_listed(full, n_full, c->id);
        int rc = fail_all     ? RK_ECLOSED
                 : c->refused ? c->refused
                 : late       ? RK_ETIMEOUT
                 : skip       ? RK_ETOOBIG
                              : rpc_ask(n, c->id, c->op, c->body, c->len, rpc_coord_done, c);
        if (rc == RK_ETOOBIG && !skip && !late && !fail_all && n_full < RPC_FULL_PEERS_MAX) {
            full[n_full++] = c->id; /* kept below: the pointer lives as long as this pass */
        }
        if (rc == RK_ETOOBIG && !late && !fail_all) {
            c->next = NULL; /* still no room: keep its place */
            if (keep_tail != NULL) {
                keep_tail->next = c;
            } else {
                keep = c;
            }
            keep_tail = c;
            n->coord_waiting_n++;
        } else if (rc != 0) {
            c->done(c->dctx, rc, NULL, 0);
            free(c->body);
            spare_put(&n->coord_call_spare, c);
        }
        c = next;
    }
    if (keep != NULL) { /* ahead of anything the callbacks above queued */
        keep_tail->next = n->coord_waiting;
        if (n->coord_waiting == NULL) {
            n->coord_waiting_tail = keep_tail;
        }
        n->coord_waiting = keep;
    }
}

static int rpc_coord_ask(void *ctx, const char *id, uint32_t op, const uint8_t *body, size_t len,
                         coord_answer_fn done, void *dctx)
{
    struct server *n = ctx;
    struct rpc_coord_call *c = spare_get(&n->coord_call_spare);
    int rc;

    if (c == NULL) {
        return RK_ENOMEM;
    }
    *c = (struct rpc_coord_call){.node = n, .done = done, .dctx = dctx};
    rc = n->coord_waiting != NULL ? RK_ETOOBIG /* behind those already waiting */
                                  : rpc_ask(n, id, op, body, len, rpc_coord_done, c);
    if (rc == RK_EINVAL) {
        /*
         * Over the member's frame (or this node's): it will never be sent.  It ends from the
         * loop, as an answer would, with RK_EINVAL, so the coordinator counts the replica as
         * not answering for this request alone and keeps no hint of it (coord.h).
         */
        c->refused = RK_EINVAL;
        rc = rpc_coord_wait(n, c, id, op, NULL, 0);
    } else if (rc == RK_ETOOBIG) {
        rc = rpc_coord_wait(n, c, id, op, body, len);
    }
    if (rc != 0) {
        spare_put(&n->coord_call_spare, c);
    }
    return rc;
}

static const struct ring *rpc_coord_ring(void *ctx)
{
    struct server *n = ctx;

    return gossip_ring(n->gossip);
}

/* rpc_member_up() for member e (NULL: not a member). */
static bool rpc_member_is_up(struct server *n, const struct member *e)
{
    if (e == NULL) {
        return false;
    }
    return e == membership_self(gossip_members(n->gossip)) ||
           (rpc_member_current(e->e.status) && e->state != DETECTOR_DOWN);
}

bool rpc_member_up(struct server *n, const char *id)
{
    return rpc_member_is_up(n, membership_find(gossip_members(n->gossip), id));
}

/*
 * Up for the coordinator: up, and a connection that can carry a request is
 * open now.  Asked for every node of every request's preference list: the
 * member is looked up once for both.
 */
static bool rpc_coord_up(void *ctx, const char *id)
{
    struct server *n = ctx;
    const struct member *e;
    struct peer *p;

    if (strcmp(id, n->cfg.id) == 0) {
        return true;
    }
    e = membership_find(gossip_members(n->gossip), id);
    return rpc_member_is_up(n, e) && rpc_link_member(n, e, id, &p) == 0;
}

/* What member id's connection leaves a body (rpc_peer_body_max()); 0 with no connection. */
static size_t rpc_coord_body_max(void *ctx, const char *id)
{
    struct peer *p;

    return rpc_link(ctx, id, &p) == 0 ? rpc_peer_body_max(p) : 0;
}

static const struct ring *rpc_coord_target(void *ctx)
{
    const struct server *n = ctx;

    return n->gossip != NULL ? gossip_target(n->gossip) : NULL;
}

void rpc_coord_hooks(struct server *n, struct coord_hooks *h)
{
    *h = (struct coord_hooks){.ctx = n,
                              .ask = rpc_coord_ask,
                              .ring = rpc_coord_ring,
                              .target = rpc_coord_target,
                              .up = rpc_coord_up,
                              .body_max = rpc_coord_body_max};
}

size_t rpc_body_max(const struct server *n)
{
    return n->cfg.frame_max > RPC_ENVELOPE_MAX ? n->cfg.frame_max - RPC_ENVELOPE_MAX : 0;
}
