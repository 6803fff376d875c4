#!/bin/sh
# The fault rules themselves, without nodes, in a network namespace of the
# test's own (it_private_net: root only, else skipped with 77):
#   - rate limits of two addresses whose NETs differ in their second
#     number (127.0.0.11, 127.1.0.11: the same b*256+c) get two classes,
#     each with its own rate, and healing one NET leaves the other's class
#     and filters in place;
#   - heal after a rate limit stopped half way (filters, no class)
#     leaves no filter and no qdisc;
#   - a partition asked for twice adds no second copy of its rules;
#   - an address named in two groups of a partition is refused (2), with
#     no rule added;
#   - a skew past the clock file's range (+50 years) is refused (2) with
#     a line that names the range, and leaves the offset as it was.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup

# class_rate ADDR: the rate of the htb class ADDR's source filter leads to ("" if none).
class_rate() {
    hex=$(echo "$1" | awk -F. '{ printf "%02x%02x%02x%02x", $1, $2, $3, $4 }')
    class=$(tc filter show dev lo | awk -v m="match $hex/ffffffff at 12" '
        /flowid/ { for (i = 1; i <= NF; i++) if ($i ~ /flowid$/) f = $(i + 1) }
        index($0, m) { print f; exit }')
    [ -n "$class" ] || return 0
    tc class show dev lo | awk -v c="$class" '$3 == c { for (i = 1; i <= NF; i++) if ($i == "rate") print $(i + 1) }'
}

fault_slow 127.0.0.11 1mbit || it_fail "slow 127.0.0.11"
fault_slow 127.1.0.11 2mbit || it_fail "slow 127.1.0.11"
[ "$(class_rate 127.0.0.11)" = 1Mbit ] || it_fail "127.0.0.11 is not limited to 1mbit: $(tc class show dev lo)"
[ "$(class_rate 127.1.0.11)" = 2Mbit ] || it_fail "127.1.0.11 is not limited to 2mbit: $(tc class show dev lo)"
fault_heal 127.1.0 127.1.0.11 || it_fail "heal 127.1.0"
[ -z "$(class_rate 127.1.0.11)" ] || it_fail "127.1.0.11 is still limited after its heal"
[ "$(class_rate 127.0.0.11)" = 1Mbit ] ||
    it_fail "healing 127.1.0 took 127.0.0.11's limit: $(tc class show dev lo; tc filter show dev lo)"
[ "$(tc filter show dev lo | grep -c 'match 7f00000b/ffffffff')" -eq 2 ] || it_fail "127.0.0.11's filters are gone"
fault_heal 127.0.0 127.0.0.11 || it_fail "heal 127.0.0"
tc qdisc show dev lo | grep -q htb && it_fail "the htb qdisc outlived its last class"

# A slow stopped after its filters (Ctrl-C): heal still removes them and the qdisc.
tc qdisc add dev lo root handle 1: htb || it_fail "tc qdisc"
tc filter add dev lo parent 1: protocol ip pref 11 u32 match ip src 127.0.0.11/32 flowid 1:b ||
    it_fail "tc filter"
fault_heal 127.0.0 127.0.0.11 || it_fail "heal after a half done slow"
[ -z "$(tc filter show dev lo)" ] || it_fail "heal left filters: $(tc filter show dev lo)"
tc qdisc show dev lo | grep -q htb && it_fail "heal left the htb qdisc"

fault_partition 127.0.0 "127.0.0.11 | 127.0.0.12 127.0.0.13" || it_fail "partition"
fault_partition 127.0.0 "127.0.0.11 | 127.0.0.12 127.0.0.13" || it_fail "partition again"
n=$(iptables -w -S rk-127.0.0-cut | grep -c DROP)
[ "$n" -eq 4 ] || it_fail "a partition asked for twice has $n rules, not 4"
fault_heal 127.0.0 || it_fail "heal"

rc=0
fault_partition 127.0.0 "127.0.0.11 | 127.0.0.11" 2> "$IT_DIR/twice.err" || rc=$?
[ "$rc" -eq 2 ] || it_fail "an address in two groups: status $rc, not 2"
grep -q 'named twice' "$IT_DIR/twice.err" || it_fail "no clear line: $(cat "$IT_DIR/twice.err")"
[ "$(iptables -w -S rk-127.0.0-cut | grep -c DROP)" -eq 0 ] || it_fail "a refused partition left rules"
fault_remove 127.0.0

fault_skew "$IT_DIR/n1.clock" +3600 || it_fail "skew +3600"
rc=0
fault_skew "$IT_DIR/n1.clock" +1577880000 2> "$IT_DIR/skew.err" || rc=$?
[ "$rc" -eq 2 ] || it_fail "a skew of 50 years: status $rc, not 2"
grep -q -- '-999999999 to +999999999' "$IT_DIR/skew.err" || it_fail "no range named: $(cat "$IT_DIR/skew.err")"
[ "$(cat "$IT_DIR/n1.clock")" = +3600 ] || it_fail "a refused skew changed the offset: $(cat "$IT_DIR/n1.clock")"
it_pass "rate limits of two NETs, idempotent partition, an address in two groups, skew range"
