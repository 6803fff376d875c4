/*
 * cli_workload.h - `ringkv workload`: a bounded client workload that
 * records every operation to a history (cli_workload.c); and the list of
 * nodes (-H, repeated) it shares with `ringkv verify`.
 */
#ifndef RINGKV_CLI_WORKLOAD_H
#define RINGKV_CLI_WORKLOAD_H

#include <stddef.h>

#include "respc.h"

/* -H given at most this often: far above a testbed's nodes. */
#define CLI_NODES_MAX 64
/* "[host]:port" */
#define CLI_NODE_NAME_MAX (ADDR_HOST_MAX + 10)

struct cli_nodes {
    struct respc_opts base; /* timeout, password, and the address when no -H is given */
    struct respc_opts o[CLI_NODES_MAX];
    char name[CLI_NODES_MAX][CLI_NODE_NAME_MAX]; /* as the history records it */
    size_t n;
};

/* Add the node at addr ("HOST[:PORT]"); a bad address or too many is a usage error (CLI_USAGE). */
int cli_nodes_add(struct cli_nodes *ns, const char *addr, const char *usage);

/*
 * Set base from -t's value (NULL: none) and the environment as every verb
 * does (cli_data_conn_set()), and give every added node base's timeout and
 * password.  CLI_USAGE on a bad value.
 */
int cli_nodes_timeout(struct cli_nodes *ns, const char *timeout, const char *usage);

/* o's address as the history names a node: "host:port", "[v6]:port". */
void cli_node_name(const struct respc_opts *o, char *out, size_t len);

/* The verb; argv[0] is "workload". */
int cli_workload(int argc, char **argv);

#endif
