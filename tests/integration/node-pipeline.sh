#!/bin/sh
# Pipelines on one node (rf 1): replies in command order, a read sees its
# connection's earlier writes and never a later one, checked against a
# model on a node whose data operations complete in a shuffled order
# (kv-shuffle-seed); data commands start past a waiting one only as the
# rules allow (counted by INFO), a connection's writes seen in order by
# another; MSET all or nothing for a concurrent reader; nothing after QUIT
# runs; and a pipeline's writes answered in few sends.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
PIPE="$top_srcdir/tests/integration/pipeline.py"

# The ordering rules, with completions shuffled (two seeds: two orders).
for seed in $IT_SEED 7; do
    it_node s$seed --rf 1 --r 1 --w 1 --kv-shuffle-seed "$((seed + 1))"
    it_wait_ping s$seed
    out=$(python3 "$PIPE" "$(it_var s$seed CLIENT)" order "$seed" --conns 4 --rounds 150) ||
        it_fail "shuffled pipeline (seed $seed): $out"
    it_log "shuffled completions, seed $seed: $out"
    out=$(python3 "$PIPE" "$(it_var s$seed CLIENT)" passing "$seed" --rounds 20 --msets 150) ||
        it_fail "starting past waiting commands (seed $seed): $out"
    it_log "started past waiting commands, seed $seed: $out"
    # HELLO 3 after reads still in flight: their replies stay RESP2 (nil as $-1), the
    # reads after it answer RESP3 (nil as _)
    out=$(python3 "$top_srcdir/tests/integration/rawsock.py" "$(it_var s$seed CLIENT)" --wait 1 \
        'GET h0\r\nMGET h0 h0\r\nHELLO 3\r\nGET h0\r\nMGET h0\r\n')
    case $out in
    "reply=b'\$-1\\r\\n*2\\r\\n\$-1\\r\\n\$-1\\r\\n%"*"\\r\\n_\\r\\n*1\\r\\n_\\r\\n' closed=no") ;;
    *) it_fail "HELLO 3 behind reads in flight (seed $seed): $out" ;;
    esac
    # inside EXEC a read (completing late) answers the data before the EXEC's later writes
    out=$(python3 - "$(it_var s$seed CLIENT)" << 'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
want = b"+OK\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n$2\r\nv0\r\n+OK\r\n"
bad = 0
for i in range(20):
    s.sendall(b"SET x%d v0\r\nMULTI\r\nGET x%d\r\nSET x%d v1\r\nEXEC\r\n" % (i, i, i))
    got = b""
    while len(got) < len(want) and not (got.endswith(b"+OK\r\n") and got.count(b"\r\n") >= 8):
        got += s.recv(4096)
    bad += got != want
print("bad=%d" % bad)
PY
)
    it_expect_eq "MULTI, GET x, SET x, EXEC: GET answers the value before the SET (seed $seed)" "$out" bad=0
    it_stop s$seed
done

it_node n1 --rf 1 --r 1 --w 1
it_wait_ping n1
out=$(python3 "$PIPE" "$N1_CLIENT" order "$IT_SEED" --conns 4 --rounds 150) ||
    it_fail "pipeline: $out"
out=$(python3 "$PIPE" "$N1_CLIENT" passing "$IT_SEED" --rounds 20 --msets 150) ||
    it_fail "starting past waiting commands: $out"
it_log "started past waiting commands: $out"

# MSET: another client never sees half of one.
out=$(python3 "$PIPE" "$N1_CLIENT" mset --msets 50 --keys 64) || it_fail "MSET: $out"
it_log "MSET atomic: $out"

# Nothing after QUIT runs, even when sent in the same read.
out=$(python3 "$top_srcdir/tests/integration/rawsock.py" "$N1_CLIENT" \
    '*1\r\n$4\r\nQUIT\r\n*3\r\n$3\r\nSET\r\n$5\r\nquitk\r\n$1\r\nv\r\n')
it_expect_eq "QUIT reply" "$out" "reply=b'+OK\\r\\n' closed=yes"
it_expect_eq "nothing after QUIT" "$(it_cli n1 EXISTS quitk)" "0"

# A pipeline of writes is answered in one send, not one per reply.
pid=$(it_var n1 PID)
sends() { awk '/^syscw:/ { print $2 }' "/proc/$pid/io"; }
before=$(sends)
python3 -c 'import sys
sys.stdout.buffer.write(b"".join(b"*3\r\n$3\r\nSET\r\n$4\r\nps%02d\r\n$1\r\nv\r\n" % i for i in range(64)))' |
    redis-cli -p "$N1_CLIENT" --pipe > "$IT_DIR/pipe.out" 2>&1
grep -q 'errors: 0, replies: 64' "$IT_DIR/pipe.out" || it_fail "pipe: $(cat "$IT_DIR/pipe.out")"
after=$(sends)
# (the writer thread's commit and the event descriptor add a few write calls of their own)
[ $((after - before)) -le 24 ] || it_fail "64 pipelined SETs took $((after - before)) write calls"
it_log "64 pipelined SETs: $((after - before)) write calls in the whole process"
it_pass
