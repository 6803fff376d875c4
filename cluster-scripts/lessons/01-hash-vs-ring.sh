#!/usr/bin/env bash
# lesson: hash-vs-ring
# title: hash % N moves most keys when a node joins; the ring moves about 1/(N+1)
# length: quick
#
# Three nodes, one copy of each key (rf 1), 3,000 keys.  A fourth node
# joins.  The ring moves only the arcs the new node's tokens take: about a
# quarter of the keys, which the new node holds afterwards (DBSIZE).  The
# same keys placed by hash(key) % N instead would change node for about
# three quarters of them (computed here for the same key names).  Every key
# still reads back after the join.
. "$(dirname "$0")/lib.sh"
KEYS=3000
lesson_begin

step "Start three nodes, each key stored once (rf 1)."
lesson_up -n 3 --rf 1 --r 1 --w 1
notice "three nodes, one per rack, all up and normal; the ring converged."

step "Write $KEYS keys through n1."
seq 0 $((KEYS - 1)) | awk '{ print "SET lesson:" $1 " v" $1 }' > sets
send n1 sets
notice "every reply is OK: each key is on exactly one node."
for id in n1 n2 n3; do figure "keys_$id" "$(rcli "$id" DBSIZE)"; done
figure keys_before "$((fig_keys_n1 + fig_keys_n2 + fig_keys_n3))"

step "What hash(key) % N would do with the same keys when N goes from 3 to 4."
keep modn python3 "$lesson_here/hashmod.py" "$KEYS" 3 4
figure modn_moved "$(printf '%s' "$modn" | awk '{ print $(NF - 2) }')"
notice "a key stays put only when h % 3 == h % 4: about a quarter of them."

step "Add n4: it joins, copies the arcs its tokens take from their owners, then turns normal."
run tb add n4
run cli n1 status
notice "n4 owns about a quarter of the ring; the others gave up what it took."
figure ring_moved "$(rcli n4 DBSIZE)"

step "Read every key back through n2."
seq 0 $((KEYS - 1)) | awk '{ print "GET lesson:" $1 }' > gets
echo "   \$ redis-cli -h $(addr n2 | sed 's/:/ -p /') < gets | grep -c '^v'"
figure read_back "$(rcli n2 < gets | grep -c '^v')"

share() { awk -v a="$1" -v b="$KEYS" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
claim "the ring moved $fig_ring_moved of $KEYS keys ($(share "$fig_ring_moved"), 1/(N+1) = 25%), hash % N would move $fig_modn_moved ($(share "$fig_modn_moved"), N/(N+1) = 75%)" -- \
    holds 'r >= 0.15 * k && r <= 0.35 * k && m >= 0.65 * k && m <= 0.85 * k' r="$fig_ring_moved" m="$fig_modn_moved" k="$KEYS"
claim "all $KEYS keys were stored and read back after the join ($fig_keys_before stored, $fig_read_back read)" -- \
    holds 'b == k && r == k' b="$fig_keys_before" r="$fig_read_back" k="$KEYS"
lesson_end
