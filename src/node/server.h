/*
 * server.h - one ringkv node: its settings, store, ring, keys, event loop,
 * listeners, connections and counters.
 *
 * The node layer is a handful of modules around this struct, all running
 * in the one event-loop thread: client.c (RESP connections), commands.c
 * (what each command does), peer.c (sealed node-to-node connections),
 * metrics.c (counters, INFO, GET /metrics), settings.c (the config table).
 * The struct is shared among them, and only them.
 *
 * The layers below never see it.  server.c wires them together:
 *   - gossip (src/membership) gets a struct gossip_settings filled from
 *     the settings (addresses as "host:port" text) and a struct
 *     gossip_hooks table (send, find, dial: peer.c's; removed and
 *     id_in_use: stop the node); connections are opaque to it;
 *   - the ring in force belongs to the member table: the server reads it
 *     through gossip_ring(), and its ring listener (gossip_ring_listen())
 *     logs event=ring_changed with the old and new digests and counts
 *     ring changes; whoever keeps a ring past the event loop turn takes a
 *     reference (ring_ref());
 *   - kv (src/replication) gets the store; commands read and write through
 *     it, and client.c takes its read snapshots through it;
 *   - peer.c tells what a connection learns through a struct peer_hooks
 *     table that server.c registers and routes to gossip.
 *
 * Lifecycle: server_create() opens everything and fails with one line on
 * any problem; server_run() serves (a SIGHUP reloads the runtime settings,
 * reload.h) until SIGTERM (graceful: stop accepting,
 * finish or fail what is in flight, close the store) or a second SIGTERM
 * or SIGINT (exit at once: the store is crash-safe, nothing acknowledged
 * is lost); server_destroy() releases what is left.
 */
#ifndef RINGKV_SERVER_H
#define RINGKV_SERVER_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"
#include "buf.h"
#include "spare.h"
#include "channel.h"
#include "log.h"
#include "cluster_settings.h"
#include "metrics.h"
#include "peer.h"
#include "settings.h"
#include "store.h"

struct client;
struct gossip;
struct server;
struct kv;
struct coord;
struct rpc_coord_call;

/* Grace for in-flight work at shutdown before it is failed: covers an fsync under load. */
#define SERVER_SHUTDOWN_GRACE_MS 5000
/* The first pause of a listener whose accept() ran out of descriptors, and the longest. */
#define SERVER_ACCEPT_PAUSE_MIN_MS 10
#define SERVER_ACCEPT_PAUSE_MAX_MS 1000
/* Seconds between rounds of hint delivery: a replica back up gets its hints within this. */
#define SERVER_HINTS_ROUND_S 1.0
/* server_run()'s exit code when another process holds this node's id (gossip.h). */
#define SERVER_EXIT_ID_IN_USE 2
/* server_run()'s exit code when an operator removed this node from the cluster. */
#define SERVER_EXIT_REMOVED 3

/* The node's listening ports, indexes of server.listeners. */
enum server_port {
    SERVER_PORT_CLIENT,
    SERVER_PORT_PEER,
    SERVER_PORT_METRICS,
    SERVER_LISTENERS,
};

/*
 * A listening socket.  When accept() fails for want of descriptors or
 * memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), the socket stays readable, so
 * the listener stops watching it for a pause that doubles at each failure
 * (SERVER_ACCEPT_PAUSE_MIN_MS .. _MAX_MS) and restarts at the minimum after
 * an accept succeeds; the failures are counted and logged at most once a
 * second (server.c).
 */
struct server_listener {
    int fd; /* -1 when closed */
    ev_io w;
    ev_timer pause_w;  /* ends a pause: watches fd again */
    uint32_t pause_ms; /* the last pause; 0 after a successful accept */
    void (*take)(struct server *n, int fd, const struct sockaddr_storage *addr);
    struct server *node;
    const char *name; /* the setting that names the port: "client", "listen", "metrics" */
    struct log_limit log;
};

struct server {
    struct settings cfg;
    struct ev_loop *loop;
    struct store *store;
    struct channel_key *key;
    uint8_t cluster_id[CHANNEL_CLUSTER_ID_BYTES];
    struct gossip *gossip; /* membership, failure detection, the ring in force */
    struct kv *kv;         /* the data operations over the store */
    struct coord *coord;   /* the coordinator behind kv (coord.h) */
    struct rpc_coord_call *coord_waiting, *coord_waiting_tail; /* waiting for room (rpc.c) */
    size_t coord_waiting_n;
    struct buf answer_buf; /* a data operation's answer being encoded (rpc.c), kept for reuse */
    /* freed peer requests, coordinator calls and answers in work, kept for the next (rpc.c) */
    struct spare call_spare, coord_call_spare, answer_spare;
    struct collect *collect; /* local tombstone collection (collect.h) */
    struct reaper *reaper;   /* its check with the other replicas (reaper.h) */
    struct handoff *handoff; /* ownership handoff (handoff.h, transfers.h) */
    ev_timer handoff_w;      /* its ticks */
    uint64_t left_ms;        /* when this node turned left: it stops soon after */
    int exit_code;           /* what server_run() returns */
    uint64_t start_ms;       /* clock_mono_ms() at start, for uptime */
    uint64_t run_id;         /* random per process, never 0: INFO's run_id, IDENT's instance */

    struct server_listener listeners[SERVER_LISTENERS];
    ev_io store_w;    /* store completions */
    ev_timer hints_w; /* hinted handoff's rounds (coord_deliver_hints()) */
    ev_timer down_w;  /* closes the connections of members just marked down, after the round */
    ev_signal sigterm_w, sigint_w;
    ev_signal sighup_w; /* reload the settings (reload.h) */
    int argc;           /* the command line SIGHUP reads again; 0: none (reload.h) */
    char **argv;
    const char *config_file;  /* the config file among argv, or NULL (reload.h) */
    ev_timer shutdown_w;      /* the grace deadline */
    ev_timer shutdown_poll_w; /* checks whether every client is gone */
    bool stopping;

    ev_prepare client_prepare_w; /* client.c: the per-iteration submit and flush */
    ev_check loop_clock_w;       /* rpc.c: reads the monotonic clock as each iteration starts */
    uint64_t loop_us;            /* what it read (rpc_loop_us()) */
    struct client *to_flush;     /* connections with replies to write, via flush_next */
    struct client *to_process;   /* connections with commands finished, via process_next */
    struct client *clients;      /* doubly linked, newest first */
    uint64_t n_clients;
    uint64_t next_client_id;
    struct peer *peers;
    struct peer *peers_to_flush; /* peer.c: peers with messages this pass, via flush_next */
    ev_prepare peer_prepare_w;   /* peer.c: writes them before the loop sleeps */
    uint64_t n_peers;
    struct bulktest *bulktest;    /* RINGKV BULKTEST's stream (bulktest.h); NULL until used */
    struct peer_hooks peer_hooks; /* peer_set_hooks() */

    struct metrics metrics;
    struct auth_guard auth;           /* wrong passwords by client address (auth.h) */
    struct cluster_refusals refusals; /* peers refused for their cluster settings, logged once */
};

/*
 * Open the store, load the cluster key, build the ring and bind the
 * listeners.  On error *out is NULL and err holds one line naming the
 * setting or resource at fault.
 */
int server_create(struct server **out, const struct settings *cfg, char *err, size_t err_len);

/* Serve until shut down; returns the process exit code. */
int server_run(struct server *n);

/*
 * Begin the graceful shutdown a SIGTERM starts, for reason (one word, for
 * the log), with server_run() then returning exit_code.  Not from inside a
 * peer's callback: it closes every peer.
 */
void server_shutdown(struct server *n, const char *reason, int exit_code);

void server_destroy(struct server *n);

/* Seconds since the node started. */
uint64_t server_uptime_s(const struct server *n);

#endif
