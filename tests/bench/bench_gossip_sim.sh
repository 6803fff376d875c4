#!/bin/sh
# bench_gossip_sim.sh - the gossip simulator's own speed and its table, and
# the simulation beside the real thing at N = 16.
#
#   tests/bench/bench_gossip_sim.sh [-n "10 100 1000"] [-s SEED] [-d SECONDS] [-R]
#                                          (from a build tree; make bench runs it)
#
# 1. `ringkv gossip sim` for each size (one process per size, so each peak
#    memory is that size's): the table, whose last column is the
#    simulator's speed in simulated node-rounds per second of wall time
#    (every member running one gossip round is one node-round; building
#    the formed cluster's tables left out).  -d sets the false-suspicion
#    phases' length (default: the simulator's, 3600/N s within 5 .. 60).
# 2. N = 16 both ways: the simulator (default latency and jitter, no loss),
#    and a real 16-node ringkvd cluster on loopback measured by
#    tests/bench/bench_gossip.sh (-s ringkv -n 16 -r 1): convergence (the
#    last node started until every node lists all 16; the simulator: a new
#    member until every member holds its entry) and detection (kill -9 until
#    every other node lists it down; the simulator: a crash until every live
#    member sees it down).  -R leaves the real cluster out.
# The script reports; it does not assert (tests/gossip-sim*.sh do).
set -eu

SIZES="10 100 1000"
SEED=1
DURATION=
REAL=1
while getopts n:s:d:R opt; do
    case $opt in
    n) SIZES=$OPTARG ;;
    s) SEED=$OPTARG ;;
    d) DURATION=$OPTARG ;;
    R) REAL=0 ;;
    *) exit 2 ;;
    esac
done
top_builddir=${top_builddir:-$(pwd)}
RINGKV="$top_builddir/src/ringkv"
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -x "$RINGKV" ] || { echo "bench_gossip_sim: build ringkv first ($RINGKV)"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

echo "bench_gossip_sim: $(nproc) CPUs (shared); seed $SEED; false-suspicion phases of ${DURATION:-3600/N (5 .. 60)} s"
echo "  (node-rounds/s: the simulator's own speed, simulated member rounds per second of wall time)"
first=1
for n in $SIZES; do
    "$RINGKV" gossip sim --nodes "$n" --seed "$SEED" ${DURATION:+--duration "$DURATION"} > "$TMP/t$n" ||
        echo "bench_gossip_sim: N=$n ended with a failed check (above)"
    if [ $first -eq 1 ]; then head -3 "$TMP/t$n"; first=0; fi
    sed -n '4,$p' "$TMP/t$n"
done
echo
echo "N=16, simulated and real:"
"$RINGKV" gossip sim --nodes 16 --seed "$SEED" --duration 10 --json > "$TMP/j16"
python3 - "$TMP/j16" <<'PY'
import json, sys
(r,) = json.load(open(sys.argv[1]))["runs"]
print("  simulated: join seen by all in %.2f s (%.1f rounds), crash seen down by all in %.2f s "
      "(%.1f rounds), %.1f messages and %.0f bytes per node per round"
      % (r["join_seconds"], r["join_rounds"], r["crash_seconds"], r["crash_rounds"],
         r["msgs_per_node_round"], r["bytes_per_node_round"]))
PY
if [ "$REAL" -eq 1 ]; then
    top_builddir="$top_builddir" sh "$HERE/bench_gossip.sh" -s ringkv -n 16 -r 1 > "$TMP/real" 2>&1 ||
        { echo "  real: bench_gossip.sh failed:"; sed 's/^/    /' "$TMP/real"; exit 1; }
    line=$(grep 'ringkv N=16 run 1:' "$TMP/real" || true)
    [ -n "$line" ] || { echo "  real: no result from bench_gossip.sh:"; sed 's/^/    /' "$TMP/real"; exit 1; }
    echo "  real:     ${line#*run 1: } (tests/bench/bench_gossip.sh, 16 ringkvd on loopback)"
else
    echo "  real:     left out (-R); tests/bench/bench_gossip.sh -s ringkv -n 16 measures it"
fi
