#!/bin/sh
# Writes during a join: 3 nodes (rf 3) hold 1200 keys of 1 KiB; a 4th
# joins at --handoff-rate 64KB (a few seconds of streaming) while `ringkv
# workload` writes and reads 200 other keys through n1..n3 with a history.
# Once the join is done and the workload over, `ringkv verify` through all
# four nodes finds every acknowledged write (0 violations), and the
# preloaded keys all read back through n4.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
KEYS=1200
CONVERGE_S=$(it_rounds_s 60)
it_cluster 3
it_wait_converged

python3 - "$KEYS" > "$IT_DIR/load.resp" << 'PY'
import sys
v = b"v" * 1024
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k = b"key:%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
redis-cli -p "$N1_CLIENT" --pipe < "$IT_DIR/load.resp" > "$IT_DIR/load.out" 2>&1 ||
    it_fail "loading $KEYS keys: $(cat "$IT_DIR/load.out")"
grep -q "errors: 0, replies: $KEYS" "$IT_DIR/load.out" || it_fail "loading: $(cat "$IT_DIR/load.out")"

H3="-H 127.0.0.1:$N1_CLIENT -H 127.0.0.1:$N2_CLIENT -H 127.0.0.1:$N3_CLIENT"
hist="$IT_DIR/join.jsonl"
"$RINGKV" workload $H3 --keys 200 --duration 8 --concurrency 4 --mix 4:5:1 --history "$hist" \
    > "$IT_DIR/workload.out" 2>&1 &
WL_PID=$!

it_setvar n4 PEER "$(it_free_port)"
it_node n4 --rack r1 --seeds "127.0.0.1:$N1_PEER" --handoff-rate 64KB
it_wait_ping n4
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" -t "$CONVERGE_S" status --wait converged > "$IT_DIR/status.txt" ||
    it_fail "status --wait converged after the join: $(cat "$IT_DIR/status.txt")"
wait "$WL_PID" || it_fail "workload: $(cat "$IT_DIR/workload.out")"
it_log "workload: $(grep '^set ' "$IT_DIR/workload.out")"

H4="$H3 -H 127.0.0.1:$N4_CLIENT"
out=$("$RINGKV" verify $H4 "$hist") || it_fail "verify after the join: $out"
case "$out" in *"0 violations"*) ;; *) it_fail "no verdict: $out" ;; esac
it_log "verify: $(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"

missing=$(python3 - "$N4_CLIENT" "$KEYS" << 'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rwb")
n = 0
for i in range(int(sys.argv[2])):
    k = b"key:%d" % i
    f.write(b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(k), k))
f.flush()
for i in range(int(sys.argv[2])):
    line = f.readline()
    if line.startswith(b"$"):
        ln = int(line[1:])
        if ln < 0:
            n += 1
        else:
            f.read(ln + 2)
    else:
        n += 1
print(n)
PY
)
[ "$missing" = 0 ] || it_fail "$missing of $KEYS preloaded keys unreadable through n4"
it_pass "acknowledged writes during a join all found"
