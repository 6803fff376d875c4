/*
 * check_auth.c - unit tests of password checks and the per-address
 * slow-down (src/node/auth.c): equal and unequal passwords of every
 * length, the default user's name matched exactly, free failures, pauses
 * that refuse unread and double up to their bound, per-host records
 * (ports ignored), reset on success, forgetting, and a full table that
 * evicts nobody.  Time is an argument: nothing here waits or reads a
 * clock.
 */
#include <check.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

static struct auth_guard *g;

static void setup(void)
{
    ck_assert_int_ge(sodium_init(), 0);
    g = calloc(1, sizeof(*g));
    ck_assert_ptr_nonnull(g);
}

static void teardown(void)
{
    free(g);
}

static enum auth_result try(const char *addr, uint64_t now, const char *given, uint64_t *retry)
{
    return auth_guard_check(g, addr, now, "sesame", (const uint8_t *)given, strlen(given), retry);
}

START_TEST(test_password_equal)
{
    ck_assert(auth_password_equal("sesame", (const uint8_t *)"sesame", 6));
    ck_assert(!auth_password_equal("sesame", (const uint8_t *)"sesam", 5));
    ck_assert(!auth_password_equal("sesame", (const uint8_t *)"sesamf", 6));
    ck_assert(!auth_password_equal("sesame", (const uint8_t *)"sesame!", 7));
    ck_assert(!auth_password_equal("sesame", (const uint8_t *)"", 0));
    /* a NUL inside what was given is a byte like any other */
    ck_assert(!auth_password_equal("sesame", (const uint8_t *)"sesame\0", 7));
}
END_TEST

/* The default user's name is matched byte for byte, case and all, as Redis matches it. */
START_TEST(test_user_is_default)
{
    ck_assert(auth_user_is_default((const uint8_t *)"default", 7));
    ck_assert(!auth_user_is_default((const uint8_t *)"DEFAULT", 7));
    ck_assert(!auth_user_is_default((const uint8_t *)"Default", 7));
    ck_assert(!auth_user_is_default((const uint8_t *)"defaul", 6));
    ck_assert(!auth_user_is_default((const uint8_t *)"default\0", 8));
    ck_assert(!auth_user_is_default((const uint8_t *)"defaults", 8));
    ck_assert(!auth_user_is_default((const uint8_t *)"", 0));
}
END_TEST

/* AUTH_FREE_FAILURES wrong passwords cost nothing; the next one pauses the address. */
START_TEST(test_failures_then_pause)
{
    uint64_t retry = 0;

    for (int i = 0; i < AUTH_FREE_FAILURES; i++) {
        ck_assert_int_eq(try("10.0.0.1:5000", 1000, "wrong", &retry), AUTH_WRONG);
    }
    ck_assert_uint_eq(auth_guard_failures(g, "10.0.0.1:1"), AUTH_FREE_FAILURES);
    ck_assert_int_eq(try("10.0.0.1:5000", 1000, "wrong", &retry), AUTH_WRONG);
    /* paused: even the right password is not looked at, from any port of that host */
    ck_assert_int_eq(try("10.0.0.1:5001", 1000, "sesame", &retry), AUTH_THROTTLED);
    ck_assert_uint_eq(retry, AUTH_PAUSE_MIN_MS);
    ck_assert_int_eq(try("10.0.0.1:5002", 1000 + AUTH_PAUSE_MIN_MS - 1, "sesame", &retry),
                     AUTH_THROTTLED);
    ck_assert_uint_eq(retry, 1);
    /* refused attempts are not failures */
    ck_assert_uint_eq(auth_guard_failures(g, "10.0.0.1:1"), AUTH_FREE_FAILURES + 1);
    /* another address is unaffected */
    ck_assert_int_eq(try("10.0.0.2:5000", 1000, "sesame", &retry), AUTH_OK);
    /* after the pause, the right password passes and clears the record */
    ck_assert_int_eq(try("10.0.0.1:5000", 1000 + AUTH_PAUSE_MIN_MS, "sesame", &retry), AUTH_OK);
    ck_assert_uint_eq(auth_guard_failures(g, "10.0.0.1:1"), 0);
}
END_TEST

/* Each further failure doubles the pause, up to AUTH_PAUSE_MAX_MS. */
START_TEST(test_pause_doubles_to_bound)
{
    uint64_t now = 5000, retry = 0, want = AUTH_PAUSE_MIN_MS;

    for (int i = 0; i < AUTH_FREE_FAILURES; i++) {
        ck_assert_int_eq(try("[::1]:7000", now, "x", &retry), AUTH_WRONG);
    }
    for (int k = 0; k < 20; k++) {
        ck_assert_int_eq(try("[::1]:7000", now, "x", &retry), AUTH_WRONG);
        ck_assert_int_eq(try("[::1]:7001", now, "x", &retry), AUTH_THROTTLED);
        ck_assert_uint_eq(retry, want);
        now += retry;
        want = want * 2 < AUTH_PAUSE_MAX_MS ? want * 2 : AUTH_PAUSE_MAX_MS;
    }
    ck_assert_uint_eq(auth_guard_failures(g, "[::1]:1"), AUTH_FREE_FAILURES + 20);
}
END_TEST

/* A record quiet for AUTH_FORGET_MS starts over. */
START_TEST(test_forget)
{
    uint64_t retry = 0;

    for (int i = 0; i <= AUTH_FREE_FAILURES; i++) {
        ck_assert_int_eq(try("10.0.0.3:1", 0 + (uint64_t)i, "x", &retry), AUTH_WRONG);
    }
    ck_assert_int_eq(try("10.0.0.3:1", AUTH_FREE_FAILURES + AUTH_FORGET_MS, "x", &retry),
                     AUTH_WRONG);
    ck_assert_uint_eq(auth_guard_failures(g, "10.0.0.3:1"), 1);
}
END_TEST

/*
 * A full table evicts nobody: an attacker rotating through more addresses
 * than slots gets no fresh start; the addresses past the table share one
 * record and are slowed together.  A record forgotten frees its slot.
 */
START_TEST(test_full_table)
{
    uint64_t retry = 0, now = 100;
    char addr[32];
    int wrong = 0;

    for (int round = 0; round < 3 * AUTH_FREE_FAILURES; round++) {
        for (int i = 0; i < 2 * AUTH_GUARD_SLOTS; i++) {
            snprintf(addr, sizeof(addr), "10.1.%d.%d:1", i / 256, i % 256);
            wrong += try(addr, now, "x", &retry) == AUTH_WRONG;
        }
    }
    /* each remembered address, and the overflow record, earned AUTH_FREE_FAILURES + 1 */
    ck_assert_int_eq(wrong, (AUTH_GUARD_SLOTS + 1) * (AUTH_FREE_FAILURES + 1));
    ck_assert_uint_eq(auth_guard_failures(g, "10.1.0.0:1"), AUTH_FREE_FAILURES + 1);
    ck_assert_uint_eq(auth_guard_failures(g, "10.1.1.255:1"), 0);
    /* the right password from a remembered address passes after its pause */
    ck_assert_int_eq(try("10.1.0.7:1", now + AUTH_PAUSE_MIN_MS, "sesame", &retry), AUTH_OK);
    /* forgotten records free their slots for new addresses */
    now += AUTH_FORGET_MS;
    ck_assert_int_eq(try("10.9.9.9:1", now, "x", &retry), AUTH_WRONG);
    ck_assert_uint_eq(auth_guard_failures(g, "10.9.9.9:1"), 1);
    ck_assert_int_eq(try("10.1.0.0:1", now, "x", &retry), AUTH_WRONG);
    ck_assert_uint_eq(auth_guard_failures(g, "10.1.0.0:1"), 1);
}
END_TEST

static Suite *auth_suite(void)
{
    Suite *s = suite_create("auth");
    TCase *tc = tcase_create("auth");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, test_password_equal);
    tcase_add_test(tc, test_user_is_default);
    tcase_add_test(tc, test_failures_then_pause);
    tcase_add_test(tc, test_pause_doubles_to_bound);
    tcase_add_test(tc, test_forget);
    tcase_add_test(tc, test_full_table);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(auth_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
