/*
 * check_buf.c - unit tests of the byte buffer (src/base/buf.c): appends
 * into room already there and into grown room keep every byte, a consumed
 * prefix is reused, and the bound refuses whole appends.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"

/* Random appends and consumes against a plain array: the data is always what the model holds. */
START_TEST(test_against_model)
{
    static uint8_t model[1 << 20];
    size_t model_start = 0, model_len = 0;
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    struct buf b;

    buf_init(&b, 0);
    for (int round = 0; round < 20000; round++) {
        uint8_t chunk[9000];
        size_t n;
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        n = seed % 4 == 0 ? (seed >> 8) % sizeof(chunk) : (seed >> 8) % 17;
        if (seed % 5 == 0) {
            size_t drop = n > model_len ? model_len : n;
            buf_consume(&b, drop);
            model_start += drop;
            model_len -= drop;
        } else if (model_start + model_len + n <= sizeof(model)) {
            for (size_t i = 0; i < n; i++) {
                chunk[i] = (uint8_t)(seed >> (i % 56));
            }
            ck_assert_int_eq(buf_append(&b, chunk, n), 0);
            memcpy(model + model_start + model_len, chunk, n);
            model_len += n;
        } else {
            buf_clear(&b);
            model_start = model_len = 0;
        }
        ck_assert_uint_eq(b.len, model_len);
        ck_assert_uint_le(b.start + b.len, b.cap);
        ck_assert(model_len == 0 || memcmp(buf_data(&b), model + model_start, model_len) == 0);
    }
    buf_free(&b);
}
END_TEST

/* Reserved room is written through the pointer and counted by buf_commit(). */
START_TEST(test_reserve_commit)
{
    struct buf b;
    uint8_t *p;

    buf_init(&b, 0);
    ck_assert_ptr_nonnull(buf_data(&b)); /* before anything was stored */
    p = buf_reserve(&b, 3);
    ck_assert_ptr_nonnull(p);
    memcpy(p, "abc", 3);
    buf_commit(&b, 3);
    p = buf_reserve(&b, 2); /* room already there: right after the data */
    ck_assert_ptr_eq(p, buf_data(&b) + 3);
    memcpy(p, "de", 2);
    buf_commit(&b, 2);
    buf_consume(&b, 4);
    ck_assert_uint_eq(b.len, 1);
    ck_assert_int_eq(buf_data(&b)[0], 'e');
    buf_free(&b);
}
END_TEST

/* A bounded buffer takes appends up to its bound and refuses the one past it whole. */
START_TEST(test_bound)
{
    struct buf b;

    buf_init(&b, 10);
    ck_assert_int_eq(buf_append(&b, "0123456", 7), 0);
    ck_assert_int_eq(buf_append(&b, "7890", 4), RK_ETOOBIG);
    ck_assert_uint_eq(b.len, 7);
    ck_assert_ptr_null(buf_reserve(&b, 4));
    ck_assert_int_eq(buf_append(&b, "789", 3), 0);
    ck_assert_uint_eq(b.len, 10);
    ck_assert_int_eq(memcmp(buf_data(&b), "0123456789", 10), 0);
    ck_assert_int_eq(buf_append(&b, "x", 1), RK_ETOOBIG);
    buf_consume(&b, 5); /* the bound is on the data held, not on what passed */
    ck_assert_int_eq(buf_append(&b, "abcde", 5), 0);
    ck_assert_int_eq(memcmp(buf_data(&b), "56789abcde", 10), 0);
    ck_assert_ptr_null(buf_reserve(&b, SIZE_MAX));
    buf_free(&b);
}
END_TEST

static Suite *buf_suite(void)
{
    Suite *s = suite_create("buf");
    TCase *tc = tcase_create("buf");

    tcase_add_test(tc, test_against_model);
    tcase_add_test(tc, test_reserve_commit);
    tcase_add_test(tc, test_bound);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(buf_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
