/*
 * cli.h - what every `ringkv` verb shares: exit codes, verb dispatch through
 * a table, error messages, whole-file reads and JSON output.
 *
 * Exit codes are part of the CLI's contract for scripts: 0 ok, 1 error (one
 * sentence on stderr), 2 usage, 3 ran but the result is unhealthy.
 */
#ifndef RINGKV_CLI_H
#define RINGKV_CLI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

enum cli_exit {
    CLI_OK = 0,
    CLI_ERROR = 1,
    CLI_USAGE = 2,
    CLI_UNHEALTHY = 3,
};

struct cli_verb {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the verb */
    const char *usage;                 /* one line: arguments and purpose */
};

/*
 * Run the verb named argv[0] from table[0..n).  Unknown or missing verbs
 * print the table as usage and return CLI_USAGE.  prog names the command
 * for messages ("ringkv placement").
 */
int cli_dispatch(const char *prog, const struct cli_verb *table, size_t n, int argc, char **argv);

/* Print "ringkv: <message>" and a newline on stderr; returns CLI_ERROR. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "ringkv: <message>" and "usage: <usage>" on stderr; returns CLI_USAGE. */
int cli_usage(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Read a whole file (or standard input for "-") into a new buffer, which
 * the caller frees.  The buffer is NUL-terminated past len.  Errors are
 * reported by cli_error() and returned as RK_EIO or RK_ENOMEM.
 */
int cli_read_file(const char *path, char **buf, size_t *len);

/* Print j as indented JSON on stdout and release it; returns CLI_OK. */
int cli_json_print(json_t *j);

/*
 * Parse a decimal integer in [lo, hi] for the option named opt; reports a
 * usage error naming the option on failure.
 */
bool cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out);

/* Parse 32 hex digits into a ring seed. */
bool cli_parse_seed(const char *s, uint8_t seed[RING_SEED_LEN]);

/*
 * A member list for the offline placement tools, gathered from --node
 * ID,RACK,TOKENS options and from files of `node ID RACK TOKENS` lines (the
 * vector file's node syntax; '#' comments and blank lines allowed).
 */
struct cli_members {
    struct ring_member *m; /* ids and racks owned, freed by cli_members_free() */
    size_t n, cap;
};

/* Add one "ID,RACK,TOKENS" member; reports and returns an error on bad input. */
int cli_members_add_spec(struct cli_members *ms, const char *spec);
/* Add every node line of a file; errors name the file and the line. */
int cli_members_add_file(struct cli_members *ms, const char *path);
void cli_members_free(struct cli_members *ms);
/* Build a ring of the members; reports the offending member on error. */
int cli_members_ring(const struct cli_members *ms, const uint8_t seed[RING_SEED_LEN],
                     struct ring **out);

#endif
