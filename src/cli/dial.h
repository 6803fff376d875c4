/*
 * dial.h - blocking TCP client connections for the ringkv CLI: parse a
 * timeout, connect to a host and port (parsed by addr.h), send
 * everything, receive what has arrived, each step bounded by a deadline.
 *
 * The socket underneath is non-blocking (net_connect() makes it so); every
 * wait is a poll() up to a deadline on the monotonic clock, so a node that
 * stops answering, or a packet filter that drops everything, costs the
 * caller at most its timeout and never a hang.  Failures return a code
 * from error.h and put one sentence naming the address into err, ready
 * for the CLI to print.
 */
#ifndef RINGKV_DIAL_H
#define RINGKV_DIAL_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "buf.h"

/* Largest timeout a person can mean: a day. */
#define DIAL_TIMEOUT_MAX_MS (24u * 3600 * 1000)

/* One connection; the caller owns the struct, dial_connect() fills it in. */
struct dial {
    int fd;                   /* -1 when not connected */
    uint32_t timeout_ms;      /* the timeout the caller works with, for messages */
    char addr[ADDR_TEXT_MAX]; /* "host:port" (addr_format()), for messages */
};

/*
 * Parse a timeout in seconds, a decimal that may have a fraction ("5",
 * "0.25"), into milliseconds rounded up.  RK_EINVAL unless it is a number
 * above 0 and at most DIAL_TIMEOUT_MAX_MS / 1000.
 */
int dial_timeout_parse(const char *s, uint32_t *ms);

/* The deadline timeout_ms from now. */
uint64_t dial_deadline(uint32_t timeout_ms);

/*
 * Connect to host:port within timeout_ms.  On success d holds the
 * connected socket; on failure d->fd is -1 and err says why ("cannot
 * connect to 127.0.0.1:7370: Connection refused", "timed out after 5 s
 * connecting to ...").  Errors: RK_EINVAL (the host does not resolve),
 * RK_EIO.
 */
int dial_connect(struct dial *d, const char *host, uint16_t port, uint32_t timeout_ms, char *err,
                 size_t err_len);

/*
 * Send all of p[0..len) by the deadline.  RK_EIO on a timeout or a broken
 * connection, RK_ECLOSED when the peer reset it.
 */
int dial_send(struct dial *d, const void *p, size_t len, uint64_t deadline_us, char *err,
              size_t err_len);

/*
 * Wait by the deadline for input, then append to in everything that has
 * arrived (at most the room in->max leaves, chunk bytes at a time), so a
 * caller parses once per burst rather than once per read.  Returns 0 when
 * at least one byte was appended; RK_ECLOSED when the peer closed the
 * connection before sending anything more; RK_ETOOBIG when in is full at
 * its max; RK_EIO on a timeout or a read error; RK_ENOMEM.
 */
int dial_recv(struct dial *d, struct buf *in, size_t chunk, uint64_t deadline_us, char *err,
              size_t err_len);

/* Close the connection (a no-op when it is not open). */
void dial_close(struct dial *d);

#endif
