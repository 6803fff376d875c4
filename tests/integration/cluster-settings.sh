#!/bin/sh
# Cluster settings (rf, conflicts, ring-seed) with real ringkvd processes:
#
#   - nodes with the same settings join and converge;
#   - a joining node with another rf, conflicts or ring-seed exits 2 with
#     one line naming the setting and both values, and the member it met
#     keeps serving and logs the refusal once;
#   - a running member with another rf that keeps dialling its seed is
#     refused at every attempt, and both sides keep running and log it
#     once (not once per redial);
#   - a peer that announces no settings (ringkv peer-check) is accepted;
#   - a restart with a changed setting is refused with the recorded and
#     the configured value, and leaves the data directory as it was.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key

# gone PID: the process has exited.
gone() { ! kill -0 "$1" 2> /dev/null; }

# refused NAME WANT FLAGS...: a ringkvd started with FLAGS exits 2 and says WANT on stderr.
refused() {
    name=$1
    want=$2
    shift 2
    "$RINGKVD" --id "$name" --cluster-key "$IT_DIR/key" --data "$IT_DIR/$name.data" \
        --client "127.0.0.1:$(it_free_port)" --listen "127.0.0.1:$(it_free_port)" "$@" \
        > "$IT_DIR/$name.out" 2> "$IT_DIR/$name.err" &
    pid=$!
    IT_PIDS="$IT_PIDS $pid"
    IT_WAIT=$(it_rounds_s 50) it_wait gone "$pid" || it_fail "$name still runs"
    wait "$pid"
    status=$?
    it_expect_eq "$name exit status" "$status" 2
    grep -qF -- "$want" "$IT_DIR/$name.err" ||
        it_fail "$name: expected '$want' on stderr: $(grep -v "event=" "$IT_DIR/$name.err")"
    it_log "$name refused: $(grep -F -- "$want" "$IT_DIR/$name.err" | head -n 1)"
}

# logged_once NODE PEER: NODE's log has exactly one refusal of PEER.
logged_once() {
    it_expect_eq "refusals of $2 logged by $1" \
        "$(grep -c "event=cluster_settings_refused .*remote_id=$2 " "$IT_DIR/$1.log")" 1
}

# rejected PORT: the node's count of peers refused for their cluster settings.
rejected() {
    redis-cli -p "$1" INFO | tr -d '\r' | sed -n 's/^ringkv_peer_rejected_settings://p'
}

at_least() { [ "$(rejected "$1")" -ge "$2" ]; }

# Two nodes with the same settings converge.
it_cluster 2
PORTS=$(it_ports 2)
IT_WAIT=$(it_rounds_s 30) it_wait it_ask converged 2 $PORTS || it_fail "n1 and n2 did not converge"
seed=$(it_cli n1 CONFIG GET ring-seed | tail -n 1)
other_seed=ffeeddccbbaa99887766554433221100
[ "$seed" != "$other_seed" ] || it_fail "the default ring seed is the test's other seed"
N1="n1 (127.0.0.1:$N1_PEER)"

# Joiners with another value of each setting.
refused jrf "rf: this node has 2, peer $N1 has 3" --seeds "127.0.0.1:$N1_PEER" --rf 2
refused jconf "conflicts: this node has lww, peer $N1 has siblings" \
    --seeds "127.0.0.1:$N1_PEER" --conflicts lww
refused jseed "ring-seed: this node has $other_seed, peer $N1 has $seed" \
    --seeds "127.0.0.1:$N1_PEER" --ring-seed "$other_seed"
for j in jrf jconf jseed; do
    logged_once n1 "$j"
done
it_cli n1 PING > /dev/null || it_fail "n1 stopped serving"
it_alive n1 || it_fail "n1 exited"
IT_WAIT=$(it_rounds_s 30) it_wait it_ask converged 2 $PORTS || it_fail "n1 and n2 disturbed"

# A peer that announces no settings is accepted.
"$RINGKV" peer-check --cluster-key "$IT_DIR/key" "127.0.0.1:$N1_PEER" > /dev/null ||
    it_fail "peer-check (no cluster settings announced) refused"

# A running member with another rf: x forms a cluster of its own, then
# comes back seeded with n1; it is normal, so it keeps running and keeps
# dialling n1 every round.
it_node x --rf 2
it_wait_ping x
it_stop x TERM
it_node x --rf 2 --seeds "127.0.0.1:$N1_PEER"
it_wait_ping x
IT_WAIT=$(it_rounds_s 60) it_wait at_least "$N1_CLIENT" 4 ||
    it_fail "n1 refused x $(rejected "$N1_CLIENT") times, expected redials"
IT_WAIT=$(it_rounds_s 60) it_wait at_least "$X_CLIENT" 4 ||
    it_fail "x refused n1 $(rejected "$X_CLIENT") times"
logged_once n1 x
logged_once x n1
grep -q "event=cluster_settings_refused .*joining=0 msg=\"rf: this node has 3, peer x " \
    "$IT_DIR/n1.log" || it_fail "n1's line does not name rf and both values"
it_cli x PING > /dev/null || it_fail "x stopped serving"
it_cli n1 PING > /dev/null || it_fail "n1 stopped serving"
it_log "x refused $(rejected "$N1_CLIENT") times by n1, logged once on each side"
it_stop x TERM

# A restart with a changed setting is refused and changes nothing.
it_stop n2 TERM
sum=$(md5sum < "$IT_DIR/n2.data/data.mdb")
seeds="--seeds 127.0.0.1:$N1_PEER"
# shellcheck disable=SC2086
refused n2 "was formed with rf 3; rf is 4" --rack r2 $seeds --rf 4
# shellcheck disable=SC2086
refused n2 "was formed with conflicts siblings; conflicts is lww" --rack r2 $seeds --conflicts lww
# shellcheck disable=SC2086
refused n2 "was formed with ring-seed $seed; ring-seed is $other_seed" --rack r2 $seeds \
    --ring-seed "$other_seed"
it_expect_eq "n2's data after the refusals" "$(md5sum < "$IT_DIR/n2.data/data.mdb")" "$sum"
# shellcheck disable=SC2086
it_node n2 --rack r2 $seeds
it_wait_ping n2
IT_WAIT=$(it_rounds_s 30) it_wait it_ask converged 2 $PORTS || it_fail "n2 did not come back"
it_pass
