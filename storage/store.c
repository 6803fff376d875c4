/*
 * store.c - the LMDB store of one node: layout, identity, reads, arc scans
 * and the group-committing writer.
 *
 * On-disk layout, format 2
 * ------------------------
 * A data directory holds one LMDB environment (data.mdb, lock.mdb), the
 * write-ahead log `wal` (its layout in wal.c) and a file LOCK.  The directory must be owned by the
 * user the node runs as and writable by nobody else (no group or other write bit), or it is
 * refused. LOCK is held with flock() by the one process that has the store open, and holds that
 * process's pid as text, so a second process is refused instead of sharing the environment; it and
 * `wal` are opened without following a symbolic link (a link is refused) and must be regular files
 * with no other name (a hard link would be truncated).  The environment
 * is opened without MDB_WRITEMAP, so a full disk is an error from a write
 * call, never a SIGBUS, and with MDB_NOMETASYNC (MDB_NOSYNC under `sync
 * none`): a commit syncs its pages, and its meta page is synced where a
 * write's promise needs it (store_commit()).
 * MDB_WRITEMAP would save the pwrite() of each dirty page at commit, but
 * every flush write-protects the pages it wrote, so the next store into
 * each takes a page fault, and on a virtual machine the write-protection
 * costs a TLB shootdown across CPUs: with the flush every 10 ms of `sync
 * batch`, raw LMDB doing random 350-put transactions measured 31 K puts/s
 * with MDB_WRITEMAP against 194 K/s with pwrite() (tests/bench/bench_lmdb
 * writemap-batch10 and batch10, one run of tests/bench/bench_node.sh).
 * Named databases:
 *
 *   data     key   u64 position (big-endian) || key bytes (0..503 bytes)
 *            value a record, record.h format 1; a sibling with an
 *                  expiry sets sflags bit 1 and carries its u64 expiry
 *                  (record.h), one without is laid out as before expiry
 *                  existed, so records written earlier read unchanged.
 *                  An expired value stays stored until collection
 *                  (STORE_OP_COLLECT) deletes it like a tombstone.
 *            Position order makes every arc of the ring one or two
 *            contiguous cursor ranges.
 *
 *   meta     key   a name in ASCII; value per name:
 *            format      u32  2.  A directory of format 1 (the same without
 *                        the log and wal_gen) is recorded as 2 at its
 *                        first open, so a build of format 1, which would
 *                        not read the log, refuses it from then on; any
 *                        other value is refused at open
 *            node_id     the node id the directory belongs to
 *            cluster_id  opaque cluster identity (1..64 bytes)
 *            seed        16 bytes, the ring seed positions were hashed with
 *            rf          u32  the cluster's replication factor
 *            conflicts   the cluster's conflicts mode, its setting name in
 *                        ASCII ("siblings", "lww")
 *            created_ms  u64  wall-clock ms when the directory was created
 *            hint_seq    u64  the last hint sequence number handed out
 *            hlc         u64  the clock's high-water mark: at or above
 *                        every stamp this node handed out or took in
 *                        (hlc.h; a remote stamp refused as too far ahead
 *                        is not taken in), written in the transaction
 *                        that stores the first stamp above it, set
 *                        STORE_HLC_LEASE_MS ahead of that stamp.  The
 *                        clock starts from it at open; a directory
 *                        without it gets the highest stamp of its records
 *                        (one scan at open), and so does one whose mark
 *                        is damaged: of another size, or more than
 *                        STORE_HLC_AHEAD_MAX_MS ahead of the wall clock
 *                        (the scan passes over such stamps too)
 *            wal_gen     u64  the generation of the write-ahead log whose
 *                        records LMDB does not have yet: a log with
 *                        another generation in its header is already in
 *                        LMDB (or not this directory's) and is dropped at
 *                        open.  Chosen at random when first recorded,
 *                        then one up per checkpoint.
 *            actor       the id this node's writes count under in vector
 *                        clocks (record_write_local()), in ASCII: the node
 *                        id's first 55 bytes at most, ':', 8 lowercase hex
 *                        digits drawn at random (a valid clock id, at most
 *                        64 bytes).  One per life of the directory, so no
 *                        (clock id, counter) pair is handed out twice: a
 *                        wiped or new directory gets a new one, and so does
 *                        one without it (made before actors), whose old
 *                        writes count under the node id.  Chosen and synced
 *                        at open, in every sync mode, before any write
 *                        can use it; a new one is logged (store_actor_new,
 *                        with its reason).
 *            actor_life  u64 inode of data.mdb || u8 state: 1 from the
 *                        open that recorded it, 0 once a close moved the
 *                        log into LMDB and synced it.  An open keeps the
 *                        actor only when the state is 0 and the inode is
 *                        data.mdb's: a crash (under `sync batch` or `none`
 *                        the last counters handed out may be lost while
 *                        other replicas have them), a copy taken while the
 *                        node ran, or a copy put back as new files (cp,
 *                        rsync, tar into an emptied directory) each get a
 *                        new actor.  Not covered: an old copy written back
 *                        over the same data.mdb in place, or a file system
 *                        snapshot rolled back, of a directory that was
 *                        closed cleanly when copied: it keeps the old actor
 *                        and may hand out its counters again.  So a copy is
 *                        restored as new files, never over the old ones.
 *            Other names belong to higher layers (STORE_OP_TABLE_PUT);
 *            the names above are reserved.  Integers are big-endian.
 *            seed, rf and conflicts are the cluster settings
 *            (src/node/cluster_settings.h): recorded when the directory
 *            is created, at the node's first start, and compared at every
 *            open; a directory created before rf and conflicts were
 *            recorded gets them, as configured, at its next open.
 *
 *   hints    key   u64 target tag || u64 seq    (both big-endian)
 *            value u8 target_len, target id, u64 position, u16 key_len,
 *                  key bytes, then one sibling (record.h sibling layout)
 *            The tag is H(seed, target id), so a target's hints are one
 *            contiguous range in the order they were taken; the id in
 *            the value rules out tag collisions.
 *
 *   handoff  key and value are opaque to the store: handoff checkpoints
 *            written by the handoff layer (STORE_OP_TABLE_PUT).  Its sets
 *            and deletes go to the write-ahead log as data writes do
 *            (table items, wal.c) and reach this table at the next
 *            checkpoint; store_table_get() reads them from the log's
 *            overlay until then.
 *
 * The write-ahead log
 * -------------------
 * A batch of writes (STORE_OP_WRITE, STORE_OP_APPLY and
 * STORE_OP_TABLE_PUT to the handoff table only) does not touch LMDB: each
 * operation reads its key's record (the batch's own earlier write of it,
 * else the overlay, else LMDB), and the records it leaves are appended to
 * `wal` as one record with one write(), then published to the overlay
 * (overlay.h) under the resize lock, so a reader sees all of a batch or
 * none of it.  The log holds the whole records a batch leaves, never the
 * operations (wal.c).  A random key thus costs one sequential append
 * instead of rewriting the 4 KiB B-tree page it lands on at every commit.
 * Durability per sync mode: `always` fdatasyncs the log before the batch
 * completes; `batch` has the syncer fdatasync it every batch_ms; `none`
 * leaves it to the kernel.  A handoff-table put is logged as the value
 * set or deleted (a table item) and published to an overlay of its own,
 * which store_table_get() reads before LMDB.  Meta puts, rare, run
 * through LMDB.  So does a handoff batch (STORE_OP_APPLY_RECORD, a whole
 * streamed record, with the checkpoint that follows it in one atomic
 * group): hundreds of records in key order are written once, into the
 * pages they belong on, where the log would write them twice (once to the
 * log, again at the checkpoint, whose transaction rewrites pages all over
 * the tree each time); the batch first absorbs the log, so it merges with
 * every logged write.  Measured in tests/bench/bench_handoff.sh: a join's
 * streaming about 1.35 times as fast, with the node's CPU per key lower.
 *
 * A checkpoint moves the overlay into LMDB: one transaction puts every
 * entry in key order, sets or deletes the handoff table's logged keys,
 * and records the next log generation (meta wal_gen),
 * commits and syncs LMDB (under `none` it syncs nothing), and only then
 * rewrites the log's header with the new generation and truncates it;
 * the overlay is emptied under the resize lock.  In between, a reader
 * whose LMDB snapshot includes the checkpoint's commit (its transaction
 * id is recorded before the commit) leaves the overlay's fresh keys out,
 * as LMDB has them already: scans and key counts see each key once.  A
 * crash at any step
 * leaves either the old generation in both places (the log is replayed
 * again: its records are whole records, so replaying puts them back) or
 * the new one in meta (the old log is dropped).  Checkpoints run when the
 * overlay holds STORE_CKPT_OVERLAY_BYTES or the log STORE_CKPT_WAL_BYTES
 * (the writer stops for it: about 2 us of CPU per key), after
 * STORE_CKPT_IDLE_MS without work, at close, and inside every batch that
 * runs through LMDB (a handoff batch, any other operation not logged; a
 * batch near map_max), which therefore sees every logged write; a batch
 * of meta puts alone is the exception (batch_absorbs()): it reads no key.
 *
 * Recovery: at open the whole records of a log of the recorded generation
 * are loaded into the overlays (data and handoff table), as if their
 * batches had just run (the replay writes nothing to LMDB), and the
 * first checkpoint moves them.  The node's first write at start, its
 * generation (meta, src/membership/gossip.c), does not wait for that
 * checkpoint, so a node stopped on a disk its log filled starts again on
 * that disk, serves the logged writes from the overlay, and refuses new
 * ones (RK_ENOSPC) until the checkpoint finds room.  The first record cut short
 * or failing its checksum ends the log: it is cut there (logged as
 * store_wal_torn, with the bytes dropped), so nothing after it can come
 * back behind newer records.  A crash tears only the unsynced tail (under `sync always` a
 * record never acknowledged, under `batch` the last interval); the log
 * cannot tell damage from such a hole, and refusing to start would keep a
 * node down after an ordinary power loss.  A whole, checksummed record
 * whose contents do not decode is damage, and the open is refused naming
 * the byte.  The log keeps STORE_WAL_RESERVE allocated past its end for
 * batches of deletions only, so a DEL finds room on a disk the log
 * filled.  LMDB's own recovery is below it: a transaction is wholly in
 * data.mdb after a crash or not at all.
 *
 * The writer
 * ----------
 * One thread at a time holds the writer role.  It takes all queued
 * operations (up to batch_max; a batch opening with a handoff group takes
 * up to STORE_HANDOFF_GROUPS x batch_max operations: the handoff groups
 * queued behind it, and up to batch_max others between them, queue_take()),
 * executes them as one batch (one log
 * record, or one LMDB transaction) made durable once, then completes
 * them.  While it waits for an fsync new
 * operations queue up and ride the next commit, so the number of fsyncs
 * follows the disk's speed, not the number of writers (group commit).
 * The role goes to a thread blocked in store_wait() when nobody holds it
 * (leader and followers, as in RocksDB's write groups), otherwise to the
 * store's writer thread, which also completes operations that report by
 * callback and, in batch mode, fsyncs when the store goes idle.  An operation that
 * fails on its own terms (sibling cap, bad input) fails alone before it
 * changes anything; a failed commit fails every operation of the batch.
 * An atomic group (store_submit_atomic()) is taken into a batch whole and
 * runs in a nested transaction of the batch's, committed into it only when
 * every member succeeded (LMDB supports nesting without MDB_WRITEMAP).
 *
 * Map growth: MDB_MAP_FULL aborts the batch, the map doubles (up to
 * map_max) and the batch runs again.  Resizing needs every transaction of
 * the process closed, so readers hold a shared lock for the length of one
 * read transaction (or a held snapshot) and the writer takes it
 * exclusively to resize, and to change the overlay.  Batches go to the
 * log only while the map has room for STORE_CKPT_ROOM_FACTOR times what
 * the overlay would hold, so no checkpoint meets a full map with writes
 * acknowledged; closer to map_max they run through LMDB, with the limits
 * below.  A batch
 * of pure deletions (tombstone writes included: a client's DEL) may grow
 * the map STORE_DELETE_RESERVE past map_max, so a full store can always be
 * emptied, by a client too.  When a batch mixing deletions and other
 * writes finds the map at map_max, the other writes fail with RK_ENOSPC
 * and the deletions run again alone, in their order (an atomic group
 * counts as deletions only when all its members are).  A run of handoff
 * groups larger than batch_max runs again batch_max worth of groups at a
 * time, so those that fit are stored as if each had been queued alone.
 *
 * Full disk: a write LMDB cannot finish for lack of space (ENOSPC, or a
 * write cut short, which LMDB reports as EIO: store_disk_full() tells
 * them apart by the space left) fails its batch with RK_ENOSPC, a mixed
 * batch's deletions (a run of handoff groups: part by part) run again
 * alone as at map_max, and the previous state
 * stands (store_commit()); the disk is not failed, and writes succeed
 * again once there is room.  A log append the disk cannot take is cut
 * back to the last whole record and fails its batch the same way; a batch
 * of deletions then runs through LMDB (absorbing the log: it may still
 * have pages for them).  Only a failed flush fails the disk.
 */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <lmdb.h>
#include <sodium.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "bytes.h"
#include "clock.h"
#include "error.h"
#include "hex.h"
#include "hlc.h"
#include "log.h"
#include "overlay.h"
#include "wal.h"

/* Format 2: format 1 and the write-ahead log (`wal`, meta wal_gen). */
#define STORE_FORMAT 2
#define STORE_MIB (1024ull * 1024)
/* Room past map_max that only deletions may use: enough for thousands of
 * copy-on-write page paths, small next to any useful map. */
#define STORE_DELETE_RESERVE (8 * STORE_MIB)
/*
 * A failed write to data.mdb counts as a full disk when less than this
 * (or less than the batch's own bytes) is left on its file system: a
 * short write leaves less than one block, and the slack covers what
 * others write to the same file system in between.
 */
#define STORE_FULL_SLACK STORE_MIB
/*
 * How far ahead of the clock its stored high-water mark is set: one write
 * of the mark a second under steady load, and a reopened clock at most a
 * second ahead of its last stamp, well within the skew HLC tolerates.
 */
#define STORE_HLC_LEASE_MS 1000
/* Clock entries of a stored record op_apply_newer() reads on its stack (an rf-3 key's: 3). */
#define STORE_APPLY_ROOM 8
/*
 * A stamp (the clock's mark, or a record's at the scan) further than this
 * ahead of the wall clock at open is damaged, not a time: a wall clock set
 * back, even to 1970 on a board without a clock, stays within it, and
 * starting from a damaged one would leave the clock no timestamps (it ends
 * at 2^48 ms) or stamp every later write centuries ahead.  A hundred years.
 */
#define STORE_HLC_AHEAD_MAX_MS (100ull * 366 * 24 * 3600 * 1000)
/*
 * Private to this file: the result of a batch the store refuses to run
 * because its disk failed a flush; store_err() maps it to RK_EDISK.  Outside
 * LMDB's (-30800 .. -30780) and errno's (positive) ranges.
 */
#define STORE_RC_DISK (-40000)

/* Private to this file: a batch the write-ahead log cannot take runs through LMDB. */
#define STORE_RC_SLOW (-40001)

/* Private to this file: op_apply_newer() cannot take the version alone; op_apply() merges. */
#define STORE_RC_MERGE (-40002)
/*
 * A checkpoint (store_checkpoint()) moves the log into LMDB when the
 * overlay holds this much memory or the log this many bytes, or when the
 * writer found no work for STORE_CKPT_IDLE_MS.  Between checkpoints a
 * random key costs LMDB nothing: the page it lands on is written once per
 * checkpoint instead of once per commit.
 */
#define STORE_CKPT_OVERLAY_BYTES (32 * STORE_MIB)
#define STORE_CKPT_WAL_BYTES (128 * STORE_MIB)
#define STORE_CKPT_IDLE_MS 100
/*
 * Full handoff batches (atomic groups led by STORE_OP_APPLY_RECORD, each up
 * to batch_max operations) one LMDB transaction takes at most when they are
 * queued together (with other operations between them: queue_take()); the
 * bound counts operations, STORE_HANDOFF_GROUPS x batch_max, so more of
 * smaller batches fit (as several small groups always shared a batch of
 * batch_max).  Every commit fsyncs its pages, so a receiver pulling
 * several arcs at once commits them together instead of one after another
 * (tests/bench/bench_handoff.sh).  Each stays atomic on its own (a nested
 * transaction, batch_group()).
 */
#define STORE_HANDOFF_GROUPS 8
/*
 * Disk space kept allocated past the log's end (fallocate) for batches of
 * deletions only, so a DEL still finds room on a disk the log filled:
 * other batches leave it untouched (store_log_append()).
 */
#define STORE_WAL_RESERVE (256 * 1024)
/*
 * The most a log can hold: the checkpoint trigger, then one more batch's
 * record at its largest.  A larger file is no log of this store.
 */
#define STORE_WAL_READ_MAX (STORE_CKPT_WAL_BYTES + WAL_RECORD_HEAD + (uint64_t)WAL_BODY_MAX)
/* After a checkpoint failed (a full disk), the next idle one waits this long. */
#define STORE_CKPT_RETRY_MS 1000
/* The log is taken only while the map has room for this many times the overlay (and 8 MiB). */
#define STORE_CKPT_ROOM_FACTOR 3
/* An actor: this many bytes of the node id at most, ':', and this many random bytes in hex. */
#define STORE_ACTOR_PREFIX 55
#define STORE_ACTOR_RANDOM 4
/* meta actor_life: u64 inode of data.mdb, u8 1 open / 0 closed cleanly. */
#define STORE_LIFE_LEN 9
_Static_assert(STORE_ACTOR_PREFIX + 1 + 2 * STORE_ACTOR_RANDOM <= RING_NAME_MAX,
               "an actor is a valid clock id");

static const char *const store_reserved_meta[] = {
    "format",     "node_id",  "cluster_id", "seed",    "rf",    "conflicts",
    "created_ms", "hint_seq", "hlc",        "wal_gen", "actor", "actor_life"};

struct store {
    struct store_config cfg;
    char *path;
    char node_id[RING_NAME_MAX + 1];
    char actor[RING_NAME_MAX + 1]; /* the clock id of this directory's life (meta actor) */
    bool actor_live;               /* meta actor_life says open: close may record a clean close */
    bool created;                  /* this open created the directory's identity */
    uint8_t cluster_id[STORE_CLUSTER_ID_MAX];
    int lock_fd;
    MDB_env *env;
    MDB_dbi dbi_data, dbi_meta, dbi_hints, dbi_handoff;
    size_t map_size;
    /* readers share it for one read transaction; the writer resizes under it */
    pthread_rwlock_t resize_lock;

    pthread_mutex_t mu; /* guards everything below up to the writer's own state */
    pthread_cond_t work;
    pthread_cond_t more;      /* a leader delaying its commit waits here for more work */
    pthread_cond_t sync_wake; /* the batch-mode syncer sleeps here */
    struct store_op *queue_head, *queue_tail;
    struct store_op *done_head, *done_tail;
    bool closing;
    bool leading;    /* a thread holds the writer role: runs a batch */
    bool wants_more; /* the leader waits for more work before committing */
    size_t queue_len;
    size_t running_n; /* operations of batch_ops the leader runs and has not completed */
    pthread_t writer;
    bool writer_started;
    pthread_t syncer; /* sync batch: fsyncs every batch_ms beside the writers */
    bool syncer_started;
    atomic_bool dirty;       /* sync batch: committed since the last fsync */
    atomic_bool disk_failed; /* a flush failed: every later batch fails with RK_EDISK */
    int event_fd;

    /* the writer role's own state: touched only by the thread holding it */
    struct store_op **batch_ops; /* the batch: STORE_HANDOFF_GROUPS x batch_max entries */
    struct hlc hlc;
    uint64_t hint_seq;
    size_t recent_batch;      /* decaying maximum of recent batch sizes (commit delay) */
    struct record apply_view; /* op_apply_newer()'s view of a stored record: its array kept */
    struct record apply_in;   /* op_apply_record_newer()'s view of the record applied */

    /*
     * The write-ahead log (wal.c) and the overlay of what it holds that
     * LMDB does not (overlay.h).  The overlay changes only under
     * resize_lock held exclusively; the rest belongs to the writer role.
     */
    int wal_fd;
    uint64_t wal_gen; /* the log's generation, meta "wal_gen" */
    uint64_t wal_len; /* bytes of the log: its header and whole records */
    uint64_t
        wal_alloc;  /* bytes allocated to it (its reserve past the end); UINT64_MAX: no fallocate */
    bool wal_stale; /* the log could not be emptied: batches go through LMDB until it is */
    struct overlay ov;
    struct buf wal_buf;       /* the record being built */
    struct ov_entry **staged; /* a logged batch's new entries, in order (batch_max) */
    size_t nstaged;
    /*
     * The handoff table's values (sets and deletes) the log holds and LMDB
     * does not, under the overlay's rules, and a logged batch's new ones in
     * order (batch_max).
     */
    struct overlay hov;
    struct ov_entry **hstaged;
    size_t nhstaged;
    /*
     * The staged entries by key, so a batch finds its own latest write of a
     * key without scanning what it staged before: open addressing on the
     * key's position, each slot 0 (empty) or 1 + the index in staged of the
     * key's latest entry; staged_mask + 1 slots, a power of two at least
     * twice batch_max, so the table is at most half full.
     */
    uint32_t *staged_at;
    size_t staged_mask;
    uint64_t hlc_mark;        /* the clock's high-water mark as stored (meta or log) */
    atomic_bool wal_dirty;    /* sync batch: appended since the log's last fsync */
    struct log_limit wal_log; /* the log's failures, logged once a second at most */
    size_t page_size;         /* LMDB's */
    bool ckpt_due;            /* a checkpoint is due: the writer thread runs it (under mu) */
    bool format_upgraded;     /* this open recorded format 2 (synced before the log is used) */
    uint64_t ckpt_retry_ms;   /* after a failed checkpoint: no idle one before this (monotonic) */
    /*
     * The LMDB transaction id of a checkpoint that holds the overlay's
     * entries, from just before its commit until the overlay is emptied
     * (UINT64_MAX: none).  A reader whose snapshot is at or past it finds
     * every entry in LMDB already, so it must not add the fresh ones again.
     */
    atomic_uint_fast64_t ov_absorbed_txn;
    /*
     * Records of the data table (the overlay over LMDB, as readers see it)
     * whose siblings are all tombstones (record_all_tombstones()): counted
     * by store_count_tombstones() and the log's replay at open, then moved
     * by each batch's delta when the batch is durable (batch_publish()).
     */
    atomic_uint_fast64_t tombstones;

    uint64_t generation;          /* tells this store from one reusing its address */
    struct store_reader *readers; /* every thread's cached read transaction, under mu */

    struct {
        atomic_uint_fast64_t commits, syncs, ops, ops_failed, enospc, map_grows, map_full_runs,
            decode_errors;
        atomic_uint_fast64_t recent_batch, disk_failures, checkpoints, logged;
        atomic_uint_fast64_t overlay_keys, wal_bytes, checkpoint_ms;
    } stat;
};

/* A thread's reusable read transaction of one store (see read_begin()). */
struct store_reader {
    MDB_txn *txn;
    pthread_t thread; /* the one thread that uses it */
    bool in_use;
    struct store_reader *next;
};

static atomic_uint_fast64_t store_generations;
static __thread const struct store *tl_store;
static __thread uint64_t tl_generation;
static __thread struct store_reader *tl_reader;
static __thread int tl_hold;          /* depth of store_read_hold() */
static __thread MDB_txn *tl_hold_txn; /* the held snapshot, of tl_store */
static __thread uint64_t tl_lock_gen; /* the store whose resize lock this thread holds shared */
static __thread int tl_lock_depth;    /* how many reads of it share that one lock */

/* --- small helpers -------------------------------------------------------- */

static uint64_t store_wall_ms(const struct store *s)
{
    struct timespec ts;

    if (s->cfg.wall_ms != NULL) {
        return s->cfg.wall_ms(s->cfg.wall_ctx);
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Map an LMDB or errno code to the project's codes. */
static int store_err(int rc)
{
    switch (rc) {
    case 0:
        return 0;
    case MDB_NOTFOUND:
        return RK_ENOTFOUND;
    case MDB_MAP_FULL:
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
        return RK_ENOSPC;
    case ENOMEM:
        return RK_ENOMEM;
    case MDB_BAD_VALSIZE:
        return RK_ETOOBIG;
    case STORE_RC_DISK:
        return RK_EDISK;
    default:
        return RK_EIO;
    }
}

void store_config_defaults(struct store_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    memcpy(cfg->seed, ring_default_seed, RING_SEED_LEN);
    cfg->rf = STORE_RF_DEFAULT;
    cfg->sync = STORE_SYNC_ALWAYS;
    cfg->batch_ms = 10;
    cfg->map_initial = 64 * STORE_MIB;
    cfg->map_max = 64 * 1024 * STORE_MIB;
    cfg->batch_max = 1024;
    cfg->max_siblings = 100;
    cfg->conflicts = RECORD_SIBLINGS;
    cfg->prune_keep = VCLOCK_PRUNE_KEEP_DEFAULT;
    cfg->prune_min_age_ms = VCLOCK_PRUNE_MIN_AGE_MS_DEFAULT;
}

uint64_t store_position(const struct store *s, const void *key, size_t len)
{
    return ring_hash(s->cfg.seed, key, len);
}

/* The data-table key of (pos, key): 8 + len bytes written to out. */
static size_t data_key(uint8_t *out, uint64_t pos, const void *key, size_t len)
{
    bytes_put_be64(out, pos);
    if (len > 0) {
        memcpy(out + 8, key, len);
    }
    return 8 + len;
}

/* --- opening: lock file, environment, identity ----------------------------- */

/*
 * The directory must belong to this user and be writable by nobody else:
 * whoever can write it can replace data.mdb or LOCK under the node.  As
 * ssh does with ~/.ssh, the node refuses rather than repairs.
 */
static int store_check_dir(struct store *s, char *err, size_t err_len)
{
    struct stat st;

    if (stat(s->path, &st) != 0) {
        snprintf(err, err_len, "cannot stat data directory %s: %s", s->path, strerror(errno));
        return RK_EIO;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, err_len, "data directory %s is not a directory", s->path);
        return RK_EINVAL;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, err_len, "data directory %s is owned by uid %lu, not by this user (uid %lu)",
                 s->path, (unsigned long)st.st_uid, (unsigned long)geteuid());
        return RK_EINVAL;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        snprintf(err, err_len,
                 "data directory %s is writable by %s (mode %04o): make it private (chmod go-w)",
                 s->path, (st.st_mode & S_IWOTH) ? "others" : "its group",
                 (unsigned)(st.st_mode & 07777));
        return RK_EINVAL;
    }
    return 0;
}

static int store_lock_dir(struct store *s, char *err, size_t err_len)
{
    char p[4096], pid[32];
    struct stat st = {0};
    int n;

    snprintf(p, sizeof(p), "%s/LOCK", s->path);
    s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->lock_fd < 0 && errno == ELOOP) {
        snprintf(err, err_len, "%s is a symbolic link: refusing to follow it", p);
        return RK_EINVAL;
    }
    if (s->lock_fd < 0) {
        snprintf(err, err_len, "cannot open %s: %s", p, strerror(errno));
        return RK_EIO;
    }
    if (fstat(s->lock_fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        snprintf(err, err_len, "%s %s: refusing to use it", p,
                 !S_ISREG(st.st_mode) ? "is not a regular file"
                                      : "has other names (hard links) that would be truncated");
        return RK_EINVAL;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        n = (int)pread(s->lock_fd, pid, sizeof(pid) - 1, 0);
        n = n > 0 ? n : 0;
        while (n > 0 && (pid[n - 1] == '\n' || pid[n - 1] == '\r' || pid[n - 1] == ' ')) {
            n--; /* the line's end, written with the pid */
        }
        pid[n] = '\0';
        snprintf(err, err_len, "data directory %s is in use by another process (pid %s)", s->path,
                 n > 0 ? pid : "unknown");
        return RK_EMISMATCH;
    }
    n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(s->lock_fd, 0) != 0 || pwrite(s->lock_fd, pid, (size_t)n, 0) != n) {
        snprintf(err, err_len, "cannot write %s: %s", p, strerror(errno));
        return RK_EIO;
    }
    return 0;
}

static int store_env_open(struct store *s, char *err, size_t err_len)
{
    unsigned flags = MDB_NOTLS | (s->cfg.sync == STORE_SYNC_NONE ? MDB_NOSYNC : MDB_NOMETASYNC);
    MDB_stat ms;
    MDB_envinfo info;
    int rc;

    rc = mdb_env_create(&s->env);
    if (rc == 0) {
        rc = mdb_env_set_maxdbs(s->env, 4);
    }
    if (rc == 0) {
        rc = mdb_env_set_mapsize(s->env, s->cfg.map_initial);
    }
    if (rc == 0) {
        rc = mdb_env_open(s->env, s->path, flags, 0600);
    }
    if (rc != 0) {
        snprintf(err, err_len, "cannot open LMDB environment in %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    if (mdb_env_get_maxkeysize(s->env) < 8 + STORE_KEY_MAX) {
        snprintf(err, err_len, "LMDB was built with a key limit of %d bytes; ringkv needs %d",
                 mdb_env_get_maxkeysize(s->env), 8 + STORE_KEY_MAX);
        return RK_EMISMATCH;
    }
    mdb_env_info(s->env, &info);
    s->map_size = info.me_mapsize;
    mdb_env_stat(s->env, &ms);
    s->page_size = ms.ms_psize;
    return 0;
}

static int meta_put(MDB_txn *txn, MDB_dbi dbi, const char *name, const void *v, size_t len)
{
    MDB_val k = {strlen(name), (void *)name}, d = {len, (void *)v};
    return mdb_put(txn, dbi, &k, &d, 0);
}

static int meta_get(MDB_txn *txn, MDB_dbi dbi, const char *name, MDB_val *out)
{
    MDB_val k = {strlen(name), (void *)name};
    return mdb_get(txn, dbi, &k, out);
}

/* Record rf and conflicts, the cluster settings besides the seed. */
static int store_put_cluster(struct store *s, MDB_txn *txn)
{
    const char *mode = record_conflicts_name(s->cfg.conflicts);
    uint8_t rf[4];
    int rc;

    bytes_put_be32(rf, s->cfg.rf);
    rc = meta_put(txn, s->dbi_meta, "rf", rf, 4);
    return rc ? rc : meta_put(txn, s->dbi_meta, "conflicts", mode, strlen(mode));
}

static int store_create_identity(struct store *s, MDB_txn *txn)
{
    uint8_t fmt[4] = {0, 0, 0, STORE_FORMAT}, created[8], seq[8] = {0};
    int rc;

    bytes_put_be64(created, store_wall_ms(s));
    rc = meta_put(txn, s->dbi_meta, "format", fmt, 4);
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "node_id", s->node_id, strlen(s->node_id));
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "cluster_id", s->cluster_id, s->cfg.cluster_id_len);
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "seed", s->cfg.seed, RING_SEED_LEN);
    rc = rc ? rc : store_put_cluster(s, txn);
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "created_ms", created, 8);
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "hint_seq", seq, 8);
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "hlc", seq, 8);
    return rc;
}

/* One recorded value against the configured one. */
static bool meta_is(const struct store_meta_value *v, const void *want, size_t len)
{
    return v->p != NULL && v->len == len && memcmp(v->p, want, len) == 0;
}

/* A recorded value as text for a refusal: printable ASCII as is, at most cap - 1 bytes. */
static void meta_text(const struct store_meta_value *v, char *out, size_t cap)
{
    size_t n = v->len < cap - 1 ? v->len : cap - 1;

    for (size_t i = 0; i < n; i++) {
        out[i] = v->p[i] >= 0x20 && v->p[i] < 0x7f ? (char)v->p[i] : '?';
    }
    out[n] = '\0';
}

/*
 * The cluster settings against the recorded ones: one line naming the
 * first that differs with both values.  rf and conflicts both missing (a
 * directory from before they were recorded) ask the caller to record them.
 */
static int meta_check_cluster(const struct store_meta *m, const struct store_config *cfg,
                              struct store_meta_found *found, char *err, size_t err_len)
{
    const char *mode = record_conflicts_name(cfg->conflicts);
    char got[2 * RING_SEED_LEN + 1], want[2 * RING_SEED_LEN + 1];
    uint8_t rf[4];

    bytes_put_be32(rf, cfg->rf);
    if (!meta_is(&m->seed, cfg->seed, RING_SEED_LEN)) {
        hex_encode(got, m->seed.p, m->seed.len == RING_SEED_LEN ? RING_SEED_LEN : 0);
        hex_encode(want, cfg->seed, RING_SEED_LEN);
        snprintf(err, err_len, "data directory %s was formed with ring-seed %s; ring-seed is %s",
                 cfg->path, got, want);
        return RK_EMISMATCH;
    }
    if (m->rf.p == NULL && m->conflicts.p == NULL) {
        found->record_cluster = true;
        return 0;
    }
    if (!meta_is(&m->rf, rf, 4)) {
        snprintf(err, err_len, "data directory %s was formed with rf %lu; rf is %lu", cfg->path,
                 m->rf.len == 4 ? (unsigned long)bytes_get_be32(m->rf.p) : 0ul,
                 (unsigned long)cfg->rf);
        return RK_EMISMATCH;
    }
    if (!meta_is(&m->conflicts, mode, strlen(mode))) {
        meta_text(&m->conflicts, got, sizeof(got));
        snprintf(err, err_len, "data directory %s was formed with conflicts %s; conflicts is %s",
                 cfg->path, got, mode);
        return RK_EMISMATCH;
    }
    return 0;
}

/* The store's own counters: hint_seq must be whole; an hlc mark of any other size is absent. */
static int meta_read_counters(const struct store_meta *m, const struct store_config *cfg,
                              struct store_meta_found *found, char *err, size_t err_len)
{
    if (m->hint_seq.p != NULL && m->hint_seq.len != 8) {
        snprintf(err, err_len, "data directory %s has a damaged hint_seq (%zu bytes, not 8)",
                 cfg->path, m->hint_seq.len);
        return RK_EMISMATCH;
    }
    found->hint_seq = m->hint_seq.p != NULL ? bytes_get_be64(m->hint_seq.p) : 0;
    found->has_hlc = m->hlc.p != NULL && m->hlc.len == 8;
    found->hlc = found->has_hlc ? bytes_get_be64(m->hlc.p) : 0;
    return 0;
}

int store_meta_check(const struct store_meta *m, const struct store_config *cfg,
                     struct store_meta_found *found, char *err, size_t err_len)
{
    uint8_t fmt[4] = {0, 0, 0, STORE_FORMAT}, fmt1[4] = {0, 0, 0, 1};
    char got[RING_NAME_MAX + 1];
    unsigned long f = 0;
    int rc;

    memset(found, 0, sizeof(*found));
    found->upgrade_format = meta_is(&m->format, fmt1, 4);
    if (!meta_is(&m->format, fmt, 4) && !found->upgrade_format) {
        for (size_t i = 0; m->format.p != NULL && i < m->format.len && i < 4; i++) {
            f = f << 8 | m->format.p[i];
        }
        snprintf(err, err_len,
                 "data directory %s has format %lu; this build reads formats 1 and %d", cfg->path,
                 f, STORE_FORMAT);
        return RK_EMISMATCH;
    }
    if (!meta_is(&m->node_id, cfg->node_id, strlen(cfg->node_id))) {
        meta_text(&m->node_id, got, sizeof(got));
        snprintf(err, err_len, "data directory %s belongs to node '%s', not '%s'", cfg->path, got,
                 cfg->node_id);
        return RK_EMISMATCH;
    }
    if (!meta_is(&m->cluster_id, cfg->cluster_id, cfg->cluster_id_len)) {
        snprintf(err, err_len,
                 "data directory %s belongs to another cluster (its cluster id "
                 "differs from this node's cluster key)",
                 cfg->path);
        return RK_EMISMATCH;
    }
    rc = meta_check_cluster(m, cfg, found, err, err_len);
    return rc ? rc : meta_read_counters(m, cfg, found, err, err_len);
}

/* Read one meta value into v; absent leaves it NULL. */
static int meta_load(MDB_txn *txn, MDB_dbi dbi, const char *name, struct store_meta_value *v)
{
    MDB_val got;
    int rc = meta_get(txn, dbi, name, &got);

    v->p = rc == 0 ? got.mv_data : NULL;
    v->len = rc == 0 ? got.mv_size : 0;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Could t be a stamp this clock handed out or took in (STORE_HLC_AHEAD_MAX_MS)? */
static bool store_stamp_plausible(const struct store *s, uint64_t t)
{
    return hlc_physical(t) <= store_wall_ms(s) + STORE_HLC_AHEAD_MAX_MS;
}

/*
 * The highest stamp of any stored record: a full scan, for a directory
 * without a mark.  Damaged stamps (store_stamp_plausible()) are passed over.
 */
static int store_scan_stamps(struct store *s, MDB_txn *txn, uint64_t *max)
{
    MDB_cursor *c;
    MDB_val k, v;
    struct record r;
    int rc = mdb_cursor_open(txn, s->dbi_data, &c);

    *max = 0;
    if (rc != 0) {
        return rc;
    }
    record_init(&r);
    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    while (rc == 0) {
        if (record_decode(v.mv_data, v.mv_size, &r) == 0) {
            for (size_t i = 0; i < r.n; i++) {
                uint64_t t = r.s[i].hlc;
                *max = t > *max && store_stamp_plausible(s, t) ? t : *max;
            }
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    record_deinit(&r);
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/*
 * Seed the clock of a directory without a high-water mark (written by
 * batch_hlc_persist() since the mark exists) from a scan of its records,
 * once, and record the mark.
 */
static int store_seed_clock(struct store *s, MDB_txn *txn, char *err, size_t err_len)
{
    uint8_t buf[8];
    int rc = store_scan_stamps(s, txn, &s->hlc.last);

    if (rc == 0) {
        bytes_put_be64(buf, s->hlc.last);
        rc = meta_put(txn, s->dbi_meta, "hlc", buf, 8);
    }
    if (rc != 0) {
        snprintf(err, err_len, "cannot read the clock's mark in %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    return 0;
}

/*
 * Check the recorded identity and settings (store_meta_check()), record rf
 * and conflicts where missing, and take the store's counters.
 */
static int store_check_identity(struct store *s, MDB_txn *txn, char *err, size_t err_len)
{
    struct store_meta m;
    struct store_meta_found found;
    int rc = meta_load(txn, s->dbi_meta, "format", &m.format);

    rc = rc ? rc : meta_load(txn, s->dbi_meta, "node_id", &m.node_id);
    rc = rc ? rc : meta_load(txn, s->dbi_meta, "cluster_id", &m.cluster_id);
    rc = rc ? rc : meta_load(txn, s->dbi_meta, "seed", &m.seed);
    rc = rc ? rc : meta_load(txn, s->dbi_meta, "rf", &m.rf);
    rc = rc ? rc : meta_load(txn, s->dbi_meta, "conflicts", &m.conflicts);
    rc = rc ? rc : meta_load(txn, s->dbi_meta, "hint_seq", &m.hint_seq);
    rc = rc ? rc : meta_load(txn, s->dbi_meta, "hlc", &m.hlc);
    if (rc != 0) {
        snprintf(err, err_len, "cannot read the identity of %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    rc = store_meta_check(&m, &s->cfg, &found, err, err_len);
    if (rc != 0) {
        return rc;
    }
    if (found.record_cluster && store_put_cluster(s, txn) != 0) {
        snprintf(err, err_len, "cannot record rf and conflicts in %s", s->path);
        return RK_EIO;
    }
    if (found.upgrade_format) {
        uint8_t fmt[4] = {0, 0, 0, STORE_FORMAT};
        if (meta_put(txn, s->dbi_meta, "format", fmt, 4) != 0) {
            snprintf(err, err_len, "cannot record format %d in %s", STORE_FORMAT, s->path);
            return RK_EIO;
        }
        LOG(LOG_INFO, "store_format_upgraded", "path=%s from=1 to=%d", s->path, STORE_FORMAT);
        s->format_upgraded = true;
    }
    s->hint_seq = found.hint_seq;
    if (found.has_hlc && store_stamp_plausible(s, found.hlc)) {
        s->hlc.last = found.hlc;
        return 0;
    }
    if (found.has_hlc) {
        LOG(LOG_WARN, "store_hlc_mark_damaged", "path=%s mark=%llu action=scan", s->path,
            (unsigned long long)found.hlc);
    }
    return store_seed_clock(s, txn, err, err_len);
}

/* --- opening: the actor -------------------------------------------------------- */

/* The inode of data.mdb: a copy of the directory put back is a new file. */
static int store_data_ino(struct store *s, uint64_t *ino)
{
    struct stat st;
    int fd;

    if (mdb_env_get_fd(s->env, &fd) != 0 || fstat(fd, &st) != 0) {
        return RK_EIO;
    }
    *ino = (uint64_t)st.st_ino;
    return 0;
}

/*
 * Why the recorded actor (a, l: the meta values, NULL when absent) cannot
 * be kept by data.mdb with inode ino, or NULL when it can (meta actor and
 * actor_life in the layout above).
 */
static const char *store_actor_stale(const MDB_val *a, const MDB_val *l, uint64_t ino)
{
    if (a == NULL) {
        return "absent";
    }
    if (!ring_name_valid(a->mv_data, a->mv_size) || l == NULL || l->mv_size != STORE_LIFE_LEN ||
        ((const uint8_t *)l->mv_data)[8] > 1) {
        return "damaged";
    }
    if (((const uint8_t *)l->mv_data)[8] != 0) {
        return "unclean";
    }
    return bytes_get_be64(l->mv_data) != ino ? "copied" : NULL;
}

/* A new actor: the node id's first STORE_ACTOR_PREFIX bytes, ':', 8 random hex digits. */
static int store_actor_make(struct store *s)
{
    uint8_t rnd[STORE_ACTOR_RANDOM];
    char hex[2 * STORE_ACTOR_RANDOM + 1];

    if (sodium_init() < 0) {
        return RK_EIO;
    }
    randombytes_buf(rnd, sizeof(rnd));
    hex_encode(hex, rnd, sizeof(rnd));
    snprintf(s->actor, sizeof(s->actor), "%.*s:%s", STORE_ACTOR_PREFIX, s->node_id, hex);
    return 0;
}

/*
 * Keep the recorded actor, or make a new one (created: a new directory),
 * and record it with actor_life saying open, in txn.
 */
static int store_take_actor(struct store *s, MDB_txn *txn, bool created, char *err, size_t err_len)
{
    uint8_t life[STORE_LIFE_LEN];
    MDB_val a, l;
    const char *why;
    uint64_t ino = 0;
    int ra = meta_get(txn, s->dbi_meta, "actor", &a);
    int rl = meta_get(txn, s->dbi_meta, "actor_life", &l);
    int rc = ra != 0 && ra != MDB_NOTFOUND ? ra : rl != 0 && rl != MDB_NOTFOUND ? rl : 0;

    if (rc == 0 && store_data_ino(s, &ino) != 0) {
        rc = EIO;
    }
    why = created ? "created" : store_actor_stale(ra == 0 ? &a : NULL, rl == 0 ? &l : NULL, ino);
    if (rc == 0 && why == NULL) {
        memcpy(s->actor, a.mv_data, a.mv_size);
        s->actor[a.mv_size] = '\0';
    } else if (rc == 0) {
        rc = store_actor_make(s) != 0
                 ? EIO
                 : meta_put(txn, s->dbi_meta, "actor", s->actor, strlen(s->actor));
    }
    bytes_put_be64(life, ino);
    life[8] = 1;
    rc = rc ? rc : meta_put(txn, s->dbi_meta, "actor_life", life, sizeof(life));
    if (rc != 0) {
        snprintf(err, err_len, "cannot record the actor of %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    if (why != NULL) {
        bool plain = strcmp(why, "created") == 0 || strcmp(why, "absent") == 0;
        LOG(plain ? LOG_INFO : LOG_WARN, "store_actor_new", "path=%s actor=%s reason=%s", s->path,
            s->actor, why);
    }
    return 0;
}

/*
 * Take the actor (store_take_actor()) once the rest of the directory has
 * been accepted, so a refused open leaves data.mdb as it was, and sync it
 * in every sync mode: it must be on disk before a write counts under it.
 */
static int store_open_actor(struct store *s, char *err, size_t err_len)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

    if (rc != 0) {
        snprintf(err, err_len, "cannot record the actor of %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    rc = store_take_actor(s, txn, s->created, err, err_len);
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    rc = mdb_txn_commit(txn);
    rc = rc ? rc : mdb_env_sync(s->env, 1);
    if (rc != 0) {
        snprintf(err, err_len, "cannot record the actor of %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    s->actor_live = true;
    return 0;
}

/*
 * Record a clean close in actor_life, synced in every sync mode: every
 * counter this life handed out is in LMDB (the caller's checkpoint emptied
 * the log), so the next open may keep the actor.  Any failure leaves the
 * life open, and the next open takes a new actor: never unsafe.
 */
static void store_close_life(struct store *s)
{
    uint8_t life[STORE_LIFE_LEN];
    uint64_t ino;
    MDB_txn *txn;

    if (!s->actor_live || store_data_ino(s, &ino) != 0 ||
        mdb_txn_begin(s->env, NULL, 0, &txn) != 0) {
        return;
    }
    bytes_put_be64(life, ino);
    life[8] = 0;
    if (meta_put(txn, s->dbi_meta, "actor_life", life, sizeof(life)) != 0) {
        mdb_txn_abort(txn);
        return;
    }
    if (mdb_txn_commit(txn) == 0 && mdb_env_sync(s->env, 1) != 0) {
        LOG(LOG_WARN, "store_actor_close_unsynced", "path=%s", s->path);
    }
}

const char *store_actor(const struct store *s)
{
    return s->actor;
}

static int store_open_tables(struct store *s, char *err, size_t err_len)
{
    MDB_txn *txn;
    MDB_stat st;
    MDB_val v;
    bool created;
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

    rc = rc ? rc : mdb_dbi_open(txn, "data", MDB_CREATE, &s->dbi_data);
    rc = rc ? rc : mdb_dbi_open(txn, "meta", MDB_CREATE, &s->dbi_meta);
    rc = rc ? rc : mdb_dbi_open(txn, "hints", MDB_CREATE, &s->dbi_hints);
    rc = rc ? rc : mdb_dbi_open(txn, "handoff", MDB_CREATE, &s->dbi_handoff);
    if (rc != 0) {
        snprintf(err, err_len, "data directory %s does not hold a ringkv store: %s", s->path,
                 mdb_strerror(rc));
        goto out_abort;
    }
    created = meta_get(txn, s->dbi_meta, "format", &v) == MDB_NOTFOUND;
    if (created) {
        mdb_stat(txn, s->dbi_data, &st);
        rc = st.ms_entries == 0 ? store_create_identity(s, txn) : MDB_INCOMPATIBLE;
        if (rc != 0) {
            snprintf(err, err_len, "data directory %s has data but no identity", s->path);
            goto out_abort;
        }
    } else {
        int e = store_check_identity(s, txn, err, err_len);
        if (e != 0) {
            mdb_txn_abort(txn);
            return e;
        }
    }
    s->created = created;
    rc = mdb_txn_commit(txn);
    /* in every sync mode: an older build must never find format 1 beside a log it ignores */
    rc = rc == 0 && s->format_upgraded ? mdb_env_sync(s->env, 1) : rc;
    if (rc != 0) {
        snprintf(err, err_len, "cannot initialise %s: %s", s->path, mdb_strerror(rc));
    }
    return store_err(rc);
out_abort:
    mdb_txn_abort(txn);
    return store_err(rc) == RK_EIO ? RK_EMISMATCH : store_err(rc);
}

/* --- opening: the write-ahead log ------------------------------------------ */

static bool store_grow(struct store *s, bool deletions_only);

/*
 * Is the encoded record rec[0..len) a record of tombstones only
 * (record_all_tombstones())?  record_peek() answers for one sibling
 * without decoding; only a record of several siblings is decoded.  A
 * record that does not decode is no tombstone: it is counted as a key.
 */
static bool store_bytes_tombstone(const void *rec, size_t len)
{
    const uint8_t *value;
    size_t n = 0, value_len;
    bool tomb = false;
    struct record r;

    if (record_peek(rec, len, &n, &tomb, &value, &value_len) != 0 || n == 0) {
        return false;
    }
    if (n == 1) {
        return tomb;
    }
    record_init(&r);
    tomb = record_decode(rec, len, &r) == 0 && record_all_tombstones(&r);
    record_deinit(&r);
    return tomb;
}

/*
 * A replayed log record of key k replaces what the overlay already has of
 * it, else old (LMDB's record, NULL when LMDB lacks the key): the change
 * to the tombstone count, -1, 0 or 1.
 */
static int store_tombstone_change(struct store *s, const MDB_val *k, const MDB_val *old,
                                  const uint8_t *rec, size_t len)
{
    struct ov_entry *e = overlay_find(&s->ov, k->mv_data, k->mv_size);
    bool was = e != NULL     ? store_bytes_tombstone(ov_rec(e), e->rec_len)
               : old != NULL ? store_bytes_tombstone(old->mv_data, old->mv_size)
                             : false;

    return (int)store_bytes_tombstone(rec, len) - (int)was;
}

/*
 * Count the records of tombstones LMDB holds into s->tombstones (at open,
 * before the log's replay moves it): one walk of the data table, each
 * record peeked at (store_bytes_tombstone()).
 */
static int store_count_tombstones(struct store *s, char *err, size_t err_len)
{
    MDB_txn *txn = NULL;
    MDB_cursor *c = NULL;
    MDB_val k, v;
    uint64_t n = 0;
    int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);

    if (rc == 0) {
        rc = mdb_cursor_open(txn, s->dbi_data, &c);
        for (MDB_cursor_op op = MDB_FIRST; rc == 0; op = MDB_NEXT) {
            rc = mdb_cursor_get(c, &k, &v, op);
            n += rc == 0 && store_bytes_tombstone(v.mv_data, v.mv_size);
        }
        if (c != NULL) {
            mdb_cursor_close(c);
        }
        mdb_txn_abort(txn);
    }
    if (rc != MDB_NOTFOUND) {
        snprintf(err, err_len, "cannot read the store of %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    atomic_store(&s->tombstones, n);
    return 0;
}

/* What loading a log found: counts for the log line, the highest mark. */
struct replay {
    struct store *s;
    MDB_txn *txn; /* a read transaction: is a key in LMDB? */
    uint64_t puts, mark;
    int64_t tombstones; /* the change to s->tombstones its records make */
};

/* A handoff-table item (WAL_TABLE_SET, WAL_TABLE_DEL) into its overlay. */
static int replay_table(struct replay *r, const struct wal_item *it)
{
    struct ov_entry *e = overlay_entry_new(it->key, it->key_len, it->value_len, false);

    if (e == NULL) {
        return RK_ENOMEM;
    }
    e->gone = it->kind == WAL_TABLE_DEL;
    if (it->value_len > 0) {
        memcpy(ov_rec(e), it->value, it->value_len);
    }
    overlay_put(&r->s->hov, e);
    r->puts++;
    return 0;
}

static int replay_item(void *ctx, const struct wal_item *it)
{
    struct replay *r = ctx;
    struct ov_entry *e;
    struct record rec;
    MDB_val k = {it->key_len, (void *)it->key}, v;
    int bad;

    if (it->kind == WAL_MARK) {
        r->mark = it->mark > r->mark ? it->mark : r->mark;
        return 0;
    }
    if (it->kind == WAL_TABLE_SET || it->kind == WAL_TABLE_DEL) {
        return replay_table(r, it); /* the only table wal.c accepts: handoff */
    }
    record_init(&rec);
    bad = record_decode(it->value, it->value_len, &rec);
    record_deinit(&rec);
    if (bad != 0) {
        return RK_ESYNTAX; /* a whole, checksummed record that is not one: damage */
    }
    e = overlay_entry_alloc(&r->s->ov, it->key, it->key_len, it->value_len,
                            mdb_get(r->txn, r->s->dbi_data, &k, &v) == MDB_NOTFOUND);
    if (e == NULL) {
        return RK_ENOMEM;
    }
    memcpy(ov_rec(e), it->value, it->value_len);
    r->tombstones +=
        store_tombstone_change(r->s, &k, e->fresh ? NULL : &v, it->value, it->value_len);
    overlay_put(&r->s->ov, e);
    r->puts++;
    return 0;
}

/*
 * Load a log's whole records into the overlay, as if their batches had
 * just run: LMDB is not written at open (a full disk cannot stop a start),
 * the first checkpoint moves them.  *valid: the bytes of whole records.
 */
static int store_log_load(struct store *s, const uint8_t *p, size_t len, uint64_t gen,
                          size_t *valid, struct replay *r, char *err, size_t err_len)
{
    int rc;

    memset(r, 0, sizeof(*r));
    r->s = s;
    r->mark = s->hlc.last;
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &r->txn);
    if (rc != 0) {
        snprintf(err, err_len, "cannot read the store of %s: %s", s->path, mdb_strerror(rc));
        return store_err(rc);
    }
    rc = wal_parse(p, len, gen, replay_item, r, valid);
    mdb_txn_abort(r->txn);
    if (rc != 0) {
        overlay_clear(&s->ov);
        overlay_clear(&s->hov);
        if (rc == RK_ESYNTAX) {
            snprintf(err, err_len,
                     "write-ahead log %s/wal is damaged at byte %zu: a whole record that "
                     "does not decode; move the file away to start without it",
                     s->path, (size_t)WAL_HEADER_LEN + *valid);
        } else {
            snprintf(err, err_len, "cannot load the write-ahead log of %s: out of memory", s->path);
        }
        return rc;
    }
    s->hlc.last = r->mark;
    atomic_fetch_add(&s->tombstones, (uint64_t)r->tombstones); /* modulo 2^64: a fall too */
    return 0;
}

/*
 * Allocate the log's space up to need bytes plus STORE_WAL_RESERVE, a
 * reserve's worth at a time, without changing its size.  False when the disk has no room;
 * a file system without fallocate() gets no reserve and says true.
 */
static bool store_log_alloc(struct store *s, uint64_t need)
{
    uint64_t want = (need + 2 * STORE_WAL_RESERVE - 1) / STORE_WAL_RESERVE * STORE_WAL_RESERVE;
    struct rlimit lim;
    int rc;

    if (s->wal_alloc == UINT64_MAX || want <= s->wal_alloc) {
        return true;
    }
    /* past the file size limit fallocate() raises SIGXFSZ on some file systems: no room */
    if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
        want > (uint64_t)lim.rlim_cur) {
        return false;
    }
    do {
        rc = fallocate(s->wal_fd, FALLOC_FL_KEEP_SIZE, (off_t)s->wal_alloc,
                       (off_t)(want - s->wal_alloc));
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) {
        if (errno == EOPNOTSUPP || errno == ENOSYS) {
            s->wal_alloc = UINT64_MAX;
            return true;
        }
        return false;
    }
    s->wal_alloc = want;
    return true;
}

/* Make the reserve after the log was emptied or opened: best effort. */
static void store_log_reserve(struct store *s)
{
    if (s->wal_alloc != UINT64_MAX) {
        s->wal_alloc = s->wal_len;
        (void)store_log_alloc(s, s->wal_len);
    }
}

/* Read the whole log file (fd) into *out; RK_EIO. */
static int store_log_read(int fd, uint8_t **out, size_t *len)
{
    struct stat st;
    size_t got = 0;

    *out = NULL;
    *len = 0;
    if (fstat(fd, &st) != 0) {
        return RK_EIO;
    }
    if (st.st_size == 0) {
        return 0;
    }
    if ((uint64_t)st.st_size > STORE_WAL_READ_MAX) {
        *len = (size_t)st.st_size;
        return RK_ETOOBIG;
    }
    *out = malloc((size_t)st.st_size);
    if (*out == NULL) {
        return RK_ENOMEM;
    }
    while (got < (size_t)st.st_size) {
        ssize_t r = pread(fd, *out + got, (size_t)st.st_size - got, (off_t)got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    *len = got;
    return 0;
}

/* The log generation recorded in meta; a new random one (recorded) when there is none. */
static int store_log_gen(struct store *s, uint64_t *gen)
{
    MDB_txn *txn;
    MDB_val v;
    uint8_t buf[8];
    int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = meta_get(txn, s->dbi_meta, "wal_gen", &v);
    if (rc == 0 && v.mv_size == 8) {
        *gen = bytes_get_be64(v.mv_data);
        mdb_txn_abort(txn);
        return 0;
    }
    /* random: a log left from a directory made again never matches this one */
    if (sodium_init() < 0) {
        mdb_txn_abort(txn);
        return EIO;
    }
    randombytes_buf(buf, sizeof(buf));
    *gen = bytes_get_be64(buf) >> 1; /* room to count up */
    bytes_put_be64(buf, *gen);
    rc = meta_put(txn, s->dbi_meta, "wal_gen", buf, 8);
    rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
    return rc ? rc : mdb_env_sync(s->env, 1);
}

/* Open (creating) the log file without following a link; RK_EIO with err set. */
static int store_log_fd(struct store *s, char *err, size_t err_len)
{
    char path[4096];
    struct stat st;

    snprintf(path, sizeof(path), "%s/wal", s->path);
    s->wal_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->wal_fd < 0) {
        snprintf(err, err_len, "cannot open the write-ahead log %s: %s", path, strerror(errno));
        return RK_EIO;
    }
    if (fstat(s->wal_fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
        snprintf(err, err_len, "write-ahead log %s is not a regular file with one name", path);
        return RK_EIO;
    }
    return 0;
}

/*
 * Open the write-ahead log and bring LMDB up to date with it: the whole
 * records of a log of this directory's generation are replayed (a torn
 * last record is dropped: it was never acknowledged under `sync always`,
 * and is within the last interval under `batch`), a log of another
 * generation (emptied by a checkpoint that reached LMDB) is dropped, and
 * the log starts empty in the generation LMDB now records.
 */
static int store_log_open(struct store *s, char *err, size_t err_len)
{
    uint8_t head[WAL_HEADER_LEN], *p = NULL;
    uint64_t gen = 0, hgen = 0;
    size_t len = 0, valid = 0, keep = WAL_HEADER_LEN;
    struct replay r = {0};
    int rc = store_log_fd(s, err, err_len);

    if (rc == 0 && (rc = store_log_read(s->wal_fd, &p, &len)) != 0) {
        char why[96];
        snprintf(why, sizeof(why), "%zu bytes, more than a log grows to; move it away", len);
        snprintf(err, err_len, "cannot read the write-ahead log %s/wal: %s", s->path,
                 rc == RK_ETOOBIG  ? why
                 : rc == RK_ENOMEM ? "too large to read into memory"
                                   : "read error");
    }
    if (rc == 0 && (rc = store_log_gen(s, &gen)) != 0) {
        snprintf(err, err_len, "cannot record the log generation in %s: %s", s->path,
                 mdb_strerror(rc));
        rc = store_err(rc);
    }
    s->wal_gen = rc == 0 ? gen : 0;
    if (rc == 0 && len > 0 && (wal_header_parse(p, len, &hgen) != 0 || hgen != gen)) {
        bool log = wal_header_parse(p, len, &hgen) == 0;
        /* a log ahead of data.mdb: data.mdb was put back from an older copy */
        LOG(log && hgen > gen ? LOG_WARN : LOG_INFO, "store_wal_dropped",
            "path=%s bytes=%zu reason=%s", s->path, len,
            !log         ? "not_a_log"
            : hgen > gen ? "ahead_of_data"
                         : "checkpointed");
    } else if (rc == 0 && len > WAL_HEADER_LEN) {
        rc = store_log_load(s, p + WAL_HEADER_LEN, len - WAL_HEADER_LEN, gen, &valid, &r, err,
                            err_len);
        keep = WAL_HEADER_LEN + valid;
        if (rc == 0) {
            LOG(LOG_INFO, "store_wal_replayed", "path=%s puts=%llu keys=%zu bytes=%zu", s->path,
                (unsigned long long)r.puts, s->ov.n, valid);
        }
        if (rc == 0 && keep < len) { /* torn by a crash, or damaged: dropped, said */
            LOG(LOG_WARN, "store_wal_torn", "path=%s dropped_bytes=%zu at=%zu", s->path, len - keep,
                keep);
        }
    }
    free(p);
    if (rc != 0) {
        return rc;
    }
    wal_header(head, s->wal_gen);
    /* the log goes on after its last whole record: nothing past it may read as one later */
    if ((keep == WAL_HEADER_LEN &&
         pwrite(s->wal_fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) ||
        ftruncate(s->wal_fd, (off_t)keep) != 0 ||
        (s->cfg.sync != STORE_SYNC_NONE && fdatasync(s->wal_fd) != 0)) {
        snprintf(err, err_len, "cannot write the write-ahead log of %s: %s", s->path,
                 strerror(errno));
        return RK_EIO;
    }
    s->wal_len = keep;
    s->hlc_mark = s->hlc.last;
    store_log_reserve(s);
    atomic_store(&s->stat.wal_bytes, s->wal_len);
    atomic_store(&s->stat.overlay_keys, s->ov.n);
    return 0;
}

static int store_check_config(const struct store_config *cfg, char *err, size_t err_len)
{
    if (cfg->path == NULL || cfg->path[0] == '\0') {
        snprintf(err, err_len, "no data directory given");
    } else if (cfg->node_id == NULL || !ring_name_valid(cfg->node_id, strlen(cfg->node_id))) {
        snprintf(err, err_len, "invalid node id for the store");
    } else if (cfg->cluster_id == NULL || cfg->cluster_id_len < 1 ||
               cfg->cluster_id_len > STORE_CLUSTER_ID_MAX) {
        snprintf(err, err_len, "cluster id must be 1 to %d bytes", STORE_CLUSTER_ID_MAX);
    } else if (cfg->map_initial < STORE_MIB || cfg->map_max < cfg->map_initial) {
        snprintf(err, err_len, "map sizes must be at least 1 MiB with max >= initial");
    } else if (cfg->rf < 1) {
        snprintf(err, err_len, "rf must be at least 1");
    } else if (cfg->batch_max < 1 || cfg->max_siblings < 1 ||
               (cfg->sync == STORE_SYNC_BATCH && cfg->batch_ms < 1)) {
        snprintf(err, err_len, "batch_max, max_siblings and batch_ms must be at least 1");
    } else {
        return 0;
    }
    return RK_EINVAL;
}

static void *store_writer_main(void *arg);
static void *store_syncer_main(void *arg);
static int store_sync(struct store *s);
static int store_log_sync(struct store *s);
static bool store_log_pending(const struct store *s);
static int store_checkpoint(struct store *s);

static int store_init_sync(struct store *s)
{
    pthread_rwlockattr_t ra;
    pthread_condattr_t ca;

    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&s->resize_lock, &ra);
    pthread_rwlockattr_destroy(&ra);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->work, &ca);
    pthread_cond_init(&s->more, &ca);
    pthread_cond_init(&s->sync_wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->mu, NULL);
    s->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return s->event_fd < 0 ? RK_EIO : 0;
}

static struct store *store_alloc(const struct store_config *cfg)
{
    struct store *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        return NULL;
    }
    s->path = strdup(cfg->path);
    s->batch_ops = calloc(STORE_HANDOFF_GROUPS * cfg->batch_max, sizeof(*s->batch_ops));
    s->staged = calloc(cfg->batch_max, sizeof(*s->staged));
    s->hstaged = calloc(cfg->batch_max, sizeof(*s->hstaged));
    for (s->staged_mask = 1; s->staged_mask < 2 * cfg->batch_max; s->staged_mask *= 2) {
    }
    s->staged_at = calloc(s->staged_mask, sizeof(*s->staged_at));
    s->staged_mask--;
    if (s->path == NULL || s->batch_ops == NULL || s->staged == NULL || s->staged_at == NULL ||
        s->hstaged == NULL || overlay_init(&s->ov) != 0 || overlay_init(&s->hov) != 0) {
        overlay_free(&s->ov);
        free(s->path);
        free(s->batch_ops);
        free(s->staged);
        free(s->hstaged);
        free(s->staged_at);
        free(s);
        return NULL;
    }
    buf_init(&s->wal_buf, 0);
    s->wal_fd = -1;
    atomic_init(&s->ov_absorbed_txn, UINT64_MAX);
    s->cfg = *cfg;
    s->lock_fd = -1;
    s->event_fd = -1;
    snprintf(s->node_id, sizeof(s->node_id), "%s", cfg->node_id);
    memcpy(s->cluster_id, cfg->cluster_id, cfg->cluster_id_len);
    hlc_init(&s->hlc);
    s->generation = atomic_fetch_add(&store_generations, 1) + 1;
    return s;
}

int store_open(struct store **out, const struct store_config *cfg, char *err, size_t err_len)
{
    char scratch[8];
    struct store *s;
    int rc;

    *out = NULL;
    if (err == NULL) {
        err = scratch;
        err_len = sizeof(scratch);
    }
    err[0] = '\0';
    rc = store_check_config(cfg, err, err_len);
    if (rc != 0) {
        return rc;
    }
    s = store_alloc(cfg);
    if (s == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    if (mkdir(s->path, 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_len, "cannot create data directory %s: %s", s->path, strerror(errno));
        rc = RK_EIO;
        goto out_close;
    }
    rc = store_init_sync(s);
    rc = rc ? rc : store_check_dir(s, err, err_len);
    rc = rc ? rc : store_lock_dir(s, err, err_len);
    rc = rc ? rc : store_env_open(s, err, err_len);
    rc = rc ? rc : store_open_tables(s, err, err_len);
    rc = rc ? rc : store_count_tombstones(s, err, err_len);
    rc = rc ? rc : store_log_open(s, err, err_len);
    rc = rc ? rc : store_open_actor(s, err, err_len);
    if (rc == 0 && pthread_create(&s->writer, NULL, store_writer_main, s) != 0) {
        snprintf(err, err_len, "cannot start the writer thread");
        rc = RK_ENOMEM;
    }
    s->writer_started = rc == 0;
    if (rc == 0 && cfg->sync == STORE_SYNC_BATCH) {
        if (pthread_create(&s->syncer, NULL, store_syncer_main, s) != 0) {
            snprintf(err, err_len, "cannot start the sync thread");
            rc = RK_ENOMEM;
        }
        s->syncer_started = rc == 0;
    }
    if (rc != 0) {
        goto out_close;
    }
    *out = s;
    return 0;
out_close:
    store_close(s);
    return rc;
}

void store_close(struct store *s)
{
    if (s == NULL) {
        return;
    }
    if (s->writer_started || s->syncer_started) {
        pthread_mutex_lock(&s->mu);
        s->closing = true;
        pthread_cond_signal(&s->work);
        pthread_cond_signal(&s->sync_wake);
        pthread_mutex_unlock(&s->mu);
    }
    if (s->syncer_started) {
        pthread_join(s->syncer, NULL);
    }
    if (s->writer_started) {
        pthread_join(s->writer, NULL);
        store_dispatch(s);
    }
    if (s->env != NULL && s->wal_fd >= 0 && !atomic_load(&s->disk_failed)) {
        int ckpt = store_checkpoint(s); /* on failure the log keeps it for the next open */
        if (store_log_pending(s) && s->cfg.sync != STORE_SYNC_NONE && store_log_sync(s) != 0) {
            LOG(LOG_ERROR, "store_disk_failed", "path=%s call=wal_fsync_at_close", s->path);
        }
        if (s->writer_started && ckpt == 0 && !store_log_pending(s) &&
            !atomic_load(&s->disk_failed)) {
            store_close_life(s);
        }
    }
    while (s->readers != NULL) {
        struct store_reader *r = s->readers;
        s->readers = r->next;
        mdb_txn_abort(r->txn);
        free(r);
    }
    if (s->env != NULL) {
        if (s->cfg.sync != STORE_SYNC_NONE && !atomic_load(&s->disk_failed) && store_sync(s) != 0) {
            LOG(LOG_ERROR, "store_disk_failed", "path=%s call=fsync_at_close", s->path);
        }
        mdb_env_close(s->env);
    }
    if (s->wal_fd >= 0) {
        close(s->wal_fd);
    }
    overlay_free(&s->ov);
    overlay_free(&s->hov);
    record_deinit(&s->apply_view); /* a view released after each use */
    record_deinit(&s->apply_in);
    buf_free(&s->wal_buf);
    free(s->staged);
    free(s->hstaged);
    free(s->staged_at);
    if (s->lock_fd >= 0) {
        close(s->lock_fd);
    }
    if (s->event_fd >= 0) {
        close(s->event_fd);
        pthread_rwlock_destroy(&s->resize_lock);
        pthread_cond_destroy(&s->work);
        pthread_cond_destroy(&s->more);
        pthread_cond_destroy(&s->sync_wake);
        pthread_mutex_destroy(&s->mu);
    }
    free(s->batch_ops);
    free(s->path);
    free(s);
}

/* --- reads ------------------------------------------------------------------ */

/*
 * Read transactions are reused: each thread keeps one per store, reset
 * between reads and renewed for the next (LMDB's recommended pattern), which
 * saves allocating a transaction and claiming a reader slot per read.  The
 * store lists its readers, one per thread that read it, with the thread's
 * id, so a thread moving between stores finds its reader again instead of
 * claiming another of LMDB's reader slots (126 by default) per switch.  The
 * thread caches its last store's reader, remembering the store and its
 * generation, never a pointer it would have to dereference, so a closed
 * store's readers are never touched: the store frees them itself.  A
 * nested read (a scan callback reading) gets a transaction of its own.
 */

/* This thread's listed reader of s, or NULL (mu held). */
static struct store_reader *reader_find(struct store *s)
{
    pthread_t self = pthread_self();

    for (struct store_reader *r = s->readers; r != NULL; r = r->next) {
        if (pthread_equal(r->thread, self)) {
            return r;
        }
    }
    return NULL;
}

/* A new reader of s for this thread, listed in s; NULL when LMDB refuses. */
static struct store_reader *reader_new(struct store *s)
{
    struct store_reader *r = calloc(1, sizeof(*r));

    if (r == NULL || mdb_txn_begin(s->env, NULL, MDB_RDONLY, &r->txn) != 0) {
        free(r);
        return NULL;
    }
    mdb_txn_reset(r->txn);
    r->thread = pthread_self();
    pthread_mutex_lock(&s->mu);
    r->next = s->readers;
    s->readers = r;
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* This thread's reader of s, created on first use; NULL when it is busy. */
static struct store_reader *reader_get(struct store *s)
{
    struct store_reader *r;

    if (tl_store == s && tl_generation == s->generation) {
        return tl_reader->in_use ? NULL : tl_reader;
    }
    pthread_mutex_lock(&s->mu);
    r = reader_find(s);
    pthread_mutex_unlock(&s->mu);
    if (r == NULL) {
        r = reader_new(s);
    }
    if (r == NULL || r->in_use) {
        return NULL;
    }
    tl_store = s;
    tl_generation = s->generation;
    tl_reader = r;
    return r;
}

/*
 * Take the resize lock shared for a read, once per thread and store: a
 * read nested in another of the same store (a scan callback reading) shares
 * the lock its thread holds, since taking it twice would wait behind a
 * writer that waits for the first (the lock prefers writers).
 */
static void read_lock(struct store *s)
{
    if (tl_lock_depth > 0 && tl_lock_gen == s->generation) {
        tl_lock_depth++;
        return;
    }
    pthread_rwlock_rdlock(&s->resize_lock);
    if (tl_lock_depth == 0) {
        tl_lock_gen = s->generation;
        tl_lock_depth = 1;
    }
}

static void read_unlock(struct store *s)
{
    if (tl_lock_depth > 0 && tl_lock_gen == s->generation) {
        if (--tl_lock_depth > 0) {
            return;
        }
    }
    pthread_rwlock_unlock(&s->resize_lock);
}

/* Does this thread hold a read of s (and so must not wait for a write)? */
static bool read_locked(const struct store *s)
{
    return tl_lock_depth > 0 && tl_lock_gen == s->generation;
}

/* Begin a read transaction under the shared resize lock. */
static int read_begin(struct store *s, MDB_txn **txn)
{
    struct store_reader *r;
    int rc;

    if (tl_hold > 0 && tl_store == s && tl_generation == s->generation && tl_hold_txn != NULL) {
        *txn = tl_hold_txn;
        return 0;
    }

    read_lock(s);
    r = reader_get(s);
    if (r != NULL && mdb_txn_renew(r->txn) == 0) {
        r->in_use = true;
        *txn = r->txn;
        return 0;
    }
    rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, txn);
    if (rc != 0) {
        read_unlock(s);
    }
    return store_err(rc);
}

/*
 * End a read: a reader's transaction is reset for reuse, whether or not
 * the thread's cache still points at it (a nested read of another store
 * may have moved the cache); any other transaction is aborted.
 */
static void read_end(struct store *s, MDB_txn *txn)
{
    struct store_reader *r = NULL;

    if (tl_hold > 0 && txn == tl_hold_txn) {
        return; /* released by store_read_release() */
    }
    if (tl_store == s && tl_generation == s->generation && tl_reader->txn == txn) {
        r = tl_reader;
    } else {
        pthread_mutex_lock(&s->mu);
        r = reader_find(s);
        pthread_mutex_unlock(&s->mu);
        r = r != NULL && r->txn == txn ? r : NULL;
    }
    if (r != NULL) {
        mdb_txn_reset(txn);
        r->in_use = false;
    } else {
        mdb_txn_abort(txn);
    }
    read_unlock(s);
}

/*
 * The stored record of a data-table key as a read sees it (under a read
 * transaction, so with the resize lock held): the overlay's, when the
 * write-ahead log holds a newer one than LMDB, else LMDB's.
 */
static int data_get(struct store *s, MDB_txn *txn, const MDB_val *k, MDB_val *v)
{
    struct ov_entry *e = overlay_find(&s->ov, k->mv_data, k->mv_size);

    if (e != NULL) {
        v->mv_data = ov_rec(e);
        v->mv_size = e->rec_len;
        return 0;
    }
    return mdb_get(txn, s->dbi_data, (MDB_val *)k, v);
}

int store_get(struct store *s, const void *key, size_t len, struct record *out)
{
    uint8_t k[8 + STORE_KEY_MAX];
    MDB_val mk, mv;
    MDB_txn *txn;
    int rc;

    record_deinit(out);
    if (len > STORE_KEY_MAX) {
        return RK_ETOOBIG;
    }
    mk.mv_size = data_key(k, store_position(s, key, len), key, len);
    mk.mv_data = k;
    rc = read_begin(s, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = data_get(s, txn, &mk, &mv);
    if (rc == 0) {
        rc = record_decode(mv.mv_data, mv.mv_size, out);
        if (rc != 0) {
            atomic_fetch_add(&s->stat.decode_errors, 1);
            rc = RK_ESYNTAX;
        }
    } else {
        rc = store_err(rc);
    }
    read_end(s, txn);
    return rc;
}

int store_read(struct store *s, const void *key, size_t len,
               int (*fn)(void *ctx, const uint8_t *record, size_t record_len), void *ctx)
{
    uint8_t k[8 + STORE_KEY_MAX];
    MDB_val mk, mv;
    MDB_txn *txn;
    int rc;

    if (len > STORE_KEY_MAX) {
        return RK_ETOOBIG;
    }
    mk.mv_size = data_key(k, store_position(s, key, len), key, len);
    mk.mv_data = k;
    rc = read_begin(s, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = data_get(s, txn, &mk, &mv);
    rc = rc == 0 ? fn(ctx, mv.mv_data, mv.mv_size) : store_err(rc);
    read_end(s, txn);
    return rc;
}

int store_read_hold(struct store *s)
{
    int rc;

    if (tl_hold++ > 0) {
        return 0;
    }
    tl_hold_txn = NULL;
    rc = read_begin(s, &tl_hold_txn);
    if (rc != 0) {
        tl_hold_txn = NULL;
    }
    return rc;
}

void store_read_release(struct store *s)
{
    MDB_txn *txn = tl_hold_txn;

    if (--tl_hold > 0 || txn == NULL) {
        return;
    }
    tl_hold_txn = NULL;
    read_end(s, txn);
}

void store_cursor_init(struct store_cursor *c)
{
    memset(c, 0, sizeof(*c));
}

/* The arc (start, end] as at most two inclusive position ranges. */
struct arc_ranges {
    uint64_t lo[2], hi[2];
    int n;
};

static void arc_split(uint64_t start, uint64_t end, struct arc_ranges *a)
{
    a->n = 0;
    if (start < end) {
        a->lo[0] = start + 1;
        a->hi[0] = end;
        a->n = 1;
        return;
    }
    if (start != UINT64_MAX) {
        a->lo[a->n] = start + 1;
        a->hi[a->n++] = UINT64_MAX;
    }
    a->lo[a->n] = 0;
    a->hi[a->n++] = end;
}

/*
 * Walk the keys of an arc from a cursor with an LMDB cursor, calling visit
 * per key, until visit returns non-zero (returned) or the arc ends (cursor
 * marked done).  Shared by scans, range deletes and tombstone collection;
 * visit may delete the current key with mdb_cursor_del().
 */
typedef int (*arc_visit_fn)(void *ctx, MDB_cursor *c, MDB_val *k, MDB_val *v);

/* Position c at the first key of [lo, hi] after the cursor, when the cursor lies in it. */
static int arc_seek(MDB_cursor *c, const struct store_cursor *cur, uint64_t lo, uint64_t hi,
                    MDB_val *k, MDB_val *v)
{
    uint8_t buf[8];
    int rc;

    if (cur->started && cur->last_len >= 8 && bytes_get_be64(cur->last) >= lo &&
        bytes_get_be64(cur->last) <= hi) {
        k->mv_size = cur->last_len;
        k->mv_data = (void *)cur->last;
        rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
        if (rc == 0 && k->mv_size == cur->last_len &&
            memcmp(k->mv_data, cur->last, cur->last_len) == 0) {
            rc = mdb_cursor_get(c, k, v, MDB_NEXT);
        }
        return rc;
    }
    bytes_put_be64(buf, lo);
    k->mv_size = 8;
    k->mv_data = buf;
    return mdb_cursor_get(c, k, v, MDB_SET_RANGE);
}

static int arc_walk(MDB_cursor *c, uint64_t start, uint64_t end, struct store_cursor *cur,
                    arc_visit_fn visit, void *ctx)
{
    struct arc_ranges a;
    MDB_val k, v;
    int first = 0, rc = 0;

    arc_split(start, end, &a);
    if (cur->started && cur->last_len >= 8 && a.n == 2 && bytes_get_be64(cur->last) <= a.hi[1] &&
        bytes_get_be64(cur->last) < a.lo[0]) {
        first = 1; /* the cursor is in the second range already */
    }
    for (int i = first; i < a.n; i++) {
        int mrc = arc_seek(c, cur, a.lo[i], a.hi[i], &k, &v);
        while (mrc == 0 && k.mv_size >= 8 && bytes_get_be64(k.mv_data) <= a.hi[i]) {
            memcpy(cur->last, k.mv_data, k.mv_size);
            cur->last_len = k.mv_size;
            cur->started = true;
            rc = visit(ctx, c, &k, &v);
            if (rc != 0) {
                return rc;
            }
            mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
        if (mrc != 0 && mrc != MDB_NOTFOUND) {
            return store_err(mrc);
        }
    }
    cur->done = true;
    return 0;
}

/* A stop signal of the walkers themselves, never returned to callers. */
#define ARC_LIMIT 1

/*
 * A scan sees what reads see: LMDB's keys, each with the overlay's record
 * when the log holds a newer one, and, merged in arc order, the keys only
 * the overlay has (fresh entries, from its sorted view).
 */
struct scan_ctx {
    store_scan_fn fn;
    void *ctx;
    size_t max_items, max_bytes, items, bytes;
    int stopped; /* the callback's non-zero return */
    struct store *s;
    struct store_cursor *cur;
    struct ov_entry *const *sorted; /* the overlay in key order; NULL: no fresh keys */
    size_t nsorted, idx;
    struct arc_ranges a;
    int range; /* the range of sorted[idx] */
    /*
     * The overlay in key order again, for the LMDB keys it holds newer
     * records of (scan_shadow()): NULL when it is empty.  view[vidx] is the
     * first entry not below the last LMDB key looked up, in range vrange
     * (-1: none looked up yet).
     */
    struct ov_entry *const *view;
    size_t nview, vidx;
    int vrange;
};

/* The range of the arc holding position pos. */
static int arc_range_of(const struct arc_ranges *a, uint64_t pos)
{
    return a->n == 2 && pos >= a->lo[1] && pos <= a->hi[1] ? 1 : 0;
}

/* Start of range i in the sorted view: after the cursor when it lies in it. */
static void scan_fresh_seek(struct scan_ctx *sc, int i)
{
    const struct store_cursor *cur = sc->cur;
    uint8_t lo[8];

    sc->range = i;
    if (cur->started && cur->last_len >= 8 && bytes_get_be64(cur->last) >= sc->a.lo[i] &&
        bytes_get_be64(cur->last) <= sc->a.hi[i]) {
        sc->idx = overlay_lower_bound(sc->sorted, sc->nsorted, cur->last, cur->last_len);
        if (sc->idx < sc->nsorted && sc->sorted[sc->idx]->key_len == cur->last_len &&
            memcmp(ov_key(sc->sorted[sc->idx]), cur->last, cur->last_len) == 0) {
            sc->idx++;
        }
        return;
    }
    bytes_put_be64(lo, sc->a.lo[i]);
    sc->idx = overlay_lower_bound(sc->sorted, sc->nsorted, lo, 8);
}

/* The next fresh entry of the arc in arc order, or NULL. */
static struct ov_entry *scan_fresh_peek(struct scan_ctx *sc)
{
    while (sc->sorted != NULL && sc->range < sc->a.n) {
        for (; sc->idx < sc->nsorted; sc->idx++) {
            struct ov_entry *e = sc->sorted[sc->idx];
            if (bytes_get_be64(ov_key(e)) > sc->a.hi[sc->range]) {
                break;
            }
            if (e->fresh) {
                return e;
            }
        }
        if (sc->range + 1 >= sc->a.n) {
            sc->range = sc->a.n;
            break;
        }
        scan_fresh_seek(sc, sc->range + 1);
    }
    return NULL;
}

/* Hand one key to the callback and mark it visited: ARC_LIMIT when the scan stops. */
static int scan_emit(struct scan_ctx *sc, const uint8_t *key, size_t key_len, const uint8_t *rec,
                     size_t rec_len)
{
    struct store_item it = {bytes_get_be64(key), key + 8, key_len - 8, rec, rec_len};
    int rc;

    memcpy(sc->cur->last, key, key_len);
    sc->cur->last_len = key_len;
    sc->cur->started = true;
    rc = sc->fn(sc->ctx, &it);
    if (rc != 0) {
        sc->stopped = rc;
        return ARC_LIMIT;
    }
    sc->items++;
    sc->bytes += rec_len;
    if ((sc->max_items && sc->items >= sc->max_items) ||
        (sc->max_bytes && sc->bytes >= sc->max_bytes)) {
        return ARC_LIMIT;
    }
    return 0;
}

/* Emit the fresh keys that come before LMDB key k (NULL: all that are left). */
static int scan_fresh_until(struct scan_ctx *sc, const MDB_val *k)
{
    int rk = k != NULL ? arc_range_of(&sc->a, bytes_get_be64(k->mv_data)) : sc->a.n;
    struct ov_entry *f;

    while ((f = scan_fresh_peek(sc)) != NULL &&
           (sc->range < rk || (sc->range == rk && overlay_key_cmp(ov_key(f), f->key_len, k->mv_data,
                                                                  k->mv_size) < 0))) {
        int rc;
        sc->idx++;
        rc = scan_emit(sc, ov_key(f), f->key_len, ov_rec(f), f->rec_len);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/*
 * The overlay's entry of LMDB key k, or NULL: a walk of the sorted view
 * beside LMDB's keys, which come in ascending order within a range, not a
 * hash lookup per key (a cache miss each into a table sized for the
 * overlay's largest, most of a source node's CPU while it served a join).
 */
static struct ov_entry *scan_shadow(struct scan_ctx *sc, const MDB_val *k)
{
    int r;

    if (sc->view == NULL) {
        return NULL;
    }
    r = arc_range_of(&sc->a, bytes_get_be64(k->mv_data));
    if (r != sc->vrange) {
        sc->vidx = overlay_lower_bound(sc->view, sc->nview, k->mv_data, k->mv_size);
        sc->vrange = r;
    } else {
        while (sc->vidx < sc->nview &&
               overlay_key_cmp(ov_key(sc->view[sc->vidx]), sc->view[sc->vidx]->key_len, k->mv_data,
                               k->mv_size) < 0) {
            sc->vidx++;
        }
    }
    if (sc->vidx < sc->nview && sc->view[sc->vidx]->key_len == k->mv_size &&
        memcmp(ov_key(sc->view[sc->vidx]), k->mv_data, k->mv_size) == 0) {
        return sc->view[sc->vidx];
    }
    return NULL;
}

static int scan_visit(void *ctx, MDB_cursor *c, MDB_val *k, MDB_val *v)
{
    struct scan_ctx *sc = ctx;
    struct ov_entry *e;
    int rc = scan_fresh_until(sc, k);

    (void)c;
    if (rc != 0) {
        return rc;
    }
    e = scan_shadow(sc, k);
    if (e != NULL) {
        return scan_emit(sc, k->mv_data, k->mv_size, ov_rec(e), e->rec_len);
    }
    return scan_emit(sc, k->mv_data, k->mv_size, v->mv_data, v->mv_size);
}

/*
 * Does a read transaction's snapshot lack the overlay's fresh keys?  Not
 * once it includes a checkpoint's commit that has not emptied the overlay
 * yet (read lock held, so the overlay does not change meanwhile).
 */
static bool store_fresh_apart(struct store *s, MDB_txn *txn)
{
    return s->ov.fresh > 0 && mdb_txn_id(txn) < atomic_load(&s->ov_absorbed_txn);
}

/* Set up the merge of the overlay's fresh keys (read lock held). */
static int scan_fresh_init(struct scan_ctx *sc, MDB_txn *txn, uint64_t start, uint64_t end)
{
    int first = 0, rc;

    arc_split(start, end, &sc->a);
    sc->vrange = -1;
    if (sc->s->ov.n > 0) {
        rc = overlay_sorted(&sc->s->ov, &sc->view, &sc->nview);
        if (rc != 0) {
            return rc;
        }
    }
    if (!store_fresh_apart(sc->s, txn)) {
        return 0;
    }
    sc->sorted = sc->view;
    sc->nsorted = sc->nview;
    if (sc->cur->started && sc->cur->last_len >= 8 && sc->a.n == 2 &&
        bytes_get_be64(sc->cur->last) <= sc->a.hi[1] &&
        bytes_get_be64(sc->cur->last) < sc->a.lo[0]) {
        first = 1; /* as arc_walk(): the cursor is in the second range already */
    }
    scan_fresh_seek(sc, first);
    return 0;
}

int store_scan(struct store *s, uint64_t start, uint64_t end, struct store_cursor *cur,
               size_t max_items, size_t max_bytes, store_scan_fn fn, void *ctx)
{
    struct scan_ctx sc = {
        .fn = fn, .ctx = ctx, .max_items = max_items, .max_bytes = max_bytes, .s = s, .cur = cur};
    MDB_cursor *c;
    MDB_txn *txn;
    int rc;

    if (cur->done) {
        return 0;
    }
    rc = read_begin(s, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = scan_fresh_init(&sc, txn, start, end);
    if (rc != 0) {
        read_end(s, txn);
        return rc;
    }
    rc = mdb_cursor_open(txn, s->dbi_data, &c);
    if (rc != 0) {
        read_end(s, txn);
        return store_err(rc);
    }
    rc = arc_walk(c, start, end, cur, scan_visit, &sc);
    mdb_cursor_close(c);
    if (rc == 0) { /* LMDB's keys are done: the overlay's after them */
        rc = scan_fresh_until(&sc, NULL);
        cur->done = rc == 0;
    }
    read_end(s, txn);
    if (rc == ARC_LIMIT) {
        return sc.stopped;
    }
    return rc;
}

struct stats_ctx {
    uint64_t keys, bytes;
};

static int stats_visit(void *ctx, const struct store_item *it)
{
    struct stats_ctx *st = ctx;
    st->keys++;
    st->bytes += 8 + it->key_len + it->record_len;
    return 0;
}

/* Chunk size of arc statistics: bounds how long one read transaction lives. */
#define STORE_STATS_CHUNK 4096

int store_arc_stats(struct store *s, uint64_t start, uint64_t end, uint64_t *keys, uint64_t *bytes)
{
    struct stats_ctx st = {0, 0};
    struct store_cursor cur;
    int rc = 0;

    store_cursor_init(&cur);
    while (!cur.done && rc == 0) {
        rc = store_scan(s, start, end, &cur, STORE_STATS_CHUNK, 0, stats_visit, &st);
    }
    *keys = st.keys;
    *bytes = st.bytes;
    return rc;
}

/*
 * Digests of an arc's sub-arcs (store_arc_digest()): the scan visits the
 * arc in position order, so sub-arcs come in order and one hash state at a
 * time is open.
 */
struct digest_ctx {
    uint64_t start;
    unsigned __int128 len; /* the arc's length in positions: 1 .. 2^64 */
    unsigned parts;
    unsigned cur; /* the sub-arc whose state is open */
    crypto_generichash_state st;
    uint8_t (*out)[STORE_DIGEST_LEN];
    uint64_t keys;
};

/*
 * The sub-arc of position pos: the i with floor(i*L/parts) < d <=
 * floor((i+1)*L/parts), d pos's offset from start in 1 .. L; that is
 * i = floor((d*parts - 1) / L).
 */
static unsigned digest_part(const struct digest_ctx *dc, uint64_t pos)
{
    unsigned __int128 d = (uint64_t)(pos - dc->start);

    if (d == 0) {
        d = (unsigned __int128)1 << 64; /* start itself: the whole circle's last position */
    }
    return (unsigned)((d * dc->parts - 1) / dc->len);
}

/* Finish the open sub-arc's digest and open the next ones up to part. */
static void digest_advance(struct digest_ctx *dc, unsigned part)
{
    while (dc->cur < part) {
        crypto_generichash_final(&dc->st, dc->out[dc->cur], STORE_DIGEST_LEN);
        dc->cur++;
        crypto_generichash_init(&dc->st, NULL, 0, STORE_DIGEST_LEN);
    }
}

/* Hash one key: position, key length and bytes, the record's canonical form. */
static int digest_visit(void *ctx, const struct store_item *it)
{
    struct digest_ctx *dc = ctx;
    uint8_t head[12], one[8], *canon = NULL;
    const uint8_t *form, *form_tail = NULL;
    size_t form_len, tail_len = 0;
    struct record r;
    int rc;

    /*
     * One sibling (nearly every key): its canonical form is the count 1, the
     * sibling's length, and the record's own bytes after the 4-byte head
     * (format 1, flags 0, n 1), as the records this store writes are
     * record_encode()'s, which is what record_canonical() encodes each
     * sibling with: no decoding needed.
     */
    if (it->record_len > 4 && it->record[0] == 1 && it->record[1] == 0 &&
        bytes_get_be16(it->record + 2) == 1) {
        bytes_put_be32(one, 1);
        bytes_put_be32(one + 4, (uint32_t)(it->record_len - 4));
        form = one;
        form_len = sizeof(one);
        form_tail = it->record + 4;
        tail_len = it->record_len - 4;
    } else {
        record_init(&r);
        rc = record_decode(it->record, it->record_len, &r);
        if (rc != 0) {
            record_deinit(&r);
            return rc == RK_ENOMEM ? rc : RK_ESYNTAX;
        }
        rc = record_canonical(&r, &canon, &form_len);
        record_deinit(&r);
        if (rc != 0) {
            return rc;
        }
        form = canon;
    }
    digest_advance(dc, digest_part(dc, it->pos));
    bytes_put_be64(head, it->pos);
    bytes_put_be32(head + 8, (uint32_t)it->key_len);
    crypto_generichash_update(&dc->st, head, sizeof(head));
    crypto_generichash_update(&dc->st, it->key, it->key_len);
    crypto_generichash_update(&dc->st, form, form_len);
    if (tail_len > 0) {
        crypto_generichash_update(&dc->st, form_tail, tail_len);
    }
    free(canon);
    dc->keys++;
    return 0;
}

int store_arc_digest(struct store *s, uint64_t start, uint64_t end, unsigned parts,
                     uint8_t (*out)[STORE_DIGEST_LEN], uint64_t *keys)
{
    struct digest_ctx dc = {.start = start, .parts = parts, .out = out};
    struct store_cursor cur;
    int rc = 0;

    if (parts < 1 || parts > STORE_DIGEST_PARTS_MAX) {
        return RK_EINVAL;
    }
    dc.len = (uint64_t)(end - start);
    if (dc.len == 0) {
        dc.len = (unsigned __int128)1 << 64;
    }
    crypto_generichash_init(&dc.st, NULL, 0, STORE_DIGEST_LEN);
    store_cursor_init(&cur);
    while (!cur.done && rc == 0) {
        rc = store_scan(s, start, end, &cur, STORE_STATS_CHUNK, 0, digest_visit, &dc);
    }
    digest_advance(&dc, parts - 1);
    crypto_generichash_final(&dc.st, out[parts - 1], STORE_DIGEST_LEN);
    if (keys != NULL) {
        *keys = dc.keys;
    }
    return rc;
}

/*
 * A value of the handoff table as a read sees it (under a read
 * transaction): the log's newest set or delete of the key when the log
 * holds one LMDB does not have yet, else LMDB's.
 */
static int handoff_get(struct store *s, MDB_txn *txn, MDB_val *k, MDB_val *v)
{
    struct ov_entry *e = overlay_find(&s->hov, k->mv_data, k->mv_size);

    if (e == NULL) {
        return mdb_get(txn, s->dbi_handoff, k, v);
    }
    if (e->gone) {
        return MDB_NOTFOUND;
    }
    v->mv_data = ov_rec(e);
    v->mv_size = e->rec_len;
    return 0;
}

int store_table_get(struct store *s, enum store_table t, const void *key, size_t key_len, void *buf,
                    size_t cap, size_t *len)
{
    MDB_val k = {key_len, (void *)key}, v;
    MDB_txn *txn;
    int rc = read_begin(s, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = t == STORE_TABLE_META ? mdb_get(txn, s->dbi_meta, &k, &v) : handoff_get(s, txn, &k, &v);
    if (rc == 0) {
        *len = v.mv_size;
        memcpy(buf, v.mv_data, v.mv_size < cap ? v.mv_size : cap);
        rc = v.mv_size <= cap ? 0 : RK_ETOOBIG;
    } else {
        rc = store_err(rc);
    }
    read_end(s, txn);
    return rc;
}

/* --- hints ---------------------------------------------------------------- */

/* Hint keys: the target's tag then the sequence number. */
static void hint_key(const struct store *s, const char *target, uint64_t seq, uint8_t out[16])
{
    bytes_put_be64(out, ring_hash(s->cfg.seed, target, strlen(target)));
    bytes_put_be64(out + 8, seq);
}

int store_hint_parse(const uint8_t *v, size_t len, struct store_hint *h,
                     char target[RING_NAME_MAX + 1])
{
    const uint8_t *p = v, *end = v + len;
    size_t tlen, klen, used;

    if (len < 1 || p[0] < 1 || p[0] > RING_NAME_MAX || len < 1u + p[0] + 8 + 2) {
        return RK_ESYNTAX;
    }
    tlen = p[0];
    if (!ring_name_valid((const char *)p + 1, tlen)) {
        return RK_ESYNTAX;
    }
    memcpy(target, p + 1, tlen);
    target[tlen] = '\0';
    h->target = target;
    p += 1 + tlen;
    h->pos = bytes_get_be64(p);
    klen = (size_t)p[8] << 8 | p[9];
    p += 10;
    if (klen > STORE_KEY_MAX || (size_t)(end - p) < klen) {
        return RK_ESYNTAX;
    }
    h->key = p;
    h->key_len = klen;
    p += klen;
    if (sibling_decode(p, (size_t)(end - p), &used, &h->version) != 0 ||
        used != (size_t)(end - p)) {
        return RK_ESYNTAX;
    }
    return 0;
}

struct hint_scan_ctx {
    struct store *s;
    const char *target;
    uint8_t tag[8];
    store_hint_fn fn;
    void *ctx;
    size_t max_items, items;
    int stopped;
};

static int hint_visit(struct hint_scan_ctx *hc, const MDB_val *k, const MDB_val *v)
{
    char target[RING_NAME_MAX + 1];
    struct store_hint h = {.seq = bytes_get_be64((const uint8_t *)k->mv_data + 8),
                           .target = target};
    int rc;

    sibling_init(&h.version);
    if (store_hint_parse(v->mv_data, v->mv_size, &h, target) != 0) {
        atomic_fetch_add(&hc->s->stat.decode_errors, 1);
    } else if (strcmp(target, hc->target) == 0) {
        rc = hc->fn(hc->ctx, &h);
        if (rc != 0) {
            hc->stopped = rc;
        }
        hc->items++;
    }
    sibling_deinit(&h.version);
    return hc->stopped;
}

static int hint_walk(struct hint_scan_ctx *hc, MDB_cursor *c, struct store_cursor *cur)
{
    MDB_val k, v;
    uint8_t start[16];
    int rc;

    memcpy(start, hc->tag, 8);
    memset(start + 8, 0, 8);
    k.mv_size = cur->started ? cur->last_len : 16;
    k.mv_data = cur->started ? cur->last : start;
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
    if (rc == 0 && cur->started && k.mv_size == cur->last_len &&
        memcmp(k.mv_data, cur->last, k.mv_size) == 0) {
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    while (rc == 0 && k.mv_size == 16 && memcmp(k.mv_data, hc->tag, 8) == 0) {
        memcpy(cur->last, k.mv_data, 16);
        cur->last_len = 16;
        cur->started = true;
        if (hint_visit(hc, &k, &v) != 0 || (hc->max_items && hc->items >= hc->max_items)) {
            return 0;
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return store_err(rc);
    }
    cur->done = true;
    return 0;
}

int store_hint_scan(struct store *s, const char *target, struct store_cursor *cur, size_t max_items,
                    store_hint_fn fn, void *ctx)
{
    struct hint_scan_ctx hc = {
        .s = s, .target = target, .fn = fn, .ctx = ctx, .max_items = max_items};
    MDB_cursor *c;
    MDB_txn *txn;
    int rc;

    if (cur->done) {
        return 0;
    }
    bytes_put_be64(hc.tag, ring_hash(s->cfg.seed, target, strlen(target)));
    rc = read_begin(s, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_open(txn, s->dbi_hints, &c);
    if (rc == 0) {
        rc = hint_walk(&hc, c, cur);
        mdb_cursor_close(c);
    } else {
        rc = store_err(rc);
    }
    read_end(s, txn);
    return rc != 0 ? rc : hc.stopped;
}

/* Count the hints of the target whose tag starts at the cursor's key; leave c past them. */
static int hint_count_target(MDB_cursor *c, MDB_val *k, MDB_val *v, char *target, uint64_t *count)
{
    uint8_t tag[8];
    int rc = 0;

    memcpy(tag, k->mv_data, 8);
    *count = 0;
    target[0] = '\0';
    while (rc == 0 && k->mv_size == 16 && memcmp(k->mv_data, tag, 8) == 0) {
        const uint8_t *p = v->mv_data;
        if (target[0] == '\0' && v->mv_size > 0 && p[0] > 0 && p[0] <= RING_NAME_MAX &&
            v->mv_size > (size_t)p[0]) {
            memcpy(target, p + 1, p[0]);
            target[p[0]] = '\0';
        }
        (*count)++;
        rc = mdb_cursor_get(c, k, v, MDB_NEXT);
    }
    return rc;
}

int store_hint_targets(struct store *s, store_hint_target_fn fn, void *ctx)
{
    char target[RING_NAME_MAX + 1];
    MDB_cursor *c;
    MDB_txn *txn;
    MDB_val k, v;
    uint64_t count;
    int rc = read_begin(s, &txn), stop = 0;

    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_open(txn, s->dbi_hints, &c);
    if (rc != 0) {
        read_end(s, txn);
        return store_err(rc);
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    while (rc == 0 && stop == 0) {
        rc = hint_count_target(c, &k, &v, target, &count);
        if (target[0] != '\0') {
            stop = fn(ctx, target, count);
        }
    }
    mdb_cursor_close(c);
    read_end(s, txn);
    if (rc != 0 && rc != MDB_NOTFOUND) {
        return store_err(rc);
    }
    return stop;
}

void store_get_stats(struct store *s, struct store_stats *st)
{
    MDB_envinfo info;
    MDB_stat ms;
    MDB_txn *txn;

    memset(st, 0, sizeof(*st));
    if (read_begin(s, &txn) == 0) {
        mdb_stat(txn, s->dbi_data, &ms);
        st->keys = ms.ms_entries + (store_fresh_apart(s, txn) ? s->ov.fresh : 0);
        st->tombstones = atomic_load(&s->tombstones);
        mdb_stat(txn, s->dbi_hints, &ms);
        st->hints = ms.ms_entries;
        mdb_env_info(s->env, &info);
        mdb_env_stat(s->env, &ms);
        st->map_size = info.me_mapsize;
        st->map_used = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
        read_end(s, txn);
    }
    st->commits = atomic_load(&s->stat.commits);
    st->syncs = atomic_load(&s->stat.syncs);
    st->ops = atomic_load(&s->stat.ops);
    st->ops_failed = atomic_load(&s->stat.ops_failed);
    st->enospc = atomic_load(&s->stat.enospc);
    st->map_grows = atomic_load(&s->stat.map_grows);
    st->map_full_runs = atomic_load(&s->stat.map_full_runs);
    st->decode_errors = atomic_load(&s->stat.decode_errors);
    st->recent_batch = atomic_load(&s->stat.recent_batch);
    st->disk_failures = atomic_load(&s->stat.disk_failures);
    st->checkpoints = atomic_load(&s->stat.checkpoints);
    st->logged = atomic_load(&s->stat.logged);
    st->overlay_keys = atomic_load(&s->stat.overlay_keys);
    st->wal_bytes = atomic_load(&s->stat.wal_bytes);
    st->checkpoint_ms = atomic_load(&s->stat.checkpoint_ms);
    st->disk_failed = atomic_load(&s->disk_failed);
}

/* --- operations, run by the writer inside its transaction ------------------- */

/* What one batch's transaction carries while its operations run. */
struct batch {
    struct store *s;
    MDB_txn *txn;
    uint64_t wall_ms;
    int mdb_rc;        /* an LMDB error that poisons the transaction (MDB_MAP_FULL ...) */
    uint64_t hlc_high; /* the clock's high-water mark as this batch leaves it */
    MDB_cursor *data;  /* on the data table in txn, opened at first use (batch_cursor()) */
    /*
     * A logged batch (batch_logged()): txn is a read transaction, records
     * are read through the overlay and staged in s->staged, and the batch
     * reaches disk as one record of the write-ahead log.
     */
    bool logged;
    bool deletions; /* every operation of the batch deletes (op_is_deletion()) */
    bool fresh;     /* the key batch_load() read last is not in LMDB */
    /*
     * The change its operations made to the count of records of tombstones
     * (s->tombstones): each op adds what it stored (or deleted) minus what
     * was there; added to the count only once the batch is durable
     * (batch_publish()), so a batch tried again counts once.
     */
    int64_t tombstones;
};

/* A batch is durable (logged, or committed to LMDB): its change to the tombstone count counts. */
static void batch_publish(struct batch *b)
{
    atomic_fetch_add(&b->s->tombstones, (uint64_t)b->tombstones); /* modulo 2^64: a fall too */
}

/* Record an LMDB failure: the op's code, and the transaction-level poison. */
static int batch_fail(struct batch *b, int rc)
{
    if (rc == MDB_MAP_FULL || rc == MDB_TXN_FULL || rc == ENOSPC || rc == EIO || rc == ENOMEM ||
        rc == EFBIG || rc == EDQUOT) {
        b->mdb_rc = rc;
    }
    return store_err(rc);
}

/*
 * Keep the clock's high-water mark ("hlc" in meta) at or above the clock,
 * in the transaction whose records carry its stamps, so a reopened store
 * never hands out a stamp below one it stored.  The mark is set a lease of
 * STORE_HLC_LEASE_MS ahead, so only about one transaction a lease writes
 * it; a reopened clock starts at most that far ahead of its last stamp.
 */
static int batch_hlc_persist(struct batch *b)
{
    uint64_t last = b->s->hlc.last, lease;
    uint8_t buf[8];
    int rc;

    if (last <= b->hlc_high) {
        return 0;
    }
    lease = hlc_make(hlc_physical(last) + STORE_HLC_LEASE_MS, 0);
    b->hlc_high = lease > last ? lease : last; /* no lease past the clock's end */
    if (b->logged) {
        return 0; /* the batch's log record carries it (batch_log()) */
    }
    bytes_put_be64(buf, b->hlc_high);
    rc = meta_put(b->txn, b->s->dbi_meta, "hlc", buf, 8);
    return rc ? batch_fail(b, rc) : 0;
}

/*
 * The batch's cursor on the data table in its current transaction, opened
 * at first use and kept for the batch: reading a key and writing it back
 * through one cursor descends the B-tree once (LMDB looks for the key on
 * the cursor's page first), where mdb_get() and mdb_put() descend twice.
 */
static int batch_cursor(struct batch *b, MDB_cursor **c)
{
    if (b->data == NULL) {
        int rc = mdb_cursor_open(b->txn, b->s->dbi_data, &b->data);
        if (rc != 0) {
            b->data = NULL;
            return batch_fail(b, rc);
        }
    }
    *c = b->data;
    return 0;
}

/* Close the batch's cursor: before its transaction ends or a nested one begins. */
static void batch_cursor_close(struct batch *b)
{
    if (b->data != NULL) {
        mdb_cursor_close(b->data);
        b->data = NULL;
    }
}

/*
 * The slot of s->staged_at holding the latest staged entry of data key
 * key[0..len) (at least its 8 bytes of position), or the empty slot where
 * it would go.
 */
static size_t staged_probe(const struct store *s, const uint8_t *key, size_t len)
{
    uint64_t pos = bytes_get_be64(key); /* a hash already */
    size_t i = (size_t)((pos ^ pos >> 32) & s->staged_mask);

    for (;; i = (i + 1) & s->staged_mask) {
        uint32_t at = s->staged_at[i];
        const struct ov_entry *x = at != 0 ? s->staged[at - 1] : NULL;
        if (x == NULL || (x->key_len == len && memcmp(ov_key(x), key, len) == 0)) {
            return i;
        }
    }
}

/* Index staged entry i, now its key's latest. */
static void staged_index(struct store *s, size_t i)
{
    const struct ov_entry *e = s->staged[i];

    s->staged_at[staged_probe(s, ov_key(e), e->key_len)] = (uint32_t)i + 1;
}

/* Keep the first keep staged entries and their index; the others are the caller's. */
static void staged_cut(struct store *s, size_t keep)
{
    if (s->nstaged > 0) {
        memset(s->staged_at, 0, (s->staged_mask + 1) * sizeof(*s->staged_at));
    }
    s->nstaged = keep;
    for (size_t i = 0; i < keep; i++) {
        staged_index(s, i);
    }
}

/*
 * The record of a data key as a logged batch sees it: this batch's own
 * latest write of it, else the overlay's, else LMDB's (the batch's read
 * transaction); notes in b->fresh whether LMDB lacks the key.
 */
static int batch_load_logged(struct batch *b, const MDB_val *k, MDB_val *v)
{
    struct store *s = b->s;
    struct ov_entry *e = NULL;
    int rc;

    if (s->nstaged > 0) {
        uint32_t at = s->staged_at[staged_probe(s, k->mv_data, k->mv_size)];
        e = at != 0 ? s->staged[at - 1] : NULL;
    }
    e = e != NULL ? e : overlay_find(&s->ov, k->mv_data, k->mv_size);
    if (e != NULL) {
        b->fresh = e->fresh;
        v->mv_data = ov_rec(e);
        v->mv_size = e->rec_len;
        return 0;
    }
    rc = mdb_get(b->txn, s->dbi_data, (MDB_val *)k, v);
    b->fresh = rc == MDB_NOTFOUND;
    return rc;
}

/*
 * Stage a logged batch's new record of a data key: encoded into an overlay
 * entry, published when the batch is in the log (batch_logged()).
 */
static int batch_stage(struct batch *b, const MDB_val *k, const struct record *r)
{
    struct store *s = b->s;
    struct ov_entry *e;

    if (s->nstaged >= s->cfg.batch_max) {
        return RK_EINVAL; /* one entry per operation: cannot happen */
    }
    e = overlay_entry_alloc(&s->ov, k->mv_data, k->mv_size, record_encoded_size(r), b->fresh);
    if (e == NULL) {
        return RK_ENOMEM;
    }
    record_encode(r, ov_rec(e));
    s->staged[s->nstaged] = e;
    staged_index(s, s->nstaged++);
    return 0;
}

/*
 * Take a logged batch's staged entries back to the first keep, and its
 * staged handoff-table entries to the first hkeep.
 */
static void batch_unstage(struct store *s, size_t keep, size_t hkeep)
{
    for (size_t i = keep; i < s->nstaged; i++) {
        overlay_entry_free(s->staged[i]);
    }
    staged_cut(s, keep);
    for (size_t i = hkeep; i < s->nhstaged; i++) {
        free(s->hstaged[i]);
    }
    s->nhstaged = hkeep;
}

/*
 * The bytes of k's record as the batch sees them (*found false and v empty
 * when there is none), without decoding them; valid until the batch next
 * stores.  The batch's cursor is left on the key when it exists (*found).
 */
static int batch_load_raw(struct batch *b, const MDB_val *k, MDB_val *v, bool *found)
{
    MDB_cursor *c = NULL;
    MDB_val key = *k;
    int rc;

    *found = false;
    *v = (MDB_val){0, NULL};
    if (b->logged) {
        rc = batch_load_logged(b, k, v);
    } else {
        rc = batch_cursor(b, &c);
        if (rc != 0) {
            return rc;
        }
        rc = mdb_cursor_get(c, &key, v, MDB_SET_KEY);
    }
    if (rc == MDB_NOTFOUND) {
        *v = (MDB_val){0, NULL};
        return 0;
    }
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    *found = true;
    return 0;
}

/* A stored record that does not decode: counted, and the operation refused. */
static int batch_undecodable(struct batch *b)
{
    atomic_fetch_add(&b->s->stat.decode_errors, 1);
    return RK_ESYNTAX;
}

/* Read and decode the record of an LMDB data key (batch_load_raw()); an absent key is empty. */
static int batch_load(struct batch *b, const MDB_val *k, struct record *r, bool *found)
{
    MDB_val v;
    int rc = batch_load_raw(b, k, &v, found);

    if (rc == 0 && *found && record_decode(v.mv_data, v.mv_size, r) != 0) {
        return batch_undecodable(b);
    }
    return rc;
}

/*
 * Prune, encode into LMDB's own page (MDB_RESERVE) and store through the
 * batch's cursor; found: batch_load() left the cursor on the key, which is
 * then replaced where it is.
 */
static int batch_store(struct batch *b, const MDB_val *k, struct record *r, bool found)
{
    MDB_cursor *c = NULL;
    MDB_val v;
    int rc;

    record_prune(r, b->s->cfg.prune_keep, b->wall_ms, b->s->cfg.prune_min_age_ms);
    if (b->logged) {
        return batch_stage(b, k, r);
    }
    rc = batch_cursor(b, &c);
    if (rc != 0) {
        return rc;
    }
    v.mv_size = record_encoded_size(r);
    rc = mdb_cursor_put(c, (MDB_val *)k, &v, MDB_RESERVE | (found ? MDB_CURRENT : 0));
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    record_encode(r, v.mv_data);
    return 0;
}

/*
 * The one sibling of r live at now_ms, or NULL when there is none or more
 * than one (*live says how many).
 */
static const struct sibling *live_one(const struct record *r, uint64_t now_ms, size_t *live)
{
    const struct sibling *one = NULL;

    *live = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (!sibling_dead(&r->s[i], now_ms)) {
            one = &r->s[i];
            ++*live;
        }
    }
    return *live == 1 ? one : NULL;
}

/*
 * Decide a write's condition against the key's record r as this
 * transaction sees it at now_ms, and take the old value a want_old write
 * hands back.  A sibling expired by now_ms is left out, as a read leaves it
 * out: it is neither present nor a conflict.  Returns 0 (op->skipped says
 * whether to write) or RK_ENOMEM.
 */
static int op_write_decide(struct store_op *op, const struct record *r, uint64_t now_ms)
{
    const struct sibling *one = NULL;
    size_t visible = 0;
    bool present = false;

    for (size_t i = 0; i < r->n; i++) {
        if (!sibling_expired(&r->s[i], now_ms)) {
            one = &r->s[i];
            visible++;
            present = present || !one->tombstone;
        }
    }
    op->existed = present;
    op->conflict = op->want_old && visible > 1;
    op->skipped = op->conflict || (op->cond == STORE_COND_ABSENT && present) ||
                  (op->cond == STORE_COND_PRESENT && !present);
    free(op->old); /* a batch run again after a failed attempt decides again */
    op->old = NULL;
    op->old_len = 0;
    if (op->want_old && present && !op->conflict) {
        if ((op->old = malloc(one->value_len ? one->value_len : 1)) == NULL) {
            return RK_ENOMEM;
        }
        if (one->value_len > 0) {
            memcpy(op->old, one->value, one->value_len);
        }
        op->old_len = one->value_len;
    }
    return 0;
}

/*
 * Make op's version on r (loaded, hlc already raised) by op->expiry's rule
 * (store.h): the new clock as record_write_local() makes it, the value
 * from op (SET, KEEP) or from the one live sibling (TOUCH).  *wrote is
 * false when TOUCH found nothing to write.
 */
static int op_write_version(struct batch *b, struct store_op *op, struct record *r, uint64_t hlc,
                            bool *wrote)
{
    struct store *s = b->s;
    struct sibling *out = op->skip_written ? NULL : &op->written;
    const struct sibling *one;
    uint64_t expire = op->expire_ms;
    size_t live;

    *wrote = true;
    if (op->expiry == STORE_EXPIRY_SET && (op->tombstone || expire == 0)) {
        return record_write_local(r, s->node_id, s->actor, hlc, op->context, op->tombstone,
                                  op->value, op->value_len, s->cfg.conflicts, s->cfg.max_siblings,
                                  out);
    }
    one = live_one(r, b->wall_ms, &live);
    if (op->expiry == STORE_EXPIRY_KEEP) {
        expire = one != NULL ? one->expire_ms : 0;
        return record_write_expiring(r, s->node_id, s->actor, hlc, op->context, op->value,
                                     op->value_len, expire, s->cfg.conflicts, s->cfg.max_siblings,
                                     out);
    }
    if (op->expiry == STORE_EXPIRY_SET) {
        return record_write_expiring(r, s->node_id, s->actor, hlc, op->context, op->value,
                                     op->value_len, expire, s->cfg.conflicts, s->cfg.max_siblings,
                                     out);
    }
    if (live > 1) {
        return RK_EMISMATCH;
    }
    if (one == NULL || (expire == 0 && one->expire_ms == 0)) {
        *wrote = false;
        return 0;
    }
    if (expire != 0 && expire <= b->wall_ms) { /* an expiry in the past deletes, as in Redis */
        return record_write_local(r, s->node_id, s->actor, hlc, NULL, true, NULL, 0,
                                  s->cfg.conflicts, s->cfg.max_siblings, out);
    }
    /* the value is copied into the new version before r changes: one may point into r */
    return record_write_expiring(r, s->node_id, s->actor, hlc, NULL, one->value, one->value_len,
                                 expire, s->cfg.conflicts, s->cfg.max_siblings, out);
}

static int op_write(struct batch *b, struct store_op *op)
{
    uint8_t kb[8 + STORE_KEY_MAX];
    MDB_val k = {data_key(kb, store_position(b->s, op->key, op->key_len), op->key, op->key_len),
                 kb};
    struct record r;
    bool found, wrote = false, was;
    int rc;

    record_init(&r);
    rc = batch_load(b, &k, &r, &found);
    was = record_all_tombstones(&r);
    rc = rc ? rc : op_write_decide(op, &r, b->wall_ms);
    if (rc == 0 && op->skipped) {
        goto out_free; /* the condition did not hold: the key stays as it was */
    }
    if (rc == 0) {
        /* the write comes after every version of the key stored here */
        (void)hlc_update(&b->s->hlc, record_max_hlc(&r), b->wall_ms, HLC_MAX_AHEAD_MS_DEFAULT);
        rc = op_write_version(b, op, &r, hlc_now(&b->s->hlc, b->wall_ms), &wrote);
    }
    if (rc == 0 && wrote) {
        rc = batch_store(b, &k, &r, found);
        b->tombstones += rc == 0 ? (int)record_all_tombstones(&r) - (int)was : 0;
    }
    if (rc == 0 && wrote) {
        rc = batch_hlc_persist(b);
    }
    op->changed = rc == 0 && wrote;
    if (op->expiry == STORE_EXPIRY_TOUCH) {
        op->existed = op->changed; /* EXPIRE and PERSIST answer whether they changed the key */
    }
out_free:
    record_deinit(&r);
    return rc;
}

/*
 * Store the encoded record rec[0..len) as it is, in place of batch_store()'s
 * prune and encode: for a record whose bytes are what batch_store() would
 * write (op_apply_record_newer()).  found as batch_store().
 */
static int batch_store_bytes(struct batch *b, const MDB_val *k, const uint8_t *rec, size_t len,
                             bool found)
{
    struct store *s = b->s;
    MDB_cursor *c = NULL;
    MDB_val v = {len, NULL};
    int rc;

    if (b->logged) {
        struct ov_entry *e;
        if (s->nstaged >= s->cfg.batch_max) {
            return RK_EINVAL; /* one entry per operation: cannot happen */
        }
        e = overlay_entry_alloc(&s->ov, k->mv_data, k->mv_size, len, b->fresh);
        if (e == NULL) {
            return RK_ENOMEM;
        }
        memcpy(ov_rec(e), rec, len);
        s->staged[s->nstaged] = e;
        staged_index(s, s->nstaged++);
        return 0;
    }
    rc = batch_cursor(b, &c);
    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_put(c, (MDB_val *)k, &v, MDB_RESERVE | (found ? MDB_CURRENT : 0));
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    memcpy(v.mv_data, rec, len);
    return 0;
}

/*
 * An applied version's end: r stored when it changed (was: the key held
 * only tombstones before), and the clock's high-water mark kept.
 */
static int op_apply_store(struct batch *b, const MDB_val *k, struct record *r, bool found, bool was,
                          bool changed)
{
    int rc = 0;

    if (changed) {
        rc = batch_store(b, k, r, found);
        b->tombstones += rc == 0 ? (int)record_all_tombstones(r) - (int)was : 0;
    }
    return rc == 0 ? batch_hlc_persist(b) : rc;
}

/*
 * The common replica write: a version newer than everything the key holds
 * (record_apply_is_v()) is stored as it is, the stored record only looked
 * at (record_view(), its clocks in room on the stack), nothing built or
 * copied.  STORE_RC_MERGE when the version needs the full merge (op_apply()).
 */
static int op_apply_newer(struct batch *b, struct store_op *op, const MDB_val *k)
{
    struct vclock_entry room[STORE_APPLY_ROOM];
    struct record *held = &b->s->apply_view;
    struct record v = {(struct sibling *)op->version, 1, 1}; /* only read (encoded) */
    bool found, was, is_v;
    MDB_val raw;
    int rc;

    if (op->version->clock.n > b->s->cfg.prune_keep ||
        (b->s->cfg.conflicts == RECORD_SIBLINGS && b->s->cfg.max_siblings < 1)) {
        return STORE_RC_MERGE; /* batch_store() would prune its clock, or the cap refuse it */
    }
    rc = batch_load_raw(b, k, &raw, &found);
    if (rc != 0) {
        return rc;
    }
    if (found && record_view(raw.mv_data, raw.mv_size, held, room, STORE_APPLY_ROOM) != 0) {
        return batch_undecodable(b);
    }
    was = record_all_tombstones(held);
    is_v = record_apply_is_v(held, op->version, b->s->cfg.conflicts, &op->changed);
    record_view_release(held); /* before the store: raw may move, and room goes */
    return is_v ? op_apply_store(b, k, &v, found, was, op->changed) : STORE_RC_MERGE;
}

static int op_apply(struct batch *b, struct store_op *op)
{
    uint8_t kb[8 + STORE_KEY_MAX];
    MDB_val k = {data_key(kb, store_position(b->s, op->key, op->key_len), op->key, op->key_len),
                 kb};
    struct record r;
    bool found, was;
    int rc;

    /* A clock far ahead is not taken in, but the version is kept: no write is lost. */
    (void)hlc_update(&b->s->hlc, op->version->hlc, b->wall_ms, HLC_MAX_AHEAD_MS_DEFAULT);
    rc = op_apply_newer(b, op, &k);
    if (rc != STORE_RC_MERGE) {
        return rc;
    }
    record_init(&r);
    rc = batch_load(b, &k, &r, &found);
    was = record_all_tombstones(&r);
    if (rc == 0) {
        rc = record_apply(&r, op->version, b->s->cfg.conflicts, b->s->cfg.max_siblings,
                          &op->changed);
    }
    if (rc == 0) {
        rc = op_apply_store(b, &k, &r, found, was, op->changed);
    }
    record_deinit(&r);
    return rc;
}

/*
 * Merge every sibling of the decoded record in into r, as op_apply() merges
 * one version: r is the caller's copy, so a refusal part way leaves the
 * stored record alone.  *changed: whether any sibling changed r.
 */
static int apply_siblings(struct batch *b, struct record *r, const struct record *in, bool *changed)
{
    *changed = false;
    for (size_t i = 0; i < in->n; i++) {
        bool c = false;
        int rc = record_apply(r, &in->s[i], b->s->cfg.conflicts, b->s->cfg.max_siblings, &c);
        if (rc != 0) {
            return rc;
        }
        *changed = *changed || c;
    }
    return 0;
}

/*
 * The common handoff record: one sibling, newer than everything the key
 * holds (nothing, for a key the receiver lacks).  record_apply_is_v() says
 * the merge would leave that sibling alone; its clock needs no pruning
 * (at most prune_keep entries), and the decoder admits one encoding of a
 * sibling, so the record's bytes are what the merge would store: they are
 * stored as they came, nothing decoded into copies, merged or encoded.  A
 * record the key holds something newer of, or concurrent with, takes the
 * full merge (STORE_RC_MERGE), as does any record that does not view (the
 * merge then fails it as it always did).
 */
static int op_apply_record_newer(struct batch *b, struct store_op *op, const MDB_val *k)
{
    struct store *s = b->s;
    struct vclock_entry in_room[STORE_APPLY_ROOM], room[STORE_APPLY_ROOM];
    struct record *in = &s->apply_in, *held = &s->apply_view;
    bool found, was, is_v, changed = false, tomb;
    MDB_val raw;
    int rc;

    if (s->cfg.conflicts == RECORD_SIBLINGS && s->cfg.max_siblings < 1) {
        return STORE_RC_MERGE;
    }
    if (record_view(op->value, op->value_len, in, in_room, STORE_APPLY_ROOM) != 0) {
        return STORE_RC_MERGE;
    }
    if (in->n != 1 || in->s[0].clock.n > s->cfg.prune_keep) {
        record_view_release(in);
        return STORE_RC_MERGE;
    }
    (void)hlc_update(&s->hlc, in->s[0].hlc, b->wall_ms, HLC_MAX_AHEAD_MS_DEFAULT);
    rc = batch_load_raw(b, k, &raw, &found);
    if (rc != 0) {
        record_view_release(in);
        return rc;
    }
    if (found && record_view(raw.mv_data, raw.mv_size, held, room, STORE_APPLY_ROOM) != 0) {
        record_view_release(in);
        return batch_undecodable(b);
    }
    was = record_all_tombstones(held);
    is_v = record_apply_is_v(held, &in->s[0], s->cfg.conflicts, &changed);
    tomb = in->s[0].tombstone;
    record_view_release(held); /* before the store: raw may move */
    record_view_release(in);
    if (!is_v) {
        return STORE_RC_MERGE;
    }
    if (changed) {
        rc = batch_store_bytes(b, k, op->value, op->value_len, found);
        b->tombstones += rc == 0 ? (int)tomb - (int)was : 0;
    }
    rc = rc == 0 ? batch_hlc_persist(b) : rc;
    op->changed = rc == 0 && changed;
    return rc;
}

/*
 * STORE_OP_APPLY_RECORD: one read-modify-write of the key for all the
 * siblings of a record another store held (handoff).  Each sibling's stamp
 * reaches the clock as an applied version's does (op_apply()).
 */
static int op_apply_record(struct batch *b, struct store_op *op)
{
    uint8_t kb[8 + STORE_KEY_MAX];
    MDB_val k = {data_key(kb, store_position(b->s, op->key, op->key_len), op->key, op->key_len),
                 kb};
    struct record in, r;
    bool found, was, changed = false;
    int rc = op_apply_record_newer(b, op, &k);

    if (rc != STORE_RC_MERGE) {
        return rc;
    }
    record_init(&in);
    record_init(&r);
    rc = record_decode(op->value, op->value_len, &in);
    if (rc != 0) {
        rc = rc == RK_ENOMEM ? rc : RK_ESYNTAX;
        goto out_free;
    }
    for (size_t i = 0; i < in.n; i++) {
        (void)hlc_update(&b->s->hlc, in.s[i].hlc, b->wall_ms, HLC_MAX_AHEAD_MS_DEFAULT);
    }
    rc = batch_load(b, &k, &r, &found);
    was = record_all_tombstones(&r);
    rc = rc ? rc : apply_siblings(b, &r, &in, &changed);
    rc = rc ? rc : op_apply_store(b, &k, &r, found, was, changed);
    op->changed = rc == 0 && changed;
out_free:
    record_deinit(&r);
    record_deinit(&in);
    return rc;
}

struct range_ctx {
    struct batch *b;
    struct store_op *op;
    size_t seen;
};

static int range_delete_visit(void *ctx, MDB_cursor *c, MDB_val *k, MDB_val *v)
{
    struct range_ctx *rc = ctx;
    bool tomb = store_bytes_tombstone(v->mv_data, v->mv_size); /* read before the delete */
    int e;

    (void)k;
    e = mdb_cursor_del(c, 0);
    if (e != 0) {
        return batch_fail(rc->b, e);
    }
    rc->b->tombstones -= tomb;
    rc->op->count++;
    return ++rc->seen >= rc->op->limit ? ARC_LIMIT : 0;
}

/* Since when every sibling of r is dead: its newest write's stamp, or its latest expiry. */
static uint64_t dead_since_ms(const struct record *r)
{
    uint64_t wrote = hlc_physical(record_max_hlc(r)), expired = record_max_expiry(r);

    return wrote > expired ? wrote : expired;
}

/* Is the record at (k, v) a collectable set of tombstones and expired values? */
static bool collectable(struct range_ctx *rc, const MDB_val *k, const MDB_val *v)
{
    struct record r;
    bool yes = false;

    record_init(&r);
    if (record_decode(v->mv_data, v->mv_size, &r) != 0) {
        atomic_fetch_add(&rc->b->s->stat.decode_errors, 1);
    } else if (record_all_dead(&r, rc->b->wall_ms) &&
               dead_since_ms(&r) + rc->op->grace_ms < rc->b->wall_ms) {
        yes = rc->op->collect == NULL ||
              rc->op->collect(rc->op->collect_ctx, bytes_get_be64(k->mv_data),
                              (const uint8_t *)k->mv_data + 8, k->mv_size - 8, &r);
    }
    rc->op->kept += !yes && r.n > 0 && record_all_dead(&r, rc->b->wall_ms);
    record_deinit(&r);
    return yes;
}

static int collect_visit(void *ctx, MDB_cursor *c, MDB_val *k, MDB_val *v)
{
    struct range_ctx *rc = ctx;

    if (collectable(rc, k, v)) {
        bool tomb = store_bytes_tombstone(v->mv_data, v->mv_size); /* else expired values */
        int e = mdb_cursor_del(c, 0);
        if (e != 0) {
            return batch_fail(rc->b, e);
        }
        rc->b->tombstones -= tomb;
        rc->op->count++;
    }
    return ++rc->seen >= rc->op->limit ? ARC_LIMIT : 0;
}

static int op_range(struct batch *b, struct store_op *op)
{
    struct range_ctx ctx = {b, op, 0};
    arc_visit_fn visit = op->type == STORE_OP_DELETE_RANGE ? range_delete_visit : collect_visit;
    MDB_cursor *c;
    int rc = mdb_cursor_open(b->txn, b->s->dbi_data, &c);

    if (rc != 0) {
        return batch_fail(b, rc);
    }
    op->count = op->kept = 0;
    rc = arc_walk(c, op->start, op->end, op->cursor, visit, &ctx);
    mdb_cursor_close(c);
    return rc == ARC_LIMIT ? 0 : rc;
}

/* DELETE_IF: the key goes only when its stored bytes are still those the caller read. */
static int op_delete_if(struct batch *b, struct store_op *op)
{
    uint8_t kb[8 + STORE_KEY_MAX];
    MDB_val k = {data_key(kb, store_position(b->s, op->key, op->key_len), op->key, op->key_len),
                 kb},
            v;
    MDB_cursor *c = NULL;
    bool tomb;
    int rc = batch_cursor(b, &c);

    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    if (v.mv_size != op->value_len || memcmp(v.mv_data, op->value, op->value_len) != 0) {
        return 0; /* written since: it stays */
    }
    tomb = store_bytes_tombstone(v.mv_data, v.mv_size);
    rc = mdb_cursor_del(c, 0);
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    b->tombstones -= tomb;
    op->changed = true;
    return 0;
}

static int op_hint_put(struct batch *b, struct store_op *op)
{
    size_t tlen = strlen(op->target);
    uint8_t kb[16], seq[8];
    MDB_val k = {16, kb}, v;
    uint8_t *p;
    int rc;

    hint_key(b->s, op->target, b->s->hint_seq + 1, kb);
    v.mv_size = 1 + tlen + 8 + 2 + op->key_len + sibling_encoded_size(op->version);
    rc = mdb_put(b->txn, b->s->dbi_hints, &k, &v, MDB_RESERVE);
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    p = v.mv_data;
    p[0] = (uint8_t)tlen;
    memcpy(p + 1, op->target, tlen);
    p += 1 + tlen;
    bytes_put_be64(p, store_position(b->s, op->key, op->key_len));
    p[8] = (uint8_t)(op->key_len >> 8);
    p[9] = (uint8_t)op->key_len;
    if (op->key_len > 0) {
        memcpy(p + 10, op->key, op->key_len);
    }
    sibling_encode(op->version, p + 10 + op->key_len);
    bytes_put_be64(seq, b->s->hint_seq + 1);
    rc = meta_put(b->txn, b->s->dbi_meta, "hint_seq", seq, 8);
    if (rc != 0) {
        return batch_fail(b, rc);
    }
    b->s->hint_seq++;
    op->seq = b->s->hint_seq;
    return 0;
}

static int op_hint_delete(struct batch *b, struct store_op *op)
{
    uint8_t kb[16];
    MDB_val k = {16, kb};
    int rc;

    hint_key(b->s, op->target, op->seq, kb);
    rc = mdb_del(b->txn, b->s->dbi_hints, &k, NULL);
    if (rc == MDB_NOTFOUND) {
        return RK_ENOTFOUND;
    }
    return rc ? batch_fail(b, rc) : 0;
}

static bool meta_reserved(const struct store_op *op)
{
    for (size_t i = 0; i < sizeof(store_reserved_meta) / sizeof(store_reserved_meta[0]); i++) {
        size_t n = strlen(store_reserved_meta[i]);
        if (op->key_len == n && memcmp(op->key, store_reserved_meta[i], n) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * Stage a logged batch's set or delete of a handoff-table key (only the
 * handoff table's puts are logged: batch_loggable()), published with the
 * batch's records (batch_logged()).
 */
static int op_table_stage(struct batch *b, const struct store_op *op)
{
    struct store *s = b->s;
    struct ov_entry *e;

    if (op->table != STORE_TABLE_HANDOFF || s->nhstaged >= s->cfg.batch_max) {
        return RK_EINVAL; /* batch_loggable() let it through: cannot happen */
    }
    e = overlay_entry_new(op->key, op->key_len, op->value != NULL ? op->value_len : 0, false);
    if (e == NULL) {
        return RK_ENOMEM;
    }
    e->gone = op->value == NULL;
    if (op->value != NULL) {
        memcpy(ov_rec(e), op->value, op->value_len);
    }
    s->hstaged[s->nhstaged++] = e;
    return 0;
}

static int op_table_put(struct batch *b, struct store_op *op)
{
    MDB_dbi dbi = op->table == STORE_TABLE_META ? b->s->dbi_meta : b->s->dbi_handoff;
    MDB_val k = {op->key_len, (void *)op->key}, v = {op->value_len, (void *)op->value};
    int rc;

    if (op->table == STORE_TABLE_META && meta_reserved(op)) {
        return RK_EINVAL;
    }
    if (b->logged) {
        return op_table_stage(b, op);
    }
    rc = op->value != NULL ? mdb_put(b->txn, dbi, &k, &v, 0) : mdb_del(b->txn, dbi, &k, NULL);
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    return rc ? batch_fail(b, rc) : 0;
}

typedef int (*op_fn)(struct batch *b, struct store_op *op);

static const op_fn op_table[] = {
    [STORE_OP_WRITE] = op_write,
    [STORE_OP_APPLY] = op_apply,
    [STORE_OP_DELETE_RANGE] = op_range,
    [STORE_OP_COLLECT] = op_range,
    [STORE_OP_HINT_PUT] = op_hint_put,
    [STORE_OP_HINT_DELETE] = op_hint_delete,
    [STORE_OP_TABLE_PUT] = op_table_put,
    [STORE_OP_DELETE_IF] = op_delete_if,
    [STORE_OP_APPLY_RECORD] = op_apply_record,
};

/*
 * Does op free space rather than take it?  A client's DEL is a tombstone
 * write: it replaces a value with a few bytes, and it is the only way a
 * client can empty a full store, so it may use the deletion reserve too.
 */
static bool op_is_deletion(const struct store_op *op)
{
    return (op->type == STORE_OP_WRITE && op->tombstone) || op->type == STORE_OP_DELETE_RANGE ||
           op->type == STORE_OP_COLLECT || op->type == STORE_OP_HINT_DELETE ||
           op->type == STORE_OP_DELETE_IF || (op->type == STORE_OP_TABLE_PUT && !op->value);
}

/* --- the writer --------------------------------------------------------------- */

/* Undo an operation's visible effects when its transaction does not commit. */
static void op_reset(struct store_op *op, const struct store_cursor *saved)
{
    if (op->type == STORE_OP_WRITE) {
        sibling_deinit(&op->written);
        sibling_init(&op->written);
    }
    if ((op->type == STORE_OP_DELETE_RANGE || op->type == STORE_OP_COLLECT) && saved != NULL) {
        *op->cursor = *saved;
    }
    op->changed = false;
    op->existed = false;
    op->skipped = false;
    op->conflict = false;
    free(op->old);
    op->old = NULL;
    op->old_len = 0;
    op->count = op->kept = 0;
}

/* Double the map, up to map_max (plus the deletion reserve); false when at the limit. */
static bool store_grow(struct store *s, bool deletions_only)
{
    size_t limit = s->cfg.map_max + (deletions_only ? STORE_DELETE_RESERVE : 0);
    size_t want = s->map_size * 2;
    MDB_envinfo info;
    int rc;

    if (s->map_size >= limit) {
        return false;
    }
    want = want > limit ? limit : want;
    want = (want + 4095) & ~(size_t)4095;
    pthread_rwlock_wrlock(&s->resize_lock);
    rc = mdb_env_set_mapsize(s->env, want);
    pthread_rwlock_unlock(&s->resize_lock);
    if (rc != 0) {
        return false;
    }
    mdb_env_info(s->env, &info);
    s->map_size = info.me_mapsize;
    atomic_fetch_add(&s->stat.map_grows, 1);
    return true;
}

/*
 * A flush failed: from now on the store acknowledges no write (every batch
 * fails with RK_EDISK) and reads go on, until the process restarts and
 * LMDB reopens from what is on disk.  PostgreSQL's lesson (2018): after a
 * failed fsync the kernel may have dropped the dirty pages and a retried
 * fsync reports success, so a retry proves nothing; writes acknowledged
 * since the last good flush may be lost, and nothing more is acknowledged.
 */
static void store_disk_fail(struct store *s, const char *what, int rc)
{
    atomic_fetch_add(&s->stat.disk_failures, 1);
    if (!atomic_exchange(&s->disk_failed, true)) {
        LOG(LOG_ERROR, "store_disk_failed",
            "path=%s call=%s error=\"%s\" writes=refused_until_restart", s->path, what,
            mdb_strerror(rc));
    }
}

/* The fsync of LMDB's file, through the test hook when set. */
static int store_sync(struct store *s)
{
    int rc = s->cfg.test_sync != NULL ? s->cfg.test_sync(s->cfg.test_ctx) : 0;

    return rc != 0 ? rc : mdb_env_sync(s->env, 1);
}

/* The fsync of the write-ahead log, through the test hook when set. */
static int store_log_sync(struct store *s)
{
    int rc = s->cfg.test_sync != NULL ? s->cfg.test_sync(s->cfg.test_ctx) : 0;

    if (rc == 0 && fdatasync(s->wal_fd) != 0) {
        rc = errno;
    }
    return rc;
}

/*
 * Whether a failed write to data.mdb (EIO) was the file system running out
 * of space: LMDB reports a pwrite()/pwritev() cut short, which is how a
 * file system says it is full partway through a write, as EIO, not
 * ENOSPC.  True when the space left to the store's user on the data
 * directory's file system (f_bavail, what a write may still take) is
 * below need bytes or STORE_FULL_SLACK.  A statvfs() failure says no: the
 * EIO stays an I/O error.
 */
static bool store_disk_full(const struct store *s, size_t need)
{
    struct statvfs v;
    unsigned long long left;

    if (statvfs(s->path, &v) != 0) {
        return false;
    }
    left = (unsigned long long)v.f_bavail * v.f_frsize;
    return left < (need > STORE_FULL_SLACK ? need : STORE_FULL_SLACK);
}

/*
 * An LMDB write error of a batch (rc, from its operations or its commit),
 * with EIO turned into ENOSPC when the disk is full (store_disk_full(),
 * need the batch's bytes): then the batch fails with RK_ENOSPC and writes
 * come back once there is room.
 */
static int store_write_err(const struct store *s, int rc, size_t need)
{
    return rc == EIO && store_disk_full(s, need) ? ENOSPC : rc;
}

/*
 * Commit a batch's transaction (need: the batch's bytes; absorbed: it
 * holds a checkpoint, which must be durable before the log is emptied).
 * Returns 0, an LMDB or errno code, or STORE_RC_DISK once the disk failed
 * a flush.
 *
 * What a failed commit leaves: LMDB writes the transaction's pages (copy
 * on write, never over a page the last committed state uses), then, under
 * `sync always`, fdatasync()s them, and only then writes the meta page
 * that makes them the current state.  A commit failing before its meta
 * page leaves the previous state standing, in memory and on disk, and the
 * pages it wrote unused; LMDB itself stops the environment (MDB_PANIC on
 * every later transaction) if writing the meta page fails.
 *   - A short write for lack of space (EIO, store_disk_full()) or ENOSPC
 *     happens while writing the pages, before any sync or meta page, in
 *     every sync mode: nothing acknowledged is touched, so the batch fails
 *     with RK_ENOSPC and the next batch may commit when there is room.
 *     Under `sync batch` and `sync none` earlier commits not yet synced
 *     stay in the page cache untouched, for the syncer's next fsync.
 *   - Any other EIO under `sync always` may be the commit's fdatasync, a
 *     failed flush: after one the kernel may have dropped dirty pages and
 *     a later sync proves nothing, so the disk is failed (RK_EDISK until a
 *     restart), as for the test hook's failure after a commit.
 *   - Under `sync batch` and `sync none` the commit syncs nothing, so an
 *     EIO is a write the disk refused outright; it is failed the same way,
 *     as the device is not to be trusted with the next batch either.  A
 *     failed fsync of the syncer (store_sync()) fails the disk there.
 * An I/O error on a nearly full disk taken for a full disk costs no
 * acknowledged write: the failed batch acknowledged nothing, under `sync
 * always` every earlier commit was synced before its meta page, and under
 * the other modes the syncer's next fsync still finds a failing disk.
 */
static int store_commit(struct store *s, MDB_txn *txn, size_t need, bool absorbed)
{
    int rc = store_write_err(s, mdb_txn_commit(txn), need);
    bool failed = rc == EIO;

    /* MDB_NOMETASYNC: the commit synced its pages; the sync makes its meta page durable too */
    if (rc == 0 &&
        (s->cfg.sync == STORE_SYNC_ALWAYS || (absorbed && s->cfg.sync != STORE_SYNC_NONE))) {
        rc = store_sync(s);
        atomic_fetch_add(&s->stat.syncs, 1);
        failed = rc != 0;
    }
    if (failed) {
        store_disk_fail(s, "commit", rc);
        return STORE_RC_DISK;
    }
    return rc;
}

/* Operations in the atomic group ops[0] opens, within the n given: 1 for a lone one. */
static size_t group_len(struct store_op *const *ops, size_t n)
{
    size_t g = ops[0]->group_ > 1 ? ops[0]->group_ : 1;

    return g < n ? g : n;
}

/*
 * Run an atomic group (store_submit_atomic()) inside a nested transaction
 * of the batch's: its writes reach the batch's transaction all together,
 * or, when one member fails, none does and every member gets that error.
 * An LMDB error that poisons the whole transaction is left to the caller
 * (b->mdb_rc), as for a lone operation.
 */
static void batch_group(struct batch *b, struct store_op **ops, size_t n)
{
    MDB_txn *parent = b->txn;
    uint64_t seq0 = b->s->hint_seq, hlc_high = b->hlc_high;
    int64_t tombstones = b->tombstones;
    size_t staged0 = b->s->nstaged, hstaged0 = b->s->nhstaged;
    int failed = 0;

    if (b->logged) { /* staged entries are taken back instead of a nested transaction */
        for (size_t i = 0; i < n && failed == 0 && b->mdb_rc == 0; i++) {
            failed = ops[i]->result = op_table[ops[i]->type](b, ops[i]);
        }
        goto out;
    }
    batch_cursor_close(b); /* the nested transaction uses a cursor of its own */
    failed = mdb_txn_begin(b->s->env, parent, 0, &b->txn);

    if (failed != 0) {
        b->txn = parent;
        failed = batch_fail(b, failed);
    }
    for (size_t i = 0; i < n && failed == 0 && b->mdb_rc == 0; i++) {
        failed = ops[i]->result = op_table[ops[i]->type](b, ops[i]);
    }
    batch_cursor_close(b);
    if (b->txn != parent && (failed != 0 || b->mdb_rc != 0)) {
        mdb_txn_abort(b->txn);
    } else if (b->txn != parent) {
        int rc = mdb_txn_commit(b->txn);
        failed = rc != 0 ? batch_fail(b, rc) : 0;
    }
    b->txn = parent;
out:
    if (failed == 0 || b->mdb_rc != 0) {
        return;
    }
    /* what the nested transaction wrote is gone: the hint counter and the clock's mark too */
    batch_unstage(b->s, staged0, hstaged0);
    b->s->hint_seq = seq0;
    b->hlc_high = hlc_high;
    b->tombstones = tombstones;
    for (size_t i = 0; i < n; i++) {
        op_reset(ops[i], NULL);
        ops[i]->result = failed;
    }
}

/* The bytes a batch brings to the store: its keys and values. */
static size_t batch_bytes(struct store_op *const *ops, size_t n)
{
    size_t bytes = 0;

    for (size_t i = 0; i < n; i++) {
        bytes += ops[i]->key_len + ops[i]->value_len;
        if (ops[i]->version != NULL) {
            bytes += ops[i]->version->value_len;
        }
    }
    return bytes;
}

/* Does the log hold anything LMDB does not have? (writer role) */
static bool store_log_pending(const struct store *s)
{
    return s->ov.n > 0 || s->hov.n > 0 || s->wal_len > WAL_HEADER_LEN;
}

/*
 * The handoff table's part of a checkpoint: each logged set put, each
 * logged delete deleted (a key LMDB lacks is no error).  The overlay holds
 * one entry per key, its newest, so the order does not matter.
 */
static int absorb_handoff(struct batch *b)
{
    struct store *s = b->s;

    for (size_t i = 0; i < s->hov.nbuckets; i++) {
        for (struct ov_entry *e = s->hov.bucket[i]; e != NULL; e = e->next) {
            MDB_val k = {e->key_len, (void *)ov_key(e)}, v = {e->rec_len, ov_rec(e)};
            int rc = e->gone ? mdb_del(b->txn, s->dbi_handoff, &k, NULL)
                             : mdb_put(b->txn, s->dbi_handoff, &k, &v, 0);
            if (rc != 0 && rc != MDB_NOTFOUND) {
                return batch_fail(b, rc);
            }
        }
    }
    return 0;
}

/*
 * The checkpoint part of a transaction through LMDB: every overlay entry
 * put in key order, the handoff table's logged values, the clock's mark
 * and the next log generation, so that
 * once the transaction is durable the log may be emptied
 * (store_log_reset()).  Nothing when the log holds nothing.
 */
static int batch_absorb(struct batch *b, bool *absorbed)
{
    struct store *s = b->s;
    struct ov_entry *const *sorted;
    uint8_t buf[8];
    MDB_cursor *c = NULL;
    size_t n;
    int rc;

    *absorbed = false;
    if (!store_log_pending(s)) {
        return 0;
    }
    if (overlay_sorted(&s->ov, &sorted, &n) != 0) {
        return ENOMEM;
    }
    rc = batch_cursor(b, &c);
    for (size_t i = 0; i < n && rc == 0; i++) {
        MDB_val k = {sorted[i]->key_len, (void *)ov_key(sorted[i])};
        MDB_val v = {sorted[i]->rec_len, ov_rec(sorted[i])};
        rc = mdb_cursor_put(c, &k, &v, 0);
        rc = rc ? batch_fail(b, rc) : 0;
    }
    rc = rc ? rc : absorb_handoff(b);
    if (rc == 0) {
        bytes_put_be64(buf, s->wal_gen + 1);
        rc = meta_put(b->txn, s->dbi_meta, "wal_gen", buf, 8);
        rc = rc ? batch_fail(b, rc) : 0;
    }
    if (rc == 0) {
        bytes_put_be64(buf, b->hlc_high);
        rc = meta_put(b->txn, s->dbi_meta, "hlc", buf, 8);
        rc = rc ? batch_fail(b, rc) : 0;
    }
    if (rc != 0) { /* an LMDB code that poisons the transaction (a full map grows), or EIO */
        return b->mdb_rc != 0 ? b->mdb_rc : EIO;
    }
    *absorbed = true;
    return 0;
}

/*
 * Empty the log after a durable checkpoint: its header names the next
 * generation, so the records behind it no longer read as records of this
 * log, even where the truncation does not reach the disk; the overlay goes
 * with them.  When the header cannot be written the log is left alone
 * (LMDB already has what it holds, and at the next open its generation no
 * longer matches) and batches go through LMDB until a later checkpoint
 * empties it.
 */
static void store_log_reset(struct store *s)
{
    uint8_t head[WAL_HEADER_LEN];

    s->wal_gen++;
    wal_header(head, s->wal_gen);
    if (pwrite(s->wal_fd, head, sizeof(head), 0) != (ssize_t)sizeof(head)) {
        LOG_LIMITED(&s->wal_log, LOG_ERROR, "store_wal_reset_failed", "path=%s error=\"%s\"",
                    s->path, strerror(errno));
        s->wal_stale = true;
    } else {
        if (ftruncate(s->wal_fd, WAL_HEADER_LEN) != 0) {
            LOG_LIMITED(&s->wal_log, LOG_WARN, "store_wal_truncate_failed", "path=%s error=\"%s\"",
                        s->path, strerror(errno));
        }
        s->wal_len = WAL_HEADER_LEN;
        s->wal_stale = false;
        store_log_reserve(s);
    }
    atomic_store(&s->stat.wal_bytes, s->wal_len);
    pthread_rwlock_wrlock(&s->resize_lock);
    overlay_clear(&s->ov);
    overlay_clear(&s->hov);
    atomic_store(&s->ov_absorbed_txn, UINT64_MAX);
    pthread_rwlock_unlock(&s->resize_lock);
    atomic_fetch_add(&s->stat.checkpoints, 1);
}

/*
 * One attempt through LMDB: absorb the log (a checkpoint), run every op in
 * one transaction and commit.  Returns 0, an LMDB or errno code (ENOSPC
 * for a full disk, store_write_err()), or STORE_RC_DISK.
 */
/*
 * Grow the map ahead of a transaction that absorbs the log, to the room
 * batch_loggable() kept for it, so a checkpoint is not run twice, once
 * into a full map and again after store_grow() (each run costs about as
 * much as the whole checkpoint: every overlay entry put).
 */
static void store_grow_for_log(struct store *s, size_t batch)
{
    MDB_envinfo info;
    uint64_t used, need;

    if (!store_log_pending(s)) {
        return;
    }
    mdb_env_info(s->env, &info);
    used = ((uint64_t)info.me_last_pgno + 1) * s->page_size;
    need = STORE_CKPT_ROOM_FACTOR * ((uint64_t)s->ov.bytes + s->hov.bytes + batch) + 8 * STORE_MIB;
    while (s->map_size < used + need && store_grow(s, false)) {
    }
}

/*
 * Must the batch absorb the log?  A checkpoint (no operation) must, and so
 * must every batch that reads or writes keys, hints or the handoff table,
 * to see the logged writes.  A batch of meta puts only touches names the
 * log never holds: it runs without the checkpoint, so the generation a node
 * records at start needs a few pages, not room for the whole log (a node
 * stopped on a full disk with writes in its log starts again).
 */
static bool batch_absorbs(struct store_op *const *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->type != STORE_OP_TABLE_PUT || ops[i]->table != STORE_TABLE_META) {
            return true;
        }
    }
    return n == 0;
}

static int batch_attempt_lmdb(struct store *s, struct store_op **ops, size_t n)
{
    struct batch b = {.s = s, .wall_ms = store_wall_ms(s), .hlc_high = s->hlc_mark};
    bool absorbed = false, absorbs = batch_absorbs(ops, n);
    size_t g, id;
    int rc;

    if (atomic_load(&s->disk_failed)) {
        return STORE_RC_DISK;
    }
    if (absorbs) {
        store_grow_for_log(s, batch_bytes(ops, n));
    }
    rc = mdb_txn_begin(s->env, NULL, 0, &b.txn);
    if (rc != 0) {
        return rc;
    }
    id = mdb_txn_id(b.txn);
    rc = absorbs ? batch_absorb(&b, &absorbed) : 0;
    for (size_t i = 0; i < n && rc == 0 && b.mdb_rc == 0; i += g) {
        g = group_len(ops + i, n - i);
        if (g > 1) {
            batch_group(&b, ops + i, g);
        } else {
            ops[i]->result = op_table[ops[i]->type](&b, ops[i]);
        }
    }
    batch_cursor_close(&b);
    rc = rc != 0 ? rc : b.mdb_rc;
    if (rc != 0) { /* EIO here: pages spilled from a large transaction */
        mdb_txn_abort(b.txn);
        return store_write_err(s, rc, batch_bytes(ops, n) + s->ov.bytes);
    }
    if (absorbed) { /* from its commit on, readers find the overlay's entries in LMDB */
        atomic_store(&s->ov_absorbed_txn, id);
    }
    rc = store_commit(s, b.txn, batch_bytes(ops, n) + s->ov.bytes, absorbed);
    if (rc != 0) {
        MDB_envinfo info;
        mdb_env_info(s->env, &info);
        if (absorbed && info.me_last_txnid < id) { /* not committed: the overlay is still apart */
            atomic_store(&s->ov_absorbed_txn, UINT64_MAX);
        }
        if (info.me_last_txnid >= id) { /* committed, then a sync failed: readers see it */
            batch_publish(&b);
        }
    } else {
        batch_publish(&b);
    }
    if (rc == 0) {
        if (s->cfg.sync == STORE_SYNC_BATCH) {
            atomic_store(&s->dirty, true); /* its meta page, for the syncer */
        }
        s->hlc_mark = b.hlc_high;
        if (absorbed) {
            store_log_reset(s);
            if (n > 0) { /* store_checkpoint() counts its time first */
                atomic_store(&s->stat.overlay_keys, 0);
            }
        }
    }
    return rc;
}

/*
 * Can op go to the log?  Writes, replicated versions, and the handoff
 * table's sets and deletes.  A handoff batch's whole records go to LMDB
 * (the write-ahead log above), with the checkpoint in their group.  Meta
 * puts are rare, and the store's own meta values (wal_gen, hlc) are read
 * from LMDB, so they stay there.
 */
static bool op_loggable(const struct store_op *op)
{
    return op->type == STORE_OP_WRITE || op->type == STORE_OP_APPLY ||
           (op->type == STORE_OP_TABLE_PUT && op->table == STORE_TABLE_HANDOFF);
}

/*
 * Can the batch go to the log?  Only operations op_loggable() takes (every
 * other operation runs through LMDB, which absorbs the log first), and
 * only while the map has room for what the log will hold, so that a
 * checkpoint never meets a full map with writes already acknowledged:
 * near map_max, batches run through LMDB and its limits.
 */
static bool batch_loggable(struct store *s, struct store_op **ops, size_t n)
{
    MDB_envinfo info;
    uint64_t used, need;

    if (s->wal_fd < 0 || s->wal_stale || n == 0) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!op_loggable(ops[i])) {
            return false;
        }
    }
    mdb_env_info(s->env, &info);
    used = ((uint64_t)info.me_last_pgno + 1) * s->page_size;
    need = STORE_CKPT_ROOM_FACTOR * ((uint64_t)s->ov.bytes + s->hov.bytes + batch_bytes(ops, n)) +
           8 * STORE_MIB;
    return used < s->cfg.map_max && s->cfg.map_max - used >= need;
}

/*
 * Append one record to the log at its end, and under `sync always` fsync
 * it.  A batch with anything but deletions first makes sure the disk
 * holds the record and STORE_WAL_RESERVE more; deletions may use the
 * reserve.  A record cut short is taken back (what is left past the end
 * is overwritten by the next record, and never reads as one).  Returns 0,
 * ENOSPC when the disk has no room for it (batch_attempt()), or
 * STORE_RC_DISK.
 */
static int store_log_append(struct store *s, const uint8_t *p, size_t len, bool deletions)
{
    size_t done = 0;
    int err = 0;

    if (!deletions && !store_log_alloc(s, s->wal_len + len)) {
        return ENOSPC; /* the reserve stays for deletions */
    }
    while (done < len) {
        ssize_t w = pwrite(s->wal_fd, p + done, len - done, (off_t)(s->wal_len + done));
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            err = w < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)w;
    }
    if (err != 0) {
        (void)!ftruncate(s->wal_fd, (off_t)s->wal_len);
        store_log_reserve(s); /* the truncation freed the blocks kept past the end too */
        if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
            return ENOSPC;
        }
        store_disk_fail(s, "wal_write", err);
        return STORE_RC_DISK;
    }
    s->wal_len += len;
    atomic_store(&s->stat.wal_bytes, s->wal_len);
    if (s->cfg.sync == STORE_SYNC_ALWAYS) {
        int rc = store_log_sync(s);
        atomic_fetch_add(&s->stat.syncs, 1);
        if (rc != 0) {
            store_disk_fail(s, "wal_fsync", rc);
            return STORE_RC_DISK;
        }
    } else if (s->cfg.sync == STORE_SYNC_BATCH) {
        atomic_store(&s->wal_dirty, true);
    }
    return 0;
}

/*
 * Write a logged batch's record: its staged entries, its handoff-table
 * sets and deletes, and the clock's new mark.
 */
static int batch_log(struct batch *b)
{
    struct store *s = b->s;
    struct buf *w = &s->wal_buf;
    size_t at;
    int rc;

    if (s->nstaged == 0 && s->nhstaged == 0 && b->hlc_high == s->hlc_mark) {
        return 0; /* nothing changed: every operation failed or found its version stored */
    }
    buf_clear(w);
    rc = wal_begin(w, &at);
    for (size_t i = 0; i < s->nstaged && rc == 0; i++) {
        struct ov_entry *e = s->staged[i];
        rc = wal_put(w, ov_key(e), e->key_len, ov_rec(e), e->rec_len);
    }
    for (size_t i = 0; i < s->nhstaged && rc == 0; i++) {
        struct ov_entry *e = s->hstaged[i];
        rc = wal_table_put(w, WAL_TABLE_HANDOFF, ov_key(e), e->key_len, e->gone ? NULL : ov_rec(e),
                           e->rec_len);
    }
    if (rc == 0 && b->hlc_high != s->hlc_mark) {
        rc = wal_mark(w, b->hlc_high);
    }
    rc = rc ? rc : wal_end(w, at, s->wal_gen);
    if (w->cap > 4 * STORE_MIB && w->len < w->cap / 4) {
        buf_free(w); /* a rare large batch does not keep its buffer */
        buf_init(w, 0);
        return STORE_RC_SLOW;
    }
    return rc != 0 ? STORE_RC_SLOW : store_log_append(s, buf_data(w), w->len, b->deletions);
}

/*
 * Run a batch through the log: each operation reads its key through the
 * overlay and LMDB (one read transaction) and stages the record it leaves;
 * the batch is appended to the log as one record (and under `sync always`
 * fsynced), then its entries are published to the overlay under the
 * resize lock, so readers see all of them or none.  LMDB is not written.
 * Returns 0, STORE_RC_SLOW (nothing staged: run it through LMDB), an LMDB
 * code, or STORE_RC_DISK.
 */
static int batch_logged(struct store *s, struct store_op **ops, size_t n, bool deletions)
{
    struct batch b = {.deletions = deletions,
                      .s = s,
                      .wall_ms = store_wall_ms(s),
                      .hlc_high = s->hlc_mark,
                      .logged = true};
    size_t g;
    int rc;

    if (atomic_load(&s->disk_failed)) {
        return STORE_RC_DISK;
    }
    if (read_begin(s, &b.txn) != 0) {
        return STORE_RC_SLOW;
    }
    staged_cut(s, 0);
    s->nhstaged = 0;
    for (size_t i = 0; i < n && b.mdb_rc == 0; i += g) {
        g = group_len(ops + i, n - i);
        if (g > 1) {
            batch_group(&b, ops + i, g);
        } else {
            ops[i]->result = op_table[ops[i]->type](&b, ops[i]);
        }
    }
    read_end(s, b.txn);
    rc = b.mdb_rc != 0 ? STORE_RC_SLOW : batch_log(&b);
    if (rc != 0) {
        batch_unstage(s, 0, 0);
        return rc;
    }
    pthread_rwlock_wrlock(&s->resize_lock);
    for (size_t i = 0; i < s->nstaged; i++) {
        overlay_put(&s->ov, s->staged[i]);
    }
    for (size_t i = 0; i < s->nhstaged; i++) {
        overlay_put(&s->hov, s->hstaged[i]);
    }
    batch_publish(&b); /* with the entries: a reader sees both or neither */
    pthread_rwlock_unlock(&s->resize_lock);
    staged_cut(s, 0); /* the overlays own the entries now */
    s->nhstaged = 0;
    s->hlc_mark = b.hlc_high;
    atomic_store(&s->stat.overlay_keys, s->ov.n);
    atomic_fetch_add(&s->stat.logged, 1);
    return 0;
}

/*
 * One attempt at a batch: through the log when it can take it, else (or
 * when the log turns it back) through LMDB.  When the disk has no room for
 * the log, a batch of deletions only runs through LMDB, which may still
 * have pages or its deletion reserve for them (how a full store is
 * emptied); any other batch fails with RK_ENOSPC and tries the log again
 * next time, so writes come back once there is room.
 */
static int batch_attempt(struct store *s, struct store_op **ops, size_t n)
{
    if (batch_loggable(s, ops, n)) {
        bool deletions = true;
        int rc;
        for (size_t i = 0; i < n; i++) {
            deletions = deletions && op_is_deletion(ops[i]);
        }
        rc = batch_logged(s, ops, n, deletions);
        if (rc != STORE_RC_SLOW && !(rc == ENOSPC && deletions)) {
            return rc;
        }
        for (size_t i = 0; i < n; i++) {
            op_reset(ops[i], NULL);
            ops[i]->result = 0;
        }
    }
    return batch_attempt_lmdb(s, ops, n);
}

/* Count a batch made durable: appended to the log or committed to LMDB. */
static void batch_after_commit(struct store *s)
{
    atomic_fetch_add(&s->stat.commits, 1);
}

/*
 * Where to split a batch whose transaction grew too large: the group
 * boundary nearest its middle, never inside an atomic group; 0 when the
 * batch is one operation or one group, which cannot be split.
 */
static size_t batch_split(struct store_op **ops, size_t n)
{
    size_t at = 0, best = 0;

    while (at < n) {
        size_t next = at + group_len(ops + at, n - at);
        if (next >= n) {
            break;
        }
        best = next;
        if (next >= n / 2) {
            break;
        }
        at = next;
    }
    return best;
}

static void batch_run(struct store *s, struct store_op **ops, size_t n);

/*
 * A batch mixing deletions and other writes hit a map that cannot grow or
 * a full disk: fail the others with RK_ENOSPC and run the deletions alone,
 * in their order, so they may use the deletion reserve or the pages the
 * file already has (a pipeline of DELs and SETs at a full store still
 * frees space).  An atomic group stays whole: it is
 * kept only when every member is a deletion.  False when there is nothing
 * to keep (or no memory): the caller fails the whole batch.
 */
static bool batch_run_deletions(struct store *s, struct store_op **ops, size_t n)
{
    struct store_op **keep = malloc(n * sizeof(*keep));
    size_t m = 0, g;

    for (size_t i = 0; keep != NULL && i < n; i += g) {
        bool deletion = true;
        g = group_len(ops + i, n - i);
        for (size_t j = i; j < i + g; j++) {
            deletion = deletion && op_is_deletion(ops[j]);
        }
        for (size_t j = i; deletion && j < i + g; j++) {
            keep[m++] = ops[j];
        }
    }
    if (m == 0) {
        free(keep);
        return false;
    }
    for (size_t i = 0, k = 0; i < n; i++) {
        if (k < m && ops[i] == keep[k]) {
            k++;
        } else {
            ops[i]->result = RK_ENOSPC;
        }
    }
    batch_run(s, keep, m);
    free(keep);
    return true;
}

/*
 * A run of handoff groups larger than batch_max (queue_take()) that found
 * no room (a map at map_max, a full disk): each batch_max worth of whole
 * groups runs again on its own, as it would have queued alone, so the
 * groups that fit are stored and only the others fail, instead of every
 * group failing with the largest.
 */
static void batch_run_parts(struct store *s, struct store_op **ops, size_t n)
{
    for (size_t at = 0, end; at < n; at = end) {
        end = at + group_len(ops + at, n - at);
        while (end < n && end - at + group_len(ops + end, n - end) <= s->cfg.batch_max) {
            end += group_len(ops + end, n - end);
        }
        batch_run(s, ops + at, end - at);
    }
}

/*
 * Run a batch to the end: grow the map and retry on MDB_MAP_FULL (a mixed
 * batch's deletions alone when the map cannot grow or the disk is full; a
 * run of handoff groups part by part), split a batch whose
 * transaction grew too large (between atomic groups), and fail every
 * operation when the batch cannot commit.
 */
static void batch_run(struct store *s, struct store_op **ops, size_t n)
{
    struct store_cursor *saved = NULL;
    uint64_t seq0 = s->hint_seq;
    bool deletions_only = true, cursors = false;
    size_t half;
    int rc;

    for (size_t i = 0; i < n; i++) {
        deletions_only = deletions_only && op_is_deletion(ops[i]);
        cursors = cursors || ops[i]->cursor != NULL;
    }
    /* cursors to restore on a retry: only range operations have one (a cursor is over 500 bytes) */
    if (cursors && (saved = calloc(n, sizeof(*saved))) != NULL) {
        for (size_t i = 0; i < n; i++) {
            if (ops[i]->cursor != NULL) {
                saved[i] = *ops[i]->cursor;
            }
        }
    }
    for (;;) {
        rc = batch_attempt(s, ops, n);
        if (rc == 0) {
            batch_after_commit(s);
            break;
        }
        s->hint_seq = seq0;
        for (size_t i = 0; i < n; i++) {
            op_reset(ops[i], saved ? &saved[i] : NULL);
        }
        if (rc == MDB_MAP_FULL && store_grow(s, deletions_only)) {
            atomic_fetch_add(&s->stat.map_full_runs, 1);
            continue;
        }
        if (store_err(rc) == RK_ENOSPC && n > s->cfg.batch_max) { /* handoff groups only */
            batch_run_parts(s, ops, n);
            break;
        }
        if (store_err(rc) == RK_ENOSPC && !deletions_only && batch_run_deletions(s, ops, n)) {
            break;
        }
        if (rc == MDB_TXN_FULL && (half = batch_split(ops, n)) > 0) {
            batch_run(s, ops, half);
            batch_run(s, ops + half, n - half);
            break;
        }
        for (size_t i = 0; i < n; i++) {
            ops[i]->result = store_err(rc);
        }
        break;
    }
    free(saved);
}

/*
 * Move what the log holds into LMDB and empty it (writer role held): one
 * transaction through LMDB with no operation, growing the map as a batch
 * does (into the deletion reserve too: these writes were acknowledged).
 * On failure the log and the overlay stay as they were, and the next
 * checkpoint tries again.
 */
static int store_checkpoint(struct store *s)
{
    uint64_t t0 = clock_mono_ms(), keys = s->ov.n, bytes = s->wal_len;
    struct rusage ru0, ru1;
    int rc;

    getrusage(RUSAGE_THREAD, &ru0);

    if (!store_log_pending(s)) {
        return 0;
    }
    for (;;) {
        rc = batch_attempt_lmdb(s, NULL, 0);
        if (rc == 0) {
            batch_after_commit(s);
            atomic_fetch_add(&s->stat.checkpoint_ms, clock_mono_ms() - t0);
            atomic_store(&s->stat.overlay_keys, 0);
            getrusage(RUSAGE_THREAD, &ru1);
            LOG(LOG_DEBUG, "store_checkpoint",
                "path=%s keys=%llu wal_bytes=%llu ms=%llu cpu_ms=%llu", s->path,
                (unsigned long long)keys, (unsigned long long)bytes,
                (unsigned long long)(clock_mono_ms() - t0),
                (unsigned long long)((ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) * 1000 +
                                     (ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1000 +
                                     (ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) * 1000 +
                                     (ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1000));
            return 0;
        }
        if (rc == MDB_MAP_FULL && store_grow(s, true)) {
            atomic_fetch_add(&s->stat.map_full_runs, 1);
            continue;
        }
        LOG_LIMITED(&s->wal_log, LOG_WARN, "store_checkpoint_failed", "path=%s error=\"%s\"",
                    s->path, mdb_strerror(rc == STORE_RC_DISK ? EIO : rc));
        s->ckpt_retry_ms = clock_mono_ms() + STORE_CKPT_RETRY_MS;
        return store_err(rc);
    }
}

/* Mark a batch finished and hand each operation to its waiter or to dispatch. */
static void batch_complete(struct store *s, struct store_op **ops, size_t n)
{
    bool notify = false;

    for (size_t i = 0; i < n; i++) {
        struct store_op *op = ops[i];
        atomic_fetch_add(&s->stat.ops, 1);
        if (op->result != 0) {
            atomic_fetch_add(&s->stat.ops_failed, 1);
        }
        if (op->result == RK_ENOSPC) {
            atomic_fetch_add(&s->stat.enospc, 1);
        }
        if (op->done != NULL) {
            op->next_ = NULL;
            if (s->done_tail != NULL) {
                s->done_tail->next_ = op;
            } else {
                s->done_head = op;
            }
            s->done_tail = op;
            notify = true;
        }
        op->finished_ = true; /* its waiter may free op once mu is released */
        if (op->wake_ != NULL) {
            pthread_cond_signal(op->wake_);
        }
    }
    if (notify) {
        uint64_t one = 1;
        ssize_t w = write(s->event_fd, &one, sizeof(one));
        (void)w; /* a full counter is already readable */
    }
}

/*
 * Hand the writer role on (mu held, nobody leading): to one thread blocked
 * in store_wait() on an operation still queued, else to the writer thread.
 * Waking exactly one thread keeps waiters whose operations are not done
 * from fighting over mu.
 */
static void store_handoff(struct store *s)
{
    for (struct store_op *op = s->queue_head; op != NULL; op = op->next_) {
        if (op->wake_ != NULL) {
            pthread_cond_signal(op->wake_);
            return;
        }
    }
    if (s->queue_head != NULL || s->closing || store_log_pending(s)) {
        pthread_cond_signal(&s->work); /* the writer thread times the idle checkpoint */
    }
}

/*
 * Commit delay (sync always): a batch smaller than the recent ones usually
 * means writers are about to resubmit after the previous commit woke them,
 * and each commit costs an fsync whose price grows slowly with its size.
 * So the leader waits up to STORE_COMMIT_DELAY_US for the queue to reach
 * the recent batch size, as PostgreSQL's commit_delay does.  Measured on
 * this project's 2-core test machine: 32 synchronous writers went from
 * alternating batches of 16 to batches of about 30.
 */
#define STORE_COMMIT_DELAY_US 200

static void store_delay_commit(struct store *s)
{
    struct timespec ts;
    uint64_t ns;

    if (s->cfg.sync != STORE_SYNC_ALWAYS || s->queue_len >= s->recent_batch ||
        s->queue_len >= s->cfg.batch_max) {
        return;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ns = (uint64_t)ts.tv_nsec + STORE_COMMIT_DELAY_US * 1000ull;
    ts.tv_sec += (time_t)(ns / 1000000000);
    ts.tv_nsec = (long)(ns % 1000000000);
    s->wants_more = true;
    while (s->queue_len < s->recent_batch && !s->closing &&
           pthread_cond_timedwait(&s->more, &s->mu, &ts) != ETIMEDOUT) {
    }
    s->wants_more = false;
}

/*
 * Take queued operations into ops (mu held), up to batch_max and whole
 * atomic groups only: a group never straddles two batches
 * (store_submit_atomic() refuses one larger than batch_max).  A batch
 * that opens with a handoff group (records and their checkpoint) runs
 * through LMDB whatever it holds, so it takes up to STORE_HANDOFF_GROUPS
 * times batch_max operations: every handoff group queued behind it, and
 * with them the other operations queued between them (client writes,
 * replica writes: at most batch_max of those), which then ride the same
 * transaction instead of ending the run.  A client write lands between
 * two handoff batches every few milliseconds while a node receives arcs
 * under load; ending the run there kept nearly every handoff transaction
 * to one group (tests/bench/bench_handoff.sh).
 */
/* Does op open a handoff batch's group (records and their checkpoint)? */
static bool handoff_group(const struct store_op *op)
{
    return op->group_ > 1 && op->type == STORE_OP_APPLY_RECORD;
}

static size_t queue_take(struct store *s, struct store_op **ops)
{
    size_t n = 0, others = 0;
    bool handoff = s->queue_head != NULL && handoff_group(s->queue_head);
    size_t cap = handoff ? STORE_HANDOFF_GROUPS * s->cfg.batch_max : s->cfg.batch_max;

    while (s->queue_head != NULL) {
        size_t g = s->queue_head->group_ > 1 ? s->queue_head->group_ : 1;
        bool other = !handoff_group(s->queue_head);
        if (n + g > cap || (handoff && other && others + g > s->cfg.batch_max)) {
            break;
        }
        others += other ? g : 0;
        for (size_t i = 0; i < g; i++) {
            ops[n++] = s->queue_head;
            s->queue_head = s->queue_head->next_;
        }
    }
    if (s->queue_head == NULL) {
        s->queue_tail = NULL;
    }
    s->queue_len -= n;
    return n;
}

/*
 * Take the writer role (mu held, leading false): run one batch of the queue
 * and complete it.  Returns with mu held and the role handed on.  Both the
 * writer thread and threads blocked in store_wait() lead: a thread waiting
 * for its own write runs the batch itself when nobody else is writing, so
 * an uncontended synchronous write costs no thread hand-off, while
 * operations completed by callback (the event loop's) are left to the
 * writer thread.
 */
static void store_lead(struct store *s, bool inline_)
{
    struct store_op **ops = s->batch_ops;
    size_t n, decayed;

    s->leading = true;
    store_delay_commit(s);
    n = queue_take(s, ops);
    s->running_n = n;
    /*
     * The recent size decays by an eighth a batch, rounded up so that it
     * reaches 0: a drop in load ends the delay soon, and a lone write after
     * a burst stops waiting within a few dozen batches.
     */
    decayed = s->recent_batch - (s->recent_batch + 7) / 8;
    s->recent_batch = n > decayed ? n : decayed;
    atomic_store(&s->stat.recent_batch, s->recent_batch);
    pthread_mutex_unlock(&s->mu);
    batch_run(s, ops, n);
    pthread_mutex_lock(&s->mu);
    batch_complete(s, ops, n);
    s->running_n = 0;
    s->ckpt_due = s->ov.bytes + s->hov.bytes >= STORE_CKPT_OVERLAY_BYTES ||
                  s->wal_len >= STORE_CKPT_WAL_BYTES;
    if (s->ckpt_due && !inline_) {
        pthread_mutex_unlock(&s->mu);
        (void)store_checkpoint(s);
        pthread_mutex_lock(&s->mu);
        s->ckpt_due = false;
    }
    s->leading = false;
    store_handoff(s);
    if (s->ckpt_due) {
        pthread_cond_signal(&s->work); /* the writer thread checkpoints, not the caller's */
    }
}

/*
 * Wait until there is a batch to run and nobody runs one, or the store
 * closes (false), or until the writer has been idle STORE_CKPT_IDLE_MS
 * with the log holding records (true: time for a checkpoint).
 */
static bool writer_wait(struct store *s)
{
    while ((s->queue_head == NULL || s->leading) && !(s->closing && !s->leading)) {
        struct timespec ts;
        if (s->ckpt_due && !s->leading) {
            s->ckpt_due = false;
            return true;
        }
        if (s->leading || !store_log_pending(s)) {
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        if (clock_mono_ms() < s->ckpt_retry_ms) { /* a checkpoint failed: try later */
            uint64_t wait = s->ckpt_retry_ms - clock_mono_ms();
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += (time_t)(wait / 1000);
            ts.tv_nsec += (long)(wait % 1000) * 1000000L;
            ts.tv_sec += ts.tv_nsec / 1000000000;
            ts.tv_nsec %= 1000000000;
            pthread_cond_timedwait(&s->work, &s->mu, &ts);
            continue;
        }
        if (s->cfg.test_idle_checkpoint_ms == UINT64_MAX) {
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)(s->cfg.test_idle_checkpoint_ms ? s->cfg.test_idle_checkpoint_ms
                                                            : STORE_CKPT_IDLE_MS) *
                      1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        if (pthread_cond_timedwait(&s->work, &s->mu, &ts) == ETIMEDOUT && s->queue_head == NULL &&
            !s->leading && !s->closing) {
            return true;
        }
    }
    return false;
}

/*
 * Sync batch: fsync the log every batch_ms when something was appended,
 * and LMDB's file when something was committed to it (its meta page, under
 * MDB_NOMETASYNC), from a thread of its own.  Neither takes a lock the
 * writers need, so they go on while it runs.
 */
/* The syncer's flush of one file when it was written since the last (mu held, released meanwhile).
 */
static void syncer_flush(struct store *s, atomic_bool *dirty, int (*sync)(struct store *),
                         const char *what)
{
    int rc;

    if (!atomic_exchange(dirty, false) || atomic_load(&s->disk_failed)) {
        return;
    }
    pthread_mutex_unlock(&s->mu);
    rc = sync(s);
    atomic_fetch_add(&s->stat.syncs, 1);
    if (rc != 0) {
        store_disk_fail(s, what, rc);
    }
    pthread_mutex_lock(&s->mu);
}

static void *store_syncer_main(void *arg)
{
    struct store *s = arg;
    struct timespec ts;

    pthread_mutex_lock(&s->mu);
    while (!s->closing) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)s->cfg.batch_ms * 1000000;
        ts.tv_sec += ts.tv_nsec / 1000000000;
        ts.tv_nsec %= 1000000000;
        pthread_cond_timedwait(&s->sync_wake, &s->mu, &ts);
        syncer_flush(s, &s->wal_dirty, store_log_sync, "wal_fsync");
        syncer_flush(s, &s->dirty, store_sync, "fsync");
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *store_writer_main(void *arg)
{
    struct store *s = arg;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (writer_wait(s)) {
            s->leading = true;
            pthread_mutex_unlock(&s->mu);
            (void)store_checkpoint(s);
            pthread_mutex_lock(&s->mu);
            s->leading = false;
            store_handoff(s);
            continue;
        }
        if (s->queue_head == NULL) {
            break; /* closing, nobody writing, and everything queued is done */
        }
        store_lead(s, false);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* --- submitting and completing ------------------------------------------------ */

void store_op_init(struct store_op *op, enum store_op_type type)
{
    memset(op, 0, sizeof(*op));
    op->type = type;
    sibling_init(&op->written);
}

static bool op_valid(const struct store_op *op)
{
    bool keyed = op->type == STORE_OP_WRITE || op->type == STORE_OP_APPLY ||
                 op->type == STORE_OP_HINT_PUT || op->type == STORE_OP_DELETE_IF ||
                 op->type == STORE_OP_APPLY_RECORD;
    bool ranged = op->type == STORE_OP_DELETE_RANGE || op->type == STORE_OP_COLLECT;
    bool targeted = op->type == STORE_OP_HINT_PUT || op->type == STORE_OP_HINT_DELETE;

    if ((unsigned)op->type > STORE_OP_APPLY_RECORD) {
        return false;
    }
    if ((op->type == STORE_OP_DELETE_IF || op->type == STORE_OP_APPLY_RECORD) &&
        op->value == NULL) {
        return false;
    }
    if (keyed && op->key == NULL && op->key_len > 0) {
        return false;
    }
    if ((op->type == STORE_OP_APPLY || op->type == STORE_OP_HINT_PUT) && op->version == NULL) {
        return false;
    }
    if (op->type == STORE_OP_WRITE && op->value == NULL && op->value_len > 0) {
        return false;
    }
    if (targeted && (op->target == NULL || !ring_name_valid(op->target, strlen(op->target)))) {
        return false;
    }
    if (ranged && (op->cursor == NULL || op->limit < 1)) {
        return false;
    }
    return op->type != STORE_OP_TABLE_PUT || (op->key_len >= 1 && op->key_len <= 511);
}

/* store_submit()'s checks of one operation, before anything is queued. */
static int op_check(const struct store_op *op)
{
    bool keyed = op->type == STORE_OP_WRITE || op->type == STORE_OP_APPLY ||
                 op->type == STORE_OP_HINT_PUT || op->type == STORE_OP_DELETE_IF ||
                 op->type == STORE_OP_APPLY_RECORD;

    if (keyed && op->key_len > STORE_KEY_MAX) {
        return RK_ETOOBIG;
    }
    if (op->type == STORE_OP_WRITE && op->value_len > RECORD_VALUE_MAX) {
        return RK_ETOOBIG;
    }
    return op_valid(op) ? 0 : RK_EINVAL;
}

/*
 * Queue ops[0..n) in order under one lock and wake the writer once.  Every
 * operation is checked first: on an error none is queued.  With atomic,
 * the operations form one group (group_ on the first).
 */
static int submit_ops(struct store *s, struct store_op **ops, size_t n, bool atomic, bool wake)
{
    bool callback = false;

    for (size_t i = 0; i < n; i++) {
        int rc = op_check(ops[i]);
        if (rc != 0) {
            return rc;
        }
    }
    for (size_t i = 0; i < n; i++) {
        ops[i]->next_ = i + 1 < n ? ops[i + 1] : NULL;
        ops[i]->finished_ = false;
        ops[i]->wake_ = NULL;
        ops[i]->result = 0;
        ops[i]->group_ = atomic && i == 0 ? n : 0;
        callback = callback || ops[i]->done != NULL;
    }
    pthread_mutex_lock(&s->mu);
    if (s->closing) {
        pthread_mutex_unlock(&s->mu);
        return RK_ECLOSED;
    }
    if (s->queue_tail != NULL) {
        s->queue_tail->next_ = ops[0];
    } else {
        s->queue_head = ops[0];
    }
    s->queue_tail = ops[n - 1];
    s->queue_len += n;
    if (s->wants_more) {
        pthread_cond_signal(&s->more);
    }
    if (callback && wake) {
        /* a waiter leads its own batch; a callback operation needs the writer thread */
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

int store_submit(struct store *s, struct store_op *op)
{
    return submit_ops(s, &op, 1, false, true);
}

int store_submit_list(struct store *s, struct store_op **ops, size_t n)
{
    return n == 0 ? 0 : submit_ops(s, ops, n, false, true);
}

size_t store_batch_max(const struct store *s)
{
    return s->cfg.batch_max;
}

/* Whether ops[0..n) may be one atomic group (store_submit_atomic()'s errors). */
static int atomic_check(const struct store *s, struct store_op **ops, size_t n)
{
    if (n > s->cfg.batch_max) {
        return RK_ETOOBIG;
    }
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->type == STORE_OP_DELETE_RANGE || ops[i]->type == STORE_OP_COLLECT) {
            return RK_EINVAL;
        }
    }
    return 0;
}

int store_submit_atomic(struct store *s, struct store_op **ops, size_t n)
{
    int rc = atomic_check(s, ops, n);

    return rc != 0 || n == 0 ? rc : submit_ops(s, ops, n, n > 1, true);
}

int store_queue(struct store *s, struct store_op **ops, size_t n, bool atomic)
{
    int rc = atomic ? atomic_check(s, ops, n) : 0;

    return rc != 0 || n == 0 ? rc : submit_ops(s, ops, n, atomic && n > 1, false);
}

static bool op_hint_of(const struct store_op *op, const uint8_t *key, size_t len)
{
    return op->type == STORE_OP_HINT_PUT && op->key_len == len &&
           (len == 0 || memcmp(op->key, key, len) == 0);
}

bool store_hint_queued(struct store *s, const uint8_t *key, size_t len)
{
    bool queued = false;

    pthread_mutex_lock(&s->mu);
    for (struct store_op *op = s->queue_head; op != NULL && !queued; op = op->next_) {
        queued = op_hint_of(op, key, len);
    }
    for (size_t i = 0; s->leading && i < s->running_n && !queued; i++) {
        queued = op_hint_of(s->batch_ops[i], key, len);
    }
    pthread_mutex_unlock(&s->mu);
    return queued;
}

int store_wait(struct store *s, struct store_op *op)
{
    assert(op->done == NULL && "store_wait: the operation completes through its callback");
    assert(!read_locked(s) && "store_wait: a thread holding a read would wait for itself");
    pthread_mutex_lock(&s->mu);
    while (!op->finished_) {
        pthread_cond_t wake;
        if (!s->leading && s->queue_head != NULL) {
            store_lead(s, false);
            continue;
        }
        /* woken alone: when op completes, or to take the writer role */
        pthread_cond_init(&wake, NULL);
        op->wake_ = &wake;
        pthread_cond_wait(&wake, &s->mu);
        op->wake_ = NULL;
        pthread_cond_destroy(&wake);
    }
    pthread_mutex_unlock(&s->mu);
    return op->result;
}

/*
 * Would the queued batch go to the log (mu held, nobody leading, so the
 * writer's state is still)?  The batch store_lead() would take: up to
 * batch_max operations, whole groups.
 */
static bool queue_loggable(struct store *s)
{
    struct store_op **ops = s->batch_ops;
    size_t n = 0;

    for (struct store_op *op = s->queue_head; op != NULL && n < s->cfg.batch_max; op = op->next_) {
        ops[n++] = op;
    }
    return batch_loggable(s, ops, n);
}

void store_run_ready(struct store *s)
{
    bool here = s->cfg.sync != STORE_SYNC_ALWAYS && !read_locked(s);

    pthread_mutex_lock(&s->mu);
    if (here && !s->leading && !s->closing && s->queue_head != NULL && queue_loggable(s)) {
        store_lead(s, true);
    }
    if (!s->leading && s->queue_head != NULL) {
        pthread_cond_signal(&s->work); /* what store_queue() left, or what this thread cannot run */
    }
    pthread_mutex_unlock(&s->mu);
}

int store_event_fd(const struct store *s)
{
    return s->event_fd;
}

void store_dispatch(struct store *s)
{
    struct store_op *op;
    uint64_t n;

    /*
     * Clear the descriptor before taking the list: a batch completing in
     * between then leaves the descriptor readable and its operations are
     * dispatched next time.  The other order would clear the wake-up of a
     * batch this call did not take, and its callbacks would wait for an
     * unrelated completion.
     */
    if (read(s->event_fd, &n, sizeof(n)) < 0) {
        n = 0; /* EAGAIN: nothing was signalled since the last dispatch */
    }
    if (s->cfg.test_dispatch_gap != NULL) {
        s->cfg.test_dispatch_gap(s->cfg.test_ctx);
    }
    pthread_mutex_lock(&s->mu);
    op = s->done_head;
    s->done_head = s->done_tail = NULL;
    pthread_mutex_unlock(&s->mu);
    while (op != NULL) {
        struct store_op *next = op->next_;
        op->done(op, op->ctx);
        op = next;
    }
}

int store_write(struct store *s, const void *key, size_t len, const void *value, size_t value_len,
                bool tombstone, const struct vclock *context, struct sibling *written)
{
    struct store_op op;
    int rc;

    store_op_init(&op, STORE_OP_WRITE);
    op.key = key;
    op.key_len = len;
    op.value = value;
    op.value_len = value_len;
    op.tombstone = tombstone;
    op.context = context;
    op.skip_written = written == NULL;
    rc = store_submit(s, &op);
    rc = rc ? rc : store_wait(s, &op);
    if (rc == 0 && written != NULL) {
        sibling_deinit(written);
        *written = op.written;
    } else {
        sibling_deinit(&op.written);
    }
    return rc;
}

int store_apply_record(struct store *s, const void *key, size_t len, const uint8_t *rec,
                       size_t rec_len, bool *changed)
{
    struct store_op op;
    int rc;

    store_op_init(&op, STORE_OP_APPLY_RECORD);
    op.key = key;
    op.key_len = len;
    op.value = rec;
    op.value_len = rec_len;
    rc = store_submit(s, &op);
    rc = rc ? rc : store_wait(s, &op);
    if (changed != NULL) {
        *changed = rc == 0 && op.changed;
    }
    return rc;
}

int store_apply(struct store *s, const void *key, size_t len, const struct sibling *v,
                bool *changed)
{
    struct store_op op;
    int rc;

    store_op_init(&op, STORE_OP_APPLY);
    op.key = key;
    op.key_len = len;
    op.version = v;
    rc = store_submit(s, &op);
    rc = rc ? rc : store_wait(s, &op);
    if (changed != NULL) {
        *changed = rc == 0 && op.changed;
    }
    return rc;
}
