/*
 * cli_key.c - `ringkv keygen` and `ringkv peer-check`.
 *
 * keygen writes a new cluster key: without FILE it prints the 64 hex
 * digits; with FILE it creates the file with mode 0600 and never replaces
 * one, since a node whose key changed under it can no longer reach the
 * others.
 *
 * peer-check answers an operator's "can I reach this node's peer port
 * with this key?": it connects to the port, runs the sealed-channel
 * handshake as the initiator (channel.h), sends IDENT (id "ringkv-cli",
 * rack "cli") and a PING, and waits for the node's IDENT and PONG.  It
 * prints who answered and the round-trip time of the ping.  The whole
 * check runs under one deadline (--timeout, RINGKV_TIMEOUT, else 5 s).
 * Every way it can fail ends in one sentence saying what went wrong and
 * exit code 1.
 */
#include "cli_key.h"

#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "addr.h"
#include "channel.h"
#include "cli.h"
#include "cli_data.h"
#include "clock.h"
#include "dial.h"
#include "error.h"
#include "frame.h"
#include "hex.h"
#include "msg.h"
#include "net.h"
#include "respc.h"

#define KEYGEN_USAGE "ringkv keygen [--json] [FILE]"
#define PEER_CHECK_USAGE "ringkv peer-check --cluster-key FILE [-t SECONDS] [--json] HOST[:PORT]"

/* The node's default peer port (docs/DESIGN.md, "Interfaces at a glance"). */
#define NODE_PEER_PORT 7371
/* How peer-check introduces itself in its IDENT, and so in the node's log. */
#define NODE_CHECK_ID "ringkv-cli"
#define NODE_CHECK_RACK "cli"
/* The sequence number of peer-check's one PING. */
#define NODE_CHECK_PING_SEQ 1
/* Bytes asked of each read. */
#define NODE_READ_CHUNK (64 * 1024)

enum { OPT_JSON = 256, OPT_CLUSTER_KEY };

/* --- keygen ---------------------------------------------------------------------- */

/* Print json, or report that it could not be built; returns the exit code. */
static int node_json_print(json_t *j)
{
    return j != NULL ? cli_json_print(j) : cli_error("cannot build the JSON output");
}

static int keygen_print(const struct channel_key *k, bool json)
{
    char hex[2 * CHANNEL_KEY_BYTES + 1];
    int rc;

    channel_key_hex(k, hex);
    if (json) {
        rc = node_json_print(json_pack("{s:s}", "key", hex));
    } else {
        printf("%s\n", hex);
        rc = CLI_OK;
    }
    sodium_memzero(hex, sizeof(hex));
    return rc;
}

static int keygen_write(const struct channel_key *k, const char *path, bool json)
{
    uint8_t id[CHANNEL_CLUSTER_ID_BYTES];
    char id_hex[2 * CHANNEL_CLUSTER_ID_BYTES + 1], err[512];
    struct stat st;

    if (lstat(path, &st) == 0) {
        return cli_error("%s already exists: refusing to overwrite a cluster key (remove the file "
                         "first if you mean to replace it)",
                         path);
    }
    if (channel_key_write(k, path, err, sizeof(err)) != 0) {
        return cli_error("%s", err);
    }
    channel_key_cluster_id(k, id);
    hex_encode(id_hex, id, sizeof(id));
    if (json) {
        return node_json_print(json_pack("{s:s,s:s}", "file", path, "cluster_id", id_hex));
    }
    printf("wrote a new cluster key to %s (mode 0600, cluster id %s)\n", path, id_hex);
    return CLI_OK;
}

int cli_key_keygen(int argc, char **argv)
{
    static const struct option opts[] = {{"json", no_argument, NULL, OPT_JSON}, {0, 0, 0, 0}};
    struct channel_key *k;
    bool json = false;
    int c, rc;

    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c != OPT_JSON) {
            return cli_usage(KEYGEN_USAGE, "unknown option '%s'", argv[optind - 1]);
        }
        json = true;
    }
    if (argc - optind > 1) {
        return cli_usage(KEYGEN_USAGE, "expected at most one FILE");
    }
    rc = channel_key_generate(&k);
    if (rc != 0) {
        return cli_error("cannot generate a cluster key: %s", rk_strerror(rc));
    }
    rc = optind == argc ? keygen_print(k, json) : keygen_write(k, argv[optind], json);
    channel_key_free(k);
    return rc;
}

/* --- peer-check ------------------------------------------------------------------ */

struct check_opts {
    const char *key_path;
    uint32_t timeout_ms;
    bool json;
    char host[ADDR_HOST_MAX + 1];
    uint16_t port;
};

/* One check: the connection, its channel and what the node said. */
struct check {
    const struct check_opts *o;
    struct dial d;
    struct channel ch;
    struct buf in, out, msg;
    uint64_t deadline, t_start, t_open, t_ping, t_pong;
    struct msg_ident ident;
    bool have_ident, have_pong;
    char err[512];
};

static int check_parse(int argc, char **argv, struct check_opts *o)
{
    static const struct option opts[] = {{"cluster-key", required_argument, NULL, OPT_CLUSTER_KEY},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, OPT_JSON},
                                         {0, 0, 0, 0}};
    const char *timeout = NULL, *timeout_from = "-t", *why;
    struct addr a;
    int c;

    memset(o, 0, sizeof(*o));
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:", opts, NULL)) != -1) {
        if (c == OPT_CLUSTER_KEY) {
            o->key_path = optarg;
        } else if (c == 't') {
            timeout = optarg;
        } else if (c == OPT_JSON) {
            o->json = true;
        } else {
            return cli_usage(PEER_CHECK_USAGE, "%s option '%s'",
                             c == ':' ? "no value for" : "unknown", argv[optind - 1]);
        }
    }
    if (timeout == NULL) {
        timeout = getenv(CLI_ENV_TIMEOUT);
        timeout_from = CLI_ENV_TIMEOUT;
    }
    o->timeout_ms = RESPC_TIMEOUT_MS_DEFAULT;
    if (timeout != NULL && *timeout != '\0' && dial_timeout_parse(timeout, &o->timeout_ms) != 0) {
        return cli_usage(PEER_CHECK_USAGE, "%s: expected a number of seconds above 0, not '%.64s'",
                         timeout_from, timeout);
    }
    if (o->key_path == NULL || argc - optind != 1) {
        return cli_usage(PEER_CHECK_USAGE, "expected --cluster-key FILE and one HOST[:PORT]");
    }
    if (addr_parse(argv[optind], strlen(argv[optind]), NODE_PEER_PORT, &a, &why) != 0) {
        return cli_usage(PEER_CHECK_USAGE, "'%.300s' is not HOST[:PORT] (%s)", argv[optind], why);
    }
    memcpy(o->host, a.host, sizeof(o->host));
    o->port = a.port;
    return 0;
}

/* Why a channel failed, in words for the operator. */
static const struct {
    int code;
    const char *why;
} check_channel_errors[] = {
    {RK_EAUTH, "the node holds another cluster key than --cluster-key (its proof did not verify)"},
    {RK_EMISMATCH, "the node speaks another version of the peer protocol"},
    {RK_ETOOBIG, "the other end does not speak the ringkv peer protocol (is it the client port?)"},
    {RK_ESYNTAX, "the other end does not speak the ringkv peer protocol (is it the client port?)"},
};

static void check_channel_error(struct check *k, int rc)
{
    const char *why = rk_strerror(rc);

    for (size_t i = 0; i < sizeof(check_channel_errors) / sizeof(check_channel_errors[0]); i++) {
        if (check_channel_errors[i].code == rc) {
            why = check_channel_errors[i].why;
        }
    }
    if (rc == RK_EAUTH && k->t_open != 0) {
        why = "a frame from the node did not open with the session keys";
    }
    snprintf(k->err, sizeof(k->err), "%s with %s failed: %s",
             k->t_open == 0 ? "the handshake" : "the sealed channel", k->d.addr, why);
}

static int check_flush(struct check *k)
{
    int rc = dial_send(&k->d, buf_data(&k->out), k->out.len, k->deadline, k->err, sizeof(k->err));

    buf_clear(&k->out);
    return rc;
}

/*
 * Take in the next frame, reading until one is complete: the result of
 * channel_feed(), or an error with k->err set.
 */
static int check_next(struct check *k)
{
    for (;;) {
        size_t used = 0;
        int rc = channel_feed(&k->ch, buf_data(&k->in), k->in.len, &used, &k->out, &k->msg);
        buf_consume(&k->in, used);
        if (rc < 0) {
            check_channel_error(k, rc);
        }
        if (rc != CHANNEL_NEED_MORE) {
            return rc;
        }
        rc = dial_recv(&k->d, &k->in, NODE_READ_CHUNK, k->deadline, k->err, sizeof(k->err));
        if (rc == RK_ECLOSED) {
            snprintf(k->err, sizeof(k->err), "%s closed the connection %s", k->d.addr,
                     k->t_open == 0 ? "during the handshake (is it a ringkv peer port?)"
                                    : "after the handshake, before it answered the ping");
        } else if (rc == RK_EIO && k->t_open == 0) {
            size_t n = strlen(k->err);
            snprintf(k->err + n, sizeof(k->err) - n,
                     " during the handshake (is it a ringkv peer port?)");
        }
        if (rc != 0) {
            return rc;
        }
    }
}

/* Run the handshake as the initiator until the channel is open. */
static int check_handshake(struct check *k)
{
    int rc = channel_start(&k->ch, &k->out);

    if (rc != 0) {
        snprintf(k->err, sizeof(k->err), "cannot start the handshake: %s", rk_strerror(rc));
        return rc;
    }
    rc = check_flush(k);
    while (rc == 0 && !channel_is_open(&k->ch)) {
        rc = check_next(k);
        rc = rc > 0 ? check_flush(k) : rc;
    }
    k->t_open = clock_mono_us();
    return rc;
}

/* Seal m into the output. */
static int check_put(struct check *k, const struct msg *m)
{
    struct buf plain;
    int rc;

    buf_init(&plain, 0);
    rc = msg_encode(m, &plain);
    if (rc == 0) {
        rc = channel_seal(&k->ch, buf_data(&plain), plain.len, &k->out);
    }
    buf_free(&plain);
    if (rc != 0) {
        snprintf(k->err, sizeof(k->err), "cannot send %s: %s", msg_type_name(m->type),
                 rk_strerror(rc));
    }
    return rc;
}

/*
 * IDENT, then PING: the node takes nothing else before it knows who
 * speaks.  IDENT must carry two addresses and the CLI listens on none, so
 * both are the address the check connects from, which is at least where
 * the node's log can say the check came from.
 */
static int check_send_hello(struct check *k)
{
    struct msg ident = {.type = MSG_IDENT};
    struct msg ping = {.type = MSG_PING};
    char local[NET_ADDR_TEXT];
    int rc;

    snprintf(ident.u.ident.id, sizeof(ident.u.ident.id), "%s", NODE_CHECK_ID);
    snprintf(ident.u.ident.rack, sizeof(ident.u.ident.rack), "%s", NODE_CHECK_RACK);
    ident.u.ident.version = CHANNEL_VERSION;
    ident.u.ident.proto = MSG_PROTO_VERSION;
    net_local_text(k->d.fd, local);
    snprintf(ident.u.ident.peer_addr, sizeof(ident.u.ident.peer_addr), "%s", local);
    snprintf(ident.u.ident.client_addr, sizeof(ident.u.ident.client_addr), "%s", local);
    k->t_ping = clock_mono_us();
    ping.u.ping.seq = NODE_CHECK_PING_SEQ;
    ping.u.ping.sent_ms = k->t_ping / 1000;
    rc = check_put(k, &ident);
    if (rc == 0) {
        rc = check_put(k, &ping);
    }
    return rc == 0 ? check_flush(k) : rc;
}

static void check_on_ident(struct check *k, const struct msg *m)
{
    k->ident = m->u.ident;
    k->have_ident = true;
}

static void check_on_pong(struct check *k, const struct msg *m)
{
    if (m->u.ping.seq == NODE_CHECK_PING_SEQ && !k->have_pong) {
        k->t_pong = clock_mono_us();
        k->have_pong = true;
    }
}

/* What peer-check does with each message; others are ignored. */
static const struct {
    enum msg_type type;
    void (*handle)(struct check *k, const struct msg *m);
} check_handlers[] = {
    {MSG_IDENT, check_on_ident},
    {MSG_PONG, check_on_pong},
};

/* One message of a frame, in[0..len). */
static int check_message_one(struct check *k, const uint8_t *in, size_t len)
{
    struct msg m;
    int rc = msg_decode(in, len, &m);

    if (rc == RK_ENOTFOUND) {
        return 0; /* a message type newer than this ringkv */
    }
    if (rc != 0) {
        snprintf(k->err, sizeof(k->err), "%s sent a message this ringkv cannot read: %s", k->d.addr,
                 rk_strerror(rc));
        return rc;
    }
    for (size_t i = 0; i < sizeof(check_handlers) / sizeof(check_handlers[0]); i++) {
        if (check_handlers[i].type == m.type) {
            check_handlers[i].handle(k, &m);
        }
    }
    msg_free(&m); /* gossip messages hold allocations */
    return 0;
}

/* Every message of the frame in k->msg: one, or several from a node of message set 3. */
static int check_message(struct check *k)
{
    const uint8_t *in = buf_data(&k->msg);
    size_t at = 0, used = 0;
    int rc = 0;

    while (rc == 0 && at < k->msg.len) {
        rc = msg_frame_next(in + at, k->msg.len - at, &used);
        if (rc != 0) {
            snprintf(k->err, sizeof(k->err), "%s sent a frame this ringkv cannot read: %s",
                     k->d.addr, rk_strerror(rc));
            break;
        }
        rc = check_message_one(k, in + at, used);
        at += used;
    }
    buf_clear(&k->msg);
    return rc;
}

/* Send IDENT and PING; read until the node's IDENT and PONG are in. */
static int check_exchange(struct check *k)
{
    int rc = check_send_hello(k);

    while (rc == 0 && !(k->have_ident && k->have_pong)) {
        rc = check_next(k);
        if (rc == CHANNEL_MESSAGE) {
            rc = check_message(k);
        } else if (rc > 0) {
            rc = 0; /* a handshake frame cannot come now: channel_feed() refuses it */
        }
    }
    return rc;
}

static int check_print(const struct check *k)
{
    printf("%s: sealed channel open, cluster key accepted\n", k->d.addr);
    printf("id            %s\n", k->ident.id);
    printf("rack          %s\n", k->ident.rack);
    printf("version       %u\n", (unsigned)k->ident.version);
    printf("peer_addr     %s\n", k->ident.peer_addr[0] ? k->ident.peer_addr : "-");
    printf("client_addr   %s\n", k->ident.client_addr[0] ? k->ident.client_addr : "-");
    printf("handshake_ms  %.3f\n", (double)(k->t_open - k->t_start) / 1000.0);
    printf("rtt_ms        %.3f\n", (double)(k->t_pong - k->t_ping) / 1000.0);
    return CLI_OK;
}

static int check_print_json(const struct check *k)
{
    return node_json_print(json_pack("{s:s,s:s,s:s,s:I,s:s,s:s,s:f,s:f}", "addr", k->d.addr, "id",
                                     k->ident.id, "rack", k->ident.rack, "version",
                                     (json_int_t)k->ident.version, "peer_addr", k->ident.peer_addr,
                                     "client_addr", k->ident.client_addr, "handshake_ms",
                                     (double)(k->t_open - k->t_start) / 1000.0, "rtt_ms",
                                     (double)(k->t_pong - k->t_ping) / 1000.0));
}

/* Connect, shake hands, exchange IDENT and PING/PONG; k->err says why on failure. */
static int check_run(struct check *k, const struct channel_key *key)
{
    const struct check_opts *o = k->o;
    int rc;

    k->deadline = dial_deadline(o->timeout_ms);
    rc = dial_connect(&k->d, o->host, o->port, o->timeout_ms, k->err, sizeof(k->err));
    if (rc != 0) {
        return rc;
    }
    k->t_start = clock_mono_us();
    rc = channel_init(&k->ch, key, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    if (rc != 0) {
        snprintf(k->err, sizeof(k->err), "cannot set up the channel: %s", rk_strerror(rc));
        goto out_close;
    }
    rc = check_handshake(k);
    if (rc == 0) {
        rc = check_exchange(k);
    }
    channel_deinit(&k->ch);
out_close:
    dial_close(&k->d);
    return rc;
}

int cli_key_peer_check(int argc, char **argv)
{
    struct check_opts o;
    struct check k;
    struct channel_key *key = NULL;
    int rc = check_parse(argc, argv, &o);

    if (rc != 0) {
        return rc;
    }
    memset(&k, 0, sizeof(k));
    k.o = &o;
    k.d.fd = -1;
    if (channel_key_load(&key, o.key_path, k.err, sizeof(k.err)) != 0) {
        return cli_error("%s", k.err);
    }
    buf_init(&k.in, FRAME_MAX_DEFAULT + FRAME_HEADER_BYTES + NODE_READ_CHUNK);
    buf_init(&k.out, 0);
    buf_init(&k.msg, 0);
    rc = check_run(&k, key);
    if (rc != 0) {
        rc = cli_error("%s", k.err);
    } else {
        rc = o.json ? check_print_json(&k) : check_print(&k);
    }
    buf_free(&k.in);
    buf_free(&k.out);
    buf_free(&k.msg);
    channel_key_free(key);
    return rc;
}
