/*
 * reaper.c - tombstone collection checked with the other replicas and
 * with every member's hints (reaper.h).
 *
 * A batch goes through five phases, each started when the last one's
 * answers are all in (rp->left counts what is outstanding, with one extra
 * held while a phase is being started, so an answer that comes at once
 * cannot end it early):
 *   1. ask: coord_inspect() per key, every replica read at once;
 *   2. judge (reaper_inspected()): the verdict per key from the replicas'
 *      answers; a replica lacking the tombstone is sent it (REPLICA_WRITE),
 *      and the batch waits for those answers too;
 *   3. hints: for each key the first replica may collect, this node's own
 *      hints are read and every other member of the ring is asked
 *      (MSG_OP_HINTS_HELD);
 *   4. reap: each other replica of a key still passing is asked to delete
 *      its copy (MSG_OP_REPLICA_REAP);
 *   5. delete: one STORE_OP_DELETE_IF per key every replica deleted,
 *      submitted together, so they share the writer's transaction.
 */
#include "reaper.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "error.h"
#include "log.h"
#include "msg.h"
#include "msg_kv.h"
#include "record.h"
#include "vclock.h"

/* Why a key stays, in rising order of weight: a key's verdict is its heaviest reason. */
enum reaper_verdict {
    REAPER_COLLECT,
    REAPER_DEFERRED,
    REAPER_CHANGED,
    REAPER_MISSING,
    REAPER_UNANSWERED,
    REAPER_HINTS,
    REAPER_LIVE,
};

enum reaper_phase { REAPER_ASKING, REAPER_HINTING, REAPER_REAPING, REAPER_DELETING };

struct reaper_job {
    struct reaper *rp;
    const struct reaper_key *key;
    enum reaper_verdict verdict;
    struct vclock ours; /* the local record's context */
    bool decoded;       /* ours is valid */
    /* phase 4: the other replicas and the records they answered, copied */
    size_t n_others;
    char others[RING_RF_MAX][RING_NAME_MAX + 1];
    uint8_t *records[RING_RF_MAX];
    size_t record_lens[RING_RF_MAX];
    struct store_op op; /* phase 5 */
};

/* One request to a member: what its answer decides. */
enum reaper_call_kind { REAPER_CALL_GIVE, REAPER_CALL_HINTS, REAPER_CALL_REAP };

struct reaper_call {
    struct reaper_job *j;
    enum reaper_call_kind kind;
};

/* A REPLICA_REAP served: the delete in the store, then the answer. */
struct reaper_served {
    struct reaper *rp;
    struct store_op op;
    reaper_served_fn done;
    void *ctx;
    uint8_t bytes[]; /* key, then record */
};

struct reaper {
    struct coord *co;
    struct store *store;
    struct coord_hooks hooks;
    char self[RING_NAME_MAX + 1];
    struct reaper_job jobs[REAPER_BATCH_MAX];
    size_t n;
    unsigned left;
    enum reaper_phase phase;
    bool busy, stopped;
    size_t collected;
    reaper_done_fn done;
    void *ctx;
    struct reaper_stats stats;
};

int reaper_create(struct reaper **out, struct coord *co, struct store *store,
                  const struct coord_hooks *hooks, const char *self)
{
    struct reaper *rp = calloc(1, sizeof(*rp));

    *out = NULL;
    if (rp == NULL) {
        return RK_ENOMEM;
    }
    rp->co = co;
    rp->store = store;
    rp->hooks = *hooks;
    snprintf(rp->self, sizeof(rp->self), "%s", self);
    for (size_t i = 0; i < REAPER_BATCH_MAX; i++) {
        rp->jobs[i].rp = rp;
        vclock_init(&rp->jobs[i].ours);
    }
    *out = rp;
    return 0;
}

static void reaper_job_clear(struct reaper_job *j)
{
    for (size_t i = 0; i < j->n_others; i++) {
        free(j->records[i]);
        j->records[i] = NULL;
    }
    j->n_others = 0;
}

void reaper_destroy(struct reaper *rp)
{
    if (rp == NULL) {
        return;
    }
    for (size_t i = 0; i < REAPER_BATCH_MAX; i++) {
        reaper_job_clear(&rp->jobs[i]);
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

/* --- hints --------------------------------------------------------------------------- */

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

bool reaper_hint_held(struct store *store, const uint8_t *key, size_t len)
{
    struct store_stats st;
    struct coord_targets *t;
    bool held = false;
    int rc;

    if (store_hint_queued(store, key, len)) {
        return true; /* taken, and about to be stored */
    }
    store_get_stats(store, &st);
    if (st.hints == 0) {
        return false;
    }
    if ((t = calloc(1, sizeof(*t))) == NULL) {
        return true;
    }
    rc = store_hint_targets(store, coord_collect_target, t);
    held = rc != 0; /* more targets than looked at, or the read failed: cannot tell */
    for (size_t i = 0; !held && i < t->n; i++) {
        uint64_t count = 0;
        held = reaper_hints_for_key(store, t->id[i], key, len, REAPER_HINT_SCAN_MAX, &count) != 0 ||
               count > 0;
    }
    free(t);
    return held;
}

/* --- the batch ------------------------------------------------------------------------- */

/* The batch is over: report it, unless stopped. */
static void reaper_finish(struct reaper *rp)
{
    size_t collected = rp->collected;

    for (size_t i = 0; i < rp->n; i++) {
        reaper_job_clear(&rp->jobs[i]);
    }
    rp->busy = false;
    if (!rp->stopped) {
        rp->done(rp->ctx, collected);
    }
}

/* One answer or completion of the current phase is in. */
static void reaper_phase_step(struct reaper *rp);

static void reaper_keep(struct reaper_job *j, enum reaper_verdict v)
{
    j->verdict = v > j->verdict ? v : j->verdict;
}

/* The verdict is final: count it. */
static void reaper_count(struct reaper *rp, const struct reaper_job *j)
{
    rp->stats.kept_unanswered += j->verdict == REAPER_UNANSWERED;
    rp->stats.kept_live += j->verdict == REAPER_LIVE;
    rp->stats.kept_hints += j->verdict == REAPER_HINTS;
    rp->stats.kept_missing += j->verdict == REAPER_MISSING;
    rp->stats.kept_changed += j->verdict == REAPER_CHANGED;
    rp->stats.deferred += j->verdict == REAPER_DEFERRED;
}

static void reaper_answered(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct reaper_call *call = dctx;
    struct reaper_job *j = call->j;
    struct msg_kv_answer a;
    bool ok = result == 0 && msg_kv_answer_decode(body, len, &a) == 0 && a.status == MSG_KV_OK;

    switch (call->kind) {
    case REAPER_CALL_GIVE:
        break; /* the key waits for a later round either way */
    case REAPER_CALL_HINTS:
        reaper_keep(j, !ok ? REAPER_UNANSWERED : a.flag ? REAPER_HINTS : REAPER_COLLECT);
        break;
    case REAPER_CALL_REAP:
        reaper_keep(j, !ok ? REAPER_UNANSWERED : !a.flag ? REAPER_CHANGED : REAPER_COLLECT);
        break;
    }
    free(call);
    reaper_phase_step(j->rp);
}

/* Ask member id op with body for job j; counted in rp->left when sent. */
static void reaper_send(struct reaper_job *j, const char *id, uint32_t op,
                        enum reaper_call_kind kind, const struct buf *body)
{
    struct reaper *rp = j->rp;
    struct reaper_call *call = malloc(sizeof(*call));

    if (call != NULL) {
        *call = (struct reaper_call){.j = j, .kind = kind};
        rp->left++;
        if (rp->hooks.ask(rp->hooks.ctx, id, op, buf_data(body), body->len, reaper_answered,
                          call) == 0) {
            return;
        }
        rp->left--;
        free(call);
    }
    if (kind != REAPER_CALL_GIVE) {
        reaper_keep(j, REAPER_UNANSWERED);
    }
}

/* Send replica id this node's record of j's key, to merge as a read repair does. */
static void reaper_give(struct reaper_job *j, const char *id)
{
    struct msg_replica_write m = {.key = j->key->key,
                                  .key_len = j->key->key_len,
                                  .record = j->key->record,
                                  .record_len = j->key->record_len};
    struct buf body;

    buf_init(&body, 0);
    if (msg_replica_write_encode(&m, &body) == 0) {
        j->rp->stats.given++;
        reaper_send(j, id, MSG_OP_REPLICA_WRITE, REAPER_CALL_GIVE, &body);
    }
    buf_free(&body);
}

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

/* Phase 5: delete every key every other replica deleted, in one submission. */
static void reaper_delete(struct reaper *rp)
{
    struct store_op *ops[REAPER_BATCH_MAX];
    size_t n = 0;

    for (size_t i = 0; i < rp->n; i++) {
        struct reaper_job *j = &rp->jobs[i];
        if (j->verdict != REAPER_COLLECT || rp->stopped) {
            if (j->decoded && j->verdict != REAPER_COLLECT) {
                reaper_count(rp, j);
            }
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
}

/* Phase 3: no member may hold a hint of a key still passing. */
static void reaper_ask_hints(struct reaper *rp)
{
    const struct ring *ring = rp->hooks.ring(rp->hooks.ctx);

    for (size_t i = 0; i < rp->n && !rp->stopped; i++) {
        struct reaper_job *j = &rp->jobs[i];
        struct msg_replica_read m = {.key = j->key->key, .key_len = j->key->key_len};
        struct buf body;
        if (j->verdict != REAPER_COLLECT) {
            continue;
        }
        if (ring == NULL) {
            reaper_keep(j, REAPER_UNANSWERED);
            continue;
        }
        if (reaper_hint_held(rp->store, j->key->key, j->key->key_len)) {
            reaper_keep(j, REAPER_HINTS);
            continue;
        }
        buf_init(&body, 0);
        if (msg_replica_read_encode(&m, &body) != 0) {
            reaper_keep(j, REAPER_UNANSWERED);
        }
        for (uint32_t k = 0; j->verdict == REAPER_COLLECT && k < ring_member_count(ring); k++) {
            const char *id = ring_member_id(ring, k);
            if (strcmp(id, rp->self) != 0) {
                reaper_send(j, id, MSG_OP_HINTS_HELD, REAPER_CALL_HINTS, &body);
            }
        }
        buf_free(&body);
    }
}

/* Phase 4: each other replica deletes its copy, if it is still the one it answered. */
static void reaper_ask_reap(struct reaper *rp)
{
    for (size_t i = 0; i < rp->n && !rp->stopped; i++) {
        struct reaper_job *j = &rp->jobs[i];
        for (size_t k = 0; j->verdict == REAPER_COLLECT && k < j->n_others; k++) {
            struct msg_replica_write m = {.key = j->key->key,
                                          .key_len = j->key->key_len,
                                          .record = j->records[k],
                                          .record_len = j->record_lens[k]};
            struct buf body;
            buf_init(&body, 0);
            if (msg_replica_write_encode(&m, &body) == 0) {
                reaper_send(j, j->others[k], MSG_OP_REPLICA_REAP, REAPER_CALL_REAP, &body);
            } else {
                reaper_keep(j, REAPER_UNANSWERED);
            }
            buf_free(&body);
        }
    }
}

static void reaper_phase_step(struct reaper *rp)
{
    if (--rp->left > 0) {
        return;
    }
    rp->left = 1; /* held while the next phase starts */
    switch (rp->phase) {
    case REAPER_ASKING:
        rp->phase = REAPER_HINTING;
        reaper_ask_hints(rp);
        break;
    case REAPER_HINTING:
        rp->phase = REAPER_REAPING;
        reaper_ask_reap(rp);
        break;
    case REAPER_REAPING:
        rp->phase = REAPER_DELETING;
        reaper_delete(rp);
        break;
    case REAPER_DELETING:
        rp->left = 0;
        reaper_finish(rp);
        return;
    }
    reaper_phase_step(rp);
}

/*
 * What replica view v holds, against this node's copy: no record
 * (REAPER_MISSING), no answer, a record of tombstones only (and values
 * expired by this node's wall clock) ours descends (REAPER_COLLECT), or
 * anything else (REAPER_LIVE).  *lacks: v is dead and does not descend
 * ours (no record, or tombstones without some of ours); *covers: v is dead
 * and descends ours.
 */
static enum reaper_verdict reaper_judge_view(const struct reaper_job *j, const struct coord_view *v,
                                             bool *lacks, bool *covers)
{
    struct record r;
    struct vclock theirs;
    enum reaper_verdict verdict = REAPER_LIVE;

    *lacks = v->status == RK_ENOTFOUND;
    *covers = false;
    if (v->status == RK_ENOTFOUND) {
        return REAPER_MISSING;
    }
    if (v->status != 0) {
        return REAPER_UNANSWERED;
    }
    record_init(&r);
    vclock_init(&theirs);
    if (record_decode(v->record, v->record_len, &r) == 0 && record_all_dead(&r, clock_wall_ms()) &&
        record_context(&r, &theirs) == 0) {
        *covers = vclock_descends(&theirs, &j->ours);
        *lacks = !*covers;
        verdict = vclock_descends(&j->ours, &theirs) ? REAPER_COLLECT : REAPER_LIVE;
    }
    vclock_deinit(&theirs);
    record_deinit(&r);
    return verdict;
}

/* Keep a copy of other replica v's record for phase 4. */
static void reaper_keep_other(struct reaper_job *j, const struct coord_view *v)
{
    size_t k = j->n_others;
    uint8_t *copy = k < RING_RF_MAX ? malloc(v->record_len ? v->record_len : 1) : NULL;

    if (copy == NULL) {
        reaper_keep(j, REAPER_UNANSWERED);
        return;
    }
    memcpy(copy, v->record, v->record_len);
    snprintf(j->others[k], sizeof(j->others[k]), "%s", v->id);
    j->records[k] = copy;
    j->record_lens[k] = v->record_len;
    j->n_others++;
}

/* Phase 2 for one key: coord_inspect()'s answer. */
static void reaper_inspected(void *ctx, const struct coord_view *views, size_t n)
{
    struct reaper_job *j = ctx;
    struct reaper *rp = j->rp;
    const struct coord_view *first = NULL;
    bool first_here, replica = false, covered = true;

    for (size_t i = 0; i < n; i++) {
        first = first == NULL && views[i].role == PREFLIST_PRIMARY ? &views[i] : first;
        replica = replica || strcmp(views[i].id, rp->self) == 0;
    }
    first_here = first != NULL && strcmp(first->id, rp->self) == 0;
    j->verdict = REAPER_COLLECT;
    for (size_t i = 0; i < n; i++) {
        bool lacks, covers;
        enum reaper_verdict v;
        if (strcmp(views[i].id, rp->self) == 0) {
            continue; /* the delete compares the local copy itself */
        }
        v = reaper_judge_view(j, &views[i], &lacks, &covers);
        covered = covered && covers;
        /*
         * A replica without this tombstone is given it: by the first
         * replica to any replica whose copy keeps the key (one with an
         * older tombstone goes as it is), by any other node to the first
         * alone (which then gives it on and collects it everywhere).
         */
        if (lacks && !rp->stopped && (first_here ? v != REAPER_COLLECT : &views[i] == first)) {
            reaper_give(j, views[i].id);
        }
        if (v == REAPER_COLLECT && first_here) {
            reaper_keep_other(j, &views[i]);
        }
        reaper_keep(j, v);
    }
    if (!replica) {
        /*
         * No longer a replica of the key (the ring changed): this copy goes
         * once every replica holds a tombstone that descends it, so that
         * it is of no use any more.
         */
        j->verdict = covered                        ? REAPER_COLLECT
                     : j->verdict == REAPER_COLLECT ? REAPER_DEFERRED
                                                    : j->verdict;
    } else if (first == NULL || (!first_here && j->verdict == REAPER_COLLECT)) {
        j->verdict = REAPER_DEFERRED;
    }
    reaper_phase_step(rp);
}

/* Phase 1 for one key: decode the local record and ask its replicas. */
static void reaper_ask(struct reaper *rp, struct reaper_job *j)
{
    struct record r;

    j->verdict = REAPER_UNANSWERED;
    j->n_others = 0;
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
    }
}

int reaper_check(struct reaper *rp, const struct reaper_key *keys, size_t n, reaper_done_fn done,
                 void *ctx)
{
    if (n < 1 || n > REAPER_BATCH_MAX || rp->busy) {
        return RK_EINVAL;
    }
    rp->busy = true;
    rp->phase = REAPER_ASKING;
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

/* --- serving MSG_OP_REPLICA_REAP --------------------------------------------------------- */

static void reaper_served_done(struct store_op *op, void *ctx)
{
    struct reaper_served *s = ctx;
    struct msg_kv_answer a = {.status = msg_kv_status_from_rk(op->result)};

    a.flag = op->result == 0 && op->changed;
    s->rp->stats.reaped += a.flag;
    s->done(s->ctx, &a);
    free(s);
}

/*
 * Whether an encoded record holds tombstones only (values expired by this
 * node's wall clock count as dead): a record asked to be deleted that this
 * node would still serve a value of is kept, whatever the asking node's
 * clock said.
 */
static bool reaper_record_dead(const uint8_t *rec, size_t len)
{
    struct record r;
    bool dead;

    record_init(&r);
    dead = record_decode(rec, len, &r) == 0 && r.n > 0 && record_all_dead(&r, clock_wall_ms());
    record_deinit(&r);
    return dead;
}

int reaper_serve_reap(struct reaper *rp, const uint8_t *body, size_t len, reaper_served_fn done,
                      void *ctx)
{
    struct msg_replica_write m;
    struct reaper_served *s;
    struct msg_kv_answer a = {.status = MSG_KV_OK};
    int rc = msg_replica_write_decode(body, len, &m);

    if (rc != 0) {
        return rc == RK_ETOOBIG ? RK_ETOOBIG : RK_ESYNTAX;
    }
    if (m.hint[0] != '\0') {
        return RK_ESYNTAX;
    }
    if (rp->stopped || !reaper_record_dead(m.record, m.record_len) ||
        reaper_hint_held(rp->store, m.key, m.key_len)) {
        done(ctx, &a); /* kept: flag false */
        return 0;
    }
    if ((s = malloc(sizeof(*s) + m.key_len + m.record_len + 1)) == NULL) {
        return RK_ENOMEM;
    }
    s->rp = rp;
    s->done = done;
    s->ctx = ctx;
    memcpy(s->bytes, m.key, m.key_len);
    memcpy(s->bytes + m.key_len, m.record, m.record_len);
    store_op_init(&s->op, STORE_OP_DELETE_IF);
    s->op.key = s->bytes;
    s->op.key_len = m.key_len;
    s->op.value = s->bytes + m.key_len;
    s->op.value_len = m.record_len;
    s->op.done = reaper_served_done;
    s->op.ctx = s;
    rc = store_submit(rp->store, &s->op);
    if (rc != 0) {
        free(s);
    }
    return rc;
}

int reaper_serve_hints(struct reaper *rp, const uint8_t *body, size_t len, struct buf *out)
{
    struct msg_replica_read m;
    struct msg_kv_answer a = {.status = MSG_KV_OK};
    int rc = msg_replica_read_decode(body, len, &m);

    if (rc != 0) {
        return rc == RK_ETOOBIG ? RK_ETOOBIG : RK_ESYNTAX;
    }
    a.flag = reaper_hint_held(rp->store, m.key, m.key_len);
    return msg_kv_answer_encode(&a, out);
}
