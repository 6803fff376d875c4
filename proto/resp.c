/*
 * resp.c - RESP2 and RESP3 for the client port (resp.h): the incremental
 * request parser, the reply encoders and the bounded reply parser.
 *
 * Request parser.  A state machine with one handler per state
 * (resp_steps[]).  Every decision is taken on a byte, never on where a read
 * happened to end, so a request split anywhere, one byte at a time
 * included, gives the same commands and the same errors as the request in
 * one piece.  Each argument is copied into the command's arena as its bytes
 * arrive.  The arena holds the arguments back to back, each followed by a
 * NUL, which is why argv pointers are only set once the command is
 * complete: the arena may move while it grows, and the offsets follow from
 * the lengths.  Nothing is sized from a count the client declared: argv
 * grows as arguments begin, and the arena as bytes arrive, with at most
 * RESP_BULK_PREALLOC bytes reserved ahead of them and only once the
 * declared length has passed bulk_max.  An argument over bulk_max is
 * skipped as it arrives and costs no memory.
 *
 * An inline line is collected in the arena (inline_max bounds it) and split
 * in place when its LF arrives: a word is never longer than its source text
 * and the blank after it leaves room for its NUL, so the only extra byte
 * needed is the NUL after a last word that ends the line.  The arena keeps
 * that byte spare.
 *
 * Reply encoders append a whole item or nothing: a multi-part item notes
 * the buffer's length first and cuts back to it when a later part fails.
 *
 * Reply parser.  Two passes over one grammar: the first only checks,
 * allocating nothing, and finds out whether a whole reply is present; the
 * second builds the tree from bytes known to hold one valid reply.  An
 * incomplete reply therefore costs no allocation, and no array is sized
 * from a count before the elements it announces have been seen.
 */
#include "resp.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "grow.h"

/*
 * Bytes of an argument reserved when its header arrives; the rest grows as
 * bytes arrive.  Redis reserves a whole big argument at once
 * (PROTO_MBULK_BIG_ARG, 32 KiB and up); a bound keeps what a client can
 * make the server hold, before sending it, to one such reservation.
 */
#define RESP_BULK_PREALLOC (64 * 1024)
/* First arena capacity: room for a typical small command in one allocation. */
#define RESP_ARENA_MIN 64
/* First argv capacity: most commands have few arguments. */
#define RESP_ARGV_MIN 8
/* A `*<n>` or `$<n>` line in a reply longer than this cannot hold an int64. */
#define RESP_NUMBER_LINE_MAX 32
/*
 * Longest `,<double>` line accepted: %.17g and Redis 7.2's fpconv write at
 * most 24 characters; the rest is slack for other servers' forms.
 */
#define RESP_DOUBLE_CHARS_MAX 128
/* The smallest encoded element, a type byte and CRLF (`_\r\n`, `+\r\n`). */
#define RESP_ELEMENT_BYTES_MIN 3
/* Room for any number line we write: type, sign, 20 digits or a %.17g double, CRLF, NUL. */
#define RESP_NUMBER_CHARS 32
/* A formatted error that fits here is not copied to the heap. */
#define RESP_ERRORF_STACK 256

static const char resp_err_mbulk[] = "Protocol error: invalid multibulk length";
static const char resp_err_bulk[] = "Protocol error: invalid bulk length";
static const char resp_err_inline[] = "Protocol error: too big inline request";
static const char resp_err_quotes[] = "Protocol error: unbalanced quotes in request";
static const char resp_err_crlf[] = "Protocol error: bulk not followed by CRLF";
static const char resp_err_nomem[] = "out of memory reading the request";

enum resp_state {
    RESP_ST_START,     /* between requests: the next byte picks multibulk or inline */
    RESP_ST_INLINE,    /* collecting an inline line up to its LF */
    RESP_ST_HEADER,    /* in `*<n>` or `$<n>` before its CR; line_len 0: expecting `$` */
    RESP_ST_HEADER_LF, /* after a header's CR */
    RESP_ST_BULK,      /* in a bulk's bytes (or skipping them), then its CRLF */
    RESP_ST_FAILED,    /* after a protocol error: every call fails */
};

typedef enum resp_status (*resp_step_fn)(struct resp_parser *p, const uint8_t *in, size_t len,
                                         size_t *pos);

static size_t resp_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

static uint8_t resp_lower(uint8_t c)
{
    return c >= 'A' && c <= 'Z' ? (uint8_t)(c - 'A' + 'a') : c;
}

/*
 * Redis's string2ll, which decides which counts and lengths it accepts: an
 * optional '-', then "0" alone or digits without a leading zero, within
 * int64.  No '+', no blanks, no "-0".
 */
static bool resp_parse_i64(const uint8_t *s, size_t n, int64_t *out)
{
    uint64_t v = 0, lim = INT64_MAX;
    bool neg = n > 0 && s[0] == '-';
    size_t i = neg ? 1 : 0;

    if (n == 1 && s[0] == '0') {
        *out = 0;
        return true;
    }
    if (i == n || s[i] < '1' || s[i] > '9') {
        return false;
    }
    lim += neg ? 1 : 0;
    for (; i < n; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (s[i] < '0' || s[i] > '9' || v > (lim - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = !neg ? (int64_t)v : v > INT64_MAX ? INT64_MIN : -(int64_t)v;
    return true;
}

/* --- commands ------------------------------------------------------------ */

void resp_cmd_free(struct resp_cmd *c)
{
    if (c == NULL) {
        return;
    }
    free(c->argv);
    free(c->arena);
    free(c);
}

/* Empty c for the next request, keeping its memory. */
static void resp_cmd_reset(struct resp_cmd *c)
{
    c->argc = 0;
    c->arena_len = 0;
    c->too_big = false;
    c->too_big_len = 0;
    c->is_inline = false;
}

void resp_parser_recycle(struct resp_parser *p, struct resp_cmd *c)
{
    if (c == NULL) {
        return;
    }
    if (p->n_spare >= RESP_SPARE_MAX || c->arena_cap > RESP_RECYCLE_ARENA_MAX ||
        (p->n_spare > 0 && c->arena_cap > RESP_RECYCLE_SMALL_MAX)) {
        resp_cmd_free(c);
        return;
    }
    resp_cmd_reset(c);
    c->next_spare = p->spare;
    p->spare = c;
    p->n_spare++;
}

/*
 * Make room for need more arena bytes.  The arena doubles, so copying stays
 * linear in the bytes received, but never beyond most (>= need): the bytes
 * the current argument or line can still bring.
 */
static int resp_arena_reserve(struct resp_cmd *c, size_t need, size_t most)
{
    size_t n = c->arena_len + need, limit = c->arena_len + most;

    if (n < RESP_ARENA_MIN) {
        n = resp_min(RESP_ARENA_MIN, limit);
    }
    return grow_array_max(&c->arena, &c->arena_cap, n, limit, 1);
}

/* Append an argument of len bytes; its bytes go to the arena separately. */
static int resp_cmd_push(struct resp_cmd *c, size_t len)
{
    size_t want = c->argc + 1 < RESP_ARGV_MIN ? RESP_ARGV_MIN : c->argc + 1;

    if (grow_array(&c->argv, &c->argv_cap, want, sizeof(*c->argv)) != 0) {
        return RK_ENOMEM;
    }
    c->argv[c->argc++] = (struct resp_arg){NULL, len};
    return 0;
}

/* The arena has stopped moving: point every argument at its bytes. */
static void resp_cmd_seal(struct resp_cmd *c)
{
    size_t off = 0;

    for (size_t i = 0; i < c->argc; i++) {
        c->argv[i].p = c->arena + off;
        off += c->argv[i].len + 1;
    }
}

bool resp_arg_is(const struct resp_cmd *c, size_t i, const char *s)
{
    size_t n = strlen(s);

    if (i >= c->argc || c->argv[i].len != n) {
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        if (resp_lower(c->argv[i].p[k]) != resp_lower((uint8_t)s[k])) {
            return false;
        }
    }
    return true;
}

/* --- inline commands ----------------------------------------------------- */

/* A line being split in place: read at r, write at w <= r. */
struct resp_lex {
    uint8_t *s;
    size_t n, r, w;
};

/* Blanks as C's isspace() in the C locale, the set sdssplitargs skips. */
static bool resp_is_blank(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static int resp_hex_value(uint8_t c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    c = resp_lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* After a backslash in double quotes (at least one byte follows): the byte it stands for. */
static uint8_t resp_lex_escape(struct resp_lex *lx)
{
    static const uint8_t named[256] = {
        ['n'] = '\n', ['r'] = '\r', ['t'] = '\t', ['b'] = '\b', ['a'] = '\a'};
    uint8_t c = lx->s[lx->r];

    if (c == 'x' && lx->r + 2 < lx->n && resp_hex_value(lx->s[lx->r + 1]) >= 0 &&
        resp_hex_value(lx->s[lx->r + 2]) >= 0) {
        c = (uint8_t)(resp_hex_value(lx->s[lx->r + 1]) * 16 + resp_hex_value(lx->s[lx->r + 2]));
        lx->r += 3;
        return c;
    }
    lx->r++;
    return named[c] != 0 ? named[c] : c;
}

/* A closing quote must end the word: a blank (taken as the separator) or the end follows. */
static int resp_lex_closed(struct resp_lex *lx)
{
    if (lx->r == lx->n) {
        return 0;
    }
    if (!resp_is_blank(lx->s[lx->r])) {
        return RK_ESYNTAX;
    }
    lx->r++;
    return 0;
}

static int resp_lex_dquote(struct resp_lex *lx)
{
    while (lx->r < lx->n) {
        uint8_t c = lx->s[lx->r++];
        if (c == '"') {
            return resp_lex_closed(lx);
        }
        if (c == '\\' && lx->r < lx->n) {
            c = resp_lex_escape(lx);
        }
        lx->s[lx->w++] = c;
    }
    return RK_ESYNTAX;
}

static int resp_lex_squote(struct resp_lex *lx)
{
    while (lx->r < lx->n) {
        uint8_t c = lx->s[lx->r++];
        if (c == '\\' && lx->r < lx->n && lx->s[lx->r] == '\'') {
            c = lx->s[lx->r++];
        } else if (c == '\'') {
            return resp_lex_closed(lx);
        }
        lx->s[lx->w++] = c;
    }
    return RK_ESYNTAX;
}

/*
 * One word from a non-blank byte.  A quote anywhere opens a quoted part
 * that ends the word, as in sdssplitargs (`ab"c d"` is the word `abc d`).
 * The blank that ends the word is consumed, which is what keeps w < r and
 * leaves room for the NUL.
 */
static int resp_lex_word(struct resp_lex *lx)
{
    while (lx->r < lx->n) {
        uint8_t c = lx->s[lx->r++];
        if (resp_is_blank(c)) {
            return 0;
        }
        if (c == '"') {
            return resp_lex_dquote(lx);
        }
        if (c == '\'') {
            return resp_lex_squote(lx);
        }
        lx->s[lx->w++] = c;
    }
    return 0;
}

/* Split the first n arena bytes into arguments; the arena has a spare byte past n. */
static int resp_inline_split(struct resp_cmd *c, size_t n)
{
    struct resp_lex lx = {c->arena, n, 0, 0};
    size_t start;
    int rc;

    for (;;) {
        while (lx.r < lx.n && resp_is_blank(lx.s[lx.r])) {
            lx.r++;
        }
        if (lx.r == lx.n) {
            break;
        }
        start = lx.w;
        rc = resp_lex_word(&lx);
        if (rc == 0) {
            rc = resp_cmd_push(c, lx.w - start);
        }
        if (rc != 0) {
            return rc;
        }
        lx.s[lx.w++] = '\0';
    }
    c->arena_len = lx.w;
    return 0;
}

/* --- the request state machine ------------------------------------------- */

static enum resp_status resp_fail(struct resp_parser *p, const char *msg)
{
    p->error = msg;
    p->state = RESP_ST_FAILED;
    resp_cmd_free(p->cur);
    p->cur = NULL;
    return RESP_PROTOCOL_ERROR;
}

/* Redis's "expected '$', got 'x'", with a byte that would not print shown as \xHH. */
static enum resp_status resp_fail_expected(struct resp_parser *p, uint8_t got)
{
    if (got >= 0x20 && got < 0x7f) {
        snprintf(p->error_buf, sizeof(p->error_buf), "Protocol error: expected '$', got '%c'", got);
    } else {
        snprintf(p->error_buf, sizeof(p->error_buf), "Protocol error: expected '$', got '\\x%02x'",
                 got);
    }
    return resp_fail(p, p->error_buf);
}

static const char *resp_header_error(const struct resp_parser *p)
{
    return p->line[0] == '*' ? resp_err_mbulk : resp_err_bulk;
}

static enum resp_status resp_cmd_done(struct resp_parser *p)
{
    resp_cmd_seal(p->cur);
    p->state = RESP_ST_START;
    return RESP_COMMAND;
}

/* An empty request: Redis resets the client and reads on. */
static enum resp_status resp_cmd_skip(struct resp_parser *p)
{
    resp_cmd_reset(p->cur);
    p->state = RESP_ST_START;
    return RESP_NEED_MORE;
}

static enum resp_status resp_step_start(struct resp_parser *p, const uint8_t *in, size_t len,
                                        size_t *pos)
{
    if (p->cur == NULL && p->spare != NULL) {
        p->cur = p->spare;
        p->spare = p->cur->next_spare;
        p->n_spare--;
    } else if (p->cur == NULL) {
        p->cur = calloc(1, sizeof(*p->cur));
        if (p->cur == NULL) {
            return resp_fail(p, resp_err_nomem);
        }
    }
    if (in[*pos] != '*') {
        p->state = RESP_ST_INLINE;
        return RESP_NEED_MORE;
    }
    p->line[0] = '*';
    p->line_len = 1;
    p->state = RESP_ST_HEADER;
    (*pos)++;
    return RESP_NEED_MORE;
}

static enum resp_status resp_inline_end(struct resp_parser *p)
{
    struct resp_cmd *c = p->cur;
    size_t n = c->arena_len;
    int rc;

    if (n > 0 && c->arena[n - 1] == '\r') {
        n--;
    }
    rc = resp_inline_split(c, n);
    if (rc != 0) {
        return resp_fail(p, rc == RK_ESYNTAX ? resp_err_quotes : resp_err_nomem);
    }
    if (c->argc == 0) {
        return resp_cmd_skip(p);
    }
    c->is_inline = true;
    return resp_cmd_done(p);
}

/*
 * Collect the line up to its LF.  The bytes before the LF (a CR included)
 * count against inline_max as they arrive, as Redis counts a buffered line
 * that has no LF yet.
 */
static enum resp_status resp_step_inline(struct resp_parser *p, const uint8_t *in, size_t len,
                                         size_t *pos)
{
    struct resp_cmd *c = p->cur;
    const uint8_t *nl = memchr(in + *pos, '\n', len - *pos);
    size_t take = nl != NULL ? (size_t)(nl - (in + *pos)) : len - *pos;
    size_t left = p->lim.inline_max - c->arena_len;

    if (take > left) {
        *pos += left;
        return resp_fail(p, resp_err_inline);
    }
    if (resp_arena_reserve(c, take + 1, left + 1) != 0) {
        return resp_fail(p, resp_err_nomem);
    }
    memcpy(c->arena + c->arena_len, in + *pos, take);
    c->arena_len += take;
    *pos += take;
    if (nl == NULL) {
        return RESP_NEED_MORE;
    }
    (*pos)++;
    return resp_inline_end(p);
}

static enum resp_status resp_step_header(struct resp_parser *p, const uint8_t *in, size_t len,
                                         size_t *pos)
{
    if (p->line_len == 0) {
        if (in[*pos] != '$') {
            return resp_fail_expected(p, in[*pos]);
        }
        p->line[p->line_len++] = '$';
        (*pos)++;
    }
    while (*pos < len && in[*pos] != '\r') {
        if (p->line_len == sizeof(p->line)) {
            return resp_fail(p, resp_header_error(p));
        }
        p->line[p->line_len++] = in[(*pos)++];
    }
    if (*pos < len) {
        (*pos)++;
        p->state = RESP_ST_HEADER_LF;
    }
    return RESP_NEED_MORE;
}

/*
 * `*<n>`: `*0` and `*-1` (the null array) are empty requests, skipped as
 * Redis skips them.  Any other negative count is malformed; Redis skips it
 * too, but a client that sends one is broken, and an error tells it so.
 * More than multibulk_max is an error.
 */
static enum resp_status resp_on_count(struct resp_parser *p, int64_t n)
{
    if (n < -1) {
        return resp_fail(p, resp_err_mbulk);
    }
    if (n <= 0) {
        return resp_cmd_skip(p);
    }
    if ((uint64_t)n > p->lim.multibulk_max) {
        return resp_fail(p, resp_err_mbulk);
    }
    p->want_args = (size_t)n;
    p->line_len = 0;
    p->state = RESP_ST_HEADER;
    return RESP_NEED_MORE;
}

/*
 * `$<n>`, n already checked against bulk_hard_max.  Over bulk_max the
 * argument is skipped and stands in argv as an empty one; otherwise up to
 * RESP_BULK_PREALLOC of it is reserved, plus its NUL.
 */
static enum resp_status resp_on_bulk(struct resp_parser *p, int64_t n)
{
    struct resp_cmd *c = p->cur;
    bool skip = (uint64_t)n > p->lim.bulk_max;
    size_t keep = skip ? 0 : (size_t)n;

    if (resp_cmd_push(c, keep) != 0 ||
        resp_arena_reserve(c, resp_min(keep, RESP_BULK_PREALLOC) + 1, keep + 1) != 0) {
        return resp_fail(p, resp_err_nomem);
    }
    if (skip && !c->too_big) {
        c->too_big = true;
        c->too_big_len = (size_t)n;
    }
    p->discarding = skip ? (size_t)n : 0;
    p->want_bytes = keep + 2;
    p->line_len = 0;
    p->state = RESP_ST_BULK;
    return RESP_NEED_MORE;
}

static enum resp_status resp_step_header_lf(struct resp_parser *p, const uint8_t *in, size_t len,
                                            size_t *pos)
{
    int64_t n;

    if (in[*pos] != '\n' || !resp_parse_i64(p->line + 1, p->line_len - 1, &n)) {
        return resp_fail(p, resp_header_error(p));
    }
    (*pos)++;
    if (p->line[0] == '*') {
        return resp_on_count(p, n);
    }
    if (n < 0 || (uint64_t)n > p->lim.bulk_hard_max) {
        return resp_fail(p, resp_err_bulk);
    }
    return resp_on_bulk(p, n);
}

static enum resp_status resp_bulk_copy(struct resp_parser *p, const uint8_t *src, size_t avail,
                                       size_t *pos)
{
    struct resp_cmd *c = p->cur;
    size_t rest = p->want_bytes - 2;
    size_t k = resp_min(avail, rest);

    if (resp_arena_reserve(c, k + 1, rest + 1) != 0) {
        return resp_fail(p, resp_err_nomem);
    }
    memcpy(c->arena + c->arena_len, src, k);
    c->arena_len += k;
    p->want_bytes -= k;
    *pos += k;
    return RESP_NEED_MORE;
}

/* One byte of the CRLF after a bulk; the last one completes the argument. */
static enum resp_status resp_bulk_crlf(struct resp_parser *p, uint8_t byte, size_t *pos)
{
    struct resp_cmd *c = p->cur;

    if (byte != (p->want_bytes == 2 ? '\r' : '\n')) {
        return resp_fail(p, resp_err_crlf);
    }
    (*pos)++;
    if (--p->want_bytes > 0) {
        return RESP_NEED_MORE;
    }
    c->arena[c->arena_len++] = '\0';
    if (--p->want_args > 0) {
        p->state = RESP_ST_HEADER;
        return RESP_NEED_MORE;
    }
    return resp_cmd_done(p);
}

static enum resp_status resp_step_bulk(struct resp_parser *p, const uint8_t *in, size_t len,
                                       size_t *pos)
{
    size_t avail = len - *pos;
    size_t k;

    if (p->discarding > 0) {
        k = resp_min(avail, p->discarding);
        p->discarding -= k;
        *pos += k;
        return RESP_NEED_MORE;
    }
    if (p->want_bytes > 2) {
        return resp_bulk_copy(p, in + *pos, avail, pos);
    }
    return resp_bulk_crlf(p, in[*pos], pos);
}

static enum resp_status resp_step_failed(struct resp_parser *p, const uint8_t *in, size_t len,
                                         size_t *pos)
{
    return RESP_PROTOCOL_ERROR;
}

static const resp_step_fn resp_steps[] = {
    [RESP_ST_START] = resp_step_start,   [RESP_ST_INLINE] = resp_step_inline,
    [RESP_ST_HEADER] = resp_step_header, [RESP_ST_HEADER_LF] = resp_step_header_lf,
    [RESP_ST_BULK] = resp_step_bulk,     [RESP_ST_FAILED] = resp_step_failed,
};

void resp_parser_init(struct resp_parser *p, const struct resp_limits *lim)
{
    static const struct resp_limits redis = {
        .multibulk_max = RESP_MULTIBULK_MAX_DEFAULT,
        .bulk_max = RESP_BULK_HARD_MAX_DEFAULT,
        .bulk_hard_max = RESP_BULK_HARD_MAX_DEFAULT,
        .inline_max = RESP_INLINE_MAX_DEFAULT,
    };

    memset(p, 0, sizeof(*p));
    p->lim = lim != NULL ? *lim : redis;
    p->state = RESP_ST_START;
}

void resp_parser_deinit(struct resp_parser *p)
{
    resp_cmd_free(p->cur);
    while (p->spare != NULL) {
        struct resp_cmd *next = p->spare->next_spare;
        resp_cmd_free(p->spare);
        p->spare = next;
    }
    p->cur = NULL;
    p->n_spare = 0;
}

enum resp_status resp_parse(struct resp_parser *p, const uint8_t *in, size_t len, size_t *used,
                            struct resp_cmd **out)
{
    enum resp_status st = RESP_NEED_MORE;
    size_t pos = 0;

    *out = NULL;
    if (p->state == RESP_ST_FAILED) {
        st = RESP_PROTOCOL_ERROR;
    }
    while (st == RESP_NEED_MORE && pos < len) {
        st = resp_steps[p->state](p, in, len, &pos);
    }
    *used = pos;
    if (st == RESP_COMMAND) {
        *out = p->cur;
        p->cur = NULL;
    }
    return st;
}

/* --- reply encoders ------------------------------------------------------ */

static void resp_check_proto(int proto)
{
    assert((proto == 2 || proto == 3) && "resp_put_*: proto must be 2 or 3");
}

/* Why buf_reserve(b, n) failed: the cap, or memory. */
static int resp_reserve_error(const struct buf *b, size_t n)
{
    return b->max != 0 && (n > b->max || b->len > b->max - n) ? RK_ETOOBIG : RK_ENOMEM;
}

/* Cut b back to mark, undoing the first parts of an item whose later part failed. */
static int resp_rollback(struct buf *b, size_t mark, int rc)
{
    b->len = mark;
    return rc;
}

/* <type><text>\r\n with every CR or LF of the text written as a space. */
static int resp_put_line(struct buf *b, uint8_t type, const char *s, size_t n)
{
    uint8_t *w;

    if (n > SIZE_MAX - 3) {
        return RK_ETOOBIG;
    }
    w = buf_reserve(b, n + 3);
    if (w == NULL) {
        return resp_reserve_error(b, n + 3);
    }
    w[0] = type;
    for (size_t i = 0; i < n; i++) {
        w[1 + i] = s[i] == '\r' || s[i] == '\n' ? ' ' : (uint8_t)s[i];
    }
    w[n + 1] = '\r';
    w[n + 2] = '\n';
    buf_commit(b, n + 3);
    return 0;
}

/*
 * <type><n>\r\n, for lengths and counts: written by hand, because every
 * reply header goes through here and printf's parsing showed in profiles
 * of pipelined GETs.
 */
static int resp_put_len(struct buf *b, char type, size_t n)
{
    char digits[20], h[RESP_NUMBER_CHARS];
    size_t d = 0, k = 0;

    do {
        digits[d++] = (char)('0' + n % 10);
        n /= 10;
    } while (n != 0);
    h[k++] = type;
    while (d > 0) {
        h[k++] = digits[--d];
    }
    h[k++] = '\r';
    h[k++] = '\n';
    return buf_append(b, h, k);
}

int resp_put_simple(struct buf *b, const char *s)
{
    return resp_put_line(b, '+', s, strlen(s));
}

int resp_put_error(struct buf *b, const char *msg)
{
    return resp_put_line(b, '-', msg, strlen(msg));
}

int resp_put_errorf(struct buf *b, const char *fmt, ...)
{
    char stack[RESP_ERRORF_STACK];
    char *msg = stack;
    va_list ap;
    int n, rc;

    va_start(ap, fmt);
    n = vsnprintf(stack, sizeof(stack), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return RK_EINVAL;
    }
    if ((size_t)n >= sizeof(stack)) {
        msg = malloc((size_t)n + 1);
        if (msg == NULL) {
            return RK_ENOMEM;
        }
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    rc = resp_put_line(b, '-', msg, (size_t)n);
    if (msg != stack) {
        free(msg);
    }
    return rc;
}

int resp_put_int(struct buf *b, int64_t v)
{
    char h[RESP_NUMBER_CHARS];
    int k = snprintf(h, sizeof(h), ":%" PRId64 "\r\n", v);

    return buf_append(b, h, (size_t)k);
}

int resp_put_bulk(struct buf *b, const void *p, size_t len)
{
    size_t mark = b->len;
    int rc = resp_put_len(b, '$', len);

    if (rc == 0) {
        rc = buf_append(b, p, len);
    }
    if (rc == 0) {
        rc = buf_append(b, "\r\n", 2);
    }
    return rc == 0 ? 0 : resp_rollback(b, mark, rc);
}

int resp_put_bulk_str(struct buf *b, const char *s)
{
    return resp_put_bulk(b, s, strlen(s));
}

int resp_put_null(struct buf *b, int proto)
{
    resp_check_proto(proto);
    return proto == 3 ? buf_append(b, "_\r\n", 3) : buf_append(b, "$-1\r\n", 5);
}

int resp_put_array(struct buf *b, size_t n)
{
    return resp_put_len(b, '*', n);
}

int resp_put_map(struct buf *b, size_t n, int proto)
{
    resp_check_proto(proto);
    if (proto == 3) {
        return resp_put_len(b, '%', n);
    }
    if (n > SIZE_MAX / 2) {
        return RK_ERANGE;
    }
    return resp_put_len(b, '*', 2 * n);
}

int resp_put_set(struct buf *b, size_t n, int proto)
{
    resp_check_proto(proto);
    return resp_put_len(b, proto == 3 ? '~' : '*', n);
}

int resp_put_bool(struct buf *b, bool v, int proto)
{
    resp_check_proto(proto);
    if (proto == 3) {
        return buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
    }
    return buf_append(b, v ? ":1\r\n" : ":0\r\n", 4);
}

/*
 * The shortest %g form that reads back as v (what Redis 7.2's fpconv
 * writes, and short for the usual values: 1.5, not 1.5000000000000000);
 * %.17g always reads back.  Infinities and NaN in RESP3's spelling.
 */
static size_t resp_double_text(double v, char out[RESP_NUMBER_CHARS])
{
    const char *word = isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
    int n = 0;

    if (!isfinite(v)) {
        strcpy(out, word);
        return strlen(word);
    }
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(out, RESP_NUMBER_CHARS, "%.*g", prec, v);
        if (strtod(out, NULL) == v) {
            break;
        }
    }
    return (size_t)n;
}

int resp_put_double(struct buf *b, double v, int proto)
{
    char text[RESP_NUMBER_CHARS];
    size_t n = resp_double_text(v, text);
    size_t mark = b->len;
    int rc;

    resp_check_proto(proto);
    if (proto == 2) {
        return resp_put_bulk(b, text, n);
    }
    rc = buf_append(b, ",", 1);
    if (rc == 0) {
        rc = buf_append(b, text, n);
    }
    if (rc == 0) {
        rc = buf_append(b, "\r\n", 2);
    }
    return rc == 0 ? 0 : resp_rollback(b, mark, rc);
}

int resp_put_verbatim(struct buf *b, const void *p, size_t len, int proto)
{
    size_t mark = b->len;
    int rc;

    resp_check_proto(proto);
    if (proto == 2) {
        return resp_put_bulk(b, p, len);
    }
    if (len > SIZE_MAX - 4) {
        return RK_ETOOBIG;
    }
    rc = resp_put_len(b, '=', len + 4);
    if (rc == 0) {
        rc = buf_append(b, "txt:", 4);
    }
    if (rc == 0) {
        rc = buf_append(b, p, len);
    }
    if (rc == 0) {
        rc = buf_append(b, "\r\n", 2);
    }
    return rc == 0 ? 0 : resp_rollback(b, mark, rc);
}

int resp_put_command(struct buf *b, size_t argc, const char *const *argv, const size_t *lens)
{
    size_t mark = b->len;
    int rc = resp_put_array(b, argc);

    for (size_t i = 0; i < argc && rc == 0; i++) {
        rc = resp_put_bulk(b, argv[i], lens != NULL ? lens[i] : strlen(argv[i]));
    }
    return rc == 0 ? 0 : resp_rollback(b, mark, rc);
}

/* --- reply parser -------------------------------------------------------- */

struct reply_cur {
    const uint8_t *in;
    size_t len, pos;
    size_t max_bulk;
    bool build; /* second pass: allocate and fill the tree */
};

/* Read the value after its type byte into r: 1 done, 0 incomplete, or an error. */
typedef int (*reply_read_fn)(struct reply_cur *c, struct resp_reply *r, unsigned depth);

static int reply_read_value(struct reply_cur *c, struct resp_reply *r, unsigned depth);

/*
 * The line at the cursor, up to its CRLF.  A line with no CR within max
 * bytes is too_long; a CR not followed by LF is malformed.
 */
static int reply_line(struct reply_cur *c, size_t max, int too_long, const uint8_t **s, size_t *n)
{
    size_t avail = c->len - c->pos;
    size_t look = avail > max ? max + 1 : avail;
    const uint8_t *cr = memchr(c->in + c->pos, '\r', look);

    if (cr == NULL) {
        return avail > max ? too_long : 0;
    }
    if (cr + 1 == c->in + c->len) {
        return 0;
    }
    if (cr[1] != '\n') {
        return RK_ESYNTAX;
    }
    *s = c->in + c->pos;
    *n = (size_t)(cr - *s);
    c->pos += *n + 2;
    return 1;
}

static int reply_number(struct reply_cur *c, int64_t *v)
{
    const uint8_t *s;
    size_t n;
    int rc = reply_line(c, RESP_NUMBER_LINE_MAX, RK_ESYNTAX, &s, &n);

    if (rc <= 0) {
        return rc;
    }
    return resp_parse_i64(s, n, v) ? 1 : RK_ESYNTAX;
}

/* Copy a string into r, in the building pass. */
static int reply_keep(struct reply_cur *c, struct resp_reply *r, const uint8_t *s, size_t n)
{
    if (!c->build) {
        return 1;
    }
    r->str = malloc(n + 1);
    if (r->str == NULL) {
        return RK_ENOMEM;
    }
    memcpy(r->str, s, n);
    r->str[n] = '\0';
    r->len = n;
    return 1;
}

/* `+` and `-`: a line of text, bounded by max_bulk. */
static int reply_read_text(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    const uint8_t *s;
    size_t n;
    int rc = reply_line(c, c->max_bulk, RK_ETOOBIG, &s, &n);

    return rc <= 0 ? rc : reply_keep(c, r, s, n);
}

static int reply_read_int(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    return reply_number(c, &r->integer);
}

/* `(`: an optional '-' and at least one digit, kept as text. */
static int reply_read_bignum(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    const uint8_t *s;
    size_t n, i;
    int rc = reply_line(c, c->max_bulk, RK_ETOOBIG, &s, &n);

    if (rc <= 0) {
        return rc;
    }
    i = n > 0 && s[0] == '-' ? 1 : 0;
    if (i == n) {
        return RK_ESYNTAX;
    }
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return RK_ESYNTAX;
        }
    }
    return reply_keep(c, r, s, n);
}

static int reply_read_null(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    const uint8_t *s;
    size_t n;
    int rc = reply_line(c, RESP_NUMBER_LINE_MAX, RK_ESYNTAX, &s, &n);

    return rc <= 0 ? rc : n == 0 ? 1 : RK_ESYNTAX;
}

static int reply_read_bool(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    const uint8_t *s;
    size_t n;
    int rc = reply_line(c, RESP_NUMBER_LINE_MAX, RK_ESYNTAX, &s, &n);

    if (rc <= 0) {
        return rc;
    }
    if (n != 1 || (s[0] != 't' && s[0] != 'f')) {
        return RK_ESYNTAX;
    }
    r->integer = s[0] == 't';
    return 1;
}

/* RESP3's spellings of the values strtod must not be asked about (it takes "infinity", hex). */
static bool reply_double_special(const char *text, double *v)
{
    static const struct {
        const char *text;
        double v;
    } special[] = {
        {"inf", INFINITY}, {"+inf", INFINITY}, {"-inf", -INFINITY}, {"nan", NAN}, {"-nan", NAN}};

    for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
        if (strcmp(text, special[i].text) == 0) {
            *v = special[i].v;
            return true;
        }
    }
    return false;
}

static int reply_read_double(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    char text[RESP_DOUBLE_CHARS_MAX + 1];
    const uint8_t *s;
    char *end;
    size_t n;
    int rc = reply_line(c, RESP_DOUBLE_CHARS_MAX, RK_ESYNTAX, &s, &n);

    if (rc <= 0) {
        return rc;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    if (reply_double_special(text, &r->dbl)) {
        return 1;
    }
    if (n == 0 || strspn(text, "0123456789+-.eE") != n) {
        return RK_ESYNTAX;
    }
    r->dbl = strtod(text, &end);
    return end == text + n ? 1 : RK_ESYNTAX;
}

/* `$`, `!` and `=`: a length, that many bytes, CRLF.  `$-1` is RESP2's null. */
static int reply_read_blob(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    const uint8_t *s;
    int64_t v;
    size_t n;
    int rc = reply_number(c, &v);

    if (rc <= 0) {
        return rc;
    }
    if (v == -1 && r->type == RESP_T_BULK) {
        r->type = RESP_T_NULL;
        return 1;
    }
    if (v < 0) {
        return RK_ESYNTAX;
    }
    if ((uint64_t)v > c->max_bulk) {
        return RK_ETOOBIG;
    }
    n = (size_t)v;
    if (c->len - c->pos < 2 || c->len - c->pos - 2 < n) {
        return 0;
    }
    s = c->in + c->pos;
    if (s[n] != '\r' || s[n + 1] != '\n') {
        return RK_ESYNTAX;
    }
    c->pos += n + 2;
    if (r->type != RESP_T_VERBATIM) {
        return reply_keep(c, r, s, n);
    }
    if (n < 4 || s[3] != ':') {
        return RK_ESYNTAX;
    }
    return reply_keep(c, r, s + 4, n - 4);
}

static int reply_read_elems(struct reply_cur *c, struct resp_reply *r, size_t count, unsigned depth)
{
    struct resp_reply scratch;
    struct resp_reply *e = &scratch;
    int rc;

    if (c->build && count > 0) {
        r->elem = calloc(count, sizeof(*r->elem));
        if (r->elem == NULL) {
            return RK_ENOMEM;
        }
    }
    for (size_t i = 0; i < count; i++) {
        memset(&scratch, 0, sizeof(scratch));
        if (c->build) {
            e = r->elem[i] = calloc(1, sizeof(*e));
        }
        if (e == NULL) {
            return RK_ENOMEM;
        }
        rc = reply_read_value(c, e, depth);
        if (rc <= 0) {
            return rc;
        }
    }
    return 1;
}

/*
 * `*`, `%`, `~`, `>` (and `|`, read the same way and dropped).  The count
 * is checked against the bound, the depth against its bound, and against
 * the bytes present: fewer than RESP_ELEMENT_BYTES_MIN per element means
 * the reply cannot be complete yet, so nothing is allocated for it.
 */
static int reply_read_agg(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    size_t per = r->type == RESP_T_MAP ? 2 : 1;
    int64_t v;
    size_t count;
    int rc = reply_number(c, &v);

    if (rc <= 0) {
        return rc;
    }
    if (v == -1 && r->type == RESP_T_ARRAY) {
        r->type = RESP_T_NULL;
        return 1;
    }
    if (v < 0) {
        return RK_ESYNTAX;
    }
    if ((uint64_t)v > RESP_REPLY_ELEMENTS_MAX / per || depth >= RESP_REPLY_DEPTH_MAX) {
        return RK_ETOOBIG;
    }
    count = (size_t)v * per;
    if (count > (c->len - c->pos) / RESP_ELEMENT_BYTES_MIN) {
        return 0;
    }
    r->n = (size_t)v;
    return reply_read_elems(c, r, count, depth + 1);
}

/* Attributes before a value: checked like a map, never built. */
static int reply_skip_attributes(struct reply_cur *c, unsigned depth)
{
    bool build = c->build;
    int rc = 1;

    while (rc == 1 && c->pos < c->len && c->in[c->pos] == '|') {
        struct resp_reply attrs = {.type = RESP_T_MAP};
        c->pos++;
        c->build = false;
        rc = reply_read_agg(c, &attrs, depth);
        c->build = build;
    }
    return rc;
}

static const struct reply_kind {
    enum resp_type type;
    reply_read_fn read;
} reply_kinds[256] = {
    ['+'] = {RESP_T_SIMPLE, reply_read_text},   ['-'] = {RESP_T_ERROR, reply_read_text},
    [':'] = {RESP_T_INT, reply_read_int},       ['$'] = {RESP_T_BULK, reply_read_blob},
    ['!'] = {RESP_T_ERROR, reply_read_blob},    ['='] = {RESP_T_VERBATIM, reply_read_blob},
    ['_'] = {RESP_T_NULL, reply_read_null},     ['#'] = {RESP_T_BOOL, reply_read_bool},
    [','] = {RESP_T_DOUBLE, reply_read_double}, ['('] = {RESP_T_BIGNUM, reply_read_bignum},
    ['*'] = {RESP_T_ARRAY, reply_read_agg},     ['%'] = {RESP_T_MAP, reply_read_agg},
    ['~'] = {RESP_T_SET, reply_read_agg},       ['>'] = {RESP_T_PUSH, reply_read_agg},
};

static int reply_read_value(struct reply_cur *c, struct resp_reply *r, unsigned depth)
{
    const struct reply_kind *k;
    int rc = reply_skip_attributes(c, depth);

    if (rc <= 0) {
        return rc;
    }
    if (c->pos == c->len) {
        return 0;
    }
    k = &reply_kinds[c->in[c->pos]];
    if (k->read == NULL) {
        return RK_ESYNTAX;
    }
    c->pos++;
    r->type = k->type;
    return k->read(c, r, depth);
}

int resp_reply_parse(const uint8_t *in, size_t len, size_t max_bulk, size_t *used,
                     struct resp_reply **out)
{
    struct reply_cur c = {in, len, 0, max_bulk, false};
    struct resp_reply scratch = {0};
    struct resp_reply *r;
    size_t end;
    int rc;

    *out = NULL;
    *used = 0;
    rc = reply_read_value(&c, &scratch, 0);
    if (rc <= 0) {
        return rc;
    }
    end = c.pos;
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return RK_ENOMEM;
    }
    c = (struct reply_cur){in, len, 0, max_bulk, true};
    rc = reply_read_value(&c, r, 0);
    if (rc < 0) {
        resp_reply_free(r);
        return rc;
    }
    assert(rc == 1 && c.pos == end && "resp_reply_parse: the two passes disagree");
    *used = end;
    *out = r;
    return 1;
}

void resp_reply_free(struct resp_reply *r)
{
    size_t count;

    if (r == NULL) {
        return;
    }
    if (r->elem != NULL) {
        count = r->type == RESP_T_MAP ? 2 * r->n : r->n;
        for (size_t i = 0; i < count; i++) {
            resp_reply_free(r->elem[i]);
        }
        free(r->elem);
    }
    free(r->str);
    free(r);
}
