#!/bin/sh
# One ringkvd end to end (rf 1): the Redis commands through redis-cli, the
# causal API, acknowledged keys surviving kill -9, graceful shutdown, and a
# node that refuses to start on bad settings with one line and exit 2.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
N1_METRICS=$(it_free_port)
it_node n1 --rf 1 --r 1 --w 1 --metrics "127.0.0.1:$N1_METRICS"
it_wait_ping n1

# Data commands, as a Redis user types them.
it_expect_eq "SET" "$(it_cli n1 SET k v)" "OK"
it_expect_eq "GET" "$(it_cli n1 GET k)" "v"
it_expect_eq "EXISTS" "$(it_cli n1 EXISTS k nope)" "1"
it_expect_eq "MSET" "$(it_cli n1 MSET a 1 b 2)" "OK"
it_expect_eq "MGET" "$(it_cli n1 MGET a b nope | tr '\n' ' ')" "1 2  "
it_expect_eq "DEL" "$(it_cli n1 DEL k a nope)" "2"
it_expect_eq "GET deleted" "$(it_cli n1 GET k)" ""
printf 'x\r\n\0y' | redis-cli -e -p "$N1_CLIENT" -x SET bin > /dev/null || it_fail "SET binary"
it_expect_eq "binary value" "$(it_cli n1 GET bin | od -An -tx1 | tr -d ' \n')" "780d0a00790a"
it_expect_eq "STRLEN binary" "$(it_cli n1 STRLEN bin)" "5"
out=$(it_cli n1 LPUSH bin x 2>&1) && it_fail "LPUSH accepted"
case "$out" in "ERR unknown command 'LPUSH'"*) ;; *) it_fail "unknown command: $out" ;; esac
out=$(it_cli n1 SET k v IFEQ v 2>&1) && it_fail "SET IFEQ accepted"
case "$out" in "ERR syntax error"*) ;; *) it_fail "SET IFEQ: $out" ;; esac
it_expect_eq "nothing written by a refused SET" "$(it_cli n1 GET k)" ""
out=$(it_cli n1 CLUSTER INFO 2>&1) && it_fail "CLUSTER accepted"
it_expect_eq "CLUSTER" "$out" "ERR This instance has cluster support disabled"
out=$(it_cli n1 SELECT 1 2>&1) && it_fail "SELECT 1 accepted"
it_expect_eq "SELECT 0" "$(it_cli n1 SELECT 0)" "OK"
# TIME: the node's wall clock, seconds and microseconds, as Redis gives them.
set -- $(it_cli n1 TIME)
[ $# -eq 2 ] && [ "$2" -ge 0 ] && [ "$2" -lt 1000000 ] || it_fail "TIME: $*"
[ $(($1 - $(date +%s))) -le 1 ] && [ $(($(date +%s) - $1)) -le 1 ] || it_fail "TIME $1 is not now"
it_cli n1 INFO | grep -q '^redis_version:' || it_fail "INFO has no server section"
it_cli n1 INFO keyspace | grep -q '^db0:keys=' || it_fail "INFO has no keyspace"
it_expect_eq "CONFIG GET" "$(it_cli n1 CONFIG GET rf | tr '\n' ' ')" "rf 1 "
it_expect_eq "HELLO 3" "$(redis-cli -3 -p "$N1_CLIENT" HELLO 3 | awk '$1 == "proto" { print $2 }')" "3"

# GET /metrics: Prometheus text with the same counters as INFO.
metrics() {
    python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s%s" % (sys.argv[1], sys.argv[2]), timeout=5).read().decode())' "$N1_METRICS" "$1"
}
metrics /metrics > "$IT_DIR/metrics.txt" || it_fail "GET /metrics failed"
grep -q '^ringkv_commands_total{command="set",result="ok"} [1-9]' "$IT_DIR/metrics.txt" ||
    it_fail "no SET count in /metrics"
grep -q '^ringkv_command_duration_seconds_bucket{command="get",le="+Inf"}' "$IT_DIR/metrics.txt" ||
    it_fail "no latency histogram in /metrics"
grep -q '^ringkv_store_keys ' "$IT_DIR/metrics.txt" || it_fail "no storage size in /metrics"
metrics /nope > /dev/null 2>&1 && it_fail "GET /nope answered 200"

# The causal API: a stale context through the same node is a conflict.
it_expect_eq "KSET" "$(it_cli n1 KSET ck v1)" "OK"
ctx=$(it_cli n1 KGET ck | head -n 1)
it_expect_eq "KSET with context" "$(it_cli n1 KSET ck v2 CONTEXT "$ctx")" "OK"
out=$(it_cli n1 KSET ck v3 CONTEXT "$ctx" 2>&1) && it_fail "stale context accepted"
case "$out" in CONFLICT*) ;; *) it_fail "stale context: $out" ;; esac
it_expect_eq "after conflict" "$(it_cli n1 GET ck)" "v2"

# redis-benchmark runs to the end without an error (a bounded run).
redis-benchmark -p "$N1_CLIENT" -t set,get -n 20000 -r 10000 -d 100 -P 16 -q > "$IT_DIR/rb.out" 2>&1 ||
    it_fail "redis-benchmark failed: $(tail -n 3 "$IT_DIR/rb.out")"
tr '\r' '\n' < "$IT_DIR/rb.out" | grep -q '^SET: [0-9.]* requests per second' || it_fail "redis-benchmark SET: $(tail -c 300 "$IT_DIR/rb.out")"
tr '\r' '\n' < "$IT_DIR/rb.out" | grep -q '^GET: [0-9.]* requests per second' || it_fail "redis-benchmark GET: $(tail -c 300 "$IT_DIR/rb.out")"
if grep -qi 'error' "$IT_DIR/rb.out"; then it_fail "redis-benchmark reported an error: $(grep -i error "$IT_DIR/rb.out" | head -n 1)"; fi

# Acknowledged writes survive kill -9.
python3 -c 'import sys
for i in range(2000):
    k = b"key:%d" % i; v = b"value-%d" % i
    sys.stdout.buffer.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))' |
    redis-cli -p "$N1_CLIENT" --pipe > "$IT_DIR/pipe.out" 2>&1
grep -q 'errors: 0, replies: 2000' "$IT_DIR/pipe.out" || it_fail "pipe: $(cat "$IT_DIR/pipe.out")"
# (redis-benchmark added random keys of its own: the count before the kill is the reference)
keys_before=$(it_cli n1 DBSIZE)
it_stop n1 KILL
it_node n1 --rf 1 --r 1 --w 1
it_wait_ping n1
# Every one of the 2000 reads back (tests/integration/node-kill.sh does this under load).
seq -f 'value-%.0f' 0 1999 > "$IT_DIR/want.txt"
# shellcheck disable=SC2046
it_cli n1 MGET $(seq -f 'key:%.0f' 0 1999) > "$IT_DIR/got.txt"
cmp -s "$IT_DIR/want.txt" "$IT_DIR/got.txt" ||
    it_fail "after kill -9: $(diff "$IT_DIR/want.txt" "$IT_DIR/got.txt" | grep -c '^>') of 2000 keys missing or wrong"
it_expect_eq "DBSIZE after kill -9" "$(it_cli n1 DBSIZE)" "$keys_before"

# SIGTERM: a clean exit, status 0.
it_stop n1 TERM
it_expect_eq "exit status after SIGTERM" "$IT_STATUS" "0"
grep -q 'event=shutdown signal=SIGTERM' "$IT_DIR/n1.log" || it_fail "no shutdown line"

# --test-config: the effective configuration, and exit 0 or 1.
"$RINGKVD" --test-config --id n9 --cluster-key "$IT_DIR/key" --tokens 64 > "$IT_DIR/tc.out" 2> "$IT_DIR/tc.err" ||
    it_fail "--test-config of a good configuration: $(cat "$IT_DIR/tc.err")"
grep -q '^tokens 64$' "$IT_DIR/tc.out" || it_fail "--test-config does not print the effective tokens"
if "$RINGKVD" --test-config --id n9 --cluster-key "$IT_DIR/key" --w 9 > /dev/null 2>&1; then
    it_fail "--test-config accepted w 9 with rf 3"
fi

# Refusals: one line naming the setting, exit 2.
refuse() {
    want=$1
    shift
    set +e
    "$RINGKVD" "$@" > "$IT_DIR/refuse.out" 2>&1
    rc=$?
    set -e
    [ "$rc" -eq 2 ] || it_fail "'$*' exited $rc, expected 2: $(cat "$IT_DIR/refuse.out")"
    [ "$(wc -l < "$IT_DIR/refuse.out")" -eq 1 ] || it_fail "'$*' printed more than one line"
    grep -q "$want" "$IT_DIR/refuse.out" || it_fail "'$*': $(cat "$IT_DIR/refuse.out")"
}
set -e
base="--cluster-key $IT_DIR/key --client 127.0.0.1:$(it_free_port) --listen 127.0.0.1:$(it_free_port)"
# shellcheck disable=SC2086
refuse "^ringkvd: --rf: '0' is out of range 1 to 16" --id x --rf 0 $base --data "$IT_DIR/x"
# shellcheck disable=SC2086
refuse "r (3) is larger than rf (2)" --id x --rf 2 --r 3 $base --data "$IT_DIR/x"
# shellcheck disable=SC2086
refuse "unknown setting --nope" --id x --nope 1 $base
# shellcheck disable=SC2086
refuse "belongs to node 'n1', not 'n2'" --id n2 $base --data "$IT_DIR/n1.data"
cp "$IT_DIR/key" "$IT_DIR/open.key"
chmod 644 "$IT_DIR/open.key"
refuse "cluster-key:" --id x --cluster-key "$IT_DIR/open.key" --data "$IT_DIR/x"
it_pass
