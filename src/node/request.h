/*
 * request.h - the outstanding-request table of one peer connection: the
 * pure half of the peer request layer (rpc.h is the half that sends,
 * receives and runs the timer).
 *
 * A request sent to a peer gets an id from its connection's table, a
 * deadline and a callback.  Exactly one of three things then ends it, and
 * the callback runs exactly once with the outcome:
 *   - its response arrives (request_complete()): result 0, the response's
 *     status and body;
 *   - its deadline passes (request_expire()): RK_ETIMEOUT;
 *   - its connection closes (request_fail_all()): the error given, for
 *     every request still outstanding, all at once.
 * An entry leaves the table before its callback runs, so a callback may
 * add requests to the same table or fail the rest; nothing it does can
 * end the same request twice.
 *
 * Ids are 1, 2, 3, ... per table (a 64-bit counter never wraps), so a
 * response is matched to the one request of its connection with that id.
 * A response whose id is not outstanding is ignored and counted: as late
 * when the id timed out among the last REQUEST_EXPIRED_WINDOW ids issued
 * (the peer answered after we gave up), as unknown otherwise (an id never
 * issued, already answered, or a late answer for a second time).
 *
 * Pure: no I/O, no clock reads, no event loop.  Time comes in as
 * monotonic microseconds, so tests drive it with a fake clock.  The table
 * holds at most max entries; a response finds its entry through an index
 * by id (open addressing, twice as many slots as entries), since a busy
 * connection has hundreds in flight and every response looks one up.
 */
#ifndef RINGKV_REQUEST_H
#define RINGKV_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The most recent ids issued whose timing out is remembered, one bit each,
 * to tell a late response from an unknown one: a stalled peer times out
 * everything sent to it meanwhile, thousands of requests, all answered late
 * once it resumes (8 KiB a connection, allocated at its first timeout).
 */
#define REQUEST_EXPIRED_WINDOW 65536

/* What ended a request, for its callback (result 0: a response). */
struct request_reply {
    uint32_t status;     /* the response's status (msg.h, MSG_STATUS_*) */
    const uint8_t *body; /* the response's body, borrowed for the callback's duration */
    size_t body_len;
};

/*
 * Called once per request.  result: 0 (reply holds the response),
 * RK_ETIMEOUT, or the error given to request_fail_all() (reply is then
 * NULL).  elapsed_us: from request_add() to the outcome.
 */
typedef void (*request_done_fn)(void *ctx, int result, const struct request_reply *reply,
                                uint64_t elapsed_us);

struct request_entry {
    uint64_t id;
    uint32_t op;          /* the operation asked, for the caller's counting */
    uint64_t sent_us;     /* now at request_add() */
    uint64_t deadline_us; /* it times out once now >= deadline_us */
    request_done_fn done;
    void *ctx;
};

/* How a response was taken (request_complete()). */
enum request_outcome {
    REQUEST_DELIVERED, /* to its outstanding request */
    REQUEST_LATE,      /* its request timed out before: ignored */
    REQUEST_UNKNOWN,   /* no request of this connection has that id: ignored */
};

struct request_table {
    struct request_entry *v; /* n outstanding, in no order; owned */
    size_t n, cap, max;
    uint32_t *at;   /* by id: 0 (empty) or 1 + the entry's index in v; owned */
    size_t at_mask; /* slots - 1: a power of two at least twice cap (0: none yet) */
    uint64_t next_id;
    uint8_t *expired;       /* bit id % REQUEST_EXPIRED_WINDOW: id timed out; NULL before any did */
    uint64_t late, unknown; /* responses ignored, by kind */
};

/* An empty table for at most max outstanding requests (max >= 1). */
void request_table_init(struct request_table *t, size_t max);

/*
 * Release the table.  Asserts that nothing is outstanding: a connection
 * fails its requests (request_fail_all()) before it lets the table go.
 */
void request_table_deinit(struct request_table *t);

/*
 * Add a request for op, sent at now_us, timing out timeout_us later; its
 * id into *id.  ctx is the caller's, passed back to done.  RK_ETOOBIG when
 * max are outstanding, RK_ENOMEM; nothing is added then and done is not
 * called.
 */
int request_add(struct request_table *t, uint32_t op, uint64_t now_us, uint64_t timeout_us,
                request_done_fn done, void *ctx, uint64_t *id);

/*
 * Take the response for id at now_us: the request leaves the table and
 * its callback gets result 0 and reply.  A response for an id that is not
 * outstanding is counted (late or unknown) and ignored.
 */
enum request_outcome request_complete(struct request_table *t, uint64_t id, uint64_t now_us,
                                      const struct request_reply *reply);

/*
 * End the outstanding request id with err (a negative RK_* code): for a
 * request that could not be sent after all.  RK_ENOTFOUND when id is not
 * outstanding (it has ended already); nothing is counted then.
 */
int request_fail(struct request_table *t, uint64_t id, int err, uint64_t now_us);

/* Time out every request whose deadline is at or before now_us; returns how many. */
size_t request_expire(struct request_table *t, uint64_t now_us);

/* End every outstanding request with err (a negative RK_* code); returns how many. */
size_t request_fail_all(struct request_table *t, int err, uint64_t now_us);

/* The earliest deadline into *deadline_us; false when nothing is outstanding. */
bool request_next_deadline(const struct request_table *t, uint64_t *deadline_us);

/* The entry of an outstanding request (borrowed until the table changes); NULL when none. */
const struct request_entry *request_find(const struct request_table *t, uint64_t id);

static inline size_t request_count(const struct request_table *t)
{
    return t->n;
}

#endif
