/*
 * bench_log.c - an append-only file: the physical peer of a ringkv node's
 * write-ahead log in tests/bench/bench_node.sh.
 *
 *   bench_log RECORD_BYTES PER_WRITE MAX_RECORDS MAX_SECONDS MODE DIR
 *   MODE: sync | nosync | batchMS     (batch10: an fdatasync every 10 ms)
 *
 * Appends RECORD_BYTES-byte records to a fresh file in DIR, PER_WRITE of
 * them with each write() (the node appends one log record per batch of
 * writes), until MAX_RECORDS records or MAX_SECONDS, whichever comes
 * first.  `sync` fdatasyncs after every write (what `sync always` does per
 * batch), `batchMS` has a second thread fdatasync every MS milliseconds
 * when something was appended since its last one (`sync batch`), `nosync`
 * never syncs.  Nothing else: no hashing, no index, no reads, so it is the
 * most the disk and kernel allow a log of that shape.
 *
 * DIR must exist and be on the disk being measured; the file is removed
 * before exit.  It prints one line:
 *   bench_log records_per_s=R records=N writes=W seconds=S per_write=B sync=MODE syncs=F
 * and exits 0 when it ran, 1 when a write or sync failed, 2 on bad
 * arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct bench_log {
    uint64_t record_len, per_write, max_records, max_seconds;
    unsigned batch_ms; /* batchMS; 0 without a syncer */
    bool sync;
    const char *mode;
    int fd;
    atomic_bool dirty, stop;
    uint64_t syncs;
};

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A decimal argument in [lo, hi]; false on anything else. */
static bool arg_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end;
    unsigned long long v;

    if (*s < '0' || *s > '9') {
        return false;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_args(struct bench_log *b, int argc, char **argv)
{
    uint64_t ms;

    if (argc != 7 || !arg_u64(argv[1], 1, 1 << 20, &b->record_len) ||
        !arg_u64(argv[2], 1, 100000, &b->per_write) ||
        !arg_u64(argv[3], 1, UINT64_MAX, &b->max_records) ||
        !arg_u64(argv[4], 1, 3600, &b->max_seconds)) {
        return false;
    }
    b->mode = argv[5];
    if (strcmp(b->mode, "sync") == 0) {
        b->sync = true;
    } else if (strcmp(b->mode, "nosync") != 0) {
        if (strncmp(b->mode, "batch", 5) != 0 || !arg_u64(b->mode + 5, 1, 10000, &ms)) {
            return false;
        }
        b->batch_ms = (unsigned)ms;
    }
    return true;
}

/* The batch syncer: an fdatasync every batch_ms when something was appended. */
static void *syncer_main(void *arg)
{
    struct bench_log *b = arg;
    struct timespec ts = {0, (long)b->batch_ms * 1000000L};

    ts.tv_sec = ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    while (!atomic_load(&b->stop)) {
        nanosleep(&ts, NULL);
        if (atomic_exchange(&b->dirty, false)) {
            if (fdatasync(b->fd) != 0) {
                perror("bench_log: fdatasync");
                exit(1);
            }
            b->syncs++;
        }
    }
    return NULL;
}

/* Appends until a bound; 0, or -1 when a write or sync failed. */
static int measure(struct bench_log *b, unsigned char *buf)
{
    uint64_t records = 0, writes = 0;
    size_t len = (size_t)(b->record_len * b->per_write);
    double start = now_s(), elapsed = 0;
    pthread_t syncer;

    if (b->batch_ms > 0 && pthread_create(&syncer, NULL, syncer_main, b) != 0) {
        fprintf(stderr, "bench_log: cannot start the syncer thread\n");
        return -1;
    }
    while (records < b->max_records && elapsed < (double)b->max_seconds) {
        if (write(b->fd, buf, len) != (ssize_t)len || (b->sync && fdatasync(b->fd) != 0)) {
            perror("bench_log: write");
            return -1;
        }
        b->syncs += b->sync;
        atomic_store(&b->dirty, true);
        records += b->per_write;
        writes++;
        elapsed = now_s() - start;
    }
    if (b->batch_ms > 0) {
        atomic_store(&b->stop, true);
        pthread_join(syncer, NULL);
    }
    printf("bench_log records_per_s=%.0f records=%" PRIu64 " writes=%" PRIu64
           " seconds=%.3f per_write=%" PRIu64 " sync=%s syncs=%" PRIu64 "\n",
           elapsed > 0 ? (double)records / elapsed : 0.0, records, writes, elapsed, b->per_write,
           b->mode, b->syncs);
    return 0;
}

int main(int argc, char **argv)
{
    struct bench_log b = {0};
    char path[PATH_MAX];
    unsigned char *buf;
    int status;

    if (!parse_args(&b, argc, argv)) {
        fprintf(stderr, "usage: bench_log RECORD_BYTES PER_WRITE MAX_RECORDS MAX_SECONDS "
                        "sync|nosync|batchMS DIR\n");
        return 2;
    }
    snprintf(path, sizeof(path), "%s/bench_log.%ld", argv[6], (long)getpid());
    buf = malloc((size_t)(b.record_len * b.per_write));
    b.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    if (buf == NULL || b.fd < 0) {
        fprintf(stderr, "bench_log: cannot set up %s: %s\n", path, strerror(errno));
        free(buf);
        return 1;
    }
    memset(buf, 'v', (size_t)(b.record_len * b.per_write));
    status = measure(&b, buf) == 0 ? 0 : 1;
    close(b.fd);
    unlink(path);
    free(buf);
    return status;
}
