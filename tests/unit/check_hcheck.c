/*
 * check_hcheck.c - the history checker (src/cli/hcheck.h) on synthetic
 * histories of one key "a", each a few JSON lines run through the history
 * reader (src/cli/history.h), with the key's final siblings given: a clean
 * history, a lost write, an old value written back, a failed write that is
 * present, an undone delete, concurrent writes in either order, a KSET
 * chain superseding by context, a delete overlapping a KSET that later
 * reads saw deleted (and the same shapes really lost), a loss bound, a
 * foreign value, monotonic reads; and the reader's refusals and its
 * byte-exact escaping.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hcheck.h"
#include "history.h"

/* One op of key "a": op, value, start, end, outcome. */
#define OP(op, v, s, e, out)                                                                       \
    "{\"op\":\"" op "\",\"key\":\"a\",\"value\":" v ",\"start\":" #s ",\"end\":" #e                \
    ",\"node\":\"n1:7370\",\"outcome\":\"" out "\"}\n"
#define SET(v, s, e, out) OP("set", "\"" v "\"", s, e, out)
#define DEL(s, e, out) OP("del", "null", s, e, out)
#define GET(v, s, e) OP("get", "\"" v "\"", s, e, "ok")
/* An acknowledged KGET that returned vals (a JSON list). */
#define KGET(vals, s, e)                                                                           \
    "{\"op\":\"kget\",\"key\":\"a\",\"values\":" vals ",\"start\":" #s ",\"end\":" #e              \
    ",\"node\":\"n1:7370\",\"outcome\":\"ok\"}\n"
/* A KSET whose context's KGET returned ctx (a JSON list). */
#define KSET(v, ctx, s, e, out)                                                                    \
    "{\"op\":\"kset\",\"key\":\"a\",\"value\":\"" v "\",\"context_of\":" ctx ",\"start\":" #s      \
    ",\"end\":" #e ",\"node\":\"n1:7370\",\"outcome\":\"" out "\"}\n"

struct run {
    struct history h;
    struct hcheck hc;
};

/*
 * Check text with key "a" holding final[0..n) (NULL-terminated list) and
 * options o; the result stays in r for the assertions.
 */
static void check_with(struct run *r, const char *text, const char *const *final,
                       const struct hcheck_opts *o)
{
    struct history_str vals[8];
    char err[256];
    size_t n = 0;

    memset(r, 0, sizeof(*r));
    ck_assert_msg(history_parse(&r->h, (const uint8_t *)text, strlen(text), err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(hcheck_init(&r->hc, &r->h, err, sizeof(err)), 0);
    ck_assert_uint_eq(r->hc.n_keys, 1);
    for (; final != NULL && final[n] != NULL; n++) {
        vals[n] = (struct history_str){(uint8_t *) final[n], strlen(final[n])};
    }
    ck_assert_int_eq(hcheck_set_final(&r->hc, 0, vals, n), 0);
    ck_assert_int_eq(hcheck_run(&r->hc, o), 0);
}

static void check(struct run *r, const char *text, const char *const *final)
{
    struct hcheck_opts o = {0};

    check_with(r, text, final, &o);
}

static void done(struct run *r)
{
    hcheck_free(&r->hc);
    history_free(&r->h);
}

/* Violation i is of kind k, about the op on line `line` (0: none), the other on `other`. */
static void assert_violation(const struct run *r, size_t i, enum hcheck_kind k, size_t line,
                             size_t other)
{
    const struct hcheck_violation *v;

    ck_assert_uint_gt(r->hc.n_v, i);
    v = &r->hc.v[i];
    ck_assert_str_eq(hcheck_kind_name(v->kind), hcheck_kind_name(k));
    ck_assert_uint_eq(v->op == SIZE_MAX ? 0 : r->h.e[v->op].line, line);
    ck_assert_uint_eq(v->other == SIZE_MAX ? 0 : r->h.e[v->other].line, other);
}

#define FINAL(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(test_clean)
{
    struct run r;

    check(&r,
          SET("v1", 0, 10, "ok") SET("v2", 20, 30, "ok") GET("v2", 40, 50) DEL(60, 70, "ok")
              SET("v3", 80, 90, "ok"),
          FINAL("v3"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.writes_ok, 3);
    ck_assert_uint_eq(r.hc.counts.present, 1);
    ck_assert_uint_eq(r.hc.counts.superseded, 2);
    ck_assert_uint_eq(r.hc.counts.deletes_ok, 1);
    ck_assert_uint_eq(r.hc.counts.reads_checked, 1);
    ck_assert_uint_eq(r.hc.counts.last_ok_write_end, 90);
    done(&r);
}
END_TEST

START_TEST(test_lost_write)
{
    struct run r;

    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "ok"), NULL);
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    ck_assert_uint_eq(r.hc.counts.lost, 1);
    ck_assert_uint_eq(r.hc.counts.superseded, 1);
    done(&r);
    /* an unknown write that is not there either accounts for nothing */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "unknown"), NULL);
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    /* ... while one that is there does */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "unknown"), FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.unknown_present, 1);
    done(&r);
    /* an unknown write may land after a later acknowledged one */
    check(&r, SET("v1", 0, 10, "unknown") SET("v2", 20, 30, "ok"), FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /* an unknown write that only an earlier write could have overwritten shows nothing */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 5, 30, "unknown") SET("v3", 20, 25, "ok"),
          FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 2);
    assert_violation(&r, 0, HCHECK_LOST, 3, 0);
    assert_violation(&r, 1, HCHECK_STALE, 1, 3);
    done(&r);
    /* an unknown delete accounts for a missing key */
    check(&r, SET("v1", 0, 10, "ok") DEL(20, 30, "unknown"), NULL);
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.unknown, 1);
    done(&r);
}
END_TEST

START_TEST(test_old_value_back)
{
    struct run r;

    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "ok"), FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 2);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    assert_violation(&r, 1, HCHECK_STALE, 1, 2);
    done(&r);
}
END_TEST

START_TEST(test_fail_present)
{
    struct run r;

    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "fail"), FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_FAIL_PRESENT, 2, 0);
    ck_assert_uint_eq(r.hc.counts.fail_present, 1);
    done(&r);
    /* a failed write an acknowledged read returned was applied, whatever the end holds */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "fail") GET("v2", 40, 50), FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_FAIL_PRESENT, 2, 3);
    done(&r);
    /* a failed write supersedes nothing: v1 must still be there */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 20, 30, "fail"), NULL);
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
}
END_TEST

START_TEST(test_delete_undone)
{
    struct run r;

    check(&r, SET("v1", 0, 10, "ok") DEL(20, 30, "ok"), FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_DELETE_UNDONE, 1, 2);
    done(&r);
    /* a write concurrent with the delete may land after it */
    check(&r, SET("v1", 0, 25, "ok") DEL(20, 30, "ok"), FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    check(&r, SET("v1", 0, 25, "ok") DEL(20, 30, "ok"), NULL);
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
}
END_TEST

START_TEST(test_concurrent_either_order)
{
    const char *text = SET("v1", 0, 20, "ok") SET("v2", 10, 30, "ok");
    struct run r;

    check(&r, text, FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.superseded, 1);
    done(&r);
    check(&r, text, FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /* touching ends count as concurrent too */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 10, 30, "ok"), FINAL("v1"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
}
END_TEST

/*
 * Acknowledged writes that overlap in time, all absent: each could have
 * overwritten the other, but not both; one of them at least is lost.
 */
START_TEST(test_concurrent_both_lost)
{
    struct run r;

    check(&r, SET("v1", 0, 20, "ok") SET("v2", 10, 30, "ok"), NULL);
    ck_assert_uint_eq(r.hc.counts.lost, 2);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    assert_violation(&r, 1, HCHECK_LOST, 2, 0);
    done(&r);
    /* a chain of overlaps, each write overlapping the next */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 5, 25, "ok") SET("v3", 20, 30, "ok"), NULL);
    ck_assert_uint_ge(r.hc.counts.lost, 1);
    done(&r);
    /* a kset whose context saw a long write, that write overlapping it: the kset is lost */
    check(&r, SET("v1", 0, 100, "ok") KSET("v2", "[\"v1\"]", 50, 60, "ok"), NULL);
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    done(&r);
    /* the same with the kset's value there: clean */
    check(&r, SET("v1", 0, 100, "ok") KSET("v2", "[\"v1\"]", 50, 60, "ok"), FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /* one write certainly after the other: only the later one is lost */
    check(&r, SET("v1", 0, 10, "ok") SET("v2", 5, 25, "ok") SET("v3", 30, 40, "ok"), NULL);
    ck_assert_uint_eq(r.hc.counts.lost, 1);
    assert_violation(&r, 0, HCHECK_LOST, 3, 0);
    done(&r);
}
END_TEST

START_TEST(test_kset_chain)
{
    const char *chain = KSET("v1", "[]", 0, 10, "ok") KSET("v2", "[\"v1\"]", 20, 30, "ok")
        KSET("v3", "[\"v2\"]", 40, 50, "ok");
    struct run r;

    check(&r, chain, FINAL("v3"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.superseded, 2);
    done(&r);
    /* v3's context held v2, so v2 cannot still be there without v3 */
    check(&r, chain, FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 2);
    assert_violation(&r, 0, HCHECK_LOST, 3, 0);
    assert_violation(&r, 1, HCHECK_STALE, 2, 3);
    done(&r);
    /* a later KSET whose context did not see v1 makes a sibling: v1 must stay */
    check(&r, KSET("v1", "[]", 0, 10, "ok") KSET("v2", "[]", 20, 30, "ok"), FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    /* transitively through an unknown KSET that is itself superseded */
    check(&r,
          KSET("v1", "[]", 0, 10, "ok") KSET("v2", "[\"v1\"]", 20, 30, "unknown")
              KSET("v3", "[\"v2\"]", 40, 50, "ok"),
          FINAL("v3"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
}
END_TEST

/*
 * conflicts lww: a later KSET whose context did not see v1 replaces it (the
 * later version wins), as a blind write would; the same history is a lost
 * v1 under siblings (test_kset_chain), and v1 left over v2 is stale.
 */
START_TEST(test_lww_kset_supersedes)
{
    const char *two = KSET("v1", "[]", 0, 10, "ok") KSET("v2", "[]", 20, 30, "ok");
    struct hcheck_opts lww = {.lww = true};
    struct run r;

    check_with(&r, two, FINAL("v2"), &lww);
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.superseded, 1);
    done(&r);
    check_with(&r, two, FINAL("v1"), &lww);
    ck_assert_uint_eq(r.hc.n_v, 2);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    assert_violation(&r, 1, HCHECK_STALE, 1, 2);
    done(&r);
    /* overlapping: either may win */
    check_with(&r, KSET("v1", "[]", 0, 25, "ok") KSET("v2", "[]", 20, 30, "ok"), FINAL("v1"), &lww);
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
}
END_TEST

/*
 * A DEL overlapping a KSET, the key written again later: the delete may
 * have come after the KSET, and a read that started after the KSET ended
 * saw the key without it (empty, or holding only what may have been
 * written after the delete), so it was deleted, not lost.  The shapes are
 * those `ringkv workload --causal --mix 1:1:1` recorded, where verify
 * reported the KSET lost.
 */
START_TEST(test_delete_after_kset)
{
    struct run r;

    /* two nodes, rf 1: the KGET of the next KSET saw the key deleted */
    check(&r,
          KGET("[]", 0, 10) KSET("v1", "[]", 11, 20, "ok") DEL(18, 30, "ok") KGET("[]", 40, 45)
              KSET("v2", "[]", 46, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.superseded, 1);
    done(&r);
    /* three nodes, rf 3: a read of v1 in between, which the delete may still have followed */
    check(&r,
          KSET("v1", "[]", 0, 20, "ok") DEL(13, 40, "ok") KGET("[\"v1\"]", 28, 30)
              KGET("[]", 240, 245) KSET("v2", "[]", 246, 270, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /*
     * three nodes, rf 3: the read after v1 saw only v2, a sibling written
     * beside it that the delete may have preceded
     */
    check(&r,
          KSET("v0", "[]", 0, 10, "ok") KSET("v1", "[\"v0\"]", 20, 38, "ok")
              KSET("v2", "[\"v0\"]", 30, 56, "ok") DEL(32, 57, "ok") KGET("[\"v2\"]", 100, 104)
                  KSET("v3", "[\"v2\"]", 105, 120, "ok"),
          FINAL("v3"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /* a GET of the missing key sees the deletion as well */
    check(&r,
          SET("v1", 0, 10, "ok") DEL(5, 15, "ok") OP("get", "null", 20, 25, "ok")
              KSET("v2", "[]", 26, 30, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /* a read without v1 before a read of v1 was stale: only the reads after the last count */
    check(&r,
          KSET("v1", "[]", 0, 10, "ok") DEL(5, 30, "ok") KGET("[]", 12, 13) KGET("[\"v1\"]", 14, 15)
              KGET("[]", 40, 45) KSET("v2", "[]", 46, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /*
     * the delete that ended first is not the only candidate: d1 started
     * after v0 ended, so it cannot have preceded the read of v0 (a delete
     * undone in a read, which the checker does not judge), d2 can
     */
    check(&r,
          KSET("v0", "[]", 0, 7, "ok") KSET("v1", "[]", 0, 10, "ok") DEL(9, 14, "ok")
              DEL(5, 30, "ok") KGET("[\"v0\"]", 20, 25) KSET("v2", "[\"v0\"]", 26, 28, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
}
END_TEST

/*
 * The same shapes where the write really is lost, or nothing shows it
 * deleted: no read that certainly followed it saw the key without it, at
 * a time the delete may have reached after it.
 */
START_TEST(test_delete_after_kset_lost)
{
    struct run r;

    /* the delete ended before the write started */
    check(&r,
          DEL(0, 10, "ok") KSET("v1", "[]", 11, 20, "ok") KGET("[]", 40, 45)
              KSET("v2", "[]", 46, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    done(&r);
    /* the delete ended before a read that returned v1 started: v1 outlived it */
    check(&r,
          KSET("v1", "[]", 0, 20, "ok") DEL(13, 25, "ok") KGET("[\"v1\"]", 28, 30)
              KGET("[]", 240, 245) KSET("v2", "[]", 246, 270, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    /* nothing read the key after v1: the final state alone does not show v1 deleted */
    check(&r, KSET("v1", "[]", 0, 10, "ok") DEL(5, 15, "ok") KSET("v2", "[]", 12, 20, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    /* the only read without v1 may have come before v1 */
    check(&r,
          DEL(5, 30, "ok") KSET("v1", "[]", 10, 20, "ok") KGET("[]", 12, 25)
              KSET("v2", "[]", 40, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    done(&r);
    /* the read after v1 returned v0, written before the delete started */
    check(&r,
          KSET("v0", "[]", 0, 6, "ok") KSET("v1", "[]", 1, 10, "ok") DEL(8, 15, "ok")
              KGET("[\"v0\"]", 20, 25) KSET("v2", "[\"v0\"]", 26, 30, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    done(&r);
    /*
     * every read after v1 must be after the delete: a later one saw the key
     * empty, but an earlier one returned v0 without v1, and v0 was written
     * before the delete started, so v1 was gone before the delete
     */
    check(&r,
          KSET("v0", "[]", 0, 3, "ok") KSET("v1", "[]", 1, 10, "ok") DEL(5, 30, "ok")
              KGET("[\"v0\"]", 20, 25) KGET("[]", 40, 45) KSET("v2", "[]", 46, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 2, 0);
    done(&r);
    /*
     * the final state holds v0, written before the delete could have
     * followed v1: had the delete followed v1, v0 would be gone too
     */
    check(&r,
          SET("v0", 0, 8, "ok") DEL(5, 30, "ok") KSET("v1", "[]", 10, 20, "ok") KGET("[]", 25, 28),
          FINAL("v0"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 3, 0);
    done(&r);
    /* a read that returned a value before its write was sent cannot be placed: it shows nothing */
    check(&r,
          KSET("v1", "[]", 0, 10, "ok") DEL(5, 15, "ok") KGET("[\"v2\"]", 20, 25)
              KSET("v2", "[]", 30, 40, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    /* a delete nothing shows to have taken effect (unknown, failed) removes nothing */
    check(&r,
          KSET("v1", "[]", 11, 20, "ok") DEL(18, 30, "unknown") KGET("[]", 40, 45)
              KSET("v2", "[]", 46, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    check(&r,
          KSET("v1", "[]", 11, 20, "ok") DEL(18, 30, "fail") KGET("[]", 40, 45)
              KSET("v2", "[]", 46, 50, "ok"),
          FINAL("v2"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
}
END_TEST

START_TEST(test_monotonic)
{
    const char *text =
        SET("v1", 0, 10, "ok") SET("v2", 20, 30, "ok") GET("v2", 40, 50) GET("v1", 60, 70);
    struct hcheck_opts o = {.monotonic = true};
    struct run r;

    check_with(&r, text, FINAL("v2"), &o);
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_NOT_MONOTONIC, 4, 3);
    done(&r);
    check(&r, text, FINAL("v2")); /* only when asked */
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
    /* reads that overlap may see the writes in either order */
    check_with(&r,
               SET("v1", 0, 10, "ok") SET("v2", 20, 30, "ok") GET("v2", 40, 65) GET("v1", 60, 70),
               FINAL("v2"), &o);
    ck_assert_uint_eq(r.hc.n_v, 0);
    done(&r);
}
END_TEST

START_TEST(test_loss_bound_and_foreign)
{
    const char *text = SET("v1", 0, 10, "ok") SET("v2", 100, 110, "ok");
    struct hcheck_opts o = {.loss_bound = true, .loss_after_us = 50};
    struct run r;

    check_with(&r, text, FINAL("v1"), &o);
    ck_assert_uint_eq(r.hc.n_v, 0);
    ck_assert_uint_eq(r.hc.counts.lost_allowed, 1);
    done(&r);
    /* a write before the bound is still owed, even with a later one lost */
    check_with(&r, text, NULL, &o);
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_LOST, 1, 0);
    done(&r);
    check(&r, text, FINAL("v2", "zz"));
    ck_assert_uint_eq(r.hc.n_v, 1);
    assert_violation(&r, 0, HCHECK_FOREIGN, 0, 0);
    done(&r);
}
END_TEST

START_TEST(test_duplicate_value)
{
    const char *text = SET("v1", 0, 10, "ok") SET("v1", 20, 30, "ok");
    struct run r;
    char err[256];

    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(history_parse(&r.h, (const uint8_t *)text, strlen(text), err, sizeof(err)), 0);
    ck_assert_int_eq(hcheck_init(&r.hc, &r.h, err, sizeof(err)), RK_EDUP);
    ck_assert_ptr_nonnull(strstr(err, "lines 1 and 2"));
    done(&r);
}
END_TEST

/* --- the reader ------------------------------------------------------------------ */

static int parse_err(const char *text, char *err, size_t err_len)
{
    struct history h = {0};
    int rc = history_parse(&h, (const uint8_t *)text, strlen(text), err, err_len);

    history_free(&h);
    return rc;
}

START_TEST(test_reader_refuses)
{
    static const struct {
        const char *text, *says;
    } bad[] = {
        {SET("v1", 0, 10, "ok") "{\"op\":\n", "line 2: not JSON"},
        {"[1]\n", "line 1: not a JSON object"},
        {OP("put", "\"v\"", 0, 1, "ok"), "\"op\" is not one of"},
        {OP("set", "null", 0, 1, "ok"), "\"value\" is missing"},
        {OP("set", "\"v\"", 5, 1, "ok"), "\"end\" is before"},
        {OP("set", "\"v\"", -1, 1, "ok"), "\"start\" is not a non-negative"},
        {OP("set", "\"v\"", 0, 1, "maybe"), "\"outcome\" is not one of"},
        {OP("set", "\"\\u0100\"", 0, 1, "ok"), "above U+00FF"},
        {KSET("v", "[1]", 0, 1, "ok"), "holds something other than strings"},
        {"{\"op\":\"get\",\"op\":\"set\"}\n", "not JSON"},
        {OP("set\\u0000x", "\"v\"", 0, 1, "ok"), "\"op\" is not one of"},
        {OP("set", "\"v\"", 0, 1, "ok\\u0000"), "\"outcome\" is not one of"},
    };
    char err[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_int_ne(parse_err(bad[i].text, err, sizeof(err)), 0);
        ck_assert_msg(strstr(err, bad[i].says) != NULL, "case %zu: '%s'", i, err);
    }
}
END_TEST

START_TEST(test_reader_bounds)
{
    size_t n = HISTORY_LINE_MAX + 2;
    char *line = malloc(n + 1), err[256];

    ck_assert_ptr_nonnull(line);
    memset(line, ' ', n);
    line[0] = 'x';
    line[n] = '\0';
    ck_assert_int_eq(parse_err(line, err, sizeof(err)), RK_ETOOBIG);
    free(line);
}
END_TEST

/* Every byte, written by history_entry_format(), reads back as itself. */
START_TEST(test_bytes_round_trip)
{
    uint8_t all[256];
    struct history_entry e = {.op = HISTORY_SET,
                              .outcome = HISTORY_UNKNOWN,
                              .has_value = true,
                              .start = 1,
                              .end = 2,
                              .node = "n:1",
                              .error = "lost \"it\""};
    struct history h = {0};
    struct buf b;
    char err[256];

    for (size_t i = 0; i < sizeof(all); i++) {
        all[i] = (uint8_t)i;
    }
    e.key = (struct history_str){all, 128};
    e.value = (struct history_str){all, sizeof(all)};
    buf_init(&b, 0);
    ck_assert_int_eq(history_entry_format(&b, &e), 0);
    ck_assert_int_eq(history_parse(&h, b.p + b.start, b.len, err, sizeof(err)), 0);
    ck_assert_uint_eq(h.n, 1);
    ck_assert_uint_eq(h.e[0].value.len, sizeof(all));
    ck_assert_mem_eq(h.e[0].value.p, all, sizeof(all));
    ck_assert_uint_eq(h.e[0].key.len, 128);
    ck_assert_str_eq(h.e[0].error, "lost \"it\"");
    ck_assert_int_eq(h.e[0].outcome, HISTORY_UNKNOWN);
    buf_free(&b);
    history_free(&h);
}
END_TEST

static Suite *hcheck_suite(void)
{
    Suite *s = suite_create("hcheck");
    TCase *tc = tcase_create("rules");
    TCase *rd = tcase_create("reader");

    tcase_set_timeout(tc, 10);
    tcase_add_test(tc, test_clean);
    tcase_add_test(tc, test_lost_write);
    tcase_add_test(tc, test_old_value_back);
    tcase_add_test(tc, test_fail_present);
    tcase_add_test(tc, test_delete_undone);
    tcase_add_test(tc, test_concurrent_either_order);
    tcase_add_test(tc, test_concurrent_both_lost);
    tcase_add_test(tc, test_kset_chain);
    tcase_add_test(tc, test_lww_kset_supersedes);
    tcase_add_test(tc, test_delete_after_kset);
    tcase_add_test(tc, test_delete_after_kset_lost);
    tcase_add_test(tc, test_monotonic);
    tcase_add_test(tc, test_loss_bound_and_foreign);
    tcase_add_test(tc, test_duplicate_value);
    suite_add_tcase(s, tc);
    tcase_set_timeout(rd, 10);
    tcase_add_test(rd, test_reader_refuses);
    tcase_add_test(rd, test_reader_bounds);
    tcase_add_test(rd, test_bytes_round_trip);
    suite_add_tcase(s, rd);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hcheck_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
