/*
 * txn.h - MULTI, EXEC and DISCARD as Redis 7 defines them, on one node.
 *
 * After MULTI a connection's commands are checked (unknown command, arity,
 * authentication, admin rights, keys over key-max, the queue bounds) and
 * queued, each answered +QUEUED; a check that fails answers its error at
 * once and makes the EXEC that follows answer -EXECABORT with nothing run.
 * MULTI, EXEC, DISCARD, WATCH and QUIT are never queued.  EXEC runs the
 * queue in order and answers one array of the replies.  Every write of one
 * EXEC goes to the store as one atomic group (kv_write_atomic()): all of
 * them commit in one transaction or none does, and no write's reply, hence
 * no EXEC reply, leaves before that commit.  A read inside EXEC sees the
 * writes queued before it in the same EXEC: a key written earlier in the
 * transaction answers from that write, any other key from the store.  A
 * connection closed before EXEC applies nothing.
 *
 * No isolation from other connections: writes of other connections may
 * commit between EXEC's reads and its own commit (WATCH, which would let
 * a client detect that, is refused with a clear error).  KGET and KSET,
 * whose contexts name versions that exist only after a commit, are
 * refused inside MULTI.
 *
 * Bounds (a command past one is refused and aborts the transaction):
 * TXN_QUEUE_MAX commands, query-buffer-max bytes of queued arguments, and
 * as many writes (keys written) as one store transaction takes
 * (store_batch_max(): the store's batch-max, 1024 by default).
 */
#ifndef RINGKV_TXN_H
#define RINGKV_TXN_H

#include <stdbool.h>
#include <stddef.h>

#include "kv.h"

struct client;
struct command;
struct pending;
struct txn;
struct txn_exec;

/* Commands one transaction queues at most. */
#define TXN_QUEUE_MAX 10000

/* Whether c is inside MULTI and cmd is one that is queued rather than run. */
bool txn_queues(const struct client *c, const struct command *cmd);

/* Queue p's command (checked by commands_run()) and answer +QUEUED, or refuse it. */
int txn_queue(struct client *c, struct pending *p);

/* A command refused while c is inside MULTI: its EXEC will abort.  No-op outside MULTI. */
void txn_flag(struct client *c);

/* Drop c's MULTI state and queued commands (DISCARD, or the connection closing). */
void txn_discard(struct client *c);

/* The commands' handlers (commands.c's table). */
int txn_cmd_multi(struct client *c, struct pending *p);
int txn_cmd_exec(struct client *c, struct pending *p);
int txn_cmd_discard(struct client *c, struct pending *p);
int txn_cmd_watch(struct client *c, struct pending *p);

/* --- for the data commands run by EXEC (p->txn set) ------------------------------ */

/*
 * n write slots of the EXEC's atomic group, for p's writes (each to be
 * filled in by kv_write_init() and then passed to txn_note_write()); NULL
 * when the group has no room (more writes than were counted at queue time).
 */
struct kv_write *txn_take_writes(struct txn_exec *t, size_t n);

/* Record a write of the group, so later reads of the same EXEC see it. */
void txn_note_write(struct txn_exec *t, const void *key, size_t len, const void *value,
                    size_t value_len, bool tombstone);

/*
 * Record a conditional write of the group (cond: store.h) as the reads
 * after it should see it: written when cond holds on what the EXEC sees
 * of key now (its own earlier writes, else this node's copy), else not
 * at all.  The store decides the write itself at the group's commit; the
 * two differ only when another connection wrote key in between (no
 * isolation, above).
 */
void txn_note_cond_write(struct txn_exec *t, const void *key, size_t len, const void *value,
                         size_t value_len, bool tombstone, enum store_cond cond);

/*
 * When an earlier write of the EXEC set key: fill r as a completed read of
 * what that write leaves (one value, or a tombstone), with r->record valid
 * until the next call, and return true.  False: read the store.
 */
bool txn_read_own(struct txn_exec *t, const void *key, size_t len, struct kv_read *r);

/* A command run by EXEC finished (client_finish() of an entry with p->txn). */
void txn_sub_done(struct pending *p);

#endif
