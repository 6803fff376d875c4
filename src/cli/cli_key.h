/*
 * cli_key.h - the `ringkv` verbs about nodes themselves: keygen (a new
 * cluster key) and peer-check (can this key open a sealed channel to a
 * node's peer port?).  status, the cluster as a node sees it, is in
 * cli_cluster.h.
 */
#ifndef RINGKV_CLI_KEY_H
#define RINGKV_CLI_KEY_H

/* The verbs; argv[0] is the verb. */
int cli_key_keygen(int argc, char **argv);
int cli_key_peer_check(int argc, char **argv);

#endif
