#!/bin/sh
# A member reachable only through others (a partial partition), with real
# ringkvd processes in a network namespace of the test's own:
#
#   - n1 and n3 cut from each other both ways (iptables), n2 reaching both:
#     n3 hears n1 only through n2's gossip, and holds it alive;
#   - n1 paused (SIGSTOP) longer than the down bound, then resumed: n2,
#     which n1 reaches directly, and n3, which hears it only relayed, both
#     hold it alive again within 20 rounds (a paused process loses the
#     heartbeats it did not write: its versions stay behind one per
#     interval paused, which must not date every later relayed version in
#     the past for as long as the partition lasts);
#   - n1 killed (kill -9): n3 still sees it down within the bound;
#   - n1 restarted (a new generation), still cut from n3: alive at n3 again.
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net

at() { echo "$(it_addr "$1"):$(it_var "$1" CLIENT)"; }

it_cluster 3
it_wait_converged

it_partition "n1 | n3"
# 5 s: n3's last direct PING from n1 is well behind it; n1 must stay alive there
end=$(($(date +%s) + 5))
while [ "$(date +%s)" -lt "$end" ]; do
    it_ask state alive n1 "$(at n3)" > /dev/null || it_fail "n3 lost n1, alive behind n2: $(it_ask wrongly-down none "$(at n3)")"
    sleep 0.2
done
it_log "n1 and n3 cut from each other: n3 holds n1 alive through n2"

kill -STOP "$N1_PID"
IT_WAIT=$(it_rounds_s $IT_DOWN_ROUNDS) it_wait it_ask state down n1 "$(at n2)" "$(at n3)" ||
    it_fail "paused n1 not marked down within $IT_DOWN_ROUNDS rounds"
sleep 2
kill -CONT "$N1_PID"
IT_WAIT=$(it_rounds_s 20) it_wait it_ask state alive n1 "$(at n2)" || it_fail "n1 not alive again at n2 after SIGCONT"
IT_WAIT=$(it_rounds_s 20) it_wait it_ask state alive n1 "$(at n3)" ||
    it_fail "n1 resumed, alive at n2, still held $(it_ask wrongly-down none "$(at n3)") by n3, which hears it only through n2"
it_log "n1 paused and resumed behind the partition: alive again at n2 and n3"

it_stop n1 KILL
IT_WAIT=$(it_rounds_s $IT_DOWN_ROUNDS) it_wait it_ask state down n1 "$(at n2)" "$(at n3)" ||
    it_fail "killed n1 not marked down within $IT_DOWN_ROUNDS rounds"
it_log "n1 killed behind the partition: down at n2 and n3"

it_node n1 --rack r1
it_wait_ping n1
IT_WAIT=$(it_rounds_s 30) it_wait it_ask state alive n1 "$(at n2)" "$(at n3)" ||
    it_fail "restarted n1 not alive at n2 and n3: $(it_ask wrongly-down none "$(at n2)" "$(at n3)")"
it_expect_eq "n1's generation at n3" "$(it_generation "$(at n3)" n1)" 2
it_log "n1 restarted behind the partition: generation 2, alive at n2 and n3"
it_heal
it_pass
