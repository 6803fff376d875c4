/*
 * fuzz_hint.c - fuzz target for the store's hint value parser
 * (store_hint_parse() in storage/store.c), which reads hints back from the
 * data directory.
 *
 * Beyond "no crash, no leak" it checks that an accepted value is exactly
 * one canonical hint: a valid target id, the key inside the input, and the
 * fields re-encoded in the hints layout give the input bytes back.
 */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "fuzz.h"
#include "store.h"

static void fuzz_check_canonical(const struct store_hint *h, const uint8_t *data, size_t size)
{
    size_t tlen = strlen(h->target);
    size_t want = 1 + tlen + 8 + 2 + h->key_len + sibling_encoded_size(&h->version);
    uint8_t *buf, *p;

    if (!ring_name_valid(h->target, tlen) || h->key_len > STORE_KEY_MAX || h->key < data ||
        h->key + h->key_len > data + size || want != size) {
        abort();
    }
    buf = malloc(want);
    if (buf == NULL) {
        abort();
    }
    p = buf;
    *p++ = (uint8_t)tlen;
    memcpy(p, h->target, tlen);
    p += tlen;
    p = bytes_put_be64(p, h->pos);
    *p++ = (uint8_t)(h->key_len >> 8);
    *p++ = (uint8_t)h->key_len;
    memcpy(p, h->key, h->key_len);
    p += h->key_len;
    sibling_encode(&h->version, p);
    if (memcmp(buf, data, size) != 0) {
        abort();
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char target[RING_NAME_MAX + 1];
    struct store_hint h;

    memset(&h, 0, sizeof(h));
    sibling_init(&h.version);
    if (store_hint_parse(data, size, &h, target) == 0) {
        fuzz_check_canonical(&h, data, size);
    }
    sibling_deinit(&h.version);
    return 0;
}
