/*
 * gossip_sim.c - N members of the production membership code on a virtual
 * clock and network (gossip_sim.h).
 *
 * Names.  Member i is "n<i>" at peer address 10.<i/65536>.<i/256%256>.<i%256>:7371,
 * so an id or an address leads back to its index without a lookup table.
 * A connection handed to gossip is the receiving member's struct sim_node,
 * cast to the opaque struct peer: gossip passes it back and never looks
 * inside.
 *
 * Time is kept in microseconds (latency and jitter are finer than the
 * millisecond clock gossip reads).  Random draws come from one splitmix64
 * stream seeded by the run's seed, in the order events happen, and each
 * member's gossip gets a seed of its own drawn from it: so the run is a
 * function of its seed and options.
 */
#include "gossip_sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "buf.h"
#include "detector.h"
#include "error.h"
#include "frame.h"
#include "gossip.h"
#include "grow.h"
#include "msg.h"
#include "ring.h"

/* What the node adds to each message on the wire: the frame header and the channel's tag. */
#define SIM_WIRE_OVERHEAD (FRAME_HEADER_BYTES + 16)
/* Settling time between phases, in rounds. */
#define SIM_SETTLE_ROUNDS 5
/* A message in flight: its event and the queue's slack (2 x 40 bytes) and its copied bytes. */
#define SIM_INFLIGHT_BYTES 128
/* A phase gives up at this many times its bound. */
#define SIM_GIVE_UP_FACTOR 3

const double gossip_sim_fs_losses[GOSSIP_SIM_FS_LOSSES] = {0.01, 0.05};

struct sim;

struct sim_node {
    struct sim *sim;
    struct gossip *g;
    uint32_t index;
    char id[16];
    char addr[32];
    bool crashed;
    bool holds_down; /* its gossip holds the crashed member down (its last event about it) */
};

enum sim_kind { SIM_ROUND, SIM_DELIVER, SIM_IDENT };

/* One event: a member's round, a message's delivery, or a new link's introduction. */
struct sim_ev {
    uint64_t t_us, seq;
    uint8_t *bytes; /* SIM_DELIVER: the encoded message, owned by the event */
    uint32_t len, to, from;
    enum sim_kind kind;
};

struct sim {
    const struct gossip_sim_opts *o;
    struct sim_node *nodes;
    size_t n; /* members made so far: the formed cluster, then the joiner */
    size_t cap;
    uint8_t *links; /* cap x cap bits: a connection between two members */
    struct sim_ev *heap;
    size_t n_heap, cap_heap;
    uint64_t now_us, seq, rng;
    struct buf enc;
    double loss;
    bool cut;      /* the partition is in force */
    bool counting; /* traffic counted (the warm-up's second half) */
    uint64_t count_msgs, count_bytes;
    int fs_phase;          /* index into gossip_sim_fs_losses, -1 outside */
    size_t joiner, victim; /* SIZE_MAX: none yet */
    size_t seen_join;      /* members that added the joiner */
    size_t seen_down;      /* live members holding the crashed one down now: a member counts once */
    int rc; /* the first failure of the simulator itself (RK_ENOMEM): the run stops */
    struct gossip_sim_result *r;
};

/* --- randomness, names ------------------------------------------------------------- */

static uint64_t sim_rand(struct sim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double sim_unit(struct sim *s)
{
    return (double)(sim_rand(s) >> 11) / 9007199254740992.0;
}

static void sim_name(uint32_t i, char *id, size_t id_len, char *addr, size_t addr_len)
{
    snprintf(id, id_len, "n%u", i);
    snprintf(addr, addr_len, "10.%u.%u.%u:7371", i >> 16, (i >> 8) & 255, i & 255);
}

/* Member i's rack (one of three, in turn) and client address. */
static void sim_rack_client(uint32_t i, char *rack, size_t rack_len, char *client,
                            size_t client_len)
{
    snprintf(rack, rack_len, "r%u", i % 3);
    snprintf(client, client_len, "10.%u.%u.%u:7370", i >> 16, (i >> 8) & 255, i & 255);
}

/* The index of the member named id; SIZE_MAX for none. */
static size_t sim_lookup_id(const struct sim *s, const char *id)
{
    char *end;
    unsigned long i;

    if (id[0] != 'n') {
        return SIZE_MAX;
    }
    i = strtoul(id + 1, &end, 10);
    return *end == '\0' && i < s->n ? i : SIZE_MAX;
}

/* The index of the member named by id, else by addr (either may be NULL); SIZE_MAX for neither. */
static size_t sim_lookup(const struct sim *s, const char *id, const char *addr)
{
    unsigned a, b, c, d, port;
    size_t i = id != NULL ? sim_lookup_id(s, id) : SIZE_MAX;

    if (i != SIZE_MAX) {
        return i;
    }
    if (addr != NULL && sscanf(addr, "%u.%u.%u.%u:%u", &a, &b, &c, &d, &port) == 5 && a == 10) {
        i = ((size_t)b << 16) | (c << 8) | d;
        return i < s->n ? i : SIZE_MAX;
    }
    return SIZE_MAX;
}

/* --- the event queue: a binary heap by (time, sequence) ---------------------------- */

static bool sim_before(const struct sim_ev *a, const struct sim_ev *b)
{
    return a->t_us < b->t_us || (a->t_us == b->t_us && a->seq < b->seq);
}

static int sim_push(struct sim *s, struct sim_ev ev)
{
    size_t i;

    if (grow_array(&s->heap, &s->cap_heap, s->n_heap + 1, sizeof(*s->heap)) != 0) {
        s->rc = s->rc != 0 ? s->rc : RK_ENOMEM;
        return RK_ENOMEM;
    }
    ev.seq = s->seq++;
    i = s->n_heap++;
    while (i > 0 && sim_before(&ev, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = ev;
    return 0;
}

static struct sim_ev sim_pop(struct sim *s)
{
    struct sim_ev top = s->heap[0], last = s->heap[--s->n_heap];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n_heap) {
            break;
        }
        if (c + 1 < s->n_heap && sim_before(&s->heap[c + 1], &s->heap[c])) {
            c++;
        }
        if (!sim_before(&s->heap[c], &last)) {
            break;
        }
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->n_heap > 0) {
        s->heap[i] = last;
    }
    return top;
}

/* --- links ----------------------------------------------------------------------- */

static bool sim_link_get(const struct sim *s, size_t a, size_t b)
{
    size_t bit = a * s->cap + b;
    return (s->links[bit / 8] >> (bit % 8)) & 1;
}

static void sim_link_set(struct sim *s, size_t a, size_t b, bool on)
{
    size_t bits[2] = {a * s->cap + b, b * s->cap + a};

    for (size_t k = 0; k < 2; k++) {
        if (on) {
            s->links[bits[k] / 8] |= (uint8_t)(1u << (bits[k] % 8));
        } else {
            s->links[bits[k] / 8] &= (uint8_t) ~(1u << (bits[k] % 8));
        }
    }
}

static bool sim_in(size_t i, size_t lo, size_t hi)
{
    return i >= lo && i <= hi;
}

/* Whether the partition in force separates members a and b. */
static bool sim_cut(const struct sim *s, size_t a, size_t b)
{
    const struct gossip_sim_opts *o = s->o;

    if (!s->cut) {
        return false;
    }
    return (sim_in(a, o->a_lo, o->a_hi) && sim_in(b, o->b_lo, o->b_hi)) ||
           (sim_in(b, o->a_lo, o->a_hi) && sim_in(a, o->b_lo, o->b_hi));
}

static uint64_t sim_delay(struct sim *s)
{
    uint64_t j = s->o->jitter_us > 0 ? sim_rand(s) % (s->o->jitter_us + 1) : 0;
    return s->o->latency_us + j;
}

/* --- trace ----------------------------------------------------------------------- */

static void sim_trace(const struct sim *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void sim_trace(const struct sim *s, const char *fmt, ...)
{
    va_list ap;

    if (s->o->trace == NULL) {
        return;
    }
    fprintf(s->o->trace, "%llu.%06llu ", (unsigned long long)(s->now_us / 1000000),
            (unsigned long long)(s->now_us % 1000000));
    va_start(ap, fmt);
    vfprintf(s->o->trace, fmt, ap);
    va_end(ap);
    fputc('\n', s->o->trace);
}

/* --- the hooks: a member's view of the virtual network ------------------------------ */

static struct sim_node *sim_node_of(struct peer *p)
{
    return (struct sim_node *)(void *)p;
}

static struct peer *sim_peer_of(struct sim_node *n)
{
    return (struct peer *)(void *)n;
}

/* Encode m, count it, and queue its delivery from a to b unless the network drops it. */
static int sim_transmit(struct sim *s, size_t a, size_t b, const struct msg *m)
{
    struct sim_ev ev = {.kind = SIM_DELIVER, .from = (uint32_t)a, .to = (uint32_t)b};
    int rc;

    buf_clear(&s->enc);
    rc = msg_encode(m, &s->enc);
    if (rc != 0) {
        s->rc = s->rc != 0 ? s->rc : rc;
        return rc;
    }
    s->r->messages++;
    if (s->counting) {
        s->count_msgs++;
        s->count_bytes += s->enc.len + SIM_WIRE_OVERHEAD;
    }
    if (sim_cut(s, a, b) || (s->loss > 0 && sim_unit(s) < s->loss)) {
        return 0;
    }
    ev.len = (uint32_t)s->enc.len;
    ev.bytes = malloc(ev.len);
    if (ev.bytes == NULL) {
        s->rc = s->rc != 0 ? s->rc : RK_ENOMEM;
        return RK_ENOMEM;
    }
    memcpy(ev.bytes, buf_data(&s->enc), ev.len);
    ev.t_us = s->now_us + sim_delay(s);
    rc = sim_push(s, ev);
    if (rc != 0) {
        free(ev.bytes);
    }
    return rc;
}

static int sim_hook_send(void *ctx, struct peer *p, const struct msg *m)
{
    struct sim_node *from = ctx, *to = sim_node_of(p);
    struct sim *s = from->sim;

    if (to->crashed || !sim_link_get(s, from->index, to->index)) {
        sim_link_set(s, from->index, to->index, false);
        return RK_ECLOSED;
    }
    return sim_transmit(s, from->index, to->index, m);
}

static struct peer *sim_hook_find(void *ctx, const char *id, const char *addr)
{
    struct sim_node *from = ctx;
    struct sim *s = from->sim;
    size_t i = sim_lookup(s, id, addr);

    if (i == SIZE_MAX || i == from->index || !sim_link_get(s, from->index, i)) {
        return NULL;
    }
    if (s->nodes[i].crashed) {
        sim_link_set(s, from->index, i, false); /* closed by the other end's crash */
        return NULL;
    }
    return sim_peer_of(&s->nodes[i]);
}

/* A dial reaches a live member on our side of any partition; both ends are told in turn. */
static struct peer *sim_hook_dial(void *ctx, const char *addr, char *err, size_t err_len)
{
    struct sim_node *from = ctx;
    struct sim *s = from->sim;
    size_t i = sim_lookup(s, NULL, addr);
    uint64_t d;

    if (i == SIZE_MAX || i == from->index || s->nodes[i].crashed || sim_cut(s, from->index, i)) {
        snprintf(err, err_len, "no answer");
        return NULL;
    }
    sim_link_set(s, from->index, i, true);
    d = sim_delay(s);
    if (sim_push(s, (struct sim_ev){.kind = SIM_IDENT,
                                    .t_us = s->now_us + d,
                                    .to = (uint32_t)i,
                                    .from = from->index}) != 0 ||
        sim_push(s, (struct sim_ev){.kind = SIM_IDENT,
                                    .t_us = s->now_us + 2 * d,
                                    .to = from->index,
                                    .from = (uint32_t)i}) != 0) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    return sim_peer_of(&s->nodes[i]);
}

static void sim_hook_removed(void *ctx)
{
    (void)ctx; /* nobody removes a member in a run */
}

static void sim_hook_id_in_use(void *ctx, const char *other_addr)
{
    struct sim_node *n = ctx;

    sim_trace(n->sim, "%s id_in_use %s", n->id, other_addr);
}

static uint64_t sim_hook_now(void *ctx)
{
    struct sim_node *n = ctx;
    return n->sim->now_us / 1000;
}

/*
 * Member n's event about the crashed member: seen_down counts the members
 * that hold it down now, so one that sees it down, then up again (a late
 * sign of life), then down counts once, and only while it holds it down.
 */
static void sim_victim_event(struct sim *s, struct sim_node *n, const char *event)
{
    bool down = strcmp(event, "member_down") == 0;

    if (!down && strcmp(event, "member_up") != 0 && strcmp(event, "member_suspect") != 0) {
        return;
    }
    if (down != n->holds_down) {
        n->holds_down = down;
        s->seen_down = down ? s->seen_down + 1 : s->seen_down - 1;
    }
}

/* A member event: traced, and counted by the phase that waits for it. */
static void sim_hook_changed(void *ctx, const char *event, const char *id)
{
    struct sim_node *n = ctx;
    struct sim *s = n->sim;
    size_t about = sim_lookup_id(s, id);

    sim_trace(s, "%s %s %s", n->id, event, id);
    if (about == SIZE_MAX) {
        return;
    }
    if (about == s->joiner && n->index != s->joiner && strcmp(event, "member_added") == 0) {
        s->seen_join++;
    }
    if (about == s->victim) {
        sim_victim_event(s, n, event);
    }
    if (s->fs_phase >= 0 && about != s->victim && !s->nodes[about].crashed) {
        s->r->fs_events[s->fs_phase] += strcmp(event, "member_suspect") == 0;
        s->r->fs_down_events[s->fs_phase] += strcmp(event, "member_down") == 0;
    }
}

/* --- members --------------------------------------------------------------------- */

/* Entry i of the formed cluster, as every member of it holds it at the start. */
static void sim_entry(struct sim *s, uint32_t i, struct msg_member *e)
{
    uint64_t inst[2] = {sim_rand(s), sim_rand(s)};

    memset(e, 0, sizeof(*e));
    sim_name(i, e->id, sizeof(e->id), e->peer_addr, sizeof(e->peer_addr));
    sim_rack_client(i, e->rack, sizeof(e->rack), e->client_addr, sizeof(e->client_addr));
    e->tokens = s->o->tokens;
    e->status = MSG_MEMBER_NORMAL;
    e->generation = 1;
    e->version = 1;
    e->ring_version = 1;
    memcpy(e->instance, inst, sizeof(e->instance));
}

/* Member i, a gossip of its own over the simulator's hooks; its first round queued at first_us. */
static int sim_node_start(struct sim *s, const struct buf *table, uint64_t first_us, char *err,
                          size_t err_len)
{
    struct sim_node *n = &s->nodes[s->n];
    struct gossip_settings gs;
    struct gossip_hooks hooks = {
        .send = sim_hook_send,
        .find = sim_hook_find,
        .dial = sim_hook_dial,
        .removed = sim_hook_removed,
        .id_in_use = sim_hook_id_in_use,
        .now = sim_hook_now,
        .changed = sim_hook_changed,
        .ctx = n,
    };
    int rc;

    memset(n, 0, sizeof(*n));
    n->sim = s;
    n->index = (uint32_t)s->n;
    sim_name(n->index, n->id, sizeof(n->id), n->addr, sizeof(n->addr));
    memset(&gs, 0, sizeof(gs));
    snprintf(gs.id, sizeof(gs.id), "%s", n->id);
    sim_rack_client(n->index, gs.rack, sizeof(gs.rack), gs.client_addr, sizeof(gs.client_addr));
    gs.tokens = s->o->tokens;
    gs.interval_ms = s->o->interval_ms;
    snprintf(gs.peer_addr, sizeof(gs.peer_addr), "%s", n->addr);
    if (table == NULL) { /* the joiner: through the first member */
        char id0[16];
        sim_name(0, id0, sizeof(id0), gs.seeds[0], sizeof(gs.seeds[0]));
        gs.n_seeds = 1;
    } else {
        gs.table = buf_data(table);
        gs.table_len = table->len;
    }
    gs.seed = sim_rand(s) | 1;
    rc = gossip_create(&n->g, &gs, &hooks, err, err_len);
    if (rc != 0) {
        return rc;
    }
    s->n++;
    return sim_push(s, (struct sim_ev){.kind = SIM_ROUND, .t_us = first_us, .to = n->index});
}

static int sim_entry_cmp(const void *a, const void *b)
{
    return strcmp(((const struct msg_member *)a)->id, ((const struct msg_member *)b)->id);
}

/*
 * The formed cluster: every member holding every entry, linked to every
 * other.  The table goes in id order, the member table's own, so that
 * restoring it appends rather than inserts.
 */
static int sim_form(struct sim *s, char *err, size_t err_len)
{
    size_t n = s->o->nodes;
    struct msg_member *all = calloc(n, sizeof(*all));
    struct buf table;
    int rc;

    if (all == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        sim_entry(s, (uint32_t)i, &all[i]);
    }
    qsort(all, n, sizeof(*all), sim_entry_cmp);
    buf_init(&table, 0);
    rc = msg_members_encode(all, n, &table);
    free(all);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = sim_node_start(s, &table, sim_rand(s) % (s->o->interval_ms * 1000), err, err_len);
    }
    buf_free(&table);
    for (size_t a = 0; rc == 0 && a < n; a++) {
        for (size_t b = a + 1; b < n; b++) {
            sim_link_set(s, a, b, true);
        }
    }
    return rc;
}

/* --- running --------------------------------------------------------------------- */

/* What a member holds of the crashed member: the inputs of its detector. */
struct sim_view {
    bool held;
    uint64_t version, heard_ms;
};

static struct sim_view sim_victim_view(const struct sim *s, const struct sim_node *n)
{
    const struct member *mb;

    if (s->victim == SIZE_MAX || s->o->trace == NULL) {
        return (struct sim_view){0};
    }
    mb = membership_find(gossip_members(n->g), s->nodes[s->victim].id);
    if (mb == NULL) {
        return (struct sim_view){0};
    }
    return (struct sim_view){.held = true, .version = mb->e.version, .heard_ms = mb->heard_ms};
}

/*
 * After a crash, each arrival a delivery fed to a member's detector of the
 * crashed member: the version it now holds, how many beats that skipped,
 * the detector's mean interval afterwards, and the time the arrival was
 * taken as (its delivery, or earlier for a relayed version dated from the
 * member's last PING: membership.h).
 */
static void sim_trace_arrival(const struct sim *s, const struct sim_node *to,
                              const struct sim_node *from, const struct sim_view *before)
{
    struct sim_view now = sim_victim_view(s, to);
    const struct member *mb;

    if (!before->held || !now.held || now.heard_ms == before->heard_ms) {
        return;
    }
    mb = membership_find(gossip_members(to->g), s->nodes[s->victim].id);
    sim_trace(s, "%s detector_arrival %s version %llu (+%llu) via %s mean_ms %.0f at %.3f", to->id,
              s->nodes[s->victim].id, (unsigned long long)now.version,
              (unsigned long long)(now.version - before->version), from->id,
              detector_mean(&mb->det), (double)now.heard_ms / 1000.0);
}

/* A message arrives: the peer layer answers a ping, then gossip takes it. */
static void sim_deliver(struct sim *s, const struct sim_ev *ev)
{
    struct sim_node *to = &s->nodes[ev->to], *from = &s->nodes[ev->from];
    struct sim_view before;
    struct msg m;

    if (to->crashed || msg_decode(ev->bytes, ev->len, &m) != 0) {
        return;
    }
    before = sim_victim_view(s, to);
    sim_trace(s, "deliver %s->%s %s %u", from->id, to->id, msg_type_name((int)m.type), ev->len);
    if (m.type == MSG_PING) {
        struct msg pong = {.type = MSG_PONG, .u.ping = m.u.ping};
        sim_hook_send(to, sim_peer_of(from), &pong);
    }
    gossip_message(to->g, sim_peer_of(from), from->id, &m);
    msg_free(&m);
    sim_trace_arrival(s, to, from, &before);
}

static void sim_step(struct sim *s)
{
    struct sim_ev ev = sim_pop(s);
    struct sim_node *to = &s->nodes[ev.to];

    s->now_us = ev.t_us;
    s->r->events++;
    switch (ev.kind) {
    case SIM_ROUND:
        if (!to->crashed) {
            gossip_round(to->g);
            s->r->node_rounds++;
            sim_push(s, (struct sim_ev){.kind = SIM_ROUND,
                                        .t_us = ev.t_us + s->o->interval_ms * 1000,
                                        .to = ev.to});
        }
        break;
    case SIM_DELIVER:
        sim_deliver(s, &ev);
        free(ev.bytes);
        break;
    case SIM_IDENT:
        if (!to->crashed && sim_link_get(s, ev.to, ev.from)) {
            gossip_peer_identified(to->g, sim_peer_of(&s->nodes[ev.from]), s->nodes[ev.from].id);
        }
        break;
    }
}

/* Run every event before until_us (virtual); the clock ends at until_us. */
static void sim_run_until(struct sim *s, uint64_t until_us)
{
    while (s->rc == 0 && s->n_heap > 0 && s->heap[0].t_us < until_us) {
        sim_step(s);
    }
    s->now_us = s->rc == 0 ? until_us : s->now_us;
}

/* Run until *seen reaches want or give_up_us passes; the phase's figures from start_us. */
static void sim_wait(struct sim *s, const size_t *seen, size_t want, uint64_t start_us,
                     double bound_rounds, struct gossip_sim_phase *ph)
{
    uint64_t iv = s->o->interval_ms * 1000;
    uint64_t give_up = start_us + (uint64_t)(bound_rounds * SIM_GIVE_UP_FACTOR * (double)iv);

    while (s->rc == 0 && *seen < want && s->n_heap > 0 && s->heap[0].t_us < give_up) {
        sim_step(s);
    }
    ph->done = *seen >= want && (double)(s->now_us - start_us) <= bound_rounds * (double)iv;
    ph->seconds = (double)(s->now_us - start_us) / 1e6;
    ph->rounds = (double)(s->now_us - start_us) / (double)iv;
    ph->bound_rounds = bound_rounds;
}

/* Whether every live member sees every live one up and holds the ring they report. */
static bool sim_converged(const struct sim *s)
{
    size_t live = 0, agree, up;

    for (size_t i = 0; i < s->n; i++) {
        live += !s->nodes[i].crashed;
    }
    for (size_t i = 0; i < s->n; i++) {
        if (!s->nodes[i].crashed && (!gossip_converged(s->nodes[i].g, &agree, &up) || up != live)) {
            return false;
        }
    }
    return true;
}

static double sim_log2_bound(size_t n)
{
    return 2.0 * log2((double)n) + 10.0;
}

/* The partition: cut at cut_ms, healed at heal_ms, then checked once a round until converged. */
static void sim_partition(struct sim *s)
{
    const struct gossip_sim_opts *o = s->o;
    uint64_t iv = o->interval_ms * 1000, heal = o->heal_ms * 1000;
    struct gossip_sim_phase *ph = &s->r->partition;
    bool ok = false;

    sim_run_until(s, o->cut_ms * 1000);
    s->cut = true;
    sim_trace(s, "partition n%zu-n%zu|n%zu-n%zu", o->a_lo, o->a_hi, o->b_lo, o->b_hi);
    sim_run_until(s, heal);
    s->cut = false;
    sim_trace(s, "heal");
    /* a member seen down is dialled again at most once a second (gossip.c) */
    ph->bound_rounds = 1000.0 / (double)o->interval_ms + sim_log2_bound(s->n);
    while (s->rc == 0 && !ok &&
           s->now_us - heal < (uint64_t)(ph->bound_rounds * SIM_GIVE_UP_FACTOR * iv)) {
        sim_run_until(s, s->now_us + iv);
        ok = sim_converged(s);
    }
    ph->seconds = (double)(s->now_us - heal) / 1e6;
    ph->rounds = (double)(s->now_us - heal) / (double)iv;
    ph->done = ok && ph->rounds <= ph->bound_rounds;
}

/* A new member joins through n0: until every member of the cluster holds its entry. */
static int sim_join(struct sim *s, char *err, size_t err_len)
{
    uint64_t start = s->now_us;
    int rc;

    s->joiner = s->n;
    s->seen_join = 0;
    sim_trace(s, "join n%zu", s->joiner);
    rc = sim_node_start(s, NULL, s->now_us, err, err_len);
    if (rc != 0) {
        return rc;
    }
    snprintf(s->r->joiner, sizeof(s->r->joiner), "%s", s->nodes[s->joiner].id);
    s->r->join_run = true;
    sim_wait(s, &s->seen_join, s->joiner, start, sim_log2_bound(s->o->nodes), &s->r->join);
    return 0;
}

/* A member (not n0, not the joiner) stops dead: until every live member sees it down. */
static void sim_crash(struct sim *s)
{
    uint64_t start = s->now_us;
    double down_rounds = ceil(DETECTOR_DOWN_PHI_DEFAULT / log10(exp(1.0)));

    s->victim = 1 + (size_t)(sim_rand(s) % (s->o->nodes - 1));
    s->seen_down = 0;
    s->nodes[s->victim].crashed = true;
    snprintf(s->r->victim, sizeof(s->r->victim), "%s", s->nodes[s->victim].id);
    sim_trace(s, "crash %s", s->r->victim);
    sim_wait(s, &s->seen_down, s->n - 1, start, down_rounds + 10.0, &s->r->crash);
    s->r->crash_run = true;
}

/* The cluster as it is, under each loss rate for the duration: suspicions of live members. */
static void sim_steady(struct sim *s)
{
    size_t live = 0;
    double node_hours;

    for (size_t i = 0; i < s->n; i++) {
        live += !s->nodes[i].crashed;
    }
    node_hours = (double)live * (double)s->o->duration_ms / 3600000.0;

    for (int k = 0; k < GOSSIP_SIM_FS_LOSSES; k++) {
        s->loss = gossip_sim_fs_losses[k];
        s->fs_phase = k;
        sim_trace(s, "loss %.4f", s->loss);
        sim_run_until(s, s->now_us + s->o->duration_ms * 1000);
        s->r->fs_per_node_hour[k] = (double)s->r->fs_events[k] / node_hours;
    }
    s->fs_phase = -1;
    s->loss = s->o->loss;
    s->r->steady_run = true;
}

/* The formed cluster's first rounds; traffic counted from the second one. */
static void sim_warm_up(struct sim *s)
{
    uint64_t iv = s->o->interval_ms * 1000, counted = GOSSIP_SIM_WARMUP_ROUNDS - 1;

    sim_run_until(s, iv);
    s->counting = true;
    sim_run_until(s, GOSSIP_SIM_WARMUP_ROUNDS * iv);
    s->counting = false;
    s->r->msgs_per_node_round = (double)s->count_msgs / (double)(s->o->nodes * counted);
    s->r->bytes_per_node_round = (double)s->count_bytes / (double)(s->o->nodes * counted);
}

/* A pause between two phases (after is whether one ran before), so one does not run into the next.
 */
static void sim_settle(struct sim *s, bool after)
{
    if (!after) {
        return;
    }
    sim_run_until(s, s->now_us + SIM_SETTLE_ROUNDS * s->o->interval_ms * 1000);
}

static double sim_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sim_phases(struct sim *s, char *err, size_t err_len)
{
    double t0 = sim_wall();
    int rc = sim_form(s, err, err_len);

    s->r->form_seconds = sim_wall() - t0;
    if (rc != 0) {
        return rc;
    }
    sim_warm_up(s);
    if (s->o->partition) {
        sim_partition(s);
    }
    if (s->o->join) {
        sim_settle(s, s->o->partition);
        rc = sim_join(s, err, err_len);
        if (rc != 0) {
            return rc;
        }
    }
    if (s->o->crash) {
        sim_settle(s, s->o->partition || s->o->join);
        sim_crash(s);
    }
    if (s->o->steady) {
        sim_settle(s, s->o->partition || s->o->join || s->o->crash);
        sim_steady(s);
    }
    return s->rc; /* a failure of the simulator's own makes the run's figures no figures */
}

static void sim_free(struct sim *s)
{
    for (size_t i = 0; i < s->n; i++) {
        gossip_destroy(s->nodes[i].g);
    }
    for (size_t i = 0; i < s->n_heap; i++) {
        free(s->heap[i].bytes);
    }
    free(s->heap);
    free(s->nodes);
    free(s->links);
    buf_free(&s->enc);
}

void gossip_sim_opts_init(struct gossip_sim_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->nodes = 10;
    o->seed = 1;
    o->latency_us = 1000;
    o->jitter_us = 500;
    o->interval_ms = 200;
    o->tokens = 1;
    o->duration_ms = 60000;
    o->join = o->crash = o->steady = true;
}

/*
 * The chunk glibc's malloc takes for a request of len bytes: its 8-byte
 * header, rounded up to 16, at least 32.  Each entry's strings are one.
 */
static uint64_t sim_chunk(size_t len)
{
    size_t chunk = (len + 8 + 15) & ~(size_t)15;
    return chunk < 32 ? 32 : chunk;
}

/*
 * Each of the n = nodes + 1 members (the joiner included) holds a table of
 * n entries: a struct member, its search key and one chunk of strings
 * each; the ring in force and, while the joiner is joining, the target
 * ring (ring_heap_bytes()); and its gossip settings.  The simulator adds
 * its link bitmap and the messages in flight: each member sends about 2n
 * a round (a ping to every other and the answers to theirs, and an
 * exchange), each one an event in the queue (whose array doubles) and a
 * copy of its bytes, SIM_INFLIGHT_BYTES in all, and a message is in flight
 * for up to latency plus jitter: a few megabytes at the defaults (1.5 ms
 * of a 200 ms round), but gigabytes when the latency is many rounds long.
 * Measured against the peak RSS of runs in the README.
 */
uint64_t gossip_sim_memory_estimate(const struct gossip_sim_opts *o)
{
    uint64_t n = o->nodes + 1, strings = 0, names = 0, table;
    char id[16], peer[32], rack[16], client[32];
    double rounds_in_flight =
        (double)(o->latency_us + o->jitter_us) / (double)(o->interval_ms * 1000);

    for (uint32_t i = 0; i < n; i++) {
        sim_name(i, id, sizeof(id), peer, sizeof(peer));
        sim_rack_client(i, rack, sizeof(rack), client, sizeof(client));
        strings += sim_chunk(strlen(id) + strlen(rack) + strlen(peer) + strlen(client) + 4);
        names += strlen(id) + 1 + (i < 3 ? strlen(rack) + 1 : 0);
    }
    table = n * (sizeof(struct member) + sizeof(uint64_t)) + strings +
            2 * ring_heap_bytes(n, n < 3 ? n : 3, o->tokens, names);
    return n * (table + sizeof(struct gossip_settings)) + n * n / 8 +
           (uint64_t)((double)n * (double)(2 * n + 4) * rounds_in_flight * SIM_INFLIGHT_BYTES);
}

int gossip_sim_run(const struct gossip_sim_opts *o, struct gossip_sim_result *out, char *err,
                   size_t err_len)
{
    struct sim s = {.o = o, .rng = o->seed, .loss = o->loss, .fs_phase = -1, .r = out};
    double t0 = sim_wall();
    struct rusage ru;
    int rc;

    memset(out, 0, sizeof(*out));
    if (err_len > 0) {
        err[0] = '\0';
    }
    out->nodes = o->nodes;
    out->duration_s = (double)o->duration_ms / 1000.0;
    out->estimate_bytes = gossip_sim_memory_estimate(o);
    if (o->partition &&
        (o->cut_ms < GOSSIP_SIM_WARMUP_ROUNDS * o->interval_ms || o->heal_ms <= o->cut_ms)) {
        snprintf(
            err, err_len,
            "the partition must start no sooner than the end of the warm-up (%llu ms), and heal "
            "after it starts",
            (unsigned long long)(GOSSIP_SIM_WARMUP_ROUNDS * o->interval_ms));
        return RK_EINVAL;
    }
    s.joiner = s.victim = SIZE_MAX;
    s.cap = o->nodes + 1;
    buf_init(&s.enc, 0);
    s.nodes = calloc(s.cap, sizeof(*s.nodes));
    s.links = calloc((s.cap * s.cap + 7) / 8, 1);
    rc = s.nodes == NULL || s.links == NULL ? RK_ENOMEM : sim_phases(&s, err, err_len);
    if (rc != 0 && err_len > 0 && err[0] == '\0') {
        snprintf(err, err_len, "%s", rc == RK_ENOMEM ? "out of memory" : rk_strerror(rc));
    }
    out->virtual_seconds = (double)s.now_us / 1e6;
    out->wall_seconds = sim_wall() - t0;
    sim_free(&s);
    getrusage(RUSAGE_SELF, &ru);
    out->maxrss_kb = ru.ru_maxrss;
    return rc;
}
