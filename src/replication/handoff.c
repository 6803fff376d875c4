/*
 * handoff.c - ownership handoff (handoff.h): the arcs this node gains under
 * the target ring, pulled, applied with their checkpoint, verified; the
 * arcs it serves; the leave's completion; the clean-up after a change.
 *
 * Checkpoints (the store's handoff table, opaque to the store):
 *   key    "in" || u64 target digest || u64 start || u64 end   (big-endian)
 *   value  u64 mask (sub-arcs still to stream, bit i = sub-arc i)
 *          u64 keys received, u64 bytes received
 *          the storage key (u64 position || key) of the last record applied
 *          in the sub-arc being streamed (the lowest bit of mask); empty
 *          when none yet
 * Written in the same store transaction as the batch it follows (the last
 * group of the batch, below), deleted when the arc is done.  A checkpoint
 * of a target that is no longer the one planned for is never read again.
 */
#include "handoff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "clock.h"
#include "log.h"
#include "msg.h"
#include "msg_handoff.h"
#include "msg_kv.h"
#include "record.h"

enum in_state {
    IN_PENDING,   /* not yet checked */
    IN_CHECKING,  /* first digest comparison asked */
    IN_QUEUED,    /* differs: waits for a stream slot */
    IN_STREAMING, /* pulling the sub-arcs of mask */
    IN_VERIFYING, /* digest comparison after streaming */
    IN_DONE,
};

static const char *const in_state_names[] = {
    [IN_PENDING] = "pending",     [IN_CHECKING] = "checking",   [IN_QUEUED] = "pending",
    [IN_STREAMING] = "streaming", [IN_VERIFYING] = "verifying", [IN_DONE] = "done",
};

#define HANDOFF_CKPT_KEY_LEN 26
#define HANDOFF_RETRY_MS 1000
/* How often the arcs received from a leaving node are told done again (in_tell()). */
#define HANDOFF_RETELL_MS 5000
#define HANDOFF_OUT_MAX 4096

struct handoff_in {
    struct handoff *h;
    uint64_t start, end;
    char kind[8];
    char sources[RING_RF_MAX][RING_NAME_MAX + 1];
    size_t n_sources;
    unsigned unsupported;           /* bit i: sources[i] does not know handoff (an older node) */
    char source[RING_NAME_MAX + 1]; /* the one asked last */
    enum in_state state;
    bool busy;         /* a request or a store group outstanding */
    bool repair;       /* copied from one surviving replica after a change without handoff */
    bool strict;       /* sources[0] loses the arc: the one source while it knows handoff */
    uint64_t retry_ms; /* not before this (after a failure) */
    uint64_t mask;     /* sub-arcs to stream */
    struct store_cursor cur;
    unsigned rounds; /* verifications that differed */
    bool counting;   /* the check outstanding asks for the source's key count alone */
    uint64_t keys, bytes, keys_total;
    uint64_t started_ms, done_ms;
    uint64_t told_ms; /* when its sources were last told it is done */
    /* a batch being applied */
    uint8_t *body; /* the answer's bytes, copied: items point into it */
    size_t body_cap;
    struct msg_handoff_item *items;
    size_t n_items, applied;
    bool batch_done;
    struct store_op *ops; /* n_items + 1 */
    size_t ops_cap;
    size_t n_ops;             /* of the submission, not yet ended */
    size_t n_group;           /* operations in the submission */
    int phase;                /* apply_submit() */
    struct store_cursor next; /* the cursor once the batch is in */
    bool got_next;
    uint8_t got_next_key[8 + STORE_KEY_MAX];
    size_t got_next_len;
    uint8_t ckpt_key[HANDOFF_CKPT_KEY_LEN];
    struct buf ckpt_val;
    uint64_t batch_bytes;
};

/* An arc served to a pulling node. */
struct handoff_out {
    char peer[RING_NAME_MAX + 1];
    uint64_t target;
    uint64_t keys, bytes;
    uint64_t first_ms, last_ms;
};

/* An arc this node gives while leaving: done once its gainer said so. */
struct handoff_give {
    uint64_t start, end;
    char to[RING_NAME_MAX + 1];
    bool done;
};

struct serve_pull;
struct handoff;

/*
 * A batch's buffers: the answer's bytes, its items, its store operations.
 * Lent to an arc from the pull's answer to the batch's end and kept in a
 * pool between: one set per arc was a fresh 200-400 KiB (page faults) for
 * every arc of a join, which is most arcs' only batch.
 */
struct handoff_bufs {
    uint8_t *body;
    size_t body_cap;
    struct store_op *ops;
    size_t ops_cap;
    struct msg_handoff_item *items;
};
#define HANDOFF_POOL_MAX 64
static void serve_scratch_free(struct handoff *h);

/* A HANDOFF_DONE received: peer holds (start, end] of target. */
struct handoff_told {
    uint64_t target, start, end;
    char peer[RING_NAME_MAX + 1];
};
/* HANDOFF_DONEs remembered at most (an arc of each of 4096 tokens, four gainers each). */
#define HANDOFF_TOLD_MAX 65536

struct handoff {
    struct store *store;
    struct handoff_config cfg;
    struct handoff_hooks hooks;
    struct handoff_stats stats;
    uint64_t planned_ring, planned_target; /* digests the plan is for; 0: none */
    struct handoff_in **in;
    size_t n_in;
    struct handoff_in **rep; /* repairs after a change made without handoff (a removal) */
    size_t n_rep;
    struct handoff_out *out;
    size_t n_out;
    struct handoff_give *give;
    size_t n_give;
    struct handoff_told *told; /* HANDOFF_DONEs received for the target, whatever the plan */
    struct serve_pull *sp;     /* serve_pull()'s scratch, kept */
    struct handoff_bufs pool[HANDOFF_POOL_MAX]; /* batch buffers between batches */
    size_t n_pool;
    struct log_limit retry_log;
    struct msg_handoff_item *sp_items;
    size_t n_told;
    unsigned checks, streams; /* requests outstanding of each kind */
    double allowance;         /* bytes the rate allows now */
    uint64_t allowance_ms;
    uint64_t now_ms;
    bool may_drive;      /* the last tick allowed copying (table whole, target agreed) */
    bool whole;          /* the last tick had the whole member table: repairs may run */
    bool driving, again; /* drive() is running; asked again meanwhile */
    /* clean-up */
    uint64_t agreed_since_ms; /* 0: not agreed */
    uint64_t served_ms;       /* the last pull or digest served: a node still copies from us */
    uint64_t cleaned;         /* the ring digest cleaned for */
    uint64_t cleaned_for;     /* the ring digest the clean-up under way is for */
    bool cleaning;
    struct store_op clean_op;
    struct store_cursor clean_cur;
    uint64_t *clean_arcs; /* pairs (start, end) */
    size_t n_clean, clean_at;
};

static void kick(struct handoff *h);

int handoff_create(struct handoff **out, struct store *store, const struct handoff_config *cfg,
                   const struct handoff_hooks *hooks)
{
    struct handoff *h = calloc(1, sizeof(*h));

    if (h == NULL) {
        return RK_ENOMEM;
    }
    h->store = store;
    h->cfg = *cfg;
    h->hooks = *hooks;
    if (h->cfg.concurrency == 0) {
        h->cfg.concurrency = 1;
    }
    if (h->cfg.batch_bytes == 0) {
        h->cfg.batch_bytes = 256 * 1024;
    }
    *out = h;
    return 0;
}

static void in_free(struct handoff_in *t)
{
    if (t == NULL) {
        return;
    }
    free(t->body);
    free(t->items);
    free(t->ops);
    buf_free(&t->ckpt_val);
    free(t);
}

/* Lend t the pool's last set of batch buffers, when it has none. */
static void bufs_take(struct handoff *h, struct handoff_in *t)
{
    struct handoff_bufs *b;

    if (t->body != NULL || h->n_pool == 0) {
        return;
    }
    b = &h->pool[--h->n_pool];
    t->body = b->body;
    t->body_cap = b->body_cap;
    t->ops = b->ops;
    t->ops_cap = b->ops_cap;
    t->items = b->items;
}

/* t's batch ended: its buffers go back to the pool (when it has room). */
static void bufs_give(struct handoff *h, struct handoff_in *t)
{
    if (t->body == NULL || h->n_pool == HANDOFF_POOL_MAX) {
        return;
    }
    h->pool[h->n_pool++] = (struct handoff_bufs){.body = t->body,
                                                 .body_cap = t->body_cap,
                                                 .ops = t->ops,
                                                 .ops_cap = t->ops_cap,
                                                 .items = t->items};
    t->body = NULL;
    t->body_cap = 0;
    t->ops = NULL;
    t->ops_cap = 0;
    t->items = NULL;
}

/* Drop the plan: transfers whose requests are out are orphaned, freed when they end. */
static void plan_drop(struct handoff *h)
{
    for (size_t i = 0; i < h->n_in; i++) {
        struct handoff_in *t = h->in[i];
        if (t->busy) {
            t->h = NULL; /* the answer frees it */
        } else {
            in_free(t);
        }
    }
    free(h->in);
    h->in = NULL;
    h->n_in = 0;
    free(h->give);
    h->give = NULL;
    h->n_give = 0;
    h->checks = h->streams = 0;
}

void handoff_destroy(struct handoff *h)
{
    if (h == NULL) {
        return;
    }
    plan_drop(h);
    for (size_t i = 0; i < h->n_rep; i++) {
        if (h->rep[i]->busy) {
            h->rep[i]->h = NULL;
        } else {
            in_free(h->rep[i]);
        }
    }
    free(h->rep);
    free(h->out);
    free(h->told);
    serve_scratch_free(h);
    for (size_t i = 0; i < h->n_pool; i++) {
        free(h->pool[i].body);
        free(h->pool[i].ops);
        free(h->pool[i].items);
    }
    free(h->clean_arcs);
    free(h);
}

void handoff_get_stats(const struct handoff *h, struct handoff_stats *st)
{
    *st = h->stats;
}

uint64_t handoff_target(const struct handoff *h)
{
    return h->planned_target;
}

/* --- planning ---------------------------------------------------------------------- */

static bool id_in(const char *id, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(id, list[i]) == 0) {
            return true;
        }
    }
    return false;
}

static void ckpt_key(uint8_t *k, uint64_t target, uint64_t start, uint64_t end)
{
    k[0] = 'i';
    k[1] = 'n';
    bytes_put_be64(k + 2, target);
    bytes_put_be64(k + 10, start);
    bytes_put_be64(k + 18, end);
}

/* Read the arc's checkpoint, if any: resume where it stopped. */
static void in_resume(struct handoff *h, struct handoff_in *t)
{
    uint8_t v[24 + 8 + STORE_KEY_MAX];
    size_t len;

    if (store_table_get(h->store, STORE_TABLE_HANDOFF, t->ckpt_key, sizeof(t->ckpt_key), v,
                        sizeof(v), &len) != 0 ||
        len < 24 || len - 24 > sizeof(t->cur.last)) {
        return;
    }
    t->mask = bytes_get_be64(v);
    t->keys = bytes_get_be64(v + 8);
    t->bytes = bytes_get_be64(v + 16);
    store_cursor_init(&t->cur);
    if (len > 24) {
        memcpy(t->cur.last, v + 24, len - 24);
        t->cur.last_len = len - 24;
        t->cur.started = true;
    }
    if (t->mask != 0) {
        h->stats.resumed++;
        t->state = IN_QUEUED;
        LOG(LOG_INFO, "handoff_resume", "start=%016llx end=%016llx keys=%llu bytes=%llu",
            (unsigned long long)t->start, (unsigned long long)t->end, (unsigned long long)t->keys,
            (unsigned long long)t->bytes);
    }
}

/* A new transfer of mv's arc, pending, appended to *list (n entries). */
static struct handoff_in *in_new(struct handoff *h, struct handoff_in ***list, size_t *n,
                                 const struct ring_move *mv)
{
    struct handoff_in *t = calloc(1, sizeof(*t));
    struct handoff_in **grown;

    if (t == NULL || (grown = realloc(*list, (*n + 1) * sizeof(*grown))) == NULL) {
        free(t);
        return NULL;
    }
    *list = grown;
    t->h = h;
    t->start = mv->start;
    t->end = mv->end;
    t->state = IN_PENDING;
    buf_init(&t->ckpt_val, 0);
    store_cursor_init(&t->cur);
    (*list)[(*n)++] = t;
    return t;
}

/*
 * One transfer of the arc of mv: from the node that loses it, loser (an
 * index into mv->lose), or with no loser (the arc gains a replica without
 * losing one) from the first old replica that is up.
 */
/* Whether a node that loses or gains mv changes its token count between ring and target. */
static bool tokens_changed(const struct ring *ring, const struct ring *target,
                           const struct ring_move *mv)
{
    for (size_t i = 0; i < mv->n_lose + mv->n_gain; i++) {
        const char *id = i < mv->n_lose ? mv->lose[i] : mv->gain[i - mv->n_lose];
        int a = ring_member_find(ring, id), b = ring_member_find(target, id);
        if (a >= 0 && b >= 0 &&
            ring_member_tokens(ring, (uint32_t)a) != ring_member_tokens(target, (uint32_t)b)) {
            return true;
        }
    }
    return false;
}

static int plan_add_in(struct handoff *h, const struct ring *ring, const struct ring *target,
                       const struct ring_move *mv, int loser)
{
    struct handoff_in *t = in_new(h, &h->in, &h->n_in, mv);
    bool lose_left = false;

    if (t == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < mv->n_lose; i++) {
        lose_left |= ring_member_find(target, mv->lose[i]) < 0;
    }
    if (loser >= 0) {
        snprintf(t->sources[t->n_sources++], RING_NAME_MAX + 1, "%s", mv->lose[loser]);
        t->strict = true;
    }
    /* with a loser, the others stand by for one that predates handoff (in_source()) */
    for (size_t i = 0; i < mv->n_old; i++) {
        if (strcmp(mv->old_list[i], h->cfg.self) != 0 &&
            !id_in(mv->old_list[i], mv->lose, mv->n_lose) && t->n_sources < RING_RF_MAX) {
            snprintf(t->sources[t->n_sources++], RING_NAME_MAX + 1, "%s", mv->old_list[i]);
        }
    }
    snprintf(t->kind, sizeof(t->kind), "%s",
             ring_member_find(ring, h->cfg.self) < 0 ? "join"
             : lose_left                             ? "leave"
             : tokens_changed(ring, target, mv)      ? "tokens"
                                                     : "move");
    ckpt_key(t->ckpt_key, ring_digest(target), t->start, t->end);
    if (loser > 0) {
        t->ckpt_key[1] = (uint8_t)('0' + loser); /* "i1", "i2"...: one checkpoint per loser */
    }
    in_resume(h, t);
    return 0;
}

static int plan_add_give(struct handoff *h, const struct ring_move *mv)
{
    for (size_t i = 0; i < mv->n_gain; i++) {
        struct handoff_give *grown = realloc(h->give, (h->n_give + 1) * sizeof(*grown));
        if (grown == NULL) {
            return RK_ENOMEM;
        }
        h->give = grown;
        h->give[h->n_give] = (struct handoff_give){.start = mv->start, .end = mv->end};
        snprintf(h->give[h->n_give].to, sizeof(h->give[h->n_give].to), "%s", mv->gain[i]);
        h->n_give++;
    }
    return 0;
}

/* Whether position p lies on the arc (s, e] (the whole circle when s == e). */
static bool arc_holds(uint64_t s, uint64_t e, uint64_t p)
{
    return s == e || p - s - 1 < e - s;
}

/*
 * Whether the HANDOFF_DONEs of g's gainer under the target cover g's arc:
 * the gainer cut its arcs from its own ring in force, which may differ
 * from ours (a joiner turned normal meanwhile), so its arcs need not be
 * ours; what counts is that every position of ours is on one of them.
 */
static bool give_covered(const struct handoff *h, const struct handoff_give *g)
{
    uint64_t cur = g->start;

    for (size_t steps = 0; steps <= h->n_told; steps++) {
        const struct handoff_told *hit = NULL;
        for (size_t i = 0; i < h->n_told && hit == NULL; i++) {
            const struct handoff_told *t = &h->told[i];
            if (t->target == h->planned_target && strcmp(t->peer, g->to) == 0 &&
                arc_holds(t->start, t->end, cur + 1)) {
                hit = t;
            }
        }
        if (hit == NULL) {
            return false;
        }
        if (hit->start == hit->end || arc_holds(hit->start, hit->end, g->end) ||
            (g->start == g->end && arc_holds(g->start, hit->end, g->start))) {
            return true;
        }
        cur = hit->end;
    }
    return false;
}

/* A new (ring, target) pair: the arcs to receive and, leaving, to give. */
static void plan(struct handoff *h, const struct handoff_view *v)
{
    uint64_t rd = ring_digest(v->ring), td = ring_digest(v->target);
    struct ring_diff d;
    int rc;

    if (rd == h->planned_ring && td == h->planned_target) {
        return;
    }
    plan_drop(h);
    if (td != h->planned_target) {
        size_t k = 0;
        for (size_t i = 0; i < h->n_told; i++) { /* what was told for another target goes */
            if (h->told[i].target == td) {
                h->told[k++] = h->told[i];
            }
        }
        h->n_told = k;
        k = 0;
        for (size_t i = 0; i < h->n_out; i++) { /* what was served for another target goes */
            if (h->out[i].target == td) {
                h->out[k++] = h->out[i];
            }
        }
        h->n_out = k;
    }
    h->planned_ring = rd;
    h->planned_target = td;
    h->agreed_since_ms = 0;
    if (rd == td || ring_member_count(v->ring) == 0 || ring_member_count(v->target) == 0) {
        return;
    }
    rc = ring_diff(v->ring, v->target, h->cfg.rf, &d);
    if (rc != 0) {
        LOG(LOG_ERROR, "handoff_plan_failed", "ring=%016llx target=%016llx error=\"%s\"",
            (unsigned long long)rd, (unsigned long long)td, rk_strerror(rc));
        h->planned_ring = h->planned_target = 0; /* planned again at the next tick */
        return;
    }
    h->stats.changes++;
    h->stats.moved_fraction_ppm = (uint64_t)(ring_len_fraction(d.moved) * 1e6 + 0.5);
    for (size_t i = 0; i < d.n_moves && rc == 0; i++) {
        const struct ring_move *mv = &d.moves[i];
        if (id_in(h->cfg.self, mv->gain, mv->n_gain)) {
            /*
             * From every node that loses the arc, and from no stand-in: an
             * acknowledged write is on w old replicas, and the ones that
             * keep the arc keep their copies, so the losers' copies are the
             * ones to take over.  Another old replica holds only the writes
             * it acknowledged itself: while a loser is down, its arc waits
             * (as Cassandra's consistent range movement does), until it is
             * back or removed (then repairs copy from every replica left).
             */
            for (int j = 0; rc == 0 && j < (int)mv->n_lose; j++) {
                rc = plan_add_in(h, v->ring, v->target, mv, j);
            }
            if (rc == 0 && mv->n_lose == 0) {
                rc = plan_add_in(h, v->ring, v->target, mv, -1);
            }
        } else if (id_in(h->cfg.self, mv->lose, mv->n_lose)) {
            rc = plan_add_give(h, mv);
        }
    }
    ring_diff_free(&d);
    if (rc != 0) {
        plan_drop(h);
        h->planned_ring = h->planned_target = 0;
        return;
    }
    h->stats.arcs_planned += h->n_in;
    LOG(LOG_INFO, "handoff_plan",
        "ring=%016llx target=%016llx receive=%zu give=%zu moved_fraction=%.4f",
        (unsigned long long)rd, (unsigned long long)td, h->n_in, h->n_give,
        (double)h->stats.moved_fraction_ppm / 1e6);
}

/* --- pulling ----------------------------------------------------------------------- */

/* The bounds of sub-arc i of (start, end]: store_arc_digest()'s cut. */
static void sub_arc(uint64_t start, uint64_t end, unsigned i, uint64_t *s, uint64_t *e)
{
    unsigned __int128 len = start == end ? ((unsigned __int128)1 << 64) : (uint64_t)(end - start);

    *s = start + (uint64_t)(len * i / HANDOFF_DIGEST_PARTS);
    *e = start + (uint64_t)(len * (i + 1) / HANDOFF_DIGEST_PARTS);
}

/*
 * The range t streams next: the first run of consecutive sub-arcs of its
 * mask, as one range (an arc the receiver lacks whole is one pull after
 * another over the whole arc, not sixteen); *run gets the run's bits.
 */
static void in_range(const struct handoff_in *t, uint64_t *s, uint64_t *e, uint64_t *run)
{
    unsigned lo = (unsigned)__builtin_ctzll(t->mask), hi = lo;
    uint64_t unused;

    while (hi + 1 < HANDOFF_DIGEST_PARTS && (t->mask >> (hi + 1) & 1) != 0) {
        hi++;
    }
    sub_arc(t->start, t->end, lo, s, &unused);
    sub_arc(t->start, t->end, hi, &unused, e);
    *run = (hi - lo + 1 == 64 ? ~0ull : ((1ull << (hi - lo + 1)) - 1)) << lo;
}

/*
 * The first source of t that is up and knows handoff, or NULL.  A strict
 * transfer takes its first source (the node that loses the arc) or none,
 * waiting while it is down; only when that node predates handoff do the
 * other old replicas stand in (a cluster mixing releases keeps joining).
 */
static const char *in_source(struct handoff *h, struct handoff_in *t)
{
    if (t->strict && (t->unsupported & 1u) == 0) {
        return h->hooks.up(h->hooks.ctx, t->sources[0]) ? t->sources[0] : NULL;
    }
    for (size_t i = 0; i < t->n_sources; i++) {
        if ((t->unsupported >> i & 1) == 0 && h->hooks.up(h->hooks.ctx, t->sources[i])) {
            return t->sources[i];
        }
    }
    return NULL;
}

static void in_done(struct handoff *h, struct handoff_in *t);

static void in_failed(struct handoff_in *t, const char *what, int rc)
{
    struct handoff *h = t->h;
    unsigned all = (1u << t->n_sources) - 1;

    if (rc == RK_EMISMATCH) { /* the source predates handoff: another one, or none */
        for (size_t i = 0; i < t->n_sources; i++) {
            if (strcmp(t->sources[i], t->source) == 0) {
                t->unsupported |= 1u << i;
            }
        }
        if ((t->unsupported & all) == all) {
            /* nobody can send it: the arc comes by writes and read repair, as before handoff */
            h->stats.arcs_unsupported++;
            LOG(LOG_WARN, "handoff_unsupported", "start=%016llx end=%016llx source=%s",
                (unsigned long long)t->start, (unsigned long long)t->end, t->source);
            in_done(h, t);
            return;
        }
        t->retry_ms = 0;
        return;
    }
    h->stats.failures++;
    t->retry_ms = h->now_ms + HANDOFF_RETRY_MS;
    /* one line a second: a source down fails every arc it serves at once */
    LOG_LIMITED(&h->retry_log, LOG_WARN, "handoff_retry",
                "start=%016llx end=%016llx source=%s step=%s error=\"%s\"",
                (unsigned long long)t->start, (unsigned long long)t->end, t->source, what,
                rk_strerror(rc));
}

/* --- checkpoint deletion ------------------------------------------------------------ */

struct ckpt_del {
    struct store_op op;
    uint8_t key[HANDOFF_CKPT_KEY_LEN];
};

static void ckpt_del_done(struct store_op *op, void *ctx)
{
    (void)op;
    free(ctx);
}

/* Best effort: a checkpoint left behind names a target never planned for again. */
static void ckpt_delete(struct handoff *h, const uint8_t *key)
{
    struct ckpt_del *d = calloc(1, sizeof(*d));

    if (d == NULL) {
        return;
    }
    memcpy(d->key, key, sizeof(d->key));
    store_op_init(&d->op, STORE_OP_TABLE_PUT);
    d->op.table = STORE_TABLE_HANDOFF;
    d->op.key = d->key;
    d->op.key_len = sizeof(d->key);
    d->op.value = NULL;
    d->op.done = ckpt_del_done;
    d->op.ctx = d;
    if (store_submit(h->store, &d->op) != 0) {
        free(d);
    }
}

/* --- asking ------------------------------------------------------------------------ */

static void told_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    (void)dctx;
    (void)result;
    (void)body;
    (void)len;
}

/* Tell t's sources it is here (HANDOFF_DONE); best effort, told again while the change lasts. */
static void in_tell(struct handoff *h, struct handoff_in *t)
{
    struct msg_handoff_done m = {.target = h->planned_target,
                                 .start = t->start,
                                 .end = t->end,
                                 .keys = t->keys,
                                 .bytes = t->bytes};
    struct buf body;

    t->told_ms = h->now_ms;
    buf_init(&body, 0);
    if (msg_handoff_done_encode(&m, &body) == 0) {
        for (size_t i = 0; i < t->n_sources; i++) {
            (void)h->hooks.ask(h->hooks.ctx, t->sources[i], MSG_OP_HANDOFF_DONE, buf_data(&body),
                               body.len, told_answer, NULL);
        }
    }
    buf_free(&body);
}

/* t is received and verified: its checkpoint goes, its sources are told. */
static void in_done(struct handoff *h, struct handoff_in *t)
{
    t->state = IN_DONE;
    t->done_ms = h->now_ms;
    h->stats.arcs_done++;
    if (t->keys > 0 || t->mask != 0 || t->cur.started) {
        ckpt_delete(h, t->ckpt_key);
    }
    t->mask = 0;
    if (!t->repair) { /* a repair's source gives nothing up */
        in_tell(h, t);
    }
}

static unsigned popcount64(uint64_t x)
{
    return (unsigned)__builtin_popcountll(x);
}

static void digest_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct handoff_in *t = dctx;
    struct handoff *h = t->h;
    struct msg_handoff_digest_answer a;
    uint8_t mine[HANDOFF_DIGEST_PARTS][32];
    uint64_t keys, diff = 0;
    int rc;

    t->busy = false;
    if (h == NULL) {
        in_free(t);
        return;
    }
    h->checks--;
    if (result != 0) {
        in_failed(t, "digest", result);
        return;
    }
    rc = msg_handoff_digest_answer_decode(body, len, &a);
    if (rc == 0 &&
        (a.status != MSG_KV_OK || a.parts != (t->counting ? 1u : HANDOFF_DIGEST_PARTS))) {
        rc = a.status != MSG_KV_OK ? msg_kv_status_to_rk(a.status) : RK_ESYNTAX;
    }
    if (rc == 0 && t->counting) { /* none here: every sub-arc differs, or none */
        diff = a.keys == 0 ? 0 : ((uint64_t)1 << HANDOFF_DIGEST_PARTS) - 1;
    } else if (rc == 0) {
        rc = store_arc_digest(h->store, t->start, t->end, HANDOFF_DIGEST_PARTS, mine, &keys);
        for (unsigned i = 0; rc == 0 && i < HANDOFF_DIGEST_PARTS; i++) {
            if (memcmp(mine[i], a.digests[i], 32) != 0) {
                diff |= 1ull << i;
            }
        }
    }
    if (rc != 0) {
        in_failed(t, "digest", rc);
        return;
    }
    if (t->state == IN_CHECKING) {
        t->keys_total = a.keys;
        if (diff == 0) {
            h->stats.arcs_same++;
            in_done(h, t);
            kick(h);
            return;
        }
    } else if (diff == 0) {
        in_done(h, t);
        kick(h);
        return;
    } else {
        h->stats.verify_mismatch += popcount64(diff);
        if (++t->rounds > HANDOFF_VERIFY_ROUNDS) {
            /* streamed again and still different: it holds what the source held, and more */
            h->stats.verify_superset += popcount64(diff);
            LOG(LOG_WARN, "handoff_verify_superset", "start=%016llx end=%016llx source=%s parts=%u",
                (unsigned long long)t->start, (unsigned long long)t->end, t->source,
                popcount64(diff));
            in_done(h, t);
            kick(h);
            return;
        }
    }
    t->mask = diff;
    store_cursor_init(&t->cur);
    t->state = IN_QUEUED;
    kick(h);
}

/* A scan's visitor that stops at the first key: is there any? */
static int any_visit(void *ctx, const struct store_item *it)
{
    (void)it;
    *(bool *)ctx = true;
    return 1;
}

/* Ask t's source for its digests of t (checking or verifying). */
static void in_ask_digest(struct handoff *h, struct handoff_in *t)
{
    struct msg_handoff_digest m = {.target = h->planned_target,
                                   .start = t->start,
                                   .end = t->end,
                                   .parts = HANDOFF_DIGEST_PARTS};
    const char *src = in_source(h, t);
    struct store_cursor cur;
    bool any = false;
    struct buf body;
    int rc;

    if (src == NULL) {
        in_failed(t, "source_down", RK_ENOREPLICAS);
        return;
    }
    snprintf(t->source, sizeof(t->source), "%s", src);
    /*
     * A first check of an arc this node holds no key of (a joiner's arcs)
     * can only find that the arc differs, or that both sides are empty:
     * the source's key count tells which, without hashing the arc.
     */
    store_cursor_init(&cur);
    t->counting = t->state == IN_CHECKING &&
                  store_scan(h->store, t->start, t->end, &cur, 1, 0, any_visit, &any) >= 0 && !any;
    if (t->counting) {
        m.parts = 1;
        m.count_only = true;
    }
    buf_init(&body, 0);
    rc = msg_handoff_digest_encode(&m, &body);
    if (rc == 0) {
        t->busy = true;
        h->checks++;
        rc = h->hooks.ask(h->hooks.ctx, src, MSG_OP_HANDOFF_DIGEST, buf_data(&body), body.len,
                          digest_answer, t);
        if (rc != 0) {
            t->busy = false;
            h->checks--;
        }
    }
    buf_free(&body);
    if (rc != 0) {
        in_failed(t, "digest", rc);
    }
}

/* The checkpoint after the batch being applied: mask, counts, cursor. */
static int ckpt_value(struct handoff_in *t, uint64_t mask, const struct store_cursor *cur,
                      struct buf *out)
{
    uint8_t head[24];

    bytes_put_be64(head, mask);
    bytes_put_be64(head + 8, t->keys + t->n_items);
    bytes_put_be64(head + 16, t->bytes + t->batch_bytes);
    buf_clear(out);
    if (buf_append(out, head, sizeof(head)) != 0 ||
        (cur->started && buf_append(out, cur->last, cur->last_len) != 0)) {
        return RK_ENOMEM;
    }
    return 0;
}

/* The batch is in (or failed as a whole): take stock. */
static void batch_end(struct handoff_in *t, int rc)
{
    struct handoff *h = t->h;

    t->busy = false;
    bufs_give(h, t);
    if (rc != 0) {
        in_failed(t, "apply", rc);
        return;
    }
    t->keys += t->n_items;
    t->bytes += t->batch_bytes;
    h->stats.keys_received += t->n_items;
    h->stats.bytes_received += t->batch_bytes;
    h->stats.batches_received++;
    if (t->batch_done) {
        uint64_t s, e, run;
        in_range(t, &s, &e, &run);
        t->mask &= ~run; /* the run of sub-arcs is done */
        store_cursor_init(&t->cur);
        if (t->mask == 0) {
            t->state = IN_VERIFYING;
        }
    }
    kick(h);
}

/* A store error that the same records would meet again: a record refused for good. */
static bool refused_for_good(int rc)
{
    return rc == RK_ETOOBIG || rc == RK_ECLOCKFULL || rc == RK_ESYNTAX;
}

static void apply_submit(struct handoff_in *t, int phase);

/* Every operation of a submission ends here; the last one decides. */
static void apply_done(struct store_op *op, void *ctx)
{
    struct handoff_in *t = ctx;
    int rc = 0;

    (void)op;
    if (--t->n_ops > 0) {
        return;
    }
    if (t->h == NULL) { /* orphaned by a new plan */
        t->busy = false;
        in_free(t);
        return;
    }
    for (size_t i = 0; i < t->n_group && rc == 0; i++) {
        int r = t->ops[i].result;
        if (r != 0 && t->phase == 1 && refused_for_good(r)) {
            t->h->stats.refused++; /* one record this store takes in no order: logged, skipped */
            LOG(LOG_WARN, "handoff_record_refused", "start=%016llx end=%016llx error=\"%s\"",
                (unsigned long long)t->start, (unsigned long long)t->end, rk_strerror(r));
            continue;
        }
        rc = r;
    }
    if (rc != 0 && t->phase == 0 && refused_for_good(rc)) {
        apply_submit(t, 1); /* again record by record, the refused ones skipped */
        return;
    }
    if (rc == 0 && t->phase == 1) {
        apply_submit(t, 2); /* the checkpoint after its records */
        return;
    }
    if (rc == 0) {
        t->cur = t->next;
    }
    batch_end(t, rc);
}

/*
 * Submit the batch.  Phase 0: its records and its checkpoint in one atomic
 * store group.  A batch larger than a group (store_batch_max()), or one a
 * record of which the store refuses for good (over max-siblings, a clock
 * full), goes in two steps instead: phase 1 its records, one by one in
 * order, phase 2 the checkpoint once they are in, so a crash between them
 * re-sends the batch, never skips it.
 */
static void apply_submit(struct handoff_in *t, int phase)
{
    struct handoff *h = t->h;
    size_t n = t->n_items + 1, k = 0;
    struct store_op **list = calloc(n, sizeof(*list));
    int rc = list == NULL ? RK_ENOMEM : 0;

    if (phase == 0 && n > store_batch_max(h->store)) {
        phase = 1;
    }
    t->phase = phase;
    for (size_t i = 0; rc == 0 && phase != 2 && i < t->n_items; i++) {
        store_op_init(&t->ops[k], STORE_OP_APPLY_RECORD);
        t->ops[k].key = t->items[i].key;
        t->ops[k].key_len = t->items[i].key_len;
        t->ops[k].value = t->items[i].record;
        t->ops[k].value_len = t->items[i].record_len;
        list[k] = &t->ops[k];
        k++;
    }
    if (rc == 0 && phase != 1) {
        store_op_init(&t->ops[k], STORE_OP_TABLE_PUT);
        t->ops[k].table = STORE_TABLE_HANDOFF;
        t->ops[k].key = t->ckpt_key;
        t->ops[k].key_len = sizeof(t->ckpt_key);
        t->ops[k].value = buf_data(&t->ckpt_val);
        t->ops[k].value_len = t->ckpt_val.len;
        list[k] = &t->ops[k];
        k++;
    }
    for (size_t i = 0; i < k; i++) {
        t->ops[i].done = apply_done;
        t->ops[i].ctx = t;
    }
    t->n_group = k;
    t->n_ops = k;
    if (rc == 0 && k == 0) {
        free(list);
        apply_submit(t, 2);
        return;
    }
    if (rc == 0) {
        rc = phase == 0 ? store_submit_atomic(h->store, list, k)
                        : store_submit_list(h->store, list, k);
    }
    free(list);
    if (rc != 0) {
        t->n_ops = 0;
        batch_end(t, rc);
    }
}

/* Apply the batch just received, with the checkpoint that follows it. */
static void apply_batch(struct handoff_in *t)
{
    uint64_t mask = t->mask;
    int rc;

    t->next = t->cur;
    if (t->batch_done) {
        uint64_t s, e, run;
        in_range(t, &s, &e, &run);
        mask &= ~run;
        store_cursor_init(&t->next);
    } else if (t->got_next) {
        memcpy(t->next.last, t->got_next_key, t->got_next_len);
        t->next.last_len = t->got_next_len;
        t->next.started = true;
    }
    /* kept from batch to batch: a fresh array of this size cost page faults per batch */
    if (t->n_items + 1 > t->ops_cap) {
        struct store_op *grown = realloc(t->ops, (t->n_items + 1) * sizeof(*grown));
        if (grown != NULL) {
            t->ops = grown;
            t->ops_cap = t->n_items + 1;
        }
    }
    rc = t->ops_cap < t->n_items + 1 ? RK_ENOMEM : ckpt_value(t, mask, &t->next, &t->ckpt_val);
    if (rc != 0) {
        batch_end(t, rc);
        return;
    }
    apply_submit(t, 0);
}

/*
 * Whether storage key k comes after cursor c on an arc starting at s, in
 * the order a scan visits it: by the position's offset from s, then the
 * key's bytes as LMDB orders them.
 */
static bool skey_after(uint64_t s, const uint8_t *k, size_t len, const struct store_cursor *c)
{
    uint64_t ok = bytes_get_be64(k) - s - 1, oc;
    size_t n;
    int cmp;

    if (c->last_len < 8) {
        return true;
    }
    oc = bytes_get_be64(c->last) - s - 1;
    if (ok != oc) {
        return ok > oc;
    }
    n = len < c->last_len ? len : c->last_len;
    cmp = memcmp(k + 8, c->last + 8, n - 8);
    return cmp > 0 || (cmp == 0 && len > c->last_len);
}

static void pull_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct handoff_in *t = dctx;
    struct handoff *h = t->h;
    struct msg_handoff_pull_answer a;
    uint64_t s, e, run;
    int rc;

    if (h == NULL) {
        t->busy = false;
        in_free(t);
        return;
    }
    h->allowance += (double)h->cfg.batch_bytes; /* its charge when asked (in_ask_pull()) */
    bufs_take(h, t);
    if (result != 0) {
        t->busy = false;
        bufs_give(h, t);
        in_failed(t, "pull", result);
        return;
    }
    if (len > t->body_cap) { /* kept from batch to batch, as ops */
        uint8_t *grown = realloc(t->body, len);
        if (grown != NULL) {
            t->body = grown;
            t->body_cap = len;
        }
    }
    if (t->items == NULL) {
        t->items = malloc(MSG_HANDOFF_ITEMS_MAX * sizeof(*t->items));
    }
    if (t->body_cap < len || t->body == NULL || t->items == NULL) {
        t->busy = false;
        bufs_give(h, t);
        in_failed(t, "pull", RK_ENOMEM);
        return;
    }
    memcpy(t->body, body, len);
    rc = msg_handoff_pull_answer_decode(t->body, len, &a, t->items, MSG_HANDOFF_ITEMS_MAX);
    if (rc == 0 && a.status != MSG_KV_OK) {
        rc = msg_kv_status_to_rk(a.status);
    }
    if (rc == 0 && a.has_next && a.next_len > sizeof(t->got_next_key)) {
        rc = RK_ESYNTAX;
    }
    if (rc != 0) {
        t->busy = false;
        bufs_give(h, t);
        in_failed(t, "pull", rc);
        return;
    }
    in_range(t, &s, &e, &run);
    if (!a.done && (!a.has_next || a.next_len < 8 || !arc_holds(s, e, bytes_get_be64(a.next)) ||
                    (t->cur.started && !skey_after(s, a.next, a.next_len, &t->cur)))) {
        /* not done, and the cursor does not move on: asking again at once would spin */
        t->busy = false;
        bufs_give(h, t);
        in_failed(t, "pull_no_progress", RK_ESYNTAX);
        return;
    }
    t->n_items = 0;
    t->batch_done = a.done;
    t->batch_bytes = 0;
    for (size_t i = 0; i < a.n_items; i++) {
        const struct msg_handoff_item *it = &t->items[i];
        if (!arc_holds(s, e, store_position(h->store, it->key, it->key_len))) {
            h->stats.refused++; /* not asked for: a key this node may not replicate */
            LOG_LIMITED(&h->retry_log, LOG_WARN, "handoff_item_outside",
                        "start=%016llx end=%016llx source=%s", (unsigned long long)s,
                        (unsigned long long)e, t->source);
            continue;
        }
        t->items[t->n_items++] = *it;
        t->batch_bytes += it->key_len + it->record_len;
    }
    h->allowance -= (double)t->batch_bytes; /* what it carried, in place of its bound */
    t->got_next = a.has_next;
    if (a.has_next) {
        memcpy(t->got_next_key, a.next, a.next_len);
        t->got_next_len = a.next_len;
    }
    apply_batch(t); /* busy until it ends */
}

/* Pull t's next batch: the first run of sub-arcs of its mask, after its cursor. */
static void in_ask_pull(struct handoff *h, struct handoff_in *t)
{
    const char *src = in_source(h, t);
    struct msg_handoff_pull m = {.target = h->planned_target, .max_bytes = h->cfg.batch_bytes};
    size_t group = store_batch_max(h->store);
    uint64_t run;
    struct buf body;
    int rc;

    if (src == NULL) {
        in_failed(t, "source_down", RK_ENOREPLICAS);
        return;
    }
    snprintf(t->source, sizeof(t->source), "%s", src);
    /* a batch and its checkpoint fit one store group (apply_submit()) */
    group = group > MSG_HANDOFF_ITEMS_MAX ? MSG_HANDOFF_ITEMS_MAX : group - (group > 1);
    m.max_items = (uint32_t)group;
    in_range(t, &m.start, &m.end, &run);
    if (t->cur.started) {
        m.after = t->cur.last;
        m.after_len = t->cur.last_len;
        m.has_after = true;
    }
    buf_init(&body, 0);
    rc = msg_handoff_pull_encode(&m, &body);
    if (rc == 0) {
        /*
         * Charged its bound now, not when it answers: otherwise every arc
         * starts a pull while the allowance is positive, and concurrency
         * batches arrive at once past the rate.
         */
        h->allowance -= (double)h->cfg.batch_bytes;
        t->busy = true;
        rc = h->hooks.ask(h->hooks.ctx, src, MSG_OP_HANDOFF_PULL, buf_data(&body), body.len,
                          pull_answer, t);
        if (rc != 0) {
            t->busy = false;
            h->allowance += (double)h->cfg.batch_bytes;
        }
    }
    buf_free(&body);
    if (rc != 0) {
        in_failed(t, "pull", rc);
    }
}

static void drive_once(struct handoff *h);

/* Start what the bounds allow; again when an answer came while it ran. */
static void drive(struct handoff *h)
{
    if (h->driving) {
        h->again = true;
        return;
    }
    h->driving = true;
    do {
        h->again = false;
        drive_once(h);
    } while (h->again);
    h->driving = false;
}

/* An arc moved on: start the next step now, not at the next tick. */
static void kick(struct handoff *h)
{
    if (h->may_drive || h->whole) {
        drive(h);
    }
}

/* One list's next steps, within the bounds (active: arcs streaming or verifying, all lists). */
static void drive_list(struct handoff *h, struct handoff_in **list, size_t n, unsigned *active)
{
    for (size_t i = 0; i < n; i++) {
        struct handoff_in *t = list[i];

        if (t->busy || t->state == IN_DONE || h->now_ms < t->retry_ms) {
            continue;
        }
        switch (t->state) {
        case IN_PENDING:
        case IN_CHECKING:
            if (h->checks < HANDOFF_CHECKS_MAX) {
                t->state = IN_CHECKING;
                in_ask_digest(h, t);
            }
            break;
        case IN_QUEUED:
            if (*active >= h->cfg.concurrency) {
                break;
            }
            (*active)++;
            t->state = IN_STREAMING;
            if (t->started_ms == 0) {
                t->started_ms = h->now_ms;
            }
            /* fall through */
        case IN_STREAMING:
            if (h->allowance > 0) {
                in_ask_pull(h, t);
            }
            break;
        case IN_VERIFYING:
            in_ask_digest(h, t);
            break;
        case IN_DONE:
            break;
        }
    }
}

static unsigned count_active(struct handoff_in **list, size_t n)
{
    unsigned active = 0;

    for (size_t i = 0; i < n; i++) {
        active += list[i]->state == IN_STREAMING || list[i]->state == IN_VERIFYING;
    }
    return active;
}

static void drive_once(struct handoff *h)
{
    unsigned active = count_active(h->in, h->n_in) + count_active(h->rep, h->n_rep);

    if (h->may_drive) {
        drive_list(h, h->in, h->n_in, &active);
    }
    if (h->whole) {
        drive_list(h, h->rep, h->n_rep, &active);
    }
}

/* --- serving ----------------------------------------------------------------------- */

/* The items of an answer being gathered: their bytes in one buffer, then pointed at. */
struct serve_pull {
    struct buf bytes;
    size_t offs[MSG_HANDOFF_ITEMS_MAX][2]; /* key offset, record offset */
    size_t lens[MSG_HANDOFF_ITEMS_MAX][2];
    size_t n;
    size_t total;  /* key and record bytes gathered */
    size_t budget; /* stop once total reaches it (0: no bound) */
};

static void serve_scratch_free(struct handoff *h)
{
    if (h->sp != NULL) {
        buf_free(&h->sp->bytes);
    }
    free(h->sp);
    free(h->sp_items);
}

static int serve_pull_item(void *ctx, const struct store_item *it)
{
    struct serve_pull *sp = ctx;
    size_t at = sp->bytes.len;

    if (sp->n == MSG_HANDOFF_ITEMS_MAX) {
        return 1;
    }
    if (buf_append(&sp->bytes, it->key, it->key_len) != 0 ||
        buf_append(&sp->bytes, it->record, it->record_len) != 0) {
        return RK_ENOMEM;
    }
    sp->offs[sp->n][0] = at;
    sp->lens[sp->n][0] = it->key_len;
    sp->offs[sp->n][1] = at + it->key_len;
    sp->lens[sp->n][1] = it->record_len;
    sp->total += it->key_len + it->record_len;
    sp->n++;
    /* the scan's bound counts records only: long keys and short records would pass the frame */
    return sp->budget > 0 && sp->total >= sp->budget ? 1 : 0;
}

/* What was served to peer under target: per peer, for `ringkv transfers`. */
static struct handoff_out *out_entry(struct handoff *h, const char *peer, uint64_t target)
{
    struct handoff_out *grown;

    for (size_t i = 0; i < h->n_out; i++) {
        if (h->out[i].target == target && strcmp(h->out[i].peer, peer) == 0) {
            return &h->out[i];
        }
    }
    if (h->n_out == HANDOFF_OUT_MAX ||
        (grown = realloc(h->out, (h->n_out + 1) * sizeof(*grown))) == NULL) {
        return NULL;
    }
    h->out = grown;
    memset(&h->out[h->n_out], 0, sizeof(h->out[0]));
    snprintf(h->out[h->n_out].peer, sizeof(h->out[0].peer), "%s", peer);
    h->out[h->n_out].target = target;
    h->out[h->n_out].first_ms = h->now_ms;
    return &h->out[h->n_out++];
}

static int serve_pull(struct handoff *h, const char *peer, const uint8_t *body, size_t len,
                      size_t answer_max, struct buf *out)
{
    struct msg_handoff_pull m;
    struct msg_handoff_pull_answer a = {.status = MSG_KV_OK};
    struct serve_pull *sp;
    struct store_cursor cur;
    struct msg_handoff_item *items;
    uint64_t budget;
    int rc = msg_handoff_pull_decode(body, len, &m);

    if (rc != 0) {
        return RK_ESYNTAX;
    }
    if (m.has_after && (m.after_len > sizeof(cur.last) || m.after_len < 8)) {
        return RK_ESYNTAX;
    }
    /* kept from pull to pull: 200 KiB allocated and freed per answer cost page faults */
    if (h->sp == NULL && (h->sp = calloc(1, sizeof(*h->sp))) != NULL) {
        buf_init(&h->sp->bytes, 0);
    }
    if (h->sp_items == NULL) {
        h->sp_items = calloc(MSG_HANDOFF_ITEMS_MAX, sizeof(*h->sp_items));
    }
    if (h->sp == NULL || h->sp_items == NULL) {
        return RK_ENOMEM;
    }
    sp = h->sp;
    items = h->sp_items;
    buf_clear(&sp->bytes);
    sp->n = 0;
    sp->total = 0;
    store_cursor_init(&cur);
    if (m.has_after) {
        memcpy(cur.last, m.after, m.after_len);
        cur.last_len = m.after_len;
        cur.started = true;
    }
    /* half the frame: the scan may pass its bound by one record, and items have envelopes */
    budget = m.max_bytes;
    if (answer_max > 0 && budget > answer_max / 2) {
        budget = answer_max / 2;
    }
    sp->budget = (size_t)budget;
    rc = store_scan(h->store, m.start, m.end, &cur,
                    m.max_items != 0 ? m.max_items : MSG_HANDOFF_ITEMS_MAX, (size_t)budget,
                    serve_pull_item, sp);
    if (rc == 1) {
        rc = 0;
    }
    if (rc == 0) {
        for (size_t i = 0; i < sp->n; i++) {
            items[i].key = buf_data(&sp->bytes) + sp->offs[i][0];
            items[i].key_len = sp->lens[i][0];
            items[i].record = buf_data(&sp->bytes) + sp->offs[i][1];
            items[i].record_len = sp->lens[i][1];
        }
        a.items = items;
        a.n_items = sp->n;
        a.done = cur.done;
        if (cur.started) {
            a.next = cur.last;
            a.next_len = cur.last_len;
            a.has_next = true;
        }
    } else {
        a.status = msg_kv_status_from_rk(rc);
    }
    rc = msg_handoff_pull_answer_encode(&a, out);
    if (rc == 0 && a.status == MSG_KV_OK) {
        struct handoff_out *o = out_entry(h, peer, m.target);
        h->stats.keys_sent += sp->n;
        h->stats.bytes_sent += sp->total;
        h->stats.batches_sent++;
        if (o != NULL) {
            o->keys += sp->n;
            o->bytes += sp->total;
            o->last_ms = h->now_ms;
        }
    }
    if (sp->bytes.cap > 4 * 1024 * 1024) { /* one large record's answer does not stay */
        buf_free(&sp->bytes);
        buf_init(&sp->bytes, 0);
    }
    return rc;
}

static int serve_digest(struct handoff *h, const uint8_t *body, size_t len, struct buf *out)
{
    struct msg_handoff_digest m;
    struct msg_handoff_digest_answer a = {.status = MSG_KV_OK};
    int rc = msg_handoff_digest_decode(body, len, &m);

    if (rc != 0) {
        return RK_ESYNTAX;
    }
    a.parts = m.parts;
    if (m.count_only) { /* the key count alone: the digests stay zero */
        uint64_t bytes;
        rc = store_arc_stats(h->store, m.start, m.end, &a.keys, &bytes);
    } else {
        rc = store_arc_digest(h->store, m.start, m.end, m.parts, a.digests, &a.keys);
    }
    if (rc != 0) {
        a = (struct msg_handoff_digest_answer){.status = msg_kv_status_from_rk(rc), .parts = 1};
    }
    return msg_handoff_digest_answer_encode(&a, out);
}

static int serve_done(struct handoff *h, const char *peer, const uint8_t *body, size_t len,
                      struct buf *out)
{
    struct msg_handoff_done m;
    bool known = false;
    int rc = msg_handoff_done_decode(body, len, &m);

    if (rc != 0) {
        return RK_ESYNTAX;
    }
    for (size_t i = 0; i < h->n_told && !known; i++) { /* a DONE told again (in_tell()) */
        const struct handoff_told *t = &h->told[i];
        known = t->target == m.target && t->start == m.start && t->end == m.end &&
                strcmp(t->peer, peer) == 0;
    }
    if (!known && h->n_told < HANDOFF_TOLD_MAX) {
        struct handoff_told *grown = realloc(h->told, (h->n_told + 1) * sizeof(*grown));
        if (grown != NULL) {
            h->told = grown;
            h->told[h->n_told] =
                (struct handoff_told){.target = m.target, .start = m.start, .end = m.end};
            snprintf(h->told[h->n_told].peer, sizeof(h->told[0].peer), "%s", peer);
            h->n_told++;
        }
    }
    return msg_handoff_done_answer_encode(&(struct msg_handoff_done_answer){.status = MSG_KV_OK},
                                          out);
}

int handoff_serve(struct handoff *h, const char *peer, uint32_t op, const uint8_t *body, size_t len,
                  size_t answer_max, struct buf *out)
{
    if (op == MSG_OP_HANDOFF_PULL || op == MSG_OP_HANDOFF_DIGEST) {
        h->served_ms = h->now_ms != 0 ? h->now_ms : 1;
    }
    switch (op) {
    case MSG_OP_HANDOFF_PULL:
        return serve_pull(h, peer, body, len, answer_max, out);
    case MSG_OP_HANDOFF_DIGEST:
        return serve_digest(h, body, len, out);
    case MSG_OP_HANDOFF_DONE:
        return serve_done(h, peer, body, len, out);
    default:
        return RK_EINVAL;
    }
}

/* --- clean-up ---------------------------------------------------------------------- */

static void clean_next(struct handoff *h);

static void clean_done(struct store_op *op, void *ctx)
{
    struct handoff *h = ctx;

    h->stats.cleanup_keys += op->count;
    if (op->result != 0) {
        LOG(LOG_WARN, "handoff_cleanup_failed", "error=\"%s\"", rk_strerror(op->result));
        h->cleaning = false; /* tried again at a later tick */
        return;
    }
    if (h->clean_cur.done) {
        h->clean_at++;
        store_cursor_init(&h->clean_cur);
    }
    clean_next(h);
}

static void clean_next(struct handoff *h)
{
    if (h->clean_at == h->n_clean || h->planned_ring != h->cleaned_for) {
        if (h->clean_at == h->n_clean) {
            h->cleaned = h->cleaned_for;
            LOG(LOG_INFO, "handoff_cleanup", "ring=%016llx arcs=%zu keys_deleted=%llu",
                (unsigned long long)h->cleaned, h->n_clean,
                (unsigned long long)h->stats.cleanup_keys);
        }
        h->cleaning = false;
        return;
    }
    store_op_init(&h->clean_op, STORE_OP_DELETE_RANGE);
    h->clean_op.start = h->clean_arcs[2 * h->clean_at];
    h->clean_op.end = h->clean_arcs[2 * h->clean_at + 1];
    h->clean_op.cursor = &h->clean_cur;
    h->clean_op.limit = 1000;
    h->clean_op.done = clean_done;
    h->clean_op.ctx = h;
    if (store_submit(h->store, &h->clean_op) != 0) {
        h->cleaning = false;
    }
}

/* The arcs of ring this node does not replicate, holding keys. */
static int clean_plan(struct handoff *h, const struct ring *ring)
{
    size_t n = ring_token_count(ring);
    uint32_t pl[RING_RF_MAX];

    free(h->clean_arcs);
    h->clean_arcs = malloc(2 * (n ? n : 1) * sizeof(*h->clean_arcs));
    h->n_clean = 0;
    if (h->clean_arcs == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t end = ring_token_at(ring, i).pos;
        uint64_t start = ring_token_at(ring, i == 0 ? n - 1 : i - 1).pos;
        size_t np = 0;
        bool mine = false;
        uint64_t keys = 0, bytes = 0;

        if (ring_preflist(ring, end, h->cfg.rf, pl, &np) != 0) {
            return RK_EINVAL;
        }
        for (size_t j = 0; j < np; j++) {
            mine |= strcmp(ring_member_id(ring, pl[j]), h->cfg.self) == 0;
        }
        if (mine || start == end || store_arc_stats(h->store, start, end, &keys, &bytes) != 0 ||
            keys == 0) {
            continue;
        }
        if (h->n_clean > 0 && h->clean_arcs[2 * h->n_clean - 1] == start) {
            h->clean_arcs[2 * h->n_clean - 1] = end;
        } else {
            h->clean_arcs[2 * h->n_clean] = start;
            h->clean_arcs[2 * h->n_clean + 1] = end;
            h->n_clean++;
        }
    }
    return 0;
}

static void cleanup(struct handoff *h, const struct handoff_view *v)
{
    uint64_t rd = ring_digest(v->ring);

    /*
     * Nor while others still copy from us (repairs after a change made
     * without handoff are the gainers' alone to track): the settle time
     * counts from the last pull or digest served as well.
     */
    if (v->status != MSG_MEMBER_NORMAL || rd != ring_digest(v->target) || !v->ring_agreed ||
        !v->table_whole || handoff_active(h) > 0 ||
        (h->served_ms != 0 && v->now_ms - h->served_ms < HANDOFF_SETTLE_MS)) {
        h->agreed_since_ms = 0;
        return;
    }
    if (h->agreed_since_ms == 0) {
        h->agreed_since_ms = v->now_ms;
    }
    if (h->cleaning || h->cleaned == rd || v->now_ms - h->agreed_since_ms < HANDOFF_SETTLE_MS) {
        return;
    }
    if (clean_plan(h, v->ring) != 0) {
        return;
    }
    h->cleaned_for = rd;
    h->clean_at = 0;
    store_cursor_init(&h->clean_cur);
    h->cleaning = true;
    clean_next(h);
}

/* --- repairs ---------------------------------------------------------------------- */

/* Drop the repairs that are done. */
static void rep_prune(struct handoff *h)
{
    size_t k = 0;

    for (size_t i = 0; i < h->n_rep; i++) {
        if (h->rep[i]->state == IN_DONE && !h->rep[i]->busy) {
            in_free(h->rep[i]);
        } else {
            h->rep[k++] = h->rep[i];
        }
    }
    h->n_rep = k;
}

static int rep_add(struct handoff *h, const struct ring *new_ring, const struct ring_move *mv,
                   const char *source, unsigned idx)
{
    struct handoff_in *t = in_new(h, &h->rep, &h->n_rep, mv);

    if (t == NULL) {
        return RK_ENOMEM;
    }
    t->repair = true;
    snprintf(t->kind, sizeof(t->kind), "repair");
    snprintf(t->sources[0], RING_NAME_MAX + 1, "%s", source);
    t->n_sources = 1;
    ckpt_key(t->ckpt_key, ring_digest(new_ring), t->start, t->end);
    t->ckpt_key[0] = 'r';
    t->ckpt_key[1] = (uint8_t)('0' + idx);
    in_resume(h, t);
    return 0;
}

void handoff_ring_changed(struct handoff *h, const struct ring *old_ring,
                          const struct ring *new_ring)
{
    struct ring_diff d;
    size_t added = 0;
    int rc;

    if (ring_digest(new_ring) == h->planned_target || ring_member_count(old_ring) == 0 ||
        ring_member_count(new_ring) == 0 || ring_member_find(new_ring, h->cfg.self) < 0) {
        return; /* the change handoff made, the first ring, or one we are not in */
    }
    rep_prune(h);
    rc = ring_diff(old_ring, new_ring, h->cfg.rf, &d);
    if (rc != 0) {
        LOG(LOG_ERROR, "handoff_repair_failed", "error=\"%s\"", rk_strerror(rc));
        return;
    }
    for (size_t i = 0; i < d.n_moves && rc == 0; i++) {
        const struct ring_move *mv = &d.moves[i];
        unsigned idx = 0;
        if (!id_in(h->cfg.self, mv->gain, mv->n_gain)) {
            continue;
        }
        /* every old replica still in the ring: a write acknowledged by w of them is on one */
        for (size_t j = 0; j < mv->n_old && rc == 0; j++) {
            if (ring_member_find(new_ring, mv->old_list[j]) >= 0 &&
                strcmp(mv->old_list[j], h->cfg.self) != 0) {
                rc = rep_add(h, new_ring, mv, mv->old_list[j], idx++);
                added++;
            }
        }
    }
    ring_diff_free(&d);
    if (added > 0) {
        LOG(LOG_INFO, "handoff_repair", "ring=%016llx old_ring=%016llx transfers=%zu",
            (unsigned long long)ring_digest(new_ring), (unsigned long long)ring_digest(old_ring),
            added);
    }
}

/* --- the tick ---------------------------------------------------------------------- */

size_t handoff_active(const struct handoff *h)
{
    size_t n = 0;

    for (size_t i = 0; i < h->n_in; i++) {
        n += h->in[i]->state != IN_DONE;
    }
    for (size_t i = 0; i < h->n_give; i++) {
        n += !h->give[i].done;
    }
    for (size_t i = 0; i < h->n_rep; i++) {
        n += h->rep[i]->state != IN_DONE;
    }
    return n;
}

enum handoff_action handoff_tick(struct handoff *h, const struct handoff_view *v)
{
    bool all_in = true, all_given = true;
    double cap;

    h->now_ms = v->now_ms;
    if (v->ring == NULL || v->target == NULL) {
        return HANDOFF_NONE;
    }
    plan(h, v);
    cap = (double)(h->cfg.rate > h->cfg.batch_bytes ? h->cfg.rate : h->cfg.batch_bytes);
    if (h->allowance_ms != 0) {
        h->allowance += (double)h->cfg.rate * (double)(v->now_ms - h->allowance_ms) / 1000.0;
    } else {
        h->allowance = cap;
    }
    if (h->allowance > cap) {
        h->allowance = cap;
    }
    h->allowance_ms = v->now_ms;
    h->may_drive =
        v->table_whole && v->target_agreed && h->planned_target == ring_digest(v->target);
    h->whole = v->table_whole;
    if (h->may_drive || h->whole) {
        drive(h);
    }
    cleanup(h, v);
    if (h->may_drive) {
        /*
         * A leaving node, or one changing its token count, keeps the DONEs
         * it was told in memory only: told again while the change lasts,
         * one that restarted still learns every arc it gave (the source of
         * a join, or of a move a join makes, needs no telling).
         */
        for (size_t i = 0; i < h->n_in; i++) {
            struct handoff_in *t = h->in[i];
            if (t->state == IN_DONE &&
                (strcmp(t->kind, "leave") == 0 || strcmp(t->kind, "tokens") == 0) &&
                v->now_ms - t->told_ms >= HANDOFF_RETELL_MS) {
                in_tell(h, t);
            }
        }
    }
    if (h->planned_target != ring_digest(v->target) || !v->table_whole || !v->target_agreed) {
        return HANDOFF_NONE;
    }
    for (size_t i = 0; i < h->n_in; i++) {
        all_in &= h->in[i]->state == IN_DONE;
    }
    for (size_t i = 0; i < h->n_give; i++) {
        h->give[i].done = h->give[i].done || give_covered(h, &h->give[i]);
        all_given &= h->give[i].done;
    }
    if (v->status == MSG_MEMBER_JOINING && all_in) {
        return HANDOFF_JOINED;
    }
    if (v->status == MSG_MEMBER_LEAVING && all_in && all_given) {
        return HANDOFF_LEFT;
    }
    if (v->status == MSG_MEMBER_NORMAL && v->tokens_changing && all_in && all_given) {
        return HANDOFF_RETOKENED;
    }
    return HANDOFF_NONE;
}

void handoff_each(struct handoff *h, handoff_each_fn fn, void *ctx)
{
    for (size_t i = 0; i < h->n_in + h->n_rep; i++) {
        const struct handoff_in *t = i < h->n_in ? h->in[i] : h->rep[i - h->n_in];
        uint64_t ms = t->started_ms ? h->now_ms - t->started_ms : 0;
        struct handoff_transfer x = {.kind = t->kind,
                                     .state = in_state_names[t->state],
                                     .incoming = true,
                                     .start = t->start,
                                     .end = t->end,
                                     .from = t->source[0] ? t->source : t->sources[0],
                                     .to = h->cfg.self,
                                     .keys = t->keys,
                                     .keys_total = t->keys_total,
                                     .bytes = t->bytes,
                                     .rate = ms > 0 ? t->bytes * 1000 / ms : 0,
                                     .eta_s = -1};
        if (t->state == IN_DONE) {
            continue;
        }
        if (ms > 0 && t->keys > 0 && t->keys_total > t->keys) {
            x.eta_s = (int64_t)((t->keys_total - t->keys) * ms / t->keys / 1000);
        }
        fn(ctx, &x);
    }
    for (size_t i = 0; i < h->n_out; i++) {
        const struct handoff_out *o = &h->out[i];
        uint64_t ms = o->last_ms > o->first_ms ? o->last_ms - o->first_ms : 0;
        struct handoff_transfer x = {.kind = "serve",
                                     .state = "streaming",
                                     .incoming = false,
                                     .from = h->cfg.self,
                                     .to = o->peer,
                                     .keys = o->keys,
                                     .bytes = o->bytes,
                                     .rate = ms > 0 ? o->bytes * 1000 / ms : 0,
                                     .eta_s = -1};
        if (o->target != h->planned_target || h->now_ms - o->last_ms > 5000) {
            continue;
        }
        fn(ctx, &x);
    }
}
