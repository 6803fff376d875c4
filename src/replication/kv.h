/*
 * kv.h - the data operations the client port uses: read a key's versions,
 * write or delete keys, all asynchronously.
 *
 * On a single node (rf 1, or a ring of one) every key is local: a read
 * comes from the store, a write goes through the store's group-committing
 * writer and completes when its transaction has committed under the sync
 * setting.  Replication puts a coordinator behind these same calls, which
 * is why reads and writes both complete through a callback and a command
 * never waits on a disk or a peer.
 *
 * Batching.  Writes are not handed to the store one by one: kv_write()
 * queues, and kv_flush(), which the event loop calls once per iteration
 * before it sleeps, hands everything queued since to the store in one
 * submission (store_submit_list(), one lock and one wake-up of the
 * writer), so the writes parsed in one iteration, from every connection,
 * share a transaction; when they only append to the store's log and the
 * sync setting waits for no disk, kv_flush() runs them itself
 * (store_run_ready()) and their completions come with the next iteration.  Queued writes keep their
 * order, atomic groups included: the store applies them in the order they were queued.
 *
 * When operations complete.  On a single node a read completes within
 * kv_get() itself (its done runs before kv_get() returns, with the record
 * borrowed from the store, nothing copied); a write completes later, from
 * the event loop, when the store dispatches it.  A caller must handle
 * either for both (replication completes reads later too), which the test
 * mode below makes it do.
 *
 * The shuffle test mode (kv_create() with a non-zero seed) is a double of
 * a slow, reordering backend: every operation is deferred to kv_flush(),
 * which runs the deferred reads, the writes and the writes' completions in
 * an order drawn from the seed.  Writes still apply in the order they were
 * queued (a backend must keep one client's writes in order); everything
 * else may come in any order, so a caller that starts a read before an
 * earlier conflicting write completed, or a write before an earlier read
 * of its key completed, sees the wrong value.  Writes run synchronously
 * in this mode (store_wait()): it is for tests only.
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
struct kv_read;

typedef void (*kv_done_fn)(struct kv_write *w, void *ctx);
typedef void (*kv_read_fn)(struct kv_read *r, void *ctx);

/* One write in flight; the caller embeds it and owns it until done is called. */
struct kv_write {
    struct store_op op; /* private */
    kv_done_fn done;
    void *ctx;
    unsigned quorum; /* replicas that must acknowledge it; 0: the cluster's w */
    /* results, valid in done */
    int result;   /* 0, RK_EMISMATCH (stale context: a conflict), RK_ETOOBIG, RK_ENOSPC, ... */
    bool existed; /* a live value was replaced */
    /* a conditional write (kv_write_cond()): nothing written, as store_op's skipped, conflict */
    bool skipped, conflict;
    /* its quorum read failed (answered, needed: the read's, against r): nothing was written */
    bool read_failed;
    /* want_old: the value replaced (NULL: none), malloc'd; the caller frees it */
    uint8_t *old;
    size_t old_len;
    /* RK_ENOREPLICAS: replicas reachable, and how many were needed; RK_ETRYAGAIN: answered */
    unsigned answered, needed;
    /* private */
    struct kv_write *next_;
    size_t group_; /* on the first write of an atomic group: its size */
    int stage_;    /* shuffle mode: what the next event of it is */
    /* a group run one write after another (kv_write_atomic()): the next ones, the caller's done */
    struct kv *chain_kv_;
    size_t chain_left_;
    kv_done_fn chain_done_;
    void *chain_ctx_;
};

/* One read in flight; the caller embeds it and owns it until done is called. */
struct kv_read {
    kv_read_fn done;
    void *ctx;
    unsigned quorum; /* replicas that must answer; 0: the cluster's r (set after kv_get()'s
                        fill-in: kv_get() resets it, kv_get_quorum() sets it) */
    /* results, valid in done only */
    int result;            /* 0, RK_ENOTFOUND (never written, or collected), RK_ETOOBIG, ... */
    const uint8_t *record; /* the encoded record (record.h), borrowed for the call */
    size_t record_len;
    unsigned answered, needed; /* RK_ENOREPLICAS, RK_ETRYAGAIN: as kv_write's */
    /* private */
    const uint8_t *key_;
    size_t key_len_;
    struct kv_read *next_;
};

/*
 * The data operations over store (borrowed until kv_destroy()); RK_ENOMEM.
 * shuffle_seed 0 is the normal mode; any other value selects the shuffle
 * test mode above, seeded with it.
 */
int kv_create(struct kv **out, struct store *store, uint64_t shuffle_seed);

/* Free kv; call kv_flush() first so no write stays queued. */
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
 * Read key's record.  key is borrowed until done runs.  done is called
 * exactly once: within this call in the normal single-node mode, later
 * from kv_flush() in the shuffle mode (and through a coordinator).
 * Returns 0; the result is in r->result.
 */
int kv_get(struct kv *kv, struct kv_read *r, const void *key, size_t len, kv_read_fn done,
           void *ctx);

/* kv_get() with a read quorum of its own (0: the cluster's r). */
int kv_get_quorum(struct kv *kv, struct kv_read *r, const void *key, size_t len, unsigned quorum,
                  kv_read_fn done, void *ctx);

/*
 * Fill in a write (or, with tombstone, a delete) of key without queueing
 * it: for kv_write_atomic().  context names what the write supersedes
 * (NULL: everything this node has).  key, value and context are borrowed
 * until done runs.
 */
void kv_write_init(struct kv_write *w, const void *key, size_t len, const void *value,
                   size_t value_len, bool tombstone, const struct vclock *context, kv_done_fn done,
                   void *ctx);

/*
 * Make w (filled in by kv_write_init()) conditional before it starts:
 * written only when cond holds (store.h), and with want_old handing back
 * the value it replaces in w->old.  On a key of this node alone the store
 * decides it in the write's own transaction; under replication the
 * coordinator decides it against a quorum read (coord.h).
 */
void kv_write_cond(struct kv_write *w, enum store_cond cond, bool want_old);

/*
 * Give w, filled in by kv_write_init(), an expiry rule (store.h's enum
 * store_expiry) and time (ms since the epoch; 0: none), before it starts.
 * kv_write_init() leaves STORE_EXPIRY_SET with no expiry.  With
 * STORE_EXPIRY_TOUCH, w->existed says whether a version was written.
 */
void kv_write_expiry(struct kv_write *w, enum store_expiry expiry, uint64_t expire_ms);

/*
 * Whether w is decided on what its key holds: a condition or want_old
 * (kv_write_cond()), a delete with no context (DEL: it counts the live
 * value it deletes), an expiry change (STORE_EXPIRY_TOUCH).  On a key of
 * this node alone the store decides it in the write's transaction; under
 * replication the coordinator decides it against a quorum read and writes
 * with the merged record's context (coord.h), so a coordinator whose own
 * copy missed a write still supersedes it.
 */
bool kv_write_reads(const struct kv_write *w);

/*
 * Queue a write (kv_write_init()'s arguments) for the next kv_flush().
 * Returns 0, after which done is called exactly once from the event loop,
 * or at once RK_ETOOBIG for a key or value over the store's limits (and
 * done is never called).
 */
int kv_write(struct kv *kv, struct kv_write *w, const void *key, size_t len, const void *value,
             size_t value_len, bool tombstone, const struct vclock *context, kv_done_fn done,
             void *ctx);

/*
 * Start w, filled in by kv_write_init() (its quorum set as wanted), as
 * kv_write() does.
 */
int kv_write_start(struct kv *kv, struct kv_write *w);

/*
 * Queue ws[0..n), each filled in by kv_write_init(), as one atomic group
 * (store_submit_atomic()): all apply in one transaction or none does, and
 * then each completes with the failing error.  Returns 0, after which each
 * done is called once, or at once RK_ETOOBIG (a key or value over the
 * limits, or more writes than one transaction takes) and none is called.
 */
int kv_write_atomic(struct kv *kv, struct kv_write *ws, size_t n);
/*
 * With a coordinator, the group is atomic when every key is this node's
 * alone; otherwise each write is its own quorum write (per-key quorum, no
 * atomicity or isolation across keys, as Redis Cluster refuses keys of
 * different slots in one command).  Such a group with a write decided on
 * what its key holds (kv_write_reads()) runs one write after another, each
 * started when the one before completed, so it is decided on what the
 * writes before it left.
 */

/*
 * Hand every queued write to the store: plain writes in one store_queue()
 * list, each atomic group in its own, in queue order, then
 * store_run_ready() (the batch runs here, or the writer is woken).  A
 * submission the store refuses (RK_ECLOSED when it is closing) completes
 * its writes with that error, here.  In the shuffle mode, run every
 * deferred operation, in a shuffled order, until none is left.  From the
 * event loop, once per iteration (before it sleeps), and again while
 * kv_queued().
 */
void kv_flush(struct kv *kv);

/* Whether operations wait for kv_flush(): writes started since the last one (and in the
 * shuffle mode, deferred reads). */
bool kv_queued(const struct kv *kv);

/* --- for the coordinator (coord.h) ------------------------------------------------ */

struct coord;

/*
 * Put co (borrowed; NULL: none) behind kv_get() and kv_write(): a key
 * that needs the cluster goes to it, a key of this node alone stays on
 * the local path.
 */
void kv_set_coord(struct kv *kv, struct coord *co);

/* The local path: the store only, whatever the coordinator would do. */
void kv_local_get(struct kv *kv, struct kv_read *r);
/* Queue w (kv_write_init()'s) on the local path; done from the event loop. */
void kv_local_write(struct kv *kv, struct kv_write *w);

#endif
