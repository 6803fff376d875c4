/*
 * bench_ring.c - placement benchmark: how fast ringkv finds owners and
 * preference lists, how long a ring takes to build and how much heap it
 * keeps, next to libmemcached's ketama over the same number of servers.
 *
 *   bench_ring [--keys COUNT]
 *
 * For N = 3, 10 and 100 members with 256 tokens each, spread over 3 racks:
 *
 *   build ms     median of BENCH_BUILD_RUNS ring_create() calls;
 *   ring KiB     malloc's in-use bytes (arena plus mmap, mallinfo2) after
 *                ring_create() minus before: what a live ring holds, not the
 *                transient peak of the build;
 *   owner/s      ring_key_position() + ring_owner_token() per key;
 *   pref3/s      ring_key_position() + ring_preflist(rf 3) per key;
 *   ketama/s     memcached_generate_hash() per key, N servers added as
 *                127.0.0.1 with distinct ports (nothing connects), with
 *                MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED: libketama's scheme
 *                (MD5 key hash, 160 points a server), which libmemcached's
 *                manual documents for both of its ketama behaviors;
 *   k-oaat/s     the same with MEMCACHED_BEHAVIOR_KETAMA as libmemcached
 *                1.1 actually runs it: the default one-at-a-time key hash,
 *                100 points a server.  Reported beside the goal as the
 *                stricter comparison.
 *
 * Every lookup hashes its key.  All sides read the same pre-generated keys
 * ("user:" and 5..15 digits, 10..20 bytes, all distinct, in random length
 * order) in the same order.  One timed pass looks up every key once, or
 * stops at BENCH_PASS_CAP_NS; passes of all kinds are interleaved round by
 * round, so a load spike from elsewhere on the machine hits every column
 * alike, and each column reports the median of BENCH_ROUNDS passes.  Results
 * feed a volatile sink so no lookup can be optimized away.
 *
 * Before timing, each side is checked: every ringkv preference list has rf
 * distinct members on distinct racks and starts with the owner token's
 * member; ketama reports its consistent distribution and maps keys onto all
 * N servers.  The program prints figures and whether the goals of the issue
 * are met; it exits 0 whenever it ran, met or not, and 1 on a failed check.
 */
#include "autoconf.h"

#include <assert.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_MEMCACHED
#include <libmemcached/memcached.h>
#endif

#include "error.h"
#include "ring.h"

/*
 * Key set: one million keys, about 15 MB of key bytes and 5 MB of offsets
 * and lengths, read in order, so positions fall all over the circle.
 */
#define BENCH_KEYS_DEFAULT 1000000
#define BENCH_KEYS_MAX 100000000
#define BENCH_KEY_PREFIX "user:"
#define BENCH_DIGITS_MIN 5
#define BENCH_DIGITS_MAX 15
#define BENCH_KEY_MAX (sizeof(BENCH_KEY_PREFIX) - 1 + BENCH_DIGITS_MAX)
/* Odd and not a multiple of 5, so k -> k * MUL mod 10^d is one-to-one. */
#define BENCH_KEY_MUL 2654435761u
#define BENCH_RNG_SEED 0x9e3779b97f4a7c15ull

/* The ring sizes and shape the issue asks for. */
static const size_t bench_sizes[] = {3, 10, 100};
#define BENCH_N_SIZES (sizeof(bench_sizes) / sizeof(bench_sizes[0]))
#define BENCH_N_MAX 100
#define BENCH_TOKENS 256
#define BENCH_RACKS 3
#define BENCH_RF 3

/* Timing: medians of odd counts; the cap keeps sanitizer builds bounded. */
#define BENCH_ROUNDS 5
#define BENCH_BUILD_RUNS 11
#define BENCH_PASS_CAP_NS 3000000000ull
/* Lookups between clock reads: a read (about 25 ns) then costs < 0.1%. */
#define BENCH_CHUNK 4096
/* Keys checked for correctness before timing. */
#define BENCH_CHECK_KEYS 100000

/* Goals of the issue. */
#define GOAL_N 100
#define GOAL_RATIO 3.0
#define GOAL_BUILD_MS 10.0

/* Ketama servers: 127.0.0.1 and ports from here, never the default 11211. */
#define KETAMA_HOST "127.0.0.1"
#define KETAMA_PORT_BASE 20000

struct keyset {
    char *bytes;
    uint32_t *off;
    uint8_t *len;
    size_t n;
};

/* What one timed pass works on; one chunk function per kind of lookup. */
struct bench_ctx {
    const struct keyset *keys;
    const struct ring *ring;
#ifdef HAVE_MEMCACHED
    const memcached_st *memc;
#endif
};

typedef uint64_t (*chunk_fn)(const struct bench_ctx *c, size_t from, size_t to);

enum bench_kind { KIND_OWNER, KIND_PREF, KIND_KETAMA, KIND_KETAMA_MD5, KIND_COUNT };

/* Figures for one ring size; a rate of 0 means not measured. */
struct bench_row {
    size_t n;
    double build_ms;
    double ring_kib;
    double ketama_kib[2];
    size_t ketama_points[2];
    double rate[KIND_COUNT];
};

static volatile uint64_t bench_sink;

/* Runtime symbols that exist only when some linked code was instrumented. */
extern void __asan_init(void) __attribute__((weak));
extern void __ubsan_handle_add_overflow(void *, void *, void *) __attribute__((weak));
extern void __gcov_init(void *) __attribute__((weak));

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;

    return (a > b) - (a < b);
}

/* Median of v[0..n), n odd; sorts v. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return v[n / 2];
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);

    if (p == NULL) {
        fprintf(stderr, "bench_ring: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return p;
}

/* Heap bytes in use: the arena's allocated chunks plus mmapped chunks. */
static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

static const char *key_at(const struct keyset *k, size_t i)
{
    return k->bytes + k->off[i];
}

static uint64_t pow10u(unsigned d)
{
    uint64_t p = 1;

    while (d-- > 0) {
        p *= 10;
    }
    return p;
}

/*
 * Write key number count[d] of digit class d: the class is drawn at random,
 * and the value k * BENCH_KEY_MUL mod 10^d is distinct for every k < 10^d, so
 * keys never repeat; a full class hands over to the next one.
 */
static size_t key_write(char *out, uint64_t *rng, uint64_t count[BENCH_DIGITS_MAX + 1])
{
    unsigned span = BENCH_DIGITS_MAX - BENCH_DIGITS_MIN + 1;
    unsigned d = BENCH_DIGITS_MIN + (unsigned)(rng_next(rng) % span);

    while (count[d] == pow10u(d)) {
        d = d == BENCH_DIGITS_MAX ? BENCH_DIGITS_MIN : d + 1;
    }
    uint64_t v = (uint64_t)(((unsigned __int128)count[d]++ * BENCH_KEY_MUL) % pow10u(d));
    return (size_t)sprintf(out, "%s%0*" PRIu64, BENCH_KEY_PREFIX, (int)d, v);
}

static void keyset_make(struct keyset *k, size_t n)
{
    uint64_t count[BENCH_DIGITS_MAX + 1] = {0};
    uint64_t rng = BENCH_RNG_SEED;
    size_t used = 0;

    k->n = n;
    k->bytes = xmalloc(n * BENCH_KEY_MAX + 1);
    k->off = xmalloc(n * sizeof(*k->off));
    k->len = xmalloc(n * sizeof(*k->len));
    for (size_t i = 0; i < n; i++) {
        size_t len = key_write(k->bytes + used, &rng, count);
        k->off[i] = (uint32_t)used;
        k->len[i] = (uint8_t)len;
        used += len;
    }
}

static void keyset_free(struct keyset *k)
{
    free(k->bytes);
    free(k->off);
    free(k->len);
}

static uint64_t chunk_owner(const struct bench_ctx *c, size_t from, size_t to)
{
    uint64_t acc = 0;

    for (size_t i = from; i < to; i++) {
        uint64_t pos = ring_key_position(c->ring, key_at(c->keys, i), c->keys->len[i]);
        size_t t;
        (void)ring_owner_token(c->ring, pos, &t, NULL);
        acc += t;
    }
    return acc;
}

static uint64_t chunk_pref(const struct bench_ctx *c, size_t from, size_t to)
{
    uint64_t acc = 0;

    for (size_t i = from; i < to; i++) {
        uint64_t pos = ring_key_position(c->ring, key_at(c->keys, i), c->keys->len[i]);
        uint32_t out[BENCH_RF];
        size_t n;
        (void)ring_preflist(c->ring, pos, BENCH_RF, out, &n);
        acc += out[0] + out[n - 1];
    }
    return acc;
}

#ifdef HAVE_MEMCACHED
static uint64_t chunk_ketama(const struct bench_ctx *c, size_t from, size_t to)
{
    uint64_t acc = 0;

    for (size_t i = from; i < to; i++) {
        acc += memcached_generate_hash(c->memc, key_at(c->keys, i), c->keys->len[i]);
    }
    return acc;
}
#endif

/* One pass over the key set, or up to BENCH_PASS_CAP_NS; lookups per second. */
static double time_pass(chunk_fn fn, const struct bench_ctx *c)
{
    size_t n = c->keys->n, done = 0;
    uint64_t t0 = now_ns(), t1 = t0;

    while (done < n && t1 - t0 < BENCH_PASS_CAP_NS) {
        size_t to = done + BENCH_CHUNK < n ? done + BENCH_CHUNK : n;
        bench_sink += fn(c, done, to);
        done = to;
        t1 = now_ns();
    }
    return (double)done * 1e9 / (double)(t1 - t0);
}

static void members_make(struct ring_member *m, char (*ids)[16], char (*racks)[16], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[i]), "node-%03zu", i);
        snprintf(racks[i], sizeof(racks[i]), "rack-%zu", i % BENCH_RACKS);
        m[i].id = ids[i];
        m[i].rack = racks[i];
        m[i].tokens = BENCH_TOKENS;
    }
}

static struct ring *ring_make(const struct ring_member *m, size_t n)
{
    struct ring *r;
    int err = ring_create(&r, ring_default_seed, m, n);

    if (err != 0) {
        fprintf(stderr, "bench_ring: ring_create(n=%zu): %s\n", n, rk_strerror(err));
        exit(1);
    }
    return r;
}

/* Median build time in ms; then one more build, measured for heap, is returned. */
static struct ring *ring_measure(const struct ring_member *m, size_t n, struct bench_row *row)
{
    double ms[BENCH_BUILD_RUNS];
    size_t before;
    struct ring *r;

    for (size_t i = 0; i < BENCH_BUILD_RUNS; i++) {
        uint64_t t0 = now_ns();
        r = ring_make(m, n);
        ms[i] = (double)(now_ns() - t0) / 1e6;
        ring_unref(r);
    }
    row->build_ms = median(ms, BENCH_BUILD_RUNS);
    before = heap_in_use();
    r = ring_make(m, n);
    row->ring_kib = (double)(heap_in_use() - before) / 1024.0;
    return r;
}

/* A preference list of rf members, pairwise distinct in member and rack. */
static bool pref_ok(const struct ring *r, const uint32_t *out, size_t n)
{
    if (n != BENCH_RF) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++) {
            if (out[i] == out[j] ||
                strcmp(ring_member_rack(r, out[i]), ring_member_rack(r, out[j])) == 0) {
                return false;
            }
        }
    }
    return true;
}

/* Check lookups on the first keys: sound lists, every member an owner. */
static bool ring_check(const struct ring *r, const struct keyset *k)
{
    size_t n_members = ring_member_count(r), owners = 0;
    bool *hit = calloc(n_members, sizeof(*hit));
    bool ok = hit != NULL;

    for (size_t i = 0; ok && i < k->n && i < BENCH_CHECK_KEYS; i++) {
        uint64_t pos = ring_key_position(r, key_at(k, i), k->len[i]);
        uint32_t out[BENCH_RF];
        size_t t, n;
        ok = ring_owner_token(r, pos, &t, NULL) == 0 &&
             ring_preflist(r, pos, BENCH_RF, out, &n) == 0 && pref_ok(r, out, n) &&
             ring_token_at(r, t).member == out[0];
        if (ok && !hit[out[0]]) {
            hit[out[0]] = true;
            owners++;
        }
    }
    free(hit);
    if (ok && owners != n_members) {
        fprintf(stderr, "bench_ring: ringkv n=%zu: only %zu members own keys\n", n_members, owners);
        ok = false;
    }
    return ok;
}

#ifdef HAVE_MEMCACHED
/* Ketama over n servers; behavior is KETAMA or KETAMA_WEIGHTED. */
static memcached_st *ketama_make(size_t n, memcached_behavior_t behavior, double *kib)
{
    size_t before = heap_in_use();
    memcached_st *memc = memcached_create(NULL);
    memcached_return_t rc = MEMCACHED_FAILURE;

    if (memc != NULL) {
        rc = memcached_behavior_set(memc, behavior, 1);
    }
    for (size_t i = 0; rc == MEMCACHED_SUCCESS && i < n; i++) {
        rc = memcached_server_add(memc, KETAMA_HOST, (in_port_t)(KETAMA_PORT_BASE + i));
    }
    if (rc != MEMCACHED_SUCCESS) {
        fprintf(stderr, "bench_ring: ketama setup (n=%zu): %s\n", n,
                memc ? memcached_strerror(memc, rc) : "memcached_create failed");
        exit(1);
    }
    *kib = (double)(heap_in_use() - before) / 1024.0;
    return memc;
}

/*
 * Check that memcached_generate_hash() dispatches through the continuum:
 * the distribution is the expected consistent one, and keys land on server
 * indices below n, on all n of them.
 */
static bool ketama_check(memcached_st *memc, uint64_t want_dist, const struct keyset *k, size_t n)
{
    uint64_t dist = memcached_behavior_get(memc, MEMCACHED_BEHAVIOR_DISTRIBUTION);
    bool *hit = calloc(n, sizeof(*hit));
    size_t servers = 0;
    bool ok = hit != NULL && dist == want_dist && memcached_server_count(memc) == n;

    for (size_t i = 0; ok && i < k->n && i < BENCH_CHECK_KEYS; i++) {
        uint32_t s = memcached_generate_hash(memc, key_at(k, i), k->len[i]);
        ok = s < n;
        if (ok && !hit[s]) {
            hit[s] = true;
            servers++;
        }
    }
    free(hit);
    if (!ok || servers != n) {
        fprintf(stderr,
                "bench_ring: ketama n=%zu: distribution %" PRIu64 " (want %" PRIu64
                "), %zu of %zu servers hit\n",
                n, dist, want_dist, servers, n);
        return false;
    }
    return true;
}
#endif

/* Interleaved rounds over the kinds with a function; medians into row->rate. */
static void measure_rates(const struct bench_ctx *ctx, const chunk_fn *fns, struct bench_row *row)
{
    double rates[KIND_COUNT][BENCH_ROUNDS];

    for (int kind = 0; kind < KIND_COUNT; kind++) {
        if (fns[kind] != NULL) {
            (void)time_pass(fns[kind], &ctx[kind]);
        }
    }
    for (size_t round = 0; round < BENCH_ROUNDS; round++) {
        for (int kind = 0; kind < KIND_COUNT; kind++) {
            if (fns[kind] != NULL) {
                rates[kind][round] = time_pass(fns[kind], &ctx[kind]);
            }
        }
    }
    for (int kind = 0; kind < KIND_COUNT; kind++) {
        row->rate[kind] = fns[kind] != NULL ? median(rates[kind], BENCH_ROUNDS) : 0.0;
    }
}

#ifdef HAVE_MEMCACHED
static const memcached_behavior_t ketama_behaviors[2] = {MEMCACHED_BEHAVIOR_KETAMA,
                                                         MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED};
static const uint64_t ketama_dists[2] = {MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA,
                                         MEMCACHED_DISTRIBUTION_CONSISTENT_WEIGHTED};
static const size_t ketama_points_per_server[2] = {MEMCACHED_POINTS_PER_SERVER,
                                                   MEMCACHED_POINTS_PER_SERVER_KETAMA};
#endif

/* All figures for one ring size; false when a correctness check failed. */
static bool bench_size(const struct keyset *keys, size_t n, struct bench_row *row)
{
    struct ring_member m[BENCH_N_MAX];
    char ids[BENCH_N_MAX][16], racks[BENCH_N_MAX][16];
    struct bench_ctx ctx[KIND_COUNT];
    chunk_fn fns[KIND_COUNT] = {chunk_owner, chunk_pref, NULL, NULL};
    bool ok;

    assert(n <= BENCH_N_MAX && "bench_size: ring larger than BENCH_N_MAX");
    memset(row, 0, sizeof(*row));
    row->n = n;
    members_make(m, ids, racks, n);
    struct ring *r = ring_measure(m, n, row);
    ok = ring_check(r, keys);
    for (int kind = 0; kind < KIND_COUNT; kind++) {
        ctx[kind] = (struct bench_ctx){.keys = keys, .ring = r};
    }
#ifdef HAVE_MEMCACHED
    memcached_st *memc[2];
    for (int v = 0; v < 2; v++) {
        memc[v] = ketama_make(n, ketama_behaviors[v], &row->ketama_kib[v]);
        row->ketama_points[v] = n * ketama_points_per_server[v];
        ok = ok && ketama_check(memc[v], ketama_dists[v], keys, n);
        ctx[KIND_KETAMA + v].memc = memc[v];
        fns[KIND_KETAMA + v] = chunk_ketama;
    }
#endif
    if (ok) {
        measure_rates(ctx, fns, row);
    }
#ifdef HAVE_MEMCACHED
    memcached_free(memc[0]);
    memcached_free(memc[1]);
#endif
    ring_unref(r);
    return ok;
}

static void print_machine(void)
{
    char model[128] = "unknown CPU";
    char line[256];
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/cpuinfo", "r");

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon != NULL) {
            snprintf(model, sizeof(model), "%s", colon + 1 + strspn(colon + 1, " \t"));
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    (void)getloadavg(load, 3);
    printf("machine: %ld CPUs online, %s, load %.2f %.2f %.2f, compiler %s\n",
           sysconf(_SC_NPROCESSORS_ONLN), model, load[0], load[1], load[2], __VERSION__);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define BENCH_SANITIZED_HERE 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED_HERE 1
#endif

/* Print what instrumentation is in effect, with a warning when there is any. */
static void print_build(void)
{
    bool asan = __asan_init != NULL, here = false, opt = false;
    bool gcov = __gcov_init != NULL;
    bool ubsan;

#ifdef BENCH_SANITIZED_HERE
    here = true;
#endif
    /* clang's ASan runtime carries the UBSan handlers too: name only ASan then. */
    ubsan = !asan && !here && __ubsan_handle_add_overflow != NULL;
#ifdef __OPTIMIZE__
    opt = true;
#endif
    printf("build: bench %s, instrumentation:%s%s%s%s\n", opt ? "optimized" : "NOT optimized",
           asan || here ? " asan" : "", ubsan ? " ubsan" : "", gcov ? " coverage" : "",
           asan || here || ubsan || gcov ? "" : " none");
    if (asan || here || ubsan || gcov || !opt) {
        printf("WARNING: sanitizer, coverage or unoptimized build: "
               "the figures below are meaningless\n");
    }
}

static void print_ratio(double num, double den)
{
    if (den > 0) {
        printf(" %7.2fx", num / den);
    } else {
        printf(" %8s", "n/a");
    }
}

static void print_table(const struct bench_row *rows, size_t n)
{
    printf("\n%5s %7s %9s %9s %10s %10s %11s %11s %8s %8s\n", "N", "tokens", "build ms", "ring KiB",
           "owner M/s", "pref3 M/s", "ketama M/s", "k-oaat M/s", "ratio", "r-oaat");
    for (size_t i = 0; i < n; i++) {
        const struct bench_row *r = &rows[i];
        printf("%5zu %7zu %9.3f %9.1f", r->n, r->n * BENCH_TOKENS, r->build_ms, r->ring_kib);
        printf(" %10.2f %10.2f %11.2f %11.2f", r->rate[KIND_OWNER] / 1e6, r->rate[KIND_PREF] / 1e6,
               r->rate[KIND_KETAMA_MD5] / 1e6, r->rate[KIND_KETAMA] / 1e6);
        print_ratio(r->rate[KIND_PREF], r->rate[KIND_KETAMA_MD5]);
        print_ratio(r->rate[KIND_PREF], r->rate[KIND_KETAMA]);
        printf("\n");
    }
    printf("  ketama: libketama's scheme (MD5 key hash, 160 points a server), which is what\n"
           "  libmemcached documents for both of its ketama behaviors; k-oaat: libmemcached\n"
           "  1.1's MEMCACHED_BEHAVIOR_KETAMA as it actually runs (one-at-a-time key hash,\n"
           "  100 points a server).  ratio = pref3 / ketama, r-oaat = pref3 / k-oaat.\n"
           "  Rates are medians of %d interleaved passes of up to one pass over the key\n"
           "  set, build ms the median of %d ring_create() calls.\n",
           BENCH_ROUNDS, BENCH_BUILD_RUNS);
}

#ifdef HAVE_MEMCACHED
static void print_rate(double rate)
{
    if (rate > 0) {
        printf(" %12.2f", rate / 1e6);
    } else {
        printf(" %12s", "n/a");
    }
}

static void print_ketama_table(const struct bench_row *rows, size_t n)
{
    static const char *names[2] = {"KETAMA", "KETAMA_WEIGHTED"};

    printf("\nketama detail (memcached_generate_hash, libmemcached %s)\n",
           LIBMEMCACHED_VERSION_STRING);
    printf("%5s %-16s %-7s %7s %9s %12s %11s\n", "N", "behavior", "keyhash", "points", "heap KiB",
           "lookups M/s", "pref3/this");
    for (size_t i = 0; i < n; i++) {
        for (int v = 0; v < 2; v++) {
            const struct bench_row *r = &rows[i];
            double rate = r->rate[KIND_KETAMA + v];
            printf("%5zu %-16s %-7s %7zu %9.1f", r->n, names[v], v ? "md5" : "oaat",
                   r->ketama_points[v], r->ketama_kib[v]);
            print_rate(rate);
            printf(" %10.2fx\n", rate > 0 ? r->rate[KIND_PREF] / rate : 0.0);
        }
    }
    printf("  heap KiB: the memcached_st, its N server entries (each with its own\n"
           "  I/O buffers) and the continuum\n");
}
#endif

static void print_goals(const struct bench_row *rows, size_t n)
{
    const struct bench_row *g = NULL;

    for (size_t i = 0; i < n; i++) {
        g = rows[i].n == GOAL_N ? &rows[i] : g;
    }
    if (g == NULL) {
        return;
    }
    printf("\ngoals (N=%d, %d tokens each)\n", GOAL_N, BENCH_TOKENS);
    if (g->rate[KIND_KETAMA] > 0) {
        double ratio = g->rate[KIND_PREF] / g->rate[KIND_KETAMA_MD5];
        double strict = g->rate[KIND_PREF] / g->rate[KIND_KETAMA];
        printf("  rf=%d preflists/s >= %.1fx ketama lookups/s: %.2fx  %s\n", BENCH_RF, GOAL_RATIO,
               ratio, ratio >= GOAL_RATIO ? "PASS" : "MISS");
        printf("    against the one-at-a-time variant (k-oaat): %.2fx  %s\n", strict,
               strict >= GOAL_RATIO ? "PASS" : "MISS");
    } else {
        printf("  rf=%d preflists/s >= %.1fx ketama lookups/s: SKIPPED "
               "(built without libmemcached)\n",
               BENCH_RF, GOAL_RATIO);
    }
    printf("  build %d x %d ring < %.0f ms: %.3f ms  %s\n", GOAL_N, BENCH_TOKENS, GOAL_BUILD_MS,
           g->build_ms, g->build_ms < GOAL_BUILD_MS ? "PASS" : "MISS");
}

/* --keys COUNT, or nothing; returns the key count, 0 on a usage error. */
static size_t parse_args(int argc, char **argv)
{
    char *end;
    unsigned long long v;

    if (argc == 1) {
        return BENCH_KEYS_DEFAULT;
    }
    if (argc != 3 || strcmp(argv[1], "--keys") != 0) {
        return 0;
    }
    v = strtoull(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || v < BENCH_CHUNK || v > BENCH_KEYS_MAX) {
        return 0;
    }
    return (size_t)v;
}

int main(int argc, char **argv)
{
    struct bench_row rows[BENCH_N_SIZES];
    struct keyset keys;
    size_t n_keys = parse_args(argc, argv);

    if (n_keys == 0) {
        fprintf(stderr, "usage: bench_ring [--keys COUNT]  (%d .. %d, default %d)\n", BENCH_CHUNK,
                BENCH_KEYS_MAX, BENCH_KEYS_DEFAULT);
        return 2;
    }
    print_machine();
    print_build();
    keyset_make(&keys, n_keys);
    printf("keys: %zu distinct, \"%s\" + %d..%d digits, %zu..%zu bytes; %d racks, rf=%d\n", keys.n,
           BENCH_KEY_PREFIX, BENCH_DIGITS_MIN, BENCH_DIGITS_MAX,
           sizeof(BENCH_KEY_PREFIX) - 1 + BENCH_DIGITS_MIN, BENCH_KEY_MAX, BENCH_RACKS, BENCH_RF);
#ifndef HAVE_MEMCACHED
    printf("ketama comparison skipped: built without libmemcached (libmemcached-dev)\n");
#endif
    for (size_t i = 0; i < BENCH_N_SIZES; i++) {
        if (!bench_size(&keys, bench_sizes[i], &rows[i])) {
            fprintf(stderr, "bench_ring: correctness check failed at N=%zu\n", bench_sizes[i]);
            keyset_free(&keys);
            return 1;
        }
    }
    print_table(rows, BENCH_N_SIZES);
#ifdef HAVE_MEMCACHED
    print_ketama_table(rows, BENCH_N_SIZES);
#endif
    print_goals(rows, BENCH_N_SIZES);
    keyset_free(&keys);
    return 0;
}
