/*
 * check_overlay.c - unit tests of the write-ahead log's overlay
 * (storage/overlay.c), pure, without a store: its sorted view, kept
 * incrementally (new keys in a pending tail merged in by overlay_sorted(),
 * a replaced entry in its slot), always holds every entry once, in key
 * order, and the newest entry of each key, whatever mix of new keys,
 * replacements and overlay_sorted() calls came before; a cleared overlay
 * starts again from nothing; and the same with entries carved from the
 * overlay's chunks, which a clear keeps for the next entries.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "overlay.h"
#include "test_rng.h"

#define KEYS 3000

/*
 * Put key k (position p, name k) with a record of rec_len bytes, the first
 * v and the rest v + 1: malloc'd alone, or carved from the overlay's chunks.
 */
static void put_sized(struct overlay *ov, uint32_t k, uint8_t v, bool chunks, size_t rec_len)
{
    uint8_t key[12];
    struct ov_entry *e;

    bytes_put_be64(key, (uint64_t)(k % 97) << 40); /* positions shared: the name decides */
    bytes_put_be32(key + 8, k);
    e = chunks ? overlay_entry_alloc(ov, key, sizeof(key), rec_len, true)
               : overlay_entry_new(key, sizeof(key), rec_len, true);
    if (e == NULL) {
        ck_abort_msg("out of memory");
    }
    ov_rec(e)[0] = v;
    memset(ov_rec(e) + 1, (uint8_t)(v + 1), rec_len - 1);
    overlay_put(ov, e);
}

static void put(struct overlay *ov, uint32_t k, uint8_t v)
{
    put_sized(ov, k, v, false, 1);
}

/*
 * Does the view hold exactly the keys of want (want[k] != 0: the value), in
 * order?  The first flaw in *why.  Checked without an assertion per entry
 * (Check marks every assertion with a write to its parent).
 */
static bool view_ok(struct overlay *ov, const uint8_t *want, const char **why)
{
    struct ov_entry *const *v;
    size_t n, seen = 0;

    if (overlay_sorted(ov, &v, &n) != 0 || n != ov->n) {
        *why = "overlay_sorted failed or counted wrong";
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        struct ov_entry *e = v[i];
        uint32_t k = bytes_get_be32(ov_key(e) + 8);
        if (e->pending || k >= KEYS || ov_rec(e)[0] != want[k] ||
            overlay_find(ov, ov_key(e), e->key_len) != e) {
            *why = "an entry pending, unknown, stale or not the table's";
            return false;
        }
        if (i > 0 &&
            overlay_key_cmp(ov_key(v[i - 1]), v[i - 1]->key_len, ov_key(e), e->key_len) >= 0) {
            *why = "out of order";
            return false;
        }
    }
    for (size_t k = 0; k < KEYS; k++) {
        seen += want[k] != 0;
    }
    *why = "keys missing";
    return seen == n;
}

static void check_view(struct overlay *ov, const uint8_t *want)
{
    const char *why = "";

    ck_assert_msg(view_ok(ov, want, &why), "sorted view: %s", why);
}

START_TEST(test_sorted_view_incremental)
{
    static uint8_t want[KEYS];
    struct overlay ov;

    rng_seed("overlay");
    ck_assert_int_eq(overlay_init(&ov), 0);
    for (int round = 0; round < 3; round++) {
        memset(want, 0, sizeof(want));
        for (int step = 0; step < 20000; step++) {
            uint32_t k = rng_below(KEYS);
            uint8_t v = (uint8_t)(1 + rng_below(250));
            put(&ov, k, v);
            want[k] = v;
            if (rng_below(round == 0 ? 50 : round == 1 ? 2000 : 7) == 0) {
                check_view(&ov, want);
            }
        }
        check_view(&ov, want);
        check_view(&ov, want); /* nothing changed: the same view */
        overlay_clear(&ov);
        memset(want, 0, sizeof(want));
        check_view(&ov, want);
    }
    overlay_free(&ov);
}
END_TEST

/* Does every entry's record still hold what put_sized() wrote (nothing overwritten)? */
static bool records_whole(struct overlay *ov)
{
    struct ov_entry *const *v;
    size_t n;

    ck_assert_int_eq(overlay_sorted(ov, &v, &n), 0);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *r = ov_rec(v[i]);
        for (size_t j = 1; j < v[i]->rec_len; j++) {
            if (r[j] != (uint8_t)(r[0] + 1)) {
                return false;
            }
        }
    }
    return true;
}

/*
 * Entries carved from chunks (overlay_entry_alloc()), mixed with entries
 * too large for a chunk (malloc'd alone) and with plain ones: the view and
 * the table hold the newest of each key, no record overwrites another; a
 * replaced entry of a chunk still counts in ov.bytes until the clear; the
 * clear keeps the emptied chunks (a bounded number) and the next rounds of
 * the same work take no new ones.
 */
START_TEST(test_chunk_entries)
{
    static uint8_t want[KEYS];
    struct overlay ov;
    size_t spare_after_first = 0;

    rng_seed("overlay-chunks");
    ck_assert_int_eq(overlay_init(&ov), 0);
    for (int round = 0; round < 3; round++) {
        size_t bytes;
        memset(want, 0, sizeof(want));
        for (int step = 0; step < 20000; step++) {
            uint32_t k = rng_below(KEYS);
            uint8_t v = (uint8_t)(1 + rng_below(250));
            unsigned kind = rng_below(100);
            put_sized(&ov, k, v, kind != 0, kind == 1 ? 70000 : 1 + (size_t)rng_below(300));
            want[k] = v;
            if (rng_below(500) == 0) {
                check_view(&ov, want);
            }
        }
        check_view(&ov, want);
        ck_assert(records_whole(&ov));
        ck_assert_ptr_nonnull(ov.chunks);
        /* a replacement by a chunk's entry: the replaced one's bytes stay counted */
        put_sized(&ov, 0, 7, true, 10);
        bytes = ov.bytes;
        put_sized(&ov, 0, 8, true, 10);
        ck_assert_uint_eq(ov.bytes, bytes + 12 + 10);
        overlay_clear(&ov);
        ck_assert_ptr_null(ov.chunks);
        ck_assert_uint_eq(ov.bytes, 0);
        ck_assert_uint_gt(ov.n_spare, 0);
        ck_assert_uint_le(ov.n_spare, 64);
        if (round == 0) {
            spare_after_first = ov.n_spare;
        } else {
            ck_assert_uint_eq(ov.n_spare, spare_after_first); /* the kept chunks were reused */
        }
        memset(want, 0, sizeof(want));
        check_view(&ov, want);
    }
    overlay_free(&ov);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("overlay");
    TCase *tc = tcase_create("sorted_view_incremental");
    TCase *tc2 = tcase_create("chunk_entries");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sorted_view_incremental);
    suite_add_tcase(s, tc);
    tcase_set_timeout(tc2, 60);
    tcase_add_test(tc2, test_chunk_entries);
    suite_add_tcase(s, tc2);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
