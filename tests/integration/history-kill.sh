#!/bin/sh
# A 60 s `ringkv workload` on three nodes (rf 1, sync always, keys pinned to
# the node they are written through) while one node is killed with SIGKILL
# and restarted on its data directory: the workload carries on through the
# outage (reconnecting with back-off, recording `unknown` for the
# operations in flight), and `ringkv verify --monotonic` finds every
# acknowledged write of all three nodes.  In `make check-long` (a minute
# of load).
#
# The kill comes once a third of the operations (paced with --rate) are
# recorded; the restart once the workload has recorded the outage (an
# unknown operation or a failed connection on the killed node's keys:
# HISTORY_KILL_GAP_OPS more operations recorded).  The test then also
# requires operations acknowledged by the killed node after its restart,
# so a run where it never came back cannot pass.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
SECONDS_RUN=60
RATE=300
HISTORY_KILL_GAP_OPS=300
flags="--rf 1 --r 1 --w 1 --sync always"
# shellcheck disable=SC2086
it_cluster 3 $flags
hist="$IT_DIR/history.jsonl"
victim="127.0.0.1:$N2_CLIENT"

lines() { wc -l < "$hist" 2> /dev/null || echo 0; }

"$RINGKV" workload -H "127.0.0.1:$N1_CLIENT" -H "$victim" -H "127.0.0.1:$N3_CLIENT" -t 2 \
    --keys 600 --duration "$SECONDS_RUN" --rate "$RATE" --concurrency 8 --mix 3:6:1 \
    --history "$hist" > "$IT_DIR/workload.out" 2>&1 &
load=$!
third=$((SECONDS_RUN * RATE / 3))
IT_WAIT=$((SECONDS_RUN / 2)) it_wait sh -c "[ \$(wc -l < '$hist') -ge $third ]" ||
    it_fail "fewer than $third operations in $((SECONDS_RUN / 2)) s"
it_stop n2 KILL
killed_at=$(lines)
it_log "n2 killed after $killed_at operations"
IT_WAIT=20 it_wait sh -c "[ \$(wc -l < '$hist') -ge $((killed_at + HISTORY_KILL_GAP_OPS)) ]" ||
    it_fail "the workload stopped when n2 was killed"
# shellcheck disable=SC2086
it_node n2 --rack r2 --seeds "127.0.0.1:$N1_PEER" $flags
it_wait_ping n2
it_log "n2 restarted after $(lines) operations"
IT_WAIT=$((SECONDS_RUN + 20)) it_wait sh -c "! kill -0 $load" || it_fail "the workload overran"
wait "$load" || it_fail "the workload failed: $(cat "$IT_DIR/workload.out")"
it_log "$(tr '\n' ' ' < "$IT_DIR/workload.out")"

python3 - "$hist" "$victim" "$killed_at" << 'PY' || it_fail "n2 never came back in the history"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
after = [json.loads(l) for l in lines[int(sys.argv[3]):]]
mine = [e for e in after if e["node"] == sys.argv[2]]
gone = [i for i, e in enumerate(mine) if e["outcome"] != "ok"]
back = [e for e in mine[gone[0]:] if e["outcome"] == "ok"] if gone else []
print("n2 after the kill: %d operations, %d not ok, %d ok after the first failure" %
      (len(mine), len(gone), len(back)))
sys.exit(0 if gone and len(back) > 100 else 1)
PY
out=$("$RINGKV" verify --monotonic "$hist") || it_fail "verify: $out"
it_log "$(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"
it_pass
