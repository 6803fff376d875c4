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

/* "host:port" of a peer or local address, for logs. */
#define NET_ADDR_TEXT 64

/*
 * Listen on host:port (IPv4 address or name), non-blocking, SO_REUSEADDR.
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

/* "a.b.c.d:port" of a socket address. */
void net_addr_text(const struct sockaddr_storage *a, char out[NET_ADDR_TEXT]);
/* The local and remote addresses of a connected socket. */
void net_peer_text(int fd, char out[NET_ADDR_TEXT]);
void net_local_text(int fd, char out[NET_ADDR_TEXT]);
/* Whether a is a loopback address (127.0.0.0/8 or ::1). */
bool net_is_loopback(const struct sockaddr_storage *a);

/* TCP_NODELAY on: replies and frames are small and latency-bound. */
void net_nodelay(int fd);

#endif
