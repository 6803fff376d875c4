/*
 * powercut.c - an LD_PRELOAD library that keeps what a power loss would
 * leave of some files: each one's content as of its last fsync() or
 * fdatasync().
 *
 *   RINGKV_POWERCUT_FILE=/path/data.mdb,/path/wal LD_PRELOAD=powercut.so ringkvd ...
 *
 * RINGKV_POWERCUT_FILE is a comma-separated list of paths.  At every
 * fsync()/fdatasync() of a descriptor open on one of them, with every
 * write of the process held off (pwrite(), write(), writev() and
 * ftruncate() take a shared lock, the sync an exclusive one), it copies
 * that file to
 * FILE.durable (through FILE.durable.tmp and a rename, so a kill during
 * the copy leaves the previous image) and appends to FILE.syncs one line:
 * the CLOCK_MONOTONIC time in ns at which the writes were held off (the
 * image is the file at that instant) and the time the copy was done.
 *
 * FILE.durable is the worst case of a power loss: the kernel wrote back
 * nothing the program did not fsync.  That holds for a file's length too:
 * a truncation (the store's log is emptied with ftruncate()) reaches the
 * image only with the file's next sync, so an image keeps the length and
 * bytes of its last sync.  Each file's image is taken at its own syncs, so
 * the images together are what a power loss leaves when the program's
 * order of syncs across files is all the disk kept.  A real machine may have written
 * back more, in any order; this image is the one a program cannot count
 * on being better than.  A writer that bypasses these calls (mmap'd
 * writes, pwritev(), O_DSYNC descriptors) is not seen: ringkv's store
 * opens LMDB without MDB_WRITEMAP and, in every sync mode, without an
 * O_DSYNC descriptor (MDB_NOSYNC under `sync none`, MDB_NOMETASYNC
 * otherwise: the meta page is written with pwrite() and synced with
 * fdatasync()); LMDB writes with pwrite() and lseek() + writev(), and the
 * write-ahead log is written with pwrite() and synced with fdatasync().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* A watched path's room: its image and sync log names add a suffix of at most 12 bytes. */
#define POWERCUT_PATH_MAX (PATH_MAX - 16)

static pthread_rwlock_t powercut_lock = PTHREAD_RWLOCK_INITIALIZER;

static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void *powercut_sym(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);

    if (p == NULL) {
        abort();
    }
    return p;
}

static unsigned long long powercut_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* The watched file fd is open on, copied into path (POWERCUT_PATH_MAX bytes); NULL when none. */
static const char *powercut_watched(int fd, char *path)
{
    const char *list = getenv("RINGKV_POWERCUT_FILE");
    struct stat a, b;

    if (list == NULL || fstat(fd, &a) != 0) {
        return NULL;
    }
    while (*list != '\0') {
        size_t n = strcspn(list, ",");
        if (n > 0 && n < POWERCUT_PATH_MAX) {
            memcpy(path, list, n);
            path[n] = '\0';
            if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
                return path;
            }
        }
        list += n + (list[n] == ',');
    }
    return NULL;
}

/* Copy path to path.durable (via .tmp and a rename); 0 or -1. */
static int powercut_copy(const char *path)
{
    char tmp[PATH_MAX], dst[PATH_MAX];
    struct stat st;
    int in, out, rc = -1;
    off_t off = 0;

    snprintf(tmp, sizeof(tmp), "%s.durable.tmp", path);
    snprintf(dst, sizeof(dst), "%s.durable", path);
    in = open(path, O_RDONLY | O_CLOEXEC);
    out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (in >= 0 && out >= 0 && fstat(in, &st) == 0) {
        while (off < st.st_size) {
            ssize_t n = copy_file_range(in, &off, out, NULL, (size_t)(st.st_size - off), 0);
            if (n <= 0) {
                break;
            }
        }
        rc = off == st.st_size && rename(tmp, dst) == 0 ? 0 : -1;
    }
    if (in >= 0) {
        close(in);
    }
    if (out >= 0) {
        close(out);
    }
    return rc;
}

static void powercut_record(const char *path, unsigned long long at, unsigned long long done)
{
    char name[PATH_MAX], line[64];
    int fd, n;

    snprintf(name, sizeof(name), "%s.syncs", path);
    fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        abort();
    }
    n = snprintf(line, sizeof(line), "%llu %llu\n", at, done);
    if (real_write(fd, line, (size_t)n) != n) {
        abort();
    }
    close(fd);
}

/* The sync itself, then the image, with every write held off. */
static int powercut_sync(int fd, int (*sync_fn)(int))
{
    char buf[POWERCUT_PATH_MAX];
    const char *path = powercut_watched(fd, buf);
    unsigned long long at;
    int rc, saved;

    if (path == NULL) {
        return sync_fn(fd);
    }
    pthread_rwlock_wrlock(&powercut_lock);
    at = powercut_now_ns();
    rc = sync_fn(fd);
    saved = errno;
    if (rc == 0) {
        if (powercut_copy(path) != 0) {
            abort();
        }
        powercut_record(path, at, powercut_now_ns());
    }
    pthread_rwlock_unlock(&powercut_lock);
    errno = saved;
    return rc;
}

__attribute__((constructor)) static void powercut_init(void)
{
    real_pwrite = powercut_sym("pwrite");
    real_write = powercut_sym("write");
    real_writev = powercut_sym("writev");
    real_ftruncate = powercut_sym("ftruncate");
    real_fsync = powercut_sym("fsync");
    real_fdatasync = powercut_sym("fdatasync");
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    ssize_t rc;
    int saved;

    pthread_rwlock_rdlock(&powercut_lock);
    rc = real_pwrite(fd, buf, n, off);
    saved = errno;
    pthread_rwlock_unlock(&powercut_lock);
    errno = saved;
    return rc;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    ssize_t rc;
    int saved;

    pthread_rwlock_rdlock(&powercut_lock);
    rc = real_write(fd, buf, n);
    saved = errno;
    pthread_rwlock_unlock(&powercut_lock);
    errno = saved;
    return rc;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    ssize_t rc;
    int saved;

    pthread_rwlock_rdlock(&powercut_lock);
    rc = real_writev(fd, iov, n);
    saved = errno;
    pthread_rwlock_unlock(&powercut_lock);
    errno = saved;
    return rc;
}

/* Held off during an image like a write: the image is the file before or after it, whole. */
int ftruncate(int fd, off_t len)
{
    int rc, saved;

    pthread_rwlock_rdlock(&powercut_lock);
    rc = real_ftruncate(fd, len);
    saved = errno;
    pthread_rwlock_unlock(&powercut_lock);
    errno = saved;
    return rc;
}

int fsync(int fd)
{
    return powercut_sync(fd, real_fsync);
}

int fdatasync(int fd)
{
    return powercut_sync(fd, real_fdatasync);
}
