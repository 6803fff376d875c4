#!/bin/sh
# `ringkv placement explain` agrees with the golden vectors, names every
# kind of walk step, says when a lookup wraps around, and rejects bad input
# with a one-line error and the documented exit code.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
ringkv="$top_builddir/src/ringkv"
vectors="$top_srcdir/tests/vectors/placement-v1.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "placement-explain: $*"; exit 1; }

# The members of a vector case, as a members file.
case_members() {
    sed -n "/^case $1\$/,/^end\$/p" "$vectors" | grep '^node ' > "$tmp/$1.members"
}

# Every key of case rf5-two-racks: explain's list equals the vector's.
case_members rf5-two-racks
sed -n '/^case rf5-two-racks$/,/^end$/p' "$vectors" | grep '^key ' | head -n 40 |
while read -r _ key pos list; do
    out=$("$ringkv" placement explain --rf 5 --hex --members "$tmp/rf5-two-racks.members" --json "$key")
    got=$(printf '%s' "$out" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["position"], ",".join(j["preflist"]))')
    [ "$got" = "$pos $list" ] || fail "key $key: expected '$pos $list', got '$got'"
done

# Two racks and rf 5: the walk sets nodes aside and appends them.
out=$("$ringkv" placement explain --rf 5 --members "$tmp/rf5-two-racks.members" user:1)
for word in "chosen     rack" "set aside  rack" "appended" "preflist"; do
    printf '%s' "$out" | grep -q "$word" || fail "no '$word' step in: $out"
done

# One token low on the circle (f#0 is at 18dd3b0a43090f6c): most keys land
# past it and wrap around to it.
wrapped=no
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    if "$ringkv" placement explain --node f,r1,1 --rf 1 --json "k$i" | grep -q '"wrapped": true'; then
        "$ringkv" placement explain --node f,r1,1 --rf 1 "k$i" | grep -q "wraps around" ||
            fail "k$i wrapped in --json but the table does not say so"
        wrapped=yes
        break
    fi
done
[ "$wrapped" = yes ] || fail "no key of 16 wrapped around the one-token ring"

# Bad input: one line on stderr, exit 2 for usage, 1 for an empty ring.
expect() {
    code=$1; shift
    set +e
    "$ringkv" placement explain "$@" > /dev/null 2> "$tmp/err"
    rc=$?
    set -e
    [ "$rc" -eq "$code" ] || fail "'$*' exited $rc, expected $code"
    grep -q '^ringkv: ' "$tmp/err" || fail "'$*' gave no error line"
}
expect 2 --node 'bad id,r1,4' k
expect 2 --node a,r1,0 k
expect 2 --node a,r1,4097 k
expect 2 --node a,r1 k
expect 2 --node a,r1,4 --rf 0 k
expect 2 --node a,r1,4 --rf 17 k
expect 2 --node a,r1,4 --seed 00 k
expect 2 --node a,r1,4 --hex xyz
expect 2 --node a,r1,4
expect 1 k
expect 1 --node a,r1,4 --node a,r2,4 k
printf 'node a r1 4\nnode b r/2 4\n' > "$tmp/bad.members"
expect 2 --members "$tmp/bad.members" k
grep -q 'bad.members:2: invalid rack' "$tmp/err" || fail "members file error does not name the line"
echo "placement-explain: ok"
