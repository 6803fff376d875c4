/*
 * hcheck.h - the history checker behind `ringkv verify`: given a history
 * (history.h) and what each key holds once the cluster has quiesced, is
 * every acknowledged write accounted for?
 *
 * Per key, with W a write (set, kset) and X any op of the same key:
 *   - X can have been applied unless its outcome is fail; X's end is
 *     taken as "never" when its outcome is unknown (the node may apply it
 *     after the client gave up).
 *   - X is evident when its value is present, or it is a delete and the
 *     key is absent, or an evident kset has X's value in its context_of
 *     (transitively); X is accounted for (shown to have taken effect, or
 *     checked in its own right) when it is evident, or trusted: an ok op
 *     (ended before the loss bound, when there is one), or an accounted
 *     kset has X's value in its context_of (transitively).
 *   - X supersedes W when X is an accounted kset whose context_of holds
 *     W's value (the KGET it wrote over saw W); or X is blind (set, del,
 *     kset without a context) and either evident and did not end before W
 *     started (X.end >= W.start: concurrent or later, so either order is
 *     allowed), or accounted and started after W ended (certainly later).
 *     Overlap alone is not enough for an op that is only trusted: two
 *     overlapping ok writes both absent would account for each other.
 *     With lww (hcheck_opts), every kset counts as blind here too.
 *   - A delete D also supersedes W when W was deleted by it and read gone
 *     after: D is accounted, at least one ok read (get, kget) started
 *     after W ended and after every ok read that returned W started, and
 *     some time t (when D took effect) has
 *       t >= W.start, t >= D.start, t >= R.start for every ok read R of W,
 *       t <= D's end (never, for unknown),
 *       t <= O.end for every ok read O that started after W ended and
 *            after the reads of W started (none returned W: each saw W
 *            gone, and must be after D),
 *       t <= the end of the write of each value such an O returned, and
 *            of each value present (never, for an unknown write): what
 *            was read or is there after D was written after D, or D
 *            would have removed it.
 *     Such an O that returned a value no write wrote, or one whose write
 *     started after O ended, cannot be placed and rules every D out.  So
 *     a read that may have come before W shows nothing of it; a delete
 *     that ended before W started, or before a read of W started, came
 *     before W; a read that returned a value written before D could act
 *     saw W gone before D.  The final state bounds t but is no evidence
 *     on its own: with no read after W, an ok delete overlapping W and a
 *     later write that did not see W leaves W lost.  A read without W
 *     that started before a read of W did was stale, and is not counted.
 * Violations:
 *   lost          an ok write whose value is absent and that nothing
 *                 accounted for supersedes (with a loss bound T, one that
 *                 ended at or after T is counted as lost_allowed instead)
 *   fail-present  a write whose outcome is fail, present, or returned by
 *                 an ok read (the read is the other op)
 *   stale         a present value that a trusted write overwrote: a blind
 *                 one that started after the value's write ended, or a
 *                 kset whose context held the value
 *   delete-undone the same, where the trusted op is a delete
 *   foreign       a present value, or one an ok read returned, that no
 *                 write of the key in the history wrote
 *   not-monotonic (only when asked) an ok read returned a value older
 *                 than one returned by a read that ended before it started
 *                 (older: its write ended before the other's blind write
 *                 started, or the other is a kset whose context held it)
 * Every value written to one key must be distinct; a history where two
 * writes of a key wrote the same value is refused (RK_EDUP).
 */
#ifndef RINGKV_HCHECK_H
#define RINGKV_HCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "history.h"

struct hcheck_opts {
    bool monotonic;
    /*
     * The cluster resolves conflicts by last writer wins (`conflicts lww`):
     * a kset's context keeps no concurrent write beside it, the later
     * version replaces it, so every kset supersedes, and makes stale, as a
     * blind op does (and still by its context).
     */
    bool lww;
    bool loss_bound;        /* writes that ended at or after loss_after_us may be lost */
    uint64_t loss_after_us; /* the history's clock */
};

enum hcheck_kind {
    HCHECK_LOST,
    HCHECK_FAIL_PRESENT,
    HCHECK_STALE,
    HCHECK_DELETE_UNDONE,
    HCHECK_FOREIGN,
    HCHECK_NOT_MONOTONIC,
};

/* One violation: the key (index into hcheck.keys) and the history entries involved. */
struct hcheck_violation {
    enum hcheck_kind kind;
    size_t key;
    size_t op;    /* entry index; SIZE_MAX when none (a foreign value in the final state) */
    size_t other; /* the entry that makes it a violation, or SIZE_MAX */
    const struct history_str *value; /* the value concerned (borrowed from the history or keys) */
};

struct hcheck_counts {
    size_t keys;
    size_t writes_ok, present, superseded, lost, lost_allowed;
    size_t unknown, unknown_present;
    size_t fail, fail_present;
    size_t deletes_ok;
    size_t reads_checked;
    uint64_t last_ok_write_end; /* 0 when no write was ok */
};

/* One key of the history: the entries that touched it, and what it holds at the end. */
struct hcheck_key {
    struct history_str key; /* borrowed from the first entry */
    size_t *ops;            /* entry indices, in history order */
    size_t n_ops;
    struct history_str *final; /* owned copies, set by hcheck_set_final() */
    size_t n_final;
    size_t *writes; /* the checker's: indices into ops of the writes, sorted by value */
    size_t n_writes;
};

struct hcheck {
    const struct history *h; /* borrowed for the checker's lifetime */
    struct hcheck_key *keys; /* sorted by key */
    size_t n_keys;
    struct hcheck_counts counts;
    struct hcheck_violation *v;
    size_t n_v, cap_v;
};

/* Kind names for output: "lost", "fail-present", ... */
const char *hcheck_kind_name(enum hcheck_kind k);

/*
 * Group h's entries by key.  RK_EDUP (err names the key and both lines) when
 * two writes of one key wrote the same value, RK_ENOMEM.  Free with
 * hcheck_free() whatever the result.
 */
int hcheck_init(struct hcheck *hc, const struct history *h, char *err, size_t err_len);

/* What key index k holds at the end: values[0..n) are copied.  0 or RK_ENOMEM. */
int hcheck_set_final(struct hcheck *hc, size_t k, const struct history_str *values, size_t n);

/* Check every key (their final values set, or absent); fills counts and v.  0 or RK_ENOMEM. */
int hcheck_run(struct hcheck *hc, const struct hcheck_opts *o);

void hcheck_free(struct hcheck *hc);

#endif
