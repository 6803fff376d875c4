/*
 * cli_data.c - `ringkv get|set|del|call`: data on a node, over its client
 * (RESP) port, as redis-cli users expect it.
 *
 * For people: get prints the value and a newline, or (nil) for a missing
 * key; set prints OK; del prints how many keys existed; call prints any
 * reply in redis-cli's format.  For scripts, --json prints one object with
 * stable snake_case fields:
 *
 *   get   {"key": K, "value": V}         V is null for a missing key
 *   set   {"key": K, "ok": true}
 *   del   {"deleted": N}
 *   call  the reply as JSON (respc_reply_json())
 *
 * Options may come before or after the operands; "--" ends them, for a
 * key or value that starts with "-" (`ringkv set -- n -5`).  call's
 * options end at COMMAND, so the command's own words are never taken for
 * options.
 *
 * Keys and values are the arguments' bytes.  With --hex every KEY and
 * VALUE argument is hex, and values are shown as hex, which is also how
 * binary data gets into and out of --json (JSON strings hold only text).
 *
 * A server error reply (-ERR, -CONFLICT, -NOAUTH ...) is printed as one
 * line on stderr and exits 1: a GET of a key with siblings is a
 * -CONFLICT, and its text says to read them with KGET.
 */
#include "cli_data.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "error.h"
#include "hex.h"

#define CONN_OPTS "[-H HOST[:PORT]] [-t SECONDS]"
#define GET_USAGE "ringkv get " CONN_OPTS " [--hex] [--json] [--] KEY"
#define SET_USAGE "ringkv set " CONN_OPTS " [--hex] [--json] [--] KEY VALUE"
#define DEL_USAGE "ringkv del " CONN_OPTS " [--hex] [--json] [--] KEY..."
#define CALL_USAGE "ringkv call " CONN_OPTS " [--json] COMMAND [ARG...]"

enum { OPT_JSON = 256, OPT_HEX };

/* Report a bad option argument or an unknown option; returns CLI_USAGE. */
static int data_bad_option(const char *usage, char **argv, int c)
{
    if (c == ':') {
        return cli_usage(usage, "option '%s' needs a value", argv[optind - 1]);
    }
    return cli_usage(usage, "unknown option '%s'", argv[optind - 1]);
}

int cli_data_conn_set(struct respc_opts *o, const char *addr, const char *timeout,
                      const char *usage)
{
    const char *addr_from = addr != NULL ? "-H" : CLI_ENV_ADDR;
    const char *timeout_from = timeout != NULL ? "-t" : CLI_ENV_TIMEOUT;
    const char *password = getenv(CLI_ENV_PASSWORD);
    char err[512];

    addr = addr != NULL ? addr : getenv(CLI_ENV_ADDR);
    timeout = timeout != NULL ? timeout : getenv(CLI_ENV_TIMEOUT);
    respc_opts_init(o);
    if (addr != NULL && *addr != '\0' &&
        respc_opts_set_addr(o, addr, addr_from, err, sizeof(err)) != 0) {
        return cli_usage(usage, "%s", err);
    }
    if (timeout != NULL && *timeout != '\0' &&
        respc_opts_set_timeout(o, timeout, timeout_from, err, sizeof(err)) != 0) {
        return cli_usage(usage, "%s", err);
    }
    o->password = password != NULL && *password != '\0' ? password : NULL;
    return 0;
}

int cli_data_opts_parse(int argc, char **argv, const char *usage, unsigned flags,
                        struct cli_data_opts *o)
{
    static const struct option opts[] = {{"host", required_argument, NULL, 'H'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, OPT_JSON},
                                         {"hex", no_argument, NULL, OPT_HEX},
                                         {0, 0, 0, 0}};
    const char *addr = NULL, *timeout = NULL;
    int c;

    memset(o, 0, sizeof(*o));
    optind = 0; /* 0: glibc also re-reads the optstring's '+' */
    opterr = 0;
    while ((c = getopt_long(argc, argv, flags & CLI_DATA_STOP ? "+:H:t:" : ":H:t:", opts, NULL)) !=
           -1) {
        if (c == 'H') {
            addr = optarg;
        } else if (c == 't') {
            timeout = optarg;
        } else if (c == OPT_JSON) {
            o->json = true;
        } else if (c == OPT_HEX && (flags & CLI_DATA_HEX)) {
            o->hex = true;
        } else {
            return data_bad_option(usage, argv, c);
        }
    }
    return cli_data_conn_set(&o->conn, addr, timeout, usage);
}

int cli_data_request(const struct respc_opts *o, size_t argc, const char *const *argv,
                     const size_t *lens, struct resp_reply **reply)
{
    struct respc *c;
    char err[512];
    int rc;

    *reply = NULL;
    rc = respc_connect(&c, o, err, sizeof(err));
    if (rc == 0) {
        rc = respc_call(c, argc, argv, lens, reply, err, sizeof(err));
        respc_close(c);
    }
    if (rc != 0) {
        return cli_error("%s", err);
    }
    if ((*reply)->type == RESP_T_ERROR) {
        cli_error("%s", (const char *)(*reply)->str);
        resp_reply_free(*reply);
        *reply = NULL;
        return CLI_ERROR;
    }
    return CLI_OK;
}

/*
 * A command's words: the command name, then the operands as bytes (hex
 * decoded with --hex).  One allocation holds the tables and the bytes.
 */
struct data_words {
    size_t n;
    const char **p;
    size_t *len;
};

static void data_words_free(struct data_words *w)
{
    free(w->p);
    memset(w, 0, sizeof(*w));
}

/* Build w from cmd and argv[0..n); a bad hex argument is a usage error. */
static int data_words_take(struct data_words *w, const struct cli_data_opts *o, const char *usage,
                           const char *cmd, char **argv, size_t n)
{
    size_t bytes = 0;
    char *store;

    for (size_t i = 0; i < n; i++) {
        bytes += strlen(argv[i]) + 1;
    }
    w->n = n + 1;
    w->p = malloc(w->n * (sizeof(*w->p) + sizeof(*w->len)) + bytes);
    if (w->p == NULL) {
        return cli_error("out of memory");
    }
    w->len = (size_t *)(w->p + w->n);
    store = (char *)(w->len + w->n);
    w->p[0] = cmd;
    w->len[0] = strlen(cmd);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(argv[i]);
        w->p[i + 1] = o->hex ? store : argv[i];
        w->len[i + 1] = o->hex ? len / 2 : len;
        if (o->hex && !hex_decode((uint8_t *)store, argv[i], len)) {
            data_words_free(w);
            return cli_usage(usage, "--hex: '%.64s' is not an even number of hex digits", argv[i]);
        }
        store += len / 2 + 1;
    }
    return 0;
}

/* Bytes as a JSON string: hex with --hex, else text; NULL when not UTF-8. */
static json_t *data_json_bytes(const struct cli_data_opts *o, const void *p, size_t len)
{
    char *hex;
    json_t *j;

    if (!o->hex) {
        return json_stringn(p, len);
    }
    hex = malloc(2 * len + 1);
    if (hex == NULL) {
        return NULL;
    }
    hex_encode(hex, p, len);
    j = json_stringn(hex, 2 * len);
    free(hex);
    return j;
}

/* Print bytes for people (hex with --hex) and a newline. */
static void data_print_bytes(const struct cli_data_opts *o, const void *p, size_t len)
{
    const uint8_t *b = p;

    if (!o->hex) {
        fwrite(p, 1, len, stdout);
    }
    for (size_t i = 0; o->hex && i < len; i++) {
        printf("%02x", b[i]);
    }
    fputc('\n', stdout);
}

static int data_unexpected(const char *cmd, const struct resp_reply *r)
{
    return cli_error("unexpected %s reply to %s", respc_type_name(r->type), cmd);
}

/* get's --json object, or an error when the key or the value is not text. */
static int data_get_json(const struct cli_data_opts *o, const struct data_words *w,
                         const struct resp_reply *r)
{
    json_t *key = data_json_bytes(o, w->p[1], w->len[1]);
    json_t *value = r->type == RESP_T_NULL ? json_null() : data_json_bytes(o, r->str, r->len);

    if (key == NULL || value == NULL) {
        json_decref(key);
        json_decref(value);
        return cli_error("the %s is not UTF-8 text, which JSON cannot hold: use --hex",
                         key == NULL ? "key" : "value");
    }
    return cli_json_print(json_pack("{s:o,s:o}", "key", key, "value", value));
}

int cli_data_get(int argc, char **argv)
{
    struct cli_data_opts o;
    struct data_words w;
    struct resp_reply *r = NULL;
    int rc = cli_data_opts_parse(argc, argv, GET_USAGE, CLI_DATA_HEX, &o);

    if (rc != 0) {
        return rc;
    }
    if (argc - optind != 1) {
        return cli_usage(GET_USAGE, "expected one KEY");
    }
    if (data_words_take(&w, &o, GET_USAGE, "GET", argv + optind, 1) != 0) {
        return CLI_USAGE;
    }
    rc = cli_data_request(&o.conn, w.n, w.p, w.len, &r);
    if (rc == CLI_OK && r->type != RESP_T_BULK && r->type != RESP_T_VERBATIM &&
        r->type != RESP_T_NULL) {
        rc = data_unexpected("GET", r);
    } else if (rc == CLI_OK && o.json) {
        rc = data_get_json(&o, &w, r);
    } else if (rc == CLI_OK && r->type == RESP_T_NULL) {
        printf("(nil)\n");
    } else if (rc == CLI_OK) {
        data_print_bytes(&o, r->str, r->len);
    }
    resp_reply_free(r);
    data_words_free(&w);
    return rc;
}

int cli_data_set(int argc, char **argv)
{
    struct cli_data_opts o;
    struct data_words w;
    struct resp_reply *r = NULL;
    json_t *key;
    int rc = cli_data_opts_parse(argc, argv, SET_USAGE, CLI_DATA_HEX, &o);

    if (rc != 0) {
        return rc;
    }
    if (argc - optind != 2) {
        return cli_usage(SET_USAGE, "expected a KEY and a VALUE");
    }
    if (data_words_take(&w, &o, SET_USAGE, "SET", argv + optind, 2) != 0) {
        return CLI_USAGE;
    }
    rc = cli_data_request(&o.conn, w.n, w.p, w.len, &r);
    if (rc == CLI_OK && r->type != RESP_T_SIMPLE) {
        rc = data_unexpected("SET", r);
    } else if (rc == CLI_OK && o.json) {
        key = data_json_bytes(&o, w.p[1], w.len[1]);
        rc = key == NULL ? cli_error("the key is not UTF-8 text, which JSON cannot hold: use --hex")
                         : cli_json_print(json_pack("{s:o,s:b}", "key", key, "ok", 1));
    } else if (rc == CLI_OK) {
        printf("%s\n", (const char *)r->str);
    }
    resp_reply_free(r);
    data_words_free(&w);
    return rc;
}

int cli_data_del(int argc, char **argv)
{
    struct cli_data_opts o;
    struct data_words w;
    struct resp_reply *r = NULL;
    int rc = cli_data_opts_parse(argc, argv, DEL_USAGE, CLI_DATA_HEX, &o);

    if (rc != 0) {
        return rc;
    }
    if (argc - optind < 1) {
        return cli_usage(DEL_USAGE, "expected at least one KEY");
    }
    if (data_words_take(&w, &o, DEL_USAGE, "DEL", argv + optind, (size_t)(argc - optind)) != 0) {
        return CLI_USAGE;
    }
    rc = cli_data_request(&o.conn, w.n, w.p, w.len, &r);
    if (rc == CLI_OK && r->type != RESP_T_INT) {
        rc = data_unexpected("DEL", r);
    } else if (rc == CLI_OK && o.json) {
        rc = cli_json_print(json_pack("{s:I}", "deleted", (json_int_t)r->integer));
    } else if (rc == CLI_OK) {
        printf("%lld\n", (long long)r->integer);
    }
    resp_reply_free(r);
    data_words_free(&w);
    return rc;
}

/*
 * Print a reply to `call` for people.  INFO's text is printed as it is,
 * as redis-cli does, since quoting it would put all its lines on one.
 */
static int data_call_print(const char *cmd, const struct resp_reply *r)
{
    struct buf out;
    int rc;

    if (strcasecmp(cmd, "info") == 0 && (r->type == RESP_T_BULK || r->type == RESP_T_VERBATIM)) {
        fwrite(r->str, 1, r->len, stdout);
        return CLI_OK;
    }
    buf_init(&out, 0);
    rc = respc_reply_format(&out, r);
    if (rc == 0) {
        fwrite(buf_data(&out), 1, out.len, stdout);
    }
    buf_free(&out);
    return rc == 0 ? CLI_OK : cli_error("cannot format the reply: %s", rk_strerror(rc));
}

int cli_data_call(int argc, char **argv)
{
    struct cli_data_opts o;
    struct resp_reply *r = NULL;
    json_t *j;
    int rc = cli_data_opts_parse(argc, argv, CALL_USAGE, CLI_DATA_STOP, &o);

    if (rc != 0) {
        return rc;
    }
    if (argc - optind < 1) {
        return cli_usage(CALL_USAGE, "expected a COMMAND");
    }
    rc = cli_data_request(&o.conn, (size_t)(argc - optind), (const char *const *)argv + optind,
                          NULL, &r);
    if (rc == CLI_OK && o.json) {
        j = respc_reply_json(r);
        rc = j != NULL ? cli_json_print(j) : cli_error("out of memory");
    } else if (rc == CLI_OK) {
        rc = data_call_print(argv[optind], r);
    }
    resp_reply_free(r);
    return rc;
}
