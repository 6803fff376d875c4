#!/bin/sh
# Two ringkvd processes whose peer ports are on IPv6 loopback ([::1]), the
# second seeded with the first by a bracketed address:
#
#   - they converge (both members up, one ring digest);
#   - each announces its peer address in the one text form of addr.h,
#     "[::1]:port", so `ringkv status` shows it as the settings give it;
#   - an IPv6 address without brackets is refused at start with one line
#     naming the setting and the rule.
#
# Skipped (exit 77) where the kernel has no ::1.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

free_port6() {
    it_free_port ::1
}

if ! port1=$(free_port6 2> /dev/null); then
    it_log "no IPv6 loopback here: skipped"
    IT_FAILED=0
    exit 77
fi
port2=$(free_port6)

# it_node's own --listen (IPv4) comes first; the later flag wins.
it_node n1 --listen "[::1]:$port1"
it_node n2 --listen "[::1]:$port2" --seeds "[0:0::1]:$port1"
it_wait_ping n1
it_wait_ping n2
IT_WAIT=$(it_rounds_s 12) it_wait it_ask converged 2 $(it_ports 2) ||
    it_fail "two nodes on [::1] did not converge (logs: $IT_DIR)"

addrs=$("$RINGKV" -H "127.0.0.1:$(it_var n2 CLIENT)" status --json | python3 -c '
import json, sys
print(" ".join(sorted(m["peer_addr"] for m in json.load(sys.stdin)["members"])))')
want=$(printf '[::1]:%s\n[::1]:%s\n' "$port1" "$port2" | sort | tr '\n' ' ' | sed 's/ $//')
it_expect_eq "peer addresses in n2's status" "$addrs" "$want"

out=$("$RINGKVD" --id n3 --cluster-key "$IT_DIR/key" --data "$IT_DIR/n3.data" \
    --listen "::1:$port2" --test-config 2>&1)
status=$?
it_expect_eq "exit status of an unbracketed IPv6 listen" "$status" 2
case $out in
*"listen: '::1:$port2' is not host:port (an IPv6 host goes in brackets, as [::1]:7371)"*) ;;
*) it_fail "unexpected refusal: $out" ;;
esac

it_pass "IPv6 peers converge; addresses as [::1]:port"
