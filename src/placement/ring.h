/*
 * ring.h - the placement function of PLACEMENT.md (contract version 1).
 *
 * A ring is built once from (seed, members with id, rack and token count) and
 * is immutable afterwards: a membership change builds a new ring, so a lookup
 * never sees a half-built one and a ring may be read from any number of
 * threads without locks.  Nothing here does I/O.
 *
 * Lifetime.  A ring is reference-counted: ring_create() returns it with one
 * reference, ring_ref() takes another, ring_unref() drops one and frees the
 * ring with the last.  Whoever keeps a ring beyond the call that handed it
 * over (a request that must finish under the ring it started with, while a
 * newer ring is put in force) takes a reference; every pointer into the ring
 * (ids, racks, ring_diff() moves) stays valid while it holds one.
 *
 * Name.  A ring is named by its digest, a 64-bit hash of its exact content:
 * BLAKE2b with an 8-byte output (the digest length is a BLAKE2b parameter:
 * BLAKE2b-64, not a longer hash cut short), unkeyed, over
 *
 *     seed          16 bytes, the ring seed
 *     then, for each member of the ring, in id order (ring index order):
 *     id_len        1 byte, 1 .. 64
 *     id            id_len bytes
 *     rack_len      1 byte, 1 .. 64
 *     rack          rack_len bytes
 *     tokens        4 bytes, the token count, unsigned big-endian
 *
 * with the 8 output bytes read as a little-endian integer, as ring_hash()
 * reads SipHash.  In Python: int.from_bytes(hashlib.blake2b(data,
 * digest_size=8).digest(), "little").  An empty ring hashes the seed alone.
 * The lengths make the encoding prefix-free, so different member lists never
 * encode to the same bytes: two rings with the same digest place every key
 * alike, on every node.
 *
 * Members are identified by their index in the ring, 0 .. ring_member_count()-1,
 * in ascending id order (memcmp, shorter prefix first), whatever order they
 * were given in.  Indices are only meaningful for the ring that returned them;
 * compare members of two rings by id.
 */
#ifndef RINGKV_RING_H
#define RINGKV_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RING_SEED_LEN 16
/* PLACEMENT.md section 2: ids and racks are 1..64 bytes of [A-Za-z0-9._:-]. */
#define RING_NAME_MAX 64
#define RING_TOKENS_MIN 1
#define RING_TOKENS_MAX 4096
/*
 * Members in one ring.  Member indices are stored as uint16_t in the
 * per-token preference cache (ring.c asserts the bound fits).  8192 is
 * above the size at which a gossip-based Dynamo-style cluster is run
 * (Cassandra's largest documented clusters are around 1000 nodes) and
 * leaves room for the 5000 members, plus one joining, that the gossip
 * simulator is asked to run.  A member table costs about 1.2 kB per
 * entry, allocated as members arrive, never at this bound.
 */
#define RING_MEMBERS_MAX 8192
/*
 * Largest replication factor.  Production Dynamo-style stores use 3 and
 * rarely more than 5-7; a bound keeps every preference list a small fixed
 * array, precomputed per token when the ring is built.
 */
#define RING_RF_MAX 16

/* The default seed: bytes 00 01 .. 0f, the key of the SipHash paper's vectors. */
extern const uint8_t ring_default_seed[RING_SEED_LEN];

struct ring;

/* A member as given to ring_create(); the strings are borrowed for the call. */
struct ring_member {
    const char *id;   /* NUL-terminated node id */
    const char *rack; /* NUL-terminated rack name */
    uint32_t tokens;  /* 1 .. RING_TOKENS_MAX */
};

/* One token of the ring, in ring order. */
struct ring_token {
    uint64_t pos;    /* position on the circle */
    uint32_t member; /* member index */
    uint32_t index;  /* token index i within its member, 0 .. tokens-1 */
};

/*
 * Length of part of the circle, in positions.  The whole circle is 2^64
 * positions, one more than uint64_t holds, so lengths and sums of lengths
 * are 128-bit.
 */
typedef unsigned __int128 ring_len;
#define RING_CIRCLE ((ring_len)1 << 64)

/* H(seed, data): SipHash-2-4 read as a little-endian 64-bit integer. */
uint64_t ring_hash(const uint8_t seed[RING_SEED_LEN], const void *data, size_t len);

/* True when (name, len) is a valid node id or rack name (PLACEMENT.md section 2). */
bool ring_name_valid(const char *name, size_t len);

/*
 * Check one member description: RK_EINVAL for a bad id or rack, RK_ERANGE for
 * a token count outside 1 .. RING_TOKENS_MAX.  When what is not NULL it is
 * set to "id", "rack" or "tokens" on error, naming the bad field.
 */
int ring_member_check(const struct ring_member *m, const char **what);

/*
 * Build a ring.  members[0..n) may come in any order; n may be 0 (an empty
 * ring, on which every lookup returns RK_EEMPTY).  The ring copies what it
 * needs.  Errors: RK_EINVAL or RK_ERANGE for an invalid member (see
 * ring_member_check), RK_EDUP when two members share an id, RK_ETOOBIG for
 * more than RING_MEMBERS_MAX members, RK_ENOMEM.  On success *out is the
 * ring with one reference, the caller's; ring_unref() drops it.
 */
int ring_create(struct ring **out, const uint8_t seed[RING_SEED_LEN],
                const struct ring_member *members, size_t n);

/*
 * Take one more reference to r and return r (NULL stays NULL).  r must be
 * alive: the caller holds a reference, or borrows r from someone who does
 * for the duration of this call.
 */
const struct ring *ring_ref(const struct ring *r);

/* Drop one reference; the last one frees r.  NULL is ignored. */
void ring_unref(const struct ring *r);

/* References held now: for tests and diagnostics, not for deciding anything. */
unsigned ring_refs(const struct ring *r);

/*
 * The bytes ring_create() allocates for a ring of members members of
 * tokens tokens each, in racks racks (their sizes as asked of malloc, not
 * the allocator's own overhead), names_len being the bytes of the members'
 * ids and the racks' names with a NUL each.  For sizing before building:
 * the gossip simulator holds a ring or two in each of its N member tables.
 */
size_t ring_heap_bytes(size_t members, size_t racks, uint32_t tokens, size_t names_len);

/* The ring's name: the digest of the top of this file. */
uint64_t ring_digest(const struct ring *r);

const uint8_t *ring_seed(const struct ring *r);
size_t ring_member_count(const struct ring *r);
size_t ring_rack_count(const struct ring *r);
size_t ring_token_count(const struct ring *r);
/* Strings are owned by the ring and valid while a reference to it is held. */
const char *ring_member_id(const struct ring *r, uint32_t member);
const char *ring_member_rack(const struct ring *r, uint32_t member);
uint32_t ring_member_tokens(const struct ring *r, uint32_t member);
/* The member index of id, or RK_ENOTFOUND. */
int ring_member_find(const struct ring *r, const char *id);
/* Token i (0 .. ring_token_count()-1) in ring order. */
struct ring_token ring_token_at(const struct ring *r, size_t i);

/*
 * Section 4's total order of tokens: by position (unsigned), then node id
 * by bytes (a shorter id that is a prefix of a longer one first), then token
 * index.  Returns <0, 0 or >0.  ring_create() sorts with a stable radix sort
 * that yields this order; the comparator states it for tests and tools.
 */
int ring_token_order(uint64_t pos_a, const char *id_a, uint32_t index_a, uint64_t pos_b,
                     const char *id_b, uint32_t index_b);

/* A key's position: H(seed, key). */
uint64_t ring_key_position(const struct ring *r, const void *key, size_t len);

/*
 * The index (in ring order) of the token that owns position pos: the first
 * token whose position is >= pos, or token 0 when pos is past the last
 * token (the wrap-around; *wrapped is then set, when wrapped is not NULL).
 * Returns RK_EEMPTY on an empty ring.
 */
int ring_owner_token(const struct ring *r, uint64_t pos, size_t *token, bool *wrapped);

/*
 * The preference list of position pos (PLACEMENT.md section 5), primary
 * first: writes min(rf, ring_member_count()) member indices to out, which
 * holds at least rf entries, and their number to *n.  A binary search and a
 * copy from the per-token table built by ring_create().  Errors: RK_ERANGE
 * for rf outside 1 .. RING_RF_MAX, RK_EEMPTY.
 */
int ring_preflist(const struct ring *r, uint64_t pos, unsigned rf, uint32_t *out, size_t *n);

/* What a step of the section-5 walk did with the token it visited. */
enum ring_step {
    RING_STEP_CHOSEN,    /* its node's rack was unused: chosen */
    RING_STEP_SEEN,      /* its node was already chosen or set aside: skipped */
    RING_STEP_SET_ASIDE, /* its node's rack was already used: set aside */
    RING_STEP_APPENDED,  /* after the walk: a set-aside node appended */
};

/*
 * Called for every step of ring_preflist_walk().  token is the index of the
 * visited token in ring order (for RING_STEP_APPENDED, the token at which the
 * node was set aside); member its node.
 */
typedef void (*ring_step_fn)(void *ctx, enum ring_step step, size_t token, uint32_t member);

/*
 * The preference list computed by walking the ring token by token, exactly as
 * PLACEMENT.md section 5 words it.  Same result and errors as
 * ring_preflist(), at the cost of a walk; it exists as the reference the
 * fast path is tested against and to explain placement step by step (step
 * may be NULL).
 */
int ring_preflist_walk(const struct ring *r, uint64_t pos, unsigned rf, uint32_t *out, size_t *n,
                       ring_step_fn step, void *ctx);

/*
 * Replica ownership: for every member m, own[m] receives the length of the
 * part of the circle whose preference list (for rf) contains m, summed from
 * exact arc lengths.  With rf 1 that is primary ownership, and the values sum
 * to RING_CIRCLE.  own holds ring_member_count() entries.
 */
int ring_ownership(const struct ring *r, unsigned rf, ring_len *own);

/*
 * A ring difference: an arc of the circle whose preference list differs
 * between two rings, with the members (by id) that lose and gain it.
 * Keys whose position p satisfies start < p <= end (cyclically: an arc with
 * start >= end wraps past 2^64-1) are on the arc.
 */
struct ring_move {
    uint64_t start; /* exclusive */
    uint64_t end;   /* inclusive */
    ring_len len;   /* positions on the arc */
    uint8_t n_old, n_new, n_lose, n_gain;
    /* Ids are borrowed from the two rings and valid while both live. */
    const char *old_list[RING_RF_MAX];
    const char *new_list[RING_RF_MAX];
    const char *lose[RING_RF_MAX]; /* in old_list and not in new_list */
    const char *gain[RING_RF_MAX]; /* in new_list and not in old_list */
};

struct ring_diff {
    struct ring_move *moves; /* owned; ring_diff_free() releases it */
    size_t n_moves;
    /* Length of the circle whose preference list changed (order or set). */
    ring_len changed;
    /* Length whose replica set changed: at least one gain or loss. */
    ring_len moved;
    /* Sum over arcs of len x gains: replica copies that must be streamed. */
    ring_len copies;
};

/*
 * Compare the preference lists (for rf) of two rings built with the same
 * seed.  Adjacent arcs with identical old and new lists are merged into one
 * move.  Errors: RK_EMISMATCH when the seeds differ, RK_ERANGE for a bad rf,
 * RK_EEMPTY when either ring is empty, RK_ENOMEM.
 */
int ring_diff(const struct ring *old_ring, const struct ring *new_ring, unsigned rf,
              struct ring_diff *out);
void ring_diff_free(struct ring_diff *d);

/* Convenience: a length as a fraction of the circle. */
double ring_len_fraction(ring_len len);

#endif
