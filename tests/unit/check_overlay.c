/*
 * check_overlay.c - unit tests of the write-ahead log's overlay
 * (storage/overlay.c), pure, without a store: its sorted view, kept
 * incrementally (new keys in a pending tail merged in by overlay_sorted(),
 * a replaced entry in its slot), always holds every entry once, in key
 * order, and the newest entry of each key, whatever mix of new keys,
 * replacements and overlay_sorted() calls came before; a cleared overlay
 * starts again from nothing.
 */
#include <check.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "overlay.h"
#include "test_rng.h"

#define KEYS 3000

/* Put key k (position p, name k) with a one-byte record v. */
static void put(struct overlay *ov, uint32_t k, uint8_t v)
{
    uint8_t key[12];
    struct ov_entry *e;

    bytes_put_be64(key, (uint64_t)(k % 97) << 40); /* positions shared: the name decides */
    bytes_put_be32(key + 8, k);
    e = overlay_entry_new(key, sizeof(key), 1, true);
    if (e == NULL) {
        ck_abort_msg("out of memory");
    }
    ov_rec(e)[0] = v;
    overlay_put(ov, e);
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

int main(void)
{
    Suite *s = suite_create("overlay");
    TCase *tc = tcase_create("sorted_view_incremental");
    SRunner *sr;
    int failed;

    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_sorted_view_incremental);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
