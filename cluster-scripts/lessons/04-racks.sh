#!/usr/bin/env bash
# lesson: racks
# title: one copy per rack: with a whole rack stopped every key is still readable and writable
# length: quick
#
# Six nodes in three racks (n1 n4 in rack-a, n2 n5 in rack-b, n3 n6 in
# rack-c), three copies of each key (rf 3), reads and writes waiting for two
# of them (r = w = 2), sloppy quorum off, so that only a key's own replicas
# count toward w.  The preference list walks the ring and takes the first
# node of each rack it meets: every arc of the ring has one replica in each
# rack (counted from `ringkv ring`).  Placed blind to racks (the first three
# nodes of the walk, computed for the same keys with `ringkv placement
# explain`), about a fifth of the keys would have two copies in rack-c.
# Both nodes of rack-c stop: every key still has two replicas up, so all of
# them read back with the right value through each node left, and all of
# them take a new value.  (With w 3 the writes fail: the lesson then fails.)
# shellcheck disable=SC2154,SC2317 # fig_NAME (figure) and keep's VAR are set by printf -v; helpers run through run and keep
. "$(dirname "$0")/lib.sh"
KEYS=200
lesson_begin

# arcs_by_racks: through n1, each arc of the ring (ringkv ring --rf 3) by the
# number of racks its preference list spans (each node's rack: ringkv status).
arcs_by_racks() {
    cli n1 status --json > status.json
    cli n1 ring --rf 3 --json > ring.json
    python3 - status.json ring.json << 'EOF'
import json, sys
rack = {m["id"]: m["rack"] for m in json.load(open(sys.argv[1]))["members"]}
arcs = json.load(open(sys.argv[2]))["arcs"]
by = {}
for a in arcs:
    k = len({rack[n] for n in a["preflist"]})
    n, share = by.get(k, (0, 0.0))
    by[k] = (n + 1, share + a["fraction"])
print(f"ringkv ring --rf 3 through n1: {len(arcs)} arcs")
for k in sorted(by):
    print(f"{by[k][0]} arcs ({100 * by[k][1]:.1f}% of the ring): replicas in {k} racks")
EOF
}

# blind_in_rack RACK: of the keys of file `keys`, how many would have two or
# more copies in RACK if every node stood in one rack (the same ring:
# ringkv placement explain with the nodes' ids and tokens, one rack for all).
blind_in_rack() {
    local nodes=() in_rack
    mapfile -t nodes < <(python3 -c '
import json, sys
for m in json.load(open("status.json"))["members"]:
    print("--node"); print("%s,one,%d" % (m["id"], m["tokens"]))')
    [ "${#nodes[@]}" -gt 0 ] || return 1
    in_rack=$(python3 -c '
import json, sys
print(" ".join(m["id"] for m in json.load(open("status.json"))["members"] if m["rack"] == sys.argv[1]))' "$1")
    while read -r key; do
        "$RINGKV" placement explain --rf 3 "${nodes[@]}" "$key" | sed -n 's/^preflist *//p' || exit 1
    done < keys | awk -v in_rack="$in_rack" '
        BEGIN { split(in_rack, r, " "); for (i in r) inr[r[i]] = 1 }
        { gsub(/\(primary first\)|,/, ""); c = 0; for (i = 1; i <= NF; i++) c += ($i in inr); two += (c >= 2) }
        END { print two + 0 }'
}

step "Start six nodes in three racks: three copies of each key (rf 3), r = w = 2, sloppy quorum off."
lesson_up -n 6 --racks 3 --rf 3 --r 2 --w 2 --sloppy no
notice "racks go round-robin: n1 n4 in rack-a, n2 n5 in rack-b, n3 n6 in rack-c."
notice "sloppy no: a write counts only copies on the key's own replicas, never a stand-in's hint,"
notice "so what keeps the keys available below is where their replicas are, nothing else."
figure w "$(rcli n1 CONFIG GET w | sed -n 2p)"
figure r "$(rcli n1 CONFIG GET r | sed -n 2p)"

step "Where one key lives: its preference list, walked clockwise from the key's position."
run cli n1 preflist rack:0
notice "one replica in each rack: the walk takes the first node of each rack it meets, and skips"
notice "(and lists) any node whose rack it has already used."

step "Every arc of the ring: how many racks does its preference list span?"
keep arcs arcs_by_racks
figure arcs "$(awk '/^ringkv ring/ { print $(NF - 1) }' <<< "$arcs")"
figure arcs_3_racks "$(awk '/replicas in 3 racks/ { n = $1 } END { print n + 0 }' <<< "$arcs")"
notice "every key falls in one of these arcs: each key has a copy in each of the three racks."

step "Write $KEYS keys through n1."
seq 0 $((KEYS - 1)) | awk '{ print "rack:" $1 }' > keys
awk '{ print "SET " $1 " a" NR - 1 }' keys > sets
awk '{ print "OK" }' keys > want_ok
ask n1 sets want_ok
figure written "$(matched sets want_ok)"

step "The same keys placed blind to racks (the first three nodes of the walk): how many would have two copies in rack-c?"
echo "   (ringkv placement explain --rf 3 --node n1,one,256 ... --node n6,one,256 KEY, for each of the $KEYS keys)"
blind=$(blind_in_rack rack-c)
figure blind_two_in_c "$blind"
notice "those keys would lose two of their three copies with rack-c: below r and w = 2.  About one"
notice "in five is what three nodes picked at random from six give (4 of the 20 triples hold n3 and n6)."

step "Stop rack-c: both of its nodes, n3 and n6."
run tb stop n3
run tb stop n6
notice "the others' failure detectors mark a silent node down after about 4 s; waiting for n1's."
quiet until_seen n1 down n3 n6
run cli n1 status || [ $? -eq 3 ]
notice "n3 and n6 are DN (down): the failure detector no longer hears them (status exits 3: not healthy)."
run cli n1 preflist rack:0
notice "its rack-c replica is down; with sloppy quorum off no node stands in for it."

step "Read every key through each of the four nodes still up (r = $fig_r)."
awk '{ print "GET " $1 }' keys > gets
awk '{ print "\"a" NR - 1 "\"" }' keys > want_a
read_ok=0
for id in n1 n2 n4 n5; do
    ask "$id" gets want_a
    read_ok=$((read_ok + $(matched gets want_a)))
done
figure read_ok "$read_ok"
notice "each key has two replicas up (one in rack-a, one in rack-b), which is r."

step "Write a new value to every key through n4 (w = $fig_w)."
awk '{ print "SET " $1 " b" NR - 1 }' keys > sets2
ask n4 sets2 want_ok
figure rewritten "$(matched sets2 want_ok)"
figure write_failed "$((KEYS - fig_rewritten))"
notice "a write needs w replicas to hold it; two are up for every key."

step "Read the new values back through n5."
awk '{ print "\"b" NR - 1 "\"" }' keys > want_b
ask n5 gets want_b
figure reread_ok "$(matched gets want_b)"

claim "every arc's preference list spans the 3 racks ($fig_arcs_3_racks of $fig_arcs arcs); placed blind to racks, $fig_blind_two_in_c of $KEYS keys would have two copies in rack-c" -- \
    holds 'a > 0 && t == a && b > 0' a="$fig_arcs" t="$fig_arcs_3_racks" b="$fig_blind_two_in_c"
claim "with rack-c (n3, n6) stopped, every key read back right at r = $fig_r through each of the 4 nodes up ($fig_read_ok of $((4 * KEYS)) reads)" -- \
    holds 'k > 0 && w == k && r == 4 * k' w="$fig_written" r="$fig_read_ok" k="$KEYS"
claim "with rack-c stopped, every key took a new value at w = $fig_w ($fig_rewritten written, $fig_write_failed failed) and read it back ($fig_reread_ok of $KEYS)" -- \
    holds 'k > 0 && n == k && f == 0 && r == k' n="$fig_rewritten" f="$fig_write_failed" r="$fig_reread_ok" k="$KEYS"
lesson_end
