/*
 * test_rng.h - the seeded random generator of the unit tests.
 *
 * xorshift64 (Marsaglia 2003): fast, and the same sequence on every
 * machine for one seed.  rng_seed() takes the seed from RINGKV_TEST_SEED
 * (decimal or 0x hex) or a fixed default, and prints it on stderr, so a
 * failing run replays with RINGKV_TEST_SEED=<seed>.  A suite calls it from
 * a checked fixture (each test starts from the seed) or once in main().
 * One generator per test program: the state is static here.
 */
#ifndef RINGKV_TEST_RNG_H
#define RINGKV_TEST_RNG_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The seed when RINGKV_TEST_SEED is not set: 2^64 / golden ratio. */
#define TEST_RNG_DEFAULT_SEED 0x9e3779b97f4a7c15ull

static uint64_t rng_state;

static inline uint64_t rng_next(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* A number in [0, n); n > 0. */
static inline uint32_t rng_below(uint32_t n)
{
    return (uint32_t)(rng_next() % n);
}

/* A length in [0, n); n > 0. */
static inline size_t rng_below_size(size_t n)
{
    return (size_t)(rng_next() % n);
}

/* Seed the generator for the program named suite, and say with what. */
static inline void rng_seed(const char *suite)
{
    const char *s = getenv("RINGKV_TEST_SEED");

    rng_state = s ? strtoull(s, NULL, 0) : TEST_RNG_DEFAULT_SEED;
    if (rng_state == 0) {
        rng_state = 1; /* xorshift's one fixed point */
    }
    fprintf(stderr, "%s: RINGKV_TEST_SEED=%" PRIu64 "\n", suite, rng_state);
}

#endif
