/*
 * log.h - the one logger: one line per event on stderr, key=value fields.
 *
 *   ts=2026-11-29T15:04:05.123Z level=info node=n1 event=listen proto=resp addr=127.0.0.1:7370
 *
 * Every line has ts (UTC, milliseconds), level, node and a stable event
 * name that tests and teaching material grep for; the caller adds the
 * fields of the event, naming the peer as peer=... where there is one.
 * Values that may hold spaces or quotes go through log_quote().  The level
 * is checked before the arguments are evaluated (LOG is a macro for that
 * reason only; it never returns from its caller).
 */
#ifndef RINGKV_LOG_H
#define RINGKV_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"

enum log_level {
    LOG_DEBUG,
    LOG_INFO,
    LOG_WARN,
    LOG_ERROR,
};

extern enum log_level log_threshold;

/*
 * Longest node id printed whole (a node id is at most 64 bytes, ring.h's
 * RING_NAME_MAX, which the node checks against this); a longer one is cut.
 */
#define LOG_NODE_ID_MAX 64

/* Set the node id printed on every line (copied) and where lines go (stderr when NULL). */
void log_init(const char *node_id, FILE *out);
void log_set_level(enum log_level level);
/* Parse "debug", "info", "warn" or "error". Returns 0 or RK_EINVAL. */
int log_level_parse(const char *s, enum log_level *out);
const char *log_level_name(enum log_level level);

/* Write one line; fmt gives the fields after event=..., e.g. "peer=%s reason=%s". */
void log_emit(enum log_level level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define LOG(level, event, ...)                                                                     \
    do {                                                                                           \
        if ((level) >= log_threshold) {                                                            \
            log_emit((level), (event), __VA_ARGS__);                                               \
        }                                                                                          \
    } while (0)

/*
 * A throttle for one kind of event that an outsider can make happen at
 * will (refused connections, failed handshakes, wrong passwords, accept
 * failures): at most one line per LOG_LIMIT_INTERVAL_MS, and the line
 * that goes says how many were held back since the last one
 * ("suppressed=N").  Zero-initialise one per event kind, in the struct
 * that owns the events or as a static at the call site; used from one
 * thread (the event loop).
 */
struct log_limit {
    uint64_t next_ms;    /* monotonic time from which the next line may go */
    uint64_t suppressed; /* lines held back since the last one went */
};

/* One line a second: what a person reading the log needs, and ~86 K lines a day at worst. */
#define LOG_LIMIT_INTERVAL_MS 1000

/*
 * Whether a line may go at now_ms (monotonic milliseconds).  When it may,
 * *suppressed gets the lines held back since the last one and the count
 * restarts; when not, the held-back count grows.
 */
bool log_limit_take(struct log_limit *l, uint64_t now_ms, uint64_t *suppressed);

/* LOG through a struct log_limit; fmt (a literal) gets " suppressed=N" appended. */
#define LOG_LIMITED(limit, level, event, fmt, ...)                                                 \
    do {                                                                                           \
        uint64_t log_held_;                                                                        \
        if ((level) >= log_threshold && log_limit_take((limit), clock_mono_ms(), &log_held_)) {    \
            log_emit((level), (event), fmt " suppressed=%llu", __VA_ARGS__,                        \
                     (unsigned long long)log_held_);                                               \
        }                                                                                          \
    } while (0)

/*
 * A value made safe for a log field: returned as is when it has no space,
 * quote, '=' or control byte, otherwise quoted with escapes, truncated to
 * fit buf.  Returns buf or s.
 */
const char *log_quote(char *buf, size_t cap, const char *s, size_t len);

#endif
