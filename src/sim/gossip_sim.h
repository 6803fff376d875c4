/*
 * gossip_sim.h - the production membership code (src/membership: gossip,
 * member table, phi accrual detector) run as N members in one process, on
 * a virtual clock and a virtual network, every choice drawn from one seed.
 *
 * Each simulated member is a real struct gossip created through the seams
 * of gossip.h: no event loop (the simulator runs gossip_round() every
 * interval), no store (the table starts from a formed cluster's), the
 * simulator's clock, a seed of its own, and hooks that make a connection
 * a virtual link.  A message sent on a link is encoded by proto/msg.c,
 * counted (its bytes plus the frame header and the channel's tag), dropped
 * with the loss rate or by a partition, and otherwise decoded and handed to
 * the receiver's gossip_message() after the latency plus a uniform jitter.
 * Links behave like the node's connections: one per pair of members,
 * usable both ways, made by a dial (which reaches a crashed member or one
 * across a partition never), introduced to both ends one latency apart
 * (gossip_peer_identified()), closed by a crash.  Unlike TCP, a lost
 * message is lost, not retransmitted late: the loss rates are harsher
 * than the same rates on a real network.
 *
 * Everything happens in one event queue (a binary heap) ordered by
 * virtual time, then by the order events were made, so the same seed and
 * options give the same run event for event; --trace writes each
 * delivered message and each member event as one line.
 *
 * A run of N members: a cluster of N formed members, started at random
 * offsets within one interval; a warm-up of GOSSIP_SIM_WARMUP_ROUNDS,
 * over all but whose first round traffic is counted (every member has
 * started by then, and a formed cluster's traffic is the same every round); an optional partition
 * (two sets of members cut at one time, healed at another, then the time until every member sees
 * every live one up with one ring); a new member joining through the first (until every member
 * holds its entry); a crash of a random member (until every live member sees it down); then the
 * cluster as it is under each loss rate of GOSSIP_SIM_FS_LOSSES for the
 * given duration, counting every suspect or down event about a live
 * member.  Each phase gives up at a bound and fails its check past it.
 */
#ifndef RINGKV_GOSSIP_SIM_H
#define RINGKV_GOSSIP_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ring.h"

#define GOSSIP_SIM_NODES_MIN 3
#define GOSSIP_SIM_NODES_MAX (RING_MEMBERS_MAX - 1) /* plus the one that joins */
#define GOSSIP_SIM_WARMUP_ROUNDS 3
#define GOSSIP_SIM_FS_LOSSES 2
extern const double gossip_sim_fs_losses[GOSSIP_SIM_FS_LOSSES]; /* 1% and 5% */

struct gossip_sim_opts {
    size_t nodes;
    uint64_t seed;
    double loss;          /* of every message, 0 .. 1, outside the false-suspicion phases */
    uint64_t latency_us;  /* one way */
    uint64_t jitter_us;   /* added: uniform in 0 .. jitter_us */
    uint64_t interval_ms; /* gossip-interval */
    uint32_t tokens;      /* of every member: only the size of the rings each one builds */
    uint64_t duration_ms; /* of each false-suspicion phase */
    bool partition;       /* members [a_lo, a_hi] against [b_lo, b_hi] */
    size_t a_lo, a_hi, b_lo, b_hi;
    uint64_t cut_ms, heal_ms; /* from the start of the run; cut_ms past the warm-up */
    bool join, crash, steady; /* the phases run (the warm-up always runs) */
    FILE *trace;              /* NULL: none */
};

/* A phase's outcome: how long it took, and whether it did within its bound. */
struct gossip_sim_phase {
    bool done;      /* seen by every member it concerns before giving up */
    double seconds; /* virtual, from the event to the last member seeing it */
    double rounds;  /* seconds / interval */
    double bound_rounds;
};

struct gossip_sim_result {
    size_t nodes;
    struct gossip_sim_phase join, crash, partition;
    char joiner[16], victim[16];
    bool join_run, crash_run, steady_run; /* the phases that ran */
    double fs_per_node_hour[GOSSIP_SIM_FS_LOSSES];
    uint64_t fs_events[GOSSIP_SIM_FS_LOSSES];      /* member_suspect about a live member */
    uint64_t fs_down_events[GOSSIP_SIM_FS_LOSSES]; /* member_down about a live member */
    double msgs_per_node_round, bytes_per_node_round;
    uint64_t events, messages, node_rounds;
    double duration_s;       /* of each false-suspicion phase */
    double virtual_seconds;  /* simulated */
    double wall_seconds;     /* real, the whole run */
    double form_seconds;     /* real, of it building the formed cluster (N member tables) */
    long maxrss_kb;          /* getrusage(RUSAGE_SELF) after the run: the process's peak so far */
    uint64_t estimate_bytes; /* gossip_sim_memory_estimate() of the run, to set beside maxrss_kb */
};

/* Fill o with the defaults: the node's gossip-interval, 1 ms latency, 0.5 ms jitter, no loss. */
void gossip_sim_opts_init(struct gossip_sim_opts *o);

/*
 * Bytes of memory the run of o (o->nodes members of o->tokens tokens each)
 * needs at its peak: their member tables and the rings in them, and the
 * messages in flight, many when the latency spans many intervals
 * (gossip_sim.c says what it counts).
 */
uint64_t gossip_sim_memory_estimate(const struct gossip_sim_opts *o);

/*
 * Run one simulation.  0, with every figure in *out (a failed check is a
 * phase with done false, not an error); RK_EINVAL for a partition cut
 * before the warm-up's GOSSIP_SIM_WARMUP_ROUNDS intervals have passed (or
 * healed no later than it is cut), RK_ENOMEM or an error of the membership
 * code (err says which) when the run could not be made or was cut short.
 */
int gossip_sim_run(const struct gossip_sim_opts *o, struct gossip_sim_result *out, char *err,
                   size_t err_len);

#endif
