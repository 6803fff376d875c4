/*
 * msg_handoff.h - the bodies and answers of the ownership-handoff
 * operations of peer requests (proto/PROTOCOL.md section 7.17).
 *
 * A node that gains an arc of the ring in the target ring (the ring of the
 * members whose status is normal or joining, msg.h's msg_member.target)
 * pulls the arc's records from a node that holds them:
 *
 *   HANDOFF_PULL (op 7)    one batch of the arc's records, after a key
 *   HANDOFF_DIGEST (op 8)  the key count and the digests of the arc's
 *                          sub-arcs, to verify what was pulled
 *   HANDOFF_DONE (op 9)    the asker has the arc, verified
 *
 * Each travels as the body of a REQUEST (msg.h, section 7.14) and its
 * answer as the body of the RESPONSE, so one batch per outstanding pull is
 * the flow control.  An arc (start, end] is the positions after start up
 * to end, wrapping past 2^64-1 when start >= end (start == end: the whole
 * ring).  Statuses are those of msg_kv.h (section 7.15).
 *
 * Decoded fields borrow their bytes from the input: nothing is allocated.
 * A HANDOFF_PULL answer's items go into an array the caller provides
 * (msg_handoff_pull_answer_decode()), so a peer's count never sizes an
 * allocation; the digests of a HANDOFF_DIGEST answer (at most 64 of 32
 * bytes) are copied into the struct.
 */
#ifndef RINGKV_MSG_HANDOFF_H
#define RINGKV_MSG_HANDOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/*
 * A storage key: the key's ring position (u64, big-endian) then the key's
 * bytes; 8 .. 511 bytes, 511 being LMDB's default longest key.  A key in
 * an answer is the key's own bytes, 0 .. 511 - 8.
 */
#define MSG_HANDOFF_SKEY_MIN 8
#define MSG_HANDOFF_SKEY_MAX 511
#define MSG_HANDOFF_KEY_MAX (MSG_HANDOFF_SKEY_MAX - MSG_HANDOFF_SKEY_MIN)
/* Items in one HANDOFF_PULL answer. */
#define MSG_HANDOFF_ITEMS_MAX 4096
/* Largest max_bytes a HANDOFF_PULL asks for, and longest record an item carries (as REPLICA_WRITE).
 */
#define MSG_HANDOFF_BYTES_MAX ((uint64_t)1 << 30)
/* Sub-arcs a HANDOFF_DIGEST asks for, and the bytes of each digest (BLAKE2b-256). */
#define MSG_HANDOFF_PARTS_MAX 64
#define MSG_HANDOFF_DIGEST_LEN 32

/*
 * HANDOFF_PULL (op 7): the records of the arc (start, end] of the target
 * ring whose digest is target, from the key after the storage key `after`
 * (has_after false: from the arc's beginning), at most max_bytes of
 * records (1 .. MSG_HANDOFF_BYTES_MAX) but always the first item, so a
 * record over max_bytes travels alone and every batch advances, and at
 * most max_items items (1 .. MSG_HANDOFF_ITEMS_MAX; 0: not given, the
 * field left out, MSG_HANDOFF_ITEMS_MAX): the asker applies a batch of up
 * to its store's group size in one atomic group.
 */
struct msg_handoff_pull {
    uint64_t target, start, end;
    const uint8_t *after; /* MSG_HANDOFF_SKEY_MIN .. MSG_HANDOFF_SKEY_MAX bytes when has_after */
    size_t after_len;
    bool has_after;
    uint64_t max_bytes;
    uint32_t max_items;
};

/* One record of a HANDOFF_PULL answer: a key and its record (storage/record.h encoding). */
struct msg_handoff_item {
    const uint8_t *key; /* 0 .. MSG_HANDOFF_KEY_MAX bytes */
    size_t key_len;
    const uint8_t *record; /* 1 .. MSG_HANDOFF_BYTES_MAX bytes */
    size_t record_len;
};

/*
 * The answer of a HANDOFF_PULL.  With a status other than MSG_KV_OK: no
 * items, done false, no next.  done: the arc has no key after these.
 * next: the storage key of the last key the scan visited, the asker's next
 * `after`; has_next false when it visited none (then there are no items).
 */
struct msg_handoff_pull_answer {
    uint32_t status; /* enum msg_kv_status */
    struct msg_handoff_item *items;
    size_t n_items; /* 0 .. MSG_HANDOFF_ITEMS_MAX */
    bool done;
    const uint8_t *next; /* MSG_HANDOFF_SKEY_MIN .. MSG_HANDOFF_SKEY_MAX bytes when has_next */
    size_t next_len;
    bool has_next;
};

/*
 * HANDOFF_DIGEST (op 8): the arc (start, end] of the target ring, cut in
 * parts sub-arcs.  count_only (optional element 4, sent only when true):
 * the asker wants the arc's key count alone, and the holder may answer
 * every digest as 32 zero bytes instead of hashing the arc; a holder that
 * predates the element skips it and hashes, which the asker ignores.
 */
struct msg_handoff_digest {
    uint64_t target, start, end;
    uint32_t parts; /* 1 .. MSG_HANDOFF_PARTS_MAX */
    bool count_only;
};

/*
 * The answer of a HANDOFF_DIGEST: the keys on the arc and one digest per
 * sub-arc, as the storage layer computes them.  With MSG_KV_OK, parts is
 * 1 .. MSG_HANDOFF_PARTS_MAX (the asker checks it is the count it asked
 * for); with any other status, keys and parts are 0.
 */
struct msg_handoff_digest_answer {
    uint32_t status; /* enum msg_kv_status */
    uint64_t keys;
    uint32_t parts;
    uint8_t digests[MSG_HANDOFF_PARTS_MAX][MSG_HANDOFF_DIGEST_LEN];
};

/* HANDOFF_DONE (op 9): the asker received and verified the arc: keys and bytes it received. */
struct msg_handoff_done {
    uint64_t target, start, end;
    uint64_t keys, bytes;
};

/* The answer of a HANDOFF_DONE. */
struct msg_handoff_done_answer {
    uint32_t status; /* enum msg_kv_status */
};

/*
 * Encoders append one body or answer to out (left as it was on error):
 * RK_EINVAL for a field out of its bounds or fields that disagree (the
 * rules above), RK_ENOMEM.  Decoders read exactly one from in[0..len):
 * RK_ESYNTAX (malformed, a field under its bound, fields that disagree,
 * bytes after it) or RK_ETOOBIG (a count, a length or a number over its
 * bound); fields after the known ones are skipped, as in every message.
 * On error the output is zeroed.  Decoded pointers point into in, valid
 * while it is.
 */
int msg_handoff_pull_encode(const struct msg_handoff_pull *m, struct buf *out);
int msg_handoff_pull_decode(const uint8_t *in, size_t len, struct msg_handoff_pull *m);

/*
 * The answer's items are read into items[0 .. cap) and m->items points to
 * it: an answer of more than cap items is RK_ETOOBIG.  A caller that takes
 * any answer gives MSG_HANDOFF_ITEMS_MAX (128 KiB of items on 64-bit
 * hosts, the caller's to keep, once per pull it has outstanding).
 */
int msg_handoff_pull_answer_encode(const struct msg_handoff_pull_answer *m, struct buf *out);
int msg_handoff_pull_answer_decode(const uint8_t *in, size_t len, struct msg_handoff_pull_answer *m,
                                   struct msg_handoff_item *items, size_t cap);

int msg_handoff_digest_encode(const struct msg_handoff_digest *m, struct buf *out);
int msg_handoff_digest_decode(const uint8_t *in, size_t len, struct msg_handoff_digest *m);
int msg_handoff_digest_answer_encode(const struct msg_handoff_digest_answer *m, struct buf *out);
int msg_handoff_digest_answer_decode(const uint8_t *in, size_t len,
                                     struct msg_handoff_digest_answer *m);

int msg_handoff_done_encode(const struct msg_handoff_done *m, struct buf *out);
int msg_handoff_done_decode(const uint8_t *in, size_t len, struct msg_handoff_done *m);
int msg_handoff_done_answer_encode(const struct msg_handoff_done_answer *m, struct buf *out);
int msg_handoff_done_answer_decode(const uint8_t *in, size_t len,
                                   struct msg_handoff_done_answer *m);

#endif
