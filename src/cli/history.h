/*
 * history.h - the operation history `ringkv workload` records and `ringkv
 * verify` checks: one JSON object a line, one line per client operation.
 *
 *   {"op":"set","key":"wl:7","value":"3f2a9c01:0:12","start":1200,"end":1350,
 *    "node":"127.0.0.1:7370","outcome":"ok","error":null}
 *
 * Fields (every line has op, key, start, end, node and outcome):
 *   op        "set", "kset", "get", "kget" or "del"
 *   key       the key
 *   value     set, kset: the value written; get: the value read, or null
 *             for a missing key; absent or null otherwise
 *   values    kget: every sibling the read returned (a list)
 *   context_of kset: the values the KGET whose context this write sent
 *             returned (a list); absent for a KSET sent without a context,
 *             which writes over everything the node holds, as SET does
 *   start, end microseconds on the client's monotonic clock (CLOCK_MONOTONIC,
 *             one clock for the whole history): when the request was sent,
 *             when its reply arrived or the client gave up; end >= start
 *   node      "host:port" the request went to
 *   outcome   "ok" (the node said it was done), "fail" (the node replied
 *             with an error, or the request was never sent) or "unknown"
 *             (no reply: a timeout or a lost connection, so it may or may
 *             not have been applied)
 *   error     the error text for fail and unknown, else null or absent
 *
 * Strings are byte strings: each byte is one character U+0000..U+00FF,
 * written as itself when it is printable ASCII and as \u00XX (or \" \\)
 * otherwise, so any key or value round-trips; a string holding a character
 * above U+00FF is refused.  Other fields are ignored, so a history may
 * carry more.  Blank lines are skipped.
 *
 * The reader takes outside bytes: every line is bounded (HISTORY_LINE_MAX),
 * every list (HISTORY_LIST_MAX), the number of lines (HISTORY_ENTRIES_MAX);
 * any violation is an error naming the line, never a crash.
 */
#ifndef RINGKV_HISTORY_H
#define RINGKV_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* One line: a value up to 64 KiB written as \u00XX throughout, and room for the rest. */
#define HISTORY_LINE_MAX (512 * 1024)
/* Siblings of one read, or values of one context: far above a node's max-siblings. */
#define HISTORY_LIST_MAX 1024
/* Lines of one history: a day of a 100-op/s workload, and then some. */
#define HISTORY_ENTRIES_MAX (16u * 1024 * 1024)

enum history_op { HISTORY_SET, HISTORY_KSET, HISTORY_GET, HISTORY_KGET, HISTORY_DEL };

enum history_outcome { HISTORY_OK, HISTORY_FAIL, HISTORY_UNKNOWN };

/* A byte string; owned by whatever holds it (the history, or the caller when formatting). */
struct history_str {
    uint8_t *p;
    size_t len;
};

struct history_entry {
    enum history_op op;
    enum history_outcome outcome;
    struct history_str key;
    bool has_value; /* set, kset: always; get: false for a missing key */
    struct history_str value;
    struct history_str *values; /* kget: the siblings read */
    size_t n_values;
    bool has_context;            /* kset: sent with a context */
    struct history_str *context; /* kset: the values the context's KGET returned */
    size_t n_context;
    uint64_t start, end;
    char *node;  /* never NULL in a parsed history */
    char *error; /* NULL when none */
    size_t line; /* 1-based line in the file; 0 when not read from one */
};

struct history {
    struct history_entry *e;
    size_t n, cap;
};

const char *history_op_name(enum history_op op);
const char *history_outcome_name(enum history_outcome o);

/* Is op a write (set, kset) / a write over everything the node holds (set, del, kset without
 * context)? */
bool history_is_write(const struct history_entry *e);
bool history_is_blind(const struct history_entry *e);

/*
 * Read a whole history from data[0..len) into h (empty, zeroed), which the
 * caller frees with history_free() whatever the result.  On bad input
 * returns RK_ESYNTAX (not JSON, a missing or wrong field), RK_ETOOBIG (a
 * bound above) or RK_ENOMEM, with one sentence naming the line in err.
 */
int history_parse(struct history *h, const uint8_t *data, size_t len, char *err, size_t err_len);

void history_free(struct history *h);

/* Append s as a quoted JSON string, each byte one character (the escaping above). */
int history_json_str(struct buf *out, const uint8_t *p, size_t len);

/* Append e as one history line, ending in a newline.  0 or RK_ENOMEM/RK_ETOOBIG (out's max). */
int history_entry_format(struct buf *out, const struct history_entry *e);

#endif
