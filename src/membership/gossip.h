/*
 * gossip.h - membership over the network: joining through seeds, gossip
 * rounds, heartbeats and failure detection, and the member table kept in
 * the data directory so that a restarted node comes back with its ring.
 *
 * Every gossip-interval a node
 *   - bumps its heartbeat (its entry's version) and pings every member it
 *     has a connection to, so each member's detector hears from it at a
 *     steady pace whatever the cluster's size;
 *   - runs one gossip exchange (SYN, ACK, ACK2: proto/PROTOCOL.md) with a
 *     random live member; with a probability that grows with how many are
 *     unreachable, also with an unreachable one (so a partition heals); and
 *     with a seed when it may be cut off (it reached no seed, or it knows
 *     fewer live members than seeds) - Cassandra's rules;
 *   - re-evaluates every member's detector (alive, suspect, down) and logs
 *     each change as event=member_up, member_suspect or member_down.
 *
 * Joining and identity.  A node started with seeds and no ring of its own
 * starts as joining, and becomes normal once it has exchanged tables with a
 * member (ownership handoff will stream data before that step).  Every
 * data directory has a random instance id; an entry bearing our node id
 * but another instance id, from a member that is not removed or left, is
 * another process claiming our id: the newer process refuses to run (the
 * node exits with one line naming the other's address), and since its
 * entry is older the original is never affected.  A restart keeps the
 * instance and takes a new generation, so it is accepted.  An entry of our
 * id from an earlier life (written from our own address by a data
 * directory since wiped, or a removal) is answered with a generation above
 * it: the new life wins and the cluster takes us back.
 *
 * Removal.  `ringkv remove ID` on any node writes the removal of a member
 * that node sees down (membership.h: its version bumped past anything the
 * member can still write in that generation); gossip spreads it, and the
 * ring loses the member.  A removed member that was only paused or cut off
 * learns of it when it is heard again, logs event=removed_from_cluster and
 * stops (exit GOSSIP_EXIT_REMOVED); starting it again is a new life.
 */
#ifndef RINGKV_GOSSIP_H
#define RINGKV_GOSSIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"

/* server_run()'s exit code when an operator removed this node from the cluster. */
#define GOSSIP_EXIT_REMOVED 3

struct server;
struct peer;

/*
 * Set up membership for n: read the generation, instance id and saved
 * member table from the data directory, take the next generation, and
 * build the table and ring.  err gets one line on failure.
 */
int gossip_create(struct server *n, char *err, size_t err_len);

/* Start gossip rounds (the first one at once). */
void gossip_start(struct server *n);

/* Stop rounds and save the member table (synchronously); for shutdown. */
void gossip_stop(struct server *n);

void gossip_destroy(struct server *n);

/* A peer connection identified itself (MSG_IDENT arrived). */
void gossip_peer_identified(struct server *n, struct peer *p);

/* A peer connection closed. */
void gossip_peer_closed(struct server *n, struct peer *p);

/*
 * A peer introduced itself with our own id (from addr): a second process
 * claims our id.  A node still joining refuses to run; one that has been
 * part of the cluster only drops that connection.
 */
void gossip_same_id(struct server *n, const char *addr);

/* An outbound connection to addr reached this very node: never dial addr again. */
void gossip_self_dialled(struct server *n, const char *addr);

/* Gossip and liveness messages from an identified peer. */
void gossip_message(struct server *n, struct peer *p, const struct msg *m);

/*
 * Remove member id from the cluster (RINGKV REMOVE): only a member this
 * node sees down, never ourselves.  The removal is saved before this
 * returns 0; otherwise err says why nothing changed.
 */
int gossip_remove(struct server *n, const char *id, char *err, size_t err_len);

struct membership;

/* The member table (read-only), for status reports. */
const struct membership *gossip_members(const struct server *n);

/* Whether every member that is up reports the ring digest we hold. */
bool gossip_converged(const struct server *n, size_t *agree, size_t *up);

#endif
