/*
 * scan.c - SCAN, KEYS and DBSIZE over the local store (scan.h).
 *
 * One walker serves the three: store_scan() from a cursor's arc with a
 * callback that counts visited keys, skips tombstones, filters by pattern
 * and gathers the matching keys as RESP bulk strings, and stops at the
 * first key of a new position once its budget of visits is spent.
 */
#include "scan.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "client.h"
#include "clock.h"
#include "commands.h"
#include "error.h"
#include "glob.h"
#include "num.h"
#include "record.h"
#include "resp.h"
#include "server.h"
#include "store.h"

/* The walker's stop signal (store_scan() returns a callback's non-zero value). */
#define SCAN_STOP 1

struct scan_walk {
    const uint8_t *pattern; /* NULL: every key */
    size_t plen;
    bool none;     /* TYPE named a type no key has */
    size_t budget; /* keys to visit before stopping at a new position */
    size_t visited;
    bool any;
    uint64_t last_pos, next;
    bool gather; /* keep matching keys in keys (false: count them only) */
    struct buf *keys;
    size_t n_keys;
    uint64_t now_ms; /* the wall clock that decides which values have expired */
};

int scan_cursor_parse(const char *s, size_t len, uint64_t *pos)
{
    bool minus = len > 1 && s[0] == '-', sign = len > 1 && (minus || s[0] == '+');
    uint64_t v;

    if (num_parse_u64(s + sign, len - sign, UINT64_MAX, &v) != 0) {
        return RK_ESYNTAX;
    }
    *pos = minus ? (uint64_t)0 - v : v; /* strtoul()'s reading, which Redis's cursor uses */
    return 0;
}

void scan_cursor_format(uint64_t next, bool done, char out[SCAN_CURSOR_TEXT])
{
    snprintf(out, SCAN_CURSOR_TEXT, "%" PRIu64, done ? (uint64_t)0 : next);
}

void scan_cursor_arc(uint64_t pos, uint64_t *start, uint64_t *end)
{
    *start = pos == 0 ? UINT64_MAX : pos - 1; /* (2^64-1, 2^64-1]: the whole ring from 0 */
    *end = UINT64_MAX;
}

/*
 * Whether an encoded record holds a live value at now_ms (a sibling that
 * is neither a tombstone nor expired).
 */
static bool scan_live(const uint8_t *rec, size_t len, uint64_t now_ms)
{
    const uint8_t *value;
    size_t n = 0, vlen;
    bool tombstone = false, live = false;
    struct record r;

    if (record_peek_at(rec, len, now_ms, &n, &tombstone, &value, &vlen) != 0) {
        return false;
    }
    if (n <= 1) {
        return n == 1 && !tombstone;
    }
    record_init(&r);
    live = record_decode(rec, len, &r) == 0 && !record_all_dead(&r, now_ms);
    record_deinit(&r);
    return live;
}

static int scan_visit(void *ctx, const struct store_item *it)
{
    struct scan_walk *w = ctx;

    if (w->visited >= w->budget && (!w->any || it->pos != w->last_pos)) {
        w->next = it->pos;
        return SCAN_STOP;
    }
    w->visited++;
    w->any = true;
    w->last_pos = it->pos;
    if (w->none || !scan_live(it->record, it->record_len, w->now_ms) ||
        (w->pattern != NULL && !glob_match(w->pattern, w->plen, it->key, it->key_len, false))) {
        return 0;
    }
    if (w->gather) {
        resp_put_bulk(w->keys, it->key, it->key_len);
    }
    w->n_keys++;
    return 0;
}

/* Walk from position pos; *done when the ring's end was reached.  0 or an error. */
static int scan_walk_from(struct server *n, struct scan_walk *w, uint64_t pos, bool *done)
{
    struct store_cursor cur;
    uint64_t start, end;
    int rc;

    store_cursor_init(&cur);
    scan_cursor_arc(pos, &start, &end);
    rc = store_scan(n->store, start, end, &cur, 0, 0, scan_visit, w);
    *done = rc == 0;
    return rc == SCAN_STOP ? 0 : rc;
}

/* MATCH's pattern: Redis skips matching for a lone "*". */
static void scan_set_pattern(struct scan_walk *w, const struct resp_arg *a)
{
    bool all = a->len == 1 && a->p[0] == '*';

    w->pattern = all ? NULL : a->p;
    w->plen = all ? 0 : a->len;
}

/*
 * COUNT's value as Redis reads it: an integer (else "not an integer"), at
 * least 1 (else a syntax error, as for -1); bounded by SCAN_COUNT_MAX,
 * since COUNT is a hint of work per call, so no call runs long.
 */
static bool scan_count(struct pending *p, const struct resp_arg *a, size_t *budget)
{
    const char *s = (const char *)a->p;
    uint64_t count = 0;
    bool negative = a->len > 1 && s[0] == '-';

    if (num_parse_u64(s + negative, a->len - negative, INT64_MAX, &count) != 0) {
        client_error(p, "ERR value is not an integer or out of range");
        return false;
    }
    if (negative || count == 0) {
        client_error(p, "ERR syntax error");
        return false;
    }
    *budget = count > SCAN_COUNT_MAX ? SCAN_COUNT_MAX : (size_t)count;
    return true;
}

/* SCAN's options after the cursor; false when one is wrong (the error is written). */
static bool scan_options(struct pending *p, struct scan_walk *w)
{
    const struct resp_cmd *cmd = p->cmd;

    for (size_t i = 2; i < cmd->argc; i += 2) {
        if (i + 1 >= cmd->argc) {
            client_error(p, "ERR syntax error");
            return false;
        }
        if (resp_arg_is(cmd, i, "count")) {
            if (!scan_count(p, &cmd->argv[i + 1], &w->budget)) {
                return false;
            }
        } else if (resp_arg_is(cmd, i, "match")) {
            scan_set_pattern(w, &cmd->argv[i + 1]);
        } else if (resp_arg_is(cmd, i, "type")) {
            w->none = strcasecmp((const char *)cmd->argv[i + 1].p, "string") != 0;
        } else {
            client_error(p, "ERR syntax error");
            return false;
        }
    }
    return true;
}

int scan_cmd_scan(struct client *c, struct pending *p)
{
    struct scan_walk w = {.budget = SCAN_COUNT_DEFAULT, .gather = true, .now_ms = clock_wall_ms()};
    char text[SCAN_CURSOR_TEXT];
    struct buf keys;
    uint64_t pos;
    bool done = false;
    int rc;

    if (scan_cursor_parse((const char *)p->cmd->argv[1].p, p->cmd->argv[1].len, &pos) != 0) {
        client_error(p, "ERR invalid cursor");
        return CMD_DONE;
    }
    if (!scan_options(p, &w)) {
        return CMD_DONE;
    }
    buf_init(&keys, 0);
    w.keys = &keys;
    rc = scan_walk_from(c->node, &w, pos, &done);
    if (rc != 0) {
        client_error(p, "ERR scan failed: %s", rk_strerror(rc));
    } else {
        struct buf *out = client_reply(p);
        scan_cursor_format(w.next, done, text);
        resp_put_array(out, 2);
        resp_put_bulk_str(out, text);
        resp_put_array(out, w.n_keys);
        buf_append(out, buf_data(&keys), keys.len);
    }
    buf_free(&keys);
    return CMD_DONE;
}

int scan_cmd_keys(struct client *c, struct pending *p)
{
    struct scan_walk w = {.budget = SCAN_KEYS_MAX, .gather = true, .now_ms = clock_wall_ms()};
    struct store_stats st;
    struct buf keys;
    bool done = false;
    int rc;

    store_get_stats(c->node->store, &st);
    if (st.keys > SCAN_KEYS_MAX) {
        client_error(p,
                     "ERR KEYS answers at most %d stored keys at once and this node holds "
                     "%" PRIu64 ": use SCAN",
                     SCAN_KEYS_MAX, st.keys);
        return CMD_DONE;
    }
    scan_set_pattern(&w, &p->cmd->argv[1]);
    buf_init(&keys, 0);
    w.keys = &keys;
    rc = scan_walk_from(c->node, &w, 0, &done);
    if (rc != 0) {
        client_error(p, "ERR scan failed: %s", rk_strerror(rc));
    } else if (!done) {
        client_error(p, "ERR KEYS answers at most %d stored keys at once: use SCAN", SCAN_KEYS_MAX);
    } else {
        resp_put_array(client_reply(p), w.n_keys);
        buf_append(client_reply(p), buf_data(&keys), keys.len);
    }
    buf_free(&keys);
    return CMD_DONE;
}

int scan_cmd_dbsize(struct client *c, struct pending *p)
{
    struct scan_walk w = {.budget = SIZE_MAX, .now_ms = clock_wall_ms()};
    bool done = false;
    int rc = scan_walk_from(c->node, &w, 0, &done);

    if (rc != 0) {
        client_error(p, "ERR scan failed: %s", rk_strerror(rc));
    } else {
        resp_put_int(client_reply(p), (int64_t)w.n_keys);
    }
    return CMD_DONE;
}
