/*
 * hcheck.c - the history checker (hcheck.h has the rules).
 *
 * Keys are checked one at a time, on arrays indexed like the key's ops:
 * which value is present, which op is evident, which accounted for.  Both
 * are fixpoints: start from the present values and the deletes of an
 * absent key (and, for accounted, the trusted ops), then mark every write
 * a marked kset's context held, until nothing changes.  Superseding is
 * tested in O(1) per op: an evident blind op supersedes W when its end is
 * at or after W's start, so only the largest end among the evident blind
 * ops (and the second largest, for W itself) matters; an accounted one
 * when it started after W ended, so only the latest start matters; the
 * kset rule marks the writes an accounted kset's context holds.  A delete
 * after the write (deleted()) is tested in O(log n) per write: the
 * accounted deletes sorted by end, each with the least start from there
 * on, and the ok reads sorted by start, each with the least limit from
 * there on, are built once per key in O(n log n).  Values are found by
 * binary search in the key's writes sorted by value.  The monotonic-read
 * check sweeps the reads in order of start, folding in each read that
 * ended before: the latest start of a blind write read so far, and which
 * writes the contexts read so far covered.
 */
#include "hcheck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define NONE SIZE_MAX

static const char *const hcheck_kind_names[] = {"lost",          "fail-present", "stale",
                                                "delete-undone", "foreign",      "not-monotonic"};

const char *hcheck_kind_name(enum hcheck_kind k)
{
    return hcheck_kind_names[k];
}

static int str_cmp(const struct history_str *a, const struct history_str *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n > 0 ? memcmp(a->p, b->p, n) : 0;

    return c != 0 ? c : (a->len > b->len) - (a->len < b->len);
}

/* --- grouping -------------------------------------------------------------------- */

struct sort_item {
    const struct history_str *s;
    size_t i;
};

static int sort_item_cmp(const void *a, const void *b)
{
    const struct sort_item *x = a, *y = b;
    int c = str_cmp(x->s, y->s);

    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

/* Sort the key's writes by value; RK_EDUP when two wrote the same. */
static int key_writes(struct hcheck *hc, struct hcheck_key *k, char *err, size_t err_len)
{
    struct sort_item *it = calloc(k->n_ops + 1, sizeof(*it));
    size_t n = 0;

    k->writes = calloc(k->n_ops + 1, sizeof(*k->writes));
    if (it == NULL || k->writes == NULL) {
        free(it);
        return RK_ENOMEM;
    }
    for (size_t l = 0; l < k->n_ops; l++) {
        const struct history_entry *e = &hc->h->e[k->ops[l]];
        if (history_is_write(e)) {
            it[n++] = (struct sort_item){&e->value, l};
        }
    }
    qsort(it, n, sizeof(*it), sort_item_cmp);
    for (size_t j = 0; j < n; j++) {
        if (j > 0 && str_cmp(it[j - 1].s, it[j].s) == 0) {
            snprintf(err, err_len, "lines %zu and %zu wrote the same value to one key",
                     hc->h->e[k->ops[it[j - 1].i]].line, hc->h->e[k->ops[it[j].i]].line);
            free(it);
            return RK_EDUP;
        }
        k->writes[j] = it[j].i;
    }
    k->n_writes = n;
    free(it);
    return 0;
}

/* Cut the entries sorted by key into keys. */
static int group_keys(struct hcheck *hc, const struct sort_item *it, size_t n)
{
    for (size_t j = 0; j < n;) {
        struct hcheck_key *k = &hc->keys[hc->n_keys++];
        size_t end = j + 1;
        while (end < n && str_cmp(it[j].s, it[end].s) == 0) {
            end++;
        }
        k->key = *it[j].s;
        k->ops = malloc((end - j) * sizeof(*k->ops));
        if (k->ops == NULL) {
            return RK_ENOMEM;
        }
        for (k->n_ops = 0; j < end; j++) {
            k->ops[k->n_ops++] = it[j].i;
        }
    }
    return 0;
}

int hcheck_init(struct hcheck *hc, const struct history *h, char *err, size_t err_len)
{
    struct sort_item *it = calloc(h->n + 1, sizeof(*it));
    int rc = 0;

    memset(hc, 0, sizeof(*hc));
    hc->h = h;
    hc->keys = calloc(h->n + 1, sizeof(*hc->keys));
    if (it == NULL || hc->keys == NULL) {
        free(it);
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < h->n; i++) {
        it[i] = (struct sort_item){&h->e[i].key, i};
    }
    qsort(it, h->n, sizeof(*it), sort_item_cmp);
    rc = group_keys(hc, it, h->n);
    for (size_t k = 0; rc == 0 && k < hc->n_keys; k++) {
        rc = key_writes(hc, &hc->keys[k], err, err_len);
    }
    if (rc == RK_ENOMEM) {
        snprintf(err, err_len, "out of memory");
    }
    free(it);
    return rc;
}

int hcheck_set_final(struct hcheck *hc, size_t k, const struct history_str *values, size_t n)
{
    struct hcheck_key *key = &hc->keys[k];

    key->final = calloc(n + 1, sizeof(*key->final));
    if (key->final == NULL) {
        return RK_ENOMEM;
    }
    for (key->n_final = 0; key->n_final < n; key->n_final++) {
        struct history_str *d = &key->final[key->n_final];
        d->p = malloc(values[key->n_final].len + 1);
        if (d->p == NULL) {
            return RK_ENOMEM;
        }
        memcpy(d->p, values[key->n_final].p, values[key->n_final].len);
        d->len = values[key->n_final].len;
    }
    return 0;
}

void hcheck_free(struct hcheck *hc)
{
    for (size_t k = 0; hc->keys != NULL && k < hc->n_keys; k++) {
        for (size_t i = 0; i < hc->keys[k].n_final; i++) {
            free(hc->keys[k].final[i].p);
        }
        free(hc->keys[k].final);
        free(hc->keys[k].ops);
        free(hc->keys[k].writes);
    }
    free(hc->keys);
    free(hc->v);
    memset(hc, 0, sizeof(*hc));
}

/* --- one key --------------------------------------------------------------------- */

/* A time, and a value folded over it and every later one (deleted()). */
struct span {
    uint64_t at, v;
};

/* The state of checking one key; arrays are indexed like key->ops. */
struct kcheck {
    struct hcheck *hc;
    size_t ki;
    const struct hcheck_key *k;
    const struct hcheck_opts *o;
    bool *present, *acc, *ev;
    size_t *covered; /* by an accounted kset: its local index, or NONE */
    size_t top[2];   /* the evident blind ops with the largest ends, or NONE */
    size_t after;    /* the accounted blind op with the latest start, or NONE */
    /* For a delete after the write (deleted()): */
    uint64_t *seen;    /* the latest start of an ok read that returned the op's value */
    struct span *dels; /* the accounted deletes: end_x, then the least start from there on */
    struct span *obs;  /* the ok reads: start, then the least limit from there on */
    size_t n_dels, n_obs;
    uint64_t final_limit; /* the least end_x of a present value's write (UINT64_MAX: none) */
};

static const struct history_entry *op_at(const struct kcheck *c, size_t l)
{
    return &c->hc->h->e[c->k->ops[l]];
}

/* When an op may have taken effect until: never known for unknown. */
static uint64_t end_x(const struct history_entry *e)
{
    return e->outcome == HISTORY_UNKNOWN ? UINT64_MAX : e->end;
}

static bool trusted(const struct kcheck *c, const struct history_entry *e)
{
    return e->outcome == HISTORY_OK && (!c->o->loss_bound || e->end < c->o->loss_after_us);
}

/* Whether e supersedes as a blind op: blind, or any kset under lww (hcheck_opts). */
static bool blind(const struct kcheck *c, const struct history_entry *e)
{
    return history_is_blind(e) || (c->o->lww && e->op == HISTORY_KSET);
}

/* The local index of the write of value v, or NONE. */
static size_t find_write(const struct kcheck *c, const struct history_str *v)
{
    size_t lo = 0, hi = c->k->n_writes;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int cmp = str_cmp(&op_at(c, c->k->writes[mid])->value, v);
        if (cmp == 0) {
            return c->k->writes[mid];
        }
        if (cmp < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return NONE;
}

static int violation(struct kcheck *c, enum hcheck_kind kind, size_t l, size_t other,
                     const struct history_str *value)
{
    struct hcheck *hc = c->hc;

    if (hc->n_v == hc->cap_v) {
        size_t cap = hc->cap_v ? 2 * hc->cap_v : 16;
        struct hcheck_violation *v = realloc(hc->v, cap * sizeof(*v));
        if (v == NULL) {
            return RK_ENOMEM;
        }
        hc->v = v;
        hc->cap_v = cap;
    }
    hc->v[hc->n_v++] = (struct hcheck_violation){kind, c->ki, l == NONE ? NONE : c->k->ops[l],
                                                 other == NONE ? NONE : c->k->ops[other], value};
    return 0;
}

/* Mark the present values; a value no write wrote is a violation. */
static int mark_present(struct kcheck *c)
{
    int rc = 0;

    for (size_t i = 0; rc == 0 && i < c->k->n_final; i++) {
        size_t l = find_write(c, &c->k->final[i]);
        if (l == NONE) {
            rc = violation(c, HCHECK_FOREIGN, NONE, NONE, &c->k->final[i]);
        } else {
            c->present[l] = true;
        }
    }
    return rc;
}

/*
 * Does another op supersede op l?  Covered by an accounted kset's context;
 * or an evident blind op (end_x) did not end before l started; or an
 * accounted blind op started after l ended, so it certainly took effect
 * after l.  Only evident ops may supersede by mere overlap: two concurrent
 * acknowledged writes that are both absent would otherwise each account
 * for the other, and neither loss would be seen.
 */
static bool superseded(const struct kcheck *c, size_t l)
{
    size_t t = c->top[0] == l ? c->top[1] : c->top[0];

    return c->covered[l] != NONE || (t != NONE && end_x(op_at(c, t)) >= op_at(c, l)->start) ||
           (c->after != NONE && op_at(c, c->after)->start > op_at(c, l)->end);
}

/* Recompute covered[] from the ops marked in acc. */
static void fold_covered(struct kcheck *c, const bool *acc)
{
    for (size_t l = 0; l < c->k->n_ops; l++) {
        c->covered[l] = NONE;
    }
    for (size_t l = 0; l < c->k->n_ops; l++) {
        const struct history_entry *e = op_at(c, l);
        for (size_t i = 0; acc[l] && e->op == HISTORY_KSET && i < e->n_context; i++) {
            size_t w = find_write(c, &e->context[i]);
            if (w != NONE && w != l) {
                c->covered[w] = l;
            }
        }
    }
}

/* top[] from the evident blind ops (largest end_x), after from the accounted (latest start). */
static void fold_blind(struct kcheck *c)
{
    c->top[0] = c->top[1] = c->after = NONE;
    for (size_t l = 0; l < c->k->n_ops; l++) {
        const struct history_entry *e = op_at(c, l);
        if (!blind(c, e)) {
            continue;
        }
        if (c->acc[l] && (c->after == NONE || e->start > op_at(c, c->after)->start)) {
            c->after = l;
        }
        if (!c->ev[l]) {
            continue;
        }
        if (c->top[0] == NONE || end_x(e) > end_x(op_at(c, c->top[0]))) {
            c->top[1] = c->top[0];
            c->top[0] = l;
        } else if (c->top[1] == NONE || end_x(e) > end_x(op_at(c, c->top[1]))) {
            c->top[1] = l;
        }
    }
}

/*
 * The fixpoint of "accounted for" into out (the file's comment), from the
 * evidence of the final state and, when with_trusted, the trusted ops.
 * Only contexts carry it from op to op: a KGET saw the value, so it took
 * effect.  An unknown op that a later blind op could have overwritten is
 * not thereby shown to have taken effect, and would add nothing anyway:
 * whatever overwrote it after W overwrote W too.
 */
static void account(struct kcheck *c, bool *out, bool with_trusted)
{
    bool changed = true;

    for (size_t l = 0; l < c->k->n_ops; l++) {
        const struct history_entry *e = op_at(c, l);
        bool mutation = history_is_write(e) || e->op == HISTORY_DEL;
        out[l] = mutation &&
                 (c->present[l] || (with_trusted && trusted(c, e)) ||
                  (e->op == HISTORY_DEL && c->k->n_final == 0 && e->outcome != HISTORY_FAIL));
    }
    while (changed) {
        changed = false;
        fold_covered(c, out);
        for (size_t l = 0; l < c->k->n_ops; l++) {
            if (!out[l] && c->covered[l] != NONE && op_at(c, l)->outcome != HISTORY_FAIL) {
                out[l] = changed = true;
            }
        }
    }
}

/* Both fixpoints, then what superseded() reads. */
static void account_all(struct kcheck *c)
{
    account(c, c->ev, false);
    account(c, c->acc, true);
    fold_blind(c);
}

/* The values an ok read returned. */
static const struct history_str *read_values(const struct history_entry *e, size_t *n)
{
    if (e->op == HISTORY_KGET) {
        *n = e->n_values;
        return e->values;
    }
    *n = e->has_value ? 1 : 0;
    return &e->value;
}

static bool is_ok_read(const struct history_entry *e)
{
    return (e->op == HISTORY_GET || e->op == HISTORY_KGET) && e->outcome == HISTORY_OK;
}

/* --- a delete after the write (hcheck.h) ------------------------------------------ */

static uint64_t max_u64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static int span_cmp(const void *a, const void *b)
{
    const struct span *x = a, *y = b;

    return (x->at > y->at) - (x->at < y->at);
}

/* The first of s[0..n), sorted by at, whose at is at or after t (strictly after: > t), or n. */
static size_t span_from(const struct span *s, size_t n, uint64_t t, bool strictly)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].at < t || (strictly && s[mid].at == t)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/*
 * A read's limit, for a read that returned v[0..n) and ended at end: the
 * latest time a delete may have acted and still be before it and before
 * the writes of everything it returned, the least of end and those
 * writes' end_x.  0 when the read cannot be placed at all: it returned a
 * value no write wrote, or one whose write started after the read ended.
 */
static uint64_t read_limit(const struct kcheck *c, const struct history_str *v, size_t n,
                           uint64_t end)
{
    uint64_t limit = end;

    for (size_t i = 0; i < n; i++) {
        size_t w = find_write(c, &v[i]);
        if (w == NONE || op_at(c, w)->start > end) {
            return 0;
        }
        limit = min_u64(limit, end_x(op_at(c, w)));
    }
    return limit;
}

/*
 * What deleted() reads, once acc is known: seen[] from the ok reads, the
 * accounted deletes by end_x (each with the least start of it and those
 * ending later), the ok reads as observations by start (each with the
 * least limit of it and those starting later), the final state's limit.
 */
static int fold_deletes(struct kcheck *c)
{
    size_t n = c->k->n_ops;

    c->seen = calloc(n + 1, sizeof(*c->seen));
    c->dels = calloc(n + 1, sizeof(*c->dels));
    c->obs = calloc(n + 1, sizeof(*c->obs));
    if (c->seen == NULL || c->dels == NULL || c->obs == NULL) {
        return RK_ENOMEM;
    }
    c->final_limit = UINT64_MAX;
    for (size_t l = 0; l < n; l++) {
        const struct history_entry *e = op_at(c, l);
        const struct history_str *v;
        size_t nv;
        if (c->present[l]) {
            c->final_limit = min_u64(c->final_limit, end_x(e));
        }
        if (e->op == HISTORY_DEL && c->acc[l]) {
            c->dels[c->n_dels++] = (struct span){end_x(e), e->start};
        }
        if (!is_ok_read(e)) {
            continue;
        }
        v = read_values(e, &nv);
        for (size_t i = 0; i < nv; i++) {
            size_t w = find_write(c, &v[i]);
            if (w != NONE) {
                c->seen[w] = max_u64(c->seen[w], e->start);
            }
        }
        c->obs[c->n_obs++] = (struct span){e->start, read_limit(c, v, nv, e->end)};
    }
    qsort(c->dels, c->n_dels, sizeof(*c->dels), span_cmp);
    qsort(c->obs, c->n_obs, sizeof(*c->obs), span_cmp);
    for (size_t i = c->n_dels; i > 1; i--) {
        c->dels[i - 2].v = min_u64(c->dels[i - 2].v, c->dels[i - 1].v);
    }
    for (size_t i = c->n_obs; i > 1; i--) {
        c->obs[i - 2].v = min_u64(c->obs[i - 2].v, c->obs[i - 1].v);
    }
    return 0;
}

/*
 * Was write l deleted, and read gone after (hcheck.h)?  The earliest the
 * delete can act is t: after l started, after every ok read of l started,
 * after the delete started.  Of the deletes that did not end before l's
 * start and its reads', the one with the least start does best; every
 * read that started after l ended and after its reads started must be
 * after it, and the final state.  O(log n) from fold_deletes().
 */
static bool deleted(const struct kcheck *c, size_t l)
{
    const struct history_entry *w = op_at(c, l);
    uint64_t t = max_u64(w->start, c->seen[l]);
    size_t d = span_from(c->dels, c->n_dels, t, false);
    size_t o = span_from(c->obs, c->n_obs, max_u64(w->end, c->seen[l]), true);

    if (d == c->n_dels || o == c->n_obs) {
        return false;
    }
    t = max_u64(t, c->dels[d].v);
    return t <= c->obs[o].v && t <= c->final_limit;
}

/* Count op l and report it when it is lost or a present fail. */
static int classify(struct kcheck *c, size_t l)
{
    const struct history_entry *e = op_at(c, l);
    struct hcheck_counts *n = &c->hc->counts;

    if (e->outcome == HISTORY_UNKNOWN && (history_is_write(e) || e->op == HISTORY_DEL)) {
        n->unknown++;
        n->unknown_present += c->present[l];
    }
    if (e->op == HISTORY_DEL) {
        n->deletes_ok += e->outcome == HISTORY_OK;
        return 0;
    }
    if (!history_is_write(e) || e->outcome == HISTORY_UNKNOWN) {
        return 0;
    }
    if (e->outcome == HISTORY_FAIL) {
        n->fail++;
        n->fail_present += c->present[l];
        return c->present[l] ? violation(c, HCHECK_FAIL_PRESENT, l, NONE, &e->value) : 0;
    }
    n->writes_ok++;
    n->last_ok_write_end = e->end > n->last_ok_write_end ? e->end : n->last_ok_write_end;
    if (c->present[l]) {
        n->present++;
    } else if (superseded(c, l) || deleted(c, l)) {
        n->superseded++;
    } else if (c->o->loss_bound && e->end >= c->o->loss_after_us) {
        n->lost_allowed++;
    } else {
        n->lost++;
        return violation(c, HCHECK_LOST, l, NONE, &e->value);
    }
    return 0;
}

/*
 * A present value that a trusted op overwrote: a blind one that started
 * after its write ended (the latest-starting one is the witness), or a
 * kset whose context held it.
 */
static int check_stale(struct kcheck *c)
{
    size_t last = NONE;
    int rc = 0;

    for (size_t l = 0; l < c->k->n_ops; l++) {
        const struct history_entry *e = op_at(c, l);
        if (blind(c, e) && trusted(c, e) && (last == NONE || e->start > op_at(c, last)->start)) {
            last = l;
        }
    }
    for (size_t l = 0; rc == 0 && l < c->k->n_ops; l++) {
        const struct history_entry *e = op_at(c, l);
        size_t by = NONE;
        if (!c->present[l]) {
            continue;
        }
        if (last != NONE && op_at(c, last)->start > end_x(e)) {
            by = last;
        }
        for (size_t j = 0; by == NONE && j < c->k->n_ops; j++) {
            const struct history_entry *y = op_at(c, j);
            for (size_t i = 0; y->op == HISTORY_KSET && trusted(c, y) && i < y->n_context; i++) {
                by = str_cmp(&y->context[i], &e->value) == 0 ? j : by;
            }
        }
        if (by != NONE) {
            enum hcheck_kind kind =
                op_at(c, by)->op == HISTORY_DEL ? HCHECK_DELETE_UNDONE : HCHECK_STALE;
            rc = violation(c, kind, l, by, &e->value);
        }
    }
    return rc;
}

/* --- monotonic reads ------------------------------------------------------------- */

/* What the reads folded in so far returned. */
struct seen {
    uint64_t max_start; /* the latest start of a blind write read */
    size_t by;          /* the read that returned it, or NONE */
};

/* Fold read r into s and c->covered (reused here: the read whose context covered a write). */
static void fold_read(struct kcheck *c, struct seen *s, size_t r)
{
    size_t n;
    const struct history_str *v = read_values(op_at(c, r), &n);

    for (size_t i = 0; i < n; i++) {
        size_t w = find_write(c, &v[i]);
        const struct history_entry *e = w == NONE ? NULL : op_at(c, w);
        if (e != NULL && blind(c, e) && (s->by == NONE || e->start > s->max_start)) {
            s->max_start = e->start;
            s->by = r;
        }
        for (size_t j = 0; e != NULL && e->op == HISTORY_KSET && j < e->n_context; j++) {
            size_t cw = find_write(c, &e->context[j]);
            if (cw != NONE && c->covered[cw] == NONE) {
                c->covered[cw] = r;
            }
        }
    }
}

/* Check read r against what the reads that ended before it started returned. */
static int check_read(struct kcheck *c, const struct seen *s, size_t r)
{
    size_t n;
    const struct history_str *v = read_values(op_at(c, r), &n);

    c->hc->counts.reads_checked++;
    for (size_t i = 0; i < n; i++) {
        size_t w = find_write(c, &v[i]);
        if (w == NONE) {
            return violation(c, HCHECK_FOREIGN, r, NONE, &v[i]);
        }
        if (op_at(c, w)->outcome == HISTORY_FAIL) { /* read, so it was applied */
            return violation(c, HCHECK_FAIL_PRESENT, w, r, &v[i]);
        }
        if (!c->o->monotonic) {
            continue;
        }
        if (s->by != NONE && end_x(op_at(c, w)) < s->max_start) {
            return violation(c, HCHECK_NOT_MONOTONIC, r, s->by, &v[i]);
        }
        if (c->covered[w] != NONE) {
            return violation(c, HCHECK_NOT_MONOTONIC, r, c->covered[w], &v[i]);
        }
    }
    return 0;
}

static const struct kcheck *sort_ctx;

static int by_start(const void *a, const void *b)
{
    uint64_t x = op_at(sort_ctx, *(const size_t *)a)->start;
    uint64_t y = op_at(sort_ctx, *(const size_t *)b)->start;

    return (x > y) - (x < y);
}

static int by_end(const void *a, const void *b)
{
    uint64_t x = op_at(sort_ctx, *(const size_t *)a)->end;
    uint64_t y = op_at(sort_ctx, *(const size_t *)b)->end;

    return (x > y) - (x < y);
}

/* The sweep over the key's ok reads (the file's comment). */
static int check_reads(struct kcheck *c)
{
    size_t *starts = calloc(c->k->n_ops + 1, sizeof(*starts));
    size_t *ends = calloc(c->k->n_ops + 1, sizeof(*ends));
    struct seen s = {0, NONE};
    size_t n = 0, folded = 0;
    int rc = 0;

    if (starts == NULL || ends == NULL) {
        rc = RK_ENOMEM;
        goto out_free;
    }
    for (size_t l = 0; l < c->k->n_ops; l++) {
        c->covered[l] = NONE;
        if (is_ok_read(op_at(c, l))) {
            starts[n] = ends[n] = l;
            n++;
        }
    }
    sort_ctx = c;
    qsort(starts, n, sizeof(*starts), by_start);
    qsort(ends, n, sizeof(*ends), by_end);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        while (folded < n && op_at(c, ends[folded])->end < op_at(c, starts[i])->start) {
            fold_read(c, &s, ends[folded++]);
        }
        rc = check_read(c, &s, starts[i]);
    }
out_free:
    free(starts);
    free(ends);
    return rc;
}

/* --- the whole history ----------------------------------------------------------- */

static int check_key(struct hcheck *hc, size_t ki, const struct hcheck_opts *o)
{
    const struct hcheck_key *k = &hc->keys[ki];
    struct kcheck c = {.hc = hc, .ki = ki, .k = k, .o = o, .top = {NONE, NONE}, .after = NONE};
    int rc = RK_ENOMEM;

    c.present = calloc(k->n_ops + 1, sizeof(*c.present));
    c.acc = calloc(k->n_ops + 1, sizeof(*c.acc));
    c.ev = calloc(k->n_ops + 1, sizeof(*c.ev));
    c.covered = calloc(k->n_ops + 1, sizeof(*c.covered));
    if (c.present == NULL || c.acc == NULL || c.ev == NULL || c.covered == NULL) {
        goto out_free;
    }
    rc = mark_present(&c);
    if (rc == 0) {
        account_all(&c);
        rc = fold_deletes(&c);
    }
    for (size_t l = 0; rc == 0 && l < k->n_ops; l++) {
        rc = classify(&c, l);
    }
    rc = rc ? rc : check_stale(&c);
    rc = rc ? rc : check_reads(&c);
out_free:
    free(c.present);
    free(c.acc);
    free(c.ev);
    free(c.covered);
    free(c.seen);
    free(c.dels);
    free(c.obs);
    return rc;
}

int hcheck_run(struct hcheck *hc, const struct hcheck_opts *o)
{
    int rc = 0;

    memset(&hc->counts, 0, sizeof(hc->counts));
    hc->n_v = 0;
    hc->counts.keys = hc->n_keys;
    for (size_t k = 0; rc == 0 && k < hc->n_keys; k++) {
        rc = check_key(hc, k, o);
    }
    return rc;
}
