/*
 * overlay.c - the store's in-memory index of the records its write-ahead
 * log holds: a chained hash table keyed by data-table key, whose first 8
 * bytes are the key's ring position (already a hash), plus a sorted view
 * built on demand for checkpoints and scans.
 */
#include "overlay.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"

#define OVERLAY_BUCKETS_MIN 1024

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
            free(e);
            e = next;
        }
        ov->bucket[i] = NULL;
    }
    ov->n = ov->fresh = ov->bytes = 0;
    ov->sorted_ok = false;
}

void overlay_free(struct overlay *ov)
{
    if (ov->bucket == NULL) {
        return; /* never initialised */
    }
    overlay_clear(ov);
    free(ov->bucket);
    free(ov->sorted);
    pthread_mutex_destroy(&ov->sort_mu);
    memset(ov, 0, sizeof(*ov));
}

struct ov_entry *overlay_entry_new(const uint8_t *key, size_t key_len, size_t rec_len, bool fresh)
{
    struct ov_entry *e = malloc(sizeof(*e) + key_len + rec_len);

    if (e == NULL) {
        return NULL;
    }
    e->next = NULL;
    e->fresh = fresh;
    e->key_len = (uint32_t)key_len;
    e->rec_len = (uint32_t)rec_len;
    memcpy(e->data, key, key_len);
    return e;
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

void overlay_put(struct overlay *ov, struct ov_entry *e)
{
    struct ov_entry **pp;

    overlay_grow(ov);
    ov->sorted_ok = false;
    for (pp = &ov->bucket[overlay_slot(ov, e->data, e->key_len)]; *pp != NULL; pp = &(*pp)->next) {
        struct ov_entry *old = *pp;
        if (old->key_len == e->key_len && memcmp(old->data, e->data, e->key_len) == 0) {
            e->fresh = old->fresh;
            e->next = old->next;
            *pp = e;
            ov->bytes += e->key_len + e->rec_len;
            ov->bytes -= old->key_len + old->rec_len;
            free(old);
            return;
        }
    }
    e->next = NULL;
    *pp = e;
    ov->n++;
    ov->fresh += e->fresh;
    ov->bytes += sizeof(*e) + e->key_len + e->rec_len;
}

static int overlay_entry_cmp(const void *a, const void *b)
{
    const struct ov_entry *x = *(struct ov_entry *const *)a, *y = *(struct ov_entry *const *)b;

    return overlay_key_cmp(x->data, x->key_len, y->data, y->key_len);
}

int overlay_sorted(struct overlay *ov, struct ov_entry *const **out, size_t *n)
{
    int rc = 0;

    pthread_mutex_lock(&ov->sort_mu);
    if (!ov->sorted_ok) {
        size_t k = 0;
        if (ov->sorted_cap < ov->n) {
            struct ov_entry **p = realloc(ov->sorted, ov->n * sizeof(*p));
            if (p == NULL) {
                rc = RK_ENOMEM;
                goto out;
            }
            ov->sorted = p;
            ov->sorted_cap = ov->n;
        }
        for (size_t i = 0; i < ov->nbuckets; i++) {
            for (struct ov_entry *e = ov->bucket[i]; e != NULL; e = e->next) {
                ov->sorted[k++] = e;
            }
        }
        qsort(ov->sorted, k, sizeof(*ov->sorted), overlay_entry_cmp);
        ov->sorted_ok = true;
    }
    *out = ov->sorted;
    *n = ov->n;
out:
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
