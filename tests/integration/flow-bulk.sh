#!/bin/sh
# flow-bulk.sh - heartbeats are not delayed behind bulk traffic.
#
# Two nodes, n1 and n2, in a network namespace of the test's own, on its
# loopback (127.0.0.11 and 127.0.0.12).  An htb class limits the path from
# n1 to n2 to FLOW_RATE_KBIT (8000 kbit/s: 1 MB/s); everything else in the
# namespace (n2 to n1, the test's own commands) is not limited.  n1 then
# streams FLOW_BYTES (8 MB, 8 windows of 1 MiB) of synthetic bulk to n2
# through the bulk lane (RINGKV BULKTEST), the same connection and the
# same bottleneck as n1's heartbeats (pings and gossip) to n2.  The test
# shows, while that runs and after:
#   - n2 never suspects n1: no member_suspect or member_down in either log,
#     the highest phi n2 reports for n1 stays under the suspicion
#     threshold (5, detector.h), and the longest gap between two control
#     messages from n1 that n2 measured stays under the time to suspicion
#     (11.5 gossip intervals, 2.3 s);
#   - the bulk flowed at about the path's rate (n2's bytes over the time
#     from first to last arrival, 60% to 110% of the htb rate);
#   - n1's output queue to n2 stayed within peer-queue-max, and never held
#     more than a window, and the bulk in flight never passed the window.
# It prints the figures (rate, longest control gap, highest phi, queue and
# in-flight peaks).
#
# What makes it fail: control queued behind bulk.  Run with
# FLOW_BULK_WINDOW=64MB (n2 then grants a window that lets the kernel's
# socket buffers fill with bulk) and heartbeats wait seconds behind it:
# n2 suspects n1 and the test fails.
#
# Needs root (ip netns, tc); skipped (77) without.  The namespace, and with
# it the qdisc, is deleted on every exit, failed or not.
. "$top_srcdir/tests/integration/lib.sh"

FLOW_RATE_KBIT=${FLOW_RATE_KBIT:-8000}
FLOW_BYTES=${FLOW_BYTES:-8388608}
FLOW_WINDOW=1048576
# The detector's suspicion: phi 5, reached after 5 / log10(e) = 11.5 silent intervals of 200 ms.
FLOW_SUSPECT_PHI=5
FLOW_SUSPECT_MS=2300
# n1's window for n2's bulk: wide, so credit comes back rarely (the second stream).
FLOW_WIDE_WINDOW=64MB
FLOW_WIDE_BYTES=268435456
FLOW_NS="ringkv-flow-$$"
FLOW_NS_MADE=0
A1=127.0.0.11
A2=127.0.0.12

it_setup

flow_exit() {
    st=$?
    for pid in $IT_PIDS; do
        kill -9 "$pid" 2> /dev/null
    done
    if [ "$FLOW_NS_MADE" -eq 1 ]; then
        ip netns del "$FLOW_NS" 2> /dev/null
    fi
    (exit "$st")
    it_cleanup
}
trap flow_exit EXIT

flow_skip() {
    it_log "SKIP: $*"
    IT_FAILED=0
    exit 77
}

[ "$(id -u)" -eq 0 ] || flow_skip "needs root for a network namespace and tc"
command -v ip > /dev/null && command -v tc > /dev/null ||
    flow_skip "ip and tc not found: run cluster-scripts/install-deps (iproute2)"
ip netns add "$FLOW_NS" 2> /dev/null || flow_skip "cannot create a network namespace"
FLOW_NS_MADE=1

flow_in() {
    ip netns exec "$FLOW_NS" "$@"
}

# The rate limit: n1 -> n2 through an htb class, everything else through a fast one.
flow_in ip link set lo up || it_fail "lo up in $FLOW_NS"
flow_in tc qdisc add dev lo root handle 1: htb default 20 || it_fail "htb qdisc"
flow_in tc class add dev lo parent 1: classid 1:10 htb rate "${FLOW_RATE_KBIT}kbit" 2> /dev/null ||
    it_fail "htb class 1:10"
flow_in tc class add dev lo parent 1: classid 1:20 htb rate 10gbit 2> /dev/null ||
    it_fail "htb class 1:20"
flow_in tc filter add dev lo parent 1: protocol ip prio 1 u32 match ip src "$A1/32" \
    match ip dst "$A2/32" flowid 1:10 || it_fail "u32 filter"

# flow_node ID ADDR [flags]: a node in the namespace on ADDR (peer port 7371, client 7370).
flow_node() {
    id=$1
    addr=$2
    shift 2
    # not through flow_in: $! must be the node (ip netns exec becomes it), not a subshell
    ip netns exec "$FLOW_NS" "$RINGKVD" --id "$id" --cluster-key "$IT_DIR/key" \
        --data "$IT_DIR/$id.data" --listen "$addr:7371" --client "$addr:7370" "$@" \
        >> "$IT_DIR/$id.log" 2>&1 &
    IT_PIDS="$IT_PIDS $!"
}

flow_cli() {
    addr=$1
    shift
    flow_in redis-cli -e -h "$addr" -p 7370 "$@"
}

# flow_field ADDR NAME: one field of ADDR's RINGKV BULKTEST report.
flow_field() {
    flow_cli "$1" RINGKV BULKTEST | awk -v k="$2" 'prev == k { print; exit } { prev = $0 }'
}

# flow_member ADDR ID FIELD: a field of member ID in ADDR's RINGKV MEMBERS.
flow_member() {
    flow_cli "$1" RINGKV MEMBERS | awk -v id="$2" -v k="$3" '
        prev == "id" { cur = $0 } prev == k && cur == id { print; exit } { prev = $0 }'
}

flow_alive() {
    [ "$(flow_member "$1" "$2" state)" = alive ]
}

it_key
flow_node n1 "$A1" --peer-bulk-window "$FLOW_WIDE_WINDOW"
flow_node n2 "$A2" --seeds "$A1:7371" ${FLOW_BULK_WINDOW:+--peer-bulk-window "$FLOW_BULK_WINDOW"}
it_wait flow_cli "$A1" PING || it_fail "n1 does not answer PING"
it_wait flow_cli "$A2" PING || it_fail "n2 does not answer PING"
IT_WAIT=20 it_wait flow_alive "$A2" n1 || it_fail "n2 does not see n1 alive"
IT_WAIT=20 it_wait flow_alive "$A1" n2 || it_fail "n1 does not see n2 alive"

# The stream: started once n1's connection to n2 is identified (n2 granted its window).
it_wait flow_cli "$A1" RINGKV BULKTEST n2 "$FLOW_BYTES" || it_fail "RINGKV BULKTEST did not start"
start=$(date +%s)
deadline=$((start + 2 * FLOW_BYTES * 8 / (FLOW_RATE_KBIT * 1000) + 20))
phi_max=0
while :; do
    received=$(flow_field "$A2" received)
    phi=$(flow_member "$A2" n1 phi)
    phi_max=$(awk -v a="$phi_max" -v b="${phi:-0}" 'BEGIN { print (b > a ? b : a) }')
    [ "${received:-0}" -ge "$FLOW_BYTES" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || it_fail "n2 received ${received:-0} of $FLOW_BYTES bytes by the deadline"
    sleep 0.2
done

state=$(flow_field "$A1" state)
sent=$(flow_field "$A1" sent)
queue_peak=$(flow_field "$A1" queue_peak)
queue_max=$(flow_field "$A1" queue_max)
inflight_peak=$(flow_field "$A1" inflight_peak)
window=$(flow_field "$A1" window)
rate=$(flow_field "$A2" received_rate_bps)
gap=$(flow_field "$A2" control_gap_max_ms)
from=$(flow_field "$A2" received_from)
it_log "sent $sent bytes, state $state; n2 received $received from $from at $rate B/s" \
    "(path $((FLOW_RATE_KBIT * 125)) B/s)"
it_log "longest control gap at n2 ${gap} ms, highest phi of n1 at n2 $phi_max;" \
    "n1's queue peak $queue_peak of $queue_max, bulk in flight at most $inflight_peak of $window"

it_expect_eq "n1's stream" "$state" done
it_expect_eq "bytes n2 received" "$received" "$FLOW_BYTES"
it_expect_eq "sender" "$from" n1
if grep 'event=member_suspect\|event=member_down' "$IT_DIR/n1.log" "$IT_DIR/n2.log"; then
    it_fail "a node was suspected while the bulk flowed"
fi
awk -v p="$phi_max" -v t="$FLOW_SUSPECT_PHI" 'BEGIN { exit !(p < t) }' ||
    it_fail "phi of n1 at n2 reached $phi_max (suspicion at $FLOW_SUSPECT_PHI)"
[ "$gap" -gt 0 ] || it_fail "n2 measured no control gap while bulk flowed"
[ "$gap" -lt "$FLOW_SUSPECT_MS" ] ||
    it_fail "a control message from n1 waited $gap ms (suspicion after $FLOW_SUSPECT_MS ms)"
path=$((FLOW_RATE_KBIT * 125))
[ "$rate" -ge $((path * 6 / 10)) ] && [ "$rate" -le $((path * 11 / 10)) ] ||
    it_fail "bulk flowed at $rate B/s, not about the path's $path B/s"
[ "$queue_peak" -le "$queue_max" ] || it_fail "n1's queue reached $queue_peak, over $queue_max"
[ "$queue_peak" -le "$window" ] || it_fail "n1's queue held $queue_peak bytes, over a window"
[ -n "${FLOW_BULK_WINDOW:-}" ] || [ "$window" -eq "$FLOW_WINDOW" ] ||
    it_fail "n2 granted a window of $window, not peer-bulk-window's default $FLOW_WINDOW"
[ "$inflight_peak" -le "$window" ] || it_fail "bulk in flight reached $inflight_peak, over $window"
flow_alive "$A2" n1 || it_fail "n2 does not see n1 alive after the stream"
flow_alive "$A1" n2 || it_fail "n1 does not see n2 alive after the stream"

# The second stream, n2 -> n1 on the unlimited path, under n1's wide window:
# credit comes back every 16 MB only, so a sender must go on when its
# socket drains, whatever else (a pong, a gossip message) drained it.
flow_cli "$A2" RINGKV BULKTEST n1 "$FLOW_WIDE_BYTES" > /dev/null || it_fail "second stream did not start"
flow_done() {
    s=$(flow_field "$A2" state)
    [ "$s" = failed ] && it_fail "the second stream failed: $(flow_field "$A2" error)"
    [ "$s" = done ]
}
IT_WAIT=60 it_wait flow_done ||
    it_fail "the second stream stalled: $(flow_field "$A2" sent) of $FLOW_WIDE_BYTES bytes sent"
wide_rate=$(flow_field "$A2" rate_bps)
it_log "second stream: $((FLOW_WIDE_BYTES / 1048576)) MB at $wide_rate B/s under a $FLOW_WIDE_WINDOW window"
it_pass "$((FLOW_BYTES / 1048576)) MB at $rate B/s, longest control gap $gap ms, phi at most $phi_max"
