/*
 * cli_preflist.c - `ringkv preflist KEY`: a key's preference list as the
 * node asked sees it (RINGKV PREFLIST), for the ring in force, the
 * cluster's rf, the node's sloppy setting and its failure detector's view
 * of who is up: the key's position and owner token, each node with its
 * rack, role (primary, replica, fallback), up or down and, for a fallback,
 * the replica it stands for; and every step the walk skipped, with why.
 *
 * The reply is read strictly: node ids and racks must be valid names
 * (PLACEMENT.md section 2) and roles and reasons one of the known words,
 * so nothing a node sends reaches the terminal unchecked.  --json prints
 * position, token, token_position, rf, sloppy, replicas[] {node, rack,
 * role, up, stands_for} and skipped[] {node, rack, token, reason,
 * replaced_by}, with null where a fallback or replacement is absent.
 */
#include "cli_preflist.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_data.h"
#include "hex.h"
#include "respc.h"
#include "ring.h"

#define PREFLIST_USAGE "ringkv preflist [-H HOST[:PORT]] [-t SECONDS] [--hex] [--json] KEY"

/* Words of a skip reason, as RINGKV PREFLIST sends them, with the table's phrase. */
static const char *const reasons[][2] = {
    {"same_node", "same node, already chosen"},
    {"rack_used", "rack already used"},
    {"down", "down"},
    {"used", "already in the list"},
};

struct pl_node {
    const char *node, *rack, *role, *other; /* other: stands_for or replaced_by, "" for none */
    bool up;
    int64_t token;
    size_t reason; /* skips: index in reasons */
};

struct pl_view {
    const char *position, *token_position;
    int64_t token, rf;
    bool sloppy;
    struct pl_node *nodes, *skips;
    size_t n_nodes, n_skips;
};

/* The value of key name in map r (a RESP3 map or a RESP2 flat array), or NULL. */
static const struct resp_reply *map_get(const struct resp_reply *r, const char *name)
{
    size_t pairs = r->type == RESP_T_MAP ? r->n : r->type == RESP_T_ARRAY ? r->n / 2 : 0;

    for (size_t i = 0; i < pairs; i++) {
        const struct resp_reply *k = r->elem[2 * i];
        if ((k->type == RESP_T_BULK || k->type == RESP_T_SIMPLE) && k->len == strlen(name) &&
            memcmp(k->str, name, k->len) == 0) {
            return r->elem[2 * i + 1];
        }
    }
    return NULL;
}

/* Text field name of r, NUL-free; with name_rule, a valid node id or rack ("" allowed if empty_ok).
 */
static bool get_text(const struct resp_reply *r, const char *name, bool name_rule, bool empty_ok,
                     const char **out)
{
    const struct resp_reply *v = map_get(r, name);

    if (v == NULL || (v->type != RESP_T_BULK && v->type != RESP_T_SIMPLE) ||
        memchr(v->str, '\0', v->len) != NULL) {
        return false;
    }
    *out = (const char *)v->str;
    if (v->len == 0) {
        return empty_ok;
    }
    return !name_rule || ring_name_valid(*out, v->len);
}

static bool get_int(const struct resp_reply *r, const char *name, int64_t *out)
{
    const struct resp_reply *v = map_get(r, name);

    if (v == NULL || (v->type != RESP_T_INT && v->type != RESP_T_BOOL)) {
        return false;
    }
    *out = v->integer;
    return true;
}

/* One element of nodes: node, rack, role, up, stands_for. */
static bool read_node(const struct resp_reply *r, struct pl_node *n)
{
    int64_t up;

    if (!get_text(r, "node", true, false, &n->node) ||
        !get_text(r, "rack", true, false, &n->rack) ||
        !get_text(r, "role", false, false, &n->role) || !get_int(r, "up", &up) ||
        !get_text(r, "stands_for", true, true, &n->other)) {
        return false;
    }
    n->up = up != 0;
    return strcmp(n->role, "primary") == 0 || strcmp(n->role, "replica") == 0 ||
           strcmp(n->role, "fallback") == 0;
}

/* One element of skipped: node, rack, token, reason, replaced_by. */
static bool read_skip(const struct resp_reply *r, struct pl_node *n)
{
    const char *reason;

    if (!get_text(r, "node", true, false, &n->node) ||
        !get_text(r, "rack", true, false, &n->rack) || !get_int(r, "token", &n->token) ||
        !get_text(r, "reason", false, false, &reason) ||
        !get_text(r, "replaced_by", true, true, &n->other)) {
        return false;
    }
    for (n->reason = 0; n->reason < sizeof(reasons) / sizeof(reasons[0]); n->reason++) {
        if (strcmp(reason, reasons[n->reason][0]) == 0) {
            return true;
        }
    }
    return false;
}

/* Read the array field name of r with one; *out is allocated (the caller frees it). */
static bool read_list(const struct resp_reply *r, const char *name,
                      bool (*one)(const struct resp_reply *, struct pl_node *),
                      struct pl_node **out, size_t *n)
{
    const struct resp_reply *v = map_get(r, name);

    if (v == NULL || v->type != RESP_T_ARRAY) {
        return false;
    }
    *out = calloc(v->n + 1, sizeof(**out));
    if (*out == NULL) {
        return false;
    }
    *n = v->n;
    for (size_t i = 0; i < v->n; i++) {
        if (!one(v->elem[i], &(*out)[i])) {
            return false;
        }
    }
    return true;
}

static bool view_read(const struct resp_reply *r, struct pl_view *v)
{
    int64_t sloppy;

    memset(v, 0, sizeof(*v));
    if (!get_text(r, "position", false, false, &v->position) || !get_int(r, "token", &v->token) ||
        !get_text(r, "token_position", false, false, &v->token_position) ||
        !get_int(r, "rf", &v->rf) || !get_int(r, "sloppy", &sloppy)) {
        return false;
    }
    v->sloppy = sloppy != 0;
    return read_list(r, "nodes", read_node, &v->nodes, &v->n_nodes) &&
           read_list(r, "skipped", read_skip, &v->skips, &v->n_skips);
}

static void view_free(struct pl_view *v)
{
    free(v->nodes);
    free(v->skips);
}

/* "" as JSON null, else the string. */
static json_t *json_or_null(const char *s)
{
    return s[0] != '\0' ? json_string(s) : json_null();
}

static json_t *view_json(const struct pl_view *v)
{
    json_t *nodes = json_array(), *skips = json_array();

    for (size_t i = 0; i < v->n_nodes; i++) {
        const struct pl_node *n = &v->nodes[i];
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:b, s:o}", "node", n->node, "rack",
                                               n->rack, "role", n->role, "up", n->up, "stands_for",
                                               json_or_null(n->other)));
    }
    for (size_t i = 0; i < v->n_skips; i++) {
        const struct pl_node *n = &v->skips[i];
        json_array_append_new(skips, json_pack("{s:s, s:s, s:I, s:s, s:o}", "node", n->node, "rack",
                                               n->rack, "token", (json_int_t)n->token, "reason",
                                               reasons[n->reason][0], "replaced_by",
                                               json_or_null(n->other)));
    }
    return json_pack("{s:s, s:I, s:s, s:I, s:b, s:o, s:o}", "position", v->position, "token",
                     (json_int_t)v->token, "token_position", v->token_position, "rf",
                     (json_int_t)v->rf, "sloppy", v->sloppy, "replicas", nodes, "skipped", skips);
}

static void view_table(const struct pl_view *v)
{
    printf("position %s   owner token %" PRId64 " at %s   rf %" PRId64 "   sloppy %s\n\n",
           v->position, v->token, v->token_position, v->rf, v->sloppy ? "yes" : "no");
    printf("%-24s %-16s %-9s %-5s %s\n", "NODE", "RACK", "ROLE", "STATE", "STANDS FOR");
    for (size_t i = 0; i < v->n_nodes; i++) {
        const struct pl_node *n = &v->nodes[i];
        printf("%-24s %-16s %-9s %-5s %s\n", n->node, n->rack, n->role, n->up ? "up" : "down",
               n->other);
    }
    if (v->n_skips == 0) {
        printf("\nno step of the walk was skipped\n");
        return;
    }
    printf("\nskipped on the walk:\n%-8s %-24s %-16s %s\n", "TOKEN", "NODE", "RACK", "REASON");
    for (size_t i = 0; i < v->n_skips; i++) {
        const struct pl_node *n = &v->skips[i];
        bool down = strcmp(reasons[n->reason][0], "down") == 0;
        printf(
            "%-8" PRId64 " %-24s %-16s %s%s%s\n", n->token, n->node, n->rack, reasons[n->reason][1],
            down ? (n->other[0] ? ", replaced by " : ", no fallback") : "", down ? n->other : "");
    }
}

int cli_preflist(int argc, char **argv)
{
    struct cli_data_opts o;
    struct resp_reply *reply = NULL;
    struct pl_view v;
    const char *cmd[3] = {"RINGKV", "PREFLIST", NULL};
    size_t lens[3] = {6, 8, 0};
    uint8_t *key = NULL;
    int rc = cli_data_opts_parse(argc, argv, PREFLIST_USAGE, CLI_DATA_HEX, &o);

    if (rc != 0) {
        return rc;
    }
    if (argc - optind != 1) {
        return cli_usage(PREFLIST_USAGE, "expected one KEY");
    }
    lens[2] = strlen(argv[optind]);
    cmd[2] = argv[optind];
    if (o.hex) {
        key = malloc(lens[2] / 2 + 1);
        if (key == NULL) {
            return cli_error("out of memory");
        }
        if (!hex_decode(key, argv[optind], lens[2])) {
            free(key);
            return cli_usage(PREFLIST_USAGE, "--hex: '%.64s' is not an even number of hex digits",
                             argv[optind]);
        }
        cmd[2] = (const char *)key;
        lens[2] /= 2;
    }
    rc = cli_data_request(&o.conn, 3, cmd, lens, &reply);
    free(key);
    if (rc != CLI_OK) {
        return rc;
    }
    if (!view_read(reply, &v)) {
        rc = cli_error("unexpected reply to RINGKV PREFLIST: not a preference list");
    } else if (o.json) {
        json_t *j = view_json(&v);
        rc = j != NULL ? cli_json_print(j) : cli_error("cannot build the JSON output");
    } else {
        view_table(&v);
    }
    view_free(&v);
    resp_reply_free(reply);
    return rc;
}
