/*
 * membership.c - the member table and the ring derived from it
 * (membership.h).
 *
 * What it owns: an array of entries (struct member) sorted by id in ring
 * id order (memcmp, a shorter prefix first: PLACEMENT.md section 4), our
 * own among them at index `self`; each entry's strings, one allocation an
 * entry (struct member_entry), which a change of the entry's strings
 * replaces and a change of its numbers keeps; a reference to the ring in
 * force, built from them; the ring listeners; and the rotation and news cursors of
 * membership_digests().
 *
 * Invariants, true whenever a public function returns:
 *   - ids are unique and sorted, so lookups are binary searches and two
 *     tables holding the same entries hold them in the same order;
 *   - the ring was built by ring_create() from the entries whose status
 *     is normal or leaving, with their id, rack and tokens;
 *   - our own entry's digest field is that ring's digest;
 *   - every function that fails leaves the table as it was: a merge whose
 *     ring cannot be built is undone, a restore is all or nothing;
 *   - every entry's strings are its own allocation: a replaced one is
 *     freed once the change that replaced it stands, a new one when the
 *     change is undone.
 *
 * Merging.  An entry replaces ours of the same id when its (generation,
 * version) is greater, lexicographically; otherwise it is ignored.  That
 * is a max over a total order, so the table is the same whatever order
 * the entries arrive in.  The ring is rebuilt only when a known entry's
 * rack, tokens or status changed, or a new entry is in the ring set; a
 * heartbeat keeps the ring (and its pointer).  A restore merges every
 * saved entry first and rebuilds once.  When the rebuilt ring has a new
 * digest, our entry's digest field changes, which is a change of our
 * entry: its version grows by one, so gossip carries the news that we
 * hold the new ring.  The epoch is computed when asked: the sum, modulo
 * 2^64, of every entry's ring_version, ours included.
 *
 * The ring in force.  The ring's digest (ring.h, computed by ring_create())
 * names it.  membership_ring_install() is the only place a ring is put in
 * force: a rebuilt ring with the digest of the one in force is dropped (a
 * rebuild that changes no placement, such as a joining member removed, is
 * no ring change); any other is installed and every listener called with
 * (old, new) before the table drops its reference to old.  Listeners may
 * read the table and take references, never change it (asserted).
 *
 * Failure detection.  Every entry but ours has a detector (detector.h).
 * Arrivals are: a merge of a newer entry written by the member (a new
 * generation restarts its detector; a removal, written by another node,
 * is no arrival), and membership_heard().  membership_detect()
 * turns the detectors into states, except for members whose status is
 * left or removed: those have stopped sending heartbeats on purpose or
 * were declared gone, so their state stays what it was when they got that
 * status and tells how they went.
 */
#include "membership.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

/* First allocation of the entry array; it doubles from there to MEMBERSHIP_MAX. */
#define MEMBERSHIP_CAP_INITIAL 16
/* Bytes an id field occupies, terminator included: the bound of every id compare. */
#define MEMBERSHIP_ID_SIZE (RING_NAME_MAX + 1)

const char *const membership_status_names[MSG_MEMBER_STATUS_MAX + 1] = {
    [MSG_MEMBER_JOINING] = "joining", [MSG_MEMBER_NORMAL] = "normal",
    [MSG_MEMBER_LEAVING] = "leaving", [MSG_MEMBER_LEFT] = "left",
    [MSG_MEMBER_REMOVED] = "removed",
};

struct membership {
    uint8_t seed[RING_SEED_LEN];
    uint64_t heartbeat_ms;  /* the interval every member's detector starts from */
    struct member *members; /* n entries sorted by id, room for cap */
    uint64_t *keys;         /* keys[i]: membership_key() of members[i].e.id; room for cap */
    size_t n, cap;
    size_t self;               /* index of our own entry */
    const struct ring *ring;   /* in force; one reference held; from the entries in the ring set */
    const struct ring *target; /* the target ring; one reference held (ring itself when equal) */
    size_t rotation;           /* the other entry membership_digests() offers first */
    size_t news_from;          /* the other entry membership_digests() looks at first for news */
    bool deferring;            /* between membership_defer() and membership_commit() */
    bool ring_stale;           /* an entry changed that the ring does not reflect yet */
    bool installing;           /* ring listeners are being called */
    bool returning_joins;      /* membership_returning_joins() */
    struct membership_listener {
        membership_ring_fn fn;
        void *ctx;
    } listeners[MEMBERSHIP_LISTENERS_MAX];
    size_t n_listeners;
};

/*
 * How to take back one entry put into the table, when the ring cannot
 * follow (membership_undo()), or let it stand (membership_undo_forget()):
 * old's strings, when the change replaced them, are freed then.
 */
struct membership_undo {
    size_t pos;
    bool added;
    struct member old; /* the entry replaced, when not added */
};

/* A copy of the entries, to put back when a restore fails half-way. */
struct membership_snapshot {
    struct member *members;
    size_t n, self;
};

/* What membership_answer() has gathered so far, and its bounds. */
struct membership_reply {
    struct msg_member *entries;
    size_t max_entries, n_entries;
    struct msg_digest *requests;
    size_t max_requests, n_requests;
    uint8_t mentioned[(MEMBERSHIP_MAX + CHAR_BIT - 1) / CHAR_BIT]; /* by our index */
    uint8_t answered[(MEMBERSHIP_MAX + CHAR_BIT - 1) / CHAR_BIT];  /* the same, once answered */
};

/* Bit i of a membership_reply bitmap. */
static bool membership_bit(const uint8_t *map, size_t i)
{
    return (map[i / CHAR_BIT] & (1u << (i % CHAR_BIT))) != 0;
}

static void membership_bit_set(uint8_t *map, size_t i)
{
    map[i / CHAR_BIT] |= (uint8_t)(1u << (i % CHAR_BIT));
}

bool membership_in_ring(uint32_t status)
{
    return status == MSG_MEMBER_NORMAL || status == MSG_MEMBER_LEAVING;
}

bool membership_in_target(uint32_t status)
{
    return status == MSG_MEMBER_NORMAL || status == MSG_MEMBER_JOINING;
}

/* Whether membership_detect() follows a member of this status (top of file). */
static bool membership_tracked(uint32_t status)
{
    return status != MSG_MEMBER_LEFT && status != MSG_MEMBER_REMOVED;
}

/*
 * Ring id order: strncmp's (bytes as unsigned char, a prefix before its
 * extensions: memcmp order with a shorter prefix first), written out so
 * that it inlines: every message heard searches the table with it.
 */
static int membership_id_cmp(const char *a, const char *b)
{
    for (size_t i = 0; i < MEMBERSHIP_ID_SIZE; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x != y) {
            return x < y ? -1 : 1;
        }
        if (x == '\0') {
            return 0;
        }
    }
    return 0;
}

/*
 * An id's first 8 bytes as a big-endian number, zero past its end: keys
 * order as their ids do (membership_id_cmp()), and equal keys need the
 * full compare unless the last byte of the key is 0: then both ids ended
 * within their first 8 bytes and the keys hold them whole.  The search runs over this compact array
 * rather than the entries (a kilobyte or more apart), so finding the sender of each message costs
 * one cache miss, not one per step.
 */
static uint64_t membership_key(const char *id)
{
    uint64_t k = 0;
    bool ended = false;

    for (size_t i = 0; i < 8; i++) {
        unsigned char c = ended ? 0 : (unsigned char)id[i];
        ended = c == '\0';
        k = (k << 8) | c;
    }
    return k;
}

/* Recompute keys[from..n) from the entries. */
static void membership_keys_fix(struct membership *m, size_t from)
{
    for (size_t i = from; i < m->n; i++) {
        m->keys[i] = membership_key(m->members[i].e.id);
    }
}

/* (gen_a, ver_a) > (gen_b, ver_b), lexicographically. */
static bool membership_newer(uint64_t gen_a, uint64_t ver_a, uint64_t gen_b, uint64_t ver_b)
{
    return gen_a > gen_b || (gen_a == gen_b && ver_a > ver_b);
}

/*
 * A counter one step on, held at UINT64_MAX rather than wrapped to 0,
 * which would make our newest entry the oldest.  A member that gets there
 * (only by asserting itself over a peer's absurd version) needs a restart,
 * a new generation, to be heard again.
 */
static uint64_t membership_next(uint64_t v)
{
    return v == UINT64_MAX ? v : v + 1;
}

_Static_assert(RING_NAME_MAX <= UINT8_MAX, "an id's or rack's length fits member_entry's uint8_t");
_Static_assert(MSG_ADDR_MAX <= UINT16_MAX, "an address's length fits member_entry's uint16_t");

/*
 * The four strings of e in one allocation of their exact lengths,
 * "id\0rack\0peer_addr\0client_addr\0" (struct member_entry); NULL on no
 * memory.  Each is read only up to its field's size.
 */
static char *membership_strings_make(const struct msg_member *e)
{
    const char *from[4] = {e->id, e->rack, e->peer_addr, e->client_addr};
    size_t len[4] = {strnlen(e->id, sizeof(e->id) - 1), strnlen(e->rack, sizeof(e->rack) - 1),
                     strnlen(e->peer_addr, sizeof(e->peer_addr) - 1),
                     strnlen(e->client_addr, sizeof(e->client_addr) - 1)};
    char *s = malloc(len[0] + len[1] + len[2] + len[3] + 4);
    char *at = s;

    for (size_t i = 0; s != NULL && i < 4; i++) {
        memcpy(at, from[i], len[i]);
        at[len[i]] = '\0';
        at += len[i] + 1;
    }
    return s;
}

/* Whether e's strings are those entry a holds: then a merge of e keeps a's allocation. */
static bool membership_strings_same(const struct member_entry *a, const struct msg_member *e)
{
    return strncmp(a->id, e->id, sizeof(e->id)) == 0 &&
           strncmp(membership_entry_rack(a), e->rack, sizeof(e->rack)) == 0 &&
           strncmp(membership_entry_peer_addr(a), e->peer_addr, sizeof(e->peer_addr)) == 0 &&
           strncmp(membership_entry_client_addr(a), e->client_addr, sizeof(e->client_addr)) == 0;
}

/* dst holds e's fields, its strings at s (membership_strings_make() of e, or ones the same). */
static void membership_entry_set(struct member_entry *dst, const struct msg_member *e,
                                 const char *s)
{
    dst->id = s;
    dst->id_len = (uint8_t)strlen(s);
    dst->rack_len = (uint8_t)strlen(membership_entry_rack(dst));
    dst->peer_addr_len = (uint16_t)strlen(membership_entry_peer_addr(dst));
    dst->generation = e->generation;
    dst->version = e->version;
    dst->ring_version = e->ring_version;
    dst->digest = e->digest;
    dst->target = e->target;
    memcpy(dst->instance, e->instance, sizeof(dst->instance));
    dst->tokens = e->tokens;
    dst->target_tokens = e->target_tokens;
    dst->status = e->status;
}

void membership_entry_get(struct msg_member *out, const struct member_entry *e)
{
    memset(out, 0, sizeof(*out));
    snprintf(out->id, sizeof(out->id), "%s", e->id);
    snprintf(out->rack, sizeof(out->rack), "%s", membership_entry_rack(e));
    snprintf(out->peer_addr, sizeof(out->peer_addr), "%s", membership_entry_peer_addr(e));
    snprintf(out->client_addr, sizeof(out->client_addr), "%s", membership_entry_client_addr(e));
    out->generation = e->generation;
    out->version = e->version;
    out->ring_version = e->ring_version;
    out->digest = e->digest;
    out->target = e->target;
    memcpy(out->instance, e->instance, sizeof(out->instance));
    out->tokens = e->tokens;
    out->target_tokens = e->target_tokens;
    out->status = e->status;
}

/*
 * Binary search for id: true with *pos its index, or false with *pos the
 * index it would be inserted at.
 */
static bool membership_search(const struct membership *m, const char *id, size_t *pos)
{
    size_t lo = 0;
    size_t hi = m->n;
    uint64_t k = membership_key(id);

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = m->keys[mid] < k   ? -1
                : m->keys[mid] > k ? 1
                : (k & 0xff) == 0  ? 0 /* the id ends within its key: the key is all of it */
                                   : membership_id_cmp(m->members[mid].e.id, id);

        if (c == 0) {
            *pos = mid;
            return true;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *pos = lo;
    return false;
}

/* Whether going from a to b changes anything the ring is built from. */
static bool membership_ring_fields_differ(const struct member_entry *a, const struct msg_member *b)
{
    return a->status != b->status || a->tokens != b->tokens ||
           a->target_tokens != b->target_tokens ||
           membership_id_cmp(membership_entry_rack(a), b->rack) != 0;
}

unsigned membership_news_syns(size_t n)
{
    unsigned bits = 0;

    while (bits < 64 && (n >> bits) != 0) {
        bits++; /* ceil(log2(n + 1)) is the bit length of n */
    }
    return 3 * bits;
}

/* Whether going from a to e is news (membership_digests()): more than a new version. */
static bool membership_is_news(const struct member_entry *a, const struct msg_member *e)
{
    return a->generation != e->generation || a->ring_version != e->ring_version ||
           membership_ring_fields_differ(a, e) || !membership_strings_same(a, e) ||
           memcmp(a->instance, e->instance, sizeof(a->instance)) != 0;
}

/*
 * Room for need entries, need <= MEMBERSHIP_MAX: the array doubles, but
 * not past limit (need itself: exactly that much room), as grow.h says.
 * RK_ENOMEM.
 */
static int membership_room(struct membership *m, size_t need, size_t limit)
{
    size_t cap;
    uint64_t *keys;
    int rc;

    if (need <= m->cap) {
        return 0;
    }
    cap = m->cap;
    rc = grow_array_max(&m->members, &cap, need, limit, sizeof(*m->members));
    keys = rc == 0 ? realloc(m->keys, cap * sizeof(*m->keys)) : NULL;
    if (keys == NULL) {
        return rc != 0 ? rc : RK_ENOMEM; /* the entries' room grew; the next call grows keys */
    }
    m->keys = keys;
    m->cap = cap;
    return 0;
}

/* Room for one more entry: RK_ETOOBIG at MEMBERSHIP_MAX, RK_ENOMEM. */
static int membership_reserve(struct membership *m)
{
    if (m->n >= MEMBERSHIP_MAX) {
        return RK_ETOOBIG;
    }
    return membership_room(m, m->n + 1, MEMBERSHIP_MAX);
}

/* Insert e at pos (from membership_search()), first heard at now_ms. */
static int membership_insert(struct membership *m, size_t pos, const struct msg_member *e,
                             uint64_t now_ms)
{
    struct member *mb;
    char *strings;
    int rc = membership_reserve(m);

    if (rc != 0) {
        return rc;
    }
    strings = membership_strings_make(e);
    if (strings == NULL) {
        return RK_ENOMEM;
    }
    memmove(&m->members[pos + 1], &m->members[pos], (m->n - pos) * sizeof(*mb));
    memmove(&m->keys[pos + 1], &m->keys[pos], (m->n - pos) * sizeof(*m->keys));
    m->keys[pos] = membership_key(e->id);
    m->n++;
    if (pos <= m->self) {
        m->self++;
    }
    mb = &m->members[pos];
    memset(mb, 0, sizeof(*mb));
    membership_entry_set(&mb->e, e, strings);
    detector_init(&mb->det, m->heartbeat_ms, now_ms);
    mb->state = DETECTOR_ALIVE;
    mb->heard_ms = now_ms;
    return 0;
}

/* Take out the entry at pos (never ours), strings and all: the undo of membership_insert(). */
static void membership_erase(struct membership *m, size_t pos)
{
    free((char *)m->members[pos].e.id);
    memmove(&m->members[pos], &m->members[pos + 1], (m->n - pos - 1) * sizeof(m->members[0]));
    memmove(&m->keys[pos], &m->keys[pos + 1], (m->n - pos - 1) * sizeof(m->keys[0]));
    m->n--;
    if (pos < m->self) {
        m->self--;
    }
}

/* A new ring from the entries in the ring set (target: the target set). */
static int membership_ring_build(const struct membership *m, bool target, struct ring **out)
{
    struct ring_member *rm = malloc(m->n * sizeof(*rm));
    size_t k = 0;
    int rc;

    if (rm == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++) {
        const struct member_entry *e = &m->members[i].e;

        if (target ? membership_in_target(e->status) : membership_in_ring(e->status)) {
            rm[k].id = e->id;
            rm[k].rack = membership_entry_rack(e);
            rm[k].tokens = target && e->target_tokens != 0 ? e->target_tokens : e->tokens;
            k++;
        }
    }
    rc = ring_create(out, m->seed, rm, k);
    free(rm);
    return rc;
}

/*
 * Put r in force: the one place a ring is installed.  A ring with the
 * digest of the one in force is the same ring (ring.h): it is dropped and
 * the ring in force stays, so no listener hears of a change that is none.
 * Otherwise every listener is called with (old, new) while the table still
 * holds its reference to old, which is dropped only afterwards: a listener
 * that wants old for longer takes its own reference.  Takes over the
 * caller's reference to r.
 */
static void membership_ring_install(struct membership *m, struct ring *r)
{
    const struct ring *old = m->ring;

    if (old != NULL && ring_digest(old) == ring_digest(r)) {
        ring_unref(r);
        return;
    }
    m->ring = r;
    m->installing = true;
    for (size_t i = 0; old != NULL && i < m->n_listeners; i++) {
        m->listeners[i].fn(m->listeners[i].ctx, old, r);
    }
    m->installing = false;
    ring_unref(old);
}

/*
 * Build the ring of the current entries and put it in force, with its
 * digest also into our entry's digest field; *self_changed says whether
 * that field changed.  Our version is the caller's to bump: a change that
 * already bumps it must not bump it twice.  On error nothing changed.
 */
static int membership_ring_rebuild(struct membership *m, bool *self_changed)
{
    struct member_entry *self = &m->members[m->self].e;
    struct ring *r, *t = NULL;
    bool moving = false;
    int rc;

    assert(!m->installing && "membership: a ring listener changed the table");
    for (size_t i = 0; i < m->n && !moving; i++) {
        uint32_t st = m->members[i].e.status;
        moving = st == MSG_MEMBER_JOINING || st == MSG_MEMBER_LEAVING ||
                 (m->members[i].e.target_tokens != 0 && membership_in_target(st));
    }
    rc = membership_ring_build(m, false, &r);
    if (rc != 0) {
        return rc;
    }
    if (moving && (rc = membership_ring_build(m, true, &t)) != 0) {
        ring_unref(r);
        return rc;
    }
    membership_ring_install(m, r);
    ring_unref(m->target);
    m->target = t != NULL && ring_digest(t) != ring_digest(m->ring) ? t : ring_ref(m->ring);
    if (m->target != t) {
        ring_unref(t);
    }
    m->ring_stale = false;
    *self_changed = self->digest != ring_digest(m->ring) || self->target != ring_digest(m->target);
    self->digest = ring_digest(m->ring);
    self->target = ring_digest(m->target);
    return 0;
}

/* Our entry's digest field changed: a change of our entry. */
static void membership_self_touch(struct membership *m, bool changed)
{
    if (changed) {
        m->members[m->self].e.version = membership_next(m->members[m->self].e.version);
    }
}

int membership_create(struct membership **out, const uint8_t seed[RING_SEED_LEN],
                      const struct msg_member *self, uint64_t heartbeat_ms, uint64_t now_ms)
{
    struct ring_member rm;
    struct membership *m;
    char *strings;
    bool self_changed;
    int rc;

    assert(out != NULL && seed != NULL && self != NULL && "membership_create: NULL argument");
    assert(heartbeat_ms > 0 && heartbeat_ms <= DETECTOR_INTERVAL_SLOT_MAX &&
           "membership_create: heartbeat_ms must be 1 .. DETECTOR_INTERVAL_SLOT_MAX");
    rm.id = self->id;
    rm.rack = self->rack;
    rm.tokens = self->tokens;
    rc = ring_member_check(&rm, NULL);
    if (rc != 0) {
        return rc;
    }
    if (!msg_member_valid(self)) {
        return RK_EINVAL;
    }
    m = calloc(1, sizeof(*m));
    if (m == NULL) {
        return RK_ENOMEM;
    }
    m->members = calloc(MEMBERSHIP_CAP_INITIAL, sizeof(*m->members));
    m->keys = calloc(MEMBERSHIP_CAP_INITIAL, sizeof(*m->keys));
    strings = membership_strings_make(self);
    if (m->members == NULL || m->keys == NULL || strings == NULL) {
        rc = RK_ENOMEM;
        goto out_free_table;
    }
    memcpy(m->seed, seed, RING_SEED_LEN);
    m->heartbeat_ms = heartbeat_ms;
    m->cap = MEMBERSHIP_CAP_INITIAL;
    m->n = 1;
    membership_entry_set(&m->members[0].e, self, strings);
    membership_keys_fix(m, 0);
    detector_init(&m->members[0].det, heartbeat_ms, now_ms);
    m->members[0].state = DETECTOR_ALIVE;
    /* The digest written into a new entry is not a change: nobody has seen it yet. */
    rc = membership_ring_rebuild(m, &self_changed);
    if (rc != 0) {
        goto out_free_table;
    }
    *out = m;
    return 0;

out_free_table:
    free(strings);
    free(m->members);
    free(m->keys);
    free(m);
    return rc;
}

void membership_destroy(struct membership *m)
{
    if (m == NULL) {
        return;
    }
    ring_unref(m->target);
    ring_unref(m->ring);
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->members[i].e.id);
    }
    free(m->members);
    free(m->keys);
    free(m);
}

size_t membership_count(const struct membership *m)
{
    return m->n;
}

const struct member *membership_at(const struct membership *m, size_t i)
{
    assert(i < m->n && "membership_at: index out of range");
    return &m->members[i];
}

const struct member *membership_find(const struct membership *m, const char *id)
{
    size_t pos;

    return membership_search(m, id, &pos) ? &m->members[pos] : NULL;
}

const struct member *membership_self(const struct membership *m)
{
    return &m->members[m->self];
}

/*
 * When a relayed entry e of member mb was written, at the latest
 * (membership.h, Failure detection): for a version above the one its PING
 * told us in the same generation, by at most MEMBERSHIP_DATED_VERSIONS_MAX,
 * one interval per version after that PING, never later than now;
 * otherwise now.
 */
static uint64_t membership_dated(const struct membership *m, const struct member *mb,
                                 const struct msg_member *e, uint64_t now_ms)
{
    uint64_t k;

    if (mb->told_version == 0 || e->generation != mb->told_generation ||
        e->version <= mb->told_version) {
        return now_ms;
    }
    k = e->version - mb->told_version;
    if (k > MEMBERSHIP_DATED_VERSIONS_MAX || now_ms <= mb->told_ms ||
        k >= (now_ms - mb->told_ms) / m->heartbeat_ms) {
        return now_ms;
    }
    return mb->told_ms + k * m->heartbeat_ms;
}

/*
 * A newer entry of a known member is a heartbeat arrival.  In the same
 * generation its version grew: one more interval for the detector.  A new
 * generation is a restart, a new life: the old intervals (and the downtime
 * between the lives) say nothing about the new one, so the detector starts
 * afresh, as Cassandra's does.  A removal is written by another node, so
 * it says nothing about the member's own heartbeats.  Nor does a version
 * at or below the heartbeat the member told us of directly (membership.h,
 * Failure detection): the entry is taken, the detector hears nothing.
 */
static void membership_arrival(const struct membership *m, struct member *mb,
                               const struct msg_member *e, uint64_t now_ms)
{
    bool told = mb->told_version != 0 &&
                !membership_newer(e->generation, e->version, mb->told_generation, mb->told_version);
    uint64_t at = membership_dated(m, mb, e, now_ms);

    if (e->generation > mb->e.generation && !told) {
        detector_init(&mb->det, m->heartbeat_ms, now_ms);
        at = now_ms;
    } else if (e->version > mb->e.version && e->status != MSG_MEMBER_REMOVED && !told &&
               at > mb->det.last_ms) {
        detector_heartbeat(&mb->det, at);
    } else {
        return;
    }
    mb->heard_ms = at;
}

/*
 * Put e, newer than what we hold and not ours, into the table at pos
 * (found: replacing the entry there) without touching the ring.  *undo
 * says how to take it back; *affects_ring whether the ring must follow.
 */
static int membership_apply(struct membership *m, const struct msg_member *e, size_t pos,
                            bool found, uint64_t now_ms, struct membership_undo *undo,
                            bool *affects_ring)
{
    struct member *mb;
    const char *strings;

    undo->pos = pos;
    undo->added = !found;
    if (!found) {
        *affects_ring = membership_in_ring(e->status) || membership_in_target(e->status);
        return membership_insert(m, pos, e, now_ms);
    }
    mb = &m->members[pos];
    strings = membership_strings_same(&mb->e, e) ? mb->e.id : membership_strings_make(e);
    if (strings == NULL) {
        return RK_ENOMEM;
    }
    undo->old = *mb;
    *affects_ring = membership_ring_fields_differ(&mb->e, e);
    membership_arrival(m, mb, e, now_ms);
    membership_entry_set(&mb->e, e, strings);
    return 0;
}

/* Take back the change undo records, freeing the strings it brought. */
static void membership_undo(struct membership *m, const struct membership_undo *undo)
{
    if (undo->added) {
        membership_erase(m, undo->pos);
        return;
    }
    if (m->members[undo->pos].e.id != undo->old.e.id) {
        free((char *)m->members[undo->pos].e.id);
    }
    m->members[undo->pos] = undo->old;
}

/* The change undo records stands: free the strings it replaced. */
static void membership_undo_forget(struct membership *m, const struct membership_undo *undo)
{
    if (!undo->added && m->members[undo->pos].e.id != undo->old.e.id) {
        free((char *)undo->old.e.id);
    }
}

int membership_merge(struct membership *m, const struct msg_member *e, uint64_t now_ms,
                     enum membership_merged *merged, bool *ring_changed)
{
    struct membership_undo undo;
    bool found, news, affects_ring = false, self_changed = false;
    size_t pos;
    int rc;

    *merged = MEMBERSHIP_IGNORED;
    *ring_changed = false;
    if (!msg_member_valid(e)) {
        return RK_EINVAL;
    }
    found = membership_search(m, e->id, &pos);
    if (found && pos != m->self && m->returning_joins && membership_in_ring(e->status) &&
        !membership_in_ring(m->members[pos].e.status) &&
        !membership_in_target(m->members[pos].e.status) &&
        e->generation > m->members[pos].e.generation) {
        /*
         * A member we hold as left or removed, back in a new life claiming
         * ranges: its data is not current, and it takes them back only by
         * joining.  Kept out until its entry says joining, which it writes
         * once it hears of its departure (our answer to its SYN).
         */
        return 0;
    }
    if (found && !membership_newer(e->generation, e->version, m->members[pos].e.generation,
                                   m->members[pos].e.version)) {
        struct member_entry *self = &m->members[m->self].e;
        if (pos == m->self && e->generation < self->generation &&
            e->ring_version >= self->ring_version && e->ring_version < UINT64_MAX) {
            self->ring_version = e->ring_version + 1;
            self->version = membership_next(self->version);
            *merged = MEMBERSHIP_RAISED;
        }
        return 0;
    }
    if (found && pos == m->self) {
        *merged = MEMBERSHIP_CONFLICT;
        return 0;
    }
    news = !found || membership_is_news(&m->members[pos].e, e);
    rc = membership_apply(m, e, pos, found, now_ms, &undo, &affects_ring);
    if (rc != 0) {
        return rc;
    }
    if (m->deferring) {
        m->ring_stale |= affects_ring;
    } else if (affects_ring || m->ring_stale) {
        rc = membership_ring_rebuild(m, &self_changed);
        if (rc != 0) {
            membership_undo(m, &undo);
            return rc;
        }
        *ring_changed = true;
        membership_self_touch(m, self_changed);
    }
    membership_undo_forget(m, &undo);
    if (news) {
        m->members[pos].news = (uint8_t)membership_news_syns(m->n);
    }
    *merged = found ? MEMBERSHIP_UPDATED : MEMBERSHIP_ADDED;
    return 0;
}

void membership_defer(struct membership *m)
{
    m->deferring = true;
}

int membership_commit(struct membership *m, bool *ring_changed)
{
    bool self_changed;
    int rc;

    m->deferring = false;
    *ring_changed = false;
    if (!m->ring_stale) {
        return 0;
    }
    rc = membership_ring_rebuild(m, &self_changed);
    if (rc != 0) {
        return rc;
    }
    *ring_changed = true;
    membership_self_touch(m, self_changed);
    return 0;
}

void membership_heard(struct membership *m, const char *id, uint64_t now_ms)
{
    size_t pos;

    assert(id != NULL && "membership_heard: NULL id");
    if (!membership_search(m, id, &pos) || pos == m->self) {
        return;
    }
    detector_heartbeat(&m->members[pos].det, now_ms);
    m->members[pos].heard_ms = now_ms;
}

void membership_told(struct membership *m, const char *id, uint64_t generation, uint64_t version,
                     uint64_t now_ms)
{
    struct member *mb;
    size_t pos;

    assert(id != NULL && "membership_told: NULL id");
    if (version == 0 || !membership_search(m, id, &pos) || pos == m->self) {
        return;
    }
    mb = &m->members[pos];
    if (membership_newer(generation, version, mb->told_generation, mb->told_version)) {
        mb->told_generation = generation;
        mb->told_version = version;
        mb->told_ms = now_ms;
    }
}

void membership_heartbeat(struct membership *m)
{
    struct member_entry *self = &m->members[m->self].e;

    self->version = membership_next(self->version);
}

/*
 * Setting the status we already have changes nothing and bumps nothing:
 * a ring_version bump would move the epoch of an unchanged ring.  On
 * error (RK_EINVAL for an unknown status, RK_ENOMEM) nothing changed.
 */
int membership_set_status(struct membership *m, enum msg_member_status status)
{
    struct member_entry *self = &m->members[m->self].e;
    struct member_entry old = *self;
    bool self_changed;
    int rc;

    if ((unsigned)status > MSG_MEMBER_STATUS_MAX) {
        return RK_EINVAL;
    }
    if (self->status == (uint32_t)status) {
        return 0;
    }
    self->status = status;
    rc = membership_ring_rebuild(m, &self_changed);
    if (rc != 0) {
        *self = old;
        return rc;
    }
    /* One bump covers the status and the digest field: both go out together. */
    self->version = membership_next(self->version);
    self->ring_version = membership_next(self->ring_version);
    return 0;
}

int membership_set_tokens(struct membership *m, uint32_t tokens, uint32_t target_tokens)
{
    struct member_entry *self = &m->members[m->self].e;
    struct member_entry old = *self;
    bool self_changed;
    int rc;

    if (tokens < RING_TOKENS_MIN || tokens > RING_TOKENS_MAX || target_tokens > RING_TOKENS_MAX) {
        return RK_EINVAL;
    }
    if (target_tokens == tokens) {
        target_tokens = 0; /* moving to the count it has: no change */
    }
    if (self->tokens == tokens && self->target_tokens == target_tokens) {
        return 0;
    }
    self->tokens = tokens;
    self->target_tokens = target_tokens;
    rc = membership_ring_rebuild(m, &self_changed);
    if (rc != 0) {
        *self = old;
        return rc;
    }
    self->version = membership_next(self->version);
    self->ring_version = membership_next(self->ring_version);
    return 0;
}

void membership_assert_self(struct membership *m, uint64_t v)
{
    struct member_entry *self = &m->members[m->self].e;
    uint64_t want = membership_next(v);

    if (self->version < want) {
        self->version = want;
    }
}

int membership_reincarnate(struct membership *m, const struct msg_member *old)
{
    struct member_entry *self = &m->members[m->self].e;
    uint64_t rv = self->ring_version > old->ring_version ? self->ring_version : old->ring_version;

    if (old->generation == UINT64_MAX || rv == UINT64_MAX) {
        return RK_ERANGE;
    }
    self->generation = old->generation + 1;
    self->version = 1;
    self->ring_version = rv + 1;
    return 0;
}

/*
 * Errors: RK_EINVAL for our own id, RK_ENOTFOUND for an id we do not hold,
 * RK_ERANGE when the member's version is too close to 2^64 to take the
 * bump (only a peer gossiping absurd versions gets there), RK_ENOMEM.  On
 * error nothing changed.
 */
int membership_remove(struct membership *m, const char *id)
{
    struct member_entry *e, old;
    bool self_changed;
    size_t pos;
    int rc;

    assert(id != NULL && "membership_remove: NULL id");
    if (membership_id_cmp(id, m->members[m->self].e.id) == 0) {
        return RK_EINVAL;
    }
    if (!membership_search(m, id, &pos)) {
        return RK_ENOTFOUND;
    }
    e = &m->members[pos].e;
    if (e->version > UINT64_MAX - MEMBERSHIP_REMOVE_BUMP ||
        e->ring_version > UINT64_MAX - MEMBERSHIP_REMOVE_RING_BUMP) {
        return RK_ERANGE;
    }
    old = *e;
    e->status = MSG_MEMBER_REMOVED;
    e->version += MEMBERSHIP_REMOVE_BUMP;
    e->ring_version += MEMBERSHIP_REMOVE_RING_BUMP;
    rc = membership_ring_rebuild(m, &self_changed);
    if (rc != 0) {
        *e = old;
        return rc;
    }
    membership_self_touch(m, self_changed);
    m->members[pos].news = (uint8_t)membership_news_syns(m->n);
    return 0;
}

int membership_put_back(struct membership *m, const struct msg_member *old)
{
    struct member_entry removed;
    const char *strings;
    bool self_changed;
    size_t pos;
    int rc;

    if (!membership_search(m, old->id, &pos)) {
        return RK_ENOTFOUND;
    }
    if (pos == m->self) {
        return RK_EINVAL;
    }
    removed = m->members[pos].e;
    strings = membership_strings_same(&removed, old) ? removed.id : membership_strings_make(old);
    if (strings == NULL) {
        return RK_ENOMEM;
    }
    membership_entry_set(&m->members[pos].e, old, strings);
    rc = membership_ring_rebuild(m, &self_changed);
    if (rc != 0) {
        m->members[pos].e = removed;
        if (strings != removed.id) {
            free((char *)strings);
        }
        return rc;
    }
    if (strings != removed.id) {
        free((char *)removed.id);
    }
    membership_self_touch(m, self_changed);
    return 0;
}

void membership_forgive(struct membership *m, uint64_t pause_ms, uint64_t heard_since_ms,
                        uint64_t now_ms)
{
    for (size_t i = 0; i < m->n; i++) {
        if (i != m->self && m->members[i].det.last_ms >= heard_since_ms) {
            detector_forgive(&m->members[i].det, pause_ms, now_ms);
        }
    }
}

size_t membership_detect(struct membership *m, uint64_t now_ms, double suspect_phi, double down_phi)
{
    size_t changed = 0;

    for (size_t i = 0; i < m->n; i++) {
        struct member *mb = &m->members[i];
        enum detector_state state;

        if (i == m->self || !membership_tracked(mb->e.status)) {
            continue;
        }
        state = detector_state(&mb->det, now_ms, suspect_phi, down_phi);
        if (state != mb->state) {
            mb->state = state;
            changed++;
        }
    }
    return changed;
}

const struct ring *membership_ring(const struct membership *m)
{
    return m->ring;
}

uint64_t membership_epoch(const struct membership *m)
{
    uint64_t epoch = 0;

    for (size_t i = 0; i < m->n; i++) {
        epoch += m->members[i].e.ring_version;
    }
    return epoch;
}

uint64_t membership_digest(const struct membership *m)
{
    return ring_digest(m->ring);
}

void membership_returning_joins(struct membership *m, bool on)
{
    m->returning_joins = on;
}

const struct ring *membership_target(const struct membership *m)
{
    return m->target;
}

uint64_t membership_target_digest(const struct membership *m)
{
    return ring_digest(m->target);
}

int membership_ring_listen(struct membership *m, membership_ring_fn fn, void *ctx)
{
    assert(fn != NULL && "membership_ring_listen: NULL listener");
    assert(!m->installing && "membership_ring_listen: called from a ring listener");
    if (m->n_listeners == MEMBERSHIP_LISTENERS_MAX) {
        return RK_ETOOBIG;
    }
    m->listeners[m->n_listeners].fn = fn;
    m->listeners[m->n_listeners].ctx = ctx;
    m->n_listeners++;
    return 0;
}

static void membership_digest_of(const struct member_entry *e, struct msg_digest *d)
{
    memset(d, 0, sizeof(*d));
    snprintf(d->id, sizeof(d->id), "%s", e->id);
    d->generation = e->generation;
    d->version = e->version;
}

/* The i-th other entry (ours left out) walking from index start of the others. */
static struct member *membership_other(struct membership *m, size_t start, size_t i)
{
    size_t j = (start + i) % (m->n - 1);

    return &m->members[j < m->self ? j : j + 1];
}

/*
 * News and the rotation.  Without news, an entry new to the cluster (a
 * newcomer's) reaches a member only when some SYN's rotating window
 * covers it: each member offers a given entry in one SYN of every
 * others / (max - 1), so at 5000 simulated members (seed 1) 59 still
 * lacked a newcomer after 18.4 rounds.  Offered first for
 * membership_news_syns() SYNs, it spreads like a rumour, in O(log n)
 * rounds: all 5000 held it after 7.0.  Changes of a member's ring
 * digest and heartbeat are not news: every member's changes at every ring
 * change and round, and as news they would crowd out the few entries that
 * are.
 *
 * The rotation is a counter over the other entries (by index, ours left
 * out), advanced past what each call walks, so successive SYNs cover the
 * whole table whatever its size, deterministically.  The window starts at
 * our own index plus the rotation: members that started together (and so
 * rotate in step) offer different entries in the same round, so a
 * newcomer that hears from many of them in one round learns as many
 * different entries (with every window the same, it learned at most 255 a
 * round, and a join took rounds linear in the cluster's size).  News is
 * picked walking from a cursor of its own, which moves past the last
 * entry picked, so when there is more news than room each gets its turn.
 * The news taken is every entry with news from the cursor up to the last
 * one picked, and the rotation's walk skips exactly those instead of
 * offering them twice.
 */
size_t membership_digests(struct membership *m, struct msg_digest *out, size_t max, bool *complete)
{
    size_t others = m->n - 1;
    size_t take, start, news_from, n_out = 1, n_news = 0, news_cap, walked, last_news = 0;

    if (max == 0) {
        *complete = false;
        return 0;
    }
    membership_digest_of(&m->members[m->self].e, &out[0]);
    take = max - 1 < others ? max - 1 : others;
    *complete = take == others;
    if (others == 0) {
        return 1;
    }
    start = (m->rotation + m->self) % others;
    news_from = m->news_from % others;
    news_cap = *complete ? 0 : take / 2;
    for (size_t i = 0; i < others && n_news < news_cap; i++) {
        const struct member *mb = membership_other(m, news_from, i);
        if (mb->news > 0) {
            membership_digest_of(&mb->e, &out[1 + n_news++]);
            last_news = i;
        }
    }
    n_out += n_news;
    for (walked = 0; n_out < 1 + take && walked < others; walked++) {
        struct member *mb = membership_other(m, start, walked);
        size_t from_news = (start + walked + others - news_from) % others;
        if (n_news > 0 && from_news <= last_news && mb->news > 0) {
            continue; /* offered as news above */
        }
        membership_digest_of(&mb->e, &out[n_out++]);
        mb->news -= mb->news > 0;
    }
    for (size_t i = 0; n_news > 0 && i <= last_news; i++) {
        struct member *mb = membership_other(m, news_from, i);
        mb->news -= mb->news > 0;
    }
    m->rotation = (m->rotation + walked) % others;
    m->news_from = n_news > 0 ? (news_from + last_news + 1) % others : news_from;
    return n_out;
}

static void membership_reply_entry(struct membership_reply *r, const struct member_entry *e)
{
    if (r->n_entries < r->max_entries) {
        membership_entry_get(&r->entries[r->n_entries++], e);
    }
}

/* Ask for id; generation and version say what we hold of it (0, 0: nothing). */
static void membership_reply_request(struct membership_reply *r, const char *id,
                                     const struct member_entry *ours)
{
    struct msg_digest *d;

    if (r->n_requests >= r->max_requests) {
        return;
    }
    d = &r->requests[r->n_requests++];
    memset(d, 0, sizeof(*d));
    memcpy(d->id, id, sizeof(d->id) - 1);
    if (ours != NULL) {
        d->generation = ours->generation;
        d->version = ours->version;
    }
}

/* One digest of a SYN: send ours if newer, ask for theirs if newer or unknown. */
static void membership_answer_one(const struct membership *m, const struct msg_digest *d,
                                  bool senders_own, struct membership_reply *r)
{
    const struct member_entry *ours;
    size_t pos;

    if (!membership_search(m, d->id, &pos)) {
        membership_reply_request(r, d->id, NULL);
        return;
    }
    if (membership_bit(r->answered, pos)) {
        return;
    }
    membership_bit_set(r->answered, pos);
    ours = &m->members[pos].e;
    if (membership_newer(ours->generation, ours->version, d->generation, d->version)) {
        membership_reply_entry(r, ours);
    } else if (membership_newer(d->generation, d->version, ours->generation, ours->version)) {
        membership_reply_request(r, d->id, ours);
        /* The sender's earlier life goes back to it: it raises its
         * ring_version above that entry's (membership_merge). */
        if (senders_own && ours->generation < d->generation) {
            membership_reply_entry(r, ours);
        }
    }
}

/*
 * A digest naming one of our ids twice is answered once (the bitmap).
 * The first digest, the sender's own, is answered first: our newer entry
 * of it (its removal) or its earlier life, which no later answer of ours
 * carries once we have merged its new one.  Then, for a complete list,
 * the entries it did not mention, in id order: the peer lacks them
 * entirely, a member it has never heard of among them.  Then the entries
 * its digests show it holds older, in their order.  Every entry changes
 * every round (a heartbeat), so the older ones alone fill an answer; put
 * first, they kept a member new to the peer out of answer after answer,
 * and with up to 255 members (where every list is complete) a join took
 * 11 rounds at 255 members against 2 at 100.  What does not fit waits for
 * a later round, which finds it again because the peer still lacks it.
 */
void membership_answer(const struct membership *m, const struct msg_digest *theirs, size_t n,
                       bool complete, struct msg_member *entries, size_t max_entries,
                       size_t *n_entries, struct msg_digest *requests, size_t max_requests,
                       size_t *n_requests)
{
    struct membership_reply r;

    memset(&r, 0, sizeof(r));
    r.entries = entries;
    r.max_entries = max_entries;
    r.requests = requests;
    r.max_requests = max_requests;
    for (size_t i = 0; i < n; i++) {
        size_t pos;
        if (membership_search(m, theirs[i].id, &pos)) {
            membership_bit_set(r.mentioned, pos);
        }
    }
    if (n > 0) {
        membership_answer_one(m, &theirs[0], true, &r);
    }
    for (size_t i = 0; complete && i < m->n; i++) {
        if (!membership_bit(r.mentioned, i)) {
            membership_reply_entry(&r, &m->members[i].e);
        }
    }
    for (size_t i = 1; i < n; i++) {
        membership_answer_one(m, &theirs[i], false, &r);
    }
    /*
     * Our own entry, left out of a list cut at its bound: the initiator
     * may not know us at all (a newcomer answering a member it has just
     * dialled), and no one else can tell it sooner.  Without this, past
     * MSG_GOSSIP_DIGESTS_MAX members a newcomer's entry spreads only by
     * the rotating windows of other members' SYNs.  It takes the last
     * place of a full answer: the entry it displaces goes in a later
     * exchange, as the peer still lacks it.
     */
    if (!complete && !membership_bit(r.mentioned, m->self) && max_entries > 0) {
        r.n_entries -= r.n_entries == max_entries;
        membership_reply_entry(&r, &m->members[m->self].e);
    }
    *n_entries = r.n_entries;
    *n_requests = r.n_requests;
}

int membership_encode(const struct membership *m, struct buf *out)
{
    struct msg_member *list = malloc(m->n * sizeof(*list));
    int rc;

    if (list == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < m->n; i++) {
        membership_entry_get(&list[i], &m->members[i].e);
    }
    rc = msg_members_encode(list, m->n, out);
    free(list);
    return rc;
}

static int membership_snapshot_take(const struct membership *m, struct membership_snapshot *s)
{
    s->members = malloc(m->n * sizeof(*s->members));
    if (s->members == NULL) {
        return RK_ENOMEM;
    }
    memcpy(s->members, m->members, m->n * sizeof(*s->members));
    s->n = m->n;
    s->self = m->self;
    return 0;
}

/* Whether strings are those of the snapshot's entry of their id (a binary search). */
static bool membership_snapshot_holds(const struct membership_snapshot *s, const char *strings)
{
    size_t lo = 0, hi = s->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = membership_id_cmp(s->members[mid].e.id, strings);
        if (c == 0) {
            return s->members[mid].e.id == strings;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return false;
}

/*
 * The strings after a restore: the table's ids include the snapshot's
 * (a restore only adds), both in id order, so one walk pairs each entry
 * with the one it had before.  keep: the restore stands, and the strings
 * it replaced go; otherwise those it brought go.
 */
static void membership_snapshot_settle(const struct membership *m,
                                       const struct membership_snapshot *s, bool keep)
{
    size_t j = 0;

    for (size_t i = 0; i < m->n; i++) {
        const char *now = m->members[i].e.id, *was = NULL;
        if (j < s->n && membership_id_cmp(s->members[j].e.id, now) == 0) {
            was = s->members[j++].e.id;
        }
        if (was != now) {
            free((char *)(keep ? was : now));
        }
    }
}

/* The array never shrinks, so the snapshot fits back where it came from. */
static void membership_snapshot_put_back(struct membership *m, const struct membership_snapshot *s)
{
    membership_snapshot_settle(m, s, false);
    memcpy(m->members, s->members, s->n * sizeof(*s->members));
    m->n = s->n;
    m->self = s->self;
    membership_keys_fix(m, 0);
}

/*
 * Merge saved entries without rebuilding the ring (the caller rebuilds
 * once: one ring_create() per entry would cost O(N^2) tokens at startup).
 * *affects_ring says whether any entry changed the ring set.  Strings an
 * entry replaces are the snapshot's (snap), freed when the restore stands,
 * or an earlier entry of the same id in this list's, freed at once.
 */
static int membership_restore_entries(struct membership *m, const struct membership_snapshot *snap,
                                      const struct msg_member *list, size_t n, uint64_t now_ms,
                                      bool *affects_ring)
{
    const struct member_entry *self = &m->members[m->self].e;

    for (size_t i = 0; i < n; i++) {
        const struct msg_member *e = &list[i];
        struct membership_undo undo;
        bool found, affects = false;
        size_t pos;
        int rc;

        if (!msg_member_valid(e)) {
            return RK_ESYNTAX;
        }
        found = membership_search(m, e->id, &pos);
        if (membership_id_cmp(e->id, self->id) == 0 ||
            (found && !membership_newer(e->generation, e->version, m->members[pos].e.generation,
                                        m->members[pos].e.version))) {
            continue;
        }
        rc = membership_apply(m, e, pos, found, now_ms, &undo, &affects);
        if (rc != 0) {
            return rc;
        }
        if (!undo.added && !membership_snapshot_holds(snap, undo.old.e.id)) {
            membership_undo_forget(m, &undo);
        }
        self = &m->members[m->self].e;
        *affects_ring = *affects_ring || affects;
    }
    return 0;
}

/*
 * All or nothing: on any error (the decoder's RK_ESYNTAX or RK_ETOOBIG, an
 * invalid entry as RK_ESYNTAX, RK_ENOMEM) the table is as it was.
 */
int membership_restore(struct membership *m, const uint8_t *p, size_t len, uint64_t now_ms)
{
    struct membership_snapshot snap;
    struct msg_member *list = NULL;
    bool affects_ring = false, self_changed = false;
    size_t n = 0, room;
    int rc;

    rc = msg_members_decode(p, len, MEMBERSHIP_MAX, &list, &n);
    if (rc != 0) {
        return rc;
    }
    /*
     * Room for every entry of the list at once, and no more: doubling
     * would leave up to half the array unused, in every table of a node
     * and in the simulator's N tables of N.  A saved list holds our own
     * entry too, so one more member (a join) fits without growing.
     */
    room = m->n + n < MEMBERSHIP_MAX ? m->n + n : MEMBERSHIP_MAX;
    rc = membership_room(m, room, room);
    if (rc != 0) {
        goto out_free_list;
    }
    rc = membership_snapshot_take(m, &snap);
    if (rc != 0) {
        goto out_free_list;
    }
    rc = membership_restore_entries(m, &snap, list, n, now_ms, &affects_ring);
    if (rc == 0 && affects_ring) {
        rc = membership_ring_rebuild(m, &self_changed);
    }
    if (rc != 0) {
        membership_snapshot_put_back(m, &snap);
    } else {
        membership_snapshot_settle(m, &snap, true);
        membership_self_touch(m, self_changed);
    }
    free(snap.members);
out_free_list:
    free(list);
    return rc;
}
