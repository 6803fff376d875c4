/*
 * metrics.c - counters, INFO, and GET /metrics (metrics.h).
 *
 * INFO follows Redis's layout ("# Section", then key:value lines, CRLF),
 * with the keys Redis tools read (redis_version, connected_clients,
 * keyspace_hits, db0:keys=..., used_memory, role, used_cpu_sys) and ringkv's
 * own prefixed ringkv_.  The
 * Prometheus exposition (text format 0.0.4) carries the same numbers under
 * ringkv_ names.  The HTTP side is deliberately minimal: one request per
 * connection, GET /metrics only, bounded request size and time.
 */
#include "metrics.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "autoconf.h"
#include "collect.h"
#include "commands.h"
#include "coord.h"
#include "error.h"
#include "gossip.h"
#include "handoff.h"
#include "log.h"
#include "membership.h"
#include "net.h"
#include "peer.h"
#include "reaper.h"
#include "server.h"

const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS - 1] = {
    50,    100,   250,    500,    1000,   2500,    5000,    10000,
    25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 10000000,
};

const char *const metrics_reject_names[METRICS_REJECT_REASONS] = {
    "too_big", "syntax", "version", "auth", "timeout", "limit", "aborted", "settings", "reflected",
};

const char *const metrics_request_outcome_names[METRICS_REQUEST_OUTCOMES] = {
    "ok", "refused", "timeout", "closed", "unsupported", "unreachable", "overloaded",
};

/* The version INFO reports as redis_version, for tools that gate on it. */
#define METRICS_REDIS_VERSION "7.0.0"
/* A metrics request must arrive whole within this many bytes and seconds. */
#define METRICS_HTTP_REQUEST_MAX 8192
#define METRICS_HTTP_TIMEOUT_S 5.0

void metrics_count_command(struct metrics *m, int index, bool error, uint64_t usec)
{
    struct metrics_command *c;
    size_t b = 0;

    if (index < 0 || index >= METRICS_COMMANDS_MAX) {
        return;
    }
    c = &m->command[index];
    c->calls++;
    c->errors += error;
    c->usec_sum += usec;
    while (b < METRICS_LATENCY_BUCKETS - 1 && usec > metrics_latency_bounds_us[b]) {
        b++;
    }
    c->buckets[b]++;
}

/* --- INFO ----------------------------------------------------------------------- */

static void info_server(struct server *n, struct buf *out)
{
    struct utsname u;
    uint64_t up = server_uptime_s(n);

    uname(&u);
    buf_printf(out,
               "# Server\r\nredis_version:%s\r\nringkv_version:%s\r\nredis_mode:standalone\r\n"
               "os:%s %s %s\r\narch_bits:%d\r\nprocess_id:%ld\r\nrun_id:%016llx\r\n"
               "tcp_port:%u\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n"
               "ringkv_node_id:%s\r\nringkv_actor:%s\r\n\r\n",
               METRICS_REDIS_VERSION, PACKAGE_VERSION, u.sysname, u.release, u.machine,
               (int)(sizeof(void *) * 8), (long)getpid(), (unsigned long long)n->run_id,
               n->cfg.client.port, (unsigned long long)up, (unsigned long long)(up / 86400),
               n->cfg.id, store_actor(n->store));
}

static void info_clients(struct server *n, struct buf *out)
{
    buf_printf(out,
               "# Clients\r\nconnected_clients:%llu\r\nmaxclients:%llu\r\n"
               "blocked_clients:0\r\n\r\n",
               (unsigned long long)n->n_clients, (unsigned long long)n->cfg.maxclients);
}

void metrics_bytes_human(uint64_t n, char *out, size_t cap)
{
    static const char units[] = "KMGTP";
    double d = (double)n;
    size_t u = 0;

    if (n < 1024) {
        snprintf(out, cap, "%lluB", (unsigned long long)n);
        return;
    }
    /* n < 2^64 = 16 EiB: past P the loop stops at P, where Redis prints bytes */
    while (u < sizeof(units) - 1 && d >= 1024.0) {
        d /= 1024.0;
        u++;
    }
    if (d >= 1024.0) {
        snprintf(out, cap, "%lluB", (unsigned long long)n);
        return;
    }
    snprintf(out, cap, "%.2f%c", d, units[u - 1]);
}

/* Resident bytes of this process (/proc/self/statm), 0 when it cannot be read. */
static uint64_t info_rss_bytes(void)
{
    unsigned long long size = 0, resident = 0;
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/statm", "r");

    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%llu %llu", &size, &resident) != 2 || page <= 0) {
        resident = 0;
    }
    fclose(f);
    return (uint64_t)resident * (uint64_t)page;
}

/*
 * Memory, with Redis's names.  used_memory is what the allocator has handed
 * out and not taken back (glibc's mallinfo2(): arena and mmap'd blocks in
 * use), as Redis reports its allocator's figure; a build whose malloc is
 * not glibc's (AddressSanitizer's) reports none there, and then the
 * resident size stands in.  The store's LMDB map is file-backed: its pages
 * count in used_memory_rss, not used_memory.  ringkv evicts nothing and has
 * no memory limit (the store's bound is map-size-max, on disk): maxmemory
 * is 0 and the policy noeviction, Redis's words for exactly that.
 */
static void info_memory(struct server *n, struct buf *out)
{
    struct mallinfo2 mi = mallinfo2();
    uint64_t rss = info_rss_bytes();
    uint64_t used = (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
    char used_h[32], rss_h[32];

    (void)n;
    used = used > 0 ? used : rss;
    metrics_bytes_human(used, used_h, sizeof(used_h));
    metrics_bytes_human(rss, rss_h, sizeof(rss_h));
    buf_printf(out,
               "# Memory\r\nused_memory:%llu\r\nused_memory_human:%s\r\n"
               "used_memory_rss:%llu\r\nused_memory_rss_human:%s\r\n"
               "maxmemory:0\r\nmaxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\n\r\n",
               (unsigned long long)used, used_h, (unsigned long long)rss, rss_h);
}

/*
 * Replication, as Redis clients read it.  ringkv's replicas are peers, not a
 * master and its replicas: each key lives on rf nodes and any of them takes
 * writes (quorums r and w, see # Cluster).  So every node says role:master,
 * the role that takes writes, and connected_slaves:0, since no Redis replica
 * attaches to it.
 */
static void info_replication(struct server *n, struct buf *out)
{
    (void)n;
    buf_printf(out, "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n");
}

static double info_seconds(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* CPU time from getrusage(): the process, its children, and the event loop's thread (INFO runs on
 * it). */
static void info_cpu(struct server *n, struct buf *out)
{
    struct rusage self, children, thread;

    (void)n;
    memset(&self, 0, sizeof(self));
    memset(&children, 0, sizeof(children));
    memset(&thread, 0, sizeof(thread));
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &children);
    getrusage(RUSAGE_THREAD, &thread);
    buf_printf(out,
               "# CPU\r\nused_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\n"
               "used_cpu_sys_children:%.6f\r\nused_cpu_user_children:%.6f\r\n"
               "used_cpu_sys_main_thread:%.6f\r\nused_cpu_user_main_thread:%.6f\r\n\r\n",
               info_seconds(&self.ru_stime), info_seconds(&self.ru_utime),
               info_seconds(&children.ru_stime), info_seconds(&children.ru_utime),
               info_seconds(&thread.ru_stime), info_seconds(&thread.ru_utime));
}

static const char *const sync_names[] = {"always", "batch", "none"};

/*
 * Tombstones this node deleted after tombstone-grace: by its collector, and
 * at the request of a key's first replica (reaper.h).
 */
static uint64_t tombstones_collected(struct server *n)
{
    struct reaper_stats rs = {0};

    if (n->reaper != NULL) {
        reaper_get_stats(n->reaper, &rs);
    }
    return collect_count(n->collect) + rs.reaped;
}

static void info_persistence(struct server *n, struct buf *out)
{
    struct store_stats st;

    store_get_stats(n->store, &st);
    buf_printf(out,
               "# Persistence\r\nloading:0\r\nringkv_sync:%s\r\nringkv_store_map_bytes:%llu\r\n"
               "ringkv_store_used_bytes:%llu\r\nringkv_store_commits:%llu\r\n"
               "ringkv_store_fsyncs:%llu\r\nringkv_store_writes:%llu\r\n"
               "ringkv_store_write_errors:%llu\r\nringkv_store_full_errors:%llu\r\n"
               "ringkv_store_disk_failures:%llu\r\nringkv_store_writes_refused:%d\r\n"
               "ringkv_tombstones_collected:%llu\r\nringkv_store_checkpoints:%llu\r\n"
               "ringkv_store_logged_batches:%llu\r\nringkv_store_log_keys:%llu\r\n"
               "ringkv_store_log_bytes:%llu\r\nringkv_store_checkpoint_ms:%llu\r\n\r\n",
               sync_names[n->cfg.sync], (unsigned long long)st.map_size,
               (unsigned long long)st.map_used, (unsigned long long)st.commits,
               (unsigned long long)st.syncs, (unsigned long long)st.ops,
               (unsigned long long)st.ops_failed, (unsigned long long)st.enospc,
               (unsigned long long)st.disk_failures, st.disk_failed ? 1 : 0,
               (unsigned long long)tombstones_collected(n), (unsigned long long)st.checkpoints,
               (unsigned long long)st.logged, (unsigned long long)st.overlay_keys,
               (unsigned long long)st.wal_bytes, (unsigned long long)st.checkpoint_ms);
}

static void info_stats(struct server *n, struct buf *out)
{
    const struct metrics *m = &n->metrics;

    buf_printf(
        out,
        "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
        "total_net_input_bytes:%llu\r\ntotal_net_output_bytes:%llu\r\n"
        "rejected_connections:%llu\r\nkeyspace_hits:%llu\r\nkeyspace_misses:%llu\r\n"
        "ringkv_protocol_errors:%llu\r\nringkv_limit_errors:%llu\r\n"
        "ringkv_client_timeouts:%llu\r\nringkv_accept_errors:%llu\r\n"
        "ringkv_auth_failures:%llu\r\nringkv_auth_throttled:%llu\r\n"
        "ringkv_client_started_past_wait:%llu\r\n\r\n",
        (unsigned long long)m->connections_received, (unsigned long long)m->commands_processed,
        (unsigned long long)m->net_input_bytes, (unsigned long long)m->net_output_bytes,
        (unsigned long long)m->connections_rejected, (unsigned long long)m->keyspace_hits,
        (unsigned long long)m->keyspace_misses, (unsigned long long)m->client_protocol_errors,
        (unsigned long long)m->client_limit_errors, (unsigned long long)m->client_timeouts,
        (unsigned long long)m->accept_errors, (unsigned long long)m->auth_failures,
        (unsigned long long)m->auth_throttled, (unsigned long long)m->client_started_past_wait);
}

static void info_keyspace(struct server *n, struct buf *out)
{
    struct store_stats st;

    store_get_stats(n->store, &st);
    buf_printf(out, "# Keyspace\r\n");
    if (st.keys > st.tombstones) { /* live keys: records of tombstones only are apart */
        buf_printf(out, "db0:keys=%llu,expires=0,avg_ttl=0\r\n",
                   (unsigned long long)(st.keys - st.tombstones));
    }
    buf_printf(out, "\r\n");
}

/*
 * Tombstones, in INFO's Cluster section: the records of tombstones only
 * this node holds now (the store's exact count, left out of the keyspace's
 * keys), those the collector's last whole pass found dead (tombstones and
 * expired values), and what the check with the other replicas decided
 * (reaper.h).
 */
static void metrics_info_tombstones(struct server *n, struct buf *out)
{
    struct reaper_stats rs = {0};
    struct store_stats st;

    store_get_stats(n->store, &st);
    buf_printf(out, "ringkv_tombstones_held:%llu\r\n", (unsigned long long)st.tombstones);
    if (n->reaper != NULL) {
        reaper_get_stats(n->reaper, &rs);
    }
    buf_printf(out,
               "ringkv_tombstones:%llu\r\nringkv_tombstones_checked:%llu\r\n"
               "ringkv_tombstones_kept_unanswered:%llu\r\nringkv_tombstones_kept_live:%llu\r\n"
               "ringkv_tombstones_kept_hints:%llu\r\nringkv_tombstones_kept_changed:%llu\r\n"
               "ringkv_tombstones_kept_missing:%llu\r\nringkv_tombstones_deferred:%llu\r\n"
               "ringkv_tombstones_given:%llu\r\nringkv_tombstones_reaped:%llu\r\n",
               (unsigned long long)collect_tombstones(n->collect), (unsigned long long)rs.checked,
               (unsigned long long)rs.kept_unanswered, (unsigned long long)rs.kept_live,
               (unsigned long long)rs.kept_hints, (unsigned long long)rs.kept_changed,
               (unsigned long long)rs.kept_missing, (unsigned long long)rs.deferred,
               (unsigned long long)rs.given, (unsigned long long)rs.reaped);
}

/* The coordinator's counters and the hints this node keeps, in INFO's Cluster section. */
static void metrics_info_replication(struct server *n, struct buf *out)
{
    struct coord_stats cs;
    struct store_stats st;

    coord_get_stats(n->coord, &cs);
    store_get_stats(n->store, &st);
    buf_printf(out,
               "ringkv_coordinated_reads:%llu\r\nringkv_coordinated_writes:%llu\r\n"
               "ringkv_forwarded:%llu\r\nringkv_forwards_served:%llu\r\n"
               "ringkv_noreplicas:%llu\r\nringkv_tryagain:%llu\r\nringkv_read_repairs:%llu\r\n"
               "ringkv_replica_writes:%llu\r\nringkv_replica_reads:%llu\r\n"
               "ringkv_replica_not_mine:%llu\r\n"
               "ringkv_hints:%llu\r\nringkv_hints_stored:%llu\r\nringkv_hints_delivered:%llu\r\n",
               (unsigned long long)cs.reads, (unsigned long long)cs.writes,
               (unsigned long long)cs.forwarded, (unsigned long long)cs.forwards_served,
               (unsigned long long)cs.noreplicas, (unsigned long long)cs.tryagain,
               (unsigned long long)cs.repairs, (unsigned long long)cs.replica_writes,
               (unsigned long long)cs.replica_reads, (unsigned long long)cs.not_mine,
               (unsigned long long)st.hints, (unsigned long long)cs.hints_stored,
               (unsigned long long)cs.hints_delivered);
}

/* Ownership handoff (handoff.h): the change under way and what moved, in INFO's Cluster section. */
static void metrics_info_handoff(struct server *n, struct buf *out)
{
    const struct membership *mem = gossip_members(n->gossip);
    struct handoff_stats hs;

    handoff_get_stats(n->handoff, &hs);
    buf_printf(out,
               "ringkv_target:%016llx\r\nringkv_changing:%d\r\nringkv_transfers_active:%zu\r\n"
               "ringkv_handoff_changes:%llu\r\nringkv_handoff_moved_fraction:%.6f\r\n"
               "ringkv_handoff_arcs_planned:%llu\r\nringkv_handoff_arcs_done:%llu\r\n"
               "ringkv_handoff_arcs_same:%llu\r\nringkv_handoff_keys_received:%llu\r\n"
               "ringkv_handoff_bytes_received:%llu\r\nringkv_handoff_batches_received:%llu\r\n"
               "ringkv_handoff_keys_sent:%llu\r\nringkv_handoff_bytes_sent:%llu\r\n"
               "ringkv_handoff_batches_sent:%llu\r\nringkv_handoff_resumed:%llu\r\n"
               "ringkv_handoff_verify_mismatch:%llu\r\nringkv_handoff_verify_superset:%llu\r\n"
               "ringkv_handoff_failures:%llu\r\nringkv_handoff_refused:%llu\r\n"
               "ringkv_handoff_cleanup_keys:%llu\r\nringkv_handoff_arcs_unsupported:%llu\r\n",
               (unsigned long long)membership_target_digest(mem),
               membership_target_digest(mem) != membership_digest(mem), handoff_active(n->handoff),
               (unsigned long long)hs.changes, (double)hs.moved_fraction_ppm / 1e6,
               (unsigned long long)hs.arcs_planned, (unsigned long long)hs.arcs_done,
               (unsigned long long)hs.arcs_same, (unsigned long long)hs.keys_received,
               (unsigned long long)hs.bytes_received, (unsigned long long)hs.batches_received,
               (unsigned long long)hs.keys_sent, (unsigned long long)hs.bytes_sent,
               (unsigned long long)hs.batches_sent, (unsigned long long)hs.resumed,
               (unsigned long long)hs.verify_mismatch, (unsigned long long)hs.verify_superset,
               (unsigned long long)hs.failures, (unsigned long long)hs.refused,
               (unsigned long long)hs.cleanup_keys, (unsigned long long)hs.arcs_unsupported);
}

static void info_cluster(struct server *n, struct buf *out)
{
    const struct metrics *m = &n->metrics;
    const struct membership *mem = gossip_members(n->gossip);
    size_t agree = 0, up = 0;
    bool converged = gossip_converged(n->gossip, &agree, &up);

    buf_printf(out,
               "# Ring\r\nringkv_epoch:%llu\r\nringkv_digest:%016llx\r\n"
               "ringkv_converged:%d\r\nringkv_agree:%zu\r\nringkv_up:%zu\r\n"
               "ringkv_known_members:%zu\r\nringkv_ring_changes:%llu\r\n\r\n",
               (unsigned long long)membership_epoch(mem),
               (unsigned long long)membership_digest(mem), converged, agree, up,
               membership_count(mem), (unsigned long long)m->ring_changes);

    buf_printf(out,
               "# Cluster\r\ncluster_enabled:0\r\nringkv_node_id:%s\r\nringkv_rack:%s\r\n"
               "ringkv_tokens:%u\r\nringkv_members:%zu\r\nringkv_rf:%u\r\nringkv_r:%u\r\n"
               "ringkv_w:%u\r\nringkv_peers_connected:%llu\r\nringkv_peer_handshakes:%llu\r\n",
               n->cfg.id, n->cfg.rack, membership_self(mem)->e.tokens,
               ring_member_count(gossip_ring(n->gossip)), n->cfg.rf,
               settings_quorum(n->cfg.r, n->cfg.rf), settings_quorum(n->cfg.w, n->cfg.rf),
               (unsigned long long)n->n_peers, (unsigned long long)m->peer_handshakes);
    for (int i = 0; i < METRICS_REJECT_REASONS; i++) {
        buf_printf(out, "ringkv_peer_rejected_%s:%llu\r\n", metrics_reject_names[i],
                   (unsigned long long)m->peer_rejected[i]);
    }
    buf_printf(out, "ringkv_peer_messages_unknown:%llu\r\n",
               (unsigned long long)m->peer_messages_unknown);
    buf_printf(out, "ringkv_peer_frames_shared:%llu\r\n",
               (unsigned long long)m->peer_frames_shared);
    metrics_info_replication(n, out);
    metrics_info_tombstones(n, out);
    metrics_info_handoff(n, out);
    buf_printf(out, "\r\n");
}

static void info_commandstats(struct server *n, struct buf *out)
{
    buf_printf(out, "# Commandstats\r\n");
    for (size_t i = 0; i < commands_count; i++) {
        const struct metrics_command *c = &n->metrics.command[i];
        if (c->calls == 0) {
            continue;
        }
        buf_printf(out, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,failed_calls=%llu\r\n",
                   commands[i].name, (unsigned long long)c->calls, (unsigned long long)c->usec_sum,
                   (double)c->usec_sum / (double)c->calls, (unsigned long long)c->errors);
    }
    buf_printf(out, "\r\n");
}

/*
 * The longest wait between two control messages from one peer once bulk
 * had flowed from it, over the open connections (lanes.h): how long a
 * heartbeat waited behind bulk at most.
 */
static uint64_t lanes_control_gap_max_ms(const struct server *n)
{
    uint64_t max = 0;

    for (const struct peer *p = n->peers; p != NULL; p = p->next) {
        if (!p->dead && p->lanes.control_gap_max_ms > max) {
            max = p->lanes.control_gap_max_ms;
        }
    }
    return max;
}

/* The lanes of node-to-node connections (src/node/lanes.h): the queue bound and the bulk lane. */
static void info_lanes(struct server *n, struct buf *out)
{
    const struct metrics *m = &n->metrics;

    buf_printf(out,
               "# Lanes\r\nringkv_peer_queue_max:%llu\r\nringkv_peer_bulk_window:%llu\r\n"
               "ringkv_peer_queue_full:%llu\r\nringkv_peer_credit_errors:%llu\r\n"
               "ringkv_peer_bulk_bytes_in:%llu\r\nringkv_peer_bulk_bytes_out:%llu\r\n",
               (unsigned long long)n->cfg.peer_queue_max,
               (unsigned long long)n->cfg.peer_bulk_window, (unsigned long long)m->peer_queue_full,
               (unsigned long long)m->peer_credit_errors, (unsigned long long)m->peer_bulk_bytes_in,
               (unsigned long long)m->peer_bulk_bytes_out);
    buf_printf(out,
               "ringkv_peer_bulk_answers_out:%llu\r\nringkv_peer_bulk_answers_in:%llu\r\n"
               "ringkv_peer_bulk_answers_waited:%llu\r\nringkv_peer_bulk_answers_dropped:%llu\r\n"
               "ringkv_peer_bulk_answers_control:%llu\r\nringkv_peer_bulk_answers_busy:%llu\r\n"
               "ringkv_peer_control_gap_max_ms:%llu\r\n\r\n",
               (unsigned long long)m->peer_bulk_answers_out,
               (unsigned long long)m->peer_bulk_answers_in,
               (unsigned long long)m->peer_bulk_answers_waited,
               (unsigned long long)m->peer_bulk_answers_dropped,
               (unsigned long long)m->peer_bulk_answers_control,
               (unsigned long long)m->peer_bulk_answers_busy,
               (unsigned long long)lanes_control_gap_max_ms(n));
}

void metrics_count_request(struct metrics *m, uint32_t op, enum metrics_request_outcome outcome)
{
    m->requests.ended[op <= MSG_OP_MAX ? op : 0][outcome]++;
}

/* Peer requests: per operation how those this node asked ended, and those it served. */
static void info_requests(struct server *n, struct buf *out)
{
    const struct metrics_requests *r = &n->metrics.requests;

    buf_printf(out, "# Requests\r\n");
    for (uint32_t op = 1; op <= MSG_OP_MAX; op++) {
        buf_printf(out, "ringkv_requests_%s:", msg_op_name(op));
        for (int k = 0; k < METRICS_REQUEST_OUTCOMES; k++) {
            buf_printf(out, "%s%s=%llu", k > 0 ? "," : "", metrics_request_outcome_names[k],
                       (unsigned long long)r->ended[op][k]);
        }
        buf_printf(out, ",served=%llu\r\n", (unsigned long long)r->served[op]);
    }
    buf_printf(out,
               "ringkv_requests_unknown_op_served:%llu\r\nringkv_responses_late:%llu\r\n"
               "ringkv_responses_unknown:%llu\r\n\r\n",
               (unsigned long long)r->served[0], (unsigned long long)r->late,
               (unsigned long long)r->unknown);
}

struct info_section {
    const char *name;
    void (*print)(struct server *n, struct buf *out);
    bool in_default;
};

static const struct info_section info_sections[] = {
    {"server", info_server, true},     {"clients", info_clients, true},
    {"memory", info_memory, true},     {"persistence", info_persistence, true},
    {"stats", info_stats, true},       {"replication", info_replication, true},
    {"cpu", info_cpu, true},           {"keyspace", info_keyspace, true},
    {"cluster", info_cluster, true},   {"lanes", info_lanes, true},
    {"requests", info_requests, true}, {"commandstats", info_commandstats, false},
};

int metrics_info(struct server *n, const char *section, struct buf *out)
{
    bool all = section != NULL &&
               (strcasecmp(section, "all") == 0 || strcasecmp(section, "everything") == 0);
    bool dflt = section == NULL || strcasecmp(section, "default") == 0;
    int found = RK_ENOTFOUND;

    for (size_t i = 0; i < sizeof(info_sections) / sizeof(info_sections[0]); i++) {
        const struct info_section *s = &info_sections[i];
        if (all || (dflt && s->in_default) ||
            (section != NULL && strcasecmp(section, s->name) == 0)) {
            s->print(n, out);
            found = 0;
        }
    }
    return found;
}

/* --- Prometheus -------------------------------------------------------------------- */

static void prom_counter(struct buf *out, const char *name, const char *help, uint64_t v)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,
               (unsigned long long)v);
}

static void prom_gauge(struct buf *out, const char *name, const char *help, uint64_t v)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name,
               (unsigned long long)v);
}

static void prom_commands(struct server *n, struct buf *out)
{
    buf_printf(out, "# HELP ringkv_commands_total Commands answered, by command and result.\n"
                    "# TYPE ringkv_commands_total counter\n");
    for (size_t i = 0; i < commands_count; i++) {
        const struct metrics_command *c = &n->metrics.command[i];
        buf_printf(out, "ringkv_commands_total{command=\"%s\",result=\"ok\"} %llu\n",
                   commands[i].name, (unsigned long long)(c->calls - c->errors));
        buf_printf(out, "ringkv_commands_total{command=\"%s\",result=\"error\"} %llu\n",
                   commands[i].name, (unsigned long long)c->errors);
    }
}

static void prom_latency(struct server *n, struct buf *out)
{
    buf_printf(out, "# HELP ringkv_command_duration_seconds Time from a command's start to its "
                    "reply.\n# TYPE ringkv_command_duration_seconds histogram\n");
    for (size_t i = 0; i < commands_count; i++) {
        const struct metrics_command *c = &n->metrics.command[i];
        uint64_t cum = 0;
        if (c->calls == 0) {
            continue;
        }
        for (size_t b = 0; b < METRICS_LATENCY_BUCKETS; b++) {
            cum += c->buckets[b];
            if (b < METRICS_LATENCY_BUCKETS - 1) {
                buf_printf(out,
                           "ringkv_command_duration_seconds_bucket{command=\"%s\",le=\"%g\"} "
                           "%llu\n",
                           commands[i].name, (double)metrics_latency_bounds_us[b] / 1e6,
                           (unsigned long long)cum);
            } else {
                buf_printf(out,
                           "ringkv_command_duration_seconds_bucket{command=\"%s\",le=\"+Inf\"} "
                           "%llu\n",
                           commands[i].name, (unsigned long long)cum);
            }
        }
        buf_printf(out, "ringkv_command_duration_seconds_sum{command=\"%s\"} %.6f\n",
                   commands[i].name, (double)c->usec_sum / 1e6);
        buf_printf(out, "ringkv_command_duration_seconds_count{command=\"%s\"} %llu\n",
                   commands[i].name, (unsigned long long)c->calls);
    }
}

static void prom_peers(struct server *n, struct buf *out)
{
    const struct metrics *m = &n->metrics;

    prom_gauge(out, "ringkv_peer_connections", "Open node-to-node connections.", n->n_peers);
    prom_counter(out, "ringkv_peer_handshakes_total", "Peer handshakes completed.",
                 m->peer_handshakes);
    buf_printf(out, "# HELP ringkv_peer_rejected_total Peer connections or frames refused, by "
                    "reason.\n# TYPE ringkv_peer_rejected_total counter\n");
    for (int i = 0; i < METRICS_REJECT_REASONS; i++) {
        buf_printf(out, "ringkv_peer_rejected_total{reason=\"%s\"} %llu\n", metrics_reject_names[i],
                   (unsigned long long)m->peer_rejected[i]);
    }
    prom_counter(out, "ringkv_peer_messages_received_total", "Peer messages received.",
                 m->peer_messages_in);
    prom_counter(out, "ringkv_peer_messages_sent_total", "Peer messages sent.",
                 m->peer_messages_out);
    prom_counter(out, "ringkv_peer_messages_unknown_total",
                 "Peer messages of a type this node does not know, dropped.",
                 m->peer_messages_unknown);
    prom_counter(out, "ringkv_peer_frames_shared_total",
                 "Sealed peer frames that carried several messages.", m->peer_frames_shared);
    prom_counter(out, "ringkv_ring_changes_total", "Rings put in force after the first.",
                 m->ring_changes);
}

static void prom_lanes(struct server *n, struct buf *out)
{
    const struct metrics *m = &n->metrics;

    prom_counter(out, "ringkv_peer_queue_full_total",
                 "Peer connections closed because their output queue reached peer-queue-max.",
                 m->peer_queue_full);
    prom_counter(out, "ringkv_peer_credit_errors_total",
                 "Peer connections closed for breaking the bulk lane's credit rules.",
                 m->peer_credit_errors);
    prom_counter(out, "ringkv_peer_bulk_bytes_received_total", "Bulk lane bytes received.",
                 m->peer_bulk_bytes_in);
    prom_counter(out, "ringkv_peer_bulk_bytes_sent_total", "Bulk lane bytes sent.",
                 m->peer_bulk_bytes_out);
    prom_counter(out, "ringkv_peer_bulk_answers_sent_total",
                 "Handoff batches sent in the bulk lane.", m->peer_bulk_answers_out);
    prom_counter(out, "ringkv_peer_bulk_answers_received_total",
                 "Handoff batches received in the bulk lane.", m->peer_bulk_answers_in);
    prom_counter(out, "ringkv_peer_bulk_answers_waited_total",
                 "Handoff batches that waited for the bulk lane's room or credit.",
                 m->peer_bulk_answers_waited);
    prom_counter(out, "ringkv_peer_bulk_answers_dropped_total",
                 "Handoff batches dropped while waiting: connection closed or asker gone.",
                 m->peer_bulk_answers_dropped);
    prom_counter(out, "ringkv_peer_bulk_answers_control_total",
                 "Handoff batches too large for the bulk lane, sent in the control lane.",
                 m->peer_bulk_answers_control);
    prom_counter(out, "ringkv_peer_bulk_answers_busy_total",
                 "Handoff pulls refused because too many batches waited for the bulk lane.",
                 m->peer_bulk_answers_busy);
    prom_gauge(out, "ringkv_peer_control_gap_max_ms",
               "Longest wait between control messages from a peer once bulk flowed (open "
               "connections).",
               lanes_control_gap_max_ms(n));
}

static void prom_requests(struct server *n, struct buf *out)
{
    const struct metrics_requests *r = &n->metrics.requests;

    buf_printf(out, "# HELP ringkv_peer_requests_total Peer requests this node made, by operation "
                    "and how they ended.\n# TYPE ringkv_peer_requests_total counter\n");
    for (uint32_t op = 1; op <= MSG_OP_MAX; op++) {
        for (int k = 0; k < METRICS_REQUEST_OUTCOMES; k++) {
            buf_printf(out, "ringkv_peer_requests_total{op=\"%s\",outcome=\"%s\"} %llu\n",
                       msg_op_name(op), metrics_request_outcome_names[k],
                       (unsigned long long)r->ended[op][k]);
        }
    }
    buf_printf(out, "# HELP ringkv_peer_requests_served_total Peer requests this node answered, by "
                    "operation.\n# TYPE ringkv_peer_requests_served_total counter\n");
    for (uint32_t op = 0; op <= MSG_OP_MAX; op++) {
        buf_printf(out, "ringkv_peer_requests_served_total{op=\"%s\"} %llu\n", msg_op_name(op),
                   (unsigned long long)r->served[op]);
    }
    buf_printf(out,
               "# HELP ringkv_peer_responses_ignored_total Responses that matched no "
               "outstanding request.\n# TYPE ringkv_peer_responses_ignored_total counter\n"
               "ringkv_peer_responses_ignored_total{reason=\"late\"} %llu\n"
               "ringkv_peer_responses_ignored_total{reason=\"unknown\"} %llu\n",
               (unsigned long long)r->late, (unsigned long long)r->unknown);
}

static void prom_handoff(struct server *n, struct buf *out)
{
    struct handoff_stats hs;

    handoff_get_stats(n->handoff, &hs);
    prom_gauge(out, "ringkv_transfers_active", "Handoff transfers under way, in and out.",
               handoff_active(n->handoff));
    prom_counter(out, "ringkv_handoff_changes_total", "Target rings planned for.", hs.changes);
    prom_counter(out, "ringkv_handoff_arcs_done_total", "Arcs received and verified.",
                 hs.arcs_done);
    prom_counter(out, "ringkv_handoff_keys_received_total", "Keys received by handoff.",
                 hs.keys_received);
    prom_counter(out, "ringkv_handoff_bytes_received_total", "Bytes received by handoff.",
                 hs.bytes_received);
    prom_counter(out, "ringkv_handoff_keys_sent_total", "Keys served to pulling nodes.",
                 hs.keys_sent);
    prom_counter(out, "ringkv_handoff_bytes_sent_total", "Bytes served to pulling nodes.",
                 hs.bytes_sent);
    prom_counter(out, "ringkv_handoff_cleanup_keys_total",
                 "Keys deleted as no longer replicated here.", hs.cleanup_keys);
    prom_gauge(out, "ringkv_handoff_moved_fraction_ppm",
               "Part of the circle whose replicas the last change moved, in millionths.",
               hs.moved_fraction_ppm);
}

static void prom_store(struct server *n, struct buf *out)
{
    struct store_stats st;

    store_get_stats(n->store, &st);
    prom_gauge(out, "ringkv_store_keys", "Keys stored, tombstones included.", st.keys);
    prom_gauge(out, "ringkv_tombstones_held", "Records of tombstones only stored, exact.",
               st.tombstones);
    prom_gauge(out, "ringkv_store_hints", "Hints kept for unreachable replicas.", st.hints);
    prom_gauge(out, "ringkv_store_map_bytes", "Size of the LMDB map.", st.map_size);
    prom_gauge(out, "ringkv_store_used_bytes", "Bytes of LMDB pages in use.", st.map_used);
    prom_counter(out, "ringkv_store_commits_total",
                 "Batches made durable: appended to the write-ahead log or committed to LMDB.",
                 st.commits);
    prom_counter(out, "ringkv_store_checkpoints_total",
                 "Times the write-ahead log was moved into LMDB.", st.checkpoints);
    prom_gauge(out, "ringkv_store_log_keys", "Keys the write-ahead log holds that LMDB has not.",
               st.overlay_keys);
    prom_gauge(out, "ringkv_store_log_bytes", "Bytes of the write-ahead log.", st.wal_bytes);
    prom_counter(out, "ringkv_store_fsyncs_total", "fsyncs issued.", st.syncs);
    prom_counter(out, "ringkv_store_full_errors_total", "Writes refused for lack of space.",
                 st.enospc);
    prom_counter(out, "ringkv_tombstones_collected_total",
                 "Tombstones collected after tombstone-grace.", tombstones_collected(n));
    prom_gauge(out, "ringkv_tombstones",
               "Records of tombstones only held, as of the last collection pass.",
               collect_tombstones(n->collect));
    prom_counter(out, "ringkv_store_disk_failures_total",
                 "Failed flushes; after one, writes are refused until a restart.",
                 st.disk_failures);
}

static void prom_clients(struct server *n, struct buf *out)
{
    const struct metrics *m = &n->metrics;

    prom_gauge(out, "ringkv_clients", "Open client connections.", n->n_clients);
    prom_counter(out, "ringkv_connections_received_total", "Client connections accepted.",
                 m->connections_received);
    prom_counter(out, "ringkv_connections_rejected_total",
                 "Client connections refused at "
                 "maxclients.",
                 m->connections_rejected);
    prom_counter(out, "ringkv_client_protocol_errors_total", "Client protocol errors.",
                 m->client_protocol_errors);
    prom_counter(out, "ringkv_client_limit_errors_total", "Client requests over a limit.",
                 m->client_limit_errors);
    prom_counter(out, "ringkv_client_timeouts_total", "Idle clients closed.", m->client_timeouts);
    prom_counter(out, "ringkv_client_started_past_wait_total",
                 "Commands started while an earlier command of their connection waited.",
                 m->client_started_past_wait);
    prom_counter(out, "ringkv_auth_failures_total", "Wrong passwords given to AUTH.",
                 m->auth_failures);
    prom_counter(out, "ringkv_auth_throttled_total",
                 "AUTHs refused unread while their address was paused after failures.",
                 m->auth_throttled);
    prom_gauge(out, "ringkv_metrics_connections", "Open connections to the metrics port.",
               m->http_open);
    prom_counter(out, "ringkv_metrics_rejected_total",
                 "Metrics connections closed at once at metrics-maxconn.", m->http_rejected);
    prom_counter(out, "ringkv_accept_errors_total",
                 "accept() failures on any port (out of descriptors: the port pauses).",
                 m->accept_errors);
    prom_counter(out, "ringkv_keyspace_hits_total", "Reads that found a value.", m->keyspace_hits);
    prom_counter(out, "ringkv_keyspace_misses_total", "Reads that found none.", m->keyspace_misses);
    prom_counter(out, "ringkv_net_input_bytes_total", "Bytes read from clients.",
                 m->net_input_bytes);
    prom_counter(out, "ringkv_net_output_bytes_total", "Bytes written to clients.",
                 m->net_output_bytes);
}

int metrics_prometheus(struct server *n, struct buf *out)
{
    buf_printf(out,
               "# HELP ringkv_info The node's identity.\n# TYPE ringkv_info gauge\n"
               "ringkv_info{id=\"%s\",rack=\"%s\",version=\"%s\"} 1\n",
               n->cfg.id, n->cfg.rack, PACKAGE_VERSION);
    prom_gauge(out, "ringkv_uptime_seconds", "Seconds since the node started.", server_uptime_s(n));
    prom_clients(n, out);
    prom_commands(n, out);
    prom_latency(n, out);
    prom_peers(n, out);
    prom_lanes(n, out);
    prom_requests(n, out);
    prom_store(n, out);
    prom_handoff(n, out);
    return 0;
}

/* --- HTTP ---------------------------------------------------------------------------- */

struct metrics_http {
    struct server *node;
    int fd;
    ev_io rio, wio;
    ev_timer timer;
    struct buf in, out;
};

static void http_free(struct metrics_http *h)
{
    ev_io_stop(h->node->loop, &h->rio);
    ev_io_stop(h->node->loop, &h->wio);
    ev_timer_stop(h->node->loop, &h->timer);
    close(h->fd);
    h->node->metrics.http_open--;
    buf_free(&h->in);
    buf_free(&h->out);
    free(h);
}

static void http_respond(struct metrics_http *h, const char *status, const char *type,
                         const struct buf *body)
{
    buf_printf(&h->out,
               "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
               "Connection: close\r\n\r\n",
               status, type, body->len);
    buf_append(&h->out, buf_data(body), body->len);
    ev_io_stop(h->node->loop, &h->rio);
    ev_io_start(h->node->loop, &h->wio);
}

/* A whole request head has arrived: answer it. */
static void http_handle(struct metrics_http *h)
{
    const char *req = (const char *)buf_data(&h->in);
    struct buf body;

    buf_init(&body, 0);
    if (strncmp(req, "GET ", 4) != 0) {
        buf_append_str(&body, "only GET is served here\n");
        http_respond(h, "405 Method Not Allowed", "text/plain", &body);
    } else if (strncmp(req + 4, "/metrics ", 9) != 0 && strncmp(req + 4, "/metrics?", 9) != 0) {
        buf_append_str(&body, "see /metrics\n");
        http_respond(h, "404 Not Found", "text/plain", &body);
    } else {
        metrics_prometheus(h->node, &body);
        http_respond(h, "200 OK", "text/plain; version=0.0.4; charset=utf-8", &body);
    }
    buf_free(&body);
}

static void http_on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    struct metrics_http *h = w->data;
    uint8_t *p = buf_reserve(&h->in, 1024);
    ssize_t r;

    (void)loop;
    (void)revents;
    if (p == NULL) {
        http_free(h);
        return;
    }
    r = read(h->fd, p, 1023);
    if (r < 0 && errno == EAGAIN) {
        return;
    }
    if (r <= 0) {
        http_free(h);
        return;
    }
    buf_commit(&h->in, (size_t)r);
    buf_data(&h->in)[h->in.len] = '\0';
    if (strstr((const char *)buf_data(&h->in), "\r\n\r\n") != NULL ||
        strstr((const char *)buf_data(&h->in), "\n\n") != NULL) {
        http_handle(h);
    }
}

static void http_on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    struct metrics_http *h = w->data;
    size_t sent;
    int rc = net_send_buf(h->fd, &h->out, &sent);

    (void)loop;
    (void)revents;
    if (rc != 0 || h->out.len == 0) {
        http_free(h);
    }
}

static void http_on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    http_free(w->data);
}

void metrics_http_accept(struct server *n, int fd)
{
    static struct log_limit refused_log;
    struct metrics_http *h;

    if (n->metrics.http_open >= n->cfg.metrics_maxconn) {
        /* a scraper needs one connection at a time: past the cap, close before reading */
        n->metrics.http_rejected++;
        LOG_LIMITED(&refused_log, LOG_WARN, "metrics_rejected", "reason=limit max=%llu",
                    (unsigned long long)n->cfg.metrics_maxconn);
        close(fd);
        return;
    }
    h = calloc(1, sizeof(*h));
    if (h == NULL) {
        close(fd);
        return;
    }
    n->metrics.http_open++;
    h->node = n;
    h->fd = fd;
    buf_init(&h->in, METRICS_HTTP_REQUEST_MAX);
    buf_init(&h->out, 0);
    ev_io_init(&h->rio, http_on_read, fd, EV_READ);
    ev_io_init(&h->wio, http_on_write, fd, EV_WRITE);
    ev_timer_init(&h->timer, http_on_timeout, METRICS_HTTP_TIMEOUT_S, 0.);
    h->rio.data = h->wio.data = h->timer.data = h;
    ev_io_start(n->loop, &h->rio);
    ev_timer_start(n->loop, &h->timer);
}
