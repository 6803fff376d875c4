#!/bin/sh
# Monotonic reads through read repair, with real ringkvd processes, 3 nodes
# in a network namespace of the test's own, rf 3, r = w = 2, one replica
# lagging: n3's traffic is held to a low rate (htb), so the versions it gets
# arrive late and the reads that reach it see it stale.
#
# `ringkv workload --spread random` reads and writes every key through any
# node; `ringkv verify --monotonic` then checks the history: no acknowledged
# write lost, and no read returned a value older than one an earlier read
# (that ended before it started) returned.  Read repair is what holds it:
# the merged record goes to every replica that answered with less before
# the reply (INFO ringkv_read_repairs counts them).  A write refused with
# TRYAGAIN is recorded as unknown, never as failed: it may be on replicas.
# The cluster resolves conflicts by lww (below, why).
. "$top_srcdir/tests/integration/lib.sh"
it_private_net "$@"
it_setup
it_key
it_net

# lww: a blind SET coordinated by the lagging replica, after another one was acknowledged
# elsewhere, would otherwise be a sibling of it (README, Replication: Conflicts), which the
# history counts as a stale value; here only reads are on trial
it_cluster 3 --conflicts lww
it_wait it_ask converged 3 $(it_ports 3) || it_fail "3 nodes did not converge"
it_slow n3 256kbit

hist="$IT_DIR/monotonic.jsonl"
H="-H $(it_addr n1):$N1_CLIENT -H $(it_addr n2):$N2_CLIENT -H $(it_addr n3):$N3_CLIENT"
# shellcheck disable=SC2086
"$RINGKV" workload $H --spread random --keys 30 --duration 8 --concurrency 6 --mix 4:5:1 \
    --history "$hist" > "$IT_DIR/workload.out" ||
    it_fail "workload: $(cat "$IT_DIR/workload.out")"
it_clear n3
out=$("$RINGKV" verify --monotonic "$hist") || it_fail "verify --monotonic: $out"
case "$out" in *"0 violations"*) ;; *) it_fail "no verdict: $out" ;; esac
writes=$(echo "$out" | awk '$1 == "writes_ok" { print $2 }')
reads=$(echo "$out" | awk '$1 == "reads_checked" { print $2 }')
[ "$writes" -gt 100 ] && [ "$reads" -gt 100 ] || it_fail "too little was checked: $out"
repairs=0
for n in n1 n2 n3; do
    r=$(it_cli $n INFO cluster | tr -d '\r' | sed -n 's/^ringkv_read_repairs://p')
    repairs=$((repairs + r))
done
[ "$repairs" -gt 0 ] || it_fail "no read repaired a lagging replica"
it_log "$writes writes, $reads reads checked, 0 violations, $repairs read repairs"
it_pass "monotonic reads with a lagging replica"
