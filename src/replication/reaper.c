/*
 * reaper.c - tombstone collection checked with the other replicas
 * (reaper.h).
 *
 * A batch goes through three phases, each started when the last one's
 * answers are all in (rp->left counts what is outstanding, with one extra
 * held while a phase is being started, so an answer that comes at once
 * cannot end it early):
 *   1. ask: coord_inspect() per key, every replica read at once;
 *   2. judge (inspected()): the verdict per key, from the replicas'
 *      answers and this node's hints;
 *   3. delete: one STORE_OP_DELETE_IF per key that passed, submitted
 *      together, so they share the writer's transaction.
 */
#include "reaper.h"

#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "record.h"
#include "vclock.h"

/* Why a key stays, in rising order of weight: a key's verdict is its heaviest view's. */
enum reaper_verdict {
    REAPER_COLLECT,
    REAPER_UNANSWERED,
    REAPER_HINTS,
    REAPER_LIVE,
};

struct reaper_job {
    struct reaper *rp;
    const struct reaper_key *key;
    enum reaper_verdict verdict;
    struct vclock ours; /* the local record's context */
    bool decoded;       /* ours is valid */
    struct store_op op; /* phase 3 */
};

struct reaper {
    struct coord *co;
    struct store *store;
    char self[RING_NAME_MAX + 1];
    struct reaper_job jobs[REAPER_BATCH_MAX];
    size_t n;
    unsigned left;
    bool busy, stopped, deleting;
    size_t collected;
    reaper_done_fn done;
    void *ctx;
    struct reaper_stats stats;
};

int reaper_create(struct reaper **out, struct coord *co, struct store *store, const char *self)
{
    struct reaper *rp = calloc(1, sizeof(*rp));

    *out = NULL;
    if (rp == NULL) {
        return RK_ENOMEM;
    }
    rp->co = co;
    rp->store = store;
    snprintf(rp->self, sizeof(rp->self), "%s", self);
    for (size_t i = 0; i < REAPER_BATCH_MAX; i++) {
        rp->jobs[i].rp = rp;
        vclock_init(&rp->jobs[i].ours);
    }
    *out = rp;
    return 0;
}

void reaper_destroy(struct reaper *rp)
{
    if (rp == NULL) {
        return;
    }
    for (size_t i = 0; i < REAPER_BATCH_MAX; i++) {
        vclock_deinit(&rp->jobs[i].ours);
    }
    free(rp);
}

void reaper_stop(struct reaper *rp)
{
    if (rp != NULL) {
        rp->stopped = true;
    }
}

void reaper_get_stats(const struct reaper *rp, struct reaper_stats *st)
{
    *st = rp->stats;
}

struct hint_count {
    const uint8_t *key;
    size_t len;
    uint64_t n;
};

static int hint_count_visit(void *ctx, const struct store_hint *h)
{
    struct hint_count *hc = ctx;

    hc->n += h->key_len == hc->len && (hc->len == 0 || memcmp(h->key, hc->key, hc->len) == 0);
    return 0;
}

int reaper_hints_for_key(struct store *store, const char *target, const uint8_t *key, size_t len,
                         size_t max_scan, uint64_t *count)
{
    struct hint_count hc = {.key = key, .len = len};
    struct store_cursor cur;
    int rc;

    store_cursor_init(&cur);
    rc = store_hint_scan(store, target, &cur, max_scan, hint_count_visit, &hc);
    *count = hc.n;
    if (rc == 0 && !cur.done) {
        rc = RK_ETOOBIG;
    }
    return rc;
}

/* The batch is over: report it, unless stopped. */
static void reaper_finish(struct reaper *rp)
{
    size_t collected = rp->collected;

    rp->busy = false;
    if (!rp->stopped) {
        rp->done(rp->ctx, collected);
    }
}

/* One answer or completion of the current phase is in. */
static void reaper_phase_step(struct reaper *rp);

static void reaper_deleted(struct store_op *op, void *ctx)
{
    struct reaper_job *j = ctx;
    struct reaper *rp = j->rp;

    if (op->result == 0 && op->changed) {
        rp->collected++;
        rp->stats.collected++;
    } else if (op->result == 0) {
        rp->stats.kept_changed++;
    } else {
        LOG(LOG_WARN, "tombstone_collect_failed", "error=\"%s\"", rk_strerror(op->result));
    }
    reaper_phase_step(rp);
}

/* Phase 3: delete every key that passed, in one submission. */
static void reaper_delete(struct reaper *rp)
{
    struct store_op *ops[REAPER_BATCH_MAX];
    size_t n = 0;

    rp->deleting = true;
    for (size_t i = 0; i < rp->n && !rp->stopped; i++) {
        struct reaper_job *j = &rp->jobs[i];
        if (j->verdict != REAPER_COLLECT) {
            continue;
        }
        store_op_init(&j->op, STORE_OP_DELETE_IF);
        j->op.key = j->key->key;
        j->op.key_len = j->key->key_len;
        j->op.value = j->key->record;
        j->op.value_len = j->key->record_len;
        j->op.done = reaper_deleted;
        j->op.ctx = j;
        ops[n++] = &j->op;
    }
    if (n > 0 && store_submit_list(rp->store, ops, n) == 0) {
        rp->left += (unsigned)n;
    }
    reaper_phase_step(rp);
}

static void reaper_phase_step(struct reaper *rp)
{
    if (--rp->left > 0) {
        return;
    }
    if (!rp->deleting) {
        rp->left = 1; /* held while phase 3 starts */
        reaper_delete(rp);
        return;
    }
    reaper_finish(rp);
}

/*
 * Does replica view v let this copy go?  Only no record, or tombstones (and
 * values expired by this node's wall clock) ours has seen.
 */
static enum reaper_verdict reaper_judge_view(const struct reaper_job *j, const struct coord_view *v)
{
    struct record r;
    struct vclock theirs;
    enum reaper_verdict verdict = REAPER_LIVE;

    if (v->status == RK_ENOTFOUND) {
        return REAPER_COLLECT;
    }
    if (v->status != 0) {
        return REAPER_UNANSWERED;
    }
    record_init(&r);
    vclock_init(&theirs);
    if (record_decode(v->record, v->record_len, &r) == 0 && record_all_dead(&r, clock_wall_ms()) &&
        record_context(&r, &theirs) == 0 && vclock_descends(&j->ours, &theirs)) {
        verdict = REAPER_COLLECT;
    }
    vclock_deinit(&theirs);
    record_deinit(&r);
    return verdict;
}

/* Does this node hold a hint of the key for replica id (or too many hints to tell)? */
static bool reaper_hint_held(struct reaper *rp, const struct reaper_key *k, const char *id)
{
    uint64_t count = 0;

    return reaper_hints_for_key(rp->store, id, k->key, k->key_len, REAPER_HINT_SCAN_MAX, &count) !=
               0 ||
           count > 0;
}

/* Phase 2 for one key: coord_inspect()'s answer. */
static void reaper_inspected(void *ctx, const struct coord_view *views, size_t n)
{
    struct reaper_job *j = ctx;
    struct reaper *rp = j->rp;
    struct store_stats st;

    store_get_stats(rp->store, &st);
    j->verdict = REAPER_COLLECT;
    for (size_t i = 0; i < n; i++) {
        enum reaper_verdict v;
        if (strcmp(views[i].id, rp->self) == 0) {
            continue; /* the delete compares the local copy itself */
        }
        v = reaper_judge_view(j, &views[i]);
        if (v == REAPER_COLLECT && st.hints > 0 && reaper_hint_held(rp, j->key, views[i].id)) {
            v = REAPER_HINTS;
        }
        j->verdict = v > j->verdict ? v : j->verdict;
    }
    rp->stats.kept_unanswered += j->verdict == REAPER_UNANSWERED;
    rp->stats.kept_live += j->verdict == REAPER_LIVE;
    rp->stats.kept_hints += j->verdict == REAPER_HINTS;
    reaper_phase_step(rp);
}

/* Phase 1 for one key: decode the local record and ask its replicas. */
static void reaper_ask(struct reaper *rp, struct reaper_job *j)
{
    struct record r;

    j->verdict = REAPER_UNANSWERED;
    record_init(&r);
    j->decoded = record_decode(j->key->record, j->key->record_len, &r) == 0 &&
                 record_all_dead(&r, clock_wall_ms()) && record_context(&r, &j->ours) == 0;
    record_deinit(&r);
    if (!j->decoded) {
        j->verdict = REAPER_LIVE;
        rp->stats.kept_live++;
        return;
    }
    rp->left++;
    if (coord_inspect(rp->co, j->key->key, j->key->key_len, reaper_inspected, j) != 0) {
        rp->left--; /* no ring yet, or no memory: kept */
        rp->stats.kept_unanswered++;
    }
}

int reaper_check(struct reaper *rp, const struct reaper_key *keys, size_t n, reaper_done_fn done,
                 void *ctx)
{
    if (n < 1 || n > REAPER_BATCH_MAX || rp->busy) {
        return RK_EINVAL;
    }
    rp->busy = true;
    rp->deleting = false;
    rp->collected = 0;
    rp->done = done;
    rp->ctx = ctx;
    rp->n = n;
    rp->left = 1; /* held while phase 1 starts */
    for (size_t i = 0; i < n; i++) {
        rp->jobs[i].key = &keys[i];
        rp->stats.checked++;
        reaper_ask(rp, &rp->jobs[i]);
    }
    reaper_phase_step(rp);
    return 0;
}
