#!/usr/bin/env bash
# lesson: tombstone
# title: a delete is a write of a tombstone: a replica that missed it comes back, and the value stays deleted
# length: quick
#
# Three nodes, rf 3, r = w = 2.  Fifty keys are written, n3 stops, and the
# keys are deleted: acknowledged by n1 and n2, which hold a tombstone for
# each (a record saying "deleted", with a version newer than the value's).
# The tombstone grace is 2 s here (10 days by default): past it n1 and n2
# still keep every tombstone, since their collector deletes one only once
# every replica holds it, and n3 does not answer.  n1, which holds the hints
# for n3, stops; n3 starts again with the old values.  A read through n3
# asks n3 and n2: the tombstone's version descends the value's, so the read
# answers nil and repairs n3 (`ringkv replicas` shows n3's copy before and
# after).  No key reads back through any node.  Once n1 is back and every
# replica holds the tombstones, the collector removes them, and still no key
# comes back.  Were the tombstones dropped at the grace instead, as a store
# that only counts time does, n3's values would have nothing newer to lose
# to, and the reads would bring them back.
# shellcheck disable=SC2154,SC2317 # fig_NAME (figure) and keep's VAR are set by printf -v; helpers run through run and keep
. "$(dirname "$0")/lib.sh"
KEYS=50
GRACE=2
lesson_begin

# until_ok DESCRIPTION CMD ARGS...: wait until CMD succeeds, 20 s at most.
until_ok() {
    local what=$1 deadline=$((SECONDS + 20))
    shift
    until "$@"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "   gave up after 20 s waiting for: $what"
            return 1
        fi
        sleep 0.2
    done
}
# field ID SECTION NAME: a number from node ID's INFO SECTION (0 when absent).
field() { rcli "$1" INFO "$2" | tr -d '\r' | awk -F: -v k="$3" '$1 == k { v = $2 } END { print v + 0 }'; }
# live ID: the live keys node ID holds (INFO keyspace, db0:keys; tombstones left out).
live() { rcli "$1" INFO keyspace | tr -d '\r' | sed -n 's/^db0:keys=\([0-9]*\).*/\1/p' | awk '{ v = $1 } END { print v + 0 }'; }
# at_least ID SECTION NAME MIN / equals ID SECTION NAME VALUE
at_least() { [ "$(field "$1" "$2" "$3")" -ge "$4" ]; }
equals() { [ "$(field "$1" "$2" "$3")" -eq "$4" ]; }
live_is() { [ "$(live "$1")" -eq "$2" ]; }
# info_grep ID SECTION REGEX: the lines of node ID's INFO SECTION that REGEX matches, shown as redis-cli | grep.
info_grep() {
    local a
    a=$(addr "$1")
    echo "   \$ redis-cli -h ${a%:*} -p ${a##*:} INFO $2 | grep -E '$3'"
    rcli "$1" INFO "$2" | tr -d '\r' | grep -E "$3" | sed 's/^/     /'
}

step "Start three nodes: rf 3, r = w = 2, and a tombstone grace of $GRACE s (10 days by default)."
lesson_up -n 3 --rf 3 --r 2 --w 2 --tombstone-grace "${GRACE}s"
notice "the grace is how long a delete's tombstone is kept at least; short here on purpose."

step "Write $KEYS keys through n1, and wait until n3 holds all of them too."
seq 0 $((KEYS - 1)) > idx
awk '{ print "SET tomb:" $1 " old" $1 }' idx > sets
awk '{ print "OK" }' idx > want_ok
ask n1 sets want_ok
figure written "$(matched sets want_ok)"
quiet until_ok "n3 holds the $KEYS keys" live_is n3 "$KEYS"
run cli n1 replicas tomb:0
notice "all three replicas hold the same version of the value."

step "Stop n3 (about 4 s until n1 and n2 see it down), then delete the keys through n1."
run tb stop n3
quiet until_ok "n1 sees n3 down" seen n1 down n3
quiet until_ok "n2 sees n3 down" seen n2 down n3
unanswered_n1=$(field n1 cluster ringkv_tombstones_kept_unanswered)
unanswered_n2=$(field n2 cluster ringkv_tombstones_kept_unanswered)
awk '{ print "DEL tomb:" $1 }' idx > dels
awk '{ print "(integer) 1" }' idx > want_one
ask n1 dels want_one
figure deleted "$(matched dels want_one)"
run cli n1 replicas tomb:0 || [ $? -eq 3 ]
notice "n1 and n2 hold a tombstone, whose version vector descends the value's; n3 did not answer,"
notice "and n1, which coordinated the delete, keeps a hint of it for n3 (column hints)."

step "Wait past the $GRACE s grace, until the collector on n1 and n2 has looked at every tombstone."
# (as many checks as tombstones written: with no delete acknowledged, nothing to wait for)
quiet until_ok "n1 checked its tombstones" at_least n1 cluster ringkv_tombstones_kept_unanswered $((unanswered_n1 + fig_deleted))
quiet until_ok "n2 checked its tombstones" at_least n2 cluster ringkv_tombstones_kept_unanswered $((unanswered_n2 + fig_deleted))
info_grep n1 cluster '^ringkv_tombstones_(held|checked|kept_unanswered|kept_hints):'
info_grep n2 cluster '^ringkv_tombstones_(held|checked|kept_unanswered|kept_hints):'
for id in n1 n2; do
    figure "held_$id" "$(field "$id" cluster ringkv_tombstones_held)"
    base=unanswered_$id
    now=$(field "$id" cluster ringkv_tombstones_kept_unanswered)
    figure "kept_unanswered_$id" "$((now - ${!base}))"
done
notice "past the grace every tombstone is kept: n3, a replica, did not answer (kept_unanswered)."
notice "a store that drops tombstones once the grace is over would have nothing left to say 'deleted'"
notice "when n3 comes back with its values; here a tombstone goes only once every replica holds it."

step "Stop n1, which holds the hints for n3, then start n3: it comes back with the old values."
run tb stop n1
run tb start n3
quiet until_ok "n3 sees n2 up" seen n3 up n2
quiet until_ok "n2 sees n3 up" seen n2 up n3
run rcli n3 INFO keyspace
figure n3_live_before "$(live n3)"
run cli n2 replicas tomb:0 || [ $? -eq 3 ]
notice "n2 holds the tombstone, n3 the value it had before the delete; n1 is stopped, so its hints"
notice "cannot repair n3: only a read can."

step "Read every key through n3, then through n2: each read asks two replicas, n3 and n2."
awk '{ print "GET tomb:" $1 }' idx > gets
awk '{ print "(nil)" }' idx > want_nil
ask n3 gets want_nil
back=$((KEYS - $(matched gets want_nil)))
ask n2 gets want_nil
back=$((back + KEYS - $(matched gets want_nil)))
notice "the tombstone is newer than n3's value: merged, the read answers nil, and repairs n3."
run cli n2 replicas tomb:0 || [ $? -eq 3 ]
figure n3_live_after "$(live n3)"
notice "n3's copy is a tombstone now (read repair), and INFO keyspace on n3 counts no live key."

step "Start n1 again, and read every key through n1, n2 and n3."
run tb start n1
run tb wait 20
for id in n1 n2 n3; do
    ask "$id" gets want_nil
    back=$((back + KEYS - $(matched gets want_nil)))
done
figure read_back "$back"

step "Now every replica holds every tombstone: the collector may remove them (waiting for it)."
notice "n1's hints for n3 are delivered first (a node holding a hint of a key keeps its tombstone too)."
quiet until_ok "no tombstone left" eval 'equals n1 cluster ringkv_tombstones_held 0 && equals n2 cluster ringkv_tombstones_held 0 && equals n3 cluster ringkv_tombstones_held 0'
for id in n1 n2 n3; do
    info_grep "$id" all '^ringkv_tombstones_(held|collected):'
    figure "held_end_$id" "$(field "$id" cluster ringkv_tombstones_held)"
done
figure collected "$(($(field n1 persistence ringkv_tombstones_collected) + $(field n2 persistence ringkv_tombstones_collected) + $(field n3 persistence ringkv_tombstones_collected)))"
ask n3 gets want_nil
figure nil_end "$(matched gets want_nil)"
notice "the tombstones are gone from all three replicas, and with them every copy of the values."

claim "$fig_deleted of $KEYS deletes acknowledged with n3 stopped; past the $GRACE s grace n1 and n2 still held $fig_held_n1 and $fig_held_n2 tombstones, kept $fig_kept_unanswered_n1 and $fig_kept_unanswered_n2 times for want of n3's answer" -- \
    holds 'w == k && d == k && h1 == k && h2 == k && u1 >= k && u2 >= k' w="$fig_written" d="$fig_deleted" k="$KEYS" \
    h1="$fig_held_n1" h2="$fig_held_n2" u1="$fig_kept_unanswered_n1" u2="$fig_kept_unanswered_n2"
claim "n3 came back holding $fig_n3_live_before live values of the $KEYS deleted keys; $fig_read_back of $((5 * KEYS)) reads (through n3, n2, then n1, n2, n3) returned a value, and n3 held $fig_n3_live_after live values after the reads" -- \
    holds 'v == k && b == 0 && a == 0' v="$fig_n3_live_before" b="$fig_read_back" a="$fig_n3_live_after" k="$KEYS"
claim "once every replica held them, the tombstones were collected (held: $fig_held_end_n1, $fig_held_end_n2, $fig_held_end_n3; $fig_collected records collected) and still $fig_nil_end of $KEYS keys read nil" -- \
    holds 'h1 == 0 && h2 == 0 && h3 == 0 && c >= k && n == k' h1="$fig_held_end_n1" h2="$fig_held_end_n2" h3="$fig_held_end_n3" \
    c="$fig_collected" n="$fig_nil_end" k="$KEYS"
lesson_end
