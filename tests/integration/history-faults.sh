#!/bin/sh
# `ringkv workload` and `ringkv verify` when things go wrong around them,
# on two nodes (rf 1, keys pinned to the node they are written through):
# - a node paused (SIGSTOP) past the -t timeout: the operations waiting on it are
#   `unknown`, never `ok` or `fail`, and after SIGCONT the history verifies
#   clean;
# - every node paused: --duration still ends the run (within -t);
# - --rate: the operations started match the rate over the duration;
# - SIGINT mid-run: the history ends in a whole line and verifies clean;
# - a history file on a full disk (/dev/full): the run stops at once with an
#   error, not after its duration;
# - two workloads on one node with one --prefix: every value is distinct,
#   and their histories together (one clock) verify clean;
# - a node that cannot be reached at verify time is an error, not a pass;
#   a history with no operations is a usage error, not a pass;
# - the summary's p99 of fewer than 100 operations is their maximum;
# - nothing listening: exit 3, no operation reached a node.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 2 --rf 1 --r 1 --w 1
H1="127.0.0.1:$N1_CLIENT"
H2="127.0.0.1:$N2_CLIENT"

# lines FILE: lines in FILE (0 when absent).
lines() {
    wc -l < "$1" 2> /dev/null || echo 0
}

# lines_ge FILE N: does FILE hold at least N lines?
lines_ge() {
    [ "$(lines "$1")" -ge "$2" ]
}

# wait_lines FILE N: wait until FILE holds at least N lines.
wait_lines() {
    IT_WAIT=20 it_wait lines_ge "$1" "$2" || it_fail "$1 stuck at $(lines "$1") lines"
}

# --- a paused node: unknown, not fail or ok ---------------------------------------------
hist="$IT_DIR/paused.jsonl"
"$RINGKV" workload -H "$H1" -H "$H2" -t 1 --keys 20 --duration 8 --concurrency 2 \
    --history "$hist" > "$IT_DIR/paused.out" 2>&1 &
load=$!
wait_lines "$hist" 50
kill -STOP "$N1_PID"
t0=$(date +%s)
IT_WAIT=20 it_wait grep -q '"outcome":"unknown"' "$hist" || it_fail "no unknown while n1 is paused"
while [ $(($(date +%s) - t0)) -lt 3 ]; do sleep 0.2; done
kill -CONT "$N1_PID"
wait "$load" || it_fail "workload over a paused node: $(cat "$IT_DIR/paused.out")"
# the operations that waited out the timeout: sent to n1, or sent to n2 for a key n1 owns
# (rf 1: forwarded to n1), whichever the workload's two workers drew while n1 was paused
python3 - "$hist" << 'PY' || it_fail "a paused node's operations: see above"
import json, sys
slow = [e for e in map(json.loads, open(sys.argv[1])) if e["end"] - e["start"] >= 1000000]
bad = [e for e in slow if e["outcome"] != "unknown"]
assert slow, "no operation waited for the paused node"
assert not bad, "waited past -t yet not unknown: %s" % bad[:3]
assert all("fail" != e["outcome"] or "time" not in (e["error"] or "") for e in
           map(json.loads, open(sys.argv[1]))), "a timeout recorded as fail"
PY
out=$("$RINGKV" verify "$hist") || it_fail "after SIGCONT: $out"
it_log "paused: $(echo "$out" | awk '$1 == "unknown" || $1 == "writes_ok"' | tr '\n' ' ')"

# --- every node paused: --duration still bounds the run --------------------------------
kill -STOP "$N1_PID" "$N2_PID"
t0=$(date +%s)
"$RINGKV" workload -H "$H1" -H "$H2" -t 1 --keys 20 --duration 2 --concurrency 4 \
    --history "$IT_DIR/all-paused.jsonl" > "$IT_DIR/all-paused.out" 2>&1
rc=$?
took=$(($(date +%s) - t0))
kill -CONT "$N1_PID" "$N2_PID"
[ "$took" -le 6 ] || it_fail "every node paused: a 2 s run took ${took} s"
[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || it_fail "every node paused: exit $rc"
grep -q '"outcome":"ok"' "$IT_DIR/all-paused.jsonl" && it_fail "an ok from a paused node"
it_wait_ping n1
it_wait_ping n2

# --- --rate -------------------------------------------------------------------------------
"$RINGKV" workload -H "$H1" --keys 20 --duration 3 --concurrency 4 --rate 40 \
    --history "$IT_DIR/rate.jsonl" > /dev/null || it_fail "rate workload"
n=$(lines "$IT_DIR/rate.jsonl")
[ "$n" -ge 100 ] && [ "$n" -le 121 ] || it_fail "--rate 40 for 3 s started $n operations"

# --- SIGINT: a whole history ---------------------------------------------------------------
hist="$IT_DIR/int.jsonl"
"$RINGKV" workload -H "$H1" -H "$H2" --keys 50 --duration 60 --concurrency 8 \
    --history "$hist" > "$IT_DIR/int.out" 2>&1 &
load=$!
wait_lines "$hist" 200
t0=$(date +%s)
kill -INT "$load"
wait "$load" || it_fail "SIGINT: workload failed: $(cat "$IT_DIR/int.out")"
[ $(($(date +%s) - t0)) -le 10 ] || it_fail "SIGINT did not end the run"
[ "$(tail -c 1 "$hist" | od -An -c | tr -d ' ')" = '\n' ] || it_fail "SIGINT: last line cut"
out=$("$RINGKV" verify "$hist") || it_fail "after SIGINT: $out"

# --- a full disk under the history --------------------------------------------------------
if [ -w /dev/full ]; then
    t0=$(date +%s)
    out=$("$RINGKV" workload -H "$H1" --keys 20 --duration 20 --rate 2 --history /dev/full 2>&1)
    rc=$?
    took=$(($(date +%s) - t0))
    [ "$rc" -eq 1 ] || it_fail "history on a full disk: exit $rc: $out"
    case "$out" in *"No space left"*) ;; *) it_fail "full disk not named: $out" ;; esac
    [ "$took" -le 8 ] || it_fail "history on a full disk: ran on for ${took} s"
else
    it_log "no writable /dev/full: full-disk case skipped"
fi

# --- two workloads, one node, one prefix ----------------------------------------------------
for w in a b; do
    "$RINGKV" workload -H "$H2" --prefix shared: --keys 10 --duration 3 --concurrency 4 \
        --mix 2:5:1 --history "$IT_DIR/two-$w.jsonl" > /dev/null &
    eval "load_$w=\$!"
done
# shellcheck disable=SC2154
wait "$load_a" && wait "$load_b" || it_fail "two workloads"
cat "$IT_DIR/two-a.jsonl" "$IT_DIR/two-b.jsonl" > "$IT_DIR/two.jsonl"
out=$("$RINGKV" verify "$IT_DIR/two.jsonl") || it_fail "two workloads on one prefix: $out"

# --- p99 of a few operations (both nodes up: with rf 1 a stopped node's keys are refused) --
out=$("$RINGKV" workload -H "$H1" --keys 5 --duration 30 --ops 20 --concurrency 1 --mix 0:1:0 \
    --json --history "$IT_DIR/p99.jsonl") || it_fail "p99 workload: $out"
echo "$out" | python3 -c '
import json, sys
s = json.load(sys.stdin)["per_op"]["set"]
assert s["ok"] == 20 and s["p99_us"] == s["max_us"], s' || it_fail "p99 of 20 is not the max: $out"

# --- verify with a node down, and an empty history ----------------------------------------
it_stop n2
out=$("$RINGKV" verify -t 1 "$IT_DIR/int.jsonl" 2>&1)
[ $? -eq 1 ] || it_fail "verify passed with n2 down: $out"
# verify stops at its first unreadable key: n2 itself, or n1 refusing one of n2's keys (rf 1)
case "$out" in *"$H2"* | *"NOREPLICAS 0 of the 1 replicas"*) ;; *) it_fail "the unreachable node not named: $out" ;; esac
: > "$IT_DIR/empty.jsonl"
out=$("$RINGKV" verify "$IT_DIR/empty.jsonl" 2>&1)
[ $? -eq 2 ] || it_fail "an empty history is not a usage error: $out"
case "$out" in *"holds no operations"*) ;; *) it_fail "empty history: $out" ;; esac

# --- nothing listening --------------------------------------------------------------------------
"$RINGKV" workload -H "127.0.0.1:$(it_free_port)" --keys 5 --duration 1 \
    --history "$IT_DIR/refused.jsonl" > /dev/null 2>&1
rc=$?
[ "$rc" -eq 3 ] || it_fail "nothing listening: exit $rc"
it_pass
