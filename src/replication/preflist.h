/*
 * preflist.h - a key's preference list as a coordinator uses it: the
 * replicas of PLACEMENT.md section 5, each marked up or down, and, under a
 * sloppy quorum, a fallback node standing in for every replica that is down.
 *
 * Replicas.  nodes[0 .. n_replicas) are exactly ring_preflist(): the same
 * members in the same order, whatever is up.  nodes[0] is the primary.
 *
 * Fallbacks.  Only when sloppy and only for replicas that are down.  The
 * section-5 walk stops at the token where it chose its last replica (or
 * goes once around when the ring has fewer racks than rf); the fallback
 * walk continues from the next token, wrapping, visiting every token at
 * most once.  For each down replica in order, it takes the next node met
 * that is up, not already in nodes[], and in a rack used by neither an up
 * replica nor a fallback chosen so far; nodes it passes over because their
 * rack is used are set aside in the order met.  When the walk ends without
 * a rack-distinct node, the first node set aside and not yet taken stands
 * in instead (as section 5 appends set-aside nodes).  A down replica left
 * with no candidate has no fallback.  A node is never in nodes[] twice.
 * The result depends on the ring, pos, rf and the up answers alone.
 *
 * Cost.  With every replica up (or !sloppy) and !explain, preflist_build()
 * is ring_owner_token() and ring_preflist() (two bucket-indexed lookups)
 * plus one up call per replica, and allocates nothing: the coordinator
 * builds one per request.  A down replica costs a section-5 walk, a
 * per-member state array and the fallback walk, which usually ends after a
 * few tokens and goes once around only when no rack-distinct node is up.
 *
 * Explain.  With explain, skips lists the steps of both walks that did not
 * put their node in nodes[], in walk order: a token whose node the walk had
 * already chosen (SAME_NODE, section-5 walk) or that is already in nodes[]
 * (USED, fallback walk), a node set aside because its rack was used and
 * never taken afterwards (RACK_USED), and a node that is down (DOWN: for a
 * down replica, replaced_by is the index of its fallback or -1; a down node
 * met by the fallback walk has -1).  Each walk reports a node at most once
 * per reason, at the first token it was skipped for it: a node meets the
 * walk on every one of its tokens, and repeating the reason explains
 * nothing more.
 */
#ifndef RINGKV_PREFLIST_H
#define RINGKV_PREFLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

enum preflist_role { PREFLIST_PRIMARY, PREFLIST_REPLICA, PREFLIST_FALLBACK };

struct preflist_node {
    uint32_t member;         /* ring member index */
    enum preflist_role role; /* the first replica is PRIMARY */
    bool up;                 /* as up_fn said */
    int stands_for; /* FALLBACK: index in nodes[] of the down replica it replaces; else -1 */
};

enum preflist_skip_reason {
    PREFLIST_SKIP_SAME_NODE, /* section-5 walk: the token's node was already chosen */
    PREFLIST_SKIP_RACK_USED, /* its rack was already used, and the node was not taken later */
    PREFLIST_SKIP_DOWN,      /* the node is down */
    PREFLIST_SKIP_USED,      /* fallback walk: the node is already in nodes[] */
};

struct preflist_skip {
    size_t token; /* index (ring order) of the token visited */
    uint32_t member;
    enum preflist_skip_reason reason;
    int replaced_by; /* DOWN: index in nodes[] of its fallback, or -1; else -1 */
};

struct preflist {
    uint64_t pos;       /* the key's position */
    size_t owner_token; /* index (ring order) of the token that owns pos; only when explain */
    size_t n_replicas;  /* min(rf, members): nodes[0 .. n_replicas) are the replicas */
    size_t n;           /* n_replicas + fallbacks: nodes[n_replicas .. n) are fallbacks */
    struct preflist_node nodes[2 * RING_RF_MAX];
    struct preflist_skip *skips; /* only when explain: see the top of this file; owned */
    size_t n_skips;
};

/* Whether member (an index of the ring passed to preflist_build()) is up. */
typedef bool (*preflist_up_fn)(void *ctx, uint32_t member);

/*
 * Build the preference list of position pos on r for rf, with fallbacks
 * when sloppy, into *out (the caller's memory; nothing of it is read).  up
 * may be NULL (every member up); it is called at most once per member, from
 * this call only.  explain fills skips.  Errors: RK_ERANGE for rf outside
 * 1 .. RING_RF_MAX, RK_EEMPTY for an empty ring, RK_ENOMEM; *out then owns
 * nothing.  On success preflist_free() releases what *out owns (nothing
 * unless explain), and r must outlive the use of its member indices.
 */
int preflist_build(const struct ring *r, uint64_t pos, unsigned rf, bool sloppy, preflist_up_fn up,
                   void *ctx, bool explain, struct preflist *out);

/* Release what p owns (the skips); p stays readable, with no skips.  NULL is ignored. */
void preflist_free(struct preflist *p);

/* "primary", "replica" or "fallback". */
const char *preflist_role_name(enum preflist_role role);

/* "same_node", "rack_used", "down" or "used": stable, for --json and tests. */
const char *preflist_skip_name(enum preflist_skip_reason reason);

#endif
