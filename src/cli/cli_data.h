/*
 * cli_data.h - the `ringkv` verbs that read and write data on a node
 * (get, set, del, call), and what every verb that talks to a node's client
 * port shares: its options and one request with its errors reported.
 */
#ifndef RINGKV_CLI_DATA_H
#define RINGKV_CLI_DATA_H

#include <stdbool.h>
#include <stddef.h>

#include "respc.h"

/*
 * The environment of the verbs that talk to a node: the address and the
 * timeout where the command line gives none, and the password, which is
 * never an option (a command line is visible to every user of the host).
 */
#define CLI_ENV_ADDR "RINGKV_ADDR"
#define CLI_ENV_TIMEOUT "RINGKV_TIMEOUT"
#define CLI_ENV_PASSWORD "RINGKV_PASSWORD"

/* The options of a verb that talks to a node's client port. */
struct cli_data_opts {
    struct respc_opts conn; /* -H/--host, -t/--timeout, RINGKV_* */
    bool json;              /* --json: one JSON document on stdout */
    bool hex;               /* --hex: keys and values are given and shown as hex */
};

/* Flags of cli_data_opts_parse(). */
enum {
    CLI_DATA_HEX = 1,  /* the verb takes --hex */
    CLI_DATA_STOP = 2, /* options end at the first operand (call: the command's own words) */
};

/*
 * Fill o from argv's options, then the environment for what they left
 * out, then the defaults; on success optind is the first operand.  A bad
 * option, or a bad variable that is used, is reported and returns
 * CLI_USAGE.
 */
int cli_data_opts_parse(int argc, char **argv, const char *usage, unsigned flags,
                        struct cli_data_opts *o);

/*
 * Set o's address and timeout from a verb's -H and -t values (NULL when
 * not given), else the environment; the defaults stay where neither gives
 * one.  The password comes from the environment only.  For verbs with
 * options of their own, which parse their command line themselves.  A bad
 * value is reported with usage and returns CLI_USAGE.
 */
int cli_data_conn_set(struct respc_opts *o, const char *addr, const char *timeout,
                      const char *usage);

/*
 * Connect, send argv[0..argc) (lens as respc_call()), read the reply and
 * close.  Returns CLI_OK with *reply (the caller frees it), or CLI_ERROR
 * after one sentence on stderr: the node cannot be reached, or it answered
 * with an error reply (its text is the sentence).
 */
int cli_data_request(const struct respc_opts *o, size_t argc, const char *const *argv,
                     const size_t *lens, struct resp_reply **reply);

/* The verbs; argv[0] is the verb. */
int cli_data_get(int argc, char **argv);
int cli_data_set(int argc, char **argv);
int cli_data_del(int argc, char **argv);
int cli_data_call(int argc, char **argv);

#endif
