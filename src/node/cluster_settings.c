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

#include <ev.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gossip.h"
#include "hex.h"
#include "log.h"
#include "membership.h"
#include "peer.h"
#include "server.h"

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

/* FNV-1a, 64 bits: tells one refusal line from another for log suppression. */
static uint64_t cluster_line_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull;

    for (; *s != '\0'; s++) {
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    }
    return h;
}

/* Remember (id, line); true when it was not remembered yet, i.e. log it. */
static bool cluster_refusals_first(struct cluster_refusals *r, const char *id, const char *line)
{
    uint64_t h = cluster_line_hash(line);
    size_t slot;

    for (size_t i = 0; i < r->n; i++) {
        if (r->e[i].line_hash == h && strcmp(r->e[i].id, id) == 0) {
            return false;
        }
    }
    slot = r->n < CLUSTER_REFUSALS_MAX ? r->n++ : r->next;
    r->next = r->n < CLUSTER_REFUSALS_MAX ? r->next : (slot + 1) % CLUSTER_REFUSALS_MAX;
    snprintf(r->e[slot].id, sizeof(r->e[slot].id), "%s", id);
    r->e[slot].line_hash = h;
    return true;
}

static bool cluster_joining(const struct server *n)
{
    const struct membership *m = n->gossip != NULL ? gossip_members(n->gossip) : NULL;

    return m != NULL && membership_self(m)->e.status == MSG_MEMBER_JOINING;
}

bool cluster_settings_accept(struct server *n, struct peer *p, const struct msg_ident *id)
{
    char line[CLUSTER_SETTINGS_LINE_MAX], who[RING_NAME_MAX + MSG_ADDR_MAX + 4];
    struct msg_cluster ours;

    if (!id->has_cluster) {
        return true;
    }
    cluster_settings_from(&n->cfg, &ours);
    snprintf(who, sizeof(who), "%s (%s)", id->id, id->peer_addr);
    if (cluster_settings_compare(&ours, &id->cluster, who, line, sizeof(line))) {
        return true;
    }
    n->metrics.peer_rejected[METRICS_REJECT_SETTINGS]++;
    if (cluster_joining(n)) {
        fprintf(stderr, "ringkvd: %s; refusing to join a cluster with other cluster settings\n",
                line);
        LOG(LOG_ERROR, "cluster_settings_refused", "peer=%s remote_id=%s joining=1 msg=\"%s\"",
            p->addr, id->id, line);
        n->exit_code = CLUSTER_SETTINGS_EXIT;
        ev_break(n->loop, EVBREAK_ALL);
    } else if (cluster_refusals_first(&n->refusals, id->id, line)) {
        LOG(LOG_ERROR, "cluster_settings_refused", "peer=%s remote_id=%s joining=0 msg=\"%s\"",
            p->addr, id->id, line);
    }
    peer_close(p, "cluster_settings");
    return false;
}
