/*
 * detector.h - failure detection: the phi accrual detector (Hayashibara,
 * Defago, Yared and Katayama, "The phi accrual failure detector", 2004).
 *
 * For each member the detector keeps the intervals between the last
 * heartbeat arrivals (a window of DETECTOR_WINDOW) and turns the time since
 * the last arrival into phi, the detector's suspicion: phi = -log10 of the
 * probability that a heartbeat arrives this late or later.  Like Cassandra
 * it models intervals as exponentially distributed, so
 *     phi(t) = (t - last_arrival) / mean_interval * log10(e),
 * which needs only the mean and does not collapse when a steady stream of
 * heartbeats makes the variance tiny.  A member is
 *     alive    while phi <  suspect_phi,
 *     suspect  while phi <  down_phi,
 *     down     once  phi >= down_phi,
 * and alive again at its next heartbeat.  With heartbeats every interval
 * I, a silent member is suspect after suspect_phi / log10(e) * I and down
 * after down_phi / log10(e) * I: with the defaults below (5 and 8, the
 * latter Cassandra's phi_convict_threshold) and I = 200 ms, after 2.3 s and
 * 3.7 s.
 *
 * Why intervals are clamped: a member that was away (paused, partitioned)
 * comes back after one huge interval; counted in full it would inflate
 * the mean and slow every later detection.  Intervals above
 * DETECTOR_INTERVAL_MAX_FACTOR times the expected interval are counted as
 * that (Cassandra caps at 2 s for the same reason).  An interval is kept
 * in 16 bits, so it is also counted as at most DETECTOR_INTERVAL_SLOT_MAX
 * ms: a node holds a window for every member, and 2 bytes a sample rather
 * than 4 take 200 bytes off each (the simulator holds N^2 of them).  That
 * clamp binds only above a gossip-interval of 6.5 s (10 x 6553 ms): at
 * the 60 s the settings allow, a 70 s interval counts as 65.5 s, and
 * intervals at or below 65535 ms are counted exactly, so phi is the same
 * as with wider slots wherever every interval is below it.  A shorter
 * count only lowers the mean, and phi's scale never drops below the
 * expected interval (below), so the clamp never makes detection slower.
 *
 * Why the mean is floored at the expected interval: one heartbeat reaches
 * a node by several paths a few milliseconds apart, and those bursts are
 * not a faster member; phi uses max(mean, expected) (detector.c explains).
 *
 * Pure: time is passed in, in monotonic milliseconds, so wall-clock jumps
 * change nothing and tests drive a fake clock.
 */
#ifndef RINGKV_DETECTOR_H
#define RINGKV_DETECTOR_H

#include <stdbool.h>
#include <stdint.h>

#define DETECTOR_WINDOW 100
#define DETECTOR_SUSPECT_PHI_DEFAULT 5.0
#define DETECTOR_DOWN_PHI_DEFAULT 8.0
#define DETECTOR_INTERVAL_MAX_FACTOR 10
/* The longest interval a window slot holds, in ms (top of file: the 16-bit clamp). */
#define DETECTOR_INTERVAL_SLOT_MAX UINT16_MAX

enum detector_state {
    DETECTOR_ALIVE,
    DETECTOR_SUSPECT,
    DETECTOR_DOWN,
};

/*
 * One member's arrival history; embed it, detector_init() it.  216 bytes:
 * a node holds one for every other member.
 */
struct detector {
    uint64_t last_ms;     /* monotonic time of the last arrival; 0 before the first */
    uint32_t sum;         /* of the samples held: at most DETECTOR_WINDOW * UINT16_MAX */
    uint16_t expected_ms; /* the heartbeat interval the member is expected to keep */
    uint8_t n, next;      /* samples held, next slot */
    uint16_t intervals[DETECTOR_WINDOW];
};

/*
 * Start a detector for a member expected to send a heartbeat every
 * expected_ms, first heard at now_ms (the mean starts at expected_ms until
 * real intervals replace it).  expected_ms is 1 .. DETECTOR_INTERVAL_SLOT_MAX
 * (asserted): an interval a slot cannot hold cannot be expected either, and
 * gossip-interval is at most 60 s.
 */
void detector_init(struct detector *d, uint64_t expected_ms, uint64_t now_ms);

/* A heartbeat arrived at now_ms (monotonic ms; never earlier than the last). */
void detector_heartbeat(struct detector *d, uint64_t now_ms);

/*
 * The observer did not run for ms (it was stopped, or its loop stalled):
 * the last arrival moves ms later, never past now_ms, so that silence is
 * neither suspected nor counted in the next interval.
 */
void detector_forgive(struct detector *d, uint64_t ms, uint64_t now_ms);

/* The suspicion at now_ms (scaled by the mean, never below the expected interval). */
double detector_phi(const struct detector *d, uint64_t now_ms);

/* The mean of the intervals held, in ms (expected_ms while none is held). */
double detector_mean(const struct detector *d);

/* The state for phi at now_ms against the two thresholds. */
enum detector_state detector_state(const struct detector *d, uint64_t now_ms, double suspect_phi,
                                   double down_phi);

const char *detector_state_name(enum detector_state s);

#endif
