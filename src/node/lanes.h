/*
 * lanes.h - flow control of one node-to-node connection: the bound on its
 * output queue, and the credit window of its bulk lane.
 *
 * A connection carries two lanes.  Control traffic (IDENT, pings, gossip,
 * credits, later requests and replies) is sealed into the output queue as
 * soon as it is sent.  Bulk traffic (handoff batches, MSG_BULK_RESPONSE:
 * rpc.h; the test-only MSG_BULK) never waits in that queue: a bulk message is
 * sealed only when the queue is empty, and only when the receiver has
 * granted credit for it (MSG_CREDIT, proto/PROTOCOL.md).  A producer of
 * bulk that finds no room is told to wait (peer.h's peer_send_bulk()), so
 * bulk waits in the producer, not in a buffer.
 *
 * Why credit and not only priority: the kernel's socket buffers (up to
 * tcp_wmem's 4 MB) and any bottleneck queue on the path are one FIFO that
 * user-space priority cannot reach.  A heartbeat sent behind 4 MB of bulk
 * on a 1 MB/s path waits 4 s, past the detector's suspicion (2.3 s at the
 * default gossip interval, detector.h).  With credit, the bulk bytes sent
 * and not yet granted back -- everything in those buffers and in flight --
 * never exceed the receiver's window, so a heartbeat waits at most about
 * window / path rate (the default 1 MiB at 1 MB/s: 1.05 s; 256 KiB: 0.26 s).
 *
 * The credit rules, for both ends:
 * - The receiver announces its window W with its first grant, W bytes.
 *   Bulk bytes are the plaintext bytes of bulk messages (the msgpack
 *   encoding, before sealing), counted the same way at both ends.
 * - The receiver grants back what it consumed, once at least W / 4 is
 *   waiting to be granted (LANES_GRANT_DIVISOR), so a window costs four
 *   small CREDIT messages, not one per bulk message.
 * - The sender holds credit = W - (bulk bytes sent and not granted back);
 *   a grant that would raise it past W is a protocol error.
 * - A bulk message is at most W / 2 bytes: when nothing is in flight the
 *   sender holds at least W - W/4 of credit, so every allowed message is
 *   sent eventually and the lane cannot deadlock.
 * - A receiver that gets more bulk bytes than it granted closes the
 *   connection: the sender broke the protocol.
 *
 * The output queue bound (peer-queue-max) covers every byte waiting to be
 * written to the socket.  A control message that would pass it is not
 * dropped (the channel is a sequence: a dropped reply leaves a request
 * hanging until its timeout); peer.c closes the connection instead, as
 * Redis closes a client past client-output-buffer-limit: a peer that has
 * read nothing for that long is not reading our heartbeats either.
 *
 * Pure accounting: no I/O, no clock (times are passed in), so the unit
 * tests (tests/unit/check_lanes.c) drive it directly.  Embed a struct
 * lanes in the connection, lanes_init() it; nothing to release.
 */
#ifndef RINGKV_LANES_H
#define RINGKV_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A grant is sent once a quarter of the window waits to be granted. */
#define LANES_GRANT_DIVISOR 4
/* The largest window a receiver may announce (also MSG_CREDIT_WINDOW_MAX's value). */
#define LANES_WINDOW_MAX ((uint64_t)1 << 30)

/* What lanes_bulk_check() says of one bulk message. */
enum lanes_bulk {
    LANES_BULK_SEND = 0,   /* send it now */
    LANES_BULK_WAIT = 1,   /* not now: the queue is not empty or the credit is short */
    LANES_BULK_NOLANE = 2, /* the peer has announced no window: it takes no bulk */
    LANES_BULK_TOOBIG = 3, /* over half the peer's window: never sendable */
};

struct lanes {
    /* output */
    size_t queue_max;       /* peer-queue-max */
    size_t queue_peak;      /* most bytes that ever waited to be written */
    uint64_t peer_window;   /* the window the peer announced; 0 before its first grant */
    uint64_t credit;        /* bulk bytes we may still send */
    uint64_t inflight_peak; /* most bulk bytes ever sent and not granted back */
    uint64_t bulk_out;      /* bulk bytes sent */
    size_t need;            /* the size of the bulk message that was told to wait */
    /* input */
    uint64_t window;             /* our window for the peer's bulk (peer-bulk-window) */
    uint64_t allowed;            /* bulk bytes the peer may still send us */
    uint64_t consumed;           /* bulk bytes consumed and not yet granted back */
    uint64_t bulk_in;            /* bulk bytes received */
    uint64_t last_control_ms;    /* arrival of the last control message; 0 none */
    uint64_t control_gap_max_ms; /* longest wait between control messages once bulk flowed */
};

/* Start a connection's accounting: its queue bound, and our window for its bulk. */
void lanes_init(struct lanes *l, size_t queue_max, uint64_t window);

/* --- output -------------------------------------------------------------------- */

/*
 * Whether a control message of len bytes (as it will be written, sealed)
 * fits when queued bytes already wait; false means the connection must
 * close (peer-queue-max).
 */
bool lanes_control_fits(const struct lanes *l, size_t queued, size_t len);

/* The queue now holds queued bytes: keep the peak. */
void lanes_queued(struct lanes *l, size_t queued);

/*
 * Whether a bulk message of len plaintext bytes may be sent now, with
 * queued bytes waiting to be written.  On LANES_BULK_WAIT the size is
 * remembered for lanes_bulk_ready().
 */
enum lanes_bulk lanes_bulk_check(struct lanes *l, size_t queued, size_t len);

/* A bulk message of len plaintext bytes was sealed: spend its credit. */
void lanes_bulk_sent(struct lanes *l, size_t len);

/* Whether the message lanes_bulk_check() told to wait may now go, with queued bytes waiting. */
bool lanes_bulk_ready(const struct lanes *l, size_t queued);

/*
 * The peer granted grant bytes and announced window.  Errors (the peer
 * broke the protocol; the connection must close): RK_EINVAL for a window
 * of 0, over LANES_WINDOW_MAX, or other than the one announced first;
 * RK_ERANGE for a grant that raises the credit past the window.
 */
int lanes_credit_in(struct lanes *l, uint64_t grant, uint64_t window);

/* --- input --------------------------------------------------------------------- */

/* The first grant to the peer: the whole window, which the peer may now send. */
uint64_t lanes_grant_initial(struct lanes *l);

/* A bulk message of len plaintext bytes arrived: RK_ERANGE when it is over what we granted. */
int lanes_bulk_in(struct lanes *l, size_t len);

/*
 * len bulk bytes were consumed: returns the grant to send now (a quarter
 * of the window or more has waited), or 0 for none yet.
 */
uint64_t lanes_bulk_consumed(struct lanes *l, size_t len);

/* A control message arrived at now_ms (monotonic): keep the longest gap once bulk flowed. */
void lanes_control_in(struct lanes *l, uint64_t now_ms);

#endif
