#!/bin/sh
# A simulated power loss under `sync batch`, `sync none` and `sync always`:
# what each mode keeps of the acknowledged writes when the kernel's page
# cache is lost with the process.
#
# The store's durable state is two files of its data directory: data.mdb
# (LMDB) and wal (the write-ahead log in front of it).
# tests/integration/powercut.c, preloaded into the node, copies each of
# them at each of its fsyncs (with the process's writes held off), so after
# the node is killed with SIGKILL under load, FILE.durable is the file a
# power loss would leave if the kernel had written back nothing it was not
# told to: the worst case, and the one a mode's promise must hold against.
# A file never synced is left out (a power loss may not even keep its
# name).  The node is restarted on those images, and:
# - sync batch (sync-interval 200 ms): every write acknowledged before the
#   log's last fsync began reads back (with its value or one that
#   superseded it: `ringkv verify --allow-loss-after-us` at that fsync's
#   start, on the history `ringkv workload` recorded; a checkpoint after it
#   only moved more into data.mdb, synced before the log was emptied); that
#   fsync began at most the interval, plus its own duration, plus 500 ms of
#   scheduling slack on a loaded 2-core machine, before the kill: batch
#   loses at most about its last interval.  The writes acknowledged since
#   are counted and shown.
# - sync none: neither file is fsynced once the node serves (the log never,
#   data.mdb only when the directory is made, before the load), so the
#   images hold none of the acknowledged writes: the restarted node has no
#   keys.  On a real machine the kernel writes dirty pages back within about
#   30 s (vm.dirty_expire_centisecs), so a loss is usually smaller; nothing
#   bounds it.
# - sync always: a write is acknowledged after its log record's
#   fdatasync, so the restarted node has every acknowledged write: `ringkv
#   verify` with no loss allowed.
# What it cannot show: the write-back order of a real disk and kernel (a
# torn B-tree under MDB_NOSYNC if pages reached the disk out of order).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
MIN_ACKS=3000
INTERVAL_MS=200
DUR="$top_srcdir/tests/integration/durability.py"
CUT="$top_builddir/tests/integration/powercut.so"
[ -f "$CUT" ] || it_fail "$CUT is not built (make check builds it)"

for mode in batch none always; do
    id="p-$mode"
    dir="$IT_DIR/$mode"
    data="$IT_DIR/$id.data"
    mkdir -p "$dir"
    flags="--rf 1 --r 1 --w 1 --sync $mode --sync-interval ${INTERVAL_MS}ms"
    export RINGKV_POWERCUT_FILE="$data/data.mdb,$data/wal" LD_PRELOAD="$CUT"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
    # shellcheck disable=SC2086
    it_node "$id" $flags
    unset RINGKV_POWERCUT_FILE LD_PRELOAD
    it_wait_ping "$id"
    port=$(it_var "$id" CLIENT)
    hist="$dir/history.jsonl"
    load_ns=$(python3 -c 'import time; print(time.monotonic_ns())')
    "$RINGKV" workload -H "127.0.0.1:$port" --keys 2000 --duration 60 --concurrency 16 \
        --mix 0:1:0 --history "$hist" > "$dir/workload.out" 2>&1 &
    load=$!
    if [ "$mode" = batch ]; then
        # enough acknowledged writes, and a few fsyncs taken under the load
        IT_WAIT=50 it_wait sh -c "[ \$(grep -c '\"outcome\":\"ok\"' '$hist') -ge $MIN_ACKS ] &&
            [ \$(wc -l < '$data/wal.syncs') -ge 3 ]" ||
            it_fail "$mode: fewer than $MIN_ACKS writes or 3 fsyncs in 50 s"
    else
        IT_WAIT=50 it_wait sh -c "[ \$(grep -c '\"outcome\":\"ok\"' '$hist') -ge $MIN_ACKS ]" ||
            it_fail "$mode: fewer than $MIN_ACKS writes acknowledged in 50 s"
    fi
    it_kill_load "$id" "$dir" "$load" "$mode"
    # The power loss: each file as of its last fsync, nothing of the cache.
    mv "$data" "$data.crashed"
    mkdir "$data"
    chmod 700 "$data"
    cp -p "$data.crashed/LOCK" "$data/" 2> /dev/null || true
    for f in data.mdb wal; do
        if [ -f "$data.crashed/$f.durable" ]; then
            cp "$data.crashed/$f.durable" "$data/$f"
        fi
    done
    acked=$(grep -c '"outcome":"ok"' "$hist")
    # shellcheck disable=SC2086
    it_node "$id" $flags
    it_wait_ping "$id"
    if [ "$mode" = batch ]; then
        syncs="$data.crashed/wal.syncs"
        synced_us=$(($(tail -n 1 "$syncs" | cut -d' ' -f1) / 1000))
        "$RINGKV" verify --json --allow-loss-after-us "$synced_us" "$hist" > "$dir/report.json"
        out=$(python3 "$DUR" verdict "$dir/report.json" "$dir" --min-acks "$MIN_ACKS" \
            --window-ms 500 --synced "$syncs" --interval-ms "$INTERVAL_MS" --slack-ms 500) ||
            it_fail "$mode: $out"
        it_log "$mode: $(echo "$out" | tr '\n' ' ')"
    elif [ "$mode" = none ]; then
        [ ! -f "$data.crashed/wal.syncs" ] ||
            it_fail "none: the log was fsynced: $(cat "$data.crashed/wal.syncs")"
        if [ -f "$data.crashed/data.mdb.syncs" ]; then
            awk -v t="$load_ns" '$1 >= t { bad = 1 } END { exit bad }' \
                "$data.crashed/data.mdb.syncs" ||
                it_fail "none: data.mdb was fsynced under the load: $(cat "$data.crashed/data.mdb.syncs")"
        fi
        it_expect_eq "none: keys after a power loss" "$(it_cli "$id" DBSIZE)" "0"
        # verify agrees: every acknowledged write is lost, which a bound at 0 allows
        "$RINGKV" verify --json --allow-loss-after-us 0 "$hist" > "$dir/report.json" ||
            it_fail "none: verify: $(cat "$dir/report.json")"
        python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["counts"]
assert c["present"] == 0 and c["lost_allowed"] == c["writes_ok"] - c["superseded"] > 0, c' \
            "$dir/report.json" || it_fail "none: $(cat "$dir/report.json")"
        it_log "none: all $acked acknowledged writes lost to a power loss (no fsync while running)"
    else
        [ -f "$data.crashed/wal.durable" ] || it_fail "always: the log was never fsynced"
        "$RINGKV" verify --json "$hist" > "$dir/report.json" ||
            it_fail "always: verify: $(cat "$dir/report.json")"
        out=$(python3 "$DUR" verdict "$dir/report.json" "$dir" --min-acks "$MIN_ACKS" \
            --window-ms 500) || it_fail "always: $out"
        python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["counts"]
assert c["lost"] == 0 and c["lost_allowed"] == 0 and c["present"] > 0, c' \
            "$dir/report.json" || it_fail "always: $(cat "$dir/report.json")"
        it_log "always: $(echo "$out" | tr '\n' ' ')"
    fi
    it_stop "$id" TERM
done
it_pass
