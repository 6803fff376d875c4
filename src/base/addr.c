/*
 * addr.c - the one "host:port" parser and formatter (addr.h).
 *
 * The parser splits first (a bracketed host ends at its ']', any other at
 * the last colon) and refuses a missing port there, then checks the host,
 * then the port, so the phrase it gives names the first thing wrong from
 * the left ("9100" is missing its port rather than a bad IPv4 address).
 */
#include "addr.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "num.h"

/* The most digits a port has: 65535. */
#define ADDR_PORT_DIGITS 5

/* The parts of an address before they are checked. */
struct addr_split {
    const char *host;
    size_t host_len;
    bool bracketed;
    const char *port; /* NULL: there was no ":port" */
    size_t port_len;
};

static int addr_fail(const char **why, const char *phrase, int rc)
{
    if (why != NULL) {
        *why = phrase;
    }
    return rc;
}

static int addr_split(const char *s, size_t len, struct addr_split *sp, const char **why)
{
    const char *colon;

    memset(sp, 0, sizeof(*sp));
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        size_t rest;
        if (close == NULL) {
            return addr_fail(why, "an IPv6 host has no closing ']'", RK_ESYNTAX);
        }
        sp->bracketed = true;
        sp->host = s + 1;
        sp->host_len = (size_t)(close - sp->host);
        rest = len - (size_t)(close + 1 - s);
        if (rest > 0 && close[1] != ':') {
            return addr_fail(why, "']' is not followed by ':port'", RK_ESYNTAX);
        }
        sp->port = rest > 0 ? close + 2 : NULL;
        sp->port_len = rest > 0 ? rest - 1 : 0;
        return 0;
    }
    colon = memrchr(s, ':', len);
    sp->host = s;
    sp->host_len = colon != NULL ? (size_t)(colon - s) : len;
    sp->port = colon != NULL ? colon + 1 : NULL;
    sp->port_len = colon != NULL ? len - (size_t)(colon + 1 - s) : 0;
    return 0;
}

static bool addr_name_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '-' || ch == '_';
}

/* The inside of "[...]": an IPv6 address, kept in its canonical form. */
static int addr_host_ipv6(const char *h, size_t len, struct addr *a, const char **why)
{
    char text[INET6_ADDRSTRLEN];
    struct in6_addr in6;

    if (len == 0) {
        return addr_fail(why, "the host is empty", RK_ESYNTAX);
    }
    if (len >= sizeof(text) || memchr(h, '\0', len) != NULL) {
        return addr_fail(why, "the host is not an IPv6 address", RK_ESYNTAX);
    }
    memcpy(text, h, len);
    text[len] = '\0';
    if (inet_pton(AF_INET6, text, &in6) != 1) {
        return addr_fail(why, "the host is not an IPv6 address", RK_ESYNTAX);
    }
    inet_ntop(AF_INET6, &in6, a->host, sizeof(a->host));
    a->kind = ADDR_IPV6;
    return 0;
}

/* A host outside brackets: a name or an IPv4 address. */
static int addr_host_plain(const char *h, size_t len, struct addr *a, const char **why)
{
    struct in_addr in;
    bool numeric = true;

    if (len == 0) {
        return addr_fail(why, "the host is empty", RK_ESYNTAX);
    }
    if (len > ADDR_HOST_MAX) {
        return addr_fail(why, "the host is longer than 255 bytes", RK_ETOOBIG);
    }
    if (memchr(h, ':', len) != NULL) {
        return addr_fail(why, "an IPv6 host goes in brackets, as [::1]:7371", RK_ESYNTAX);
    }
    for (size_t i = 0; i < len; i++) {
        if (!addr_name_char((unsigned char)h[i])) {
            return addr_fail(why, "the host has a character other than A-Z a-z 0-9 . - _",
                             RK_ESYNTAX);
        }
        numeric = numeric && ((h[i] >= '0' && h[i] <= '9') || h[i] == '.');
    }
    memcpy(a->host, h, len);
    a->host[len] = '\0';
    a->kind = numeric ? ADDR_IPV4 : ADDR_NAME;
    if (numeric && inet_pton(AF_INET, a->host, &in) != 1) {
        return addr_fail(why, "the host is not an IPv4 address", RK_ESYNTAX);
    }
    return 0;
}

static int addr_port(const struct addr_split *sp, uint16_t default_port, uint16_t *port,
                     const char **why)
{
    uint64_t v;

    if (sp->port == NULL) {
        *port = default_port; /* addr_parse() refused a missing port without a default */
        return 0;
    }
    if (sp->port_len == 0 || sp->port_len > ADDR_PORT_DIGITS || sp->port[0] == '0') {
        return addr_fail(why, "the port is not 1 to 65535", RK_ERANGE);
    }
    if (num_parse_u64(sp->port, sp->port_len, UINT16_MAX, &v) != 0) {
        return addr_fail(why, "the port is not 1 to 65535", RK_ERANGE);
    }
    *port = (uint16_t)v;
    return 0;
}

int addr_parse(const char *s, size_t len, uint16_t default_port, struct addr *out, const char **why)
{
    struct addr_split sp;
    struct addr a;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = addr_split(s, len, &sp, why);
    if (rc == 0 && len > 0 && sp.port == NULL && default_port == 0) {
        rc = addr_fail(why, "the port is missing", RK_ESYNTAX);
    }
    if (rc == 0) {
        rc = sp.bracketed ? addr_host_ipv6(sp.host, sp.host_len, &a, why)
                          : addr_host_plain(sp.host, sp.host_len, &a, why);
    }
    if (rc == 0) {
        rc = addr_port(&sp, default_port, &a.port, why);
    }
    if (rc == 0) {
        *out = a;
    }
    return rc;
}

int addr_format(char *out, size_t cap, const char *host, uint16_t port)
{
    bool v6 = strchr(host, ':') != NULL;
    int n = snprintf(out, cap, v6 ? "[%s]:%u" : "%s:%u", host, (unsigned)port);

    return n >= 0 && (size_t)n < cap ? 0 : RK_ETOOBIG;
}
