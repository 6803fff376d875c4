/*
 * fuzz_view.c - fuzz target for the CLI's readers of admin replies
 * (src/cli/cli_view.c: RINGKV STATUS, STATUS DEEP, MEMBERS, RING,
 * REPLICAS and HINTS as `ringkv status`, `members`, `ring`, `replicas`
 * and `hints` read them) and for the generic
 * reply printers of `ringkv` data verbs (respc_reply_format(),
 * respc_reply_json()): everything a node, or something posing as one,
 * sends to the CLI.
 *
 * Input: one byte choosing the reader, then the reply's RESP bytes.  A
 * reply that parses is read by that view; when the view takes it, every
 * output it has (table, JSON, dot graph, health) is produced, into
 * /dev/null.  Beyond "no crash, no leak" under ASan, UBSan must stay
 * quiet: that is what catches a fraction converted to int out of range
 * (`ring --dot`'s edge weights).  A refusal must come with a one-line
 * sentence; a view that takes a reply must give JSON.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli_view.h"
#include "error.h"
#include "fuzz.h"
#include "resp.h"
#include "respc.h"

/* The bulk bound of the parse: large enough for any seed, small enough to stay fast. */
#define FUZZ_VIEW_MAX_BULK (64 * 1024)

static FILE *fuzz_sink(void)
{
    static FILE *f;

    if (f == NULL) {
        f = fopen("/dev/null", "w");
        if (f == NULL) {
            abort();
        }
    }
    return f;
}

/* A refusal: RK_ESYNTAX or RK_ENOMEM, with a one-line sentence. */
static void fuzz_refused(int rc, const char *err)
{
    if (rc != RK_ESYNTAX && rc != RK_ENOMEM) {
        abort();
    }
    if (err[0] == '\0' || strchr(err, '\n') != NULL) {
        abort();
    }
}

/* JSON was given (a view that took its reply converts all of it) and is printable. */
static void fuzz_json(json_t *j)
{
    char *text;

    if (j == NULL) {
        abort();
    }
    text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    free(text);
    json_decref(j);
}

static void fuzz_status(const struct resp_reply *r)
{
    struct view_status s;
    char err[256] = "";
    int rc = view_status_parse(&s, r, err, sizeof(err));

    if (rc != 0) {
        fuzz_refused(rc, err);
        return;
    }
    (void)view_status_healthy(&s);
    for (size_t i = 0; i < s.n; i++) {
        char code[3];
        view_member_code(&s.members[i], code);
        (void)view_member_current(&s.members[i]);
    }
    view_status_table(fuzz_sink(), &s);
    fuzz_json(view_status_json(&s));
    view_status_free(&s);
}

static void fuzz_deep(const struct resp_reply *r)
{
    struct view_deep d;
    char err[256] = "";
    int rc = view_deep_parse(&d, r, err, sizeof(err));

    if (rc != 0) {
        fuzz_refused(rc, err);
        return;
    }
    (void)view_deep_healthy(&d);
    view_deep_table(fuzz_sink(), &d);
    fuzz_json(view_deep_json(&d));
    view_deep_free(&d);
}

static void fuzz_members(const struct resp_reply *r)
{
    struct view_members v;
    char err[256] = "";
    int rc = view_members_parse(&v, r, err, sizeof(err));

    if (rc != 0) {
        fuzz_refused(rc, err);
        return;
    }
    view_members_table(fuzz_sink(), &v);
    fuzz_json(view_members_json(&v));
    view_members_free(&v);
}

static void fuzz_ring(const struct resp_reply *r)
{
    struct view_ring v;
    char err[256] = "";
    int rc = view_ring_parse(&v, r, err, sizeof(err));

    if (rc != 0) {
        fuzz_refused(rc, err);
        return;
    }
    for (size_t i = 0; i < v.n; i++) {
        if (!(v.arcs[i].fraction >= 0.0 && v.arcs[i].fraction <= 1.0)) {
            abort();
        }
    }
    view_ring_table(fuzz_sink(), &v);
    view_ring_dot(fuzz_sink(), &v);
    fuzz_json(view_ring_json(&v));
    view_ring_free(&v);
}

static void fuzz_replicas(const struct resp_reply *r)
{
    static const uint8_t key[] = {'k', 0x1b, 0xff};
    struct view_replicas v;
    char err[256] = "";
    int rc = view_replicas_parse(&v, r, err, sizeof(err));

    if (rc != 0) {
        fuzz_refused(rc, err);
        return;
    }
    if (view_replicas_agree(&v) && !view_replicas_answered(&v)) {
        abort(); /* agreeing replicas all answered */
    }
    view_replicas_table(fuzz_sink(), key, sizeof(key), &v);
    fuzz_json(view_replicas_json(key, sizeof(key), &v));
    view_replicas_free(&v);
}

/* The reply as one node's answer, beside a node that did not answer. */
static void fuzz_hints(const struct resp_reply *r)
{
    struct view_hints_node n[2] = {{.addr = "127.0.0.1:7370"},
                                   {.node = "n9", .addr = "127.0.0.1:1", .error = "timed out"}};
    char err[256] = "";
    int rc = view_hints_parse(&n[0].h, r, err, sizeof(err));

    if (rc != 0) {
        fuzz_refused(rc, err);
        return;
    }
    for (size_t i = 0; i < n[0].h.n; i++) {
        if (n[0].h.t[i].hints < 0) {
            abort();
        }
    }
    view_hints_table(fuzz_sink(), n, 2);
    fuzz_json(view_hints_json(n, 2));
    view_hints_free(&n[0].h);
}

/* What `ringkv get` and the other data verbs print. */
static void fuzz_generic(const struct resp_reply *r)
{
    struct buf out;
    json_t *j;

    buf_init(&out, 0);
    respc_reply_format(&out, r);
    buf_free(&out);
    j = respc_reply_json(r);
    if (j != NULL) {
        json_decref(j);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const readers[])(const struct resp_reply *) = {
        fuzz_status, fuzz_deep, fuzz_members, fuzz_ring, fuzz_generic, fuzz_replicas, fuzz_hints};
    struct resp_reply *r;
    size_t used;

    if (size < 1) {
        return 0;
    }
    if (resp_reply_parse(data + 1, size - 1, FUZZ_VIEW_MAX_BULK, &used, &r) != 1) {
        return 0;
    }
    readers[data[0] % (sizeof(readers) / sizeof(readers[0]))](r);
    resp_reply_free(r);
    return 0;
}
