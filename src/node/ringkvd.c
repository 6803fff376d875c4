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
 * runtime settings (reload.h).  SIGHUP is blocked from the first line of
 * main() until server_run() watches it, so a reload asked for while the
 * node starts (`systemctl reload` right after `start`) waits for the loop
 * instead of killing the process with SIGHUP's default action.
 */
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "autoconf.h"
#include "channel.h"
#include "settings.h"
#include "log.h"
#include "man.h"
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

/* What a bare number of d means, for the man pages; "" when it needs no unit. */
static const char *man_unit(const struct settings_def *d)
{
    if (strcmp(d->unit, "ms") == 0) {
        return "milliseconds";
    }
    if (strcmp(d->unit, "s") == 0) {
        return "seconds";
    }
    return d->unit;
}

/* One setting as a config file entry of ringkvd.conf(5). */
static void man_setting_conf(const struct settings_def *d)
{
    char values[256];

    settings_describe(d, values, sizeof(values));
    printf(".TP\n.BI \"");
    man_text(stdout, d->name);
    printf(" \" value\n");
    man_text(stdout, d->doc);
    printf(".\n.br\nValues: ");
    man_text(stdout, values);
    if (man_unit(d)[0] != '\0') {
        printf("; a bare number is in %s", man_unit(d));
    }
    printf(".\n.br\nDefault: ");
    man_text(stdout, d->def[0] != '\0' ? d->def : "none");
    printf(".\n.br\n%s\n", d->runtime ? "Changes at run time (SIGHUP, CONFIG SET)."
                                      : "Read at start; a reload (SIGHUP) refuses a new value.");
}

/* One setting as a command-line flag of ringkvd(8). */
static void man_setting_flag(const struct settings_def *d)
{
    printf(".TP\n.BI \\-\\-");
    man_text(stdout, d->name);
    printf(" \" value\"\n");
    man_text(stdout, d->doc);
    printf(" (default: ");
    man_text(stdout, d->def[0] != '\0' ? d->def : "none");
    printf(")\n");
}

/*
 * --help-man=conf|flags, a hidden option: the settings table as the
 * entries of ringkvd.conf(5) or the flags of ringkvd(8), for man/gen.sh.
 */
static int print_man(const char *part)
{
    bool conf = strcmp(part, "--help-man=conf") == 0;

    if (!conf && strcmp(part, "--help-man=flags") != 0) {
        fprintf(stderr, "ringkvd: --help-man=conf or --help-man=flags\n");
        return 2;
    }
    for (size_t i = 0; i < settings_defs_count; i++) {
        conf ? man_setting_conf(&settings_defs[i]) : man_setting_flag(&settings_defs[i]);
    }
    return 0;
}

/* --test-config: every check a start would make short of opening the store. */
static int test_config(const struct settings *cfg)
{
    struct channel_key *key = NULL;
    const char *largest;
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
    fprintf(stderr, "ringkvd: configuration OK; it needs %llu file descriptors (LimitNOFILE=)\n",
            (unsigned long long)settings_fd_need(cfg, &largest));
    return 0;
}

int main(int argc, char **argv)
{
    struct settings cfg;
    struct settings_cli cli;
    struct server *n;
    char err[512];
    sigset_t hup;
    int rc;

    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    sigprocmask(SIG_BLOCK, &hup, NULL); /* until libev's watcher unblocks it */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a write past the file size limit fails with EFBIG: a full disk */
    /*
     * Keep freed heap instead of handing it back at once: the store's
     * checkpoints allocate and free LMDB's dirty pages (tens of MiB) each
     * time, and growing a thread's heap again costs an mprotect() and a
     * page fault per page (measured: a fifth of a checkpoint's CPU).
     */
    mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
    mallopt(M_MMAP_THRESHOLD, 4 * 1024 * 1024);
    if (argc == 2 && strncmp(argv[1], "--help-man", 10) == 0) {
        return print_man(argv[1]);
    }
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
    n->config_file = cli.settings_file;
    rc = server_run(n);
    server_destroy(n);
    return rc;
}
