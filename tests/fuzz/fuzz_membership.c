/*
 * fuzz_membership.c - fuzz target for membership_restore(), which reads
 * the member table a data directory keeps (the "membership" meta entry,
 * gossip.c's gossip_load()) at every start: bytes from disk, which a
 * damaged or hand-edited directory can make anything.
 *
 * The table restored into holds three entries (its own and two others),
 * so a restore has entries to change and a ring to rebuild.  Beyond "no
 * crash, no leak" it checks the contract of membership.h:
 * - all or nothing: a refused restore (RK_ESYNTAX, RK_ETOOBIG or
 *   RK_ENOMEM, nothing else) leaves the table as it was: the same
 *   encoding, epoch, digest and ring;
 * - a restore that succeeds holds, for every entry of the input but our
 *   own, that entry or a newer one of the same id;
 * - restoring the table's own encoding into it again changes nothing.
 * A breach aborts, which libFuzzer and the replay driver both report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "fuzz.h"
#include "membership.h"
#include "msg.h"
#include "ring.h"

#define FUZZ_T0 1000000
#define FUZZ_HEARTBEAT_MS 200

static void fuzz_entry(struct msg_member *e, const char *id, uint32_t status, uint64_t gen)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->id, sizeof(e->id), "%s", id);
    snprintf(e->rack, sizeof(e->rack), "r1");
    e->tokens = 4;
    snprintf(e->peer_addr, sizeof(e->peer_addr), "127.0.0.1:7371");
    snprintf(e->client_addr, sizeof(e->client_addr), "127.0.0.1:7370");
    e->status = status;
    e->generation = gen;
    e->version = 3;
    e->ring_version = 1;
}

/* n2 itself, knowing n1 (normal) and n3 (leaving). */
static struct membership *fuzz_table(void)
{
    struct membership *m = NULL;
    struct msg_member self, other;
    enum membership_merged merged;
    bool changed;

    fuzz_entry(&self, "n2", MSG_MEMBER_NORMAL, 2);
    if (membership_create(&m, ring_default_seed, &self, FUZZ_HEARTBEAT_MS, FUZZ_T0) != 0) {
        abort();
    }
    fuzz_entry(&other, "n1", MSG_MEMBER_NORMAL, 5);
    if (membership_merge(m, &other, FUZZ_T0, &merged, &changed) != 0) {
        abort();
    }
    fuzz_entry(&other, "n3", MSG_MEMBER_LEAVING, 1);
    if (membership_merge(m, &other, FUZZ_T0, &merged, &changed) != 0) {
        abort();
    }
    return m;
}

struct fuzz_state {
    struct buf enc;
    uint64_t epoch, digest;
    size_t count;
    const struct ring *ring;
};

static void fuzz_state_take(struct fuzz_state *s, const struct membership *m)
{
    buf_init(&s->enc, 0);
    if (membership_encode(m, &s->enc) != 0) {
        abort();
    }
    s->epoch = membership_epoch(m);
    s->digest = membership_digest(m);
    s->count = membership_count(m);
    s->ring = membership_ring(m);
}

static void fuzz_state_same(const struct fuzz_state *a, const struct fuzz_state *b)
{
    if (a->enc.len != b->enc.len || memcmp(buf_data(&a->enc), buf_data(&b->enc), a->enc.len) != 0 ||
        a->epoch != b->epoch || a->digest != b->digest || a->count != b->count ||
        a->ring != b->ring) {
        abort();
    }
}

/* Every entry of the input but our own is in m, or a newer one of its id. */
static void fuzz_check_held(const struct membership *m, const uint8_t *data, size_t size)
{
    struct msg_member *list = NULL;
    size_t n = 0;

    if (msg_members_decode(data, size, MEMBERSHIP_MAX, &list, &n) != 0) {
        abort(); /* the restore decoded it */
    }
    for (size_t i = 0; i < n; i++) {
        const struct member *mb = membership_find(m, list[i].id);
        if (mb == NULL) {
            abort();
        }
        if (mb == membership_self(m)) {
            continue;
        }
        if (mb->e.generation < list[i].generation ||
            (mb->e.generation == list[i].generation && mb->e.version < list[i].version)) {
            abort();
        }
    }
    free(list);
}

/*
 * The table is built once and kept while restores are refused (which the
 * checks below prove leave it as it was): building it costs more than
 * most restores.  A restore that succeeds may change it, so the next
 * input starts from a fresh one.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct membership *m;
    struct fuzz_state before, after;
    int rc;

    if (m == NULL) {
        m = fuzz_table();
    }

    fuzz_state_take(&before, m);
    rc = membership_restore(m, data, size, FUZZ_T0 + 1);
    fuzz_state_take(&after, m);
    if (rc != 0) {
        if (rc != RK_ESYNTAX && rc != RK_ETOOBIG && rc != RK_ENOMEM) {
            abort();
        }
        fuzz_state_same(&before, &after);
    } else {
        struct fuzz_state again;
        fuzz_check_held(m, data, size);
        if (membership_restore(m, buf_data(&after.enc), after.enc.len, FUZZ_T0 + 2) != 0) {
            abort();
        }
        fuzz_state_take(&again, m);
        fuzz_state_same(&after, &again);
        buf_free(&again.enc);
    }
    buf_free(&before.enc);
    buf_free(&after.enc);
    if (rc == 0) {
        membership_destroy(m);
        m = NULL;
    }
    return 0;
}
