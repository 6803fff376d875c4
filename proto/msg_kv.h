/*
 * msg_kv.h - the bodies of the data operations of peer requests
 * (proto/PROTOCOL.md section 7.15): a replica write, a replica read, and a
 * client request forwarded to a replica that coordinates it.
 *
 * These travel as the body of a REQUEST (msg.h, section 7.14) and of its
 * RESPONSE.  Every answer of the three operations has one form, a status
 * and what goes with it, so that a coordinator's error (not enough
 * replicas, too few answered in time) reaches the node a client asked,
 * through a forward, with its figures.
 *
 * Decoded bodies borrow their bytes from the input; nothing is allocated.
 * The key, record and context inside are checked for their bounds here and
 * for their own grammar by the layer that uses them (record_decode(),
 * vclock_decode()), which is where a bad one is refused.
 */
#ifndef RINGKV_MSG_KV_H
#define RINGKV_MSG_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ring.h"

/* Longest key a body carries: above any key-max a node accepts. */
#define MSG_KV_KEY_MAX ((size_t)1 << 16)
/* Longest record, value or context a body carries: the frame bounds it further. */
#define MSG_KV_BYTES_MAX ((size_t)1 << 30)
/* Most siblings a record holds (RECORD_SIBLINGS_MAX): a part's indexes stay within it. */
#define MSG_KV_SIBLINGS_MAX 4096
/*
 * Bytes a body adds around its key and record, at most: array and bin
 * heads, the numbers, a hint's node id.  A record of a REPLICA_WRITE fits
 * a body of B bytes when it is at most B - key length - this; an answer's
 * at most B - this.
 */
#define MSG_KV_FIELDS_MAX_BYTES 256

/* Why an operation ended; numbers are never reused (PROTOCOL.md 7.15). */
enum msg_kv_status {
    MSG_KV_OK = 0,
    MSG_KV_NOTFOUND = 1,   /* a read: no record */
    MSG_KV_NOREPLICAS = 2, /* too few replicas reachable to try */
    MSG_KV_TRYAGAIN = 3,   /* tried: too few answered in time */
    MSG_KV_FULL = 4,       /* the store or its disk is full */
    MSG_KV_DISK = 5,       /* the disk failed to flush: writes refused until a restart */
    MSG_KV_CONFLICT = 6,   /* the context is older than a write made since */
    MSG_KV_CONTEXT = 7,    /* the context names versions never issued */
    MSG_KV_TOOBIG = 8,     /* over a limit: a key, a value, max-siblings */
    MSG_KV_CLOSED = 9,     /* the node is shutting down */
    MSG_KV_FAILED = 10,    /* anything else */
    MSG_KV_BADINPUT = 11,  /* a record or context that does not decode */
    MSG_KV_CLOCKFULL = 12, /* the key's version vector is full (VCLOCK_ENTRIES_MAX entries) */
    /* the statuses any operation may answer, the handoff's (msg_handoff.h) included */
    MSG_KV_STATUS_MAX = 12,
    /* REPLICA_READ, REPLICA_WRITE: not this node's key, and no copy of it here (coord.h) */
    MSG_KV_NOTMINE = 13,
    MSG_KV_ANSWER_STATUS_MAX = 13, /* the statuses of struct msg_kv_answer */
};

/*
 * A ringkv error code (error.h) as a status, and back (an unknown status:
 * RK_EIO; MSG_KV_NOTMINE, which no error code names: RK_ETRYAGAIN).
 */
uint32_t msg_kv_status_from_rk(int rc);
int msg_kv_status_to_rk(uint32_t status);

/*
 * REPLICA_WRITE (op 2): merge record (record.h encoding, one or more
 * versions) into key; with a hint target (hint[0] != 0) keep it as a hint
 * for that replica instead.
 */
struct msg_replica_write {
    const uint8_t *key;
    size_t key_len;
    const uint8_t *record;
    size_t record_len;
    char hint[RING_NAME_MAX + 1]; /* "" when none */
};

/*
 * REPLICA_READ (op 3): the record of key.  With part set (fields `from`
 * and `digest` on the wire), the reader takes a record over one frame in
 * parts: the answer carries whole siblings from index `from` of the
 * record whose digest is `digest` (0 on the first part).  Without it, the
 * whole record in one answer, as before parts existed.
 */
struct msg_replica_read {
    const uint8_t *key;
    size_t key_len;
    bool part;
    uint32_t from;   /* 0 .. MSG_KV_SIBLINGS_MAX - 1 */
    uint64_t digest; /* the record the earlier parts came from; 0: none */
};

enum msg_forward_kind { MSG_FORWARD_READ = 0, MSG_FORWARD_WRITE = 1, MSG_FORWARD_KIND_MAX = 1 };

/* FORWARD (op 4): a client's read or write of key, for a replica to coordinate. */
struct msg_forward {
    uint32_t kind;
    const uint8_t *key;
    size_t key_len;
    const uint8_t *value; /* WRITE: NULL with tombstone */
    size_t value_len;
    bool tombstone;
    const uint8_t *context; /* WRITE: a vclock encoding; NULL when none (a blind write) */
    size_t context_len;
    uint32_t quorum; /* r or w asked for; 0: the cluster's */
    bool part;       /* READ: takes the record in parts, as a REPLICA_READ with part */
    uint32_t from;
    uint64_t digest;
    /*
     * WRITE: how the version's expiry is chosen (storage/store.h's enum
     * store_expiry: 0 set, 1 keep, 2 touch) and the expiry (ms since the
     * epoch; 0: none).  Sent as fields 8 and 9 (after from and digest, 0)
     * only when either is not 0, so a write without them has the bytes it
     * had before expiry.
     */
    uint32_t expiry;
    uint64_t expire_ms;
    /*
     * The forwards this request has travelled, this one included (field
     * 10): 1 .. MSG_FORWARD_HOPS_MAX.  0: not sent, as from a node that
     * predates it (then the receiver never forwards the request again).
     * Sent, it brings fields 6 .. 9 with it (0 but a read's parts), so a
     * read with hops must take parts.
     */
    uint32_t hops;
};

/* Highest msg_forward.expiry. */
#define MSG_FORWARD_EXPIRY_MAX 2
/* Highest msg_forward.hops a body carries (coord.c forwards far fewer times). */
#define MSG_FORWARD_HOPS_MAX 16

/* The answer of every data operation. */
struct msg_kv_answer {
    uint32_t status;       /* enum msg_kv_status, up to MSG_KV_ANSWER_STATUS_MAX */
    uint32_t answered;     /* NOREPLICAS, TRYAGAIN: replicas that answered (or were reachable) */
    uint32_t needed;       /* and how many were needed */
    const uint8_t *record; /* a read's record when status is OK; else NULL */
    size_t record_len;
    bool flag; /* REPLICA_WRITE: the stored record changed; FORWARD write: a live value existed */
    /*
     * A part of a record over one frame (fields 5 .. 7 on the wire; absent:
     * the whole record, first and next 0).  record holds the siblings
     * first .. next - 1 of the record whose digest is digest; next 0: the
     * last part.
     */
    bool part;
    uint32_t first;  /* 0 .. MSG_KV_SIBLINGS_MAX - 1 */
    uint32_t next;   /* 0, or first + 1 .. MSG_KV_SIBLINGS_MAX - 1 */
    uint64_t digest; /* not 0 */
};

/*
 * Encoders append one body to out (left as it was on error): RK_EINVAL for
 * a field out of its bounds, RK_ENOMEM.  Decoders read exactly one body
 * from in[0..len): RK_ESYNTAX (malformed, trailing bytes, a bad id), or
 * RK_ETOOBIG (a field over its bound); fields after the known ones are
 * skipped, as in every message.  Decoded pointers point into in.
 */
int msg_replica_write_encode(const struct msg_replica_write *m, struct buf *out);
int msg_replica_write_decode(const uint8_t *in, size_t len, struct msg_replica_write *m);
int msg_replica_read_encode(const struct msg_replica_read *m, struct buf *out);
int msg_replica_read_decode(const uint8_t *in, size_t len, struct msg_replica_read *m);
int msg_forward_encode(const struct msg_forward *m, struct buf *out);
int msg_forward_decode(const uint8_t *in, size_t len, struct msg_forward *m);
int msg_kv_answer_encode(const struct msg_kv_answer *m, struct buf *out);
int msg_kv_answer_decode(const uint8_t *in, size_t len, struct msg_kv_answer *m);

#endif
