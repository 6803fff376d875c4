/*
 * kv.h - the data operations the client port uses: read a key's versions,
 * write or delete a key, asynchronously.
 *
 * On a single node (rf 1, or a ring of one) every key is local: a read
 * comes from the store, a write goes through the store's group-committing
 * writer and completes when its transaction has committed under the sync
 * setting.  Replication puts a coordinator behind these same calls, which
 * is why writes are asynchronous and completions come back to the event
 * loop: a command never waits on a disk or a peer.
 *
 * kv knows the store (later the coordinator), never the node: the node
 * creates one struct kv over its store and its client connections reach
 * the data only through it, read snapshots included (kv_read_hold()).
 */
#ifndef RINGKV_KV_H
#define RINGKV_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "store.h"
#include "vclock.h"

struct kv;
struct kv_write;

typedef void (*kv_done_fn)(struct kv_write *w, void *ctx);

/* One write in flight; the caller embeds it and owns it until done is called. */
struct kv_write {
    struct store_op op; /* private */
    kv_done_fn done;
    void *ctx;
    /* results, valid in done */
    int result;   /* 0, RK_EMISMATCH (stale context: a conflict), RK_ETOOBIG, RK_ENOSPC, ... */
    bool existed; /* a live value was replaced */
};

/* The data operations over store (borrowed until kv_destroy()); RK_ENOMEM. */
int kv_create(struct kv **out, struct store *store);
void kv_destroy(struct kv *kv);

/*
 * Hold one read snapshot for the reads that follow until the matching
 * kv_read_release(): a pipeline of commands started together reads one
 * state, which includes every write completed before the hold and none
 * after (store_read_hold()).  Holds nest.  Returns 0 or an error, after
 * which reads go on unheld (each reads the latest state).
 */
int kv_read_hold(struct kv *kv);
void kv_read_release(struct kv *kv);

/*
 * Read the record of key into out (emptied first; the caller owns it).
 * RK_ENOTFOUND when the key was never written or its tombstones were
 * collected.
 */
int kv_read(struct kv *kv, const void *key, size_t len, struct record *out);

/*
 * Call fn with key's encoded record, borrowed for the call only: the read
 * path that copies nothing it does not need (store_read()).  RK_ENOTFOUND
 * when absent.
 */
int kv_read_raw(struct kv *kv, const void *key, size_t len,
                int (*fn)(void *ctx, const uint8_t *record, size_t record_len), void *ctx);

/*
 * Start a write (or, with tombstone, a delete) of key.  context names what
 * the write supersedes (NULL: everything this node has).  key, value and
 * context are borrowed until done runs.  Returns 0, after which done is
 * called exactly once from the event loop, or an error at once (and done
 * is never called): RK_ECLOSED when the node is stopping.
 */
int kv_write(struct kv *kv, struct kv_write *w, const void *key, size_t len, const void *value,
             size_t value_len, bool tombstone, const struct vclock *context, kv_done_fn done,
             void *ctx);

#endif
