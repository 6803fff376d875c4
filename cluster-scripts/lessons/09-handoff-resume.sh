#!/usr/bin/env bash
# lesson: handoff-resume
# title: a join killed with kill -9 resumes from its checkpoints: it does not copy again what it had
# length: long
#
# Three nodes hold 40,000 keys, three copies each (rf 3, one copy per
# rack).  A fourth node, n4, joins rack-a: from n1 it takes the rack-a copy
# of the keys of the arcs its 4 tokens win (RINGKV PLAN JOIN on n1 counts
# them beforehand), arc by arc, in batches of at most 256 KiB, slowed to
# 512 KB/s (handoff-rate), two arcs at once (handoff-concurrency).  Each
# batch is applied in one store transaction with its arc's checkpoint (the
# last key applied).  Part-way, with an arc cut in the middle, n1 is frozen
# for a moment (SIGSTOP) so that n4's counters hold still while we read
# them, and n4 is killed with SIGKILL, then started again on its data.  It
# resumes: the arcs done before the kill are checked and not copied again,
# the arc cut in the middle goes on from its checkpoint (INFO
# ringkv_handoff_resumed).  What n1 sent twice (what it sent in all, less
# what n4 applied before and after the kill: the answers under way when n4
# died) is at most a batch per arc in flight, far less than the bytes n4
# had received before the kill, which a restart from zero would copy
# again.  The join completes, n4 received each key it gains once, and
# every key reads back.
. "$(dirname "$0")/lib.sh"
KEYS=40000
CONC=2
# a batch carries at most 1023 records and 256 KiB of them (the receiver's bounds),
# passed by one record of at most 1 KiB here
BATCH=$((256 * 1024 + 1024))
lesson_begin

# mid_join: n4 has received 40% of the keys it gains or more, and one of its arcs is
# part-way through: a batch or more of it applied, two batches or more to come (a
# batch: at most 1023 records); then transfers.before is `ringkv transfers` on n4.
mid_join() {
    local got
    got=$(info_field n4 ringkv_handoff_keys_received)
    if ! [[ $got =~ ^[0-9]+$ ]] || [ $((got * 100)) -lt $((fig_plan_keys * 40)) ]; then
        return 1
    fi
    cli n4 transfers --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)["transfers"]
sys.exit(not any(r["direction"] == "in" and r["state"] == "streaming" and
                 r["keys"] >= 1000 and r["keys_total"] - r["keys"] >= 2046 for r in rows))' &&
        cli n4 transfers > transfers.before
}
# n4_down_on_n1: n1's failure detector sees n4 down.
n4_down_on_n1() { cli n1 members | awk '$1 == "down" && $2 == "n4" { found = 1 } END { exit !found }'; }
# joined: n4 is normal and all four nodes hold one ring.
joined() { tb wait 1 > /dev/null 2>&1 && [ "$(info_field n4 ringkv_changing)" = 0 ]; }
# sent_by_all FIELD: FIELD (ringkv_handoff_bytes_sent, _keys_sent) summed over n1, n2, n3:
# what they have served to pulling nodes.
sent_by_all() { echo $(($(info_field n1 "$1") + $(info_field n2 "$1") + $(info_field n3 "$1"))); }
# n4_settled: n4's bytes received do not move over 0.3 s.
n4_settled() {
    local now
    now=$(info_field n4 ringkv_handoff_bytes_received)
    sleep 0.3
    [ -n "$now" ] && [ "$now" = "$(info_field n4 ringkv_handoff_bytes_received)" ]
}

step "Start three nodes, one per rack, three copies of each key (rf 3), 4 tokens a node."
lesson_up -n 3 --tokens 4 --handoff-rate 512KB --handoff-concurrency $CONC
notice "few tokens make few, long arcs: each takes several batches to copy."
notice "handoff-rate 512KB and handoff-concurrency $CONC: a join copies at most $CONC arcs at once, at 512 KB/s."

step "Write $KEYS keys of 200 bytes through n1 (MSET, 100 keys a command)."
seq 0 $((KEYS - 1)) | awk '{ v = "v" $1 "-"; while (length(v) < 200) v = v "x"; printf "%s h:%d %s", (NR % 100 == 1 ? "MSET" : ""), $1, v; if (NR % 100 == 0) print "" }' > msets
send n1 msets
figure keys_n1 "$(rcli n1 DBSIZE)"
notice "every node holds all $fig_keys_n1 keys: three racks, three copies."

step "Ask n1 what a join of n4 in rack-a with 4 tokens would move (RINGKV PLAN JOIN: a dry run)."
plan_join n1 n4 rack-a 4 9
notice "n4 shares rack-a with n1: it takes the rack-a copy of $fig_plan_keys keys, all from n1."
notice "n1 holds every key, so its count is exact, not an estimate."

step "Start n4 in rack-a; once it has 40% of its keys, with an arc cut in the middle, kill it (SIGKILL)."
notice "one step, without a pause: the join would not wait for us. n4's config is n1's with its own id, address and seed."
quiet mkdir -p "$RINGKV_TESTBED/n4"
{
    sed -e 's/\bn1\b/n4/g' -e 's/\.11:/.14:/g' "$RINGKV_TESTBED/n1/ringkvd.conf"
    echo "seeds $(awk '$1 == "listen" { print $2 }' "$RINGKV_TESTBED/n1/ringkvd.conf")"
} > "$RINGKV_TESTBED/n4/ringkvd.conf"
run grep -v '^#' "$RINGKV_TESTBED/n4/ringkvd.conf"
run tb start n4
notice "tb start does not wait for the join (tb add would): n4 is joining while we go on."

within 120 mid_join || { echo "   n4 did not get that far with an arc part-way through within 120 s"; exit 1; }
notice "n4 has 40% of its keys: freeze n1 a moment, read n4's counters, kill n4."
run tb pause n1
within 10 n4_settled || { echo "   n4 went on receiving with n1 paused"; exit 1; }
rcli n4 INFO | tr -d '\r' > info.before
run tb kill n4
run tb resume n1
notice "n1 paused (SIGSTOP) for a moment: nothing new reached n4, so its counters held still while we read them."
echo "   n4's transfers just before (ringkv -H $(addr n4) transfers):"
sed 's/^/     /' transfers.before
figure before_keys "$(awk -F: '$1 == "ringkv_handoff_keys_received" { print $2 }' info.before)"
figure before_bytes "$(awk -F: '$1 == "ringkv_handoff_bytes_received" { print $2 }' info.before)"
notice "n4 had applied $fig_before_keys keys ($fig_before_bytes bytes), each batch with its arc's checkpoint."
within 30 n4_down_on_n1 || { echo "   n1 did not see n4 down within 30 s"; exit 1; }
figure sent_at_kill "$(sent_by_all ringkv_handoff_bytes_sent)"
notice "n1 has sent $fig_sent_at_kill bytes: it counts a batch when it sends it, n4 when it has applied it;"
notice "an answer under way when n4 died (sent, never applied) is the difference: $((fig_sent_at_kill - fig_before_bytes)) bytes."
run cli n1 status || true # exit 3: not healthy, n4 is down
notice "n1 sees n4 DJ: down, and still joining. The ring has not changed: the join waits for n4."

step "Start n4 again on its data: it reads its checkpoints and resumes."
run tb start n4
run cli n4 transfers
run grep 'event=handoff_resume' "$RINGKV_TESTBED/n4/ringkvd.log" || true
figure ckpt_keys "$(grep 'event=handoff_resume' "$RINGKV_TESTBED/n4/ringkvd.log" | sed 's/.* keys=\([0-9]*\).*/\1/' | awk '{ s += $1 } END { print s + 0 }')"
notice "the arc cut in the middle starts again at the keys and bytes of its checkpoint, not at 0."

step "Wait for the join to complete (n4 normal, one ring on all four nodes)."
within 150 joined || { echo "   the join did not complete within 150 s"; exit 1; }
run cli n1 status
figure after_keys "$(info_field n4 ringkv_handoff_keys_received)"
figure after_bytes "$(info_field n4 ringkv_handoff_bytes_received)"
figure resumed "$(info_field n4 ringkv_handoff_resumed)"
figure arcs_same "$(info_field n4 ringkv_handoff_arcs_same)"
figure sent_total "$(sent_by_all ringkv_handoff_bytes_sent)"
figure keys_sent "$(sent_by_all ringkv_handoff_keys_sent)"
figure held "$(rcli n4 DBSIZE)"
show rcli n4 INFO cluster '|' grep -E 'ringkv_handoff_(arcs|keys_received|bytes_received|resumed)'
notice "after the restart n4 received $fig_after_keys keys ($fig_after_bytes bytes); $fig_resumed arc(s) resumed from a checkpoint,"
notice "$fig_arcs_same arc(s) were found already held (copied before the kill) and not copied again."
figure keys_resent "$((fig_keys_sent - fig_held))"
# One copy of each key n4 holds, in bytes: what it applied, scaled by held / applied keys
# (exactly what it applied when it applied each key once).
figure needed "$(awk -v b=$((fig_before_bytes + fig_after_bytes)) -v k=$((fig_before_keys + fig_after_keys)) -v h="$fig_held" 'BEGIN { printf "%d", b * h / k + 0.5 }')"
figure resent "$((fig_sent_total - fig_needed))"
notice "n1 sent $fig_keys_sent keys for the $fig_held n4 holds: $fig_keys_resent twice;"
notice "$fig_sent_total bytes for $fig_needed: $fig_resent twice, the answers under way when n4 died."

step "Read every key back through n4 (MGET, 100 keys a command)."
seq 0 $((KEYS - 1)) | awk '{ printf "%s h:%d", (NR % 100 == 1 ? "MGET" : ""), $1; if (NR % 100 == 0) print "" }' > mgets
a=$(addr n4)
echo "   \$ redis-cli -h ${a%:*} -p ${a##*:} < mgets | grep -c '^v[0-9]*-x'"
figure read_back "$(rcli n4 < mgets | grep -c '^v[0-9]*-x')"
notice "$fig_read_back of $KEYS keys read back with their values."

bound=$((CONC * BATCH))
claim "n4 resumed $fig_resumed arc(s) from a checkpoint after the kill (at $fig_ckpt_keys keys); the source sent $fig_resent bytes ($fig_keys_resent keys) twice, at most a batch per arc in flight ($CONC x $BATCH = $bound) and far less than the $fig_before_bytes bytes n4 had before the kill, which a restart from zero would send again" -- \
    holds 'r >= 1 && k >= 0 && k <= c * 1023 && x <= b && 4 * x <= p' r="$fig_resumed" k="$fig_keys_resent" c=$CONC x="$fig_resent" b="$bound" p="$fig_before_bytes"
claim "no key was received twice: $fig_before_keys before the kill and $fig_after_keys after it make $((fig_before_keys + fig_after_keys)), for the $fig_held keys n4 holds (the plan: $fig_plan_keys)" -- \
    holds 'k1 + k2 == h && h == p && k1 > 0 && k2 > 0' k1="$fig_before_keys" k2="$fig_after_keys" h="$fig_held" p="$fig_plan_keys"
claim "the join completed and all $KEYS keys read back through n4 ($fig_read_back)" -- \
    holds 'r == k' r="$fig_read_back" k="$KEYS"
lesson_end
