/*
 * sim.c - the placement simulator (sim.h): balance and movement of the
 * PLACEMENT.md ring and of four textbook schemes it is taught against.
 *
 * Worlds
 *   A simulation places keys in three worlds built from one member array
 *   (sim_members_init): the cluster node-1 .. node-N, the join node-1 ..
 *   node-(N+1) and the removal node-1 .. node-(N-1).  Removing node-N, the
 *   last node, for every scheme is deliberate: it is the only removal jump
 *   consistent hash supports (buckets can only be taken off the end), so all
 *   five schemes are measured on the same event.  For the ring any node is
 *   statistically alike, and averaging over seeds averages over its position.
 *
 * The ring (exact)
 *   Balance is ring_ownership(rf 1) and replica load ring_ownership(rf), both
 *   sums of 128-bit arc lengths.  The owner moved fraction is ring_diff(rf 1)
 *   `moved`: with rf 1 an arc changes owner exactly when the joiner takes it
 *   (or the removed node loses it), so it equals the joiner's (removed node's)
 *   ownership to the last position.  Replica copies are ring_diff(rf)
 *   `copies`, divided by the replicas of the larger world, min(rf, n) circles:
 *   a balanced joiner ends up with min(rf, N+1)/(N+1) of the circle, so the
 *   ideal is 1/(N+1) for copies too - or, with uneven racks, the joiner's
 *   share in the best rack-aware placement (sim_replica_share).  Rack-aware
 *   placement can also stream more than the joiner's share: a joiner can
 *   displace a replica that then has to be re-created on a node of another
 *   rack.
 *
 * The sampled schemes
 *   Key i is the string "key-i", at H(seed, key) with the run's seed; node i
 *   hashes to H(seed, "node-i").  Replicas are min(rf, n) distinct nodes.
 *   Racks are ignored: none of these schemes knows about them.
 *
 *   mod         primary h % n; replicas the next buckets, (h % n + i) % n.
 *   rendezvous  every node gets the weight fmix64(h xor H(node)) for the
 *               key; the rf heaviest nodes are the replicas, heaviest first.
 *               fmix64 (MurmurHash3's finalizer) is a bijection with full
 *               avalanche, so one multiply-xorshift chain per pair replaces a
 *               SipHash per pair: rendezvous costs N x M weights per world.
 *   jump        primary jump(h, n).  Replica a is jump(h_a, n) with h_0 = h
 *               and h_a = fmix64(h + a * 2^64/phi), skipping buckets already
 *               chosen, until min(rf, n) are distinct: the usual re-hashing
 *               extension, which keeps each attempt consistent (jump(h_a, n+1)
 *               is jump(h_a, n) or n).
 *   bounded     Mirrokni, Thorup and Zadimoghaddam (2018) on a ring of the
 *               same token count (the PLACEMENT.md token positions, racks
 *               ignored).  Keys are assigned in order key-0, key-1, ...; a
 *               key goes to the first node clockwise from its position whose
 *               load is below ceil(c * M / n).  Replicas are assigned in a
 *               second, separate pass: the first min(rf, n) distinct nodes
 *               clockwise whose replica load is below ceil(c * min(rf, n) *
 *               M / n); if a full turn finds fewer, the nearest distinct
 *               nodes fill the list regardless of load.  That needs fewer
 *               than k nodes with room, so at least n - k + 1 full ones,
 *               holding (n - k + 1) c k M / n replicas or more, while fewer
 *               than k M are placed: it happens only when n < (k - 1) c /
 *               (c - 1), which is 5 (k - 1) for c = 1.25.  Each world is
 *               assigned from scratch, as a restarted balancer would.
 *
 *   Owner moved is the fraction of keys whose primary differs between two
 *   worlds; copies count, per key, the replicas in the new world's list that
 *   are not in the old one's (what must be streamed), over the replicas of
 *   the larger world, min(rf, n) * M, as for the ring.
 *
 * Seeds
 *   Seed j > 0 is H(base, "ringkv-sim-seed#j#0") followed by
 *   H(base, "ringkv-sim-seed#j#1"), each little-endian: 16 bytes, as fixed as
 *   the base seed.
 */
#include "sim.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/*
 * 2^64 / golden ratio, splitmix64's increment: jump replica attempt a
 * hashes h + a * step, inputs that differ in many bits for consecutive a.
 */
#define SIM_REHASH_STEP 0x9e3779b97f4a7c15ull
/* Length of "node-NNNN" / "rack-NNNN" / "key-NNNNNNN" with room to spare. */
#define SIM_NAME_BUF 32

/* MurmurHash3's 64-bit finalizer (Appleby), a bijection with full avalanche. */
static uint64_t sim_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The paper's code, its LCG multiplier included, so known outputs carry over. */
uint32_t sim_jump_hash(uint64_t key, uint32_t buckets)
{
    int64_t b = -1, j = 0;

    while (j < (int64_t)buckets) {
        b = j;
        key = key * 2862933555777941757ull + 1;
        j = (int64_t)((double)(b + 1) * ((double)(1ll << 31) / (double)((key >> 33) + 1)));
    }
    return (uint32_t)b;
}

int sim_members_init(struct sim_members *ms, uint32_t nodes, uint32_t racks, uint32_t tokens)
{
    char buf[SIM_NAME_BUF];

    memset(ms, 0, sizeof(*ms));
    if (nodes < 1 || nodes > SIM_NODES_MAX || racks < 1 || racks > nodes) {
        return RK_ERANGE;
    }
    ms->m = calloc((size_t)nodes + 1, sizeof(*ms->m));
    if (ms->m == NULL) {
        return RK_ENOMEM;
    }
    ms->n = (size_t)nodes + 1;
    for (size_t i = 0; i < ms->n; i++) {
        snprintf(buf, sizeof(buf), "node-%zu", i + 1);
        ms->m[i].id = strdup(buf);
        snprintf(buf, sizeof(buf), "rack-%zu", i % racks + 1);
        ms->m[i].rack = strdup(buf);
        ms->m[i].tokens = tokens;
        if (ms->m[i].id == NULL || ms->m[i].rack == NULL) {
            sim_members_deinit(ms);
            return RK_ENOMEM;
        }
    }
    return 0;
}

void sim_members_deinit(struct sim_members *ms)
{
    for (size_t i = 0; ms->m != NULL && i < ms->n; i++) {
        free((char *)ms->m[i].id);
        free((char *)ms->m[i].rack);
    }
    free(ms->m);
    memset(ms, 0, sizeof(*ms));
}

void sim_config_default(struct sim_config *cfg)
{
    cfg->nodes = 10;
    cfg->racks = 3;
    cfg->rf = 3;
    cfg->seeds = 5;
    cfg->keys = 100000;
    memcpy(cfg->seed, ring_default_seed, RING_SEED_LEN);
}

int sim_config_check(const struct sim_config *cfg, const char **what)
{
    const char *bad = NULL;

    if (cfg->nodes < 1 || cfg->nodes > SIM_NODES_MAX) {
        bad = "nodes";
    } else if (cfg->racks < 1 || cfg->racks > cfg->nodes) {
        bad = "racks";
    } else if (cfg->rf < 1 || cfg->rf > RING_RF_MAX) {
        bad = "rf";
    } else if (cfg->seeds < 1 || cfg->seeds > SIM_SEEDS_MAX) {
        bad = "seeds";
    } else if (cfg->keys < SIM_KEYS_MIN || cfg->keys > SIM_KEYS_MAX) {
        bad = "keys";
    }
    if (what != NULL) {
        *what = bad;
    }
    return bad == NULL ? 0 : RK_ERANGE;
}

void sim_seed_derive(const uint8_t base[RING_SEED_LEN], uint32_t j, uint8_t out[RING_SEED_LEN])
{
    char buf[SIM_NAME_BUF];

    if (j == 0) {
        memcpy(out, base, RING_SEED_LEN);
        return;
    }
    for (int half = 0; half < 2; half++) {
        int len = snprintf(buf, sizeof(buf), "ringkv-sim-seed#%u#%d", j, half);
        uint64_t h = ring_hash(base, buf, (size_t)len);
        for (int b = 0; b < 8; b++) {
            out[8 * half + b] = (uint8_t)(h >> (8 * b));
        }
    }
}

double sim_sampling_noise(uint32_t nodes, uint32_t keys)
{
    return sqrt((double)(nodes - 1) / (double)keys);
}

/* max/mean, min/mean and stddev/mean of the loads x[0..n), n >= 1, all >= 0. */
static void balance_compute(const double *x, size_t n, struct sim_figures *f)
{
    double sum = 0, max = 0, min = HUGE_VAL, var = 0, mean;

    for (size_t i = 0; i < n; i++) {
        sum += x[i];
        max = x[i] > max ? x[i] : max;
        min = x[i] < min ? x[i] : min;
    }
    mean = sum / (double)n;
    for (size_t i = 0; i < n; i++) {
        var += (x[i] - mean) * (x[i] - mean);
    }
    f->max_mean = max / mean;
    f->min_mean = min / mean;
    f->sd_mean = sqrt(var / (double)n) / mean;
}

/* max/mean of x[0..n). */
static double load_max_mean(const double *x, size_t n)
{
    struct sim_figures f;

    balance_compute(x, n, &f);
    return f.max_mean;
}

/* ------------------------------------------------------------------------
 * The ring, exactly.
 */

/* The rings of the three worlds; removal is NULL when N == 1. */
struct ring_worlds {
    struct ring *base, *join, *removal;
};

static void ring_worlds_destroy(struct ring_worlds *w)
{
    ring_unref(w->base);
    ring_unref(w->join);
    ring_unref(w->removal);
    memset(w, 0, sizeof(*w));
}

static int ring_worlds_create(struct ring_worlds *w, const struct sim_members *ms,
                              const uint8_t seed[RING_SEED_LEN])
{
    size_t nodes = ms->n - 1;
    int err;

    memset(w, 0, sizeof(*w));
    err = ring_create(&w->base, seed, ms->m, nodes);
    if (err == 0) {
        err = ring_create(&w->join, seed, ms->m, nodes + 1);
    }
    if (err == 0 && nodes > 1) {
        err = ring_create(&w->removal, seed, ms->m, nodes - 1);
    }
    if (err != 0) {
        ring_worlds_destroy(w);
    }
    return err;
}

/* Balance (rf 1) and replica load (rf) of the cluster ring. */
static int ring_balance(const struct ring *r, unsigned rf, struct sim_figures *f)
{
    size_t n = ring_member_count(r);
    ring_len *own = malloc(n * sizeof(*own));
    double *share = calloc(n, sizeof(*share));
    int err = RK_ENOMEM;

    if (own == NULL || share == NULL) {
        goto out_free;
    }
    err = ring_ownership(r, 1, own);
    if (err != 0) {
        goto out_free;
    }
    for (size_t m = 0; m < n; m++) {
        share[m] = ring_len_fraction(own[m]);
    }
    balance_compute(share, n, f);
    err = ring_ownership(r, rf, own);
    if (err != 0) {
        goto out_free;
    }
    for (size_t m = 0; m < n; m++) {
        share[m] = ring_len_fraction(own[m]);
    }
    f->replica_max_mean = load_max_mean(share, n);
out_free:
    free(own);
    free(share);
    return err;
}

/*
 * Owner moved (ring_diff rf 1) and replica copies (ring_diff rf) between
 * two rings; copies are divided by the replicas of the world with
 * `larger` members.
 */
static int ring_movement(const struct ring *from, const struct ring *to, unsigned rf, size_t larger,
                         double *moved, double *copies)
{
    struct ring_diff d;
    unsigned k = rf < larger ? rf : (unsigned)larger;
    int err;

    err = ring_diff(from, to, 1, &d);
    if (err != 0) {
        return err;
    }
    *moved = ring_len_fraction(d.moved);
    ring_diff_free(&d);
    err = ring_diff(from, to, rf, &d);
    if (err != 0) {
        return err;
    }
    *copies = ring_len_fraction(d.copies) / k;
    ring_diff_free(&d);
    return 0;
}

static int ring_figures(const struct sim_config *cfg, const uint8_t seed[RING_SEED_LEN],
                        uint32_t tokens, struct sim_figures *f)
{
    struct sim_members ms;
    struct ring_worlds w;
    size_t n = cfg->nodes;
    int err;

    memset(f, 0, sizeof(*f));
    err = sim_members_init(&ms, cfg->nodes, cfg->racks, tokens);
    if (err != 0) {
        return err;
    }
    err = ring_worlds_create(&w, &ms, seed);
    if (err != 0) {
        goto out_members;
    }
    err = ring_balance(w.base, cfg->rf, f);
    if (err == 0) {
        err = ring_movement(w.base, w.join, cfg->rf, n + 1, &f->join_moved, &f->join_copies);
    }
    if (err == 0 && w.removal != NULL) {
        err = ring_movement(w.base, w.removal, cfg->rf, n, &f->remove_moved, &f->remove_copies);
    }
    ring_worlds_destroy(&w);
out_members:
    sim_members_deinit(&ms);
    return err;
}

/* ------------------------------------------------------------------------
 * The sampled schemes.
 */

/* The key sample of one seed, shared by the worlds of one scheme. */
struct sample {
    const struct sim_config *cfg;
    const uint8_t *seed;
    uint64_t *key;         /* cfg->keys key positions */
    uint64_t *node;        /* N + 1 node hashes */
    struct sim_members ms; /* N + 1 members with the row's token count */
};

/* Every key placed on the first n nodes: primary and min(rf, n) replicas. */
struct world {
    uint32_t n;
    unsigned k;
    uint16_t *primary; /* keys entries */
    uint16_t *lists;   /* keys x k entries, key-major */
};

/* Replicas of one key with hash h among nodes 0 .. n-1, written to list[0..k). */
typedef void (*key_place_fn)(const struct sample *s, uint32_t n, unsigned k, uint64_t h,
                             uint16_t *list);
/* Place every key of the sample in w. */
typedef int (*world_place_fn)(const struct sample *s, struct world *w);

static bool list_has(const uint16_t *list, unsigned n, uint16_t x)
{
    for (unsigned i = 0; i < n; i++) {
        if (list[i] == x) {
            return true;
        }
    }
    return false;
}

static void mod_place(const struct sample *s, uint32_t n, unsigned k, uint64_t h, uint16_t *list)
{
    uint32_t b = (uint32_t)(h % n);

    for (unsigned i = 0; i < k; i++) {
        list[i] = (uint16_t)((b + i) % n);
    }
}

static void rendezvous_place(const struct sample *s, uint32_t n, unsigned k, uint64_t h,
                             uint16_t *list)
{
    uint64_t top[RING_RF_MAX];
    unsigned have = 0;

    for (uint32_t i = 0; i < n; i++) {
        uint64_t w = sim_fmix64(h ^ s->node[i]);
        if (have == k && w <= top[k - 1]) {
            continue;
        }
        unsigned j = have < k ? have++ : k - 1;
        for (; j > 0 && top[j - 1] < w; j--) {
            top[j] = top[j - 1];
            list[j] = list[j - 1];
        }
        top[j] = w;
        list[j] = (uint16_t)i;
    }
}

static void jump_place(const struct sample *s, uint32_t n, unsigned k, uint64_t h, uint16_t *list)
{
    unsigned have = 0;

    for (uint64_t a = 0; have < k; a++) {
        uint64_t ha = a == 0 ? h : sim_fmix64(h + a * SIM_REHASH_STEP);
        uint16_t b = (uint16_t)sim_jump_hash(ha, n);
        if (!list_has(list, have, b)) {
            list[have++] = b;
        }
    }
}

/* Bounded-load state of one pass over a ring of n nodes. */
struct bounded_pass {
    const uint16_t *tok_node; /* node index of each token, ring order */
    size_t n_tokens;
    uint32_t *load;
    uint32_t cap;
};

/*
 * From token t clockwise, append to list[have..k) distinct nodes with room
 * (or, when ignore_cap, any distinct node); returns the new count.
 */
static unsigned bounded_walk(const struct bounded_pass *p, size_t t, uint16_t *list, unsigned have,
                             unsigned k, bool ignore_cap)
{
    for (size_t i = 0; i < p->n_tokens && have < k; i++) {
        uint16_t m = p->tok_node[(t + i) % p->n_tokens];
        if ((ignore_cap || p->load[m] < p->cap) && !list_has(list, have, m)) {
            list[have++] = m;
        }
    }
    return have;
}

/* One pass: every key in order gets k nodes, out[key * k ..]. */
static void bounded_pass_run(struct bounded_pass *p, const struct sample *s, const struct ring *r,
                             unsigned k, uint16_t *out)
{
    for (uint32_t key = 0; key < s->cfg->keys; key++) {
        uint16_t *list = out + (size_t)key * k;
        size_t t;
        (void)ring_owner_token(r, s->key[key], &t, NULL);
        unsigned have = bounded_walk(p, t, list, 0, k, false);
        have = bounded_walk(p, t, list, have, k, true);
        for (unsigned i = 0; i < have; i++) {
            p->load[list[i]]++;
        }
    }
}

/* ceil(c * units * keys / n): the most a node may take. */
static uint32_t bounded_cap(uint32_t keys, unsigned units, uint32_t n)
{
    return (uint32_t)ceil(SIM_BOUNDED_C * (double)units * (double)keys / (double)n);
}

/* Node index (position in the member array) of every token of r. */
static uint16_t *bounded_token_nodes(const struct ring *r, const struct sim_members *ms)
{
    size_t nt = ring_token_count(r);
    uint16_t *tok_node = malloc(nt * sizeof(*tok_node));
    uint16_t map[SIM_NODES_MAX + 1];

    if (tok_node == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < ring_member_count(r); i++) {
        int m = ring_member_find(r, ms->m[i].id);
        assert(m >= 0 && "bounded_token_nodes: the ring must hold the first n members");
        map[m] = (uint16_t)i;
    }
    for (size_t t = 0; t < nt; t++) {
        tok_node[t] = map[ring_token_at(r, t).member];
    }
    return tok_node;
}

static int bounded_place(const struct sample *s, struct world *w)
{
    struct bounded_pass p = {0};
    struct ring *r = NULL;
    int err;

    err = ring_create(&r, s->seed, s->ms.m, w->n);
    if (err != 0) {
        return err;
    }
    p.n_tokens = ring_token_count(r);
    p.tok_node = bounded_token_nodes(r, &s->ms);
    p.load = calloc(w->n, sizeof(*p.load));
    if (p.tok_node == NULL || p.load == NULL) {
        err = RK_ENOMEM;
        goto out_free;
    }
    p.cap = bounded_cap(s->cfg->keys, 1, w->n);
    bounded_pass_run(&p, s, r, 1, w->primary);
    memset(p.load, 0, w->n * sizeof(*p.load));
    p.cap = bounded_cap(s->cfg->keys, w->k, w->n);
    bounded_pass_run(&p, s, r, w->k, w->lists);
out_free:
    free((void *)p.tok_node);
    free(p.load);
    ring_unref(r);
    return err;
}

/* ------------------------------------------------------------------------
 * The scheme table.
 */

static const struct scheme_def {
    const char *name;
    key_place_fn per_key;    /* schemes that place each key on its own */
    world_place_fn in_order; /* schemes whose keys depend on earlier keys */
} scheme_defs[SIM_SCHEME_COUNT] = {
    [SIM_RING] = {"ring", NULL, NULL},
    [SIM_BOUNDED] = {"bounded", NULL, bounded_place},
    [SIM_MOD] = {"mod", mod_place, NULL},
    [SIM_RENDEZVOUS] = {"rendezvous", rendezvous_place, NULL},
    [SIM_JUMP] = {"jump", jump_place, NULL},
};

const char *sim_scheme_name(enum sim_scheme scheme)
{
    return (unsigned)scheme < SIM_SCHEME_COUNT ? scheme_defs[scheme].name : "unknown";
}

bool sim_scheme_sampled(enum sim_scheme scheme)
{
    return scheme != SIM_RING;
}

static void world_free(struct world *w)
{
    free(w->primary);
    free(w->lists);
    memset(w, 0, sizeof(*w));
}

/* Place the sample on nodes 0 .. n-1 with the scheme def. */
static int world_place(const struct sample *s, const struct scheme_def *def, uint32_t n,
                       struct world *w)
{
    uint32_t keys = s->cfg->keys;
    int err = 0;

    w->n = n;
    w->k = s->cfg->rf < n ? s->cfg->rf : n;
    w->primary = malloc(keys * sizeof(*w->primary));
    w->lists = malloc((size_t)keys * w->k * sizeof(*w->lists));
    if (w->primary == NULL || w->lists == NULL) {
        world_free(w);
        return RK_ENOMEM;
    }
    if (def->in_order != NULL) {
        err = def->in_order(s, w);
    } else {
        for (uint32_t i = 0; i < keys; i++) {
            def->per_key(s, n, w->k, s->key[i], w->lists + (size_t)i * w->k);
            w->primary[i] = w->lists[(size_t)i * w->k];
        }
    }
    if (err != 0) {
        world_free(w);
    }
    return err;
}

/* Balance and replica load of a world, from its key counts. */
static int world_balance(const struct world *w, uint32_t keys, struct sim_figures *f)
{
    double *count = calloc(w->n, sizeof(*count));

    if (count == NULL) {
        return RK_ENOMEM;
    }
    for (uint32_t i = 0; i < keys; i++) {
        count[w->primary[i]] += 1;
    }
    balance_compute(count, w->n, f);
    memset(count, 0, w->n * sizeof(*count));
    for (size_t i = 0; i < (size_t)keys * w->k; i++) {
        count[w->lists[i]] += 1;
    }
    f->replica_max_mean = load_max_mean(count, w->n);
    free(count);
    return 0;
}

/*
 * Owner moved and replica copies going from world `from` to world `to`:
 * copies are the replicas in to's lists that from's lists lack (what must
 * be streamed), over the replicas of the larger of the two worlds.
 */
static void world_movement(const struct world *from, const struct world *to, uint32_t keys,
                           double *moved, double *copies)
{
    size_t changed = 0, streamed = 0;
    unsigned k = from->k > to->k ? from->k : to->k;

    for (uint32_t i = 0; i < keys; i++) {
        const uint16_t *lf = from->lists + (size_t)i * from->k;
        const uint16_t *lt = to->lists + (size_t)i * to->k;
        changed += from->primary[i] != to->primary[i];
        for (unsigned j = 0; j < to->k; j++) {
            streamed += !list_has(lf, from->k, lt[j]);
        }
    }
    *moved = (double)changed / keys;
    *copies = (double)streamed / ((double)k * keys);
}

static void sample_free(struct sample *s)
{
    free(s->key);
    free(s->node);
    sim_members_deinit(&s->ms);
}

static int sample_make(struct sample *s, const struct sim_config *cfg,
                       const uint8_t seed[RING_SEED_LEN], uint32_t tokens)
{
    char buf[SIM_NAME_BUF];
    int err;

    memset(s, 0, sizeof(*s));
    s->cfg = cfg;
    s->seed = seed;
    err = sim_members_init(&s->ms, cfg->nodes, cfg->racks, tokens);
    s->key = malloc(cfg->keys * sizeof(*s->key));
    s->node = malloc(((size_t)cfg->nodes + 1) * sizeof(*s->node));
    if (err != 0 || s->key == NULL || s->node == NULL) {
        sample_free(s);
        return err != 0 ? err : RK_ENOMEM;
    }
    for (uint32_t i = 0; i < cfg->keys; i++) {
        int len = snprintf(buf, sizeof(buf), "key-%u", i);
        s->key[i] = ring_hash(seed, buf, (size_t)len);
    }
    for (size_t i = 0; i < s->ms.n; i++) {
        s->node[i] = ring_hash(seed, s->ms.m[i].id, strlen(s->ms.m[i].id));
    }
    return 0;
}

static int sampled_figures(const struct sim_config *cfg, const uint8_t seed[RING_SEED_LEN],
                           const struct scheme_def *def, uint32_t tokens, struct sim_figures *f)
{
    struct world base = {0}, join = {0}, removal = {0};
    struct sample s;
    uint32_t n = cfg->nodes, keys = cfg->keys;
    int err;

    memset(f, 0, sizeof(*f));
    err = sample_make(&s, cfg, seed, tokens);
    if (err != 0) {
        return err;
    }
    err = world_place(&s, def, n, &base);
    if (err == 0) {
        err = world_place(&s, def, n + 1, &join);
    }
    if (err == 0 && n > 1) {
        err = world_place(&s, def, n - 1, &removal);
    }
    if (err == 0) {
        err = world_balance(&base, keys, f);
    }
    if (err == 0) {
        world_movement(&base, &join, keys, &f->join_moved, &f->join_copies);
    }
    if (err == 0 && n > 1) {
        world_movement(&base, &removal, keys, &f->remove_moved, &f->remove_copies);
    }
    world_free(&base);
    world_free(&join);
    world_free(&removal);
    sample_free(&s);
    return err;
}

int sim_figures_compute(const struct sim_config *cfg, const uint8_t seed[RING_SEED_LEN],
                        enum sim_scheme scheme, uint32_t tokens, struct sim_figures *out)
{
    int err = sim_config_check(cfg, NULL);

    if (err != 0) {
        return err;
    }
    if ((unsigned)scheme >= SIM_SCHEME_COUNT) {
        return RK_EINVAL;
    }
    if (scheme == SIM_MOD || scheme == SIM_RENDEZVOUS || scheme == SIM_JUMP) {
        tokens = RING_TOKENS_MIN;
    }
    if (tokens < RING_TOKENS_MIN || tokens > RING_TOKENS_MAX) {
        return RK_ERANGE;
    }
    if (scheme == SIM_RING) {
        return ring_figures(cfg, seed, tokens, out);
    }
    return sampled_figures(cfg, seed, &scheme_defs[scheme], tokens, out);
}

/* acc += f, field by field. */
static void figures_add(struct sim_figures *acc, const struct sim_figures *f)
{
    acc->max_mean += f->max_mean;
    acc->min_mean += f->min_mean;
    acc->sd_mean += f->sd_mean;
    acc->replica_max_mean += f->replica_max_mean;
    acc->join_moved += f->join_moved;
    acc->join_copies += f->join_copies;
    acc->remove_moved += f->remove_moved;
    acc->remove_copies += f->remove_copies;
}

static void figures_scale(struct sim_figures *acc, double by)
{
    acc->max_mean *= by;
    acc->min_mean *= by;
    acc->sd_mean *= by;
    acc->replica_max_mean *= by;
    acc->join_moved *= by;
    acc->join_copies *= by;
    acc->remove_moved *= by;
    acc->remove_copies *= by;
}

int sim_rows_compute(const struct sim_config *cfg, struct sim_row *rows, size_t n)
{
    uint8_t seed[RING_SEED_LEN];
    struct sim_figures f;
    int err = sim_config_check(cfg, NULL);

    if (err != 0) {
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        memset(&rows[i].mean, 0, sizeof(rows[i].mean));
        rows[i].max_mean_worst = 0;
        rows[i].removal = cfg->nodes > 1;
    }
    for (uint32_t j = 0; j < cfg->seeds; j++) {
        sim_seed_derive(cfg->seed, j, seed);
        for (size_t i = 0; i < n; i++) {
            err = sim_figures_compute(cfg, seed, rows[i].scheme, rows[i].tokens, &f);
            if (err != 0) {
                return err;
            }
            figures_add(&rows[i].mean, &f);
            rows[i].max_mean_worst =
                f.max_mean > rows[i].max_mean_worst ? f.max_mean : rows[i].max_mean_worst;
        }
    }
    for (size_t i = 0; i < n; i++) {
        figures_scale(&rows[i].mean, 1.0 / cfg->seeds);
    }
    return 0;
}

/* ------------------------------------------------------------------------
 * The rack bound.
 */

/* Nodes in rack r (0-based) when nodes are dealt round-robin to racks. */
static double rack_size(uint32_t nodes, uint32_t racks, uint32_t r)
{
    return (double)(nodes / racks + (r < nodes % racks ? 1 : 0));
}

/*
 * Replicas per key that rack r carries at water level t: t per node,
 * clamped to what section 5 allows a rack - at most one replica per key when
 * there are at least k racks (at most k - R + 1 otherwise, and never more
 * than its nodes), and at least one when there are fewer racks than k, since
 * the walk then uses every rack.
 */
static double rack_take(uint32_t nodes, uint32_t racks, unsigned k, uint32_t r, double t)
{
    double size = rack_size(nodes, racks, r);
    double cap = racks >= k ? 1.0 : (double)(k - racks + 1);
    double floor_take = racks >= k ? 0.0 : 1.0;
    double take = t * size;

    cap = size < cap ? size : cap;
    take = take > cap ? cap : take;
    return take < floor_take ? floor_take : take;
}

/*
 * Water-filling: the level t at which the racks together carry k replicas
 * per key.  The sum is continuous and nondecreasing in t, from at most k at
 * t = 0 to at least k at t = 1 (the caps sum to >= k), so bisection finds it.
 */
static double rack_level(uint32_t nodes, uint32_t racks, unsigned k)
{
    double lo = 0, hi = 1;

    for (int it = 0; it < 100; it++) {
        double t = (lo + hi) / 2, sum = 0;
        for (uint32_t r = 0; r < racks; r++) {
            sum += rack_take(nodes, racks, k, r, t);
        }
        if (sum >= k) {
            hi = t;
        } else {
            lo = t;
        }
    }
    return hi;
}

/*
 * The model behind the rack figures: rack r carries L_r replicas per key on
 * average, within section 5's per-rack limits (rack_take), sum k =
 * min(rf, N), spread evenly over its nodes.  Minimising the largest node
 * load L_r / n_r over such L is a water-filling; the result is reachable
 * (the limits are integers, so L is an average of per-key rack choices),
 * which is why the ring's replica max/mean tends to the bound, not to 1, as
 * tokens grow.
 */
double sim_replica_share(uint32_t nodes, uint32_t racks, unsigned rf, uint32_t node)
{
    unsigned k = rf < nodes ? rf : nodes;
    uint32_t r = node % racks;

    return rack_take(nodes, racks, k, r, rack_level(nodes, racks, k)) / rack_size(nodes, racks, r);
}

double sim_replica_bound(uint32_t nodes, uint32_t racks, unsigned rf)
{
    unsigned k = rf < nodes ? rf : nodes;
    double level = rack_level(nodes, racks, k), max = 0;

    for (uint32_t r = 0; r < racks; r++) {
        double load = rack_take(nodes, racks, k, r, level) / rack_size(nodes, racks, r);
        max = load > max ? load : max;
    }
    return max / ((double)k / nodes);
}
