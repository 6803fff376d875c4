#!/bin/sh
# Bad input on both ports.  Client port: malformed RESP, absurd counts and
# lengths, a lone NUL, 100 half-sent commands, arguments over their limits:
# each gets an error reply or a closed connection, and another client's
# PING still answers.  Peer port: garbage and a handshake with the wrong
# cluster key are refused and counted, and the node is unaffected.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_node n1 --rf 1 --r 1 --w 1 --value-max 1KB --timeout 3s --maxclients 300
it_wait_ping n1

raw() {
    python3 "$top_srcdir/tests/integration/rawsock.py" "$N1_CLIENT" "$@"
}

# expect_refused WHAT BYTES [rawsock options]: an error reply or a closed connection.
expect_refused() {
    what=$1
    shift
    out=$(raw "$@")
    case "$out" in
    "reply=b'-ERR"* | 'reply=b"-ERR'* | *"closed=yes") ;;
    *) it_fail "$what: $out" ;;
    esac
    it_expect_eq "PING after $what" "$(it_cli n1 PING)" "PONG"
}

expect_refused "negative multibulk" '*-10\r\nPING\r\n'
expect_refused "huge multibulk" '*20000000\r\n'
expect_refused "huge bulk" '*1\r\n$2000000000\r\n'
expect_refused "inline \$2000000000" '$2000000000\r\n'
expect_refused "bad bulk length" '*1\r\n$blabla\r\n'
expect_refused "bad bulk CRLF" '*1\r\n$3\r\nabcXY'
expect_refused "null bulk in a request" '*1\r\n$-1\r\n'
expect_refused "NUL line" '\x00\r\n'
# A lone NUL and nothing else: the idle timeout (3 s) closes it.
expect_refused "lone NUL" '\x00' --wait 6
out=$(raw '*20000000\r\n')
case "$out" in *"Protocol error: invalid multibulk length"*"closed=yes") ;; *) it_fail "huge multibulk reply: $out" ;; esac

# 100 half-sent commands held open while another client is served.
python3 "$top_srcdir/tests/integration/rawsock.py" "$N1_CLIENT" '*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab' \
    --half 100 --hold 2 > "$IT_DIR/half.out" &
half=$!
it_wait sh -c "[ \$(redis-cli -p $N1_CLIENT INFO clients | sed -n 's/^connected_clients:\([0-9]*\).*/\1/p') -ge 100 ]" ||
    it_fail "100 half-sent connections did not all connect"
it_expect_eq "PING beside 100 half-sent connections" "$(it_cli n1 PING)" "PONG"
it_expect_eq "SET beside them" "$(it_cli n1 SET other v)" "OK"
wait "$half"

# Limits: value-max 1 KiB, key-max 503 bytes; the connection stays usable.
v1024=$(head -c 1024 /dev/zero | tr '\0' v)
it_expect_eq "value at value-max" "$(it_cli n1 SET k "$v1024")" "OK"
out=$(raw "*3\r\n\$3\r\nSET\r\n\$1\r\nk\r\n\$1025\r\n$(head -c 1025 /dev/zero | tr '\0' v)\r\n*1\r\n\$4\r\nPING\r\n")
case "$out" in *"over value-max (1024 bytes)"*"+PONG"*"closed=no") ;; *) it_fail "value over value-max: $out" ;; esac
it_expect_eq "value unchanged" "$(it_cli n1 GET k | wc -c)" "1025"
out=$(it_cli n1 SET "$(head -c 504 /dev/zero | tr '\0' k)" v 2>&1) && it_fail "key over key-max accepted"
case "$out" in *"over key-max (503 bytes)"*) ;; *) it_fail "key over key-max: $out" ;; esac

# Numeric arguments of RINGKV verbs: digits only, in range; a sign, a blank, a
# NUL, trailing letters or a number past 32 bits is refused, never read as
# the number in front of it or wrapped into range.
# expect_numeric WHAT VERB-ARGS-RESP PATTERN: the reply is an error matching PATTERN.
expect_numeric() {
    out=$(raw "$2" --wait 0.3)
    case "$out" in *"-ERR RINGKV "$3*) ;; *) it_fail "$1: $out" ;; esac
}
bt='*4\r\n$6\r\nRINGKV\r\n$8\r\nBULKTEST\r\n$2\r\nn2\r\n'
expect_numeric "BULKTEST ' 5'" "$bt"'$2\r\n 5\r\n' "BULKTEST: ' 5' is not a byte count"
expect_numeric "BULKTEST '+5'" "$bt"'$2\r\n+5\r\n' "BULKTEST: '+5' is not a byte count"
expect_numeric "BULKTEST '5<NUL>x'" "$bt"'$3\r\n5\x00x\r\n' "BULKTEST: *is not a byte count"
expect_numeric "BULKTEST ''" "$bt"'$0\r\n\r\n' "BULKTEST: '' is not a byte count"
ring='*3\r\n$6\r\nRINGKV\r\n$4\r\nRING\r\n'
expect_numeric "RING '3x'" "$ring"'$2\r\n3x\r\n' "RING: rf must be an integer from 1 to 16"
expect_numeric "RING 2^32+3" "$ring"'$10\r\n4294967299\r\n' "RING: rf must be an integer from 1 to 16"
expect_numeric "RING -(2^32-1)" "$ring"'$11\r\n-4294967295\r\n' "RING: rf must be an integer from 1 to 16"
expect_numeric "RING ' 3'" "$ring"'$2\r\n 3\r\n' "RING: rf must be an integer from 1 to 16"
it_cli n1 RINGKV RING 16 > /dev/null || it_fail "RINGKV RING 16 refused"

# Peer port: garbage, then a handshake with another cluster's key.
out=$(python3 "$top_srcdir/tests/integration/rawsock.py" "$N1_PEER" 'GET / HTTP/1.0\r\n\r\n')
case "$out" in *"closed=yes") ;; *) it_fail "garbage on the peer port: $out" ;; esac
out=$(python3 "$top_srcdir/tests/integration/rawsock.py" "$N1_PEER" '\x00\x00\x00\x05hello')
case "$out" in *"closed=yes") ;; *) it_fail "bad handshake frame: $out" ;; esac
"$RINGKV" keygen "$IT_DIR/other.key" > /dev/null
if "$RINGKV" peer-check "127.0.0.1:$N1_PEER" --cluster-key "$IT_DIR/other.key" > "$IT_DIR/wrong.out" 2>&1; then
    it_fail "a peer with another cluster's key got through: $(cat "$IT_DIR/wrong.out")"
fi
"$RINGKV" peer-check "127.0.0.1:$N1_PEER" --cluster-key "$IT_DIR/key" > "$IT_DIR/right.out" 2>&1 ||
    it_fail "peer-check with the right key: $(cat "$IT_DIR/right.out")"
grep -q n1 "$IT_DIR/right.out" || it_fail "peer-check did not name n1: $(cat "$IT_DIR/right.out")"
it_cli n1 INFO cluster > "$IT_DIR/info.out"
aborted=$(sed -n 's/^ringkv_peer_rejected_aborted:\([0-9]*\).*/\1/p' "$IT_DIR/info.out")
other=$(awk -F: '/^ringkv_peer_rejected_(too_big|syntax):/ { n += $2 } END { print n + 0 }' "$IT_DIR/info.out")
# The wrong-key side finds the node's proof bad and hangs up before proving anything.
[ "$aborted" -ge 1 ] || it_fail "wrong-key handshake not counted: $(cat "$IT_DIR/info.out")"
[ "$other" -ge 2 ] || it_fail "garbage frames not counted: $(cat "$IT_DIR/info.out")"
grep -q 'event=peer_rejected .*reason=aborted' "$IT_DIR/n1.log" || it_fail "no peer_rejected log line"
it_expect_eq "PING at the end" "$(it_cli n1 PING)" "PONG"
it_alive n1 || it_fail "n1 died"
it_pass
