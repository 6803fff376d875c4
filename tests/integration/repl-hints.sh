#!/bin/sh
# Sloppy quorum and hinted handoff with real ringkvd processes, 4 nodes in a
# network namespace of the test's own, rf 3, r = w = 2:
#
#   - n2 and n3 cut off from n1 and n4 (iptables): once n1 and n4 see them
#     down, every write through n1 is acknowledged (n1, n4 and fallbacks
#     keeping hints for the replicas that are away), the keys n1 is no
#     replica of forwarded to n4;
#   - the node holding hints is killed with kill -9 and restarted: its
#     hints are still there (INFO ringkv_hints);
#   - healed: every hint is delivered and deleted (ringkv_hints:0 on every
#     node), and every acknowledged write is on every one of its replicas
#     (RINGKV REPLICAS: each replica answers with the value).
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net

KEYS=40
info_field() { it_info_field "$@"; }
hints_total() { it_hints_total n1 n2 n3 n4; }
# sees_down NODE ID: NODE's failure detector has ID down
sees_down() { it_ask state down "$2" "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }

it_cluster 4
it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"

it_partition "n1 n4 | n2 n3"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees_down n1 n2 || it_fail "n1 never saw n2 down"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees_down n1 n3 || it_fail "n1 never saw n3 down"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees_down n4 n2 || it_fail "n4 never saw n2 down"
IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees_down n4 n3 || it_fail "n4 never saw n3 down"
i=0
while [ $i -lt $KEYS ]; do
    out=$(it_cli n1 SET "h$i" "v$i" 2>&1)
    [ "$out" = OK ] || it_fail "SET h$i with n2 and n3 away: '$out'"
    i=$((i + 1))
done
# racks r1 r2 r3 r1: every key's replicas are n2, n3 and one of n1 and n4, so the keys
# of n4 were forwarded by n1 and coordinated by n4
[ "$(info_field n1 ringkv_forwarded)" -gt 0 ] || it_fail "n1 forwarded no write to n4"
[ "$(info_field n4 ringkv_forwards_served)" -gt 0 ] || it_fail "n4 coordinated no forwarded write"
held=$(hints_total)
[ "$held" -gt 0 ] || { it_cli n1 INFO cluster; it_cli n4 INFO cluster; it_fail "no hints kept for the $KEYS writes"; }
it_log "n2 and n3 cut off: $KEYS writes acknowledged through n1, $held hints kept"

# the hints survive kill -9 of the node holding them
holder=n1
[ "$(info_field n4 ringkv_hints)" -gt "$(info_field n1 ringkv_hints)" ] && holder=n4
before=$(info_field $holder ringkv_hints)
kill -9 "$(it_var $holder PID)"
wait "$(it_var $holder PID)" 2> /dev/null
it_node $holder --rack "r$(((${holder#n} - 1) % 3 + 1))"
it_wait_ping $holder
after=$(info_field $holder ringkv_hints)
[ "$after" = "$before" ] || it_fail "$holder had $before hints before kill -9, $after after its restart"
it_log "$holder killed with $before hints and restarted with $after"

it_heal
deadline=$(($(date +%s) + 60))
while [ "$(hints_total)" -ne 0 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || it_fail "hints left after healing: $(hints_total)"
    sleep 0.2
done
it_log "healed: every hint delivered and deleted"

i=0
while [ $i -lt $KEYS ]; do
    rows=$(it_cli n1 RINGKV REPLICAS "h$i" | tr -d '\r')
    present=$(it_present_count "$rows")
    [ "$present" = 3 ] || it_fail "h$i is on $present of its 3 replicas after healing: $rows"
    i=$((i + 1))
done
it_log "every acknowledged write is on all 3 of its replicas"
it_pass "sloppy quorum: hints kept, survive kill -9, delivered after healing"
