/*
 * cli_sim.c - `ringkv placement sim`: the placement simulator (src/placement/sim.c)
 * as a table for people and as JSON for scripts.
 *
 *   ringkv placement sim [--nodes N] [--tokens T[,T...]] [--racks R]
 *                        [--rf K] [--seeds S] [--seed HEX32] [--keys M] [--json]
 *
 * Defaults: 10 nodes, tokens 1,4,16,64,256,1024, min(3, N) racks, rf 3,
 * 5 seeds starting from the PLACEMENT.md default seed, 100000 sampled keys.
 * Rows: one `ring` row per token count, then mod, rendezvous and jump (no
 * tokens), then one `bounded` row per token count.  Every figure is the mean
 * over the seeds; `worst` is the largest max/mean of any seed.
 *
 * JSON (stable snake_case names; fields may be added, none renamed):
 *   nodes, racks, rf, seeds, seed (hex), keys, bounded_c,
 *   join_node, join_rack, removed_node (null when N == 1),
 *   ideal { max_mean, min_mean, sd_mean, join_moved, remove_moved,
 *           replica_max_mean_ring, join_copies_ring, remove_copies_ring }
 *     (the copies ideals of the schemes without racks are join_moved and
 *     remove_moved; the removal figures are null when N == 1),
 *   sampling_noise_sd_mean,
 *   rows [ { scheme, tokens (null for mod, rendezvous, jump), sampled,
 *            max_mean, max_mean_worst, min_mean, sd_mean, replica_max_mean,
 *            join_moved, join_copies, remove_moved, remove_copies (the
 *            removal figures are null when N == 1) } ]
 *
 * Exit codes (cli.h): 0; 1 when the simulation fails (out of memory); 2 for
 * an unknown option or a bad value, with one line naming it.
 */
#include "cli_placement.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "hex.h"
#include "sim.h"

#define SIM_USAGE                                                                                  \
    "ringkv placement sim [--nodes N] [--tokens T[,T...]] [--racks R] [--rf K] [--seeds S] "       \
    "[--seed HEX32] [--keys M] [--json]"

/* Token counts in one run: the default sweep has 6; 16 leaves room to zoom in. */
#define SIM_TOKEN_LIST_MAX 16
/* Racks when --racks is not given: one per replica at the default rf. */
#define SIM_DEFAULT_RACKS 3

static const uint32_t sim_default_tokens[] = {1, 4, 16, 64, 256, 1024};

/* Token-free schemes, in table order between the ring and the bounded rows. */
static const enum sim_scheme sim_plain_schemes[] = {SIM_MOD, SIM_RENDEZVOUS, SIM_JUMP};
#define SIM_N_PLAIN (sizeof(sim_plain_schemes) / sizeof(sim_plain_schemes[0]))

struct sim_opts {
    long nodes, racks, rf, seeds, keys;
    bool racks_given, json, help;
    uint32_t tokens[SIM_TOKEN_LIST_MAX];
    size_t n_tokens;
    uint8_t seed[RING_SEED_LEN];
};

/* The numeric options: a table of {name, field, bounds} rather than a switch. */
static const struct sim_num_opt {
    const char *flag;
    size_t offset;
    long lo, hi;
} sim_num_opts[] = {
    {"--nodes", offsetof(struct sim_opts, nodes), 1, SIM_NODES_MAX},
    {"--racks", offsetof(struct sim_opts, racks), 1, SIM_NODES_MAX},
    {"--rf", offsetof(struct sim_opts, rf), 1, RING_RF_MAX},
    {"--seeds", offsetof(struct sim_opts, seeds), 1, SIM_SEEDS_MAX},
    {"--keys", offsetof(struct sim_opts, keys), SIM_KEYS_MIN, SIM_KEYS_MAX},
};
#define SIM_N_NUM (sizeof(sim_num_opts) / sizeof(sim_num_opts[0]))

/* getopt values: 1 .. SIM_N_NUM index sim_num_opts; the rest follow. */
enum { OPT_TOKENS = 100, OPT_SEED, OPT_JSON, OPT_HELP };

static const struct option sim_long_opts[] = {
    {"nodes", required_argument, NULL, 1},       {"racks", required_argument, NULL, 2},
    {"rf", required_argument, NULL, 3},          {"seeds", required_argument, NULL, 4},
    {"keys", required_argument, NULL, 5},        {"tokens", required_argument, NULL, OPT_TOKENS},
    {"seed", required_argument, NULL, OPT_SEED}, {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, OPT_HELP},       {NULL, 0, NULL, 0},
};

/* Parse "T[,T...]" into o->tokens; one line on stderr and false on error. */
static bool sim_parse_tokens(struct sim_opts *o, const char *s)
{
    const char *p = s;

    o->n_tokens = 0;
    while (p != NULL) {
        char *end;
        long t;
        errno = 0;
        t = strtol(p, &end, 10);
        if (end == p || errno != 0 || (*end != ',' && *end != '\0') || t < RING_TOKENS_MIN ||
            t > RING_TOKENS_MAX || o->n_tokens == SIM_TOKEN_LIST_MAX) {
            fprintf(stderr,
                    "ringkv: --tokens must be 1 to %d comma-separated integers from %d to %d, "
                    "not '%s'\n",
                    SIM_TOKEN_LIST_MAX, RING_TOKENS_MIN, RING_TOKENS_MAX, s);
            return false;
        }
        o->tokens[o->n_tokens++] = (uint32_t)t;
        p = *end == ',' ? end + 1 : NULL;
    }
    return true;
}

/* Apply one parsed option; false (after one line on stderr) on a bad value. */
static bool sim_opt_apply(struct sim_opts *o, int c, const char *arg)
{
    if (c >= 1 && c <= (int)SIM_N_NUM) {
        const struct sim_num_opt *n = &sim_num_opts[c - 1];
        o->racks_given = o->racks_given || n->offset == offsetof(struct sim_opts, racks);
        return cli_parse_long(n->flag, arg, n->lo, n->hi, (long *)((char *)o + n->offset));
    }
    if (c == OPT_TOKENS) {
        return sim_parse_tokens(o, arg);
    }
    if (c == OPT_SEED) {
        return cli_parse_seed(arg, o->seed);
    }
    o->json = o->json || c == OPT_JSON;
    o->help = o->help || c == OPT_HELP;
    return true;
}

/* Parse argv into o; returns CLI_OK or CLI_USAGE after reporting. */
static int sim_opts_parse(struct sim_opts *o, int argc, char **argv)
{
    int c;

    memset(o, 0, sizeof(*o));
    o->nodes = 10;
    o->rf = 3;
    o->seeds = 5;
    o->keys = 100000;
    memcpy(o->tokens, sim_default_tokens, sizeof(sim_default_tokens));
    o->n_tokens = sizeof(sim_default_tokens) / sizeof(sim_default_tokens[0]);
    memcpy(o->seed, ring_default_seed, RING_SEED_LEN);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", sim_long_opts, NULL)) != -1) {
        if (c == '?' || c == ':') {
            return cli_usage(SIM_USAGE, "unknown option or missing value: '%s'", argv[optind - 1]);
        }
        if (!sim_opt_apply(o, c, optarg)) {
            return CLI_USAGE;
        }
    }
    if (optind != argc) {
        return cli_usage(SIM_USAGE, "unexpected argument '%s'", argv[optind]);
    }
    if (!o->racks_given) {
        o->racks = o->nodes < SIM_DEFAULT_RACKS ? o->nodes : SIM_DEFAULT_RACKS;
    }
    if (o->racks > o->nodes) {
        fprintf(stderr, "ringkv: --racks must be at most --nodes (%ld), not %ld\n", o->nodes,
                o->racks);
        return CLI_USAGE;
    }
    return CLI_OK;
}

static void sim_config_from(struct sim_config *cfg, const struct sim_opts *o)
{
    cfg->nodes = (uint32_t)o->nodes;
    cfg->racks = (uint32_t)o->racks;
    cfg->rf = (unsigned)o->rf;
    cfg->seeds = (uint32_t)o->seeds;
    cfg->keys = (uint32_t)o->keys;
    memcpy(cfg->seed, o->seed, RING_SEED_LEN);
}

/* The rows of a run: ring per token count, the plain schemes, bounded per token count. */
static struct sim_row *sim_rows_make(const struct sim_opts *o, size_t *n)
{
    struct sim_row *rows = calloc(2 * o->n_tokens + SIM_N_PLAIN, sizeof(*rows));
    size_t k = 0;

    if (rows == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < o->n_tokens; i++) {
        rows[k++] = (struct sim_row){.scheme = SIM_RING, .tokens = o->tokens[i]};
    }
    for (size_t i = 0; i < SIM_N_PLAIN; i++) {
        rows[k++] = (struct sim_row){.scheme = sim_plain_schemes[i]};
    }
    for (size_t i = 0; i < o->n_tokens; i++) {
        rows[k++] = (struct sim_row){.scheme = SIM_BOUNDED, .tokens = o->tokens[i]};
    }
    *n = k;
    return rows;
}

/* The ring's copies ideal on the join: node-(N+1)'s share of all replicas. */
static double sim_ring_join_copies(const struct sim_config *cfg)
{
    uint32_t n = cfg->nodes + 1;
    unsigned k = cfg->rf < n ? cfg->rf : n;

    return sim_replica_share(n, cfg->racks, cfg->rf, n - 1) / k;
}

/* The ring's copies ideal on the removal: node-N's share of all replicas. */
static double sim_ring_remove_copies(const struct sim_config *cfg)
{
    uint32_t n = cfg->nodes;
    unsigned k = cfg->rf < n ? cfg->rf : n;

    return sim_replica_share(n, cfg->racks, cfg->rf, n - 1) / k;
}

/* ------------------------------------------------------------------------
 * The table.
 */

#define SIM_HEAD_FMT "%-10s %6s %9s %7s %9s %8s %9s %8s %8s %8s %8s\n"

static void sim_print_row(const struct sim_row *r)
{
    char tokens[16] = "-", rm_moved[16] = "-", rm_copies[16] = "-";
    const struct sim_figures *f = &r->mean;

    if (r->tokens != 0) {
        snprintf(tokens, sizeof(tokens), "%u", r->tokens);
    }
    if (r->removal) {
        snprintf(rm_moved, sizeof(rm_moved), "%.4f", f->remove_moved);
        snprintf(rm_copies, sizeof(rm_copies), "%.4f", f->remove_copies);
    }
    printf("%-10s %6s %9.3f %7.3f %9.3f %8.3f %9.3f %8.4f %8.4f %8s %8s\n",
           sim_scheme_name(r->scheme), tokens, f->max_mean, r->max_mean_worst, f->min_mean,
           f->sd_mean, f->replica_max_mean, f->join_moved, f->join_copies, rm_moved, rm_copies);
}

/* "3 racks of 3 or 4 nodes", the shape the replica bound depends on. */
static void sim_racks_describe(char *buf, size_t len, const struct sim_config *cfg)
{
    uint32_t small = cfg->nodes / cfg->racks;

    if (cfg->nodes % cfg->racks == 0) {
        snprintf(buf, len, "%u rack%s of %u node%s", cfg->racks, cfg->racks > 1 ? "s" : "", small,
                 small > 1 ? "s" : "");
        return;
    }
    snprintf(buf, len, "%u racks of %u or %u nodes", cfg->racks, small, small + 1);
}

static void sim_print_head(const struct sim_config *cfg)
{
    char seed[2 * RING_SEED_LEN + 1], racks[64];

    hex_encode(seed, cfg->seed, RING_SEED_LEN);
    sim_racks_describe(racks, sizeof(racks), cfg);
    printf("placement sim: %u node%s in %s (round-robin), rf %u, mean of %u seed%s from %s\n",
           cfg->nodes, cfg->nodes > 1 ? "s" : "", racks, cfg->rf, cfg->seeds,
           cfg->seeds > 1 ? "s" : "", seed);
    printf("\n%-17s %-36s %-9s %-17s %s\n", "", "    primary ownership", " replicas", "  join",
           "  removal");
    printf(SIM_HEAD_FMT, "scheme", "tokens", "max/mean", "worst", "min/mean", "sd/mean", "max/mean",
           "moved", "copies", "moved", "copies");
}

static void sim_print_notes(const struct sim_config *cfg)
{
    char racks[64];
    uint32_t n = cfg->nodes;

    sim_racks_describe(racks, sizeof(racks), cfg);
    printf("\nideal:   max/mean = min/mean = 1, sd/mean = 0\n");
    printf("         join of node-%u (rack-%u): moved and copies 1/(N+1) = %.4f\n", n + 1,
           n % cfg->racks + 1, 1.0 / (n + 1));
    if (n > 1) {
        printf("         removal of node-%u: moved and copies 1/N = %.4f\n", n, 1.0 / n);
    }
    printf("ring:    exact, from arc lengths, rack-aware: %s at rf %u allow at best\n", racks,
           cfg->rf);
    printf("         replica max/mean %.3f and copies %.4f (join)",
           sim_replica_bound(n, cfg->racks, cfg->rf), sim_ring_join_copies(cfg));
    if (n > 1) {
        printf(", %.4f (removal)", sim_ring_remove_copies(cfg));
    }
    printf("\nsampled: mod, rendezvous, jump, bounded over %u keys, racks ignored;\n", cfg->keys);
    printf("         sampling alone gives sd/mean ~ %.4f\n", sim_sampling_noise(n, cfg->keys));
    printf("bounded: c = %.2f on a ring of the row's token count\n", SIM_BOUNDED_C);
    printf("removal: always the last node, the only removal jump hash supports\n");
    printf("worst:   the largest max/mean of any seed; copies: replica copies streamed / all "
           "replicas\n");
}

static void sim_print_table(const struct sim_config *cfg, const struct sim_row *rows, size_t n)
{
    sim_print_head(cfg);
    for (size_t i = 0; i < n; i++) {
        sim_print_row(&rows[i]);
    }
    sim_print_notes(cfg);
}

/* ------------------------------------------------------------------------
 * JSON.
 */

/* A real, or null for a figure that does not exist (removal with one node). */
static json_t *sim_json_real(bool present, double v)
{
    return present ? json_real(v) : json_null();
}

static json_t *sim_json_row(const struct sim_row *r)
{
    const struct sim_figures *f = &r->mean;

    return json_pack(
        "{s:s, s:o, s:b, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:o}", "scheme",
        sim_scheme_name(r->scheme), "tokens", r->tokens ? json_integer(r->tokens) : json_null(),
        "sampled", sim_scheme_sampled(r->scheme), "max_mean", f->max_mean, "max_mean_worst",
        r->max_mean_worst, "min_mean", f->min_mean, "sd_mean", f->sd_mean, "replica_max_mean",
        f->replica_max_mean, "join_moved", f->join_moved, "join_copies", f->join_copies,
        "remove_moved", sim_json_real(r->removal, f->remove_moved), "remove_copies",
        sim_json_real(r->removal, f->remove_copies));
}

static json_t *sim_json_ideal(const struct sim_config *cfg)
{
    uint32_t n = cfg->nodes;

    return json_pack("{s:f, s:f, s:f, s:f, s:o, s:f, s:f, s:o}", "max_mean", 1.0, "min_mean", 1.0,
                     "sd_mean", 0.0, "join_moved", 1.0 / (n + 1), "remove_moved",
                     sim_json_real(n > 1, 1.0 / n), "replica_max_mean_ring",
                     sim_replica_bound(n, cfg->racks, cfg->rf), "join_copies_ring",
                     sim_ring_join_copies(cfg), "remove_copies_ring",
                     sim_json_real(n > 1, sim_ring_remove_copies(cfg)));
}

/* The event names, so scripts need not recompute the round-robin. */
static int sim_json_add_names(json_t *j, const struct sim_config *cfg)
{
    char join[32], rack[32], removed[32];
    int bad = 0;

    snprintf(join, sizeof(join), "node-%u", cfg->nodes + 1);
    snprintf(rack, sizeof(rack), "rack-%u", cfg->nodes % cfg->racks + 1);
    snprintf(removed, sizeof(removed), "node-%u", cfg->nodes);
    bad |= json_object_set_new(j, "join_node", json_string(join));
    bad |= json_object_set_new(j, "join_rack", json_string(rack));
    bad |=
        json_object_set_new(j, "removed_node", cfg->nodes > 1 ? json_string(removed) : json_null());
    return bad;
}

static json_t *sim_json_rows(const struct sim_row *rows, size_t n)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < n; i++) {
        if (json_array_append_new(a, sim_json_row(&rows[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

static int sim_print_json(const struct sim_config *cfg, const struct sim_row *rows, size_t n)
{
    char seed[2 * RING_SEED_LEN + 1];
    json_t *j;
    int bad;

    hex_encode(seed, cfg->seed, RING_SEED_LEN);
    j = json_pack("{s:i, s:i, s:i, s:i, s:s, s:i, s:f}", "nodes", (int)cfg->nodes, "racks",
                  (int)cfg->racks, "rf", (int)cfg->rf, "seeds", (int)cfg->seeds, "seed", seed,
                  "keys", (int)cfg->keys, "bounded_c", SIM_BOUNDED_C);
    if (j == NULL) {
        return cli_error("out of memory");
    }
    bad = sim_json_add_names(j, cfg);
    bad |= json_object_set_new(j, "ideal", sim_json_ideal(cfg));
    bad |= json_object_set_new(j, "sampling_noise_sd_mean",
                               json_real(sim_sampling_noise(cfg->nodes, cfg->keys)));
    bad |= json_object_set_new(j, "rows", sim_json_rows(rows, n));
    if (bad != 0) {
        json_decref(j);
        return cli_error("out of memory");
    }
    return cli_json_print(j);
}

int cli_placement_sim(int argc, char **argv)
{
    struct sim_config cfg;
    struct sim_opts o;
    struct sim_row *rows;
    size_t n;
    int rc, err;

    rc = sim_opts_parse(&o, argc, argv);
    if (rc != CLI_OK || o.help) {
        if (o.help && rc == CLI_OK) {
            printf("usage: %s\n", SIM_USAGE);
        }
        return rc;
    }
    sim_config_from(&cfg, &o);
    rows = sim_rows_make(&o, &n);
    if (rows == NULL) {
        return cli_error("out of memory");
    }
    err = sim_rows_compute(&cfg, rows, n);
    if (err != 0) {
        rc = cli_error("simulation failed: %s", rk_strerror(err));
    } else if (o.json) {
        rc = sim_print_json(&cfg, rows, n);
    } else {
        sim_print_table(&cfg, rows, n);
        rc = CLI_OK;
    }
    free(rows);
    return rc;
}
