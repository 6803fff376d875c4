#!/usr/bin/env bash
# lesson: hot-key
# title: a hot key: the ring balances keys, not requests; the hot key's replicas serve most of them
# length: quick
#
# Six nodes in three racks with 256 tokens each, three copies of each key
# (rf 3): every node holds about half of the 2,001 keys written (DBSIZE),
# within 1.5 times of each other (the two nodes of a rack split its copies
# by the arcs of their tokens, a few percent off even, and which keys land
# where adds a few percent of chance).  Then a skewed load: 6,000 reads,
# sent evenly through all six nodes, nine in ten of them for one key,
# `hot`.  Reads wait for one replica (r 1): a node that holds a copy of
# the key reads its own, and a node that holds none forwards the read to
# the key's first replica that is up.  So the three replicas of `hot`
# serve nine reads in ten between them, the first one (the primary) the
# forwarded ones too, while the other three nodes serve only their share
# of the cold reads: spreading the clients over the nodes, or the keys
# over the ring, does nothing for one key that everyone wants.  Reads
# served are counted from each node's INFO: the reads it coordinated
# (ringkv_coordinated_reads; with r 1 each is one read of its own copy)
# plus the reads it made for other coordinators (ringkv_replica_reads,
# none with r 1).
# shellcheck disable=SC2154,SC2317 # fig_NAME is set by figure (printf -v); helpers run through quiet and run
. "$(dirname "$0")/lib.sh"
NODES=6
KEYS=2000
READS=1000 # per node
HOT_EVERY=10 # one read in HOT_EVERY is for a cold key
lesson_begin

# counters: for each node, `id keys reads-served forwarded` (DBSIZE and INFO).
counters() {
    local i
    for ((i = 1; i <= NODES; i++)); do
        printf 'n%d %s ' "$i" "$(rcli "n$i" DBSIZE)"
        rcli "n$i" INFO | tr -d '\r' | awk -F: '
            $1 == "ringkv_coordinated_reads" { c = $2 } $1 == "ringkv_replica_reads" { r = $2 }
            $1 == "ringkv_forwarded" { f = $2 } END { print c + r, f }'
    done
}

step "Start $NODES nodes in three racks, 256 tokens each, rf 3; reads wait for one replica (r 1)."
lesson_up -n $NODES --rf 3 --r 1 --w 3
notice "every key has one copy in each rack: rack-a (n1 n4), rack-b (n2 n5), rack-c (n3 n6)."
notice "w 3: a write returns once all three copies are stored, so the key counts below are final."

step "Write $KEYS cold keys and one hot key through n1."
{
    echo "SET hot hot"
    seq 1 $KEYS | awk '{ print "SET k:" $1 " cold" }'
} > sets
send n1 sets
run cli n1 preflist hot
hot=$(cli n1 preflist --json hot | python3 -c '
import json, sys
print(" ".join(r["node"] for r in json.load(sys.stdin)["replicas"]))')
figure hot_replicas "${hot// /,}"
notice "the hot key lives on $hot: one node per rack, the first the primary."

step "The load: $READS reads through each node, $((READS - READS / HOT_EVERY)) of them for 'hot', $((READS / HOT_EVERY)) for cold keys."
quiet counters > before
for ((i = 1; i <= NODES; i++)); do
    awk -v n="$i" -v r="$READS" -v e="$HOT_EVERY" 'BEGIN {
        for (j = 0; j < r; j++) print (j % e == 0 ? "GET k:" ((n - 1) * r / e + j / e + 1) : "GET hot") }' > "gets.n$i"
done
run head -n 12 gets.n1
for ((i = 1; i <= NODES; i++)); do send "n$i" "gets.n$i"; done
quiet counters > after
notice "every node was sent the same number of reads: the clients spread the load evenly."

step "Keys held against reads served, per node (DBSIZE; INFO counters, after minus before)."
join before after | awk -v hot=" $hot " '
    BEGIN { print "     node  keys   reads served   forwarded on   replica of hot" }
    { printf "     %-4s %5d   %12d   %12d   %s\n", $1, $5, $6 - $3, $7 - $4,
             (index(hot, " " $1 " ") ? (index(hot, " " $1 " ") == 1 ? "yes (primary)" : "yes") : "-") }' | tee table
notice "keys: about half of them on every node.  reads: the three replicas of 'hot' served nearly all;"
notice "the primary also served what the nodes without a copy forwarded to it."

read -r keys_max keys_min <<< "$(awk 'NR > 1 { if (NR == 2 || $2 > mx) mx = $2; if (NR == 2 || $2 < mn) mn = $2 } END { print mx, mn }' table)"
read -r hot_min cold_max primary total <<< "$(awk -v hot=" $hot " 'NR > 1 {
        t += $3; h = index(hot, " " $1 " ")
        if (h == 1) p = $3
        if (h) { if (!nh++ || $3 < hmin) hmin = $3 }
        else if (!nc++ || $3 > cmax) cmax = $3 }
        END { print hmin, cmax, p, t }' table)"
figure keys_max "$keys_max"
figure keys_min "$keys_min"
figure keys_ratio "$(awk -v a="$keys_max" -v b="$keys_min" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 1e9) }')"
figure reads_hot_min "$hot_min"
figure reads_other_max "$cold_max"
figure reads_ratio "$(awk -v a="$hot_min" -v b="$cold_max" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 1e9) }')"
figure reads_primary "$primary"
figure reads_total "$total"
notice "the primary of 'hot' alone served $primary of the $total reads."

claim "keys per node stay balanced: $keys_min to $keys_max (largest/smallest $fig_keys_ratio, at most 1.5)" -- \
    holds 'mn > 0 && mx <= 1.5 * mn' mx="$keys_max" mn="$keys_min"
claim "the replicas of the hot key ($fig_hot_replicas) each served at least 3 times the reads of any other node: $hot_min at least, against $cold_max at most (${fig_reads_ratio}x)" -- \
    holds 'h >= 3 * c && t >= n * r' h="$hot_min" c="$cold_max" t="$total" n="$NODES" r="$READS"
lesson_end
