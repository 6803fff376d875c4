/*
 * client.h - connections on the client (RESP) port.
 *
 * A connection reads requests, parses them (proto/resp.h), starts them
 * and writes the replies back in command order, whatever order their work
 * finishes in.  Reads and writes are asynchronous (kv.h) and run
 * concurrently, except that a read waits for this connection's earlier
 * writes of its keys to complete (it reads its own writes) and a write
 * waits for this connection's earlier reads of its keys (it never
 * overtakes them).  A read or write of named keys may start past earlier
 * ones that wait, when it shares no key with them and is not a write
 * passing a write (one connection's writes apply in order); every other
 * command starts only after all before it (client.c states the rules).
 * Replies are gathered and written once per event-loop iteration, and the
 * writes of an iteration, from every connection, reach the store in one
 * submission (client_loop_start()).
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
struct read_cmd;
struct txn;
struct txn_exec;

#define CLIENT_NAME_MAX 128
/* Before AUTH: arguments of a command, and bytes of one (Redis's unauthenticated limits). */
#define CLIENT_PREAUTH_ARGS_MAX 10
#define CLIENT_PREAUTH_BULK_MAX (16 * 1024)
/* Before AUTH, reply bytes unsent past which reading pauses until the client reads them. */
#define CLIENT_PREAUTH_OUTPUT_MAX (64 * 1024)

/* One command of a connection, from parse to reply. */
struct pending {
    struct pending *next;
    struct client *c;
    struct resp_cmd *cmd;
    const struct command *command;
    int index; /* into the command table; -1 for none */
    bool started;
    bool done;        /* its reply is complete */
    bool in_flight;   /* started and waiting on asynchronous work (reads, writes, peers) */
    bool error;       /* its reply is an error */
    struct buf reply; /* the reply, while an earlier one is still pending */
    uint64_t start_ns;
    /* a data command's operations: how many are left, what they found */
    size_t left;
    int first_error;
    unsigned quorum;                   /* KGET R n, KSET W n; 0: the cluster's */
    bool want_old;                     /* SET GET, GETSET, GETDEL: reply with the old value */
    enum store_expiry expiry;          /* a write's expiry rule (SET EX, EXPIRE, ...) */
    uint64_t expire_ms;                /* and its expiry, ms since the epoch; 0: none */
    unsigned err_answered, err_needed; /* with first_error NOREPLICAS or TRYAGAIN */
    bool err_read;                     /* first_error is of the quorum read a write decides on */
    int read_error; /* EXISTS: the first of its reads that failed (err_answered, err_needed) */
    int64_t count;
    struct vclock context;
    struct kv_write write1, *writes; /* writes == &write1 for one */
    size_t n_writes;
    struct kv_read read1, *reads; /* reads == &read1 for one */
    size_t n_reads;
    const struct read_cmd *read_cmd; /* commands.c: what each read's result makes */
    size_t next_slot;                /* reads: the first whose reply is not yet written */
    struct buf *slots;               /* reads: replies that completed ahead of an earlier one */
    bool *slot_ready;
    /* a command EXEC runs (txn.h): outside the pipeline, its completion goes to the EXEC */
    struct txn_exec *txn;
    bool writes_borrowed; /* writes are slots of the EXEC's group, not p's own */
    /* client.c's start passes: commands_flags() and the data flags once resolved, the first
       key's hash once computed */
    bool order_known, hash_known;
    unsigned order_flags, order_data;
    uint64_t order_hash;
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
    bool closing;      /* read no more; close once the replies are written */
    bool dead;         /* closed; freed once its writes in flight complete */
    bool read_paused;  /* pipeline-max reached */
    bool quit;         /* QUIT ran: nothing after it runs */
    bool flush_queued; /* on the node's list of connections to flush */
    struct client *flush_next;
    bool process_queued; /* on the node's list of connections to process (client_finish()) */
    struct client *process_next;
    char addr[NET_ADDR_TEXT];
    char name[CLIENT_NAME_MAX + 1];
    struct pending *head, *tail;
    struct pending *next_start; /* every pending before it has started (or is done) */
    size_t n_pending;
    size_t n_in_flight; /* entries in_flight */
    uint64_t created_ms, last_ms;
    uint64_t commands;
    int depth;             /* event handlers of this client on the stack: free only at 0 */
    struct pending *spare; /* finished entries kept for reuse */
    uint64_t batch_ns;     /* when the commands being started were started */
    size_t n_spare;
    struct txn *multi; /* inside MULTI: the queued commands (txn.h); NULL outside */
};

/* Take over an accepted connection. */
void client_accept(struct server *n, int fd, const struct sockaddr_storage *addr);

/*
 * Set up the node's per-iteration step (an ev_prepare watcher, run before
 * the event loop sleeps): move on the connections whose commands finished
 * in this iteration (their replies taken, what waited for them started),
 * hand the writes queued in this iteration to the store in one submission
 * (kv_flush()), then write every connection's gathered replies, one send
 * per connection.
 */
void client_loop_start(struct server *n);

/* Close now; why is logged.  Operations in flight finish, then the client is freed. */
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

/* QUIT: reply, then run nothing after it and close once the replies are written. */
void client_quit(struct pending *p);

/* An asynchronous command wrote its reply: complete it; the connection moves on (its reply
 * taken, what waited for it started) in this iteration's ev_prepare step. */
void client_finish(struct pending *p);

/*
 * For EXEC (txn.h): an entry for cmd (owned by it from then on) outside
 * the pipeline: its reply stays in its own buffer and its completion goes
 * to txn_sub_done().  client_sub_start() runs it (CMD_DONE or CMD_ASYNC);
 * client_sub_free() frees it once done.
 */
struct pending *client_sub_new(struct client *c, struct resp_cmd *cmd, struct txn_exec *t);
int client_sub_start(struct pending *p);
void client_sub_free(struct pending *p);

#endif
