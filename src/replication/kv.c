/*
 * kv.c - the client port's data operations over the local store (kv.h).
 */
#include "kv.h"

#include <stdlib.h>

#include "error.h"

struct kv {
    struct store *store; /* borrowed */
};

int kv_create(struct kv **out, struct store *store)
{
    struct kv *kv = calloc(1, sizeof(*kv));

    *out = kv;
    if (kv == NULL) {
        return RK_ENOMEM;
    }
    kv->store = store;
    return 0;
}

void kv_destroy(struct kv *kv)
{
    free(kv);
}

int kv_read_hold(struct kv *kv)
{
    return store_read_hold(kv->store);
}

void kv_read_release(struct kv *kv)
{
    store_read_release(kv->store);
}

int kv_read(struct kv *kv, const void *key, size_t len, struct record *out)
{
    return store_get(kv->store, key, len, out);
}

int kv_read_raw(struct kv *kv, const void *key, size_t len,
                int (*fn)(void *ctx, const uint8_t *record, size_t record_len), void *ctx)
{
    return store_read(kv->store, key, len, fn, ctx);
}

/* The store's completion, in the event loop: hand the result to the caller. */
static void kv_write_done(struct store_op *op, void *ctx)
{
    struct kv_write *w = ctx;

    w->result = op->result;
    w->existed = op->existed;
    sibling_deinit(&op->written);
    w->done(w, w->ctx);
}

int kv_write(struct kv *kv, struct kv_write *w, const void *key, size_t len, const void *value,
             size_t value_len, bool tombstone, const struct vclock *context, kv_done_fn done,
             void *ctx)
{
    store_op_init(&w->op, STORE_OP_WRITE);
    w->op.key = key;
    w->op.key_len = len;
    w->op.value = value;
    w->op.value_len = value_len;
    w->op.tombstone = tombstone;
    w->op.context = context;
    w->op.done = kv_write_done;
    w->op.ctx = w;
    w->done = done;
    w->ctx = ctx;
    w->result = 0;
    w->existed = false;
    return store_submit(kv->store, &w->op);
}
