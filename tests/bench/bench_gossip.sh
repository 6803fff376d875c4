#!/bin/sh
# bench_gossip.sh - how fast membership news travels: ringkvd against
# HashiCorp serf (its lan profile), in the same run.
#
#   tests/bench/bench_gossip.sh [-r RUNS] [-n "8 16"] [-s "serf ringkv"] [-t SECONDS] [-k]
#                                       (from a build tree; make bench runs it)
#
# For each cluster size N, RUNS times (3), a fresh cluster of each system:
#   convergence  N nodes on loopback, each on its own address (serf agents on
#                127.0.0.21.., ringkvd on 127.0.0.41..), started one after
#                another, each joining through the first once the one before
#                it answers; the time from starting the last node until every
#                node lists all N, all alive;
#   detection    after 5 s more, kill -9 of one node other than the first
#                (the same one for both systems in a run); the time until
#                every other node lists it as down (ringkv) or failed (serf);
#   false positives  how often, over both phases and the 5 s between them, a
#                node's view of a member other than the killed one turned
#                suspect or down (ringkv) or failed (serf).
# Both run at their defaults: ringkvd with only what each node needs (rf 1),
# serf agent -profile=lan.  tests/bench/gossip_watch.py polls every node
# every 50 ms over kept-open connections, the same way for both.  Every
# process is started here and stopped by its PID; each phase gives up after
# -t seconds (60).  The goals of the issue are printed beside the figures;
# the script reports, it does not assert.  -s runs only the systems named,
# -k keeps the logs.
set -eu

RUNS=3
SIZES="8 16"
SYSTEMS="serf ringkv"
PHASE_MAX=60
KEEP=0
while getopts r:n:s:t:k opt; do
    case $opt in
    r) RUNS=$OPTARG ;;
    n) SIZES=$OPTARG ;;
    s) SYSTEMS=$OPTARG ;;
    t) PHASE_MAX=$OPTARG ;;
    k) KEEP=1 ;;
    *) exit 2 ;;
    esac
done
SETTLE=5
top_builddir=${top_builddir:-$(pwd)}
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
WATCH="$(cd "$(dirname "$0")" && pwd)/gossip_watch.py"
for tool in serf redis-cli python3; do
    command -v "$tool" > /dev/null || { echo "bench_gossip: $tool not found: run cluster-scripts/install-deps"; exit 1; }
done
[ -x "$RINGKVD" ] || { echo "bench_gossip: build ringkvd first ($RINGKVD)"; exit 1; }

DIR=$(mktemp -d "$top_builddir/bench-gossip.XXXXXX")
PIDS=""
cleanup() {
    for pid in $PIDS; do kill -9 "$pid" 2> /dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2> /dev/null || true; done
    if [ "$KEEP" -eq 1 ]; then echo "bench_gossip: logs kept in $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# wait_for CMD...: run CMD every 50 ms until it succeeds, for up to 10 s.
wait_for() {
    tries=0
    until "$@" > /dev/null 2>&1; do
        tries=$((tries + 1))
        [ $tries -lt 200 ] || return 1
        sleep 0.05
    done
}

# start_serf I ADDR BIND RPC JOIN: agent nI; sets PID.
start_serf() {
    serf agent -node "n$1" -bind "$2:$3" -rpc-addr "$2:$4" -profile=lan ${5:+-join=$5} \
        < /dev/null > "$DIR/$TAG-n$1.log" 2>&1 &
    PID=$!
    ANSWERS="serf members -rpc-addr=$2:$4"
    WATCHED="$2:$4"
    SEED_ADDR="$2:$3"
}

# start_ringkv I ADDR PEER CLIENT SEED: node nI; sets PID.
start_ringkv() {
    "$RINGKVD" --id "n$1" --cluster-key "$DIR/key" --data "$DIR/$TAG-n$1.data" \
        --listen "$2:$3" --client "$2:$4" ${5:+--seeds "$5"} --rf 1 --r 1 --w 1 \
        < /dev/null > "$DIR/$TAG-n$1.log" 2>&1 &
    PID=$!
    ANSWERS="redis-cli -h $2 -p $4 PING"
    WATCHED="$2:$4"
    SEED_ADDR="$2:$3"
}

# start_cluster SYSTEM N: nodes n1..nN; sets NODES (id=addr for the watcher),
# CLUSTER (PIDs), PID_<i>, and T0 (wall clock just before starting nN).
start_cluster() {
    if [ "$1" = serf ]; then base=20 ports="7946 7373"; else base=40 ports="7371 7370"; fi
    # shellcheck disable=SC2086
    python3 "$WATCH" ports $base "$2" $ports > "$DIR/ports"
    NODES="" CLUSTER="" seed="" i=0
    while read -r addr p1 p2; do
        i=$((i + 1))
        [ $i -lt "$2" ] || T0=$(date +%s.%N)
        "start_$1" $i "$addr" "$p1" "$p2" "$seed"
        PIDS="$PIDS $PID" CLUSTER="$CLUSTER $PID" NODES="$NODES n$i=$WATCHED"
        eval "PID_$i=$PID"
        [ -n "$seed" ] || seed=$SEED_ADDR
        # shellcheck disable=SC2086
        [ $i -eq "$2" ] || wait_for $ANSWERS < /dev/null ||
            { echo "bench_gossip: $1 node n$i did not start (log: $DIR/$TAG-n$i.log)"; exit 1; }
    done < "$DIR/ports"
}

# stop_cluster: SIGTERM to every process of the cluster, SIGKILL after 10 s.
stop_cluster() {
    for pid in $CLUSTER; do kill "$pid" 2> /dev/null || true; done
    for pid in $CLUSTER; do
        tries=0
        while kill -0 "$pid" 2> /dev/null && [ $tries -lt 100 ]; do
            sleep 0.1
            tries=$((tries + 1))
        done
        kill -9 "$pid" 2> /dev/null || true
        wait "$pid" 2> /dev/null || true
    done
    for pid in $CLUSTER; do forget "$pid"; done
}

# forget PID: a process that has been waited for leaves PIDS and CLUSTER.
forget() {
    rest=""
    for pid in $PIDS; do [ "$pid" = "$1" ] || rest="$rest $pid"; done
    PIDS=$rest
    rest=""
    for pid in $CLUSTER; do [ "$pid" = "$1" ] || rest="$rest $pid"; done
    CLUSTER=$rest
}

# why SYSTEM VICTIM: what the logs say about how the victim was declared.
why() {
    if [ "$1" = serf ]; then
        grep -h "Marking $2 as failed, suspect timeout reached" "$DIR/$TAG"-n*.log 2> /dev/null |
            sed 's/.*(\([0-9]*\) peer confirmations).*/\1/' | sort -n |
            awk '{ c[NR] = $1 } END { if (NR) printf "; suspect timeout reached on %d agent%s, with %s-%s confirmations", NR, (NR > 1 ? "s" : ""), c[1], c[NR] }'
    else
        grep -h "event=member_down id=$2 " "$DIR/$TAG"-n*.log 2> /dev/null |
            sed -n 's/.* phi=\([0-9.]*\).*/\1/p' | sort -n |
            awk '{ p[NR] = $1 } END { if (NR) printf "; %d member_down lines, phi %s-%s", NR, p[1], p[NR] }'
    fi
}

# measure SYSTEM N RUN VICTIM: one fresh cluster; appends a line to results.
measure() {
    system=$1 n=$2 run=$3 victim=$4
    TAG="$system-$n-$run"
    start_cluster "$system" "$n"
    conv=$(python3 "$WATCH" converge "$system" "$NODES" --t0 "$T0" --timeout "$PHASE_MAX" \
        --log "$DIR/$TAG.watch")
    vpid=$(eval "printf '%s' \"\$PID_$victim\"")
    det=$(python3 "$WATCH" detect "$system" "$NODES" --victim "n$victim" --kill "$vpid" \
        --settle $SETTLE --timeout "$PHASE_MAX" --log "$DIR/$TAG.watch")
    kill -9 "$vpid" 2> /dev/null || true
    wait "$vpid" 2> /dev/null || true
    forget "$vpid"
    info=$(printf '%s' "$det" | sed -n 's/.* info //p')
    info="$info$(why "$system" "n$victim")"
    stop_cluster
    # "converge S fp F polls R" and "detect S fp F polls R [info ...]"
    # shellcheck disable=SC2086
    set -- $conv
    conv_s=$2 fp=$4
    # shellcheck disable=SC2086
    set -- $det
    det_s=$2 fp=$((fp + $4))
    echo "$system $n $run $conv_s $det_s $fp n$victim" >> "$DIR/results"
    printf '  %-6s N=%-2s run %s: convergence %7s s, detection %7s s (killed n%s), false positives %d%s\n' \
        "$system" "$n" "$run" "$conv_s" "$det_s" "$victim" "$fp" "${info:+ [${info#; }]}"
}

"$RINGKV" keygen "$DIR/key" > /dev/null
: > "$DIR/results"
interval=$("$RINGKVD" --help 2>&1 | sed -n 's/.*--gossip-interval.*(default: \([^)]*\)).*/\1/p')
echo "bench_gossip: $(nproc) CPUs shared by every node of a cluster and the poller; logs in $DIR"
echo "bench_gossip: serf $(serf version | head -1 | sed 's/^Serf //') (package $(dpkg-query -W -f='${Version}' serf 2> /dev/null || echo '?')), agent -profile=lan (memberlist DefaultLANConfig):"
echo "  probe every 1 s, probe timeout 0.5 s, 3 indirect probes, gossip to 3 nodes every 200 ms,"
echo "  retransmit 4*ceil(log10(N+1)), push/pull every 30 s, suspicion multiplier 4, max multiplier 6,"
echo "  awareness up to 8x; a suspect is declared failed after max(1,log10 N) * 4 * 1 s"
echo "  (4.0 s at N=8, 4.8 s at N=16) once 2 other members confirm it, up to 6 times that without"
echo "bench_gossip: ringkvd at its defaults: gossip-interval $interval, phi accrual, suspect at phi 5,"
echo "  down at phi 8 (a silent member is down after about 18.4 heartbeat intervals)"
echo "bench_gossip: $RUNS fresh clusters per system and size; phases give up after $PHASE_MAX s"
SEED=${BENCH_SEED:-$(od -An -N2 -tu2 /dev/urandom | tr -d ' ')}
echo "bench_gossip: killed nodes chosen with seed $SEED (BENCH_SEED=$SEED repeats the choice)"
for n in $SIZES; do
    for run in $(seq 1 "$RUNS"); do
        victim=$((2 + (SEED + run) % (n - 1)))
        for system in $SYSTEMS; do
            measure "$system" "$n" "$run" "$victim"
        done
    done
done

awk -v sizes="$SIZES" -v limit="$PHASE_MAX" '
function median(s, n,   a, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j] + 0 < a[j - 1] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    if (n == 0) return "-"
    lo[0] = a[1]; hi[0] = a[n]
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function cell(s, timeouts,   m) {
    m = median(s)
    if (m == "-") return sprintf("%-24s", "   all timed out")
    return sprintf("%6.2f (%5.2f-%5.2f)%-4s", m, lo[0], hi[0], timeouts ? sprintf(" %dto", timeouts) : "")
}
{
    k = $1 " " $2
    if ($4 == "timeout") cto[k]++; else conv[k] = conv[k] " " $4
    if ($5 == "timeout") dto[k]++; else det[k] = det[k] " " $5
    fp[k] += $6; runs[k]++
}
END {
    printf "\n%-7s %3s %4s  %-24s  %-24s  %s\n", "", "", "", "   convergence s", "   detection s", "false"
    printf "%-7s %3s %4s  %-24s  %-24s  %s\n", "system", "N", "runs", "median (min-max)", "median (min-max)", "positives"
    split(sizes, ns, " ")
    for (i = 1; i in ns; i++) for (s = 1; s <= 2; s++) {
        sys = s == 1 ? "serf" : "ringkv"; k = sys " " ns[i]
        cm[k] = median(conv[k]); dm[k] = median(det[k])
        if (!runs[k]) continue
        printf "%-7s %3d %4d  %s  %s  %9d\n", sys, ns[i], runs[k], cell(conv[k], cto[k]), cell(det[k], dto[k]), fp[k]
        gaveup += cto[k] + dto[k]
    }
    if (gaveup) printf "(Nto: in N of the runs the phase gave up after %s s; the figures are of the others)\n", limit
    printf "\nratios serf/ringkv of the medians (>1: ringkv faster)\n"
    for (i = 1; i in ns; i++) {
        a = "serf " ns[i]; b = "ringkv " ns[i]
        printf "  N=%-3d convergence %s   detection %s\n", ns[i], ratio(cm[a], cm[b]), ratio(dm[a], dm[b])
    }
    printf "\ngoals (ringkv at its defaults; all nodes on 2 shared cores):\n"
    for (i = 1; i in ns; i++) {
        a = "serf " ns[i]; b = "ringkv " ns[i]
        g(sprintf("N=%d convergence at least as fast as serf", ns[i]), cm[b], cm[a], cto[b] + 0)
        g(sprintf("N=%d detection at least as fast as serf", ns[i]), dm[b], dm[a], dto[b] + 0)
    }
    for (i = 1; i in ns; i++) f += fp["ringkv " ns[i]]
    printf "  %-46s %13d  %s\n", "no false positives (ringkv, all runs)", f, f == 0 ? "PASS" : "MISS"
}
function ratio(x, y) { return (x == "-" || y == "-" || y == 0) ? "    -" : sprintf("%5.2fx", x / y) }
function g(what, mine, theirs, timeouts,   ok) {
    ok = mine != "-" && !timeouts && (theirs == "-" || mine + 0 <= theirs + 0)
    printf "  %-46s %s vs serf %s  %s\n", what, secs(mine), secs(theirs), ok ? "PASS" : "MISS"
}
function secs(x) { return x == "-" ? "     -  " : sprintf("%6.2f s", x) }
' "$DIR/results"
