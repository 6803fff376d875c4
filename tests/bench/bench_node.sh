#!/bin/sh
# bench_node.sh - one ringkvd (rf 1) against redis-server, through the same
# client, in the same run.
#
#   tests/bench/bench_node.sh [-n REQUESTS]     (from a build tree; make bench runs it)
#
# For each durability pair - ringkvd `sync batch` with Redis `appendfsync
# everysec`, ringkvd `sync always` with Redis `appendfsync always` - runs
#   redis-benchmark -t set,get -n N -r 100000 -d 100 -c 50 -P {1,16} --csv
# against each server and prints requests per second, p50 and p99 latency,
# and ringkv's ratio to Redis.  Both servers keep their data in the build
# tree (a real disk, where fsync costs what it costs), are started by this
# script and stopped by their PIDs.  The goals of the node's issue are
# printed beside the figures; the script reports, it does not assert.
set -eu

N=200000
[ "${1:-}" = "-n" ] && N=$2
top_builddir=${top_builddir:-$(pwd)}
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
for tool in redis-benchmark redis-server redis-cli; do
    command -v "$tool" > /dev/null || { echo "bench_node: $tool not found: run cluster-scripts/install-deps"; exit 1; }
done
[ -x "$RINGKVD" ] || { echo "bench_node: build ringkvd first ($RINGKVD)"; exit 1; }

DIR=$(mktemp -d "$top_builddir/bench-node.XXXXXX")
PIDS=""
cleanup() {
    for pid in $PIDS; do kill "$pid" 2> /dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2> /dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ping() {
    i=0
    until redis-cli -p "$1" PING > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 200 ] || { echo "bench_node: server on port $1 did not start"; exit 1; }
        sleep 0.05
    done
}

# start_ringkv SYNC: starts a fresh node; sets PORT and PID.
start_ringkv() {
    PORT=$(free_port)
    rm -rf "$DIR/ringkv-data"
    "$RINGKVD" --id bench --cluster-key "$DIR/key" --data "$DIR/ringkv-data" --rf 1 --r 1 --w 1 \
        --sync "$1" --client "127.0.0.1:$PORT" --listen "127.0.0.1:$(free_port)" \
        --log-level warn > "$DIR/ringkv.log" 2>&1 &
    PID=$!
    PIDS="$PIDS $PID"
    wait_ping "$PORT"
}

# start_redis FSYNC: starts a fresh redis-server with the append-only file on; sets PORT and PID.
start_redis() {
    PORT=$(free_port)
    rm -rf "$DIR/redis-data"
    mkdir -p "$DIR/redis-data"
    redis-server --bind 127.0.0.1 --port "$PORT" --dir "$DIR/redis-data" --save '' \
        --appendonly yes --appendfsync "$1" --daemonize no --logfile "$DIR/redis.log" &
    PID=$!
    PIDS="$PIDS $PID"
    wait_ping "$PORT"
}

stop() {
    kill "$PID"
    wait "$PID" 2> /dev/null || true
}

# run NAME PIPELINE: benchmark the server on PORT; appends "name P test rps p50 p99" lines.
run() {
    redis-benchmark -p "$PORT" -t set,get -n "$N" -r 100000 -d 100 -c 50 -P "$2" --csv \
        2> /dev/null | tr -d '"\r' | awk -F, -v name="$1" -v p="$2" \
        'NR > 1 && NF >= 7 { printf "%s %s %s %.0f %s %s\n", name, p, $1, $2, $5, $7 }' \
        >> "$DIR/results"
}

"$RINGKV" keygen "$DIR/key" > /dev/null
: > "$DIR/results"
echo "bench_node: $(nproc) CPUs, redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), data in $DIR"
echo "bench_node: redis-benchmark -t set,get -n $N -r 100000 -d 100 -c 50, -P 1 and -P 16"
for pair in "batch everysec" "always always"; do
    set -- $pair
    for p in 1 16; do
        start_ringkv "$1"
        run "ringkv-$1" "$p"
        stop
        start_redis "$2"
        run "redis-$2" "$p"
        stop
    done
done

awk '
{ rps[$1" "$2" "$3] = $4; p50[$1" "$2" "$3] = $5; p99[$1" "$2" "$3] = $6 }
END {
    printf "\n%-22s %3s %-4s %12s %9s %9s   %-22s %12s %9s %9s %7s\n", "ringkv", "P", "test",
           "ops/s", "p50 ms", "p99 ms", "redis", "ops/s", "p50 ms", "p99 ms", "ratio"
    split("batch:everysec always:always", pairs, " ")
    for (i = 1; i <= 2; i++) {
        split(pairs[i], m, ":")
        for (p = 1; p <= 16; p += 15) {
            for (t = 1; t <= 2; t++) {
                test = t == 1 ? "SET" : "GET"
                a = "ringkv-" m[1] " " p " " test; b = "redis-" m[2] " " p " " test
                ratio[m[1]" "p" "test] = rps[b] > 0 ? rps[a] / rps[b] : 0
                printf "%-22s %3d %-4s %12d %9s %9s   %-22s %12d %9s %9s %6.2fx\n",
                       "sync " m[1], p, test, rps[a], p50[a], p99[a],
                       "appendfsync " m[2], rps[b], p50[b], p99[b], ratio[m[1]" "p" "test]
            }
        }
    }
    printf "\ngoals (this machine):\n"
    g("sync batch SET -P 16 >= 0.5x Redis everysec", ratio["batch 16 SET"], 0.5)
    g("sync batch GET -P 16 >= 0.7x Redis everysec", ratio["batch 16 GET"], 0.7)
    g("sync always SET -P 16 >= 1.0x Redis always", ratio["always 16 SET"], 1.0)
}
function g(what, r, want) { printf "  %-46s %6.2fx  %s\n", what, r, (r >= want ? "PASS" : "MISS") }
' "$DIR/results"
