/*
 * clock.h - the one monotonic clock.
 *
 * Every duration ringkv measures (uptime, client idleness, heartbeat
 * intervals, request timeouts, the CLI's deadlines and round-trip times)
 * is read here, from CLOCK_MONOTONIC, so a step of the wall clock (NTP, an
 * operator's `date -s`) changes none of them.  Wall-clock time is only for
 * versions (storage/hlc.h), expiry (an absolute wall-clock time, so a step
 * of the wall clock moves every expiry with it) and logs.
 */
#ifndef RINGKV_CLOCK_H
#define RINGKV_CLOCK_H

#include <stdint.h>

/* Nanoseconds on the monotonic clock since an arbitrary, fixed point. */
uint64_t clock_mono_ns(void);

/* The same clock in microseconds. */
uint64_t clock_mono_us(void);

/* The same clock in milliseconds. */
uint64_t clock_mono_ms(void);

/* The wall clock (CLOCK_REALTIME): milliseconds since the Unix epoch. */
uint64_t clock_wall_ms(void);

#endif
