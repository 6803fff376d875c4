/*
 * addr.h - the one "host:port" of ringkv: its rules, its parser and its
 * text form.
 *
 * Every address that comes from outside goes through addr_parse(): the
 * node's settings (listen, client, metrics, seeds), the CLI's -H and
 * peer-check arguments, the addresses a peer announces in IDENT and in
 * member entries, and every address a node dials.  Every address ringkv
 * writes (settings, IDENT, member entries, logs) comes from addr_format(),
 * so one address has one spelling and two addresses compare as text.
 *
 * The rules:
 *
 *   address = host ":" port         (port optional only where the caller
 *                                     has a default: the CLI's HOST[:PORT])
 *   host    = IPv4 | "[" IPv6 "]" | name
 *
 *   - IPv4: a host made only of digits and dots is a dotted quad, four
 *     decimal octets 0..255 without leading zeros ("999.0.0.1" and
 *     "1.2.3" are refused, not looked up as names).
 *   - IPv6: in brackets, always ("[::1]:7371"); a colon outside brackets
 *     would make the port ambiguous.  No zone ("%eth0").  The parser
 *     keeps the address without brackets, in its canonical form
 *     (inet_ntop: "[0:0::1]" becomes "::1"); the text form adds them back.
 *   - name: 1 .. 255 bytes (DNS's limit on a name in text form, RFC 1035
 *     2.3.4) of letters, digits, '.', '-' and '_'.  It is resolved when
 *     it is used, not here.
 *   - port: a decimal 1 .. 65535, no sign, no leading zero, so the text
 *     form of a parsed address is the text that was parsed.
 *   - An empty host is refused (":7370", "[]:7370"): an address names
 *     where to connect, and a node announces its listen address to its
 *     peers.  A listener for every interface says so: 0.0.0.0 or [::].
 *   - No blanks anywhere; a list (the seeds setting) trims around items.
 *
 * The text form is at most ADDR_TEXT_MAX - 1 bytes: a 255-byte name, the
 * colon and five digits.
 */
#ifndef RINGKV_ADDR_H
#define RINGKV_ADDR_H

#include <stddef.h>
#include <stdint.h>

/* Longest host: DNS's limit on a name in text form. */
#define ADDR_HOST_MAX 255
/* "host:port" and its NUL: the longest host, ':', five digits, NUL. */
#define ADDR_TEXT_MAX (ADDR_HOST_MAX + 7)

/* What a host is; the parser tells, so a caller never guesses from the text. */
enum addr_kind {
    ADDR_NAME = 0,
    ADDR_IPV4 = 1,
    ADDR_IPV6 = 2,
};

struct addr {
    char host[ADDR_HOST_MAX + 1]; /* a name, an IPv4 address, or an IPv6 address (no brackets) */
    uint16_t port;                /* 1 .. 65535 */
    enum addr_kind kind;
};

/*
 * Parse s[0..len) (no NUL needed; bytes past len are never read) as an
 * address.  Without a ":port", the port is default_port, or the input is
 * refused when default_port is 0.  On success fills *out; on failure
 * leaves *out untouched and, when why is not NULL, points *why at a
 * static phrase for messages ("the port is not 1 to 65535").  Errors:
 * RK_ESYNTAX (the host or the grammar), RK_ERANGE (the port), RK_ETOOBIG
 * (a host longer than ADDR_HOST_MAX).
 */
int addr_parse(const char *s, size_t len, uint16_t default_port, struct addr *out,
               const char **why);

/*
 * Write "host:port" into out (cap bytes, NUL included), bracketing a host
 * that holds a colon (an IPv6 address).  Returns 0, or RK_ETOOBIG when it
 * did not fit (out then holds as much as fits, NUL-terminated).
 */
int addr_format(char *out, size_t cap, const char *host, uint16_t port);

#endif
