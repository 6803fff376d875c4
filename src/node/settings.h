/*
 * settings.h - ringkvd's settings: one table drives the config file, the
 * command-line flags, --test-config and CONFIG GET.
 *
 * Every setting is a line `name value` of the config file ('#' starts a
 * comment line) and the flag `--name value`; flags win over the file,
 * which wins over the defaults.  Durations take units (ms, s, m, h, d; a
 * bare number is in the setting's own unit), sizes take units (B, KB, MB,
 * GB, TB, powers of 1024, any case; a bare number is bytes).  A bad value
 * is refused with one line naming the setting and saying why; settings
 * that must agree (r <= rf, ...) are checked together by settings_check().
 */
#ifndef RINGKV_CONFIG_H
#define RINGKV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"
#include "log.h"
#include "record.h"
#include "ring.h"
#include "store.h"

#define SETTINGS_PATH_MAX 1024
#define SETTINGS_HOST_MAX (ADDR_HOST_MAX + 1)
#define SETTINGS_SEEDS_MAX 64
#define SETTINGS_PASS_MAX 512
/*
 * Room for any setting's text from settings_format(), NUL included.  The
 * longest is a full seeds list: 64 addresses of a 255-byte host, ':' and
 * a 5-digit port, with commas between them.
 */
#define SETTINGS_VALUE_MAX (SETTINGS_SEEDS_MAX * (SETTINGS_HOST_MAX + 7))

/*
 * A "host:port" address (addr.h's rules): host is a name, an IPv4 address
 * or an IPv6 address (kept without its brackets), port 1..65535.
 */
struct settings_addr {
    char host[SETTINGS_HOST_MAX];
    uint16_t port;
    bool set; /* false: the setting is off (metrics) */
};

struct settings {
    char id[RING_NAME_MAX + 1];
    char rack[RING_NAME_MAX + 1];
    uint32_t tokens;
    struct settings_addr listen;  /* peer port */
    struct settings_addr client;  /* RESP port */
    struct settings_addr metrics; /* GET /metrics; off by default */
    char data[SETTINGS_PATH_MAX];
    struct settings_addr seeds[SETTINGS_SEEDS_MAX];
    size_t n_seeds;
    char cluster_key[SETTINGS_PATH_MAX];
    uint8_t ring_seed[RING_SEED_LEN];
    uint32_t rf, r, w;
    bool sloppy; /* sloppy quorum: fallbacks stand in for down replicas (preflist.h) */
    enum store_sync sync;
    uint64_t sync_interval_ms;
    uint64_t gossip_interval_ms;
    uint64_t handoff_rate;        /* bytes per second */
    uint32_t handoff_concurrency; /* arcs streamed at once */
    bool force_ring_change;       /* start even with tokens or rack changed (gossip.h) */
    enum log_level log_level;
    enum record_conflicts conflicts;
    uint32_t max_siblings;
    uint64_t tombstone_grace_ms;
    uint64_t key_max;
    uint64_t value_max;
    uint64_t multibulk_max;
    uint64_t query_buffer_max;
    uint64_t output_buffer_max;
    uint64_t pipeline_max;
    uint64_t kv_shuffle_seed; /* tests only: non-zero completes data operations shuffled (kv.h) */
    uint64_t maxclients;
    uint64_t timeout_ms; /* client idle timeout, 0: none */
    uint64_t frame_max;
    uint64_t peer_maxconn;
    uint64_t peer_handshake_max;      /* inbound peers not yet through the handshake */
    uint64_t peer_handshake_per_addr; /* of those, from one IP address */
    uint64_t handshake_timeout_ms;
    uint64_t metrics_maxconn;    /* connections to the metrics port */
    uint64_t peer_queue_max;     /* bytes waiting to be written to one peer */
    uint64_t peer_bulk_window;   /* the bulk credit we grant each peer (lanes.h) */
    uint64_t request_timeout_ms; /* a peer request's answer, or it fails */
    uint64_t map_size_max;
    char requirepass[SETTINGS_PASS_MAX]; /* empty: no AUTH needed */
    bool admin_any; /* RINGKV admin verbs from any address, not loopback only */
};

enum settings_kind {
    SETTINGS_NAME,     /* node id or rack: PLACEMENT.md section 2 */
    SETTINGS_UINT,     /* an integer */
    SETTINGS_DURATION, /* stored in ms */
    SETTINGS_SIZE,     /* stored in bytes */
    SETTINGS_ENUM,     /* one of `choices`, stored as its index (int-sized enum) */
    SETTINGS_ADDR,     /* struct settings_addr; "" turns it off where allowed */
    SETTINGS_ADDRS,    /* comma-separated list of addresses (seeds) */
    SETTINGS_PATH,     /* a file or directory name */
    SETTINGS_HEX16,    /* 16 bytes as 32 hex digits (ring-seed) */
    SETTINGS_SECRET,   /* a string never shown by CONFIG GET or --test-config */
};

struct settings_def {
    const char *name;
    enum settings_kind kind;
    size_t offset;              /* into struct settings */
    size_t width;               /* bytes of the field: 4 or 8 for integers, buffer size for text */
    const char *def;            /* default, as text */
    uint64_t min, max;          /* bounds of UINT, DURATION (ms), SIZE (bytes) */
    const char *unit;           /* of a bare number: "ms", "s", "bytes", "" */
    const char *const *choices; /* ENUM: NULL-terminated */
    bool runtime;               /* may change while running (CONFIG SET, SIGHUP: reload.h) */
    bool optional;              /* ADDR, NAME, PATH: may be "" (off, or unset for settings_check) */
    const char *doc;            /* one line for --help and the README */
};

extern const struct settings_def settings_defs[];
extern const size_t settings_defs_count;

const struct settings_def *settings_find(const char *name);

/* Every setting at its default. */
void settings_init(struct settings *c);

/* a as "host:port" (how members, seeds and IDENTs name addresses), cut at cap. */
void settings_addr_text(const struct settings_addr *a, char *out, size_t cap);

/*
 * Set one setting from text.  RK_ENOTFOUND for an unknown name, RK_EINVAL
 * for a bad value; err gets one line: "rf: '0' is out of range 1 to 16".
 */
int settings_set(struct settings *c, const char *name, const char *value, char *err,
                 size_t err_len);

/*
 * Apply a config file's text: `name value` lines, '#' comments, blank
 * lines; the value is the rest of the line, trimmed.  Errors name origin
 * and line: "ringkv.conf:12: tokens: 'many' is not a number".  The text is
 * untrusted: lines are bounded, nothing is allocated from it.
 */
int settings_parse_text(struct settings *c, const char *text, size_t len, const char *origin,
                        char *err, size_t err_len);
int settings_load_file(struct settings *c, const char *path, char *err, size_t err_len);

/*
 * Does setting d hold the same value in a and b?  Byte for byte, which the
 * setters make exact (settings.c: every write clears the whole field); the
 * seeds list compares its count too.
 */
bool settings_same(const struct settings *a, const struct settings *b,
                   const struct settings_def *d);

/* Copy setting d's value from src to dst (the seeds list with its count). */
void settings_copy(struct settings *dst, const struct settings *src, const struct settings_def *d);

/*
 * The values d takes, as text for people: "1 to 16", "10ms to 1m",
 * "always, batch or none", "host:port", ...  For --help-man and the docs.
 */
int settings_describe(const struct settings_def *d, char *buf, size_t cap);

/* Cross-setting consistency; one line in err naming the settings. */
/* A read or write quorum as set (r, w) in force: 0 stands for a majority of rf. */
uint32_t settings_quorum(uint32_t q, uint32_t rf);

int settings_check(const struct settings *c, char *err, size_t err_len);

/* A setting's current value as text (secrets as "(hidden)" or ""). */
int settings_format(const struct settings *c, const struct settings_def *d, char *buf, size_t cap);

/*
 * CONFIG GET speaks Redis's names in Redis's units, which clients and
 * tools read (redis-benchmark, redis-py's config_get()): timeout in
 * seconds, save "", appendonly yes, appendfsync always/everysec/no from
 * sync, maxmemory 0 and maxmemory-policy noeviction (no memory limit, no
 * eviction), databases 1.  settings_redis_name(i), i < settings_redis_count,
 * lists those names; timeout is also a setting of the table, whose own
 * text ("5m") the config file, --test-config and SIGHUP keep.
 */
extern const size_t settings_redis_count;
const char *settings_redis_name(size_t i);

/*
 * CONFIG GET's value of name (case-insensitive): Redis's form for a name
 * of the list above, else the setting's settings_format() text.
 * RK_ENOTFOUND when name is neither; RK_ETOOBIG when buf is too small.
 */
int settings_config_get(const struct settings *c, const char *name, char *buf, size_t cap);

/*
 * Descriptors beyond the connections that the node itself keeps open: the
 * store's files, the event loop's, the listeners, stdio, a dial or two.
 * 32: Redis's CONFIG_MIN_RESERVED_FDS, for the same list.
 */
#define SETTINGS_FD_RESERVE 32

/*
 * File descriptors the settings can make the node hold at once: every
 * client, every peer, every metrics connection (when that port is on) and
 * SETTINGS_FD_RESERVE.  *largest names the connection setting that
 * contributes most, the one to lower when the limit is too small.
 */
uint64_t settings_fd_need(const struct settings *c, const char **largest);

/* Print every setting as a config file line, in table order. */
void settings_print(const struct settings *c, FILE *out);

/* What the command line asked for besides settings. */
struct settings_cli {
    const char *settings_file; /* --config FILE, or a lone first argument */
    bool test_config;          /* --test-config */
    bool help;                 /* --help */
    bool version;              /* --version */
};

/*
 * Build the configuration from the command line: defaults, then the config
 * file, then every --name value flag.  Errors as settings_set(), naming the
 * flag; RK_EINVAL for an unknown flag or a missing value.
 */
int settings_from_args(struct settings *c, int argc, char **argv, struct settings_cli *cli,
                       char *err, size_t err_len);

#endif
