#!/bin/sh
# The man pages against the code: every setting `ringkvd --help` lists has
# its entry in ringkvd.conf(5) and its flag in ringkvd(8), every verb
# `ringkv help` lists is in ringkv(1), the runtime settings are the ones
# marked so, and each page renders without a warning (man --warnings).
# The pages come from the build tree, or from the sources in a tarball.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "man-pages: FAIL: $*"; exit 1; }
command -v man > /dev/null || fail "man not found: install the Debian packages man-db and groff-base (cluster-scripts/install-deps)"

page() {
    for d in "$top_builddir" "$top_srcdir"; do
        [ -f "$d/man/$1" ] && { echo "$d/man/$1"; return; }
    done
    fail "man/$1 is in neither the build tree nor the sources"
}

# render PAGE: the page as text, 200 columns (an entry per line); its warnings fail the test.
render() {
    MANWIDTH=200 man --warnings -l "$(page "$1")" 2> "$tmp/warn" \
        > "$tmp/$1.txt"
    [ ! -s "$tmp/warn" ] || fail "$1 renders with warnings: $(cat "$tmp/warn")"
    # and at the width of a terminal, where long lines must still break cleanly
    MANWIDTH=80 man --warnings -l "$(page "$1")" > /dev/null 2> "$tmp/warn"
    [ ! -s "$tmp/warn" ] || fail "$1 renders with warnings at 80 columns: $(cat "$tmp/warn")"
}

render ringkvd.conf.5
render ringkvd.8
render ringkv.1

"$top_builddir/src/ringkvd" --help | sed -n 's/^  --\([a-z0-9-]*\) .*/\1/p' > "$tmp/settings"
[ "$(wc -l < "$tmp/settings")" -ge 40 ] || fail "ringkvd --help lists $(wc -l < "$tmp/settings") settings"
n=0
while read -r s; do
    grep -qx "       $s value" "$tmp/ringkvd.conf.5.txt" || fail "ringkvd.conf(5) has no entry for $s"
    grep -qx "       --$s value" "$tmp/ringkvd.8.txt" || fail "ringkvd(8) has no flag --$s"
    n=$((n + 1))
done < "$tmp/settings"

# The runtime settings: the entries that say so are exactly those CONFIG SET takes.
grep -c 'Changes at run time (SIGHUP, CONFIG SET)' "$tmp/ringkvd.conf.5.txt" > "$tmp/runtime" || true
want=$(grep -c '\.runtime = true' "$top_srcdir/src/node/settings.c")
[ "$(cat "$tmp/runtime")" = "$want" ] ||
    fail "ringkvd.conf(5) marks $(cat "$tmp/runtime") settings runtime, settings.c $want"

# ringkv help prints the verb table on stderr, exit 2.
"$top_builddir/src/ringkv" help 2> "$tmp/help" > /dev/null || true
sed -n 's/^  ringkv \([a-z-]*\) .*/\1/p' "$tmp/help" > "$tmp/verbs"
[ -s "$tmp/verbs" ] || fail "ringkv help lists no verbs"
v=0
while read -r verb; do
    grep -qx "       ringkv $verb" "$tmp/ringkv.1.txt" || fail "ringkv(1) has no entry for 'ringkv $verb'"
    v=$((v + 1))
done < "$tmp/verbs"
for opt in --host --timeout RINGKV_PASSWORD; do
    grep -q -- "$opt" "$tmp/ringkv.1.txt" || fail "ringkv(1) does not mention $opt"
done
echo "man-pages: ok: $n settings in ringkvd.conf(5) and ringkvd(8), $v verbs in ringkv(1), no warnings"
