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
 * When the predicate says no, the step is skipped and asked again a period
 * later.
 */
#include "collect.h"

#include <stdlib.h>

#include "error.h"
#include "log.h"

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
    void *ctx;
    ev_timer timer;
    struct store_cursor cursor;
    struct store_op op;
    bool busy;    /* op is in the store */
    bool stopped; /* collect_stop() was called */
    uint64_t collected, passes, pass_collected;
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

static void collect_done(struct store_op *op, void *ctx)
{
    struct collect *c = ctx;

    c->busy = false;
    if (op->result != 0) {
        LOG(LOG_WARN, "tombstone_collect_failed", "error=\"%s\"", rk_strerror(op->result));
        collect_arm(c, collect_period_s(c));
        return;
    }
    c->collected += op->count;
    c->pass_collected += op->count;
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
    store_cursor_init(&c->cursor);
    collect_arm(c, collect_period_s(c));
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
        collect_arm(c, collect_period_s(c));
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
                   uint64_t grace_ms, collect_allowed_fn allowed, void *ctx)
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
