/*
 * record.c - the siblings of one key, the merge rules of record.h and the
 * record codec whose layout record.h specifies.
 *
 * Invariants.  Every function that changes a record or a sibling either
 * succeeds or leaves it exactly as it was: it checks every bound, allocates
 * everything the result needs, and only then moves siblings.  That is what
 * makes "RK_ETOOBIG (or RK_ECLOCKFULL), r unchanged" true, and RK_ENOMEM
 * harmless to retry.
 * In siblings mode record_apply() keeps the siblings pairwise concurrent
 * (given that they were), and record_prune() does not break that.
 *
 * Decisions the merge rules leave open, taken here:
 *   - A clock names a version.  Two versions with equal clocks are the same
 *     version even if their contents differ, so the second one applied is
 *     ignored.  Different contents under one clock can only come from a
 *     counter handed out twice.  record_write_local() raises its actor's
 *     counter above every counter of that actor it can see, and the actor
 *     is not the node id but an id per life of the node's data directory
 *     (store_actor()): a node whose directory was wiped has forgotten its
 *     counters, and under its node id it would hand out (node, 1) again,
 *     which every replica holding the old (node, 1) would drop (Riak's
 *     kv679).  The sibling's node field stays the node id: LWW's tie-break
 *     and what is shown are by node.
 *   - The effective sibling cap is min(max_siblings, RECORD_SIBLINGS_MAX):
 *     a record that could not be encoded is never built.
 *   - LWW orders versions by (hlc, node id in ring order, tombstone over
 *     value, value bytes).  The last two keys only separate versions that
 *     no correct node produces (one node, one hlc, two contents), but they
 *     make the order total, so the winner of a set of versions, and with
 *     the clock merge the whole result, is independent of the order in
 *     which the versions arrive.  A delete wins a tie, as in Cassandra.
 *   - The stamp of the entry a local write increments is the write's full
 *     HLC timestamp, as vclock.h specifies; vclock_prune() compares its
 *     physical part with now_ms.
 *   - A context comes from a client, so record_write_local() bounds it
 *     before use (RK_ECONTEXT): the actor's own counter no higher than the
 *     key's clock holds for it (what it has issued for the key), at most
 *     max_siblings ids the key's clock does not hold, and the key's clock
 *     with the context's ids within VCLOCK_ENTRIES_MAX.  Without the first,
 *     a context carrying node's counter at 2^64-2 makes the key unwritable
 *     (every later write overflows it); without the second, contexts grow
 *     clocks by 64 invented ids a write; without the third, invented ids
 *     spread over concurrent siblings outgrow the clock a blind write
 *     needs, and the key is unwritable again.  Other actors' counters may
 *     legitimately run ahead of this replica (a read served elsewhere), so
 *     they are bounded by time instead: an actor's counter is at most the
 *     hybrid timestamp of the write that set it (record_write_clock()), so
 *     a counter more than RECORD_CONTEXT_AHEAD_MS past this write's, and
 *     past what the key's clock holds for that actor, is forged; without
 *     that bound, a context naming another node's counter at 2^64-1, sent
 *     to a replica other than that node, makes the key unwritable on that
 *     node.
 *   - A local write's stamp is raised above the stamp of every sibling its
 *     clock supersedes: a write never loses, under LWW, to the version it
 *     replaced, even when that version's stamp is ahead of this clock.
 *   - Version vectors with one entry per coordinating node cannot express
 *     two concurrent writes of one coordinator: any clock node gives a new
 *     write covers node's earlier writes.  So when a local write's context
 *     misses a sibling that the new clock would supersede (a write this
 *     node coordinated after the client read), record_write_local() refuses
 *     with RK_EMISMATCH instead of silently dropping that sibling.  A blind
 *     write (NULL context) sees every sibling and is never refused.
 *   - An expiry is part of a version's contents: LWW compares it last (a
 *     version that expires later wins a tie that only a reused counter can
 *     make), and a version differing only in its expiry is a different
 *     version, made with a new clock (EXPIRE and PERSIST write one).
 */
#include "record.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "grow.h"
#include "hlc.h"

/* The fixed record head: format, flags, u16 sibling count. */
#define RECORD_HEAD_BYTES 4
/* The fixed part of a sibling after its clock: hlc, node_len, sflags, value_len. */
#define RECORD_SIBLING_FIXED_BYTES (8 + 1 + 1 + 4)
/* The optional expire_ms field (sflags bit 1). */
#define RECORD_EXPIRY_BYTES 8
/* The smallest encoded sibling: an empty clock (its u16 count) and a 1-byte node id. */
#define RECORD_SIBLING_MIN_BYTES (2 + RECORD_SIBLING_FIXED_BYTES + 1)
/* First capacity of a growing record: most keys hold one sibling, some two. */
#define RECORD_CAP_MIN 2
/*
 * How far past a write's own timestamp a context's counter may be: clocks
 * of other nodes run ahead by their skew, far less than this; past it the
 * counter cannot come from any write (record_context_check()).
 */
#define RECORD_CONTEXT_AHEAD_MS (24ull * 3600 * 1000)

/* *out = a fresh copy of value[0..len), NULL when len is 0. */
static int record_dup_value(uint8_t **out, const void *value, size_t len)
{
    *out = NULL;
    if (len == 0) {
        return 0;
    }
    *out = malloc(len);
    if (*out == NULL) {
        return RK_ENOMEM;
    }
    memcpy(*out, value, len);
    return 0;
}

void sibling_init(struct sibling *s)
{
    *s = (struct sibling){0};
    vclock_init(&s->clock);
}

void sibling_deinit(struct sibling *s)
{
    vclock_deinit(&s->clock);
    free(s->value);
    sibling_init(s);
}

int sibling_copy(struct sibling *dst, const struct sibling *src)
{
    struct sibling tmp;
    int err;

    sibling_init(&tmp);
    err = vclock_copy(&tmp.clock, &src->clock);
    if (err != 0) {
        goto out_deinit_tmp;
    }
    err = record_dup_value(&tmp.value, src->value, src->value_len);
    if (err != 0) {
        goto out_deinit_tmp;
    }
    tmp.hlc = src->hlc;
    memcpy(tmp.node, src->node, sizeof(tmp.node));
    tmp.tombstone = src->tombstone;
    tmp.value_len = src->value_len;
    tmp.expire_ms = src->expire_ms;
    sibling_deinit(dst);
    *dst = tmp;
    return 0;

out_deinit_tmp:
    sibling_deinit(&tmp);
    return err;
}

int sibling_set(struct sibling *s, const struct vclock *clock, uint64_t hlc, const char *node,
                bool tombstone, const void *value, size_t len)
{
    size_t node_len = node != NULL ? strnlen(node, RING_NAME_MAX + 1) : 0;
    struct sibling tmp;
    int err;

    assert((value != NULL || len == 0) && "sibling_set: NULL value with a non-zero length");
    if (!ring_name_valid(node, node_len) || (tombstone && len != 0)) {
        return RK_EINVAL;
    }
    if (len > RECORD_VALUE_MAX) {
        return RK_ETOOBIG;
    }
    sibling_init(&tmp);
    err = vclock_copy(&tmp.clock, clock);
    if (err != 0) {
        goto out_deinit_tmp;
    }
    err = record_dup_value(&tmp.value, value, len);
    if (err != 0) {
        goto out_deinit_tmp;
    }
    tmp.hlc = hlc;
    memcpy(tmp.node, node, node_len);
    tmp.node[node_len] = '\0';
    tmp.tombstone = tombstone;
    tmp.value_len = len;
    sibling_deinit(s);
    *s = tmp;
    return 0;

out_deinit_tmp:
    sibling_deinit(&tmp);
    return err;
}

void record_init(struct record *r)
{
    *r = (struct record){0};
}

void record_deinit(struct record *r)
{
    for (size_t i = 0; i < r->n; i++) {
        sibling_deinit(&r->s[i]);
    }
    free(r->s);
    record_init(r);
}

/* Make room for `need` siblings in all; the siblings already there stay. */
static int record_reserve(struct record *r, size_t need)
{
    return grow_array(&r->s, &r->cap, need < RECORD_CAP_MIN ? RECORD_CAP_MIN : need, sizeof(*r->s));
}

int record_push(struct record *r, const struct sibling *s)
{
    int err;

    if (r->n >= RECORD_SIBLINGS_MAX) {
        return RK_ETOOBIG;
    }
    err = record_reserve(r, r->n + 1);
    if (err != 0) {
        return err;
    }
    sibling_init(&r->s[r->n]);
    err = sibling_copy(&r->s[r->n], s);
    if (err != 0) {
        return err;
    }
    r->n++;
    return 0;
}

bool record_all_tombstones(const struct record *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!r->s[i].tombstone) {
            return false;
        }
    }
    return r->n > 0;
}

bool sibling_expired(const struct sibling *s, uint64_t now_ms)
{
    return s->expire_ms != 0 && s->expire_ms <= now_ms;
}

bool sibling_dead(const struct sibling *s, uint64_t now_ms)
{
    return s->tombstone || sibling_expired(s, now_ms);
}

size_t record_live_count(const struct record *r, uint64_t now_ms)
{
    size_t n = 0;

    for (size_t i = 0; i < r->n; i++) {
        n += !sibling_dead(&r->s[i], now_ms);
    }
    return n;
}

bool record_all_dead(const struct record *r, uint64_t now_ms)
{
    for (size_t i = 0; i < r->n; i++) {
        if (!sibling_dead(&r->s[i], now_ms)) {
            return false;
        }
    }
    return r->n > 0;
}

uint64_t record_max_expiry(const struct record *r)
{
    uint64_t max = 0;

    for (size_t i = 0; i < r->n; i++) {
        max = r->s[i].expire_ms > max ? r->s[i].expire_ms : max;
    }
    return max;
}

uint64_t record_max_hlc(const struct record *r)
{
    uint64_t max = 0;

    for (size_t i = 0; i < r->n; i++) {
        max = r->s[i].hlc > max ? r->s[i].hlc : max;
    }
    return max;
}

int record_context(const struct record *r, struct vclock *out)
{
    struct vclock ctx;
    int err = 0;

    vclock_init(&ctx);
    for (size_t i = 0; i < r->n; i++) {
        err = vclock_merge(&ctx, &r->s[i].clock);
        if (err != 0) {
            goto out_deinit_ctx;
        }
    }
    vclock_deinit(out);
    *out = ctx;
    return 0;

out_deinit_ctx:
    vclock_deinit(&ctx);
    return err;
}

/*
 * Siblings mode.  One pass classifies every sibling against v before
 * anything moves, so an ignored v, the cap and a failed allocation all
 * leave r as it was.  v is ignored when any sibling covers it, even if it
 * would supersede others: a version already seen adds nothing.  owned is
 * NULL (v is copied into r) or v itself, which the caller gives up: it is
 * moved into r and left empty when r takes it, and left as it was otherwise.
 */
static int record_apply_siblings(struct record *r, const struct sibling *v, struct sibling *owned,
                                 size_t max_siblings, bool *changed)
{
    size_t cap = max_siblings < RECORD_SIBLINGS_MAX ? max_siblings : RECORD_SIBLINGS_MAX;
    size_t dropped = 0, kept = 0;
    struct sibling copy;
    int err;

    for (size_t i = 0; i < r->n; i++) {
        enum vclock_order o = vclock_compare(&v->clock, &r->s[i].clock);
        if (o == VCLOCK_EQUAL || o == VCLOCK_BEFORE) {
            return 0;
        }
        dropped += o == VCLOCK_AFTER;
    }
    if (r->n - dropped + 1 > cap) {
        return RK_ETOOBIG;
    }
    err = record_reserve(r, r->n - dropped + 1);
    if (err != 0) {
        return err;
    }
    sibling_init(&copy);
    if (owned != NULL) {
        copy = *owned; /* moved, not copied: the caller's sibling is left empty below */
    } else if ((err = sibling_copy(&copy, v)) != 0) {
        return err;
    }
    for (size_t i = 0; i < r->n; i++) {
        if (vclock_compare(&copy.clock, &r->s[i].clock) == VCLOCK_AFTER) {
            sibling_deinit(&r->s[i]);
        } else {
            r->s[kept++] = r->s[i];
        }
    }
    r->s[kept++] = copy;
    r->n = kept;
    if (owned != NULL) {
        sibling_init(owned);
    }
    *changed = true;
    return 0;
}

/* Ring order of node ids (PLACEMENT.md): memcmp, a shorter prefix first. */
static int record_node_cmp(const char *a, const char *b)
{
    size_t a_len = strlen(a), b_len = strlen(b);
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

    if (c != 0) {
        return c;
    }
    return (a_len > b_len) - (a_len < b_len);
}

static int record_value_cmp(const struct sibling *a, const struct sibling *b)
{
    size_t len = a->value_len < b->value_len ? a->value_len : b->value_len;
    int c = len > 0 ? memcmp(a->value, b->value, len) : 0;

    if (c != 0) {
        return c;
    }
    return (a->value_len > b->value_len) - (a->value_len < b->value_len);
}

/* The LWW order (see the top of this file): > 0 when a wins over b. */
static int record_lww_cmp(const struct sibling *a, const struct sibling *b)
{
    int c;

    if (a->hlc != b->hlc) {
        return a->hlc > b->hlc ? 1 : -1;
    }
    c = record_node_cmp(a->node, b->node);
    if (c != 0) {
        return c;
    }
    if (a->tombstone != b->tombstone) {
        return a->tombstone ? 1 : -1;
    }
    c = record_value_cmp(a, b);
    if (c != 0 || a->expire_ms == b->expire_ms) {
        return c;
    }
    return a->expire_ms > b->expire_ms ? 1 : -1;
}

/* Equal entry by entry, stamps included: what decides whether bytes on disk change. */
static bool record_clock_same(const struct vclock *a, const struct vclock *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct vclock_entry *x = &a->e[i], *y = &b->e[i];
        if (strcmp(x->id, y->id) != 0 || x->counter != y->counter || x->stamp != y->stamp) {
            return false;
        }
    }
    return true;
}

static bool record_sibling_same(const struct sibling *a, const struct sibling *b)
{
    return a->hlc == b->hlc && strcmp(a->node, b->node) == 0 && a->tombstone == b->tombstone &&
           a->expire_ms == b->expire_ms && record_value_cmp(a, b) == 0 &&
           record_clock_same(&a->clock, &b->clock);
}

bool record_same(const struct record *a, const struct record *b)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (!record_sibling_same(&a->s[i], &b->s[i])) {
            return false;
        }
    }
    return true;
}

/*
 * next = the LWW result of r's siblings and v: the winner under the total
 * order, carrying the merge of every clock.  It is a function of the set of
 * versions, not of their order (merge is commutative, associative and
 * idempotent), and the merged clock makes it descend from everything it
 * replaced, so replicas holding it ignore those versions when they arrive.
 */
static int record_lww_result(const struct record *r, const struct sibling *v, struct sibling *next)
{
    const struct sibling *win = v;
    int err = vclock_copy(&next->clock, &v->clock);

    for (size_t i = 0; i < r->n && err == 0; i++) {
        err = vclock_merge(&next->clock, &r->s[i].clock);
        win = record_lww_cmp(&r->s[i], win) > 0 ? &r->s[i] : win;
    }
    if (err == 0) {
        err = record_dup_value(&next->value, win->value, win->value_len);
    }
    if (err != 0) {
        return err; /* the caller deinitialises next */
    }
    /* the winner's all but its clock, which is the merge of every clock */
    next->hlc = win->hlc;
    memcpy(next->node, win->node, sizeof(next->node));
    next->tombstone = win->tombstone;
    next->value_len = win->value_len;
    next->expire_ms = win->expire_ms;
    return 0;
}

/*
 * r becomes a copy of v alone, in its first sibling: that sibling's clock
 * array, and its value's buffer when at least as long, are reused (a key
 * rewritten with values of one size allocates nothing).  r is unchanged on
 * error (RK_ENOMEM); r has room for one sibling.
 */
static int record_become(struct record *r, const struct sibling *v)
{
    struct sibling *s = &r->s[0];
    uint8_t *value = NULL;
    int err;

    if (r->n == 0) {
        sibling_init(s);
    }
    if (v->value_len > 0 && v->value_len > s->value_len) {
        err = record_dup_value(&value, v->value, v->value_len);
        if (err != 0) {
            return err;
        }
    }
    err = vclock_copy(&s->clock, &v->clock);
    if (err != 0) {
        free(value);
        return err;
    }
    if (v->value_len == 0) {
        free(s->value);
        s->value = NULL;
    } else if (value != NULL) {
        free(s->value);
        s->value = value;
    } else {
        memcpy(s->value, v->value, v->value_len); /* fits in the old value's buffer */
    }
    for (size_t i = 1; i < r->n; i++) {
        sibling_deinit(&r->s[i]);
    }
    r->n = 1;
    s->hlc = v->hlc;
    memcpy(s->node, v->node, sizeof(s->node));
    s->tombstone = v->tombstone;
    s->value_len = v->value_len;
    s->expire_ms = v->expire_ms;
    return 0;
}

/*
 * LWW mode: r becomes the one sibling record_lww_result() builds; when v
 * supersedes everything r holds, that sibling is v itself.
 */
static int record_apply_lww(struct record *r, const struct sibling *v, bool *changed)
{
    struct sibling next;
    int err;

    err = record_reserve(r, 1);
    if (err == 0 && record_apply_is_v(r, v, RECORD_LWW, changed)) {
        err = *changed ? record_become(r, v) : 0;
        *changed = *changed && err == 0;
        return err;
    }
    sibling_init(&next);
    if (err == 0) {
        err = record_lww_result(r, v, &next);
    }
    if (err != 0 || (r->n == 1 && record_sibling_same(&r->s[0], &next))) {
        sibling_deinit(&next);
        return err;
    }
    for (size_t i = 0; i < r->n; i++) {
        sibling_deinit(&r->s[i]);
    }
    r->s[0] = next;
    r->n = 1;
    *changed = true;
    return 0;
}

const char *record_conflicts_name(enum record_conflicts mode)
{
    return mode == RECORD_LWW ? "lww" : "siblings";
}

int record_apply(struct record *r, const struct sibling *v, enum record_conflicts mode,
                 size_t max_siblings, bool *changed)
{
    bool ignored;

    assert((mode == RECORD_SIBLINGS || mode == RECORD_LWW) && "record_apply: unknown mode");
    if (changed == NULL) {
        changed = &ignored;
    }
    *changed = false;
    if (mode == RECORD_LWW) {
        return record_apply_lww(r, v, changed);
    }
    return record_apply_siblings(r, v, NULL, max_siblings, changed);
}

bool record_apply_is_v(const struct record *r, const struct sibling *v, enum record_conflicts mode,
                       bool *changed)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct sibling *s = &r->s[i];
        if (mode == RECORD_LWW ? record_lww_cmp(s, v) > 0 || !vclock_covers(&v->clock, &s->clock)
                               : vclock_compare(&v->clock, &s->clock) != VCLOCK_AFTER) {
            return false;
        }
    }
    /* lww: v itself may be what r holds (a version that arrives again), and then nothing changes */
    *changed = !(r->n == 1 && record_sibling_same(&r->s[0], v));
    return true;
}

/* The largest counter of id in any sibling of r: what r's clock holds for id. */
static uint64_t record_counter(const struct record *r, const char *id)
{
    uint64_t top = 0;

    for (size_t i = 0; i < r->n; i++) {
        uint64_t c = vclock_get(&r->s[i].clock, id);
        top = c > top ? c : top;
    }
    return top;
}

/*
 * Turn base into the clock of a new write by actor (the clock id of this
 * node's data directory, store.c): actor's counter raised to the largest
 * counter of actor in base or in any sibling of r, then incremented with
 * the write's hlc as stamp.  Raising above the siblings, not only above
 * base, is what keeps a node from giving two different writes the same
 * counter when a client's context is older than the node.
 */
static int record_write_clock(const struct record *r, const char *actor, uint64_t hlc,
                              struct vclock *base)
{
    struct vclock_entry top = {.counter = vclock_get(base, actor)};
    struct vclock raise = {.e = &top, .n = 1, .cap = 1};
    uint64_t c = record_counter(r, actor);
    int err;

    top.counter = c > top.counter ? c : top.counter;
    if (top.counter == 0 && hlc > 1) {
        /*
         * No counter of actor in sight: its copy of the key may have been
         * collected while another replica still holds a version (a
         * tombstone) that counted actor's earlier writes of it.  Counting
         * from 1 again would hand out a pair that version already covers,
         * and the write would be dropped as older.  So the first counter
         * is the write's hlc: every counter actor hands out is at most its
         * write's hlc, which strictly increases, so it is above any
         * counter actor gave the key before.
         */
        top.counter = hlc - 1;
    }
    if (top.counter > vclock_get(base, actor)) {
        top.id_len = (uint8_t)strlen(actor);
        memcpy(top.id, actor, top.id_len + 1u);
        err = vclock_merge(base, &raise);
        if (err != 0) {
            return err;
        }
    }
    return vclock_increment(base, actor, hlc);
}

/*
 * True when clock would supersede a sibling of r that context has not
 * seen: the one case in which version vectors would drop a write that its
 * writer's client never saw (see the top of this file).
 */
static bool record_context_misses(const struct record *r, const struct vclock *context,
                                  const struct vclock *clock)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct vclock *s = &r->s[i].clock;
        if (vclock_descends(clock, s) && !vclock_descends(context, s)) {
            return true;
        }
    }
    return false;
}

/*
 * The bounds on a context a client sends (see the top of this file): actor's
 * counter no higher than the key's clock holds for actor, at most
 * max_siblings ids the key's clock does not hold, and room left for every
 * later write: the key's clock, the context and actor together name at most
 * VCLOCK_ENTRIES_MAX ids.  Without the last, contexts adding ids to
 * concurrent siblings grow the key's clock (the merge of its siblings')
 * past what a clock holds, and a blind write, whose clock covers every
 * sibling, can no longer be built.  And every counter the key's clock does
 * not hold at most a day past hlc, the write's timestamp (the top of this
 * file).  RK_ECONTEXT when a bound is broken; but RK_ECLOCKFULL, whatever
 * the context, when the key's clock alone leaves no room: it holds
 * VCLOCK_ENTRIES_MAX ids and none is actor's (or its siblings' clocks
 * together name more), so no write by actor fits it.
 */
static int record_context_check(const struct record *r, const char *actor, uint64_t hlc,
                                const struct vclock *context, size_t max_siblings)
{
    uint64_t ceiling = hlc_make(hlc_physical(hlc) + RECORD_CONTEXT_AHEAD_MS, HLC_LOGICAL_MAX);
    size_t unknown = 0;
    struct vclock key;
    bool actor_new;
    int err;

    vclock_init(&key);
    err = record_context(r, &key);
    if (err != 0) {
        return err; /* RK_ECLOCKFULL: the siblings' clocks together are past full */
    }
    actor_new = vclock_get(&key, actor) == 0;
    if (key.n + actor_new > VCLOCK_ENTRIES_MAX) {
        err = RK_ECLOCKFULL; /* whatever the context: the key's clock has no room for actor */
        goto out_deinit;
    }
    for (size_t i = 0; i < context->n; i++) {
        /* a counter the key's clock already holds is not the context's invention */
        if (context->e[i].counter > ceiling &&
            context->e[i].counter > vclock_get(&key, context->e[i].id)) {
            err = RK_ECONTEXT; /* forged: no write was ever that far ahead */
            goto out_deinit;
        }
    }
    if (vclock_get(context, actor) > vclock_get(&key, actor)) {
        err = RK_ECONTEXT;
        goto out_deinit;
    }
    for (size_t i = 0; i < context->n; i++) {
        unknown += vclock_get(&key, context->e[i].id) == 0;
    }
    /* actor_new: the context holds no counter of actor either (at most the key's, above) */
    if (unknown > max_siblings || key.n + unknown + actor_new > VCLOCK_ENTRIES_MAX) {
        err = RK_ECONTEXT;
    }

out_deinit:
    vclock_deinit(&key);
    return err;
}

/*
 * Raise hlc above the stamp of every sibling that clock supersedes, so a
 * write never loses, under LWW, to a version it replaced (the clock may have
 * refused a stamp far ahead of the wall, or not have heard of it).  The
 * stamp of actor's entry, set by record_write_clock(), follows.
 */
static int record_write_stamp(const struct record *r, const char *actor, struct vclock *clock,
                              uint64_t *hlc)
{
    uint64_t t = *hlc;

    for (size_t i = 0; i < r->n; i++) {
        if (r->s[i].hlc >= t && vclock_descends(clock, &r->s[i].clock)) {
            if (r->s[i].hlc == UINT64_MAX) {
                return RK_ERANGE;
            }
            t = r->s[i].hlc + 1;
        }
    }
    for (size_t i = 0; i < clock->n && t != *hlc; i++) {
        if (strcmp(clock->e[i].id, actor) == 0) {
            clock->e[i].stamp = t;
        }
    }
    *hlc = t;
    return 0;
}

/*
 * v = the new version, taking clock over (clock is left empty): its copy
 * would be thrown away.  Checks as sibling_set(); node is already checked.
 */
static int record_new_version(struct sibling *v, struct vclock *clock, uint64_t hlc,
                              const char *node, bool tombstone, const void *value, size_t len,
                              uint64_t expire_ms)
{
    size_t node_len = strlen(node);
    int err;

    assert((value != NULL || len == 0) && "record_write_local: NULL value with a non-zero length");
    if (tombstone && (len != 0 || expire_ms != 0)) {
        return RK_EINVAL;
    }
    if (len > RECORD_VALUE_MAX) {
        return RK_ETOOBIG;
    }
    err = record_dup_value(&v->value, value, len);
    if (err != 0) {
        return err;
    }
    vclock_deinit(&v->clock);
    v->clock = *clock;
    vclock_init(clock);
    v->hlc = hlc;
    memcpy(v->node, node, node_len + 1);
    v->tombstone = tombstone;
    v->value_len = len;
    v->expire_ms = expire_ms;
    return 0;
}

/* What a local write makes besides its clock: the new version's contents. */
struct record_contents {
    bool tombstone;
    const void *value;
    size_t len;
    uint64_t expire_ms;
};

/* record_write_local() and record_write_expiring(): build the version of c and apply it. */
static int record_write_version(struct record *r, const char *node, const char *actor, uint64_t hlc,
                                const struct vclock *context, const struct record_contents *c,
                                enum record_conflicts mode, size_t max_siblings,
                                struct sibling *out)
{
    struct vclock clock;
    struct sibling v;
    bool changed;
    int err;

    if (node == NULL || !ring_name_valid(node, strnlen(node, RING_NAME_MAX + 1)) || actor == NULL ||
        !ring_name_valid(actor, strnlen(actor, RING_NAME_MAX + 1))) {
        return RK_EINVAL;
    }
    err = context != NULL ? record_context_check(r, actor, hlc, context, max_siblings) : 0;
    if (err != 0) {
        return err;
    }
    vclock_init(&clock);
    sibling_init(&v);
    err = context != NULL ? vclock_copy(&clock, context) : record_context(r, &clock);
    if (err == 0) {
        err = record_write_clock(r, actor, hlc, &clock);
    }
    if (err == 0) {
        err = record_write_stamp(r, actor, &clock, &hlc);
    }
    if (err == 0 && mode == RECORD_SIBLINGS && context != NULL &&
        record_context_misses(r, context, &clock)) {
        err = RK_EMISMATCH;
    }
    if (err == 0) {
        err =
            record_new_version(&v, &clock, hlc, node, c->tombstone, c->value, c->len, c->expire_ms);
    }
    if (err == 0 && out == NULL && mode == RECORD_SIBLINGS) {
        /* nobody wants the version afterwards: r takes it without a copy */
        err = record_apply_siblings(r, &v, &v, max_siblings, &changed);
    } else if (err == 0) {
        err = record_apply(r, &v, mode, max_siblings, NULL);
    }
    if (err != 0 || out == NULL) {
        goto out_deinit;
    }
    sibling_deinit(out);
    *out = v;
    sibling_init(&v);

out_deinit:
    sibling_deinit(&v);
    vclock_deinit(&clock);
    return err;
}

int record_write_local(struct record *r, const char *node, const char *actor, uint64_t hlc,
                       const struct vclock *context, bool tombstone, const void *value, size_t len,
                       enum record_conflicts mode, size_t max_siblings, struct sibling *out)
{
    struct record_contents c = {tombstone, value, len, 0};

    return record_write_version(r, node, actor, hlc, context, &c, mode, max_siblings, out);
}

int record_write_expiring(struct record *r, const char *node, const char *actor, uint64_t hlc,
                          const struct vclock *context, const void *value, size_t len,
                          uint64_t expire_ms, enum record_conflicts mode, size_t max_siblings,
                          struct sibling *out)
{
    struct record_contents c = {false, value, len, expire_ms};

    return record_write_version(r, node, actor, hlc, context, &c, mode, max_siblings, out);
}

/* True when clock, in place of sibling i's, is concurrent with every other sibling. */
static bool record_prune_keeps_siblings(const struct record *r, size_t i,
                                        const struct vclock *clock)
{
    for (size_t j = 0; j < r->n; j++) {
        if (j != i && vclock_compare(clock, &r->s[j].clock) != VCLOCK_CONCURRENT) {
            return false;
        }
    }
    return true;
}

/*
 * Pruning makes a clock look older.  Beside a concurrent sibling that can
 * make it look covered by (or equal to) that sibling, and the next merge of
 * this record elsewhere would drop it.  So each clock is pruned in a copy,
 * and the copy replaces it only when it stays concurrent with every other
 * sibling; a clock left whole is only larger than necessary.  For the same
 * reason an allocation failure just leaves that clock unpruned.
 */
size_t record_prune(struct record *r, size_t keep, uint64_t now_ms, uint64_t min_age_ms)
{
    size_t dropped = 0;

    for (size_t i = 0; i < r->n; i++) {
        struct vclock c;
        size_t d;

        if (r->s[i].clock.n <= keep) {
            continue;
        }
        vclock_init(&c);
        if (vclock_copy(&c, &r->s[i].clock) != 0) {
            continue;
        }
        d = vclock_prune(&c, keep, now_ms, min_age_ms);
        if (d > 0 && record_prune_keeps_siblings(r, i, &c)) {
            vclock_deinit(&r->s[i].clock);
            r->s[i].clock = c;
            vclock_init(&c);
            dropped += d;
        }
        vclock_deinit(&c);
    }
    return dropped;
}

size_t sibling_encoded_size(const struct sibling *s)
{
    return vclock_encoded_size(&s->clock) + RECORD_SIBLING_FIXED_BYTES + strlen(s->node) +
           (s->expire_ms != 0 ? RECORD_EXPIRY_BYTES : 0) + s->value_len;
}

size_t record_encoded_size(const struct record *r)
{
    size_t size = RECORD_HEAD_BYTES;

    for (size_t i = 0; i < r->n; i++) {
        size += sibling_encoded_size(&r->s[i]);
    }
    return size;
}

size_t sibling_encode(const struct sibling *s, uint8_t *out)
{
    size_t node_len = strlen(s->node);
    uint8_t *p = out;

    assert(ring_name_valid(s->node, node_len) && "sibling_encode: invalid node id");
    assert(s->value_len <= RECORD_VALUE_MAX && "sibling_encode: value over RECORD_VALUE_MAX");
    assert((!s->tombstone || (s->value_len == 0 && s->expire_ms == 0)) &&
           "sibling_encode: tombstone with a value or an expiry");
    p += vclock_encode(&s->clock, p);
    p = bytes_put_be64(p, s->hlc);
    *p++ = (uint8_t)node_len;
    memcpy(p, s->node, node_len);
    p += node_len;
    *p++ = (uint8_t)((s->tombstone ? RECORD_SIBLING_TOMBSTONE : 0) |
                     (s->expire_ms != 0 ? RECORD_SIBLING_EXPIRES : 0));
    if (s->expire_ms != 0) {
        p = bytes_put_be64(p, s->expire_ms);
    }
    p = bytes_put_be32(p, (uint32_t)s->value_len);
    if (s->value_len > 0) {
        memcpy(p, s->value, s->value_len);
    }
    return (size_t)(p - out) + s->value_len;
}

size_t record_encode(const struct record *r, uint8_t *out)
{
    uint8_t *p = out;

    assert(r->n >= 1 && r->n <= RECORD_SIBLINGS_MAX &&
           "record_encode: sibling count outside 1 .. RECORD_SIBLINGS_MAX");
    *p++ = RECORD_FORMAT;
    *p++ = 0;
    *p++ = (uint8_t)(r->n >> 8);
    *p++ = (uint8_t)r->n;
    for (size_t i = 0; i < r->n; i++) {
        p += sibling_encode(&r->s[i], p);
    }
    return (size_t)(p - out);
}

/* Read hlc, node_len and the node id at buf[*pos..len) into s; advance *pos. */
static int sibling_decode_origin(const uint8_t *buf, size_t len, size_t *pos, struct sibling *s)
{
    size_t p = *pos;
    size_t node_len;

    if (len - p < 8 + 1) {
        return RK_ESYNTAX;
    }
    s->hlc = bytes_get_be64(&buf[p]);
    node_len = buf[p + 8];
    p += 8 + 1;
    /* ring_name_valid() bounds node_len by RING_NAME_MAX before the copy. */
    if (len - p < node_len || !ring_name_valid((const char *)&buf[p], node_len)) {
        return RK_ESYNTAX;
    }
    memcpy(s->node, &buf[p], node_len);
    s->node[node_len] = '\0';
    *pos = p + node_len;
    return 0;
}

/*
 * Read a sibling's sflags, its expiry when flagged and value_len at
 * buf[*pos..len), check them, and advance *pos to the value, which is
 * checked to fit in what is left.  RK_ESYNTAX (truncated, unknown flags, a
 * tombstone with a value or an expiry, an expiry of 0), RK_ETOOBIG (a
 * value over RECORD_VALUE_MAX).
 */
static int sibling_read_tail(const uint8_t *buf, size_t len, size_t *pos, bool *tombstone,
                             uint64_t *expire_ms, uint32_t *value_len)
{
    size_t p = *pos;
    uint8_t sflags;

    *expire_ms = 0;
    if (len - p < 1) {
        return RK_ESYNTAX;
    }
    sflags = buf[p++];
    if ((sflags & ~(RECORD_SIBLING_TOMBSTONE | RECORD_SIBLING_EXPIRES)) != 0 ||
        sflags == (RECORD_SIBLING_TOMBSTONE | RECORD_SIBLING_EXPIRES)) {
        return RK_ESYNTAX;
    }
    if ((sflags & RECORD_SIBLING_EXPIRES) != 0) {
        if (len - p < RECORD_EXPIRY_BYTES || (*expire_ms = bytes_get_be64(&buf[p])) == 0) {
            return RK_ESYNTAX;
        }
        p += RECORD_EXPIRY_BYTES;
    }
    if (len - p < 4) {
        return RK_ESYNTAX;
    }
    *value_len = bytes_get_be32(&buf[p]);
    p += 4;
    if (*value_len > RECORD_VALUE_MAX) {
        return RK_ETOOBIG;
    }
    *tombstone = (sflags & RECORD_SIBLING_TOMBSTONE) != 0;
    if ((*tombstone && *value_len != 0) || *value_len > len - p) {
        return RK_ESYNTAX;
    }
    *pos = p;
    return 0;
}

/*
 * Read the sibling's tail (sibling_read_tail()) and copy its value into s,
 * or with borrow point s at it in buf; advance *pos.
 */
static int sibling_decode_value(const uint8_t *buf, size_t len, size_t *pos, struct sibling *s,
                                bool borrow)
{
    size_t p = *pos;
    uint32_t value_len;
    uint64_t expire_ms;
    bool tombstone;
    int err = sibling_read_tail(buf, len, &p, &tombstone, &expire_ms, &value_len);

    if (err != 0) {
        return err;
    }
    if (borrow) {
        s->value = value_len > 0 ? (uint8_t *)&buf[p] : NULL; /* a view is read only */
    } else if ((err = record_dup_value(&s->value, &buf[p], value_len)) != 0) {
        return err;
    }
    s->tombstone = tombstone;
    s->expire_ms = expire_ms;
    s->value_len = value_len;
    *pos = p + value_len;
    return 0;
}

/* Where a view's clocks go (record_view()): the entries left of the caller's room. */
struct view_room {
    struct vclock_entry *e;
    size_t n;
};

/* Forget what a view's sibling borrows and free what it owns (a clock past the room). */
static void sibling_view_release(struct sibling *s)
{
    vclock_view_release(&s->clock);
    s->value = NULL;
    sibling_deinit(s);
}

/* sibling_decode(), or with room a view of the sibling (record_view()). */
static int sibling_decode_in(const uint8_t *buf, size_t len, size_t *used, struct sibling *s,
                             struct view_room *room)
{
    size_t pos = 0, took = 0;
    int err;

    if (room == NULL) {
        sibling_deinit(s);
        err = vclock_decode(buf, len, &pos, &s->clock);
    } else {
        sibling_init(s);
        err = vclock_decode_view(buf, len, &pos, &s->clock, room->e, room->n, &took);
        room->e += took;
        room->n -= took;
    }
    if (err == 0) {
        err = sibling_decode_origin(buf, len, &pos, s);
    }
    if (err == 0) {
        err = sibling_decode_value(buf, len, &pos, s, room != NULL);
    }
    if (err != 0) {
        goto out_release;
    }
    *used = pos;
    return 0;

out_release:
    if (room != NULL) {
        sibling_view_release(s);
    } else {
        sibling_deinit(s);
    }
    return err;
}

int sibling_decode(const uint8_t *buf, size_t len, size_t *used, struct sibling *s)
{
    return sibling_decode_in(buf, len, used, s, NULL);
}

/*
 * Check the record head and read its sibling count.  The format byte is
 * checked first, alone: a later format may have a different head, so an
 * unknown one is reported as such even when it is short.  The count is
 * checked against the bytes left before the caller allocates for it.
 */
static int record_decode_head(const uint8_t *buf, size_t len, size_t *n)
{
    if (len < 1) {
        return RK_ESYNTAX;
    }
    if (buf[0] != RECORD_FORMAT) {
        return RK_EMISMATCH;
    }
    if (len < RECORD_HEAD_BYTES || buf[1] != 0) {
        return RK_ESYNTAX;
    }
    *n = (size_t)buf[2] << 8 | buf[3];
    if (*n == 0) {
        return RK_ESYNTAX;
    }
    if (*n > RECORD_SIBLINGS_MAX) {
        return RK_ETOOBIG;
    }
    if (*n > (len - RECORD_HEAD_BYTES) / RECORD_SIBLING_MIN_BYTES) {
        return RK_ESYNTAX;
    }
    return 0;
}

void record_view_release(struct record *r)
{
    for (size_t i = 0; i < r->n; i++) {
        sibling_view_release(&r->s[i]);
    }
    r->n = 0;
}

/* record_decode(), or with room record_view(). */
static int record_decode_in(const uint8_t *buf, size_t len, struct record *r,
                            struct view_room *room)
{
    size_t n, used, pos = RECORD_HEAD_BYTES;
    int err;

    if (room != NULL) {
        record_view_release(r);
    }
    for (size_t i = 0; i < r->n; i++) {
        sibling_deinit(&r->s[i]);
    }
    r->n = 0;
    err = record_decode_head(buf, len, &n);
    if (err != 0) {
        record_deinit(r);
        return err;
    }
    /*
     * Zeroed siblings are initialised ones (record.h, vclock.h).  At least
     * RECORD_CAP_MIN, as record_reserve() would grow it to: a write applied
     * to the decoded record then needs no realloc.  An array r already has
     * is used again when it is large enough (a record decoded over and over).
     */
    if (r->s != NULL && r->cap >= n && r->cap >= RECORD_CAP_MIN) {
        memset(r->s, 0, r->cap * sizeof(*r->s));
    } else {
        free(r->s);
        r->cap = n < RECORD_CAP_MIN ? RECORD_CAP_MIN : n;
        r->s = calloc(r->cap, sizeof(*r->s));
        if (r->s == NULL) {
            r->cap = 0;
            return RK_ENOMEM;
        }
    }
    for (size_t i = 0; i < n; i++) {
        err = sibling_decode_in(&buf[pos], len - pos, &used, &r->s[i], room);
        if (err != 0) {
            goto out_deinit;
        }
        r->n++;
        pos += used;
    }
    if (pos != len) {
        err = RK_ESYNTAX;
        goto out_deinit;
    }
    return 0;

out_deinit:
    if (room != NULL) {
        record_view_release(r);
    }
    record_deinit(r);
    return err;
}

int record_decode(const uint8_t *buf, size_t len, struct record *r)
{
    return record_decode_in(buf, len, r, NULL);
}

int record_view(const uint8_t *buf, size_t len, struct record *r, struct vclock_entry *room,
                size_t room_n)
{
    struct view_room vr = {room, room_n};

    return record_decode_in(buf, len, r, &vr);
}

/* sibling_decode()'s checks of the sibling at buf[*pos..len), nothing kept; advance *pos. */
static int sibling_check(const uint8_t *buf, size_t len, size_t *pos)
{
    struct sibling origin; /* sibling_decode_origin() fills hlc and node alone */
    size_t p = *pos, used = 0;
    uint64_t expire_ms;
    uint32_t value_len;
    bool tombstone;
    int err = vclock_check(buf + p, len - p, &used);

    p += used;
    err = err ? err : sibling_decode_origin(buf, len, &p, &origin);
    err = err ? err : sibling_read_tail(buf, len, &p, &tombstone, &expire_ms, &value_len);
    if (err == 0) {
        *pos = p + value_len;
    }
    return err;
}

int record_check(const uint8_t *buf, size_t len)
{
    size_t n = 0, pos = RECORD_HEAD_BYTES;
    int err = record_decode_head(buf, len, &n);

    for (size_t i = 0; i < n && err == 0; i++) {
        err = sibling_check(buf, len, &pos);
    }
    return err != 0 || pos == len ? err : RK_ESYNTAX;
}

/* Skip len bytes of buf at *pos, or fail when fewer are left. */
static bool peek_skip(size_t len, size_t total, size_t *pos)
{
    if (total - *pos < len) {
        return false;
    }
    *pos += len;
    return true;
}

/* Walk one sibling's clock, hlc and node; *pos ends at its flags byte. */
static bool peek_sibling_head(const uint8_t *buf, size_t len, size_t *pos)
{
    size_t entries;

    if (!peek_skip(2, len, pos)) {
        return false;
    }
    entries = bytes_get_be16(buf + *pos - 2);
    for (size_t i = 0; i < entries; i++) {
        if (!peek_skip(1, len, pos) || !peek_skip(buf[*pos - 1] + 16u, len, pos)) {
            return false;
        }
    }
    return peek_skip(8, len, pos) && peek_skip(1, len, pos) && peek_skip(buf[*pos - 1], len, pos);
}

int record_peek_at(const uint8_t *buf, size_t len, uint64_t now_ms, size_t *n, bool *tombstone,
                   const uint8_t **value, size_t *value_len)
{
    size_t pos = RECORD_HEAD_BYTES, total;

    *n = 0;
    *value = NULL;
    *value_len = 0;
    *tombstone = false;
    if (len < 1) {
        return RK_ESYNTAX;
    }
    if (buf[0] != RECORD_FORMAT) {
        return RK_EMISMATCH;
    }
    if (len < RECORD_HEAD_BYTES || buf[1] != 0 || (total = bytes_get_be16(buf + 2)) == 0) {
        return RK_ESYNTAX;
    }
    for (size_t i = 0; i < total; i++) {
        uint64_t expire_ms;
        uint32_t vlen;
        bool tomb;
        int err;

        if (!peek_sibling_head(buf, len, &pos)) {
            return RK_ESYNTAX;
        }
        err = sibling_read_tail(buf, len, &pos, &tomb, &expire_ms, &vlen);
        if (err != 0) {
            return err;
        }
        if (expire_ms == 0 || expire_ms > now_ms) {
            if (++*n == 1) {
                *tombstone = tomb;
                *value = buf + pos;
                *value_len = vlen;
            }
        }
        pos += vlen;
    }
    if (pos != len) {
        return RK_ESYNTAX;
    }
    if (*n != 1) {
        *value = NULL;
        *value_len = 0;
        *tombstone = false;
    }
    return 0;
}

int record_peek(const uint8_t *buf, size_t len, size_t *n, bool *tombstone, const uint8_t **value,
                size_t *value_len)
{
    return record_peek_at(buf, len, 0, n, tombstone, value, value_len);
}

/* One sibling's encoding inside a canonical form being built. */
struct canon_part {
    const uint8_t *p;
    size_t len;
};

/* memcmp order of encodings, the shorter first when one is a prefix of the other. */
static int canon_part_cmp(const void *a, const void *b)
{
    const struct canon_part *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);

    if (c != 0) {
        return c;
    }
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Encode every sibling of r into enc and point parts[i] at the i-th. */
static void canon_parts(const struct record *r, uint8_t *enc, struct canon_part *parts)
{
    for (size_t i = 0; i < r->n; i++) {
        parts[i].p = enc;
        parts[i].len = sibling_encode(&r->s[i], enc);
        enc += parts[i].len;
    }
}

int record_canonical(const struct record *r, uint8_t **out, size_t *len)
{
    size_t body = 0, n = r->n;
    struct canon_part *parts = malloc((n ? n : 1) * sizeof(*parts));
    uint8_t *enc, *p;

    for (size_t i = 0; i < n; i++) {
        body += sibling_encoded_size(&r->s[i]);
    }
    enc = malloc(body ? body : 1);
    *out = malloc(4 + 4 * n + body);
    if (parts == NULL || enc == NULL || *out == NULL) {
        free(parts);
        free(enc);
        free(*out);
        *out = NULL;
        return RK_ENOMEM;
    }
    canon_parts(r, enc, parts);
    qsort(parts, n, sizeof(*parts), canon_part_cmp);
    p = bytes_put_be32(*out, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        p = bytes_put_be32(p, (uint32_t)parts[i].len);
        memcpy(p, parts[i].p, parts[i].len);
        p += parts[i].len;
    }
    *len = (size_t)(p - *out);
    free(parts);
    free(enc);
    return 0;
}
