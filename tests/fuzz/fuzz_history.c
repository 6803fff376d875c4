/*
 * fuzz_history.c - fuzz target for the history reader (src/cli/history.h),
 * which `ringkv verify` runs on a file from anywhere, and for the checker
 * behind it (src/cli/hcheck.h) on whatever the reader accepts.
 *
 * Input: the history's bytes.  A refusal must come with an error sentence
 * naming a line; an accepted history must format back into lines that
 * read back to the same entries (op, outcome, key, value, times), and the
 * checker must run on it, with each key's final state taken from its
 * first write, without touching memory it should not (the sanitizers and
 * libFuzzer report that).
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz.h"
#include "hcheck.h"
#include "history.h"

static void fuzz_same(const struct history_entry *a, const struct history_entry *b)
{
    if (a->op != b->op || a->outcome != b->outcome || a->start != b->start || a->end != b->end ||
        a->key.len != b->key.len || memcmp(a->key.p, b->key.p, a->key.len) != 0 ||
        a->has_value != b->has_value || a->value.len != b->value.len ||
        (a->has_value && memcmp(a->value.p, b->value.p, a->value.len) != 0) ||
        a->n_values != b->n_values || a->n_context != b->n_context ||
        a->has_context != b->has_context || strcmp(a->node, b->node) != 0) {
        abort();
    }
}

/* Format every entry and read the lines back. */
static void fuzz_round_trip(const struct history *h)
{
    struct history back = {0};
    struct buf b;
    char err[256];

    if (h->n == 0) { /* nothing to format (and an empty buf has no bytes to point at) */
        return;
    }
    buf_init(&b, 0);
    for (size_t i = 0; i < h->n; i++) {
        if (history_entry_format(&b, &h->e[i]) != 0) {
            abort();
        }
    }
    if (history_parse(&back, b.p + b.start, b.len, err, sizeof(err)) != 0 || back.n != h->n) {
        abort();
    }
    for (size_t i = 0; i < h->n; i++) {
        fuzz_same(&h->e[i], &back.e[i]);
    }
    history_free(&back);
    buf_free(&b);
}

static void fuzz_check(const struct history *h)
{
    struct hcheck hc;
    struct hcheck_opts o = {.monotonic = true, .loss_bound = (h->n & 1) != 0, .loss_after_us = 50};
    char err[256];

    if (hcheck_init(&hc, h, err, sizeof(err)) == 0) {
        for (size_t k = 0; k < hc.n_keys; k++) {
            const struct history_entry *e = &h->e[hc.keys[k].ops[0]];
            if (hcheck_set_final(&hc, k, &e->value, e->has_value ? 1 : 0) != 0) {
                abort();
            }
        }
        if (hcheck_run(&hc, &o) != 0) {
            abort();
        }
    }
    hcheck_free(&hc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct history h = {0};
    char err[256] = "";
    int rc = history_parse(&h, data, size, err, sizeof(err));

    if (rc != 0 && strncmp(err, "line ", 5) != 0) {
        abort();
    }
    if (rc == 0) {
        fuzz_round_trip(&h);
        fuzz_check(&h);
    }
    history_free(&h);
    return 0;
}
