/*
 * lanes.c - the output queue bound and the bulk credit window of one
 * connection (lanes.h states the rules this file keeps).
 *
 * Invariants, at every return:
 *   credit <= peer_window                     (the sender's side)
 *   peer_window - credit = bulk bytes sent and not yet granted back
 *   allowed + (bulk bytes in flight to us) + consumed = window
 *                                             (the receiver's side)
 */
#include "lanes.h"

#include <assert.h>
#include <string.h>

#include "error.h"

void lanes_init(struct lanes *l, size_t queue_max, uint64_t window)
{
    memset(l, 0, sizeof(*l));
    l->queue_max = queue_max;
    l->window = window;
}

bool lanes_control_fits(const struct lanes *l, size_t queued, size_t len)
{
    return len <= l->queue_max && queued <= l->queue_max - len;
}

void lanes_queued(struct lanes *l, size_t queued)
{
    if (queued > l->queue_peak) {
        l->queue_peak = queued;
    }
}

enum lanes_bulk lanes_bulk_check(struct lanes *l, size_t queued, size_t len)
{
    if (l->peer_window == 0) {
        return LANES_BULK_NOLANE;
    }
    if (len > l->peer_window / 2) {
        return LANES_BULK_TOOBIG;
    }
    /* bulk waits in its producer, never in the queue: only an empty queue takes it */
    if (queued > 0 || len > l->credit) {
        l->need = len;
        return LANES_BULK_WAIT;
    }
    return LANES_BULK_SEND;
}

void lanes_bulk_sent(struct lanes *l, size_t len)
{
    uint64_t inflight;

    assert(len <= l->credit && "lanes_bulk_sent: a bulk message sent without its credit");
    l->credit -= len;
    l->bulk_out += len;
    l->need = 0;
    inflight = l->peer_window - l->credit;
    if (inflight > l->inflight_peak) {
        l->inflight_peak = inflight;
    }
}

bool lanes_bulk_ready(const struct lanes *l, size_t queued)
{
    return l->peer_window > 0 && queued == 0 && l->credit >= l->need;
}

int lanes_credit_in(struct lanes *l, uint64_t grant, uint64_t window)
{
    if (window == 0 || window > LANES_WINDOW_MAX ||
        (l->peer_window != 0 && window != l->peer_window)) {
        return RK_EINVAL;
    }
    if (grant > window - l->credit) {
        return RK_ERANGE;
    }
    l->peer_window = window;
    l->credit += grant;
    return 0;
}

uint64_t lanes_grant_initial(struct lanes *l)
{
    l->allowed = l->window;
    l->consumed = 0;
    return l->window;
}

int lanes_bulk_in(struct lanes *l, size_t len)
{
    if (len > l->allowed) {
        return RK_ERANGE;
    }
    l->allowed -= len;
    l->bulk_in += len;
    return 0;
}

uint64_t lanes_bulk_consumed(struct lanes *l, size_t len)
{
    uint64_t grant;

    l->consumed += len;
    if (l->consumed < l->window / LANES_GRANT_DIVISOR) {
        return 0;
    }
    grant = l->consumed;
    l->consumed = 0;
    l->allowed += grant;
    return grant;
}

void lanes_control_in(struct lanes *l, uint64_t now_ms)
{
    if (l->bulk_in > 0 && l->last_control_ms != 0 && now_ms > l->last_control_ms &&
        now_ms - l->last_control_ms > l->control_gap_max_ms) {
        l->control_gap_max_ms = now_ms - l->last_control_ms;
    }
    l->last_control_ms = now_ms;
}
