#!/bin/sh
# `ringkv placement check` on the golden vectors passes every line, and on a
# damaged copy reports the damaged lines by number and exits non-zero.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
ringkv="$top_builddir/src/ringkv"
vectors="$top_srcdir/tests/vectors/placement-v1.txt"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$ringkv" placement check "$vectors" > "$tmp/out"
tail -n 1 "$tmp/out"
test "$(tail -n 1 "$tmp/out")" = "1483 passed, 0 failed"

# Damage three lines: a hash value, a preference list, a token count.
awk 'NR == 7 { sub(/726fdb47dd0e0e31/, "726fdb47dd0e0e30") }
     NR == 117 { sub(/solo$/, "other") }
     { print }' "$vectors" > "$tmp/bad.txt"
sed -i '0,/^node a4b58e15fe5f407a r2 3$/s//node a4b58e15fe5f407a r2 5000/' "$tmp/bad.txt"
if "$ringkv" placement check "$tmp/bad.txt" > "$tmp/out" 2>&1; then
    echo "damaged file passed"; exit 1
fi
grep -q "bad.txt:7: hash mismatch" "$tmp/out"
grep -q "bad.txt:117: key ff: preference list expected other, computed solo" "$tmp/out"
grep -q "token count '5000' of node a4b58e15fe5f407a out of range 1..4096" "$tmp/out"
tail -n 1 "$tmp/out" | grep -Eq '^[0-9]+ passed, [0-9]+ failed$'

# Usage errors and unreadable files: exit 2 and 1, one line each.
set +e
"$ringkv" placement check > /dev/null 2>&1; test $? -eq 2 || exit 1
"$ringkv" placement check "$tmp/missing" 2> "$tmp/err"; test $? -eq 1 || exit 1
set -e
grep -q "cannot open" "$tmp/err"
: > "$tmp/empty.txt"
if "$ringkv" placement check "$tmp/empty.txt" > /dev/null 2>&1; then
    echo "empty file passed"; exit 1
fi
echo "placement-vectors: ok"
