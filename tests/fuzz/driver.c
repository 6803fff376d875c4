/*
 * driver.c - a small stand-in for libFuzzer, linked into every fuzz target
 * when the build is not configured with --enable-fuzzing.
 *
 *   fuzz_X [-n RUNS] [-t SECONDS] [-s SEED] CORPUS...
 *
 * It runs every corpus file (a file, or every regular file of a directory)
 * through the target, then RUNS mutated inputs (bit flips, byte edits,
 * truncation, splicing, runs of interesting bytes), stopping early after
 * SECONDS.  A crash or a sanitizer report fails the run; the seed and run
 * number it prints replay it exactly.  It finds fewer bugs than libFuzzer's
 * coverage guidance, but it needs no clang and keeps every decoder exercised
 * by `make check`.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fuzz.h"

#define DRIVER_MAX_INPUT (64 * 1024)
#define DRIVER_MAX_CORPUS 4096

struct input {
    uint8_t *data;
    size_t len;
};

static struct input corpus[DRIVER_MAX_CORPUS];
static size_t n_corpus;
static uint64_t rng;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void load_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    size_t len;

    if (f == NULL || n_corpus == DRIVER_MAX_CORPUS) {
        if (f != NULL) {
            fclose(f);
        }
        return;
    }
    buf = malloc(DRIVER_MAX_INPUT);
    len = buf ? fread(buf, 1, DRIVER_MAX_INPUT, f) : 0;
    fclose(f);
    if (buf == NULL) {
        return;
    }
    corpus[n_corpus++] = (struct input){buf, len};
}

static void load(const char *path)
{
    struct stat st;
    DIR *d;
    struct dirent *e;
    char p[4096];

    if (stat(path, &st) != 0) {
        fprintf(stderr, "driver: cannot stat %s\n", path);
        exit(2);
    }
    if (!S_ISDIR(st.st_mode)) {
        load_file(path);
        return;
    }
    d = opendir(path);
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
            load_file(p);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* Apply one random edit to buf[0..*len), capacity DRIVER_MAX_INPUT. */
static void mutate_once(uint8_t *buf, size_t *len)
{
    static const uint8_t interesting[] = {
        0x00, 0x01, 0x7f, 0x80, 0xff, 0xc0, 0xc1, 0xcc, 0xcd, 0xce, 0xcf, 0xd9, 0xda, 0xdb,
        0xdc, 0xdd, 0xde, 0xdf, '\n', '\r', ' ',  '#',  '-',  '0',  '9',  '*',  '$',  ','};
    size_t n = *len;
    size_t at = n ? rnd() % n : 0;

    switch (rnd() % 7) {
    case 0: /* flip a bit */
        if (n) {
            buf[at] ^= (uint8_t)(1u << (rnd() % 8));
        }
        break;
    case 1: /* set an interesting byte */
        if (n) {
            buf[at] = interesting[rnd() % sizeof(interesting)];
        }
        break;
    case 2: /* insert a byte */
        if (n < DRIVER_MAX_INPUT) {
            memmove(buf + at + 1, buf + at, n - at);
            buf[at] = interesting[rnd() % sizeof(interesting)];
            *len = n + 1;
        }
        break;
    case 3: /* delete a run */
        if (n) {
            size_t k = 1 + rnd() % (n - at < 16 ? n - at : 16);
            memmove(buf + at, buf + at + k, n - at - k);
            *len = n - k;
        }
        break;
    case 4: /* truncate */
        *len = at;
        break;
    case 5: { /* splice in part of another corpus entry */
        const struct input *o = &corpus[rnd() % n_corpus];
        size_t from = o->len ? rnd() % o->len : 0;
        size_t k = o->len - from;
        if (at + k > DRIVER_MAX_INPUT) {
            k = DRIVER_MAX_INPUT - at;
        }
        memcpy(buf + at, o->data + from, k);
        *len = at + k > n ? at + k : n;
        break;
    }
    default: /* duplicate a run */
        if (n && n < DRIVER_MAX_INPUT / 2) {
            size_t k = 1 + rnd() % (n - at);
            memmove(buf + at + k, buf + at, n - at);
            *len = n + k;
        }
        break;
    }
}

int main(int argc, char **argv)
{
    unsigned long runs = 10000, seconds = 10;
    uint64_t seed = (uint64_t)time(NULL);
    uint8_t *buf = malloc(DRIVER_MAX_INPUT);
    int i = 1;
    time_t start = time(NULL);
    unsigned long r;

    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (strcmp(argv[i], "-n") == 0) {
            runs = strtoul(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "-t") == 0) {
            seconds = strtoul(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "-s") == 0) {
            seed = strtoull(argv[i + 1], NULL, 10);
        }
    }
    for (; i < argc; i++) {
        load(argv[i]);
    }
    if (buf == NULL || n_corpus == 0) {
        fprintf(stderr, "driver: no corpus given\n");
        return 2;
    }
    rng = seed ? seed : 1;
    fprintf(stderr, "driver: %zu corpus inputs, seed %" PRIu64 ", up to %lu runs\n", n_corpus, seed,
            runs);
    for (size_t c = 0; c < n_corpus; c++) {
        LLVMFuzzerTestOneInput(corpus[c].data, corpus[c].len);
    }
    for (r = 0; r < runs; r++) {
        const struct input *base = &corpus[rnd() % n_corpus];
        size_t len = base->len;
        memcpy(buf, base->data, len);
        for (unsigned k = 1 + rnd() % 8; k > 0; k--) {
            mutate_once(buf, &len);
        }
        LLVMFuzzerTestOneInput(buf, len);
        if ((r & 255) == 0 && (unsigned long)(time(NULL) - start) >= seconds) {
            break;
        }
    }
    fprintf(stderr, "driver: %lu mutated runs done, no crash (seed %" PRIu64 ")\n", r, seed);
    free(buf);
    return 0;
}
