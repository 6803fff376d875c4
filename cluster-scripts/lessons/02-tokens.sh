#!/usr/bin/env bash
# lesson: tokens
# title: one token per node leaves some nodes owning many times what others own; 256 even it out
# length: quick
#
# Eight nodes, each key stored once (rf 1).  With one token per node the
# ring is cut at eight random points, and the arcs between them, each
# node's share, are as uneven as random gaps are: the largest node here
# owns over a hundred times what the smallest does.  The same eight nodes with
# 256 tokens each own the sum of 256 small arcs, and those sums come out
# close to an eighth each.  The shares are read from the running nodes
# (ringkv status), and the keys each node really holds (DBSIZE after
# writing the same 2,000 keys to both rings) follow them.  The spread is
# measured as the standard deviation of the shares over their mean; with
# random token positions it is about 0.8 for one token and 0.05 for 256,
# and one token comes within three times of 256 for about one ring seed in
# ten thousand (simulated; the positions here are fixed: they hash the
# node ids under the ring seed).
# shellcheck disable=SC2154 # fig_NAME is set by figure (printf -v)
. "$(dirname "$0")/lib.sh"
NODES=8
KEYS=2000
lesson_begin

# shares ID: each member's id, share of the ring (0 to 1) and tokens, as
# node ID reports them (ringkv status --json), one `id share tokens` a line.
shares() {
    cli "$1" status --json | python3 -c '
import json, sys
for m in json.load(sys.stdin)["members"]:
    print(m["id"], m["owns"], m["tokens"])'
}

# keys_per_node: each node's id and its DBSIZE, one `id keys` a line.
keys_per_node() {
    local i
    for ((i = 1; i <= NODES; i++)); do echo "n$i $(rcli "n$i" DBSIZE)"; done
}

# spread: of `id value` lines on stdin: `max min max/min sd/mean`.
spread() {
    awk '{ v[NR] = $2; s += $2; if (NR == 1 || $2 > mx) mx = $2; if (NR == 1 || $2 < mn) mn = $2 }
        END { m = s / NR; for (i = 1; i <= NR; i++) q += (v[i] - m) ^ 2
              printf "%s %s %s %.3f\n", mx, mn, (mn > 0 ? sprintf("%.2f", mx / mn) : "inf"), sqrt(q / NR) / m }'
}

# table SHARES KEYS: the two side by side, with the keys each share predicts.
table() {
    echo "     node   owns   keys   (owns x $KEYS)"
    join <(printf '%s\n' "$1" | sort) <(printf '%s\n' "$2" | sort) | sort -V |
        awk -v k="$KEYS" '{ printf "     %-4s %5.1f%%  %5d   %5.0f\n", $1, 100 * $2, $4, $2 * k }'
}

# measure TAG: figures of the running ring (TAG: 1 or 256).
measure() {
    local s k mx mn ratio cv
    s=$(shares n1)
    k=$(keys_per_node)
    table "$s" "$k"
    read -r mx mn ratio cv <<< "$(printf '%s\n' "$s" | spread)"
    figure "owns_max_$1" "$(awk -v v="$mx" 'BEGIN { printf "%.1f%%", 100 * v }')"
    figure "owns_min_$1" "$(awk -v v="$mn" 'BEGIN { printf "%.1f%%", 100 * v }')"
    figure "owns_ratio_$1" "$ratio"
    figure "owns_cv_$1" "$cv"
    figure "tokens_$1" "$(printf '%s\n' "$s" | awk '{ print $3 }' | sort -un | paste -sd/)"
    read -r mx mn ratio cv <<< "$(printf '%s\n' "$k" | spread)"
    figure "keys_max_$1" "$mx"
    figure "keys_min_$1" "$mn"
    figure "keys_cv_$1" "$cv"
    figure "keys_sum_$1" "$(printf '%s\n' "$k" | awk '{ s += $2 } END { print s }')"
}

seq 0 $((KEYS - 1)) | awk '{ print "SET lesson:" $1 " v" $1 }' > sets

step "Start $NODES nodes with ONE token each, each key stored once (rf 1)."
lesson_up -n $NODES --tokens 1 --rf 1 --r 1 --w 1
notice "each node put one token on the ring, at the hash of its id (n1#0, n2#0, ...)."

step "How much of the ring does each node own?  Ask n1, then look at the arcs."
run cli n1 status
run cli n1 ring
notice "eight arcs, one per token: a node owns the gap from the token before its own to its own."
notice "the gaps between eight random points are anything but equal: look at the 'owns' column."

step "Write the same $KEYS keys through n1, then count the keys on each node (DBSIZE)."
send n1 sets
measure 1
notice "the keys follow the shares: a node that owns a third of the ring holds a third of the keys."

step "Remove this cluster, and start $NODES new nodes with 256 tokens each."
run tb clean
lesson_up -n $NODES --tokens 256 --rf 1 --r 1 --w 1

step "The shares of the new ring, as n1 sees them."
run cli n1 status
notice "each node now owns the sum of 256 small arcs: all close to 1/$NODES = 12.5%."

step "Write the same $KEYS keys again and count them on each node."
send n1 sets
measure 256

step "Compare the two rings."
notice "$(printf '%3s' "$fig_tokens_1") tokens a node: shares from $fig_owns_min_1 to $fig_owns_max_1 (largest/smallest $fig_owns_ratio_1), keys from $fig_keys_min_1 to $fig_keys_max_1"
notice "$(printf '%3s' "$fig_tokens_256") tokens a node: shares from $fig_owns_min_256 to $fig_owns_max_256 (largest/smallest $fig_owns_ratio_256), keys from $fig_keys_min_256 to $fig_keys_max_256"
notice "spread = standard deviation / mean of the $NODES values: 0 when every node gets the same."

claim "the ownership spread is at least 3 times smaller with $fig_tokens_256 tokens per node ($fig_owns_cv_256) than with $fig_tokens_1 ($fig_owns_cv_1)" -- \
    holds 'b >= 3 * a' a="$fig_owns_cv_256" b="$fig_owns_cv_1"
claim "so is the spread of the keys the nodes hold: $fig_keys_cv_256 with $fig_tokens_256 tokens, $fig_keys_cv_1 with $fig_tokens_1 ($fig_keys_sum_1 and $fig_keys_sum_256 of $KEYS keys stored)" -- \
    holds 'b >= 3 * a && s1 == k && s2 == k' a="$fig_keys_cv_256" b="$fig_keys_cv_1" s1="$fig_keys_sum_1" s2="$fig_keys_sum_256" k="$KEYS"
lesson_end
