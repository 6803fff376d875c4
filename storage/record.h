/*
 * record.h - the stored value of one key: its siblings, their versions,
 * and the rules that merge a new version into them.  Pure: no I/O.
 *
 * A record holds one or more siblings.  Each sibling is a write (or a
 * delete: a tombstone) with its vector clock, the HLC timestamp of the
 * write and the id of the node that coordinated it.  Siblings of one
 * record are pairwise concurrent: none descends from another.
 *
 * Expiry.  A value may carry an expiry: an absolute wall-clock time in ms
 * since the Unix epoch, part of the version like its value, so every
 * replica holding the version agrees on it (the version travels with it).
 * At or after that time (by the reader's wall clock) the sibling is
 * expired: reads leave it out, as if it were absent, and collection treats
 * it like a tombstone.  An expired sibling's clock still counts in the
 * record's context, so a write made with that context supersedes it.
 *
 * Merge rules (DESIGN.md, "Versions"):
 *   siblings mode (the default): applying version v drops every sibling v
 *     descends from, and ignores v when a sibling descends from or equals
 *     v; otherwise v joins the siblings.  Exceeding the sibling cap is an
 *     error and the record is left unchanged: no write is silently dropped.
 *   lww mode: one sibling is kept: the one with the highest (hlc, node id);
 *     its clock becomes the merge of both clocks, so the result descends
 *     from everything it replaced and replicas converge in any order.
 *
 * On-disk and on-wire layout, format 1 (big-endian):
 *
 *   u8  format                 1
 *   u8  flags                  0 (reserved; non-zero is an error)
 *   u16 n                      siblings, 1 .. RECORD_SIBLINGS_MAX
 *   n times:
 *     clock                    vclock.h encoded form
 *     u64 hlc                  timestamp of the write
 *     u8  node_len             1 .. 64
 *     node_len bytes node      coordinator id, [A-Za-z0-9._:-]
 *     u8  sflags               bit 0: tombstone; bit 1: expires; other bits 0
 *     u64 expire_ms            only when bit 1 is set: the expiry, ms since the
 *                              Unix epoch, never 0; never on a tombstone
 *     u32 value_len            0 for a tombstone
 *     value_len bytes value
 *
 * A sibling without an expiry is encoded exactly as before expiry existed
 * (bit 1 clear, no expire_ms), so records written earlier decode unchanged
 * and a version without an expiry has the same bytes on every build.
 *
 * A record must be consumed exactly: trailing bytes are an error.
 */
#ifndef RINGKV_RECORD_H
#define RINGKV_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"
#include "vclock.h"

#define RECORD_FORMAT 1
/* Decoder bound; the configured cap (max-siblings) is lower. */
#define RECORD_SIBLINGS_MAX 4096
#define RECORD_VALUE_MAX (512u * 1024 * 1024) /* Redis's string limit */
#define RECORD_SIBLING_TOMBSTONE 0x01
#define RECORD_SIBLING_EXPIRES 0x02

enum record_conflicts {
    RECORD_SIBLINGS, /* keep concurrent writes as siblings */
    RECORD_LWW,      /* last writer wins by (hlc, node id) */
};

struct sibling {
    struct vclock clock;
    uint64_t hlc;
    char node[RING_NAME_MAX + 1];
    bool tombstone;
    uint8_t *value; /* owned; NULL when value_len is 0 */
    size_t value_len;
    uint64_t expire_ms; /* expiry, ms since the Unix epoch; 0: none (always 0 on a tombstone) */
};

/* A record; siblings owned by it.  Zero-initialised or record_init() is empty. */
struct record {
    struct sibling *s;
    size_t n;
    size_t cap;
};

/* Whether a and b hold the same siblings (clock, hlc, node, tombstone, expiry, value) in the same
 * order. */
bool record_same(const struct record *a, const struct record *b);

void sibling_init(struct sibling *s);
void sibling_deinit(struct sibling *s);
/* dst = an independent copy of src. RK_ENOMEM. */
int sibling_copy(struct sibling *dst, const struct sibling *src);
/*
 * Fill s as a new write: clock copied, value copied (value may be NULL
 * when len is 0), node id copied.  RK_EINVAL for an invalid node id or a
 * tombstone with a value, RK_ETOOBIG for a value over RECORD_VALUE_MAX,
 * RK_ENOMEM.
 */
int sibling_set(struct sibling *s, const struct vclock *clock, uint64_t hlc, const char *node,
                bool tombstone, const void *value, size_t len);

void record_init(struct record *r);
void record_deinit(struct record *r);
/* Append a copy of s. RK_ETOOBIG past RECORD_SIBLINGS_MAX, RK_ENOMEM. */
int record_push(struct record *r, const struct sibling *s);

/* True when every sibling is a tombstone (and the record is not empty). */
bool record_all_tombstones(const struct record *r);

/* True when s carries an expiry at or before now_ms (wall clock, ms since the epoch). */
bool sibling_expired(const struct sibling *s, uint64_t now_ms);
/* True when s is a tombstone or expired at now_ms: nothing a read returns. */
bool sibling_dead(const struct sibling *s, uint64_t now_ms);
/* True when every sibling is dead at now_ms (and the record is not empty). */
bool record_all_dead(const struct record *r, uint64_t now_ms);
/* Siblings of r that are live at now_ms: neither tombstones nor expired. */
size_t record_live_count(const struct record *r, uint64_t now_ms);
/* The latest expiry among the siblings (0 when none carries one). */
uint64_t record_max_expiry(const struct record *r);
/* The newest hlc among the siblings (0 for an empty record). */
uint64_t record_max_hlc(const struct record *r);

/*
 * The causal context of a record: the merge of its siblings' clocks.  A
 * write made with this context supersedes every sibling the record holds.
 * out must be initialised; its entries are replaced.  RK_ENOMEM, or
 * RK_ECLOCKFULL when the merge exceeds VCLOCK_ENTRIES_MAX.
 */
int record_context(const struct record *r, struct vclock *out);

/* The mode's name as the `conflicts` setting spells it: "siblings", "lww". */
const char *record_conflicts_name(enum record_conflicts mode);

/*
 * Apply version v to r under the merge rules above.  *changed (when not
 * NULL) says whether r changed, so an unchanged record need not be written
 * back.  Equal clocks are one version: v is ignored when a sibling has
 * v's clock, whatever the contents.  LWW mode keeps one sibling and
 * ignores max_siblings.  Errors: RK_ETOOBIG when siblings mode would
 * exceed max_siblings, RK_ECLOCKFULL when LWW's merged clock would exceed
 * VCLOCK_ENTRIES_MAX (r unchanged either way), RK_ENOMEM.  v is borrowed.
 */
int record_apply(struct record *r, const struct sibling *v, enum record_conflicts mode,
                 size_t max_siblings, bool *changed);
/*
 * Whether record_apply(r, v, mode) would leave r holding exactly v, alone:
 * v supersedes every sibling (siblings: v's clock descends each one's;
 * lww: v wins over each and its clock already holds each one's entries,
 * so the merged clock is v's own).  When true, *changed is what
 * record_apply() would set.  r is only read (it may be a record_view()):
 * a replica taking a newer version need not build the record at all.
 */
bool record_apply_is_v(const struct record *r, const struct sibling *v, enum record_conflicts mode,
                       bool *changed);

/*
 * A write coordinated by this node: build the new version in out and apply
 * it to r.  node is this node's id, the new sibling's node field (LWW's
 * tie-break); actor is the id its clock entry is counted under: the id of
 * this node's data directory's life (store_actor()), so that a node whose
 * directory was wiped never hands out a (clock id, counter) pair again.  Its
 * clock is context (or, when context is NULL, the record's own context: a
 * blind write supersedes everything it can see) with actor's counter raised
 * above every counter of actor in r or context, so the new version descends
 * from all it supersedes and from every earlier write actor counted; with no
 * counter of actor in either, it starts at hlc, not 1 (actor's counters are
 * then each at most their write's hlc, which only grows: a key whose copy
 * here was collected while another replica kept actor's tombstone is never
 * counted from 1 again under it).
 * Siblings the context did not see stay, as siblings.  hlc is the write's
 * timestamp (from hlc_now()), raised when needed above the stamp of every
 * sibling the new version supersedes, so that it never loses to them under
 * LWW; out->hlc is the stamp used.  A context (from a client) is bounded:
 * actor's counter in it at most what r's clocks hold for actor, at most
 * max_siblings ids that r's clocks do not hold, and r's clocks, context and
 * actor naming at most VCLOCK_ENTRIES_MAX ids together (so a blind write can
 * always be built); otherwise RK_ECONTEXT and r is unchanged.  When r's
 * clocks alone leave no room for actor (they name VCLOCK_ENTRIES_MAX ids,
 * actor not among them, or more), with a context or without: RK_ECLOCKFULL,
 * r unchanged: the key's version vector is full.  out, when not
 * NULL, must be initialised; the caller owns it afterwards.  NULL when the
 * caller has no use for the version: r then takes it without copying its
 * clock and value.  Errors as record_apply(), and RK_EINVAL (bad node or
 * actor id, tombstone with a value), RK_ERANGE (actor's counter or a
 * superseded stamp at UINT64_MAX), and RK_EMISMATCH in siblings mode when
 * the new clock would supersede a sibling that context has not seen (a write
 * actor counted after the client read): vector clocks cannot keep both, so
 * the write is refused rather than that sibling dropped; the client re-reads
 * and retries.  An empty context is a write that saw nothing, unlike NULL.
 */
int record_write_local(struct record *r, const char *node, const char *actor, uint64_t hlc,
                       const struct vclock *context, bool tombstone, const void *value, size_t len,
                       enum record_conflicts mode, size_t max_siblings, struct sibling *out);

/*
 * record_write_local() of a value (never a tombstone) whose version expires
 * at expire_ms (ms since the epoch; 0: never), as SET ... EX and EXPIRE
 * write it.  Same contract and errors.
 */
int record_write_expiring(struct record *r, const char *node, const char *actor, uint64_t hlc,
                          const struct vclock *context, const void *value, size_t len,
                          uint64_t expire_ms, enum record_conflicts mode, size_t max_siblings,
                          struct sibling *out);

/*
 * Prune every sibling's clock (vclock_prune()); returns entries dropped.
 * A clock stays whole when its pruned form would no longer be concurrent
 * with every other sibling.
 */
size_t record_prune(struct record *r, size_t keep, uint64_t now_ms, uint64_t min_age_ms);

/* Bytes record_encode() writes. */
size_t record_encoded_size(const struct record *r);
/* Write r (n >= 1) to out, record_encoded_size(r) bytes; returns bytes written. */
size_t record_encode(const struct record *r, uint8_t *out);
/*
 * Decode buf[0..len) into r (emptied first).  Every count is checked
 * against its bound and against the bytes left before anything is
 * allocated.  Errors: RK_ESYNTAX (truncated, trailing bytes, bad field,
 * unknown flags), RK_EMISMATCH (unknown format version), RK_ETOOBIG
 * (a count over its bound), RK_ENOMEM.
 */
int record_decode(const uint8_t *buf, size_t len, struct record *r);

/*
 * record_decode() without copies, for a record only read while buf lives:
 * each sibling's value points into buf, and its clock's entries go to the
 * caller's room[0 .. room_n) while they fit there (a clock past it gets an
 * array of its own).  r must be empty or a view (it is released first);
 * nothing in it may be changed.  Release it with record_view_release(),
 * never record_deinit() alone; buf and room must outlive it.  Checks and
 * errors as record_decode(); on an error r is freed.
 */
int record_view(const uint8_t *buf, size_t len, struct record *r, struct vclock_entry *room,
                size_t room_n);
/* Empty a view (what it owns is freed); its sibling array stays for the next (record_deinit()). */
void record_view_release(struct record *r);

/*
 * record_decode()'s checks alone, nothing allocated or kept: 0 when it
 * would decode buf, else the error it would give (never RK_ENOMEM).  For
 * a record kept as stored and decoded only when needed.
 */
int record_check(const uint8_t *buf, size_t len);

/*
 * Look into an encoded record without decoding it: *n receives its sibling
 * count and, when that is 1, *tombstone and (*value, *value_len) locate the
 * sibling's value inside buf.  Nothing is allocated and nothing copied, so
 * a read of a single-version key can go straight from the stored bytes to
 * a reply.  Checks bounds as it walks; RK_ESYNTAX or RK_EMISMATCH for input
 * record_decode() would refuse at the same place.  buf is borrowed.
 */
int record_peek(const uint8_t *buf, size_t len, size_t *n, bool *tombstone, const uint8_t **value,
                size_t *value_len);

/*
 * record_peek() as a read at wall-clock time now_ms sees the record: a
 * sibling expired at now_ms is left out, as if absent, so *n counts the
 * siblings that are not expired (0: the key reads as absent) and, when it
 * is 1, the rest describes that one.  Every sibling is walked and the
 * record must end exactly after the last.  now_ms 0 leaves none out.
 */
int record_peek_at(const uint8_t *buf, size_t len, uint64_t now_ms, size_t *n, bool *tombstone,
                   const uint8_t **value, size_t *value_len);

/* Encoded form of a single sibling (the sibling part of the layout above). */
size_t sibling_encoded_size(const struct sibling *s);
size_t sibling_encode(const struct sibling *s, uint8_t *out);
/* s must be initialised and is emptied first; *used = bytes read.  Errors as record_decode(). */
int sibling_decode(const uint8_t *buf, size_t len, size_t *used, struct sibling *s);

/*
 * The canonical form of r, for digests that must not depend on the order
 * of its siblings (store_arc_digest()):
 *
 *   u32 n                      siblings
 *   n times, in ascending order of their encodings (memcmp over the
 *   shorter length, the shorter first when one is a prefix of the other):
 *     u32 len                  bytes of the sibling's encoding
 *     len bytes                sibling_encode() of it
 *
 * Big-endian.  Two records holding the same siblings, in any order, have
 * the same canonical form; the decoder admits one encoding per sibling, so
 * a record decoded and one built agree.  *out is malloc'd (the caller
 * frees it) and *len its size.  RK_ENOMEM.
 */
int record_canonical(const struct record *r, uint8_t **out, size_t *len);

#endif
