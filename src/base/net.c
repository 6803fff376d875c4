/*
 * net.c - TCP socket helpers (net.h).
 *
 * Names resolve to IPv4 or IPv6, whichever getaddrinfo lists first; an
 * outgoing connection's local address is resolved in the family of the
 * address it connects to, so a node bound to an IPv4 address dials its
 * peers over IPv4.
 */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "addr.h"
#include "error.h"

/* A resolved socket address. */
struct net_sockaddr {
    struct sockaddr_storage sa;
    socklen_t len;
};

/*
 * Resolve host (an IPv4 or IPv6 address, or a name) and port into *out:
 * the first address of family (AF_UNSPEC: any) that getaddrinfo gives.
 */
static int net_resolve(const char *host, uint16_t port, int family, struct net_sockaddr *out,
                       char *err, size_t err_len)
{
    struct addrinfo hints, *res = NULL;
    char service[8];
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof(service), "%u", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || res == NULL || res->ai_addrlen > sizeof(out->sa)) {
        snprintf(err, err_len, "cannot resolve %s: %s", host,
                 rc != 0 ? gai_strerror(rc) : "no usable address");
        if (res != NULL) {
            freeaddrinfo(res);
        }
        return RK_EINVAL;
    }
    memcpy(&out->sa, res->ai_addr, res->ai_addrlen);
    out->len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int net_listen(const char *host, uint16_t port, int backlog, char *err, size_t err_len)
{
    struct net_sockaddr sa;
    char text[ADDR_TEXT_MAX];
    int fd, one = 1;

    if (net_resolve(host, port, AF_UNSPEC, &sa, err, err_len) != 0) {
        return RK_EINVAL;
    }
    fd = socket(sa.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return RK_EIO;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa.sa, sa.len) != 0 || listen(fd, backlog) != 0) {
        addr_format(text, sizeof(text), host, port);
        snprintf(err, err_len, "cannot listen on %s: %s", text, strerror(errno));
        close(fd);
        return RK_EIO;
    }
    return fd;
}

int net_connect(const char *host, uint16_t port, const char *bind_host, char *err, size_t err_len)
{
    struct net_sockaddr sa, local;
    char text[ADDR_TEXT_MAX];
    int fd;

    if (net_resolve(host, port, AF_UNSPEC, &sa, err, err_len) != 0 ||
        (bind_host != NULL &&
         net_resolve(bind_host, 0, sa.sa.ss_family, &local, err, err_len) != 0)) {
        return RK_EINVAL;
    }
    fd = socket(sa.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return RK_EIO;
    }
    if (bind_host != NULL && bind(fd, (struct sockaddr *)&local.sa, local.len) != 0) {
        snprintf(err, err_len, "cannot bind to %s: %s", bind_host, strerror(errno));
        close(fd);
        return RK_EIO;
    }
    if (connect(fd, (struct sockaddr *)&sa.sa, sa.len) != 0 && errno != EINPROGRESS) {
        addr_format(text, sizeof(text), host, port);
        snprintf(err, err_len, "cannot connect to %s: %s", text, strerror(errno));
        close(fd);
        return RK_EIO;
    }
    net_nodelay(fd);
    return fd;
}

int net_connect_result(int fd)
{
    int e = 0;
    socklen_t len = sizeof(e);

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) {
        return errno;
    }
    return e;
}

int net_accept(int lfd, struct sockaddr_storage *addr, socklen_t *addr_len)
{
    int fd;

    *addr_len = sizeof(*addr);
    fd = accept4(lfd, (struct sockaddr *)addr, addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        net_nodelay(fd);
    }
    return fd;
}

void net_addr_text(const struct sockaddr_storage *a, char out[NET_ADDR_TEXT])
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
        port = ntohs(s->sin_port);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
        port = ntohs(s->sin6_port);
    }
    addr_format(out, NET_ADDR_TEXT, host, (uint16_t)port);
}

void net_peer_text(int fd, char out[NET_ADDR_TEXT])
{
    struct sockaddr_storage a;
    socklen_t len = sizeof(a);

    memset(&a, 0, sizeof(a));
    getpeername(fd, (struct sockaddr *)&a, &len);
    net_addr_text(&a, out);
}

void net_local_text(int fd, char out[NET_ADDR_TEXT])
{
    struct sockaddr_storage a;
    socklen_t len = sizeof(a);

    memset(&a, 0, sizeof(a));
    getsockname(fd, (struct sockaddr *)&a, &len);
    net_addr_text(&a, out);
}

bool net_is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        return (ntohl(s->sin_addr.s_addr) >> 24) == 127;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
        return IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
    }
    return false;
}

void net_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int net_send(int fd, const void *p, size_t len, size_t *sent)
{
    const uint8_t *b = p;

    *sent = 0;
    while (*sent < len) {
        ssize_t n = send(fd, b + *sent, len - *sent, MSG_NOSIGNAL);
        if (n > 0) {
            *sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        }
        if (n == 0) {
            errno = EPIPE; /* TCP takes at least a byte or fails: a 0 is a dead socket */
        }
        return errno == EPIPE || errno == ECONNRESET ? RK_ECLOSED : RK_EIO;
    }
    return 0;
}

int net_send_buf(int fd, struct buf *out, size_t *sent)
{
    int rc = net_send(fd, buf_data(out), out->len, sent);

    buf_consume(out, *sent);
    return rc;
}
