/*
 * ringkvd.c - main() of the node daemon.
 *
 * Exit codes: 0 after a clean shutdown, or --test-config with a good
 * configuration; 1 when --test-config finds a problem; 2 when the node
 * refuses to start (a bad setting, an unusable key file, a data directory
 * of another node or cluster or formed with other cluster settings, an
 * address in use, its node id held by a live member, a member that
 * refused its cluster settings while it joined), always with one line on
 * stderr naming the setting at fault, or a descriptor limit too small for
 * the connections the settings allow); 3 when it stopped because another node removed it from the
 * cluster (`ringkv remove`).
 *
 * Signals: SIGTERM or SIGINT stop the node gracefully (a second one at
 * once); SIGHUP reads the config file and flags again and applies the
 * runtime settings (reload.h).
 */
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "autoconf.h"
#include "channel.h"
#include "settings.h"
#include "log.h"
#include "reload.h"
#include "server.h"

static void usage(void)
{
    printf("usage: ringkvd [CONFIG-FILE] [--config FILE] [--test-config] [--SETTING VALUE ...]\n\n"
           "settings (also `name value` lines of the config file; flags win):\n");
    for (size_t i = 0; i < settings_defs_count; i++) {
        printf("  --%-18s %s (default: %s)\n", settings_defs[i].name, settings_defs[i].doc,
               settings_defs[i].def[0] ? settings_defs[i].def : "none");
    }
}

/* --test-config: every check a start would make short of opening the store. */
static int test_config(const struct settings *cfg)
{
    struct channel_key *key = NULL;
    char err[512];
    int rc = settings_check(cfg, err, sizeof(err));

    settings_print(cfg, stdout);
    if (rc == 0 && channel_key_load(&key, cfg->cluster_key, err + 13, sizeof(err) - 13) != 0) {
        memcpy(err, "cluster-key: ", 13);
        rc = -1;
    }
    channel_key_free(key);
    if (rc != 0) {
        fprintf(stderr, "ringkvd: %s\n", err);
        return 1;
    }
    fprintf(stderr, "ringkvd: configuration OK\n");
    return 0;
}

int main(int argc, char **argv)
{
    struct settings cfg;
    struct settings_cli cli;
    struct server *n;
    char err[512];
    int rc;

    signal(SIGPIPE, SIG_IGN);
    if (sodium_init() < 0) {
        fprintf(stderr, "ringkvd: libsodium failed to initialise\n");
        return 2;
    }
    rc = settings_from_args(&cfg, argc, argv, &cli, err, sizeof(err));
    if (cli.help || cli.version) {
        cli.help ? usage() : (void)printf("ringkvd %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "ringkvd: %s\n", err);
        return 2;
    }
    if (cli.test_config) {
        return test_config(&cfg);
    }
    if (settings_check(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringkvd: %s\n", err);
        return 2;
    }
    if (reload_fd_limit(&cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringkvd: %s\n", err);
        return 2;
    }
    log_init(cfg.id, NULL);
    log_set_level(cfg.log_level);
    if (server_create(&n, &cfg, err, sizeof(err)) != 0) {
        fprintf(stderr, "ringkvd: %s\n", err);
        return 2;
    }
    n->argc = argc; /* SIGHUP reads the same file and flags again (reload.h) */
    n->argv = argv;
    rc = server_run(n);
    server_destroy(n);
    return rc;
}
