#!/bin/sh
# `ringkv placement sim`: the table has a row per scheme and token count and
# states the ideal; --json is valid JSON with the documented fields and
# agrees with the table; bad input gets a one-line error and exit code 2.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
ringkv="$top_builddir/src/ringkv"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "placement-sim: $*"; exit 1; }

# A small run: 2 token counts give 2 ring rows, 3 plain rows, 2 bounded rows.
args="--nodes 6 --tokens 4,64 --racks 2 --rf 2 --seeds 2 --keys 5000"
"$ringkv" placement sim $args > "$tmp/table"
grep -q '^scheme  *tokens  *max/mean  *worst  *min/mean  *sd/mean  *max/mean  *moved  *copies  *moved  *copies$' "$tmp/table" ||
    fail "no header in: $(cat "$tmp/table")"
for row in 'ring  *4 ' 'ring  *64 ' 'mod  *- ' 'rendezvous  *- ' 'jump  *- ' 'bounded  *4 ' 'bounded  *64 '; do
    grep -q "^$row" "$tmp/table" || fail "no row '$row'"
done
test "$(grep -cE '^(ring|mod|rendezvous|jump|bounded) ' "$tmp/table")" -eq 7 || fail "not 7 rows"
grep -q 'join of node-7 (rack-1): moved and copies 1/(N+1) = 0.1429' "$tmp/table" || fail "no join ideal"
grep -q 'removal of node-6: moved and copies 1/N = 0.1667' "$tmp/table" || fail "no removal ideal"

# --json: valid, the documented fields, the same figures as the table.
"$ringkv" placement sim $args --json > "$tmp/json"
python3 -m json.tool "$tmp/json" > /dev/null || fail "--json is not valid JSON"
python3 - "$tmp/json" "$tmp/table" <<'EOF' || fail "--json fields"
import json, sys
j = json.load(open(sys.argv[1]))
table = open(sys.argv[2]).read().split("\n")
assert (j["nodes"], j["racks"], j["rf"], j["seeds"], j["keys"]) == (6, 2, 2, 2, 5000), j
assert j["join_node"] == "node-7" and j["removed_node"] == "node-6"
assert abs(j["ideal"]["join_moved"] - 1 / 7) < 1e-7
fields = ["scheme", "tokens", "sampled", "max_mean", "max_mean_worst", "min_mean", "sd_mean",
          "replica_max_mean", "join_moved", "join_copies", "remove_moved", "remove_copies"]
rows = j["rows"]
assert [r["scheme"] for r in rows] == ["ring", "ring", "mod", "rendezvous", "jump", "bounded", "bounded"]
for r in rows:
    assert list(r) == fields, list(r)
    assert r["sampled"] == (r["scheme"] != "ring")
    assert (r["tokens"] is None) == (r["scheme"] in ("mod", "rendezvous", "jump"))
    line = [l for l in table if l.split()[:2] == [r["scheme"], str(r["tokens"] or "-")]][0].split()
    assert abs(float(line[2]) - r["max_mean"]) < 0.0006, (line, r)
    assert abs(float(line[9]) - r["remove_moved"]) < 0.00006, (line, r)
EOF

# One node: nothing to remove, reported as '-' and null.
"$ringkv" placement sim --nodes 1 --tokens 8 --seeds 1 --keys 1000 > "$tmp/one"
grep -Eq '^ring +8 +1\.000 +1\.000 +1\.000 +0\.000 +1\.000 +[0-9.]+ +0\.5000 +- +-$' "$tmp/one" ||
    fail "one node: $(cat "$tmp/one")"
"$ringkv" placement sim --nodes 1 --tokens 8 --seeds 1 --keys 1000 --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); assert all(r["remove_moved"] is None for r in j["rows"])' ||
    fail "one node: removal not null"

# The default run works and is reproducible.
"$ringkv" placement sim --tokens 16 --seeds 1 --keys 2000 > "$tmp/a"
"$ringkv" placement sim --tokens 16 --seeds 1 --keys 2000 > "$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || fail "two identical runs differ"

# Bad input: exit 2 and one line on stderr that names the problem.
expect_usage() {
    want=$1; shift
    set +e
    "$ringkv" placement sim "$@" > /dev/null 2> "$tmp/err"
    rc=$?
    set -e
    test "$rc" -eq 2 || fail "$*: exit $rc, not 2"
    test "$(wc -l < "$tmp/err")" -le 2 || fail "$*: more than one error line"
    grep -q -- "$want" "$tmp/err" || fail "$*: stderr lacks '$want': $(cat "$tmp/err")"
}
expect_usage "--nodes must be" --nodes 0
expect_usage "--nodes must be" --nodes 100000
expect_usage "--nodes must be" --nodes ten
expect_usage "--tokens must be" --tokens 0
expect_usage "--tokens must be" --tokens 4,,8
expect_usage "--tokens must be" --tokens 4097
expect_usage "--tokens must be" --tokens 16,
expect_usage "--rf must be" --rf 17
expect_usage "--racks must be at most --nodes" --nodes 4 --racks 5
expect_usage "--seeds must be" --seeds 0
expect_usage "--keys must be" --keys 10
expect_usage "--seed must be 32 hex digits" --seed xyz
expect_usage "unknown option" --frobnicate
expect_usage "unexpected argument" extra
"$ringkv" placement sim --help | grep -q '^usage: ringkv placement sim' || fail "--help"
echo "placement-sim: ok"
