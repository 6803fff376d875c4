#!/bin/sh
# Shutdown while writes are in flight.  SIGTERM: the node stops accepting,
# finishes what it read, exits 0, and after a restart every write it
# acknowledged is there.  Two signals: it exits at once, and still nothing
# acknowledged is lost and the store opens.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# check_acked PREFIX: every acknowledged write of the writer is readable.
check_acked() {
    n=$(wc -l < "$IT_DIR/$1.acked")
    [ "$n" -gt 0 ] || it_fail "$1: nothing was acknowledged"
    python3 - "$N1_CLIENT" "$1" "$IT_DIR/$1.acked" << 'PY' || it_fail "$1: an acknowledged write is missing"
import socket, sys
port, prefix, acked = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port), timeout=10)
f = s.makefile("rb")
for line in open(acked):
    i = int(line)
    k = b"%s:%d" % (prefix.encode(), i)
    s.sendall(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k))
    head = f.readline()
    if not head.startswith(b"$") or head.startswith(b"$-1"):
        sys.exit("missing %s" % k)
    if f.readline() != b"v:%d\r\n" % i:
        sys.exit("wrong value for %s" % k)
PY
    it_log "$1: all $n acknowledged writes present"
}

for run in term double; do
    it_node n1 --rf 1 --r 1 --w 1 --sync always
    it_wait_ping n1
    python3 "$top_srcdir/tests/integration/writer.py" "$N1_CLIENT" "$run" "$IT_DIR/$run.acked" \
        --pipeline 8 --seconds 20 &
    writer=$!
    IT_WAIT=10 it_wait sh -c "[ \$(wc -l < '$IT_DIR/$run.acked') -ge 200 ]" || it_fail "$run: writer made no progress"
    if [ "$run" = term ]; then
        it_stop n1 TERM
        it_expect_eq "exit status after SIGTERM under load" "$IT_STATUS" "0"
    else
        kill -TERM "$N1_PID"
        kill -TERM "$N1_PID"
        it_stop n1 TERM
        [ "$IT_STATUS" -ne 0 ] || grep -q 'event=node_stop' "$IT_DIR/n1.log" ||
            it_fail "double signal: unexpected exit"
    fi
    wait "$writer"
    it_node n1 --rf 1 --r 1 --w 1 --sync always
    it_wait_ping n1
    check_acked "$run"
    it_stop n1 TERM
done
grep -q 'event=shutdown signal=SIGTERM' "$IT_DIR/n1.log" || it_fail "no shutdown log line"
it_pass
