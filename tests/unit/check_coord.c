/*
 * check_coord.c - the coordinator (src/replication/coord.c) where the
 * nodes' rings differ: five nodes n1..n5 (one rack each), each a real LMDB
 * store, a kv and a coordinator, wired by a fake network, each node with
 * a ring of its own (the test's), so that rings behind or ahead of each
 * other meet as they do while a change of the ring spreads.
 *
 * The network: a node's `ask` hook hands the request to the named node's
 * coord_serve() at once and queues the answer; the pump delivers queued
 * answers at its next round, never inside ask, as a real connection would.
 * A round: deliver the answers queued so far, run every kv's queued writes
 * (kv_flush()) and dispatch every store's completions.  Every wait is
 * bounded by PUMP_ROUNDS and fails naming what it waited for.
 *
 * The rings: RA, that of n1..n4; RB, that of all five; and for each node,
 * RB without it (the ring once that node left).  A ring behind another
 * is one that still has a node that left, or lacks one that joined.  rf
 * 3, r = w = 2.  A case's key has the shape it needs under those rings
 * (fixed, or the first found).
 *
 * Cases: a client's request at a node whose ring is behind is forwarded
 * twice and succeeds (it failed with TRYAGAIN when a forwarded request
 * was never forwarded again); two nodes that each take the other for the
 * key's replica stop after two forwards, with TRYAGAIN; a FORWARD without
 * a hop count (an older node's) is never forwarded again; a read at a
 * coordinator whose ring is behind returns the acknowledged value, not
 * "not found" (the node it asks that no longer holds the arc answers
 * NOTMINE, and the next node of the ring walk is asked in its place, so
 * that even r 3 is met); a write there with w 3 is acknowledged by that
 * next node instead; a write whose walk runs out of nodes is not stored
 * on the node that is no replica, and its hint reaches the key's replicas
 * once the rings agree; a node gaining the arc in its target ring takes
 * writes, and a hinted write is kept by any node.
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "coord.h"
#include "error.h"
#include "kv.h"
#include "msg.h"
#include "msg_kv.h"
#include "record.h"
#include "ring.h"
#include "store.h"

#define TEST_STORE_DIR_NAME "check_coord"
#include "test_store_dir.h"

#define NODES 5
#define TOKENS 8
#define RF 3
#define PUMP_ROUNDS 5000
/* Keys tried to find one of the shape a case needs. */
#define KEY_TRIES 20000
#define ALL4 0x0fu /* n1..n4: RA */
#define ALL5 0x1fu /* n1..n5: RB */

struct node {
    char id[8];
    struct store *store;
    struct kv *kv;
    struct coord *co;
    const struct ring *ring, *target; /* borrowed from the test's rings */
    bool up;
    unsigned forwards_in; /* FORWARDs it was asked */
};

struct answer {
    struct answer *next;
    coord_answer_fn done;
    void *dctx;
    int result;
    size_t len;
    uint8_t body[];
};

static const char *const node_ids[NODES] = {"n1", "n2", "n3", "n4", "n5"};
static struct node nodes[NODES];
static struct answer *a_head, **a_tail = &a_head;
static const struct ring *ra, *rb;
static const struct ring *without[NODES]; /* the ring of all five but one */

/* --- rings and keys ------------------------------------------------------------------ */

static const struct ring *ring_of(unsigned mask)
{
    static const char *const racks[NODES] = {"r1", "r2", "r3", "r4", "r5"};
    struct ring_member m[NODES];
    struct ring *r;
    size_t n = 0;

    for (unsigned i = 0; i < NODES; i++) {
        if (mask >> i & 1) {
            m[n++] = (struct ring_member){node_ids[i], racks[i], TOKENS};
        }
    }
    ck_assert_int_eq(ring_create(&r, ring_default_seed, m, n), 0);
    return r;
}

/* The node indices of key's preference list under r, in order; returns how many. */
static size_t pl_of(const struct ring *r, const char *key, unsigned out[RF])
{
    uint32_t pl[RING_RF_MAX];
    size_t n;

    ck_assert_int_eq(ring_preflist(r, ring_key_position(r, key, strlen(key)), RF, pl, &n), 0);
    for (size_t j = 0; j < n; j++) {
        out[j] = (unsigned)(ring_member_id(r, pl[j])[1] - '1');
    }
    return n;
}

static bool in_pl(const struct ring *r, const char *key, unsigned node)
{
    unsigned pl[RF];
    size_t n = pl_of(r, key, pl);

    for (size_t j = 0; j < n; j++) {
        if (pl[j] == node) {
            return true;
        }
    }
    return false;
}

/* --- the fake network -------------------------------------------------------------- */

static struct node *node_find(const char *id)
{
    for (unsigned i = 0; i < NODES; i++) {
        if (strcmp(nodes[i].id, id) == 0) {
            return &nodes[i];
        }
    }
    return NULL;
}

static void answer_queue(coord_answer_fn done, void *dctx, int result, const struct buf *body)
{
    size_t len = body != NULL ? body->len : 0;
    struct answer *a = malloc(sizeof(*a) + (len ? len : 1));

    ck_assert_ptr_nonnull(a);
    a->next = NULL;
    a->done = done;
    a->dctx = dctx;
    a->result = result;
    a->len = len;
    if (len > 0) {
        memcpy(a->body, buf_data(body), len);
    }
    *a_tail = a;
    a_tail = &a->next;
}

static size_t answers_deliver(void)
{
    struct answer *a = a_head;
    size_t n = 0;

    a_head = NULL;
    a_tail = &a_head;
    while (a != NULL) {
        struct answer *next = a->next;
        a->done(a->dctx, a->result, a->body, a->len);
        free(a);
        n++;
        a = next;
    }
    return n;
}

/* A request being served: where its answer goes. */
struct served {
    coord_answer_fn done;
    void *dctx;
};

static void served_done(void *ctx, const struct msg_kv_answer *a)
{
    struct served *sv = ctx;
    struct buf out;

    buf_init(&out, 0);
    ck_assert_int_eq(msg_kv_answer_encode(a, &out), 0);
    answer_queue(sv->done, sv->dctx, 0, &out);
    buf_free(&out);
    free(sv);
}

static int fake_ask(void *ctx, const char *id, uint32_t op, const uint8_t *body, size_t len,
                    coord_answer_fn done, void *dctx)
{
    struct node *to = node_find(id);
    struct served *sv;
    int rc;

    (void)ctx;
    ck_assert_msg(to != NULL, "asked unknown member %s", id);
    if (!to->up) {
        return RK_ECLOSED;
    }
    to->forwards_in += op == MSG_OP_FORWARD;
    sv = malloc(sizeof(*sv));
    ck_assert_ptr_nonnull(sv);
    *sv = (struct served){done, dctx};
    rc = coord_serve(to->co, op, body, len, 0, served_done, sv);
    if (rc != 0) {
        free(sv);
        answer_queue(done, dctx, rc, NULL);
    }
    return 0;
}

static const struct ring *fake_ring(void *ctx)
{
    return ((struct node *)ctx)->ring;
}

static const struct ring *fake_target(void *ctx)
{
    return ((struct node *)ctx)->target;
}

static bool fake_up(void *ctx, const char *id)
{
    const struct node *n = node_find(id);

    (void)ctx;
    return n != NULL && n->up;
}

/* --- the pump ------------------------------------------------------------------------ */

static void pump_round(void)
{
    struct pollfd fds[NODES];

    for (unsigned i = 0; i < NODES; i++) {
        kv_flush(nodes[i].kv);
    }
    if (answers_deliver() == 0) {
        for (unsigned i = 0; i < NODES; i++) {
            fds[i] = (struct pollfd){.fd = store_event_fd(nodes[i].store), .events = POLLIN};
        }
        (void)poll(fds, NODES, 1);
    }
    for (unsigned i = 0; i < NODES; i++) {
        store_dispatch(nodes[i].store);
    }
}

static void pump_until(const bool *flag, const char *what)
{
    for (int round = 0; round < PUMP_ROUNDS; round++) {
        if (*flag) {
            return;
        }
        pump_round();
    }
    ck_abort_msg("%s: not done after %d rounds", what, PUMP_ROUNDS);
}

/* --- setup and teardown ------------------------------------------------------------- */

static void net_setup(void)
{
    tmp_setup();
    ra = ring_of(ALL4);
    rb = ring_of(ALL5);
    for (unsigned i = 0; i < NODES; i++) {
        without[i] = ring_of(ALL5 & ~(1u << i));
    }
    for (unsigned i = 0; i < NODES; i++) {
        struct node *n = &nodes[i];
        struct store_config c;
        struct coord_config cfg = {
            .rf = RF, .r = 2, .w = 2, .mode = RECORD_SIBLINGS, .max_siblings = 64};
        struct coord_hooks hooks = {
            .ctx = n, .ask = fake_ask, .ring = fake_ring, .target = fake_target, .up = fake_up};
        char path[512], err[512];

        memset(n, 0, sizeof(*n));
        snprintf(n->id, sizeof(n->id), "%s", node_ids[i]);
        store_config_in(&c, path, sizeof(path), node_ids[i]);
        c.node_id = node_ids[i];
        ck_assert_msg(store_open(&n->store, &c, err, sizeof(err)) == 0, "open %s: %s", n->id, err);
        ck_assert_int_eq(kv_create(&n->kv, n->store, 0), 0);
        snprintf(cfg.self, sizeof(cfg.self), "%s", node_ids[i]);
        cfg.key_max = 1024;
        cfg.value_max = 65536;
        ck_assert_int_eq(coord_create(&n->co, n->kv, n->store, &cfg, &hooks), 0);
        kv_set_coord(n->kv, n->co);
        n->ring = rb;
        n->up = true;
    }
}

static void net_teardown(void)
{
    for (int round = 0; round < 100 && a_head != NULL; round++) {
        pump_round();
    }
    ck_assert_ptr_null(a_head);
    for (unsigned i = 0; i < NODES; i++) {
        kv_flush(nodes[i].kv);
        store_close(nodes[i].store);
        coord_destroy(nodes[i].co);
        kv_destroy(nodes[i].kv);
    }
    ring_unref(ra);
    ring_unref(rb);
    for (unsigned i = 0; i < NODES; i++) {
        ring_unref(without[i]);
    }
    tmp_teardown();
}

/* --- clients ------------------------------------------------------------------------- */

static void write_done(struct kv_write *w, void *ctx)
{
    (void)w;
    *(bool *)ctx = true;
}

/* A client's SET key value through node i, acknowledged by w replicas (0: the cluster's). */
static int client_set_w(unsigned i, const char *key, const char *value, unsigned w_quorum)
{
    struct kv_write w;
    bool done = false;

    memset(&w, 0, sizeof(w));
    kv_write_init(&w, key, strlen(key), value, strlen(value), false, NULL, write_done, &done);
    w.quorum = w_quorum;
    ck_assert_int_eq(kv_write_start(nodes[i].kv, &w), 0);
    pump_until(&done, "the client's write");
    return w.result;
}

static int client_set(unsigned i, const char *key, const char *value)
{
    return client_set_w(i, key, value, 0);
}

struct got {
    bool done;
    int result;
    char value[64];
};

static void read_done(struct kv_read *r, void *ctx)
{
    struct got *g = ctx;
    struct record rec;

    g->done = true;
    g->result = r->result;
    g->value[0] = '\0';
    if (r->result != 0) {
        return;
    }
    record_init(&rec);
    ck_assert_int_eq(record_decode(r->record, r->record_len, &rec), 0);
    ck_assert_uint_eq(rec.n, 1);
    ck_assert_uint_lt(rec.s[0].value_len, sizeof(g->value));
    memcpy(g->value, rec.s[0].value, rec.s[0].value_len);
    g->value[rec.s[0].value_len] = '\0';
    record_deinit(&rec);
}

/* A client's GET key through node i, answered by r replicas (0: the cluster's). */
static struct got client_get_r(unsigned i, const char *key, unsigned r_quorum)
{
    struct kv_read r;
    struct got g = {0};

    memset(&r, 0, sizeof(r));
    ck_assert_int_eq(kv_get_quorum(nodes[i].kv, &r, key, strlen(key), r_quorum, read_done, &g), 0);
    pump_until(&g.done, "the client's read");
    return g;
}

static struct got client_get(unsigned i, const char *key)
{
    return client_get_r(i, key, 0);
}

static int count_cb(void *ctx, const uint8_t *rec, size_t len)
{
    (void)rec;
    (void)len;
    ++*(int *)ctx;
    return 0;
}

/* Whether node i's store holds key. */
static bool holds(unsigned i, const char *key)
{
    int found = 0;
    int rc = store_read(nodes[i].store, key, strlen(key), count_cb, &found);

    ck_assert(rc == 0 || rc == RK_ENOTFOUND);
    return rc == 0 && found == 1;
}

static struct coord_stats stats_of(unsigned i)
{
    struct coord_stats st;

    coord_get_stats(nodes[i].co, &st);
    return st;
}

/* Serve op with body at node i directly (a peer's request): its answer, once it came. */
struct direct {
    bool done;
    uint32_t status;
};

static void direct_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct direct *d = dctx;
    struct msg_kv_answer a;

    ck_assert_int_eq(result, 0);
    ck_assert_int_eq(msg_kv_answer_decode(body, len, &a), 0);
    d->status = a.status;
    d->done = true;
}

static uint32_t serve_at(unsigned i, uint32_t op, const struct buf *body)
{
    struct direct d = {0};

    ck_assert_int_eq(fake_ask(NULL, node_ids[i], op, buf_data(body), body->len, direct_answer, &d),
                     0);
    pump_until(&d.done, "the served request");
    return d.status;
}

static uint64_t hints_at(unsigned i);

/* --- cases ------------------------------------------------------------------------- */

/*
 * A key and two nodes: b the first replica of it in the ring of all five,
 * c neither a replica there nor once b has left the ring.
 */
static void find_left_primary(char *key, size_t cap, unsigned *c, unsigned *b)
{
    for (int k = 0; k < KEY_TRIES; k++) {
        unsigned pl[RF];
        snprintf(key, cap, "fwd-%d", k);
        pl_of(rb, key, pl);
        for (unsigned i = 0; i < NODES; i++) {
            if (!in_pl(rb, key, i) && !in_pl(without[pl[0]], key, i)) {
                *c = i;
                *b = pl[0];
                return;
            }
        }
    }
    ck_abort_msg("no key of the shape wanted");
}

/*
 * b has left the ring: its ring and everyone's but c's leave it out; c's
 * is behind (all five).  A client at c: c forwards to b, b (no replica by
 * its ring) forwards once more to the key's replica under its ring, which
 * coordinates; no TRYAGAIN, as there was when b refused the forward.
 */
START_TEST(test_forward_twice)
{
    char key[32];
    unsigned c, b;
    struct got g;

    net_setup();
    find_left_primary(key, sizeof(key), &c, &b);
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].ring = i == c ? rb : without[b];
    }
    ck_assert_int_eq(client_set(c, key, "v1"), 0);
    g = client_get(c, key);
    ck_assert_int_eq(g.result, 0);
    ck_assert_str_eq(g.value, "v1");
    ck_assert_uint_eq(stats_of(c).forwarded, 2);
    ck_assert_uint_eq(nodes[b].forwards_in, 2);
    ck_assert_uint_eq(stats_of(b).forwarded, 2); /* each sent on once */
    for (unsigned i = 0; i < NODES; i++) {
        ck_assert_uint_eq(stats_of(i).tryagain, 0);
        ck_assert_uint_eq(holds(i, key), in_pl(without[b], key, i));
    }
    net_teardown();
}
END_TEST

/*
 * c and b, the key's first two replicas in the ring of all five, each
 * with a ring that leaves itself out: each takes the other for the key's
 * first replica.  The request stops after its two forwards: TRYAGAIN,
 * each node asked once.
 */
START_TEST(test_hop_bound)
{
    char key[] = "loop";
    unsigned pl[RF], c, b;

    net_setup();
    pl_of(rb, key, pl);
    c = pl[0];
    b = pl[1];
    nodes[c].ring = without[c];
    nodes[b].ring = without[b];
    ck_assert_int_eq(client_set(c, key, "v1"), RK_ETRYAGAIN);
    ck_assert_uint_eq(nodes[b].forwards_in, 1);
    ck_assert_uint_eq(nodes[c].forwards_in, 1);
    ck_assert_uint_eq(stats_of(c).forwarded, 1);
    ck_assert_uint_eq(stats_of(b).forwarded, 1);
    for (unsigned i = 0; i < NODES; i++) {
        ck_assert(!holds(i, key));
    }
    net_teardown();
}
END_TEST

/*
 * A FORWARD at a node that is no replica of its key: without a hop count
 * (a node that predates it) or after COORD_FORWARD_HOPS forwards it is
 * refused with TRYAGAIN, as a forwarded request always was; with one hop
 * it is forwarded on and succeeds.
 */
START_TEST(test_forward_hops_served)
{
    char key[32];
    unsigned c, b;
    struct buf body;
    struct msg_forward f = {
        .kind = MSG_FORWARD_WRITE, .value = (const uint8_t *)"v", .value_len = 1};

    net_setup();
    find_left_primary(key, sizeof(key), &c, &b);
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].ring = without[b];
    }
    f.key = (const uint8_t *)key;
    f.key_len = strlen(key);
    buf_init(&body, 0);
    ck_assert_int_eq(msg_forward_encode(&f, &body), 0);
    ck_assert_uint_eq(serve_at(b, MSG_OP_FORWARD, &body), MSG_KV_TRYAGAIN);
    f.hops = COORD_FORWARD_HOPS;
    buf_clear(&body);
    ck_assert_int_eq(msg_forward_encode(&f, &body), 0);
    ck_assert_uint_eq(serve_at(b, MSG_OP_FORWARD, &body), MSG_KV_TRYAGAIN);
    ck_assert_uint_eq(stats_of(b).forwarded, 0);
    f.hops = 1;
    buf_clear(&body);
    ck_assert_int_eq(msg_forward_encode(&f, &body), 0);
    ck_assert_uint_eq(serve_at(b, MSG_OP_FORWARD, &body), MSG_KV_OK);
    ck_assert_uint_eq(stats_of(b).forwarded, 1);
    buf_free(&body);
    net_teardown();
}
END_TEST

/*
 * After net_setup(): key's replicas under rb in order (s, x, y) and its
 * preference list in the ring x has left (now).
 */
static void stale_setup(const char *key, unsigned *s, unsigned *x, unsigned *y, unsigned now[RF])
{
    unsigned pl[RF];

    net_setup();
    pl_of(rb, key, pl);
    *s = pl[0];
    *x = pl[1];
    *y = pl[2];
    pl_of(without[*x], key, now);
}

/*
 * x has left the ring (every ring but s's leaves it out); s, behind,
 * still has it.  s, the key's first replica, asks x first (its second),
 * then y (its third).  The key is written after x left, through a node of
 * the new ring, while s is down: acknowledged by the replicas of the new
 * ring, on neither s nor x.  A read at s: x answers NOTMINE, not "not
 * found", s asks y, and the read returns the value.
 */
START_TEST(test_stale_read)
{
    char key[] = "stale-read";
    unsigned now[RF], s, x, y, writer;
    struct got g;

    stale_setup(key, &s, &x, &y, now);
    writer = now[0] != s ? now[0] : now[1];
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].ring = without[x];
    }
    nodes[s].up = false; /* s misses the write */
    ck_assert_int_eq(client_set(writer, key, "acked"), 0);
    nodes[s].up = true;
    ck_assert(!holds(s, key));
    ck_assert(!holds(x, key));
    ck_assert(holds(y, key));
    nodes[s].ring = rb;
    g = client_get(s, key);
    ck_assert_int_eq(g.result, 0);
    ck_assert_str_eq(g.value, "acked");
    ck_assert_uint_eq(stats_of(x).not_mine, 1);
    ck_assert(!holds(x, key)); /* nothing written there either */
    /*
     * r 3: x's place goes to the next node of s's ring walk, the node that
     * took x's place in the new ring, which holds the value: 3 answers
     */
    g = client_get_r(s, key, 3);
    ck_assert_int_eq(g.result, 0);
    ck_assert_str_eq(g.value, "acked");
    ck_assert_uint_eq(stats_of(x).not_mine, 2);
    net_teardown();
}
END_TEST

/*
 * The same shapes for a write at s with w 3: x answers NOTMINE and takes
 * nothing; the next node of s's ring walk (the one that took x's place)
 * takes the version as a replica and acknowledges it, so the three
 * acknowledgements are there (s, y and that node), and no hint is kept.
 */
START_TEST(test_stale_write_walk)
{
    char key[] = "stale-write";
    unsigned now[RF], s, x, y, z = NODES;

    stale_setup(key, &s, &x, &y, now);
    for (unsigned j = 0; j < RF; j++) {
        z = now[j] != s && now[j] != y ? now[j] : z;
    }
    for (unsigned i = 0; i < NODES; i++) {
        nodes[i].ring = i == s ? rb : without[x];
    }
    ck_assert_int_eq(client_set_w(s, key, "w3", 3), 0);
    for (int round = 0; round < 100 && a_head != NULL; round++) {
        pump_round();
    }
    ck_assert(holds(s, key));
    ck_assert(holds(y, key));
    ck_assert(holds(z, key));
    ck_assert(!holds(x, key));
    ck_assert_uint_eq(stats_of(x).not_mine, 1);
    ck_assert_uint_eq(stats_of(z).replica_writes, 1);
    ck_assert_uint_eq(hints_at(s), 0);
    net_teardown();
}
END_TEST

/*
 * A key whose third replica in the ring of n1..n4 (x) is displaced by n5
 * in the ring of all five; s and y are its first two there.
 */
static void find_displaced(char *key, size_t cap, unsigned *s, unsigned *x, unsigned *y)
{
    for (int k = 0; k < KEY_TRIES; k++) {
        unsigned pl[RF];
        snprintf(key, cap, "disp-%d", k);
        pl_of(ra, key, pl);
        if (!in_pl(rb, key, pl[2])) {
            *s = pl[0];
            *y = pl[1];
            *x = pl[2];
            return;
        }
    }
    ck_abort_msg("no key of the shape wanted");
}

/* Hints s keeps, for every target. */
static int hint_count_cb(void *ctx, const char *target, uint64_t count)
{
    (void)target;
    *(uint64_t *)ctx += count;
    return 0;
}

static uint64_t hints_at(unsigned i)
{
    uint64_t n = 0;

    ck_assert_int_eq(store_hint_targets(nodes[i].store, hint_count_cb, &n), 0);
    return n;
}

/*
 * A write at s (RA): x takes nothing (NOTMINE, no acknowledgement), nor
 * does the next node of s's walk, the fourth of n1..n4 (no replica under
 * RB either), and RA has no other; s and y make the quorum, and s keeps a
 * hint for the last node asked.  Once s's ring is RB too, the hint goes
 * to the key's replicas under RB, not to that node, and is deleted.
 */
START_TEST(test_stale_write)
{
    char key[32];
    unsigned s, x, y;

    net_setup();
    find_displaced(key, sizeof(key), &s, &x, &y);
    nodes[s].ring = ra;
    ck_assert_int_eq(client_set(s, key, "w1"), 0);
    for (int round = 0; round < PUMP_ROUNDS && (a_head != NULL || hints_at(s) == 0); round++) {
        pump_round(); /* x's answer, and the hint it makes s keep, may come after the quorum */
    }
    ck_assert(holds(s, key));
    ck_assert(holds(y, key));
    ck_assert(!holds(x, key));
    ck_assert_uint_eq(stats_of(x).not_mine, 1);
    ck_assert_uint_eq(stats_of(x).replica_writes, 0);
    for (unsigned i = 0; i < 4; i++) {
        if (i != s && i != x && i != y) {
            ck_assert_uint_eq(stats_of(i).not_mine, 1); /* the walk's next node */
            ck_assert(!holds(i, key));
        }
    }
    ck_assert_uint_eq(hints_at(s), 1);
    nodes[s].ring = rb;
    for (int round = 0; round < PUMP_ROUNDS && hints_at(s) > 0; round++) {
        if (coord_hints_in_flight(nodes[s].co) == 0) {
            coord_deliver_hints(nodes[s].co);
        }
        pump_round();
    }
    ck_assert_uint_eq(hints_at(s), 0);
    for (unsigned i = 0; i < NODES; i++) {
        if (i != s) {
            ck_assert_uint_eq(holds(i, key), in_pl(rb, key, i));
        }
    }
    net_teardown();
}
END_TEST

/*
 * x gains the key's arc in its target ring (RA) while its ring in force
 * (RB) leaves it out: a pending replica, which takes the write.  A hinted
 * write is kept by a node whatever the rings say.
 */
START_TEST(test_pending_and_hints_taken)
{
    char key[32];
    unsigned s, x, y;
    uint8_t rec[256];
    struct record one;
    struct sibling v;
    struct buf body;
    struct msg_replica_write m;

    net_setup();
    find_displaced(key, sizeof(key), &s, &x, &y);
    nodes[s].ring = ra;
    nodes[x].target = ra;
    ck_assert_int_eq(client_set(s, key, "w1"), 0);
    ck_assert(holds(x, key));
    ck_assert_uint_eq(stats_of(x).not_mine, 0);
    ck_assert_uint_eq(hints_at(s), 0);
    /* a hinted write for another node, at a node that holds no part of the key */
    nodes[x].target = NULL;
    sibling_init(&v);
    v.hlc = 1;
    snprintf(v.node, sizeof(v.node), "n1");
    v.value = (uint8_t *)"h";
    v.value_len = 1;
    one = (struct record){.s = &v, .n = 1, .cap = 1};
    ck_assert_uint_le(record_encoded_size(&one), sizeof(rec));
    m = (struct msg_replica_write){.key = (const uint8_t *)"hinted-key",
                                   .key_len = 10,
                                   .record = rec,
                                   .record_len = record_encode(&one, rec)};
    snprintf(m.hint, sizeof(m.hint), "%s", node_ids[y]);
    buf_init(&body, 0);
    ck_assert_int_eq(msg_replica_write_encode(&m, &body), 0);
    ck_assert_uint_eq(serve_at(x, MSG_OP_REPLICA_WRITE, &body), MSG_KV_OK);
    ck_assert_uint_eq(hints_at(x), 1);
    buf_free(&body);
    net_teardown();
}
END_TEST

static Suite *coord_suite(void)
{
    Suite *s = suite_create("coord");
    const struct {
        const char *name;
        const TTest *fn;
    } cases[] = {
        {"forward_twice", test_forward_twice},
        {"hop_bound", test_hop_bound},
        {"forward_hops_served", test_forward_hops_served},
        {"stale_read", test_stale_read},
        {"stale_write", test_stale_write},
        {"stale_write_walk", test_stale_write_walk},
        {"pending_and_hints_taken", test_pending_and_hints_taken},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, cases[i].fn);
        suite_add_tcase(s, tc);
    }
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(coord_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
