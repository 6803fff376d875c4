#!/bin/sh
# `ringkv workload` and `ringkv verify` against themselves, on two nodes
# (rf 1, keys pinned to the node they are written through):
# - a run with no faults verifies clean, blind (SET/GET/DEL) and causal
#   (KGET/KSET with contexts, --monotonic);
# - deleting an acknowledged key behind the history's back makes verify
#   fail naming that key (a lost write);
# - writing an old value of a key back makes it fail naming that key (the
#   newer acknowledged write lost, or both newest when two overlapped, and
#   the old value stale);
# - a history with a `fail` write whose value is present is reported;
# - --r N, which today's KGET refuses, is an error and not a pass; a
#   history that is not JSON lines is a usage error naming the line.
. "$top_srcdir/tests/integration/lib.sh"
it_setup
it_key
it_cluster 2 --rf 1 --r 1 --w 1
H="-H 127.0.0.1:$N1_CLIENT -H 127.0.0.1:$N2_CLIENT"
hist="$IT_DIR/blind.jsonl"

# shellcheck disable=SC2086
"$RINGKV" workload $H --keys 100 --duration 4 --concurrency 4 --mix 4:5:1 --history "$hist" \
    > "$IT_DIR/workload.out" || it_fail "workload: $(cat "$IT_DIR/workload.out")"
grep -q '^set ' "$IT_DIR/workload.out" || it_fail "no summary: $(cat "$IT_DIR/workload.out")"
out=$("$RINGKV" verify --monotonic "$hist") || it_fail "a run with no faults: $out"
case "$out" in *"0 violations"*) ;; *) it_fail "no verdict: $out" ;; esac
writes=$(echo "$out" | awk '$1 == "writes_ok" { print $2 }')
[ "$writes" -gt 100 ] || it_fail "only $writes writes acknowledged: $out"
it_log "blind: $(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"

it_causal_verify "$H"
it_log "causal: $(echo "$out" | tr '\n' ' ' | sed 's/  */ /g')"

# pick WHAT: "KEY NODE VALUE" of a key whose last operation (by end) is an
# acknowledged set; for "old", VALUE is an earlier acknowledged set of the
# same key that ended before that last one started.
pick() {
    python3 - "$hist" "$1" << 'PY'
import json, sys
ops = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    ops.setdefault(e["key"], []).append(e)
for k, es in sorted(ops.items()):
    es.sort(key=lambda e: e["end"])
    last = es[-1]
    if last["op"] != "set" or last["outcome"] != "ok":
        continue
    if sys.argv[2] == "last":
        print(k, last["node"], last["value"])
        break
    old = [e for e in es if e["op"] == "set" and e["outcome"] == "ok" and e["end"] < last["start"]]
    if old:
        print(k, last["node"], old[0]["value"])
        break
PY
}

# An acknowledged key deleted behind the history's back.
# shellcheck disable=SC2046
set -- $(pick last)
[ $# -eq 3 ] || it_fail "no key whose last operation is an acknowledged set"
it_expect_eq "DEL $1" "$("$RINGKV" -H "$2" del "$1")" "1"
out=$("$RINGKV" verify "$hist")
[ $? -eq 1 ] || it_fail "verify passed a deleted key: $out"
echo "$out" | grep -q "^violation lost: key \"$1\"" || it_fail "deleted $1 not named: $out"
"$RINGKV" -H "$2" set "$1" "$3" > /dev/null
"$RINGKV" verify "$hist" > /dev/null || it_fail "$1 restored, still failing"

# An old value written back.
# shellcheck disable=SC2046
set -- $(pick old)
[ $# -eq 3 ] || it_fail "no key with two acknowledged sets in a row"
"$RINGKV" -H "$2" set "$1" "$3" > /dev/null
out=$("$RINGKV" verify --json "$hist")
[ $? -eq 1 ] || it_fail "verify passed an old value written back: $out"
echo "$out" | python3 -c '
import json, sys
v = json.load(sys.stdin)["violations"]
kinds = sorted(x["kind"] for x in v if x["key"] == sys.argv[1])
# the newer write is lost (two, when the last two acknowledged writes overlapped), the old value stale
assert kinds.count("stale") == 1 and len(kinds) > 1 and set(kinds) == {"lost", "stale"}, v' "$1" ||
    it_fail "old value of $1: $out"

# A write the history says failed, present.
cp "$hist" "$IT_DIR/forged.jsonl"
printf '{"op":"set","key":"forged","value":"f1","start":1,"end":2,"node":"127.0.0.1:%s","outcome":"fail","error":"ERR refused"}\n' \
    "$N1_CLIENT" >> "$IT_DIR/forged.jsonl"
"$RINGKV" -H "127.0.0.1:$N1_CLIENT" set forged f1 > /dev/null
out=$("$RINGKV" verify "$IT_DIR/forged.jsonl")
[ $? -eq 1 ] || it_fail "verify passed a present fail write: $out"
echo "$out" | grep -q '^violation fail-present: key "forged": value "f1"' ||
    it_fail "fail-present not reported: $out"
echo "$out" | grep -q '^fail_present *1$' || it_fail "fail-present not counted: $out"

# --r N is refused by today's KGET: an error, not a pass.
out=$("$RINGKV" verify --r 2 "$IT_DIR/causal.jsonl" 2>&1)
[ $? -eq 1 ] || it_fail "--r 2 passed: $out"
case "$out" in *"refused KGET with an R override"*) ;; *) it_fail "--r 2: $out" ;; esac

# A history that is not JSON lines.
head -3 "$hist" > "$IT_DIR/bad.jsonl"
echo '{"op":"set",' >> "$IT_DIR/bad.jsonl"
out=$("$RINGKV" verify "$IT_DIR/bad.jsonl" 2>&1)
[ $? -eq 2 ] || it_fail "a bad history is not a usage error: $out"
case "$out" in *"line 4: not JSON"*) ;; *) it_fail "bad history: $out" ;; esac
it_pass
