/*
 * reaper.h - tombstone collection when a key has other replicas: a
 * tombstone past its grace is deleted here only once every replica of the
 * key's preference list holds it, so that a replica that missed the delete
 * cannot bring the value back (Dynamo's deletes; Cassandra's gc grace).
 *
 * The rule, per tombstone the collector found (all of its siblings are
 * tombstones, the newest older than tombstone-grace):
 *   - every other replica of the key (the ring in force, rf) answered a
 *     read of its record (MSG_OP_REPLICA_READ, as coord_inspect() asks),
 *     and each answer is either no record or a record of tombstones only
 *     whose version vector ours descends from (nothing live, nothing this
 *     copy has not seen).  A replica that is down or does not answer
 *     within request-timeout keeps the tombstone until a later round;
 *   - this node holds no hint for the key for any of those replicas (a
 *     hint may carry an older value that would come back after the
 *     delete).  Hints held by other nodes are not seen from here: a
 *     fallback's hint outliving tombstone-grace can still bring a value
 *     back to its target, so the grace must exceed the time a replica
 *     stays down with hints waiting for it (Cassandra's
 *     max_hint_window < gc_grace_seconds);
 *   - the local record is still, byte for byte, the one the collector
 *     read: the delete is a STORE_OP_DELETE_IF, which compares and deletes
 *     inside the store's write transaction, so a version that arrived
 *     while the replicas were asked is never lost.
 * A replica that deleted its own copy already answers "no record"; one
 * that holds a newer tombstone keeps this one until it has collected its
 * own, after which this one goes too.
 *
 * One batch of at most REAPER_BATCH_MAX keys at a time: every key's
 * replicas are asked at once, then the keys that passed are deleted
 * together, then the caller's done runs.  Everything runs on the node's
 * loop; nothing blocks in the store's writer.
 */
#ifndef RINGKV_REAPER_H
#define RINGKV_REAPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coord.h"
#include "store.h"

/* Keys one batch checks at most. */
#define REAPER_BATCH_MAX 32
/*
 * Hints of one replica looked at for a key at most (each decoded, on the
 * loop): a replica with a longer backlog counts as holding a hint of every
 * key, so its keys' tombstones wait until the backlog is delivered.
 */
#define REAPER_HINT_SCAN_MAX 256

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
    uint64_t kept_changed;    /* kept: written here since it was read */
};

struct reaper;

/* Called once per batch with the number of tombstones deleted. */
typedef void (*reaper_done_fn)(void *ctx, size_t collected);

/*
 * A reaper asking through co and deleting from store (both borrowed until
 * reaper_destroy()); self is this node's id (copied).  RK_ENOMEM.
 */
int reaper_create(struct reaper **out, struct coord *co, struct store *store, const char *self);

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

#endif
