/*
 * request.c - the outstanding-request table of one connection (request.h).
 *
 * Every way out of the table goes through request_take(): the entry is
 * copied and removed (the last entry moves into its slot) before its
 * callback runs, which is what makes "exactly once" hold whatever the
 * callback does to the table.
 */
#include "request.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

/* Entries allocated at the first request of a connection. */
#define REQUEST_INITIAL_CAP 8

void request_table_init(struct request_table *t, size_t max)
{
    assert(max >= 1 && "request_table_init: max must be at least 1");
    memset(t, 0, sizeof(*t));
    t->max = max;
    t->next_id = 1;
}

void request_table_deinit(struct request_table *t)
{
    assert(t->n == 0 && "request_table_deinit: requests still outstanding");
    free(t->v);
    free(t->at);
    free(t->expired);
    t->v = NULL;
    t->at = NULL;
    t->expired = NULL;
    t->cap = t->at_mask = 0;
}

/* Set or clear id's bit of the timed-out window (a set one needs the window: none, none kept). */
static void request_expired_mark(struct request_table *t, uint64_t id, bool on)
{
    size_t bit = (size_t)(id % REQUEST_EXPIRED_WINDOW);

    if (t->expired == NULL && on) {
        t->expired = calloc(REQUEST_EXPIRED_WINDOW / 8, 1);
    }
    if (t->expired == NULL) {
        return; /* out of memory: its late answer counts as unknown */
    }
    if (on) {
        t->expired[bit / 8] |= (uint8_t)(1u << (bit % 8));
    } else {
        t->expired[bit / 8] &= (uint8_t) ~(1u << (bit % 8));
    }
}

/*
 * The index slot where id's probe starts.  Ids are consecutive, and the
 * outstanding ones would fill one run of consecutive slots if they were
 * their own homes: a deletion (request_unslot()) walks the run to its end,
 * so the oldest of 300 outstanding answers took 300 steps.  A Fibonacci
 * hash scatters them, and runs stay a few slots long at half load.
 */
static size_t request_home(const struct request_table *t, uint64_t id)
{
    return (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & t->at_mask;
}

/* The slot of id in the index, or the empty slot that ends its probe. */
static size_t request_slot(const struct request_table *t, uint64_t id)
{
    size_t i = request_home(t, id);

    while (t->at[i] != 0 && t->v[t->at[i] - 1].id != id) {
        i = (i + 1) & t->at_mask;
    }
    return i;
}

/* Empty slot i, moving up the entries whose probe passed it (linear probing's deletion). */
static void request_unslot(struct request_table *t, size_t i)
{
    for (size_t j = (i + 1) & t->at_mask; t->at[j] != 0; j = (j + 1) & t->at_mask) {
        size_t home = request_home(t, t->v[t->at[j] - 1].id);
        /* j's entry may fill i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            t->at[i] = t->at[j];
            i = j;
        }
    }
    t->at[i] = 0;
}

/* Index every entry anew in a table of at least twice cap slots: RK_ENOMEM, the old kept. */
static int request_reindex(struct request_table *t)
{
    size_t slots = 16;
    uint32_t *at;

    while (slots < 2 * t->cap) {
        slots *= 2;
    }
    if (slots == t->at_mask + 1 && t->at != NULL) {
        return 0;
    }
    if ((at = calloc(slots, sizeof(*at))) == NULL) {
        return RK_ENOMEM;
    }
    free(t->at);
    t->at = at;
    t->at_mask = slots - 1;
    for (size_t i = 0; i < t->n; i++) {
        t->at[request_slot(t, t->v[i].id)] = (uint32_t)i + 1;
    }
    return 0;
}

/* Room for one more entry, indexed: RK_ETOOBIG at max, RK_ENOMEM. */
static int request_reserve(struct request_table *t)
{
    size_t need = t->n + 1;
    int rc;

    if (t->n >= t->max) {
        return RK_ETOOBIG;
    }
    rc = grow_array_max(&t->v, &t->cap, need < REQUEST_INITIAL_CAP ? REQUEST_INITIAL_CAP : need,
                        t->max, sizeof(*t->v));
    return rc != 0 ? rc : request_reindex(t);
}

int request_add(struct request_table *t, uint32_t op, uint64_t now_us, uint64_t timeout_us,
                request_done_fn done, void *ctx, uint64_t *id)
{
    struct request_entry *e;
    int rc = request_reserve(t);

    if (rc != 0) {
        return rc;
    }
    e = &t->v[t->n];
    e->id = t->next_id++;
    request_expired_mark(t, e->id, false); /* the bit last held id - REQUEST_EXPIRED_WINDOW's */
    t->at[request_slot(t, e->id)] = (uint32_t)++t->n;
    e->op = op;
    e->sent_us = now_us;
    e->deadline_us = timeout_us > UINT64_MAX - now_us ? UINT64_MAX : now_us + timeout_us;
    e->done = done;
    e->ctx = ctx;
    *id = e->id;
    return 0;
}

static size_t request_index(const struct request_table *t, uint64_t id)
{
    uint32_t at = t->n > 0 ? t->at[request_slot(t, id)] : 0;

    return at != 0 ? at - 1 : t->n;
}

const struct request_entry *request_find(const struct request_table *t, uint64_t id)
{
    size_t i = request_index(t, id);

    return i < t->n ? &t->v[i] : NULL;
}

/* Remove entry i, then run its callback: the entry is gone before anything can reach it. */
static void request_take(struct request_table *t, size_t i, int result,
                         const struct request_reply *reply, uint64_t now_us)
{
    struct request_entry e = t->v[i];

    request_unslot(t, request_slot(t, e.id));
    if (i != --t->n) {
        t->v[i] = t->v[t->n]; /* the last entry moves into i: its slot follows */
        t->at[request_slot(t, t->v[i].id)] = (uint32_t)i + 1;
    }
    e.done(e.ctx, result, reply, now_us > e.sent_us ? now_us - e.sent_us : 0);
}

/* Whether id timed out within the window, its bit cleared: a second late copy is unknown. */
static bool request_was_expired(struct request_table *t, uint64_t id)
{
    size_t bit = (size_t)(id % REQUEST_EXPIRED_WINDOW);
    bool was;

    if (t->expired == NULL || id == 0 || id >= t->next_id ||
        t->next_id - id > REQUEST_EXPIRED_WINDOW) {
        return false;
    }
    was = (t->expired[bit / 8] >> (bit % 8)) & 1u;
    request_expired_mark(t, id, false);
    return was;
}

enum request_outcome request_complete(struct request_table *t, uint64_t id, uint64_t now_us,
                                      const struct request_reply *reply)
{
    size_t i = request_index(t, id);

    if (i < t->n) {
        request_take(t, i, 0, reply, now_us);
        return REQUEST_DELIVERED;
    }
    if (request_was_expired(t, id)) {
        t->late++;
        return REQUEST_LATE;
    }
    t->unknown++;
    return REQUEST_UNKNOWN;
}

int request_fail(struct request_table *t, uint64_t id, int err, uint64_t now_us)
{
    size_t i = request_index(t, id);

    if (i == t->n) {
        return RK_ENOTFOUND;
    }
    request_take(t, i, err, NULL, now_us);
    return 0;
}

size_t request_expire(struct request_table *t, uint64_t now_us)
{
    size_t count = 0;
    size_t i = 0;

    /* a callback may add or end entries: after each one, scan again from the start */
    while (i < t->n) {
        if (t->v[i].deadline_us > now_us) {
            i++;
            continue;
        }
        request_expired_mark(t, t->v[i].id, true);
        request_take(t, i, RK_ETIMEOUT, NULL, now_us);
        count++;
        i = 0;
    }
    return count;
}

size_t request_fail_all(struct request_table *t, int err, uint64_t now_us)
{
    size_t count = 0;

    /* entries a callback adds meanwhile are failed too: the loop runs until the table is empty */
    while (t->n > 0) {
        request_take(t, t->n - 1, err, NULL, now_us);
        count++;
    }
    return count;
}

bool request_next_deadline(const struct request_table *t, uint64_t *deadline_us)
{
    if (t->n == 0) {
        return false;
    }
    *deadline_us = t->v[0].deadline_us;
    for (size_t i = 1; i < t->n; i++) {
        if (t->v[i].deadline_us < *deadline_us) {
            *deadline_us = t->v[i].deadline_us;
        }
    }
    return true;
}
