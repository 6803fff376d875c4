#!/bin/sh
# `ringkv status --deep` on 5 real ringkvd processes: through the one node
# it talks to, every member's own view over peer requests (RINGKV STATUS
# DEEP, answered asynchronously).
#
#   - all up: every row answered, with a digest (the same everywhere) and
#     a round-trip time; the table and --json agree;
#   - one member paused with SIGSTOP: its row says it timed out, the other
#     rows answered, and the command ends within request-timeout plus
#     MARGIN_MS; the timeout is counted in INFO and in GET /metrics;
#   - SIGCONT: the paused member answers the request it was sent, late:
#     the asking node ignores the answer and counts it as late.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
# request-timeout of the nodes: long enough for a loaded 2-core machine to
# answer (answers take about 0.2 ms), far below the ~6 s in which the
# detector would see a paused member down (lib.sh, IT_DOWN_ROUNDS).
TIMEOUT_MS=1000
# What the command may take beyond request-timeout: starting the CLI,
# connecting, and the answers of the others on a busy machine.
MARGIN_MS=1000
COUNT=5

N1_METRICS=$(it_free_port)
it_setvar n1 PEER "$(it_free_port)"
it_node n1 --rack r1 --request-timeout "${TIMEOUT_MS}ms" --metrics "127.0.0.1:$N1_METRICS"
i=2
while [ "$i" -le "$COUNT" ]; do
    it_setvar "n$i" PEER "$(it_free_port)"
    it_node "n$i" --rack "r$(((i - 1) % 3 + 1))" --request-timeout "${TIMEOUT_MS}ms" \
        --seeds "127.0.0.1:$(it_var "n$((i - 1))" PEER)"
    i=$((i + 1))
done
i=1
while [ "$i" -le "$COUNT" ]; do
    it_wait_ping "n$i"
    i=$((i + 1))
done
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged "$COUNT" $(it_ports "$COUNT") ||
    it_fail "$COUNT nodes did not converge"

deep() {
    "$RINGKV" -H "127.0.0.1:$N1_CLIENT" status --deep "$@"
}

# check_rows JSON-FILE PAUSED: every member has a row; PAUSED (or none) timed
# out, every other row answered with the asking node's digest and an rtt.
check_rows() {
    python3 - "$1" "$COUNT" "$2" << 'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
count, paused = int(sys.argv[2]), sys.argv[3]
rows = {m["id"]: m for m in d["members"]}
assert d["id"] == "n1" and d["request_timeout_ms"] > 0, d
assert sorted(rows) == ["n%d" % i for i in range(1, count + 1)], sorted(rows)
for ident, m in rows.items():
    if ident == paused:
        assert m["result"] == "timeout", m
        assert m["digest"] == "" and m["rtt_us"] == -1 and "timed out" in m["error"], m
        continue
    assert m["result"] == "ok" and m["error"] == "", m
    assert len(m["digest"]) == 16 and m["digest"] == d["digest"], (m, d["digest"])
    assert m["rtt_us"] >= 0 and (m["rtt_us"] > 0 or ident == "n1"), m
    assert m["status"] == "normal" and m["epoch"] > 0 and m["uptime_s"] >= 0, m
    assert m["members"] == count, m
EOF
}

# All up: every row has a digest and an rtt; exit 0 (healthy).
deep --json > "$IT_DIR/deep-all.json" || it_fail "status --deep with all up exited $?"
check_rows "$IT_DIR/deep-all.json" none || it_fail "rows with all up: $(cat "$IT_DIR/deep-all.json")"
deep > "$IT_DIR/deep-all.txt" || it_fail "status --deep (table) exited $?"
grep -q "^5 of 5 members answered; 5 hold digest" "$IT_DIR/deep-all.txt" ||
    it_fail "table with all up: $(cat "$IT_DIR/deep-all.txt")"
it_log "all up: 5 rows with a digest and an rtt"

# n3 paused: its row times out, the command ends within request-timeout + margin.
kill -STOP "$N3_PID"
start=$(date +%s%N)
deep --json > "$IT_DIR/deep-paused.json"
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
kill -CONT "$N3_PID"
[ "$rc" -eq 3 ] || it_fail "status --deep with n3 paused exited $rc, expected 3 (unhealthy)"
check_rows "$IT_DIR/deep-paused.json" n3 ||
    it_fail "rows with n3 paused: $(cat "$IT_DIR/deep-paused.json")"
[ "$took" -ge "$TIMEOUT_MS" ] || it_fail "answered in $took ms, before request-timeout ($TIMEOUT_MS ms)"
[ "$took" -le $((TIMEOUT_MS + MARGIN_MS)) ] ||
    it_fail "took $took ms, over request-timeout $TIMEOUT_MS ms + $MARGIN_MS ms"
it_log "n3 paused: its row timed out, the command took $took ms (request-timeout $TIMEOUT_MS ms)"

# Counted: INFO's Requests section and GET /metrics, by operation.
it_cli n1 INFO requests > "$IT_DIR/info.txt"
grep -q "^ringkv_requests_status:ok=[0-9]*,refused=0,timeout=1," "$IT_DIR/info.txt" ||
    it_fail "INFO requests: $(cat "$IT_DIR/info.txt")"
python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode())' \
    "$N1_METRICS" > "$IT_DIR/metrics.txt" || it_fail "GET /metrics failed"
grep -q '^ringkv_peer_requests_total{op="status",outcome="timeout"} 1$' "$IT_DIR/metrics.txt" ||
    it_fail "no timeout counted in /metrics"
grep -q '^ringkv_peer_requests_total{op="status",outcome="ok"} [1-9]' "$IT_DIR/metrics.txt" ||
    it_fail "no answered request counted in /metrics"

# n3 resumed: it answers the request that timed out; n1 ignores it and counts it late.
late() { it_cli n1 INFO requests | grep -q '^ringkv_responses_late:1'; }
it_wait late || it_fail "n3's late answer not counted: $(it_cli n1 INFO requests)"
deep --json > "$IT_DIR/deep-back.json" || it_fail "status --deep after SIGCONT exited $?"
check_rows "$IT_DIR/deep-back.json" none || it_fail "rows after SIGCONT: $(cat "$IT_DIR/deep-back.json")"
it_log "n3 resumed: its late answer was ignored and counted, then every row answered again"
it_pass
