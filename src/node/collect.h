/*
 * collect.h - local tombstone collection: a timer of the node's event loop
 * that walks the whole ring of its store in bounded steps (STORE_OP_COLLECT)
 * and deletes records whose siblings are all tombstones older than the
 * grace period (`tombstone-grace`).
 *
 * A tombstone may be collected only once every replica of its key holds
 * it; otherwise a replica that missed the delete would bring the value
 * back.  That is the caller's predicate (allowed): asked on the loop before
 * every step, a step runs only when it says yes.  Today the node answers
 * yes on a single-node cluster (one member, or rf 1), where this copy is
 * the only one.
 */
#ifndef RINGKV_COLLECT_H
#define RINGKV_COLLECT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

/* May tombstones be collected now?  Called on the loop before each step. */
typedef bool (*collect_allowed_fn)(void *ctx);

struct collect;

/*
 * A collector over store, on loop, for tombstones older than grace_ms.
 * Nothing runs until collect_start().  RK_ENOMEM.  store, loop and ctx are
 * borrowed and must outlive the collector.
 */
int collect_create(struct collect **out, struct ev_loop *loop, struct store *store,
                   uint64_t grace_ms, collect_allowed_fn allowed, void *ctx);

/* Start the timer: the first pass begins at once. */
void collect_start(struct collect *c);

/*
 * Stop the timer; a step still in the store completes later without
 * starting another.  Call before store_close(), and collect_destroy() after
 * it, since the store owns a step in flight until it completes.
 */
void collect_stop(struct collect *c);
void collect_destroy(struct collect *c);

/* Tombstones this collector deleted, and passes over the whole ring it finished. */
uint64_t collect_count(const struct collect *c);
uint64_t collect_passes(const struct collect *c);

#endif
