/*
 * bench_store.c - storage benchmark: ringkv's store (storage/store.c) next
 * to raw LMDB doing the same work with the same durability, on the same
 * disk.
 *
 *   bench_store [--keys COUNT]
 *
 * Data lives in a fresh directory under $RINGKV_BENCH_DIR, or under
 * ./bench-store-data (the build tree, when `make bench` runs it), never
 * under /tmp, which may be tmpfs where fsync costs nothing.  The program
 * names the file system it measured on, and removes its data at the end.
 *
 * Keys are 16 bytes ("k" and 15 digits), values 100 bytes.  Raw LMDB
 * stores key i under the same 24-byte key ringkv does (the big-endian ring
 * position H(seed, key), then the key) in a named database of an
 * environment opened with the same flags (MDB_NOTLS, MDB_NOSYNC unless
 * sync always) and map size, so both do the same B-tree work; ringkv's
 * value is a record (record.h) carrying the version, whose size the
 * program reports.
 *
 * Measurements, each bounded by BENCH_PUT_OPS_MAX operations (puts) or
 * BENCH_SECONDS of time, whichever comes first; every figure is the median
 * of BENCH_ROUNDS rounds in which the two sides take turns:
 *   put      fresh keys into a fresh store, from 1 and from 32 threads, in
 *            each sync mode.  ringkv: store_write() (submit and wait).
 *            Raw LMDB: one write transaction per put, committed;
 *              always  default flags: every commit fsyncs;
 *              batch   MDB_NOSYNC and a thread calling mdb_env_sync()
 *                      every 10 ms (ringkv's batch_ms default);
 *              none    MDB_NOSYNC.
 *            With 32 threads each raw thread commits its own puts; LMDB
 *            serializes writers, so under `always` that is one fsync per
 *            put: the baseline of the group-commit goal.
 *   get      random keys of a store of COUNT keys (default 1M), one
 *            thread.  ringkv: store_get(), which decodes the record.  Raw
 *            LMDB: mdb_get() in a read transaction per get (renewed, as
 *            LMDB's documentation advises), copying the value out.
 *   scan     the whole circle, and a tenth of it, in chunks of
 *            BENCH_SCAN_CHUNK keys per read transaction.  ringkv:
 *            store_scan() with a cursor; raw LMDB: a cursor from
 *            MDB_SET_RANGE.  Rates in keys/s and MB/s of stored values
 *            (ringkv's records, raw LMDB's 100-byte values).
 *
 * Goals of the issue, printed as PASS or MISS: ringkv's put throughput is
 * at least 70% of raw LMDB's in every row (equal durability), and ringkv
 * with 32 writers under sync always does at least 10 times the puts of raw
 * LMDB's one fsync per put.  The program exits 0 whenever it ran, met or
 * not, and 1 when a setup step or a correctness check failed.
 */
#include "autoconf.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "record.h"
#include "ring.h"
#include "store.h"

/* The shapes: 16-byte keys, 100-byte values, 1M keys for reads. */
#define BENCH_KEY_LEN 16
#define BENCH_VALUE_LEN 100
#define BENCH_RAW_KEY_LEN (8 + BENCH_KEY_LEN)
#define BENCH_KEYS_DEFAULT 1000000
#define BENCH_KEYS_MIN 1000
#define BENCH_KEYS_MAX 20000000
/* The writer counts: one, and 32 for group commit. */
#define BENCH_WRITERS_MANY 32
/*
 * Bounds of one measurement.  A second holds hundreds of fsyncs even on a
 * slow disk; the operation cap stops fast modes at a store size that keeps
 * every row comparable.  Each figure is the median of BENCH_ROUNDS
 * measurements, the two sides alternating, so a load spike from elsewhere
 * on the machine hits one round rather than one side.
 */
#define BENCH_ROUNDS 3
#define BENCH_SECONDS 1.0
#define BENCH_PUT_OPS_MAX 100000
#define BENCH_GET_OPS_MAX 2000000
#define BENCH_SCAN_PASSES_MAX 50
/* The main thread checks the clock this often while writers run. */
#define BENCH_POLL_NS 2000000
/* Gets between clock reads: a read costs < 1% of them. */
#define BENCH_GET_CHUNK 1024
/* Keys per scan call (one read transaction each). */
#define BENCH_SCAN_CHUNK 1000
/* A tenth of the circle, starting a quarter of the way round. */
#define BENCH_ARC_START 0x4000000000000000ull
#define BENCH_ARC_LEN (UINT64_MAX / 10)
/* ringkv's default batch_ms: raw LMDB's batch mode syncs as often. */
#define BENCH_BATCH_MS 10
/*
 * One map size for both sides, large enough that ringkv never grows its
 * map during a measurement (growth is a resize under an exclusive lock,
 * which raw LMDB would not pay); the file is sparse.
 */
#define BENCH_MAP_BYTES (8ull << 30)
/* Loading the read store: operations in flight, transaction size, bound. */
#define BENCH_LOAD_WINDOW 1024
#define BENCH_RAW_LOAD_TXN 10000
#define BENCH_LOAD_SECONDS 600.0
/* Keys whose values are checked byte for byte after loading. */
#define BENCH_CHECK_KEYS 1000
#define BENCH_RNG_SEED 0x9e3779b97f4a7c15ull

/* Goals of the issue. */
#define GOAL_PUT_RATIO 0.70
#define GOAL_GROUP_FACTOR 10.0

#define BENCH_NODE "bench"
#define BENCH_CLUSTER "bench"
#define BENCH_DIR_DEFAULT "bench-store-data"

static const char *const sync_names[] = {"always", "batch", "none"};

/* One row of the put table. */
struct put_row {
    enum store_sync sync;
    unsigned writers;
    double ringkv, raw;           /* puts per second, medians of the rounds */
    uint64_t ops, commits, syncs; /* ringkv's counters, summed over the rounds */
};

/* Read figures: keys/s for gets, keys/s and MB/s for scans. */
struct read_row {
    const char *name;
    double ringkv, raw;
    double ringkv_mbs, raw_mbs;
};

/* What one read measurement yields. */
struct read_rate {
    double ops; /* gets or keys scanned per second */
    double mbs; /* scans: MB/s of stored values; 0 for gets */
};

/* The two loaded stores the read measurements work on. */
struct read_target {
    struct store *s;
    struct raw *raw;
    uint64_t keys;
};
typedef struct read_rate (*read_fn)(const struct read_target *t);

static volatile uint64_t bench_sink;
/* This run's directory, leaving BENCH_SUBDIR_MAX bytes of a path for the names made in it. */
#define BENCH_SUBDIR_MAX 64
static char bench_root[PATH_MAX - BENCH_SUBDIR_MAX];

/* Runtime symbols that exist only when some linked code was instrumented. */
extern void __asan_init(void) __attribute__((weak));
extern void __ubsan_handle_add_overflow(void *, void *, void *) __attribute__((weak));
extern void __gcov_init(void *) __attribute__((weak));

/* --- small helpers ------------------------------------------------------------ */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double secs_since(uint64_t t0)
{
    return (double)(now_ns() - t0) / 1e9;
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

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u),
                          .tv_nsec = (long)(ns % 1000000000u)};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "bench_store: %s: %s\n", what, rc < 0 ? rk_strerror(rc) : mdb_strerror(rc));
    exit(1);
}

static void put_be64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

static uint64_t get_be64(const uint8_t *p)
{
    uint64_t v = 0;

    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

/* Key i: "k" and the last 15 decimal digits of i. */
static void key_make(uint64_t i, uint8_t out[BENCH_KEY_LEN])
{
    out[0] = 'k';
    for (int j = BENCH_KEY_LEN - 1; j >= 1; j--) {
        out[j] = (uint8_t)('0' + i % 10);
        i /= 10;
    }
}

/* Raw LMDB's key of key i: position, then the key, as in ringkv's data table. */
static void raw_key_make(uint64_t i, uint8_t out[BENCH_RAW_KEY_LEN])
{
    key_make(i, out + 8);
    put_be64(out, ring_hash(ring_default_seed, out + 8, BENCH_KEY_LEN));
}

/* The value of key i: the same 100 bytes on both sides. */
static void value_make(uint64_t i, uint8_t out[BENCH_VALUE_LEN])
{
    uint64_t x = i * 0x9e3779b97f4a7c15ull + 1;

    for (size_t j = 0; j < BENCH_VALUE_LEN; j++) {
        out[j] = (uint8_t)rng_next(&x);
    }
}

/* --- data directories ----------------------------------------------------------- */

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    return remove(p);
}

static void dir_remove(const char *path)
{
    if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT) {
        fprintf(stderr, "bench_store: cannot remove %s: %s\n", path, strerror(errno));
    }
}

/* bench_root/name, created fresh. */
static void dir_make(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", bench_root, name);
    dir_remove(out);
    if (mkdir(out, 0700) != 0) {
        fprintf(stderr, "bench_store: mkdir %s: %s\n", out, strerror(errno));
        exit(1);
    }
}

/* The base directory: $RINGKV_BENCH_DIR, else BENCH_DIR_DEFAULT. */
static const char *root_base(void)
{
    const char *base = getenv("RINGKV_BENCH_DIR");

    return base != NULL && base[0] != '\0' ? base : BENCH_DIR_DEFAULT;
}

static void root_make(void)
{
    const char *base = root_base();

    if (mkdir(base, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "bench_store: mkdir %s: %s\n", base, strerror(errno));
        exit(1);
    }
    snprintf(bench_root, sizeof(bench_root), "%s/bench_store.XXXXXX", base);
    if (mkdtemp(bench_root) == NULL) {
        fprintf(stderr, "bench_store: mkdtemp %s: %s\n", bench_root, strerror(errno));
        exit(1);
    }
}

static const char *fs_type_name(long type)
{
    static const struct {
        long magic;
        const char *name;
    } types[] = {{0xEF53, "ext2/3/4"},  {0x58465342, "xfs"},    {0x9123683E, "btrfs"},
                 {0x01021994, "tmpfs"}, {0x858458f6, "ramfs"},  {0x794c7630, "overlayfs"},
                 {0x6969, "nfs"},       {0x2fc12fc1, "zfs"},    {0xF2F52010, "f2fs"},
                 {0x65735546, "fuse"},  {0x01021997, "9p/v9fs"}};

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (types[i].magic == type) {
            return types[i].name;
        }
    }
    return "unknown";
}

/* The /proc/mounts line whose mount point is the longest prefix of path. */
static void mount_of(const char *path, char *dev, char *mnt, char *type, char *opts, size_t cap)
{
    char d[PATH_MAX], m[PATH_MAX], t[64], o[1024];
    size_t best = 0;
    FILE *f = fopen("/proc/mounts", "r");

    snprintf(dev, cap, "?");
    snprintf(mnt, cap, "?");
    snprintf(type, cap, "?");
    snprintf(opts, cap, "?");
    while (f != NULL && fscanf(f, "%4095s %4095s %63s %1023s %*d %*d", d, m, t, o) == 4) {
        size_t n = strlen(m);
        bool under = strncmp(path, m, n) == 0 && (path[n] == '/' || path[n] == '\0' || n == 1);
        if (under && n >= best) {
            best = n;
            snprintf(dev, cap, "%s", d);
            snprintf(mnt, cap, "%s", m);
            snprintf(type, cap, "%s", t);
            snprintf(opts, cap, "%s", o);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
}

static void print_data_dir(void)
{
    char real[PATH_MAX], dev[PATH_MAX], mnt[PATH_MAX], type[PATH_MAX], opts[PATH_MAX];
    struct statfs sf;

    if (realpath(bench_root, real) == NULL || statfs(real, &sf) != 0) {
        fprintf(stderr, "bench_store: cannot inspect %s: %s\n", bench_root, strerror(errno));
        exit(1);
    }
    mount_of(real, dev, mnt, type, opts, PATH_MAX);
    printf("data: %s\n      file system %s (statfs 0x%lx), %s mounted on %s (%s)\n", real,
           fs_type_name((long)sf.f_type), (unsigned long)sf.f_type, dev, mnt, type);
    if (sf.f_type == 0x01021994 || sf.f_type == 0x858458f6) {
        printf("WARNING: data on a RAM file system: fsync costs nothing here, sync figures "
               "mean little; set RINGKV_BENCH_DIR to a directory on a disk\n");
    }
}

/* --- the machine and the build ------------------------------------------------- */

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define BENCH_SANITIZED_HERE 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BENCH_SANITIZED_HERE 1
#endif

static void print_machine(void)
{
    char line[256], model[128] = "unknown CPU";
    double load[3] = {0, 0, 0};
    FILE *f = fopen("/proc/cpuinfo", "r");
    int major, minor, patch;

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
    mdb_version(&major, &minor, &patch);
    printf("machine: %ld CPUs online, %s, load %.2f %.2f %.2f, LMDB %d.%d.%d\n",
           sysconf(_SC_NPROCESSORS_ONLN), model, load[0], load[1], load[2], major, minor, patch);
}

/* Print what instrumentation is in effect, with a warning when there is any. */
static void print_build(void)
{
    bool asan = __asan_init != NULL, here = false, opt = false;
    bool gcov = __gcov_init != NULL;
    bool ubsan;

#ifdef BENCH_SANITIZED_HERE
    here = true;
#endif
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

/* --- the two sides -------------------------------------------------------------- */

/* Raw LMDB: one environment, one named database, as ringkv opens its own. */
struct raw {
    MDB_env *env;
    MDB_dbi dbi;
};

static void raw_open(struct raw *r, const char *path, enum store_sync sync)
{
    unsigned flags = MDB_NOTLS | (sync == STORE_SYNC_ALWAYS ? 0 : MDB_NOSYNC);
    MDB_txn *txn;
    int rc;

    rc = mdb_env_create(&r->env);
    rc = rc ? rc : mdb_env_set_maxdbs(r->env, 4);
    rc = rc ? rc : mdb_env_set_mapsize(r->env, BENCH_MAP_BYTES);
    rc = rc ? rc : mdb_env_open(r->env, path, flags, 0600);
    rc = rc ? rc : mdb_txn_begin(r->env, NULL, 0, &txn);
    if (rc != 0) {
        die("opening raw LMDB", rc);
    }
    rc = mdb_dbi_open(txn, "data", MDB_CREATE, &r->dbi);
    rc = rc ? rc : mdb_txn_commit(txn);
    if (rc != 0) {
        die("creating raw LMDB's database", rc);
    }
}

static void raw_close(struct raw *r)
{
    mdb_env_sync(r->env, 1);
    mdb_env_close(r->env);
}

static int raw_put(struct raw *r, uint64_t i)
{
    uint8_t k[BENCH_RAW_KEY_LEN], v[BENCH_VALUE_LEN];
    MDB_val key = {sizeof(k), k}, val = {sizeof(v), v};
    MDB_txn *txn;
    int rc;

    raw_key_make(i, k);
    value_make(i, v);
    rc = mdb_txn_begin(r->env, NULL, 0, &txn);
    if (rc != 0) {
        return rc;
    }
    rc = mdb_put(txn, r->dbi, &key, &val, 0);
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    return mdb_txn_commit(txn);
}

static void store_open_at(struct store **s, const char *path, enum store_sync sync)
{
    struct store_config cfg;
    char err[256] = "";
    int rc;

    store_config_defaults(&cfg);
    cfg.path = path;
    cfg.node_id = BENCH_NODE;
    cfg.cluster_id = (const uint8_t *)BENCH_CLUSTER;
    cfg.cluster_id_len = strlen(BENCH_CLUSTER);
    cfg.sync = sync;
    cfg.batch_ms = BENCH_BATCH_MS;
    cfg.map_initial = BENCH_MAP_BYTES;
    cfg.map_max = BENCH_MAP_BYTES;
    rc = store_open(s, &cfg, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "bench_store: store_open %s: %s (%s)\n", path, rk_strerror(rc), err);
        exit(1);
    }
}

static int ringkv_put(struct store *s, uint64_t i)
{
    uint8_t k[BENCH_KEY_LEN], v[BENCH_VALUE_LEN];

    key_make(i, k);
    value_make(i, v);
    return store_write(s, k, sizeof(k), v, sizeof(v), false, NULL, NULL);
}

/* --- puts ----------------------------------------------------------------------- */

/* One put measurement: W threads over disjoint key ranges, one stop flag. */
struct put_run {
    struct store *s; /* ringkv, or NULL for raw */
    struct raw *raw;
    unsigned writers;
    uint64_t per_thread;
    pthread_barrier_t start;
    atomic_bool stop;
    atomic_uint finished;
    atomic_int error;
    uint64_t done[BENCH_WRITERS_MANY];
};

struct put_thread {
    struct put_run *run;
    unsigned t;
};

static void *put_thread_main(void *arg)
{
    struct put_thread *pt = arg;
    struct put_run *run = pt->run;
    uint64_t base = pt->t * run->per_thread, n = 0;

    pthread_barrier_wait(&run->start);
    while (n < run->per_thread && !atomic_load_explicit(&run->stop, memory_order_relaxed)) {
        int rc = run->s != NULL ? ringkv_put(run->s, base + n) : raw_put(run->raw, base + n);
        if (rc != 0) {
            atomic_store(&run->error, rc);
            break;
        }
        n++;
    }
    run->done[pt->t] = n;
    atomic_fetch_add(&run->finished, 1);
    return NULL;
}

/* Run the writers until they are done or the time is up; returns puts per second. */
static double put_measure(struct put_run *run)
{
    pthread_t tid[BENCH_WRITERS_MANY];
    struct put_thread pt[BENCH_WRITERS_MANY];
    uint64_t t0, total = 0;
    double secs;

    run->per_thread = BENCH_PUT_OPS_MAX / run->writers;
    atomic_init(&run->stop, false);
    atomic_init(&run->finished, 0);
    atomic_init(&run->error, 0);
    pthread_barrier_init(&run->start, NULL, run->writers + 1);
    for (unsigned t = 0; t < run->writers; t++) {
        pt[t] = (struct put_thread){run, t};
        if (pthread_create(&tid[t], NULL, put_thread_main, &pt[t]) != 0) {
            die("pthread_create", RK_ENOMEM);
        }
    }
    pthread_barrier_wait(&run->start);
    t0 = now_ns();
    while (atomic_load(&run->finished) < run->writers && secs_since(t0) < BENCH_SECONDS) {
        sleep_ns(BENCH_POLL_NS);
    }
    atomic_store(&run->stop, true);
    for (unsigned t = 0; t < run->writers; t++) {
        pthread_join(tid[t], NULL);
        total += run->done[t];
    }
    secs = secs_since(t0);
    pthread_barrier_destroy(&run->start);
    if (atomic_load(&run->error) != 0) {
        die("put", atomic_load(&run->error));
    }
    return (double)total / secs;
}

/* Raw LMDB's batch mode: an fsync every BENCH_BATCH_MS while the puts run. */
struct raw_syncer {
    struct raw *raw;
    atomic_bool stop;
    pthread_t tid;
};

static void *raw_syncer_main(void *arg)
{
    struct raw_syncer *sy = arg;

    while (!atomic_load(&sy->stop)) {
        sleep_ns((uint64_t)BENCH_BATCH_MS * 1000000u);
        mdb_env_sync(sy->raw->env, 1);
    }
    return NULL;
}

static double put_raw(enum store_sync sync, unsigned writers)
{
    struct put_run run = {.writers = writers};
    struct raw_syncer sy;
    struct raw raw;
    char path[PATH_MAX];
    double rate;

    dir_make(path, sizeof(path), "raw-put");
    raw_open(&raw, path, sync);
    run.raw = &raw;
    sy.raw = &raw;
    atomic_init(&sy.stop, false);
    if (sync == STORE_SYNC_BATCH && pthread_create(&sy.tid, NULL, raw_syncer_main, &sy) != 0) {
        die("pthread_create", RK_ENOMEM);
    }
    rate = put_measure(&run);
    if (sync == STORE_SYNC_BATCH) {
        atomic_store(&sy.stop, true);
        pthread_join(sy.tid, NULL);
    }
    raw_close(&raw);
    dir_remove(path);
    return rate;
}

/* One ringkv measurement; adds the store's counters of it to the row. */
static double put_ringkv(struct put_row *row)
{
    struct put_run run = {.writers = row->writers};
    struct store_stats a, b;
    char path[PATH_MAX];
    double rate;

    dir_make(path, sizeof(path), "ringkv-put");
    store_open_at(&run.s, path, row->sync);
    store_get_stats(run.s, &a);
    rate = put_measure(&run);
    store_get_stats(run.s, &b);
    row->ops += b.ops - a.ops;
    row->commits += b.commits - a.commits;
    row->syncs += b.syncs - a.syncs;
    store_close(run.s);
    dir_remove(path);
    return rate;
}

/* Alternate the two sides round by round; keep the medians. */
static void put_row_run(struct put_row *row)
{
    double a[BENCH_ROUNDS], b[BENCH_ROUNDS];

    for (int r = 0; r < BENCH_ROUNDS; r++) {
        a[r] = put_ringkv(row);
        b[r] = put_raw(row->sync, row->writers);
        fprintf(stderr, "bench_store: put sync=%s writers=%u round %d: ringkv %.0f/s, raw %.0f/s\n",
                sync_names[row->sync], row->writers, r, a[r], b[r]);
    }
    row->ringkv = median(a, BENCH_ROUNDS);
    row->raw = median(b, BENCH_ROUNDS);
}

/* --- loading the read stores ------------------------------------------------------ */

/* A window of ringkv operations in flight, with the buffers they borrow. */
struct load_slot {
    struct store_op op;
    uint8_t key[BENCH_KEY_LEN];
    uint8_t value[BENCH_VALUE_LEN];
};

static uint64_t load_ringkv(struct store *s, uint64_t n)
{
    static struct load_slot w[BENCH_LOAD_WINDOW];
    uint64_t done = 0, t0 = now_ns();

    while (done < n && secs_since(t0) < BENCH_LOAD_SECONDS) {
        size_t k = n - done < BENCH_LOAD_WINDOW ? (size_t)(n - done) : BENCH_LOAD_WINDOW;
        for (size_t j = 0; j < k; j++) {
            store_op_init(&w[j].op, STORE_OP_WRITE);
            key_make(done + j, w[j].key);
            value_make(done + j, w[j].value);
            w[j].op.key = w[j].key;
            w[j].op.key_len = BENCH_KEY_LEN;
            w[j].op.value = w[j].value;
            w[j].op.value_len = BENCH_VALUE_LEN;
            int rc = store_submit(s, &w[j].op);
            if (rc != 0) {
                die("store_submit", rc);
            }
        }
        for (size_t j = 0; j < k; j++) {
            int rc = store_wait(s, &w[j].op);
            sibling_deinit(&w[j].op.written);
            if (rc != 0) {
                die("loading ringkv", rc);
            }
        }
        done += k;
    }
    fprintf(stderr, "bench_store: ringkv loaded %" PRIu64 " keys in %.1f s\n", done,
            secs_since(t0));
    return done;
}

static void load_raw(struct raw *r, uint64_t n)
{
    uint8_t k[BENCH_RAW_KEY_LEN], v[BENCH_VALUE_LEN];
    MDB_val key = {sizeof(k), k}, val = {sizeof(v), v};
    uint64_t t0 = now_ns();
    MDB_txn *txn;
    int rc;

    for (uint64_t i = 0; i < n; i += BENCH_RAW_LOAD_TXN) {
        rc = mdb_txn_begin(r->env, NULL, 0, &txn);
        for (uint64_t j = i; rc == 0 && j < n && j < i + BENCH_RAW_LOAD_TXN; j++) {
            raw_key_make(j, k);
            value_make(j, v);
            rc = mdb_put(txn, r->dbi, &key, &val, 0);
        }
        rc = rc ? rc : mdb_txn_commit(txn);
        if (rc != 0) {
            die("loading raw LMDB", rc);
        }
    }
    mdb_env_sync(r->env, 1);
    fprintf(stderr, "bench_store: raw LMDB loaded %" PRIu64 " keys in %.1f s\n", n, secs_since(t0));
}

/*
 * About BENCH_CHECK_KEYS keys spread over the set hold their values on both
 * sides, under the same position.
 */
static bool check_loaded(struct store *s, struct raw *r, uint64_t n)
{
    uint8_t k[BENCH_RAW_KEY_LEN], v[BENCH_VALUE_LEN];
    MDB_val key = {sizeof(k), k}, val;
    struct record rec;
    MDB_txn *txn;
    bool ok;

    if (mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn) != 0) {
        return false;
    }
    ok = true;
    record_init(&rec);
    for (uint64_t i = 0; ok && i < n; i += n / BENCH_CHECK_KEYS + 1) {
        raw_key_make(i, k);
        value_make(i, v);
        ok = mdb_get(txn, r->dbi, &key, &val) == 0 && val.mv_size == sizeof(v) &&
             memcmp(val.mv_data, v, sizeof(v)) == 0;
        ok = ok && store_get(s, k + 8, BENCH_KEY_LEN, &rec) == 0 && rec.n == 1 &&
             rec.s[0].value_len == sizeof(v) && memcmp(rec.s[0].value, v, sizeof(v)) == 0;
        ok = ok && store_position(s, k + 8, BENCH_KEY_LEN) == get_be64(k);
    }
    mdb_txn_abort(txn);
    record_deinit(&rec);
    return ok;
}

/* --- gets ------------------------------------------------------------------------- */

static struct read_rate get_ringkv(const struct read_target *t)
{
    struct store *s = t->s;
    uint64_t n = t->keys, rng = BENCH_RNG_SEED, done = 0, t0 = now_ns();
    uint8_t k[BENCH_KEY_LEN];
    struct record rec;

    record_init(&rec);
    while (done < BENCH_GET_OPS_MAX && secs_since(t0) < BENCH_SECONDS) {
        for (int j = 0; j < BENCH_GET_CHUNK; j++) {
            key_make(rng_next(&rng) % n, k);
            int rc = store_get(s, k, sizeof(k), &rec);
            if (rc != 0) {
                die("store_get", rc);
            }
            bench_sink += rec.s[0].value[0];
        }
        done += BENCH_GET_CHUNK;
    }
    record_deinit(&rec);
    return (struct read_rate){(double)done / secs_since(t0), 0};
}

static struct read_rate get_raw(const struct read_target *t)
{
    struct raw *r = t->raw;
    uint64_t n = t->keys, rng = BENCH_RNG_SEED, done = 0, t0 = now_ns();
    uint8_t k[BENCH_RAW_KEY_LEN], v[BENCH_VALUE_LEN];
    MDB_val key = {sizeof(k), k}, val;
    MDB_txn *txn;
    int rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn);

    if (rc != 0) {
        die("mdb_txn_begin", rc);
    }
    mdb_txn_reset(txn);
    while (done < BENCH_GET_OPS_MAX && secs_since(t0) < BENCH_SECONDS) {
        for (int j = 0; j < BENCH_GET_CHUNK; j++) {
            raw_key_make(rng_next(&rng) % n, k);
            rc = mdb_txn_renew(txn);
            rc = rc ? rc : mdb_get(txn, r->dbi, &key, &val);
            if (rc != 0) {
                die("mdb_get", rc);
            }
            memcpy(v, val.mv_data, sizeof(v));
            mdb_txn_reset(txn);
            bench_sink += v[0];
        }
        done += BENCH_GET_CHUNK;
    }
    mdb_txn_abort(txn);
    return (struct read_rate){(double)done / secs_since(t0), 0};
}

/* --- scans ------------------------------------------------------------------------ */

struct scan_tally {
    uint64_t items, bytes;
};

static int scan_item(void *arg, const struct store_item *it)
{
    struct scan_tally *t = arg;

    t->items++;
    t->bytes += it->record_len;
    bench_sink += it->record[0] + it->record[it->record_len - 1];
    return 0;
}

/* One ringkv pass over the arc (start, end]. */
static void scan_ringkv_pass(struct store *s, uint64_t start, uint64_t end, struct scan_tally *t)
{
    struct store_cursor cur;

    store_cursor_init(&cur);
    while (!cur.done) {
        int rc = store_scan(s, start, end, &cur, BENCH_SCAN_CHUNK, 0, scan_item, t);
        if (rc != 0) {
            die("store_scan", rc);
        }
    }
}

/*
 * One chunk of a raw pass: up to BENCH_SCAN_CHUNK keys from `from` (the
 * first key >= from, skipping `from` itself when skip) while positions stay
 * <= end.  Returns false when the range is exhausted; from becomes the last
 * key seen.
 */
static bool scan_raw_chunk(struct raw *r, MDB_txn *txn, uint8_t *from, size_t *from_len, bool skip,
                           uint64_t end, struct scan_tally *t)
{
    MDB_val key = {*from_len, from}, val;
    MDB_cursor *c;
    size_t n = 0;
    int rc = mdb_txn_renew(txn);

    rc = rc ? rc : mdb_cursor_open(txn, r->dbi, &c);
    if (rc != 0) {
        die("raw scan", rc);
    }
    rc = mdb_cursor_get(c, &key, &val, MDB_SET_RANGE);
    if (rc == 0 && skip && key.mv_size == *from_len && memcmp(key.mv_data, from, *from_len) == 0) {
        rc = mdb_cursor_get(c, &key, &val, MDB_NEXT);
    }
    for (; rc == 0 && n < BENCH_SCAN_CHUNK && get_be64(key.mv_data) <= end; n++) {
        t->items++;
        t->bytes += val.mv_size;
        bench_sink += ((uint8_t *)val.mv_data)[0] + ((uint8_t *)val.mv_data)[val.mv_size - 1];
        memcpy(from, key.mv_data, key.mv_size);
        *from_len = key.mv_size;
        rc = n + 1 < BENCH_SCAN_CHUNK ? mdb_cursor_get(c, &key, &val, MDB_NEXT) : 0;
    }
    bool more = rc == 0 && n == BENCH_SCAN_CHUNK;
    mdb_cursor_close(c);
    mdb_txn_reset(txn);
    return more;
}

/* One raw pass over positions [first, end]. */
static void scan_raw_pass(struct raw *r, uint64_t first, uint64_t end, struct scan_tally *t)
{
    uint8_t from[BENCH_RAW_KEY_LEN];
    size_t from_len = 8;
    MDB_txn *txn;
    bool skip = false;
    int rc = mdb_txn_begin(r->env, NULL, MDB_RDONLY, &txn);

    if (rc != 0) {
        die("mdb_txn_begin", rc);
    }
    mdb_txn_reset(txn);
    put_be64(from, first);
    while (scan_raw_chunk(r, txn, from, &from_len, skip, end, t)) {
        skip = true;
    }
    mdb_txn_abort(txn);
}

static struct read_rate scan_rate(const struct scan_tally *t, uint64_t t0)
{
    double secs = secs_since(t0);

    return (struct read_rate){(double)t->items / secs, (double)t->bytes / secs / 1e6};
}

/* Passes over an arc until BENCH_SECONDS or BENCH_SCAN_PASSES_MAX, one side each. */
static struct read_rate scan_ringkv(const struct read_target *t, uint64_t start, uint64_t end)
{
    struct scan_tally a = {0, 0};
    uint64_t t0 = now_ns();

    for (int p = 0; p < BENCH_SCAN_PASSES_MAX && secs_since(t0) < BENCH_SECONDS; p++) {
        scan_ringkv_pass(t->s, start, end, &a);
    }
    return scan_rate(&a, t0);
}

static struct read_rate scan_raw(const struct read_target *t, uint64_t first, uint64_t end)
{
    struct scan_tally b = {0, 0};
    uint64_t t0 = now_ns();

    for (int p = 0; p < BENCH_SCAN_PASSES_MAX && secs_since(t0) < BENCH_SECONDS; p++) {
        scan_raw_pass(t->raw, first, end, &b);
    }
    return scan_rate(&b, t0);
}

/* The whole circle: ringkv's arc (0, 0], every raw position. */
static struct read_rate circle_ringkv(const struct read_target *t)
{
    return scan_ringkv(t, 0, 0);
}

static struct read_rate circle_raw(const struct read_target *t)
{
    return scan_raw(t, 0, UINT64_MAX);
}

/* A tenth: ringkv's arc (start, end], raw positions start + 1 .. end. */
static struct read_rate arc_ringkv(const struct read_target *t)
{
    return scan_ringkv(t, BENCH_ARC_START, BENCH_ARC_START + BENCH_ARC_LEN);
}

static struct read_rate arc_raw(const struct read_target *t)
{
    return scan_raw(t, BENCH_ARC_START + 1, BENCH_ARC_START + BENCH_ARC_LEN);
}

/* Alternate the two sides round by round; keep the medians. */
static void read_row_run(struct read_row *row, const struct read_target *t, read_fn ringkv,
                         read_fn raw)
{
    double a[BENCH_ROUNDS], b[BENCH_ROUNDS], am[BENCH_ROUNDS], bm[BENCH_ROUNDS];

    for (int r = 0; r < BENCH_ROUNDS; r++) {
        struct read_rate x = ringkv(t), y = raw(t);
        a[r] = x.ops;
        am[r] = x.mbs;
        b[r] = y.ops;
        bm[r] = y.mbs;
        fprintf(stderr, "bench_store: %s round %d: ringkv %.0f/s, raw %.0f/s\n", row->name, r, a[r],
                b[r]);
    }
    row->ringkv = median(a, BENCH_ROUNDS);
    row->raw = median(b, BENCH_ROUNDS);
    row->ringkv_mbs = median(am, BENCH_ROUNDS);
    row->raw_mbs = median(bm, BENCH_ROUNDS);
}

/* --- the read benchmark ------------------------------------------------------------- */

struct read_result {
    struct read_row rows[3];
    uint64_t keys;
    double ringkv_record_bytes;
    uint64_t ringkv_file, raw_file;
};

static uint64_t raw_used_bytes(struct raw *r)
{
    MDB_envinfo info;
    MDB_stat st;

    mdb_env_info(r->env, &info);
    mdb_env_stat(r->env, &st);
    return (uint64_t)(info.me_last_pgno + 1) * st.ms_psize;
}

static bool read_bench(uint64_t n, struct read_result *res)
{
    char spath[PATH_MAX], rpath[PATH_MAX];
    struct store_stats st;
    struct store *s;
    struct raw raw;
    bool ok;

    dir_make(spath, sizeof(spath), "ringkv-read");
    dir_make(rpath, sizeof(rpath), "raw-read");
    store_open_at(&s, spath, STORE_SYNC_NONE);
    raw_open(&raw, rpath, STORE_SYNC_NONE);
    res->keys = load_ringkv(s, n);
    load_raw(&raw, res->keys);
    ok = check_loaded(s, &raw, res->keys);
    if (ok) {
        struct read_target t = {s, &raw, res->keys};
        struct scan_tally all = {0, 0};
        scan_ringkv_pass(s, 0, 0, &all);
        res->ringkv_record_bytes = (double)all.bytes / (double)all.items;
        res->rows[0] = (struct read_row){.name = "get, random keys"};
        read_row_run(&res->rows[0], &t, get_ringkv, get_raw);
        res->rows[1] = (struct read_row){.name = "scan, whole circle"};
        read_row_run(&res->rows[1], &t, circle_ringkv, circle_raw);
        res->rows[2] = (struct read_row){.name = "scan, 1/10 arc"};
        read_row_run(&res->rows[2], &t, arc_ringkv, arc_raw);
        store_get_stats(s, &st);
        res->ringkv_file = st.map_used;
        res->raw_file = raw_used_bytes(&raw);
    }
    store_close(s);
    raw_close(&raw);
    dir_remove(spath);
    dir_remove(rpath);
    return ok;
}

/* --- report ------------------------------------------------------------------------- */

static double ratio(double a, double b)
{
    return b > 0 ? a / b : 0;
}

static void print_puts(const struct put_row *rows, size_t n)
{
    printf("\n%-30s %13s %15s %7s %9s %9s  %s\n", "operation", "ringkv ops/s", "raw LMDB ops/s",
           "ratio", "ops/txn", "ops/fsync", "goal >= 0.70");
    for (size_t i = 0; i < n; i++) {
        const struct put_row *r = &rows[i];
        char name[64], per_sync[16] = "-";
        snprintf(name, sizeof(name), "put sync=%s writers=%u", sync_names[r->sync], r->writers);
        if (r->syncs > 0) {
            snprintf(per_sync, sizeof(per_sync), "%.1f", ratio((double)r->ops, (double)r->syncs));
        }
        printf("%-30s %13.0f %15.0f %7.2f %9.1f %9s  %s\n", name, r->ringkv, r->raw,
               ratio(r->ringkv, r->raw), ratio((double)r->ops, (double)r->commits), per_sync,
               ratio(r->ringkv, r->raw) >= GOAL_PUT_RATIO ? "PASS" : "MISS");
    }
}

static void print_reads(const struct read_result *res)
{
    printf("\n%-30s %13s %15s %7s %11s %11s\n", "operation", "ringkv ops/s", "raw LMDB ops/s",
           "ratio", "ringkv MB/s", "raw MB/s");
    for (size_t i = 0; i < 3; i++) {
        const struct read_row *r = &res->rows[i];
        printf("%-30s %13.0f %15.0f %7.2f", r->name, r->ringkv, r->raw, ratio(r->ringkv, r->raw));
        if (r->ringkv_mbs > 0) {
            printf(" %11.1f %11.1f", r->ringkv_mbs, r->raw_mbs);
        }
        printf("\n");
    }
    printf("(scans: ops/s are keys/s; MB/s of stored values: ringkv records, raw 100-byte "
           "values)\n");
    printf("\nstored per key: ringkv %d-byte LMDB key + %.0f-byte record (value %d + version "
           "%.0f); raw LMDB %d-byte key + %d-byte value\n",
           BENCH_RAW_KEY_LEN, res->ringkv_record_bytes, BENCH_VALUE_LEN,
           res->ringkv_record_bytes - BENCH_VALUE_LEN, BENCH_RAW_KEY_LEN, BENCH_VALUE_LEN);
    printf("pages in use for %" PRIu64 " keys: ringkv %.1f MB (%.0f B/key), raw LMDB %.1f MB "
           "(%.0f B/key)\n",
           res->keys, (double)res->ringkv_file / 1e6, (double)res->ringkv_file / (double)res->keys,
           (double)res->raw_file / 1e6, (double)res->raw_file / (double)res->keys);
}

static void print_goals(const struct put_row *rows, size_t n)
{
    size_t met = 0, worst = 0;
    const struct put_row *always_many = NULL;

    for (size_t i = 0; i < n; i++) {
        met += ratio(rows[i].ringkv, rows[i].raw) >= GOAL_PUT_RATIO;
        if (ratio(rows[i].ringkv, rows[i].raw) < ratio(rows[worst].ringkv, rows[worst].raw)) {
            worst = i;
        }
        if (rows[i].sync == STORE_SYNC_ALWAYS && rows[i].writers == BENCH_WRITERS_MANY) {
            always_many = &rows[i];
        }
    }
    printf("\n%s goal: ringkv puts >= %.0f%% of raw LMDB at equal durability: %zu of %zu rows; "
           "worst sync=%s writers=%u at %.0f%%\n",
           met == n ? "PASS" : "MISS", GOAL_PUT_RATIO * 100, met, n, sync_names[rows[worst].sync],
           rows[worst].writers, ratio(rows[worst].ringkv, rows[worst].raw) * 100);
    double f = ratio(always_many->ringkv, always_many->raw);
    printf("%s goal: group commit, sync always, %d writers: ringkv %.0f puts/s = %.1fx raw "
           "LMDB's one fsync per put (%.0f puts/s); needs >= %.0fx\n",
           f >= GOAL_GROUP_FACTOR ? "PASS" : "MISS", BENCH_WRITERS_MANY, always_many->ringkv, f,
           always_many->raw, GOAL_GROUP_FACTOR);
}

/* --- main --------------------------------------------------------------------------- */

/* --keys COUNT, or nothing; returns the key count, 0 on a usage error. */
static uint64_t parse_args(int argc, char **argv)
{
    char *end;
    unsigned long long v;

    if (argc == 1) {
        return BENCH_KEYS_DEFAULT;
    }
    if (argc != 3 || strcmp(argv[1], "--keys") != 0) {
        return 0;
    }
    errno = 0;
    v = strtoull(argv[2], &end, 10);
    if (*argv[2] == '\0' || *end != '\0' || errno != 0 || v < BENCH_KEYS_MIN ||
        v > BENCH_KEYS_MAX) {
        return 0;
    }
    return v;
}

int main(int argc, char **argv)
{
    static const enum store_sync syncs[] = {STORE_SYNC_ALWAYS, STORE_SYNC_BATCH, STORE_SYNC_NONE};
    struct put_row put_rows[6];
    struct read_result reads;
    uint64_t n = parse_args(argc, argv);
    bool ok;

    if (n == 0) {
        fprintf(stderr, "usage: bench_store [--keys COUNT]  (%d .. %d, default %d)\n",
                BENCH_KEYS_MIN, BENCH_KEYS_MAX, BENCH_KEYS_DEFAULT);
        return 2;
    }
    print_machine();
    print_build();
    root_make();
    print_data_dir();
    printf("keys %d bytes, values %d bytes; median of %d rounds, each up to %d puts or %.1f s\n",
           BENCH_KEY_LEN, BENCH_VALUE_LEN, BENCH_ROUNDS, BENCH_PUT_OPS_MAX, BENCH_SECONDS);
    fflush(stdout);
    for (size_t i = 0; i < 6; i++) {
        put_rows[i] =
            (struct put_row){.sync = syncs[i / 2], .writers = i % 2 ? BENCH_WRITERS_MANY : 1};
        put_row_run(&put_rows[i]);
    }
    memset(&reads, 0, sizeof(reads));
    ok = read_bench(n, &reads);
    dir_remove(bench_root);
    if (strcmp(root_base(), BENCH_DIR_DEFAULT) == 0) {
        rmdir(BENCH_DIR_DEFAULT); /* only when empty: another run may be using it */
    }
    if (!ok) {
        fprintf(stderr, "bench_store: a loaded key does not hold its value\n");
        return 1;
    }
    print_puts(put_rows, 6);
    print_reads(&reads);
    print_goals(put_rows, 6);
    return 0;
}
