/*
 * cli_workload.c - `ringkv workload`: a bounded client workload on one or
 * more nodes that records every operation it makes to a history file
 * (history.h), for `ringkv verify` to check.
 *
 *   ringkv workload --keys N --duration SECONDS --history FILE
 *          [-H HOST[:PORT]]... [-t SECONDS] [--concurrency C] [--rate OPS]
 *          [--mix R:W:D] [--causal] [--spread pinned|random] [--ops N]
 *          [--prefix P] [--json]
 *
 * C worker threads each run one operation at a time on their own
 * connections (one per node, opened on first use), until the duration is
 * over, --ops operations were started, or SIGINT/SIGTERM (operations in
 * flight then still end, within -t).  Each picks a key "P<i>" (i below N;
 * P is "wl:RUN:" by default, RUN the run id, so a run never reads what an
 * earlier one left) and an operation by the --mix weights: a read (GET),
 * a write (SET of a value no other write of the run uses: a random run id,
 * the worker and its sequence number) or a delete (DEL).  With --causal a
 * read is a KGET and a write is a KGET then a KSET with the context it
 * returned, recorded as two operations, the kset's context_of listing what
 * the KGET returned.  --rate spreads the operations' starts evenly over
 * time (all workers together); without it they go as fast as the nodes
 * answer.
 *
 * Which node: by default key i always goes to node i mod H (--spread
 * pinned), so a node's own view of its keys is what is checked; --spread
 * random sends each operation to any node, so reads cross the replicas
 * that writes went through.
 *
 * Outcomes: ok for the reply the command promises, fail for an error
 * reply, unknown when no reply came (the -t timeout, or the connection was
 * lost: a killed node), which may or may not have been applied; a write
 * refused with -TRYAGAIN is unknown too: its coordinator tried it, and the
 * replicas that answered hold it.  A worker
 * whose connection was lost reconnects on its next operation for that
 * node; when connecting fails it leaves the node alone for a back-off
 * (WORKLOAD_BACKOFF_MIN_US, doubling to WORKLOAD_BACKOFF_MAX_US) and
 * records nothing for what it did not send, so the workload goes on
 * through killed and restarted nodes.
 *
 * The history is written as operations end, flushed every
 * WORKLOAD_TICK_US, so a test can watch it grow.  On a terminal stderr
 * shows a progress line each second; at the end stdout gets a summary:
 * per operation its counts by outcome and the latency (ok ones) at p50,
 * p99 and max.  Exit 0, or 3 when no operation reached a node (1 and 2 as
 * every verb: an error, a usage error).
 */
#include "cli_workload.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_data.h"
#include "clock.h"
#include "error.h"
#include "hex.h"
#include "history.h"

#define WORKLOAD_USAGE                                                                             \
    "ringkv workload --keys N --duration SECONDS --history FILE [-H HOST[:PORT]]...\n"             \
    "                       [-t SECONDS] [--concurrency C] [--rate OPS] [--mix R:W:D] "            \
    "[--causal]\n"                                                                                 \
    "                       [--spread pinned|random] [--ops N] [--prefix P] [--json]"

/* Reconnecting to a node that refused: first after 50 ms, doubling to 1 s (a restart's scale). */
#define WORKLOAD_BACKOFF_MIN_US 50000
#define WORKLOAD_BACKOFF_MAX_US 1000000
/* How often the history is flushed and the clock checked; progress every 10 ticks. */
#define WORKLOAD_TICK_US 100000
#define WORKLOAD_THREADS_MAX 256
#define WORKLOAD_DURATION_MAX (24L * 3600)
#define WORKLOAD_KEYS_MAX 100000000L
#define WORKLOAD_PREFIX_MAX 64

enum wl_kind { WL_READ, WL_WRITE, WL_DELETE };

enum {
    OPT_KEYS = 256,
    OPT_DURATION,
    OPT_HISTORY,
    OPT_CONC,
    OPT_RATE,
    OPT_MIX,
    OPT_CAUSAL,
    OPT_SPREAD,
    OPT_OPS,
    OPT_PREFIX,
    OPT_JSON
};

struct wl_config {
    struct cli_nodes nodes;
    long keys, duration_s, concurrency, rate, ops;
    long mix[3]; /* weights of read, write, delete */
    bool causal, spread_random, json;
    const char *history, *prefix;
};

/* Latencies and counts of one op kind. */
struct wl_stat {
    size_t n[3];   /* by outcome */
    uint32_t *lat; /* ok ops' latencies, us (capped at UINT32_MAX) */
    size_t n_lat, cap_lat;
};

struct wl_shared {
    const struct wl_config *cfg;
    char run[9]; /* the run id in every value */
    uint64_t t0, deadline;
    atomic_ulong next; /* operations started */
    atomic_bool stop;
    atomic_uint running; /* workers not yet done */
    pthread_mutex_t mu;  /* everything below */
    FILE *out;
    int write_error;        /* errno of a failed history write, stops the run */
    struct wl_stat stat[5]; /* by enum history_op */
    size_t connect_failures;
};

/* One worker: its connections and its random stream. */
struct wl_worker {
    struct wl_shared *sh;
    unsigned id;
    pthread_t thread;
    bool thread_started;
    struct respc *c[CLI_NODES_MAX];
    uint64_t retry_at[CLI_NODES_MAX], backoff[CLI_NODES_MAX];
    uint64_t seq, rng;
    struct buf line;
};

static volatile sig_atomic_t wl_signalled;

static void wl_on_signal(int sig)
{
    (void)sig;
    wl_signalled = 1;
}

/* --- nodes (shared with verify) -------------------------------------------------- */

void cli_node_name(const struct respc_opts *o, char *out, size_t len)
{
    snprintf(out, len, strchr(o->host, ':') != NULL ? "[%s]:%u" : "%s:%u", o->host,
             (unsigned)o->port);
}

int cli_nodes_add(struct cli_nodes *ns, const char *addr, const char *usage)
{
    char err[512];

    if (ns->n == CLI_NODES_MAX) {
        return cli_usage(usage, "-H given more than %d times", CLI_NODES_MAX);
    }
    respc_opts_init(&ns->o[ns->n]);
    if (respc_opts_set_addr(&ns->o[ns->n], addr, "-H", err, sizeof(err)) != 0) {
        return cli_usage(usage, "%s", err);
    }
    cli_node_name(&ns->o[ns->n], ns->name[ns->n], sizeof(ns->name[ns->n]));
    ns->n++;
    return 0;
}

int cli_nodes_timeout(struct cli_nodes *ns, const char *timeout, const char *usage)
{
    int rc = cli_data_conn_set(&ns->base, NULL, timeout, usage);

    for (size_t i = 0; rc == 0 && i < ns->n; i++) {
        ns->o[i].timeout_ms = ns->base.timeout_ms;
        ns->o[i].password = ns->base.password;
    }
    return rc;
}

/* --- options --------------------------------------------------------------------- */

/* "R:W:D": three weights, at least one above 0. */
static int wl_parse_mix(const char *s, long mix[3])
{
    const char *p = s;
    long sum = 0;

    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        mix[i] = strtol(p, &end, 10);
        if (end == p || *p == '-' || *p == '+' || errno != 0 || mix[i] > 1000000 ||
            *end != (i < 2 ? ':' : '\0')) {
            return cli_usage(WORKLOAD_USAGE, "--mix: '%s' is not READS:WRITES:DELETES", s);
        }
        sum += mix[i];
        p = end + 1;
    }
    return sum > 0 ? 0 : cli_usage(WORKLOAD_USAGE, "--mix: the weights are all 0");
}

static int wl_option(struct wl_config *cfg, int c, const char *v)
{
    switch (c) {
    case OPT_KEYS:
        return cli_parse_long("--keys", v, 1, WORKLOAD_KEYS_MAX, &cfg->keys) ? 0 : CLI_USAGE;
    case OPT_DURATION:
        return cli_parse_long("--duration", v, 1, WORKLOAD_DURATION_MAX, &cfg->duration_s)
                   ? 0
                   : CLI_USAGE;
    case OPT_CONC:
        return cli_parse_long("--concurrency", v, 1, WORKLOAD_THREADS_MAX, &cfg->concurrency)
                   ? 0
                   : CLI_USAGE;
    case OPT_RATE:
        return cli_parse_long("--rate", v, 1, 10000000, &cfg->rate) ? 0 : CLI_USAGE;
    case OPT_OPS:
        return cli_parse_long("--ops", v, 1, 1000000000L, &cfg->ops) ? 0 : CLI_USAGE;
    case OPT_MIX:
        return wl_parse_mix(v, cfg->mix);
    case OPT_SPREAD:
        if (strcmp(v, "pinned") != 0 && strcmp(v, "random") != 0) {
            return cli_usage(WORKLOAD_USAGE, "--spread: '%s' is neither pinned nor random", v);
        }
        cfg->spread_random = strcmp(v, "random") == 0;
        return 0;
    case OPT_PREFIX:
        cfg->prefix = v;
        return strlen(v) <= WORKLOAD_PREFIX_MAX
                   ? 0
                   : cli_usage(WORKLOAD_USAGE, "--prefix: longer than %d bytes",
                               WORKLOAD_PREFIX_MAX);
    default:
        return cli_usage(WORKLOAD_USAGE, "unknown option");
    }
}

static int wl_parse(int argc, char **argv, struct wl_config *cfg)
{
    static const struct option opts[] = {{"host", required_argument, NULL, 'H'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"keys", required_argument, NULL, OPT_KEYS},
                                         {"duration", required_argument, NULL, OPT_DURATION},
                                         {"history", required_argument, NULL, OPT_HISTORY},
                                         {"concurrency", required_argument, NULL, OPT_CONC},
                                         {"rate", required_argument, NULL, OPT_RATE},
                                         {"mix", required_argument, NULL, OPT_MIX},
                                         {"causal", no_argument, NULL, OPT_CAUSAL},
                                         {"spread", required_argument, NULL, OPT_SPREAD},
                                         {"ops", required_argument, NULL, OPT_OPS},
                                         {"prefix", required_argument, NULL, OPT_PREFIX},
                                         {"json", no_argument, NULL, OPT_JSON},
                                         {0, 0, 0, 0}};
    const char *timeout = NULL;
    int c, rc = 0;

    memset(cfg, 0, sizeof(*cfg));
    cfg->concurrency = 4;
    cfg->mix[0] = 5, cfg->mix[1] = 4, cfg->mix[2] = 1;
    optind = 0;
    opterr = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, ":H:t:", opts, NULL)) != -1) {
        if (c == 'H') {
            rc = cli_nodes_add(&cfg->nodes, optarg, WORKLOAD_USAGE);
        } else if (c == 't') {
            timeout = optarg;
        } else if (c == OPT_HISTORY || c == OPT_CAUSAL || c == OPT_JSON) {
            cfg->history = c == OPT_HISTORY ? optarg : cfg->history;
            cfg->causal |= c == OPT_CAUSAL;
            cfg->json |= c == OPT_JSON;
        } else if (c == ':' || c == '?') {
            rc = cli_usage(WORKLOAD_USAGE, "%s option '%s'", c == ':' ? "no value for" : "unknown",
                           argv[optind - 1]);
        } else {
            rc = wl_option(cfg, c, optarg);
        }
    }
    if (rc == 0 && (optind != argc || cfg->keys == 0 || cfg->duration_s == 0 || !cfg->history)) {
        rc = cli_usage(WORKLOAD_USAGE, "give --keys, --duration and --history, and no operands");
    }
    rc = rc ? rc : cli_nodes_timeout(&cfg->nodes, timeout, WORKLOAD_USAGE);
    if (rc == 0 && cfg->nodes.n == 0) { /* no -H: the verbs' usual node */
        cfg->nodes.o[0] = cfg->nodes.base;
        cli_node_name(&cfg->nodes.base, cfg->nodes.name[0], sizeof(cfg->nodes.name[0]));
        cfg->nodes.n = 1;
    }
    return rc;
}

/* --- one operation --------------------------------------------------------------- */

/* xorshift64*: each worker's own stream, seeded from libsodium. */
static uint64_t wl_rand(struct wl_worker *w)
{
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return w->rng * 2685821657736338717ull;
}

static void wl_sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The worker's connection to node i, connecting when it has none; NULL while backing off. */
static struct respc *wl_conn(struct wl_worker *w, size_t i)
{
    uint64_t now = clock_mono_us();
    char err[512];

    if (w->c[i] != NULL || now < w->retry_at[i]) {
        return w->c[i];
    }
    if (respc_connect(&w->c[i], &w->sh->cfg->nodes.o[i], err, sizeof(err)) == 0) {
        w->backoff[i] = 0;
        return w->c[i];
    }
    w->c[i] = NULL;
    w->backoff[i] = w->backoff[i] == 0 ? WORKLOAD_BACKOFF_MIN_US : 2 * w->backoff[i];
    w->backoff[i] =
        w->backoff[i] > WORKLOAD_BACKOFF_MAX_US ? WORKLOAD_BACKOFF_MAX_US : w->backoff[i];
    w->retry_at[i] = now + w->backoff[i];
    pthread_mutex_lock(&w->sh->mu);
    w->sh->connect_failures++;
    pthread_mutex_unlock(&w->sh->mu);
    return NULL;
}

/* Append e to the history and its latency to the statistics. */
static void wl_record(struct wl_worker *w, const struct history_entry *e)
{
    struct wl_shared *sh = w->sh;
    struct wl_stat *st = &sh->stat[e->op];
    uint64_t lat = e->end - e->start;
    bool formatted;

    buf_clear(&w->line);
    formatted = history_entry_format(&w->line, e) == 0;
    pthread_mutex_lock(&sh->mu);
    if ((!formatted || fwrite(w->line.p + w->line.start, 1, w->line.len, sh->out) != w->line.len) &&
        sh->write_error == 0) { /* a history missing an operation proves nothing: stop */
        sh->write_error = !formatted ? ENOMEM : errno ? errno : EIO;
        atomic_store(&sh->stop, true);
    }
    st->n[e->outcome]++;
    if (e->outcome == HISTORY_OK) {
        if (st->n_lat == st->cap_lat) {
            size_t cap = st->cap_lat ? 2 * st->cap_lat : 4096;
            uint32_t *lats = realloc(st->lat, cap * sizeof(*lats));
            st->lat = lats != NULL ? lats : st->lat;
            st->cap_lat = lats != NULL ? cap : st->cap_lat;
        }
        if (st->n_lat < st->cap_lat) {
            st->lat[st->n_lat++] = lat > UINT32_MAX ? UINT32_MAX : (uint32_t)lat;
        }
    }
    pthread_mutex_unlock(&sh->mu);
}

/*
 * Send one command to node i for e (op, key, value set by the caller) and
 * fill in e's times and outcome; *reply is the reply when the outcome is
 * ok (the caller frees it, and may turn the outcome into fail when its
 * shape is wrong).  A lost connection is closed, so the next op reconnects.
 */
static void wl_call(struct wl_worker *w, size_t i, size_t argc, const char *const *argv,
                    const size_t *lens, struct history_entry *e, struct resp_reply **reply,
                    char *err, size_t err_len)
{
    int rc;

    *reply = NULL;
    e->node = (char *)w->sh->cfg->nodes.name[i]; /* borrowed: e is only formatted */
    e->start = clock_mono_us();
    rc = respc_call(w->c[i], argc, argv, lens, reply, err, err_len);
    e->end = clock_mono_us();
    e->error = NULL;
    e->outcome = HISTORY_OK;
    if (rc != 0) {
        respc_close(w->c[i]);
        w->c[i] = NULL;
        e->outcome = HISTORY_UNKNOWN;
        e->error = err;
    } else if ((*reply)->type == RESP_T_ERROR) {
        snprintf(err, err_len, "%s", (const char *)(*reply)->str);
        resp_reply_free(*reply);
        *reply = NULL;
        bool tried =
            strncmp(err, "TRYAGAIN", 8) == 0 && e->op != HISTORY_GET && e->op != HISTORY_KGET;
        e->outcome = tried ? HISTORY_UNKNOWN : HISTORY_FAIL;
        e->error = err;
    }
}

/* A reply of the wrong shape for an op: fail for a read, unknown for a write (it may have applied).
 */
static void wl_bad_reply(struct history_entry *e, struct resp_reply **reply, char *err,
                         size_t err_len)
{
    snprintf(err, err_len, "unexpected %s reply", respc_type_name((*reply)->type));
    resp_reply_free(*reply);
    *reply = NULL;
    e->outcome = e->op == HISTORY_GET || e->op == HISTORY_KGET ? HISTORY_FAIL : HISTORY_UNKNOWN;
    e->error = err;
}

static bool wl_is_ok(const struct resp_reply *r)
{
    return r->type == RESP_T_SIMPLE && strcmp((const char *)r->str, "OK") == 0;
}

/* GET, SET or DEL of key through node i. */
static void wl_blind(struct wl_worker *w, size_t i, enum wl_kind kind, const char *key,
                     const char *value)
{
    static const char *const cmd[] = {"GET", "SET", "DEL"};
    static const enum history_op ops[] = {HISTORY_GET, HISTORY_SET, HISTORY_DEL};
    const char *argv[3] = {cmd[kind], key, value};
    struct history_entry e = {.op = ops[kind], .key = {(uint8_t *)key, strlen(key)}};
    struct resp_reply *r;
    char err[512];
    bool shape;

    if (kind == WL_WRITE) {
        e.has_value = true;
        e.value = (struct history_str){(uint8_t *)value, strlen(value)};
    }
    wl_call(w, i, kind == WL_WRITE ? 3 : 2, argv, NULL, &e, &r, err, sizeof(err));
    if (r != NULL) {
        shape = kind == WL_WRITE    ? wl_is_ok(r)
                : kind == WL_DELETE ? r->type == RESP_T_INT
                                    : r->type == RESP_T_BULK || r->type == RESP_T_NULL;
        if (!shape) {
            wl_bad_reply(&e, &r, err, sizeof(err));
        } else if (kind == WL_READ && r->type == RESP_T_BULK) {
            e.has_value = true;
            e.value = (struct history_str){r->str, r->len};
        }
    }
    wl_record(w, &e);
    resp_reply_free(r);
}

/* A KGET reply's siblings into e->values (borrowed from r); false when it has another shape. */
static bool wl_kget_values(const struct resp_reply *r, struct history_entry *e)
{
    const struct resp_reply *s;

    if (r->type != RESP_T_ARRAY || r->n != 2 || r->elem[0]->type != RESP_T_BULK ||
        r->elem[1]->type != RESP_T_ARRAY || r->elem[1]->n > HISTORY_LIST_MAX) {
        return false;
    }
    s = r->elem[1];
    e->values = calloc(s->n + 1, sizeof(*e->values));
    if (e->values == NULL) {
        return false;
    }
    for (e->n_values = 0; e->n_values < s->n; e->n_values++) {
        if (s->elem[e->n_values]->type != RESP_T_BULK) {
            return false;
        }
        e->values[e->n_values] =
            (struct history_str){s->elem[e->n_values]->str, s->elem[e->n_values]->len};
    }
    return true;
}

/* KSET key value CONTEXT ctx, ctx from the KGET reply r that g recorded. */
static void wl_kset(struct wl_worker *w, size_t i, const struct history_entry *g,
                    const struct resp_reply *r, const char *value)
{
    const char *argv[5] = {"KSET", (const char *)g->key.p, value, "CONTEXT",
                           (const char *)r->elem[0]->str};
    size_t lens[5] = {4, g->key.len, strlen(value), 7, r->elem[0]->len};
    struct history_entry e = {.op = HISTORY_KSET,
                              .key = g->key,
                              .has_value = true,
                              .value = {(uint8_t *)value, lens[2]},
                              .has_context = true,
                              .context = g->values,
                              .n_context = g->n_values};
    struct resp_reply *k;
    char err[512];

    wl_call(w, i, 5, argv, lens, &e, &k, err, sizeof(err));
    if (k != NULL && !wl_is_ok(k)) {
        wl_bad_reply(&e, &k, err, sizeof(err));
    }
    wl_record(w, &e);
    resp_reply_free(k);
}

/* --causal: a read is a KGET; a write a KGET, then a KSET with its context. */
static void wl_causal(struct wl_worker *w, size_t i, enum wl_kind kind, const char *key,
                      const char *value)
{
    const char *argv[2] = {"KGET", key};
    struct history_entry e = {.op = HISTORY_KGET, .key = {(uint8_t *)key, strlen(key)}};
    struct resp_reply *r;
    char err[512];

    wl_call(w, i, 2, argv, NULL, &e, &r, err, sizeof(err));
    if (r != NULL && !wl_kget_values(r, &e)) {
        wl_bad_reply(&e, &r, err, sizeof(err));
        e.n_values = 0;
    }
    wl_record(w, &e);
    if (kind == WL_WRITE && e.outcome == HISTORY_OK && w->c[i] != NULL) {
        wl_kset(w, i, &e, r, value);
    }
    free(e.values);
    resp_reply_free(r);
}

/* --- the run --------------------------------------------------------------------- */

static enum wl_kind wl_pick_kind(struct wl_worker *w)
{
    const long *mix = w->sh->cfg->mix;
    uint64_t x = wl_rand(w) % (uint64_t)(mix[0] + mix[1] + mix[2]);

    return x < (uint64_t)mix[0] ? WL_READ : x < (uint64_t)(mix[0] + mix[1]) ? WL_WRITE : WL_DELETE;
}

/* Wait for operation n's turn under --rate; false when the run ends first. */
static bool wl_pace(struct wl_worker *w, unsigned long n)
{
    struct wl_shared *sh = w->sh;
    uint64_t due;

    if (sh->cfg->rate == 0) {
        return true;
    }
    due = sh->t0 + (uint64_t)((double)n * 1e6 / (double)sh->cfg->rate);
    for (uint64_t now = clock_mono_us(); now < due; now = clock_mono_us()) {
        if (due >= sh->deadline || atomic_load(&sh->stop)) {
            return false;
        }
        wl_sleep_us(due - now < WORKLOAD_TICK_US ? due - now : WORKLOAD_TICK_US);
    }
    return true;
}

static void *wl_worker_run(void *arg)
{
    struct wl_worker *w = arg;
    struct wl_shared *sh = w->sh;
    const struct wl_config *cfg = sh->cfg;
    char key[WORKLOAD_PREFIX_MAX + 24], value[64];

    while (!atomic_load(&sh->stop) && clock_mono_us() < sh->deadline) {
        uint64_t k = wl_rand(w) % (uint64_t)cfg->keys;
        size_t node = (size_t)((cfg->spread_random ? wl_rand(w) : k) % cfg->nodes.n);
        enum wl_kind kind = wl_pick_kind(w);
        unsigned long n;
        if (wl_conn(w, node) == NULL) {
            wl_sleep_us(WORKLOAD_BACKOFF_MIN_US / 5);
            continue;
        }
        n = atomic_fetch_add(&sh->next, 1);
        if ((cfg->ops > 0 && n >= (unsigned long)cfg->ops) || !wl_pace(w, n)) {
            break;
        }
        snprintf(key, sizeof(key), "%s%llu", cfg->prefix, (unsigned long long)k);
        snprintf(value, sizeof(value), "%s:%u:%llu", sh->run, w->id, (unsigned long long)w->seq++);
        if (cfg->causal && kind != WL_DELETE) {
            wl_causal(w, node, kind, key, value);
        } else {
            wl_blind(w, node, kind, key, value);
        }
    }
    for (size_t i = 0; i < cfg->nodes.n; i++) {
        respc_close(w->c[i]);
    }
    atomic_fetch_sub(&sh->running, 1);
    return NULL;
}

static size_t wl_total(const struct wl_shared *sh, int outcome)
{
    size_t n = 0;

    for (int op = 0; op < 5; op++) {
        for (int o = 0; o < 3; o++) {
            n += outcome < 0 || o == outcome ? sh->stat[op].n[o] : 0;
        }
    }
    return n;
}

/* The progress line: elapsed, ops/s over the last second, errors so far. */
static void wl_progress(struct wl_shared *sh, size_t *last, bool final)
{
    size_t total, fail, unknown, refused;

    pthread_mutex_lock(&sh->mu);
    total = wl_total(sh, -1);
    fail = wl_total(sh, HISTORY_FAIL);
    unknown = wl_total(sh, HISTORY_UNKNOWN);
    refused = sh->connect_failures;
    pthread_mutex_unlock(&sh->mu);
    fprintf(stderr, "\r%6.1f s  %7zu ops/s  %zu fail  %zu unknown  %zu connect failures   %s",
            (double)(clock_mono_us() - sh->t0) / 1e6, total - *last, fail, unknown, refused,
            final ? "\n" : "");
    *last = total;
}

/* Tick until every worker is done: flush the history, pass on a signal, show progress. */
static void wl_watch(struct wl_shared *sh)
{
    bool tty = isatty(STDERR_FILENO);
    size_t last = 0;

    for (unsigned tick = 1; atomic_load(&sh->running) > 0; tick++) {
        wl_sleep_us(WORKLOAD_TICK_US);
        if (wl_signalled) {
            atomic_store(&sh->stop, true);
        }
        pthread_mutex_lock(&sh->mu);
        if (fflush(sh->out) != 0 && sh->write_error == 0) { /* a full disk: stop now */
            sh->write_error = errno ? errno : EIO;
            atomic_store(&sh->stop, true);
        }
        pthread_mutex_unlock(&sh->mu);
        if (tty && tick % 10 == 0) {
            wl_progress(sh, &last, false);
        }
    }
    if (tty) {
        wl_progress(sh, &last, true);
    }
}

static int lat_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* The p-th percentile of sorted[0..n), n > 0, by nearest rank: the smallest value with at least
 * p% of the values at or below it (so p99 of fewer than 100 values is the largest). */
static uint32_t wl_rank(const uint32_t *sorted, size_t n, unsigned p)
{
    return sorted[(n * p + 99) / 100 - 1];
}

/* p50, p99 and max of an op's ok latencies (sorted here); 0 when none. */
static void wl_percentiles(struct wl_stat *st, uint32_t p[3])
{
    p[0] = p[1] = p[2] = 0;
    if (st->n_lat == 0) {
        return;
    }
    qsort(st->lat, st->n_lat, sizeof(*st->lat), lat_cmp);
    p[0] = wl_rank(st->lat, st->n_lat, 50);
    p[1] = wl_rank(st->lat, st->n_lat, 99);
    p[2] = st->lat[st->n_lat - 1];
}

static int wl_summary(struct wl_shared *sh, double seconds)
{
    size_t total = wl_total(sh, -1);
    json_t *per_op = json_object();

    if (!sh->cfg->json) {
        printf(
            "%zu operations in %.1f s (%.0f/s) on %zu node%s, %zu connect failures; history %s\n",
            total, seconds, (double)total / seconds, sh->cfg->nodes.n,
            sh->cfg->nodes.n == 1 ? "" : "s", sh->connect_failures, sh->cfg->history);
        printf("%-5s %9s %9s %9s %9s %9s %9s %9s\n", "op", "count", "ok", "fail", "unknown",
               "p50_us", "p99_us", "max_us");
    }
    for (int op = 0; op < 5; op++) {
        struct wl_stat *st = &sh->stat[op];
        size_t n = st->n[0] + st->n[1] + st->n[2];
        uint32_t p[3];
        if (n == 0) {
            continue;
        }
        wl_percentiles(st, p);
        if (!sh->cfg->json) {
            printf("%-5s %9zu %9zu %9zu %9zu %9u %9u %9u\n", history_op_name(op), n, st->n[0],
                   st->n[1], st->n[2], p[0], p[1], p[2]);
        }
        json_object_set_new(per_op, history_op_name(op),
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "count", (json_int_t)n,
                                      "ok", (json_int_t)st->n[0], "fail", (json_int_t)st->n[1],
                                      "unknown", (json_int_t)st->n[2], "p50_us", (json_int_t)p[0],
                                      "p99_us", (json_int_t)p[1], "max_us", (json_int_t)p[2]));
    }
    if (!sh->cfg->json) {
        json_decref(per_op);
        return CLI_OK;
    }
    return cli_json_print(json_pack("{s:I, s:f, s:I, s:s, s:o}", "operations", (json_int_t)total,
                                    "seconds", seconds, "connect_failures",
                                    (json_int_t)sh->connect_failures, "history", sh->cfg->history,
                                    "per_op", per_op));
}

/* Start the workers with SIGINT and SIGTERM blocked (the main thread takes them). */
static int wl_start(struct wl_shared *sh, struct wl_worker *w, size_t n)
{
    struct sigaction sa = {.sa_handler = wl_on_signal};
    sigset_t block, old;
    int rc = 0;

    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    for (size_t i = 0; i < n; i++) {
        w[i].sh = sh;
        w[i].id = (unsigned)i;
        randombytes_buf(&w[i].rng, sizeof(w[i].rng));
        w[i].rng |= 1;
        buf_init(&w[i].line, 0);
        atomic_fetch_add(&sh->running, 1);
        if (pthread_create(&w[i].thread, NULL, wl_worker_run, &w[i]) != 0) {
            atomic_fetch_sub(&sh->running, 1);
            atomic_store(&sh->stop, true);
            rc = cli_error("cannot start worker thread %zu", i);
            break;
        }
        w[i].thread_started = true;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int cli_workload(int argc, char **argv)
{
    static struct wl_config cfg;
    static char prefix[16];
    struct wl_shared sh = {.cfg = &cfg};
    struct wl_worker *w = NULL;
    uint8_t run[4];
    int rc = wl_parse(argc, argv, &cfg);

    if (rc != 0) {
        return rc;
    }
    sh.out = fopen(cfg.history, "w");
    if (sh.out == NULL) {
        return cli_error("cannot write %s: %s", cfg.history, strerror(errno));
    }
    w = calloc((size_t)cfg.concurrency, sizeof(*w));
    if (w == NULL) {
        fclose(sh.out);
        return cli_error("out of memory");
    }
    randombytes_buf(run, sizeof(run));
    hex_encode(sh.run, run, sizeof(run));
    if (cfg.prefix == NULL) { /* a fresh key space, so nothing of an earlier run is read */
        snprintf(prefix, sizeof(prefix), "wl:%s:", sh.run);
        cfg.prefix = prefix;
    }
    pthread_mutex_init(&sh.mu, NULL);
    wl_signalled = 0;
    sh.t0 = clock_mono_us();
    sh.deadline = sh.t0 + (uint64_t)cfg.duration_s * 1000000;
    rc = wl_start(&sh, w, (size_t)cfg.concurrency);
    wl_watch(&sh);
    for (long i = 0; i < cfg.concurrency; i++) {
        if (w[i].thread_started) {
            pthread_join(w[i].thread, NULL);
        }
        buf_free(&w[i].line);
    }
    if (fclose(sh.out) != 0 || sh.write_error != 0) {
        rc = cli_error("writing %s failed: %s", cfg.history,
                       strerror(sh.write_error ? sh.write_error : errno));
    }
    if (rc == 0) {
        rc = wl_summary(&sh, (double)(clock_mono_us() - sh.t0) / 1e6);
    }
    if (rc == 0 && wl_total(&sh, -1) == 0) {
        fprintf(stderr, "ringkv: no operation reached a node\n");
        rc = CLI_UNHEALTHY;
    }
    for (int op = 0; op < 5; op++) {
        free(sh.stat[op].lat);
    }
    pthread_mutex_destroy(&sh.mu);
    free(w);
    return rc;
}
