#!/bin/sh
# A peer request gets its whole request-timeout, however long the event
# loop's iteration that sends it has run (README: "A request that cannot
# reach its quorum within request-timeout gets -NOREPLICAS or -TRYAGAIN";
# settings: "time a peer has to answer a request").  rpc_loop_us() is the
# clock as the iteration began, so a request sent after slow commands in
# the same iteration (DBSIZE walks every stored key, in the prepare step,
# with a GET behind it in the same pipeline) got a deadline already in the
# past and timed out before its replicas could answer.
#
# Pass: 3 nodes, rf 3, r 3, request-timeout 50ms, n1 holding keys enough
# that a pipeline of DBSIZEs takes about 400 ms; that pipeline and "GET k"
# sent in one packet to n1: the GET answers k's value, not TRYAGAIN.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 3 --request-timeout 50ms --r 3
it_wait_converged
it_cli n1 SET k v > /dev/null || it_fail "SET k"
# Loading: at a 50 ms request-timeout a replica busy with a checkpoint may let
# a write time out (TRYAGAIN), which stops redis-benchmark; the test needs only
# keys enough, so it loads again, at most five times, until n1 holds 150,000.
loaded=0
for attempt in 1 2 3 4 5; do
    timeout 120 redis-benchmark -h 127.0.0.1 -p "$N1_CLIENT" -t set -n 200000 -r 1000000000 \
        -P 16 -c 8 -q > "$IT_DIR/bench.out" 2>&1 || it_log "loading $attempt: $(tail -c 200 "$IT_DIR/bench.out")"
    loaded=$(it_cli n1 DBSIZE | tr -d '\r')
    [ "${loaded:-0}" -lt 150000 ] || break
done
[ "${loaded:-0}" -ge 150000 ] || it_fail "loading keys: n1 holds $loaded"
# The load's checkpoints end before the DBSIZEs are timed: one running beside
# the timing makes a DBSIZE look slower than the pipeline then is.
logged() { it_cli "$1" INFO persistence | tr -d '\r' | sed -n 's/^ringkv_store_log_keys://p'; }
settled() { for id in n1 n2 n3; do [ "$(logged "$id")" = 0 ] || return 1; done; }
IT_WAIT=60 it_wait settled || it_fail "the nodes' logs were not checkpointed within 60 s"

out=$(python3 - "$N1_CLIENT" << 'PY'
import socket, sys, time
port = int(sys.argv[1])

def ask(cmds):
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    f = s.makefile("rb")
    t = time.monotonic()
    s.sendall(b"".join(cmds))
    out = []
    for _ in cmds:
        line = f.readline().decode().strip()
        if line.startswith("$") and line != "$-1":
            line += " " + f.readline().decode().strip()
        out.append(line)
    s.close()
    return time.monotonic() - t, out

DBSIZE = b"*1\r\n$6\r\nDBSIZE\r\n"
GET = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
ask([DBSIZE])
one, r = ask([DBSIZE] * 4)
one /= 4
n = max(1, min(500, int(0.4 / max(one, 0.0005)) + 1))
took, r = ask([DBSIZE] * n + [GET])
print("dbsize=%s one=%.0fms n=%d pipeline=%.0fms get=%s" % (r[0], one * 1000, n, took * 1000, r[-1]))
PY
)
it_log "$out"
case $out in *"pipeline="[0-9][0-9][0-9]*ms*) ;; *) it_fail "the DBSIZE pipeline took under 100 ms: $out" ;; esac
case $out in *'get=$1 v') ;; *) it_fail "GET k behind slow commands in one iteration: $out" ;; esac
it_pass "a request sent late in a slow iteration still gets request-timeout"
