/*
 * check_store_wal.c - the store's write-ahead log (storage/store.c with
 * storage/wal.c) on real LMDB files in temporary directories: writes
 * acknowledged before a crash (a child process that exits without closing
 * the store) are replayed at the next open under `sync always` and `sync
 * batch`, a log of another generation is dropped, a checksummed record that
 * does not decode refuses the open and leaves LMDB as it was, a torn last
 * record loses only its own batch, scans and key counts see LMDB's keys and
 * the log's exactly once in arc order with the newest record (also while a
 * checkpoint is under way), and the operations that run through LMDB keep
 * the logged writes, across a crash too.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "bytes.h"
#include "error.h"
#include "record.h"
#include "store.h"
#include "wal.h"

#define TEST_STORE_DIR_NAME "check_store_wal"
#include "test_store_dir.h"

/* Keys a crashing child writes. */
#define CRASH_KEYS 200
/* Attempts at a crash round whose log a checkpoint emptied before the crash. */
#define CRASH_ATTEMPTS 5

static struct store *open_in(const char *sub, enum store_sync sync)
{
    static char path[512];
    struct store_config c;
    struct store *s;
    char err[512];

    store_config_in(&c, path, sizeof(path), sub);
    c.sync = sync;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open %s: %s", sub, err);
    return s;
}

static void put(struct store *s, const char *key, const char *value)
{
    ck_assert_int_eq(store_write(s, key, strlen(key), value, strlen(value), false, NULL, NULL), 0);
}

/* The value of a single-sibling live record, or NULL when absent or deleted. */
static char *get_value(struct store *s, const char *key)
{
    struct record r;
    char *v = NULL;

    record_init(&r);
    if (store_get(s, key, strlen(key), &r) == 0 && r.n == 1 && !r.s[0].tombstone) {
        v = strndup((const char *)r.s[0].value, r.s[0].value_len);
    }
    record_deinit(&r);
    return v;
}

static void expect_value(struct store *s, const char *key, const char *want)
{
    char *v = get_value(s, key);

    if (want == NULL) {
        ck_assert_msg(v == NULL, "%s: '%s', want absent", key, v);
    } else {
        ck_assert_msg(v != NULL && strcmp(v, want) == 0, "%s: '%s', want '%s'", key,
                      v ? v : "(absent)", want);
    }
    free(v);
}

static void file_path(char *out, size_t cap, const char *sub, const char *name)
{
    snprintf(out, cap, "%s/%s/%s", tmp_dir, sub, name);
}

static off_t file_size(const char *sub, const char *name)
{
    char p[600];
    struct stat st;

    file_path(p, sizeof(p), sub, name);
    ck_assert_int_eq(stat(p, &st), 0);
    return st.st_size;
}

/* The whole of a file of sub (malloc'ed, *len bytes). */
static uint8_t *file_read(const char *sub, const char *name, size_t *len)
{
    char p[600];
    FILE *f;
    uint8_t *data;
    size_t size = (size_t)file_size(sub, name);

    file_path(p, sizeof(p), sub, name);
    f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    data = malloc(size ? size : 1);
    ck_assert_ptr_nonnull(data);
    ck_assert_uint_eq(fread(data, 1, size, f), size);
    fclose(f);
    *len = size;
    return data;
}

static void file_write(const char *sub, const char *name, const uint8_t *data, size_t len)
{
    char p[600];
    FILE *f;

    file_path(p, sizeof(p), sub, name);
    f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* The generation in the header of sub's log. */
static uint64_t wal_file_gen(const char *sub)
{
    size_t len;
    uint8_t *p = file_read(sub, "wal", &len);
    uint64_t gen = 0;

    ck_assert_int_eq(wal_header_parse(p, len, &gen), 0);
    free(p);
    return gen;
}

/* --- crashes: a child writes, then exits without closing the store ---------- */

/* What a crashing child does with its store after the writes, before _exit(). */
enum crash_tail {
    CRASH_AT_ONCE,    /* exit right after the last write is acknowledged */
    CRASH_AFTER_SYNC, /* sync batch: exit once the syncer has synced again */
};

static void child_write_keys(const char *sub, enum store_sync sync, enum crash_tail tail)
{
    struct store *s = open_in(sub, sync);
    struct store_stats st;
    char key[32], value[48];
    uint64_t syncs;

    for (int i = 0; i < CRASH_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(value, sizeof(value), "value-%d-%s", i, sub);
        if (store_write(s, key, strlen(key), value, strlen(value), false, NULL, NULL) != 0) {
            _exit(3);
        }
    }
    if (tail == CRASH_AFTER_SYNC) {
        store_get_stats(s, &st);
        syncs = st.syncs;
        /* poll: the syncer runs every batch_ms; 10 s is a deadline, not a wait */
        for (int i = 0; i < 10000 && st.syncs == syncs; i++) {
            usleep(1000);
            store_get_stats(s, &st);
        }
        if (st.syncs == syncs) {
            _exit(4);
        }
    }
    _exit(0); /* no store_close(): no checkpoint, the log holds the writes */
}

/* Run fn(sub) in a child and expect it to exit 0. */
static void in_child(void (*fn)(const char *sub, enum store_sync, enum crash_tail), const char *sub,
                     enum store_sync sync, enum crash_tail tail)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        fn(sub, sync, tail);
        _exit(2);
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
}

/*
 * Crash a child that wrote CRASH_KEYS keys into a fresh directory, until
 * one crashes with its log holding records (an idle checkpoint may empty
 * it first on a slow machine); returns the directory's name in sub.
 */
static void crash_with_log(char *sub, size_t cap, const char *base, enum store_sync sync,
                           enum crash_tail tail)
{
    for (int attempt = 0; attempt < CRASH_ATTEMPTS; attempt++) {
        snprintf(sub, cap, "%s-%d", base, attempt);
        in_child(child_write_keys, sub, sync, tail);
        if (file_size(sub, "wal") > WAL_HEADER_LEN) {
            return;
        }
    }
    ck_abort_msg("every crash came after a checkpoint emptied the log");
}

static void expect_crash_keys(struct store *s, const char *sub, int n)
{
    char key[32], value[48];

    for (int i = 0; i < CRASH_KEYS; i++) {
        snprintf(key, sizeof(key), "key-%d", i);
        snprintf(value, sizeof(value), "value-%d-%s", i, sub);
        expect_value(s, key, i < n ? value : NULL);
    }
}

START_TEST(test_crash_always_replayed)
{
    char sub[64];
    struct store *s;
    struct store_stats st;

    crash_with_log(sub, sizeof(sub), "always", STORE_SYNC_ALWAYS, CRASH_AT_ONCE);
    s = open_in(sub, STORE_SYNC_ALWAYS);
    expect_crash_keys(s, sub, CRASH_KEYS); /* loaded from the log, which stays until a checkpoint */
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, CRASH_KEYS);
    ck_assert_uint_eq(st.overlay_keys, CRASH_KEYS);
    store_close(s); /* checkpoints: into LMDB, the log emptied */
    ck_assert_int_eq(file_size(sub, "wal"), WAL_HEADER_LEN);
    /* and they stay through a clean close and open */
    s = open_in(sub, STORE_SYNC_ALWAYS);
    expect_crash_keys(s, sub, CRASH_KEYS);
    store_close(s);
}
END_TEST

START_TEST(test_crash_batch_replayed)
{
    char sub[64];
    struct store *s;

    crash_with_log(sub, sizeof(sub), "batch", STORE_SYNC_BATCH, CRASH_AFTER_SYNC);
    s = open_in(sub, STORE_SYNC_BATCH);
    expect_crash_keys(s, sub, CRASH_KEYS);
    store_close(s);
    ck_assert_int_eq(file_size(sub, "wal"), WAL_HEADER_LEN);
}
END_TEST

START_TEST(test_torn_last_record)
{
    char sub[64], p[600];
    struct store *s;

    crash_with_log(sub, sizeof(sub), "torn", STORE_SYNC_ALWAYS, CRASH_AT_ONCE);
    /* one write a batch: the last record is the last key's; tear it */
    file_path(p, sizeof(p), sub, "wal");
    ck_assert_int_eq(truncate(p, file_size(sub, "wal") - 3), 0);
    off_t torn = file_size(sub, "wal");
    s = open_in(sub, STORE_SYNC_ALWAYS);
    /* the torn record is cut off: the log goes on after the last whole one */
    ck_assert_int_lt(file_size(sub, "wal"), torn);
    expect_crash_keys(s, sub, CRASH_KEYS - 1);
    store_close(s);
}
END_TEST

START_TEST(test_other_generation_dropped)
{
    char key[16], value[16];
    uint8_t *old;
    size_t old_len;
    uint64_t old_gen;
    struct store *s = open_in("d", STORE_SYNC_ALWAYS);

    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        put(s, key, "old");
    }
    old = file_read("d", "wal", &old_len); /* records of the old values */
    old_gen = wal_file_gen("d");
    if (old_len <= WAL_HEADER_LEN) {
        free(old);
        store_close(s);
        return; /* an idle checkpoint came first: nothing to bring back (slow machine) */
    }
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(value, sizeof(value), "new-%d", i);
        put(s, key, value);
    }
    store_close(s); /* checkpoints: LMDB has the new values and the next generation */
    ck_assert_uint_ne(wal_file_gen("d"), old_gen);
    file_write("d", "wal", old, old_len); /* the old log comes back */
    s = open_in("d", STORE_SYNC_ALWAYS);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(value, sizeof(value), "new-%d", i);
        expect_value(s, key, value);
    }
    ck_assert_int_eq(file_size("d", "wal"), WAL_HEADER_LEN);
    ck_assert_uint_ne(wal_file_gen("d"), old_gen);
    store_close(s);
    free(old);
}
END_TEST

/* What a damaged log is made of: a real record of key "good", and positions. */
struct damage {
    uint8_t rec[256];
    size_t rec_len;
    uint64_t pos_good, pos_bad;
};

/* Write "good" through s and keep its record, as a write leaves it. */
static void damage_prepare(struct store *s, struct damage *d)
{
    struct record r;

    ck_assert_int_eq(store_write(s, "good", 4, "yes", 3, false, NULL, NULL), 0);
    record_init(&r);
    ck_assert_int_eq(store_get(s, "good", 4, &r), 0);
    d->rec_len = record_encoded_size(&r);
    ck_assert_uint_le(d->rec_len, sizeof(d->rec));
    record_encode(&r, d->rec);
    record_deinit(&r);
    d->pos_good = store_position(s, "good", 4);
    d->pos_bad = store_position(s, "bad", 3);
}

/*
 * A log of generation gen in b: a good put of "good", then a checksummed
 * record that is damage (how 0: a put whose record does not decode; 1:
 * an item of no kind after a good put).  Returns the damaged record's
 * offset in the file.
 */
static size_t damaged_log(const struct damage *d, uint64_t gen, int how, struct buf *b)
{
    static const uint8_t junk[] = {0xff, 0xfe, 0xfd};
    uint8_t head[WAL_HEADER_LEN], key[16];
    size_t at, good_end;

    wal_header(head, gen);
    ck_assert_int_eq(buf_append(b, head, sizeof(head)), 0);
    bytes_put_be64(key, d->pos_good);
    memcpy(key + 8, "good", 4);
    ck_assert_int_eq(wal_begin(b, &at), 0);
    ck_assert_int_eq(wal_put(b, key, 12, d->rec, d->rec_len), 0);
    ck_assert_int_eq(wal_end(b, at, gen), 0);
    good_end = b->len;
    bytes_put_be64(key, d->pos_bad);
    memcpy(key + 8, "bad", 3);
    ck_assert_int_eq(wal_begin(b, &at), 0);
    if (how == 0) {
        ck_assert_int_eq(wal_put(b, key, 11, junk, sizeof(junk)), 0);
    } else {
        ck_assert_int_eq(wal_put(b, key, 11, d->rec, d->rec_len), 0);
        ck_assert_int_eq(buf_append(b, "\x07", 1), 0);
    }
    ck_assert_int_eq(wal_end(b, at, gen), 0);
    return good_end;
}

START_TEST(test_damaged_record_refuses_open)
{
    for (int how = 0; how < 2; how++) {
        char sub[16], path[512], err[512], want[64];
        struct store_config c;
        struct damage d;
        struct store *s;
        struct buf b;
        uint8_t *before, *after;
        size_t before_len, after_len, good_end;

        snprintf(sub, sizeof(sub), "d%d", how);
        s = open_in(sub, STORE_SYNC_ALWAYS);
        damage_prepare(s, &d);
        store_close(s);
        /* "good" is in LMDB now; the crafted log would write it again, then the damage */
        buf_init(&b, 0);
        good_end = damaged_log(&d, wal_file_gen(sub), how, &b);
        before = file_read(sub, "data.mdb", &before_len);
        file_write(sub, "wal", buf_data(&b), b.len);
        store_config_in(&c, path, sizeof(path), sub);
        c.sync = STORE_SYNC_ALWAYS;
        s = NULL;
        ck_assert_int_eq(store_open(&s, &c, err, sizeof(err)), RK_ESYNTAX);
        ck_assert_ptr_null(s);
        snprintf(want, sizeof(want), "damaged at byte %zu", good_end);
        ck_assert_msg(strstr(err, want) != NULL, "'%s' does not say '%s'", err, want);
        after = file_read(sub, "data.mdb", &after_len);
        ck_assert_uint_eq(after_len, before_len);
        ck_assert_msg(memcmp(before, after, before_len) == 0, "data.mdb changed");
        ck_assert_int_eq(file_size(sub, "wal"), (off_t)b.len); /* the log is kept for a look */
        free(before);
        free(after);
        buf_free(&b);
    }
}
END_TEST

/* --- scans across LMDB and the log ------------------------------------------ */

#define SCAN_OLD 120 /* keys in LMDB */
#define SCAN_NEW 80  /* keys only in the log */

/* The value key i holds in the scan tests' final state. */
static void scan_want(int i, char *out, size_t cap)
{
    if (i >= SCAN_OLD) {
        snprintf(out, cap, "new-%d", i);
    } else if (i % 3 == 0) {
        snprintf(out, cap, "updated-%d", i);
    } else {
        snprintf(out, cap, "old-%d", i);
    }
}

/*
 * Keys in LMDB, then (the store left open) keys only in the log and newer
 * records of some old ones.  The second open has the test hook hook (with
 * ctx) when not NULL.
 */
static struct store *scan_fill(const char *sub, enum store_sync sync, int (*hook)(void *),
                               void *ctx)
{
    static char path[512];
    char key[16], value[32], err[512];
    struct store_config c;
    struct store *s = open_in(sub, sync);

    for (int i = 0; i < SCAN_OLD; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        snprintf(value, sizeof(value), "old-%d", i);
        put(s, key, value);
    }
    store_close(s);
    store_config_in(&c, path, sizeof(path), sub);
    c.sync = sync;
    c.batch_ms = 100000; /* the syncer (sync batch) stays out of the hook's way */
    c.test_idle_checkpoint_ms = UINT64_MAX; /* the log keeps the new writes, however slow the run */
    c.test_sync = hook;
    c.test_ctx = ctx;
    ck_assert_msg(store_open(&s, &c, err, sizeof(err)) == 0, "open: %s", err);
    for (int i = 0; i < SCAN_OLD + SCAN_NEW; i++) {
        if (i >= SCAN_OLD || i % 3 == 0) {
            snprintf(key, sizeof(key), "k%d", i);
            scan_want(i, value, sizeof(value));
            put(s, key, value);
        }
    }
    return s;
}

struct scan_got {
    uint64_t start;
    int n;
    int seen[SCAN_OLD + SCAN_NEW];
    uint64_t last_rank;
    bool bad_value, out_of_order;
};

static int scan_collect(void *ctx, const struct store_item *it)
{
    struct scan_got *g = ctx;
    char key[16], want[32];
    struct record r;
    int i;
    uint64_t rank = it->pos - g->start - 1; /* distance along the arc, wrapping */

    snprintf(key, sizeof(key), "%.*s", (int)it->key_len, (const char *)it->key);
    i = atoi(key + 1);
    ck_assert(i >= 0 && i < SCAN_OLD + SCAN_NEW);
    g->seen[i]++;
    if (g->n > 0 && rank <= g->last_rank) {
        g->out_of_order = true;
    }
    g->last_rank = rank;
    g->n++;
    record_init(&r);
    scan_want(i, want, sizeof(want));
    if (record_decode(it->record, it->record_len, &r) != 0 || r.n != 1 ||
        r.s[0].value_len != strlen(want) || memcmp(r.s[0].value, want, strlen(want)) != 0) {
        g->bad_value = true;
    }
    record_deinit(&r);
    return 0;
}

static bool on_arc(uint64_t start, uint64_t end, uint64_t p)
{
    if (start < end) {
        return p > start && p <= end;
    }
    return p > start || p <= end; /* start == end: the whole circle */
}

/* Scan (start, end] in chunks of max_items and check every key once, in order, newest record. */
static void scan_check(struct store *s, uint64_t start, uint64_t end, size_t max_items)
{
    struct scan_got *g = calloc(1, sizeof(*g));
    struct store_cursor cur;
    char key[16];
    int calls = 0;

    ck_assert_ptr_nonnull(g);
    g->start = start;
    store_cursor_init(&cur);
    while (!cur.done) {
        ck_assert_int_eq(store_scan(s, start, end, &cur, max_items, 0, scan_collect, g), 0);
        ck_assert_int_lt(++calls, 10 * (SCAN_OLD + SCAN_NEW));
    }
    ck_assert_msg(!g->out_of_order, "(%" PRIu64 ", %" PRIu64 "] by %zu: out of arc order", start,
                  end, max_items);
    ck_assert_msg(!g->bad_value, "(%" PRIu64 ", %" PRIu64 "] by %zu: not the newest record", start,
                  end, max_items);
    for (int i = 0; i < SCAN_OLD + SCAN_NEW; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        ck_assert_msg(g->seen[i] == on_arc(start, end, store_position(s, key, strlen(key))),
                      "(%" PRIu64 ", %" PRIu64 "] by %zu: k%d seen %d times", start, end, max_items,
                      i, g->seen[i]);
    }
    free(g);
}

static void scan_check_all(struct store *s)
{
    static const uint64_t arcs[][2] = {
        {0, 0},                                  /* the whole circle */
        {UINT64_MAX, UINT64_MAX},                /* the whole circle, from the top */
        {UINT64_MAX / 5, UINT64_MAX / 3 * 2},    /* a plain arc */
        {UINT64_MAX / 3 * 2, UINT64_MAX / 5},    /* a wrapping arc */
        {UINT64_MAX / 10 * 9, UINT64_MAX / 10},  /* a wrapping arc, short */
        {UINT64_MAX / 2, UINT64_MAX / 2 - 1000}, /* almost all of it, wrapping */
    };
    static const size_t chunks[] = {1, 2, 3, 7, 50, 0};
    struct store_stats st;

    for (size_t a = 0; a < sizeof(arcs) / sizeof(arcs[0]); a++) {
        for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
            scan_check(s, arcs[a][0], arcs[a][1], chunks[c]);
        }
    }
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, SCAN_OLD + SCAN_NEW);
}

/*
 * A conditional delete of a key nobody wrote: an operation that runs
 * through LMDB and reads keys, so it absorbs the log first (a batch of meta
 * puts alone does not).
 */
static void absorbing_op(struct store *s)
{
    struct store_op op;

    store_op_init(&op, STORE_OP_DELETE_IF);
    op.key = (const uint8_t *)"never-written";
    op.key_len = strlen("never-written");
    op.value = (const uint8_t *)"v";
    op.value_len = 1;
    ck_assert_int_eq(store_submit(s, &op), 0);
    ck_assert_int_eq(store_wait(s, &op), 0);
    ck_assert(!op.changed);
}

START_TEST(test_scan_lmdb_and_log)
{
    struct store_stats st0, st1;
    struct store *s = NULL;
    int attempt;

    /* the log must still hold the new writes while the scans run: retry a round an idle checkpoint
     * cut */
    for (attempt = 0; attempt < CRASH_ATTEMPTS; attempt++) {
        char sub[16];
        snprintf(sub, sizeof(sub), "s%d", attempt);
        s = scan_fill(sub, STORE_SYNC_NONE, NULL, NULL);
        store_get_stats(s, &st0);
        scan_check_all(s);
        store_get_stats(s, &st1);
        if (st0.overlay_keys == SCAN_OLD / 3 + SCAN_NEW && st1.checkpoints == st0.checkpoints) {
            break;
        }
        store_close(s);
        s = NULL;
    }
    ck_assert_msg(s != NULL, "an idle checkpoint came before every round's scans");
    /* after a checkpoint (an operation through LMDB absorbs the log) */
    absorbing_op(s);
    store_get_stats(s, &st1);
    ck_assert_uint_eq(st1.overlay_keys, 0);
    ck_assert_uint_gt(st1.checkpoints, st0.checkpoints);
    scan_check_all(s);
    store_close(s);
}
END_TEST

/*
 * A scan and a key count taken while a checkpoint is under way: between
 * its commit to LMDB and the log's emptying (the test hook runs at the
 * checkpoint's fsync, in that gap) every key is still counted once.
 */
struct gap_ctx {
    struct store *_Atomic s;
    _Atomic bool armed;
    _Atomic int checked;
};

static int gap_sync(void *ctx)
{
    struct gap_ctx *g = ctx;
    struct store_stats st;

    if (g->s == NULL || !atomic_exchange(&g->armed, false)) {
        return 0; /* not armed, or checked already: once is enough */
    }
    store_get_stats(g->s, &st);
    ck_assert_uint_eq(st.keys, SCAN_OLD + SCAN_NEW);
    scan_check(g->s, 0, 0, 7);
    scan_check(g->s, UINT64_MAX / 3 * 2, UINT64_MAX / 5, 0);
    g->checked++;
    return 0;
}

START_TEST(test_scan_during_checkpoint)
{
    struct gap_ctx g = {0};

    /* an idle checkpoint before the hook is armed leaves nothing to check: another round */
    for (int attempt = 0; attempt < CRASH_ATTEMPTS && g.checked == 0; attempt++) {
        char sub[16];
        struct store *s;

        snprintf(sub, sizeof(sub), "g%d", attempt);
        s = scan_fill(sub, STORE_SYNC_BATCH, gap_sync, &g);
        g.s = s;
        g.armed = true;
        absorbing_op(s); /* through LMDB: a checkpoint first */
        g.armed = false;
        g.s = NULL;
        store_close(s);
    }
    ck_assert_msg(g.checked == 1, "an idle checkpoint came before every round's hook");
}
END_TEST

/* --- operations through LMDB keep what the log holds ------------------------- */

static void run_delete_range(struct store *s, uint64_t start, uint64_t end)
{
    struct store_cursor cur;
    struct store_op op;

    store_cursor_init(&cur);
    while (!cur.done) {
        store_op_init(&op, STORE_OP_DELETE_RANGE);
        op.start = start;
        op.end = end;
        op.cursor = &cur;
        op.limit = 5;
        ck_assert_int_eq(store_submit(s, &op), 0);
        ck_assert_int_eq(store_wait(s, &op), 0);
    }
}

static int table_put(struct store *s, const char *k, const char *v)
{
    struct store_op op;

    store_op_init(&op, STORE_OP_TABLE_PUT);
    op.table = STORE_TABLE_HANDOFF;
    op.key = (const uint8_t *)k;
    op.key_len = strlen(k);
    op.value = (const uint8_t *)v;
    op.value_len = strlen(v);
    ck_assert_int_eq(store_submit(s, &op), 0);
    return store_wait(s, &op);
}

static int hint_put(struct store *s, const char *target, const char *key, const struct sibling *v)
{
    struct store_op op;

    store_op_init(&op, STORE_OP_HINT_PUT);
    op.target = target;
    op.key = (const uint8_t *)key;
    op.key_len = strlen(key);
    op.version = v;
    ck_assert_int_eq(store_submit(s, &op), 0);
    return store_wait(s, &op);
}

#define OPS_KEYS 60
#define OPS_START (UINT64_MAX / 4 * 3)
#define OPS_END (UINT64_MAX / 4)

/*
 * Writes (logged) interleaved with a handoff-table put (logged too) and
 * the operations that run through LMDB: a hint, a range delete of a
 * wrapping arc, then more writes.
 */
static void ops_sequence(struct store *s)
{
    struct sibling v;
    char key[16], value[32];

    for (int i = 0; i < OPS_KEYS / 3; i++) {
        snprintf(key, sizeof(key), "o%d", i);
        snprintf(value, sizeof(value), "a-%d", i);
        put(s, key, value);
    }
    ck_assert_int_eq(table_put(s, "handoff-1", "one"), 0);
    sibling_init(&v);
    for (int i = OPS_KEYS / 3; i < 2 * OPS_KEYS / 3; i++) {
        snprintf(key, sizeof(key), "o%d", i);
        snprintf(value, sizeof(value), "b-%d", i);
        ck_assert_int_eq(store_write(s, key, strlen(key), value, strlen(value), false, NULL, &v),
                         0);
    }
    ck_assert_int_eq(hint_put(s, "node-x", "o1", &v), 0);
    sibling_deinit(&v);
    for (int i = 0; i < 2 * OPS_KEYS / 3; i += 2) { /* newer records of some, in the log */
        snprintf(key, sizeof(key), "o%d", i);
        snprintf(value, sizeof(value), "c-%d", i);
        put(s, key, value);
    }
    run_delete_range(s, OPS_START, OPS_END);
    for (int i = 2 * OPS_KEYS / 3; i < OPS_KEYS; i++) {
        snprintf(key, sizeof(key), "o%d", i);
        snprintf(value, sizeof(value), "d-%d", i);
        put(s, key, value);
    }
}

/* The value key o<i> holds after ops_sequence(), or NULL. */
static const char *ops_want(struct store *s, int i, char *buf, size_t cap)
{
    char key[16];

    snprintf(key, sizeof(key), "o%d", i);
    if (i >= 2 * OPS_KEYS / 3) {
        snprintf(buf, cap, "d-%d", i);
    } else if (on_arc(OPS_START, OPS_END, store_position(s, key, strlen(key)))) {
        return NULL;
    } else if (i % 2 == 0) {
        snprintf(buf, cap, "c-%d", i);
    } else {
        snprintf(buf, cap, "%s-%d", i < OPS_KEYS / 3 ? "a" : "b", i);
    }
    return buf;
}

static int count_hint(void *ctx, const struct store_hint *h)
{
    (void)h;
    (*(int *)ctx)++;
    return 0;
}

/* Check the state ops_sequence() leaves; returns the keys that hold a value. */
static int ops_check(struct store *s)
{
    char key[16], buf[32], got[16];
    struct store_cursor cur;
    size_t len;
    int hints = 0, deleted = 0;

    for (int i = 0; i < OPS_KEYS; i++) {
        snprintf(key, sizeof(key), "o%d", i);
        expect_value(s, key, ops_want(s, i, buf, sizeof(buf)));
        deleted += ops_want(s, i, buf, sizeof(buf)) == NULL;
    }
    ck_assert_int_gt(deleted, 0); /* the arc held some keys */
    ck_assert_int_lt(deleted, 2 * OPS_KEYS / 3);
    ck_assert_int_eq(
        store_table_get(s, STORE_TABLE_HANDOFF, "handoff-1", 9, got, sizeof(got), &len), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert_mem_eq(got, "one", 3);
    store_cursor_init(&cur);
    while (!cur.done) {
        ck_assert_int_eq(store_hint_scan(s, "node-x", &cur, 10, count_hint, &hints), 0);
    }
    ck_assert_int_eq(hints, 1);
    return OPS_KEYS - deleted;
}

START_TEST(test_lmdb_ops_keep_log)
{
    struct store *s = open_in("d", STORE_SYNC_NONE);
    struct store_stats st;

    int live;

    ops_sequence(s);
    live = ops_check(s);
    store_get_stats(s, &st);
    ck_assert_uint_eq(st.keys, (uint64_t)live);
    store_close(s);
    s = open_in("d", STORE_SYNC_NONE);
    ops_check(s);
    store_close(s);
}
END_TEST

static void child_ops(const char *sub, enum store_sync sync, enum crash_tail tail)
{
    struct store *s = open_in(sub, sync);

    (void)tail;
    ops_sequence(s);
    _exit(0);
}

START_TEST(test_lmdb_ops_crash)
{
    struct store *s;

    in_child(child_ops, "c", STORE_SYNC_ALWAYS, CRASH_AT_ONCE);
    s = open_in("c", STORE_SYNC_ALWAYS);
    ops_check(s);
    store_close(s);
}
END_TEST

static Suite *store_wal_suite(void)
{
    Suite *s = suite_create("store_wal");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"crash_always_replayed", test_crash_always_replayed},
        {"crash_batch_replayed", test_crash_batch_replayed},
        {"torn_last_record", test_torn_last_record},
        {"other_generation_dropped", test_other_generation_dropped},
        {"damaged_record_refuses_open", test_damaged_record_refuses_open},
        {"scan_lmdb_and_log", test_scan_lmdb_and_log},
        {"scan_during_checkpoint", test_scan_during_checkpoint},
        {"lmdb_ops_keep_log", test_lmdb_ops_keep_log},
        {"lmdb_ops_crash", test_lmdb_ops_crash},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(store_wal_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
