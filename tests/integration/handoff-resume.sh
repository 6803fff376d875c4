#!/bin/sh
# Ownership handoff resumed after a crash, with real ringkvd processes on
# addresses of their own: three nodes of rf 3 hold KEYS keys of 100 bytes,
# every node streams handoff at --handoff-rate 64KB (the limit applies at
# the receiver), so a join takes tens of seconds.  Few tokens a node
# (TOKENS) make arcs of several batches, so a crash lands inside an arc,
# behind a checkpoint and before its end.
#
#   A. n4 joins; a third of the way (in keys, with an arc mid-stream), the
#      node it pulls from (RINGKV TRANSFERS, `from`) is killed with SIGKILL;
#      n4 waits for it (it loses the arc: no other old replica stands in,
#      since each holds only the writes it acknowledged), and the killed
#      node is restarted on its data directory.  The join completes; n4 applied
#      each key once (keys received == the keys it holds); and what the
#      sources sent (their ringkv_handoff_bytes_sent, the killed one's read
#      just before the kill, plus what it sent after its restart) exceeds
#      what n4 received by at most HANDOFF_CONC batches: see the bound below.
#   B. n5 joins the four; a third of the way it is killed with SIGKILL.
#      While it is down, a sample of the keys reads through each old node;
#      restarted on its data directory with the same flags and seeds, it
#      resumes arcs from their checkpoints (ringkv_handoff_resumed > 0),
#      turns normal, and the keys it received before the kill and after
#      the restart are no more than the keys it holds: nothing applied
#      before the kill is received again.
#
# Both: every key of a sample reads its value through every node.  In
# `make check-long` (two slowed joins: about a minute and a half).
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=20000
TOKENS=4
HANDOFF_CONC=2
# record bytes one batch carries at most (transfers.c), and the record a
# scan may pass it by (handoff.c, serve_pull: one record of 100-byte values)
BATCH=262144
RECORD_MAX=1024
SAMPLE_STEP=7
JOIN_S=150
flags="--handoff-rate 64KB --handoff-concurrency $HANDOFF_CONC --tokens $TOKENS"
# shellcheck disable=SC2086 # one flag a word
it_cluster 3 $flags
it_wait_converged
it_handoff load "$(it_client_addr n1)" hk: 0 "$KEYS" || it_fail "loading $KEYS keys"
it_log "$KEYS keys loaded through n1"

# what `handoff.py transfers` and `handoff.py arc` said last (set by eval)
t_rows=0 t_left=0 t_unchecked=0 t_source=- t_arc=- t_arc_keys=0 t_mid=0
a_from=- a_keys=0 a_state=-

# third_of_the_way ID: every incoming transfer of ID is checked (its keys_total known), ID
# has received a third of the keys it gains or more, and an arc is mid-stream (batches
# applied, more to come); t_source: the node the arc furthest along pulls from
third_of_the_way() {
    t=$(it_handoff transfers "$(it_client_addr "$1")") || return 1
    recv=$(it_info_field "$1" ringkv_handoff_keys_received)
    eval "$(echo "$t" | tr ' ' '\n' | sed 's/^/t_/')"
    [ "$t_rows" -gt 0 ] && [ "$t_unchecked" -eq 0 ] && [ "$t_mid" -gt 0 ] &&
        [ $((3 * recv)) -ge $((recv + t_left)) ]
}

# sample_reads ID...: a sample of the keys reads its value through each node
sample_reads() {
    for n in "$@"; do
        it_handoff check "$(it_client_addr "$n")" hk: 0 "$KEYS" "$SAMPLE_STEP" > /dev/null ||
            it_fail "a key does not read through $n"
    done
}

# --- A. the source killed --------------------------------------------------
it_setvar n4 PEER "$(it_free_port "$(it_addr n4)")"
# shellcheck disable=SC2086
it_node n4 --rack r4 --seeds "$(it_peer_addr n1)" $flags
it_wait_ping n4
IT_WAIT=$JOIN_S it_wait third_of_the_way n4 || it_fail "n4 never got a third of the way with an arc mid-stream"
src=$t_source
case $src in n[123]) ;; *) it_fail "n4 pulls from '$src'" ;; esac
pre=$(it_info_field "$src" ringkv_handoff_bytes_sent)
it_stop "$src" KILL
it_log "A: $src (sent $pre bytes) killed with n4 at $recv keys, $t_left to come"
# while it is down, n4 waits for it: the node that loses an arc is its one source (a stand-in
# would hold only the writes it acknowledged itself), so the join does not finish without it
sleep "$(it_rounds_s "$IT_DOWN_ROUNDS")"
[ "$(it_handoff_status n4)" = joining ] || it_fail "A: n4 turned normal with $src, a source it needs, down"
it_log "A: with $src down, n4 waits for it: still joining"
seed=n1
[ "$src" = n1 ] && seed=n2
# shellcheck disable=SC2086
it_node "$src" --rack "r${src#n}" --seeds "$(it_peer_addr "$seed")" $flags
it_wait_ping "$src"
it_wait_normal n4 4 "$JOIN_S"
it_wait_converged_n 4
received=$(it_info_field n4 ringkv_handoff_bytes_received)
keys=$(it_info_field n4 ringkv_handoff_keys_received)
held=$(it_cli n4 DBSIZE)
sent=$((pre + $(it_info_sum ringkv_handoff_bytes_sent n1 n2 n3)))
it_log "A: n4 normal: received $received bytes ($keys keys, holds $held), sources sent $sent," \
    "failures $(it_info_field n4 ringkv_handoff_failures)"
# n4 was not restarted: it applied each key once, from one source or another
it_expect_eq "A: keys n4 received, against the keys it holds" "$keys" "$held"
# The bound.  n4 keeps each arc's cursor in memory and asks the next source for what follows
# its last applied batch, so the only bytes sent twice are pull answers the killed source
# counted and n4 never applied: the requests outstanding to it when it died.  The receiver
# has one pull outstanding per arc it streams, and streams HANDOFF_CONC arcs at once; an
# answer carries at most BATCH bytes plus the record that passes the bound.  Bytes it
# served between the read of its counter and the kill are in neither `pre` nor its
# counter after the restart: they only lower the excess.
excess=$((sent - received))
bound=$((HANDOFF_CONC * (BATCH + RECORD_MAX)))
[ "$excess" -le "$bound" ] ||
    it_fail "A: the sources sent $excess bytes more than n4 received, over $bound ($HANDOFF_CONC batches)"
sample_reads n1 n2 n3 n4
it_log "A: sent - received = $excess bytes (bound $bound); a sample of the keys reads through every node"

# --- B. the receiver killed ------------------------------------------------
sent0=$(it_info_sum ringkv_handoff_bytes_sent n1 n2 n3 n4)
it_setvar n5 PEER "$(it_free_port "$(it_addr n5)")"
# shellcheck disable=SC2086
it_node n5 --rack r5 --seeds "$(it_peer_addr n4)" $flags
it_wait_ping n5
IT_WAIT=$JOIN_S it_wait third_of_the_way n5 || it_fail "n5 never got a third of the way with an arc mid-stream"
before_keys=$(it_info_field n5 ringkv_handoff_keys_received)
before_bytes=$(it_info_field n5 ringkv_handoff_bytes_received)
it_stop n5 KILL
it_log "B: n5 killed at $before_keys keys ($before_bytes bytes), $t_mid arcs mid-stream, $t_left keys to come"
sample_reads n1 n2 n3 n4
it_log "B: with n5 down, a sample of the keys reads through n1, n2, n3 and n4"
# shellcheck disable=SC2086
it_node n5 --rack r5 --seeds "$(it_peer_addr n4)" $flags
it_wait_ping n5
it_wait_normal n5 5 "$JOIN_S"
it_wait_converged_n 5
resumed=$(it_info_field n5 ringkv_handoff_resumed)
after_keys=$(it_info_field n5 ringkv_handoff_keys_received)
after_bytes=$(it_info_field n5 ringkv_handoff_bytes_received)
held=$(it_cli n5 DBSIZE)
sent=$(($(it_info_sum ringkv_handoff_bytes_sent n1 n2 n3 n4) - sent0))
it_log "B: n5 normal: resumed $resumed arcs, received $after_keys keys ($after_bytes bytes) after" \
    "the restart, holds $held; the sources sent $sent bytes"
[ "$resumed" -gt 0 ] || it_fail "B: n5 resumed no arc from a checkpoint"
# Each batch is applied with its arc's checkpoint in one store transaction: what n5
# received before the kill is never received again.  Its keys before (read just before
# the kill: a batch applied after the read is counted in neither) and after the restart
# are no more than the keys it holds.
[ $((before_keys + after_keys)) -le "$held" ] ||
    it_fail "B: n5 received $before_keys + $after_keys keys and holds $held: keys received twice"
# The sources sent more than n5 received by the answers lost with n5 (one outstanding pull per
# arc streamed) and the batches applied between the read of its counters and the kill (at
# most one per arc streamed too): twice HANDOFF_CONC batches.
excess=$((sent - before_bytes - after_bytes))
bound=$((2 * HANDOFF_CONC * (BATCH + RECORD_MAX)))
[ "$excess" -le "$bound" ] ||
    it_fail "B: the sources sent $excess bytes more than n5 received, over $bound"
sample_reads n1 n2 n3 n4 n5
it_log "B: sent - received = $excess bytes (bound $bound); a sample of the keys reads through every node"
it_pass "a join resumes after its source or its receiver is killed"
