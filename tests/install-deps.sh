#!/bin/sh
# cluster-scripts/install-deps, the README's first command, parses and
# lists what it installs (a shell error in its package table would stop
# every fresh machine before the build): --list prints one Debian package
# name a line, the build's own needs among them, and nothing else.
set -eu
: "${top_srcdir:?}"
fail() { echo "install-deps: FAIL: $*"; exit 1; }

list=$("$top_srcdir/cluster-scripts/install-deps" --list) || fail "--list exited $?"
[ -n "$list" ] || fail "--list printed nothing"
bad=$(printf '%s\n' "$list" | grep -Ev '^[a-z0-9][a-z0-9.+-]+$' || true)
[ -z "$bad" ] || fail "not package names: $bad"
for p in gcc make autoconf liblmdb-dev libsodium-dev libev-dev check iptables faketime; do
    printf '%s\n' "$list" | grep -qx "$p" || fail "$p is not in the list"
done
rc=0
"$top_srcdir/cluster-scripts/install-deps" --bogus > /dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "an unknown option exited $rc, not 2"
echo "install-deps: ok: $(printf '%s\n' "$list" | wc -l) packages listed"
