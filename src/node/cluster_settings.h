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
 */
#ifndef RINGKV_CLUSTER_SETTINGS_H
#define RINGKV_CLUSTER_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "msg.h"
#include "settings.h"

/* Room for the line cluster_settings_compare() writes. */
#define CLUSTER_SETTINGS_LINE_MAX 256

/* This node's cluster settings from its configuration, as IDENT carries them. */
void cluster_settings_from(const struct settings *cfg, struct msg_cluster *out);

/*
 * Compare a peer's announced settings with ours.  True when they agree;
 * false with line set to the first that differs, by name, with ours and
 * the peer's value: "rf: this node has 3, peer n2 has 2".
 */
bool cluster_settings_compare(const struct msg_cluster *ours, const struct msg_cluster *theirs,
                              const char *peer_id, char *line, size_t cap);

#endif
