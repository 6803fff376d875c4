#!/bin/sh
# handoff-bulk.sh - the batches of a handoff travel in the bulk lane, and
# heartbeats do not wait behind them.
#
# n1 alone (rf 1, TOKENS tokens: arcs of hundreds of keys) holds KEYS keys
# of VALUE bytes; every packet to or from n1's address then goes through
# one htb class of RATE (1 MB/s: fault_slow), and n2 joins with
# --handoff-concurrency CONCURRENCY and a window of WINDOW for its peers'
# bulk (a heartbeat waits behind at most that: 0.26 s at this rate).  n2 pulls its arcs (about 6 MB) from
# n1 over the same connection and the same bottleneck as n1's pings and
# gossip to n2.  Shown, once n2 is normal:
#   - the batches came in the bulk lane: n1 sent at least one batch there
#     per batch n2 received (ringkv_peer_bulk_answers_out), none fell back
#     to the control lane, and n2 received them there
#     (ringkv_peer_bulk_answers_in) with as many bulk bytes as n1 sent;
#   - heartbeats were not delayed: no member_suspect or member_down in
#     either log, the highest phi of n1 that n2 reported while n2 was
#     joining (polled every 0.1 s) stays under PHI_MAX, and the longest gap
#     between two control messages from n1 that n2 measured once bulk
#     flowed (ringkv_peer_control_gap_max_ms) under GAP_MAX_MS.  With the
#     batches in the control lane, up to one a pulled arc (200 KB and more)
#     waits ahead of the heartbeats at 1 MB/s: phi passed 4 that way (the
#     detector suspects at 5); in the bulk lane at most a window is ahead
#     of them, and phi stays under 1.
#   - loaded keys read back through n2.
# Needs root (a network namespace of its own, tc); skipped (77) without.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net
KEYS=12000
VALUE=1000
RATE=8mbit
CONCURRENCY=16
TOKENS=16
WINDOW=256KB
# Gossip every 200 ms; a window ahead of a heartbeat is 0.26 s at 1 MB/s.
GAP_MAX_MS=1200
# phi of n1 at n2 (detector.h): 0.43 per mean interval of silence; suspicion at 5.
PHI_MAX=2
JOIN_WAIT_S=50

lanes_field() { it_cli "$1" INFO lanes | tr -d '\r' | sed -n "s/^$2://p"; }
# member_field AT ID FIELD: a field of member ID in node AT's RINGKV MEMBERS.
member_field() {
    it_cli "$1" RINGKV MEMBERS | awk -v id="$2" -v k="$3" '
        prev == "id" { cur = $0 } prev == k && cur == id { print; exit } { prev = $0 }'
}

it_node n1 --tokens "$TOKENS"
it_wait_ping n1
python3 "$top_srcdir/tests/bench/handoff_load.py" load --nodes "$(it_client_addr n1)" \
    --keys "$KEYS" --value "$VALUE" --seconds 30 > "$IT_DIR/load.out" 2>&1 ||
    it_fail "loading $KEYS keys: $(cat "$IT_DIR/load.out")"

it_slow n1 "$RATE"
it_node n2 --tokens "$TOKENS" --seeds "$(it_peer_addr n1)" --handoff-concurrency "$CONCURRENCY" \
    --peer-bulk-window "$WINDOW"
it_wait_ping n2
started=$(date +%s)
# until n2 is normal: the highest phi of n1 that n2 reports, every 0.1 s
phi_max=0
while [ "$(it_handoff_status n2)" != normal ]; do
    [ $(($(date +%s) - started)) -lt "$JOIN_WAIT_S" ] ||
        it_fail "n2 is not normal $JOIN_WAIT_S s after it started: $(it_handoff_status n2)"
    phi=$(member_field n2 n1 phi)
    phi_max=$(awk -v a="$phi_max" -v b="${phi:-0}" 'BEGIN { print (b > a ? b : a) }')
    sleep 0.1
done
took=$(($(date +%s) - started))

batches=$(it_info_field n2 ringkv_handoff_batches_received)
keys=$(it_info_field n2 ringkv_handoff_keys_received)
out=$(lanes_field n1 ringkv_peer_bulk_answers_out)
control=$(lanes_field n1 ringkv_peer_bulk_answers_control)
waited=$(lanes_field n1 ringkv_peer_bulk_answers_waited)
in=$(lanes_field n2 ringkv_peer_bulk_answers_in)
bytes_out=$(lanes_field n1 ringkv_peer_bulk_bytes_out)
bytes_in=$(lanes_field n2 ringkv_peer_bulk_bytes_in)
gap=$(lanes_field n2 ringkv_peer_control_gap_max_ms)
it_log "n2 normal after $took s: $keys keys in $batches batches; n1 sent $out batches" \
    "($bytes_out bytes, $waited waited for the lane, $control in the control lane), n2 received $in"
it_log "longest control gap from n1 at n2: $gap ms; highest phi of n1 at n2: $phi_max"

[ "$keys" -ge $((KEYS / 10)) ] || it_fail "n2 received $keys keys, not its share of $KEYS"
[ "$batches" -gt 1 ] || it_fail "n2 received $batches batches"
[ "$out" -ge "$batches" ] || it_fail "n1 sent $out batches in the bulk lane, n2 received $batches"
it_expect_eq "batches n1 sent in the control lane" "$control" 0
[ "$in" -ge "$batches" ] || it_fail "n2 received $in batches in the bulk lane of $batches"
it_expect_eq "bulk bytes n2 received" "$bytes_in" "$bytes_out"
if grep 'event=member_suspect\|event=member_down' "$IT_DIR/n1.log" "$IT_DIR/n2.log"; then
    it_fail "a node was suspected while the batches flowed"
fi
awk -v p="$phi_max" -v t="$PHI_MAX" 'BEGIN { exit !(p < t) }' ||
    it_fail "phi of n1 at n2 reached $phi_max while the batches flowed (at most $PHI_MAX)"
[ "$gap" -gt 0 ] || it_fail "n2 measured no control gap while bulk flowed"
[ "$gap" -lt "$GAP_MAX_MS" ] ||
    it_fail "a control message from n1 waited $gap ms behind the batches (at most $GAP_MAX_MS)"

it_fault fault_slow_del "$(it_addr n1)"
i=0
while [ "$i" -lt 20 ]; do
    k="key:$((i * (KEYS / 20)))"
    len=$(it_cli n2 GET "$k" | wc -c)
    [ "$len" -gt "$VALUE" ] || it_fail "GET $k through n2 gave $len bytes"
    i=$((i + 1))
done
it_pass "$keys keys in $batches batches in the bulk lane at $RATE, longest control gap $gap ms"
