/*
 * store.h - a node's data directory: one LMDB environment holding the
 * data, the node's metadata, hints and handoff checkpoints.  The on-disk
 * layout is specified in the header comment of store.c.
 *
 * Reads run in the caller's thread, each in its own short LMDB read
 * transaction, and see every write acknowledged before they started:
 * LMDB's, and the newer records the write-ahead log holds (store.c).
 *
 * Writes are operations (struct store_op) that the caller fills in and
 * submits; a writer thread executes every operation queued since its last
 * batch as one batch made durable once (group commit): with `sync always`
 * many concurrent writes share one fsync.  A batch of writes (data writes
 * and handoff-table puts) is one record appended to the write-ahead log;
 * a checkpoint moves the log into LMDB later, in key order.  An operation
 * completes only after its transaction committed under the sync setting in
 * force, never before.  Completion is reported either
 *   - by store_wait(), for operations submitted with done == NULL (threads
 *     that block, tests, tools), or
 *   - by calling op->done from store_dispatch(), which the owner calls in
 *     its own thread when store_event_fd() becomes readable (the node's
 *     event loop watches that descriptor).
 * The caller owns the operation and everything it points to until it
 * completes: the store never allocates or frees an operation (libev's rule
 * for watchers).
 *
 * Failed flushes: when an fsync (`sync batch`) or a commit (EIO while the
 * file system has room; under `sync always` the commit is the fsync)
 * fails, the store logs it
 * (event=store_disk_failed), counts it, and from then on fails every write
 * with RK_EDISK while reads go on, until the process restarts: it never
 * retries an fsync and trusts the retry.
 *
 * Full disks: when LMDB's map fills, the store grows it (doubling) up to
 * map_max; at map_max, or when the file system itself is full (a write
 * cut short, which LMDB reports as EIO, included), writes fail with
 * RK_ENOSPC while reads go on, and writes succeed again as soon as there
 * is room (deleted pages are reused), without a restart.
 */
#ifndef RINGKV_STORE_H
#define RINGKV_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "ring.h"
#include "vclock.h"

/* LMDB's default maximum key is 511 bytes; 8 of them are the position. */
#define STORE_KEY_MAX 503
#define STORE_CLUSTER_ID_MAX 64
/* rf recorded when none is given: the node's default (Dynamo's N = 3). */
#define STORE_RF_DEFAULT 3

enum store_sync {
    STORE_SYNC_ALWAYS, /* fsync before a write completes; group commit */
    STORE_SYNC_BATCH,  /* fsync at least every batch_ms */
    STORE_SYNC_NONE,   /* leave flushing to the operating system */
};

struct store_config {
    const char *path;            /* data directory; created when missing */
    const char *node_id;         /* this node's id; recorded on first open */
    const uint8_t *cluster_id;   /* opaque cluster identity; recorded on first open */
    size_t cluster_id_len;       /* 1 .. STORE_CLUSTER_ID_MAX */
    uint8_t seed[RING_SEED_LEN]; /* ring seed: positions depend on it; recorded */
    uint32_t rf;                 /* the cluster's replication factor: recorded, checked */
    enum store_sync sync;
    uint32_t batch_ms;               /* STORE_SYNC_BATCH: the fsync interval */
    size_t map_initial;              /* bytes of LMDB map to start with */
    size_t map_max;                  /* the map grows up to this, then RK_ENOSPC */
    size_t batch_max;                /* operations in one batch (handoff: in one group) at most */
    size_t max_siblings;             /* sibling cap per key */
    enum record_conflicts conflicts; /* recorded, checked */
    size_t prune_keep;               /* vclock pruning (vclock.h) */
    uint64_t prune_min_age_ms;
    /* Wall clock in ms for HLC timestamps; NULL means CLOCK_REALTIME. */
    uint64_t (*wall_ms)(void *ctx);
    void *wall_ctx;
    /*
     * Tests only (NULL otherwise): called by store_dispatch() between
     * clearing the event descriptor and taking the completed operations,
     * so a test can complete operations in that gap.
     */
    void (*test_dispatch_gap)(void *ctx);
    /*
     * Tests only (0 otherwise): when set, the writer's idle checkpoint
     * waits this many ms of no work instead of 100; UINT64_MAX never, so a
     * test can look at the write-ahead log's contents without a race.
     */
    uint64_t test_idle_checkpoint_ms;
    /*
     * Tests only (NULL otherwise): called at every fsync (the batch
     * syncer's and close's before it, and after every commit under `sync
     * always`, whose commit is the fsync); a non-zero return, an errno
     * value, is taken as that fsync's failure.
     */
    int (*test_sync)(void *ctx);
    void *test_ctx;
};

/*
 * Defaults: sync always, batch_ms 10, map 64 MiB growing to 64 GiB,
 * batch_max 1024, max_siblings 100 (Riak's max_siblings), siblings mode,
 * pruning per vclock.h, the default ring seed, rf STORE_RF_DEFAULT.
 * path, node_id and cluster_id must still be set.
 */
void store_config_defaults(struct store_config *cfg);

struct store;

/*
 * The recorded metadata of a data directory as its meta table holds it
 * (layout in store.c): each value borrowed, p NULL when absent.
 */
struct store_meta_value {
    const uint8_t *p;
    size_t len;
};
struct store_meta {
    struct store_meta_value format, node_id, cluster_id, seed, rf, conflicts, hint_seq, hlc;
};
/* What store_meta_check() read out of accepted metadata. */
struct store_meta_found {
    bool record_cluster; /* rf and conflicts both absent: record them as configured */
    bool upgrade_format; /* format 1 (before the write-ahead log): record the current one */
    uint64_t hint_seq;
    bool has_hlc; /* a whole clock mark; otherwise the records are scanned */
    uint64_t hlc;
};

/*
 * Check recorded metadata against cfg, as store_open() does for a
 * directory created before: the format, node id, cluster id and cluster
 * settings must match (otherwise RK_EMISMATCH and err receives one
 * printable line naming the first difference), and hint_seq, when present,
 * must be 8 bytes.  Pure: no I/O.
 */
int store_meta_check(const struct store_meta *m, const struct store_config *cfg,
                     struct store_meta_found *found, char *err, size_t err_len);

/*
 * Open (creating when new) the store at cfg->path.  On a store created
 * before, the recorded format version, node id, cluster id and cluster
 * settings (ring seed, rf, conflicts) must match: otherwise RK_EMISMATCH,
 * and the directory is left as it was.  On any error, err (when not NULL)
 * receives one line naming the problem, e.g. "data directory /d belongs to
 * node 'n1', not 'n2'", "data directory /d was formed with rf 3; rf is
 * 2".  cfg is copied.
 */
int store_open(struct store **out, const struct store_config *cfg, char *err, size_t err_len);

/*
 * The id this store's writes count under in vector clocks (STORE_OP_WRITE;
 * record_write_local()): one per life of the data directory, recorded in
 * it (store.c, meta actor), so a node whose directory was wiped never hands
 * out a (clock id, counter) pair it handed out before.  Valid until
 * store_close(); the node id stays the versions' node field.
 */
const char *store_actor(const struct store *s);

/*
 * Stop accepting operations (later submits fail with RK_ECLOSED), let the
 * writer finish everything already queued, sync, and close LMDB.
 * Completions not yet dispatched are dispatched first.
 */
void store_close(struct store *s);

/* --- reads ---------------------------------------------------------- */

/* The position of key in this store's ring: H(seed, key). */
uint64_t store_position(const struct store *s, const void *key, size_t len);

/*
 * The record of key, decoded into out (emptied first; the caller owns it).
 * RK_ENOTFOUND when absent, RK_ETOOBIG for a key over STORE_KEY_MAX,
 * RK_ESYNTAX when the stored record does not decode (logged data damage).
 */
int store_get(struct store *s, const void *key, size_t len, struct record *out);

/*
 * Call fn with key's stored record, encoded (record.h), inside a read
 * transaction: the bytes are valid during the call only, and nothing is
 * copied or decoded unless fn does it (record_peek() looks inside without
 * either).  Returns fn's result, RK_ENOTFOUND when the key is absent, or
 * RK_ETOOBIG for a key over STORE_KEY_MAX.
 */
int store_read(struct store *s, const void *key, size_t len,
               int (*fn)(void *ctx, const uint8_t *record, size_t record_len), void *ctx);

/*
 * Hold one read snapshot for this thread's reads of s until the matching
 * store_read_release(): store_get() and store_read() calls in between use
 * it instead of each starting a read transaction.  For a batch of reads
 * served together (a pipeline); the snapshot includes every write
 * completed before the hold, and none after: while any thread holds one,
 * no batch of writes completes (publishing a batch waits for holds to
 * end), so hold it briefly, and never wait for a write (store_wait())
 * while holding.  Holds nest.  Returns 0 or an error, after which reads
 * go on unheld.
 */
int store_read_hold(struct store *s);
void store_read_release(struct store *s);

/* A resumable position in a scan: where the previous call stopped. */
struct store_cursor {
    uint8_t last[8 + STORE_KEY_MAX]; /* the last LMDB key visited */
    size_t last_len;
    bool started;
    bool done; /* the range is exhausted */
};
void store_cursor_init(struct store_cursor *c);

/* One key of a scan; every pointer is valid only during the callback. */
struct store_item {
    uint64_t pos;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *record; /* encoded, record.h layout */
    size_t record_len;
};

/* Called per key; a non-zero return stops the scan and is returned by it. */
typedef int (*store_scan_fn)(void *ctx, const struct store_item *item);

/*
 * Visit the keys whose positions lie on the arc (start, end], in position
 * order, beginning after the cursor: the arc wraps past 2^64-1 when
 * start >= end, and start == end is the whole circle.  At most max_items
 * keys and about max_bytes of record bytes per call (0: no bound), in one
 * read transaction; the cursor then says where to resume, and cur->done
 * when the arc is exhausted.  Returns 0, a callback's non-zero value, or
 * an error.
 */
int store_scan(struct store *s, uint64_t start, uint64_t end, struct store_cursor *cur,
               size_t max_items, size_t max_bytes, store_scan_fn fn, void *ctx);

/* Keys and stored bytes (key plus record) on the arc (start, end]. */
int store_arc_stats(struct store *s, uint64_t start, uint64_t end, uint64_t *keys, uint64_t *bytes);

#define STORE_DIGEST_LEN 32
#define STORE_DIGEST_PARTS_MAX 64

/*
 * Digests of the content of the arc (start, end] (store_scan()'s arc: it
 * wraps when start >= end, start == end is the whole circle), split into
 * parts (1 .. STORE_DIGEST_PARTS_MAX) sub-arcs, so two replicas of an arc
 * can compare it and find the parts that differ.  Reads as store_scan():
 * LMDB and the write-ahead log's newer records.
 *
 * Sub-arc boundaries, which two nodes must cut identically: let L be the
 * arc's length in positions, (end - start) mod 2^64, or 2^64 when that is
 * 0 (the whole circle), and b(i) = (start + floor(i * L / parts)) mod 2^64
 * for i = 0 .. parts, computed exactly (128-bit).  Sub-arc i is
 * (b(i), b(i + 1)]: the positions p whose offset d = (p - start) mod 2^64
 * (d = 2^64 when p == start on the whole circle) satisfies
 * floor(i * L / parts) < d <= floor((i + 1) * L / parts).  When L <
 * parts some sub-arcs are empty.
 *
 * out[i] is the BLAKE2b-256 (crypto_generichash, no key) of the keys of
 * sub-arc i in position order (key bytes as the tie-break), each as
 *   u64 position, u32 key_len, key bytes, then the record's canonical
 *   form (record_canonical(): u32 sibling count, then each sibling as u32
 *   length and its record.h encoding, in order of those encodings),
 * integers big-endian, so stores holding the same siblings in any order
 * agree.  An empty sub-arc's digest is that of zero bytes.  *keys (keys
 * may be NULL) receives the keys counted over the whole arc.  Each chunk
 * of keys is read in its own read transaction, as store_arc_stats() does:
 * under concurrent writes the digest mixes moments.  Returns 0, RK_EINVAL
 * for parts outside 1 .. STORE_DIGEST_PARTS_MAX, RK_ESYNTAX for a stored
 * record that does not decode, RK_ENOMEM or a read error; out is then
 * undefined.
 */
int store_arc_digest(struct store *s, uint64_t start, uint64_t end, unsigned parts,
                     uint8_t (*out)[STORE_DIGEST_LEN], uint64_t *keys);

/*
 * A value of the metadata or handoff table (see store.c); RK_ENOTFOUND.
 * A handoff value set or deleted by a completed STORE_OP_TABLE_PUT is seen
 * at once, whether the write-ahead log or LMDB holds it.
 */
enum store_table {
    STORE_TABLE_META,
    STORE_TABLE_HANDOFF,
};
int store_table_get(struct store *s, enum store_table t, const void *key, size_t key_len, void *buf,
                    size_t cap, size_t *len);

/* One hint: a version kept for a replica that was unreachable. */
struct store_hint {
    uint64_t seq;       /* per-store sequence, the order hints were taken */
    const char *target; /* the replica it is for */
    uint64_t pos;
    const uint8_t *key; /* valid during the callback only */
    size_t key_len;
    struct sibling version; /* decoded; valid during the callback only */
};
typedef int (*store_hint_fn)(void *ctx, const struct store_hint *hint);

/*
 * Parse one stored hint value (the hints layout in store.c) into h: the
 * target id is copied into target (h->target points at it), h->key points
 * into v, and h->version (initialised by the caller) is decoded and owned
 * by the caller.  h->seq is left alone (it is in the key).  RK_ESYNTAX for
 * anything that is not exactly one well-formed value: a bad target id, a
 * key over STORE_KEY_MAX, a truncated or trailing sibling.  v is borrowed.
 */
int store_hint_parse(const uint8_t *v, size_t len, struct store_hint *h,
                     char target[RING_NAME_MAX + 1]);

/*
 * Visit the hints kept for target, oldest first, after the cursor, at most
 * max_items per call (0: no bound).  Returns 0, a callback's non-zero
 * value, or an error.
 */
int store_hint_scan(struct store *s, const char *target, struct store_cursor *cur, size_t max_items,
                    store_hint_fn fn, void *ctx);

/*
 * Whether a hint of key is submitted (store_submit(), store_queue()) and
 * not yet stored: queued, or in the batch being committed.  Such a hint is
 * not in the hints table yet, so store_hint_scan() does not see it.
 */
bool store_hint_queued(struct store *s, const uint8_t *key, size_t len);

typedef int (*store_hint_target_fn)(void *ctx, const char *target, uint64_t count);

/*
 * Call fn with every target that has hints and how many it has, in tag
 * order, in one read transaction (a walk of the whole hints table: for
 * delivery rounds and diagnostics).  Returns 0, fn's non-zero value, or an
 * error.
 */
int store_hint_targets(struct store *s, store_hint_target_fn fn, void *ctx);

struct store_stats {
    uint64_t keys; /* entries in the data table */
    /*
     * Of those, records whose siblings are all tombstones
     * (record_all_tombstones()); keys - tombstones are the live keys (an
     * expired value not collected yet counts as live).  Exact: counted at
     * open (a walk of LMDB peeking at each record, and the log's replay),
     * then moved by each batch as it becomes durable; read beside keys,
     * it may trail keys by the one batch committing to LMDB meanwhile.
     */
    uint64_t tombstones;
    uint64_t hints;         /* entries in the hints table */
    uint64_t map_size;      /* bytes of the LMDB map now */
    uint64_t map_used;      /* bytes of pages in use */
    uint64_t commits;       /* batches made durable: logged or committed to LMDB */
    uint64_t syncs;         /* fsyncs issued */
    uint64_t ops;           /* operations completed */
    uint64_t ops_failed;    /* operations completed with an error */
    uint64_t enospc;        /* operations refused for lack of space */
    uint64_t map_grows;     /* times the map was grown */
    uint64_t map_full_runs; /* batches and checkpoints run again after filling the map */
    uint64_t decode_errors; /* stored records that failed to decode */
    uint64_t recent_batch;  /* the commit delay's decaying estimate of the batch size */
    uint64_t disk_failures; /* flushes (fsyncs, commits) that failed */
    bool disk_failed;       /* writes refused with RK_EDISK until a restart */
    uint64_t checkpoints;   /* times the write-ahead log was moved into LMDB */
    uint64_t logged;        /* batches that went to the write-ahead log */
    uint64_t overlay_keys;  /* keys the log holds that LMDB does not have yet */
    uint64_t wal_bytes;     /* bytes of the write-ahead log now */
    uint64_t checkpoint_ms; /* time spent in checkpoints (ms, wall clock) */
};
void store_get_stats(struct store *s, struct store_stats *st);

/* --- writes ------------------------------------------------------------- */

enum store_op_type {
    /* A write this node coordinates: record_write_local() on the key. */
    STORE_OP_WRITE,
    /* A replicated version: record_apply() on the key. */
    STORE_OP_APPLY,
    /* Delete up to `limit` keys of the arc (start, end] from the cursor. */
    STORE_OP_DELETE_RANGE,
    /*
     * Collect tombstones on the arc (start, end] from the cursor, looking
     * at up to `limit` keys: a record whose siblings are all tombstones or
     * expired values, the newest write and the latest expiry older than
     * grace_ms by the store's clock, and for which
     * op->collect (when not NULL) returns true, is deleted.
     */
    STORE_OP_COLLECT,
    /* Keep `version` of key as a hint for replica `target`. */
    STORE_OP_HINT_PUT,
    /* Drop the hint `seq` of `target`. */
    STORE_OP_HINT_DELETE,
    /* Set (value != NULL) or delete a key of a table (store_table_get()). */
    STORE_OP_TABLE_PUT,
    /*
     * Delete key only when its stored record is still exactly `value` (the
     * encoded record a read returned, record.h); changed says whether it
     * was.  The comparison and the delete happen in the writer's
     * transaction, so a version that arrived after the read is never lost.
     */
    STORE_OP_DELETE_IF,
    /*
     * A whole record of key from another store (handoff): `value` is one
     * encoded record (record.h, as store_scan() hands it out).  In the
     * writer's transaction it is decoded (RK_ESYNTAX when it does not
     * decode, nothing written) and each of its siblings is merged into the
     * key's record as STORE_OP_APPLY merges one version (record_apply()
     * under the store's conflicts mode and max_siblings), all in one
     * read-modify-write of the key, stored only when it changed (changed).
     * A merge refused (RK_ETOOBIG over max_siblings, RK_ECLOCKFULL) leaves
     * the key as it was and fails the operation with that error.  Each
     * sibling's stamp reaches the clock as an APPLY's does.  Like APPLY it
     * goes to the write-ahead log (whole records), so reads see it as soon
     * as it completes and a crash replays it.
     */
    STORE_OP_APPLY_RECORD,
};

/*
 * The condition of a STORE_OP_WRITE, checked against the key's record in
 * the write's own transaction: a key is present when it holds a live
 * version (neither a tombstone nor expired by the store's wall clock),
 * siblings included.
 */
enum store_cond {
    STORE_COND_NONE,    /* write whatever the key holds */
    STORE_COND_ABSENT,  /* write only when the key is not present (SET NX) */
    STORE_COND_PRESENT, /* write only when the key is present (SET XX, GETDEL) */
};

/*
 * How a WRITE chooses the new version's expiry (record.h: an absolute
 * wall-clock time in ms since the epoch, 0 for none).  "Live" is judged by
 * the store's wall clock when the write runs.
 */
enum store_expiry {
    /* the new version expires at expire_ms (0: never): SET, SET ... EX */
    STORE_EXPIRY_SET,
    /*
     * the new value keeps the expiry of the one live value it replaces
     * (none when the key has no live value, or several): SET ... KEEPTTL
     */
    STORE_EXPIRY_KEEP,
    /*
     * the key's one live value, written again as a new version that expires
     * at expire_ms (0: never), or a tombstone when expire_ms has passed:
     * EXPIRE, PERSIST.  No live value, or (expire_ms 0) a live value without
     * an expiry: nothing is written (changed and existed false, result 0); siblings:
     * RK_EMISMATCH.  value and tombstone are ignored.
     */
    STORE_EXPIRY_TOUCH,
};

struct store_op;
typedef void (*store_done_fn)(struct store_op *op, void *ctx);
/*
 * The collection predicate of STORE_OP_COLLECT, called in the writer
 * thread with the key, its position and its decoded record.
 */
typedef bool (*store_collect_fn)(void *ctx, uint64_t pos, const uint8_t *key, size_t key_len,
                                 const struct record *r);

struct store_op {
    enum store_op_type type;
    /* inputs (borrowed until completion) */
    const uint8_t *key;
    size_t key_len;
    /*
     * WRITE, TABLE_PUT (NULL deletes), DELETE_IF (the record expected),
     * APPLY_RECORD (the encoded record to merge)
     */
    const uint8_t *value;
    size_t value_len;
    bool tombstone;               /* WRITE: a delete */
    const struct vclock *context; /* WRITE: what it supersedes; NULL = all */
    bool skip_written;            /* WRITE: leave written empty (spares a copy of the version) */
    enum store_cond cond;         /* WRITE: skipped (nothing written) when it does not hold */
    /*
     * WRITE: hand back the value the write replaces (old).  A key with
     * siblings has no single value to hand back: the write is then skipped
     * and `conflict` set, as a plain read of it is refused.
     */
    bool want_old;
    enum store_expiry expiry;      /* WRITE: how the version's expiry is chosen */
    uint64_t expire_ms;            /* WRITE: the expiry it uses (ms since the epoch; 0: none) */
    const struct sibling *version; /* APPLY, HINT_PUT */
    const char *target;            /* HINT_PUT, HINT_DELETE */
    uint64_t seq;                  /* HINT_DELETE */
    enum store_table table;        /* TABLE_PUT */
    uint64_t start, end;           /* DELETE_RANGE, COLLECT */
    struct store_cursor *cursor;   /* DELETE_RANGE, COLLECT: updated */
    size_t limit;                  /* DELETE_RANGE, COLLECT: keys per operation */
    uint64_t grace_ms;             /* COLLECT */
    store_collect_fn collect;      /* COLLECT, may be NULL */
    void *collect_ctx;
    /* completion */
    store_done_fn done; /* NULL: the submitter calls store_wait() */
    void *ctx;
    /* results, valid after completion */
    int result;
    struct sibling written; /* WRITE: the version created; the caller deinits it */
    bool changed;           /* APPLY, APPLY_RECORD: the stored record changed; DELETE_IF: the
                               key was deleted; WRITE: a version was written */
    bool existed;           /* WRITE: the key had a live value (neither tombstone nor expired);
                               TOUCH: a version was written (as changed) */
    bool skipped;           /* WRITE: cond did not hold, or conflict: nothing was written */
    bool conflict;          /* WRITE with want_old: the key held siblings (more than one) */
    /*
     * WRITE with want_old: a copy of the live value before (malloc'd,
     * old_len bytes, at least one allocated), NULL when the key was not
     * present; the caller frees it.
     */
    uint8_t *old;
    size_t old_len;
    size_t count; /* DELETE_RANGE, COLLECT: keys deleted */
    size_t kept;  /* COLLECT: records of tombstones only it looked at and left */
    /* private to the store */
    struct store_op *next_;
    bool finished_;
    pthread_cond_t *wake_; /* the condition its waiter sleeps on */
    size_t group_;         /* on the first of an atomic group: its size; else 0 */
};

/* Zero op and make it ready to fill in. */
void store_op_init(struct store_op *op, enum store_op_type type);

/*
 * Queue op for the writer.  Returns 0, or at once: RK_ECLOSED when the
 * store is closing, RK_ETOOBIG for a key over STORE_KEY_MAX, RK_EINVAL
 * for a malformed operation.  From any thread.
 *
 * An operation with done == NULL runs when its submitter calls
 * store_wait() (the waiting thread runs the batch itself when no other
 * thread is writing) or rides a batch that another thread runs: submit and
 * then wait, without blocking on anything else in between.  Operations with
 * a done callback are run by the store's writer thread.
 */
int store_submit(struct store *s, struct store_op *op);

/*
 * Queue ops[0..n) in this order, as n store_submit() calls would, but under
 * one lock and with one wake-up of the writer: a pipeline's writes handed
 * over together share a transaction instead of waking the writer once
 * each.  Every operation is checked first; on an error (store_submit()'s)
 * none is queued.
 */
int store_submit_list(struct store *s, struct store_op **ops, size_t n);

/*
 * Queue ops[0..n) as one atomic group: they run in order in one
 * transaction, never split across batches (nor when a transaction grows
 * too large), and either all apply or none does: when one fails, every
 * one of them completes with that error.  store_submit()'s errors, and
 * RK_ETOOBIG for more than batch_max operations, RK_EINVAL for a range
 * operation (DELETE_RANGE, COLLECT: their cursors cannot be undone).
 */
int store_submit_atomic(struct store *s, struct store_op **ops, size_t n);

/*
 * Queue ops[0..n) as store_submit_list() does (atomic: as
 * store_submit_atomic()), without waking the writer thread: the caller
 * runs store_run_ready() before its thread sleeps (the event loop's
 * prepare step), which runs them in that thread or wakes the writer.  So
 * the writes one event-loop iteration gathers from clients and peers share
 * one batch, and the writer thread is not woken for a batch the loop runs
 * itself.  Operations complete by callback (done set).
 */
int store_queue(struct store *s, struct store_op **ops, size_t n, bool atomic);

/*
 * Operations in one batch at most (batch_max): the bound of an atomic group.
 * Handoff groups queued together (with other operations between them)
 * may share one transaction (store.c).
 */
size_t store_batch_max(const struct store *s);

/*
 * Run the queued writes in the calling thread when that costs no wait:
 * nobody else holds the writer role, every queued operation can go to the
 * write-ahead log, and the sync setting does not fsync before completing
 * (`batch`, `none`).  Their callbacks then wait for store_dispatch(), which
 * the caller may call right after.  Spares the hand-off to the writer
 * thread and back (two wake-ups) for a batch that takes a few
 * microseconds; anything else (a checkpoint, `sync always`) stays with the
 * writer thread, which this call wakes when work is left queued (what
 * store_queue() queued included).  Not while this thread holds a read of s
 * (then it only wakes the writer).
 */
void store_run_ready(struct store *s);

/* Block until op (submitted with done == NULL) completes; returns op->result. */
int store_wait(struct store *s, struct store_op *op);

/* A descriptor that is readable while completions wait for store_dispatch(). */
int store_event_fd(const struct store *s);

/* Call the done callback of every completed operation; in the owner's thread. */
void store_dispatch(struct store *s);

/* Submit and wait: a write (WRITE or, with tombstone, a delete). */
int store_write(struct store *s, const void *key, size_t len, const void *value, size_t value_len,
                bool tombstone, const struct vclock *context, struct sibling *written);
/* Submit and wait: apply a replicated version. */
int store_apply(struct store *s, const void *key, size_t len, const struct sibling *v,
                bool *changed);
/*
 * Submit and wait: merge the encoded record rec[0..rec_len) (record.h) into
 * key's (STORE_OP_APPLY_RECORD).  *changed (when not NULL) says whether the
 * stored record changed.  key and rec are borrowed for the call.
 */
int store_apply_record(struct store *s, const void *key, size_t len, const uint8_t *rec,
                       size_t rec_len, bool *changed);

#endif
