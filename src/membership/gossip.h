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
 * tells the node (hooks.removed), which stops; starting it again is a new
 * life.
 *
 * Seams.  Gossip knows the node only through what the node hands it: a
 * struct gossip_settings (its id, rack, tokens, ring seed, interval, its
 * addresses and seeds as "host:port" text, the store of its data directory
 * and the event loop) and a struct gossip_hooks table of callbacks (send a
 * message on a connection, find or dial a connection, this node removed,
 * this node's id in use elsewhere).  Connections are the node's struct
 * peer, opaque here: gossip passes them back to the hooks and never looks
 * inside; the node says who is at the other end (the remote id) when it
 * hands one over.  The ring in force belongs to the member table
 * (membership.h): gossip_ring() lends it, and the node hears of every
 * change through a listener it registers with gossip_ring_listen().
 *
 * The same seams let the gossip simulator (src/sim/) run many members in
 * one process, each left at the node's behaviour when not set:
 *   clock       hooks.now (NULL: clock_mono_ms());
 *   rounds      settings.loop NULL: no timer; the owner calls
 *               gossip_round() every interval_ms;
 *   transport   send, find and dial, as for the node;
 *   randomness  settings.seed non-zero seeds the choice of gossip targets
 *               (and the instance id when there is no store); 0 draws it
 *               from libsodium;
 *   persistence settings.store NULL: nothing is read or written; the
 *               table starts from settings.table (msg_members_encode()
 *               form, may be empty), and our generation and instance are
 *               those of our entry there (generation 1 and a seeded
 *               instance when it has none);
 *   observation hooks.changed (may be NULL) hears every member event
 *               gossip logs, as it logs it.
 */
#ifndef RINGKV_GOSSIP_H
#define RINGKV_GOSSIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "membership.h"
#include "msg.h"
#include "ring.h"

/* Seeds gossip keeps: as many as the seeds setting takes. */
#define GOSSIP_SEEDS_MAX 64

struct ev_loop;
struct gossip;
struct peer; /* the node's connection to another node: opaque to gossip */
struct store;

/* What gossip needs of the node's settings, as plain values (copied by gossip_create()). */
struct gossip_settings {
    char id[RING_NAME_MAX + 1];
    char rack[RING_NAME_MAX + 1];
    uint32_t tokens;
    uint8_t ring_seed[RING_SEED_LEN];
    uint64_t interval_ms;         /* gossip-interval: time between rounds */
    char peer_addr[MSG_ADDR_MAX]; /* our peer address, "host:port", as members and seeds name it */
    char client_addr[MSG_ADDR_MAX];
    char seeds[GOSSIP_SEEDS_MAX][MSG_ADDR_MAX]; /* "host:port" each */
    size_t n_seeds;
    struct store *store;  /* the data directory, or NULL (Seams); borrowed until gossip_destroy() */
    struct ev_loop *loop; /* rounds run on it, or NULL (Seams); borrowed until gossip_destroy() */
    uint64_t seed;        /* the random source's seed; 0: from libsodium (Seams) */
    /*
     * A joining node stays joining until the node says it holds its arcs
     * (gossip_set_status(), handoff.h); false: it turns normal at its first
     * whole exchange, as a node with no data to receive may.
     */
    bool join_by_handoff;
    /*
     * Start even when our saved ring entry has other tokens or another rack
     * than the settings (the churn alarm, gossip.c); false: refuse, with
     * the figures.
     */
    bool force_ring_change;
    const uint8_t
        *table; /* without a store: the table to start from; borrowed for gossip_create() */
    size_t table_len;
};

/*
 * How gossip reaches the node.  Every hook gets ctx first.  Connections
 * are borrowed for the call: gossip keeps no struct peer past the hook or
 * handler that handed it over, and asks find() again next time.
 */
struct gossip_hooks {
    /* Send m on p; 0, or an error after which the node has closed p. */
    int (*send)(void *ctx, struct peer *p, const struct msg *m);
    /* The connection to member id, or an outbound one to addr (either may be NULL); NULL when none.
     */
    struct peer *(*find)(void *ctx, const char *id, const char *addr);
    /* Start a connection to addr; NULL with err set when it cannot start (or the node is stopping).
     */
    struct peer *(*dial)(void *ctx, const char *addr, char *err, size_t err_len);
    /*
     * An operator removed this node from the cluster.  Called from a round,
     * never from inside a connection's handler, so the node may close every
     * connection; it is expected to stop (exit status 3, by the README).
     */
    void (*removed)(void *ctx);
    /*
     * Another process, at other_addr, holds this node's id, and this node
     * has not yet exchanged tables with the cluster: it must not run.  May
     * be called from inside a connection's handler; the node stops at once.
     */
    void (*id_in_use)(void *ctx, const char *other_addr);
    /* Monotonic milliseconds (may be NULL: clock_mono_ms()). */
    uint64_t (*now)(void *ctx);
    /*
     * A member event, named as its log line (member_added, member_up,
     * member_suspect, member_down, member_removed, member_back, joined),
     * about member id (our own for joined).  May be NULL.
     */
    void (*changed)(void *ctx, const char *event, const char *id);
    void *ctx;
};

/*
 * Set up membership: read the generation, instance id and saved member
 * table from the store, take the next generation, and build the table and
 * ring.  settings and hooks are copied.  On failure *out is NULL and err
 * has one line.
 */
int gossip_create(struct gossip **out, const struct gossip_settings *settings,
                  const struct gossip_hooks *hooks, char *err, size_t err_len);

/* Start gossip rounds (the first one at once); without a loop, the owner runs them. */
void gossip_start(struct gossip *g);

/*
 * One round (top of file): what the loop's timer runs every interval_ms.
 * Called directly only by an owner that gave no loop (Seams).
 */
void gossip_round(struct gossip *g);

/* Stop rounds and save the member table (synchronously); for shutdown. */
void gossip_stop(struct gossip *g);

/* Release everything; NULL is ignored.  A reference taken to a ring stays valid. */
void gossip_destroy(struct gossip *g);

/* Connection p, to member id, identified itself (MSG_IDENT arrived). */
void gossip_peer_identified(struct gossip *g, struct peer *p, const char *id);

/*
 * A peer introduced itself with our own id (from addr): a second process
 * claims our id.  A node still joining refuses to run (hooks.id_in_use);
 * one that has been part of the cluster only drops that connection.
 */
void gossip_same_id(struct gossip *g, const char *addr);

/* An outbound connection to addr reached this very node: never dial addr again. */
void gossip_self_dialled(struct gossip *g, const char *addr);

/* Gossip and liveness messages from connection p, identified as member from_id. */
void gossip_message(struct gossip *g, struct peer *p, const char *from_id, const struct msg *m);

/* A removal's outcome: result 0, or an error and err saying what was kept. */
typedef void (*gossip_removed_fn)(void *ctx, int result, const char *err);

/*
 * Remove member id from the cluster (RINGKV REMOVE): only a member this
 * node sees down, never ourselves.  The removal takes effect in memory at
 * once and is saved asynchronously (the member table, epoch and digest in
 * one atomic store group), so the event loop never waits on the disk.
 * Returns 0, after which done is called once from the event loop when the
 * save completed (a failed save puts the entry back and says so in err);
 * or an error at once, err saying why nothing changed, and done is never
 * called.
 */
int gossip_remove(struct gossip *g, const char *id, gossip_removed_fn done, void *ctx, char *err,
                  size_t err_len);

/* The member table (read-only), for status reports. */
const struct membership *gossip_members(const struct gossip *g);

/* The ring in force, borrowed as membership_ring() lends it; ring_ref() to keep it. */
const struct ring *gossip_ring(const struct gossip *g);

/* Register a ring-change listener (membership_ring_listen()): 0 or RK_ETOOBIG. */
int gossip_ring_listen(struct gossip *g, membership_ring_fn fn, void *ctx);

/*
 * Whether every member that is up reports the ring digest we hold, and no
 * change is under way: our target is our ring, and so is each one's
 * (an entry from a node that predates targets, 0, says nothing of it).
 */
bool gossip_converged(const struct gossip *g, size_t *agree, size_t *up);

/* The target ring (membership_target()), borrowed like gossip_ring(). */
const struct ring *gossip_target(const struct gossip *g);

/*
 * Whether every member that is up (ourselves included) reports, in its
 * entry, the target digest we hold; with ring_too, also the ring digest we
 * hold, and target and ring equal (no change under way anywhere).
 */
bool gossip_agreed(const struct gossip *g, bool ring_too);

/* Whether an exchange has given us the whole member table since start. */
bool gossip_table_whole(const struct gossip *g);

/*
 * Change our own status (a join or leave completing, a leave starting):
 * the entry is saved and spread by the next round, the change logged and
 * told to hooks.changed as `joined`, `leaving` or `left`.  RK_ENOMEM.
 */
int gossip_set_status(struct gossip *g, enum msg_member_status status);

/*
 * Change our token count at run time (`ringkv tokens`).  The count is
 * saved first (meta "tokens": from then on it overrides the settings'
 * tokens at every start, and the node logs tokens_override saying so);
 * then our entry takes it as target_tokens, so the target ring gives us
 * that many tokens while the ring in force keeps the old count, and the
 * handoff moves the arcs that change (handoff.h).  When it is done the
 * node calls gossip_tokens_done().  While another change of the ring is
 * under way (ours or any member's: not gossip_agreed(g, true)) the count
 * is queued and starts at the first round after it (done is told
 * queued).  A count equal to the one in force cancels a change not yet
 * done.  done runs once the save completed: rc 0, or the error and why in
 * err.  At once: RK_EINVAL (a count out of range, a node not normal, no
 * store) or RK_ENOMEM, with err set, and done never runs.
 */
typedef void (*gossip_tokens_fn)(void *ctx, int rc, bool queued, const char *err);
int gossip_set_tokens(struct gossip *g, uint32_t tokens, gossip_tokens_fn done, void *ctx,
                      char *err, size_t err_len);
/* The token change under way is done: our entry takes target_tokens as tokens.  RK_ENOMEM. */
int gossip_tokens_done(struct gossip *g);
/* A token count waiting for the change under way (0: none). */
uint32_t gossip_tokens_queued(const struct gossip *g);

#endif
