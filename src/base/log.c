/*
 * log.c - the one logger of log.h.
 *
 * A line is
 *
 *   ts=<YYYY-MM-DDTHH:MM:SS.mmmZ> level=<level> node=<id> event=<event>[ <fields>]\n
 *
 * with ts from CLOCK_REALTIME in UTC (logs are for people and log
 * pipelines; nothing measures time with them).  The line is built whole in
 * a buffer on the stack and written with one fwrite() and an fflush():
 * stdio locks the stream for each call, so lines from threads never
 * interleave, and each line has left the process when log_emit() returns.
 * A line is at most LOG_LINE_MAX bytes; a longer one is cut and ends with
 * "...".  Values that may hold anything go through log_quote(); a control
 * byte that reaches a line unquoted anyway is written as '?', so one event
 * is always one line.
 *
 * log_limit_take() throttles an event kind an outsider can repeat at will
 * (log.h): the first line goes, then at most one a second carrying the
 * count of those held back.
 *
 * log_init() and log_set_level() are meant for start-up and for CONFIG SET
 * log-level from the event loop; log_threshold is a plain int that other
 * threads read unlocked, at worst seeing the old level for one line.
 */
#include "log.h"

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "error.h"

/*
 * Longest line: PIPE_BUF (4096 on Linux), so one line written to a pipe
 * is one atomic write even when several processes share that pipe, as the
 * nodes of a testbed share their launcher's stderr.
 */
#define LOG_LINE_MAX PIPE_BUF
/* log_quote() needs room for at least `"..."` and its NUL. */
#define LOG_QUOTE_MIN 6
/* "2026-11-29T15:04:05.123Z" and its NUL. */
#define LOG_TS_LEN 25

enum log_level log_threshold = LOG_INFO;

static const char *const log_level_names[] = {
    [LOG_DEBUG] = "debug",
    [LOG_INFO] = "info",
    [LOG_WARN] = "warn",
    [LOG_ERROR] = "error",
};
#define LOG_LEVELS (sizeof(log_level_names) / sizeof(log_level_names[0]))

/* The node id as printed: quoted when it needs it, "-" until log_init(). */
static char log_node[2 * LOG_NODE_ID_MAX + LOG_QUOTE_MIN] = "-";
static FILE *log_out;

void log_init(const char *node_id, FILE *out)
{
    if (node_id == NULL || node_id[0] == '\0') {
        node_id = "-";
    }
    log_quote(log_node, sizeof(log_node), node_id, strlen(node_id));
    log_out = out;
}

void log_set_level(enum log_level level)
{
    assert((size_t)level < LOG_LEVELS && "log_set_level: not a log level");
    log_threshold = level;
}

int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < LOG_LEVELS; i++) {
        if (strcasecmp(s, log_level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return RK_EINVAL;
}

const char *log_level_name(enum log_level level)
{
    if ((size_t)level >= LOG_LEVELS) {
        return "unknown";
    }
    return log_level_names[level];
}

/* Now, UTC, to the millisecond. */
static void log_timestamp(char out[LOG_TS_LEN])
{
    struct timespec ts;
    struct tm tm;
    char secs[20];
    unsigned ms;

    clock_gettime(CLOCK_REALTIME, &ts);
    ms = (unsigned)(ts.tv_nsec / 1000000) % 1000;
    if (gmtime_r(&ts.tv_sec, &tm) == NULL ||
        strftime(secs, sizeof(secs), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        memcpy(secs, "0000-00-00T00:00:00", sizeof(secs));
    }
    snprintf(out, LOG_TS_LEN, "%s.%03uZ", secs, ms);
}

/* A control byte a caller let through (an unquoted value) becomes '?': a line stays one line. */
static void log_scrub(char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)p[i] < ' ' || p[i] == 0x7f) {
            p[i] = '?';
        }
    }
}

/* Cut a line that did not fit: its last bytes become "...". */
static size_t log_cut(char *line, size_t cap)
{
    memcpy(line + cap - 4, "...", 4);
    return cap - 1;
}

void log_emit(enum log_level level, const char *event, const char *fmt, ...)
{
    char line[LOG_LINE_MAX];
    const size_t cap = sizeof(line) - 1; /* the newline */
    char ts[LOG_TS_LEN];
    FILE *out = log_out != NULL ? log_out : stderr;
    va_list ap;
    int n;
    size_t used;

    assert(event != NULL && fmt != NULL && "log_emit: NULL event or format");
    log_timestamp(ts);
    n = snprintf(line, cap, "ts=%s level=%s node=%s event=%s", ts, log_level_name(level), log_node,
                 event);
    used = (n < 0) ? 0 : (size_t)n >= cap ? log_cut(line, cap) : (size_t)n;
    if (fmt[0] != '\0' && used + 1 < cap) {
        line[used] = ' ';
        va_start(ap, fmt);
        n = vsnprintf(line + used + 1, cap - used - 1, fmt, ap);
        va_end(ap);
        if (n > 0) {
            used = (size_t)n >= cap - used - 1 ? log_cut(line, cap) : used + 1 + (size_t)n;
        }
    }
    log_scrub(line, used);
    line[used++] = '\n';
    fwrite(line, 1, used, out);
    fflush(out);
}

bool log_limit_take(struct log_limit *l, uint64_t now_ms, uint64_t *suppressed)
{
    if (l->next_ms != 0 && now_ms < l->next_ms) {
        l->suppressed++;
        return false;
    }
    *suppressed = l->suppressed;
    l->suppressed = 0;
    l->next_ms = now_ms + LOG_LIMIT_INTERVAL_MS;
    return true;
}

/* A byte that makes a value need quotes: blanks, controls, non-ASCII, '"' and '='. */
static bool log_unsafe(unsigned char ch)
{
    return ch <= ' ' || ch >= 0x7f || ch == '"' || ch == '=';
}

/* The escape of one byte inside quotes into e (at most 4 bytes); returns its length. */
static size_t log_escape(unsigned char ch, char e[5])
{
    static const char digits[] = "0123456789abcdef";

    switch (ch) {
    case '"':
    case '\\':
        e[0] = '\\';
        e[1] = (char)ch;
        return 2;
    case '\n':
        memcpy(e, "\\n", 2);
        return 2;
    case '\t':
        memcpy(e, "\\t", 2);
        return 2;
    case '\r':
        memcpy(e, "\\r", 2);
        return 2;
    default:
        break;
    }
    if (ch < ' ' || ch >= 0x7f) {
        e[0] = '\\';
        e[1] = 'x';
        e[2] = digits[ch >> 4];
        e[3] = digits[ch & 15];
        return 4;
    }
    e[0] = (char)ch;
    return 1;
}

/* s[0..len) as is, cut with "..." when it does not fit. */
static const char *log_copy(char *buf, size_t cap, const char *s, size_t len)
{
    if (len < cap) {
        memcpy(buf, s, len);
        buf[len] = '\0';
        return buf;
    }
    memcpy(buf, s, cap - 4);
    memcpy(buf + cap - 4, "...", 4);
    return buf;
}

/* s[0..len) in quotes with escapes; when it does not fit, cut at an escape, then `..."`. */
static const char *log_quoted(char *buf, size_t cap, const char *s, size_t len)
{
    size_t full = 2;
    size_t used = 1;
    char e[5];

    for (size_t i = 0; i < len; i++) {
        full += log_escape((unsigned char)s[i], e);
    }
    buf[0] = '"';
    for (size_t i = 0; i < len; i++) {
        size_t n = log_escape((unsigned char)s[i], e);
        bool fits = full < cap ? true : used + n + 4 < cap; /* `..."` and NUL after it */
        if (!fits) {
            memcpy(buf + used, "...", 3);
            used += 3;
            break;
        }
        memcpy(buf + used, e, n);
        used += n;
    }
    buf[used++] = '"';
    buf[used] = '\0';
    return buf;
}

/*
 * Always returns buf: s[0..len) need not be NUL-terminated (a key or a
 * peer's bytes), so even a value that needs no quotes is copied.
 */
const char *log_quote(char *buf, size_t cap, const char *s, size_t len)
{
    bool quote = len == 0;

    assert(buf != NULL && cap >= LOG_QUOTE_MIN && "log_quote: buf must hold at least 6 bytes");
    for (size_t i = 0; i < len && !quote; i++) {
        quote = log_unsafe((unsigned char)s[i]);
    }
    if (!quote) {
        return log_copy(buf, cap, s, len);
    }
    return log_quoted(buf, cap, s, len);
}
