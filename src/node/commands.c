/*
 * commands.c - what each client command does (commands.h).
 *
 * Data commands go through kv.h and fan out: GET, MGET, EXISTS and KGET
 * start one read per key, SET, MSET, DEL and KSET one write per key, and
 * reply when all have completed (at once when every read completed inside
 * its call, as on a single node).  A read's reply is written as soon as
 * the replies of the keys before it are: a multi-key reply stays in key
 * order whatever order its reads complete in.  MSET's writes form one
 * atomic group (kv_write_atomic()).  A key with one live version answers
 * GET with it; a key with siblings answers GET with -CONFLICT (a plain
 * Redis reply has room for one value and ringkv does not pick one
 * silently), and KGET returns them all with the context a KSET needs to
 * resolve them.  The context a client sees is the hex form of the record's
 * merged vector clock (storage/vclock.h's encoding) followed by its tag
 * under the cluster key, bound to the key it was read from
 * (channel_key_context_tag()).  KSET and KDEL take a context only when its
 * tag is that of their key, before decoding its clock: a client cannot
 * send a clock no node made for that key (invented actors, counters run
 * ahead, a clock of another key), which the store's own checks
 * (record_context_check()) would catch only in part.
 *
 * Expiry.  A value may expire (SET ... EX, EXPIRE; storage/record.h): every
 * read judges it by this node's wall clock (clock_wall_ms()) when the
 * reply is made, and an expired sibling is left out as if absent, while its
 * clock stays in the context KGET returns.  EXPIRE and PERSIST are writes
 * (new versions made from the key's live value, store.h STORE_EXPIRY_TOUCH).
 *
 * DEL, EXPIRE and PERSIST, like the conditional writes, are decided on what
 * the key holds: by the store on a key of this node alone, else by the
 * coordinator against a quorum read, written with the merged record's
 * context (kv_write_reads()).
 */
#include "commands.h"

#include <fnmatch.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoconf.h"
#include "bulktest.h"
#include "channel.h"
#include "client.h"
#include "clock.h"
#include "coord.h"
#include "settings.h"
#include "error.h"
#include "gossip.h"
#include "hex.h"
#include "log.h"
#include "membership.h"
#include "metrics.h"
#include "num.h"
#include "preflist.h"
#include "reaper.h"
#include "server.h"
#include "record.h"
#include "reload.h"
#include "ring.h"
#include "rpc.h"
#include "scan.h"
#include "transfers.h"
#include "txn.h"

/* The protocol level HELLO reports, for clients that gate features on it. */
#define COMMANDS_REDIS_VERSION "7.0.0"
/*
 * Bound on a KSET or KDEL context: the largest clock a record holds (VCLOCK_ENTRIES_MAX
 * entries of full-length ids; pruning keeps every entry younger than a day, so a key whose
 * replicas took many actors in a day has a long one) and its tag, in hex.  Any context
 * KGET returns is within it.
 */
#define COMMANDS_CONTEXT_HEX_MAX                                                                   \
    (2 * (2 + (size_t)VCLOCK_ENTRIES_MAX * (1 + RING_NAME_MAX + 16) + CHANNEL_CONTEXT_TAG_BYTES))
_Static_assert(CHANNEL_CONTEXT_TAG_BYTES == crypto_verify_16_BYTES,
               "context_arg() compares a context's tag with crypto_verify_16()");

static const uint8_t *arg(const struct pending *p, size_t i, size_t *len)
{
    *len = p->cmd->argv[i].len;
    return p->cmd->argv[i].p;
}

static const char *arg_str(const struct pending *p, size_t i)
{
    return (const char *)p->cmd->argv[i].p;
}

/*
 * Argument i as a count: decimal digits only (no sign, blank or NUL) and
 * at most max; false otherwise.  strtoull() alone would read " 5", "+5"
 * and "5<NUL>x" as 5 and "-1" as its largest value.
 */
static bool arg_count(const struct pending *p, size_t i, uint64_t max, uint64_t *out)
{
    return num_parse_u64((const char *)p->cmd->argv[i].p, p->cmd->argv[i].len, max, out) == 0;
}

static int reply_ok(struct pending *p)
{
    resp_put_simple(client_reply(p), "OK");
    return CMD_DONE;
}

/* A key or value over its limit: an error reply, counted as a limit error. */
static bool over_limit(struct client *c, struct pending *p, const char *what, size_t len,
                       uint64_t max)
{
    if (len <= max) {
        return false;
    }
    c->node->metrics.client_limit_errors++;
    client_error(p, "ERR %s of %zu bytes is over %s-max (%llu bytes)", what, len, what,
                 (unsigned long long)max);
    return true;
}

/* --- reading ---------------------------------------------------------------------- */

/* What a read command does with each key's result, into the buffer given. */
typedef void (*read_reply_fn)(struct client *c, struct pending *p, struct kv_read *r,
                              struct buf *out);
/* And once every key's result is in (NULL: nothing more). */
typedef void (*read_end_fn)(struct client *c, struct pending *p);

struct read_cmd {
    read_reply_fn each;
    read_end_fn end;
};

/*
 * The error line of a request the replicas could not serve (false for
 * another error): how many replicas were reachable (NOREPLICAS) or
 * answered (TRYAGAIN) of how many its quorum needs.
 */
static bool replica_error(char *text, size_t cap, int rc, unsigned answered, unsigned needed,
                          bool write)
{
    if (rc == RK_ENOREPLICAS) {
        snprintf(text, cap,
                 "NOREPLICAS %u of the %u replicas this %s needs (%s) are reachable: nothing was "
                 "%s",
                 answered, needed, write ? "write" : "read", write ? "w" : "r",
                 write ? "written" : "read");
    } else if (rc == RK_ETRYAGAIN && write) {
        snprintf(text, cap,
                 "TRYAGAIN %u of the %u replicas this write needs (w) acknowledged it in time: it "
                 "may be on some replicas, and a later read returns it if so",
                 answered, needed);
    } else if (rc == RK_ETRYAGAIN) {
        snprintf(text, cap, "TRYAGAIN %u of the %u replicas this read needs (r) answered in time",
                 answered, needed);
    } else {
        return false;
    }
    return true;
}

/*
 * The error line of a read that failed with rc: the replicas' figures
 * (replica_error()), else what failed.
 */
static void read_error_line(char *text, size_t cap, int rc, unsigned answered, unsigned needed)
{
    if (!replica_error(text, cap, rc, answered, needed, false)) {
        snprintf(text, cap, "ERR read failed: %s", rk_strerror(rc));
    }
}

/*
 * A read's single value: bulk, nil when absent or deleted, -CONFLICT with
 * siblings.  A key over key-max (only MGET gets here with one: GET refuses
 * it first) cannot exist, so it is nil like any absent key, as Redis
 * answers: an error inside MGET's array is handed to callers as a value.
 */
static void value_reply(struct client *c, struct pending *p, struct kv_read *r, struct buf *out)
{
    char text[256];
    const uint8_t *value = NULL;
    size_t n = 0, vlen = 0;
    bool tombstone = false;

    if (r->result == RK_ENOTFOUND || r->result == RK_ETOOBIG) {
        c->node->metrics.keyspace_misses++;
        resp_put_null(out, c->proto);
        return;
    }
    if (r->result == 0 && record_peek_at(r->record, r->record_len, clock_wall_ms(), &n, &tombstone,
                                         &value, &vlen) != 0) {
        r->result = RK_ESYNTAX;
    }
    if (r->result != 0) {
        p->error = true;
        read_error_line(text, sizeof(text), r->result, r->answered, r->needed);
        resp_put_errorf(out, "%s", text);
    } else if (n == 0 || (n == 1 && tombstone)) {
        c->node->metrics.keyspace_misses++;
        resp_put_null(out, c->proto);
    } else if (n > 1) {
        c->node->metrics.keyspace_hits++;
        p->error = true;
        resp_put_errorf(out,
                        "CONFLICT the key has %zu siblings (a delete concurrent with a write "
                        "is one, without a value): read them with KGET and resolve with KSET "
                        "key value CONTEXT ctx or KDEL key CONTEXT ctx",
                        n);
    } else {
        c->node->metrics.keyspace_hits++;
        resp_put_bulk(out, value, vlen);
    }
}

/*
 * EXISTS: count a key with a live version.  A key whose read failed is
 * not counted as absent: the command answers the first such error (a
 * count that left it out would be wrong either way).
 */
static void exists_count(struct client *c, struct pending *p, struct kv_read *r, struct buf *out)
{
    struct record rec;
    int rc = r->result == RK_ETOOBIG ? RK_ENOTFOUND : r->result; /* over key-max: cannot exist */

    (void)c;
    (void)out;
    record_init(&rec);
    if (rc == 0 && (rc = record_decode(r->record, r->record_len, &rec)) == 0) {
        p->count += record_live_count(&rec, clock_wall_ms()) > 0;
    }
    if (rc != 0 && rc != RK_ENOTFOUND && p->read_error == 0) {
        p->read_error = rc;
        p->err_answered = r->answered;
        p->err_needed = r->needed;
    }
    record_deinit(&rec);
}

static void exists_end(struct client *c, struct pending *p)
{
    char text[256];

    (void)c;
    if (p->read_error == 0) {
        resp_put_int(client_reply(p), p->count);
    } else {
        read_error_line(text, sizeof(text), p->read_error, p->err_answered, p->err_needed);
        client_error(p, "%s", text);
    }
}

/*
 * KGET key: [context, [value, ...]] with every live sibling.  The context
 * is the hex of the merged clock's encoding and its tag for this key.
 */
static void kget_reply(struct client *c, struct pending *p, struct kv_read *r, struct buf *out)
{
    struct vclock ctx;
    struct record rec;
    uint8_t *enc = NULL;
    char *hex = NULL;
    size_t clen, klen;
    const uint8_t *key = arg(p, 1, &klen);
    uint64_t now = clock_wall_ms();
    int rc = r->result == RK_ENOTFOUND ? 0 : r->result;

    record_init(&rec);
    vclock_init(&ctx);
    if (rc == 0 && r->result == 0) {
        rc = record_decode(r->record, r->record_len, &rec);
    }
    rc = rc ? rc : record_context(&rec, &ctx);
    clen = vclock_encoded_size(&ctx);
    if (rc == 0 && ((enc = malloc(clen + CHANNEL_CONTEXT_TAG_BYTES)) == NULL ||
                    (hex = malloc(2 * (clen + CHANNEL_CONTEXT_TAG_BYTES) + 1)) == NULL)) {
        rc = RK_ENOMEM;
    }
    if (rc != 0) {
        char text[256];
        p->error = true;
        read_error_line(text, sizeof(text), rc, r->answered, r->needed);
        resp_put_errorf(out, "%s", text);
        goto out_free;
    }
    vclock_encode(&ctx, enc);
    channel_key_context_tag(c->node->key, key, klen, enc, clen, enc + clen);
    hex_encode(hex, enc, clen + CHANNEL_CONTEXT_TAG_BYTES);
    resp_put_array(out, 2);
    resp_put_bulk_str(out, hex);
    resp_put_array(out, record_live_count(&rec, now));
    for (size_t i = 0; i < rec.n; i++) {
        if (!sibling_dead(&rec.s[i], now)) {
            resp_put_bulk(out, rec.s[i].value, rec.s[i].value_len);
        }
    }
out_free:
    free(enc);
    free(hex);
    vclock_deinit(&ctx);
    record_deinit(&rec);
}

/*
 * TYPE and STRLEN: what a key's single value is.  Absent or deleted:
 * "none" and 0; one value: "string" and its length; siblings: "string",
 * and for STRLEN -CONFLICT as GET answers (no single value to measure).
 */
static void type_reply(struct client *c, struct pending *p, struct kv_read *r, struct buf *out)
{
    const uint8_t *value = NULL;
    size_t n = 0, vlen = 0;
    bool tombstone = false, strlen_cmd = strcmp(p->command->name, "strlen") == 0;
    int rc = r->result;

    if (rc == 0 && record_peek_at(r->record, r->record_len, clock_wall_ms(), &n, &tombstone, &value,
                                  &vlen) != 0) {
        rc = RK_ESYNTAX;
    }
    if (rc != 0 && rc != RK_ENOTFOUND) {
        char text[256];
        p->error = true;
        read_error_line(text, sizeof(text), rc, r->answered, r->needed);
        resp_put_errorf(out, "%s", text);
    } else if (n > 1 && strlen_cmd) {
        p->error = true;
        resp_put_errorf(out, "CONFLICT the key has %zu siblings: read them with KGET", n);
    } else if (strlen_cmd) {
        resp_put_int(out, rc == 0 && n == 1 && !tombstone ? (int64_t)vlen : 0);
    } else {
        resp_put_simple(out, rc == 0 && (n > 1 || (n == 1 && !tombstone)) ? "string" : "none");
    }
}

static const struct read_cmd read_value = {value_reply, NULL};
static const struct read_cmd read_type = {type_reply, NULL};
static const struct read_cmd read_exists = {exists_count, exists_end};
static const struct read_cmd read_kget = {kget_reply, NULL};

/* Keep a reply that completed ahead of an earlier key's, in its slot. */
static struct buf *read_slot(struct pending *p, size_t i)
{
    if (p->slots == NULL) {
        p->slots = calloc(p->n_reads, sizeof(*p->slots));
        p->slot_ready = calloc(p->n_reads, sizeof(*p->slot_ready));
        if (p->slots == NULL || p->slot_ready == NULL) {
            return NULL;
        }
        for (size_t k = 0; k < p->n_reads; k++) {
            buf_init(&p->slots[k], 0);
        }
    }
    p->slot_ready[i] = true;
    return &p->slots[i];
}

/* Write the replies of the reads from next_slot on that completed, in key order. */
static void read_drain(struct pending *p)
{
    while (p->next_slot < p->n_reads && p->slot_ready != NULL && p->slot_ready[p->next_slot]) {
        struct buf *b = &p->slots[p->next_slot++];
        buf_append(client_reply(p), buf_data(b), b->len);
        buf_free(b);
    }
}

/* One key's read completed: write its reply in key order; the last one finishes. */
static void read_done(struct kv_read *r, void *ctx)
{
    struct pending *p = ctx;
    struct client *c = p->c;
    const struct read_cmd *rc = p->read_cmd;
    size_t i = (size_t)(r - p->reads);
    struct buf *slot;

    if (i == p->next_slot) {
        rc->each(c, p, r, client_reply(p));
        p->next_slot++;
        read_drain(p);
    } else if ((slot = read_slot(p, i)) != NULL) {
        rc->each(c, p, r, slot);
    } else {
        p->first_error = RK_ENOMEM;
    }
    if (--p->left == 0) {
        if (p->first_error != 0) {
            client_error(p, "ERR out of memory");
        } else if (rc->end != NULL) {
            rc->end(c, p);
        }
        client_finish(p);
    }
}

/*
 * Start one read per argument from `first`; a key over key-max completes
 * at once with RK_ETOOBIG.  Replies when every read completed: CMD_DONE
 * when that happened inside this call (a single node), else CMD_ASYNC and
 * read_done() finishes it.  p->left holds one extra count until every
 * read started, so a read completing inside its call never finishes the
 * command from inside it.
 */
static int start_reads(struct client *c, struct pending *p, size_t first, const struct read_cmd *rc)
{
    size_t n = p->cmd->argc - first;

    p->reads = n == 1 ? &p->read1 : calloc(n, sizeof(*p->reads));
    if (p->reads == NULL) {
        client_error(p, "ERR out of memory");
        return CMD_DONE;
    }
    p->read_cmd = rc;
    p->n_reads = n;
    p->left = n + 1;
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *key = arg(p, first + i, &len);
        if (len > c->node->cfg.key_max) {
            p->reads[i].result = RK_ETOOBIG;
            read_done(&p->reads[i], p);
            continue;
        }
        if (p->txn != NULL && txn_read_own(p->txn, key, len, &p->reads[i])) {
            read_done(&p->reads[i], p); /* a key this EXEC wrote earlier reads that write */
            continue;
        }
        kv_get_quorum(c->node->kv, &p->reads[i], key, len, p->quorum, read_done, p);
    }
    if (--p->left > 0) {
        return CMD_ASYNC;
    }
    if (p->first_error != 0) {
        client_error(p, "ERR out of memory");
    } else if (rc->end != NULL) {
        rc->end(c, p);
    }
    return CMD_DONE;
}

static int cmd_get(struct client *c, struct pending *p)
{
    if (over_limit(c, p, "key", p->cmd->argv[1].len, c->node->cfg.key_max)) {
        return CMD_DONE;
    }
    return start_reads(c, p, 1, &read_value);
}

static int cmd_mget(struct client *c, struct pending *p)
{
    resp_put_array(client_reply(p), p->cmd->argc - 1);
    return start_reads(c, p, 1, &read_value);
}

/* TYPE key, STRLEN key (a key over key-max cannot exist: none, 0, as Redis for a missing key) */
static int cmd_type(struct client *c, struct pending *p)
{
    if (p->cmd->argv[1].len > c->node->cfg.key_max) {
        if (strcmp(p->command->name, "strlen") == 0) {
            resp_put_int(client_reply(p), 0);
        } else {
            resp_put_simple(client_reply(p), "none");
        }
        return CMD_DONE;
    }
    return start_reads(c, p, 1, &read_type);
}

static int cmd_exists(struct client *c, struct pending *p)
{
    return start_reads(c, p, 1, &read_exists);
}

/*
 * A quorum option's value (R n, W n) at argument i: 1 .. rf.  Replies
 * with the error and returns false otherwise.
 */
static bool quorum_arg(struct client *c, struct pending *p, size_t i, const char *name)
{
    size_t len;
    const uint8_t *v = arg(p, i, &len);
    char text[8];
    char *end;
    unsigned long q;

    if (len == 0 || len >= sizeof(text)) {
        q = 0;
    } else {
        memcpy(text, v, len);
        text[len] = '\0';
        q = strtoul(text, &end, 10);
        q = *end == '\0' && text[0] != '-' ? q : 0;
    }
    if (q == 0 || q > c->node->cfg.rf) {
        client_error(p, "ERR %s must be a number of replicas from 1 to rf (%u)", name,
                     (unsigned)c->node->cfg.rf);
        return false;
    }
    p->quorum = (unsigned)q;
    return true;
}

/* KGET key [R n] */
static int cmd_kget(struct client *c, struct pending *p)
{
    if (p->cmd->argc != 2 && (p->cmd->argc != 4 || !resp_arg_is(p->cmd, 2, "r"))) {
        client_error(p, "ERR syntax error: KGET key [R n]");
        return CMD_DONE;
    }
    if (over_limit(c, p, "key", p->cmd->argv[1].len, c->node->cfg.key_max)) {
        return CMD_DONE;
    }
    if (p->cmd->argc == 4 && !quorum_arg(c, p, 3, "R")) {
        return CMD_DONE;
    }
    p->cmd->argc = 2; /* the read takes the key only */
    return start_reads(c, p, 1, &read_kget);
}

/* --- writing ------------------------------------------------------------------------ */

_Static_assert(VCLOCK_ENTRIES_MAX == 4096, "write_error_text() names the clock's bound");

/*
 * A write's error as the client reads it.  RK_ETOOBIG is the sibling cap
 * (record_apply()); RK_ECLOCKFULL a version vector with no room for this
 * node's entry (record_write_local()): one entry per data-directory life
 * (store_actor()) of a node that wrote the key, pruned to 50 once older than
 * a day, but only when the key is stored, which such a write never gets to.
 */
static const char *write_error_text(int rc)
{
    switch (rc) {
    case RK_EMISMATCH:
        return "CONFLICT the context is older than a write this node has made since: read the "
               "key again with KGET and retry";
    case RK_ETOOBIG:
        return "ERR the key holds max-siblings siblings: resolve them with KSET key value CONTEXT";
    case RK_ECLOCKFULL:
        return "ERR the key's version vector is full: 4096 entries, one per data-directory life "
               "(actor) of each node that wrote the key, with no room for this node's; nothing "
               "was written. Write it through a replica whose actor (INFO ringkv_actor) is in the "
               "vector (RINGKV REPLICAS key): that write prunes entries older than a day";
    case RK_ECONTEXT:
        return "ERR the context names versions this node never issued: read the key again "
               "with KGET and send the context it returns";
    case RK_EDISK:
        return "ERR the disk failed to flush: this node refuses writes until it is restarted "
               "(reads still work)";
    case RK_ENOSPC:
        return "ERR the store is full: writes are refused until space is freed (reads still "
               "work)";
    case RK_ECLOSED:
        return "ERR ringkv is shutting down";
    default:
        return NULL;
    }
}

/* Reply for a finished write command: its own reply on success, else the first error. */
static void write_reply(struct pending *p)
{
    const char *text = write_error_text(p->first_error);
    char line[256];

    if (p->first_error == 0) {
        if (strcmp(p->command->name, "del") == 0 || p->expiry == STORE_EXPIRY_TOUCH) {
            resp_put_int(client_reply(p), p->count);
        } else {
            resp_put_simple(client_reply(p), "OK");
        }
    } else if (replica_error(line, sizeof(line), p->first_error, p->err_answered, p->err_needed,
                             !p->err_read)) {
        client_error(p, "%s", line); /* after a failed read (DEL, EXPIRE): nothing was written */
    } else if (p->first_error == RK_EMISMATCH && p->expiry == STORE_EXPIRY_TOUCH) {
        client_error(p, "CONFLICT the key has siblings: resolve them with KSET key value CONTEXT "
                        "before changing its expiry");
    } else if (text != NULL) {
        client_error(p, "%s", text);
    } else {
        client_error(p, "ERR write failed: %s", rk_strerror(p->first_error));
    }
}

static void write_done(struct kv_write *w, void *ctx)
{
    struct pending *p = ctx;

    if (w->result != 0 && p->first_error == 0) {
        p->first_error = w->result;
        p->err_answered = w->answered;
        p->err_needed = w->needed;
        p->err_read = w->read_failed;
    }
    p->count += w->existed;
    if (--p->left == 0) {
        write_reply(p);
        client_finish(p);
    }
}

/*
 * Start n writes: pairs (key, value) from argument `first` in steps of
 * `step` (step 1: deletes, or with p->expiry STORE_EXPIRY_TOUCH expiry
 * changes, of every argument from first), as one atomic group when
 * atomic; each takes p->expiry and p->expire_ms.  Replies once all have completed: CMD_DONE when
 * that happened inside this call (none could start, or the coordinator refused them at once), else
 * CMD_ASYNC and write_done() finishes it.  Run by EXEC (p->txn), the writes join the EXEC's atomic
 * group instead, which EXEC hands to kv once every queued command has run (txn.h).
 */
static int start_writes(struct client *c, struct pending *p, size_t first, size_t step,
                        bool tombstone, const struct vclock *context, bool atomic)
{
    size_t n = (p->cmd->argc - first) / step;
    int rc;

    p->writes_borrowed = p->txn != NULL;
    p->writes = p->txn != NULL ? txn_take_writes(p->txn, n)
                : n == 1       ? &p->write1
                               : calloc(n, sizeof(*p->writes));
    if (p->writes == NULL) {
        client_error(p, "ERR out of memory");
        return CMD_DONE;
    }
    p->n_writes = n;
    p->left = n + 1; /* held until every write started: one may complete inside its call */
    for (size_t i = 0; i < n; i++) {
        size_t klen, vlen = 0;
        const uint8_t *key = arg(p, first + i * step, &klen);
        const uint8_t *value = step == 1 ? NULL : arg(p, first + i * step + 1, &vlen);
        kv_write_init(&p->writes[i], key, klen, value, vlen, tombstone, context, write_done, p);
        kv_write_expiry(&p->writes[i], p->expiry, p->expire_ms);
        p->writes[i].quorum = p->quorum;
        if (p->txn != NULL) {
            if (p->expiry != STORE_EXPIRY_TOUCH) { /* an expiry change's value is the store's */
                txn_note_write(p->txn, key, klen, value, vlen, tombstone);
            }
        } else if (!atomic && (rc = kv_write_start(c->node->kv, &p->writes[i])) != 0) {
            p->first_error = p->first_error ? p->first_error : rc;
            p->left--;
        }
    }
    if (atomic && p->txn == NULL && (rc = kv_write_atomic(c->node->kv, p->writes, n)) != 0) {
        p->first_error = rc;
        p->left -= n; /* none of them started */
    }
    if (--p->left == 0) {
        write_reply(p);
        return CMD_DONE;
    }
    return CMD_ASYNC;
}

/* Keys and values of a write command within their limits (checked before any write starts). */
static bool write_args_ok(struct client *c, struct pending *p, size_t first, size_t step)
{
    for (size_t i = first; i < p->cmd->argc; i += step) {
        if (over_limit(c, p, "key", p->cmd->argv[i].len, c->node->cfg.key_max) ||
            (step == 2 &&
             over_limit(c, p, "value", p->cmd->argv[i + 1].len, c->node->cfg.value_max))) {
            return false;
        }
    }
    return true;
}

/*
 * Argument i as a signed decimal: an optional '-', then digits only (no
 * blank, '+' or NUL), within int64_t.  False otherwise.
 */
static bool arg_i64(const struct pending *p, size_t i, int64_t *out)
{
    const char *s = (const char *)p->cmd->argv[i].p;
    size_t len = p->cmd->argv[i].len;
    bool minus = len > 0 && s[0] == '-';
    uint64_t v;

    if (num_parse_u64(s + minus, len - minus, minus ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &v) !=
        0) {
        return false;
    }
    *out = minus ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/*
 * The absolute expiry (ms since the epoch) of a relative or absolute time
 * t in seconds or ms (unit_ms 1000 or 1), as EX/PX/EXAT/PXAT and EXPIRE,
 * PEXPIRE, EXPIREAT, PEXPIREAT give it.  A time already past is 1 (an
 * expiry long gone: never 0, which means none).  False when it does not
 * fit in ms since the epoch (Redis's "invalid expire time").
 */
static bool expiry_at(int64_t t, uint64_t unit_ms, bool absolute, uint64_t now_ms, uint64_t *out)
{
    int64_t ms, base = absolute ? 0 : (int64_t)now_ms;

    if (t > INT64_MAX / (int64_t)unit_ms || t < INT64_MIN / (int64_t)unit_ms) {
        return false;
    }
    ms = t * (int64_t)unit_ms;
    if (ms > INT64_MAX - base) {
        return false;
    }
    ms += base;
    *out = ms > 0 ? (uint64_t)ms : 1;
    return true;
}

/* SET's options, as set_parse_options() reads them. */
struct set_options {
    enum store_cond cond;     /* NX: only when absent; XX: only when present */
    bool get;                 /* GET: reply with the value the key held */
    enum store_expiry expiry; /* STORE_EXPIRY_SET, or KEEP for KEEPTTL */
    uint64_t expire_ms;       /* EX/PX/EXAT/PXAT: the absolute expiry; 0: none */
};

/*
 * SET's expiry option at argument *i (EX s, PX ms, EXAT unix-s, PXAT
 * unix-ms, KEEPTTL) into o, *i left on its last argument: 1 when one was
 * read, 0 when argument *i is none of them, -1 after replying with the
 * error (a second expiry option, a missing or bad time: a positive integer
 * as Redis requires).
 */
static int set_parse_expiry(struct pending *p, size_t *i, struct set_options *o)
{
    static const char *const names[] = {"ex", "px", "exat", "pxat", "keepttl"};
    size_t k = 0;
    int64_t t;

    while (k < 5 && !resp_arg_is(p->cmd, *i, names[k])) {
        k++;
    }
    if (k == 5) {
        return 0;
    }
    if (o->expire_ms != 0 || o->expiry == STORE_EXPIRY_KEEP || (k < 4 && *i + 1 >= p->cmd->argc)) {
        client_error(p, "ERR syntax error");
        return -1;
    }
    if (k == 4) {
        o->expiry = STORE_EXPIRY_KEEP;
        return 1;
    }
    if (!arg_i64(p, ++*i, &t) || t <= 0 ||
        !expiry_at(t, k % 2 == 0 ? 1000 : 1, k >= 2, clock_wall_ms(), &o->expire_ms)) {
        client_error(p, "ERR invalid expire time in 'set' command");
        return -1;
    }
    return 1;
}

/*
 * Read SET's options, from argument 3 on, into o: NX, XX, GET and one of
 * EX, PX, EXAT, PXAT, KEEPTTL, in any order, case-insensitive; NX, XX or
 * GET given twice counts once, as in Redis 7; NX with XX, a second expiry
 * option or an unknown one is "-ERR syntax error", as Redis answers.
 * Replies with the error and returns false when they do not parse.
 */
static bool set_parse_options(struct pending *p, struct set_options *o)
{
    *o = (struct set_options){.cond = STORE_COND_NONE, .expiry = STORE_EXPIRY_SET};
    for (size_t i = 3; i < p->cmd->argc; i++) {
        bool nx = resp_arg_is(p->cmd, i, "nx"), xx = resp_arg_is(p->cmd, i, "xx");
        enum store_cond cond = nx ? STORE_COND_ABSENT : STORE_COND_PRESENT;
        int e;
        if ((nx || xx) && (o->cond == STORE_COND_NONE || o->cond == cond)) {
            o->cond = cond;
            continue;
        }
        if (resp_arg_is(p->cmd, i, "get")) {
            o->get = true;
            continue;
        }
        if ((e = set_parse_expiry(p, &i, o)) != 0) {
            if (e < 0) {
                return false;
            }
            continue;
        }
        client_error(p, "ERR syntax error");
        return false;
    }
    return true;
}

/*
 * The reply of a conditional write (SET NX/XX/GET, GETSET, GETDEL): the
 * old value (nil when none) when it asked for one, else +OK when it wrote
 * and nil when its condition did not hold; -CONFLICT for a key with
 * siblings, which has no single old value (nothing was written).
 */
static void cond_reply(struct pending *p)
{
    struct kv_write *w = &p->writes[0];
    char line[256];

    if (p->first_error != 0 && w->read_failed &&
        replica_error(line, sizeof(line), p->first_error, p->err_answered, p->err_needed, false)) {
        client_error(p, "%s", line); /* the read it is decided on: nothing was written */
    } else if (p->first_error != 0) {
        write_reply(p);
    } else if (w->conflict) {
        client_error(p, "CONFLICT the key has siblings: nothing was written; read them with KGET "
                        "and resolve with KSET key value CONTEXT ctx");
    } else if (p->want_old && w->old != NULL) {
        resp_put_bulk(client_reply(p), w->old, w->old_len);
    } else if (p->want_old || w->skipped) {
        resp_put_null(client_reply(p), p->c->proto);
    } else {
        resp_put_simple(client_reply(p), "OK");
    }
    free(w->old);
    w->old = NULL;
}

static void cond_done(struct kv_write *w, void *ctx)
{
    struct pending *p = ctx;

    if (w->result != 0 && p->first_error == 0) {
        p->first_error = w->result;
        p->err_answered = w->answered;
        p->err_needed = w->needed;
    }
    if (--p->left == 0) {
        cond_reply(p);
        client_finish(p);
    }
}

/*
 * Start one conditional write of argument 1 (value: argument 2, or a
 * delete when tombstone), as start_writes() starts a plain one: inside
 * EXEC it joins the EXEC's group, where the store decides it in the
 * group's transaction, after the writes queued before it.
 */
static int start_cond_write(struct client *c, struct pending *p, bool tombstone,
                            enum store_cond cond)
{
    size_t klen, vlen = 0;
    const uint8_t *key = arg(p, 1, &klen);
    const uint8_t *value = tombstone ? NULL : arg(p, 2, &vlen);
    int rc;

    p->writes_borrowed = p->txn != NULL;
    p->writes = p->txn != NULL ? txn_take_writes(p->txn, 1) : &p->write1;
    if (p->writes == NULL) {
        client_error(p, "ERR out of memory");
        return CMD_DONE;
    }
    p->n_writes = 1;
    p->left = 2; /* held until it started: it may complete inside its call */
    kv_write_init(&p->writes[0], key, klen, value, vlen, tombstone, NULL, cond_done, p);
    kv_write_cond(&p->writes[0], cond, p->want_old);
    kv_write_expiry(&p->writes[0], p->expiry, p->expire_ms);
    if (p->txn != NULL) {
        txn_note_cond_write(p->txn, key, klen, value, vlen, tombstone, cond);
    } else if ((rc = kv_write_start(c->node->kv, &p->writes[0])) != 0) {
        p->first_error = rc;
        p->left--;
    }
    if (--p->left == 0) {
        cond_reply(p);
        return CMD_DONE;
    }
    return CMD_ASYNC;
}

/* SET key value [NX|XX] [GET] [EX s|PX ms|EXAT unix-s|PXAT unix-ms|KEEPTTL] */
static int cmd_set(struct client *c, struct pending *p)
{
    struct set_options o;

    if (!set_parse_options(p, &o)) {
        return CMD_DONE;
    }
    if (over_limit(c, p, "key", p->cmd->argv[1].len, c->node->cfg.key_max) ||
        over_limit(c, p, "value", p->cmd->argv[2].len, c->node->cfg.value_max)) {
        return CMD_DONE;
    }
    p->expiry = o.expiry;
    p->expire_ms = o.expire_ms;
    if (o.cond == STORE_COND_NONE && !o.get) {
        /* the write takes key and value only; with no NX, XX or GET the pipeline's ordering
           (commands_flags()) reads nothing more of the options */
        p->cmd->argc = 3;
        return start_writes(c, p, 1, 2, false, NULL, false);
    }
    /* argc stays: the pipeline's ordering reads the options (commands_flags()) */
    p->want_old = o.get;
    return start_cond_write(c, p, false, o.cond);
}

/* GETSET key value: SET key value GET. */
static int cmd_getset(struct client *c, struct pending *p)
{
    if (!write_args_ok(c, p, 1, 2)) {
        return CMD_DONE;
    }
    p->want_old = true;
    return start_cond_write(c, p, false, STORE_COND_NONE);
}

/* GETDEL key: the value, deleted; nil (and nothing written) when absent. */
static int cmd_getdel(struct client *c, struct pending *p)
{
    if (!write_args_ok(c, p, 1, 1)) {
        return CMD_DONE;
    }
    p->want_old = true;
    return start_cond_write(c, p, true, STORE_COND_PRESENT);
}

/*
 * MSET: every pair in one transaction, all or nothing, as Redis's MSET is
 * atomic, when the keys are this node's alone; under replication each key
 * is its own quorum write (kv_write_atomic()).
 */
static int cmd_mset(struct client *c, struct pending *p)
{
    size_t pairs = (p->cmd->argc - 1) / 2;

    if ((p->cmd->argc - 1) % 2 != 0) {
        client_error(p, "ERR wrong number of arguments for 'mset' command");
        return CMD_DONE;
    }
    if (pairs > store_batch_max(c->node->store)) {
        client_error(p, "ERR MSET of %zu keys is over the %zu one transaction takes", pairs,
                     store_batch_max(c->node->store));
        return CMD_DONE;
    }
    if (!write_args_ok(c, p, 1, 2)) {
        return CMD_DONE;
    }
    return start_writes(c, p, 1, 2, false, NULL, true);
}

/*
 * DEL key [key ...]: the number of keys that held a live value, each now a
 * tombstone.  Under replication each key's delete is decided against a
 * quorum read and its tombstone carries the merged context, so it
 * supersedes the latest write even through a replica that missed it.
 */
static int cmd_del(struct client *c, struct pending *p)
{
    if (!write_args_ok(c, p, 1, 1)) {
        return CMD_DONE;
    }
    return start_writes(c, p, 1, 1, true, NULL, false);
}

/*
 * The CONTEXT argument i of KSET or KDEL into p->context: hex of a clock's
 * encoding and its tag, which must be the tag of this command's key
 * (argument 1) under this cluster's key, compared in constant time before
 * the clock is decoded.  Anything else (not hex, too short or too long, a
 * tag of another key or cluster, a changed or cut context) replies with
 * the error and returns false, with nothing written.
 */
static bool context_arg(struct client *c, struct pending *p, size_t i)
{
    size_t hlen, klen, clen, used;
    const uint8_t *hex = arg(p, i, &hlen);
    const uint8_t *key = arg(p, 1, &klen);
    uint8_t tag[CHANNEL_CONTEXT_TAG_BYTES];
    uint8_t *raw = NULL;
    bool ok = hlen <= COMMANDS_CONTEXT_HEX_MAX && hlen / 2 > CHANNEL_CONTEXT_TAG_BYTES &&
              (raw = malloc(hlen / 2)) != NULL && hex_decode(raw, (const char *)hex, hlen);

    if (ok) {
        clen = hlen / 2 - CHANNEL_CONTEXT_TAG_BYTES;
        channel_key_context_tag(c->node->key, key, klen, raw, clen, tag);
        ok = crypto_verify_16(tag, raw + clen) == 0 &&
             vclock_decode(raw, clen, &used, &p->context) == 0 && used == clen;
    }
    free(raw);
    if (!ok) {
        client_error(p, "ERR invalid CONTEXT: use the context KGET returned");
    }
    return ok;
}

/*
 * The options of KSET and KDEL from argument `from` on: CONTEXT ctx and W
 * n, in any order, each at most once.  False after replying with the
 * error (usage: the command's syntax, for the syntax error).
 */
static bool context_options(struct client *c, struct pending *p, size_t from, const char *usage,
                            bool *has_context)
{
    bool has_w = false;

    *has_context = false;
    if ((p->cmd->argc - from) % 2 != 0 || p->cmd->argc > from + 4) {
        client_error(p, "ERR syntax error: %s", usage);
        return false;
    }
    for (size_t i = from; i + 1 < p->cmd->argc; i += 2) {
        if (resp_arg_is(p->cmd, i, "context") && !*has_context) {
            if (!context_arg(c, p, i + 1)) {
                return false;
            }
            *has_context = true;
        } else if (resp_arg_is(p->cmd, i, "w") && !has_w) {
            if (!quorum_arg(c, p, i + 1, "W")) {
                return false;
            }
            has_w = true;
        } else {
            client_error(p, "ERR syntax error: %s", usage);
            return false;
        }
    }
    return true;
}

/* KSET key value [CONTEXT ctx] [W n]. */
static int cmd_kset(struct client *c, struct pending *p)
{
    bool has_context;

    if (!context_options(c, p, 3, "KSET key value [CONTEXT ctx] [W n]", &has_context)) {
        return CMD_DONE;
    }
    p->cmd->argc = 3; /* the writes take key and value only */
    if (!write_args_ok(c, p, 1, 2)) {
        return CMD_DONE;
    }
    return start_writes(c, p, 1, 2, false, has_context ? &p->context : NULL, false);
}

/*
 * KDEL key CONTEXT ctx [W n]: a tombstone over exactly the siblings ctx
 * saw; a sibling written concurrently (not in ctx) stays beside it.  No
 * read decides it: the context does (DEL reads the key first).  Replies
 * OK once w replicas hold the tombstone, as KSET: which values it took
 * away is what ctx saw, and no one replica's copy can tell the count.
 */
static int cmd_kdel(struct client *c, struct pending *p)
{
    static const char usage[] = "KDEL key CONTEXT ctx [W n]";
    bool has_context;

    if (!context_options(c, p, 2, usage, &has_context)) {
        return CMD_DONE;
    }
    if (!has_context) {
        client_error(p, "ERR syntax error: %s (DEL deletes without one)", usage);
        return CMD_DONE;
    }
    p->cmd->argc = 2; /* the write takes the key only */
    if (!write_args_ok(c, p, 1, 1)) {
        return CMD_DONE;
    }
    return start_writes(c, p, 1, 1, true, &p->context, false);
}

/* --- expiry ------------------------------------------------------------------------- */

/* SETEX key seconds value, PSETEX key milliseconds value: SET key value EX|PX t. */
static int cmd_setex(struct client *c, struct pending *p)
{
    bool ms = strcmp(p->command->name, "psetex") == 0;
    struct resp_arg t = p->cmd->argv[2];
    int64_t v;

    if (!arg_i64(p, 2, &v) || v <= 0 ||
        !expiry_at(v, ms ? 1 : 1000, false, clock_wall_ms(), &p->expire_ms)) {
        client_error(p, "ERR invalid expire time in '%s' command", p->command->name);
        return CMD_DONE;
    }
    /* the writes take (key, value) pairs: the value moves next to its key */
    p->cmd->argv[2] = p->cmd->argv[3];
    p->cmd->argv[3] = t;
    p->cmd->argc = 3;
    if (!write_args_ok(c, p, 1, 2)) {
        return CMD_DONE;
    }
    p->expiry = STORE_EXPIRY_SET;
    return start_writes(c, p, 1, 2, false, NULL, false);
}

/*
 * EXPIRE key seconds, PEXPIRE key ms, EXPIREAT key unix-s, PEXPIREAT key
 * unix-ms: 1 when the key had a live value, now expiring then (a time
 * already past deletes it, as in Redis), 0 when it had none.  A new version
 * of the key's live value, decided against a quorum read under replication
 * (kv_write_reads()), so it supersedes the latest write.  Redis 7's
 * NX, XX, GT and LT are refused by name.
 */
static int cmd_expire(struct client *c, struct pending *p)
{
    const char *name = p->command->name;
    bool ms = name[0] == 'p', absolute = strstr(name, "at") != NULL;
    int64_t t;

    if (p->cmd->argc > 3) {
        client_error(p, "ERR %s option '%s' is not supported by ringkv", name, arg_str(p, 3));
        return CMD_DONE;
    }
    if (!arg_i64(p, 2, &t)) {
        client_error(p, "ERR value is not an integer or out of range");
        return CMD_DONE;
    }
    if (!expiry_at(t, ms ? 1 : 1000, absolute, clock_wall_ms(), &p->expire_ms)) {
        client_error(p, "ERR invalid expire time in '%s' command", name);
        return CMD_DONE;
    }
    p->cmd->argc = 2; /* the write takes the key only */
    if (!write_args_ok(c, p, 1, 1)) {
        return CMD_DONE;
    }
    p->expiry = STORE_EXPIRY_TOUCH;
    return start_writes(c, p, 1, 1, false, NULL, false);
}

/* PERSIST key: 1 when the key's live value had an expiry and now has none, else 0. */
static int cmd_persist(struct client *c, struct pending *p)
{
    if (!write_args_ok(c, p, 1, 1)) {
        return CMD_DONE;
    }
    p->expiry = STORE_EXPIRY_TOUCH;
    p->expire_ms = 0;
    return start_writes(c, p, 1, 1, false, NULL, false);
}

/*
 * TTL and PTTL: -2 when the key has no live value, -1 when its value does
 * not expire, else the time left (TTL in seconds, rounded as Redis rounds
 * it; PTTL in ms), by this node's wall clock.  Siblings: -CONFLICT, as GET.
 */
static void ttl_reply(struct client *c, struct pending *p, struct kv_read *r, struct buf *out)
{
    uint64_t now = clock_wall_ms();
    const struct sibling *one = NULL;
    struct record rec;
    size_t live = 0;
    int rc = r->result;
    char text[256];

    (void)c;
    record_init(&rec);
    if (rc == 0) {
        rc = record_decode(r->record, r->record_len, &rec);
    }
    for (size_t i = 0; rc == 0 && i < rec.n; i++) {
        if (!sibling_dead(&rec.s[i], now)) {
            one = &rec.s[i];
            live++;
        }
    }
    if (rc != 0 && rc != RK_ENOTFOUND) {
        p->error = true;
        read_error_line(text, sizeof(text), rc, r->answered, r->needed);
        resp_put_errorf(out, "%s", text);
    } else if (live > 1) {
        p->error = true;
        resp_put_errorf(out, "CONFLICT the key has %zu siblings: read them with KGET", live);
    } else if (live == 0 || one->expire_ms == 0) {
        resp_put_int(out, live == 0 ? -2 : -1);
    } else if (strcmp(p->command->name, "pttl") == 0) {
        resp_put_int(out, (int64_t)(one->expire_ms - now));
    } else {
        resp_put_int(out, (int64_t)((one->expire_ms - now + 500) / 1000));
    }
    record_deinit(&rec);
}

static const struct read_cmd read_ttl = {ttl_reply, NULL};

static int cmd_ttl(struct client *c, struct pending *p)
{
    if (p->cmd->argv[1].len > c->node->cfg.key_max) {
        resp_put_int(client_reply(p), -2); /* a key over key-max cannot exist */
        return CMD_DONE;
    }
    return start_reads(c, p, 1, &read_ttl);
}

/* --- connection ---------------------------------------------------------------------- */

static int cmd_ping(struct client *c, struct pending *p)
{
    (void)c;
    if (p->cmd->argc > 2) {
        client_error(p, "ERR wrong number of arguments for 'ping' command");
    } else if (p->cmd->argc == 2) {
        resp_put_bulk(client_reply(p), p->cmd->argv[1].p, p->cmd->argv[1].len);
    } else {
        resp_put_simple(client_reply(p), "PONG");
    }
    return CMD_DONE;
}

static int cmd_echo(struct client *c, struct pending *p)
{
    (void)c;
    resp_put_bulk(client_reply(p), p->cmd->argv[1].p, p->cmd->argv[1].len);
    return CMD_DONE;
}

/* TIME: the node's wall clock, as Redis gives it: seconds and microseconds. */
static int cmd_time(struct client *c, struct pending *p)
{
    struct timespec ts;
    struct buf *out = client_reply(p);
    char sec[24], usec[24];

    (void)c;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(sec, sizeof(sec), "%lld", (long long)ts.tv_sec);
    snprintf(usec, sizeof(usec), "%ld", ts.tv_nsec / 1000);
    resp_put_array(out, 2);
    resp_put_bulk_str(out, sec);
    resp_put_bulk_str(out, usec);
    return CMD_DONE;
}

/* QUIT: +OK, and nothing sent after it runs (Redis closes at once). */
static int cmd_quit(struct client *c, struct pending *p)
{
    (void)c;
    client_quit(p);
    return reply_ok(p);
}

static int cmd_select(struct client *c, struct pending *p)
{
    (void)c;
    uint64_t db;

    if (num_parse_u64(arg_str(p, 1), p->cmd->argv[1].len, UINT64_MAX, &db) == RK_ESYNTAX) {
        client_error(p, "ERR value is not an integer or out of range");
        return CMD_DONE;
    }
    if (!arg_count(p, 1, 0, &db)) {
        client_error(p, "ERR DB index is out of range");
        return CMD_DONE;
    }
    return reply_ok(p);
}

/*
 * AUTH [user] password, also HELLO's AUTH user password.  ringkv has one
 * user, Redis's "default" (matched exactly, auth_user_is_default()).
 * Without requirepass the default user needs no password, as in Redis 7:
 * "AUTH default anything" succeeds (node-redis sends it whenever it was
 * given a password), another user is a wrong pair, and the one-argument
 * form is the error Redis gives.  With requirepass the password is
 * compared in constant time, byte for byte (a NUL is a byte like any
 * other), and an address that keeps guessing is paused (auth.h): its AUTHs
 * are refused unread for a while.  user_at is 0 for the one-argument form.
 */
static bool check_auth(struct client *c, struct pending *p, size_t user_at, size_t pass_at)
{
    static struct log_limit failed_log, throttled_log;
    struct server *n = c->node;
    const struct resp_arg *pass = &p->cmd->argv[pass_at];
    const struct resp_arg *user = user_at != 0 ? &p->cmd->argv[user_at] : NULL;
    bool user_ok = user == NULL || auth_user_is_default(user->p, user->len);
    uint64_t retry_ms = 0;
    enum auth_result r;

    if (n->cfg.requirepass[0] == '\0' && user == NULL) {
        client_error(p, "ERR AUTH <password> called without any password configured for the "
                        "default user. Are you sure your configuration is correct?");
        return false;
    }
    if (n->cfg.requirepass[0] == '\0') {
        r = user_ok ? AUTH_OK : AUTH_WRONG;
    } else {
        /* another user name is as wrong as a wrong password (requirepass is never empty here) */
        r = auth_guard_check(&n->auth, c->addr, clock_mono_ms(), n->cfg.requirepass,
                             user_ok ? pass->p : (const uint8_t *)"", user_ok ? pass->len : 0,
                             &retry_ms);
    }
    if (r == AUTH_THROTTLED) {
        n->metrics.auth_throttled++;
        LOG_LIMITED(&throttled_log, LOG_WARN, "auth_throttled", "client=%llu peer=%s retry_ms=%llu",
                    (unsigned long long)c->id, c->addr, (unsigned long long)retry_ms);
        client_error(p,
                     "ERR AUTH throttled: too many wrong passwords from this address; retry in "
                     "%llu ms",
                     (unsigned long long)retry_ms);
        return false;
    }
    if (r != AUTH_OK) {
        n->metrics.auth_failures++;
        LOG_LIMITED(&failed_log, LOG_WARN, "auth_failed", "client=%llu peer=%s failures=%u",
                    (unsigned long long)c->id, c->addr, auth_guard_failures(&n->auth, c->addr));
        client_error(p, "WRONGPASS invalid username-password pair or user is disabled.");
        return false;
    }
    client_authed(c);
    return true;
}

static int cmd_auth(struct client *c, struct pending *p)
{
    if (p->cmd->argc > 3) {
        client_error(p, "ERR syntax error");
        return CMD_DONE;
    }
    if (check_auth(c, p, p->cmd->argc == 3 ? 1 : 0, p->cmd->argc - 1)) {
        reply_ok(p);
    }
    return CMD_DONE;
}

static bool client_name_ok(const struct resp_arg *a)
{
    for (size_t i = 0; i < a->len; i++) {
        if (a->p[i] < '!' || a->p[i] > '~') {
            return false;
        }
    }
    return a->len <= CLIENT_NAME_MAX;
}

static void hello_reply(struct client *c, struct pending *p)
{
    struct buf *out = client_reply(p);

    resp_put_map(out, 8, c->proto);
    resp_put_bulk_str(out, "server");
    resp_put_bulk_str(out, "ringkv");
    resp_put_bulk_str(out, "version");
    resp_put_bulk_str(out, COMMANDS_REDIS_VERSION);
    resp_put_bulk_str(out, "ringkv_version");
    resp_put_bulk_str(out, PACKAGE_VERSION);
    resp_put_bulk_str(out, "proto");
    resp_put_int(out, c->proto);
    resp_put_bulk_str(out, "id");
    resp_put_int(out, (int64_t)c->id);
    resp_put_bulk_str(out, "mode");
    resp_put_bulk_str(out, "standalone");
    resp_put_bulk_str(out, "role");
    resp_put_bulk_str(out, "master");
    resp_put_bulk_str(out, "modules");
    resp_put_array(out, 0);
}

/* HELLO [protover [AUTH user pass] [SETNAME name]] */
static int cmd_hello(struct client *c, struct pending *p)
{
    size_t i = 2;
    int proto = c->proto;

    if (p->cmd->argc >= 2) {
        uint64_t v;
        if (num_parse_u64(arg_str(p, 1), p->cmd->argv[1].len, UINT64_MAX, &v) == RK_ESYNTAX) {
            client_error(p, "ERR Protocol version is not an integer or out of range");
            return CMD_DONE;
        }
        proto = arg_count(p, 1, 3, &v) && v >= 2 ? (int)v : 0;
        if (proto == 0) {
            client_error(p, "NOPROTO unsupported protocol version");
            return CMD_DONE;
        }
    }
    for (; i < p->cmd->argc; i++) {
        if (resp_arg_is(p->cmd, i, "auth") && i + 2 < p->cmd->argc) {
            if (!check_auth(c, p, i + 1, i + 2)) {
                return CMD_DONE;
            }
            i += 2;
        } else if (resp_arg_is(p->cmd, i, "setname") && i + 1 < p->cmd->argc &&
                   client_name_ok(&p->cmd->argv[i + 1])) {
            snprintf(c->name, sizeof(c->name), "%s", arg_str(p, ++i));
        } else {
            client_error(p, "ERR Syntax error in HELLO option '%s'", arg_str(p, i));
            return CMD_DONE;
        }
    }
    if (!c->authed) {
        client_error(p, "NOAUTH HELLO must be called with the client already authenticated, "
                        "otherwise the HELLO AUTH <user> <pass> option can be used to "
                        "authenticate the client and select the RESP protocol version at the "
                        "same time");
        return CMD_DONE;
    }
    c->proto = proto;
    hello_reply(c, p);
    return CMD_DONE;
}

static void client_list_line(struct buf *out, const struct client *x, uint64_t now_ms)
{
    buf_printf(out, "id=%llu addr=%s name=%s age=%llu idle=%llu cmd=%llu resp=%d\n",
               (unsigned long long)x->id, x->addr, x->name,
               (unsigned long long)((now_ms - x->created_ms) / 1000),
               (unsigned long long)((now_ms - x->last_ms) / 1000), (unsigned long long)x->commands,
               x->proto);
}

static int cmd_client(struct client *c, struct pending *p)
{
    struct buf *out = client_reply(p);

    if (resp_arg_is(p->cmd, 1, "setname") && p->cmd->argc == 3) {
        if (!client_name_ok(&p->cmd->argv[2])) {
            client_error(p, "ERR Client names cannot contain spaces, newlines or special "
                            "characters.");
            return CMD_DONE;
        }
        snprintf(c->name, sizeof(c->name), "%s", arg_str(p, 2));
        return reply_ok(p);
    }
    if (resp_arg_is(p->cmd, 1, "getname") && p->cmd->argc == 2) {
        if (c->name[0] == '\0') {
            resp_put_null(out, c->proto);
        } else {
            resp_put_bulk_str(out, c->name);
        }
        return CMD_DONE;
    }
    if (resp_arg_is(p->cmd, 1, "id") && p->cmd->argc == 2) {
        resp_put_int(out, (int64_t)c->id);
        return CMD_DONE;
    }
    if (resp_arg_is(p->cmd, 1, "setinfo") && p->cmd->argc == 4) {
        return reply_ok(p);
    }
    if (resp_arg_is(p->cmd, 1, "list") && p->cmd->argc == 2) {
        struct buf text;
        uint64_t now = clock_mono_ms();
        buf_init(&text, 0);
        for (const struct client *x = c->node->clients; x != NULL; x = x->next) {
            client_list_line(&text, x, now);
        }
        resp_put_verbatim(out, buf_data(&text), text.len, c->proto);
        buf_free(&text);
        return CMD_DONE;
    }
    client_error(p,
                 "ERR unknown subcommand or wrong number of arguments for '%s'. Try CLIENT "
                 "HELP.",
                 arg_str(p, 1));
    return CMD_DONE;
}

/* --- server ------------------------------------------------------------------------ */

static int cmd_info(struct client *c, struct pending *p)
{
    struct buf text;

    buf_init(&text, 0);
    if (p->cmd->argc == 1) {
        metrics_info(c->node, NULL, &text);
    }
    for (size_t i = 1; i < p->cmd->argc; i++) {
        metrics_info(c->node, arg_str(p, i), &text);
    }
    resp_put_verbatim(client_reply(p), buf_data(&text), text.len, c->proto);
    buf_free(&text);
    return CMD_DONE;
}

/* Whether name matches one of CONFIG GET's patterns (arguments 2 on). */
static bool config_get_matches(const struct pending *p, const char *name)
{
    for (size_t i = 2; i < p->cmd->argc; i++) {
        if (fnmatch(arg_str(p, i), name, FNM_CASEFOLD) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * CONFIG GET pattern...: every setting whose name matches, as name/value
 * pairs: the settings table's names, then the Redis names it lacks, with
 * Redis's units where Redis has the setting (settings_config_get()).
 */
static void settings_get(struct client *c, struct pending *p)
{
    struct buf *out = client_reply(p);
    struct buf items;
    size_t n = 0;
    char value[SETTINGS_VALUE_MAX];

    buf_init(&items, 0);
    for (size_t i = 0; i < settings_defs_count + settings_redis_count; i++) {
        const char *name = i < settings_defs_count ? settings_defs[i].name
                                                   : settings_redis_name(i - settings_defs_count);
        if ((i >= settings_defs_count && settings_find(name) != NULL) ||
            !config_get_matches(p, name) ||
            settings_config_get(&c->node->cfg, name, value, sizeof(value)) != 0) {
            continue;
        }
        resp_put_bulk_str(&items, name);
        resp_put_bulk_str(&items, value);
        n++;
    }
    resp_put_map(out, n, c->proto);
    buf_append(out, buf_data(&items), items.len);
    buf_free(&items);
}

/* CONFIG SET name value: only settings marked changeable at run time (reload.h). */
static void settings_set_runtime(struct client *c, struct pending *p)
{
    const struct settings_def *d = settings_find(arg_str(p, 2));
    struct settings next = c->node->cfg;
    char err[256], source[32];

    if (strlen(arg_str(p, 2)) != p->cmd->argv[2].len ||
        strlen(arg_str(p, 3)) != p->cmd->argv[3].len) {
        client_error(p, "ERR CONFIG SET failed: a setting's name and value hold no NUL bytes");
        return;
    }
    if (d == NULL || !d->runtime) {
        client_error(p, "ERR CONFIG SET failed: '%s' %s", arg_str(p, 2),
                     d == NULL ? "is not a setting" : "cannot change at run time");
        return;
    }
    snprintf(source, sizeof(source), "client=%llu", (unsigned long long)c->id);
    if (settings_set(&next, d->name, arg_str(p, 3), err, sizeof(err)) != 0 ||
        reload_apply(c->node, &next, source, NULL, err, sizeof(err)) != 0) {
        client_error(p, "ERR CONFIG SET failed: %s", err);
        return;
    }
    reply_ok(p);
}

static int cmd_config(struct client *c, struct pending *p)
{
    if (resp_arg_is(p->cmd, 1, "get") && p->cmd->argc >= 3) {
        settings_get(c, p);
    } else if (resp_arg_is(p->cmd, 1, "set") && p->cmd->argc == 4) {
        settings_set_runtime(c, p);
    } else {
        client_error(p,
                     "ERR unknown subcommand or wrong number of arguments for '%s'. Try "
                     "CONFIG HELP.",
                     arg_str(p, 1));
    }
    return CMD_DONE;
}

static int cmd_cluster(struct client *c, struct pending *p)
{
    (void)c;
    client_error(p, "ERR This instance has cluster support disabled");
    return CMD_DONE;
}

/* COMMAND info entry: name, arity, flags, first key, last key, step. */
static void command_info(struct buf *out, const struct command *cmd)
{
    resp_put_array(out, 6);
    resp_put_bulk_str(out, cmd->name);
    resp_put_int(out, cmd->arity);
    resp_put_array(out, 1);
    resp_put_simple(out, cmd->flags & CMD_WRITE  ? "write"
                         : cmd->flags & CMD_READ ? "readonly"
                                                 : "fast");
    resp_put_int(out, cmd->first_key);
    resp_put_int(out, cmd->last_key);
    resp_put_int(out, cmd->key_step);
}

static void command_docs(struct buf *out, const struct command *cmd, int proto)
{
    resp_put_bulk_str(out, cmd->name);
    resp_put_map(out, 2, proto);
    resp_put_bulk_str(out, "summary");
    resp_put_bulk_str(out, cmd->summary);
    resp_put_bulk_str(out, "group");
    resp_put_bulk_str(out, cmd->flags & CMD_ADMIN ? "server" : "string");
}

static int cmd_command(struct client *c, struct pending *p)
{
    struct buf *out = client_reply(p);

    if (p->cmd->argc == 1) {
        resp_put_array(out, commands_count);
        for (size_t i = 0; i < commands_count; i++) {
            command_info(out, &commands[i]);
        }
    } else if (resp_arg_is(p->cmd, 1, "count")) {
        resp_put_int(out, (int64_t)commands_count);
    } else if (resp_arg_is(p->cmd, 1, "docs")) {
        size_t n = 0;
        struct buf docs;
        buf_init(&docs, 0);
        for (size_t i = 0; i < commands_count; i++) {
            bool want = p->cmd->argc == 2;
            for (size_t a = 2; a < p->cmd->argc && !want; a++) {
                want = strcasecmp(arg_str(p, a), commands[i].name) == 0;
            }
            if (want) {
                command_docs(&docs, &commands[i], c->proto);
                n++;
            }
        }
        resp_put_map(out, n, c->proto);
        buf_append(out, buf_data(&docs), docs.len);
        buf_free(&docs);
    } else if (resp_arg_is(p->cmd, 1, "info")) {
        resp_put_array(out, p->cmd->argc - 2);
        for (size_t a = 2; a < p->cmd->argc; a++) {
            const struct command *cmd = commands_find(arg_str(p, a), p->cmd->argv[a].len, NULL);
            if (cmd != NULL) {
                command_info(out, cmd);
            } else {
                resp_put_null(out, c->proto);
            }
        }
    } else {
        client_error(p, "ERR unknown subcommand '%s'. Try COMMAND HELP.", arg_str(p, 1));
    }
    return CMD_DONE;
}

/* A fraction as the decimal text the admin replies use for non-integers. */
static void put_fraction(struct buf *out, double v, int digits)
{
    char text[32];
    snprintf(text, sizeof(text), "%.*f", digits, v);
    resp_put_bulk_str(out, text);
}

static void put_hex64(struct buf *out, uint64_t v)
{
    char text[17];
    snprintf(text, sizeof(text), "%016llx", (unsigned long long)v);
    resp_put_bulk_str(out, text);
}

static const char *member_state_name(const struct membership *m, const struct member *e)
{
    return e == membership_self(m) ? "self" : detector_state_name(e->state);
}

/* Primary ownership of every member of the ring, as fractions, indexed like the table. */
static double member_owns(const struct ring *r, const struct member *e, const ring_len *own)
{
    int i = ring_member_count(r) > 0 ? ring_member_find(r, e->e.id) : RK_ENOTFOUND;
    return i >= 0 ? ring_len_fraction(own[i]) : 0.0;
}

static void status_member(struct buf *out, const struct membership *m, const struct member *e,
                          double owns, int proto)
{
    bool up = e == membership_self(m) || e->state != DETECTOR_DOWN;

    resp_put_map(out, 11, proto);
    resp_put_bulk_str(out, "id");
    resp_put_bulk_str(out, e->e.id);
    resp_put_bulk_str(out, "rack");
    resp_put_bulk_str(out, membership_entry_rack(&e->e));
    resp_put_bulk_str(out, "tokens");
    resp_put_int(out, e->e.tokens);
    resp_put_bulk_str(out, "status");
    resp_put_bulk_str(out, membership_status_names[e->e.status]);
    resp_put_bulk_str(out, "up");
    resp_put_int(out, up);
    resp_put_bulk_str(out, "state");
    resp_put_bulk_str(out, member_state_name(m, e));
    resp_put_bulk_str(out, "owns");
    put_fraction(out, owns, 6);
    resp_put_bulk_str(out, "peer_addr");
    resp_put_bulk_str(out, membership_entry_peer_addr(&e->e));
    resp_put_bulk_str(out, "client_addr");
    resp_put_bulk_str(out, membership_entry_client_addr(&e->e));
    resp_put_bulk_str(out, "digest");
    put_hex64(out, e->e.digest);
    resp_put_bulk_str(out, "target");
    put_hex64(out, e->e.target);
}

static void status_members(struct client *c, struct buf *out)
{
    const struct membership *m = gossip_members(c->node->gossip);
    const struct ring *r = membership_ring(m);
    ring_len *own = calloc(ring_member_count(r) + 1, sizeof(*own));

    if (own != NULL && ring_member_count(r) > 0) {
        ring_ownership(r, 1, own);
    }
    resp_put_array(out, membership_count(m));
    for (size_t i = 0; i < membership_count(m); i++) {
        const struct member *e = membership_at(m, i);
        status_member(out, m, e, own != NULL ? member_owns(r, e, own) : 0.0, c->proto);
    }
    free(own);
}

/*
 * RINGKV STATUS: this node and the cluster as it sees it, for `ringkv status`
 * (cli_view.h has the reply's shape).  digest names the ring in force, target
 * the ring a change under way leads to (the same digest when none is); each
 * member's map carries the digest and target its own entry reports (target 0:
 * a node that predates targets).
 */
static void ringkv_status(struct client *c, struct pending *p)
{
    struct server *n = c->node;
    const struct membership *m = gossip_members(n->gossip);
    struct buf *out = client_reply(p);
    struct store_stats st;
    char hexid[2 * CHANNEL_CLUSTER_ID_BYTES + 1];
    size_t agree, up;
    bool converged = gossip_converged(n->gossip, &agree, &up);

    store_get_stats(n->store, &st);
    hex_encode(hexid, n->cluster_id, sizeof(n->cluster_id));
    resp_put_map(out, 16, c->proto);
    resp_put_bulk_str(out, "id");
    resp_put_bulk_str(out, n->cfg.id);
    resp_put_bulk_str(out, "rack");
    resp_put_bulk_str(out, n->cfg.rack);
    resp_put_bulk_str(out, "tokens");
    resp_put_int(out, membership_self(m)->e.tokens); /* in force: `ringkv tokens` changes it */
    resp_put_bulk_str(out, "cluster_id");
    resp_put_bulk_str(out, hexid);
    resp_put_bulk_str(out, "epoch");
    resp_put_int(out, (int64_t)membership_epoch(m));
    resp_put_bulk_str(out, "digest");
    put_hex64(out, membership_digest(m));
    resp_put_bulk_str(out, "target");
    put_hex64(out, membership_target_digest(m));
    resp_put_bulk_str(out, "converged");
    resp_put_int(out, converged);
    resp_put_bulk_str(out, "agree");
    resp_put_int(out, (int64_t)agree);
    resp_put_bulk_str(out, "up_count");
    resp_put_int(out, (int64_t)up);
    resp_put_bulk_str(out, "keys");
    resp_put_int(out, (int64_t)st.keys);
    resp_put_bulk_str(out, "map_used_bytes");
    resp_put_int(out, (int64_t)st.map_used);
    resp_put_bulk_str(out, "uptime_s");
    resp_put_int(out, (int64_t)server_uptime_s(n));
    resp_put_bulk_str(out, "clients");
    resp_put_int(out, (int64_t)n->n_clients);
    resp_put_bulk_str(out, "status");
    resp_put_bulk_str(out, membership_status_names[membership_self(m)->e.status]);
    resp_put_bulk_str(out, "members");
    status_members(c, out);
}

/*
 * RINGKV MEMBERS: the failure detector's view of every member, with its
 * status and the target digest its entry reports (0: it predates targets).
 */
static void ringkv_members(struct client *c, struct pending *p)
{
    const struct membership *m = gossip_members(c->node->gossip);
    struct buf *out = client_reply(p);
    uint64_t now = clock_mono_ms();

    resp_put_array(out, membership_count(m));
    for (size_t i = 0; i < membership_count(m); i++) {
        const struct member *e = membership_at(m, i);
        bool self = e == membership_self(m);
        resp_put_map(out, 9, c->proto);
        resp_put_bulk_str(out, "id");
        resp_put_bulk_str(out, e->e.id);
        resp_put_bulk_str(out, "state");
        resp_put_bulk_str(out, member_state_name(m, e));
        resp_put_bulk_str(out, "phi");
        put_fraction(out, self ? 0.0 : detector_phi(&e->det, now), 2);
        resp_put_bulk_str(out, "generation");
        resp_put_int(out, (int64_t)e->e.generation);
        resp_put_bulk_str(out, "version");
        resp_put_int(out, (int64_t)e->e.version);
        resp_put_bulk_str(out, "last_heard_ms");
        resp_put_int(out, self ? 0 : e->heard_ms == 0 ? -1 : (int64_t)(now - e->heard_ms));
        resp_put_bulk_str(out, "mean_interval_ms");
        put_fraction(out, self ? 0.0 : detector_mean(&e->det), 1);
        resp_put_bulk_str(out, "status");
        resp_put_bulk_str(out, membership_status_names[e->e.status]);
        resp_put_bulk_str(out, "target");
        put_hex64(out, e->e.target);
    }
}

/* One arc of RINGKV RING: (start, end], its share, its preference list. */
static void ring_arc(struct buf *out, const struct ring *r, uint64_t start, uint64_t end,
                     ring_len len, const uint32_t *list, size_t n, int proto)
{
    resp_put_map(out, 5, proto);
    resp_put_bulk_str(out, "start");
    put_hex64(out, start);
    resp_put_bulk_str(out, "end");
    put_hex64(out, end);
    resp_put_bulk_str(out, "fraction");
    put_fraction(out, ring_len_fraction(len), 6);
    resp_put_bulk_str(out, "owner");
    resp_put_bulk_str(out, ring_member_id(r, list[0]));
    resp_put_bulk_str(out, "preflist");
    resp_put_array(out, n);
    for (size_t i = 0; i < n; i++) {
        resp_put_bulk_str(out, ring_member_id(r, list[i]));
    }
}

/* The arcs of r for rf, adjacent arcs with the same list merged; returns how many. */
static size_t ring_arcs(struct buf *out, const struct ring *r, unsigned rf, int proto)
{
    size_t t = ring_token_count(r), arcs = 0, n = 0, pn;
    uint32_t list[RING_RF_MAX] = {0}, prev[RING_RF_MAX];
    uint64_t start = ring_token_at(r, t - 1).pos, arc_start = start;
    ring_len len = 0;

    for (size_t i = 0; i <= t; i++) {
        uint64_t end = i < t ? ring_token_at(r, i).pos : 0;
        pn = n;
        memcpy(prev, list, sizeof(list));
        if (i < t) {
            ring_preflist(r, end, rf, list, &n);
        }
        if (i > 0 && (i == t || n != pn || memcmp(prev, list, n * sizeof(*list)) != 0)) {
            ring_arc(out, r, arc_start, start, len, prev, pn, proto);
            arcs++;
            arc_start = start;
            len = 0;
        }
        if (i < t) {
            len += i == 0 ? RING_CIRCLE - start + end : (ring_len)(end - start);
            start = end;
        }
    }
    return arcs;
}

/* RINGKV RING [RF]: the arcs of the ring with their preference lists. */
static void ringkv_ring(struct client *c, struct pending *p)
{
    const struct membership *m = gossip_members(c->node->gossip);
    const struct ring *r = membership_ring(m);
    uint64_t rf = c->node->cfg.rf;
    struct buf arcs, *out = client_reply(p);
    size_t n = 0;

    if (p->cmd->argc == 3 && !arg_count(p, 2, RING_RF_MAX, &rf)) {
        rf = 0;
    }
    if (rf < 1 || rf > RING_RF_MAX) {
        client_error(p, "ERR RINGKV RING: rf must be an integer from 1 to %d, not '%.32s'",
                     RING_RF_MAX, arg_str(p, 2));
        return;
    }
    buf_init(&arcs, 0);
    if (ring_token_count(r) > 0) {
        n = ring_arcs(&arcs, r, (unsigned)rf, c->proto);
    }
    resp_put_map(out, 4, c->proto);
    resp_put_bulk_str(out, "epoch");
    resp_put_int(out, (int64_t)membership_epoch(m));
    resp_put_bulk_str(out, "digest");
    put_hex64(out, membership_digest(m));
    resp_put_bulk_str(out, "rf");
    resp_put_int(out, (int64_t)rf);
    resp_put_bulk_str(out, "arcs");
    resp_put_array(out, n);
    buf_append(out, buf_data(&arcs), arcs.len);
    buf_free(&arcs);
}

/* The removal's save completed: +OK, or why it was not kept. */
static void ringkv_removed(void *ctx, int result, const char *err)
{
    struct pending *p = ctx;

    if (result != 0) {
        client_error(p, "ERR RINGKV REMOVE: %s", err);
    } else {
        resp_put_simple(client_reply(p), "OK");
    }
    client_finish(p);
}

/* RINGKV REMOVE ID: remove a member this node sees down; +OK once the removal is saved. */
static int ringkv_remove(struct client *c, struct pending *p)
{
    char err[256];

    if (strlen(arg_str(p, 2)) != p->cmd->argv[2].len) {
        client_error(p, "ERR RINGKV REMOVE: a member id has no NUL bytes");
        return CMD_DONE;
    }
    if (gossip_remove(c->node->gossip, arg_str(p, 2), ringkv_removed, p, err, sizeof(err)) != 0) {
        client_error(p, "ERR RINGKV REMOVE: %s", err);
        return CMD_DONE;
    }
    return CMD_ASYNC;
}

/*
 * RINGKV BULKTEST [ID BYTES]: a test and diagnostic verb (bulktest.h).
 * With ID and BYTES, start streaming BYTES of synthetic bulk to member ID
 * through the bulk lane, +OK at once.  Alone, the report, a map:
 *   state            idle, running, done or failed (the outgoing stream)
 *   peer, bytes      whom it streams to, and how much was asked
 *   sent, elapsed_ms, rate_bps   payload bytes sealed, since the start, per second
 *   error            why it failed, or empty
 *   queue_peak, queue_max        most bytes that waited on that connection, and its bound
 *   inflight_peak, window        most bulk bytes sent and not granted back, and the window
 *   received, received_from      payload bytes of bulk this node received, last from whom
 *   received_ms, received_rate_bps   first to last arrival, and the rate over it
 *   control_gap_max_ms           longest wait between control messages on that connection
 *                                once bulk flowed
 */
static void ringkv_bulktest(struct client *c, struct pending *p)
{
    char err[256];
    uint64_t bytes;

    if (p->cmd->argc == 2) {
        bulktest_report(c->node, client_reply(p), c->proto);
        return;
    }
    if (p->cmd->argc != 4 || strlen(arg_str(p, 2)) != p->cmd->argv[2].len) {
        client_error(p, "ERR RINGKV BULKTEST: give a member id and a byte count, or nothing");
        return;
    }
    if (!arg_count(p, 3, UINT64_MAX, &bytes)) {
        client_error(p, "ERR RINGKV BULKTEST: '%s' is not a byte count", arg_str(p, 3));
        return;
    }
    if (bulktest_start(c->node, arg_str(p, 2), bytes, err, sizeof(err)) != 0) {
        client_error(p, "ERR RINGKV BULKTEST: %s", err);
        return;
    }
    resp_put_simple(client_reply(p), "OK");
}

/* --- RINGKV STATUS DEEP ------------------------------------------------------------- */

/*
 * RINGKV STATUS DEEP: every current member's own view, asked through peer
 * requests (rpc.h, MSG_OP_STATUS) and answered once every member has
 * answered, failed or timed out, so within request-timeout.  The node
 * answers for itself without a request; a member its detector sees down
 * is not asked.  The reply (`ringkv status --deep` reads it, README
 * "Cluster status"):
 *
 *   map: id (this node), digest (the digest of the ring in force when the
 *        command started, 16 hex digits: the command holds that ring until
 *        it answers, so a ring change meanwhile shows as members answering
 *        with another digest), request_timeout_ms, members: one map
 *        per member that is not left or removed, in id order, always with
 *        these keys:
 *     id          the member
 *     result      ok, timeout, closed (its connection closed first),
 *                 unsupported (its version does not know peer requests),
 *                 unreachable (no open connection), down (not asked: the
 *                 detector sees it down), overloaded (not asked: too
 *                 many requests outstanding to it), refused (it answered
 *                 with an error result), failed (anything else)
 *     error       "" for ok, else one sentence
 *     rtt_us      round trip of the request in microseconds (0 for this
 *                 node); -1 without an answer
 *     status      the member's own status (joining, normal, leaving); ""
 *     epoch       its ring epoch; -1
 *     digest      its ring digest, 16 hex digits; ""
 *     converged   1 when every member it sees up reports its digest, else 0; -1
 *     up_count    members it sees up, itself included; -1
 *     members     members in its table; -1
 *     uptime_s    its uptime in seconds; -1
 *     keys        keys in its store, tombstones included; -1
 *   ("" and -1: the value without an answer.)
 */

struct deep_status;

struct deep_row {
    struct deep_status *d;
    char id[RING_NAME_MAX + 1];
    const char *result; /* NULL: still waiting */
    const char *error;
    int64_t rtt_us;
    struct msg_status_view v; /* with result "ok" */
};

struct deep_status {
    struct client *c;
    struct pending *p;
    const struct ring *ring; /* in force at the start; a reference held until the reply */
    size_t n, left;          /* rows; rows still waiting, plus one while requests are being sent */
    struct deep_row rows[];
};

static void deep_put_row(struct buf *out, const struct deep_row *r, int proto)
{
    bool ok = strcmp(r->result, "ok") == 0;

    resp_put_map(out, 12, proto);
    resp_put_bulk_str(out, "id");
    resp_put_bulk_str(out, r->id);
    resp_put_bulk_str(out, "result");
    resp_put_bulk_str(out, r->result);
    resp_put_bulk_str(out, "error");
    resp_put_bulk_str(out, ok ? "" : r->error);
    resp_put_bulk_str(out, "rtt_us");
    resp_put_int(out, ok ? r->rtt_us : -1);
    resp_put_bulk_str(out, "status");
    resp_put_bulk_str(out, ok ? membership_status_names[r->v.status] : "");
    resp_put_bulk_str(out, "epoch");
    resp_put_int(out, ok ? (int64_t)r->v.epoch : -1);
    resp_put_bulk_str(out, "digest");
    if (ok) {
        put_hex64(out, r->v.digest);
    } else {
        resp_put_bulk_str(out, "");
    }
    resp_put_bulk_str(out, "converged");
    resp_put_int(out, ok ? r->v.converged : -1);
    resp_put_bulk_str(out, "up_count");
    resp_put_int(out, ok ? (int64_t)r->v.up_count : -1);
    resp_put_bulk_str(out, "members");
    resp_put_int(out, ok ? (int64_t)r->v.members : -1);
    resp_put_bulk_str(out, "uptime_s");
    resp_put_int(out, ok ? (int64_t)r->v.uptime_s : -1);
    resp_put_bulk_str(out, "keys");
    resp_put_int(out, ok ? (int64_t)r->v.keys : -1);
}

/* Every row has its outcome: write the reply and free d. */
static void deep_reply(struct deep_status *d)
{
    struct server *n = d->c->node;
    struct buf *out = client_reply(d->p);
    int proto = d->c->proto;

    resp_put_map(out, 4, proto);
    resp_put_bulk_str(out, "id");
    resp_put_bulk_str(out, n->cfg.id);
    resp_put_bulk_str(out, "digest");
    put_hex64(out, ring_digest(d->ring));
    resp_put_bulk_str(out, "request_timeout_ms");
    resp_put_int(out, (int64_t)n->cfg.request_timeout_ms);
    resp_put_bulk_str(out, "members");
    resp_put_array(out, d->n);
    for (size_t i = 0; i < d->n; i++) {
        deep_put_row(out, &d->rows[i], proto);
    }
    ring_unref(d->ring);
    free(d);
}

/* One row has its outcome; the last one answers (asynchronously, through client_finish()). */
static void deep_row_done(struct deep_row *r)
{
    struct deep_status *d = r->d;
    struct pending *p = d->p;

    if (--d->left == 0) {
        deep_reply(d);
        client_finish(p);
    }
}

/* The outcome of a failed request or of one never sent, as a row's result. */
static const char *deep_result_name(int err)
{
    switch (err) {
    case RK_ETIMEOUT:
        return "timeout";
    case RK_ECLOSED:
        return "closed";
    case RK_EMISMATCH:
        return "unsupported";
    case RK_EIO:
    case RK_ENOTFOUND:
        return "unreachable";
    case RK_ETOOBIG:
        return "overloaded";
    default:
        return "failed";
    }
}

static void deep_answer(void *ctx, int result, const struct request_reply *reply, uint64_t rtt_us)
{
    struct deep_row *r = ctx;

    r->rtt_us = (int64_t)rtt_us;
    if (result != 0) {
        r->result = deep_result_name(result);
        r->error = rpc_strerror(result);
    } else if (reply->status != MSG_RESULT_OK) {
        r->result = "refused";
        r->error = rpc_result_text(reply->status);
    } else if (msg_status_view_decode(reply->body, reply->body_len, &r->v) != 0) {
        r->result = "failed";
        r->error = "the member's answer did not decode";
    } else {
        r->result = "ok";
    }
    deep_row_done(r);
}

/* This node's own row: its view, without a request. */
static void deep_self(struct server *n, struct deep_row *r)
{
    r->result = "ok";
    r->rtt_us = 0;
    rpc_status_view(n, &r->v);
}

/* Ask member e for its row, or give the row its outcome at once. */
static void deep_ask(struct server *n, const struct membership *m, const struct member *e,
                     struct deep_row *r)
{
    int rc;

    if (e == membership_self(m)) {
        deep_self(n, r);
    } else if (e->state == DETECTOR_DOWN) {
        r->result = "down";
        r->error = "not asked: the failure detector sees it down";
    } else if ((rc = rpc_ask(n, e->e.id, MSG_OP_STATUS, NULL, 0, deep_answer, r)) == 0) {
        return; /* deep_answer() completes the row */
    } else {
        r->result = deep_result_name(rc);
        r->error = rpc_strerror(rc);
    }
    deep_row_done(r);
}

static int ringkv_status_deep(struct client *c, struct pending *p)
{
    struct server *n = c->node;
    const struct membership *m = gossip_members(n->gossip);
    struct deep_status *d;
    size_t rows = 0;

    if (!resp_arg_is(p->cmd, 2, "deep")) {
        client_error(p, "ERR RINGKV STATUS takes no argument or DEEP, not '%.64s'", arg_str(p, 2));
        return CMD_DONE;
    }
    d = calloc(1, sizeof(*d) + membership_count(m) * sizeof(d->rows[0]));
    if (d == NULL) {
        client_error(p, "ERR out of memory");
        return CMD_DONE;
    }
    *d = (struct deep_status){.c = c, .p = p, .left = 1, .ring = ring_ref(gossip_ring(n->gossip))};
    for (size_t i = 0; i < membership_count(m); i++) {
        const struct member *e = membership_at(m, i);
        if (e->e.status == MSG_MEMBER_LEFT || e->e.status == MSG_MEMBER_REMOVED) {
            continue;
        }
        struct deep_row *r = &d->rows[rows++];
        snprintf(r->id, sizeof(r->id), "%s", e->e.id);
        r->d = d;
        d->n = rows;
        d->left++;
        deep_ask(n, m, e, r);
    }
    /* the guard: no reply while requests were still being sent */
    if (--d->left > 0) {
        return CMD_ASYNC;
    }
    deep_reply(d);
    return CMD_DONE;
}

/* --- RINGKV PREFLIST --------------------------------------------------------------- */

/* What preflist_member_up() asks: the ring the list is built on, and the member table. */
struct preflist_view {
    const struct ring *ring;
    const struct membership *members;
};

/*
 * preflist_up_fn over this node's failure detector: a member is up unless
 * the detector sees it down (suspect still counts as up, as RINGKV STATUS
 * says), and this node is always up.
 */
static bool preflist_member_up(void *ctx, uint32_t member)
{
    const struct preflist_view *v = ctx;
    const struct member *e = membership_find(v->members, ring_member_id(v->ring, member));

    return e != NULL && (e == membership_self(v->members) || e->state != DETECTOR_DOWN);
}

/* The id of nodes[i], or "" for i < 0. */
static const char *preflist_node_id(const struct ring *r, const struct preflist *pl, int i)
{
    return i >= 0 ? ring_member_id(r, pl->nodes[i].member) : "";
}

static void preflist_put_node(struct buf *out, const struct ring *r, const struct preflist *pl,
                              size_t i, int proto)
{
    const struct preflist_node *n = &pl->nodes[i];

    resp_put_map(out, 5, proto);
    resp_put_bulk_str(out, "node");
    resp_put_bulk_str(out, ring_member_id(r, n->member));
    resp_put_bulk_str(out, "rack");
    resp_put_bulk_str(out, ring_member_rack(r, n->member));
    resp_put_bulk_str(out, "role");
    resp_put_bulk_str(out, preflist_role_name(n->role));
    resp_put_bulk_str(out, "up");
    resp_put_int(out, n->up);
    resp_put_bulk_str(out, "stands_for");
    resp_put_bulk_str(out, preflist_node_id(r, pl, n->stands_for));
}

static void preflist_put_skip(struct buf *out, const struct ring *r, const struct preflist *pl,
                              size_t i, int proto)
{
    const struct preflist_skip *s = &pl->skips[i];

    resp_put_map(out, 5, proto);
    resp_put_bulk_str(out, "node");
    resp_put_bulk_str(out, ring_member_id(r, s->member));
    resp_put_bulk_str(out, "rack");
    resp_put_bulk_str(out, ring_member_rack(r, s->member));
    resp_put_bulk_str(out, "token");
    resp_put_int(out, (int64_t)s->token);
    resp_put_bulk_str(out, "reason");
    resp_put_bulk_str(out, preflist_skip_name(s->reason));
    resp_put_bulk_str(out, "replaced_by");
    resp_put_bulk_str(out, preflist_node_id(r, pl, s->replaced_by));
}

/*
 * RINGKV PREFLIST KEY: the key's preference list as a coordinator here
 * would use it (preflist.h): the ring in force, the cluster's rf, this
 * node's sloppy setting and its failure detector's view of who is up;
 * with every skipped step of the walk, for `ringkv preflist`.
 */
static void ringkv_preflist(struct client *c, struct pending *p)
{
    const struct membership *m = gossip_members(c->node->gossip);
    struct preflist_view v = {membership_ring(m), m};
    struct preflist pl;
    struct buf *out;
    int rc = RK_EEMPTY;

    if (ring_token_count(v.ring) > 0) {
        uint64_t pos = ring_key_position(v.ring, p->cmd->argv[2].p, p->cmd->argv[2].len);
        rc = preflist_build(v.ring, pos, c->node->cfg.rf, c->node->cfg.sloppy, preflist_member_up,
                            &v, true, &pl);
    }
    if (rc != 0) {
        client_error(p, "ERR RINGKV PREFLIST: %s", rk_strerror(rc));
        return;
    }
    out = client_reply(p);
    resp_put_map(out, 7, c->proto);
    resp_put_bulk_str(out, "position");
    put_hex64(out, pl.pos);
    resp_put_bulk_str(out, "token");
    resp_put_int(out, (int64_t)pl.owner_token);
    resp_put_bulk_str(out, "token_position");
    put_hex64(out, ring_token_at(v.ring, pl.owner_token).pos);
    resp_put_bulk_str(out, "rf");
    resp_put_int(out, c->node->cfg.rf);
    resp_put_bulk_str(out, "sloppy");
    resp_put_int(out, c->node->cfg.sloppy);
    resp_put_bulk_str(out, "nodes");
    resp_put_array(out, pl.n);
    for (size_t i = 0; i < pl.n; i++) {
        preflist_put_node(out, v.ring, &pl, i, c->proto);
    }
    resp_put_bulk_str(out, "skipped");
    resp_put_array(out, pl.n_skips);
    for (size_t i = 0; i < pl.n_skips; i++) {
        preflist_put_skip(out, v.ring, &pl, i, c->proto);
    }
    preflist_free(&pl);
}

/* --- RINGKV REPLICAS key: what each replica of a key holds ---------------------------- */

static const char *const replica_roles[] = {"primary", "replica", "fallback"};

/* A record's vector clock (its context) as text: "id:counter,id:counter". */
static void put_clock_text(struct buf *out, const struct record *rec)
{
    struct vclock ctx;
    struct buf text;

    vclock_init(&ctx);
    buf_init(&text, 0);
    if (record_context(rec, &ctx) == 0) {
        for (uint32_t i = 0; i < ctx.n; i++) {
            buf_printf(&text, "%s%s:%llu", i ? "," : "", ctx.e[i].id,
                       (unsigned long long)ctx.e[i].counter);
        }
    }
    resp_put_bulk(out, buf_data(&text), text.len);
    buf_free(&text);
    vclock_deinit(&ctx);
}

static int digest8_cmp(const void *a, const void *b)
{
    return memcmp(a, b, 8);
}

/*
 * What a replica's live values are, whatever order it stores its siblings
 * in (arrival order, which differs between replicas that took the same
 * two writes in turn): their sizes added, and BLAKE2b-64 of the one value,
 * or with several, of their BLAKE2b-64s sorted.  Zeros when none is live.
 */
static void replica_values_digest(const struct record *rec, uint8_t digest[8], size_t *vsize)
{
    static uint8_t each[RECORD_SIBLINGS_MAX][8]; /* the event loop's thread alone calls this */
    size_t live = 0;

    *vsize = 0;
    memset(digest, 0, 8);
    for (size_t i = 0; i < rec->n && live < RECORD_SIBLINGS_MAX; i++) {
        if (!rec->s[i].tombstone) {
            *vsize += rec->s[i].value_len;
            crypto_generichash(each[live++], 8, rec->s[i].value, rec->s[i].value_len, NULL, 0);
        }
    }
    if (live == 1) {
        memcpy(digest, each[0], 8);
    } else if (live > 1) {
        qsort(each, live, 8, digest8_cmp);
        crypto_generichash(digest, 8, each[0], live * 8, NULL, 0);
    }
}

/* One replica's row: node, rack, role, up, present, tombstone, siblings, vclock, value size,
 * digest. */
static void replica_put_row(struct client *c, struct buf *out, const struct coord_view *v)
{
    const struct ring *ring = gossip_ring(c->node->gossip);
    int m = ring_member_find(ring, v->id);
    struct record rec;
    bool answered = v->status == 0 || v->status == RK_ENOTFOUND;
    uint8_t digest[8] = {0};
    size_t vsize = 0;

    record_init(&rec);
    if (v->status == 0 && record_decode(v->record, v->record_len, &rec) != 0) {
        answered = false;
    }
    replica_values_digest(&rec, digest, &vsize);
    resp_put_map(out, 11, c->proto);
    resp_put_bulk_str(out, "node");
    resp_put_bulk_str(out, v->id);
    resp_put_bulk_str(out, "rack");
    resp_put_bulk_str(out, m >= 0 ? ring_member_rack(ring, (uint32_t)m) : "");
    resp_put_bulk_str(out, "role");
    resp_put_bulk_str(out, replica_roles[v->role]);
    resp_put_bulk_str(out, "up");
    resp_put_int(out, v->up);
    resp_put_bulk_str(out, "answered");
    resp_put_int(out, answered);
    resp_put_bulk_str(out, "present");
    resp_put_int(out, rec.n > 0 && record_live_count(&rec, clock_wall_ms()) > 0);
    resp_put_bulk_str(out, "tombstone");
    resp_put_int(out, rec.n > 0 && record_all_tombstones(&rec));
    resp_put_bulk_str(out, "siblings");
    resp_put_int(out, (int64_t)rec.n);
    resp_put_bulk_str(out, "vclock");
    put_clock_text(out, &rec);
    resp_put_bulk_str(out, "value_size");
    resp_put_int(out, (int64_t)vsize);
    resp_put_bulk_str(out, "digest");
    if (vsize > 0 || record_live_count(&rec, 0) > 0) {
        char hex[2 * sizeof(digest) + 1];
        hex_encode(hex, digest, sizeof(digest));
        resp_put_bulk_str(out, hex);
    } else {
        resp_put_bulk_str(out, "");
    }
    record_deinit(&rec);
}

static void replicas_done(void *ctx, const struct coord_view *v, size_t n)
{
    struct pending *p = ctx;
    struct buf *out = client_reply(p);

    resp_put_array(out, n);
    for (size_t i = 0; i < n; i++) {
        replica_put_row(p->c, out, &v[i]);
    }
    if (--p->left == 0) { /* else it answered inside coord_inspect(): ringkv_replicas() ends it */
        client_finish(p);
    }
}

static int ringkv_replicas(struct client *c, struct pending *p)
{
    size_t len;
    const uint8_t *key = arg(p, 2, &len);

    if (len > c->node->cfg.key_max) {
        client_error(p, "ERR key is over key-max");
        return CMD_DONE;
    }
    p->left = 2; /* held: with no other replica to ask, the answer comes inside the call */
    if (coord_inspect(c->node->coord, key, len, replicas_done, p) != 0) {
        client_error(p, "ERR out of memory");
        return CMD_DONE;
    }
    return --p->left == 0 ? CMD_DONE : CMD_ASYNC;
}

/* --- RINGKV HINTS: this node's hint backlog per target ------------------------------ */

/* Targets RINGKV HINTS KEY looks at, and hints of each, at most: a bound on one command's scans. */
#define HINTS_KEY_TARGETS_MAX 64
#define HINTS_KEY_SCAN_MAX 4096

struct hints_rows {
    struct client *c;
    struct buf rows; /* the maps, encoded */
    size_t n;
    /* RINGKV HINTS KEY: the targets with hints, collected first */
    char (*ids)[RING_NAME_MAX + 1];
    size_t n_ids;
};

/* One target's map: target, hints, up (whether the failure detector sees it up). */
static int hints_put_row(void *ctx, const char *target, uint64_t count)
{
    struct hints_rows *h = ctx;

    if (h->ids != NULL) {
        if (h->n_ids >= HINTS_KEY_TARGETS_MAX) {
            return 1;
        }
        snprintf(h->ids[h->n_ids++], RING_NAME_MAX + 1, "%s", target);
        return 0;
    }
    resp_put_map(&h->rows, 3, h->c->proto);
    resp_put_bulk_str(&h->rows, "target");
    resp_put_bulk_str(&h->rows, target);
    resp_put_bulk_str(&h->rows, "hints");
    resp_put_int(&h->rows, (int64_t)count);
    resp_put_bulk_str(&h->rows, "up");
    resp_put_int(&h->rows, rpc_member_up(h->c->node, target));
    h->n++;
    return 0;
}

/* RINGKV HINTS KEY: the rows of the targets holding hints of key, after a walk of the targets. */
static int hints_of_key(struct hints_rows *h, const uint8_t *key, size_t len)
{
    char ids[HINTS_KEY_TARGETS_MAX][RING_NAME_MAX + 1];
    int rc;

    h->ids = ids;
    rc = store_hint_targets(h->c->node->store, hints_put_row, h);
    h->ids = NULL;
    rc = rc == 1 ? 0 : rc; /* more targets than the bound: the first ones */
    for (size_t i = 0; rc == 0 && i < h->n_ids; i++) {
        uint64_t count = 0;
        rc = reaper_hints_for_key(h->c->node->store, ids[i], key, len, HINTS_KEY_SCAN_MAX, &count);
        rc = rc == RK_ETOOBIG ? 0 : rc; /* those among the first hints of the target */
        if (rc == 0 && count > 0) {
            rc = hints_put_row(h, ids[i], count);
        }
    }
    return rc;
}

/*
 * RINGKV HINTS: a map {node: this node's id, targets: [{target, hints,
 * up}, ...]}, one map per node this node keeps hints for, in the store's
 * order (store_hint_targets(), one read transaction).  The node's id is in
 * the reply so that `ringkv hints`, asking several nodes, names each one.
 * RINGKV HINTS KEY: the same, counting only the hints of that key, and
 * only the targets holding one: a scan of each target's hints (the
 * first HINTS_KEY_SCAN_MAX of each, of HINTS_KEY_TARGETS_MAX targets at
 * most), for `ringkv replicas`.
 */
static void ringkv_hints(struct client *c, struct pending *p)
{
    struct hints_rows h = {.c = c};
    struct buf *out;
    int rc;

    buf_init(&h.rows, 0);
    if (p->cmd->argc == 3) {
        size_t len;
        const uint8_t *key = arg(p, 2, &len);
        rc = hints_of_key(&h, key, len);
    } else {
        rc = store_hint_targets(c->node->store, hints_put_row, &h);
    }
    if (rc != 0) {
        client_error(p, "ERR cannot read the hints: %s", rk_strerror(rc));
    } else {
        out = client_reply(p);
        resp_put_map(out, 2, c->proto);
        resp_put_bulk_str(out, "node");
        resp_put_bulk_str(out, c->node->cfg.id);
        resp_put_bulk_str(out, "targets");
        resp_put_array(out, h.n);
        buf_append(out, buf_data(&h.rows), h.rows.len);
    }
    buf_free(&h.rows);
}

struct ringkv_verb {
    const char *name;
    int min_args, max_args; /* words after RINGKV */
    void (*run)(struct client *c, struct pending *p);
    int (*run_async)(struct client *c, struct pending *p); /* instead of run: may answer later */
};

static const struct ringkv_verb ringkv_verbs[] = {
    {"status", 1, 1, ringkv_status, NULL},       {"members", 1, 1, ringkv_members, NULL},
    {"ring", 1, 2, ringkv_ring, NULL},           {"remove", 2, 2, NULL, ringkv_remove},
    {"bulktest", 1, 3, ringkv_bulktest, NULL},   {"status", 2, 2, NULL, ringkv_status_deep},
    {"preflist", 2, 2, ringkv_preflist, NULL},   {"replicas", 2, 2, NULL, ringkv_replicas},
    {"hints", 1, 2, ringkv_hints, NULL},         {"leave", 1, 1, ringkv_leave, NULL},
    {"transfers", 1, 1, ringkv_transfers, NULL}, {"plan", 3, 5, ringkv_plan, NULL},
    {"tokens", 2, 3, NULL, ringkv_tokens},
};

static int cmd_ringkv(struct client *c, struct pending *p)
{
    size_t words = p->cmd->argc - 1;

    for (size_t i = 0; i < sizeof(ringkv_verbs) / sizeof(ringkv_verbs[0]); i++) {
        const struct ringkv_verb *v = &ringkv_verbs[i];
        if (resp_arg_is(p->cmd, 1, v->name) && words >= (size_t)v->min_args &&
            words <= (size_t)v->max_args) {
            if (v->run_async != NULL) {
                return v->run_async(c, p);
            }
            v->run(c, p);
            return CMD_DONE;
        }
    }
    client_error(p,
                 "ERR unknown RINGKV verb or wrong arguments: '%s' (known: STATUS [DEEP], "
                 "MEMBERS, RING [rf], PREFLIST key, REMOVE id, LEAVE, TOKENS n [FORCE], TRANSFERS, "
                 "PLAN change, "
                 "BULKTEST [id bytes], "
                 "REPLICAS key, "
                 "HINTS)",
                 arg_str(p, 1));
    return CMD_DONE;
}

/* --- the table -------------------------------------------------------------------- */

const struct command commands[] = {
    {"get", 2, CMD_READ, cmd_get, 1, 1, 1, "the value of a key"},
    {"set", -3, CMD_WRITE, cmd_set, 1, 1, 1,
     "set a key to a value [NX|XX] [GET] [EX|PX|EXAT|PXAT t|KEEPTTL]"},
    {"getset", 3, CMD_READ | CMD_WRITE, cmd_getset, 1, 1, 1, "set a key; its old value"},
    {"getdel", 2, CMD_READ | CMD_WRITE, cmd_getdel, 1, 1, 1, "delete a key; its old value"},
    {"del", -2, CMD_WRITE | CMD_DECIDED, cmd_del, 1, -1, 1, "delete keys; the number that existed"},
    {"exists", -2, CMD_READ, cmd_exists, 1, -1, 1, "how many of the keys exist"},
    {"mget", -2, CMD_READ, cmd_mget, 1, -1, 1, "the values of several keys"},
    {"mset", -3, CMD_WRITE, cmd_mset, 1, -1, 2, "set several keys"},
    {"kget", -2, CMD_READ, cmd_kget, 1, 1, 1, "every sibling of a key, with its context [R n]"},
    {"kset", -3, CMD_WRITE, cmd_kset, 1, 1, 1, "write over the siblings a context saw"},
    {"kdel", -4, CMD_WRITE, cmd_kdel, 1, 1, 1, "delete the siblings a context saw"},
    /* expiry: an absolute wall-clock time in the version (record.h) */
    {"setex", 4, CMD_WRITE, cmd_setex, 1, 1, 1, "set a key that expires in seconds"},
    {"psetex", 4, CMD_WRITE, cmd_setex, 1, 1, 1, "set a key that expires in milliseconds"},
    {"expire", -3, CMD_WRITE | CMD_DECIDED, cmd_expire, 1, 1, 1,
     "expire a key in seconds; 1 if it exists"},
    {"pexpire", -3, CMD_WRITE | CMD_DECIDED, cmd_expire, 1, 1, 1, "expire a key in milliseconds"},
    {"expireat", -3, CMD_WRITE | CMD_DECIDED, cmd_expire, 1, 1, 1,
     "expire a key at a Unix time (seconds)"},
    {"pexpireat", -3, CMD_WRITE | CMD_DECIDED, cmd_expire, 1, 1, 1,
     "expire a key at a Unix time (ms)"},
    {"persist", 2, CMD_WRITE | CMD_DECIDED, cmd_persist, 1, 1, 1,
     "remove a key's expiry; 1 if it had one"},
    {"ttl", 2, CMD_READ, cmd_ttl, 1, 1, 1, "seconds left before a key expires; -1 none, -2 absent"},
    {"pttl", 2, CMD_READ, cmd_ttl, 1, 1, 1, "ms left before a key expires; -1 none, -2 absent"},
    {"ping", -1, 0, cmd_ping, 0, 0, 0, "PONG, or the argument"},
    {"echo", 2, 0, cmd_echo, 0, 0, 0, "the argument"},
    {"time", 1, 0, cmd_time, 0, 0, 0, "the node's wall clock: seconds, microseconds"},
    {"hello", -1, CMD_NOAUTH | CMD_PROTO, cmd_hello, 0, 0, 0, "handshake, choose RESP2 or RESP3"},
    {"auth", -2, CMD_NOAUTH, cmd_auth, 0, 0, 0, "authenticate with requirepass"},
    {"quit", 1, CMD_NOAUTH, cmd_quit, 0, 0, 0, "close the connection"},
    {"select", 2, 0, cmd_select, 0, 0, 0, "database 0 is the only one"},
    {"client", -2, 0, cmd_client, 0, 0, 0, "SETNAME, GETNAME, ID, SETINFO, LIST"},
    {"command", -1, 0, cmd_command, 0, 0, 0, "COUNT, DOCS, INFO of commands"},
    {"info", -1, 0, cmd_info, 0, 0, 0, "server, clients, stats, keyspace, cluster ..."},
    {"dbsize", 1, CMD_READ, scan_cmd_dbsize, 0, 0, 0, "live keys this node stores"},
    {"config", -2, CMD_ADMIN, cmd_config, 0, 0, 0, "GET settings, SET run-time ones"},
    {"cluster", -1, 0, cmd_cluster, 0, 0, 0, "not a Redis Cluster: standalone error"},
    {"ringkv", -2, CMD_ADMIN, cmd_ringkv, 0, 0, 0, "cluster administration"},
    /* transactions (txn.h); EXEC checks its own arity, as Redis answers it with EXECABORT */
    {"multi", 1, 0, txn_cmd_multi, 0, 0, 0, "start a transaction: queue the commands that follow"},
    {"exec", -1, CMD_READ | CMD_WRITE, txn_cmd_exec, 0, 0, 0,
     "run the queued commands; their writes commit all or nothing"},
    {"discard", 1, 0, txn_cmd_discard, 0, 0, 0, "drop the queued commands"},
    {"watch", -2, 0, txn_cmd_watch, 0, 0, 0, "not supported: an error"},
    {"unwatch", 1, 0, txn_cmd_watch, 0, 0, 0, "not supported: an error"},
    /* iteration over this node's keys (scan.h) */
    {"scan", -2, CMD_READ, scan_cmd_scan, 0, 0, 0,
     "iterate this node's keys in ring-position order: cursor [MATCH p] [COUNT n] [TYPE t]"},
    {"keys", 2, CMD_READ, scan_cmd_keys, 0, 0, 0, "this node's keys matching a pattern (bounded)"},
    {"type", 2, CMD_READ, cmd_type, 1, 1, 1, "string, or none for a missing key"},
    {"strlen", 2, CMD_READ, cmd_type, 1, 1, 1, "the length of a key's value, 0 when missing"},
};
const size_t commands_count = sizeof(commands) / sizeof(commands[0]);

_Static_assert(sizeof(commands) / sizeof(commands[0]) <= METRICS_COMMANDS_MAX,
               "the metrics need a slot per command");

const struct command *commands_find(const char *name, size_t len, int *index)
{
    for (size_t i = 0; i < commands_count; i++) {
        if (strlen(commands[i].name) == len && strncasecmp(commands[i].name, name, len) == 0) {
            if (index != NULL) {
                *index = (int)i;
            }
            return &commands[i];
        }
    }
    return NULL;
}

/*
 * A SET with NX, XX or GET reads the key it writes (under replication, a
 * quorum read decides it): it orders as a read and a write, like GETSET.
 */
static bool set_reads(const struct pending *p)
{
    if (p->cmd == NULL || strcmp(p->command->name, "set") != 0) {
        return false;
    }
    for (size_t i = 3; i < p->cmd->argc; i++) {
        if (resp_arg_is(p->cmd, i, "nx") || resp_arg_is(p->cmd, i, "xx") ||
            resp_arg_is(p->cmd, i, "get")) {
            return true;
        }
    }
    return false;
}

unsigned commands_flags(struct pending *p)
{
    unsigned flags;

    if (p->command == NULL && p->cmd != NULL && p->cmd->argc > 0) {
        p->command = commands_find(arg_str(p, 0), p->cmd->argv[0].len, &p->index);
    }
    if (p->command == NULL) {
        return 0;
    }
    flags = p->command->flags | (set_reads(p) ? CMD_READ : 0);
    /* under replication DEL, EXPIRE and PERSIST read their key first (a quorum read): one
       started before the connection's earlier write of that key completed would miss it */
    if ((flags & CMD_DECIDED) && p->c != NULL && p->c->node->cfg.rf > 1) {
        flags |= CMD_READ;
    }
    return flags;
}

static void unknown_command(struct pending *p)
{
    char args[256] = "";
    size_t used = 0;

    for (size_t i = 1; i < p->cmd->argc && used < sizeof(args) - 1; i++) {
        int w = snprintf(args + used, sizeof(args) - used, "'%.32s' ", arg_str(p, i));
        used += w > 0 ? (size_t)w : 0;
    }
    client_error(p, "ERR unknown command '%.64s', with args beginning with: %s", arg_str(p, 0),
                 args);
}

int commands_run(struct client *c, struct pending *p)
{
    const struct command *cmd;
    int argc = (int)p->cmd->argc;

    if (p->cmd->too_big) {
        c->node->metrics.client_limit_errors++;
        client_error(p, "ERR argument of %zu bytes is over value-max (%llu bytes)",
                     p->cmd->too_big_len, (unsigned long long)c->node->cfg.value_max);
        txn_flag(c);
        return CMD_DONE;
    }
    commands_flags(p);
    cmd = p->command;
    if (cmd == NULL) {
        unknown_command(p);
    } else if (!c->authed && !(cmd->flags & CMD_NOAUTH)) {
        client_error(p, "NOAUTH Authentication required.");
    } else if ((cmd->arity > 0 && argc != cmd->arity) || (cmd->arity < 0 && argc < -cmd->arity)) {
        client_error(p, "ERR wrong number of arguments for '%s' command", cmd->name);
    } else if ((cmd->flags & CMD_ADMIN) && !c->loopback && !c->node->cfg.admin_any) {
        client_error(p, "ERR %s is accepted from loopback only (see the admin-from setting)",
                     cmd->name);
    } else if ((cmd->flags & CMD_WRITE) && c->node->stopping) {
        client_error(p, "ERR ringkv is shutting down");
    } else if (txn_queues(c, cmd)) {
        return txn_queue(c, p);
    } else {
        return cmd->run(c, p);
    }
    txn_flag(c); /* inside MULTI, a refused command aborts the EXEC */
    return CMD_DONE;
}
