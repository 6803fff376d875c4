/*
 * cli_verify.c - `ringkv verify HISTORY`: after the cluster has quiesced,
 * read every key a history (history.h, as `ringkv workload` writes it)
 * touched, and check that every acknowledged write is accounted for
 * (hcheck.h has the rules).
 *
 * Each key is read with KGET through every node the history used for it,
 * or through every -H node when any is given, and what it holds is the
 * union of the siblings they return.  --r N sends KGET key R N, an R
 * override; a node that refuses it is an error, not a pass.  The first
 * node read is asked for the cluster's conflicts setting (CONFIG GET
 * conflicts): under lww the checker takes every KSET as replacing what it
 * follows (hcheck_opts.lww).
 *
 * Output: the counts and the conflicts setting, then one line per
 * violation naming the kind, the key
 * and the history lines involved; --json gives the same as one object.
 * Exit 0 when there is no violation, 1 when there is one (or a node could
 * not be read), 2 on a usage error or a history that cannot be read.
 */
#include "cli_verify.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_data.h"
#include "cli_workload.h"
#include "error.h"
#include "hcheck.h"
#include "history.h"
#include "num.h"
#include "respc.h"

#define VERIFY_USAGE                                                                               \
    "ringkv verify [-H HOST[:PORT]]... [-t SECONDS] [--json] [--monotonic] [--r N]\n"              \
    "                     [--allow-loss-after-us T] HISTORY"

enum { OPT_JSON = 256, OPT_MONOTONIC, OPT_R, OPT_LOSS };

struct verify_opts {
    struct cli_nodes nodes; /* -H: read every key through these; none: the history's */
    bool json;
    struct hcheck_opts check;
    long r; /* 0: no override */
    const char *path;
};

/* The open connections, one per node name. */
struct verify_conns {
    struct respc_opts base; /* timeout and password for every node */
    char **names;
    struct respc **c;
    size_t n, cap;
};

static int verify_parse(int argc, char **argv, struct verify_opts *o)
{
    static const struct option opts[] = {{"host", required_argument, NULL, 'H'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, OPT_JSON},
                                         {"monotonic", no_argument, NULL, OPT_MONOTONIC},
                                         {"r", required_argument, NULL, OPT_R},
                                         {"allow-loss-after-us", required_argument, NULL, OPT_LOSS},
                                         {0, 0, 0, 0}};
    const char *timeout = NULL;
    uint64_t t;
    int c, rc;

    memset(o, 0, sizeof(*o));
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":H:t:", opts, NULL)) != -1) {
        if (c == 'H') {
            rc = cli_nodes_add(&o->nodes, optarg, VERIFY_USAGE);
        } else if (c == 't') {
            timeout = optarg;
            rc = 0;
        } else if (c == OPT_JSON || c == OPT_MONOTONIC) {
            *(c == OPT_JSON ? &o->json : &o->check.monotonic) = true;
            rc = 0;
        } else if (c == OPT_R) {
            rc = cli_parse_long("--r", optarg, 1, 255, &o->r) ? 0 : CLI_USAGE;
        } else if (c == OPT_LOSS) {
            rc = num_parse_u64(optarg, strlen(optarg), UINT64_MAX, &t) == 0
                     ? 0
                     : cli_usage(VERIFY_USAGE,
                                 "--allow-loss-after-us: '%s' is not a number of "
                                 "microseconds",
                                 optarg);
            o->check.loss_bound = true;
            o->check.loss_after_us = t;
        } else {
            rc = cli_usage(VERIFY_USAGE, "%s option '%s'", c == ':' ? "no value for" : "unknown",
                           argv[optind - 1]);
        }
        if (rc != 0) {
            return rc;
        }
    }
    if (optind != argc - 1) {
        return cli_usage(VERIFY_USAGE, "give one HISTORY file");
    }
    o->path = argv[optind];
    return cli_nodes_timeout(&o->nodes, timeout, VERIFY_USAGE);
}

/* The connection to node name (connecting on first use); NULL after reporting an error. */
static struct respc *verify_conn(struct verify_conns *vc, const char *name)
{
    struct respc_opts o = vc->base;
    char err[512];

    for (size_t i = 0; i < vc->n; i++) {
        if (strcmp(vc->names[i], name) == 0) {
            return vc->c[i];
        }
    }
    if (vc->n == vc->cap) {
        size_t cap = vc->cap ? 2 * vc->cap : 8;
        char **names = realloc(vc->names, cap * sizeof(*names));
        struct respc **c = names == NULL ? NULL : realloc(vc->c, cap * sizeof(*c));
        vc->names = names != NULL ? names : vc->names;
        vc->c = c != NULL ? c : vc->c;
        if (c == NULL) {
            cli_error("out of memory");
            return NULL;
        }
        vc->cap = cap;
    }
    if (respc_opts_set_addr(&o, name, "the history's node", err, sizeof(err)) != 0 ||
        respc_connect(&vc->c[vc->n], &o, err, sizeof(err)) != 0) {
        cli_error("%s", err);
        return NULL;
    }
    vc->names[vc->n] = strdup(name);
    if (vc->names[vc->n] == NULL) {
        respc_close(vc->c[vc->n]);
        cli_error("out of memory");
        return NULL;
    }
    return vc->c[vc->n++];
}

static void verify_conns_close(struct verify_conns *vc)
{
    for (size_t i = 0; i < vc->n; i++) {
        respc_close(vc->c[i]);
        free(vc->names[i]);
    }
    free(vc->names);
    free(vc->c);
}

/* Add the siblings of a KGET reply to vals (no duplicates); CLI_ERROR on a reply of another shape.
 */
static int verify_siblings(const struct resp_reply *r, struct history_str *vals, size_t *n,
                           size_t max)
{
    const struct resp_reply *s;

    if (r->type != RESP_T_ARRAY || r->n != 2 || r->elem[1]->type != RESP_T_ARRAY) {
        return cli_error("KGET replied with a %s, not [context, [value, ...]]",
                         respc_type_name(r->type));
    }
    s = r->elem[1];
    for (size_t i = 0; i < s->n; i++) {
        bool dup = false;
        if (s->elem[i]->type != RESP_T_BULK) {
            return cli_error("KGET replied with a sibling that is not a bulk string");
        }
        for (size_t j = 0; j < *n && !dup; j++) {
            dup = vals[j].len == s->elem[i]->len &&
                  memcmp(vals[j].p, s->elem[i]->str, vals[j].len) == 0;
        }
        if (!dup && *n == max) {
            return cli_error("KGET replied with more than %d siblings", HISTORY_LIST_MAX);
        }
        if (!dup) {
            vals[(*n)++] = (struct history_str){s->elem[i]->str, s->elem[i]->len};
        }
    }
    return 0;
}

/* Read key k through node name into vals; CLI_ERROR after reporting. */
static int verify_read(struct verify_conns *vc, const struct verify_opts *o,
                       const struct history_str *key, const char *name, struct history_str *vals,
                       size_t *n, struct resp_reply **keep, size_t *n_keep)
{
    struct respc *c = verify_conn(vc, name);
    char rbuf[16], err[512];
    const char *argv[4] = {"KGET", (const char *)key->p, "R", rbuf};
    size_t lens[4] = {4, key->len, 1, 0};
    struct resp_reply *r;

    if (c == NULL) {
        return CLI_ERROR;
    }
    lens[3] = (size_t)snprintf(rbuf, sizeof(rbuf), "%ld", o->r);
    if (respc_call(c, o->r > 0 ? 4 : 2, argv, lens, &r, err, sizeof(err)) != 0) {
        return cli_error("%s", err);
    }
    keep[(*n_keep)++] = r;
    if (r->type == RESP_T_ERROR && o->r > 0) {
        return cli_error("%s refused KGET with an R override (--r %ld): %s", name, o->r,
                         (const char *)r->str);
    }
    if (r->type == RESP_T_ERROR) {
        return cli_error("KGET through %s: %s", name, (const char *)r->str);
    }
    return verify_siblings(r, vals, n, HISTORY_LIST_MAX);
}

/* The nodes to read key k through: -H's, else those the history used for it (distinct). */
static size_t verify_key_nodes(const struct hcheck *hc, const struct verify_opts *o, size_t k,
                               const char **names, size_t max)
{
    const struct hcheck_key *key = &hc->keys[k];
    size_t n = 0;

    if (o->nodes.n > 0) {
        for (; n < o->nodes.n && n < max; n++) {
            names[n] = o->nodes.name[n];
        }
        return n;
    }
    for (size_t i = 0; i < key->n_ops && n < max; i++) {
        const char *name = hc->h->e[key->ops[i]].node;
        bool seen = false;
        for (size_t j = 0; j < n && !seen; j++) {
            seen = strcmp(names[j], name) == 0;
        }
        if (!seen) {
            names[n++] = name;
        }
    }
    return n;
}

/*
 * The cluster's conflicts setting, from node name (CONFIG GET conflicts):
 * under lww a KSET replaces a write its context did not see (hcheck_opts).
 * A node that does not say leaves the rules of siblings, with a warning.
 */
static int verify_conflicts(struct verify_conns *vc, const char *name, bool *lww)
{
    struct respc *c = verify_conn(vc, name);
    const char *argv[3] = {"CONFIG", "GET", "conflicts"};
    const size_t lens[3] = {6, 3, 9};
    struct resp_reply *r, *value;
    char err[512];

    if (c == NULL) {
        return CLI_ERROR;
    }
    if (respc_call(c, 3, argv, lens, &r, err, sizeof(err)) != 0) {
        return cli_error("%s", err);
    }
    if (r->type == RESP_T_ERROR && (strncmp((const char *)r->str, "NOAUTH", 6) == 0 ||
                                    strncmp((const char *)r->str, "WRONGPASS", 9) == 0)) {
        int rc = cli_error("%s: %s", name, (const char *)r->str);
        resp_reply_free(r);
        return rc;
    }
    /* the value: a map's first pair's (RESP3), an array's last element (RESP2) */
    value = r->type == RESP_T_MAP && r->n >= 1     ? r->elem[1]
            : r->type == RESP_T_ARRAY && r->n >= 1 ? r->elem[r->n - 1]
                                                   : NULL;
    if (value != NULL && value->str != NULL) {
        *lww = strcmp((const char *)value->str, "lww") == 0;
    } else {
        fprintf(stderr,
                "ringkv verify: %s did not say its conflicts setting (%s): checked as "
                "siblings\n",
                name, r->type == RESP_T_ERROR ? (const char *)r->str : "no value");
    }
    resp_reply_free(r);
    return 0;
}

/* Read every key and give the checker what it holds (and o->check.lww, the cluster's). */
static int verify_read_all(struct hcheck *hc, struct verify_opts *o)
{
    struct verify_conns vc = {.base = o->nodes.base};
    struct history_str *vals = calloc(HISTORY_LIST_MAX, sizeof(*vals));
    struct resp_reply *keep[CLI_NODES_MAX];
    const char *names[CLI_NODES_MAX];
    int rc = vals == NULL ? cli_error("out of memory") : 0;

    for (size_t k = 0; rc == 0 && k < hc->n_keys; k++) {
        size_t nn = verify_key_nodes(hc, o, k, names, CLI_NODES_MAX), n = 0, n_keep = 0;
        if (k == 0 && nn > 0) {
            rc = verify_conflicts(&vc, names[0], &o->check.lww);
        }
        for (size_t i = 0; rc == 0 && i < nn; i++) {
            rc = verify_read(&vc, o, &hc->keys[k].key, names[i], vals, &n, keep, &n_keep);
        }
        if (rc == 0 && hcheck_set_final(hc, k, vals, n) != 0) {
            rc = cli_error("out of memory");
        }
        for (size_t i = 0; i < n_keep; i++) {
            resp_reply_free(keep[i]);
        }
    }
    free(vals);
    verify_conns_close(&vc);
    return rc;
}

/* --- output ---------------------------------------------------------------------- */

static const struct verify_count {
    const char *name;
    size_t offset;
} verify_counts[] = {
    {"keys", offsetof(struct hcheck_counts, keys)},
    {"writes_ok", offsetof(struct hcheck_counts, writes_ok)},
    {"present", offsetof(struct hcheck_counts, present)},
    {"superseded", offsetof(struct hcheck_counts, superseded)},
    {"lost", offsetof(struct hcheck_counts, lost)},
    {"lost_allowed", offsetof(struct hcheck_counts, lost_allowed)},
    {"unknown", offsetof(struct hcheck_counts, unknown)},
    {"unknown_present", offsetof(struct hcheck_counts, unknown_present)},
    {"fail", offsetof(struct hcheck_counts, fail)},
    {"fail_present", offsetof(struct hcheck_counts, fail_present)},
    {"deletes_ok", offsetof(struct hcheck_counts, deletes_ok)},
    {"reads_checked", offsetof(struct hcheck_counts, reads_checked)},
};

#define VERIFY_COUNTS (sizeof(verify_counts) / sizeof(verify_counts[0]))

static size_t count_at(const struct hcheck_counts *c, size_t i)
{
    return *(const size_t *)((const char *)c + verify_counts[i].offset);
}

/* What each kind means, after "line N (...)". */
static const char *const verify_kind_text[] = {
    "is absent, and nothing that could have overwritten it is accounted for",
    "failed, yet its value is present",
    "is present, though an acknowledged write overwrote it",
    "is present, though an acknowledged delete removed it",
    "was never written by the history",
    "was read after a read that ended earlier had returned a newer value",
};

/* A byte string for people: quoted, with escapes (the history's own). */
static void print_str(FILE *f, const struct history_str *s)
{
    struct buf b;

    buf_init(&b, 0);
    if (history_json_str(&b, s->p, s->len) == 0) {
        fwrite(b.p + b.start, 1, b.len, f);
    }
    buf_free(&b);
}

static void print_op(const struct history *h, size_t i)
{
    const struct history_entry *e = &h->e[i];

    printf("line %zu (%s %s via %s, %llu..%llu us)", e->line, history_op_name(e->op),
           history_outcome_name(e->outcome), e->node, (unsigned long long)e->start,
           (unsigned long long)e->end);
}

static void verify_print(const struct hcheck *hc, bool lww)
{
    for (size_t i = 0; i < VERIFY_COUNTS; i++) {
        printf("%-16s %zu\n", verify_counts[i].name, count_at(&hc->counts, i));
    }
    printf("%-16s %llu\n", "last_ok_write_end_us",
           (unsigned long long)hc->counts.last_ok_write_end);
    printf("%-16s %s\n", "conflicts", lww ? "lww" : "siblings");
    for (size_t i = 0; i < hc->n_v; i++) {
        const struct hcheck_violation *v = &hc->v[i];
        printf("violation %s: key ", hcheck_kind_name(v->kind));
        print_str(stdout, &hc->keys[v->key].key);
        printf(": value ");
        print_str(stdout, v->value);
        if (v->op != SIZE_MAX) {
            printf(" of ");
            print_op(hc->h, v->op);
        }
        printf(" %s", verify_kind_text[v->kind]);
        if (v->other != SIZE_MAX) {
            printf(": ");
            print_op(hc->h, v->other);
        }
        printf("\n");
    }
    printf("%zu violation%s\n", hc->n_v, hc->n_v == 1 ? "" : "s");
}

static json_t *line_json(const struct history *h, size_t i)
{
    return i == SIZE_MAX ? json_null() : json_integer((json_int_t)h->e[i].line);
}

static int verify_json(const struct hcheck *hc, bool lww)
{
    json_t *counts = json_object(), *vs = json_array();

    for (size_t i = 0; i < VERIFY_COUNTS; i++) {
        json_object_set_new(counts, verify_counts[i].name,
                            json_integer((json_int_t)count_at(&hc->counts, i)));
    }
    json_object_set_new(counts, "last_ok_write_end_us",
                        json_integer((json_int_t)hc->counts.last_ok_write_end));
    for (size_t i = 0; i < hc->n_v; i++) {
        const struct hcheck_violation *v = &hc->v[i];
        const struct history_str *k = &hc->keys[v->key].key;
        json_array_append_new(
            vs, json_pack("{s:s, s:o, s:o, s:o, s:o}", "kind", hcheck_kind_name(v->kind), "key",
                          respc_json_bytes(k->p, k->len), "value",
                          respc_json_bytes(v->value->p, v->value->len), "line",
                          line_json(hc->h, v->op), "other_line", line_json(hc->h, v->other)));
    }
    return cli_json_print(json_pack("{s:o, s:o, s:b, s:s}", "counts", counts, "violations", vs,
                                    "clean", hc->n_v == 0, "conflicts", lww ? "lww" : "siblings"));
}

int cli_verify(int argc, char **argv)
{
    struct history h = {0};
    struct verify_opts o;
    struct hcheck hc = {0};
    char err[512];
    uint8_t *data = NULL;
    size_t len;
    int rc = verify_parse(argc, argv, &o);

    if (rc != 0) {
        return rc;
    }
    if (cli_read_file(o.path, (char **)&data, &len) != 0) {
        return CLI_USAGE;
    }
    if (history_parse(&h, data, len, err, sizeof(err)) != 0 ||
        hcheck_init(&hc, &h, err, sizeof(err)) != 0) {
        rc = cli_usage(VERIFY_USAGE, "%s: %s", o.path, err);
        goto out_free;
    }
    if (h.n == 0) { /* nothing recorded proves nothing: never a pass */
        rc = cli_usage(VERIFY_USAGE, "%s holds no operations", o.path);
        goto out_free;
    }
    rc = verify_read_all(&hc, &o);
    if (rc == 0 && hcheck_run(&hc, &o.check) != 0) {
        rc = cli_error("out of memory");
    }
    if (rc == 0) {
        (void)(o.json ? verify_json(&hc, o.check.lww) : (verify_print(&hc, o.check.lww), 0));
        rc = hc.n_v == 0 ? CLI_OK : CLI_ERROR;
    }
out_free:
    hcheck_free(&hc);
    history_free(&h);
    free(data);
    return rc;
}
