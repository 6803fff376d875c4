/*
 * cli_cluster.c - `ringkv status`, `ringkv members` and `ringkv ring`: the
 * cluster as one node sees it, asked of that node's client port with
 * RINGKV STATUS, RINGKV MEMBERS and RINGKV RING [RF], and shown by
 * cli_view.c; `ringkv remove ID` (RINGKV REMOVE), which asks that node
 * to remove a member it sees down; `ringkv leave [NODE]` (RINGKV LEAVE),
 * which asks a node to hand its arcs over and stop; and `ringkv
 * transfers` (RINGKV TRANSFERS), the copies of arcs a join or a leave
 * makes, with --watch to follow them to their end.
 *
 * status is also what scripts and the testbed wait on.  Its exit code
 * says whether the cluster is healthy: 0 when the ring has converged
 * (no member is joining or leaving, and every member that is up reports
 * the digest this node holds: the node's own answer) and every
 * member still in the ring's story (not left, not removed) is up, 3 when
 * not, 1 when the node cannot be reached or answers something else.
 *
 * With --deep it asks RINGKV STATUS DEEP instead: the node asks every
 * current member for its own view over the peer channel and prints a row
 * per member (its digest, status, round trip, or that it timed out).
 *
 * With --wait converged it asks again every STATUS_POLL_MS until the ring
 * has converged (exit 0) or the timeout has passed (exit 3 with the last
 * status printed, or 1 if the node never answered).  The timeout is the
 * verb's one time limit, -t as everywhere: without --wait it bounds the
 * one request, with it the whole wait.  Each poll opens its own
 * connection under what is left of that limit, so a node that restarts
 * during the wait is simply asked again, and errors before the deadline
 * are not reported: a node that is still starting is what one waits for.
 * A join or a leave is waited through: while one is under way the node
 * does not answer converged.
 *
 * leave NODE finds NODE's client address in the member table of the node
 * asked (RINGKV STATUS; a wildcard host such as 0.0.0.0 is replaced by
 * the host asked) and sends RINGKV LEAVE there: a node leaves only when
 * it is itself asked, since it is the one that must hand its arcs over.
 *
 * transfers --watch asks once a second (TRANSFERS_WATCH_MS), each time
 * under -t, and redraws: on a terminal over the last frame, elsewhere
 * after it (JSON: one compact object a line).  It ends when the node says
 * no change is under way, or when SECONDS have passed (none: no limit).
 */
#include "cli_cluster.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_data.h"
#include "cli_view.h"
#include "clock.h"
#include "dial.h"
#include "error.h"

#define CONN_OPTS "[-H HOST[:PORT]] [-t SECONDS]"
#define STATUS_USAGE "ringkv status " CONN_OPTS " [--json] [--wait converged | --deep]"
#define MEMBERS_USAGE "ringkv members " CONN_OPTS " [--json]"
#define RING_USAGE "ringkv ring " CONN_OPTS " [--rf N] [--json | --dot]"
#define REMOVE_USAGE "ringkv remove " CONN_OPTS " [--json] [--dry-run] ID"
#define LEAVE_USAGE "ringkv leave " CONN_OPTS " [--json] [--dry-run] [NODE]"
#define TRANSFERS_USAGE "ringkv transfers " CONN_OPTS " [--json] [--watch [SECONDS]]"
#define TOKENS_USAGE "ringkv tokens " CONN_OPTS " [--json] [--dry-run] [--force] NODE N"

/* Time between two polls of --wait: ten a second, as the CLI's contract promises. */
#define STATUS_POLL_MS 100
/* The shortest time limit a poll is given, so the last one can still connect. */
#define STATUS_POLL_MIN_MS 50
/*
 * --deep's time limit when -t is not given: the node answers within its
 * request-timeout (5 s by default, at most 600 s), so this only guards
 * against a node that does not answer at all; -t sets it for a node whose
 * request-timeout is longer.
 */
#define STATUS_DEEP_TIMEOUT_MS 60000
/* Time between two redraws of `transfers --watch`: a person's glance, not a load on the node. */
#define TRANSFERS_WATCH_MS 1000
/* The longest --watch SECONDS: a week, past any handoff's length at the slowest handoff-rate. */
#define TRANSFERS_WATCH_MAX_S 604800

enum { OPT_JSON = 256, OPT_WAIT, OPT_RF, OPT_DOT, OPT_DEEP, OPT_WATCH, OPT_DRY_RUN, OPT_FORCE };

/*
 * The options beyond -H, -t and --json that a verb takes; TAKES_ID: one
 * operand, a member id; TAKES_ID_OPT: at most one.
 */
enum {
    TAKES_WAIT = 1,
    TAKES_RF = 2,
    TAKES_DOT = 4,
    TAKES_ID = 8,
    TAKES_DEEP = 16,
    TAKES_WATCH = 32,
    TAKES_ID_OPT = 64,
    TAKES_DRY_RUN = 128,
    TAKES_COUNT = 256, /* after the id, a token count; and --force */
};

struct cluster_opts {
    struct respc_opts conn;
    bool json, dot, wait, deep, watch, dry_run, force;
    bool timeout_given; /* -t or RINGKV_TIMEOUT */
    long rf;            /* 0: the node's own */
    long watch_s;       /* --watch SECONDS; 0: until the change is done */
    const char *id;     /* TAKES_ID, TAKES_ID_OPT (NULL: none given) */
    long count;         /* TAKES_COUNT */
    const char *addr;   /* -H as given, NULL when not */
};

/* Options of the verb; flags says which of --wait, --rf and --dot it takes. */
static int cluster_parse(int argc, char **argv, const char *usage, unsigned flags,
                         struct cluster_opts *o)
{
    static const struct option opts[] = {{"host", required_argument, NULL, 'H'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, OPT_JSON},
                                         {"wait", required_argument, NULL, OPT_WAIT},
                                         {"rf", required_argument, NULL, OPT_RF},
                                         {"dot", no_argument, NULL, OPT_DOT},
                                         {"deep", no_argument, NULL, OPT_DEEP},
                                         {"watch", optional_argument, NULL, OPT_WATCH},
                                         {"dry-run", no_argument, NULL, OPT_DRY_RUN},
                                         {"force", no_argument, NULL, OPT_FORCE},
                                         {0, 0, 0, 0}};
    const char *addr = NULL, *timeout = NULL;
    int c;

    memset(o, 0, sizeof(*o));
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":H:t:", opts, NULL)) != -1) {
        if (c == 'H' || c == 't') {
            *(c == 'H' ? &addr : &timeout) = optarg;
        } else if (c == OPT_JSON) {
            o->json = true;
        } else if (c == OPT_WAIT && (flags & TAKES_WAIT)) {
            if (strcmp(optarg, "converged") != 0) {
                return cli_usage(usage, "--wait takes 'converged', not '%.64s'", optarg);
            }
            o->wait = true;
        } else if (c == OPT_RF && (flags & TAKES_RF)) {
            if (!cli_parse_long("--rf", optarg, 1, RING_RF_MAX, &o->rf)) {
                return CLI_USAGE;
            }
        } else if (c == OPT_DOT && (flags & TAKES_DOT)) {
            o->dot = true;
        } else if (c == OPT_DEEP && (flags & TAKES_DEEP)) {
            o->deep = true;
        } else if (c == OPT_DRY_RUN && (flags & TAKES_DRY_RUN)) {
            o->dry_run = true;
        } else if (c == OPT_FORCE && (flags & TAKES_COUNT)) {
            o->force = true;
        } else if (c == OPT_WATCH && (flags & TAKES_WATCH)) {
            o->watch = true;
            if (optarg != NULL &&
                !cli_parse_long("--watch", optarg, 1, TRANSFERS_WATCH_MAX_S, &o->watch_s)) {
                return CLI_USAGE;
            }
        } else if (c == ':') {
            return cli_usage(usage, "option '%s' needs a value", argv[optind - 1]);
        } else {
            return cli_usage(usage, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if ((flags & TAKES_ID) && optind == argc) {
        return cli_usage(usage, "which member? give its id");
    }
    /* "--watch 30": the verb takes no operand, so a number after --watch is its limit */
    if (o->watch && o->watch_s == 0 && optind < argc && strspn(argv[optind], "0123456789") > 0 &&
        argv[optind][strspn(argv[optind], "0123456789")] == '\0') {
        if (!cli_parse_long("--watch", argv[optind++], 1, TRANSFERS_WATCH_MAX_S, &o->watch_s)) {
            return CLI_USAGE;
        }
    }
    if ((flags & (TAKES_ID | TAKES_ID_OPT)) && optind < argc) {
        o->id = argv[optind++];
    }
    if ((flags & TAKES_COUNT) && optind == argc) {
        return cli_usage(usage, "how many tokens? give the count after the member's id");
    }
    if ((flags & TAKES_COUNT) &&
        !cli_parse_long("N", argv[optind++], RING_TOKENS_MIN, RING_TOKENS_MAX, &o->count)) {
        return CLI_USAGE;
    }
    if (optind != argc) {
        return cli_usage(usage, "unexpected argument '%s'", argv[optind]);
    }
    if (o->json && o->dot) {
        return cli_usage(usage, "--json and --dot are two forms of the output: choose one");
    }
    if (o->wait && o->deep) {
        return cli_usage(usage, "--wait and --deep do not go together: --deep asks once");
    }
    o->timeout_given = timeout != NULL || getenv(CLI_ENV_TIMEOUT) != NULL;
    o->addr = addr;
    return cli_data_conn_set(&o->conn, addr, timeout, usage);
}

/* Report a reply that cli_view.c could not read; returns CLI_ERROR. */
static int cluster_bad_reply(const char *command, const char *why)
{
    return cli_error("unexpected reply to %s: %s", command, why);
}

/* Print json, or report that it could not be built; returns the exit code. */
static int cluster_json_print(json_t *j)
{
    return j != NULL ? cli_json_print(j) : cli_error("cannot build the JSON output");
}

/* --- status ---------------------------------------------------------------------- */

/*
 * One RINGKV STATUS under o's limits, read into s.  Returns 0 with *reply
 * (which s points into; the caller frees both); RK_EIO when the node
 * could not be asked (why in err), RK_ESYNTAX when it answered with an
 * error or a reply that is not a status (why in err).
 */
/* How a verb's reply is read into its view (cli_view.h); 0 or an error with why set. */
typedef int (*fetch_parse_fn)(void *view, const struct resp_reply *reply, char *why,
                              size_t why_len);

/*
 * Ask `RINGKV verb` on one connection under o's limits and read the reply
 * into view.  Returns 0 with *reply (which the view points into; the
 * caller frees both); RK_EIO when the node could not be asked, RK_ESYNTAX
 * when it answered with an error or something else (why in err either
 * way).
 */
static int cluster_fetch(const struct respc_opts *o, const char *verb, fetch_parse_fn parse,
                         void *view, struct resp_reply **reply, char *err, size_t err_len)
{
    const char *const cmd[] = {"RINGKV", verb};
    struct respc *c;
    char why[400];
    int rc;

    *reply = NULL;
    rc = respc_connect(&c, o, err, err_len);
    if (rc == 0) {
        rc = respc_call(c, 2, cmd, NULL, reply, err, err_len);
        respc_close(c);
    }
    if (rc != 0) {
        return RK_EIO;
    }
    if ((*reply)->type == RESP_T_ERROR) {
        snprintf(err, err_len, "%s", (const char *)(*reply)->str);
        rc = RK_ESYNTAX;
    } else if (parse(view, *reply, why, sizeof(why)) != 0) {
        snprintf(err, err_len, "unexpected reply to RINGKV %s: %s", verb, why);
        rc = RK_ESYNTAX;
    }
    if (rc != 0) {
        resp_reply_free(*reply);
        *reply = NULL;
    }
    return rc;
}

static int status_parse(void *view, const struct resp_reply *reply, char *why, size_t why_len)
{
    return view_status_parse(view, reply, why, why_len);
}

static int status_fetch(const struct respc_opts *o, struct resp_reply **reply,
                        struct view_status *s, char *err, size_t err_len)
{
    return cluster_fetch(o, "STATUS", status_parse, s, reply, err, err_len);
}

static int status_print(const struct cluster_opts *o, const struct view_status *s)
{
    if (o->json) {
        return cluster_json_print(view_status_json(s));
    }
    if (view_status_table(stdout, s) != 0) {
        return cli_error("out of memory");
    }
    return CLI_OK;
}

static void status_sleep(uint64_t deadline_us)
{
    uint64_t now = clock_mono_us();
    uint64_t us = (uint64_t)STATUS_POLL_MS * 1000;
    struct timespec ts;

    if (now + us > deadline_us) {
        us = deadline_us > now ? deadline_us - now : 0;
    }
    ts.tv_sec = (time_t)(us / 1000000);
    ts.tv_nsec = (long)(us % 1000000) * 1000;
    nanosleep(&ts, NULL);
}

/*
 * Poll until converged or past the deadline.  On return *reply and s
 * hold the last status read (none: *reply NULL, err says why).  A reply
 * that is an error or not a status ends the wait at once: asking again
 * would not change it.
 */
static int status_poll(const struct cluster_opts *o, struct resp_reply **reply,
                       struct view_status *s, char *err, size_t err_len)
{
    uint64_t deadline = dial_deadline(o->conn.timeout_ms);
    struct respc_opts conn = o->conn;
    struct view_status next;
    struct resp_reply *r;
    int rc;

    for (;;) {
        uint64_t now = clock_mono_us();
        uint64_t left_ms = deadline > now ? (deadline - now) / 1000 : 0;
        conn.timeout_ms = (uint32_t)(left_ms > STATUS_POLL_MIN_MS ? left_ms : STATUS_POLL_MIN_MS);
        rc = status_fetch(&conn, &r, &next, err, err_len);
        if (rc == RK_ESYNTAX) {
            return rc;
        }
        if (rc == 0) {
            view_status_free(s);
            resp_reply_free(*reply);
            *reply = r;
            *s = next;
            if (s->converged) {
                return 0;
            }
        }
        if (clock_mono_us() >= deadline) {
            return *reply != NULL ? 0 : RK_EIO;
        }
        status_sleep(deadline);
    }
}

static int status_wait(const struct cluster_opts *o)
{
    struct resp_reply *reply = NULL;
    struct view_status s;
    char err[600];
    int rc;

    memset(&s, 0, sizeof(s));
    if (status_poll(o, &reply, &s, err, sizeof(err)) != 0) {
        rc = cli_error("%s", err);
    } else {
        rc = status_print(o, &s);
    }
    if (rc == CLI_OK && !s.converged) {
        cli_error("the ring has not converged within %.1f s: %lld of %lld up members agree%s",
                  (double)o->conn.timeout_ms / 1000.0, (long long)s.agree, (long long)s.up_count,
                  view_status_changing(&s) ? ", and a change is still under way" : "");
        rc = CLI_UNHEALTHY;
    }
    view_status_free(&s);
    resp_reply_free(reply);
    return rc;
}

/*
 * --deep: RINGKV STATUS DEEP, every member's own view through the one
 * node asked.  Exit 0 when every member answered with that node's digest,
 * 3 when not, 1 when the node could not be asked.
 */
static int status_deep(struct cluster_opts *o)
{
    static const char *const cmd[] = {"RINGKV", "STATUS", "DEEP"};
    struct resp_reply *reply = NULL;
    struct view_deep d;
    char why[400];
    int rc;

    if (!o->timeout_given) {
        o->conn.timeout_ms = STATUS_DEEP_TIMEOUT_MS;
    }
    rc = cli_data_request(&o->conn, 3, cmd, NULL, &reply);
    if (rc != CLI_OK) {
        return rc;
    }
    if (view_deep_parse(&d, reply, why, sizeof(why)) != 0) {
        rc = cluster_bad_reply("RINGKV STATUS DEEP", why);
    } else if (o->json) {
        rc = cluster_json_print(view_deep_json(&d));
    } else if (view_deep_table(stdout, &d) != 0) {
        rc = cli_error("out of memory");
    }
    if (rc == CLI_OK && !view_deep_healthy(&d)) {
        rc = CLI_UNHEALTHY;
    }
    view_deep_free(&d);
    resp_reply_free(reply);
    return rc;
}

int cli_cluster_status(int argc, char **argv)
{
    struct cluster_opts o;
    struct resp_reply *reply;
    struct view_status s;
    char err[600];
    int rc = cluster_parse(argc, argv, STATUS_USAGE, TAKES_WAIT | TAKES_DEEP, &o);

    if (rc != 0) {
        return rc;
    }
    if (o.wait) {
        return status_wait(&o);
    }
    if (o.deep) {
        return status_deep(&o);
    }
    if (status_fetch(&o.conn, &reply, &s, err, sizeof(err)) != 0) {
        return cli_error("%s", err);
    }
    rc = status_print(&o, &s);
    if (rc == CLI_OK && !view_status_healthy(&s)) {
        rc = CLI_UNHEALTHY;
    }
    view_status_free(&s);
    resp_reply_free(reply);
    return rc;
}

/* --- members --------------------------------------------------------------------- */

int cli_cluster_members(int argc, char **argv)
{
    static const char *const cmd[] = {"RINGKV", "MEMBERS"};
    struct cluster_opts o;
    struct resp_reply *reply = NULL;
    struct view_members v;
    char why[400];
    int rc = cluster_parse(argc, argv, MEMBERS_USAGE, 0, &o);

    if (rc != 0) {
        return rc;
    }
    rc = cli_data_request(&o.conn, 2, cmd, NULL, &reply);
    if (rc != CLI_OK) {
        return rc;
    }
    if (view_members_parse(&v, reply, why, sizeof(why)) != 0) {
        rc = cluster_bad_reply("RINGKV MEMBERS", why);
    } else if (o.json) {
        rc = cluster_json_print(view_members_json(&v));
    } else if (view_members_table(stdout, &v) != 0) {
        rc = cli_error("out of memory");
    }
    view_members_free(&v);
    resp_reply_free(reply);
    return rc;
}

/* --- ring ------------------------------------------------------------------------ */

static int ring_print(const struct cluster_opts *o, const struct view_ring *v)
{
    int rc = 0;

    if (o->json) {
        return cluster_json_print(view_ring_json(v));
    }
    if (o->dot) {
        rc = view_ring_dot(stdout, v);
    } else {
        rc = view_ring_table(stdout, v);
    }
    return rc == 0 ? CLI_OK : cli_error("out of memory");
}

int cli_cluster_ring(int argc, char **argv)
{
    struct cluster_opts o;
    struct resp_reply *reply = NULL;
    struct view_ring v;
    char rf[24], why[400];
    const char *cmd[] = {"RINGKV", "RING", rf};
    int rc = cluster_parse(argc, argv, RING_USAGE, TAKES_RF | TAKES_DOT, &o);

    if (rc != 0) {
        return rc;
    }
    snprintf(rf, sizeof(rf), "%ld", o.rf);
    rc = cli_data_request(&o.conn, o.rf > 0 ? 3 : 2, cmd, NULL, &reply);
    if (rc != CLI_OK) {
        return rc;
    }
    if (view_ring_parse(&v, reply, why, sizeof(why)) != 0) {
        rc = cluster_bad_reply("RINGKV RING", why);
    } else {
        rc = ring_print(&o, &v);
    }
    view_ring_free(&v);
    resp_reply_free(reply);
    return rc;
}

/* --- dry runs: RINGKV PLAN ------------------------------------------------------- */

/*
 * Key-value pairs of a map reply: a RESP3 map, or under RESP2 the flat
 * array of keys and values (every key text); 0 with *is false otherwise.
 */
static size_t plan_pairs(const struct resp_reply *r, bool *is)
{
    *is = r->type == RESP_T_MAP;
    if (*is) {
        return r->n;
    }
    *is = r->type == RESP_T_ARRAY && r->n % 2 == 0 && r->n > 0;
    for (size_t i = 0; *is && i < r->n; i += 2) {
        *is = r->elem[i]->type == RESP_T_BULK || r->elem[i]->type == RESP_T_SIMPLE;
    }
    return *is ? r->n / 2 : 0;
}

/* A reply as JSON: maps as objects, arrays as arrays, text as strings, numbers as numbers. */
static json_t *plan_json(const struct resp_reply *r)
{
    bool is_map;
    size_t pairs = plan_pairs(r, &is_map);
    json_t *j;

    if (is_map) {
        j = json_object();
        for (size_t i = 0; i < pairs; i++) {
            json_object_set_new(j, (const char *)r->elem[2 * i]->str,
                                plan_json(r->elem[2 * i + 1]));
        }
        return j;
    }
    switch (r->type) {
    case RESP_T_ARRAY:
        j = json_array();
        for (size_t i = 0; i < r->n; i++) {
            json_array_append_new(j, plan_json(r->elem[i]));
        }
        return j;
    case RESP_T_INT:
        return json_integer(r->integer);
    case RESP_T_BULK:
    case RESP_T_SIMPLE: {
        char *end;
        double d = strtod((const char *)r->str, &end);
        /* the fractions travel as text with 4 decimals: numbers in JSON */
        return r->len > 0 && *end == '\0' && strchr((const char *)r->str, '.') != NULL
                   ? json_real(d)
                   : json_stringn((const char *)r->str, r->len);
    }
    default:
        return json_null();
    }
}

/* The value of key in map reply m, or NULL. */
static const struct resp_reply *plan_get(const struct resp_reply *m, const char *key)
{
    bool is_map;
    size_t pairs = plan_pairs(m, &is_map);

    for (size_t i = 0; i < pairs; i++) {
        if (strcmp((const char *)m->elem[2 * i]->str, key) == 0) {
            return m->elem[2 * i + 1];
        }
    }
    return NULL;
}

static const char *plan_str(const struct resp_reply *m, const char *key)
{
    const struct resp_reply *v = plan_get(m, key);
    return v != NULL && v->str != NULL ? (const char *)v->str : "?";
}

static long long plan_int(const struct resp_reply *m, const char *key)
{
    const struct resp_reply *v = plan_get(m, key);
    return v != NULL && v->type == RESP_T_INT ? (long long)v->integer : -1;
}

/*
 * RINGKV PLAN change id at conn: what the change would move, as a table
 * or JSON; nothing is changed.
 */
static int plan_run(const struct respc_opts *conn, const char *change, const char *id,
                    const char *count, bool json)
{
    const char *cmd[5] = {"RINGKV", "PLAN", change, id, count};
    struct resp_reply *reply = NULL;
    const struct resp_reply *owners;
    int rc = cli_data_request(conn, count != NULL ? 5 : 4, cmd, NULL, &reply);

    if (rc != CLI_OK) {
        return rc;
    }
    if (plan_get(reply, "owners") == NULL) {
        rc = cluster_bad_reply("RINGKV PLAN", "not a map with owners");
    } else if (json) {
        rc = cluster_json_print(plan_json(reply));
    } else {
        printf("dry run: %s %s%s%s (nothing is changed)\n",
               change[0] == 'L'   ? "leave"
               : change[0] == 'R' ? "remove"
                                  : "tokens",
               id, count != NULL ? " " : "", count != NULL ? count : "");
        printf("ring %s -> %s\n", plan_str(reply, "ring"), plan_str(reply, "target"));
        printf("the replica sets of %.1f%% of the ring change: %lld arcs to copy, about %lld "
               "keys and %lld bytes (estimated from %s's data)\n",
               atof(plan_str(reply, "moved_fraction")) * 100, plan_int(reply, "arcs"),
               plan_int(reply, "keys"), plan_int(reply, "bytes"),
               plan_str(reply, "estimated_from"));
        owners = plan_get(reply, "owners");
        printf("%-20s %8s %8s\n", "member", "before", "after");
        for (size_t i = 0; owners != NULL && owners->type == RESP_T_ARRAY && i < owners->n; i++) {
            const struct resp_reply *row = owners->elem[i];
            printf("%-20s %7.1f%% %7.1f%%\n", plan_str(row, "id"),
                   atof(plan_str(row, "share_before")) * 100,
                   atof(plan_str(row, "share_after")) * 100);
        }
    }
    resp_reply_free(reply);
    return rc;
}

/* leave --dry-run [NODE]: the plan of NODE's leave, or of the node at -H's own. */
static int plan_leave(const struct cluster_opts *o)
{
    const char *cmd[2] = {"RINGKV", "TRANSFERS"};
    struct resp_reply *reply = NULL;
    char id[RING_NAME_MAX + 1];
    int rc;

    if (o->id != NULL) {
        return plan_run(&o->conn, "LEAVE", o->id, NULL, o->json);
    }
    rc = cli_data_request(&o->conn, 2, cmd, NULL, &reply);
    if (rc != CLI_OK) {
        return rc;
    }
    if (plan_get(reply, "node") == NULL) {
        rc = cluster_bad_reply("RINGKV TRANSFERS", "no node id");
    } else {
        snprintf(id, sizeof(id), "%s", plan_str(reply, "node"));
    }
    resp_reply_free(reply);
    return rc != CLI_OK ? rc : plan_run(&o->conn, "LEAVE", id, NULL, o->json);
}

/* --- remove ---------------------------------------------------------------------- */

int cli_cluster_remove(int argc, char **argv)
{
    struct cluster_opts o;
    struct resp_reply *reply = NULL;
    const char *cmd[3] = {"RINGKV", "REMOVE", NULL};
    int rc = cluster_parse(argc, argv, REMOVE_USAGE, TAKES_ID | TAKES_DRY_RUN, &o);

    if (rc != 0) {
        return rc;
    }
    if (o.dry_run) {
        return plan_run(&o.conn, "REMOVE", o.id, NULL, o.json);
    }
    cmd[2] = o.id;
    rc = cli_data_request(&o.conn, 3, cmd, NULL, &reply);
    if (rc != CLI_OK) {
        return rc;
    }
    if (reply->type != RESP_T_SIMPLE) {
        rc = cluster_bad_reply("RINGKV REMOVE", "not a status line");
    } else if (o.json) {
        json_t *j = json_pack("{s:s, s:b}", "id", o.id, "removed", 1);
        rc = cluster_json_print(j);
    } else {
        printf("removed %s: the removal spreads by gossip; `ringkv status` shows it\n", o.id);
    }
    resp_reply_free(reply);
    return rc;
}

/* --- leave ----------------------------------------------------------------------- */

/* Whether host is a wildcard a node may announce when it listens on every address. */
static bool leave_wildcard(const char *host)
{
    return strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/*
 * Point conn at member m's client port, as the node at o->conn announces
 * it; a wildcard host (a node listening on every address) is replaced by
 * the host the node was asked at.  Returns CLI_OK or, after one sentence,
 * CLI_ERROR.
 */
static int leave_member_addr(const struct cluster_opts *o, const struct view_status_member *m,
                             struct respc_opts *conn)
{
    char err[400];

    *conn = o->conn;
    if (respc_opts_set_addr(conn, m->client_addr, "client_addr", err, sizeof(err)) != 0) {
        return cli_error("'%s' announces a client address that cannot be used: %s", m->id, err);
    }
    if (leave_wildcard(conn->host)) {
        snprintf(conn->host, sizeof(conn->host), "%s", o->conn.host);
    }
    return CLI_OK;
}

/* Why member m cannot be asked to leave, or NULL when it can. */
static const char *leave_refusal(const struct view_status_member *m)
{
    if (strcmp(m->status, "left") == 0) {
        return "has already left the cluster";
    }
    if (strcmp(m->status, "removed") == 0) {
        return "was removed from the cluster";
    }
    if (!m->up) {
        return "is down as that node sees it: only a running node can hand its arcs over";
    }
    return NULL;
}

/*
 * NODE given: ask the node at o->conn for its member table (RINGKV STATUS,
 * whose entries carry each member's client address) and point conn at
 * NODE's client port.  Returns CLI_OK, or CLI_ERROR after one sentence.
 */
static int leave_find(const struct cluster_opts *o, struct respc_opts *conn)
{
    const struct view_status_member *m = NULL;
    struct resp_reply *reply;
    struct view_status s;
    const char *why;
    char err[600];
    int rc;

    if (status_fetch(&o->conn, &reply, &s, err, sizeof(err)) != 0) {
        return cli_error("%s", err);
    }
    for (size_t i = 0; m == NULL && i < s.n; i++) {
        m = strcmp(s.members[i].id, o->id) == 0 ? &s.members[i] : NULL;
    }
    if (m == NULL) {
        rc = cli_error("no member '%s' in the table of %s (at %s:%u)", o->id, s.id, o->conn.host,
                       (unsigned)o->conn.port);
    } else if ((why = leave_refusal(m)) != NULL) {
        rc = cli_error("'%s' %s (as %s sees it)", o->id, why, s.id);
    } else {
        rc = leave_member_addr(o, m, conn);
    }
    view_status_free(&s);
    resp_reply_free(reply);
    return rc;
}

/*
 * A change asked of the node at conn itself (argc words of cmd): who names
 * the node and `to` the change in messages ("leave").  Returns CLI_OK with
 * the node's status line in status, or CLI_ERROR after one sentence: the
 * node could not be reached, or it refused (its reason).
 */
static int member_ask(const struct respc_opts *conn, const char *who, const char *to, int argc,
                      const char *const *cmd, char *status, size_t status_len)
{
    struct resp_reply *reply = NULL;
    struct respc *c;
    char err[512];
    int rc;

    rc = respc_connect(&c, conn, err, sizeof(err));
    if (rc == 0) {
        rc = respc_call(c, argc, cmd, NULL, &reply, err, sizeof(err));
        respc_close(c);
    }
    if (rc != 0) {
        return cli_error("cannot ask %s to %s: %s", who, to, err);
    }
    if (reply->type == RESP_T_ERROR) {
        rc = cli_error("%s refused to %s: %s", who, to, (const char *)reply->str);
    } else if (reply->type != RESP_T_SIMPLE) {
        rc = cli_error("unexpected reply to %s %s: not a status line", cmd[0], cmd[1]);
    } else {
        snprintf(status, status_len, "%s", (const char *)reply->str);
    }
    resp_reply_free(reply);
    return rc;
}

int cli_cluster_leave(int argc, char **argv)
{
    struct cluster_opts o;
    struct respc_opts conn;
    char who[ADDR_HOST_MAX + 96], at[ADDR_HOST_MAX + 16], status[64];
    int rc = cluster_parse(argc, argv, LEAVE_USAGE, TAKES_ID_OPT | TAKES_DRY_RUN, &o);

    if (rc != 0) {
        return rc;
    }
    if (o.dry_run) {
        return plan_leave(&o);
    }
    conn = o.conn;
    if (o.id != NULL && leave_find(&o, &conn) != CLI_OK) {
        return CLI_ERROR;
    }
    addr_format(at, sizeof(at), conn.host, conn.port);
    snprintf(who, sizeof(who), "%s at %s", o.id != NULL ? o.id : "the node", at);
    rc = member_ask(&conn, who, "leave", 2, (const char *const[]){"RINGKV", "LEAVE"}, status,
                    sizeof(status));
    if (rc != CLI_OK) {
        return rc;
    }
    if (o.json) {
        return cluster_json_print(
            json_pack("{s:s?, s:s, s:b}", "node", o.id, "addr", at, "leaving", 1));
    }
    printf("%s is leaving: the nodes that gain its arcs copy them, then it stops; watch with "
           "`ringkv -H %s transfers --watch`\n",
           who, at);
    return CLI_OK;
}

/* --- tokens --------------------------------------------------------------------- */

int cli_cluster_tokens(int argc, char **argv)
{
    struct cluster_opts o;
    struct respc_opts conn;
    const char *cmd[4] = {"RINGKV", "TOKENS", NULL, "FORCE"};
    char who[ADDR_HOST_MAX + 96], at[ADDR_HOST_MAX + 16], count[16], status[64];
    bool queued;
    int rc = cluster_parse(argc, argv, TOKENS_USAGE, TAKES_ID | TAKES_COUNT | TAKES_DRY_RUN, &o);

    if (rc != 0) {
        return rc;
    }
    snprintf(count, sizeof(count), "%ld", o.count);
    if (o.dry_run) {
        return plan_run(&o.conn, "TOKENS", o.id, count, o.json);
    }
    conn = o.conn;
    if (leave_find(&o, &conn) != CLI_OK) {
        return CLI_ERROR;
    }
    addr_format(at, sizeof(at), conn.host, conn.port);
    snprintf(who, sizeof(who), "%s at %s", o.id, at);
    cmd[2] = count;
    rc = member_ask(&conn, who, "change its token count", o.force ? 4 : 3, cmd, status,
                    sizeof(status));
    if (rc != CLI_OK) {
        return rc;
    }
    queued = strcmp(status, "QUEUED") == 0;
    if (o.json) {
        return cluster_json_print(json_pack("{s:s, s:s, s:i, s:b}", "node", o.id, "addr", at,
                                            "tokens", (int)o.count, "queued", queued));
    }
    printf("%s %s %ld tokens: the arcs that move are copied to their new owners, then the ring "
           "takes the new count (saved: it overrides the configured count from now on); watch "
           "with `ringkv -H %s transfers --watch`\n",
           who, queued ? "will move to (after the ring change under way)" : "is moving to", o.count,
           at);
    return CLI_OK;
}

/* --- transfers ------------------------------------------------------------------- */

static int transfers_parse(void *view, const struct resp_reply *reply, char *why, size_t why_len)
{
    return view_transfers_parse(view, reply, why, why_len);
}

/* One RINGKV TRANSFERS under conn's limits, read into v (cluster_fetch()). */
static int transfers_fetch(const struct respc_opts *conn, struct resp_reply **reply,
                           struct view_transfers *v, char *err, size_t err_len)
{
    return cluster_fetch(conn, "TRANSFERS", transfers_parse, v, reply, err, err_len);
}

/* One frame: the table, or JSON (indented once; a compact line a frame under --watch). */
static int transfers_print(const struct cluster_opts *o, const struct view_transfers *v)
{
    json_t *j;

    if (!o->json) {
        return view_transfers_table(stdout, v) == 0 ? CLI_OK : cli_error("out of memory");
    }
    j = view_transfers_json(v);
    if (j == NULL || !o->watch) {
        return cluster_json_print(j);
    }
    json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
    fputc('\n', stdout);
    json_decref(j);
    return CLI_OK;
}

/* Sleep until the next frame, or the deadline when it comes first (0: none). */
static void transfers_sleep(uint64_t deadline_us)
{
    uint64_t now = clock_mono_us(), us = (uint64_t)TRANSFERS_WATCH_MS * 1000;
    struct timespec ts;

    if (deadline_us != 0 && now + us > deadline_us) {
        us = deadline_us > now ? deadline_us - now : 0;
    }
    ts.tv_sec = (time_t)(us / 1000000);
    ts.tv_nsec = (long)(us % 1000000) * 1000;
    nanosleep(&ts, NULL);
}

/* A frame of --watch: on a terminal the screen is cleared first, elsewhere a blank line parts them.
 */
static int transfers_frame(const struct cluster_opts *o, const struct view_transfers *v,
                           size_t frame)
{
    if (!o->json && isatty(STDOUT_FILENO)) {
        fputs("\033[H\033[J", stdout);
    } else if (!o->json && frame > 0) {
        fputc('\n', stdout);
    }
    int rc = transfers_print(o, v);
    fflush(stdout);
    return rc;
}

/*
 * --watch: a frame every TRANSFERS_WATCH_MS until no change is under way
 * (0) or the limit has passed (3).  A node that stops answering after it
 * said it had left has done what it was watched for (0); any other failure
 * to ask ends the watch with its sentence (1).
 */
static int transfers_watch(const struct cluster_opts *o)
{
    uint64_t deadline = o->watch_s > 0 ? clock_mono_us() + (uint64_t)o->watch_s * 1000000 : 0;
    struct resp_reply *reply;
    struct view_transfers v;
    char err[600], node[RING_NAME_MAX + 1] = "";
    bool left = false;
    int rc;

    for (size_t frame = 0;; frame++) {
        rc = transfers_fetch(&o->conn, &reply, &v, err, sizeof(err));
        if (rc == RK_EIO && left) {
            fprintf(stderr, "ringkv: %s has left the cluster and stopped\n", node);
            return CLI_OK;
        }
        if (rc != 0) {
            return cli_error("%s", err);
        }
        snprintf(node, sizeof(node), "%s", v.node);
        left = strcmp(v.status, "left") == 0;
        rc = transfers_frame(o, &v, frame);
        if (rc == CLI_OK && v.changing && deadline != 0 && clock_mono_us() >= deadline) {
            cli_error("a change is still under way after %ld s", o->watch_s);
            rc = CLI_UNHEALTHY;
        }
        bool done = rc != CLI_OK || !v.changing;
        view_transfers_free(&v);
        resp_reply_free(reply);
        if (done) {
            return rc;
        }
        transfers_sleep(deadline);
    }
}

int cli_cluster_transfers(int argc, char **argv)
{
    struct cluster_opts o;
    struct resp_reply *reply;
    struct view_transfers v;
    char err[600];
    int rc = cluster_parse(argc, argv, TRANSFERS_USAGE, TAKES_WATCH, &o);

    if (rc != 0) {
        return rc;
    }
    if (o.watch) {
        return transfers_watch(&o);
    }
    if (transfers_fetch(&o.conn, &reply, &v, err, sizeof(err)) != 0) {
        return cli_error("%s", err);
    }
    rc = transfers_print(&o, &v);
    view_transfers_free(&v);
    resp_reply_free(reply);
    return rc;
}
