/*
 * detector.c - the phi accrual failure detector of detector.h.
 *
 * State per member: the time of the last arrival and a ring buffer of the
 * last DETECTOR_WINDOW intervals between arrivals, with their running sum,
 * so the mean is O(1) to read and each arrival O(1) to record.
 *
 * Algorithm (exponential model, as Cassandra's FailureDetector):
 *     mean   = sum / n, or expected_ms while no interval is held;
 *     scale  = max(mean, expected_ms);
 *     phi(t) = (t - last) / scale * log10(e).
 * The exponential distribution's tail is P(X > x) = exp(-x / mean), and
 * -log10(exp(-x / mean)) = x / mean * log10(e): phi grows linearly with the
 * silence, one unit every mean / log10(e) ms (about 2.3 mean intervals).
 *
 * Invariants: n <= DETECTOR_WINDOW; sum is the sum of intervals[0..n)
 * (slot order does not matter for a mean); every held interval is at most
 * DETECTOR_INTERVAL_MAX_FACTOR * expected_ms and at most
 * DETECTOR_INTERVAL_SLOT_MAX (detector.h), so the mean is too.
 *
 * Why the floor at expected_ms: a member beats once per gossip interval, but
 * that beat reaches us by several paths (its PING, its PONG to ours, a
 * gossip exchange, a newer entry relayed by a third node), often a few
 * milliseconds apart.  Those bursts pull the mean well below the interval
 * at which the member actually lives, and a mean of 60 ms would call a
 * member down after 1.1 s of silence: one busy scheduler slice on a loaded
 * host.  No member can be expected to show life faster than it beats, so
 * the scale never drops below expected_ms; a member slower than that (a
 * loaded host, a long path) still raises the mean above it.
 *
 * Arrivals that are not later than the last one are dropped.  Earlier ones
 * cannot come from a monotonic clock and would underflow the interval.  An
 * arrival in the same millisecond as the last is the same arrival reported
 * twice (membership counts both a newer gossiped entry and the message that
 * carried it); recording it as a 0 ms interval would pull the mean towards
 * zero and make a healthy member look late.
 */
#include "detector.h"

#include <assert.h>
#include <math.h>
#include <string.h>

/* log10(e): phi per mean interval of silence, from the exponential tail above. */
#define DETECTOR_LOG10_E M_LOG10E

static const char *const detector_state_names[] = {
    [DETECTOR_ALIVE] = "alive",
    [DETECTOR_SUSPECT] = "suspect",
    [DETECTOR_DOWN] = "down",
};

void detector_init(struct detector *d, uint64_t expected_ms, uint64_t now_ms)
{
    assert(d != NULL && "detector_init: NULL detector");
    assert(expected_ms > 0 && "detector_init: expected_ms must be positive");
    assert(expected_ms <= DETECTOR_INTERVAL_SLOT_MAX &&
           "detector_init: expected_ms must fit a slot (DETECTOR_INTERVAL_SLOT_MAX)");
    memset(d, 0, sizeof(*d));
    d->expected_ms = (uint16_t)expected_ms;
    d->last_ms = now_ms;
}

_Static_assert(DETECTOR_WINDOW <= UINT8_MAX, "n and next count the window in 8 bits");
_Static_assert((uint64_t)DETECTOR_WINDOW *DETECTOR_INTERVAL_SLOT_MAX <= UINT32_MAX,
               "a full window's sum fits its 32 bits");

/*
 * The longest interval counted: DETECTOR_INTERVAL_MAX_FACTOR expected
 * intervals (detector.h says why), and never more than a slot holds.
 */
static uint16_t detector_interval_max(const struct detector *d)
{
    if (d->expected_ms > DETECTOR_INTERVAL_SLOT_MAX / DETECTOR_INTERVAL_MAX_FACTOR) {
        return DETECTOR_INTERVAL_SLOT_MAX;
    }
    return (uint16_t)(d->expected_ms * DETECTOR_INTERVAL_MAX_FACTOR);
}

void detector_heartbeat(struct detector *d, uint64_t now_ms)
{
    uint64_t interval;
    uint16_t max = detector_interval_max(d);

    if (now_ms <= d->last_ms) {
        return;
    }
    interval = now_ms - d->last_ms;
    if (interval > max) {
        interval = max;
    }
    if (d->n == DETECTOR_WINDOW) {
        d->sum -= d->intervals[d->next];
    } else {
        d->n++;
    }
    d->intervals[d->next] = (uint16_t)interval;
    d->sum += (uint32_t)interval;
    d->next = (uint8_t)((d->next + 1) % DETECTOR_WINDOW);
    d->last_ms = now_ms;
}

void detector_forgive(struct detector *d, uint64_t ms, uint64_t now_ms)
{
    if (d->last_ms < now_ms) {
        d->last_ms = now_ms - d->last_ms > ms ? d->last_ms + ms : now_ms;
    }
}

double detector_mean(const struct detector *d)
{
    if (d->n == 0) {
        return (double)d->expected_ms;
    }
    return (double)d->sum / (double)d->n;
}

double detector_phi(const struct detector *d, uint64_t now_ms)
{
    double mean = detector_mean(d);

    if (mean < (double)d->expected_ms) {
        mean = (double)d->expected_ms;
    }
    /*
     * A window of 0 ms intervals cannot be recorded (see the top of the
     * file) and expected_ms is positive, so mean > 0; the guard keeps a
     * corrupted detector from dividing by zero.
     */
    if (now_ms <= d->last_ms || mean <= 0.0) {
        return 0.0;
    }
    return (double)(now_ms - d->last_ms) / mean * DETECTOR_LOG10_E;
}

enum detector_state detector_state(const struct detector *d, uint64_t now_ms, double suspect_phi,
                                   double down_phi)
{
    double phi = detector_phi(d, now_ms);

    if (phi < suspect_phi) {
        return DETECTOR_ALIVE;
    }
    if (phi < down_phi) {
        return DETECTOR_SUSPECT;
    }
    return DETECTOR_DOWN;
}

const char *detector_state_name(enum detector_state s)
{
    if ((unsigned)s >= sizeof(detector_state_names) / sizeof(detector_state_names[0])) {
        return "unknown";
    }
    return detector_state_names[s];
}
