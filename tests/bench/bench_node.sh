#!/bin/sh
# bench_node.sh - one ringkvd (rf 1) against its peers in the same run:
# redis-server with its append-only file, and raw LMDB (tests/bench/bench_lmdb)
# doing the node's writes without the node.
#
#   tests/bench/bench_node.sh [-n REQUESTS] [--alt]  (from a build tree; make bench runs it)
#
# Every figure is `redis-benchmark -c 50 -d 100 -r 100000` (REQUESTS requests
# at -P 16, default 200000, half as many at -P 1), each bounded by
# BENCH_RUN_SECONDS as well.  The runs, in order:
#   ringkvd --sync batch      SET, GET at -P 16, SET, GET at -P 1 (the default
#                              sync-interval, 10 ms)
#   ringkvd --sync batch --sync-interval 1s
#                              SET at -P 16 and -P 1: the durability window of
#                              Redis everysec (printed for reference)
#   redis appendfsync everysec the same four as the first node
#   ringkvd --sync always     SET at -P 16
#   redis appendfsync always   SET at -P 16 (printed for reference)
#   raw LMDB                   random puts of 100-byte values into a 100 K-key
#                              database, in transactions of the writes per
#                              commit the node reached: with one fsync per
#                              transaction at the `sync always` size; at the
#                              `sync batch` size with an fsync every 10 ms from
#                              a second thread (what a B-tree alone would
#                              cost `sync batch`), without fsync, and with
#                              MDB_WRITEMAP and an msync every 10 ms (why the
#                              store does not use MDB_WRITEMAP: see
#                              storage/store.c)
#   append-only file           (tests/bench/bench_log) records of the size the
#                              node logged per write, as many per write() as
#                              it put in one log record, fdatasync after each
#                              write: the physical limit of `sync always` (an
#                              fdatasync every 10 ms leaves the same appends
#                              bound by memory copies, millions a second: no
#                              limit for `sync batch` worth printing)
# The alternating pipeline (tests/bench/alt_pipeline.py, a one-thread
# client): 50 connections, opened before the clock starts, each send one
# pipeline of 200 pairs `SET k v` / `GET k` (100-byte values, fresh keys)
# at once; every reply is checked; the median of BENCH_ALT_RUNS runs
# (default 5) is printed as seconds and commands/s, against ringkvd
# `sync always` and Redis `always` (a GET must see its SET, and a SET's
# reply waits for its fsync), and against `sync batch` and Redis
# `everysec`, each measured on the servers of the runs above.  --alt runs
# only these, on fresh servers.
# The writes per commit (a commit: one log record or LMDB transaction) and
# the log bytes per write come from the node's INFO counters read before and
# after its SET runs (ringkv_store_writes, _commits, _log_bytes).  The node
# moves its log into LMDB (a checkpoint) after 100 ms without writes, so
# after each SET run the script waits for it (ringkv_store_log_keys 0) and
# also prints the run's rate with that wait counted ("with its
# checkpoint"): the writes' whole cost.
# Syscalls per request come from separate, shorter runs (BENCH_STRACE_REQUESTS
# requests) with `strace -C -f -y` attached to the server (the node, and Redis
# everysec for its SETs), since strace slows the server; the throughput runs only read the context switches of the node's
# threads from /proc.  The data of every server and of raw LMDB lives in the
# build tree (a real disk, where fsync costs what it costs), fresh per run
# and removed at the end; servers are started by this script and stopped by
# their PIDs.  The goals of the node's issue are printed as met or missed;
# the script reports, it does not assert: it exits 0 whenever it ran.
set -eu

N=200000
ONLY_ALT=0
while [ $# -gt 0 ]; do
    case $1 in
    -n) N=$2; shift 2 ;;
    --alt) ONLY_ALT=1; shift ;;
    *) echo "usage: bench_node.sh [-n REQUESTS] [--alt]"; exit 1 ;;
    esac
done
N1=$((N / 2))
ALT_RUNS=${BENCH_ALT_RUNS:-5}
ALTP="$(cd "$(dirname "$0")" && pwd)/alt_pipeline.py"
NS=${BENCH_STRACE_REQUESTS:-20000}
RUN_SECONDS=${BENCH_RUN_SECONDS:-120}
KEYS=100000
VALUE=100
top_builddir=${top_builddir:-$(pwd)}
FREE_PORT="$(cd "$(dirname "$0")/.." && pwd)/free_port.py"
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
LMDB="$top_builddir/tests/bench/bench_lmdb"
LOGB="$top_builddir/tests/bench/bench_log"
for tool in redis-benchmark redis-server redis-cli python3 timeout; do
    command -v "$tool" > /dev/null || { echo "bench_node: $tool not found: run cluster-scripts/install-deps"; exit 1; }
done
[ -x "$RINGKVD" ] || { echo "bench_node: build ringkvd first ($RINGKVD)"; exit 1; }
if [ "$ONLY_ALT" = 0 ]; then
    [ -x "$LMDB" ] || { echo "bench_node: build the raw-LMDB peer first: make bench-build ($LMDB)"; exit 1; }
    [ -x "$LOGB" ] || { echo "bench_node: build the append-only-file peer first: make bench-build ($LOGB)"; exit 1; }
fi
HAVE_STRACE=1
command -v strace > /dev/null || HAVE_STRACE=0

DIR=$(mktemp -d "$top_builddir/bench-node.XXXXXX")
PIDS=""
cleanup() {
    for pid in $PIDS; do kill "$pid" 2> /dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2> /dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

free_port() {
    python3 "$FREE_PORT" 127.0.0.1
}

wait_ping() {
    i=0
    until redis-cli -p "$1" PING > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 200 ] || { echo "bench_node: server on port $1 did not start"; exit 1; }
        sleep 0.05
    done
}

# start_ringkv SYNC [ARGS...]: starts a fresh node; sets PORT and PID.
start_ringkv() {
    PORT=$(free_port)
    rm -rf "$DIR/ringkv-data"
    sync_mode=$1
    shift
    "$RINGKVD" --id bench --cluster-key "$DIR/key" --data "$DIR/ringkv-data" --rf 1 --r 1 --w 1 \
        --sync "$sync_mode" "$@" --client "127.0.0.1:$PORT" --listen "127.0.0.1:$(free_port)" \
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

# put KEY VALUE / get KEY: the figures of this run.
put() { echo "$1 $2" >> "$DIR/results"; }
get() { awk -v k="$1" '$1 == k { v = $2 } END { print (v == "" ? 0 : v) }' "$DIR/results"; }

# ctxsw: voluntary and involuntary context switches of every thread of PID.
ctxsw() {
    cat /proc/"$PID"/task/*/status 2> /dev/null |
        awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

# store_counters: "writes commits log_bytes log_keys checkpoint_ms" from the node's INFO.
store_counters() {
    redis-cli -p "$PORT" INFO | tr -d '\r' | awk -F: '
        $1 == "ringkv_store_writes" { w = $2 } $1 == "ringkv_store_commits" { c = $2 }
        $1 == "ringkv_store_log_bytes" { b = $2 } $1 == "ringkv_store_log_keys" { k = $2 }
        $1 == "ringkv_store_checkpoint_ms" { t = $2 }
        END { print w + 0, c + 0, b + 0, k + 0, t + 0 }'
}

# now_ms: wall-clock milliseconds.
now_ms() { date +%s%3N; }

# checkpoint_wait NAME REQUESTS CKPT_MS_BEFORE: after a SET run, wait until the
# node has moved its write-ahead log into LMDB (log_keys 0: its checkpoint
# after 100 ms idle); records NAME.ckpt_ms, the time its checkpoints took
# since the run began (ringkv_store_checkpoint_ms), and NAME.rps_ckpt: the
# run's requests over its time plus that, so the deferred work is paid for.
checkpoint_wait() {
    i=0
    while [ "$(store_counters | cut -d' ' -f4)" != 0 ] && [ $i -lt 300 ]; do
        sleep 0.02
        i=$((i + 1))
    done
    ms=$(($(store_counters | cut -d' ' -f5) - $3))
    put "$1.ckpt_ms" "$ms"
    put "$1.rps_ckpt" "$(awk -v n="$2" -v r="$(get "$1.rps")" -v ms="$ms" \
        'BEGIN { print (r > 0 ? int(n / (n / r + ms / 1000)) : 0) }')"
}

# bench NAME TEST PIPELINE REQUESTS: one bounded redis-benchmark run against
# PORT; records NAME.rps and NAME.ctxsw (per request), prints a progress line.
bench() {
    before=$(ctxsw)
    line=$(timeout "$RUN_SECONDS" redis-benchmark -p "$PORT" -t "$2" -n "$4" -r "$KEYS" -d "$VALUE" \
        -c 50 -P "$3" --csv 2> /dev/null | tr -d '"\r' | awk -F, 'NR > 1 && NF >= 7 { print $2, $5, $7 }') || true
    after=$(ctxsw)
    set -- "$1" "$2" "$3" "$4" ${line:-0 - -}
    put "$1.rps" "$5"
    cs=$(awk -v a="$before" -v b="$after" -v n="$4" 'BEGIN { printf "%.3f", (b - a) / n }')
    put "$1.ctxsw" "$cs"
    printf '  %-26s %10.0f req/s  p50 %s ms  p99 %s ms  ctxsw/req %s\n' "$1" "$5" "$6" "$7" "$cs"
}

# bench_writes NAME PIPELINE REQUESTS: SET with the node's store counters read
# around it; records NAME.wpc (writes per commit).
bench_writes() {
    set -- "$1" "$2" "$3" $(store_counters)
    ck0=$8
    bench "$1" set "$2" "$3"
    n=$3
    set -- "$1" "$4" "$5" $(store_counters)
    wpc=$(awk -v w="$(($4 - $2))" -v c="$(($5 - $3))" 'BEGIN { printf "%.1f", (c > 0 ? w / c : 0) }')
    put "$1.wpc" "$wpc"
    bpw=$(awk -v b="$6" -v w="$(($4 - $2))" 'BEGIN { printf "%d", (w > 0 ? b / w : 0) }')
    put "$1.bpw" "$bpw"
    checkpoint_wait "$1" "$n" "$ck0"
    echo "  $1: $(($4 - $2)) writes in $(($5 - $3)) commits: $wpc writes per commit," \
        "$bpw log bytes per write; checkpoints $(get "$1.ckpt_ms") ms:" \
        "$(get "$1.rps_ckpt") req/s with them"
}

# strace_run NAME TEST PIPELINE: a short run with strace attached to the
# node (-C: every call, then the count of each); records NAME.sys (syscalls
# per request), NAME.sends (sendto, sendmsg, write, writev on a socket per
# request; LMDB's own write/writev and eventfd wake-ups are not sends) and
# NAME.top (the most frequent calls).
strace_run() {
    [ "$HAVE_STRACE" = 1 ] || return 0
    : > "$DIR/strace.err"
    strace -C -f -y -p "$PID" -o "$DIR/strace.out" 2> "$DIR/strace.err" &
    spid=$!
    threads=$(ls /proc/"$PID"/task | wc -l)
    i=0
    until grep -q "attached with" "$DIR/strace.err" ||
        [ "$(grep -c attached "$DIR/strace.err")" -ge "$threads" ]; do
        i=$((i + 1))
        [ $i -lt 100 ] || break
        sleep 0.05
    done
    timeout "$RUN_SECONDS" redis-benchmark -p "$PORT" -t "$2" -n "$NS" -r "$KEYS" -d "$VALUE" \
        -c 50 -P "$3" -q > /dev/null 2>&1 || true
    kill -INT "$spid" 2> /dev/null || true
    wait "$spid" 2> /dev/null || true
    awk -v n="$NS" -v name="$1" '
        /^% time/ { summary = 1; next }
        !summary && /^([0-9]+ +)?(sendto|sendmsg|write|writev)\([0-9]+<socket:/ { sends++ }
        !summary || $NF == "total" || $1 ~ /^-/ || NF < 5 { next }
        { calls[$NF] = $4; all += $4 }
        END {
            printf "%s.sys %.3f\n%s.sends %.3f\n", name, all / n, name, sends / n
            top = ""
            for (k = 0; k < 5; k++) {
                best = ""
                for (s in calls) if (best == "" || calls[s] > calls[best]) best = s
                if (best == "") break
                top = top (top == "" ? "" : ",") best "=" sprintf("%.3f", calls[best] / n)
                delete calls[best]
            }
            printf "%s.top %s\n", name, top
        }' "$DIR/strace.out" >> "$DIR/results"
    echo "  $1 (strace, $NS requests): $(get "$1.sys") syscalls/req, $(get "$1.sends") sends/req"
}

# lmdb NAME PER_TXN MODE [SECONDS]: raw LMDB in a fresh directory of the build
# tree (MODE: bench_lmdb's sync, nosync, batchMS, writemap-batchMS).
lmdb() {
    rm -rf "$DIR/lmdb"
    out=$("$LMDB" "$KEYS" "$VALUE" "$2" "$N" "${4:-30}" "$3" "$DIR/lmdb") || out=""
    rm -rf "$DIR/lmdb"
    rps=$(echo "$out" | sed -n 's/.*puts_per_s=\([0-9]*\).*/\1/p')
    put "$1.rps" "${rps:-0}"
    printf '  %-26s %10.0f puts/s  (%s puts per transaction, %s)\n' "$1" "${rps:-0}" "$2" "$3"
}

# logf NAME RECORD_BYTES PER_WRITE MODE: an append-only file in the build tree
# (bench_log's sync, nosync, batchMS): the physical limit of the node's log.
logf() {
    rm -rf "$DIR/log"
    mkdir -p "$DIR/log"
    out=$("$LOGB" "$2" "$3" "$N" 30 "$4" "$DIR/log") || out=""
    rm -rf "$DIR/log"
    rps=$(echo "$out" | sed -n 's/.*records_per_s=\([0-9]*\).*/\1/p')
    put "$1.rps" "${rps:-0}"
    printf '  %-26s %10.0f records/s  (%s bytes, %s per write, %s)\n' "$1" "${rps:-0}" "$2" "$3" "$4"
}

# alt NAME: the alternating pipeline against PORT; records NAME.rps (commands/s at the
# median) and NAME.s (the median's seconds), prints a progress line.
alt() {
    out=$(timeout "$RUN_SECONDS" python3 "$ALTP" "$PORT" --conns 50 --pairs 200 --runs "$ALT_RUNS") ||
        { echo "  $1: $out"; out=""; }
    rps=$(echo "$out" | sed -n 's/.*rate=\([0-9]*\).*/\1/p')
    put "$1.rps" "${rps:-0}"
    put "$1.s" "$(echo "$out" | sed -n 's/.*seconds=\([0-9.]*\).*/\1/p')"
    printf '  %-26s %10.0f cmd/s  median %s s of %s\n' "$1" "${rps:-0}" "$(get "$1.s")" \
        "$(echo "$out" | sed -n 's/.*runs=\([0-9.,]*\).*/\1/p')"
}

round() { awk -v x="$1" 'BEGIN { r = int(x + 0.5); print (r < 1 ? 1 : r) }'; }

# row FIGURE RINGKV_KEY PEER_LABEL PEER_KEY GOAL: one line of the table.
row() {
    awk -v f="$1" -v a="$(get "$2")" -v pl="$3" -v b="$(get "$4")" -v g="$5" 'BEGIN {
        r = b > 0 ? a / b : 0
        verdict = g ~ /^[0-9.]+$/ ? (r >= g ? "met" : "missed") : "-"
        printf "%-28s %10.0f  %-30s %10.0f %6.2fx  %-8s %s\n", f, a, pl, b, r,
               (g ~ /^[0-9.]+$/ ? ">= " g "x" : g), verdict }'
}

alt_rows() {
    row "SET/GET pipeline sync always" always.alt.rps "redis always" redis-always.alt.rps 0.5
    row "SET/GET pipeline sync batch" batch.alt.rps "redis everysec" everysec.alt.rps ref
    echo "(SET/GET pipeline: 50 connections x 200 pairs, one pipeline each, median of $ALT_RUNS:" \
        "ringkv always $(get always.alt.s) s, redis always $(get redis-always.alt.s) s;" \
        "ringkv batch $(get batch.alt.s) s, redis everysec $(get everysec.alt.s) s)"
}

START=$(date +%s)
"$RINGKV" keygen "$DIR/key" > /dev/null
: > "$DIR/results"
echo "bench_node: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), redis-server" \
    "$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), data in $DIR ($(stat -f -c %T "$DIR"))"

if [ "$ONLY_ALT" = 1 ]; then
    echo "bench_node: the alternating pipeline only (--alt), fresh servers"
    start_ringkv always
    alt always.alt
    stop
    start_redis always
    alt redis-always.alt
    stop
    start_ringkv batch
    alt batch.alt
    stop
    start_redis everysec
    alt everysec.alt
    stop
    echo
    printf '%-28s %10s  %-30s %10s %7s  %-8s %s\n' figure "ringkv/s" peer "peer/s" ratio goal result
    alt_rows
    echo "bench_node: $(($(date +%s) - START)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
    exit 0
fi
echo "bench_node: redis-benchmark -c 50 -d 100 -r $KEYS, -n $N at -P 16, -n $N1 at -P 1"

start_ringkv batch
bench_writes batch.set16 16 "$N"
bench batch.get16 get 16 "$N"
bench_writes batch.set1 1 "$N1"
bench batch.get1 get 1 "$N1"
strace_run batch.set16 set 16
strace_run batch.get16 get 16
strace_run batch.set1 set 1
strace_run batch.get1 get 1
alt batch.alt
stop

start_ringkv batch --sync-interval 1s
bench_writes batch1s.set16 16 "$N"
bench_writes batch1s.set1 1 "$N1"
stop

start_redis everysec
bench everysec.set16 set 16 "$N"
bench everysec.get16 get 16 "$N"
bench everysec.set1 set 1 "$N1"
bench everysec.get1 get 1 "$N1"
strace_run everysec.set16 set 16
strace_run everysec.set1 set 1
alt everysec.alt
stop

start_ringkv always
bench_writes always.set16 16 "$N"
strace_run always.set16 set 16
alt always.alt
stop

start_redis always
bench redis-always.set16 set 16 "$N"
alt redis-always.alt
stop

lmdb lmdb-sync "$(round "$(get always.set16.wpc)")" sync
lmdb lmdb-batch "$(round "$(get batch.set16.wpc)")" batch10
lmdb lmdb-nosync "$(round "$(get batch.set16.wpc)")" nosync
lmdb lmdb-writemap "$(round "$(get batch.set16.wpc)")" writemap-batch10 10
logf log-sync "$(get always.set16.bpw)" "$(round "$(get always.set16.wpc)")" sync

echo
printf '%-28s %10s  %-30s %10s %7s  %-8s %s\n' figure "ringkv/s" peer "peer/s" ratio goal result
row "SET -P16 sync batch" batch.set16.rps "redis everysec" everysec.set16.rps 0.5
row "  with its checkpoint" batch.set16.rps_ckpt "redis everysec" everysec.set16.rps ref
row "SET -P16 sync always" always.set16.rps "raw LMDB fsync/txn @$(round "$(get always.set16.wpc)")" lmdb-sync.rps 0.8
row "  with its checkpoint" always.set16.rps_ckpt "raw LMDB fsync/txn @$(round "$(get always.set16.wpc)")" lmdb-sync.rps ref
row "SET -P16 sync always" always.set16.rps "append+fdatasync @$(round "$(get always.set16.wpc)")" log-sync.rps limit
row "SET -P16 sync always" always.set16.rps "redis always" redis-always.set16.rps ref
row "SET -P16 sync batch" batch.set16.rps "raw LMDB fsync/10ms @$(round "$(get batch.set16.wpc)")" lmdb-batch.rps limit
row "SET -P16 sync batch" batch.set16.rps "raw LMDB no fsync @$(round "$(get batch.set16.wpc)")" lmdb-nosync.rps ceiling
row "SET -P16 sync batch" batch.set16.rps "raw LMDB WRITEMAP msync/10ms" lmdb-writemap.rps ref
row "SET -P16 batch interval 1s" batch1s.set16.rps "redis everysec" everysec.set16.rps ref
row "GET -P16" batch.get16.rps "redis" everysec.get16.rps 0.8
row "SET -P1 sync batch" batch.set1.rps "redis everysec" everysec.set1.rps 0.8
row "  with its checkpoint" batch.set1.rps_ckpt "redis everysec" everysec.set1.rps ref
row "SET -P1 batch interval 1s" batch1s.set1.rps "redis everysec" everysec.set1.rps ref
row "GET -P1" batch.get1.rps "redis" everysec.get1.rps 0.8
alt_rows

echo
echo "writes per commit: sync batch $(get batch.set16.wpc) at -P16, $(get batch.set1.wpc) at -P1;" \
    "interval 1s $(get batch1s.set16.wpc) / $(get batch1s.set1.wpc); sync always $(get always.set16.wpc) at -P16"
if [ "$HAVE_STRACE" = 1 ]; then
    printf '%-22s %9s %9s %9s  %s\n' "per request" syscalls sends ctxsw "most frequent calls"
    for f in batch.set16 batch.get16 batch.set1 batch.get1 always.set16 everysec.set16 everysec.set1; do
        printf '%-22s %9s %9s %9s  %s\n' "$f" "$(get "$f.sys")" "$(get "$f.sends")" \
            "$(get "$f.ctxsw")" "$(get "$f.top")"
    done
    echo "(syscalls and sends from strace -C -f -y in separate $NS-request runs; sends: sendto," \
        "sendmsg, write, writev on a socket; ctxsw from /proc in the throughput runs)"
else
    echo "strace not found (cluster-scripts/install-deps installs it): context switches per" \
        "request only: batch.set16 $(get batch.set16.ctxsw), batch.get16 $(get batch.get16.ctxsw)"
fi
echo "bench_node: $(($(date +%s) - START)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
