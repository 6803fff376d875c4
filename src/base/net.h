/*
 * net.h - TCP sockets for the node: listening, connecting from a chosen
 * local address, and naming addresses in logs.
 *
 * Every outgoing connection of a node binds to the node's own configured
 * address before connecting.  On a testbed where node i is 127.0.0.(10+i),
 * that makes a partition between two nodes a plain iptables rule on their
 * two addresses.
 */
#ifndef RINGKV_NET_H
#define RINGKV_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "buf.h"

/* "host:port" of a peer or local address, for logs: "[" IPv6 "]:" port fits. */
#define NET_ADDR_TEXT 64

/*
 * Listen on host:port (an IPv4 or IPv6 address, or a name: addr.h),
 * non-blocking, SO_REUSEADDR.
 * Returns the descriptor or a negative code; err gets one line.
 */
int net_listen(const char *host, uint16_t port, int backlog, char *err, size_t err_len);

/*
 * Start a non-blocking connection to host:port from bind_host (port 0),
 * or from any address when bind_host is NULL.  Returns the descriptor
 * (the connection completes later: wait for writability, then
 * net_connect_result()) or a negative code with err set.
 */
int net_connect(const char *host, uint16_t port, const char *bind_host, char *err, size_t err_len);

/* 0 when a connection started by net_connect() succeeded, else an errno value. */
int net_connect_result(int fd);

/* Accept one connection, non-blocking and close-on-exec; -1 with errno when none. */
int net_accept(int lfd, struct sockaddr_storage *addr, socklen_t *addr_len);

/* "a.b.c.d:port" or "[v6]:port" of a socket address (addr_format()). */
void net_addr_text(const struct sockaddr_storage *a, char out[NET_ADDR_TEXT]);
/* The local and remote addresses of a connected socket. */
void net_peer_text(int fd, char out[NET_ADDR_TEXT]);
void net_local_text(int fd, char out[NET_ADDR_TEXT]);
/* Whether a is a loopback address (127.0.0.0/8 or ::1). */
bool net_is_loopback(const struct sockaddr_storage *a);

/* TCP_NODELAY on: replies and frames are small and latency-bound. */
void net_nodelay(int fd);

/*
 * The one send loop: write p[0..len) to the non-blocking socket fd as far
 * as the kernel takes it now.  A partial write continues, EINTR retries,
 * a full socket stops; *sent gets the bytes written (0 .. len).  Returns
 * 0 (all sent, or the socket is full: *sent < len, wait for writability),
 * RK_ECLOSED when the peer is gone (EPIPE, ECONNRESET) or RK_EIO on
 * another error, with errno telling which.  Never raises SIGPIPE.
 */
int net_send(int fd, const void *p, size_t len, size_t *sent);

/* net_send() of out's data, consuming what was sent; *sent as there. */
int net_send_buf(int fd, struct buf *out, size_t *sent);

#endif
