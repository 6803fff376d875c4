/*
 * vclock.h - version vectors (vector clocks): which writes a version has
 * seen.  Pure: no I/O, no clock reads; time comes in as arguments.
 *
 * A vector clock maps node ids to counters.  Entry (n, c) says the version
 * has seen the first c writes coordinated by node n.  Version A descends
 * from B (A is AFTER B) when every counter of A is >= B's and one is
 * greater; two versions neither of which descends from the other are
 * CONCURRENT, and storage keeps both as siblings.
 *
 * Each entry also carries the HLC timestamp of its last increment (stamp).
 * Stamps never take part in comparisons; they only let pruning drop the
 * entries that have not moved for longest (Riak's vclock pruning keeps the
 * same per-entry timestamp for the same reason).
 *
 * Invariants of a valid clock: entries sorted by id in ring order (bytes,
 * shorter prefix first), ids unique and valid node ids (PLACEMENT.md
 * section 2), counters >= 1, at most VCLOCK_ENTRIES_MAX entries.  Every
 * function here keeps them; vclock_decode() rejects input that breaks them.
 *
 * Encoded form (big-endian), the `clock` field of the record format in
 * record.h and of every wire message that carries a version:
 *
 *   u16 n                      number of entries, 0 .. VCLOCK_ENTRIES_MAX
 *   n times:
 *     u8  id_len               1 .. 64
 *     id_len bytes id          [A-Za-z0-9._:-], strictly ascending
 *     u64 counter              >= 1
 *     u64 stamp                HLC of the entry's last increment
 */
#ifndef RINGKV_VCLOCK_H
#define RINGKV_VCLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/*
 * Hard bound on entries.  A clock names the data-directory lives that
 * coordinated a write of its key, which are replicas of the key, not every
 * member of the ring, so the bound is its own and not RING_MEMBERS_MAX
 * (clients' contexts, the CLOCKFULL error text and PROTOCOL.md 7.15 name
 * it).  Pruning keeps real clocks far below it (VCLOCK_PRUNE_KEEP_DEFAULT).
 */
#define VCLOCK_ENTRIES_MAX 4096
/* Smallest encoded entry: id_len, a 1-byte id, counter, stamp. */
#define VCLOCK_ENTRY_MIN_BYTES (1 + 1 + 8 + 8)

struct vclock_entry {
    char id[RING_NAME_MAX + 1]; /* NUL-terminated node id */
    uint8_t id_len;
    uint64_t counter;
    uint64_t stamp;
};

/* A clock; entries owned by it.  Zero-initialised or vclock_init() is empty. */
struct vclock {
    struct vclock_entry *e;
    uint32_t n;
    size_t cap; /* entries allocated (grow.h) */
};

enum vclock_order {
    VCLOCK_EQUAL,      /* same counters */
    VCLOCK_BEFORE,     /* a < b: b descends from a */
    VCLOCK_AFTER,      /* a > b: a descends from b */
    VCLOCK_CONCURRENT, /* neither descends from the other */
};

void vclock_init(struct vclock *vc);
void vclock_deinit(struct vclock *vc);
/*
 * Make dst (initialised; its previous entries are released) an independent
 * copy of src.  RK_ENOMEM, leaving dst unchanged.
 */
int vclock_copy(struct vclock *dst, const struct vclock *src);

/* How a relates to b (stamps ignored). */
enum vclock_order vclock_compare(const struct vclock *a, const struct vclock *b);
/* True when a descends from or equals b: every counter of a >= b's. */
bool vclock_descends(const struct vclock *a, const struct vclock *b);

/* The counter of node id (0 when absent). */
uint64_t vclock_get(const struct vclock *vc, const char *id);

/*
 * dst = the pointwise maximum of dst and src (for each id the larger
 * counter, and with it that entry's stamp; on equal counters the larger
 * stamp).  Commutative, associative and idempotent.  RK_ENOMEM, or
 * RK_ECLOCKFULL past VCLOCK_ENTRIES_MAX; dst is unchanged on error.
 */
int vclock_merge(struct vclock *dst, const struct vclock *src);
/*
 * Whether merging b into a leaves a as it is, stamps included: every id of
 * b is in a, with a (counter, stamp) pair at least b's.
 */
bool vclock_covers(const struct vclock *a, const struct vclock *b);

/*
 * Add one to id's counter (creating the entry at 1) and set its stamp.
 * RK_EINVAL for an invalid id, RK_ECLOCKFULL past VCLOCK_ENTRIES_MAX,
 * RK_ERANGE when the counter is already UINT64_MAX (a decoded clock may
 * carry it), RK_ENOMEM; vc is unchanged on error.
 */
int vclock_increment(struct vclock *vc, const char *id, uint64_t stamp);

/*
 * Pruning.  A clock gains an entry for every node that ever coordinated a
 * write of the key, so it grows with cluster churn.  When a clock has more
 * than `keep` entries, the entries with the oldest stamps are dropped, down
 * to `keep`, but only those whose stamp is older than now - min_age: a
 * recently active writer is never forgotten.  Pruning can only make a clock
 * look older, so a later comparison may report CONCURRENT where the full
 * clock said AFTER: that keeps an extra sibling, it never drops a write.
 *
 * Defaults follow Riak's (small_vclock/big_vclock 50, young_vclock 20 s,
 * old_vclock 1 day), tightened to one bound: at most 50 entries, and no
 * entry younger than one day is pruned.
 */
#define VCLOCK_PRUNE_KEEP_DEFAULT 50
#define VCLOCK_PRUNE_MIN_AGE_MS_DEFAULT (24ull * 3600 * 1000)

/*
 * Prune vc per the policy above; now and min_age_ms are in HLC physical
 * milliseconds (hlc_physical()).  Returns the number of entries dropped.
 */
size_t vclock_prune(struct vclock *vc, size_t keep, uint64_t now_ms, uint64_t min_age_ms);

/* Bytes vclock_encode() writes for vc. */
size_t vclock_encoded_size(const struct vclock *vc);
/* Write vc's encoded form to out (vclock_encoded_size(vc) bytes); returns bytes written. */
size_t vclock_encode(const struct vclock *vc, uint8_t *out);
/*
 * Decode a clock from buf[0..len) into vc (initialised; its previous
 * entries are released first, and it is empty after an error).  *used
 * receives the bytes consumed, on success only; bytes after the clock are
 * left to the caller.
 * The entry count is checked against VCLOCK_ENTRIES_MAX and against the
 * bytes present before anything is allocated.  Errors: RK_ESYNTAX for
 * truncated or malformed input (bad id, zero counter, unsorted or repeated
 * ids), RK_ETOOBIG for too many entries, RK_ENOMEM.
 */
int vclock_decode(const uint8_t *buf, size_t len, size_t *used, struct vclock *vc);
/*
 * vclock_decode()'s checks alone, in the same order and with the same
 * errors (but RK_ENOMEM), nothing allocated: 0 and *used when it would
 * decode buf.
 */
int vclock_check(const uint8_t *buf, size_t len, size_t *used);
/*
 * vclock_decode() into the caller's room[0 .. room_n) when the clock fits
 * there (*took = its entries; the clock then owns nothing and its cap is 0),
 * else into an allocated array as vclock_decode() does (*took = 0).  Such
 * a clock is read only and is released with vclock_view_release(), never
 * vclock_deinit(); room must outlive it.
 */
int vclock_decode_view(const uint8_t *buf, size_t len, size_t *used, struct vclock *vc,
                       struct vclock_entry *room, size_t room_n, size_t *took);
void vclock_view_release(struct vclock *vc);

#endif
