/*
 * vector_check.c - the placement vector checker behind `ringkv placement check`.
 *
 * Grammar (PLACEMENT.md section 7), one record a line, fields separated by
 * single spaces, '#' at the start of a line for comments, blank lines and a
 * trailing CR ignored:
 *
 *   hash <seed:32 hex> <message hex | -> <16 hex>      outside cases
 *   case <name>                                         opens a case
 *   seed <32 hex>                                       optional, before nodes
 *   node <id> <rack> <tokens>                           before rf
 *   rf <n>                                              builds the ring
 *   key <key hex | -> <16 hex> <id,id,...>              after rf
 *   end                                                 closes the case
 *
 * The input is untrusted: every field is length-checked before it is
 * copied, numbers are parsed with explicit bounds, and all memory is sized
 * from the input's own length, never from a count it states.
 */
#include "vector_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"
#include "hex.h"
#include "ring.h"

#define VEC_FIELDS_MAX 5
#define VEC_CASE_NAME_MAX 128

struct vec_field {
    const char *p;
    size_t len;
};

struct vec_node {
    char id[RING_NAME_MAX + 1];
    char rack[RING_NAME_MAX + 1];
    uint32_t tokens;
};

struct vec_state {
    const char *name;
    FILE *report;
    struct vector_check_result *res;
    size_t line;
    bool in_case;
    bool broken; /* the current case cannot be checked */
    char case_name[VEC_CASE_NAME_MAX + 1];
    size_t case_line;
    uint8_t seed[RING_SEED_LEN];
    struct vec_node *nodes;
    size_t n_nodes, cap_nodes;
    unsigned rf;
    struct ring *ring;
    size_t unchecked;
    uint8_t *scratch; /* decoded key or message bytes */
    size_t scratch_cap;
};

static void vec_vfail(struct vec_state *v, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void vec_vfail(struct vec_state *v, const char *fmt, va_list ap)
{
    v->res->failed++;
    if (v->report == NULL) {
        return;
    }
    fprintf(v->report, "%s:%zu: ", v->name, v->line);
    vfprintf(v->report, fmt, ap);
    fputc('\n', v->report);
}

static void vec_fail(struct vec_state *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void vec_case_fail(struct vec_state *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Report a failure of the current line. */
static void vec_fail(struct vec_state *v, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vec_vfail(v, fmt, ap);
    va_end(ap);
}

/* Report an error that leaves the rest of the current case uncheckable. */
static void vec_case_fail(struct vec_state *v, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vec_vfail(v, fmt, ap);
    va_end(ap);
    v->broken = true;
}

static void vec_case_reset(struct vec_state *v)
{
    ring_unref(v->ring);
    v->ring = NULL;
    v->in_case = false;
    v->broken = false;
    v->n_nodes = 0;
    v->rf = 0;
    v->unchecked = 0;
    memcpy(v->seed, ring_default_seed, RING_SEED_LEN);
}

/* Decode "-" (empty) or hex into v->scratch; false on malformed hex. */
static bool vec_bytes(struct vec_state *v, const struct vec_field *f, size_t *len)
{
    if (f->len == 1 && f->p[0] == '-') {
        *len = 0;
        return true;
    }
    if (f->len == 0 || f->len % 2 != 0) {
        return false;
    }
    if (grow_array(&v->scratch, &v->scratch_cap, f->len / 2, 1) != 0) {
        return false;
    }
    *len = f->len / 2;
    return hex_decode(v->scratch, f->p, f->len);
}

/* A decimal number in [lo, hi]; no sign, no leading zeros, at most 10 digits. */
static bool vec_uint(const struct vec_field *f, uint32_t lo, uint32_t hi, uint32_t *out)
{
    uint64_t n = 0;

    if (f->len == 0 || f->len > 10 || (f->len > 1 && f->p[0] == '0')) {
        return false;
    }
    for (size_t i = 0; i < f->len; i++) {
        if (f->p[i] < '0' || f->p[i] > '9') {
            return false;
        }
        n = n * 10 + (uint64_t)(f->p[i] - '0');
    }
    if (n < lo || n > hi) {
        return false;
    }
    *out = (uint32_t)n;
    return true;
}

static int vec_hash(struct vec_state *v, const struct vec_field *f)
{
    uint8_t seed[RING_SEED_LEN];
    uint64_t want, got;
    size_t len;

    if (v->in_case) {
        vec_fail(v, "hash line inside case '%s': hash lines stand alone", v->case_name);
        return 0;
    }
    if (f[1].len != 32 || !hex_decode(seed, f[1].p, 32)) {
        vec_fail(v, "hash: seed must be 32 hex digits");
        return 0;
    }
    if (!vec_bytes(v, &f[2], &len)) {
        vec_fail(v, "hash: message must be hex bytes or '-'");
        return 0;
    }
    if (!hex_u64(&want, f[3].p, f[3].len)) {
        vec_fail(v, "hash: value must be 16 hex digits");
        return 0;
    }
    got = ring_hash(seed, v->scratch, len);
    if (got != want) {
        vec_fail(v, "hash mismatch: expected %016llx, computed %016llx", (unsigned long long)want,
                 (unsigned long long)got);
        return 0;
    }
    v->res->passed++;
    return 0;
}

static void vec_close_case(struct vec_state *v, const char *why)
{
    if (v->broken && v->unchecked > 0) {
        vec_fail(v, "case '%s' (line %zu) could not be checked: %zu key lines counted as failed",
                 v->case_name, v->case_line, v->unchecked);
        v->res->failed += v->unchecked - 1;
    }
    if (why != NULL) {
        vec_fail(v, "case '%s' (line %zu) %s", v->case_name, v->case_line, why);
    }
    vec_case_reset(v);
}

static int vec_case(struct vec_state *v, const struct vec_field *f)
{
    if (v->in_case) {
        vec_close_case(v, "has no end line before the next case");
    }
    v->in_case = true;
    v->case_line = v->line;
    v->res->cases++;
    if (f[1].len > VEC_CASE_NAME_MAX) {
        snprintf(v->case_name, sizeof(v->case_name), "%.*s...", 40, f[1].p);
        vec_case_fail(v, "case name longer than %d bytes", VEC_CASE_NAME_MAX);
        return 0;
    }
    memcpy(v->case_name, f[1].p, f[1].len);
    v->case_name[f[1].len] = '\0';
    return 0;
}

static int vec_seed(struct vec_state *v, const struct vec_field *f)
{
    if (v->n_nodes > 0 || v->rf > 0) {
        vec_case_fail(v, "seed must come before the node and rf lines of case '%s'", v->case_name);
    } else if (f[1].len != 32 || !hex_decode(v->seed, f[1].p, 32)) {
        vec_case_fail(v, "seed must be 32 hex digits");
    }
    return 0;
}

static int vec_node(struct vec_state *v, const struct vec_field *f)
{
    struct vec_node *n;

    if (v->rf > 0) {
        vec_case_fail(v, "node line after rf in case '%s': nodes must precede rf", v->case_name);
        return 0;
    }
    if (!ring_name_valid(f[1].p, f[1].len)) {
        vec_case_fail(v, "invalid node id '%.*s': 1 to %d bytes of [A-Za-z0-9._:-]",
                      (int)(f[1].len > 80 ? 80 : f[1].len), f[1].p, RING_NAME_MAX);
        return 0;
    }
    if (!ring_name_valid(f[2].p, f[2].len)) {
        vec_case_fail(v, "invalid rack '%.*s' for node %.*s: 1 to %d bytes of [A-Za-z0-9._:-]",
                      (int)(f[2].len > 80 ? 80 : f[2].len), f[2].p, (int)f[1].len, f[1].p,
                      RING_NAME_MAX);
        return 0;
    }
    if (v->n_nodes == RING_MEMBERS_MAX) {
        vec_case_fail(v, "more than %d nodes in case '%s'", RING_MEMBERS_MAX, v->case_name);
        return 0;
    }
    if (grow_array(&v->nodes, &v->cap_nodes, v->n_nodes + 1, sizeof(*v->nodes)) != 0) {
        return RK_ENOMEM;
    }
    n = &v->nodes[v->n_nodes];
    if (!vec_uint(&f[3], RING_TOKENS_MIN, RING_TOKENS_MAX, &n->tokens)) {
        vec_case_fail(v, "token count '%.*s' of node %.*s out of range %d..%d",
                      (int)(f[3].len > 20 ? 20 : f[3].len), f[3].p, (int)f[1].len, f[1].p,
                      RING_TOKENS_MIN, RING_TOKENS_MAX);
        return 0;
    }
    memcpy(n->id, f[1].p, f[1].len);
    n->id[f[1].len] = '\0';
    memcpy(n->rack, f[2].p, f[2].len);
    n->rack[f[2].len] = '\0';
    v->n_nodes++;
    return 0;
}

static int vec_build(struct vec_state *v)
{
    struct ring_member *m = malloc((v->n_nodes ? v->n_nodes : 1) * sizeof(*m));
    int err;

    if (m == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < v->n_nodes; i++) {
        m[i] = (struct ring_member){v->nodes[i].id, v->nodes[i].rack, v->nodes[i].tokens};
    }
    err = ring_create(&v->ring, v->seed, m, v->n_nodes);
    free(m);
    if (err == RK_EDUP) {
        vec_case_fail(v, "case '%s' lists a node id twice", v->case_name);
        return 0;
    }
    return err;
}

static int vec_rf(struct vec_state *v, const struct vec_field *f)
{
    uint32_t rf;

    if (v->rf > 0 || v->ring != NULL) {
        vec_case_fail(v, "second rf line in case '%s'", v->case_name);
        return 0;
    }
    if (!vec_uint(f + 1, 1, RING_RF_MAX, &rf)) {
        vec_case_fail(v, "rf '%.*s' out of range 1..%d", (int)(f[1].len > 20 ? 20 : f[1].len),
                      f[1].p, RING_RF_MAX);
        return 0;
    }
    v->rf = rf;
    if (v->broken) {
        return 0;
    }
    if (v->n_nodes == 0) {
        vec_case_fail(v, "case '%s' has no node lines: the ring is empty", v->case_name);
        return 0;
    }
    return vec_build(v);
}

/* Compare the computed list with the expected "id,id,..." field. */
static bool vec_list_matches(const struct vec_state *v, const uint32_t *l, size_t n,
                             const struct vec_field *want)
{
    const char *p = want->p, *end = want->p + want->len;

    for (size_t i = 0; i < n; i++) {
        const char *id = ring_member_id(v->ring, l[i]);
        size_t len = strlen(id);
        if ((size_t)(end - p) < len || memcmp(p, id, len) != 0) {
            return false;
        }
        p += len;
        if (i + 1 < n) {
            if (p == end || *p != ',') {
                return false;
            }
            p++;
        }
    }
    return p == end;
}

static void vec_list_print(const struct vec_state *v, char *buf, size_t cap, const uint32_t *l,
                           size_t n)
{
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++) {
        int w =
            snprintf(buf + used, cap - used, "%s%s", i ? "," : "", ring_member_id(v->ring, l[i]));
        used += w > 0 ? (size_t)w : 0;
    }
}

static void vec_key_check(struct vec_state *v, const struct vec_field *f, size_t key_len,
                          uint64_t want_pos)
{
    uint32_t fast[RING_RF_MAX], walk[RING_RF_MAX];
    size_t n_fast, n_walk;
    char got[RING_RF_MAX * (RING_NAME_MAX + 1) + 1];
    uint64_t pos = ring_key_position(v->ring, v->scratch, key_len);

    if (pos != want_pos) {
        vec_fail(v, "key %.*s: position expected %016llx, computed %016llx",
                 (int)(f[1].len > 64 ? 64 : f[1].len), f[1].p, (unsigned long long)want_pos,
                 (unsigned long long)pos);
        return;
    }
    (void)ring_preflist(v->ring, pos, v->rf, fast, &n_fast);
    (void)ring_preflist_walk(v->ring, pos, v->rf, walk, &n_walk, NULL, NULL);
    if (n_fast != n_walk || memcmp(fast, walk, n_fast * sizeof(*fast)) != 0) {
        vec_list_print(v, got, sizeof(got), walk, n_walk);
        vec_fail(v, "key %.*s: preference table disagrees with the section-5 walk (%s)",
                 (int)(f[1].len > 64 ? 64 : f[1].len), f[1].p, got);
        return;
    }
    if (!vec_list_matches(v, fast, n_fast, &f[3])) {
        vec_list_print(v, got, sizeof(got), fast, n_fast);
        vec_fail(v, "key %.*s: preference list expected %.*s, computed %s",
                 (int)(f[1].len > 64 ? 64 : f[1].len), f[1].p,
                 (int)(f[3].len > 1100 ? 1100 : f[3].len), f[3].p, got);
        return;
    }
    v->res->passed++;
}

static int vec_key(struct vec_state *v, const struct vec_field *f)
{
    uint64_t want_pos;
    size_t key_len;

    if (v->broken) {
        v->unchecked++;
        return 0;
    }
    if (v->ring == NULL) {
        vec_fail(v, "key line before the rf line of case '%s'", v->case_name);
        return 0;
    }
    if (!vec_bytes(v, &f[1], &key_len)) {
        vec_fail(v, "key must be hex bytes or '-'");
        return 0;
    }
    if (!hex_u64(&want_pos, f[2].p, f[2].len)) {
        vec_fail(v, "key position must be 16 hex digits");
        return 0;
    }
    vec_key_check(v, f, key_len, want_pos);
    return 0;
}

static int vec_end(struct vec_state *v, const struct vec_field *f)
{
    (void)f;
    if (!v->broken && v->ring == NULL) {
        vec_case_fail(v, "case '%s' ends without an rf line", v->case_name);
    }
    vec_close_case(v, NULL);
    return 0;
}

struct vec_record {
    const char *word;
    size_t fields;
    bool in_case; /* allowed only inside a case (true) or anywhere (false) */
    int (*handle)(struct vec_state *v, const struct vec_field *f);
};

static const struct vec_record vec_records[] = {
    {"hash", 4, false, vec_hash}, {"case", 2, false, vec_case}, {"seed", 2, true, vec_seed},
    {"node", 4, true, vec_node},  {"rf", 2, true, vec_rf},      {"key", 4, true, vec_key},
    {"end", 1, true, vec_end},
};

/* Split a line at single spaces; false on an empty field or too many fields. */
static bool vec_split(const char *p, size_t len, struct vec_field *f, size_t *n)
{
    size_t k = 0, start = 0;

    for (size_t i = 0; i <= len; i++) {
        if (i < len && p[i] != ' ') {
            continue;
        }
        if (i == start || k == VEC_FIELDS_MAX) {
            return false;
        }
        f[k++] = (struct vec_field){p + start, i - start};
        start = i + 1;
    }
    *n = k;
    return true;
}

static int vec_line(struct vec_state *v, const char *p, size_t len)
{
    struct vec_field f[VEC_FIELDS_MAX];
    size_t n;

    if (len > 0 && p[len - 1] == '\r') {
        len--;
    }
    if (len == 0 || p[0] == '#') {
        return 0;
    }
    if (!vec_split(p, len, f, &n)) {
        vec_fail(v, "malformed line: fields must be separated by single spaces");
        return 0;
    }
    for (size_t i = 0; i < sizeof(vec_records) / sizeof(vec_records[0]); i++) {
        const struct vec_record *rec = &vec_records[i];
        if (strlen(rec->word) != f[0].len || memcmp(rec->word, f[0].p, f[0].len) != 0) {
            continue;
        }
        if (n != rec->fields) {
            vec_fail(v, "%s line needs %zu fields, has %zu", rec->word, rec->fields, n);
            return 0;
        }
        if (rec->in_case && !v->in_case) {
            vec_fail(v, "%s line outside a case", rec->word);
            return 0;
        }
        return rec->handle(v, f);
    }
    vec_fail(v, "unknown record '%.*s'", (int)(f[0].len > 32 ? 32 : f[0].len), f[0].p);
    return 0;
}

int vector_check_file(const char *buf, size_t len, const char *name, FILE *report,
                      struct vector_check_result *res)
{
    struct vec_state v = {.name = name, .report = report, .res = res};
    size_t start = 0;
    int err = 0;

    memset(res, 0, sizeof(*res));
    vec_case_reset(&v);
    for (size_t i = 0; i <= len && err == 0; i++) {
        if (i < len && buf[i] != '\n') {
            continue;
        }
        if (i == len && start == len) {
            break;
        }
        v.line++;
        err = vec_line(&v, buf + start, i - start);
        start = i + 1;
    }
    if (err == 0 && v.in_case) {
        vec_close_case(&v, "has no end line");
    }
    vec_case_reset(&v);
    free(v.nodes);
    free(v.scratch);
    return err;
}
