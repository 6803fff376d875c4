/*
 * gossip.c - membership over the network (gossip.h).
 *
 * What the data directory keeps (store meta table, storage/store.c):
 *   generation   u64 big-endian: the last generation this node ran with
 *   instance     16 random bytes, made when the directory is first used
 *   membership   the member table, msg_members_encode() form
 *   ring_epoch   u64 big-endian, ring_digest u64 big-endian: for people
 *                and tools reading a stopped node's directory
 * The table is saved whenever the ring changes and at shutdown; a node
 * that restarts rebuilds its ring from it before it hears from anyone.
 *
 * Connections.  A node keeps one connection to each member it tracks
 * (either side may have opened it): gossip exchanges and pings ride on
 * it.  Connections are the node's: gossip finds, dials and sends on them
 * through its hooks (gossip.h) and keeps none.  A member that is down is
 * reconnected to at most every GOSSIP_RECONNECT_DOWN_MS, so a dead node
 * costs a refused connection a second, not one a round.
 *
 * The ring.  Merges, removals and status changes go to the member table,
 * which installs every new ring itself and tells the listeners the node
 * registered (gossip_ring_listen()); gossip only notes that the table
 * changed, to save it.
 */
#include "gossip.h"

#include <assert.h>
#include <ev.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "clock.h"
#include "error.h"
#include "grow.h"
#include "log.h"
#include "store.h"

/*
 * A round later than this many intervals after the one before means this
 * process did not run meanwhile (stopped, or its loop stalled): the
 * silence of the others over the pause is not held against them.
 */
#define GOSSIP_PAUSE_ROUNDS 2
/* A down member is reconnected to at most this often. */
#define GOSSIP_RECONNECT_DOWN_MS 1000
/* The first read of the saved table: a guess; a larger table is read again at its size. */
#define GOSSIP_TABLE_READ_FIRST 128
/* Joining members a change of our target ring is pushed to at most (gossip_push_target()). */
#define GOSSIP_PUSH_MAX 8

struct gossip {
    struct gossip_settings cfg;
    struct gossip_hooks hooks;
    struct membership *m;
    ev_timer round_w;
    uint64_t rng;
    uint64_t ping_seq;
    uint64_t round_ms;               /* gossip_now() at the last round; 0: none yet */
    struct log_limit pause_log;      /* local_pause lines: a starved loop is late every round */
    bool exchanged;                  /* completed a gossip exchange since start */
    bool whole;                      /* an exchange gave us the whole table since start */
    bool dirty;                      /* the table changed in a way worth saving */
    bool saving;                     /* a save is in flight */
    bool removed;                    /* an operator removed this node: stop at the next round */
    bool syn_complete;               /* our last SYN listed every member we hold */
    struct gossip_removal *removals; /* operator removals whose save is in flight */
    struct gossip_retoken *retokens; /* token counts whose save is in flight */
    bool tokens_override;            /* cfg.tokens is the count `ringkv tokens` saved */
    uint32_t tokens_queued;          /* a token count waiting for the change under way; 0 none */
    uint8_t instance[16];
    char conflict_addr[MSG_ADDR_MAX]; /* the last address logged as claiming our id */
    struct gossip_dial {
        char addr[MSG_ADDR_MAX];
        uint64_t next_ms;
    } * dials;
    size_t n_dials, cap_dials;
    /* the detector state last logged for each member, to log changes once */
    struct gossip_seen {
        char id[RING_NAME_MAX + 1];
        enum detector_state state;
    } * seen;
    size_t n_seen, cap_seen;
};

/* Now, in monotonic ms: the owner's clock when it gave one (gossip.h, Seams). */
static uint64_t gossip_now(const struct gossip *g)
{
    return g->hooks.now != NULL ? g->hooks.now(g->hooks.ctx) : clock_mono_ms();
}

/* Tell the owner's observer, if any, of a member event just logged. */
static void gossip_event(const struct gossip *g, const char *event, const char *id)
{
    if (g->hooks.changed != NULL) {
        g->hooks.changed(g->hooks.ctx, event, id);
    }
}

static uint64_t gossip_rand(struct gossip *g)
{
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return g->rng;
}

/* --- the data directory ---------------------------------------------------- */

static int meta_get_u64(struct store *s, const char *name, uint64_t *v)
{
    uint8_t b[8];
    size_t len;
    int rc = store_table_get(s, STORE_TABLE_META, name, strlen(name), b, sizeof(b), &len);

    if (rc == 0 && len == 8) {
        *v = bytes_get_be64(b);
    }
    return rc == 0 && len != 8 ? RK_ESYNTAX : rc;
}

/* op as the write of meta value name: v, len bytes (NULL, 0: the caller sets them). */
static void meta_op_init(struct store_op *op, const char *name, const void *v, size_t len)
{
    store_op_init(op, STORE_OP_TABLE_PUT);
    op->table = STORE_TABLE_META;
    op->key = (const uint8_t *)name;
    op->key_len = strlen(name);
    op->value = v;
    op->value_len = len;
}

/* Write one meta value and wait for it: at start only, before the event loop runs. */
static int meta_put_sync(struct store *s, const char *name, const void *v, size_t len)
{
    struct store_op op;
    int rc;

    meta_op_init(&op, name, v, len);
    rc = store_submit(s, &op);
    return rc ? rc : store_wait(s, &op);
}

/* One meta write in flight during the run; freed by its completion. */
struct gossip_save {
    struct store_op op;
    struct gossip *g; /* NULL when the gossip it belonged to is gone */
    uint8_t value[];
};

static void gossip_saved(struct store_op *op, void *ctx)
{
    struct gossip_save *sv = ctx;

    if (op->result != 0) {
        LOG(LOG_WARN, "membership_save_failed", "error=\"%s\"", rk_strerror(op->result));
    }
    free(sv);
}

static int gossip_save_async(struct gossip *g, const char *name, const void *v, size_t len)
{
    struct gossip_save *sv;
    int rc;

    if (g->cfg.store == NULL) {
        return 0; /* no persistence (gossip.h, Seams) */
    }
    sv = malloc(sizeof(*sv) + len);
    if (sv == NULL) {
        return RK_ENOMEM;
    }
    memcpy(sv->value, v, len);
    sv->g = g;
    meta_op_init(&sv->op, name, sv->value, len);
    sv->op.done = gossip_saved;
    sv->op.ctx = sv;
    rc = store_submit(g->cfg.store, &sv->op);
    if (rc != 0) {
        free(sv);
    }
    return rc;
}

/*
 * Save the member table, epoch and digest in the background (each round
 * the table changed, and at shutdown: the store completes queued writes
 * when it closes), so the event loop never waits on the disk.  The table
 * stays dirty, to be saved again next round, unless every write was
 * handed over.  The table goes last: it is all a restart reads (epoch and
 * digest are there to be inspected).  A write that fails later is logged
 * (membership_save_failed); the next change saves the whole table again.
 * An operator's removal saves its own way (removal_save()).
 */
static int gossip_save(struct gossip *g)
{
    uint8_t epoch[8], digest[8];
    struct buf b;
    int rc;

    if (g->cfg.store == NULL) {
        g->dirty = false;
        return 0;
    }
    buf_init(&b, 0);
    rc = membership_encode(g->m, &b);
    bytes_put_be64(epoch, membership_epoch(g->m));
    bytes_put_be64(digest, membership_digest(g->m));
    rc = rc ? rc : gossip_save_async(g, "ring_epoch", epoch, 8);
    rc = rc ? rc : gossip_save_async(g, "ring_digest", digest, 8);
    rc = rc ? rc : gossip_save_async(g, "membership", buf_data(&b), b.len);
    buf_free(&b);
    if (rc != 0) {
        LOG(LOG_WARN, "membership_save_failed", "error=\"%s\"", rk_strerror(rc));
    }
    g->dirty = rc != 0;
    return rc;
}

/* --- creating ---------------------------------------------------------------- */

/* Our generation (one more than the last run's) and instance id, saved before use. */
static int gossip_identity(struct gossip *g, uint64_t *generation, char *err, size_t err_len)
{
    struct store *s = g->cfg.store;
    uint8_t gen[8];
    size_t len;
    int rc;

    *generation = 0;
    if (s == NULL) {
        return 0; /* gossip_load() took both from the table handed over */
    }
    rc = meta_get_u64(s, "generation", generation);
    if (rc != 0 && rc != RK_ENOTFOUND) {
        snprintf(err, err_len, "data: cannot read the generation: %s", rk_strerror(rc));
        return rc;
    }
    if (*generation == UINT64_MAX) {
        snprintf(err, err_len,
                 "data: the generation counter is at its end; start this node afresh");
        return RK_ERANGE;
    }
    (*generation)++;
    bytes_put_be64(gen, *generation);
    rc =
        store_table_get(s, STORE_TABLE_META, "instance", 8, g->instance, sizeof(g->instance), &len);
    if (rc == RK_ENOTFOUND) {
        randombytes_buf(g->instance, sizeof(g->instance));
        rc = meta_put_sync(s, "instance", g->instance, sizeof(g->instance));
    }
    rc = rc ? rc : meta_put_sync(s, "generation", gen, sizeof(gen));
    if (rc != 0) {
        snprintf(err, err_len, "data: cannot record the generation: %s", rk_strerror(rc));
    }
    return rc;
}

/* Our entry from the settings; status and ring_version from the saved table when there is one. */
static void gossip_self_entry(struct gossip *g, uint64_t generation, const struct msg_member *saved,
                              struct msg_member *e)
{
    const struct gossip_settings *c = &g->cfg;

    memset(e, 0, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%s", c->id);
    snprintf(e->rack, sizeof(e->rack), "%s", c->rack);
    e->tokens = c->tokens;
    snprintf(e->peer_addr, sizeof(e->peer_addr), "%s", c->peer_addr);
    snprintf(e->client_addr, sizeof(e->client_addr), "%s", c->client_addr);
    e->generation = generation;
    e->version = 1;
    memcpy(e->instance, g->instance, sizeof(e->instance));
    if (saved != NULL && membership_in_ring(saved->status)) {
        e->status = saved->status;
        if (g->tokens_override && saved->tokens != c->tokens) {
            /*
             * A change `ringkv tokens` asked for and not yet done: resumed by
             * handoff when it had begun, else queued as it was (or as it
             * would have been: a crash between the save and the start)
             */
            e->tokens = saved->tokens;
            if (saved->target_tokens == c->tokens) {
                e->target_tokens = c->tokens;
            } else {
                g->tokens_queued = c->tokens;
            }
        }
    } else {
        e->status = c->n_seeds > 0 ? MSG_MEMBER_JOINING : MSG_MEMBER_NORMAL;
    }
    /* ring_version never goes back (the epoch is a sum of them), and a new
     * life counts above a removal of the last one (membership.h) */
    e->ring_version = 1;
    if (saved != NULL && c->store == NULL) { /* this life's own entry (gossip.h, Seams) */
        e->version = saved->version;
        e->ring_version = saved->ring_version;
    } else if (saved != NULL) {
        e->ring_version = saved->ring_version < UINT64_MAX - MEMBERSHIP_REMOVE_RING_BUMP - 1
                              ? saved->ring_version + MEMBERSHIP_REMOVE_RING_BUMP + 1
                              : UINT64_MAX;
    }
}

/* Our own entry in the saved table, if any. */
static bool gossip_saved_self(const uint8_t *p, size_t len, const char *id, struct msg_member *out)
{
    struct msg_member *all = NULL;
    size_t n = 0;
    bool found = false;

    if (msg_members_decode(p, len, MEMBERSHIP_MAX, &all, &n) == 0) {
        for (size_t i = 0; i < n && !found; i++) {
            found = strcmp(all[i].id, id) == 0;
            *out = all[i];
        }
    }
    free(all);
    return found;
}

/*
 * The saved member table, whole (it may be larger than a frame): *blob
 * NULL and *len 0 when there is none.  Any other failure is an error: a
 * node that started without the table it saved would go back on its
 * ring_version, and overwrite the table at its next save.
 */
static int gossip_read_table(const struct gossip_settings *c, uint8_t **blob, size_t *len)
{
    struct store *s = c->store;
    size_t cap = GOSSIP_TABLE_READ_FIRST;
    int rc;

    *blob = NULL;
    *len = 0;
    if (s == NULL) { /* no persistence: the table handed over (gossip.h, Seams) */
        if (c->table_len == 0) {
            return 0;
        }
        if ((*blob = malloc(c->table_len)) == NULL) {
            return RK_ENOMEM;
        }
        memcpy(*blob, c->table, c->table_len);
        *len = c->table_len;
        return 0;
    }
    for (int tries = 0; tries < 3; tries++) {
        uint8_t *b = malloc(cap);
        if (b == NULL) {
            return RK_ENOMEM;
        }
        rc = store_table_get(s, STORE_TABLE_META, "membership", 10, b, cap, len);
        if (rc == 0) {
            *blob = b;
            return 0;
        }
        free(b);
        if (rc != RK_ETOOBIG) {
            *len = 0;
            return rc == RK_ENOTFOUND ? 0 : rc;
        }
        cap = *len; /* grown between the two reads: try again at the new size */
    }
    *len = 0;
    return RK_ETOOBIG;
}

/* The table restored, with self our entry: into a scratch table when *m is NULL on entry. */
static int gossip_restore(struct gossip *g, const struct msg_member *self, const uint8_t *blob,
                          size_t len, struct membership **m, char *err, size_t err_len)
{
    const struct gossip_settings *c = &g->cfg;
    int rc = membership_create(m, c->ring_seed, self, c->interval_ms, gossip_now(g));

    if (rc != 0) {
        snprintf(err, err_len, "cannot build the member table: %s", rk_strerror(rc));
        return rc;
    }
    membership_returning_joins(*m, c->join_by_handoff);
    rc = len > 0 ? membership_restore(*m, blob, len, gossip_now(g)) : 0;
    if (rc == RK_ENOMEM) { /* the table may be whole: moving the data aside would not help */
        snprintf(err, err_len, "cannot restore the saved member table of %zu bytes: %s", len,
                 rk_strerror(rc));
    } else if (rc != 0) {
        snprintf(err, err_len,
                 "data: the saved member table is damaged (%s); move the data directory aside to "
                 "start this node afresh",
                 rk_strerror(rc));
    }
    return rc;
}

/*
 * Without a store: the generation and instance of our entry in the table
 * handed over, as if this life had saved them; generation 1 and a seeded
 * instance when it has none (gossip.h, Seams).
 */
static void gossip_storeless_identity(struct gossip *g, const struct msg_member *saved,
                                      uint64_t *generation)
{
    if (saved != NULL) {
        *generation = saved->generation;
        memcpy(g->instance, saved->instance, sizeof(g->instance));
        return;
    }
    *generation = 1;
    for (size_t i = 0; i < sizeof(g->instance); i += 8) {
        uint64_t r = gossip_rand(g);
        memcpy(g->instance + i, &r, 8);
    }
}

/* The cluster's rf as the data directory records it (store.h); 3 when it cannot say. */
static unsigned gossip_store_rf(const struct gossip *g)
{
    uint8_t v[4];
    size_t len;

    if (g->cfg.store != NULL &&
        store_table_get(g->cfg.store, STORE_TABLE_META, "rf", 2, v, sizeof(v), &len) == 0 &&
        len == 4 && bytes_get_be32(v) >= 1 && bytes_get_be32(v) <= RING_RF_MAX) {
        return bytes_get_be32(v);
    }
    return STORE_RF_DEFAULT;
}

/*
 * The churn alarm: this node's ring entry was saved with other tokens or
 * another rack than its settings give now.  Such a restart changes the
 * ring at once, without a handoff (repairs copy what moved afterwards,
 * handoff.h), and a slip of a setting can reshuffle much of the cluster,
 * so one that moves any replica is refused unless forced
 * (force-ring-change), with the figures: the part of the circle whose
 * replicas would change, and this node's share before and after.  0 when
 * nothing moves; RK_EINVAL with err set.
 */
static int gossip_churn_alarm(struct gossip *g, struct membership *scratch,
                              const struct msg_member *saved, char *err, size_t err_len)
{
    const struct ring *now = membership_ring(scratch);
    size_t n = membership_count(scratch), k = 0;
    struct ring_member *rm = malloc((n ? n : 1) * sizeof(*rm));
    unsigned rf = gossip_store_rf(g);
    struct ring *before = NULL;
    struct ring_diff d;
    double moved = -1, share_before = -1, share_now = -1;
    ring_len *own;
    int rc;

    if (rm == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct member *e = membership_at(scratch, i);
        bool self = strcmp(e->e.id, g->cfg.id) == 0;
        if (membership_in_ring(self ? saved->status : e->e.status)) {
            rm[k].id = e->e.id;
            rm[k].rack = self ? saved->rack : membership_entry_rack(&e->e);
            rm[k].tokens = self ? saved->tokens : e->e.tokens;
            k++;
        }
    }
    rc = ring_create(&before, g->cfg.ring_seed, rm, k);
    free(rm);
    if (rc == 0 && ring_member_count(now) > 0 && ring_diff(before, now, rf, &d) == 0) {
        moved = ring_len_fraction(d.moved);
        ring_diff_free(&d);
    }
    own = rc == 0 ? calloc(ring_member_count(before) + ring_member_count(now) + 1, sizeof(*own))
                  : NULL;
    if (own != NULL && ring_ownership(before, rf, own) == 0 &&
        ring_member_find(before, g->cfg.id) >= 0) {
        share_before = ring_len_fraction(own[ring_member_find(before, g->cfg.id)]);
    }
    if (own != NULL && ring_member_count(now) > 0 && ring_ownership(now, rf, own) == 0 &&
        ring_member_find(now, g->cfg.id) >= 0) {
        share_now = ring_len_fraction(own[ring_member_find(now, g->cfg.id)]);
    }
    free(own);
    ring_unref(before);
    if (moved == 0) { /* every replica stays where it is (rf as large as the racks, say) */
        LOG(LOG_INFO, "ring_entry_changed",
            "tokens_saved=%u tokens=%u rack_saved=%s rack=%s rf=%u moved_fraction=0", saved->tokens,
            g->cfg.tokens, saved->rack, g->cfg.rack, rf);
        return 0;
    }
    LOG(LOG_ERROR, "churn_alarm",
        "tokens_saved=%u tokens=%u rack_saved=%s rack=%s rf=%u moved_fraction=%.4f "
        "share_before=%.4f share_after=%.4f",
        saved->tokens, g->cfg.tokens, saved->rack, g->cfg.rack, rf, moved, share_before, share_now);
    snprintf(err, err_len,
             "tokens/rack: this node joined the ring with %u tokens in rack '%s' and now has %u in "
             "rack '%s': restarting so would move the replicas of %.1f%% of the ring at once "
             "(this node's share %.1f%% -> %.1f%%, rf %u); start it with its old values, or give "
             "force-ring-change yes to accept the move",
             saved->tokens, saved->rack, g->cfg.tokens, g->cfg.rack, moved * 100,
             share_before * 100, share_now * 100, rf);
    return RK_EINVAL;
}

static void gossip_load_tokens(struct gossip *g);

/*
 * The saved table, read and tried in a scratch table before anything is
 * written (a refused start leaves the directory as it was), then our
 * identity, then the table for real.
 */
static int gossip_load(struct gossip *g, uint64_t *generation, char *err, size_t err_len)
{
    struct msg_member self, saved;
    struct membership *scratch = NULL;
    uint8_t *blob;
    size_t len;
    bool have;
    int rc = gossip_read_table(&g->cfg, &blob, &len);

    if (rc != 0) {
        snprintf(err, err_len, "data: cannot read the saved member table: %s", rk_strerror(rc));
        return rc;
    }
    have = len > 0 && gossip_saved_self(blob, len, g->cfg.id, &saved);
    gossip_load_tokens(g);
    if (have && g->cfg.join_by_handoff && g->cfg.n_seeds == 0 &&
        (saved.status == MSG_MEMBER_LEFT || saved.status == MSG_MEMBER_REMOVED)) {
        snprintf(err, err_len,
                 "data: this node %s the cluster, and its data is not current: give seeds to join "
                 "again (its data is then merged as it joins), or start with an empty data "
                 "directory",
                 saved.status == MSG_MEMBER_LEFT ? "left" : "was removed from");
        free(blob);
        return RK_EINVAL;
    }
    gossip_self_entry(g, 1, have ? &saved : NULL, &self);
    if (g->cfg.store != NULL) { /* without one, nothing is written that a refusal must spare */
        rc = gossip_restore(g, &self, blob, len, &scratch, err, err_len);
    }
    if (rc == 0 && scratch != NULL && have && membership_in_ring(saved.status) &&
        !g->cfg.force_ring_change &&
        ((saved.tokens != g->cfg.tokens && !g->tokens_override) ||
         strcmp(saved.rack, g->cfg.rack) != 0)) {
        rc = gossip_churn_alarm(g, scratch, &saved, err, err_len);
    }
    if (scratch != NULL) {
        membership_destroy(scratch);
    }
    rc = rc ? rc : gossip_identity(g, generation, err, err_len);
    if (rc == 0 && g->cfg.store == NULL) {
        gossip_storeless_identity(g, have ? &saved : NULL, generation);
    }
    if (rc == 0) {
        gossip_self_entry(g, *generation, have ? &saved : NULL, &self);
        rc = gossip_restore(g, &self, blob, len, &g->m, err, err_len);
    }
    free(blob);
    return rc;
}

int gossip_create(struct gossip **out, const struct gossip_settings *settings,
                  const struct gossip_hooks *hooks, char *err, size_t err_len)
{
    struct gossip *g = calloc(1, sizeof(*g));
    uint64_t generation;
    int rc;

    *out = NULL;
    if (g == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    assert(settings->n_seeds <= GOSSIP_SEEDS_MAX && "gossip_create: too many seeds");
    g->cfg = *settings;
    g->hooks = *hooks;
    if (settings->seed != 0) {
        g->rng = settings->seed;
    } else {
        randombytes_buf(&g->rng, sizeof(g->rng));
    }
    g->rng |= 1;
    rc = gossip_load(g, &generation, err, err_len);
    if (rc != 0) {
        gossip_destroy(g);
        return rc;
    }
    *out = g;
    LOG(LOG_INFO, "membership_loaded", "generation=%llu members=%zu epoch=%llu digest=%016llx",
        (unsigned long long)generation, membership_count(g->m),
        (unsigned long long)membership_epoch(g->m), (unsigned long long)membership_digest(g->m));
    return 0;
}

/* --- token count changes ------------------------------------------------------ */

/*
 * The token count `ringkv tokens` saved (meta "tokens", 4 bytes big-endian)
 * overrides the settings' (ringkvd.conf's `tokens`), and says so once.
 */
static void gossip_load_tokens(struct gossip *g)
{
    uint8_t v[4];
    size_t len;

    if (g->cfg.store == NULL ||
        store_table_get(g->cfg.store, STORE_TABLE_META, "tokens", 6, v, sizeof(v), &len) != 0 ||
        len != 4 || bytes_get_be32(v) < RING_TOKENS_MIN || bytes_get_be32(v) > RING_TOKENS_MAX) {
        return;
    }
    g->tokens_override = true;
    if (bytes_get_be32(v) != g->cfg.tokens) {
        LOG(LOG_WARN, "tokens_override",
            "tokens=%u config_tokens=%u msg=\"the token count set by ringkv tokens overrides the "
            "configured one\"",
            bytes_get_be32(v), g->cfg.tokens);
        g->cfg.tokens = bytes_get_be32(v);
    }
}

/* A token count being saved before it takes effect; g NULL once the gossip is gone. */
struct gossip_retoken {
    struct gossip_retoken *next;
    struct gossip *g;
    struct store_op op;
    uint32_t tokens;
    gossip_tokens_fn done;
    void *ctx;
    uint8_t value[4];
};

/* Whether a change of the ring is under way here or anywhere we see. */
static bool gossip_changing(const struct gossip *g)
{
    return !gossip_agreed(g, true);
}

/* Our entry moves to tokens in the target ring (the count in force: back, no change). */
static int gossip_tokens_begin(struct gossip *g, uint32_t tokens)
{
    const struct member_entry *self = &membership_self(g->m)->e;
    uint32_t before = self->target_tokens != 0 ? self->target_tokens : self->tokens;
    int rc = membership_set_tokens(g->m, self->tokens, tokens);

    if (rc != 0) {
        return rc;
    }
    g->dirty = true;
    g->tokens_queued = 0;
    if (tokens == self->tokens) {
        LOG(LOG_INFO, "tokens_change_cancelled", "tokens=%u was_target=%u digest=%016llx", tokens,
            before, (unsigned long long)membership_digest(g->m));
        gossip_event(g, "tokens_change_cancelled", g->cfg.id);
        return 0;
    }
    LOG(LOG_INFO, "tokens_changing",
        "tokens=%u target_tokens=%u was=%u digest=%016llx target=%016llx", self->tokens, tokens,
        before, (unsigned long long)membership_digest(g->m),
        (unsigned long long)membership_target_digest(g->m));
    gossip_event(g, "tokens_changing", g->cfg.id);
    return 0;
}

static void gossip_retoken_saved(struct store_op *op, void *ctx)
{
    struct gossip_retoken *t = ctx;
    struct gossip *g = t->g;
    const struct member_entry *self;
    char err[256] = "";
    bool queued = false;
    int rc = op->result;

    if (g != NULL) {
        struct gossip_retoken **at = &g->retokens;
        while (*at != t) {
            at = &(*at)->next;
        }
        *at = t->next;
    }
    if (rc != 0) {
        snprintf(err, sizeof(err), "cannot save the token count: %s; nothing changed",
                 rk_strerror(rc));
    } else if (g == NULL) {
        rc = RK_ECLOSED;
        snprintf(err, sizeof(err), "the node is stopping; the count is saved and taken at start");
    } else {
        g->tokens_override = true;
        g->cfg.tokens = t->tokens;
        self = &membership_self(g->m)->e;
        if (t->tokens == self->tokens && self->target_tokens == 0) {
            g->tokens_queued = 0; /* the count it has: nothing moves */
        } else if (self->target_tokens == 0 && gossip_changing(g)) {
            g->tokens_queued = t->tokens; /* another change first (gossip_tokens_unqueue()) */
            queued = true;
            LOG(LOG_INFO, "tokens_queued",
                "tokens=%u target_tokens=%u msg=\"a ring change is under way; this one starts "
                "when it is done\"",
                self->tokens, t->tokens);
        } else {
            rc = gossip_tokens_begin(g, t->tokens);
            if (rc != 0) {
                snprintf(err, sizeof(err), "cannot change the token count: %s", rk_strerror(rc));
            }
        }
    }
    t->done(t->ctx, rc, queued, err);
    free(t);
}

int gossip_set_tokens(struct gossip *g, uint32_t tokens, gossip_tokens_fn done, void *ctx,
                      char *err, size_t err_len)
{
    const struct member_entry *self = &membership_self(g->m)->e;
    struct gossip_retoken *t;
    int rc;

    if (tokens < RING_TOKENS_MIN || tokens > RING_TOKENS_MAX) {
        snprintf(err, err_len, "tokens must be %u to %u", RING_TOKENS_MIN, RING_TOKENS_MAX);
        return RK_EINVAL;
    }
    if (self->status != MSG_MEMBER_NORMAL) {
        snprintf(err, err_len,
                 "this node is %s, not normal: its token count changes only in the ring",
                 membership_status_names[self->status]);
        return RK_EINVAL;
    }
    if (g->cfg.store == NULL) {
        snprintf(err, err_len, "no data directory to save the count in");
        return RK_EINVAL;
    }
    t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    t->g = g;
    t->tokens = tokens;
    t->done = done;
    t->ctx = ctx;
    bytes_put_be32(t->value, tokens);
    meta_op_init(&t->op, "tokens", t->value, sizeof(t->value));
    t->op.done = gossip_retoken_saved;
    t->op.ctx = t;
    rc = store_submit(g->cfg.store, &t->op);
    if (rc != 0) {
        snprintf(err, err_len, "cannot save the token count: %s", rk_strerror(rc));
        free(t);
        return rc;
    }
    t->next = g->retokens;
    g->retokens = t;
    return 0;
}

/* A queued count starts once no change is under way (each round). */
static void gossip_tokens_unqueue(struct gossip *g)
{
    if (g->tokens_queued != 0 && membership_self(g->m)->e.status == MSG_MEMBER_NORMAL &&
        !gossip_changing(g)) {
        (void)gossip_tokens_begin(g, g->tokens_queued);
    }
}

int gossip_tokens_done(struct gossip *g)
{
    const struct member_entry *self = &membership_self(g->m)->e;
    uint32_t before = self->tokens, tokens = self->target_tokens;
    int rc;

    if (tokens == 0) {
        return 0;
    }
    rc = membership_set_tokens(g->m, tokens, 0);
    if (rc != 0) {
        return rc;
    }
    g->dirty = true;
    LOG(LOG_INFO, "tokens_changed", "tokens=%u was=%u digest=%016llx", tokens, before,
        (unsigned long long)membership_digest(g->m));
    gossip_event(g, "tokens_changed", g->cfg.id);
    return 0;
}

uint32_t gossip_tokens_queued(const struct gossip *g)
{
    return g->tokens_queued;
}

/* --- sending ------------------------------------------------------------------ */

/* The dial record of addr (throttling reconnects), created on first use. */
static struct gossip_dial *gossip_dial(struct gossip *g, const char *addr)
{
    for (size_t i = 0; i < g->n_dials; i++) {
        if (strcmp(g->dials[i].addr, addr) == 0) {
            return &g->dials[i];
        }
    }
    if (grow_array(&g->dials, &g->cap_dials, g->n_dials + 1, sizeof(*g->dials)) != 0) {
        return NULL;
    }
    memset(&g->dials[g->n_dials], 0, sizeof(g->dials[0]));
    snprintf(g->dials[g->n_dials].addr, MSG_ADDR_MAX, "%s", addr);
    return &g->dials[g->n_dials++];
}

/*
 * The connection to member id (or, for a seed, to addr): an existing one,
 * or a new one unless addr was dialled too recently.  NULL when none.
 */
static struct peer *gossip_link(struct gossip *g, const char *id, const char *addr,
                                uint64_t retry_ms)
{
    struct peer *p = g->hooks.find(g->hooks.ctx, id, addr);
    struct gossip_dial *d;
    uint64_t now = gossip_now(g);
    char err[256];

    if (p != NULL) {
        return p;
    }
    /* Never ourselves: a seed list naming us, or a stale member whose address we now hold. */
    if (strcmp(addr, g->cfg.peer_addr) == 0) {
        return NULL;
    }
    d = gossip_dial(g, addr);
    if (d == NULL || now < d->next_ms) {
        return NULL;
    }
    d->next_ms = now + retry_ms;
    p = g->hooks.dial(g->hooks.ctx, addr, err, sizeof(err));
    if (p == NULL) {
        LOG(LOG_DEBUG, "peer_dial_failed", "peer=%s error=\"%s\"", addr, err);
    }
    return p;
}

/*
 * Is an operator's removal being saved?  Until its save completes the
 * node sends no gossip (no SYN, ACK or ACK2: they would carry the removal
 * or ask for it to be fetched), so a removal whose save fails and is put
 * back never left the node: "nothing changed" holds.  A save takes a
 * commit, milliseconds against a round's interval.
 */
static bool gossip_holding(const struct gossip *g)
{
    return g->removals != NULL;
}

static void gossip_send_syn(struct gossip *g, struct peer *p)
{
    struct msg_digest digests[MSG_GOSSIP_DIGESTS_MAX];
    struct msg m = {.type = MSG_GOSSIP_SYN};

    if (gossip_holding(g)) {
        return;
    }
    m.u.syn.epoch = membership_epoch(g->m);
    m.u.syn.digest = membership_digest(g->m);
    m.u.syn.n = membership_digests(g->m, digests, MSG_GOSSIP_DIGESTS_MAX, &m.u.syn.complete);
    g->syn_complete = m.u.syn.complete;
    m.u.syn.digests = digests;
    g->hooks.send(g->hooks.ctx, p, &m);
}

/* --- receiving ------------------------------------------------------------------- */

static void gossip_ping_all(struct gossip *g, size_t *live, size_t *down);

/* Another process at addr has our id, and we are still joining: the node must not run. */
static void gossip_refuse(struct gossip *g, const char *addr)
{
    LOG(LOG_ERROR, "id_in_use", "other=%s", addr);
    g->hooks.id_in_use(g->hooks.ctx, addr);
}

void gossip_self_dialled(struct gossip *g, const char *addr)
{
    struct gossip_dial *d = gossip_dial(g, addr);

    if (d != NULL) {
        d->next_ms = UINT64_MAX;
    }
}

void gossip_same_id(struct gossip *g, const char *addr)
{
    if (!g->exchanged) {
        gossip_refuse(g, addr);
    }
}

/* A new life above old, an entry of our id from an earlier one; its generation saved. */
static void gossip_reincarnate(struct gossip *g, const struct msg_member *old, const char *why)
{
    uint64_t was = membership_self(g->m)->e.generation;
    uint8_t gen[8];
    int rc = membership_reincarnate(g->m, old);

    if (rc != 0) {
        LOG(LOG_ERROR, "reincarnate_failed", "seen_generation=%llu error=\"%s\"",
            (unsigned long long)old->generation, rk_strerror(rc));
        return;
    }
    bytes_put_be64(gen, membership_self(g->m)->e.generation);
    gossip_save_async(g, "generation", gen, sizeof(gen));
    g->dirty = true;
    LOG(LOG_WARN, "reincarnated", "why=%s seen_generation=%llu generation=%llu was=%llu", why,
        (unsigned long long)old->generation,
        (unsigned long long)membership_self(g->m)->e.generation, (unsigned long long)was);
}

/*
 * An entry of our id newer than ours.  Whose is it?
 *   - this life's (same instance and generation): a removal written by an
 *     operator while we were cut off or paused, which we obey by stopping;
 *     anything else of this life is an old echo, beaten by a version bump;
 *   - another process's: an entry at another address, still in the
 *     cluster: an impostor, or we are one (see gossip.h).  Of another
 *     instance, or of ours: a copy of this data directory running
 *     elsewhere, or a backup of it restored at a new address while the
 *     cluster holds a later life.  Taking a generation above it would
 *     start a war of generations with a live copy, so a node still
 *     joining refuses to run, and one already in the cluster only logs
 *     (once per address); the operator removes the one that is wrong;
 *   - an earlier life of this node: a removal or departure from before a
 *     restart, or any entry written from this address by a data directory
 *     since wiped or restored from a backup.  A restart is a new life: we
 *     take a generation above it, and the cluster takes us back.
 */
static void gossip_conflict(struct gossip *g, const struct msg_member *e)
{
    const struct member *self = membership_self(g->m);
    bool same_instance = memcmp(e->instance, g->instance, sizeof(g->instance)) == 0;
    bool gone = e->status == MSG_MEMBER_REMOVED || e->status == MSG_MEMBER_LEFT;

    if (same_instance && e->generation == self->e.generation) {
        if (e->status == MSG_MEMBER_REMOVED && !g->removed) {
            LOG(LOG_ERROR, "removed_from_cluster",
                "generation=%llu msg=\"another node removed this one (ringkv remove); stopping; "
                "start it again to rejoin\"",
                (unsigned long long)e->generation);
            g->removed = true;
        } else if (!gone) {
            membership_assert_self(g->m, e->version);
        }
        return;
    }
    if (!gone && strcmp(e->peer_addr, membership_entry_peer_addr(&self->e)) != 0) {
        if (!g->exchanged) {
            gossip_refuse(g, e->peer_addr);
        } else if (strcmp(g->conflict_addr, e->peer_addr) != 0) {
            snprintf(g->conflict_addr, sizeof(g->conflict_addr), "%s", e->peer_addr);
            LOG(LOG_WARN, "id_conflict",
                "other=%s same_data=%s generation=%llu msg=\"another ringkvd claims this id; "
                "stop the wrong one, then run 'ringkv remove' if needed\"",
                e->peer_addr, same_instance ? "yes" : "no", (unsigned long long)e->generation);
        }
        return;
    }
    gossip_reincarnate(g, e, gone ? membership_status_names[e->status] : "earlier_life");
}

/* One entry of a list (gossip_merge_list): the ring follows at the end of the list. */
static void gossip_merge(struct gossip *g, const struct msg_member *e)
{
    enum membership_merged merged;
    bool ring_changed = false;
    const struct member *had = membership_find(g->m, e->id);
    const struct member *self = membership_self(g->m);
    bool was_removed = had != NULL && had->e.status == MSG_MEMBER_REMOVED;
    int rc;

    if (had == self && g->cfg.join_by_handoff && e->generation < self->e.generation &&
        (e->status == MSG_MEMBER_REMOVED || e->status == MSG_MEMBER_LEFT) &&
        membership_in_ring(self->e.status)) {
        /* we went (an earlier life) while this directory's data stood still: join again */
        LOG(LOG_WARN, "rejoining",
            "seen_generation=%llu seen_status=%s msg=\"this node %s the "
            "cluster before this start; its data is merged as it joins again\"",
            (unsigned long long)e->generation, membership_status_names[e->status],
            e->status == MSG_MEMBER_LEFT ? "left" : "was removed from");
        (void)gossip_set_status(g, MSG_MEMBER_JOINING);
    }
    rc = membership_merge(g->m, e, gossip_now(g), &merged, &ring_changed);

    if (rc != 0) {
        LOG(LOG_WARN, "member_refused", "id=%s error=\"%s\"", e->id, rk_strerror(rc));
        return;
    }
    if (merged == MEMBERSHIP_CONFLICT) {
        gossip_conflict(g, e);
    } else if (merged == MEMBERSHIP_RAISED) {
        g->dirty = true;
        LOG(LOG_INFO, "epoch_raised", "seen_generation=%llu seen_status=%s epoch=%llu",
            (unsigned long long)e->generation, membership_status_names[e->status],
            (unsigned long long)membership_epoch(g->m));
    } else if (merged == MEMBERSHIP_ADDED) {
        LOG(LOG_INFO, "member_added", "id=%s rack=%s status=%s peer_addr=%s", e->id, e->rack,
            membership_status_names[e->status], e->peer_addr);
        gossip_event(g, "member_added", e->id);
    } else if (merged == MEMBERSHIP_UPDATED && e->status == MSG_MEMBER_REMOVED && !was_removed) {
        LOG(LOG_WARN, "member_removed", "id=%s source=gossip", e->id);
        gossip_event(g, "member_removed", e->id);
    } else if (merged == MEMBERSHIP_UPDATED && was_removed && e->status != MSG_MEMBER_REMOVED) {
        /* A later life: a restart, or one the removal was written too early to see. */
        LOG(LOG_WARN, "member_back", "id=%s generation=%llu status=%s peer_addr=%s", e->id,
            (unsigned long long)e->generation, membership_status_names[e->status], e->peer_addr);
        gossip_event(g, "member_back", e->id);
    }
}

/*
 * Our target ring moved to a new change: our entry now names it, and a
 * joining member starts receiving its arcs only once every live member's
 * entry does (gossip_agreed()).  So it hears ours at once, by a SYN of
 * ours (it asks for our newer entry in its ACK), instead of at the next
 * round that happens to pick it: at most GOSSIP_PUSH_MAX joining members,
 * once per change of our target, whatever the table's size.
 */
static void gossip_push_target(struct gossip *g)
{
    size_t pushed = 0;

    for (size_t i = 0; i < membership_count(g->m) && pushed < GOSSIP_PUSH_MAX; i++) {
        const struct member *e = membership_at(g->m, i);
        struct peer *p;
        if (e == membership_self(g->m) || e->e.status != MSG_MEMBER_JOINING ||
            e->state == DETECTOR_DOWN) {
            continue;
        }
        p = g->hooks.find(g->hooks.ctx, e->e.id, membership_entry_peer_addr(&e->e));
        if (p != NULL) {
            gossip_send_syn(g, p);
            pushed++;
        }
    }
}

/* The entries of an ACK or ACK2, then the ring rebuilt once if they changed it. */
static void gossip_merge_list(struct gossip *g, const struct msg_member *list, size_t n)
{
    uint64_t target = membership_target_digest(g->m);
    bool ring_changed;
    int rc;

    membership_defer(g->m);
    for (size_t i = 0; i < n; i++) {
        gossip_merge(g, &list[i]);
    }
    rc = membership_commit(g->m, &ring_changed);
    if (rc != 0) {
        LOG(LOG_WARN, "ring_rebuild_failed", "error=\"%s\" msg=\"retried at the next change\"",
            rk_strerror(rc));
    }
    /* the ring listeners have heard of a new ring; the table is saved next round */
    g->dirty |= ring_changed;
    if (membership_target_digest(g->m) != target &&
        membership_target_digest(g->m) != membership_digest(g->m)) {
        gossip_push_target(g);
    }
}

/*
 * An operator's removal being saved: the member table, epoch and digest
 * as one atomic group (all three or none), written by the store's writer
 * while the event loop goes on.  g is NULL once the gossip is destroyed:
 * the completion then only reports.
 */
struct gossip_removal {
    struct gossip_removal *next;
    struct gossip *g;
    struct store_op ops[3];
    struct msg_member before; /* the entry as it was, put back if the save fails */
    size_t left;              /* operations not yet completed */
    gossip_removed_fn done;
    void *ctx;
    uint8_t epoch[8], digest[8];
    struct buf table;
};

static void removal_unlink(struct gossip_removal *r)
{
    struct gossip_removal **at;

    if (r->g == NULL) {
        return;
    }
    for (at = &r->g->removals; *at != r; at = &(*at)->next) {
    }
    *at = r->next;
}

/* One of the three saves completed; the last one reports (they share the group's result). */
static void removal_saved(struct store_op *op, void *ctx)
{
    struct gossip_removal *r = ctx;
    struct gossip *g = r->g;
    char err[256] = "";
    int rc = op->result;

    if (--r->left > 0) {
        return;
    }
    removal_unlink(r);
    if (rc == 0 && g != NULL) {
        LOG(LOG_WARN, "member_removed", "id=%s source=operator digest=%016llx members=%zu",
            r->before.id, (unsigned long long)membership_digest(g->m),
            ring_member_count(membership_ring(g->m)));
    } else if (rc != 0) {
        /*
         * Not saved: not done.  The entry as it was (its ring is the one we
         * had), saved again next round over any save of the removal queued since.
         */
        int undo = g != NULL ? membership_put_back(g->m, &r->before) : RK_ECLOSED;
        if (g != NULL) {
            g->dirty = true;
        }
        snprintf(err, sizeof(err), "cannot save the removal of '%s': %s%s", r->before.id,
                 rk_strerror(rc),
                 undo != 0 ? "; the removal stays in memory and may spread" : "; nothing changed");
    }
    r->done(r->ctx, rc, err);
    buf_free(&r->table);
    free(r);
}

/* Start saving g's table after the removal whose entry was before: 0 or an error at once. */
static int removal_save(struct gossip *g, const struct msg_member *before, gossip_removed_fn done,
                        void *ctx)
{
    static const char *const names[3] = {"ring_epoch", "ring_digest", "membership"};
    struct gossip_removal *r = calloc(1, sizeof(*r));
    struct store_op *list[3];
    int rc;

    if (g->cfg.store == NULL) {
        free(r);
        return RK_EINVAL; /* nowhere to save it (gossip.h, Seams) */
    }
    if (r == NULL) {
        return RK_ENOMEM;
    }
    buf_init(&r->table, 0);
    rc = membership_encode(g->m, &r->table);
    bytes_put_be64(r->epoch, membership_epoch(g->m));
    bytes_put_be64(r->digest, membership_digest(g->m));
    for (size_t i = 0; i < 3; i++) {
        meta_op_init(&r->ops[i], names[i], NULL, 0);
        r->ops[i].done = removal_saved;
        r->ops[i].ctx = r;
        list[i] = &r->ops[i];
    }
    r->ops[0].value = r->epoch;
    r->ops[0].value_len = 8;
    r->ops[1].value = r->digest;
    r->ops[1].value_len = 8;
    r->ops[2].value = buf_data(&r->table);
    r->ops[2].value_len = r->table.len;
    r->g = g;
    r->before = *before;
    r->left = 3;
    r->done = done;
    r->ctx = ctx;
    rc = rc ? rc : store_submit_atomic(g->cfg.store, list, 3);
    if (rc != 0) {
        buf_free(&r->table);
        free(r);
        return rc;
    }
    r->next = g->removals;
    g->removals = r;
    return 0;
}

/* Why id cannot be removed (err), or 0. */
static int removal_check(struct gossip *g, const struct member *e, const char *id, char *err,
                         size_t err_len)
{
    if (e == NULL) {
        snprintf(err, err_len, "no member '%s' in this node's table", id);
        return RK_ENOTFOUND;
    }
    if (e == membership_self(g->m)) {
        snprintf(err, err_len, "'%s' is this node: ask another node to remove it", id);
        return RK_EINVAL;
    }
    if (e->e.status == MSG_MEMBER_REMOVED || e->e.status == MSG_MEMBER_LEFT) {
        snprintf(err, err_len, "'%s' is already %s", id, membership_status_names[e->e.status]);
        return RK_EINVAL;
    }
    if (e->state != DETECTOR_DOWN) {
        snprintf(
            err, err_len,
            "'%s' is %s here (phi %.2f): only a member seen down can be removed; stop it first", id,
            detector_state_name(e->state), detector_phi(&e->det, gossip_now(g)));
        return RK_EINVAL;
    }
    return 0;
}

int gossip_remove(struct gossip *g, const char *id, gossip_removed_fn done, void *ctx, char *err,
                  size_t err_len)
{
    const struct member *e = membership_find(g->m, id);
    struct msg_member before;
    int rc = removal_check(g, e, id, err, err_len);

    if (rc != 0) {
        return rc;
    }
    membership_entry_get(&before, &e->e);
    rc = membership_remove(g->m, id);
    if (rc != 0) {
        snprintf(err, err_len, "cannot remove '%s': %s", id, rk_strerror(rc));
        return rc;
    }
    rc = removal_save(g, &before, done, ctx);
    if (rc != 0) {
        int undo = membership_put_back(g->m, &before);
        snprintf(err, err_len, "cannot save the removal of '%s': %s%s", id, rk_strerror(rc),
                 undo != 0 ? "; the removal stays in memory and may spread" : "; nothing changed");
        return rc;
    }
    return 0;
}

/*
 * A completed exchange.  When its list was whole (not cut at the bound:
 * a larger cluster takes a few rounds to teach a newcomer), a joining node
 * now knows the cluster and takes its place.
 */
static bool gossip_tracked(const struct gossip *g, const struct member *e);

static void gossip_exchanged(struct gossip *g, bool whole)
{
    size_t live, down;
    bool first = !g->exchanged;

    g->exchanged = true;
    g->whole |= whole;
    if (first) {
        /* Dial (and ping) every member just learnt of now, not at the next round. */
        gossip_ping_all(g, &live, &down);
    }
    if (whole && !g->cfg.join_by_handoff && membership_self(g->m)->e.status == MSG_MEMBER_JOINING) {
        (void)gossip_set_status(g, MSG_MEMBER_NORMAL);
    }
}

int gossip_set_status(struct gossip *g, enum msg_member_status status)
{
    static const char *const events[MSG_MEMBER_STATUS_MAX + 1] = {[MSG_MEMBER_JOINING] = "joining",
                                                                  [MSG_MEMBER_NORMAL] = "joined",
                                                                  [MSG_MEMBER_LEAVING] = "leaving",
                                                                  [MSG_MEMBER_LEFT] = "left",
                                                                  [MSG_MEMBER_REMOVED] = "removed"};
    uint32_t before = membership_self(g->m)->e.status;
    int rc;

    if (before == (uint32_t)status) {
        return 0;
    }
    rc = membership_set_status(g->m, status);
    if (rc != 0) {
        return rc;
    }
    g->dirty = true;
    LOG(LOG_INFO, events[status], "from=%s digest=%016llx target=%016llx",
        membership_status_names[before], (unsigned long long)membership_digest(g->m),
        (unsigned long long)membership_target_digest(g->m));
    gossip_event(g, events[status], g->cfg.id);
    return 0;
}

const struct ring *gossip_target(const struct gossip *g)
{
    return membership_target(g->m);
}

bool gossip_table_whole(const struct gossip *g)
{
    return g->whole || g->cfg.n_seeds == 0;
}

bool gossip_agreed(const struct gossip *g, bool ring_too)
{
    uint64_t digest = membership_digest(g->m), target = membership_target_digest(g->m);

    if (ring_too && digest != target) {
        return false;
    }
    for (size_t i = 0; i < membership_count(g->m); i++) {
        const struct member *e = membership_at(g->m, i);
        if (e == membership_self(g->m) || !gossip_tracked(g, e) || e->state == DETECTOR_DOWN) {
            continue;
        }
        /* target 0: a node that predates targets, which cannot say; its ring digest must do */
        if ((e->e.target != 0 && e->e.target != target) || (ring_too && e->e.digest != digest)) {
            return false;
        }
    }
    return true;
}

/*
 * Whether an ACK of n entries from member from_id leaves us holding the whole table:
 * it answered a SYN that listed all we hold and was not cut at the bound,
 * or (a table too large for one SYN) the ring we now hold is the one the
 * sender reports in its entry.
 */
static bool gossip_whole(struct gossip *g, const char *from_id, size_t n)
{
    const struct member *sender = membership_find(g->m, from_id);

    if (g->syn_complete && n < MSG_GOSSIP_ENTRIES_MAX) {
        return true;
    }
    return sender != NULL && sender != membership_self(g->m) &&
           sender->e.digest == membership_digest(g->m);
}

static void on_syn(struct gossip *g, struct peer *p, const struct msg *m)
{
    struct msg_member *entries = malloc(MSG_GOSSIP_ENTRIES_MAX * sizeof(*entries));
    struct msg_digest *requests = malloc(MSG_GOSSIP_DIGESTS_MAX * sizeof(*requests));
    struct msg ack = {.type = MSG_GOSSIP_ACK};

    if (entries != NULL && requests != NULL && !gossip_holding(g)) {
        membership_answer(g->m, m->u.syn.digests, m->u.syn.n, m->u.syn.complete, entries,
                          MSG_GOSSIP_ENTRIES_MAX, &ack.u.entries.n, requests,
                          MSG_GOSSIP_DIGESTS_MAX, &ack.u.entries.n_requests);
        ack.u.entries.entries = entries;
        ack.u.entries.requests = requests;
        g->hooks.send(g->hooks.ctx, p, &ack);
    }
    free(entries);
    free(requests);
}

static void on_ack(struct gossip *g, struct peer *p, const char *from_id, const struct msg *m)
{
    struct msg_member *entries = malloc(MSG_GOSSIP_ENTRIES_MAX * sizeof(*entries));
    struct msg ack2 = {.type = MSG_GOSSIP_ACK2};
    size_t k = 0;

    gossip_merge_list(g, m->u.entries.entries, m->u.entries.n);
    for (size_t i = 0; entries != NULL && i < m->u.entries.n_requests; i++) {
        const struct member *e = membership_find(g->m, m->u.entries.requests[i].id);
        if (e != NULL && k < MSG_GOSSIP_ENTRIES_MAX) {
            membership_entry_get(&entries[k++], &e->e);
        }
    }
    if (entries != NULL && k > 0 && !gossip_holding(g)) {
        ack2.u.entries.n = k;
        ack2.u.entries.entries = entries;
        g->hooks.send(g->hooks.ctx, p, &ack2);
    }
    free(entries);
    gossip_exchanged(g, gossip_whole(g, from_id, m->u.entries.n));
}

static void on_ack2(struct gossip *g, const struct msg *m)
{
    gossip_merge_list(g, m->u.entries.entries, m->u.entries.n);
    /* It answers the other side's list, which may have left out what we lack. */
    gossip_exchanged(g, false);
}

void gossip_message(struct gossip *g, struct peer *p, const char *from_id, const struct msg *m)
{
    membership_heard(g->m, from_id, gossip_now(g));
    switch (m->type) {
    case MSG_GOSSIP_SYN:
        on_syn(g, p, m);
        break;
    case MSG_GOSSIP_ACK:
        on_ack(g, p, from_id, m);
        break;
    case MSG_GOSSIP_ACK2:
        on_ack2(g, m);
        break;
    case MSG_PING: /* the arrival above, and the heartbeat it names (membership.h) */
        membership_told(g->m, from_id, m->u.ping.generation, m->u.ping.version, gossip_now(g));
        break;
    default: /* PONG: the arrival above is all it carries */
        break;
    }
}

/*
 * A member we do not know yet dialled us (a newcomer dials every member
 * its seed told it of): exchange with it at once, so its entry reaches
 * every member in one round rather than by rumour, round after round.
 */
void gossip_peer_identified(struct gossip *g, struct peer *p, const char *id)
{
    if (membership_find(g->m, id) == NULL) {
        gossip_send_syn(g, p);
    }
    membership_heard(g->m, id, gossip_now(g));
}

/* --- rounds ------------------------------------------------------------------------- */

/*
 * The state last logged for member id (alive for a member first seen); NULL
 * on no memory.  Kept in id order, as the member table is, so a round
 * walks both together (gossip_detect()); a member gets a record the first
 * time its state is logged.
 */
static struct gossip_seen *gossip_seen(struct gossip *g, const char *id)
{
    size_t lo = 0, hi = g->n_seen;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(g->seen[mid].id, id);
        if (c == 0) {
            return &g->seen[mid];
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    if (grow_array(&g->seen, &g->cap_seen, g->n_seen + 1, sizeof(*g->seen)) != 0) {
        return NULL;
    }
    memmove(&g->seen[lo + 1], &g->seen[lo], (g->n_seen - lo) * sizeof(*g->seen));
    g->n_seen++;
    snprintf(g->seen[lo].id, sizeof(g->seen[0].id), "%s", id);
    g->seen[lo].state = DETECTOR_ALIVE;
    return &g->seen[lo];
}

/* Refresh the detectors and log every member whose state changed. */
static void gossip_detect(struct gossip *g)
{
    static const char *const events[] = {"member_up", "member_suspect", "member_down"};
    uint64_t now = gossip_now(g);

    size_t j = 0; /* the table and g->seen are both in id order: one walk over both */

    membership_detect(g->m, now, DETECTOR_SUSPECT_PHI_DEFAULT, DETECTOR_DOWN_PHI_DEFAULT);
    for (size_t i = 0; i < membership_count(g->m); i++) {
        const struct member *e = membership_at(g->m, i);
        struct gossip_seen *seen;
        while (j < g->n_seen && strcmp(g->seen[j].id, e->e.id) < 0) {
            j++;
        }
        bool held = j < g->n_seen && strcmp(g->seen[j].id, e->e.id) == 0;
        enum detector_state last = held ? g->seen[j].state : DETECTOR_ALIVE;
        if (e == membership_self(g->m) || last == e->state ||
            (seen = held ? &g->seen[j] : gossip_seen(g, e->e.id)) == NULL) {
            continue;
        }
        LOG(e->state == DETECTOR_DOWN ? LOG_WARN : LOG_INFO, events[e->state],
            "id=%s peer_addr=%s phi=%.2f", e->e.id, membership_entry_peer_addr(&e->e),
            detector_phi(&e->det, now));
        seen->state = e->state;
        gossip_event(g, events[e->state], e->e.id);
    }
}

/* Whether a member is one we keep in touch with: not ourselves, not gone. */
static bool gossip_tracked(const struct gossip *g, const struct member *e)
{
    return e != membership_self(g->m) && e->e.status != MSG_MEMBER_LEFT &&
           e->e.status != MSG_MEMBER_REMOVED;
}

/* Ping every tracked member (connecting where needed); count the live and the down. */
static void gossip_ping_all(struct gossip *g, size_t *live, size_t *down)
{
    struct msg ping = {.type = MSG_PING};

    *live = *down = 0;
    ping.u.ping.sent_ms = gossip_now(g);
    /* our heartbeat, so a receiver knows which relayed versions of ours are old news */
    ping.u.ping.generation = membership_self(g->m)->e.generation;
    ping.u.ping.version = membership_self(g->m)->e.version;
    for (size_t i = 0; i < membership_count(g->m); i++) {
        const struct member *e = membership_at(g->m, i);
        struct peer *p;
        if (!gossip_tracked(g, e)) {
            continue;
        }
        *live += e->state != DETECTOR_DOWN;
        *down += e->state == DETECTOR_DOWN;
        p = gossip_link(g, e->e.id, membership_entry_peer_addr(&e->e),
                        e->state == DETECTOR_DOWN ? GOSSIP_RECONNECT_DOWN_MS : g->cfg.interval_ms);
        if (p != NULL) {
            ping.u.ping.seq = ++g->ping_seq;
            g->hooks.send(g->hooks.ctx, p, &ping);
        }
    }
}

/* A random tracked member in the wanted state class (live or down); NULL when none. */
static const struct member *gossip_pick(struct gossip *g, bool want_down, size_t count)
{
    size_t k;

    if (count == 0) {
        return NULL;
    }
    k = (size_t)(gossip_rand(g) % count);
    for (size_t i = 0; i < membership_count(g->m); i++) {
        const struct member *e = membership_at(g->m, i);
        if (gossip_tracked(g, e) && (e->state == DETECTOR_DOWN) == want_down && k-- == 0) {
            return e;
        }
    }
    return NULL;
}

static bool gossip_is_seed(const struct gossip *g, const char *addr)
{
    const struct gossip_settings *c = &g->cfg;

    for (size_t i = 0; i < c->n_seeds; i++) {
        if (strcmp(c->seeds[i], addr) == 0) {
            return true;
        }
    }
    return false;
}

/* Gossip with a seed (by address): when cut off, or now and then. */
static void gossip_seed(struct gossip *g, size_t live, size_t down, bool target_was_seed)
{
    const struct gossip_settings *c = &g->cfg;
    struct peer *p;
    size_t k;

    if (c->n_seeds == 0 || (target_was_seed && live >= c->n_seeds)) {
        return;
    }
    if (live + down > 0 && gossip_rand(g) % (live + down) >= c->n_seeds) {
        return;
    }
    k = (size_t)(gossip_rand(g) % c->n_seeds);
    p = gossip_link(g, NULL, c->seeds[k], c->interval_ms);
    if (p != NULL) {
        gossip_send_syn(g, p);
    }
}

/*
 * A round far later than its interval: this process did not run for the
 * difference, so the detectors forgive that much silence to every member
 * heard within GOSSIP_PAUSE_ROUNDS intervals before the previous round
 * (membership_forgive()), and one line says so.  Without it a node
 * resumed after SIGSTOP holds every member down at its first round, and
 * refuses its clients NOREPLICAS until their next heartbeats arrive.  A
 * member already silent then gets no such excuse: forgiven at every late
 * round, a dead member's silence would grow by one interval a round, and
 * an observer late every round would see it down only after some 18 of
 * its rounds, however long they took.
 */
static void gossip_pause_check(struct gossip *g)
{
    uint64_t now = gossip_now(g), every = g->cfg.interval_ms, fresh = GOSSIP_PAUSE_ROUNDS * every;

    if (g->round_ms != 0 && now > g->round_ms && now - g->round_ms > fresh) {
        uint64_t pause = now - g->round_ms - every;
        LOG_LIMITED(
            &g->pause_log, LOG_WARN, "local_pause",
            "ms=%llu hint=\"this node did not run meanwhile (stopped, or its event loop stalled): "
            "the other members' silence over it is not held against them\"",
            (unsigned long long)pause);
        membership_forgive(g->m, pause, g->round_ms > fresh ? g->round_ms - fresh : 0, now);
    }
    g->round_ms = now;
}

void gossip_round(struct gossip *g)
{
    const struct member *target;
    struct peer *p;
    size_t live, down;
    bool seed = false;

    if (g->removed) {
        g->hooks.removed(g->hooks.ctx);
        return;
    }
    gossip_pause_check(g);
    membership_heartbeat(g->m);
    gossip_detect(g);
    gossip_ping_all(g, &live, &down);
    target = gossip_pick(g, false, live);
    if (target != NULL && (p = g->hooks.find(g->hooks.ctx, target->e.id,
                                             membership_entry_peer_addr(&target->e))) != NULL) {
        gossip_send_syn(g, p);
        seed = gossip_is_seed(g, membership_entry_peer_addr(&target->e));
    }
    if (down > 0 && gossip_rand(g) % (live + 1) < down) {
        target = gossip_pick(g, true, down);
        p = target != NULL
                ? g->hooks.find(g->hooks.ctx, target->e.id, membership_entry_peer_addr(&target->e))
                : NULL;
        if (p != NULL) {
            gossip_send_syn(g, p);
        }
    }
    gossip_seed(g, live, down, seed);
    gossip_tokens_unqueue(g);
    if (g->dirty) {
        gossip_save(g);
    }
}

static void on_round(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    gossip_round(w->data);
}

void gossip_start(struct gossip *g)
{
    double every = (double)g->cfg.interval_ms / 1000.0;

    if (g->cfg.loop == NULL) {
        return; /* the owner runs the rounds (gossip.h, Seams) */
    }
    g->round_ms = 0;
    ev_timer_init(&g->round_w, on_round, 0., every);
    g->round_w.data = g;
    ev_timer_start(g->cfg.loop, &g->round_w);
}

void gossip_stop(struct gossip *g)
{
    if (g->cfg.loop != NULL) {
        ev_timer_stop(g->cfg.loop, &g->round_w);
    }
    gossip_save(g);
}

void gossip_destroy(struct gossip *g)
{
    if (g == NULL) {
        return;
    }
    for (struct gossip_removal *r = g->removals; r != NULL; r = r->next) {
        r->g = NULL; /* its completion, when the store dispatches it, only reports */
    }
    for (struct gossip_retoken *t = g->retokens; t != NULL; t = t->next) {
        t->g = NULL;
    }
    membership_destroy(g->m);
    free(g->dials);
    free(g->seen);
    free(g);
}

const struct membership *gossip_members(const struct gossip *g)
{
    return g->m;
}

const struct ring *gossip_ring(const struct gossip *g)
{
    return membership_ring(g->m);
}

int gossip_ring_listen(struct gossip *g, membership_ring_fn fn, void *ctx)
{
    return membership_ring_listen(g->m, fn, ctx);
}

bool gossip_converged(const struct gossip *g, size_t *agree, size_t *up)
{
    uint64_t digest = membership_digest(g->m);
    bool settled = membership_target_digest(g->m) == digest;

    *agree = *up = 0;
    for (size_t i = 0; i < membership_count(g->m); i++) {
        const struct member *e = membership_at(g->m, i);
        bool is_self = e == membership_self(g->m);
        if (!is_self && (!gossip_tracked(g, e) || e->state == DETECTOR_DOWN)) {
            continue;
        }
        (*up)++;
        *agree += is_self || (e->e.digest == digest && (e->e.target == 0 || e->e.target == digest));
    }
    return *agree == *up && settled;
}
