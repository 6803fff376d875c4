#!/bin/sh
# Tombstone collection at rf 3 with real ringkvd processes (3 nodes in 3
# racks, r = w = 2, tombstone-grace 4s):
#
#   - keys deleted with every replica up: at once INFO keyspace's
#     db0:keys leaves them out and ringkv_tombstones_held counts them;
#     after the grace, every node collects its tombstones (INFO
#     ringkv_tombstones and ringkv_tombstones_held back to 0,
#     ringkv_tombstones_collected up) and each key reads absent through
#     every node;
#   - keys deleted while n3 is killed: past the grace n1 and n2 keep their
#     tombstones (ringkv_tombstones_kept_unanswered grows, ringkv_tombstones
#     stays) for as long as n3 is down;
#   - n3 restarted: its stale values are back on it (KGET R 1 through n3,
#     which reads only its own copy), yet nothing is resurrected: after a
#     read through n3 (read repair) every key reads absent through every
#     node, n3's own copy included, and then every node collects the
#     tombstones.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net

KEYS=10
GRACE=4
info_field() { it_cli "$1" INFO "$2" | tr -d '\r' | sed -n "s/^$3://p"; }
tombstones() { info_field "$1" cluster ringkv_tombstones; }
collected() { info_field "$1" persistence ringkv_tombstones_collected; }
# field_ge NODE SECTION FIELD MIN
field_ge() {
    v=$(info_field "$1" "$2" "$3")
    [ -n "$v" ] && [ "$v" -ge "$4" ]
}
field_eq() { [ "$(info_field "$1" "$2" "$3")" = "$4" ]; }
# live_eq NODE N: INFO keyspace's db0:keys is N (no db0 line: 0)
live_eq() {
    v=$(info_field "$1" keyspace db0 | sed -n 's/^keys=\([0-9]*\),.*/\1/p')
    [ "${v:-0}" = "$2" ]
}
# absent_everywhere PREFIX: every key PREFIXi reads absent through every up node in $UP
absent_everywhere() {
    for n in $UP; do
        i=0
        while [ $i -lt $KEYS ]; do
            [ -z "$(it_cli "$n" GET "$1$i")" ] || return 1
            i=$((i + 1))
        done
    done
}
sees_down() { it_ask state down "$2" "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }
all_up() { it_wait it_ask converged 3 $(it_ports 3); }
# Grace plus a few collection passes (a quarter of the grace, at least 1 s, each).
WAIT_GC=$((GRACE + 20))

it_cluster 3 --tombstone-grace ${GRACE}s
all_up || it_fail "3 nodes did not converge"
UP="n1 n2 n3"

# 1. every replica up: collected everywhere after the grace
i=0
while [ $i -lt $KEYS ]; do
    it_expect_eq "SET a$i" "$(it_cli n1 SET "a$i" v)" OK
    i=$((i + 1))
done
for n in $UP; do
    it_wait live_eq "$n" $KEYS || it_fail "$n: INFO keyspace does not count the $KEYS keys"
done
i=0
while [ $i -lt $KEYS ]; do
    it_expect_eq "DEL a$i" "$(it_cli n1 DEL "a$i")" 1
    i=$((i + 1))
done
for n in $UP; do
    it_wait live_eq "$n" 0 ||
        it_fail "$n: INFO keyspace still counts deleted keys: $(info_field "$n" keyspace db0)"
    it_wait field_eq "$n" cluster ringkv_tombstones_held $KEYS ||
        it_fail "$n holds $(info_field "$n" cluster ringkv_tombstones_held) tombstones, not $KEYS"
    it_wait field_eq "$n" cluster ringkv_tombstones $KEYS ||
        it_fail "$n never counted the $KEYS tombstones: $(tombstones "$n")"
done
for n in $UP; do
    IT_WAIT=$WAIT_GC it_wait field_ge "$n" persistence ringkv_tombstones_collected $KEYS ||
        it_fail "$n collected $(collected "$n") of $KEYS tombstones with every replica up"
    IT_WAIT=$WAIT_GC it_wait field_eq "$n" cluster ringkv_tombstones 0 ||
        it_fail "$n still holds $(tombstones "$n") tombstones"
    field_eq "$n" cluster ringkv_tombstones_held 0 ||
        it_fail "$n still holds $(info_field "$n" cluster ringkv_tombstones_held) tombstones"
done
absent_everywhere a || it_fail "a collected key reads as present somewhere"
it_log "every replica up: $KEYS tombstones collected on n1, n2 and n3"

# 2. n3 down: the tombstones stay past the grace
i=0
while [ $i -lt $KEYS ]; do
    it_expect_eq "SET b$i" "$(it_cli n1 SET "b$i" stale)" OK
    i=$((i + 1))
done
# every replica holds the values before n3 goes (w = 2 acknowledges before the third)
for n in $UP; do
    it_wait sh -c "[ \"\$(redis-cli -h $(it_addr $n) -p $(it_var $n CLIENT) KGET b$((KEYS - 1)) R 1 | sed -n 2p)\" != '' ]" ||
        it_fail "$n never held b$((KEYS - 1))"
done
kill -9 "$N3_PID"
wait "$N3_PID" 2> /dev/null
UP="n1 n2"
for n in $UP; do
    IT_WAIT=$(it_rounds_s $((IT_DOWN_ROUNDS * 2))) it_wait sees_down $n n3 || it_fail "$n never saw n3 down"
done
unanswered1=$(info_field n1 cluster ringkv_tombstones_kept_unanswered)
collected1=$(collected n1)
i=0
while [ $i -lt $KEYS ]; do
    it_expect_eq "DEL b$i with n3 down" "$(it_cli n1 DEL "b$i")" 1
    i=$((i + 1))
done
# two checks of every key past its grace, each kept for want of n3's answer
for n in $UP; do
    IT_WAIT=$WAIT_GC it_wait field_ge $n cluster ringkv_tombstones_kept_unanswered \
        $((unanswered1 + 2 * KEYS)) ||
        it_fail "$n did not check its tombstones with n3 down"
    it_wait field_eq $n cluster ringkv_tombstones $KEYS ||
        it_fail "$n holds $(tombstones $n) tombstones past the grace with n3 down, want $KEYS"
done
it_expect_eq "tombstones collected by n1 with n3 down" "$(collected n1)" "$collected1"
absent_everywhere b || it_fail "a deleted key reads as present with n3 down"
it_log "n3 down: n1 and n2 keep their $KEYS tombstones past the grace"

# 3. n3 back with its stale values: not resurrected, then collected.  n1, which
# coordinated the deletes, keeps them as hints for n3: it is stopped while n3 comes
# back, so that n3's stale copies stay until n2 has seen them (n2 keeps its
# tombstones: ringkv_tombstones_kept_live) and until a read through n3 repairs them.
live2=$(info_field n2 cluster ringkv_tombstones_kept_live)
kill -STOP "$N1_PID"
it_node n3 --rack r3 --tombstone-grace ${GRACE}s
it_wait_ping n3
stale=$(it_cli n3 KGET b0 R 1 | sed -n 2p)
[ "$stale" = stale ] || it_fail "n3's own copy of b0 after its restart: '$stale', want the stale value"
IT_WAIT=$WAIT_GC it_wait field_ge n2 cluster ringkv_tombstones_kept_live $((live2 + KEYS)) ||
    it_fail "n2 did not keep its tombstones on seeing n3's stale values"
it_expect_eq "n2's tombstones with n3's stale values" "$(tombstones n2)" $KEYS
kill -CONT "$N1_PID"
UP="n1 n2 n3"
all_up || it_fail "n1 and n3 did not come back up"
i=0
while [ $i -lt $KEYS ]; do
    got=$(it_cli n3 GET "b$i")
    [ -z "$got" ] || it_fail "b$i resurrected through n3: '$got'"
    i=$((i + 1))
done
absent_everywhere b || it_fail "a deleted key came back after n3 returned"
got=$(it_cli n3 KGET b0 R 1 | sed -n 2p)
[ "$got" != stale ] || it_fail "n3's own copy of b0 is still the stale value after read repair"
for n in $UP; do
    IT_WAIT=$WAIT_GC it_wait field_eq "$n" cluster ringkv_tombstones 0 ||
        it_fail "$n still holds $(tombstones "$n") tombstones after n3 returned"
done
absent_everywhere b || it_fail "a collected key came back"
it_log "n3 back: its stale values not resurrected, the tombstones collected everywhere"
it_pass "tombstones collected at rf 3 once every replica holds them"
