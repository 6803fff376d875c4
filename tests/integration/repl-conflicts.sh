#!/bin/sh
# Conflicts and deletes across replicas, with real ringkvd processes, 3 nodes
# in a network namespace of the test's own, rf 3:
#
#   - siblings: the same key written on both sides of a partition (KSET W 1,
#     each side's coordinator keeping hints for the others) holds both
#     values once healed, on every replica, with one digest on every
#     replica and `ringkv replicas` saying they agree, though n1 stores
#     them in the other order; GET answers -CONFLICT, KGET
#     returns both with a context, and a KSET with that context collapses
#     them to one value everywhere;
#   - lww (a second cluster, conflicts lww): the same writes leave exactly
#     one value, the same on every replica;
#   - a delete made while a replica is paused does not come back when it
#     returns: the tombstone reaches it (hint) and every read says nil.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net

hints_total() { it_hints_total n1 n2 n3; }
wait_no_hints() { it_wait_no_hints "hints" n1 n2 n3; }
# digests KEY: each replica's value digest, one line each (RINGKV REPLICAS)
digests() {
    it_cli n1 RINGKV REPLICAS "$1" | tr -d '\r' |
        awk 'p { print; p = 0 } $0 == "digest" { p = 1 }'
}
siblings_of() {
    it_cli n1 RINGKV REPLICAS "$1" | tr -d '\r' |
        awk 'p { print; p = 0 } $0 == "siblings" { p = 1 }' | sort -u | tr "\n" " "
}
split_write() {
    it_partition "n1 | n2 n3"
    out=$(it_cli n1 KSET "$1" left W 1 2>&1)
    [ "$out" = OK ] || it_fail "KSET $1 left W 1 on n1's side: '$out'"
    out=$(it_cli n2 KSET "$1" right W 1 2>&1)
    [ "$out" = OK ] || it_fail "KSET $1 right W 1 on n2's side: '$out'"
    # each coordinator keeps a hint for every replica across the cut once its request to it
    # timed out: n1 for n2 and n3, n2 for n1
    deadline=$(($(date +%s) + 30))
    while [ "$(hints_total)" -lt 3 ]; do
        [ "$(date +%s)" -lt "$deadline" ] || it_fail "hints for the cut-off replicas: $(hints_total), want 3"
        sleep 0.2
    done
    it_heal
    wait_no_hints
}

it_cluster 3
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"

# siblings
split_write s1
sib=$(siblings_of s1)
[ "$sib" = "2 " ] || it_fail "s1 after healing: siblings per replica '$sib', want 2 on each: $(it_cli n1 RINGKV REPLICAS s1 | tr '\n' ' ')"
# n1 took 'left' first and n2, n3 'right': the same two values, stored in another order
[ "$(digests s1 | sort -u | wc -l)" -eq 1 ] ||
    it_fail "s1's replicas hold the same two values but their digests differ: $(digests s1 | tr '\n' ' ')"
out=$("$RINGKV" -H "$(it_client_addr n2)" replicas s1) || it_fail "ringkv replicas s1 exited $?: $out"
printf '%s\n' "$out" | grep -q '^all 3 replicas agree' || it_fail "ringkv replicas s1 does not say they agree: $out"
out=$(it_cli n3 GET s1 2>&1)
case $out in CONFLICT*) ;; *) it_fail "GET of a key with siblings: '$out'" ;; esac
kget=$(it_cli n3 KGET s1 | tr -d '\r')
printf '%s\n' "$kget" | grep -qx left || it_fail "KGET s1 lacks 'left': $kget"
printf '%s\n' "$kget" | grep -qx right || it_fail "KGET s1 lacks 'right': $kget"
ctx=$(printf '%s\n' "$kget" | head -1)
[ "$(it_cli n3 KSET s1 merged CONTEXT "$ctx")" = OK ] || it_fail "KSET with the merged context"
wait_no_hints
[ "$(it_cli n1 GET s1)" = merged ] || it_fail "GET s1 after the merge: '$(it_cli n1 GET s1)'"
[ "$(siblings_of s1)" = "1 " ] || it_fail "s1 after the merge: siblings '$(siblings_of s1)'"
it_log "a partition's two writes are siblings on every replica; KSET CONTEXT collapses them"

# a delete while a replica is paused
[ "$(it_cli n1 SET d1 alive)" = OK ] || it_fail "SET d1"
kill -STOP "$N3_PID"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait it_ask state down n3 \
    "$(it_addr n1):$N1_CLIENT" || it_fail "n1 never saw n3 down"
[ "$(it_cli n1 DEL d1)" = 1 ] || it_fail "DEL d1 with n3 paused"
kill -CONT "$N3_PID"
wait_no_hints
for n in n1 n2 n3; do
    got=$(it_cli $n GET d1)
    [ -z "$got" ] || it_fail "d1 came back through $n: '$got'"
done
got=$(it_cli n3 KGET d1 R 3 | tr -d '\r')
printf '%s\n' "$got" | grep -qx alive && it_fail "R 3 read of d1 returned the deleted value"
it_log "a delete made while n3 was paused stays deleted after it returns"

for n in n1 n2 n3; do it_stop $n TERM; done

# lww: a second cluster, the same partitioned writes
for n in n1 n2 n3; do it_setvar $n DATA "$IT_DIR/$n.lww"; it_setvar $n CLIENT ""; it_setvar $n PEER ""; done
it_cluster 3 --conflicts lww
it_wait it_ask converged 3 $(it_ports 3) || it_fail "the lww cluster did not converge"
split_write l1
[ "$(siblings_of l1)" = "1 " ] || it_fail "lww l1: siblings '$(siblings_of l1)', want 1 on each"
[ "$(digests l1 | sort -u | wc -l)" = 1 ] || it_fail "lww l1: replicas differ: $(digests l1)"
got=$(it_cli n2 GET l1)
case $got in left | right) ;; *) it_fail "lww GET l1: '$got'" ;; esac
it_log "lww: one value ($got) on every replica"
it_pass "siblings, lww and deletes across replicas"
