/*
 * membership.h - the member table and the versioned ring derived from it.
 * Pure: no I/O and no clock reads; time comes in as monotonic
 * milliseconds, so a fake clock drives the tests.
 *
 * Entries (proto/msg.h, struct msg_member; held as struct member_entry,
 * the same fields with strings of their exact lengths).  Each node is the only writer
 * of its own entry: id, addresses, rack, tokens, status, a generation that
 * grows at every start (persisted by the caller) and a version that grows
 * at every change and heartbeat.  Entries merge by (generation, version):
 * the greater replaces the lesser whole; equal or lesser is ignored.  So
 * every node that has seen the same entries holds the same table,
 * whatever order they arrived in.
 *
 * Removal.  A dead member cannot write its own entry, so `remove` is
 * written by another node: the entry with status removed and its version
 * raised by MEMBERSHIP_REMOVE_BUMP, which beats anything the member could
 * still gossip in that generation (a paused process that wakes up keeps
 * counting from its old version).  A member that restarts comes back with
 * a new generation, which beats the removal: that is a new life, a join.
 *
 * The ring.  Members whose status is normal or leaving own ranges; joining
 * members do not yet, left and removed ones no longer.  Beside the ring in
 * force the table keeps the target ring: normal and joining members, the
 * ring a change under way leads to (handoff.h).  Both are rebuilt
 * together, and our entry's target field names the target's digest.  The ring is rebuilt
 * (ring_create(), immutable, reference-counted) whenever a ring-affecting
 * field of any entry changes: rack, tokens, target_tokens or status.  In
 * the target ring a member whose target_tokens is not 0 has that many
 * tokens (a change of its token count under way, `ringkv tokens`).  A ring is named by
 * its digest (ring.h: a hash of the ring's exact content, seed and, in id
 * order, each member's id, rack and tokens), the same on every node that
 * holds the same ring.  A cluster has converged when every live member
 * reports (in its entry's digest field) the digest the others hold.
 *
 * One ring in force, and an event when it changes.  The table holds one
 * reference to the ring in force, and one internal function installs a
 * new one: a rebuilt ring whose digest is that of the ring in force is no
 * change and is dropped; otherwise every listener registered with
 * membership_ring_listen() is called with (old ring, new ring) before the
 * table lets go of old.  A holder that must go on using a ring after it is
 * replaced (a request that started under it) takes its own reference
 * (ring_ref()) and drops it when done.
 *
 * The epoch.  The sum of every entry's ring_version.  It orders changes
 * of the member table that concern the ring: a member joining, leaving,
 * removed, back in a new life, its rack or tokens changed.  Any merge of
 * two tables has an epoch at least as large as either, so a later table
 * never has a smaller one.  It does not name a ring: it can move while the
 * ring stays the same (a joining member removed; an earlier life's entry
 * answered by raising ours, MEMBERSHIP_RAISED; a member removed and back),
 * and two nodes at the same epoch can hold different rings until gossip
 * has spread every entry.  The digest names the ring; logs name it so.
 *
 * Failure detection.  Every entry but our own carries a phi accrual
 * detector (detector.h) fed with the arrivals of the member's heartbeats:
 * a message received from it directly, or a version that grew in gossip
 * and is newer than the last heartbeat the member told us of directly.
 * A member's PING names its heartbeat (generation, version: PROTOCOL.md
 * 7.2, membership_told()).  A relayed version at or below it is old news:
 * it was written before a message we already counted, and it reaches us
 * late (in a large cluster gossip takes seconds to carry a version to
 * every member, since a SYN lists at most MSG_GOSSIP_DIGESTS_MAX digests
 * and an answer at most MSG_GOSSIP_ENTRIES_MAX entries while every entry
 * changes every round).  Counted as an arrival, it would restart the
 * detector's silence of a member that has crashed, again and again, and
 * bring one held down back up.  A relayed version above the told one
 * proves the member wrote it, not when: it may be a ring-digest bump
 * written after its last PING, just before a crash, that gossip carries
 * for seconds.  So it is dated, not taken as arriving now: a member
 * writes one heartbeat per interval, so version told + k was written at
 * the latest k intervals after the PING that told us (sooner when some of
 * the k were digest bumps), and that time, never later than now, is the
 * arrival.  The interval is this node's own: every node of a cluster is
 * meant to beat at the same gossip-interval (README, Settings).  "At the
 * latest" holds only while the member misses no beat: one paused (SIGSTOP,
 * a stalled loop) writes each later version as late as it was paused, so
 * a version more than MEMBERSHIP_DATED_VERSIONS_MAX above the told one is
 * not dated (a member writes that many only while alive and cut off from
 * us for long).  A member we cannot reach directly still has its versions
 * counted, as in Cassandra: dated while few above its last PING, then as
 * they arrive; one that never told us has them counted as they arrive.
 */
#ifndef RINGKV_MEMBERSHIP_H
#define RINGKV_MEMBERSHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "detector.h"
#include "msg.h"
#include "ring.h"

#define MEMBERSHIP_REMOVE_BUMP (1ull << 32)
/*
 * A removal also raises the entry's ring_version, by this much.  A member
 * starting again takes its saved ring_version plus this plus one, so its
 * new life counts above a removal of its last one that it never heard of,
 * and the epoch does not come back to the value it had while it was out.
 */
#define MEMBERSHIP_REMOVE_RING_BUMP 1
/* Members one table holds: as many as a ring may have. */
#define MEMBERSHIP_MAX RING_MEMBERS_MAX
/*
 * Versions above the one a member last told us directly up to which a
 * relayed version is dated from that PING (top of file).  A member writes
 * one heartbeat an interval and a version more when its ring digest
 * changes, so the versions it writes between its last PING and a crash
 * are a few; more than this many it writes only while alive and cut off
 * from us for longer than the down bound (18.4 intervals at the default
 * phi), when the old PING dates nothing: a pause (SIGSTOP, a stalled
 * loop) or a slower gossip-interval would put every later version
 * further in the past than it was written, and hold a live member down
 * for as long as the partition lasts.
 */
#define MEMBERSHIP_DATED_VERSIONS_MAX 32
/*
 * Ring listeners one table holds: room for those DESIGN.md names
 * (coordinator, hints, handoff, anti-entropy, metrics) and a few more.
 */
#define MEMBERSHIP_LISTENERS_MAX 8

extern const char *const membership_status_names[MSG_MEMBER_STATUS_MAX + 1];

/*
 * A member's entry as the table holds it: the fields of struct msg_member
 * under the same names, with its four strings in one allocation of their
 * exact lengths rather than in fixed arrays (a msg_member is 752 bytes, of
 * which the two 272-byte address arrays are mostly empty; this is 80 plus
 * the strings).  A node holds an entry per member, and the simulator one
 * per pair of its N members.  id is the allocation; the rack and the
 * addresses follow it, and membership_entry_rack(), _peer_addr() and
 * _client_addr() find them.  The strings are the table's: borrowed like
 * the entry, valid until the table changes.  membership_entry_get() makes
 * a struct msg_member of an entry, for a message or the data directory.
 */
struct member_entry {
    const char *id; /* "id\0rack\0peer_addr\0client_addr\0", one allocation */
    uint64_t generation, version, ring_version, digest, target;
    uint8_t instance[16];
    uint32_t tokens, target_tokens, status;
    uint8_t id_len, rack_len; /* strlen() of id and rack */
    uint16_t peer_addr_len;   /* strlen() of peer_addr */
};

static inline const char *membership_entry_rack(const struct member_entry *e)
{
    return e->id + e->id_len + 1;
}

static inline const char *membership_entry_peer_addr(const struct member_entry *e)
{
    return e->id + e->id_len + 1 + e->rack_len + 1;
}

static inline const char *membership_entry_client_addr(const struct member_entry *e)
{
    return e->id + e->id_len + 1 + e->rack_len + 1 + e->peer_addr_len + 1;
}

/* An entry with what this node knows locally about the member. */
struct member {
    struct member_entry e;
    struct detector det; /* not for our own entry */
    enum detector_state state;
    uint64_t heard_ms; /* monotonic ms of the last arrival; 0 never */
    /* the heartbeat the member last told us of directly (membership_told()); 0, 0: none */
    uint64_t told_generation, told_version;
    uint64_t told_ms; /* monotonic ms the PING that told it arrived */
    /* SYNs left that offer the entry ahead of the rotation (membership_digests()); 0: none */
    uint8_t news;
};

struct membership;

/*
 * A table holding only self (copied): the caller has set every field of
 * its entry, generation included.  heartbeat_ms, the interval every
 * member's detector expects, is 1 .. DETECTOR_INTERVAL_SLOT_MAX (asserted).  Ring errors from
 * ring_create() (an invalid id, ...) are returned; RK_ENOMEM.
 */
int membership_create(struct membership **out, const uint8_t seed[RING_SEED_LEN],
                      const struct msg_member *self, uint64_t heartbeat_ms, uint64_t now_ms);
void membership_destroy(struct membership *m);

/* Copy entry e into *out as the msg_member it was merged as (unused bytes zero). */
void membership_entry_get(struct msg_member *out, const struct member_entry *e);

/* Entries in id order, self included; pointers valid until the table changes. */
size_t membership_count(const struct membership *m);
const struct member *membership_at(const struct membership *m, size_t i);
const struct member *membership_find(const struct membership *m, const char *id);
const struct member *membership_self(const struct membership *m);

/* What membership_merge() did with an entry. */
enum membership_merged {
    MEMBERSHIP_IGNORED,  /* not newer than what we hold */
    MEMBERSHIP_ADDED,    /* a member we did not know */
    MEMBERSHIP_UPDATED,  /* a newer entry of a known member */
    MEMBERSHIP_CONFLICT, /* an entry of ours that is newer than ours: see below */
    MEMBERSHIP_RAISED,   /* an earlier life's entry of ours: our ring_version went above it */
};

/*
 * Merge one entry heard at now_ms (invalid entries: RK_EINVAL).  A newer
 * entry of another member counts as a heartbeat arrival for its detector.
 * An entry bearing our own id is never taken: when it is newer than ours
 * the result is MEMBERSHIP_CONFLICT and the caller decides (another
 * process claims our id, or the cluster removed us).  When it is older, of
 * an earlier generation, and its ring_version is not below ours, ours is
 * raised above it (MEMBERSHIP_RAISED), so the epoch keeps growing when a
 * removed member comes back: the ring is the same, the epoch is new and
 * our entry's version grows to carry it.  *ring_changed says
 * whether the ring was rebuilt.  RK_ENOMEM, and RK_ETOOBIG past
 * MEMBERSHIP_MAX entries.
 */
int membership_merge(struct membership *m, const struct msg_member *e, uint64_t now_ms,
                     enum membership_merged *merged, bool *ring_changed);

/*
 * Merging a list: between membership_defer() and membership_commit(),
 * membership_merge() takes entries without rebuilding the ring (its
 * *ring_changed stays false); membership_commit() rebuilds it once if any
 * of them called for it, and says so in *ring_changed.  A ring of a few
 * thousand members takes tens of milliseconds to build: once per list,
 * not once per entry.  Until the commit, the ring and digest are those
 * from before the list.  When the commit fails (RK_ENOMEM) the table is
 * ahead of its ring, and the next rebuild catches up: a commit, or a
 * merge, status change or removal outside a list.
 */
void membership_defer(struct membership *m);
int membership_commit(struct membership *m, bool *ring_changed);

/* A message arrived directly from member id at now_ms: a heartbeat arrival. */
void membership_heard(struct membership *m, const char *id, uint64_t now_ms);

/*
 * Member id told us directly (its PING, arrived at now_ms) that its own
 * entry is at (generation, version): from now on a relayed entry of it at
 * or below that is no detector arrival, and one above it is dated from
 * this PING (top of file).  Kept as the highest told; the arrival itself
 * is membership_heard()'s.  Version 0 tells nothing.
 */
void membership_told(struct membership *m, const char *id, uint64_t generation, uint64_t version,
                     uint64_t now_ms);

/* Our own entry: a heartbeat (version + 1). */
void membership_heartbeat(struct membership *m);

/* Our own status changes (version + 1, ring_version + 1, ring rebuilt). */
int membership_set_status(struct membership *m, enum msg_member_status status);
/*
 * Our own token counts change: tokens in the ring in force, target_tokens
 * in the target ring (0, or tokens itself: the same as in force; a change
 * under way otherwise).  version + 1, ring_version + 1, rings rebuilt;
 * nothing when both are as they were.  RK_EINVAL for a count out of range.
 */
int membership_set_tokens(struct membership *m, uint32_t tokens, uint32_t target_tokens);

/*
 * Raise our version above v (after a conflict in the same generation), so
 * our entry wins again.
 */
void membership_assert_self(struct membership *m, uint64_t v);

/*
 * Start a new life above `old`, an entry of our id from an earlier life
 * (a wiped data directory, a restored backup, a removal that a restart
 * answers): generation old->generation + 1, version 1, ring_version above
 * both ours and old's so the epoch still only grows.  The caller persists
 * the generation.  RK_ERANGE when old's generation or ring_version is
 * already at 2^64 - 1; on error nothing changed.
 */
int membership_reincarnate(struct membership *m, const struct msg_member *old);

/* Write the removal of member id (not self): status removed, version bumped. */
int membership_remove(struct membership *m, const char *id);

/*
 * Put back an entry of another member exactly as it was before a
 * membership_remove() that could not be saved; the ring is rebuilt.
 * RK_ENOTFOUND for an id we do not hold, RK_EINVAL for our own,
 * RK_ENOMEM (the entry is then still the removed one).
 */
int membership_put_back(struct membership *m, const struct msg_member *old);

/*
 * This process did not run for pause_ms before now_ms (a stop, a stall of
 * its loop): the silence over it of every other member last heard at
 * heard_since_ms or later is ours, so its detector forgives it
 * (detector_forgive()).  A member silent since before heard_since_ms was
 * silent before the pause began: it is not excused, so a member that died
 * is still seen down in about the usual time by an observer paused every
 * round, rather than after as many late rounds as its detector counts
 * intervals.
 */
void membership_forgive(struct membership *m, uint64_t pause_ms, uint64_t heard_since_ms,
                        uint64_t now_ms);

/* Refresh every detector's state at now_ms; returns how many states changed. */
size_t membership_detect(struct membership *m, uint64_t now_ms, double suspect_phi,
                         double down_phi);

/*
 * The ring in force, borrowed: valid until the table changes, or for as
 * long as the caller holds a reference it took with ring_ref().
 */
const struct ring *membership_ring(const struct membership *m);
/* The epoch (top of file): orders member-table changes; it does not name a ring. */
uint64_t membership_epoch(const struct membership *m);
/* The digest of the ring in force: ring_digest(membership_ring(m)). */
uint64_t membership_digest(const struct membership *m);

/*
 * A ring change: called when new_ring replaces old_ring in force (they
 * have different digests).  Both are borrowed for the call: membership_ring()
 * already returns new_ring, and old_ring is freed after the last listener
 * returns unless someone took a reference.  A listener may read the table
 * and take references; it must not change the table (asserted).
 */
typedef void (*membership_ring_fn)(void *ctx, const struct ring *old_ring,
                                   const struct ring *new_ring);

/*
 * Call fn(ctx, old, new) at every ring change from now on, after the
 * listeners registered before it.  RK_ETOOBIG past
 * MEMBERSHIP_LISTENERS_MAX.  Not from inside a listener (asserted).
 */
int membership_ring_listen(struct membership *m, membership_ring_fn fn, void *ctx);
/* Whether a status owns ranges. */
bool membership_in_ring(uint32_t status);
/* Whether a status owns ranges in the target ring: normal and joining. */
bool membership_in_target(uint32_t status);

/*
 * With on, an entry of a member this table holds as left or removed, of a
 * later generation and with a status that owns ranges (normal, leaving),
 * is ignored: a member back in a new life takes ranges again only by
 * joining (handoff.h), never with the data it had when it went.
 */
void membership_returning_joins(struct membership *m, bool on);

/*
 * The target ring, borrowed like membership_ring(): the ring built from
 * the members whose status is normal or joining, towards which a change
 * (a join, a leave) moves.  It is the ring in force itself (the same
 * pointer) while no member is joining or leaving.  Our entry's target
 * field carries its digest, so gossip shows who agrees on it.
 */
const struct ring *membership_target(const struct membership *m);
uint64_t membership_target_digest(const struct membership *m);

/*
 * The digests for a SYN: our own entry first, then up to max - 1 others.
 * News first: each entry that changed in more than its version (a new
 * member, a new life, a new status, rack, tokens or address), in the
 * membership_news_syns() SYNs that follow the change, taking at most half
 * the room (when there is more news, each waits its turn, so its SYNs come
 * later); then the rest, starting at a rotating offset (from our own place
 * in the table) so every entry is offered over rounds, and members
 * rotating in step offer different ones.  *complete says whether all
 * entries fit.
 */
size_t membership_digests(struct membership *m, struct msg_digest *out, size_t max, bool *complete);

/*
 * How many SYNs offer an entry as news, in a table of n members:
 * 3 * ceil(log2(n + 1)), SWIM's lambda log n with lambda = 3 (12 at 10
 * members, 30 at 1000, 39 at 5000).  Each member holding the news offers
 * it to a random peer that many rounds, so it reaches every member in
 * O(log n) rounds with high probability, and the rotation catches the rest.
 */
unsigned membership_news_syns(size_t n);

/*
 * Answer a SYN's digests: the entries we hold newer than theirs, or that
 * they did not mention when their list was complete (at most max_entries),
 * and the ids they hold newer than ours or that we lack (at most
 * max_requests).  The first digest is the sender's own: when it is of a
 * later generation than our entry of its id, that entry goes back too
 * (its earlier life; see MEMBERSHIP_RAISED).  Entries are copied into
 * entries[].
 */
void membership_answer(const struct membership *m, const struct msg_digest *theirs, size_t n,
                       bool complete, struct msg_member *entries, size_t max_entries,
                       size_t *n_entries, struct msg_digest *requests, size_t max_requests,
                       size_t *n_requests);

/* Persistence: every entry (not the local detector state), msgpack-encoded. */
int membership_encode(const struct membership *m, struct buf *out);
/*
 * Merge entries saved by membership_encode() (our own is skipped), as if
 * heard at now_ms.  RK_ESYNTAX for damaged input.
 */
int membership_restore(struct membership *m, const uint8_t *p, size_t len, uint64_t now_ms);

#endif
