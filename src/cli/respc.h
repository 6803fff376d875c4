/*
 * respc.h - a small blocking RESP client for the ringkv CLI: connect to a
 * node's client port, authenticate, send one command, read one reply; and
 * the two ways the CLI shows a reply (redis-cli's human format, JSON).
 *
 * Where to connect, how long to wait and the password are in struct
 * respc_opts, which the CLI fills in from its options and the environment
 * (cli_data.h).  Each command gets the whole timeout for its
 * round trip; a reply is read with a bound on its size (reply_max), so a
 * broken or hostile server cannot make the CLI buffer without limit.  A
 * server's error reply (-ERR, -CONFLICT, -NOAUTH ...) is a reply, not a
 * failure of the call: the caller decides what it means.
 */
#ifndef RINGKV_RESPC_H
#define RINGKV_RESPC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "buf.h"
#include "dial.h"
#include "resp.h"

/* The node's default client port (docs/DESIGN.md, "Interfaces at a glance"). */
#define RESPC_PORT_DEFAULT 7370
#define RESPC_HOST_DEFAULT "127.0.0.1"
/* redis-cli waits without limit; a CLI that scripts run should not. */
#define RESPC_TIMEOUT_MS_DEFAULT 5000
/*
 * One reply's bytes: the largest value a node accepts (Redis's 512 MiB
 * proto-max-bulk-len, resp.h's bulk hard limit) and 1 MiB for the headers
 * and any other elements around it.
 */
#define RESPC_REPLY_MAX (RESP_BULK_HARD_MAX_DEFAULT + 1024 * 1024)

struct respc_opts {
    char host[ADDR_HOST_MAX + 1];
    uint16_t port;
    uint32_t timeout_ms;
    const char *password; /* borrowed; NULL: no AUTH */
    size_t reply_max;     /* bytes of one reply, RESPC_REPLY_MAX unless a test lowers it */
};

/* The defaults: 127.0.0.1:7370, 5 s, no password, RESPC_REPLY_MAX. */
void respc_opts_init(struct respc_opts *o);

/*
 * Set the address from "HOST[:PORT]" (addr.h's rules; the port defaults
 * to 7370), or the
 * timeout from seconds ("5", "0.5").  what names the source for the error
 * sentence ("-H", "RINGKV_ADDR").  RK_EINVAL with err set on bad input.
 */
int respc_opts_set_addr(struct respc_opts *o, const char *s, const char *what, char *err,
                        size_t err_len);
int respc_opts_set_timeout(struct respc_opts *o, const char *s, const char *what, char *err,
                           size_t err_len);

/* A connection to one node. */
struct respc;

/*
 * Connect to o's address within its timeout and, when o has a password,
 * send AUTH first.  o is copied.  Errors, with one sentence in err:
 * those of dial_connect(), RK_EAUTH when AUTH is refused ("AUTH failed:
 * WRONGPASS ..."), those of respc_call().
 */
int respc_connect(struct respc **out, const struct respc_opts *o, char *err, size_t err_len);

/*
 * Send argv[0..argc) (lens[i] bytes each; lens NULL: NUL-terminated
 * strings) and read one reply into *reply, which the caller frees with
 * resp_reply_free().  Errors, with err set, after which the connection is
 * unusable: RK_EIO (timeout, read or write failure), RK_ECLOSED (the node
 * closed the connection before replying), RK_ETOOBIG (the reply exceeds
 * reply_max), RK_ESYNTAX (not RESP), RK_ENOMEM.
 */
int respc_call(struct respc *c, size_t argc, const char *const *argv, const size_t *lens,
               struct resp_reply **reply, char *err, size_t err_len);

/* "host:port" of the connection, for messages; valid until respc_close(). */
const char *respc_addr(const struct respc *c);

void respc_close(struct respc *c);

/* --- showing replies ----------------------------------------------------------- */

/* A reply type's name for messages ("bulk string", "integer", ...). */
const char *respc_type_name(enum resp_type t);

/*
 * Append r in redis-cli's human (TTY) format, ending in a newline:
 * strings quoted with escapes, "(integer) 5", "(nil)", "(error) ...",
 * numbered and indented aggregates ("1) ", "1# key => value", "1~ ").
 * Returns 0, RK_ENOMEM or RK_ETOOBIG (out's cap).
 */
int respc_reply_format(struct buf *out, const struct resp_reply *r);

/*
 * r as a new JSON value: strings (and simple strings, verbatim text, big
 * numbers) as strings, or as {"hex": "..."} when they are not UTF-8;
 * integers; doubles as reals, or the strings "inf", "-inf", "nan"; booleans;
 * null; arrays, sets and pushes as arrays; maps as objects when every key
 * is a UTF-8 string, otherwise as arrays of [key, value] pairs; errors
 * nested in an aggregate as {"error": "..."}.  NULL when out of memory.
 */
json_t *respc_reply_json(const struct resp_reply *r);

/* s[0..len) as a JSON string, or {"hex": "..."} when it is not UTF-8; NULL when out of memory. */
json_t *respc_json_bytes(const uint8_t *s, size_t len);

#endif
