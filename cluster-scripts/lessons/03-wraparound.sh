#!/usr/bin/env bash
# lesson: wraparound
# title: a key past the last token belongs to the first; a preference list never holds a node twice
# length: quick
#
# Five nodes in three racks with two tokens each: a ring of ten points,
# small enough to read.  Two bugs every ring implementation is tempted by.
# A missing wrap-around: a key is owned by the first token at or after its
# position, and a key whose position is past the last token has none; the
# ring goes round to the first token.  The gap past the last token is a
# fraction of a percent of the ring here, so only about one key in four
# hundred lands in it: a missing wrap-around passes most tests.  Replicas
# on one machine: the preference list is not the next rf tokens but the
# next rf distinct nodes (and distinct racks while racks last), so the walk
# skips a second token of a node it already chose.  The lesson searches
# for a key of each kind with the offline tool (ringkv placement explain),
# asks a running node the same (ringkv preflist), and checks 200 keys and
# every arc of the running ring for rf distinct nodes in distinct racks.
# shellcheck disable=SC2154 # fig_NAME is set by figure (printf -v)
. "$(dirname "$0")/lib.sh"
NODES=5
KEYS=200
SEARCH=3000
lesson_begin

# ringkv ARGS...: the offline tool, shown as such by run and keep.
ringkv() { "$RINGKV" "$@"; }

# explain ARGS... KEY: placement explain over the running cluster's members
# (the file members) at its rf and ring seed.
explain() { ringkv placement explain --rf "$RF" "${SEED[@]}" --members members "$@"; }

# first_key PATTERN: the first of key:0, key:1, ... whose explain --json
# matches the extended regular expression PATTERN (at most $SEARCH tried);
# prints `KEY TRIES`.
first_key() {
    local i
    for ((i = 0; i < SEARCH; i++)); do
        if explain --json "key:$i" | grep -Eq "$1"; then
            echo "key:$i $((i + 1))"
            return 0
        fi
    done
    echo "none $SEARCH"
}

step "Start $NODES nodes in three racks with two tokens each, three copies of each key (rf 3)."
lesson_up -n $NODES --tokens 2 --rf 3
notice "n1 and n4 are in rack-a, n2 and n5 in rack-b, n3 in rack-c."
RF=$(info_field n1 ringkv_rf)
SEED=()
seed=$(awk '$1 == "ring-seed" { s = $2 } END { print s }' "$RINGKV_TESTBED/n1/ringkvd.conf")
[ -z "$seed" ] || SEED=(--seed "$seed")

step "The ring as n1 sees it: its arcs, each with its preference list."
run cli n1 ring
quiet cli n1 ring --json > ring.json
read -r first first_owner last past merged <<< "$(python3 -c '
import json, sys
ring = json.load(open("ring.json"))
w = [a for a in ring["arcs"] if int(a["start"], 16) >= int(a["end"], 16)][0]
merged = [m["id"] for m in ring["members"] if m["arcs"] < int(sys.argv[1])]
print(w["end"], w["owner"], w["start"], "%.2f%%" % (100 * (2**64 - int(w["start"], 16)) / 2**64),
      ",".join(merged) or "-")' 2)"
figure first_token "$first"
figure first_owner "$first_owner"
figure last_token "$last"
figure past_last "$past"
notice "positions run from 0000000000000000 to ffffffffffffffff; each arc ends at a token."
notice "the first arc starts at the LAST token ($last) and ends at the FIRST ($first):"
notice "it goes round the end of the range.  Only $past of the ring lies past the last token."
[ "$merged" = - ] || notice "$merged shows fewer arcs than tokens: its two tokens are neighbours, the two arcs ending at them have the same list, and the table merges them."

step "The same members in a file, for the offline tool (from n1's ringkv status --json)."
quiet cli n1 status --json | python3 -c '
import json, sys
for m in json.load(sys.stdin)["members"]:
    print("node", m["id"], m["rack"], m["tokens"])' > members
run cat members

step "Search key:0, key:1, ... for a key whose position is past the last token."
read -r wrap_key tries <<< "$(first_key '"wrapped": true')"
echo "     $wrap_key, after $tries keys tried"
if [ "$wrap_key" = none ]; then
    claim "one of key:0 to key:$((SEARCH - 1)) lands past the last token" -- false
    lesson_end
fi
figure wrap_key "$wrap_key"
run explain "$wrap_key"
notice "no token is >= its position: code that only searches forward finds nothing here,"
notice "and crashes or drops the key.  The ring wraps round to its first token."
step "Ask the running cluster about the same key."
run cli n1 preflist "$wrap_key"
read -r wrap_token wrap_at wrap_primary <<< "$(cli n1 preflist --json "$wrap_key" | python3 -c '
import json, sys
p = json.load(sys.stdin)
print(p["token"], p["token_position"], p["replicas"][0]["node"])')"
figure wrap_owner_token "$wrap_token"
figure wrap_primary "$wrap_primary"
notice "n1 says: owner token $wrap_token (in ring order, from 0) at $wrap_at, and $wrap_primary is the primary."

step "Search for a key whose walk passes a second token of a node it already chose."
read -r skip_key tries <<< "$(first_key '"reason": "[^"]* already chosen"')"
echo "     $skip_key, after $tries keys tried"
if [ "$skip_key" = none ]; then
    claim "the walk of one of key:0 to key:$((SEARCH - 1)) skips a token of a node it chose" -- false
    lesson_end
fi
run explain "$skip_key"
read -r naive walk_wraps <<< "$(explain --json "$skip_key" | python3 -c '
import json, sys
steps = json.load(sys.stdin)["steps"]
pos = [int(s["position"], 16) for s in steps]
print(",".join(s["node"] for s in steps[:int(sys.argv[1])]), int(pos != sorted(pos)))' "$RF")"
figure skip_key "$skip_key"
figure next_tokens "$naive"
notice "the step marked 'skipped': the node is already on the list, so its second token adds nothing."
notice "the next $RF tokens alone would be $naive: two copies on one machine, which one failure takes out."
[ "$walk_wraps" = 0 ] || notice "this walk also runs past the last token and goes on from the first: the walk wraps round too."
run cli n1 preflist "$skip_key"
notice "the running node gives the same list, and says which node it skipped and why."

step "Now $KEYS keys, asked through the running nodes in turn, and explained offline too."
echo "   \$ for i in 0 .. $((KEYS - 1)): cli n(1 + i % $NODES) preflist --json key:\$i; explain --json key:\$i"
for ((i = 0; i < KEYS; i++)); do
    cli "n$((1 + i % NODES))" preflist --json "key:$i" >> running.json
    explain --json "key:$i" >> offline.json
done
run python3 - "$RF" members running.json offline.json <<'EOF'
import json, sys

rf = int(sys.argv[1])
racks = {}
for line in open(sys.argv[2]):
    _, node, rack, _ = line.split()
    racks[node] = rack
want_racks = min(rf, len(set(racks.values())))

def objects(path):
    text, at, dec = open(path).read(), 0, json.JSONDecoder()
    while text[at:].strip():
        while text[at].isspace():
            at += 1
        obj, at = dec.raw_decode(text, at)
        yield obj

running, offline = list(objects(sys.argv[3])), list(objects(sys.argv[4]))
bad = differ = doubled = 0
for r, o in zip(running, offline):
    nodes = [n["node"] for n in r["replicas"]]
    if len(nodes) != rf or len(set(nodes)) != rf or len({racks[n] for n in nodes}) != want_racks:
        bad += 1
    if nodes != o["preflist"]:
        differ += 1
    first = [s["node"] for s in o["steps"][:rf]]
    doubled += len(set(first)) < len(first)
print("keys", len(running), "explained", len(offline))
print("lists without", rf, "distinct nodes in", want_racks, "distinct racks:", bad)
print("lists where the running node and the offline walk differ:", differ)
print("keys whose next", rf, "tokens hold a node twice:", doubled)
print(len(running), bad, differ, doubled, want_racks, file=open("check.figures", "w"))
EOF
read -r asked bad differ doubled want_racks < check.figures
figure keys_asked "$asked"
figure lists_bad "$bad"
figure lists_differ "$differ"
figure next_tokens_doubled "$doubled"
notice "the first two counts are the lists that break the rule, and where node and tool disagree: both should be 0."
notice "the next $RF tokens would have put two copies on one node for $doubled of the $asked keys."

step "And every arc of n1's ring (ring.json, read above): every key at once."
keep arcs python3 - "$want_racks" "$RF" members ring.json <<'EOF'
import json, sys
want, rf = int(sys.argv[1]), int(sys.argv[2])
racks = dict(l.split()[1:3] for l in open(sys.argv[3]))
arcs = json.load(open(sys.argv[4]))["arcs"]
bad = [a for a in arcs if len(set(a["preflist"])) != rf or len({racks[n] for n in a["preflist"]}) != want]
print("arcs", len(arcs), "without", rf, "distinct nodes in", want, "distinct racks:", len(bad))
EOF
figure arcs "$(printf '%s\n' "$arcs" | awk '{ print $2 }')"
figure arcs_bad "$(printf '%s\n' "$arcs" | awk '{ print $NF }')"
notice "every key falls in one of these arcs, so this checks every key, not only the $KEYS asked."

claim "$wrap_key, past the last token $fig_last_token, lands on token $fig_wrap_owner_token at $wrap_at and is owned by $fig_wrap_primary: the first token $fig_first_token and its owner $fig_first_owner" -- \
    test "$fig_wrap_owner_token $wrap_at $fig_wrap_primary" = "0 $fig_first_token $fig_first_owner"
claim "all $fig_keys_asked keys asked and all $fig_arcs arcs have $RF distinct nodes in $want_racks distinct racks ($fig_lists_bad and $fig_arcs_bad do not), as the offline walk says ($fig_lists_differ differ); the next $RF tokens would hold a node twice for $fig_next_tokens_doubled keys" -- \
    holds 'k == n && b == 0 && a > 0 && ab == 0 && d == 0' k="$fig_keys_asked" n="$KEYS" b="$fig_lists_bad" a="$fig_arcs" ab="$fig_arcs_bad" d="$fig_lists_differ"
lesson_end
