/*
 * settings.c - ringkvd's settings table and everything that reads or writes
 * it.  Defaults, the config file, command-line flags, --test-config and
 * CONFIG GET all go through settings_defs[] and the per-kind setter and
 * formatter of settings_kinds[], so a new setting is one table row.
 *
 * Invariants:
 * - settings_set() changes nothing when it fails: a value is parsed into a
 *   temporary and written to its field only once it is valid.
 * - Every write clears the whole field first, so two configs holding the
 *   same settings are equal byte for byte (settings_init() starts from
 *   zeroes); the round-trip test and the fuzz target compare with memcmp.
 * - settings_format() of any value gives text that settings_set() takes back
 *   to the same value, except a secret, which is never shown.
 * - Error messages are one line: a value is echoed at most
 *   SETTINGS_ECHO_MAX bytes long with control bytes replaced by '?', and a
 *   secret is never echoed.
 *
 * Config file grammar, line by line (LF or CRLF):
 *   - a line is at most SETTINGS_LINE_MAX bytes and holds no NUL byte;
 *   - blanks (space, tab, CR, VT, FF) around a line are ignored; an
 *     empty line, or one whose first other character is '#', is skipped;
 *   - otherwise the name runs to the first blank and the value is the rest
 *     of the line, trimmed; it may be empty ("metrics" alone turns it off);
 *   - a setting given twice takes the later value, as in redis.conf, so a
 *     file may override an included default by appending a line.
 * '#' only starts a comment at the beginning of a line: "data /srv/a#b" is
 * a path with a '#' in it.  A flag's value is taken as given; a path or a
 * password with blanks at either end is refused, since a file could not
 * hold it and --test-config's output would not load back to the same value.
 */
#include "settings.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "addr.h"
#include "error.h"
#include "frame.h"
#include "hex.h"
#include "num.h"
#include "resp.h"

/* Units of durations (stored in ms) and sizes (stored in bytes). */
#define MS_PER_S 1000ull
#define MS_PER_M (60 * MS_PER_S)
#define MS_PER_H (60 * MS_PER_M)
#define MS_PER_D (24 * MS_PER_H)
#define KIB 1024ull
#define MIB (1024 * KIB)
#define GIB (1024 * MIB)
#define TIB (1024 * GIB)
#define PIB (1024 * TIB)

/*
 * Longest config file line: the longest line settings_print() writes (a
 * full seeds list, SETTINGS_VALUE_MAX) with room for hand-made spacing,
 * rounded up to a power of two.  Longer lines are refused, not split.
 */
#define SETTINGS_LINE_MAX (32 * KIB)
/* A config file of every setting with a full seeds list is under 20 KB. */
#define SETTINGS_FILE_MAX MIB
/*
 * Room around key and value in the query buffer: the RESP framing of one
 * command (array and bulk headers, the verb, options such as EX or NX) is
 * well under 4 KB.
 */
#define SETTINGS_QUERY_SLACK (4 * KIB)
/*
 * Room around key and value in a frame: a version vector pruned to
 * VCLOCK_PRUNE_KEEP_DEFAULT (50) entries of at most 81 bytes is about
 * 4 KB; 64 KB leaves a factor of ten for node ids and message fields.
 */
#define SETTINGS_FRAME_SLACK (64 * KIB)
/* A value longer than this is not one a person typed: keep messages short. */
#define SETTINGS_ECHO_MAX 64
/* One error message, before an origin and line number are added. */
#define SETTINGS_ERR_MAX 512
/* Room for "is not host:port (<addr.h's phrase>)". */
#define SETTINGS_ADDR_WHY_MAX 128
/* Longest flag or setting name we copy to look up; every real one is shorter. */
#define SETTINGS_NAME_BUF 64
/* timeout's upper bound: Redis's (an int of seconds). */
#define SETTINGS_TIMEOUT_MAX_S ((uint64_t)INT_MAX)
/* frame-max's default, in MB: FRAME_MAX_DEFAULT (proto/frame.h). */
#define SETTINGS_FRAME_MAX_DEFAULT_MB 17
/* multibulk-max's default and bound: Redis's, RESP_MULTIBULK_MAX_DEFAULT (proto/resp.h). */
#define SETTINGS_MULTIBULK_MAX 1048576

#define SETTINGS_STR_(x) #x
#define SETTINGS_STR(x) SETTINGS_STR_(x)

_Static_assert(FRAME_MAX_DEFAULT == SETTINGS_FRAME_MAX_DEFAULT_MB * MIB,
               "frame-max's default text must be FRAME_MAX_DEFAULT");
_Static_assert(RESP_MULTIBULK_MAX_DEFAULT == SETTINGS_MULTIBULK_MAX,
               "multibulk-max's default must be RESP_MULTIBULK_MAX_DEFAULT");
_Static_assert(SETTINGS_LINE_MAX > SETTINGS_VALUE_MAX + SETTINGS_NAME_BUF,
               "settings_print() lines must fit a config file line");
_Static_assert(STORE_SYNC_ALWAYS == 0 && STORE_SYNC_BATCH == 1 && STORE_SYNC_NONE == 2,
               "sync choices follow enum store_sync");
_Static_assert(LOG_DEBUG == 0 && LOG_INFO == 1 && LOG_WARN == 2 && LOG_ERROR == 3,
               "log-level choices follow enum log_level");
_Static_assert(RECORD_SIBLINGS == 0 && RECORD_LWW == 1,
               "conflicts choices follow enum record_conflicts");
_Static_assert(sizeof(enum store_sync) == 4 && sizeof(enum log_level) == 4 &&
                   sizeof(enum record_conflicts) == 4 && sizeof(bool) == 1,
               "ENUM fields are 4-byte enums or a bool");

static const char *const sync_choices[] = {"always", "batch", "none", NULL};
static const char *const log_choices[] = {"debug", "info", "warn", "error", NULL};
static const char *const conflicts_choices[] = {"siblings", "lww", NULL};
static const char *const admin_choices[] = {"loopback", "any", NULL};
static const char *const sloppy_choices[] = {"no", "yes", NULL};

/* A table row's offset and width of a struct settings member. */
#define FIELD(m) .offset = offsetof(struct settings, m), .width = sizeof(((struct settings *)0)->m)

/* Printing order is table order: identity, addresses, placement, durability, limits, access. */
const struct settings_def settings_defs[] = {
    {.name = "id",
     .kind = SETTINGS_NAME,
     FIELD(id),
     .def = "",
     .unit = "",
     .optional = true,
     .doc = "node id, 1 to 64 of [A-Za-z0-9._:-]; default: the host name when it is a valid id"},
    {.name = "rack",
     .kind = SETTINGS_NAME,
     FIELD(rack),
     .def = "rack1",
     .unit = "",
     .doc = "rack (failure domain); a key's replicas go to distinct racks first"},
    /* 256: the balance and movement table of `ringkv placement sim` (README). */
    {.name = "tokens",
     .kind = SETTINGS_UINT,
     FIELD(tokens),
     .def = "256",
     .min = RING_TOKENS_MIN,
     .max = RING_TOKENS_MAX,
     .unit = "",
     .doc = "tokens (virtual nodes) of this node on the ring"},
    {.name = "listen",
     .kind = SETTINGS_ADDR,
     FIELD(listen),
     .def = "127.0.0.1:7371",
     .unit = "",
     .doc = "host:port for other nodes (the peer port)"},
    {.name = "client",
     .kind = SETTINGS_ADDR,
     FIELD(client),
     .def = "127.0.0.1:7370",
     .unit = "",
     .doc = "host:port for clients (RESP)"},
    {.name = "metrics",
     .kind = SETTINGS_ADDR,
     FIELD(metrics),
     .def = "",
     .unit = "",
     .optional = true,
     .doc = "host:port serving GET /metrics; empty: off"},
    /* 16: a scraper or two, each with a connection or two open. */
    {.name = "metrics-maxconn",
     .kind = SETTINGS_UINT,
     FIELD(metrics_maxconn),
     .def = "16",
     .min = 1,
     .max = 65535,
     .unit = "",
     .doc = "connections to the metrics port at most; past it a connection is closed at once"},
    {.name = "data",
     .kind = SETTINGS_PATH,
     FIELD(data),
     .def = "./ringkv-data",
     .unit = "",
     .doc = "data directory"},
    {.name = "seeds",
     .kind = SETTINGS_ADDRS,
     FIELD(seeds),
     .def = "",
     .unit = "",
     .doc = "comma-separated host:port peer addresses to join through (at most 64)"},
    {.name = "cluster-key",
     .kind = SETTINGS_PATH,
     FIELD(cluster_key),
     .def = "",
     .unit = "",
     .optional = true,
     .doc = "file holding the cluster key (`ringkv keygen FILE`); required"},
    {.name = "ring-seed",
     .kind = SETTINGS_HEX16,
     FIELD(ring_seed),
     .def = "000102030405060708090a0b0c0d0e0f",
     .unit = "",
     .doc = "ring seed, 32 hex digits, the same on every node"},
    /* rf 3, r 2, w 2: the (N, R, W) = (3, 2, 2) the Dynamo paper calls common; Riak's too. */
    {.name = "rf",
     .kind = SETTINGS_UINT,
     FIELD(rf),
     .def = "3",
     .min = 1,
     .max = RING_RF_MAX,
     .unit = "",
     .doc = "replicas of each key"},
    /* 0 stands for a majority of rf: 2 of rf 3 (the Dynamo paper's and Riak's), 1 of rf 1. */
    {.name = "r",
     .kind = SETTINGS_UINT,
     FIELD(r),
     .def = "0",
     .min = 0,
     .max = RING_RF_MAX,
     .unit = "",
     .doc = "replicas that must answer a read; 0: a majority of rf (rf/2 + 1)"},
    {.name = "w",
     .kind = SETTINGS_UINT,
     FIELD(w),
     .def = "0",
     .min = 0,
     .max = RING_RF_MAX,
     .unit = "",
     .doc = "replicas that must acknowledge a write; 0: a majority of rf (rf/2 + 1)"},
    /* yes: the Dynamo paper's sloppy quorum, which Riak also uses by default. */
    {.name = "sloppy",
     .kind = SETTINGS_ENUM,
     FIELD(sloppy),
     .def = "yes",
     .unit = "",
     .choices = sloppy_choices,
     .doc = "sloppy quorum: a replica that is down is replaced by the next node of the ring walk "
            "(yes or no)"},
    {.name = "sync",
     .kind = SETTINGS_ENUM,
     FIELD(sync),
     .def = "always",
     .unit = "",
     .choices = sync_choices,
     .doc = "when writes reach the disk: always (before the ack), batch (every sync-interval), "
            "none"},
    /* 10ms: the store's own batch interval (store_config_defaults). */
    {.name = "sync-interval",
     .kind = SETTINGS_DURATION,
     FIELD(sync_interval_ms),
     .def = "10ms",
     .min = 1,
     .max = 10 * MS_PER_S,
     .unit = "ms",
     .doc = "fsync interval of sync batch"},
    /*
     * 200ms: serf's LAN gossip interval; failure detection scales with it
     * (src/membership/detector.h: down after about 18 silent intervals, 3.7 s).
     */
    {.name = "gossip-interval",
     .kind = SETTINGS_DURATION,
     FIELD(gossip_interval_ms),
     .def = "200ms",
     .min = 10,
     .max = 60 * MS_PER_S,
     .unit = "ms",
     .doc = "time between gossip rounds"},
    {.name = "handoff-rate",
     .kind = SETTINGS_SIZE,
     FIELD(handoff_rate),
     .def = "10MB",
     .min = 64 * KIB,
     .max = 10 * GIB,
     .unit = "bytes",
     .doc = "bytes per second of ownership handoff streams"},
    /* 4: Cassandra streams a few ranges at once; each arc has one batch in flight. */
    {.name = "handoff-concurrency",
     .kind = SETTINGS_UINT,
     FIELD(handoff_concurrency),
     .def = "4",
     .min = 1,
     .max = 64,
     .unit = "",
     .doc = "arcs a node receives at once during a join or leave"},
    {.name = "force-ring-change",
     .kind = SETTINGS_ENUM,
     FIELD(force_ring_change),
     .def = "no",
     .unit = "",
     .choices = sloppy_choices,
     .doc = "start even when tokens or rack differ from the values this node joined the ring "
            "with, which moves replicas at once (yes or no)"},
    {.name = "log-level",
     .kind = SETTINGS_ENUM,
     FIELD(log_level),
     .def = "info",
     .unit = "",
     .choices = log_choices,
     .runtime = true,
     .doc = "least severe level logged: debug, info, warn, error"},
    {.name = "conflicts",
     .kind = SETTINGS_ENUM,
     FIELD(conflicts),
     .def = "siblings",
     .unit = "",
     .choices = conflicts_choices,
     .doc = "concurrent writes: kept as siblings, or lww (last writer wins)"},
    /* 100: Riak's max_siblings. */
    {.name = "max-siblings",
     .kind = SETTINGS_UINT,
     FIELD(max_siblings),
     .def = "100",
     .min = 1,
     .max = RECORD_SIBLINGS_MAX,
     .unit = "",
     .doc = "siblings one key may hold; a write past it is refused"},
    /* 10d: Cassandra's gc_grace_seconds. */
    {.name = "tombstone-grace",
     .kind = SETTINGS_DURATION,
     FIELD(tombstone_grace_ms),
     .def = "10d",
     .min = MS_PER_S,
     .max = 365 * MS_PER_D,
     .unit = "s",
     .doc = "time a delete's tombstone is kept before it is collected"},
    {.name = "key-max",
     .kind = SETTINGS_SIZE,
     FIELD(key_max),
     .def = SETTINGS_STR(STORE_KEY_MAX),
     .min = 1,
     .max = STORE_KEY_MAX,
     .unit = "bytes",
     .doc = "largest key"},
    {.name = "value-max",
     .kind = SETTINGS_SIZE,
     FIELD(value_max),
     .def = "16MB",
     .min = 0,
     .max = RECORD_VALUE_MAX,
     .unit = "bytes",
     .doc = "largest value"},
    {.name = "multibulk-max",
     .kind = SETTINGS_UINT,
     FIELD(multibulk_max),
     .def = SETTINGS_STR(SETTINGS_MULTIBULK_MAX),
     .min = 1,
     .max = SETTINGS_MULTIBULK_MAX,
     .unit = "",
     .doc = "arguments in one client command (Redis's limit)"},
    {.name = "query-buffer-max",
     .kind = SETTINGS_SIZE,
     FIELD(query_buffer_max),
     .def = "64MB",
     .min = MIB,
     .max = GIB,
     .unit = "bytes",
     .doc = "bytes buffered from a client before its command is complete"},
    {.name = "output-buffer-max",
     .kind = SETTINGS_SIZE,
     FIELD(output_buffer_max),
     .def = "256MB",
     .min = MIB,
     .max = 4 * GIB,
     .unit = "bytes",
     .doc = "reply bytes buffered for a client before it is disconnected"},
    {.name = "pipeline-max",
     .kind = SETTINGS_UINT,
     FIELD(pipeline_max),
     .def = "1024",
     .min = 1,
     .max = 1000000,
     .unit = "",
     .doc = "commands queued per client before reading from it pauses"},
    {.name = "kv-shuffle-seed",
     .kind = SETTINGS_UINT,
     FIELD(kv_shuffle_seed),
     .def = "0",
     .min = 0,
     .max = UINT64_MAX,
     .unit = "",
     .doc = "tests only: non-zero defers every data operation and completes them in an order "
            "drawn from this seed (the pipeline ordering test)"},
    /* 10000: Redis's maxclients. */
    {.name = "maxclients",
     .kind = SETTINGS_UINT,
     FIELD(maxclients),
     .def = "10000",
     .min = 1,
     .max = 1000000,
     .unit = "",
     .runtime = true,
     .doc = "client connections at most"},
    /* 0: Redis's default; a client pool's idle connections stay open, as they do on Redis. */
    {.name = "timeout",
     .kind = SETTINGS_DURATION,
     FIELD(timeout_ms),
     .def = "0",
     .min = 0,
     .max = SETTINGS_TIMEOUT_MAX_S * MS_PER_S,
     .unit = "s",
     .runtime = true,
     .doc = "close a client connection idle this long; 0: never"},
    {.name = "frame-max",
     .kind = SETTINGS_SIZE,
     FIELD(frame_max),
     .def = SETTINGS_STR(SETTINGS_FRAME_MAX_DEFAULT_MB) "MB",
     .min = FRAME_MAX_MIN,
     .max = GIB,
     .unit = "bytes",
     .doc = "largest node-to-node frame"},
    {.name = "peer-maxconn",
     .kind = SETTINGS_UINT,
     FIELD(peer_maxconn),
     .def = "1024",
     .min = 1,
     .max = 65535,
     .unit = "",
     .doc = "node-to-node connections at most"},
    /*
     * 64 and 8: peers still in the channel handshake have proved nothing;
     * a real cluster opens a few at a time (one per member dialling us),
     * so these leave peer-maxconn to members that proved the key.
     */
    {.name = "peer-handshake-max",
     .kind = SETTINGS_UINT,
     FIELD(peer_handshake_max),
     .def = "64",
     .min = 1,
     .max = 65535,
     .unit = "",
     .doc = "inbound node-to-node connections still in the handshake, at most"},
    {.name = "peer-handshake-per-addr",
     .kind = SETTINGS_UINT,
     FIELD(peer_handshake_per_addr),
     .def = "8",
     .min = 1,
     .max = 65535,
     .unit = "",
     .doc = "of those, from one IP address at most"},
    {.name = "handshake-timeout",
     .kind = SETTINGS_DURATION,
     FIELD(handshake_timeout_ms),
     .def = "5s",
     .min = 100,
     .max = 60 * MS_PER_S,
     .unit = "ms",
     .doc = "time a peer has to complete the channel handshake"},
    /*
     * 64MB: room for three largest frames (frame-max 17MB, a reply carrying
     * a largest value) and the control traffic queued behind them; Redis's
     * soft limit for a replica's output buffer.  Bulk never waits here
     * (src/node/lanes.h), so only a peer that reads nothing fills it.
     */
    {.name = "peer-queue-max",
     .kind = SETTINGS_SIZE,
     FIELD(peer_queue_max),
     .def = "64MB",
     .min = MIB,
     .max = 4 * GIB,
     .unit = "bytes",
     .doc = "bytes queued for a peer before its connection is closed; at least frame-max"},
    /*
     * 1MB: a heartbeat waits behind at most a window of bulk, 1.05 s at
     * 1 MB/s (under half the detector's suspicion time at the default
     * gossip-interval, detector.h), a bulk stream reaches window / RTT,
     * 52 MB/s over a 20 ms round trip, above handoff-rate's default, and
     * half of it, the largest bulk message, holds a whole handoff batch
     * (256 KiB of records, cut to half the answer bound: rpc.h).  With
     * 256KB the batches are cut to 64 KiB: four times the requests and
     * store commits for an arc, and at one pull outstanding per arc,
     * handoff-concurrency x 64 KiB a round trip (5 MB/s at 50 ms, under
     * handoff-rate's default).
     */
    {.name = "peer-bulk-window",
     .kind = SETTINGS_SIZE,
     FIELD(peer_bulk_window),
     .def = "1MB",
     .min = 64 * KIB,
     .max = GIB,
     .unit = "bytes",
     .doc = "bulk bytes a peer may send us before we grant more (the bulk lane's credit window)"},
    /* 5s: Cassandra's read_request_timeout; a status answer on a loopback testbed takes under 1 ms.
     */
    {.name = "request-timeout",
     .kind = SETTINGS_DURATION,
     FIELD(request_timeout_ms),
     .def = "5s",
     .min = 10,
     .max = 600 * MS_PER_S,
     .unit = "ms",
     .doc = "time a peer has to answer a request (ringkv status --deep and other verbs that ask "
            "other nodes); past it the request fails as timed out"},
    /* 64GB: the store's own map limit (store_config_defaults). */
    {.name = "map-size-max",
     .kind = SETTINGS_SIZE,
     FIELD(map_size_max),
     .def = "64GB",
     .min = 16 * MIB,
     .max = PIB,
     .unit = "bytes",
     .doc = "the LMDB map grows up to this; past it writes fail as a full disk"},
    {.name = "requirepass",
     .kind = SETTINGS_SECRET,
     FIELD(requirepass),
     .def = "",
     .unit = "",
     .runtime = true,
     .doc = "password clients give with AUTH; empty: none"},
    {.name = "admin-from",
     .kind = SETTINGS_ENUM,
     FIELD(admin_any),
     .def = "loopback",
     .unit = "",
     .choices = admin_choices,
     .doc = "where RINGKV admin commands are accepted from: loopback or any"},
};
const size_t settings_defs_count = sizeof(settings_defs) / sizeof(settings_defs[0]);

/* ---- messages ------------------------------------------------------------ */

/* Room for a value echoed in a message: SETTINGS_ECHO_MAX bytes, "..." and NUL. */
#define ECHO_BUF (SETTINGS_ECHO_MAX + 4)

static int fail(char *err, size_t err_len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Write one message line to err (when there is room for one) and return code. */
static int fail(char *err, size_t err_len, int code, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && err_len > 0) {
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* s[0..len) made fit for a one-line message: shortened, control bytes as '?'. */
static const char *echo(char out[ECHO_BUF], const char *s, size_t len)
{
    size_t n = 0;

    for (; n < len && n < SETTINGS_ECHO_MAX; n++) {
        unsigned char ch = (unsigned char)s[n];
        out[n] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (n < len) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

static int bad_value(const struct settings_def *d, const char *v, char *err, size_t err_len,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* "name: 'value' " and the reason; always RK_EINVAL.  Never used for a secret. */
static int bad_value(const struct settings_def *d, const char *v, char *err, size_t err_len,
                     const char *fmt, ...)
{
    char shown[ECHO_BUF];
    va_list ap;
    int n;

    if (err == NULL || err_len == 0) {
        return RK_EINVAL;
    }
    n = snprintf(err, err_len, "%s: '%s' ", d->name, echo(shown, v, strlen(v)));
    if (n >= 0 && (size_t)n < err_len) {
        va_start(ap, fmt);
        vsnprintf(err + n, err_len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return RK_EINVAL;
}

static int put(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* snprintf that reports truncation: 0, or RK_ETOOBIG when buf is too small. */
static int put(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return (n < 0 || (size_t)n >= cap) ? RK_ETOOBIG : 0;
}

/* ---- fields -------------------------------------------------------------- */

static void *field_ptr(struct settings *c, const struct settings_def *d)
{
    return (char *)c + d->offset;
}

static const void *field_cptr(const struct settings *c, const struct settings_def *d)
{
    return (const char *)c + d->offset;
}

/* Store an integer or an enum index in a field of 8, 4 or 1 (bool) bytes. */
static void field_put_u64(struct settings *c, const struct settings_def *d, uint64_t v)
{
    uint64_t v64 = v;
    uint32_t v32 = (uint32_t)v;
    bool b = v != 0;

    if (d->width == sizeof(v64)) {
        memcpy(field_ptr(c, d), &v64, sizeof(v64));
    } else if (d->width == sizeof(v32)) {
        memcpy(field_ptr(c, d), &v32, sizeof(v32));
    } else {
        assert(d->width == sizeof(b) && "config: an integer field of unexpected width");
        memcpy(field_ptr(c, d), &b, sizeof(b));
    }
}

static uint64_t field_get_u64(const struct settings *c, const struct settings_def *d)
{
    uint64_t v64 = 0;
    uint32_t v32 = 0;
    bool b = false;

    if (d->width == sizeof(v64)) {
        memcpy(&v64, field_cptr(c, d), sizeof(v64));
        return v64;
    }
    if (d->width == sizeof(v32)) {
        memcpy(&v32, field_cptr(c, d), sizeof(v32));
        return v32;
    }
    assert(d->width == sizeof(b) && "config: an integer field of unexpected width");
    memcpy(&b, field_cptr(c, d), sizeof(b));
    return b;
}

/* ---- numbers, durations, sizes ------------------------------------------- */

enum num {
    NUM_OK,
    NUM_GARBAGE,  /* not a number of this kind */
    NUM_OVERFLOW, /* a number, past 2^64 - 1 */
};

struct unit {
    const char *name;
    uint64_t scale;
};

/* Largest first: settings_format() writes a value in the largest unit that divides it. */
static const struct unit duration_units[] = {
    {"d", MS_PER_D}, {"h", MS_PER_H}, {"m", MS_PER_M}, {"s", MS_PER_S}, {"ms", 1}, {NULL, 0},
};

/* Largest first; "B" divides everything, so the one-letter forms are read, never written. */
static const struct unit size_units[] = {
    {"PB", PIB}, {"TB", TIB}, {"GB", GIB}, {"MB", MIB}, {"KB", KIB},
    {"B", 1},    {"G", GIB},  {"M", MIB},  {"K", KIB},  {NULL, 0},
};

/* How one numeric kind reads and writes its values. */
struct numeric {
    const struct unit *units; /* NULL: a bare number only */
    bool any_case;            /* units match in any case */
    const char *noun;         /* for "is not ..." */
};

static const struct numeric numeric_uint = {NULL, false, "a number"};
static const struct numeric numeric_duration = {duration_units, false,
                                                "a duration (a number and ms, s, m, h or d)"};
static const struct numeric numeric_size = {size_units, true,
                                            "a size (a number and B, KB, MB, GB, TB or PB)"};

static const struct unit *unit_find(const struct unit *units, const char *name, bool any_case)
{
    for (size_t i = 0; units != NULL && units[i].name != NULL; i++) {
        bool same =
            any_case ? strcasecmp(units[i].name, name) == 0 : strcmp(units[i].name, name) == 0;
        if (same) {
            return &units[i];
        }
    }
    return NULL;
}

/* Decimal digits s[0..len), nothing else (num.h). */
static enum num parse_digits(const char *s, size_t len, uint64_t *out)
{
    int rc = num_parse_u64(s, len, UINT64_MAX, out);

    return rc == 0 ? NUM_OK : rc == RK_ERANGE ? NUM_OVERFLOW : NUM_GARBAGE;
}

/* Digits then an optional unit, no blank between; a bare number is in d's own unit. */
static enum num parse_number(const struct settings_def *d, const struct numeric *num, const char *s,
                             uint64_t *out)
{
    size_t k = strspn(s, "0123456789");
    const struct unit *bare = unit_find(num->units, d->unit, num->any_case);
    uint64_t scale = bare != NULL ? bare->scale : 1;
    uint64_t v = 0;
    enum num st;

    if (s[k] != '\0') {
        const struct unit *u = unit_find(num->units, s + k, num->any_case);
        if (u == NULL) {
            return NUM_GARBAGE;
        }
        scale = u->scale;
    }
    st = parse_digits(s, k, &v);
    if (st != NUM_OK) {
        return st;
    }
    if (v > UINT64_MAX / scale) {
        return NUM_OVERFLOW;
    }
    *out = v * scale;
    return NUM_OK;
}

/* v in the largest unit that divides it exactly ("10d", "503B"), or as a bare number. */
static int format_scaled(const struct numeric *num, uint64_t v, char *buf, size_t cap)
{
    if (v == 0 || num->units == NULL) {
        return put(buf, cap, "%" PRIu64, v);
    }
    for (size_t i = 0; num->units[i].name != NULL; i++) {
        if (v % num->units[i].scale == 0) {
            return put(buf, cap, "%" PRIu64 "%s", v / num->units[i].scale, num->units[i].name);
        }
    }
    return put(buf, cap, "%" PRIu64, v);
}

static const struct numeric *numeric_of(const struct settings_def *d);

static int set_number(struct settings *c, const struct settings_def *d, const char *v, char *err,
                      size_t err_len)
{
    const struct numeric *num = numeric_of(d);
    char lo[32], hi[32];
    uint64_t n = 0;
    enum num st = parse_number(d, num, v, &n);

    if (st == NUM_GARBAGE) {
        return bad_value(d, v, err, err_len, "is not %s", num->noun);
    }
    if (st == NUM_OVERFLOW || n < d->min || n > d->max) {
        format_scaled(num, d->min, lo, sizeof(lo));
        format_scaled(num, d->max, hi, sizeof(hi));
        return bad_value(d, v, err, err_len, "is out of range %s to %s", lo, hi);
    }
    field_put_u64(c, d, n);
    return 0;
}

static int format_number(const struct settings *c, const struct settings_def *d, char *buf,
                         size_t cap)
{
    return format_scaled(numeric_of(d), field_get_u64(c, d), buf, cap);
}

/* ---- enums --------------------------------------------------------------- */

static int set_enum(struct settings *c, const struct settings_def *d, const char *v, char *err,
                    size_t err_len)
{
    char list[256];
    size_t used = 0;

    for (size_t i = 0; d->choices[i] != NULL; i++) {
        if (strcasecmp(v, d->choices[i]) == 0) {
            field_put_u64(c, d, i);
            return 0;
        }
    }
    list[0] = '\0';
    for (size_t i = 0; d->choices[i] != NULL && used < sizeof(list); i++) {
        int n =
            snprintf(list + used, sizeof(list) - used, "%s%s", i > 0 ? ", " : "", d->choices[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    return bad_value(d, v, err, err_len, "is not one of %s", list);
}

static int format_enum(const struct settings *c, const struct settings_def *d, char *buf,
                       size_t cap)
{
    uint64_t idx = field_get_u64(c, d);
    size_t n = 0;

    while (d->choices[n] != NULL) {
        n++;
    }
    assert(idx < n && "settings_format: an enum field holds no valid choice");
    return put(buf, cap, "%s", d->choices[idx]);
}

/* ---- names, paths, secrets, the ring seed -------------------------------- */

static int set_name(struct settings *c, const struct settings_def *d, const char *v, char *err,
                    size_t err_len)
{
    size_t len = strlen(v);

    if (!(len == 0 && d->optional) && !ring_name_valid(v, len)) {
        return bad_value(d, v, err, err_len, "is not a valid name (1 to %d of [A-Za-z0-9._:-])",
                         RING_NAME_MAX);
    }
    assert(len < d->width && "config: a name field shorter than RING_NAME_MAX");
    memset(field_ptr(c, d), 0, d->width);
    memcpy(field_ptr(c, d), v, len);
    return 0;
}

/* What a path and a secret share: they fit, they are one line, no blanks at the ends. */
static int check_text(const struct settings_def *d, const char *v, size_t len, char *err,
                      size_t err_len)
{
    if (len >= d->width) {
        return fail(err, err_len, RK_EINVAL, "%s: the value is longer than %zu bytes", d->name,
                    d->width - 1);
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch < 0x20 || ch == 0x7f) {
            return fail(err, err_len, RK_EINVAL, "%s: the value holds a control character",
                        d->name);
        }
    }
    if (len > 0 && (v[0] == ' ' || v[len - 1] == ' ')) {
        return fail(err, err_len, RK_EINVAL, "%s: the value begins or ends with a blank", d->name);
    }
    return 0;
}

static int set_path(struct settings *c, const struct settings_def *d, const char *v, char *err,
                    size_t err_len)
{
    size_t len = strlen(v);
    int rc = check_text(d, v, len, err, err_len);

    if (rc != 0) {
        return rc;
    }
    if (len == 0 && !d->optional) {
        return bad_value(d, v, err, err_len, "is not a path");
    }
    memset(field_ptr(c, d), 0, d->width);
    memcpy(field_ptr(c, d), v, len);
    return 0;
}

static int set_secret(struct settings *c, const struct settings_def *d, const char *v, char *err,
                      size_t err_len)
{
    size_t len = strlen(v);
    int rc = check_text(d, v, len, err, err_len);

    if (rc != 0) {
        return rc;
    }
    sodium_memzero(field_ptr(c, d), d->width);
    memcpy(field_ptr(c, d), v, len);
    return 0;
}

static int format_text(const struct settings *c, const struct settings_def *d, char *buf,
                       size_t cap)
{
    return put(buf, cap, "%s", (const char *)field_cptr(c, d));
}

static int format_secret(const struct settings *c, const struct settings_def *d, char *buf,
                         size_t cap)
{
    const char *s = field_cptr(c, d);
    return put(buf, cap, "%s", s[0] != '\0' ? "(hidden)" : "");
}

static int set_hex16(struct settings *c, const struct settings_def *d, const char *v, char *err,
                     size_t err_len)
{
    uint8_t seed[RING_SEED_LEN];

    if (strlen(v) != 2 * RING_SEED_LEN || !hex_decode(seed, v, 2 * RING_SEED_LEN)) {
        return bad_value(d, v, err, err_len, "is not %d hex digits", 2 * RING_SEED_LEN);
    }
    assert(d->width == RING_SEED_LEN && "config: HEX16 is a 16-byte field");
    memcpy(field_ptr(c, d), seed, RING_SEED_LEN);
    return 0;
}

static int format_hex16(const struct settings *c, const struct settings_def *d, char *buf,
                        size_t cap)
{
    char hex[2 * RING_SEED_LEN + 1];

    hex_encode(hex, field_cptr(c, d), RING_SEED_LEN);
    return put(buf, cap, "%s", hex);
}

/* ---- addresses ----------------------------------------------------------- */

/*
 * Parse "host:port" (addr.h's rules) from s[0..len) into *out; NULL, or
 * why it is not an address, as the rest of a "'v' ..." sentence.
 */
static const char *addr_text_parse(const char *s, size_t len, struct settings_addr *out,
                                   char *why_buf, size_t why_cap)
{
    struct addr a;
    const char *why;

    if (addr_parse(s, len, 0, &a, &why) != 0) {
        snprintf(why_buf, why_cap, "is not host:port (%s)", why);
        return why_buf;
    }
    memset(out, 0, sizeof(*out));
    memcpy(out->host, a.host, sizeof(out->host));
    out->port = a.port;
    out->set = true;
    return NULL;
}

static int set_addr(struct settings *c, const struct settings_def *d, const char *v, char *err,
                    size_t err_len)
{
    struct settings_addr a;
    const char *why = NULL;
    char why_buf[SETTINGS_ADDR_WHY_MAX];

    memset(&a, 0, sizeof(a));
    if (!(v[0] == '\0' && d->optional)) {
        why = addr_text_parse(v, strlen(v), &a, why_buf, sizeof(why_buf));
    }
    if (why != NULL) {
        return bad_value(d, v, err, err_len, "%s", why);
    }
    assert(d->width == sizeof(a) && "config: ADDR is a struct settings_addr");
    memcpy(field_ptr(c, d), &a, sizeof(a));
    return 0;
}

void settings_addr_text(const struct settings_addr *a, char *out, size_t cap)
{
    addr_format(out, cap, a->host, a->port);
}

static int format_addr(const struct settings *c, const struct settings_def *d, char *buf,
                       size_t cap)
{
    const struct settings_addr *a = field_cptr(c, d);

    if (!a->set) {
        return put(buf, cap, "%s", "");
    }
    return addr_format(buf, cap, a->host, a->port);
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Drop blanks at both ends of s[0..*len). */
static void trim(const char **s, size_t *len)
{
    while (*len > 0 && is_blank((*s)[0])) {
        (*s)++;
        (*len)--;
    }
    while (*len > 0 && is_blank((*s)[*len - 1])) {
        (*len)--;
    }
}

/* Parse a comma-separated list into seeds[]; *n gets the count. */
static int addrs_parse(const struct settings_def *d, const char *v, struct settings_addr *seeds,
                       size_t *n, char *err, size_t err_len)
{
    char shown[ECHO_BUF];

    const char *item = v;

    *n = 0;
    if (v[0] == '\0') {
        return 0;
    }
    for (;;) {
        const char *end = strchrnul(item, ',');
        size_t len = (size_t)(end - item);
        const char *why;
        char why_buf[SETTINGS_ADDR_WHY_MAX];

        trim(&item, &len);
        if (*n == SETTINGS_SEEDS_MAX) {
            return fail(err, err_len, RK_EINVAL, "%s: more than %d addresses", d->name,
                        SETTINGS_SEEDS_MAX);
        }
        why = addr_text_parse(item, len, &seeds[*n], why_buf, sizeof(why_buf));
        if (why != NULL) {
            return fail(err, err_len, RK_EINVAL, "%s: '%s' %s", d->name, echo(shown, item, len),
                        why);
        }
        (*n)++;
        if (*end == '\0') {
            return 0;
        }
        item = end + 1;
    }
}

static int set_addrs(struct settings *c, const struct settings_def *d, const char *v, char *err,
                     size_t err_len)
{
    struct settings_addr seeds[SETTINGS_SEEDS_MAX];
    size_t n = 0;
    int rc;

    assert(d->offset == offsetof(struct settings, seeds) && "config: ADDRS is the seeds list");
    memset(seeds, 0, sizeof(seeds));
    rc = addrs_parse(d, v, seeds, &n, err, err_len);
    if (rc != 0) {
        return rc;
    }
    memcpy(c->seeds, seeds, sizeof(seeds));
    c->n_seeds = n;
    return 0;
}

static int format_addrs(const struct settings *c, const struct settings_def *d, char *buf,
                        size_t cap)
{
    size_t used = 0;

    if (cap == 0) {
        return RK_ETOOBIG;
    }
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_seeds; i++) {
        int rc = i > 0 ? put(buf + used, cap - used, ",") : 0;
        if (rc == 0) {
            used += strlen(buf + used);
            rc = addr_format(buf + used, cap - used, c->seeds[i].host, c->seeds[i].port);
        }
        if (rc != 0) {
            return rc;
        }
        used += strlen(buf + used);
    }
    return 0;
}

/* ---- the kinds ----------------------------------------------------------- */

typedef int (*settings_setter)(struct settings *c, const struct settings_def *d, const char *v,
                               char *err, size_t err_len);
typedef int (*settings_formatter)(const struct settings *c, const struct settings_def *d, char *buf,
                                  size_t cap);

struct settings_kind_ops {
    settings_setter set;
    settings_formatter format;
    const struct numeric *num; /* UINT, DURATION, SIZE */
};

static const struct settings_kind_ops settings_kinds[] = {
    [SETTINGS_NAME] = {set_name, format_text, NULL},
    [SETTINGS_UINT] = {set_number, format_number, &numeric_uint},
    [SETTINGS_DURATION] = {set_number, format_number, &numeric_duration},
    [SETTINGS_SIZE] = {set_number, format_number, &numeric_size},
    [SETTINGS_ENUM] = {set_enum, format_enum, NULL},
    [SETTINGS_ADDR] = {set_addr, format_addr, NULL},
    [SETTINGS_ADDRS] = {set_addrs, format_addrs, NULL},
    [SETTINGS_PATH] = {set_path, format_text, NULL},
    [SETTINGS_HEX16] = {set_hex16, format_hex16, NULL},
    [SETTINGS_SECRET] = {set_secret, format_secret, NULL},
};

static const struct settings_kind_ops *kind_of(const struct settings_def *d)
{
    assert((size_t)d->kind < sizeof(settings_kinds) / sizeof(settings_kinds[0]) &&
           settings_kinds[d->kind].set != NULL && "config: a setting of unknown kind");
    return &settings_kinds[d->kind];
}

static const struct numeric *numeric_of(const struct settings_def *d)
{
    const struct numeric *num = kind_of(d)->num;

    assert(num != NULL && "config: a number setter on a setting that is not a number");
    return num;
}

/* ---- settings ------------------------------------------------------------ */

const struct settings_def *settings_find(const char *name)
{
    for (size_t i = 0; i < settings_defs_count; i++) {
        if (strcmp(settings_defs[i].name, name) == 0) {
            return &settings_defs[i];
        }
    }
    return NULL;
}

int settings_set(struct settings *c, const char *name, const char *value, char *err, size_t err_len)
{
    const struct settings_def *d;
    char shown[ECHO_BUF];

    assert(c != NULL && name != NULL && value != NULL && "settings_set: NULL argument");
    d = settings_find(name);
    if (d == NULL) {
        return fail(err, err_len, RK_ENOTFOUND, "unknown setting '%s'",
                    echo(shown, name, strlen(name)));
    }
    return kind_of(d)->set(c, d, value, err, err_len);
}

int settings_format(const struct settings *c, const struct settings_def *d, char *buf, size_t cap)
{
    return kind_of(d)->format(c, d, buf, cap);
}

/* ---- CONFIG GET: Redis's names in Redis's units ----------------------------- */

/* timeout in whole seconds, Redis's unit; a part second rounds up, so it never reads as 0 (never).
 */
static int redis_timeout(const struct settings *c, char *buf, size_t cap)
{
    return put(buf, cap, "%" PRIu64,
               (uint64_t)(c->timeout_ms / MS_PER_S + (c->timeout_ms % MS_PER_S != 0)));
}

/* No snapshots: ringkv's store is durable on its own (sync), there is no RDB to save. */
static int redis_save(const struct settings *c, char *buf, size_t cap)
{
    (void)c;
    return put(buf, cap, "%s", "");
}

/*
 * Every sync mode writes each write to the store's log before it is
 * acknowledged, as Redis's append-only file does; sync only decides when
 * that reaches the disk (appendfsync below).  So appendonly is yes in all
 * of them.
 */
static int redis_appendonly(const struct settings *c, char *buf, size_t cap)
{
    (void)c;
    return put(buf, cap, "%s", "yes");
}

/*
 * sync in Redis's words: always fsyncs before the reply, as appendfsync
 * always; batch fsyncs every sync-interval (10 ms by default), the
 * nearest Redis choice being everysec; none leaves it to the system, no.
 */
static int redis_appendfsync(const struct settings *c, char *buf, size_t cap)
{
    static const char *const fsync_names[] = {"always", "everysec", "no"};
    return put(buf, cap, "%s", fsync_names[c->sync]);
}

/* No memory limit and no eviction (the store's bound is map-size-max, on disk). */
static int redis_maxmemory(const struct settings *c, char *buf, size_t cap)
{
    (void)c;
    return put(buf, cap, "%s", "0");
}

static int redis_maxmemory_policy(const struct settings *c, char *buf, size_t cap)
{
    (void)c;
    return put(buf, cap, "%s", "noeviction");
}

/* One keyspace: SELECT takes only 0. */
static int redis_databases(const struct settings *c, char *buf, size_t cap)
{
    (void)c;
    return put(buf, cap, "%s", "1");
}

struct settings_redis {
    const char *name;
    int (*format)(const struct settings *c, char *buf, size_t cap);
};

static const struct settings_redis redis_view[] = {
    {"timeout", redis_timeout},       {"save", redis_save},
    {"appendonly", redis_appendonly}, {"appendfsync", redis_appendfsync},
    {"maxmemory", redis_maxmemory},   {"maxmemory-policy", redis_maxmemory_policy},
    {"databases", redis_databases},
};
const size_t settings_redis_count = sizeof(redis_view) / sizeof(redis_view[0]);

const char *settings_redis_name(size_t i)
{
    assert(i < settings_redis_count && "settings_redis_name: index past settings_redis_count");
    return redis_view[i].name;
}

int settings_config_get(const struct settings *c, const char *name, char *buf, size_t cap)
{
    const struct settings_def *d;

    for (size_t i = 0; i < settings_redis_count; i++) {
        if (strcasecmp(name, redis_view[i].name) == 0) {
            return redis_view[i].format(c, buf, cap);
        }
    }
    d = settings_find(name);
    return d != NULL ? settings_format(c, d, buf, cap) : RK_ENOTFOUND;
}

bool settings_same(const struct settings *a, const struct settings *b, const struct settings_def *d)
{
    if (d->kind == SETTINGS_ADDRS && a->n_seeds != b->n_seeds) {
        return false;
    }
    return memcmp(field_cptr(a, d), field_cptr(b, d), d->width) == 0;
}

void settings_copy(struct settings *dst, const struct settings *src, const struct settings_def *d)
{
    memcpy(field_ptr(dst, d), field_cptr(src, d), d->width);
    if (d->kind == SETTINGS_ADDRS) {
        dst->n_seeds = src->n_seeds;
    }
}

/* What each kind without a range takes, for settings_describe(). */
static const char *const settings_kind_nouns[] = {
    [SETTINGS_NAME] = "1 to 64 of A-Z a-z 0-9 . _ : -",
    [SETTINGS_ADDR] = "host:port (an IPv6 host in brackets)",
    [SETTINGS_ADDRS] = "host:port[,host:port...]",
    [SETTINGS_PATH] = "a path",
    [SETTINGS_HEX16] = "32 hex digits",
    [SETTINGS_SECRET] = "text",
};

int settings_describe(const struct settings_def *d, char *buf, size_t cap)
{
    char lo[32], hi[32];
    size_t used = 0;

    if (d->kind == SETTINGS_UINT || d->kind == SETTINGS_DURATION || d->kind == SETTINGS_SIZE) {
        format_scaled(numeric_of(d), d->min, lo, sizeof(lo));
        format_scaled(numeric_of(d), d->max, hi, sizeof(hi));
        return put(buf, cap, "%s to %s", lo, hi);
    }
    if (d->kind != SETTINGS_ENUM) {
        return put(buf, cap, "%s", settings_kind_nouns[d->kind]);
    }
    buf[0] = '\0';
    for (size_t i = 0; d->choices[i] != NULL; i++) {
        const char *sep = i == 0 ? "" : d->choices[i + 1] == NULL ? " or " : ", ";
        if (put(buf + used, cap - used, "%s%s", sep, d->choices[i]) != 0) {
            return RK_ETOOBIG;
        }
        used += strlen(buf + used);
    }
    return 0;
}

/* id's default: the host name, when it is a valid node id (PLACEMENT.md section 2). */
static void settings_default_id(struct settings *c)
{
    char host[HOST_NAME_MAX + 1];

    if (gethostname(host, sizeof(host)) != 0) {
        return;
    }
    host[sizeof(host) - 1] = '\0';
    if (ring_name_valid(host, strlen(host))) {
        memcpy(c->id, host, strlen(host) + 1);
    }
}

void settings_init(struct settings *c)
{
    char err[SETTINGS_ERR_MAX];

    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < settings_defs_count; i++) {
        int rc = settings_set(c, settings_defs[i].name, settings_defs[i].def, err, sizeof(err));
        assert(rc == 0 && "settings_init: a default of settings_defs[] does not parse");
        (void)rc;
    }
    settings_default_id(c);
}

void settings_print(const struct settings *c, FILE *out)
{
    char value[SETTINGS_VALUE_MAX];

    for (size_t i = 0; i < settings_defs_count; i++) {
        const struct settings_def *d = &settings_defs[i];
        int rc = settings_format(c, d, value, sizeof(value));

        assert(rc == 0 && "settings_print: a value longer than SETTINGS_VALUE_MAX");
        (void)rc;
        if (d->kind == SETTINGS_SECRET && value[0] != '\0') {
            fprintf(out, "# %s %s\n", d->name, value);
        } else if (value[0] == '\0') {
            fprintf(out, "%s\n", d->name);
        } else {
            fprintf(out, "%s %s\n", d->name, value);
        }
    }
}

/* ---- the config file ----------------------------------------------------- */

/* One line, without its '\n'.  Blank and comment lines are skipped. */
static int parse_line(struct settings *c, const char *line, size_t len, char *err, size_t err_len)
{
    char name[SETTINGS_NAME_BUF];
    char value[SETTINGS_LINE_MAX + 1];
    char shown[ECHO_BUF];
    size_t name_len = 0;
    const char *rest;
    size_t rest_len;
    int rc;

    if (len > SETTINGS_LINE_MAX) {
        return fail(err, err_len, RK_ETOOBIG, "line is longer than %llu bytes", SETTINGS_LINE_MAX);
    }
    if (memchr(line, '\0', len) != NULL) {
        return fail(err, err_len, RK_ESYNTAX, "line holds a NUL byte");
    }
    trim(&line, &len);
    if (len == 0 || line[0] == '#') {
        return 0;
    }
    while (name_len < len && !is_blank(line[name_len])) {
        name_len++;
    }
    if (name_len >= sizeof(name)) {
        return fail(err, err_len, RK_ENOTFOUND, "unknown setting '%s'",
                    echo(shown, line, name_len));
    }
    memcpy(name, line, name_len);
    name[name_len] = '\0';
    rest = line + name_len;
    rest_len = len - name_len;
    trim(&rest, &rest_len);
    memcpy(value, rest, rest_len);
    value[rest_len] = '\0';
    rc = settings_set(c, name, value, err, err_len);
    sodium_memzero(value, rest_len);
    return rc;
}

int settings_parse_text(struct settings *c, const char *text, size_t len, const char *origin,
                        char *err, size_t err_len)
{
    char sub[SETTINGS_ERR_MAX];
    size_t pos = 0;
    size_t line_no = 0;

    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t line_len = nl != NULL ? (size_t)(nl - (text + pos)) : len - pos;
        int rc = parse_line(c, text + pos, line_len, sub, sizeof(sub));

        line_no++;
        if (rc != 0) {
            return fail(err, err_len, rc, "%s:%zu: %s", origin != NULL ? origin : "config", line_no,
                        sub);
        }
        pos += line_len + (nl != NULL ? 1 : 0);
    }
    return 0;
}

/*
 * Did the regular file behind f change while it was read (size, times or
 * inode differ from before, or fewer or more than its size were read)?  A
 * file being written in place is refused rather than applied in part.
 */
static bool file_changed(FILE *f, const struct stat *before, size_t n)
{
    struct stat after;

    if (!S_ISREG(before->st_mode)) {
        return false; /* a pipe (--config <(...)) has no size to compare */
    }
    if (fstat(fileno(f), &after) != 0) {
        return true;
    }
    return after.st_ino != before->st_ino || after.st_size != before->st_size ||
           (off_t)n != after.st_size || after.st_mtim.tv_sec != before->st_mtim.tv_sec ||
           after.st_mtim.tv_nsec != before->st_mtim.tv_nsec ||
           after.st_ctim.tv_sec != before->st_ctim.tv_sec ||
           after.st_ctim.tv_nsec != before->st_ctim.tv_nsec;
}

int settings_load_file(struct settings *c, const char *path, char *err, size_t err_len)
{
    FILE *f = fopen(path, "rb");
    struct stat before;
    char *buf;
    size_t n = 0;
    int rc;

    if (f == NULL) {
        return fail(err, err_len, RK_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    buf = malloc(SETTINGS_FILE_MAX + 1);
    if (buf == NULL) {
        rc = fail(err, err_len, RK_ENOMEM, "%s: out of memory", path);
        goto out_close;
    }
    if (fstat(fileno(f), &before) != 0) {
        rc = fail(err, err_len, RK_EIO, "%s: cannot stat: %s", path, strerror(errno));
        goto out_free;
    }
    n = fread(buf, 1, SETTINGS_FILE_MAX + 1, f);
    if (ferror(f)) {
        rc = fail(err, err_len, RK_EIO, "%s: cannot read: %s", path, strerror(errno));
    } else if (n > SETTINGS_FILE_MAX) {
        rc = fail(err, err_len, RK_ETOOBIG, "%s: larger than %llu bytes", path, SETTINGS_FILE_MAX);
    } else if (file_changed(f, &before, n)) {
        rc = fail(err, err_len, RK_EIO,
                  "%s: changed while it was read; write the new file beside it and rename it "
                  "over the old one",
                  path);
    } else {
        rc = settings_parse_text(c, buf, n, path, err, err_len);
    }
out_free:
    sodium_memzero(buf, n);
    free(buf);
out_close:
    fclose(f);
    return rc;
}

/* ---- consistency --------------------------------------------------------- */

static int rule_required(const struct settings *c, char *err, size_t err_len)
{
    if (c->id[0] == '\0') {
        return fail(err, err_len, RK_EINVAL,
                    "id is not set: give --id NAME (1 to %d of [A-Za-z0-9._:-])", RING_NAME_MAX);
    }
    if (c->cluster_key[0] == '\0') {
        return fail(err, err_len, RK_EINVAL,
                    "cluster-key is not set: create one with `ringkv keygen FILE` and give "
                    "--cluster-key FILE");
    }
    return 0;
}

uint32_t settings_quorum(uint32_t q, uint32_t rf)
{
    return q != 0 ? q : rf / 2 + 1;
}

/* A read or write quorum larger than the replica count could never be met. */
static int rule_quorum(const struct settings *c, char *err, size_t err_len)
{
    if (settings_quorum(c->r, c->rf) > c->rf) {
        return fail(err, err_len, RK_EMISMATCH, "r (%" PRIu32 ") is larger than rf (%" PRIu32 ")",
                    c->r, c->rf);
    }
    if (settings_quorum(c->w, c->rf) > c->rf) {
        return fail(err, err_len, RK_EMISMATCH, "w (%" PRIu32 ") is larger than rf (%" PRIu32 ")",
                    c->w, c->rf);
    }
    return 0;
}

/* A buffer that must hold the largest key and value with some framing around them. */
static int rule_room(const char *name, uint64_t have, const struct settings *c, uint64_t slack,
                     char *err, size_t err_len)
{
    char have_s[32], value_s[32], key_s[32], slack_s[32];

    if (have >= c->value_max + c->key_max + slack) {
        return 0;
    }
    format_scaled(&numeric_size, have, have_s, sizeof(have_s));
    format_scaled(&numeric_size, c->value_max, value_s, sizeof(value_s));
    format_scaled(&numeric_size, c->key_max, key_s, sizeof(key_s));
    format_scaled(&numeric_size, slack, slack_s, sizeof(slack_s));
    return fail(err, err_len, RK_EMISMATCH,
                "%s (%s) is smaller than value-max (%s) + key-max (%s) + %s", name, have_s, value_s,
                key_s, slack_s);
}

static int rule_buffers(const struct settings *c, char *err, size_t err_len)
{
    int rc =
        rule_room("query-buffer-max", c->query_buffer_max, c, SETTINGS_QUERY_SLACK, err, err_len);

    if (rc != 0) {
        return rc;
    }
    return rule_room("frame-max", c->frame_max, c, SETTINGS_FRAME_SLACK, err, err_len);
}

/* A peer's queue must take one largest frame, or a largest reply closes its connection. */
static int rule_peer_queue(const struct settings *c, char *err, size_t err_len)
{
    char queue_s[32], frame_s[32];

    if (c->peer_queue_max >= c->frame_max) {
        return 0;
    }
    format_scaled(&numeric_size, c->peer_queue_max, queue_s, sizeof(queue_s));
    format_scaled(&numeric_size, c->frame_max, frame_s, sizeof(frame_s));
    return fail(err, err_len, RK_EMISMATCH, "peer-queue-max (%s) is smaller than frame-max (%s)",
                queue_s, frame_s);
}

/* Two listeners on one address would fail to bind, with a less helpful message. */
static int rule_addresses(const struct settings *c, char *err, size_t err_len)
{
    const struct {
        const char *name;
        const struct settings_addr *a;
    } l[] = {{"listen", &c->listen}, {"client", &c->client}, {"metrics", &c->metrics}};
    const size_t n = sizeof(l) / sizeof(l[0]);
    char text[ADDR_TEXT_MAX];

    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            if (l[i].a->set && l[j].a->set && l[i].a->port == l[j].a->port &&
                strcmp(l[i].a->host, l[j].a->host) == 0) {
                settings_addr_text(l[i].a, text, sizeof(text));
                return fail(err, err_len, RK_EMISMATCH, "%s and %s are the same address %s",
                            l[i].name, l[j].name, text);
            }
        }
    }
    return 0;
}

typedef int (*settings_rule)(const struct settings *c, char *err, size_t err_len);

static const settings_rule settings_rules[] = {
    rule_required, rule_quorum, rule_buffers, rule_peer_queue, rule_addresses,
};

int settings_check(const struct settings *c, char *err, size_t err_len)
{
    for (size_t i = 0; i < sizeof(settings_rules) / sizeof(settings_rules[0]); i++) {
        int rc = settings_rules[i](c, err, err_len);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

uint64_t settings_fd_need(const struct settings *c, const char **largest)
{
    uint64_t metrics = c->metrics.set ? c->metrics_maxconn : 0;

    *largest = "maxclients";
    if (c->peer_maxconn > c->maxclients && c->peer_maxconn >= metrics) {
        *largest = "peer-maxconn";
    } else if (metrics > c->maxclients && metrics > c->peer_maxconn) {
        *largest = "metrics-maxconn";
    }
    return c->maxclients + c->peer_maxconn + metrics + SETTINGS_FD_RESERVE;
}

/* ---- the command line ---------------------------------------------------- */

/* Flags that take no value, and the settings_cli field each one sets. */
static const struct {
    const char *flag;
    size_t offset;
} settings_switches[] = {
    {"--test-config", offsetof(struct settings_cli, test_config)},
    {"--help", offsetof(struct settings_cli, help)},
    {"-h", offsetof(struct settings_cli, help)},
    {"--version", offsetof(struct settings_cli, version)},
    {"-v", offsetof(struct settings_cli, version)},
};

enum arg_kind {
    ARG_SWITCH,  /* settings_switches[sw] */
    ARG_CONFIG,  /* the config file: value */
    ARG_SETTING, /* def = value */
};

/* One argument (with its value, where it takes one) of the command line; borrowed from argv. */
struct arg {
    enum arg_kind kind;
    size_t sw;
    const struct settings_def *def;
    const char *value;
};

/*
 * Whether s[0..name_len) names a switch: 1 (a is set), 0, or RK_EINVAL for
 * a switch given a value ("--help=x").
 */
static int arg_switch(const char *s, size_t name_len, struct arg *a, char *err, size_t err_len)
{
    for (size_t i = 0; i < sizeof(settings_switches) / sizeof(settings_switches[0]); i++) {
        const char *flag = settings_switches[i].flag;
        if (strlen(flag) != name_len || strncmp(s, flag, name_len) != 0) {
            continue;
        }
        if (s[name_len] != '\0') {
            return fail(err, err_len, RK_EINVAL, "%s takes no value", flag);
        }
        a->kind = ARG_SWITCH;
        a->sw = i;
        return 1;
    }
    return 0;
}

/*
 * s is "--name" or "--name=value": the config file or a setting.  Without
 * '=' the value is argv[*i], the next argument, and *i steps past it.
 */
static int arg_named(const char *s, int argc, char **argv, int *i, struct arg *a, char *err,
                     size_t err_len)
{
    const char *eq = strchr(s, '=');
    size_t name_len = eq != NULL ? (size_t)(eq - s) : strlen(s);
    char name[SETTINGS_NAME_BUF];
    char shown[ECHO_BUF];

    if (strncmp(s, "--", 2) != 0 || name_len - 2 >= sizeof(name)) {
        return fail(err, err_len, RK_EINVAL, "unknown setting %s", echo(shown, s, name_len));
    }
    memcpy(name, s + 2, name_len - 2);
    name[name_len - 2] = '\0';
    a->kind = strcmp(name, "config") == 0 ? ARG_CONFIG : ARG_SETTING;
    a->def = settings_find(name);
    if (a->kind == ARG_SETTING && a->def == NULL) {
        return fail(err, err_len, RK_EINVAL, "unknown setting %s", echo(shown, s, name_len));
    }
    if (eq != NULL) {
        a->value = eq + 1;
    } else if (*i < argc) {
        a->value = argv[(*i)++];
    } else {
        return fail(err, err_len, RK_EINVAL, "%s needs a value", echo(shown, s, name_len));
    }
    return 0;
}

/* Classify argv[*i] and step *i past it and its value. */
static int arg_next(int argc, char **argv, int *i, struct arg *a, char *err, size_t err_len)
{
    const char *s = argv[*i];
    char shown[ECHO_BUF];
    int rc;

    memset(a, 0, sizeof(*a));
    (*i)++;
    if (s[0] != '-') {
        if (*i != 2) {
            return fail(err, err_len, RK_EINVAL, "unexpected argument '%s'",
                        echo(shown, s, strlen(s)));
        }
        a->kind = ARG_CONFIG;
        a->value = s;
        return 0;
    }
    rc = arg_switch(s, strcspn(s, "="), a, err, err_len);
    if (rc != 0) {
        return rc < 0 ? rc : 0;
    }
    return arg_named(s, argc, argv, i, a, err, err_len);
}

/* First pass: every argument is known, and cli gets the switches and the config file. */
static int args_scan(int argc, char **argv, struct settings_cli *cli, char *err, size_t err_len)
{
    char shown[ECHO_BUF], shown2[ECHO_BUF];
    struct arg a;

    for (int i = 1; i < argc;) {
        int rc = arg_next(argc, argv, &i, &a, err, err_len);
        if (rc != 0) {
            return rc;
        }
        if (a.kind == ARG_SWITCH) {
            *(bool *)((char *)cli + settings_switches[a.sw].offset) = true;
        } else if (a.kind == ARG_CONFIG && cli->settings_file != NULL) {
            return fail(err, err_len, RK_EINVAL, "two config files: '%s' and '%s'",
                        echo(shown, cli->settings_file, strlen(cli->settings_file)),
                        echo(shown2, a.value, strlen(a.value)));
        } else if (a.kind == ARG_CONFIG) {
            cli->settings_file = a.value;
        }
    }
    return 0;
}

/* Second pass, after the file: every setting flag, in order; the later of two wins. */
static int args_apply(struct settings *c, int argc, char **argv, char *err, size_t err_len)
{
    char sub[SETTINGS_ERR_MAX];
    struct arg a;

    for (int i = 1; i < argc;) {
        int rc = arg_next(argc, argv, &i, &a, err, err_len);
        if (rc == 0 && a.kind == ARG_SETTING) {
            rc = settings_set(c, a.def->name, a.value, sub, sizeof(sub));
            if (rc != 0) {
                return fail(err, err_len, rc, "--%s", sub);
            }
        }
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

int settings_from_args(struct settings *c, int argc, char **argv, struct settings_cli *cli,
                       char *err, size_t err_len)
{
    int rc;

    settings_init(c);
    memset(cli, 0, sizeof(*cli));
    rc = args_scan(argc, argv, cli, err, err_len);
    if (rc != 0 || cli->help || cli->version) {
        return rc;
    }
    if (cli->settings_file != NULL) {
        rc = settings_load_file(c, cli->settings_file, err, err_len);
        if (rc != 0) {
            return rc;
        }
    }
    return args_apply(c, argc, argv, err, err_len);
}
