#!/bin/sh
# A record over one frame through a forward and a read repair (issue 12
# point 8: "a record whose siblings together exceed one frame travels
# sibling by sibling"), 3 nodes, rf 2, so one node X holds no replica of
# the key "big" and forwards every request for it:
#
#   P and Q, the key's replicas (P first in its preference list), each get
#   one 1 MiB version of big with the other down (W 1; X down too while Q
#   writes, so no hint reaches Q first), and hinted handoff joins them: both hold the two siblings, more than one frame together
#   (value-max 1MB, frame-max 2MB).  Q is then wiped and restarted empty,
#   so only a read repair can give it the siblings again.
#
# Pass: KGET big (r = 2) through X is forwarded to P, which reads both
# replicas, repairs Q (one REPLICA_WRITE per sibling) and answers X in
# parts; X returns both values, and Q's own copy then holds both.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
LIMITS="--value-max 1MB --frame-max 2MB"
# shellcheck disable=SC2086 # flags a word each
IT_RF=2 it_cluster 3 $LIMITS
it_wait_converged

# P, Q (the replicas, in preference-list order) and X (neither), from `ringkv preflist`
# shellcheck disable=SC2046 # three ids
set -- $("$RINGKV" -H "127.0.0.1:$N1_CLIENT" preflist --json big | python3 -c '
import json, sys
reps = [n["node"] for n in json.load(sys.stdin)["replicas"] if n["role"] != "fallback"]
if len(reps) != 2:
    sys.exit("not two replicas: %s" % reps)
print(reps[0], reps[1], ({"n1", "n2", "n3"} - set(reps)).pop())')
[ $# = 3 ] || it_fail "ringkv preflist big: no two replicas"
P=$1 Q=$2 X=$3
it_log "big: replicas $P then $Q; $X holds none"

# kset ID BYTE: KSET big <1 MiB of BYTE> W 1 through node ID (lib.sh)
kset() { it_kset_mib "$(it_var "$1" CLIENT)" "$2" 1; }
# values ID [R n]: how many values KGET big returns through node ID
values() {
    id=$1
    shift
    it_cli "$id" KGET big "$@" | tail -n +2 | grep -c .
}
# restart ID SEED: start node ID again on its ports, seeded with node SEED
restart() {
    # shellcheck disable=SC2086
    it_node "$1" --rack "$(it_var "$1" RACK)" --seeds "127.0.0.1:$(it_var "$2" PEER)" $LIMITS
    it_wait_ping "$1"
}
for n in n1 n2 n3; do it_setvar "$n" RACK "r${n#n}"; done

# hinted ID: whether P or X holds a hint for node ID
hinted() {
    "$RINGKV" -H "127.0.0.1:$(it_var "$P" CLIENT)" -H "127.0.0.1:$(it_var "$X" CLIENT)" hints --json |
        python3 -c 'import json, sys; j = json.load(sys.stdin)
sys.exit(0 if sum(t["hints"] for n in j["nodes"] for t in n["targets"] if t["target"] == sys.argv[1]) else 1)' "$1"
}

it_stop "$Q" KILL
[ "$(kset "$P" A)" = +OK ] || it_fail "KSET big A W 1 through $P with $Q down"
it_wait hinted "$Q" || it_fail "no hint of big kept for $Q"
# X too: a hint it holds for Q would give Q version A before it writes B
it_stop "$P" TERM
it_stop "$X" TERM
restart "$Q" "$P"
[ "$(values "$Q" R 1)" = 0 ] || it_fail "$Q holds big before writing B"
[ "$(kset "$Q" B)" = +OK ] || it_fail "KSET big B W 1 through $Q with $P and $X down"
restart "$X" "$Q"
restart "$P" "$Q"
for n in "$P" "$Q"; do
    IT_WAIT=60 it_wait sh -c "[ \"\$(redis-cli -p $(it_var "$n" CLIENT) KGET big R 1 | tail -n +2 | grep -c .)\" = 2 ]" ||
        it_fail "$n does not hold both siblings: $(values "$n" R 1) values"
done
it_log "$P and $Q hold both 1 MiB siblings"

it_stop "$Q" TERM
rm -rf "$IT_DIR/$Q.data"
restart "$Q" "$X"
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 3 $(it_ports 3) || it_fail "wiped $Q did not rejoin"
[ "$(values "$Q" R 1)" = 0 ] || it_fail "the wiped $Q still holds big"

got=$(it_cli "$X" KGET big 2>&1 | head -c 200)
case $got in
*TRYAGAIN* | *NOREPLICAS* | *ERR*) it_fail "KGET big (r = 2) through $X: $got" ;;
esac
[ "$(values "$X")" = 2 ] || it_fail "KGET big through $X: not 2 values"
[ "$(values "$Q" R 1)" = 2 ] || it_fail "read repair left $Q with $(values "$Q" R 1) values of big"
it_pass "a record over one frame is forwarded in parts and repaired sibling by sibling"
