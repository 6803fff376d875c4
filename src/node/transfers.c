/*
 * transfers.c - the node's side of ownership handoff (transfers.h).
 */
#include "transfers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "clock.h"
#include "commands.h"
#include "error.h"
#include "gossip.h"
#include "handoff.h"
#include "log.h"
#include "membership.h"
#include "num.h"
#include "resp.h"
#include "rpc.h"
#include "server.h"
#include "store.h"

static bool transfers_up(void *ctx, const char *id)
{
    return rpc_member_up(ctx, id);
}

static void transfers_tick(EV_P_ ev_timer *w, int revents)
{
    struct server *n = w->data;
    const struct membership *m = gossip_members(n->gossip);
    uint32_t status = membership_self(m)->e.status;
    uint64_t now = clock_mono_ms();
    struct handoff_view v = {.ring = gossip_ring(n->gossip),
                             .target = gossip_target(n->gossip),
                             .status = status,
                             .table_whole = gossip_table_whole(n->gossip),
                             .target_agreed = gossip_agreed(n->gossip, false),
                             .ring_agreed = gossip_agreed(n->gossip, true),
                             .tokens_changing = membership_self(m)->e.target_tokens != 0,
                             .now_ms = now};

    (void)loop;
    (void)revents;
    if (n->stopping) {
        return;
    }
    if (status == MSG_MEMBER_LEFT) {
        if (now - n->left_ms >= TRANSFERS_LEFT_STOP_MS) {
            server_shutdown(n, "left", 0);
        }
        return;
    }
    switch (handoff_tick(n->handoff, &v)) {
    case HANDOFF_JOINED:
        (void)gossip_set_status(n->gossip, MSG_MEMBER_NORMAL);
        break;
    case HANDOFF_LEFT:
        if (gossip_set_status(n->gossip, MSG_MEMBER_LEFT) == 0) {
            n->left_ms = now;
        }
        break;
    case HANDOFF_RETOKENED:
        (void)gossip_tokens_done(n->gossip);
        break;
    case HANDOFF_NONE:
        break;
    }
}

int transfers_start(struct server *n, char *err, size_t err_len)
{
    struct handoff_config cfg = {.rf = n->cfg.rf,
                                 .rate = n->cfg.handoff_rate,
                                 .concurrency = n->cfg.handoff_concurrency,
                                 .batch_bytes = 256 * 1024};
    struct coord_hooks ch;
    struct handoff_hooks hooks;

    rpc_coord_hooks(n, &ch); /* the coordinator's way to its peers serves the handoff too */
    hooks = (struct handoff_hooks){
        .ctx = n, .ask = ch.ask, .up = transfers_up, .body_max = ch.body_max};

    snprintf(cfg.self, sizeof(cfg.self), "%s", n->cfg.id);
    if (handoff_create(&n->handoff, n->store, &cfg, &hooks) != 0) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    ev_timer_init(&n->handoff_w, transfers_tick, TRANSFERS_TICK_S, TRANSFERS_TICK_S);
    n->handoff_w.data = n;
    ev_timer_start(n->loop, &n->handoff_w);
    return 0;
}

void transfers_stop(struct server *n)
{
    if (n->handoff != NULL) {
        ev_timer_stop(n->loop, &n->handoff_w);
    }
}

void transfers_free(struct server *n)
{
    handoff_destroy(n->handoff);
    n->handoff = NULL;
}

/* --- verbs ------------------------------------------------------------------------- */

void ringkv_leave(struct client *c, struct pending *p)
{
    struct server *n = c->node;
    const struct membership *m = gossip_members(n->gossip);
    uint32_t status = membership_self(m)->e.status;
    const struct ring *ring = gossip_ring(n->gossip);
    int rc;

    if (status == MSG_MEMBER_LEAVING) {
        resp_put_simple(client_reply(p), "OK"); /* already: the same request again */
        return;
    }
    if (status != MSG_MEMBER_NORMAL) {
        client_error(p, "ERR RINGKV LEAVE: this node is %s, not normal%s",
                     membership_status_names[status],
                     status == MSG_MEMBER_JOINING ? ": it is still receiving its arcs" : "");
        return;
    }
    if (ring == NULL || ring_member_count(ring) <= 1) {
        client_error(p, "ERR RINGKV LEAVE: this node is the ring's last one: its keys would have "
                        "nowhere to go");
        return;
    }
    rc = gossip_set_status(n->gossip, MSG_MEMBER_LEAVING);
    if (rc != 0) {
        client_error(p, "ERR RINGKV LEAVE: %s", rk_strerror(rc));
        return;
    }
    resp_put_simple(client_reply(p), "OK");
}

struct transfer_rows {
    struct client *c;
    struct buf rows;
    size_t n;
};

static void put_hex(struct buf *out, uint64_t v)
{
    char hex[17];

    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)v);
    resp_put_bulk_str(out, hex);
}

static void transfer_row(void *ctx, const struct handoff_transfer *t)
{
    struct transfer_rows *r = ctx;
    struct buf *out = &r->rows;
    int proto = r->c->proto;

    resp_put_map(out, 12, proto);
    resp_put_bulk_str(out, "kind");
    resp_put_bulk_str(out, t->kind);
    resp_put_bulk_str(out, "state");
    resp_put_bulk_str(out, t->state);
    resp_put_bulk_str(out, "direction");
    resp_put_bulk_str(out, t->incoming ? "in" : "out");
    resp_put_bulk_str(out, "start");
    put_hex(out, t->start);
    resp_put_bulk_str(out, "end");
    put_hex(out, t->end);
    resp_put_bulk_str(out, "from");
    resp_put_bulk_str(out, t->from);
    resp_put_bulk_str(out, "to");
    resp_put_bulk_str(out, t->to);
    resp_put_bulk_str(out, "keys");
    resp_put_int(out, (int64_t)t->keys);
    resp_put_bulk_str(out, "keys_total");
    resp_put_int(out, (int64_t)t->keys_total);
    resp_put_bulk_str(out, "bytes");
    resp_put_int(out, (int64_t)t->bytes);
    resp_put_bulk_str(out, "rate_bps");
    resp_put_int(out, (int64_t)t->rate);
    resp_put_bulk_str(out, "eta_s");
    resp_put_int(out, t->eta_s);
    r->n++;
}

void ringkv_transfers(struct client *c, struct pending *p)
{
    struct server *n = c->node;
    const struct membership *m = gossip_members(n->gossip);
    struct transfer_rows r = {.c = c};
    struct buf *out;
    uint64_t rd = membership_digest(m), td = membership_target_digest(m);

    buf_init(&r.rows, 0);
    handoff_each(n->handoff, transfer_row, &r);
    out = client_reply(p);
    resp_put_map(out, 7, c->proto);
    resp_put_bulk_str(out, "node");
    resp_put_bulk_str(out, n->cfg.id);
    resp_put_bulk_str(out, "status");
    resp_put_bulk_str(out, membership_status_names[membership_self(m)->e.status]);
    resp_put_bulk_str(out, "ring");
    put_hex(out, rd);
    resp_put_bulk_str(out, "target");
    put_hex(out, td);
    resp_put_bulk_str(out, "changing");
    resp_put_int(out, rd != td);
    resp_put_bulk_str(out, "agreed");
    resp_put_int(out, gossip_agreed(n->gossip, false));
    resp_put_bulk_str(out, "transfers");
    resp_put_array(out, r.n);
    buf_append(out, buf_data(&r.rows), r.rows.len);
    buf_free(&r.rows);
}

/* --- plans (dry runs) -------------------------------------------------------------- */

enum plan_kind { PLAN_LEAVE, PLAN_REMOVE, PLAN_TOKENS, PLAN_JOIN };

/*
 * The ring the change would give: the ring in force's members with the
 * change made (a member out, another token count, one more member).
 * RK_ENOTFOUND for a member not in the ring.
 */
static int plan_ring(struct server *n, enum plan_kind kind, const char *id, const char *rack,
                     uint32_t tokens, struct ring **out)
{
    const struct membership *m = gossip_members(n->gossip);
    size_t count = membership_count(m), k = 0;
    struct ring_member *rm = calloc(count + 1, sizeof(*rm));
    bool found = false;
    int rc;

    if (rm == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        const struct member_entry *e = &membership_at(m, i)->e;
        bool it = strcmp(e->id, id) == 0;
        if (!membership_in_ring(e->status)) {
            continue;
        }
        found |= it;
        if (it && (kind == PLAN_LEAVE || kind == PLAN_REMOVE)) {
            continue;
        }
        rm[k].id = e->id;
        rm[k].rack = membership_entry_rack(e);
        rm[k].tokens = it && kind == PLAN_TOKENS ? tokens : e->tokens;
        k++;
    }
    if (kind == PLAN_JOIN && !found) {
        rm[k].id = id;
        rm[k].rack = rack;
        rm[k].tokens = tokens;
        k++;
        found = true;
    }
    rc = !found ? RK_ENOTFOUND : ring_create(out, n->cfg.ring_seed, rm, k);
    free(rm);
    return rc;
}

/* What a change would do: its target ring, the arcs that move, and every member's share. */
struct plan {
    const struct ring *ring; /* in force, borrowed */
    struct ring *target;
    struct ring_diff d;
    ring_len *before, *after; /* ring_ownership() of ring and target */
};

static void plan_free(struct plan *pl)
{
    free(pl->before);
    free(pl->after);
    ring_diff_free(&pl->d);
    ring_unref(pl->target);
}

/*
 * The plan of a change (plan_ring()'s arguments): RK_ENOTFOUND for a member
 * not in the ring, RK_EEMPTY when the ring would be empty, RK_ENOMEM; on
 * an error nothing is held.
 */
static int plan_make(struct server *n, enum plan_kind kind, const char *id, const char *rack,
                     uint32_t tokens, struct plan *pl)
{
    int rc;

    memset(pl, 0, sizeof(*pl));
    pl->ring = gossip_ring(n->gossip);
    rc = plan_ring(n, kind, id, rack, tokens, &pl->target);
    if (rc != 0) {
        return rc;
    }
    if (ring_member_count(pl->target) == 0) {
        ring_unref(pl->target);
        return RK_EEMPTY;
    }
    rc = ring_diff(pl->ring, pl->target, n->cfg.rf, &pl->d);
    if (rc != 0) {
        ring_unref(pl->target);
        return rc;
    }
    pl->before = calloc(ring_member_count(pl->ring) + 1, sizeof(*pl->before));
    pl->after = calloc(ring_member_count(pl->target) + 1, sizeof(*pl->after));
    if (pl->before == NULL || pl->after == NULL ||
        ring_ownership(pl->ring, n->cfg.rf, pl->before) != 0 ||
        ring_ownership(pl->target, n->cfg.rf, pl->after) != 0) {
        plan_free(pl);
        return RK_ENOMEM;
    }
    return 0;
}

static uint64_t scale(uint64_t v, double f)
{
    return (uint64_t)((double)v * f + 0.5);
}

/*
 * RINGKV PLAN LEAVE id | REMOVE id | TOKENS id n | JOIN id rack tokens:
 * what the change would move, without making it (`--dry-run`): a map of
 *   change, member, ring, target (hex), moved_fraction (of the circle
 *   whose replicas change), arcs (that would be streamed), copies_fraction
 *   (replica copies to stream, in circles), keys, bytes (estimated from
 *   this node's data: what it holds of each moving arc, scaled by the arc
 *   lengths it does not hold), and owners: per member after the change,
 *   id, share_before and share_after (parts of the circle it replicates,
 *   as text with 4 decimals).
 */
void ringkv_plan(struct client *c, struct pending *p)
{
    static const char *const kinds[] = {"leave", "remove", "tokens", "join"};
    struct server *n = c->node;
    const struct resp_cmd *cmd = p->cmd;
    const struct ring *ring = gossip_ring(n->gossip);
    const struct ring *target;
    struct plan pl;
    enum plan_kind kind;
    char id[RING_NAME_MAX + 1] = "", rack[RING_NAME_MAX + 1] = "";
    uint64_t tokens = 0, keys = 0, bytes = 0, held_keys = 0, held_bytes = 0;
    ring_len held_len = 0, moved_len = 0;
    const ring_len *before, *after;
    struct buf *out;
    size_t want;
    int rc;

    if (cmd->argc < 4) {
        client_error(p, "ERR RINGKV PLAN: LEAVE id, REMOVE id, TOKENS id n or JOIN id rack tokens");
        return;
    }
    if (resp_arg_is(cmd, 2, "leave")) {
        kind = PLAN_LEAVE, want = 4;
    } else if (resp_arg_is(cmd, 2, "remove")) {
        kind = PLAN_REMOVE, want = 4;
    } else if (resp_arg_is(cmd, 2, "tokens")) {
        kind = PLAN_TOKENS, want = 5;
    } else if (resp_arg_is(cmd, 2, "join")) {
        kind = PLAN_JOIN, want = 6;
    } else {
        client_error(p, "ERR RINGKV PLAN: the change is LEAVE, REMOVE, TOKENS or JOIN");
        return;
    }
    if (cmd->argc != want || cmd->argv[3].len == 0 || cmd->argv[3].len > RING_NAME_MAX ||
        !ring_name_valid((const char *)cmd->argv[3].p, cmd->argv[3].len)) {
        client_error(p, "ERR RINGKV PLAN %s: wrong arguments, or an invalid member id",
                     kinds[kind]);
        return;
    }
    memcpy(id, cmd->argv[3].p, cmd->argv[3].len);
    if (kind == PLAN_JOIN && (cmd->argv[4].len == 0 || cmd->argv[4].len > RING_NAME_MAX ||
                              !ring_name_valid((const char *)cmd->argv[4].p, cmd->argv[4].len))) {
        client_error(p, "ERR RINGKV PLAN JOIN: an invalid rack");
        return;
    }
    if (kind == PLAN_JOIN) {
        memcpy(rack, cmd->argv[4].p, cmd->argv[4].len);
    }
    if (kind == PLAN_TOKENS || kind == PLAN_JOIN) {
        const struct resp_arg *a = &cmd->argv[kind == PLAN_JOIN ? 5 : 4];
        if (num_parse_u64((const char *)a->p, a->len, RING_TOKENS_MAX, &tokens) != 0 ||
            tokens < RING_TOKENS_MIN) {
            client_error(p, "ERR RINGKV PLAN: tokens must be %u to %u", RING_TOKENS_MIN,
                         RING_TOKENS_MAX);
            return;
        }
    }
    if (ring == NULL || ring_member_count(ring) == 0) {
        client_error(p, "ERR RINGKV PLAN: this node holds no ring yet");
        return;
    }
    rc = plan_make(n, kind, id, rack, (uint32_t)tokens, &pl);
    if (rc == RK_ENOTFOUND) {
        client_error(p, "ERR RINGKV PLAN %s: '%s' is not in the ring", kinds[kind], id);
        return;
    }
    if (rc == RK_EEMPTY) {
        client_error(p, "ERR RINGKV PLAN %s: the ring would be empty", kinds[kind]);
        return;
    }
    if (rc != 0) {
        client_error(p, "ERR RINGKV PLAN: %s", rk_strerror(rc));
        return;
    }
    target = pl.target;
    before = pl.before;
    after = pl.after;
    /* keys and bytes: what this node holds of the moving arcs, scaled to their whole length */
    for (size_t i = 0; i < pl.d.n_moves; i++) {
        const struct ring_move *mv = &pl.d.moves[i];
        uint64_t k = 0, b = 0;
        if (mv->n_gain == 0) {
            continue;
        }
        moved_len += mv->len * mv->n_gain;
        for (size_t j = 0; j < mv->n_old; j++) {
            if (strcmp(mv->old_list[j], n->cfg.id) == 0 &&
                store_arc_stats(n->store, mv->start, mv->end, &k, &b) == 0) {
                held_len += mv->len * mv->n_gain;
                held_keys += k * mv->n_gain;
                held_bytes += b * mv->n_gain;
            }
        }
    }
    if (held_len > 0) {
        double f = (double)moved_len / (double)held_len;
        keys = scale(held_keys, f);
        bytes = scale(held_bytes, f);
    } else {
        struct store_stats st;
        ring_len *own = calloc(ring_member_count(ring), sizeof(*own));
        int me = ring_member_find(ring, n->cfg.id);
        store_get_stats(n->store, &st);
        if (own != NULL && me >= 0 && ring_ownership(ring, n->cfg.rf, own) == 0 && own[me] > 0) {
            double per_circle = (double)st.keys / ring_len_fraction(own[me]);
            keys = scale((uint64_t)per_circle, ring_len_fraction(moved_len));
            /* no arc of it here to measure: the store's pages per key */
            bytes = st.keys > 0 ? scale(st.map_used / st.keys, (double)keys) : 0;
        }
        free(own);
    }
    out = client_reply(p);
    resp_put_map(out, 11, c->proto);
    resp_put_bulk_str(out, "change");
    resp_put_bulk_str(out, kinds[kind]);
    resp_put_bulk_str(out, "member");
    resp_put_bulk_str(out, id);
    resp_put_bulk_str(out, "ring");
    put_hex(out, ring_digest(ring));
    resp_put_bulk_str(out, "target");
    put_hex(out, ring_digest(target));
    {
        char f[32];
        snprintf(f, sizeof(f), "%.4f", ring_len_fraction(pl.d.moved));
        resp_put_bulk_str(out, "moved_fraction");
        resp_put_bulk_str(out, f);
        snprintf(f, sizeof(f), "%.4f", ring_len_fraction(pl.d.copies));
        resp_put_bulk_str(out, "copies_fraction");
        resp_put_bulk_str(out, f);
    }
    {
        size_t arcs = 0;
        for (size_t i = 0; i < pl.d.n_moves; i++) {
            arcs += pl.d.moves[i].n_gain > 0;
        }
        resp_put_bulk_str(out, "arcs");
        resp_put_int(out, (int64_t)arcs);
    }
    resp_put_bulk_str(out, "keys");
    resp_put_int(out, (int64_t)keys);
    resp_put_bulk_str(out, "bytes");
    resp_put_int(out, (int64_t)bytes);
    resp_put_bulk_str(out, "estimated_from");
    resp_put_bulk_str(out, n->cfg.id);
    resp_put_bulk_str(out, "owners");
    {
        size_t nm = ring_member_count(ring), nt = ring_member_count(target), rows = nm;
        for (size_t i = 0; i < nt; i++) {
            rows += ring_member_find(ring, ring_member_id(target, (uint32_t)i)) < 0;
        }
        resp_put_array(out, rows);
        for (size_t i = 0; i < nm + nt; i++) {
            const char *who = i < nm ? ring_member_id(ring, (uint32_t)i)
                                     : ring_member_id(target, (uint32_t)(i - nm));
            int b = ring_member_find(ring, who), a = ring_member_find(target, who);
            char sb[16], sa[16];
            if (i >= nm && b >= 0) {
                continue;
            }
            snprintf(sb, sizeof(sb), "%.4f", b >= 0 ? ring_len_fraction(before[b]) : 0.0);
            snprintf(sa, sizeof(sa), "%.4f", a >= 0 ? ring_len_fraction(after[a]) : 0.0);
            resp_put_map(out, 3, c->proto);
            resp_put_bulk_str(out, "id");
            resp_put_bulk_str(out, who);
            resp_put_bulk_str(out, "share_before");
            resp_put_bulk_str(out, sb);
            resp_put_bulk_str(out, "share_after");
            resp_put_bulk_str(out, sa);
        }
    }
    plan_free(&pl);
}

/* --- token counts ------------------------------------------------------------------ */

/*
 * The churn alarm of a token change: the part of the circle whose replicas
 * would change, against what the change of this node's share predicts (a
 * node whose share grows by f gains f of the circle: that part's replica
 * sets change, and no other's should).  Far more than that (more than
 * TOKENS_CHURN_FACTOR times, plus TOKENS_CHURN_SLACK for the rounding of
 * arcs in a small ring) is the sign of a mistake.
 */
#define TOKENS_CHURN_FACTOR 2.0
#define TOKENS_CHURN_SLACK 0.02
/*
 * A count more than this many times the one in force, or less than its
 * part, is refused unless forced too: a digit too many (256 -> 2560)
 * moves no more than the share predicts, but hands one node most of the
 * ring; a weight is changed in steps.
 */
#define TOKENS_STEP_MAX 4

struct tokens_figures {
    double moved, share_before, share_after;
};

static int tokens_figures(struct server *n, uint32_t tokens, struct tokens_figures *f)
{
    struct plan pl;
    int rc = plan_make(n, PLAN_TOKENS, n->cfg.id, "", tokens, &pl);
    int b, a;

    if (rc != 0) {
        return rc;
    }
    b = ring_member_find(pl.ring, n->cfg.id);
    a = ring_member_find(pl.target, n->cfg.id);
    if (b < 0 || a < 0) {
        rc = RK_ENOTFOUND;
    } else {
        f->moved = ring_len_fraction(pl.d.moved);
        f->share_before = ring_len_fraction(pl.before[b]);
        f->share_after = ring_len_fraction(pl.after[a]);
    }
    plan_free(&pl);
    return rc;
}

static void ringkv_tokens_saved(void *ctx, int rc, bool queued, const char *err)
{
    struct pending *p = ctx;

    if (rc != 0) {
        client_error(p, "ERR RINGKV TOKENS: %s", err);
    } else {
        resp_put_simple(client_reply(p), queued ? "QUEUED" : "OK");
    }
    client_finish(p);
}

int ringkv_tokens(struct client *c, struct pending *p)
{
    struct server *n = c->node;
    const struct resp_cmd *cmd = p->cmd;
    const struct member_entry *self = &membership_self(gossip_members(n->gossip))->e;
    const struct ring *ring = gossip_ring(n->gossip);
    struct tokens_figures f;
    bool force = cmd->argc == 4 && resp_arg_is(cmd, 3, "force");
    char err[256];
    uint64_t tokens;
    double predicted;
    int rc;

    if ((cmd->argc == 4 && !force) ||
        num_parse_u64((const char *)cmd->argv[2].p, cmd->argv[2].len, RING_TOKENS_MAX, &tokens) !=
            0 ||
        tokens < RING_TOKENS_MIN) {
        client_error(p, "ERR RINGKV TOKENS: n [FORCE], n from %u to %u", RING_TOKENS_MIN,
                     RING_TOKENS_MAX);
        return CMD_DONE;
    }
    if (self->status != MSG_MEMBER_NORMAL) {
        client_error(p, "ERR RINGKV TOKENS: this node is %s, not normal",
                     membership_status_names[self->status]);
        return CMD_DONE;
    }
    if (tokens != self->tokens && !force && ring != NULL && ring_member_count(ring) > 0) {
        rc = tokens_figures(n, (uint32_t)tokens, &f);
        if (rc != 0) {
            client_error(p, "ERR RINGKV TOKENS: %s", rk_strerror(rc));
            return CMD_DONE;
        }
        predicted = f.share_after > f.share_before ? f.share_after - f.share_before
                                                   : f.share_before - f.share_after;
        if (tokens > (uint64_t)self->tokens * TOKENS_STEP_MAX ||
            tokens * TOKENS_STEP_MAX < self->tokens) {
            LOG(LOG_WARN, "churn_alarm",
                "change=tokens tokens=%u target_tokens=%u moved_fraction=%.4f share_before=%.4f "
                "share_after=%.4f",
                self->tokens, (unsigned)tokens, f.moved, f.share_before, f.share_after);
            client_error(p,
                         "ERR RINGKV TOKENS: %u -> %u tokens is a step of more than %ux: it would "
                         "move the replicas of %.1f%% of the ring and take this node's share "
                         "%.1f%% -> %.1f%%; change a weight in smaller steps, or give FORCE",
                         self->tokens, (unsigned)tokens, TOKENS_STEP_MAX, f.moved * 100,
                         f.share_before * 100, f.share_after * 100);
            return CMD_DONE;
        }
        if (f.moved > TOKENS_CHURN_FACTOR * predicted + TOKENS_CHURN_SLACK) {
            LOG(LOG_WARN, "churn_alarm",
                "change=tokens tokens=%u target_tokens=%u moved_fraction=%.4f share_before=%.4f "
                "share_after=%.4f",
                self->tokens, (unsigned)tokens, f.moved, f.share_before, f.share_after);
            client_error(p,
                         "ERR RINGKV TOKENS: %u -> %u tokens would move the replicas of %.1f%% of "
                         "the ring while this node's share goes %.1f%% -> %.1f%%: far more than "
                         "the share's change; give FORCE to make it anyway",
                         self->tokens, (unsigned)tokens, f.moved * 100, f.share_before * 100,
                         f.share_after * 100);
            return CMD_DONE;
        }
    }
    if (gossip_set_tokens(n->gossip, (uint32_t)tokens, ringkv_tokens_saved, p, err, sizeof(err)) !=
        0) {
        client_error(p, "ERR RINGKV TOKENS: %s", err);
        return CMD_DONE;
    }
    return CMD_ASYNC;
}
