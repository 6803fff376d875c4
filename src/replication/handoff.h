/*
 * handoff.h - ownership handoff: the arcs of the ring whose replicas change
 * when a member joins or leaves are copied to the nodes that gain them
 * before the change takes effect (DESIGN.md, "Handoff").
 *
 * Two rings.  The member table (membership.h) keeps the ring in force
 * (members normal or leaving) and the target ring (members normal or
 * joining).  While they differ a change is under way, and ring_diff(ring in
 * force, target, rf) names every arc whose preference list changes, with
 * the nodes that lose and gain it.  Meanwhile:
 *   - reads follow the ring in force alone: the old replicas answer;
 *   - writes go to the old replicas and also to each node that gains the
 *     key's arc (coord.h, pending replicas), so nothing written during the
 *     copy is missed by it;
 *   - each node that gains an arc pulls it (below) and, once every arc it
 *     gains is done, the change completes for it: a joining node turns
 *     normal; a leaving node turns left once every node that gains one of
 *     its arcs has told it the arc is done (HANDOFF_DONE), then stops; a
 *     node changing its token count (`ringkv tokens`: in the target ring
 *     it has its new count) takes the new count into the ring in force
 *     once both hold: every arc it gains is here and every one it loses
 *     told done.
 * Arcs that only change order in a preference list move no data.
 *
 * Pulling an arc (the receiver drives; PROTOCOL.md 7.17).  The source is
 * the node of the arc's old preference list that loses it (the node that
 * leaves, or the one a joiner displaces; each of them when several do),
 * and no stand-in: an acknowledged write is on w old replicas, those that
 * keep the arc keep their copies, and the loser's copy is the one to take
 * over, while another old replica holds only the writes it acknowledged
 * itself.  So while a loser is down its arc waits (as Cassandra's
 * consistent range movement does) until it is back, or removed (the
 * repairs below then copy from every replica left).  Only a loser that
 * predates handoff is stood in for, by the first other old replica up.
 * An arc that gains a replica without losing one (a cluster growing to rf
 * nodes) is copied from the first old replica up.  Copying only starts once every live member
 * reports the target ring's digest in its entry: from then on every
 * coordinator sends the arc's writes to the receiver too, so the copy and
 * the writes together leave nothing out.  Per arc:
 *   1. checking: the source's digests of the arc (HANDOFF_DIGEST, 16
 *      sub-arcs, store_arc_digest()) are compared with the receiver's own;
 *      when they match, nothing moves (an arc with no keys, a node that
 *      already holds it).  When the receiver holds no key of the arc (a
 *      joiner), it asks for the source's key count alone (count_only):
 *      0 moves nothing, any other count streams the whole arc, and the
 *      source saves hashing it;
 *   2. streaming: HANDOFF_PULL asks for the records after the last key
 *      received, at most `batch_bytes` (and one frame) a batch, one batch
 *      outstanding per arc, at most `concurrency` arcs at once, and at most
 *      `rate` bytes a second in all.  Each batch is applied as whole
 *      records (STORE_OP_APPLY_RECORD: merged with what the receiver holds,
 *      so a newer write that arrived meanwhile is never overwritten) in one
 *      atomic store group together with the arc's checkpoint (the last key
 *      applied, keyed by target digest and arc), so a restart of either
 *      side resumes the arc after its last applied batch: at most one batch
 *      is sent twice.  An answer's items outside the range asked for are
 *      dropped (counted refused); one not done whose cursor does not move
 *      on fails as any failed pull (retried a second later);
 *   3. verifying: digests compared again; the sub-arcs that differ are
 *      streamed again (at most HANDOFF_VERIFY_ROUNDS times).  A sub-arc
 *      that still differs after being streamed again holds everything the
 *      source held when it was read, and more (writes that reached the
 *      receiver and not the source): it is accepted and counted
 *      (verify_superset);
 *   4. done: the checkpoint is deleted and the source told (HANDOFF_DONE).
 * A source that predates handoff (it does not know the operations) is
 * passed over for the next; an arc none of whose sources knows them is
 * left to writes and read repair, as before handoff existed, and counted
 * (arcs_unsupported), so a node can still join a cluster of older nodes.
 * Done arcs are remembered in memory only: after a restart they are
 * checked again (step 1), which moves nothing for an arc already held.
 *
 * Clean-up.  When no change is under way (target == ring in force), every
 * live member reports that ring as both its ring and its target, nothing
 * is being copied to or from this node (no pull or digest served either),
 * and that has held for HANDOFF_SETTLE_MS, the node
 * deletes the keys of every arc it does not replicate under the ring in
 * force (STORE_OP_DELETE_RANGE), once per ring.
 *
 * The handoff knows no sockets: it asks peers through the hooks the node
 * registers, and the node hands it its view of the member table at every
 * tick (handoff_tick()).
 */
#ifndef RINGKV_HANDOFF_H
#define RINGKV_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "coord.h"
#include "ring.h"
#include "store.h"

/* Sub-arcs a digest comparison cuts an arc into. */
#define HANDOFF_DIGEST_PARTS 16
/* Times the differing sub-arcs of an arc are streamed again at most. */
#define HANDOFF_VERIFY_ROUNDS 3
/* How long agreement must hold before a node deletes what it no longer replicates. */
#define HANDOFF_SETTLE_MS 5000
/* Digest checks outstanding at most (they move no data): arcs of an empty store go fast. */
#define HANDOFF_CHECKS_MAX 64

struct handoff;

struct handoff_hooks {
    void *ctx;
    /* coord_hooks' ask: a peer request, done runs once (perhaps before ask returns) */
    int (*ask)(void *ctx, const char *id, uint32_t op, const uint8_t *body, size_t len,
               coord_answer_fn done, void *dctx);
    /* Whether the failure detector sees member id up. */
    bool (*up)(void *ctx, const char *id);
    /* Bytes one answer from member id may carry (its frame); 0: not known. */
    size_t (*body_max)(void *ctx, const char *id);
};

struct handoff_config {
    char self[RING_NAME_MAX + 1];
    unsigned rf;
    uint64_t rate;        /* bytes a second, all arcs together (handoff-rate) */
    unsigned concurrency; /* arcs streamed at once (handoff-concurrency) */
    size_t batch_bytes;   /* record bytes one batch carries at most */
};

/* What the node sees of the member table, at a tick. */
struct handoff_view {
    const struct ring *ring;   /* in force, borrowed for the call */
    const struct ring *target; /* the target ring, borrowed (== ring when no change) */
    uint32_t status;           /* our own status (msg.h, MSG_MEMBER_*) */
    bool table_whole;          /* gossip has given us the whole member table */
    bool target_agreed;        /* every live member reports the target's digest */
    bool ring_agreed;          /* every live member reports ring == target == ours */
    bool tokens_changing;      /* our token count differs between ring and target */
    uint64_t now_ms;           /* monotonic */
};

/* What the node must do after a tick. */
enum handoff_action {
    HANDOFF_NONE,
    HANDOFF_JOINED,    /* joining, and every arc gained is here: turn normal */
    HANDOFF_LEFT,      /* leaving, and every arc given is done: turn left, then stop */
    HANDOFF_RETOKENED, /* changing our token count, every arc gained here and given done: take it */
};

struct handoff_stats {
    uint64_t changes;      /* target rings planned for */
    uint64_t arcs_planned; /* arcs to receive, summed over changes */
    uint64_t arcs_done;    /* arcs received and verified */
    uint64_t arcs_same;    /* arcs found already held at the first check */
    uint64_t keys_received, bytes_received, batches_received;
    uint64_t keys_sent, bytes_sent, batches_sent; /* served to pulling nodes */
    uint64_t resumed;                             /* arcs resumed from a checkpoint */
    uint64_t verify_mismatch;                     /* sub-arcs that differed at a verification */
    uint64_t verify_superset;  /* sub-arcs accepted holding more than the source */
    uint64_t failures;         /* pulls, checks or applies that failed (retried) */
    uint64_t refused;          /* records the store refused for good (logged, skipped) */
    uint64_t arcs_unsupported; /* arcs no source could send: every one predates handoff */
    uint64_t cleanup_keys;     /* keys deleted as no longer replicated here */
    uint64_t
        moved_fraction_ppm; /* of the last change: the part of the circle whose replicas change */
};

/* One transfer, for `ringkv transfers`. */
struct handoff_transfer {
    const char *kind;  /* "join", "leave", "tokens" or "move" */
    const char *state; /* "pending", "checking", "streaming", "verifying", "done" */
    bool incoming;     /* this node receives it (else it sends) */
    uint64_t start, end;
    const char *from, *to;
    uint64_t keys, keys_total; /* keys_total: the source's count at the first check; 0 unknown */
    uint64_t bytes;
    uint64_t rate; /* bytes a second since it started */
    int64_t eta_s; /* -1: unknown */
};
typedef void (*handoff_each_fn)(void *ctx, const struct handoff_transfer *t);

int handoff_create(struct handoff **out, struct store *store, const struct handoff_config *cfg,
                   const struct handoff_hooks *hooks);
/* Requests still out are dropped without their answers: after the peers closed. */
void handoff_destroy(struct handoff *h);

/* Plan, pull, verify, clean up; from the node's timer.  See enum handoff_action. */
enum handoff_action handoff_tick(struct handoff *h, const struct handoff_view *v);

/*
 * Serve MSG_OP_HANDOFF_PULL, _DIGEST or _DONE from member peer: the answer's
 * body into out (answer_max: what the peer's frame leaves; 0: unknown).
 * RK_ESYNTAX for a body that does not decode, RK_EINVAL for another op.
 */
int handoff_serve(struct handoff *h, const char *peer, uint32_t op, const uint8_t *body, size_t len,
                  size_t answer_max, struct buf *out);

/*
 * The ring in force changed from old_ring to new_ring (the node's ring
 * listener).  A change that is not the target this node planned for was
 * made without handoff (a removal of a dead member, a member back with
 * other tokens): every arc this node gains by it is copied from each of
 * its old replicas still in the ring ("repair" transfers), since a write
 * acknowledged by w of them is on at least one.
 */
void handoff_ring_changed(struct handoff *h, const struct ring *old_ring,
                          const struct ring *new_ring);

/* Every transfer not finished (and the finished ones of the change under way). */
void handoff_each(struct handoff *h, handoff_each_fn fn, void *ctx);
/* Transfers under way: not done, incoming and outgoing. */
size_t handoff_active(const struct handoff *h);
void handoff_get_stats(const struct handoff *h, struct handoff_stats *st);
/* The digest of the target ring the last tick planned for (0: none). */
uint64_t handoff_target(const struct handoff *h);

#endif
