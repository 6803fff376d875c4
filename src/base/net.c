/*
 * net.c - TCP socket helpers (net.h).
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

#include "error.h"

static int net_resolve(const char *host, uint16_t port, struct sockaddr_in *out, char *err,
                       size_t err_len)
{
    struct addrinfo hints, *res = NULL;
    char service[8];
    int rc;

    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof(service), "%u", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0 || res == NULL) {
        snprintf(err, err_len, "cannot resolve %s: %s", host, gai_strerror(rc));
        return RK_EINVAL;
    }
    memcpy(out, res->ai_addr, sizeof(*out));
    freeaddrinfo(res);
    return 0;
}

int net_listen(const char *host, uint16_t port, int backlog, char *err, size_t err_len)
{
    struct sockaddr_in sa;
    int fd, one = 1;

    if (net_resolve(host, port, &sa, err, err_len) != 0) {
        return RK_EINVAL;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return RK_EIO;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, backlog) != 0) {
        snprintf(err, err_len, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        close(fd);
        return RK_EIO;
    }
    return fd;
}

int net_connect(const char *host, uint16_t port, const char *bind_host, char *err, size_t err_len)
{
    struct sockaddr_in sa, local;
    int fd;

    if (net_resolve(host, port, &sa, err, err_len) != 0 ||
        (bind_host != NULL && net_resolve(bind_host, 0, &local, err, err_len) != 0)) {
        return RK_EINVAL;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, err_len, "socket: %s", strerror(errno));
        return RK_EIO;
    }
    if (bind_host != NULL && bind(fd, (struct sockaddr *)&local, sizeof(local)) != 0) {
        snprintf(err, err_len, "cannot bind to %s: %s", bind_host, strerror(errno));
        close(fd);
        return RK_EIO;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
        snprintf(err, err_len, "cannot connect to %s:%u: %s", host, port, strerror(errno));
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
    snprintf(out, NET_ADDR_TEXT, "%s:%u", host, port);
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
