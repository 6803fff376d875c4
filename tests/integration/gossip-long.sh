#!/bin/sh
# The long membership checks (make check-long; CI runs them on the plain
# build): 12 nodes, each seeded with the one before it, converge within
# 6 x ceil(log2 12) = 24 gossip rounds; then no live member is ever marked
# suspect or down during two idle minutes, nor during a bounded client
# load (redis-benchmark against three of the nodes, 30 s at most).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
ROUND_MS=200
N=12
BOUND=24

it_cluster "$N"
start=$(date +%s%N)
IT_WAIT=$(((BOUND * ROUND_MS + 999) / 1000)) it_wait it_ask converged "$N" $(it_ports "$N") ||
    it_fail "$N nodes did not converge within $BOUND rounds"
it_log "$N nodes converged in $((($(date +%s%N) - start) / 1000000)) ms (bound $((BOUND * ROUND_MS)) ms)"
PORTS=$(it_ports "$N")

# watch SECONDS: every 2 s, no member suspected or down anywhere.
watch() {
    until=$(($(date +%s) + $1))
    while [ "$(date +%s)" -lt "$until" ]; do
        it_ask wrongly-down none $PORTS > "$IT_DIR/wrongly.out" ||
            it_fail "false positive: $(cat "$IT_DIR/wrongly.out")"
        sleep 2
    done
}

watch 120
it_log "two idle minutes: no member suspected"

for i in 1 5 9; do
    redis-benchmark -p "$(it_var "n$i" CLIENT)" -t set,get -n 300000 -r 100000 -d 100 -c 20 -P 8 -q \
        > "$IT_DIR/load-n$i.out" 2>&1 &
    it_setvar "load$i" PID $!
done
watch 30
for i in 1 5 9; do
    kill "$(it_var "load$i" PID)" 2> /dev/null
    wait "$(it_var "load$i" PID)" 2> /dev/null
done
if grep -l 'event=member_\(suspect\|down\)' "$IT_DIR"/n*.log > "$IT_DIR/fp.out"; then
    it_fail "suspect or down logged for a live member: $(cat "$IT_DIR/fp.out")"
fi
it_log "30 s of client load on 3 of $N nodes: no member suspected"
it_pass
