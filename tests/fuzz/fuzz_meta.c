/*
 * fuzz_meta.c - fuzz target for the checks of a data directory's recorded
 * metadata (store_meta_check() in storage/store.c): the format version,
 * node id, cluster id, cluster settings and counters store_open() reads
 * from the meta table.
 *
 * Input: eight fields in the order of struct store_meta, each a length
 * byte (0xff: absent) then that many bytes; missing input means absent.
 * Checked: a refusal carries one printable line; an acceptance means every
 * identity field equals the configuration's.
 */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "error.h"
#include "fuzz.h"
#include "store.h"

static const uint8_t fuzz_cluster[] = "cluster-a";

/* Take one field off the input. */
static void fuzz_field(const uint8_t **data, size_t *size, struct store_meta_value *v)
{
    size_t n;

    v->p = NULL;
    v->len = 0;
    if (*size < 1 || (*data)[0] == 0xff) {
        *data += *size > 0;
        *size -= *size > 0;
        return;
    }
    n = (*data)[0] < *size - 1 ? (*data)[0] : *size - 1;
    v->p = *data + 1;
    v->len = n;
    *data += 1 + n;
    *size -= 1 + n;
}

static void fuzz_check_line(const char *err)
{
    size_t n = strlen(err);

    if (n == 0) {
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)err[i] < 0x20 || (unsigned char)err[i] >= 0x7f) {
            abort();
        }
    }
}

static bool fuzz_is(const struct store_meta_value *v, const void *want, size_t len)
{
    return v->p != NULL && v->len == len && memcmp(v->p, want, len) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct store_meta_value *fields[8];
    struct store_meta_found found;
    struct store_config cfg;
    struct store_meta m;
    char err[512];
    int rc;

    fields[0] = &m.format;
    fields[1] = &m.node_id;
    fields[2] = &m.cluster_id;
    fields[3] = &m.seed;
    fields[4] = &m.rf;
    fields[5] = &m.conflicts;
    fields[6] = &m.hint_seq;
    fields[7] = &m.hlc;
    for (size_t i = 0; i < 8; i++) {
        fuzz_field(&data, &size, fields[i]);
    }
    store_config_defaults(&cfg);
    cfg.path = "/fuzz/data";
    cfg.node_id = "n1";
    cfg.cluster_id = fuzz_cluster;
    cfg.cluster_id_len = sizeof(fuzz_cluster) - 1;
    err[0] = '\0';
    rc = store_meta_check(&m, &cfg, &found, err, sizeof(err));
    if (rc != 0) {
        if (rc != RK_EMISMATCH) {
            abort();
        }
        fuzz_check_line(err);
        return 0;
    }
    if (!fuzz_is(&m.node_id, "n1", 2) ||
        !fuzz_is(&m.cluster_id, fuzz_cluster, sizeof(fuzz_cluster) - 1) ||
        !fuzz_is(&m.seed, cfg.seed, RING_SEED_LEN) || m.format.len != 4 ||
        (bytes_get_be32(m.format.p) != 1 && bytes_get_be32(m.format.p) != 2) ||
        found.upgrade_format != (bytes_get_be32(m.format.p) == 1) ||
        (found.record_cluster && m.rf.p != NULL)) {
        abort();
    }
    return 0;
}
