#!/usr/bin/env bash
# lesson: lww-skew
# title: last-writer-wins loses acknowledged writes when a clock is behind; siblings keep them
# length: quick
#
# Four nodes, rf 3, w 2, n3's wall clock 30 s behind.  A partition cuts
# the cluster in two (n1 n2 | n3 n4); each side holds a replica of every
# key, and the sloppy quorum lets both sides take writes.  Clients update
# eight keys through n1, then, later in real time, the same keys through n3,
# every write acknowledged; then the network heals.  Under `conflicts
# lww` the two versions of each key are resolved by timestamp, and n3's,
# though written last, carries a timestamp 30 s old: it loses, and `ringkv
# verify` counts one acknowledged write lost per key.  The same run on a
# second cluster with `conflicts siblings` keeps both versions of each key
# side by side (version vectors, not clocks, decide what replaces what):
# verify counts none lost.  (The cut matters: a node that has heard of a
# version stamps its own writes after it, whatever its clock says, as its
# timestamps are hybrid logical ones.  A clock behind loses writes when the
# node has not heard of the newer version: across a partition, or a race.)
. "$(dirname "$0")/lib.sh"
KEYS=8
WRITES=48
lesson_needs_root "it cuts the network with iptables and skews a clock"
lesson_begin

# n3's wall clock minus ours, in seconds (TIME answers the node's wall clock).
offset() { echo $(($(rcli n3 TIME | head -n 1) - $(date +%s))); }
skewed() { local o; o=$(offset); [ "$o" -ge -32 ] && [ "$o" -le -28 ]; }
# sees_down A B: node A's failure detector has B down.
sees_down() { cli "$1" members | awk -v id="$2" '$1 == "down" && $2 == id { found = 1 } END { exit !found }'; }
cut_seen() {
    local a b
    for a in n1 n2; do
        for b in n3 n4; do sees_down "$a" "$b" && sees_down "$b" "$a" || return 1; done
    done
}
backlog() { echo $(($(info_field n1 ringkv_hints) + $(info_field n2 ringkv_hints) + $(info_field n3 ringkv_hints) + $(info_field n4 ringkv_hints))); }
no_hints() { [ "$(backlog)" = 0 ]; }
# writes ID PREFIX FILE: the clients' read-modify-writes through node ID, recorded in FILE.
writes() {
    run cli "$1" workload --keys $KEYS --ops $WRITES --duration 20 --mix 0:1:0 --causal \
        --concurrency 1 --prefix "$2" --history "$3"
}
# ok_writes FILE: how many acknowledged writes FILE records; written_keys FILE: their keys.
ok_writes() { grep -c '"op":"kset".*"outcome":"ok"' "$1" || true; }
written_keys() { grep '"op":"kset".*"outcome":"ok"' "$1" | sed 's/.*"key":"\([^"]*\)".*/\1/' | sort -u; }
# field NAME TEXT: the number after NAME in ringkv verify's counts.
field() { printf '%s\n' "$2" | awk -v k="$1" '$1 == k { print $2; exit }'; }
# last_write FILE KEY: the value and start (us) of FILE's last acknowledged write of KEY.
last_write() {
    grep "\"op\":\"kset\",\"key\":\"$2\"" "$1" | grep '"outcome":"ok"' | tail -n 1 |
        sed 's/.*"value":"\([^"]*\)".*"start":\([0-9]*\).*/\1 \2/'
}
# cut_and_write MODE: a testbed in MODE, n3 behind, cut in two, written through n1 then n3
# (keys MODE:0 ..., histories MODE-n1.jsonl and MODE-n3.jsonl), healed.
cut_and_write() {
    lesson_up -n 4 --rf 3 --r 1 --w 2 --conflicts "$1"
    run cli n1 call CONFIG GET conflicts
    run tb skew n3 -30
    within 10 skewed || { echo "   n3's clock is $(offset) s off, not -30 s, after 10 s"; exit 1; }
    figure skew2_s "$(offset)"
    run tb partition "n1 n2 | n3 n4"
    within 20 cut_seen || { echo "   the two sides did not see each other down within 20 s"; exit 1; }
    echo "   (both sides see the other down after ${waited} s)"
    writes n1 "$1:" "$1-n1.jsonl"
    writes n3 "$1:" "$1-n3.jsonl"
    run tb heal
    within 30 no_hints || { echo "   $(backlog) hints still held 30 s after the heal"; exit 1; }
    echo "   (every hint delivered ${waited} s after the heal)"
    cat "$1-n1.jsonl" "$1-n3.jsonl" > "$1-history.jsonl"
}

step "Start four nodes with conflicts lww: of two versions where neither saw the other, the one with the later timestamp wins."
lesson_up -n 4 --rf 3 --r 1 --w 2 --conflicts lww
run cli n1 call CONFIG GET conflicts
notice "rf 3, w 2; r 1, so that each side of the coming cut can read what it wrote.  Each key's replicas are n2, n3 and one of n1 and n4 (one per rack)."

step "Set n3's wall clock 30 s behind, as on a machine whose NTP has failed."
run tb skew n3 -30
within 10 skewed || { echo "   n3's clock is $(offset) s off, not -30 s, after 10 s"; exit 1; }
run rcli n1 TIME
run rcli n3 TIME
figure skew_s "$(offset)"
notice "TIME answers each node's wall clock (seconds, microseconds): n3's is $fig_skew_s s off ours."

step "Cut the cluster in two, n1 n2 | n3 n4, and wait until each side sees the other down."
run tb partition "n1 n2 | n3 n4"
within 20 cut_seen || { echo "   the two sides did not see each other down within 20 s"; exit 1; }
run cli n3 members
notice "after ${waited} s n3 sees n1 and n2 down, and n1, n2 and n4 see the same of the other side.  Both sides hold a replica of every key, and the sloppy quorum (a fallback on the same side) lets both take writes at w 2."

step "Clients update $KEYS keys through n1: $WRITES read-modify-writes (KGET, then KSET with the context it returned)."
writes n1 lww: lww-n1.jsonl
notice "every write is acknowledged (kset ok), and recorded with its start and end in lww-n1.jsonl."

step "Then, later in real time, clients update the same keys through n3."
writes n3 lww: lww-n3.jsonl
notice "n3's KGETs see only this side's versions, so its KSETs are concurrent with n1's: neither saw the other.  Their timestamps come from n3's clock, 30 s behind; n3 has heard nothing from n1's side that could move its clock on."

step "Heal the network; the hints each side kept for the other are delivered, and every replica resolves the two versions of each key."
run tb heal
within 30 no_hints || { echo "   $(backlog) hints still held 30 s after the heal"; exit 1; }
run cli n1 hints --all
notice "no hint left ${waited} s after the heal: every replica has both sides' writes, and has picked one version per key."
cat lww-n1.jsonl lww-n3.jsonl > lww-history.jsonl

step "Check the history: is every acknowledged write there, or replaced by a later one?"
keep lww_out cli n1 verify --r 3 lww-history.jsonl || true
figure lww_mode "$(field conflicts "$lww_out")"
figure lww_acked "$(field writes_ok "$lww_out")"
figure lww_lost "$(field lost "$lww_out")"
comm -12 <(written_keys lww-n1.jsonl) <(written_keys lww-n3.jsonl) > lww-both
figure lww_both "$(wc -l < lww-both)"
notice "verify read the cluster's conflicts setting ($fig_lww_mode), then each key through n1 from all 3 replicas.  A 'lost' line is an acknowledged write that is absent though nothing later replaced it: n3's last write of a key, which came after n1's.  A 'stale' line is a value present though a later acknowledged write overwrote it: n1's."
key=$(head -n 1 lww-both)
read -r v1 s1 <<< "$(last_write lww-n1.jsonl "$key")"
read -r v3 s3 <<< "$(last_write lww-n3.jsonl "$key")"
keep got cli n1 get "$key" || true
case $got in "$v1") whose="n1's" ;; "$v3") whose="n3's" ;; *) whose="neither's" ;; esac
notice "$key: n1's last write was $v1, n3's $v3, which started $(((s3 - s1) / 1000)) ms later and was acknowledged; the value read is $whose."
claim "under conflicts $fig_lww_mode, with n3's clock $fig_skew_s s off, verify counts $fig_lww_lost of $fig_lww_acked acknowledged writes lost: n3's last write of each of the $fig_lww_both keys written on both sides" -- \
    holds 'b > 0 && l == b' l="$fig_lww_lost" b="$fig_lww_both"

step "The same again on a new cluster with conflicts siblings (the default): skew, cut, writes through n1 then n3, heal."
run tb clean
cut_and_write siblings
notice "the same writes, every one acknowledged; n3 is 30 s behind as before."

step "Check this history."
keep sib_out cli n1 verify --r 3 siblings-history.jsonl || true
figure sib_mode "$(field conflicts "$sib_out")"
figure sib_acked "$(field writes_ok "$sib_out")"
figure sib_lost "$(field lost "$sib_out")"
figure sib_present "$(field present "$sib_out")"
figure sib_last "$(($(written_keys siblings-n1.jsonl | wc -l) + $(written_keys siblings-n3.jsonl | wc -l)))"
key=$(comm -12 <(written_keys siblings-n1.jsonl) <(written_keys siblings-n3.jsonl) | head -n 1)
keep kget cli n1 call KGET "$key"
read -r v1 _ <<< "$(last_write siblings-n1.jsonl "$key")"
read -r v3 _ <<< "$(last_write siblings-n3.jsonl "$key")"
kept=""
[[ $kget != *"\"$v1\""* ]] || kept="n1's last write ($v1)"
[[ $kget != *"\"$v3\""* ]] || kept="${kept:+$kept and }n3's last write ($v3)"
[ -n "$kept" ] || kept="neither side's last write"
notice "KGET answers a context and the siblings of $key: $kept.  Version vectors, not clocks, decide what replaces what: neither replaced the other, so both are kept, for the application to merge with its next KSET."
claim "under conflicts $fig_sib_mode, with n3's clock $fig_skew2_s s off as well, verify counts $fig_sib_lost of $fig_sib_acked acknowledged writes lost; $fig_sib_present are present: each side's last write of each key ($fig_sib_last)" -- \
    holds 'a > 0 && l == 0 && p == w' a="$fig_sib_acked" l="$fig_sib_lost" p="$fig_sib_present" w="$fig_sib_last"
lesson_end
