/*
 * server.c - creating, running and stopping a node (server.h).
 *
 * Shutdown.  The first SIGTERM or SIGINT stops the listeners, stops every
 * client from reading, and lets each finish the commands it already read:
 * their writes complete (or fail) and their replies go out, then the
 * connection closes.  When every client is gone, or SERVER_SHUTDOWN_GRACE_MS
 * has passed, the loop ends and server_destroy() closes the store, which
 * first completes every write still queued.  A second signal exits at
 * once: LMDB is crash-safe, so what was acknowledged stays, and nothing
 * unacknowledged was promised.
 *
 * Wiring.  server_open() creates the layers below bottom up (store, kv,
 * gossip) and hands each what it needs as values and callbacks; the
 * callbacks are the functions of "the layers below" here, each a line or
 * two that routes to peer.c, gossip or server_shutdown().
 */
#include "server.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bulktest.h"
#include "client.h"
#include "clock.h"
#include "collect.h"
#include "coord.h"
#include "error.h"
#include "gossip.h"
#include "kv.h"
#include "log.h"
#include "net.h"
#include "peer.h"
#include "handoff.h"
#include "reaper.h"
#include "transfers.h"
#include "reload.h"
#include "rpc.h"

/* Pending connections the kernel keeps per listener: Redis's tcp-backlog default. */
#define NODE_LISTEN_BACKLOG 511
/* How often a stopping node checks whether its clients are gone. */
#define NODE_SHUTDOWN_POLL_S 0.02

uint64_t server_uptime_s(const struct server *n)
{
    return (clock_mono_ms() - n->start_ms) / 1000;
}

/* --- listeners ------------------------------------------------------------------- */

static void http_accept(struct server *n, int fd, const struct sockaddr_storage *addr)
{
    (void)addr;
    metrics_http_accept(n, fd);
}

/*
 * accept() failed with err, typically for want of descriptors or memory
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM), which only a closed connection frees:
 * stop watching the socket for a pause (doubling up to SERVER_ACCEPT_PAUSE_MAX_MS), since it
 * stays readable while the connection waits in the backlog and watching it
 * would spin the loop.  Counted; logged at most once a second per port.
 */
static void server_accept_pause(struct server_listener *l, int err)
{
    struct server *n = l->node;
    uint32_t next = l->pause_ms == 0 ? SERVER_ACCEPT_PAUSE_MIN_MS : 2 * l->pause_ms;

    l->pause_ms = next < SERVER_ACCEPT_PAUSE_MAX_MS ? next : SERVER_ACCEPT_PAUSE_MAX_MS;
    n->metrics.accept_errors++;
    LOG_LIMITED(&l->log, LOG_WARN, "accept_failed", "port=%s error=\"%s\" pause_ms=%u", l->name,
                strerror(err), l->pause_ms);
    ev_io_stop(n->loop, &l->w);
    ev_timer_set(&l->pause_w, l->pause_ms / 1000.0, 0.);
    ev_timer_start(n->loop, &l->pause_w);
}

static void on_listener(struct ev_loop *loop, ev_io *w, int revents)
{
    struct server_listener *l = w->data;
    struct sockaddr_storage addr;
    socklen_t len;
    int fd;

    (void)loop;
    (void)revents;
    for (;;) {
        fd = net_accept(l->fd, &addr, &len);
        if (fd >= 0) {
            l->pause_ms = 0;
            l->take(l->node, fd, &addr);
            continue;
        }
        if (errno == ECONNABORTED || errno == EPROTO || errno == EPERM) {
            continue; /* that connection is gone (or a firewall refused it): take the next */
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            server_accept_pause(l, errno);
        }
        return;
    }
}

/* A pause is over: watch the socket again (a starved accept pauses again, longer). */
static void on_listener_pause(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server_listener *l = w->data;

    (void)revents;
    if (l->fd >= 0 && !l->node->stopping) {
        ev_io_start(loop, &l->w);
    }
}

static int server_listen(struct server *n, enum server_port port, const struct settings_addr *a,
                         void (*take)(struct server *, int, const struct sockaddr_storage *),
                         char *err, size_t err_len)
{
    static const char *const names[SERVER_LISTENERS] = {"client", "listen", "metrics"};
    struct server_listener *l = &n->listeners[port];
    char why[256];

    l->name = names[port];
    l->node = n;
    l->take = take;
    l->fd = net_listen(a->host, a->port, NODE_LISTEN_BACKLOG, why, sizeof(why));
    if (l->fd < 0) {
        snprintf(err, err_len, "%s: %s", l->name, why);
        return l->fd;
    }
    ev_io_init(&l->w, on_listener, l->fd, EV_READ);
    ev_timer_init(&l->pause_w, on_listener_pause, 0., 0.);
    l->w.data = l->pause_w.data = l;
    return 0;
}

static void server_close_listeners(struct server *n)
{
    for (size_t i = 0; i < SERVER_LISTENERS; i++) {
        struct server_listener *l = &n->listeners[i];
        if (l->fd >= 0) {
            ev_io_stop(n->loop, &l->w);
            ev_timer_stop(n->loop, &l->pause_w);
            close(l->fd);
            l->fd = -1;
        }
    }
}

/* --- store completions, signals, shutdown --------------------------------------------- */

static void on_store(struct ev_loop *loop, ev_io *w, int revents)
{
    struct server *n = w->data;

    (void)loop;
    (void)revents;
    store_dispatch(n->store);
}

static void on_shutdown_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server *n = w->data;

    (void)revents;
    if (n->n_clients == 0) {
        ev_break(loop, EVBREAK_ALL);
    }
}

static void on_shutdown_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server *n = w->data;

    (void)revents;
    LOG(LOG_WARN, "shutdown_forced", "clients=%llu", (unsigned long long)n->n_clients);
    while (n->clients != NULL) {
        client_close(n->clients, "shutdown");
    }
    ev_break(loop, EVBREAK_ALL);
}

/* Stop serving; cause is "signal=NAME" or "reason=WORD" for the log line. */
static void server_begin_shutdown(struct server *n, const char *cause)
{
    LOG(LOG_INFO, "shutdown", "%s clients=%llu", cause, (unsigned long long)n->n_clients);
    n->stopping = true;
    gossip_stop(n->gossip);
    collect_stop(n->collect);
    transfers_stop(n);
    server_close_listeners(n);
    reaper_stop(n->reaper); /* the peers' closing fails its inspections: nothing more to do */
    while (n->peers != NULL) {
        peer_close(n->peers, "shutdown");
    }
    for (struct client *c = n->clients, *next; c != NULL; c = next) {
        next = c->next;
        client_stop(c);
    }
    ev_timer_init(&n->shutdown_w, on_shutdown_deadline, SERVER_SHUTDOWN_GRACE_MS / 1000.0, 0.);
    n->shutdown_w.data = n;
    ev_timer_start(n->loop, &n->shutdown_w);
    ev_timer_init(&n->shutdown_poll_w, on_shutdown_poll, 0., NODE_SHUTDOWN_POLL_S);
    n->shutdown_poll_w.data = n;
    ev_timer_start(n->loop, &n->shutdown_poll_w);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct server *n = w->data;
    const char *name = w->signum == SIGTERM ? "SIGTERM" : "SIGINT";
    char cause[32];

    (void)loop;
    (void)revents;
    if (n->stopping) {
        LOG(LOG_WARN, "exit_now", "signal=%s", name);
        _exit(1);
    }
    snprintf(cause, sizeof(cause), "signal=%s", name);
    server_begin_shutdown(n, cause);
}

static void on_sighup(struct ev_loop *loop, ev_signal *w, int revents)
{
    struct server *n = w->data;

    (void)loop;
    (void)revents;
    if (n->argc > 0 && !n->stopping) {
        reload_from_args(n, n->argc, n->argv);
    }
}

void server_shutdown(struct server *n, const char *reason, int exit_code)
{
    char cause[64];

    if (n->stopping) {
        return;
    }
    n->exit_code = exit_code;
    snprintf(cause, sizeof(cause), "reason=%s", reason);
    server_begin_shutdown(n, cause);
}

/* --- the layers below: gossip's hooks, the ring listener, peers' hooks ------------------- */

_Static_assert(GOSSIP_SEEDS_MAX >= SETTINGS_SEEDS_MAX, "gossip keeps every seed");
_Static_assert(LOG_NODE_ID_MAX >= RING_NAME_MAX, "every log line carries the whole node id");

static int server_gossip_send(void *ctx, struct peer *p, const struct msg *m)
{
    (void)ctx;
    return peer_send(p, m);
}

static struct peer *server_gossip_find(void *ctx, const char *id, const char *addr)
{
    return peer_find(ctx, id, addr);
}

static struct peer *server_gossip_dial(void *ctx, const char *addr, char *err, size_t err_len)
{
    struct server *n = ctx;

    if (n->stopping) {
        snprintf(err, err_len, "the node is stopping");
        return NULL;
    }
    return peer_connect(n, addr, err, err_len);
}

static void server_gossip_removed(void *ctx)
{
    server_shutdown(ctx, "removed", SERVER_EXIT_REMOVED);
}

/* Another process has our id: one line on stderr, and stop at once (nothing was served). */
static void server_gossip_id_in_use(void *ctx, const char *other_addr)
{
    struct server *n = ctx;

    fprintf(stderr,
            "ringkvd: node id '%s' is in use by another ringkvd at %s; refusing to run (if that "
            "node is gone for good, run 'ringkv remove %s' on a live node first)\n",
            n->cfg.id, other_addr, n->cfg.id);
    n->exit_code = SERVER_EXIT_ID_IN_USE;
    ev_break(n->loop, EVBREAK_ALL);
}

/* The node's ring listener: a line naming both rings by digest, and the count INFO shows. */
static void server_ring_changed(void *ctx, const struct ring *old_ring, const struct ring *new_ring)
{
    struct server *n = ctx;

    n->metrics.ring_changes++;
    LOG(LOG_INFO, "ring_changed", "digest=%016llx members=%zu old_digest=%016llx old_members=%zu",
        (unsigned long long)ring_digest(new_ring), ring_member_count(new_ring),
        (unsigned long long)ring_digest(old_ring), ring_member_count(old_ring));
    if (n->handoff != NULL) {
        handoff_ring_changed(n->handoff, old_ring, new_ring);
    }
}

static void server_peer_identified(void *ctx, struct peer *p)
{
    struct server *n = ctx;

    gossip_peer_identified(n->gossip, p, p->remote.id);
}

static void server_peer_message(void *ctx, struct peer *p, const struct msg *m)
{
    struct server *n = ctx;

    gossip_message(n->gossip, p, p->remote.id, m);
}

static void server_peer_same_id(void *ctx, const char *addr)
{
    struct server *n = ctx;

    gossip_same_id(n->gossip, addr);
}

static void server_peer_self_dialled(void *ctx, const char *addr)
{
    struct server *n = ctx;

    gossip_self_dialled(n->gossip, addr);
}

/*
 * Close the connection of every member the detector holds down.  A
 * connection that carried nothing for seconds has its TCP retransmissions
 * backed off to seconds apart, and would hold requests that long once the
 * member is back; closed, the next round dials afresh (gossip_ping_all()).
 */
static void server_down_close(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server *n = w->data;
    const struct membership *m = gossip_members(n->gossip);
    bool closed;

    (void)loop;
    (void)revents;
    do {
        closed = false;
        for (struct peer *p = n->peers; p != NULL; p = p->next) {
            const struct member *e = p->identified ? membership_find(m, p->remote.id) : NULL;
            if (!p->dead && e != NULL && e->state == DETECTOR_DOWN) {
                peer_close(p, "member_down");
                closed = true; /* its callbacks may have changed the list: walk it again */
                break;
            }
        }
    } while (closed);
}

/* A member event: a member just marked down has its connection closed once the round ends. */
static void server_gossip_changed(void *ctx, const char *event, const char *id)
{
    struct server *n = ctx;

    (void)id;
    if (strcmp(event, "member_down") == 0 && !ev_is_active(&n->down_w)) {
        ev_timer_set(&n->down_w, 0., 0.);
        ev_timer_start(n->loop, &n->down_w);
    }
}

/* What gossip needs of the settings, as values: addresses as the text members carry. */
static void server_gossip_settings(struct server *n, struct gossip_settings *gs)
{
    const struct settings *c = &n->cfg;

    memset(gs, 0, sizeof(*gs));
    snprintf(gs->id, sizeof(gs->id), "%s", c->id);
    snprintf(gs->rack, sizeof(gs->rack), "%s", c->rack);
    gs->tokens = c->tokens;
    memcpy(gs->ring_seed, c->ring_seed, RING_SEED_LEN);
    gs->interval_ms = c->gossip_interval_ms;
    settings_addr_text(&c->listen, gs->peer_addr, sizeof(gs->peer_addr));
    settings_addr_text(&c->client, gs->client_addr, sizeof(gs->client_addr));
    for (size_t i = 0; i < c->n_seeds; i++) {
        settings_addr_text(&c->seeds[i], gs->seeds[i], sizeof(gs->seeds[i]));
    }
    gs->n_seeds = c->n_seeds;
    gs->store = n->store;
    gs->loop = n->loop;
    gs->join_by_handoff = true;
    gs->force_ring_change = n->cfg.force_ring_change;
}

/* Membership over the store, its hooks into this node, and our ring listener. */
static int server_open_gossip(struct server *n, char *err, size_t err_len)
{
    struct gossip_settings gs;
    const struct gossip_hooks hooks = {
        .send = server_gossip_send,
        .find = server_gossip_find,
        .dial = server_gossip_dial,
        .removed = server_gossip_removed,
        .id_in_use = server_gossip_id_in_use,
        .changed = server_gossip_changed,
        .ctx = n,
    };
    int rc;

    ev_timer_init(&n->down_w, server_down_close, 0., 0.);
    n->down_w.data = n;
    server_gossip_settings(n, &gs);
    rc = gossip_create(&n->gossip, &gs, &hooks, err, err_len);
    if (rc == 0 && gossip_ring_listen(n->gossip, server_ring_changed, n) != 0) {
        snprintf(err, err_len, "cannot listen for ring changes");
        rc = RK_ETOOBIG;
    }
    return rc;
}

/* --- creating and running ----------------------------------------------------------------- */

/*
 * The gate of local tombstone collection without asking anyone: this node
 * holds the only copy of every key, on a ring of one member or with rf 1.
 * Otherwise the collector asks the reaper, which deletes a tombstone once
 * every replica of its key holds it (reaper.h).
 */
static bool server_may_collect(void *ctx)
{
    struct server *n = ctx;
    const struct ring *r = gossip_ring(n->gossip);

    return n->cfg.rf == 1 || (r != NULL && ring_member_count(r) == 1);
}

static int server_open_store(struct server *n, char *err, size_t err_len)
{
    struct store_config sc;
    char why[512];
    int rc;

    store_config_defaults(&sc);
    sc.path = n->cfg.data;
    sc.node_id = n->cfg.id;
    sc.cluster_id = n->cluster_id;
    sc.cluster_id_len = sizeof(n->cluster_id);
    memcpy(sc.seed, n->cfg.ring_seed, RING_SEED_LEN);
    sc.rf = n->cfg.rf;
    sc.sync = n->cfg.sync;
    sc.batch_ms = (uint32_t)n->cfg.sync_interval_ms;
    sc.map_max = n->cfg.map_size_max;
    sc.map_initial = sc.map_initial < sc.map_max ? sc.map_initial : sc.map_max;
    sc.max_siblings = n->cfg.max_siblings;
    sc.conflicts = n->cfg.conflicts;
    rc = store_open(&n->store, &sc, why, sizeof(why));
    if (rc != 0) {
        snprintf(err, err_len, "data: %s", why);
    }
    return rc;
}

/* Hinted handoff's round: hints whose replica is back go to it. */
static void server_hints_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct server *n = w->data;

    (void)loop;
    (void)revents;
    if (!n->stopping) {
        coord_deliver_hints(n->coord);
    }
}

/* The coordinator behind kv: keys whose replicas include other nodes go through it. */
static int server_open_coord(struct server *n, char *err, size_t err_len)
{
    struct coord_config cc = {.rf = n->cfg.rf,
                              .r = settings_quorum(n->cfg.r, n->cfg.rf),
                              .w = settings_quorum(n->cfg.w, n->cfg.rf),
                              .sloppy = n->cfg.sloppy,
                              .mode = n->cfg.conflicts,
                              .max_siblings = n->cfg.max_siblings,
                              .key_max = n->cfg.key_max,
                              .value_max = n->cfg.value_max,
                              .body_max = rpc_body_max(n)};
    struct coord_hooks hooks;

    snprintf(cc.self, sizeof(cc.self), "%s", n->cfg.id);
    rpc_coord_hooks(n, &hooks);
    if (coord_create(&n->coord, n->kv, n->store, &cc, &hooks) != 0) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    kv_set_coord(n->kv, n->coord);
    ev_timer_init(&n->hints_w, server_hints_tick, SERVER_HINTS_ROUND_S, SERVER_HINTS_ROUND_S);
    n->hints_w.data = n;
    ev_timer_start(n->loop, &n->hints_w);
    const struct ring *ring = gossip_ring(n->gossip);
    if (n->cfg.n_seeds == 0 && cc.w > 1 && (ring == NULL || ring_member_count(ring) < cc.w)) {
        LOG(LOG_WARN, "quorum_unreachable",
            "w=%u r=%u rf=%u hint=\"writes (and reads) are refused with NOREPLICAS until %u "
            "nodes have joined: give --seeds, or run a single node with --rf 1\"",
            cc.w, cc.r, cc.rf, cc.w > cc.r ? cc.w : cc.r);
    }
    return 0;
}

static int server_open(struct server *n, char *err, size_t err_len)
{
    char why[512];
    int rc = channel_key_load(&n->key, n->cfg.cluster_key, why, sizeof(why));

    if (rc != 0) {
        snprintf(err, err_len, "cluster-key: %s", why);
        return rc;
    }
    channel_key_cluster_id(n->key, n->cluster_id);
    rc = server_open_store(n, err, err_len);
    if (rc == 0 && kv_create(&n->kv, n->store, n->cfg.kv_shuffle_seed) != 0) {
        snprintf(err, err_len, "out of memory");
        rc = RK_ENOMEM;
    }
    rc = rc ? rc : server_open_gossip(n, err, err_len);
    rc = rc ? rc : server_open_coord(n, err, err_len);
    rc = rc ? rc : transfers_start(n, err, err_len);
    struct coord_hooks hooks;
    rpc_coord_hooks(n, &hooks);
    if (rc == 0 && (reaper_create(&n->reaper, n->coord, n->store, &hooks, n->cfg.id) != 0 ||
                    collect_create(&n->collect, n->loop, n->store, n->cfg.tombstone_grace_ms,
                                   server_may_collect, n->reaper, n) != 0)) {
        snprintf(err, err_len, "out of memory");
        rc = RK_ENOMEM;
    }
    rc =
        rc ? rc : server_listen(n, SERVER_PORT_CLIENT, &n->cfg.client, client_accept, err, err_len);
    rc = rc ? rc : server_listen(n, SERVER_PORT_PEER, &n->cfg.listen, peer_accept, err, err_len);
    if (rc == 0 && n->cfg.metrics.set) {
        rc = server_listen(n, SERVER_PORT_METRICS, &n->cfg.metrics, http_accept, err, err_len);
    }
    return rc;
}

int server_create(struct server **out, const struct settings *cfg, char *err, size_t err_len)
{
    struct server *n = calloc(1, sizeof(*n));
    int rc;

    *out = NULL;
    if (n == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    n->cfg = *cfg;
    buf_init(&n->answer_buf, 0);
    rpc_spares_init(n);
    for (size_t i = 0; i < SERVER_LISTENERS; i++) {
        n->listeners[i].fd = -1;
    }
    n->loop = ev_default_loop(EVFLAG_AUTO);
    n->start_ms = clock_mono_ms();
    randombytes_buf(&n->run_id, sizeof(n->run_id));
    n->run_id |= 1; /* 0 is an IDENT without an instance */
    peer_set_hooks(n, &(const struct peer_hooks){
                          .identified = server_peer_identified,
                          .message = server_peer_message,
                          .same_id = server_peer_same_id,
                          .self_dialled = server_peer_self_dialled,
                          .ctx = n,
                      });
    rc = server_open(n, err, err_len);
    if (rc != 0) {
        server_destroy(n);
        return rc;
    }
    *out = n;
    return 0;
}

/*
 * main() blocks SIGHUP until the loop watches it (ringkvd.c); a SIGHUP sent
 * meanwhile is delivered here, and the loop's first iteration reloads.
 * libev's watcher installs its handler without touching the mask.
 */
static void server_unblock_sighup(void)
{
    sigset_t hup;

    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    sigprocmask(SIG_UNBLOCK, &hup, NULL);
}

int server_run(struct server *n)
{
    char client_text[ADDR_TEXT_MAX], listen_text[ADDR_TEXT_MAX], metrics_text[ADDR_TEXT_MAX];

    for (size_t i = 0; i < SERVER_LISTENERS; i++) {
        if (n->listeners[i].fd >= 0) {
            ev_io_start(n->loop, &n->listeners[i].w);
        }
    }
    ev_io_init(&n->store_w, on_store, store_event_fd(n->store), EV_READ);
    n->store_w.data = n;
    ev_io_start(n->loop, &n->store_w);
    client_loop_start(n);
    rpc_loop_clock_start(n);
    ev_signal_init(&n->sigterm_w, on_signal, SIGTERM);
    ev_signal_init(&n->sigint_w, on_signal, SIGINT);
    n->sigterm_w.data = n->sigint_w.data = n;
    ev_signal_start(n->loop, &n->sigterm_w);
    ev_signal_start(n->loop, &n->sigint_w);
    ev_signal_init(&n->sighup_w, on_sighup, SIGHUP);
    n->sighup_w.data = n;
    ev_signal_start(n->loop, &n->sighup_w);
    server_unblock_sighup();
    gossip_start(n->gossip);
    collect_start(n->collect);
    settings_addr_text(&n->cfg.client, client_text, sizeof(client_text));
    settings_addr_text(&n->cfg.listen, listen_text, sizeof(listen_text));
    snprintf(metrics_text, sizeof(metrics_text), "off");
    if (n->cfg.metrics.set) {
        settings_addr_text(&n->cfg.metrics, metrics_text, sizeof(metrics_text));
    }
    LOG(LOG_INFO, "node_start", "client=%s listen=%s metrics=%s rack=%s tokens=%u data=%s",
        client_text, listen_text, metrics_text, n->cfg.rack, n->cfg.tokens, n->cfg.data);
    ev_run(n->loop, 0);
    LOG(LOG_INFO, "node_stop", "clients=%llu", (unsigned long long)n->n_clients);
    return n->exit_code;
}

void server_destroy(struct server *n)
{
    if (n == NULL) {
        return;
    }
    server_close_listeners(n);
    reaper_stop(n->reaper); /* the peers' closing fails its inspections: nothing more to do */
    while (n->peers != NULL) {
        peer_close(n->peers, "exit");
    }
    peer_flush_queued(n); /* lets the closed peers it held go */
    bulktest_destroy(n);
    while (n->clients != NULL) {
        client_close(n->clients, "exit");
    }
    if (n->loop != NULL) {
        ev_io_stop(n->loop, &n->store_w);
        ev_timer_stop(n->loop, &n->hints_w);
        ev_timer_stop(n->loop, &n->down_w);
    }
    transfers_stop(n);
    gossip_destroy(n->gossip);
    collect_stop(n->collect);
    if (n->kv != NULL) {
        kv_flush(n->kv); /* writes queued in the last iteration reach the store */
    }
    store_close(n->store);       /* completes queued writes; their clients are already closed */
    collect_destroy(n->collect); /* after its step in flight completed */
    transfers_free(n);           /* after its writes completed */
    rpc_coord_send_waiting(n, true);
    coord_destroy(n->coord);   /* every peer request of it ended when the peers closed */
    reaper_destroy(n->reaper); /* after its inspections (coord) and deletes (store) ended */
    kv_destroy(n->kv);
    channel_key_free(n->key);
    buf_free(&n->answer_buf);
    rpc_spares_free(n);
    if (n->loop != NULL) {
        /* the default loop outlives n: nothing of n's may stay on it (none is active unless run) */
        ev_prepare_stop(n->loop, &n->client_prepare_w);
        ev_prepare_stop(n->loop, &n->peer_prepare_w);
        ev_check_stop(n->loop, &n->loop_clock_w);
        ev_signal_stop(n->loop, &n->sigterm_w);
        ev_signal_stop(n->loop, &n->sigint_w);
        ev_signal_stop(n->loop, &n->sighup_w);
    }
    free(n);
}
