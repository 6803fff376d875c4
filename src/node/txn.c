/*
 * txn.c - MULTI, EXEC and DISCARD (txn.h).
 *
 * Queueing.  Inside MULTI, commands_run() checks a command as it would
 * before running it and hands it here: its parsed command moves from the
 * connection's pipeline entry to the connection's queue (struct txn), and
 * the entry answers +QUEUED.  The queue counts the writes its commands
 * will make (one per key of a write command), so EXEC knows the size of
 * its atomic group before running anything.
 *
 * EXEC.  The queue moves out of the connection into a struct txn_exec, so
 * the connection may start its next MULTI while this EXEC waits for its
 * commit.  Each queued command becomes a sub-entry (client_sub_new()): an
 * entry outside the connection's pipeline, whose reply gathers in its own
 * buffer and whose completion comes back here (txn_sub_done()).  They run
 * in order through commands_run(), as they would outside MULTI, except that
 * the data commands see p->txn: a write takes its slots in the EXEC's
 * group (txn_take_writes()) and is recorded (txn_note_write()) instead of
 * being queued to kv, and a read of a key an earlier write of the EXEC set
 * answers from that write (txn_read_own()).  Once all have run, and the
 * reads among them still in flight (replication) have completed, so none
 * sees a write queued after it, the group goes to kv in one
 * kv_write_atomic(); its writes complete together, after the commit, and
 * the last completion writes EXEC's array of replies.
 *
 * The EXEC entry itself is a read and a write (CMD_READ | CMD_WRITE) to the
 * pipeline's ordering rule (client.c): it starts after every earlier data
 * command of its connection completed, and every later one waits for it.
 */
#include "txn.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "client.h"
#include "commands.h"
#include "error.h"
#include "record.h"
#include "resp.h"
#include "server.h"

/* The queue of a connection inside MULTI. */
struct txn {
    struct resp_cmd **cmds;
    size_t n, cap;
    size_t bytes;  /* queued argument bytes */
    size_t writes; /* writes the queued commands make at most */
    bool dirty;    /* a command was refused: EXEC aborts */
};

/* A write of an EXEC's group, for the reads after it. */
struct txn_own {
    const uint8_t *key, *value; /* borrowed from the sub-entry's command */
    size_t len, value_len;
    bool tombstone;
};

struct txn_exec {
    struct client *c;
    struct pending *p; /* the EXEC entry */
    struct pending **subs;
    size_t n;
    size_t left;       /* sub-entries not done, plus one while they are being started */
    size_t reads_left; /* reads in flight: the writes wait for them (txn_exec_run()) */
    bool writes_held;  /* the group waits for reads_left to reach 0 */
    struct kv_write *writes;
    size_t n_writes, cap_writes;
    struct txn_own *own; /* cap_writes entries, n_own used */
    size_t n_own;
    struct buf scratch; /* txn_read_own()'s record */
};

/* The node-side identity of a transaction's own writes in a record it answers reads from. */
#define TXN_OWN_NODE "txn"

bool txn_queues(const struct client *c, const struct command *cmd)
{
    static const char *const never[] = {"multi", "exec", "discard", "watch", "quit"};

    if (c->multi == NULL || cmd == NULL) {
        return false;
    }
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        if (strcmp(cmd->name, never[i]) == 0) {
            return false;
        }
    }
    return true;
}

void txn_flag(struct client *c)
{
    if (c->multi != NULL) {
        c->multi->dirty = true;
    }
}

static void txn_free_queue(struct txn *t)
{
    for (size_t i = 0; i < t->n; i++) {
        resp_cmd_free(t->cmds[i]);
    }
    free(t->cmds);
    free(t);
}

void txn_discard(struct client *c)
{
    if (c->multi != NULL) {
        txn_free_queue(c->multi);
        c->multi = NULL;
    }
}

/* Keys of cmd in parsed command x: how many (0 for a keyless command). */
static size_t txn_key_count(const struct command *cmd, const struct resp_cmd *x, size_t *first,
                            size_t *step)
{
    size_t last;

    if (cmd->first_key <= 0 || x->argc < 2) {
        return 0;
    }
    *first = (size_t)cmd->first_key;
    last = cmd->last_key < 0 ? x->argc - 1 : (size_t)cmd->last_key;
    last = last < x->argc ? last : x->argc - 1;
    *step = cmd->key_step > 0 ? (size_t)cmd->key_step : 1;
    return *first <= last ? (last - *first) / *step + 1 : 0;
}

/* Refuse p's command inside MULTI (its error is written): the EXEC aborts. */
static int txn_refuse(struct client *c)
{
    txn_flag(c);
    return CMD_DONE;
}

/* The checks commands_run() leaves to the queue: the causal API, key-max, the bounds. */
static int txn_check(struct client *c, struct pending *p, size_t *writes)
{
    const struct command *cmd = p->command;
    struct server *n = c->node;
    size_t first = 0, step = 1, keys = txn_key_count(cmd, p->cmd, &first, &step);
    size_t batch_max = store_batch_max(n->store);

    if (strcmp(cmd->name, "kget") == 0 || strcmp(cmd->name, "kset") == 0 ||
        strcmp(cmd->name, "kdel") == 0) {
        client_error(p,
                     "ERR %s is not allowed inside MULTI: a context names versions that exist "
                     "only once a transaction committed",
                     cmd->name);
        return txn_refuse(c);
    }
    for (size_t k = 0, i = first; k < keys; k++, i += step) {
        if (p->cmd->argv[i].len > n->cfg.key_max) {
            n->metrics.client_limit_errors++;
            client_error(p, "ERR key of %zu bytes is over key-max (%llu bytes)",
                         p->cmd->argv[i].len, (unsigned long long)n->cfg.key_max);
            return txn_refuse(c);
        }
    }
    *writes = (cmd->flags & CMD_WRITE) ? keys : 0;
    if (c->multi->n >= TXN_QUEUE_MAX) {
        client_error(p, "ERR a transaction queues at most %d commands: the transaction is aborted",
                     TXN_QUEUE_MAX);
        return txn_refuse(c);
    }
    if (c->multi->bytes + p->cmd->arena_len > n->cfg.query_buffer_max) {
        client_error(p,
                     "ERR the transaction's queued commands are over query-buffer-max (%llu "
                     "bytes): the transaction is aborted",
                     (unsigned long long)n->cfg.query_buffer_max);
        return txn_refuse(c);
    }
    if (c->multi->writes + *writes > batch_max) {
        client_error(p,
                     "ERR a transaction writes at most %zu keys (what one store transaction "
                     "takes): the transaction is aborted",
                     batch_max);
        return txn_refuse(c);
    }
    return -1;
}

int txn_queue(struct client *c, struct pending *p)
{
    struct txn *t = c->multi;
    size_t writes = 0;

    if (txn_check(c, p, &writes) == CMD_DONE) {
        return CMD_DONE;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        struct resp_cmd **g = realloc(t->cmds, cap * sizeof(*g));
        if (g == NULL) {
            client_error(p, "ERR out of memory");
            return txn_refuse(c);
        }
        t->cmds = g;
        t->cap = cap;
    }
    t->cmds[t->n++] = p->cmd;
    t->bytes += p->cmd->arena_len;
    t->writes += writes;
    p->cmd = NULL; /* the queue owns it now */
    p->index = -1; /* counted when EXEC runs it */
    resp_put_simple(client_reply(p), "QUEUED");
    return CMD_DONE;
}

int txn_cmd_multi(struct client *c, struct pending *p)
{
    if (c->multi != NULL) {
        client_error(p, "ERR MULTI calls can not be nested");
        return CMD_DONE;
    }
    c->multi = calloc(1, sizeof(*c->multi));
    if (c->multi == NULL) {
        client_error(p, "ERR out of memory");
        return CMD_DONE;
    }
    resp_put_simple(client_reply(p), "OK");
    return CMD_DONE;
}

int txn_cmd_discard(struct client *c, struct pending *p)
{
    if (c->multi == NULL) {
        client_error(p, "ERR DISCARD without MULTI");
        return CMD_DONE;
    }
    txn_discard(c);
    resp_put_simple(client_reply(p), "OK");
    return CMD_DONE;
}

int txn_cmd_watch(struct client *c, struct pending *p)
{
    if (c->multi != NULL && strcmp(p->command->name, "watch") == 0) {
        client_error(p, "ERR WATCH inside MULTI is not allowed");
        return CMD_DONE;
    }
    client_error(p,
                 "ERR %s is not supported by ringkv: WATCH is not implemented, so a "
                 "transaction cannot be made conditional on keys left unchanged",
                 p->command->name);
    return CMD_DONE;
}

static void txn_exec_free(struct txn_exec *t)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->subs[i] != NULL) {
            client_sub_free(t->subs[i]);
        }
    }
    free(t->subs);
    free(t->writes);
    free(t->own);
    buf_free(&t->scratch);
    free(t);
}

/* Every queued command finished: EXEC's reply is the array of theirs, in order. */
static void txn_exec_reply(struct txn_exec *t)
{
    struct buf *out = client_reply(t->p);

    resp_put_array(out, t->n);
    for (size_t i = 0; i < t->n; i++) {
        buf_append(out, buf_data(&t->subs[i]->reply), t->subs[i]->reply.len);
    }
    txn_exec_free(t);
}

static void txn_exec_submit(struct txn_exec *t);

/* Whether sub-entry p only reads (GET, MGET, TTL ...): its reply is of the data before the
 * EXEC's writes. */
static bool txn_sub_reads(const struct pending *p)
{
    return p->command != NULL && (p->command->flags & CMD_READ) && !(p->command->flags & CMD_WRITE);
}

void txn_sub_done(struct pending *p)
{
    struct txn_exec *t = p->txn;
    struct pending *exec = t->p;

    if (txn_sub_reads(p) && t->reads_left > 0 && --t->reads_left == 0 && t->writes_held) {
        t->writes_held = false;
        txn_exec_submit(t); /* p's own count keeps t alive through writes refused at once */
    }
    if (--t->left == 0) {
        txn_exec_reply(t);
        client_finish(exec);
    }
}

/* Take the queue q of connection c into an EXEC of entry p; NULL when out of memory. */
static struct txn_exec *txn_exec_new(struct client *c, struct pending *p, struct txn *q)
{
    struct txn_exec *t = calloc(1, sizeof(*t));

    if (t == NULL) {
        return NULL;
    }
    *t = (struct txn_exec){.c = c, .p = p, .n = q->n, .cap_writes = q->writes};
    buf_init(&t->scratch, 0);
    t->subs = calloc(q->n + 1, sizeof(*t->subs));
    t->writes = calloc(q->writes + 1, sizeof(*t->writes));
    t->own = calloc(q->writes + 1, sizeof(*t->own));
    if (t->subs == NULL || t->writes == NULL || t->own == NULL) {
        txn_exec_free(t);
        return NULL;
    }
    for (size_t i = 0; i < q->n; i++) {
        if ((t->subs[i] = client_sub_new(c, q->cmds[i], t)) == NULL) {
            t->n = i;
            txn_exec_free(t);
            return NULL;
        }
        q->cmds[i] = NULL; /* the sub-entry owns it */
    }
    q->n = 0;
    return t;
}

/*
 * Hand the writes to kv as one atomic group.  When kv refuses the group at
 * once, its writes complete here with that error, so every write command of
 * the EXEC answers it and none applied.
 */
static void txn_exec_submit(struct txn_exec *t)
{
    int rc;

    if (t->n_writes > 0 && (rc = kv_write_atomic(t->c->node->kv, t->writes, t->n_writes)) != 0) {
        for (size_t i = 0; i < t->n_writes; i++) {
            t->writes[i].result = rc;
            t->writes[i].existed = false;
            t->writes[i].done(&t->writes[i], t->writes[i].ctx);
        }
    }
}

/*
 * Run every queued command, then hand the writes to kv as one atomic
 * group: at once, or, while reads of the EXEC are still in flight
 * (replication), once the last of them completed, so a read never sees a
 * write queued after it in the same EXEC.
 */
static int txn_exec_run(struct txn_exec *t)
{
    t->left = t->n + 1;
    for (size_t i = 0; i < t->n; i++) {
        if (client_sub_start(t->subs[i]) == CMD_DONE) {
            t->left--;
        } else if (txn_sub_reads(t->subs[i])) {
            t->reads_left++;
        }
    }
    if (t->reads_left > 0 && t->n_writes > 0) {
        t->writes_held = true;
    } else {
        txn_exec_submit(t);
    }
    if (--t->left > 0) {
        return CMD_ASYNC;
    }
    txn_exec_reply(t);
    return CMD_DONE;
}

int txn_cmd_exec(struct client *c, struct pending *p)
{
    struct txn *q = c->multi;
    struct txn_exec *t;

    if (p->cmd->argc != 1) {
        /* Redis answers EXEC's own arity error this way, and drops the transaction */
        txn_discard(c);
        client_error(p, "EXECABORT Transaction discarded because of: wrong number of arguments "
                        "for 'exec' command");
        return CMD_DONE;
    }
    if (q == NULL) {
        client_error(p, "ERR EXEC without MULTI");
        return CMD_DONE;
    }
    if (q->dirty) {
        txn_discard(c);
        client_error(p, "EXECABORT Transaction discarded because of previous errors.");
        return CMD_DONE;
    }
    t = txn_exec_new(c, p, q);
    txn_discard(c);
    if (t == NULL) {
        client_error(p, "EXECABORT Transaction discarded because of: out of memory");
        return CMD_DONE;
    }
    return txn_exec_run(t);
}

struct kv_write *txn_take_writes(struct txn_exec *t, size_t n)
{
    struct kv_write *w;

    if (n > t->cap_writes - t->n_writes) {
        return NULL;
    }
    w = &t->writes[t->n_writes];
    t->n_writes += n;
    return w;
}

void txn_note_write(struct txn_exec *t, const void *key, size_t len, const void *value,
                    size_t value_len, bool tombstone)
{
    if (t->n_own < t->cap_writes) {
        t->own[t->n_own++] = (struct txn_own){key, value, len, value_len, tombstone};
    }
}

/* store_read()'s callback: whether the stored record holds a live version. */
static int txn_live(void *ctx, const uint8_t *record, size_t len)
{
    struct record rec;
    bool *present = ctx;

    record_init(&rec);
    *present = record_decode(record, len, &rec) == 0 && rec.n > 0 && !record_all_tombstones(&rec);
    record_deinit(&rec);
    return 0;
}

/* Whether key is present as the EXEC sees it now: its own latest write, else the store's copy. */
static bool txn_present(struct txn_exec *t, const void *key, size_t len)
{
    bool present = false;

    for (size_t i = t->n_own; i-- > 0;) {
        const struct txn_own *o = &t->own[i];
        if (o->len == len && memcmp(o->key, key, len) == 0) {
            return !o->tombstone;
        }
    }
    (void)store_read(t->c->node->store, key, len, txn_live, &present);
    return present;
}

void txn_note_cond_write(struct txn_exec *t, const void *key, size_t len, const void *value,
                         size_t value_len, bool tombstone, enum store_cond cond)
{
    bool present = cond != STORE_COND_NONE && txn_present(t, key, len);

    if (cond == STORE_COND_NONE || (cond == STORE_COND_ABSENT) != present) {
        txn_note_write(t, key, len, value, value_len, tombstone);
    }
}

bool txn_read_own(struct txn_exec *t, const void *key, size_t len, struct kv_read *r)
{
    struct vclock none;
    struct sibling s;
    struct record rec = {.s = &s, .n = 1, .cap = 1};
    const struct txn_own *w = NULL;
    uint8_t *at = NULL;

    for (size_t i = t->n_own; i-- > 0 && w == NULL;) {
        const struct txn_own *o = &t->own[i];
        if (o->len == len && memcmp(o->key, key, len) == 0) {
            w = o;
        }
    }
    if (w == NULL) {
        return false;
    }
    vclock_init(&none);
    sibling_init(&s);
    buf_clear(&t->scratch);
    r->result = sibling_set(&s, &none, 0, TXN_OWN_NODE, w->tombstone, w->value, w->value_len);
    if (r->result == 0 && (at = buf_reserve(&t->scratch, record_encoded_size(&rec))) == NULL) {
        r->result = RK_ENOMEM;
    }
    if (r->result == 0) {
        buf_commit(&t->scratch, record_encode(&rec, at));
        r->record = buf_data(&t->scratch);
        r->record_len = t->scratch.len;
    }
    sibling_deinit(&s);
    vclock_deinit(&none);
    return true;
}
