/*
 * client.c - RESP connections: reading, the ordered pipeline, replies and
 * limits (client.h).
 *
 * The pipeline.  Parsed commands queue in arrival order as `pending`
 * entries, and their replies leave in that order whatever order their work
 * finishes in (a write's reply only once it committed).  What may start:
 *
 *  - Against work in flight: a read (CMD_READ) waits while an earlier
 *    write of this connection to one of its keys is in flight, a write
 *    (CMD_WRITE) while an earlier read of one of its keys is; a command
 *    that does both (GETSET, SET NX, EXEC; and under replication DEL,
 *    EXPIRE and PERSIST, decided against a quorum read of their keys:
 *    commands_flags()) waits for either; a keyless one
 *    (DBSIZE, SCAN, EXEC) conflicts with every key.  Reads never wait for
 *    reads in flight, nor writes for writes (kv applies one connection's
 *    writes in the order they start).
 *  - Past a command that waits (not started): only a data command, one
 *    that reads or writes named keys (GET, MGET, SET, DEL, KSET ...), not
 *    an admin verb and not queued inside MULTI, and only past data
 *    commands: a read or write never passes one sharing a key with it,
 *    and a write never passes a write.  So one connection's writes start,
 *    apply and are seen by others in command order; a read sees every
 *    earlier write of its connection to its keys (it never passes one, and
 *    waits for the commit of one in flight) and no later one (a later
 *    write of its keys never passes it); and a read of other keys need not
 *    wait for an earlier read's fsync: SET a, GET a, SET b, GET b starts
 *    both SETs at once, one commit for the pair.  A read that starts past
 *    a waiting one reads the state of its own start, as if it had been
 *    sent first: the two may see another connection's writes of their
 *    different keys in different states.
 *  - Nothing passes any other command (QUIT, MULTI, EXEC, AUTH, admin
 *    verbs, keyless reads): one that cannot start ends the pass, and it
 *    starts only once everything before it has; HELLO only once every
 *    reply before it is complete, since the replies of commands in flight
 *    are written when they finish, in the connection's protocol then.
 *
 * A start pass (client_start_ready()) goes front to back from the first
 * entry not started, skipping data commands that wait; its checks cost a
 * few hashed bits per key (struct start_filter).  A read whose key the
 * filters may hold waits; a write's keys are then compared one by one,
 * for at most CLIENT_CONFLICT_SCAN entries and keys a pass, past which it
 * waits; and a pass that has looked at CLIENT_PASS_IDLE_MAX entries in a row
 * past a waiting one without starting any stops there, so a pipeline whose
 * every command waits costs each pass a bounded walk.  The reads started by
 * one pass read one snapshot (kv_read_hold()).  A connection whose
 * commands finish is passed over once per event-loop iteration, in the
 * ev_prepare step below, not once per finished command.
 *
 * Replies.  Flushing goes front to back: the first entries whose
 * replies are complete are appended to the output.  A reply written while
 * its entry is first goes straight to the output; otherwise it waits in
 * the entry's own buffer, moved to the output when the entry becomes
 * first, so a reply written in parts stays in order.
 *
 * Output.  Replies gather in the connection's output buffer and are
 * written once per event-loop iteration, by the ev_prepare step that also
 * submits the iteration's writes (Redis's beforeSleep): a pipeline of
 * writes costs one send, not one per reply.  A connection whose output
 * passes CLIENT_FLUSH_NOW is written at once.
 *
 * Freeing.  kv borrows an operation's key and value (owned by its entry's
 * parsed command) until it completes.  So a connection that closes with
 * operations in flight is marked dead and freed by the completion of its
 * last one, never before.  And a connection closed while one of its own
 * handlers runs is freed when that handler returns: every entry point goes
 * through client_enter()/client_leave().
 */
#include "client.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "commands.h"
#include "error.h"
#include "kv.h"
#include "log.h"
#include "net.h"
#include "peer.h"
#include "rpc.h"
#include "server.h"
#include "txn.h"

/* Finished entries kept for reuse per connection: a deep pipeline's worth. */
#define CLIENT_SPARE_MAX 64
/* An entry whose reply buffer grew past this is freed, not kept. */
#define CLIENT_SPARE_REPLY_MAX (64 * 1024)
/* Bytes read per read() call: enough for a pipeline of small commands. */
#define CLIENT_READ_CHUNK (16 * 1024)
/* Output at which a connection is written at once, not at the end of the iteration: a
 * socket buffer's worth, so a large reply starts moving without waiting for others. */
#define CLIENT_FLUSH_NOW (64 * 1024)
/* Entries visited and key comparisons of one ordering check (or, for data commands, of one
 * start pass) at most; past it the command just waits. */
#define CLIENT_CONFLICT_SCAN 4096
/*
 * Entries one start pass looks at in a row, past a waiting one, without starting any: then
 * it stops (the rest start in a later pass).  A pipeline whose every command waits (one key
 * written and read in turn) would otherwise be walked whole at every pass: quadratic.
 */
#define CLIENT_PASS_IDLE_MAX 64

static void client_process(struct client *c);
static void client_flush(struct client *c);
static void client_take_replies(struct client *c);

/* --- pending entries -------------------------------------------------------- */

static struct pending *pending_new(struct client *c, struct resp_cmd *cmd)
{
    struct pending *p = c->spare;

    if (p != NULL) {
        c->spare = p->next;
        c->n_spare--;
    } else if ((p = calloc(1, sizeof(*p))) != NULL) {
        buf_init(&p->reply, 0);
        vclock_init(&p->context);
    } else {
        return NULL;
    }
    p->next = NULL;
    p->c = c;
    p->cmd = cmd;
    p->index = -1;
    if (c->tail != NULL) {
        c->tail->next = p;
    } else {
        c->head = p;
    }
    c->tail = p;
    if (c->next_start == NULL) {
        c->next_start = p;
    }
    c->n_pending++;
    return p;
}

/* Free what a data command allocated for its operations. */
static void pending_free_ops(struct pending *p)
{
    if (p->writes != &p->write1 && !p->writes_borrowed) {
        free(p->writes);
    }
    if (p->reads != &p->read1) {
        free(p->reads);
    }
    if (p->slots != NULL) {
        for (size_t i = 0; i < p->n_reads; i++) {
            buf_free(&p->slots[i]);
        }
    }
    free(p->slots);
    free(p->slot_ready);
}

static void pending_free(struct pending *p)
{
    resp_cmd_free(p->cmd);
    buf_free(&p->reply);
    vclock_deinit(&p->context);
    pending_free_ops(p);
    free(p);
}

/*
 * Done with an entry of a live connection: its parsed command goes back to
 * the parser and the entry to a short free list, so a steady pipeline
 * allocates nothing per command.
 */
static void pending_recycle(struct client *c, struct pending *p)
{
    struct buf reply;

    resp_parser_recycle(&c->parser, p->cmd);
    p->cmd = NULL;
    if (c->n_spare >= CLIENT_SPARE_MAX || p->reply.cap > CLIENT_SPARE_REPLY_MAX) {
        pending_free(p);
        return;
    }
    pending_free_ops(p);
    vclock_deinit(&p->context);
    reply = p->reply;
    buf_clear(&reply);
    memset(p, 0, sizeof(*p));
    p->reply = reply;
    vclock_init(&p->context);
    p->next = c->spare;
    c->spare = p;
    c->n_spare++;
}

/* Unlink and free the first entry. */
static void pending_pop(struct client *c)
{
    struct pending *p = c->head;

    c->head = p->next;
    if (c->head == NULL) {
        c->tail = NULL;
    }
    if (c->next_start == p) {
        c->next_start = p->next;
    }
    c->n_pending--;
    pending_recycle(c, p);
}

struct buf *client_reply(struct pending *p)
{
    return p == p->c->head ? &p->c->out : &p->reply;
}

void client_error(struct pending *p, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    resp_put_error(client_reply(p), msg);
    p->error = true;
}

/* --- lifecycle ----------------------------------------------------------------- */

static void client_free(struct client *c)
{
    txn_discard(c);
    while (c->head != NULL) {
        pending_pop(c);
    }
    while (c->spare != NULL) {
        struct pending *p = c->spare;
        c->spare = p->next;
        pending_free(p);
    }
    resp_parser_deinit(&c->parser);
    buf_free(&c->in);
    buf_free(&c->out);
    free(c);
}

/* Take c off the node's list of connections to flush. */
static void client_unqueue_flush(struct client *c)
{
    struct client **at = &c->node->to_flush;

    if (!c->flush_queued) {
        return;
    }
    while (*at != c) {
        at = &(*at)->flush_next;
    }
    *at = c->flush_next;
    c->flush_queued = false;
}

/*
 * Process c (parse, start, reply) in this iteration's ev_prepare step:
 * every command of c that finished in the iteration is handled by one
 * pass, not one pass per completion.
 */
static void client_queue_process(struct client *c)
{
    struct server *n = c->node;

    if (!c->process_queued) {
        c->process_queued = true;
        c->process_next = n->to_process;
        n->to_process = c;
    }
}

/* Take c off the node's list of connections to process. */
static void client_unqueue_process(struct client *c)
{
    struct client **at = &c->node->to_process;

    if (!c->process_queued) {
        return;
    }
    while (*at != c) {
        at = &(*at)->process_next;
    }
    *at = c->process_next;
    c->process_queued = false;
}

static void client_unlink(struct client *c)
{
    struct server *n = c->node;

    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        n->clients = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    n->n_clients--;
}

void client_close(struct client *c, const char *why)
{
    struct pending *p, *keep = NULL;

    if (c->dead) {
        return;
    }
    LOG(LOG_DEBUG, "client_close", "client=%llu peer=%s reason=%s", (unsigned long long)c->id,
        c->addr, why);
    ev_io_stop(c->node->loop, &c->rio);
    ev_io_stop(c->node->loop, &c->wio);
    ev_timer_stop(c->node->loop, &c->idle);
    close(c->fd);
    c->fd = -1;
    c->dead = true;
    client_unlink(c);
    client_unqueue_flush(c);
    client_unqueue_process(c);
    txn_discard(c); /* a transaction not yet EXECuted applies nothing */
    /* keep only entries with operations in flight: kv still borrows them */
    while ((p = c->head) != NULL) {
        c->head = p->next;
        if (p->in_flight) {
            p->next = keep;
            keep = p;
        } else {
            pending_free(p);
        }
    }
    c->head = keep;
    c->tail = NULL;
    c->next_start = NULL;
    if (c->depth == 0 && c->n_in_flight == 0) {
        client_free(c);
    }
}

static void client_enter(struct client *c)
{
    c->depth++;
}

/* Leave a handler; frees the client when it died and nothing holds it any more. */
static void client_leave(struct client *c)
{
    if (--c->depth == 0 && c->dead && c->n_in_flight == 0) {
        client_free(c);
    }
}

static void client_on_read(struct ev_loop *loop, ev_io *w, int revents);
/*
 * Before the loop sleeps: move on each connection whose commands finished
 * in this iteration (one pass each: its replies taken, what they held back
 * started), hand this iteration's writes to the store in one submission,
 * then write each connection's gathered replies.  Handing writes over can
 * finish commands at once (a refused submission; every operation in the
 * shuffle test mode), so it goes round until no connection is left to
 * process.
 */
static void client_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    struct server *n = w->data;
    struct client *c;

    (void)loop;
    (void)revents;
    do {
        while ((c = n->to_process) != NULL) {
            n->to_process = c->process_next;
            c->process_queued = false;
            client_enter(c);
            client_process(c);
            client_leave(c);
        }
        kv_flush(n->kv);
        if (n->coord_waiting != NULL) {
            rpc_coord_send_waiting(n, false); /* answers made room for the coordinator's requests */
        }
        /* a request refused there completes now, and its caller may start a write */
    } while (n->to_process != NULL || kv_queued(n->kv));
    peer_flush_queued(n); /* this pass's replica writes and answers, one send() a peer */
    while ((c = n->to_flush) != NULL) {
        n->to_flush = c->flush_next;
        c->flush_queued = false;
        client_enter(c);
        client_flush(c);
        client_leave(c);
    }
}

void client_loop_start(struct server *n)
{
    ev_prepare_init(&n->client_prepare_w, client_on_prepare);
    n->client_prepare_w.data = n;
    ev_prepare_start(n->loop, &n->client_prepare_w);
}

static void client_on_write(struct ev_loop *loop, ev_io *w, int revents);
static void client_on_idle(struct ev_loop *loop, ev_timer *w, int revents);

/*
 * The parser's limits: the settings', or before AUTH (requirepass set and
 * not yet given) Redis's for unauthenticated clients, so a stranger's
 * `*1000000` or `$60000000` is refused at its header, before the bytes
 * it announces are buffered.
 */
static void client_limits(const struct server *n, bool authed, struct resp_limits *lim)
{
    lim->multibulk_max = n->cfg.multibulk_max;
    lim->bulk_max = n->cfg.value_max > n->cfg.key_max ? n->cfg.value_max : n->cfg.key_max;
    lim->bulk_hard_max = RESP_BULK_HARD_MAX_DEFAULT;
    lim->inline_max = RESP_INLINE_MAX_DEFAULT;
    if (!authed) {
        lim->multibulk_max = CLIENT_PREAUTH_ARGS_MAX;
        lim->bulk_hard_max = CLIENT_PREAUTH_BULK_MAX;
        lim->bulk_max =
            lim->bulk_max < CLIENT_PREAUTH_BULK_MAX ? lim->bulk_max : CLIENT_PREAUTH_BULK_MAX;
    }
}

void client_authed(struct client *c)
{
    c->authed = true;
    client_limits(c->node, true, &c->parser.lim);
}

/*
 * Commands parsed ahead of execution: one before AUTH, so AUTH's limits
 * apply to the next; and none while more than CLIENT_PREAUTH_OUTPUT_MAX of
 * replies wait unsent, so a stranger who sends PINGs and never reads
 * cannot make the node buffer output-buffer-max of PONGs.
 */
static size_t client_parse_ahead(const struct client *c)
{
    if (c->authed) {
        return c->node->cfg.pipeline_max;
    }
    return c->out.len < CLIENT_PREAUTH_OUTPUT_MAX ? 1 : 0;
}

/* Before AUTH, Redis's words for a count or length over the unauthenticated limits. */
static const char *client_parse_error(const struct client *c)
{
    const char *e = c->parser.error;

    if (c->authed) {
        return e;
    }
    if (strcmp(e, "Protocol error: invalid multibulk length") == 0) {
        return "Protocol error: unauthenticated multibulk length";
    }
    if (strcmp(e, "Protocol error: invalid bulk length") == 0) {
        return "Protocol error: unauthenticated bulk length";
    }
    return e;
}

/* Refuse a connection past maxclients the way Redis does, then close it. */
static void client_refuse(struct server *n, int fd)
{
    static const char msg[] = "-ERR max number of clients reached\r\n";
    ssize_t w = write(fd, msg, sizeof(msg) - 1);

    (void)w;
    close(fd);
    n->metrics.connections_rejected++;
}

void client_accept(struct server *n, int fd, const struct sockaddr_storage *addr)
{
    struct resp_limits lim;
    struct client *c;

    n->metrics.connections_received++;
    if (n->n_clients >= n->cfg.maxclients || n->stopping || (c = calloc(1, sizeof(*c))) == NULL) {
        client_refuse(n, fd);
        return;
    }
    c->node = n;
    c->fd = fd;
    c->id = ++n->next_client_id;
    c->proto = 2;
    c->authed = n->cfg.requirepass[0] == '\0';
    c->loopback = net_is_loopback(addr);
    net_addr_text(addr, c->addr);
    buf_init(&c->in, n->cfg.query_buffer_max);
    buf_init(&c->out, 0);
    client_limits(n, c->authed, &lim);
    resp_parser_init(&c->parser, &lim);
    c->created_ms = c->last_ms = clock_mono_ms();
    ev_io_init(&c->rio, client_on_read, fd, EV_READ);
    ev_io_init(&c->wio, client_on_write, fd, EV_WRITE);
    c->rio.data = c->wio.data = c;
    ev_init(&c->idle, client_on_idle);
    c->idle.data = c;
    c->next = n->clients;
    if (n->clients != NULL) {
        n->clients->prev = c;
    }
    n->clients = c;
    n->n_clients++;
    ev_io_start(n->loop, &c->rio);
    if (n->cfg.timeout_ms > 0) {
        c->idle.repeat = (double)n->cfg.timeout_ms / 1000.0;
        ev_timer_again(n->loop, &c->idle);
    }
}

void client_stop(struct client *c)
{
    client_enter(c);
    c->closing = true;
    ev_io_stop(c->node->loop, &c->rio);
    client_process(c);
    client_leave(c);
}

/* --- starting commands ------------------------------------------------------------ */

/* Count a finished command in the metrics. */
static void client_account(struct pending *p)
{
    struct server *n = p->c->node;

    n->metrics.commands_processed++;
    if (p->index >= 0) {
        metrics_count_command(&n->metrics, p->index, p->error,
                              (clock_mono_ns() - p->start_ns) / 1000);
    }
}

void client_finish(struct pending *p)
{
    struct client *c = p->c;

    if (p->txn != NULL) {
        p->done = true;
        client_account(p);
        txn_sub_done(p);
        return;
    }
    client_enter(c);
    p->done = true;
    if (p->in_flight) {
        p->in_flight = false;
        c->n_in_flight--;
    }
    client_account(p);
    if (!c->dead) {
        /* the replies done now leave the entries, so the next one's reply goes straight out */
        client_take_replies(c);
        client_queue_process(c);
    }
    client_leave(c);
}

/* Run one command; it either replies now or finishes later through client_finish(). */
static void client_start(struct client *c, struct pending *p)
{
    p->started = true;
    p->start_ns = c->batch_ns;
    c->commands++;
    if (commands_run(c, p) == CMD_ASYNC) {
        p->in_flight = true;
        c->n_in_flight++;
        return;
    }
    p->done = true;
    client_account(p);
}

struct pending *client_sub_new(struct client *c, struct resp_cmd *cmd, struct txn_exec *t)
{
    struct pending *p = calloc(1, sizeof(*p));

    if (p == NULL) {
        return NULL;
    }
    buf_init(&p->reply, 0);
    vclock_init(&p->context);
    p->c = c;
    p->cmd = cmd;
    p->index = -1;
    p->txn = t;
    return p;
}

int client_sub_start(struct pending *p)
{
    p->started = true;
    p->start_ns = clock_mono_ns();
    p->c->commands++;
    if (commands_run(p->c, p) == CMD_ASYNC) {
        return CMD_ASYNC;
    }
    p->done = true;
    client_account(p);
    return CMD_DONE;
}

void client_sub_free(struct pending *p)
{
    pending_free(p);
}

/* Argument positions of p's keys: first, last (inclusive) and step; false when keyless. */
static bool pending_keys(const struct pending *p, size_t *first, size_t *last, size_t *step)
{
    const struct command *cmd = p->command;

    if (cmd == NULL || cmd->first_key <= 0 || p->cmd == NULL || p->cmd->argc < 2) {
        return false;
    }
    *first = (size_t)cmd->first_key;
    *last = cmd->last_key < 0 ? p->cmd->argc - 1 : (size_t)cmd->last_key;
    *last = *last < p->cmd->argc ? *last : p->cmd->argc - 1;
    *step = cmd->key_step > 0 ? (size_t)cmd->key_step : 1;
    return *first <= *last;
}

/* Whether a and b may touch one key: a shared key, a keyless one, or too many to compare. */
static bool pending_overlap(const struct pending *a, const struct pending *b, size_t *budget)
{
    size_t af, al, as, bf, bl, bs;

    if (!pending_keys(a, &af, &al, &as) || !pending_keys(b, &bf, &bl, &bs)) {
        return true;
    }
    for (size_t i = af; i <= al; i += as) {
        const struct resp_arg *x = &a->cmd->argv[i];
        for (size_t j = bf; j <= bl; j += bs) {
            const struct resp_arg *y = &b->cmd->argv[j];
            if (*budget == 0 || (x->len == y->len && memcmp(x->p, y->p, x->len) == 0)) {
                return true;
            }
            (*budget)--;
        }
    }
    return false;
}

/* Whether an operation of flags qf orders against a later one of flags pf: a read and a write. */
static bool flags_conflict(unsigned qf, unsigned pf)
{
    return ((qf & CMD_WRITE) && (pf & CMD_READ)) || ((qf & CMD_READ) && (pf & CMD_WRITE));
}

/* commands_flags(p), resolved once. */
static unsigned pending_flags(struct pending *p)
{
    if (!p->order_known) {
        size_t first, last, step;
        p->order_flags = commands_flags(p);
        p->order_data = 0;
        if (p->cmd != NULL && !p->cmd->too_big && !(p->order_flags & CMD_ADMIN) &&
            pending_keys(p, &first, &last, &step)) {
            p->order_data = p->order_flags & (CMD_READ | CMD_WRITE);
        }
        p->order_known = true;
    }
    return p->order_flags;
}

/*
 * The flags (CMD_READ, CMD_WRITE or both) of p when it is a data command
 * that may start past a waiting one, or be passed by a later one: a read
 * or write of named keys, not an admin verb, not queued inside MULTI.  0
 * for everything else (keyless reads such as DBSIZE or SCAN, EXEC,
 * MULTI, AUTH, QUIT, ...), which never starts past a waiting command.
 */
static unsigned pending_data_flags(struct client *c, struct pending *p)
{
    (void)pending_flags(p);
    return p->order_data != 0 && !txn_queues(c, p->command) ? p->order_data : 0;
}

/*
 * Whether p, a command that starts only in order, must wait for an earlier
 * command of its connection in flight: a read for a write in flight to one
 * of its keys, a write for a read in flight of one of its keys (EXEC reads
 * and writes: it waits for every data command, and one EXEC for another);
 * HELLO, which changes the protocol replies are written in, for every one.
 * Every entry before p has started, so the ones in flight are the ones not
 * done.
 */
static bool client_must_wait(struct client *c, struct pending *p)
{
    unsigned flags = pending_flags(p) & (CMD_READ | CMD_WRITE);
    size_t budget = CLIENT_CONFLICT_SCAN;

    if ((pending_flags(p) & CMD_PROTO) && c->n_in_flight > 0 && !txn_queues(c, p->command)) {
        return true; /* HELLO: the replies before it are written in the protocol they had */
    }
    if (flags == 0 || c->n_in_flight == 0 || txn_queues(c, p->command)) {
        return false; /* a command queued inside MULTI touches nothing until EXEC */
    }
    for (struct pending *q = c->head; q != NULL && q != p; q = q->next) {
        unsigned qf = q->in_flight ? pending_flags(q) & (CMD_READ | CMD_WRITE) : 0;
        if (flags_conflict(qf, flags) && pending_overlap(q, p, &budget)) {
            return true;
        }
    }
    return false;
}

/*
 * Whether p, a data command of flags pf, must wait, compared one by one
 * with every earlier entry: for a command in flight as client_must_wait()
 * does; and it never passes an earlier command not started that is not a
 * data command, shares a key with it, or (p being a write) writes.  True
 * too once *budget (entries visited, key comparisons) is spent.
 */
static bool client_conflicts(struct client *c, struct pending *p, unsigned pf, size_t *budget)
{
    for (struct pending *q = c->head; q != NULL && q != p; q = q->next) {
        if (*budget == 0) {
            return true;
        }
        (*budget)--;
        if (q->in_flight) {
            unsigned qf = pending_flags(q) & (CMD_READ | CMD_WRITE);
            if (flags_conflict(qf, pf) && pending_overlap(q, p, budget)) {
                return true;
            }
        } else if (!q->started && !q->done) {
            unsigned qf = pending_data_flags(c, q);
            if (qf == 0 || ((qf & CMD_WRITE) && (pf & CMD_WRITE)) ||
                pending_overlap(q, p, budget)) {
                return true;
            }
        }
    }
    return false;
}

/*
 * One start pass's summary of the keys that may hold a data command back,
 * as filters (two bits of a key's hash each, so a key missing from a
 * filter is certainly absent and one present is checked one by one):
 * keys of the writes and of the reads in flight, keys of the commands
 * skipped so far because they wait.  A keyless command in flight (EXEC,
 * DBSIZE) touches every key.
 */
#define CLIENT_FILTER_BITS 16384
struct start_filter {
    uint64_t writing[CLIENT_FILTER_BITS / 64], reading[CLIENT_FILTER_BITS / 64];
    uint64_t waiting[CLIENT_FILTER_BITS / 64];
    bool writing_all, reading_all;
    bool waiting_write; /* a write was skipped: no later write may start */
};

static uint64_t key_hash(const struct resp_arg *k)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    for (size_t i = 0; i < k->len; i++) {
        h = (h ^ ((const uint8_t *)k->p)[i]) * 1099511628211ULL;
    }
    return h;
}

/* The hash of p's key at argument i; the first key's is kept. */
static uint64_t pending_key_hash(struct pending *p, size_t i, size_t first)
{
    if (i != first) {
        return key_hash(&p->cmd->argv[i]);
    }
    if (!p->hash_known) {
        p->order_hash = key_hash(&p->cmd->argv[i]);
        p->hash_known = true;
    }
    return p->order_hash;
}

static void filter_set(uint64_t *bits, uint64_t h)
{
    size_t a = (size_t)(h % CLIENT_FILTER_BITS), b = (size_t)((h >> 32) % CLIENT_FILTER_BITS);

    bits[a / 64] |= 1ULL << (a % 64);
    bits[b / 64] |= 1ULL << (b % 64);
}

static bool filter_has(const uint64_t *bits, uint64_t h)
{
    size_t a = (size_t)(h % CLIENT_FILTER_BITS), b = (size_t)((h >> 32) % CLIENT_FILTER_BITS);

    return (bits[a / 64] >> (a % 64) & 1) && (bits[b / 64] >> (b % 64) & 1);
}

/* Add p, of flags pf (CMD_READ, CMD_WRITE), to the filters of the commands in flight. */
static void filter_add_in_flight(struct start_filter *f, struct pending *p, unsigned pf)
{
    size_t first, last, step;

    if (!pending_keys(p, &first, &last, &step)) {
        f->writing_all |= (pf & CMD_WRITE) != 0;
        f->reading_all |= (pf & CMD_READ) != 0;
        return;
    }
    for (size_t i = first; i <= last; i += step) {
        uint64_t h = pending_key_hash(p, i, first);
        if (pf & CMD_WRITE) {
            filter_set(f->writing, h);
        }
        if (pf & CMD_READ) {
            filter_set(f->reading, h);
        }
    }
}

/* Add p, a data command of flags pf that waits, to the filter of the commands skipped. */
static void filter_add_waiting(struct start_filter *f, struct pending *p, unsigned pf)
{
    size_t first, last, step;

    f->waiting_write |= (pf & CMD_WRITE) != 0;
    if (pending_keys(p, &first, &last, &step)) {
        for (size_t i = first; i <= last; i += step) {
            filter_set(f->waiting, pending_key_hash(p, i, first));
        }
    }
}

/*
 * Whether p, a data command of flags pf, must wait; passing: an earlier
 * command has not started.  The filters answer no conflict at once.  A
 * read they may conflict with waits: a false hit only delays it to a later
 * pass.  A write is compared one by one (client_conflicts()), while
 * *budget lasts, and past it waits: a write that waits holds back every
 * later write.
 */
static bool client_data_waits(struct client *c, struct pending *p, unsigned pf,
                              const struct start_filter *f, bool passing, size_t *budget)
{
    size_t first, last, step;
    bool maybe = ((pf & CMD_READ) && f->writing_all) || ((pf & CMD_WRITE) && f->reading_all);

    if (passing && (pf & CMD_WRITE) && f->waiting_write) {
        return true; /* a connection's writes are applied in order */
    }
    (void)pending_keys(p, &first, &last, &step);
    for (size_t i = first; i <= last && !maybe; i += step) {
        uint64_t h = pending_key_hash(p, i, first);
        maybe = ((pf & CMD_READ) && filter_has(f->writing, h)) ||
                ((pf & CMD_WRITE) && filter_has(f->reading, h)) ||
                (passing && filter_has(f->waiting, h));
    }
    return maybe && (!(pf & CMD_WRITE) || client_conflicts(c, p, pf, budget));
}

/* After QUIT: drop every command after it, none of which has started. */
static void client_drop_after(struct client *c, struct pending *p)
{
    while (p->next != NULL) {
        struct pending *x = p->next;
        p->next = x->next;
        c->n_pending--;
        pending_recycle(c, x);
    }
    c->tail = p;
    c->next_start = NULL;
}

/* The filters of the commands in flight, from every entry in flight. */
static void filter_init(struct client *c, struct start_filter *f)
{
    size_t seen = 0;

    memset(f, 0, sizeof(*f));
    for (struct pending *q = c->head; q != NULL && seen < c->n_in_flight; q = q->next) {
        if (q->in_flight) {
            filter_add_in_flight(f, q, pending_flags(q) & (CMD_READ | CMD_WRITE));
            seen++;
        }
    }
}

/*
 * Start every command the ordering rules allow (the header comment), front
 * to back: a data command that must wait is skipped, and later data
 * commands may start past it; any other command that cannot start ends
 * the pass, as nothing may pass it.
 */
static void client_start_ready(struct client *c)
{
    struct start_filter f;
    size_t budget = CLIENT_CONFLICT_SCAN, idle = 0;
    bool held = false, passing = false;
    struct pending *p, *next;

    while (c->next_start != NULL && (c->next_start->started || c->next_start->done)) {
        c->next_start = c->next_start->next; /* started past a wait, or a parser's error reply */
    }
    if (c->next_start == NULL || c->dead || c->quit) {
        return;
    }
    filter_init(c, &f);
    /* one clock read for the commands started together; each is timed to its reply */
    c->batch_ns = clock_mono_ns();
    for (p = c->next_start; p != NULL && !c->dead && !c->quit; p = next) {
        unsigned pf;
        next = p->next;
        if (passing && ++idle > CLIENT_PASS_IDLE_MAX) {
            break;
        }
        if (p->started || p->done) {
            continue;
        }
        pf = pending_data_flags(c, p);
        if (pf == 0 && (passing || client_must_wait(c, p))) {
            break;
        }
        if (pf != 0 && client_data_waits(c, p, pf, &f, passing, &budget)) {
            filter_add_waiting(&f, p, pf);
            passing = true;
            continue;
        }
        idle = 0;
        /* one read snapshot for the reads started together; none for blind writes, admin verbs */
        if (!held && (pending_flags(p) & CMD_READ)) {
            (void)kv_read_hold(c->node->kv);
            held = true;
        }
        if (passing) {
            c->node->metrics.client_started_past_wait++;
        } else {
            c->next_start = next;
        }
        if (c->head != p && c->head->done) {
            client_take_replies(c); /* when p becomes first, its reply goes straight out */
        }
        client_start(c, p);
        if (c->quit) {
            client_drop_after(c, p);
        } else if (!c->dead && p->in_flight) {
            filter_add_in_flight(&f, p, pending_flags(p) & (CMD_READ | CMD_WRITE));
        }
    }
    if (held) {
        kv_read_release(c->node->kv);
    }
}

void client_quit(struct pending *p)
{
    struct client *c = p->c;

    c->quit = true;
    c->closing = true;
    ev_io_stop(c->node->loop, &c->rio);
    buf_clear(&c->in);
}

/* --- input ------------------------------------------------------------------------------ */

/* Queue an error reply produced by the parser, after the replies before it. */
static void client_queue_error(struct client *c, const char *msg)
{
    struct pending *p = pending_new(c, NULL);

    if (p == NULL) {
        client_close(c, "out_of_memory");
        return;
    }
    resp_put_errorf(client_reply(p), "ERR %s", msg);
    p->error = true;
    p->done = true;
}

/* One line a second at most for each limit, the rest counted in suppressed=. */
static struct log_limit limit_log_output, limit_log_query, limit_log_timeout;

/*
 * Log that c is cut off by limit (the setting's name: output-buffer-max,
 * query-buffer-max, timeout), at warning: an operator must see a client
 * dropped by a limit they can change.  ll is that limit's rate.
 */
static void client_log_limit(const struct client *c, struct log_limit *ll, const char *limit)
{
    LOG_LIMITED(ll, LOG_WARN, "client_limit_close", "client=%llu peer=%s limit=%s",
                (unsigned long long)c->id, c->addr, limit);
}

/* Parse what has arrived into queued commands, up to pipeline-max. */
static void client_parse(struct client *c)
{
    struct server *n = c->node;

    while (!c->closing && !c->dead && c->n_pending < client_parse_ahead(c) && c->in.len > 0) {
        struct resp_cmd *cmd = NULL;
        size_t used = 0;
        enum resp_status st = resp_parse(&c->parser, buf_data(&c->in), c->in.len, &used, &cmd);
        buf_consume(&c->in, used);
        if (st == RESP_PROTOCOL_ERROR) {
            n->metrics.client_protocol_errors++;
            LOG(LOG_INFO, "client_protocol_error", "client=%llu peer=%s error=\"%s\"",
                (unsigned long long)c->id, c->addr, client_parse_error(c));
            client_queue_error(c, client_parse_error(c));
            c->closing = true;
            return;
        }
        if (c->parser.cur != NULL && c->parser.cur->arena_len > n->cfg.query_buffer_max) {
            n->metrics.client_limit_errors++;
            client_log_limit(c, &limit_log_query, "query-buffer-max");
            client_queue_error(c, "Protocol error: command larger than query-buffer-max");
            c->closing = true;
            return;
        }
        if (st == RESP_NEED_MORE) {
            return;
        }
        if (pending_new(c, cmd) == NULL) {
            resp_cmd_free(cmd);
            client_close(c, "out_of_memory");
            return;
        }
    }
}

/* Pause reading at pipeline-max; resume when replies drained below it. */
static void client_read_flow(struct client *c)
{
    struct server *n = c->node;
    bool full = c->n_pending >= client_parse_ahead(c);

    if (c->closing || c->dead) {
        return;
    }
    if (full && !c->read_paused) {
        ev_io_stop(n->loop, &c->rio);
        c->read_paused = true;
    } else if (!full && c->read_paused) {
        ev_io_start(n->loop, &c->rio);
        c->read_paused = false;
    }
}

/*
 * Append the replies of the finished entries at the front to the output;
 * and the part already written by the first unfinished one, whose later
 * parts then go straight to the output (client_reply()).
 */
static void client_take_replies(struct client *c)
{
    while (c->head != NULL && c->head->done) {
        buf_append(&c->out, buf_data(&c->head->reply), c->head->reply.len);
        pending_pop(c);
    }
    if (c->head != NULL && c->head->reply.len > 0) {
        buf_append(&c->out, buf_data(&c->head->reply), c->head->reply.len);
        buf_clear(&c->head->reply);
    }
}

/*
 * Write c's output at the end of this iteration (client_on_prepare()), or
 * now when it is large or the connection is to close.
 */
static void client_flush_later(struct client *c)
{
    struct server *n = c->node;

    if (c->out.len >= CLIENT_FLUSH_NOW || (c->closing && c->head == NULL)) {
        client_flush(c);
        return;
    }
    if (c->out.len > 0 && !c->flush_queued && !ev_is_active(&c->wio)) {
        c->flush_queued = true;
        c->flush_next = n->to_flush;
        n->to_flush = c;
    }
}

/* Parse, start and flush until nothing moves.  Called inside client_enter()/leave(). */
static void client_process(struct client *c)
{
    size_t before;

    if (c->dead) {
        return;
    }
    do {
        before = c->n_pending + c->in.len;
        client_parse(c);
        client_start_ready(c);
        if (c->dead) {
            return;
        }
        client_take_replies(c);
    } while (c->n_pending + c->in.len != before && c->in.len > 0);
    client_read_flow(c);
    client_flush_later(c);
}

static void client_on_read(struct ev_loop *loop, ev_io *w, int revents)
{
    struct client *c = w->data;
    uint8_t *p;
    ssize_t r;

    (void)loop;
    (void)revents;
    client_enter(c);
    p = buf_reserve(&c->in, CLIENT_READ_CHUNK);
    if (p == NULL) {
        c->node->metrics.client_limit_errors++;
        client_log_limit(c, &limit_log_query, "query-buffer-max");
        client_close(c, "query_buffer_limit");
        goto out_leave;
    }
    r = read(c->fd, p, CLIENT_READ_CHUNK);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
        goto out_leave;
    }
    if (r <= 0) {
        /* the peer is done sending: answer what it sent, then close */
        c->closing = true;
        ev_io_stop(c->node->loop, &c->rio);
    } else {
        buf_commit(&c->in, (size_t)r);
        c->node->metrics.net_input_bytes += (uint64_t)r;
        c->last_ms = clock_mono_ms();
    }
    client_process(c);
out_leave:
    client_leave(c);
}

/* --- output ------------------------------------------------------------------------------ */

static void client_flush(struct client *c)
{
    struct server *n = c->node;
    size_t sent;
    int rc = net_send_buf(c->fd, &c->out, &sent);

    n->metrics.net_output_bytes += sent;
    if (rc != 0) {
        client_close(c, "write_error");
        return;
    }
    if (c->out.len > n->cfg.output_buffer_max) {
        n->metrics.client_limit_errors++;
        client_log_limit(c, &limit_log_output, "output-buffer-max");
        client_close(c, "output_buffer_limit");
        return;
    }
    if (c->out.len > 0) {
        ev_io_start(n->loop, &c->wio);
        return;
    }
    ev_io_stop(n->loop, &c->wio);
    if (c->closing && c->head == NULL) {
        client_close(c, c->parser.error != NULL ? "protocol_error" : "closed");
    } else if (!c->authed && c->read_paused) {
        /*
         * Reading paused at CLIENT_PREAUTH_OUTPUT_MAX and the socket took
         * all of it at once, so no write event will come to resume it:
         * make one, and client_on_write() reads again from the loop (not
         * from here, which client_process() itself reaches).
         */
        ev_feed_event(n->loop, &c->wio, EV_WRITE);
    }
}

static void client_on_write(struct ev_loop *loop, ev_io *w, int revents)
{
    struct client *c = w->data;

    (void)loop;
    (void)revents;
    client_enter(c);
    client_flush(c);
    if (!c->dead && !c->authed && c->read_paused) {
        client_process(c); /* output drained below the pre-AUTH bound: read again */
    }
    client_leave(c);
}

/* Idle timeout: close a connection with nothing in flight and no traffic for `timeout`. */
static void client_on_idle(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct client *c = w->data;
    double idle = (double)(clock_mono_ms() - c->last_ms) / 1000.0;

    (void)revents;
    if (c->head != NULL || idle + 0.001 < w->repeat) {
        ev_timer_again(loop, w);
        return;
    }
    c->node->metrics.client_timeouts++;
    client_enter(c);
    client_log_limit(c, &limit_log_timeout, "timeout");
    client_close(c, "idle_timeout");
    client_leave(c);
}
