/*
 * resp.h - the Redis serialization protocol, RESP2 and RESP3, as ringkv's
 * client port speaks it: an incremental request parser for the server, a
 * reply encoder, and a bounded reply parser for clients (the ringkv CLI
 * and tests).
 *
 * Requests are either multibulk arrays (`*<n>\r\n` then n times
 * `$<len>\r\n<bytes>\r\n`) or inline commands (a line of space-separated
 * words, what `redis-cli` in a pipe and `redis-benchmark`'s first PING
 * send).  The parser is fed whatever bytes arrived, in any split, and
 * copies each argument into the command it is building, so a parsed
 * command owns its bytes and outlives the input buffer.
 *
 * Limits, checked before anything is allocated from a count a client sent:
 *   multibulk_max  arguments in one command; more is a protocol error
 *   bulk_max       bytes in one argument; a longer argument is read and
 *                  discarded without being buffered, and the command is
 *                  returned flagged too_big so the server can answer with
 *                  an error and keep the connection
 *   bulk_hard_max  bytes in one argument beyond which the connection is
 *                  not worth keeping: a protocol error
 *   inline_max     bytes in an inline command line; more is an error
 * A protocol error is final: the server replies with its message and
 * closes the connection, as Redis does.
 *
 * Inline commands follow Redis's splitting (sdssplitargs): words separated
 * by blanks (space, tab, CR, LF, VT, FF); "double quotes" with the escapes
 * \n \r \t \b \a \\ \" and \xHH; 'single quotes' where only \' is an
 * escape; a closing quote must be followed by a blank or the end of the
 * line.  A NUL byte is an ordinary character of a word.
 */
#ifndef RINGKV_RESP_H
#define RINGKV_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* Redis's own limits: 1024*1024 arguments, 64 KiB inline, 512 MiB bulk. */
#define RESP_MULTIBULK_MAX_DEFAULT (1024 * 1024)
#define RESP_INLINE_MAX_DEFAULT (64 * 1024)
#define RESP_BULK_HARD_MAX_DEFAULT (512ull * 1024 * 1024)

struct resp_limits {
    size_t multibulk_max;
    size_t bulk_max;
    size_t bulk_hard_max;
    size_t inline_max;
};

struct resp_arg {
    const uint8_t *p; /* into the command's own storage; NUL-terminated for convenience */
    size_t len;
};

/* A parsed command; owns its arguments.  Free with resp_cmd_free(). */
struct resp_cmd {
    size_t argc;
    struct resp_arg *argv;
    /*
     * An argument exceeded bulk_max and was discarded: it stays in argv as
     * an empty argument, so the others keep their positions.
     */
    bool too_big;
    size_t too_big_len; /* the first such argument's declared length */
    bool is_inline;
    /*
     * Storage, private; arena_len of the parser's command in progress (its
     * arguments so far, each with a NUL, or its inline line) is what a
     * server may bound across a whole request.
     */
    uint8_t *arena;
    size_t arena_len, arena_cap;
    size_t argv_cap;
    struct resp_cmd *next_spare; /* the parser's list of commands kept for reuse */
};

/* The parser of one connection; embed it, init it, deinit it. */
struct resp_parser {
    struct resp_limits lim;
    int state;         /* private */
    size_t want_args;  /* args declared by the current multibulk */
    size_t want_bytes; /* bytes left of the current bulk (plus CRLF) */
    size_t discarding; /* bytes of an oversized bulk still to skip */
    struct resp_cmd *cur;
    struct resp_cmd *spare; /* finished commands kept for reuse (resp_parser_recycle) */
    size_t n_spare;
    uint8_t line[32]; /* a partial `*n` or `$n` header */
    size_t line_len;
    /*
     * After RESP_PROTOCOL_ERROR: Redis's message without the "ERR " that the
     * server prefixes to it ("-ERR Protocol error: ...").  Static, or in
     * error_buf; valid until resp_parser_deinit().
     */
    const char *error;
    char error_buf[48]; /* private */
};

enum resp_status {
    RESP_NEED_MORE,      /* all input consumed; no complete command yet */
    RESP_COMMAND,        /* *out holds a command; call again for the rest */
    RESP_PROTOCOL_ERROR, /* p->error says why; the connection must close */
};

/* lim is copied; NULL means Redis's limits, with bulk_max = bulk_hard_max. */
void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim);
/* Frees a command still being read; the parser may be initialised again. */
void resp_parser_deinit(struct resp_parser *p);

/*
 * Parse from in[0..len): consumes up to the end of one command (or all the
 * input) and sets *used.  On RESP_COMMAND the caller owns *out, and *used
 * is the offset just past that command's last byte: call again with
 * in + *used for the rest of a pipeline.  RESP_NEED_MORE always takes in
 * everything (*used == len): partial arguments are already copied, so the
 * caller may drop its input.  Empty requests are skipped as Redis skips
 * them: a blank inline line, and `*0` or a negative count.
 * RESP_PROTOCOL_ERROR is final (every later call repeats it with
 * *used == 0); *used then says how far the parser read.  Running
 * out of memory is reported the same way, with p->error "out of memory
 * reading the request", because the connection is then closed as well.
 */
enum resp_status resp_parse(struct resp_parser *p, const uint8_t *in, size_t len, size_t *used,
                            struct resp_cmd **out);

/* Free a command resp_parse() returned; NULL is ignored. */
void resp_cmd_free(struct resp_cmd *c);

/*
 * Give a finished command back to the parser that produced it, to be
 * reused for a later request (saving its allocations).  The parser keeps
 * up to RESP_SPARE_MAX, so a pipeline whose commands are all in flight
 * at once allocates nothing in steady state; one of them may hold up to
 * RESP_RECYCLE_ARENA_MAX bytes, the others RESP_RECYCLE_SMALL_MAX, and a
 * larger command is freed instead, so an idle connection does not keep a
 * large request's memory.
 */
void resp_parser_recycle(struct resp_parser *p, struct resp_cmd *c);
#define RESP_RECYCLE_ARENA_MAX (64 * 1024)
#define RESP_RECYCLE_SMALL_MAX 1024
#define RESP_SPARE_MAX 64

/* Does argument i equal the word s, ignoring ASCII case? */
bool resp_arg_is(const struct resp_cmd *c, size_t i, const char *s);

/* --- replies -------------------------------------------------------------- */

/*
 * Reply encoders.  proto is 2 or 3 (HELLO switches a connection to 3):
 * where RESP3 has a type RESP2 lacks, the RESP2 form is what Redis sends
 * (null: `$-1`, map: a flat array of 2n elements, double: a bulk string,
 * boolean: the integer 0 or 1, verbatim text: a bulk string).
 *
 * Each call appends its whole item or nothing, and returns 0, RK_ETOOBIG
 * at the buffer's cap or RK_ENOMEM.  A reply made of several items (an
 * array header and its elements) is whole only when every call succeeded,
 * so a caller checks each return, or remembers the first failure and then
 * treats the connection's output as broken.
 *
 * Lines (simple strings and errors) never carry CR or LF: any in the text
 * are written as spaces, so a reply can never be split in two.  Doubles
 * are written in the shortest form that reads back as the same value, and
 * as inf, -inf and nan.
 */
int resp_put_simple(struct buf *b, const char *s);  /* +s */
int resp_put_error(struct buf *b, const char *msg); /* -msg, e.g. "ERR ..." */
/* -<formatted>; RK_EINVAL when the format fails. */
int resp_put_errorf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int resp_put_int(struct buf *b, int64_t v);                  /* :v */
int resp_put_bulk(struct buf *b, const void *p, size_t len); /* $len p */
int resp_put_bulk_str(struct buf *b, const char *s);
int resp_put_null(struct buf *b, int proto);                                /* $-1 or _ */
int resp_put_array(struct buf *b, size_t n);                                /* *n */
int resp_put_map(struct buf *b, size_t n, int proto);                       /* %n or *2n */
int resp_put_set(struct buf *b, size_t n, int proto);                       /* ~n or *n */
int resp_put_bool(struct buf *b, bool v, int proto);                        /* #t/#f or :1/:0 */
int resp_put_double(struct buf *b, double v, int proto);                    /* ,v or $ */
int resp_put_verbatim(struct buf *b, const void *p, size_t len, int proto); /* =txt: or $ */

/* --- client side: parsing replies ------------------------------------------- */

enum resp_type {
    RESP_T_SIMPLE,
    RESP_T_ERROR,
    RESP_T_INT,
    RESP_T_BULK,
    RESP_T_NULL,
    RESP_T_ARRAY,
    RESP_T_MAP, /* elements hold keys and values alternately */
    RESP_T_SET,
    RESP_T_BOOL,
    RESP_T_DOUBLE,
    RESP_T_VERBATIM,
    RESP_T_BIGNUM,
    RESP_T_PUSH,
};

/*
 * A parsed reply: a tree the caller frees with resp_reply_free().
 *
 * `$-1` and `*-1` (RESP2's nulls) and `_` parse as NULL.  An error is
 * `-line` or RESP3's blob error `!<len>`.  A verbatim string's str is its
 * text without the three-letter format and colon.  Attributes (`|`) are
 * read, bounded like a map, and dropped: the reply is the value that
 * follows them.  RESP3 streamed strings and aggregates (`$?`, `*?`) are
 * not supported and parse as RK_ESYNTAX.
 */
struct resp_reply {
    enum resp_type type;
    int64_t integer; /* INT, BOOL (0 or 1) */
    double dbl;      /* DOUBLE */
    uint8_t *str;    /* SIMPLE, ERROR, BULK, VERBATIM, BIGNUM; NUL-terminated */
    size_t len;
    struct resp_reply **elem; /* ARRAY, SET, PUSH: n elements; MAP: 2n, key then value */
    size_t n;                 /* elements, or for MAP pairs */
};

/* Aggregates (attributes included) nested in one another. */
#define RESP_REPLY_DEPTH_MAX 32
/* Elements of one aggregate, a map's keys and values both counted. */
#define RESP_REPLY_ELEMENTS_MAX (1024 * 1024)

/*
 * Parse one complete reply from in[0..len).  Returns 1 with *out and
 * *used set, 0 when more input is needed (nothing consumed), or RK_ESYNTAX
 * for malformed input, RK_ETOOBIG for a count, a depth or a length over
 * the bounds above or over max_bulk (which also bounds simple strings,
 * error lines and big numbers), RK_ENOMEM.  Counts are checked against the
 * bytes present before anything is allocated.  A reply is returned only
 * once all of it is present, so a client calls again as bytes arrive;
 * *used then says where the next reply starts.
 */
int resp_reply_parse(const uint8_t *in, size_t len, size_t max_bulk, size_t *used,
                     struct resp_reply **out);
/* Free a reply and everything in it; NULL is ignored. */
void resp_reply_free(struct resp_reply *r);

/*
 * Encode a command (argv as strings with lengths) as a multibulk request.
 * lens NULL: the arguments are NUL-terminated strings.
 */
int resp_put_command(struct buf *b, size_t argc, const char *const *argv, const size_t *lens);

#endif
