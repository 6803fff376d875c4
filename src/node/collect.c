/*
 * collect.c - local tombstone collection (collect.h).
 *
 * One step in flight at a time: a STORE_OP_COLLECT over the whole circle
 * from the collector's cursor, looking at COLLECT_STEP_KEYS keys, completed
 * by callback on the loop.  The next step follows COLLECT_STEP_GAP_S later,
 * so a collection pass shares the writer with client writes instead of
 * holding it; when the cursor reaches the end of the ring the pass is over
 * and the next one starts a period later: a quarter of the grace, between
 * COLLECT_PERIOD_MIN_S and COLLECT_PERIOD_MAX_S, so a tombstone is collected
 * within about grace + grace / 4 of its delete (for the default 10 days, an
 * hour after its grace) and an idle node does not rescan its keys often.
 * When the predicate says no, a step with a reaper reads its keys instead
 * and hands the tombstones past their grace to the reaper (collect.h);
 * without one it is skipped and asked again a period later.  A read step
 * stops early once it holds REAPER_BATCH_MAX candidates, and the next one
 * resumes after the last key it read.
 */
#include "collect.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "hlc.h"
#include "log.h"
#include "record.h"

/* Keys one step looks at: about a millisecond of decoding in the writer. */
#define COLLECT_STEP_KEYS 1024
/* Pause between the steps of a pass. */
#define COLLECT_STEP_GAP_S 0.01
/* Bounds of the period between passes. */
#define COLLECT_PERIOD_MIN_S 1.0
#define COLLECT_PERIOD_MAX_S 3600.0

struct collect {
    struct ev_loop *loop;
    struct store *store;
    uint64_t grace_ms;
    collect_allowed_fn allowed;
    struct reaper *reaper;
    void *ctx;
    ev_timer timer;
    struct store_cursor cursor;
    struct store_op op;
    bool busy;    /* op is in the store, or a batch with the reaper */
    bool stopped; /* collect_stop() was called */
    uint64_t collected, passes, pass_collected;
    uint64_t tombstones, pass_tombstones; /* left by the last whole pass; by this one so far */
    bool counted;                         /* a whole pass has set tombstones */
    /* a read step's candidates: each key and record in one allocation of raw[i] */
    struct reaper_key keys[REAPER_BATCH_MAX];
    uint8_t *raw[REAPER_BATCH_MAX];
    size_t n_keys;
};

static double collect_period_s(const struct collect *c)
{
    double s = (double)c->grace_ms / 4000.0;

    return s < COLLECT_PERIOD_MIN_S ? COLLECT_PERIOD_MIN_S
                                    : (s > COLLECT_PERIOD_MAX_S ? COLLECT_PERIOD_MAX_S : s);
}

static void collect_arm(struct collect *c, double after_s)
{
    if (c->stopped) {
        return;
    }
    ev_timer_stop(c->loop, &c->timer);
    ev_timer_set(&c->timer, after_s, 0.);
    ev_timer_start(c->loop, &c->timer);
}

/* Wall-clock ms, as the store stamps versions (CLOCK_REALTIME). */
static uint64_t collect_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A step ended, having deleted `deleted` tombstones and left `kept`: the next step, or pass. */
static void collect_step_end(struct collect *c, uint64_t deleted, uint64_t kept)
{
    c->collected += deleted;
    c->pass_collected += deleted;
    c->pass_tombstones += kept;
    if (!c->counted) {
        c->tombstones = c->pass_tombstones;
    }
    if (!c->cursor.done) {
        collect_arm(c, COLLECT_STEP_GAP_S);
        return;
    }
    c->passes++;
    if (c->pass_collected > 0) {
        LOG(LOG_INFO, "tombstones_collected", "count=%llu total=%llu",
            (unsigned long long)c->pass_collected, (unsigned long long)c->collected);
    }
    c->pass_collected = 0;
    c->tombstones = c->pass_tombstones;
    c->counted = true;
    c->pass_tombstones = 0;
    store_cursor_init(&c->cursor);
    collect_arm(c, collect_period_s(c));
}

static void collect_done(struct store_op *op, void *ctx)
{
    struct collect *c = ctx;

    c->busy = false;
    if (op->result != 0) {
        LOG(LOG_WARN, "tombstone_collect_failed", "error=\"%s\"", rk_strerror(op->result));
        collect_arm(c, collect_period_s(c));
        return;
    }
    collect_step_end(c, op->count, op->kept);
}

static void collect_free_keys(struct collect *c)
{
    for (size_t i = 0; i < c->n_keys; i++) {
        free(c->raw[i]);
        c->raw[i] = NULL;
    }
    c->n_keys = 0;
}

/* The reaper's batch is done: the candidates it did not delete stay, as tombstones. */
static void collect_reaped(void *ctx, size_t collected)
{
    struct collect *c = ctx;
    size_t kept = c->n_keys - collected;

    c->busy = false;
    collect_free_keys(c);
    collect_step_end(c, collected, kept);
}

/* Keep a copy of a candidate: its key and record, in one allocation. */
static int collect_keep(struct collect *c, const struct store_item *it)
{
    uint8_t *p = malloc(it->key_len + it->record_len + 1);

    if (p == NULL) {
        return RK_ENOMEM;
    }
    memcpy(p, it->key, it->key_len);
    memcpy(p + it->key_len, it->record, it->record_len);
    c->raw[c->n_keys] = p;
    c->keys[c->n_keys] = (struct reaper_key){
        .key = p, .key_len = it->key_len, .record = p + it->key_len, .record_len = it->record_len};
    c->n_keys++;
    return 0;
}

/*
 * store_scan()'s callback of a read step: count the records of tombstones
 * only, keep those past their grace as candidates; stop (1) once the batch
 * is full.  A single live value is told by record_peek_at() without decoding;
 * expired values count as tombstones.
 */
static int collect_visit(void *ctx, const struct store_item *it)
{
    struct collect *c = ctx;
    struct record r;
    size_t n = 0;
    bool tomb = false, past = false;
    const uint8_t *v;
    size_t vlen;
    uint64_t now = collect_wall_ms(), since;

    if (record_peek_at(it->record, it->record_len, now, &n, &tomb, &v, &vlen) != 0 ||
        (n == 1 && !tomb)) {
        return 0;
    }
    record_init(&r);
    if (record_decode(it->record, it->record_len, &r) == 0 && r.n > 0 && record_all_dead(&r, now)) {
        /* dead since its newest write, or its latest expiry: collected like a tombstone */
        since = hlc_physical(record_max_hlc(&r));
        since = record_max_expiry(&r) > since ? record_max_expiry(&r) : since;
        past = since + c->grace_ms < now;
        c->pass_tombstones += !past;
    }
    record_deinit(&r);
    if (past && collect_keep(c, it) != 0) {
        c->pass_tombstones++; /* no memory: left for a later pass */
    }
    return c->n_keys >= REAPER_BATCH_MAX ? 1 : 0;
}

/* A step of the replicated way: read up to a step's keys, hand the candidates to the reaper. */
static void collect_read_step(struct collect *c)
{
    int rc = store_scan(c->store, 0, 0, &c->cursor, COLLECT_STEP_KEYS, 0, collect_visit, c);

    if (rc < 0) {
        LOG(LOG_WARN, "tombstone_collect_failed", "error=\"%s\"", rk_strerror(rc));
        collect_free_keys(c);
        collect_arm(c, collect_period_s(c));
        return;
    }
    if (c->n_keys == 0) {
        collect_step_end(c, 0, 0);
        return;
    }
    c->busy = true;
    if (reaper_check(c->reaper, c->keys, c->n_keys, collect_reaped, c) != 0) {
        collect_reaped(c, 0);
    }
}

/* Submit the next step, when allowed and nothing is in flight. */
static void on_collect_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct collect *c = w->data;
    int rc;

    (void)loop;
    (void)revents;
    if (c->busy || c->stopped) {
        return;
    }
    if (!c->allowed(c->ctx)) {
        if (c->reaper != NULL) {
            collect_read_step(c);
        } else {
            collect_arm(c, collect_period_s(c));
        }
        return;
    }
    store_op_init(&c->op, STORE_OP_COLLECT);
    c->op.start = c->op.end = 0; /* the whole circle */
    c->op.cursor = &c->cursor;
    c->op.limit = COLLECT_STEP_KEYS;
    c->op.grace_ms = c->grace_ms;
    c->op.done = collect_done;
    c->op.ctx = c;
    rc = store_submit(c->store, &c->op);
    if (rc != 0) {
        collect_arm(c, collect_period_s(c));
        return;
    }
    c->busy = true;
}

int collect_create(struct collect **out, struct ev_loop *loop, struct store *store,
                   uint64_t grace_ms, collect_allowed_fn allowed, struct reaper *reaper, void *ctx)
{
    struct collect *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (c == NULL) {
        return RK_ENOMEM;
    }
    c->loop = loop;
    c->store = store;
    c->grace_ms = grace_ms;
    c->allowed = allowed;
    c->reaper = reaper;
    c->ctx = ctx;
    store_cursor_init(&c->cursor);
    ev_timer_init(&c->timer, on_collect_timer, 0., 0.);
    c->timer.data = c;
    *out = c;
    return 0;
}

void collect_start(struct collect *c)
{
    c->stopped = false;
    collect_arm(c, 0.);
}

void collect_stop(struct collect *c)
{
    if (c == NULL) {
        return;
    }
    c->stopped = true;
    ev_timer_stop(c->loop, &c->timer);
}

void collect_destroy(struct collect *c)
{
    if (c != NULL) {
        collect_free_keys(c);
    }
    free(c);
}

uint64_t collect_count(const struct collect *c)
{
    return c != NULL ? c->collected : 0;
}

uint64_t collect_passes(const struct collect *c)
{
    return c != NULL ? c->passes : 0;
}

uint64_t collect_tombstones(const struct collect *c)
{
    return c != NULL ? c->tombstones : 0;
}
