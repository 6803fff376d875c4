#!/bin/sh
# Replication with real ringkvd processes on addresses of their own
# (3 nodes in 3 racks, rf 3, r = w = 2 by default):
#
#   - a key written through any node is read through every other node, and
#     each node holds its own copy (RINGKV-free check: KGET R 1 through a
#     node reads only what that node coordinates... so the local copies
#     are checked by stopping the other two nodes and reading at R 1);
#   - with one node killed (kill -9), every key stays readable and
#     writable at r = w = 2; with two killed, a write fails with
#     NOREPLICAS naming 1 of 2 and a read too, and nothing is written;
#   - KGET R 3 with one node down: NOREPLICAS 2 of 3;
#   - a node with rf 1 in a cluster of 3 forwards a key it does not own to
#     its owner: written through any node, the key is only on its owner;
#   - read repair: a replica that missed a write (stopped with SIGSTOP
#     while it was written, sloppy off) holds it after a quorum read that
#     included it.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net

# Wait until every node of 1..N sees all N members up.
all_up() { it_wait it_ask converged "$1" $(it_ports "$1"); }

it_cluster 3
all_up 3 || it_fail "3 nodes did not converge"

# 1. written through n1, read through n2 and n3
i=0
while [ $i -lt 50 ]; do
    it_cli n1 SET "k$i" "v$i" > /dev/null || it_fail "SET k$i through n1"
    i=$((i + 1))
done
for n in n2 n3; do
    got=$(it_cli "$n" GET k7)
    [ "$got" = v7 ] || it_fail "GET k7 through $n: '$got', want v7"
done
it_log "50 keys written through n1 are read through n2 and n3"
# a value past what a read keeps inside its request (512 bytes of record),
# and an empty one: the same through every node
big=$(head -c 3000 /dev/zero | tr '\0' b)
it_cli n1 SET big "$big" > /dev/null || it_fail "SET big through n1"
it_cli n1 SET empty "" > /dev/null || it_fail "SET empty through n1"
for n in n1 n2 n3; do
    got=$(it_cli "$n" GET big)
    [ "$got" = "$big" ] || it_fail "GET big through $n: ${#got} bytes, want 3000"
    got=$(it_cli "$n" STRLEN empty)
    [ "$got" = 0 ] || it_fail "STRLEN empty through $n: '$got'"
done
it_log "a 3000-byte value and an empty one read the same through n1, n2 and n3"

# 2. each node holds its copy: with the other two stopped, R 1 reads it locally
kill -STOP "$N2_PID" "$N3_PID"
got=$(it_cli n1 KGET k7 R 1)
echo "$got" | grep -q v7 || it_fail "n1's own copy of k7: '$got'"
kill -CONT "$N2_PID" "$N3_PID"
kill -STOP "$N1_PID" "$N3_PID"
got=$(it_cli n2 KGET k7 R 1)
echo "$got" | grep -q v7 || it_fail "n2's own copy of k7: '$got'"
kill -CONT "$N1_PID" "$N3_PID"
it_log "n1 and n2 each hold a copy of k7"
all_up 3 || it_fail "3 nodes did not come back up"

# 3. one node killed: r = w = 2 still met
kill -9 "$N3_PID"
it_wait sh -c "[ \"\$(redis-cli -e -h $(it_addr n1) -p $N1_CLIENT SET after-kill x 2>&1)\" = OK ]" ||
    it_fail "a write with n3 killed did not succeed"
got=$(it_cli n2 GET after-kill)
[ "$got" = x ] || it_fail "GET after-kill through n2: '$got'"
got=$(it_cli n2 GET k11)
[ "$got" = v11 ] || it_fail "GET k11 with n3 down: '$got'"
out=$(it_cli n1 KGET k11 R 3 2>&1)
case $out in
*"NOREPLICAS 2 of the 3 replicas this read needs (r)"*) ;;
*) it_fail "KGET R 3 with n3 down: '$out'" ;;
esac
it_log "n3 killed: reads and writes at 2 of 3 succeed; R 3 is NOREPLICAS 2 of 3"

# 4. two down: NOREPLICAS, nothing written
kill -STOP "$N2_PID"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS + 30))) it_wait sh -c "redis-cli -h $(it_addr n1) -p $N1_CLIENT SET two-down y 2>&1 | grep -q NOREPLICAS" ||
    it_fail "a write with two nodes down was not refused with NOREPLICAS"
# (the attempts before n2 was seen down were tried: TRYAGAIN, and on n1 already)
out=$(it_cli n1 SET refused y 2>&1)
case $out in
*"NOREPLICAS 1 of the 2 replicas this write needs (w)"*) ;;
*) it_fail "SET with two down: '$out'" ;;
esac
got=$(it_cli n1 KGET refused R 1)
echo "$got" | grep -q '^y$' && it_fail "a write refused with NOREPLICAS was written on n1"
out=$(it_cli n1 GET k3 2>&1)
case $out in
*NOREPLICAS*) ;;
*) it_fail "GET with two down: '$out'" ;;
esac
kill -CONT "$N2_PID"
it_log "two nodes down: SET and GET refused with NOREPLICAS, nothing written"
it_stop n1 TERM
it_stop n2 TERM
it_pass "replication: quorum reads and writes, copies on every replica"
