/*
 * preflist.c - a key's replicas with their up/down state and, under a
 * sloppy quorum, the fallbacks standing for the down ones (preflist.h
 * states the rules).
 *
 * Two paths.  The fast one (every replica up, or !sloppy, and !explain)
 * reads the ring's precomputed preference row and asks up about each
 * replica: no walk, no allocation.  The other one runs the section-5 walk
 * through ring_preflist_walk(), whose step callback tells where the walk
 * stopped and, for explain, why each token was skipped; then the fallback
 * walk continues from the next token.
 *
 * Per-member flags (one byte per ring member, slow path only) remember what
 * the walks learnt: whether up was asked and what it said, whether the
 * member is in nodes[], whether the section-5 walk chose it, and which skip
 * reasons were already recorded for it in the current walk.  The fallback
 * walk uses the RACK_USED bit as "already set aside", with or without
 * explain.
 */
#include "preflist.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

#define F_UP_KNOWN 0x01u
#define F_UP 0x02u
#define F_LISTED 0x04u
#define F_CHOSEN 0x08u
#define F_REASON(reason) (0x10u << (reason))
#define F_REASONS 0xf0u

/* The state of one slow-path build. */
struct walk {
    const struct ring *r;
    struct preflist *p;
    preflist_up_fn up;
    void *ctx;
    bool explain;
    int rc;                             /* the first error met inside a step callback */
    uint8_t *flags;                     /* per member, F_* */
    size_t cap;                         /* capacity of p->skips */
    size_t last;                        /* token of the section-5 walk's last visiting step */
    uint32_t *aside;                    /* fallback walk: members set aside, in the order met */
    size_t n_aside;                     /* entries in aside */
    size_t aside_next;                  /* aside[aside_next ..) not taken yet */
    size_t steps;                       /* fallback walk: tokens visited so far */
    const char *racks[2 * RING_RF_MAX]; /* racks of up replicas and fallbacks */
    size_t n_racks;
};

const char *preflist_role_name(enum preflist_role role)
{
    static const char *const names[] = {"primary", "replica", "fallback"};
    return (unsigned)role < 3 ? names[role] : "?";
}

const char *preflist_skip_name(enum preflist_skip_reason reason)
{
    static const char *const names[] = {"same_node", "rack_used", "down", "used"};
    return (unsigned)reason < 4 ? names[reason] : "?";
}

void preflist_free(struct preflist *p)
{
    if (p == NULL) {
        return;
    }
    free(p->skips);
    p->skips = NULL;
    p->n_skips = 0;
}

/* Whether m is up, asking up at most once per member. */
static bool member_up(struct walk *w, uint32_t m)
{
    if (!(w->flags[m] & F_UP_KNOWN)) {
        bool up = w->up == NULL || w->up(w->ctx, m);
        w->flags[m] |= F_UP_KNOWN | (up ? F_UP : 0);
    }
    return (w->flags[m] & F_UP) != 0;
}

/*
 * Note that token t's node m was skipped for reason: once per member and
 * reason in a walk (preflist.h), appended to the skips only for explain.
 */
static void skip_add(struct walk *w, size_t t, uint32_t m, enum preflist_skip_reason reason)
{
    struct preflist *p = w->p;

    if (w->flags[m] & F_REASON(reason)) {
        return;
    }
    w->flags[m] |= F_REASON(reason);
    if (!w->explain || w->rc != 0) {
        return;
    }
    if (grow_array(&p->skips, &w->cap, p->n_skips + 1, sizeof(*p->skips)) != 0) {
        w->rc = RK_ENOMEM;
        return;
    }
    p->skips[p->n_skips++] =
        (struct preflist_skip){.token = t, .member = m, .reason = reason, .replaced_by = -1};
}

/* The replica index of member m, or -1. */
static int replica_of(const struct preflist *p, uint32_t m)
{
    for (size_t i = 0; i < p->n_replicas; i++) {
        if (p->nodes[i].member == m) {
            return (int)i;
        }
    }
    return -1;
}

/* ring_step_fn of the section-5 walk: where it stopped, and why it skipped. */
static void walk_step(void *ctx, enum ring_step step, size_t token, uint32_t m)
{
    struct walk *w = ctx;
    int i;

    if (step == RING_STEP_APPENDED) {
        /* Taken after all: its set-aside skip is dropped; a down one is still down. */
        i = replica_of(w->p, m);
        if (i >= 0 && !w->p->nodes[i].up) {
            skip_add(w, token, m, PREFLIST_SKIP_DOWN);
        }
        return;
    }
    w->last = token;
    switch (step) {
    case RING_STEP_CHOSEN:
        w->flags[m] |= F_CHOSEN;
        i = replica_of(w->p, m);
        if (i >= 0 && !w->p->nodes[i].up) {
            skip_add(w, token, m, PREFLIST_SKIP_DOWN);
        }
        break;
    case RING_STEP_SEEN:
        skip_add(w, token, m,
                 (w->flags[m] & F_CHOSEN) ? PREFLIST_SKIP_SAME_NODE : PREFLIST_SKIP_RACK_USED);
        break;
    default:
        skip_add(w, token, m, PREFLIST_SKIP_RACK_USED);
        break;
    }
}

/* Drop the RACK_USED skips from index from on whose node was taken later after all. */
static void skips_drop_taken(struct walk *w, size_t from)
{
    struct preflist *p = w->p;
    size_t k = from;

    for (size_t j = from; j < p->n_skips; j++) {
        if (p->skips[j].reason != PREFLIST_SKIP_RACK_USED ||
            !(w->flags[p->skips[j].member] & F_LISTED)) {
            p->skips[k++] = p->skips[j];
        }
    }
    p->n_skips = k;
}

/* Whether rack is free of up replicas and of the fallbacks chosen so far. */
static bool rack_free(const struct walk *w, const char *rack)
{
    for (size_t i = 0; i < w->n_racks; i++) {
        if (strcmp(w->racks[i], rack) == 0) {
            return false;
        }
    }
    return true;
}

/* Make m the fallback of down replica i. */
static void fallback_take(struct walk *w, size_t i, uint32_t m)
{
    struct preflist *p = w->p;

    p->nodes[p->n++] = (struct preflist_node){
        .member = m, .role = PREFLIST_FALLBACK, .up = true, .stands_for = (int)i};
    w->flags[m] |= F_LISTED;
    w->racks[w->n_racks++] = ring_member_rack(w->r, m);
}

/*
 * Find the fallback of down replica i: continue the fallback walk to the
 * next rack-distinct candidate, setting the others aside; when the walk is
 * over, the first candidate set aside and not taken yet; else none.
 */
static void fallback_find(struct walk *w, size_t i)
{
    size_t n_tokens = ring_token_count(w->r);

    while (w->steps < n_tokens) {
        size_t t = (w->last + 1 + w->steps++) % n_tokens;
        uint32_t m = ring_token_at(w->r, t).member;
        if (w->flags[m] & F_LISTED) {
            skip_add(w, t, m, PREFLIST_SKIP_USED);
        } else if (!member_up(w, m)) {
            skip_add(w, t, m, PREFLIST_SKIP_DOWN);
        } else if (rack_free(w, ring_member_rack(w->r, m))) {
            fallback_take(w, i, m);
            return;
        } else if (!(w->flags[m] & F_REASON(PREFLIST_SKIP_RACK_USED))) {
            w->aside[w->n_aside++] = m;
            skip_add(w, t, m, PREFLIST_SKIP_RACK_USED);
        }
    }
    if (w->aside_next < w->n_aside) {
        fallback_take(w, i, w->aside[w->aside_next++]);
    }
}

/* The fallback walk: one fallback per down replica where a candidate is left. */
static int fallback_walk(struct walk *w)
{
    struct preflist *p = w->p;
    size_t n_members = ring_member_count(w->r), from = p->n_skips;

    w->aside = malloc(n_members * sizeof(*w->aside));
    if (w->aside == NULL) {
        return RK_ENOMEM;
    }
    for (size_t m = 0; m < n_members; m++) {
        w->flags[m] &= (uint8_t)~F_REASONS;
    }
    for (size_t i = 0; i < p->n_replicas; i++) {
        if (p->nodes[i].up) {
            w->racks[w->n_racks++] = ring_member_rack(w->r, p->nodes[i].member);
        }
    }
    for (size_t i = 0; i < p->n_replicas; i++) {
        if (!p->nodes[i].up) {
            fallback_find(w, i);
        }
    }
    skips_drop_taken(w, from);
    return w->rc;
}

/* Point every down replica's DOWN skip at its fallback. */
static void skips_link_fallbacks(struct preflist *p, size_t end)
{
    for (size_t j = 0; j < end; j++) {
        int i = p->skips[j].reason == PREFLIST_SKIP_DOWN ? replica_of(p, p->skips[j].member) : -1;
        for (size_t f = p->n_replicas; i >= 0 && f < p->n; f++) {
            if (p->nodes[f].stands_for == i) {
                p->skips[j].replaced_by = (int)f;
            }
        }
    }
}

/* The slow path: the section-5 walk, then fallbacks when sloppy. */
static int build_slow(struct walk *w, unsigned rf, bool sloppy, bool any_down)
{
    struct preflist *p = w->p;
    uint32_t list[RING_RF_MAX];
    size_t n, phase1;
    int rc;

    w->flags = calloc(ring_member_count(w->r), 1);
    if (w->flags == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < p->n_replicas; i++) {
        w->flags[p->nodes[i].member] |= F_UP_KNOWN | F_LISTED | (p->nodes[i].up ? F_UP : 0);
    }
    rc = ring_preflist_walk(w->r, p->pos, rf, list, &n, walk_step, w);
    rc = rc != 0 ? rc : w->rc;
    if (rc != 0) {
        return rc;
    }
    skips_drop_taken(w, 0);
    phase1 = p->n_skips;
    if (sloppy && any_down) {
        rc = fallback_walk(w);
    }
    skips_link_fallbacks(p, phase1);
    return rc;
}

int preflist_build(const struct ring *r, uint64_t pos, unsigned rf, bool sloppy, preflist_up_fn up,
                   void *ctx, bool explain, struct preflist *out)
{
    uint32_t list[RING_RF_MAX];
    size_t n;
    bool any_down = false;
    struct walk w;
    int rc;

    out->skips = NULL;
    out->n_skips = 0;
    rc = ring_preflist(r, pos, rf, list, &n);
    if (rc != 0) {
        return rc;
    }
    out->owner_token = 0;
    if (explain) {
        ring_owner_token(r, pos, &out->owner_token, NULL); /* shown, never used to place */
    }
    out->pos = pos;
    out->n_replicas = n;
    out->n = n;
    for (size_t i = 0; i < n; i++) {
        bool is_up = up == NULL || up(ctx, list[i]);
        out->nodes[i] = (struct preflist_node){
            .member = list[i],
            .role = i == 0 ? PREFLIST_PRIMARY : PREFLIST_REPLICA,
            .up = is_up,
            .stands_for = -1,
        };
        any_down |= !is_up;
    }
    if (!explain && !(sloppy && any_down)) {
        return 0;
    }
    w = (struct walk){.r = r, .p = out, .up = up, .ctx = ctx, .explain = explain};
    rc = build_slow(&w, rf, sloppy, any_down);
    free(w.flags);
    free(w.aside);
    if (rc != 0) {
        preflist_free(out);
        out->n = out->n_replicas;
    }
    return rc;
}
