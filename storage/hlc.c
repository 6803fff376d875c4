/*
 * hlc.c - hybrid logical clock (Kulkarni et al. 2014), on the packed 64-bit
 * timestamps of hlc.h.
 *
 * The paper keeps a pair (l, c): l the largest physical time heard of, c a
 * counter that orders events sharing l.  With l in the high 48 bits and c in
 * the low 16, the pair order is plain integer order, and the paper's rules
 * collapse to two lines:
 *
 *   send/local:  t = max(pt, last + 1)
 *   receive:     t = max(pt, max(last, remote) + 1)
 *
 * where pt is the wall time with counter 0.  When pt wins, l moves to the
 * wall and c restarts at 0; otherwise c grows by one on the larger of the
 * timestamps, exactly the paper's case split.  A counter at its maximum
 * carries into l, which is the "physical part advances by one" of hlc.h:
 * a burst of more than 65536 events within one millisecond moves the clock
 * ahead of the wall, which then catches up with it.
 *
 * Invariant: last is the largest timestamp handed out or taken in, and the
 * next one returned is greater.
 */
#include "hlc.h"

#include <assert.h>

#include "error.h"

/* One past the largest physical part: 2^48 milliseconds, in the year 10889. */
#define HLC_PHYSICAL_END (UINT64_C(1) << (64 - HLC_LOGICAL_BITS))

void hlc_init(struct hlc *c)
{
    c->last = 0;
}

uint64_t hlc_now(struct hlc *c, uint64_t wall_ms)
{
    uint64_t pt;

    assert(wall_ms < HLC_PHYSICAL_END && "hlc_now: wall_ms is not milliseconds since the epoch");
    assert(c->last != UINT64_MAX && "hlc_now: the clock has no timestamp left");
    pt = hlc_make(wall_ms, 0);
    c->last = pt > c->last ? pt : c->last + 1;
    return c->last;
}

/*
 * The max_ahead_ms check comes first and changes nothing: a peer whose wall
 * clock is far in the future must not drag this clock, and with it every
 * later last-writer-wins decision, along with it.
 */
int hlc_update(struct hlc *c, uint64_t remote, uint64_t wall_ms, uint64_t max_ahead_ms)
{
    uint64_t remote_ms = hlc_physical(remote);
    uint64_t seen, pt;

    assert(wall_ms < HLC_PHYSICAL_END && "hlc_update: wall_ms is not milliseconds since the epoch");
    if (remote_ms > wall_ms && remote_ms - wall_ms > max_ahead_ms) {
        return RK_ERANGE;
    }
    seen = remote > c->last ? remote : c->last;
    if (seen == UINT64_MAX) {
        return RK_ERANGE;
    }
    pt = hlc_make(wall_ms, 0);
    c->last = pt > seen ? pt : seen + 1;
    return 0;
}
