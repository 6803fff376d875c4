/*
 * reaper.h - tombstone collection when a key has other replicas: a
 * tombstone past its grace is deleted only once every replica of the key's
 * preference list holds it and no member holds a hint of the key, so that
 * neither a replica that missed the delete nor a hint waiting for one can
 * bring the value back (Dynamo's deletes; Riak's delete_mode, Cassandra's
 * gc grace).
 *
 * Holding means holding: a replica that answers "no record" has not got
 * the tombstone (it joined the key's preference list after the delete, or
 * missed it), and its empty answer lets nothing go.  Collection is
 * therefore driven by one replica per key, the first of its preference
 * list (PREFLIST_PRIMARY in the ring in force), which collects its own
 * copy last.  Per tombstone the collector found (all of its siblings dead,
 * the newest older than tombstone-grace), on that first replica:
 *   1. every other replica answered a read of its record
 *      (MSG_OP_REPLICA_READ, as coord_inspect() asks), and each holds a
 *      record of tombstones only (values expired by this node's wall clock
 *      count as dead) whose version vector ours descends from.  A replica
 *      down or not answering within request-timeout keeps the key
 *      (kept_unanswered); one holding a value or a version this copy lacks
 *      keeps it (kept_live); one with no record keeps it (kept_missing)
 *      and is sent this tombstone (a MSG_OP_REPLICA_WRITE it merges, as a
 *      read repair), so that a later round finds it held;
 *   2. no member of the ring holds a hint of the key, for any target: this
 *      node reads its own hints, and asks every other member
 *      (MSG_OP_HINTS_HELD).  A hint may carry an older value that would
 *      come back once the tombstone is gone; a member that does not answer
 *      might hold one, and keeps the key too (kept_hints,
 *      kept_unanswered);
 *   3. every other replica is asked to delete its copy
 *      (MSG_OP_REPLICA_REAP with the record it answered): it deletes it
 *      only when it is still, byte for byte, that record and it holds no
 *      hint of the key itself;
 *   4. only when every other replica deleted its copy does this node
 *      delete its own, with a STORE_OP_DELETE_IF that compares and deletes
 *      inside the store's write transaction, so a version that arrived
 *      while the replicas were asked is never lost (kept_changed).
 * The other replicas never delete on their own (deferred).  When one of
 * them finds the first replica without the tombstone (no record, or
 * tombstones that do not descend its own), it sends it its copy, so a
 * first replica that never received the delete comes to hold it and to
 * collect it.
 *
 * A node that is no longer a replica of the key (the ring changed since
 * it took the tombstone) deletes its copy once every replica holds a
 * tombstone that descends it, and no member holds a hint of the key; until
 * then it gives its copy to a first replica without one, as above.
 *
 * Why this converges: only the first replica deletes, and its own copy
 * goes last, so while any replica still holds the tombstone the first one
 * does too.  When step 3 or 4 stops half way (a replica changed, or did
 * not answer), the replicas that deleted answer "no record" in the next
 * round and are sent the tombstone again (step 1); with every replica up
 * and no new write, the round after that deletes it everywhere.  A
 * version written meanwhile descends the tombstone and is kept, as is the
 * tombstone that a later round then finds.
 *
 * One batch of at most REAPER_BATCH_MAX keys at a time: every key's
 * replicas are asked at once, then every key's members, then its replicas
 * again, then the keys that passed are deleted together, then the
 * caller's done runs.  Everything runs on the node's loop; nothing blocks
 * in the store's writer.
 */
#ifndef RINGKV_REAPER_H
#define RINGKV_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "coord.h"
#include "msg_kv.h"
#include "store.h"

/* Keys one batch checks at most. */
#define REAPER_BATCH_MAX 32
/*
 * Hints of one replica looked at for a key at most (each decoded, on the
 * loop): a replica with a longer backlog counts as holding a hint of every
 * key, so its keys' tombstones wait until the backlog is delivered.
 */
#define REAPER_HINT_SCAN_MAX 256
/* Hint targets looked at for a key at most: more count as holding a hint of every key. */
#define REAPER_HINT_TARGETS_MAX COORD_HINT_TARGETS_MAX

/* A tombstone to check: the key and its record as read, encoded (record.h). */
struct reaper_key {
    const uint8_t *key;
    size_t key_len;
    const uint8_t *record;
    size_t record_len;
};

/* Counters for INFO and metrics. */
struct reaper_stats {
    uint64_t checked;         /* tombstones checked with their replicas */
    uint64_t collected;       /* deleted: every replica held them */
    uint64_t kept_unanswered; /* kept: a replica did not answer */
    uint64_t kept_live;       /* kept: a replica holds a value or a version this one lacks */
    uint64_t kept_hints;      /* kept: this node holds hints for the key */
    uint64_t kept_changed;    /* kept: written here or on a replica since it was read */
    uint64_t kept_missing;    /* kept: a replica had no record of it (and was sent it) */
    uint64_t deferred;        /* held everywhere: left to the key's first replica to collect */
    uint64_t given;           /* tombstones sent to a replica without them */
    uint64_t reaped;          /* deleted here at the first replica's request (REPLICA_REAP) */
};

struct reaper;

/* Called once per batch with the number of tombstones deleted. */
typedef void (*reaper_done_fn)(void *ctx, size_t collected);

/*
 * A reaper inspecting through co, asking members through hooks (copied;
 * its ask, ring) and deleting from store (co and store borrowed until
 * reaper_destroy()); self is this node's id (copied).  RK_ENOMEM.
 */
int reaper_create(struct reaper **out, struct coord *co, struct store *store,
                  const struct coord_hooks *hooks, const char *self);

/*
 * Check keys[0..n) (1 <= n <= REAPER_BATCH_MAX; borrowed until done runs)
 * and delete those the rule above allows.  0: done runs exactly once,
 * perhaps before this returns; RK_EINVAL for a bad n or a batch already
 * running.  A key whose record does not decode is kept.
 */
int reaper_check(struct reaper *rp, const struct reaper_key *keys, size_t n, reaper_done_fn done,
                 void *ctx);

/*
 * Stop: a batch in flight ends without deleting anything more and without
 * its done.  Call before the peer connections close at shutdown.
 */
void reaper_stop(struct reaper *rp);

/*
 * Free rp: after coord_destroy() (no inspection can answer any more) and
 * store_close() (no delete can complete any more).  NULL is ignored.
 */
void reaper_destroy(struct reaper *rp);

void reaper_get_stats(const struct reaper *rp, struct reaper_stats *st);

/*
 * How many hints store holds for target that carry key: 0, or RK_ETOOBIG
 * when target has more than max_scan hints (the key's are not all seen;
 * *count is a lower bound), or a store error.  One read transaction.
 */
int reaper_hints_for_key(struct store *store, const char *target, const uint8_t *key, size_t len,
                         size_t max_scan, uint64_t *count);

/*
 * Whether store holds a hint of key for any target (one submitted and not
 * yet stored included: store_hint_queued()), or cannot tell (more than
 * REAPER_HINT_TARGETS_MAX targets, more than REAPER_HINT_SCAN_MAX hints of
 * one, a read error): true in both cases.
 */
bool reaper_hint_held(struct store *store, const uint8_t *key, size_t len);

/* The answer to a served MSG_OP_REPLICA_REAP (flag: deleted). */
typedef void (*reaper_served_fn)(void *ctx, const struct msg_kv_answer *a);

/*
 * Serve MSG_OP_REPLICA_REAP (body: a REPLICA_WRITE body without hint):
 * delete the key when its record is byte for byte the one given, that
 * record is dead by this node's wall clock (tombstones, values expired) and
 * this node holds no hint of it.  0: done runs exactly once, perhaps before
 * this returns, with status ok and flag true when deleted; RK_ESYNTAX or
 * RK_ETOOBIG for a body that does not decode, RK_ENOMEM, a store error
 * (done never runs).
 */
int reaper_serve_reap(struct reaper *rp, const uint8_t *body, size_t len, reaper_served_fn done,
                      void *ctx);

/*
 * Serve MSG_OP_HINTS_HELD (body: a REPLICA_READ body): append the answer,
 * status ok and flag reaper_hint_held(), to out.  RK_ESYNTAX, RK_ETOOBIG,
 * RK_ENOMEM.
 */
int reaper_serve_hints(struct reaper *rp, const uint8_t *body, size_t len, struct buf *out);

#endif
