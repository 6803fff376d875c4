#!/usr/bin/env bash
# lesson: quorum
# title: a read needs r replicas up, a write w; with r + w > rf a read sees the last acknowledged write
# length: quick
#
# Three nodes, three copies of each key (rf 3): every node is a replica of
# every key, and no fourth node is left to stand in for one that is down
# (sloppy quorum's fallbacks come from outside the preference list).  Reads
# wait for r = 2 replicas, writes for w = 2.  With 0, 1 and 2 of them
# stopped, 100 reads and 100 writes are tried through n1: each one succeeds
# exactly when at least r (w) replicas are up, and the others are refused at
# once with NOREPLICAS, which says how many are reachable of how many
# needed.  Then why r + w > rf: n3 stopped, a write is acknowledged by n1
# and n2; n3 comes back with the old value and n1 stops; a read through n3
# asks two replicas, and any two of the three include one of the two that
# took the write, so it returns the new value (and repairs n3's copy).
# shellcheck disable=SC2154,SC2317 # fig_NAME (figure) and keep's VAR are set by printf -v; helpers run through run and keep
. "$(dirname "$0")/lib.sh"
M=100
lesson_begin

# stage K: M writes of new keys and M reads of the base keys through n1, with K replicas stopped.
stage() {
    local k=$1
    awk -v k="$k" '{ print "SET stage" k ":" $1 " w" $1 }' idx > "writes$k"
    ask n1 "writes$k" want_ok
    figure "writes_ok_$k" "$(matched "writes$k" want_ok)"
    ask n1 reads want_base
    figure "reads_ok_$k" "$(matched reads want_base)"
}

# digest_of KEY NODE: the digest of NODE's copy of KEY, as `ringkv replicas` through n2 shows it.
digest_of() {
    { cli n2 replicas --json "$1" || true; } | python3 -c '
import json, sys
print(next((r["digest"] or "none") for r in json.load(sys.stdin)["replicas"] if r["node"] == sys.argv[1]))' "$2"
}

step "Start three nodes: three copies of each key (rf 3), reads wait for r = 2 replicas, writes for w = 2."
lesson_up -n 3 --rf 3 --r 2 --w 2
figure rf "$(rcli n1 CONFIG GET rf | sed -n 2p)"
figure r "$(rcli n1 CONFIG GET r | sed -n 2p)"
figure w "$(rcli n1 CONFIG GET w | sed -n 2p)"
notice "with three nodes and rf 3 every node holds every key: no node is left to stand in as a"
notice "fallback (sloppy quorum), so a write counts only the replicas themselves."

step "Write the $M keys the reads below will read (base:0 .. base:$((M - 1)))."
seq 0 $((M - 1)) > idx
awk '{ print "SET base:" $1 " b" $1 }' idx > base
awk '{ print "OK" }' idx > want_ok
awk '{ print "GET base:" $1 }' idx > reads
awk '{ print "\"b" $1 "\"" }' idx > want_base
ask n1 base want_ok
figure base_written "$(matched base want_ok)"

step "All three replicas up: $M writes and $M reads through n1."
stage 0
notice "3 up: at least r = $fig_r and w = $fig_w, so everything succeeds."

step "Stop n3; once n1's failure detector sees it down (about 4 s), the same again."
run tb stop n3
quiet until_seen n1 down n3
run cli n1 status || [ $? -eq 3 ]
stage 1
notice "2 up: still r and w, so everything succeeds; n1 keeps a hint of each write for n3."

step "Stop n2 as well (about 4 s until n1 sees it down): one replica up, the same again."
run tb stop n2
quiet until_seen n1 down n2
stage 2
notice "1 up: below r and w, every read and every write is refused, before anything is written."
run cli n1 preflist base:0
notice "no fallback stands in for n2 and n3: there is no other node."
run cli n1 set base:0 changed || true
notice "the error a failing write gets (exit 1): how many replicas are reachable of the w it needs,"
notice "and that nothing was written, so the client knows it may retry."

step "Start n2 and n3 again."
run tb start n2
run tb start n3
run tb wait 20

step "Now why r + w > rf matters.  Write 'before' to key overlap, with every replica up."
run cli n1 set overlap before
deadline=$((SECONDS + 10))
until [ "$(rcli n3 KGET overlap R 1 | sed -n 2p)" = before ]; do
    [ "$SECONDS" -lt "$deadline" ] || break
    sleep 0.1
done
notice "w = 2 acknowledges after two replicas; we waited until n3 had it too."

step "Stop n3, and write 'after': n1 and n2 hold it, which is w."
run tb stop n3
keep wrote cli n1 set overlap after || true
notice "acknowledged by n1 (the coordinator) and n2; n1 also keeps a hint for n3."

step "Stop n1 (its hint for n3 goes with it), then start n3: n3 still holds 'before'."
run tb stop n1
run tb start n3
quiet until_seen n3 up n2
quiet until_seen n2 up n3
run cli n2 replicas overlap || [ $? -eq 3 ]
notice "n2 holds the new value, n3 the old one, n1 does not answer."
digest_n2=$(digest_of overlap n2)
digest_n3=$(digest_of overlap n3)
figure n3_stale "$([ "$digest_n3" != "$digest_n2" ] && echo yes || echo no)"

step "Read overlap through n3, which asks r = $fig_r replicas: n3 itself and n2."
keep got cli n3 get overlap || true
notice "the r replicas read overlap the w replicas written (r + w = $((fig_r + fig_w)) > rf = $fig_rf):"
notice "at least one of them has the write, and the read merges what it hears."
run cli n2 replicas overlap || [ $? -eq 3 ]
notice "read repair: n3's copy is now the new value too."
figure repaired "$([ "$(digest_of overlap n3)" = "$(digest_of overlap n2)" ] && echo yes || echo no)"

# expected KIND STAGE: M when at least r (reads) / w (writes) of the 3 replicas are up at that stage, else 0.
expected() {
    local need=$fig_r
    [ "$1" = reads ] || need=$fig_w
    if [ $((3 - $2)) -ge "$need" ]; then echo "$M"; else echo 0; fi
}
exact=1
for k in 0 1 2; do
    for kind in reads writes; do
        v=fig_${kind}_ok_$k
        [ "${!v}" = "$(expected "$kind" "$k")" ] || exact=0
    done
done
claim "with 3, 2, 1 replicas up, reads at r = $fig_r succeeded $fig_reads_ok_0, $fig_reads_ok_1, $fig_reads_ok_2 of $M and writes at w = $fig_w $fig_writes_ok_0, $fig_writes_ok_1, $fig_writes_ok_2 of $M: all when at least r (w) replicas were up, none otherwise" -- \
    holds 'e == 1 && b == m' e="$exact" b="$fig_base_written" m="$M"
claim "r + w = $((fig_r + fig_w)) > rf = $fig_rf: 'after' written with n3 stopped (reply: $wrote); with n1 stopped and n3 back holding the old value (stale: $fig_n3_stale), a read through n3 at r = $fig_r returned '$got'; n3's copy repaired: $fig_repaired" -- \
    holds 'r + w > rf && s == "yes" && g == "after" && o == "OK" && p == "yes"' r="$fig_r" w="$fig_w" rf="$fig_rf" \
    s="$fig_n3_stale" g="$got" o="$wrote" p="$fig_repaired"
lesson_end
