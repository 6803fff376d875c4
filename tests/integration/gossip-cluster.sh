#!/bin/sh
# Gossip membership with real ringkvd processes at their default settings
# (gossip-interval 200 ms), each node seeded with the one before it only.
#
#   - 3 and 6 nodes converge (same ring digest everywhere, every member up)
#     within 6 x ceil(log2 N) gossip rounds of the last node answering;
#   - every ring change is one ring_changed line naming the ring it
#     replaced, counted in INFO;
#   - kill -9 of a node: every other node marks it down within
#     IT_DOWN_ROUNDS rounds (lib.sh), and no other member is suspected;
#   - SIGSTOP: marked down; SIGCONT: alive again;
#   - a node with another cluster key never appears in any member view;
#   - a restarted node comes back with its ring (the same digest before it
#     hears from anyone), with a new generation, and is accepted;
#   - a second process claiming a live member's id is refused with one
#     line and exit 2, and the original is unaffected;
#   - a copy of a live member's data directory started elsewhere starts
#     no war of generations: the original logs id_conflict once.
#
# The detection bound, IT_DOWN_ROUNDS, is derived in lib.sh.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
ROUND_MS=$IT_ROUND_MS
DOWN_ROUNDS=$IT_DOWN_ROUNDS

rounds_s() { it_rounds_s "$1"; }

ceil_log2() {
    n=1
    k=0
    while [ "$n" -lt "$1" ]; do
        n=$((n * 2))
        k=$((k + 1))
    done
    echo "$k"
}

# converge N: start N nodes and check convergence within 6 x ceil(log2 N) rounds.
converge() {
    count=$1
    bound=$((6 * $(ceil_log2 "$count")))
    it_cluster "$count"
    start=$(date +%s%N)
    IT_WAIT=$(rounds_s "$bound") it_wait it_ask converged "$count" $(it_ports "$count") ||
        it_fail "$count nodes did not converge within $bound rounds"
    took=$((($(date +%s%N) - start) / 1000000))
    it_log "$count nodes converged in $took ms (bound: $bound rounds, $((bound * ROUND_MS)) ms)"
}

stop_all() {
    i=1
    while [ "$i" -le "$1" ]; do
        it_stop "n$i" TERM
        i=$((i + 1))
    done
}

converge 3
stop_all 3
rm -rf "$IT_DIR"/n*.data
converge 6
PORTS=$(it_ports 6)

# The ring-change event on n6 (one life, joined last): every ring_changed
# line names the ring it replaced, which is the ring the line before put in
# force; the last one is the converged ring; INFO counts every one.
grep 'event=ring_changed' "$IT_DIR/n6.log" |
    sed -n 's/.* digest=\([0-9a-f]*\) .* old_digest=\([0-9a-f]*\) .*/\2 \1/p' > "$IT_DIR/n6.rings"
changes=$(wc -l < "$IT_DIR/n6.rings")
[ "$changes" -ge 1 ] || it_fail "n6 logged no ring_changed while joining 6 nodes"
awk 'NR > 1 && $1 != prev { print "line " NR ": old " $1 " is not " prev; bad = 1 } { prev = $2 } END { exit bad }' \
    "$IT_DIR/n6.rings" || it_fail "n6's ring_changed lines do not chain: $(cat "$IT_DIR/n6.rings")"
it_expect_eq "n6's last ring_changed digest" "$(tail -n 1 "$IT_DIR/n6.rings" | cut -d' ' -f2)" \
    "$(it_cli n6 RINGKV STATUS | awk 'f { print; exit } $0 == "digest" { f = 1 }')"
it_expect_eq "n6's INFO ringkv_ring_changes" \
    "$(it_cli n6 INFO cluster | tr -d '\r' | sed -n 's/^ringkv_ring_changes://p')" "$changes"
it_log "n6 saw $changes ring changes, each naming the ring it replaced"

# kill -9 of n4: down everywhere within the bound, nobody else suspected.
others=$(echo "$PORTS" | tr ' ' '\n' | grep -vx "$N4_CLIENT" | tr '\n' ' ')
start=$(date +%s%N)
it_stop n4 KILL
IT_WAIT=$(rounds_s $DOWN_ROUNDS) it_wait it_ask state down n4 $others ||
    it_fail "n4 not marked down by every node within $DOWN_ROUNDS rounds"
it_log "kill -9 of n4 seen down everywhere in $((($(date +%s%N) - start) / 1000000)) ms (bound $((DOWN_ROUNDS * ROUND_MS)) ms)"
it_ask wrongly-down n4 $others || it_fail "a live member was suspected"

# SIGSTOP n5: down; SIGCONT: alive again.
rest=$(echo "$others" | tr ' ' '\n' | grep -vx "$N5_CLIENT" | tr '\n' ' ')
kill -STOP "$N5_PID"
IT_WAIT=$(rounds_s $DOWN_ROUNDS) it_wait it_ask state down n5 $rest ||
    it_fail "paused n5 not marked down within $DOWN_ROUNDS rounds"
kill -CONT "$N5_PID"
IT_WAIT=$(rounds_s 20) it_wait it_ask state alive n5 $rest || it_fail "n5 not alive again after SIGCONT"
it_log "SIGSTOP/SIGCONT of n5: down, then alive"

# A node with another cluster key stays out of every view.
"$RINGKV" keygen "$IT_DIR/other.key" > /dev/null
it_setvar x1 PEER "$(it_free_port)"
it_node x1 --cluster-key "$IT_DIR/other.key" --seeds "127.0.0.1:$N1_PEER"
it_wait_ping x1
it_wait sh -c "grep -q 'event=peer_rejected' '$IT_DIR/x1.log'" || it_fail "x1's handshakes were not refused"
sleep 1 # ten rounds in which x1 keeps trying
it_ask lacks x1 $others || it_fail "a node with another key appeared in a member view"

# Restart n4 (killed above): back with its saved ring, a new generation, accepted.
digest=$(it_cli n1 RINGKV STATUS | awk 'f { print; exit } $0 == "digest" { f = 1 }')
it_node n4 --rack r1 --seeds "127.0.0.1:$N3_PEER"
it_wait_ping n4
it_expect_eq "n4's digest at restart" \
    "$(it_cli n4 RINGKV STATUS | awk 'f { print; exit } $0 == "digest" { f = 1 }')" "$digest"
grep -q 'event=membership_loaded generation=2 members=6' "$IT_DIR/n4.log" ||
    it_fail "n4 did not reload its table with a new generation: $(grep membership_loaded "$IT_DIR/n4.log")"
IT_WAIT=$(rounds_s 30) it_wait it_ask state alive n4 $others || it_fail "restarted n4 not alive everywhere"

# A second process claiming n1's id: refused, n1 unaffected.
set +e
"$RINGKVD" --id n1 --cluster-key "$IT_DIR/key" --data "$IT_DIR/n1-impostor.data" \
    --client "127.0.0.1:$(it_free_port)" --listen "127.0.0.1:$(it_free_port)" \
    --seeds "127.0.0.1:$N3_PEER" > "$IT_DIR/impostor.out" 2> "$IT_DIR/impostor.err" &
imp=$!
IT_PIDS="$IT_PIDS $imp"
wait "$imp"
status=$?
set -e
it_expect_eq "impostor exit status" "$status" "2"
grep -q "node id 'n1' is in use by another ringkvd" "$IT_DIR/impostor.err" ||
    it_fail "impostor: $(cat "$IT_DIR/impostor.err")"
IT_WAIT=$(rounds_s 30) it_wait it_ask converged 6 $PORTS || it_fail "cluster disturbed by the impostor"
it_ask wrongly-down none $PORTS || it_fail "a member suspected after the impostor"

# A copy of n2's data directory (mdb_copy, while n2 runs) started at
# another address: no war of generations.  The copy's new generation is
# taken, n2 logs id_conflict once, and the generation stops there.
gen=$(it_generation "$N1_CLIENT" n2)
mkdir "$IT_DIR/n2-copy.data"
mdb_copy "$IT_DIR/n2.data" "$IT_DIR/n2-copy.data" || it_fail "mdb_copy of n2's data failed"
"$RINGKVD" --id n2 --cluster-key "$IT_DIR/key" --data "$IT_DIR/n2-copy.data" --rack r2 \
    --client "127.0.0.1:$(it_free_port)" --listen "127.0.0.1:$(it_free_port)" \
    --seeds "127.0.0.1:$N1_PEER" >> "$IT_DIR/n2-copy.log" 2>&1 &
copy=$!
IT_PIDS="$IT_PIDS $copy"
IT_WAIT=$(it_rounds_s 20) it_wait grep -q 'event=id_conflict .*same_data=yes' "$IT_DIR/n2.log" ||
    it_fail "n2 did not notice its copy"
sleep 2 # ten rounds in which a war would climb
top=$(for port in $PORTS; do it_generation "$port" n2; done | sort -n | tail -n 1)
[ "$top" -le $((gen + 1)) ] || it_fail "n2's generation climbed from $gen to $top: a war with its copy"
it_expect_eq "id_conflict lines in n2's log" "$(grep -c 'event=id_conflict' "$IT_DIR/n2.log")" 1
grep -q 'event=reincarnated' "$IT_DIR/n2.log" "$IT_DIR/n2-copy.log" && it_fail "a reincarnation with the copy"
kill -9 "$copy"
wait "$copy" 2> /dev/null || true
it_log "a copy of n2's data at another address: generation $gen -> $top, no war, n2 logged id_conflict"
it_pass
