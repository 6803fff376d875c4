/*
 * cli_replicas.c - `ringkv replicas KEY` and `ringkv hints`: what the
 * replicas of one key hold right now, and the hints nodes keep for
 * replicas that missed writes.  Shown by cli_view.c.
 *
 * replicas asks one node RINGKV REPLICAS KEY.  That node asks every
 * replica of the key's preference list (its own copy included) for the
 * record as stored, without merging or repairing anything, and answers
 * once each has answered or failed within its request-timeout.  Exit 0
 * when every replica answered, 3 when some did not (whether they agree is
 * the verdict line, and "agree" in --json), 1 when the node could not be
 * asked.  Without -t the time limit is REPLICAS_TIMEOUT_MS, as `status
 * --deep`'s: the node bounds the wait itself.  Then the hints held for
 * each replica elsewhere: every member that node sees up is asked RINGKV
 * HINTS KEY (replicas_hints()).
 *
 * hints asks each node given with -H (several allowed; none: the default
 * node) RINGKV HINTS, its own hint backlog per target.  With --all it
 * first asks the one node given RINGKV STATUS and then every current
 * member of that node's table (not left, not removed, down ones
 * included), at the client address the member announces (client_addr).
 * A member that binds a wildcard address announces that, and is asked
 * there, which reaches it only from its own host: give such members with
 * -H instead.  The nodes are asked one after the other, each under -t.
 * Exit 0 when every node asked answered, 3 when some did not, 1 when the
 * one node asked (or, with --all, the node whose table is used) could not
 * be.
 */
#include "cli_replicas.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "cli.h"
#include "cli_data.h"
#include "cli_view.h"
#include "error.h"
#include "hex.h"

#define CONN_OPTS "[-H HOST[:PORT]] [-t SECONDS]"
#define REPLICAS_USAGE "ringkv replicas " CONN_OPTS " [--hex] [--json] [--] KEY"
#define HINTS_USAGE "ringkv hints [-H HOST[:PORT]]... [-t SECONDS] [--all] [--json]"

/*
 * replicas' time limit when -t is not given: the node answers within its
 * request-timeout (5 s by default, at most 600 s), so this only guards
 * against a node that does not answer at all (as `status --deep`).
 */
#define REPLICAS_TIMEOUT_MS 60000
/* The most -H options hints takes: a bound on what one command line asks. */
#define HINTS_HOSTS_MAX 64
/* The members --all (and replicas' hint counts) may ask: a bound on what one command asks. */
#define HINTS_MEMBERS_MAX 1024
/*
 * replicas' time limit per member asked for its hints, when -t is not
 * given: a member seen up answers RINGKV HINTS KEY from its own store in
 * milliseconds; one that does not within this is left out of the counts.
 */
#define REPLICAS_HINTS_TIMEOUT_MS 5000

enum { OPT_JSON = 256, OPT_HEX, OPT_ALL };

/* The options beyond -H, -t and --json that a verb takes. */
enum { TAKES_HEX = 1, TAKES_ALL = 2, TAKES_HOSTS = 4 };

struct repl_opts {
    bool json, hex, all;
    bool timeout_given; /* -t or RINGKV_TIMEOUT */
    const char *timeout;
    const char *hosts[HINTS_HOSTS_MAX]; /* the -H values in order; replicas uses the last */
    size_t n_hosts;
};

static int repl_option(int c, unsigned flags, const char *usage, struct repl_opts *o)
{
    if (c == 'H' && (o->n_hosts < HINTS_HOSTS_MAX || !(flags & TAKES_HOSTS))) {
        o->n_hosts = flags & TAKES_HOSTS ? o->n_hosts : 0;
        o->hosts[o->n_hosts++] = optarg;
    } else if (c == 'H') {
        return cli_usage(usage, "at most %d -H options", HINTS_HOSTS_MAX);
    } else if (c == 't') {
        o->timeout = optarg;
    } else if (c == OPT_JSON) {
        o->json = true;
    } else if (c == OPT_HEX && (flags & TAKES_HEX)) {
        o->hex = true;
    } else if (c == OPT_ALL && (flags & TAKES_ALL)) {
        o->all = true;
    } else {
        return -1;
    }
    return 0;
}

/* Options of the verb; on success optind is the first operand. */
static int repl_parse(int argc, char **argv, const char *usage, unsigned flags, struct repl_opts *o)
{
    static const struct option opts[] = {
        {"host", required_argument, NULL, 'H'}, {"timeout", required_argument, NULL, 't'},
        {"json", no_argument, NULL, OPT_JSON},  {"hex", no_argument, NULL, OPT_HEX},
        {"all", no_argument, NULL, OPT_ALL},    {0, 0, 0, 0}};
    int c, rc;

    memset(o, 0, sizeof(*o));
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":H:t:", opts, NULL)) != -1) {
        rc = repl_option(c, flags, usage, o);
        if (rc > 0) {
            return rc;
        }
        if (rc < 0 && c == ':') {
            return cli_usage(usage, "option '%s' needs a value", argv[optind - 1]);
        }
        if (rc < 0) {
            return cli_usage(usage, "unknown option '%s'", argv[optind - 1]);
        }
    }
    o->timeout_given = o->timeout != NULL || getenv(CLI_ENV_TIMEOUT) != NULL;
    return 0;
}

/* --- replicas -------------------------------------------------------------------- */

struct hints_ask;
static void hints_ask_one(struct hints_ask *a, const uint8_t *key, size_t len);
static int hints_from_members(const struct respc_opts *base, struct resp_reply **status,
                              struct hints_ask *asks, size_t max, size_t *n, bool skip_down);
static void replicas_hints(const struct respc_opts *base, bool timeout_given, const uint8_t *key,
                           size_t len, struct view_replicas *v);

/* The KEY operand as bytes (hex decoded with --hex) in *key, which the caller frees. */
static int replicas_key(int argc, char **argv, const struct repl_opts *o, uint8_t **key,
                        size_t *len)
{
    const char *arg;

    if (optind == argc) {
        return cli_usage(REPLICAS_USAGE, "which key? give it");
    }
    if (optind + 1 != argc) {
        return cli_usage(REPLICAS_USAGE, "unexpected argument '%s'", argv[optind + 1]);
    }
    arg = argv[optind];
    *len = o->hex ? strlen(arg) / 2 : strlen(arg);
    *key = malloc(*len + 1);
    if (*key == NULL) {
        return cli_error("out of memory");
    }
    if (!o->hex) {
        memcpy(*key, arg, *len);
    } else if (!hex_decode(*key, arg, strlen(arg))) {
        free(*key);
        *key = NULL;
        return cli_usage(REPLICAS_USAGE, "--hex: KEY is not hex: '%.64s'", arg);
    }
    return 0;
}

static int replicas_show(const struct repl_opts *o, const struct respc_opts *conn,
                         const uint8_t *key, size_t len, const struct resp_reply *reply)
{
    struct view_replicas v;
    char why[400];
    int rc = CLI_OK;

    if (view_replicas_parse(&v, reply, why, sizeof(why)) != 0) {
        return cli_error("unexpected reply to RINGKV REPLICAS: %s", why);
    }
    replicas_hints(conn, o->timeout_given, key, len, &v);
    if (o->json) {
        json_t *j = view_replicas_json(key, len, &v);
        rc = j != NULL ? cli_json_print(j) : cli_error("cannot build the JSON output");
    } else if (view_replicas_table(stdout, key, len, &v) != 0) {
        rc = cli_error("out of memory");
    }
    if (rc == CLI_OK && !view_replicas_answered(&v)) {
        rc = CLI_UNHEALTHY;
    }
    view_replicas_free(&v);
    return rc;
}

int cli_replicas(int argc, char **argv)
{
    struct repl_opts o;
    struct respc_opts conn;
    struct resp_reply *reply = NULL;
    uint8_t *key = NULL;
    size_t len = 0;
    int rc = repl_parse(argc, argv, REPLICAS_USAGE, TAKES_HEX, &o);

    if (rc == 0) {
        rc = cli_data_conn_set(&conn, o.n_hosts > 0 ? o.hosts[0] : NULL, o.timeout, REPLICAS_USAGE);
    }
    if (rc == 0) {
        rc = replicas_key(argc, argv, &o, &key, &len);
    }
    if (rc != 0) {
        return rc;
    }
    if (!o.timeout_given) {
        conn.timeout_ms = REPLICAS_TIMEOUT_MS;
    }
    const char *const cmd[] = {"RINGKV", "REPLICAS", (const char *)key};
    const size_t lens[] = {6, 8, len};
    rc = cli_data_request(&conn, 3, cmd, lens, &reply);
    if (rc == CLI_OK) {
        rc = replicas_show(&o, &conn, key, len, reply);
    }
    resp_reply_free(reply);
    free(key);
    return rc;
}

/* --- hints ----------------------------------------------------------------------- */

/* One node to ask: where, and what it answered. */
struct hints_ask {
    struct view_hints_node v; /* v.addr points at addr, v.error at err */
    struct respc_opts conn;
    struct resp_reply *reply;
    char addr[ADDR_TEXT_MAX + 1];
    char err[512];
};

/*
 * Ask one node RINGKV HINTS and read its answer into a->v.h; a node that
 * cannot be asked, answers with an error or with something else is
 * recorded in a->v.error.
 */
static void hints_ask_one(struct hints_ask *a, const uint8_t *key, size_t len)
{
    const char *const cmd[] = {"RINGKV", "HINTS", (const char *)key};
    const size_t lens[] = {6, 5, len};
    struct respc *c;
    char why[400];
    int rc = respc_connect(&c, &a->conn, a->err, sizeof(a->err));

    if (rc == 0) {
        rc = respc_call(c, key != NULL ? 3 : 2, cmd, lens, &a->reply, a->err, sizeof(a->err));
        respc_close(c);
    }
    if (rc == 0 && a->reply->type == RESP_T_ERROR) {
        snprintf(a->err, sizeof(a->err), "%s", (const char *)a->reply->str);
        rc = RK_ESYNTAX;
    } else if (rc == 0 && view_hints_parse(&a->v.h, a->reply, why, sizeof(why)) != 0) {
        snprintf(a->err, sizeof(a->err), "unexpected reply to RINGKV HINTS: %s", why);
        rc = RK_ESYNTAX;
    }
    a->v.error = rc != 0 ? a->err : NULL;
}

/* The nodes given with -H (or the default one), each under base's timeout and password. */
static int hints_from_hosts(const struct repl_opts *o, const struct respc_opts *base,
                            struct hints_ask *asks, size_t *n)
{
    size_t count = o->n_hosts > 0 ? o->n_hosts : 1;

    for (size_t i = 0; i < count; i++) {
        struct hints_ask *a = &asks[i];
        int rc =
            o->n_hosts > 0 ? cli_data_conn_set(&a->conn, o->hosts[i], o->timeout, HINTS_USAGE) : 0;
        if (rc != 0) {
            return rc;
        }
        if (o->n_hosts == 0) {
            a->conn = *base;
        }
        addr_format(a->addr, sizeof(a->addr), a->conn.host, a->conn.port);
        a->v.addr = a->addr;
    }
    *n = count;
    return 0;
}

/*
 * --all: the current members of the table of the node at base (RINGKV
 * STATUS), each at its client_addr.  *status is the reply the ids point
 * into (the caller frees it).  At most max members.  With skip_down, a
 * member the node sees down is not asked (its v.error says so).
 */
static int hints_from_members(const struct respc_opts *base, struct resp_reply **status,
                              struct hints_ask *asks, size_t max, size_t *n, bool skip_down)
{
    static const char *const cmd[] = {"RINGKV", "STATUS"};
    struct view_status s;
    char why[400];
    int rc = cli_data_request(base, 2, cmd, NULL, status);

    if (rc != CLI_OK) {
        return rc;
    }
    if (view_status_parse(&s, *status, why, sizeof(why)) != 0) {
        return cli_error("unexpected reply to RINGKV STATUS: %s", why);
    }
    *n = 0;
    for (size_t i = 0; i < s.n && *n < max; i++) {
        struct hints_ask *a = &asks[*n];
        if (!view_member_current(&s.members[i])) {
            continue;
        }
        a->conn = *base;
        a->v.node = s.members[i].id;
        snprintf(a->addr, sizeof(a->addr), "%s", s.members[i].client_addr);
        a->v.addr = a->addr;
        if (respc_opts_set_addr(&a->conn, s.members[i].client_addr, "client_addr", a->err,
                                sizeof(a->err)) != 0) {
            a->v.error = a->err; /* not asked: its address is not one */
        } else if (skip_down && !s.members[i].up) {
            snprintf(a->err, sizeof(a->err), "down, not asked");
            a->v.error = a->err;
        }
        (*n)++;
    }
    view_status_free(&s);
    return 0;
}

/* Print what the nodes answered; the exit code (see the top of the file). */
static int hints_show(const struct repl_opts *o, struct view_hints_node *nodes, size_t n)
{
    size_t answered = 0;
    int rc = CLI_OK;

    for (size_t i = 0; i < n; i++) {
        answered += nodes[i].error == NULL;
    }
    if (n == 1 && answered == 0) {
        return cli_error("%s", nodes[0].error);
    }
    if (o->json) {
        json_t *j = view_hints_json(nodes, n);
        rc = j != NULL ? cli_json_print(j) : cli_error("cannot build the JSON output");
    } else if (view_hints_table(stdout, nodes, n) != 0) {
        rc = cli_error("out of memory");
    }
    return rc == CLI_OK && answered < n ? CLI_UNHEALTHY : rc;
}

int cli_hints(int argc, char **argv)
{
    struct repl_opts o;
    struct respc_opts base;
    struct resp_reply *status = NULL;
    struct hints_ask *asks = NULL;
    struct view_hints_node *nodes = NULL;
    size_t n = 0;
    int rc = repl_parse(argc, argv, HINTS_USAGE, TAKES_ALL | TAKES_HOSTS, &o);

    if (rc == 0 && optind != argc) {
        rc = cli_usage(HINTS_USAGE, "unexpected argument '%s'", argv[optind]);
    }
    if (rc == 0 && o.all && o.n_hosts > 1) {
        rc = cli_usage(HINTS_USAGE, "--all asks the members one node knows: give one -H at most");
    }
    if (rc == 0) {
        rc = cli_data_conn_set(&base, o.n_hosts > 0 ? o.hosts[0] : NULL, o.timeout, HINTS_USAGE);
    }
    if (rc != 0) {
        return rc;
    }
    asks = calloc(HINTS_MEMBERS_MAX, sizeof(*asks));
    nodes = calloc(HINTS_MEMBERS_MAX, sizeof(*nodes));
    if (asks == NULL || nodes == NULL) {
        rc = cli_error("out of memory");
        goto out_free;
    }
    rc = o.all ? hints_from_members(&base, &status, asks, HINTS_MEMBERS_MAX, &n, false)
               : hints_from_hosts(&o, &base, asks, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (asks[i].v.error == NULL) {
            hints_ask_one(&asks[i], NULL, 0);
        }
        nodes[i] = asks[i].v;
    }
    if (rc == 0) {
        rc = hints_show(&o, nodes, n);
    }
out_free:
    for (size_t i = 0; asks != NULL && i < n; i++) {
        view_hints_free(&asks[i].v.h);
        resp_reply_free(asks[i].reply);
    }
    free(asks);
    free(nodes);
    resp_reply_free(status);
    return rc;
}

/*
 * replicas: the hints held for each replica elsewhere.  Every current
 * member of the node's table that it sees up is asked RINGKV HINTS KEY at
 * its client address, one after the other, each within
 * REPLICAS_HINTS_TIMEOUT_MS (or -t); a replica's count is the sum of what
 * they hold for it.  A member down or silent is left out of the counts,
 * which v->hints_answered < v->hints_nodes says.  Nothing is shown when
 * the node's table cannot be read.
 */
static void replicas_hints(const struct respc_opts *base, bool timeout_given, const uint8_t *key,
                           size_t len, struct view_replicas *v)
{
    struct respc_opts conn = *base;
    struct resp_reply *status = NULL;
    struct hints_ask *asks = calloc(HINTS_MEMBERS_MAX, sizeof(*asks));
    size_t n = 0;

    if (!timeout_given) {
        conn.timeout_ms = REPLICAS_HINTS_TIMEOUT_MS;
    }
    if (asks == NULL ||
        hints_from_members(&conn, &status, asks, HINTS_MEMBERS_MAX, &n, true) != 0) {
        n = 0;
    }
    v->hints_nodes = n;
    for (size_t i = 0; i < n; i++) {
        if (asks[i].v.error == NULL) {
            hints_ask_one(&asks[i], key, len);
        }
        v->hints_answered += asks[i].v.error == NULL;
        for (size_t t = 0; asks[i].v.error == NULL && t < asks[i].v.h.n; t++) {
            for (size_t r = 0; r < v->n; r++) {
                v->r[r].hints +=
                    strcmp(v->r[r].node, asks[i].v.h.t[t].target) == 0 ? asks[i].v.h.t[t].hints : 0;
            }
        }
        view_hints_free(&asks[i].v.h);
        resp_reply_free(asks[i].reply);
    }
    free(asks);
    resp_reply_free(status);
}
