/*
 * fuzz_reply.c - fuzz target for the RESP reply parser (proto/resp.c),
 * which reads what a server sends to the ringkv CLI.
 *
 * Beyond "no crash, no leak" it aborts when a result breaks resp.h's
 * contract: an error other than RK_ESYNTAX, RK_ETOOBIG or RK_ENOMEM;
 * anything consumed or returned without a whole reply; a tree with a
 * missing element, an unterminated string or an aggregate over the
 * bounds; or a strict prefix of a reply that parses as anything but
 * "incomplete", which is what lets a client call it again as bytes arrive.
 */
#include <stdlib.h>

#include "error.h"
#include "fuzz.h"
#include "resp.h"

/* A small bulk bound, so short inputs also reach RK_ETOOBIG. */
#define FUZZ_MAX_BULK 64

static void fuzz_check_tree(const struct resp_reply *r, unsigned depth)
{
    size_t count = r->type == RESP_T_MAP ? 2 * r->n : r->n;

    if (depth > RESP_REPLY_DEPTH_MAX || count > RESP_REPLY_ELEMENTS_MAX) {
        abort();
    }
    if (r->str != NULL && r->str[r->len] != '\0') {
        abort();
    }
    if (count > 0 && r->elem == NULL) {
        abort();
    }
    for (size_t i = 0; i < count; i++) {
        if (r->elem[i] == NULL) {
            abort();
        }
        fuzz_check_tree(r->elem[i], depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct resp_reply *r, *again;
    size_t used, used2;
    int rc = resp_reply_parse(data, size, FUZZ_MAX_BULK, &used, &r);

    if (rc != 1) {
        if ((rc != 0 && rc != RK_ESYNTAX && rc != RK_ETOOBIG && rc != RK_ENOMEM) || used != 0 ||
            r != NULL) {
            abort();
        }
        return 0;
    }
    if (used == 0 || used > size || r == NULL) {
        abort();
    }
    fuzz_check_tree(r, 0);
    if (resp_reply_parse(data, used - 1, FUZZ_MAX_BULK, &used2, &again) != 0) {
        abort();
    }
    resp_reply_free(r);
    return 0;
}
