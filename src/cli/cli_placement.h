/*
 * cli_placement.h - `ringkv placement ...`: offline placement tools that need
 * no running node: check a vector file, simulate balance and movement,
 * explain where a key goes.
 */
#ifndef RINGKV_CLI_PLACEMENT_H
#define RINGKV_CLI_PLACEMENT_H

/* Entry point for `ringkv placement VERB ...`; argv[0] is "placement". */
int cli_placement(int argc, char **argv);

/* `ringkv placement sim ...` (src/cli/cli_sim.c); argv[0] is "sim". */
int cli_placement_sim(int argc, char **argv);

/* `ringkv placement explain ...` (src/cli/cli_explain.c); argv[0] is "explain". */
int cli_placement_explain(int argc, char **argv);

#endif
