/*
 * msg.h - the messages nodes exchange inside the sealed channel, encoded
 * as msgpack (proto/PROTOCOL.md documents each one field by field).
 *
 * A message is a msgpack array whose first element is its type number and
 * whose other elements are its fields in a fixed order.  A receiver
 * ignores elements past the fields it knows, so a newer node can add a
 * field at the end without breaking an older one; an unknown type is an
 * error the receiver counts and logs.  Every decoder is bounded (mp.h):
 * each count and length is checked against the limits below before use.
 *
 * Messages are added here as the parts that use them arrive (gossip,
 * replication, handoff); each has a struct, an entry in the type table of
 * msg.c, and a section in PROTOCOL.md.
 */
#ifndef RINGKV_MSG_H
#define RINGKV_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "ring.h"

enum msg_type {
    MSG_IDENT = 1, /* first message each way: who is speaking */
    MSG_PING = 2,  /* liveness probe */
    MSG_PONG = 3,  /* its answer */
    MSG_TYPE_MAX = 3,
};

/* Elements a message array may have: its type, its fields, later additions. */
#define MSG_FIELDS_MAX 64

struct msg_ident {
    char id[RING_NAME_MAX + 1]; /* the sender's node id */
    char rack[RING_NAME_MAX + 1];
    uint32_t version;      /* the sender's protocol version (CHANNEL_VERSION) */
    char peer_addr[272];   /* the address the sender listens on, "host:port" */
    char client_addr[272]; /* its client (RESP) address */
};

struct msg_ping {
    uint64_t seq;
    uint64_t sent_ms; /* the sender's monotonic milliseconds, echoed back */
};

struct msg {
    enum msg_type type;
    union {
        struct msg_ident ident;
        struct msg_ping ping; /* MSG_PING and MSG_PONG */
    } u;
};

/* Append m's msgpack encoding to out.  RK_EINVAL for an invalid field, RK_ENOMEM. */
int msg_encode(const struct msg *m, struct buf *out);

/*
 * Decode one message from in[0..len), which must hold exactly one.
 * Errors: RK_ESYNTAX (malformed, trailing bytes, invalid node id or
 * address), RK_ENOTFOUND (unknown type), RK_ETOOBIG (a field over its bound).
 */
int msg_decode(const uint8_t *in, size_t len, struct msg *out);

/* The type's name for logs ("ident", "ping", ...), or "unknown". */
const char *msg_type_name(int type);

#endif
