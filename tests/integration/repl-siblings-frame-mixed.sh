#!/bin/sh
# A record over one frame between nodes whose frame-max differ: the parts
# a replica answers with, and the bodies a read repair sends, are cut to
# the frame of the node they go to (its IDENT announces it), not to the
# sender's own.  Cut to the sender's, a 2 MiB record from a node with a
# 4MB frame-max is one body, which the sender refuses to send to a node
# whose frame-max is 1200KB (peer_message_over_frame): that replica counts
# as not answering, and a repair never reaches it.
#
# n1 has --frame-max 1200KB, n2 and n3 4MB, all --value-max 1MB.  Version A
# (1 MiB) is written through n1 alone; version B (1 MiB) through n2 with
# n3 while n1 is down; n2 is then killed with its hint for n1, so n1
# holds only A, and n3 both (n1 hands A to n3 when it returns).
#
# Pass: KGET through n3 (r = 2: n3 and n1) returns both, and read repair
# leaves both in n1's own copy (KGET R 1 through n1); then KGET through n1
# (r = 2: n1 and n3, whose 2 MiB copy comes in parts of at most n1's
# frame) returns both, and n3 never tried to send n1 a message over its
# frame.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
SMALL="--value-max 1MB --frame-max 1200KB"
BIG="--value-max 1MB --frame-max 4MB"
it_cluster_frames "$SMALL" "$BIG"

# kset PORT BYTE W: KSET big <1 MiB of BYTE> W w through the node at PORT (lib.sh)
kset() { it_kset_mib "$1" "$2" "$3"; }
values() { it_kget_count "$@"; }

it_stop n2 KILL
it_stop n3 KILL
[ "$(kset "$N1_CLIENT" A 1)" = +OK ] || it_fail "KSET big A W 1 through n1 alone"
it_stop n1 TERM
# shellcheck disable=SC2086
it_node n2 --rack r2 --seeds "127.0.0.1:$N3_PEER" $BIG
# shellcheck disable=SC2086
it_node n3 --rack r3 --seeds "127.0.0.1:$N2_PEER" $BIG
it_wait_ping n2
it_wait_ping n3
kset_b() { [ "$(kset "$N2_CLIENT" B 2)" = +OK ]; }
IT_WAIT=$(it_rounds_s 60) it_wait kset_b || it_fail "KSET big B W 2 through n2 (with n3) while n1 is down"
# n2 keeps B as a hint for n1; it dies with it, so only read repair can bring B to n1
it_stop n2 KILL
# shellcheck disable=SC2086
it_node n1 --rack r1 --seeds "127.0.0.1:$N3_PEER" $SMALL
it_wait_ping n1
# n1 hands A (its hint for n3) to n3
IT_WAIT=60 it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $N3_CLIENT KGET big R 1 | tail -n +2 | grep -c .)\" = 2 ]" ||
    it_fail "n3 does not hold both versions: $(values n3 R 1)"
[ "$(values n1 R 1)" = 1 ] || it_fail "n1's own copy before the repair: $(values n1 R 1), want 1 value"
it_log "n3 holds A and B, n1 only A; n2 is down"

# a read through n3 asks n1 (n2 is down), merges, and repairs n1 with both, cut to n1's frame
IT_WAIT=$(it_rounds_s 60) it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $N3_CLIENT KGET big | tail -n +2 | grep -c .)\" = 2 ]" ||
    it_fail "KGET big through n3: $(values n3)"
IT_WAIT=20 it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $N1_CLIENT KGET big R 1 | tail -n +2 | grep -c .)\" = 2 ]" ||
    it_fail "n1's own copy after a read through n3: $(values n1 R 1) values, want 2 (the read repair did not reach it)"
it_log "a read through n3 returned both and repaired n1 with both"

# a read through n1 takes n3's 2 MiB copy in parts of n1's frame
got=$(values n1)
[ "$got" = 2 ] || it_fail "KGET big (r = 2) through n1: $got"
grep -q peer_message_over_frame "$IT_DIR/n3.log" &&
    it_fail "n3 tried to send n1 a message over n1's frame-max: $(grep peer_message_over_frame "$IT_DIR/n3.log" | head -n 1)"
it_pass "a 2 MiB record goes to a node with a 1200KB frame in parts of its frame: read and repaired"
