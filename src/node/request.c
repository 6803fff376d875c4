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
    t->v = NULL;
    t->cap = 0;
}

/* Room for one more entry: RK_ETOOBIG at max, RK_ENOMEM. */
static int request_reserve(struct request_table *t)
{
    size_t need = t->n + 1;

    if (t->n >= t->max) {
        return RK_ETOOBIG;
    }
    return grow_array_max(&t->v, &t->cap, need < REQUEST_INITIAL_CAP ? REQUEST_INITIAL_CAP : need,
                          t->max, sizeof(*t->v));
}

int request_add(struct request_table *t, uint32_t op, uint64_t now_us, uint64_t timeout_us,
                request_done_fn done, void *ctx, uint64_t *id)
{
    struct request_entry *e;
    int rc = request_reserve(t);

    if (rc != 0) {
        return rc;
    }
    e = &t->v[t->n++];
    e->id = t->next_id++;
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
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].id == id) {
            return i;
        }
    }
    return t->n;
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

    t->v[i] = t->v[--t->n];
    e.done(e.ctx, result, reply, now_us > e.sent_us ? now_us - e.sent_us : 0);
}

static bool request_was_expired(struct request_table *t, uint64_t id)
{
    for (size_t i = 0; i < REQUEST_EXPIRED_KEEP; i++) {
        if (id != 0 && t->expired[i] == id) {
            t->expired[i] = 0; /* a second late copy is unknown */
            return true;
        }
    }
    return false;
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
        t->expired[t->expired_at] = t->v[i].id;
        t->expired_at = (t->expired_at + 1) % REQUEST_EXPIRED_KEEP;
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
