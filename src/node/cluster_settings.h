/*
 * cluster_settings.h - the settings every member of a cluster must share:
 * rf, conflicts and ring-seed.  Two members that differ on rf or
 * ring-seed disagree on where a key lives; on conflicts, on how versions
 * merge.  So each node announces its values in IDENT (proto/msg.h,
 * struct msg_cluster), the data directory keeps the values the node was
 * formed with (storage/store.c, meta records rf, conflicts and seed), and
 * a peer whose values differ is refused at the handshake with one line
 * naming the setting and both values.  Per-request R and W are not
 * cluster settings.
 *
 * At the handshake: a peer that announced no settings (a version-1 node,
 * or `ringkv peer-check`) is accepted, since it has nothing to compare.
 * One whose settings differ is refused: a node still joining (gossip.h)
 * prints the line on stderr and exits 2, since it would otherwise join a
 * cluster that places and merges keys differently; a member keeps
 * running, closes that connection, counts it (peer_rejected reason
 * `settings`) and logs the line once per peer and line, however often
 * gossip redials (the suppression table below).
 */
#ifndef RINGKV_CLUSTER_SETTINGS_H
#define RINGKV_CLUSTER_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msg.h"
#include "settings.h"

/* Room for the line cluster_settings_compare() writes. */
#define CLUSTER_SETTINGS_LINE_MAX 512
/*
 * Peers whose refusal was logged, remembered to log each once.  Past this
 * many the oldest is forgotten (and would be logged again): a cluster has
 * far fewer mismatched nodes than this at any one time.
 */
#define CLUSTER_REFUSALS_MAX 64

struct server;
struct peer;

/* The refusals logged so far: the peer id and a hash of the line. */
struct cluster_refusals {
    struct {
        char id[RING_NAME_MAX + 1];
        uint64_t line_hash;
    } e[CLUSTER_REFUSALS_MAX];
    size_t n;    /* entries in use */
    size_t next; /* the entry to overwrite when full */
};

/* This node's cluster settings from its configuration, as IDENT carries them. */
void cluster_settings_from(const struct settings *cfg, struct msg_cluster *out);

/*
 * Compare a peer's announced settings with ours.  True when they agree;
 * false with line set to the first that differs, by name, with ours and
 * the peer's value: "rf: this node has 3, peer n2 has 2".
 */
bool cluster_settings_compare(const struct msg_cluster *ours, const struct msg_cluster *theirs,
                              const char *peer_id, char *line, size_t cap);

/*
 * Judge the cluster settings of p's IDENT id (before p counts as
 * identified).  True: accept.  False: refused as the header says; p is
 * closed, and when this node is still joining the event loop is stopped
 * with exit code CLUSTER_SETTINGS_EXIT.
 */
bool cluster_settings_accept(struct server *n, struct peer *p, const struct msg_ident *id);

/* ringkvd's exit code when a member refused its cluster settings (it refuses to start). */
#define CLUSTER_SETTINGS_EXIT 2

#endif
