/*
 * history.c - reading and writing the JSON-lines operation history
 * (history.h has the format).
 *
 * Lines are cut at '\n' and each is bounded before it is parsed, with
 * jansson, duplicate object keys refused and NUL allowed inside strings;
 * each string is then turned back into bytes (one character per byte, a
 * character above U+00FF refused).  Writing never goes through jansson:
 * history_json_str() escapes byte by byte, so any byte string, UTF-8 or
 * not, is written and read back unchanged.
 */
#include "history.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static const char *const history_op_names[] = {"set", "kset", "get", "kget", "del"};
static const char *const history_outcome_names[] = {"ok", "fail", "unknown"};

#define HISTORY_OPS (sizeof(history_op_names) / sizeof(history_op_names[0]))
#define HISTORY_OUTCOMES (sizeof(history_outcome_names) / sizeof(history_outcome_names[0]))

const char *history_op_name(enum history_op op)
{
    return history_op_names[op];
}

const char *history_outcome_name(enum history_outcome o)
{
    return history_outcome_names[o];
}

bool history_is_write(const struct history_entry *e)
{
    return e->op == HISTORY_SET || e->op == HISTORY_KSET;
}

bool history_is_blind(const struct history_entry *e)
{
    return e->op == HISTORY_SET || e->op == HISTORY_DEL ||
           (e->op == HISTORY_KSET && !e->has_context);
}

/* --- reading --------------------------------------------------------------------- */

/* The parse of one line: where it is, and the first error. */
struct history_line {
    size_t line;
    char *err;
    size_t err_len;
};

static int line_error(const struct history_line *l, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int line_error(const struct history_line *l, int rc, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(l->err, l->err_len, "line %zu: ", l->line);

    if (n >= 0 && (size_t)n < l->err_len) {
        va_start(ap, fmt);
        vsnprintf(l->err + n, l->err_len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/*
 * A JSON string's UTF-8 as bytes, one per character: U+0000..U+007F are
 * one byte, U+0080..U+00FF two (0xC2 or 0xC3, then a continuation byte);
 * jansson has checked the UTF-8, so anything else is a larger character.
 */
static int str_bytes(const struct history_line *l, const char *field, json_t *j,
                     struct history_str *out)
{
    const uint8_t *s = (const uint8_t *)json_string_value(j);
    size_t n = json_string_length(j), k = 0;

    out->p = malloc(n + 1);
    if (out->p == NULL) {
        return line_error(l, RK_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x80) {
            out->p[k++] = s[i];
        } else if ((s[i] == 0xc2 || s[i] == 0xc3) && i + 1 < n) {
            out->p[k++] = (uint8_t)(((s[i] & 0x03) << 6) | (s[i + 1] & 0x3f));
            i++;
        } else {
            free(out->p);
            out->p = NULL;
            return line_error(l, RK_ESYNTAX,
                              "%s holds a character above U+00FF (history strings are bytes, "
                              "one \\u00XX each)",
                              field);
        }
    }
    out->p[k] = '\0';
    out->len = k;
    return 0;
}

/* Field name of o as a string; absent or null is allowed when optional (then *present false). */
static int get_str(const struct history_line *l, json_t *o, const char *name, bool optional,
                   bool *present, struct history_str *out)
{
    json_t *j = json_object_get(o, name);

    if (present != NULL) {
        *present = false;
    }
    if (j == NULL || json_is_null(j)) {
        return optional ? 0 : line_error(l, RK_ESYNTAX, "\"%s\" is missing", name);
    }
    if (!json_is_string(j)) {
        return line_error(l, RK_ESYNTAX, "\"%s\" is not a string", name);
    }
    if (present != NULL) {
        *present = true;
    }
    return str_bytes(l, name, j, out);
}

/* A list of strings, bounded by HISTORY_LIST_MAX; absent or null: *present false. */
static int get_list(const struct history_line *l, json_t *o, const char *name, bool *present,
                    struct history_str **out, size_t *n)
{
    json_t *j = json_object_get(o, name);
    size_t len;
    int rc;

    *present = false;
    if (j == NULL || json_is_null(j)) {
        return 0;
    }
    if (!json_is_array(j)) {
        return line_error(l, RK_ESYNTAX, "\"%s\" is not a list", name);
    }
    len = json_array_size(j);
    if (len > HISTORY_LIST_MAX) {
        return line_error(l, RK_ETOOBIG, "\"%s\" has %zu values, more than %d", name, len,
                          HISTORY_LIST_MAX);
    }
    *present = true;
    *out = calloc(len + 1, sizeof(**out));
    if (*out == NULL) {
        return line_error(l, RK_ENOMEM, "out of memory");
    }
    for (*n = 0; *n < len; ++*n) {
        json_t *s = json_array_get(j, *n);
        if (!json_is_string(s)) {
            return line_error(l, RK_ESYNTAX, "\"%s\" holds something other than strings", name);
        }
        rc = str_bytes(l, name, s, &(*out)[*n]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* An enumerated string field: its index in names[0..n) (the whole string: a NUL ends no word). */
static int get_enum(const struct history_line *l, json_t *o, const char *name,
                    const char *const *names, size_t n, int *out)
{
    json_t *j = json_object_get(o, name);
    const char *s = json_string_value(j);

    for (size_t i = 0; s != NULL && i < n; i++) {
        if (json_string_length(j) == strlen(names[i]) && strcmp(s, names[i]) == 0) {
            *out = (int)i;
            return 0;
        }
    }
    return line_error(l, RK_ESYNTAX, "\"%s\" is %s", name,
                      s == NULL ? "missing or not a string" : "not one of the known words");
}

static int get_time(const struct history_line *l, json_t *o, const char *name, uint64_t *out)
{
    json_t *j = json_object_get(o, name);

    if (!json_is_integer(j) || json_integer_value(j) < 0) {
        return line_error(l, RK_ESYNTAX, "\"%s\" is not a non-negative integer", name);
    }
    *out = (uint64_t)json_integer_value(j);
    return 0;
}

static int get_cstr(const struct history_line *l, json_t *o, const char *name, bool optional,
                    char **out)
{
    struct history_str s = {0};
    bool present;
    int rc = get_str(l, o, name, optional, &present, &s);

    *out = (char *)s.p;
    if (rc == 0 && present && memchr(s.p, '\0', s.len) != NULL) {
        return line_error(l, RK_ESYNTAX, "\"%s\" holds a NUL", name);
    }
    return rc;
}

/* The fields every op has, and those of its kind. */
static int entry_fields(const struct history_line *l, json_t *o, struct history_entry *e)
{
    int op = 0, outcome = 0, rc;
    bool present;

    rc = get_enum(l, o, "op", history_op_names, HISTORY_OPS, &op);
    rc = rc ? rc : get_enum(l, o, "outcome", history_outcome_names, HISTORY_OUTCOMES, &outcome);
    e->op = (enum history_op)op;
    e->outcome = (enum history_outcome)outcome;
    rc = rc ? rc : get_str(l, o, "key", false, NULL, &e->key);
    rc = rc ? rc : get_time(l, o, "start", &e->start);
    rc = rc ? rc : get_time(l, o, "end", &e->end);
    rc = rc ? rc : get_cstr(l, o, "node", false, &e->node);
    rc = rc ? rc : get_cstr(l, o, "error", true, &e->error);
    if (rc == 0 && e->end < e->start) {
        rc = line_error(l, RK_ESYNTAX, "\"end\" is before \"start\"");
    }
    rc = rc ? rc : get_str(l, o, "value", !history_is_write(e), &e->has_value, &e->value);
    if (rc == 0 && e->op == HISTORY_KGET) {
        rc = get_list(l, o, "values", &present, &e->values, &e->n_values);
    }
    if (rc == 0 && e->op == HISTORY_KSET) {
        rc = get_list(l, o, "context_of", &e->has_context, &e->context, &e->n_context);
    }
    return rc;
}

static void entry_free(struct history_entry *e)
{
    for (size_t i = 0; e->values != NULL && i < e->n_values; i++) {
        free(e->values[i].p);
    }
    for (size_t i = 0; e->context != NULL && i < e->n_context; i++) {
        free(e->context[i].p);
    }
    free(e->values);
    free(e->context);
    free(e->key.p);
    free(e->value.p);
    free(e->node);
    free(e->error);
}

static int history_push(struct history *h, const struct history_line *l, struct history_entry **out)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 1024;
        struct history_entry *e;
        if (h->n >= HISTORY_ENTRIES_MAX) {
            return line_error(l, RK_ETOOBIG, "more than %u lines", HISTORY_ENTRIES_MAX);
        }
        e = realloc(h->e, cap * sizeof(*e));
        if (e == NULL) {
            return line_error(l, RK_ENOMEM, "out of memory");
        }
        h->e = e;
        h->cap = cap;
    }
    *out = &h->e[h->n++];
    memset(*out, 0, sizeof(**out));
    (*out)->line = l->line;
    return 0;
}

static int history_line_parse(struct history *h, const struct history_line *l, const uint8_t *p,
                              size_t len)
{
    struct history_entry *e = NULL;
    json_error_t jerr;
    json_t *o;
    int rc;

    if (len > HISTORY_LINE_MAX) {
        return line_error(l, RK_ETOOBIG, "longer than %d bytes", HISTORY_LINE_MAX);
    }
    o = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (o == NULL) {
        return line_error(l, RK_ESYNTAX, "not JSON: %s (column %d)", jerr.text, jerr.column);
    }
    rc = json_is_object(o) ? 0 : line_error(l, RK_ESYNTAX, "not a JSON object");
    rc = rc ? rc : history_push(h, l, &e);
    rc = rc ? rc : entry_fields(l, o, e);
    json_decref(o);
    return rc;
}

static bool blank(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') {
            return false;
        }
    }
    return true;
}

int history_parse(struct history *h, const uint8_t *data, size_t len, char *err, size_t err_len)
{
    struct history_line l = {0, err, err_len};
    size_t at = 0;
    int rc;

    while (at < len) {
        const uint8_t *nl = memchr(data + at, '\n', len - at);
        size_t n = nl != NULL ? (size_t)(nl - (data + at)) : len - at;
        l.line++;
        if (!blank(data + at, n)) {
            rc = history_line_parse(h, &l, data + at, n);
            if (rc != 0) {
                return rc;
            }
        }
        at += n + 1;
    }
    return 0;
}

void history_free(struct history *h)
{
    for (size_t i = 0; i < h->n; i++) {
        entry_free(&h->e[i]);
    }
    free(h->e);
    memset(h, 0, sizeof(*h));
}

/* --- writing --------------------------------------------------------------------- */

int history_json_str(struct buf *out, const uint8_t *p, size_t len)
{
    int rc = buf_append(out, "\"", 1);

    for (size_t i = 0; rc == 0 && i < len; i++) {
        if (p[i] == '"' || p[i] == '\\') {
            char esc[2] = {'\\', (char)p[i]};
            rc = buf_append(out, esc, 2);
        } else if (p[i] < 0x20 || p[i] >= 0x7f) {
            rc = buf_printf(out, "\\u%04x", p[i]);
        } else {
            rc = buf_append(out, &p[i], 1);
        }
    }
    return rc ? rc : buf_append(out, "\"", 1);
}

static int json_list(struct buf *out, const char *name, const struct history_str *s, size_t n)
{
    int rc = buf_printf(out, ",\"%s\":[", name);

    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = i > 0 ? buf_append(out, ",", 1) : 0;
        rc = rc ? rc : history_json_str(out, s[i].p, s[i].len);
    }
    return rc ? rc : buf_append(out, "]", 1);
}

int history_entry_format(struct buf *out, const struct history_entry *e)
{
    int rc = buf_printf(out, "{\"op\":\"%s\",\"key\":", history_op_name(e->op));

    rc = rc ? rc : history_json_str(out, e->key.p, e->key.len);
    rc = rc ? rc : buf_append_str(out, ",\"value\":");
    if (rc == 0) {
        rc = e->has_value ? history_json_str(out, e->value.p, e->value.len)
                          : buf_append_str(out, "null");
    }
    if (rc == 0 && e->op == HISTORY_KGET) {
        rc = json_list(out, "values", e->values, e->n_values);
    }
    if (rc == 0 && e->op == HISTORY_KSET && e->has_context) {
        rc = json_list(out, "context_of", e->context, e->n_context);
    }
    rc =
        rc ? rc
           : buf_printf(out, ",\"start\":%llu,\"end\":%llu,\"node\":", (unsigned long long)e->start,
                        (unsigned long long)e->end);
    rc = rc ? rc : history_json_str(out, (const uint8_t *)e->node, strlen(e->node));
    rc = rc ? rc
            : buf_printf(out, ",\"outcome\":\"%s\",\"error\":", history_outcome_name(e->outcome));
    if (rc == 0) {
        rc = e->error != NULL ? history_json_str(out, (const uint8_t *)e->error, strlen(e->error))
                              : buf_append_str(out, "null");
    }
    return rc ? rc : buf_append_str(out, "}\n");
}
