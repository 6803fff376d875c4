/*
 * check_handoff.c - the ownership handoff engine (src/replication/handoff.c)
 * end to end over real LMDB stores: four nodes n1..n4 (racks r1, r2, r3,
 * r1), each a store in its own temporary directory and a handoff engine,
 * wired by a fake network.
 *
 * The network: a node's `ask` hook hands the request to the named node's
 * handoff_serve() at once and queues the answer; the pump delivers queued
 * answers at its next round, never inside ask, as a real connection would.
 * A round: deliver the answers queued so far, dispatch every store's
 * completions (waiting briefly on store_event_fd() when nothing was
 * delivered), step the fake monotonic clock by TICK_MS, and tick every
 * engine with a view built from the test's rings (one seed, the stores'
 * default).  Every wait is bounded by PUMP_ROUNDS and fails naming what it
 * waited for.
 *
 * Cases: a join copies exactly the keys the joiner replicates under the
 * target ring; a joiner that holds them already moves nothing; a newer
 * version the joiner holds survives; a joiner restarted mid-stream resumes
 * from its checkpoint; a source that goes down mid-stream is replaced by
 * another old replica; a leave completes only once every gainer said
 * HANDOFF_DONE, also when the DONEs came before the leaving node planned,
 * and when it restarted part way (gainers tell their arcs again);
 * sources that predate handoff are passed over (and with none left the
 * arc is left to writes); a key changed on the source after it was
 * streamed is streamed again at verification; repairs after a removal;
 * the clean-up once a ring has settled.
 *
 * Rack placement matters to what moves: n2 and n3 are alone in their
 * racks, so with rf 3 they replicate every key under both rings, and only
 * n1 and n4 (rack r1) trade arcs.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "handoff.h"
#include "log.h"
#include "msg.h"
#include "msg_handoff.h"
#include "record.h"
#include "ring.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_handoff"
#include "test_store_dir.h"

#define NODES 4
#define KEYS 3000
#define TOKENS 8
#define RF 3
/* The fake monotonic clock's step per pump round. */
#define TICK_MS 10
/* Rounds a wait may take: a case that needs more is stuck. */
#define PUMP_ROUNDS 20000
/* A batch of a few dozen keys, so an arc takes several pulls. */
#define SMALL_BATCH 4096
#define DONE_LOG_MAX 4096
#define ALL_NODES 0xfu
#define OLD_NODES 0x7u /* n1..n3 */
#define N4 3

enum unsupported {
    SUPPORTED,
    UNSUP_RETURN, /* ask returns RK_EMISMATCH at once */
    UNSUP_ANSWER, /* the answer is RK_EMISMATCH, as an older node's unknown-op answer ends */
};

struct node {
    char id[8];
    struct store *store;
    struct handoff *h;
    bool up;
    bool frozen; /* not ticked, and its answers held back */
    enum unsupported unsup;
    uint32_t status;
    bool tokens_changing;     /* its token count differs between ring and target */
    enum handoff_action last; /* of its last tick */
};

struct answer {
    struct answer *next;
    struct node *to; /* the asker */
    coord_answer_fn done;
    void *dctx;
    int result;
    size_t len;
    uint8_t body[];
};

enum evil {
    EVIL_NONE,
    EVIL_OUTSIDE, /* each answer also carries a key outside the arc asked for */
    EVIL_STALL,   /* each answer: no items, not done, the cursor asked from given back */
};

struct done_told {
    unsigned from, to;
    uint64_t start, end;
};

struct raw {
    uint8_t *p;
    size_t len;
};

struct net {
    struct node nodes[NODES];
    struct answer *head, **tail;
    const struct ring *ring, *target; /* the view's */
    bool ring_agreed;
    bool closing; /* teardown: every ask fails with RK_ECLOSED */
    uint64_t now_ms;
    struct handoff_config cfg; /* self is filled per node */
    struct raw ref[KEYS];      /* each key's record as first written */
    size_t pull_items_max;     /* the most items one PULL answer carried */
    struct done_told told[DONE_LOG_MAX];
    size_t n_told;
    /* case 7: the first key a PULL answer brings to n4 is changed on its source */
    bool mutate_armed, mutate_due;
    unsigned mutate_node;
    char mutate_key[32];
    /* a malicious or broken source: its PULL answers to n4 are rewritten (evil_answer()) */
    enum evil evil;
    unsigned evil_mask; /* the sources that misbehave */
    int evil_key;       /* EVIL_OUTSIDE: the key added, one n4 does not replicate */
    size_t evil_pulls;  /* PULL requests the misbehaving sources answered */
    bool old_holders;   /* PULLs reach holders without max_items, DIGESTs without count_only,
                           as one that predates them reads */
    size_t digests_counted, digests_hashed; /* DIGEST requests asking for the count alone, or not */
};

static const char *const node_ids[NODES] = {"n1", "n2", "n3", "n4"};
static const char *const node_racks[NODES] = {"r1", "r2", "r3", "r1"};
static struct net net;
static struct msg_handoff_item items_buf[MSG_HANDOFF_ITEMS_MAX];

/* --- helpers: keys, rings, stores ---------------------------------------------------- */

static void key_of(int i, char *key, size_t cap)
{
    snprintf(key, cap, "key-%05d", i);
}

static const struct ring *ring_of(unsigned mask)
{
    struct ring_member m[NODES];
    struct ring *r;
    size_t n = 0;

    for (unsigned i = 0; i < NODES; i++) {
        if (mask >> i & 1) {
            m[n++] = (struct ring_member){node_ids[i], node_racks[i], TOKENS};
        }
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, n), 0);
    return r;
}

/* Every node of mask with TOKENS tokens, n1 with n1_tokens (a change of its count). */
static const struct ring *ring_n1_tokens(unsigned mask, uint32_t n1_tokens)
{
    struct ring_member m[NODES];
    struct ring *r;
    size_t n = 0;

    for (unsigned i = 0; i < NODES; i++) {
        if (mask >> i & 1) {
            m[n++] = (struct ring_member){node_ids[i], node_racks[i], i == 0 ? n1_tokens : TOKENS};
        }
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, n), 0);
    return r;
}

/* Does r place key on node id (rf RF)? */
static bool replicates(const struct ring *r, const char *key, const char *id)
{
    uint32_t pl[RING_RF_MAX];
    size_t n;

    ck_assert_int_eq(ring_preflist(r, ring_key_position(r, key, strlen(key)), RF, pl, &n), 0);
    for (size_t j = 0; j < n; j++) {
        if (strcmp(ring_member_id(r, pl[j]), id) == 0) {
            return true;
        }
    }
    return false;
}

static bool on_arc(uint64_t pos, uint64_t start, uint64_t end)
{
    if (start == end) {
        return true;
    }
    return start < end ? pos > start && pos <= end : pos > start || pos <= end;
}

static int raw_copy(void *ctx, const uint8_t *rec, size_t len)
{
    struct raw *r = ctx;

    r->p = malloc(len);
    ck_assert_ptr_nonnull(r->p);
    memcpy(r->p, rec, len);
    r->len = len;
    return 0;
}

/* The stored bytes of key (p NULL when absent); the caller frees p. */
static struct raw stored(struct store *s, const char *key)
{
    struct raw r = {NULL, 0};
    int rc = store_read(s, key, strlen(key), raw_copy, &r);

    ck_assert_msg(rc == 0 || rc == RK_ENOTFOUND, "read %s: %s", key, rk_strerror(rc));
    return r;
}

static bool raw_eq(const struct raw *a, const struct raw *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->p, b->p, a->len) == 0);
}

/* n4's store group size (store_batch_max()); 0: the default. */
static size_t n4_group;

static void node_open(unsigned i)
{
    struct store_config c;
    char path[512], err[512];
    struct node *n = &net.nodes[i];

    store_config_in(&c, path, sizeof(path), node_ids[i]);
    c.node_id = node_ids[i];
    if (i == N4 && n4_group != 0) {
        c.batch_max = n4_group;
    }
    ck_assert_msg(store_open(&n->store, &c, err, sizeof(err)) == 0, "open %s: %s", node_ids[i],
                  err);
    snprintf(n->id, sizeof(n->id), "%s", node_ids[i]);
    n->up = true;
    n->status = MSG_MEMBER_NORMAL;
}

/*
 * Write every key once, on the first of its holders, and copy the record
 * to the others, so each holder stores identical bytes: the holders are
 * those placement puts it on, or (placement NULL) the nodes of mask.
 */
static void populate(const struct ring *placement, unsigned mask)
{
    for (int i = 0; i < KEYS; i++) {
        char key[32], value[32];
        unsigned holders = 0;
        int first;

        key_of(i, key, sizeof(key));
        snprintf(value, sizeof(value), "value-%05d", i);
        for (unsigned j = 0; j < NODES; j++) {
            bool on = placement ? replicates(placement, key, node_ids[j]) : (mask >> j & 1);
            holders |= (unsigned)on << j;
        }
        first = __builtin_ctz(holders);
        ck_assert_int_eq(store_write(net.nodes[first].store, key, strlen(key), value, strlen(value),
                                     false, NULL, NULL),
                         0);
        net.ref[i] = stored(net.nodes[first].store, key);
        for (unsigned j = (unsigned)first + 1; j < NODES; j++) {
            if (holders >> j & 1) {
                ck_assert_int_eq(store_apply_record(net.nodes[j].store, key, strlen(key),
                                                    net.ref[i].p, net.ref[i].len, NULL),
                                 0);
            }
        }
    }
}

/*
 * Node i holds exactly the keys r places on it, each as its reference
 * record (the key numbered skip, when >= 0, is not looked at); returns
 * how many it holds.
 */
static size_t assert_holds_exactly(unsigned i, const struct ring *r, int skip)
{
    size_t held = 0;

    for (int k = 0; k < KEYS; k++) {
        char key[32];
        struct raw got;

        if (k == skip) {
            continue;
        }
        key_of(k, key, sizeof(key));
        got = stored(net.nodes[i].store, key);
        if (replicates(r, key, node_ids[i])) {
            ck_assert_msg(raw_eq(&got, &net.ref[k]), "%s: %s is not the record written",
                          node_ids[i], key);
            held++;
        } else {
            ck_assert_msg(got.p == NULL, "%s holds %s, which it does not replicate", node_ids[i],
                          key);
        }
        free(got.p);
    }
    return held;
}

static struct handoff_stats stats_of(unsigned i)
{
    struct handoff_stats st;

    handoff_get_stats(net.nodes[i].h, &st);
    return st;
}

/* --- the fake network -------------------------------------------------------------- */

static struct node *node_find(const char *id)
{
    for (unsigned i = 0; i < NODES; i++) {
        if (strcmp(net.nodes[i].id, id) == 0) {
            return &net.nodes[i];
        }
    }
    return NULL;
}

static void answer_queue(struct node *to, coord_answer_fn done, void *dctx, int result,
                         const struct buf *body)
{
    size_t len = body != NULL ? body->len : 0;
    struct answer *a = malloc(sizeof(*a) + (len ? len : 1));

    ck_assert_ptr_nonnull(a);
    a->next = NULL;
    a->to = to;
    a->done = done;
    a->dctx = dctx;
    a->result = result;
    a->len = len;
    if (len > 0) {
        memcpy(a->body, buf_data(body), len);
    }
    *net.tail = a;
    net.tail = &a->next;
}

/*
 * Deliver the answers queued before this call, but those to a frozen node,
 * which stay queued in order; returns how many were delivered.
 */
static size_t answers_deliver(void)
{
    struct answer *a = net.head;
    size_t n = 0;

    net.head = NULL;
    net.tail = &net.head;
    while (a != NULL) {
        struct answer *next = a->next;
        if (a->to->frozen && !net.closing) {
            a->next = NULL;
            *net.tail = a;
            net.tail = &a->next;
        } else {
            a->done(a->dctx, a->result, a->body, a->len);
            free(a);
            n++;
        }
        a = next;
    }
    return n;
}

/* What the test watches on the wire: DONEs told, items per PULL answer, case 7's key. */
static void observe(const struct node *from, const struct node *to, uint32_t op,
                    const uint8_t *body, size_t len, const struct buf *answer)
{
    if (op == MSG_OP_HANDOFF_DONE && net.n_told < DONE_LOG_MAX) {
        struct msg_handoff_done m;
        ck_assert_int_eq(msg_handoff_done_decode(body, len, &m), 0);
        net.told[net.n_told++] = (struct done_told){(unsigned)(from - net.nodes),
                                                    (unsigned)(to - net.nodes), m.start, m.end};
    }
    if (op == MSG_OP_HANDOFF_PULL) {
        struct msg_handoff_pull_answer a;
        ck_assert_int_eq(msg_handoff_pull_answer_decode(buf_data(answer), answer->len, &a,
                                                        items_buf, MSG_HANDOFF_ITEMS_MAX),
                         0);
        if (a.n_items > net.pull_items_max) {
            net.pull_items_max = a.n_items;
        }
        if (net.mutate_armed && from == &net.nodes[N4] && a.n_items > 0 &&
            a.items[0].key_len < sizeof(net.mutate_key)) {
            memcpy(net.mutate_key, a.items[0].key, a.items[0].key_len);
            net.mutate_key[a.items[0].key_len] = '\0';
            net.mutate_node = (unsigned)(to - net.nodes);
            net.mutate_armed = false;
            net.mutate_due = true;
        }
    }
}

static struct msg_handoff_item evil_items[MSG_HANDOFF_ITEMS_MAX + 1];

/* A misbehaving source's answer to n4's PULL (body), rewritten in out. */
static void evil_answer(const uint8_t *body, size_t len, struct buf *out)
{
    struct msg_handoff_pull q;
    struct msg_handoff_pull_answer a;
    struct buf was;
    char key[32];

    net.evil_pulls++;
    ck_assert_int_eq(msg_handoff_pull_decode(body, len, &q), 0);
    buf_init(&was, 0);
    ck_assert_int_eq(buf_append(&was, buf_data(out), out->len), 0);
    ck_assert_int_eq(msg_handoff_pull_answer_decode(buf_data(&was), was.len, &a, evil_items,
                                                    MSG_HANDOFF_ITEMS_MAX),
                     0);
    if (net.evil == EVIL_OUTSIDE && a.n_items < MSG_HANDOFF_ITEMS_MAX) {
        key_of(net.evil_key, key, sizeof(key));
        evil_items[a.n_items++] = (struct msg_handoff_item){
            (const uint8_t *)key, strlen(key), net.ref[net.evil_key].p, net.ref[net.evil_key].len};
    } else if (net.evil == EVIL_STALL) {
        a = (struct msg_handoff_pull_answer){
            .status = MSG_KV_OK, .next = q.after, .next_len = q.after_len, .has_next = q.has_after};
    }
    buf_clear(out);
    ck_assert_int_eq(msg_handoff_pull_answer_encode(&a, out), 0);
    buf_free(&was);
}

static int fake_ask(void *ctx, const char *id, uint32_t op, const uint8_t *body, size_t len,
                    coord_answer_fn done, void *dctx)
{
    struct node *from = ctx, *to = node_find(id);
    struct buf out, old;
    int rc;

    ck_assert_msg(to != NULL, "%s asked unknown member %s", from->id, id);
    if (net.closing) {
        return RK_ECLOSED;
    }
    if (to->unsup == UNSUP_RETURN) {
        return RK_EMISMATCH;
    }
    if (to->unsup == UNSUP_ANSWER || to->h == NULL) {
        answer_queue(from, done, dctx, to->h == NULL ? RK_ECLOSED : RK_EMISMATCH, NULL);
        return 0;
    }
    buf_init(&out, 0);
    buf_init(&old, 0);
    if (op == MSG_OP_HANDOFF_PULL && net.old_holders) {
        struct msg_handoff_pull q;
        ck_assert_int_eq(msg_handoff_pull_decode(body, len, &q), 0);
        q.max_items = 0;
        ck_assert_int_eq(msg_handoff_pull_encode(&q, &old), 0);
        body = buf_data(&old);
        len = old.len;
    }
    if (op == MSG_OP_HANDOFF_DIGEST) {
        struct msg_handoff_digest q;
        ck_assert_int_eq(msg_handoff_digest_decode(body, len, &q), 0);
        net.digests_counted += q.count_only;
        net.digests_hashed += !q.count_only;
        if (net.old_holders && q.count_only) {
            q.count_only = false;
            ck_assert_int_eq(msg_handoff_digest_encode(&q, &old), 0);
            body = buf_data(&old);
            len = old.len;
        }
    }
    rc = handoff_serve(to->h, from->id, op, body, len, 0, &out);
    if (rc == 0) {
        observe(from, to, op, body, len, &out);
    }
    if (rc == 0 && op == MSG_OP_HANDOFF_PULL && net.evil != EVIL_NONE && from == &net.nodes[N4] &&
        (net.evil_mask >> (to - net.nodes) & 1) != 0) {
        evil_answer(body, len, &out);
    }
    answer_queue(from, done, dctx, rc, rc == 0 ? &out : NULL);
    buf_free(&out);
    buf_free(&old);
    return 0;
}

static bool fake_up(void *ctx, const char *id)
{
    const struct node *n = node_find(id);

    (void)ctx;
    return n != NULL && n->up;
}

static size_t fake_body_max(void *ctx, const char *id)
{
    (void)ctx;
    (void)id;
    return 0;
}

static void engine_start(unsigned i)
{
    struct handoff_config cfg = net.cfg;
    struct handoff_hooks hooks = {
        .ctx = &net.nodes[i], .ask = fake_ask, .up = fake_up, .body_max = fake_body_max};

    snprintf(cfg.self, sizeof(cfg.self), "%s", node_ids[i]);
    ck_assert_int_eq(handoff_create(&net.nodes[i].h, net.nodes[i].store, &cfg, &hooks), 0);
}

/* --- the pump ------------------------------------------------------------------------ */

static void mutate_now(void)
{
    struct store *s = net.nodes[net.mutate_node].store;

    net.mutate_due = false;
    ck_assert_int_eq(
        store_write(s, net.mutate_key, strlen(net.mutate_key), "changed", 7, false, NULL, NULL), 0);
}

static void pump_round(void)
{
    struct pollfd fds[NODES];

    if (answers_deliver() == 0) {
        for (unsigned i = 0; i < NODES; i++) {
            fds[i] = (struct pollfd){.fd = store_event_fd(net.nodes[i].store), .events = POLLIN};
        }
        (void)poll(fds, NODES, 1);
    }
    for (unsigned i = 0; i < NODES; i++) {
        store_dispatch(net.nodes[i].store);
    }
    if (net.mutate_due) {
        mutate_now();
    }
    net.now_ms += TICK_MS;
    for (unsigned i = 0; i < NODES; i++) {
        struct node *n = &net.nodes[i];
        struct handoff_view v = {.ring = net.ring,
                                 .target = net.target,
                                 .status = n->status,
                                 .table_whole = true,
                                 .target_agreed = true,
                                 .ring_agreed = net.ring_agreed,
                                 .tokens_changing = n->tokens_changing,
                                 .now_ms = net.now_ms};
        if (n->h != NULL && !n->frozen) {
            n->last = handoff_tick(n->h, &v);
        }
    }
}

/* Pump until pred holds; fails naming what after PUMP_ROUNDS rounds. */
static void pump_until(bool (*pred)(void), const char *what)
{
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        pump_round();
        if (pred()) {
            return;
        }
    }
    ck_abort_msg("%s: not reached after %d rounds", what, PUMP_ROUNDS);
}

static void pump_rounds(int rounds)
{
    for (int round = 0; round < rounds; round++) {
        pump_round();
    }
}

static bool n4_joined(void)
{
    for (unsigned i = 0; i < N4; i++) {
        ck_assert_msg(net.nodes[i].last == HANDOFF_NONE, "%s, normal, was told to change status",
                      node_ids[i]);
    }
    return net.nodes[N4].last == HANDOFF_JOINED;
}

/* --- setup and teardown ------------------------------------------------------------- */

static void net_setup(void)
{
    memset(&net, 0, sizeof(net));
    net.tail = &net.head;
    net.now_ms = 1000;
    net.cfg.rf = RF;
    net.cfg.rate = (uint64_t)1 << 30;
    net.cfg.concurrency = 2;
    for (unsigned i = 0; i < NODES; i++) {
        node_open(i);
    }
}

/*
 * As the node stops: the peers go (every ask fails), the answers still
 * queued are delivered, the stores close (dispatching what completed),
 * then the engines go.
 */
static void net_teardown(void)
{
    net.closing = true;
    for (int round = 0; round < 100 && net.head != NULL; round++) {
        (void)answers_deliver();
    }
    ck_assert_ptr_null(net.head);
    for (unsigned i = 0; i < NODES; i++) {
        store_close(net.nodes[i].store);
    }
    for (unsigned i = 0; i < NODES; i++) {
        handoff_destroy(net.nodes[i].h);
    }
    ring_unref(net.ring);
    if (net.target != net.ring) {
        ring_unref(net.target);
    }
    for (int k = 0; k < KEYS; k++) {
        free(net.ref[k].p);
    }
}

/* n1..n3 hold every key; n4 joins (its engine and theirs started). */
static void join_setup(void)
{
    populate(NULL, OLD_NODES);
    net.ring = ring_of(OLD_NODES);
    net.target = ring_of(ALL_NODES);
    net.nodes[N4].status = MSG_MEMBER_JOINING;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
}

/* The keys n4 replicates under the target ring. */
static size_t n4_share(void)
{
    size_t n = 0;

    for (int k = 0; k < KEYS; k++) {
        char key[32];
        key_of(k, key, sizeof(key));
        n += replicates(net.target, key, node_ids[N4]);
    }
    return n;
}

/* --- cases ------------------------------------------------------------------------- */

START_TEST(test_join)
{
    struct handoff_stats st;
    uint64_t sent = 0;
    size_t held;

    net_setup();
    join_setup();
    pump_until(n4_joined, "n4 joined");
    held = assert_holds_exactly(N4, net.target, -1);
    ck_assert_uint_eq(held, n4_share());
    ck_assert_uint_gt(held, 0);
    st = stats_of(N4);
    ck_assert_uint_gt(st.arcs_planned, 0);
    ck_assert_uint_eq(st.arcs_done, st.arcs_planned);
    ck_assert_uint_eq(st.keys_received, held);
    ck_assert_uint_eq(st.arcs_unsupported, 0);
    ck_assert_uint_eq(st.verify_mismatch, 0);
    for (unsigned i = 0; i < N4; i++) {
        struct handoff_stats o = stats_of(i);
        ck_assert_uint_eq(o.arcs_planned, 0); /* the old members gain nothing */
        sent += o.keys_sent;
    }
    ck_assert_uint_eq(sent, held);
    ck_assert_uint_eq(handoff_active(net.nodes[N4].h), 0);
    /*
     * n4 held none of its arcs: each first check asked for the source's
     * key count alone, and only the verifications hashed the arc
     */
    ck_assert_uint_eq(net.digests_counted, st.arcs_planned);
    ck_assert_uint_eq(net.digests_hashed, st.arcs_planned - st.arcs_same);
    net_teardown();
}
END_TEST

/*
 * n4 joins with a store group of `group` operations (old_holders: the
 * holders predate max_items and skip it): it ends holding exactly its
 * share, every key received once, no step failed.  Returns n4's counters;
 * net.pull_items_max is left for the caller.
 */
static struct handoff_stats join_group(size_t group, bool old_holders)
{
    struct handoff_stats st;
    size_t held;

    n4_group = group;
    net_setup();
    net.old_holders = old_holders;
    join_setup();
    pump_until(n4_joined, "n4 joined");
    held = assert_holds_exactly(N4, net.target, -1);
    ck_assert_uint_eq(held, n4_share());
    st = stats_of(N4);
    ck_assert_uint_eq(st.keys_received, held);
    ck_assert_uint_eq(st.failures, 0);
    net_teardown();
    n4_group = 0;
    return st;
}

/*
 * n4's store takes groups of 16 operations: it asks for batches of at most
 * 15 items, so each batch and its checkpoint are one atomic group.
 */
START_TEST(test_join_small_group)
{
    struct handoff_stats st = join_group(16, false);

    ck_assert_uint_eq(net.pull_items_max, 15);
    ck_assert_uint_ge(st.batches_received, st.keys_received / 15);
}
END_TEST

/*
 * The store group at its edges: groups of 1 ask for 1 item and apply each
 * batch in two steps (records, then checkpoint); groups of 2 ask for 1 and
 * apply it with its checkpoint in one group.
 */
START_TEST(test_join_group_one)
{
    join_group(1, false);
    ck_assert_uint_eq(net.pull_items_max, 1);
}
END_TEST

START_TEST(test_join_group_two)
{
    join_group(2, false);
    ck_assert_uint_eq(net.pull_items_max, 1);
}
END_TEST

/*
 * Holders that predate max_items skip it and answer batches larger than
 * n4's group of 16: n4 applies each in two steps.  They skip count_only
 * too, and answer a count's request with a digest of one part.
 */
START_TEST(test_join_old_holders)
{
    join_group(16, true);
    ck_assert_uint_gt(net.pull_items_max, 16);
    /* they hashed the arcs n4 asked to count: n4 took the count, and the join completed */
    ck_assert_uint_gt(net.digests_counted, 0);
}
END_TEST

START_TEST(test_join_nothing_to_move)
{
    struct handoff_stats st;

    net_setup();
    populate(NULL, ALL_NODES); /* n4 holds everything already */
    net.ring = ring_of(OLD_NODES);
    net.target = ring_of(ALL_NODES);
    net.nodes[N4].status = MSG_MEMBER_JOINING;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
    pump_until(n4_joined, "n4 joined");
    st = stats_of(N4);
    ck_assert_uint_gt(st.arcs_planned, 0);
    ck_assert_uint_eq(st.arcs_same, st.arcs_planned);
    ck_assert_uint_eq(st.arcs_done, st.arcs_planned);
    ck_assert_uint_eq(st.keys_received, 0);
    ck_assert_uint_eq(st.batches_received, 0);
    /* n4 held every arc: its checks compared digests, none asked for a count alone */
    ck_assert_uint_eq(net.digests_counted, 0);
    ck_assert_uint_eq(net.digests_hashed, st.arcs_planned);
    net_teardown();
}
END_TEST

START_TEST(test_join_keeps_newer)
{
    struct handoff_stats st;
    struct raw before, after;
    struct record r;
    char key[32];
    int k = 0;

    net_setup();
    join_setup();
    for (k = 0; k < KEYS; k++) { /* the first key n4 gains */
        key_of(k, key, sizeof(key));
        if (replicates(net.target, key, node_ids[N4])) {
            break;
        }
    }
    ck_assert_int_lt(k, KEYS);
    /* a write n4 received meanwhile, descending from the version n1..n3 hold */
    ck_assert_int_eq(store_apply_record(net.nodes[N4].store, key, strlen(key), net.ref[k].p,
                                        net.ref[k].len, NULL),
                     0);
    ck_assert_int_eq(
        store_write(net.nodes[N4].store, key, strlen(key), "newer", 5, false, NULL, NULL), 0);
    before = stored(net.nodes[N4].store, key);
    pump_until(n4_joined, "n4 joined");
    after = stored(net.nodes[N4].store, key);
    ck_assert_msg(raw_eq(&before, &after), "the newer version of %s was overwritten", key);
    record_init(&r);
    ck_assert_int_eq(store_get(net.nodes[N4].store, key, strlen(key), &r), 0);
    ck_assert_uint_eq(r.n, 1);
    ck_assert_uint_eq(r.s[0].value_len, 5);
    ck_assert_mem_eq(r.s[0].value, "newer", 5);
    record_deinit(&r);
    (void)assert_holds_exactly(N4, net.target, k);
    st = stats_of(N4);
    ck_assert_uint_eq(st.arcs_done, st.arcs_planned);
    /* its sub-arc never matches the source's: streamed again, then accepted as a superset */
    ck_assert_uint_gt(st.verify_superset, 0);
    free(before.p);
    free(after.p);
    net_teardown();
}
END_TEST

struct streaming_seen {
    bool found;
    char from[RING_NAME_MAX + 1]; /* its source */
};

static void streaming_row(void *ctx, const struct handoff_transfer *t)
{
    struct streaming_seen *s = ctx;

    if (!s->found && t->incoming && strcmp(t->state, "streaming") == 0 && t->keys > 0) {
        s->found = true;
        snprintf(s->from, sizeof(s->from), "%s", t->from);
    }
}

/* n4 has applied a batch of an arc it is still streaming: that arc has a checkpoint. */
static bool n4_mid_stream(void)
{
    struct streaming_seen s = {false, ""};

    if (stats_of(N4).batches_received == 0) {
        return false;
    }
    handoff_each(net.nodes[N4].h, streaming_row, &s);
    return s.found;
}

START_TEST(test_resume)
{
    struct handoff_stats first, second;
    uint64_t total;
    size_t held;

    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 1;
    join_setup();
    pump_until(n4_mid_stream, "n4 streaming, a batch applied");
    first = stats_of(N4);
    ck_assert_int_ne(net.nodes[N4].last, HANDOFF_JOINED);
    handoff_destroy(net.nodes[N4].h); /* its answers still queued go to orphans */
    net.nodes[N4].h = NULL;
    engine_start(N4);
    pump_until(n4_joined, "n4 joined after its restart");
    second = stats_of(N4);
    held = assert_holds_exactly(N4, net.target, -1);
    ck_assert_uint_gt(second.resumed, 0);
    total = first.keys_received + second.keys_received;
    ck_assert_uint_ge(total, held);
    /* one arc in flight (concurrency 1): at most one batch received twice */
    ck_assert_msg(total <= held + net.pull_items_max,
                  "received %llu keys for %zu, more than one batch (%zu) again",
                  (unsigned long long)total, held, net.pull_items_max);
    ck_assert_uint_gt(first.batches_received, 0);
    ck_assert_uint_lt(net.pull_items_max, held); /* batches were small */
    net_teardown();
}
END_TEST

/*
 * The source of an arc n4 is streaming goes down: it is the node that loses
 * the arc, so the arc waits for it (a stand-in holds only the writes it
 * acknowledged itself), and goes on when it is back.
 */
START_TEST(test_source_down)
{
    struct streaming_seen seen = {false, ""};
    struct node *down;

    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 1;
    join_setup();
    pump_until(n4_mid_stream, "n4 streaming, a batch applied");
    handoff_each(net.nodes[N4].h, streaming_row, &seen);
    down = node_find(seen.from);
    ck_assert_ptr_nonnull(down);
    down->up = false;
    /* it loses the arc: no other old replica stands in, so the join waits for it */
    pump_rounds(500);
    ck_assert_int_eq(net.nodes[N4].last, HANDOFF_NONE);
    down->up = true;
    pump_until(n4_joined, "n4 joined once that source was back");
    (void)assert_holds_exactly(N4, net.target, -1);
    ck_assert_uint_eq(stats_of(N4).arcs_unsupported, 0);
    net_teardown();
}
END_TEST

/* n1 (the one gainer: n2 and n3, alone in their racks, replicate everything) is part way. */
static bool n1_part_way(void)
{
    struct handoff_stats st = stats_of(0);

    return st.arcs_done > 0 && st.arcs_done < st.arcs_planned;
}

static bool n4_left(void)
{
    if (net.nodes[N4].last != HANDOFF_LEFT) {
        return false;
    }
    for (unsigned i = 0; i < N4; i++) {
        struct handoff_stats st = stats_of(i);
        ck_assert_msg(st.arcs_done == st.arcs_planned, "n4 left before %s had its arcs",
                      node_ids[i]);
    }
    return true;
}

/* Every node that gains an arc n4 gives told n4 HANDOFF_DONE for it. */
static void assert_gainers_told(void)
{
    struct ring_diff d;
    size_t gives = 0;

    ck_assert_int_eq(ring_diff(net.ring, net.target, RF, &d), 0);
    for (size_t m = 0; m < d.n_moves; m++) {
        const struct ring_move *mv = &d.moves[m];
        bool n4_loses = false;
        for (size_t j = 0; j < mv->n_lose; j++) {
            n4_loses |= strcmp(mv->lose[j], "n4") == 0;
        }
        for (size_t g = 0; n4_loses && g < mv->n_gain; g++) {
            bool told = false;
            for (size_t t = 0; t < net.n_told; t++) {
                const struct done_told *x = &net.told[t];
                told |= x->to == N4 && strcmp(node_ids[x->from], mv->gain[g]) == 0 &&
                        x->start == mv->start && x->end == mv->end;
            }
            ck_assert_msg(told, "%s never told n4 it has an arc", mv->gain[g]);
            gives++;
        }
    }
    ring_diff_free(&d);
    ck_assert_uint_gt(gives, 0);
}

START_TEST(test_leave)
{
    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 1;
    net.ring = ring_of(ALL_NODES);
    net.target = ring_of(OLD_NODES);
    populate(net.ring, 0); /* each node holds what it replicates with n4 in */
    net.nodes[N4].status = MSG_MEMBER_LEAVING;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
    pump_until(n1_part_way, "n1 has some of the arcs it gains");
    net.nodes[0].frozen = true; /* n1 stops pulling */
    for (int round = 0; round < 200; round++) {
        pump_round();
        ck_assert_msg(net.nodes[N4].last != HANDOFF_LEFT, "n4 left before n1 had its arcs");
    }
    ck_assert_uint_lt(stats_of(0).arcs_done, stats_of(0).arcs_planned);
    net.nodes[0].frozen = false;
    pump_until(n4_left, "n4 left");
    assert_gainers_told();
    ck_assert_uint_gt(stats_of(N4).keys_sent, 0);
    ck_assert_uint_gt(stats_of(0).keys_received, 0);
    for (unsigned i = 0; i < N4; i++) {
        ck_assert_uint_eq(assert_holds_exactly(i, net.target, -1), KEYS);
    }
    net_teardown();
}
END_TEST

static bool n1_done(void)
{
    struct handoff_stats st = stats_of(0);

    return st.arcs_planned > 0 && st.arcs_done == st.arcs_planned;
}

/*
 * n4 plans its leave only after n1 has told it every arc is done (its
 * first tick under the target came late): the DONEs it served before
 * planning still count.
 */
START_TEST(test_leave_told_before_planned)
{
    net_setup();
    net.ring = ring_of(ALL_NODES);
    net.target = ring_of(OLD_NODES);
    populate(net.ring, 0);
    net.nodes[N4].status = MSG_MEMBER_LEAVING;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
    net.nodes[N4].frozen = true; /* serves, but does not tick: no plan yet */
    pump_until(n1_done, "n1 has the arcs it gains");
    net.nodes[N4].frozen = false;
    pump_until(n4_left, "n4 left, told before it planned");
    assert_gainers_told();
    net_teardown();
}
END_TEST

/* n4 restarts part way through its leave: the arcs n1 told done before still count. */
START_TEST(test_leave_restart)
{
    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 1;
    net.ring = ring_of(ALL_NODES);
    net.target = ring_of(OLD_NODES);
    populate(net.ring, 0);
    net.nodes[N4].status = MSG_MEMBER_LEAVING;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
    pump_until(n1_part_way, "n1 has some of the arcs it gains");
    handoff_destroy(net.nodes[N4].h);
    net.nodes[N4].h = NULL;
    engine_start(N4);
    pump_until(n4_left, "n4 left after its restart");
    net_teardown();
}
END_TEST

static unsigned tokens_gainer; /* the node the token change test waits on */

static void kind_row(void *ctx, const struct handoff_transfer *t)
{
    unsigned *not_tokens = ctx;

    *not_tokens += t->incoming && strcmp(t->kind, "tokens") != 0;
}

/* n1 takes its new count only once the node that gains from it has every arc. */
static bool n1_retokened(void)
{
    struct handoff_stats st = stats_of(tokens_gainer);

    if (net.nodes[0].last != HANDOFF_RETOKENED) {
        return false;
    }
    ck_assert_msg(st.arcs_planned > 0 && st.arcs_done == st.arcs_planned,
                  "n1 took its count before %s had its arcs", node_ids[tokens_gainer]);
    return true;
}

/*
 * n1's token count changes (TOKENS -> n1_tokens): the node that gains
 * (n4 when n1 gives arcs up, n1 when it takes more) pulls what moves,
 * the transfers are of kind tokens, and n1 is told to take its count
 * only once it holds every arc it gains and was told done for every one
 * it gives; the gainer then holds exactly what the target places on it.
 */
static void tokens_case(uint32_t n1_tokens, unsigned gainer)
{
    unsigned not_tokens = 0;

    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 1;
    net.ring = ring_of(ALL_NODES);
    net.target = ring_n1_tokens(ALL_NODES, n1_tokens);
    populate(net.ring, 0);
    net.nodes[0].tokens_changing = true;
    tokens_gainer = gainer;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
    net.nodes[gainer].frozen = true; /* the gainer pulls nothing yet */
    for (int round = 0; round < 200; round++) {
        pump_round();
        ck_assert_msg(net.nodes[0].last != HANDOFF_RETOKENED,
                      "n1 took its count with nothing moved");
    }
    handoff_each(net.nodes[gainer].h, kind_row, &not_tokens);
    ck_assert_uint_eq(not_tokens, 0);
    net.nodes[gainer].frozen = false;
    pump_until(n1_retokened, "n1 takes its new count");
    ck_assert_uint_gt(stats_of(gainer).keys_received, 0);
    ck_assert_uint_gt(assert_holds_exactly(gainer, net.target, -1), 0);
    for (unsigned i = 1; i < N4; i++) {
        ck_assert_int_eq(net.nodes[i].last, HANDOFF_NONE);
    }
    net_teardown();
}

START_TEST(test_tokens_down)
{
    tokens_case(TOKENS / 4, N4);
}
END_TEST

START_TEST(test_tokens_up)
{
    tokens_case(TOKENS * 4, 0);
}
END_TEST

/*
 * The rate holds from the start: pulls are charged their bound when asked,
 * so arcs streaming together never bring in a burst of concurrency
 * batches (the first pulls share the allowance: a rate's worth, at least
 * a batch).
 */
START_TEST(test_rate_no_burst)
{
    uint64_t ms0, got;

    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 4;
    net.cfg.rate = 2 * SMALL_BATCH; /* bytes a second */
    join_setup();
    ms0 = net.now_ms;
    pump_rounds(50); /* half a second of the fake clock */
    got = stats_of(N4).bytes_received;
    ck_assert_uint_gt(got, 0);
    /* the allowance at the start (a rate's worth) and half a second of rate, one batch over */
    ck_assert_uint_le(got,
                      2 * SMALL_BATCH + (net.now_ms - ms0) * 2 * SMALL_BATCH / 1000 + SMALL_BATCH);
    net_teardown();
}
END_TEST

START_TEST(test_unsupported_one)
{
    struct handoff_stats st;
    size_t held;

    net_setup();
    join_setup();
    net.nodes[0].unsup = UNSUP_ANSWER; /* n1 predates handoff */
    pump_until(n4_joined, "n4 joined");
    held = assert_holds_exactly(N4, net.target, -1);
    st = stats_of(N4);
    ck_assert_uint_eq(st.arcs_unsupported, 0);
    ck_assert_uint_eq(st.arcs_done, st.arcs_planned);
    ck_assert_uint_eq(st.keys_received, held);
    ck_assert_uint_eq(stats_of(0).keys_sent, 0);
    net_teardown();
}
END_TEST

START_TEST(test_unsupported_all)
{
    struct handoff_stats st;

    net_setup();
    join_setup();
    for (unsigned i = 0; i < N4; i++) {
        net.nodes[i].unsup = i == 0 ? UNSUP_RETURN : UNSUP_ANSWER;
    }
    pump_until(n4_joined, "n4 joined");
    st = stats_of(N4);
    ck_assert_uint_gt(st.arcs_planned, 0);
    ck_assert_uint_eq(st.arcs_unsupported, st.arcs_planned);
    ck_assert_uint_eq(st.arcs_done, st.arcs_planned);
    ck_assert_uint_eq(st.keys_received, 0);
    net_teardown();
}
END_TEST

/* The arc n4 gains that holds pos, by ring_diff(ring, target). */
static void n4_arc_of(uint64_t pos, uint64_t *start, uint64_t *end)
{
    struct ring_diff d;
    bool found = false;

    ck_assert_int_eq(ring_diff(net.ring, net.target, RF, &d), 0);
    for (size_t m = 0; m < d.n_moves && !found; m++) {
        const struct ring_move *mv = &d.moves[m];
        for (size_t g = 0; g < mv->n_gain && !found; g++) {
            if (strcmp(mv->gain[g], "n4") == 0 && on_arc(pos, mv->start, mv->end)) {
                *start = mv->start;
                *end = mv->end;
                found = true;
            }
        }
    }
    ring_diff_free(&d);
    ck_assert(found);
}

START_TEST(test_verify_mismatch)
{
    uint8_t da[HANDOFF_DIGEST_PARTS][STORE_DIGEST_LEN], db[HANDOFF_DIGEST_PARTS][STORE_DIGEST_LEN];
    struct handoff_stats st;
    struct store *src;
    struct raw a, b;
    uint64_t start, end, ka, kb;
    const char *key = net.mutate_key;

    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.mutate_armed = true;
    join_setup();
    pump_until(n4_joined, "n4 joined");
    ck_assert_msg(!net.mutate_armed && !net.mutate_due, "no key was changed on a source");
    src = net.nodes[net.mutate_node].store;
    st = stats_of(N4);
    ck_assert_uint_gt(st.verify_mismatch, 0);
    ck_assert_uint_eq(st.verify_superset, 0);
    a = stored(net.nodes[N4].store, key);
    b = stored(src, key);
    ck_assert_msg(raw_eq(&a, &b), "n4 does not hold the new version of %s", key);
    n4_arc_of(store_position(src, key, strlen(key)), &start, &end);
    ck_assert_int_eq(
        store_arc_digest(net.nodes[N4].store, start, end, HANDOFF_DIGEST_PARTS, da, &ka), 0);
    ck_assert_int_eq(store_arc_digest(src, start, end, HANDOFF_DIGEST_PARTS, db, &kb), 0);
    ck_assert_uint_eq(ka, kb);
    ck_assert_mem_eq(da, db, sizeof(da));
    free(a.p);
    free(b.p);
    net_teardown();
}
END_TEST

static bool n1_repaired(void)
{
    return handoff_active(net.nodes[0].h) == 0;
}

START_TEST(test_repair)
{
    const struct ring *old_ring, *new_ring;
    struct handoff_stats st;

    net_setup();
    old_ring = ring_of(ALL_NODES);
    new_ring = ring_of(OLD_NODES);
    populate(old_ring, 0);
    for (unsigned i = 0; i < N4; i++) {
        engine_start(i);
    }
    net.nodes[N4].up = false; /* dead, then removed without handoff */
    net.ring = net.target = old_ring;
    pump_rounds(3);
    handoff_ring_changed(net.nodes[0].h, old_ring, new_ring);
    ck_assert_uint_gt(handoff_active(net.nodes[0].h), 0);
    net.ring = net.target = new_ring;
    ring_unref(old_ring);
    pump_until(n1_repaired, "n1's repairs done");
    ck_assert_uint_eq(assert_holds_exactly(0, new_ring, -1), KEYS);
    st = stats_of(0);
    ck_assert_uint_gt(st.keys_received, 0);
    ck_assert_uint_gt(st.arcs_done, 0);
    ck_assert_uint_eq(st.failures, 0);
    net_teardown();
}
END_TEST

/* The keys node i does not replicate under the view's ring. */
static uint64_t not_replicated(unsigned i)
{
    uint64_t n = 0;

    for (int k = 0; k < KEYS; k++) {
        char key[32];
        key_of(k, key, sizeof(key));
        n += !replicates(net.ring, key, node_ids[i]);
    }
    return n;
}

static uint64_t cleanup_want[NODES];

static bool all_cleaned(void)
{
    for (unsigned i = 0; i < NODES; i++) {
        if (stats_of(i).cleanup_keys < cleanup_want[i]) {
            return false;
        }
    }
    return true;
}

static void assert_nothing_cleaned(const char *when)
{
    for (unsigned i = 0; i < NODES; i++) {
        struct store_stats ss;
        store_get_stats(net.nodes[i].store, &ss);
        ck_assert_msg(stats_of(i).cleanup_keys == 0 && ss.keys == KEYS, "%s deleted keys %s",
                      node_ids[i], when);
    }
}

START_TEST(test_cleanup)
{
    net_setup();
    populate(NULL, ALL_NODES); /* every node holds every key, as after a join */
    net.ring = net.target = ring_of(ALL_NODES);
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
        cleanup_want[i] = not_replicated(i);
    }
    /* n2 and n3, alone in their racks, replicate every key; n1 and n4 share rack r1 */
    ck_assert_uint_gt(cleanup_want[0], 0);
    ck_assert_uint_gt(cleanup_want[N4], 0);
    net.ring_agreed = false;
    pump_rounds(2 * HANDOFF_SETTLE_MS / TICK_MS);
    assert_nothing_cleaned("while the ring was not agreed");
    net.ring_agreed = true;
    pump_rounds(HANDOFF_SETTLE_MS / TICK_MS - 5);
    assert_nothing_cleaned("before the ring settled");
    pump_until(all_cleaned, "every node cleaned up");
    pump_rounds(50); /* its last (empty) deletes end; nothing more goes */
    for (unsigned i = 0; i < NODES; i++) {
        ck_assert_uint_eq(stats_of(i).cleanup_keys, cleanup_want[i]);
        ck_assert_uint_eq(assert_holds_exactly(i, net.ring, -1), KEYS - cleanup_want[i]);
    }
    net_teardown();
}
END_TEST

/*
 * A leave that lasts: n1 tells n4 again every HANDOFF_RETELL_MS each arc it
 * already gave, and n4 keeps each DONE it is told.  Once n4 had been told
 * HANDOFF_TOLD_MAX of them (about 15 minutes of a leave of 256 tokens, rf
 * 3, half its arcs done) it dropped every new one, so the arcs still to
 * come were never counted and the leave never ended.
 */
START_TEST(test_leave_retold_long)
{
    struct msg_handoff_done m = {.keys = 1, .bytes = 1};
    struct buf body, out;
    bool found = false;

    net_setup();
    net.cfg.batch_bytes = SMALL_BATCH;
    net.cfg.concurrency = 1;
    net.ring = ring_of(ALL_NODES);
    net.target = ring_of(OLD_NODES);
    populate(net.ring, 0);
    net.nodes[N4].status = MSG_MEMBER_LEAVING;
    for (unsigned i = 0; i < NODES; i++) {
        engine_start(i);
    }
    pump_until(n1_part_way, "n1 has some of the arcs it gains");
    net.nodes[0].frozen = true;
    for (size_t t = 0; t < net.n_told && !found; t++) {
        if (net.told[t].from == 0 && net.told[t].to == N4) {
            m.start = net.told[t].start;
            m.end = net.told[t].end;
            found = true;
        }
    }
    ck_assert(found);
    m.target = ring_digest(net.target);
    buf_init(&body, 0);
    ck_assert_int_eq(msg_handoff_done_encode(&m, &body), 0);
    /* the retells of a long leave: the same DONE, told again and again */
    for (int i = 0; i < 70000; i++) {
        buf_init(&out, 0);
        ck_assert_int_eq(handoff_serve(net.nodes[N4].h, "n1", MSG_OP_HANDOFF_DONE, buf_data(&body),
                                       body.len, 0, &out),
                         0);
        buf_free(&out);
    }
    buf_free(&body);
    net.nodes[0].frozen = false;
    pump_until(n4_left, "n4 left after a long leave");
    assert_gainers_told();
    net_teardown();
}
END_TEST

/* A key n4 does not replicate under the target (a key no arc n4 pulls holds). */
static int key_not_on_n4(void)
{
    for (int k = 0; k < KEYS; k++) {
        char key[32];
        key_of(k, key, sizeof(key));
        if (!replicates(net.target, key, "n4")) {
            return k;
        }
    }
    ck_abort_msg("n4 replicates every key");
    return -1;
}

/*
 * Every old replica answers n4's pulls with one more key, one outside the
 * arc asked for: n4 applies what it asked for and nothing else.
 */
START_TEST(test_pull_outside_arc)
{
    char key[32];
    struct raw got;

    net_setup();
    join_setup();
    net.evil = EVIL_OUTSIDE;
    net.evil_mask = OLD_NODES;
    net.evil_key = key_not_on_n4();
    pump_until(n4_joined, "n4 joined");
    ck_assert_uint_gt(net.evil_pulls, 0);
    key_of(net.evil_key, key, sizeof(key));
    got = stored(net.nodes[N4].store, key);
    ck_assert_msg(got.p == NULL, "n4 applied %s, outside every arc it pulled", key);
    (void)assert_holds_exactly(N4, net.target, -1);
    net_teardown();
}
END_TEST

/*
 * Every old replica answers n4's pulls without moving on (no items, not
 * done, the cursor given back): n4 does not join, and does not ask again
 * at once either, at every pass of its loop, but as after a failure.
 */
START_TEST(test_pull_no_progress)
{
    net_setup();
    join_setup();
    net.evil = EVIL_STALL;
    net.evil_mask = OLD_NODES;
    for (int round = 0; round < 1000; round++) { /* 10 s of the fake clock */
        pump_round();
        ck_assert_int_ne(net.nodes[N4].last, HANDOFF_JOINED);
    }
    ck_assert_uint_gt(net.evil_pulls, 0);
    /* two arcs at once, one retry a second each: about 20; at every round: 2000 */
    ck_assert_msg(net.evil_pulls < 100, "%zu pulls that moved nothing in 10 s", net.evil_pulls);
    net_teardown();
}
END_TEST

/*
 * A PULL answer fits the frame it is sent in (answer_max), also when the
 * keys are long and the records short: the keys count in its budget.
 */
START_TEST(test_pull_answer_fits)
{
    const size_t answer_max = 64 * 1024 - 64; /* frame-max's least, less an envelope */
    struct msg_handoff_pull q = {.max_bytes = MSG_HANDOFF_BYTES_MAX};
    struct msg_handoff_pull_answer a;
    struct buf body, out;
    char key[STORE_KEY_MAX + 1];
    uint64_t got = 0;

    net_setup();
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(key, sizeof(key), "%05d-", i);
        memset(key + n, 'k', 400);
        ck_assert_int_eq(
            store_write(net.nodes[0].store, key, (size_t)n + 400, "v", 1, false, NULL, NULL), 0);
    }
    net.ring = net.target = ring_of(ALL_NODES);
    engine_start(0);
    buf_init(&body, 0);
    buf_init(&out, 0);
    ck_assert_int_eq(msg_handoff_pull_encode(&q, &body), 0); /* start == end: the whole circle */
    ck_assert_int_eq(handoff_serve(net.nodes[0].h, "n4", MSG_OP_HANDOFF_PULL, buf_data(&body),
                                   body.len, answer_max, &out),
                     0);
    ck_assert_msg(out.len <= answer_max, "an answer of %zu bytes for a frame of %zu", out.len,
                  answer_max);
    ck_assert_int_eq(msg_handoff_pull_answer_decode(buf_data(&out), out.len, &a, items_buf,
                                                    MSG_HANDOFF_ITEMS_MAX),
                     0);
    ck_assert_uint_gt(a.n_items, 0);
    ck_assert(!a.done);
    got = a.n_items;
    ck_assert_uint_lt(got, 1000);
    buf_free(&body);
    buf_free(&out);
    net_teardown();
}
END_TEST

/*
 * n1, the node n4 displaces, is down when the join starts.  Were n4 to
 * pull each arc from one other old replica instead, as it once did, the
 * writes below would end on one replica of three.  Two writes to one of those arcs
 * were each acknowledged by two of its three old replicas (w 2): ka by n1
 * and n2, kb by n1 and n3.  Under the target the arc's replicas are n2, n3
 * and n4; whichever of n2 and n3 n4 pulls from, the other's write is left
 * on one replica of three (and n1's copy goes at its clean-up): a read of
 * r 2 from the two that lack it misses an acknowledged write.  Pulling
 * from the node that loses the arc keeps every write's w copies: the join
 * waits for n1, and once n1 is back both writes are on two replicas of
 * three.
 */
START_TEST(test_join_loser_down)
{
    struct ring_diff d;
    int keys[2] = {-1, -1};
    struct raw newer[2];
    const unsigned other[2] = {1, 2}; /* n2, n3 */

    net_setup();
    join_setup();
    ck_assert_int_eq(ring_diff(net.ring, net.target, RF, &d), 0);
    for (size_t m = 0; m < d.n_moves && keys[1] < 0; m++) {
        const struct ring_move *mv = &d.moves[m];
        if (mv->n_gain != 1 || strcmp(mv->gain[0], "n4") != 0 || mv->n_lose != 1 ||
            strcmp(mv->lose[0], "n1") != 0) {
            continue;
        }
        keys[0] = keys[1] = -1;
        for (int k = 0; k < KEYS && keys[1] < 0; k++) {
            char key[32];
            key_of(k, key, sizeof(key));
            if (on_arc(ring_key_position(net.target, key, strlen(key)), mv->start, mv->end)) {
                keys[keys[0] < 0 ? 0 : 1] = k;
            }
        }
    }
    ring_diff_free(&d);
    ck_assert_int_ge(keys[1], 0);
    for (int j = 0; j < 2; j++) { /* a newer version on n1 and one other old replica */
        char key[32];
        key_of(keys[j], key, sizeof(key));
        ck_assert_int_eq(
            store_write(net.nodes[0].store, key, strlen(key), "newer", 5, false, NULL, NULL), 0);
        newer[j] = stored(net.nodes[0].store, key);
        ck_assert_int_eq(store_apply_record(net.nodes[other[j]].store, key, strlen(key), newer[j].p,
                                            newer[j].len, NULL),
                         0);
    }
    net.nodes[0].up = false; /* n1 down from the start */
    pump_rounds(500);
    ck_assert_int_eq(net.nodes[N4].last, HANDOFF_NONE); /* waiting for n1 */
    net.nodes[0].up = true;
    pump_until(n4_joined, "n4 joined once n1 was back");
    for (int j = 0; j < 2; j++) {
        char key[32];
        unsigned copies = 0;
        key_of(keys[j], key, sizeof(key));
        for (unsigned i = 1; i < NODES; i++) { /* the replicas under the target */
            struct raw got = stored(net.nodes[i].store, key);
            copies += raw_eq(&got, &newer[j]);
            free(got.p);
        }
        ck_assert_msg(copies >= 2, "%s, acknowledged by two replicas, is on %u of n2, n3, n4", key,
                      copies);
        free(newer[j].p);
    }
    net_teardown();
}
END_TEST

static Suite *handoff_suite(void)
{
    Suite *s = suite_create("handoff");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"join", test_join},
        {"join_small_group", test_join_small_group},
        {"join_group_one", test_join_group_one},
        {"join_group_two", test_join_group_two},
        {"join_old_holders", test_join_old_holders},
        {"join_nothing_to_move", test_join_nothing_to_move},
        {"join_keeps_newer", test_join_keeps_newer},
        {"resume", test_resume},
        {"source_down", test_source_down},
        {"leave", test_leave},
        {"leave_told_before_planned", test_leave_told_before_planned},
        {"leave_restart", test_leave_restart},
        {"tokens_down", test_tokens_down},
        {"tokens_up", test_tokens_up},
        {"rate_no_burst", test_rate_no_burst},
        {"unsupported_one", test_unsupported_one},
        {"unsupported_all", test_unsupported_all},
        {"verify_mismatch", test_verify_mismatch},
        {"repair", test_repair},
        {"cleanup", test_cleanup},
        {"leave_retold_long", test_leave_retold_long},
        {"pull_outside_arc", test_pull_outside_arc},
        {"pull_no_progress", test_pull_no_progress},
        {"pull_answer_fits", test_pull_answer_fits},
        {"join_loser_down", test_join_loser_down},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_checked_fixture(tc, tmp_setup, tmp_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(handoff_suite());
    int failed;

    log_set_level(LOG_ERROR);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
