/*
 * respc.c - the CLI's blocking RESP client (respc.h).
 *
 * A call encodes the command into the output buffer, sends it, then reads
 * until one whole reply has arrived: each burst of input is appended to a
 * buffer bounded by reply_max and the buffer is parsed from its start with
 * resp_reply_parse(), which checks every count and length against the
 * bytes present before it allocates, so an incomplete reply costs a scan
 * and no memory.  Parsing once per burst (dial_recv() drains what has
 * arrived) rather than once per read keeps the rescans few.
 *
 * The human format is redis-cli's cliFormatReplyTTY(), so a person who
 * knows redis-cli reads `ringkv call` output without surprises.
 */
#include "respc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "error.h"
#include "hex.h"

/* Bytes asked of each read while a reply arrives. */
#define RESPC_READ_CHUNK (64 * 1024)

struct respc {
    struct dial d;
    struct buf in, out;
    size_t reply_max;
};

void respc_opts_init(struct respc_opts *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->host, sizeof(o->host), "%s", RESPC_HOST_DEFAULT);
    o->port = RESPC_PORT_DEFAULT;
    o->timeout_ms = RESPC_TIMEOUT_MS_DEFAULT;
    o->reply_max = RESPC_REPLY_MAX;
}

int respc_opts_set_addr(struct respc_opts *o, const char *s, const char *what, char *err,
                        size_t err_len)
{
    struct addr a;
    const char *why;

    if (addr_parse(s, strlen(s), RESPC_PORT_DEFAULT, &a, &why) != 0) {
        snprintf(err, err_len, "%s: '%.300s' is not HOST[:PORT] (%s)", what, s, why);
        return RK_EINVAL;
    }
    memcpy(o->host, a.host, sizeof(o->host));
    o->port = a.port;
    return 0;
}

int respc_opts_set_timeout(struct respc_opts *o, const char *s, const char *what, char *err,
                           size_t err_len)
{
    if (dial_timeout_parse(s, &o->timeout_ms) != 0) {
        snprintf(err, err_len,
                 "%s: expected a number of seconds above 0 and at most %u, not '%.64s'", what,
                 DIAL_TIMEOUT_MAX_MS / 1000, s);
        return RK_EINVAL;
    }
    return 0;
}

/* AUTH with o's password; a refusal is RK_EAUTH with the server's words. */
static int respc_auth(struct respc *c, const char *password, char *err, size_t err_len)
{
    const char *argv[] = {"AUTH", password};
    struct resp_reply *r = NULL;
    int rc = respc_call(c, 2, argv, NULL, &r, err, err_len);

    if (rc == 0 && r->type == RESP_T_ERROR) {
        snprintf(err, err_len, "AUTH failed at %s: %s", c->d.addr, (const char *)r->str);
        rc = RK_EAUTH;
    }
    resp_reply_free(r);
    return rc;
}

int respc_connect(struct respc **out, const struct respc_opts *o, char *err, size_t err_len)
{
    struct respc *c = calloc(1, sizeof(*c));
    int rc;

    *out = NULL;
    if (c == NULL) {
        snprintf(err, err_len, "out of memory");
        return RK_ENOMEM;
    }
    buf_init(&c->in, o->reply_max);
    buf_init(&c->out, 0);
    c->reply_max = o->reply_max;
    rc = dial_connect(&c->d, o->host, o->port, o->timeout_ms, err, err_len);
    if (rc == 0 && o->password != NULL) {
        rc = respc_auth(c, o->password, err, err_len);
    }
    if (rc != 0) {
        respc_close(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* Parse one reply from the input buffer: 1 with *reply, 0 for more, or an error. */
static int respc_parse(struct respc *c, struct resp_reply **reply, char *err, size_t err_len)
{
    size_t used = 0;
    int rc = resp_reply_parse(buf_data(&c->in), c->in.len, c->reply_max, &used, reply);

    if (rc == 1) {
        buf_consume(&c->in, used);
    } else if (rc == RK_ETOOBIG) {
        snprintf(err, err_len, "the reply from %s is larger than %zu bytes: refusing to read it",
                 c->d.addr, c->reply_max);
    } else if (rc == RK_ESYNTAX) {
        snprintf(err, err_len, "%s sent a reply that is not RESP: is it a ringkv client port?",
                 c->d.addr);
    } else if (rc < 0) {
        snprintf(err, err_len, "cannot read the reply from %s: %s", c->d.addr, rk_strerror(rc));
    }
    return rc;
}

int respc_call(struct respc *c, size_t argc, const char *const *argv, const size_t *lens,
               struct resp_reply **reply, char *err, size_t err_len)
{
    uint64_t deadline = dial_deadline(c->d.timeout_ms);
    int rc;

    *reply = NULL;
    buf_clear(&c->out);
    rc = resp_put_command(&c->out, argc, argv, lens);
    if (rc != 0) {
        snprintf(err, err_len, "cannot encode the command: %s", rk_strerror(rc));
        return rc;
    }
    rc = dial_send(&c->d, buf_data(&c->out), c->out.len, deadline, err, err_len);
    while (rc == 0) {
        rc = c->in.len > 0 ? respc_parse(c, reply, err, err_len) : 0;
        if (rc != 0) {
            break;
        }
        rc = dial_recv(&c->d, &c->in, RESPC_READ_CHUNK, deadline, err, err_len);
        if (rc == RK_ECLOSED) {
            snprintf(err, err_len, "%s closed the connection before replying", c->d.addr);
        } else if (rc == RK_ETOOBIG) {
            snprintf(err, err_len,
                     "the reply from %s is larger than %zu bytes: refusing to read it", c->d.addr,
                     c->reply_max);
        }
    }
    return rc == 1 ? 0 : rc;
}

const char *respc_addr(const struct respc *c)
{
    return c->d.addr;
}

void respc_close(struct respc *c)
{
    if (c == NULL) {
        return;
    }
    dial_close(&c->d);
    buf_free(&c->in);
    buf_free(&c->out);
    free(c);
}

/* --- showing replies ----------------------------------------------------------- */

static const char *const respc_type_names[] = {
    [RESP_T_SIMPLE] = "simple string",
    [RESP_T_ERROR] = "error",
    [RESP_T_INT] = "integer",
    [RESP_T_BULK] = "bulk string",
    [RESP_T_NULL] = "null",
    [RESP_T_ARRAY] = "array",
    [RESP_T_MAP] = "map",
    [RESP_T_SET] = "set",
    [RESP_T_BOOL] = "boolean",
    [RESP_T_DOUBLE] = "double",
    [RESP_T_VERBATIM] = "verbatim string",
    [RESP_T_BIGNUM] = "big number",
    [RESP_T_PUSH] = "push",
};

const char *respc_type_name(enum resp_type t)
{
    if ((size_t)t >= sizeof(respc_type_names) / sizeof(respc_type_names[0])) {
        return "unknown";
    }
    return respc_type_names[t];
}

/* The shortest "%.*g" of v that reads back as v, as redis-cli shows doubles. */
static void respc_double_text(char *out, size_t cap, double v)
{
    if (isnan(v) || isinf(v)) {
        snprintf(out, cap, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, v);
        if (strtod(out, NULL) == v) {
            return;
        }
    }
}

/* A string quoted as redis-cli's sdscatrepr() does: "a\"b\x00". */
static int respc_put_repr(struct buf *out, const uint8_t *s, size_t len)
{
    static const char escaped[] = {['\\'] = '\\', ['"'] = '"',  ['\n'] = 'n', ['\r'] = 'r',
                                   ['\t'] = 't',  ['\a'] = 'a', ['\b'] = 'b'};
    int rc = buf_append(out, "\"", 1);

    for (size_t i = 0; i < len && rc == 0; i++) {
        uint8_t ch = s[i];
        if (ch < sizeof(escaped) && escaped[ch] != 0) {
            rc = buf_printf(out, "\\%c", escaped[ch]);
        } else if (ch >= 0x20 && ch < 0x7f) {
            rc = buf_append(out, &ch, 1);
        } else {
            rc = buf_printf(out, "\\x%02x", ch);
        }
    }
    return rc == 0 ? buf_append(out, "\"", 1) : rc;
}

static int format_value(struct buf *out, const struct resp_reply *r, size_t indent);

static int format_simple(struct buf *out, const struct resp_reply *r, size_t indent)
{
    int rc = buf_append(out, r->str, r->len);
    return rc == 0 ? buf_append(out, "\n", 1) : rc;
}

static int format_error(struct buf *out, const struct resp_reply *r, size_t indent)
{
    return buf_printf(out, "(error) %s\n", (const char *)r->str);
}

static int format_int(struct buf *out, const struct resp_reply *r, size_t indent)
{
    return buf_printf(out, "(integer) %lld\n", (long long)r->integer);
}

static int format_bulk(struct buf *out, const struct resp_reply *r, size_t indent)
{
    int rc = respc_put_repr(out, r->str, r->len);
    return rc == 0 ? buf_append(out, "\n", 1) : rc;
}

static int format_null(struct buf *out, const struct resp_reply *r, size_t indent)
{
    return buf_append_str(out, "(nil)\n");
}

static int format_bool(struct buf *out, const struct resp_reply *r, size_t indent)
{
    return buf_append_str(out, r->integer ? "(true)\n" : "(false)\n");
}

static int format_double(struct buf *out, const struct resp_reply *r, size_t indent)
{
    char text[40];

    respc_double_text(text, sizeof(text), r->dbl);
    return buf_printf(out, "(double) %s\n", text);
}

static int format_bignum(struct buf *out, const struct resp_reply *r, size_t indent)
{
    return buf_printf(out, "(big number) %s\n", (const char *)r->str);
}

/*
 * Whether r takes more than one line, in which case a map puts it on the
 * lines after its key rather than after the "=>" (redis-cli's
 * cliIsMultilineValueTTY()).
 */
static bool format_multiline(const struct resp_reply *r)
{
    bool aggregate = r->type == RESP_T_ARRAY || r->type == RESP_T_SET || r->type == RESP_T_PUSH;

    if (r->type == RESP_T_MAP) {
        return r->n > 1 || (r->n == 1 && format_multiline(r->elem[1]));
    }
    return aggregate && (r->n > 1 || (r->n == 1 && format_multiline(r->elem[0])));
}

/* A map's value after its key, which format_aggregate() wrote with its newline. */
static int format_map_value(struct buf *out, const struct resp_reply *v, size_t indent)
{
    int rc;

    out->len--; /* the key's newline: the value follows on its line */
    rc = buf_append_str(out, " => ");
    if (rc == 0 && format_multiline(v)) {
        rc = buf_printf(out, "\n%*s", (int)indent, "");
    }
    return rc == 0 ? format_value(out, v, indent) : rc;
}

/* redis-cli's names of empty aggregates: "(empty hash)". */
static const char *const format_empty_names[] = {
    [RESP_T_ARRAY] = "array",
    [RESP_T_MAP] = "hash",
    [RESP_T_SET] = "set",
    [RESP_T_PUSH] = "push",
};

/* Aggregates: each element numbered, nested ones indented past the number. */
static int format_aggregate(struct buf *out, const struct resp_reply *r, size_t indent)
{
    bool map = r->type == RESP_T_MAP;
    char sep = map ? '#' : r->type == RESP_T_SET ? '~' : ')';
    int width = 0, rc = 0;

    if (r->n == 0) {
        return buf_printf(out, "(empty %s)\n", format_empty_names[r->type]);
    }
    for (size_t n = r->n; n > 0; n /= 10) {
        width++;
    }
    for (size_t i = 0; i < r->n && rc == 0; i++) {
        const struct resp_reply *e = r->elem[map ? 2 * i : i];
        rc = buf_printf(out, "%*s%*zu%c ", i == 0 ? 0 : (int)indent, "", width, i + 1, sep);
        if (rc == 0) {
            rc = format_value(out, e, indent + (size_t)width + 2);
        }
        if (rc == 0 && map) {
            rc = format_map_value(out, r->elem[2 * i + 1], indent + (size_t)width + 2);
        }
    }
    return rc;
}

typedef int format_fn(struct buf *out, const struct resp_reply *r, size_t indent);

static format_fn *const respc_formats[] = {
    [RESP_T_SIMPLE] = format_simple,   [RESP_T_ERROR] = format_error,
    [RESP_T_INT] = format_int,         [RESP_T_BULK] = format_bulk,
    [RESP_T_NULL] = format_null,       [RESP_T_ARRAY] = format_aggregate,
    [RESP_T_MAP] = format_aggregate,   [RESP_T_SET] = format_aggregate,
    [RESP_T_BOOL] = format_bool,       [RESP_T_DOUBLE] = format_double,
    [RESP_T_VERBATIM] = format_simple, [RESP_T_BIGNUM] = format_bignum,
    [RESP_T_PUSH] = format_aggregate,
};

static int format_value(struct buf *out, const struct resp_reply *r, size_t indent)
{
    if ((size_t)r->type >= sizeof(respc_formats) / sizeof(respc_formats[0])) {
        return RK_EINVAL;
    }
    return respc_formats[r->type](out, r, indent);
}

int respc_reply_format(struct buf *out, const struct resp_reply *r)
{
    return format_value(out, r, 0);
}

/* --- JSON ------------------------------------------------------------------------ */

json_t *respc_json_bytes(const uint8_t *s, size_t len)
{
    json_t *j = json_stringn((const char *)s, len);
    char *hex;

    if (j != NULL) {
        return j;
    }
    hex = malloc(2 * len + 1);
    if (hex == NULL) {
        return NULL;
    }
    hex_encode(hex, s, len);
    j = json_pack("{s:s}", "hex", hex);
    free(hex);
    return j;
}

static json_t *json_string_reply(const struct resp_reply *r)
{
    return respc_json_bytes(r->str, r->len);
}

static json_t *json_error_reply(const struct resp_reply *r)
{
    return json_pack("{s:o}", "error", respc_json_bytes(r->str, r->len));
}

static json_t *json_int_reply(const struct resp_reply *r)
{
    return json_integer((json_int_t)r->integer);
}

static json_t *json_null_reply(const struct resp_reply *r)
{
    return json_null();
}

static json_t *json_bool_reply(const struct resp_reply *r)
{
    return json_boolean(r->integer != 0);
}

static json_t *json_double_reply(const struct resp_reply *r)
{
    char text[40];

    if (isfinite(r->dbl)) {
        return json_real(r->dbl);
    }
    respc_double_text(text, sizeof(text), r->dbl);
    return json_string(text);
}

static json_t *json_array_reply(const struct resp_reply *r)
{
    json_t *a = json_array();

    for (size_t i = 0; a != NULL && i < r->n; i++) {
        if (json_array_append_new(a, respc_reply_json(r->elem[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    }
    return a;
}

/* Whether every key of map r is a string that JSON can hold. */
static bool json_keys_are_text(const struct resp_reply *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const struct resp_reply *k = r->elem[2 * i];
        json_t *probe;
        if (k->type != RESP_T_BULK && k->type != RESP_T_SIMPLE && k->type != RESP_T_VERBATIM) {
            return false;
        }
        probe = json_stringn((const char *)k->str, k->len);
        json_decref(probe);
        if (probe == NULL) {
            return false;
        }
    }
    return true;
}

/* A map as an object, or as [[key, value], ...] when its keys are not all text. */
static json_t *json_map_reply(const struct resp_reply *r)
{
    bool object = json_keys_are_text(r);
    json_t *j = object ? json_object() : json_array();

    for (size_t i = 0; j != NULL && i < r->n; i++) {
        const struct resp_reply *k = r->elem[2 * i];
        json_t *v = respc_reply_json(r->elem[2 * i + 1]);
        int rc = object ? json_object_setn_new(j, (const char *)k->str, k->len, v)
                        : json_array_append_new(j, json_pack("[oo]", respc_reply_json(k), v));
        if (rc != 0) {
            json_decref(j);
            j = NULL;
        }
    }
    return j;
}

typedef json_t *json_fn(const struct resp_reply *r);

static json_fn *const respc_jsons[] = {
    [RESP_T_SIMPLE] = json_string_reply,   [RESP_T_ERROR] = json_error_reply,
    [RESP_T_INT] = json_int_reply,         [RESP_T_BULK] = json_string_reply,
    [RESP_T_NULL] = json_null_reply,       [RESP_T_ARRAY] = json_array_reply,
    [RESP_T_MAP] = json_map_reply,         [RESP_T_SET] = json_array_reply,
    [RESP_T_BOOL] = json_bool_reply,       [RESP_T_DOUBLE] = json_double_reply,
    [RESP_T_VERBATIM] = json_string_reply, [RESP_T_BIGNUM] = json_string_reply,
    [RESP_T_PUSH] = json_array_reply,
};

json_t *respc_reply_json(const struct resp_reply *r)
{
    if (r == NULL || (size_t)r->type >= sizeof(respc_jsons) / sizeof(respc_jsons[0])) {
        return NULL;
    }
    return respc_jsons[r->type](r);
}
