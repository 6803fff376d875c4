#!/bin/sh
# bench_repl.sh - three ringkvd nodes replicating every key (rf 3, r 2, w 2)
# against one ringkvd alone (rf 1) and one redis-server, in the same run.
#
#   tests/bench/bench_repl.sh [-n REQUESTS]     (from a build tree; make bench runs it)
#
# Every figure is `redis-benchmark -t set,get -n REQUESTS -r 100000 -d 100
# -c 50 -P 16` (REQUESTS default 200000), SET first, then GET, each run
# bounded by BENCH_RUN_SECONDS as well.  Before each GET run (cluster and
# single node alike) the script waits until the nodes' write-ahead logs are
# checkpointed into LMDB (settle below): a checkpoint of the SET run's keys
# starts once a node's writer is idle and would otherwise run during the
# GETs, three of them in the cluster on the same two cores.  The time it
# took is printed; GET then measures reads.  The runs, in order:
#   cluster       n1, n2, n3 on 127.0.0.11, .12, .13 (each node's sockets on
#                 its own address), racks r1 r2 r3, --rf 3 --r 2 --w 2
#                 --sync batch --conflicts lww (BENCH_CONFLICTS: with
#                 siblings, the default, the three writers' SETs of the same
#                 random keys at once are concurrent versions, a GET of such
#                 a key answers -CONFLICT, and redis-benchmark stops at its
#                 first error reply), node k seeded with node k-1 (as
#                 tests/integration/lib.sh's it_cluster), measured once every
#                 node sees all three up and the ring converged.  The load is
#                 spread over the three: three redis-benchmark processes at
#                 once, one per node, each with a third of the requests and of
#                 the connections (17/17/16); the rate is the sum of the
#                 requests over the time of the slowest of the three.
#   single node   one ringkvd, --rf 1 --sync batch, one redis-benchmark -c 50
#   apart         three ringkvd, --rf 1, no seeds, on the cluster's addresses,
#                 loaded as the cluster (three redis-benchmark at once, the
#                 same split): the cluster's three stores on these cores
#                 without replication (the limit below)
#   redis         redis-server, appendonly yes, appendfsync everysec, the same
# The four run in turn, and the whole sequence BENCH_ROUNDS times (default
# 3), each round with fresh servers and data: one run's figures on two
# shared cores move by a fifth from one run to the next.  The table prints
# every round and the medians.  Every write to the cluster is stored three
# times on the same cores, so its goals are against the single node: SET at
# least 0.3x and GET at least 0.4x, judged on the median of the rounds'
# ratios, each round's cluster against the same round's single node
# (printed as met or missed); the Redis ratio is printed beside.  The limit
# and the counters below the table are the median SET round's.  The
# physical limit it is compared with comes from the same run: the single
# node's store writes per second (ringkv_store_writes around its SET run),
# which the cluster's three stores together (each replica's writes, summed)
# would have to share; for GET, the single node's store reads per second
# (one per GET) over the store reads of a cluster GET (its own and the
# replica reads it asked for, ringkv_replica_reads).  The one node cannot
# keep both cores busy, three can: the apart run measures what three stores
# at once reach here, and its rates over 3 (SET) and 2 (GET) are the
# cluster's limit with replication costing nothing.  The cluster's INFO counters (ringkv_forwarded,
# coordinated writes and reads, TRYAGAIN, NOREPLICAS, read repairs, replica
# writes and reads, store writes, hints, failed SET/GET calls), summed over
# the three nodes, are printed for each of the two runs, so a reader sees
# how much was forwarded and that nothing failed.
# The data of every server lives in the build tree (a real disk), fresh per
# run and removed at the end; servers are started by this script and stopped
# by their PIDs.  The script reports, it does not assert: it exits 0
# whenever it ran.
set -eu

N=200000
[ "${1:-}" = "-n" ] && N=$2
ROUNDS=${BENCH_ROUNDS:-3}
RUN_SECONDS=${BENCH_RUN_SECONDS:-120}
KEYS=100000
VALUE=100
PIPE=16
top_builddir=${top_builddir:-$(pwd)}
FREE_PORT="$(cd "$(dirname "$0")/.." && pwd)/free_port.py"
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
for tool in redis-benchmark redis-server redis-cli python3 timeout; do
    command -v "$tool" > /dev/null || { echo "bench_repl: $tool not found: run cluster-scripts/install-deps"; exit 1; }
done
[ -x "$RINGKVD" ] || { echo "bench_repl: build ringkvd first ($RINGKVD)"; exit 1; }
[ -x "$RINGKV" ] || { echo "bench_repl: build ringkv first ($RINGKV)"; exit 1; }

DIR=$(mktemp -d "$top_builddir/bench-repl.XXXXXX")
PIDS=""
cleanup() {
    for pid in $PIDS; do kill "$pid" 2> /dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2> /dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

# free_port ADDRESS: a TCP port nobody listens on at ADDRESS.
free_port() {
    python3 "$FREE_PORT" "$1"
}

# wait_ping ADDRESS PORT
wait_ping() {
    i=0
    until redis-cli -h "$1" -p "$2" PING > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 200 ] || { echo "bench_repl: server on $1:$2 did not start"; exit 1; }
        sleep 0.05
    done
}

# start_node ID ADDRESS [ARGS...]: a fresh ringkvd --sync batch on ADDRESS;
# sets ID_ADDR, ID_PORT (client), ID_PEER, ID_PID.
start_node() {
    id=$1
    addr=$2
    shift 2
    port=$(free_port "$addr")
    peer=$(free_port "$addr")
    rm -rf "$DIR/$id-data"
    "$RINGKVD" --id "$id" --cluster-key "$DIR/key" --data "$DIR/$id-data" --sync batch "$@" \
        --client "$addr:$port" --listen "$addr:$peer" --log-level warn > "$DIR/$id.log" 2>&1 &
    pid=$!
    PIDS="$PIDS $pid"
    eval "${id}_ADDR=$addr ${id}_PORT=$port ${id}_PEER=$peer ${id}_PID=$pid"
}

# var ID NAME: the value of ID_NAME.
var() { eval "printf '%s' \"\$${1}_$2\""; }

# start_redis: a fresh redis-server, append-only file fsynced every second; sets redis_*.
start_redis() {
    port=$(free_port 127.0.0.1)
    rm -rf "$DIR/redis-data"
    mkdir -p "$DIR/redis-data"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$DIR/redis-data" --save '' \
        --appendonly yes --appendfsync everysec --daemonize no --logfile "$DIR/redis.log" &
    pid=$!
    PIDS="$PIDS $pid"
    # shellcheck disable=SC2034 # read through var()
    redis_ADDR=127.0.0.1 redis_PORT=$port redis_PID=$pid
    wait_ping 127.0.0.1 "$port"
}

# stop ID...: stop the servers by their PIDs.
stop() {
    for id in "$@"; do kill "$(var "$id" PID)" 2> /dev/null || true; done
    for id in "$@"; do wait "$(var "$id" PID)" 2> /dev/null || true; done
}

# info ID: the node's INFO all, one name:value a line.
info() { redis-cli -h "$(var "$1" ADDR)" -p "$(var "$1" PORT)" INFO all 2> /dev/null | tr -d '\r'; }

# wait_cluster ID...: until every node sees all of them up and the ring converged (30 s).
wait_cluster() {
    want=$#
    i=0
    while :; do
        ok=0
        for id in "$@"; do
            info "$id" | awk -F: -v n="$want" '$1 == "ringkv_up" { u = $2 } $1 == "ringkv_converged" { c = $2 }
                END { exit !(u == n && c == 1) }' && ok=$((ok + 1))
        done
        [ "$ok" -lt "$want" ] || break
        i=$((i + 1))
        [ $i -lt 600 ] || { echo "bench_repl: the cluster did not converge in 30 s"; exit 1; }
        sleep 0.05
    done
}

# settle ID...: until every node's write-ahead log is moved into LMDB (INFO
# ringkv_store_log_keys 0: the checkpoint a SET run leaves behind, which a
# node starts once its writer is idle), at most 60 s; prints how long it took.
settle() {
    t0=$(date +%s%3N)
    i=0
    while :; do
        left=0
        for id in "$@"; do
            k=$(info "$id" | awk -F: '$1 == "ringkv_store_log_keys" { print $2 }')
            left=$((left + ${k:-0}))
        done
        [ "$left" -gt 0 ] || break
        i=$((i + 1))
        [ $i -lt 1200 ] || { echo "  ($* still logging $left keys after 60 s: measured anyway)"; return 0; }
        sleep 0.05
    done
    echo "  $* settled (log checkpointed into LMDB) after $(($(date +%s%3N) - t0)) ms"
}

# The replication counters summed over nodes (plus failed SET and GET calls).
COUNTERS="ringkv_forwarded ringkv_forwards_served ringkv_coordinated_writes ringkv_coordinated_reads
ringkv_replica_writes ringkv_replica_reads ringkv_tryagain ringkv_noreplicas ringkv_read_repairs
ringkv_hints_stored ringkv_peer_queue_full ringkv_store_writes failed_set failed_get"

# counters ID...: "name value" lines, each summed over the nodes.
counters() {
    for id in "$@"; do info "$id"; done | awk -v names="$COUNTERS" '
        BEGIN { n = split(names, k, /[ \n]+/); for (i = 1; i <= n; i++) want[k[i]] = 1 }
        /^cmdstat_(set|get):/ {
            m = split($0, a, /[:,=]/); name = a[1]; sub(/^cmdstat_/, "failed_", name)
            for (i = 2; i < m; i++) if (a[i] == "failed_calls") sum[name] += a[i + 1]
            next
        }
        { split($0, a, ":"); if (a[1] in want) sum[a[1]] += a[2] }
        END { for (i = 1; i <= n; i++) if (k[i] != "") print k[i], sum[k[i]] + 0 }'
}

# put KEY VALUE / get KEY: the figures of this run.
put() { echo "$1 $2" >> "$RUN/results"; }
get() { awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? 0 : v) }' "$RUN/results"; }

# delta NAME BEFORE_FILE AFTER_FILE: a counter's growth.
delta() {
    awk -v k="$1" 'FNR == NR && $1 == k { b = $2 } FNR != NR && $1 == k { a = $2 } END { print a - b }' "$2" "$3"
}

# bench NAME TEST ID:REQUESTS:CLIENTS...: one redis-benchmark per ID at once,
# each bounded by BENCH_RUN_SECONDS; records NAME.rps (the requests of all
# over the time of the slowest, each one's time being its requests over its
# own rate), NAME.secs, NAME.p99 (the worst), and prints a progress line.
bench() {
    name=$1
    test=$2
    shift 2
    procs=""
    for spec in "$@"; do
        id=${spec%%:*}
        rest=${spec#*:}
        timeout "$RUN_SECONDS" redis-benchmark -h "$(var "$id" ADDR)" -p "$(var "$id" PORT)" -t "$test" \
            -n "${rest%%:*}" -r "$KEYS" -d "$VALUE" -c "${rest#*:}" -P "$PIPE" --csv \
            > "$RUN/$name.$id.csv" 2> "$RUN/$name.$id.err" &
        procs="$procs $!"
    done
    for p in $procs; do wait "$p" || true; done
    for spec in "$@"; do
        id=${spec%%:*}
        rest=${spec#*:}
        tr -d '"\r' < "$RUN/$name.$id.csv" |
            awk -F, -v id="$id" -v n="${rest%%:*}" 'NR > 1 && NF >= 7 { print id, n, $2, $7 }'
    done > "$RUN/$name.parts"
    awk -v parts="$#" -v name="$name" '
        { n += $2; t = ($3 > 0 ? $2 / $3 : 0); if (t > secs) secs = t; if ($4 > p99) p99 = $4; got++
          line = line sprintf(" %s %.0f/s", $1, $3) }
        END {
            ok = got == parts && secs > 0
            printf "%s.rps %.0f\n%s.secs %.3f\n%s.p99 %s\n%s.parts%s\n", name, ok ? n / secs : 0,
                name, secs, name, p99 + 0, name, line
        }' "$RUN/$name.parts" >> "$RUN/results"
    printf '  %-16s %10.0f req/s  %6.2f s  p99 %s ms  (%s)\n' "$name" "$(get "$name.rps")" \
        "$(get "$name.secs")" "$(get "$name.p99")" "$(awk -v k="$name.parts" '$1 == k { $1 = ""; print substr($0, 2) }' "$RUN/results")"
    # redis-benchmark stops at the first error reply: say which
    for spec in "$@"; do
        id=${spec%%:*}
        grep -q "^${id} " "$RUN/$name.parts" ||
            echo "  $name: redis-benchmark against $id gave no figure: $(grep -v WARNING "$RUN/$name.$id.err" | tail -n 1)"
    done
}

# bench_counted NAME TEST SPEC...: bench, with the counters of CLUSTER_IDS
# read around it into NAME.before and NAME.after.
bench_counted() {
    name=$1
    # shellcheck disable=SC2086 # one id a word
    counters $CLUSTER_IDS > "$RUN/$name.before"
    bench "$@"
    # shellcheck disable=SC2086
    counters $CLUSTER_IDS > "$RUN/$name.after"
}

START=$(date +%s)
"$RINGKV" keygen "$DIR/key" > /dev/null
C1=$(((50 + 2) / 3))
C3=$((50 - 2 * C1))
N1=$(((N + 2) / 3))
N3=$((N - 2 * N1))
echo "bench_repl: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), redis-server" \
    "$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), data in $DIR ($(stat -f -c %T "$DIR"))"
echo "bench_repl: redis-benchmark -n $N -r $KEYS -d $VALUE -c 50 -P $PIPE; the cluster's split over" \
    "its nodes: -n $N1/$N1/$N3, -c $C1/$C1/$C3"

REPL="--rf 3 --r 2 --w 2 --conflicts ${BENCH_CONFLICTS:-lww}"
for R in $(seq "$ROUNDS"); do
    RUN="$DIR/r$R"
    mkdir -p "$RUN"
    echo "round $R of $ROUNDS"
    # The cluster: node k seeded with node k-1.
    # shellcheck disable=SC2086 # one flag a word
    start_node n1 127.0.0.11 --rack r1 $REPL
    # shellcheck disable=SC2086
    start_node n2 127.0.0.12 --rack r2 $REPL --seeds "$(var n1 ADDR):$(var n1 PEER)"
    # shellcheck disable=SC2086
    start_node n3 127.0.0.13 --rack r3 $REPL --seeds "$(var n2 ADDR):$(var n2 PEER)"
    CLUSTER_IDS="n1 n2 n3"
    for id in $CLUSTER_IDS; do wait_ping "$(var "$id" ADDR)" "$(var "$id" PORT)"; done
    t0=$(date +%s%3N)
    # shellcheck disable=SC2086 # one id a word
    wait_cluster $CLUSTER_IDS
    echo "  cluster up and converged on every node after $(($(date +%s%3N) - t0)) ms"
    bench_counted cluster.set set "n1:$N1:$C1" "n2:$N1:$C1" "n3:$N3:$C3"
    # shellcheck disable=SC2086
    settle $CLUSTER_IDS
    bench_counted cluster.get get "n1:$N1:$C1" "n2:$N1:$C1" "n3:$N3:$C3"
    # shellcheck disable=SC2086
    stop $CLUSTER_IDS

    start_node single 127.0.0.11 --rf 1 --r 1 --w 1
    wait_ping "$(var single ADDR)" "$(var single PORT)"
    CLUSTER_IDS=single
    bench_counted single.set set "single:$N:50"
    settle single
    bench_counted single.get get "single:$N:50"
    stop single

    # Three independent nodes at once (rf 1, no seeds), the load split as the
    # cluster's: the three stores of the cluster, each with its own keys, on
    # the same cores, without replication.  A cluster SET stores three copies
    # and a GET reads two, so this run's rates over 3 and 2 are what the
    # cluster would reach if replication itself cost nothing.
    start_node s1 127.0.0.11 --rf 1 --r 1 --w 1
    start_node s2 127.0.0.12 --rf 1 --r 1 --w 1
    start_node s3 127.0.0.13 --rf 1 --r 1 --w 1
    CLUSTER_IDS="s1 s2 s3"
    for id in $CLUSTER_IDS; do wait_ping "$(var "$id" ADDR)" "$(var "$id" PORT)"; done
    bench_counted apart.set set "s1:$N1:$C1" "s2:$N1:$C1" "s3:$N3:$C3"
    # shellcheck disable=SC2086
    settle $CLUSTER_IDS
    bench_counted apart.get get "s1:$N1:$C1" "s2:$N1:$C1" "s3:$N3:$C3"
    # shellcheck disable=SC2086
    stop $CLUSTER_IDS

    start_redis
    bench redis.set set "redis:$N:50"
    bench redis.get get "redis:$N:50"
    stop redis
done

# figures TEST: "round cluster single redis" for each round, one a line.
figures() {
    for r in $(seq "$ROUNDS"); do
        RUN="$DIR/r$r"
        echo "$r $(get "cluster.$1.rps") $(get "single.$1.rps") $(get "redis.$1.rps")"
    done
}

# row FIGURE TEST GOAL: the rounds' lines of the table, then their medians
# (each column's own median); the verdict is on the median of the rounds'
# ratios, each round's cluster against that round's single node.
row() {
    figures "$2" | awk -v f="$1" -v g="$3" -v rounds="$ROUNDS" '
        function median(a, n,    i, j, t) {
            for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        {
            n++; c[n] = $2; s[n] = $3; r[n] = $4
            rs[n] = $3 > 0 ? $2 / $3 : 0; rr[n] = $4 > 0 ? $2 / $4 : 0
            if (rounds > 1) printf "%-10s %12.0f %12.0f %12.0f %9.2fx %9.2fx\n", f " " $1, $2, $3, $4, rs[n], rr[n]
        }
        END {
            mrs = median(rs, n)
            printf "%-10s %12.0f %12.0f %12.0f %9.2fx %9.2fx  %-8s %s\n", f (rounds > 1 ? " median" : ""),
                   median(c, n), median(s, n), median(r, n), mrs, median(rr, n), ">= " g "x",
                   (mrs >= g ? "met" : "missed")
        }'
}

echo
printf '%-10s %12s %12s %12s %10s %10s  %-8s %s\n' "" "3 nodes/s" "single/s" "redis/s" \
    "/single" "/redis" goal result
row SET set 0.3
row GET get 0.4

# The sections below are of one round: the one whose SET ratio is the median.
RUN="$DIR/r$(figures set | awk '{ print ($3 > 0 ? $2 / $3 : 0), $1 }' | sort -n |
    awk -v n="$ROUNDS" 'NR == int((n + 1) / 2) { print $2 }')"
[ "$ROUNDS" -gt 1 ] && echo && echo "(below: round ${RUN##*/r}, the median SET ratio)"

# The physical limit: store writes per second, the cluster's three stores
# together against the single node's one, over each SET run's time.
cw=$(delta ringkv_store_writes "$RUN/cluster.set.before" "$RUN/cluster.set.after")
sw=$(delta ringkv_store_writes "$RUN/single.set.before" "$RUN/single.set.after")
echo
awk -v cw="$cw" -v ct="$(get cluster.set.secs)" -v sw="$sw" -v st="$(get single.set.secs)" \
    -v cr="$(get cluster.set.rps)" -v sr="$(get single.set.rps)" 'BEGIN {
    cps = ct > 0 ? cw / ct : 0; sps = st > 0 ? sw / st : 0
    printf "limit: the single node stored %d writes in %.2f s (%.0f/s) on these cores; the three\n", sw, st, sps
    printf "  stores of the cluster %d (%.1f per SET) in %.2f s (%.0f/s, %.2fx the single node); a cluster SET\n", cw, (cr > 0 && ct > 0 ? cw / (cr * ct) : 0), ct, cps, (sps > 0 ? cps / sps : 0)
    printf "  stores rf = 3 copies, so at the store rate of the single node it would reach %.0f/s (%.2fx the single node)\n", sps / 3, (sr > 0 ? sps / 3 / sr : 0)
}'
# and for GET: the single node reads its store once per GET; a cluster GET at r 2 twice
# (the coordinator's copy and one other replica's), the replica reads counted by the nodes
crr=$(delta ringkv_replica_reads "$RUN/cluster.get.before" "$RUN/cluster.get.after")
awk -v crr="$crr" -v cr="$(get cluster.get.rps)" -v ct="$(get cluster.get.secs)" \
    -v sr="$(get single.get.rps)" 'BEGIN {
    reads = (cr > 0 && ct > 0) ? 1 + crr / (cr * ct) : 2
    printf "  a cluster GET read %.1f stores (its own and %.1f replica reads); at the single node'"'"'s\n", reads, reads - 1
    printf "  %.0f store reads/s it would reach %.0f/s (%.2fx the single node)\n", sr, sr / reads, 1 / reads
}'

# and measured: three nodes apart at once on these cores, the cluster's stores without replication
awk -v as="$(get apart.set.rps)" -v ag="$(get apart.get.rps)" -v cs="$(get cluster.set.rps)" \
    -v cg="$(get cluster.get.rps)" -v sr="$(get single.set.rps)" -v gr="$(get single.get.rps)" 'BEGIN {
    printf "  three nodes apart (rf 1, the same split) at once: SET %.0f/s, GET %.0f/s in all; three copies\n", as, ag
    printf "  a SET and two reads a GET at those rates: SET %.0f/s (%.2fx the single node), GET %.0f/s (%.2fx);\n", as / 3, (sr > 0 ? as / 3 / sr : 0), ag / 2, (gr > 0 ? ag / 2 / gr : 0)
    printf "  the cluster reached %.0f%% and %.0f%% of them (the rest: replication messages and their bookkeeping)\n", (as > 0 ? 300 * cs / as : 0), (ag > 0 ? 200 * cg / ag : 0)
}'

echo
echo "cluster counters, summed over n1 n2 n3 (growth during each run):"
printf '  %-28s %10s %10s\n' counter SET GET
for k in $COUNTERS; do
    printf '  %-28s %10s %10s\n' "$k" "$(delta "$k" "$RUN/cluster.set.before" "$RUN/cluster.set.after")" \
        "$(delta "$k" "$RUN/cluster.get.before" "$RUN/cluster.get.after")"
done
echo "(failed_set, failed_get: SET and GET calls answered with an error, from INFO commandstats)"
echo "bench_repl: $(($(date +%s) - START)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
