#!/bin/sh
# Removing members, and members coming back, with real ringkvd processes:
#
#   - `ringkv remove` refuses a live member, the node asked, an unknown id
#     and a member already removed, each with one line and exit 1;
#   - kill -9 of a member, then `ringkv remove` on one node: every node
#     lists it as removed and the ring of the others converges without it;
#     starting it again (same data directory) is a new generation, which
#     the cluster takes back, at an epoch above the one without it: first
#     as joining (its data is not current: the cluster holds back its
#     entry claiming normal until it hears of its removal and joins
#     again, event=rejoining), then normal once it holds its arcs;
#   - a member removed while paused (SIGSTOP) learns of it at SIGCONT,
#     logs event=removed_from_cluster and exits 3; started again, it
#     rejoins;
#   - a member whose data directory was wiped comes back at its address
#     with generation 1, takes a generation above its old entry
#     (event=reincarnated), and is accepted;
#   - a new member at the address of a dead one never dials that entry
#     (its own address).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
N=4
it_cluster "$N"
PORTS=$(it_ports "$N")
CONVERGE_S=$(it_rounds_s 30)
DOWN_S=$(it_rounds_s "$IT_DOWN_ROUNDS")
IT_WAIT=$CONVERGE_S it_wait it_ask converged 4 $PORTS || it_fail "4 nodes did not converge"

# ports of every node but those named
ports_but() {
    out=""
    for i in $(seq 1 "$N"); do
        case " $* " in *" n$i "*) continue ;; esac
        out="$out $(it_var "n$i" CLIENT)"
    done
    echo "$out"
}

# refused NODE ID PATTERN: `ringkv remove ID` asked of NODE fails with PATTERN on stderr.
refused() {
    rc=0
    "$RINGKV" -H "127.0.0.1:$(it_var "$1" CLIENT)" remove "$2" > "$IT_DIR/remove.out" 2> "$IT_DIR/remove.err" || rc=$?
    it_expect_eq "exit status of remove $2 on $1" "$rc" 1
    grep -q "$3" "$IT_DIR/remove.err" || it_fail "remove $2 on $1: $(cat "$IT_DIR/remove.err")"
}

refused n1 n2 "'n2' is alive here (phi [0-9.]*): only a member seen down can be removed"
refused n1 n1 "'n1' is this node: ask another node to remove it"
refused n1 nosuch "no member 'nosuch' in this node's table"
rc=0
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" remove > /dev/null 2>&1 || rc=$?
it_expect_eq "exit status of remove without an id" "$rc" 2
it_ask converged 4 $PORTS || it_fail "a refused removal changed the cluster"
it_log "remove refuses a live member, the node itself, an unknown id"

# kill -9 n4, remove it from n1: removed everywhere, the rest converge without it.
it_stop n4 KILL
rest=$(ports_but n4)
IT_WAIT=$DOWN_S it_wait it_ask state down n4 $rest || it_fail "n4 not down within $IT_DOWN_ROUNDS rounds"
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" remove --json n4 > "$IT_DIR/remove.json" ||
    it_fail "remove n4 refused"
grep -q '"removed": true' "$IT_DIR/remove.json" || it_fail "remove --json: $(cat "$IT_DIR/remove.json")"
grep -q 'event=member_removed id=n4 source=operator' "$IT_DIR/n1.log" || it_fail "no member_removed on n1"
IT_WAIT=$CONVERGE_S it_wait it_ask status removed n4 $rest || it_fail "n4 not removed everywhere"
IT_WAIT=$CONVERGE_S it_wait it_ask converged 3 $rest || it_fail "3 nodes did not converge without n4"
for port in $rest; do
    "$RINGKV" -H "127.0.0.1:$port" ring --json | grep -q '"n4"' && it_fail "n4 still in the ring of $port"
    # The ring each node serves is the one it holds (learnt by gossip on all but n1).
    redis-cli -p "$port" INFO cluster | tr -d '\r' | grep -qx 'ringkv_members:3' ||
        it_fail "INFO cluster on $port: $(redis-cli -p "$port" INFO cluster 2>&1 | tr -d '\r' | tr '\n' ' ')"
done
refused n2 n4 "'n4' is already removed"
it_log "kill -9 n4 and remove: removed everywhere, out of every ring"

epoch() { "$RINGKV" -H "127.0.0.1:$(it_var "$1" CLIENT)" status --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["epoch"])'; }

# n4 starts again on its data directory: a new generation, taken back, and
# the ring with it has an epoch above the ring without it.
out_epoch=$(epoch n1)
it_node n4 --rack r1 --seeds "127.0.0.1:$N3_PEER"
it_wait_ping n4
IT_WAIT=$CONVERGE_S it_wait it_ask converged 4 $PORTS || it_fail "restarted n4 not taken back"
it_ask status normal n4 $PORTS || it_fail "n4 is not normal everywhere"
back_epoch=$(epoch n1)
[ "$back_epoch" -gt "$out_epoch" ] || it_fail "epoch $back_epoch with n4 back is not above $out_epoch without it"
grep -q 'event=member_back id=n4 generation=2 status=joining' "$IT_DIR/n2.log" ||
    it_fail "n2 did not log n4 back as joining: $(grep 'id=n4' "$IT_DIR/n2.log" | tail -n 3)"
grep -q 'event=rejoining .*seen_status=removed' "$IT_DIR/n4.log" ||
    it_fail "n4 did not rejoin: $(grep -E 'rejoin|joined|status' "$IT_DIR/n4.log" | tail -n 3)"
it_log "n4 started again: back in the cluster, epoch $out_epoch -> $back_epoch"

# Pause n3, remove it from n2, resume: n3 learns it was removed and stops with exit 3.
kill -STOP "$N3_PID"
rest=$(ports_but n3)
IT_WAIT=$DOWN_S it_wait it_ask state down n3 $rest || it_fail "paused n3 not down"
"$RINGKV" -H "127.0.0.1:$N2_CLIENT" remove n3 > /dev/null || it_fail "remove n3 refused"
IT_WAIT=$CONVERGE_S it_wait it_ask status removed n3 $rest || it_fail "n3 not removed everywhere"
kill -CONT "$N3_PID"
IT_WAIT=$CONVERGE_S it_wait sh -c "! kill -0 $N3_PID" || it_fail "removed n3 kept running after SIGCONT"
it_stop n3
it_expect_eq "exit status of the removed n3" "$IT_STATUS" 3
grep -q 'event=removed_from_cluster' "$IT_DIR/n3.log" || it_fail "n3 did not log its removal"
sleep 1 # five rounds: n3's last heartbeats must not bring it back
it_ask status removed n3 $rest || it_fail "n3's last words brought it back"
it_ask converged 3 $rest || it_fail "the others did not stay converged"
it_node n3 --rack r3 --seeds "127.0.0.1:$N2_PEER"
it_wait_ping n3
IT_WAIT=$CONVERGE_S it_wait it_ask converged 4 $PORTS || it_fail "n3 started again not taken back"
it_log "n3 removed while paused: stopped with exit 3, and rejoined when started again"

# n2 loses its data directory and comes back at its address.
gen=$(it_generation "$N1_CLIENT" n2)
it_stop n2 TERM
rm -rf "$IT_DIR/n2.data"
it_node n2 --rack r2 --seeds "127.0.0.1:$N1_PEER"
it_wait_ping n2
IT_WAIT=$CONVERGE_S it_wait it_ask converged 4 $PORTS || it_fail "wiped n2 not taken back"
grep -q "event=reincarnated why=earlier_life seen_generation=$gen generation=$((gen + 1))" "$IT_DIR/n2.log" ||
    it_fail "n2 did not take a generation above $gen: $(grep -E 'reincarnated|membership_loaded' "$IT_DIR/n2.log")"
it_ask wrongly-down none $PORTS || it_fail "a member is suspected at the end"
it_log "wiped n2: generation $gen -> $((gen + 1)), accepted"

# A new node (n5) takes the address of a dead member (n4, not removed): it
# never dials the stale entry, which is its own address, so never itself;
# and a seed naming its own address by another name (localhost) is
# recognised as itself when it answers, not as an impostor.
it_stop n4 KILL
it_setvar n5 PEER "$N4_PEER"
it_node n5 --rack r2 --seeds "127.0.0.1:$N1_PEER,localhost:$N4_PEER" --log-level debug
it_wait_ping n5
live="$(ports_but n4 n5) $N5_CLIENT"
IT_WAIT=$DOWN_S it_wait it_ask state down n4 $live || it_fail "n4 not down everywhere"
sleep 1 # five more rounds of pings to every member
grep -q 'event=peer_same_id' "$IT_DIR/n5.log" && it_fail "n5 took itself for an impostor: $(grep peer_same_id "$IT_DIR/n5.log" | head -n 1)"
grep -q "event=peer_self peer=127.0.0.1:$N4_PEER" "$IT_DIR/n5.log" && it_fail "n5 dialled n4's stale entry, its own address"
# The localhost seed: dialled (seeds are tried now and then), found to be
# n5 itself, and never dialled again.
IT_WAIT=$(it_rounds_s 100) it_wait grep -q "event=peer_self peer=localhost:$N4_PEER" "$IT_DIR/n5.log" ||
    it_fail "n5 never tried its localhost seed"
sleep 2 # ten rounds
selfs=$(grep -c "event=peer_self peer=localhost:$N4_PEER" "$IT_DIR/n5.log")
[ "$selfs" -eq 1 ] || it_fail "n5 dialled itself as localhost $selfs times, not once"
it_alive n5 || it_fail "n5 stopped"
it_log "n5 at dead n4's address: no dial to itself"
it_pass
