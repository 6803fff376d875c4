#!/bin/sh
# bench_handoff.sh - a fourth node joining a loaded three-node cluster: how
# fast the arcs it gains move, what clients see meanwhile, and the rate raw
# LMDB loads the same records at, in the same run.
#
#   tests/bench/bench_handoff.sh [-n KEYS]      (from a build tree, after make bench-build)
#   flock /tmp/ringkv-it.lock tests/bench/bench_handoff.sh    (on a shared machine)
#
# The run, in order:
#   cluster   n1, n2, n3 on 127.0.0.11, .12, .13 (each node's sockets on its
#             own address), racks r1 r2 r3, --rf 3 --r 2 --w 2 --sync batch
#             --conflicts lww (as bench_repl.sh), node k seeded with node
#             k-1, measured once every node sees all three up and the ring
#             converged.
#   load      key:0 .. key:KEYS-1 (KEYS default 1,000,000), each SET once
#             with a 100-byte value, pipelined (tests/bench/handoff_load.py
#             load: a third of the keys through each node, every reply
#             checked); then the write-ahead logs are left to be
#             checkpointed into LMDB, and every node must hold KEYS keys
#             (DBSIZE).
#   before    the latency sampler (handoff_load.py sample: alternately GET
#             and SET of random loaded keys, one command every 1/RATE s,
#             RATE default 1000, to n1 n2 n3 in turn, closed loop) for
#             BENCH_BASE_SECONDS (default 10): p50 and p99 without a join.
#   join      n4 on 127.0.0.14, rack r1, seeded with n1, --handoff-rate 10GB
#             (the maximum: no limit), --handoff-concurrency
#             BENCH_CONCURRENCY (default 4, the node's default); the same
#             sampler runs against n1 n2 n3 from n4's start until n4 turns
#             normal.  Polled every 0.05 s (RINGKV STATUS, INFO, by
#             handoff_load.py watch over one connection, its process
#             started a second before n4 so that its own start of half a
#             second here does not delay the first poll): the time
#             until n4 is normal (join time), the first and last time its
#             ringkv_handoff_keys_received grew (streaming), and the keys
#             and bytes it received (the bytes are keys and records as
#             sent).  A join that takes more than BENCH_JOIN_SECONDS
#             (default 600) aborts the bench.
#   clean     polled every 0.5 s until every node reports ringkv_changing 0
#             and no transfer, and the four stores hold 3 x KEYS keys
#             (RINGKV STATUS keys, a counter), the old owners having
#             deleted what they no longer replicate (about 5 s after
#             agreement, handoff.h); confirmed by DBSIZE on each node.  The
#             time is from n4's start.
#   raw LMDB  with the cluster stopped: tests/bench/bench_lmdb
#             load-batch10 loads as many records as n4 received, of the
#             size n4 received them (bytes over keys, less the mean key
#             length: a record's header and its value), keyed as the data
#             table keys them (position || key) in key order, 10,000 a
#             transaction, MDB_NOSYNC with an fsync every 10 ms beside
#             (sync batch's), into an empty environment on the same disk:
#             the receiver's physical limit.  Then the same records
#             load-nometasync, 1,023 a transaction, each commit fsyncing
#             its pages (MDB_NOMETASYNC): how the node's store commits a
#             handoff batch (its records and checkpoint, one store group,
#             one LMDB transaction; MDB_NOSYNC is safe against a power loss
#             only on a file system that keeps the order of writes), so
#             the limit of a receiver that commits every batch on its own.
#   floor     tests/bench/bench_handoff_floor, the same records: the least
#             work the handoff contract asks for each key moved (scan and
#             encode a HANDOFF_PULL answer, seal, loopback TCP, open and
#             decode, a put into an empty LMDB in large transactions, the
#             arc's digest on both sides), done by one thread with nothing
#             else; twice its rate is the most any handoff could move with
#             both cores of this machine on it, printed against raw LMDB;
#             and the same with a keyed SipHash digest instead of BLAKE2b.
# The goal: n4's keys per second over the join time at least 0.5x raw
# LMDB's load rate (printed as met or missed).  With BENCH_PERF=FILE, perf
# record BENCH_PERF_ARGS (default -g; --call-graph dwarf gives whole user
# stacks) -p (n4's pid) runs for BENCH_PERF_SECONDS (default 10) from the
# first key received or until n4 is normal, whichever comes first, and
# `perf report --no-children` of it goes to FILE (the data to FILE.data);
# with BENCH_PERF_ALL=1 as well, the whole machine is recorded (perf record
# -a) and the report is by command, object and symbol.
# The data of every server lives in the build tree (a real disk), fresh per
# run and removed at the end; servers are started by this script and
# stopped by their PIDs.  The script reports, it does not assert: it exits
# 0 whenever it ran, 1 when a step did not finish in time.
set -eu

KEYS=1000000
[ "${1:-}" = "-n" ] && KEYS=$2
VALUE=100
RATE=${BENCH_RATE:-1000}
BASE_SECONDS=${BENCH_BASE_SECONDS:-10}
JOIN_SECONDS=${BENCH_JOIN_SECONDS:-600}
CONCURRENCY=${BENCH_CONCURRENCY:-4}
PERF_SECONDS=${BENCH_PERF_SECONDS:-10}
LMDB_TXN=10000
# a handoff batch: the store's group of 1,024 operations, its records and the checkpoint
LMDB_GROUP=1023
top_builddir=${top_builddir:-$(pwd)}
HERE="$(cd "$(dirname "$0")" && pwd)"
FREE_PORT="$HERE/../free_port.py"
LOADER="$HERE/handoff_load.py"
RINGKVD="$top_builddir/src/ringkvd"
RINGKV="$top_builddir/src/ringkv"
LMDB="$top_builddir/tests/bench/bench_lmdb"
FLOOR="$top_builddir/tests/bench/bench_handoff_floor"
for tool in redis-cli python3 timeout; do
    command -v "$tool" > /dev/null || { echo "bench_handoff: $tool not found: run cluster-scripts/install-deps"; exit 1; }
done
for bin in "$RINGKVD" "$RINGKV" "$LMDB" "$FLOOR"; do
    [ -x "$bin" ] || { echo "bench_handoff: build $bin first (make bench-build)"; exit 1; }
done

DIR=$(mktemp -d "$top_builddir/bench-handoff.XXXXXX")
PIDS=""
cleanup() {
    for pid in $PIDS; do kill "$pid" 2> /dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2> /dev/null || true; done
    rm -rf "$DIR"
}
trap cleanup EXIT INT TERM

fail() {
    echo "bench_handoff: $*"
    for id in n1 n2 n3 n4; do
        [ -f "$DIR/$id.log" ] && { echo "--- $id.log (last lines)"; tail -n 5 "$DIR/$id.log"; }
    done
    exit 1
}

now_ms() { date +%s%3N; }

# wait_ping ADDRESS PORT
wait_ping() {
    i=0
    until redis-cli -h "$1" -p "$2" PING > /dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 200 ] || fail "server on $1:$2 did not start"
        sleep 0.05
    done
}

# start_node ID ADDRESS [ARGS...]: a fresh ringkvd --sync batch on ADDRESS;
# sets ID_ADDR, ID_PORT (client), ID_PEER, ID_PID, and ID_T0, the time of
# its start in ms (after picking its ports: a python3 start each, which can
# take more than half a second).
start_node() {
    id=$1
    addr=$2
    shift 2
    port=$(python3 "$FREE_PORT" "$addr")
    peer=$(python3 "$FREE_PORT" "$addr")
    t0=$(now_ms)
    "$RINGKVD" --id "$id" --cluster-key "$DIR/key" --data "$DIR/$id-data" --sync batch "$@" \
        --client "$addr:$port" --listen "$addr:$peer" --log-level warn > "$DIR/$id.log" 2>&1 &
    pid=$!
    PIDS="$PIDS $pid"
    eval "${id}_ADDR=$addr ${id}_PORT=$port ${id}_PEER=$peer ${id}_PID=$pid ${id}_T0=$t0"
}

# var ID NAME: the value of ID_NAME.
var() { eval "printf '%s' \"\$${1}_$2\""; }

# cli ID ARGS...: one command to node ID, \r removed.
cli() {
    id=$1
    shift
    redis-cli -h "$(var "$id" ADDR)" -p "$(var "$id" PORT)" "$@" 2> /dev/null | tr -d '\r'
}

# info ID: the node's INFO all, one name:value a line.
info() { cli "$1" INFO all; }

# field ID NAME: one INFO field of node ID (0 when absent).
field() { info "$1" | awk -F: -v k="$2" '$1 == k { v = $2 } END { print (v == "" ? 0 : v) }'; }

# status ID NAME: one field of RINGKV STATUS (the reply is a flat list: name, value).
status() { cli "$1" RINGKV STATUS | awk -v k="$2" 'p { print; exit } $0 == k { p = 1 }'; }

# sum NAME ID...: an INFO field summed over nodes.
sum() {
    name=$1
    shift
    t=0
    for id in "$@"; do t=$((t + $(field "$id" "$name"))); done
    echo "$t"
}

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
        [ $i -lt 600 ] || fail "the cluster did not converge in 30 s"
        sleep 0.05
    done
}

# settle ID...: until every node's write-ahead log is moved into LMDB (120 s).
settle() {
    i=0
    while [ "$(sum ringkv_store_log_keys "$@")" -gt 0 ]; do
        i=$((i + 1))
        [ $i -lt 1200 ] || { echo "  (still logging after 120 s: measured anyway)"; return 0; }
        sleep 0.1
    done
}

# dbsizes ID...: "id=DBSIZE ..." and the sum, on one line (DBSIZE walks every key: not while measuring).
dbsizes() {
    t=0
    line=""
    for id in "$@"; do
        k=$(cli "$id" DBSIZE)
        t=$((t + ${k:-0}))
        line="$line $id=$k"
    done
    echo "$t$line"
}

# sample NAME SECONDS [STOPFILE]: the latency sampler against n1 n2 n3 into $DIR/NAME.sample.
sample() {
    python3 "$LOADER" sample --nodes "$OLD_NODES" --keys "$KEYS" --value "$VALUE" --rate "$RATE" \
        --seconds "$2" ${3:+--stop-file "$3"} > "$DIR/$1.sample" 2>&1
}

# cpu_ms ID...: processor time (user and system, all threads) the nodes used so far, in ms, one a line.
cpu_ms() {
    for id in "$@"; do
        awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$(var "$id" PID)/stat"
    done
}

# sfield NAME KEY: a key=value field of a sampler's line.
sfield() { tr ' ' '\n' < "$DIR/$1.sample" | awk -F= -v k="$2" '$1 == k { print $2 }'; }

START=$(date +%s)
"$RINGKV" keygen "$DIR/key" > /dev/null
echo "bench_handoff: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), data in $DIR ($(stat -f -c %T "$DIR"))"
echo "bench_handoff: $KEYS keys of $VALUE bytes, rf 3; n4 joins with --handoff-rate 10GB" \
    "--handoff-concurrency $CONCURRENCY; sampler $RATE commands/s (GET and SET in turn)"

REPL="--rf 3 --r 2 --w 2 --conflicts lww"
# shellcheck disable=SC2086 # one flag a word
start_node n1 127.0.0.11 --rack r1 $REPL
# shellcheck disable=SC2086
start_node n2 127.0.0.12 --rack r2 $REPL --seeds "$(var n1 ADDR):$(var n1 PEER)"
# shellcheck disable=SC2086
start_node n3 127.0.0.13 --rack r3 $REPL --seeds "$(var n2 ADDR):$(var n2 PEER)"
for id in n1 n2 n3; do wait_ping "$(var "$id" ADDR)" "$(var "$id" PORT)"; done
wait_cluster n1 n2 n3
OLD_NODES="$(var n1 ADDR):$(var n1 PORT),$(var n2 ADDR):$(var n2 PORT),$(var n3 ADDR):$(var n3 PORT)"

python3 "$LOADER" load --nodes "$OLD_NODES" --keys "$KEYS" --value "$VALUE" --seconds "$JOIN_SECONDS" \
    > "$DIR/load.out" 2>&1 || fail "the load failed: $(cat "$DIR/load.out")"
echo "load: $(cat "$DIR/load.out")"
t0=$(now_ms)
settle n1 n2 n3
sizes=$(dbsizes n1 n2 n3)
echo "  logs checkpointed into LMDB after $(($(now_ms) - t0)) ms; DBSIZE${sizes#* }"
[ "${sizes%% *}" -eq $((3 * KEYS)) ] || fail "the three nodes hold ${sizes%% *} keys, not $((3 * KEYS))"

sample before "$BASE_SECONDS"
echo "before: $(cat "$DIR/before.sample")"

# The join.
STOP="$DIR/joined"
sample during "$JOIN_SECONDS" "$STOP" &
SAMPLER=$!
PIDS="$PIDS $SAMPLER"
cpu_ms n1 n2 n3 > "$DIR/cpu.before"
# one poller, one connection (handoff_load.py watch): a redis-cli a poll cost more than n4;
# started first, told n4's address once n4 runs: its own start takes half a second
python3 "$LOADER" watch --nodes-file "$DIR/n4.addr" --seconds "$JOIN_SECONDS" --interval 0.05 \
    --first-file "$DIR/first" > "$DIR/watch.out" 2>&1 &
WATCH=$!
PIDS="$PIDS $WATCH"
sleep 1
# shellcheck disable=SC2086 # one flag a word
start_node n4 127.0.0.14 --rack r1 $REPL --seeds "$(var n1 ADDR):$(var n1 PEER)" \
    --handoff-rate 10GB --handoff-concurrency "$CONCURRENCY"
T0=$(var n4 T0)
echo "$(var n4 ADDR):$(var n4 PORT)" > "$DIR/n4.addr.tmp" && mv "$DIR/n4.addr.tmp" "$DIR/n4.addr"
PERF=""
if [ -n "${BENCH_PERF:-}" ]; then
    until [ -f "$DIR/first" ] || ! kill -0 "$WATCH" 2> /dev/null; do sleep 0.02; done
    if [ -f "$DIR/first" ]; then
        PERF="$DIR/perf.data"
        PERF_WHAT="-p $(var n4 PID)"
        [ -z "${BENCH_PERF_ALL:-}" ] || PERF_WHAT=-a
        # shellcheck disable=SC2086 # one flag a word
        timeout -s INT $((PERF_SECONDS + 5)) perf record ${BENCH_PERF_ARGS:--g} -o "$PERF" $PERF_WHAT \
            -- sleep "$PERF_SECONDS" > "$DIR/perf.out" 2>&1 &
        PERF_PID=$!
    fi
fi
wait "$WATCH" || fail "n4 did not join in $JOIN_SECONDS s: $(cat "$DIR/watch.out")"
wfield() { tr ' ' '\n' < "$DIR/watch.out" | awk -F= -v k="$1" '$1 == k { print $2 }'; }
T_FIRST=$(wfield first_ms)
T_LAST=$(wfield last_ms)
T_JOINED=$(wfield joined_ms)
cpu_ms n1 n2 n3 n4 > "$DIR/cpu.joined"
touch "$STOP"
[ -z "$PERF" ] || kill -INT "$PERF_PID" 2> /dev/null || true
wait "$SAMPLER" || true
[ -z "$PERF" ] || wait "$PERF_PID" || true
for id in n4 n1 n2 n3; do info "$id" > "$DIR/$id.joined"; done
jfield() { awk -F: -v k="$2" '$1 == k { v = $2 } END { print (v == "" ? 0 : v) }' "$DIR/$1.joined"; }
RECV_KEYS=$(jfield n4 ringkv_handoff_keys_received)
RECV_BYTES=$(jfield n4 ringkv_handoff_bytes_received)
STORE="$(jfield n4 ringkv_store_commits) commits, $(jfield n4 ringkv_store_fsyncs) fsyncs,"
STORE="$STORE $(jfield n4 ringkv_store_checkpoints) checkpoints, $(jfield n4 ringkv_store_logged_batches) logged batches"
echo "during: $(cat "$DIR/during.sample")"

# Clean: every node agrees, nothing moves, the old owners deleted what they lost.
T_CLEAN=0
while :; do
    now=$(now_ms)
    [ $((now - T0)) -lt $((JOIN_SECONDS * 1000)) ] ||
        fail "not clean $JOIN_SECONDS s after n4 started: store keys $(for id in n1 n2 n3 n4; do status "$id" keys; done | tr '\n' ' ')"
    busy=$(($(sum ringkv_changing n1 n2 n3 n4) + $(sum ringkv_transfers_active n1 n2 n3 n4)))
    keys=0
    for id in n1 n2 n3 n4; do keys=$((keys + $(status "$id" keys))); done
    if [ "$busy" -eq 0 ] && [ "$keys" -eq $((3 * KEYS)) ] && [ "$(sum ringkv_handoff_cleanup_keys n1 n2 n3)" -gt 0 ]; then
        T_CLEAN=$now
        break
    fi
    sleep 0.5
done
CLEANED=$(sum ringkv_handoff_cleanup_keys n1 n2 n3 n4)
SENT=$(sum ringkv_handoff_keys_sent n1 n2 n3)
FAILURES=$(sum ringkv_handoff_failures n1 n2 n3 n4)
MISMATCH=$(sum ringkv_handoff_verify_mismatch n1 n2 n3 n4)
BATCHES=$(field n4 ringkv_handoff_batches_received)
ARCS="$(field n4 ringkv_handoff_arcs_planned) planned, $(field n4 ringkv_handoff_arcs_same) already held"
sizes=$(dbsizes n1 n2 n3 n4)
for id in n1 n2 n3 n4; do kill "$(var "$id" PID)" 2> /dev/null || true; done
for id in n1 n2 n3 n4; do wait "$(var "$id" PID)" 2> /dev/null || true; done

# The receiver's physical limit: raw LMDB loading the records n4 received.
KEYLEN=$(awk -v n="$KEYS" 'BEGIN { for (d = 1; d <= 20; d++) { lo = d == 1 ? 0 : 10 ^ (d - 1); hi = 10 ^ d
    if (lo >= n) break; c = (hi < n ? hi : n) - lo; t += c * (4 + d) }; printf "%.3f", t / n }')
RECORD=$(awk -v b="$RECV_BYTES" -v k="$RECV_KEYS" -v l="$KEYLEN" 'BEGIN { printf "%d", (k > 0 ? b / k - l + 0.5 : 140) }')
LMDB_KEYS=$((RECV_KEYS > 0 ? RECV_KEYS : KEYS))
"$LMDB" "$LMDB_KEYS" "$RECORD" "$LMDB_TXN" "$LMDB_KEYS" 120 load-batch10 "$DIR/lmdb" > "$DIR/lmdb.out" 2>&1 ||
    fail "bench_lmdb failed: $(cat "$DIR/lmdb.out")"
RAW=$(sed -n 's/.*puts_per_s=\([0-9]*\).*/\1/p' "$DIR/lmdb.out")
"$LMDB" "$LMDB_KEYS" "$RECORD" "$LMDB_GROUP" "$LMDB_KEYS" 120 load-nometasync "$DIR/lmdb-commit" \
    > "$DIR/lmdb-commit.out" 2>&1 || fail "bench_lmdb failed: $(cat "$DIR/lmdb-commit.out")"
RAW_COMMIT=$(sed -n 's/.*puts_per_s=\([0-9]*\).*/\1/p' "$DIR/lmdb-commit.out")
# The least work of a moved key, one thread, nothing else: the most any handoff could do here.
"$FLOOR" "$LMDB_KEYS" "$RECORD" "$DIR/floor" > "$DIR/floor.out" 2>&1 ||
    fail "bench_handoff_floor failed: $(cat "$DIR/floor.out")"
ffield() { tr ' ' '\n' < "$DIR/floor.out" | awk -F= -v k="$1" '$1 == k { print $2 }'; }

echo
awk -v k="$RECV_KEYS" -v b="$RECV_BYTES" -v t0="$T0" -v tf="$T_FIRST" -v tl="$T_LAST" -v tj="$T_JOINED" \
    -v tc="$T_CLEAN" -v raw="$RAW" -v rawc="$RAW_COMMIT" -v grp="$LMDB_GROUP" -v rec="$RECORD" \
    -v kl="$KEYLEN" -v n="$KEYS" -v ft="$(ffield total_us)" -v fs="$(ffield scan_us)" \
    -v fse="$(ffield seal_us)" -v ftcp="$(ffield tcp_us)" -v fo="$(ffield open_us)" -v fa="$(ffield apply_us)" \
    -v fd="$(ffield digest_us)" -v fst="$(ffield siphash_total_us)" -v fsd="$(ffield siphash_digest_us)" 'BEGIN {
    join = (tj - t0) / 1000; stream = (tl - tf) / 1000; clean = (tc - t0) / 1000
    kps = join > 0 ? k / join : 0
    printf "moved to n4: %d keys, %.1f MB (%.1f bytes a key: a %.1f-byte key and a %d-byte record)\n", k, b / 1e6, (k > 0 ? b / k : 0), kl, rec
    printf "  over the join time:   %9.0f keys/s  %6.1f MB/s\n", kps, (join > 0 ? b / 1e6 / join : 0)
    if (stream > 0)
        printf "  while streaming:      %9.0f keys/s  %6.1f MB/s (first to last key seen, %.2f s, 0.05 s polls)\n", k / stream, b / 1e6 / stream, stream
    printf "joined (n4 normal):      %6.1f s from its start (first key received at %.1f s)\n", join, (tf - t0) / 1000
    printf "converged and clean:     %6.1f s from its start (sum of stores = 3 x %d)\n", clean, n
    printf "raw LMDB load:          %9.0f keys/s (the same %d records in key order, %d a transaction)\n", raw, k, 10000
    printf "ratio handoff / raw:     %6.3fx  goal >= 0.5x  %s\n", (raw > 0 ? kps / raw : 0), (raw > 0 && kps / raw >= 0.5) ? "met" : "missed"
    printf "raw LMDB, a commit a batch: %6.0f keys/s (the same records, %d a transaction, each commit fsyncing its pages as the store does)\n", rawc, grp
    printf "ratio handoff / that:    %6.3fx  (raw LMDB a commit a batch / raw LMDB load: %.3fx)\n", (rawc > 0 ? kps / rawc : 0), (raw > 0 ? rawc / raw : 0)
    printf "least work a key, one thread (bench_handoff_floor): %.2f us: scan and encode %.2f, seal %.2f, loopback TCP %.2f, open and decode %.2f, apply %.2f, a digest on each side %.2f\n", ft, fs, fse, ftcp, fo, fa, fd
    printf "  the most any handoff moves here, both cores on it and nothing else: %.0f keys/s = %.3fx raw LMDB (%.0f with a keyed SipHash digest at %.2f us both sides: %.3fx)\n", 2e6 / ft, (raw > 0 ? 2e6 / ft / raw : 0), 2e6 / fst, fsd, (raw > 0 ? 2e6 / fst / raw : 0)
}'
printf 'client latency, %s commands/s GET/SET on n1 n2 n3:  p50 %s ms, p99 %s ms before;  p50 %s ms, p99 %s ms during the join (max %s ms, %s errors)\n' \
    "$RATE" "$(sfield before p50_ms)" "$(sfield before p99_ms)" "$(sfield during p50_ms)" "$(sfield during p99_ms)" \
    "$(sfield during max_ms)" "$(sfield during errors)"
echo "counters: n4 arcs $ARCS, $BATCHES batches; keys sent by n1-n3 $SENT; keys deleted by clean-up $CLEANED;" \
    "handoff failures $FAILURES, verify mismatches $MISMATCH"
echo "n4's store from its start until normal: $STORE"
# processor time during the join, as a share of one core over the join time
paste "$DIR/cpu.joined" "$DIR/cpu.before" | awk -v ms="$((T_JOINED - T0))" '
    { id = "n" NR; used = $1 - ($2 == "" ? 0 : $2)
      line = line sprintf(" %s %.0f%%", id, ms > 0 ? 100 * used / ms : 0) }
    END { printf "processor time during the join (share of one core; 2 cores in all):%s\n", line }'
echo "DBSIZE after clean-up: ${sizes#* } (sum ${sizes%% *})"
echo "bench_lmdb: $(cat "$DIR/lmdb.out")"
echo "bench_lmdb: $(cat "$DIR/lmdb-commit.out")"
echo "$(cat "$DIR/floor.out")"
if [ -n "$PERF" ]; then
    perf report -i "$PERF" --no-children --stdio --percent-limit 0.5 ${BENCH_PERF_ALL:+--sort comm,dso,sym} \
        > "${BENCH_PERF}" 2> /dev/null || true
    cp "$PERF" "${BENCH_PERF}.data"
    echo "perf profile of n4 (at most ${PERF_SECONDS} s from its first key): ${BENCH_PERF} (data: ${BENCH_PERF}.data)"
fi
echo "bench_handoff: $(($(date +%s) - START)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
