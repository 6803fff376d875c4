/*
 * cli_gossip.h - `ringkv gossip VERB`: the gossip simulator (cli_gossip.c).
 */
#ifndef RINGKV_CLI_GOSSIP_H
#define RINGKV_CLI_GOSSIP_H

/* Entry point for `ringkv gossip VERB ...`; argv[0] is "gossip". */
int cli_gossip(int argc, char **argv);

/* `ringkv gossip sim ...`; argv[0] is "sim". */
int cli_gossip_sim(int argc, char **argv);

#endif
