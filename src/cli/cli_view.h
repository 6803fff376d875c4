/*
 * cli_view.h - the cluster views of `ringkv status`, `ringkv members`,
 * `ringkv ring`, `ringkv replicas` and `ringkv hints`: a node's admin
 * replies read from their reply trees, and shown as tables for people,
 * JSON for scripts and (the ring) a Graphviz digraph.  Pure: no
 * connection and no clock; output goes to the FILE given, so tests feed
 * reply trees they built and compare the text.
 *
 * The replies (RESP3 maps; in RESP2 a map is a flat array of key, value
 * pairs, and both are accepted at every level).  Numbers are integers;
 * fractions and phi are bulk strings holding decimal text (a RESP3 double
 * or an integer is accepted too); booleans are the integers 0 and 1 (or
 * RESP3 booleans).
 *
 *   RINGKV STATUS   map: id, rack, tokens, cluster_id, epoch, digest (the
 *                   ring in force), target (the ring a change under way
 *                   leads to; the digest when none is), status (the
 *                   node's own), converged (no change under way, and
 *                   every member that is up reports our digest), agree
 *                   (members up whose digest is ours, self included),
 *                   up_count, keys, map_used_bytes, uptime_s, clients,
 *                   members: one map per member in id order with id,
 *                   rack, tokens, status (joining, normal, leaving, left,
 *                   removed), up, state (alive, suspect, down, self), owns
 *                   (the fraction of the keyspace it is primary owner of),
 *                   peer_addr, client_addr, digest, target (the target
 *                   its entry reports; 0 from a node that predates them)
 *   RINGKV STATUS DEEP  map: id, digest, request_timeout_ms, members: one
 *                   map per current member (src/node/commands.c has the
 *                   reply's contract) with id, result (ok, timeout,
 *                   closed, unsupported, unreachable, down, refused,
 *                   failed), error, rtt_us, and the member's own view:
 *                   status, epoch, digest, converged, up_count, members,
 *                   uptime_s, keys ("" and -1 when it did not answer)
 *   RINGKV MEMBERS  array: one map per member, the failure detector's
 *                   view: id, state, phi, generation, version,
 *                   last_heard_ms (-1: never), mean_interval_ms, status
 *   RINGKV RING     map: epoch, digest, rf, arcs: one map per arc in ring
 *                   order (adjacent arcs with the same preference list
 *                   merged) with start (exclusive), end (inclusive),
 *                   fraction, owner, preflist (array of ids)
 *   RINGKV REPLICAS key  array: one map per replica of the key's
 *                   preference list (src/node/commands.c has the reply's
 *                   contract): node, rack, role (primary, replica,
 *                   fallback), up, answered, present, tombstone, siblings,
 *                   vclock ("id:counter,..."), value_size, digest (hex, ""
 *                   when no live value)
 *   RINGKV HINTS    map: node (the answering node's id), targets: one map
 *                   per node it keeps hints for with target, hints, up
 *   RINGKV TRANSFERS  map (src/node/transfers.h has the reply's contract):
 *                   node, status, ring, target, changing, agreed,
 *                   transfers: one map per transfer not finished with
 *                   kind (join, leave, tokens, move, serve), state (pending,
 *                   checking, streaming, verifying), direction (in, out),
 *                   start, end (hex), from, to, keys, keys_total (0:
 *                   unknown), bytes, rate_bps, eta_s (-1: unknown)
 *
 * Every field named above is required, except the target and status of
 * RINGKV STATUS and its members' targets, which a node that predates
 * ownership handoff does not send: a reply without one, or with one
 * of another type, is refused with a sentence naming it.  A share of the
 * keyspace (owns, an arc's fraction) must be a finite number from 0 to 1,
 * and a ring's arcs must not add up to more than the whole keyspace
 * (beyond the rounding of the six decimals a node prints): what a node
 * sends is outside input, and a NaN or 1e8 would otherwise reach the
 * percentages and the integer edge weights of `ring --dot`.  Fields a
 * newer node adds are kept: the JSON forms hold every field of the reply,
 * in its order, with the known ones converted (booleans to true/false,
 * fractions to numbers) and the others as respc_reply_json() gives them;
 * text that is not UTF-8 is shown as {"hex": ...}, and a key that is not
 * as "hex:" and its bytes in hex.
 *
 * Strings in the parsed structs are borrowed from the reply tree: they
 * are valid while it is.  The arrays of members and arcs are owned by the
 * struct and freed by its _free() function.
 */
#ifndef RINGKV_CLI_VIEW_H
#define RINGKV_CLI_VIEW_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "resp.h"

/* --- RINGKV STATUS --------------------------------------------------------------- */

struct view_status_member {
    const char *id, *rack, *status, *state, *peer_addr, *client_addr, *digest;
    const char *target; /* NULL: not sent */
    int64_t tokens;
    bool up;
    double owns; /* fraction of the keyspace, 0 to 1 */
};

struct view_status {
    const struct resp_reply *reply; /* the map, borrowed */
    const char *id, *rack, *cluster_id, *digest;
    const char *target, *status; /* NULL: not sent (a node that predates handoff) */
    int64_t tokens, epoch, agree, up_count, keys, map_used_bytes, uptime_s, clients;
    bool converged;
    const struct resp_reply *members_reply;
    struct view_status_member *members; /* owned; n entries */
    size_t n;
};

/*
 * Read a RINGKV STATUS reply into s.  Returns 0, or RK_ESYNTAX with a
 * sentence in err ("member 2: 'up' is missing"), or RK_ENOMEM.
 */
int view_status_parse(struct view_status *s, const struct resp_reply *r, char *err, size_t err_len);
void view_status_free(struct view_status *s);

/*
 * Whether a member still belongs to the ring's story: not left, not
 * removed.  Only these are in the table and count towards health.
 */
bool view_member_current(const struct view_status_member *m);

/* Whether a change is under way: the node names a target other than its ring. */
bool view_status_changing(const struct view_status *s);

/*
 * Healthy: converged, and every current member is up.  The exit code of
 * `ringkv status` (0 healthy, 3 not).
 */
bool view_status_healthy(const struct view_status *s);

/*
 * The two-letter code of the status table, nodetool's: U or D (up,
 * down), then N, J or L (normal, joining, leaving).  Left and removed
 * members own nothing and are not in the table (the footer names them);
 * their second letter, and that of a status this CLI does not know, is
 * '?'.  Writes 3 bytes.
 */
void view_member_code(const struct view_status_member *m, char code[3]);

/*
 * The status table: a line about the node itself, one row per current
 * member (code, id, peer address, rack, tokens, owns, detector state,
 * digest), and a footer (epoch, digest, target, agreement, converged
 * (saying when a change is under way), counts per code, members that
 * left or were removed).  Returns 0 or RK_ENOMEM.
 */
int view_status_table(FILE *f, const struct view_status *s);

/* Every field of the reply, converted (see above); NULL when out of memory. */
json_t *view_status_json(const struct view_status *s);

/* --- RINGKV STATUS DEEP ---------------------------------------------------------- */

struct view_deep_member {
    const char *id, *result, *error, *status, *digest;
    int64_t rtt_us, epoch, converged, up_count, members, uptime_s, keys;
};

struct view_deep {
    const struct resp_reply *reply; /* the map, borrowed */
    const char *id, *digest;
    int64_t request_timeout_ms;
    const struct resp_reply *members_reply;
    struct view_deep_member *members; /* owned; n entries */
    size_t n;
};

int view_deep_parse(struct view_deep *d, const struct resp_reply *r, char *err, size_t err_len);
void view_deep_free(struct view_deep *d);

/*
 * Healthy: every member answered (result ok) and every answer holds the
 * asking node's digest.  The exit code of `ringkv status --deep`.
 */
bool view_deep_healthy(const struct view_deep *d);

/*
 * One row per member (id, result, round trip, status, epoch, digest,
 * converged, members up, uptime), the errors of those that did not
 * answer, and a line saying whether the answers agree on the digest.
 */
int view_deep_table(FILE *f, const struct view_deep *d);

/* Every field of the reply, converted; NULL when out of memory. */
json_t *view_deep_json(const struct view_deep *d);

/* --- RINGKV MEMBERS -------------------------------------------------------------- */

struct view_detector_entry {
    const char *id, *state, *status;
    int64_t generation, version, last_heard_ms;
    double phi, mean_interval_ms; /* may be infinite or NaN when the node says so */
};

struct view_members {
    const struct resp_reply *reply; /* the array, borrowed */
    struct view_detector_entry *m;  /* owned; n entries */
    size_t n;
};

int view_members_parse(struct view_members *v, const struct resp_reply *r, char *err,
                       size_t err_len);
void view_members_free(struct view_members *v);

/*
 * The detector's table (state, id, generation, version, last heard, phi,
 * mean interval, status) and a line counting members per state.
 */
int view_members_table(FILE *f, const struct view_members *v);

/* {"members": [every entry, converted]}; NULL when out of memory. */
json_t *view_members_json(const struct view_members *v);

/* --- RINGKV RING ----------------------------------------------------------------- */

struct view_arc {
    const char *start, *end, *owner;
    double fraction;
    const struct resp_reply *preflist; /* an array of text, owner first */
};

struct view_ring {
    const struct resp_reply *reply; /* the map, borrowed */
    const char *digest;
    int64_t epoch, rf;
    struct view_arc *arcs; /* owned; n entries */
    size_t n;
};

int view_ring_parse(struct view_ring *v, const struct resp_reply *r, char *err, size_t err_len);
void view_ring_free(struct view_ring *v);

/* Replica i of an arc's preference list (i < arc->preflist->n). */
const char *view_arc_replica(const struct view_arc *a, size_t i);

/*
 * The arcs (start, end, share of the keyspace, preference list), then per
 * member the arcs it is primary for and its primary and replica shares
 * (replica: the keyspace it holds a copy of, primary included), then the
 * epoch, digest and rf.
 */
int view_ring_table(FILE *f, const struct view_ring *v);

/*
 * Every field of the reply, converted, and "members": the per-member
 * summary of the table ({"id", "arcs", "primary", "replica"}, in id
 * order).  NULL when out of memory.
 */
json_t *view_ring_json(const struct view_ring *v);

/*
 * A Graphviz digraph in a circular layout: members as nodes labelled
 * with their shares, an edge from each owner to each replica it hands
 * copies to, labelled and weighted by the keyspace of those arcs.
 */
int view_ring_dot(FILE *f, const struct view_ring *v);

/* --- RINGKV REPLICAS ------------------------------------------------------------- */

struct view_replica {
    const char *node, *rack, *role, *vclock, *digest;
    bool up, answered, present, tombstone;
    int64_t siblings, value_size;
    int64_t hints; /* hints the nodes asked hold for this replica for the key (hints_nodes) */
};

struct view_replicas {
    const struct resp_reply *reply; /* the array, borrowed */
    struct view_replica *r;         /* owned; n entries */
    size_t n;
    /*
     * Nodes asked for their hints of the key (RINGKV HINTS KEY), and those
     * that answered; 0 asked (as parsed): no hints column, no "hints" field.
     */
    size_t hints_nodes, hints_answered;
};

int view_replicas_parse(struct view_replicas *v, const struct resp_reply *r, char *err,
                        size_t err_len);
void view_replicas_free(struct view_replicas *v);

/* Whether every replica answered: the exit code of `ringkv replicas` (0, else 3). */
bool view_replicas_answered(const struct view_replicas *v);

/*
 * Whether the replicas agree: every one answered, and all hold the same
 * thing (present, tombstone, siblings, vclock and digest alike).
 */
bool view_replicas_agree(const struct view_replicas *v);

/*
 * A line naming the key (shown as given: key[0..key_len), control bytes
 * as '?'), one row per replica (node, rack, role, up, present, tombstone,
 * siblings, vclock, value size, digest; "-" in the columns of a replica
 * that did not answer; then, when nodes were asked for their hints, the
 * hints held for it elsewhere), and the verdict: that all agree, or the
 * groups of replicas holding the same thing and those that did not
 * answer; and which nodes did not say what hints they hold.
 */
int view_replicas_table(FILE *f, const uint8_t *key, size_t key_len, const struct view_replicas *v);

/*
 * {"key": K, "agree": bool, "replicas": [every row, converted]}; K is a
 * string, or {"hex": ...} when the key is not UTF-8.  When nodes were
 * asked for their hints, each row has "hints" too, and the object
 * "hints_nodes" and "hints_answered".  NULL when out of memory.
 */
json_t *view_replicas_json(const uint8_t *key, size_t key_len, const struct view_replicas *v);

/* --- RINGKV HINTS ---------------------------------------------------------------- */

struct view_hint_target {
    const char *target;
    int64_t hints;
    bool up;
};

struct view_hints {
    const struct resp_reply *reply; /* the map, borrowed */
    const char *node;
    const struct resp_reply *targets_reply;
    struct view_hint_target *t; /* owned; n entries */
    size_t n;
};

int view_hints_parse(struct view_hints *h, const struct resp_reply *r, char *err, size_t err_len);
void view_hints_free(struct view_hints *h);

/*
 * One node `ringkv hints` asked: its id when known before asking (NULL
 * when not), the address asked, and either its answer (error NULL) or why
 * there is none.  Borrowed strings.
 */
struct view_hints_node {
    const char *node, *addr, *error;
    struct view_hints h;
};

/*
 * One row per (node, target) with the hints held and whether the node
 * sees the target up, a row "-" for a node that holds none, then the
 * nodes that did not answer and a line of totals.
 */
int view_hints_table(FILE *f, const struct view_hints_node *nodes, size_t n);

/*
 * {"hints": total, "nodes": [{"node", "addr", "answered", "targets": [{"target",
 * "hints", "up"}]} or, for a node that did not answer, {"node", "addr",
 * "answered": false, "error"}]}; "node" is null when unknown.  NULL when
 * out of memory.
 */
json_t *view_hints_json(const struct view_hints_node *nodes, size_t n);

/* --- RINGKV TRANSFERS ------------------------------------------------------------ */

struct view_transfer {
    const char *kind, *state, *direction, *start, *end, *from, *to;
    int64_t keys, keys_total, bytes, rate_bps, eta_s;
};

struct view_transfers {
    const struct resp_reply *reply; /* the map, borrowed */
    const char *node, *status, *ring, *target;
    bool changing, agreed;
    const struct resp_reply *transfers_reply;
    struct view_transfer *t; /* owned; n entries */
    size_t n;
};

/*
 * Read a RINGKV TRANSFERS reply into v.  Counts must not be negative
 * (eta_s may be -1, unknown).  Returns 0, RK_ESYNTAX with a sentence in
 * err, or RK_ENOMEM.
 */
int view_transfers_parse(struct view_transfers *v, const struct resp_reply *r, char *err,
                         size_t err_len);
void view_transfers_free(struct view_transfers *v);

/*
 * A header line (the node, its status, ring and target digests, whether
 * a change is under way and whether every live member holds the target),
 * then one row per transfer not finished: kind, direction, the arc
 * (start..end, 8 hex digits each; "-" for a served pull, which names no
 * arc), from, to, keys (received or sent, "of" the source's count when
 * known), bytes, rate, ETA, state, and a progress bar when the count is
 * known; or a line saying there is none.  Returns 0 or RK_ENOMEM.
 */
int view_transfers_table(FILE *f, const struct view_transfers *v);

/*
 * {"node", "status", "ring", "target", "changing": bool, "agreed": bool,
 * "transfers": [one object per transfer not finished, its fields in the
 * reply's order]} (and any field a newer node adds); NULL when out of
 * memory.
 */
json_t *view_transfers_json(const struct view_transfers *v);

#endif
