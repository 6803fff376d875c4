/*
 * cli_placement.c - the `ringkv placement` verbs.
 */
#include "cli_placement.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "vector_check.h"

#define CHECK_USAGE "ringkv placement check [--quiet] FILE"

/* `placement check FILE`: verify a vector file, one line per failure. */
static int placement_check(int argc, char **argv)
{
    static const struct option opts[] = {{"quiet", no_argument, NULL, 'q'}, {0, 0, 0, 0}};
    struct vector_check_result res;
    bool quiet = false;
    char *buf;
    size_t len;
    int c, err;

    optind = 1;
    while ((c = getopt_long(argc, argv, "q", opts, NULL)) != -1) {
        if (c != 'q') {
            return cli_usage(CHECK_USAGE, "unknown option");
        }
        quiet = true;
    }
    if (optind != argc - 1) {
        return cli_usage(CHECK_USAGE, "expected one vector file");
    }
    if (cli_read_file(argv[optind], &buf, &len) != 0) {
        return CLI_ERROR;
    }
    err = vector_check_file(buf, len, argv[optind], quiet ? NULL : stdout, &res);
    free(buf);
    if (err != 0) {
        return cli_error("checking %s: %s", argv[optind], rk_strerror(err));
    }
    printf("%zu passed, %zu failed\n", res.passed, res.failed);
    if (res.passed + res.failed == 0) {
        return cli_error("%s holds no hash or key lines: nothing was checked", argv[optind]);
    }
    return res.failed == 0 ? CLI_OK : CLI_ERROR;
}

static const struct cli_verb placement_verbs[] = {
    {"check", placement_check, "[--quiet] FILE   verify a placement vector file"},
    {"explain", cli_placement_explain,
     "[--rf N] [--seed HEX32] [--hex] [--json] (--node ID,RACK,TOKENS ... | --members FILE) KEY"
     "   where a key lives, step by step"},
    {"sim", cli_placement_sim,
     "[--nodes N] [--tokens T[,T...]] [--racks R] [--rf K] [--seeds S] [--seed HEX32] [--keys M]"
     " [--json]   balance and movement of the ring vs other schemes"},
};

int cli_placement(int argc, char **argv)
{
    return cli_dispatch("ringkv placement", placement_verbs,
                        sizeof(placement_verbs) / sizeof(placement_verbs[0]), argc - 1, argv + 1);
}
