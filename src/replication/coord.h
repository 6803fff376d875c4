/*
 * coord.h - the coordinator: a client's read or write of a key, carried
 * out on the key's replicas (DESIGN.md, "Data flow of a write").
 *
 * Who coordinates.  A request for a key goes to a replica of it: the node
 * a client asked coordinates when it is one of the key's preference list
 * (preflist.h: the ring in force, rf); otherwise it forwards the request
 * (MSG_OP_FORWARD) to the first replica it sees up, which coordinates and
 * answers, and the answer (its error and figures included) is the
 * client's.
 *
 * Rings that differ.  While a change of the ring spreads, nodes disagree
 * on who holds a key (a ring behind or ahead of another's).
 *   - A forwarded request that reaches a node that is no replica of its
 *     key by its own ring is forwarded again, to the key's replicas under
 *     that ring.  Each FORWARD carries the forwards the request travelled
 *     (PROTOCOL.md 7.15, `hops`); one that travelled COORD_FORWARD_HOPS is
 *     refused with TRYAGAIN and the client retries, so a request never
 *     goes round between nodes.  A FORWARD without the count comes from a
 *     node that predates it: refused so, as such a node expects.
 *   - A replica read or write (a coordinator's REPLICA_READ or
 *     REPLICA_WRITE, not a hint) that reaches a node that neither
 *     replicates the key nor gains its arc under its own rings (in force
 *     and target), and holds no copy of it, is answered NOTMINE: no vote,
 *     no acknowledgement, nothing stored.  The coordinator gives that
 *     replica's place to the next node of its ring walk, the node that
 *     would stand in for it were it down (preflist.h's fallback walk),
 *     and asks it as that replica: a read's vote, a write's version
 *     (acknowledged toward w).  It answers as a replica only when its own
 *     rings make it one, or it holds a copy, and NOTMINE again otherwise,
 *     when the walk goes on (at most COORD_REPLACE_MAX nodes a request).
 *     After a node left the ring or was removed, the walk's next node is
 *     the one that took its place.  With no node left to ask, a read
 *     counts the replica as not answering, and a write keeps a hint for
 *     the last one asked, which hinted handoff sends to the key's
 *     replicas once the rings agree.  A copy held anywhere else is served
 *     as before.  coord.c (serve_not_mine_key()) says why the node asked
 *     does not ask the replicas itself.
 *
 * Writes.  The coordinator makes the new version once, by a local write
 * (kv's path, so it shares the store's group commit), then sends that
 * version to the other replicas (MSG_OP_REPLICA_WRITE), which merge it and
 * never re-version it.  The write succeeds when w replicas hold it
 * durably, the coordinator's own commit counting as one.  With `sloppy`
 * on, a replica the failure detector sees down is replaced by its
 * fallback, which keeps the version as a hint for it (durably: a hint
 * counts toward w; preflist.h says which node stands in).
 *
 * Writes during a change.  While the target ring differs from the ring in
 * force (a member joining or leaving, handoff.h), a write is also sent to
 * every node of the key's preference list in the target ring that is not
 * in its list in force: a pending replica, which is gaining the key's arc.
 * It does not count toward w (the replicas in force decide the write, as
 * before); one that is down, or does not take the version, gets it as a
 * hint kept here, so no write made while an arc is copied misses the node
 * that receives it.  Reads never ask pending replicas.
 *
 * Reads.  The coordinator reads its own copy and asks r - 1 other
 * replicas that are up (another one when one fails), merges the versions
 * that came back (siblings stay siblings), and before answering writes the
 * merged record to every replica that answered with less (blocking read
 * repair), so that once a quorum read returned a value no later quorum
 * read returns an older one.  Hints never count toward r.
 *
 * Records over one frame.  A record whose siblings together do not fit
 * one body (body_max) travels sibling by sibling: a REPLICA_READ or a
 * FORWARD read is answered in parts of whole siblings, the reader asking
 * for the next part by index and by the digest of the record the earlier
 * parts came from (a record that changed in between is sent again from
 * its first sibling, at most COORD_PART_RESTARTS_MAX times), and a read
 * repair sends a replica one REPLICA_WRITE per group of siblings that
 * fits.  Parts are cut to the smaller of this node's body_max and what
 * the receiving peer's announced frame-max leaves (hooks.body_max; for a
 * served read, coord_serve()'s answer_max), so a record reaches a peer
 * with a smaller frame-max in parts it can read.  A single sibling always
 * fits this node's frame: frame-max is at least value-max + key-max +
 * 64 KB (settings.c).  It may not fit a peer whose frame-max is smaller
 * (nodes of one cluster may differ): a request or an answer over the
 * frame-max the peer announced is never sent (rpc.c), the request ends
 * with RK_EINVAL and that replica counts as not answering for it alone,
 * with no hint kept (one would be refused for ever).  The client's reply,
 * built here, is not bounded by a frame.
 *
 * Failing.  Too few replicas reachable to try (fewer distinct nodes than
 * w or r, or too many down): RK_ENOREPLICAS with (reachable, needed).
 * Tried, and too few answered before request-timeout: RK_ETRYAGAIN with
 * (answered, needed); a write refused so may still be on the replicas
 * that did answer, and a later read returns it.  Every peer request ends
 * within request-timeout (rpc.h), so a request never waits longer (for a
 * record over one frame, request-timeout per part).
 *
 * The coordinator knows no sockets: it asks peers and learns the ring in
 * force and who is up through the hooks the node registers.
 */
#ifndef RINGKV_COORD_H
#define RINGKV_COORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv.h"
#include "msg_kv.h"
#include "preflist.h"
#include "record.h"
#include "ring.h"
#include "store.h"

struct coord;

/* Forwards a client's request travels at most (above). */
#define COORD_FORWARD_HOPS 2
/* Nodes of a request that answered NOTMINE and were replaced by the ring walk's next, at most. */
#define COORD_REPLACE_MAX 4

/*
 * How a peer request ended: result 0 with the answer's body (borrowed for
 * the call), or an error (RK_ETIMEOUT, RK_ECLOSED, RK_EMISMATCH from a
 * member that does not know the operation (its message set has no
 * requests, or it answered result 1), RK_EIO for another answer that is
 * not a result 0, RK_EINVAL for a body over the member's frame,
 * never sent and never sendable) with no body.
 */
typedef void (*coord_answer_fn)(void *dctx, int result, const uint8_t *body, size_t len);

struct coord_hooks {
    void *ctx;
    /*
     * Ask member id to run op with body (borrowed): 0, and then done runs
     * exactly once (perhaps before ask returns); or an error and it never
     * runs.
     */
    int (*ask)(void *ctx, const char *id, uint32_t op, const uint8_t *body, size_t len,
               coord_answer_fn done, void *dctx);
    /* The ring in force, borrowed for the call; NULL before there is one. */
    const struct ring *(*ring)(void *ctx);
    /*
     * The target ring (handoff.h), borrowed for the call: the ring in force
     * itself, or NULL, while no change is under way.  NULL hook: never one.
     */
    const struct ring *(*target)(void *ctx);
    /* Whether the failure detector sees member id up. */
    bool (*up)(void *ctx, const char *id);
    /*
     * Bytes one body sent to member id may carry: what the frame-max its
     * connection announced leaves; 0 when not known (then this node's
     * body_max bounds it alone).  NULL: never known.
     */
    size_t (*body_max)(void *ctx, const char *id);
};

struct coord_config {
    char self[RING_NAME_MAX + 1]; /* this node's id */
    unsigned rf, r, w;            /* the cluster's rf; the default read and write quorums */
    bool sloppy;                  /* fallbacks stand in for replicas that are down */
    enum record_conflicts mode;
    size_t max_siblings;
    size_t key_max,
        value_max; /* this node's key-max and value-max: a forward over them is refused */
    /*
     * Bytes one peer request's or answer's body may carry (a frame less its
     * envelope); 0: no bound.  A record over it travels in parts (below).
     */
    size_t body_max;
};

/* Counters for INFO and metrics. */
struct coord_stats {
    uint64_t reads, writes;        /* requests coordinated here */
    uint64_t forwarded;            /* requests this node forwarded to a replica */
    uint64_t forwards_served;      /* forwarded requests coordinated here */
    uint64_t noreplicas, tryagain; /* requests refused, by why */
    uint64_t repairs;              /* replicas sent a merged record by read repair */
    uint64_t hints_stored;         /* versions kept here as hints for others */
    uint64_t replica_writes;       /* versions merged here for other coordinators */
    uint64_t replica_reads;        /* records read here for other coordinators */
    uint64_t not_mine;             /* replica reads and writes answered NOTMINE (above) */
    uint64_t hints_delivered;      /* hints delivered and deleted */
};

/*
 * A coordinator over kv (its local path) and store (replica merges and
 * hints), both borrowed until coord_destroy().  cfg and hooks are copied.
 * RK_ENOMEM.
 */
int coord_create(struct coord **out, struct kv *kv, struct store *store,
                 const struct coord_config *cfg, const struct coord_hooks *hooks);

/*
 * Free co.  Requests still waiting for peers are dropped without their
 * callbacks: call it after the peer connections closed (every request
 * ended) or when nothing will run the loop again.
 */
void coord_destroy(struct coord *co);

/*
 * Take a client's read (kv_get()'s r, filled in) when it needs the
 * cluster: false when the key is this node's alone (its preference list
 * is this node and the quorum is 1), and the caller reads locally.  True:
 * r->done runs exactly once, perhaps before this returns.
 */
bool coord_get(struct coord *co, struct kv_read *r);

/*
 * The same for a client's write (kv_write_init()'s w).  A conditional
 * write (kv_write_cond()) that needs the cluster is decided against a
 * quorum read and written with the merged record's context (coord.c,
 * "conditional writes"): not linearizable, as no consensus orders it
 * against conditional writes through other coordinators.
 */
bool coord_write(struct coord *co, struct kv_write *w);

/* Whether every write of ws[0..n) is of a key of this node alone (kv_write_atomic()). */
bool coord_all_local(struct coord *co, const struct kv_write *ws, size_t n);

/* Called with the answer of a served operation (borrowed for the call). */
typedef void (*coord_served_fn)(void *ctx, const struct msg_kv_answer *a);

/*
 * Serve a peer's MSG_OP_REPLICA_WRITE, MSG_OP_REPLICA_READ or
 * MSG_OP_FORWARD with its body (copied as needed).  answer_max: bytes the
 * answer's body may carry to that peer (what its frame-max leaves; 0: not
 * known), so that a record over it goes in parts the peer can read.  0:
 * done runs exactly once, perhaps before this returns.  RK_ESYNTAX for a
 * body that does not decode, RK_EINVAL for another op, RK_ENOMEM: done
 * never runs.
 */
int coord_serve(struct coord *co, uint32_t op, const uint8_t *body, size_t len, size_t answer_max,
                coord_served_fn done, void *ctx);

void coord_get_stats(const struct coord *co, struct coord_stats *st);

/*
 * One round of hinted handoff, from the node's timer: for every target
 * with hints that is up again, send up to COORD_HINTS_PER_ROUND of them
 * (oldest first, MSG_OP_REPLICA_WRITE); a hint is deleted only after its
 * replica acknowledged it durably, so a crash on either side re-sends it
 * and a duplicate merges as the same version.  A hint whose target left
 * the ring, or is no replica of its key under this node's rings (in force
 * or target: one that answered NOTMINE, above), goes to the key's
 * replicas in the ring in force instead, and is deleted once all of them
 * acknowledged.  A round starts only when the
 * last one's hints have all been answered.
 */
void coord_deliver_hints(struct coord *co);

/* Hint targets one round (or one reaper check) looks at, at most. */
#define COORD_HINT_TARGETS_MAX 64

/* The hint targets store_hint_targets() names, up to COORD_HINT_TARGETS_MAX. */
struct coord_targets {
    char id[COORD_HINT_TARGETS_MAX][RING_NAME_MAX + 1];
    size_t n;
};

/* store_hint_targets()'s callback filling a struct coord_targets (ctx): 1 (stop) once full. */
int coord_collect_target(void *ctx, const char *target, uint64_t count);

/* What one replica of a key holds, as coord_inspect() found it. */
struct coord_view {
    char id[RING_NAME_MAX + 1];
    enum preflist_role role;
    bool up;
    int status;            /* 0: record holds its record; RK_ENOTFOUND: none; else not answered */
    const uint8_t *record; /* borrowed for the callback */
    size_t record_len;
};
typedef void (*coord_inspect_fn)(void *ctx, const struct coord_view *v, size_t n);

/*
 * Ask every replica of key (the ring in force) for its record as stored,
 * this node's own copy included, without merging or repairing anything:
 * what `ringkv replicas` shows.  done runs once, when every replica
 * answered or failed (within request-timeout).  key is borrowed until
 * then.  RK_ENOMEM, RK_EEMPTY (no ring yet).
 */
int coord_inspect(struct coord *co, const uint8_t *key, size_t len, coord_inspect_fn done,
                  void *ctx);

/* Hints sent and not yet answered. */
uint64_t coord_hints_in_flight(const struct coord *co);

#endif
