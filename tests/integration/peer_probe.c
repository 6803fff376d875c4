/*
 * peer_probe.c - a test peer for integration tests: it opens a sealed
 * channel to a node's peer port as the initiator, introduces itself with
 * an IDENT, sends one raw message of each type given on the command line
 * ([type, 1], whatever the type), then a PING, and reports whether the
 * node answered the PING with a PONG on the same connection.
 *
 *   peer_probe KEY-FILE HOST:PORT [TYPE ...]
 *
 * Prints "pong" and exits 0 when the PONG arrives; exits 1 with one line
 * on stderr when the node closes the connection or stays silent for 5 s.
 * With an unknown TYPE this shows the rule of proto/PROTOCOL.md section
 * 4.1: the message is dropped and the connection kept.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "buf.h"
#include "channel.h"
#include "dial.h"
#include "error.h"
#include "frame.h"
#include "msg.h"
#include "net.h"

/* How long the node has to answer, and the PING's sequence number. */
#define PROBE_TIMEOUT_MS 5000
#define PROBE_PING_SEQ 7
#define PROBE_READ_CHUNK 65536

struct probe {
    struct dial d;
    struct channel ch;
    struct buf in, out, msg;
    uint64_t deadline;
    char err[512];
};

static int probe_flush(struct probe *p)
{
    int rc = dial_send(&p->d, buf_data(&p->out), p->out.len, p->deadline, p->err, sizeof(p->err));

    buf_clear(&p->out);
    return rc;
}

/* The next result of channel_feed(), reading as needed; < 0 with err set on failure. */
static int probe_next(struct probe *p)
{
    for (;;) {
        size_t used = 0;
        int rc = channel_feed(&p->ch, buf_data(&p->in), p->in.len, &used, &p->out, &p->msg);
        buf_consume(&p->in, used);
        if (rc < 0) {
            snprintf(p->err, sizeof(p->err), "channel: %s", rk_strerror(rc));
        }
        if (rc != CHANNEL_NEED_MORE) {
            return rc;
        }
        rc = dial_recv(&p->d, &p->in, PROBE_READ_CHUNK, p->deadline, p->err, sizeof(p->err));
        if (rc == RK_ECLOSED) {
            snprintf(p->err, sizeof(p->err), "the node closed the connection");
        }
        if (rc != 0) {
            return rc;
        }
    }
}

static int probe_seal(struct probe *p, const struct msg *m)
{
    struct buf plain;
    int rc;

    buf_init(&plain, 0);
    rc = msg_encode(m, &plain);
    rc = rc ? rc : channel_seal(&p->ch, buf_data(&plain), plain.len, &p->out);
    buf_free(&plain);
    return rc;
}

/* [type, 1] as msgpack: a fixarray of 2, the type as a uint of any width, 1. */
static int probe_seal_raw(struct probe *p, unsigned long type)
{
    uint8_t raw[16];
    size_t n = 0;

    raw[n++] = 0x92;
    if (type < 128) {
        raw[n++] = (uint8_t)type;
    } else {
        raw[n++] = 0xce;
        for (int shift = 24; shift >= 0; shift -= 8) {
            raw[n++] = (uint8_t)(type >> shift);
        }
    }
    raw[n++] = 0x01;
    return channel_seal(&p->ch, raw, n, &p->out);
}

/* IDENT, the raw messages, PING; every message is sealed before one send. */
static int probe_hello(struct probe *p, char **types, int n_types)
{
    struct msg ident = {.type = MSG_IDENT};
    struct msg ping = {.type = MSG_PING, .u.ping = {PROBE_PING_SEQ, 0}};
    char local[NET_ADDR_TEXT];
    int rc;

    snprintf(ident.u.ident.id, sizeof(ident.u.ident.id), "probe");
    snprintf(ident.u.ident.rack, sizeof(ident.u.ident.rack), "probe");
    ident.u.ident.version = CHANNEL_VERSION;
    ident.u.ident.proto = MSG_PROTO_VERSION;
    net_local_text(p->d.fd, local);
    snprintf(ident.u.ident.peer_addr, sizeof(ident.u.ident.peer_addr), "%s", local);
    snprintf(ident.u.ident.client_addr, sizeof(ident.u.ident.client_addr), "%s", local);
    rc = probe_seal(p, &ident);
    for (int i = 0; i < n_types && rc == 0; i++) {
        rc = probe_seal_raw(p, strtoul(types[i], NULL, 10));
    }
    rc = rc ? rc : probe_seal(p, &ping);
    if (rc != 0) {
        snprintf(p->err, sizeof(p->err), "cannot seal: %s", rk_strerror(rc));
        return rc;
    }
    return probe_flush(p);
}

/* Read messages until the PONG of our PING. */
static int probe_wait_pong(struct probe *p)
{
    for (;;) {
        struct msg m;
        bool pong;
        int rc = probe_next(p);

        if (rc < 0) {
            return rc;
        }
        if (rc != CHANNEL_MESSAGE) {
            continue;
        }
        /* the node's frames may hold several messages (message set 3) */
        pong = false;
        for (size_t at = 0, used = 0; at < p->msg.len && !pong; at += used) {
            const uint8_t *in = buf_data(&p->msg) + at;
            if (msg_frame_next(in, p->msg.len - at, &used) != 0) {
                break;
            }
            rc = msg_decode(in, used, &m);
            pong = rc == 0 && m.type == MSG_PONG && m.u.ping.seq == PROBE_PING_SEQ;
            if (rc == 0) {
                msg_free(&m);
            }
        }
        buf_clear(&p->msg);
        if (pong) {
            return 0;
        }
    }
}

static int probe_run(struct probe *p, const struct channel_key *key, const char *addr, char **types,
                     int n_types)
{
    const char *why;
    struct addr a;
    int rc = addr_parse(addr, strlen(addr), 0, &a, &why);

    if (rc != 0) {
        snprintf(p->err, sizeof(p->err), "%s: %s", addr, why);
        return rc;
    }
    p->deadline = dial_deadline(PROBE_TIMEOUT_MS);
    rc = dial_connect(&p->d, a.host, a.port, PROBE_TIMEOUT_MS, p->err, sizeof(p->err));
    rc = rc ? rc : channel_init(&p->ch, key, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    rc = rc ? rc : channel_start(&p->ch, &p->out);
    rc = rc ? rc : probe_flush(p);
    while (rc == 0 && !channel_is_open(&p->ch)) {
        rc = probe_next(p);
        rc = rc > 0 ? probe_flush(p) : rc;
    }
    rc = rc ? rc : probe_hello(p, types, n_types);
    return rc ? rc : probe_wait_pong(p);
}

int main(int argc, char **argv)
{
    struct channel_key *key = NULL;
    struct probe p;
    int rc;

    if (sodium_init() < 0 || argc < 3) {
        fprintf(stderr, "usage: peer_probe KEY-FILE HOST:PORT [TYPE ...]\n");
        return 2;
    }
    memset(&p, 0, sizeof(p));
    p.d.fd = -1;
    if (channel_key_load(&key, argv[1], p.err, sizeof(p.err)) != 0) {
        fprintf(stderr, "peer_probe: %s\n", p.err);
        return 2;
    }
    buf_init(&p.in, FRAME_MAX_DEFAULT + FRAME_HEADER_BYTES + PROBE_READ_CHUNK);
    buf_init(&p.out, 0);
    buf_init(&p.msg, 0);
    rc = probe_run(&p, key, argv[2], argv + 3, argc - 3);
    if (rc == 0) {
        printf("pong\n");
    } else {
        fprintf(stderr, "peer_probe: %s\n", p.err[0] ? p.err : rk_strerror(rc));
    }
    channel_deinit(&p.ch);
    dial_close(&p.d);
    buf_free(&p.in);
    buf_free(&p.out);
    buf_free(&p.msg);
    channel_key_free(key);
    return rc == 0 ? 0 : 1;
}
