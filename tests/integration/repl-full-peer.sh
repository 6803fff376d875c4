#!/bin/sh
# A paused replica's full request table does not make its coordinator refuse
# the same waiting calls on every event-loop pass: 3 nodes, rf 3, w 2,
# request-timeout 3 s; n3 is paused (SIGSTOP) and n1 takes pipelined SETs,
# more than n1's table for n3 holds (1024 outstanding requests), for at most
# 4 s.  The calls to n3 beyond the table wait in n1's waiting list; each pass
# over that list tries n3 once, so the refusals counted as overloaded (INFO
# requests) stay within the number of requests n1 sent to its replicas, where
# trying every waiting call each pass counted hundreds of times as many.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

it_cluster 3 --request-timeout 3s
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
[ "$(it_cli n1 SET base v0)" = OK ] || it_fail "SET base"

kill -STOP "$N3_PID"
timeout 4 redis-benchmark -h "$(it_addr n1)" -p "$(it_var n1 CLIENT)" -t set -n 40000 -r 10000 \
    -d 10 -c 20 -P 16 -q > "$IT_DIR/load.out" 2>&1 || true
kill -CONT "$N3_PID"

requests=$(it_cli n1 INFO requests | tr -d '\r')
printf '%s\n' "$requests" > "$IT_DIR/requests.txt"
sent=$(printf '%s\n' "$requests" | sed -n 's/^ringkv_requests_replica_write:.*ok=\([0-9]*\),.*/\1/p')
overloaded=$(printf '%s\n' "$requests" | sed -n 's/^ringkv_requests_replica_write:.*overloaded=\([0-9]*\),.*/\1/p')
writes=$(it_cli n1 INFO cluster | tr -d '\r' | sed -n 's/^ringkv_coordinated_writes://p')
[ -n "$sent" ] && [ -n "$overloaded" ] && [ -n "$writes" ] ||
    it_fail "no replica_write request counts in INFO: $(cat "$IT_DIR/requests.txt")"
it_log "n1 coordinated $writes writes with n3 paused: replica writes ok=$sent, overloaded=$overloaded"
[ "$writes" -gt 2000 ] || it_fail "only $writes writes coordinated: n1's table for n3 never filled"
[ "$overloaded" -gt 0 ] || it_fail "no call waited for room: n1's table for n3 never filled"
[ "$overloaded" -le $((2 * writes)) ] ||
    it_fail "$overloaded refusals for $writes writes: waiting calls to the full peer tried every pass"
it_pass "a full peer's waiting calls are tried once a pass ($overloaded refusals for $writes writes)"
