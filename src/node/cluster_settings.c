/*
 * cluster_settings.c - building and comparing the cluster settings a node
 * announces in IDENT (cluster_settings.h).
 *
 * The conflicts mode travels by its setting name ("siblings", "lww"), the
 * text settings_format() gives, so a peer's value is printed as the
 * operator would write it even when this node does not know it; the ring
 * seed travels as its 16 bytes and is printed as the setting's 32 hex
 * digits.
 */
#include "cluster_settings.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "hex.h"

void cluster_settings_from(const struct settings *cfg, struct msg_cluster *out)
{
    memset(out, 0, sizeof(*out));
    out->rf = cfg->rf;
    settings_format(cfg, settings_find("conflicts"), out->conflicts, sizeof(out->conflicts));
    memcpy(out->ring_seed, cfg->ring_seed, sizeof(out->ring_seed));
}

bool cluster_settings_compare(const struct msg_cluster *ours, const struct msg_cluster *theirs,
                              const char *peer_id, char *line, size_t cap)
{
    char a[2 * RING_SEED_LEN + 1], b[2 * RING_SEED_LEN + 1];

    if (ours->rf != theirs->rf) {
        snprintf(line, cap, "rf: this node has %" PRIu32 ", peer %s has %" PRIu32, ours->rf,
                 peer_id, theirs->rf);
        return false;
    }
    if (strcmp(ours->conflicts, theirs->conflicts) != 0) {
        snprintf(line, cap, "conflicts: this node has %s, peer %s has %s", ours->conflicts, peer_id,
                 theirs->conflicts);
        return false;
    }
    if (memcmp(ours->ring_seed, theirs->ring_seed, sizeof(ours->ring_seed)) != 0) {
        hex_encode(a, ours->ring_seed, sizeof(ours->ring_seed));
        hex_encode(b, theirs->ring_seed, sizeof(theirs->ring_seed));
        snprintf(line, cap, "ring-seed: this node has %s, peer %s has %s", a, peer_id, b);
        return false;
    }
    return true;
}
