/*
 * cli_preflist.h - `ringkv preflist KEY`: a key's preference list, its
 * fallbacks and the skipped steps of its walk, as one node sees them.
 */
#ifndef RINGKV_CLI_PREFLIST_H
#define RINGKV_CLI_PREFLIST_H

/* The verb; argv[0] is the verb.  Exits 0, 1 when the node cannot be asked, 2 on usage. */
int cli_preflist(int argc, char **argv);

#endif
