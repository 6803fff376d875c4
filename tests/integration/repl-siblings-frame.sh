#!/bin/sh
# A key whose siblings together exceed one frame (issue 12 point 8: "a
# record whose siblings together exceed one frame travels sibling by
# sibling").  Each sibling is within value-max, so each write and each
# hint fits a frame, but a REPLICA_READ answer (and a FORWARD answer, and
# the read repair's REPLICA_WRITE) carries the whole record: rpc_served()
# refuses it as over the frame, the coordinator counts that replica as not
# answering, and every quorum read of the key fails with TRYAGAIN, through
# every node, for as long as the siblings last.
#
# Pass: with value-max 1MB and frame-max 2MB, two concurrent 1 MiB
# versions of one key (written with W 1 on each side of a crash, joined by
# hinted handoff) are both held by every node, KGET at the default r = 2
# returns both through every node, and `ringkv replicas` shows each
# node's copy with both.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
LIMITS="--value-max 1MB --frame-max 2MB"
# shellcheck disable=SC2086 # flags a word each
it_cluster 3 $LIMITS
it_wait_converged

# kset PORT BYTE: KSET big <1 MiB of BYTE> W 1 through the node at PORT (lib.sh)
kset() { it_kset_mib "$1" "$2" 1; }
# siblings ID: how many values KGET big R 1 through node ID returns (its own copy)
siblings() { it_cli "$1" KGET big R 1 | tail -n +2 | grep -c .; }

it_stop n2 KILL
it_stop n3 KILL
[ "$(kset "$N1_CLIENT" A)" = +OK ] || it_fail "KSET big A W 1 through n1 alone"
# n1 keeps version A as a hint for n2 and for n3, written after the reply: kept before it dies
hints_n1() {
    "$RINGKV" -H "127.0.0.1:$N1_CLIENT" hints --json | python3 -c 'import json, sys; j = json.load(sys.stdin)
sys.exit(0 if sum(t["hints"] for n in j["nodes"] for t in n["targets"]) >= 2 else 1)'
}
it_wait hints_n1 || it_fail "n1 did not keep version A as hints for n2 and n3"
it_stop n1 KILL
# shellcheck disable=SC2086
it_node n2 --rack r2 --seeds "127.0.0.1:$N3_PEER" $LIMITS
# shellcheck disable=SC2086
it_node n3 --rack r3 --seeds "127.0.0.1:$N2_PEER" $LIMITS
it_wait_ping n2
it_wait_ping n3
[ "$(kset "$N2_CLIENT" B)" = +OK ] || it_fail "KSET big B W 1 through n2 with n1 down"
# shellcheck disable=SC2086
it_node n1 --rack r1 --seeds "127.0.0.1:$N2_PEER" $LIMITS
it_wait_ping n1
for n in n1 n2 n3; do
    IT_WAIT=60 it_wait sh -c "[ \"\$(redis-cli -h 127.0.0.1 -p $(it_var "$n" CLIENT) KGET big R 1 | tail -n +2 | grep -c .)\" = 2 ]" ||
        it_fail "$n does not hold both siblings: $(siblings "$n") values"
done
it_log "every node holds both 1 MiB siblings"
for n in n1 n2 n3; do
    got=$(it_cli "$n" KGET big 2>&1 | head -c 200)
    case $got in
    *TRYAGAIN* | *NOREPLICAS* | *ERR*) it_fail "KGET big (r = 2) through $n: $got" ;;
    esac
    [ "$(it_cli "$n" KGET big | tail -n +2 | grep -c .)" = 2 ] || it_fail "KGET big through $n: not 2 values"
done
# ringkv replicas asks each replica for its copy as stored: in parts too
got=$("$RINGKV" -H "127.0.0.1:$N1_CLIENT" replicas --json big | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j["agree"], sorted((r["node"], r["answered"], r["siblings"]) for r in j["replicas"]))')
it_expect_eq "ringkv replicas big: agree, (node, answered, siblings)" "$got" \
    "True [('n1', True, 2), ('n2', True, 2), ('n3', True, 2)]"
it_pass "a record over one frame is read at r = 2 through every node, and inspected"
