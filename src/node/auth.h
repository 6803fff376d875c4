/*
 * auth.h - checking a client's password (requirepass) and slowing those
 * who guess.
 *
 * The comparison takes the same time whatever the password given: both
 * sides are hashed to a fixed size (BLAKE2b, crypto_generichash) and the
 * hashes compared with sodium_memcmp(), so neither the length nor the
 * first differing byte shows in the time of a reply.
 *
 * Guessing is slowed per client address (the IP, without the port, so
 * opening new connections does not help): the first AUTH_FREE_FAILURES
 * wrong passwords cost nothing, each later one closes the address to AUTH
 * for a pause that doubles (AUTH_PAUSE_MIN_MS .. AUTH_PAUSE_MAX_MS).  An
 * AUTH during the pause is refused without looking at the password, at
 * once: the event loop never waits.  A right password clears the
 * address's record; a record quiet for AUTH_FORGET_MS starts over.  The
 * table holds AUTH_GUARD_SLOTS addresses; a record is never evicted while
 * it is remembered, since evicting the least recent one let an attacker
 * rotating through more addresses than slots (an IPv6 prefix holds
 * plenty) start every address afresh and guess without limit.  While
 * every slot is taken, new addresses share one overflow record, so
 * together they are slowed like one address (a right password passes
 * between its pauses; it does not clear the shared record).
 *
 * Time comes in as arguments (monotonic milliseconds), so the rules are
 * tested without clocks.  One guard per node, used from its event loop.
 */
#ifndef RINGKV_AUTH_H
#define RINGKV_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Wrong passwords from one address before AUTH slows down: a person's typos. */
#define AUTH_FREE_FAILURES 5
/* The first pause after those, and the longest (each later failure doubles it). */
#define AUTH_PAUSE_MIN_MS 100
#define AUTH_PAUSE_MAX_MS 10000
/* A record with no failure for this long is forgotten. */
#define AUTH_FORGET_MS (10 * 60 * 1000)
/* Addresses remembered at once. */
#define AUTH_GUARD_SLOTS 256
/* Longest address kept (an IPv6 address in text, without brackets or port). */
#define AUTH_HOST_MAX 48

struct auth_slot {
    char host[AUTH_HOST_MAX]; /* "" when free */
    uint32_t failures;        /* wrong passwords since the last right one */
    uint64_t last_ms;         /* the last failure */
    uint64_t until_ms;        /* AUTH is refused before this */
};

struct auth_guard {
    struct auth_slot slots[AUTH_GUARD_SLOTS];
    struct auth_slot overflow; /* shared by addresses met while every slot is taken */
};

enum auth_result {
    AUTH_OK,        /* the right password */
    AUTH_WRONG,     /* a wrong one: counted */
    AUTH_THROTTLED, /* not looked at: the address is paused; *retry_ms says for how long */
};

/* The one user ringkv knows, Redis's default user. */
#define AUTH_DEFAULT_USER "default"

/* Whether given[0..len) is want, in time that depends on neither. */
bool auth_password_equal(const char *want, const uint8_t *given, size_t len);

/*
 * Whether user[0..len) names the default user: byte for byte and case
 * sensitive, as Redis compares user names ("DEFAULT" and "default\0x" are
 * other users, which ringkv does not have).
 */
bool auth_user_is_default(const uint8_t *user, size_t len);

/*
 * Check an AUTH from addr ("ip:port" or "[ip6]:port", as net_addr_text()
 * writes it) at now_ms.  AUTH_THROTTLED sets *retry_ms to the time left
 * of the pause.
 */
enum auth_result auth_guard_check(struct auth_guard *g, const char *addr, uint64_t now_ms,
                                  const char *want, const uint8_t *given, size_t len,
                                  uint64_t *retry_ms);

/* Wrong passwords counted for addr's host now (0 when none). */
uint32_t auth_guard_failures(const struct auth_guard *g, const char *addr);

#endif
