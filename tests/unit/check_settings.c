/*
 * check_settings.c - unit tests of the settings table (src/node/settings.c): every
 * default, every kind's parsing and error messages, the config file, the
 * command line, the consistency rules, and the round trip of
 * settings_print() through settings_parse_text().
 *
 * Files go to a fresh directory under $TMPDIR (or /tmp), removed after
 * each test.
 */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "settings.h"
#include "error.h"
#include "frame.h"

#define MIB (1024ull * 1024)
#define GIB (1024 * MIB)

static struct settings c;
static char err[1024];
static char tmpdir[PATH_MAX];

static void setup(void)
{
    settings_init(&c);
    err[0] = '\0';
    tmpdir[0] = '\0';
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];

    if (tmpdir[0] != '\0') {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
    }
}

static void set_ok(const char *name, const char *v)
{
    int rc = settings_set(&c, name, v, err, sizeof(err));
    ck_assert_msg(rc == 0, "%s '%s': %s", name, v, err);
}

/* A refused value: RK_EINVAL, c unchanged, and (when want is not NULL) exactly that message. */
static void set_bad(const char *name, const char *v, const char *want)
{
    struct settings before = c;
    int rc = settings_set(&c, name, v, err, sizeof(err));

    ck_assert_msg(rc == RK_EINVAL, "%s '%s' was accepted", name, v);
    ck_assert_msg(memcmp(&before, &c, sizeof(c)) == 0, "%s '%s' changed the config", name, v);
    ck_assert_msg(strchr(err, '\n') == NULL, "message of more than one line: %s", err);
    if (want != NULL) {
        ck_assert_str_eq(err, want);
    }
}

static const char *fmt(const char *name)
{
    static char buf[SETTINGS_VALUE_MAX];
    const struct settings_def *d = settings_find(name);

    ck_assert_msg(d != NULL, "no setting %s", name);
    ck_assert_int_eq(settings_format(&c, d, buf, sizeof(buf)), 0);
    return buf;
}

static int parse(const char *text)
{
    return settings_parse_text(&c, text, strlen(text), "t.conf", err, sizeof(err));
}

/* The whole of settings_print(c) as a malloc'd string. */
static char *print_to_string(const struct settings *cfg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    settings_print(cfg, f);
    ck_assert_int_eq(fclose(f), 0);
    return buf;
}

static const char *make_tmpdir(void)
{
    const char *base = getenv("TMPDIR");

    snprintf(tmpdir, sizeof(tmpdir), "%s/check_config.XXXXXX", base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    return tmpdir;
}

/* Write text[0..len) to NAME in the test's directory; returns the path (static). */
static const char *write_bytes(const char *name, const char *text, size_t len)
{
    static char path[PATH_MAX + 64];
    FILE *f;

    if (tmpdir[0] == '\0') {
        make_tmpdir();
    }
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

static const char *write_file(const char *name, const char *text)
{
    return write_bytes(name, text, strlen(text));
}

/* ---- defaults ------------------------------------------------------------ */

/* Every setting but id, in table order, as settings_format() shows its default. */
static const struct {
    const char *name;
    const char *text;
} default_texts[] = {
    {"rack", "rack1"},
    {"tokens", "256"},
    {"listen", "127.0.0.1:7371"},
    {"client", "127.0.0.1:7370"},
    {"metrics", ""},
    {"metrics-maxconn", "16"},
    {"data", "./ringkv-data"},
    {"seeds", ""},
    {"cluster-key", ""},
    {"ring-seed", "000102030405060708090a0b0c0d0e0f"},
    {"rf", "3"},
    {"r", "0"},
    {"w", "0"},
    {"sloppy", "yes"},
    {"sync", "always"},
    {"sync-interval", "10ms"},
    {"gossip-interval", "200ms"},
    {"handoff-rate", "10MB"},
    {"handoff-concurrency", "4"},
    {"force-ring-change", "no"},
    {"log-level", "info"},
    {"conflicts", "siblings"},
    {"max-siblings", "100"},
    {"tombstone-grace", "10d"},
    {"key-max", "503B"},
    {"value-max", "16MB"},
    {"multibulk-max", "1048576"},
    {"query-buffer-max", "64MB"},
    {"output-buffer-max", "256MB"},
    {"pipeline-max", "1024"},
    {"kv-shuffle-seed", "0"},
    {"maxclients", "10000"},
    {"timeout", "0"},
    {"frame-max", "17MB"},
    {"peer-maxconn", "1024"},
    {"peer-handshake-max", "64"},
    {"peer-handshake-per-addr", "8"},
    {"handshake-timeout", "5s"},
    {"peer-queue-max", "64MB"},
    {"peer-bulk-window", "1MB"},
    {"request-timeout", "5s"},
    {"map-size-max", "64GB"},
    {"requirepass", ""},
    {"admin-from", "loopback"},
};
#define N_DEFAULT_TEXTS (sizeof(default_texts) / sizeof(default_texts[0]))

START_TEST(test_default_texts)
{
    ck_assert_uint_eq(settings_defs_count, N_DEFAULT_TEXTS + 1);
    ck_assert_str_eq(settings_defs[0].name, "id");
    for (size_t i = 0; i < N_DEFAULT_TEXTS; i++) {
        ck_assert_str_eq(settings_defs[i + 1].name, default_texts[i].name);
        ck_assert_str_eq(fmt(default_texts[i].name), default_texts[i].text);
    }
}
END_TEST

START_TEST(test_default_fields)
{
    ck_assert_str_eq(c.rack, "rack1");
    ck_assert_uint_eq(c.tokens, 256);
    ck_assert(c.listen.set && c.listen.port == 7371 && strcmp(c.listen.host, "127.0.0.1") == 0);
    ck_assert(c.client.set && c.client.port == 7370 && strcmp(c.client.host, "127.0.0.1") == 0);
    ck_assert(!c.metrics.set);
    ck_assert_str_eq(c.data, "./ringkv-data");
    ck_assert_uint_eq(c.n_seeds, 0);
    ck_assert_str_eq(c.cluster_key, "");
    ck_assert_mem_eq(c.ring_seed, ring_default_seed, RING_SEED_LEN);
    /* r and w 0: a majority of rf, 2 of the default 3 */
    ck_assert(c.rf == 3 && c.r == 0 && c.w == 0);
    ck_assert_uint_eq(settings_quorum(c.r, c.rf), 2);
    ck_assert_uint_eq(settings_quorum(c.w, c.rf), 2);
    ck_assert_uint_eq(settings_quorum(0, 1), 1);
    ck_assert_uint_eq(settings_quorum(0, 4), 3);
    ck_assert_uint_eq(settings_quorum(3, 4), 3);
    ck_assert_int_eq(c.sync, STORE_SYNC_ALWAYS);
    ck_assert_uint_eq(c.sync_interval_ms, 10);
    ck_assert_uint_eq(c.gossip_interval_ms, 200);
    ck_assert_uint_eq(c.handoff_rate, 10 * MIB);
    ck_assert_int_eq(c.log_level, LOG_INFO);
    ck_assert_int_eq(c.conflicts, RECORD_SIBLINGS);
    ck_assert_uint_eq(c.max_siblings, 100);
    ck_assert_uint_eq(c.tombstone_grace_ms, 10ull * 86400 * 1000);
    ck_assert_uint_eq(c.key_max, STORE_KEY_MAX);
    ck_assert_uint_eq(c.value_max, 16 * MIB);
    ck_assert_uint_eq(c.multibulk_max, 1048576);
    ck_assert_uint_eq(c.query_buffer_max, 64 * MIB);
    ck_assert_uint_eq(c.output_buffer_max, 256 * MIB);
    ck_assert_uint_eq(c.pipeline_max, 1024);
    ck_assert_uint_eq(c.maxclients, 10000);
    ck_assert_uint_eq(c.timeout_ms, 0);
    ck_assert_uint_eq(c.frame_max, FRAME_MAX_DEFAULT);
    ck_assert_uint_eq(c.peer_maxconn, 1024);
    ck_assert_uint_eq(c.handshake_timeout_ms, 5000);
    ck_assert_uint_eq(c.request_timeout_ms, 5000);
    ck_assert_uint_eq(c.map_size_max, 64 * GIB);
    ck_assert_str_eq(c.requirepass, "");
    ck_assert(!c.admin_any);
}
END_TEST

START_TEST(test_default_id_is_host_name)
{
    char host[HOST_NAME_MAX + 1] = "";

    ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
    host[sizeof(host) - 1] = '\0';
    if (ring_name_valid(host, strlen(host))) {
        ck_assert_str_eq(c.id, host);
    } else {
        ck_assert_str_eq(c.id, "");
    }
}
END_TEST

START_TEST(test_table)
{
    static const char *const runtime[] = {"log-level", "maxclients", "timeout", "requirepass"};

    for (size_t i = 0; i < settings_defs_count; i++) {
        const struct settings_def *d = &settings_defs[i];
        ck_assert_ptr_eq(settings_find(d->name), d);
        ck_assert_msg(d->doc != NULL && d->doc[0] != '\0', "%s has no doc", d->name);
        ck_assert_msg(d->def != NULL && d->unit != NULL, "%s lacks def or unit", d->name);
        ck_assert_msg(d->min <= d->max, "%s: min above max", d->name);
        ck_assert_msg(d->kind != SETTINGS_UINT || d->width == 8 || d->max <= UINT32_MAX,
                      "%s: max does not fit its field", d->name);
        ck_assert_msg(d->kind != SETTINGS_ENUM || d->choices != NULL, "%s has no choices", d->name);
        bool want_runtime = false;
        for (size_t j = 0; j < sizeof(runtime) / sizeof(runtime[0]); j++) {
            want_runtime = want_runtime || strcmp(d->name, runtime[j]) == 0;
        }
        ck_assert_msg(d->runtime == want_runtime, "%s: runtime is %d", d->name, d->runtime);
    }
    ck_assert_ptr_null(settings_find("nope"));
    ck_assert_ptr_null(settings_find(""));
}
END_TEST

/* ---- each kind ----------------------------------------------------------- */

START_TEST(test_uint)
{
    set_ok("tokens", "1");
    ck_assert_uint_eq(c.tokens, 1);
    set_ok("tokens", "4096");
    ck_assert_uint_eq(c.tokens, 4096);
    set_ok("tokens", "007");
    ck_assert_uint_eq(c.tokens, 7);
    ck_assert_str_eq(fmt("tokens"), "7");
    set_bad("tokens", "0", "tokens: '0' is out of range 1 to 4096");
    set_bad("tokens", "4097", "tokens: '4097' is out of range 1 to 4096");
    set_bad("tokens", "many", "tokens: 'many' is not a number");
    set_bad("tokens", "", "tokens: '' is not a number");
    set_bad("tokens", "-1", "tokens: '-1' is not a number");
    set_bad("tokens", "+1", "tokens: '+1' is not a number");
    set_bad("tokens", "1.0", "tokens: '1.0' is not a number");
    set_bad("tokens", " 1", "tokens: ' 1' is not a number");
    set_bad("tokens", "0x10", "tokens: '0x10' is not a number");
    set_bad("tokens", "1k", "tokens: '1k' is not a number");
    set_bad("tokens", "18446744073709551616",
            "tokens: '18446744073709551616' is out of range 1 to 4096");
    set_bad("tokens", "99999999999999999999x", "tokens: '99999999999999999999x' is not a number");
    set_ok("maxclients", "1000000");
    ck_assert_uint_eq(c.maxclients, 1000000);
    set_bad("maxclients", "1000001", "maxclients: '1000001' is out of range 1 to 1000000");
    set_bad("peer-maxconn", "65536", "peer-maxconn: '65536' is out of range 1 to 65535");
    set_bad("multibulk-max", "1048577", "multibulk-max: '1048577' is out of range 1 to 1048576");
}
END_TEST

START_TEST(test_duration)
{
    set_ok("gossip-interval", "200ms");
    ck_assert_uint_eq(c.gossip_interval_ms, 200);
    set_ok("gossip-interval", "2s");
    ck_assert_uint_eq(c.gossip_interval_ms, 2000);
    set_ok("gossip-interval", "1m");
    ck_assert_uint_eq(c.gossip_interval_ms, 60000);
    set_ok("gossip-interval", "250");
    ck_assert_uint_eq(c.gossip_interval_ms, 250); /* a bare number is in ms here */
    set_ok("timeout", "30");
    ck_assert_uint_eq(c.timeout_ms, 30000); /* and in seconds here */
    set_ok("timeout", "0");
    ck_assert_uint_eq(c.timeout_ms, 0);
    ck_assert_str_eq(fmt("timeout"), "0");
    set_ok("timeout", "2h");
    ck_assert_uint_eq(c.timeout_ms, 2 * 3600 * 1000);
    set_ok("tombstone-grace", "3600");
    ck_assert_uint_eq(c.tombstone_grace_ms, 3600 * 1000);
    ck_assert_str_eq(fmt("tombstone-grace"), "1h");
    set_ok("tombstone-grace", "365d");
    set_ok("handshake-timeout", "1500ms");
    ck_assert_str_eq(fmt("handshake-timeout"), "1500ms");
    set_ok("handshake-timeout", "45s");
    ck_assert_str_eq(fmt("handshake-timeout"), "45s");
    set_ok("timeout", "120s");
    ck_assert_str_eq(fmt("timeout"), "2m");
    set_ok("timeout", "90s");
    ck_assert_str_eq(fmt("timeout"), "90s");
}
END_TEST

START_TEST(test_duration_errors)
{
    const char *noun = "is not a duration (a number and ms, s, m, h or d)";
    const char *bad[] = {"1.5s", "1 s", "1S", "s", "ms", "-1s", "1sec", "1w", "", "1m1s"};
    char want[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(want, sizeof(want), "gossip-interval: '%s' %s", bad[i], noun);
        set_bad("gossip-interval", bad[i], want);
    }
    set_bad("gossip-interval", "10d", "gossip-interval: '10d' is out of range 10ms to 1m");
    set_bad("gossip-interval", "9ms", "gossip-interval: '9ms' is out of range 10ms to 1m");
    set_bad("sync-interval", "0", "sync-interval: '0' is out of range 1ms to 10s");
    set_bad("tombstone-grace", "500ms", "tombstone-grace: '500ms' is out of range 1s to 365d");
    set_bad("tombstone-grace", "366d", "tombstone-grace: '366d' is out of range 1s to 365d");
    set_bad("timeout", "99999999999999999999d", NULL);
    ck_assert(strstr(err, "is out of range 0 to 2147483647s") != NULL);
    set_bad("timeout", "9999999999999999d", NULL); /* the digits fit, the product does not */
    ck_assert(strstr(err, "is out of range") != NULL);
}
END_TEST

START_TEST(test_size)
{
    static const struct {
        const char *text;
        unsigned long long bytes;
    } ok[] = {
        {"64KB", 65536},    {"64kb", 65536},  {"64K", 65536},    {"64k", 65536},
        {"1M", MIB},        {"1mb", MIB},     {"1G", GIB},       {"1gB", GIB},
        {"10GB", 10 * GIB}, {"1048576", MIB}, {"65536B", 65536},
    };

    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        set_ok("handoff-rate", ok[i].text);
        ck_assert_uint_eq(c.handoff_rate, ok[i].bytes);
    }
    ck_assert_str_eq(fmt("handoff-rate"), "64KB");
    set_ok("handoff-rate", "1048576");
    ck_assert_str_eq(fmt("handoff-rate"), "1MB");
    set_ok("map-size-max", "1PB");
    ck_assert_uint_eq(c.map_size_max, 1024 * 1024 * GIB);
    set_ok("map-size-max", "2tb");
    ck_assert_str_eq(fmt("map-size-max"), "2TB");
    set_ok("value-max", "0");
    ck_assert_uint_eq(c.value_max, 0);
    set_ok("key-max", "1B");
    ck_assert_str_eq(fmt("key-max"), "1B");
    set_ok("output-buffer-max", "4GB");
}
END_TEST

START_TEST(test_size_errors)
{
    const char *noun = "is not a size (a number and B, KB, MB, GB, TB or PB)";
    const char *bad[] = {"16 MB", "1.5MB", "1KiB", "1T", "MB", "-1", "", "1MBB", "1EB"};
    char want[256];

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(want, sizeof(want), "value-max: '%s' %s", bad[i], noun);
        set_bad("value-max", bad[i], want);
    }
    set_bad("handoff-rate", "11GB", "handoff-rate: '11GB' is out of range 64KB to 10GB");
    set_bad("handoff-rate", "65535", "handoff-rate: '65535' is out of range 64KB to 10GB");
    set_bad("key-max", "504", "key-max: '504' is out of range 1B to 503B");
    set_bad("key-max", "0", "key-max: '0' is out of range 1B to 503B");
    set_bad("value-max", "513MB", "value-max: '513MB' is out of range 0 to 512MB");
    set_bad("map-size-max", "2PB", "map-size-max: '2PB' is out of range 16MB to 1PB");
    set_bad("map-size-max", "16777216TB", "map-size-max: '16777216TB' is out of range 16MB to 1PB");
    set_bad("frame-max", "1TB", "frame-max: '1TB' is out of range 64KB to 1GB");
}
END_TEST

START_TEST(test_enum)
{
    set_ok("sync", "batch");
    ck_assert_int_eq(c.sync, STORE_SYNC_BATCH);
    set_ok("sync", "NONE");
    ck_assert_int_eq(c.sync, STORE_SYNC_NONE);
    ck_assert_str_eq(fmt("sync"), "none");
    set_ok("sync", "always");
    ck_assert_int_eq(c.sync, STORE_SYNC_ALWAYS);
    set_ok("log-level", "debug");
    ck_assert_int_eq(c.log_level, LOG_DEBUG);
    set_ok("log-level", "error");
    ck_assert_int_eq(c.log_level, LOG_ERROR);
    set_ok("conflicts", "lww");
    ck_assert_int_eq(c.conflicts, RECORD_LWW);
    set_ok("admin-from", "any");
    ck_assert(c.admin_any);
    ck_assert_str_eq(fmt("admin-from"), "any");
    set_ok("admin-from", "loopback");
    ck_assert(!c.admin_any);
    set_bad("sync", "sometimes", "sync: 'sometimes' is not one of always, batch, none");
    set_bad("log-level", "", "log-level: '' is not one of debug, info, warn, error");
    set_bad("conflicts", "lww ", "conflicts: 'lww ' is not one of siblings, lww");
    set_bad("admin-from", "all", "admin-from: 'all' is not one of loopback, any");
}
END_TEST

START_TEST(test_name)
{
    char long_name[RING_NAME_MAX + 2];

    set_ok("id", "node-1.example:a_b");
    ck_assert_str_eq(c.id, "node-1.example:a_b");
    set_ok("id", "n");
    ck_assert_str_eq(c.id, "n");
    ck_assert_str_eq(fmt("id"), "n");
    set_ok("id", "");
    ck_assert_str_eq(c.id, "");
    set_bad("id", "a b", "id: 'a b' is not a valid name (1 to 64 of [A-Za-z0-9._:-])");
    set_bad("rack", "", "rack: '' is not a valid name (1 to 64 of [A-Za-z0-9._:-])");
    set_bad("rack", "r#1", NULL);
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[RING_NAME_MAX] = '\0';
    set_ok("rack", long_name);
    long_name[RING_NAME_MAX] = 'a';
    long_name[RING_NAME_MAX + 1] = '\0';
    set_bad("rack", long_name, NULL);
}
END_TEST

START_TEST(test_addr)
{
    char host[SETTINGS_HOST_MAX + 8];

    set_ok("client", "10.0.0.1:6379");
    ck_assert(c.client.set && c.client.port == 6379 && strcmp(c.client.host, "10.0.0.1") == 0);
    set_ok("client", "db-1.example.com:65535");
    ck_assert_str_eq(fmt("client"), "db-1.example.com:65535");
    set_ok("listen", "localhost:1");
    set_bad("client", "127.0.0.1", "client: '127.0.0.1' is not host:port (the port is missing)");
    set_bad("client", "", "client: '' is not host:port (the host is empty)");
    set_bad("client", ":7370", "client: ':7370' is not host:port (the host is empty)");
    set_bad("client", "a b:1",
            "client: 'a b:1' is not host:port (the host has a character other than A-Z a-z "
            "0-9 . - _)");
    set_bad("client", "::1:80",
            "client: '::1:80' is not host:port (an IPv6 host goes in brackets, as [::1]:7371)");
    set_ok("client", "[0::1]:80");
    ck_assert(strcmp(c.client.host, "::1") == 0 && c.client.port == 80);
    ck_assert_str_eq(fmt("client"), "[::1]:80");
    set_bad("client", "127.0.0.1:07370",
            "client: '127.0.0.1:07370' is not host:port (the port is not 1 to 65535)");
    set_bad("client",
            "127.0.0.1:", "client: '127.0.0.1:' is not host:port (the port is not 1 to 65535)");
    set_bad("client", "127.0.0.1:0", NULL);
    set_bad("client", "127.0.0.1:65536", NULL);
    set_bad("client", "127.0.0.1:http", NULL);
    set_bad("client", "999.0.0.1:1",
            "client: '999.0.0.1:1' is not host:port (the host is not an IPv4 address)");
    memset(host, 'h', SETTINGS_HOST_MAX - 1);
    strcpy(host + SETTINGS_HOST_MAX - 1, ":1");
    set_ok("client", host);
    memset(host, 'h', SETTINGS_HOST_MAX);
    strcpy(host + SETTINGS_HOST_MAX, ":1");
    set_bad("client", host, NULL);
}
END_TEST

START_TEST(test_addr_optional)
{
    set_ok("metrics", "127.0.0.1:9100");
    ck_assert(c.metrics.set && c.metrics.port == 9100);
    set_ok("metrics", "");
    ck_assert(!c.metrics.set);
    ck_assert_str_eq(fmt("metrics"), "");
    set_bad("metrics", "9100", "metrics: '9100' is not host:port (the port is missing)");
}
END_TEST

START_TEST(test_seeds)
{
    char list[70 * 16];
    size_t used = 0;

    set_ok("seeds", "a:1,b.example:2");
    ck_assert_uint_eq(c.n_seeds, 2);
    ck_assert(strcmp(c.seeds[1].host, "b.example") == 0 && c.seeds[1].port == 2);
    set_ok("seeds", " 10.0.0.1:7371 ,\t10.0.0.2:7371 ");
    ck_assert_uint_eq(c.n_seeds, 2);
    ck_assert_str_eq(fmt("seeds"), "10.0.0.1:7371,10.0.0.2:7371");
    set_bad("seeds", "a:1,", "seeds: '' is not host:port (the host is empty)");
    set_bad("seeds", "a:1,b", "seeds: 'b' is not host:port (the port is missing)");
    set_bad("seeds", "a:1,,b:2", "seeds: '' is not host:port (the host is empty)");
    ck_assert_uint_eq(c.n_seeds, 2);
    for (int i = 0; i < SETTINGS_SEEDS_MAX; i++) {
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%sn%d:%d", i ? "," : "", i,
                                 7000 + i);
    }
    set_ok("seeds", list);
    ck_assert_uint_eq(c.n_seeds, SETTINGS_SEEDS_MAX);
    ck_assert_str_eq(fmt("seeds"), list);
    snprintf(list + used, sizeof(list) - used, ",extra:1");
    set_bad("seeds", list, "seeds: more than 64 addresses");
    set_ok("seeds", "");
    ck_assert_uint_eq(c.n_seeds, 0);
    ck_assert_str_eq(fmt("seeds"), "");
}
END_TEST

START_TEST(test_path)
{
    char path[SETTINGS_PATH_MAX + 1];

    set_ok("data", "/var/lib/ringkv #1");
    ck_assert_str_eq(c.data, "/var/lib/ringkv #1");
    set_ok("cluster-key", "");
    set_ok("cluster-key", "/etc/ringkv/cluster.key");
    ck_assert_str_eq(fmt("cluster-key"), "/etc/ringkv/cluster.key");
    set_bad("data", "", "data: '' is not a path");
    set_bad("data", "a\nb", "data: the value holds a control character");
    set_bad("data", " /x", "data: the value begins or ends with a blank");
    set_bad("data", "/x ", "data: the value begins or ends with a blank");
    memset(path, 'p', SETTINGS_PATH_MAX - 1);
    path[SETTINGS_PATH_MAX - 1] = '\0';
    set_ok("data", path);
    path[SETTINGS_PATH_MAX - 1] = 'p';
    path[SETTINGS_PATH_MAX] = '\0';
    set_bad("data", path, "data: the value is longer than 1023 bytes");
}
END_TEST

START_TEST(test_ring_seed)
{
    static const uint8_t want[RING_SEED_LEN] = {0xde, 0xad, 0xbe, 0xef, 0, 1, 2,  3,
                                                4,    5,    6,    7,    8, 9, 10, 0xff};

    set_ok("ring-seed", "DEADBEEF000102030405060708090aFF");
    ck_assert_mem_eq(c.ring_seed, want, RING_SEED_LEN);
    ck_assert_str_eq(fmt("ring-seed"), "deadbeef000102030405060708090aff");
    set_bad("ring-seed", "abc", "ring-seed: 'abc' is not 32 hex digits");
    set_bad("ring-seed", "000102030405060708090a0b0c0d0e0", NULL);
    set_bad("ring-seed", "000102030405060708090a0b0c0d0e0f0", NULL);
    set_bad("ring-seed", "zz0102030405060708090a0b0c0d0e0f", NULL);
    ck_assert_mem_eq(c.ring_seed, want, RING_SEED_LEN);
}
END_TEST

START_TEST(test_secret)
{
    char long_pass[SETTINGS_PASS_MAX + 1];

    ck_assert_str_eq(fmt("requirepass"), "");
    set_ok("requirepass", "a much longer password");
    set_ok("requirepass", "s3cret");
    ck_assert_str_eq(c.requirepass, "s3cret");
    for (size_t i = strlen("s3cret"); i < sizeof(c.requirepass); i++) {
        ck_assert_int_eq(c.requirepass[i], 0);
    }
    ck_assert_str_eq(fmt("requirepass"), "(hidden)");
    set_bad("requirepass", "top\x01secret", "requirepass: the value holds a control character");
    memset(long_pass, 'x', SETTINGS_PASS_MAX);
    long_pass[SETTINGS_PASS_MAX] = '\0';
    set_bad("requirepass", long_pass, "requirepass: the value is longer than 511 bytes");
    set_bad("requirepass", " topsecret", NULL);
    ck_assert(strstr(err, "topsecret") == NULL);
    set_ok("requirepass", "");
    ck_assert_str_eq(fmt("requirepass"), "");
}
END_TEST

/* One bad value for every setting: each is refused and leaves the config as it was. */
START_TEST(test_failure_leaves_config)
{
    static const struct {
        const char *name;
        const char *bad;
    } cases[] = {
        {"id", "a b"},
        {"rack", "a b"},
        {"tokens", "0"},
        {"listen", "x"},
        {"client", "x"},
        {"metrics", "x"},
        {"metrics-maxconn", "0"},
        {"data", ""},
        {"seeds", "a:1,x"},
        {"cluster-key", "\x01"},
        {"ring-seed", "00"},
        {"rf", "17"},
        {"r", "17"},
        {"w", "x"},
        {"sloppy", "maybe"},
        {"sync", "x"},
        {"sync-interval", "11s"},
        {"gossip-interval", "1ms"},
        {"handoff-rate", "1KB"},
        {"handoff-concurrency", "65"},
        {"force-ring-change", "maybe"},
        {"log-level", "trace"},
        {"conflicts", "x"},
        {"max-siblings", "4097"},
        {"tombstone-grace", "0"},
        {"key-max", "1KB"},
        {"value-max", "1GB"},
        {"multibulk-max", "0"},
        {"query-buffer-max", "2GB"},
        {"output-buffer-max", "5GB"},
        {"pipeline-max", "0"},
        {"kv-shuffle-seed", "-1"},
        {"maxclients", "0"},
        {"timeout", "-1"},
        {"frame-max", "1KB"},
        {"peer-maxconn", "0"},
        {"peer-handshake-max", "0"},
        {"peer-handshake-per-addr", "65536"},
        {"handshake-timeout", "1ms"},
        {"peer-queue-max", "1KB"},
        {"peer-bulk-window", "2GB"},
        {"request-timeout", "9ms"},
        {"map-size-max", "1MB"},
        {"requirepass", "\n"},
        {"admin-from", "x"},
    };

    ck_assert_uint_eq(sizeof(cases) / sizeof(cases[0]), settings_defs_count);
    set_ok("seeds", "a:1");
    set_ok("requirepass", "pw");
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_str_eq(cases[i].name, settings_defs[i].name);
        set_bad(cases[i].name, cases[i].bad, NULL);
        ck_assert_msg(strncmp(err, cases[i].name, strlen(cases[i].name)) == 0,
                      "message does not name the setting: %s", err);
    }
}
END_TEST

START_TEST(test_unknown_setting)
{
    ck_assert_int_eq(settings_set(&c, "nope", "1", err, sizeof(err)), RK_ENOTFOUND);
    ck_assert_str_eq(err, "unknown setting 'nope'");
    ck_assert_int_eq(settings_set(&c, "RF", "1", err, sizeof(err)), RK_ENOTFOUND);
}
END_TEST

/* The message shapes every error follows, and one line whatever the value holds. */
START_TEST(test_error_shapes)
{
    char long_value[200];

    set_bad("rf", "0", "rf: '0' is out of range 1 to 16");
    set_bad("sync", "sometimes", "sync: 'sometimes' is not one of always, batch, none");
    set_bad("tokens", "many", "tokens: 'many' is not a number");
    set_bad("client", "127.0.0.1", "client: '127.0.0.1' is not host:port (the port is missing)");
    set_bad("rf",
            "1\n2\x7f"
            "3",
            "rf: '1?2?3' is not a number");
    memset(long_value, '9', sizeof(long_value) - 1);
    long_value[0] = 'x';
    long_value[sizeof(long_value) - 1] = '\0';
    set_bad("rf", long_value, NULL);
    ck_assert(strstr(err, "9...' is not a number") != NULL);
    ck_assert_uint_lt(strlen(err), 100);
    ck_assert_int_eq(settings_set(&c, "rf", "0", err, 8), RK_EINVAL);
    ck_assert_str_eq(err, "rf: '0'");
    ck_assert_int_eq(settings_set(&c, "rf", "0", NULL, 0), RK_EINVAL);
}
END_TEST

START_TEST(test_format_small_buffer)
{
    char buf[4];

    ck_assert_int_eq(settings_format(&c, settings_find("data"), buf, sizeof(buf)), RK_ETOOBIG);
    set_ok("seeds", "a:1,b:2");
    ck_assert_int_eq(settings_format(&c, settings_find("seeds"), buf, sizeof(buf)), RK_ETOOBIG);
    ck_assert_int_eq(settings_format(&c, settings_find("rf"), buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "3");
}
END_TEST

/* ---- the config file ----------------------------------------------------- */

START_TEST(test_file_comments_and_blanks)
{
    const char *text = "# a node\n"
                       "\n"
                       "   \t\n"
                       "  # indented comment\n"
                       "rf 5\n"
                       "\ttokens\t\t16  \n"
                       "data /srv/ringkv #2\n"
                       "seeds  a:1, b:2\n";

    ck_assert_int_eq(parse(text), 0);
    ck_assert_uint_eq(c.rf, 5);
    ck_assert_uint_eq(c.tokens, 16);
    ck_assert_str_eq(c.data, "/srv/ringkv #2");
    ck_assert_uint_eq(c.n_seeds, 2);
}
END_TEST

START_TEST(test_file_crlf)
{
    ck_assert_int_eq(parse("rf 4\r\nsync batch\r\n\r\n# c\r\nrack r2\r\n"), 0);
    ck_assert_uint_eq(c.rf, 4);
    ck_assert_int_eq(c.sync, STORE_SYNC_BATCH);
    ck_assert_str_eq(c.rack, "r2");
}
END_TEST

START_TEST(test_file_last_line_without_newline)
{
    ck_assert_int_eq(parse("rf 4\nw 1"), 0);
    ck_assert_uint_eq(c.w, 1);
    ck_assert_int_eq(parse(""), 0);
}
END_TEST

START_TEST(test_file_empty_value)
{
    ck_assert_int_eq(parse("metrics 127.0.0.1:9100\ncluster-key /k\n"), 0);
    ck_assert(c.metrics.set);
    ck_assert_int_eq(parse("metrics\ncluster-key   \n"), 0);
    ck_assert(!c.metrics.set);
    ck_assert_str_eq(c.cluster_key, "");
    ck_assert_int_eq(parse("rf\n"), RK_EINVAL);
    ck_assert_str_eq(err, "t.conf:1: rf: '' is not a number");
}
END_TEST

START_TEST(test_file_duplicates_last_wins)
{
    ck_assert_int_eq(parse("rf 5\nseeds a:1,b:2\nrf 4\nseeds c:3\n"), 0);
    ck_assert_uint_eq(c.rf, 4);
    ck_assert_uint_eq(c.n_seeds, 1);
    ck_assert_str_eq(c.seeds[0].host, "c");
}
END_TEST

START_TEST(test_file_unknown_setting_names_line)
{
    ck_assert_int_eq(parse("# x\nrf 3\nfoo bar\nrf 4\n"), RK_ENOTFOUND);
    ck_assert_str_eq(err, "t.conf:3: unknown setting 'foo'");
    ck_assert_uint_eq(c.rf, 3);
    ck_assert_int_eq(parse("rf=3\n"), RK_ENOTFOUND);
    ck_assert_str_eq(err, "t.conf:1: unknown setting 'rf=3'");
    ck_assert_int_eq(parse("--rf 3\n"), RK_ENOTFOUND);
}
END_TEST

START_TEST(test_file_bad_value_names_line)
{
    ck_assert_int_eq(parse("rf 3\r\n\r\ntokens many\r\n"), RK_EINVAL);
    ck_assert_str_eq(err, "t.conf:3: tokens: 'many' is not a number");
    ck_assert_int_eq(settings_parse_text(&c, "rf 0", 4, NULL, err, sizeof(err)), RK_EINVAL);
    ck_assert_str_eq(err, "config:1: rf: '0' is out of range 1 to 16");
}
END_TEST

START_TEST(test_file_long_line)
{
    size_t max = 32768;
    char *text = malloc(max + 16);
    char name[200];

    ck_assert_ptr_nonnull(text);
    memset(text, ' ', max + 16);
    memcpy(text, "rf 2\n#", 6);
    text[5 + max] = '\n';
    memcpy(text + 6 + max, "rf 3\n", 5);
    ck_assert_int_eq(settings_parse_text(&c, text, 11 + max, "t.conf", err, sizeof(err)), 0);
    ck_assert_uint_eq(c.rf, 3);
    text[5 + max] = ' ';
    text[6 + max] = '\n';
    ck_assert_int_eq(settings_parse_text(&c, text, 12 + max, "t.conf", err, sizeof(err)),
                     RK_ETOOBIG);
    ck_assert_str_eq(err, "t.conf:2: line is longer than 32768 bytes");
    free(text);
    memset(name, 'n', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    ck_assert_int_eq(parse(name), RK_ENOTFOUND);
    ck_assert(strstr(err, "t.conf:1: unknown setting 'nnnn") == err);
}
END_TEST

START_TEST(test_file_nul_byte)
{
    static const char text[] = "rf 3\nrf 4\0 5\n";

    ck_assert_int_eq(settings_parse_text(&c, text, sizeof(text) - 1, "t.conf", err, sizeof(err)),
                     RK_ESYNTAX);
    ck_assert_str_eq(err, "t.conf:2: line holds a NUL byte");
    ck_assert_uint_eq(c.rf, 3);
}
END_TEST

START_TEST(test_load_file)
{
    const char *text = "id n1\ncluster-key /k\nrf 4\n";
    const char *path = write_file("ringkv.conf", text);
    char want[PATH_MAX + 64];

    ck_assert_int_eq(settings_load_file(&c, path, err, sizeof(err)), 0);
    ck_assert_str_eq(c.id, "n1");
    ck_assert_uint_eq(c.rf, 4);
    path = write_file("bad.conf", "rf 4\nrf 40\n");
    ck_assert_int_eq(settings_load_file(&c, path, err, sizeof(err)), RK_EINVAL);
    snprintf(want, sizeof(want), "%s:2: rf: '40' is out of range 1 to 16", path);
    ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(test_load_file_errors)
{
    char path[PATH_MAX + 64];
    char *big = malloc(1024 * 1024 + 1);

    make_tmpdir();
    snprintf(path, sizeof(path), "%s/missing.conf", tmpdir);
    ck_assert_int_eq(settings_load_file(&c, path, err, sizeof(err)), RK_EIO);
    ck_assert(strstr(err, "missing.conf: cannot open: ") != NULL);
    ck_assert_int_eq(settings_load_file(&c, tmpdir, err, sizeof(err)), RK_EIO);
    ck_assert(strstr(err, ": cannot read: ") != NULL);
    ck_assert_ptr_nonnull(big);
    memset(big, '\n', 1024 * 1024 + 1);
    ck_assert_int_eq(
        settings_load_file(&c, write_bytes("ok.conf", big, 1024 * 1024), err, sizeof(err)), 0);
    ck_assert_int_eq(
        settings_load_file(&c, write_bytes("big.conf", big, 1024 * 1024 + 1), err, sizeof(err)),
        RK_ETOOBIG);
    ck_assert(strstr(err, "big.conf: larger than 1048576 bytes") != NULL);
    free(big);
}
END_TEST

/* ---- the command line ---------------------------------------------------- */

static int from_args(struct settings_cli *cli, char **argv)
{
    int argc = 0;

    while (argv[argc] != NULL) {
        argc++;
    }
    return settings_from_args(&c, argc, argv, cli, err, sizeof(err));
}

START_TEST(test_args_flags_win_over_file)
{
    struct settings_cli cli;
    const char *path = write_file("a.conf", "rf 5\nr 1\nw 1\n");
    char *argv[] = {"ringkvd", "--rf", "4", "--w", "2", "--config", (char *)path, NULL};

    ck_assert_int_eq(from_args(&cli, argv), 0);
    ck_assert_str_eq(cli.settings_file, path);
    ck_assert_uint_eq(c.rf, 4);
    ck_assert_uint_eq(c.r, 1);
    ck_assert_uint_eq(c.w, 2);
}
END_TEST

START_TEST(test_args_lone_first_argument)
{
    struct settings_cli cli;
    const char *path = write_file("b.conf", "tokens 8\n");
    char *argv[] = {"ringkvd", (char *)path, "--rack", "r9", NULL};
    char *second[] = {"ringkvd", "--rack", "r9", (char *)path, NULL};
    char *twice[] = {"ringkvd", (char *)path, "--config", "other.conf", NULL};

    ck_assert_int_eq(from_args(&cli, argv), 0);
    ck_assert_str_eq(cli.settings_file, path);
    ck_assert_uint_eq(c.tokens, 8);
    ck_assert_str_eq(c.rack, "r9");
    ck_assert_int_eq(from_args(&cli, second), RK_EINVAL);
    ck_assert(strncmp(err, "unexpected argument '", 21) == 0);
    ck_assert_int_eq(from_args(&cli, twice), RK_EINVAL);
    ck_assert(strncmp(err, "two config files: ", 18) == 0);
}
END_TEST

START_TEST(test_args_equals_form)
{
    struct settings_cli cli;
    char *argv[] = {"ringkvd",       "--rf=4",         "--seeds=a:1,b:2",
                    "--data=/x=y",   "--requirepass=", "--metrics=h:9",
                    "--requirepass", "-dash",          NULL};

    ck_assert_int_eq(from_args(&cli, argv), 0);
    ck_assert_uint_eq(c.rf, 4);
    ck_assert_uint_eq(c.n_seeds, 2);
    ck_assert_str_eq(c.data, "/x=y");
    ck_assert(c.metrics.set);
    ck_assert_str_eq(c.requirepass, "-dash");
    ck_assert_ptr_null(cli.settings_file);
}
END_TEST

START_TEST(test_args_unknown_flag)
{
    struct settings_cli cli;
    char *foo[] = {"ringkvd", "--foo", "1", NULL};
    char *foo_eq[] = {"ringkvd", "--foo=1", NULL};
    char *dash[] = {"ringkvd", "-x", NULL};
    char *bare[] = {"ringkvd", "--", NULL};

    ck_assert_int_eq(from_args(&cli, foo), RK_EINVAL);
    ck_assert_str_eq(err, "unknown setting --foo");
    ck_assert_int_eq(from_args(&cli, foo_eq), RK_EINVAL);
    ck_assert_str_eq(err, "unknown setting --foo");
    ck_assert_int_eq(from_args(&cli, dash), RK_EINVAL);
    ck_assert_str_eq(err, "unknown setting -x");
    ck_assert_int_eq(from_args(&cli, bare), RK_EINVAL);
    ck_assert_str_eq(err, "unknown setting --");
}
END_TEST

START_TEST(test_args_missing_or_bad_value)
{
    struct settings_cli cli;
    char *missing[] = {"ringkvd", "--rf", NULL};
    char *bad[] = {"ringkvd", "--tokens", "many", NULL};
    char *no_file[] = {"ringkvd", "--config", NULL};

    ck_assert_int_eq(from_args(&cli, missing), RK_EINVAL);
    ck_assert_str_eq(err, "--rf needs a value");
    ck_assert_int_eq(from_args(&cli, no_file), RK_EINVAL);
    ck_assert_str_eq(err, "--config needs a value");
    ck_assert_int_eq(from_args(&cli, bad), RK_EINVAL);
    ck_assert_str_eq(err, "--tokens: 'many' is not a number");
}
END_TEST

START_TEST(test_args_switches)
{
    struct settings_cli cli;
    char *test[] = {"ringkvd", "--test-config", "--rf", "2", NULL};
    char *help[] = {"ringkvd", "/no/such/file.conf", "--help", NULL};
    char *version[] = {"ringkvd", "-v", NULL};
    char *valued[] = {"ringkvd", "--help=yes", NULL};

    ck_assert_int_eq(from_args(&cli, test), 0);
    ck_assert(cli.test_config && !cli.help && !cli.version);
    ck_assert_uint_eq(c.rf, 2);
    ck_assert_int_eq(from_args(&cli, help), 0); /* help reads no file */
    ck_assert(cli.help && !cli.test_config);
    ck_assert_int_eq(from_args(&cli, version), 0);
    ck_assert(cli.version);
    ck_assert_int_eq(from_args(&cli, valued), RK_EINVAL);
    ck_assert_str_eq(err, "--help takes no value");
}
END_TEST

START_TEST(test_args_file_errors)
{
    struct settings_cli cli;
    const char *path = write_file("c.conf", "rf 3\nbogus 1\n");
    char *bad_file[] = {"ringkvd", "--config", (char *)path, NULL};
    char *missing[] = {"ringkvd", "/no/such/ringkv.conf", NULL};
    char want[PATH_MAX + 64];

    ck_assert_int_eq(from_args(&cli, bad_file), RK_ENOTFOUND);
    snprintf(want, sizeof(want), "%s:2: unknown setting 'bogus'", path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(from_args(&cli, missing), RK_EIO);
}
END_TEST

START_TEST(test_args_defaults_only)
{
    struct settings_cli cli;
    struct settings fresh;
    char *argv[] = {"ringkvd", NULL};

    settings_init(&fresh);
    ck_assert_int_eq(from_args(&cli, argv), 0);
    ck_assert_int_eq(memcmp(&c, &fresh, sizeof(c)), 0);
    ck_assert_int_eq(settings_from_args(&c, 0, argv, &cli, err, sizeof(err)), 0);
}
END_TEST

/* ---- consistency --------------------------------------------------------- */

/* A config that passes settings_check: id and cluster-key set. */
static void make_valid(void)
{
    set_ok("id", "n1");
    set_ok("cluster-key", "/etc/ringkv/key");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
}

START_TEST(test_check_required)
{
    set_ok("id", "");
    set_ok("cluster-key", "/k");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EINVAL);
    ck_assert_str_eq(err, "id is not set: give --id NAME (1 to 64 of [A-Za-z0-9._:-])");
    set_ok("id", "n1");
    set_ok("cluster-key", "");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EINVAL);
    ck_assert_str_eq(err, "cluster-key is not set: create one with `ringkv keygen FILE` and give "
                          "--cluster-key FILE");
    make_valid();
}
END_TEST

START_TEST(test_check_quorum)
{
    make_valid();
    set_ok("rf", "2");
    set_ok("r", "3");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "r (3) is larger than rf (2)");
    set_ok("r", "2");
    set_ok("w", "3");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "w (3) is larger than rf (2)");
    set_ok("w", "1");
    set_ok("rf", "1");
    set_ok("r", "1");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_check_buffers)
{
    char exact[32];

    make_valid();
    set_ok("value-max", "512MB");
    set_ok("peer-queue-max", "1GB");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err,
                     "query-buffer-max (64MB) is smaller than value-max (512MB) + key-max (503B) "
                     "+ 4KB");
    snprintf(exact, sizeof(exact), "%llu", 512 * MIB + 503 + 4096);
    set_ok("query-buffer-max", exact);
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "frame-max (17MB) is smaller than value-max (512MB) + key-max (503B) "
                          "+ 64KB");
    snprintf(exact, sizeof(exact), "%llu", 512 * MIB + 503 + 65536);
    set_ok("frame-max", exact);
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
    snprintf(exact, sizeof(exact), "%llu", 512 * MIB + 503 + 65535);
    set_ok("frame-max", exact);
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
}
END_TEST

START_TEST(test_check_peer_queue)
{
    make_valid();
    set_ok("frame-max", "17MB");
    set_ok("peer-queue-max", "16MB");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "peer-queue-max (16MB) is smaller than frame-max (17MB)");
    set_ok("peer-queue-max", "17MB");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
    set_bad("peer-bulk-window", "32KB", "peer-bulk-window: '32KB' is out of range 64KB to 1GB");
    set_bad("peer-queue-max", "8GB", "peer-queue-max: '8GB' is out of range 1MB to 4GB");
}
END_TEST

START_TEST(test_check_addresses)
{
    make_valid();
    set_ok("listen", "127.0.0.1:7370");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "listen and client are the same address 127.0.0.1:7370");
    set_ok("listen", "127.0.0.2:7370");
    set_ok("metrics", "127.0.0.2:7370");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "listen and metrics are the same address 127.0.0.2:7370");
    set_ok("metrics", "127.0.0.1:9100");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), 0);
    /* one IPv6 address in two spellings is one address */
    set_ok("listen", "[::1]:7371");
    set_ok("metrics", "[0:0::1]:7371");
    ck_assert_int_eq(settings_check(&c, err, sizeof(err)), RK_EMISMATCH);
    ck_assert_str_eq(err, "listen and metrics are the same address [::1]:7371");
}
END_TEST

/* ---- printing ------------------------------------------------------------ */

START_TEST(test_print_format)
{
    char *out;
    char *line;
    char *save = NULL;
    size_t n = 0;

    set_ok("id", "n1");
    out = print_to_string(&c);
    for (line = strtok_r(out, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        const char *name = settings_defs[n].name;
        size_t len = strlen(name);
        ck_assert_uint_lt(n, settings_defs_count);
        ck_assert_msg(strncmp(line, name, len) == 0 && (line[len] == ' ' || line[len] == '\0'),
                      "line %zu is '%s', not %s", n + 1, line, name);
        n++;
    }
    ck_assert_uint_eq(n, settings_defs_count);
    free(out);
    out = print_to_string(&c);
    ck_assert(strstr(out, "id n1\nrack rack1\ntokens 256\n") == out);
    ck_assert(strstr(out, "\nmetrics\n") != NULL);
    ck_assert(strstr(out, "\nseeds\n") != NULL);
    ck_assert(strstr(out, "\ntimeout 0\n") != NULL);
    ck_assert(strstr(out, "\nrequirepass\nadmin-from loopback\n") != NULL);
    free(out);
}
END_TEST

/* print, parse the output into a fresh config, and demand the same bytes. */
static void assert_round_trip(const struct settings *cfg)
{
    struct settings back;
    char *out = print_to_string(cfg);

    settings_init(&back);
    ck_assert_msg(settings_parse_text(&back, out, strlen(out), "printed", err, sizeof(err)) == 0,
                  "%s", err);
    ck_assert_msg(memcmp(cfg, &back, sizeof(back)) == 0, "round trip differs:\n%s", out);
    free(out);
}

START_TEST(test_round_trip_defaults)
{
    assert_round_trip(&c);
}
END_TEST

START_TEST(test_round_trip_every_setting)
{
    static const struct {
        const char *name;
        const char *value;
    } set[] = {
        {"id", "node-7"},
        {"rack", "r2"},
        {"tokens", "17"},
        {"listen", "10.0.0.7:17371"},
        {"client", "host.example:17370"},
        {"metrics", "0.0.0.0:9100"},
        {"metrics-maxconn", "3"},
        {"data", "/var/lib/ringkv data #1"},
        {"seeds", "10.0.0.1:7371, 10.0.0.2:7371,seed.example:1"},
        {"cluster-key", "/etc/ringkv/key"},
        {"ring-seed", "ffeeddccbbaa99887766554433221100"},
        {"rf", "5"},
        {"r", "3"},
        {"w", "4"},
        {"sloppy", "no"},
        {"sync", "batch"},
        {"sync-interval", "1500ms"},
        {"gossip-interval", "30s"},
        {"handoff-rate", "1234567"},
        {"handoff-concurrency", "9"},
        {"force-ring-change", "yes"},
        {"log-level", "debug"},
        {"conflicts", "lww"},
        {"max-siblings", "7"},
        {"tombstone-grace", "86399"},
        {"key-max", "100"},
        {"value-max", "0"},
        {"multibulk-max", "99"},
        {"query-buffer-max", "1GB"},
        {"output-buffer-max", "1025KB"},
        {"pipeline-max", "1"},
        {"kv-shuffle-seed", "7"},
        {"maxclients", "1000000"},
        {"timeout", "0"},
        {"frame-max", "1GB"},
        {"peer-maxconn", "65535"},
        {"peer-handshake-max", "1"},
        {"peer-handshake-per-addr", "65535"},
        {"handshake-timeout", "100ms"},
        {"peer-queue-max", "4GB"},
        {"peer-bulk-window", "1000001"},
        {"request-timeout", "1500ms"},
        {"map-size-max", "1PB"},
        {"requirepass", ""},
        {"admin-from", "any"},
    };

    ck_assert_uint_eq(sizeof(set) / sizeof(set[0]), settings_defs_count);
    for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++) {
        set_ok(set[i].name, set[i].value);
    }
    assert_round_trip(&c);
}
END_TEST

START_TEST(test_round_trip_longest_line)
{
    char list[SETTINGS_VALUE_MAX];
    size_t used = 0;
    char host[SETTINGS_HOST_MAX];

    memset(host, 'h', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    for (int i = 0; i < SETTINGS_SEEDS_MAX; i++) {
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s:%d", i ? "," : "", host,
                                 60000 + i);
        ck_assert_uint_lt(used, sizeof(list));
    }
    set_ok("seeds", list);
    ck_assert_str_eq(fmt("seeds"), list);
    assert_round_trip(&c);
}
END_TEST

START_TEST(test_secret_never_printed)
{
    struct settings back;
    char *out;

    set_ok("requirepass", "hunter2-very-secret");
    out = print_to_string(&c);
    ck_assert(strstr(out, "hunter2") == NULL);
    ck_assert(strstr(out, "\n# requirepass (hidden)\n") != NULL);
    settings_init(&back);
    ck_assert_int_eq(settings_parse_text(&back, out, strlen(out), "printed", err, sizeof(err)), 0);
    ck_assert_str_eq(back.requirepass, "");
    memset(c.requirepass, 0, sizeof(c.requirepass));
    ck_assert_int_eq(memcmp(&c, &back, sizeof(c)), 0);
    free(out);
}
END_TEST

/* settings_same() sees a change to each setting, the seeds list's count included. */
START_TEST(test_same_and_copy)
{
    struct settings other = c;

    for (size_t i = 0; i < settings_defs_count; i++) {
        ck_assert(settings_same(&c, &other, &settings_defs[i]));
    }
    set_ok("seeds", "10.0.0.1:7371,10.0.0.2:7371");
    other = c;
    set_ok("seeds", "10.0.0.1:7371");
    ck_assert(!settings_same(&c, &other, settings_find("seeds")));
    ck_assert(settings_same(&c, &other, settings_find("maxclients")));
    settings_copy(&c, &other, settings_find("seeds"));
    ck_assert_uint_eq(c.n_seeds, 2);
    ck_assert_int_eq(memcmp(&c, &other, sizeof(c)), 0);
    set_ok("requirepass", "s3cret");
    ck_assert(!settings_same(&c, &other, settings_find("requirepass")));
}
END_TEST

/* settings_describe(): ranges in the setting's units, choices as a list. */
START_TEST(test_describe)
{
    char buf[256];

    ck_assert_int_eq(settings_describe(settings_find("rf"), buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "1 to 16");
    ck_assert_int_eq(settings_describe(settings_find("gossip-interval"), buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "10ms to 1m");
    ck_assert_int_eq(settings_describe(settings_find("handoff-rate"), buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "64KB to 10GB");
    ck_assert_int_eq(settings_describe(settings_find("sync"), buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "always, batch or none");
    ck_assert_int_eq(settings_describe(settings_find("admin-from"), buf, sizeof(buf)), 0);
    ck_assert_str_eq(buf, "loopback or any");
    ck_assert_int_eq(settings_describe(settings_find("listen"), buf, sizeof(buf)), 0);
    ck_assert(strstr(buf, "host:port") != NULL);
    ck_assert_int_eq(settings_describe(settings_find("sync"), buf, 8), RK_ETOOBIG);
    for (size_t i = 0; i < settings_defs_count; i++) {
        ck_assert_int_eq(settings_describe(&settings_defs[i], buf, sizeof(buf)), 0);
        ck_assert(buf[0] != '\0');
    }
}
END_TEST

/* CONFIG GET's value of name, as a client reads it. */
static const char *config_get(const char *name)
{
    static char buf[SETTINGS_VALUE_MAX];

    ck_assert_msg(settings_config_get(&c, name, buf, sizeof(buf)) == 0, "CONFIG GET %s", name);
    return buf;
}

/* CONFIG GET answers Redis's names in Redis's units; the config file keeps ringkv's text. */
START_TEST(test_config_get_redis_view)
{
    char small[2];

    ck_assert_str_eq(config_get("timeout"), "0");
    set_ok("timeout", "5m");
    ck_assert_str_eq(config_get("timeout"), "300");
    ck_assert_str_eq(config_get("TIMEOUT"), "300");
    ck_assert_str_eq(fmt("timeout"), "5m");
    set_ok("timeout", "1500ms"); /* a part second rounds up: never 0, which means never */
    ck_assert_str_eq(config_get("timeout"), "2");
    ck_assert_str_eq(config_get("save"), "");
    ck_assert_str_eq(config_get("appendonly"), "yes");
    ck_assert_str_eq(config_get("appendfsync"), "always");
    set_ok("sync", "batch");
    ck_assert_str_eq(config_get("appendfsync"), "everysec");
    set_ok("sync", "none");
    ck_assert_str_eq(config_get("appendfsync"), "no");
    ck_assert_str_eq(config_get("appendonly"), "yes");
    ck_assert_str_eq(config_get("maxmemory"), "0");
    ck_assert_str_eq(config_get("maxmemory-policy"), "noeviction");
    ck_assert_str_eq(config_get("databases"), "1");
    /* the table's own settings, as settings_format() writes them */
    ck_assert_str_eq(config_get("maxclients"), "10000");
    ck_assert_str_eq(config_get("value-max"), "16MB");
    ck_assert_int_eq(settings_config_get(&c, "no-such-setting", small, sizeof(small)),
                     RK_ENOTFOUND);
    ck_assert_int_eq(settings_config_get(&c, "maxmemory-policy", small, sizeof(small)), RK_ETOOBIG);
    /* the list of Redis names holds each of them once */
    ck_assert_uint_eq(settings_redis_count, 7);
    for (size_t i = 0; i < settings_redis_count; i++) {
        for (size_t k = 0; k < i; k++) {
            ck_assert_str_ne(settings_redis_name(i), settings_redis_name(k));
        }
    }
}
END_TEST

static Suite *settings_suite(void)
{
    Suite *s = suite_create("config");
    struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"default_texts", test_default_texts},
        {"default_fields", test_default_fields},
        {"default_id", test_default_id_is_host_name},
        {"table", test_table},
        {"uint", test_uint},
        {"duration", test_duration},
        {"duration_errors", test_duration_errors},
        {"size", test_size},
        {"size_errors", test_size_errors},
        {"enum", test_enum},
        {"name", test_name},
        {"addr", test_addr},
        {"addr_optional", test_addr_optional},
        {"seeds", test_seeds},
        {"path", test_path},
        {"ring_seed", test_ring_seed},
        {"secret", test_secret},
        {"failure_leaves_config", test_failure_leaves_config},
        {"unknown_setting", test_unknown_setting},
        {"error_shapes", test_error_shapes},
        {"format_small_buffer", test_format_small_buffer},
        {"file_comments", test_file_comments_and_blanks},
        {"file_crlf", test_file_crlf},
        {"file_no_final_newline", test_file_last_line_without_newline},
        {"file_empty_value", test_file_empty_value},
        {"file_duplicates", test_file_duplicates_last_wins},
        {"file_unknown_setting", test_file_unknown_setting_names_line},
        {"file_bad_value", test_file_bad_value_names_line},
        {"file_long_line", test_file_long_line},
        {"file_nul_byte", test_file_nul_byte},
        {"load_file", test_load_file},
        {"load_file_errors", test_load_file_errors},
        {"args_flags_win", test_args_flags_win_over_file},
        {"args_lone_first", test_args_lone_first_argument},
        {"args_equals", test_args_equals_form},
        {"args_unknown", test_args_unknown_flag},
        {"args_missing_value", test_args_missing_or_bad_value},
        {"args_switches", test_args_switches},
        {"args_file_errors", test_args_file_errors},
        {"args_defaults", test_args_defaults_only},
        {"check_required", test_check_required},
        {"check_quorum", test_check_quorum},
        {"check_buffers", test_check_buffers},
        {"check_peer_queue", test_check_peer_queue},
        {"check_addresses", test_check_addresses},
        {"print_format", test_print_format},
        {"round_trip_defaults", test_round_trip_defaults},
        {"round_trip_every_setting", test_round_trip_every_setting},
        {"round_trip_longest_line", test_round_trip_longest_line},
        {"secret_never_printed", test_secret_never_printed},
        {"same_and_copy", test_same_and_copy},
        {"describe", test_describe},
        {"config_get_redis_view", test_config_get_redis_view},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(settings_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
