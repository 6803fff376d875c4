/*
 * transfers.h - the node's side of ownership handoff (handoff.h): the
 * handoff's timer, what it is told of the member table, the status
 * changes it asks for, and the client verbs over it:
 *
 *   RINGKV LEAVE       this node starts leaving: its status turns leaving,
 *                      the nodes that gain its arcs pull them, and once
 *                      each has said its arc is done the node turns left
 *                      and stops.  +OK at once; an error when it is not
 *                      normal (joining: still receiving; leaving: already),
 *                      or when it is the ring's last node.
 *   RINGKV TRANSFERS   the transfers not finished, a map:
 *                        node, status, ring, target (16 hex digits),
 *                        changing (1 while ring and target differ),
 *                        agreed (1 when every live member holds the target),
 *                        transfers: an array of maps with kind (join,
 *                        leave, tokens, move, repair: an arc this node receives;
 *                        serve: pulls it answered in the last 5 s, which
 *                        name no arc, start and end 0), state (pending,
 *                        checking, streaming, verifying), direction (in,
 *                        out), start, end (hex), from, to, keys, keys_total
 *                        (0: unknown), bytes, rate_bps, eta_s (-1: unknown).
 *   RINGKV TOKENS n [FORCE]
 *                      this node's token count becomes n, moved to by
 *                      handoff: the count is saved (and from then on
 *                      overrides the configured one at every start), the
 *                      target ring gives this node n tokens, the nodes that
 *                      gain arcs pull them, and once this node holds every
 *                      arc it gains and was told done for every arc it
 *                      loses, the ring in force takes n.  +OK once saved;
 *                      +QUEUED when another ring change is under way (this
 *                      one starts when it is done); n equal to the count in
 *                      force cancels a change not yet done.  Refused when
 *                      the node is not normal, and (the churn alarm) when
 *                      the part of the ring whose replicas would change is
 *                      far more than this node's change of share predicts,
 *                      or n is more than 4 times the count in force or
 *                      less than its quarter, unless FORCE, with the
 *                      figures.
 *   RINGKV PLAN LEAVE id | REMOVE id | TOKENS id n | JOIN id rack tokens
 *                      what that change would move, without making it
 *                      (the CLI's --dry-run; transfers.c, ringkv_plan()).
 */
#ifndef RINGKV_TRANSFERS_H
#define RINGKV_TRANSFERS_H

#include <stdbool.h>
#include <stddef.h>

struct server;
struct client;
struct pending;

/* Time between two handoff ticks. */
#define TRANSFERS_TICK_S 0.1
/* A node that turned left stops after this long, so gossip carries the news first. */
#define TRANSFERS_LEFT_STOP_MS 3000

/* Create the handoff and start its timer (server_create()); err holds one line. */
int transfers_start(struct server *n, char *err, size_t err_len);
/* Stop the timer (shutdown); the handoff stays readable until transfers_free(). */
void transfers_stop(struct server *n);
void transfers_free(struct server *n);

void ringkv_leave(struct client *c, struct pending *p);
void ringkv_transfers(struct client *c, struct pending *p);
void ringkv_plan(struct client *c, struct pending *p);
int ringkv_tokens(struct client *c, struct pending *p);

#endif
