/*
 * bulktest.h - a synthetic bulk stream between two nodes, for tests and
 * diagnostics of the bulk lane (lanes.h): `RINGKV BULKTEST id bytes` makes
 * this node send `bytes` of MSG_BULK to member id as fast as the peer's
 * credit allows, and `RINGKV BULKTEST` reports the stream's progress and
 * what this node received.  The receiver counts the bytes and discards
 * them.
 *
 * It shows what a handoff stream will see (the rate a path gives the bulk
 * lane, and that heartbeats are not delayed behind it) without moving any
 * data.  One outgoing stream per node at a time; a node receives from any
 * number.  State lives in the node (struct server's bulktest), created on
 * first use.
 */
#ifndef RINGKV_BULKTEST_H
#define RINGKV_BULKTEST_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct server;
struct peer;

/* The most bytes one stream may be asked for: a terabyte. */
#define BULKTEST_BYTES_MAX ((uint64_t)1 << 40)

/*
 * Start streaming bytes (1 .. BULKTEST_BYTES_MAX) of synthetic bulk to
 * member id over its identified connection.  Errors, with one line in
 * err: RK_ERANGE (bytes), RK_ENOTFOUND (no identified connection to id),
 * RK_EMISMATCH (its message set has no bulk lane), RK_EDUP (a stream is
 * running), RK_ENOMEM.
 */
int bulktest_start(struct server *n, const char *id, uint64_t bytes, char *err, size_t err_len);

/* len bytes of synthetic bulk arrived from p: count them. */
void bulktest_received(struct server *n, struct peer *p, size_t len);

/*
 * The report of RINGKV BULKTEST, as a RESP map (proto 2 or 3): the
 * outgoing stream (state, peer, bytes asked, sent, elapsed, rate, the
 * connection's queue peak and bound, the bulk in flight at most and the
 * window) and what was received (bytes, from whom, between which times,
 * the rate, and the longest gap between control messages on that
 * connection while bulk flowed).  commands.c documents the fields.
 */
void bulktest_report(struct server *n, struct buf *out, int proto);

/* Release the state; a stream still running is abandoned. */
void bulktest_destroy(struct server *n);

#endif
