/*
 * dial.c - blocking client connections with deadlines (dial.h).
 *
 * Every wait goes through dial_wait(): poll() for the one event needed,
 * with the time left until the deadline, retried on EINTR.  The socket
 * stays non-blocking, so a send or a receive after a successful poll takes
 * what the kernel has and never blocks past the deadline.
 */
#include "dial.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "clock.h"
#include "error.h"
#include "net.h"

int dial_timeout_parse(const char *s, uint32_t *ms)
{
    char *end;
    double v;

    if ((*s < '0' || *s > '9') && *s != '.') {
        return RK_EINVAL;
    }
    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v <= 0 ||
        v * 1000 > DIAL_TIMEOUT_MAX_MS) {
        return RK_EINVAL;
    }
    *ms = (uint32_t)ceil(v * 1000);
    return 0;
}

uint64_t dial_deadline(uint32_t timeout_ms)
{
    return clock_mono_us() + (uint64_t)timeout_ms * 1000u;
}

/*
 * Wait until fd is ready for events or the deadline passes.  RK_EIO with
 * "timed out after 5 s <doing> host:port" at the deadline.
 */
static int dial_wait(const struct dial *d, short events, uint64_t deadline_us, const char *doing,
                     char *err, size_t err_len)
{
    struct pollfd pfd = {.fd = d->fd, .events = events};

    for (;;) {
        uint64_t now = clock_mono_us();
        int left_ms = now >= deadline_us ? 0 : (int)((deadline_us - now + 999) / 1000);
        int n = left_ms > 0 ? poll(&pfd, 1, left_ms) : 0;
        if (n > 0) {
            return 0;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            snprintf(err, err_len, "cannot wait for %s: %s", d->addr, strerror(errno));
            return RK_EIO;
        }
        if (clock_mono_us() >= deadline_us) {
            snprintf(err, err_len, "timed out after %g s %s %s", d->timeout_ms / 1000.0, doing,
                     d->addr);
            return RK_EIO;
        }
    }
}

int dial_connect(struct dial *d, const char *host, uint16_t port, uint32_t timeout_ms, char *err,
                 size_t err_len)
{
    uint64_t deadline = dial_deadline(timeout_ms);
    int rc, e;

    d->timeout_ms = timeout_ms;
    addr_format(d->addr, sizeof(d->addr), host, port);
    d->fd = net_connect(host, port, NULL, err, err_len);
    if (d->fd < 0) {
        rc = d->fd;
        d->fd = -1;
        return rc;
    }
    rc = dial_wait(d, POLLOUT, deadline, "connecting to", err, err_len);
    if (rc != 0) {
        goto out_close;
    }
    e = net_connect_result(d->fd);
    if (e != 0) {
        snprintf(err, err_len, "cannot connect to %s: %s", d->addr, strerror(e));
        rc = RK_EIO;
        goto out_close;
    }
    return 0;
out_close:
    dial_close(d);
    return rc;
}

int dial_send(struct dial *d, const void *p, size_t len, uint64_t deadline_us, char *err,
              size_t err_len)
{
    const uint8_t *b = p;

    for (;;) {
        size_t sent;
        int rc = net_send(d->fd, b, len, &sent);
        if (rc != 0) {
            snprintf(err, err_len, "connection to %s lost while sending: %s", d->addr,
                     strerror(errno));
            return rc;
        }
        b += sent;
        len -= sent;
        if (len == 0) {
            return 0;
        }
        rc = dial_wait(d, POLLOUT, deadline_us, "sending to", err, err_len);
        if (rc != 0) {
            return rc;
        }
    }
}

/* Read what is ready into in without waiting; *got counts the bytes appended. */
static int dial_drain(struct dial *d, struct buf *in, size_t chunk, size_t *got, char *err,
                      size_t err_len)
{
    for (;;) {
        size_t room = in->max != 0 ? in->max - in->len : chunk;
        size_t want = room < chunk ? room : chunk;
        uint8_t *p;
        ssize_t n;

        if (want == 0) {
            return RK_ETOOBIG;
        }
        p = buf_reserve(in, want);
        if (p == NULL) {
            return RK_ENOMEM;
        }
        n = recv(d->fd, p, want, 0);
        if (n > 0) {
            buf_commit(in, (size_t)n);
            *got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        }
        if (n == 0 || errno == ECONNRESET) {
            return RK_ECLOSED;
        }
        snprintf(err, err_len, "cannot read from %s: %s", d->addr, strerror(errno));
        return RK_EIO;
    }
}

int dial_recv(struct dial *d, struct buf *in, size_t chunk, uint64_t deadline_us, char *err,
              size_t err_len)
{
    size_t got = 0;
    int rc = in->max != 0 && in->len >= in->max
                 ? RK_ETOOBIG
                 : dial_wait(d, POLLIN, deadline_us, "waiting for", err, err_len);

    if (rc == 0) {
        rc = dial_drain(d, in, chunk, &got, err, err_len);
    }
    if (got > 0 && (rc == RK_ECLOSED || rc == RK_ETOOBIG)) {
        return 0; /* the caller parses first; the next call reports the end */
    }
    if (rc == RK_ECLOSED) {
        snprintf(err, err_len, "%s closed the connection", d->addr);
    } else if (rc == RK_ETOOBIG) {
        snprintf(err, err_len, "%s sent more than the %zu bytes this reply may take", d->addr,
                 in->max);
    } else if (rc == RK_ENOMEM) {
        snprintf(err, err_len, "out of memory reading from %s", d->addr);
    }
    return rc;
}

void dial_close(struct dial *d)
{
    if (d->fd >= 0) {
        close(d->fd);
    }
    d->fd = -1;
}
