/*
 * coord.c - the coordinator (coord.h).
 *
 * A request is a struct coord_req on the heap: it holds the key's
 * preference list (ids copied, so no ring is kept), one slot per node
 * with what that node answered, and the counts that decide it.  It ends
 * for the client when the quorum is met or can no longer be (complete()),
 * and is freed when no peer request of it is outstanding any more
 * (release()): answers that come after the client's reply are still
 * counted, never acted on twice.
 */
#include "coord.h"

#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "msg.h"
#include "preflist.h"

#define COORD_NODES (2 * RING_RF_MAX)
/*
 * Nodes a request holds in itself: an rf-3 list with as many fallbacks.
 * A longer list (rf up to RING_RF_MAX) gets arrays of its own, so that a
 * request stays small (about 2 KiB, not 6) for the allocator and the cache.
 */
#define COORD_NODES_HERE 6

enum coord_kind { COORD_READ, COORD_WRITE };

enum coord_state {
    NODE_IDLE,     /* not asked (yet) */
    NODE_ASKED,    /* a request to it is outstanding */
    NODE_ANSWERED, /* it answered: rec holds its record (a read) */
    NODE_FAILED,   /* refused, timed out, or could not be asked */
};

struct coord_req;

/* The context of one peer request: which request, which node. */
struct coord_call {
    struct coord_req *req;
    int idx;
};

/* A reader's progress through a record sent in parts. */
struct coord_part {
    uint64_t digest; /* of the record the parts so far came from; 0 before the first */
    uint32_t next;   /* the next sibling to ask for; 0: none */
    unsigned restarts;
};

struct coord_node {
    char id[RING_NAME_MAX + 1];
    enum preflist_role role;
    bool up;
    int stands_for; /* a fallback: the index of the replica it stands for */
    bool pending;   /* a write's node that gains the key's arc in the target ring (coord.h) */
    enum coord_state state;
    struct record rec; /* a read: what it answered */
    bool stale;        /* a read: it lacks part of the merged record */
    bool same_raw; /* a read: it answered the very bytes of this node's own copy (rec left empty) */
    struct coord_part part; /* a read: its record's parts so far */
};

/* Keys up to this long are copied into the request itself (the benchmarks' are 16 bytes). */
#define COORD_KEY_HERE 64
/* A read's own copy, as stored, is kept in the request itself up to this many bytes. */
#define COORD_RAW_HERE 512

struct coord_req {
    struct coord *co;
    struct coord_req *prev, *next; /* every request alive, for coord_destroy() */
    enum coord_kind kind;
    struct kv_read *r; /* the caller's read or write; NULL once completed */
    struct kv_write *w;
    uint8_t *key; /* a copy: answers that come after the caller's reply still use it */
    uint8_t key_here[COORD_KEY_HERE]; /* where key is when it fits: no allocation */
    size_t key_len;
    size_t n;     /* nodes[0 .. n): replicas, then fallbacks */
    size_t n_rep; /* replicas among them */
    int self;     /* this node's index, or -1 */
    unsigned needed;
    unsigned acks;        /* write: replicas holding it; read: replicas that answered */
    unsigned outstanding; /* peer requests and local operations not ended */
    bool completed;
    struct kv_write lw;      /* the local write that makes the version (lw.op.written) */
    struct record merged;    /* a read: the merge of what the replicas answered */
    struct store_op *repair; /* a read: the local repair's operations */
    size_t n_repair;
    unsigned repairs_left; /* a read: repairs not ended, +1 while they are being sent */
    uint8_t *enc;          /* a read: merged, encoded, for the reply */
    size_t enc_len;
    struct coord_part fpart; /* a forwarded read: the answer's parts so far (into merged) */
    unsigned hops;           /* forwards the request travelled to reach this node (coord.h) */
    unsigned n_refused;      /* refused[0 .. n_refused): nodes that answered NOTMINE */
    uint8_t *raw;            /* a read: this node's copy as stored (raw_here or allocated) */
    size_t raw_len;
    struct coord_node *nodes; /* n of them (req_plan()): nodes_here, or allocated */
    struct coord_call *calls; /* one per node, the context of its peer request */
    /*
     * Last, and set only up to n by req_plan(): everything before them is
     * zeroed per request, these only as far as the preference list goes.
     */
    struct coord_node nodes_here[COORD_NODES_HERE];
    struct coord_call calls_here[COORD_NODES_HERE];
    uint8_t raw_here[COORD_RAW_HERE]; /* raw's bytes when they fit: no allocation */
    char refused[COORD_REPLACE_MAX][RING_NAME_MAX + 1]; /* valid up to n_refused */
};

/*
 * Finished requests and served requests kept for reuse, per coordinator: a
 * request is 5.5 KiB, past the allocator's per-thread caches, and one of each
 * per write made the allocator a fifth of the replicated write's CPU time.
 */
#define COORD_SPARE_MAX 512
/*
 * A spare served request keeps its body's buffer and its record's sibling
 * array when they are at most this large (4 KiB and 4 siblings a spare:
 * about 2.5 MiB for all of them), so a replica write decodes into memory it
 * already has.
 */
#define COORD_SPARE_BODY_MAX 4096
#define COORD_SPARE_SIBLINGS 4
/*
 * Clock entries a served request decodes into without allocating: a
 * replica write's versions with this many entries in all (an rf-3
 * cluster's clocks hold three) are read where they arrived.
 */
#define COORD_SERVE_ROOM 8

struct coord {
    struct kv *kv;
    struct store *store;
    struct coord_config cfg;
    struct coord_hooks hooks;
    struct coord_stats stats;
    struct coord_req *reqs;
    struct coord_cond *conds;    /* conditional writes alive, for coord_destroy() */
    uint64_t deliveries;         /* hints on their way */
    struct coord_req *req_spare; /* finished requests for reuse, linked by next */
    struct coord_serve *sv_spare;
    unsigned n_req_spare, n_sv_spare;
};

int coord_create(struct coord **out, struct kv *kv, struct store *store,
                 const struct coord_config *cfg, const struct coord_hooks *hooks)
{
    struct coord *co = calloc(1, sizeof(*co));

    *out = co;
    if (co == NULL) {
        return RK_ENOMEM;
    }
    co->kv = kv;
    co->store = store;
    co->cfg = *cfg;
    co->hooks = *hooks;
    return 0;
}

static void req_free(struct coord_req *q);
static void cond_free(struct coord_cond *cc);
static void coord_spares_free(struct coord *co);

void coord_destroy(struct coord *co)
{
    if (co == NULL) {
        return;
    }
    while (co->reqs != NULL) {
        req_free(co->reqs);
    }
    while (co->conds != NULL) {
        cond_free(co->conds); /* their requests are gone: nothing refers to them any more */
    }
    coord_spares_free(co);
    free(co);
}

void coord_get_stats(const struct coord *co, struct coord_stats *st)
{
    *st = co->stats;
}

/* --- the preference list -------------------------------------------------------- */

/* The target ring when a change is under way (it differs from ring, in force), else NULL. */
static const struct ring *coord_change_target(const struct coord *co, const struct ring *ring)
{
    const struct ring *target = co->hooks.target != NULL ? co->hooks.target(co->hooks.ctx) : NULL;

    return target != NULL && ring != NULL && ring_digest(target) != ring_digest(ring) ? target
                                                                                      : NULL;
}

struct coord_up_ctx {
    struct coord *co;
    const struct ring *ring;
};

static bool coord_member_up(void *ctx, uint32_t member)
{
    struct coord_up_ctx *u = ctx;
    const char *id = ring_member_id(u->ring, member);

    return strcmp(id, u->co->cfg.self) == 0 || u->co->hooks.up(u->co->hooks.ctx, id);
}

/*
 * Fill q's nodes from the key's preference list in the ring in force.
 * RK_EEMPTY when there is no ring yet (the caller stays local).
 */
static int req_plan(struct coord_req *q)
{
    struct coord *co = q->co;
    const struct ring *ring = co->hooks.ring(co->hooks.ctx);
    const struct ring *target = coord_change_target(co, ring);
    struct coord_up_ctx u = {co, ring};
    struct preflist pf;
    uint32_t tl[RING_RF_MAX];
    const char *pend[RING_RF_MAX];
    size_t nt = 0, n_pend = 0, n;
    uint64_t pos;
    int rc;

    if (ring == NULL) {
        return RK_EEMPTY;
    }
    pos = ring_key_position(ring, q->key, q->key_len);
    rc = preflist_build(ring, pos, co->cfg.rf, co->cfg.sloppy, coord_member_up, &u, false, &pf);
    if (rc != 0) {
        return rc;
    }
    /* a write during a change also goes to the nodes that gain its arc (coord.h) */
    if (q->kind == COORD_WRITE && target != NULL && ring_member_count(target) > 0 &&
        ring_preflist(target, pos, co->cfg.rf, tl, &nt) == 0) {
        for (size_t j = 0; j < nt; j++) {
            const char *id = ring_member_id(target, tl[j]);
            bool known = false;
            for (size_t i = 0; i < pf.n && !known; i++) {
                known = strcmp(ring_member_id(ring, pf.nodes[i].member), id) == 0;
            }
            if (!known) {
                pend[n_pend++] = id;
            }
        }
    }
    n = pf.n + n_pend;
    if (n <= COORD_NODES_HERE) {
        q->nodes = q->nodes_here;
        q->calls = q->calls_here;
    } else if ((q->nodes = malloc(n * sizeof(*q->nodes))) == NULL ||
               (q->calls = malloc(n * sizeof(*q->calls))) == NULL) {
        free(q->nodes);
        q->nodes = NULL;
        preflist_free(&pf);
        return RK_ENOMEM;
    }
    q->n = n;
    q->n_rep = pf.n_replicas;
    q->self = -1;
    for (size_t i = 0; i < n; i++) {
        struct coord_node *nd = &q->nodes[i];
        const char *id = i < pf.n ? ring_member_id(ring, pf.nodes[i].member) : pend[i - pf.n];
        size_t id_len = strnlen(id, sizeof(nd->id) - 1);
        memset(nd, 0, sizeof(*nd));
        memcpy(nd->id, id, id_len); /* a ring's names are valid ones, at most RING_NAME_MAX */
        nd->id[id_len] = '\0';
        if (i < pf.n) {
            nd->role = pf.nodes[i].role;
            nd->up = pf.nodes[i].up;
            nd->stands_for = pf.nodes[i].stands_for;
        } else {
            nd->role = PREFLIST_REPLICA;
            nd->up = strcmp(id, co->cfg.self) == 0 || co->hooks.up(co->hooks.ctx, id);
            nd->stands_for = -1;
            nd->pending = true;
        }
        nd->state = NODE_IDLE;
        record_init(&nd->rec);
        q->calls[i].req = q;
        q->calls[i].idx = (int)i;
        if (i < pf.n_replicas && strcmp(nd->id, co->cfg.self) == 0) {
            q->self = (int)i;
        }
    }
    preflist_free(&pf);
    return 0;
}

static struct coord_req *req_new(struct coord *co, enum coord_kind kind, const uint8_t *key,
                                 size_t key_len, unsigned needed)
{
    struct coord_req *q = co->req_spare;

    if (q != NULL) {
        co->req_spare = q->next;
        co->n_req_spare--;
        memset(q, 0, offsetof(struct coord_req, nodes_here)); /* the nodes: req_plan() */
    } else if ((q = calloc(1, sizeof(*q))) == NULL) {
        return NULL;
    }
    q->co = co;
    q->kind = kind;
    q->key = key_len <= sizeof(q->key_here) ? q->key_here : malloc(key_len);
    if (q->key == NULL) {
        free(q);
        return NULL;
    }
    memcpy(q->key, key, key_len);
    q->key_len = key_len;
    q->needed = needed;
    record_init(&q->merged);
    if (req_plan(q) != 0) {
        if (q->key != q->key_here) {
            free(q->key);
        }
        free(q);
        return NULL;
    }
    q->next = co->reqs;
    if (co->reqs != NULL) {
        co->reqs->prev = q;
    }
    co->reqs = q;
    return q;
}

static void req_free(struct coord_req *q)
{
    struct coord *co = q->co;

    if (q->prev != NULL) {
        q->prev->next = q->next;
    } else {
        co->reqs = q->next;
    }
    if (q->next != NULL) {
        q->next->prev = q->prev;
    }
    for (size_t i = 0; i < q->n; i++) {
        record_deinit(&q->nodes[i].rec);
    }
    if (q->nodes != q->nodes_here) {
        free(q->nodes); /* a list past COORD_NODES_HERE (NULL when never planned) */
        free(q->calls);
    }
    if (q->kind == COORD_WRITE) {
        sibling_deinit(&q->lw.op.written); /* initialised by kv_write_init() when coordinated */
    }
    record_deinit(&q->merged);
    if (q->key != q->key_here) {
        free(q->key);
    }
    free(q->repair);
    free(q->enc);
    if (q->raw != q->raw_here) {
        free(q->raw);
    }
    if (co->n_req_spare < COORD_SPARE_MAX) {
        q->next = co->req_spare;
        co->req_spare = q;
        co->n_req_spare++;
        return;
    }
    free(q);
}

/* Free q once its caller has its answer and nothing of it is outstanding. */
static void req_release(struct coord_req *q)
{
    if (q->completed && q->outstanding == 0) {
        req_free(q);
    }
}

/* The quorum a request needs: its own, or the configured one. */
static unsigned coord_quorum(const struct coord *co, unsigned asked, enum coord_kind kind)
{
    if (asked != 0) {
        return asked;
    }
    return kind == COORD_READ ? co->cfg.r : co->cfg.w;
}

/*
 * Whether a key needs nobody but this node (the fast path: no request
 * state): the ring's preference list of it is this node alone and the
 * quorum is 1.  No ring yet: a node that has not formed a ring keeps its
 * keys, as a single node always did.
 */
static bool coord_key_local(struct coord *co, const uint8_t *key, size_t len, unsigned needed)
{
    const struct ring *ring = co->hooks.ring(co->hooks.ctx);
    uint32_t members[RING_RF_MAX];
    size_t n = 0;

    if (ring == NULL) {
        return true;
    }
    if (coord_change_target(co, ring) != NULL) {
        return false; /* a change is under way: its writes have pending nodes */
    }
    if (needed > 1 ||
        ring_preflist(ring, ring_key_position(ring, key, len), co->cfg.rf, members, &n) != 0) {
        return false;
    }
    return n == 1 && strcmp(ring_member_id(ring, members[0]), co->cfg.self) == 0;
}

bool coord_all_local(struct coord *co, const struct kv_write *ws, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!coord_key_local(co, ws[i].op.key, ws[i].op.key_len,
                             coord_quorum(co, ws[i].quorum, COORD_WRITE))) {
            return false;
        }
    }
    return true;
}

/*
 * Whether member id takes part in key's arc under this node's rings: a
 * replica of it in the ring in force, or a node that gains it in the
 * target ring (a pending replica).  Without a ring in force: true (nothing
 * has an owner yet, and a node that formed no ring keeps what it is sent,
 * as a single node always did).
 */
static bool coord_key_of(struct coord *co, const char *id, const uint8_t *key, size_t len)
{
    const struct ring *rings[2] = {co->hooks.ring(co->hooks.ctx), NULL};

    if (rings[0] == NULL || ring_member_count(rings[0]) == 0) {
        return true;
    }
    rings[1] = coord_change_target(co, rings[0]); /* NULL: no change under way */
    for (size_t k = 0; k < 2; k++) {
        const struct ring *ring = rings[k];
        uint32_t members[RING_RF_MAX];
        size_t n = 0;
        if (ring == NULL || ring_member_count(ring) == 0 ||
            ring_preflist(ring, ring_key_position(ring, key, len), co->cfg.rf, members, &n) != 0) {
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(ring_member_id(ring, members[i]), id) == 0) {
                return true;
            }
        }
    }
    return false;
}

/* Replicas that can take part: this node, and the others the detector sees up. */
static unsigned req_reachable(const struct coord_req *q, bool with_fallbacks)
{
    unsigned k = 0;

    for (size_t i = 0; i < q->n; i++) {
        bool replica = i < q->n_rep;
        if (q->nodes[i].pending) {
            continue;
        }
        if ((replica || with_fallbacks) && ((int)i == q->self || q->nodes[i].up)) {
            k++;
        }
    }
    return k;
}

/* --- replacing a replica that answered NOTMINE ------------------------------------ */

/* Whether node id answered q NOTMINE. */
static bool req_refused(const struct coord_req *q, const char *id)
{
    for (unsigned i = 0; i < q->n_refused; i++) {
        if (strcmp(q->refused[i], id) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether node id is one of q's nodes, or answered it NOTMINE. */
static bool req_knows(const struct coord_req *q, const char *id)
{
    for (size_t i = 0; i < q->n; i++) {
        if (strcmp(q->nodes[i].id, id) == 0) {
            return true;
        }
    }
    return req_refused(q, id);
}

struct coord_walk_ctx {
    const struct coord_req *q;
    const struct ring *ring;
};

/* The walk's up: as coord_member_up(), but a node that answered NOTMINE is down. */
static bool coord_walk_up(void *ctx, uint32_t member)
{
    const struct coord_walk_ctx *w = ctx;
    struct coord_up_ctx u = {w->q->co, w->ring};

    return !req_refused(w->q, ring_member_id(w->ring, member)) && coord_member_up(&u, member);
}

/*
 * Replica idx of q answered NOTMINE: under its own rings it neither
 * replicates the key nor gains it, and holds no copy (this node's ring
 * differs from its).  Its place goes to the node that would stand in for
 * it were it down: the next node of the ring walk (preflist.h's fallback
 * walk, every node that answered NOTMINE counted down), which is asked
 * as the replica it replaces (a read's vote, a write's acknowledgement:
 * it answers as a replica only if its own rings make it one, or it holds
 * a copy, and NOTMINE again otherwise, when the walk goes on).  After a
 * node left the ring, or one was removed, the walk's next node is the
 * one that took its place.  True when slot idx holds that node, idle;
 * false when there is none (the walk is out of nodes, the ring changed
 * under the request, COORD_REPLACE_MAX reached): idx stays failed.
 */
static bool req_replace(struct coord_req *q, size_t idx)
{
    struct coord *co = q->co;
    const struct ring *ring = co->hooks.ring(co->hooks.ctx);
    struct coord_node *nd = &q->nodes[idx];
    struct coord_walk_ctx w = {q, ring};
    struct preflist pf;
    bool found = false;

    if (idx >= q->n_rep || nd->pending || q->n_refused == COORD_REPLACE_MAX || ring == NULL) {
        return false;
    }
    snprintf(q->refused[q->n_refused++], sizeof(q->refused[0]), "%s", nd->id);
    if (preflist_build(ring, ring_key_position(ring, q->key, q->key_len), co->cfg.rf, true,
                       coord_walk_up, &w, false, &pf) != 0) {
        return false;
    }
    /* the ring the request was planned on: slot idx's first node is the ring's replica idx */
    for (size_t i = pf.n_replicas; idx < pf.n_replicas && i < pf.n && !found; i++) {
        const char *id = ring_member_id(ring, pf.nodes[i].member);
        if (pf.nodes[i].stands_for != (int)idx ||
            !req_knows(q, ring_member_id(ring, pf.nodes[idx].member)) || req_knows(q, id)) {
            continue;
        }
        snprintf(nd->id, sizeof(nd->id), "%s", id);
        nd->up = true; /* the walk takes only nodes that are up */
        nd->state = NODE_IDLE;
        nd->stale = false;
        nd->same_raw = false;
        nd->part = (struct coord_part){0};
        record_deinit(&nd->rec);
        record_init(&nd->rec);
        found = true;
    }
    preflist_free(&pf);
    return found;
}

/* --- ending a request for its caller ---------------------------------------------- */

static void req_count_error(struct coord_req *q, int rc)
{
    if (rc == RK_ENOREPLICAS) {
        q->co->stats.noreplicas++;
    } else if (rc == RK_ETRYAGAIN) {
        q->co->stats.tryagain++;
    }
}

/* Give the caller of a write its result (once); answered defaults to the acks. */
static void write_complete(struct coord_req *q, int rc, bool existed, unsigned answered)
{
    struct kv_write *w = q->w;

    if (w == NULL) {
        return;
    }
    q->w = NULL;
    q->completed = true;
    req_count_error(q, rc);
    w->result = rc;
    w->existed = existed;
    w->answered = answered;
    w->needed = q->needed;
    w->done(w, w->ctx);
}

/* Give the caller of a read its result (once), with record borrowed for the call. */
static void read_complete(struct coord_req *q, int rc, const uint8_t *record, size_t len,
                          unsigned answered)
{
    struct kv_read *r = q->r;

    if (r == NULL) {
        return;
    }
    q->r = NULL;
    q->completed = true;
    req_count_error(q, rc);
    r->result = rc;
    r->record = rc == 0 ? record : NULL;
    r->record_len = rc == 0 ? len : 0;
    r->answered = answered;
    r->needed = q->needed;
    r->done(r, r->ctx);
}

static void req_fail(struct coord_req *q, int rc, unsigned answered)
{
    if (q->kind == COORD_WRITE) {
        write_complete(q, rc, false, answered);
    } else {
        read_complete(q, rc, NULL, 0, answered);
    }
}

/* --- asking ------------------------------------------------------------------------ */

/* Ask node idx op with body; false (the node marked failed) when it cannot be asked. */
static bool req_ask(struct coord_req *q, size_t idx, uint32_t op, const struct buf *body,
                    coord_answer_fn done)
{
    struct coord *co = q->co;
    int rc;

    q->outstanding++;
    q->nodes[idx].state = NODE_ASKED;
    rc = co->hooks.ask(co->hooks.ctx, q->nodes[idx].id, op, buf_data(body), body->len, done,
                       &q->calls[idx]);
    if (rc != 0) {
        q->outstanding--;
        q->nodes[idx].state = NODE_FAILED;
        return false;
    }
    return true;
}

/*
 * Whether a replica's refusal of a version is for good: it will refuse the
 * same version every time (over a limit, the key's version vector full,
 * undecodable), so keeping it as a hint would only re-send it forever.
 */
static bool status_final(uint32_t status)
{
    return status == MSG_KV_TOOBIG || status == MSG_KV_CLOCKFULL || status == MSG_KV_BADINPUT;
}

/*
 * An answer's body as a msg_kv_answer; a transport failure or bad body as
 * MSG_KV_FAILED, a request over the member's frame (never sent, and never
 * sendable: coord_answer_fn) as MSG_KV_TOOBIG, a refusal for good.
 */
static void answer_read(int result, const uint8_t *body, size_t len, struct msg_kv_answer *a)
{
    if (result != 0 || msg_kv_answer_decode(body, len, a) != 0) {
        memset(a, 0, sizeof(*a));
        a->status = result == RK_EINVAL ? MSG_KV_TOOBIG : MSG_KV_FAILED;
    }
}

/* --- records over one frame ------------------------------------------------------ */

/*
 * Times a reader takes a record's first part again because the record
 * changed between two of its parts: past it, the replica counts as not
 * answering (a key rewritten faster than its parts travel).
 */
#define COORD_PART_RESTARTS_MAX 3

_Static_assert(MSG_KV_SIBLINGS_MAX == RECORD_SIBLINGS_MAX,
               "a part's sibling indexes cover every record");

/*
 * Bytes a body may carry between this node and a peer whose frame-max
 * leaves peer_max (0: not known): the smaller of that and this node's
 * body_max (0: no bound).
 */
static size_t body_max_with(const struct coord *co, size_t peer_max)
{
    size_t own = co->cfg.body_max;

    if (peer_max == 0) {
        return own;
    }
    return own == 0 || peer_max < own ? peer_max : own;
}

/* body_max_with() for member id, by what its connection announced. */
static size_t body_max_to(const struct coord *co, const char *id)
{
    return body_max_with(co,
                         co->hooks.body_max != NULL ? co->hooks.body_max(co->hooks.ctx, id) : 0);
}

/*
 * Bytes of record a body of at most body_max bytes (0: no bound) with a
 * key of key_len may carry (an answer: key_len 0).
 */
static size_t part_room(size_t body_max, size_t key_len)
{
    size_t around = MSG_KV_FIELDS_MAX_BYTES + key_len;

    if (body_max == 0) {
        return MSG_KV_BYTES_MAX;
    }
    return body_max > around ? body_max - around : 0;
}

/* A record's digest, the name its parts travel under: BLAKE2b of its encoding, never 0. */
static uint64_t part_digest(const uint8_t *rec, size_t len)
{
    uint8_t h[8];
    uint64_t d = 0;

    crypto_generichash(h, sizeof(h), rec, len, NULL, 0);
    for (size_t i = 0; i < sizeof(h); i++) {
        d = d << 8 | h[i];
    }
    return d != 0 ? d : 1;
}

/* A total order of distinct siblings, so that one set of siblings has one encoding. */
static int part_order(const void *pa, const void *pb)
{
    const struct sibling *a = pa, *b = pb;
    int c;

    if (a->hlc != b->hlc) {
        return a->hlc < b->hlc ? -1 : 1;
    }
    if ((c = strcmp(a->node, b->node)) != 0 || a->clock.n != b->clock.n) {
        return c != 0 ? c : (a->clock.n < b->clock.n ? -1 : 1);
    }
    for (uint32_t i = 0; i < a->clock.n; i++) {
        const struct vclock_entry *x = &a->clock.e[i], *y = &b->clock.e[i];
        if ((c = strcmp(x->id, y->id)) != 0 || x->counter != y->counter) {
            return c != 0 ? c : (x->counter < y->counter ? -1 : 1);
        }
    }
    if (a->value_len != b->value_len) {
        return a->value_len < b->value_len ? -1 : 1;
    }
    return a->value_len > 0 ? memcmp(a->value, b->value, a->value_len) : 0;
}

/*
 * Encode the siblings of rec from index from on that fit room bytes, at
 * least one, into *out (malloc'd, *len bytes); *end is the index after the
 * last.  RK_ETOOBIG when sibling from alone does not fit (a version vector
 * far over its pruned size), RK_ENOMEM.
 */
static int part_encode(const struct record *rec, size_t from, size_t room, uint8_t **out,
                       size_t *len, size_t *end)
{
    struct record none = {.n = 0};
    struct record view = {.s = rec->s + from, .n = 0};
    size_t size = record_encoded_size(&none);

    while (from + view.n < rec->n) {
        size_t more = sibling_encoded_size(&rec->s[from + view.n]);
        if (size + more > room) {
            break;
        }
        size += more;
        view.n++;
    }
    *out = NULL;
    *len = 0;
    *end = from + view.n;
    if (view.n == 0) {
        return RK_ETOOBIG;
    }
    view.cap = view.n;
    if ((*out = malloc(size)) == NULL) {
        return RK_ENOMEM;
    }
    *len = record_encode(&view, *out);
    return 0;
}

/*
 * The part of record (enc, len bytes, over one answer) that a reader asked
 * for: the record's siblings in part_order(), from index from when digest
 * still names it, else from its first sibling again.  Fills a (record
 * malloc'd into *owned).  Errors of record_decode() and part_encode().
 */
static int part_answer(size_t room, const uint8_t *enc, size_t len, uint32_t from, uint64_t digest,
                       struct msg_kv_answer *a, uint8_t **owned)
{
    struct record rec;
    uint8_t *sorted = NULL;
    size_t end = 0;
    int rc;

    record_init(&rec);
    *owned = NULL;
    if ((rc = record_decode(enc, len, &rec)) != 0) {
        goto cleanup;
    }
    qsort(rec.s, rec.n, sizeof(rec.s[0]), part_order);
    if ((sorted = malloc(record_encoded_size(&rec))) == NULL) {
        rc = RK_ENOMEM;
        goto cleanup;
    }
    a->digest = part_digest(sorted, record_encode(&rec, sorted));
    a->first = a->digest == digest && from < rec.n ? from : 0;
    rc = part_encode(&rec, a->first, room, owned, &a->record_len, &end);
    a->part = rc == 0;
    a->record = *owned;
    a->next = end < rec.n ? (uint32_t)end : 0;
cleanup:
    free(sorted);
    record_deinit(&rec);
    return rc;
}

/*
 * Take answer a, a part, into acc: the first part (first 0) replaces what
 * acc held (the record changed and is sent again), a later one must follow
 * the parts before it.  RK_ESYNTAX for a part that does not follow,
 * RK_ETRYAGAIN after COORD_PART_RESTARTS_MAX restarts, record_decode()'s
 * errors.
 */
static int part_take(struct record *acc, struct coord_part *pt, const struct msg_kv_answer *a)
{
    struct record more;
    int rc = 0;

    if (a->first == 0 && pt->digest != 0 && ++pt->restarts > COORD_PART_RESTARTS_MAX) {
        return RK_ETRYAGAIN;
    }
    if (a->first != 0 && (a->first != acc->n || a->digest != pt->digest)) {
        return RK_ESYNTAX;
    }
    pt->digest = a->digest;
    pt->next = a->next;
    if (a->first == 0) {
        return record_decode(a->record, a->record_len, acc);
    }
    record_init(&more);
    rc = record_decode(a->record, a->record_len, &more);
    for (size_t j = 0; j < more.n && rc == 0; j++) {
        rc = record_push(acc, &more.s[j]);
    }
    record_deinit(&more);
    return rc;
}

/* --- forwarding to a replica -------------------------------------------------------- */

static void forward_answer(void *dctx, int result, const uint8_t *body, size_t len);
static void read_reply(struct coord_req *q);

/*
 * Send the request to the first replica from node `from` on that is up and
 * can be asked (only node `from` itself with `only`: the next part of a
 * read's answer); false when none is left.  A read takes its answer in
 * parts (q->fpart says which is next).
 */
static bool forward_next(struct coord_req *q, size_t from, bool only)
{
    struct msg_forward f = {.kind = q->kind == COORD_READ ? MSG_FORWARD_READ : MSG_FORWARD_WRITE,
                            .key = q->key,
                            .key_len = q->key_len,
                            .quorum = q->needed,
                            .part = q->kind == COORD_READ,
                            .from = q->fpart.next,
                            .digest = q->fpart.digest,
                            .hops = q->hops + 1};
    uint8_t *ctx = NULL;
    struct buf body;
    bool sent = false;

    if (q->kind == COORD_WRITE) {
        f.tombstone = q->w->op.tombstone;
        f.value = f.tombstone ? NULL : (q->w->op.value ? q->w->op.value : (const uint8_t *)"");
        f.value_len = q->w->op.value_len;
        f.expiry = (uint32_t)q->w->op.expiry;
        f.expire_ms = q->w->op.expire_ms;
        if (q->w->op.context != NULL &&
            (ctx = malloc(vclock_encoded_size(q->w->op.context))) != NULL) {
            f.context_len = vclock_encode(q->w->op.context, ctx);
            f.context = ctx;
        } else if (q->w->op.context != NULL) {
            return false;
        }
    }
    buf_init(&body, 0);
    if (msg_forward_encode(&f, &body) == 0) {
        for (size_t i = from; i < (only ? from + 1 : q->n_rep) && !sent; i++) {
            sent = q->nodes[i].up && req_ask(q, i, MSG_OP_FORWARD, &body, forward_answer);
        }
    }
    buf_free(&body);
    free(ctx);
    return sent;
}

/*
 * A forwarded read's answer a in parts: take it into q->merged; ask for the
 * next part (true), or reply with the whole record once the last is in.
 */
static bool forward_read_part(struct coord_req *q, size_t idx, const struct msg_kv_answer *a)
{
    int rc = part_take(&q->merged, &q->fpart, a);

    if (rc == 0 && a->next != 0) {
        if (!q->completed && forward_next(q, idx, true)) {
            return true;
        }
        rc = RK_ETRYAGAIN; /* the rest cannot be asked for */
    }
    if (rc == 0) {
        q->acks = a->answered; /* the figures of the replica that coordinated */
        read_reply(q);
    } else {
        read_complete(q, RK_ETRYAGAIN, NULL, 0, a->answered);
    }
    return false;
}

static void forward_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct coord_call *call = dctx;
    struct coord_req *q = call->req;
    struct msg_kv_answer a;
    int rc;

    q->outstanding--;
    answer_read(result, body, len, &a);
    rc = msg_kv_status_to_rk(a.status);
    if (result != 0 && result != RK_ETIMEOUT && (q->kind == COORD_READ || result == RK_EINVAL) &&
        !q->completed) {
        record_deinit(&q->merged); /* parts from that replica, if any, are dropped */
        q->fpart = (struct coord_part){0};
        if (forward_next(q, (size_t)call->idx + 1, false)) {
            return; /* a read, or a write never sent (over that replica's frame), is safe to ask
                       again elsewhere */
        }
    }
    if (result != 0) {
        /* a write may have reached its coordinator: tried, outcome unknown */
        req_fail(q, RK_ETRYAGAIN, 0);
    } else if (q->kind == COORD_WRITE) {
        write_complete(q, rc, a.flag, a.answered);
    } else if (a.part && forward_read_part(q, (size_t)call->idx, &a)) {
        return; /* the next part is on its way */
    } else if (!a.part) {
        read_complete(q, rc, a.record, a.record_len, a.answered);
    }
    req_release(q);
}

/* Forward q to a replica; without one up, NOREPLICAS. */
static void req_forward(struct coord_req *q)
{
    q->co->stats.forwarded++;
    if (!forward_next(q, 0, false)) {
        req_fail(q, RK_ENOREPLICAS, 0);
    }
    req_release(q);
}

/* --- writes ------------------------------------------------------------------------ */

static void write_answer(void *dctx, int result, const uint8_t *body, size_t len);

/* Decide a write: quorum met, or every replica asked has ended. */
static void write_decide(struct coord_req *q, bool existed)
{
    if (!q->completed && q->acks >= q->needed) {
        write_complete(q, 0, existed, q->acks);
    } else if (!q->completed && q->outstanding == 0) {
        write_complete(q, RK_ETRYAGAIN, false, q->acks);
    }
}

/* A hint the coordinator keeps itself, for a replica that did not take the version. */
struct coord_hint_op {
    struct coord *co;
    struct store_op op;
    uint8_t *key;
    struct sibling version;
    char target[RING_NAME_MAX + 1];
};

static void hint_local_done(struct store_op *op, void *ctx)
{
    struct coord_hint_op *h = ctx;

    if (op->result == 0) {
        h->co->stats.hints_stored++;
    }
    sibling_deinit(&h->version);
    free(h->key);
    free(h);
}

/*
 * Keep q's version as a hint here for replica idx, which neither took it
 * nor has a fallback holding it (down without a fallback, refused, timed
 * out): hinted handoff then brings it there, so every acknowledged write
 * reaches every replica.  It does not count toward w.  Best effort: a
 * hint that cannot be kept leaves the replica to read repair.
 */
static void write_hint_here(struct coord_req *q, size_t idx)
{
    struct coord_hint_op *h;

    if ((int)idx == q->self || (h = calloc(1, sizeof(*h))) == NULL) {
        return;
    }
    sibling_init(&h->version);
    h->co = q->co;
    h->key = malloc(q->key_len ? q->key_len : 1);
    if (h->key == NULL || sibling_copy(&h->version, &q->lw.op.written) != 0) {
        hint_local_done(&h->op, h);
        return;
    }
    memcpy(h->key, q->key, q->key_len);
    snprintf(h->target, sizeof(h->target), "%s", q->nodes[idx].id);
    store_op_init(&h->op, STORE_OP_HINT_PUT);
    h->op.key = h->key;
    h->op.key_len = q->key_len;
    h->op.version = &h->version;
    h->op.target = h->target;
    h->op.done = hint_local_done;
    h->op.ctx = h;
    if (store_submit(q->co->store, &h->op) != 0) {
        h->op.result = RK_EIO;
        hint_local_done(&h->op, h);
    }
}

/* Whether a fallback of q stands for replica idx. */
static bool write_has_fallback(const struct coord_req *q, size_t idx)
{
    for (size_t i = q->n_rep; i < q->n; i++) {
        if (q->nodes[i].stands_for == (int)idx) {
            return true;
        }
    }
    return false;
}

/*
 * Send version (one sibling) to every other replica, and hints to
 * fallbacks.  The replicas' body is the same for each: encoded once; a
 * fallback's names its replica.
 */
static void write_send(struct coord_req *q, const struct sibling *version)
{
    struct record one = {.s = (struct sibling *)version, .n = 1, .cap = 1};
    size_t rlen = record_encoded_size(&one);
    uint8_t *rec = malloc(rlen);
    struct buf plain, hinted;
    bool plain_made = false;

    if (rec == NULL) {
        return;
    }
    record_encode(&one, rec);
    buf_init(&plain, 0);
    buf_init(&hinted, 0);
    for (size_t i = 0; i < q->n; i++) {
        struct msg_replica_write m = {
            .key = q->key, .key_len = q->key_len, .record = rec, .record_len = rlen};
        struct coord_node *nd = &q->nodes[i];
        bool fallback = i >= q->n_rep && !nd->pending, encoded;
        if ((int)i == q->self || (nd->pending && strcmp(nd->id, q->co->cfg.self) == 0)) {
            continue;
        }
        if (nd->pending && !nd->up) {
            write_hint_here(q, i); /* a gaining node that is down gets it as a hint */
            continue;
        }
        if (!fallback && !nd->up && q->co->cfg.sloppy) {
            if (!write_has_fallback(q, i)) {
                write_hint_here(q, i); /* down, and no node left to stand in for it */
            }
            continue; /* else its fallback takes the version */
        }
        if (fallback) {
            snprintf(m.hint, sizeof(m.hint), "%s", q->nodes[nd->stands_for].id);
            buf_clear(&hinted);
            encoded = msg_replica_write_encode(&m, &hinted) == 0;
        } else {
            encoded = plain_made || msg_replica_write_encode(&m, &plain) == 0;
            plain_made = encoded;
        }
        if (!encoded ||
            !req_ask(q, i, MSG_OP_REPLICA_WRITE, fallback ? &hinted : &plain, write_answer)) {
            write_hint_here(q, fallback ? (size_t)nd->stands_for : i);
        }
    }
    buf_free(&plain);
    buf_free(&hinted);
    free(rec);
}

/* The local write made the version: ship it. */
static void write_local_done(struct kv_write *lw, void *ctx)
{
    struct coord_req *q = ctx;
    bool existed = lw->existed;

    q->outstanding--;
    if (lw->result != 0 || !lw->op.changed) { /* an error, or an EXPIRE with nothing to do */
        write_complete(q, lw->result, false, lw->result != 0 ? 0 : 1);
        req_release(q);
        return;
    }
    q->acks = 1;
    q->nodes[q->self].state = NODE_ANSWERED;
    q->outstanding++; /* answers arriving while sending must not end q under us */
    write_send(q, &lw->op.written);
    q->outstanding--;
    write_decide(q, existed);
    req_release(q);
}

/*
 * Send q's version to node idx, which replaced a replica that answered
 * NOTMINE (req_replace()), as to that replica; a hint kept here for it
 * when it cannot be asked.
 */
static void write_send_replaced(struct coord_req *q, size_t idx)
{
    const struct sibling *version = &q->lw.op.written;
    struct record one = {.s = (struct sibling *)version, .n = 1, .cap = 1};
    size_t rlen = record_encoded_size(&one);
    uint8_t *rec = malloc(rlen);
    struct msg_replica_write m = {.key = q->key, .key_len = q->key_len, .record = rec};
    struct buf body;
    bool sent = false;

    buf_init(&body, 0);
    if (rec != NULL) {
        m.record_len = record_encode(&one, rec);
        sent = msg_replica_write_encode(&m, &body) == 0 &&
               req_ask(q, idx, MSG_OP_REPLICA_WRITE, &body, write_answer);
    }
    if (!sent) {
        q->nodes[idx].state = NODE_FAILED;
        write_hint_here(q, idx);
    }
    buf_free(&body);
    free(rec);
}

static void write_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct coord_call *call = dctx;
    struct coord_req *q = call->req;
    struct msg_kv_answer a;

    q->outstanding--;
    answer_read(result, body, len, &a);
    if (a.status == MSG_KV_NOTMINE && req_replace(q, (size_t)call->idx)) {
        /* the version goes to the next node of the walk instead, even after the reply */
        write_send_replaced(q, (size_t)call->idx);
        write_decide(q, q->lw.existed);
        req_release(q);
        return;
    }
    q->nodes[call->idx].state = a.status == MSG_KV_OK ? NODE_ANSWERED : NODE_FAILED;
    q->acks += a.status == MSG_KV_OK && !q->nodes[call->idx].pending; /* pending: not in w */
    if (a.status != MSG_KV_OK && !status_final(a.status)) {
        size_t idx = (size_t)call->idx;
        bool fallback = idx >= q->n_rep && !q->nodes[idx].pending;
        write_hint_here(q, fallback ? (size_t)q->nodes[idx].stands_for : idx);
    }
    write_decide(q, q->lw.existed);
    req_release(q);
}

/* Coordinate a write here: NOREPLICAS, or the local write that starts it. */
static void write_start(struct coord_req *q)
{
    struct kv_write *w = q->w;
    unsigned reachable = req_reachable(q, q->co->cfg.sloppy);

    q->co->stats.writes++;
    if (q->needed > q->n_rep || reachable < q->needed) {
        write_complete(q, RK_ENOREPLICAS, false,
                       q->needed > q->n_rep ? (unsigned)q->n_rep : reachable);
        req_release(q);
        return;
    }
    kv_write_init(&q->lw, q->key, q->key_len, w->op.value, w->op.value_len, w->op.tombstone,
                  w->op.context, write_local_done, q);
    kv_write_expiry(&q->lw, w->op.expiry, w->op.expire_ms);
    q->lw.op.skip_written = false;
    q->outstanding++;
    kv_local_write(q->co->kv, &q->lw);
}

/* --- reads ------------------------------------------------------------------------- */

static void read_answer(void *dctx, int result, const uint8_t *body, size_t len);
static void repair_answer(void *dctx, int result, const uint8_t *body, size_t len);

/* Ask node idx for the next part of its record (the first: nothing taken yet). */
static bool read_ask_part(struct coord_req *q, size_t idx)
{
    struct coord_part *pt = &q->nodes[idx].part;
    struct msg_replica_read m = {
        .key = q->key, .key_len = q->key_len, .part = true, .from = pt->next, .digest = pt->digest};
    struct buf body;
    bool sent;

    buf_init(&body, 0);
    sent = msg_replica_read_encode(&m, &body) == 0 &&
           req_ask(q, idx, MSG_OP_REPLICA_READ, &body, read_answer);
    buf_free(&body);
    return sent;
}

/* Ask the next replica not asked yet that is up; false when none is left. */
static bool read_ask_spare(struct coord_req *q)
{
    struct msg_replica_read m = {.key = q->key, .key_len = q->key_len, .part = true};
    struct buf body;
    bool sent = false;

    buf_init(&body, 0);
    if (msg_replica_read_encode(&m, &body) == 0) {
        for (size_t i = 0; i < q->n_rep && !sent; i++) {
            if (q->nodes[i].state == NODE_IDLE && q->nodes[i].up && (int)i != q->self) {
                sent = req_ask(q, i, MSG_OP_REPLICA_READ, &body, read_answer);
            }
        }
    }
    buf_free(&body);
    return sent;
}

/* Merge every answered replica's record into q->merged. */
static int read_merge(struct coord_req *q)
{
    const struct coord_config *cfg = &q->co->cfg;
    int rc = 0;

    for (size_t i = 0; i < q->n_rep && rc == 0; i++) {
        struct coord_node *nd = &q->nodes[i];
        for (size_t j = 0; nd->state == NODE_ANSWERED && j < nd->rec.n && rc == 0; j++) {
            rc = record_apply(&q->merged, &nd->rec.s[j], cfg->mode, RECORD_SIBLINGS_MAX, NULL);
        }
    }
    return rc;
}

/* Whether nd's record lacks part of the merged one (applying it would change nd's). */
static bool read_stale(struct coord_req *q, struct coord_node *nd)
{
    const struct coord_config *cfg = &q->co->cfg;
    struct record copy;
    bool changed = false, any = false;
    int rc = 0;

    record_init(&copy);
    for (size_t j = 0; j < nd->rec.n && rc == 0; j++) {
        rc = record_push(&copy, &nd->rec.s[j]);
    }
    for (size_t j = 0; j < q->merged.n && rc == 0; j++) {
        rc = record_apply(&copy, &q->merged.s[j], cfg->mode, RECORD_SIBLINGS_MAX, &changed);
        any = any || changed;
    }
    record_deinit(&copy);
    return rc == 0 && any;
}

/* Reply with the merged record (NOTFOUND when nothing was found). */
static void read_reply(struct coord_req *q)
{
    if (q->merged.n == 0) {
        read_complete(q, RK_ENOTFOUND, NULL, 0, q->acks);
        return;
    }
    q->enc_len = record_encoded_size(&q->merged);
    if ((q->enc = malloc(q->enc_len)) == NULL) {
        read_complete(q, RK_ENOMEM, NULL, 0, q->acks);
        return;
    }
    record_encode(&q->merged, q->enc);
    read_complete(q, 0, q->enc, q->enc_len, q->acks);
}

/* One repair ended (whatever its outcome: the reply does not depend on it); the last replies. */
static void repair_end(struct coord_req *q)
{
    if (--q->repairs_left == 0) {
        read_reply(q);
    }
}

static void repair_local_done(struct store_op *op, void *ctx)
{
    struct coord_req *q = ctx;

    (void)op;
    if (--q->n_repair == 0) { /* the group's operations complete together */
        repair_answer(&q->calls[q->self], 0, NULL, 0);
    }
}

/* Write the merged record into this node's store: every sibling, one group. */
static bool repair_local(struct coord_req *q)
{
    struct store_op **ops;
    int rc;

    q->repair = calloc(q->merged.n, sizeof(*q->repair));
    ops = calloc(q->merged.n, sizeof(*ops));
    if (q->repair == NULL || ops == NULL) {
        free(ops);
        return false;
    }
    for (size_t j = 0; j < q->merged.n; j++) {
        store_op_init(&q->repair[j], STORE_OP_APPLY);
        q->repair[j].key = q->key;
        q->repair[j].key_len = q->key_len;
        q->repair[j].version = &q->merged.s[j];
        q->repair[j].done = repair_local_done;
        q->repair[j].ctx = q;
        ops[j] = &q->repair[j];
    }
    q->n_repair = q->merged.n;
    rc = q->merged.n > 1 ? store_submit_atomic(q->co->store, ops, q->merged.n)
                         : store_submit(q->co->store, ops[0]);
    free(ops);
    return rc == 0;
}

/* Free n bodies of repair_bodies() and their array (NULL and 0: nothing). */
static void repair_bodies_free(struct buf *bodies, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        buf_free(&bodies[k]);
    }
    free(bodies);
}

/*
 * The REPLICA_WRITEs that carry the merged record to a replica: one body
 * when it fits, else one per group of whole siblings that fits (a replica
 * merges each, and the union of the groups is the merged record, whatever
 * the order they arrive in).  Returns how many bodies are in *out (an
 * array of n, for repair_bodies_free()); 0 on failure.
 */
static size_t repair_bodies(struct coord_req *q, size_t body_max, struct buf **out)
{
    struct msg_replica_write m = {.key = q->key, .key_len = q->key_len};
    size_t room = part_room(body_max, q->key_len), n = 0, from = 0, end;
    struct buf *bodies = calloc(q->merged.n, sizeof(*bodies));
    uint8_t *rec;
    int rc = bodies == NULL ? RK_ENOMEM : 0;

    while (rc == 0 && from < q->merged.n) {
        if ((rc = part_encode(&q->merged, from, room, &rec, &m.record_len, &end)) != 0) {
            break;
        }
        m.record = rec;
        buf_init(&bodies[n], 0);
        rc = msg_replica_write_encode(&m, &bodies[n++]);
        free(rec);
        from = end;
    }
    if (rc != 0) {
        LOG(LOG_WARN, "read_repair_not_sent", "key_len=%zu siblings=%zu error=\"%s\"", q->key_len,
            q->merged.n, rk_strerror(rc));
        repair_bodies_free(bodies, n);
        bodies = NULL;
        n = 0;
    }
    *out = bodies;
    return n;
}

/* Repair node i, another replica, with the bodies of repair_bodies(). */
static void repair_send(struct coord_req *q, size_t i, const struct buf *bodies, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (req_ask(q, i, MSG_OP_REPLICA_WRITE, &bodies[k], repair_answer)) {
            q->repairs_left++;
        }
    }
}

/*
 * The answered replica whose record every other answered one holds the same
 * (the common case: nothing to merge, nobody to repair), or NULL.
 */
static struct coord_node *read_all_same(struct coord_req *q)
{
    struct coord_node *first = NULL;

    for (size_t i = 0; i < q->n_rep; i++) {
        struct coord_node *nd = &q->nodes[i];
        if (nd->state != NODE_ANSWERED) {
            continue;
        }
        if (first == NULL) {
            first = nd;
        } else if (!record_same(&first->rec, &nd->rec)) {
            return NULL;
        }
    }
    return first;
}

/*
 * Whether every answered replica answered this node's own copy byte for
 * byte (this node among them): the reply is that copy, as stored, with
 * nothing to merge, re-encode or repair.
 */
static bool read_all_raw(const struct coord_req *q)
{
    if (q->raw == NULL || q->self < 0 || q->nodes[q->self].state != NODE_ANSWERED) {
        return false;
    }
    for (size_t i = 0; i < q->n_rep; i++) {
        const struct coord_node *nd = &q->nodes[i];
        if (nd->state == NODE_ANSWERED && (int)i != q->self && !nd->same_raw) {
            return false;
        }
    }
    return true;
}

/*
 * The quorum answered: merge, repair every answered replica that holds
 * less (the reply waits for the repairs), then reply.  When every answer
 * is the same record, it is the merge (merging is idempotent) and no
 * replica holds less.  The repair bodies are cut to the frame of the
 * replica they go to, made once for each size met.
 */
static void read_resolve(struct coord_req *q)
{
    struct buf *bodies = NULL;
    size_t n_bodies = 0, made_max = 0;
    bool made = false;
    struct coord_node *same;
    int rc = 0;

    if (q->merged.n == 0 && read_all_raw(q)) {
        /* every answer is this node's copy, byte for byte: it is the reply as stored */
        q->completed = true;
        read_complete(q, 0, q->raw, q->raw_len, q->acks);
        return;
    }
    for (size_t i = 0; i < q->n_rep && rc == 0; i++) {
        if (q->nodes[i].same_raw) { /* the same bytes as this node's own copy, decoded once more */
            rc = record_decode(q->raw, q->raw_len, &q->nodes[i].rec);
            q->nodes[i].same_raw = false;
        }
    }
    if (rc != 0) {
        read_complete(q, rc, NULL, 0, q->acks);
        return;
    }
    same = q->merged.n == 0 ? read_all_same(q) : NULL;
    if (same != NULL) {
        record_deinit(&q->merged);
        q->merged = same->rec; /* taken: that node's record is not read again */
        record_init(&same->rec);
    } else {
        rc = read_merge(q);
    }
    if (rc != 0) {
        read_complete(q, rc, NULL, 0, q->acks);
        return;
    }
    q->completed = true; /* from here, the last repair to end replies */
    q->repairs_left = 1; /* repairs ending while others are sent must not reply early */
    for (size_t i = 0; i < q->n_rep && same == NULL && q->merged.n > 0; i++) {
        struct coord_node *nd = &q->nodes[i];
        size_t to;
        if (nd->state != NODE_ANSWERED || !read_stale(q, nd)) {
            continue;
        }
        nd->stale = true;
        if ((int)i == q->self) {
            bool started = repair_local(q);
            q->co->stats.repairs++;
            q->outstanding += started;
            q->repairs_left += started;
            continue;
        }
        /* the bodies are cut to this replica's frame: made again only for another size */
        to = body_max_to(q->co, nd->id);
        if (!made || to != made_max) {
            repair_bodies_free(bodies, n_bodies);
            n_bodies = repair_bodies(q, to, &bodies);
            made = true;
            made_max = to;
        }
        if (n_bodies == 0) {
            continue; /* not one sibling fits its frame (logged): it goes unrepaired */
        }
        q->co->stats.repairs++;
        repair_send(q, i, bodies, n_bodies);
    }
    repair_bodies_free(bodies, n_bodies);
    repair_end(q); /* the hold taken above */
}

static void repair_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct coord_call *call = dctx;
    struct coord_req *q = call->req;

    (void)result;
    (void)body;
    (void)len;
    q->outstanding--;
    repair_end(q);
    req_release(q);
}

/* Decide a read: the quorum answered, or nothing is left to wait for. */
static void read_decide(struct coord_req *q)
{
    if (q->completed) {
        return;
    }
    if (q->acks >= q->needed) {
        read_resolve(q);
    } else if (q->outstanding == 0) {
        read_complete(q, RK_ETRYAGAIN, NULL, 0, q->acks);
    }
}

static void read_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct coord_call *call = dctx;
    struct coord_req *q = call->req;
    struct coord_node *nd = &q->nodes[call->idx];
    struct msg_kv_answer a;

    q->outstanding--;
    answer_read(result, body, len, &a);
    if (a.status == MSG_KV_OK && !a.part && q->raw != NULL && a.record_len == q->raw_len &&
        memcmp(a.record, q->raw, q->raw_len) == 0) {
        nd->same_raw = true; /* this node's own copy: decoded only if another answer differs */
    } else if (a.status == MSG_KV_OK &&
               (a.part ? part_take(&nd->rec, &nd->part, &a)
                       : record_decode(a.record, a.record_len, &nd->rec)) != 0) {
        a.status = MSG_KV_BADINPUT; /* a replica's damaged record does not count */
    }
    if (a.status == MSG_KV_OK && a.part && a.next != 0) {
        if (!q->completed && read_ask_part(q, (size_t)call->idx)) {
            req_release(q);
            return; /* its next part is on its way */
        }
        a.status = MSG_KV_FAILED; /* the rest cannot be asked for */
    }
    if (a.status == MSG_KV_OK || a.status == MSG_KV_NOTFOUND) {
        nd->state = NODE_ANSWERED;
        q->acks++;
    } else {
        nd->state = NODE_FAILED;
        record_deinit(&nd->rec);
        if (a.status == MSG_KV_NOTMINE && !q->completed) {
            (void)req_replace(q, (size_t)call->idx); /* idle: the next node of the walk */
        }
        if (!q->completed && result != RK_ETIMEOUT) {
            (void)read_ask_spare(q); /* after a timeout, request-timeout has passed: no more */
        }
    }
    read_decide(q);
    req_release(q);
}

/*
 * store_read()'s callback for the coordinator's own copy: checked (a copy
 * that does not decode does not count) and kept as stored, undecoded, so
 * that answers with the same bytes need no decoding, merging or encoding;
 * read_resolve() decodes it only when an answer differs.  Without memory
 * for the copy it is decoded here, as any answer.
 */
static int read_local_found(void *ctx, const uint8_t *record, size_t len)
{
    struct coord_req *q = ctx;
    int rc = record_check(record, len);

    if (rc != 0) {
        return rc;
    }
    q->raw = len <= sizeof(q->raw_here) ? q->raw_here : malloc(len);
    if (q->raw == NULL) { /* answers are decoded and merged as any */
        return record_decode(record, len, &q->nodes[q->self].rec);
    }
    memcpy(q->raw, record, len);
    q->raw_len = len;
    q->nodes[q->self].same_raw = true; /* decoded only when an answer differs */
    return 0;
}

/* Coordinate a read here: NOREPLICAS, or the local read and r - 1 questions. */
static void read_start(struct coord_req *q)
{
    struct coord_node *self = &q->nodes[q->self];
    unsigned reachable = req_reachable(q, false);
    int rc;

    q->co->stats.reads++;
    if (q->needed > q->n_rep || reachable < q->needed) {
        read_complete(q, RK_ENOREPLICAS, NULL, 0,
                      q->needed > q->n_rep ? (unsigned)q->n_rep : reachable);
        req_release(q);
        return;
    }
    rc = store_read(q->co->store, q->key, q->key_len, read_local_found, q);
    self->state = rc == 0 || rc == RK_ENOTFOUND ? NODE_ANSWERED : NODE_FAILED;
    q->acks += self->state == NODE_ANSWERED;
    q->outstanding++; /* answers arriving while asking must not decide early */
    for (unsigned asked = q->acks; asked < q->needed; asked++) {
        if (!read_ask_spare(q)) {
            break;
        }
    }
    q->outstanding--;
    read_decide(q);
    req_release(q);
}

/*
 * Start a client's read r or write w (the other NULL); false when its key
 * is this node's alone and the caller serves it locally.  hops: the
 * forwards it travelled to get here (0: a client asked this node).  A
 * node that is no replica of the key forwards it (req_forward()), unless
 * it already travelled COORD_FORWARD_HOPS forwards: then it answers
 * TRYAGAIN, and the client retries.  Each forward carries its count, so no
 * request goes round between nodes whose rings disagree (coord.h).
 */
static bool req_begin(struct coord *co, struct kv_read *r, struct kv_write *w, unsigned hops)
{
    enum coord_kind kind = w != NULL ? COORD_WRITE : COORD_READ;
    const uint8_t *key = w != NULL ? w->op.key : r->key_;
    size_t len = w != NULL ? w->op.key_len : r->key_len_;
    unsigned needed = coord_quorum(co, w != NULL ? w->quorum : r->quorum, kind);
    struct coord_req *q;

    if (coord_key_local(co, key, len, needed)) {
        return false;
    }
    if ((q = req_new(co, kind, key, len, needed)) == NULL) {
        struct coord_req failed = {.co = co, .r = r, .w = w, .kind = kind};
        req_fail(&failed, RK_ENOMEM, 0);
        return true;
    }
    q->r = r;
    q->w = w;
    q->hops = hops;
    if (q->self < 0 && hops >= COORD_FORWARD_HOPS) {
        req_fail(q, RK_ETRYAGAIN, 0);
        req_release(q);
    } else if (q->self < 0) {
        req_forward(q);
    } else if (w != NULL) {
        write_start(q);
    } else {
        read_start(q);
    }
    return true;
}

bool coord_get(struct coord *co, struct kv_read *r)
{
    return req_begin(co, r, NULL, 0);
}

/* --- conditional writes -------------------------------------------------------------- */

/*
 * A write decided on what the key holds, under replication (SET NX/XX/GET,
 * GETSET, GETDEL, and DEL, EXPIRE, PERSIST: kv_write_reads()): a quorum
 * read of the key (coord_get()'s, repair included), the decision against
 * the merged record, then a write whose context is that record's, so it
 * supersedes exactly what the read saw.  Decided on the coordinator's own
 * copy, a DEL or an expiry change through a replica that missed the latest
 * write would leave the new version beside that write (a sibling, or under
 * lww the old value made newer) instead of over it.  Both halves are ordinary
 * requests, forwarded when this node is no replica of the key.  A write
 * refused for a stale context (RK_EMISMATCH: this key's coordinator wrote
 * it after the read, as a concurrent conditional write through the same
 * node does) is decided again on a fresh read, up to COORD_COND_TRIES
 * reads, so two conditional writes through one coordinator do not both
 * succeed; through different coordinators they can (siblings, or under
 * lww the later wins): there is no consensus behind the decision.
 */
struct coord_cond {
    struct coord *co;
    struct coord_cond *prev, *next; /* co->conds */
    struct kv_write *w;             /* the client's conditional write */
    struct kv_read rd;              /* the quorum read it is decided on */
    struct kv_write wr;             /* the write it makes, with the read's context */
    struct vclock context;          /* the merged record's context */
    uint8_t *old;                   /* want_old: the value read, malloc'd; NULL when none */
    size_t old_len;
    uint8_t *value; /* an expiry change: the live value it rewrites, malloc'd */
    size_t value_len;
    bool expire_delete; /* an expiry change to a time already past: a delete */
    unsigned tries;     /* reads made */
};

/* Reads one conditional write makes at most (a first one, then after each stale context). */
#define COORD_COND_TRIES 3

static void cond_free(struct coord_cond *cc)
{
    if (cc->prev != NULL) {
        cc->prev->next = cc->next;
    } else {
        cc->co->conds = cc->next;
    }
    if (cc->next != NULL) {
        cc->next->prev = cc->prev;
    }
    free(cc->old);
    free(cc->value);
    vclock_deinit(&cc->context);
    free(cc);
}

/* Give the client its result, hand over the old value on success, and free cc. */
static void cond_end(struct coord_cond *cc, int rc, unsigned answered, unsigned needed)
{
    struct kv_write *w = cc->w;

    w->result = rc;
    w->answered = answered;
    w->needed = needed;
    if (rc == 0) {
        w->old = cc->old;
        w->old_len = cc->old_len;
        cc->old = NULL;
    } else {
        w->skipped = w->conflict = false;
    }
    cond_free(cc);
    w->done(w, w->ctx);
}

/* A copy of len bytes of p into *out (malloc'd, never NULL on success); RK_ENOMEM. */
static int cond_copy(uint8_t **out, size_t *out_len, const uint8_t *p, size_t len)
{
    free(*out);
    *out_len = 0;
    if ((*out = malloc(len ? len : 1)) == NULL) {
        return RK_ENOMEM;
    }
    if (len > 0) {
        memcpy(*out, p, len);
    }
    *out_len = len;
    return 0;
}

/*
 * Decide an expiry change (EXPIRE, PERSIST: STORE_EXPIRY_TOUCH) against
 * the merged record rec at now, as the store decides it on one node
 * (store.c, op_write_version()): siblings are a conflict (RK_EMISMATCH);
 * no live value, or PERSIST of one that does not expire, writes nothing;
 * else the live value is rewritten with the new expiry, or deleted when
 * that expiry has passed.  existed says whether it writes.
 */
static int cond_decide_expiry(struct coord_cond *cc, const struct record *rec, uint64_t now)
{
    struct kv_write *w = cc->w;
    const struct sibling *one = NULL;
    size_t live = 0;

    for (size_t i = 0; i < rec->n; i++) {
        if (!sibling_dead(&rec->s[i], now)) {
            one = &rec->s[i];
            live++;
        }
    }
    free(cc->value); /* a read again after a stale context decides afresh */
    cc->value = NULL;
    cc->value_len = 0;
    if (live > 1) {
        return RK_EMISMATCH;
    }
    w->skipped = one == NULL || (w->op.expire_ms == 0 && one->expire_ms == 0);
    w->existed = !w->skipped;
    cc->expire_delete = w->op.expire_ms != 0 && w->op.expire_ms <= now;
    if (!w->skipped && !cc->expire_delete) {
        return cond_copy(&cc->value, &cc->value_len, one->value, one->value_len);
    }
    return 0;
}

/*
 * Decide the client's write against the merged record rec, as the store
 * decides it on one node (store.c, op_write_decide(): a sibling expired by
 * this node's wall clock is left out), and take rec's context for the
 * write.  A DEL (a delete with neither condition nor context) writes only
 * over a live value, which it counts (existed), as Redis's DEL.  0 or
 * RK_ENOMEM, RK_ECLOCKFULL (the siblings' clocks together past full),
 * RK_EMISMATCH (an expiry change of siblings).
 */
static int cond_decide(struct coord_cond *cc, const struct record *rec)
{
    struct kv_write *w = cc->w;
    const struct sibling *one = NULL;
    uint64_t now = clock_wall_ms();
    size_t visible = 0;
    bool present = false;
    int rc;

    if (w->op.expiry == STORE_EXPIRY_TOUCH) {
        rc = cond_decide_expiry(cc, rec, now);
        return rc ? rc : record_context(rec, &cc->context);
    }
    for (size_t i = 0; i < rec->n; i++) {
        if (!sibling_expired(&rec->s[i], now)) {
            one = &rec->s[i];
            visible++;
            present = present || !one->tombstone;
        }
    }
    w->existed = present;
    w->conflict = w->op.want_old && visible > 1;
    w->skipped = w->conflict || (w->op.cond == STORE_COND_ABSENT && present) ||
                 ((w->op.cond == STORE_COND_PRESENT || w->op.tombstone) && !present);
    free(cc->old);
    cc->old = NULL;
    cc->old_len = 0;
    if (w->op.want_old && present && !w->conflict &&
        (rc = cond_copy(&cc->old, &cc->old_len, one->value, one->value_len)) != 0) {
        return rc;
    }
    return record_context(rec, &cc->context);
}

static void cond_read(struct coord_cond *cc);

static void cond_write_done(struct kv_write *wr, void *ctx)
{
    struct coord_cond *cc = ctx;

    if (wr->result == RK_EMISMATCH && cc->tries < COORD_COND_TRIES) {
        cond_read(cc); /* written since the read: decide again on what is there now */
        return;
    }
    cond_end(cc, wr->result, wr->answered, wr->needed);
}

/* The read is in: decide, then write with its context (or end, the condition unmet). */
static void cond_read_done(struct kv_read *r, void *ctx)
{
    struct coord_cond *cc = ctx;
    struct kv_write *w = cc->w;
    struct record rec;
    int rc = r->result == RK_ENOTFOUND ? 0 : r->result;

    record_init(&rec);
    if (rc == 0 && r->result == 0) {
        rc = record_decode(r->record, r->record_len, &rec);
    }
    w->read_failed = rc != 0;
    rc = rc ? rc : cond_decide(cc, &rec);
    record_deinit(&rec);
    if (rc != 0 || w->skipped) {
        cond_end(cc, rc, r->answered, r->needed);
        return;
    }
    if (w->op.expiry == STORE_EXPIRY_TOUCH) {
        /* the new version of the value read, as any write of it: no longer decided by a store */
        kv_write_init(&cc->wr, w->op.key, w->op.key_len, cc->value, cc->value_len,
                      cc->expire_delete, &cc->context, cond_write_done, cc);
        kv_write_expiry(&cc->wr, STORE_EXPIRY_SET, cc->expire_delete ? 0 : w->op.expire_ms);
    } else {
        kv_write_init(&cc->wr, w->op.key, w->op.key_len, w->op.value, w->op.value_len,
                      w->op.tombstone, &cc->context, cond_write_done, cc);
        kv_write_expiry(&cc->wr, w->op.expiry, w->op.expire_ms);
    }
    cc->wr.quorum = w->quorum;
    if (!req_begin(cc->co, NULL, &cc->wr, 0)) {
        kv_local_write(cc->co->kv, &cc->wr);
    }
}

/* Start (again) the quorum read a conditional write is decided on. */
static void cond_read(struct coord_cond *cc)
{
    struct kv_read *r = &cc->rd;

    cc->tries++;
    memset(r, 0, sizeof(*r));
    r->done = cond_read_done;
    r->ctx = cc;
    r->key_ = cc->w->op.key;
    r->key_len_ = cc->w->op.key_len;
    if (!req_begin(cc->co, r, NULL, 0)) {
        kv_local_get(cc->co->kv, r);
    }
}

/* coord_write() of a conditional write: false when the key is this node's alone (the store
 * decides). */
static bool cond_begin(struct coord *co, struct kv_write *w)
{
    struct coord_cond *cc;

    if (coord_key_local(co, w->op.key, w->op.key_len, coord_quorum(co, w->quorum, COORD_WRITE))) {
        return false;
    }
    if ((cc = calloc(1, sizeof(*cc))) == NULL) {
        w->result = RK_ENOMEM;
        w->done(w, w->ctx);
        return true;
    }
    cc->co = co;
    cc->w = w;
    vclock_init(&cc->context);
    cc->next = co->conds;
    if (co->conds != NULL) {
        co->conds->prev = cc;
    }
    co->conds = cc;
    cond_read(cc);
    return true;
}

bool coord_write(struct coord *co, struct kv_write *w)
{
    if (kv_write_reads(w)) {
        return cond_begin(co, w);
    }
    return req_begin(co, NULL, w, 0);
}

/* --- serving other nodes ------------------------------------------------------------- */

/* One served operation, alive until its answer is given. */
struct coord_serve {
    struct coord *co;
    coord_served_fn done;
    void *ctx;
    uint8_t *body;     /* a copy of the request's body: the decoded fields point into it */
    size_t body_cap;   /* bytes allocated at body (kept, with rec's array, on the spares) */
    size_t answer_max; /* bytes the answer's body may carry to the asking peer (0: no bound) */
    struct msg_replica_write rw;
    struct msg_replica_read rr;
    struct msg_forward fw;
    struct record rec;    /* REPLICA_WRITE: the versions, a view of body (record_view()) */
    struct store_op *ops; /* and their operations: &op1 for one version */
    struct store_op op1;
    struct coord_serve *next; /* on the coordinator's spares */
    size_t left;
    int result;
    bool changed;
    struct vclock context; /* FORWARD: the write's context */
    struct kv_read rd;
    struct kv_write wr;
    /* Last, not zeroed on reuse: where rec's clocks are decoded (no allocation per write). */
    struct vclock_entry room[COORD_SERVE_ROOM];
};

static void serve_free(struct coord_serve *sv)
{
    struct coord *co = sv->co;

    vclock_deinit(&sv->context);
    if (sv->ops != &sv->op1) {
        free(sv->ops);
    }
    if (co->n_sv_spare < COORD_SPARE_MAX && sv->body_cap <= COORD_SPARE_BODY_MAX &&
        sv->rec.cap <= COORD_SPARE_SIBLINGS) {
        /* kept: the body's buffer and the record's array serve the next request */
        record_view_release(&sv->rec);
        sv->next = co->sv_spare;
        co->sv_spare = sv;
        co->n_sv_spare++;
        return;
    }
    record_view_release(&sv->rec);
    record_deinit(&sv->rec);
    free(sv->body);
    free(sv);
}

static void coord_spares_free(struct coord *co)
{
    while (co->req_spare != NULL) {
        struct coord_req *q = co->req_spare;
        co->req_spare = q->next;
        free(q);
    }
    while (co->sv_spare != NULL) {
        struct coord_serve *sv = co->sv_spare;
        co->sv_spare = sv->next;
        record_deinit(&sv->rec);
        free(sv->body);
        free(sv);
    }
    co->n_req_spare = co->n_sv_spare = 0;
}

static void serve_answer(struct coord_serve *sv, int rc, const uint8_t *record, size_t len,
                         unsigned answered, unsigned needed, bool flag)
{
    struct msg_kv_answer a = {.status = msg_kv_status_from_rk(rc),
                              .answered = answered,
                              .needed = needed,
                              .record = rc == 0 ? record : NULL,
                              .record_len = rc == 0 ? len : 0,
                              .flag = flag};

    sv->done(sv->ctx, &a);
}

/*
 * Answer a read with its record (rc 0): whole, or, when the reader takes
 * parts and the record is over one answer, the part it asked for.
 */
static void serve_answer_record(struct coord_serve *sv, int rc, const uint8_t *record, size_t len,
                                unsigned answered, unsigned needed)
{
    bool part = sv->rr.part || sv->fw.part;
    struct msg_kv_answer a = {.status = MSG_KV_OK, .answered = answered, .needed = needed};
    size_t room = part_room(sv->answer_max, 0);
    uint8_t *owned = NULL;

    if (rc != 0 || !part || len <= room) {
        serve_answer(sv, rc, record, len, answered, needed, false);
        return;
    }
    rc = sv->rr.part ? part_answer(room, record, len, sv->rr.from, sv->rr.digest, &a, &owned)
                     : part_answer(room, record, len, sv->fw.from, sv->fw.digest, &a, &owned);
    if (rc != 0) {
        serve_answer(sv, rc, NULL, 0, answered, needed, false);
    } else {
        sv->done(sv->ctx, &a);
    }
    free(owned);
}

/*
 * Not this node's key (coord.h, "Rings that differ"): answer NOTMINE, a
 * status that is no vote, no acknowledgement and no record, and store
 * nothing.
 */
static void serve_not_mine(struct coord_serve *sv)
{
    struct msg_kv_answer a = {.status = MSG_KV_NOTMINE};

    sv->co->stats.not_mine++;
    sv->done(sv->ctx, &a);
}

/* store_read()'s callback when only whether a record is stored matters. */
static int serve_copy_found(void *ctx, const uint8_t *record, size_t len)
{
    (void)ctx;
    (void)record;
    (void)len;
    return 1;
}

/*
 * Whether a replica read or write of key is for another node's arc: this
 * node neither replicates it nor gains it under its own rings (in force
 * and target) and holds no copy of it (a read or an I/O error reads as a
 * copy: the request is served as before).  Such a request comes from a
 * coordinator whose ring differs from this node's (behind or ahead of it).
 * Answering it from the empty store would make "not found" a vote for a
 * key the real replicas hold, and taking a write would count toward w a
 * copy held where no ring puts it (deleted by the next clean-up of arcs
 * this node does not replicate), so it is answered NOTMINE.
 *
 * Why a status and not a proxy (this node asking the key's replicas under
 * its ring in the coordinator's place): the coordinator asks some of
 * those replicas itself, so a proxied answer would count one node's copy
 * twice toward r or w; and the coordinator alone knows which nodes it
 * asked.  NOTMINE leaves the decision with it: it counts no vote and no
 * acknowledgement from this node and asks the next node of its ring walk
 * in its place (req_replace()), or, with none left, keeps a write's hint,
 * which hinted handoff sends to the key's replicas once the rings agree
 * (delivery_nodes()).  Nothing goes round between nodes, so there is no
 * loop to bound; the walk is bounded by COORD_REPLACE_MAX.
 */
static bool serve_not_mine_key(struct coord_serve *sv, const uint8_t *key, size_t len)
{
    if (coord_key_of(sv->co, sv->co->cfg.self, key, len)) {
        return false;
    }
    return store_read(sv->co->store, key, len, serve_copy_found, NULL) == RK_ENOTFOUND;
}

static void serve_write_done(struct store_op *op, void *ctx)
{
    struct coord_serve *sv = ctx;

    if (op->result != 0 && sv->result == 0) {
        sv->result = op->result;
    }
    sv->changed = sv->changed || op->changed;
    if (--sv->left == 0) {
        serve_answer(sv, sv->result, NULL, 0, 0, 0, sv->changed);
        serve_free(sv);
    }
}

/* REPLICA_WRITE: merge each version (or keep it as a hint), all in one group. */
static int serve_replica_write(struct coord_serve *sv, size_t len)
{
    struct store_op **list, *list1;
    bool hint;
    int rc;

    if (msg_replica_write_decode(sv->body, len, &sv->rw) != 0 ||
        record_view(sv->rw.record, sv->rw.record_len, &sv->rec, sv->room, COORD_SERVE_ROOM) != 0) {
        return RK_ESYNTAX;
    }
    hint = sv->rw.hint[0] != '\0';
    if (!hint && serve_not_mine_key(sv, sv->rw.key, sv->rw.key_len)) {
        serve_not_mine(sv); /* a hint is kept for any node: only the data is checked */
        serve_free(sv);
        return 0;
    }
    if (sv->rec.n == 1) {
        sv->ops = &sv->op1; /* the common case: one version, nothing to allocate */
        list = &list1;
    } else {
        sv->ops = calloc(sv->rec.n, sizeof(*sv->ops));
        list = calloc(sv->rec.n, sizeof(*list));
    }
    if (sv->ops == NULL || list == NULL) {
        if (list != &list1) {
            free(list);
        }
        return RK_ENOMEM;
    }
    for (size_t j = 0; j < sv->rec.n; j++) {
        store_op_init(&sv->ops[j], hint ? STORE_OP_HINT_PUT : STORE_OP_APPLY);
        sv->ops[j].key = sv->rw.key;
        sv->ops[j].key_len = sv->rw.key_len;
        sv->ops[j].version = &sv->rec.s[j];
        sv->ops[j].target = hint ? sv->rw.hint : NULL;
        sv->ops[j].done = serve_write_done;
        sv->ops[j].ctx = sv;
        list[j] = &sv->ops[j];
    }
    sv->left = sv->rec.n;
    /* run by the event loop's next prepare step (kv_flush()), with the iteration's other writes */
    rc = store_queue(sv->co->store, list, sv->rec.n, true);
    if (list != &list1) {
        free(list);
    }
    if (hint) {
        sv->co->stats.hints_stored++;
    } else {
        sv->co->stats.replica_writes++;
    }
    if (rc != 0) {
        serve_answer(sv, rc, NULL, 0, 0, 0, false);
        serve_free(sv);
    }
    return 0;
}

static int serve_read_found(void *ctx, const uint8_t *record, size_t len)
{
    serve_answer_record(ctx, 0, record, len, 0, 0);
    return 1; /* answered */
}

/* REPLICA_READ: the record as stored (or the part asked for), answered inside the read. */
static int serve_replica_read(struct coord_serve *sv, size_t len)
{
    struct msg_replica_read *m = &sv->rr;
    int rc;

    if (msg_replica_read_decode(sv->body, len, m) != 0) {
        return RK_ESYNTAX;
    }
    sv->co->stats.replica_reads++;
    rc = store_read(sv->co->store, m->key, m->key_len, serve_read_found, sv);
    if (rc == RK_ENOTFOUND && !coord_key_of(sv->co, sv->co->cfg.self, m->key, m->key_len)) {
        serve_not_mine(sv); /* no copy, and no replica of it: no vote (serve_not_mine_key()) */
    } else if (rc != 1) {
        serve_answer(sv, rc, NULL, 0, 0, 0, false);
    }
    serve_free(sv);
    return 0;
}

static void serve_forward_read_done(struct kv_read *r, void *ctx)
{
    struct coord_serve *sv = ctx;

    serve_answer_record(sv, r->result, r->record, r->record_len, r->answered, r->needed);
    serve_free(sv);
}

static void serve_forward_write_done(struct kv_write *w, void *ctx)
{
    struct coord_serve *sv = ctx;

    serve_answer(sv, w->result, NULL, 0, w->answered, w->needed, w->existed);
    serve_free(sv);
}

/*
 * FORWARD: coordinate the client's request here, as if the client had
 * asked this node, or forward it on (req_begin()).  A FORWARD without a
 * hop count comes from a node that predates it, which counted on this one
 * never forwarding it again: it counts as having travelled them all.
 */
static int serve_forward(struct coord_serve *sv, size_t len)
{
    struct msg_forward *f = &sv->fw;
    unsigned hops;
    size_t used;

    if (msg_forward_decode(sv->body, len, f) != 0 ||
        (f->context != NULL &&
         (vclock_decode(f->context, f->context_len, &used, &sv->context) != 0 ||
          used != f->context_len))) {
        return RK_ESYNTAX;
    }
    sv->co->stats.forwards_served++;
    hops = f->hops != 0 ? f->hops : COORD_FORWARD_HOPS;
    if (f->key_len > sv->co->cfg.key_max || f->value_len > sv->co->cfg.value_max) {
        /* refused alone: queued, it would fail the writes it shares a batch with */
        serve_answer(sv, RK_ETOOBIG, NULL, 0, 0, 0, false);
        serve_free(sv);
        return 0;
    }
    if (f->kind == MSG_FORWARD_READ) {
        sv->rd.done = serve_forward_read_done;
        sv->rd.ctx = sv;
        sv->rd.key_ = f->key;
        sv->rd.key_len_ = f->key_len;
        sv->rd.quorum = f->quorum;
        if (!req_begin(sv->co, &sv->rd, NULL, hops)) {
            kv_local_get(sv->co->kv, &sv->rd);
        }
        return 0;
    }
    kv_write_init(&sv->wr, f->key, f->key_len, f->value, f->value_len, f->tombstone,
                  f->context != NULL ? &sv->context : NULL, serve_forward_write_done, sv);
    kv_write_expiry(&sv->wr, (enum store_expiry)f->expiry, f->expire_ms);
    sv->wr.quorum = f->quorum;
    if (!req_begin(sv->co, NULL, &sv->wr, hops)) {
        kv_local_write(sv->co->kv, &sv->wr);
    }
    return 0;
}

int coord_serve(struct coord *co, uint32_t op, const uint8_t *body, size_t len, size_t answer_max,
                coord_served_fn done, void *ctx)
{
    struct coord_serve *sv;
    int rc;

    if (op != MSG_OP_REPLICA_WRITE && op != MSG_OP_REPLICA_READ && op != MSG_OP_FORWARD) {
        return RK_EINVAL;
    }
    if ((sv = co->sv_spare) != NULL) {
        uint8_t *kept = sv->body;
        size_t kept_cap = sv->body_cap;
        struct record rec = sv->rec; /* emptied by serve_free(), its array kept */
        co->sv_spare = sv->next;
        co->n_sv_spare--;
        memset(sv, 0, offsetof(struct coord_serve, room));
        sv->body = kept;
        sv->body_cap = kept_cap;
        sv->rec = rec;
    } else if ((sv = calloc(1, sizeof(*sv))) == NULL) {
        return RK_ENOMEM;
    } else {
        record_init(&sv->rec);
    }
    sv->co = co;
    if (sv->body_cap < len || sv->body == NULL) {
        uint8_t *b = malloc(len ? len : 1);
        if (b == NULL) {
            serve_free(sv);
            return RK_ENOMEM;
        }
        free(sv->body);
        sv->body = b;
        sv->body_cap = len ? len : 1;
    }
    memcpy(sv->body, body, len);
    sv->answer_max = body_max_with(co, answer_max);
    sv->done = done;
    sv->ctx = ctx;
    vclock_init(&sv->context);
    rc = op == MSG_OP_REPLICA_WRITE  ? serve_replica_write(sv, len)
         : op == MSG_OP_REPLICA_READ ? serve_replica_read(sv, len)
                                     : serve_forward(sv, len);
    if (rc != 0) {
        serve_free(sv);
    }
    return rc;
}

/* --- delivering hints ---------------------------------------------------------------- */

/* Hints sent per target per round (with COORD_HINT_TARGETS_MAX): the delivery rate's bound. */
#define COORD_HINTS_PER_ROUND 256

/* One hint on its way to its replica (or, its target gone from the ring, to the key's replicas). */
struct coord_delivery {
    struct coord *co;
    char target[RING_NAME_MAX + 1];
    uint64_t seq;
    unsigned left; /* answers (and a local merge) not yet in */
    bool failed;
    uint8_t *key;
    size_t key_len;
    struct sibling version; /* for a local merge when re-routed to this node */
    struct store_op apply;  /* that merge */
    struct store_op del;    /* the hint's deletion, once every answer said ok */
};

int coord_collect_target(void *ctx, const char *target, uint64_t count)
{
    struct coord_targets *t = ctx;

    (void)count;
    if (t->n == COORD_HINT_TARGETS_MAX) {
        return 1;
    }
    snprintf(t->id[t->n++], sizeof(t->id[0]), "%s", target);
    return 0;
}

static void delivery_free(struct coord_delivery *d)
{
    d->co->deliveries--;
    sibling_deinit(&d->version);
    free(d->key);
    free(d);
}

static void delivery_deleted(struct store_op *op, void *ctx)
{
    struct coord_delivery *d = ctx;

    if (op->result == 0) {
        d->co->stats.hints_delivered++;
    }
    delivery_free(d);
}

/* One answer (or the local merge) of a delivery is in; after the last, delete the hint. */
static void delivery_step(struct coord_delivery *d, bool ok)
{
    d->failed = d->failed || !ok;
    if (--d->left > 0) {
        return;
    }
    if (d->failed) {
        delivery_free(d); /* kept: the next round tries again */
        return;
    }
    store_op_init(&d->del, STORE_OP_HINT_DELETE);
    d->del.target = d->target;
    d->del.seq = d->seq;
    d->del.done = delivery_deleted;
    d->del.ctx = d;
    if (store_submit(d->co->store, &d->del) != 0) {
        delivery_free(d);
    }
}

/* One node's outcome of a delivery (a replica's, or this node's own): refused for good drops it. */
static void delivery_outcome(struct coord_delivery *d, uint32_t status)
{
    if (status_final(status)) {
        LOG(LOG_WARN, "hint_dropped", "target=%s seq=%llu status=%u", d->target,
            (unsigned long long)d->seq, (unsigned)status);
    }
    delivery_step(d, status == MSG_KV_OK || status_final(status));
}

static void delivery_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct msg_kv_answer a;

    answer_read(result, body, len, &a);
    delivery_outcome(dctx, a.status);
}

/* This node's store merged the hint (a target gone from the ring, this node a replica now). */
static void delivery_applied(struct store_op *op, void *ctx)
{
    delivery_outcome(ctx, msg_kv_status_from_rk(op->result));
}

/*
 * The nodes a hint goes to: its target while it is a replica of the key
 * (or gains it) under this node's rings, else the key's replicas in the
 * ring in force: a target that left the ring, or one a coordinator whose
 * ring differed sent the version to and that answered NOTMINE
 * (serve_not_mine_key()), which would refuse it again.
 */
static size_t delivery_nodes(struct coord *co, const struct store_hint *h,
                             char ids[RING_RF_MAX][RING_NAME_MAX + 1])
{
    const struct ring *ring = co->hooks.ring(co->hooks.ctx);
    uint32_t members[RING_RF_MAX];
    size_t n = 0;

    if (ring == NULL) {
        return 0;
    }
    if (ring_member_find(ring, h->target) >= 0 && coord_key_of(co, h->target, h->key, h->key_len)) {
        snprintf(ids[0], sizeof(ids[0]), "%s", h->target);
        return 1;
    }
    if (ring_preflist(ring, ring_key_position(ring, h->key, h->key_len), co->cfg.rf, members, &n) !=
        0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        snprintf(ids[i], sizeof(ids[0]), "%s", ring_member_id(ring, members[i]));
    }
    return n;
}

/* store_hint_scan()'s callback: send one hint on its way. */
static int delivery_start(void *ctx, const struct store_hint *h)
{
    struct coord *co = ctx;
    char ids[RING_RF_MAX][RING_NAME_MAX + 1];
    size_t n = delivery_nodes(co, h, ids);
    struct record one = {.s = (struct sibling *)&h->version, .n = 1, .cap = 1};
    struct coord_delivery *d;
    struct msg_replica_write m = {.key = h->key, .key_len = h->key_len};
    struct buf body;
    uint8_t *rec;

    if (n == 0 || (d = calloc(1, sizeof(*d))) == NULL) {
        return 0;
    }
    co->deliveries++;
    d->co = co;
    snprintf(d->target, sizeof(d->target), "%s", h->target);
    d->seq = h->seq;
    d->left = 1; /* held while sending */
    sibling_init(&d->version);
    rec = malloc(record_encoded_size(&one));
    d->key = malloc(h->key_len ? h->key_len : 1);
    buf_init(&body, 0);
    if (rec == NULL || d->key == NULL || sibling_copy(&d->version, &h->version) != 0) {
        d->failed = true;
    } else {
        memcpy(d->key, h->key, h->key_len);
        d->key_len = h->key_len;
        m.record_len = record_encode(&one, rec);
        m.record = rec;
        d->failed = msg_replica_write_encode(&m, &body) != 0;
    }
    for (size_t i = 0; i < n && !d->failed; i++) {
        d->left++;
        if (strcmp(ids[i], co->cfg.self) == 0) {
            store_op_init(&d->apply, STORE_OP_APPLY);
            d->apply.key = d->key;
            d->apply.key_len = d->key_len;
            d->apply.version = &d->version;
            d->apply.done = delivery_applied;
            d->apply.ctx = d;
            d->failed = store_submit(co->store, &d->apply) != 0;
            d->left -= d->failed;
        } else if (!co->hooks.up(co->hooks.ctx, ids[i]) ||
                   co->hooks.ask(co->hooks.ctx, ids[i], MSG_OP_REPLICA_WRITE, buf_data(&body),
                                 body.len, delivery_answer, d) != 0) {
            d->left--;
            d->failed = true;
        }
    }
    buf_free(&body);
    free(rec);
    delivery_step(d, !d->failed);
    return 0;
}

void coord_deliver_hints(struct coord *co)
{
    struct coord_targets t = {.n = 0};

    if (co->deliveries > 0) {
        return; /* one round at a time: the last one's hints are still on their way */
    }
    (void)store_hint_targets(co->store, coord_collect_target, &t); /* the rest next round */
    for (size_t i = 0; i < t.n; i++) {
        const struct ring *ring = co->hooks.ring(co->hooks.ctx);
        struct store_cursor cur;
        bool in_ring = ring != NULL && ring_member_find(ring, t.id[i]) >= 0;
        if (in_ring && !co->hooks.up(co->hooks.ctx, t.id[i])) {
            continue; /* kept until its replica is back */
        }
        store_cursor_init(&cur);
        (void)store_hint_scan(co->store, t.id[i], &cur, COORD_HINTS_PER_ROUND, delivery_start, co);
    }
}

uint64_t coord_hints_in_flight(const struct coord *co)
{
    return co->deliveries;
}

/* --- looking at a key's replicas ---------------------------------------------------- */

struct coord_inspect {
    struct coord *co;
    coord_inspect_fn done;
    void *ctx;
    unsigned left;
    size_t n;
    struct coord_view views[COORD_NODES];
    uint8_t *raw[COORD_NODES]; /* each answered record, copied */
    struct coord_call calls[COORD_NODES];
    const uint8_t *key; /* borrowed until done runs (coord.h) */
    size_t key_len;
    struct record acc[COORD_NODES]; /* a record over one frame: its parts so far */
    struct coord_part parts[COORD_NODES];
};

static void inspect_end(struct coord_inspect *in)
{
    if (--in->left > 0) {
        return;
    }
    in->done(in->ctx, in->views, in->n);
    for (size_t i = 0; i < in->n; i++) {
        free(in->raw[i]);
    }
    free(in);
}

/* Keep a copy of node i's record as its view. */
static void inspect_keep(struct coord_inspect *in, size_t i, int status, const uint8_t *rec,
                         size_t len)
{
    in->views[i].status = status;
    if (status == 0 && (in->raw[i] = malloc(len ? len : 1)) != NULL) {
        memcpy(in->raw[i], rec, len);
        in->views[i].record = in->raw[i];
        in->views[i].record_len = len;
    } else if (status == 0) {
        in->views[i].status = RK_ENOMEM;
    }
}

static void inspect_answer(void *dctx, int result, const uint8_t *body, size_t len);

/* Ask replica i for its record, or for its next part; false when it cannot be asked. */
static bool inspect_ask(struct coord_inspect *in, size_t i)
{
    struct msg_replica_read m = {.key = in->key,
                                 .key_len = in->key_len,
                                 .part = true,
                                 .from = in->parts[i].next,
                                 .digest = in->parts[i].digest};
    struct buf body;
    bool sent;

    buf_init(&body, 0);
    sent = msg_replica_read_encode(&m, &body) == 0 &&
           in->co->hooks.ask(in->co->hooks.ctx, in->views[i].id, MSG_OP_REPLICA_READ,
                             buf_data(&body), body.len, inspect_answer, &in->calls[i]) == 0;
    buf_free(&body);
    return sent;
}

/*
 * A part of replica i's record: take it; ask for the next (true), or keep
 * the whole record as its view once the last part is in.
 */
static bool inspect_part(struct coord_inspect *in, size_t i, const struct msg_kv_answer *a)
{
    struct record *acc = &in->acc[i];
    uint8_t *enc = NULL;
    int rc = part_take(acc, &in->parts[i], a);

    if (rc == 0 && a->next != 0) {
        if (inspect_ask(in, i)) {
            return true;
        }
        rc = RK_EIO;
    }
    if (rc == 0 && (enc = malloc(record_encoded_size(acc))) == NULL) {
        rc = RK_ENOMEM;
    }
    inspect_keep(in, i, rc, enc, rc == 0 ? record_encode(acc, enc) : 0);
    free(enc);
    record_deinit(acc);
    return false;
}

static void inspect_answer(void *dctx, int result, const uint8_t *body, size_t len)
{
    struct coord_call *call = dctx;
    struct coord_inspect *in = (struct coord_inspect *)call->req;
    struct msg_kv_answer a;

    answer_read(result, body, len, &a);
    if (result == 0 && a.part) {
        if (inspect_part(in, (size_t)call->idx, &a)) {
            return; /* its next part is on its way */
        }
    } else {
        inspect_keep(in, (size_t)call->idx, result != 0 ? result : msg_kv_status_to_rk(a.status),
                     a.record, a.record_len);
    }
    inspect_end(in);
}

/*
 * This node's own copy.  One over one answer is shown in the order its
 * parts would bring it (part_order()), as the other replicas' copies of it
 * come, so that equal copies look equal.
 */
static int inspect_local(void *ctx, const uint8_t *record, size_t len)
{
    struct coord_call *call = ctx;
    struct coord_inspect *in = (struct coord_inspect *)call->req;
    struct record rec;
    uint8_t *sorted = NULL;
    int rc = 0;

    record_init(&rec);
    if (len > part_room(in->co->cfg.body_max, 0) && (rc = record_decode(record, len, &rec)) == 0) {
        qsort(rec.s, rec.n, sizeof(rec.s[0]), part_order);
        rc = (sorted = malloc(record_encoded_size(&rec))) == NULL ? RK_ENOMEM : 0;
    }
    if (sorted != NULL) {
        len = record_encode(&rec, sorted);
        record = sorted;
    }
    inspect_keep(in, (size_t)call->idx, rc, rc == 0 ? record : NULL, rc == 0 ? len : 0);
    record_deinit(&rec);
    free(sorted);
    return 0;
}

int coord_inspect(struct coord *co, const uint8_t *key, size_t len, coord_inspect_fn done,
                  void *ctx)
{
    struct coord_inspect *in = calloc(1, sizeof(*in));
    struct coord_req *q = in != NULL ? req_new(co, COORD_READ, key, len, 1) : NULL;

    if (q == NULL) {
        free(in);
        return RK_ENOMEM;
    }
    *in = (struct coord_inspect){
        .co = co, .done = done, .ctx = ctx, .left = 1, .n = q->n_rep, .key = key, .key_len = len};
    for (size_t i = 0; i < q->n_rep; i++) {
        struct coord_view *v = &in->views[i];
        snprintf(v->id, sizeof(v->id), "%s", q->nodes[i].id);
        v->role = q->nodes[i].role;
        v->up = (int)i == q->self || q->nodes[i].up;
        v->status = RK_EIO;
        in->calls[i].req = (struct coord_req *)in; /* the call's context: this inspection */
        in->calls[i].idx = (int)i;
    }
    q->completed = true;
    req_release(q); /* only its plan was needed */
    for (size_t i = 0; i < in->n; i++) {
        if (strcmp(in->views[i].id, co->cfg.self) == 0) {
            int rc = store_read(co->store, key, len, inspect_local, &in->calls[i]);
            in->views[i].status = rc == 0 ? in->views[i].status : rc;
            continue;
        }
        in->left++;
        if (!inspect_ask(in, i)) {
            in->views[i].status = RK_EIO; /* not reachable */
            in->left--;
        }
    }
    inspect_end(in);
    return 0;
}
