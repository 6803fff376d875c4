/*
 * cli_replicas.h - the `ringkv` verbs that show where a key's copies are
 * and what is still owed to them: replicas (what each replica of a key
 * holds now, asked through one node) and hints (each node's hint backlog
 * per target).  The views are in cli_view.h.
 */
#ifndef RINGKV_CLI_REPLICAS_H
#define RINGKV_CLI_REPLICAS_H

/*
 * The verbs; argv[0] is the verb.  replicas exits 0 when every replica
 * answered, 3 when some did not, 1 when the node cannot be asked; hints 0
 * when every node asked answered, 3 when some did not, 1 when the one node
 * asked cannot be.
 */
int cli_replicas(int argc, char **argv);
int cli_hints(int argc, char **argv);

#endif
