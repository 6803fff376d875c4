#!/bin/sh
# The fault verbs of cluster-scripts/testbed, on a testbed at its real
# addresses (127.0.0.1x, ports 7370-7372) inside a network and mount
# namespace of the test's own (lib.sh's it_private_net: root only, else
# skipped with 77), so no rule, qdisc or mount reaches the machine.
#
#   - up --rf 2 writes the setting into every node's config; add copies it;
#   - without root, a network verb says so in one line and exits 2;
#   - partition "n1 | n2 n3" cuts n1 from n2 and n3 and nothing else: n1's
#     detector sees n2 and n3 down, theirs see n1 down and each other up,
#     and a client on 127.0.0.1 still reaches every node; heal: no rule
#     left, and the ring converges with all three up;
#   - partition --from n1 --to n2: one rule, that direction, dropping
#     packets; n3 sees both up;
#   - loss n3 100 cuts n3 off (down for the others, no PING), loss n3 0
#     restores it; loss 30 is a random drop at 0.30; slow n2 and clear n2
#     add and remove the htb class (fault-node.sh measures the rate);
#   - skew n1 120 moves n1's TIME while it runs;
#   - diskfull n1: SETs are refused with the full-disk error, reads
#     answer; diskfree n1: SETs work again, no restart;
#   - add joins n4 through the seed, remove n4 removes it; logs, addr and
#     watch --count 2 (two frames, exit 0);
#   - down removes the testbed's chains, clean unmounts the disks.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
command -v iptables > /dev/null || it_fail "iptables not found: run cluster-scripts/install-deps"

RINGKV_TESTBED="$IT_DIR/tb"
RINGKV_BIN="$top_builddir/src"
RINGKV_TESTBED_TIMEOUT=60
RINGKV_TESTBED_DISK=32m
export RINGKV_TESTBED RINGKV_BIN RINGKV_TESTBED_TIMEOUT RINGKV_TESTBED_DISK
testbed="$top_srcdir/cluster-scripts/testbed"
# The nodes run in sessions of their own: down stops them whatever happens.
# it_cleanup takes the test's exit status from $?: keep it across down.
trap 'st=$?; bash "$testbed" down > /dev/null 2>&1; (exit "$st"); it_cleanup' EXIT

# tb WANT ARGS...: run the testbed, expect exit code WANT; its output in $IT_DIR/out.
tb() {
    want=$1
    shift
    rc=0
    bash "$testbed" "$@" > "$IT_DIR/out" 2>&1 || rc=$?
    [ "$rc" -eq "$want" ] || it_fail "'testbed $*' exited $rc, expected $want: $(cat "$IT_DIR/out")"
}

addr() { echo "127.0.0.$((10 + ${1#n}))"; }

# sees ID STATE OTHER: node ID's failure detector has member OTHER in STATE.
sees() {
    "$RINGKV" -H "$(addr "$1"):7370" -t 2 members --json 2> /dev/null | python3 -c '
import json, sys
m = [m for m in json.load(sys.stdin)["members"] if m["id"] == sys.argv[1]]
sys.exit(0 if m and m[0]["state"] == sys.argv[2] else 1)' "$3" "$2"
}

# up ID OTHER: ID sees OTHER alive.
up() { sees "$1" alive "$2"; }
pings() { "$RINGKV" -H "$(addr "$1"):7370" -t 1 call PING > /dev/null 2>&1; }
DOWN_S=$(($(it_rounds_s "$IT_DOWN_ROUNDS") * 2))

# --- up with settings, root ------------------------------------------------------
tb 0 up -n 3 --rf 2
for id in n1 n2 n3; do
    grep -qx 'rf 2' "$RINGKV_TESTBED/$id/ringkvd.conf" || it_fail "up --rf 2 did not write rf into $id's config"
    mountpoint -q "$RINGKV_TESTBED/$id/disk" || it_fail "$id's data is not on a tmpfs of its own"
done
tb 0 addr n2
it_expect_eq "addr n2" "$(cat "$IT_DIR/out")" 127.0.0.12:7370
tb 0 logs n1
grep -q 'event=node_start' "$IT_DIR/out" || it_fail "logs n1 has no node_start"
chmod 755 "$IT_DIR"
rc=0
setpriv --reuid 65534 --regid 65534 --clear-groups bash "$testbed" heal > "$IT_DIR/out" 2>&1 || rc=$?
it_expect_eq "exit code of heal without root" "$rc" 2
[ "$(wc -l < "$IT_DIR/out")" -eq 1 ] && grep -q 'needs root' "$IT_DIR/out" ||
    it_fail "heal without root: $(cat "$IT_DIR/out")"

# --- partition "n1 | n2 n3" ------------------------------------------------------
tb 0 partition "n1 | n2 n3"
IT_WAIT=$DOWN_S it_wait sees n1 down n2 || it_fail "n1 does not see n2 down"
IT_WAIT=$DOWN_S it_wait sees n1 down n3 || it_fail "n1 does not see n3 down"
IT_WAIT=$DOWN_S it_wait sees n2 down n1 || it_fail "n2 does not see n1 down"
IT_WAIT=$DOWN_S it_wait sees n3 down n1 || it_fail "n3 does not see n1 down"
up n2 n3 && up n3 n2 || it_fail "n2 and n3 do not see each other up inside their side"
for id in n1 n2 n3; do
    pings "$id" || it_fail "a client on 127.0.0.1 cannot reach $id during the partition"
done
tb 0 heal
[ -z "$(iptables -w -S rk-127.0.0-cut | grep -v '^-N')" ] || it_fail "heal left rules: $(iptables -S)"
tb 0 wait 60
it_log "partition n1 | n2 n3: each side saw the other down, clients served; healed"

# --- one way -----------------------------------------------------------------------
tb 0 partition --from n1 --to n2
it_expect_eq "rules after partition --from n1 --to n2" "$(iptables -w -S rk-127.0.0-cut | grep -c DROP)" 1
iptables -w -S rk-127.0.0-cut | grep -q -- '-s 127.0.0.11/32 -d 127.0.0.12/32 -j DROP' ||
    it_fail "the one-way rule is not n1 -> n2: $(iptables -S rk-127.0.0-cut)"
# What n1 sends n2 is dropped; gossip through n3 still carries n1's heartbeats to n2.
cut_drops() { iptables -w -n -v -x -L rk-127.0.0-cut | awk '$3 == "DROP" { n += $1 } END { exit !(n > 0) }'; }
IT_WAIT=$DOWN_S it_wait cut_drops || it_fail "the n1 -> n2 rule dropped nothing"
up n3 n1 && up n3 n2 || it_fail "n3 lost n1 or n2 over a cut it is not part of"
tb 0 heal
tb 0 wait 60

# --- loss, slow, clear -------------------------------------------------------------
tb 0 loss n3 100
IT_WAIT=$DOWN_S it_wait sees n1 down n3 || it_fail "n1 does not see n3 down under 100% loss"
# n1 closes its connection to the member it marked down: after a long silence
# TCP retransmits seconds apart, and the next dial starts afresh instead.
closed_n3() { grep -q 'event=peer_close .*remote_id=n3 reason=member_down' "$RINGKV_TESTBED/n1/ringkvd.log"; }
it_wait closed_n3 || it_fail "n1 kept its connection to n3, which it marked down"
! pings n3 || it_fail "n3 answers PING under 100% loss"
tb 0 loss n3 0
tb 0 wait 60
it_log "loss n3 0: $(tail -n 1 "$IT_DIR/out")"
pings n3 || it_fail "n3 does not answer PING after loss 0"
tb 0 loss n3 30
iptables -w -S rk-127.0.0-loss | grep -Eq -- '-d 127.0.0.13/32 -m statistic --mode random --probability 0\.(3|29)' ||
    it_fail "loss n3 30: $(iptables -S rk-127.0.0-loss)"
tb 0 slow n2 1mbit
tc class show dev lo | grep -q 'htb 1:c .*rate 1Mbit' || it_fail "slow n2: $(tc class show dev lo)"
tb 0 clear n3
tb 0 clear n2
[ -z "$(iptables -w -S rk-127.0.0-loss | grep -v '^-N')" ] || it_fail "clear left loss rules"
tc qdisc show dev lo | grep -qv htb || it_fail "clear left the htb qdisc: $(tc qdisc show dev lo)"
tb 2 loss n3 101
tb 0 wait 60

# --- skew --------------------------------------------------------------------------
offset() { echo $(($(redis-cli -h 127.0.0.11 -p 7370 TIME | head -n 1) - $(date +%s))); }
near120() { o=$(offset) && [ "$o" -ge 117 ] && [ "$o" -le 123 ]; }
pid=$(cat "$RINGKV_TESTBED/n1/ringkvd.pid")
tb 0 skew n1 120
it_wait near120 || it_fail "n1's wall clock is $(offset) s off after skew n1 120"
it_expect_eq "n1's pid after skew" "$(cat "$RINGKV_TESTBED/n1/ringkvd.pid")" "$pid"
tb 0 skew n1 0

# --- a full disk -------------------------------------------------------------------
head -c 524288 /dev/zero | tr '\0' x > "$IT_DIR/value"
setbig() { redis-cli -h 127.0.0.11 -p 7370 -x SET "$1" < "$IT_DIR/value" 2>&1; }
# The network faults above are cleared, but a TCP connection they hit may
# still be in retransmission backoff: the write may time out (TRYAGAIN, said
# here with n1's view of its peers) and is tried again, at most 3 times.
for try in 1 2 3; do
    out=$(setbig before)
    [ "$out" != OK ] || break
    it_log "SET before diskfull, try $try: $out; n1: $(grep -h 'event=peer_\|event=member_' "$RINGKV_TESTBED/n1/ringkvd.log" | tail -n 4)"
    [ "$try" -lt 3 ] || it_fail "SET before diskfull: got '$out' 3 times"
    sleep 2
done
tb 0 diskfull n1
i=0
while out=$(setbig "full$i") && [ "$out" = OK ]; do
    i=$((i + 1))
    [ "$i" -lt 20 ] || it_fail "20 SETs of 512 KiB succeeded after diskfull"
done
case $out in *"the store is full"*) ;; *) it_fail "SET after diskfull: $out" ;; esac
[ "$(redis-cli -h 127.0.0.11 -p 7370 GET before | wc -c)" -eq 524289 ] || it_fail "GET after diskfull"
tb 0 diskfree n1
it_expect_eq "SET after diskfree" "$(setbig after)" OK

# --- add, remove, watch --------------------------------------------------------------
tb 0 add
grep -q '^n4  started' "$IT_DIR/out" || it_fail "add did not start n4: $(cat "$IT_DIR/out")"
grep -qx 'rf 2' "$RINGKV_TESTBED/n4/ringkvd.conf" || it_fail "add did not give n4 the settings of up"
up n1 n4 || it_fail "n1 does not see n4 up after add"
tb 0 remove n4
[ ! -e "$RINGKV_TESTBED/n4" ] || it_fail "remove left n4's folder"
"$RINGKV" -H 127.0.0.11:7370 status --json > "$IT_DIR/status.json" || true
python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if [m for m in s["members"] if m["id"] == "n4" and m["status"] == "removed"] else 1)' \
    "$IT_DIR/status.json" || it_fail "n1 does not list n4 as removed: $(cat "$IT_DIR/status.json")"
tb 0 watch --count 2
it_expect_eq "frames of watch --count 2" "$(grep -c 'asked of n1' "$IT_DIR/out")" 2

# --- down and clean ------------------------------------------------------------------
tb 0 partition "n2 | n3"
tb 0 down
! iptables -w -n -L rk-127.0.0-cut > /dev/null 2>&1 || it_fail "down left the chain rk-127.0.0-cut"
! iptables -w -S INPUT | grep -q rk- || it_fail "down left a hook in INPUT"
tb 0 clean
! grep -q "$IT_DIR" /proc/mounts || it_fail "clean left a mount: $(grep "$IT_DIR" /proc/mounts)"
it_pass "partition, one-way cut, loss, slow, skew, diskfull, add, remove, watch"
