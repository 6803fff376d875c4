#!/usr/bin/env bash
# lesson: hints
# title: sloppy quorum: writes for a cut-off node land on a fallback as hints, delivered after the heal
# length: quick
#
# Four nodes, three copies of each key (rf 3), a write acknowledged by two
# (w 2).  The network cuts n4 off from the other three; once they see it
# down, every write goes on being acknowledged.  For a key n4 replicates,
# the next node of the ring walk that is up (a fallback) stands in for it:
# it takes the write too, so that three copies exist, and keeps its copy
# as a hint addressed to n4 (`ringkv hints`).  While cut off, n4 holds none
# of these keys.  When the network heals, the fallback delivers its hints
# and deletes them: the backlog drains to 0, and n4 then holds every key it
# replicates, its copy equal to the other two (`ringkv replicas`).
. "$(dirname "$0")/lib.sh"
KEYS=100
lesson_needs_root "it cuts the network with iptables"
lesson_begin

# down_on ID: does node ID's failure detector see n4 down?
down_on() { cli "$1" members | awk '$1 == "down" && $2 == "n4" { found = 1 } END { exit !found }'; }
seen_down() { down_on n1 && down_on n2 && down_on n3; }
# hints_on IDS...: the hints those nodes keep (INFO ringkv_hints).  While n4 is
# the one node away, every hint is for n4.
hints_on() {
    local id n=0
    for id in "$@"; do n=$((n + $(info_field "$id" ringkv_hints))); done
    echo "$n"
}
backlog() { hints_on n1 n2 n3; }
no_hints() { [ "$(backlog)" = 0 ]; }
# collect VERB FILE: `ringkv VERB --json` of every key, asked through n1, into FILE.
collect() {
    local i
    # replicas exits 3 when the replicas differ: the JSON says so too
    for i in $(seq 1 "$KEYS"); do cli n1 "$1" --json "hint:$i" || true; done > "$2"
}
# over FILE PYEXPR: PYEXPR of docs, the list of the JSON documents in FILE.
over() {
    python3 -c '
import json, sys
text, at, docs, d = open(sys.argv[1]).read(), 0, [], json.JSONDecoder()
while text[at:].strip():
    j, at = d.raw_decode(text, len(text) - len(text[at:].lstrip()))
    docs.append(j)
print(eval(sys.argv[2]))' "$1" "$2"
}

step "Start four nodes: each key on three of them (rf 3), a write acknowledged by two (w 2)."
lesson_up -n 4 --rf 3 --r 2 --w 2
notice "n1 and n4 share rack-a, so each key has one of them among its three replicas, with n2 and n3."

step "Cut n4 off from the other three nodes, and wait until their failure detectors see it down."
run tb partition "n1 n2 n3 | n4"
within 20 seen_down || { echo "   n1, n2 and n3 did not all see n4 down within 20 s"; exit 1; }
run cli n1 members
notice "n4 is 'down' for n1 after ${waited} s without a heartbeat (phi over its threshold); n2 and n3 see the same."

step "Write $KEYS keys through n1 while n4 is cut off."
seq 1 $KEYS | awk '{ print "SET hint:" $1 " v" $1 }' > sets
replies=$(send n1 sets)
printf '%s\n' "$replies"
figure acknowledged "$(printf '%s\n' "$replies" | awk '$2 == "OK" { n = $1 } END { print n + 0 }')"
notice "every write is acknowledged, also those of the keys n4 replicates."
quiet collect preflist preflists.json
figure n4_keys "$(over preflists.json 'sum(any(p["node"] == "n4" for p in j["replicas"]) for j in docs)')"
fallbacks=$(over preflists.json '" ".join(sorted({p["node"] for j in docs for p in j["replicas"] if p["stands_for"] == "n4"}))')
first=""
for i in $(seq 1 $KEYS); do
    cli n1 preflist "hint:$i" | awk '$1 == "n4" && $4 == "down" { found = 1 } END { exit !found }' || continue
    first=hint:$i
    break
done
[ -n "$first" ] || { echo "   n4 replicates none of the $KEYS keys"; exit 1; }
run cli n1 preflist "$first"
notice "$first: n4 is one of its three replicas, but down, so the walk went on to the next node that is up: a fallback that 'stands for' n4 (over all $KEYS keys, the fallbacks for n4 are: ${fallbacks:-none})."
run cli n1 replicas "$first" || notice "(exit $?: the replicas do not all agree)"
notice "the two replicas that are up hold the write: with the fallback they make w 2 easily.  n4 does not answer; its hints column counts the hints other nodes keep for it."

step "The backlog: the hints each node keeps for a node that is away."
run cli n1 hints --all
figure hints_made "$(backlog)"
# shellcheck disable=SC2086 # the fallbacks' ids, one word each
figure fallback_hints "$(hints_on ${fallbacks:-n4})"
quiet collect replicas replicas-cut.json
figure hinted_keys "$(over replicas-cut.json 'sum(any(p["node"] == "n4" and p["hints"] > 0 for p in j["replicas"]) for j in docs)')"
figure n4_before "$(rcli n4 DBSIZE)"
notice "$fig_hints_made hints for n4, one a write, $fig_fallback_hints of them kept by the fallback (${fallbacks:-none}): on $fig_hinted_keys keys, the keys n4 replicates ($fig_n4_keys of the $KEYS).  n4 itself, cut off, holds $fig_n4_before keys."
claim "with n4 cut off, $fig_acknowledged of $KEYS writes were acknowledged; n4 replicates $fig_n4_keys of those keys, and its fallback (${fallbacks:-none}) kept $fig_fallback_hints hints for it, on $fig_hinted_keys keys ($fig_hints_made hints in all)" -- \
    holds 'a == k && n > 0 && hk == n && h == n && f == n' a="$fig_acknowledged" k="$KEYS" n="$fig_n4_keys" h="$fig_hints_made" f="$fig_fallback_hints" hk="$fig_hinted_keys"

step "Heal the network.  Once the fallback sees n4 up again, it delivers its hints to it."
run tb heal
within 30 no_hints || true
figure hints_left "$(backlog)"
figure drain_s "$waited"
run cli n1 hints --all
notice "the backlog for n4 drained in ${waited} s: each hint is deleted once n4 has stored its write."
claim "after the heal the $fig_hints_made hints for n4 were delivered: $fig_hints_left left (after ${fig_drain_s} s, at most 30)" -- \
    holds 'h > 0 && l == 0' h="$fig_hints_made" l="$fig_hints_left"

step "n4 now holds the writes it missed."
run rcli n4 DBSIZE
run cli n1 replicas "$first" || notice "(exit $?: the replicas do not all agree)"
notice "n4's copy of $first is present, with the same version vector and digest as the other two."
figure n4_after "$(rcli n4 DBSIZE)"
quiet collect replicas replicas-healed.json
figure n4_present "$(over replicas-healed.json 'sum(any(p["node"] == "n4" and p["present"] for p in j["replicas"]) for j in docs)')"
figure replicas_agree "$(over replicas-healed.json 'sum(bool(j["agree"]) for j in docs)')"
claim "n4 held $fig_n4_before keys while cut off and $fig_n4_after after the heal: $fig_n4_present of the $fig_n4_keys keys it replicates are present on it, and all replicas agree on $fig_replicas_agree of $KEYS keys" -- \
    holds 'b == 0 && a == n && p == n && g == k' b="$fig_n4_before" a="$fig_n4_after" p="$fig_n4_present" n="$fig_n4_keys" g="$fig_replicas_agree" k="$KEYS"
lesson_end
