/*
 * auth.c - password checks and the per-address slow-down of auth.h.
 *
 * The table is a small array scanned whole (AUTH_GUARD_SLOTS entries), as
 * AUTH is rare next to data commands; an address's slot is found by its
 * host text.  Pauses: failure AUTH_FREE_FAILURES + k (k >= 1) pauses the
 * address for AUTH_PAUSE_MIN_MS * 2^(k-1), at most AUTH_PAUSE_MAX_MS.
 */
#include "auth.h"

#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* The digest both passwords are reduced to before they are compared. */
#define AUTH_DIGEST_BYTES crypto_generichash_BYTES

bool auth_password_equal(const char *want, const uint8_t *given, size_t len)
{
    uint8_t a[AUTH_DIGEST_BYTES], b[AUTH_DIGEST_BYTES];
    bool same;

    crypto_generichash(a, sizeof(a), (const uint8_t *)want, strlen(want), NULL, 0);
    crypto_generichash(b, sizeof(b), given, len, NULL, 0);
    same = sodium_memcmp(a, b, sizeof(a)) == 0;
    sodium_memzero(a, sizeof(a));
    sodium_memzero(b, sizeof(b));
    return same;
}

bool auth_user_is_default(const uint8_t *user, size_t len)
{
    return len == strlen(AUTH_DEFAULT_USER) && memcmp(user, AUTH_DEFAULT_USER, len) == 0;
}

/* addr's host: the text before the port's colon, without IPv6 brackets; cut to fit. */
static void auth_host(const char *addr, char out[AUTH_HOST_MAX])
{
    const char *colon = strrchr(addr, ':');
    size_t len = colon != NULL ? (size_t)(colon - addr) : strlen(addr);

    if (len >= 2 && addr[0] == '[' && addr[len - 1] == ']') {
        addr++;
        len -= 2;
    }
    len = len < AUTH_HOST_MAX - 1 ? len : AUTH_HOST_MAX - 1;
    memcpy(out, addr, len);
    out[len] = '\0';
}

static struct auth_slot *auth_find(struct auth_guard *g, const char *host)
{
    for (size_t i = 0; i < AUTH_GUARD_SLOTS; i++) {
        if (strcmp(g->slots[i].host, host) == 0) {
            return &g->slots[i];
        }
    }
    return NULL;
}

/* Whether slot s is free at now_ms: never used, or quiet for AUTH_FORGET_MS. */
static bool auth_slot_free(const struct auth_slot *s, uint64_t now_ms)
{
    return s->host[0] == '\0' || now_ms - s->last_ms >= AUTH_FORGET_MS;
}

/*
 * The record for an address not in the table: a free slot, or while every
 * slot holds a remembered address, the shared overflow record (see auth.h:
 * evicting one would start an attacker's address afresh).
 */
static struct auth_slot *auth_take(struct auth_guard *g, const char *host, uint64_t now_ms)
{
    for (size_t i = 0; i < AUTH_GUARD_SLOTS; i++) {
        struct auth_slot *s = &g->slots[i];
        if (auth_slot_free(s, now_ms)) {
            memset(s, 0, sizeof(*s));
            snprintf(s->host, sizeof(s->host), "%s", host);
            return s;
        }
    }
    if (auth_slot_free(&g->overflow, now_ms)) {
        memset(&g->overflow, 0, sizeof(g->overflow));
        g->overflow.host[0] = '*'; /* no address's text */
    }
    return &g->overflow;
}

/* Count one more failure at now_ms and set the pause it earns. */
static void auth_failed(struct auth_slot *s, uint64_t now_ms)
{
    uint64_t pause = AUTH_PAUSE_MIN_MS;

    s->failures++;
    s->last_ms = now_ms;
    if (s->failures <= AUTH_FREE_FAILURES) {
        return;
    }
    for (uint32_t k = s->failures - AUTH_FREE_FAILURES; k > 1 && pause < AUTH_PAUSE_MAX_MS; k--) {
        pause *= 2;
    }
    s->until_ms = now_ms + (pause < AUTH_PAUSE_MAX_MS ? pause : AUTH_PAUSE_MAX_MS);
}

enum auth_result auth_guard_check(struct auth_guard *g, const char *addr, uint64_t now_ms,
                                  const char *want, const uint8_t *given, size_t len,
                                  uint64_t *retry_ms)
{
    char host[AUTH_HOST_MAX];
    struct auth_slot *s;

    auth_host(addr, host);
    s = auth_find(g, host);
    if (s != NULL && now_ms - s->last_ms >= AUTH_FORGET_MS) {
        memset(s, 0, sizeof(*s));
        s = NULL;
    }
    if (s == NULL) {
        s = auth_take(g, host, now_ms);
    }
    if (now_ms < s->until_ms) {
        *retry_ms = s->until_ms - now_ms;
        return AUTH_THROTTLED;
    }
    if (auth_password_equal(want, given, len)) {
        if (s != &g->overflow) {
            memset(s, 0, sizeof(*s));
        }
        return AUTH_OK;
    }
    auth_failed(s, now_ms);
    return AUTH_WRONG;
}

uint32_t auth_guard_failures(const struct auth_guard *g, const char *addr)
{
    char host[AUTH_HOST_MAX];

    auth_host(addr, host);
    for (size_t i = 0; i < AUTH_GUARD_SLOTS; i++) {
        if (strcmp(g->slots[i].host, host) == 0) {
            return g->slots[i].failures;
        }
    }
    return 0;
}
