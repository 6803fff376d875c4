/*
 * ringkv.c - main() of the `ringkv` command: one CLI for everything a person
 * does with a ringkv cluster.  Each verb lives in its own cli_*.c module;
 * this file only dispatches.
 */
#include <sodium.h>
#include <stdio.h>

#include "cli.h"
#include "cli_placement.h"

static const struct cli_verb ringkv_verbs[] = {
    {"placement", cli_placement, "check|sim|explain ...   offline placement tools"},
};

int main(int argc, char **argv)
{
    if (sodium_init() < 0) {
        return cli_error("libsodium failed to initialise");
    }
    return cli_dispatch("ringkv", ringkv_verbs, sizeof(ringkv_verbs) / sizeof(ringkv_verbs[0]),
                        argc - 1, argv + 1);
}
