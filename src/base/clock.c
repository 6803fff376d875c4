/*
 * clock.c - the one monotonic clock, and the wall clock's milliseconds (clock.h).
 */
#include "clock.h"

#include <time.h>

uint64_t clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_us(void)
{
    return clock_mono_ns() / 1000u;
}

uint64_t clock_mono_ms(void)
{
    return clock_mono_ns() / 1000000u;
}

uint64_t clock_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
