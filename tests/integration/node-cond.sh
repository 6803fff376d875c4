#!/bin/sh
# Conditional writes (SET NX|XX [GET], GETSET, GETDEL), driven with redis-py
# (tests/integration/cond.py):
#
#   - one node, rf 1: every case, inside MULTI/EXEC too, and two connections sending
#     SET key NX for the same 200 keys at once: exactly one wins each key (the store
#     decides in the write's transaction);
#   - four nodes, rf 3 (r = w = 2): every case through each node (the coordinator
#     decides against its quorum read; a node that is no replica of a key forwards the
#     read and the write, as each node is for a quarter of the keys), the same race
#     through one node (a write refused for a stale context is decided again), and a key with
#     siblings: present to NX and XX, CONFLICT for GET, GETSET and GETDEL;
#   - with three of the four nodes killed, SET NX answers NOREPLICAS naming the read its
#     condition needs (r), nothing written.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
PY=/usr/bin/python3
"$PY" -c 'import redis' 2> /dev/null ||
    it_fail "python3-redis (redis-py) not found: run cluster-scripts/install-deps"

cond() {
    out=$("$PY" "$top_srcdir/tests/integration/cond.py" "$@") || it_fail "$out"
    printf '%s\n' "$out" | while IFS= read -r line; do it_log "$line"; done
}

it_node solo --rf 1 --r 1 --w 1
it_wait_ping solo
cond checks "$SOLO_CLIENT" s:
cond race "$SOLO_CLIENT" s: 200
it_stop solo

it_net
it_cluster 4
it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
at() { printf '%s:%s' "$(it_addr "$1")" "$(it_var "$1" CLIENT)"; }
for n in n1 n2 n3 n4; do
    it_log "through $n:"
    cond checks "$(at "$n")" "$n:"
done
forwarded=0
for n in n1 n2 n3 n4; do
    f=$(it_cli "$n" INFO cluster | tr -d '\r' | sed -n 's/^ringkv_forwarded://p')
    forwarded=$((forwarded + ${f:-0}))
done
[ "$forwarded" -gt 0 ] || it_fail "no request was forwarded: the forwarded path went untested"
it_log "$forwarded requests forwarded to a replica"

cond race "$(at n1)" c: 100
cond siblings "$(at n1)" "$(at n2)" c:

kill -9 "$N2_PID" "$N3_PID" "$N4_PID"
nx_refused() { it_cli n1 SET c:down v NX 2>&1 | grep -q '^NOREPLICAS'; }
IT_WAIT=$(($(it_rounds_s "$IT_DOWN_ROUNDS") + 10)) it_wait nx_refused ||
    it_fail "SET NX with three of four nodes down: '$(it_cli n1 SET c:down v NX 2>&1)'"
out=$(it_cli n1 SET c:down v NX 2>&1)
case $out in
*"this read needs (r)"*"nothing was read"*) it_log "with three nodes down: $out" ;;
*) it_fail "SET NX with three nodes down does not name its read: '$out'" ;;
esac
it_pass
