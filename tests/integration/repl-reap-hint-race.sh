#!/bin/sh
# A hint a member has been sent but not yet stored counts as held when the
# first replica asks it (HINTS_HELD) before collecting a tombstone.
#
# A REPLICA_WRITE kept as a hint is queued for the store (store_queue())
# and stored at the event loop's prepare step; a HINTS_HELD read in the
# same loop iteration, behind it on the same connection, must not answer
# "no hint": the hint carries a value the tombstone deleted, and delivered
# once the tombstone is collected everywhere it brings that value back.
#
# rf 3, 4 nodes, gossip-interval 1s (a stopped node is seen down after
# some 18 s), request-timeout 60s, tombstone-grace 1s: for a key whose
# replicas are n1 (first), n2, n3:
#   1. n3 is killed; n4 is stopped (SIGSTOP) and still seen up; SET key old
#      through n1 answers OK (n1, n2), and n1 sends the version to n4 as a
#      hint for n3, which n4 does not read yet;
#   2. n3 is restarted (empty of the key), DEL key through n1 writes the
#      tombstone to n1, n2, n3;
#   3. past the grace, n1's collection asks n4 HINTS_HELD, behind the hint on
#      the same connection; n4 is continued and reads both at once;
#   4. once n4 delivered its hint to n3, no node reads "old" and no
#      replica's own copy holds it.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
FLAGS="--gossip-interval 1s --request-timeout 60s --tombstone-grace 1s"

info_field() { it_cli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
field_eq() { [ "$(info_field "$1" "$2" "$3")" = "$4" ]; }
sees() { it_ask state "$2" "$3" "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }
preflist() {
    "$RINGKV" -H "127.0.0.1:$N1_CLIENT" -t 5 preflist --json "$1" | python3 -c '
import json, sys
r = [n for n in json.load(sys.stdin)["replicas"] if n["role"] != "fallback"]
print([n["node"] for n in r if n["role"] == "primary"][0], " ".join(sorted(n["node"] for n in r)))'
}

# shellcheck disable=SC2086 # flags a word each
it_cluster 4 $FLAGS
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 300) it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"

key=""
i=0
while [ $i -lt 200 ] && [ -z "$key" ]; do
    [ "$(preflist "k$i")" = "n1 n1 n2 n3" ] && key=k$i
    i=$((i + 1))
done
[ -n "$key" ] || it_fail "no key of 200 has n1 first and n1, n2, n3 for replicas"
it_log "key $key: n1 first, n2, n3"

kill -9 "$N3_PID"
wait "$N3_PID" 2> /dev/null
kill -STOP "$N4_PID"
hints1=$(info_field n1 cluster ringkv_hints)
it_expect_eq "SET $key old with n3 down, n4 stopped" "$(it_cli n1 SET "$key" old)" OK
# shellcheck disable=SC2086
it_node n3 --rack r3 $FLAGS
it_wait_ping n3
IT_WAIT=30 it_wait sees n1 alive n3 || it_fail "n1 never saw n3 up"
it_expect_eq "DEL $key" "$(it_cli n1 DEL "$key")" 1
for n in n1 n2 n3; do
    it_wait field_eq $n cluster ringkv_tombstones_held 1 ||
        it_fail "$n holds $(info_field $n cluster ringkv_tombstones_held) tombstones, not 1"
done
# several collection passes: n1 asks n4, which does not answer yet
sleep 4
sees n1 alive n4 || it_fail "n1 saw the stopped n4 down: the hint went elsewhere"
it_expect_eq "n1's own hints" "$(info_field n1 cluster ringkv_hints)" "$hints1"
kill -CONT "$N4_PID"
it_log "n4 continued"
IT_WAIT=60 it_wait field_eq n4 cluster ringkv_hints 0 ||
    it_fail "n4 did not deliver its hints: $(info_field n4 cluster ringkv_hints) left"
sleep 3
for n in n1 n2 n3; do
    got=$(it_cli $n KGET "$key" R 1 | tail -n +2)
    case "$got" in *old*) it_fail "$key: $n's own copy is the deleted value 'old' again" ;; esac
done
for n in n1 n2 n3 n4; do
    it_expect_eq "GET $key through $n" "$(it_cli $n GET "$key")" ""
done
it_pass "a hint queued behind HINTS_HELD keeps the tombstone"
