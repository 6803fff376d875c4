/*
 * cli.c - helpers shared by the verbs of the `ringkv` command.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"
#include "hex.h"

/* Bytes cli_read_file() asks of each read. */
#define CLI_READ_CHUNK 65536

int cli_dispatch(const char *prog, const struct cli_verb *table, size_t n, int argc, char **argv)
{
    if (argc >= 1) {
        for (size_t i = 0; i < n; i++) {
            if (strcmp(argv[0], table[i].name) == 0) {
                return table[i].run(argc, argv);
            }
        }
        if (strcmp(argv[0], "help") != 0 && strcmp(argv[0], "--help") != 0) {
            fprintf(stderr, "ringkv: unknown command '%s %s'\n", prog, argv[0]);
        }
    }
    fprintf(stderr, "usage:\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, "  %s %s %s\n", prog, table[i].name, table[i].usage);
    }
    return CLI_USAGE;
}

int cli_error(const char *fmt, ...)
{
    va_list ap;

    fputs("ringkv: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_ERROR;
}

int cli_usage(const char *usage, const char *fmt, ...)
{
    va_list ap;

    fputs("ringkv: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s\n", usage);
    return CLI_USAGE;
}

int cli_read_file(const char *path, char **buf, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    size_t cap = 0, used = 0;
    char *b = NULL;
    int err = 0, read_errno = 0;

    if (f == NULL) {
        cli_error("cannot open %s: %s", path, strerror(errno));
        return RK_EIO;
    }
    do {
        /* room for a chunk and the NUL; the read ends when it leaves room */
        if (grow_array(&b, &cap, used + CLI_READ_CHUNK + 1, 1) != 0) {
            err = RK_ENOMEM;
            break;
        }
        used += fread(b + used, 1, cap - used - 1, f);
    } while (used == cap - 1);
    if (err == 0 && ferror(f)) {
        err = RK_EIO;
        read_errno = errno;
    }
    if (f != stdin) {
        fclose(f);
    }
    if (err != 0) {
        cli_error("cannot read %s: %s", path,
                  err == RK_ENOMEM ? "out of memory" : strerror(read_errno));
        free(b);
        return err;
    }
    b[used] = '\0';
    *buf = b;
    *len = used;
    return 0;
}

int cli_json_print(json_t *j)
{
    json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    fputc('\n', stdout);
    json_decref(j);
    return CLI_OK;
}

bool cli_parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "ringkv: %s must be an integer from %ld to %ld, not '%s'\n", opt, lo, hi,
                s);
        return false;
    }
    *out = v;
    return true;
}

bool cli_parse_seed(const char *s, uint8_t seed[RING_SEED_LEN])
{
    if (strlen(s) != 2 * RING_SEED_LEN || !hex_decode(seed, s, 2 * RING_SEED_LEN)) {
        fprintf(stderr, "ringkv: --seed must be %d hex digits, not '%s'\n", 2 * RING_SEED_LEN, s);
        return false;
    }
    return true;
}

static int members_push(struct cli_members *ms, const char *id, size_t id_len, const char *rack,
                        size_t rack_len, long tokens)
{
    struct ring_member *m;

    if (grow_array(&ms->m, &ms->cap, ms->n + 1, sizeof(*ms->m)) != 0) {
        return RK_ENOMEM;
    }
    m = &ms->m[ms->n];
    m->id = strndup(id, id_len);
    m->rack = strndup(rack, rack_len);
    m->tokens = (uint32_t)tokens;
    if (m->id == NULL || m->rack == NULL) {
        free((char *)m->id);
        free((char *)m->rack);
        return RK_ENOMEM;
    }
    ms->n++;
    return 0;
}

/* Check one member's fields; prints the problem after where (a spec or file:line). */
static int members_check(const char *where, const char *id, size_t id_len, const char *rack,
                         size_t rack_len, const char *tokens, long *t)
{
    char *end;

    if (!ring_name_valid(id, id_len)) {
        return cli_error("%s: invalid node id '%.*s': use 1 to %d bytes of [A-Za-z0-9._:-]", where,
                         (int)id_len, id, RING_NAME_MAX);
    }
    if (!ring_name_valid(rack, rack_len)) {
        return cli_error("%s: invalid rack '%.*s': use 1 to %d bytes of [A-Za-z0-9._:-]", where,
                         (int)rack_len, rack, RING_NAME_MAX);
    }
    errno = 0;
    *t = strtol(tokens, &end, 10);
    if (errno != 0 || end == tokens || *end != '\0' || *t < RING_TOKENS_MIN ||
        *t > RING_TOKENS_MAX) {
        return cli_error("%s: token count '%s' out of range %d..%d", where, tokens, RING_TOKENS_MIN,
                         RING_TOKENS_MAX);
    }
    return 0;
}

int cli_members_add_spec(struct cli_members *ms, const char *spec)
{
    const char *c1 = strchr(spec, ',');
    const char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    char where[96];
    long t;

    snprintf(where, sizeof(where), "--node %.64s", spec);
    if (c1 == NULL || c2 == NULL) {
        return cli_error("%s: expected ID,RACK,TOKENS", where);
    }
    if (members_check(where, spec, (size_t)(c1 - spec), c1 + 1, (size_t)(c2 - c1 - 1), c2 + 1,
                      &t) != 0) {
        return CLI_ERROR;
    }
    if (members_push(ms, spec, (size_t)(c1 - spec), c1 + 1, (size_t)(c2 - c1 - 1), t) != 0) {
        return cli_error("out of memory");
    }
    return 0;
}

/* One line of a members file: "node ID RACK TOKENS". */
static int members_file_line(struct cli_members *ms, const char *where, char *line)
{
    char *f[5], *save = NULL;
    size_t n = 0;
    long t;

    for (char *tok = strtok_r(line, " \t\r", &save); tok != NULL && n < 5;
         tok = strtok_r(NULL, " \t\r", &save)) {
        f[n++] = tok;
    }
    if (n == 0 || f[0][0] == '#') {
        return 0;
    }
    if (n != 4 || strcmp(f[0], "node") != 0) {
        return cli_error("%s: expected 'node ID RACK TOKENS'", where);
    }
    if (members_check(where, f[1], strlen(f[1]), f[2], strlen(f[2]), f[3], &t) != 0) {
        return CLI_ERROR;
    }
    if (members_push(ms, f[1], strlen(f[1]), f[2], strlen(f[2]), t) != 0) {
        return cli_error("out of memory");
    }
    return 0;
}

int cli_members_add_file(struct cli_members *ms, const char *path)
{
    char *buf, where[300];
    size_t len, line = 0;
    int err = 0;

    if (cli_read_file(path, &buf, &len) != 0) {
        return CLI_ERROR;
    }
    for (char *p = buf; err == 0 && p != NULL && *p != '\0';) {
        char *nl = strchr(p, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        line++;
        snprintf(where, sizeof(where), "%.256s:%zu", path, line);
        err = members_file_line(ms, where, p);
        p = nl ? nl + 1 : NULL;
    }
    free(buf);
    return err;
}

void cli_members_free(struct cli_members *ms)
{
    for (size_t i = 0; i < ms->n; i++) {
        free((char *)ms->m[i].id);
        free((char *)ms->m[i].rack);
    }
    free(ms->m);
    memset(ms, 0, sizeof(*ms));
}

int cli_members_ring(const struct cli_members *ms, const uint8_t seed[RING_SEED_LEN],
                     struct ring **out)
{
    int err;

    if (ms->n == 0) {
        return cli_error("no members given: the ring is empty (use --node ID,RACK,TOKENS or "
                         "--members FILE)");
    }
    err = ring_create(out, seed, ms->m, ms->n);
    if (err == RK_EDUP) {
        return cli_error("a node id is given twice");
    }
    if (err == RK_ETOOBIG) {
        return cli_error("more than %d members", RING_MEMBERS_MAX);
    }
    if (err != 0) {
        return cli_error("cannot build the ring: %s", rk_strerror(err));
    }
    return 0;
}
