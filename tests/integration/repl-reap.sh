#!/bin/sh
# Tombstone collection is refused while a replica of the key has no record of
# the tombstone, or while a node holds a hint of the key, with real ringkvd
# processes (rf 3, r = w = 2, tombstone-grace 10s, racks r1 r2 r3 r1):
#
#   1. a replica that joined after the delete: n1, n2, n3 hold the
#      tombstones of the a keys; n4 joins (rack r1) before their grace has
#      passed and becomes a replica of some of them in n1's place, with no
#      record of them.  Every copy of every a key is then collected, n1's
#      (no longer a replica) included, and each key reads absent through
#      every node; and n4 held each of its keys' tombstones before they went:
#      it deleted a copy of each (its ringkv_tombstones_collected counts
#      them), where taking its "no record" for a collected tombstone would
#      leave it nothing to delete;
#   2. a hint held by a node that is not a replica: b keys whose replicas are
#      n1, n2, n3 are written while n3 is killed, so n4, standing in for it,
#      keeps each value as a hint for n3; n4 is stopped (SIGSTOP), n3
#      restarted (it never saw the values), the keys deleted with n1, n2, n3
#      up.  Past the grace all three keep the tombstones for as long as n4
#      does not answer; n4 continued delivers its hints, yet n3's own copy
#      of every b key is no value (KGET R 1 through n3) and every key reads
#      absent through every node; then every copy is collected;
#   3. a replica that lost its data: c keys deleted with every node up, some
#      of them with n3 for first replica; n3 stopped, its data directory
#      wiped, restarted empty.  Every copy is still collected, the first
#      replica giving its tombstone to n3 or, n3 being first, the others
#      giving it theirs; and n3 held each before it went (it deleted a copy
#      of each).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net

GRACE=10
CANDIDATES=24
info_field() { it_cli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
held() { info_field "$1" cluster ringkv_tombstones_held; }
field_eq() { [ "$(info_field "$1" "$2" "$3")" = "$4" ]; }
field_ge() {
    v=$(info_field "$1" "$2" "$3")
    [ -n "$v" ] && [ "$v" -ge "$4" ]
}
# replicas KEY: the ids of the key's replicas in the ring n1 has (fallbacks left out)
replicas() {
    "$RINGKV" -H "$(it_addr n1):$(it_var n1 CLIENT)" -t 5 preflist --json "$1" | python3 -c '
import json, sys
print(" ".join(sorted(n["node"] for n in json.load(sys.stdin)["replicas"] if n["role"] != "fallback")))'
}
# primary KEY: the id of the key's first replica in the ring n1 has
primary() {
    "$RINGKV" -H "$(it_addr n1):$(it_var n1 CLIENT)" -t 5 preflist --json "$1" | python3 -c '
import json, sys
print([n["node"] for n in json.load(sys.stdin)["replicas"] if n["role"] == "primary"][0])'
}
# absent KEY NODES...: KEY reads absent through every node given
absent() {
    k=$1
    shift
    for n in "$@"; do
        [ -z "$(it_cli "$n" GET "$k")" ] || return 1
    done
}
sees() { it_ask state "$2" "$3" "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }
# Past the grace, several collection passes (every quarter of the grace).
PAST_GRACE=$((GRACE + 8))
WAIT_GC=$((GRACE + 30))

it_cluster 3 --tombstone-grace ${GRACE}s
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"

# 1. a replica with no record of the tombstone keeps it everywhere
i=0
while [ $i -lt $CANDIDATES ]; do
    it_expect_eq "SET a$i" "$(it_cli n1 SET "a$i" v)" OK
    it_expect_eq "DEL a$i" "$(it_cli n1 DEL "a$i")" 1
    i=$((i + 1))
done
deleted=$(date +%s)
for n in n1 n2 n3; do
    it_wait field_eq $n cluster ringkv_tombstones_held $CANDIDATES ||
        it_fail "$n holds $(held $n) tombstones, not $CANDIDATES"
done
it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
it_node n4 --rack r1 --seeds "$(it_addr n3):$(it_var n3 PEER)" --tombstone-grace ${GRACE}s
it_wait_ping n4
it_wait it_ask converged 4 $(it_ports 4) || it_fail "n4 did not join"
# checked here, not after the preference lists below (24 CLI and python runs: seconds on a
# loaded machine, and they need not end inside the grace)
[ $(($(date +%s) - deleted)) -lt $GRACE ] || it_fail "n4 joined after the grace had passed"
moved=""
i=0
while [ $i -lt $CANDIDATES ]; do
    case " $(replicas "a$i") " in *" n4 "*) moved="$moved a$i" ;; esac
    i=$((i + 1))
done
n_moved=$(echo $moved | wc -w)
[ "$n_moved" -gt 0 ] || it_fail "n4 became a replica of none of the $CANDIDATES a keys"
it_log "n4 joined: a replica of $n_moved a keys, with no record of them"
for n in n1 n2 n3 n4; do
    IT_WAIT=$WAIT_GC it_wait field_eq $n cluster ringkv_tombstones_held 0 ||
        it_fail "$n still holds $(held $n) tombstones"
done
got=$(info_field n4 persistence ringkv_tombstones_collected)
[ "${got:-0}" -ge "$n_moved" ] ||
    it_fail "n4 deleted $got tombstones, not one of each of its $n_moved keys: it never held them"
i=0
while [ $i -lt $CANDIDATES ]; do
    absent "a$i" n1 n2 n3 n4 || it_fail "a$i reads as present after the collection"
    i=$((i + 1))
done
it_log "every copy of the $CANDIDATES a tombstones collected, n4's $n_moved among them"

# 2. a hint of an older value held by a node that is not a replica
keys=""
i=0
while [ $i -lt $CANDIDATES ] && [ "$(echo $keys | wc -w)" -lt 8 ]; do
    [ "$(replicas "b$i")" = "n1 n2 n3" ] && keys="$keys b$i"
    i=$((i + 1))
done
n_keys=$(echo $keys | wc -w)
[ "$n_keys" -gt 0 ] || it_fail "no b key has n1, n2, n3 for replicas"
kill -9 "$N3_PID"
wait "$N3_PID" 2> /dev/null
for n in n1 n2 n4; do
    IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees $n down n3 || it_fail "$n never saw n3 down"
done
hints4=$(info_field n4 cluster ringkv_hints)
for k in $keys; do
    it_expect_eq "SET $k with n3 down" "$(it_cli n1 SET "$k" old)" OK
done
it_wait field_ge n4 cluster ringkv_hints $((hints4 + n_keys)) ||
    it_fail "n4 keeps $(info_field n4 cluster ringkv_hints) hints, not the $n_keys values for n3"
kill -STOP "$N4_PID"
it_node n3 --rack r3 --tombstone-grace ${GRACE}s
it_wait_ping n3
for n in n1 n2; do
    IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees $n alive n3 || it_fail "$n never saw n3 up"
done
for k in $keys; do
    it_expect_eq "DEL $k" "$(it_cli n1 DEL "$k")" 1
done
deleted=$(date +%s)
for n in n1 n2 n3; do
    it_wait field_eq $n cluster ringkv_tombstones_held "$n_keys" ||
        it_fail "$n holds $(held $n) tombstones, not the $n_keys deleted"
done
sleep $((PAST_GRACE - ($(date +%s) - deleted) > 0 ? PAST_GRACE - ($(date +%s) - deleted) : 0))
for n in n1 n2 n3; do
    it_expect_eq "$n's tombstones past the grace with n4 holding hints" "$(held $n)" "$n_keys"
done
it_log "past the grace: n1, n2, n3 keep the $n_keys tombstones while n4 holds hints"
kill -CONT "$N4_PID"
IT_WAIT=$WAIT_GC it_wait field_eq n4 cluster ringkv_hints "$hints4" ||
    it_fail "n4 did not deliver its hints: $(info_field n4 cluster ringkv_hints) left"
for k in $keys; do
    got=$(it_cli n3 KGET "$k" R 1 | sed -n 2p)
    [ "$got" != old ] || it_fail "$k: n3's own copy is the deleted value after n4's hint"
    absent "$k" n1 n2 n3 n4 || it_fail "$k resurrected by n4's hint"
done
for n in n1 n2 n3 n4; do
    IT_WAIT=$WAIT_GC it_wait field_eq $n cluster ringkv_tombstones_held 0 ||
        it_fail "$n still holds $(held $n) tombstones once n4 delivered its hints"
done
for k in $keys; do
    absent "$k" n1 n2 n3 n4 || it_fail "$k reads as present after the collection"
done
it_log "n4 delivered its hints: nothing resurrected, the $n_keys tombstones collected"

# 3. a replica that lost its data, the first replica of some of the keys
keys=""
first3=0
other=0
i=0
while [ $i -lt $CANDIDATES ]; do
    p=$(primary "c$i")
    if [ "$p" = n3 ] && [ $first3 -lt 4 ]; then
        keys="$keys c$i"
        first3=$((first3 + 1))
    elif [ "$p" != n3 ] && [ $other -lt 4 ]; then
        keys="$keys c$i"
        other=$((other + 1))
    fi
    i=$((i + 1))
done
[ $first3 -gt 0 ] && [ $other -gt 0 ] ||
    it_fail "of $CANDIDATES c keys, $first3 have n3 for first replica and $other another node"
n_keys=$(echo $keys | wc -w)
for k in $keys; do
    it_expect_eq "SET $k" "$(it_cli n1 SET "$k" v)" OK
    it_expect_eq "DEL $k" "$(it_cli n1 DEL "$k")" 1
done
for n in n2 n3; do
    it_wait field_eq $n cluster ringkv_tombstones_held "$n_keys" ||
        it_fail "$n holds $(held $n) tombstones, not the $n_keys deleted"
done
it_stop n3 TERM
rm -rf "$IT_DIR/n3.data"
it_node n3 --rack r3 --seeds "$(it_addr n1):$(it_var n1 PEER)" --tombstone-grace ${GRACE}s
it_wait_ping n3
IT_WAIT=$(it_rounds_s 80) it_wait it_ask converged 4 $(it_ports 4) || it_fail "wiped n3 did not rejoin"
for n in n1 n2 n3 n4; do
    IT_WAIT=$WAIT_GC it_wait field_eq $n cluster ringkv_tombstones_held 0 ||
        it_fail "$n still holds $(held $n) tombstones with n3 wiped"
done
got=$(info_field n3 persistence ringkv_tombstones_collected)
[ "${got:-0}" -ge "$n_keys" ] ||
    it_fail "the wiped n3 deleted $got tombstones, not one of each of the $n_keys keys"
for k in $keys; do
    absent "$k" n1 n2 n3 n4 || it_fail "$k reads as present after the collection"
done
it_log "n3 wiped: its $n_keys tombstones ($first3 as first replica) given back and collected"
it_pass "tombstones kept while a replica lacks them or a node holds a hint, then collected"
