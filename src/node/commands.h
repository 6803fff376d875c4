/*
 * commands.h - the client port's command table: the Redis subset a Redis
 * user expects, the causal KGET/KSET, and RINGKV admin verbs.
 *
 * Each command has Redis's arity convention (n: exactly n words with the
 * name, -n: at least n), flags, and a handler that either writes its reply
 * at once or starts writes and replies when they complete (CMD_ASYNC).
 * Errors follow Redis: "-ERR ..." for syntax and limits, "-NOAUTH",
 * "-WRONGPASS"; and ringkv's own prefixes: "-CONFLICT" when a causal write's
 * context is stale or a key holds siblings a plain GET cannot return,
 * "-NOREPLICAS" and "-TRYAGAIN" when a quorum cannot be reached.
 */
#ifndef RINGKV_COMMANDS_H
#define RINGKV_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>

struct client;
struct pending;

enum command_flags {
    CMD_WRITE = 1 << 0,  /* writes data: runs asynchronously */
    CMD_READ = 1 << 1,   /* reads data */
    CMD_ADMIN = 1 << 2,  /* from loopback only, unless admin-from any */
    CMD_NOAUTH = 1 << 3, /* allowed before AUTH */
    /* a write decided on what its key holds (DEL, EXPIRE, PERSIST): under replication a quorum
       read decides it, so to the pipeline's order (client.c) it is a read too */
    CMD_DECIDED = 1 << 4,
    /* changes how the connection's replies are encoded (HELLO): starts only once every reply
       before it is complete, so those keep the protocol they were asked in */
    CMD_PROTO = 1 << 5,
};

enum { CMD_DONE = 0, CMD_ASYNC = 1 };

struct command {
    const char *name; /* lower case */
    int arity;
    unsigned flags;
    int (*run)(struct client *c, struct pending *p);
    int first_key, last_key, key_step; /* COMMAND INFO's key positions */
    const char *summary;               /* COMMAND DOCS */
};

extern const struct command commands[];
extern const size_t commands_count;

/* Look a command up by name, any case; NULL when unknown. */
const struct command *commands_find(const char *name, size_t len, int *index);

/*
 * Resolve p's command, check arity, authentication, admin rights and
 * limits, and run it.  Returns CMD_DONE (reply written) or CMD_ASYNC.
 */
int commands_run(struct client *c, struct pending *p);

/* The flags of p's command (enum command_flags), resolving it by name; 0 when unknown. */
unsigned commands_flags(struct pending *p);

#endif
