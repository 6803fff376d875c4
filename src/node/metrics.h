/*
 * metrics.h - the node's counters, and the two ways they are read: INFO on
 * the client port (Redis's format, sections a Redis user looks for plus
 * ringkv's own) and GET /metrics (Prometheus text format) on the metrics
 * address.  Both print the same numbers from the same struct.
 *
 * Counters are plain integers: everything that updates them runs in the
 * event-loop thread.  Storage figures are read from the store when a
 * report is made.
 */
#ifndef RINGKV_METRICS_H
#define RINGKV_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "msg.h"

struct server;

/* Room for every command of the command table (commands.c asserts it fits). */
#define METRICS_COMMANDS_MAX 64
/*
 * Latency buckets, upper bounds in microseconds: a decade split 1-2.5-5,
 * from 50 us (a read served from memory) to 10 s (a write stuck behind a
 * slow disk), as Prometheus client libraries lay out their defaults.
 */
#define METRICS_LATENCY_BUCKETS 17
extern const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS - 1];

struct metrics_command {
    uint64_t calls;
    uint64_t errors;
    uint64_t usec_sum;
    uint64_t buckets[METRICS_LATENCY_BUCKETS]; /* the last is +Inf */
};

/* Why a peer connection or frame was refused. */
enum metrics_reject {
    METRICS_REJECT_TOO_BIG,   /* frame over frame-max */
    METRICS_REJECT_SYNTAX,    /* malformed handshake or message */
    METRICS_REJECT_VERSION,   /* unsupported protocol version */
    METRICS_REJECT_AUTH,      /* wrong cluster key, or a frame that did not open */
    METRICS_REJECT_TIMEOUT,   /* handshake not finished in time */
    METRICS_REJECT_LIMIT,     /* peer-maxconn reached */
    METRICS_REJECT_ABORTED,   /* hung up before the handshake ended */
    METRICS_REJECT_SETTINGS,  /* announced other cluster settings (cluster_settings.h) */
    METRICS_REJECT_REFLECTED, /* our own handshake or IDENT sent back to us (peer.c) */
    METRICS_REJECT_REASONS,
};
extern const char *const metrics_reject_names[METRICS_REJECT_REASONS];

/*
 * How a peer request this node made ended (rpc.h).  unsupported,
 * unreachable and overloaded end it before anything is sent: the member's
 * message-set version does not know requests, no connection to it is
 * open, or its connection has RPC_OUTSTANDING_MAX requests outstanding
 * (or there was no memory for one more).
 */
enum metrics_request_outcome {
    METRICS_REQUEST_OK,          /* answered with MSG_RESULT_OK */
    METRICS_REQUEST_REFUSED,     /* answered with another result */
    METRICS_REQUEST_TIMEOUT,     /* no answer within request-timeout */
    METRICS_REQUEST_CLOSED,      /* its connection closed first */
    METRICS_REQUEST_UNSUPPORTED, /* the member's version does not know it */
    METRICS_REQUEST_UNREACHABLE, /* no connection to the member */
    METRICS_REQUEST_OVERLOADED,  /* too many outstanding on its connection, or no memory */
    METRICS_REQUEST_OUTCOMES,
};
extern const char *const metrics_request_outcome_names[METRICS_REQUEST_OUTCOMES];

/* Peer requests by operation (index: enum msg_op; 0 counts operations this node does not know). */
struct metrics_requests {
    uint64_t ended[MSG_OP_MAX + 1][METRICS_REQUEST_OUTCOMES]; /* asked by this node */
    uint64_t served[MSG_OP_MAX + 1];                          /* answered for others */
    uint64_t late;    /* responses after their request timed out, ignored */
    uint64_t unknown; /* responses to no request of their connection, ignored */
};

struct metrics {
    uint64_t connections_received;
    uint64_t connections_rejected; /* maxclients reached */
    uint64_t auth_failures;        /* wrong passwords (AUTH, HELLO AUTH) */
    uint64_t auth_throttled;       /* AUTHs refused unread: their address was paused (auth.h) */
    uint64_t http_open;            /* connections to the metrics port now */
    uint64_t http_rejected;        /* closed at once at metrics-maxconn */
    uint64_t accept_errors;        /* accept() failures on any port (server.h: they pause it) */
    uint64_t client_protocol_errors;
    uint64_t client_limit_errors; /* key/value/buffer limits broken */
    uint64_t client_timeouts;
    uint64_t client_started_past_wait; /* commands started while an earlier one waited */
    uint64_t commands_processed;
    uint64_t keyspace_hits, keyspace_misses;
    uint64_t net_input_bytes, net_output_bytes;
    struct metrics_command command[METRICS_COMMANDS_MAX];
    uint64_t peer_connections;
    uint64_t peer_handshakes;
    uint64_t peer_rejected[METRICS_REJECT_REASONS];
    uint64_t peer_messages_in, peer_messages_out;
    uint64_t peer_messages_unknown; /* of a type this node does not know: dropped */
    uint64_t peer_frames_shared;    /* sealed frames that carried several messages */
    uint64_t ring_changes; /* rings put in force since start (membership's ring listener) */
    /* flow control (lanes.h) */
    uint64_t peer_queue_full;     /* connections closed at peer-queue-max */
    uint64_t peer_credit_errors;  /* connections closed for breaking the credit rules */
    uint64_t peer_bulk_bytes_in;  /* bulk lane bytes received */
    uint64_t peer_bulk_bytes_out; /* bulk lane bytes sent */
    /* handoff batches in the bulk lane (rpc.h) */
    uint64_t peer_bulk_answers_out;     /* sealed in the bulk lane */
    uint64_t peer_bulk_answers_in;      /* received in the bulk lane */
    uint64_t peer_bulk_answers_waited;  /* waited for room or credit before going */
    uint64_t peer_bulk_answers_dropped; /* the connection closed, or the asker gave up, first */
    uint64_t peer_bulk_answers_control; /* over what the lane carries: sent in the control lane */
    uint64_t peer_bulk_answers_busy;    /* pulls refused: RPC_BULK_ANSWERS_MAX were waiting */
    struct metrics_requests requests;
};

/* Count one command: which, whether it answered with an error, how long it took. */
void metrics_count_command(struct metrics *m, int index, bool error, uint64_t usec);

/* Count a peer request for op that ended with outcome. */
void metrics_count_request(struct metrics *m, uint32_t op, enum metrics_request_outcome outcome);

/*
 * n bytes as Redis's INFO writes them (bytesToHuman): "512B" under 1 KiB,
 * else in K, M, G, T or P (powers of 1024) with two decimals, "967.77K";
 * from 1024 P on, bytes again.  out holds at least 32 bytes.
 */
void metrics_bytes_human(uint64_t n, char *out, size_t cap);

/*
 * INFO: the named section ("server", "clients", "memory", "persistence",
 * "stats", "replication", "cpu", "keyspace", "cluster", "lanes", "requests",
 * "commandstats"), or every default section for
 * NULL or "default", "all" or "everything" for all of them.  Appends Redis's
 * "# Section\r\nkey:value\r\n" text to out.  RK_ENOTFOUND for an unknown
 * section name (Redis prints nothing then; so does INFO here).
 */
int metrics_info(struct server *n, const char *section, struct buf *out);

/* The Prometheus text exposition of every counter. */
int metrics_prometheus(struct server *n, struct buf *out);

/* Serve one HTTP connection on the metrics listener (GET /metrics). */
void metrics_http_accept(struct server *n, int fd);

#endif
