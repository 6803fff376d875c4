/*
 * sim.h - the placement simulator: how evenly, and how movably, a scheme
 * spreads keys over N nodes.
 *
 * For a chosen cluster shape (N nodes named node-1 .. node-N, assigned
 * round-robin to racks rack-1 .. rack-R, rf replicas) the simulator measures,
 * for one scheme:
 *
 *   - ownership balance: each node's share of primary ownership, reported as
 *     max/mean, min/mean and stddev/mean (population stddev over the nodes);
 *   - replica load: each node's share of all rf replicas, as max/mean;
 *   - movement on a join (node-(N+1) added, in rack ((N) mod R) + 1 by the
 *     same round-robin) and on a removal (node-N removed): the fraction of
 *     keys whose owner changes, against the ideal 1/(N+1) and 1/N, and the
 *     replica copies that must be streamed, as a fraction of all replicas
 *     after a join (before a removal), whose ideal is the same 1/(N+1), 1/N
 *     for schemes without racks (for the rack-aware ring the joiner's rack
 *     decides it: sim_replica_share()).
 *
 * The ring of PLACEMENT.md is measured exactly: ownership from the 128-bit
 * arc lengths of ring_ownership(), movement from ring_diff() (`moved` with
 * rf 1 for the owner, `copies` with rf for the replicas).  Rack awareness
 * applies to the ring only.  The teaching comparisons - hash % N,
 * rendezvous (highest random weight), jump consistent hash and bounded-load
 * consistent hashing - are measured over a sample of M keys ("key-0" ..
 * "key-(M-1)", hashed with ring_hash()), so their figures carry sampling
 * noise of about sqrt((N-1)/M) in stddev/mean; sim_sampling_noise() states
 * it.  The definitions of the schemes are in sim.c's header.
 *
 * Every figure is averaged over S ring seeds: seed 0 is the configured seed
 * itself (so one seed measures the cluster you run), seed j > 0 is derived
 * from it by sim_seed_derive().  The same seeds drive the key sample, so a
 * run is a pure function of its configuration and is reproducible.
 */
#ifndef RINGKV_SIM_H
#define RINGKV_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/*
 * Largest simulated cluster.  Cassandra's largest documented clusters are
 * around 1000 nodes (ring.h).  Rendezvous costs N x M weights per world:
 * at this bound, 256 tokens and the largest key sample, one seed took 7 s
 * (measured on the development machine), so a mistyped --nodes cannot run
 * for hours.
 */
#define SIM_NODES_MAX 1024
/* Largest number of seeds averaged over: beyond ~100 the mean stops moving. */
#define SIM_SEEDS_MAX 100
/*
 * Sampled keys.  Below 1000 keys per run the sampling noise (about
 * sqrt(N/M)) swamps the differences being taught; the upper bound keeps the
 * per-key replica lists (3 worlds x M x rf x 2 bytes) under 100 MB.
 */
#define SIM_KEYS_MIN 1000
#define SIM_KEYS_MAX 1000000
/*
 * Bounded-load factor c: no node takes more than ceil(c x average) keys.
 * Mirrokni, Thorup and Zadimoghaddam (2018) leave c free; 1.25 is the
 * default of the bounded-load balancers in brpc (chash_bounded_load_factor)
 * and lafikl/liblb, after Vimeo's deployment of the algorithm.
 */
#define SIM_BOUNDED_C 1.25

enum sim_scheme {
    SIM_RING,       /* PLACEMENT.md: tokens, rack-aware preference lists; exact */
    SIM_BOUNDED,    /* bounded-load consistent hashing on a ring of T tokens */
    SIM_MOD,        /* hash % N */
    SIM_RENDEZVOUS, /* highest random weight */
    SIM_JUMP,       /* Lamping & Veach jump consistent hash */
    SIM_SCHEME_COUNT
};

struct sim_config {
    uint32_t nodes; /* N: 1 .. SIM_NODES_MAX */
    uint32_t racks; /* R: 1 .. N */
    unsigned rf;    /* 1 .. RING_RF_MAX */
    uint32_t seeds; /* S: 1 .. SIM_SEEDS_MAX */
    uint32_t keys;  /* M: SIM_KEYS_MIN .. SIM_KEYS_MAX, for the sampled schemes */
    uint8_t seed[RING_SEED_LEN];
};

/* The figures of one scheme at one seed, or their mean over seeds. */
struct sim_figures {
    double max_mean; /* primary ownership: largest node share / mean share */
    double min_mean;
    double sd_mean;          /* population stddev of the shares / mean */
    double replica_max_mean; /* replica load: largest / mean, with rf and racks */
    double join_moved;       /* fraction of keys whose owner changes on the join */
    double join_copies;      /* replica copies streamed / replicas after the join */
    double remove_moved;     /* the same for the removal; 0 when N == 1 */
    double remove_copies;
};

/* One row of a simulation: which scheme and token count in, figures out. */
struct sim_row {
    enum sim_scheme scheme;  /* in */
    uint32_t tokens;         /* in: tokens per node for SIM_RING and SIM_BOUNDED, else 0 */
    struct sim_figures mean; /* out: the mean over seeds */
    double max_mean_worst;   /* out: the largest max_mean of any seed */
    bool removal;            /* out: false when N == 1 (nothing to remove) */
};

/*
 * The N+1 members a simulation uses: node-1 .. node-(N+1) with rack-1 ..
 * rack-R assigned round-robin and T tokens each.  The first n entries are
 * the cluster of n nodes, so the join and the removal are prefixes of one
 * array.  Strings are owned; release with sim_members_deinit().
 */
struct sim_members {
    struct ring_member *m;
    size_t n; /* N + 1 */
};

/* Fill ms for N = nodes; RK_ENOMEM, RK_ERANGE for a bad count. */
int sim_members_init(struct sim_members *ms, uint32_t nodes, uint32_t racks, uint32_t tokens);
void sim_members_deinit(struct sim_members *ms);

/*
 * Check a configuration: 0, or RK_ERANGE with *what naming the bad field
 * ("nodes", "racks", "rf", "seeds", "keys") when what is not NULL.
 */
int sim_config_check(const struct sim_config *cfg, const char **what);

/* A default configuration: 10 nodes, 3 racks, rf 3, 5 seeds, 100000 keys. */
void sim_config_default(struct sim_config *cfg);

/* Seed j of a run: base itself for j == 0, otherwise derived from it. */
void sim_seed_derive(const uint8_t base[RING_SEED_LEN], uint32_t j, uint8_t out[RING_SEED_LEN]);

/*
 * The figures of one scheme at one seed.  tokens is used by SIM_RING and
 * SIM_BOUNDED (1 .. RING_TOKENS_MAX) and ignored otherwise.  Errors:
 * RK_ERANGE for a bad configuration or token count, RK_EINVAL for an unknown
 * scheme, RK_ENOMEM.
 */
int sim_figures_compute(const struct sim_config *cfg, const uint8_t seed[RING_SEED_LEN],
                        enum sim_scheme scheme, uint32_t tokens, struct sim_figures *out);

/*
 * Fill rows[0..n) - each naming a scheme and token count - with the mean
 * over cfg->seeds seeds and the worst seed's max/mean.  Same errors as
 * sim_figures_compute().
 */
int sim_rows_compute(const struct sim_config *cfg, struct sim_row *rows, size_t n);

/*
 * The smallest replica max/mean any placement can reach under section 5's
 * rack rule with these racks: each key on min(rf, N) distinct nodes, on
 * min(rf, R) distinct racks.  Uneven racks make it exceed 1: with N = 10,
 * R = 3, rf = 3 every key has one replica in each rack, so the three nodes
 * of a 3-node rack carry 1/3 each against a mean of 3/10: 10/9.
 */
double sim_replica_bound(uint32_t nodes, uint32_t racks, unsigned rf);

/*
 * The replica load, as a fraction of the circle, of node index `node`
 * (0-based: node-(node+1), in rack node mod R) in a placement that reaches
 * sim_replica_bound().  It is what that node must receive on a join, or
 * the others re-create on its removal, for the cluster to end up as
 * balanced as its racks allow: with N = 10, R = 3, rf = 3, node-11 joins a
 * 4-node rack and should take 1/4 of the circle, 1/12 of all replicas, not
 * the 1/11 of a cluster without racks.
 */
double sim_replica_share(uint32_t nodes, uint32_t racks, unsigned rf, uint32_t node);

/* stddev/mean that sampling M keys alone gives a perfectly even scheme. */
double sim_sampling_noise(uint32_t nodes, uint32_t keys);

/* Jump consistent hash (Lamping & Veach 2014): a bucket in 0 .. buckets-1. */
uint32_t sim_jump_hash(uint64_t key, uint32_t buckets);

/* Short stable name of a scheme ("ring", "bounded", "mod", "rendezvous", "jump"). */
const char *sim_scheme_name(enum sim_scheme scheme);

/* True when the scheme's figures come from a key sample rather than exactly. */
bool sim_scheme_sampled(enum sim_scheme scheme);

#endif
