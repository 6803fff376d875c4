#!/bin/sh
# A node's token count changed at run time under load (4 nodes in racks r1 r2 r3 r1, rf 3,
# 256 tokens each, on addresses of their own): 20,000 keys are loaded, `ringkv workload`
# runs through all four, and `ringkv tokens n1 128` is asked of n2 (it finds n1 in its
# table and asks n1 itself).
#
#   - `--dry-run` first: it changes nothing and says how much of the ring would move;
#   - the churn alarm: a count far off (n1 at 4096) is refused with the figures, and
#     nothing changes;
#   - n1 answers OK; every node then lists n1 with 128 tokens only once the arcs n1 gives
#     up are copied (their gainers pull them from n1); the transfers are of kind tokens;
#   - only what had to move moved: the keys received over all nodes are those the dry
#     run's copies_fraction predicts of the loaded keys (within 30%), plus at most what
#     the workload wrote;
#   - afterwards every loaded key is on exactly its preference-list nodes (n1's old arcs
#     deleted once the cluster settled) and replicas of the workload's keys agree;
#   - n1 restarted with its configured 256 tokens keeps 128 (it says the saved count
#     overrides the configured one), with no churn alarm;
#   - back to 256 with n1 pulling slowly, n1 is killed (SIGKILL) part way: started again
#     it resumes the change (arcs it had are found held, or resumed from their
#     checkpoints) and finishes it; n2's own change (to 192), asked meanwhile, is queued
#     and made after it;
#   - `ringkv verify`: nothing acknowledged was lost; every loaded key reads back.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=20000
WL_KEYS=2000
WL_SECONDS=120
WL_AFTER_OPS=800
WL_RATE=400
HANDOFF_RATE=256KB
# n1's pulls in the second change: its ~400 kB take about 6 s, time to kill it part way.
SLOW_RATE=64KB
CHANGE_WAIT_S=90
hist="$IT_DIR/history.jsonl"
handoff_py="$top_srcdir/tests/integration/handoff_check.py"

it_cluster 4 --handoff-rate "$HANDOFF_RATE"
# shellcheck disable=SC2046 # one port a word
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 4 $(it_ports 4) || it_fail "4 nodes did not converge"
# shellcheck disable=SC2046
python3 "$handoff_py" load pre: "$KEYS" $(it_ports 4) || it_fail "loading $KEYS keys"

# The dry run, then the churn alarm: neither changes anything.
n2_at=$(it_client_addr n2)
changes=$(it_info_field n1 ringkv_handoff_changes)
plan=$("$RINGKV" -H "$n2_at" tokens --dry-run --json n1 128) || it_fail "tokens --dry-run: $plan"
copies=$(echo "$plan" | python3 -c 'import json,sys; print(json.load(sys.stdin)["copies_fraction"])')
moved=$(echo "$plan" | python3 -c 'import json,sys; print(json.load(sys.stdin)["moved_fraction"])')
it_log "dry run: moved_fraction $moved copies_fraction $copies"
status=0
alarm=$("$RINGKV" -H "$n2_at" tokens n1 4096 2>&1) || status=$?
[ "$status" -ne 0 ] || it_fail "4096 tokens for n1 was not refused"
echo "$alarm" | grep -q "would move the replicas of [0-9.]*% of the ring" ||
    it_fail "the refusal does not give the figures: $alarm"
it_log "refused: $alarm"
# shellcheck disable=SC2046
it_ask tokens 256 n1 $(it_ports 4) || it_fail "n1's count changed after a dry run and a refusal"
it_expect_eq "n1's changes planned after a refusal" "$(it_info_field n1 ringkv_handoff_changes)" "$changes"


it_load_start n1 n2 n3 n4

out=$("$RINGKV" -H "$n2_at" tokens n1 128) || it_fail "ringkv tokens n1 128: $out"
asked=$(date +%s)
it_log "$out"
# shellcheck disable=SC2046
IT_WAIT=$CHANGE_WAIT_S it_wait it_ask tokens 128 n1 $(it_ports 4) ||
    it_fail "n1 does not have 128 tokens on every node $CHANGE_WAIT_S s after ringkv tokens"
it_log "n1 has 128 tokens everywhere $(($(date +%s) - asked)) s after ringkv tokens, after $(it_load_lines) operations"
grep -q 'event=tokens_changing' "$IT_DIR/n1.log" || it_fail "n1's log has no event=tokens_changing"
grep -q 'event=tokens_changed' "$IT_DIR/n1.log" || it_fail "n1's log has no event=tokens_changed"
kill -0 "$IT_LOAD" 2> /dev/null || it_fail "the change outlasted the workload"
it_load_end "the change"

# Only what had to move: the copies the dry run predicts, and what the workload wrote.
received=$(it_info_sum ringkv_handoff_keys_received n1 n2 n3 n4)
writes=$(grep -c '"op":"\(set\|del\)"' "$hist")
want=$(python3 -c "print(round($copies * $KEYS))")
it_log "received $received keys over all nodes; the dry run predicts $want of the $KEYS loaded; the workload wrote $writes times"
[ "$received" -ge $((want * 7 / 10)) ] || it_fail "received $received keys, fewer than 70% of the $want predicted"
[ "$received" -le $((want * 13 / 10 + writes)) ] ||
    it_fail "received $received keys, more than 130% of the $want predicted and the $writes writes"
it_expect_eq "keys n1 received" "$(it_info_field n1 ringkv_handoff_keys_received)" 0
grep -q 'event=handoff_plan' "$IT_DIR/n2.log" "$IT_DIR/n3.log" "$IT_DIR/n4.log" ||
    it_fail "no node planned the change"

# Every loaded key on exactly its preference list once the cluster settled; replicas agree.
place="$IT_DIR/placement.out"
# shellcheck disable=SC2046
IT_WAIT=40 it_wait sh -c "python3 '$handoff_py' placement 3 $(it_ports 4) > '$place'" || {
    cat "$place"
    it_fail "keys not exactly on their preference lists after the change"
}
it_log "$(tr '\n' ' ' < "$place")"
# shellcheck disable=SC2046
IT_WAIT=20 it_wait python3 "$handoff_py" agree wl: $(it_ports 4) || {
    python3 "$handoff_py" agree wl: $(it_ports 4)
    it_fail "replicas of the workload's keys disagree"
}

# Restarted with its configured count, n1 keeps the one it was given, and says so.
it_stop n1
before=$(wc -l < "$IT_DIR/n1.log")
it_node n1 --rack r1 --seeds "$(it_peer_addr n2)" --handoff-rate "$HANDOFF_RATE"
it_wait_ping n1
tail -n +$((before + 1)) "$IT_DIR/n1.log" > "$IT_DIR/n1.restart.log"
grep -q 'event=tokens_override tokens=128 config_tokens=256' "$IT_DIR/n1.restart.log" ||
    it_fail "n1 did not say that its saved count overrides the configured one"
! grep -q 'event=churn_alarm' "$IT_DIR/n1.restart.log" || it_fail "n1's restart raised the churn alarm"
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 4 $(it_ports 4) || it_fail "no convergence after n1's restart"
# shellcheck disable=SC2046
it_ask tokens 128 n1 $(it_ports 4) || it_fail "n1 lost its count at restart"

# Back up to 256, n1 pulling slowly, killed (SIGKILL) part way: started again it resumes the
# change (its saved count, 256, against the 128 of its saved entry) and finishes it.
it_stop n1
it_node n1 --rack r1 --seeds "$(it_peer_addr n2)" --handoff-rate "$SLOW_RATE"
it_wait_ping n1
# shellcheck disable=SC2046
IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged 4 $(it_ports 4) || it_fail "no convergence before the second change"
out=$("$RINGKV" -H "$n2_at" tokens n1 256) || it_fail "ringkv tokens n1 256: $out"
# n2's own change, asked once it sees n1's under way, waits for it
changing() { [ "$(it_cli n2 RINGKV TRANSFERS | sed -n '/^changing$/{n;p;}')" = 1 ]; }
IT_WAIT=10 it_wait changing || it_fail "n2 does not see n1's change under way"
out=$("$RINGKV" -H "$n2_at" tokens --json n2 192) || it_fail "ringkv tokens n2 192: $out"
echo "$out" | grep -q '"queued": *true' || it_fail "n2's change was not queued behind n1's: $out"
grep -q 'event=tokens_queued' "$IT_DIR/n2.log" || it_fail "n2's log has no event=tokens_queued"
part_way() { [ "$(it_info_field n1 ringkv_handoff_keys_received)" -gt 0 ]; }
IT_WAIT=30 it_wait part_way || it_fail "n1 received nothing in 30 s at $SLOW_RATE/s"
it_stop n1 KILL
it_log "n1 killed part way through 128 -> 256"
it_node n1 --rack r1 --seeds "$(it_peer_addr n2)" --handoff-rate "$HANDOFF_RATE"
it_wait_ping n1
# shellcheck disable=SC2046
IT_WAIT=$CHANGE_WAIT_S it_wait it_ask tokens 256 n1 $(it_ports 4) ||
    it_fail "n1 does not have 256 tokens on every node $CHANGE_WAIT_S s after its restart"
# shellcheck disable=SC2046
IT_WAIT=$CHANGE_WAIT_S it_wait it_ask tokens 192 n2 $(it_ports 4) ||
    it_fail "n2's queued change to 192 tokens was not made after n1's"
resumed=$(it_info_field n1 ringkv_handoff_resumed)
same=$(it_info_field n1 ringkv_handoff_arcs_same)
it_log "n1 has 256 tokens everywhere; after its restart $same arcs were found held already and $resumed resumed from a checkpoint"
[ $((resumed + same)) -gt 0 ] || it_fail "n1 copied again every arc it had before the kill"
# shellcheck disable=SC2046
IT_WAIT=40 it_wait sh -c "python3 '$handoff_py' placement 3 $(it_ports 4) > '$place'" || {
    cat "$place"
    it_fail "keys not exactly on their preference lists after the second change"
}

# shellcheck disable=SC2046
out=$("$RINGKV" verify $(printf -- '-H %s ' $(it_client_addrs n1 n2 n3 n4)) "$hist") ||
    it_fail "verify: $out"
it_log "$(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"
# shellcheck disable=SC2046
python3 "$handoff_py" check pre: "$KEYS" $(it_ports 4) || it_fail "a loaded key does not read back"
it_pass "n1 went 256 -> 128 under load and back to 256 through a SIGKILL; only its arcs moved; nothing lost"
