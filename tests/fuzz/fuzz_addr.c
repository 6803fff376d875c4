/*
 * fuzz_addr.c - fuzz target for addr_parse(), which reads addresses from
 * config files, the CLI's arguments and peers' IDENT and member entries.
 *
 * Beyond "no crash and no read past len" (the input is handed over
 * without a NUL, so ASan sees any overread), every answer is checked
 * against addr.h's contract: a refusal leaves the output untouched and
 * gives a phrase; an accepted address has a non-empty host of at most
 * ADDR_HOST_MAX bytes, a port 1..65535, and a text form of at most
 * ADDR_TEXT_MAX - 1 bytes that parses back to the same address and
 * formats to the same text.  The first input byte picks a default port
 * (0 or 7370) so both grammars are covered.  A violation aborts.
 */
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "fuzz.h"

static void check_accepted(const struct addr *a)
{
    struct addr back;
    char text[ADDR_TEXT_MAX], again[ADDR_TEXT_MAX];
    size_t host_len = strnlen(a->host, sizeof(a->host));

    if (host_len == 0 || host_len > ADDR_HOST_MAX || a->port == 0) {
        abort();
    }
    if (addr_format(text, sizeof(text), a->host, a->port) != 0) {
        abort();
    }
    if (addr_parse(text, strlen(text), 0, &back, NULL) != 0 || strcmp(back.host, a->host) != 0 ||
        back.port != a->port || back.kind != a->kind) {
        abort();
    }
    if (addr_format(again, sizeof(again), back.host, back.port) != 0 || strcmp(again, text) != 0) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint16_t default_port;
    struct addr a;
    const char *why = NULL;
    char *copy;
    int rc;

    if (size == 0) {
        return 0;
    }
    default_port = (data[0] & 1) != 0 ? 7370 : 0;
    copy = malloc(size - 1 > 0 ? size - 1 : 1);
    if (copy == NULL) {
        return 0;
    }
    memcpy(copy, data + 1, size - 1);
    memset(&a, 0x5a, sizeof(a));
    rc = addr_parse(copy, size - 1, default_port, &a, &why);
    if (rc == 0) {
        check_accepted(&a);
    } else if (why == NULL || why[0] == '\0' || a.port != 0x5a5a) {
        abort();
    }
    free(copy);
    return 0;
}
