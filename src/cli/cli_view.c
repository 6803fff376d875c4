/*
 * cli_view.c - the cluster views of the `ringkv` CLI: admin replies read
 * into structs through field tables, and printed as tables, JSON or a
 * Graphviz digraph (cli_view.h has the reply shapes).
 *
 * Reading.  Each reply map is described by a table of {name, kind,
 * offset}: the reader looks every field up by name, checks its type
 * against its kind and stores it at its offset in the struct being
 * filled.  The same tables drive the JSON forms, which walk the reply's
 * own pairs (so a field a newer node adds is kept, in its place) and
 * convert the known ones by kind.
 *
 * Tables.  A view table collects rows of cells (copied, with control
 * bytes a node might send replaced by '?', so a reply cannot drive the
 * terminal), then prints them with columns as wide as their widest cell,
 * two spaces apart, numbers aligned right.
 */
#include "cli_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"
#include "hex.h"
#include "respc.h"

/* --- reading replies ------------------------------------------------------------- */

enum view_kind {
    VIEW_TEXT,     /* const char *: a bulk or simple string without NUL bytes */
    VIEW_TEXT_OPT, /* a VIEW_TEXT that older nodes do not send: NULL when missing */
    VIEW_INT,      /* int64_t: an integer */
    VIEW_BOOL,     /* bool: the integer 0 or 1, or a RESP3 boolean */
    VIEW_FRACTION, /* double: decimal text, a RESP3 double or an integer */
    VIEW_SHARE,    /* double: a VIEW_FRACTION from 0 to 1, a share of the keyspace */
    VIEW_LIST,     /* const struct resp_reply *: an array of text */
    VIEW_MAPS,     /* const struct resp_reply *: an array of maps (read by the caller) */
};

struct view_fields;

struct view_field {
    const char *name;
    enum view_kind kind;
    size_t offset;                 /* where the value goes in the struct being filled */
    const struct view_fields *sub; /* VIEW_MAPS: the fields of each element */
};

struct view_fields {
    const struct view_field *f;
    size_t n;
};

static bool view_is_text(const struct resp_reply *r)
{
    return r->type == RESP_T_BULK || r->type == RESP_T_SIMPLE || r->type == RESP_T_VERBATIM;
}

/*
 * The pairs of a map: a RESP3 map, or a RESP2 flat array of an even
 * number of elements; either way keyed by text.
 */
static bool view_map_pairs(const struct resp_reply *r, size_t *pairs)
{
    if (r->type == RESP_T_MAP) {
        *pairs = r->n;
    } else if (r->type == RESP_T_ARRAY && r->n % 2 == 0) {
        *pairs = r->n / 2;
    } else {
        return false;
    }
    for (size_t i = 0; i < *pairs; i++) {
        if (!view_is_text(r->elem[2 * i])) {
            return false;
        }
    }
    return true;
}

static bool view_key_is(const struct resp_reply *k, const char *name)
{
    return k->len == strlen(name) && memcmp(k->str, name, k->len) == 0;
}

static const struct resp_reply *view_map_get(const struct resp_reply *map, size_t pairs,
                                             const char *name)
{
    for (size_t i = 0; i < pairs; i++) {
        if (view_key_is(map->elem[2 * i], name)) {
            return map->elem[2 * i + 1];
        }
    }
    return NULL;
}

static bool read_text(const struct resp_reply *v, void *dst)
{
    if (!view_is_text(v) || memchr(v->str, '\0', v->len) != NULL) {
        return false;
    }
    *(const char **)dst = (const char *)v->str;
    return true;
}

static bool read_int(const struct resp_reply *v, void *dst)
{
    if (v->type != RESP_T_INT) {
        return false;
    }
    *(int64_t *)dst = v->integer;
    return true;
}

static bool read_bool(const struct resp_reply *v, void *dst)
{
    if ((v->type != RESP_T_INT && v->type != RESP_T_BOOL) || (v->integer != 0 && v->integer != 1)) {
        return false;
    }
    *(bool *)dst = v->integer == 1;
    return true;
}

static bool read_fraction(const struct resp_reply *v, void *dst)
{
    char *end;

    if (v->type == RESP_T_DOUBLE) {
        *(double *)dst = v->dbl;
        return true;
    }
    if (v->type == RESP_T_INT) {
        *(double *)dst = (double)v->integer;
        return true;
    }
    if (!view_is_text(v) || v->len == 0) {
        return false;
    }
    *(double *)dst = strtod((const char *)v->str, &end);
    return end == (const char *)v->str + v->len;
}

/*
 * A share of the keyspace: finite and from 0 to 1.  What a node sends is
 * outside input: a NaN or 1e8 would reach the views' percentages and the
 * dot graph's integer edge weights, where converting it is undefined.
 */
static bool read_share(const struct resp_reply *v, void *dst)
{
    double d;

    if (!read_fraction(v, &d) || !isfinite(d) || d < 0.0 || d > 1.0) {
        return false;
    }
    *(double *)dst = d;
    return true;
}

static bool read_list(const struct resp_reply *v, void *dst)
{
    const char *ignored;

    if (v->type != RESP_T_ARRAY && v->type != RESP_T_SET) {
        return false;
    }
    for (size_t i = 0; i < v->n; i++) {
        if (!read_text(v->elem[i], &ignored)) {
            return false;
        }
    }
    *(const struct resp_reply **)dst = v;
    return true;
}

static bool read_maps(const struct resp_reply *v, void *dst)
{
    size_t pairs;

    if (v->type != RESP_T_ARRAY) {
        return false;
    }
    for (size_t i = 0; i < v->n; i++) {
        if (!view_map_pairs(v->elem[i], &pairs)) {
            return false;
        }
    }
    *(const struct resp_reply **)dst = v;
    return true;
}

/* Text as a JSON string, or {"hex": "..."} when it is not UTF-8 (respc_reply_json()'s form). */
static json_t *json_text(const struct resp_reply *v)
{
    return respc_reply_json(v);
}

static json_t *json_int(const struct resp_reply *v)
{
    return json_integer(v->integer);
}

static json_t *json_bool(const struct resp_reply *v)
{
    return json_boolean(v->integer == 1);
}

/* A fraction as a JSON number; null when it is not finite, which JSON cannot hold. */
static json_t *json_fraction(const struct resp_reply *v)
{
    double d = 0;

    read_fraction(v, &d);
    return isfinite(d) ? json_real(d) : json_null();
}

/* What each kind accepts, for messages, and how it is read and shown as JSON. */
static const struct {
    const char *expect;
    bool (*read)(const struct resp_reply *v, void *dst);
    json_t *(*json)(const struct resp_reply *v);
} view_kinds[] = {
    [VIEW_TEXT] = {"a string", read_text, json_text},
    [VIEW_TEXT_OPT] = {"a string", read_text, json_text},
    [VIEW_INT] = {"an integer", read_int, json_int},
    [VIEW_BOOL] = {"0 or 1", read_bool, json_bool},
    [VIEW_FRACTION] = {"a decimal number", read_fraction, json_fraction},
    [VIEW_SHARE] = {"a decimal number from 0 to 1", read_share, json_fraction},
    [VIEW_LIST] = {"an array of strings", read_list, respc_reply_json},
    [VIEW_MAPS] = {"an array of maps", read_maps, NULL},
};

/* "an array", "a map": a type's name with its article, for messages. */
static const char *view_article(const char *name)
{
    return strchr("aeiou", name[0]) != NULL ? "an" : "a";
}

/*
 * Fill out from map by the table fs.  where prefixes the sentence in err
 * ("member 2: "); RK_ESYNTAX when map is no map or a field is missing or
 * of the wrong type.
 */
static int view_read(const struct resp_reply *map, const struct view_fields *fs, void *out,
                     const char *where, char *err, size_t err_len)
{
    size_t pairs;

    if (!view_map_pairs(map, &pairs)) {
        snprintf(err, err_len, "%sexpected a map, got %s %s", where,
                 view_article(respc_type_name(map->type)), respc_type_name(map->type));
        return RK_ESYNTAX;
    }
    for (size_t i = 0; i < fs->n; i++) {
        const struct view_field *f = &fs->f[i];
        const struct resp_reply *v = view_map_get(map, pairs, f->name);
        if (v == NULL && f->kind == VIEW_TEXT_OPT) {
            continue;
        }
        if (v == NULL) {
            snprintf(err, err_len, "%s'%s' is missing", where, f->name);
            return RK_ESYNTAX;
        }
        if (!view_kinds[f->kind].read(v, (char *)out + f->offset)) {
            const char *type = respc_type_name(v->type);
            snprintf(err, err_len, "%s'%s' is %s %s, expected %s", where, f->name,
                     view_article(type), type, view_kinds[f->kind].expect);
            return RK_ESYNTAX;
        }
    }
    return 0;
}

/*
 * Read every element of the array of maps list into n structs of size
 * each, allocated in *out; what names an element in messages ("member").
 */
static int view_read_all(const struct resp_reply *list, const struct view_fields *fs, size_t size,
                         void **out, const char *what, char *err, size_t err_len)
{
    char where[96];
    char *items;

    *out = NULL;
    if (list->n == 0) {
        return 0;
    }
    items = calloc(list->n, size);
    if (items == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < list->n; i++) {
        snprintf(where, sizeof(where), "%s %zu: ", what, i + 1);
        int rc = view_read(list->elem[i], fs, items + i * size, where, err, err_len);
        if (rc != 0) {
            free(items);
            return rc;
        }
    }
    *out = items;
    return 0;
}

static const struct view_field *view_field_find(const struct view_fields *fs,
                                                const struct resp_reply *key)
{
    for (size_t i = 0; i < fs->n; i++) {
        if (view_key_is(key, fs->f[i].name)) {
            return &fs->f[i];
        }
    }
    return NULL;
}

static json_t *view_json_object(const struct resp_reply *map, const struct view_fields *fs);

/*
 * o[key] = j (taken).  A key that is not UTF-8, which a JSON object cannot
 * hold, becomes "hex:" and its bytes in hex, so the field is still shown.
 */
static int view_json_set(json_t *o, const struct resp_reply *k, json_t *j)
{
    json_t *probe = json_stringn((const char *)k->str, k->len);
    char *hex;
    int rc;

    if (probe != NULL) {
        json_decref(probe);
        return json_object_setn_new(o, (const char *)k->str, k->len, j);
    }
    hex = malloc(2 * k->len + 5);
    if (hex == NULL) {
        json_decref(j);
        return -1;
    }
    memcpy(hex, "hex:", 4);
    hex_encode(hex + 4, k->str, k->len);
    rc = json_object_set_new(o, hex, j);
    free(hex);
    return rc;
}

static json_t *view_json_maps(const struct resp_reply *list, const struct view_fields *fs)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < list->n; i++) {
        if (json_array_append_new(a, view_json_object(list->elem[i], fs)) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* A reply map as a JSON object: its own pairs in order, the known fields converted. */
static json_t *view_json_object(const struct resp_reply *map, const struct view_fields *fs)
{
    json_t *o = json_object();
    size_t pairs = 0;

    view_map_pairs(map, &pairs);
    for (size_t i = 0; o != NULL && i < pairs; i++) {
        const struct resp_reply *k = map->elem[2 * i], *v = map->elem[2 * i + 1];
        const struct view_field *f = view_field_find(fs, k);
        json_t *j;
        if (f == NULL) {
            j = respc_reply_json(v);
        } else if (f->kind == VIEW_MAPS) {
            j = view_json_maps(v, f->sub);
        } else {
            j = view_kinds[f->kind].json(v);
        }
        if (view_json_set(o, k, j) != 0) {
            json_decref(o);
            o = NULL;
        }
    }
    return o;
}

/* --- tables ---------------------------------------------------------------------- */

#define VIEW_COLS_MAX 12

struct view_table {
    size_t cols, rows, cap;
    const char *head[VIEW_COLS_MAX]; /* static strings; head[0] NULL: no header line */
    unsigned right;                  /* bit i: column i is aligned right */
    char **cell;                     /* rows * cols copies, row by row */
};

static void table_init(struct view_table *t, size_t cols, unsigned right, const char *const *head)
{
    memset(t, 0, sizeof(*t));
    t->cols = cols;
    t->right = right;
    for (size_t i = 0; head != NULL && i < cols; i++) {
        t->head[i] = head[i];
    }
}

static void table_free(struct view_table *t)
{
    for (size_t i = 0; i < t->rows * t->cols; i++) {
        free(t->cell[i]);
    }
    free(t->cell);
    memset(t, 0, sizeof(*t));
}

/* A copy of s for the terminal: control bytes become '?'. */
static char *table_copy(const char *s)
{
    char *c = strdup(s);

    for (char *p = c; p != NULL && *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            *p = '?';
        }
    }
    return c;
}

/* Add a row of t->cols cells (copied); RK_ENOMEM. */
static int table_row(struct view_table *t, const char *const *cells)
{
    /* an element is a row of t->cols cells */
    if (grow_array(&t->cell, &t->cap, t->rows + 1, t->cols * sizeof(*t->cell)) != 0) {
        return RK_ENOMEM;
    }
    char **row = t->cell + t->rows * t->cols;
    for (size_t i = 0; i < t->cols; i++) {
        row[i] = table_copy(cells[i]);
        if (row[i] == NULL) {
            while (i-- > 0) {
                free(row[i]);
            }
            return RK_ENOMEM;
        }
    }
    t->rows++;
    return 0;
}

/* One line; empty cells at its end are left out, so no line ends in blanks. */
static void table_line(FILE *f, const struct view_table *t, const size_t *width,
                       const char *const *cells)
{
    size_t end = t->cols;

    while (end > 1 && cells[end - 1][0] == '\0') {
        end--;
    }
    for (size_t i = 0; i < end; i++) {
        bool last = i + 1 == end, right = (t->right >> i) & 1;
        if (i > 0) {
            fputs("  ", f);
        }
        if (right) {
            fprintf(f, "%*s", (int)width[i], cells[i]);
        } else {
            fprintf(f, "%-*s", last ? 0 : (int)width[i], cells[i]);
        }
    }
    fputc('\n', f);
}

static void table_print(FILE *f, const struct view_table *t)
{
    size_t width[VIEW_COLS_MAX] = {0};

    for (size_t i = 0; i < t->cols; i++) {
        width[i] = t->head[0] != NULL ? strlen(t->head[i]) : 0;
        for (size_t r = 0; r < t->rows; r++) {
            size_t w = strlen(t->cell[r * t->cols + i]);
            width[i] = w > width[i] ? w : width[i];
        }
    }
    if (t->head[0] != NULL) {
        table_line(f, t, width, t->head);
    }
    for (size_t r = 0; r < t->rows; r++) {
        table_line(f, t, width, (const char *const *)t->cell + r * t->cols);
    }
}

/* A percentage of a fraction with the given decimals ("33.4%"). */
static void fmt_percent(char *out, size_t len, double fraction, int decimals)
{
    snprintf(out, len, "%.*f%%", decimals, 100.0 * fraction);
}

/* Bytes as people read them: "812 B", "72.0 KiB", "1.5 GiB". */
static void fmt_bytes(char *out, size_t len, int64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    size_t u = 0;

    while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
        v /= 1024;
        u++;
    }
    if (u == 0) {
        snprintf(out, len, "%lld B", (long long)bytes);
    } else {
        snprintf(out, len, "%.1f %s", v, units[u]);
    }
}

/* A duration in its two largest units: "14 s", "3 m 12 s", "2 h 5 m", "4 d 1 h". */
static void fmt_duration(char *out, size_t len, int64_t s)
{
    if (s < 60) {
        snprintf(out, len, "%lld s", (long long)s);
    } else if (s < 3600) {
        snprintf(out, len, "%lld m %lld s", (long long)(s / 60), (long long)(s % 60));
    } else if (s < 86400) {
        snprintf(out, len, "%lld h %lld m", (long long)(s / 3600), (long long)(s % 3600 / 60));
    } else {
        snprintf(out, len, "%lld d %lld h", (long long)(s / 86400), (long long)(s % 86400 / 3600));
    }
}

/* --- RINGKV STATUS --------------------------------------------------------------- */

#define SM(field) offsetof(struct view_status_member, field)
static const struct view_field status_member_field[] = {
    {"id", VIEW_TEXT, SM(id), NULL},
    {"rack", VIEW_TEXT, SM(rack), NULL},
    {"tokens", VIEW_INT, SM(tokens), NULL},
    {"status", VIEW_TEXT, SM(status), NULL},
    {"up", VIEW_BOOL, SM(up), NULL},
    {"state", VIEW_TEXT, SM(state), NULL},
    {"owns", VIEW_SHARE, SM(owns), NULL},
    {"peer_addr", VIEW_TEXT, SM(peer_addr), NULL},
    {"client_addr", VIEW_TEXT, SM(client_addr), NULL},
    {"digest", VIEW_TEXT, SM(digest), NULL},
    {"target", VIEW_TEXT_OPT, SM(target), NULL},
};
#undef SM
static const struct view_fields status_member_fields = {
    status_member_field, sizeof(status_member_field) / sizeof(status_member_field[0])};

#define ST(field) offsetof(struct view_status, field)
static const struct view_field status_field[] = {
    {"id", VIEW_TEXT, ST(id), NULL},
    {"rack", VIEW_TEXT, ST(rack), NULL},
    {"tokens", VIEW_INT, ST(tokens), NULL},
    {"cluster_id", VIEW_TEXT, ST(cluster_id), NULL},
    {"epoch", VIEW_INT, ST(epoch), NULL},
    {"digest", VIEW_TEXT, ST(digest), NULL},
    {"target", VIEW_TEXT_OPT, ST(target), NULL},
    {"status", VIEW_TEXT_OPT, ST(status), NULL},
    {"converged", VIEW_BOOL, ST(converged), NULL},
    {"agree", VIEW_INT, ST(agree), NULL},
    {"up_count", VIEW_INT, ST(up_count), NULL},
    {"keys", VIEW_INT, ST(keys), NULL},
    {"map_used_bytes", VIEW_INT, ST(map_used_bytes), NULL},
    {"uptime_s", VIEW_INT, ST(uptime_s), NULL},
    {"clients", VIEW_INT, ST(clients), NULL},
    {"members", VIEW_MAPS, ST(members_reply), &status_member_fields},
};
#undef ST
static const struct view_fields status_fields = {status_field,
                                                 sizeof(status_field) / sizeof(status_field[0])};

int view_status_parse(struct view_status *s, const struct resp_reply *r, char *err, size_t err_len)
{
    int rc;

    memset(s, 0, sizeof(*s));
    rc = view_read(r, &status_fields, s, "", err, err_len);
    if (rc == 0) {
        rc = view_read_all(s->members_reply, &status_member_fields, sizeof(*s->members),
                           (void **)&s->members, "member", err, err_len);
    }
    if (rc != 0) {
        return rc;
    }
    s->reply = r;
    s->n = s->members_reply->n;
    return 0;
}

void view_status_free(struct view_status *s)
{
    free(s->members);
    memset(s, 0, sizeof(*s));
}

bool view_member_current(const struct view_status_member *m)
{
    return strcmp(m->status, "left") != 0 && strcmp(m->status, "removed") != 0;
}

bool view_status_changing(const struct view_status *s)
{
    return s->target != NULL && strcmp(s->target, s->digest) != 0;
}

bool view_status_healthy(const struct view_status *s)
{
    for (size_t i = 0; i < s->n; i++) {
        if (view_member_current(&s->members[i]) && !s->members[i].up) {
            return false;
        }
    }
    return s->converged;
}

/* The statuses in the table and their letters. */
static const struct {
    const char *status;
    char letter;
} status_letters[] = {{"normal", 'N'}, {"joining", 'J'}, {"leaving", 'L'}};

#define STATUS_LETTERS (sizeof(status_letters) / sizeof(status_letters[0]))

void view_member_code(const struct view_status_member *m, char code[3])
{
    code[0] = m->up ? 'U' : 'D';
    code[1] = '?';
    code[2] = '\0';
    for (size_t i = 0; i < STATUS_LETTERS; i++) {
        if (strcmp(m->status, status_letters[i].status) == 0) {
            code[1] = status_letters[i].letter;
        }
    }
}

static void status_print_self(FILE *f, const struct view_status *s)
{
    char used[32], up[32];

    fmt_bytes(used, sizeof(used), s->map_used_bytes);
    fmt_duration(up, sizeof(up), s->uptime_s);
    /* the node's own status when it is not plain normal: joining, leaving, left */
    bool show = s->status != NULL && strcmp(s->status, "normal") != 0;

    fprintf(f, "node %s (rack %s, %lld tokens%s%s) of cluster %s\n", s->id, s->rack,
            (long long)s->tokens, show ? ", " : "", show ? s->status : "", s->cluster_id);
    fprintf(f, "%lld keys, %s of storage, up %s, %lld client%s\n\n", (long long)s->keys, used, up,
            (long long)s->clients, s->clients == 1 ? "" : "s");
}

static int status_print_members(FILE *f, const struct view_status *s)
{
    static const char *const head[] = {"--",     "id",   "address", "rack",
                                       "tokens", "owns", "state",   "digest"};
    struct view_table t;
    int rc = 0;

    table_init(&t, 8, 1u << 4 | 1u << 5, head);
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        const struct view_status_member *m = &s->members[i];
        char code[3], tokens[24], owns[24];
        if (!view_member_current(m)) {
            continue;
        }
        view_member_code(m, code);
        snprintf(tokens, sizeof(tokens), "%lld", (long long)m->tokens);
        fmt_percent(owns, sizeof(owns), m->owns, 1);
        const char *cells[] = {code,   m->id, m->peer_addr, m->rack,
                               tokens, owns,  m->state,     m->digest};
        rc = table_row(&t, cells);
    }
    if (rc == 0) {
        fprintf(f, "Status=Up/Down\n|/ State=Normal/Joining/Leaving\n");
        table_print(f, &t);
    }
    table_free(&t);
    return rc;
}

/* The codes of the table, in the order the footer counts them. */
static const char *const status_codes[] = {"UN", "UJ", "UL", "U?", "DN", "DJ", "DL", "D?"};

/* "3: UN 2, DN 1": the members in the table, counted by code. */
static void status_print_counts(FILE *f, const struct view_status *s)
{
    size_t shown = 0, printed = 0;

    for (size_t i = 0; i < s->n; i++) {
        shown += view_member_current(&s->members[i]);
    }
    fprintf(f, "%-11s%zu", "members", shown);
    for (size_t c = 0; c < sizeof(status_codes) / sizeof(status_codes[0]); c++) {
        size_t count = 0;
        for (size_t i = 0; i < s->n; i++) {
            char code[3];
            view_member_code(&s->members[i], code);
            count += view_member_current(&s->members[i]) && strcmp(code, status_codes[c]) == 0;
        }
        if (count > 0) {
            fprintf(f, "%s%s %zu", printed++ == 0 ? ": " : ", ", status_codes[c], count);
        }
    }
    fputc('\n', f);
}

/* The members that left or were removed: named, since the table leaves them out. */
static void status_print_departed(FILE *f, const struct view_status *s)
{
    size_t printed = 0;

    for (size_t i = 0; i < s->n; i++) {
        const struct view_status_member *m = &s->members[i];
        if (view_member_current(m)) {
            continue;
        }
        fprintf(f, "%s%s (%s)", printed++ == 0 ? "departed   " : ", ", m->id, m->status);
    }
    if (printed > 0) {
        fputs(": no longer in the ring\n", f);
    }
}

int view_status_table(FILE *f, const struct view_status *s)
{
    int rc;

    status_print_self(f, s);
    rc = status_print_members(f, s);
    if (rc != 0) {
        return rc;
    }
    fprintf(f, "\n%-11s%lld\n", "epoch", (long long)s->epoch);
    fprintf(f, "%-11s%s\n", "digest", s->digest);
    if (s->target != NULL) {
        fprintf(f, "%-11s%s%s\n", "target", s->target,
                view_status_changing(s) ? " (members are joining or leaving)" : "");
    }
    fprintf(f, "%-11s%lld of %lld up members agree\n", "agreement", (long long)s->agree,
            (long long)s->up_count);
    fprintf(f, "%-11s%s\n", "converged",
            s->converged              ? "yes"
            : view_status_changing(s) ? "no (a change is under way)"
                                      : "no");
    status_print_counts(f, s);
    status_print_departed(f, s);
    return 0;
}

json_t *view_status_json(const struct view_status *s)
{
    return view_json_object(s->reply, &status_fields);
}

/* --- RINGKV STATUS DEEP ---------------------------------------------------------- */

#define DM(field) offsetof(struct view_deep_member, field)
static const struct view_field deep_member_field[] = {
    {"id", VIEW_TEXT, DM(id), NULL},
    {"result", VIEW_TEXT, DM(result), NULL},
    {"error", VIEW_TEXT, DM(error), NULL},
    {"rtt_us", VIEW_INT, DM(rtt_us), NULL},
    {"status", VIEW_TEXT, DM(status), NULL},
    {"epoch", VIEW_INT, DM(epoch), NULL},
    {"digest", VIEW_TEXT, DM(digest), NULL},
    {"converged", VIEW_INT, DM(converged), NULL},
    {"up_count", VIEW_INT, DM(up_count), NULL},
    {"members", VIEW_INT, DM(members), NULL},
    {"uptime_s", VIEW_INT, DM(uptime_s), NULL},
    {"keys", VIEW_INT, DM(keys), NULL},
};
#undef DM
static const struct view_fields deep_member_fields = {
    deep_member_field, sizeof(deep_member_field) / sizeof(deep_member_field[0])};

#define DS(field) offsetof(struct view_deep, field)
static const struct view_field deep_field[] = {
    {"id", VIEW_TEXT, DS(id), NULL},
    {"digest", VIEW_TEXT, DS(digest), NULL},
    {"request_timeout_ms", VIEW_INT, DS(request_timeout_ms), NULL},
    {"members", VIEW_MAPS, DS(members_reply), &deep_member_fields},
};
#undef DS
static const struct view_fields deep_fields = {deep_field,
                                               sizeof(deep_field) / sizeof(deep_field[0])};

int view_deep_parse(struct view_deep *d, const struct resp_reply *r, char *err, size_t err_len)
{
    int rc;

    memset(d, 0, sizeof(*d));
    rc = view_read(r, &deep_fields, d, "", err, err_len);
    if (rc == 0) {
        rc = view_read_all(d->members_reply, &deep_member_fields, sizeof(*d->members),
                           (void **)&d->members, "member", err, err_len);
    }
    if (rc != 0) {
        return rc;
    }
    d->reply = r;
    d->n = d->members_reply->n;
    return 0;
}

void view_deep_free(struct view_deep *d)
{
    free(d->members);
    memset(d, 0, sizeof(*d));
}

static bool deep_answered(const struct view_deep_member *m)
{
    return strcmp(m->result, "ok") == 0;
}

bool view_deep_healthy(const struct view_deep *d)
{
    for (size_t i = 0; i < d->n; i++) {
        if (!deep_answered(&d->members[i]) || strcmp(d->members[i].digest, d->digest) != 0) {
            return false;
        }
    }
    return true;
}

/* One member's row: its own view when it answered ("local" rtt: the node asked), dashes otherwise.
 */
static int deep_row(struct view_table *t, const struct view_deep *d,
                    const struct view_deep_member *m)
{
    char rtt[32] = "-", epoch[24] = "-", up[48] = "-", uptime[32] = "-";
    bool ok = deep_answered(m);

    if (ok && strcmp(m->id, d->id) == 0) {
        snprintf(rtt, sizeof(rtt), "local");
    } else if (ok) {
        snprintf(rtt, sizeof(rtt), "%.2f ms", (double)m->rtt_us / 1000.0);
    }
    if (ok) {
        snprintf(epoch, sizeof(epoch), "%lld", (long long)m->epoch);
        snprintf(up, sizeof(up), "%lld/%lld", (long long)m->up_count, (long long)m->members);
        fmt_duration(uptime, sizeof(uptime), m->uptime_s);
    }
    const char *cells[] = {m->id,
                           m->result,
                           rtt,
                           ok ? m->status : "-",
                           epoch,
                           ok ? m->digest : "-",
                           ok ? (m->converged == 1 ? "yes" : "no") : "-",
                           up,
                           uptime};
    return table_row(t, cells);
}

/* "answers agree on digest D" or how many digests the answers hold. */
static void deep_print_agreement(FILE *f, const struct view_deep *d)
{
    size_t answered = 0, same = 0;

    for (size_t i = 0; i < d->n; i++) {
        answered += deep_answered(&d->members[i]);
        same += deep_answered(&d->members[i]) && strcmp(d->members[i].digest, d->digest) == 0;
    }
    fprintf(f, "\n%zu of %zu members answered; %zu hold digest %s (node %s's)\n", answered, d->n,
            same, d->digest, d->id);
}

int view_deep_table(FILE *f, const struct view_deep *d)
{
    static const char *const head[] = {"id",     "result", "rtt",        "status", "epoch",
                                       "digest", "conv",   "up/members", "uptime"};
    struct view_table t;
    int rc = 0;

    fprintf(f, "asked through node %s, request-timeout %lld ms\n\n", d->id,
            (long long)d->request_timeout_ms);
    table_init(&t, 9, 1u << 2 | 1u << 4 | 1u << 7, head);
    for (size_t i = 0; rc == 0 && i < d->n; i++) {
        rc = deep_row(&t, d, &d->members[i]);
    }
    if (rc == 0) {
        table_print(f, &t);
    }
    table_free(&t);
    for (size_t i = 0, shown = 0; rc == 0 && i < d->n; i++) {
        const struct view_deep_member *m = &d->members[i];
        if (!deep_answered(m)) {
            char *why = table_copy(m->error); /* a node's text: no control bytes to the terminal */
            fprintf(f, "%s%s: %s\n", shown++ == 0 ? "\n" : "", m->id, why != NULL ? why : "");
            free(why);
        }
    }
    if (rc == 0) {
        deep_print_agreement(f, d);
    }
    return rc;
}

json_t *view_deep_json(const struct view_deep *d)
{
    return view_json_object(d->reply, &deep_fields);
}

/* --- RINGKV MEMBERS -------------------------------------------------------------- */

#define DE(field) offsetof(struct view_detector_entry, field)
static const struct view_field detector_field[] = {
    {"id", VIEW_TEXT, DE(id), NULL},
    {"state", VIEW_TEXT, DE(state), NULL},
    {"phi", VIEW_FRACTION, DE(phi), NULL},
    {"generation", VIEW_INT, DE(generation), NULL},
    {"version", VIEW_INT, DE(version), NULL},
    {"last_heard_ms", VIEW_INT, DE(last_heard_ms), NULL},
    {"mean_interval_ms", VIEW_FRACTION, DE(mean_interval_ms), NULL},
    {"status", VIEW_TEXT, DE(status), NULL},
};
#undef DE
static const struct view_fields detector_fields = {detector_field, sizeof(detector_field) /
                                                                       sizeof(detector_field[0])};

int view_members_parse(struct view_members *v, const struct resp_reply *r, char *err,
                       size_t err_len)
{
    const struct resp_reply *list = NULL;
    int rc;

    memset(v, 0, sizeof(*v));
    if (!read_maps(r, &list)) {
        snprintf(err, err_len, "expected an array of maps, got %s %s",
                 view_article(respc_type_name(r->type)), respc_type_name(r->type));
        return RK_ESYNTAX;
    }
    rc = view_read_all(list, &detector_fields, sizeof(*v->m), (void **)&v->m, "member", err,
                       err_len);
    if (rc != 0) {
        return rc;
    }
    v->reply = r;
    v->n = r->n;
    return 0;
}

void view_members_free(struct view_members *v)
{
    free(v->m);
    memset(v, 0, sizeof(*v));
}

/* "312 ms ago", "4.2 s ago", "never"; "-" for the node itself. */
static void fmt_heard(char *out, size_t len, const struct view_detector_entry *e)
{
    if (strcmp(e->state, "self") == 0) {
        snprintf(out, len, "-");
    } else if (e->last_heard_ms < 0) {
        snprintf(out, len, "never");
    } else if (e->last_heard_ms < 1000) {
        snprintf(out, len, "%lld ms ago", (long long)e->last_heard_ms);
    } else {
        snprintf(out, len, "%.1f s ago", (double)e->last_heard_ms / 1000.0);
    }
}

/* A detector figure with a unit; "-" for the node itself and for a figure the node has not. */
static void fmt_figure(char *out, size_t len, const struct view_detector_entry *e, double v,
                       int decimals, const char *unit)
{
    if (strcmp(e->state, "self") == 0 || isnan(v)) {
        snprintf(out, len, "-");
    } else if (isinf(v)) {
        snprintf(out, len, "inf");
    } else {
        snprintf(out, len, "%.*f%s", decimals, v, unit);
    }
}

/* "3 members: 1 self, 1 alive, 1 down", states in a fixed order, then any others. */
static void members_print_counts(FILE *f, const struct view_members *v)
{
    static const char *const order[] = {"self", "alive", "suspect", "down"};
    const size_t known = sizeof(order) / sizeof(order[0]);
    size_t printed = 0, other = v->n;

    fprintf(f, "\n%zu member%s", v->n, v->n == 1 ? "" : "s");
    for (size_t k = 0; k < known; k++) {
        size_t count = 0;
        for (size_t i = 0; i < v->n; i++) {
            count += strcmp(v->m[i].state, order[k]) == 0;
        }
        if (count > 0) {
            fprintf(f, "%s%zu %s", printed++ == 0 ? ": " : ", ", count, order[k]);
        }
        other -= count;
    }
    if (other > 0) {
        fprintf(f, "%s%zu in another state", printed == 0 ? ": " : ", ", other);
    }
    fputc('\n', f);
}

int view_members_table(FILE *f, const struct view_members *v)
{
    static const char *const head[] = {"state",      "id",  "generation",    "version",
                                       "last heard", "phi", "mean interval", "status"};
    struct view_table t;
    int rc = 0;

    table_init(&t, 8, 1u << 2 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6, head);
    for (size_t i = 0; rc == 0 && i < v->n; i++) {
        const struct view_detector_entry *e = &v->m[i];
        char gen[24], ver[24], heard[32], phi[32], mean[40];
        snprintf(gen, sizeof(gen), "%lld", (long long)e->generation);
        snprintf(ver, sizeof(ver), "%lld", (long long)e->version);
        fmt_heard(heard, sizeof(heard), e);
        fmt_figure(phi, sizeof(phi), e, e->phi, 2, "");
        fmt_figure(mean, sizeof(mean), e, e->mean_interval_ms, 1, " ms");
        const char *cells[] = {e->state, e->id, gen, ver, heard, phi, mean, e->status};
        rc = table_row(&t, cells);
    }
    if (rc == 0) {
        table_print(f, &t);
        members_print_counts(f, v);
    }
    table_free(&t);
    return rc;
}

json_t *view_members_json(const struct view_members *v)
{
    json_t *list = view_json_maps(v->reply, &detector_fields);

    return list != NULL ? json_pack("{s:o}", "members", list) : NULL;
}

/* --- RINGKV RING ----------------------------------------------------------------- */

#define AR(field) offsetof(struct view_arc, field)
static const struct view_field arc_field[] = {
    {"start", VIEW_TEXT, AR(start), NULL},        {"end", VIEW_TEXT, AR(end), NULL},
    {"fraction", VIEW_SHARE, AR(fraction), NULL}, {"owner", VIEW_TEXT, AR(owner), NULL},
    {"preflist", VIEW_LIST, AR(preflist), NULL},
};
#undef AR
static const struct view_fields arc_fields = {arc_field, sizeof(arc_field) / sizeof(arc_field[0])};

/* The ring map's own fields; its arcs are read into an array after it. */
struct ring_head {
    int64_t epoch, rf;
    const char *digest;
    const struct resp_reply *arcs;
};

#define RH(field) offsetof(struct ring_head, field)
static const struct view_field ring_field[] = {
    {"epoch", VIEW_INT, RH(epoch), NULL},
    {"digest", VIEW_TEXT, RH(digest), NULL},
    {"rf", VIEW_INT, RH(rf), NULL},
    {"arcs", VIEW_MAPS, RH(arcs), &arc_fields},
};
#undef RH
static const struct view_fields ring_fields = {ring_field,
                                               sizeof(ring_field) / sizeof(ring_field[0])};

/*
 * The arcs partition the keyspace, so their fractions add up to at most 1,
 * give or take the rounding of each to the ARC_FRACTION_SLACK the node
 * prints.  More is a reply no ring gives; refused (and v freed) rather
 * than shown as shares over 100%.
 */
#define ARC_FRACTION_SLACK 1e-6
static int ring_check_total(struct view_ring *v, size_t n, char *err, size_t err_len)
{
    double total = 0;

    for (size_t i = 0; i < n; i++) {
        total += v->arcs[i].fraction;
    }
    if (total <= 1.0 + (double)n * ARC_FRACTION_SLACK) {
        return 0;
    }
    snprintf(err, err_len, "the arcs' fractions add up to %.6f, more than the whole keyspace",
             total);
    view_ring_free(v);
    return RK_ESYNTAX;
}

int view_ring_parse(struct view_ring *v, const struct resp_reply *r, char *err, size_t err_len)
{
    struct ring_head h;
    int rc;

    memset(v, 0, sizeof(*v));
    rc = view_read(r, &ring_fields, &h, "", err, err_len);
    if (rc == 0) {
        rc = view_read_all(h.arcs, &arc_fields, sizeof(*v->arcs), (void **)&v->arcs, "arc", err,
                           err_len);
    }
    for (size_t i = 0; rc == 0 && i < h.arcs->n; i++) {
        if (v->arcs[i].preflist->n == 0) {
            snprintf(err, err_len, "arc %zu: 'preflist' is empty", i + 1);
            view_ring_free(v);
            rc = RK_ESYNTAX;
        }
    }
    if (rc == 0) {
        rc = ring_check_total(v, h.arcs->n, err, err_len);
    }
    if (rc != 0) {
        return rc;
    }
    v->reply = r;
    v->epoch = h.epoch;
    v->rf = h.rf;
    v->digest = h.digest;
    v->n = h.arcs->n;
    return 0;
}

void view_ring_free(struct view_ring *v)
{
    free(v->arcs);
    memset(v, 0, sizeof(*v));
}

const char *view_arc_replica(const struct view_arc *a, size_t i)
{
    return (const char *)a->preflist->elem[i]->str;
}

/*
 * What the ring gives each member, and what each owner hands to each
 * replica: members sorted by id, edges (owner, replica, share) sorted and
 * merged.
 */
struct ring_share {
    const char *id;
    size_t arcs;             /* arcs it is primary for */
    double primary, replica; /* shares of the keyspace */
};

struct ring_edge {
    size_t from, to;
    double share;
};

struct ring_summary {
    struct ring_share *m;
    size_t n;
    struct ring_edge *e;
    size_t n_edges;
};

static int cmp_share(const void *a, const void *b)
{
    return strcmp(((const struct ring_share *)a)->id, ((const struct ring_share *)b)->id);
}

static int cmp_edge(const void *a, const void *b)
{
    const struct ring_edge *x = a, *y = b;

    if (x->from != y->from) {
        return x->from < y->from ? -1 : 1;
    }
    return x->to < y->to ? -1 : x->to > y->to;
}

static size_t summary_index(const struct ring_summary *s, const char *id)
{
    struct ring_share key = {.id = id};
    const struct ring_share *p = bsearch(&key, s->m, s->n, sizeof(*s->m), cmp_share);

    return (size_t)(p - s->m);
}

static void summary_free(struct ring_summary *s)
{
    free(s->m);
    free(s->e);
    memset(s, 0, sizeof(*s));
}

/* Every id named by an arc, sorted and unique, in s->m. */
static int summary_members(struct ring_summary *s, const struct view_ring *v)
{
    size_t total = 0, n = 0;

    for (size_t i = 0; i < v->n; i++) {
        total += v->arcs[i].preflist->n + 1;
    }
    s->m = calloc(total + 1, sizeof(*s->m));
    if (s->m == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        s->m[n++].id = v->arcs[i].owner;
        for (size_t k = 0; k < v->arcs[i].preflist->n; k++) {
            s->m[n++].id = view_arc_replica(&v->arcs[i], k);
        }
    }
    qsort(s->m, n, sizeof(*s->m), cmp_share);
    for (size_t i = 0; i < n; i++) {
        if (s->n == 0 || strcmp(s->m[s->n - 1].id, s->m[i].id) != 0) {
            s->m[s->n++].id = s->m[i].id;
        }
    }
    return 0;
}

/* Sum the edges of each (owner, replica) pair. */
static void summary_merge_edges(struct ring_summary *s, size_t n)
{
    qsort(s->e, n, sizeof(*s->e), cmp_edge);
    s->n_edges = 0;
    for (size_t i = 0; i < n; i++) {
        struct ring_edge *last = s->n_edges > 0 ? &s->e[s->n_edges - 1] : NULL;
        if (last != NULL && last->from == s->e[i].from && last->to == s->e[i].to) {
            last->share += s->e[i].share;
        } else {
            s->e[s->n_edges++] = s->e[i];
        }
    }
}

static int ring_summarize(struct ring_summary *s, const struct view_ring *v)
{
    size_t n_edges = 0, most = 0;

    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < v->n; i++) {
        most += v->arcs[i].preflist->n;
    }
    s->e = malloc((most + 1) * sizeof(*s->e));
    if (s->e == NULL || summary_members(s, v) != 0) {
        summary_free(s);
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        const struct view_arc *a = &v->arcs[i];
        size_t owner = summary_index(s, a->owner);
        s->m[owner].arcs++;
        s->m[owner].primary += a->fraction;
        for (size_t k = 0; k < a->preflist->n; k++) {
            size_t r = summary_index(s, view_arc_replica(a, k));
            s->m[r].replica += a->fraction;
            if (r != owner) {
                s->e[n_edges++] = (struct ring_edge){owner, r, a->fraction};
            }
        }
    }
    summary_merge_edges(s, n_edges);
    return 0;
}

/* "n1,n2,n3" into out, cut with "..." when it does not fit. */
static void fmt_preflist(char *out, size_t len, const struct view_arc *a)
{
    size_t used = 0;

    out[0] = '\0';
    for (size_t k = 0; k < a->preflist->n && used < len; k++) {
        int w = snprintf(out + used, len - used, "%s%s", k > 0 ? "," : "", view_arc_replica(a, k));
        used += w > 0 ? (size_t)w : 0;
    }
    if (used >= len && len > 4) {
        memcpy(out + len - 4, "...", 4);
    }
}

static int ring_print_arcs(FILE *f, const struct view_ring *v)
{
    static const char *const head[] = {"start (exclusive)", "end (inclusive)", "share",
                                       "preference list"};
    struct view_table t;
    int rc = 0;

    table_init(&t, 4, 1u << 2, head);
    for (size_t i = 0; rc == 0 && i < v->n; i++) {
        char share[32], preflist[1024];
        fmt_percent(share, sizeof(share), v->arcs[i].fraction, 3);
        fmt_preflist(preflist, sizeof(preflist), &v->arcs[i]);
        const char *cells[] = {v->arcs[i].start, v->arcs[i].end, share, preflist};
        rc = table_row(&t, cells);
    }
    if (rc == 0) {
        table_print(f, &t);
    }
    table_free(&t);
    return rc;
}

static int ring_print_shares(FILE *f, const struct ring_summary *s)
{
    static const char *const head[] = {"member", "arcs", "primary", "replica"};
    struct view_table t;
    int rc = 0;

    table_init(&t, 4, 1u << 1 | 1u << 2 | 1u << 3, head);
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        char arcs[24], primary[32], replica[32];
        snprintf(arcs, sizeof(arcs), "%zu", s->m[i].arcs);
        fmt_percent(primary, sizeof(primary), s->m[i].primary, 2);
        fmt_percent(replica, sizeof(replica), s->m[i].replica, 2);
        const char *cells[] = {s->m[i].id, arcs, primary, replica};
        rc = table_row(&t, cells);
    }
    if (rc == 0) {
        table_print(f, &t);
    }
    table_free(&t);
    return rc;
}

int view_ring_table(FILE *f, const struct view_ring *v)
{
    struct ring_summary s;
    int rc = ring_print_arcs(f, v);

    if (rc == 0) {
        rc = ring_summarize(&s, v);
    }
    if (rc != 0) {
        return rc;
    }
    fputc('\n', f);
    rc = ring_print_shares(f, &s);
    if (rc == 0) {
        fprintf(f, "\nepoch %lld, digest %s, rf %lld, %zu arc%s\n", (long long)v->epoch, v->digest,
                (long long)v->rf, v->n, v->n == 1 ? "" : "s");
    }
    summary_free(&s);
    return rc;
}

static json_t *ring_json_shares(const struct ring_summary *s)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < s->n; i++) {
        json_t *m = json_pack("{s:o,s:I,s:f,s:f}", "id",
                              respc_json_bytes((const uint8_t *)s->m[i].id, strlen(s->m[i].id)),
                              "arcs", (json_int_t)s->m[i].arcs, "primary", s->m[i].primary,
                              "replica", s->m[i].replica);
        if (json_array_append_new(a, m) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

json_t *view_ring_json(const struct view_ring *v)
{
    struct ring_summary s;
    json_t *o;

    if (ring_summarize(&s, v) != 0) {
        return NULL;
    }
    o = view_json_object(v->reply, &ring_fields);
    if (o != NULL && json_object_set_new(o, "members", ring_json_shares(&s)) != 0) {
        json_decref(o);
        o = NULL;
    }
    summary_free(&s);
    return o;
}

/* s inside a quoted Graphviz string: '"' and '\\' escaped, control bytes as '?'. */
static void dot_escaped(FILE *f, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\') {
            fputc('\\', f);
        }
        fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
    }
}

static void dot_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    dot_escaped(f, s);
    fputc('"', f);
}

/* Fill colours for the members, in turn (ColorBrewer's Pastel1 and Set3). */
static const char *const dot_fill[] = {"#fbb4ae", "#b3cde3", "#ccebc5", "#decbe4", "#fed9a6",
                                       "#ffffcc", "#e5d8bd", "#fddaec", "#8dd3c7", "#bebada"};
/* Edge widths: from 1 point for a share near nothing to this for the largest share. */
#define DOT_PEN_MAX 6.0

static void dot_members(FILE *f, const struct ring_summary *s)
{
    for (size_t i = 0; i < s->n; i++) {
        fputs("    ", f);
        dot_quoted(f, s->m[i].id);
        fputs(" [label=\"", f);
        dot_escaped(f, s->m[i].id);
        fprintf(f, "\\nprimary %.1f%%\\nreplica %.1f%%\" fillcolor=\"%s\"];\n",
                100.0 * s->m[i].primary, 100.0 * s->m[i].replica,
                dot_fill[i % (sizeof(dot_fill) / sizeof(dot_fill[0]))]);
    }
}

/*
 * An edge's weight, 1 to 101 by its share: the share is clamped to 0..1
 * first (view_ring_parse() bounds the total up to rounding), so the
 * conversion to int is always defined.
 */
static int dot_weight(double share)
{
    if (!(share > 0.0)) {
        return 1;
    }
    return 1 + (int)(100.0 * (share < 1.0 ? share : 1.0));
}

static void dot_edges(FILE *f, const struct ring_summary *s)
{
    double top = 0;

    for (size_t i = 0; i < s->n_edges; i++) {
        top = s->e[i].share > top ? s->e[i].share : top;
    }
    for (size_t i = 0; i < s->n_edges; i++) {
        const struct ring_edge *e = &s->e[i];
        fputs("    ", f);
        dot_quoted(f, s->m[e->from].id);
        fputs(" -> ", f);
        dot_quoted(f, s->m[e->to].id);
        fprintf(f, " [taillabel=\"%.1f%%\" penwidth=%.2f weight=%d];\n", 100.0 * e->share,
                1.0 + (DOT_PEN_MAX - 1.0) * (top > 0 ? e->share / top : 0), dot_weight(e->share));
    }
}

int view_ring_dot(FILE *f, const struct view_ring *v)
{
    struct ring_summary s;

    if (ring_summarize(&s, v) != 0) {
        return RK_ENOMEM;
    }
    fprintf(f, "digraph ring {\n");
    fprintf(f,
            "    graph [layout=circo mindist=2 splines=curved fontname=\"Helvetica\" labelloc=t "
            "label=\"ringkv ring: epoch %lld, digest %s, rf %lld, %zu arcs\\n"
            "edge A -> B: the keyspace A is primary for that B holds a copy of\"];\n",
            (long long)v->epoch, v->digest, (long long)v->rf, v->n);
    fprintf(f,
            "    node [shape=box style=\"rounded,filled\" fontname=\"Helvetica\" fontsize=12];\n");
    fprintf(f, "    edge [fontname=\"Helvetica\" fontsize=10 color=\"#555555\" "
               "arrowsize=0.7 labeldistance=4 labelangle=20];\n");
    dot_members(f, &s);
    dot_edges(f, &s);
    fprintf(f, "}\n");
    summary_free(&s);
    return 0;
}

/* --- RINGKV REPLICAS ------------------------------------------------------------- */

#define RP(field) offsetof(struct view_replica, field)
static const struct view_field replica_field[] = {
    {"node", VIEW_TEXT, RP(node), NULL},           {"rack", VIEW_TEXT, RP(rack), NULL},
    {"role", VIEW_TEXT, RP(role), NULL},           {"up", VIEW_BOOL, RP(up), NULL},
    {"answered", VIEW_BOOL, RP(answered), NULL},   {"present", VIEW_BOOL, RP(present), NULL},
    {"tombstone", VIEW_BOOL, RP(tombstone), NULL}, {"siblings", VIEW_INT, RP(siblings), NULL},
    {"vclock", VIEW_TEXT, RP(vclock), NULL},       {"value_size", VIEW_INT, RP(value_size), NULL},
    {"digest", VIEW_TEXT, RP(digest), NULL},
};
#undef RP
static const struct view_fields replica_fields = {replica_field,
                                                  sizeof(replica_field) / sizeof(replica_field[0])};

int view_replicas_parse(struct view_replicas *v, const struct resp_reply *r, char *err,
                        size_t err_len)
{
    const struct resp_reply *list = NULL;
    int rc;

    memset(v, 0, sizeof(*v));
    if (!read_maps(r, &list)) {
        snprintf(err, err_len, "expected an array of maps, got %s %s",
                 view_article(respc_type_name(r->type)), respc_type_name(r->type));
        return RK_ESYNTAX;
    }
    rc = view_read_all(list, &replica_fields, sizeof(*v->r), (void **)&v->r, "replica", err,
                       err_len);
    if (rc != 0) {
        return rc;
    }
    v->reply = r;
    v->n = r->n;
    return 0;
}

void view_replicas_free(struct view_replicas *v)
{
    free(v->r);
    memset(v, 0, sizeof(*v));
}

bool view_replicas_answered(const struct view_replicas *v)
{
    for (size_t i = 0; i < v->n; i++) {
        if (!v->r[i].answered) {
            return false;
        }
    }
    return true;
}

/* Two replicas that answered hold the same thing. */
static bool replica_same(const struct view_replica *a, const struct view_replica *b)
{
    return a->present == b->present && a->tombstone == b->tombstone && a->siblings == b->siblings &&
           strcmp(a->vclock, b->vclock) == 0 && strcmp(a->digest, b->digest) == 0;
}

bool view_replicas_agree(const struct view_replicas *v)
{
    if (!view_replicas_answered(v)) {
        return false;
    }
    for (size_t i = 1; i < v->n; i++) {
        if (!replica_same(&v->r[0], &v->r[i])) {
            return false;
        }
    }
    return true;
}

static const char *yes_no(bool b)
{
    return b ? "yes" : "no";
}

/* One replica's row; a replica that did not answer shows only who and where it is. */
static int replica_row(struct view_table *t, const struct view_replica *r)
{
    char sibs[24] = "-", size[32] = "-", hints[24];
    bool a = r->answered;

    if (a) {
        snprintf(sibs, sizeof(sibs), "%lld", (long long)r->siblings);
        fmt_bytes(size, sizeof(size), r->value_size);
    }
    const char *cells[] = {r->node,
                           r->rack,
                           r->role,
                           r->up ? "up" : "down",
                           a ? yes_no(r->present) : "no answer",
                           a ? yes_no(r->tombstone) : "-",
                           sibs,
                           a && r->vclock[0] != '\0' ? r->vclock : "-",
                           a && (r->present || r->tombstone) ? size : "-",
                           a && r->digest[0] != '\0' ? r->digest : "-",
                           hints};
    snprintf(hints, sizeof(hints), "%lld", (long long)r->hints);
    return table_row(t, cells); /* the hints cell only when the table has that column */
}

/* What a replica that answered holds, in words: "no copy", "a tombstone, vclock ...", ... */
static void replica_holds(FILE *f, const struct view_replica *r)
{
    char *clock = table_copy(r->vclock), *digest = table_copy(r->digest);
    char size[32];

    fmt_bytes(size, sizeof(size), r->value_size);
    if (clock == NULL || digest == NULL) {
        fputs("(out of memory)", f);
    } else if (!r->present && !r->tombstone) {
        fputs("no copy", f);
    } else if (!r->present) {
        fprintf(f, "a tombstone, vclock %s", clock);
    } else {
        fprintf(f, "vclock %s, digest %s, %s", clock, digest, size);
        if (r->siblings > 1) {
            fprintf(f, ", %lld siblings (digest and size of the first live one)",
                    (long long)r->siblings);
        }
    }
    free(clock);
    free(digest);
}

/* "n1, n2" into f: the replicas from i on that hold what replica i holds. */
static void replicas_group(FILE *f, const struct view_replicas *v, size_t i)
{
    for (size_t j = i, shown = 0; j < v->n; j++) {
        if (v->r[j].answered && replica_same(&v->r[i], &v->r[j])) {
            char *id = table_copy(v->r[j].node);
            fprintf(f, "%s%s", shown++ == 0 ? "" : ", ", id != NULL ? id : "?");
            free(id);
        }
    }
}

/* The verdict: all agree, or each group of replicas holding the same thing, then those silent. */
static void replicas_verdict(FILE *f, const struct view_replicas *v)
{
    if (v->n == 0) {
        fputs("\nthe key has no replicas: the node has no ring yet\n", f);
        return;
    }
    if (view_replicas_agree(v)) {
        fprintf(f, "\nall %zu replicas agree: ", v->n);
        replica_holds(f, &v->r[0]);
        fputc('\n', f);
        return;
    }
    fputs("\nreplicas differ:\n", f);
    for (size_t i = 0; i < v->n; i++) {
        size_t first = 0;
        while (first < i && !(v->r[first].answered && replica_same(&v->r[first], &v->r[i]))) {
            first++;
        }
        if (!v->r[i].answered || first < i) {
            continue; /* silent, or in the group of an earlier replica */
        }
        fputs("  ", f);
        replicas_group(f, v, i);
        fputs(": ", f);
        replica_holds(f, &v->r[i]);
        fputc('\n', f);
    }
    for (size_t i = 0; i < v->n; i++) {
        if (!v->r[i].answered) {
            char *id = table_copy(v->r[i].node);
            fprintf(f, "  %s: did not answer\n", id != NULL ? id : "?");
            free(id);
        }
    }
}

int view_replicas_table(FILE *f, const uint8_t *key, size_t key_len, const struct view_replicas *v)
{
    static const char *const head[] = {"node",    "rack",      "role",     "up",
                                       "present", "tombstone", "siblings", "vclock",
                                       "size",    "digest",    "hints"};
    char *shown = malloc(key_len + 1);
    struct view_table t;
    int rc = 0;

    if (shown == NULL) {
        return RK_ENOMEM;
    }
    for (size_t i = 0; i < key_len; i++) {
        shown[i] = key[i] < 0x20 || key[i] == 0x7f ? '?' : (char)key[i];
    }
    shown[key_len] = '\0';
    fprintf(f, "key %s: %zu replica%s\n\n", shown, v->n, v->n == 1 ? "" : "s");
    free(shown);
    table_init(&t, v->hints_nodes > 0 ? 11 : 10, 1u << 6 | 1u << 8 | 1u << 10, head);
    for (size_t i = 0; rc == 0 && i < v->n; i++) {
        rc = replica_row(&t, &v->r[i]);
    }
    if (rc == 0) {
        table_print(f, &t);
        replicas_verdict(f, v);
    }
    if (rc == 0 && v->hints_answered < v->hints_nodes) {
        fprintf(f, "hints: %zu of %zu nodes answered; the counts are of those\n", v->hints_answered,
                v->hints_nodes);
    }
    table_free(&t);
    return rc;
}

json_t *view_replicas_json(const uint8_t *key, size_t key_len, const struct view_replicas *v)
{
    struct resp_reply k = {.type = RESP_T_BULK, .str = (uint8_t *)key, .len = key_len};
    json_t *list = view_json_maps(v->reply, &replica_fields);
    json_t *name = json_text(&k);

    json_t *out;

    for (size_t i = 0; list != NULL && v->hints_nodes > 0 && i < v->n; i++) {
        if (json_object_set_new(json_array_get(list, i), "hints", json_integer(v->r[i].hints)) !=
            0) {
            json_decref(list);
            list = NULL;
        }
    }
    if (list == NULL || name == NULL) {
        json_decref(list);
        json_decref(name);
        return NULL;
    }
    out = json_pack("{s:o, s:b, s:o}", "key", name, "agree", view_replicas_agree(v), "replicas",
                    list);
    if (out != NULL && v->hints_nodes > 0 &&
        (json_object_set_new(out, "hints_nodes", json_integer((json_int_t)v->hints_nodes)) != 0 ||
         json_object_set_new(out, "hints_answered", json_integer((json_int_t)v->hints_answered)) !=
             0)) {
        json_decref(out);
        out = NULL;
    }
    return out;
}

/* --- RINGKV HINTS ---------------------------------------------------------------- */

#define HT(field) offsetof(struct view_hint_target, field)
static const struct view_field hint_target_field[] = {
    {"target", VIEW_TEXT, HT(target), NULL},
    {"hints", VIEW_INT, HT(hints), NULL},
    {"up", VIEW_BOOL, HT(up), NULL},
};
#undef HT
static const struct view_fields hint_target_fields = {
    hint_target_field, sizeof(hint_target_field) / sizeof(hint_target_field[0])};

#define HS(field) offsetof(struct view_hints, field)
static const struct view_field hints_field[] = {
    {"node", VIEW_TEXT, HS(node), NULL},
    {"targets", VIEW_MAPS, HS(targets_reply), &hint_target_fields},
};
#undef HS
static const struct view_fields hints_fields = {hints_field,
                                                sizeof(hints_field) / sizeof(hints_field[0])};

int view_hints_parse(struct view_hints *h, const struct resp_reply *r, char *err, size_t err_len)
{
    int rc;

    memset(h, 0, sizeof(*h));
    rc = view_read(r, &hints_fields, h, "", err, err_len);
    if (rc == 0) {
        rc = view_read_all(h->targets_reply, &hint_target_fields, sizeof(*h->t), (void **)&h->t,
                           "target", err, err_len);
    }
    for (size_t i = 0; rc == 0 && i < h->targets_reply->n; i++) {
        if (h->t[i].hints < 0) {
            snprintf(err, err_len, "target %zu: 'hints' is negative", i + 1);
            rc = RK_ESYNTAX;
        }
    }
    if (rc != 0) {
        view_hints_free(h);
        return rc;
    }
    h->reply = r;
    h->n = h->targets_reply->n;
    return 0;
}

void view_hints_free(struct view_hints *h)
{
    free(h->t);
    memset(h, 0, sizeof(*h));
}

/* A node's name in the table: its id, else the address it was asked at. */
static const char *hints_name(const struct view_hints_node *n)
{
    if (n->error == NULL) {
        return n->h.node;
    }
    return n->node != NULL ? n->node : n->addr;
}

static int hints_rows(struct view_table *t, const struct view_hints_node *n)
{
    char count[24];
    int rc = 0;

    if (n->h.n == 0) {
        const char *cells[] = {hints_name(n), "-", "0", "-"};
        return table_row(t, cells);
    }
    for (size_t i = 0; rc == 0 && i < n->h.n; i++) {
        const struct view_hint_target *e = &n->h.t[i];
        snprintf(count, sizeof(count), "%lld", (long long)e->hints);
        const char *cells[] = {hints_name(n), e->target, count, e->up ? "up" : "down"};
        rc = table_row(t, cells);
    }
    return rc;
}

/* The nodes that did not answer, and "3 nodes answered: 12 hints for 2 targets". */
static void hints_footer(FILE *f, const struct view_hints_node *nodes, size_t n)
{
    size_t answered = 0, targets = 0;
    int64_t total = 0;

    for (size_t i = 0; i < n; i++) {
        char *why, *name;
        if (nodes[i].error == NULL) {
            answered++;
            targets += nodes[i].h.n;
            for (size_t k = 0; k < nodes[i].h.n; k++) {
                total += nodes[i].h.t[k].hints;
            }
            continue;
        }
        why = table_copy(nodes[i].error);
        name = table_copy(hints_name(&nodes[i]));
        fprintf(f, "%s%s (%s): %s\n", i == answered ? "\n" : "", name != NULL ? name : "?",
                nodes[i].addr, why != NULL ? why : "");
        free(why);
        free(name);
    }
    fprintf(f, "\n%zu of %zu node%s answered: %lld hint%s for %zu target%s\n", answered, n,
            n == 1 ? "" : "s", (long long)total, total == 1 ? "" : "s", targets,
            targets == 1 ? "" : "s");
}

int view_hints_table(FILE *f, const struct view_hints_node *nodes, size_t n)
{
    static const char *const head[] = {"node", "target", "hints", "target up"};
    struct view_table t;
    int rc = 0;

    table_init(&t, 4, 1u << 2, head);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (nodes[i].error == NULL) {
            rc = hints_rows(&t, &nodes[i]);
        }
    }
    if (rc == 0) {
        table_print(f, &t);
        hints_footer(f, nodes, n);
    }
    table_free(&t);
    return rc;
}

/* A C string as JSON text ({"hex": ...} when not UTF-8, respc_reply_json()'s form); NULL: null. */
static json_t *json_cstr(const char *s)
{
    struct resp_reply r = {.type = RESP_T_BULK, .str = (uint8_t *)s, .len = s ? strlen(s) : 0};

    return s != NULL ? json_text(&r) : json_null();
}

/* One node's object: its answer converted, with where it was asked; or why it did not answer. */
static json_t *hints_node_json(const struct view_hints_node *n)
{
    json_t *o;

    if (n->error != NULL) {
        return json_pack("{s:o, s:o, s:b, s:o}", "node", json_cstr(n->node), "addr",
                         json_cstr(n->addr), "answered", 0, "error", json_cstr(n->error));
    }
    o = view_json_object(n->h.reply, &hints_fields);
    if (o != NULL && (json_object_set_new(o, "addr", json_cstr(n->addr)) != 0 ||
                      json_object_set_new(o, "answered", json_true()) != 0)) {
        json_decref(o);
        o = NULL;
    }
    return o;
}

json_t *view_hints_json(const struct view_hints_node *nodes, size_t n)
{
    json_t *list = json_array();
    int64_t total = 0;

    for (size_t i = 0; list != NULL && i < n; i++) {
        for (size_t k = 0; nodes[i].error == NULL && k < nodes[i].h.n; k++) {
            total += nodes[i].h.t[k].hints;
        }
        if (json_array_append_new(list, hints_node_json(&nodes[i])) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    return list != NULL ? json_pack("{s:I, s:o}", "hints", (json_int_t)total, "nodes", list) : NULL;
}

/* --- RINGKV TRANSFERS ------------------------------------------------------------ */

#define TF(field) offsetof(struct view_transfer, field)
static const struct view_field transfer_field[] = {
    {"kind", VIEW_TEXT, TF(kind), NULL},
    {"state", VIEW_TEXT, TF(state), NULL},
    {"direction", VIEW_TEXT, TF(direction), NULL},
    {"start", VIEW_TEXT, TF(start), NULL},
    {"end", VIEW_TEXT, TF(end), NULL},
    {"from", VIEW_TEXT, TF(from), NULL},
    {"to", VIEW_TEXT, TF(to), NULL},
    {"keys", VIEW_INT, TF(keys), NULL},
    {"keys_total", VIEW_INT, TF(keys_total), NULL},
    {"bytes", VIEW_INT, TF(bytes), NULL},
    {"rate_bps", VIEW_INT, TF(rate_bps), NULL},
    {"eta_s", VIEW_INT, TF(eta_s), NULL},
};
#undef TF
static const struct view_fields transfer_fields = {transfer_field, sizeof(transfer_field) /
                                                                       sizeof(transfer_field[0])};

#define TS(field) offsetof(struct view_transfers, field)
static const struct view_field transfers_field[] = {
    {"node", VIEW_TEXT, TS(node), NULL},
    {"status", VIEW_TEXT, TS(status), NULL},
    {"ring", VIEW_TEXT, TS(ring), NULL},
    {"target", VIEW_TEXT, TS(target), NULL},
    {"changing", VIEW_BOOL, TS(changing), NULL},
    {"agreed", VIEW_BOOL, TS(agreed), NULL},
    {"transfers", VIEW_MAPS, TS(transfers_reply), &transfer_fields},
};
#undef TS
static const struct view_fields transfers_fields = {
    transfers_field, sizeof(transfers_field) / sizeof(transfers_field[0])};

/* The first count of t that is negative (eta_s: below -1), or NULL. */
static const char *transfer_negative(const struct view_transfer *t)
{
    const struct {
        const char *name;
        int64_t v, min;
    } counts[] = {{"keys", t->keys, 0},
                  {"keys_total", t->keys_total, 0},
                  {"bytes", t->bytes, 0},
                  {"rate_bps", t->rate_bps, 0},
                  {"eta_s", t->eta_s, -1}};

    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        if (counts[i].v < counts[i].min) {
            return counts[i].name;
        }
    }
    return NULL;
}

int view_transfers_parse(struct view_transfers *v, const struct resp_reply *r, char *err,
                         size_t err_len)
{
    int rc;

    memset(v, 0, sizeof(*v));
    rc = view_read(r, &transfers_fields, v, "", err, err_len);
    if (rc == 0) {
        rc = view_read_all(v->transfers_reply, &transfer_fields, sizeof(*v->t), (void **)&v->t,
                           "transfer", err, err_len);
    }
    for (size_t i = 0; rc == 0 && i < v->transfers_reply->n; i++) {
        const char *bad = transfer_negative(&v->t[i]);
        if (bad != NULL) {
            snprintf(err, err_len, "transfer %zu: '%s' is negative", i + 1, bad);
            rc = RK_ESYNTAX;
        }
    }
    if (rc != 0) {
        view_transfers_free(v);
        return rc;
    }
    v->reply = r;
    v->n = v->transfers_reply->n;
    return 0;
}

void view_transfers_free(struct view_transfers *v)
{
    free(v->t);
    memset(v, 0, sizeof(*v));
}

/* Finished transfers are left out of both forms (a node lists none; a newer one might). */
static bool transfer_finished(const struct view_transfer *t)
{
    return strcmp(t->state, "done") == 0;
}

/* Width of the progress bar, in characters between its brackets. */
#define TRANSFER_BAR 20
/* Hex digits of an arc's ends in the table: enough to tell arcs of a ring apart. */
#define TRANSFER_ARC_DIGITS 8

/* "3fa2c1d0..8c01aa92"; "-" for a served pull, which names no arc. */
static void fmt_arc(char *out, size_t len, const struct view_transfer *t)
{
    if (strcmp(t->kind, "serve") == 0) {
        snprintf(out, len, "-");
        return;
    }
    snprintf(out, len, "%.*s..%.*s", TRANSFER_ARC_DIGITS, t->start, TRANSFER_ARC_DIGITS, t->end);
}

/* "[########............]  42%" when the count is known, else "". */
static void fmt_progress(char *out, size_t len, const struct view_transfer *t)
{
    char bar[TRANSFER_BAR + 1];
    int64_t pct;
    size_t full;

    if (t->keys_total <= 0) {
        snprintf(out, len, "%s", "");
        return;
    }
    /* keys may pass keys_total: writes that arrive during the copy are copied too */
    pct = t->keys >= t->keys_total ? 100 : t->keys * 100 / t->keys_total;
    full = (size_t)pct * TRANSFER_BAR / 100;
    memset(bar, '#', full);
    memset(bar + full, '.', TRANSFER_BAR - full);
    bar[TRANSFER_BAR] = '\0';
    snprintf(out, len, "[%s] %3lld%%", bar, (long long)pct);
}

static int transfer_row(struct view_table *tab, const struct view_transfer *t)
{
    char arc[48], keys[64], bytes[32], per_s[32], rate[40], eta[32], progress[TRANSFER_BAR + 16];

    fmt_arc(arc, sizeof(arc), t);
    if (t->keys_total > 0) {
        snprintf(keys, sizeof(keys), "%lld of %lld", (long long)t->keys, (long long)t->keys_total);
    } else {
        snprintf(keys, sizeof(keys), "%lld", (long long)t->keys);
    }
    fmt_bytes(bytes, sizeof(bytes), t->bytes);
    fmt_bytes(per_s, sizeof(per_s), t->rate_bps);
    snprintf(rate, sizeof(rate), "%s/s", per_s);
    if (t->eta_s < 0) {
        snprintf(eta, sizeof(eta), "-");
    } else {
        fmt_duration(eta, sizeof(eta), t->eta_s);
    }
    fmt_progress(progress, sizeof(progress), t);
    const char *cells[] = {t->kind, t->direction, arc, t->from,  t->to,   keys,
                           bytes,   rate,         eta, t->state, progress};
    return table_row(tab, cells);
}

static void transfers_header(FILE *f, const struct view_transfers *v)
{
    char *node = table_copy(v->node), *status = table_copy(v->status);

    fprintf(f, "node %s (%s): ring %.16s, target %.16s\n", node != NULL ? node : "?",
            status != NULL ? status : "?", v->ring, v->target);
    if (!v->changing) {
        fputs("no change under way\n", f);
    } else {
        fprintf(f, "a change is under way: %s\n",
                v->agreed ? "every live member holds the target, so arcs are copied"
                          : "waiting for every live member to hold the target before copying");
    }
    free(node);
    free(status);
}

int view_transfers_table(FILE *f, const struct view_transfers *v)
{
    static const char *const head[] = {"kind",  "dir",  "arc", "from",  "to",      "keys",
                                       "bytes", "rate", "eta", "state", "progress"};
    struct view_table t;
    int rc = 0;

    transfers_header(f, v);
    table_init(&t, 11, 1u << 5 | 1u << 6 | 1u << 7 | 1u << 8, head);
    for (size_t i = 0; rc == 0 && i < v->n; i++) {
        if (!transfer_finished(&v->t[i])) {
            rc = transfer_row(&t, &v->t[i]);
        }
    }
    if (rc == 0) {
        fputc('\n', f);
        if (t.rows == 0) {
            fputs("no transfers under way\n", f);
        } else {
            table_print(f, &t);
        }
    }
    table_free(&t);
    return rc;
}

json_t *view_transfers_json(const struct view_transfers *v)
{
    json_t *o = view_json_object(v->reply, &transfers_fields);
    json_t *list = o != NULL ? json_object_get(o, "transfers") : NULL;

    /* the array's elements are the reply's, in order: drop the finished ones */
    for (size_t i = v->n; list != NULL && i-- > 0;) {
        if (transfer_finished(&v->t[i]) && json_array_remove(list, i) != 0) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}
