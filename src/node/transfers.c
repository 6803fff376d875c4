/*
 * transfers.c - the node's side of ownership handoff (transfers.h).
 */
#include "transfers.h"

#include <stdio.h>
#include <string.h>

#include "client.h"
#include "clock.h"
#include "error.h"
#include "gossip.h"
#include "handoff.h"
#include "log.h"
#include "membership.h"
#include "resp.h"
#include "rpc.h"
#include "server.h"

static bool transfers_up(void *ctx, const char *id)
{
    return rpc_member_up(ctx, id);
}

static int transfers_ask(void *ctx, const char *id, uint32_t op, const uint8_t *body, size_t len,
                         coord_answer_fn done, void *dctx)
{
    struct coord_hooks h;

    rpc_coord_hooks(ctx, &h);
    return h.ask(ctx, id, op, body, len, done, dctx);
}

static size_t transfers_body_max(void *ctx, const char *id)
{
    struct coord_hooks h;

    rpc_coord_hooks(ctx, &h);
    return h.body_max(ctx, id);
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
    struct handoff_hooks hooks = {
        .ctx = n, .ask = transfers_ask, .up = transfers_up, .body_max = transfers_body_max};

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
