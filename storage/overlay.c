/*
 * overlay.c - the store's in-memory index of the records its write-ahead
 * log holds: a chained hash table keyed by data-table key, whose first 8
 * bytes are the key's ring position (already a hash), plus a sorted view
 * for checkpoints and scans, kept incrementally: a new key joins an
 * unsorted tail, a replaced entry keeps its slot, and overlay_sorted()
 * sorts only the tail and merges it in.  Sorting the whole overlay at
 * every call cost a receiving node 60% of its CPU in a profile of
 * tests/bench/bench_handoff.sh, where the handoff verifier's digests and
 * the collector scan after nearly every batch while the overlay holds
 * hundreds of thousands of keys.
 */
#include "overlay.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"

#define OVERLAY_BUCKETS_MIN 1024
/*
 * Entry chunks: an entry of at most OVERLAY_CHUNK_ENTRY_MAX bytes is carved
 * from a chunk; at most OVERLAY_SPARE_MAX emptied chunks are kept (about
 * twice the overlay a checkpoint starts at, STORE_CKPT_OVERLAY_BYTES).
 * malloc()'d one by one, the entries of a receiving node's overlay were
 * freed at every checkpoint and the heap's top given back to the system,
 * so the next batches faulted the same pages in again: 16% of its CPU in a
 * profile of tests/bench/bench_handoff.sh, and malloc and free 6% more.
 */
#define OVERLAY_CHUNK_BYTES (1024 * 1024)
#define OVERLAY_CHUNK_ENTRY_MAX (OVERLAY_CHUNK_BYTES / 16)
#define OVERLAY_SPARE_MAX 64

struct ov_chunk {
    struct ov_chunk *next;
    uint64_t pad; /* entries start 16-byte aligned */
    uint8_t data[];
};
#define OVERLAY_CHUNK_DATA (OVERLAY_CHUNK_BYTES - sizeof(struct ov_chunk))
/* The sorted view's first allocation (pointers); it doubles from there. */
#define OVERLAY_VIEW_MIN 1024

int overlay_init(struct overlay *ov)
{
    memset(ov, 0, sizeof(*ov));
    ov->bucket = calloc(OVERLAY_BUCKETS_MIN, sizeof(*ov->bucket));
    if (ov->bucket == NULL) {
        return RK_ENOMEM;
    }
    ov->nbuckets = OVERLAY_BUCKETS_MIN;
    pthread_mutex_init(&ov->sort_mu, NULL);
    return 0;
}

void overlay_clear(struct overlay *ov)
{
    for (size_t i = 0; i < ov->nbuckets; i++) {
        struct ov_entry *e = ov->bucket[i];
        while (e != NULL) {
            struct ov_entry *next = e->next;
            overlay_entry_free(e);
            e = next;
        }
        ov->bucket[i] = NULL;
    }
    while (ov->chunks != NULL) { /* emptied: kept for the next entries, up to a bound */
        struct ov_chunk *c = ov->chunks;
        ov->chunks = c->next;
        if (ov->n_spare < OVERLAY_SPARE_MAX) {
            c->next = ov->spare;
            ov->spare = c;
            ov->n_spare++;
        } else {
            free(c);
        }
    }
    ov->chunk_used = 0;
    ov->n = ov->fresh = ov->bytes = 0;
    ov->sorted_n = 0;
    ov->sorted_lost = false;
}

void overlay_free(struct overlay *ov)
{
    if (ov->bucket == NULL) {
        return; /* never initialised */
    }
    overlay_clear(ov);
    while (ov->spare != NULL) {
        struct ov_chunk *c = ov->spare;
        ov->spare = c->next;
        free(c);
    }
    free(ov->bucket);
    free(ov->sorted);
    pthread_mutex_destroy(&ov->sort_mu);
    memset(ov, 0, sizeof(*ov));
}

/* A new entry's fields, and its key copied in; arena: carved from a chunk. */
static struct ov_entry *overlay_entry_init(struct ov_entry *e, const uint8_t *key, size_t key_len,
                                           size_t rec_len, bool fresh, bool arena)
{
    e->next = NULL;
    e->fresh = fresh;
    e->gone = false;
    e->pending = false;
    e->arena = arena;
    e->at = 0;
    e->key_len = (uint32_t)key_len;
    e->rec_len = (uint32_t)rec_len;
    memcpy(e->data, key, key_len);
    return e;
}

struct ov_entry *overlay_entry_new(const uint8_t *key, size_t key_len, size_t rec_len, bool fresh)
{
    struct ov_entry *e = malloc(sizeof(*e) + key_len + rec_len);

    return e != NULL ? overlay_entry_init(e, key, key_len, rec_len, fresh, false) : NULL;
}

struct ov_entry *overlay_entry_alloc(struct overlay *ov, const uint8_t *key, size_t key_len,
                                     size_t rec_len, bool fresh)
{
    size_t size = (sizeof(struct ov_entry) + key_len + rec_len + 7) & ~(size_t)7;
    struct ov_entry *e;

    if (size > OVERLAY_CHUNK_ENTRY_MAX) {
        return overlay_entry_new(key, key_len, rec_len, fresh);
    }
    if (ov->chunks == NULL || ov->chunk_used + size > OVERLAY_CHUNK_DATA) {
        struct ov_chunk *c = ov->spare;
        if (c != NULL) {
            ov->spare = c->next;
            ov->n_spare--;
        } else if ((c = malloc(OVERLAY_CHUNK_BYTES)) == NULL) {
            return overlay_entry_new(key, key_len, rec_len, fresh); /* perhaps it fits */
        }
        c->next = ov->chunks;
        ov->chunks = c;
        ov->chunk_used = 0;
    }
    e = (struct ov_entry *)(ov->chunks->data + ov->chunk_used);
    ov->chunk_used += size;
    return overlay_entry_init(e, key, key_len, rec_len, fresh, true);
}

void overlay_entry_free(struct ov_entry *e)
{
    if (e != NULL && !e->arena) {
        free(e);
    }
}

static size_t overlay_slot(const struct overlay *ov, const uint8_t *key, size_t key_len)
{
    uint64_t h = key_len >= 8 ? bytes_get_be64(key) : 0;

    for (size_t i = 8; i < key_len && i < 16; i++) {
        h = h * 1099511628211ull ^ key[i]; /* keys sharing a position still spread */
    }
    h ^= h >> 29;
    return (size_t)(h & (ov->nbuckets - 1));
}

int overlay_key_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

struct ov_entry *overlay_find(const struct overlay *ov, const uint8_t *key, size_t key_len)
{
    struct ov_entry *e;

    if (ov->n == 0) {
        return NULL; /* nothing logged since the last checkpoint */
    }
    for (e = ov->bucket[overlay_slot(ov, key, key_len)]; e != NULL; e = e->next) {
        if (e->key_len == key_len && memcmp(e->data, key, key_len) == 0) {
            return e;
        }
    }
    return NULL;
}

/* Double the table when it holds as many entries as it has buckets. */
static void overlay_grow(struct overlay *ov)
{
    size_t nb = ov->nbuckets * 2;
    struct ov_entry **old = ov->bucket;
    size_t oldn = ov->nbuckets;

    if (ov->n < ov->nbuckets) {
        return;
    }
    ov->bucket = calloc(nb, sizeof(*ov->bucket));
    if (ov->bucket == NULL) {
        ov->bucket = old; /* a full table still works, only slower */
        return;
    }
    ov->nbuckets = nb;
    for (size_t i = 0; i < oldn; i++) {
        struct ov_entry *e = old[i];
        while (e != NULL) {
            struct ov_entry *next = e->next;
            size_t slot = overlay_slot(ov, e->data, e->key_len);
            e->next = ov->bucket[slot];
            ov->bucket[slot] = e;
            e = next;
        }
    }
    free(old);
}

static int overlay_entry_cmp(const void *a, const void *b)
{
    const struct ov_entry *x = *(struct ov_entry *const *)a, *y = *(struct ov_entry *const *)b;

    return overlay_key_cmp(x->data, x->key_len, y->data, y->key_len);
}

/* A new entry joins the sorted view's pending tail at index at (the count before it). */
static void overlay_view_add(struct overlay *ov, struct ov_entry *e, size_t at)
{
    if (ov->sorted_lost) {
        return;
    }
    if (at >= ov->sorted_cap) {
        size_t cap = ov->sorted_cap ? ov->sorted_cap * 2 : OVERLAY_VIEW_MIN;
        struct ov_entry **p = at < UINT32_MAX ? realloc(ov->sorted, cap * sizeof(*p)) : NULL;
        if (p == NULL) {
            ov->sorted_lost = true; /* built again from the table when asked for */
            return;
        }
        ov->sorted = p;
        ov->sorted_cap = cap;
    }
    e->pending = true;
    e->at = (uint32_t)at;
    ov->sorted[at] = e;
}

/* e replaces old (still allocated) in the sorted view: it takes old's slot. */
static void overlay_view_replace(struct overlay *ov, struct ov_entry *e, const struct ov_entry *old)
{
    size_t i;

    if (ov->sorted_lost) {
        return;
    }
    if (old->pending) {
        e->pending = true;
        e->at = old->at;
        ov->sorted[e->at] = e;
        return;
    }
    i = overlay_lower_bound(ov->sorted, ov->sorted_n, ov_key(old), old->key_len);
    if (i < ov->sorted_n && ov->sorted[i] == old) {
        ov->sorted[i] = e;
    } else {
        ov->sorted_lost = true; /* not where it must be: cannot happen, but stay correct */
    }
}

void overlay_put(struct overlay *ov, struct ov_entry *e)
{
    struct ov_entry **pp;

    overlay_grow(ov);
    for (pp = &ov->bucket[overlay_slot(ov, e->data, e->key_len)]; *pp != NULL; pp = &(*pp)->next) {
        struct ov_entry *old = *pp;
        if (old->key_len == e->key_len && memcmp(old->data, e->data, e->key_len) == 0) {
            e->fresh = old->fresh;
            e->next = old->next;
            *pp = e;
            overlay_view_replace(ov, e, old);
            ov->bytes += e->key_len + e->rec_len;
            if (!old->arena) { /* a chunk's entry holds its memory until the clear */
                ov->bytes -= old->key_len + old->rec_len;
            }
            overlay_entry_free(old);
            return;
        }
    }
    e->next = NULL;
    *pp = e;
    overlay_view_add(ov, e, ov->n);
    ov->n++;
    ov->fresh += e->fresh;
    ov->bytes += sizeof(*e) + e->key_len + e->rec_len;
}

/* Build the sorted view again from the table (after an allocation failed). */
static int overlay_view_rebuild(struct overlay *ov)
{
    size_t k = 0;

    if (ov->sorted_cap < ov->n) {
        struct ov_entry **p = realloc(ov->sorted, ov->n * sizeof(*p));
        if (p == NULL) {
            return RK_ENOMEM;
        }
        ov->sorted = p;
        ov->sorted_cap = ov->n;
    }
    for (size_t i = 0; i < ov->nbuckets; i++) {
        for (struct ov_entry *e = ov->bucket[i]; e != NULL; e = e->next) {
            e->pending = false;
            ov->sorted[k++] = e;
        }
    }
    qsort(ov->sorted, k, sizeof(*ov->sorted), overlay_entry_cmp);
    ov->sorted_n = k;
    ov->sorted_lost = false;
    return 0;
}

/*
 * Sort the pending tail and merge it into the sorted prefix, from the
 * back: the largest pending entry goes after the prefix's entries below
 * it, and the prefix's entries above it move up by the number of pending
 * entries not yet placed.  Every prefix entry moves once (memmove of
 * pointers); comparisons are the pending keys' binary searches.
 */
static int overlay_view_merge(struct overlay *ov)
{
    size_t k = ov->n - ov->sorted_n, hi = ov->sorted_n;
    struct ov_entry **p = malloc(k * sizeof(*p));

    if (p == NULL) {
        return RK_ENOMEM;
    }
    memcpy(p, ov->sorted + ov->sorted_n, k * sizeof(*p));
    qsort(p, k, sizeof(*p), overlay_entry_cmp);
    for (size_t j = k; j-- > 0;) {
        size_t at = overlay_lower_bound(ov->sorted, hi, ov_key(p[j]), p[j]->key_len);
        memmove(ov->sorted + at + j + 1, ov->sorted + at, (hi - at) * sizeof(*p));
        ov->sorted[at + j] = p[j];
        p[j]->pending = false;
        hi = at;
    }
    ov->sorted_n = ov->n;
    free(p);
    return 0;
}

int overlay_sorted(struct overlay *ov, struct ov_entry *const **out, size_t *n)
{
    int rc = 0;

    pthread_mutex_lock(&ov->sort_mu);
    if (ov->sorted_lost) {
        rc = overlay_view_rebuild(ov);
    } else if (ov->sorted_n < ov->n) {
        rc = overlay_view_merge(ov);
    }
    if (rc == 0) {
        *out = ov->sorted;
        *n = ov->n;
    }
    pthread_mutex_unlock(&ov->sort_mu);
    return rc;
}

size_t overlay_lower_bound(struct ov_entry *const *sorted, size_t n, const uint8_t *key,
                           size_t key_len)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (overlay_key_cmp(sorted[mid]->data, sorted[mid]->key_len, key, key_len) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}
