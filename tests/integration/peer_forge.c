/*
 * peer_forge.c - a scripted test peer that holds the cluster key: it
 * opens a sealed channel to a node's peer port as the initiator, sends an
 * IDENT of its choosing, then runs the steps given on the command line in
 * order, printing one line per event on stdout.  Integration tests use it
 * to send what a real node never sends (responses nobody asked for,
 * forged IDENT fields) and to stand in for a member that answers requests
 * its own way.
 *
 *   peer_forge KEY-FILE HOST:PORT [--id ID] [--peer-addr A] [--proto N]
 *              [--cluster RF,CONFLICTS,SEEDHEX | --cluster nil] [--no-ident] STEP ...
 *
 * With --no-ident the first step (raw=) is the IDENT.  Steps:
 *   req=ID,OP        a REQUEST with a nil body
 *   reqs=N,OP        N REQUESTs with nil bodies, ids 1..N, sent with one send()
 *   resp=ID,RESULT   a RESPONSE with a nil body
 *   raw=HEX          one message given as its msgpack bytes
 *   ping             a PING, then read until its PONG ("pong")
 *   read=MS          for MS ms print every message ("msg type=T id=I code=C")
 *                    but our PINGs' PONGs, with a PING every FORGE_BEAT_MS;
 *                    with FORGE_BODIES in the environment, a REQUEST's or
 *                    RESPONSE's line ends " body=HEX" (its first 64 bytes;
 *                    FORGE_BODIES=all: the whole body)
 *   answer=MS,N      for MS ms answer every REQUEST with result 0 and a
 *                    STATUS view, N times each (N 0: read and ignore them)
 *   sleep=MS         wait without reading
 * With FORGE_FRAMES in the environment, each frame read prints "frame
 * messages=K" before its messages.  A frame's messages are split as a node
 * of the announced message set (--proto) splits them: one a frame below
 * set 3, so a shared frame sent to an older peer shows as undecodable.
 * A closed connection prints "closed" and ends the run (exit 0); any other
 * failure exits 1 with one line on stderr.  Every step is bounded in time.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "buf.h"
#include "channel.h"
#include "clock.h"
#include "dial.h"
#include "error.h"
#include "frame.h"
#include "hex.h"
#include "msg.h"
#include "net.h"

#define FORGE_TIMEOUT_MS 5000
#define FORGE_PING_SEQ 9
/* Heartbeats while reading: well inside the detector's suspicion (lib.sh's rounds). */
#define FORGE_BEAT_MS 250
#define FORGE_READ_CHUNK 65536
/* A step's MS may not exceed this: the run stays bounded. */
#define FORGE_STEP_MAX_MS 120000

struct forge {
    struct dial d;
    struct channel ch;
    struct buf in, out, msg;
    struct msg_ident ident;
    bool closed;
    bool no_ident; /* --no-ident: the first step sends the IDENT (raw=) */
    char err[512];
};

static int forge_flush(struct forge *f)
{
    int rc = dial_send(&f->d, buf_data(&f->out), f->out.len, dial_deadline(FORGE_TIMEOUT_MS),
                       f->err, sizeof(f->err));

    buf_clear(&f->out);
    return rc;
}

/*
 * The next result of channel_feed() before deadline_us: CHANNEL_MESSAGE
 * and the rest, 0 when the deadline passed, < 0 on failure (f->closed
 * when the node closed the connection).
 */
static int forge_next(struct forge *f, uint64_t deadline_us)
{
    for (;;) {
        size_t used = 0;
        int rc = channel_feed(&f->ch, buf_data(&f->in), f->in.len, &used, &f->out, &f->msg);
        buf_consume(&f->in, used);
        if (rc < 0) {
            snprintf(f->err, sizeof(f->err), "channel: %s", rk_strerror(rc));
        }
        if (rc != CHANNEL_NEED_MORE) {
            return rc;
        }
        rc = dial_recv(&f->d, &f->in, FORGE_READ_CHUNK, deadline_us, f->err, sizeof(f->err));
        if (rc == RK_EIO && clock_mono_us() >= deadline_us) {
            return 0; /* the deadline passed */
        }
        if (rc == RK_ECLOSED || rc == RK_EIO) {
            f->closed = true;
        }
        if (rc != 0) {
            return rc;
        }
    }
}

static int forge_seal(struct forge *f, const struct msg *m)
{
    struct buf plain;
    int rc;

    buf_init(&plain, 0);
    rc = msg_encode(m, &plain);
    rc = rc ? rc : channel_seal(&f->ch, buf_data(&plain), plain.len, &f->out);
    buf_free(&plain);
    return rc ? rc : forge_flush(f);
}

static int forge_raw(struct forge *f, const char *hex)
{
    size_t len = strlen(hex) / 2;
    uint8_t *raw = malloc(len + 1);
    int rc = raw == NULL ? RK_ENOMEM : 0;

    if (rc == 0 && !hex_decode(raw, hex, strlen(hex))) {
        rc = RK_EINVAL;
    }
    rc = rc ? rc : channel_seal(&f->ch, raw, len, &f->out);
    free(raw);
    return rc ? rc : forge_flush(f);
}

/* reqs=N,OP: N REQUESTs sealed, then one send() for all. */
static int forge_requests(struct forge *f, const char *arg)
{
    struct buf plain;
    unsigned long n = 0, code = 0;
    int rc = 0;

    if (sscanf(arg, "%lu,%lu", &n, &code) != 2 || n == 0 || n > 4096) {
        return RK_EINVAL;
    }
    buf_init(&plain, 0);
    for (unsigned long i = 1; i <= n && rc == 0; i++) {
        struct msg m = {.type = MSG_REQUEST, .u.request = {.id = i, .code = (uint32_t)code}};
        buf_clear(&plain);
        rc = msg_encode(&m, &plain);
        rc = rc ? rc : channel_seal(&f->ch, buf_data(&plain), plain.len, &f->out);
    }
    buf_free(&plain);
    return rc ? rc : forge_flush(f);
}

static int forge_request(struct forge *f, enum msg_type type, const char *arg)
{
    struct msg m = {.type = type};
    unsigned long long id = 0;
    unsigned long code = 0;

    if (sscanf(arg, "%llu,%lu", &id, &code) != 2) {
        return RK_EINVAL;
    }
    m.u.request.id = id;
    m.u.request.code = (uint32_t)code;
    return forge_seal(f, &m);
}

/* Print one message the node sent; answer a REQUEST `copies` times when answering. */
static int forge_print(struct forge *f, const struct msg *m, int copies)
{
    struct msg_status_view v = {.status = 1, .epoch = 1, .up_count = 1, .members = 1};
    struct msg a = {.type = MSG_RESPONSE};
    struct buf body;
    int rc = 0;

    if (m->type != MSG_REQUEST && m->type != MSG_RESPONSE) {
        printf("msg type=%d\n", (int)m->type);
        return 0;
    }
    printf("msg type=%d id=%llu code=%u", (int)m->type, (unsigned long long)m->u.request.id,
           m->u.request.code);
    if (getenv("FORGE_BODIES") != NULL && m->u.request.body != NULL) {
        size_t shown = strcmp(getenv("FORGE_BODIES"), "all") == 0 ? m->u.request.body_len : 64;
        printf(" body=");
        for (size_t i = 0; i < m->u.request.body_len && i < shown; i++) {
            printf("%02x", m->u.request.body[i]);
        }
        if (m->u.request.body_len > shown) {
            printf("...(%zu bytes)", m->u.request.body_len);
        }
    }
    printf("\n");
    if (m->type != MSG_REQUEST || copies <= 0) {
        return 0;
    }
    snprintf(v.id, sizeof(v.id), "%s", f->ident.id);
    buf_init(&body, 0);
    rc = msg_status_view_encode(&v, &body);
    a.u.request.id = m->u.request.id;
    a.u.request.body = buf_data(&body);
    a.u.request.body_len = body.len;
    for (int i = 0; i < copies && rc == 0; i++) {
        rc = forge_seal(f, &a);
    }
    buf_free(&body);
    return rc;
}

/* forge_frame()'s answer when reading goes on. */
#define FORGE_READ_ON 1

/*
 * The messages of the frame in f->msg (several from a node of message set
 * 3), as forge_read() takes them: FORGE_READ_ON, or what forge_read()
 * returns (0 at the PONG, or an error).
 */
static int forge_frame(struct forge *f, int copies, bool want_pong)
{
    const uint8_t *in = buf_data(&f->msg);
    size_t at = 0, used = f->msg.len, n = 0;
    bool several = f->ident.proto >= MSG_PROTO_V3;
    int rc = FORGE_READ_ON;

    for (size_t k = 0;
         several && k < f->msg.len && msg_frame_next(in + k, f->msg.len - k, &used) == 0;
         k += used) {
        n++;
    }
    if (getenv("FORGE_FRAMES") != NULL) {
        printf("frame messages=%zu\n", several ? n : 1);
    }
    while (rc == FORGE_READ_ON && at < f->msg.len) {
        struct msg m;
        int drc = several ? msg_frame_next(in + at, f->msg.len - at, &used) : 0;
        drc = drc ? drc : msg_decode(in + at, used, &m);
        at = drc == 0 ? at + used : f->msg.len;
        if (drc != 0) {
            printf("undecodable %s\n", rk_strerror(drc));
            continue;
        }
        if (m.type == MSG_PONG && !want_pong) {
            msg_free(&m);
            continue;
        }
        bool pong = m.type == MSG_PONG && m.u.ping.seq == FORGE_PING_SEQ;
        int prc = want_pong ? 0 : forge_print(f, &m, copies);
        msg_free(&m);
        if (prc != 0 || pong) {
            if (pong) {
                printf("pong\n");
            }
            rc = prc;
        }
    }
    buf_clear(&f->msg);
    return rc;
}

/*
 * Read for ms; answer requests (copies >= 0); stop at the PONG when
 * want_pong.  Otherwise a PING every FORGE_BEAT_MS keeps the node's
 * failure detector hearing from us, as a member's heartbeats would.
 */
static int forge_read(struct forge *f, long ms, int copies, bool want_pong)
{
    uint64_t deadline = clock_mono_us() + (uint64_t)ms * 1000u, beat = clock_mono_us();

    for (;;) {
        struct msg ping = {.type = MSG_PING, .u.ping = {FORGE_PING_SEQ + 1, 0}};
        uint64_t now = clock_mono_us();
        int rc = 0;
        if (!want_pong && now >= beat) {
            beat = now + FORGE_BEAT_MS * 1000u;
            rc = forge_seal(f, &ping);
        }
        rc = rc ? rc : forge_next(f, want_pong || beat > deadline ? deadline : beat);
        if (rc == 0 && !want_pong && clock_mono_us() < deadline) {
            continue;
        }
        if (rc <= 0) {
            return rc == 0 && want_pong ? RK_ETIMEOUT : rc;
        }
        if (rc != CHANNEL_MESSAGE) {
            continue;
        }
        rc = forge_frame(f, copies, want_pong);
        if (rc != FORGE_READ_ON) {
            return rc;
        }
    }
}

static int forge_step(struct forge *f, const char *step)
{
    struct msg ping = {.type = MSG_PING, .u.ping = {FORGE_PING_SEQ, 0}};
    const char *eq = strchr(step, '=');
    const char *arg = eq != NULL ? eq + 1 : "";
    bool timed = strncmp(step, "read=", 5) == 0 || strncmp(step, "answer=", 7) == 0 ||
                 strncmp(step, "sleep=", 6) == 0;
    long ms = timed ? strtol(arg, NULL, 10) : 0;
    int copies = 0;

    if (ms < 0 || ms > FORGE_STEP_MAX_MS) {
        return RK_EINVAL;
    }
    if (strncmp(step, "reqs=", 5) == 0) {
        return forge_requests(f, arg);
    } else if (strncmp(step, "req=", 4) == 0) {
        return forge_request(f, MSG_REQUEST, arg);
    } else if (strncmp(step, "resp=", 5) == 0) {
        return forge_request(f, MSG_RESPONSE, arg);
    } else if (strncmp(step, "raw=", 4) == 0) {
        return forge_raw(f, arg);
    } else if (strcmp(step, "ping") == 0) {
        int rc = forge_seal(f, &ping);
        return rc ? rc : forge_read(f, FORGE_TIMEOUT_MS, -1, true);
    } else if (strncmp(step, "read=", 5) == 0) {
        return forge_read(f, ms, -1, false);
    } else if (strncmp(step, "answer=", 7) == 0) {
        const char *comma = strchr(arg, ',');
        copies = comma != NULL ? atoi(comma + 1) : 1;
        return forge_read(f, ms, copies, false);
    } else if (strncmp(step, "sleep=", 6) == 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        return 0;
    }
    return RK_EINVAL;
}

/* --cluster RF,CONFLICTS,SEEDHEX or nil. */
static int forge_cluster(struct msg_ident *id, const char *spec)
{
    char seed[64];
    unsigned long rf;

    if (strcmp(spec, "nil") == 0) {
        id->has_cluster = false;
        return 0;
    }
    if (sscanf(spec, "%lu,%16[^,],%63s", &rf, id->cluster.conflicts, seed) != 3 ||
        strlen(seed) > 2 * sizeof(id->cluster.ring_seed) ||
        !hex_decode(id->cluster.ring_seed, seed, strlen(seed))) {
        return RK_EINVAL;
    }
    id->cluster.rf = (uint32_t)rf;
    id->has_cluster = true;
    return 0;
}

/* The options before the steps; returns the index of the first step, or -1. */
static int forge_options(struct forge *f, int argc, char **argv)
{
    struct msg_ident *id = &f->ident;
    int i = 3;

    snprintf(id->id, sizeof(id->id), "forge");
    snprintf(id->rack, sizeof(id->rack), "forge");
    id->version = CHANNEL_VERSION;
    id->proto = MSG_PROTO_VERSION;
    (void)forge_cluster(id, "3,siblings,000102030405060708090a0b0c0d0e0f");
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (i + 1 >= argc && strcmp(argv[i], "--no-ident") != 0) {
            return -1;
        }
        if (strcmp(argv[i], "--id") == 0) {
            snprintf(id->id, sizeof(id->id), "%s", argv[i + 1]);
        } else if (strcmp(argv[i], "--peer-addr") == 0) {
            snprintf(id->peer_addr, sizeof(id->peer_addr), "%s", argv[i + 1]);
        } else if (strcmp(argv[i], "--proto") == 0) {
            id->proto = (uint32_t)strtoul(argv[i + 1], NULL, 10);
        } else if (strcmp(argv[i], "--no-ident") == 0) {
            f->no_ident = true;
            i--; /* takes no value */
        } else if (strcmp(argv[i], "--cluster") != 0 || forge_cluster(id, argv[i + 1]) != 0) {
            return -1;
        }
    }
    return i;
}

static int forge_open(struct forge *f, const struct channel_key *key, const char *addr)
{
    char local[NET_ADDR_TEXT];
    const char *why;
    struct addr a;
    uint64_t deadline = dial_deadline(FORGE_TIMEOUT_MS);
    int rc = addr_parse(addr, strlen(addr), 0, &a, &why);

    if (rc != 0) {
        snprintf(f->err, sizeof(f->err), "%s: %s", addr, why);
        return rc;
    }
    rc = dial_connect(&f->d, a.host, a.port, FORGE_TIMEOUT_MS, f->err, sizeof(f->err));
    rc = rc ? rc : channel_init(&f->ch, key, CHANNEL_INITIATOR, FRAME_MAX_DEFAULT);
    rc = rc ? rc : channel_start(&f->ch, &f->out);
    rc = rc ? rc : forge_flush(f);
    while (rc == 0 && !channel_is_open(&f->ch)) {
        rc = forge_next(f, deadline);
        rc = rc > 0 ? forge_flush(f) : rc == 0 ? RK_ETIMEOUT : rc;
    }
    if (rc != 0) {
        return rc;
    }
    net_local_text(f->d.fd, local);
    if (f->ident.peer_addr[0] == '\0') {
        snprintf(f->ident.peer_addr, sizeof(f->ident.peer_addr), "%s", local);
    }
    snprintf(f->ident.client_addr, sizeof(f->ident.client_addr), "%s", local);
    struct msg m = {.type = MSG_IDENT, .u.ident = f->ident};
    return f->no_ident ? 0 : forge_seal(f, &m);
}

int main(int argc, char **argv)
{
    struct channel_key *key = NULL;
    struct forge f;
    int rc, first;

    memset(&f, 0, sizeof(f));
    f.d.fd = -1;
    if (sodium_init() < 0 || argc < 3 || (first = forge_options(&f, argc, argv)) < 0) {
        fprintf(stderr, "usage: peer_forge KEY-FILE HOST:PORT [--id ID] [--peer-addr A] "
                        "[--proto N] [--cluster RF,CONFLICTS,SEEDHEX|nil] STEP ...\n");
        return 2;
    }
    if (channel_key_load(&key, argv[1], f.err, sizeof(f.err)) != 0) {
        fprintf(stderr, "peer_forge: %s\n", f.err);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    buf_init(&f.in, FRAME_MAX_DEFAULT + FRAME_HEADER_BYTES + FORGE_READ_CHUNK);
    buf_init(&f.out, 0);
    buf_init(&f.msg, 0);
    rc = forge_open(&f, key, argv[2]);
    for (int i = first; i < argc && rc == 0; i++) {
        rc = forge_step(&f, argv[i]);
    }
    if (f.closed) {
        printf("closed\n");
        rc = 0;
    } else if (rc != 0) {
        fprintf(stderr, "peer_forge: %s\n", f.err[0] ? f.err : rk_strerror(rc));
    }
    channel_deinit(&f.ch);
    dial_close(&f.d);
    buf_free(&f.in);
    buf_free(&f.out);
    buf_free(&f.msg);
    channel_key_free(key);
    return rc == 0 ? 0 : 1;
}
