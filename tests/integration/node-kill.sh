#!/bin/sh
# kill -9 of a node under concurrent load, in each sync mode: after a
# restart on the same data directory, every write the node acknowledged
# reads back, with its value or a later one of the same writer
# (tests/integration/durability.py has the exact rules), and DBSIZE is at
# least the number of distinct keys acknowledged.
#
# Four writers, each on its own connection with 16 SETs in flight over
# 2000 keys of its own (so keys are written again and again), run until at
# least MIN_ACKS writes are acknowledged; the node is then killed with
# SIGKILL while they are still writing: the check also requires a write
# acknowledged in the last 500 ms before the kill, so a run where the load
# had stopped cannot pass.  The checker is then shown to fail on a
# doctored acknowledgement record (an acknowledged write the store does
# not hold) and on a deleted acknowledged key, so a checker that passes
# everything would be caught.
#
# What this can show, and what it cannot:
# - sync always: a write is acknowledged only after its transaction
#   committed (and was fsynced).  SIGKILL ends the process, not the
#   machine, so this test catches an acknowledgement sent before the
#   commit, or a commit lost by the store; it does not exercise the fsync.
# - sync batch (fsync every sync-interval, B) and sync none (fsync left
#   to the operating system): a committed transaction is in the page
#   cache, which outlives the process, so after a kill -9 nothing
#   acknowledged is lost in these modes either, and that is what is
#   asserted for them.  Their real risk is a power loss or kernel crash:
#   batch loses up to the last B of acknowledged writes plus the time its
#   fsync takes, none whatever the kernel had not yet written back
#   (seconds).  tests/integration/node-powercut.sh shows that on a
#   simulated power loss (the data file as of its last fsync); README.md
#   states the risk.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
MIN_ACKS=3000
DUR="$top_srcdir/tests/integration/durability.py"

# acked_count DIR: acknowledged writes recorded so far, over every writer.
acked_count() {
    cat "$1"/acked.* 2> /dev/null | wc -l
}

for mode in always batch none; do
    id="n-$mode"
    dir="$IT_DIR/$mode"
    mkdir -p "$dir"
    flags="--rf 1 --r 1 --w 1 --sync $mode --sync-interval 50ms"
    # shellcheck disable=SC2086
    it_node "$id" $flags
    it_wait_ping "$id"
    port=$(it_var "$id" CLIENT)
    python3 "$DUR" write "$port" "$dir" --writers 4 --pipeline 16 --keys 2000 --seconds 60 &
    writers=$!
    IT_WAIT=50 it_wait sh -c "[ \$(cat '$dir'/acked.* 2> /dev/null | wc -l) -ge $MIN_ACKS ]" ||
        it_fail "$mode: fewer than $MIN_ACKS writes acknowledged in 50 s"
    it_kill_load "$id" "$dir" "$writers" "$mode"
    it_log "$mode: killed with $(acked_count "$dir") writes acknowledged"
    # shellcheck disable=SC2086
    it_node "$id" $flags
    it_wait_ping "$id"
    out=$(python3 "$DUR" check "$port" "$dir" --min-acks "$MIN_ACKS" --window-ms 500) ||
        it_fail "$mode: $out"
    it_log "$mode: $out"

    if [ "$mode" = always ]; then
        # The checker fails on an acknowledged write the store does not
        # hold: writer 0's last acknowledged write, claimed again as a
        # later write to the same key.
        cp -r "$dir" "$IT_DIR/doctored"
        python3 - "$IT_DIR/doctored" << 'PY'
import os, sys
d = sys.argv[1]
lines = open(os.path.join(d, "acked.0")).read().split("\n")
last, t = (int(x) for x in [l for l in lines if len(l.split()) == 2][-1].split())
fake = last + 2000 * 1000
with open(os.path.join(d, "acked.0"), "a") as f:
    f.write("%d %d\n" % (fake, t))
with open(os.path.join(d, "sent.0"), "w") as f:
    f.write("%d\n" % (fake + 1))
PY
        out=$(python3 "$DUR" check "$port" "$IT_DIR/doctored" --min-acks "$MIN_ACKS") &&
            it_fail "the checker passed a doctored acknowledgement: $out"
        case "$out" in *"older than acknowledged write"*) ;; *) it_fail "doctored: $out" ;; esac
        # ... and on an acknowledged key that is gone.
        it_expect_eq "DEL d:1:0" "$(it_cli "$id" DEL d:1:0)" "1"
        out=$(python3 "$DUR" check "$port" "$dir" --min-acks "$MIN_ACKS") &&
            it_fail "the checker passed a deleted key: $out"
        case "$out" in *"d:1:0 missing"*) ;; *) it_fail "deleted key: $out" ;; esac
    fi
    it_stop "$id" TERM
done
it_pass
