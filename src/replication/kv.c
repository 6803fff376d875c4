/*
 * kv.c - the client port's data operations over the local store (kv.h).
 *
 * Writes queue on one list (next_), an atomic group as consecutive entries
 * whose first carries the group's size, until kv_flush() hands them over.
 * The shuffle test mode keeps a list of deferred events instead: a read,
 * "apply the next queued write (or group)", and "complete an applied
 * write (or group)"; kv_flush() runs them round after round, each round
 * in an order drawn from the seed (xorshift64).
 */
#include "kv.h"

#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "error.h"

/* Operations per store_submit_list() call: the store's default batch_max. */
#define KV_SUBMIT_CHUNK 1024
/* Shuffle mode: rounds of one kv_flush() at most (each round runs what the last one started). */
#define KV_SHUFFLE_ROUNDS 100000

enum kv_event_kind { KV_EV_READ, KV_EV_APPLY, KV_EV_COMPLETE };

struct kv_event {
    enum kv_event_kind kind;
    void *op; /* the kv_read, or the first kv_write of what completes */
};

struct kv {
    struct store *store;                      /* borrowed */
    struct coord *coord;                      /* borrowed; NULL: every key is local */
    struct kv_write *queue_head, *queue_tail; /* writes not yet handed over */
    struct store_op *ops[KV_SUBMIT_CHUNK];    /* a submission being built */
    /* the shuffle test mode */
    uint64_t rng; /* 0: normal mode */
    struct kv_event *events;
    size_t n_events, cap_events;
};

int kv_create(struct kv **out, struct store *store, uint64_t shuffle_seed)
{
    struct kv *kv = calloc(1, sizeof(*kv));

    *out = kv;
    if (kv == NULL) {
        return RK_ENOMEM;
    }
    kv->store = store;
    kv->rng = shuffle_seed;
    return 0;
}

void kv_destroy(struct kv *kv)
{
    if (kv != NULL) {
        free(kv->events);
    }
    free(kv);
}

int kv_read_hold(struct kv *kv)
{
    return store_read_hold(kv->store);
}

void kv_read_release(struct kv *kv)
{
    store_read_release(kv->store);
}

/* --- reads --------------------------------------------------------------------- */

/* store_read()'s callback: complete the read with the borrowed record. */
static int kv_read_found(void *ctx, const uint8_t *record, size_t len)
{
    struct kv_read *r = ctx;

    r->result = 0;
    r->record = record;
    r->record_len = len;
    r->done(r, r->ctx);
    return 0;
}

/* Read now and complete r (inside the read when the key is there). */
static void kv_read_run(struct kv *kv, struct kv_read *r)
{
    int rc = store_read(kv->store, r->key_, r->key_len_, kv_read_found, r);

    if (rc != 0) {
        r->result = rc;
        r->record = NULL;
        r->record_len = 0;
        r->done(r, r->ctx);
    }
}

static int kv_defer(struct kv *kv, enum kv_event_kind kind, void *op);

void kv_set_coord(struct kv *kv, struct coord *co)
{
    kv->coord = co;
}

void kv_local_get(struct kv *kv, struct kv_read *r)
{
    if (kv->rng != 0 && kv_defer(kv, KV_EV_READ, r) == 0) {
        return;
    }
    kv_read_run(kv, r);
}

int kv_get_quorum(struct kv *kv, struct kv_read *r, const void *key, size_t len, unsigned quorum,
                  kv_read_fn done, void *ctx)
{
    r->done = done;
    r->ctx = ctx;
    r->key_ = key;
    r->key_len_ = len;
    r->next_ = NULL;
    r->quorum = quorum;
    r->answered = r->needed = 0;
    if (kv->coord != NULL && coord_get(kv->coord, r)) {
        return 0;
    }
    kv_local_get(kv, r);
    return 0;
}

int kv_get(struct kv *kv, struct kv_read *r, const void *key, size_t len, kv_read_fn done,
           void *ctx)
{
    return kv_get_quorum(kv, r, key, len, 0, done, ctx);
}

/* --- writes -------------------------------------------------------------------- */

/* The store's completion, in the event loop: hand the result to the caller. */
static void kv_write_done(struct store_op *op, void *ctx)
{
    struct kv_write *w = ctx;

    w->result = op->result;
    w->existed = op->existed;
    w->skipped = op->result == 0 && op->skipped;
    w->conflict = op->result == 0 && op->conflict;
    if (op->result == 0) {
        w->old = op->old; /* the caller's now */
        w->old_len = op->old_len;
    } else {
        free(op->old);
    }
    op->old = NULL;
    if (op->skip_written) {
        sibling_deinit(&op->written);
    } /* else the version is the caller's (the coordinator's): it deinits it */
    w->done(w, w->ctx);
}

void kv_write_init(struct kv_write *w, const void *key, size_t len, const void *value,
                   size_t value_len, bool tombstone, const struct vclock *context, kv_done_fn done,
                   void *ctx)
{
    store_op_init(&w->op, STORE_OP_WRITE);
    w->op.skip_written = true; /* the version created is not passed on */
    w->op.key = key;
    w->op.key_len = len;
    w->op.value = value;
    w->op.value_len = value_len;
    w->op.tombstone = tombstone;
    w->op.context = context;
    w->op.done = kv_write_done;
    w->op.ctx = w;
    w->done = done;
    w->ctx = ctx;
    w->result = 0;
    w->existed = false;
    w->skipped = w->conflict = w->read_failed = false;
    w->old = NULL;
    w->old_len = 0;
    w->quorum = 0;
    w->answered = w->needed = 0;
    w->next_ = NULL;
    w->group_ = 0;
}

void kv_write_cond(struct kv_write *w, enum store_cond cond, bool want_old)
{
    w->op.cond = cond;
    w->op.want_old = want_old;
}

void kv_write_expiry(struct kv_write *w, enum store_expiry expiry, uint64_t expire_ms)
{
    w->op.expiry = expiry;
    w->op.expire_ms = expire_ms;
}

static bool kv_write_ok(const struct kv_write *w)
{
    return w->op.key_len <= STORE_KEY_MAX && w->op.value_len <= RECORD_VALUE_MAX;
}

/* Append ws[0..n) to the queue; in the shuffle mode, defer their application. */
static void kv_enqueue(struct kv *kv, struct kv_write *ws, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ws[i].next_ = NULL;
        if (kv->queue_tail != NULL) {
            kv->queue_tail->next_ = &ws[i];
        } else {
            kv->queue_head = &ws[i];
        }
        kv->queue_tail = &ws[i];
    }
    if (kv->rng != 0) {
        (void)kv_defer(kv, KV_EV_APPLY, NULL); /* failing, kv_flush() submits it unshuffled */
    }
}

int kv_write(struct kv *kv, struct kv_write *w, const void *key, size_t len, const void *value,
             size_t value_len, bool tombstone, const struct vclock *context, kv_done_fn done,
             void *ctx)
{
    kv_write_init(w, key, len, value, value_len, tombstone, context, done, ctx);
    return kv_write_start(kv, w);
}

void kv_local_write(struct kv *kv, struct kv_write *w)
{
    kv_enqueue(kv, w, 1);
}

int kv_write_start(struct kv *kv, struct kv_write *w)
{
    if (!kv_write_ok(w)) {
        return RK_ETOOBIG;
    }
    if (kv->coord != NULL && coord_write(kv->coord, w)) {
        return 0;
    }
    kv_enqueue(kv, w, 1);
    return 0;
}

/* Start w on its own: through the coordinator when its key needs the cluster. */
static void kv_start_one(struct kv *kv, struct kv_write *w)
{
    if (!coord_write(kv->coord, w)) {
        kv_enqueue(kv, w, 1);
    }
}

bool kv_write_reads(const struct kv_write *w)
{
    return w->op.cond != STORE_COND_NONE || w->op.want_old ||
           (w->op.tombstone && w->op.context == NULL) || w->op.expiry == STORE_EXPIRY_TOUCH;
}

static void kv_chain_start(struct kv *kv, struct kv_write *ws, size_t n);

/* A write of a chain completed: start the next, then give the caller this one's result. */
static void kv_chain_done(struct kv_write *w, void *ctx)
{
    struct kv *kv = w->chain_kv_;
    size_t left = w->chain_left_;

    (void)ctx;
    w->done = w->chain_done_;
    w->ctx = w->chain_ctx_;
    if (left > 0) {
        kv_chain_start(kv, w + 1, left);
    }
    w->done(w, w->ctx); /* last: it may end the caller's group, and w with it */
}

/* Start ws[0], and ws[1..n) each after the one before it completed. */
static void kv_chain_start(struct kv *kv, struct kv_write *ws, size_t n)
{
    ws[0].chain_kv_ = kv;
    ws[0].chain_left_ = n - 1;
    ws[0].chain_done_ = ws[0].done;
    ws[0].chain_ctx_ = ws[0].ctx;
    ws[0].done = kv_chain_done;
    ws[0].ctx = NULL;
    kv_start_one(kv, &ws[0]);
}

int kv_write_atomic(struct kv *kv, struct kv_write *ws, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!kv_write_ok(&ws[i])) {
            return RK_ETOOBIG;
        }
    }
    if (n == 0) {
        return 0;
    }
    if (kv->coord != NULL && !coord_all_local(kv->coord, ws, n)) {
        /* keys on other replicas: each its own quorum write, no atomicity across them */
        for (size_t i = 0; i < n; i++) {
            if (kv_write_reads(&ws[i])) {
                kv_chain_start(kv, ws, n); /* a decision depends on the writes before it */
                return 0;
            }
        }
        for (size_t i = 0; i < n; i++) {
            kv_start_one(kv, &ws[i]);
        }
        return 0;
    }
    kv_enqueue(kv, ws, n);
    ws[0].group_ = n;
    return 0;
}

/* Complete n writes, linked from w, with rc: a submission the store refused. */
static void kv_fail(struct kv_write *w, size_t n, int rc)
{
    for (size_t i = 0; i < n && w != NULL; i++) {
        struct kv_write *next = w->next_;
        w->result = rc;
        w->done(w, w->ctx);
        w = next;
    }
}

/* Take the first queued write and, when it opens a group, the group: how many. */
static size_t kv_take(struct kv *kv, struct kv_write **first)
{
    struct kv_write *w = kv->queue_head;
    size_t n = w->group_ > 1 ? w->group_ : 1;

    *first = w;
    for (size_t i = 0; i < n; i++) {
        kv->ops[i] = &w->op;
        kv->queue_head = w->next_;
        w = w->next_;
    }
    if (kv->queue_head == NULL) {
        kv->queue_tail = NULL;
    }
    return n;
}

/* Submit the plain writes at the head of the queue, up to a chunk, in one list. */
static void kv_submit_plain(struct kv *kv)
{
    struct kv_write *first = kv->queue_head, *w = first;
    size_t n = 0;
    int rc;

    while (w != NULL && w->group_ <= 1 && n < KV_SUBMIT_CHUNK) {
        kv->ops[n++] = &w->op;
        w = w->next_;
    }
    kv->queue_head = w;
    if (w == NULL) {
        kv->queue_tail = NULL;
    }
    rc = store_queue(kv->store, kv->ops, n, false);
    if (rc != 0) {
        kv_fail(first, n, rc);
    }
}

static void kv_shuffle_flush(struct kv *kv);

bool kv_queued(const struct kv *kv)
{
    return kv->queue_head != NULL || kv->n_events > 0;
}

void kv_flush(struct kv *kv)
{
    if (kv->rng != 0) {
        kv_shuffle_flush(kv);
    }
    /* a refused submission completes at once, and its callbacks may queue more */
    while (kv->queue_head != NULL) {
        struct kv_write *first;
        if (kv->queue_head->group_ <= 1) {
            kv_submit_plain(kv);
            continue;
        }
        size_t n = kv_take(kv, &first);
        int rc = store_queue(kv->store, kv->ops, n, true);
        if (rc != 0) {
            kv_fail(first, n, rc);
        }
    }
    /*
     * A batch that only appends to the log runs here, with what peers' requests queued in this
     * iteration (store_queue()): no hand-off to the writer and back.  Anything else wakes it.
     */
    store_run_ready(kv->store);
}

/* --- the shuffle test mode ------------------------------------------------------ */

static int kv_defer(struct kv *kv, enum kv_event_kind kind, void *op)
{
    if (kv->n_events == kv->cap_events) {
        size_t cap = kv->cap_events ? 2 * kv->cap_events : 64;
        struct kv_event *e = realloc(kv->events, cap * sizeof(*e));
        if (e == NULL) {
            return RK_ENOMEM;
        }
        kv->events = e;
        kv->cap_events = cap;
    }
    kv->events[kv->n_events].kind = kind;
    kv->events[kv->n_events].op = op;
    kv->n_events++;
    return 0;
}

static uint64_t kv_rand(struct kv *kv)
{
    uint64_t x = kv->rng;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    kv->rng = x;
    return x;
}

static void kv_shuffle_complete(struct kv_write *w);

/* Apply the next queued write or group now, and defer its completion. */
static void kv_shuffle_apply(struct kv *kv)
{
    struct kv_write *first;
    size_t n;
    int rc;

    if (kv->queue_head == NULL) {
        return;
    }
    n = kv_take(kv, &first);
    for (size_t i = 0; i < n; i++) {
        kv->ops[i]->done = NULL; /* waited for here: the test mode's synchronous write */
    }
    rc = n > 1 ? store_submit_atomic(kv->store, kv->ops, n) : store_submit(kv->store, kv->ops[0]);
    for (size_t i = 0; i < n; i++) {
        kv->ops[i]->result = rc != 0 ? rc : store_wait(kv->store, kv->ops[i]);
    }
    first->group_ = n;
    if (kv_defer(kv, KV_EV_COMPLETE, first) != 0) {
        kv_shuffle_complete(first);
    }
}

/* Complete an applied write or group, deferred by kv_shuffle_apply(). */
static void kv_shuffle_complete(struct kv_write *w)
{
    size_t n = w->group_ > 1 ? w->group_ : 1;

    for (size_t i = 0; i < n; i++) {
        struct kv_write *next = w->next_;
        kv_write_done(&w->op, w);
        w = next;
    }
}

/* Run the deferred events round after round, each round shuffled, until none is left. */
static void kv_shuffle_flush(struct kv *kv)
{
    for (int round = 0; round < KV_SHUFFLE_ROUNDS && kv->n_events > 0; round++) {
        struct kv_event *ev = kv->events;
        size_t n = kv->n_events;

        kv->events = NULL;
        kv->n_events = kv->cap_events = 0;
        for (size_t i = n; i > 1; i--) {
            size_t j = (size_t)(kv_rand(kv) % i);
            struct kv_event t = ev[i - 1];
            ev[i - 1] = ev[j];
            ev[j] = t;
        }
        for (size_t i = 0; i < n; i++) {
            if (ev[i].kind == KV_EV_READ) {
                /* a snapshot of its own: the caller's done may start reads of its own */
                (void)store_read_hold(kv->store);
                kv_read_run(kv, ev[i].op);
                store_read_release(kv->store);
            } else if (ev[i].kind == KV_EV_APPLY) {
                kv_shuffle_apply(kv);
            } else {
                kv_shuffle_complete(ev[i].op);
            }
        }
        free(ev);
    }
}
