#!/bin/sh
# Changes of the ring that overlap, with real ringkvd processes on
# addresses of their own, three nodes of rf 3 holding KEYS keys, every
# node streaming handoff at --handoff-rate 64KB so that the copies take
# seconds and the changes overlap:
#   1. two joins at once: n4 and n5 are started together while a workload
#      runs through n1, n2 and n3; the five end in one ring, each normal
#      and converged, and nothing acknowledged is lost (`ringkv verify`
#      through all five) nor any loaded key;
#   2. a join during a leave: n6 is started and n2 told to leave at once,
#      while a workload runs through n1, n3, n4 and n5; n2 turns left and
#      exits, n6 turns normal, the five left converge, and nothing of
#      either workload nor of the loaded keys is lost.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_net
KEYS=3000
SAMPLE_STEP=3
LOAD_S=20
JOIN_S=120
flags="--handoff-rate 64KB"
# shellcheck disable=SC2086 # one flag a word
it_cluster 3 $flags
it_wait_converged
it_handoff load "$(it_client_addr n1)" hk: 0 "$KEYS" || it_fail "loading $KEYS keys"

# hosts ID...: -H ADDRESS:PORT of each node
hosts() {
    for n in "$@"; do printf -- '-H %s ' "$(it_client_addr "$n")"; done
}

# workload NAME ID...: a bounded workload through those nodes into $IT_DIR/NAME.jsonl, in the
# background (its PID in $load)
workload() {
    name=$1
    shift
    # shellcheck disable=SC2046 # one flag a word
    "$RINGKV" workload $(hosts "$@") --keys 300 --duration "$LOAD_S" --concurrency 4 \
        --rate 200 --mix 3:6:1 --prefix "$name:" --history "$IT_DIR/$name.jsonl" \
        > "$IT_DIR/$name.out" 2>&1 &
    load=$!
}

# workload_end NAME: wait for the workload NAME started, which must succeed
workload_end() {
    IT_WAIT=$((LOAD_S + 30)) it_wait sh -c "! kill -0 $load" || it_fail "$1: the workload overran"
    wait "$load" || it_fail "$1: the workload failed: $(cat "$IT_DIR/$1.out")"
    it_log "$1: $(tr '\n' ' ' < "$IT_DIR/$1.out" | sed 's/  */ /g')"
}

# verify NAME ID...: the workload's history holds no lost write, read through those nodes
verify() {
    name=$1
    shift
    # shellcheck disable=SC2046
    out=$("$RINGKV" verify $(hosts "$@") "$IT_DIR/$name.jsonl") || it_fail "$name: verify: $out"
    it_log "$name: $(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"
}

# loaded_reads ID...: a sample of the loaded keys reads its value through each node
loaded_reads() {
    for n in "$@"; do
        it_handoff check "$(it_client_addr "$n")" hk: 0 "$KEYS" "$SAMPLE_STEP" > /dev/null ||
            it_fail "a loaded key does not read through $n"
    done
}

# converged ID...: each of those nodes sees them all up (and no other member but left
# ones), the ring converged
converged() {
    n=$#
    ports=""
    for id in "$@"; do ports="$ports $(it_client_addr "$id")"; done
    # shellcheck disable=SC2086 # one port a word
    IT_WAIT=$(it_rounds_s 60) it_wait it_ask converged "$n" $ports || it_fail "$* did not converge"
}

# --- 1. two joins at once ---------------------------------------------------
workload two-joins n1 n2 n3
for n in n4 n5; do it_setvar "$n" PEER "$(it_free_port "$(it_addr "$n")")"; done
# shellcheck disable=SC2086
it_node n4 --rack r1 --seeds "$(it_peer_addr n1)" $flags
# shellcheck disable=SC2086
it_node n5 --rack r2 --seeds "$(it_peer_addr n2)" $flags
it_wait_ping n4
it_wait_ping n5
it_wait_normal n4 5 "$JOIN_S"
it_wait_normal n5 5 "$JOIN_S"
converged n1 n2 n3 n4 n5
it_log "1: n4 and n5 normal on all five, converged ($(it_info_sum ringkv_handoff_keys_received n4 n5) keys received)"
workload_end two-joins
verify two-joins n1 n2 n3 n4 n5
loaded_reads n1 n2 n3 n4 n5

# --- 2. a join during a leave ------------------------------------------------
workload join-leave n1 n3 n4 n5
it_setvar n6 PEER "$(it_free_port "$(it_addr n6)")"
# shellcheck disable=SC2086
it_node n6 --rack r3 --seeds "$(it_peer_addr n1)" $flags
it_wait_ping n6
it_expect_eq "RINGKV LEAVE on n2" "$(it_cli n2 RINGKV LEAVE)" OK
overlap() {
    it_ask status joining n6 "$(it_client_addr n1)" && it_ask status leaving n2 "$(it_client_addr n1)"
}
IT_WAIT=10 it_wait overlap || it_fail "2: n1 never listed n6 joining and n2 leaving at once"
IT_WAIT=$JOIN_S it_wait sh -c "! kill -0 $N2_PID" || it_fail "2: n2 did not stop after leaving"
wait "$N2_PID"
it_expect_eq "2: n2's exit status after leaving" "$?" 0
for n in n1 n3 n4 n5 n6; do
    IT_WAIT=$JOIN_S it_wait it_ask status normal n6 "$(it_client_addr "$n")" || it_fail "2: $n does not list n6 normal"
    IT_WAIT=30 it_wait it_ask status left n2 "$(it_client_addr "$n")" || it_fail "2: $n does not list n2 left"
done
converged n1 n3 n4 n5 n6
it_log "2: n2 left and stopped, n6 normal, the five converged"
workload_end join-leave
verify join-leave n1 n3 n4 n5 n6
verify two-joins n1 n3 n4 n5 n6
loaded_reads n1 n3 n4 n5 n6
it_pass "two joins at once, and a join during a leave: one ring, nothing lost"
