/*
 * collect.h - local tombstone collection: a timer of the node's event loop
 * that walks the whole ring of its store in bounded steps (STORE_OP_COLLECT)
 * and deletes records whose siblings are all tombstones older than the
 * grace period (`tombstone-grace`).
 *
 * A tombstone may be collected only once every replica of its key holds
 * it; otherwise a replica that missed the delete would bring the value
 * back.  Two ways, chosen before every step by the caller's predicate
 * (allowed), asked on the loop:
 *   - yes (a single-node cluster: one member, or rf 1, where this copy is
 *     the only one): the step is one STORE_OP_COLLECT in the store's
 *     writer, which deletes every tombstone past its grace;
 *   - no: when a reaper was given (reaper.h), the step reads its keys
 *     (store_scan(), on the loop), hands the tombstones past their grace,
 *     REAPER_BATCH_MAX at most, to the reaper, which asks their other
 *     replicas and deletes those every replica holds; the next step starts
 *     when it is done.  Without a reaper nothing is collected.
 *
 * Each pass also counts the tombstones it leaves (collect_tombstones()):
 * the figure INFO shows, as of the last whole pass.
 */
#ifndef RINGKV_COLLECT_H
#define RINGKV_COLLECT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "reaper.h"
#include "store.h"

/* May tombstones be collected now?  Called on the loop before each step. */
typedef bool (*collect_allowed_fn)(void *ctx);

struct collect;

/*
 * A collector over store, on loop, for tombstones older than grace_ms.
 * Nothing runs until collect_start().  RK_ENOMEM.  store, loop, reaper
 * (NULL: collect only while allowed says yes) and ctx are borrowed and
 * must outlive the collector.
 */
int collect_create(struct collect **out, struct ev_loop *loop, struct store *store,
                   uint64_t grace_ms, collect_allowed_fn allowed, struct reaper *reaper, void *ctx);

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

/*
 * Records of tombstones only that the last whole pass left in the store
 * (within their grace, or waiting for a replica); the pass under way's
 * running count until one pass has finished.
 */
uint64_t collect_tombstones(const struct collect *c);

#endif
