/*
 * two_nodes.h - two real nodes, a and b, in one test process on one event
 * loop, a connected to b over loopback through the sealed channel (the
 * harness of the peer and rpc unit tests).
 *
 * Both run with sync none, value-max 64KB, frame-max 1MB and
 * peer-queue-max 1MB in a fresh directory under /tmp; a test adds settings
 * of its own.  Waits drive the loop until a condition holds, at most
 * TWO_NODES_TURNS turns of at most TWO_NODES_TICK seconds each; nothing
 * asserts on time.
 */
#ifndef RINGKV_TWO_NODES_H
#define RINGKV_TWO_NODES_H

#include <ev.h>
#include <stdbool.h>

#include "peer.h"
#include "server.h"

#define TWO_NODES_TURNS 2000
#define TWO_NODES_TICK 0.01

struct two_nodes {
    char dir[64];
    struct server *a, *b;
    struct peer *pa; /* a's connection to b */
    ev_timer tick;   /* bounds each loop turn */
};

/*
 * Start a and b (their directory named after the test), connect a to b and
 * wait until both ends are identified and a holds b's first grant.  extra:
 * "name", "value", ... set on both, NULL-ended; NULL for none.
 */
void two_nodes_start(struct two_nodes *t, const char *test, const char *const *extra);
/* Destroy both nodes (a test that destroyed a sets t->a to NULL) and remove their directory. */
void two_nodes_stop(struct two_nodes *t);
/* Turn a's loop until cond(arg) holds; false when it never did. */
bool two_nodes_spin(struct two_nodes *t, bool (*cond)(void *), void *arg);
/* b's connection from a, once identified; NULL before and once closed. */
struct peer *two_nodes_b_side(const struct two_nodes *t);

#endif
