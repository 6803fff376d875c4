/*
 * fuzz_record.c - fuzz target for the record codec (storage/record.c),
 * which reads records from the disk and from peers, and for the merge
 * rules run on the clocks such records carry.
 *
 * Beyond "no crash, no leak" it checks three properties and aborts when
 * one fails: only the canonical form decodes (a decoded record re-encodes
 * to the input bytes exactly); merging the decoded siblings one by one in
 * siblings mode leaves them pairwise concurrent; and LWW gives the same
 * record whichever order the siblings arrive in (forwards or backwards).
 * A failed decode must leave the record empty, and record_check gives the
 * decoder's verdict (the same error) on every input, as record_view does
 * (with the decoder's record when it decodes).
 */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fuzz.h"
#include "record.h"

/* Pairwise checks are quadratic: beyond this many siblings only the merge runs. */
#define FUZZ_PAIRWISE_MAX 64
/* The node that coordinates the local write on top of the merged record. */
#define FUZZ_NODE "fuzz-node"

/* Whether a and b encode to the same bytes. */
static bool fuzz_same(const struct record *a, const struct record *b)
{
    size_t la = record_encoded_size(a), lb = record_encoded_size(b);
    uint8_t *ea, *eb;
    bool same;

    if (la != lb) {
        return false;
    }
    ea = malloc(la);
    eb = malloc(lb);
    if (ea == NULL || eb == NULL) {
        abort();
    }
    record_encode(a, ea);
    record_encode(b, eb);
    same = memcmp(ea, eb, la) == 0;
    free(ea);
    free(eb);
    return same;
}

static void fuzz_check_canonical(const struct record *r, const uint8_t *data, size_t size)
{
    uint8_t *buf;

    if (record_encoded_size(r) != size) {
        abort();
    }
    buf = malloc(size);
    if (buf == NULL || record_encode(r, buf) != size || memcmp(buf, data, size) != 0) {
        abort();
    }
    free(buf);
}

/* Apply r's siblings to out, forwards or backwards; the first error, or 0. */
static int fuzz_merge(const struct record *r, enum record_conflicts mode, bool backwards,
                      struct record *out)
{
    for (size_t k = 0; k < r->n; k++) {
        size_t i = backwards ? r->n - 1 - k : k;
        int err = record_apply(out, &r->s[i], mode, RECORD_SIBLINGS_MAX, NULL);
        if (err != 0) {
            return err;
        }
    }
    return 0;
}

static bool fuzz_pairwise_concurrent(const struct record *r)
{
    for (size_t i = 0; i < r->n; i++) {
        for (size_t j = i + 1; j < r->n; j++) {
            if (vclock_compare(&r->s[i].clock, &r->s[j].clock) != VCLOCK_CONCURRENT) {
                return false;
            }
        }
    }
    return true;
}

/*
 * A local write on top of m, with the first sibling's clock as a (likely
 * stale) context, then pruning: both must fail cleanly or keep m valid.
 */
static void fuzz_write(struct record *m)
{
    static const uint8_t value[] = {'v'};
    struct sibling out;
    struct vclock ctx;

    sibling_init(&out);
    vclock_init(&ctx);
    if (vclock_copy(&ctx, &m->s[0].clock) == 0 &&
        record_write_local(m, FUZZ_NODE, FUZZ_NODE, record_max_hlc(m) + 1, &ctx, false, value,
                           sizeof(value), RECORD_SIBLINGS, RECORD_SIBLINGS_MAX, &out) == 0 &&
        m->n <= FUZZ_PAIRWISE_MAX && !fuzz_pairwise_concurrent(m)) {
        abort();
    }
    (void)record_prune(m, 1, UINT64_MAX >> 16, 0);
    vclock_deinit(&ctx);
    sibling_deinit(&out);
}

static void fuzz_check_siblings(const struct record *r)
{
    struct record m;

    record_init(&m);
    if (fuzz_merge(r, RECORD_SIBLINGS, false, &m) == 0) {
        if (m.n <= FUZZ_PAIRWISE_MAX && !fuzz_pairwise_concurrent(&m)) {
            abort();
        }
        fuzz_write(&m);
    }
    record_deinit(&m);
}

static void fuzz_check_lww(const struct record *r)
{
    struct record fwd, back;
    struct vclock ctx;

    record_init(&fwd);
    record_init(&back);
    vclock_init(&ctx);
    if (fuzz_merge(r, RECORD_LWW, false, &fwd) == 0 &&
        fuzz_merge(r, RECORD_LWW, true, &back) == 0) {
        if (fwd.n != 1 || !fuzz_same(&fwd, &back)) {
            abort();
        }
    }
    /* The merged LWW clock is the record's context: both are the merge of every clock. */
    if (fwd.n == 1 && record_context(r, &ctx) == 0 &&
        vclock_compare(&ctx, &fwd.s[0].clock) != VCLOCK_EQUAL) {
        abort();
    }
    vclock_deinit(&ctx);
    record_deinit(&fwd);
    record_deinit(&back);
}

/*
 * record_peek_at at the first sibling's expiry (0: none) leaves out exactly
 * the siblings the decoded record says have expired by then.
 */
static void fuzz_check_peek_at(const uint8_t *data, size_t size, const struct record *r)
{
    uint64_t now = r->s[0].expire_ms;
    const uint8_t *value;
    size_t n, vlen, keep = 0;
    bool tomb;

    for (size_t i = 0; i < r->n; i++) {
        keep += !sibling_expired(&r->s[i], now);
    }
    if (record_peek_at(data, size, now, &n, &tomb, &value, &vlen) != 0 || n != keep) {
        abort();
    }
}

/* record_peek on any input: never reads outside it, and agrees with a successful decode. */
static void fuzz_check_peek(const uint8_t *data, size_t size, const struct record *r)
{
    const uint8_t *value;
    size_t n, vlen;
    bool tomb;
    int rc = record_peek(data, size, &n, &tomb, &value, &vlen);

    if (rc == 0 && n == 1 && (value < data || value + vlen != data + size)) {
        abort();
    }
    if (r == NULL) {
        return;
    }
    if (rc != 0 || n != r->n ||
        (n == 1 && (tomb != r->s[0].tombstone || vlen != r->s[0].value_len ||
                    (vlen > 0 && memcmp(value, r->s[0].value, vlen) != 0)))) {
        abort();
    }
    fuzz_check_peek_at(data, size, r);
}

/*
 * A view of the bytes (what a replica reads a peer's versions as) gives the
 * decoder's verdict and, when it decodes, the decoder's record; its room
 * is small, so clocks both fit in it and spill past it.
 */
static void fuzz_check_view(const uint8_t *data, size_t size, int rc, const struct record *r)
{
    struct vclock_entry room[4];
    struct record v;
    int vrc;

    record_init(&v);
    vrc = record_view(data, size, &v, room, 4);
    if (rc != RK_ENOMEM && vrc != RK_ENOMEM &&
        (vrc != rc || (rc == 0 && !record_same(&v, r)) || (rc != 0 && v.n != 0))) {
        abort();
    }
    record_view_release(&v);
    record_deinit(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct record r;
    int rc;

    record_init(&r);
    rc = record_decode(data, size, &r);
    if (rc != RK_ENOMEM && record_check(data, size) != rc) {
        abort(); /* the check alone must give the decoder's verdict */
    }
    fuzz_check_view(data, size, rc, &r);
    if (rc != 0) {
        if (r.n != 0 || r.s != NULL) {
            abort();
        }
        fuzz_check_peek(data, size, NULL);
        return 0;
    }
    fuzz_check_peek(data, size, &r);
    fuzz_check_canonical(&r, data, size);
    fuzz_check_siblings(&r);
    fuzz_check_lww(&r);
    record_deinit(&r);
    return 0;
}
