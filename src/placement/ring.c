/*
 * ring.c - placement: tokens, owners, preference lists, ring differences.
 *
 * This file implements PLACEMENT.md (contract version 1) and nothing else;
 * the contract is the spec and tests/vectors/placement-v1.txt proves it.
 *
 * Building a ring
 *   Every member m contributes tokens H(seed, id "#" i), i = 0 .. t-1.  Tokens
 *   are generated member by member (members sorted by id) and index by index,
 *   then sorted by position with a stable LSD radix sort, which leaves them in
 *   (position, id, index) order: the total order of section 4, ties included.
 *
 * The preference table
 *   The preference list of a key depends only on the token it lands on, so
 *   it is computed once per token at build time.  Section 5's walk from token
 *   s chooses, for every rack, the first node of that rack it meets, in the
 *   order met (call that list D), and sets aside every other node in the order
 *   met (S).  The list for rf is the first min(rf, N) entries of D ++ S: when
 *   rf <= |D| the walk stops inside D, otherwise it appends from S.  So the
 *   table stores, per token, the first W = min(N, RING_RF_MAX) entries of
 *   D ++ S, and a lookup for any rf is a binary search plus a copy.
 *
 *   D and S follow from the order in which racks and nodes first occur on
 *   the walk.  Sweeping the tokens backwards, twice around the circle, and
 *   moving each token's node to the front of a node list and its rack to the
 *   front of a rack list keeps both lists ordered by next occurrence at or
 *   after the current token.  At token s, D is the nodes found at the next
 *   occurrence of the first racks of the rack list, and S is the node list
 *   without D.  Cost: O(T * W) time, T * W * 2 bytes, with T tokens.
 *
 *   ring_preflist_walk() is the literal section-5 walk; unit tests check the
 *   table against it over many random rings.
 *
 * Arcs
 *   Token k owns the arc (pos[k-1], pos[k]]; token 0 owns (pos[T-1], 2^64) and
 *   [0, pos[0]], so its arc is the whole circle when all tokens share one
 *   position.  Tokens that share a position with an earlier token own an
 *   empty arc.
 *
 * Digest and lifetime
 *   The digest (ring.h) is computed once, by ring_create(), from the
 *   members it sorted.  The reference count is the one field that changes
 *   after the build; it is atomic, so the promise of ring.h (any thread may
 *   read a ring) holds for taking and dropping references too.
 */
#include "ring.h"

#include <assert.h>
#include <endian.h>
#include <limits.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

const uint8_t ring_default_seed[RING_SEED_LEN] = {
    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f,
};

/*
 * Entries of a preference row kept in the hot table.  Lookups for rf up to
 * this many touch 8 bytes per token instead of the whole row; rf 3, the
 * usual setting, and rf 4 fit.  Measured at N = 100 x 256 tokens: reading a
 * 32-byte row was a quarter of the lookup time, its cache misses.
 */
#define RING_PREF_HEAD 4
/*
 * The bucket index has about one bucket per token (the next power of two),
 * capped at 2^20 buckets (4 MiB); beyond that buckets hold several tokens and
 * the scan inside one falls back to binary search.
 */
#define RING_BUCKET_BITS_MAX 20
#define RING_BUCKET_SCAN_MAX 8
/*
 * Bytes of the ring digest: 64 bits, so two different rings compared by
 * gossip collide with probability 2^-64.  libsodium accepts 1 .. 64;
 * crypto_generichash_BYTES_MIN (16) is its advice for uses where an
 * attacker picks inputs to collide, and this hash authenticates nothing:
 * the sealed channel does.
 */
#define RING_DIGEST_LEN 8

/* Preference rows hold member indices as uint16_t (ring.h, RING_MEMBERS_MAX). */
_Static_assert(RING_MEMBERS_MAX - 1 <= UINT16_MAX, "a member index must fit a preference row");
_Static_assert(RING_TOKENS_MAX - 1 <= UINT16_MAX,
               "a token's index within its member must fit 16 bits");

/*
 * A member as the ring keeps it: 16 bytes, its id at names + id_off
 * (id_len bytes and a NUL), its rack's name at names + rack_off[rack_index].
 * Names are copied once, at their lengths, rather than into two 65-byte
 * arrays a member: a node holds its ring in force and its target ring, and
 * the gossip simulator two such rings for each of its N members.
 */
struct ring_node {
    uint32_t id_off;
    uint32_t tokens;
    uint32_t rack_index;
    uint8_t id_len;
};

/*
 * A token's position with the first entries of its preference row: a lookup
 * compares the position and, on the token it stops at, reads the row from
 * the same 16 bytes, one cache line fetch instead of two dependent ones.
 */
struct ring_slot {
    uint64_t pos;
    uint16_t head[RING_PREF_HEAD];
};

struct ring {
    atomic_uint refs; /* references held: ring_create()'s, then ring_ref()'s */
    uint64_t digest;  /* ring_digest(): the ring's name */
    uint8_t seed[RING_SEED_LEN];
    size_t n_members;
    size_t n_racks;
    size_t n_tokens;
    struct ring_node *nodes; /* sorted by id */
    char *names;        /* the members' ids in id order, then the racks' names, each with a NUL */
    uint32_t *rack_off; /* n_racks: where each rack's name starts in names, racks in name order */
    struct ring_slot *slot; /* token positions and hot preference entries, ring order */
    uint16_t *tok_member;   /* member index of each token (below RING_MEMBERS_MAX) */
    uint16_t *tok_index;    /* token index within its member (below RING_TOKENS_MAX) */
    size_t pref_width;      /* W = min(n_members, RING_RF_MAX) */
    uint16_t *pref_tail;    /* n_tokens x (W - RING_PREF_HEAD) when W > RING_PREF_HEAD */
    unsigned bucket_shift;  /* 64 - log2(number of buckets) */
    uint32_t *bucket;       /* bucket b: first token with position >= b << bucket_shift */
};

uint64_t ring_hash(const uint8_t seed[RING_SEED_LEN], const void *data, size_t len)
{
    uint64_t le;

    crypto_shorthash_siphash24((unsigned char *)&le, data, len, seed);
    return le64toh(le);
}

bool ring_name_valid(const char *name, size_t len)
{
    if (name == NULL || len < 1 || len > RING_NAME_MAX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == ':' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

int ring_member_check(const struct ring_member *m, const char **what)
{
    const char *bad = NULL;
    int err = 0;

    if (m->id == NULL || !ring_name_valid(m->id, strnlen(m->id, RING_NAME_MAX + 1))) {
        bad = "id";
        err = RK_EINVAL;
    } else if (m->rack == NULL || !ring_name_valid(m->rack, strnlen(m->rack, RING_NAME_MAX + 1))) {
        bad = "rack";
        err = RK_EINVAL;
    } else if (m->tokens < RING_TOKENS_MIN || m->tokens > RING_TOKENS_MAX) {
        bad = "tokens";
        err = RK_ERANGE;
    }
    if (what != NULL) {
        *what = bad;
    }
    return err;
}

/* Section 4's id order: bytes, a shorter id that is a prefix of a longer one first. */
static int id_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    if (c != 0) {
        return c;
    }
    return (alen > blen) - (alen < blen);
}

int ring_token_order(uint64_t pos_a, const char *id_a, uint32_t index_a, uint64_t pos_b,
                     const char *id_b, uint32_t index_b)
{
    int c;

    if (pos_a != pos_b) {
        return pos_a < pos_b ? -1 : 1;
    }
    c = id_cmp(id_a, strlen(id_a), id_b, strlen(id_b));
    if (c != 0) {
        return c;
    }
    return (index_a > index_b) - (index_a < index_b);
}

/* Member m's id and rack name, in r->names. */
static const char *node_id(const struct ring *r, size_t m)
{
    return r->names + r->nodes[m].id_off;
}

static const char *node_rack(const struct ring *r, size_t m)
{
    return r->names + r->rack_off[r->nodes[m].rack_index];
}

/* A member to build from, with its id's length, while the members are sorted. */
struct ring_order {
    const struct ring_member *m;
    size_t id_len;
};

/* Section 4's id order. */
static int order_cmp(const void *pa, const void *pb)
{
    const struct ring_order *a = pa;
    const struct ring_order *b = pb;

    return id_cmp(a->m->id, a->id_len, b->m->id, b->id_len);
}

static int str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/*
 * The racks' names, sorted and each once, into racks[0..*n_racks) (borrowed
 * from members); *bytes grows by their lengths with a NUL each.
 */
static void ring_rack_names(const struct ring_member *members, size_t n, const char **racks,
                            size_t *n_racks, size_t *bytes)
{
    for (size_t i = 0; i < n; i++) {
        racks[i] = members[i].rack;
    }
    qsort(racks, n, sizeof(*racks), str_cmp);
    *n_racks = 0;
    for (size_t i = 0; i < n; i++) {
        if (*n_racks == 0 || strcmp(racks[*n_racks - 1], racks[i]) != 0) {
            racks[(*n_racks)++] = racks[i];
            *bytes += strlen(racks[i]) + 1;
        }
    }
}

/*
 * Copy the members (order: them sorted by id) and the racks' names into
 * r->names, and give each member its offsets and rack index.  RK_ENOMEM.
 */
static int ring_copy_names(struct ring *r, const struct ring_order *order, const char **racks,
                           size_t n_racks, size_t bytes)
{
    size_t at = 0;

    r->names = malloc(bytes ? bytes : 1);
    r->rack_off = malloc((n_racks ? n_racks : 1) * sizeof(*r->rack_off));
    if (r->names == NULL || r->rack_off == NULL) {
        return RK_ENOMEM;
    }
    for (size_t k = 0; k < n_racks; k++) {
        size_t len = strlen(racks[k]) + 1;
        memcpy(r->names + at, racks[k], len);
        r->rack_off[k] = (uint32_t)at;
        at += len;
    }
    for (size_t i = 0; i < r->n_members; i++) {
        struct ring_node *node = &r->nodes[i];
        const char **hit = bsearch(&order[i].m->rack, racks, n_racks, sizeof(*racks), str_cmp);
        node->id_len = (uint8_t)order[i].id_len;
        node->id_off = (uint32_t)at;
        memcpy(r->names + at, order[i].m->id, node->id_len + 1u);
        at += node->id_len + 1u;
        node->tokens = order[i].m->tokens;
        node->rack_index = (uint32_t)(hit - racks);
    }
    r->n_racks = n_racks;
    return 0;
}

/*
 * Validate and sort the members (the member table hands them over sorted
 * already: then one pass finds them in order and no sort runs), copy
 * their names; give each a rack index.
 */
static int ring_load_members(struct ring *r, const struct ring_member *members, size_t n)
{
    struct ring_order *order = malloc((n ? n : 1) * sizeof(*order));
    const char **racks = malloc((n ? n : 1) * sizeof(*racks));
    size_t n_racks = 0, bytes = 0;
    bool sorted = true;
    int err = order == NULL || racks == NULL ? RK_ENOMEM : 0;

    for (size_t i = 0; err == 0 && i < n; i++) {
        err = ring_member_check(&members[i], NULL);
        if (err != 0) {
            break; /* its id may be NULL: not compared */
        }
        order[i].m = &members[i];
        order[i].id_len = strlen(members[i].id);
        bytes += order[i].id_len + 1;
        sorted = sorted && (i == 0 || order_cmp(&order[i - 1], &order[i]) < 0);
    }
    if (err == 0 && !sorted) {
        qsort(order, n, sizeof(*order), order_cmp);
    }
    for (size_t i = 1; err == 0 && !sorted && i < n; i++) {
        err = order_cmp(&order[i - 1], &order[i]) == 0 ? RK_EDUP : 0;
    }
    if (err == 0) {
        ring_rack_names(members, n, racks, &n_racks, &bytes);
        err = ring_copy_names(r, order, racks, n_racks, bytes);
    }
    free(order);
    free(racks);
    return err;
}

/* Write the decimal form of v to buf (no leading zeros); return its length. */
static size_t put_decimal(char *buf, uint32_t v)
{
    char tmp[10];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = 0; i < n; i++) {
        buf[i] = tmp[n - 1 - i];
    }
    return n;
}

/* Below this many tokens a comparison sort beats the radix sort's fixed cost. */
#define RING_SORT_RADIX_MIN 16384

/* One token for sort_tokens_small(): its position and where it was generated. */
struct token_key {
    uint64_t pos;
    uint32_t order; /* index in generation order: the tie-break that makes it stable */
};

static int token_key_cmp(const void *a, const void *b)
{
    const struct token_key *x = a, *y = b;

    if (x->pos != y->pos) {
        return x->pos < y->pos ? -1 : 1;
    }
    return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * sort_tokens() for few tokens: qsort by (pos, generation order), the
 * same order the stable radix sort gives.  The radix sort's four passes
 * clear and scan a 65536-entry count table each, which dominates a ring
 * of a few hundred tokens (every member of a small cluster rebuilds its
 * ring at every membership change).
 */
static int sort_tokens_small(uint64_t *pos, uint16_t *mem, uint16_t *idx, size_t n)
{
    struct token_key *k = malloc(n * sizeof(*k));
    uint16_t *mem2 = malloc(n * sizeof(*mem2));
    uint16_t *idx2 = malloc(n * sizeof(*idx2));
    int err = RK_ENOMEM;

    if (k == NULL || mem2 == NULL || idx2 == NULL) {
        goto out_free;
    }
    for (size_t i = 0; i < n; i++) {
        k[i] = (struct token_key){.pos = pos[i], .order = (uint32_t)i};
    }
    qsort(k, n, sizeof(*k), token_key_cmp);
    for (size_t i = 0; i < n; i++) {
        pos[i] = k[i].pos;
        mem2[i] = mem[k[i].order];
        idx2[i] = idx[k[i].order];
    }
    memcpy(mem, mem2, n * sizeof(*mem));
    memcpy(idx, idx2, n * sizeof(*idx));
    err = 0;
out_free:
    free(k);
    free(mem2);
    free(idx2);
    return err;
}

/*
 * Stable LSD radix sort of (pos, member, index) triples by pos, 16 bits a
 * pass.  Stability keeps the (member, index) generation order among equal
 * positions, which is section 4's tie-break because members are sorted by id.
 */
static int sort_tokens_radix(uint64_t *pos, uint16_t *mem, uint16_t *idx, size_t n)
{
    uint64_t *pos2 = malloc(n * sizeof(*pos2));
    uint16_t *mem2 = malloc(n * sizeof(*mem2));
    uint16_t *idx2 = malloc(n * sizeof(*idx2));
    size_t *count = malloc(65536 * sizeof(*count));
    int err = RK_ENOMEM;

    if (pos2 == NULL || mem2 == NULL || idx2 == NULL || count == NULL) {
        goto out_free;
    }
    for (unsigned shift = 0; shift < 64; shift += 16) {
        size_t sum = 0;
        memset(count, 0, 65536 * sizeof(*count));
        for (size_t i = 0; i < n; i++) {
            count[(pos[i] >> shift) & 0xffff]++;
        }
        for (size_t b = 0; b < 65536; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t to = count[(pos[i] >> shift) & 0xffff]++;
            pos2[to] = pos[i];
            mem2[to] = mem[i];
            idx2[to] = idx[i];
        }
        memcpy(pos, pos2, n * sizeof(*pos));
        memcpy(mem, mem2, n * sizeof(*mem));
        memcpy(idx, idx2, n * sizeof(*idx));
    }
    err = 0;
out_free:
    free(pos2);
    free(mem2);
    free(idx2);
    free(count);
    return err;
}

/* Tokens in ring order: by position, ties in generation order (either sort gives it). */
static int sort_tokens(uint64_t *pos, uint16_t *mem, uint16_t *idx, size_t n)
{
    if (n < RING_SORT_RADIX_MIN) {
        return sort_tokens_small(pos, mem, idx, n);
    }
    return sort_tokens_radix(pos, mem, idx, n);
}

static int ring_build_tokens(struct ring *r)
{
    size_t t = 0;
    char buf[RING_NAME_MAX + 1 + 10];
    uint64_t *pos;
    int err;

    for (size_t m = 0; m < r->n_members; m++) {
        t += r->nodes[m].tokens;
    }
    r->n_tokens = t;
    pos = malloc((t ? t : 1) * sizeof(*pos));
    r->slot = calloc(t ? t : 1, sizeof(*r->slot));
    r->tok_member = malloc((t ? t : 1) * sizeof(*r->tok_member));
    r->tok_index = malloc((t ? t : 1) * sizeof(*r->tok_index));
    if (pos == NULL || r->slot == NULL || r->tok_member == NULL || r->tok_index == NULL) {
        free(pos);
        return RK_ENOMEM;
    }
    t = 0;
    for (uint32_t m = 0; m < r->n_members; m++) {
        const struct ring_node *node = &r->nodes[m];
        memcpy(buf, node_id(r, m), node->id_len);
        buf[node->id_len] = '#';
        for (uint32_t i = 0; i < node->tokens; i++, t++) {
            size_t len = node->id_len + 1u + put_decimal(buf + node->id_len + 1, i);
            pos[t] = ring_hash(r->seed, buf, len);
            r->tok_member[t] = (uint16_t)m;
            r->tok_index[t] = (uint16_t)i;
        }
    }
    err = sort_tokens(pos, r->tok_member, r->tok_index, r->n_tokens);
    for (size_t i = 0; err == 0 && i < r->n_tokens; i++) {
        r->slot[i].pos = pos[i];
    }
    free(pos);
    return err;
}

/* An intrusive doubly linked list over 0..n-1, for move-to-front. */
struct mtf_list {
    uint32_t *prev;
    uint32_t *next;
    uint32_t head;
};

#define MTF_NONE UINT32_MAX

static int mtf_init(struct mtf_list *l, size_t n)
{
    l->prev = malloc(n * sizeof(*l->prev));
    l->next = malloc(n * sizeof(*l->next));
    if (l->prev == NULL || l->next == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        l->prev[i] = i == 0 ? MTF_NONE : (uint32_t)(i - 1);
        l->next[i] = i + 1 == n ? MTF_NONE : (uint32_t)(i + 1);
    }
    l->head = 0;
    return 0;
}

static void mtf_deinit(struct mtf_list *l)
{
    free(l->prev);
    free(l->next);
}

static void mtf_front(struct mtf_list *l, uint32_t x)
{
    if (l->head == x) {
        return;
    }
    l->next[l->prev[x]] = l->next[x];
    if (l->next[x] != MTF_NONE) {
        l->prev[l->next[x]] = l->prev[x];
    }
    l->prev[x] = MTF_NONE;
    l->next[x] = l->head;
    l->prev[l->head] = x;
    l->head = x;
}

/* Store row (pref_width entries) as the preference row of token s. */
static void pref_store(struct ring *r, size_t s, const uint16_t *row)
{
    size_t w = r->pref_width;
    size_t head = w < RING_PREF_HEAD ? w : RING_PREF_HEAD;

    memcpy(r->slot[s].head, row, head * sizeof(*row));
    if (w > RING_PREF_HEAD) {
        memcpy(r->pref_tail + s * (w - RING_PREF_HEAD), row + RING_PREF_HEAD,
               (w - RING_PREF_HEAD) * sizeof(*row));
    }
}

/* The first k (<= pref_width) entries of token t's preference row. */
static void pref_load(const struct ring *r, size_t t, uint16_t *out, size_t k)
{
    const uint16_t *head = r->slot[t].head;

    for (size_t i = 0; i < k && i < RING_PREF_HEAD; i++) {
        out[i] = head[i];
    }
    if (k > RING_PREF_HEAD) {
        const uint16_t *tail = r->pref_tail + t * (r->pref_width - RING_PREF_HEAD);
        for (size_t i = RING_PREF_HEAD; i < k; i++) {
            out[i] = tail[i - RING_PREF_HEAD];
        }
    }
}

/* Fill the preference row of token s from the two ordered lists (file header). */
static void pref_fill_row(struct ring *r, size_t s, const struct mtf_list *nodes,
                          const struct mtf_list *racks, const uint32_t *rack_tok, uint32_t *stamp)
{
    uint16_t row[RING_RF_MAX];
    size_t k = 0;
    uint32_t mark = (uint32_t)s + 1;

    for (uint32_t rk = racks->head; rk != MTF_NONE && k < r->pref_width; rk = racks->next[rk]) {
        uint32_t m = r->tok_member[rack_tok[rk]];
        row[k++] = (uint16_t)m;
        stamp[m] = mark;
    }
    for (uint32_t m = nodes->head; m != MTF_NONE && k < r->pref_width; m = nodes->next[m]) {
        if (stamp[m] != mark) {
            row[k++] = (uint16_t)m;
        }
    }
    assert(k == r->pref_width && "preference row must be full");
    pref_store(r, s, row);
}

static int ring_build_pref(struct ring *r)
{
    struct mtf_list nodes = {0}, racks = {0};
    uint32_t *rack_tok = calloc(r->n_racks, sizeof(*rack_tok));
    uint32_t *stamp = calloc(r->n_members, sizeof(*stamp));
    size_t t = r->n_tokens;
    int err = RK_ENOMEM;

    r->pref_width = r->n_members < RING_RF_MAX ? r->n_members : RING_RF_MAX;
    if (r->pref_width > RING_PREF_HEAD) {
        r->pref_tail = malloc(t * (r->pref_width - RING_PREF_HEAD) * sizeof(*r->pref_tail));
    }
    if (rack_tok == NULL || stamp == NULL ||
        (r->pref_width > RING_PREF_HEAD && r->pref_tail == NULL) ||
        mtf_init(&nodes, r->n_members) != 0 || mtf_init(&racks, r->n_racks) != 0) {
        goto out_free;
    }
    for (size_t j = 2 * t; j-- > 0;) {
        size_t s = j % t;
        uint32_t m = r->tok_member[s];
        uint32_t rk = r->nodes[m].rack_index;
        mtf_front(&nodes, m);
        mtf_front(&racks, rk);
        rack_tok[rk] = (uint32_t)s;
        if (j < t) {
            pref_fill_row(r, s, &nodes, &racks, rack_tok, stamp);
        }
    }
    err = 0;
out_free:
    mtf_deinit(&nodes);
    mtf_deinit(&racks);
    free(rack_tok);
    free(stamp);
    return err;
}

/*
 * The bucket index: the circle cut into 2^bits equal buckets, and for each
 * the first token at or after its start.  A lookup reads one bucket entry
 * and scans the few tokens of that bucket, instead of a binary search whose
 * every step is a dependent cache miss on large rings.
 */
/* log2 of the number of buckets for t tokens: one a token, a power of two, at most 2^20. */
static unsigned ring_bucket_bits(size_t t)
{
    unsigned bits = 1;

    while (bits < RING_BUCKET_BITS_MAX && ((size_t)1 << bits) < t) {
        bits++;
    }
    return bits;
}

static int ring_build_buckets(struct ring *r)
{
    unsigned bits = ring_bucket_bits(r->n_tokens);
    size_t n, t = 0;

    n = (size_t)1 << bits;
    r->bucket_shift = 64 - bits;
    r->bucket = malloc((n + 1) * sizeof(*r->bucket));
    if (r->bucket == NULL) {
        return RK_ENOMEM;
    }
    for (size_t b = 0; b < n; b++) {
        uint64_t start = (uint64_t)b << r->bucket_shift;
        while (t < r->n_tokens && r->slot[t].pos < start) {
            t++;
        }
        r->bucket[b] = (uint32_t)t;
    }
    r->bucket[n] = (uint32_t)r->n_tokens;
    return 0;
}

/* Every allocation of r, whatever its count (a half-built ring has none). */
static void ring_free(struct ring *r)
{
    if (r == NULL) {
        return;
    }
    free(r->nodes);
    free(r->names);
    free(r->rack_off);
    free(r->slot);
    free(r->tok_member);
    free(r->tok_index);
    free(r->pref_tail);
    free(r->bucket);
    free(r);
}

/* Feed the digest (ring.h) one name: its length byte, then its bytes. */
static int ring_digest_name(crypto_generichash_state *st, const char *name)
{
    uint8_t len = (uint8_t)strnlen(name, RING_NAME_MAX);

    if (crypto_generichash_update(st, &len, sizeof(len)) != 0) {
        return RK_EINVAL;
    }
    return crypto_generichash_update(st, (const uint8_t *)name, len) != 0 ? RK_EINVAL : 0;
}

/* r->digest from the seed and the members in id order: the encoding of ring.h. */
static int ring_compute_digest(struct ring *r)
{
    crypto_generichash_state st;
    uint8_t hash[RING_DIGEST_LEN];
    uint64_t le;

    if (crypto_generichash_init(&st, NULL, 0, sizeof(hash)) != 0 ||
        crypto_generichash_update(&st, r->seed, RING_SEED_LEN) != 0) {
        return RK_EINVAL;
    }
    for (size_t i = 0; i < r->n_members; i++) {
        uint32_t tokens_be = htobe32(r->nodes[i].tokens);

        if (ring_digest_name(&st, node_id(r, i)) != 0 ||
            ring_digest_name(&st, node_rack(r, i)) != 0 ||
            crypto_generichash_update(&st, (const uint8_t *)&tokens_be, sizeof(tokens_be)) != 0) {
            return RK_EINVAL;
        }
    }
    if (crypto_generichash_final(&st, hash, sizeof(hash)) != 0) {
        return RK_EINVAL;
    }
    memcpy(&le, hash, sizeof(le));
    r->digest = le64toh(le);
    return 0;
}

int ring_create(struct ring **out, const uint8_t seed[RING_SEED_LEN],
                const struct ring_member *members, size_t n)
{
    struct ring *r;
    int err;

    *out = NULL;
    if (n > RING_MEMBERS_MAX) {
        return RK_ETOOBIG;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return RK_ENOMEM;
    }
    memcpy(r->seed, seed, RING_SEED_LEN);
    r->n_members = n;
    r->nodes = calloc(n ? n : 1, sizeof(*r->nodes));
    if (r->nodes == NULL) {
        err = RK_ENOMEM;
        goto out_destroy;
    }
    err = ring_load_members(r, members, n);
    if (err != 0) {
        goto out_destroy;
    }
    err = ring_build_tokens(r);
    if (err != 0) {
        goto out_destroy;
    }
    if (n > 0) {
        err = ring_build_pref(r);
        if (err == 0) {
            err = ring_build_buckets(r);
        }
        if (err != 0) {
            goto out_destroy;
        }
    }
    err = ring_compute_digest(r);
    if (err != 0) {
        goto out_destroy;
    }
    atomic_init(&r->refs, 1);
    *out = r;
    return 0;
out_destroy:
    ring_free(r);
    return err;
}

size_t ring_heap_bytes(size_t members, size_t racks, uint32_t tokens, size_t names_len)
{
    size_t t = members * tokens;
    size_t width = members < RING_RF_MAX ? members : RING_RF_MAX;
    size_t per_token = sizeof(struct ring_slot) + sizeof(uint16_t) + sizeof(uint16_t);

    if (width > RING_PREF_HEAD) {
        per_token += (width - RING_PREF_HEAD) * sizeof(uint16_t);
    }
    return sizeof(struct ring) + members * sizeof(struct ring_node) + names_len +
           racks * sizeof(uint32_t) + t * per_token +
           (((size_t)1 << ring_bucket_bits(t)) + 1) * sizeof(uint32_t);
}

const struct ring *ring_ref(const struct ring *r)
{
    struct ring *w = (struct ring *)r; /* the count is not part of the ring's value */
    unsigned before;

    if (r == NULL) {
        return NULL;
    }
    before = atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed);
    assert(before > 0 && before < UINT_MAX && "ring_ref: a freed ring, or too many references");
    (void)before;
    return r;
}

void ring_unref(const struct ring *r)
{
    struct ring *w = (struct ring *)r;
    unsigned before;

    if (r == NULL) {
        return;
    }
    /* release: this holder's reads happen before the free; acquire: the free after all of them */
    before = atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel);
    assert(before > 0 && "ring_unref: more releases than references");
    if (before == 1) {
        ring_free(w);
    }
}

unsigned ring_refs(const struct ring *r)
{
    return atomic_load_explicit(&((struct ring *)r)->refs, memory_order_relaxed);
}

uint64_t ring_digest(const struct ring *r)
{
    return r->digest;
}

const uint8_t *ring_seed(const struct ring *r)
{
    return r->seed;
}

size_t ring_member_count(const struct ring *r)
{
    return r->n_members;
}

size_t ring_rack_count(const struct ring *r)
{
    return r->n_racks;
}

size_t ring_token_count(const struct ring *r)
{
    return r->n_tokens;
}

const char *ring_member_id(const struct ring *r, uint32_t member)
{
    assert(member < r->n_members && "ring_member_id: member index out of range");
    return node_id(r, member);
}

const char *ring_member_rack(const struct ring *r, uint32_t member)
{
    assert(member < r->n_members && "ring_member_rack: member index out of range");
    return node_rack(r, member);
}

uint32_t ring_member_tokens(const struct ring *r, uint32_t member)
{
    assert(member < r->n_members && "ring_member_tokens: member index out of range");
    return r->nodes[member].tokens;
}

int ring_member_find(const struct ring *r, const char *id)
{
    size_t len = strnlen(id, RING_NAME_MAX + 1);
    size_t lo = 0, hi = r->n_members;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = id_cmp(node_id(r, mid), r->nodes[mid].id_len, id, len);
        if (c == 0) {
            return (int)mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return RK_ENOTFOUND;
}

struct ring_token ring_token_at(const struct ring *r, size_t i)
{
    assert(i < r->n_tokens && "ring_token_at: token index out of range");
    return (struct ring_token){r->slot[i].pos, r->tok_member[i], r->tok_index[i]};
}

uint64_t ring_key_position(const struct ring *r, const void *key, size_t len)
{
    return ring_hash(r->seed, key, len);
}

/* First of a[0..n) (n >= 1) whose position is >= pos, or n when there is none. */
static size_t lower_bound(const struct ring_slot *a, size_t n, uint64_t pos)
{
    const struct ring_slot *base = a;

    while (n > 1) {
        size_t half = n / 2;
        base = base[half].pos < pos ? base + half : base;
        n -= half;
    }
    return (size_t)(base - a) + (base->pos < pos);
}

/* First token with position >= pos, or n_tokens: the bucket, then its tokens. */
static size_t token_lower_bound(const struct ring *r, uint64_t pos)
{
    size_t b = (size_t)(pos >> r->bucket_shift);
    size_t lo = r->bucket[b], hi = r->bucket[b + 1];

    if (hi - lo > RING_BUCKET_SCAN_MAX) {
        return lo + lower_bound(r->slot + lo, hi - lo, pos);
    }
    while (lo < hi && r->slot[lo].pos < pos) {
        lo++;
    }
    return lo;
}

int ring_owner_token(const struct ring *r, uint64_t pos, size_t *token, bool *wrapped)
{
    size_t t;

    if (r->n_tokens == 0) {
        return RK_EEMPTY;
    }
    t = token_lower_bound(r, pos);
    if (wrapped != NULL) {
        *wrapped = t == r->n_tokens;
    }
    *token = t == r->n_tokens ? 0 : t;
    return 0;
}

int ring_preflist(const struct ring *r, uint64_t pos, unsigned rf, uint32_t *out, size_t *n)
{
    uint16_t row[RING_RF_MAX];
    size_t t, k;

    if (rf < 1 || rf > RING_RF_MAX) {
        return RK_ERANGE;
    }
    if (ring_owner_token(r, pos, &t, NULL) != 0) {
        return RK_EEMPTY;
    }
    k = rf < r->pref_width ? rf : r->pref_width;
    pref_load(r, t, row, k);
    for (size_t i = 0; i < k; i++) {
        out[i] = row[i];
    }
    *n = k;
    return 0;
}

static void step_none(void *ctx, enum ring_step step, size_t token, uint32_t member)
{
    (void)ctx;
    (void)step;
    (void)token;
    (void)member;
}

int ring_preflist_walk(const struct ring *r, uint64_t pos, unsigned rf, uint32_t *out, size_t *n,
                       ring_step_fn step, void *ctx)
{
    uint8_t *seen, *rack_used;
    size_t *aside, start, k = 0, n_aside = 0;

    if (rf < 1 || rf > RING_RF_MAX) {
        return RK_ERANGE;
    }
    if (ring_owner_token(r, pos, &start, NULL) != 0) {
        return RK_EEMPTY;
    }
    step = step != NULL ? step : step_none;
    seen = calloc(r->n_members, 1);
    rack_used = calloc(r->n_racks, 1);
    aside = malloc(r->n_members * sizeof(*aside));
    if (seen == NULL || rack_used == NULL || aside == NULL) {
        free(seen);
        free(rack_used);
        free(aside);
        return RK_ENOMEM;
    }
    for (size_t s = 0; s < r->n_tokens && k < rf; s++) {
        size_t t = (start + s) % r->n_tokens;
        uint32_t m = r->tok_member[t];
        uint32_t rk = r->nodes[m].rack_index;
        if (seen[m]) {
            step(ctx, RING_STEP_SEEN, t, m);
            continue;
        }
        seen[m] = 1;
        if (!rack_used[rk]) {
            rack_used[rk] = 1;
            out[k++] = m;
            step(ctx, RING_STEP_CHOSEN, t, m);
        } else {
            aside[n_aside++] = t;
            step(ctx, RING_STEP_SET_ASIDE, t, m);
        }
    }
    for (size_t i = 0; i < n_aside && k < rf; i++) {
        out[k++] = r->tok_member[aside[i]];
        step(ctx, RING_STEP_APPENDED, aside[i], r->tok_member[aside[i]]);
    }
    *n = k;
    free(seen);
    free(rack_used);
    free(aside);
    return 0;
}

/* Length of the arc (prev, cur] that ends at the first of n positions when first. */
static ring_len arc_len(uint64_t prev, uint64_t cur, bool first)
{
    return first ? RING_CIRCLE - prev + cur : (ring_len)(cur - prev);
}

/* Length of the arc owned by token t (file header, "Arcs"). */
static ring_len token_arc(const struct ring *r, size_t t)
{
    return arc_len(r->slot[t ? t - 1 : r->n_tokens - 1].pos, r->slot[t].pos, t == 0);
}

int ring_ownership(const struct ring *r, unsigned rf, ring_len *own)
{
    size_t k;

    if (rf < 1 || rf > RING_RF_MAX) {
        return RK_ERANGE;
    }
    if (r->n_tokens == 0) {
        return RK_EEMPTY;
    }
    k = rf < r->pref_width ? rf : r->pref_width;
    for (size_t m = 0; m < r->n_members; m++) {
        own[m] = 0;
    }
    for (size_t t = 0; t < r->n_tokens; t++) {
        ring_len len = token_arc(r, t);
        uint16_t row[RING_RF_MAX];
        pref_load(r, t, row, k);
        for (size_t i = 0; i < k; i++) {
            own[row[i]] += len;
        }
    }
    return 0;
}

double ring_len_fraction(ring_len len)
{
    return (double)len / 18446744073709551616.0;
}

/* The state ring_diff() carries while it walks the merged boundaries. */
struct diff_walk {
    const struct ring *old_ring, *new_ring;
    size_t k_old, k_new;
    int *new_to_old; /* new member index -> old member index, or -1 */
    struct ring_diff *out;
    size_t cap;
};

/* The first k preference entries of the token owning pos (ring not empty). */
static void pref_row_at(const struct ring *r, uint64_t pos, uint16_t *out, size_t k)
{
    size_t t = token_lower_bound(r, pos);

    pref_load(r, t == r->n_tokens ? 0 : t, out, k);
}

static bool lists_equal(const struct diff_walk *w, const uint16_t *o, const uint16_t *n)
{
    if (w->k_old != w->k_new) {
        return false;
    }
    for (size_t i = 0; i < w->k_old; i++) {
        if (w->new_to_old[n[i]] != (int)o[i]) {
            return false;
        }
    }
    return true;
}

static bool move_same_lists(const struct ring_move *a, const struct ring_move *b)
{
    if (a->n_old != b->n_old || a->n_new != b->n_new) {
        return false;
    }
    for (size_t i = 0; i < a->n_old; i++) {
        if (a->old_list[i] != b->old_list[i]) {
            return false;
        }
    }
    for (size_t i = 0; i < a->n_new; i++) {
        if (a->new_list[i] != b->new_list[i]) {
            return false;
        }
    }
    return true;
}

static bool list_has(const uint16_t *l, size_t n, int m)
{
    for (size_t i = 0; i < n; i++) {
        if ((int)l[i] == m) {
            return true;
        }
    }
    return false;
}

static void move_fill(const struct diff_walk *w, struct ring_move *mv, const uint16_t *o,
                      const uint16_t *n)
{
    const struct ring *ro = w->old_ring, *rn = w->new_ring;

    mv->n_old = (uint8_t)w->k_old;
    mv->n_new = (uint8_t)w->k_new;
    mv->n_lose = mv->n_gain = 0;
    for (size_t i = 0; i < w->k_old; i++) {
        mv->old_list[i] = node_id(ro, o[i]);
        bool kept = false;
        for (size_t j = 0; j < w->k_new; j++) {
            kept = kept || w->new_to_old[n[j]] == (int)o[i];
        }
        if (!kept) {
            mv->lose[mv->n_lose++] = node_id(ro, o[i]);
        }
    }
    for (size_t j = 0; j < w->k_new; j++) {
        mv->new_list[j] = node_id(rn, n[j]);
        int m = w->new_to_old[n[j]];
        if (m < 0 || !list_has(o, w->k_old, m)) {
            mv->gain[mv->n_gain++] = node_id(rn, n[j]);
        }
    }
}

/* Record arc (start, end] if its lists differ, merging with the previous move. */
static int diff_arc(struct diff_walk *w, uint64_t start, uint64_t end, ring_len len)
{
    uint16_t o[RING_RF_MAX], n[RING_RF_MAX];
    struct ring_diff *d = w->out;
    struct ring_move mv;

    pref_row_at(w->old_ring, end, o, w->k_old);
    pref_row_at(w->new_ring, end, n, w->k_new);
    if (len == 0 || lists_equal(w, o, n)) {
        return 0;
    }
    mv.start = start;
    mv.end = end;
    mv.len = len;
    move_fill(w, &mv, o, n);
    d->changed += len;
    d->moved += (mv.n_lose + mv.n_gain) > 0 ? len : 0;
    d->copies += len * mv.n_gain;
    if (d->n_moves > 0 && d->moves[d->n_moves - 1].end == start &&
        move_same_lists(&d->moves[d->n_moves - 1], &mv)) {
        d->moves[d->n_moves - 1].end = end;
        d->moves[d->n_moves - 1].len += len;
        return 0;
    }
    if (grow_array(&d->moves, &w->cap, d->n_moves + 1, sizeof(*d->moves)) != 0) {
        return RK_ENOMEM;
    }
    d->moves[d->n_moves++] = mv;
    return 0;
}

/* The merged, de-duplicated token positions of both rings. */
static uint64_t *merged_bounds(const struct ring *a, const struct ring *b, size_t *n)
{
    uint64_t *m = malloc((a->n_tokens + b->n_tokens) * sizeof(*m));
    size_t i = 0, j = 0, k = 0;

    if (m == NULL) {
        return NULL;
    }
    while (i < a->n_tokens || j < b->n_tokens) {
        uint64_t v;
        if (j == b->n_tokens || (i < a->n_tokens && a->slot[i].pos <= b->slot[j].pos)) {
            v = a->slot[i++].pos;
        } else {
            v = b->slot[j++].pos;
        }
        if (k == 0 || m[k - 1] != v) {
            m[k++] = v;
        }
    }
    *n = k;
    return m;
}

int ring_diff(const struct ring *old_ring, const struct ring *new_ring, unsigned rf,
              struct ring_diff *out)
{
    struct diff_walk w = {.old_ring = old_ring, .new_ring = new_ring, .out = out};
    uint64_t *b;
    size_t nb;
    int err = 0;

    memset(out, 0, sizeof(*out));
    if (rf < 1 || rf > RING_RF_MAX) {
        return RK_ERANGE;
    }
    if (memcmp(old_ring->seed, new_ring->seed, RING_SEED_LEN) != 0) {
        return RK_EMISMATCH;
    }
    if (old_ring->n_tokens == 0 || new_ring->n_tokens == 0) {
        return RK_EEMPTY;
    }
    w.k_old = rf < old_ring->pref_width ? rf : old_ring->pref_width;
    w.k_new = rf < new_ring->pref_width ? rf : new_ring->pref_width;
    w.new_to_old = malloc(new_ring->n_members * sizeof(*w.new_to_old));
    b = merged_bounds(old_ring, new_ring, &nb);
    if (w.new_to_old == NULL || b == NULL) {
        err = RK_ENOMEM;
        goto out_free;
    }
    for (size_t m = 0; m < new_ring->n_members; m++) {
        int o = ring_member_find(old_ring, node_id(new_ring, m));
        w.new_to_old[m] = o >= 0 ? o : -1;
    }
    for (size_t i = 0; i < nb && err == 0; i++) {
        uint64_t prev = b[i ? i - 1 : nb - 1];
        err = diff_arc(&w, prev, b[i], arc_len(prev, b[i], i == 0));
    }
    /* The wrap arc comes first; join it to a matching last move. */
    if (err == 0 && out->n_moves > 1) {
        struct ring_move *first = &out->moves[0], *last = &out->moves[out->n_moves - 1];
        if (last->end == first->start && move_same_lists(first, last)) {
            first->start = last->start;
            first->len += last->len;
            out->n_moves--;
        }
    }
out_free:
    free(w.new_to_old);
    free(b);
    if (err != 0) {
        ring_diff_free(out);
    }
    return err;
}

void ring_diff_free(struct ring_diff *d)
{
    free(d->moves);
    memset(d, 0, sizeof(*d));
}
