#!/bin/sh
# One message over a peer's smaller frame-max (PROTOCOL.md 5, 7.1's
# `frame_max`): the sender knows the peer's frame-max from its IDENT and
# refuses that message alone; the connection stays up.
#
#   - three nodes, rf 3, r = w = 2: n1 and n3 with the default frame-max
#     (17 MiB) and value-max (16 MiB), n2 with frame-max 128 KiB (value-max
#     32 KiB);
#   - a SET of 200,000 bytes through n1 is acknowledged (n1 and n3); n2's
#     replica write is refused by n1 before it is sent: n1 logs it once at
#     warn with both sizes, keeps no hint for n2, and n2 never rejects a
#     frame from n1;
#   - KSET of such a value W 3 through n1: -TRYAGAIN with the figures (2 of
#     the 3 replicas);
#   - GET of the big key through n2 (which coordinates it): its replicas'
#     answers are over n2's frame-max, refused by n1 and n3 alone: an error
#     reply, not a closed connection;
#   - the connections stay up meanwhile: a small SET through n1 is held by
#     n2 (KGET R 1), a second big SET is acknowledged without a second warn
#     line for that connection, and no node saw another go down.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
IT_RF=3
it_setvar n1 PEER "$(it_free_port "$(it_addr n1)")"
it_node n1 --rack r1
it_setvar n2 PEER "$(it_free_port "$(it_addr n2)")"
it_node n2 --rack r2 --frame-max 128KB --value-max 32KB --seeds "$(it_addr n1):$N1_PEER"
it_setvar n3 PEER "$(it_free_port "$(it_addr n3)")"
it_node n3 --rack r3 --seeds "$(it_addr n1):$N1_PEER"
for n in n1 n2 n3; do it_wait_ping $n; done
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 3 $(it_ports 3) ||
    it_fail "3 nodes did not converge"

# n2_holds_small VALUE: n2's own copy of small is VALUE
n2_holds_small() { [ "$(it_cli n2 KGET small R 1 | sed -n 2p | tr -d '\r')" = "$1" ]; }
info_field() { it_cli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
# big NODE ARGS...: one command to NODE, each argument BIG replaced by 200,000 bytes (over
# the 128 KiB a single command-line argument may hold); prints the reply as redis-cli -e
big() {
    python3 - "$(it_var "$1" CLIENT)" "$@" << 'PY'
import socket, sys
args = [b"b" * 200000 if a == "BIG" else a.encode() for a in sys.argv[3:]]
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
f = s.makefile("rb")
line = f.readline()
if line[:1] == b"$":
    n = int(line[1:])
    print("" if n < 0 else "%d bytes" % len(f.read(n + 2)[:-2]))
else:
    print(line[1:].strip().decode())
PY
}

it_expect_eq "SET big (200,000 bytes) through n1" "$(big n1 SET big BIG)" OK
out=$(big n1 KSET big3 BIG W 3)
case $out in
"TRYAGAIN 2 of the 3 replicas"*) ;;
*) it_fail "KSET big3 W 3 through n1: '$out', want -TRYAGAIN 2 of the 3 replicas" ;;
esac
it_expect_eq "SET small through n1" "$(it_cli n1 SET small v1)" OK
IT_WAIT=10 it_wait n2_holds_small v1 ||
    it_fail "n2 does not hold small: $(it_cli n2 KGET small R 1 | tr '\n' ' ')"
out=$(big n2 GET big)
case $out in
TRYAGAIN*) ;;
*) it_fail "GET big through n2: '$(printf '%.80s' "$out")', want -TRYAGAIN" ;;
esac
it_expect_eq "a second big SET through n1" "$(big n1 SET big2 BIG)" OK
it_expect_eq "SET small again through n1" "$(it_cli n1 SET small v2)" OK
IT_WAIT=10 it_wait n2_holds_small v2 ||
    it_fail "n2 does not hold the second small: $(it_cli n2 KGET small R 1 | tr '\n' ' ')"
it_expect_eq "GET big through n3" "$(big n3 GET big)" "200000 bytes"

warns=$(grep 'event=peer_message_over_frame' "$IT_DIR/n1.log")
it_expect_eq "n1's warn lines for n2's frame-max" "$(printf '%s\n' "$warns" | grep -c 'remote_id=n2 op=replica_write')" 1
printf '%s\n' "$warns" | grep 'remote_id=n2 op=replica_write' | grep -q 'peer_frame_max=131072' ||
    it_fail "n1's warn line lacks the peer's frame-max: $warns"
printf '%s\n' "$warns" | grep 'remote_id=n2 op=replica_write' | grep -Eq 'message=2000[0-9]{2}' ||
    it_fail "n1's warn line lacks the message's size: $warns"
! grep -q 'event=peer_rejected' "$IT_DIR/n2.log" ||
    it_fail "n2 rejected a frame: $(grep 'event=peer_rejected' "$IT_DIR/n2.log" | tail -n 3)"
! grep -q 'event=member_\(suspect\|down\)' "$IT_DIR/n1.log" "$IT_DIR/n2.log" "$IT_DIR/n3.log" ||
    it_fail "a node saw another suspect or down: $(grep -h 'event=member_\(suspect\|down\)' "$IT_DIR"/n?.log)"
for n in n1 n3; do
    it_expect_eq "hints held by $n" "$(info_field $n cluster ringkv_hints)" 0
done
it_log "a 200,000-byte value over n2's frame-max (128 KiB): refused for n2 alone, the connections kept"
grep -h "event=peer_message_over_frame" "$IT_DIR"/n?.log | sed "s/^/    /"
it_pass "a message over a peer's frame-max fails alone"
