/*
 * vclock.c - version vectors: comparison, merge, increment, pruning and the
 * encoded form specified in vclock.h.
 *
 * A clock is an array of entries sorted by id in ring order (bytes, a
 * shorter prefix first), so every operation on two clocks is one walk over
 * both arrays in step, as in the merge step of a merge sort: O(n + m), no
 * lookups, and absent ids are simply the entries one side has and the other
 * does not (an absent id has counter 0, and stored counters are >= 1).
 *
 * Functions that change a clock either succeed or leave it as it was: merge
 * builds its result in a fresh array and swaps it in, increment checks
 * every bound before it touches an entry.  That is what lets a caller merge
 * a clock into itself and retry after RK_ENOMEM without damage.
 *
 * Decoding reads bytes a peer or the disk handed over, so it is total: the
 * entry count is checked against VCLOCK_ENTRIES_MAX and against the bytes
 * present before the entry array is allocated, and every entry is checked
 * (length, characters, order, counter) before the next one is read.  Only
 * the canonical encoding is accepted, so decode followed by encode gives
 * back the consumed bytes exactly.
 */
#include "vclock.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "grow.h"
#include "hlc.h"

/* Bytes of an entry after its id: u64 counter and u64 stamp. */
#define VCLOCK_ENTRY_TAIL_BYTES 16
/* First capacity of a growing clock: small clocks are the common case. */
#define VCLOCK_CAP_MIN 4

/* PLACEMENT.md section 4's id order: memcmp, a shorter prefix first. */
static int vclock_id_cmp(const char *a, size_t a_len, const char *b, size_t b_len)
{
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

    if (c != 0) {
        return c;
    }
    return (a_len > b_len) - (a_len < b_len);
}

static int vclock_entry_cmp(const struct vclock_entry *a, const struct vclock_entry *b)
{
    return vclock_id_cmp(a->id, a->id_len, b->id, b->id_len);
}

/*
 * One step of a walk over a and b in id order: <0 when only a's entry i is
 * next, >0 when only b's entry j is, 0 when both carry the same id.
 */
static int vclock_walk_step(const struct vclock *a, size_t i, const struct vclock *b, size_t j)
{
    if (i == a->n) {
        return 1;
    }
    if (j == b->n) {
        return -1;
    }
    return vclock_entry_cmp(&a->e[i], &b->e[j]);
}

/* The index of id in vc, or where it would be inserted; *found tells which. */
static size_t vclock_find(const struct vclock *vc, const char *id, size_t len, bool *found)
{
    size_t lo = 0, hi = vc->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = vclock_id_cmp(vc->e[mid].id, vc->e[mid].id_len, id, len);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

void vclock_init(struct vclock *vc)
{
    *vc = (struct vclock){0};
}

void vclock_deinit(struct vclock *vc)
{
    free(vc->e);
    vclock_init(vc);
}

int vclock_copy(struct vclock *dst, const struct vclock *src)
{
    struct vclock_entry *e = NULL;

    if (dst == src) {
        return 0;
    }
    if (dst->e != NULL && dst->cap >= src->n) {
        if (src->n > 0) {
            memcpy(dst->e, src->e, src->n * sizeof(*dst->e)); /* room already: no allocation */
        }
        dst->n = src->n;
        return 0;
    }
    if (src->n > 0) {
        e = malloc(src->n * sizeof(*e));
        if (e == NULL) {
            return RK_ENOMEM;
        }
        memcpy(e, src->e, src->n * sizeof(*e));
    }
    free(dst->e);
    dst->e = e;
    dst->n = src->n;
    dst->cap = src->n;
    return 0;
}

/*
 * Whether a has a counter greater than b's (*a_more) and b one greater than
 * a's (*b_more), over the union of their ids.
 */
static void vclock_dominance(const struct vclock *a, const struct vclock *b, bool *a_more,
                             bool *b_more)
{
    size_t i = 0, j = 0;

    *a_more = false;
    *b_more = false;
    while (i < a->n || j < b->n) {
        int c = vclock_walk_step(a, i, b, j);
        uint64_t ca = c <= 0 ? a->e[i].counter : 0;
        uint64_t cb = c >= 0 ? b->e[j].counter : 0;
        *a_more = *a_more || ca > cb;
        *b_more = *b_more || cb > ca;
        i += c <= 0;
        j += c >= 0;
    }
}

enum vclock_order vclock_compare(const struct vclock *a, const struct vclock *b)
{
    static const enum vclock_order order[2][2] = {
        {VCLOCK_EQUAL, VCLOCK_BEFORE},
        {VCLOCK_AFTER, VCLOCK_CONCURRENT},
    };
    bool a_more, b_more;

    vclock_dominance(a, b, &a_more, &b_more);
    return order[a_more][b_more];
}

bool vclock_descends(const struct vclock *a, const struct vclock *b)
{
    bool a_more, b_more;

    vclock_dominance(a, b, &a_more, &b_more);
    return !b_more;
}

uint64_t vclock_get(const struct vclock *vc, const char *id)
{
    size_t len, at;
    bool found;

    if (id == NULL) {
        return 0;
    }
    len = strnlen(id, RING_NAME_MAX + 1);
    at = vclock_find(vc, id, len, &found);
    return found ? vc->e[at].counter : 0;
}

/*
 * Of two entries for one id, the one merge keeps: the larger counter, and on
 * equal counters the larger stamp.  Choosing by the pair (counter, stamp),
 * a total order, is what makes merge commutative and associative even for
 * clocks whose stamps disagree with their counters (a decoded clock is not
 * trusted to be consistent).
 */
static const struct vclock_entry *vclock_entry_later(const struct vclock_entry *x,
                                                     const struct vclock_entry *y)
{
    if (x->counter != y->counter) {
        return x->counter > y->counter ? x : y;
    }
    return x->stamp >= y->stamp ? x : y;
}

/* Write the pointwise maximum of a and b to out (a->n + b->n entries); returns its size. */
static size_t vclock_merge_into(struct vclock_entry *out, const struct vclock *a,
                                const struct vclock *b)
{
    size_t i = 0, j = 0, k = 0;

    while (i < a->n || j < b->n) {
        int c = vclock_walk_step(a, i, b, j);
        if (c < 0) {
            out[k] = a->e[i];
        } else if (c > 0) {
            out[k] = b->e[j];
        } else {
            out[k] = *vclock_entry_later(&a->e[i], &b->e[j]);
        }
        k++;
        i += c <= 0;
        j += c >= 0;
    }
    return k;
}

bool vclock_covers(const struct vclock *a, const struct vclock *b)
{
    size_t i = 0;

    for (size_t j = 0; j < b->n; j++) {
        int c = -1;
        while (i < a->n && (c = vclock_entry_cmp(&a->e[i], &b->e[j])) < 0) {
            i++;
        }
        if (i == a->n || c != 0 || vclock_entry_later(&a->e[i], &b->e[j]) != &a->e[i]) {
            return false; /* b's id missing from a, or b's entry the later one */
        }
    }
    return true;
}

/* How many ids a and b hold together. */
static size_t vclock_union_count(const struct vclock *a, const struct vclock *b)
{
    size_t i = 0, j = 0, k = 0;

    while (i < a->n || j < b->n) {
        int c = vclock_walk_step(a, i, b, j);
        i += c <= 0;
        j += c >= 0;
        k++;
    }
    return k;
}

/*
 * Merge src into dst's own array, which holds n entries (the union's
 * size): walked from the largest id down, so an entry of dst is read
 * before its slot is written (the slot being filled is never below the dst
 * entry still to read).
 */
static void vclock_merge_in_place(struct vclock *dst, const struct vclock *src, size_t n)
{
    size_t i = dst->n, j = src->n, k = n;

    while (j > 0) {
        int c = i == 0 ? -1 : vclock_entry_cmp(&dst->e[i - 1], &src->e[j - 1]);
        if (c < 0) {
            dst->e[--k] = src->e[--j]; /* src's id is the largest left */
        } else if (c > 0) {
            dst->e[--k] = dst->e[--i];
        } else {
            dst->e[--k] = *vclock_entry_later(&dst->e[i - 1], &src->e[j - 1]);
            i--;
            j--;
        }
    }
    /* dst's entries below i are where they were: with src used up, k == i */
    dst->n = (uint32_t)n;
}

int vclock_merge(struct vclock *dst, const struct vclock *src)
{
    size_t n = vclock_union_count(dst, src);
    struct vclock_entry *out;

    if (n > VCLOCK_ENTRIES_MAX) {
        return RK_ECLOCKFULL;
    }
    if (n == 0) {
        return 0;
    }
    if (n <= dst->cap && dst->e != NULL) {
        vclock_merge_in_place(dst, src, n); /* the common case: the same ids, no allocation */
        return 0;
    }
    out = malloc(n * sizeof(*out));
    if (out == NULL) {
        return RK_ENOMEM;
    }
    (void)vclock_merge_into(out, dst, src);
    free(dst->e);
    dst->e = out;
    dst->n = (uint32_t)n;
    dst->cap = n;
    return 0;
}

/* Make room for one more entry, doubling the capacity. */
static int vclock_grow(struct vclock *vc)
{
    size_t want = vc->n + 1u < VCLOCK_CAP_MIN ? VCLOCK_CAP_MIN : vc->n + 1u;

    return grow_array(&vc->e, &vc->cap, want, sizeof(*vc->e));
}

/* Insert a new entry (id, 1, stamp) at index at, which keeps the id order. */
static int vclock_insert(struct vclock *vc, size_t at, const char *id, size_t len, uint64_t stamp)
{
    struct vclock_entry *e;
    int err;

    if (vc->n >= VCLOCK_ENTRIES_MAX) {
        return RK_ECLOCKFULL;
    }
    err = vclock_grow(vc);
    if (err != 0) {
        return err;
    }
    memmove(&vc->e[at + 1], &vc->e[at], (vc->n - at) * sizeof(*vc->e));
    e = &vc->e[at];
    memcpy(e->id, id, len);
    e->id[len] = '\0';
    e->id_len = (uint8_t)len;
    e->counter = 1;
    e->stamp = stamp;
    vc->n++;
    return 0;
}

int vclock_increment(struct vclock *vc, const char *id, uint64_t stamp)
{
    size_t len, at;
    bool found;

    if (id == NULL) {
        return RK_EINVAL;
    }
    len = strnlen(id, RING_NAME_MAX + 1);
    if (!ring_name_valid(id, len)) {
        return RK_EINVAL;
    }
    at = vclock_find(vc, id, len, &found);
    if (!found) {
        return vclock_insert(vc, at, id, len, stamp);
    }
    if (vc->e[at].counter == UINT64_MAX) {
        return RK_ERANGE;
    }
    vc->e[at].counter++;
    vc->e[at].stamp = stamp;
    return 0;
}

/*
 * Pruning order: oldest stamp first, ties broken by id.  The tie-break
 * makes the choice a function of the clock alone, so replicas that prune
 * the same clock with the same arguments keep the same entries.
 */
static int vclock_cmp_age(const void *pa, const void *pb)
{
    const struct vclock_entry *a = pa, *b = pb;

    if (a->stamp != b->stamp) {
        return a->stamp < b->stamp ? -1 : 1;
    }
    return vclock_entry_cmp(a, b);
}

static int vclock_cmp_id(const void *pa, const void *pb)
{
    return vclock_entry_cmp(pa, pb);
}

/* True when e's last increment is older than now_ms - min_age_ms. */
static bool vclock_entry_old(const struct vclock_entry *e, uint64_t now_ms, uint64_t min_age_ms)
{
    return now_ms >= min_age_ms && hlc_physical(e->stamp) < now_ms - min_age_ms;
}

/*
 * Whether an entry is old enough to drop depends only on its stamp, so in
 * age order the droppable entries are a prefix.  Counting them first lets
 * the common case, a clock over `keep` whose entries are all recent, return
 * without touching the array.  Otherwise sorting by age in place, dropping
 * the prefix and sorting the rest back by id needs no allocation, so
 * pruning cannot fail; a clock holds at most VCLOCK_ENTRIES_MAX entries, so
 * the two sorts stay cheap.
 */
size_t vclock_prune(struct vclock *vc, size_t keep, uint64_t now_ms, uint64_t min_age_ms)
{
    size_t old = 0, drop;

    if (vc->n <= keep) {
        return 0;
    }
    for (size_t i = 0; i < vc->n; i++) {
        old += vclock_entry_old(&vc->e[i], now_ms, min_age_ms);
    }
    drop = old < vc->n - keep ? old : vc->n - keep;
    if (drop == 0) {
        return 0;
    }
    qsort(vc->e, vc->n, sizeof(*vc->e), vclock_cmp_age);
    memmove(vc->e, vc->e + drop, (vc->n - drop) * sizeof(*vc->e));
    vc->n -= (uint32_t)drop;
    qsort(vc->e, vc->n, sizeof(*vc->e), vclock_cmp_id);
    return drop;
}

size_t vclock_encoded_size(const struct vclock *vc)
{
    size_t size = 2;

    for (size_t i = 0; i < vc->n; i++) {
        size += 1 + vc->e[i].id_len + VCLOCK_ENTRY_TAIL_BYTES;
    }
    return size;
}

size_t vclock_encode(const struct vclock *vc, uint8_t *out)
{
    uint8_t *p = out;

    *p++ = (uint8_t)(vc->n >> 8);
    *p++ = (uint8_t)vc->n;
    for (size_t i = 0; i < vc->n; i++) {
        const struct vclock_entry *e = &vc->e[i];
        *p++ = e->id_len;
        memcpy(p, e->id, e->id_len);
        p += e->id_len;
        p = bytes_put_be64(p, e->counter);
        p = bytes_put_be64(p, e->stamp);
    }
    return (size_t)(p - out);
}

/*
 * Decode the entry at buf[*pos..len) into e and advance *pos.  prev is the
 * entry before it (NULL for the first), which e's id must follow.  The id
 * is checked before it is copied, so a length byte up to 255 never
 * overruns e->id.
 */
static int vclock_decode_entry(const uint8_t *buf, size_t len, size_t *pos, struct vclock_entry *e,
                               const struct vclock_entry *prev)
{
    size_t p = *pos;
    size_t id_len;

    if (len - p < 1) {
        return RK_ESYNTAX;
    }
    id_len = buf[p++];
    if (len - p < id_len + VCLOCK_ENTRY_TAIL_BYTES ||
        !ring_name_valid((const char *)&buf[p], id_len)) {
        return RK_ESYNTAX;
    }
    memcpy(e->id, &buf[p], id_len);
    e->id[id_len] = '\0';
    e->id_len = (uint8_t)id_len;
    p += id_len;
    e->counter = bytes_get_be64(&buf[p]);
    e->stamp = bytes_get_be64(&buf[p + 8]);
    if (e->counter == 0 || (prev != NULL && vclock_entry_cmp(prev, e) >= 0)) {
        return RK_ESYNTAX;
    }
    *pos = p + VCLOCK_ENTRY_TAIL_BYTES;
    return 0;
}

/* A clock's entry count, checked against its bound and the bytes left. */
static int vclock_decode_count(const uint8_t *buf, size_t len, size_t *n)
{
    if (len < 2) {
        return RK_ESYNTAX;
    }
    *n = (size_t)buf[0] << 8 | buf[1];
    if (*n > VCLOCK_ENTRIES_MAX) {
        return RK_ETOOBIG;
    }
    return *n > (len - 2) / VCLOCK_ENTRY_MIN_BYTES ? RK_ESYNTAX : 0;
}

int vclock_check(const uint8_t *buf, size_t len, size_t *used)
{
    struct vclock_entry e[2]; /* the entry read and the one before it */
    size_t n = 0, pos = 2;
    int err = vclock_decode_count(buf, len, &n);

    if (err != 0) {
        return err;
    }
    for (size_t i = 0; i < n && err == 0; i++) {
        err = vclock_decode_entry(buf, len, &pos, &e[i % 2], i > 0 ? &e[(i - 1) % 2] : NULL);
    }
    if (err == 0) {
        *used = pos;
    }
    return err;
}

int vclock_decode_view(const uint8_t *buf, size_t len, size_t *used, struct vclock *vc,
                       struct vclock_entry *room, size_t room_n, size_t *took)
{
    size_t n, pos = 2;
    int err;

    *took = 0;
    if ((err = vclock_decode_count(buf, len, &n)) != 0) {
        return err;
    }
    if (n > room_n) {
        return vclock_decode(buf, len, used, vc); /* past the room: an owned array */
    }
    for (size_t i = 0; i < n; i++) {
        err = vclock_decode_entry(buf, len, &pos, &room[i], i > 0 ? &room[i - 1] : NULL);
        if (err != 0) {
            return err;
        }
    }
    vclock_deinit(vc);
    vc->e = n > 0 ? room : NULL;
    vc->n = (uint32_t)n;
    vc->cap = 0; /* not owned: vclock_view_release() forgets it */
    *took = n;
    *used = pos;
    return 0;
}

void vclock_view_release(struct vclock *vc)
{
    if (vc->cap == 0) {
        vclock_init(vc); /* entries in the caller's room */
    } else {
        vclock_deinit(vc);
    }
}

int vclock_decode(const uint8_t *buf, size_t len, size_t *used, struct vclock *vc)
{
    struct vclock_entry *e = NULL;
    size_t n, pos = 2;
    int err;

    vclock_deinit(vc);
    if ((err = vclock_decode_count(buf, len, &n)) != 0) {
        return err;
    }
    if (n > 0) {
        e = malloc(n * sizeof(*e));
        if (e == NULL) {
            return RK_ENOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        err = vclock_decode_entry(buf, len, &pos, &e[i], i > 0 ? &e[i - 1] : NULL);
        if (err != 0) {
            goto out_free;
        }
    }
    vc->e = e;
    vc->n = (uint32_t)n;
    vc->cap = n;
    *used = pos;
    return 0;

out_free:
    free(e);
    return err;
}
