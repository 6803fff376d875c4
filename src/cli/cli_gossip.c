/*
 * cli_gossip.c - `ringkv gossip sim`: the gossip simulator (src/sim/gossip_sim.c)
 * over a list of cluster sizes, as a table for people and JSON for scripts.
 *
 *   ringkv gossip sim [--nodes N[,N...]] [--seed S] [--loss P] [--latency MS]
 *                     [--jitter MS] [--interval MS] [--tokens T] [--duration S]
 *                     [--partition A|B --partition-at S --heal-at S]
 *                     [--phases join,crash,steady] [--trace FILE] [--json]
 *
 * Defaults: nodes 10,100,1000; a seed drawn at random and printed; no loss
 * outside the false-suspicion phases (1% and 5%, each for --duration
 * seconds; by default 3600/N clamped to 5 .. 60, about one node-hour per
 * loss rate without making the largest sizes take hours);
 * latency 1 ms plus up to 0.5 ms of jitter; the node's gossip-interval
 * (200 ms); 1 token per member (tokens only size the ring each member
 * builds).  A and B of --partition are member ranges "LO-HI" (or one index)
 * of the smallest size; --partition-at is no sooner than the warm-up's end
 * (GOSSIP_SIM_WARMUP_ROUNDS intervals, 0.6 s by default).  Sizes, members,
 * --seed, --interval and --tokens are whole numbers, decimal digits only
 * (num.h); --loss, --latency, --jitter, --duration and the times decimals.  Sizes go up to 8191 (a
 * ring holds 8192 members, the joiner included), as far as memory allows: a size whose member
 * tables, rings and messages in flight (many when --latency spans many
 * intervals) would not fit in the memory available
 * (gossip_sim_memory_estimate()) is refused before it starts.
 *
 * --phases runs only the phases named (the warm-up always runs; a
 * partition runs when given); the figures of a phase not run are null.
 *
 * JSON (stable snake_case names; fields may be added, none renamed):
 *   seed, interval_ms, latency_ms, jitter_ms, loss,
 *   runs [ { nodes, join_rounds, join_seconds, join_bound_rounds, join_ok,
 *            crash_rounds, crash_seconds, crash_bound_rounds, crash_ok,
 *            partition (null without --partition) { converge_rounds,
 *              converge_seconds, bound_rounds, ok },
 *            false_suspicions_per_node_hour { loss_1pct, loss_5pct },
 *            false_downs { loss_1pct, loss_5pct },
 *            msgs_per_node_round, bytes_per_node_round,
 *            swim_rounds (log2 N), swim_msgs_per_node_round (2: ping, ack),
 *            events, messages, node_rounds, virtual_seconds, wall_seconds,
 *            form_seconds (of wall_seconds, building the N member tables),
 *            node_rounds_per_second (the rest of wall_seconds), duration_s
 *            (of each false-suspicion phase), maxrss_kb, memory_estimate_kb (what
 *            the size was checked against before it started) } ]
 *
 * Exit codes (cli.h): 0; 3 when a check failed (a join, a crash or a
 * healed partition not seen by every member within its bound), after a
 * line with the seed and the command that replays that run (every option
 * in full, each value one shell word); 1 when a run cannot be made (a size
 * too large for the memory available is refused before any size runs) or
 * the trace could not be written; 2 for a bad option.
 */
#include "cli_gossip.h"

#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"
#include "error.h"
#include "gossip_sim.h"
#include "log.h"
#include "num.h"

#define GSIM_USAGE                                                                                 \
    "ringkv gossip sim [--nodes N[,N...]] [--seed S] [--loss P] [--latency MS] [--jitter MS] "     \
    "[--interval MS] [--tokens T] [--duration S] [--partition A|B --partition-at S --heal-at S] "  \
    "[--phases join,crash,steady] [--trace FILE] [--json]"
#define GSIM_SIZES_MAX 16
#define GSIM_SEED_MAX 9007199254740992ull /* 2^53: exact in a JSON reader's double */
#define GSIM_LIMIT_SLACK (8u << 20)

struct gsim_cli {
    struct gossip_sim_opts o;
    size_t sizes[GSIM_SIZES_MAX], n_sizes;
    const char *trace_path, *partition;
    double cut_s, heal_s;
    bool seeded, json, cut_given, heal_given, duration_given;
};

enum {
    OPT_NODES = 1,
    OPT_SEED,
    OPT_LOSS,
    OPT_LATENCY,
    OPT_JITTER,
    OPT_INTERVAL,
    OPT_TOKENS,
    OPT_DURATION,
    OPT_PARTITION,
    OPT_CUT,
    OPT_HEAL,
    OPT_TRACE,
    OPT_JSON,
    OPT_PHASES,
};

static const struct option gsim_long_opts[] = {
    {"nodes", required_argument, NULL, OPT_NODES},
    {"seed", required_argument, NULL, OPT_SEED},
    {"loss", required_argument, NULL, OPT_LOSS},
    {"latency", required_argument, NULL, OPT_LATENCY},
    {"jitter", required_argument, NULL, OPT_JITTER},
    {"interval", required_argument, NULL, OPT_INTERVAL},
    {"tokens", required_argument, NULL, OPT_TOKENS},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"partition", required_argument, NULL, OPT_PARTITION},
    {"partition-at", required_argument, NULL, OPT_CUT},
    {"heal-at", required_argument, NULL, OPT_HEAL},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"json", no_argument, NULL, OPT_JSON},
    {"phases", required_argument, NULL, OPT_PHASES},
    {NULL, 0, NULL, 0},
};

/* A number in [lo, hi] for option opt; a usage line and false otherwise. */
static bool gsim_parse_double(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        cli_usage(GSIM_USAGE, "%s must be a number from %g to %g, not '%s'", opt, lo, hi, s);
        return false;
    }
    *out = v;
    return true;
}

/* A whole number in [lo, hi] for option opt, decimal digits only (num.h); a usage line and false
 * otherwise ("1.9" or "1e3" is no count). */
static bool gsim_parse_count(const char *opt, const char *s, uint64_t lo, uint64_t hi,
                             uint64_t *out)
{
    uint64_t v;

    if (num_parse_u64(s, strlen(s), hi, &v) != 0 || v < lo) {
        cli_usage(GSIM_USAGE, "%s must be a whole number from %llu to %llu, not '%s'", opt,
                  (unsigned long long)lo, (unsigned long long)hi, s);
        return false;
    }
    *out = v;
    return true;
}

/* "N[,N...]" into c->sizes: decimal digits only (num.h), so "-1" or " 10" is no size. */
static bool gsim_parse_sizes(struct gsim_cli *c, const char *s)
{
    const char *p = s;

    c->n_sizes = 0;
    while (p != NULL) {
        const char *comma = strchr(p, ',');
        size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
        uint64_t v;
        if (num_parse_u64(p, len, GOSSIP_SIM_NODES_MAX, &v) != 0 || v < GOSSIP_SIM_NODES_MIN ||
            c->n_sizes == GSIM_SIZES_MAX) {
            cli_usage(GSIM_USAGE,
                      "--nodes must be up to %d comma-separated sizes from %d to %d, "
                      "not '%s'",
                      GSIM_SIZES_MAX, GOSSIP_SIM_NODES_MIN, GOSSIP_SIM_NODES_MAX, s);
            return false;
        }
        c->sizes[c->n_sizes++] = (size_t)v;
        p = comma != NULL ? comma + 1 : NULL;
    }
    return true;
}

/* "LO-HI" or "I" (decimal digits, num.h) of s[0..stop) into [*lo, *hi]. */
static bool gsim_parse_range(const char *s, const char *stop, size_t *lo, size_t *hi)
{
    const char *dash = memchr(s, '-', (size_t)(stop - s));
    const char *a_end = dash != NULL ? dash : stop;
    uint64_t a, b;

    if (num_parse_u64(s, (size_t)(a_end - s), GOSSIP_SIM_NODES_MAX, &a) != 0) {
        return false;
    }
    b = a;
    if (dash != NULL &&
        num_parse_u64(dash + 1, (size_t)(stop - dash - 1), GOSSIP_SIM_NODES_MAX, &b) != 0) {
        return false;
    }
    *lo = (size_t)a;
    *hi = (size_t)b;
    return a <= b;
}

/* --partition A|B against the smallest size: two disjoint ranges of members. */
static bool gsim_parse_partition(struct gsim_cli *c)
{
    struct gossip_sim_opts *o = &c->o;
    const char *bar = strchr(c->partition, '|');
    size_t smallest = SIZE_MAX;

    for (size_t i = 0; i < c->n_sizes; i++) {
        smallest = c->sizes[i] < smallest ? c->sizes[i] : smallest;
    }
    if (bar == NULL || !gsim_parse_range(c->partition, bar, &o->a_lo, &o->a_hi) ||
        !gsim_parse_range(bar + 1, bar + 1 + strlen(bar + 1), &o->b_lo, &o->b_hi) ||
        o->a_hi >= smallest || o->b_hi >= smallest || !(o->a_hi < o->b_lo || o->b_hi < o->a_lo)) {
        cli_usage(GSIM_USAGE,
                  "--partition must be two disjoint member ranges LO-HI|LO-HI below %zu (the "
                  "smallest size), not '%s'",
                  smallest, c->partition);
        return false;
    }
    if (!c->cut_given || !c->heal_given || c->heal_s <= c->cut_s) {
        cli_usage(GSIM_USAGE, "--partition needs --partition-at and a later --heal-at");
        return false;
    }
    if (c->cut_s * 1000.0 < (double)(GOSSIP_SIM_WARMUP_ROUNDS * o->interval_ms)) {
        cli_usage(GSIM_USAGE,
                  "--partition-at %g is within the warm-up: it must be at least %g s (%d rounds "
                  "of %llu ms)",
                  c->cut_s, (double)(GOSSIP_SIM_WARMUP_ROUNDS * o->interval_ms) / 1000.0,
                  GOSSIP_SIM_WARMUP_ROUNDS, (unsigned long long)o->interval_ms);
        return false;
    }
    o->partition = true;
    o->cut_ms = (uint64_t)(c->cut_s * 1000.0);
    o->heal_ms = (uint64_t)(c->heal_s * 1000.0);
    return true;
}

/* "join,crash,steady" (any of them, empty items skipped) into the phase switches. */
static bool gsim_parse_phases(struct gossip_sim_opts *o, const char *s)
{
    static const char *const names[] = {"join", "crash", "steady"};
    bool *const on[] = {&o->join, &o->crash, &o->steady};

    o->join = o->crash = o->steady = false;
    for (const char *t = s; *t != '\0'; t += *t == ',') {
        size_t len = strcspn(t, ","), k = 0;
        while (len > 0 && k < 3 && (strlen(names[k]) != len || strncmp(t, names[k], len) != 0)) {
            k++;
        }
        if (k == 3) {
            cli_usage(GSIM_USAGE, "--phases takes join, crash and steady, not '%.*s'", (int)len, t);
            return false;
        }
        if (len > 0) {
            *on[k] = true;
        }
        t += len;
    }
    return true;
}

/* Apply one option; false after a usage line. */
static bool gsim_apply(struct gsim_cli *c, int opt, const char *arg)
{
    struct gossip_sim_opts *o = &c->o;
    double v;
    uint64_t n;

    switch (opt) {
    case OPT_NODES:
        return gsim_parse_sizes(c, arg);
    case OPT_SEED:
        return (c->seeded = gsim_parse_count("--seed", arg, 1, GSIM_SEED_MAX, &o->seed));
    case OPT_LOSS:
        return gsim_parse_double("--loss", arg, 0, 0.99, &o->loss);
    case OPT_LATENCY:
    case OPT_JITTER:
        if (!gsim_parse_double(opt == OPT_LATENCY ? "--latency" : "--jitter", arg, 0, 10000, &v)) {
            return false;
        }
        *(opt == OPT_LATENCY ? &o->latency_us : &o->jitter_us) = (uint64_t)llround(v * 1000.0);
        return true;
    case OPT_INTERVAL:
        return gsim_parse_count("--interval", arg, 10, 60000, &o->interval_ms);
    case OPT_TOKENS:
        if (!gsim_parse_count("--tokens", arg, 1, 256, &n)) {
            return false;
        }
        o->tokens = (uint32_t)n;
        return true;
    case OPT_DURATION:
        o->duration_ms =
            gsim_parse_double("--duration", arg, 1, 86400, &v) ? (uint64_t)(v * 1000) : 0;
        c->duration_given = true;
        return o->duration_ms > 0;
    case OPT_PARTITION:
        c->partition = arg;
        return true;
    case OPT_CUT:
        return (c->cut_given = gsim_parse_double("--partition-at", arg, 0, 86400, &c->cut_s));
    case OPT_HEAL:
        return (c->heal_given = gsim_parse_double("--heal-at", arg, 0, 86400, &c->heal_s));
    case OPT_TRACE:
        c->trace_path = arg;
        return true;
    case OPT_PHASES:
        return gsim_parse_phases(o, arg);
    default:
        c->json = true;
        return true;
    }
}

static int gsim_parse(struct gsim_cli *c, int argc, char **argv)
{
    static const size_t defaults[] = {10, 100, 1000};
    int opt;

    memset(c, 0, sizeof(*c));
    gossip_sim_opts_init(&c->o);
    memcpy(c->sizes, defaults, sizeof(defaults));
    c->n_sizes = 3;
    optind = 1;
    opterr = 0; /* one line of ours, not getopt's as well */
    while ((opt = getopt_long(argc, argv, ":", gsim_long_opts, NULL)) != -1) {
        if (opt == ':') {
            return cli_usage(GSIM_USAGE, "option '%s' needs a value", argv[optind - 1]);
        }
        if (opt == '?') {
            return cli_usage(GSIM_USAGE, "unknown option '%s'", argv[optind - 1]);
        }
        if (!gsim_apply(c, opt, optarg)) {
            return CLI_USAGE;
        }
    }
    if (optind < argc) {
        return cli_usage(GSIM_USAGE, "unexpected argument '%s'", argv[optind]);
    }
    if (c->partition != NULL ? !gsim_parse_partition(c) : (c->cut_given || c->heal_given)) {
        return c->partition != NULL ? CLI_USAGE
                                    : cli_usage(GSIM_USAGE, "--partition-at and --heal-at need "
                                                            "--partition");
    }
    if (!c->seeded) {
        c->o.seed = 1 + randombytes_uniform(2000000000u);
    }
    return CLI_OK;
}

/* The "<key> <n> kB" line of a /proc file in bytes; 0 when unknown. */
static uint64_t gsim_proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256];
    unsigned long long kb = 0;
    size_t key_len = strlen(key);

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, key_len) == 0 && sscanf(line + key_len, " %llu kB", &kb) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return (uint64_t)kb * 1024;
}

/*
 * The memory a run may take, in bytes (0 when unknown): MemAvailable of
 * /proc/meminfo, or less when this process's address-space or data limit
 * (ulimit -v, ulimit -d) leaves less room above what it maps already.  A
 * run past a limit would not fail cleanly: the membership code takes a
 * failed allocation as a message it could not act on, so the run would
 * end in a failed check that a replay with room would not repeat.
 * *limited tells whether a limit is the smaller.
 */
static uint64_t gsim_mem_available(bool *limited)
{
    static const struct {
        int resource;
        const char *used;
    } limits[] = {{RLIMIT_AS, "VmSize:"}, {RLIMIT_DATA, "VmData:"}};
    uint64_t avail = gsim_proc_kb("/proc/meminfo", "MemAvailable:");

    *limited = false;
    for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
        struct rlimit rl;
        uint64_t used, room;
        if (getrlimit(limits[i].resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
            continue;
        }
        used = gsim_proc_kb("/proc/self/status", limits[i].used);
        room = (uint64_t)rl.rlim_cur > used ? (uint64_t)rl.rlim_cur - used : 1;
        if (avail == 0 || room < avail) {
            avail = room;
            *limited = true;
        }
    }
    return avail;
}

/* s as one shell word: as it is when every byte is safe, else in single quotes. */
static void gsim_shell_word(FILE *f, const char *s)
{
    static const char safe[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                               "_./,:=@%+-";

    if (*s != '\0' && s[strspn(s, safe)] == '\0') {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s != '\0'; s++) {
        if (*s == '\'') {
            fputs("'\\''", f);
        } else {
            fputc(*s, f);
        }
    }
    fputc('\'', f);
}

/*
 * The command that replays the run of n members: this one's options, read
 * again as getopt_long() read them (so "--node 10,20" or "--seed=5" is
 * still the option it stood for), written out in full with their values
 * quoted for the shell, the seed and the size this run's.
 */
static void gsim_replay_line(const struct gsim_cli *c, size_t n, int argc, char **argv)
{
    int opt, idx;

    fprintf(stderr, "ringkv: replay with: ringkv gossip sim --seed %llu --nodes %zu",
            (unsigned long long)c->o.seed, n);
    optind = 0; /* glibc: start over */
    while ((opt = getopt_long(argc, argv, ":", gsim_long_opts, &idx)) != -1) {
        if (opt == OPT_SEED || opt == OPT_NODES || opt == '?' || opt == ':') {
            continue;
        }
        fprintf(stderr, " --%s", gsim_long_opts[idx].name);
        if (gsim_long_opts[idx].has_arg != no_argument) {
            fputc(' ', stderr);
            gsim_shell_word(stderr, optarg);
        }
    }
    fputc('\n', stderr);
}

/* Every failed check of r, one line each on stderr; whether there was none. */
static bool gsim_checks(const struct gsim_cli *c, const struct gossip_sim_result *r)
{
    const struct {
        const char *what;
        const struct gossip_sim_phase *ph;
    } checks[] = {{"every member holds the joiner's entry", &r->join},
                  {"every live member sees the crashed one down", &r->crash},
                  {"the healed partition converged", &r->partition}};
    bool ok = true;

    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
        if ((checks[i].ph == &r->partition && !c->o.partition) ||
            (checks[i].ph == &r->join && !r->join_run) ||
            (checks[i].ph == &r->crash && !r->crash_run)) {
            continue;
        }
        if (!checks[i].ph->done) {
            fprintf(stderr,
                    "ringkv: gossip sim N=%zu seed %llu: check failed: %s within %.1f "
                    "rounds (%s after %.1f rounds)\n",
                    r->nodes, (unsigned long long)c->o.seed, checks[i].what,
                    checks[i].ph->bound_rounds,
                    checks[i].ph->rounds > checks[i].ph->bound_rounds ? "gave up or late" : "seen",
                    checks[i].ph->rounds);
            ok = false;
        }
    }
    return ok;
}

/* Simulated node-rounds per second of wall time, the formed cluster's construction left out. */
static double gsim_speed(const struct gossip_sim_result *r)
{
    double t = r->wall_seconds - r->form_seconds;
    return t > 0 ? (double)r->node_rounds / t : 0.0;
}

static void gsim_table_head(const struct gsim_cli *c)
{
    const struct gossip_sim_opts *o = &c->o;

    char phases[32] = "3600/N s (5 .. 60)";

    if (c->duration_given) {
        snprintf(phases, sizeof(phases), "%.0f s", (double)o->duration_ms / 1000.0);
    }
    printf("gossip sim: seed %llu; interval %llu ms, latency %.2f ms + jitter up to %.2f ms, "
           "loss %.3f; false-suspicion phases of %s at 1%% and 5%% loss\n",
           (unsigned long long)o->seed, (unsigned long long)o->interval_ms,
           (double)o->latency_us / 1000.0, (double)o->jitter_us / 1000.0, o->loss, phases);
    printf("%6s %17s %6s %17s %6s %8s %8s %9s %10s %6s %5s %8s %10s\n", "nodes", "join rounds (s)",
           "bound", "crash rounds (s)", "bound", "susp/n-h", "susp/n-h", "msgs/", "bytes/", "swim",
           "swim", "maxrss", "node-");
    printf("%6s %17s %6s %17s %6s %8s %8s %9s %10s %6s %5s %8s %10s\n", "", "", "", "", "",
           "1% loss", "5% loss", "node/rnd", "node/rnd", "log2N", "msgs", "MB", "rounds/s");
}

/* The row of one size; a phase not run shows "-" in its columns, as its figures are null in JSON.
 */
static void gsim_table_row(const struct gossip_sim_result *r)
{
    char join[32] = "-", crash[32] = "-", join_b[16] = "-", crash_b[16] = "-",
         fs[2][16] = {"-", "-"};

    if (r->join_run) {
        snprintf(join, sizeof(join), "%.1f (%.2f)%s", r->join.rounds, r->join.seconds,
                 r->join.done ? "" : "!");
        snprintf(join_b, sizeof(join_b), "%.1f", r->join.bound_rounds);
    }
    if (r->crash_run) {
        snprintf(crash, sizeof(crash), "%.1f (%.2f)%s", r->crash.rounds, r->crash.seconds,
                 r->crash.done ? "" : "!");
        snprintf(crash_b, sizeof(crash_b), "%.1f", r->crash.bound_rounds);
    }
    for (size_t k = 0; r->steady_run && k < 2; k++) {
        snprintf(fs[k], sizeof(fs[k]), "%.2f", r->fs_per_node_hour[k]);
    }
    printf("%6zu %17s %6s %17s %6s %8s %8s %9.1f %10.0f %6.1f %5d %8.1f %10.0f\n", r->nodes, join,
           join_b, crash, crash_b, fs[0], fs[1], r->msgs_per_node_round, r->bytes_per_node_round,
           log2((double)r->nodes), 2, (double)r->maxrss_kb / 1024.0, gsim_speed(r));
    if (r->partition.bound_rounds > 0) {
        printf("%6s partition healed: converged in %.1f rounds (%.2f s), bound %.1f rounds%s\n", "",
               r->partition.rounds, r->partition.seconds, r->partition.bound_rounds,
               r->partition.done ? "" : "  FAILED");
    }
    fflush(stdout);
}

static json_t *gsim_pair(double a, double b)
{
    return json_pack("{s:f,s:f}", "loss_1pct", a, "loss_5pct", b);
}

static json_t *gsim_json_run(const struct gossip_sim_result *r)
{
    const struct gossip_sim_phase *p = &r->partition;
    json_t *part = p->bound_rounds > 0 ? json_pack("{s:f,s:f,s:f,s:b}", "converge_rounds",
                                                   p->rounds, "converge_seconds", p->seconds,
                                                   "bound_rounds", p->bound_rounds, "ok", p->done)
                                       : json_null();
    json_t *j = json_pack(
        "{s:I,s:f,s:f,s:f,s:b,s:f,s:f,s:f,s:b,s:o,s:o,s:o,s:f,s:f,s:f,s:i}", "nodes",
        (json_int_t)r->nodes, "join_rounds", r->join.rounds, "join_seconds", r->join.seconds,
        "join_bound_rounds", r->join.bound_rounds, "join_ok", r->join.done, "crash_rounds",
        r->crash.rounds, "crash_seconds", r->crash.seconds, "crash_bound_rounds",
        r->crash.bound_rounds, "crash_ok", r->crash.done, "partition", part,
        "false_suspicions_per_node_hour", gsim_pair(r->fs_per_node_hour[0], r->fs_per_node_hour[1]),
        "false_downs", gsim_pair((double)r->fs_down_events[0], (double)r->fs_down_events[1]),
        "msgs_per_node_round", r->msgs_per_node_round, "bytes_per_node_round",
        r->bytes_per_node_round, "swim_rounds", log2((double)r->nodes), "swim_msgs_per_node_round",
        2);

    for (size_t i = 0; i < 3; i++) { /* a phase not run has no figures */
        static const char *const keys[3][5] = {
            {"join_rounds", "join_seconds", "join_bound_rounds", "join_ok", NULL},
            {"crash_rounds", "crash_seconds", "crash_bound_rounds", "crash_ok", NULL},
            {"false_suspicions_per_node_hour", "false_downs", NULL}};
        bool ran = i == 0 ? r->join_run : i == 1 ? r->crash_run : r->steady_run;
        for (size_t k = 0; !ran && keys[i][k] != NULL; k++) {
            json_object_set_new(j, keys[i][k], json_null());
        }
    }
    json_object_set_new(j, "events", json_integer((json_int_t)r->events));
    json_object_set_new(j, "messages", json_integer((json_int_t)r->messages));
    json_object_set_new(j, "node_rounds", json_integer((json_int_t)r->node_rounds));
    json_object_set_new(j, "virtual_seconds", json_real(r->virtual_seconds));
    json_object_set_new(j, "wall_seconds", json_real(r->wall_seconds));
    json_object_set_new(j, "form_seconds", json_real(r->form_seconds));
    json_object_set_new(j, "node_rounds_per_second", json_real(gsim_speed(r)));
    json_object_set_new(j, "duration_s", json_real(r->duration_s));
    json_object_set_new(j, "maxrss_kb", json_integer(r->maxrss_kb));
    json_object_set_new(j, "memory_estimate_kb",
                        json_integer((json_int_t)(r->estimate_bytes / 1024)));
    return j;
}

/*
 * Whether every size's member tables and rings fit in the memory available:
 * checked for all sizes before the first starts and before the trace is
 * opened, so a size too large costs neither the runs before it nor the
 * trace file a previous run wrote.
 */
/* bytes as "1.4 GB" or, under a gigabyte, "55 MB". */
static const char *gsim_bytes(char *buf, size_t len, uint64_t bytes)
{
    snprintf(buf, len, bytes >= 1000000000 ? "%.1f GB" : "%.0f MB",
             (double)bytes / (bytes >= 1000000000 ? 1e9 : 1e6));
    return buf;
}

static int gsim_fits(const struct gsim_cli *c)
{
    bool limited;
    uint64_t avail = gsim_mem_available(&limited);
    char need_s[32], avail_s[32];

    for (size_t i = 0; i < c->n_sizes; i++) {
        struct gossip_sim_opts o = c->o;
        uint64_t need, want;
        o.nodes = c->sizes[i];
        need = gossip_sim_memory_estimate(&o);
        /* under a limit, room for what the estimate leaves out: the heap's slack, the trace */
        want = limited ? need + need / 4 + GSIM_LIMIT_SLACK : need;
        if (avail > 0 && want > avail) {
            return cli_error("gossip sim: %zu members need about %s for their member tables, "
                             "rings and messages in flight; %s is available%s",
                             c->sizes[i], gsim_bytes(need_s, sizeof(need_s), want),
                             gsim_bytes(avail_s, sizeof(avail_s), avail),
                             limited ? " under this process's memory limit (ulimit -v, ulimit -d)"
                                     : "");
        }
    }
    return CLI_OK;
}

/* Run one size. */
static int gsim_one(struct gsim_cli *c, size_t n, struct gossip_sim_result *r)
{
    char err[256] = "";

    c->o.nodes = n;
    if (!c->duration_given) {
        c->o.duration_ms = 3600000 / n < 5000 ? 5000 : 3600000 / n > 60000 ? 60000 : 3600000 / n;
    }
    if (gossip_sim_run(&c->o, r, err, sizeof(err)) != 0) {
        return cli_error("gossip sim: %zu members: %s", n, err);
    }
    return CLI_OK;
}

static int gsim_runs(struct gsim_cli *c, int argc, char **argv, json_t *runs)
{
    int status = CLI_OK;

    if (!c->json) {
        gsim_table_head(c);
    }
    for (size_t i = 0; i < c->n_sizes; i++) {
        struct gossip_sim_result r;
        if (gsim_one(c, c->sizes[i], &r) != CLI_OK) {
            return CLI_ERROR;
        }
        if (c->json) {
            json_array_append_new(runs, gsim_json_run(&r));
        } else {
            gsim_table_row(&r);
        }
        if (!gsim_checks(c, &r)) {
            gsim_replay_line(c, r.nodes, argc, argv);
            status = CLI_UNHEALTHY;
        }
    }
    return status;
}

int cli_gossip_sim(int argc, char **argv)
{
    struct gsim_cli c;
    json_t *runs;
    int status = gsim_parse(&c, argc, argv);

    if (status != CLI_OK || (status = gsim_fits(&c)) != CLI_OK) {
        return status;
    }
    if (c.trace_path != NULL && (c.o.trace = fopen(c.trace_path, "w")) == NULL) {
        return cli_error("gossip sim: cannot write the trace '%s'", c.trace_path);
    }
    log_set_level(LOG_ERROR); /* the members' info lines: the trace has what matters */
    /* Gossip allocates and frees tens of kilobytes per exchange: keep them off mmap and trim. */
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    runs = json_array();
    status = gsim_runs(&c, argc, argv, runs);
    /* a trace cut short is reported whatever the checks said: a replay's trace would differ */
    if (c.o.trace != NULL && (ferror(c.o.trace) | fclose(c.o.trace)) != 0) {
        status = cli_error("gossip sim: cannot write the trace '%s'", c.trace_path);
    }
    if (c.json && status != CLI_ERROR) {
        cli_json_print(json_pack("{s:I,s:I,s:f,s:f,s:f,s:o}", "seed", (json_int_t)c.o.seed,
                                 "interval_ms", (json_int_t)c.o.interval_ms, "latency_ms",
                                 (double)c.o.latency_us / 1000.0, "jitter_ms",
                                 (double)c.o.jitter_us / 1000.0, "loss", c.o.loss, "runs", runs));
    } else {
        json_decref(runs);
    }
    return status;
}

static const struct cli_verb gossip_verbs[] = {
    {"sim", cli_gossip_sim, GSIM_USAGE + 18},
};

int cli_gossip(int argc, char **argv)
{
    return cli_dispatch("ringkv gossip", gossip_verbs,
                        sizeof(gossip_verbs) / sizeof(gossip_verbs[0]), argc - 1, argv + 1);
}
