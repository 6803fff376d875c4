/*
 * msg.h - the messages nodes exchange inside the sealed channel, encoded
 * as msgpack (proto/PROTOCOL.md documents each one field by field).
 *
 * A message is a msgpack array whose first element is its type number and
 * whose other elements are its fields in a fixed order.  A receiver
 * ignores elements past the fields it knows, so a newer node can add a
 * field at the end without breaking an older one.  Every decoder is
 * bounded (mp.h): each count and length is checked against the limits
 * below before use.
 *
 * The set of message types has its own version, MSG_PROTO_VERSION, apart
 * from the channel's (channel.h): each type names the version that
 * introduced it, each node announces its version in IDENT (`proto`), and a
 * sender sends a type only to a peer whose version knows it
 * (msg_type_known()).  A receiver that still gets a type it does not know
 * counts it and drops that message, not the connection (msg_decode()
 * says RK_ENOTFOUND and msg_peek_type() gives the number).
 *
 * Messages are added here as the parts that use them arrive (gossip,
 * replication, handoff); each has a struct, an entry in the type table of
 * msg.c with the version that introduced it, and a section in PROTOCOL.md.
 */
#ifndef RINGKV_MSG_H
#define RINGKV_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ring.h"

enum msg_type {
    MSG_IDENT = 1,          /* first message each way: who is speaking */
    MSG_PING = 2,           /* liveness probe */
    MSG_PONG = 3,           /* its answer */
    MSG_GOSSIP_SYN = 4,     /* gossip round, 1 of 3: what the sender knows, as digests */
    MSG_GOSSIP_ACK = 5,     /* 2 of 3: entries the receiver has newer, and what it wants */
    MSG_GOSSIP_ACK2 = 6,    /* 3 of 3: the entries asked for */
    MSG_REQUEST = 7,        /* a question to a peer: id, operation, body */
    MSG_RESPONSE = 8,       /* its answer: the same id, a status, a body */
    MSG_CREDIT = 9,         /* bulk lane: the receiver grants bytes of bulk (since version 2) */
    MSG_BULK = 10,          /* bulk lane: synthetic bulk, for tests and diagnostics (since 2) */
    MSG_BULK_RESPONSE = 11, /* a RESPONSE that travels in the bulk lane (since 4) */
    MSG_TYPE_MAX = 11,
};

/* Elements a message array may have: its type, its fields, later additions. */
#define MSG_FIELDS_MAX 64

/*
 * The message-set version this node speaks.  1: the types of the first
 * release (IDENT .. GOSSIP_ACK2); a peer whose IDENT has no `proto` field
 * speaks version 1.  2: IDENT carries `proto` and the cluster settings,
 * and a receiver drops a message of an unknown type instead of the
 * connection.  3: a sealed frame to a peer of version 3 may carry several
 * messages one after another.  4: BULK_RESPONSE, a RESPONSE in the bulk
 * lane (a handoff batch).  It goes up by one with each release that adds
 * types or changes what a frame holds.
 */
#define MSG_PROTO_VERSION 4
#define MSG_PROTO_V1 1
/* Message set 3: one sealed frame may carry several messages (msg_frame_next()). */
#define MSG_PROTO_V3 3
/* Message set 4: BULK_RESPONSE. */
#define MSG_PROTO_V4 4

/* Longest conflicts mode a cluster settings announcement names ("siblings"). */
#define MSG_CONFLICTS_MAX 16

/*
 * The settings every member of a cluster must share, as IDENT announces
 * them: they decide where a key lives (rf, ring_seed) and how concurrent
 * versions merge (conflicts).  The node compares them at the handshake.
 */
struct msg_cluster {
    uint32_t rf;                           /* replicas of each key, >= 1 */
    char conflicts[MSG_CONFLICTS_MAX + 1]; /* "siblings", "lww": [a-z0-9_-], 1..16 bytes */
    uint8_t ring_seed[RING_SEED_LEN];      /* the ring's hash seed */
};

struct msg_ident {
    char id[RING_NAME_MAX + 1]; /* the sender's node id */
    char rack[RING_NAME_MAX + 1];
    uint32_t version;      /* the sender's channel version (CHANNEL_VERSION) */
    char peer_addr[272];   /* the address the sender listens on, "host:port" */
    char client_addr[272]; /* its client (RESP) address */
    uint32_t proto;        /* its message-set version, >= 1; MSG_PROTO_V1 when absent */
    bool has_cluster;      /* it announced cluster settings (absent: a version-1 node, a tool) */
    struct msg_cluster cluster;
    uint64_t instance; /* random per process of the sender; 0 when absent (an earlier node) */
    /* the largest frame the sender reads (its frame-max), >= FRAME_MAX_MIN; 0 when absent */
    uint32_t frame_max;
};

struct msg_ping {
    uint64_t seq;
    uint64_t sent_ms; /* the sender's monotonic milliseconds, echoed back */
    /*
     * PING only (a PONG carries seq and sent_ms alone): the generation and
     * version of the sender's own member entry when it sent the ping, its
     * latest heartbeat; 0, 0 when absent (an earlier node, a tool).
     */
    uint64_t generation, version;
};

/* Bounds that keep every gossip message small whatever the cluster's size. */
#define MSG_GOSSIP_DIGESTS_MAX 256 /* digests in a SYN, requests in an ACK */
#define MSG_GOSSIP_ENTRIES_MAX 64  /* member entries in an ACK or ACK2 */
#define MSG_ADDR_MAX 272           /* "host:port" with a 255-byte host name */

/* A member's status (membership.h); its number is its wire form. */
enum msg_member_status {
    MSG_MEMBER_JOINING = 0,
    MSG_MEMBER_NORMAL = 1,
    MSG_MEMBER_LEAVING = 2,
    MSG_MEMBER_LEFT = 3,
    MSG_MEMBER_REMOVED = 4,
    MSG_MEMBER_STATUS_MAX = 4,
};

/*
 * One member's entry, as gossip carries it and the data directory keeps
 * it.  Written only by its member, except a removal; newer means a greater
 * (generation, version).
 */
struct msg_member {
    char id[RING_NAME_MAX + 1];
    char rack[RING_NAME_MAX + 1];
    uint32_t tokens;              /* 1 .. RING_TOKENS_MAX */
    char peer_addr[MSG_ADDR_MAX]; /* "host:port" */
    char client_addr[MSG_ADDR_MAX];
    uint32_t status;       /* enum msg_member_status */
    uint64_t generation;   /* grows at every start of the member */
    uint64_t version;      /* grows at every change and heartbeat */
    uint8_t instance[16];  /* random per data directory */
    uint64_t ring_version; /* grows when rack, tokens or status change */
    uint64_t digest;       /* the ring digest the member holds */
    /*
     * The digest of the target ring the member holds: the ring of the
     * entries whose status is normal or joining, equal to digest when no
     * change is under way.  0: not told (an entry of 11 fields, from a
     * node that predates it).
     */
    uint64_t target;
    /*
     * The token count the member moves to (`ringkv tokens`): its tokens
     * in the target ring, while its tokens in the ring in force stay
     * `tokens` until the arcs that move are handed off.  0: no change of
     * its token count under way (or an entry of 11 or 12 fields, from a
     * node that predates it).
     */
    uint32_t target_tokens;
};

/* (id, generation, version): what a SYN says it knows of a member. */
struct msg_digest {
    char id[RING_NAME_MAX + 1];
    uint64_t generation;
    uint64_t version;
};

struct msg_gossip_syn {
    uint64_t epoch; /* the sender's ring epoch and digest (membership.h) */
    uint64_t digest;
    bool complete; /* the digests cover every entry the sender has */
    size_t n;
    struct msg_digest *digests; /* n <= MSG_GOSSIP_DIGESTS_MAX, owned */
};

/* ACK and ACK2 (ACK2 has no requests). */
struct msg_gossip_entries {
    size_t n;
    struct msg_member *entries; /* n <= MSG_GOSSIP_ENTRIES_MAX, owned */
    size_t n_requests;
    struct msg_digest *requests; /* ids wanted; generation and version unused; owned */
};

/*
 * The bulk lane's credit (src/node/lanes.h has the rules): grant more
 * bytes of bulk, and the window the receiver keeps, the same in every
 * CREDIT of a connection.  1 <= window <= MSG_CREDIT_WINDOW_MAX and
 * grant <= window.
 */
#define MSG_CREDIT_WINDOW_MAX ((uint64_t)1 << 30)
struct msg_credit {
    uint64_t grant;
    uint64_t window;
};

/*
 * Synthetic bulk: a sequence number and bytes the receiver counts and
 * discards.  Decoded data points into the decoded input (borrowed: valid
 * while that input is); at most MSG_BULK_DATA_MAX bytes, a frame's worth.
 */
#define MSG_BULK_DATA_MAX ((size_t)1 << 24)
struct msg_bulk {
    uint64_t seq;
    const uint8_t *data;
    size_t len;
};

/*
 * Peer requests (PROTOCOL.md section 7.14).  A REQUEST names an operation;
 * a node answers every REQUEST it can decode with one RESPONSE of the
 * same id on the same connection, MSG_RESULT_UNKNOWN_OP for an operation
 * it does not know.  Operation and result numbers are never reused.
 */
enum msg_op {
    MSG_OP_STATUS = 1,         /* the member's own view: body nil, answer struct msg_status_view */
    MSG_OP_REPLICA_WRITE = 2,  /* merge a version into a key (msg_kv.h) */
    MSG_OP_REPLICA_READ = 3,   /* a key's record (msg_kv.h) */
    MSG_OP_FORWARD = 4,        /* a client's read or write for a replica to coordinate (msg_kv.h) */
    MSG_OP_HINTS_HELD = 5,     /* whether the member holds a hint of a key (msg_kv.h) */
    MSG_OP_REPLICA_REAP = 6,   /* delete a key's tombstone if unchanged (msg_kv.h) */
    MSG_OP_HANDOFF_PULL = 7,   /* a batch of the records of an arc (msg_handoff.h) */
    MSG_OP_HANDOFF_DIGEST = 8, /* the digests of an arc's sub-arcs (msg_handoff.h) */
    MSG_OP_HANDOFF_DONE = 9,   /* the asker holds the arc, verified (msg_handoff.h) */
    MSG_OP_MAX = 9,
};

enum msg_result {
    MSG_RESULT_OK = 0,         /* the body is the operation's answer */
    MSG_RESULT_UNKNOWN_OP = 1, /* the receiver does not know the operation; body nil */
    MSG_RESULT_BAD_BODY = 2,   /* the operation's body did not decode; body nil */
    MSG_RESULT_FAILED = 3,     /* the operation failed; body nil */
    MSG_RESULT_MAX = 3,
};

/*
 * A REQUEST or a RESPONSE.  body is one msgpack value (the operation's
 * argument or answer; nil when there is none).  Decoded: body points into
 * the bytes msg_decode() read, valid while they are (a handler that keeps
 * any of it copies it).  To encode: body borrowed, body_len 0 sends nil.
 */
struct msg_request {
    uint64_t id;
    uint32_t code; /* REQUEST: the operation, enum msg_op; RESPONSE: the result, enum msg_result */
    uint8_t *body;
    size_t body_len;
    /*
     * To encode: the caller made body with this library's encoders, so it
     * is one value and encoding does not walk it to check (a node's own
     * requests and answers); otherwise a body that is not is refused.
     */
    bool body_made;
};

/* The answer to MSG_OP_STATUS: the member's own view of itself and the cluster. */
struct msg_status_view {
    char id[RING_NAME_MAX + 1];
    uint32_t status; /* its own entry's status, enum msg_member_status */
    uint64_t epoch;  /* its ring's epoch and digest */
    uint64_t digest;
    bool converged;    /* every member up reports its digest */
    uint32_t up_count; /* members it sees up, itself included */
    uint32_t members;  /* members in its table */
    uint64_t uptime_s;
    uint64_t keys; /* keys in its store, tombstones included */
};

struct msg {
    enum msg_type type;
    union {
        struct msg_ident ident;
        struct msg_ping ping;              /* MSG_PING and MSG_PONG */
        struct msg_gossip_syn syn;         /* MSG_GOSSIP_SYN */
        struct msg_gossip_entries entries; /* MSG_GOSSIP_ACK and MSG_GOSSIP_ACK2 */
        struct msg_credit credit;          /* MSG_CREDIT */
        struct msg_bulk bulk;              /* MSG_BULK */
        struct msg_request request;        /* MSG_REQUEST, MSG_RESPONSE, MSG_BULK_RESPONSE */
    } u;
};

/*
 * Append m's msgpack encoding to out; on error out is left as it was.
 * RK_EINVAL for an invalid field (an entry that fails msg_member_valid(),
 * requests in an ACK2), RK_ETOOBIG for a list over its bound or a bounded
 * out that is full, RK_ENOMEM.
 */
int msg_encode(const struct msg *m, struct buf *out);

/*
 * Decode one message from in[0..len), which must hold exactly one.  Gossip
 * messages own arrays allocated here, each count checked against its bound
 * and against the bytes left before allocation; msg_free() releases them
 * (and is harmless on every other message).
 * Errors: RK_ESYNTAX (malformed, trailing bytes, invalid node id, address
 * or entry), RK_ENOTFOUND (a well-formed head whose type this node does
 * not know: the one error after which a receiver keeps the connection),
 * RK_ETOOBIG (a field or a list over its bound), RK_ENOMEM; on error *out
 * is zeroed and owns nothing.
 */
int msg_decode(const uint8_t *in, size_t len, struct msg *out);

/*
 * The type number at the head of in[0..len) into *type, whether or not
 * this node knows it (for counting the unknown ones).  RK_ESYNTAX when
 * the bytes do not start with an array head and a uint.
 */
int msg_peek_type(const uint8_t *in, size_t len, uint64_t *type);

/*
 * The length of the first message of a frame's plaintext in[0..len), one
 * whole msgpack value (nested at most twice MSG_SKIP_DEPTH deep), into
 * *used, without decoding it: a frame from a peer of message set 3 holds
 * several messages back to back, and each, known type or not, is handed
 * to msg_decode() on its own bytes.  RK_ESYNTAX when in does not start
 * with a whole value (empty, cut short), RK_ETOOBIG when it nests deeper
 * or declares more than the reader allows; *used is 0 then.
 */
int msg_frame_next(const uint8_t *in, size_t len, size_t *used);

/*
 * msg_decode() of the first message of a frame's plaintext in[0..len),
 * whose length goes into *used: what msg_frame_next() and msg_decode() of
 * those bytes give, reading them once.  The bytes after it are not looked
 * at.  Errors as msg_decode(), with *used 0: the caller that must step
 * over an unknown type (RK_ENOTFOUND), or name the error the frame's own
 * walk finds first, asks msg_frame_next().
 */
int msg_decode_next(const uint8_t *in, size_t len, struct msg *out, size_t *used);

/*
 * Whether a peer of message-set version proto knows type: the type exists
 * here and was introduced in proto or before.  A sender asks this before
 * sending a type that is newer than version 1.
 */
bool msg_type_known(int type, uint32_t proto);

/* Whether c's fields are valid: rf >= 1, conflicts a lowercase name. */
bool msg_cluster_valid(const struct msg_cluster *c);

/*
 * A list of member entries on its own, as the data directory keeps the
 * member table: a msgpack array of entries in the gossip encoding.
 * Encoding refuses an invalid entry (RK_EINVAL), as msg_encode() does.
 * Decoding allocates *out (free() it; NULL when there are none), at most
 * max entries, each count checked against the bytes left first.  Errors
 * as msg_decode()'s (RK_ETOOBIG over max); on error *out is NULL.
 */
int msg_members_encode(const struct msg_member *e, size_t n, struct buf *out);
int msg_members_decode(const uint8_t *in, size_t len, size_t max, struct msg_member **out,
                       size_t *n);

/* Release what msg_decode() allocated; m may then be decoded into again. */
void msg_free(struct msg *m);

/* Whether e's fields are valid: ids, racks, addresses, tokens, status. */
bool msg_member_valid(const struct msg_member *e);

/* The type's name for logs ("ident", "ping", ...), or "unknown". */
const char *msg_type_name(int type);

/* An operation's name for logs and metrics ("status"), or "unknown". */
const char *msg_op_name(uint32_t op);

/*
 * A STATUS answer, the body of its RESPONSE: encoding refuses an invalid id
 * (RK_EINVAL); decoding reads exactly one answer from in[0..len) (fields
 * after the known ones skipped), RK_ESYNTAX or RK_ETOOBIG as msg_decode().
 */
int msg_status_view_encode(const struct msg_status_view *v, struct buf *out);
int msg_status_view_decode(const uint8_t *in, size_t len, struct msg_status_view *out);

#endif
