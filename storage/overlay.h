/*
 * overlay.h - the records written since the last checkpoint, by key: what
 * the write-ahead log holds and LMDB does not have yet (store.c).
 *
 * Reads look here before LMDB; a checkpoint puts every entry into LMDB in
 * key order and empties the overlay.  One entry per key, the newest: a put
 * replaces the entry it finds and frees it.  An entry remembers whether
 * its key is absent from LMDB ("fresh"), so a count of keys and a scan can
 * add the keys only the overlay has.
 *
 * The store keeps a second overlay for the handoff table's logged values:
 * its keys are opaque bytes (hashed as data keys are, chains absorbing any
 * bias), its "records" the values, and an entry may stand for a delete
 * (gone).  Freshness means nothing there.
 *
 * Not locked: the store changes an overlay only while no reader is inside
 * it (its resize lock held exclusively), and readers only read it, except
 * for the sorted view, which is built under the overlay's own mutex.
 */
#ifndef RINGKV_OVERLAY_H
#define RINGKV_OVERLAY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ov_entry {
    struct ov_entry *next; /* in its hash bucket */
    bool fresh;            /* the key is not in LMDB */
    bool gone;             /* a table overlay's: the key was deleted (rec_len 0) */
    bool pending;          /* in the unsorted tail of the sorted view, at index at */
    bool arena;            /* carved from its overlay's chunks (overlay_entry_alloc()) */
    uint32_t key_len;      /* the data-table key: u64 position || key bytes */
    uint32_t rec_len;      /* the encoded record */
    uint32_t at;           /* pending: its index in the sorted view */
    uint8_t data[];        /* key_len bytes of key, then rec_len bytes of record */
};

static inline const uint8_t *ov_key(const struct ov_entry *e)
{
    return e->data;
}

static inline uint8_t *ov_rec(struct ov_entry *e)
{
    return e->data + e->key_len;
}

struct overlay {
    struct ov_entry **bucket;
    size_t nbuckets; /* a power of two, or 0 before the first put */
    size_t n;        /* entries */
    size_t fresh;    /* entries whose key LMDB does not have */
    size_t bytes;    /* memory held by the entries */
    /*
     * The sorted view: every entry once, the first sorted_n in key order,
     * the rest (pending) in the order their keys came.  overlay_sorted()
     * sorts the pending ones alone and merges them in; a put that replaces
     * an entry takes its slot.  When the array cannot grow (sorted_lost)
     * the next overlay_sorted() builds it again from the table.
     */
    pthread_mutex_t sort_mu;
    struct ov_entry **sorted;
    size_t sorted_cap;
    size_t sorted_n;
    bool sorted_lost;
    /*
     * The chunks entries are carved from (overlay_entry_alloc()): the one
     * being filled first, then the full ones; emptied chunks kept for the
     * next fill (spare), so a store that checkpoints every few seconds
     * does not give its pages back and fault them in again each time.
     */
    struct ov_chunk *chunks, *spare;
    size_t chunk_used; /* bytes of chunks' first chunk handed out */
    size_t n_spare;
};

/* An empty overlay with its first table; RK_ENOMEM. */
int overlay_init(struct overlay *ov);
/* Free every entry and the overlay's own memory. */
void overlay_free(struct overlay *ov);
/* Free every entry (chunks are kept for the next entries); the overlay stays usable. */
void overlay_clear(struct overlay *ov);

/* A new entry for key with room for a record of rec_len bytes; NULL when out of memory. */
struct ov_entry *overlay_entry_new(const uint8_t *key, size_t key_len, size_t rec_len, bool fresh);
/*
 * overlay_entry_new() carved from ov's chunks (a large entry is malloc'd
 * alone): for entries only ov will take in, by the one thread that changes
 * ov.  Its memory is ov's until overlay_clear(): freeing it (a put that
 * replaces it, overlay_entry_free()) gives nothing back before then, so
 * ov->bytes keeps counting a replaced entry of the chunks.
 */
struct ov_entry *overlay_entry_alloc(struct overlay *ov, const uint8_t *key, size_t key_len,
                                     size_t rec_len, bool fresh);
/* Free an entry not (or no longer) in an overlay: nothing for one carved from chunks. */
void overlay_entry_free(struct ov_entry *e);

/* The entry of key, or NULL. */
struct ov_entry *overlay_find(const struct overlay *ov, const uint8_t *key, size_t key_len);

/*
 * Take e in, replacing (and freeing) the entry of its key; e keeps the
 * replaced entry's freshness.  Never fails: when the table cannot grow its
 * chains get longer.
 */
void overlay_put(struct overlay *ov, struct ov_entry *e);

/*
 * The entries in key order (memcmp of the data-table keys, so in ring
 * position order): *out valid until the overlay next changes.  Brought up
 * to date at most once per change, under the overlay's mutex, so readers
 * may call it concurrently: the keys new since the last call are sorted
 * and merged in (O(k log n) comparisons and one pass of pointer moves for
 * k new keys), not the whole overlay sorted again, so a scan after every
 * batch costs what the batch added.  RK_ENOMEM.
 */
int overlay_sorted(struct overlay *ov, struct ov_entry *const **out, size_t *n);

/* Index in a sorted view of the first entry whose key is >= key (n when none). */
size_t overlay_lower_bound(struct ov_entry *const *sorted, size_t n, const uint8_t *key,
                           size_t key_len);

/* memcmp order of data-table keys: negative, 0 or positive. */
int overlay_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

#endif
