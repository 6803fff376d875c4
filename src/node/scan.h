/*
 * scan.h - SCAN, KEYS and DBSIZE over this node's own keys.
 *
 * These commands read the local store, not the cluster: with replication
 * each node holds the keys of its arcs, and a client that wants them all
 * scans every node, as a Redis Cluster client scans one node at a time.
 *
 * The SCAN cursor is a ring position.  The store orders keys by position
 * (storage key = 8-byte position || key), and a cursor c means "resume at
 * the first key whose position is >= c"; 0 starts a scan and, returned,
 * ends it.  A call stops only between two positions: every key sharing
 * the position of the last key it visited is visited in the same call (in
 * one read transaction), so keys whose positions collide are never split
 * across calls, and a call may visit a few more keys than COUNT.  So a key
 * present for the whole scan is returned exactly once, whatever is written
 * meanwhile; a key written during the scan is returned or not depending
 * on its position.  COUNT (default 10, at most SCAN_COUNT_MAX) is the
 * number of stored keys a call visits (tombstones included, as Redis's
 * COUNT counts slots visited), so a call may return fewer keys, or none,
 * with a non-zero cursor.  Deleted keys (tombstones) are never returned.
 * MATCH filters by Redis's glob (glob.h), TYPE by type: every key is a
 * "string"; another type name returns no key.
 *
 * KEYS answers at once or refuses: past SCAN_KEYS_MAX stored keys it is an
 * error that points to SCAN, so one command never holds the event loop
 * for long.  DBSIZE counts live keys (not tombstones) by a scan of the
 * store: its cost grows with the keys stored.
 */
#ifndef RINGKV_SCAN_H
#define RINGKV_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct pending;

/* Stored keys KEYS visits at most before refusing; and SCAN's largest COUNT. */
#define SCAN_KEYS_MAX 100000
#define SCAN_COUNT_MAX SCAN_KEYS_MAX
#define SCAN_COUNT_DEFAULT 10
/* Digits of a cursor: a u64 in decimal, with its NUL. */
#define SCAN_CURSOR_TEXT 21

/*
 * A cursor argument as Redis reads one (strtoul()): decimal digits, at most
 * 2^64-1, with an optional sign, a minus counting back from 2^64 ("-1" is
 * 2^64-1); RK_ESYNTAX otherwise (blanks, other bytes, a larger number).
 */
int scan_cursor_parse(const char *s, size_t len, uint64_t *pos);

/* The cursor a call returns: next (the first position not visited), or 0 when done. */
void scan_cursor_format(uint64_t next, bool done, char out[SCAN_CURSOR_TEXT]);

/* The arc (start, end] of store_scan() that begins at position pos: all of it from 0. */
void scan_cursor_arc(uint64_t pos, uint64_t *start, uint64_t *end);

int scan_cmd_scan(struct client *c, struct pending *p);
int scan_cmd_keys(struct client *c, struct pending *p);
int scan_cmd_dbsize(struct client *c, struct pending *p);

#endif
