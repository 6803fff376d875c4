/*
 * client.h - connections on the client (RESP) port.
 *
 * A connection reads requests, parses them (proto/resp.h), runs them in
 * order and writes the replies back in that same order, whatever order
 * their work finishes in.  Writes are asynchronous (kv.h): consecutive
 * writes of a pipeline are all handed to the store at once, so they share
 * a group commit, while any other command waits until the writes before it
 * have completed, so a pipeline reads its own writes.
 *
 * Limits, all settings (settings.h): a connection beyond maxclients gets
 * Redis's error and is closed; more than pipeline-max queued commands
 * pause reading until replies drain; a command larger than
 * query-buffer-max, a protocol error, or unread replies beyond
 * output-buffer-max close the connection; an argument over value-max gets
 * an error reply; a connection idle for timeout is closed.
 */
#ifndef RINGKV_CLIENT_H
#define RINGKV_CLIENT_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "buf.h"
#include "kv.h"
#include "net.h"
#include "resp.h"

struct server;
struct command;

#define CLIENT_NAME_MAX 128
/* Before AUTH: arguments of a command, and bytes of one (Redis's unauthenticated limits). */
#define CLIENT_PREAUTH_ARGS_MAX 10
#define CLIENT_PREAUTH_BULK_MAX (16 * 1024)

/* One command of a connection, from parse to reply. */
struct pending {
    struct pending *next;
    struct client *c;
    struct resp_cmd *cmd;
    const struct command *command;
    int index; /* into the command table; -1 for none */
    bool started;
    bool done;        /* its reply is complete */
    bool writing;     /* writes of it are in flight */
    bool error;       /* its reply is an error */
    struct buf reply; /* the reply, while an earlier one is still pending */
    uint64_t start_ns;
    /* state of a write command: its writes, how many are left, what they found */
    struct kv_write *writes;
    size_t n_writes, left;
    int first_error;
    int64_t count;
    struct vclock context;
};

struct client {
    struct server *node;
    struct client *prev, *next;
    int fd;
    uint64_t id;
    ev_io rio, wio;
    ev_timer idle;
    struct buf in, out;
    struct resp_parser parser;
    int proto; /* 2 or 3 */
    bool authed;
    bool loopback;
    bool closing;     /* read no more; close once the replies are written */
    bool dead;        /* closed; freed once its writes in flight complete */
    bool read_paused; /* pipeline-max reached */
    char addr[NET_ADDR_TEXT];
    char name[CLIENT_NAME_MAX + 1];
    struct pending *head, *tail;
    struct pending *next_start; /* first pending not started */
    size_t n_pending;
    size_t n_writing;
    uint64_t created_ms, last_ms;
    uint64_t commands;
    int depth;             /* event handlers of this client on the stack: free only at 0 */
    struct pending *spare; /* finished entries kept for reuse */
    uint64_t batch_ns;     /* when the commands being started were started */
    size_t n_spare;
};

/* Take over an accepted connection. */
void client_accept(struct server *n, int fd, const struct sockaddr_storage *addr);

/* Close now; why is logged.  Writes in flight finish, then the client is freed. */
void client_close(struct client *c, const char *why);

/* Node shutdown: read no more, finish what was read, then close. */
void client_stop(struct client *c);

/* --- for command handlers ----------------------------------------------- */

/* Where p's reply goes now: the output, or p's own buffer while earlier replies wait. */
struct buf *client_reply(struct pending *p);

/* Reply with an error ("ERR ...", "CONFLICT ...") and mark the command failed. */
/* The connection gave the password: from its next command on, the settings' limits apply. */
void client_authed(struct client *c);

void client_error(struct pending *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An asynchronous command wrote its reply: complete it and move the connection on. */
void client_finish(struct pending *p);

#endif
