/*
 * hlc.h - hybrid logical clock (Kulkarni, Demirbas, Madappa, Avva and
 * Leone, "Logical Physical Clocks", 2014).
 *
 * A timestamp is 64 bits: the high 48 are physical milliseconds since the
 * Unix epoch (enough until the year 10889), the low 16 a logical counter.
 * Timestamps a clock hands out strictly increase, stay within the largest
 * skew seen of wall-clock time, and order every event after the events it
 * has heard of.  Last-writer-wins resolution compares (timestamp, node id).
 *
 * Pure: wall-clock time comes in as an argument, so tests drive the clock
 * by hand.  Not thread-safe: one owner updates a clock.
 */
#ifndef RINGKV_HLC_H
#define RINGKV_HLC_H

#include <stdint.h>

#define HLC_LOGICAL_BITS 16
#define HLC_LOGICAL_MAX ((1u << HLC_LOGICAL_BITS) - 1)
/*
 * A remote timestamp more than this far ahead of local wall time is
 * refused instead of dragging the clock into the future: one minute, well
 * above NTP-disciplined skew, well below what would make last-writer-wins
 * ignore a node's writes for long.  CockroachDB's default maximum offset is
 * 500 ms; ringkv is less strict because its nodes may be laptops.
 */
#define HLC_MAX_AHEAD_MS_DEFAULT 60000

struct hlc {
    uint64_t last; /* the last timestamp handed out or seen */
};

static inline uint64_t hlc_physical(uint64_t t)
{
    return t >> HLC_LOGICAL_BITS;
}

static inline uint64_t hlc_logical(uint64_t t)
{
    return t & HLC_LOGICAL_MAX;
}

static inline uint64_t hlc_make(uint64_t physical_ms, uint64_t logical)
{
    return physical_ms << HLC_LOGICAL_BITS | logical;
}

void hlc_init(struct hlc *c);

/*
 * A timestamp for a local event (a write this node coordinates), given the
 * current wall time in milliseconds.  Always greater than every timestamp
 * the clock returned or saw before.  When the logical counter would
 * overflow within one millisecond the physical part advances by one.
 * wall_ms must be below 2^48 (milliseconds, not micro- or nanoseconds):
 * anything else asserts, as does a clock whose timestamps are exhausted.
 */
uint64_t hlc_now(struct hlc *c, uint64_t wall_ms);

/*
 * Take in a timestamp received from elsewhere (a replicated version).
 * Returns 0 after moving the clock past remote, or RK_ERANGE, leaving the
 * clock unchanged, when remote's physical part is more than max_ahead_ms
 * ahead of wall_ms, or when remote or the clock is UINT64_MAX, past which
 * there is no timestamp.
 * wall_ms as for hlc_now().
 */
int hlc_update(struct hlc *c, uint64_t remote, uint64_t wall_ms, uint64_t max_ahead_ms);

#endif
