/*
 * ringkv.c - main() of the `ringkv` command: one CLI for everything a person
 * does with a ringkv cluster.  Each verb lives in its own cli_*.c module;
 * this file only dispatches.
 *
 *   ringkv [-H HOST[:PORT]] [-t SECONDS] VERB [ARGS...]
 *
 * The options before the verb say which node to talk to and how long to
 * wait; the verbs that talk to a node take the same options after the verb
 * too, and those win.  They reach the verb as the environment variables
 * the verbs read (RINGKV_ADDR, RINGKV_TIMEOUT), the way git hands
 * --git-dir on as GIT_DIR, so the order of precedence is one rule: the
 * verb's option, then the option before the verb, then the environment,
 * then the default (127.0.0.1:7370, 5 s).
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_cluster.h"
#include "cli_data.h"
#include "cli_gossip.h"
#include "cli_key.h"
#include "cli_placement.h"
#include "cli_preflist.h"
#include "cli_replicas.h"
#include "cli_verify.h"
#include "cli_workload.h"
#include "man.h"
#include "respc.h"

static const struct cli_verb ringkv_verbs[] = {
    {"placement", cli_placement, "check|sim|explain ...   offline placement tools"},
    {"gossip", cli_gossip,
     "sim [--nodes N,...] [--seed S] ...   the real gossip code on a simulated network"},
    {"get", cli_data_get, "[--hex] [--json] KEY   a key's value, or (nil)"},
    {"set", cli_data_set, "[--hex] [--json] KEY VALUE   set a key's value"},
    {"del", cli_data_del, "[--hex] [--json] KEY...   delete keys; prints how many existed"},
    {"call", cli_data_call,
     "[--json] COMMAND [ARG...]   any command, its reply as redis-cli shows it"},
    {"status", cli_cluster_status,
     "[--json] [--wait converged | --deep]   the members as a node sees them; has the ring "
     "converged? --deep: each member's own view, asked through that node"},
    {"members", cli_cluster_members,
     "[--json]   the failure detector's view: phi, last heard, generation of each member"},
    {"ring", cli_cluster_ring,
     "[--rf N] [--json | --dot]   the ring's arcs with their preference lists"},
    {"preflist", cli_preflist,
     "[--hex] [--json] KEY   a key's replicas and fallbacks, up or down, and why the walk skipped "
     "each node it passed"},
    {"remove", cli_cluster_remove,
     "[--json] ID   remove a member the node sees down from the cluster (and its ring)"},
    {"leave", cli_cluster_leave,
     "[--json] [NODE]   the node asked (or NODE, a member it knows) hands its arcs to the others "
     "and stops"},
    {"tokens", cli_cluster_tokens,
     "[--json] [--dry-run] [--force] NODE N   NODE's token count becomes N at run time: the arcs "
     "that move are handed off first; saved, it overrides the configured count"},
    {"transfers", cli_cluster_transfers,
     "[--json] [--watch [SECONDS]]   the node's ownership handoff: each arc copied in or out, "
     "with keys, bytes, rate and ETA; --watch: until no change is under way"},
    {"replicas", cli_replicas,
     "[--hex] [--json] KEY   what each replica of a key holds now (present, tombstone, version "
     "vector, value size and digest), asked through one node, whether they agree, and the hints "
     "other nodes hold for each"},
    {"hints", cli_hints,
     "[-H ...]... [--all] [--json]   each node's hint backlog per target; --all: every member "
     "the node knows, at its announced client address"},
    {"keygen", cli_key_keygen, "[--json] [FILE]   a new cluster key: printed, or FILE (mode 0600)"},
    {"peer-check", cli_key_peer_check,
     "--cluster-key FILE [-t SECONDS] [--json] HOST[:PORT]   open a sealed channel to a peer port"},
    {"workload", cli_workload,
     "--keys N --duration SECONDS --history FILE [-H ...]... [--mix R:W:D] [--causal] ...   "
     "a bounded load that records every operation"},
    {"verify", cli_verify,
     "[-H ...]... [--json] [--monotonic] [--allow-loss-after-us T] HISTORY   is every "
     "acknowledged write of a history there?"},
};

#define RINGKV_VERBS (sizeof(ringkv_verbs) / sizeof(ringkv_verbs[0]))

static int global_check_addr(const char *opt, const char *value, char *err, size_t err_len)
{
    struct respc_opts o;

    respc_opts_init(&o);
    return respc_opts_set_addr(&o, value, opt, err, err_len);
}

static int global_check_timeout(const char *opt, const char *value, char *err, size_t err_len)
{
    struct respc_opts o;

    respc_opts_init(&o);
    return respc_opts_set_timeout(&o, value, opt, err, err_len);
}

/* The options before the verb, and the variables that carry them to it. */
static const struct ringkv_global {
    const char *short_opt, *long_opt;
    const char *env;
    int (*check)(const char *opt, const char *value, char *err, size_t err_len);
    const char *arg, *help;
} ringkv_globals[] = {
    {"-H", "--host", CLI_ENV_ADDR, global_check_addr, "HOST[:PORT]",
     "a node's client address (default $" CLI_ENV_ADDR ", else " RESPC_HOST_DEFAULT ":7370)"},
    {"-t", "--timeout", CLI_ENV_TIMEOUT, global_check_timeout, "SECONDS",
     "give up on a node after this long (default $" CLI_ENV_TIMEOUT ", else 5)"},
};

#define RINGKV_GLOBALS (sizeof(ringkv_globals) / sizeof(ringkv_globals[0]))

static void ringkv_usage_globals(void)
{
    fprintf(stderr, "options before the verb (the verbs that talk to a node also take them "
                    "after it):\n");
    for (size_t i = 0; i < RINGKV_GLOBALS; i++) {
        const struct ringkv_global *g = &ringkv_globals[i];
        fprintf(stderr, "  %s, %-9s %-11s  %s\n", g->short_opt, g->long_opt, g->arg, g->help);
    }
    fprintf(stderr, "  $%s, when set, is sent with AUTH before each command\n", CLI_ENV_PASSWORD);
}

/*
 * The value of global option g in argv[*i] ("-H v", "-Hv", "--host v",
 * "--host=v"), advancing *i past it; NULL when argv[*i] is not g.
 */
static const char *global_value(const struct ringkv_global *g, int argc, char **argv, int *i,
                                bool *missing)
{
    const char *a = argv[*i];
    size_t sl = strlen(g->short_opt), ll = strlen(g->long_opt);
    const char *inline_value = NULL;

    if (strncmp(a, g->long_opt, ll) == 0 && (a[ll] == '\0' || a[ll] == '=')) {
        inline_value = a[ll] == '=' ? a + ll + 1 : NULL;
    } else if (strncmp(a, g->short_opt, sl) == 0) {
        inline_value = a[sl] != '\0' ? a + sl : NULL;
    } else {
        return NULL;
    }
    if (inline_value != NULL) {
        return inline_value;
    }
    *missing = *i + 1 >= argc;
    return *missing ? a : argv[++*i];
}

/*
 * Apply the options before the verb; *first is the verb's index.  A bad
 * or unknown option is a usage error.
 */
static int ringkv_globals_apply(int argc, char **argv, int *first)
{
    char err[512];
    int i = 1;

    for (; i < argc && argv[i][0] == '-' && strcmp(argv[i], "--help") != 0; i++) {
        const struct ringkv_global *g = NULL;
        const char *value = NULL;
        bool missing = false;
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        for (size_t k = 0; k < RINGKV_GLOBALS && value == NULL; k++) {
            g = &ringkv_globals[k];
            value = global_value(g, argc, argv, &i, &missing);
        }
        if (value == NULL || missing) {
            fprintf(stderr, "ringkv: %s option '%s'\n", missing ? "no value for" : "unknown",
                    argv[i]);
            return CLI_USAGE;
        }
        if (g->check(g->short_opt, value, err, sizeof(err)) != 0) {
            fprintf(stderr, "ringkv: %s\n", err);
            return CLI_USAGE;
        }
        if (setenv(g->env, value, 1) != 0) {
            return cli_error("cannot set %s: out of memory", g->env);
        }
    }
    *first = i;
    return 0;
}

static bool ringkv_is_verb(const char *name)
{
    for (size_t i = 0; i < RINGKV_VERBS; i++) {
        if (strcmp(ringkv_verbs[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

/* A verb's usage line: its arguments, then after three spaces its purpose. */
static void ringkv_man_verb(const struct cli_verb *v)
{
    const char *gap = strstr(v->usage, "   ");
    size_t args_len = gap != NULL ? (size_t)(gap - v->usage) : strlen(v->usage);

    printf(".TP\n.B ringkv ");
    man_text(stdout, v->name);
    printf("\n.I \"");
    man_text_n(stdout, v->usage, args_len);
    printf("\"\n.br\n");
    man_text(stdout, gap != NULL ? gap + strspn(gap, " ") : "");
    printf("\n");
}

/*
 * --help-man, a hidden option: the OPTIONS, ENVIRONMENT and COMMANDS
 * sections of ringkv(1) from the tables above, for man/gen.sh.
 */
static int ringkv_man(void)
{
    printf(".SH OPTIONS\n");
    for (size_t i = 0; i < RINGKV_GLOBALS; i++) {
        const struct ringkv_global *g = &ringkv_globals[i];
        printf(".TP\n.BI \"");
        man_text(stdout, g->short_opt);
        printf(" \" ");
        man_text(stdout, g->arg);
        printf(" \", ");
        man_text(stdout, g->long_opt);
        printf(" \" ");
        man_text(stdout, g->arg);
        printf("\n");
        man_text(stdout, g->help);
        printf("\n");
    }
    printf(".SH ENVIRONMENT\n");
    for (size_t i = 0; i < RINGKV_GLOBALS; i++) {
        printf(".TP\n.B %s\nthe value of ", ringkv_globals[i].env);
        man_text(stdout, ringkv_globals[i].long_opt);
        printf(" when it is not given\n");
    }
    printf(".TP\n.B %s\nwhen set, sent with AUTH before each command\n", CLI_ENV_PASSWORD);
    printf(".SH COMMANDS\n");
    for (size_t i = 0; i < RINGKV_VERBS; i++) {
        ringkv_man_verb(&ringkv_verbs[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int first, rc;

    if (argc == 2 && strcmp(argv[1], "--help-man") == 0) {
        return ringkv_man();
    }
    if (sodium_init() < 0) {
        return cli_error("libsodium failed to initialise");
    }
    rc = ringkv_globals_apply(argc, argv, &first);
    if (rc != 0) {
        ringkv_usage_globals();
        return rc;
    }
    rc = cli_dispatch("ringkv", ringkv_verbs, RINGKV_VERBS, argc - first, argv + first);
    if (first == argc || !ringkv_is_verb(argv[first])) {
        ringkv_usage_globals();
    }
    return rc;
}
