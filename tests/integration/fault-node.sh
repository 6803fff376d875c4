#!/bin/sh
# The fault helpers through tests/integration/lib.sh, on nodes with
# addresses of their own (it_net), in a network and mount namespace of the
# test's own (it_private_net: root only, else skipped with 77).
#
#   - partition "n1 | n2": each node sees the other down, a client on
#     127.0.0.1 still reaches both; heal: converged again.  The cut rules
#     counted packets, so the nodes' peer traffic really comes from their
#     own addresses;
#   - slow n1 1mbit: a 512 KiB SET to n1 (and its copy to n2) goes at about
#     that rate; clear n1: at least 4 times faster;
#   - skew n2 +3600 then -600 then 0: TIME on n2 follows within the
#     deadline while the process runs on (same PID), writes on n2 keep
#     working and are read back, nobody is seen down;
#   - a full disk on n1 (tmpfs filled): a new SET fails with "the store is
#     full", GET of a key written before still answers; after freeing the
#     space the SET succeeds again, with no restart.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net
it_faketime
it_disk n1 32m
# rf 3 on two nodes: every SET is written to both, so under `slow n1` its value crosses the
# limit twice (client to n1, n1 to n2); request-timeout leaves that time to the replica write
it_cluster 2 --request-timeout 60s
PORTS=$(it_ports 2)
IT_WAIT=$(it_rounds_s 30) it_wait it_ask converged 2 $PORTS || it_fail "2 nodes did not converge"
DOWN_S=$(it_rounds_s "$IT_DOWN_ROUNDS")

# sees ID STATE OTHER: node ID's detector has member OTHER in STATE.
sees() {
    it_ask state "$2" "$3" "$(it_addr "$1"):$(it_var "$1" CLIENT)"
}

# --- partition and heal --------------------------------------------------------
it_partition "n1 | n2"
IT_WAIT=$DOWN_S it_wait sees n1 down n2 || it_fail "n1 does not see n2 down across the partition"
IT_WAIT=$DOWN_S it_wait sees n2 down n1 || it_fail "n2 does not see n1 down across the partition"
for id in n1 n2; do
    it_expect_eq "PING to $id from 127.0.0.1 during the partition" "$(it_cli "$id" PING)" PONG
done
dropped=$(iptables -w -n -v -x -L "$(fault_chain "$IT_NET" cut)" | awk '$3 == "DROP" { n += $1 } END { print n + 0 }')
[ "$dropped" -gt 0 ] || it_fail "the partition's rules dropped no packet: peer traffic is not from the nodes' addresses"
it_log "partition: each side sees the other down, clients still served, $dropped packets dropped"
it_heal
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 2 $PORTS || it_fail "no convergence after heal"

# --- slow ----------------------------------------------------------------------
head -c 524288 /dev/zero | tr '\0' x > "$IT_DIR/value"
# set_ms ID: milliseconds a 512 KiB SET to ID takes.
set_ms() {
    t0=$(date +%s%N)
    out=$(redis-cli -e -h "$(it_addr "$1")" -p "$(it_var "$1" CLIENT)" -x SET big < "$IT_DIR/value") ||
        it_fail "SET big on $1: $out"
    echo $((($(date +%s%N) - t0) / 1000000))
}
it_slow n1 1mbit
slow=$(set_ms n1)
# 512 KiB at 1 mbit/s is 4194 ms, twice that with its copy to n2; the SET's reply and TCP's
# headers ride the same class.
[ "$slow" -ge 2800 ] && [ "$slow" -le 21000 ] ||
    it_fail "a 512 KiB SET under slow 1mbit took $slow ms, expected about 4200 (2800 to 21000)"
it_clear n1
fast=$(set_ms n1)
[ $((fast * 4)) -le "$slow" ] || it_fail "after clear the SET took $fast ms (under the limit: $slow ms)"
it_log "slow 1mbit: 512 KiB in $slow ms; after clear: $fast ms"

# --- skew ----------------------------------------------------------------------
pid=$(it_var n2 PID)
offset() { echo $(($(it_cli n2 TIME | head -n 1) - $(date +%s))); }
near() { [ $(($(offset) - $1)) -le 3 ] && [ $(($1 - $(offset))) -le 3 ]; }
for s in 3600 -600 0; do
    it_skew n2 "$s"
    it_wait near "$s" || it_fail "n2's wall clock is $(offset) s off, not $s s"
    it_alive n2 || it_fail "n2 exited after its clock moved to $s s"
    it_expect_eq "SET on n2 at $s s" "$(it_cli n2 SET "skew$s" "v$s")" OK
    it_expect_eq "GET on n2 at $s s" "$(it_cli n2 GET "skew$s")" "v$s"
    it_expect_eq "n2's pid" "$(it_var n2 PID)" "$pid"
    bad=$(it_ask wrongly-down none $PORTS) || it_fail "after skew $s on n2: $bad"
done
it_log "skew: n2's wall clock followed +3600, -600, 0 while it ran"

# --- a full disk ---------------------------------------------------------------
it_expect_eq "SET before the disk fills" "$(it_cli n1 SET before v)" OK
it_diskfull n1
# Pages LMDB freed earlier (the 512 KiB values above) take a few writes
# first, as on any full disk; once the file must grow, writes are refused.
full() { redis-cli -h "$(it_addr n1)" -p "$(it_var n1 CLIENT)" -x SET "full$1" < "$IT_DIR/value" 2>&1; }
i=0
while out=$(full "$i") && [ "$out" = OK ]; do
    i=$((i + 1))
    [ "$i" -lt 20 ] || it_fail "20 SETs of 512 KiB succeeded on a full 32 MiB disk"
done
case $out in
*"the store is full"*) ;;
*) it_fail "SET on a full disk: '$out', expected the store's full-disk error" ;;
esac
out=$(full again)
case $out in
*"the store is full"*) ;;
*) it_fail "the next SET on a full disk: '$out', expected the store's full-disk error" ;;
esac
it_log "full disk: $i SETs fitted in freed pages, then: $out"
it_expect_eq "GET on a full disk" "$(it_cli n1 GET before)" v
it_diskfree n1
it_expect_eq "SET after the disk was freed" "$(redis-cli -e -h "$(it_addr n1)" -p "$(it_var n1 CLIENT)" -x SET after < "$IT_DIR/value" | head -c 2)" OK
it_expect_eq "SET of a small value after" "$(it_cli n1 SET after2 w)" OK
it_expect_eq "GET after" "$(it_cli n1 GET after2)" w
it_alive n1 || it_fail "n1 exited"
it_pass "partition, slow, skew, full disk"
