#!/bin/sh
# kill -9 of a node in the middle of write-ahead log appends and
# checkpoints, round after round on one data directory, in each sync
# mode: after every restart each key holds its last acknowledged state
# (a value, or absent after an acknowledged DEL) or the write that was in
# flight (tests/integration/walkill.py).  The load pauses longer than the
# idle checkpoint between bursts and writes 2 KB values over 16000 keys,
# so checkpoints come often; the kill lands at a random point of a burst
# or a pause.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
ROUNDS=${WAL_KILL_ROUNDS:-5}
W="$top_srcdir/tests/integration/walkill.py"

for mode in always batch none; do
    id="n-$mode"
    state="$IT_DIR/$mode.state.json"
    flags="--rf 1 --r 1 --w 1 --sync $mode --sync-interval 50ms"
    round=1
    while [ "$round" -le "$ROUNDS" ]; do
        # shellcheck disable=SC2086
        it_node "$id" $flags
        it_wait_ping "$id"
        port=$(it_var "$id" CLIENT)
        if [ -f "$state" ]; then
            out=$(python3 "$W" check "$port" "$state") || it_fail "$mode round $round: $out"
            it_log "$mode round $round: $out"
        fi
        python3 "$W" load "$port" "$state" --seed "$round" --seconds 20 \
            > "$IT_DIR/$mode.load.$round" 2>&1 &
        load=$!
        # the kill: after 600 .. 2600 ms of load
        ms=$(python3 -c "import random; print(random.Random($round * 7 + ${#mode}).randrange(600, 2600))")
        python3 -c "import time; time.sleep($ms / 1000)"
        it_stop "$id" KILL
        IT_WAIT=30 it_wait sh -c "! kill -0 $load" || it_fail "$mode: the load did not end"
        wait "$load"
        it_log "$mode round $round: killed at $ms ms: $(cat "$IT_DIR/$mode.load.$round")"
        round=$((round + 1))
    done
    # shellcheck disable=SC2086
    it_node "$id" $flags
    it_wait_ping "$id"
    out=$(python3 "$W" check "$(it_var "$id" CLIENT)" "$state") || it_fail "$mode final: $out"
    it_log "$mode final: $out"
    grep -c store_wal_replayed "$IT_DIR/$id.log" > /dev/null || it_fail "$mode: no log was ever replayed"
    it_stop "$id"
done
it_pass
