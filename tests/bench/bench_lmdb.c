/*
 * bench_lmdb.c - raw LMDB doing random puts: the physical peer of a ringkv
 * node's write path in tests/bench/bench_node.sh; and, with a `load-` mode,
 * raw LMDB loading records in key order: the physical peer of a node
 * receiving arcs in tests/bench/bench_handoff.sh.
 *
 *   bench_lmdb KEYS VALUE_BYTES PUTS_PER_TXN MAX_PUTS MAX_SECONDS MODE DIR
 *   MODE: [load-]sync | [load-]nometasync | [load-]nosync | [load-]batchMS |
 *         [load-]writemap-batchMS
 *         (batch10: every 10 ms)
 *
 * Loads KEYS keys ("key:" and 12 digits, the keys redis-benchmark -r
 * sends) with VALUE_BYTES-byte values into a fresh environment in DIR, syncs
 * it, then overwrites random keys of that set, PUTS_PER_TXN puts in each
 * write transaction, until MAX_PUTS puts or MAX_SECONDS of time, whichever
 * comes first (every transaction is completed; the clock is read between
 * transactions).  `sync` opens the environment with LMDB's default flags,
 * so every commit fsyncs once: the physical limit of a B-tree with random
 * keys at that transaction size.  `nometasync` adds MDB_NOMETASYNC: each
 * commit fsyncs its pages but not its meta page, as storage/store.c commits
 * a transaction through LMDB under `sync batch` (a handoff batch: the
 * receiver's limit when every batch is one commit).  `nosync` adds MDB_NOSYNC: no fsync at
 * all, the ceiling of ringkv's `sync none`.  `batchMS` is MDB_NOSYNC with a
 * second thread that calls mdb_env_sync() every MS milliseconds when a
 * transaction committed since its last one, as ringkv's `sync batch` does
 * (the sync's writeback competes with the puts, as in the node), and
 * `writemap-batchMS` the same with MDB_WRITEMAP: dirty pages written in
 * the map instead of by pwrite() at commit, flushed by msync().  All add
 * MDB_NOTLS, as storage/store.c does.
 *
 * A mode prefixed `load-` measures a load instead, with the same flags and
 * syncer: min(KEYS, MAX_PUTS) puts into the empty environment, PUTS_PER_TXN
 * a transaction, each key once, in key order, bounded by MAX_SECONDS; the
 * clock runs from the first transaction to the mdb_env_sync() after the
 * last.  Keys are laid out as a node's data table lays them out
 * (storage/store.c): a u64 position, big-endian, then "key:" and the
 * decimal index (the keys tests/bench/handoff_load.py writes), positions
 * being a fixed hash of the index, sorted before the clock starts; an arc
 * streamed by handoff arrives in this order.  VALUE_BYTES is then the size
 * of a stored record (header and value), not of a value.
 *
 * DIR is created if missing and must not hold an environment already; it
 * should be on the disk being measured (not tmpfs, where fsync is free).
 * The program removes the files it created before it exits.  It prints one
 * line:
 *   bench_lmdb puts_per_s=R puts=N txns=T seconds=S puts_per_txn=B sync=MODE syncs=F
 * (F: the syncer's flushes, 0 without one; MODE as given, `load-` included)
 * and exits 0 when it ran, 1 when a setup step or LMDB failed, 2 on bad
 * arguments.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* "key:" and 12 digits: redis-benchmark's key for -r. */
#define BENCH_KEY_LEN 16
#define BENCH_KEYS_MAX 100000000ull
#define BENCH_VALUE_MAX 1048576ull
#define BENCH_TXN_MAX 1000000ull
#define BENCH_SECONDS_MAX 3600ull
/* Keys per transaction while loading (no fsync until the end). */
#define BENCH_LOAD_TXN 10000
/*
 * Map size: four times the keys' payload, for the B-tree's pages and the
 * copy-on-write pages of the transactions in flight, plus a floor; the
 * file is sparse, so a generous map costs nothing.
 */
#define BENCH_MAP_FLOOR (256ull << 20)
#define BENCH_RNG_SEED 0x9e3779b97f4a7c15ull

/* A load key: u64 position, "key:" and up to 20 digits. */
#define BENCH_LOAD_KEY_MAX (8 + 4 + 20)

/* A key of a load: its position and its index, sorted by position. */
struct load_key {
    uint64_t pos, index;
};

struct bench {
    uint64_t keys, value_len, per_txn, max_puts, max_seconds;
    bool sync, nometasync, writemap, load;
    unsigned batch_ms; /* batchMS: the syncer's interval; 0 without a syncer */
    const char *mode;
    atomic_bool dirty, stop;
    uint64_t syncs;
    const char *dir;
    MDB_env *env;
    MDB_dbi dbi;
    unsigned char *value;
    uint64_t rng;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: fast, and the same sequence on every run. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* Reads a decimal argument in [lo, hi]; false on anything else. */
static bool arg_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;

    if (*s < '0' || *s > '9') {
        return false;
    }
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_args(struct bench *b, int argc, char **argv)
{
    if (argc != 8) {
        return false;
    }
    if (!arg_u64(argv[1], 1, BENCH_KEYS_MAX, &b->keys) ||
        !arg_u64(argv[2], 1, BENCH_VALUE_MAX, &b->value_len) ||
        !arg_u64(argv[3], 1, BENCH_TXN_MAX, &b->per_txn) ||
        !arg_u64(argv[4], 1, UINT64_MAX, &b->max_puts) ||
        !arg_u64(argv[5], 1, BENCH_SECONDS_MAX, &b->max_seconds)) {
        return false;
    }
    b->mode = argv[6];
    const char *mode = b->mode;
    if (strncmp(mode, "load-", 5) == 0) {
        b->load = true;
        mode += 5;
    }
    if (strcmp(mode, "sync") == 0) {
        b->sync = true;
    } else if (strcmp(mode, "nometasync") == 0) {
        b->sync = true;
        b->nometasync = true;
    } else if (strcmp(mode, "nosync") != 0) {
        const char *ms = mode;
        uint64_t v;
        if (strncmp(ms, "writemap-", 9) == 0) {
            b->writemap = true;
            ms += 9;
        }
        if (strncmp(ms, "batch", 5) != 0 || !arg_u64(ms + 5, 1, 10000, &v)) {
            return false;
        }
        b->batch_ms = (unsigned)v;
    }
    b->dir = argv[7];
    return true;
}

static int lmdb_fail(const char *what, int rc)
{
    fprintf(stderr, "bench_lmdb: %s: %s\n", what, mdb_strerror(rc));
    return -1;
}

/* Creates DIR if needed, refuses an existing environment, opens a new one. */
static int env_open(struct bench *b)
{
    char path[PATH_MAX];
    unsigned flags = MDB_NOTLS | (b->sync ? 0 : MDB_NOSYNC) | (b->nometasync ? MDB_NOMETASYNC : 0) |
                     (b->writemap ? MDB_WRITEMAP : 0);
    uint64_t map = BENCH_MAP_FLOOR + 4 * b->keys * (b->value_len + BENCH_KEY_LEN + 16);
    int rc;

    if (mkdir(b->dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_lmdb: mkdir %s: %s\n", b->dir, strerror(errno));
        return -1;
    }
    snprintf(path, sizeof(path), "%s/data.mdb", b->dir);
    if (access(path, F_OK) == 0) {
        fprintf(stderr, "bench_lmdb: %s exists: give a fresh directory\n", path);
        return -1;
    }
    if ((rc = mdb_env_create(&b->env)) != 0) {
        return lmdb_fail("mdb_env_create", rc);
    }
    if ((rc = mdb_env_set_mapsize(b->env, (size_t)map)) != 0) {
        return lmdb_fail("mdb_env_set_mapsize", rc);
    }
    if ((rc = mdb_env_open(b->env, b->dir, flags, 0600)) != 0) {
        return lmdb_fail("mdb_env_open", rc);
    }
    return 0;
}

/* Puts key `index` with a value whose first bytes change on every put. */
static int put_one(struct bench *b, MDB_txn *txn, uint64_t index)
{
    char key[BENCH_KEY_LEN + 1];
    uint64_t stamp = rng_next(&b->rng);

    snprintf(key, sizeof(key), "key:%012" PRIu64, index);
    memcpy(b->value, &stamp, b->value_len < sizeof(stamp) ? b->value_len : sizeof(stamp));
    MDB_val k = {BENCH_KEY_LEN, key};
    MDB_val v = {b->value_len, b->value};
    return mdb_put(txn, b->dbi, &k, &v, 0);
}

/* Runs one write transaction of `count` puts: sequential keys from `first`, or random ones. */
static int txn_run(struct bench *b, uint64_t first, uint64_t count, bool random)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(b->env, NULL, 0, &txn);

    if (rc != 0) {
        return lmdb_fail("mdb_txn_begin", rc);
    }
    for (uint64_t i = 0; i < count && rc == 0; i++) {
        rc = put_one(b, txn, random ? rng_next(&b->rng) % b->keys : first + i);
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return lmdb_fail("mdb_put", rc);
    }
    if ((rc = mdb_txn_commit(txn)) != 0) {
        return lmdb_fail("mdb_txn_commit", rc);
    }
    atomic_store(&b->dirty, true);
    return 0;
}

/* batchMS: flush every batch_ms when something committed, beside the puts. */
static void *syncer_main(void *arg)
{
    struct bench *b = arg;
    struct timespec ts = {.tv_sec = b->batch_ms / 1000, .tv_nsec = (b->batch_ms % 1000) * 1000000L};

    while (!atomic_load(&b->stop)) {
        nanosleep(&ts, NULL);
        if (atomic_exchange(&b->dirty, false)) {
            int rc = mdb_env_sync(b->env, 1);
            if (rc != 0) {
                lmdb_fail("mdb_env_sync", rc);
                abort();
            }
            b->syncs++;
        }
    }
    return NULL;
}

/* Opens the main database. */
static int dbi_open(struct bench *b)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(b->env, NULL, 0, &txn);

    if (rc != 0) {
        return lmdb_fail("mdb_txn_begin", rc);
    }
    if ((rc = mdb_dbi_open(txn, NULL, 0, &b->dbi)) != 0) {
        mdb_txn_abort(txn);
        return lmdb_fail("mdb_dbi_open", rc);
    }
    if ((rc = mdb_txn_commit(txn)) != 0) {
        return lmdb_fail("mdb_txn_commit", rc);
    }
    return 0;
}

/* Opens the main database and loads every key once, then syncs the file. */
static int load(struct bench *b)
{
    int rc;

    if (dbi_open(b) != 0) {
        return -1;
    }
    for (uint64_t i = 0; i < b->keys; i += BENCH_LOAD_TXN) {
        uint64_t n = b->keys - i < BENCH_LOAD_TXN ? b->keys - i : BENCH_LOAD_TXN;
        if (txn_run(b, i, n, false) != 0) {
            return -1;
        }
    }
    if ((rc = mdb_env_sync(b->env, 1)) != 0) {
        return lmdb_fail("mdb_env_sync", rc);
    }
    return 0;
}

/* batchMS: starts the syncer thread; nothing otherwise. */
static int syncer_start(struct bench *b, pthread_t *syncer)
{
    atomic_store(&b->dirty, false);
    if (b->batch_ms > 0 && pthread_create(syncer, NULL, syncer_main, b) != 0) {
        fprintf(stderr, "bench_lmdb: cannot start the syncer thread\n");
        return -1;
    }
    return 0;
}

static void syncer_stop(struct bench *b, pthread_t syncer)
{
    if (b->batch_ms > 0) {
        atomic_store(&b->stop, true);
        pthread_join(syncer, NULL);
    }
}

static void report(const struct bench *b, uint64_t puts, uint64_t txns, double elapsed)
{
    printf("bench_lmdb puts_per_s=%.0f puts=%" PRIu64 " txns=%" PRIu64
           " seconds=%.3f puts_per_txn=%" PRIu64 " sync=%s syncs=%" PRIu64 "\n",
           elapsed > 0 ? (double)puts / elapsed : 0.0, puts, txns, elapsed, b->per_txn, b->mode,
           b->syncs);
}

/* The measurement: random puts in transactions of per_txn until a bound. */
static int measure(struct bench *b)
{
    uint64_t puts = 0, txns = 0;
    double start = now_s(), elapsed = 0;
    pthread_t syncer;
    int rc = 0;

    /* the load ended with its own sync */
    if (syncer_start(b, &syncer) != 0) {
        return -1;
    }

    while (puts < b->max_puts && elapsed < (double)b->max_seconds) {
        uint64_t n = b->max_puts - puts < b->per_txn ? b->max_puts - puts : b->per_txn;
        if (txn_run(b, 0, n, true) != 0) {
            rc = -1;
            break;
        }
        puts += n;
        txns++;
        elapsed = now_s() - start;
    }
    syncer_stop(b, syncer);
    if (rc == 0) {
        report(b, puts, txns, elapsed);
    }
    return rc;
}

/* splitmix64's finaliser: a fixed stand-in for the ring's keyed hash. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int load_key_cmp(const void *a, const void *b)
{
    const struct load_key *x = a, *y = b;

    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The keys of a load, sorted by position: n entries, the caller frees them. */
static struct load_key *load_keys(uint64_t n)
{
    struct load_key *k = malloc(n * sizeof(*k));

    if (k == NULL) {
        fprintf(stderr, "bench_lmdb: out of memory for %" PRIu64 " keys\n", n);
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++) {
        k[i] = (struct load_key){.pos = mix64(i), .index = i};
    }
    qsort(k, n, sizeof(*k), load_key_cmp);
    return k;
}

/* One transaction of a load: keys[0..count), each put once. */
static int load_txn(struct bench *b, const struct load_key *keys, uint64_t count)
{
    unsigned char key[BENCH_LOAD_KEY_MAX];
    MDB_txn *txn;
    int rc = mdb_txn_begin(b->env, NULL, 0, &txn);

    if (rc != 0) {
        return lmdb_fail("mdb_txn_begin", rc);
    }
    for (uint64_t i = 0; i < count && rc == 0; i++) {
        for (int j = 0; j < 8; j++) {
            key[j] = (unsigned char)(keys[i].pos >> (56 - 8 * j));
        }
        int len = snprintf((char *)key + 8, sizeof(key) - 8, "key:%" PRIu64, keys[i].index);
        memcpy(b->value, &keys[i].pos, b->value_len < 8 ? b->value_len : 8);
        MDB_val k = {8 + (size_t)len, key};
        MDB_val v = {b->value_len, b->value};
        rc = mdb_put(txn, b->dbi, &k, &v, 0);
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return lmdb_fail("mdb_put", rc);
    }
    if ((rc = mdb_txn_commit(txn)) != 0) {
        return lmdb_fail("mdb_txn_commit", rc);
    }
    atomic_store(&b->dirty, true);
    return 0;
}

/* load- modes: the keys in position order into the empty environment, then a sync. */
static int measure_load(struct bench *b)
{
    uint64_t n = b->keys < b->max_puts ? b->keys : b->max_puts, puts = 0, txns = 0;
    struct load_key *keys = load_keys(n);
    double start, elapsed = 0;
    pthread_t syncer;
    int rc;

    if (keys == NULL || dbi_open(b) != 0 || syncer_start(b, &syncer) != 0) {
        free(keys);
        return -1;
    }
    start = now_s();
    while (puts < n && elapsed < (double)b->max_seconds) {
        uint64_t count = n - puts < b->per_txn ? n - puts : b->per_txn;
        if (load_txn(b, keys + puts, count) != 0) {
            break;
        }
        puts += count;
        txns++;
        elapsed = now_s() - start;
    }
    syncer_stop(b, syncer);
    rc = mdb_env_sync(b->env, 1);
    elapsed = now_s() - start;
    free(keys);
    if (rc != 0) {
        return lmdb_fail("mdb_env_sync", rc);
    }
    if (puts < n && elapsed < (double)b->max_seconds) {
        return -1; /* a transaction failed, and said so */
    }
    report(b, puts, txns, elapsed);
    return 0;
}

/* Closes the environment and removes the files it made (not DIR itself). */
static void env_remove(struct bench *b)
{
    char path[PATH_MAX];

    if (b->env == NULL) {
        return;
    }
    mdb_env_close(b->env);
    snprintf(path, sizeof(path), "%s/data.mdb", b->dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/lock.mdb", b->dir);
    unlink(path);
}

int main(int argc, char **argv)
{
    struct bench b = {.rng = BENCH_RNG_SEED};
    int status = 1;

    if (!parse_args(&b, argc, argv)) {
        fprintf(stderr, "usage: bench_lmdb KEYS VALUE_BYTES PUTS_PER_TXN MAX_PUTS MAX_SECONDS "
                        "[load-]sync|nometasync|nosync|batchMS|writemap-batchMS DIR\n");
        return 2;
    }
    b.value = malloc(b.value_len);
    if (b.value == NULL) {
        fprintf(stderr, "bench_lmdb: out of memory\n");
        return 1;
    }
    memset(b.value, 'v', b.value_len);
    if (env_open(&b) == 0 && (b.load ? measure_load(&b) == 0 : load(&b) == 0 && measure(&b) == 0)) {
        status = 0;
    }
    env_remove(&b);
    free(b.value);
    return status;
}
