#!/bin/sh
# The store seen from a node: a delete's tombstone is collected after
# tombstone-grace on a single-node cluster (DBSIZE, which counts tombstones,
# drops, and INFO counts it), and KSET with a context built by hand, naming
# versions this node's actor never issued, is refused with a clear error
# (a client context must carry the tag KGET gives it, src/node/commands.c),
# leaving the key as it was and writable.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

it_node n1 --rf 1 --r 1 --w 1 --tombstone-grace 1s
it_wait_ping n1

it_expect_eq "SET a" "$(it_cli n1 SET a 1)" "OK"
it_expect_eq "SET b" "$(it_cli n1 SET b 2)" "OK"
it_expect_eq "DEL a" "$(it_cli n1 DEL a)" "1"
it_expect_eq "DBSIZE counts live keys, not the tombstone" "$(it_cli n1 DBSIZE)" "1"
collected() {
    it_cli n1 INFO persistence | tr -d '\r' | grep -qx "ringkv_tombstones_collected:$1"
}
IT_WAIT=20 it_wait collected 1 || it_fail "the tombstone of a was not collected"
it_expect_eq "DBSIZE after collection" "$(it_cli n1 DBSIZE)" "1"
it_expect_eq "GET b survives" "$(it_cli n1 GET b)" "2"
grep -q 'event=tombstones_collected count=1' "$IT_DIR/n1.log" || it_fail "no collection log line"

# The counter of n1's actor (the clock id its writes count under, INFO's
# ringkv_actor) at 2^64-2: one such KSET would leave the key unwritable for good.
# Sent bare, and followed by the tag of b's genuine context.
actor=$(it_cli n1 INFO server | tr -d '\r' | sed -n 's/^ringkv_actor://p')
[ -n "$actor" ] || it_fail "INFO server shows no ringkv_actor"
ctx=0001$(printf '%02x' "${#actor}")$(printf '%s' "$actor" | od -An -tx1 | tr -d ' \n')
ctx=${ctx}fffffffffffffffe0000000000000001
tag=$(it_cli n1 KGET b | tr -d '\r' | head -1)
tag=$(printf '%s' "$tag" | tail -c 32)
for forged in "$ctx" "$ctx$tag"; do
    out=$(it_cli n1 KSET b 3 CONTEXT "$forged" 2>&1)
    it_expect_eq "KSET with an invented context" "$out" \
        "ERR invalid CONTEXT: use the context KGET returned"
done
it_expect_eq "GET b after the refusals" "$(it_cli n1 GET b)" "2"
it_expect_eq "SET b after the refusals" "$(it_cli n1 SET b 4)" "OK"
it_expect_eq "GET b" "$(it_cli n1 GET b)" "4"
it_pass
